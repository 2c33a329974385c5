/*
 * test_codec.c
 *    Encode/decode round trips of every record kind (rp_encode -> frame ->
 *    rp_decode), with every decoded field checked and the rendered JSON
 *    compared byte for byte; the relation map; the name tables.
 *    Guarantees: G3 (the decoder accepts exactly what the plugin writes),
 *    G6 (one record, one JSON text).
 */
#include "ct_kit.h"
#include "rp_time.h"

#define REL_ACCOUNTS 16384u
#define T_2024 INT64_C(1709296496789012)	/* 2024-03-01T12:34:56.789012Z */
#define T_2024_TEXT "2024-03-01T12:34:56.789012Z"

/* public.accounts: the relation most change tests use. */
static const CtCol accounts_cols[] = {
	{"id", RP_ENC_INT8, 20, "int8", -1, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL},
	{"name", RP_ENC_STRING, 25, "text", -1, 0},
	{"balance", RP_ENC_NUMERIC, 1700, "numeric", (12 << 16 | 2) + 4, RP_COL_NOT_NULL},
	{"note", RP_ENC_STRING, 25, "text", -1, 0},
	{"total", RP_ENC_INT4, 23, "int4", -1, RP_COL_GENERATED},
};
#define ACCOUNTS_NATTS 5

static void
put_accounts(RpBuf *b)
{
	ct_relation(b, REL_ACCOUNTS, "public", "accounts", RP_IDENTITY_DEFAULT,
				ACCOUNTS_NATTS, accounts_cols);
}

typedef struct Row
{
	int64_t		id;
	const char *name;
	uint16_t	units;			/* balance = units.cents, dscale 2 */
	uint16_t	cents;
	const char *note;
	int32_t		total;
} Row;

/* One accounts tuple; kinds[i] is the datum kind of column i ('v','n','u','k'). */
static void
put_row(RpBuf *b, const char *kinds, const Row *row)
{
	rp_enc_tuple_start(b, ACCOUNTS_NATTS);
	for (int i = 0; i < ACCOUNTS_NATTS; i++)
	{
		rp_enc_datum_kind(b, kinds[i]);
		if (kinds[i] != RP_DATUM_VALUE)
			continue;
		switch (i)
		{
			case 0:
				rp_buf_put_u64(b, (uint64_t) row->id);
				break;
			case 1:
				rp_buf_put_cstr(b, row->name);
				break;
			case 2:
				{
					uint16_t	digits[2] = {row->units, (uint16_t) (row->cents * 100)};

					ct_put_numeric(b, RP_NUMERIC_POS, 0, 2, row->cents ? 2 : 1, digits);
					break;
				}
			case 3:
				rp_buf_put_cstr(b, row->note);
				break;
			case 4:
				rp_buf_put_u32(b, (uint32_t) row->total);
				break;
		}
	}
}

static void
put_change(RpBuf *b, char tag, uint8_t flags, uint32_t xid,
		   const char *old_kinds, const Row *old_row,
		   const char *new_kinds, const Row *new_row)
{
	size_t		at = rp_enc_change_start(b, tag, REL_ACCOUNTS, flags, xid);

	if (old_kinds)
		put_row(b, old_kinds, old_row);
	if (new_kinds)
		put_row(b, new_kinds, new_row);
	rp_buf_end_record(b, at);
}

static const Row alice = {1, "Alice", 12, 50, "first", 7};
static const Row alice2 = {1, "Alice B.", 13, 0, "ignored", -7};

/* Datum checks against the Row the tuple was built from. */
static void
check_datums(const RpTuple *t, const char *kinds, const Row *row)
{
	ck_assert_uint_eq(t->natts, ACCOUNTS_NATTS);
	for (int i = 0; i < ACCOUNTS_NATTS; i++)
	{
		const RpDatum *d = &t->datums[i];

		ck_assert_int_eq(d->kind, kinds[i]);
		if (kinds[i] != RP_DATUM_VALUE)
		{
			ck_assert_uint_eq(d->len, 0);
			ck_assert_ptr_null(d->data);
			continue;
		}
		ck_assert_ptr_nonnull(d->data);
		switch (i)
		{
			case 0:
				ck_assert_uint_eq(d->len, 8);
				ck_assert_int_eq((int64_t) rp_load_u64(d->data), row->id);
				break;
			case 1:
			case 3:
				{
					const char *s = i == 1 ? row->name : row->note;

					ck_assert_uint_eq(d->len, 4 + strlen(s));
					ck_assert_uint_eq(rp_load_u32(d->data), strlen(s));
					ck_assert_mem_eq(d->data + 4, s, strlen(s));
					break;
				}
			case 2:
				ck_assert_uint_eq(d->len, 4 + 8 + 2 * (row->cents ? 2 : 1));
				ck_assert_uint_eq(rp_load_u16(d->data + 4), row->cents ? 2 : 1);	/* ndigits */
				ck_assert_uint_eq(rp_load_u16(d->data + 12), row->units);
				break;
			case 4:
				ck_assert_uint_eq(d->len, 4);
				ck_assert_int_eq((int32_t) rp_load_u32(d->data), row->total);
				break;
		}
	}
}

/*
 * Decoder over a frame that starts with the accounts relation; leaves the
 * decoder positioned after it.
 */
static void
start_decoder(RpDecoder *dec, const RpBuf *b)
{
	RpRecord	rec;

	rp_decoder_init(dec);
	ck_assert_msg(rp_decoder_frame(dec, b->data, b->len), "%s", dec->error);
	ck_assert_int_eq(rp_decoder_next(dec, &rec), 1);
	ck_assert_int_eq(rec.tag, RP_TAG_RELATION);
	ck_assert_ptr_null(rec.u.relation.previous);
}

static void
next_ok(RpDecoder *dec, RpRecord *rec, uint8_t tag)
{
	int			rc = rp_decoder_next(dec, rec);

	ck_assert_msg(rc == 1, "rp_decoder_next = %d: %s", rc, dec->error);
	ck_assert_int_eq(rec->tag, tag);
}

static void
expect_end(RpDecoder *dec)
{
	RpRecord	rec;

	ck_assert_int_eq(rp_decoder_next(dec, &rec), 0);
	ck_assert_int_eq(rp_decoder_next(dec, &rec), 0);	/* stays at the end */
}

/* ---- transaction records ----------------------------------------------- */

START_TEST(test_begin_commit)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	rp_enc_begin(&b, 4294967295u, UINT64_C(0x16B374D848), T_2024);
	rp_enc_commit(&b, UINT64_C(0x16B374D848), UINT64_C(0x16B374D880), T_2024);
	rp_enc_begin(&b, 0, 0, 0);
	rp_enc_commit(&b, 0, UINT64_MAX, -1);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_uint_eq(dec.version, RP_PROTO_VERSION);

	next_ok(&dec, &rec, RP_TAG_BEGIN);
	ck_assert_uint_eq(rec.offset, RP_FRAME_HEADER_LEN);
	ck_assert_uint_eq(rec.u.begin.xid, 4294967295u);
	ck_assert_uint_eq(rec.u.begin.final_lsn, UINT64_C(0x16B374D848));
	ck_assert_int_eq(rec.u.begin.commit_time, T_2024);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"begin\",\"xid\":4294967295,\"final_lsn\":\"16/B374D848\","
					 "\"commit_time\":\"" T_2024_TEXT "\"}");

	next_ok(&dec, &rec, RP_TAG_COMMIT);
	ck_assert_uint_eq(rec.offset, RP_FRAME_HEADER_LEN + RP_RECORD_HEADER_LEN + 20);
	ck_assert_uint_eq(rec.u.commit.flags, 0);
	ck_assert_uint_eq(rec.u.commit.xid, 0);
	ck_assert_uint_eq(rec.u.commit.commit_lsn, UINT64_C(0x16B374D848));
	ck_assert_uint_eq(rec.u.commit.end_lsn, UINT64_C(0x16B374D880));
	ck_assert_int_eq(rec.u.commit.commit_time, T_2024);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"commit\",\"commit_lsn\":\"16/B374D848\",\"end_lsn\":\"16/B374D880\","
					 "\"commit_time\":\"" T_2024_TEXT "\"}");
	/* the consumer's extra members go right after "kind" */
	ck_assert_str_eq(ct_render(&rec, &dec.rels, "\"seq\":3"),
					 "{\"kind\":\"commit\",\"seq\":3,\"commit_lsn\":\"16/B374D848\",\"end_lsn\":\"16/B374D880\","
					 "\"commit_time\":\"" T_2024_TEXT "\"}");
	ck_assert_str_eq(ct_render(&rec, &dec.rels, ""),
					 "{\"kind\":\"commit\",\"commit_lsn\":\"16/B374D848\",\"end_lsn\":\"16/B374D880\","
					 "\"commit_time\":\"" T_2024_TEXT "\"}");

	next_ok(&dec, &rec, RP_TAG_BEGIN);
	ck_assert_uint_eq(rec.u.begin.xid, 0);
	ck_assert_uint_eq(rec.u.begin.final_lsn, 0);
	ck_assert_int_eq(rec.u.begin.commit_time, 0);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"begin\",\"xid\":0,\"final_lsn\":\"0/0\",\"commit_time\":\"1970-01-01T00:00:00Z\"}");

	next_ok(&dec, &rec, RP_TAG_COMMIT);
	ck_assert_uint_eq(rec.u.commit.end_lsn, UINT64_MAX);
	ck_assert_int_eq(rec.u.commit.commit_time, -1);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"commit\",\"commit_lsn\":\"0/0\",\"end_lsn\":\"FFFFFFFF/FFFFFFFF\","
					 "\"commit_time\":\"1969-12-31T23:59:59.999999Z\"}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* Version 4: a commit ends with its timeline; earlier versions refuse it. */
