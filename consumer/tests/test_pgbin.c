/*
 * test_pgbin.c
 *    rp_pgbin: pre-cast values to PostgreSQL's binary send format for COPY
 *    (FORMAT binary).  Every field against the bytes PostgreSQL's *send
 *    functions produce for the same value: the epoch shift of dates and
 *    timestamps (1970 here, 2000 there) with the infinities kept, timetz's
 *    zone sign (seconds west there), jsonb's version byte, numeric and
 *    strings as they are, arrays with their NULL flag, element OID and
 *    bounds; which columns qualify at all; the COPY header and trailer.
 *    Guarantee G6 (deterministic values): the destination stores exactly
 *    what the source sent, with no text parsing in between.
 */
#include "ct_kit.h"

#include "values/rp_pgbin.h"
#include "rp_wire.h"

static RpBuf out;

static void
setup(void)
{
	rp_buf_init(&out, 256);
}

static void
teardown(void)
{
	rp_buf_free(&out);
}

/* Big-endian writers for building datums by hand. */
static size_t
be(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char) (v >> (8 * (n - 1 - i)));
	return (size_t) n;
}

/* out holds exactly: i32 length, then want[0..n). */
static void
expect_field(const unsigned char *want, size_t n)
{
	unsigned char len[4];

	be(len, n, 4);
	ck_assert_uint_eq(out.len, n + 4);
	ck_assert(memcmp(out.data, len, 4) == 0);
	ck_assert_msg(memcmp(out.data + 4, want, n) == 0, "field bytes differ");
}

static void
value(uint8_t enc, const unsigned char *d, size_t n)
{
	rp_buf_reset(&out);
	ck_assert_int_eq(rp_pgbin_value(&out, enc, d, (uint32_t) n), 0);
}

START_TEST(test_scalars_as_is)
{
	unsigned char d[16],
				w[16];

	be(d, 0xFFFF8000, 4);		/* int4 -32768 */
	value(RP_ENC_INT4, d, 4);
	expect_field(d, 4);
	be(d, (uint64_t) INT64_MIN, 8);
	value(RP_ENC_INT8, d, 8);
	expect_field(d, 8);
	be(d, 0x7FF8000000000000ULL, 8);	/* float8 NaN bits */
	value(RP_ENC_FLOAT8, d, 8);
	expect_field(d, 8);
	d[0] = 1;
	value(RP_ENC_BOOL, d, 1);
	expect_field(d, 1);
	be(d, 0x8001, 2);
	value(RP_ENC_INT2, d, 2);
	expect_field(d, 2);
	for (int i = 0; i < 16; i++)
		d[i] = (unsigned char) (i * 17);
	value(RP_ENC_UUID, d, 16);
	expect_field(d, 16);
	/* interval: i64 us, i32 days, i32 months on both sides */
	be(d, 3600000000ULL, 8);
	be(d + 8, 2, 4);
	be(d + 12, 14, 4);
	value(RP_ENC_INTERVAL, d, 16);
	memcpy(w, d, 16);
	expect_field(w, 16);
}

END_TEST

START_TEST(test_length_prefixed)
{
	/* numeric 1.5: ndigits 2, weight 0, sign +, dscale 1, digits 1, 5000 */
	unsigned char d[64],
				w[64];
	size_t		n = 0,
				m = 0;

	m += be(w + m, 2, 2);
	m += be(w + m, 0, 2);
	m += be(w + m, 0, 2);
	m += be(w + m, 1, 2);
	m += be(w + m, 1, 2);
	m += be(w + m, 5000, 2);
	n += be(d, m, 4);
	memcpy(d + n, w, m);
	n += m;
	value(RP_ENC_NUMERIC, d, n);
	expect_field(w, m);

	/* a string with a zero-free multibyte body, and an empty one */
	n = be(d, 5, 4);
	memcpy(d + n, "h\xc3\xa9ll", 5);
	value(RP_ENC_STRING, d, n + 5);
	expect_field((const unsigned char *) "h\xc3\xa9ll", 5);
	n = be(d, 0, 4);
	value(RP_ENC_STRING, d, n);
	ck_assert_uint_eq(out.len, 4);

	/* bytea with zero bytes */
	n = be(d, 3, 4);
	memcpy(d + n, "\0\1\0", 3);
	value(RP_ENC_BYTEA, d, n + 3);
	expect_field((const unsigned char *) "\0\1\0", 3);

	/* json as its text; jsonb as version 1, then its text */
	n = be(d, 2, 4);
	memcpy(d + n, "{}", 2);
	value(RP_ENC_JSON, d, n + 2);
	expect_field((const unsigned char *) "{}", 2);
	value(RP_ENC_JSONB, d, n + 2);
	expect_field((const unsigned char *) "\1{}", 3);
}

END_TEST

