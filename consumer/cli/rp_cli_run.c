/*
 * rp_cli_run.c
 *    The program's actions against the source: the slot actions, and the
 *    stream (pg_recvlogical's StreamLogicalLog): one connection's life in
 *    stream_once (a stream source's is rp_cli_fanout.c), and run_stream's
 *    reconnecting around it, with the sink, the spill store, the assembler
 *    and the delivery thread it sets up.  The steps both sources take (the
 *    signals, the feedback that reports only what is durable, G2) are in
 *    rp_cli_runstep.c.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rp_clock.h"
#include "base/rp_lock.h"
#include "base/rp_metrics.h"
#include "base/rp_status.h"
#include "backfill/rp_backfill.h"
#include "cli/rp_cli_run_int.h"
#include "cli/rp_cliparse.h"
#include "snapshot/rp_snapcat.h"
#include "stream/rp_asm.h"
#include "stream/rp_conn.h"
#include "stream/rp_deliver.h"
#include "stream/rp_pipe.h"
#include "rp_wire.h"

static const char *const progname = RP_CLI_PROGNAME;

/*
 * The default for a sink that applies streamed transactions early (kB).
 * Small enough that a set-based pass of a few hundred thousand rows streams
 * in blocks the destination applies while the walsender decodes the rest:
 * at 16MB the 1M backlog's 100,000-row delete pass (about 15 MB in the
 * reorder buffer) came whole at its commit and the destination waited for
 * it (bench/README.md, 2026-12-05).
 */
#define RP_EARLY_DECODING_WORK_MEM_KB 4096
/* the longest pause between two connection attempts (s) */
#define RP_BACKOFF_MAX_S 30

/* ---- the stream ---------------------------------------------------------- */

/*
 * Before resuming, the slot must still hold everything after the
 * checkpoint: a missing, invalidated or advanced slot is a gap (G3).
 */
static int
check_slot(RpRun *run, bool have_ck, const RpCheckpoint *ck)
{
	RpSlotInfo	info;
	char		a[24],
				b[24];

	if (rp_conn_slot_info(&run->conn, run->cli->slot, &info) < 0)
		return -1;
	if (!info.exists)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" does not exist", run->cli->slot);
	if (!info.logical || strcmp(info.plugin, "replicant") != 0)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" is not a logical slot of plugin replicant",
					   run->cli->slot);
	if (info.lost)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" has been invalidated (wal_status lost)",
					   run->cli->slot);
	/* a checkpoint that never held a position (nothing delivered yet) has no gap */
	if (have_ck && ck->end_lsn > 0 && info.confirmed_flush > ck->end_lsn)
	{
		rp_lsn_format(info.confirmed_flush, a);
		rp_lsn_format(ck->end_lsn, b);
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" is at %s, past the checkpoint %s: changes in between were acknowledged but never applied",
					   run->cli->slot, a, b);
	}
	return 0;
}

static char **
plugin_options(RpCli *cli)
{
	char	  **o = rp_malloc0(sizeof(char *) * (size_t) (cli->noptions * 2 + 5));
	int			n = 0;
	bool		streaming_set = false;

	/* version 3: every timestamp PostgreSQL has (2), and a partition root's kind (3) */
	o[n++] = "proto_version";
	o[n++] = RP_PROTO_VERSION_STR;
	for (int i = 0; i < cli->noptions * 2; i++)
	{
		if (i % 2 == 0 && strcmp(cli->options[i], "streaming") == 0)
			streaming_set = true;
		o[n++] = cli->options[i];
	}
	/*
	 * Large transactions come streamed unless told otherwise: the server
	 * then never spills them to its own disk, and this consumer bounds its
	 * memory with --max-memory and its own spill files (G5).
	 */
	if (!streaming_set)
	{
		o[n++] = "streaming";
		o[n++] = "on";
	}
	o[n] = NULL;
	return o;
}

/*
 * The server's decoding memory for this session only (SET on the replication
 * connection): past it a transaction is streamed.  A smaller one streams
 * large transactions sooner and in smaller blocks, so a sink that applies
 * them early starts sooner, and the walsender holds less.  By default that
 * is done for such a sink only, and only ever lowers the server's setting.
 */
