/*
 * rp_fold.c
 *    Per-coordinate folds of one binding (see rp_fold.h).
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_fold.h"
#include "base/rp_hash.h"

static const char *const rp_fold_names[RP_FOLD__COUNT] = {
	"none", "sum", "avg", "min", "max", "count", "count_distinct"
};

const char *
rp_fold_agg_name(RpFoldAgg agg)
{
	return agg < RP_FOLD__COUNT ? rp_fold_names[agg] : "?";
}

int
rp_fold_agg_parse(const char *name)
{
	for (int i = 0; i < RP_FOLD__COUNT; i++)
		if (strcmp(rp_fold_names[i], name) == 0)
			return i;
	return -1;
}

/*
 * The fold's FNV-1a starts from 1469598103934665603, a digit short of
 * FNV's offset basis, as it always has: the iterator walks the table in
 * slot order, so another start would reorder what a rebuild emits.
 */
#define RP_FOLD_HASH_BASIS UINT64_C(1469598103934665603)

static inline uint64_t
rp_fold_hash(const char *p, size_t n)
{
	return rp_hash_extend(RP_FOLD_HASH_BASIS, p, n);
}

static inline const char *
rp_fold_entry_key(const RpFoldEntry *e)
{
	return (size_t) e->keylen + e->textlen <= RP_FOLD_INLINE ? e->b.inl : e->b.ptr;
}

static inline void
rp_fold_entry_free(RpFold *f, RpFoldEntry *e)
{
	if ((size_t) e->keylen + e->textlen > RP_FOLD_INLINE)
	{
		rp_free(e->b.ptr);
		f->bytes -= (size_t) e->keylen + e->textlen;
	}
}

size_t
rp_fold_bytes(const RpFold *f)
{
	return f->bytes + sizeof(RpFoldCell *) * f->nslots;
}

void
rp_fold_init(RpFold *f, RpFoldAgg agg)
{
	memset(f, 0, sizeof(*f));
	f->agg = agg;
	f->avg_scale = 16;
	f->nslots = 64;
	f->slots = rp_malloc0(sizeof(RpFoldCell *) * f->nslots);
}

static void
rp_fold_cell_free(RpFold *f, RpFoldCell *c)
{
	for (int i = 0; i < c->nvals; i++)
		rp_fold_entry_free(f, &c->vals[i]);
	if (c->vals)
		rp_free(c->vals);
	if (c->idx)
		rp_free(c->idx);
	f->bytes -= sizeof(RpFoldEntry) * (size_t) c->capvals + sizeof(uint32_t) * (size_t) c->idxcap +
		sizeof(RpFoldCell) + c->coordlen + c->labellen + 2;
	rp_decimal_free(&c->total);
	rp_free(c->coord);
	rp_free(c->label);
	rp_free(c);
}

void
rp_fold_clear(RpFold *f)
{
	for (size_t i = 0; i < f->nslots; i++)
	{
		RpFoldCell *c = f->slots[i];

		while (c)
		{
			RpFoldCell *next = c->next;

			rp_fold_cell_free(f, c);
			c = next;
		}
		f->slots[i] = NULL;
	}
	f->ncells = 0;
	f->ntouched = 0;
	f->bytes = 0;
}

void
rp_fold_free(RpFold *f)
{
	rp_fold_clear(f);
	rp_free(f->slots);
	if (f->touched)
		rp_free(f->touched);
	memset(f, 0, sizeof(*f));
}

static void
rp_fold_grow(RpFold *f)
{
	size_t		n = f->nslots * 2;
	RpFoldCell **slots = rp_malloc0(sizeof(RpFoldCell *) * n);

	for (size_t i = 0; i < f->nslots; i++)
	{
		RpFoldCell *c = f->slots[i];

		while (c)
		{
			RpFoldCell *next = c->next;

			c->next = slots[c->hash & (n - 1)];
			slots[c->hash & (n - 1)] = c;
			c = next;
		}
	}
	rp_free(f->slots);
	f->slots = slots;
	f->nslots = n;
}

