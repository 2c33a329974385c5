/*
 * rp_cli_metrics.h
 *    The program's metrics page: which stage's counters it shows, in what
 *    order (base/rp_metrics.h serves them and knows no stage).
 */
#ifndef RP_CLI_METRICS_H
#define RP_CLI_METRICS_H

#include <stdatomic.h>

#include "agg/rp_agg.h"
#include "base/rp_metrics.h"
#include "snapshot/rp_snapshot.h"
#include "stream/rp_asm.h"
#include "stream/rp_deliver.h"
#include "stream/rp_store.h"

/*
 * What the page reads, each alive while it is served; NULL: not shown.
 * (The CLI always gives snap: its lines are zeros without a snapshot.)
 */
typedef struct RpCliMetrics
{
	const RpMetrics *m;			/* the receiving counters (the lag needs them) */
	const RpDlCounters *count;	/* the deliveries', for the process's life */
	const RpSnapStats *snap;	/* the initial snapshot's, final once
								 * streaming runs */
	const RpAsm *asm_;
	const RpSpill *spill;
	const RpAgg *agg;			/* live aggregates */
	const RpSink *sink;			/* the run's sink: a mirror's divergences */
	const void *nsrc;			/* the run's stream source (RpNatsSrc), or
								 * NULL */
	_Atomic bool stream_ready;	/* asm_ and spill set up (the page is served
								 * from before) */
	_Atomic bool snap_running;	/* the snapshot copies: its per-table list is
								 * not to be read */
	const void *progress;		/* the run's RpCliProgress: per-table rows,
								 * the catch-up's ETA */
} RpCliMetrics;

/*
 * Register the page's sources on m, in the page's order; cm (kept by the
 * caller, like everything it points to) is read by the metrics thread.
 */
extern int	rp_cli_metrics_register(RpMetrics *m, const RpCliMetrics *cm);

/* The sources, one per stage (arg: the RpCliMetrics). */
extern void rp_cli_metrics_delivery(RpBuf *out, const void *arg);
extern void rp_cli_metrics_snapshot(RpBuf *out, const void *arg);
extern void rp_cli_metrics_stream(RpBuf *out, const void *arg);
extern void rp_cli_metrics_aggregates(RpBuf *out, const void *arg);

/* The sink's RpSink.metrics callback, if it has one; arg is the RpSink. */
extern void rp_cli_metrics_sink(RpBuf *out, const void *arg);

#endif							/* RP_CLI_METRICS_H */