static int
set_decoding_work_mem(RpRun *run)
{
	RpCli	   *cli = run->cli;
	uint64_t	want = cli->decoding_work_mem_kb;
	char		set[96];
	PGresult   *res;
	int			rc;

	if (want == RP_DECODING_WORK_MEM_SERVER || (want == 0 && !run->asm_.early))
		return 0;
	if (want == 0)
	{
		uint64_t	have = 0;

		res = PQexec(run->conn.pg, "SHOW logical_decoding_work_mem");
		rc = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			rp_parse_size(PQgetvalue(res, 0, 0), 0, UINT64_MAX, &have);
		PQclear(res);
		if (!rc || have <= (uint64_t) RP_EARLY_DECODING_WORK_MEM_KB << 10)
			return 0;
		want = RP_EARLY_DECODING_WORK_MEM_KB;
	}
	snprintf(set, sizeof(set), "SET logical_decoding_work_mem = '%" PRIu64 "kB'", want);
	res = PQexec(run->conn.pg, set);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		rc = rp_fail(PQresultStatus(res) == PGRES_FATAL_ERROR && state ? RP_HALT_CONFIG : RP_HALT_NONE,
					 "the server refused logical_decoding_work_mem for this session (SQLSTATE %s)",
					 state ? state : "none");
		PQclear(res);
		return rc;
	}
	PQclear(res);
	pg_log_info("logical_decoding_work_mem of this session: %" PRIu64 "kB", want);
	return 0;
}

/*
 * Connect, check the checkpoint and the slot against the source, and start
 * replication from the durable position (or -I).  The first connection
 * binds the checkpoint to the source and starts the delivery thread.
 */
static int
stream_connect(RpRun *run, bool have_ck)
{
	RpCli	   *cli = run->cli;
	char	  **opts;
	RpCheckpoint ck;
	uint64_t	start;
	int			rc;

	if (rp_conn_open(&run->conn, cli->dbname, progname) < 0)
		return -1;
	run->connected = true;
	if (rp_conn_identify(&run->conn) < 0)
		return -1;
	if (!run->pipe.started)
	{
		RpSnapSelect sel = {rp_cli_plugin_option(cli, "include_tables"),
		rp_cli_plugin_option(cli, "exclude_tables"), rp_cli_partitions_root(cli)};

		/* a table pattern that selects nothing is a mistake: said before anything streams */
		if (rp_snapcat_check_patterns(run->conn.pg, &sel) < 0)
			return -1;
		/* the first connection binds a new checkpoint to this source */
		if (have_ck && rp_ckpt_check_kind(&run->dl.ck, "") < 0)
			return -1;
		if (have_ck && rp_ckpt_check_source(&run->dl.ck, run->conn.system_id,
											run->conn.timeline, cli->slot) < 0)
			return -1;
		if (!have_ck)
		{
			run->dl.ck.system_id = run->conn.system_id;
			run->dl.ck.timeline = run->conn.timeline;
			snprintf(run->dl.ck.slot, sizeof(run->dl.ck.slot), "%s", cli->slot);
		}
		if (rp_pipe_start(&run->pipe, &run->dl, 2 * cli->limits.max_bytes) < 0)
			return -1;
	}
	if (rp_pipe_durable(&run->pipe, &ck) < 0)
		return -1;
	if (have_ck && rp_ckpt_check_source(&ck, run->conn.system_id, run->conn.timeline, cli->slot) < 0)
		return -1;
	if (rp_ckpt_check_position(&ck, run->conn.flush_lsn) < 0)
		return -1;
	if (check_slot(run, have_ck, &ck) < 0)
		return -1;
	start = cli->startpos ? cli->startpos : ck.end_lsn;

	if (set_decoding_work_mem(run) < 0)
		return -1;
	opts = plugin_options(cli);
	rc = rp_conn_start(&run->conn, cli->slot, start, opts);
	rp_free(opts);
	if (rc < 0)
		return -1;
	run->streamed = true;
	{
		RpEvent		ev;

		rp_event_init(&ev, RP_EVENT_CONN_UP);
		ev.lsn = start;
		rp_run_emit(run, &ev);
	}
	return 0;
}

