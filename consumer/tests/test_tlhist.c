/*
 * test_tlhist.c
 *    Timeline histories (consumer/base/rp_tlhist.c): the history file as
 *    the server writes it, text that must not read, and the verdict on a
 *    checkpoint after a promotion: the same timeline, an ancestor left
 *    after everything held, an ancestor left before it (the promoted
 *    server was behind), a timeline the history does not hold (another
 *    branch), and a checkpoint on a later timeline than the server's.
 */
#include "ct_kit.h"
#include "base/rp_tlhist.h"

/* as a server promoted twice writes 00000003.history */
static const char hist3[] =
"1\t0/3000060\tno recovery target specified\n"
"\n"
"2\t0/5A0000A8\tno recovery target specified\n";

START_TEST(test_parse)
{
	RpTlHistEntry *e;
	int			n;

	ck_assert_int_eq(rp_tlhist_parse(hist3, strlen(hist3), &e, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(e[0].tli, 1);
	ck_assert_uint_eq(e[0].switchpoint, 0x3000060);
	ck_assert_uint_eq(e[1].tli, 2);
	ck_assert_uint_eq(e[1].switchpoint, 0x5A0000A8);
	rp_free(e);

	/*
	 * comments, blank lines, CRLF and no final newline are what the server
	 * skips
	 */
	{
		const char	t[] = "# a comment\r\n  \n1 16/B374D848 reason\r\n7\t17/0";

		ck_assert_int_eq(rp_tlhist_parse(t, strlen(t), &e, &n), 0);
		ck_assert_int_eq(n, 2);
		ck_assert_uint_eq(e[0].switchpoint, 0x16B374D848ULL);
		ck_assert_uint_eq(e[1].tli, 7);
		ck_assert_uint_eq(e[1].switchpoint, 0x1700000000ULL);
		rp_free(e);
	}

	/* an empty history (timeline 1 has none) */
	ck_assert_int_eq(rp_tlhist_parse("", 0, &e, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_ptr_null(e);
}

END_TEST

START_TEST(test_parse_garbage)
{
	const char *bad[] = {
		"x\t0/1\n",				/* no timeline */
		"1\n",					/* no switch point */
		"1\tzz\n",				/* a switch point that does not read */
		"0\t0/1\n",				/* timeline 0 does not exist */
		"2\t0/1\n1\t0/2\n",		/* timelines go back */
		"1\t0/1\n1\t0/2\n",		/* or repeat */
		"99999999999\t0/1\n",	/* past 32 bits */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		RpTlHistEntry *e = (RpTlHistEntry *) 1;
		int			n = 5;

		ck_assert_msg(rp_tlhist_parse(bad[i], strlen(bad[i]), &e, &n) == -1, "case %zu must not read", i);
		ck_assert_ptr_null(e);
		ck_assert_int_eq(n, 0);
	}
}

END_TEST

START_TEST(test_judge)
{
	RpTlHistEntry *e;
	int			n;
	uint64_t	sw;

	ck_assert_int_eq(rp_tlhist_parse(hist3, strlen(hist3), &e, &n), 0);

	/* the same timeline: nothing to judge */
	ck_assert_int_eq(rp_tlhist_judge(e, n, 3, 0x99000000, 3, &sw), RP_TL_SAME);
	ck_assert_uint_eq(sw, 0);

	/* timeline 2 left at 0/5A0000A8: held up to it, or exactly at it, goes on */
	ck_assert_int_eq(rp_tlhist_judge(e, n, 2, 0x59000000, 3, &sw), RP_TL_FOLLOWS);
	ck_assert_uint_eq(sw, 0x5A0000A8);
	ck_assert_int_eq(rp_tlhist_judge(e, n, 2, 0x5A0000A8, 3, &sw), RP_TL_FOLLOWS);
	/* one byte past it: the new timeline never had what was held */
	ck_assert_int_eq(rp_tlhist_judge(e, n, 2, 0x5A0000A9, 3, &sw), RP_TL_PAST_SWITCH);
	ck_assert_uint_eq(sw, 0x5A0000A8);

	/* the grandparent counts as well, with its own switch point */
	ck_assert_int_eq(rp_tlhist_judge(e, n, 1, 0x3000000, 3, &sw), RP_TL_FOLLOWS);
	ck_assert_int_eq(rp_tlhist_judge(e, n, 1, 0x4000000, 3, &sw), RP_TL_PAST_SWITCH);
	ck_assert_uint_eq(sw, 0x3000060);

	/* a checkpoint on a later timeline than the server's */
	ck_assert_int_eq(rp_tlhist_judge(e, n, 4, 0x10, 3, &sw), RP_TL_NEWER);
	rp_free(e);

	/* another branch: timeline 4's history went 1 -> 3 -> 4, never through 2 */
	{
		const char	t[] = "1\t0/3000060\tx\n3\t0/7000000\tx\n";

		ck_assert_int_eq(rp_tlhist_parse(t, strlen(t), &e, &n), 0);
		ck_assert_int_eq(rp_tlhist_judge(e, n, 2, 0x3000000, 4, &sw), RP_TL_NOT_ANCESTOR);
		ck_assert_uint_eq(sw, 0);
		rp_free(e);
	}

	/* a server on timeline 2 with no history read at all holds no ancestor */
	ck_assert_int_eq(rp_tlhist_judge(NULL, 0, 1, 0x10, 2, &sw), RP_TL_NOT_ANCESTOR);
}

END_TEST

Suite	   *
ct_suite_tlhist(void)
{
	Suite	   *s = suite_create("tlhist");
	TCase	   *tc = tcase_create("tlhist");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_garbage);
	tcase_add_test(tc, test_judge);
	suite_add_tcase(s, tc);
	return s;
}