START_TEST(test_commit_timeline)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	rp_enc_commit_tli(&b, UINT64_C(0x16B374D848), UINT64_C(0x16B374D880), T_2024, 7);
	rp_enc_stream_commit_tli(&b, 9, 0x100, 0x180, T_2024, 4294967295u);
	rp_enc_commit_tli(&b, 0x200, 0x280, T_2024, 0);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	next_ok(&dec, &rec, RP_TAG_COMMIT);
	ck_assert_uint_eq(rec.u.commit.timeline, 7);
	ck_assert_uint_eq(rec.u.commit.end_lsn, UINT64_C(0x16B374D880));
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"commit\",\"commit_lsn\":\"16/B374D848\",\"end_lsn\":\"16/B374D880\","
					 "\"commit_time\":\"" T_2024_TEXT "\",\"timeline\":7}");
	next_ok(&dec, &rec, RP_TAG_STREAM_COMMIT);
	ck_assert_uint_eq(rec.u.commit.xid, 9);
	ck_assert_uint_eq(rec.u.commit.timeline, 4294967295u);
	/* without one (0 to the encoder): the record of versions 1 to 3 */
	next_ok(&dec, &rec, RP_TAG_COMMIT);
	ck_assert_uint_eq(rec.u.commit.timeline, 0);
	ck_assert_ptr_null(strstr(ct_render(&rec, &dec.rels, NULL), "timeline"));
	expect_end(&dec);
	rp_decoder_free(&dec);

	/* a frame of version 3 carries no timeline: 4 bytes over are malformed */
	b.data[1] = 3;
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
	ck_assert_ptr_nonnull(strstr(dec.error, "malformed commit record"));
	rp_decoder_free(&dec);
	rp_buf_free(&b);

	/* timeline 0 is no timeline: malformed */
	ct_frame(&b);
	rp_enc_commit(&b, 0x200, 0x280, T_2024);
	rp_buf_put_u32(&b, 0);
	b.data[RP_FRAME_HEADER_LEN + 4] += 4;	/* the payload length's low byte */
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_origin)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	rp_enc_origin(&b, UINT64_C(0xABCDEF), "node_a \"east\"");
	rp_enc_origin(&b, 0, "");
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));

	next_ok(&dec, &rec, RP_TAG_ORIGIN);
	ck_assert_uint_eq(rec.u.origin.lsn, UINT64_C(0xABCDEF));
	ck_assert_uint_eq(rec.u.origin.name_len, strlen("node_a \"east\""));
	ck_assert_mem_eq(rec.u.origin.name, "node_a \"east\"", rec.u.origin.name_len);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"origin\",\"origin\":\"node_a \\\"east\\\"\",\"origin_lsn\":\"0/ABCDEF\"}");

	next_ok(&dec, &rec, RP_TAG_ORIGIN);
	ck_assert_uint_eq(rec.u.origin.name_len, 0);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"origin\",\"origin\":\"\",\"origin_lsn\":\"0/0\"}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_stream_records)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	rp_enc_stream_start(&b, 900, true);
	rp_enc_stream_stop(&b);
	rp_enc_stream_start(&b, 900, false);
	rp_enc_stream_abort(&b, 900, 901);
	rp_enc_stream_abort(&b, 900, 900);
	rp_enc_stream_commit(&b, 900, UINT64_C(0x1000000020), UINT64_C(0x1000000058), T_2024);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));

	next_ok(&dec, &rec, RP_TAG_STREAM_START);
	ck_assert_uint_eq(rec.u.stream_start.xid, 900);
	ck_assert_uint_eq(rec.u.stream_start.first_segment, 1);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"stream_start\",\"xid\":900,\"first_segment\":true}");

	next_ok(&dec, &rec, RP_TAG_STREAM_STOP);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL), "{\"kind\":\"stream_stop\"}");

	next_ok(&dec, &rec, RP_TAG_STREAM_START);
	ck_assert_uint_eq(rec.u.stream_start.first_segment, 0);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"stream_start\",\"xid\":900,\"first_segment\":false}");

	next_ok(&dec, &rec, RP_TAG_STREAM_ABORT);
	ck_assert_uint_eq(rec.u.stream_abort.xid, 900);
	ck_assert_uint_eq(rec.u.stream_abort.subxid, 901);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"stream_abort\",\"xid\":900,\"subxid\":901}");

	next_ok(&dec, &rec, RP_TAG_STREAM_ABORT);
	ck_assert_uint_eq(rec.u.stream_abort.subxid, 900);	/* the whole transaction */

	next_ok(&dec, &rec, RP_TAG_STREAM_COMMIT);
	ck_assert_uint_eq(rec.u.commit.xid, 900);
	ck_assert_uint_eq(rec.u.commit.flags, 0);
	ck_assert_uint_eq(rec.u.commit.commit_lsn, UINT64_C(0x1000000020));
	ck_assert_uint_eq(rec.u.commit.end_lsn, UINT64_C(0x1000000058));
	ck_assert_int_eq(rec.u.commit.commit_time, T_2024);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"stream_commit\",\"xid\":900,\"commit_lsn\":\"10/20\",\"end_lsn\":\"10/58\","
					 "\"commit_time\":\"" T_2024_TEXT "\"}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* ---- relations --------------------------------------------------------- */

static const char identities[] = {RP_IDENTITY_DEFAULT, RP_IDENTITY_NOTHING,
RP_IDENTITY_FULL, RP_IDENTITY_INDEX};
static const char *const identity_names[] = {"default", "nothing", "full", "index"};

/* Every identity kind; 16 columns carrying every combination of the flags. */
START_TEST(test_relation_roundtrip)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	const RpRelation *rel;
	size_t		at;
	char		name[32],
				tname[32],
				expect[512];
	char	   *json;

	ct_frame(&b);
	at = rp_enc_relation_start(&b, 70000 + (uint32_t) _i, "sch\xC3\xA9ma", "t\"1",
							   identities[_i], 16);
	for (int c = 0; c < 16; c++)
	{
		snprintf(name, sizeof(name), "col_%d", c);
		snprintf(tname, sizeof(tname), c % 2 ? "myschema.type%d" : "type%d", c);
		/* attnums with a gap, as after a dropped column */
		rp_enc_relation_column(&b, (int16_t) (c < 3 ? c + 1 : c + 2), name, 1000u + (uint32_t) c,
							   tname, c == 5 ? INT32_MIN : c - 1, (uint8_t) (c % RP_ENC__COUNT),
							   (uint8_t) c);
	}
	rp_buf_end_record(&b, at);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	next_ok(&dec, &rec, RP_TAG_RELATION);
	rel = rec.u.relation.rel;
	ck_assert_ptr_null(rec.u.relation.previous);
	ck_assert_ptr_eq(rp_relmap_get(&dec.rels, 70000 + (uint32_t) _i), rel);
	ck_assert_uint_eq(rel->relid, 70000 + (uint32_t) _i);
	ck_assert_str_eq(rel->schema, "sch\xC3\xA9ma");
	ck_assert_str_eq(rel->name, "t\"1");
	ck_assert_int_eq(rel->identity, identities[_i]);
	ck_assert_uint_eq(rel->natts, 16);
	for (int c = 0; c < 16; c++)
	{
		const RpColumn *col = &rel->cols[c];

		snprintf(name, sizeof(name), "col_%d", c);
		snprintf(tname, sizeof(tname), c % 2 ? "myschema.type%d" : "type%d", c);
		ck_assert_int_eq(col->attnum, c < 3 ? c + 1 : c + 2);
		ck_assert_str_eq(col->name, name);
		ck_assert_uint_eq(col->type_oid, 1000u + (uint32_t) c);
		ck_assert_str_eq(col->type_name, tname);
		ck_assert_int_eq(col->typmod, c == 5 ? INT32_MIN : c - 1);
		ck_assert_uint_eq(col->encoding, c % RP_ENC__COUNT);
		ck_assert_uint_eq(col->flags, c);
		ck_assert_int_eq(rp_relation_column(rel, name), c);
	}
	ck_assert_int_eq(rp_relation_column(rel, "nope"), -1);

	json = ct_render(&rec, &dec.rels, NULL);
	snprintf(expect, sizeof(expect),
			 "{\"kind\":\"relation\",\"relid\":%u,\"schema\":\"sch\xC3\xA9ma\",\"table\":\"t\\\"1\","
			 "\"replica_identity\":\"%s\",\"columns\":[{\"name\":\"col_0\",\"attnum\":1,\"type\":\"type0\","
			 "\"type_oid\":1000,\"typmod\":-1,\"encoding\":\"text\",\"primary_key\":false,"
			 "\"identity\":false,\"not_null\":false,\"generated\":false},",
			 70000 + _i, identity_names[_i]);
	ck_assert_msg(strncmp(json, expect, strlen(expect)) == 0, "%s", json);
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"col_15\",\"attnum\":17,\"type\":\"myschema.type15\","
								 "\"type_oid\":1015,\"typmod\":14,\"encoding\":\"timestamp\",\"primary_key\":true,"
								 "\"identity\":true,\"not_null\":true,\"generated\":true}]}"));
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"col_5\",\"attnum\":7,\"type\":\"myschema.type5\","
								 "\"type_oid\":1005,\"typmod\":-2147483648,\"encoding\":\"oid\","
								 "\"primary_key\":true,\"identity\":false,\"not_null\":true,\"generated\":false}"));
	ck_assert_ptr_nonnull(strstr(json, "\"name\":\"col_10\",\"attnum\":12,\"type\":\"type10\",\"type_oid\":1010,"
								 "\"typmod\":9,\"encoding\":\"bytea\",\"primary_key\":false,\"identity\":true,"
								 "\"not_null\":false,\"generated\":true}"));
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_relation_render_exact)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	static const CtCol cols[] = {
		{"id", RP_ENC_INT4, 23, "int4", -1, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL},
		{"Odd \"col\"\n", RP_ENC_TEXT, 600, "point", -1, 0},
	};

	ct_frame(&b);
	ct_relation(&b, 1, "s", "t", RP_IDENTITY_INDEX, 2, cols);
	ct_relation(&b, 2, "", "", RP_IDENTITY_NOTHING, 0, NULL);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\","
					 "\"replica_identity\":\"index\",\"columns\":["
					 "{\"name\":\"id\",\"attnum\":1,\"type\":\"int4\",\"type_oid\":23,\"typmod\":-1,"
					 "\"encoding\":\"int4\",\"primary_key\":true,\"identity\":true,\"not_null\":true,\"generated\":false},"
					 "{\"name\":\"Odd \\\"col\\\"\\n\",\"attnum\":2,\"type\":\"point\",\"type_oid\":600,\"typmod\":-1,"
					 "\"encoding\":\"text\",\"primary_key\":false,\"identity\":false,\"not_null\":false,\"generated\":false}]}");
	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_uint_eq(rec.u.relation.rel->natts, 0);
	ck_assert_str_eq(rec.u.relation.rel->schema, "");
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"relation\",\"relid\":2,\"schema\":\"\",\"table\":\"\","
					 "\"replica_identity\":\"nothing\",\"columns\":[]}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* One relation record of two columns, with the kind fields unless kind is NONE. */
