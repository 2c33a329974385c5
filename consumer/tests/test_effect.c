/*
 * test_effect.c
 *    The mirror's net-effect map (sinks/mirror/rp_mirror_effect.c), with no
 *    server: changes of one key fold into one effect, a batch's keys are
 *    all found again, and the slot array follows the batch that just went,
 *    not the largest one seen (a big batch must not leave every later small
 *    one probing an array past the cache); and a table without a replica
 *    identity keeps every insert of a batch (rp_mirror_apply_change).
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

/* Free what the mirror's change entry point made in pg. */
static void
free_tables(void)
{
	rp_mirror_effects_release(&pg);
	for (int i = 0; i < pg.ntables; i++)
		rp_mirror_table_free(&pg, pg.tables[i]);
	rp_free(pg.tables);
	if (pg.tabidx)
		rp_free(pg.tabidx);
	if (pg.touched)
		rp_free(pg.touched);
	rp_mirror_backfill_free(&pg);
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

/*
 * A table with no key and the default replica identity: 150 inserts, many
 * of them equal, through the mirror's change entry point, are 150 effects
 * (a multiset).  Before the fix they folded under the empty key into one:
 * the field's minimal case kept 1 row of 150.  Its update is refused.
 */
START_TEST(test_keyless_inserts_all_kept)
{
	RpColumn	cols[2] = {{.attnum = 1,.name = "tid",.type_oid = 23,.type_name = "integer",.typmod = -1,
	.encoding = RP_ENC_INT4}, {.attnum = 2,.name = "delta",.type_oid = 23,.type_name = "integer",
	.typmod = -1,.encoding = RP_ENC_INT4}};
	RpRelation	rel = {.relid = 4242,.schema = "public",.name = "h",.identity = RP_IDENTITY_DEFAULT,
	.natts = 2,.cols = cols};
	RpMirrorTable *t;
	RpRecord	rec;
	RpDatum		d[2];
	uint32_t	tid,
				delta = 1;

	pg.opts.slot = "s";
	rp_mirror_backfill_init(&pg);
	t = rp_mirror_table_get(&pg, &rel);
	ck_assert(t->no_identity);
	t->resolved = true;
	memset(&rec, 0, sizeof(rec));
	rec.tag = RP_TAG_INSERT;
	rec.u.change.rel = &rel;
	rec.u.change.new_tuple.natts = 2;
	rec.u.change.new_tuple.datums = d;
	for (int i = 0; i < 150; i++)
	{
		tid = (uint32_t) (i % 7);
		d[0] = (RpDatum)
		{
			RP_DATUM_VALUE, sizeof(tid), (const unsigned char *) &tid
		};
		d[1] = (RpDatum)
		{
			RP_DATUM_VALUE, sizeof(delta), (const unsigned char *) &delta
		};
		ck_assert_int_eq(rp_mirror_apply_change(&pg, &rec), 0);
	}
	ck_assert_int_eq(t->neffects, 150);
	for (int e = 0; e < t->neffects; e++)
	{
		ck_assert_int_eq(t->effects[e].op, RP_EFFECT_UPSERT);
		ck_assert(t->effects[e].fresh);
	}
	rec.tag = RP_TAG_UPDATE;
	ck_assert_int_eq(rp_mirror_apply_change(&pg, &rec), -1);
	ck_assert_ptr_nonnull(strstr(rp_error(), "no replica identity"));
	rp_error_clear();
	free_tables();
}

END_TEST

/*
 * A batch over many tables touches each with a row: each table is found
 * again by its relid among thousands, every one is in the touched list
 * once, in the order of first touch, and what the effect maps hold stays
 * small per table.  Before the fix each table touched held 116 KB (a 64 KB
 * arena, room for 1,024 effects and 1,024 slots): 3,000 tables held 348 MB,
 * past the maps' share of any --max-memory, applied early every few
 * hundred transactions (bench/mirror_tables.sh).
 */
START_TEST(test_many_tables_small_maps)
{
	enum
	{
	NT = 3000};
	static RpColumn cols[1] = {{.attnum = 1,.name = "id",.type_oid = 23,.type_name = "integer",.typmod = -1,
	.encoding = RP_ENC_INT4,.flags = RP_COL_PRIMARY_KEY}};
	static RpRelation rels[NT];
	RpRecord	rec;
	RpDatum		d[1];
	uint32_t	id;

	pg.opts.slot = "s";
	rp_mirror_backfill_init(&pg);
	memset(&rec, 0, sizeof(rec));
	rec.tag = RP_TAG_INSERT;
	rec.u.change.new_tuple.natts = 1;
	rec.u.change.new_tuple.datums = d;
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < NT; i++)
		{
			rels[i] = (RpRelation)
			{
				.relid = (uint32_t) (16384 + 7 * i),.schema = "public",.name = "t",
					.identity = RP_IDENTITY_DEFAULT,.natts = 1,.cols = cols
			};
			rec.u.change.rel = &rels[i];
			id = (uint32_t) (round * NT + i);
			d[0] = (RpDatum)
			{
				RP_DATUM_VALUE, sizeof(id), (const unsigned char *) &id
			};
			ck_assert_int_eq(rp_mirror_apply_change(&pg, &rec), 0);
		}
	ck_assert_int_eq(pg.ntables, NT);
	ck_assert_int_eq(pg.ntouched, NT);
	for (int i = 0; i < NT; i++)
	{
		ck_assert_uint_eq(pg.touched[i]->relid, rels[i].relid);
		ck_assert_int_eq(pg.touched[i]->order, i + 1);
		ck_assert_int_eq(pg.touched[i]->neffects, 2);
		ck_assert_ptr_eq(rp_mirror_table_get(&pg, &rels[i]), pg.touched[i]);
	}
	ck_assert_uint_le(pg.held / NT, 4096);
	ck_assert_uint_eq(pg.bound_flushes, 0);
	rp_mirror_untouch_all(&pg);
	free_tables();
}

END_TEST

Suite	   *
ct_suite_effect(void)
{
	Suite	   *s = suite_create("effect");
	TCase	   *tc = tcase_create("effect");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fold_and_find);
	tcase_add_test(tc, test_slots_follow_the_batch);
	tcase_add_test(tc, test_keyless_inserts_all_kept);
	tcase_add_test(tc, test_many_tables_small_maps);
	suite_add_tcase(s, tc);
	return s;
}
