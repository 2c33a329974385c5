/*
 * rp_render.c
 *    Records and values as JSON (see rp_render.h and docs/protocol.md).
 */
#include "rp_alloc.h"
#include "rp_render.h"
#include "rp_format.h"
#include "rp_json.h"

#include <math.h>

static void rp_render_reader_value(RpBuf *buf, RpReader *r, uint8_t encoding, RpRenderOut *fo);

const char *
rp_identity_name(char identity)
{
	switch (identity)
	{
		case RP_IDENTITY_DEFAULT:
			return "default";
		case RP_IDENTITY_NOTHING:
			return "nothing";
		case RP_IDENTITY_FULL:
			return "full";
		case RP_IDENTITY_INDEX:
			return "index";
	}
	return "unknown";
}

/*
 * Between values and slices: hand what buf holds to fo's writer once it
 * passes fo->at.  False once a write failed (the caller stops rendering).
 */
static inline bool
rp_render_spill(RpBuf *buf, RpRenderOut *fo)
{
	if (fo == NULL)
		return true;
	if (!fo->failed && buf->len >= fo->at && fo->flush(fo->arg, buf) < 0)
		fo->failed = true;
	return !fo->failed;
}

/* A JSON string of len bytes at s, slice by slice when fo writes as it goes. */
static void
rp_render_string(RpBuf *buf, const char *s, size_t len, RpRenderOut *fo)
{
	if (fo == NULL || len <= RP_RENDER_SLICE)
	{
		rp_json_string(buf, s, len);
		return;
	}
	rp_buf_put_char(buf, '"');
	while (len > 0 && rp_render_spill(buf, fo))
	{
		size_t		n = rp_utf8_cut(s, len, RP_RENDER_SLICE);

		rp_json_escape(buf, s, n);
		s += n;
		len -= n;
	}
	rp_buf_put_char(buf, '"');
}

/* Bytes as a base64 JSON string; slices of whole 3-byte groups encode alike. */
static void
rp_render_base64(RpBuf *buf, const unsigned char *p, size_t len, RpRenderOut *fo)
{
	const size_t slice = RP_RENDER_SLICE / 3 * 3;

	rp_buf_put_char(buf, '"');
	if (fo == NULL)
		rp_fmt_base64(buf, p, len);
	else
		while (len > 0 && rp_render_spill(buf, fo))
		{
			size_t		n = len < slice ? len : slice;

			rp_fmt_base64(buf, p, n);
			p += n;
			len -= n;
		}
	rp_buf_put_char(buf, '"');
}

static void
rp_render_bool(RpBuf *buf, bool v)
{
	rp_buf_put_text(buf, v ? "true" : "false");
}

