/*
 * test_jsonwire.c
 *    JSON records back to wire records (values/rp_jsonwire.h).  The round
 *    trip is the oracle: a record built with the encoder, decoded, rendered
 *    as the JetStream sink renders it (the transaction's members first, the
 *    stream's xid stripped, as rp_lines_record does) must read back to the
 *    very bytes it was built from whenever rp_jsonwire_lossless says so,
 *    and must not whenever it says not.  Malformed JSON is refused with a
 *    message that holds no value.
 *    Guarantees: G3 (what cannot be read halts, named), G4 (value-free), G6.
 */
#include "ct_kit.h"

#include <math.h>

#include "rp_time.h"
#include "lines/rp_lines.h"
#include "values/rp_jsonwire.h"

/* ---- the round trip ------------------------------------------------------ */

#define JW_RELID 16500

/* One decoded relation and record of a frame, the frame kept alive. */
typedef struct JwCase
{
	RpDecoder	dec;
	RpBuf		frame;
	RpRecord	rel_rec;
	RpRecord	rec;
	const RpRelation *rel;
} JwCase;

static void
jw_describe(RpBuf *frame, int ncols, const CtCol *cols)
{
	ct_relation(frame, JW_RELID, "s\"ch", "tab le", RP_IDENTITY_DEFAULT, ncols, cols);
}

/* Decode frame = header, relation, record. */
static void
jw_decode(JwCase *c)
{
	rp_decoder_init(&c->dec);
	ck_assert(rp_decoder_frame(&c->dec, c->frame.data, c->frame.len));
	ck_assert_int_eq(rp_decoder_next(&c->dec, &c->rel_rec), 1);
	ck_assert_int_eq(rp_decoder_next(&c->dec, &c->rec), 1);
	c->rel = c->rel_rec.u.relation.rel;
}

static void
jw_case_free(JwCase *c)
{
	rp_decoder_free(&c->dec);
	rp_buf_free(&c->frame);
}

/* The record as the JetStream sink renders it (kept until teardown). */
static char *
jw_render(RpRecord *rec)
{
	RpTxn		txn;
	RpBuf		extra,
				out;
	char	   *s;

	memset(&txn, 0, sizeof(txn));
	txn.xid = 4242;
	txn.commit_lsn = 0x16B374D848;
	txn.end_lsn = 0x16B374D870;
	txn.commit_time = 1700000000123456;
	txn.origin = "orig";
	rp_buf_init(&extra, 64);
	rp_lines_txn_fields(&extra, &txn);
	if (rec->tag == RP_TAG_INSERT || rec->tag == RP_TAG_UPDATE || rec->tag == RP_TAG_DELETE)
		rec->u.change.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
	else if (rec->tag == RP_TAG_MESSAGE)
		rec->u.message.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
	rp_buf_init(&out, 256);
	rp_render_record_out(&out, rec, NULL, extra.data, NULL);
	ck_assert(ct_json_valid(out.data, out.len));
	s = ct_cstr(&out);
	rp_buf_free(&out);
	rp_buf_free(&extra);
	return s;
}

/* The relation through its JSON: the same bytes when re-encoded. */
static RpRelation *
jw_relation_round_trip(RpRecord *rel_rec, const RpBuf *want)
{
	char	   *json = jw_render(rel_rec);
	RpRelation *r = rp_jsonwire_relation(json, strlen(json));
	RpBuf		b;
	size_t		at;

	ck_assert_msg(r != NULL, "relation: %s", rp_error());
	rp_buf_init(&b, 128);
	at = rp_enc_relation_start(&b, r->relid, r->schema, r->name, r->identity, r->natts);
	for (uint16_t i = 0; i < r->natts; i++)
		rp_enc_relation_column(&b, r->cols[i].attnum, r->cols[i].name, r->cols[i].type_oid,
							   r->cols[i].type_name, r->cols[i].typmod, r->cols[i].encoding,
							   r->cols[i].flags);
	rp_buf_end_record(&b, at);
	ck_assert_uint_eq(b.len, want->len);
	ck_assert(memcmp(b.data, want->data, b.len) == 0);
	rp_buf_free(&b);
	return r;
}

/*
 * The oracle.  relbytes: the relation record; recbytes: the data record as
 * built (non-streamed).  Returns rp_jsonwire_lossless's verdict, after
 * checking that it tells the truth: true -> the JSON reads back to
 * recbytes; false -> it does not (refused or other bytes).
 */
static bool
jw_round_trip(int ncols, const CtCol *cols, const RpBuf *recbytes)
{
	JwCase		c;
	RpBuf		relbytes,
				out;
	RpRelation *jrel;
	char	   *json;
	bool		lossless;
	int			rc;

	rp_buf_init(&relbytes, 128);
	jw_describe(&relbytes, ncols, cols);
	ct_frame(&c.frame);
	rp_buf_put_bytes(&c.frame, relbytes.data, relbytes.len);
	rp_buf_put_bytes(&c.frame, recbytes->data, recbytes->len);
	jw_decode(&c);
	jrel = jw_relation_round_trip(&c.rel_rec, &relbytes);
	ck_assert(rp_jsonwire_relation_lossless(c.rel));

	lossless = rp_jsonwire_lossless(&c.rec);
	json = jw_render(&c.rec);
	rp_buf_init(&out, 64);
	rp_buf_put_bytes(&out, "pre", 3);	/* appended after what out holds */
	rc = rp_jsonwire_record(&out, c.rec.tag == RP_TAG_MESSAGE ? NULL : jrel, json, strlen(json));
	if (lossless)
	{
		ck_assert_msg(rc == 0, "record refused: %s", rp_error());
		ck_assert_uint_eq(out.len, recbytes->len + 3);
		ck_assert_msg(memcmp(out.data + 3, recbytes->data, recbytes->len) == 0,
					  "bytes differ for %s", json);
	}
	else
	{
		ck_assert(rc < 0 || out.len != recbytes->len + 3 ||
				  memcmp(out.data + 3, recbytes->data, recbytes->len) != 0);
		if (rc < 0)
			ck_assert_uint_eq(out.len, 3);	/* left as it was */
	}
	rp_buf_free(&out);
	rp_relation_free(jrel);
	rp_buf_free(&relbytes);
	jw_case_free(&c);
	return lossless;
}

/* ---- one-column records -------------------------------------------------- */

static CtCol
jw_col(const char *name, uint8_t enc)
{
	CtCol		c = {name, enc, 25, NULL, -1, 0};

	return c;
}

/* An insert of one column "v" of encoding enc holding the value bytes v. */
static bool
jw_one(uint8_t enc, const RpBuf *v)
{
	CtCol		col = jw_col("v", enc);
	RpBuf		rec;
	size_t		at;
	bool		r;

	rp_buf_init(&rec, 64);
	at = rp_enc_change_start(&rec, RP_TAG_INSERT, JW_RELID, 0, 0);
	rp_enc_tuple_start(&rec, 1);
	rp_enc_datum_kind(&rec, RP_DATUM_VALUE);
	rp_buf_put_bytes(&rec, v->data, v->len);
	rp_buf_end_record(&rec, at);
	r = jw_round_trip(1, &col, &rec);
	rp_buf_free(&rec);
	return r;
}

