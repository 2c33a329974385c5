/*
 * rp_bitmap.c
 *    Paged bitmaps (see rp_bitmap.h).
 */
#include "rp_alloc.h"

#include <string.h>

#include "envelope/rp_bitmap.h"

void
rp_bitmap_free(RpBitmap *bm)
{
	for (size_t i = 0; i < bm->npages; i++)
		rp_free(bm->pages[i]);
	rp_free(bm->pages);
	bm->pages = NULL;
	bm->npages = 0;
}

/* Set bit; returns whether it was set before. */
bool
rp_bitmap_set(RpBitmap *bm, uint64_t bit)
{
	size_t		pg = (size_t) (bit >> RP_BITMAP_PAGE_SHIFT);
	uint64_t	off = bit & (RP_BITMAP_PAGE_BITS - 1);
	uint64_t	mask = UINT64_C(1) << (off % 64);
	bool		was;

	if (pg >= bm->npages)
	{
		size_t		n = bm->npages ? bm->npages : 4;

		while (n <= pg)
			n *= 2;
		bm->pages = rp_realloc(bm->pages, n * sizeof(uint64_t *));
		memset(bm->pages + bm->npages, 0, (n - bm->npages) * sizeof(uint64_t *));
		bm->npages = n;
	}
	if (bm->pages[pg] == NULL)
		bm->pages[pg] = rp_malloc0(RP_BITMAP_PAGE_WORDS * sizeof(uint64_t));
	was = (bm->pages[pg][off / 64] & mask) != 0;
	bm->pages[pg][off / 64] |= mask;
	return was;
}

/* Bits set below limit. */
uint64_t
rp_bitmap_count_below(const RpBitmap *bm, uint64_t limit)
{
	uint64_t	n = 0;
	uint64_t	nwords = limit / 64;

	for (size_t pg = 0; pg < bm->npages && (uint64_t) pg * RP_BITMAP_PAGE_WORDS < nwords; pg++)
	{
		uint64_t	first = (uint64_t) pg * RP_BITMAP_PAGE_WORDS;
		uint64_t	last = first + RP_BITMAP_PAGE_WORDS < nwords ? first + RP_BITMAP_PAGE_WORDS : nwords;

		if (bm->pages[pg] == NULL)
			continue;
		for (uint64_t w = first; w < last; w++)
			n += (uint64_t) __builtin_popcountll(bm->pages[pg][w - first]);
	}
	if (limit % 64)
		n += (uint64_t) __builtin_popcountll(rp_bitmap_word(bm, nwords) &
											 ((UINT64_C(1) << (limit % 64)) - 1));
	return n;
}

uint64_t
rp_bitmap_count(const RpBitmap *bm)
{
	return rp_bitmap_count_below(bm, (uint64_t) bm->npages << RP_BITMAP_PAGE_SHIFT);
}

/* The first clear bit below limit, if any. */
bool
rp_bitmap_first_clear_below(const RpBitmap *bm, uint64_t limit, uint64_t *bit)
{
	for (uint64_t w = 0; w * 64 < limit; w++)
	{
		size_t		pg = (size_t) (w / RP_BITMAP_PAGE_WORDS);
		uint64_t	v;

		if (pg >= bm->npages || bm->pages[pg] == NULL)
		{
			*bit = w * 64;
			return true;
		}
		v = ~bm->pages[pg][w % RP_BITMAP_PAGE_WORDS];
		if (v)
		{
			uint64_t	b = w * 64 + (uint64_t) __builtin_ctzll(v);

			if (b >= limit)
				return false;
			*bit = b;
			return true;
		}
	}
	return false;
}

/* The first set bit at or past from, if any. */
bool
rp_bitmap_first_set_from(const RpBitmap *bm, uint64_t from, uint64_t *bit)
{
	uint64_t	end = (uint64_t) bm->npages << RP_BITMAP_PAGE_SHIFT;

	for (uint64_t w = from / 64; w * 64 < end; w++)
	{
		uint64_t	v;

		if (bm->pages[w / RP_BITMAP_PAGE_WORDS] == NULL)
		{
			w += RP_BITMAP_PAGE_WORDS - 1 - w % RP_BITMAP_PAGE_WORDS;
			continue;
		}
		v = bm->pages[w / RP_BITMAP_PAGE_WORDS][w % RP_BITMAP_PAGE_WORDS];
		if (w == from / 64)
			v &= ~UINT64_C(0) << (from % 64);
		if (v)
		{
			*bit = w * 64 + (uint64_t) __builtin_ctzll(v);
			return true;
		}
	}
	return false;
}
