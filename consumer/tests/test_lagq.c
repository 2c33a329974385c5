/*
 * test_lagq.c
 *    The pending commit times behind "seconds behind the source"
 *    (run/rp_lagq.c): the oldest received and not yet durable is what
 *    counts, a durable checkpoint drops what it covers, an empty queue is
 *    caught up (0), and a full one never reads less than the truth: the
 *    newest entry stretches and keeps the older commit time.
 */
#include "ct_kit.h"

#include "run/rp_lagq.h"

START_TEST(test_lagq_order)
{
	RpLagQueue *q = malloc(sizeof(*q));

	rp_lagq_init(q);
	ck_assert_int_eq(rp_lagq_oldest(q), 0);
	rp_lagq_push(q, 100, 1000);
	rp_lagq_push(q, 200, 2000);
	rp_lagq_push(q, 300, 3000);
	ck_assert_int_eq(rp_lagq_oldest(q), 1000);
	/* a checkpoint inside the first transaction's range does not cover it */
	rp_lagq_durable(q, 99);
	ck_assert_int_eq(rp_lagq_oldest(q), 1000);
	rp_lagq_durable(q, 200);
	ck_assert_int_eq(rp_lagq_oldest(q), 3000);
	rp_lagq_durable(q, 1000);
	ck_assert_int_eq(rp_lagq_oldest(q), 0);
	/* a transaction sent again after a reconnect: covered by the newest */
	rp_lagq_push(q, 400, 4000);
	rp_lagq_push(q, 350, 3500);
	ck_assert_int_eq(q->n, 1);
	ck_assert_int_eq(rp_lagq_oldest(q), 3500);
	rp_lagq_durable(q, 400);
	ck_assert_int_eq(rp_lagq_oldest(q), 0);
	free(q);
}

END_TEST

START_TEST(test_lagq_full)
{
	RpLagQueue *q = malloc(sizeof(*q));

	rp_lagq_init(q);
	for (int i = 1; i <= RP_LAGQ_CAP + 10; i++)
		rp_lagq_push(q, (uint64_t) i * 10, (int64_t) i * 100);
	ck_assert_int_eq(q->n, RP_LAGQ_CAP);
	/* everything but the last entry durable: it reads the older time */
	rp_lagq_durable(q, (uint64_t) (RP_LAGQ_CAP - 1) * 10);
	ck_assert_int_eq(q->n, 1);
	ck_assert_int_eq(rp_lagq_oldest(q), (int64_t) RP_LAGQ_CAP * 100);
	/* and it ends where the last pushed does */
	rp_lagq_durable(q, (uint64_t) (RP_LAGQ_CAP + 9) * 10);
	ck_assert_int_eq(q->n, 1);
	rp_lagq_durable(q, (uint64_t) (RP_LAGQ_CAP + 10) * 10);
	ck_assert_int_eq(q->n, 0);
	/* wraps around the ring */
	for (int round = 0; round < 3; round++)
	{
		for (int i = 0; i < RP_LAGQ_CAP / 2 + 7; i++)
			rp_lagq_push(q, 100000 + (uint64_t) round * 10000 + (uint64_t) i, 7 + i);
		ck_assert_int_eq(rp_lagq_oldest(q), 7);
		rp_lagq_durable(q, 100000 + (uint64_t) round * 10000 + RP_LAGQ_CAP);
		ck_assert_int_eq(rp_lagq_oldest(q), 0);
	}
	free(q);
}

END_TEST

Suite	   *
ct_suite_lagq(void)
{
	Suite	   *s = suite_create("lagq");
	TCase	   *tc = tcase_create("lagq");

	tcase_add_test(tc, test_lagq_order);
	tcase_add_test(tc, test_lagq_full);
	suite_add_tcase(s, tc);
	return s;
}
