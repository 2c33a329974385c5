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

/* What a retry was for: replicant_retries_total{cause=...}. */
typedef enum RpRetryCause
{
	RP_RETRY_SOURCE,			/* the source connection was lost or refused
								 * for now */
	RP_RETRY_SINK,				/* the sink failed for now (a lost or busy
								 * destination) */
	RP_RETRY__COUNT
}			RpRetryCause;

typedef struct RpMetricsSource
{
	RpMetricsSourceFn fn;
	const void *arg;			/* what it reads, alive while the page is
								 * served */
} RpMetricsSource;

/*
 * The receiving thread writes bytes, halts, server_wal_end,
 * pending_commit_time and checkpoint_moved_at; the metrics thread reads them, every access atomic
 * (rp_counter.h).  The sources are set before rp_metrics_start.
 */
typedef struct RpMetrics
{
	uint64_t	bytes;			/* frame bytes received */
	uint64_t	halts[RP_HALT__COUNT];
	uint64_t	server_wal_end;
	int64_t		pending_commit_time;	/* the oldest received and not yet
										 * durable, us since the Unix epoch;
										 * 0: none */
	int64_t		checkpoint_moved_at;	/* when the durable checkpoint last
										 * moved, us */
	uint64_t	retries[RP_RETRY__COUNT];
	int			server_version; /* the source's (PQserverVersion), 0 unknown */
	const char *version;		/* this build's, for replicant_build_info */
	char		labels[256];	/* on every sample: slot="S",sink="KIND", or
								 * "" */
	char		address[64];	/* where the page is served (IPv4 or IPv6) */
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

/*
 * The labels every sample carries (a slot name and a sink kind, never a
 * connection string), and the address the page is served on (NULL:
 * 127.0.0.1).  Before rp_metrics_start; -1 after rp_fail (RP_HALT_CONFIG)
 * when the address is not an IPv4 or IPv6 literal.
 */
extern void rp_metrics_set_labels(RpMetrics *m, const char *slot, const char *sink_kind);
extern int	rp_metrics_set_address(RpMetrics *m, const char *address);

/* port 0: no endpoint, counters only.  -1 after rp_fail. */
extern int	rp_metrics_start(RpMetrics *m, int port);
extern void rp_metrics_stop(RpMetrics *m);

/*
 * Seconds behind the source: now minus the commit time of the oldest
 * transaction received and not yet durable (pending, 0: none); 0 when none.
 */
extern double rp_metrics_lag_seconds(int64_t pending, int64_t now_us);

/* The exposition text (caller frees). */
extern char *rp_metrics_render(const RpMetrics *m);

/* For sources: one sample, after its HELP and TYPE lines when help is not NULL. */
extern void rp_metrics_sample(RpBuf *b, const char *name, const char *type, const char *help,
							  const char *labels, uint64_t v);

/* The same with a real value (seconds), printed with three decimals. */
extern void rp_metrics_sample_real(RpBuf *b, const char *name, const char *type, const char *help,
								   const char *labels, double v);

/* A label value (a relation name), quotes and backslashes escaped, newlines dropped. */
extern void rp_metrics_label_value(RpBuf *b, const char *s);

/* The page's own counters as sources (arg: the RpMetrics). */
extern void rp_metrics_received(RpBuf *out, const void *arg);
extern void rp_metrics_halts(RpBuf *out, const void *arg);

/*
 * replicant_build_info and the process_* family of Prometheus's client
 * libraries (CPU, memory, file descriptors, start time: /proc/self).
 */
extern void rp_metrics_process(RpBuf *out, const void *arg);

#endif							/* RP_METRICS_H */