#define ONE(enc, stmt) \
	do { RpBuf b; rp_buf_init(&b, 16); { RpBuf *v = &b; (void) v; stmt; } \
		ck_assert_msg(jw_one(enc, &b), "not lossless: %s", #stmt); rp_buf_free(&b); } while (0)
#define ONE_LOSSY(enc, stmt) \
	do { RpBuf b; rp_buf_init(&b, 16); { RpBuf *v = &b; (void) v; stmt; } \
		ck_assert_msg(!jw_one(enc, &b), "lossless: %s", #stmt); rp_buf_free(&b); } while (0)

static void
put_f8(RpBuf *v, double d)
{
	ct_put_float8(v, d);
}

static void
put_f4(RpBuf *v, float f)
{
	ct_put_float4(v, f);
}

static void
put_num(RpBuf *v, uint16_t sign, int16_t weight, uint16_t dscale, int n, const uint16_t *d)
{
	ct_put_numeric(v, sign, weight, dscale, n, d);
}

START_TEST(ints_and_bools)
{
	ONE(RP_ENC_BOOL, rp_buf_put_u8(v, 0));
	ONE(RP_ENC_BOOL, rp_buf_put_u8(v, 1));
	ONE_LOSSY(RP_ENC_BOOL, rp_buf_put_u8(v, 2));
	ONE(RP_ENC_INT2, rp_buf_put_u16(v, 0x8000));
	ONE(RP_ENC_INT2, rp_buf_put_u16(v, 0x7fff));
	ONE(RP_ENC_INT2, rp_buf_put_u16(v, 0));
	ONE(RP_ENC_INT4, rp_buf_put_u32(v, 0x80000000u));
	ONE(RP_ENC_INT4, rp_buf_put_u32(v, 0x7fffffffu));
	ONE(RP_ENC_INT4, rp_buf_put_u32(v, 0xffffffffu));
	ONE(RP_ENC_INT8, rp_buf_put_u64(v, UINT64_C(0x8000000000000000)));
	ONE(RP_ENC_INT8, rp_buf_put_u64(v, UINT64_C(0x7fffffffffffffff)));
	ONE(RP_ENC_INT8, rp_buf_put_u64(v, 0));
	ONE(RP_ENC_OID, rp_buf_put_u32(v, 0));
	ONE(RP_ENC_OID, rp_buf_put_u32(v, 0xffffffffu));
}

END_TEST

START_TEST(floats)
{
	ONE(RP_ENC_FLOAT8, put_f8(v, 0.0));
	ONE(RP_ENC_FLOAT8, put_f8(v, -0.0));
	ONE(RP_ENC_FLOAT8, put_f8(v, 0.1));
	ONE(RP_ENC_FLOAT8, put_f8(v, 1.0 / 3));
	ONE(RP_ENC_FLOAT8, put_f8(v, 1e300));
	ONE(RP_ENC_FLOAT8, put_f8(v, DBL_MAX));
	ONE(RP_ENC_FLOAT8, put_f8(v, -DBL_MAX));
	ONE(RP_ENC_FLOAT8, put_f8(v, DBL_MIN));
	ONE(RP_ENC_FLOAT8, put_f8(v, 4.9e-324));	/* the least denormal */
	ONE(RP_ENC_FLOAT8, put_f8(v, 2.2250738585072009e-308)); /* the greatest */
	ONE(RP_ENC_FLOAT8, put_f8(v, INFINITY));
	ONE(RP_ENC_FLOAT8, put_f8(v, -INFINITY));
	ONE(RP_ENC_FLOAT8, rp_buf_put_u64(v, UINT64_C(0x7ff8000000000000)));	/* 'NaN' */
	ONE_LOSSY(RP_ENC_FLOAT8, rp_buf_put_u64(v, UINT64_C(0xfff8000000000000)));	/* inf - inf */
	ONE_LOSSY(RP_ENC_FLOAT8, rp_buf_put_u64(v, UINT64_C(0x7ff0000000000001)));	/* signalling */
	ONE(RP_ENC_FLOAT4, put_f4(v, 0.0f));
	ONE(RP_ENC_FLOAT4, put_f4(v, -0.0f));
	ONE(RP_ENC_FLOAT4, put_f4(v, 0.1f));
	ONE(RP_ENC_FLOAT4, put_f4(v, 16777217.0f));
	ONE(RP_ENC_FLOAT4, put_f4(v, FLT_MAX));
	ONE(RP_ENC_FLOAT4, put_f4(v, FLT_MIN));
	ONE(RP_ENC_FLOAT4, put_f4(v, 1.4e-45f));
	ONE(RP_ENC_FLOAT4, put_f4(v, 1.17549421e-38f));
	ONE(RP_ENC_FLOAT4, put_f4(v, INFINITY));
	ONE(RP_ENC_FLOAT4, put_f4(v, -INFINITY));
	ONE(RP_ENC_FLOAT4, rp_buf_put_u32(v, 0x7fc00000u));
	ONE_LOSSY(RP_ENC_FLOAT4, rp_buf_put_u32(v, 0xffc00000u));
}

END_TEST

START_TEST(numerics)
{
	static const uint16_t one[] = {1},
				big[] = {1, 0, 0, 0, 0, 0, 0, 0, 1},
				frac[] = {1234, 5678},
				pi[] = {3, 1415, 9265, 3589},
				tiny[] = {100},
				trail0[] = {1, 0},
				lead0[] = {0, 1},
				d12345[] = {1, 2345, 6789};

	/* as numeric_send writes them (checked against PostgreSQL 15) */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 0, 0, 0, NULL)); /* 0 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 0, 3, 0, NULL)); /* 0.000 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 0, 0, 1, one));	/* 1 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_NEG, 0, 2, 1, one));	/* -1.00 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, -8, 30, 1, tiny));	/* 1e-30 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 1, 6, 3, d12345));	/* 12345.678900 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, -1, 8, 2, frac));	/* 0.12345678 */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_NEG, 0, 12, 4, pi));
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 1000, 0, 9, big));	/* huge */
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_NEG, 8, 0, 9, big));
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, -2000, 8004, 1, one));
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_NAN, 0, 0, 0, NULL));
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_PINF, 0, 32, 0, NULL));
	ONE(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_NINF, 0, 32, 0, NULL));
	/* not numeric_send's form: the text cannot say it */
	ONE_LOSSY(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_PINF, 0, 0, 0, NULL));
	ONE_LOSSY(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_NEG, 0, 0, 0, NULL));	/* -0 */
	ONE_LOSSY(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 1, 0, 2, trail0));
	ONE_LOSSY(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 1, 0, 2, lead0));
	ONE_LOSSY(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, -1, 2, 2, frac));	/* digits past dscale */
	ONE_LOSSY(RP_ENC_NUMERIC, put_num(v, RP_NUMERIC_POS, 5, 0, 0, NULL));
}

END_TEST

static void
put_s(RpBuf *v, const char *s, size_t n)
{
	rp_buf_put_str(v, s, n);
}

START_TEST(strings_and_bytes)
{
	static const char esc[] = "a\"b\\c/d\b\f\n\r\t\x01\x1f\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf";
	static const char nul[] = "x\0y";
	unsigned char all[256];
	uint8_t		encs[] = {RP_ENC_TEXT, RP_ENC_STRING, RP_ENC_ENUM};

	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char) i;
	for (size_t e = 0; e < sizeof(encs); e++)
	{
		ONE(encs[e], put_s(v, "", 0));
		ONE(encs[e], put_s(v, esc, sizeof(esc) - 1));
		ONE(encs[e], put_s(v, nul, 3));
		ONE_LOSSY(encs[e], put_s(v, "\xff", 1));	/* not UTF-8: written as
													 * U+FFFD */
		ONE_LOSSY(encs[e], put_s(v, "\xed\xa0\x80", 3));	/* a surrogate */
	}
	ONE(RP_ENC_BYTEA, put_s(v, "", 0));
	ONE(RP_ENC_BYTEA, put_s(v, "a", 1));
	ONE(RP_ENC_BYTEA, put_s(v, "ab", 2));
	ONE(RP_ENC_BYTEA, put_s(v, "abc", 3));
	ONE(RP_ENC_BYTEA, put_s(v, (const char *) all, 256));
	/* values past the renderer's slice (written piece by piece by the sinks) */
	{
		RpBuf		big;

		rp_buf_init(&big, 300000);
		for (int i = 0; big.len < 3 * RP_RENDER_SLICE; i++)
			rp_buf_put_text(&big, i % 7 ? "ab\"\xc3\xa9\n" : "\xf0\x9f\x98\x80\\");
		ONE(RP_ENC_STRING, put_s(v, big.data, big.len));
		ONE(RP_ENC_JSONB, (rp_buf_put_u32(v, (uint32_t) (big.len + 2)), rp_buf_put_char(v, '['),
						   memset(big.data, '1', big.len), (void) 0,
						   rp_buf_put_bytes(v, big.data, big.len), rp_buf_put_char(v, ']')));
		for (size_t i = 0; i < big.len; i++)
			big.data[i] = (char) (i * 131);
		ONE(RP_ENC_BYTEA, put_s(v, big.data, big.len));
		rp_buf_free(&big);
	}
	ONE(RP_ENC_UUID, rp_buf_put_bytes(v, all, 16));
	ONE(RP_ENC_UUID, rp_buf_put_bytes(v, all + 240, 16));
}

END_TEST