/* A keepalive (its data released): idle positions, endpos, the reply asked for. */
static int
on_keepalive(RpRun *run, const RpMsg *msg, bool *done)
{
	RpCli	   *cli = run->cli;

	/* idle: nothing assembled, buffered, spilled or batched */
	if (!rp_asm_busy(&run->asm_) && rp_pipe_idle(&run->pipe))
	{
		int64_t		now = rp_clock_wall_us();

		/*
		 * A sink that records an idle position pays a write for it: once
		 * per status interval, or when the server asks (it does when it
		 * waits for us, e.g. to shut down).
		 */
		if (msg->reply_requested ||
			now - run->last_advance_us >= (int64_t) cli->status_interval_ms * 1000)
		{
			rp_pipe_advance(&run->pipe, msg->lsn, 0);
			run->last_advance_us = now;
		}
		if (cli->endpos && msg->lsn >= cli->endpos)
			*done = true;
	}
	if (msg->reply_requested && rp_run_send_feedback(run, true, false) < 0)
		return -1;
	return 0;
}

/* One connection's life: 0 = finished (endpos or signal), -1 = error. */
static int
stream_once(RpRun *run, bool have_ck)
{
	RpCli	   *cli = run->cli;
	int			rc;

	if (stream_connect(run, have_ck) < 0)
		return -1;
	for (;;)
	{
		RpMsg		msg;
		bool		done = false;
		int			wait_ms = cli->status_interval_ms;

		if (rp_stop_requested())
			return rp_run_stop_stream(run);
		rp_run_take_reopen(run);
		if (rp_run_send_feedback(run, false, false) < 0)
			return -1;
		rp_run_show_progress(run);
		RP_COUNT_STORE(run->metrics.server_wal_end, run->conn.server_wal_end);
		if (wait_ms > 1000)
			wait_ms = 1000;

		if (rp_conn_read(&run->conn, &msg, wait_ms) < 0)
			return -1;
		switch (msg.kind)
		{
			case RP_MSG_NONE:
				break;
			case RP_MSG_DATA:
				rc = rp_asm_frame(&run->asm_, msg.data, msg.len, msg.lsn);
				RP_COUNT_ADD(run->metrics.bytes, msg.len);
				rp_conn_release(&msg);
				if (rc < 0 || rp_run_deliver_ready(run, &done, 0) < 0)
					return -1;
				break;
			case RP_MSG_KEEPALIVE:
				rp_conn_release(&msg);
				if (on_keepalive(run, &msg, &done) < 0)
					return -1;
				break;
			case RP_MSG_END:
				return rp_fail(RP_HALT_NONE, "the server ended the replication stream");
		}
		if (done)
			return rp_run_stream_done(run);
	}
}

static void
disconnect(RpRun *run)
{
	if (run->connected)
		rp_conn_close(&run->conn);
	run->connected = false;
	if (run->nsrc)
		rp_natsrc_close(run->nsrc);
	/* partial transactions are sent again by the server */
	rp_asm_reset(&run->asm_);
}

static RpSink *
open_sink(RpCli *cli, const RpSinkEnv *env)
{
	if (strcmp(cli->sink, "stdout") == 0 || strcmp(cli->sink, "-") == 0)
		return rp_sink_stdout_open(env);
	if (strncmp(cli->sink, "file:", 5) == 0)
		return rp_sink_file_open(cli->sink + 5, env);
	if (strncmp(cli->sink, "exec:", 5) == 0)
		return rp_sink_exec_open(cli->sink + 5, cli->exec_ack_timeout_s, env);
	if (strncmp(cli->sink, "postgresql://", 13) == 0 || strncmp(cli->sink, "postgres://", 11) == 0 ||
		strncmp(cli->sink, "postgres:", 9) == 0)
	{
		cli->pg.conninfo = strncmp(cli->sink, "postgres:", 9) == 0 && cli->sink[9] != '/'
			? cli->sink + 9 : cli->sink;
		cli->pg.slot = cli->slot;
		return rp_mirror_open(&cli->pg, env);
	}
	if (rp_cli_sink_is_nats(cli->sink))
	{
		cli->nats.url = cli->sink;
		cli->nats.slot = cli->slot;
		return rp_nats_open(&cli->nats, env);
	}
	rp_fail(RP_HALT_CONFIG, "unknown sink \"%s\" (expected stdout, file:PATH, exec:COMMAND, postgresql://..., postgres:CONNINFO or nats://...)",
			cli->sink);
	return NULL;
}

