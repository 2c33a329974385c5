/*
 * rp_aggval.c
 *    Reading binding values from stream records and seed text (see
 *    rp_aggval.h).  Keys are built so that memcmp orders them as
 *    PostgreSQL orders the values of the class (NaN above everything for
 *    floats and numerics; -infinity and infinity at the ends for dates and
 *    timestamps, as their sentinels already sort).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_aggval.h"
#include "rp_format.h"
#include "rp_read.h"
#include "rp_time.h"

RpAggClass
rp_aggval_class(uint32_t type_oid)
{
	switch (type_oid)
	{
		case 20:				/* int8 */
		case 21:				/* int2 */
		case 23:				/* int4 */
			return RP_AGGV_INT;
		case 700:
			return RP_AGGV_FLOAT4;
		case 701:
			return RP_AGGV_FLOAT8;
		case 1700:
			return RP_AGGV_NUMERIC;
		case 25:				/* text */
		case 1043:				/* varchar */
			return RP_AGGV_STRING;
		case 1082:
			return RP_AGGV_DATE;
		case 1114:
			return RP_AGGV_TIMESTAMP;
		case 1184:
			return RP_AGGV_TIMESTAMPTZ;
		case 16:
			return RP_AGGV_BOOL;
		default:
			return RP_AGGV_UNSUPPORTED;
	}
}

bool
rp_aggval_numeric_class(RpAggClass c)
{
	return c == RP_AGGV_INT || c == RP_AGGV_FLOAT4 || c == RP_AGGV_FLOAT8 || c == RP_AGGV_NUMERIC;
}

void
rp_aggval_init(RpAggVal *val)
{
	memset(val, 0, sizeof(*val));
	rp_decimal_init(&val->num);
	rp_buf_init(&val->key, 32);
	rp_buf_init(&val->text, 32);
}

void
rp_aggval_free(RpAggVal *val)
{
	rp_decimal_free(&val->num);
	rp_buf_free(&val->key);
	rp_buf_free(&val->text);
}

void
rp_aggval_seed_expr(RpAggClass c, const char *q, RpBuf *sql)
{
	char		expr[1024];

	switch (c)
	{
		case RP_AGGV_DATE:
			snprintf(expr, sizeof(expr),
					 "CASE WHEN %s IS NULL THEN NULL WHEN pg_catalog.isfinite(%s) THEN (%s OPERATOR(pg_catalog.-) DATE '1970-01-01')::pg_catalog.text"
					 " WHEN %s OPERATOR(pg_catalog.>) DATE '1970-01-01' THEN 'infinity' ELSE '-infinity' END",
					 q, q, q, q);
			break;
		case RP_AGGV_TIMESTAMP:
		case RP_AGGV_TIMESTAMPTZ:

			/*
			 * PostgreSQL's own microseconds since 2000-01-01 (its binary send
			 * format; a timestamp without zone read as UTC), infinities as
			 * INT64_MIN/MAX: exact for every timestamp, where EXTRACT(epoch)
			 * rounds near the end of time and microseconds since 1970
			 * overflow an int8 past 294247.
			 */
			snprintf(expr, sizeof(expr),
					 "(('x' OPERATOR(pg_catalog.||) pg_catalog.encode(pg_catalog.%s_send(%s), 'hex'))::pg_catalog.bit(64)::pg_catalog.int8)::pg_catalog.text",
					 c == RP_AGGV_TIMESTAMP ? "timestamp" : "timestamptz", q);
			break;
		default:
			snprintf(expr, sizeof(expr), "%s::pg_catalog.text", q);
			break;
	}
	rp_buf_put_bytes(sql, expr, strlen(expr));
}

static void
rp_key_int64(RpBuf *key, int64_t v)
{
	rp_buf_put_u64(key, (uint64_t) v ^ 0x8000000000000000ULL);
}

static void
rp_val_reset(RpAggVal *out)
{
	rp_buf_reset(&out->key);
	rp_buf_reset(&out->text);
	memset(&out->v, 0, sizeof(out->v));
}


static void
rp_val_done(RpAggVal *out)
{
	out->v.num = &out->num;
	out->v.key = out->key.data;
	out->v.keylen = out->key.len;
	out->v.text = out->text.data;
	out->v.textlen = out->text.len;
}