static void
put_kind_relation(RpBuf *b, uint32_t relid, uint8_t kind, uint32_t partition_set)
{
	size_t		at = rp_enc_relation_start(b, relid, "public", "m", RP_IDENTITY_DEFAULT, 2);

	rp_enc_relation_column(b, 1, "id", 23, "integer", -1, RP_ENC_INT4,
						   RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL);
	rp_enc_relation_column(b, 3, "note", 25, "text", -1, RP_ENC_STRING, 0);
	if (kind != RP_REL_KIND_NONE)
		rp_enc_relation_kind(b, kind, partition_set);
	rp_buf_end_record(b, at);
}

/* Does a frame of this version holding one relation record decode? (-1 or 1) */
static int
kind_frame_decodes(uint8_t version, uint8_t kind, uint32_t partition_set, int extra_bytes)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	size_t		at;
	int			rc;

	rp_buf_init(&b, 0);
	rp_enc_frame_header_version(&b, version);
	at = rp_enc_relation_start(&b, 5, "public", "m", RP_IDENTITY_DEFAULT, 0);
	if (kind != RP_REL_KIND_NONE)
		rp_enc_relation_kind(&b, kind, partition_set);
	for (int i = 0; i < extra_bytes; i++)
		rp_buf_put_u8(&b, 0);
	rp_buf_end_record(&b, at);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	rc = rp_decoder_next(&dec, &rec);
	if (rc < 0)
	{
		ck_assert_ptr_nonnull(strstr(dec.error, "malformed relation record"));
		ck_assert_ptr_nonnull(strstr(dec.error, "offset 2"));
	}
	rp_decoder_free(&dec);
	rp_buf_free(&b);
	return rc;
}

/*
 * Version 3's relation kind: a partition root (partitions=root) with the
 * fingerprint of its partitions, a plain table; both written back byte for
 * byte, the root rendered with its two JSON members, the plain table as in
 * versions 1 and 2; the fields refused in a version 1 or 2 frame, and with
 * an unknown kind, a plain table's non-zero set or a wrong length.
 */
START_TEST(test_relation_kind)
{
	RpBuf		b,
				again;
	RpDecoder	dec;
	RpRecord	rec;
	RpRelation *copy;
	size_t		first_len;
	const char *cols_json =
	"\"columns\":[{\"name\":\"id\",\"attnum\":1,\"type\":\"integer\",\"type_oid\":23,"
	"\"typmod\":-1,\"encoding\":\"int4\",\"primary_key\":true,\"identity\":true,"
	"\"not_null\":true,\"generated\":false},{\"name\":\"note\",\"attnum\":3,\"type\":\"text\","
	"\"type_oid\":25,\"typmod\":-1,\"encoding\":\"string\",\"primary_key\":false,"
	"\"identity\":false,\"not_null\":false,\"generated\":false}]";
	char		expect[1024];

	ct_frame(&b);
	ck_assert_uint_eq((uint8_t) b.data[1], RP_PROTO_VERSION);
	put_kind_relation(&b, 7, RP_REL_KIND_PARTITION_ROOT, 0x0badf00d);
	first_len = b.len - RP_FRAME_HEADER_LEN;
	put_kind_relation(&b, 8, RP_REL_KIND_TABLE, 0);
	put_kind_relation(&b, 9, RP_REL_KIND_NONE, 0);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));

	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_uint_eq(rec.u.relation.rel->kind, RP_REL_KIND_PARTITION_ROOT);
	ck_assert_uint_eq(rec.u.relation.rel->partition_set, 0x0badf00d);
	ck_assert(rp_relation_is_root(rec.u.relation.rel));
	snprintf(expect, sizeof(expect),
			 "{\"kind\":\"relation\",\"relid\":7,\"schema\":\"public\",\"table\":\"m\","
			 "\"replica_identity\":\"default\",%s,\"partition_root\":true,"
			 "\"partition_set\":\"0badf00d\"}", cols_json);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL), expect);
	/* written back: the same bytes */
	rp_buf_init(&again, 0);
	rp_enc_relation_record(&again, rec.u.relation.rel);
	ck_assert_uint_eq(again.len, first_len);
	ck_assert_mem_eq(again.data, b.data + RP_FRAME_HEADER_LEN, first_len);
	copy = rp_relation_copy(rec.u.relation.rel);
	ck_assert_uint_eq(copy->kind, RP_REL_KIND_PARTITION_ROOT);
	ck_assert_uint_eq(copy->partition_set, 0x0badf00d);
	rp_relation_free(copy);

	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_uint_eq(rec.u.relation.rel->kind, RP_REL_KIND_TABLE);
	ck_assert(!rp_relation_is_root(rec.u.relation.rel));
	snprintf(expect, sizeof(expect),
			 "{\"kind\":\"relation\",\"relid\":8,\"schema\":\"public\",\"table\":\"m\","
			 "\"replica_identity\":\"default\",%s}", cols_json);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL), expect);
	rp_buf_reset(&again);
	rp_enc_relation_record(&again, rec.u.relation.rel);
	ck_assert_uint_eq(again.len, first_len);

	/*
	 * version 1 and 2's layout, also in a version 3 frame: no kind, written
	 * back without
	 */
	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_uint_eq(rec.u.relation.rel->kind, RP_REL_KIND_NONE);
	ck_assert_uint_eq(rec.u.relation.rel->partition_set, 0);
	rp_buf_reset(&again);
	rp_enc_relation_record(&again, rec.u.relation.rel);
	ck_assert_uint_eq(again.len, first_len - RP_REL_KIND_LEN);
	expect_end(&dec);
	rp_decoder_free(&dec);

	/* a headerless run of stored records (version unknown) reads them too */
	rp_decoder_init(&dec);
	rp_decoder_records(&dec, b.data + RP_FRAME_HEADER_LEN, b.len - RP_FRAME_HEADER_LEN);
	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_uint_eq(rec.u.relation.rel->partition_set, 0x0badf00d);
	next_ok(&dec, &rec, RP_TAG_RELATION);
	next_ok(&dec, &rec, RP_TAG_RELATION);
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&again);
	rp_buf_free(&b);

	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_PARTITION_ROOT, 0, 0), 1);
	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_TABLE, 0, 0), 1);
	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_NONE, 0, 0), 1);
	ck_assert_int_eq(kind_frame_decodes(2, RP_REL_KIND_NONE, 0, 0), 1);
	ck_assert_int_eq(kind_frame_decodes(1, RP_REL_KIND_NONE, 0, 0), 1);
	/* versions 1 and 2 have no kind fields */
	ck_assert_int_eq(kind_frame_decodes(2, RP_REL_KIND_PARTITION_ROOT, 1, 0), -1);
	ck_assert_int_eq(kind_frame_decodes(1, RP_REL_KIND_TABLE, 0, 0), -1);
	/* an unknown kind, a plain table with a set, a wrong length */
	ck_assert_int_eq(kind_frame_decodes(3, 'x', 0, 0), -1);
	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_TABLE, 5, 0), -1);
	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_PARTITION_ROOT, 5, 1), -1);
	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_NONE, 0, 4), -1);
	ck_assert_int_eq(kind_frame_decodes(3, RP_REL_KIND_NONE, 0, 5), -1);	/* kind 0 */
}

END_TEST

