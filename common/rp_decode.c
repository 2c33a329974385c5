/*
 * rp_decode.c
 *    Frames into records, with structural checks on every value
 *    (see rp_decode.h).
 */
#include "rp_alloc.h"
#include "rp_decode.h"
#include "rp_time.h"

#include <stdio.h>
#include <stdarg.h>

#define RP_MAX_NESTING 8		/* arrays of composites of ranges ... */
#define RP_MAX_ARRAY_DIMS 6		/* PostgreSQL's MAXDIM */

/* ---- relations -------------------------------------------------------- */

void
rp_relation_free(RpRelation *rel)
{
	if (rel == NULL)
		return;
	/* a relation that failed to decode may be partly filled in */
	for (uint16_t i = 0; rel->cols && i < rel->natts; i++)
	{
		if (rel->cols[i].name)
			rp_free(rel->cols[i].name);
		if (rel->cols[i].type_name)
			rp_free(rel->cols[i].type_name);
	}
	if (rel->cols)
		rp_free(rel->cols);
	if (rel->schema)
		rp_free(rel->schema);
	if (rel->name)
		rp_free(rel->name);
	rp_free(rel);
}

RpRelation *
rp_relation_copy(const RpRelation *rel)
{
	RpRelation *c = rp_malloc0(sizeof(RpRelation));

	*c = *rel;
	c->schema = rp_strndup(rel->schema, strlen(rel->schema));
	c->name = rp_strndup(rel->name, strlen(rel->name));
	c->cols = rp_malloc0(sizeof(RpColumn) * (rel->natts ? rel->natts : 1));
	for (uint16_t i = 0; i < rel->natts; i++)
	{
		c->cols[i] = rel->cols[i];
		c->cols[i].name = rp_strndup(rel->cols[i].name, strlen(rel->cols[i].name));
		c->cols[i].type_name = rp_strndup(rel->cols[i].type_name,
										  strlen(rel->cols[i].type_name));
	}
	return c;
}

