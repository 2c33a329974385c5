/*
 * rp_pgtext.c
 *    PostgreSQL input text of pre-cast values (see rp_pgtext.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "rp_format.h"
#include "values/rp_pgtext.h"
#include "rp_read.h"
#include "rp_time.h"
#include "rp_wire.h"

static void rp_pgtext_reader(RpBuf *out, RpReader *r, uint8_t enc);

/*
 * n in decimal, zero-padded to at least width digits, at p; returns the end.
 * A hand-rolled snprintf("%0*llu"): dates and timestamps are on the mirror's
 * hot path (every row of the benchmark carries one), and snprintf was a
 * fifth of the consumer's CPU there.
 */
static char *
rp_pgtext_digits(char *p, uint64_t n, int width)
{
	char		tmp[24];
	int			len = 0;

	do
	{
		tmp[len++] = (char) ('0' + n % 10);
		n /= 10;
	} while (n);
	while (len < width)
		tmp[len++] = '0';
	while (len)
		*p++ = tmp[--len];
	return p;
}

/* ISO date, years before 1 AD as "YYYY-MM-DD BC" (PostgreSQL has no year 0). */
static void
rp_pgtext_ymd(RpBuf *out, int64_t days, const char *time_part, const char *zone)
{
	int64_t		y;
	int			m,
				d;
	bool		bc;
	size_t		tlen = time_part ? strlen(time_part) : 0;
	size_t		zlen = zone ? strlen(zone) : 0;
	char	   *p;

	rp_civil_from_days(days, &y, &m, &d);
	bc = y <= 0;
	if (bc)
		y = 1 - y;
	if (y < 0 || m < 0 || d < 0)
	{
		/* not reached for any int64 day count; the general formatting */
		char		tmp[96];
		int			n = snprintf(tmp, sizeof(tmp), "%04" PRId64 "-%02d-%02d%s%s%s%s", y, m, d,
								 time_part ? " " : "", time_part ? time_part : "",
								 zone ? zone : "", bc ? " BC" : "");

		rp_buf_put_bytes(out, tmp, (size_t) n);
		return;
	}
	rp_buf_reserve(out, 64 + tlen + zlen);
	p = out->data + out->len;
	p = rp_pgtext_digits(p, (uint64_t) y, 4);
	*p++ = '-';
	p = rp_pgtext_digits(p, (uint64_t) m, 2);
	*p++ = '-';
	p = rp_pgtext_digits(p, (uint64_t) d, 2);
	if (time_part)
	{
		*p++ = ' ';
		memcpy(p, time_part, tlen);
		p += tlen;
	}
	if (zone)
	{
		memcpy(p, zone, zlen);
		p += zlen;
	}
	if (bc)
	{
		memcpy(p, " BC", 3);
		p += 3;
	}
	out->len = (size_t) (p - out->data);
}

static void
rp_pgtext_timestamp(RpBuf *out, int64_t us, bool tz)
{
	char		hms[32],
			   *p;
	int64_t		days,
				rem,
				secs;
	int			frac;

	if (us == RP_TS_NEG_INF || us == RP_TS_POS_INF)
	{
		rp_buf_put_text(out, us == RP_TS_NEG_INF ? "-infinity" : "infinity");
		return;
	}
	rp_ts_split(us, &days, &rem);
	secs = rem / 1000000;
	frac = (int) (rem % 1000000);
	/* "HH:MM:SS.ffffff": 0 <= rem < one day, so every field is in range */
	p = rp_pgtext_digits(hms, (uint64_t) (secs / 3600), 2);
	*p++ = ':';
	p = rp_pgtext_digits(p, (uint64_t) (secs / 60 % 60), 2);
	*p++ = ':';
	p = rp_pgtext_digits(p, (uint64_t) (secs % 60), 2);
	*p++ = '.';
	p = rp_pgtext_digits(p, (uint64_t) frac, 6);
	*p = '\0';
	rp_pgtext_ymd(out, days, hms, tz ? "+00" : NULL);
}

/* A quoted element for array and record literals. */
static void
rp_pgtext_quoted(RpBuf *out, RpReader *r, uint8_t enc)
{
	RpBuf		tmp;

	rp_buf_init(&tmp, 64);
	rp_pgtext_reader(&tmp, r, enc);
	rp_buf_put_char(out, '"');
	for (size_t i = 0; i < tmp.len; i++)
	{
		if (tmp.data[i] == '"' || tmp.data[i] == '\\')
			rp_buf_put_char(out, '\\');
		rp_buf_put_char(out, tmp.data[i]);
	}
	rp_buf_put_char(out, '"');
	rp_buf_free(&tmp);
}

