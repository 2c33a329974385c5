/*
 * test_malformed.c
 *    Fail-closed decoding (G3) with value-free errors (G4).  Every damaged
 *    frame must be refused by rp_decoder_frame or make rp_decoder_next
 *    return -1 at the damaged record, with a non-empty reason that never
 *    contains the canary planted in the values.  Then the frame is cut at
 *    every byte, every record is shortened and lengthened, and bytes are
 *    flipped: the decoder must never crash, never read out of bounds (run
 *    once under -fsanitize=address,undefined) and whatever it accepts must
 *    render as valid JSON.
 */
#include "ct_kit.h"

#include <stdarg.h>

#define REL 10u

/* ---- building blocks --------------------------------------------------- */

/* Relation REL: id int4 (key), note string, then x of the given encoding. */
static void
rel_with(RpBuf *b, uint8_t enc)
{
	CtCol		cols[3] = {
		{"id", RP_ENC_INT4, 23, "int4", -1, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY},
		{"note", RP_ENC_STRING, 25, "text", -1, 0},
		{"x", enc, 9999, NULL, -1, 0},
	};

	ct_relation(b, REL, "public", "t", RP_IDENTITY_DEFAULT, 3, cols);
}

/* The start of an insert into REL carrying the canary; x follows. */
static size_t
insert_start(RpBuf *b)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_INSERT, REL, 0, 0);

	rp_enc_tuple_start(b, 3);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, 1);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_cstr(b, CT_CANARY);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	return at;
}

/* A raw record: tag, the given payload length, then whatever follows. */
static size_t
raw_record(RpBuf *b, char tag)
{
	return rp_buf_begin_record(b, tag);
}

static void
put_canary_str(RpBuf *b)
{
	rp_buf_put_cstr(b, CT_CANARY);
}

/* ---- the cases --------------------------------------------------------- */

typedef struct BadCase
{
	const char *name;
	void		(*build) (RpBuf *b);
	int			good_before;	/* records that decode before the failure; -1: frame refused */
} BadCase;

/* frame-level */
static void
b_empty(RpBuf *b)
{
	rp_buf_init(b, 0);
}

static void
b_one_byte(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_buf_put_u8(b, RP_FRAME_MAGIC);
}

static void
b_bad_magic(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_buf_put_u8(b, 'X');
	rp_buf_put_u8(b, RP_PROTO_VERSION);
	rp_enc_message(b, true, 0, 1, "p", CT_CANARY, strlen(CT_CANARY));
}

static void
b_json_text(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_buf_put_text(b, "{\"kind\":\"" CT_CANARY "\"}");
}

static void
b_version(RpBuf *b, uint8_t v)
{
	rp_buf_init(b, 0);
	rp_buf_put_u8(b, RP_FRAME_MAGIC);
	rp_buf_put_u8(b, v);
	rp_enc_message(b, true, 0, 1, "p", CT_CANARY, strlen(CT_CANARY));
}

static void
b_version0(RpBuf *b)
{
	b_version(b, 0);
}

static void
b_version2(RpBuf *b)
{
	b_version(b, RP_PROTO_VERSION_MAX + 1);
}

static void
b_version255(RpBuf *b)
{
	b_version(b, 255);
}

/* record headers */
static void
b_tag_only(RpBuf *b)
{
	ct_frame(b);
	rp_buf_put_u8(b, RP_TAG_BEGIN);
}

static void
b_short_header(RpBuf *b)
{
	ct_frame(b);
	rp_buf_put_u8(b, RP_TAG_BEGIN);
	rp_buf_put_u16(b, 0);
}

static void
b_length_past_end(RpBuf *b)
{
	ct_frame(b);
	rp_buf_put_u8(b, RP_TAG_MESSAGE);
	rp_buf_put_u32(b, 1000);
	rp_buf_put_u8(b, 0);
	rp_buf_put_u64(b, 1);
	rp_buf_put_cstr(b, "p");
	put_canary_str(b);
}

static void
b_length_huge(RpBuf *b)
{
	ct_frame(b);
	rp_enc_begin(b, 1, 2, 3);
	rp_buf_put_u8(b, RP_TAG_COMMIT);
	rp_buf_put_u32(b, 0xFFFFFFFFu);
	put_canary_str(b);
}

static void
b_unknown_tag(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, 'Z');
	put_canary_str(b);
	rp_buf_end_record(b, at);
}

static void
b_tag_zero(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	rp_enc_begin(b, 1, 2, 3);
	at = raw_record(b, 0);
	rp_buf_end_record(b, at);
}

/* changes */
static void
b_unknown_relid(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = rp_enc_change_start(b, RP_TAG_INSERT, REL + 1, 0, 0);
	rp_enc_tuple_start(b, 3);
	for (int i = 0; i < 3; i++)
	{
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		i ? put_canary_str(b) : rp_buf_put_u32(b, 1);
	}
	rp_buf_end_record(b, at);
}

static void
b_natts(RpBuf *b, uint16_t natts)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = rp_enc_change_start(b, RP_TAG_INSERT, REL, 0, 0);
	rp_enc_tuple_start(b, natts);
	for (int i = 0; i < natts; i++)
	{
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		i ? put_canary_str(b) : rp_buf_put_u32(b, 1);
	}
	rp_buf_end_record(b, at);
}

static void
b_natts_more(RpBuf *b)
{
	b_natts(b, 4);
}

static void
b_natts_fewer(RpBuf *b)
{
	b_natts(b, 2);
}

static void
b_natts_zero(RpBuf *b)
{
	b_natts(b, 0);
}

static void
b_kind(RpBuf *b, char tag, uint8_t flags, const char *old_kinds, const char *new_kinds)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = rp_enc_change_start(b, tag, REL, flags, 0);
	for (int t = 0; t < 2; t++)
	{
		const char *kinds = t ? new_kinds : old_kinds;

		if (!kinds)
			continue;
		rp_enc_tuple_start(b, 3);
		for (int i = 0; i < 3; i++)
		{
			rp_enc_datum_kind(b, kinds[i]);
			if (kinds[i] == RP_DATUM_VALUE)
				i ? put_canary_str(b) : rp_buf_put_u32(b, 1);
		}
	}
	rp_buf_end_record(b, at);
}

static void
b_kind_bad(RpBuf *b)
{
	b_kind(b, RP_TAG_INSERT, 0, NULL, "vxv");
}

/* kind byte 0 in the last column (a C string cannot hold it) */
static void
b_kind_zero(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = rp_enc_change_start(b, RP_TAG_INSERT, REL, 0, 0);
	rp_enc_tuple_start(b, 3);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, 1);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	put_canary_str(b);
	rp_buf_put_u8(b, 0);
	put_canary_str(b);
	rp_buf_end_record(b, at);
}

static void
b_unchanged_in_old_key(RpBuf *b)
{
	b_kind(b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, "vuk", "vvv");
}

static void
b_unchanged_in_delete_key(RpBuf *b)
{
	b_kind(b, RP_TAG_DELETE, RP_CHANGE_OLD_KEY, "vku", NULL);
}

