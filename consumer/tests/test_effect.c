/*
 * test_effect.c
 *    The mirror's net-effect map (sinks/mirror/rp_mirror_effect.c), with no
 *    server: changes of one key fold into one effect, a batch's keys are
 *    all found again, and the slot array follows the batch that just went,
 *    not the largest one seen (a big batch must not leave every later small
 *    one probing an array past the cache).
 */
#include "ct_kit.h"

#include "sinks/mirror/rp_mirror_int.h"

static RpMirror pg;
static RpMirrorTable tab;
static int	keycol = 0;

static void
setup(void)
{
	memset(&pg, 0, sizeof(pg));
	memset(&tab, 0, sizeof(tab));
	tab.keycols = &keycol;
	tab.nkey = 1;
	rp_buf_init(&tab.arena, 1024);
}

static void
teardown(void)
{
	if (tab.effects)
		rp_free(tab.effects);
	if (tab.slots)
		rp_free(tab.slots);
	rp_buf_free(&tab.arena);
}

/* Upsert (id, v): two int4-sized values, as the wire carries them. */
static void
upsert(uint32_t id, uint32_t v, bool insert)
{
	RpDatum		d[2];
	RpTuple		tup = {2, d};
	RpBuf		key;

	d[0].kind = RP_DATUM_VALUE;
	d[0].len = sizeof(id);
	d[0].data = (const unsigned char *) &id;
	d[1].kind = RP_DATUM_VALUE;
	d[1].len = sizeof(v);
	d[1].data = (const unsigned char *) &v;
	rp_buf_init(&key, 64);
	rp_mirror_effect_upsert(&pg, &tab, &tup, &key, insert, false);
	rp_buf_free(&key);
}

/* The batch's effect on id: its op and, for an upsert, the value of v. */
static RpEffect *
find(uint32_t id, uint32_t *v)
{
	RpDatum		d = {RP_DATUM_VALUE, sizeof(id), (const unsigned char *) &id};
	RpTuple		tup = {1, &d};
	RpBuf		key;
	RpEffect   *e;

	rp_buf_init(&key, 64);
	rp_mirror_key_of(&tab, &tup, &key);
	e = rp_mirror_effect_find(&tab, &key);
	rp_buf_free(&key);
	if (e && v && e->op == RP_EFFECT_UPSERT)
	{
		RpDatum		got;

		rp_mirror_row_get(&tab.arena, e->row_off, 1, &got);
		ck_assert_uint_eq(got.len, sizeof(*v));
		memcpy(v, got.data, sizeof(*v));
	}
	return e;
}

/* n keys from base, each inserted and then updated in the same batch. */
static void
batch(uint32_t base, int n)
{
	for (int i = 0; i < n; i++)
		upsert(base + (uint32_t) i, 1, true);
	for (int i = 0; i < n; i++)
		upsert(base + (uint32_t) i, 2, false);
	ck_assert_int_eq(tab.neffects, n);
	for (int i = 0; i < n; i++)
	{
		uint32_t	v = 0;
		RpEffect   *e = find(base + (uint32_t) i, &v);

		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->op, RP_EFFECT_UPSERT);
		ck_assert(e->fresh);
		ck_assert_uint_eq(v, 2);
	}
	ck_assert_ptr_null(find(base + (uint32_t) n, NULL));
}

START_TEST(test_fold_and_find)
{
	uint32_t	v = 0;

	batch(1, 5000);
	rp_mirror_effects_clear(&tab);
	ck_assert_int_eq(tab.neffects, 0);
	ck_assert_ptr_null(find(1, NULL));
	/* an update of a key the batch has not seen is not fresh */
	upsert(7, 3, false);
	ck_assert_ptr_nonnull(find(7, &v));
	ck_assert(!find(7, NULL)->fresh);
	ck_assert_uint_eq(v, 3);
}
END_TEST

/*
 * After a batch of 100,000 keys the array holds 256K slots; a batch of ten
 * keys then gives it back, so the next batch of 3,000 probes at most 8K
 * slots (32 KB), found again whole.  Without the shrink the array stayed
 * at 256K slots for every later batch.
 */
START_TEST(test_slots_follow_the_batch)
{
	batch(1, 100000);
	ck_assert_int_ge(tab.nslots, 2 * 100000);
	rp_mirror_effects_clear(&tab);
	/* the batch that just went was this size: the array stays */
	ck_assert_int_ge(tab.nslots, 2 * 100000);
	batch(200001, 10);
	rp_mirror_effects_clear(&tab);
	ck_assert_int_le(tab.nslots, 2048);
	batch(300001, 3000);
	ck_assert_int_le(tab.nslots, 8192);
	rp_mirror_effects_clear(&tab);
	/* a steady batch size keeps its array (no free and regrow each time) */
	batch(400001, 3000);
	ck_assert_int_eq(tab.nslots, 8192);
	rp_mirror_effects_clear(&tab);
	ck_assert_int_eq(tab.nslots, 8192);
}
END_TEST

Suite *
ct_suite_effect(void)
{
	Suite	   *s = suite_create("effect");
	TCase	   *tc = tcase_create("effect");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fold_and_find);
	tcase_add_test(tc, test_slots_follow_the_batch);
	suite_add_tcase(s, tc);
	return s;
}
