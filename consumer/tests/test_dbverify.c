/*
 * test_dbverify.c
 *    rp_dbverify's pure parts: the statements (identifiers quoted, bounds
 *    as typed parameters numbered lo first, the limit and the last key only
 *    when asked, the multiset buckets), the differing keys of two chunk
 *    listings (changed, missing, extra, in any input order; none for equal
 *    listings), and the value-free range text; every row in exactly one
 *    range (the key ranges hold no NULL key, the NULL-key range holds the
 *    rest), a table read alone (ONLY) unless partitioned; a re-read round's
 *    outcome (a source that never holds still is "not compared", never
 *    "different"), the table verdicts and the exit status.  Guarantees: G4
 *    (no value in a statement or a report line), and verify's truth.
 */
#include "ct_kit.h"

#include "migrate/rp_dbverify.h"
#include "base/rp_sql.h"

static const char *const cols2[] = {"id", "v\"q"};
static const char *const keys1[] = {"id"};
static const char *const types1[] = {"integer"};
static const char *const cols3[] = {"k1", "k2", "v"};
static const char *const keys2[] = {"k1", "k2"};
static const char *const types2[] = {"integer", "text"};

static char *
built(RpBuf *b)
{
	rp_buf_put_char(b, '\0');
	return b->data;
}

START_TEST(test_ident)
{
	RpBuf		b;

	rp_buf_init(&b, 16);
	rp_sql_ident(&b, "a\"b");
	ck_assert_str_eq(built(&b), "\"a\"\"b\"");
	rp_buf_free(&b);
}

END_TEST

START_TEST(test_range_sql)
{
	RpDbvTable	t = {"s", "t", 2, cols2, 1, keys1, types1, false};
	RpBuf		b;
	char	   *s;

	rp_buf_init(&b, 256);
	rp_dbverify_sql_range(&b, &t, false, false, 0, false);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "FROM ONLY \"s\".\"t\" AS rp_t"));
	ck_assert_ptr_nonnull(strstr(s, "ROW(rp_t.\"id\", rp_t.\"v\"\"q\")::text"));
	/* the whole table is one range: every row but those with a NULL key */
	ck_assert_ptr_nonnull(strstr(s, " WHERE rp_t.\"id\" IS NOT NULL"));
	ck_assert_ptr_null(strstr(s, " > "));
	ck_assert_ptr_null(strstr(s, "LIMIT"));
	ck_assert_ptr_null(strstr(s, "l.rp_k1"));
	ck_assert_ptr_null(strstr(s, "$1"));

	/* the next chunk after a key: lo parameter, limit, the last key */
	rp_buf_reset(&b);
	rp_dbverify_sql_range(&b, &t, true, false, 500, true);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "WHERE (rp_t.\"id\") > ($1::integer) AND rp_t.\"id\" IS NOT NULL"
								 " ORDER BY rp_t.\"id\" LIMIT 500"));
	ck_assert_ptr_nonnull(strstr(s, "l.rp_k1::text"));
	ck_assert_ptr_null(strstr(s, "<="));

	/* a bounded range with only an upper bound: hi is $1 */
	rp_buf_reset(&b);
	rp_dbverify_sql_range(&b, &t, false, true, 0, false);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "WHERE (rp_t.\"id\") <= ($1::integer) AND rp_t.\"id\" IS NOT NULL"));
	rp_buf_free(&b);
}

END_TEST