static void
rp_val_int(RpAggVal *out, int64_t v)
{
	char		s[32];
	int			n = snprintf(s, sizeof(s), "%lld", (long long) v);

	rp_key_int64(&out->key, v);
	rp_buf_put_bytes(&out->text, s, (size_t) n);
	if (out->want_num)
		rp_decimal_set_int64(&out->num, v);
}

/*
 * Floats order by their bits (sign flipped, negatives complemented), with
 * -0 read as 0 and NaN above +Infinity, as PostgreSQL compares them.
 */
static void
rp_val_double(RpAggVal *out, double v, bool single)
{
	uint64_t	bits;

	if (isnan(v))
		out->v.kind = RP_DEC_NAN;
	else if (isinf(v))
		out->v.kind = v > 0 ? RP_DEC_PINF : RP_DEC_NINF;
	if (v == 0)
		v = 0;					/* -0 is 0 */
	memcpy(&bits, &v, sizeof(bits));
	bits = (bits & 0x8000000000000000ULL) ? ~bits : bits ^ 0x8000000000000000ULL;
	rp_buf_put_u8(&out->key, isnan(v) ? 2 : 1);
	rp_buf_put_u64(&out->key, isnan(v) ? 0 : bits);
	if (out->v.kind == RP_DEC_FINITE && out->want_num)
		rp_decimal_set_double(&out->num, v);
	if (single)
		rp_fmt_float4(&out->text, (float) v);
	else
		rp_fmt_float8(&out->text, v);
}

static void
rp_val_numeric(RpAggVal *out, int kind, int dscale)
{
	out->v.kind = (RpDecKind) kind;
	out->v.dscale = dscale;
	if (kind == RP_DEC_FINITE)
	{
		rp_decimal_key(&out->num, &out->key);
		rp_decimal_text(&out->num, dscale, &out->text);
	}
	else
	{
		rp_decimal_special_key((RpDecKind) kind, &out->key);
		rp_buf_put_text(&out->text, kind == RP_DEC_NAN ? "NaN" : kind == RP_DEC_PINF ? "Infinity" : "-Infinity");
	}
}

static void
rp_val_date(RpAggVal *out, int32_t days)
{
	rp_key_int64(&out->key, days);
	rp_fmt_date(&out->text, days);
}

/*
 * A wire timestamp: keyed by PostgreSQL's own microseconds, which order
 * every timestamp (the extended range past 294247 sits below INT64_MIN + 1
 * on the wire) and keep the infinities at the ends.
 */
static bool
rp_val_ts(RpAggVal *out, int64_t wire, bool tz)
{
	int64_t		t;

	if (!rp_ts_to_pg(wire, &t))
		return false;
	rp_key_int64(&out->key, t);
	rp_fmt_timestamp(&out->text, wire, tz);
	return true;
}

bool
rp_aggval_from_datum(RpAggClass c, uint8_t enc, const RpDatum *d, RpAggVal *out)
{
	RpReader	r;

	rp_val_reset(out);
	if (d->kind == RP_DATUM_NULL)
	{
		out->v.null = true;
		rp_val_done(out);
		return true;
	}
	if (d->kind != RP_DATUM_VALUE)
		return false;
	rp_reader_init(&r, d->data, d->len);
	switch (c)
	{
		case RP_AGGV_INT:
			if (enc == RP_ENC_INT2)
				rp_val_int(out, (int16_t) rp_get_u16(&r));
			else if (enc == RP_ENC_INT4)
				rp_val_int(out, (int32_t) rp_get_u32(&r));
			else if (enc == RP_ENC_INT8)
				rp_val_int(out, (int64_t) rp_get_u64(&r));
			else
				return false;
			break;
		case RP_AGGV_FLOAT4:
		case RP_AGGV_FLOAT8:
			if (enc == RP_ENC_FLOAT4)
			{
				uint32_t	bits = rp_get_u32(&r);
				float		f;

				memcpy(&f, &bits, sizeof(f));
				rp_val_double(out, f, true);
			}
			else if (enc == RP_ENC_FLOAT8)
			{
				uint64_t	bits = rp_get_u64(&r);
				double		f;

				memcpy(&f, &bits, sizeof(f));
				rp_val_double(out, f, false);
			}
			else
				return false;
			break;
		case RP_AGGV_NUMERIC:
			{
				uint32_t	len;
				const unsigned char *p;
				int			dscale = 0;
				int			kind;

				if (enc != RP_ENC_NUMERIC)
					return false;
				len = rp_get_u32(&r);
				p = rp_get_bytes(&r, len);
				if (!r.ok || (kind = rp_decimal_set_numeric(&out->num, p, len, &dscale)) < 0)
					return false;
				rp_val_numeric(out, kind, dscale);
				break;
			}
		case RP_AGGV_STRING:
			{
				uint32_t	len;
				const char *s;

				if (enc != RP_ENC_STRING && enc != RP_ENC_TEXT)
					return false;
				s = rp_get_str(&r, &len);
				if (!r.ok)
					return false;
				rp_buf_put_bytes(&out->key, s, len);
				rp_buf_put_bytes(&out->text, s, len);
				break;
			}
		case RP_AGGV_DATE:
			if (enc != RP_ENC_DATE)
				return false;
			rp_val_date(out, (int32_t) rp_get_u32(&r));
			break;
		case RP_AGGV_TIMESTAMP:
		case RP_AGGV_TIMESTAMPTZ:
			if (enc != RP_ENC_TIMESTAMP && enc != RP_ENC_TIMESTAMPTZ)
				return false;
			if (!rp_val_ts(out, (int64_t) rp_get_u64(&r), c == RP_AGGV_TIMESTAMPTZ))
				return false;
			break;
		case RP_AGGV_UNSUPPORTED:
			/* count only needs to know a value is there */
			break;
		case RP_AGGV_BOOL:
			{
				uint8_t		b;

				if (enc != RP_ENC_BOOL)
					return false;
				b = rp_get_u8(&r) != 0;
				rp_buf_put_u8(&out->key, b);
				rp_buf_put_text(&out->text, b ? "true" : "false");
				break;
			}
		default:
			return false;
	}
	if (!r.ok)
		return false;
	rp_val_done(out);
	return true;
}

