/*
 * rp_mirror_effect.c
 *    The net-effect map of a batch: per table and key, one upsert or
 *    delete, its row serialized in the table's arena; and what the maps
 *    hold, charged to --max-memory (G5).
 *
 * Within a batch every change is folded into one effect per key (insert
 * then update = one upsert; insert then delete = a delete of a key the
 * destination may not have; an update of the key = a delete of the old key
 * and an upsert of the new one).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_hash.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "base/rp_status.h"
#include "stream/rp_spill.h"

/* ---- serialized rows: per column kind u8, len u32, bytes ------------------ */

static void
rp_mirror_row_put(RpBuf *b, const RpDatum *d)
{
	rp_buf_put_u8(b, d->kind);
	rp_buf_put_u32(b, d->len);
	if (d->len)
		rp_buf_put_bytes(b, d->data, d->len);
}

/*
 * A value this large is not copied into the arena: the row holds where it
 * lies in the record being applied (kind RP_MIRROR_DATUM_REF, rp_mirror_int.h: its
 * address and length), and the map is applied before the next record is read
 * (rp_mirror_effects_bound), while that address is still good.  One large value
 * is then held by the record alone.
 */
#define RP_ROW_REF_MIN (1024 * 1024)

static void
rp_mirror_row_put_ref(RpBuf *b, const RpDatum *d)
{
	uint32_t	len = d->len;

	rp_buf_put_u8(b, RP_MIRROR_DATUM_REF);
	rp_buf_put_u32(b, (uint32_t) (sizeof(d->data) + sizeof(len)));
	rp_buf_put_bytes(b, &d->data, sizeof(d->data));
	rp_buf_put_bytes(b, &len, sizeof(len));
}

/* ---- the effect map --------------------------------------------------------- */

/*
 * FNV-1a, then the 64-bit finalizer (base/rp_hash.h): keys differ mostly in
 * their last bytes (sequential ids), and the table takes the low bits.  It
 * starts from the fold's basis (agg/rp_fold.c says why that one), so the
 * map's order, and so the order effects are staged in, is what it was.
 */
#define RP_MIRROR_HASH_BASIS UINT64_C(1469598103934665603)

static inline uint64_t
rp_mirror_hash(const unsigned char *p, size_t n)
{
	return rp_hash_mix(rp_hash_extend(RP_MIRROR_HASH_BASIS, p, n));
}

/*
 * The slot array is sized for the batch that just went, not the largest
 * one seen: one big batch (a backlog's first, a mass update applied early)
 * would otherwise leave every later small batch probing (and clearing) an
 * array far past the cache, a miss per change.  Measured on the 1M-row
 * backlog of bench/mirror.sh: the array stayed at 256K slots (1 MB) while
 * most batches held about 6,000 keys, and the probe was an eighth of the
 * consumer's CPU.  It starts small, as the effect array and the arena do
 * (rp_mirror_int.h): a batch over many tables touches most with a few rows,
 * and 116 KB a table touched (what they started at) made a batch over 1,000
 * tables pass the maps' share of --max-memory, applied early every few
 * hundred transactions (bench/mirror_tables.sh).
 */
#define RP_MIRROR_SLOTS_MIN 16

static void
rp_mirror_effects_grow(RpMirrorTable *t)
{
	int			n = t->nslots ? t->nslots * 2 : RP_MIRROR_SLOTS_MIN;

	if (t->slots)
		rp_free(t->slots);
	t->slots = rp_malloc0(sizeof(int) * (size_t) n);
	t->nslots = n;
	for (int e = 0; e < t->neffects; e++)
	{
		int			s = (int) (t->effects[e].hash & (uint64_t) (n - 1));

		while (t->slots[s])
			s = (s + 1) & (n - 1);
		t->slots[s] = e + 1;
	}
}

static RpEffect *
rp_mirror_effect_for(RpMirror *pg, RpMirrorTable *t, const RpBuf *key)
{
	uint64_t	h = rp_mirror_hash((const unsigned char *) key->data, key->len);
	int			s;
	RpEffect   *e;

	if ((t->neffects + 1) * 2 > t->nslots)
		rp_mirror_effects_grow(t);
	s = (int) (h & (uint64_t) (t->nslots - 1));
	while (t->slots[s])
	{
		e = &t->effects[t->slots[s] - 1];
		if (e->hash == h && e->key_len == key->len &&
			memcmp(t->arena.data + e->key_off, key->data, key->len) == 0)
			return e;
		s = (s + 1) & (t->nslots - 1);
	}
	if (t->neffects == t->capeffects)
	{
		t->capeffects = t->capeffects ? t->capeffects * 2 : RP_MIRROR_EFFECTS_MIN;
		t->effects = rp_realloc(t->effects, sizeof(RpEffect) * (size_t) t->capeffects);
	}
	if (t->neffects == 0)
		rp_mirror_touch(pg, t);
	e = &t->effects[t->neffects++];
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->key_off = t->arena.len;
	e->key_len = (uint32_t) key->len;
	rp_buf_put_bytes(&t->arena, key->data, key->len);
	t->slots[s] = t->neffects;
	return e;
}