/* how often needle is in s */
static int
count_str(const char *s, const char *needle)
{
	int			n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Every statement reads the table alone, unless it is partitioned (its rows are in its partitions). */
START_TEST(test_only)
{
	RpDbvTable	t = {"s", "t", 2, cols2, 1, keys1, types1, false};
	RpDbvTable	nokey = {"s", "n", 2, cols2, 0, NULL, NULL, false};
	RpBuf		b;
	void		(*each[4]) (RpBuf *, const RpDbvTable *) = {
		rp_dbverify_sql_nullkeys, rp_dbverify_sql_nullkeys_list, rp_dbverify_sql_buckets, NULL
	};

	rp_buf_init(&b, 256);
	for (int partitioned = 0; partitioned <= 1; partitioned++)
	{
		const char *want = partitioned ? " FROM \"s\"." : " FROM ONLY \"s\".";

		t.partitioned = nokey.partitioned = partitioned;
		for (int lo = 0; lo <= 1; lo++)
			for (int hi = 0; hi <= 1; hi++)
			{
				rp_buf_reset(&b);
				rp_dbverify_sql_range(&b, &t, lo, hi, lo ? 10 : 0, lo);
				ck_assert_int_eq(count_str(built(&b), want), 1);
				ck_assert_int_eq(count_str(built(&b), "\"s\"."), 1);
				rp_buf_reset(&b);
				rp_dbverify_sql_keys(&b, &t, lo, hi);
				ck_assert_int_eq(count_str(built(&b), want), 1);
				ck_assert_int_eq(count_str(built(&b), "\"s\"."), 1);
			}
		for (int i = 0; each[i]; i++)
		{
			rp_buf_reset(&b);
			each[i] (&b, i == 2 ? &nokey : &t);
			/* the one table reference of the statement is the wanted one */
			ck_assert_int_eq(count_str(built(&b), want), 1);
			ck_assert_int_eq(count_str(built(&b), "\"s\"."), 1);
		}
	}
	rp_buf_free(&b);
}

END_TEST

/* The rows with a NULL anywhere in the key: their own range, and in no key range. */
START_TEST(test_nullkeys_sql)
{
	RpDbvTable	t = {"s", "c", 3, cols3, 2, keys2, types2, false};
	RpBuf		b;
	char	   *s;

	rp_buf_init(&b, 256);
	rp_dbverify_sql_nullkeys(&b, &t);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "SELECT pg_catalog.count(*), pg_catalog.md5(pg_catalog.string_agg(rp_h, ''"
								 " ORDER BY rp_h))"));
	ck_assert_ptr_nonnull(strstr(s, " WHERE (rp_t.\"k1\" IS NULL OR rp_t.\"k2\" IS NULL)"));
	ck_assert_ptr_null(strstr(s, "$1"));

	rp_buf_reset(&b);
	rp_dbverify_sql_nullkeys_list(&b, &t);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "SELECT ROW(rp_t.\"k1\", rp_t.\"k2\")::text, pg_catalog.md5(ROW("));
	ck_assert_ptr_nonnull(strstr(s, " WHERE (rp_t.\"k1\" IS NULL OR rp_t.\"k2\" IS NULL) ORDER BY 1, 2"));

	/*
	 * (3, NULL) is past (2, 'b') by row comparison: the key ranges test every
	 * column
	 */
	for (int lo = 0; lo <= 1; lo++)
		for (int hi = 0; hi <= 1; hi++)
		{
			rp_buf_reset(&b);
			rp_dbverify_sql_range(&b, &t, lo, hi, 0, false);
			ck_assert_ptr_nonnull(strstr(built(&b), "rp_t.\"k1\" IS NOT NULL AND rp_t.\"k2\" IS NOT NULL"));
			rp_buf_reset(&b);
			rp_dbverify_sql_keys(&b, &t, lo, hi);
			ck_assert_ptr_nonnull(strstr(built(&b), "rp_t.\"k1\" IS NOT NULL AND rp_t.\"k2\" IS NOT NULL"));
		}

	rp_buf_reset(&b);
	rp_dbverify_nullkeys_text(&b, 0, 1);
	ck_assert_str_eq(built(&b), "rows with a NULL key: source 0 rows, destination 1 rows");
	rp_buf_free(&b);
}

END_TEST

/* A re-read round: only a source that held still can make a difference. */
START_TEST(test_round)
{
	for (int left = 0; left <= 1; left++)
	{
		/* the destination equals a source read: lag */
		ck_assert_int_eq(rp_dbverify_round(true, false, false, left), RP_DBV_ROUND_EQUAL);
		ck_assert_int_eq(rp_dbverify_round(false, true, false, left), RP_DBV_ROUND_EQUAL);
		ck_assert_int_eq(rp_dbverify_round(true, true, true, left), RP_DBV_ROUND_EQUAL);
		/* the source held still, the caught-up destination differs */
		ck_assert_int_eq(rp_dbverify_round(false, false, true, left), RP_DBV_ROUND_DIFFERENT);
	}

	/*
	 * the source changed between its reads: again, and at the timeout not
	 * compared
	 */
	ck_assert_int_eq(rp_dbverify_round(false, false, false, true), RP_DBV_ROUND_AGAIN);
	ck_assert_int_eq(rp_dbverify_round(false, false, false, false), RP_DBV_ROUND_UNSETTLED);
}