static void
rp_pgtext_array_dim(RpBuf *out, RpReader *r, uint8_t enc, const uint32_t *dims, uint32_t ndim,
					uint32_t dim)
{
	rp_buf_put_char(out, '{');
	for (uint32_t i = 0; i < dims[dim]; i++)
	{
		if (i)
			rp_buf_put_char(out, ',');
		if (dim + 1 < ndim)
			rp_pgtext_array_dim(out, r, enc, dims, ndim, dim + 1);
		else if (rp_get_u8(r) == RP_DATUM_NULL)
			rp_buf_put_text(out, "NULL");
		else
			rp_pgtext_quoted(out, r, enc);
	}
	rp_buf_put_char(out, '}');
}

static void
rp_pgtext_array(RpBuf *out, RpReader *r)
{
	uint8_t		enc = rp_get_u8(r);
	uint32_t	ndim,
				dims[8];
	int32_t		lbs[8];
	bool		plain = true;

	(void) rp_get_u32(r);
	ndim = rp_get_u32(r);
	for (uint32_t d = 0; d < ndim && d < 8; d++)
	{
		dims[d] = rp_get_u32(r);
		lbs[d] = (int32_t) rp_get_u32(r);
		plain &= lbs[d] == 1;
	}
	if (ndim == 0)
	{
		rp_buf_put_text(out, "{}");
		return;
	}
	if (!plain)
	{
		for (uint32_t d = 0; d < ndim; d++)
		{
			char		tmp[48];
			int			n = snprintf(tmp, sizeof(tmp), "[%d:%d]", lbs[d],
									 (int) (lbs[d] + (int32_t) dims[d] - 1));

			rp_buf_put_bytes(out, tmp, (size_t) n);
		}
		rp_buf_put_char(out, '=');
	}
	rp_pgtext_array_dim(out, r, enc, dims, ndim, 0);
}

static void
rp_pgtext_composite(RpBuf *out, RpReader *r)
{
	uint16_t	natts = rp_get_u16(r);

	rp_buf_put_char(out, '(');
	for (uint16_t i = 0; i < natts; i++)
	{
		uint32_t	nlen;
		uint8_t		enc;

		(void) rp_get_str(r, &nlen);
		(void) rp_get_u32(r);
		enc = rp_get_u8(r);
		if (i)
			rp_buf_put_char(out, ',');
		if (rp_get_u8(r) != RP_DATUM_NULL)
			rp_pgtext_quoted(out, r, enc);
	}
	rp_buf_put_char(out, ')');
}

static void
rp_pgtext_range(RpBuf *out, RpReader *r)
{
	uint8_t		flags = rp_get_u8(r);
	uint8_t		enc;

	(void) rp_get_u32(r);
	enc = rp_get_u8(r);
	if (flags & RP_RANGE_EMPTY)
	{
		rp_buf_put_text(out, "empty");
		return;
	}
	rp_buf_put_char(out, (flags & RP_RANGE_LB_INC) ? '[' : '(');
	if (!(flags & RP_RANGE_LB_INF))
		rp_pgtext_quoted(out, r, enc);
	rp_buf_put_char(out, ',');
	if (!(flags & RP_RANGE_UB_INF))
		rp_pgtext_quoted(out, r, enc);
	rp_buf_put_char(out, (flags & RP_RANGE_UB_INC) ? ']' : ')');
}

