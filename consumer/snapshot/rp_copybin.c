/*
 * rp_copybin.c
 *    Binary send format into wire encodings (see rp_copybin.h).
 *
 * Most send formats are already what the wire carries (big-endian
 * integers, IEEE floats, numeric's digit form, interval's three fields,
 * range flags); the differences are the epoch (2000 -> 1970, and the
 * extended range past 294247), timetz's zone sign (west -> east), jsonb's
 * version byte, the length words inside arrays and ranges, and a
 * composite's field names and encodings (from the catalog).
 */
#include "rp_alloc.h"

#include <stdio.h>

#include "rp_decode.h"
#include "rp_encode.h"
#include "snapshot/rp_copybin.h"
#include "rp_time.h"
#include "rp_wire.h"

#define RP_RECV_MAX_DIM 6		/* PostgreSQL's MAXDIM */

static const unsigned char rp_copy_sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};

static uint32_t
rd32(const unsigned char *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

static uint64_t
rd64(const unsigned char *p)
{
	return ((uint64_t) rd32(p) << 32) | rd32(p + 4);
}

static int
bad(char *err, size_t errlen, uint8_t encoding, uint32_t len)
{
	snprintf(err, errlen, "binary %s value of %u bytes does not decode",
			 rp_encoding_name(encoding), len);
	return -1;
}

bool
rp_copybin_supported(const RpRecvType *t)
{
	if (t->encoding == RP_ENC_COMPOSITE)
	{
		if (t->comp == NULL)
			return false;
		for (int i = 0; i < t->comp->nfields; i++)
		{
			const RpRecvType *f = &t->comp->fields[i].type;

			/* a field's binary form is its send format, never the text */
			if (f->encoding == RP_ENC_TEXT || !rp_copybin_supported(f))
				return false;
		}
		return true;
	}
	if (t->encoding >= RP_ENC__COUNT)
		return false;
	if (t->encoding == RP_ENC_ARRAY || t->encoding == RP_ENC_RANGE)
		/* one level of elements, of a type whose send format we convert */
		return t->elem_encoding != RP_ENC_ARRAY && t->elem_encoding != RP_ENC_COMPOSITE &&
			t->elem_encoding != RP_ENC_RANGE && t->elem_encoding != RP_ENC_TEXT &&
			t->elem_encoding < RP_ENC__COUNT;
	return true;
}

static int	rp_recv_scalar(RpBuf *out, uint8_t enc, const unsigned char *d, uint32_t len,
						   char *err, size_t errlen);

static int
rp_recv_array(RpBuf *out, const RpRecvType *t, const unsigned char *d, uint32_t len,
			  char *err, size_t errlen)
{
	const unsigned char *p = d,
			   *end = d + len;
	int32_t		ndim;
	int			dims[RP_RECV_MAX_DIM] = {0},
				lbs[RP_RECV_MAX_DIM] = {0};
	uint64_t	nitems = 1;
	RpRecvType	elem = {t->elem_encoding, 0, 0, NULL};

	if (len < 12)
		return bad(err, errlen, RP_ENC_ARRAY, len);
	ndim = (int32_t) rd32(p);
	/* p + 4: has-null flag, p + 8: element type (ours comes from the catalog) */
	p += 12;
	if (ndim < 0 || ndim > RP_RECV_MAX_DIM || (size_t) (end - p) < (size_t) ndim * 8)
		return bad(err, errlen, RP_ENC_ARRAY, len);
	for (int i = 0; i < ndim; i++)
	{
		dims[i] = (int32_t) rd32(p);
		lbs[i] = (int32_t) rd32(p + 4);
		p += 8;
		if (dims[i] < 0)
			return bad(err, errlen, RP_ENC_ARRAY, len);
		nitems *= (uint64_t) dims[i];
		if (nitems > len)
			return bad(err, errlen, RP_ENC_ARRAY, len);
	}
	if (ndim == 0)
		nitems = 0;
	rp_enc_array_header(out, t->elem_encoding, t->elem_oid, (uint32_t) ndim, dims, lbs);
	for (uint64_t i = 0; i < nitems; i++)
	{
		int32_t		elen;

		if (end - p < 4)
			return bad(err, errlen, RP_ENC_ARRAY, len);
		elen = (int32_t) rd32(p);
		p += 4;
		if (elen == -1)
		{
			rp_buf_put_u8(out, RP_DATUM_NULL);
			continue;
		}
		if (elen < 0 || end - p < elen)
			return bad(err, errlen, RP_ENC_ARRAY, len);
		rp_buf_put_u8(out, RP_DATUM_VALUE);
		if (rp_copybin_value(out, &elem, p, (uint32_t) elen, err, errlen) < 0)
			return -1;
		p += elen;
	}
	if (p != end)
		return bad(err, errlen, RP_ENC_ARRAY, len);
	return 0;
}

static int
rp_recv_range(RpBuf *out, const RpRecvType *t, const unsigned char *d, uint32_t len,
			  char *err, size_t errlen)
{
	const unsigned char *p = d + 1,
			   *end = d + len;
	uint8_t		flags;
	RpRecvType	elem = {t->elem_encoding, 0, 0, NULL};

	if (len < 1)
		return bad(err, errlen, RP_ENC_RANGE, len);

	/*
	 * the low five bits mean the same on both sides; 0x20/0x40 (NULL bounds)
	 * never reach a value
	 */
	flags = d[0] & (RP_RANGE_EMPTY | RP_RANGE_LB_INC | RP_RANGE_UB_INC | RP_RANGE_LB_INF | RP_RANGE_UB_INF);
	if (flags & RP_RANGE_EMPTY)
		flags = RP_RANGE_EMPTY;
	rp_buf_put_u8(out, flags);
	rp_buf_put_u32(out, t->elem_oid);
	rp_buf_put_u8(out, t->elem_encoding);
	if (!(flags & RP_RANGE_EMPTY))
	{
		for (int b = 0; b < 2; b++)
		{
			int32_t		blen;

			if (flags & (b == 0 ? RP_RANGE_LB_INF : RP_RANGE_UB_INF))
				continue;
			if (end - p < 4)
				return bad(err, errlen, RP_ENC_RANGE, len);
			blen = (int32_t) rd32(p);
			p += 4;
			if (blen < 0 || end - p < blen)
				return bad(err, errlen, RP_ENC_RANGE, len);
			if (rp_copybin_value(out, &elem, p, (uint32_t) blen, err, errlen) < 0)
				return -1;
			p += blen;
		}
	}
	if (p != end)
		return bad(err, errlen, RP_ENC_RANGE, len);
	return 0;
}

/*
 * record_send: u32 field count, then per live field its type OID, a length
 * (-1: NULL) and its send format.  The wire: u16 count, then per field its
 * name, type OID and encoding, a datum kind and the value.
 */
static int
rp_recv_composite(RpBuf *out, const RpRecvType *t, const unsigned char *d, uint32_t len,
				  char *err, size_t errlen)
{
	const RpRecvComposite *c = t->comp;
	const unsigned char *p = d + 4,
			   *end = d + len;

	if (len < 4 || rd32(d) != (uint32_t) c->nfields)
		return bad(err, errlen, RP_ENC_COMPOSITE, len);
	rp_buf_put_u16(out, (uint16_t) c->nfields);
	for (int i = 0; i < c->nfields; i++)
	{
		const RpRecvField *f = &c->fields[i];
		int32_t		flen;

		if (end - p < 8 || rd32(p) != f->type_oid)
			return bad(err, errlen, RP_ENC_COMPOSITE, len);
		flen = (int32_t) rd32(p + 4);
		p += 8;
		rp_buf_put_cstr(out, f->name);
		rp_buf_put_u32(out, f->type_oid);
		rp_buf_put_u8(out, f->type.encoding);
		if (flen == -1)
		{
			rp_buf_put_u8(out, RP_DATUM_NULL);
			continue;
		}
		if (flen < 0 || end - p < flen)
			return bad(err, errlen, RP_ENC_COMPOSITE, len);
		rp_buf_put_u8(out, RP_DATUM_VALUE);
		if (rp_copybin_value(out, &f->type, p, (uint32_t) flen, err, errlen) < 0)
			return -1;
		p += flen;
	}
	if (p != end)
		return bad(err, errlen, RP_ENC_COMPOSITE, len);
	return 0;
}

static int
rp_recv_scalar(RpBuf *out, uint8_t enc, const unsigned char *d, uint32_t len,
			   char *err, size_t errlen)
{
	int			w = rp_encoding_width(enc);

	switch (enc)
	{
		case RP_ENC_BOOL:
			if (len != 1)
				return bad(err, errlen, enc, len);
			rp_buf_put_u8(out, d[0] ? 1 : 0);
			return 0;
		case RP_ENC_INT2:
		case RP_ENC_INT4:
		case RP_ENC_INT8:
		case RP_ENC_OID:
		case RP_ENC_FLOAT4:
		case RP_ENC_FLOAT8:
		case RP_ENC_UUID:
		case RP_ENC_TIME:
		case RP_ENC_INTERVAL:
			/* same bytes: big-endian integers, IEEE bits, (time, day, month) */
			if (w < 0 || len != (uint32_t) w)
				return bad(err, errlen, enc, len);
			rp_buf_put_bytes(out, d, len);
			return 0;
		case RP_ENC_DATE:
			{
				int32_t		v;

				if (len != 4)
					return bad(err, errlen, enc, len);
				v = (int32_t) rd32(d);
				if (v != RP_DATE_NEG_INF && v != RP_DATE_POS_INF)
				{
					/* PostgreSQL's dates stop well before this overflows */
					if (v < RP_PG_DATE_MIN || v > RP_PG_DATE_MAX)
						return bad(err, errlen, enc, len);
					v += RP_PG_EPOCH_DAYS;
				}
				rp_buf_put_u32(out, (uint32_t) v);
				return 0;
			}
		case RP_ENC_TIMETZ:
			if (len != 12)
				return bad(err, errlen, enc, len);
			rp_buf_put_bytes(out, d, 8);
			/* PostgreSQL keeps seconds west of UTC; the wire says east */
			rp_buf_put_u32(out, (uint32_t) (-(int32_t) rd32(d + 8)));
			return 0;
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			{
				int64_t		w;

				/*
				 * every PostgreSQL timestamp has a wire value (extended
				 * range)
				 */
				if (len != 8 || !rp_ts_from_pg((int64_t) rd64(d), true, &w))
					return bad(err, errlen, enc, len);
				rp_buf_put_u64(out, (uint64_t) w);
				return 0;
			}
		case RP_ENC_NUMERIC:
			/* the wire carries numeric_send's bytes, length-prefixed */
			if (len < 8 || (len - 8) % 2 != 0 || (len - 8) / 2 != (uint32_t) ((d[0] << 8) | d[1]))
				return bad(err, errlen, enc, len);
			rp_buf_put_str(out, (const char *) d, len);
			return 0;
		case RP_ENC_JSONB:
			/* jsonb_send: a version byte (1), then the canonical text */
			if (len < 1 || d[0] != 1)
				return bad(err, errlen, enc, len);
			rp_buf_put_str(out, (const char *) d + 1, len - 1);
			return 0;
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_BYTEA:
		case RP_ENC_JSON:
		case RP_ENC_ENUM:
			/* text, name, enum labels, json, col::text: the bytes themselves */
			rp_buf_put_str(out, (const char *) d, len);
			return 0;
	}
	snprintf(err, errlen, "values of encoding %s are not converted from binary",
			 rp_encoding_name(enc));
	return -1;
}

int
rp_copybin_value(RpBuf *out, const RpRecvType *t, const unsigned char *data, uint32_t len,
				 char *err, size_t errlen)
{
	if (!rp_copybin_supported(t))
	{
		snprintf(err, errlen, "values of encoding %s are not converted from binary",
				 rp_encoding_name(t->encoding));
		return -1;
	}
	if (t->encoding == RP_ENC_ARRAY)
		return rp_recv_array(out, t, data, len, err, errlen);
	if (t->encoding == RP_ENC_RANGE)
		return rp_recv_range(out, t, data, len, err, errlen);
	if (t->encoding == RP_ENC_COMPOSITE)
		return rp_recv_composite(out, t, data, len, err, errlen);
	return rp_recv_scalar(out, t->encoding, data, len, err, errlen);
}

int
rp_copybin_tuple(const unsigned char **pp, const unsigned char *end, int maxfields,
				 int *nfields, const unsigned char **data, int32_t *len)
{
	const unsigned char *p = *pp;
	int16_t		n;

	if (end - p < 2)
		return -1;
	n = (int16_t) ((p[0] << 8) | p[1]);
	p += 2;
	if (n == -1)
	{
		*pp = p;
		*nfields = 0;
		return 0;
	}
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
	{
		int32_t		l;

		if (end - p < 4)
			return -1;
		l = (int32_t) rd32(p);
		p += 4;
		if (l < -1 || (l > 0 && end - p < l))
			return -1;
		if (i < maxfields)
		{
			data[i] = p;
			len[i] = l;
		}
		if (l > 0)
			p += l;
	}
	*nfields = n;
	*pp = p;
	return 1;
}

int
rp_copybin_header(const unsigned char *p, size_t avail)
{
	uint32_t	ext;

	if (avail < 19 || memcmp(p, rp_copy_sig, sizeof(rp_copy_sig)) != 0)
		return -1;
	ext = rd32(p + 15);
	if (ext > avail - 19)
		return -1;
	return (int) (19 + ext);
}