START_TEST(json_values)
{
	uint8_t		encs[] = {RP_ENC_JSON, RP_ENC_JSONB};

	for (size_t e = 0; e < sizeof(encs); e++)
	{
		ONE(encs[e], rp_buf_put_cstr(v, "{}"));
		ONE(encs[e], rp_buf_put_cstr(v, "{\"a\": [1, 2.5e3, \"\\n\\u0000\"], \"b\": {\"c\": null}}"));
		ONE(encs[e], rp_buf_put_cstr(v, "\"x\""));
		ONE(encs[e], rp_buf_put_cstr(v, "-0"));
		ONE(encs[e], rp_buf_put_cstr(v, "true"));
		ONE(encs[e], rp_buf_put_cstr(v, "[1,\t2]"));
		/* what the renderer changes or the reader cannot tell apart */
		ONE_LOSSY(encs[e], rp_buf_put_cstr(v, "{\"a\":\n1}"));
		ONE_LOSSY(encs[e], rp_buf_put_cstr(v, "[1,\r2]"));
		ONE_LOSSY(encs[e], rp_buf_put_cstr(v, "null"));
		ONE_LOSSY(encs[e], rp_buf_put_cstr(v, " {}"));
		ONE_LOSSY(encs[e], rp_buf_put_cstr(v, "{}\t"));
	}
}

END_TEST

static void
put_ts(RpBuf *v, int64_t w)
{
	rp_buf_put_u64(v, (uint64_t) w);
}

static void
put_timetz(RpBuf *v, int64_t us, int32_t off)
{
	rp_buf_put_u64(v, (uint64_t) us);
	rp_buf_put_u32(v, (uint32_t) off);
}

static void
put_interval(RpBuf *v, int64_t us, int32_t days, int32_t months)
{
	rp_buf_put_u64(v, (uint64_t) us);
	rp_buf_put_u32(v, (uint32_t) days);
	rp_buf_put_u32(v, (uint32_t) months);
}

START_TEST(dates_and_times)
{
	uint8_t		ts[] = {RP_ENC_TIMESTAMP, RP_ENC_TIMESTAMPTZ};

	ONE(RP_ENC_DATE, rp_buf_put_u32(v, 0));
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) RP_DATE_NEG_INF));
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) RP_DATE_POS_INF));
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) (RP_PG_DATE_MIN + RP_PG_EPOCH_DAYS)));	/* 4714-11-24 BC */
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) (RP_PG_DATE_MAX + RP_PG_EPOCH_DAYS)));	/* 5874897-12-31 */
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) -719528));	/* 0000-01-01: 1 BC */
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) -719529));	/* 2 BC */
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) 2932897));	/* 10000-01-01 */
	ONE(RP_ENC_DATE, rp_buf_put_u32(v, (uint32_t) 11016));	/* 2000-02-29 */
	ONE(RP_ENC_TIME, rp_buf_put_u64(v, 0));
	ONE(RP_ENC_TIME, rp_buf_put_u64(v, 1));
	ONE(RP_ENC_TIME, rp_buf_put_u64(v, UINT64_C(86399999999)));
	ONE(RP_ENC_TIME, rp_buf_put_u64(v, UINT64_C(86400000000))); /* 24:00:00 */
	ONE_LOSSY(RP_ENC_TIME, rp_buf_put_u64(v, (uint64_t) -1));
	ONE_LOSSY(RP_ENC_TIME, rp_buf_put_u64(v, UINT64_C(86400000001)));
	ONE(RP_ENC_TIMETZ, put_timetz(v, 0, 0));
	ONE(RP_ENC_TIMETZ, put_timetz(v, 45296789012, 19800));	/* +05:30 */
	ONE(RP_ENC_TIMETZ, put_timetz(v, 1, -(15 * 3600 + 59 * 60 + 59)));
	ONE(RP_ENC_TIMETZ, put_timetz(v, UINT64_C(86400000000), 15 * 3600 + 59 * 60 + 59));
	ONE(RP_ENC_TIMETZ, put_timetz(v, 5, -30));	/* -00:00:30 */
	ONE(RP_ENC_TIMETZ, put_timetz(v, 5, INT32_MIN));
	ONE(RP_ENC_TIMETZ, put_timetz(v, 5, INT32_MAX));
	for (size_t e = 0; e < sizeof(ts); e++)
	{
		ONE(ts[e], put_ts(v, 0));
		ONE(ts[e], put_ts(v, -1));
		ONE(ts[e], put_ts(v, 1700000000123456));
		ONE(ts[e], put_ts(v, RP_TS_NEG_INF));
		ONE(ts[e], put_ts(v, RP_TS_POS_INF));
		ONE(ts[e], put_ts(v, RP_TS_WIRE_MIN));	/* 4714-11-24 00:00 BC */
		ONE(ts[e], put_ts(v, RP_TS_WIRE_MIN + 1));
		ONE(ts[e], put_ts(v, RP_TS_POS_INF - 1));	/* the last of the 1970
													 * range */
		ONE(ts[e], put_ts(v, RP_TS_EXT_BASE));	/* the first extended */
		ONE(ts[e], put_ts(v, RP_TS_EXT_BASE + RP_TS_EXT_MAX_K));	/* 294276-12-31
																	 * 23:59:59.999999 */
		ONE(ts[e], put_ts(v, INT64_C(-62135596800000000))); /* 0001-01-01 */
		ONE(ts[e], put_ts(v, INT64_C(-62135596800000001))); /* 1 BC */
		ONE(ts[e], put_ts(v, INT64_C(253402300800000000))); /* 10000-01-01 */
	}
	ONE(RP_ENC_INTERVAL, put_interval(v, 0, 0, 0));
	ONE(RP_ENC_INTERVAL, put_interval(v, INT64_MIN, INT32_MIN, INT32_MIN));
	ONE(RP_ENC_INTERVAL, put_interval(v, INT64_MAX, INT32_MAX, INT32_MAX));
	ONE(RP_ENC_INTERVAL, put_interval(v, -1, 7, -14));
}

END_TEST

START_TEST(containers)
{
	int			dims[] = {2},
				lbs[] = {1};

	/* any value of an array, composite or range column: not lossless, refused */
	ONE_LOSSY(RP_ENC_ARRAY, (rp_enc_array_header(v, RP_ENC_INT4, 23, 1, dims, lbs),
							 rp_enc_datum_kind(v, RP_DATUM_VALUE), rp_buf_put_u32(v, 1),
							 rp_enc_datum_kind(v, RP_DATUM_NULL)));
	ONE_LOSSY(RP_ENC_ARRAY, rp_enc_array_header(v, RP_ENC_INT4, 23, 0, NULL, NULL));
	ONE_LOSSY(RP_ENC_COMPOSITE, (rp_buf_put_u16(v, 1), ct_put_field(v, "f", 23, RP_ENC_INT4),
								 rp_enc_datum_kind(v, RP_DATUM_VALUE), rp_buf_put_u32(v, 5)));
	ONE_LOSSY(RP_ENC_RANGE, ct_put_range(v, RP_RANGE_EMPTY, 23, RP_ENC_INT4));
}

END_TEST

/* ---- tuple kinds, record kinds -------------------------------------------- */

/* The relation of the kind tests: id int4 (key), a text, b int8, c json. */
static const CtCol kind_cols[] = {
	{"id", RP_ENC_INT4, 23, "integer", -1, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL},
	{"a \"q\"", RP_ENC_STRING, 25, "text", -1, 0},
	{"b", RP_ENC_INT8, 20, "bigint", -1, RP_COL_GENERATED},
	{"c", RP_ENC_ARRAY, 1007, "integer[]", -1, 0},
};

static void
kind_datum(RpBuf *r, int col, char kind)
{
	rp_enc_datum_kind(r, kind);
	if (kind != RP_DATUM_VALUE)
		return;
	if (col == 0)
		rp_buf_put_u32(r, 7);
	else if (col == 1)
		rp_buf_put_cstr(r, CT_CANARY);
	else if (col == 2)
		rp_buf_put_u64(r, UINT64_C(1) << 40);
	else
	{
		int			dims[] = {1},
					lbs[] = {1};

		rp_enc_array_header(r, RP_ENC_INT4, 23, 1, dims, lbs);
		rp_enc_datum_kind(r, RP_DATUM_VALUE);
		rp_buf_put_u32(r, 3);
	}
}