START_TEST(test_epochs)
{
	unsigned char d[12],
				w[12];

	/* 2000-01-01 00:00 UTC is 946684800 s after 1970: PostgreSQL's zero */
	be(d, 946684800000000ULL, 8);
	value(RP_ENC_TIMESTAMPTZ, d, 8);
	be(w, 0, 8);
	expect_field(w, 8);
	/* 1970-01-01 is before it */
	be(d, 0, 8);
	value(RP_ENC_TIMESTAMP, d, 8);
	be(w, (uint64_t) -INT64_C(946684800000000), 8);
	expect_field(w, 8);
	/* infinities stay */
	be(d, (uint64_t) INT64_MAX, 8);
	value(RP_ENC_TIMESTAMPTZ, d, 8);
	expect_field(d, 8);
	be(d, (uint64_t) INT64_MIN, 8);
	value(RP_ENC_TIMESTAMP, d, 8);
	expect_field(d, 8);

	/* dates: days */
	be(d, 0, 4);
	value(RP_ENC_DATE, d, 4);
	be(w, (uint32_t) -10957, 4);
	expect_field(w, 4);
	be(d, 10957 + 59, 4);		/* 2000-02-29 */
	value(RP_ENC_DATE, d, 4);
	be(w, 59, 4);
	expect_field(w, 4);
	be(d, (uint32_t) INT32_MIN, 4);
	value(RP_ENC_DATE, d, 4);
	expect_field(d, 4);
	be(d, (uint32_t) INT32_MAX, 4);
	value(RP_ENC_DATE, d, 4);
	expect_field(d, 4);

	/* time as is; timetz 12:00+05:30: PostgreSQL counts the zone west, -19800 */
	be(d, 43200000000ULL, 8);
	value(RP_ENC_TIME, d, 8);
	expect_field(d, 8);
	be(d + 8, 19800, 4);
	value(RP_ENC_TIMETZ, d, 12);
	memcpy(w, d, 8);
	be(w + 8, (uint32_t) -19800, 4);
	expect_field(w, 12);
}

END_TEST

/*
 * PostgreSQL's first and last timestamps and dates reach the destination's
 * binary COPY exactly: its send format is its own microseconds and days
 * since 2000, which hold what the wire's 1970 epoch needs the extended
 * range for.  A wire value no timestamp has gets no binary form.
 */
START_TEST(test_extremes)
{
	unsigned char d[8],
				w[8];
	static const struct
	{
		int64_t		wire;
		int64_t		pg;
	}			ts[] = {
		{INT64_C(-210866803200000000), INT64_C(-211813488000000000)},	/* 4714-11-24 BC */
		{INT64_C(9223372036854775806), INT64_C(9222425352054775806)},	/* last 1970-epoch */
		{INT64_C(-9223372036854775807), INT64_C(9222425352054775807)},	/* first extended */
		{INT64_C(-9222426057709551615), INT64_C(9223371331199999999)},	/* 294276-12-31
																		 * 23:59:59.999999 */
	};

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
	{
		be(d, (uint64_t) ts[i].wire, 8);
		value(i % 2 ? RP_ENC_TIMESTAMPTZ : RP_ENC_TIMESTAMP, d, 8);
		be(w, (uint64_t) ts[i].pg, 8);
		expect_field(w, 8);
	}
	/* past the last timestamp, and below the first (not extended): none */
	rp_buf_reset(&out);
	be(d, (uint64_t) INT64_C(-9222426057709551614), 8);
	ck_assert_int_eq(rp_pgbin_value(&out, RP_ENC_TIMESTAMPTZ, d, 8), -1);
	be(d, (uint64_t) INT64_C(-210866803200000001), 8);
	ck_assert_int_eq(rp_pgbin_value(&out, RP_ENC_TIMESTAMP, d, 8), -1);

	/* dates: 4714-11-24 BC and 5874897-12-31 */
	be(d, (uint32_t) (-2451545 + 10957), 4);
	value(RP_ENC_DATE, d, 4);
	be(w, (uint32_t) -2451545, 4);
	expect_field(w, 4);
	be(d, 2145031948 + 10957, 4);
	value(RP_ENC_DATE, d, 4);
	be(w, 2145031948, 4);
	expect_field(w, 4);
	be(d, (uint32_t) (INT32_MIN + 1), 4);
	ck_assert_int_eq(rp_pgbin_value(&out, RP_ENC_DATE, d, 4), -1);
}

END_TEST