static void
b_not_in_key_in_new(RpBuf *b)
{
	b_kind(b, RP_TAG_INSERT, 0, NULL, "vkv");
}

static void
b_not_in_key_in_update_new(RpBuf *b)
{
	b_kind(b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, "vkk", "vvk");
}

static void
b_not_in_key_in_old_full(RpBuf *b)
{
	b_kind(b, RP_TAG_UPDATE, RP_CHANGE_OLD_FULL, "vkv", "vvv");
}

static void
b_insert_with_old(RpBuf *b)
{
	b_kind(b, RP_TAG_INSERT, RP_CHANGE_OLD_KEY, "vkk", "vvv");
}

static void
b_both_old_flags(RpBuf *b)
{
	b_kind(b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY | RP_CHANGE_OLD_FULL, "vkk", "vvv");
}

static void
b_update_missing_new(RpBuf *b)
{
	b_kind(b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, "vkk", NULL);
}

static void
b_insert_missing_tuple(RpBuf *b)
{
	b_kind(b, RP_TAG_INSERT, 0, NULL, NULL);
}

static void
b_delete_two_tuples(RpBuf *b)
{
	b_kind(b, RP_TAG_DELETE, RP_CHANGE_OLD_FULL, "vvv", "vvv");
}

static void
b_change_trailing(RpBuf *b)
{
	size_t		at = (ct_frame(b), rel_with(b, RP_ENC_STRING), insert_start(b));

	put_canary_str(b);
	rp_buf_put_u8(b, 0);		/* one byte after the tuple */
	rp_buf_end_record(b, at);
}

static void
b_change_xid_cut(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = raw_record(b, RP_TAG_INSERT);
	rp_buf_put_u32(b, REL);
	rp_buf_put_u8(b, RP_CHANGE_HAS_XID);
	rp_buf_put_u16(b, 7);		/* half an xid */
	rp_buf_end_record(b, at);
}

static void
b_change_header_cut(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = raw_record(b, RP_TAG_DELETE);
	rp_buf_put_u16(b, 0);		/* half a relid */
	rp_buf_end_record(b, at);
}

/* values in the x column */
#define BAD_VALUE(fn, enc, ...) \
	static void fn(RpBuf *b) \
	{ \
		size_t at; \
		ct_frame(b); \
		rel_with(b, enc); \
		at = insert_start(b); \
		__VA_ARGS__; \
		rp_buf_end_record(b, at); \
	}

BAD_VALUE(b_int8_cut, RP_ENC_INT8, rp_buf_put_u32(b, 1))
BAD_VALUE(b_int4_cut, RP_ENC_INT4, rp_buf_put_u16(b, 1))
BAD_VALUE(b_int4_long, RP_ENC_INT4, rp_buf_put_u32(b, 1); rp_buf_put_u16(b, 1))
BAD_VALUE(b_float8_cut, RP_ENC_FLOAT8, rp_buf_put_u32(b, 0))
BAD_VALUE(b_bool_missing, RP_ENC_BOOL, (void) 0)
BAD_VALUE(b_uuid_cut, RP_ENC_UUID, rp_buf_put_bytes(b, "0123456789abcde", 15))
BAD_VALUE(b_timetz_cut, RP_ENC_TIMETZ, rp_buf_put_u64(b, 0))
BAD_VALUE(b_interval_cut, RP_ENC_INTERVAL, rp_buf_put_u64(b, 0); rp_buf_put_u32(b, 0))
BAD_VALUE(b_string_past_end, RP_ENC_STRING, rp_buf_put_u32(b, 100); rp_buf_put_text(b, CT_CANARY))
BAD_VALUE(b_string_len_huge, RP_ENC_STRING, rp_buf_put_u32(b, 0xFFFFFFFFu); rp_buf_put_text(b, CT_CANARY))
BAD_VALUE(b_bytea_past_end, RP_ENC_BYTEA, rp_buf_put_u32(b, 12); rp_buf_put_text(b, CT_CANARY))
BAD_VALUE(b_json_past_end, RP_ENC_JSON, rp_buf_put_u32(b, 40); rp_buf_put_text(b, "{\"" CT_CANARY "\":1}"))
BAD_VALUE(b_string_short_len, RP_ENC_STRING, rp_buf_put_u32(b, 3); rp_buf_put_text(b, CT_CANARY))
/* numeric: u32 len, ndigits, weight, sign, dscale, digits */
BAD_VALUE(b_numeric_len_mismatch, RP_ENC_NUMERIC,
		  rp_buf_put_u32(b, 10); rp_buf_put_u16(b, 2); rp_buf_put_u16(b, 0);
		  rp_buf_put_u16(b, 0); rp_buf_put_u16(b, 0); rp_buf_put_u16(b, 1))
BAD_VALUE(b_numeric_len_short, RP_ENC_NUMERIC,
		  rp_buf_put_u32(b, 6); rp_buf_put_u16(b, 0); rp_buf_put_u16(b, 0); rp_buf_put_u16(b, 0))
BAD_VALUE(b_numeric_len_zero, RP_ENC_NUMERIC, rp_buf_put_u32(b, 0))
BAD_VALUE(b_numeric_len_huge, RP_ENC_NUMERIC,
		  rp_buf_put_u32(b, 0xFFFFFFF0u); rp_buf_put_u16(b, 0); rp_buf_put_u16(b, 0);
		  rp_buf_put_u16(b, 0); rp_buf_put_u16(b, 0))
BAD_VALUE(b_numeric_digit_10000, RP_ENC_NUMERIC,
		  ct_put_numeric(b, RP_NUMERIC_POS, 0, 0, 2, (const uint16_t[]){1, 10000}))
BAD_VALUE(b_numeric_digit_ffff, RP_ENC_NUMERIC,
		  ct_put_numeric(b, RP_NUMERIC_NEG, 0, 0, 1, (const uint16_t[]){0xFFFF}))
BAD_VALUE(b_numeric_bad_sign, RP_ENC_NUMERIC,
		  ct_put_numeric(b, 0x1234, 0, 0, 1, (const uint16_t[]){1}))
BAD_VALUE(b_numeric_sign_8000, RP_ENC_NUMERIC,
		  ct_put_numeric(b, 0x8000, 0, 0, 1, (const uint16_t[]){1}))
/* arrays: elem enc u8, elem oid u32, ndim u32, (dim, lbound) * ndim, datums */
BAD_VALUE(b_array_ndim7, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_INT4, 23, 7, (int[]){1, 1, 1, 1, 1, 1, 1},
							  (int[]){1, 1, 1, 1, 1, 1, 1});
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u32(b, 1))
BAD_VALUE(b_array_ndim_huge, RP_ENC_ARRAY,
		  rp_buf_put_u8(b, RP_ENC_INT4); rp_buf_put_u32(b, 23); rp_buf_put_u32(b, 0xFFFFFFFFu);
		  put_canary_str(b))
BAD_VALUE(b_array_dims_product, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_INT4, 23, 2, (int[]){65536, 65536}, (int[]){1, 1});
		  for (int i = 0; i < 8; i++) { rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u32(b, 1); })