static double
rp_bits_to_double(uint64_t bits)
{
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

static float
rp_bits_to_float(uint32_t bits)
{
	float		f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Non-finite floats are strings: JSON has no NaN or Infinity. */
static void
rp_render_float(RpBuf *buf, double v, bool single)
{
	bool		finite = !isnan(v) && !isinf(v);

	if (!finite)
		rp_buf_put_char(buf, '"');
	if (single)
		rp_fmt_float4(buf, (float) v);
	else
		rp_fmt_float8(buf, v);
	if (!finite)
		rp_buf_put_char(buf, '"');
}

/* Elements of dimension dim, nested one JSON array per dimension. */
static void
rp_render_array_dim(RpBuf *buf, RpReader *r, uint8_t enc, const uint32_t *dims,
					uint32_t ndim, uint32_t dim, RpRenderOut *fo)
{
	rp_buf_put_char(buf, '[');
	for (uint32_t i = 0; i < dims[dim] && rp_render_spill(buf, fo); i++)
	{
		if (i)
			rp_buf_put_char(buf, ',');
		if (dim + 1 < ndim)
			rp_render_array_dim(buf, r, enc, dims, ndim, dim + 1, fo);
		else if (rp_get_u8(r) == RP_DATUM_NULL)
			rp_buf_put_text(buf, "null");
		else
			rp_render_reader_value(buf, r, enc, fo);
	}
	rp_buf_put_char(buf, ']');
}

static void
rp_render_array(RpBuf *buf, RpReader *r, RpRenderOut *fo)
{
	uint8_t		enc = rp_get_u8(r);
	uint32_t	ndim;
	uint32_t	dims[8];
	int32_t		lbounds[8];
	bool		default_bounds = true;

	(void) rp_get_u32(r);		/* element type OID */
	ndim = rp_get_u32(r);
	for (uint32_t d = 0; d < ndim && d < 8; d++)
	{
		dims[d] = rp_get_u32(r);
		lbounds[d] = (int32_t) rp_get_u32(r);
		if (lbounds[d] != 1)
			default_bounds = false;
	}
	if (ndim == 0)
	{
		rp_buf_put_text(buf, "[]");
		return;
	}
	if (!default_bounds)
	{
		rp_buf_put_char(buf, '{');
		rp_json_key(buf, "lower_bounds");
		rp_buf_put_char(buf, '[');
		for (uint32_t d = 0; d < ndim; d++)
		{
			if (d)
				rp_buf_put_char(buf, ',');
			rp_fmt_int64(buf, lbounds[d]);
		}
		rp_buf_put_text(buf, "],");
		rp_json_key(buf, "elements");
	}
	rp_render_array_dim(buf, r, enc, dims, ndim, 0, fo);
	if (!default_bounds)
		rp_buf_put_char(buf, '}');
}

static void
rp_render_composite(RpBuf *buf, RpReader *r, RpRenderOut *fo)
{
	uint16_t	natts = rp_get_u16(r);

	rp_buf_put_char(buf, '{');
	for (uint16_t i = 0; i < natts && rp_render_spill(buf, fo); i++)
	{
		uint32_t	nlen;
		const char *name = rp_get_str(r, &nlen);
		uint8_t		enc;

		(void) rp_get_u32(r);	/* field type OID */
		enc = rp_get_u8(r);
		if (i)
			rp_buf_put_char(buf, ',');
		rp_json_string(buf, name, nlen);
		rp_buf_put_char(buf, ':');
		if (rp_get_u8(r) == RP_DATUM_NULL)
			rp_buf_put_text(buf, "null");
		else
			rp_render_reader_value(buf, r, enc, fo);
	}
	rp_buf_put_char(buf, '}');
}

static void
rp_render_range(RpBuf *buf, RpReader *r, RpRenderOut *fo)
{
	uint8_t		flags = rp_get_u8(r);
	uint8_t		enc;

	(void) rp_get_u32(r);		/* subtype OID */
	enc = rp_get_u8(r);
	if (flags & RP_RANGE_EMPTY)
	{
		rp_buf_put_text(buf, "{\"empty\":true}");
		return;
	}
	rp_buf_put_char(buf, '{');
	rp_json_key(buf, "lower");
	if (flags & RP_RANGE_LB_INF)
		rp_buf_put_text(buf, "null");
	else
		rp_render_reader_value(buf, r, enc, fo);
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, "upper");
	if (flags & RP_RANGE_UB_INF)
		rp_buf_put_text(buf, "null");
	else
		rp_render_reader_value(buf, r, enc, fo);
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, "lower_inclusive");
	rp_render_bool(buf, (flags & RP_RANGE_LB_INC) != 0);
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, "upper_inclusive");
	rp_render_bool(buf, (flags & RP_RANGE_UB_INC) != 0);
	rp_buf_put_char(buf, '}');
}


/*
 * A json value's text as it is, except its line breaks: a rendered record
 * is one line (JSON lines, newline-joined output).  In valid JSON a raw CR
 * or LF can only be whitespace between tokens (inside a string it must be
 * escaped), so a space in its place means the same document.
 */
static void
rp_render_json_text(RpBuf *buf, const char *s, uint32_t len, RpRenderOut *fo)
{
	if (s == NULL)
		return;
	while (len > 0 && rp_render_spill(buf, fo))
	{
		uint32_t	n = fo == NULL || len < RP_RENDER_SLICE ? len : RP_RENDER_SLICE;
		size_t		start = buf->len;

		rp_buf_put_bytes(buf, s, n);
		for (size_t i = start; i < buf->len; i++)
			if (buf->data[i] == '\n' || buf->data[i] == '\r')
				buf->data[i] = ' ';
		s += n;
		len -= n;
	}
}

