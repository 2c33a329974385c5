/*
 * rp_pgbin.c
 *    Pre-cast values to PostgreSQL's binary send format (see rp_pgbin.h).
 */
#include <string.h>

#include "rp_typeenc.h"
#include "values/rp_pgbin.h"
#include "rp_read.h"
#include "rp_time.h"
#include "rp_wire.h"

/*
 * Built-in array types whose elements have a binary form here.  Their
 * element OIDs are the same on every server, and array_recv checks the
 * element OID we send against the column's.
 */
static const uint32_t rp_pgbin_arrays[] = {
	1000,						/* bool[] */
	1001,						/* bytea[] */
	1003,						/* name[] */
	1005,						/* int2[] */
	1007,						/* int4[] */
	1009,						/* text[] */
	1014,						/* bpchar[] */
	1015,						/* varchar[] */
	1016,						/* int8[] */
	1021,						/* float4[] */
	1022,						/* float8[] */
	1028,						/* oid[] */
	1115,						/* timestamp[] */
	1182,						/* date[] */
	1183,						/* time[] */
	1185,						/* timestamptz[] */
	1187,						/* interval[] */
	1231,						/* numeric[] */
	1270,						/* timetz[] */
	199,						/* json[] */
	2951,						/* uuid[] */
	3807						/* jsonb[] */
};

static bool
rp_pgbin_scalar_ok(uint8_t enc)
{
	switch (enc)
	{
		case RP_ENC_BOOL:
		case RP_ENC_INT2:
		case RP_ENC_INT4:
		case RP_ENC_INT8:
		case RP_ENC_OID:
		case RP_ENC_FLOAT4:
		case RP_ENC_FLOAT8:
		case RP_ENC_NUMERIC:
		case RP_ENC_STRING:
		case RP_ENC_BYTEA:
		case RP_ENC_UUID:
		case RP_ENC_DATE:
		case RP_ENC_TIME:
		case RP_ENC_TIMETZ:
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
		case RP_ENC_INTERVAL:
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			return true;
		default:
			return false;
	}
}

bool
rp_pgbin_column_ok(const RpColumn *c)
{
	if (c->type_oid >= RP_OID_FIRST_NORMAL)
		return false;			/* a domain, an enum, a user type: OIDs differ */
	if (c->encoding == RP_ENC_ARRAY)
	{
		for (size_t i = 0; i < sizeof(rp_pgbin_arrays) / sizeof(rp_pgbin_arrays[0]); i++)
			if (rp_pgbin_arrays[i] == c->type_oid)
				return true;
		return false;
	}
	return rp_pgbin_scalar_ok(c->encoding);
}

static inline void
rp_pgbin_i16(RpBuf *out, int16_t v)
{
	rp_buf_put_u16(out, (uint16_t) v);
}

static inline void
rp_pgbin_i32(RpBuf *out, int32_t v)
{
	rp_buf_put_u32(out, (uint32_t) v);
}

void
rp_pgbin_header(RpBuf *out)
{
	static const char sig[11] = "PGCOPY\n\377\r\n"; /* and its terminating
													 * zero */

	rp_buf_put_bytes(out, sig, 11);
	rp_pgbin_i32(out, 0);		/* flags: no OIDs */
	rp_pgbin_i32(out, 0);		/* no header extension */
}

void
rp_pgbin_trailer(RpBuf *out)
{
	rp_pgbin_i16(out, -1);
}

void
rp_pgbin_tuple(RpBuf *out, int nfields)
{
	rp_pgbin_i16(out, (int16_t) nfields);
}

void
rp_pgbin_null(RpBuf *out)
{
	rp_pgbin_i32(out, -1);
}

/*
 * Encodings whose bytes are the send format as they are: their size.
 * Interval is i64 microseconds, i32 days, i32 months on both sides.
 */
static int
rp_pgbin_fixed_size(uint8_t enc)
{
	switch (enc)
	{
		case RP_ENC_INT2:
			return 2;
		case RP_ENC_INT4:
		case RP_ENC_OID:
		case RP_ENC_FLOAT4:
			return 4;
		case RP_ENC_INT8:
		case RP_ENC_FLOAT8:
		case RP_ENC_TIME:
			return 8;
		case RP_ENC_UUID:
		case RP_ENC_INTERVAL:
			return 16;
		default:
			return 0;
	}
}

