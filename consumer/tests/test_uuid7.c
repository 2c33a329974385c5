/*
 * test_uuid7.c
 *    rp_uuid7: UUIDv7 of RFC 9562 with the Method 1 counter.  Layout
 *    (version nibble 7, variant bits 10, the 48-bit big-endian timestamp
 *    equal to the given milliseconds), order across timestamps, strict
 *    monotonicity within one millisecond over 10000 mints, the counter's
 *    rollover guard, the clock path's clamp when time steps back, the
 *    canonical text form and its parser; threads sharing one generator
 *    mint strictly increasing UUIDs, and generators share no state.
 *    Guarantee: snapshot ids that sort by snapshot time and never repeat.
 */
#include "ct_kit.h"

#include <pthread.h>

#include "base/rp_clock.h"
#include "base/rp_uuid7.h"

/* the generator of each test (the caller owns it: rp_uuid7.h) */
static RpUuid7Gen gen;

static void
setup(void)
{
	rp_error_clear();
	rp_uuid7_gen_init(&gen);
}

static void
teardown(void)
{
	rp_uuid7_gen_free(&gen);
}

static void
assert_layout(const RpUuid *u, int64_t ms)
{
	ck_assert_int_eq(u->b[6] >> 4, 7);	/* version 7 */
	ck_assert_int_eq(u->b[8] >> 6, 2);	/* variant 10 */
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(u->b[i], (unsigned char) (ms >> (8 * (5 - i))));
	ck_assert_int_eq(rp_uuid7_ms(u), ms);
}

START_TEST(test_layout)
{
	static const int64_t ms[] = {
		0, 1, 255, 256, 1700000000000LL, 1796000523456LL, INT64_C(0x123456789ABC),
		RP_UUID7_MAX_MS,
	};
	RpUuid		u;
	char text[	RP_UUID_TEXT_LEN + 1];

	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
	{
		ck_assert_int_eq(rp_uuid7_at(&gen, &u, ms[i]), 0);
		assert_layout(&u, ms[i]);
		rp_uuid_text(&u, text);
		/* the text's version and variant characters */
		ck_assert_int_eq(text[14], '7');
		ck_assert(strchr("89ab", text[19]) != NULL);
	}
	/* the example timestamp of RFC 9562 appendix A.6: 0x017F22E279B0 */
	ck_assert_int_eq(rp_uuid7_at(&gen, &u, INT64_C(0x017F22E279B0)), 0);
	rp_uuid_text(&u, text);
	ck_assert(strncmp(text, "017f22e2-79b0-7", 15) == 0);

	/* out of the 48-bit range */
	ck_assert_int_eq(rp_uuid7_at(&gen, &u, -1), -1);
	ck_assert(strstr(rp_error(), "out of range") != NULL);
	ck_assert_int_eq(rp_uuid7_at(&gen, &u, RP_UUID7_MAX_MS + 1), -1);
}

END_TEST

START_TEST(test_time_order)
{
	RpUuid		prev,
				u;
	char		ptext[RP_UUID_TEXT_LEN + 1],
	text[		RP_UUID_TEXT_LEN + 1];
	int64_t		ms = 1796000000000LL;

	ck_assert_int_eq(rp_uuid7_at(&gen, &prev, ms), 0);
	rp_uuid_text(&prev, ptext);
	for (int i = 1; i < 2000; i++)
	{
		ms += 1 + (i % 7) * 1000;	/* steps of 1 ms to 6 s */
		ck_assert_int_eq(rp_uuid7_at(&gen, &u, ms), 0);
		assert_layout(&u, ms);
		rp_uuid_text(&u, text);
		ck_assert_msg(memcmp(prev.b, u.b, 16) < 0, "not after the previous at step %d", i);
		ck_assert_msg(strcmp(ptext, text) < 0, "text not sorted at step %d", i);
		/* each new millisecond reseeds the counter with its top bit clear */
		ck_assert_int_eq(u.b[6] & 0x08, 0);
		prev = u;
		memcpy(ptext, text, sizeof(text));
	}
}

END_TEST

START_TEST(test_monotonic_same_ms)
{
	const int	n = 10000;
	RpUuid	   *u = malloc(sizeof(RpUuid) * (size_t) n);
	int64_t		ms = 1796000523456LL;
	int			tails_differ = 0;

	for (int i = 0; i < n; i++)
	{
		ck_assert_int_eq(rp_uuid7_at(&gen, &u[i], ms), 0);
		assert_layout(&u[i], ms);
		if (i == 0)
			continue;
		/* the random part (everything after the timestamp) grows */
		ck_assert_msg(memcmp(u[i - 1].b + 6, u[i].b + 6, 10) < 0, "mint %d not above mint %d", i, i - 1);
		if (memcmp(u[i - 1].b + 12, u[i].b + 12, 4) != 0)
			tails_differ++;
	}
	/* the low 32 bits are fresh random bits each time */
	ck_assert_int_gt(tails_differ, n - 10);
	free(u);
}