static bool
rp_parse_int64(const char *s, int64_t *v)
{
	char	   *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno == 0 && end != s && *end == '\0';
}

bool
rp_aggval_from_text(RpAggClass c, const char *s, RpAggVal *out)
{
	int64_t		i;

	rp_val_reset(out);
	if (s == NULL)
	{
		out->v.null = true;
		rp_val_done(out);
		return true;
	}
	switch (c)
	{
		case RP_AGGV_INT:
			if (!rp_parse_int64(s, &i))
				return false;
			rp_val_int(out, i);
			break;
		case RP_AGGV_FLOAT4:
		case RP_AGGV_FLOAT8:
			{
				char	   *end;
				double		d;

				/*
				 * the seed session sets extra_float_digits = 3: text reads
				 * back exactly
				 */
				if (c == RP_AGGV_FLOAT4)
					d = strtof(s, &end);
				else
					d = strtod(s, &end);
				if (end == s || *end != '\0')
					return false;
				rp_val_double(out, d, c == RP_AGGV_FLOAT4);
				break;
			}
		case RP_AGGV_NUMERIC:
			{
				int			dscale = 0;
				int			kind = rp_decimal_parse(&out->num, s, &dscale);

				if (kind < 0)
					return false;
				rp_val_numeric(out, kind, dscale);
				break;
			}
		case RP_AGGV_STRING:
			rp_buf_put_bytes(&out->key, s, strlen(s));
			rp_buf_put_bytes(&out->text, s, strlen(s));
			break;
		case RP_AGGV_DATE:
			if (strcmp(s, "infinity") == 0)
				i = RP_DATE_POS_INF;
			else if (strcmp(s, "-infinity") == 0)
				i = RP_DATE_NEG_INF;
			else if (!rp_parse_int64(s, &i) || i <= RP_DATE_NEG_INF || i >= RP_DATE_POS_INF)
				return false;
			rp_val_date(out, (int32_t) i);
			break;
		case RP_AGGV_TIMESTAMP:
		case RP_AGGV_TIMESTAMPTZ:
			if (strcmp(s, "infinity") == 0)
				i = RP_TS_POS_INF;
			else if (strcmp(s, "-infinity") == 0)
				i = RP_TS_NEG_INF;
			else if (!rp_parse_int64(s, &i) || !rp_ts_from_pg(i, true, &i))
				return false;
			if (!rp_val_ts(out, i, c == RP_AGGV_TIMESTAMPTZ))
				return false;
			break;
		case RP_AGGV_BOOL:
			if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
				return false;
			rp_buf_put_u8(&out->key, s[0] == 't');
			rp_buf_put_text(&out->text, s[0] == 't' ? "true" : "false");
			break;
		case RP_AGGV_UNSUPPORTED:
			break;
	}
	rp_val_done(out);
	return true;
}
