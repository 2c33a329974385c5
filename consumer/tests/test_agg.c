/*
 * test_agg.c
 *    Aggregate binding declarations (consumer/rp_agg.c) and the value
 *    readers (consumer/rp_aggval.c): a record's pre-cast value and the seed's
 *    text of the same value give the same key and text.
 */
#include "ct_kit.h"

#include "agg/rp_agg.h"
#include "agg/rp_aggval.h"
#include "base/rp_status.h"

START_TEST(test_spec_parse)
{
	RpAgg	   *agg = rp_agg_new();
	RpAggBinding *b;

	ck_assert_int_eq(rp_agg_add_spec(agg, "name=s source=public.sales dims=region,month measure=amount agg=sum output=table:agg.s", "t"), 0);
	ck_assert_int_eq(rp_agg_add_spec(agg, "  name=e source=sales dims=d measure=m agg=count_distinct output=exec:cat >> /tmp/x y  ", "t"), 0);
	ck_assert_int_eq(rp_agg_add_spec(agg, "name=f source=s.t dims=d measure=m agg=max output=file:/tmp/a", "t"), 0);
	ck_assert_int_eq(rp_agg_add_spec(agg, "name=g source=s.t dims=d measure=m agg=min output=file:/tmp/a", "t"), 0);
	ck_assert_int_eq(agg->nb, 4);
	b = agg->b[0];
	ck_assert_str_eq(b->schema, "public");
	ck_assert_str_eq(b->table, "sales");
	ck_assert_int_eq(b->ndims, 2);
	ck_assert_str_eq(b->dims[1], "month");
	ck_assert_int_eq(b->agg, RP_FOLD_SUM);
	ck_assert_int_eq(b->out, RP_AGG_OUT_TABLE);
	ck_assert_str_eq(b->out_schema, "agg");
	ck_assert(b->need_seed);
	b = agg->b[1];
	ck_assert_str_eq(b->schema, "public");
	ck_assert_int_eq(b->out, RP_AGG_OUT_EXEC);
	ck_assert_str_eq(b->stream->target, "cat >> /tmp/x y"); /* the rest of the line */
	/* two bindings on one file share its stream */
	ck_assert_ptr_eq(agg->b[2]->stream, agg->b[3]->stream);
	ck_assert_int_eq(agg->nstreams, 2);
	rp_agg_free(agg);
}

END_TEST

START_TEST(test_spec_errors)
{
	const char *bad[] = {
		"name=s source=t dims=d measure=m agg=sum", /* no output */
		"name=s source=t dims=d measure=m agg=median output=stdout",
		"name=s source=t dims=d measure=m agg=sum output=table:nodot_is_public_ok extra",
		"name=s color=red source=t dims=d measure=m agg=sum output=stdout",
		"name=s name=t source=t dims=d measure=m agg=sum output=stdout",
		"name=s source=t dims=d,,e measure=m agg=sum output=stdout",
		"name=s source=a.b.c dims=d measure=m agg=sum output=stdout",
		"name=s source=t dims=d measure=m agg=sum output=ftp:x",
		"just words",
	};
	RpAgg	   *agg = rp_agg_new();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		rp_error_clear();
		if (i == 2)
		{
			/*
			 * output takes the rest of the line: a table name with a space is
			 * refused
			 */
			ck_assert_int_eq(rp_agg_add_spec(agg, bad[i], "t"), -1);
			continue;
		}
		ck_assert_msg(rp_agg_add_spec(agg, bad[i], "t") == -1, "accepted: %s", bad[i]);
		ck_assert_int_eq(rp_error_halt(), RP_HALT_CONFIG);
	}
	ck_assert_int_eq(rp_agg_add_spec(agg, "name=s source=t dims=d measure=m agg=sum output=stdout", "t"), 0);
	ck_assert_int_eq(rp_agg_add_spec(agg, "name=s source=t dims=d measure=m agg=avg output=stdout", "t"), -1);
	ck_assert(strstr(rp_error(), "declared twice"));
	ck_assert_int_eq(agg->nb, 1);
	rp_agg_free(agg);
}

END_TEST

/* A datum of an encoding from raw big-endian bytes. */
static RpDatum
datum(const unsigned char *p, uint32_t len)
{
	RpDatum		d;

	d.kind = RP_DATUM_VALUE;
	d.data = p;
	d.len = len;
	return d;
}

static void
same(RpAggClass c, uint8_t enc, const unsigned char *p, uint32_t len, const char *seed_text,
	 const char *want_text)
{
	RpAggVal	a,
				b;
	RpDatum		d = datum(p, len);

	rp_aggval_init(&a);
	rp_aggval_init(&b);
	ck_assert(rp_aggval_from_datum(c, enc, &d, &a));
	ck_assert(rp_aggval_from_text(c, seed_text, &b));
	ck_assert_uint_eq(a.v.keylen, b.v.keylen);
	ck_assert_int_eq(memcmp(a.v.key, b.v.key, a.v.keylen), 0);
	ck_assert_int_eq((int) a.v.textlen, (int) strlen(want_text));
	ck_assert_int_eq(memcmp(a.v.text, want_text, a.v.textlen), 0);
	ck_assert_int_eq((int) b.v.textlen, (int) strlen(want_text));
	rp_aggval_free(&a);
	rp_aggval_free(&b);
}

