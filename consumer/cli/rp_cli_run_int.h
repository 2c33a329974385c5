/*
 * rp_cli_run_int.h
 *    The run's state, and the steps its two kinds of source share
 *    (rp_cli_runstep.c): the replication slot (rp_cli_run.c) and a
 *    JetStream stream (rp_cli_fanout.c).
 */
#ifndef RP_CLI_RUN_INT_H
#define RP_CLI_RUN_INT_H

#include "base/rp_metrics.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_events.h"
#include "cli/rp_cli_metrics.h"
#include "cli/rp_cli_progress.h"
#include "natsrc/rp_natsrc.h"
#include "stream/rp_asm.h"
#include "stream/rp_conn.h"
#include "stream/rp_deliver.h"
#include "stream/rp_pipe.h"

typedef struct RpRun
{
	RpCli	   *cli;
	RpConn		conn;
	RpNatsSrc  *nsrc;			/* --source nats://: the stream, instead of conn */
	RpSpill		spill;
	RpAsm		asm_;
	RpDelivery	dl;				/* owned by the delivery thread once it runs */
	RpPipe		pipe;
	RpSink	   *sink;
	RpMetrics	metrics;
	RpCliMetrics metrics_src;	/* what the metrics page reads */
	RpDlCounters counters;		/* the deliveries' telemetry, for the process's life */
	RpCliEvents events;			/* the library's events: counters and -v lines */
	RpEventHook hook;			/* rp_cli_event on events */
	RpSnapStats snap;			/* the initial snapshot's counters */
	bool		connected;
	RpCliProgress progress;		/* the terminal's lines, and their figures for the page */
	uint64_t	read_seq;		/* from a stream: the last sequence read */
	bool		streamed;		/* START_REPLICATION succeeded since the last retry */
	int64_t		last_advance_us;	/* last idle advance asked of the delivery thread */
	char		ckpt_path[4096];	/* STATE-DIR/SLOT.checkpoint (a sink that owns none) */
	char		view_path[4096];	/* STATE-DIR/SLOT.relations */
} RpRun;

/* rp_cli_runstep.c: the steps both sources take */

/* The one place that reports progress to the server: flush = durable (G2); 0 without a slot. */
extern int	rp_run_send_feedback(RpRun *run, bool force, bool request_reply);
/* The last feedback and the stream's clean end (a slot's connection). */
extern void rp_run_finish_stream(RpRun *run, const RpCheckpoint *durable);
/* While waiting for the delivery thread: keep the server answered. */
extern void rp_run_wait_tick(void *arg);
/* The stream's progress: the catch-up line on a terminal, the ETA for the page. */
extern void rp_run_show_progress(RpRun *run);
/* SIGHUP since the last call: the sink reopens between units. */
extern void rp_run_take_reopen(RpRun *run);
/*
 * Deliver everything the assembler completed (items from a stream get
 * source_seq, else 0); *done once --endpos (an LSN) is reached.
 */
extern int	rp_run_deliver_ready(RpRun *run, bool *done, uint64_t source_seq);
/* A stop: what the sink holds is confirmed, the rest dropped; 0 or -1 (a halt). */
extern int	rp_run_stop_stream(RpRun *run);
/* --endpos reached: everything pushed delivered and durable, then a clean end. */
extern int	rp_run_stream_done(RpRun *run);

/* Tell the run's subscriber (the slot filled in). */
extern void rp_run_emit(RpRun *run, RpEvent *ev);

/* rp_cli_fanout.c: the stream source of the command line (NULL after rp_fail). */
extern RpNatsSrc *rp_cli_fanout_source(const RpCli *cli);
/* rp_cli_fanout.c: one connection's life with a stream as the source. */
extern int	rp_run_nats_once(RpRun *run, bool have_ck);

#endif							/* RP_CLI_RUN_INT_H */