/* A second relation record for the same relid replaces the first. */
START_TEST(test_relation_replacement)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	RpRelation *prev;
	static const CtCol v2[] = {
		{"id", RP_ENC_INT8, 20, "int8", -1, RP_COL_PRIMARY_KEY},
		{"name", RP_ENC_STRING, 25, "text", -1, 0},
	};
	size_t		at;

	ct_frame(&b);
	put_accounts(&b);
	put_change(&b, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);
	ct_relation(&b, REL_ACCOUNTS, "public", "accounts_v2", RP_IDENTITY_FULL, 2, v2);
	at = rp_enc_change_start(&b, RP_TAG_INSERT, REL_ACCOUNTS, 0, 0);
	rp_enc_tuple_start(&b, 2);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	rp_buf_put_u64(&b, 5);
	rp_enc_datum_kind(&b, RP_DATUM_NULL);
	rp_buf_end_record(&b, at);
	/* the old shape no longer decodes */
	put_change(&b, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_INSERT);
	ck_assert_uint_eq(rec.u.change.rel->natts, 5);

	next_ok(&dec, &rec, RP_TAG_RELATION);
	prev = rec.u.relation.previous;
	ck_assert_ptr_nonnull(prev);
	ck_assert_str_eq(prev->name, "accounts");
	ck_assert_uint_eq(prev->natts, 5);
	ck_assert_int_eq(prev->identity, RP_IDENTITY_DEFAULT);
	ck_assert_ptr_eq(rp_relmap_get(&dec.rels, REL_ACCOUNTS), rec.u.relation.rel);
	ck_assert_str_eq(rec.u.relation.rel->name, "accounts_v2");
	ck_assert_uint_eq(dec.rels.count, 1);
	rp_relation_free(prev);

	next_ok(&dec, &rec, RP_TAG_INSERT);
	ck_assert_uint_eq(rec.u.change.new_tuple.natts, 2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"insert\",\"schema\":\"public\",\"table\":\"accounts_v2\",\"new\":{\"id\":5,\"name\":null}}");

	ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
	ck_assert_ptr_nonnull(strstr(dec.error, "insert"));
	ck_assert_ptr_null(strstr(dec.error, "Alice"));
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* ---- changes ----------------------------------------------------------- */

START_TEST(test_insert)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	put_accounts(&b);
	put_change(&b, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);
	put_change(&b, RP_TAG_INSERT, 0, 0, NULL, NULL, "vnvnn", &alice);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_INSERT);
	ck_assert_uint_eq(rec.u.change.relid, REL_ACCOUNTS);
	ck_assert_ptr_eq(rec.u.change.rel, rp_relmap_get(&dec.rels, REL_ACCOUNTS));
	ck_assert_uint_eq(rec.u.change.flags, 0);
	ck_assert_uint_eq(rec.u.change.xid, 0);
	ck_assert(!rec.u.change.has_old);
	ck_assert(rec.u.change.has_new);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"insert\",\"schema\":\"public\",\"table\":\"accounts\",\"new\":"
					 "{\"id\":1,\"name\":\"Alice\",\"balance\":\"12.50\",\"note\":\"first\",\"total\":7}}");

	next_ok(&dec, &rec, RP_TAG_INSERT);
	check_datums(&rec.u.change.new_tuple, "vnvnn", &alice);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"insert\",\"schema\":\"public\",\"table\":\"accounts\",\"new\":"
					 "{\"id\":1,\"name\":null,\"balance\":\"12.50\",\"note\":null,\"total\":null}}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/*
 * PostgreSQL's extreme date and time values in one row: encoded, decoded
 * and rendered exactly (years of six and seven digits, the extended
 * timestamp range).  A timestamp or date no PostgreSQL value has is
 * refused, naming relation and column and nothing of the value (G3, G4).
 */
#define REL_EXTREMES 16400u
static const CtCol extremes_cols[] = {
	{"ts_max", RP_ENC_TIMESTAMP, 1114, "timestamp without time zone", -1, 0},
	{"tstz_max", RP_ENC_TIMESTAMPTZ, 1184, "timestamp with time zone", -1, 0},
	{"tstz_min", RP_ENC_TIMESTAMPTZ, 1184, "timestamp with time zone", -1, 0},
	{"d_max", RP_ENC_DATE, 1082, "date", -1, 0},
	{"d_min", RP_ENC_DATE, 1082, "date", -1, 0},
	{"tstz_inf", RP_ENC_TIMESTAMPTZ, 1184, "timestamp with time zone", -1, 0},
	{"t_max", RP_ENC_TIME, 1083, "time without time zone", -1, 0},
	{"iv_min", RP_ENC_INTERVAL, 1186, "interval", -1, 0},
};
#define EXTREMES_NATTS 8

static void
put_extremes(RpBuf *b, int64_t ts_max, int32_t d_max)
{
	size_t		at;

	ct_relation(b, REL_EXTREMES, "public", "extremes", RP_IDENTITY_DEFAULT,
				EXTREMES_NATTS, extremes_cols);
	at = rp_enc_change_start(b, RP_TAG_INSERT, REL_EXTREMES, 0, 0);
	rp_enc_tuple_start(b, EXTREMES_NATTS);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, (uint64_t) ts_max);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, (uint64_t) (RP_TS_EXT_BASE + RP_TS_EXT_MAX_K));
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, (uint64_t) RP_TS_WIRE_MIN);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) d_max);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) (RP_PG_DATE_MIN + RP_PG_EPOCH_DAYS));
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, (uint64_t) RP_TS_POS_INF);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, UINT64_C(86400000000));
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, (uint64_t) INT64_MIN);
	rp_buf_put_u32(b, (uint32_t) INT32_MIN);
	rp_buf_put_u32(b, (uint32_t) INT32_MIN);
	rp_buf_end_record(b, at);
}

START_TEST(test_time_extremes)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	int64_t		pg;

	ct_frame(&b);
	put_extremes(&b, RP_TS_EXT_BASE + RP_TS_EXT_MAX_K, RP_PG_DATE_MAX + RP_PG_EPOCH_DAYS);
	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_INSERT);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"insert\",\"schema\":\"public\",\"table\":\"extremes\",\"new\":"
					 "{\"ts_max\":\"+294276-12-31T23:59:59.999999\","
					 "\"tstz_max\":\"+294276-12-31T23:59:59.999999Z\","
					 "\"tstz_min\":\"-4713-11-24T00:00:00Z\","
					 "\"d_max\":\"+5874897-12-31\",\"d_min\":\"-4713-11-24\","
					 "\"tstz_inf\":\"infinity\",\"t_max\":\"24:00:00\","
					 "\"iv_min\":{\"months\":-2147483648,\"days\":-2147483648,\"microseconds\":-9223372036854775808}}}");
	/* the extended wire value is PostgreSQL's last microsecond, exactly */
	ck_assert(rp_ts_to_pg((int64_t) rp_load_u64(rec.u.change.new_tuple.datums[1].data), &pg));
	ck_assert_int_eq(pg, RP_PG_TS_END - 1);
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);

	/* the conversions are inverse over the edges of every range */
	{
		const int64_t pgs[] = {RP_PG_TS_MIN, RP_PG_TS_MIN + 1, -1, 0, RP_TS_EXT_FIRST_PG - 1,
		RP_TS_EXT_FIRST_PG, RP_TS_EXT_FIRST_PG + 1, RP_PG_TS_END - 1, RP_TS_NEG_INF, RP_TS_POS_INF};

		for (size_t i = 0; i < sizeof(pgs) / sizeof(pgs[0]); i++)
		{
			int64_t		w,
						back;

			ck_assert(rp_ts_from_pg(pgs[i], true, &w));
			ck_assert(rp_ts_to_pg(w, &back));
			ck_assert_int_eq(back, pgs[i]);
			/* version 1 holds all but the extended range, in the same bytes */
			ck_assert(rp_ts_from_pg(pgs[i], false, &back) == (pgs[i] < RP_TS_EXT_FIRST_PG || pgs[i] == RP_TS_POS_INF));
			if (pgs[i] < RP_TS_EXT_FIRST_PG && pgs[i] != RP_TS_NEG_INF)
				ck_assert_int_eq(w, pgs[i] + RP_PG_EPOCH_USECS);
		}
		ck_assert(!rp_ts_from_pg(RP_PG_TS_END, true, &pg));
		ck_assert(!rp_ts_from_pg(RP_PG_TS_MIN - 1, true, &pg));
	}
}

END_TEST

START_TEST(test_time_out_of_range_names_column)
{
	/* past the extended range; just below PostgreSQL's first timestamp */
	const int64_t bad[] = {RP_TS_EXT_BASE + RP_TS_EXT_MAX_K + 1, RP_TS_WIRE_MIN - 1, INT64_MIN / 2};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		RpBuf		b;
		RpDecoder	dec;
		RpRecord	rec;

		ct_frame(&b);
		put_extremes(&b, bad[i], RP_PG_DATE_MAX + RP_PG_EPOCH_DAYS);
		start_decoder(&dec, &b);
		ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
		ck_assert_msg(strstr(dec.error, "relation \"public\".\"extremes\"") != NULL, "%s", dec.error);
		ck_assert_msg(strstr(dec.error, "column \"ts_max\" (timestamp without time zone)") != NULL,
					  "%s", dec.error);
		ck_assert_msg(strstr(dec.error, "294") == NULL, "the error shows a value: %s", dec.error);
		rp_decoder_free(&dec);
		rp_buf_free(&b);
	}
	/* a day after PostgreSQL's last date, and one before its first */
	for (int i = 0; i < 2; i++)
	{
		RpBuf		b;
		RpDecoder	dec;
		RpRecord	rec;

		ct_frame(&b);
		put_extremes(&b, 0, i == 0 ? RP_PG_DATE_MAX + RP_PG_EPOCH_DAYS + 1
					 : RP_PG_DATE_MIN + RP_PG_EPOCH_DAYS - 1);
		start_decoder(&dec, &b);
		ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
		ck_assert_msg(strstr(dec.error, "column \"d_max\" (date): the date value does not decode") != NULL,
					  "%s", dec.error);
		rp_decoder_free(&dec);
		rp_buf_free(&b);
	}
}

END_TEST