/* The send-format body of one scalar (no length word); false if none. */
static bool
rp_pgbin_body(RpBuf *out, RpReader *r, uint8_t enc)
{
	uint32_t	len;
	const unsigned char *p;
	int			fixed = rp_pgbin_fixed_size(enc);

	if (fixed)
	{
		p = rp_get_bytes(r, (size_t) fixed);
		if (p)
			rp_buf_put_bytes(out, p, (size_t) fixed);
		return true;
	}
	switch (enc)
	{
		case RP_ENC_BOOL:
			rp_buf_put_u8(out, rp_get_u8(r) ? 1 : 0);
			return true;
		case RP_ENC_NUMERIC:
		case RP_ENC_STRING:
		case RP_ENC_BYTEA:
		case RP_ENC_JSON:
		case RP_ENC_JSONB:

			/*
			 * a length-prefixed body that is the send format itself (jsonb:
			 * after a version)
			 */
			len = rp_get_u32(r);
			p = rp_get_bytes(r, len);
			if (enc == RP_ENC_JSONB)
				rp_buf_put_u8(out, 1);
			if (p && len)
				rp_buf_put_bytes(out, p, len);
			return true;
		case RP_ENC_DATE:
			{
				int32_t		d = (int32_t) rp_get_u32(r);

				if (!rp_date_valid(d))
					return false;
				/* the infinities are INT32_MIN/MAX on both sides */
				if (d != INT32_MIN && d != INT32_MAX)
					d -= RP_PG_EPOCH_DAYS;
				rp_pgbin_i32(out, d);
				return true;
			}
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			{
				int64_t		t;

				/* the send format is PostgreSQL's own: every timestamp fits */
				if (!rp_ts_to_pg((int64_t) rp_get_u64(r), &t))
					return false;
				rp_buf_put_u64(out, (uint64_t) t);
				return true;
			}
		case RP_ENC_TIMETZ:
			{
				uint64_t	us = rp_get_u64(r);
				int32_t		east = (int32_t) rp_get_u32(r);

				/* timetz_send counts the zone in seconds west of UTC */
				rp_buf_put_u64(out, us);
				rp_pgbin_i32(out, -east);
				return true;
			}
		default:
			return false;
	}
}

/*
 * array_send: i32 ndim, i32 has-nulls, u32 element OID, ndim * (i32 length,
 * i32 lower bound), then each element as i32 length (-1 NULL) and body.
 */
static bool
rp_pgbin_array(RpBuf *out, RpReader *r)
{
	uint8_t		enc = rp_get_u8(r);
	uint32_t	elem_oid = rp_get_u32(r);
	uint32_t	ndim = rp_get_u32(r);
	uint64_t	nelems = 1;
	size_t		flags_at;
	int32_t		has_nulls = 0;

	if (!rp_pgbin_scalar_ok(enc) || ndim > 6)
		return false;
	rp_pgbin_i32(out, (int32_t) ndim);
	flags_at = out->len;
	rp_pgbin_i32(out, 0);
	rp_buf_put_u32(out, elem_oid);
	for (uint32_t d = 0; d < ndim && r->ok; d++)
	{
		uint32_t	n = rp_get_u32(r);
		int32_t		lb = (int32_t) rp_get_u32(r);

		rp_pgbin_i32(out, (int32_t) n);
		rp_pgbin_i32(out, lb);
		nelems *= n;
	}
	if (ndim == 0)
		nelems = 0;
	for (uint64_t i = 0; i < nelems && r->ok; i++)
	{
		size_t		len_at;

		if (rp_get_u8(r) == RP_DATUM_NULL)
		{
			has_nulls = 1;
			rp_pgbin_null(out);
			continue;
		}
		len_at = out->len;
		rp_pgbin_i32(out, 0);
		if (!rp_pgbin_body(out, r, enc))
			return false;
		rp_buf_set_u32_at(out, len_at, (uint32_t) (out->len - len_at - 4));
	}
	rp_buf_set_u32_at(out, flags_at, (uint32_t) has_nulls);
	return r->ok;
}

int
rp_pgbin_value(RpBuf *out, uint8_t enc, const unsigned char *data, uint32_t len)
{
	RpReader	r;
	size_t		start = out->len;
	bool		ok;

	rp_reader_init(&r, data, len);
	rp_pgbin_i32(out, 0);
	ok = enc == RP_ENC_ARRAY ? rp_pgbin_array(out, &r) : rp_pgbin_body(out, &r, enc);
	if (!ok || !r.ok)
	{
		out->len = start;
		return -1;
	}
	rp_buf_set_u32_at(out, start, (uint32_t) (out->len - start - 4));
	return 0;
}

bool
rp_pgbin_value_split(RpBuf *out, uint8_t enc, const unsigned char *data, uint32_t len,
					 const unsigned char **body, uint32_t *bodylen)
{
	RpReader	r;
	uint32_t	n;
	const unsigned char *p;

	if (enc != RP_ENC_STRING && enc != RP_ENC_BYTEA && enc != RP_ENC_JSON && enc != RP_ENC_JSONB)
		return false;
	rp_reader_init(&r, data, len);
	n = rp_get_u32(&r);
	p = rp_get_bytes(&r, n);
	if (!r.ok || (n > 0 && p == NULL) || n > INT32_MAX - 1)
		return false;

	/*
	 * as rp_pgbin_body: the bytes are the send format (jsonb: after its
	 * version)
	 */
	rp_pgbin_i32(out, (int32_t) (n + (enc == RP_ENC_JSONB ? 1 : 0)));
	if (enc == RP_ENC_JSONB)
		rp_buf_put_u8(out, 1);
	*body = p;
	*bodylen = n;
	return true;
}