static void
rp_render_reader_value(RpBuf *buf, RpReader *r, uint8_t encoding, RpRenderOut *fo)
{
	uint32_t	len;
	const char *s;

	/* after a failed write a loop stopped part-way: r is no longer at a value */
	if (fo != NULL && fo->failed)
		return;
	switch (encoding)
	{
		case RP_ENC_BOOL:
			rp_render_bool(buf, rp_get_u8(r) != 0);
			break;
		case RP_ENC_INT2:
			rp_fmt_int64(buf, (int16_t) rp_get_u16(r));
			break;
		case RP_ENC_INT4:
			rp_fmt_int64(buf, (int32_t) rp_get_u32(r));
			break;
		case RP_ENC_INT8:
			rp_fmt_int64(buf, (int64_t) rp_get_u64(r));
			break;
		case RP_ENC_OID:
			rp_fmt_uint64(buf, rp_get_u32(r));
			break;
		case RP_ENC_FLOAT4:
			rp_render_float(buf, rp_bits_to_float(rp_get_u32(r)), true);
			break;
		case RP_ENC_FLOAT8:
			rp_render_float(buf, rp_bits_to_double(rp_get_u64(r)), false);
			break;
		case RP_ENC_NUMERIC:
			len = rp_get_u32(r);
			rp_buf_put_char(buf, '"');
			rp_fmt_numeric(buf, rp_get_bytes(r, len), len);
			rp_buf_put_char(buf, '"');
			break;
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_ENUM:
			s = rp_get_str(r, &len);
			rp_render_string(buf, s, len, fo);
			break;
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			/* already JSON: validated by the server's input function */
			s = rp_get_str(r, &len);
			rp_render_json_text(buf, s, len, fo);
			break;
		case RP_ENC_BYTEA:
			s = rp_get_str(r, &len);
			rp_render_base64(buf, (const unsigned char *) s, len, fo);
			break;
		case RP_ENC_UUID:
			rp_buf_put_char(buf, '"');
			rp_fmt_uuid(buf, rp_get_bytes(r, 16));
			rp_buf_put_char(buf, '"');
			break;
		case RP_ENC_DATE:
			rp_buf_put_char(buf, '"');
			rp_fmt_date(buf, (int32_t) rp_get_u32(r));
			rp_buf_put_char(buf, '"');
			break;
		case RP_ENC_TIME:
			rp_buf_put_char(buf, '"');
			rp_fmt_time(buf, (int64_t) rp_get_u64(r));
			rp_buf_put_char(buf, '"');
			break;
		case RP_ENC_TIMETZ:
			{
				int64_t		us = (int64_t) rp_get_u64(r);

				rp_buf_put_char(buf, '"');
				rp_fmt_timetz(buf, us, (int32_t) rp_get_u32(r));
				rp_buf_put_char(buf, '"');
				break;
			}
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			rp_buf_put_char(buf, '"');
			rp_fmt_timestamp(buf, (int64_t) rp_get_u64(r), encoding == RP_ENC_TIMESTAMPTZ);
			rp_buf_put_char(buf, '"');
			break;
		case RP_ENC_INTERVAL:
			{
				int64_t		us = (int64_t) rp_get_u64(r);
				int32_t		days = (int32_t) rp_get_u32(r);
				int32_t		months = (int32_t) rp_get_u32(r);

				rp_buf_put_text(buf, "{\"months\":");
				rp_fmt_int64(buf, months);
				rp_buf_put_text(buf, ",\"days\":");
				rp_fmt_int64(buf, days);
				rp_buf_put_text(buf, ",\"microseconds\":");
				rp_fmt_int64(buf, us);
				rp_buf_put_char(buf, '}');
				break;
			}
		case RP_ENC_ARRAY:
			rp_render_array(buf, r, fo);
			break;
		case RP_ENC_COMPOSITE:
			rp_render_composite(buf, r, fo);
			break;
		case RP_ENC_RANGE:
			rp_render_range(buf, r, fo);
			break;
		default:
			rp_buf_put_text(buf, "null");
			break;
	}
}