/* A change: kinds of old (NULL: none) and new (NULL: none), 4 columns each. */
static bool
kind_case(char tag, uint8_t flags, const char *old, const char *new)
{
	RpBuf		r;
	size_t		at;
	bool		lossless;

	rp_buf_init(&r, 64);
	at = rp_enc_change_start(&r, tag, JW_RELID, flags, 0);
	if (old)
	{
		rp_enc_tuple_start(&r, 4);
		for (int i = 0; i < 4; i++)
			kind_datum(&r, i, old[i]);
	}
	if (new)
	{
		rp_enc_tuple_start(&r, 4);
		for (int i = 0; i < 4; i++)
			kind_datum(&r, i, new[i]);
	}
	rp_buf_end_record(&r, at);
	lossless = jw_round_trip(4, kind_cols, &r);
	rp_buf_free(&r);
	return lossless;
}

START_TEST(tuple_kinds)
{
	ck_assert(kind_case(RP_TAG_INSERT, 0, NULL, "vvvn"));
	ck_assert(kind_case(RP_TAG_INSERT, 0, NULL, "nnnn"));
	ck_assert(kind_case(RP_TAG_INSERT, RP_CHANGE_NO_IDENTITY, NULL, "vnvn"));
	ck_assert(kind_case(RP_TAG_UPDATE, 0, NULL, "vuun"));
	ck_assert(kind_case(RP_TAG_UPDATE, 0, NULL, "uuuu"));
	ck_assert(kind_case(RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, "vkkk", "vvun"));
	ck_assert(kind_case(RP_TAG_UPDATE, RP_CHANGE_OLD_KEY, "nkkk", "vvvn"));
	ck_assert(kind_case(RP_TAG_UPDATE, RP_CHANGE_OLD_FULL, "vnvn", "vvvn"));
	ck_assert(kind_case(RP_TAG_UPDATE, RP_CHANGE_OLD_FULL, "vuun", "vuvn"));
	ck_assert(kind_case(RP_TAG_UPDATE, RP_CHANGE_NO_IDENTITY, NULL, "vvvn"));
	ck_assert(kind_case(RP_TAG_DELETE, RP_CHANGE_OLD_KEY, "vkkk", NULL));
	ck_assert(kind_case(RP_TAG_DELETE, RP_CHANGE_OLD_FULL, "vvvn", NULL));
	ck_assert(kind_case(RP_TAG_DELETE, RP_CHANGE_NO_IDENTITY, NULL, NULL));
	ck_assert(kind_case(RP_TAG_DELETE, 0, NULL, NULL));
	/* an array value in any tuple present: the binary record must travel */
	ck_assert(!kind_case(RP_TAG_INSERT, 0, NULL, "vvvv"));
	ck_assert(!kind_case(RP_TAG_UPDATE, RP_CHANGE_OLD_FULL, "vvvv", "vvvn"));
	ck_assert(!kind_case(RP_TAG_DELETE, RP_CHANGE_OLD_FULL, "nnnv", NULL));
}

END_TEST

/* A streamed change reads back in its non-streamed form. */
START_TEST(streamed_change)
{
	RpBuf		r,
				want;
	size_t		at;

	rp_buf_init(&r, 64);
	rp_buf_init(&want, 64);
	at = rp_enc_change_start(&r, RP_TAG_INSERT, JW_RELID, 0, 777);
	rp_enc_tuple_start(&r, 4);
	for (int i = 0; i < 4; i++)
		kind_datum(&r, i, "vvvn"[i]);
	rp_buf_end_record(&r, at);
	at = rp_enc_change_start(&want, RP_TAG_INSERT, JW_RELID, 0, 0);
	rp_enc_tuple_start(&want, 4);
	for (int i = 0; i < 4; i++)
		kind_datum(&want, i, "vvvn"[i]);
	rp_buf_end_record(&want, at);
	{
		JwCase		c;
		RpBuf		relbytes,
					out;
		char	   *json;

		rp_buf_init(&relbytes, 128);
		jw_describe(&relbytes, 4, kind_cols);
		ct_frame(&c.frame);
		rp_buf_put_bytes(&c.frame, relbytes.data, relbytes.len);
		rp_buf_put_bytes(&c.frame, r.data, r.len);
		jw_decode(&c);
		ck_assert(rp_jsonwire_lossless(&c.rec));
		json = jw_render(&c.rec);
		rp_buf_init(&out, 64);
		ck_assert_int_eq(rp_jsonwire_record(&out, c.rel, json, strlen(json)), 0);
		ck_assert_uint_eq(out.len, want.len);
		ck_assert(memcmp(out.data, want.data, want.len) == 0);
		rp_buf_free(&out);
		rp_buf_free(&relbytes);
		jw_case_free(&c);
	}
	rp_buf_free(&r);
	rp_buf_free(&want);
}

END_TEST

/* A message alone in a frame (no relation needed): through the oracle's parts. */
static void
message_case(bool transactional, const char *prefix, const char *content, size_t len)
{
	RpBuf		r,
				out;
	RpDecoder	dec;
	RpRecord	rec;
	char	   *json;

	rp_buf_init(&r, 64);
	rp_enc_message(&r, transactional, 0, 0x1234ABCD5678, prefix, content, len);
	{
		RpBuf		f;

		ct_frame(&f);
		rp_buf_put_bytes(&f, r.data, r.len);
		rp_decoder_init(&dec);
		ck_assert(rp_decoder_frame(&dec, f.data, f.len));
		ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
		ck_assert(rp_jsonwire_lossless(&rec));
		json = jw_render(&rec);
		if (memchr(content, '\0', len) || !rp_utf8_valid((const unsigned char *) content, len))
			ck_assert(strstr(json, "\"content_base64\":") != NULL);
		else
			ck_assert(strstr(json, "\"content\":") != NULL);
		rp_buf_init(&out, 64);
		ck_assert_msg(rp_jsonwire_record(&out, NULL, json, strlen(json)) == 0, "%s", rp_error());
		ck_assert_uint_eq(out.len, r.len);
		ck_assert(memcmp(out.data, r.data, r.len) == 0);
		rp_buf_free(&out);
		rp_decoder_free(&dec);
		rp_buf_free(&f);
	}
	rp_buf_free(&r);
}

START_TEST(messages)
{
	message_case(true, "app", "hello \"world\"\n", 14);
	message_case(false, "", "", 0);
	message_case(false, "pre\xc3\xa9", "\xe2\x82\xac", 3);
	message_case(true, "bin", "a\0b", 3);
	message_case(false, "bin", "\xff\xfe\x00\x01", 4);
	message_case(true, "b", "\x80", 1);
}

END_TEST

/* Truncates and the transaction records: no JSON of theirs reads back. */
START_TEST(other_records_not_lossless)
{
	RpBuf		f;
	RpDecoder	dec;
	RpRecord	rec;
	uint32_t	relids[] = {JW_RELID};
	CtCol		col = jw_col("v", RP_ENC_INT4);

	ct_frame(&f);
	jw_describe(&f, 1, &col);
	rp_enc_begin(&f, 7, 0x100, 1);
	rp_enc_truncate(&f, RP_TRUNCATE_CASCADE, 0, 1, relids);
	rp_enc_commit(&f, 0x100, 0x128, 1);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, f.data, f.len));
	for (int i = 0; i < 4; i++)
	{
		ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
		ck_assert(!rp_jsonwire_lossless(&rec));
	}
	/* and the reader refuses a truncate's JSON */
	{
		const char *t = "{\"kind\":\"truncate\",\"relations\":[{\"schema\":\"s\",\"table\":\"t\"}],\"cascade\":true,\"restart_identity\":false}";
		RpBuf		out;

		rp_buf_init(&out, 16);
		ck_assert_int_eq(rp_jsonwire_record(&out, NULL, t, strlen(t)), -1);
		ck_assert_uint_eq(out.len, 0);
		rp_buf_free(&out);
	}
	rp_decoder_free(&dec);
	rp_buf_free(&f);
}

END_TEST

/* ---- random rows ----------------------------------------------------------- */

static uint64_t jw_seed_state;

static uint64_t
rnd(void)
{
	uint64_t	x = jw_seed_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return jw_seed_state = x;
}

static uint64_t
rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static int64_t
rnd_between(int64_t lo, int64_t hi)
{
	/* unsigned: the span of the whole timestamp range overflows int64 */
	return (int64_t) ((uint64_t) lo + rnd_below((uint64_t) hi - (uint64_t) lo + 1));
}

