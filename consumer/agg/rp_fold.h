/*
 * rp_fold.h
 *    Folds of one aggregate binding: per coordinate (the values of its
 *    dimension columns) the state that lets a change be taken back out.
 *
 * Every cell keeps its row count and its count of non-NULL measures;
 * sum and avg keep an exact total (rp_decimal.h) with NaN, +Infinity and
 * -Infinity counted apart, so removing a NaN row brings a finite sum back;
 * min, max, count_distinct and none keep each distinct value's row count
 * (in key order, so deleting one of two rows that share the maximum keeps
 * it; count_distinct, which needs no order, finds them by hash).  A change is a removal of its old row from one cell and an addition
 * of its new row to another (maybe the same); the cells a batch touched
 * are listed so the output writes each once, with its final value.
 *
 * The module is pure: values arrive already read (a key that orders and
 * identifies them, a text the outputs write, the exact number for sums).
 */
#ifndef RP_FOLD_H
#define RP_FOLD_H

#include "rp_buf.h"
#include "agg/rp_decimal.h"

typedef enum RpFoldAgg
{
	RP_FOLD_NONE,				/* the cell is the one row's value */
	RP_FOLD_SUM,
	RP_FOLD_AVG,
	RP_FOLD_MIN,
	RP_FOLD_MAX,
	RP_FOLD_COUNT,				/* non-NULL measures, as count(column) */
	RP_FOLD_COUNT_DISTINCT,
	RP_FOLD__COUNT
} RpFoldAgg;

/* One measure value as the fold sees it. */
typedef struct RpFoldValue
{
	bool		null;
	RpDecKind	kind;			/* sum/avg: finite or one of the specials */
	const RpDecimal *num;		/* sum/avg, finite values */
	int			dscale;			/* display places of num */
	const char *key;			/* equality and order (memcmp, then length) */
	size_t		keylen;
	const char *text;			/* as the outputs write it */
	size_t		textlen;
} RpFoldValue;

/*
 * One distinct value of a cell: its key, then its text (count_distinct keeps
 * none: it only counts), inline when they fit, else in one allocation.  A
 * fold can hold millions: 32 bytes each, plus the array's growth room.
 */
#define RP_FOLD_INLINE 16

typedef struct RpFoldEntry
{
	int64_t		rows;
	uint32_t	keylen;
	uint32_t	textlen;
	union
	{
		char		inl[RP_FOLD_INLINE];
		char	   *ptr;
	}			b;
} RpFoldEntry;

typedef struct RpFoldCell
{
	char	   *coord;			/* identity of the coordinate */
	uint32_t	coordlen;
	char	   *label;			/* how the outputs write the coordinate */
	uint32_t	labellen;
	uint64_t	hash;
	int64_t		rows;
	int64_t		nonnull;
	int64_t		nan;
	int64_t		pinf;
	int64_t		ninf;
	RpDecimal	total;			/* finite non-NULL measures */
	int			dscale;			/* widest display scale seen */
	RpFoldEntry *vals;			/* sorted by key; count_distinct: unsorted */
	int			nvals;
	int			capvals;
	uint32_t   *idx;			/* count_distinct: position + 1 of each value,
								 * by hash (0: empty) */
	uint32_t	idxcap;			/* slots: a power of two, or 0 */
	bool		touched;
	struct RpFoldCell *next;	/* hash chain */
} RpFoldCell;

typedef struct RpFold
{
	RpFoldAgg	agg;
	int			avg_scale;		/* minimum places of an avg */
	RpFoldCell **slots;			/* hash chains on the coordinate */
	size_t		nslots;
	size_t		ncells;
	RpFoldCell **touched;
	int			ntouched;
	int			captouched;
	size_t		bytes;			/* what the cells and their values hold (a
								 * gauge) */
} RpFold;

/* What adding or removing a row found. */
typedef enum RpFoldStatus
{
	RP_FOLD_OK,
	RP_FOLD_COLLISION,			/* none: a second row on one coordinate */
	RP_FOLD_MISSING				/* removal of a row the fold does not hold */
} RpFoldStatus;

/* How a cell reads after the batch. */
typedef enum RpFoldResult
{
	RP_FOLD_REMOVED,			/* no rows left (or, for none, no single row):
								 * no cell */
	RP_FOLD_NULL,				/* rows, but the aggregate is NULL */
	RP_FOLD_VALUE				/* text appended to the buffer */
} RpFoldResult;

extern const char *rp_fold_agg_name(RpFoldAgg agg);
extern int	rp_fold_agg_parse(const char *name);	/* -1 when unknown */

extern void rp_fold_init(RpFold *f, RpFoldAgg agg);
extern void rp_fold_free(RpFold *f);

/* Drop every cell (rebuild, TRUNCATE). */
extern void rp_fold_clear(RpFold *f);

/* The cell of a coordinate, created empty (label copied) when new. */
extern RpFoldCell *rp_fold_cell(RpFold *f, const char *coord, size_t coordlen,
								const char *label, size_t labellen);

/* Add k rows of v to the cell (k < 0 removes them); marks it touched. */
extern RpFoldStatus rp_fold_apply(RpFold *f, RpFoldCell *cell, const RpFoldValue *v, int64_t k);

/*
 * A seed's grouped totals for a sum, avg or count cell: rows, non-NULL
 * rows, the finite total (NULL: none) and the special counts.
 */
extern void rp_fold_seed_totals(RpFold *f, RpFoldCell *cell, int64_t rows, int64_t nonnull,
								const RpDecimal *total, int dscale, int64_t nan, int64_t pinf,
								int64_t ninf);

extern RpFoldResult rp_fold_result(const RpFold *f, const RpFoldCell *cell, RpBuf *out);

/* Bytes the fold's state holds: cells, value arrays and values, hash slots. */
extern size_t rp_fold_bytes(const RpFold *f);

/* Cells touched since the last rp_fold_end_batch(), in first-touch order. */
extern RpFoldCell *const *rp_fold_touched(const RpFold *f, int *n);

/* Forget the touched list and drop cells with no rows. */
extern void rp_fold_end_batch(RpFold *f);

/* Every cell, for a full write of the output (iter zeroed first). */
typedef struct RpFoldIter
{
	size_t		slot;
	RpFoldCell *cur;
} RpFoldIter;

extern RpFoldCell *rp_fold_next_cell(const RpFold *f, RpFoldIter *it);

#endif							/* RP_FOLD_H */