void
rp_render_value(RpBuf *buf, uint8_t encoding, const unsigned char *data, uint32_t len)
{
	RpReader	r;

	rp_reader_init(&r, data, len);
	rp_render_reader_value(buf, &r, encoding, NULL);
}

static void
rp_render_tuple_out(RpBuf *buf, const RpRelation *rel, const RpTuple *tup, RpRenderOut *fo)
{
	bool		first = true;

	rp_buf_put_char(buf, '{');
	for (uint16_t i = 0; i < tup->natts && rp_render_spill(buf, fo); i++)
	{
		const RpDatum *d = &tup->datums[i];

		if (d->kind == RP_DATUM_UNCHANGED || d->kind == RP_DATUM_NOT_IN_KEY)
			continue;
		if (!first)
			rp_buf_put_char(buf, ',');
		first = false;
		rp_json_key(buf, rel->cols[i].name);
		if (d->kind == RP_DATUM_NULL)
			rp_buf_put_text(buf, "null");
		else
		{
			RpReader	r;

			rp_reader_init(&r, d->data, d->len);
			rp_render_reader_value(buf, &r, rel->cols[i].encoding, fo);
		}
	}
	rp_buf_put_char(buf, '}');
}

void
rp_render_tuple(RpBuf *buf, const RpRelation *rel, const RpTuple *tup)
{
	rp_render_tuple_out(buf, rel, tup, NULL);
}

/* "unchanged_toast":["col",...] when the new tuple left TOASTed values out. */
static void
rp_render_unchanged(RpBuf *buf, const RpRelation *rel, const RpTuple *tup)
{
	bool		any = false;

	for (uint16_t i = 0; i < tup->natts; i++)
	{
		if (tup->datums[i].kind != RP_DATUM_UNCHANGED)
			continue;
		rp_buf_put_text(buf, any ? "," : ",\"unchanged_toast\":[");
		rp_json_cstring(buf, rel->cols[i].name);
		any = true;
	}
	if (any)
		rp_buf_put_char(buf, ']');
}

static void
rp_render_relname(RpBuf *buf, const RpRelation *rel)
{
	rp_json_key(buf, "schema");
	rp_json_cstring(buf, rel->schema);
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, "table");
	rp_json_cstring(buf, rel->name);
}

static void
rp_render_member_u64(RpBuf *buf, const char *key, uint64_t v)
{
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, key);
	rp_fmt_uint64(buf, v);
}

static void
rp_render_member_lsn(RpBuf *buf, const char *key, uint64_t lsn)
{
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, key);
	rp_buf_put_char(buf, '"');
	rp_fmt_lsn(buf, lsn);
	rp_buf_put_char(buf, '"');
}

static void
rp_render_member_time(RpBuf *buf, const char *key, int64_t t)
{
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, key);
	rp_buf_put_char(buf, '"');
	rp_fmt_timestamp(buf, t, true);
	rp_buf_put_char(buf, '"');
}

static void
rp_render_member_bool(RpBuf *buf, const char *key, bool v)
{
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, key);
	rp_render_bool(buf, v);
}