static void
rnd_utf8(RpBuf *s, int maxchars)
{
	int			n = (int) rnd_below((uint64_t) maxchars + 1);

	for (int i = 0; i < n; i++)
	{
		uint32_t	cp;
		unsigned char b[4];

		switch (rnd_below(5))
		{
			case 0:
				cp = (uint32_t) rnd_below(0x20);	/* controls, NUL too */
				break;
			case 1:
				cp = "\"\\/ az"[rnd_below(6)];
				break;
			case 2:
				cp = (uint32_t) rnd_between(0x80, 0x7ff);
				break;
			case 3:
				do
					cp = (uint32_t) rnd_between(0x800, 0xffff);
				while (cp >= 0xd800 && cp <= 0xdfff);
				break;
			default:
				cp = (uint32_t) rnd_between(0x10000, 0x10ffff);
				break;
		}
		if (cp < 0x80)
			rp_buf_put_u8(s, (uint8_t) cp);
		else if (cp < 0x800)
		{
			b[0] = (unsigned char) (0xC0 | (cp >> 6));
			b[1] = (unsigned char) (0x80 | (cp & 0x3F));
			rp_buf_put_bytes(s, b, 2);
		}
		else if (cp < 0x10000)
		{
			b[0] = (unsigned char) (0xE0 | (cp >> 12));
			b[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3F));
			b[2] = (unsigned char) (0x80 | (cp & 0x3F));
			rp_buf_put_bytes(s, b, 3);
		}
		else
		{
			b[0] = (unsigned char) (0xF0 | (cp >> 18));
			b[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3F));
			b[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3F));
			b[3] = (unsigned char) (0x80 | (cp & 0x3F));
			rp_buf_put_bytes(s, b, 4);
		}
	}
}

/* A canonical (numeric_send) numeric. */
static void
rnd_numeric(RpBuf *v)
{
	uint16_t	d[12];
	int			n = (int) rnd_below(8);
	int16_t		weight = 0;
	int			dscale = 0;
	uint64_t	k = rnd_below(20);

	if (k == 0)
	{
		ct_put_numeric(v, RP_NUMERIC_NAN, 0, 0, 0, NULL);
		return;
	}
	if (k == 1)
	{
		ct_put_numeric(v, rnd_below(2) ? RP_NUMERIC_PINF : RP_NUMERIC_NINF, 0, 32, 0, NULL);
		return;
	}
	for (int i = 0; i < n; i++)
		d[i] = (uint16_t) rnd_below(10000);
	if (n > 0)
	{
		if (d[0] == 0)
			d[0] = 1;
		if (d[n - 1] == 0)
			d[n - 1] = 7;
		weight = (int16_t) rnd_between(-12, 12);
		if (weight - (n - 1) < 0)
		{
			int			last = d[n - 1];

			dscale = -(weight - (n - 1)) * 4;
			while (last % 10 == 0)
			{
				last /= 10;
				dscale--;
			}
		}
	}
	dscale += (int) rnd_below(4);
	ct_put_numeric(v, n > 0 && rnd_below(2) ? RP_NUMERIC_NEG : RP_NUMERIC_POS,
				   weight, (uint16_t) dscale, n, d);
}

static const char *const jw_json_texts[] = {
	"{}", "[]", "0", "-1.5e-7", "\"\"", "\"\\u00e9\\ud83d\\ude00\"", "false",
	"{\"k\": [null, {\"x\": \"y\"}], \"n\": 123456789012345678901234567890}",
	"[[[[[]]]]]", "\"a b\"",
};

/* The encodings of the random relation, one column each. */
static const uint8_t rnd_encs[] = {
	RP_ENC_INT4, RP_ENC_BOOL, RP_ENC_INT2, RP_ENC_INT8, RP_ENC_OID, RP_ENC_FLOAT4, RP_ENC_FLOAT8,
	RP_ENC_NUMERIC, RP_ENC_TEXT, RP_ENC_STRING, RP_ENC_ENUM, RP_ENC_BYTEA, RP_ENC_UUID,
	RP_ENC_DATE, RP_ENC_TIME, RP_ENC_TIMETZ, RP_ENC_TIMESTAMP, RP_ENC_TIMESTAMPTZ,
	RP_ENC_INTERVAL, RP_ENC_JSON, RP_ENC_JSONB,
};

#define RND_NCOLS ((int) sizeof(rnd_encs))

static void
rnd_value(RpBuf *v, uint8_t enc)
{
	switch (enc)
	{
		case RP_ENC_BOOL:
			rp_buf_put_u8(v, (uint8_t) rnd_below(2));
			break;
		case RP_ENC_INT2:
			rp_buf_put_u16(v, (uint16_t) rnd());
			break;
		case RP_ENC_INT4:
		case RP_ENC_OID:
			rp_buf_put_u32(v, (uint32_t) rnd());
			break;
		case RP_ENC_INT8:
			rp_buf_put_u64(v, rnd() >> rnd_below(64));
			break;
		case RP_ENC_FLOAT4:
			{
				uint32_t	bits = (uint32_t) rnd();
				float		f;

				memcpy(&f, &bits, 4);
				if (isnan(f))
					bits = 0x7fc00000u;
				rp_buf_put_u32(v, bits);
				break;
			}
		case RP_ENC_FLOAT8:
			{
				uint64_t	bits = rnd();
				double		d;

				if (rnd_below(8) == 0)
					bits &= UINT64_C(0x800fffffffffffff);	/* denormals, zeros */
				memcpy(&d, &bits, 8);
				if (isnan(d))
					bits = UINT64_C(0x7ff8000000000000);
				rp_buf_put_u64(v, bits);
				break;
			}
		case RP_ENC_NUMERIC:
			rnd_numeric(v);
			break;
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_ENUM:
			{
				RpBuf		s;

				rp_buf_init(&s, 32);
				rnd_utf8(&s, 12);
				rp_buf_put_str(v, s.data, s.len);
				rp_buf_free(&s);
				break;
			}
		case RP_ENC_BYTEA:
			{
				int			n = (int) rnd_below(40);

				rp_buf_put_u32(v, (uint32_t) n);
				for (int i = 0; i < n; i++)
					rp_buf_put_u8(v, (uint8_t) rnd());
				break;
			}
		case RP_ENC_UUID:
			rp_buf_put_u64(v, rnd());
			rp_buf_put_u64(v, rnd());
			break;
		case RP_ENC_DATE:
			if (rnd_below(30) == 0)
				rp_buf_put_u32(v, (uint32_t) (rnd_below(2) ? RP_DATE_NEG_INF : RP_DATE_POS_INF));
			else
				rp_buf_put_u32(v, (uint32_t) rnd_between(RP_PG_DATE_MIN + RP_PG_EPOCH_DAYS,
														 RP_PG_DATE_MAX + RP_PG_EPOCH_DAYS));
			break;
		case RP_ENC_TIME:
			rp_buf_put_u64(v, (uint64_t) rnd_between(0, RP_USECS_PER_DAY));
			break;
		case RP_ENC_TIMETZ:
			rp_buf_put_u64(v, (uint64_t) rnd_between(0, RP_USECS_PER_DAY));
			rp_buf_put_u32(v, (uint32_t) rnd_between(-57599, 57599));
			break;
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			switch (rnd_below(6))
			{
				case 0:
					put_ts(v, rnd_below(2) ? RP_TS_NEG_INF : RP_TS_POS_INF);
					break;
				case 1:
					put_ts(v, RP_TS_EXT_BASE + rnd_between(0, RP_TS_EXT_MAX_K));
					break;
				case 2:
					put_ts(v, rnd_between(-INT64_C(10000000000000000), INT64_C(10000000000000000)));
					break;
				default:
					put_ts(v, rnd_between(RP_TS_WIRE_MIN, RP_TS_POS_INF - 1));
					break;
			}
			break;
		case RP_ENC_INTERVAL:
			put_interval(v, (int64_t) rnd(), (int32_t) rnd(), (int32_t) rnd());
			break;
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			rp_buf_put_cstr(v, jw_json_texts[rnd_below(sizeof(jw_json_texts) / sizeof(jw_json_texts[0]))]);
			break;
	}
}