static void
rp_pgtext_reader(RpBuf *out, RpReader *r, uint8_t enc)
{
	uint32_t	len;
	const char *s;
	static const char hex[] = "0123456789abcdef";

	switch (enc)
	{
		case RP_ENC_BOOL:
			rp_buf_put_char(out, rp_get_u8(r) ? 't' : 'f');
			break;
		case RP_ENC_INT2:
			rp_fmt_int64(out, (int16_t) rp_get_u16(r));
			break;
		case RP_ENC_INT4:
			rp_fmt_int64(out, (int32_t) rp_get_u32(r));
			break;
		case RP_ENC_INT8:
			rp_fmt_int64(out, (int64_t) rp_get_u64(r));
			break;
		case RP_ENC_OID:
			rp_fmt_uint64(out, rp_get_u32(r));
			break;
		case RP_ENC_FLOAT4:
			{
				uint32_t	bits = rp_get_u32(r);
				float		f;

				memcpy(&f, &bits, 4);
				rp_fmt_float4(out, f);
				break;
			}
		case RP_ENC_FLOAT8:
			{
				uint64_t	bits = rp_get_u64(r);
				double		d;

				memcpy(&d, &bits, 8);
				rp_fmt_float8(out, d);
				break;
			}
		case RP_ENC_NUMERIC:
			len = rp_get_u32(r);
			rp_fmt_numeric(out, rp_get_bytes(r, len), len);
			break;
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_ENUM:
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			s = rp_get_str(r, &len);
			rp_buf_put_bytes(out, s, len);
			break;
		case RP_ENC_BYTEA:
			{
				const unsigned char *p = (const unsigned char *) rp_get_str(r, &len);

				rp_buf_reserve(out, 2 + 2 * (size_t) len);
				out->data[out->len++] = '\\';
				out->data[out->len++] = 'x';
				for (uint32_t i = 0; i < len; i++)
				{
					out->data[out->len++] = hex[p[i] >> 4];
					out->data[out->len++] = hex[p[i] & 15];
				}
				break;
			}
		case RP_ENC_UUID:
			rp_fmt_uuid(out, rp_get_bytes(r, 16));
			break;
		case RP_ENC_DATE:
			{
				int32_t		days = (int32_t) rp_get_u32(r);

				if (days == RP_DATE_NEG_INF || days == RP_DATE_POS_INF)
					rp_buf_put_text(out, days == RP_DATE_NEG_INF ? "-infinity" : "infinity");
				else
					rp_pgtext_ymd(out, days, NULL, NULL);
				break;
			}
		case RP_ENC_TIME:
			rp_fmt_time(out, (int64_t) rp_get_u64(r));
			break;
		case RP_ENC_TIMETZ:
			{
				int64_t		us = (int64_t) rp_get_u64(r);

				rp_fmt_timetz(out, us, (int32_t) rp_get_u32(r));
				break;
			}
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			rp_pgtext_timestamp(out, (int64_t) rp_get_u64(r), enc == RP_ENC_TIMESTAMPTZ);
			break;
		case RP_ENC_INTERVAL:
			{
				int64_t		us = (int64_t) rp_get_u64(r);
				int32_t		days = (int32_t) rp_get_u32(r);
				int32_t		months = (int32_t) rp_get_u32(r);
				char		tmp[96];
				int			n = snprintf(tmp, sizeof(tmp), "%d mons %d days %" PRId64 " microseconds",
										 months, days, us);

				rp_buf_put_bytes(out, tmp, (size_t) n);
				break;
			}
		case RP_ENC_ARRAY:
			rp_pgtext_array(out, r);
			break;
		case RP_ENC_COMPOSITE:
			rp_pgtext_composite(out, r);
			break;
		case RP_ENC_RANGE:
			rp_pgtext_range(out, r);
			break;
	}
}

void
rp_pgtext_value(RpBuf *out, uint8_t encoding, const unsigned char *data, uint32_t len)
{
	RpReader	r;

	rp_reader_init(&r, data, len);
	rp_pgtext_reader(out, &r, encoding);
}

/* The bytes COPY's text format escapes (see rp_pgtext_copy_escape). */
static const unsigned char rp_copy_special[256] = {
	['\\'] = '\\',['\n'] = 'n',['\r'] = 'r',['\t'] = 't'
};

void
rp_pgtext_copy_escape(RpBuf *out, const char *s, size_t len)
{
	size_t		i = 0,
				run = 0;		/* start of the bytes not copied yet */

	rp_buf_reserve(out, len);
	for (;;)
	{
		/* a plain run in one copy: one table load per byte */
		while (i < len && !rp_copy_special[(unsigned char) s[i]])
			i++;
		if (i > run)
			rp_buf_put_bytes(out, s + run, i - run);
		if (i >= len)
			break;
		rp_buf_reserve(out, 2);
		out->data[out->len++] = '\\';
		out->data[out->len++] = (char) rp_copy_special[(unsigned char) s[i]];
		run = ++i;
	}
}
