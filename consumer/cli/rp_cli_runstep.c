/*
 * rp_cli_runstep.c
 *    The steps of a run that both kinds of source take (rp_cli_run.c from
 *    a slot, rp_cli_fanout.c from a stream): the signals, the one feedback
 *    function, progress, handing assembled items to the delivery thread,
 *    and the two clean ends (a stop, --endpos).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/rp_clock.h"
#include "base/rp_status.h"
#include "cli/rp_cli_run_int.h"

static const char *const progname = RP_CLI_PROGNAME;

/* a clean end of the stream waits this long for its CopyDone to leave */
#define RP_FINISH_TIMEOUT_MS 10000

/* SIGHUP: the sink reopens its output (log rotation) */
static volatile sig_atomic_t reopen_requested = 0;
/* SIGINT, SIGTERM: the library's threads read it (rp_stop_watch) */
static atomic_int stop_requested;


static void
on_stop_signal(int signo)
{
	/* async-signal-safe: every thread's waits look at it (rp_status.h) */
	atomic_store(&stop_requested, 1);
}

static void
on_hup_signal(int signo)
{
	reopen_requested = 1;
}

void
rp_cli_signals_install(void)
{
	rp_stop_watch(&stop_requested);
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	signal(SIGHUP, on_hup_signal);
	signal(SIGPIPE, SIG_IGN);
}

/* ---- feedback ------------------------------------------------------------ */


/* The one place that reports progress to the server: flush = durable (G2). */
int
rp_run_send_feedback(RpRun *run, bool force, bool request_reply)
{
	int64_t		now = rp_clock_wall_us();
	RpCheckpoint durable;

	if (rp_pipe_durable(&run->pipe, &durable) < 0)
		return -1;
	if (!run->connected)
		return 0;
	if (!force && now - run->conn.last_status_us < (int64_t) run->cli->status_interval_ms * 1000)
		return 0;
	return rp_conn_feedback(&run->conn, durable.end_lsn, request_reply);
}

/* While waiting for the delivery thread: keep the server answered. */
void
rp_run_wait_tick(void *arg)
{
	RpRun	   *run = arg;

	/* a failure here shows up again in the main loop's next call */
	if (rp_run_send_feedback(run, false, false) < 0)
		rp_error_clear();
}

void
rp_run_show_progress(RpRun *run)
{
	RpProgressStream st;
	int64_t		now = rp_clock_wall_us();
	uint64_t	end = RP_COUNT_LOAD(run->counters.checkpoint_lsn);

	memset(&st, 0, sizeof(st));
	st.txns = RP_COUNT_LOAD(run->counters.txns);
	st.changes = RP_COUNT_LOAD(run->counters.changes);
	st.checkpoint_lsn = end;
	st.lag_msgs = -1;
	if (run->nsrc)
	{
		/*
		 * A stream reader: the WAL position is not its to know; the stream's
		 * messages past what is durable here are (read ahead but not applied
		 * is still behind).
		 */
		uint64_t	last = rp_natsrc_last_seq(run->nsrc);
		uint64_t	done = run->read_seq;

		if (run->pipe.started)
		{
			/* not rp_pipe_durable: a failed delivery is the main loop's to report */
			pthread_mutex_lock(&run->pipe.lock);
			done = run->pipe.durable.source_seq;
			pthread_mutex_unlock(&run->pipe.lock);
		}
		st.known = last > 0;
		st.lag_msgs = last > done ? (int64_t) (last - done) : 0;
	}
	else
	{
		st.known = run->conn.server_wal_end > 0;
		st.lag_bytes = run->conn.server_wal_end > end ? run->conn.server_wal_end - end : 0;
		st.lag_seconds = rp_metrics_lag_seconds(&run->metrics, st.lag_bytes, now);
	}
	rp_cli_progress_stream(&run->progress, &st);
}

/* ---- handing over, and the ends ------------------------------------------- */

void
rp_run_take_reopen(RpRun *run)
{
	if (reopen_requested)
	{
		/* the sink belongs to the delivery thread: it reopens between units */
		reopen_requested = 0;
		rp_pipe_reopen(&run->pipe);
	}
}

int
rp_run_deliver_ready(RpRun *run, bool *done, uint64_t source_seq)
{
	RpItem	   *item;
	int			rc;

	while ((item = rp_asm_pop(&run->asm_)) != NULL)
	{
		/* from a stream: the position the checkpoint will record */
		if (item->kind == RP_ITEM_TXN)
			item->txn->source_seq = source_seq;
		else if (item->kind == RP_ITEM_MESSAGE)
			item->msg.source_seq = source_seq;

		uint64_t	end = item->kind == RP_ITEM_TXN ? item->txn->end_lsn : item->kind == RP_ITEM_MESSAGE ? item->msg.lsn : 0;

		if (item->kind == RP_ITEM_TXN)
			RP_COUNT_STORE(run->metrics.last_commit_time, item->txn->commit_time);

		rc = rp_pipe_push(&run->pipe, item, rp_run_wait_tick, run);
		if (rc < 0)
			return -1;
		/* a stop while the queue was full: the caller's loop stops */
		if (rc > 0)
			return 0;
		if (run->cli->endpos && end >= run->cli->endpos)
		{
			*done = true;
			break;
		}
	}
	return 0;
}

/*
 * A clean end of the stream (endpos, a stop): the last status update with
 * what is durable, then CopyDone, waited for like pg_recvlogical's.
 */
void
rp_run_finish_stream(RpRun *run, const RpCheckpoint *durable)
{
	if (!run->connected)
		return;
	if (rp_conn_feedback(&run->conn, durable->end_lsn, false) < 0)
		rp_error_clear();		/* the connection is going anyway */
	rp_conn_finish(&run->conn, RP_FINISH_TIMEOUT_MS);
	run->connected = false;
}

/*
 * SIGINT/SIGTERM: the delivery thread finishes the step in hand (a sink's
 * wait on anything outside the consumer gives up at once), what is queued
 * is dropped, and only what the sink holds is confirmed.  0, or -1 when
 * the delivery thread halted.
 */
int
rp_run_stop_stream(RpRun *run)
{
	rp_pipe_abandon(&run->pipe, rp_run_wait_tick, run);
	rp_run_finish_stream(run, &run->pipe.durable);
	if (run->pipe.failed && run->pipe.halt != RP_HALT_NONE)
		return rp_fail(run->pipe.halt, "%s", run->pipe.error);
	if (run->pipe.failed)
		fprintf(stderr, "%s: %s; stopping (what was not acknowledged comes again on the next run)\n",
				progname, run->pipe.error);
	return 0;
}

/* endpos reached: what was pushed delivered and durable, then a clean end. */
int
rp_run_stream_done(RpRun *run)
{
	RpCheckpoint durable;
	int			rc;

	rc = rp_pipe_drain(&run->pipe, rp_run_wait_tick, run);
	if (rc < 0)
		return -1;
	if (rc > 0)
		return rp_run_stop_stream(run);
	if (rp_pipe_durable(&run->pipe, &durable) < 0)
		return -1;
	rp_run_finish_stream(run, &durable);
	return 0;
}

void
rp_run_emit(RpRun *run, RpEvent *ev)
{
	if (ev->slot == NULL)
		ev->slot = run->cli->slot;
	rp_event_emit(&run->hook, ev);
}