BAD_VALUE(b_array_dim_huge, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, (int[]){-1}, (int[]){1});
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_canary_str(b))
BAD_VALUE(b_array_dims_overflow, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_INT4, 23, 6, (int[]){-1, -1, -1, -1, -1, -1},
							  (int[]){1, 1, 1, 1, 1, 1}))
BAD_VALUE(b_array_too_few, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, (int[]){3}, (int[]){1});
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_canary_str(b);
		  rp_enc_datum_kind(b, RP_DATUM_NULL))
BAD_VALUE(b_array_too_many, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, (int[]){1}, (int[]){1});
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_canary_str(b);
		  rp_enc_datum_kind(b, RP_DATUM_NULL))
BAD_VALUE(b_array_bad_elem_enc, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC__COUNT, 23, 1, (int[]){1}, (int[]){1});
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_canary_str(b))
BAD_VALUE(b_array_elem_unchanged, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, (int[]){2}, (int[]){1});
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_canary_str(b);
		  rp_enc_datum_kind(b, RP_DATUM_UNCHANGED))
BAD_VALUE(b_array_elem_not_in_key, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, (int[]){1}, (int[]){1});
		  rp_enc_datum_kind(b, RP_DATUM_NOT_IN_KEY))
BAD_VALUE(b_array_header_cut, RP_ENC_ARRAY,
		  rp_buf_put_u8(b, RP_ENC_INT4); rp_buf_put_u32(b, 23); rp_buf_put_u32(b, 2);
		  rp_buf_put_u32(b, 1))
/* composites: natts u16, per field name str, oid u32, enc u8, datum */
BAD_VALUE(b_composite_bad_enc, RP_ENC_COMPOSITE,
		  rp_buf_put_u16(b, 1); ct_put_field(b, "f", 25, 200); rp_enc_datum_kind(b, RP_DATUM_VALUE);
		  put_canary_str(b))
BAD_VALUE(b_composite_bad_kind, RP_ENC_COMPOSITE,
		  rp_buf_put_u16(b, 1); ct_put_field(b, "f", 25, RP_ENC_STRING);
		  rp_enc_datum_kind(b, RP_DATUM_UNCHANGED))
BAD_VALUE(b_composite_too_few, RP_ENC_COMPOSITE,
		  rp_buf_put_u16(b, 3); ct_put_field(b, "f", 25, RP_ENC_STRING);
		  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_canary_str(b);
		  ct_put_field(b, "g", 25, RP_ENC_STRING); rp_enc_datum_kind(b, RP_DATUM_NULL))
BAD_VALUE(b_composite_name_past_end, RP_ENC_COMPOSITE,
		  rp_buf_put_u16(b, 1); rp_buf_put_u32(b, 1000); rp_buf_put_text(b, CT_CANARY))
/* ranges: flags u8, subtype oid u32, subtype enc u8, bounds */
BAD_VALUE(b_range_bad_flags, RP_ENC_RANGE,
		  ct_put_range(b, 0x20 | RP_RANGE_LB_INC, 25, RP_ENC_STRING); put_canary_str(b);
		  put_canary_str(b))
BAD_VALUE(b_range_bad_enc, RP_ENC_RANGE,
		  ct_put_range(b, RP_RANGE_LB_INC, 25, 99); put_canary_str(b); put_canary_str(b))
BAD_VALUE(b_range_missing_upper, RP_ENC_RANGE,
		  ct_put_range(b, RP_RANGE_LB_INC, 25, RP_ENC_STRING); put_canary_str(b))
BAD_VALUE(b_range_empty_with_bounds, RP_ENC_RANGE,
		  ct_put_range(b, RP_RANGE_EMPTY, 23, RP_ENC_INT4); rp_buf_put_u32(b, 1))
BAD_VALUE(b_range_header_cut, RP_ENC_RANGE, rp_buf_put_u8(b, 0); rp_buf_put_u16(b, 0))

/* nesting: every level one element deep, count levels of containers */
static void
put_nested(RpBuf *b, int levels, int kind)
{
	/* kind 0: arrays; 1: composites; 2: ranges of arrays of composites ... */
	for (int l = 0; l < levels; l++)
	{
		int			k = kind == 2 ? l % 3 : kind;
		uint8_t		inner = l + 1 < levels ?
			(uint8_t) (kind == 2 ? ((l + 1) % 3 == 0 ? RP_ENC_ARRAY : (l + 1) % 3 == 1 ? RP_ENC_COMPOSITE : RP_ENC_RANGE)
					   : kind == 0 ? RP_ENC_ARRAY : RP_ENC_COMPOSITE) : RP_ENC_STRING;

		if (k == 0)
		{
			rp_enc_array_header(b, inner, 0, 1, (int[]){1}, (int[]){1});
			rp_enc_datum_kind(b, RP_DATUM_VALUE);
		}
		else if (k == 1)
		{
			rp_buf_put_u16(b, 1);
			ct_put_field(b, "f", 0, inner);
			rp_enc_datum_kind(b, RP_DATUM_VALUE);
		}
		else
			ct_put_range(b, RP_RANGE_LB_INC | RP_RANGE_UB_INF, 0, inner);
	}
	put_canary_str(b);
}

BAD_VALUE(b_nested_arrays, RP_ENC_ARRAY, put_nested(b, 10, 0))
BAD_VALUE(b_nested_composites, RP_ENC_COMPOSITE, put_nested(b, 10, 1))
BAD_VALUE(b_nested_mixed, RP_ENC_ARRAY, put_nested(b, 12, 2))
BAD_VALUE(b_nested_very_deep, RP_ENC_ARRAY, put_nested(b, 5000, 0))

/* relations */
static void
b_relation_raw(RpBuf *b, char identity, uint16_t natts, uint8_t enc, const char *schema,
			   size_t schema_len, const char *colname, size_t colname_len,
			   const char *typname, size_t typname_len, int extra)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_RELATION);
	rp_buf_put_u32(b, REL);
	rp_buf_put_str(b, schema, schema_len);
	rp_buf_put_cstr(b, "t");
	rp_buf_put_u8(b, (uint8_t) identity);
	rp_buf_put_u16(b, natts);
	rp_buf_put_u16(b, 1);
	rp_buf_put_str(b, colname, colname_len);
	rp_buf_put_u32(b, 25);
	rp_buf_put_str(b, typname, typname_len);
	rp_buf_put_u32(b, (uint32_t) -1);
	rp_buf_put_u8(b, enc);
	rp_buf_put_u8(b, 0);
	for (int i = 0; i < extra; i++)
		rp_buf_put_u8(b, 0);
	rp_buf_end_record(b, at);
}

#define REL_OK(ident, natts, enc, extra) \
	b_relation_raw(b, ident, natts, enc, "s", 1, "c", 1, "text", 4, extra)

static void
b_relation_control(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, 0);	/* decodes: the shape is right */
	rp_buf_put_u8(b, 'Z');
}

static void
b_relation_identity_x(RpBuf *b)
{
	REL_OK('x', 1, RP_ENC_STRING, 0);
}

static void
b_relation_identity_0(RpBuf *b)
{
	REL_OK(0, 1, RP_ENC_STRING, 0);
}