/*
 * The assembler allocates every transaction's store on this thread and the
 * delivery thread frees it after its batch, a batch's worth at a time: with
 * glibc's defaults that memory went back to the kernel after each batch
 * (the heap's top trimmed, or a store past the 128 KB mmap threshold
 * unmapped) and the next batch faulted it in again, zeroed.  Stores and
 * maps under 4 MB now come from the heap, and up to a quarter of
 * --max-memory (at most 64 MB) of freed memory is kept for the next batch:
 * memory the budget already allowed in use, so peak RSS stays what G5
 * says.  Measured on the 1M-row backlog of bench/mirror.sh, three paired
 * runs: 31,000-35,000 minor faults before, 16,000-18,000 after, and the
 * consumer's CPU time about a fifth lower.
 */
#define RP_MMAP_THRESHOLD ((size_t) 4 << 20)
#define RP_TRIM_THRESHOLD_MAX ((size_t) 64 << 20)

static void
run_tune_malloc(const RpCli *cli)
{
	size_t		keep = cli->max_memory / 4;

	if (keep > RP_TRIM_THRESHOLD_MAX)
		keep = RP_TRIM_THRESHOLD_MAX;
	mallopt(M_MMAP_THRESHOLD, (int) RP_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, (int) keep);
}

/*
 * Before the sink opens: the defaults that name the slot, the locks, and
 * the environment the sink is given (*env, rp_sink.h: it keeps its own copy).
 * RP_EXIT_OK, or the exit status (reported).
 */
static int
run_prepare(RpCli *cli, RpSinkEnv *env)
{
	if (rp_cli_sink_is_nats(cli->sink) && !rp_nats_available())
	{
		pg_log_error("this replicant was built without the NATS sink (libnats)");
		return RP_EXIT_ERROR;
	}
	if (cli->source && !rp_natsrc_available())
	{
		pg_log_error("this replicant was built without the NATS source (libnats)");
		return RP_EXIT_ERROR;
	}
	/* the log sinks' snapshot envelope: oversize rows go to the dead-letter file */
	if (cli->dlq_file == NULL)
	{
		snprintf(cli->dlq_default, sizeof(cli->dlq_default), "%s/%s.dead-letter",
				 cli->state_dir, cli->slot);
		cli->dlq_file = cli->dlq_default;
	}
	rp_sink_env_init(env);
	env->max_record_bytes = (size_t) cli->max_record_bytes;
	env->max_dlq_bytes = (size_t) cli->max_dlq_bytes;
	/* "none": oversize rows are dropped (counted and warned of) */
	env->dlq_path = strcmp(cli->dlq_file, "none") == 0 ? NULL : cli->dlq_file;
	/* the log sinks keep a stopped snapshot's progress here (rp_snapresume.h) */
	rp_cli_snapshot_progress_path(cli, cli->snapshot_progress, sizeof(cli->snapshot_progress));
	env->snapshot_progress_path = cli->snapshot_progress;
	env->backfill = cli->backfill_run;
	/* live aggregates write in the mirror's batch, before its commit */
	if (cli->agg)
		rp_agg_batch_hook(cli->agg, cli->agg_only, &env->batch_hook);

	/*
	 * One consumer per state dir and spill dir (rp_lock.h): a second one
	 * refuses before it opens the sink or touches a file.
	 */
	if (cli->spill_dir == NULL)
	{
		snprintf(cli->spill_default, sizeof(cli->spill_default), "%s/spill", cli->state_dir);
		cli->spill_dir = cli->spill_default;
	}
	if (rp_lock_dir(cli->state_dir, "state directory") < 0 || rp_lock_spill_dir(cli->spill_dir) < 0)
	{
		pg_log_error("%s", rp_error());
		return RP_EXIT_ERROR;
	}
	return RP_EXIT_OK;
}

/*
 * The sink; a destination that is down at start is waited for, like a
 * lost one.  NULL with *rc the exit status (reported) when it cannot be.
 */
static RpSink *
open_sink_waiting(RpCli *cli, const RpSinkEnv *env, int *rc)
{
	RpSink	   *sink;
	int			backoff = 1;

	while ((sink = open_sink(cli, env)) == NULL)
	{
		if (rp_error_halt() == RP_HALT_CONFIG || rp_error_halt() == RP_HALT_IN_USE)
		{
			pg_log_error("%s", rp_error());
			*rc = rp_error_halt() == RP_HALT_CONFIG ? RP_EXIT_USAGE : RP_EXIT_ERROR;
			return NULL;
		}
		if (rp_error_halt() != RP_HALT_NONE || cli->no_loop || rp_stop_requested())
		{
			pg_log_error("%s", rp_error());
			*rc = rp_error_halt() != RP_HALT_NONE ? RP_EXIT_HALT : RP_EXIT_ERROR;
			return NULL;
		}
		pg_log_error("%s; retrying in %d s", rp_error(), backoff);
		if (!rp_pause_ms(backoff * 1000))
		{
			*rc = RP_EXIT_OK;
			return NULL;
		}
		backoff = backoff * 2 > RP_BACKOFF_MAX_S ? RP_BACKOFF_MAX_S : backoff * 2;
	}
	return sink;
}