/* Update with an old-key tuple ('k' for non-key columns) and unchanged TOAST. */
START_TEST(test_update_old_key)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	put_accounts(&b);
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, 0, "vkkkk", &alice, "vvvuv", &alice2);
	/* NULL, unchanged and not-in-key are three different things */
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, 0, "nkkkk", &alice, "vnuuv", &alice2);
	put_change(&b, RP_TAG_UPDATE, 0, 0, NULL, NULL, "vvvvv", &alice2);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_UPDATE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_OLD_KEY);
	ck_assert(rec.u.change.has_old);
	ck_assert(rec.u.change.has_new);
	check_datums(&rec.u.change.old_tuple, "vkkkk", &alice);
	check_datums(&rec.u.change.new_tuple, "vvvuv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\",\"key\":{\"id\":1},"
					 "\"new\":{\"id\":1,\"name\":\"Alice B.\",\"balance\":\"13.00\",\"total\":-7},"
					 "\"unchanged_toast\":[\"note\"]}");

	next_ok(&dec, &rec, RP_TAG_UPDATE);
	check_datums(&rec.u.change.old_tuple, "nkkkk", &alice);
	check_datums(&rec.u.change.new_tuple, "vnuuv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\",\"key\":{\"id\":null},"
					 "\"new\":{\"id\":1,\"name\":null,\"total\":-7},"
					 "\"unchanged_toast\":[\"balance\",\"note\"]}");

	next_ok(&dec, &rec, RP_TAG_UPDATE);
	ck_assert(!rec.u.change.has_old);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\","
					 "\"new\":{\"id\":1,\"name\":\"Alice B.\",\"balance\":\"13.00\",\"note\":\"ignored\",\"total\":-7}}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* REPLICA IDENTITY FULL: the old tuple holds every column (it may be 'u'). */
START_TEST(test_update_old_full)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	put_accounts(&b);
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_OLD_FULL, 0, "vvvnv", &alice, "vvvvv", &alice2);
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_OLD_FULL, 0, "vvuvv", &alice, "vvuvv", &alice2);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_UPDATE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_OLD_FULL);
	ck_assert(rec.u.change.has_old);
	check_datums(&rec.u.change.old_tuple, "vvvnv", &alice);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\","
					 "\"old\":{\"id\":1,\"name\":\"Alice\",\"balance\":\"12.50\",\"note\":null,\"total\":7},"
					 "\"new\":{\"id\":1,\"name\":\"Alice B.\",\"balance\":\"13.00\",\"note\":\"ignored\",\"total\":-7}}");

	next_ok(&dec, &rec, RP_TAG_UPDATE);
	check_datums(&rec.u.change.old_tuple, "vvuvv", &alice);
	check_datums(&rec.u.change.new_tuple, "vvuvv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\","
					 "\"old\":{\"id\":1,\"name\":\"Alice\",\"note\":\"first\",\"total\":7},"
					 "\"new\":{\"id\":1,\"name\":\"Alice B.\",\"note\":\"ignored\",\"total\":-7},"
					 "\"unchanged_toast\":[\"balance\"]}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_delete)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	put_accounts(&b);
	put_change(&b, RP_TAG_DELETE, RP_CHANGE_OLD_KEY, 0, "vkkkk", &alice, NULL, NULL);
	put_change(&b, RP_TAG_DELETE, RP_CHANGE_OLD_FULL, 0, "vvvvn", &alice, NULL, NULL);
	put_change(&b, RP_TAG_DELETE, RP_CHANGE_NO_IDENTITY, 0, NULL, NULL, NULL, NULL);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_DELETE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_OLD_KEY);
	ck_assert(rec.u.change.has_old);
	ck_assert(!rec.u.change.has_new);
	check_datums(&rec.u.change.old_tuple, "vkkkk", &alice);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"delete\",\"schema\":\"public\",\"table\":\"accounts\",\"key\":{\"id\":1}}");

	next_ok(&dec, &rec, RP_TAG_DELETE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_OLD_FULL);
	check_datums(&rec.u.change.old_tuple, "vvvvn", &alice);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"delete\",\"schema\":\"public\",\"table\":\"accounts\","
					 "\"old\":{\"id\":1,\"name\":\"Alice\",\"balance\":\"12.50\",\"note\":\"first\",\"total\":null}}");

	next_ok(&dec, &rec, RP_TAG_DELETE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_NO_IDENTITY);
	ck_assert(!rec.u.change.has_old);
	ck_assert(!rec.u.change.has_new);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"delete\",\"schema\":\"public\",\"table\":\"accounts\",\"no_identity\":true}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* A table without a usable identity still yields its changes, flagged. */
START_TEST(test_no_identity_update)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	put_accounts(&b);
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_NO_IDENTITY, 0, NULL, NULL, "vvvvv", &alice);
	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_UPDATE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_NO_IDENTITY);
	ck_assert(!rec.u.change.has_old);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\",\"no_identity\":true,"
					 "\"new\":{\"id\":1,\"name\":\"Alice\",\"balance\":\"12.50\",\"note\":\"first\",\"total\":7}}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* Inside a stream block every change names its (sub)transaction. */