RpFoldCell *
rp_fold_cell(RpFold *f, const char *coord, size_t coordlen, const char *label, size_t labellen)
{
	uint64_t	h = rp_fold_hash(coord, coordlen);
	RpFoldCell *c;

	for (c = f->slots[h & (f->nslots - 1)]; c; c = c->next)
		if (c->hash == h && c->coordlen == coordlen && memcmp(c->coord, coord, coordlen) == 0)
			return c;
	if (f->ncells >= f->nslots)
		rp_fold_grow(f);
	c = rp_malloc0(sizeof(RpFoldCell));
	c->coord = rp_malloc(coordlen + 1);
	memcpy(c->coord, coord, coordlen);
	c->coord[coordlen] = '\0';
	c->coordlen = (uint32_t) coordlen;
	c->label = rp_malloc(labellen + 1);
	memcpy(c->label, label, labellen);
	c->label[labellen] = '\0';
	c->labellen = (uint32_t) labellen;
	c->hash = h;
	f->bytes += sizeof(RpFoldCell) + coordlen + labellen + 2;
	rp_decimal_init(&c->total);
	c->next = f->slots[h & (f->nslots - 1)];
	f->slots[h & (f->nslots - 1)] = c;
	f->ncells++;
	return c;
}

static void rp_fold_touch(RpFold *f, RpFoldCell *cell);

static int
rp_fold_keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			r = memcmp(a, b, alen < blen ? alen : blen);

	if (r != 0)
		return r;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Index of the entry with this key, or -(insertion point) - 1. */
