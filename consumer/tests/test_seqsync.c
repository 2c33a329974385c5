/*
 * test_seqsync.c
 *    The pure parts of the migration commands: rp_seqsync_decide (the
 *    destination's next value made at least the source's plus the margin,
 *    in the increment's direction; is_called read the way nextval reads
 *    it; never backwards; a target outside the bounds refused, also past
 *    the int64 ends), the selection rule (owned or used by a selected
 *    table; standalone ones only without include_tables) and rp_mwait's
 *    lag and progress line.
 *    Guarantee: a synced sequence hands out no key the source handed out.
 */
#include "ct_kit.h"

#include "migrate/rp_mwait.h"
#include "migrate/rp_seqsync.h"

static RpSeqPos
pos(int64_t last, bool called)
{
	RpSeqPos	p = {last, called};

	return p;
}

START_TEST(test_next)
{
	ck_assert_int_eq(rp_seqsync_next(pos(10, true), 1), 11);
	ck_assert_int_eq(rp_seqsync_next(pos(10, false), 1), 10);
	ck_assert_int_eq(rp_seqsync_next(pos(10, true), -3), 7);
	ck_assert(rp_seqsync_next(pos(INT64_MAX, true), 1) == INT64_MAX);
	ck_assert(rp_seqsync_next(pos(INT64_MIN, true), -1) == INT64_MIN);
}

END_TEST

START_TEST(test_advance)
{
	int64_t		next = 0;

	/* source handed out 100: the destination's next must be 101 */
	ck_assert_int_eq(rp_seqsync_decide(pos(100, true), pos(1, false), 1, 1, INT64_MAX, 0, &next),
					 RP_SEQ_SET);
	ck_assert_int_eq(next, 101);
	/* source never called: its next is its last_value (the start) */
	ck_assert_int_eq(rp_seqsync_decide(pos(50, false), pos(1, false), 1, 1, INT64_MAX, 0, &next),
					 RP_SEQ_SET);
	ck_assert_int_eq(next, 50);
	/* margin and a step of 7 */
	ck_assert_int_eq(rp_seqsync_decide(pos(5000, true), pos(1, true), 7, 1, INT64_MAX, 1000, &next),
					 RP_SEQ_SET);
	ck_assert_int_eq(next, 6007);
}

END_TEST

START_TEST(test_never_backwards)
{
	int64_t		next = -1;

	/* the destination's next (201) is already past the source's (101) */
	ck_assert_int_eq(rp_seqsync_decide(pos(100, true), pos(200, true), 1, 1, INT64_MAX, 0, &next),
					 RP_SEQ_KEEP);
	/* equal next values: nothing to do */
	ck_assert_int_eq(rp_seqsync_decide(pos(100, true), pos(101, false), 1, 1, INT64_MAX, 0, &next),
					 RP_SEQ_KEEP);

	/*
	 * one behind: is_called matters (100 called hands out 101 next; 100 not
	 * called hands 100)
	 */
	ck_assert_int_eq(rp_seqsync_decide(pos(100, true), pos(100, false), 1, 1, INT64_MAX, 0, &next),
					 RP_SEQ_SET);
	ck_assert_int_eq(next, 101);
}

END_TEST

START_TEST(test_descending)
{
	int64_t		next = 0;

	/* a descending sequence: "ahead" is lower */
	ck_assert_int_eq(rp_seqsync_decide(pos(-100, true), pos(-1, false), -1, INT64_MIN, -1, 10, &next),
					 RP_SEQ_SET);
	ck_assert_int_eq(next, -111);
	ck_assert_int_eq(rp_seqsync_decide(pos(-100, true), pos(-500, true), -1, INT64_MIN, -1, 10, &next),
					 RP_SEQ_KEEP);
}

END_TEST

START_TEST(test_range)
{
	int64_t		next = 0;

	/* past the destination's maximum (an integer sequence), or past int64 */
	ck_assert_int_eq(rp_seqsync_decide(pos(2147483600, true), pos(1, false), 1, 1, 2147483647, 100, &next),
					 RP_SEQ_RANGE);
	ck_assert_int_eq(rp_seqsync_decide(pos(INT64_MAX, true), pos(1, false), 1, 1, INT64_MAX, 0, &next),
					 RP_SEQ_RANGE);
	ck_assert_int_eq(rp_seqsync_decide(pos(INT64_MAX - 5, true), pos(1, false), 1, 1, INT64_MAX, INT64_MAX, &next),
					 RP_SEQ_RANGE);
	/* up to the maximum exactly is fine */
	ck_assert_int_eq(rp_seqsync_decide(pos(2147483546, true), pos(1, false), 1, 1, 2147483647, 100, &next),
					 RP_SEQ_SET);
	ck_assert_int_eq(next, 2147483647);
}

END_TEST

START_TEST(test_selected)
{
	RpSnapSelect all = {.include = NULL};
	RpSnapSelect inc = {.include = "public.orders"};
	RpSnapSelect exc = {.exclude = "public.loose*"};

	/* owned or used by a selected table: selected; only by others: not */
	ck_assert(rp_seqsync_selected(&inc, 1, true, "public", "orders_id_seq"));
	ck_assert(!rp_seqsync_selected(&inc, 2, false, "public", "orders_id_seq"));
	ck_assert(!rp_seqsync_selected(&all, 1, false, "public", "t_id_seq"));
	/* standalone: with no include list by its own name, never with one */
	ck_assert(rp_seqsync_selected(&all, 0, false, "public", "loose_seq"));
	ck_assert(!rp_seqsync_selected(&inc, 0, false, "public", "loose_seq"));
	ck_assert(!rp_seqsync_selected(&exc, 0, false, "public", "loose_seq"));
	ck_assert(rp_seqsync_selected(&exc, 0, false, "public", "ids"));
}

END_TEST

START_TEST(test_lag)
{
	char		line[200];

	ck_assert(rp_mwait_lag(1000, 400) == 600);
	ck_assert(rp_mwait_lag(1000, 1000) == 0);
	ck_assert(rp_mwait_lag(1000, 5000) == 0);
	rp_mwait_format(line, sizeof(line), ((uint64_t) 1 << 32) | 0x16B3748, true, 0x16A0000);
	ck_assert_str_eq(line, "waiting for 1/16B3748: checkpoint 0/16A0000, 4295046984 bytes behind");
	rp_mwait_format(line, sizeof(line), 0x100, false, 0);
	ck_assert_str_eq(line, "waiting for 0/100: no checkpoint row yet");
}

END_TEST

Suite	   *
ct_suite_seqsync(void)
{
	Suite	   *s = suite_create("seqsync");
	TCase	   *tc = tcase_create("seqsync");

	tcase_add_test(tc, test_next);
	tcase_add_test(tc, test_advance);
	tcase_add_test(tc, test_never_backwards);
	tcase_add_test(tc, test_descending);
	tcase_add_test(tc, test_range);
	tcase_add_test(tc, test_selected);
	tcase_add_test(tc, test_lag);
	suite_add_tcase(s, tc);
	return s;
}