START_TEST(test_arrays)
{
	/* '{1,NULL,3}'::int4[] */
	unsigned char d[64],
				w[64];
	size_t		n = 0,
				m = 0;

	d[n++] = RP_ENC_INT4;
	n += be(d + n, 23, 4);		/* element OID */
	n += be(d + n, 1, 4);		/* ndim */
	n += be(d + n, 3, 4);
	n += be(d + n, 1, 4);		/* lower bound */
	d[n++] = RP_DATUM_VALUE;
	n += be(d + n, 1, 4);
	d[n++] = RP_DATUM_NULL;
	d[n++] = RP_DATUM_VALUE;
	n += be(d + n, 3, 4);

	m += be(w + m, 1, 4);		/* ndim */
	m += be(w + m, 1, 4);		/* has NULLs */
	m += be(w + m, 23, 4);
	m += be(w + m, 3, 4);
	m += be(w + m, 1, 4);
	m += be(w + m, 4, 4);
	m += be(w + m, 1, 4);
	m += be(w + m, (uint32_t) -1, 4);
	m += be(w + m, 4, 4);
	m += be(w + m, 3, 4);
	value(RP_ENC_ARRAY, d, n);
	expect_field(w, m);

	/* '[0:0]={2000-01-01}'::date[]: the bound kept, the element shifted */
	n = m = 0;
	d[n++] = RP_ENC_DATE;
	n += be(d + n, 1082, 4);
	n += be(d + n, 1, 4);
	n += be(d + n, 1, 4);
	n += be(d + n, 0, 4);
	d[n++] = RP_DATUM_VALUE;
	n += be(d + n, 10957, 4);
	m += be(w + m, 1, 4);
	m += be(w + m, 0, 4);
	m += be(w + m, 1082, 4);
	m += be(w + m, 1, 4);
	m += be(w + m, 0, 4);
	m += be(w + m, 4, 4);
	m += be(w + m, 0, 4);
	value(RP_ENC_ARRAY, d, n);
	expect_field(w, m);

	/* an empty array: no dimensions */
	n = m = 0;
	d[n++] = RP_ENC_STRING;
	n += be(d + n, 25, 4);
	n += be(d + n, 0, 4);
	m += be(w + m, 0, 4);
	m += be(w + m, 0, 4);
	m += be(w + m, 25, 4);
	value(RP_ENC_ARRAY, d, n);
	expect_field(w, m);

	/*
	 * elements with no binary form, and a truncated datum: refused, out
	 * untouched
	 */
	n = 0;
	d[n++] = RP_ENC_TEXT;
	n += be(d + n, 869, 4);
	n += be(d + n, 0, 4);
	rp_buf_reset(&out);
	ck_assert_int_eq(rp_pgbin_value(&out, RP_ENC_ARRAY, d, (uint32_t) n), -1);
	ck_assert_uint_eq(out.len, 0);
	be(d, 1, 4);
	ck_assert_int_eq(rp_pgbin_value(&out, RP_ENC_INT8, d, 4), -1);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(rp_pgbin_value(&out, RP_ENC_COMPOSITE, d, 4), -1);
	ck_assert_uint_eq(out.len, 0);
}

END_TEST

START_TEST(test_columns_that_qualify)
{
	RpColumn	c = {0};

	c.type_oid = 23;
	c.encoding = RP_ENC_INT4;
	ck_assert(rp_pgbin_column_ok(&c));
	c.type_oid = 1184;
	c.encoding = RP_ENC_TIMESTAMPTZ;
	ck_assert(rp_pgbin_column_ok(&c));
	/* a domain over int4 keeps the base encoding but has its own OID */
	c.type_oid = 16400;
	c.encoding = RP_ENC_INT4;
	ck_assert(!rp_pgbin_column_ok(&c));
	/* types sent as text, enums, composites, ranges */
	c.type_oid = 869;			/* inet */
	c.encoding = RP_ENC_TEXT;
	ck_assert(!rp_pgbin_column_ok(&c));
	c.type_oid = 3904;			/* int4range */
	c.encoding = RP_ENC_RANGE;
	ck_assert(!rp_pgbin_column_ok(&c));
	/* arrays: built-in ones of binary elements only */
	c.encoding = RP_ENC_ARRAY;
	c.type_oid = 1007;
	ck_assert(rp_pgbin_column_ok(&c));
	c.type_oid = 3807;
	ck_assert(rp_pgbin_column_ok(&c));
	c.type_oid = 1041;			/* inet[] */
	ck_assert(!rp_pgbin_column_ok(&c));
}

END_TEST

START_TEST(test_header_trailer)
{
	static const unsigned char sig[] = "PGCOPY\n\377\r\n";

	rp_pgbin_header(&out);
	ck_assert_uint_eq(out.len, 19);
	ck_assert(memcmp(out.data, sig, 11) == 0);	/* with its zero byte */
	for (int i = 11; i < 19; i++)
		ck_assert_int_eq(out.data[i], 0);
	rp_buf_reset(&out);
	rp_pgbin_tuple(&out, 7);
	rp_pgbin_null(&out);
	rp_pgbin_trailer(&out);
	ck_assert_uint_eq(out.len, 8);
	ck_assert(memcmp(out.data, "\0\7\377\377\377\377\377\377", 8) == 0);
}

END_TEST

Suite	   *
ct_suite_pgbin(void)
{
	Suite	   *s = suite_create("pgbin");
	TCase	   *tc = tcase_create("values");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_scalars_as_is);
	tcase_add_test(tc, test_length_prefixed);
	tcase_add_test(tc, test_epochs);
	tcase_add_test(tc, test_extremes);
	tcase_add_test(tc, test_arrays);
	tcase_add_test(tc, test_columns_that_qualify);
	tcase_add_test(tc, test_header_trailer);
	suite_add_tcase(s, tc);
	return s;
}