static void
b_relation_identity_upper(RpBuf *b)
{
	REL_OK('D', 1, RP_ENC_STRING, 0);
}

static void
b_relation_enc_count(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 1, RP_ENC__COUNT, 0);
}

static void
b_relation_enc_255(RpBuf *b)
{
	REL_OK(RP_IDENTITY_FULL, 1, 255, 0);
}

static void
b_relation_trailing(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, 1);
}

static void
b_relation_trailing_many(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, 40);
}

static void
b_relation_natts_more(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 2, RP_ENC_STRING, 0);
}

static void
b_relation_natts_huge(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 65535, RP_ENC_STRING, 0);
}

static void
b_relation_natts_zero(RpBuf *b)
{
	REL_OK(RP_IDENTITY_DEFAULT, 0, RP_ENC_STRING, 0);	/* the column is trailing garbage */
}

static void
b_relation_nul_schema(RpBuf *b)
{
	b_relation_raw(b, RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, "pub\0lic", 7, "c", 1, "text", 4, 0);
}

static void
b_relation_nul_column(RpBuf *b)
{
	b_relation_raw(b, RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, "s", 1, "c\0x", 3, "text", 4, 0);
}

static void
b_relation_nul_type(RpBuf *b)
{
	b_relation_raw(b, RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, "s", 1, "c", 1, "te\0t", 4, 0);
}

static void
b_relation_nul_name(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = rp_enc_relation_start(b, REL, "s", "", RP_IDENTITY_DEFAULT, 0);
	rp_buf_end_record(b, at);
	/* patch the empty name into "\0": length 1 and a NUL byte */
	at = raw_record(b, RP_TAG_RELATION);
	rp_buf_put_u32(b, REL + 1);
	rp_buf_put_cstr(b, "s");
	rp_buf_put_str(b, "\0", 1);
	rp_buf_put_u8(b, RP_IDENTITY_DEFAULT);
	rp_buf_put_u16(b, 0);
	rp_buf_end_record(b, at);
}

static void
b_relation_schema_past_end(RpBuf *b)
{
	b_relation_raw(b, RP_IDENTITY_DEFAULT, 1, RP_ENC_STRING, "s", 1, "c", 1, "text", 4, 0);
	/* schema length: bytes 2 (frame) + 5 (header) + 4 (relid) */
	rp_buf_set_u32_at(b, 2 + 5 + 4, 5000);
}

static void
b_relation_cut(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_RELATION);
	rp_buf_put_u32(b, REL);
	rp_buf_put_cstr(b, "s");
	rp_buf_end_record(b, at);
}

/* transaction and stream records */
static void
b_begin_trailing(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_BEGIN);
	rp_buf_put_u32(b, 1);
	rp_buf_put_u64(b, 2);
	rp_buf_put_u64(b, 3);
	rp_buf_put_u8(b, 0);
	rp_buf_end_record(b, at);
}

static void
b_begin_short(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_BEGIN);
	rp_buf_put_u32(b, 1);
	rp_buf_put_u64(b, 2);
	rp_buf_end_record(b, at);
}

static void
b_commit_short(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	rp_enc_begin(b, 1, 2, 3);
	at = raw_record(b, RP_TAG_COMMIT);
	rp_buf_put_u8(b, 0);
	rp_buf_put_u64(b, 2);
	rp_buf_put_u64(b, 3);
	rp_buf_put_u32(b, 0);
	rp_buf_end_record(b, at);
}

static void
b_commit_trailing(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_COMMIT);
	rp_buf_put_u8(b, 0);
	rp_buf_put_u64(b, 2);
	rp_buf_put_u64(b, 3);
	rp_buf_put_u64(b, 4);
	put_canary_str(b);
	rp_buf_end_record(b, at);
}

static void
b_stream_stop_payload(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_STREAM_STOP);
	rp_buf_put_u8(b, 0);
	rp_buf_end_record(b, at);
}

static void
b_stream_start_trailing(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_STREAM_START);
	rp_buf_put_u32(b, 1);
	rp_buf_put_u8(b, 1);
	rp_buf_put_u8(b, 1);
	rp_buf_end_record(b, at);
}

static void
b_stream_abort_short(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_STREAM_ABORT);
	rp_buf_put_u32(b, 1);
	rp_buf_end_record(b, at);
}

static void
b_stream_commit_short(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_STREAM_COMMIT);
	rp_buf_put_u32(b, 1);
	rp_buf_put_u64(b, 2);
	rp_buf_end_record(b, at);
}

static void
b_origin_past_end(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_ORIGIN);
	rp_buf_put_u64(b, 1);
	rp_buf_put_u32(b, 50);
	rp_buf_put_text(b, CT_CANARY);
	rp_buf_end_record(b, at);
}

static void
b_origin_trailing(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_ORIGIN);
	rp_buf_put_u64(b, 1);
	rp_buf_put_cstr(b, "o");
	rp_buf_put_u8(b, 0);
	rp_buf_end_record(b, at);
}

/* truncate */
static void
b_truncate_unknown_relid(RpBuf *b)
{
	uint32_t	relids[2] = {REL, 999};

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	rp_enc_truncate(b, RP_TRUNCATE_CASCADE, 0, 2, relids);
}

static void
b_truncate_no_relations(RpBuf *b)
{
	uint32_t	relid = REL;

	ct_frame(b);
	rp_enc_truncate(b, 0, 77, 1, &relid);
}

static void
b_truncate_nrels(RpBuf *b, uint32_t nrels, int present)
{
	size_t		at;

	ct_frame(b);
	rel_with(b, RP_ENC_STRING);
	at = raw_record(b, RP_TAG_TRUNCATE);
	rp_buf_put_u8(b, 0);
	rp_buf_put_u32(b, nrels);
	for (int i = 0; i < present; i++)
		rp_buf_put_u32(b, REL);
	rp_buf_end_record(b, at);
}

static void
b_truncate_nrels_more(RpBuf *b)
{
	b_truncate_nrels(b, 3, 2);
}

static void
b_truncate_nrels_fewer(RpBuf *b)
{
	b_truncate_nrels(b, 1, 2);
}

static void
b_truncate_nrels_wrap(RpBuf *b)
{
	b_truncate_nrels(b, 0x40000001u, 1);	/* 4 * nrels wraps to 4 in 32 bits */
}

static void
b_truncate_xid_cut(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_TRUNCATE);
	rp_buf_put_u8(b, RP_CHANGE_HAS_XID);
	rp_buf_put_u16(b, 0);
	rp_buf_end_record(b, at);
}

/* messages */
static void
b_message_nul_prefix(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_MESSAGE);
	rp_buf_put_u8(b, RP_MESSAGE_TRANSACTIONAL);
	rp_buf_put_u64(b, 1);
	rp_buf_put_str(b, "pre\0fix", 7);
	put_canary_str(b);
	rp_buf_end_record(b, at);
}