/*
 * What streaming needs once the sink is open and any snapshot done: the
 * checkpoint (*ck, *have_ck), the spill store, the assembler, the delivery,
 * the metrics and the backfill.  0, or -1 (rp_error).
 */
static int
run_setup(RpRun *run, RpCheckpoint *ck, int *have_ck)
{
	RpCli	   *cli = run->cli;

	if (run->sink->owns_checkpoint)
		*have_ck = run->sink->checkpoint(run->sink, ck);
	else
		*have_ck = rp_ckpt_read(run->ckpt_path, ck);
	if (*have_ck < 0)
		return -1;
	if (rp_deliver_check_sink(run->sink, rp_messages_pass(rp_cli_plugin_option(cli, "include_messages"), NULL, "") != RP_MSG_PASS_NO) < 0)
		return -1;
	if (rp_spill_init(&run->spill, cli->spill_dir, cli->max_memory, cli->max_spill) < 0)
		return -1;
	run->sink->spill = &run->spill;	/* the mirror's effect map charges it too */
	rp_asm_init(&run->asm_, &run->spill, *have_ck ? ck->commit_lsn : 0);
	/*
	 * A sink that can apply a streamed transaction before its commit gets its
	 * blocks; not with aggregate bindings, whose fold pass runs per batch.
	 */
	run->asm_.events = run->hook;
	run->asm_.early = run->sink->handle_chunk != NULL && !cli->no_early_apply && cli->agg == NULL;
	/* the metrics page, served since before the snapshot, may read them now */
	atomic_store(&run->metrics_src.stream_ready, true);
	if (rp_deliver_init(&run->dl, run->sink, ck, run->sink->owns_checkpoint ? NULL : run->ckpt_path,
						run->view_path, &cli->limits) < 0)
		return -1;
	rp_deliver_count_into(&run->dl, &run->counters);
	rp_deliver_set_events(&run->dl, &run->hook);
	/* no idle_hook: the receiving thread itself answers the server while the sink works */
	if (cli->nbackfill > 0 && rp_cli_backfill_start(cli, run->sink) < 0)
		return -1;
	return 0;
}

/*
 * The metrics page, served from before the snapshot (its per-table rows
 * show while it copies); what it reads of the stages not set up yet is
 * zeros until they are.  0, or -1 (rp_error).
 */
static int
run_metrics_start(RpRun *run)
{
	RpCli	   *cli = run->cli;

	run->metrics_src.m = &run->metrics;
	run->metrics_src.count = &run->counters;
	run->metrics_src.snap = &run->snap;
	run->metrics_src.asm_ = &run->asm_;
	run->metrics_src.spill = &run->spill;
	run->metrics_src.agg = cli->agg;
	run->metrics_src.sink = run->sink;
	run->metrics_src.progress = &run->progress;
	if (cli->source && (run->nsrc = rp_cli_fanout_source(cli)) == NULL)
		return -1;
	run->metrics_src.nsrc = run->nsrc;
	if (rp_cli_metrics_register(&run->metrics, &run->metrics_src) < 0 ||
		rp_metrics_start(&run->metrics, cli->metrics_port) < 0)
		return -1;
	return 0;
}

/*
 * After a lost connection: the server sends again from the durable
 * position (*durable); what was already handed to the delivery thread is
 * skipped as a duplicate.  0, or -1 (rp_error).
 */
