/*
 * rp_metrics.h
 *    Telemetry: counters, lag and the checkpoint, served in Prometheus text
 *    format on 127.0.0.1:PORT (libmicrohttpd).  Value-free by construction:
 *    the page is built from a fixed list of numeric fields and the names of
 *    halt reasons, never from data or error text.
 */
#ifndef RP_METRICS_H
#define RP_METRICS_H

#include <stdint.h>

#include "stream/rp_asm.h"
#include "stream/rp_deliver.h"
#include "base/rp_status.h"

/*
 * The receiving thread writes bytes, halts, server_wal_end and
 * last_commit_time, the delivery thread *count; the metrics thread reads
 * them all, every access atomic (rp_counter.h).
 */
typedef struct RpMetrics
{
	uint64_t	bytes;			/* frame bytes received */
	uint64_t	halts[RP_HALT__COUNT];
	uint64_t	server_wal_end;
	int64_t		last_commit_time;	/* us since the Unix epoch */
	const RpDlCounters *count;	/* the run's, for the process's life */
	const RpAsm *asm_;
	const RpSpill *spill;
	const struct RpAggStats *agg_stats;	/* live aggregates' counters, or NULL (set before start) */
	const struct RpSnapStats *snap_stats;	/* the initial snapshot's, or NULL (likewise) */
	void	   *daemon;
} RpMetrics;

/* port 0: no endpoint, counters only. */
extern int	rp_metrics_start(RpMetrics *m, int port, const RpDlCounters *count, const RpAsm *a,
							 const RpSpill *spill);
extern void rp_metrics_stop(RpMetrics *m);
/* Seconds behind: age of the last delivered commit while WAL is pending. */
extern double rp_metrics_lag_seconds(const RpMetrics *m, uint64_t lag_bytes, int64_t now_us);
/* The exposition text (caller frees). */
extern char *rp_metrics_render(const RpMetrics *m);

#endif							/* RP_METRICS_H */