static void
rp_render_relation(RpBuf *buf, const RpRelation *rel)
{
	rp_render_member_u64(buf, "relid", rel->relid);
	rp_buf_put_char(buf, ',');
	rp_render_relname(buf, rel);
	rp_buf_put_char(buf, ',');
	rp_json_key(buf, "replica_identity");
	rp_json_cstring(buf, rp_identity_name(rel->identity));
	rp_buf_put_text(buf, ",\"columns\":[");
	for (uint16_t i = 0; i < rel->natts; i++)
	{
		const RpColumn *c = &rel->cols[i];

		if (i)
			rp_buf_put_char(buf, ',');
		rp_buf_put_char(buf, '{');
		rp_json_key(buf, "name");
		rp_json_cstring(buf, c->name);
		rp_buf_put_text(buf, ",\"attnum\":");
		rp_fmt_int64(buf, c->attnum);	/* signed, as attnum is */
		rp_buf_put_char(buf, ',');
		rp_json_key(buf, "type");
		rp_json_cstring(buf, c->type_name);
		rp_render_member_u64(buf, "type_oid", c->type_oid);
		rp_buf_put_text(buf, ",\"typmod\":");
		rp_fmt_int64(buf, c->typmod);
		rp_buf_put_char(buf, ',');
		rp_json_key(buf, "encoding");
		rp_json_cstring(buf, rp_encoding_name(c->encoding));
		rp_render_member_bool(buf, "primary_key", (c->flags & RP_COL_PRIMARY_KEY) != 0);
		rp_render_member_bool(buf, "identity", (c->flags & RP_COL_IDENTITY) != 0);
		rp_render_member_bool(buf, "not_null", (c->flags & RP_COL_NOT_NULL) != 0);
		rp_render_member_bool(buf, "generated", (c->flags & RP_COL_GENERATED) != 0);
		rp_buf_put_char(buf, '}');
	}
	rp_buf_put_char(buf, ']');
	/* a plain table renders as in versions 1 and 2 */
	if (rp_relation_is_root(rel))
	{
		static const char digits[] = "0123456789abcdef";
		char		hex[9];

		for (int i = 0; i < 8; i++)
			hex[i] = digits[(rel->partition_set >> (28 - 4 * i)) & 0xF];
		hex[8] = '\0';
		rp_render_member_bool(buf, "partition_root", true);
		rp_buf_put_char(buf, ',');
		rp_json_key(buf, "partition_set");
		rp_json_cstring(buf, hex);
	}
}

static void
rp_render_change(RpBuf *buf, const RpRecord *rec, RpRenderOut *fo)
{
	const RpRelation *rel = rec->u.change.rel;
	uint8_t		flags = rec->u.change.flags;

	if (flags & RP_CHANGE_HAS_XID)
		rp_render_member_u64(buf, "xid", rec->u.change.xid);
	rp_buf_put_char(buf, ',');
	rp_render_relname(buf, rel);
	if (flags & RP_CHANGE_NO_IDENTITY)
		rp_render_member_bool(buf, "no_identity", true);
	if (rec->u.change.has_old)
	{
		rp_buf_put_char(buf, ',');
		rp_json_key(buf, (flags & RP_CHANGE_OLD_KEY) ? "key" : "old");
		rp_render_tuple_out(buf, rel, &rec->u.change.old_tuple, fo);
	}
	if (rec->u.change.has_new)
	{
		rp_buf_put_char(buf, ',');
		rp_json_key(buf, "new");
		rp_render_tuple_out(buf, rel, &rec->u.change.new_tuple, fo);
		rp_render_unchanged(buf, rel, &rec->u.change.new_tuple);
	}
}

void
rp_render_record(RpBuf *buf, const RpRecord *rec, const RpRelMap *rels, const char *extra)
{
	rp_render_record_out(buf, rec, rels, extra, NULL);
}

