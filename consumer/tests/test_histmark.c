/*
 * test_histmark.c
 *    The history snapshot's mark (rp_mirror_history_copy.c): "LSN|ms", the
 *    consistent point and the time every version of the snapshot opens at,
 *    kept in the mirror's snapshot progress so that a resumed copy opens
 *    its versions at the same point and time.  Round trips, the exact
 *    text, the SQL time expression, and refusal of malformed marks (no
 *    separator, a bad LSN, a sign, spaces, a non-numeric or overlong
 *    time, trailing characters).  Guarantee: G1 for history tables (a
 *    resumed copy's versions open where the first run's did) and G3 (a
 *    damaged mark stops the copy).
 */
#include "ct_kit.h"

#include "sinks/mirror/rp_mirror_history_copy.h"

START_TEST(test_roundtrip)
{
	const uint64_t lsns[] = {0, 1, 0x20DD4E0, UINT64_C(0xFFFFFFFFFFFFFFFF), UINT64_C(0x16B374D848)};
	const int64_t times[] = {0, 1, 1796162869389, INT64_C(999999999999999)};

	for (size_t i = 0; i < sizeof(lsns) / sizeof(lsns[0]); i++)
		for (size_t j = 0; j < sizeof(times) / sizeof(times[0]); j++)
		{
			char		m[64];
			uint64_t	l = 7;
			int64_t		t = 7;

			rp_mirror_history_mark_format(lsns[i], times[j], m, sizeof(m));
			ck_assert_msg(rp_mirror_history_mark_parse(m, &l, &t), "does not parse: %s", m);
			ck_assert_uint_eq(l, lsns[i]);
			ck_assert_int_eq(t, times[j]);
		}
}

END_TEST

START_TEST(test_text)
{
	char		m[64];

	rp_mirror_history_mark_format(UINT64_C(0x16B374D848), 1796162869389, m, sizeof(m));
	ck_assert_str_eq(m, "16/B374D848|1796162869389");
	rp_mirror_history_time_sql(1796162869389, m, sizeof(m));
	ck_assert_str_eq(m, "pg_catalog.to_timestamp(1796162869389::numeric / 1000)");
}

END_TEST

START_TEST(test_malformed)
{
	const char *bad[] = {
		"", "|", "0/1", "0/1|", "|5", "0/1 |5", "0/1| 5", "0/1|+5", "0/1|-5", "0/1|5x", "0/1|5|6",
		"0/1|1234567890123456", "x/1|5", "123456789/1|5", "0/1|0x5", "0/1/2|5",
	};
	uint64_t	l = 42;
	int64_t		t = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!rp_mirror_history_mark_parse(bad[i], &l, &t), "accepted: \"%s\"", bad[i]);
	ck_assert(!rp_mirror_history_mark_parse(NULL, &l, &t));
	/* a refused mark leaves the outputs alone */
	ck_assert_uint_eq(l, 42);
	ck_assert_int_eq(t, 42);
}

END_TEST

Suite	   *
ct_suite_histmark(void)
{
	Suite	   *s = suite_create("histmark");
	TCase	   *tc = tcase_create("core");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_malformed);
	suite_add_tcase(s, tc);
	return s;
}