static int
run_resume_point(RpRun *run, RpCheckpoint *durable, bool *lost_sink)
{
	RpCli	   *cli = run->cli;

	*lost_sink = rp_pipe_durable(&run->pipe, durable) < 0;
	if (!*lost_sink)
	{
		run->asm_.watermark = durable->commit_lsn > run->pipe.last_pushed_commit
			? durable->commit_lsn : run->pipe.last_pushed_commit;
		return 0;
	}

	/*
	 * The delivery thread lost its sink (a destination restart): start
	 * delivery over from what is durable.  The relation view is reloaded
	 * too, so a schema change rolled back with the failed batch is seen (and
	 * applied, or halted on) again.
	 */
	rp_error_clear();
	*durable = run->pipe.durable;
	rp_pipe_stop(&run->pipe);
	rp_deliver_free(&run->dl);
	if (rp_deliver_init(&run->dl, run->sink, durable,
						run->sink->owns_checkpoint ? NULL : run->ckpt_path, run->view_path,
						&cli->limits) < 0)
		return -1;
	/* counting goes on where it was: the metrics never go backwards */
	rp_deliver_count_into(&run->dl, &run->counters);
	rp_deliver_set_events(&run->dl, &run->hook);
	if (rp_pipe_start(&run->pipe, &run->dl, 2 * cli->limits.max_bytes) < 0)
		return -1;
	run->asm_.watermark = durable->commit_lsn;
	return 0;
}

/*
 * Stream, reconnecting with backoff after connection trouble: 0 at endpos
 * or a stop, -1 on a fail-closed halt or with --no-loop (rp_error).
 */
static int
run_loop(RpRun *run, int have_ck, uint64_t progress_lsn)
{
	int			backoff = 1;

	for (;;)
	{
		char		why[1024];
		bool		lost_sink;
		RpCheckpoint durable;

		if ((run->cli->source ? rp_run_nats_once(run, have_ck > 0) : stream_once(run, have_ck > 0)) == 0)
			return 0;
		RP_COUNT_ADD(run->metrics.halts[rp_error_halt()], 1);
		/* a stop that met connection trouble is still a stop */
		if (rp_stop_requested() && rp_error_halt() == RP_HALT_NONE)
			return 0;
		/* fail-closed halts and --no-loop end the run; connection trouble retries */
		if (rp_error_halt() == RP_HALT_NONE)
		{
			RpEvent		ev;

			/* connection trouble (a halt is told by the stage that halted) */
			rp_event_init(&ev, RP_EVENT_CONN_LOST);
			rp_run_emit(run, &ev);
		}
		if (rp_error_halt() != RP_HALT_NONE || run->cli->no_loop)
			return -1;
		snprintf(why, sizeof(why), "%s", rp_error());
		disconnect(run);
		if (run_resume_point(run, &durable, &lost_sink) < 0)
			return -1;

		/*
		 * The backoff starts over after progress (the durable position
		 * moved), or after a source connection that got to stream; a sink
		 * that fails again and again (the source streams fine each time)
		 * is retried ever less often, up to RP_BACKOFF_MAX_S.
		 */
		if (durable.end_lsn > progress_lsn || (run->streamed && !lost_sink))
			backoff = 1;
		if (durable.end_lsn > progress_lsn)
			progress_lsn = durable.end_lsn;
		run->streamed = false;
		pg_log_error("%s; reconnecting in %d s", why, backoff);
		if (!rp_pause_ms(backoff * 1000))
			return 0;
		backoff = backoff * 2 > RP_BACKOFF_MAX_S ? RP_BACKOFF_MAX_S : backoff * 2;
		/*
		 * Once a connection has bound the checkpoint to the source (the
		 * delivery thread runs), later ones check against it; before that
		 * there is still no checkpoint to check.
		 */
		if (run->pipe.started)
			have_ck = 1;
	}
}

/* Every end of a run: the connection, the delivery thread, backfill, metrics. */
static void
run_stop_threads(RpRun *run)
{
	disconnect(run);
	if (rp_stop_requested())
		rp_pipe_abandon(&run->pipe, NULL, NULL);
	rp_pipe_stop(&run->pipe);
	rp_backfill_stop(run->cli->backfill_run);	/* after the delivery thread: it may hold a chunk */
	rp_metrics_stop(&run->metrics);
	rp_snap_stats_free(&run->snap);
	rp_cli_log_set_progress(NULL);
	rp_cli_progress_free(&run->progress);
}