END_TEST

START_TEST(test_verdict)
{
	RpDbvTally	t = {5000, 6, 0, 0, 0, false};
	RpBuf		b;

	rp_buf_init(&b, 64);
	ck_assert_int_eq(rp_dbverify_verdict(&t), RP_DBV_EQUAL);
	rp_dbverify_verdict_text(&b, &t);
	ck_assert_str_eq(built(&b), "equal (5000 rows, 6 chunks)");
	t.reread = 2;
	rp_buf_reset(&b);
	rp_dbverify_verdict_text(&b, &t);
	ck_assert_str_eq(built(&b), "equal (5000 rows, 6 chunks, 2 re-read after the mirror caught up)");

	t.not_compared = 1;
	ck_assert_int_eq(rp_dbverify_verdict(&t), RP_DBV_NOT_COMPARED);
	rp_buf_reset(&b);
	rp_dbverify_verdict_text(&b, &t);
	ck_assert_str_eq(built(&b), "not compared (5000 rows, 6 chunks, 1 not compared)");

	/* a difference wins over a chunk not compared */
	t.differing = 2;
	ck_assert_int_eq(rp_dbverify_verdict(&t), RP_DBV_DIFFERENT);
	rp_buf_reset(&b);
	rp_dbverify_verdict_text(&b, &t);
	ck_assert_str_eq(built(&b), "different (5000 rows, 6 chunks, 2 different, 1 not compared)");
	t.not_compared = 0;
	t.keyless = true;
	t.chunks = 1;
	rp_buf_reset(&b);
	rp_dbverify_verdict_text(&b, &t);
	ck_assert_str_eq(built(&b), "different (5000 rows, 2 hash buckets different)");
	rp_buf_free(&b);

	/*
	 * the exit status: a difference, then a failure, then a table not
	 * compared
	 */
	ck_assert_int_eq(rp_dbverify_status(0, 0, false), RP_DBVERIFY_EQUAL);
	ck_assert_int_eq(rp_dbverify_status(1, 0, false), RP_DBVERIFY_DIFFERENT);
	ck_assert_int_eq(rp_dbverify_status(1, 3, true), RP_DBVERIFY_DIFFERENT);
	ck_assert_int_eq(rp_dbverify_status(0, 3, true), RP_DBVERIFY_FAILED);
	ck_assert_int_eq(rp_dbverify_status(0, 0, true), RP_DBVERIFY_FAILED);
	ck_assert_int_eq(rp_dbverify_status(0, 1, false), RP_DBVERIFY_NOT_COMPARED);
	ck_assert_int_eq(RP_DBVERIFY_EQUAL, 0);
	ck_assert_int_eq(RP_DBVERIFY_DIFFERENT, 1);
	ck_assert_int_eq(RP_DBVERIFY_USAGE, 2);
	ck_assert_int_eq(RP_DBVERIFY_FAILED, 3);
	ck_assert_int_eq(RP_DBVERIFY_NOT_COMPARED, 4);
}

END_TEST

START_TEST(test_composite_sql)
{
	RpDbvTable	t = {"s", "c", 3, cols3, 2, keys2, types2, false};
	RpBuf		b;
	char	   *s;

	rp_buf_init(&b, 256);
	rp_dbverify_sql_range(&b, &t, true, true, 0, false);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "(rp_t.\"k1\", rp_t.\"k2\") > ($1::integer, $2::text)"
								 " AND (rp_t.\"k1\", rp_t.\"k2\") <= ($3::integer, $4::text)"));
	ck_assert_ptr_nonnull(strstr(s, "ORDER BY rp_k1, rp_k2"));

	rp_buf_reset(&b);
	rp_dbverify_sql_range(&b, &t, true, false, 10, true);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "ORDER BY rp_k1 DESC, rp_k2 DESC LIMIT 1"));
	ck_assert_ptr_nonnull(strstr(s, "l.rp_k2::text"));

	rp_buf_reset(&b);
	rp_dbverify_sql_keys(&b, &t, false, true);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "SELECT ROW(rp_t.\"k1\", rp_t.\"k2\")::text"));
	ck_assert_ptr_nonnull(strstr(s, "<= ($1::integer, $2::text) AND rp_t.\"k1\" IS NOT NULL AND"
								 " rp_t.\"k2\" IS NOT NULL ORDER BY rp_t.\"k1\", rp_t.\"k2\""));

	rp_buf_reset(&b);
	rp_dbverify_sql_buckets(&b, &t);
	s = built(&b);
	ck_assert_ptr_nonnull(strstr(s, "GROUP BY 1 ORDER BY 1"));
	ck_assert_ptr_nonnull(strstr(s, "bit(60)"));
	ck_assert_ptr_null(strstr(s, "$1"));
	rp_buf_free(&b);
}