int
rp_relation_column(const RpRelation *rel, const char *name)
{
	for (uint16_t i = 0; i < rel->natts; i++)
		if (strcmp(rel->cols[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- relation map ----------------------------------------------------- */

void
rp_relmap_init(RpRelMap *map)
{
	map->nslots = 64;
	map->count = 0;
	map->slots = rp_malloc0(sizeof(RpRelation *) * map->nslots);
}

void
rp_relmap_free(RpRelMap *map)
{
	if (map->slots == NULL)
		return;
	for (size_t i = 0; i < map->nslots; i++)
		rp_relation_free(map->slots[i]);
	rp_free(map->slots);
	map->slots = NULL;
	map->nslots = map->count = 0;
}

static size_t
rp_relmap_slot(const RpRelMap *map, uint32_t relid)
{
	size_t		i = (relid * 2654435761u) & (map->nslots - 1);

	while (map->slots[i] != NULL && map->slots[i]->relid != relid)
		i = (i + 1) & (map->nslots - 1);
	return i;
}

RpRelation *
rp_relmap_get(const RpRelMap *map, uint32_t relid)
{
	return map->slots[rp_relmap_slot(map, relid)];
}

RpRelation *
rp_relmap_put(RpRelMap *map, RpRelation *rel)
{
	size_t		i;
	RpRelation *old;

	if ((map->count + 1) * 2 > map->nslots)
	{
		RpRelation **oldslots = map->slots;
		size_t		oldn = map->nslots;

		map->nslots *= 2;
		map->slots = rp_malloc0(sizeof(RpRelation *) * map->nslots);
		for (size_t j = 0; j < oldn; j++)
			if (oldslots[j])
				map->slots[rp_relmap_slot(map, oldslots[j]->relid)] = oldslots[j];
		rp_free(oldslots);
	}
	i = rp_relmap_slot(map, rel->relid);
	old = map->slots[i];
	if (old == NULL)
		map->count++;
	map->slots[i] = rel;
	return old;
}

/* ---- names ------------------------------------------------------------ */

const char *
rp_tag_name(uint8_t tag)
{
	switch (tag)
	{
		case RP_TAG_BEGIN:
			return "begin";
		case RP_TAG_COMMIT:
			return "commit";
		case RP_TAG_ORIGIN:
			return "origin";
		case RP_TAG_RELATION:
			return "relation";
		case RP_TAG_INSERT:
			return "insert";
		case RP_TAG_UPDATE:
			return "update";
		case RP_TAG_DELETE:
			return "delete";
		case RP_TAG_TRUNCATE:
			return "truncate";
		case RP_TAG_MESSAGE:
			return "message";
		case RP_TAG_STREAM_START:
			return "stream_start";
		case RP_TAG_STREAM_STOP:
			return "stream_stop";
		case RP_TAG_STREAM_COMMIT:
			return "stream_commit";
		case RP_TAG_STREAM_ABORT:
			return "stream_abort";
	}
	return "unknown";
}

const char *
rp_encoding_name(uint8_t encoding)
{
	static const char *const names[RP_ENC__COUNT] = {
		"text", "bool", "int2", "int4", "int8", "oid", "float4", "float8",
		"numeric", "string", "bytea", "uuid", "date", "time", "timetz",
		"timestamp", "timestamptz", "interval", "json", "jsonb", "array",
		"enum", "composite", "range"
	};

	return encoding < RP_ENC__COUNT ? names[encoding] : "unknown";
}

int
rp_encoding_width(uint8_t encoding)
{
	switch (encoding)
	{
		case RP_ENC_BOOL:
			return 1;
		case RP_ENC_INT2:
			return 2;
		case RP_ENC_INT4:
		case RP_ENC_OID:
		case RP_ENC_FLOAT4:
		case RP_ENC_DATE:
			return 4;
		case RP_ENC_INT8:
		case RP_ENC_FLOAT8:
		case RP_ENC_TIME:
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			return 8;
		case RP_ENC_TIMETZ:
			return 12;
		case RP_ENC_UUID:
		case RP_ENC_INTERVAL:
			return 16;
		default:
			return -1;
	}
}

/* ---- values ----------------------------------------------------------- */

static bool rp_skip_datum(RpReader *r, uint8_t encoding, int depth, bool allow_special);

bool
rp_skip_value(RpReader *r, uint8_t encoding, int depth)
{
	int			width = rp_encoding_width(encoding);

	if (depth > RP_MAX_NESTING)
		return r->ok = false;
	if (width > 0)
	{
		const unsigned char *p = rp_get_bytes(r, (size_t) width);

		if (p == NULL)
			return false;
		/* a value no PostgreSQL timestamp or date has: the frame is damaged */
		if (encoding == RP_ENC_TIMESTAMP || encoding == RP_ENC_TIMESTAMPTZ)
			return r->ok = rp_ts_valid((int64_t) rp_load_u64(p));
		if (encoding == RP_ENC_DATE)
			return r->ok = rp_date_valid((int32_t) rp_load_u32(p));
		return true;
	}

	switch (encoding)
	{
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_BYTEA:
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
		case RP_ENC_ENUM:
			{
				uint32_t	len;

				return rp_get_str(r, &len) != NULL || (r->ok && len == 0);
			}
		case RP_ENC_NUMERIC:
			{
				uint32_t	len = rp_get_u32(r);
				const unsigned char *p = rp_get_bytes(r, len);
				uint16_t	ndigits,
							sign;

				if (p == NULL || len < 8)
					return r->ok = false;
				ndigits = rp_load_u16(p);
				if (len != 8u + 2u * ndigits)
					return r->ok = false;
				/* as PostgreSQL's numeric_recv: a known sign, digits 0..9999 */
				sign = rp_load_u16(p + 4);
				if (sign != RP_NUMERIC_POS && sign != RP_NUMERIC_NEG && sign != RP_NUMERIC_NAN &&
					sign != RP_NUMERIC_PINF && sign != RP_NUMERIC_NINF)
					return r->ok = false;
				for (uint16_t i = 0; i < ndigits; i++)
					if (rp_load_u16(p + 8 + 2 * (size_t) i) > 9999)
						return r->ok = false;
				return true;
			}
		case RP_ENC_ARRAY:
			{
				uint8_t		elem_enc = rp_get_u8(r);
				uint32_t	ndim;
				uint64_t	nitems = 1;

				(void) rp_get_u32(r);	/* element type OID */
				ndim = rp_get_u32(r);
				if (!r->ok || elem_enc >= RP_ENC__COUNT || ndim > RP_MAX_ARRAY_DIMS)
					return r->ok = false;
				for (uint32_t d = 0; d < ndim; d++)
				{
					uint32_t	dimlen = rp_get_u32(r);

					(void) rp_get_u32(r);	/* lower bound */
					nitems *= dimlen;
					/* each element needs at least its kind byte */
					if (!r->ok || nitems > rp_reader_left(r))
						return r->ok = false;
				}
				if (ndim == 0)
					nitems = 0;
				for (uint64_t i = 0; i < nitems; i++)
					if (!rp_skip_datum(r, elem_enc, depth + 1, false))
						return false;
				return r->ok;
			}
		case RP_ENC_COMPOSITE:
			{
				uint16_t	natts = rp_get_u16(r);

				for (uint16_t i = 0; i < natts && r->ok; i++)
				{
					uint32_t	len;
					uint8_t		enc;

					(void) rp_get_str(r, &len); /* field name */
					(void) rp_get_u32(r);	/* field type OID */
					enc = rp_get_u8(r);
					if (!r->ok || enc >= RP_ENC__COUNT)
						return r->ok = false;
					if (!rp_skip_datum(r, enc, depth + 1, false))
						return false;
				}
				return r->ok;
			}
		case RP_ENC_RANGE:
			{
				uint8_t		flags = rp_get_u8(r);
				uint8_t		enc;

				(void) rp_get_u32(r);	/* subtype OID */
				enc = rp_get_u8(r);
				if (!r->ok || enc >= RP_ENC__COUNT || (flags & ~0x1F))
					return r->ok = false;
				if (flags & RP_RANGE_EMPTY)
					return true;
				if (!(flags & RP_RANGE_LB_INF) && !rp_skip_value(r, enc, depth + 1))
					return false;
				if (!(flags & RP_RANGE_UB_INF) && !rp_skip_value(r, enc, depth + 1))
					return false;
				return r->ok;
			}
		default:
			return r->ok = false;
	}
}

/* A kind byte and, for a value, the value. */
static bool
rp_skip_datum(RpReader *r, uint8_t encoding, int depth, bool allow_special)
{
	uint8_t		kind = rp_get_u8(r);

	if (!r->ok)
		return false;
	if (kind == RP_DATUM_NULL)
		return true;
	if (kind == RP_DATUM_VALUE)
		return rp_skip_value(r, encoding, depth);
	if (allow_special && (kind == RP_DATUM_UNCHANGED || kind == RP_DATUM_NOT_IN_KEY))
		return true;
	return r->ok = false;
}

/* ---- decoder ---------------------------------------------------------- */

void
rp_decoder_init(RpDecoder *dec)
{
	memset(dec, 0, sizeof(*dec));
	rp_relmap_init(&dec->rels);
}

void
rp_decoder_free(RpDecoder *dec)
{
	rp_relmap_free(&dec->rels);
	if (dec->old_datums)
		rp_free(dec->old_datums);
	if (dec->new_datums)
		rp_free(dec->new_datums);
	dec->old_datums = dec->new_datums = NULL;
	dec->datum_cap = 0;
}

/*
 * In the plugin vsnprintf is PostgreSQL's, declared gnu_printf since 16:
 * say the same, or -Wmissing-format-attribute complains.
 */
#ifdef RP_BACKEND
static int	rp_fail(RpDecoder *dec, const char *fmt,...) pg_attribute_printf(2, 3);
#else
static int	rp_fail(RpDecoder *dec, const char *fmt,...) __attribute__((format(printf, 2, 3)));
#endif

static int
rp_fail(RpDecoder *dec, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(dec->error, sizeof(dec->error), fmt, ap);
	va_end(ap);
	return -1;
}

bool
rp_decoder_frame(RpDecoder *dec, const void *data, size_t len)
{
	const unsigned char *p = data;

	dec->error[0] = '\0';
	if (len < RP_FRAME_HEADER_LEN || p[0] != RP_FRAME_MAGIC)
	{
		rp_fail(dec, "not a replicant binary frame (%zu bytes, bad header)", len);
		return false;
	}
	if (p[1] < RP_PROTO_VERSION_MIN || p[1] > RP_PROTO_VERSION_MAX)
	{
		rp_fail(dec, "unsupported protocol version %u (this build speaks %d to %d)",
				p[1], RP_PROTO_VERSION_MIN, RP_PROTO_VERSION_MAX);
		return false;
	}
	dec->version = p[1];
	dec->frame_start = p;
	rp_reader_init(&dec->frame, p + RP_FRAME_HEADER_LEN, len - RP_FRAME_HEADER_LEN);
	return true;
}

void
rp_decoder_records(RpDecoder *dec, const void *data, size_t len)
{
	dec->error[0] = '\0';
	dec->frame_start = data;
	rp_reader_init(&dec->frame, data, len);
}

uint32_t
rp_truncate_relid(const RpRecord *rec, uint32_t i)
{
	return rp_load_u32(rec->u.truncate.relids + 4 * (size_t) i);
}

static char *
rp_dup_str(RpReader *r)
{
	uint32_t	len;
	const char *s = rp_get_str(r, &len);

	if (!r->ok)
		return NULL;
	if (memchr(s, '\0', len) != NULL)
	{
		r->ok = false;
		return NULL;
	}
	return rp_strndup(s, len);
}

static int
rp_decode_relation(RpDecoder *dec, RpReader *r, RpRecord *rec)
{
	RpRelation *rel = rp_malloc0(sizeof(RpRelation));

	rel->relid = rp_get_u32(r);
	rel->schema = rp_dup_str(r);
	rel->name = rp_dup_str(r);
	rel->identity = (char) rp_get_u8(r);
	rel->natts = rp_get_u16(r);
	if (!r->ok || (size_t) rel->natts * 20 > rp_reader_left(r))
	{
		r->ok = false;			/* cannot hold that many columns */
		rel->natts = 0;
	}
	rel->cols = rp_malloc0(sizeof(RpColumn) * (rel->natts ? rel->natts : 1));
	for (uint16_t i = 0; r->ok && i < rel->natts; i++)
	{
		RpColumn   *c = &rel->cols[i];

		c->attnum = (int16_t) rp_get_u16(r);
		c->name = rp_dup_str(r);
		c->type_oid = rp_get_u32(r);
		c->type_name = rp_dup_str(r);
		c->typmod = (int32_t) rp_get_u32(r);
		c->encoding = rp_get_u8(r);
		c->flags = rp_get_u8(r);
		if (c->encoding >= RP_ENC__COUNT)
			r->ok = false;
	}

	/*
	 * Version 3 ends the record with the kind fields; records of versions 1
	 * and 2 end after the columns.  A headerless run of stored records
	 * (version 0 here) may hold either.
	 */
	if (r->ok && rp_reader_left(r) == RP_REL_KIND_LEN &&
		(dec->version == 0 || dec->version >= RP_PROTO_VERSION_REL_KIND))
	{
		rel->kind = rp_get_u8(r);
		rel->partition_set = rp_get_u32(r);
		if (rel->kind != RP_REL_KIND_TABLE && rel->kind != RP_REL_KIND_PARTITION_ROOT)
			r->ok = false;
		if (rel->kind == RP_REL_KIND_TABLE && rel->partition_set != 0)
			r->ok = false;
	}
	if (!r->ok || rel->schema == NULL || rel->name == NULL ||
		rp_reader_left(r) != 0 ||
		(rel->identity != RP_IDENTITY_DEFAULT && rel->identity != RP_IDENTITY_NOTHING &&
		 rel->identity != RP_IDENTITY_FULL && rel->identity != RP_IDENTITY_INDEX))
	{
		rp_relation_free(rel);
		return rp_fail(dec, "malformed relation record at frame offset %u", rec->offset);
	}
	for (uint16_t i = 0; i < rel->natts; i++)
		if (rel->cols[i].name == NULL || rel->cols[i].type_name == NULL)
		{
			rp_relation_free(rel);
			return rp_fail(dec, "malformed relation record at frame offset %u", rec->offset);
		}
	rec->u.relation.rel = rel;
	rec->u.relation.previous = rp_relmap_put(&dec->rels, rel);
	return 1;
}

/* *bad_col: the column whose value does not decode, or stays -1. */
static bool
rp_decode_tuple(RpReader *r, const RpRelation *rel, RpTuple *tup, RpDatum *datums,
				bool old_key, int *bad_col)
{
	uint16_t	natts = rp_get_u16(r);

	if (!r->ok || natts != rel->natts)
		return r->ok = false;
	tup->natts = natts;
	tup->datums = datums;
	for (uint16_t i = 0; i < natts; i++)
	{
		RpDatum    *d = &datums[i];
		const unsigned char *start;

		d->kind = rp_get_u8(r);
		d->len = 0;
		d->data = NULL;
		if (!r->ok)
			return false;
		switch (d->kind)
		{
			case RP_DATUM_NULL:
				break;
			case RP_DATUM_UNCHANGED:
				if (old_key)
					return r->ok = false;
				break;
			case RP_DATUM_NOT_IN_KEY:
				if (!old_key)
					return r->ok = false;
				break;
			case RP_DATUM_VALUE:
				start = r->p;
				if (!rp_skip_value(r, rel->cols[i].encoding, 0))
				{
					*bad_col = i;
					return false;
				}
				d->data = start;
				d->len = (uint32_t) (r->p - start);
				break;
			default:
				return r->ok = false;
		}
	}
	return true;
}

static void
rp_reserve_datums(RpDecoder *dec, size_t n)
{
	if (n <= dec->datum_cap)
		return;
	if (dec->old_datums)
		rp_free(dec->old_datums);
	if (dec->new_datums)
		rp_free(dec->new_datums);
	dec->datum_cap = n < 64 ? 64 : n;
	dec->old_datums = rp_malloc(sizeof(RpDatum) * dec->datum_cap);
	dec->new_datums = rp_malloc(sizeof(RpDatum) * dec->datum_cap);
}

static int
rp_decode_change(RpDecoder *dec, RpReader *r, RpRecord *rec)
{
	const RpRelation *rel;
	uint8_t		flags;
	const char *kind = rp_tag_name(rec->tag);
	int			bad_col = -1;

	rec->u.change.relid = rp_get_u32(r);
	flags = rp_get_u8(r);
	rec->u.change.flags = flags;
	rec->u.change.xid = (flags & RP_CHANGE_HAS_XID) ? rp_get_u32(r) : 0;
	if (!r->ok)
		return rp_fail(dec, "malformed %s record at frame offset %u", kind, rec->offset);
	rel = rp_relmap_get(&dec->rels, rec->u.change.relid);
	if (rel == NULL)
		return rp_fail(dec, "%s record at frame offset %u for relation %u, which no relation record described",
					   kind, rec->offset, rec->u.change.relid);
	rec->u.change.rel = rel;
	rp_reserve_datums(dec, rel->natts);

	rec->u.change.has_old = (flags & (RP_CHANGE_OLD_KEY | RP_CHANGE_OLD_FULL)) != 0;
	rec->u.change.has_new = rec->tag != RP_TAG_DELETE;
	if ((flags & RP_CHANGE_OLD_KEY) && (flags & RP_CHANGE_OLD_FULL))
		r->ok = false;
	if (rec->tag == RP_TAG_INSERT && rec->u.change.has_old)
		r->ok = false;
	if (rec->u.change.has_old &&
		!rp_decode_tuple(r, rel, &rec->u.change.old_tuple, dec->old_datums,
						 (flags & RP_CHANGE_OLD_KEY) != 0, &bad_col))
		r->ok = false;
	if (r->ok && rec->u.change.has_new &&
		!rp_decode_tuple(r, rel, &rec->u.change.new_tuple, dec->new_datums, false, &bad_col))
		r->ok = false;
	/* names only: where it broke, never what the value was (G4) */
	if (bad_col >= 0)
		return rp_fail(dec, "malformed %s record at frame offset %u: relation \"%s\".\"%s\" (%u) column \"%s\" (%s): the %s value does not decode",
					   kind, rec->offset, rel->schema, rel->name, rec->u.change.relid,
					   rel->cols[bad_col].name, rel->cols[bad_col].type_name,
					   rp_encoding_name(rel->cols[bad_col].encoding));
	if (!r->ok || rp_reader_left(r) != 0)
		return rp_fail(dec, "malformed %s record at frame offset %u (relation %u)",
					   kind, rec->offset, rec->u.change.relid);
	return 1;
}

/*
 * Version 4 ends a commit with its timeline; records of versions 1 to 3 do
 * not, and stored records (version 0 here) may hold either.  A timeline of 0
 * or one in a frame of an earlier version leaves bytes over: malformed.
 */
static void
rp_decode_commit_tli(const RpDecoder *dec, RpReader *r, RpRecord *rec)
{
	if (r->ok && rp_reader_left(r) == RP_COMMIT_TLI_LEN &&
		(dec->version == 0 || dec->version >= RP_PROTO_VERSION_COMMIT_TLI))
	{
		rec->u.commit.timeline = rp_get_u32(r);
		if (rec->u.commit.timeline == 0)
			r->ok = false;
	}
}

int
rp_decoder_next(RpDecoder *dec, RpRecord *rec)
{
	RpReader   *f = &dec->frame;
	RpReader	r;
	uint8_t		tag;
	uint32_t	len;
	const unsigned char *payload;
	uint32_t	name_len;

	if (rp_reader_left(f) == 0)
		return 0;
	memset(rec, 0, sizeof(*rec));
	rec->offset = (uint32_t) (f->p - dec->frame_start);
	tag = rp_get_u8(f);
	len = rp_get_u32(f);
	payload = rp_get_bytes(f, len);
	if (payload == NULL)
		return rp_fail(dec, "truncated record (tag 0x%02x) at frame offset %u", tag, rec->offset);
	rec->tag = tag;
	rp_reader_init(&r, payload, len);

	switch (tag)
	{
		case RP_TAG_BEGIN:
			rec->u.begin.xid = rp_get_u32(&r);
			rec->u.begin.final_lsn = rp_get_u64(&r);
			rec->u.begin.commit_time = (int64_t) rp_get_u64(&r);
			break;
		case RP_TAG_COMMIT:
			rec->u.commit.flags = rp_get_u8(&r);
			rec->u.commit.commit_lsn = rp_get_u64(&r);
			rec->u.commit.end_lsn = rp_get_u64(&r);
			rec->u.commit.commit_time = (int64_t) rp_get_u64(&r);
			rp_decode_commit_tli(dec, &r, rec);
			break;
		case RP_TAG_STREAM_COMMIT:
			rec->u.commit.xid = rp_get_u32(&r);
			rec->u.commit.commit_lsn = rp_get_u64(&r);
			rec->u.commit.end_lsn = rp_get_u64(&r);
			rec->u.commit.commit_time = (int64_t) rp_get_u64(&r);
			rp_decode_commit_tli(dec, &r, rec);
			break;
		case RP_TAG_ORIGIN:
			rec->u.origin.lsn = rp_get_u64(&r);
			rec->u.origin.name = rp_get_str(&r, &name_len);
			rec->u.origin.name_len = name_len;
			break;
		case RP_TAG_RELATION:
			return rp_decode_relation(dec, &r, rec);
		case RP_TAG_INSERT:
		case RP_TAG_UPDATE:
		case RP_TAG_DELETE:
			return rp_decode_change(dec, &r, rec);
		case RP_TAG_TRUNCATE:
			rec->u.truncate.flags = rp_get_u8(&r);
			rec->u.truncate.xid = (rec->u.truncate.flags & RP_CHANGE_HAS_XID) ? rp_get_u32(&r) : 0;
			rec->u.truncate.nrels = rp_get_u32(&r);
			if (r.ok && (uint64_t) rec->u.truncate.nrels * 4 != rp_reader_left(&r))
				r.ok = false;
			rec->u.truncate.relids = rp_get_bytes(&r, (size_t) rec->u.truncate.nrels * 4);
			for (uint32_t i = 0; r.ok && i < rec->u.truncate.nrels; i++)
				if (rp_relmap_get(&dec->rels, rp_truncate_relid(rec, i)) == NULL)
					return rp_fail(dec, "truncate record at frame offset %u names relation %u, which no relation record described",
								   rec->offset, rp_truncate_relid(rec, i));
			break;
		case RP_TAG_MESSAGE:
			rec->u.message.flags = rp_get_u8(&r);
			rec->u.message.xid = (rec->u.message.flags & RP_CHANGE_HAS_XID) ? rp_get_u32(&r) : 0;
			rec->u.message.lsn = rp_get_u64(&r);
			rec->u.message.prefix = rp_get_str(&r, &rec->u.message.prefix_len);
			rec->u.message.content = (const unsigned char *)
				rp_get_str(&r, &rec->u.message.content_len);
			if (r.ok && memchr(rec->u.message.prefix, '\0', rec->u.message.prefix_len))
				r.ok = false;
			break;
		case RP_TAG_STREAM_START:
			rec->u.stream_start.xid = rp_get_u32(&r);
			rec->u.stream_start.first_segment = rp_get_u8(&r);
			break;
		case RP_TAG_STREAM_STOP:
			break;
		case RP_TAG_STREAM_ABORT:
			rec->u.stream_abort.xid = rp_get_u32(&r);
			rec->u.stream_abort.subxid = rp_get_u32(&r);
			break;
		default:
			return rp_fail(dec, "unknown record tag 0x%02x at frame offset %u", tag, rec->offset);
	}
	if (!r.ok || rp_reader_left(&r) != 0)
		return rp_fail(dec, "malformed %s record at frame offset %u", rp_tag_name(tag), rec->offset);
	return 1;
}
