/*
 * rp_bitmap.h
 *    Paged bitmaps over 64-bit positions: pages of 64 Ki bits allocated on
 *    first set, so a sparse range (the seqs of a snapshot seen so far)
 *    costs only the pages it touches.  Used by verify-snapshot's
 *    reassembler (rp_reassemble.h) for the seqs seen and seen twice.
 */
#ifndef RP_BITMAP_H
#define RP_BITMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_BITMAP_PAGE_SHIFT 16 /* 64 Ki bits (8 KiB) a page */
#define RP_BITMAP_PAGE_BITS (UINT64_C(1) << RP_BITMAP_PAGE_SHIFT)
#define RP_BITMAP_PAGE_WORDS (RP_BITMAP_PAGE_BITS / 64)

typedef struct RpBitmap
{
	uint64_t  **pages;			/* NULL page: all clear */
	size_t		npages;
} RpBitmap;

static inline bool
rp_bitmap_test(const RpBitmap *bm, uint64_t bit)
{
	size_t		pg = (size_t) (bit >> RP_BITMAP_PAGE_SHIFT);
	uint64_t	off = bit & (RP_BITMAP_PAGE_BITS - 1);

	if (pg >= bm->npages || bm->pages[pg] == NULL)
		return false;
	return (bm->pages[pg][off / 64] >> (off % 64)) & 1;
}

/* The 64 bits of word w (bits 64w .. 64w+63). */
static inline uint64_t
rp_bitmap_word(const RpBitmap *bm, uint64_t w)
{
	size_t		pg = (size_t) (w / RP_BITMAP_PAGE_WORDS);

	if (pg >= bm->npages || bm->pages[pg] == NULL)
		return 0;
	return bm->pages[pg][w % RP_BITMAP_PAGE_WORDS];
}

extern void rp_bitmap_free(RpBitmap *bm);

/* Set bit; returns whether it was set before. */
extern bool rp_bitmap_set(RpBitmap *bm, uint64_t bit);

/* Bits set below limit, and in all. */
extern uint64_t rp_bitmap_count_below(const RpBitmap *bm, uint64_t limit);
extern uint64_t rp_bitmap_count(const RpBitmap *bm);

/* The first clear bit below limit, if any. */
extern bool rp_bitmap_first_clear_below(const RpBitmap *bm, uint64_t limit, uint64_t *bit);

/* The first set bit at or past from, if any. */
extern bool rp_bitmap_first_set_from(const RpBitmap *bm, uint64_t from, uint64_t *bit);

#endif							/* RP_BITMAP_H */