END_TEST

/* The same ms again later still sorts after everything minted in it. */
START_TEST(test_same_ms_interleaved)
{
	RpUuid		a,
				b,
				c;

	ck_assert_int_eq(rp_uuid7_at(&gen, &a, 5000), 0);
	ck_assert_int_eq(rp_uuid7_at(&gen, &b, 5000), 0);
	ck_assert_int_eq(rp_uuid7_at(&gen, &c, 5001), 0);
	ck_assert(memcmp(a.b, b.b, 16) < 0);
	ck_assert(memcmp(b.b, c.b, 16) < 0);
	/* an explicit earlier ms is honoured (the timestamp is the caller's) */
	ck_assert_int_eq(rp_uuid7_at(&gen, &a, 4000), 0);
	assert_layout(&a, 4000);
}

END_TEST

START_TEST(test_now)
{
	RpUuid		prev,
				u,
				future;
	int64_t		before = rp_clock_wall_ms(),
				after,
				ahead;

	ck_assert_int_eq(rp_uuid7_now(&gen, &prev), 0);
	for (int i = 0; i < 5000; i++)
	{
		ck_assert_int_eq(rp_uuid7_now(&gen, &u), 0);
		ck_assert(memcmp(prev.b, u.b, 16) < 0);
		prev = u;
	}
	after = rp_clock_wall_ms();
	ck_assert_int_ge(rp_uuid7_ms(&u), before);
	ck_assert_int_le(rp_uuid7_ms(&u), after);

	/*
	 * The clock path never goes back: after a UUID an hour ahead (as if the
	 * clock then stepped back an hour), the clock's UUIDs keep that timestamp
	 * and still sort after it.
	 */
	ahead = rp_clock_wall_ms() + 3600 * 1000;
	ck_assert_int_eq(rp_uuid7_at(&gen, &future, ahead), 0);
	ck_assert_int_eq(rp_uuid7_now(&gen, &u), 0);
	ck_assert_int_eq(rp_uuid7_ms(&u), ahead);
	ck_assert(memcmp(future.b, u.b, 16) < 0);
	prev = u;
	ck_assert_int_eq(rp_uuid7_now(&gen, &u), 0);
	ck_assert(memcmp(prev.b, u.b, 16) < 0);
}

END_TEST

START_TEST(test_text)
{
	RpUuid		u,
				back;
	char text[	RP_UUID_TEXT_LEN + 1];

	for (int i = 0; i < 16; i++)
		u.b[i] = (unsigned char) (i * 17);	/* 00 11 22 ... ff */
	rp_uuid_text(&u, text);
	ck_assert_str_eq(text, "00112233-4455-6677-8899-aabbccddeeff");
	ck_assert_uint_eq(strlen(text), RP_UUID_TEXT_LEN);
	ck_assert(rp_uuid_parse(text, strlen(text), &back));
	ck_assert(memcmp(u.b, back.b, 16) == 0);
	/* upper case reads the same */
	ck_assert(rp_uuid_parse("00112233-4455-6677-8899-AABBCCDDEEFF", 36, &back));
	ck_assert(memcmp(u.b, back.b, 16) == 0);

	/* minted ones round-trip and have the canonical shape */
	for (int i = 0; i < 100; i++)
	{
		ck_assert_int_eq(rp_uuid7_at(&gen, &u, 1796000523456LL + i), 0);
		rp_uuid_text(&u, text);
		for (int j = 0; j < RP_UUID_TEXT_LEN; j++)
		{
			if (j == 8 || j == 13 || j == 18 || j == 23)
				ck_assert_int_eq(text[j], '-');
			else
				ck_assert_msg(strchr("0123456789abcdef", text[j]) != NULL, "%s", text);
		}
		ck_assert(rp_uuid_parse(text, RP_UUID_TEXT_LEN, &back));
		ck_assert(memcmp(u.b, back.b, 16) == 0);
	}

	/* not the canonical form */
	ck_assert(!rp_uuid_parse("", 0, &back));
	ck_assert(!rp_uuid_parse("00112233-4455-6677-8899-aabbccddeef", 35, &back));
	ck_assert(!rp_uuid_parse("00112233-4455-6677-8899-aabbccddeeff0", 37, &back));
	ck_assert(!rp_uuid_parse("0011223344556677-8899-aabbccddeeff-", 36, &back));
	ck_assert(!rp_uuid_parse("{0112233-4455-6677-8899-aabbccddeef}", 36, &back));
	ck_assert(!rp_uuid_parse("00112233-4455-6677-8899-aabbccddeefg", 36, &back));
	ck_assert(!rp_uuid_parse("00112233_4455-6677-8899-aabbccddeeff", 36, &back));
	ck_assert(!rp_uuid_parse("00112233-4455-6677-8899-aabbccdd eef", 36, &back));
}