void
rp_render_record_out(RpBuf *buf, const RpRecord *rec, const RpRelMap *rels, const char *extra,
					 RpRenderOut *fo)
{
	rp_buf_put_text(buf, "{\"kind\":");
	rp_json_cstring(buf, rp_tag_name(rec->tag));
	if (extra && *extra)
	{
		rp_buf_put_char(buf, ',');
		rp_buf_put_text(buf, extra);
	}
	switch (rec->tag)
	{
		case RP_TAG_BEGIN:
			rp_render_member_u64(buf, "xid", rec->u.begin.xid);
			rp_render_member_lsn(buf, "final_lsn", rec->u.begin.final_lsn);
			rp_render_member_time(buf, "commit_time", rec->u.begin.commit_time);
			break;
		case RP_TAG_STREAM_COMMIT:
			rp_render_member_u64(buf, "xid", rec->u.commit.xid);
			/* fall through */
		case RP_TAG_COMMIT:
			rp_render_member_lsn(buf, "commit_lsn", rec->u.commit.commit_lsn);
			rp_render_member_lsn(buf, "end_lsn", rec->u.commit.end_lsn);
			rp_render_member_time(buf, "commit_time", rec->u.commit.commit_time);
			if (rec->u.commit.timeline != 0)
				rp_render_member_u64(buf, "timeline", rec->u.commit.timeline);
			break;
		case RP_TAG_ORIGIN:
			rp_buf_put_char(buf, ',');
			rp_json_key(buf, "origin");
			rp_json_string(buf, rec->u.origin.name, rec->u.origin.name_len);
			rp_render_member_lsn(buf, "origin_lsn", rec->u.origin.lsn);
			break;
		case RP_TAG_RELATION:
			rp_render_relation(buf, rec->u.relation.rel);
			break;
		case RP_TAG_INSERT:
		case RP_TAG_UPDATE:
		case RP_TAG_DELETE:
			rp_render_change(buf, rec, fo);
			break;
		case RP_TAG_TRUNCATE:
			if (rec->u.truncate.flags & RP_CHANGE_HAS_XID)
				rp_render_member_u64(buf, "xid", rec->u.truncate.xid);
			rp_buf_put_text(buf, ",\"relations\":[");
			for (uint32_t i = 0; i < rec->u.truncate.nrels; i++)
			{
				const RpRelation *rel = rp_relmap_get(rels, rp_truncate_relid(rec, i));

				if (i)
					rp_buf_put_char(buf, ',');
				rp_buf_put_char(buf, '{');
				rp_render_relname(buf, rel);
				rp_buf_put_char(buf, '}');
			}
			rp_buf_put_char(buf, ']');
			rp_render_member_bool(buf, "cascade", (rec->u.truncate.flags & RP_TRUNCATE_CASCADE) != 0);
			rp_render_member_bool(buf, "restart_identity",
								  (rec->u.truncate.flags & RP_TRUNCATE_RESTART_SEQS) != 0);
			break;
		case RP_TAG_MESSAGE:
			if (rec->u.message.flags & RP_CHANGE_HAS_XID)
				rp_render_member_u64(buf, "xid", rec->u.message.xid);
			rp_render_member_bool(buf, "transactional",
								  (rec->u.message.flags & RP_MESSAGE_TRANSACTIONAL) != 0);
			rp_render_member_lsn(buf, "lsn", rec->u.message.lsn);
			rp_buf_put_char(buf, ',');
			rp_json_key(buf, "prefix");
			rp_json_string(buf, rec->u.message.prefix, rec->u.message.prefix_len);

			/*
			 * text when it is UTF-8 without NUL (no PostgreSQL text holds
			 * one, and jsonb refuses \u0000), else base64 under its own key
			 */
			if (rp_utf8_valid(rec->u.message.content, rec->u.message.content_len) &&
				memchr(rec->u.message.content, '\0', rec->u.message.content_len) == NULL)
			{
				rp_buf_put_char(buf, ',');
				rp_json_key(buf, "content");
				rp_render_string(buf, (const char *) rec->u.message.content,
								 rec->u.message.content_len, fo);
			}
			else
			{
				rp_buf_put_char(buf, ',');
				rp_json_key(buf, "content_base64");
				rp_render_base64(buf, rec->u.message.content, rec->u.message.content_len, fo);
			}
			break;
		case RP_TAG_STREAM_START:
			rp_render_member_u64(buf, "xid", rec->u.stream_start.xid);
			rp_render_member_bool(buf, "first_segment", rec->u.stream_start.first_segment != 0);
			break;
		case RP_TAG_STREAM_STOP:
			break;
		case RP_TAG_STREAM_ABORT:
			rp_render_member_u64(buf, "xid", rec->u.stream_abort.xid);
			rp_render_member_u64(buf, "subxid", rec->u.stream_abort.subxid);
			break;
	}
	rp_buf_put_char(buf, '}');
}