/* The batch's effect on key, or NULL. */
RpEffect   *
rp_mirror_effect_find(RpMirrorTable *t, const RpBuf *key)
{
	uint64_t	h = rp_mirror_hash((const unsigned char *) key->data, key->len);
	int			s;

	if (t->nslots == 0)
		return NULL;
	s = (int) (h & (uint64_t) (t->nslots - 1));
	while (t->slots[s])
	{
		RpEffect   *e = &t->effects[t->slots[s] - 1];

		if (e->hash == h && e->key_len == key->len &&
			memcmp(t->arena.data + e->key_off, key->data, key->len) == 0)
			return e;
		s = (s + 1) & (t->nslots - 1);
	}
	return NULL;
}

void
rp_mirror_key_of(const RpMirrorTable *t, const RpTuple *tup, RpBuf *key)
{
	rp_buf_reset(key);
	for (int k = 0; k < t->nkey; k++)
		rp_mirror_row_put(key, &tup->datums[t->keycols[k]]);
}

void
rp_mirror_effect_delete(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key)
{
	RpEffect   *e;

	rp_mirror_key_of(t, tup, key);
	e = rp_mirror_effect_for(pg, t, key);
	e->op = RP_EFFECT_DELETE;
	e->partial = false;
	e->row_off = e->key_off;
	e->row_len = 0;
}

/* Fold tup into the effect of key (already serialized). */
static void
rp_mirror_effect_put(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, const RpBuf *key, bool insert, bool may_ref)
{
	RpEffect   *e;
	bool		partial = false;
	RpEffect	prev;
	size_t		off;
	int			before = t->neffects;

	e = rp_mirror_effect_for(pg, t, key);
	/* a key first seen as an INSERT did not exist before the batch */
	if (t->neffects > before)
		e->fresh = insert;
	prev = *e;
	for (uint16_t i = 0; i < tup->natts; i++)
		partial |= tup->datums[i].kind == RP_DATUM_UNCHANGED;

	/*
	 * Values taken from prev's row point into the arena we append to: make
	 * room for the whole row first, so no append moves the arena under them.
	 */
	{
		size_t		need = 0;

		for (uint16_t i = 0; i < tup->natts; i++)
		{
			RpDatum		d = tup->datums[i];

			if (d.kind == RP_DATUM_UNCHANGED && prev.op == RP_EFFECT_UPSERT && prev.row_len > 0)
				rp_mirror_row_get(&t->arena, prev.row_off, i, &d);
			need += 5 + (size_t) (may_ref && d.len >= RP_ROW_REF_MIN ? 12 : d.len);
		}
		rp_buf_reserve(&t->arena, need);
	}
	off = t->arena.len;
	for (uint16_t i = 0; i < tup->natts; i++)
	{
		RpDatum		d = tup->datums[i];

		/*
		 * an unchanged TOAST value the batch already holds: take it from
		 * there
		 */
		if (d.kind == RP_DATUM_UNCHANGED && prev.op == RP_EFFECT_UPSERT && prev.row_len > 0)
			rp_mirror_row_get(&t->arena, prev.row_off, i, &d);
		if (may_ref && d.kind == RP_DATUM_VALUE && d.len >= RP_ROW_REF_MIN)
		{
			rp_mirror_row_put_ref(&t->arena, &d);
			pg->refs = true;
			t->has_refs = true;
		}
		else
			rp_mirror_row_put(&t->arena, &d);
	}
	if (partial)
	{
		partial = false;
		for (uint16_t i = 0; i < tup->natts; i++)
		{
			RpDatum		d;

			rp_mirror_row_get(&t->arena, off, i, &d);
			partial |= d.kind == RP_DATUM_UNCHANGED;
		}
	}
	e->op = RP_EFFECT_UPSERT;
	e->partial = partial;
	e->row_off = off;
	e->row_len = t->arena.len - off;
}