START_TEST(test_changes_with_xid)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	put_accounts(&b);
	rp_enc_stream_start(&b, 700, true);
	put_change(&b, RP_TAG_INSERT, 0, 701, NULL, NULL, "vvvvv", &alice);
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, 0xFFFFFFFFu, "vkkkk", &alice, "vvvvv", &alice2);
	put_change(&b, RP_TAG_DELETE, RP_CHANGE_OLD_FULL, 700, "vvvvv", &alice2, NULL, NULL);
	rp_enc_stream_stop(&b);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_STREAM_START);

	next_ok(&dec, &rec, RP_TAG_INSERT);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_HAS_XID);
	ck_assert_uint_eq(rec.u.change.xid, 701);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"insert\",\"xid\":701,\"schema\":\"public\",\"table\":\"accounts\",\"new\":"
					 "{\"id\":1,\"name\":\"Alice\",\"balance\":\"12.50\",\"note\":\"first\",\"total\":7}}");

	next_ok(&dec, &rec, RP_TAG_UPDATE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_HAS_XID | RP_CHANGE_OLD_KEY);
	ck_assert_uint_eq(rec.u.change.xid, 0xFFFFFFFFu);
	check_datums(&rec.u.change.old_tuple, "vkkkk", &alice);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"update\",\"xid\":4294967295,\"schema\":\"public\",\"table\":\"accounts\","
					 "\"key\":{\"id\":1},\"new\":{\"id\":1,\"name\":\"Alice B.\",\"balance\":\"13.00\","
					 "\"note\":\"ignored\",\"total\":-7}}");

	next_ok(&dec, &rec, RP_TAG_DELETE);
	ck_assert_uint_eq(rec.u.change.flags, RP_CHANGE_HAS_XID | RP_CHANGE_OLD_FULL);
	ck_assert_uint_eq(rec.u.change.xid, 700);
	check_datums(&rec.u.change.old_tuple, "vvvvv", &alice2);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"delete\",\"xid\":700,\"schema\":\"public\",\"table\":\"accounts\","
					 "\"old\":{\"id\":1,\"name\":\"Alice B.\",\"balance\":\"13.00\",\"note\":\"ignored\",\"total\":-7}}");
	next_ok(&dec, &rec, RP_TAG_STREAM_STOP);
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* More columns than the decoder's initial datum arrays, then fewer again. */
START_TEST(test_wide_relation)
{
	enum
	{
		WIDE = 1000
	};
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	size_t		at;
	char		name[16];
	char	   *json;

	ct_frame(&b);
	at = rp_enc_relation_start(&b, 5, "public", "wide", RP_IDENTITY_FULL, WIDE);
	for (int c = 0; c < WIDE; c++)
	{
		snprintf(name, sizeof(name), "c%d", c);
		rp_enc_relation_column(&b, (int16_t) (c + 1), name, 23, "int4", -1, RP_ENC_INT4, 0);
	}
	rp_buf_end_record(&b, at);
	for (int pass = 0; pass < 2; pass++)
	{
		at = rp_enc_change_start(&b, RP_TAG_UPDATE, 5, RP_CHANGE_OLD_FULL, 0);
		for (int t = 0; t < 2; t++)
		{
			rp_enc_tuple_start(&b, WIDE);
			for (int c = 0; c < WIDE; c++)
			{
				rp_enc_datum_kind(&b, RP_DATUM_VALUE);
				rp_buf_put_u32(&b, (uint32_t) (t ? c : -c));
			}
		}
		rp_buf_end_record(&b, at);
	}
	put_accounts(&b);
	put_change(&b, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	next_ok(&dec, &rec, RP_TAG_RELATION);
	ck_assert_uint_eq(rec.u.relation.rel->natts, WIDE);
	for (int pass = 0; pass < 2; pass++)
	{
		next_ok(&dec, &rec, RP_TAG_UPDATE);
		ck_assert_uint_eq(rec.u.change.old_tuple.natts, WIDE);
		ck_assert_uint_eq(rec.u.change.new_tuple.natts, WIDE);
		ck_assert_ptr_ne(rec.u.change.old_tuple.datums, rec.u.change.new_tuple.datums);
		for (int c = 0; c < WIDE; c++)
		{
			ck_assert_int_eq((int32_t) rp_load_u32(rec.u.change.old_tuple.datums[c].data), -c);
			ck_assert_int_eq((int32_t) rp_load_u32(rec.u.change.new_tuple.datums[c].data), c);
		}
		json = ct_render(&rec, &dec.rels, NULL);
		ck_assert_ptr_nonnull(strstr(json, "\"old\":{\"c0\":0,\"c1\":-1,"));
		ck_assert_ptr_nonnull(strstr(json, ",\"c999\":-999},\"new\":{\"c0\":0,\"c1\":1,"));
		ck_assert_ptr_nonnull(strstr(json, ",\"c999\":999}}"));
	}
	next_ok(&dec, &rec, RP_TAG_RELATION);
	next_ok(&dec, &rec, RP_TAG_INSERT);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice);
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* ---- truncate and messages --------------------------------------------- */

START_TEST(test_truncate)
{
	static const uint8_t flag_sets[] = {0, RP_TRUNCATE_CASCADE, RP_TRUNCATE_RESTART_SEQS,
	RP_TRUNCATE_CASCADE | RP_TRUNCATE_RESTART_SEQS};
	static const char *const flag_json[] = {
		"\"cascade\":false,\"restart_identity\":false",
		"\"cascade\":true,\"restart_identity\":false",
		"\"cascade\":false,\"restart_identity\":true",
		"\"cascade\":true,\"restart_identity\":true",
	};
	static const CtCol one[] = {{"a", RP_ENC_INT4, 23, "int4", -1, 0}};
	uint32_t	relids[3] = {REL_ACCOUNTS, 3, 4294967295u};
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	char		expect[512];

	ct_frame(&b);
	put_accounts(&b);
	ct_relation(&b, 3, "other", "t3", RP_IDENTITY_DEFAULT, 1, one);
	ct_relation(&b, 4294967295u, "x", "max", RP_IDENTITY_DEFAULT, 1, one);
	for (int i = 0; i < 4; i++)
		rp_enc_truncate(&b, flag_sets[i], 0, 3, relids);
	rp_enc_truncate(&b, RP_TRUNCATE_CASCADE, 4242, 1, relids + 1);
	rp_enc_truncate(&b, 0, 0, 0, NULL);

	start_decoder(&dec, &b);
	next_ok(&dec, &rec, RP_TAG_RELATION);
	next_ok(&dec, &rec, RP_TAG_RELATION);
	for (int i = 0; i < 4; i++)
	{
		next_ok(&dec, &rec, RP_TAG_TRUNCATE);
		ck_assert_uint_eq(rec.u.truncate.flags, flag_sets[i]);
		ck_assert_uint_eq(rec.u.truncate.xid, 0);
		ck_assert_uint_eq(rec.u.truncate.nrels, 3);
		for (uint32_t r = 0; r < 3; r++)
			ck_assert_uint_eq(rp_truncate_relid(&rec, r), relids[r]);
		snprintf(expect, sizeof(expect),
				 "{\"kind\":\"truncate\",\"relations\":[{\"schema\":\"public\",\"table\":\"accounts\"},"
				 "{\"schema\":\"other\",\"table\":\"t3\"},{\"schema\":\"x\",\"table\":\"max\"}],%s}",
				 flag_json[i]);
		ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL), expect);
	}
	next_ok(&dec, &rec, RP_TAG_TRUNCATE);
	ck_assert_uint_eq(rec.u.truncate.flags, RP_TRUNCATE_CASCADE | RP_CHANGE_HAS_XID);
	ck_assert_uint_eq(rec.u.truncate.xid, 4242);
	ck_assert_uint_eq(rec.u.truncate.nrels, 1);
	ck_assert_uint_eq(rp_truncate_relid(&rec, 0), 3);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"truncate\",\"xid\":4242,\"relations\":[{\"schema\":\"other\",\"table\":\"t3\"}],"
					 "\"cascade\":true,\"restart_identity\":false}");
	next_ok(&dec, &rec, RP_TAG_TRUNCATE);
	ck_assert_uint_eq(rec.u.truncate.nrels, 0);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"truncate\",\"relations\":[],\"cascade\":false,\"restart_identity\":false}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_messages)
{
	static const char binary[] = {'\0', '\x01', '\xff', 'C', 'A', 'N'};
	static const char with_nul[] = {'a', '\0', 'b'};
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	rp_enc_message(&b, true, 0, UINT64_C(0x2A00000010), "app.audit", "hello \"w\"\n\xE2\x82\xAC", 13);
	rp_enc_message(&b, false, 0, 1, "bin", binary, sizeof(binary));
	rp_enc_message(&b, true, 99, 2, "", "", 0);
	rp_enc_message(&b, false, 0, 3, "p\xC3\xA9", with_nul, sizeof(with_nul));
	rp_enc_message(&b, false, 0, 4, "bad", "\xC3\x28", 2);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));

	next_ok(&dec, &rec, RP_TAG_MESSAGE);
	ck_assert_uint_eq(rec.u.message.flags, RP_MESSAGE_TRANSACTIONAL);
	ck_assert_uint_eq(rec.u.message.xid, 0);
	ck_assert_uint_eq(rec.u.message.lsn, UINT64_C(0x2A00000010));
	ck_assert_uint_eq(rec.u.message.prefix_len, 9);
	ck_assert_mem_eq(rec.u.message.prefix, "app.audit", 9);
	ck_assert_uint_eq(rec.u.message.content_len, 13);
	ck_assert_mem_eq(rec.u.message.content, "hello \"w\"\n\xE2\x82\xAC", 13);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"message\",\"transactional\":true,\"lsn\":\"2A/10\",\"prefix\":\"app.audit\","
					 "\"content\":\"hello \\\"w\\\"\\n\xE2\x82\xAC\"}");

	next_ok(&dec, &rec, RP_TAG_MESSAGE);
	ck_assert_uint_eq(rec.u.message.flags, 0);
	ck_assert_uint_eq(rec.u.message.content_len, sizeof(binary));
	ck_assert_mem_eq(rec.u.message.content, binary, sizeof(binary));
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"message\",\"transactional\":false,\"lsn\":\"0/1\",\"prefix\":\"bin\","
					 "\"content_base64\":\"AAH/Q0FO\"}");

	next_ok(&dec, &rec, RP_TAG_MESSAGE);
	ck_assert_uint_eq(rec.u.message.flags, RP_MESSAGE_TRANSACTIONAL | RP_CHANGE_HAS_XID);
	ck_assert_uint_eq(rec.u.message.xid, 99);
	ck_assert_uint_eq(rec.u.message.prefix_len, 0);
	ck_assert_uint_eq(rec.u.message.content_len, 0);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"message\",\"xid\":99,\"transactional\":true,\"lsn\":\"0/2\",\"prefix\":\"\","
					 "\"content\":\"\"}");

	/* valid UTF-8 but with a zero byte: binary, not text */
	next_ok(&dec, &rec, RP_TAG_MESSAGE);
	ck_assert_uint_eq(rec.u.message.content_len, 3);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"message\",\"transactional\":false,\"lsn\":\"0/3\",\"prefix\":\"p\xC3\xA9\","
					 "\"content_base64\":\"YQBi\"}");

	next_ok(&dec, &rec, RP_TAG_MESSAGE);
	ck_assert_str_eq(ct_render(&rec, &dec.rels, NULL),
					 "{\"kind\":\"message\",\"transactional\":false,\"lsn\":\"0/4\",\"prefix\":\"bad\","
					 "\"content_base64\":\"wyg=\"}");
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* ---- a whole transaction in one frame ---------------------------------- */

START_TEST(test_transaction_frame)
{
	RpBuf		b;
	char	   *lines;
	uint32_t	relid = REL_ACCOUNTS;
	int			n;

	ct_frame(&b);
	rp_enc_begin(&b, 42, 0x3000, T_2024);
	rp_enc_origin(&b, 0x10, "up");
	put_accounts(&b);
	put_change(&b, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);
	put_change(&b, RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, 0, "vkkkk", &alice, "vvvuv", &alice2);
	put_change(&b, RP_TAG_DELETE, RP_CHANGE_OLD_KEY, 0, "vkkkk", &alice2, NULL, NULL);
	rp_enc_truncate(&b, RP_TRUNCATE_RESTART_SEQS, 0, 1, &relid);
	rp_enc_message(&b, true, 0, 0x2F00, "m", "x", 1);
	rp_enc_commit(&b, 0x3000, 0x3038, T_2024);

	n = ct_decode_frame(b.data, b.len, &lines, NULL, 0);
	ck_assert_int_eq(n, 9);
	ck_assert_str_eq(lines,
					 "{\"kind\":\"begin\",\"xid\":42,\"final_lsn\":\"0/3000\",\"commit_time\":\"" T_2024_TEXT "\"}\n"
					 "{\"kind\":\"origin\",\"origin\":\"up\",\"origin_lsn\":\"0/10\"}\n"
					 "{\"kind\":\"relation\",\"relid\":16384,\"schema\":\"public\",\"table\":\"accounts\","
					 "\"replica_identity\":\"default\",\"columns\":["
					 "{\"name\":\"id\",\"attnum\":1,\"type\":\"int8\",\"type_oid\":20,\"typmod\":-1,\"encoding\":\"int8\","
					 "\"primary_key\":true,\"identity\":true,\"not_null\":true,\"generated\":false},"
					 "{\"name\":\"name\",\"attnum\":2,\"type\":\"text\",\"type_oid\":25,\"typmod\":-1,\"encoding\":\"string\","
					 "\"primary_key\":false,\"identity\":false,\"not_null\":false,\"generated\":false},"
					 "{\"name\":\"balance\",\"attnum\":3,\"type\":\"numeric\",\"type_oid\":1700,\"typmod\":786438,"
					 "\"encoding\":\"numeric\",\"primary_key\":false,\"identity\":false,\"not_null\":true,\"generated\":false},"
					 "{\"name\":\"note\",\"attnum\":4,\"type\":\"text\",\"type_oid\":25,\"typmod\":-1,\"encoding\":\"string\","
					 "\"primary_key\":false,\"identity\":false,\"not_null\":false,\"generated\":false},"
					 "{\"name\":\"total\",\"attnum\":5,\"type\":\"int4\",\"type_oid\":23,\"typmod\":-1,\"encoding\":\"int4\","
					 "\"primary_key\":false,\"identity\":false,\"not_null\":false,\"generated\":true}]}\n"
					 "{\"kind\":\"insert\",\"schema\":\"public\",\"table\":\"accounts\",\"new\":"
					 "{\"id\":1,\"name\":\"Alice\",\"balance\":\"12.50\",\"note\":\"first\",\"total\":7}}\n"
					 "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"accounts\",\"key\":{\"id\":1},"
					 "\"new\":{\"id\":1,\"name\":\"Alice B.\",\"balance\":\"13.00\",\"total\":-7},"
					 "\"unchanged_toast\":[\"note\"]}\n"
					 "{\"kind\":\"delete\",\"schema\":\"public\",\"table\":\"accounts\",\"key\":{\"id\":1}}\n"
					 "{\"kind\":\"truncate\",\"relations\":[{\"schema\":\"public\",\"table\":\"accounts\"}],"
					 "\"cascade\":false,\"restart_identity\":true}\n"
					 "{\"kind\":\"message\",\"transactional\":true,\"lsn\":\"0/2F00\",\"prefix\":\"m\",\"content\":\"x\"}\n"
					 "{\"kind\":\"commit\",\"commit_lsn\":\"0/3000\",\"end_lsn\":\"0/3038\",\"commit_time\":\"" T_2024_TEXT "\"}");
	rp_buf_free(&b);
}

