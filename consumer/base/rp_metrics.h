/*
 * rp_metrics.h
 *    Telemetry served in Prometheus text format on 127.0.0.1:PORT
 *    (libmicrohttpd, when built with it: RP_HAVE_MICROHTTPD).
 *
 * The page is a base module: it knows no stage.  The program registers
 * sources, each a callback that appends its samples (rp_metrics_sample) to
 * the page, and the page is their lines in registration order.  Only the
 * process's own receiving counters live here (bytes, halts, the server's
 * WAL position and the last commit's time, for the lag).
 *
 * Value-free by construction: sources render fixed lists of numeric
 * fields and names (of halt reasons, relations), never data or error text.
 */
#ifndef RP_METRICS_H
#define RP_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_buf.h"
#include "base/rp_status.h"

/* A source: append its samples to out.  Runs on the metrics thread. */
typedef void (*RpMetricsSourceFn) (RpBuf *out, const void *arg);

#define RP_METRICS_MAX_SOURCES 16

typedef struct RpMetricsSource
{
	RpMetricsSourceFn fn;
	const void *arg;			/* what it reads, alive while the page is
								 * served */
} RpMetricsSource;

/*
 * The receiving thread writes bytes, halts, server_wal_end and
 * last_commit_time; the metrics thread reads them, every access atomic
 * (rp_counter.h).  The sources are set before rp_metrics_start.
 */
typedef struct RpMetrics
{
	uint64_t	bytes;			/* frame bytes received */
	uint64_t	halts[RP_HALT__COUNT];
	uint64_t	server_wal_end;
	int64_t		last_commit_time;	/* us since the Unix epoch */
	int			nsources;
	RpMetricsSource sources[RP_METRICS_MAX_SOURCES];
	void	   *daemon;
} RpMetrics;

/* Zeroed counters, no sources. */
extern void rp_metrics_init(RpMetrics *m);

/* Append a source (before rp_metrics_start); -1 after rp_fail when full. */
extern int	rp_metrics_add(RpMetrics *m, RpMetricsSourceFn fn, const void *arg);

/* True when this build can serve the page (libmicrohttpd). */
extern bool rp_metrics_available(void);

/* port 0: no endpoint, counters only.  -1 after rp_fail. */
extern int	rp_metrics_start(RpMetrics *m, int port);
extern void rp_metrics_stop(RpMetrics *m);

/* Seconds behind: age of the last delivered commit while WAL is pending. */
extern double rp_metrics_lag_seconds(const RpMetrics *m, uint64_t lag_bytes, int64_t now_us);

/* The exposition text (caller frees). */
extern char *rp_metrics_render(const RpMetrics *m);

/* For sources: one sample, after its HELP and TYPE lines when help is not NULL. */
extern void rp_metrics_sample(RpBuf *b, const char *name, const char *type, const char *help,
							  const char *labels, uint64_t v);

/* A label value (a relation name), quotes and backslashes escaped, newlines dropped. */
extern void rp_metrics_label_value(RpBuf *b, const char *s);

/* The page's own counters as sources (arg: the RpMetrics). */
extern void rp_metrics_received(RpBuf *out, const void *arg);
extern void rp_metrics_halts(RpBuf *out, const void *arg);

#endif							/* RP_METRICS_H */