static int
rp_fold_find(const RpFoldCell *c, const char *key, size_t keylen)
{
	int			lo = 0,
				hi = c->nvals - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			r = rp_fold_keycmp(rp_fold_entry_key(&c->vals[mid]), c->vals[mid].keylen, key, keylen);

		if (r == 0)
			return mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

/* Room for one more entry at the end of the cell's array. */
static void
rp_fold_reserve(RpFold *f, RpFoldCell *c)
{
	int			cap;

	if (c->nvals < c->capvals)
		return;
	cap = c->capvals ? c->capvals * 2 : 4;
	c->vals = c->vals ? rp_realloc(c->vals, sizeof(RpFoldEntry) * (size_t) cap)
		: rp_malloc(sizeof(RpFoldEntry) * (size_t) cap);
	f->bytes += sizeof(RpFoldEntry) * (size_t) (cap - c->capvals);
	c->capvals = cap;
}

/* Fill entry e with v's key (and text, unless count_distinct) and k rows. */
static void
rp_fold_entry_set(RpFold *f, RpFoldEntry *e, const RpFoldValue *v, int64_t k)
{
	/* count_distinct only counts: the text is never written */
	size_t		textlen = f->agg == RP_FOLD_COUNT_DISTINCT ? 0 : v->textlen;
	char	   *p;

	e->keylen = (uint32_t) v->keylen;
	e->textlen = (uint32_t) textlen;
	e->rows = k;
	if (v->keylen + textlen <= RP_FOLD_INLINE)
		p = e->b.inl;
	else
	{
		p = e->b.ptr = rp_malloc(v->keylen + textlen);
		f->bytes += v->keylen + textlen;
	}
	memcpy(p, v->key, v->keylen);
	if (textlen)
		memcpy(p + v->keylen, v->text, textlen);
}

/*
 * min, max and none: the values in key order, so that the extremes are the
 * ends.  A new one moves the ones after it (a seed appends: it reads them in
 * the measure's order).
 */
static RpFoldStatus
rp_fold_count_sorted(RpFold *f, RpFoldCell *c, const RpFoldValue *v, int64_t k)
{
	int			i = rp_fold_find(c, v->key, v->keylen);

	if (i < 0)
	{
		if (k < 0)
			return RP_FOLD_MISSING;
		i = -i - 1;
		rp_fold_reserve(f, c);
		memmove(&c->vals[i + 1], &c->vals[i], sizeof(RpFoldEntry) * (size_t) (c->nvals - i));
		c->nvals++;
		rp_fold_entry_set(f, &c->vals[i], v, k);
		return RP_FOLD_OK;
	}
	if (c->vals[i].rows + k < 0)
		return RP_FOLD_MISSING;
	c->vals[i].rows += k;
	if (c->vals[i].rows == 0)
	{
		rp_fold_entry_free(f, &c->vals[i]);
		memmove(&c->vals[i], &c->vals[i + 1], sizeof(RpFoldEntry) * (size_t) (c->nvals - i - 1));
		c->nvals--;
	}
	return RP_FOLD_OK;
}

/*
 * count_distinct: no order is needed, only each value's row count, so the
 * entries sit unsorted in the array and an open-addressing index of their
 * positions (linear probing, at most three quarters full) finds them: a new
 * value costs O(1) whatever order values come in, where a sorted array moved
 * half of its entries for each (a seed of a million distinct values in
 * random order took minutes).  An index slot holds position + 1 (0: empty).
 */
static uint32_t
rp_fold_idx_home(const RpFoldCell *c, const char *key, size_t keylen)
{
	return (uint32_t) rp_fold_hash(key, keylen) & (c->idxcap - 1);
}

/* The index slot of key, or of the empty slot where it would go. */
static uint32_t
rp_fold_idx_find(const RpFoldCell *c, const char *key, size_t keylen)
{
	uint32_t	i = rp_fold_idx_home(c, key, keylen);

	for (;; i = (i + 1) & (c->idxcap - 1))
	{
		const RpFoldEntry *e;

		if (c->idx[i] == 0)
			return i;
		e = &c->vals[c->idx[i] - 1];
		if (e->keylen == keylen && memcmp(rp_fold_entry_key(e), key, keylen) == 0)
			return i;
	}
}

static void
rp_fold_idx_grow(RpFold *f, RpFoldCell *c)
{
	uint32_t	cap = c->idxcap ? c->idxcap * 2 : 8;

	if (c->idx)
		rp_free(c->idx);
	f->bytes += sizeof(uint32_t) * (size_t) (cap - c->idxcap);
	c->idxcap = cap;
	c->idx = rp_malloc0(sizeof(uint32_t) * (size_t) cap);
	for (int n = 0; n < c->nvals; n++)
	{
		const RpFoldEntry *e = &c->vals[n];

		c->idx[rp_fold_idx_find(c, rp_fold_entry_key(e), e->keylen)] = (uint32_t) n + 1;
	}
}

/* Empty index slot i, moving later ones of its run back (no tombstones). */
static void
rp_fold_idx_delete(RpFoldCell *c, uint32_t i)
{
	uint32_t	mask = c->idxcap - 1;
	uint32_t	j = i;

	c->idx[i] = 0;
	for (;;)
	{
		uint32_t	home;
		const RpFoldEntry *e;

		j = (j + 1) & mask;
		if (c->idx[j] == 0)
			return;
		e = &c->vals[c->idx[j] - 1];
		home = rp_fold_idx_home(c, rp_fold_entry_key(e), e->keylen);
		/* j's entry may fill the hole unless its home lies in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask))
		{
			c->idx[i] = c->idx[j];
			c->idx[j] = 0;
			i = j;
		}
	}
}

static RpFoldStatus
rp_fold_count_hashed(RpFold *f, RpFoldCell *c, const RpFoldValue *v, int64_t k)
{
	uint32_t	slot;
	int			n;

	if (c->idxcap == 0)
		rp_fold_idx_grow(f, c);
	slot = rp_fold_idx_find(c, v->key, v->keylen);
	if (c->idx[slot] == 0)
	{
		if (k < 0)
			return RP_FOLD_MISSING;
		if ((uint64_t) (c->nvals + 1) * 4 > (uint64_t) c->idxcap * 3)
		{
			rp_fold_idx_grow(f, c);
			slot = rp_fold_idx_find(c, v->key, v->keylen);
		}
		rp_fold_reserve(f, c);
		rp_fold_entry_set(f, &c->vals[c->nvals], v, k);
		c->idx[slot] = (uint32_t) ++c->nvals;
		return RP_FOLD_OK;
	}
	n = (int) c->idx[slot] - 1;
	if (c->vals[n].rows + k < 0)
		return RP_FOLD_MISSING;
	c->vals[n].rows += k;
	if (c->vals[n].rows != 0)
		return RP_FOLD_OK;
	/* gone: the last entry takes its place in the array, and its slot follows */
	rp_fold_entry_free(f, &c->vals[n]);
	rp_fold_idx_delete(c, slot);
	if (n != c->nvals - 1)
	{
		const RpFoldEntry *last = &c->vals[c->nvals - 1];

		c->idx[rp_fold_idx_find(c, rp_fold_entry_key(last), last->keylen)] = (uint32_t) n + 1;
		c->vals[n] = *last;
	}
	c->nvals--;
	return RP_FOLD_OK;
}

static RpFoldStatus
rp_fold_count_value(RpFold *f, RpFoldCell *c, const RpFoldValue *v, int64_t k)
{
	return f->agg == RP_FOLD_COUNT_DISTINCT ? rp_fold_count_hashed(f, c, v, k)
		: rp_fold_count_sorted(f, c, v, k);
}

RpFoldStatus
rp_fold_apply(RpFold *f, RpFoldCell *cell, const RpFoldValue *v, int64_t k)
{
	RpFoldStatus st = RP_FOLD_OK;

	rp_fold_touch(f, cell);
	if (cell->rows + k < 0 || (!v->null && cell->nonnull + k < 0))
		return RP_FOLD_MISSING;
	if (!v->null)
	{
		switch (f->agg)
		{
			case RP_FOLD_SUM:
			case RP_FOLD_AVG:
				{
					int64_t    *special = v->kind == RP_DEC_NAN ? &cell->nan
					: v->kind == RP_DEC_PINF ? &cell->pinf
					: v->kind == RP_DEC_NINF ? &cell->ninf : NULL;

					if (special)
					{
						if (*special + k < 0)
							return RP_FOLD_MISSING;
						*special += k;
					}
					else
					{
						rp_decimal_addmul(&cell->total, v->num, k);
						if (k > 0 && v->dscale > cell->dscale)
							cell->dscale = v->dscale;
					}
					break;
				}
			case RP_FOLD_NONE:
			case RP_FOLD_MIN:
			case RP_FOLD_MAX:
			case RP_FOLD_COUNT_DISTINCT:
				if ((st = rp_fold_count_value(f, cell, v, k)) != RP_FOLD_OK)
					return st;
				break;
			default:
				break;
		}
		cell->nonnull += k;
	}
	cell->rows += k;
	if (f->agg == RP_FOLD_NONE && cell->rows > 1)
		return RP_FOLD_COLLISION;
	return RP_FOLD_OK;
}

static void
rp_fold_touch(RpFold *f, RpFoldCell *cell)
{
	if (cell->touched)
		return;
	if (f->ntouched == f->captouched)
	{
		f->captouched = f->captouched ? f->captouched * 2 : 64;
		f->touched = f->touched ? rp_realloc(f->touched, sizeof(RpFoldCell *) * (size_t) f->captouched)
			: rp_malloc(sizeof(RpFoldCell *) * (size_t) f->captouched);
	}
	f->touched[f->ntouched++] = cell;
	cell->touched = true;
}

void
rp_fold_seed_totals(RpFold *f, RpFoldCell *cell, int64_t rows, int64_t nonnull,
					const RpDecimal *total, int dscale, int64_t nan, int64_t pinf, int64_t ninf)
{
	rp_fold_touch(f, cell);
	cell->rows += rows;
	cell->nonnull += nonnull;
	cell->nan += nan;
	cell->pinf += pinf;
	cell->ninf += ninf;
	if (total)
		rp_decimal_addmul(&cell->total, total, 1);
	if (dscale > cell->dscale)
		cell->dscale = dscale;
}

RpFoldResult
rp_fold_result(const RpFold *f, const RpFoldCell *cell, RpBuf *out)
{
	if (cell->rows <= 0)
		return RP_FOLD_REMOVED;
	/* none: two rows on one coordinate have no single value to show */
	if (f->agg == RP_FOLD_NONE && cell->rows > 1)
		return RP_FOLD_REMOVED;
	switch (f->agg)
	{
		case RP_FOLD_COUNT:
		case RP_FOLD_COUNT_DISTINCT:
			{
				char		num[32];
				int			n = snprintf(num, sizeof(num), "%lld",
										 (long long) (f->agg == RP_FOLD_COUNT ? cell->nonnull : cell->nvals));

				rp_buf_put_bytes(out, num, (size_t) n);
				return RP_FOLD_VALUE;
			}
		case RP_FOLD_SUM:
		case RP_FOLD_AVG:
			if (cell->nonnull == 0)
				return RP_FOLD_NULL;
			/* as PostgreSQL: NaN wins, and +Infinity with -Infinity is NaN */
			if (cell->nan > 0 || (cell->pinf > 0 && cell->ninf > 0))
				rp_buf_put_text(out, "NaN");
			else if (cell->pinf > 0)
				rp_buf_put_text(out, "Infinity");
			else if (cell->ninf > 0)
				rp_buf_put_text(out, "-Infinity");
			else if (f->agg == RP_FOLD_SUM)
				rp_decimal_text(&cell->total, cell->dscale, out);
			else
				rp_decimal_div_text(&cell->total, (uint64_t) cell->nonnull,
									cell->dscale > f->avg_scale ? cell->dscale : f->avg_scale, out);
			return RP_FOLD_VALUE;
		case RP_FOLD_NONE:
		case RP_FOLD_MIN:
		case RP_FOLD_MAX:
			{
				const RpFoldEntry *e;

				if (cell->nvals == 0)
					return RP_FOLD_NULL;
				e = f->agg == RP_FOLD_MAX ? &cell->vals[cell->nvals - 1] : &cell->vals[0];
				rp_buf_put_bytes(out, rp_fold_entry_key(e) + e->keylen, e->textlen);
				return RP_FOLD_VALUE;
			}
		default:
			return RP_FOLD_NULL;
	}
}

RpFoldCell *const *
rp_fold_touched(const RpFold *f, int *n)
{
	*n = f->ntouched;
	return f->touched;
}

void
rp_fold_end_batch(RpFold *f)
{
	bool		drop = false;

	for (int i = 0; i < f->ntouched; i++)
	{
		f->touched[i]->touched = false;
		drop |= f->touched[i]->rows <= 0;
	}
	f->ntouched = 0;
	if (!drop)
		return;
	for (size_t i = 0; i < f->nslots; i++)
	{
		RpFoldCell **link = &f->slots[i];

		while (*link)
		{
			RpFoldCell *c = *link;

			if (c->rows <= 0)
			{
				*link = c->next;
				rp_fold_cell_free(f, c);
				f->ncells--;
			}
			else
				link = &c->next;
		}
	}
}

RpFoldCell *
rp_fold_next_cell(const RpFold *f, RpFoldIter *it)
{
	if (it->cur && it->cur->next)
		return it->cur = it->cur->next;
	if (it->cur)
		it->slot++;
	for (; it->slot < f->nslots; it->slot++)
		if (f->slots[it->slot])
			return it->cur = f->slots[it->slot];
	it->cur = NULL;
	return NULL;
}