static void
b_message_content_past_end(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_MESSAGE);
	rp_buf_put_u8(b, 0);
	rp_buf_put_u64(b, 1);
	rp_buf_put_cstr(b, "p");
	rp_buf_put_u32(b, 100);
	rp_buf_put_text(b, CT_CANARY);
	rp_buf_end_record(b, at);
}

static void
b_message_trailing(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_MESSAGE);
	rp_buf_put_u8(b, 0);
	rp_buf_put_u64(b, 1);
	rp_buf_put_cstr(b, "p");
	put_canary_str(b);
	rp_buf_put_u8(b, 0);
	rp_buf_end_record(b, at);
}

static void
b_message_xid_missing(RpBuf *b)
{
	size_t		at;

	ct_frame(b);
	at = raw_record(b, RP_TAG_MESSAGE);
	rp_buf_put_u8(b, RP_CHANGE_HAS_XID);
	rp_buf_put_u64(b, 1);
	rp_buf_end_record(b, at);
}

/* a good record, then garbage that is not a record at all */
static void
b_garbage_after_good(RpBuf *b)
{
	ct_frame(b);
	rp_enc_begin(b, 1, 2, 3);
	rp_enc_message(b, true, 0, 1, "p", CT_CANARY, strlen(CT_CANARY));
	rp_buf_put_text(b, CT_CANARY);
}

#define CASE(fn, good) {#fn, fn, good}
static const BadCase bad_cases[] = {
	CASE(b_empty, -1),
	CASE(b_one_byte, -1),
	CASE(b_bad_magic, -1),
	CASE(b_json_text, -1),
	CASE(b_version0, -1),
	CASE(b_version2, -1),
	CASE(b_version255, -1),
	CASE(b_tag_only, 0),
	CASE(b_short_header, 0),
	CASE(b_length_past_end, 0),
	CASE(b_length_huge, 1),
	CASE(b_unknown_tag, 0),
	CASE(b_tag_zero, 1),
	CASE(b_unknown_relid, 1),
	CASE(b_natts_more, 1),
	CASE(b_natts_fewer, 1),
	CASE(b_natts_zero, 1),
	CASE(b_kind_bad, 1),
	CASE(b_kind_zero, 1),
	CASE(b_unchanged_in_old_key, 1),
	CASE(b_unchanged_in_delete_key, 1),
	CASE(b_not_in_key_in_new, 1),
	CASE(b_not_in_key_in_update_new, 1),
	CASE(b_not_in_key_in_old_full, 1),
	CASE(b_insert_with_old, 1),
	CASE(b_both_old_flags, 1),
	CASE(b_update_missing_new, 1),
	CASE(b_insert_missing_tuple, 1),
	CASE(b_delete_two_tuples, 1),
	CASE(b_change_trailing, 1),
	CASE(b_change_xid_cut, 1),
	CASE(b_change_header_cut, 1),
	CASE(b_int8_cut, 1),
	CASE(b_int4_cut, 1),
	CASE(b_int4_long, 1),
	CASE(b_float8_cut, 1),
	CASE(b_bool_missing, 1),
	CASE(b_uuid_cut, 1),
	CASE(b_timetz_cut, 1),
	CASE(b_interval_cut, 1),
	CASE(b_string_past_end, 1),
	CASE(b_string_len_huge, 1),
	CASE(b_bytea_past_end, 1),
	CASE(b_json_past_end, 1),
	CASE(b_string_short_len, 1),
	CASE(b_numeric_len_mismatch, 1),
	CASE(b_numeric_len_short, 1),
	CASE(b_numeric_len_zero, 1),
	CASE(b_numeric_len_huge, 1),
	CASE(b_numeric_digit_10000, 1),
	CASE(b_numeric_digit_ffff, 1),
	CASE(b_numeric_bad_sign, 1),
	CASE(b_numeric_sign_8000, 1),
	CASE(b_array_ndim7, 1),
	CASE(b_array_ndim_huge, 1),
	CASE(b_array_dims_product, 1),
	CASE(b_array_dim_huge, 1),
	CASE(b_array_dims_overflow, 1),
	CASE(b_array_too_few, 1),
	CASE(b_array_too_many, 1),
	CASE(b_array_bad_elem_enc, 1),
	CASE(b_array_elem_unchanged, 1),
	CASE(b_array_elem_not_in_key, 1),
	CASE(b_array_header_cut, 1),
	CASE(b_composite_bad_enc, 1),
	CASE(b_composite_bad_kind, 1),
	CASE(b_composite_too_few, 1),
	CASE(b_composite_name_past_end, 1),
	CASE(b_range_bad_flags, 1),
	CASE(b_range_bad_enc, 1),
	CASE(b_range_missing_upper, 1),
	CASE(b_range_empty_with_bounds, 1),
	CASE(b_range_header_cut, 1),
	CASE(b_nested_arrays, 1),
	CASE(b_nested_composites, 1),
	CASE(b_nested_mixed, 1),
	CASE(b_nested_very_deep, 1),
	CASE(b_relation_control, 1),
	CASE(b_relation_identity_x, 0),
	CASE(b_relation_identity_0, 0),
	CASE(b_relation_identity_upper, 0),
	CASE(b_relation_enc_count, 0),
	CASE(b_relation_enc_255, 0),
	CASE(b_relation_trailing, 0),
	CASE(b_relation_trailing_many, 0),
	CASE(b_relation_natts_more, 0),
	CASE(b_relation_natts_huge, 0),
	CASE(b_relation_natts_zero, 0),
	CASE(b_relation_nul_schema, 0),
	CASE(b_relation_nul_column, 0),
	CASE(b_relation_nul_type, 0),
	CASE(b_relation_nul_name, 1),
	CASE(b_relation_schema_past_end, 0),
	CASE(b_relation_cut, 0),
	CASE(b_begin_trailing, 0),
	CASE(b_begin_short, 0),
	CASE(b_commit_short, 1),
	CASE(b_commit_trailing, 0),
	CASE(b_stream_stop_payload, 0),
	CASE(b_stream_start_trailing, 0),
	CASE(b_stream_abort_short, 0),
	CASE(b_stream_commit_short, 0),
	CASE(b_origin_past_end, 0),
	CASE(b_origin_trailing, 0),
	CASE(b_truncate_unknown_relid, 1),
	CASE(b_truncate_no_relations, 0),
	CASE(b_truncate_nrels_more, 1),
	CASE(b_truncate_nrels_fewer, 1),
	CASE(b_truncate_nrels_wrap, 1),
	CASE(b_truncate_xid_cut, 0),
	CASE(b_message_nul_prefix, 0),
	CASE(b_message_content_past_end, 0),
	CASE(b_message_trailing, 0),
	CASE(b_message_xid_missing, 0),
	CASE(b_garbage_after_good, 2),
};
#define NBAD ((int) (sizeof(bad_cases) / sizeof(bad_cases[0])))

/* Error text must name no value: the canary, or any long run of it. */
static void
assert_value_free(const char *error, const char *what)
{
	ck_assert_msg(error[0] != '\0', "%s: failed without a reason", what);
	ck_assert_msg(strstr(error, "CANARY") == NULL && strstr(error, "7f3a") == NULL,
				  "%s: the error carries a value: %s", what, error);
}