/* A random tuple; kinds allowed: 'v' 'n' and, by tuple, 'u' or 'k'. */
static void
rnd_tuple(RpBuf *r, char other)
{
	rp_enc_tuple_start(r, RND_NCOLS);
	for (int i = 0; i < RND_NCOLS; i++)
	{
		uint64_t	k = rnd_below(10);

		if (k == 0)
			rp_enc_datum_kind(r, RP_DATUM_NULL);
		else if (k == 1 && other && !(other == RP_DATUM_NOT_IN_KEY && i == 0))
			rp_enc_datum_kind(r, other);
		else
		{
			rp_enc_datum_kind(r, RP_DATUM_VALUE);
			rnd_value(r, rnd_encs[i]);
		}
	}
}

START_TEST(random_rows)
{
	CtCol		cols[RND_NCOLS];
	char		names[RND_NCOLS][16];

	jw_seed_state = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t) _i;
	for (int i = 0; i < RND_NCOLS; i++)
	{
		snprintf(names[i], sizeof(names[i]), i == 3 ? "c\\%d\xc3\xa9" : "c%d", i);
		cols[i] = jw_col(names[i], rnd_encs[i]);
		if (i == 0)
			cols[i].flags = RP_COL_PRIMARY_KEY | RP_COL_IDENTITY;
	}
	for (int round = 0; round < 1500; round++)
	{
		RpBuf		r;
		size_t		at;
		uint64_t	kind = rnd_below(6);

		rp_buf_init(&r, 512);
		switch (kind)
		{
			case 0:
			case 1:
				at = rp_enc_change_start(&r, RP_TAG_INSERT, JW_RELID, 0, 0);
				rnd_tuple(&r, 0);
				break;
			case 2:
				at = rp_enc_change_start(&r, RP_TAG_UPDATE, JW_RELID, 0, 0);
				rnd_tuple(&r, RP_DATUM_UNCHANGED);
				break;
			case 3:
				at = rp_enc_change_start(&r, RP_TAG_UPDATE, JW_RELID, RP_CHANGE_OLD_KEY, 0);
				rnd_tuple(&r, RP_DATUM_NOT_IN_KEY);
				rnd_tuple(&r, RP_DATUM_UNCHANGED);
				break;
			case 4:
				at = rp_enc_change_start(&r, RP_TAG_UPDATE, JW_RELID, RP_CHANGE_OLD_FULL, 0);
				rnd_tuple(&r, RP_DATUM_UNCHANGED);
				rnd_tuple(&r, RP_DATUM_UNCHANGED);
				break;
			default:
				at = rp_enc_change_start(&r, RP_TAG_DELETE, JW_RELID, RP_CHANGE_OLD_KEY, 0);
				rnd_tuple(&r, RP_DATUM_NOT_IN_KEY);
				break;
		}
		rp_buf_end_record(&r, at);
		/* every value generated is one the JSON carries exactly */
		ck_assert_msg(jw_round_trip(RND_NCOLS, cols, &r), "round %d not lossless", round);
		rp_buf_free(&r);
	}
}

END_TEST

/* ---- malformed JSON ---------------------------------------------------------- */

/* The relation of the malformed tests, as rp_jsonwire_relation reads it. */
static RpRelation *
bad_rel(void)
{
	static const CtCol cols[] = {
		{"id", RP_ENC_INT4, 23, "integer", -1, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY},
		{"s", RP_ENC_INT2, 21, "smallint", -1, 0},
		{"f", RP_ENC_FLOAT8, 701, "double precision", -1, 0},
		{"n", RP_ENC_NUMERIC, 1700, "numeric", -1, 0},
		{"b", RP_ENC_BYTEA, 17, "bytea", -1, 0},
		{"d", RP_ENC_DATE, 1082, "date", -1, 0},
		{"ts", RP_ENC_TIMESTAMPTZ, 1184, "timestamptz", -1, 0},
		{"t", RP_ENC_TIME, 1083, "time", -1, 0},
		{"u", RP_ENC_UUID, 2950, "uuid", -1, 0},
		{"i", RP_ENC_INTERVAL, 1186, "interval", -1, 0},
		{"o", RP_ENC_OID, 26, "oid", -1, 0},
		{"a", RP_ENC_ARRAY, 1007, "integer[]", -1, 0},
		{"tz", RP_ENC_TIMETZ, 1266, "timetz", -1, 0},
		{"x", RP_ENC_TEXT, 25, "text", -1, 0},
	};
	RpBuf		f;
	RpDecoder	dec;
	RpRecord	rec;
	RpRelation *r;

	ct_frame(&f);
	ct_relation(&f, JW_RELID, "s", "t", RP_IDENTITY_DEFAULT, (int) (sizeof(cols) / sizeof(cols[0])), cols);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, f.data, f.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	r = rp_relation_copy(rec.u.relation.rel);
	rp_decoder_free(&dec);
	rp_buf_free(&f);
	return r;
}

/* A valid value for every column of bad_rel (the array's is null). */
static const char *const bad_defaults[] = {
	"\"id\":1", "\"s\":-32768", "\"f\":\"-Infinity\"", "\"n\":\"-0.50\"", "\"b\":\"AP8=\"",
	"\"d\":\"-4713-11-24\"", "\"ts\":\"+294276-12-31T23:59:59.999999Z\"", "\"t\":\"24:00:00\"",
	"\"u\":\"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11\"",
	"\"i\":{\"days\":1,\"months\":-2,\"microseconds\":3}", "\"o\":4294967295", "\"a\":null",
	"\"tz\":\"00:00:00.5-15:59:59\"", "\"x\":\"\"",
};

/*
 * An insert of every column's valid value but member's column, which has
 * member (a "name":value run) instead: it must be refused, out left alone,
 * and the message must name the column and the relation and hold no canary.
 * NULL: the valid insert, which must read.
 */
static void
refuse(const RpRelation *rel, const char *member, const char *col)
{
	RpBuf		json,
				out;
	size_t		keylen = member ? strcspn(member, ":") : 0;
	int			rc;

	rp_buf_init(&json, 512);
	rp_buf_put_text(&json, "{\"kind\":\"insert\",\"commit_lsn\":\"0/1\",\"xid\":5,\"schema\":\"s\",\"table\":\"t\",\"new\":{");
	for (size_t i = 0; i < sizeof(bad_defaults) / sizeof(bad_defaults[0]); i++)
	{
		const char *d = bad_defaults[i];

		if (i)
			rp_buf_put_char(&json, ',');
		if (member && strncmp(d, member, keylen) == 0 && d[keylen] == ':')
			rp_buf_put_text(&json, member);
		else
			rp_buf_put_text(&json, d);
	}
	rp_buf_put_text(&json, "}}");
	rp_buf_init(&out, 16);
	rp_error_clear();
	rc = rp_jsonwire_record(&out, rel, json.data, json.len);
	if (member == NULL)
	{
		ck_assert_msg(rc == 0, "%s", rp_error());
		rp_buf_free(&out);
		rp_buf_free(&json);
		return;
	}
	ck_assert_msg(rc == -1, "accepted: %s", ct_cstr(&json));
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	ck_assert_msg(strstr(rp_error(), "CANARY") == NULL, "value in: %s", rp_error());
	ck_assert_msg(strstr(rp_error(), "7f3a") == NULL, "value in: %s", rp_error());
	if (col)
	{
		char		quoted[64];

		snprintf(quoted, sizeof(quoted), "\"%s\"", col);
		ck_assert_msg(strstr(rp_error(), quoted) != NULL, "%s: column not named: %s",
					  ct_cstr(&json), rp_error());
		ck_assert_msg(strstr(rp_error(), "s.t") != NULL, "relation not named: %s", rp_error());
	}
	rp_buf_free(&out);
	rp_buf_free(&json);
}

/* A whole-record JSON text that must be refused. */
static void
refuse_record(const RpRelation *rel, const char *json)
{
	RpBuf		out;

	rp_buf_init(&out, 16);
	rp_buf_put_bytes(&out, "keep", 4);
	ck_assert_msg(rp_jsonwire_record(&out, rel, json, strlen(json)) == -1, "accepted: %s", json);
	ck_assert_uint_eq(out.len, 4);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	ck_assert(strstr(rp_error(), "CANARY") == NULL);
	rp_buf_free(&out);
}