END_TEST

/* Record offsets name where each record starts in its frame. */
START_TEST(test_record_offsets)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	size_t		starts[4];

	ct_frame(&b);
	starts[0] = b.len;
	rp_enc_begin(&b, 1, 2, 3);
	starts[1] = b.len;
	rp_enc_stream_stop(&b);
	starts[2] = b.len;
	rp_enc_origin(&b, 1, "o");
	starts[3] = b.len;
	rp_enc_commit(&b, 1, 2, 3);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	for (int i = 0; i < 4; i++)
	{
		ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
		ck_assert_uint_eq(rec.offset, starts[i]);
	}
	expect_end(&dec);

	/* a frame with a header and nothing else is a valid, empty frame */
	ck_assert(rp_decoder_frame(&dec, b.data, RP_FRAME_HEADER_LEN));
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

/* One decoder walks many frames; relations carry over between them. */
START_TEST(test_relations_span_frames)
{
	RpBuf		f1,
				f2;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&f1);
	put_accounts(&f1);
	ct_frame(&f2);
	put_change(&f2, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, f1.data, f1.len));
	next_ok(&dec, &rec, RP_TAG_RELATION);
	expect_end(&dec);
	ck_assert(rp_decoder_frame(&dec, f2.data, f2.len));
	next_ok(&dec, &rec, RP_TAG_INSERT);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice);
	expect_end(&dec);
	rp_decoder_free(&dec);

	/* a fresh decoder has never seen the relation */
	ck_assert_int_eq(ct_decode_frame(f2.data, f2.len, NULL, NULL, 0), -1);
	rp_buf_free(&f1);
	rp_buf_free(&f2);
}

END_TEST

/* A headerless run of whole records (a stored transaction) walks the same way. */
START_TEST(test_decoder_records)
{
	RpBuf		f,
				run;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&f);
	put_accounts(&f);
	rp_buf_init(&run, 0);
	rp_enc_begin(&run, 7, 0x100, T_2024);
	put_change(&run, RP_TAG_INSERT, 0, 0, NULL, NULL, "vvvvv", &alice);
	rp_enc_commit(&run, 0x100, 0x140, T_2024);

	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, f.data, f.len));
	next_ok(&dec, &rec, RP_TAG_RELATION);
	expect_end(&dec);

	rp_decoder_records(&dec, run.data, run.len);
	next_ok(&dec, &rec, RP_TAG_BEGIN);
	ck_assert_uint_eq(rec.offset, 0);	/* offsets are within the run */
	ck_assert_uint_eq(rec.u.begin.xid, 7);
	next_ok(&dec, &rec, RP_TAG_INSERT);
	check_datums(&rec.u.change.new_tuple, "vvvvv", &alice);
	next_ok(&dec, &rec, RP_TAG_COMMIT);
	ck_assert_uint_eq(rec.u.commit.end_lsn, 0x140);
	expect_end(&dec);

	/* the same checks apply: a cut run fails at the cut record */
	rp_decoder_records(&dec, run.data, run.len - 1);
	next_ok(&dec, &rec, RP_TAG_BEGIN);
	next_ok(&dec, &rec, RP_TAG_INSERT);
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), -1);
	ck_assert_str_ne(dec.error, "");

	/* and an empty run is simply empty */
	rp_decoder_records(&dec, run.data, 0);
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&run);
	rp_buf_free(&f);
}

END_TEST

/* ---- the relation map -------------------------------------------------- */

static RpRelation *
make_rel(uint32_t relid, const char *name)
{
	RpRelation *rel = rp_malloc0(sizeof(RpRelation));

	rel->relid = relid;
	rel->schema = rp_strndup("s", 1);
	rel->name = rp_strndup(name, strlen(name));
	rel->identity = RP_IDENTITY_DEFAULT;
	rel->natts = 1;
	rel->cols = rp_malloc0(sizeof(RpColumn));
	rel->cols[0].name = rp_strndup("c", 1);
	rel->cols[0].type_name = rp_strndup("int4", 4);
	rel->cols[0].encoding = RP_ENC_INT4;
	return rel;
}

START_TEST(test_relmap_growth)
{
	enum
	{
		N = 5000
	};
	RpRelMap	map;
	char		name[32];

	rp_relmap_init(&map);
	ck_assert_ptr_null(rp_relmap_get(&map, 0));
	ck_assert_ptr_null(rp_relmap_get(&map, 12345));
	/* relids that collide in a small table: multiples of the table size */
	for (uint32_t i = 0; i < N; i++)
	{
		uint32_t	relid = i % 2 ? i * 64u : 4294967295u - i;

		snprintf(name, sizeof(name), "r%u", relid);
		ck_assert_ptr_null(rp_relmap_put(&map, make_rel(relid, name)));
		ck_assert_uint_eq(map.count, i + 1);
		ck_assert_uint_le(map.count * 2, map.nslots);
	}
	ck_assert_uint_ge(map.nslots, 2 * N);
	ck_assert_uint_eq(map.nslots & (map.nslots - 1), 0);	/* a power of two */
	for (uint32_t i = 0; i < N; i++)
	{
		uint32_t	relid = i % 2 ? i * 64u : 4294967295u - i;
		RpRelation *rel = rp_relmap_get(&map, relid);

		snprintf(name, sizeof(name), "r%u", relid);
		ck_assert_ptr_nonnull(rel);
		ck_assert_uint_eq(rel->relid, relid);
		ck_assert_str_eq(rel->name, name);
	}
	ck_assert_ptr_null(rp_relmap_get(&map, 2));
	ck_assert_ptr_null(rp_relmap_get(&map, 64u * 2));

	/* replacement returns the relation it replaced; the count stays */
	for (uint32_t i = 1; i < N; i += 2)
	{
		RpRelation *fresh = make_rel(i * 64u, "replaced");
		RpRelation *old = rp_relmap_put(&map, fresh);

		snprintf(name, sizeof(name), "r%u", i * 64u);
		ck_assert_ptr_nonnull(old);
		ck_assert_ptr_ne(old, fresh);
		ck_assert_str_eq(old->name, name);
		ck_assert_ptr_eq(rp_relmap_get(&map, i * 64u), fresh);
		rp_relation_free(old);
	}
	ck_assert_uint_eq(map.count, N);
	ck_assert_str_eq(rp_relmap_get(&map, 64u)->name, "replaced");
	ck_assert_str_eq(rp_relmap_get(&map, 4294967295u)->name, "r4294967295");
	rp_relmap_free(&map);
	ck_assert_ptr_null(map.slots);
	ck_assert_uint_eq(map.count, 0);
	rp_relmap_free(&map);		/* twice is harmless */
}

END_TEST

/* The decoder's own map grows past its initial size too. */
START_TEST(test_decoder_many_relations)
{
	enum
	{
		N = 300
	};
	static const CtCol one[] = {{"a", RP_ENC_INT4, 23, "int4", -1, 0}};
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	char		name[32];

	ct_frame(&b);
	for (uint32_t i = 0; i < N; i++)
	{
		snprintf(name, sizeof(name), "t%u", i);
		ct_relation(&b, 1000 + i * 128, "s", name, RP_IDENTITY_DEFAULT, 1, one);
	}
	for (uint32_t i = 0; i < N; i++)
	{
		size_t		at = rp_enc_change_start(&b, RP_TAG_INSERT, 1000 + i * 128, 0, 0);

		rp_enc_tuple_start(&b, 1);
		rp_enc_datum_kind(&b, RP_DATUM_VALUE);
		rp_buf_put_u32(&b, i);
		rp_buf_end_record(&b, at);
	}
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	for (uint32_t i = 0; i < N; i++)
	{
		next_ok(&dec, &rec, RP_TAG_RELATION);
		ck_assert_ptr_null(rec.u.relation.previous);
	}
	ck_assert_uint_eq(dec.rels.count, N);
	for (uint32_t i = 0; i < N; i++)
	{
		next_ok(&dec, &rec, RP_TAG_INSERT);
		snprintf(name, sizeof(name), "t%u", i);
		ck_assert_str_eq(rec.u.change.rel->name, name);
		ck_assert_uint_eq(rp_load_u32(rec.u.change.new_tuple.datums[0].data), i);
	}
	expect_end(&dec);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_relation_copy)
{
	RpRelation *a = make_rel(9, "orig");
	RpRelation *c = rp_relation_copy(a);

	ck_assert_ptr_ne(c, a);
	ck_assert_uint_eq(c->relid, 9);
	ck_assert_str_eq(c->name, "orig");
	ck_assert_ptr_ne(c->name, a->name);
	ck_assert_ptr_ne(c->cols, a->cols);
	ck_assert_ptr_ne(c->cols[0].name, a->cols[0].name);
	ck_assert_str_eq(c->cols[0].type_name, "int4");
	ck_assert_int_eq(rp_relation_column(c, "c"), 0);
	rp_relation_free(a);
	ck_assert_str_eq(c->schema, "s");	/* independent of the original */
	rp_relation_free(c);
	rp_relation_free(NULL);
}