START_TEST(test_bad_frame)
{
	const BadCase *bc = &bad_cases[_i];
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	int			good = 0,
				rc = 0;

	bc->build(&b);
	rp_decoder_init(&dec);
	if (!rp_decoder_frame(&dec, b.data, b.len))
	{
		ck_assert_msg(bc->good_before == -1, "%s: frame refused: %s", bc->name, dec.error);
		assert_value_free(dec.error, bc->name);
		goto done;
	}
	ck_assert_msg(bc->good_before >= 0, "%s: frame accepted", bc->name);
	while ((rc = rp_decoder_next(&dec, &rec)) == 1)
	{
		/* what decodes must render */
		ct_render(&rec, &dec.rels, NULL);
		if (rec.tag == RP_TAG_RELATION)
			rp_relation_free(rec.u.relation.previous);
		good++;
	}
	ck_assert_msg(rc == -1, "%s: decoded %d records and ended cleanly", bc->name, good);
	ck_assert_msg(good == bc->good_before, "%s: failed after %d good records, want %d: %s",
				  bc->name, good, bc->good_before, dec.error);
	assert_value_free(dec.error, bc->name);
done:
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}
END_TEST

/* The boundaries that must still decode: the deepest nesting allowed, a 6-d array. */
BAD_VALUE(g_nested_arrays_8, RP_ENC_ARRAY, put_nested(b, 8, 0))
BAD_VALUE(g_nested_composites_8, RP_ENC_COMPOSITE, put_nested(b, 8, 1))
BAD_VALUE(g_array_6d, RP_ENC_ARRAY,
		  rp_enc_array_header(b, RP_ENC_INT4, 23, 6, (int[]){1, 1, 1, 1, 2, 1},
							  (int[]){1, 1, 1, 1, 1, -5});
		  for (int i = 0; i < 2; i++) { rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u32(b, (uint32_t) i); })
BAD_VALUE(g_numeric_9999, RP_ENC_NUMERIC,
		  ct_put_numeric(b, RP_NUMERIC_NEG, 2, 4, 3, (const uint16_t[]){9999, 0, 9999}))