START_TEST(malformed_values)
{
	RpRelation *rel = bad_rel();

	/* the base line holds: every column given, it reads */
	refuse(rel, NULL, NULL);

	/* wrong JSON types */
	refuse(rel, "\"s\":\"" CT_CANARY "\"", "s");
	refuse(rel, "\"s\":true", "s");
	refuse(rel, "\"f\":\"" CT_CANARY "\"", "f");
	refuse(rel, "\"f\":[1]", "f");
	refuse(rel, "\"n\":1.5", "n");
	refuse(rel, "\"x\":5", "x");
	refuse(rel, "\"i\":\"1 day\"", "i");
	/* numbers out of range */
	refuse(rel, "\"s\":32768", "s");
	refuse(rel, "\"s\":-32769", "s");
	refuse(rel, "\"s\":1.0", "s");
	refuse(rel, "\"id\":2147483648", "id");
	refuse(rel, "\"o\":-1", "o");
	refuse(rel, "\"o\":4294967296", "o");
	refuse(rel, "\"f\":1e400", "f");
	refuse(rel, "\"i\":{\"days\":2147483648,\"months\":0,\"microseconds\":0}", "i");
	refuse(rel, "\"i\":{\"days\":1,\"months\":0}", "i");
	refuse(rel, "\"i\":{\"days\":1,\"months\":0,\"microseconds\":0,\"x\":1}", "i");
	refuse(rel, "\"i\":{\"days\":1,\"months\":0,\"microseconds\":9223372036854775808}", "i");
	/* numerics */
	refuse(rel, "\"n\":\"" CT_CANARY "\"", "n");
	refuse(rel, "\"n\":\"1e5\"", "n");
	refuse(rel, "\"n\":\"01\"", "n");
	refuse(rel, "\"n\":\"1.\"", "n");
	refuse(rel, "\"n\":\".5\"", "n");
	refuse(rel, "\"n\":\"+1\"", "n");
	refuse(rel, "\"n\":\"nan\"", "n");
	/* base64 */
	refuse(rel, "\"b\":\"" CT_CANARY "\"", "b");
	refuse(rel, "\"b\":\"AP8\"", "b");
	refuse(rel, "\"b\":\"AP9=\"", "b"); /* unused bits set */
	refuse(rel, "\"b\":\"A===\"", "b");
	refuse(rel, "\"b\":\"AP==AP8=\"", "b");
	refuse(rel, "\"b\":\"A*8=\"", "b");
	/* dates, times */
	refuse(rel, "\"d\":\"" CT_CANARY "\"", "d");
	refuse(rel, "\"d\":\"2023-02-29\"", "d");
	refuse(rel, "\"d\":\"2023-13-01\"", "d");
	refuse(rel, "\"d\":\"2023-1-01\"", "d");
	refuse(rel, "\"d\":\"-4713-11-23\"", "d");	/* before PostgreSQL's first
												 * date */
	refuse(rel, "\"d\":\"5874898-01-01\"", "d");
	refuse(rel, "\"d\":\"2023-01-01x\"", "d");
	refuse(rel, "\"d\":\"Infinity\"", "d");
	refuse(rel, "\"ts\":\"2023-01-01T00:00:00\"", "ts");	/* no Z */
	refuse(rel, "\"ts\":\"2023-01-01 00:00:00Z\"", "ts");
	refuse(rel, "\"ts\":\"2023-01-01T24:00:00Z\"", "ts");
	refuse(rel, "\"ts\":\"2023-01-01T00:60:00Z\"", "ts");
	refuse(rel, "\"ts\":\"2023-01-01T00:00:00.1234567Z\"", "ts");
	refuse(rel, "\"ts\":\"+294277-01-01T00:00:00Z\"", "ts");
	refuse(rel, "\"ts\":\"-4713-11-23T23:59:59.999999Z\"", "ts");
	refuse(rel, "\"ts\":\"" CT_CANARY "\"", "ts");
	refuse(rel, "\"t\":\"24:00:00.000001\"", "t");
	refuse(rel, "\"t\":\"25:00:00\"", "t");
	refuse(rel, "\"t\":\"1:00:00\"", "t");
	refuse(rel, "\"tz\":\"10:00:00\"", "tz");
	refuse(rel, "\"tz\":\"10:00:00+1:00\"", "tz");
	refuse(rel, "\"tz\":\"10:00:00+01:60\"", "tz");
	refuse(rel, "\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1\"", "u");
	refuse(rel, "\"u\":\"a0eebc99x9c0b-4ef8-bb6d-6bb9bd380a11\"", "u");
	refuse(rel, "\"u\":\"g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"", "u");
	/* containers */
	refuse(rel, "\"a\":[1,2]", "a");
	ck_assert(strstr(rp_error(), "is an array: its JSON form does not carry the element type") != NULL);
	/* tuples: missing, unknown, twice, listed twice, listed and present */
#define ALL_BUT_X "{\"kind\":\"insert\",\"schema\":\"s\",\"table\":\"t\",\"new\":{\"id\":1,\"s\":1,\"f\":1,\"n\":\"1\",\"b\":\"\",\"d\":\"infinity\",\"ts\":\"infinity\",\"t\":\"00:00:00\",\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\",\"i\":{\"days\":1,\"months\":0,\"microseconds\":0},\"o\":1,\"a\":null,\"tz\":\"00:00:00+00:00\""
	refuse_record(rel, ALL_BUT_X "}}"); /* x missing */
	ck_assert(strstr(rp_error(), "\"x\"") != NULL);
	refuse_record(rel, ALL_BUT_X ",\"x\":\"\",\"" CT_CANARY "\":1}}");
	refuse_record(rel, ALL_BUT_X ",\"x\":\"\",\"s\":2}}");
	ck_assert(strstr(rp_error(), "\"s\"") != NULL);
	refuse_record(rel, ALL_BUT_X "},\"unchanged_toast\":[\"x\",\"x\"]}");
	refuse_record(rel, ALL_BUT_X ",\"x\":\"\"},\"unchanged_toast\":[\"x\"]}");
	refuse_record(rel, ALL_BUT_X "},\"unchanged_toast\":[\"" CT_CANARY "\"]}");
	refuse_record(rel, ALL_BUT_X "},\"unchanged_toast\":[5]}");
	{
		const char *json = ALL_BUT_X "},\"unchanged_toast\":[\"x\"]}";
		RpBuf		out;

		rp_buf_init(&out, 16);
		ck_assert_msg(rp_jsonwire_record(&out, rel, json, strlen(json)) == 0, "%s", rp_error());
		rp_buf_free(&out);
	}
#undef ALL_BUT_X

	/* whole records */
	refuse_record(rel, "");
	refuse_record(rel, "[1]");
	refuse_record(rel, "{\"kind\":\"insert\",\"schema\":\"s\",\"table\":\"t\",\"new\":{\"id\":1}");
	refuse_record(rel, "{\"kind\":\"begin\",\"xid\":1}");
	refuse_record(rel, "{\"schema\":\"s\",\"table\":\"t\",\"new\":{}}");
	refuse_record(rel, "{\"kind\":\"insert\",\"schema\":\"s\",\"table\":\"other\",\"new\":{}}");
	refuse_record(rel, "{\"kind\":\"insert\",\"schema\":\"s\",\"table\":\"t\"}");
	refuse_record(rel, "{\"kind\":\"insert\",\"schema\":\"s\",\"table\":\"t\",\"key\":{},\"new\":{}}");
	refuse_record(rel, "{\"kind\":\"delete\",\"schema\":\"s\",\"table\":\"t\",\"key\":{},\"new\":{}}");
	refuse_record(rel, "{\"kind\":\"update\",\"schema\":\"s\",\"table\":\"t\",\"key\":{},\"old\":{},\"new\":{}}");
	refuse_record(rel, "{\"kind\":\"update\",\"schema\":\"s\",\"table\":\"t\",\"new\":[]}");
	refuse_record(rel, "{\"kind\":\"delete\",\"schema\":\"s\",\"table\":\"t\",\"key\":{\"id\":\"" CT_CANARY "\"}}");
	refuse_record(rel, "{\"kind\":\"delete\",\"schema\":\"s\",\"table\":\"t\",\"no_identity\":1}");
	refuse_record(rel, "{\"kind\":\"delete\",\"schema\":\"s\",\"table\":\"t\",\"kind\":\"delete\"}");
	refuse_record(NULL, "{\"kind\":\"delete\",\"schema\":\"s\",\"table\":\"t\"}");
	/* messages */
	refuse_record(NULL, "{\"kind\":\"message\",\"transactional\":true,\"lsn\":\"0/1\",\"prefix\":\"p\"}");
	refuse_record(NULL, "{\"kind\":\"message\",\"transactional\":true,\"lsn\":\"0/1\",\"prefix\":\"p\",\"content\":\"a\",\"content_base64\":\"\"}");
	refuse_record(NULL, "{\"kind\":\"message\",\"transactional\":true,\"lsn\":\"x\",\"prefix\":\"p\",\"content\":\"a\"}");
	refuse_record(NULL, "{\"kind\":\"message\",\"lsn\":\"0/1\",\"prefix\":\"p\",\"content\":\"a\"}");
	refuse_record(NULL, "{\"kind\":\"message\",\"transactional\":false,\"lsn\":\"0/1\",\"prefix\":\"p\",\"content_base64\":\"" CT_CANARY "\"}");
	refuse_record(NULL, "{\"kind\":\"message\",\"transactional\":false,\"lsn\":\"0/1\",\"prefix\":5,\"content\":\"\"}");

	/*
	 * a NUL in the prefix (PostgreSQL text has none; the wire decoder refuses
	 * it): fuzz_jsonwire's crash
	 */
	refuse_record(NULL, "{\"kind\":\"message\",\"transactional\":false,\"lsn\":\"0/1\",\"prefix\":\"a\\u0000b\",\"content\":\"\"}");
	rp_relation_free(rel);
}

END_TEST

START_TEST(malformed_relations)
{
	static const char *const bad[] = {
		"",
		"{}",
		"{\"kind\":\"insert\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[]}",
		"{\"kind\":\"relation\",\"relid\":-1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[]}",
		"{\"kind\":\"relation\",\"relid\":4294967296,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[]}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\\u0000\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[]}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"sometimes\",\"columns\":[]}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":{}}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[1]}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[{\"name\":\"a\",\"attnum\":1,\"type\":\"x\",\"type_oid\":1,\"typmod\":-1,\"encoding\":\"blob\",\"primary_key\":false,\"identity\":false,\"not_null\":false,\"generated\":false}]}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[{\"name\":\"a\",\"attnum\":32768,\"type\":\"x\",\"type_oid\":1,\"typmod\":-1,\"encoding\":\"int4\",\"primary_key\":false,\"identity\":false,\"not_null\":false,\"generated\":false}]}",
		"{\"kind\":\"relation\",\"relid\":1,\"schema\":\"s\",\"table\":\"t\",\"replica_identity\":\"default\",\"columns\":[{\"name\":\"a\",\"attnum\":1,\"type\":\"x\",\"type_oid\":1,\"typmod\":-1,\"encoding\":\"int4\",\"primary_key\":false,\"identity\":false,\"not_null\":false}]}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		rp_error_clear();
		ck_assert_msg(rp_jsonwire_relation(bad[i], strlen(bad[i])) == NULL, "accepted %zu", i);
		ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	}
}

END_TEST

/*
 * A partition root's relation (partitions=root, version 3) through its JSON:
 * kind and partition set come back, and the record written back is the
 * one decoded; a plain table's comes back without a kind (the same table).
 */
START_TEST(partition_root_relation)
{
	static const char *const bad[] = {
		"\"partition_root\":true}",
		"\"partition_root\":true,\"partition_set\":\"0badf00\"}",
		"\"partition_root\":true,\"partition_set\":\"0BADF00D\"}",
		"\"partition_root\":true,\"partition_set\":\"0badf00d0\"}",
		"\"partition_root\":true,\"partition_set\":195948557}",
		"\"partition_root\":1,\"partition_set\":\"0badf00d\"}",
		"\"partition_set\":\"0badf00d\"}",
		"\"partition_root\":false,\"partition_set\":\"0badf00d\"}",
	};
	const char *head = "{\"kind\":\"relation\",\"relid\":7,\"schema\":\"public\",\"table\":\"m\","
	"\"replica_identity\":\"default\",\"columns\":[{\"name\":\"id\",\"attnum\":1,"
	"\"type\":\"integer\",\"type_oid\":23,\"typmod\":-1,\"encoding\":\"int4\","
	"\"primary_key\":true,\"identity\":true,\"not_null\":true,\"generated\":false}],";
	RpBuf		b,
				again;
	RpDecoder	dec;
	RpRecord	rec;
	RpRelation *r;
	size_t		at;
	char		json[1024];

	ct_frame(&b);
	at = rp_enc_relation_start(&b, 7, "public", "m", RP_IDENTITY_DEFAULT, 1);
	rp_enc_relation_column(&b, 1, "id", 23, "integer", -1, RP_ENC_INT4,
						   RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL);
	rp_enc_relation_kind(&b, RP_REL_KIND_PARTITION_ROOT, 0xf00dcafe);
	rp_buf_end_record(&b, at);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	{
		char	   *text = jw_render(&rec);

		ck_assert_ptr_nonnull(strstr(text, ",\"partition_root\":true,\"partition_set\":\"f00dcafe\"}"));
		r = rp_jsonwire_relation(text, strlen(text));
	}
	ck_assert_msg(r != NULL, "%s", rp_error());
	ck_assert_uint_eq(r->kind, RP_REL_KIND_PARTITION_ROOT);
	ck_assert_uint_eq(r->partition_set, 0xf00dcafe);
	ck_assert(rp_jsonwire_relation_lossless(r));
	rp_buf_init(&again, 0);
	rp_enc_relation_record(&again, r);
	ck_assert_uint_eq(again.len, b.len - RP_FRAME_HEADER_LEN);
	ck_assert_mem_eq(again.data, b.data + RP_FRAME_HEADER_LEN, again.len);
	rp_relation_free(r);
	rp_decoder_free(&dec);

	/* a plain table: no partition members, no kind read back */
	snprintf(json, sizeof(json), "%s\"x\":0}", head);
	r = rp_jsonwire_relation(json, strlen(json));
	ck_assert_msg(r != NULL, "%s", rp_error());
	ck_assert_uint_eq(r->kind, RP_REL_KIND_NONE);
	ck_assert(!rp_relation_is_root(r));
	rp_relation_free(r);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		snprintf(json, sizeof(json), "%s%s", head, bad[i]);
		rp_error_clear();
		ck_assert_msg(rp_jsonwire_relation(json, strlen(json)) == NULL, "accepted %zu", i);
		ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
		ck_assert_ptr_nonnull(strstr(rp_error(), "partition"));
	}
	rp_buf_free(&again);
	rp_buf_free(&b);
}