void
rp_mirror_effect_upsert(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key, bool insert, bool may_ref)
{
	rp_mirror_key_of(t, tup, key);
	rp_mirror_effect_put(pg, t, tup, key, insert, may_ref);
}

/*
 * An insert into a table without a replica identity: rows are a multiset
 * (two inserts of the same values are two rows), so each insert is an
 * effect of its own, under a key no other change has (t's count of them).
 * Folded by their (empty) key, a batch kept one insert of all (found in the
 * field: 28,451 of 28,532 rows lost).  Such a table takes no update or
 * delete (rp_mirror_apply_change halts on them), so nothing else looks
 * these keys up.
 */
void
rp_mirror_effect_append(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key)
{
	uint64_t	n = ++t->appended;

	rp_buf_reset(key);
	rp_buf_put_bytes(key, &n, sizeof(n));
	rp_mirror_effect_put(pg, t, tup, key, true, true);
}

void
rp_mirror_effects_clear(RpMirrorTable *t)
{
	int			want = RP_MIRROR_SLOTS_MIN;

	while (want < t->neffects * 2)
		want *= 2;
	t->neffects = 0;
	t->text_datums = false;
	t->has_refs = false;
	rp_buf_reset(&t->arena);
	if (t->slots && t->nslots > 2 * want)
	{
		/* the next change grows a fresh array (rp_mirror_effects_grow) */
		rp_free(t->slots);
		t->slots = NULL;
		t->nslots = 0;
	}
	else if (t->slots)
		memset(t->slots, 0, sizeof(int) * (size_t) t->nslots);
}

void
rp_mirror_untouch_all(RpMirror *pg)
{
	for (int i = 0; i < pg->ntouched; i++)
		pg->touched[i]->order = 0;
	pg->ntouched = 0;
	pg->touched_history = false;
}

/* ---- the memory bound (G5) ------------------------------------------------------ */

/*
 * Every table's effect map (arena, effect array, hash slots) is charged to
 * the consumer's memory budget, the counter the assembler's stores spill
 * against.  Once the maps' allocations reach a quarter of --max-memory they
 * are applied inside the open destination transaction, the way a barrier
 * applies them, and their memory is given back; the batch still commits
 * once, with its checkpoint.  One change grows each allocation at most by
 * doubling, so the maps stay under half of --max-memory, and the stores
 * get the rest.  A row holding a large value by reference (rp_mirror_row_put_ref)
 * is applied at once, before the record it points into goes.
 */
#define RP_MIRROR_BOUND_DEFAULT ((size_t) 64 << 20) /* no budget: the
													 * default's quarter */
#define RP_MIRROR_ARENA_INITIAL RP_MIRROR_ARENA_MIN

size_t
rp_mirror_effects_limit(const RpMirror *pg)
{
	const RpSpill *sp = pg->sink ? pg->sink->spill : NULL;

	return sp ? sp->max_memory / 4 : RP_MIRROR_BOUND_DEFAULT;
}

/* Charge what t's map holds now (more or less than before). */
void
rp_mirror_effects_account(RpMirror *pg, RpMirrorTable *t)
{
	size_t		now = t->arena.cap + sizeof(RpEffect) * (size_t) t->capeffects +
	sizeof(int) * (size_t) t->nslots;

	if (now == t->held)
		return;
	/* what was charged goes back to where it was charged */
	if (pg->held == 0)
		pg->budget = pg->sink ? pg->sink->spill : NULL;
	if (pg->budget)
		rp_spill_charge(pg->budget, (int64_t) now - (int64_t) t->held);
	pg->held = pg->held - t->held + now;
	t->held = now;
}

void
rp_mirror_effects_release(RpMirror *pg)
{
	for (int i = 0; i < pg->ntables; i++)
	{
		RpMirrorTable *t = pg->tables[i];

		if (t->effects)
			rp_free(t->effects);
		if (t->slots)
			rp_free(t->slots);
		t->effects = NULL;
		t->slots = NULL;
		t->neffects = t->capeffects = t->nslots = 0;
		t->has_refs = false;
		pg->refs = false;
		if (t->arena.cap > RP_MIRROR_ARENA_INITIAL)
		{
			rp_buf_free(&t->arena);
			rp_buf_init(&t->arena, RP_MIRROR_ARENA_INITIAL);
		}
		rp_buf_reset(&t->arena);
		rp_mirror_effects_account(pg, t);
	}
}