START_TEST(test_good_boundaries)
{
	static const struct
	{
		const char *name;
		void		(*build) (RpBuf *b);
		const char *x;
	}			cases[] = {
		{"nested arrays 8", g_nested_arrays_8,
		"[[[[[[[[\"" CT_CANARY "\"]]]]]]]]"},
		{"nested composites 8", g_nested_composites_8,
		"{\"f\":{\"f\":{\"f\":{\"f\":{\"f\":{\"f\":{\"f\":{\"f\":\"" CT_CANARY "\"}}}}}}}}"},
		{"array 6d", g_array_6d,
		"{\"lower_bounds\":[1,1,1,1,1,-5],\"elements\":[[[[[[0],[1]]]]]]}"},
		{"numeric 9999", g_numeric_9999, "\"-999900009999.0000\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		RpBuf		b;
		char	   *lines,
				   *want;
		char		err[256];
		int			n;

		cases[i].build(&b);
		n = ct_decode_frame(b.data, b.len, &lines, err, sizeof(err));
		ck_assert_msg(n == 2, "%s: %s", cases[i].name, err);
		want = ct_keep(malloc(strlen(cases[i].x) + 64));
		sprintf(want, "\"x\":%s}}", cases[i].x);
		ck_assert_msg(strlen(lines) > strlen(want) &&
					  strcmp(lines + strlen(lines) - strlen(want), want) == 0,
					  "%s: %s", cases[i].name, lines);
		rp_buf_free(&b);
	}
}
END_TEST

/* ---- exhaustive damage to one rich, valid frame ------------------------ */

typedef struct Frame
{
	RpBuf		b;
	size_t		ends[64];		/* where each record ends */
	int			n;
} Frame;

static void
mark(Frame *f)
{
	f->ends[f->n++] = f->b.len;
}

/*
 * Every record kind, values of every structured kind; the canary in
 * strings, bytea, composite fields and message content.  No json column:
 * those are passed through raw, so a flipped byte could make them invalid.
 */
static void
build_rich(Frame *f, bool with_json)
{
	CtCol		cols[] = {
		{"id", RP_ENC_INT8, 20, "int8", -1, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL},
		{"s", RP_ENC_STRING, 25, "text", -1, 0},
		{"n", RP_ENC_NUMERIC, 1700, "numeric", -1, 0},
		{"a", RP_ENC_ARRAY, 1009, "text[]", -1, 0},
		{"c", RP_ENC_COMPOSITE, 16400, "public.pair", -1, 0},
		{"bin", RP_ENC_BYTEA, 17, "bytea", -1, 0},
		{"ts", RP_ENC_TIMESTAMPTZ, 1184, "timestamptz", -1, 0},
		{"tz", RP_ENC_TIMETZ, 1266, "timetz", -1, 0},
		{"u", RP_ENC_UUID, 2950, "uuid", -1, 0},
		{"iv", RP_ENC_INTERVAL, 1186, "interval", -1, 0},
		{"f", RP_ENC_FLOAT8, 701, "float8", -1, 0},
		{"d", RP_ENC_DATE, 1082, "date", -1, 0},
		{"j", with_json ? RP_ENC_JSONB : RP_ENC_ENUM, 3802, "jsonb", -1, 0},
	};
	int			ncols = (int) (sizeof(cols) / sizeof(cols[0]));
	uint32_t	relids[1] = {REL};
	size_t		at;

	memset(f, 0, sizeof(*f));
	ct_frame(&f->b);
	mark(f);
	rp_enc_begin(&f->b, 1234, 0x5000, 1000);
	mark(f);
	rp_enc_origin(&f->b, 0x10, "origin");
	mark(f);
	ct_relation(&f->b, REL, "public", "rich", RP_IDENTITY_DEFAULT, ncols, cols);
	mark(f);
	for (int rec = 0; rec < 3; rec++)
	{
		static const char tags[] = {RP_TAG_INSERT, RP_TAG_UPDATE, RP_TAG_DELETE};

		at = rp_enc_change_start(&f->b, tags[rec], REL,
								 rec == 0 ? 0 : rec == 1 ? RP_CHANGE_OLD_KEY : RP_CHANGE_OLD_FULL,
								 rec == 2 ? 555 : 0);
		for (int t = 0; t < (rec == 1 ? 2 : 1); t++)
		{
			bool		key_only = rec == 1 && t == 0;
			RpBuf	   *b = &f->b;

			rp_enc_tuple_start(b, (uint16_t) ncols);
			for (int c = 0; c < ncols; c++)
			{
				if (key_only && c > 0)
				{
					rp_enc_datum_kind(b, RP_DATUM_NOT_IN_KEY);
					continue;
				}
				if (rec == 1 && t == 1 && c == 1)
				{
					rp_enc_datum_kind(b, RP_DATUM_UNCHANGED);
					continue;
				}
				if (c == 5 && rec == 2)
				{
					rp_enc_datum_kind(b, RP_DATUM_NULL);
					continue;
				}
				rp_enc_datum_kind(b, RP_DATUM_VALUE);
				switch (c)
				{
					case 0:
						rp_buf_put_u64(b, 42);
						break;
					case 1:
						put_canary_str(b);
						break;
					case 2:
						ct_put_numeric(b, RP_NUMERIC_NEG, 1, 3, 3, (const uint16_t[]){12, 3456, 7000});
						break;
					case 3:
						rp_enc_array_header(b, RP_ENC_STRING, 25, 2, (int[]){2, 2}, (int[]){1, 0});
						rp_enc_datum_kind(b, RP_DATUM_VALUE);
						put_canary_str(b);
						rp_enc_datum_kind(b, RP_DATUM_NULL);
						rp_enc_datum_kind(b, RP_DATUM_VALUE);
						rp_buf_put_cstr(b, "x\"y");
						rp_enc_datum_kind(b, RP_DATUM_VALUE);
						rp_buf_put_cstr(b, "");
						break;
					case 4:
						rp_buf_put_u16(b, 3);
						ct_put_field(b, "k", 25, RP_ENC_STRING);
						rp_enc_datum_kind(b, RP_DATUM_VALUE);
						put_canary_str(b);
						ct_put_field(b, "r", 3904, RP_ENC_RANGE);
						rp_enc_datum_kind(b, RP_DATUM_VALUE);
						ct_put_range(b, RP_RANGE_LB_INC, 23, RP_ENC_INT4);
						rp_buf_put_u32(b, 1);
						rp_buf_put_u32(b, 9);
						ct_put_field(b, "z", 23, RP_ENC_INT4);
						rp_enc_datum_kind(b, RP_DATUM_NULL);
						break;
					case 5:
						rp_buf_put_str(b, "\0" CT_CANARY "\xff", strlen(CT_CANARY) + 2);
						break;
					case 6:
						rp_buf_put_u64(b, (uint64_t) -INT64_C(14182940000000));
						break;
					case 7:
						rp_buf_put_u64(b, UINT64_C(45296000000));
						rp_buf_put_u32(b, 0);
						break;
					case 8:
						rp_buf_put_bytes(b, "0123456789abcdef", 16);
						break;
					case 9:
						rp_buf_put_u64(b, 1);
						rp_buf_put_u32(b, 2);
						rp_buf_put_u32(b, 3);
						break;
					case 10:
						ct_put_float8(b, 0.1);
						break;
					case 11:
						rp_buf_put_u32(b, (uint32_t) -735525);
						break;
					case 12:
						rp_buf_put_cstr(b, with_json ? "{\"k\": [\"" CT_CANARY "\"]}" : CT_CANARY);
						break;
				}
			}
		}
		rp_buf_end_record(&f->b, at);
		mark(f);
	}
	rp_enc_truncate(&f->b, RP_TRUNCATE_CASCADE, 0, 1, relids);
	mark(f);
	rp_enc_message(&f->b, true, 0, 0x4000, "app", CT_CANARY, strlen(CT_CANARY));
	mark(f);
	rp_enc_message(&f->b, false, 0, 0x4001, "bin", "\0" CT_CANARY, strlen(CT_CANARY) + 1);
	mark(f);
	rp_enc_stream_start(&f->b, 555, true);
	mark(f);
	rp_enc_stream_stop(&f->b);
	mark(f);
	rp_enc_stream_abort(&f->b, 555, 556);
	mark(f);
	rp_enc_stream_commit(&f->b, 555, 0x6000, 0x6010, 2000);
	mark(f);
	rp_enc_commit(&f->b, 0x5000, 0x5010, 1000);
	mark(f);
}

/* Decode all of data; returns records decoded, sets *rc to the final code. */
static int
decode_count(const void *data, size_t len, int *rc, char *err, size_t errlen, bool check_json)
{
	RpDecoder	dec;
	RpRecord	rec;
	int			n = 0;

	rp_decoder_init(&dec);
	err[0] = '\0';
	if (!rp_decoder_frame(&dec, data, len))
	{
		snprintf(err, errlen, "%s", dec.error);
		*rc = -2;
		rp_decoder_free(&dec);
		return 0;
	}
	while ((*rc = rp_decoder_next(&dec, &rec)) == 1)
	{
		RpBuf		out;

		rp_buf_init(&out, 0);
		rp_render_record(&out, &rec, &dec.rels, NULL);
		if (check_json && !ct_json_valid(out.data, out.len))
			ck_abort_msg("record %d rendered as invalid JSON: %.*s", n, (int) out.len, out.data);
		rp_buf_free(&out);
		if (rec.tag == RP_TAG_RELATION)
			rp_relation_free(rec.u.relation.previous);
		n++;
	}
	snprintf(err, errlen, "%s", dec.error);
	rp_decoder_free(&dec);
	return n;
}

START_TEST(test_rich_frame_decodes)
{
	Frame		f;
	char	   *lines;
	int			n;

	for (int json = 0; json < 2; json++)
	{
		build_rich(&f, json);
		n = ct_decode_frame(f.b.data, f.b.len, &lines, NULL, 0);
		ck_assert_int_eq(n, f.n - 1);
		ck_assert_ptr_nonnull(strstr(lines, "\"bin\":\"AENBTkFSWS03ZjNh/w==\""));
		ck_assert_ptr_nonnull(strstr(lines, "\"content_base64\":\"AENBTkFSWS03ZjNh\""));
		ck_assert_ptr_nonnull(strstr(lines, "\"n\":\"-123456.700\""));
		ck_assert_ptr_nonnull(strstr(lines, "\"a\":{\"lower_bounds\":[1,0],\"elements\":[[\"" CT_CANARY
									 "\",null],[\"x\\\"y\",\"\"]]}"));
		ck_assert_ptr_nonnull(strstr(lines, "\"tz\":\"12:34:56+00:00\""));
		ck_assert_ptr_nonnull(strstr(lines, "\"d\":\"-0044-03-15\""));
		ck_assert_ptr_nonnull(strstr(lines, "\"key\":{\"id\":42}"));
		rp_buf_free(&f.b);
	}
}
END_TEST

/* Cut the frame at every byte: fewer records cleanly at a boundary, else -1. */
START_TEST(test_every_prefix)
{
	Frame		f;
	char		err[256];
	int			rc,
				n;

	build_rich(&f, true);
	for (size_t len = 0; len <= f.b.len; len++)
	{
		/* copy to an exact-size allocation so ASan sees any overread */
		unsigned char *copy = malloc(len ? len : 1);
		int			complete = 0;
		bool		boundary = false;

		memcpy(copy, f.b.data, len);
		for (int i = 1; i < f.n; i++)
			if (f.ends[i] <= len)
				complete = i;
		for (int i = 0; i < f.n; i++)
			if (f.ends[i] == len)
				boundary = true;
		n = decode_count(copy, len, &rc, err, sizeof(err), true);
		if (len < RP_FRAME_HEADER_LEN)
			ck_assert_msg(rc == -2, "prefix %zu: frame accepted", len);
		else if (boundary)
			ck_assert_msg(rc == 0 && n == complete, "prefix %zu: rc %d after %d records (%s), want %d",
						  len, rc, n, err, complete);
		else
		{
			ck_assert_msg(rc == -1 && n == complete, "prefix %zu: rc %d after %d records, want -1 after %d",
						  len, rc, n, complete);
			assert_value_free(err, "prefix");
		}
		free(copy);
	}
	rp_buf_free(&f.b);
}
END_TEST

/*
 * Each record, shortened by any number of bytes or lengthened by garbage,
 * with its length field kept consistent: exactly that record fails.
 */
START_TEST(test_every_record_resized)
{
	Frame		f;
	char		err[256];
	RpBuf		b;
	int			rc,
				n;

	build_rich(&f, true);
	rp_buf_init(&b, f.b.len + 16);
	for (int r = 1; r < f.n; r++)
	{
		size_t		start = f.ends[r - 1];
		size_t		payload = f.ends[r] - start - RP_RECORD_HEADER_LEN;

		for (size_t cut = 0; cut <= payload + 3; cut++)
		{
			size_t		keep = cut <= payload ? payload - cut : 0;
			size_t		extra = cut > payload ? cut - payload : 0;
			unsigned char *copy;

			if (cut == 0)
				continue;		/* unchanged */
			if (cut > payload)
				keep = payload;
			rp_buf_reset(&b);
			rp_buf_put_bytes(&b, f.b.data, start + 1);	/* up to and with the tag */
			rp_buf_put_u32(&b, (uint32_t) (keep + extra));
			rp_buf_put_bytes(&b, f.b.data + start + RP_RECORD_HEADER_LEN, keep);
			for (size_t e = 0; e < extra; e++)
				rp_buf_put_u8(&b, (uint8_t) (0xA5 + e));
			rp_buf_put_bytes(&b, f.b.data + f.ends[r], f.b.len - f.ends[r]);

			copy = malloc(b.len);
			memcpy(copy, b.data, b.len);
			n = decode_count(copy, b.len, &rc, err, sizeof(err), true);
			free(copy);
			ck_assert_msg(rc == -1 && n == r - 1,
						  "record %d (%s) with payload %zu+%zu of %zu: rc %d after %d records",
						  r, rp_tag_name((uint8_t) f.b.data[start]), keep, extra, payload, rc, n);
			assert_value_free(err, "resized record");
		}
	}
	rp_buf_free(&b);
	rp_buf_free(&f.b);
}
END_TEST

static uint64_t rng_state = UINT64_C(0xD1B54A32D192ED03);

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

/* Flip bits at every byte: decode or fail cleanly, never crash; output is JSON. */
START_TEST(test_every_byte_flipped)
{
	static const uint8_t masks[] = {0x01, 0x80, 0xFF, 0x10};
	Frame		f;
	char		err[256];
	int			rc;

	build_rich(&f, false);
	for (size_t pos = 0; pos < f.b.len; pos++)
		for (size_t m = 0; m < sizeof(masks); m++)
		{
			unsigned char *copy = malloc(f.b.len);

			memcpy(copy, f.b.data, f.b.len);
			copy[pos] ^= masks[m];
			(void) decode_count(copy, f.b.len, &rc, err, sizeof(err), true);
			if (rc == -1 || rc == -2)
				assert_value_free(err, "flipped byte");
			free(copy);
		}
	rp_buf_free(&f.b);
}
END_TEST

/* Random multi-byte damage, including lengths set to small and huge values. */
START_TEST(test_random_damage)
{
	Frame		f;
	char		err[256];
	int			rc;

	build_rich(&f, false);
	for (int iter = 0; iter < 30000; iter++)
	{
		unsigned char *copy = malloc(f.b.len);
		int			nmut = 1 + (int) (rng() % 4);

		memcpy(copy, f.b.data, f.b.len);
		for (int k = 0; k < nmut; k++)
		{
			size_t		pos = rng() % f.b.len;

			switch (rng() % 4)
			{
				case 0:
					copy[pos] = (unsigned char) rng();
					break;
				case 1:			/* a big-endian u32 set to a boundary value */
					if (pos + 4 <= f.b.len)
					{
						static const uint32_t vals[] = {0, 1, 7, 8, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFFu, 65536};
						uint32_t	v = vals[rng() % 8];

						copy[pos] = (unsigned char) (v >> 24);
						copy[pos + 1] = (unsigned char) (v >> 16);
						copy[pos + 2] = (unsigned char) (v >> 8);
						copy[pos + 3] = (unsigned char) v;
					}
					break;
				case 2:
					copy[pos] = "nvukRBCIUDTMSEcAO"[rng() % 17];
					break;
				default:
					copy[pos] ^= (unsigned char) (1u << (rng() % 8));
					break;
			}
		}
		/*
		 * No JSON check here: damage can turn a string column's encoding
		 * into json, whose text the renderer passes through unchecked.
		 */
		(void) decode_count(copy, f.b.len - (iter % 7 == 0 ? rng() % f.b.len : 0), &rc, err,
							sizeof(err), false);
		if (rc == -1 || rc == -2)
			assert_value_free(err, "random damage");
		free(copy);
	}
	rp_buf_free(&f.b);
}
END_TEST

/* A relation that fails to decode leaves no trace in the map. */
START_TEST(test_failed_relation_not_stored)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	b_relation_identity_x(&b);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
	ck_assert_ptr_null(rp_relmap_get(&dec.rels, REL));
	ck_assert_uint_eq(dec.rels.count, 0);
	ck_assert_ptr_nonnull(strstr(dec.error, "relation"));
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}
END_TEST