END_TEST

/* ---- name tables ------------------------------------------------------- */

START_TEST(test_names_and_widths)
{
	static const struct
	{
		uint8_t		enc;
		const char *name;
		int			width;
	}			encs[] = {
		{RP_ENC_TEXT, "text", -1}, {RP_ENC_BOOL, "bool", 1}, {RP_ENC_INT2, "int2", 2},
		{RP_ENC_INT4, "int4", 4}, {RP_ENC_INT8, "int8", 8}, {RP_ENC_OID, "oid", 4},
		{RP_ENC_FLOAT4, "float4", 4}, {RP_ENC_FLOAT8, "float8", 8},
		{RP_ENC_NUMERIC, "numeric", -1}, {RP_ENC_STRING, "string", -1},
		{RP_ENC_BYTEA, "bytea", -1}, {RP_ENC_UUID, "uuid", 16}, {RP_ENC_DATE, "date", 4},
		{RP_ENC_TIME, "time", 8}, {RP_ENC_TIMETZ, "timetz", 12},
		{RP_ENC_TIMESTAMP, "timestamp", 8}, {RP_ENC_TIMESTAMPTZ, "timestamptz", 8},
		{RP_ENC_INTERVAL, "interval", 16}, {RP_ENC_JSON, "json", -1},
		{RP_ENC_JSONB, "jsonb", -1}, {RP_ENC_ARRAY, "array", -1}, {RP_ENC_ENUM, "enum", -1},
		{RP_ENC_COMPOSITE, "composite", -1}, {RP_ENC_RANGE, "range", -1},
	};
	static const struct
	{
		uint8_t		tag;
		const char *name;
	}			tags[] = {
		{RP_TAG_BEGIN, "begin"}, {RP_TAG_COMMIT, "commit"}, {RP_TAG_ORIGIN, "origin"},
		{RP_TAG_RELATION, "relation"}, {RP_TAG_INSERT, "insert"}, {RP_TAG_UPDATE, "update"},
		{RP_TAG_DELETE, "delete"}, {RP_TAG_TRUNCATE, "truncate"}, {RP_TAG_MESSAGE, "message"},
		{RP_TAG_STREAM_START, "stream_start"}, {RP_TAG_STREAM_STOP, "stream_stop"},
		{RP_TAG_STREAM_COMMIT, "stream_commit"}, {RP_TAG_STREAM_ABORT, "stream_abort"},
	};

	ck_assert_int_eq(sizeof(encs) / sizeof(encs[0]), RP_ENC__COUNT);
	for (size_t i = 0; i < sizeof(encs) / sizeof(encs[0]); i++)
	{
		ck_assert_uint_eq(encs[i].enc, i);
		ck_assert_str_eq(rp_encoding_name(encs[i].enc), encs[i].name);
		ck_assert_int_eq(rp_encoding_width(encs[i].enc), encs[i].width);
	}
	ck_assert_str_eq(rp_encoding_name(RP_ENC__COUNT), "unknown");
	ck_assert_str_eq(rp_encoding_name(255), "unknown");
	ck_assert_int_eq(rp_encoding_width(255), -1);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		ck_assert_str_eq(rp_tag_name(tags[i].tag), tags[i].name);
	ck_assert_str_eq(rp_tag_name('Z'), "unknown");
	ck_assert_str_eq(rp_tag_name(0), "unknown");
	ck_assert_str_eq(rp_identity_name(RP_IDENTITY_DEFAULT), "default");
	ck_assert_str_eq(rp_identity_name(RP_IDENTITY_NOTHING), "nothing");
	ck_assert_str_eq(rp_identity_name(RP_IDENTITY_FULL), "full");
	ck_assert_str_eq(rp_identity_name(RP_IDENTITY_INDEX), "index");
	ck_assert_str_eq(rp_identity_name('x'), "unknown");
}

END_TEST

/* The buffer writers: big-endian, growth from any capacity. */
START_TEST(test_buf_writers)
{
	RpBuf		b;
	static const unsigned char expect[] = {
		0xAB, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x00, 0x00, 0x00, 0x02, 'h', 'i',
	};
	size_t		at;

	rp_buf_init(&b, 1);
	rp_buf_put_u8(&b, 0xAB);
	rp_buf_put_u16(&b, 0x1234);
	rp_buf_put_u32(&b, 0xDEADBEEF);
	rp_buf_put_u64(&b, UINT64_C(0x0102030405060708));
	rp_buf_put_cstr(&b, "hi");
	ck_assert_uint_eq(b.len, sizeof(expect));
	ck_assert_mem_eq(b.data, expect, sizeof(expect));
	ck_assert_uint_ge(b.cap, b.len);

	rp_buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	at = rp_buf_begin_record(&b, 'X');
	ck_assert_uint_eq(at, 1);
	for (int i = 0; i < 100000; i++)
		rp_buf_put_u8(&b, (uint8_t) i);
	rp_buf_end_record(&b, at);
	ck_assert_uint_eq(b.len, 100005);
	ck_assert_uint_eq((unsigned char) b.data[0], 'X');
	ck_assert_uint_eq(rp_load_u32((const unsigned char *) b.data + 1), 100000);
	ck_assert_uint_eq((unsigned char) b.data[100004], (uint8_t) 99999);
	rp_buf_free(&b);
	ck_assert_ptr_null(b.data);
	rp_buf_free(&b);
}

END_TEST

/* The bounded reader latches its first failure. */
START_TEST(test_reader)
{
	static const unsigned char data[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 9};
	RpReader	r;
	uint32_t	len;

	rp_reader_init(&r, data, sizeof(data));
	ck_assert_uint_eq(rp_get_u8(&r), 1);
	ck_assert_uint_eq(rp_get_u16(&r), 0x0203);
	ck_assert_uint_eq(rp_get_u32(&r), 0x04050607);
	ck_assert_uint_eq(rp_reader_left(&r), 6);
	ck_assert_ptr_null(rp_get_str(&r, &len));	/* claims 0x08090000 bytes */
	ck_assert(!r.ok);
	ck_assert_uint_eq(rp_get_u8(&r), 0);	/* latched */
	ck_assert_ptr_null(rp_get_bytes(&r, 0));

	rp_reader_init(&r, data, sizeof(data));
	ck_assert_uint_eq(rp_get_u64(&r), UINT64_C(0x0102030405060708));
	(void) rp_get_u64(&r);		/* only 5 left: fails, latched */
	ck_assert(!r.ok);

	rp_reader_init(&r, data + 9, 4);
	ck_assert_ptr_null(rp_get_str(&r, &len));	/* 9 bytes claimed, 0 left */
	rp_reader_init(&r, data + 9, 3);
	ck_assert_uint_eq(rp_get_u32(&r), 0);
	ck_assert(!r.ok);
	rp_reader_init(&r, data, 0);
	ck_assert_ptr_nonnull(rp_get_bytes(&r, 0));
	ck_assert(r.ok);
}

END_TEST

Suite	   *
ct_suite_codec(void)
{
	Suite	   *s = suite_create("codec");
	TCase	   *tc;

	tc = ct_tcase("records");
	tcase_add_test(tc, test_begin_commit);
	tcase_add_test(tc, test_commit_timeline);
	tcase_add_test(tc, test_origin);
	tcase_add_test(tc, test_stream_records);
	tcase_add_loop_test(tc, test_relation_roundtrip, 0, 4);
	tcase_add_test(tc, test_relation_render_exact);
	tcase_add_test(tc, test_relation_kind);
	tcase_add_test(tc, test_relation_replacement);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_messages);
	tcase_add_test(tc, test_transaction_frame);
	tcase_add_test(tc, test_record_offsets);
	tcase_add_test(tc, test_relations_span_frames);
	tcase_add_test(tc, test_decoder_records);
	suite_add_tcase(s, tc);

	tc = ct_tcase("changes");
	tcase_add_test(tc, test_insert);
	tcase_add_test(tc, test_time_extremes);
	tcase_add_test(tc, test_time_out_of_range_names_column);
	tcase_add_test(tc, test_update_old_key);
	tcase_add_test(tc, test_update_old_full);
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_no_identity_update);
	tcase_add_test(tc, test_changes_with_xid);
	tcase_add_test(tc, test_wide_relation);
	suite_add_tcase(s, tc);

	tc = ct_tcase("relmap");
	tcase_add_test(tc, test_relmap_growth);
	tcase_add_test(tc, test_decoder_many_relations);
	tcase_add_test(tc, test_relation_copy);
	suite_add_tcase(s, tc);

	tc = ct_tcase("primitives");
	tcase_add_test(tc, test_names_and_widths);
	tcase_add_test(tc, test_buf_writers);
	tcase_add_test(tc, test_reader);
	suite_add_tcase(s, tc);
	return s;
}