END_TEST

/* Threads sharing one generator: each one's mints increase, and all are distinct. */
#define SHARE_THREADS 4
#define SHARE_MINTS 5000

typedef struct ShareArg
{
	RpUuid7Gen *g;
	RpUuid		u[SHARE_MINTS];
	int			failed;
} ShareArg;

static void *
share_main(void *p)
{
	ShareArg   *a = p;

	for (int i = 0; i < SHARE_MINTS; i++)
	{
		/* one millisecond for all: the counter alone orders them */
		if (rp_uuid7_at(a->g, &a->u[i], 1796000523456LL) < 0)
			a->failed++;
		if (i > 0 && memcmp(a->u[i - 1].b, a->u[i].b, 16) >= 0)
			a->failed++;
	}
	return NULL;
}

static int
uuid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

START_TEST(test_threads_share)
{
	ShareArg   *args = calloc(SHARE_THREADS, sizeof(ShareArg));
	pthread_t	th[SHARE_THREADS];
	RpUuid	   *all = malloc(sizeof(RpUuid) * SHARE_THREADS * SHARE_MINTS);

	for (int t = 0; t < SHARE_THREADS; t++)
	{
		args[t].g = &gen;
		ck_assert_int_eq(pthread_create(&th[t], NULL, share_main, &args[t]), 0);
	}
	for (int t = 0; t < SHARE_THREADS; t++)
	{
		pthread_join(th[t], NULL);
		ck_assert_int_eq(args[t].failed, 0);
		memcpy(all + t * SHARE_MINTS, args[t].u, sizeof(args[t].u));
	}
	/* the counter went up once per mint, whichever thread minted */
	qsort(all, SHARE_THREADS * SHARE_MINTS, sizeof(RpUuid), uuid_cmp);
	for (int i = 1; i < SHARE_THREADS * SHARE_MINTS; i++)
		ck_assert_msg(memcmp(all[i - 1].b, all[i].b, 16) < 0, "a UUID minted twice");
	free(all);
	free(args);
}

END_TEST

/*
 * Two generators share nothing: one that minted far ahead does not move
 * the other's clock path, and each keeps its own counter.
 */
START_TEST(test_generators_apart)
{
	RpUuid7Gen	other = RP_UUID7_GEN_INIT;
	RpUuid		future,
				u,
				a,
				b;
	int64_t		now = rp_clock_wall_ms();

	ck_assert_int_eq(rp_uuid7_at(&other, &future, now + 3600 * 1000), 0);
	ck_assert_int_eq(rp_uuid7_now(&gen, &u), 0);
	ck_assert_int_lt(rp_uuid7_ms(&u), now + 3600 * 1000);
	ck_assert_int_ge(rp_uuid7_ms(&u), now);
	/* each generator's own order holds */
	ck_assert_int_eq(rp_uuid7_at(&other, &a, 5000), 0);
	ck_assert_int_eq(rp_uuid7_at(&other, &b, 5000), 0);
	ck_assert(memcmp(a.b, b.b, 16) < 0);
	ck_assert_int_eq(rp_uuid7_at(&gen, &a, 5000), 0);
	ck_assert_int_eq(rp_uuid7_at(&gen, &b, 5000), 0);
	ck_assert(memcmp(a.b, b.b, 16) < 0);
	rp_uuid7_gen_free(&other);
}

END_TEST

Suite	   *
ct_suite_uuid7(void)
{
	Suite	   *s = suite_create("uuid7");
	TCase	   *tc = tcase_create("uuid7");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_time_order);
	tcase_add_test(tc, test_monotonic_same_ms);
	tcase_add_test(tc, test_same_ms_interleaved);
	tcase_add_test(tc, test_now);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_threads_share);
	tcase_add_test(tc, test_generators_apart);
	suite_add_tcase(s, tc);
	return s;
}
