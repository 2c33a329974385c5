/*
 * rp_agg.h
 *    Live aggregates: bindings that keep per-coordinate folds of a source
 *    table up to date from the change stream (docs/aggregates.md).
 *
 * A binding reads one relation: its dimension columns are the coordinate,
 * one measure column is folded by one aggregate, and the cells go to an
 * output: a destination table keyed by the dimensions, written inside the
 * mirror's destination transaction together with the checkpoint
 * (effect-once), or a stream of cell edits to stdout, a file or an exec
 * child (at-least-once; a "reset" line precedes every full rewrite).
 *
 * The fold state is never stored: it is seeded from the source at start
 * by one SELECT that also returns pg_current_snapshot(), and transactions
 * that snapshot saw are skipped.  A batch that cannot be applied cell by
 * cell (a collision on a binding without aggregate, an unreadable value,
 * an update or delete whose old row was not replicated, a failed
 * destination transaction) rebuilds the binding the same way, and its
 * output is replaced in the same destination transaction.
 */
#ifndef RP_AGG_H
#define RP_AGG_H

#include <libpq-fe.h>
#include <sys/types.h>

#include "agg/rp_aggval.h"
#include "stream/rp_deliver.h"
#include "stream/rp_sink.h"
#include "agg/rp_fold.h"
#include "agg/rp_xidsnap.h"

#include "agg/rp_aggstate.h"

/* rp_agg.c: bindings and the fold of a batch */
extern RpAgg *rp_agg_new(void);
extern void rp_agg_free(RpAgg *agg);

/* One binding (docs/aggregates.md); -1 after rp_fail(RP_HALT_CONFIG). */
extern int	rp_agg_add_spec(RpAgg *agg, const char *spec, const char *where);

/* One binding per line; '#' starts a comment. */
extern int	rp_agg_add_file(RpAgg *agg, const char *path);

/* The source conninfo (-d), for the seed's normal connection. */
extern void rp_agg_set_source(RpAgg *agg, const char *conninfo);

/*
 * Inside the destination transaction of a batch, before the checkpoint is
 * written.  done is the commit LSN the destination already held (those
 * transactions are skipped).
 */
extern int	rp_agg_batch(RpAgg *agg, PGconn *dest, RpDelivery *dl, RpTxn **txns, int n,
						 uint64_t done);

/* After that transaction committed: the edit streams get their lines. */
extern int	rp_agg_committed(RpAgg *agg);

/*
 * The batch hook that runs agg's bindings in a state sink's destination
 * transaction (the two calls above), for the sink's environment
 * (RpSinkEnv.batch_hook); only: --aggregates-only, the sink applies no
 * row itself.  agg must outlive the sink.
 */
extern void rp_agg_batch_hook(RpAgg *agg, bool only, RpSinkBatchHook *hook);

#endif							/* RP_AGG_H */
