/*
 * rp_aggstate.h
 *    The live aggregates' shared state: the bindings, their edit streams
 *    and the set of them (RpAgg), the helpers every output uses to walk a
 *    batch's cells, and the entry points of the parts rp_agg.c drives
 *    (the seed, the table output, the edit streams).
 *
 * It sits below rp_agg.c and the parts: they all read this state, and only
 * rp_agg.c calls into the parts, so no part depends on the module that
 * drives it.
 */
#ifndef RP_AGGSTATE_H
#define RP_AGGSTATE_H

#include <libpq-fe.h>
#include <sys/types.h>

#include "agg/rp_aggval.h"
#include "agg/rp_fold.h"
#include "agg/rp_xidsnap.h"
#include "base/rp_counter.h"
#include "rp_buf.h"
#include "rp_decode.h"

/* Why a binding was (re)built: metric labels. */
typedef enum RpAggReason
{
	RP_AGG_SEED,				/* first build in this process */
	RP_AGG_COLLISION,			/* two rows on one coordinate (aggregate none) */
	RP_AGG_UNREADABLE,			/* a value the binding's type cannot read */
	RP_AGG_NO_OLD_ROW,			/* update/delete without the old row */
	RP_AGG_INCONSISTENT,		/* removal of a row the fold does not hold */
	RP_AGG_RETRY,				/* the previous destination transaction failed */
	RP_AGG_REASON__COUNT
} RpAggReason;

extern const char *rp_agg_reason_name(RpAggReason r);

/*
 * Value-free counters of one RpAgg (its stats), written by the delivery
 * thread with relaxed atomics (rp_counter.h), read by the metrics page.
 */
typedef struct RpAggStats
{
	uint64_t	rebuilds[RP_AGG_REASON__COUNT];
	uint64_t	cell_edits;		/* cells written (set or removed) */
	uint64_t	changes;		/* row changes folded */
	uint64_t	skipped;		/* changes a seed had already seen */
	uint64_t	state_bytes;	/* every binding's fold state after the last
								 * batch (a gauge) */
} RpAggStats;

typedef enum RpAggOutKind
{
	RP_AGG_OUT_TABLE,
	RP_AGG_OUT_STDOUT,
	RP_AGG_OUT_FILE,
	RP_AGG_OUT_EXEC
} RpAggOutKind;

/* An edit stream, shared by the bindings that name the same target. */
typedef struct RpAggStream
{
	RpAggOutKind kind;
	char	   *target;			/* path or command */
	int			fd;
	pid_t		pid;
	RpBuf		pending;		/* this batch's lines, written after commit */
} RpAggStream;

typedef struct RpAggBinding
{
	char	   *name;
	char	   *schema;			/* source */
	char	   *table;
	char	  **dims;
	int			ndims;
	char	   *measure;
	RpFoldAgg	agg;
	RpAggOutKind out;
	char	   *out_schema;		/* table output */
	char	   *out_table;
	RpAggStream *stream;		/* edit outputs */

	/* from the source catalog, at the first seed */
	bool		described;
	RpAggClass *dim_class;
	char	  **dim_type;		/* format_type() of each dimension */
	RpAggClass	m_class;
	char	   *m_type;
	char	   *value_col;		/* output column of the cell value */
	char	   *value_type;

	/* the relation as last seen in the stream */
	const RpRelation *rel;
	int		   *dim_idx;
	int			m_idx;

	RpFold		fold;
	RpXidSnap	snap;			/* the seed's snapshot, while it matters */
	bool		have_snap;
	uint64_t	seed_lsn;		/* commits after this LSN are after the seed */
	bool		need_seed;
	RpAggReason reason;
	bool		replace;		/* write every cell, not the touched ones */
	bool		warned[RP_AGG_REASON__COUNT];
	int			nlogged;		/* rebuild lines written */

	/* table output: per destination session */
	const PGconn *ready_conn;
	char	   *out_qname;
} RpAggBinding;

typedef struct RpAgg
{
	RpAggBinding **b;
	int			nb;
	RpAggStream **streams;
	int			nstreams;
	char	   *source_conninfo;
	PGconn	   *src;
	bool		in_batch;		/* a batch began and was not committed */
	RpAggStats	stats;			/* written here, read atomically
								 * (rp_counter.h) */
	RpDecoder	dec;			/* the second pass reads records with its own */
	RpAggVal	scratch[2];
	RpBuf		coord;
	RpBuf		label;
	RpBuf		sql;
} RpAgg;

/* ---- rp_agg_seed.c */
extern int	rp_agg_seed(RpAgg *agg, RpAggBinding *b);

/* ---- rp_agg_table.c: table outputs */
extern int	rp_agg_table_write(RpAgg *agg, RpAggBinding *b, PGconn *dest);

/* ---- rp_agg_edits.c: edit streams */
extern int	rp_agg_edits_open(RpAggStream *s);
extern void rp_agg_edits_close(RpAggStream *s);
extern void rp_agg_edits_batch(RpAgg *agg, RpAggBinding *b, uint64_t lsn);
extern int	rp_agg_edits_flush(RpAggStream *s);

/* ---- rp_aggstate.c: helpers of every output */

/* Append a dimension value to agg->coord (identity) and agg->label (text). */
extern void rp_agg_coord_put(RpAgg *agg, const RpAggVal *v);

/*
 * The cells an output writes for this batch: every cell with rows on a
 * full rewrite (b->replace), else each touched one.  value gets the cell's
 * text and *r its result; NULL at the end.  Zero the iterator first.
 */
typedef struct RpAggEditIter
{
	RpFoldIter	it;
	int			k;
} RpAggEditIter;

extern RpFoldCell *rp_agg_next_edit(RpAggBinding *b, RpAggEditIter *e, RpBuf *value,
									RpFoldResult *r);

/* A cell's coordinate label: per dimension, a NULL flag and its text. */
extern bool rp_agg_label_next(const char **p, const char *end, const char **text, uint32_t *len);

#endif							/* RP_AGGSTATE_H */