END_TEST

/* Names the renderer must replace (not UTF-8): the relation is not lossless. */
START_TEST(names_not_utf8)
{
	RpBuf		f;
	RpDecoder	dec;
	RpRecord	rec;
	CtCol		col = jw_col("c\xff", RP_ENC_INT4);

	ct_frame(&f);
	ct_relation(&f, JW_RELID, "s", "t", RP_IDENTITY_DEFAULT, 1, &col);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, f.data, f.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	ck_assert(!rp_jsonwire_relation_lossless(rec.u.relation.rel));
	rp_decoder_free(&dec);
	rp_buf_free(&f);
}

END_TEST

Suite	   *
ct_suite_jsonwire(void)
{
	Suite	   *s = suite_create("jsonwire");
	TCase	   *tc = ct_tcase("values");

	tcase_add_test(tc, ints_and_bools);
	tcase_add_test(tc, floats);
	tcase_add_test(tc, numerics);
	tcase_add_test(tc, strings_and_bytes);
	tcase_add_test(tc, json_values);
	tcase_add_test(tc, dates_and_times);
	tcase_add_test(tc, containers);
	suite_add_tcase(s, tc);

	tc = ct_tcase("records");
	tcase_add_test(tc, tuple_kinds);
	tcase_add_test(tc, streamed_change);
	tcase_add_test(tc, messages);
	tcase_add_test(tc, other_records_not_lossless);
	tcase_add_test(tc, names_not_utf8);
	suite_add_tcase(s, tc);

	tc = ct_tcase("random");
	tcase_add_loop_test(tc, random_rows, 0, 4);
	suite_add_tcase(s, tc);

	tc = ct_tcase("malformed");
	tcase_add_test(tc, malformed_values);
	tcase_add_test(tc, malformed_relations);
	tcase_add_test(tc, partition_root_relation);
	suite_add_tcase(s, tc);
	return s;
}