/* Errors name the record kind and its frame offset. */
START_TEST(test_error_names_place)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	b_unknown_relid(&b);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
	ck_assert_ptr_nonnull(strstr(dec.error, "insert"));
	ck_assert_ptr_nonnull(strstr(dec.error, "11"));	/* the relid it did not know */
	assert_value_free(dec.error, "unknown relid");
	rp_decoder_free(&dec);
	rp_buf_free(&b);

	b_version2(&b);
	rp_decoder_init(&dec);
	ck_assert(!rp_decoder_frame(&dec, b.data, b.len));
	{
		char		v[32];

		snprintf(v, sizeof(v), "version %d", RP_PROTO_VERSION_MAX + 1);
		ck_assert_ptr_nonnull(strstr(dec.error, v));
	}
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}
END_TEST

Suite *
ct_suite_malformed(void)
{
	Suite	   *s = suite_create("malformed");
	TCase	   *tc;

	tc = ct_tcase("cases");
	tcase_add_loop_test(tc, test_bad_frame, 0, NBAD);
	tcase_add_test(tc, test_good_boundaries);
	tcase_add_test(tc, test_failed_relation_not_stored);
	tcase_add_test(tc, test_error_names_place);
	suite_add_tcase(s, tc);

	tc = ct_tcase("damage");
	tcase_add_test(tc, test_rich_frame_decodes);
	tcase_add_test(tc, test_every_prefix);
	tcase_add_test(tc, test_every_record_resized);
	tcase_add_test(tc, test_every_byte_flipped);
	tcase_add_test(tc, test_random_damage);
	suite_add_tcase(s, tc);
	return s;
}