START_TEST(test_values_stream_equals_seed)
{
	const unsigned char i4[] = {0xFF, 0xFF, 0xFF, 0xFE};	/* -2 */
	const unsigned char f8[] = {0x3F, 0xB9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A};	/* 0.1 */
	const unsigned char nan[] = {0x7F, 0xF8, 0, 0, 0, 0, 0, 0};

	/*
	 * numeric 1.50: len 12, ndigits 2, weight 0, sign +, dscale 2, digits 1,
	 * 5000
	 */
	const unsigned char num[] = {0, 0, 0, 12, 0, 2, 0, 0, 0, 0, 0, 2, 0, 1, 0x13, 0x88};
	const unsigned char str[] = {0, 0, 0, 3, 'a', 'b', 'c'};
	const unsigned char date[] = {0, 0, 0x4D, 0x3D};	/* 19773 days:
														 * 2024-02-20 */
	const unsigned char ts[] = {0, 0x06, 0x0D, 0xE1, 0xF5, 0xA0, 0x74, 0x00};	/* 2024-01-01 13:00 */
	const unsigned char tsinf[] = {0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
	const unsigned char bl[] = {1};
	RpAggVal	v;
	RpDatum		d;

	same(RP_AGGV_INT, RP_ENC_INT4, i4, sizeof(i4), "-2", "-2");
	same(RP_AGGV_FLOAT8, RP_ENC_FLOAT8, f8, sizeof(f8), "0.10000000000000001", "0.1");
	same(RP_AGGV_FLOAT8, RP_ENC_FLOAT8, nan, sizeof(nan), "NaN", "NaN");
	same(RP_AGGV_NUMERIC, RP_ENC_NUMERIC, num, sizeof(num), "1.50", "1.50");
	same(RP_AGGV_STRING, RP_ENC_STRING, str, sizeof(str), "abc", "abc");
	same(RP_AGGV_DATE, RP_ENC_DATE, date, sizeof(date), "19773", "2024-02-20");
	/* seed text: PostgreSQL's microseconds since 2000-01-01 */
	same(RP_AGGV_TIMESTAMP, RP_ENC_TIMESTAMP, ts, sizeof(ts), "757429200000000", "2024-01-01T13:00:00");
	same(RP_AGGV_TIMESTAMPTZ, RP_ENC_TIMESTAMPTZ, tsinf, sizeof(tsinf), "infinity", "infinity");
	same(RP_AGGV_BOOL, RP_ENC_BOOL, bl, sizeof(bl), "true", "true");

	/*
	 * a column whose encoding is not the class's, or a malformed value:
	 * unreadable
	 */
	rp_aggval_init(&v);
	d = datum(i4, sizeof(i4));
	ck_assert(!rp_aggval_from_datum(RP_AGGV_INT, RP_ENC_TEXT, &d, &v));
	d = datum(num, sizeof(num) - 2);
	ck_assert(!rp_aggval_from_datum(RP_AGGV_NUMERIC, RP_ENC_NUMERIC, &d, &v));
	d.kind = RP_DATUM_UNCHANGED;
	ck_assert(!rp_aggval_from_datum(RP_AGGV_NUMERIC, RP_ENC_NUMERIC, &d, &v));
	d.kind = RP_DATUM_NULL;
	ck_assert(rp_aggval_from_datum(RP_AGGV_NUMERIC, RP_ENC_NUMERIC, &d, &v));
	ck_assert(v.v.null);
	ck_assert(!rp_aggval_from_text(RP_AGGV_INT, "12x", &v));
	ck_assert(!rp_aggval_from_text(RP_AGGV_BOOL, "yes", &v));
	rp_aggval_free(&v);
	ck_assert_int_eq(rp_aggval_class(1700), RP_AGGV_NUMERIC);
	ck_assert_int_eq(rp_aggval_class(1042), RP_AGGV_UNSUPPORTED);	/* bpchar: padding
																	 * differs */
}

END_TEST

/* PostgreSQL's timestamps from its first to its last, then infinity: wire values */
static const int64_t ts_sorted[] = {
	INT64_MIN,					/* -infinity */
	INT64_C(-210866803200000000),	/* 4714-11-24 00:00 BC, the first */
	0,							/* 1970 */
	INT64_C(9223372036854775806),	/* the last one in 1970-epoch int64 */
	INT64_C(-9223372036854775807),	/* extended: 294247-01-10 04:00:54.775807 */
	INT64_C(-9222426057709551615),	/* extended: 294276-12-31 23:59:59.999999,
									 * the last */
	INT64_MAX					/* infinity */
};
static const char *const ts_seed[] = {
	"-infinity", "-211813488000000000", "-946684800000000", "9222425352054775806",
	"9222425352054775807", "9223371331199999999", "infinity"
};
static const char *const ts_text[] = {
	"-infinity", "-4713-11-24T00:00:00Z", "1970-01-01T00:00:00Z",
	"+294247-01-10T04:00:54.775806Z", "+294247-01-10T04:00:54.775807Z",
	"+294276-12-31T23:59:59.999999Z", "infinity"
};

/* min/max over timestamps order the extended range after every other instant */
START_TEST(test_timestamp_keys_order)
{
	int			n = (int) (sizeof(ts_sorted) / sizeof(ts_sorted[0]));
	RpAggVal	a,
				b;

	rp_aggval_init(&a);
	rp_aggval_init(&b);
	for (int i = 0; i < n; i++)
	{
		unsigned char w[8];
		RpDatum		d;

		for (int k = 0; k < 8; k++)
			w[k] = (unsigned char) ((uint64_t) ts_sorted[i] >> (56 - 8 * k));
		d = datum(w, 8);
		/* the stream and the seed agree on key and text */
		ck_assert(rp_aggval_from_datum(RP_AGGV_TIMESTAMPTZ, RP_ENC_TIMESTAMPTZ, &d, &a));
		ck_assert(rp_aggval_from_text(RP_AGGV_TIMESTAMPTZ, ts_seed[i], &b));
		ck_assert_uint_eq(a.v.keylen, b.v.keylen);
		ck_assert_int_eq(memcmp(a.v.key, b.v.key, a.v.keylen), 0);
		ck_assert_int_eq((int) a.v.textlen, (int) strlen(ts_text[i]));
		ck_assert_int_eq(memcmp(a.v.text, ts_text[i], a.v.textlen), 0);
		if (i > 0)
		{
			RpAggVal	prev;

			rp_aggval_init(&prev);
			ck_assert(rp_aggval_from_text(RP_AGGV_TIMESTAMPTZ, ts_seed[i - 1], &prev));
			ck_assert_int_lt(memcmp(prev.v.key, a.v.key, a.v.keylen), 0);
			rp_aggval_free(&prev);
		}
	}
	/* past PostgreSQL's last timestamp: no value of the class */
	ck_assert(!rp_aggval_from_text(RP_AGGV_TIMESTAMPTZ, "9223371331200000000", &b));
	rp_aggval_free(&a);
	rp_aggval_free(&b);
}

END_TEST

START_TEST(test_float_keys_order)
{
	const char *sorted[] = {"-Infinity", "-1e300", "-1", "-5e-324", "0", "5e-324", "0.1", "1", "1e300", "Infinity", "NaN"};
	int			n = (int) (sizeof(sorted) / sizeof(sorted[0]));
	RpAggVal	a,
				b;

	rp_aggval_init(&a);
	rp_aggval_init(&b);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
		{
			int			r;

			ck_assert(rp_aggval_from_text(RP_AGGV_FLOAT8, sorted[i], &a));
			ck_assert(rp_aggval_from_text(RP_AGGV_FLOAT8, sorted[j], &b));
			ck_assert_uint_eq(a.v.keylen, b.v.keylen);
			r = memcmp(a.v.key, b.v.key, a.v.keylen);
			ck_assert_msg((r < 0) == (i < j) && (r == 0) == (i == j), "%s vs %s", sorted[i], sorted[j]);
		}
	/* -0 and 0 are one value, as in PostgreSQL */
	ck_assert(rp_aggval_from_text(RP_AGGV_FLOAT8, "-0", &a));
	ck_assert(rp_aggval_from_text(RP_AGGV_FLOAT8, "0", &b));
	ck_assert_int_eq(memcmp(a.v.key, b.v.key, a.v.keylen), 0);
	/* the exact number only when asked for */
	a.want_num = true;
	ck_assert(rp_aggval_from_text(RP_AGGV_FLOAT8, "0.5", &a));
	ck_assert_int_eq(a.v.kind, RP_DEC_FINITE);
	ck_assert_int_eq(a.num.scale, 1);
	rp_aggval_free(&a);
	rp_aggval_free(&b);
}

END_TEST

Suite	   *
ct_suite_agg(void)
{
	Suite	   *s = suite_create("agg");
	TCase	   *tc = tcase_create("agg");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_spec_parse);
	tcase_add_test(tc, test_spec_errors);
	tcase_add_test(tc, test_values_stream_equals_seed);
	tcase_add_test(tc, test_float_keys_order);
	tcase_add_test(tc, test_timestamp_keys_order);
	suite_add_tcase(s, tc);
	return s;
}