/* A run that failed: reported, stopped, the sink closed; the exit status. */
static int
run_fail(RpRun *run)
{
	int			rc;

	rc = rp_error_halt() != RP_HALT_NONE && rp_error_halt() != RP_HALT_CONFIG &&
		rp_error_halt() != RP_HALT_IN_USE ? RP_EXIT_HALT : RP_EXIT_ERROR;
	pg_log_error("%s", rp_error());
	if (rc == RP_EXIT_HALT)
		fprintf(stderr, "%s: halted (%s); nothing past the last durable checkpoint was acknowledged\n",
				progname, rp_halt_name(rp_error_halt()));
	run_stop_threads(run);
	/* every exit path closes its sink: the exec child reaped, the destination session ended */
	run->sink->close(run->sink);
	/* spill files are private garbage now */
	if (run->spill.dir)
	{
		RpSpill		again;

		rp_spill_init(&again, run->spill.dir, 0, 0);
	}
	return rc;
}

int
rp_cli_run_stream(RpCli *cli)
{
	RpRun		run;
	RpSinkEnv	env;
	RpCheckpoint ck;
	int			have_ck;
	int			rc;

	memset(&run, 0, sizeof(run));
	memset(&ck, 0, sizeof(ck));
	run.cli = cli;
	run.events.count = &run.counters;
	run.events.verbose = cli->verbose;
	run.hook = rp_cli_events_hook(&run.events);
	rc = run_prepare(cli, &env);
	if (rc != RP_EXIT_OK)
		return rc;
	run_tune_malloc(cli);
	run.sink = open_sink_waiting(cli, &env, &rc);
	if (run.sink == NULL)
		return rc;

	snprintf(run.ckpt_path, sizeof(run.ckpt_path), "%s/%s.checkpoint", cli->state_dir, cli->slot);
	snprintf(run.view_path, sizeof(run.view_path), "%s/%s.relations", cli->state_dir, cli->slot);
	rp_cli_progress_init(&run.progress, cli->no_progress ? RP_PROGRESS_OFF
						 : cli->progress ? RP_PROGRESS_ON : RP_PROGRESS_AUTO);
	rp_cli_log_set_progress(&run.progress.disp);
	if (run_metrics_start(&run) < 0)
		return run_fail(&run);
	atomic_store(&run.metrics_src.snap_running, cli->snapshot);
	rc = cli->snapshot ? rp_cli_snapshot(cli, run.sink, run.ckpt_path, &run.snap, &run.progress, &run.hook) : 0;
	atomic_store(&run.metrics_src.snap_running, false);
	if (rc < 0)
	{
		/* a stop: what was stored is where the next run resumes (exit 0) */
		if (rp_stop_requested() && rp_error_halt() == RP_HALT_NONE)
		{
			run_stop_threads(&run);
			fprintf(stderr, "%s: %s\n", progname, rp_error());
			run.sink->close(run.sink);
			return RP_EXIT_OK;
		}
		return run_fail(&run);
	}
	if (run_setup(&run, &ck, &have_ck) < 0 || run_loop(&run, have_ck, ck.end_lsn) < 0)
		return run_fail(&run);

	run_stop_threads(&run);
	pg_log_info("delivered %" PRIu64 " transactions in %" PRIu64 " batches; %" PRIu64
				" streamed transactions applied early (%" PRIu64 " blocks, %" PRIu64 " dropped)",
				run.counters.txns, run.counters.batches, run.counters.early_commits,
				run.counters.early_chunks, run.counters.early_drops);
	rp_deliver_free(&run.dl);
	rp_asm_free(&run.asm_);
	rp_natsrc_free(run.nsrc);
	run.sink->close(run.sink);
	return RP_EXIT_OK;
}

int
rp_cli_slot_action(RpCli *cli)
{
	RpConn		conn;
	int			rc = 0;

	if (rp_conn_open(&conn, cli->dbname, progname) < 0)
	{
		pg_log_error("%s", rp_error());
		return RP_EXIT_ERROR;
	}
	if (cli->drop_slot)
	{
		pg_log_info("dropping replication slot \"%s\"", cli->slot);
		rc = rp_conn_drop_slot(&conn, cli->slot);
	}
	if (rc == 0 && cli->create_slot)
	{
		pg_log_info("creating replication slot \"%s\"", cli->slot);
		rc = rp_conn_create_slot(&conn, cli->slot, "replicant", cli->if_not_exists);
	}
	rp_conn_close(&conn);
	if (rc < 0)
	{
		pg_log_error("%s", rp_error());
		return RP_EXIT_ERROR;
	}
	return RP_EXIT_OK;
}
