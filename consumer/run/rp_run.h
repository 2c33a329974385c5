/*
 * rp_run.h
 *    The run engine, as PostgreSQL keeps its receive loop in receivelog.c:
 *    frames from a source (rp_source.h: a replication slot or a JetStream
 *    stream) through the assembler and the delivery thread into a sink,
 *    reconnecting with backoff after connection trouble, until --endpos, a
 *    stop (rp_stop_requested) or a fail-closed halt.  The program sets it
 *    up with rp_run_init, may point its metrics page at the run's public
 *    stages (asm_, spill, counters: zeros until they are set up), and calls
 *    rp_run once.  What the run does reaches the program through the hooks:
 *    the event hook (CONN_UP, CONN_LOST and every stage's events), the
 *    progress figures, the log lines; the library never calls program code
 *    otherwise.
 */
#ifndef RP_RUN_H
#define RP_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "backfill/rp_backfill.h"
#include "base/rp_event.h"
#include "base/rp_metrics.h"
#include "run/rp_lagq.h"
#include "run/rp_source.h"
#include "stream/rp_sink.h"
#include "stream/rp_asm.h"
#include "stream/rp_deliver.h"
#include "stream/rp_pipe.h"
#include "stream/rp_spill.h"

typedef struct RpRunOptions
{
	const char *slot;			/* the name a new checkpoint is bound to */
	uint64_t	endpos;			/* end once this LSN is durable (0: never) */
	uint64_t	endpos_seq;		/* a stream's: end at this sequence (0: never) */
	int			status_interval_ms; /* idle positions recorded at most this
									 * often */
	bool		no_loop;		/* connection trouble ends the run instead of
								 * a retry */
	RpBatchLimits limits;
	const char *ckpt_path;		/* where a sink without its own checkpoint
								 * keeps one */
	const char *view_path;		/* the relation descriptions kept across
								 * restarts */
	const char *spill_dir;
	size_t		max_memory;
	uint64_t	max_spill;
	bool		early_apply;	/* a sink that can may apply streamed
								 * transactions early */
	bool		messages;		/* logical decoding messages pass to the sink */
	RpBackfill *backfill;		/* stopped after the delivery thread (it may
								 * hold a chunk); or NULL */
} RpRunOptions;

/* The stream's figures, each turn of the loop (value-free). */
typedef struct RpRunProgress
{
	uint64_t	lag_bytes;		/* a slot: the server's WAL end past the
								 * checkpoint */
	double		lag_seconds;	/* now minus the commit time of the oldest
								 * transaction received and not yet durable */
	int64_t		lag_msgs;		/* a stream: messages past what is durable; -1
								 * from a slot */
	uint64_t	txns;
	uint64_t	changes;
	uint64_t	checkpoint_lsn;
	bool		known;			/* the server's (or the stream's) end is known */
	bool		caught_up;		/* everything received is durable, and no
								 * transaction is half received */
} RpRunProgress;

typedef enum RpRunLogLevel
{
	RP_RUN_LOG_INFO,			/* what -v shows */
	RP_RUN_LOG_NOTICE,			/* always shown, not an error */
	RP_RUN_LOG_ERROR			/* trouble that is retried (the run goes on) */
} RpRunLogLevel;

typedef struct RpRunHooks
{
	RpEventHook events;			/* every stage's events, and the run's
								 * CONN_UP, CONN_LOST */
	RpMetrics  *metrics;		/* the receiving counters the run adds to
								 * (bytes, halts, ...) */
	/* each turn of the loop; NULL: none */
	void		(*progress) (void *arg, const RpRunProgress *p);
	/* a message line (no program name, no level); NULL: dropped */
	void		(*log) (void *arg, RpRunLogLevel level, const char *line);

	/*
	 * true once after the program was asked to reopen its output (SIGHUP);
	 * NULL: never
	 */
	bool		(*take_reopen) (void *arg);

	/*
	 * delivery is set up (the backfill's copies may start): 0, or -1
	 * (rp_error)
	 */
	int			(*started) (void *arg, RpSink *sink);
	void	   *arg;			/* for the callbacks */
} RpRunHooks;

typedef struct RpRun
{
	RpRunOptions o;
	RpRunHooks	h;
	RpSource   *src;
	RpSink	   *sink;
	RpSpill		spill;
	RpAsm		asm_;
	RpDelivery	dl;				/* owned by the delivery thread once it runs */
	RpPipe		pipe;
	RpDlCounters counters;		/* the deliveries' telemetry, for the run's
								 * life */
	RpMetrics	own_metrics;	/* the counters' place when the hooks give
								 * none */
	uint64_t	read_seq;		/* from a stream: the last sequence read */
	bool		streamed;		/* a connection started since the last retry */
	int64_t		last_advance_us;	/* last idle advance asked of the delivery
									 * thread */
	RpLagQueue	lagq;			/* commit times received, not yet durable */
	uint64_t	lag_ck;			/* the durable end the lag last saw */
} RpRun;

/* The run's options and hooks (copied; the strings they point to are the caller's). */
extern void rp_run_init(RpRun *run, const RpRunOptions *o, const RpRunHooks *h);

/*
 * Stream from src into sink (open; the caller closes it after) until
 * endpos or a stop: 0.  -1 on a fail-closed halt, or on connection trouble
 * with no_loop (rp_error).  Either way the run's threads are stopped and
 * the source closed when it returns; after a failure its spill files are
 * removed.
 */
extern int	rp_run(RpRun *run, RpSource *src, RpSink *sink);

/* What rp_run left after a clean end (the delivery, the assembler). */
extern void rp_run_free(RpRun *run);

#endif							/* RP_RUN_H */