END_TEST

typedef struct Seen
{
	char text[	512];
	int			n;
} Seen;

static void
collect(void *arg, RpDbvKeyDiff d, const char *key)
{
	Seen	   *s = arg;
	size_t		len = strlen(s->text);

	snprintf(s->text +len, sizeof(s->text) - len, "%s:%s;", rp_dbverify_diff_name(d), key);
	s->n++;
}

START_TEST(test_diff_keys)
{
	RpDbvKey	src[] = {{"(3)", "h3"}, {"(1)", "h1"}, {"(2)", "h2"}, {"(5)", "h5"}};
	RpDbvKey	dst[] = {{"(5)", "h5"}, {"(4)", "h4"}, {"(2)", "hX"}, {"(1)", "h1"}};
	RpDbvKey	same_a[] = {{"(1)", "a"}, {"(2)", "b"}};
	RpDbvKey	same_b[] = {{"(2)", "b"}, {"(1)", "a"}};
	Seen		seen = {"", 0};

	ck_assert_int_eq(rp_dbverify_diff_keys(src, 4, dst, 4, collect, &seen), 3);
	ck_assert_str_eq(seen.text, "changed:(2);missing:(3);extra:(4);");

	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(rp_dbverify_diff_keys(same_a, 2, same_b, 2, collect, &seen), 0);
	ck_assert_int_eq(seen.n, 0);

	/* one side empty: every key of the other */
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(rp_dbverify_diff_keys(NULL, 0, same_b, 2, collect, &seen), 2);
	ck_assert_str_eq(seen.text, "extra:(1);extra:(2);");
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(rp_dbverify_diff_keys(same_a, 2, NULL, 0, collect, &seen), 2);
	ck_assert_str_eq(seen.text, "missing:(1);missing:(2);");
}

END_TEST

START_TEST(test_range_text)
{
	RpBuf		b;

	rp_buf_init(&b, 64);
	rp_dbverify_range_text(&b, 2, 1001, 1000, 999);
	ck_assert_str_eq(built(&b),
					 "chunk 2 (rows 1001-2000 of the source): source 1000 rows, destination 999 rows");
	rp_buf_reset(&b);
	rp_dbverify_range_text(&b, 4, 3001, 0, 1);
	ck_assert_str_eq(built(&b),
					 "chunk 4 (after row 3000 of the source): source 0 rows, destination 1 rows");
	rp_buf_free(&b);
	/* the settings pin every output format a row's text depends on */
	ck_assert_ptr_nonnull(strstr(rp_dbverify_settings(), "DateStyle"));
	ck_assert_ptr_nonnull(strstr(rp_dbverify_settings(), "TimeZone"));
	ck_assert_ptr_nonnull(strstr(rp_dbverify_settings(), "extra_float_digits"));
	ck_assert_ptr_nonnull(strstr(rp_dbverify_settings(), "bytea_output"));
	ck_assert_ptr_nonnull(strstr(rp_dbverify_settings(), "IntervalStyle"));
}

END_TEST

Suite	   *
ct_suite_dbverify(void)
{
	Suite	   *s = suite_create("dbverify");
	TCase	   *tc = tcase_create("core");

	tcase_add_test(tc, test_ident);
	tcase_add_test(tc, test_range_sql);
	tcase_add_test(tc, test_composite_sql);
	tcase_add_test(tc, test_only);
	tcase_add_test(tc, test_nullkeys_sql);
	tcase_add_test(tc, test_round);
	tcase_add_test(tc, test_verdict);
	tcase_add_test(tc, test_diff_keys);
	tcase_add_test(tc, test_range_text);
	suite_add_tcase(s, tc);
	return s;
}
