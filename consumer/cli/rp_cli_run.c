/*
 * rp_cli_run.c
 *    The program's run, as pg_recvlogical.c around receivelog.c: the slot
 *    actions, and --start: the locks and the sink's environment, the sink
 *    (waited for while its destination is down), the metrics page, the
 *    initial snapshot, then the library's run engine (run/rp_run.h) called
 *    once with the source the command line names (a slot, or a JetStream
 *    stream).  What the run does comes back through its hooks: the events
 *    (rp_cli_events.c), the progress line, the log lines.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rp_lock.h"
#include "base/rp_metrics.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"
#include "backfill/rp_backfill.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_events.h"
#include "cli/rp_cli_metrics.h"
#include "cli/rp_cli_progress.h"
#include "cli/rp_cliparse.h"
#include "natsrc/rp_natsrc.h"
#include "run/rp_run.h"
#include "run/rp_source.h"
#include "stream/rp_conn.h"

static const char *const progname = RP_CLI_PROGNAME;

/* the longest pause between two attempts to open the sink (s) */
#define RP_BACKOFF_MAX_S 30

/* The program's side of a run: what the metrics page and the terminal show. */
typedef struct RpCliRun
{
	RpCli	   *cli;
	RpRun		run;			/* the library's */
	RpSink	   *sink;
	RpNatsSrc  *nsrc;			/* --source nats://: the stream's reader */
	RpSource   *src;
	RpMetrics	metrics;
	RpCliMetrics metrics_src;	/* what the metrics page reads */
	RpCliEvents events;			/* the library's events: counters and -v lines */
	RpEventHook hook;			/* rp_cli_event on events */
	RpSnapStats snap;			/* the initial snapshot's counters */
	RpCliProgress progress;		/* the terminal's lines, and their figures for
								 * the page */
	char		ckpt_path[4096];	/* STATE-DIR/SLOT.checkpoint (a sink that
									 * owns none) */
	char		view_path[4096];	/* STATE-DIR/SLOT.relations */
} RpCliRun;

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

/*
 * A stream reader (--source nats://): libnats allocates every message on
 * its own thread and the run frees it on this one, so glibc gave that
 * thread an arena of its own whose freed memory, up to the trim threshold
 * again, stayed in the process beside the main one's.  One arena: on a
 * 1M-row transaction read with --max-memory 32MB (bound 96 MB), peak RSS
 * of four paired runs (file, postgres, stdout, file) 107, 97, 90 and 100
 * MB with glibc's arenas, 94, 80, 85 and 76 MB with one, no slower
 * (issue 48 item 3).
 */
#define RP_READER_ARENAS 1

static void
run_tune_malloc(const RpCli *cli)
{
	size_t		keep = cli->max_memory / 4;

	if (keep > RP_TRIM_THRESHOLD_MAX)
		keep = RP_TRIM_THRESHOLD_MAX;
	mallopt(M_MMAP_THRESHOLD, (int) RP_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, (int) keep);
	if (cli->source)
		mallopt(M_ARENA_MAX, RP_READER_ARENAS);
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
		return RP_EXIT_REFUSED;
	}
	if (cli->source && !rp_natsrc_available())
	{
		pg_log_error("this replicant was built without the NATS source (libnats)");
		return RP_EXIT_REFUSED;
	}

	/*
	 * the log sinks' snapshot envelope: oversize rows go to the dead-letter
	 * file
	 */
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
open_sink_waiting(RpCli *cli, const RpSinkEnv *env, RpMetrics *metrics, int *rc)
{
	RpSink	   *sink;
	int			backoff = 1;

	while ((sink = open_sink(cli, env)) == NULL)
	{
		if (rp_error_halt() == RP_HALT_CONFIG || rp_error_halt() == RP_HALT_IN_USE)
		{
			pg_log_error("%s", rp_error());
			*rc = rp_error_halt() == RP_HALT_CONFIG ? RP_EXIT_REFUSED : RP_EXIT_ERROR;
			return NULL;
		}
		if (rp_error_halt() != RP_HALT_NONE || cli->no_loop || rp_stop_requested())
		{
			pg_log_error("%s", rp_error());
			*rc = rp_error_halt() != RP_HALT_NONE ? RP_EXIT_HALT : RP_EXIT_ERROR;
			return NULL;
		}
		pg_log_error("%s; retrying in %d s", rp_error(), backoff);
		RP_COUNT_ADD(metrics->retries[RP_RETRY_SINK], 1);
		if (!rp_pause_ms(backoff * 1000))
		{
			*rc = RP_EXIT_OK;
			return NULL;
		}
		backoff = backoff * 2 > RP_BACKOFF_MAX_S ? RP_BACKOFF_MAX_S : backoff * 2;
	}
	return sink;
}

/* ---- the run's hooks ------------------------------------------------------ */

static void
on_progress(void *arg, const RpRunProgress *p)
{
	RpCliRun   *cr = arg;

	rp_cli_progress_stream(&cr->progress, p);
}

static void
on_log(void *arg, RpRunLogLevel level, const char *line)
{
	char		buf[2200];

	switch (level)
	{
		case RP_RUN_LOG_INFO:
			pg_log_info("%s", line);
			break;
		case RP_RUN_LOG_ERROR:
			pg_log_error("%s", line);
			break;
		case RP_RUN_LOG_NOTICE:
			snprintf(buf, sizeof(buf), "%s: %s", progname, line);
			rp_cli_log_line(buf);
			break;
	}
}

static void
on_log_info(void *arg, const char *line)
{
	pg_log_info("%s", line);
}

static bool
on_take_reopen(void *arg)
{
	return rp_cli_take_reopen();
}

/* Delivery is set up: the metrics page may read the stream's stages; --backfill starts. */
static int
on_started(void *arg, RpSink *sink)
{
	RpCliRun   *cr = arg;

	atomic_store(&cr->metrics_src.stream_ready, true);
	if (cr->cli->nbackfill > 0 && rp_cli_backfill_start(cr->cli, sink) < 0)
		return -1;
	return 0;
}

/* ---- the run ---------------------------------------------------------------- */

/* The library's run, its options from the command line and its hooks into this program. */
static void
run_init(RpCliRun *cr)
{
	RpCli	   *cli = cr->cli;
	RpRunOptions o;
	RpRunHooks	h;

	memset(&o, 0, sizeof(o));
	o.slot = cli->slot;
	o.endpos = cli->endpos;
	o.endpos_seq = cli->endpos_seq;
	o.status_interval_ms = cli->status_interval_ms;
	o.no_loop = cli->no_loop;
	o.limits = cli->limits;
	o.ckpt_path = cr->ckpt_path;
	o.view_path = cr->view_path;
	o.spill_dir = cli->spill_dir;
	o.max_memory = cli->max_memory;
	o.max_spill = cli->max_spill;
	/* not with aggregate bindings, whose fold pass runs per batch */
	o.early_apply = !cli->no_early_apply && cli->agg == NULL;
	o.messages = rp_messages_pass(rp_cli_plugin_option(cli, "include_messages"), NULL, "") != RP_MSG_PASS_NO;
	o.backfill = cli->backfill_run;

	memset(&h, 0, sizeof(h));
	cr->events.count = &cr->run.counters;
	cr->events.verbose = cli->verbose;
	cr->hook = rp_cli_events_hook(&cr->events);
	h.events = cr->hook;
	h.metrics = &cr->metrics;
	h.progress = on_progress;
	h.log = on_log;
	h.take_reopen = on_take_reopen;
	h.started = on_started;
	h.arg = cr;
	rp_run_init(&cr->run, &o, &h);
}

/* The source the command line names: --source's stream, else the slot.  NULL after rp_fail. */
static RpSource *
run_source(RpCliRun *cr)
{
	RpCli	   *cli = cr->cli;
	RpSlotSourceOptions so;

	if (cli->source)
	{
		RpNatsSrcOptions no;

		memset(&no, 0, sizeof(no));
		no.url = cli->source;
		no.stream = cli->nats.stream;
		no.subjects = cli->nats_subjects;
		no.from_current_start = cli->nats_from_current_start;
		no.creds = cli->nats.creds;
		no.tls_ca = cli->nats.tls_ca;
		no.tls_cert = cli->nats.tls_cert;
		no.tls_key = cli->nats.tls_key;
		if ((cr->nsrc = rp_natsrc_new(&no)) == NULL)
			return NULL;
		return rp_source_nats_new(cr->nsrc, cli->nats.stream);
	}
	memset(&so, 0, sizeof(so));
	so.conninfo = cli->dbname;
	so.progname = progname;
	so.slot = cli->slot;
	so.startpos = cli->startpos;
	so.plugin_options = cli->options;
	so.noptions = cli->noptions;
	so.decoding_work_mem_kb = cli->decoding_work_mem_kb;
	so.select.include = rp_cli_plugin_option(cli, "include_tables");
	so.select.exclude = rp_cli_plugin_option(cli, "exclude_tables");
	so.select.via_root = rp_cli_partitions_root(cli);
	so.status_interval_ms = cli->status_interval_ms;
	so.log_info = on_log_info;
	return rp_source_slot_new(&so);
}

/*
 * The metrics page, served from before the snapshot (its per-table rows
 * show while it copies); what it reads of the stages not set up yet is
 * zeros until they are.  0, or -1 (rp_error).
 */
static int
run_metrics_start(RpCliRun *cr)
{
	RpCli	   *cli = cr->cli;

	cr->metrics_src.m = &cr->metrics;
	cr->metrics_src.count = &cr->run.counters;
	cr->metrics_src.snap = &cr->snap;
	cr->metrics_src.asm_ = &cr->run.asm_;
	cr->metrics_src.spill = &cr->run.spill;
	cr->metrics_src.agg = cli->agg;
	cr->metrics_src.sink = cr->sink;
	cr->metrics_src.progress = &cr->progress;
	if ((cr->src = run_source(cr)) == NULL)
		return -1;
	cr->metrics_src.nsrc = cr->nsrc;
	cr->metrics.version = RP_VERSION;
	rp_metrics_set_labels(&cr->metrics, cli->slot, rp_cli_sink_kind(cli->sink));
	if (rp_metrics_set_address(&cr->metrics, cli->metrics_address ? cli->metrics_address : "127.0.0.1") < 0 ||
		rp_cli_metrics_register(&cr->metrics, &cr->metrics_src) < 0 ||
		rp_metrics_start(&cr->metrics, cli->metrics_port) < 0)
		return -1;
	return 0;
}

/* Every end of a run: the program's threads and lines (the library's run stopped its own). */
static void
run_stop(RpCliRun *cr)
{
	rp_metrics_stop(&cr->metrics);
	rp_snap_stats_free(&cr->snap);
	rp_cli_log_set_progress(NULL);
	rp_cli_progress_free(&cr->progress);
}

/* A run that failed: reported, stopped, the sink closed; the exit status. */
static int
run_fail(RpCliRun *cr)
{
	int			rc;

	rc = rp_error_halt() == RP_HALT_CONFIG ? RP_EXIT_REFUSED :
		rp_error_halt() != RP_HALT_NONE && rp_error_halt() != RP_HALT_IN_USE ? RP_EXIT_HALT : RP_EXIT_ERROR;
	pg_log_error("%s", rp_error());
	if (rc == RP_EXIT_HALT)
		fprintf(stderr, "%s: halted (%s); nothing past the last durable checkpoint was acknowledged\n",
				progname, rp_halt_name(rp_error_halt()));
	run_stop(cr);

	/*
	 * every exit path closes its sink: the exec child reaped, the destination
	 * session ended
	 */
	cr->sink->close(cr->sink);
	return rc;
}

/* After the sink opened: the page, the snapshot, the run; the exit status. */
static int
run_with_sink(RpCliRun *cr)
{
	RpCli	   *cli = cr->cli;
	int			rc;

	rp_cli_progress_init(&cr->progress, cli->no_progress ? RP_PROGRESS_OFF
						 : cli->progress ? RP_PROGRESS_ON : RP_PROGRESS_AUTO);
	rp_cli_log_set_progress(&cr->progress.disp);
	if (run_metrics_start(cr) < 0)
		return run_fail(cr);
	atomic_store(&cr->metrics_src.snap_running, cli->snapshot);
	rc = cli->snapshot ? rp_cli_snapshot(cli, cr->sink, cr->ckpt_path, &cr->snap, &cr->progress, &cr->hook) : 0;
	atomic_store(&cr->metrics_src.snap_running, false);
	if (rc < 0)
	{
		/* a stop: what was stored is where the next run resumes (exit 0) */
		if (rp_stop_requested() && rp_error_halt() == RP_HALT_NONE)
		{
			run_stop(cr);
			fprintf(stderr, "%s: %s\n", progname, rp_error());
			cr->sink->close(cr->sink);
			return RP_EXIT_OK;
		}
		return run_fail(cr);
	}
	if (rp_run(&cr->run, cr->src, cr->sink) < 0)
		return run_fail(cr);

	run_stop(cr);
	pg_log_info("delivered %" PRIu64 " transactions in %" PRIu64 " batches; %" PRIu64
				" streamed transactions applied early (%" PRIu64 " blocks, %" PRIu64 " dropped)",
				cr->run.counters.txns, cr->run.counters.batches, cr->run.counters.early_commits,
				cr->run.counters.early_chunks, cr->run.counters.early_drops);
	rp_run_free(&cr->run);
	cr->sink->close(cr->sink);
	return RP_EXIT_OK;
}

int
rp_cli_run_stream(RpCli *cli)
{
	RpCliRun   *cr = rp_malloc0(sizeof(*cr));
	RpSinkEnv	env;
	int			rc;

	cr->cli = cli;
	rc = run_prepare(cli, &env);
	if (rc != RP_EXIT_OK)
		goto out;
	run_tune_malloc(cli);
	cr->sink = open_sink_waiting(cli, &env, &cr->metrics, &rc);
	if (cr->sink == NULL)
		goto out;
	snprintf(cr->ckpt_path, sizeof(cr->ckpt_path), "%s/%s.checkpoint", cli->state_dir, cli->slot);
	snprintf(cr->view_path, sizeof(cr->view_path), "%s/%s.relations", cli->state_dir, cli->slot);
	run_init(cr);
	rc = run_with_sink(cr);
out:
	if (cr->src)
		cr->src->free(cr->src);
	rp_natsrc_free(cr->nsrc);
	rp_free(cr);
	return rc;
}

/*
 * The program without a command (main.c): the options, then the slot
 * actions and the stream.
 */
int
rp_cli_stream_main(int argc, char **argv)
{
	RpCli		cli;
	int			rc;

	rc = rp_cli_parse(&cli, argc, argv);
	if (rc != RP_CLI_RUN)
	{
		rp_cli_free(&cli);
		return rc;
	}
	if (cli.agg)
		rp_agg_set_source(cli.agg, cli.dbname ? cli.dbname : "");
	/* the sink gets the handle when it opens; the thread starts once it runs */
	if (cli.nbackfill > 0)
		cli.backfill_run = rp_backfill_new();

	rp_cli_signals_install();

	/* --snapshot creates the slot itself, with an exported snapshot */
	if ((cli.create_slot && !cli.snapshot) || cli.drop_slot || cli.alter_slot)
	{
		rc = rp_cli_slot_action(&cli);
		if (rc != RP_EXIT_OK || !cli.start)
		{
			rp_cli_free(&cli);
			return rc;
		}
	}
	rc = rp_cli_run_stream(&cli);
	/* closes the aggregate edit streams and waits for their children */
	rp_agg_free(cli.agg);
	rp_backfill_free(cli.backfill_run);
	rp_cli_free(&cli);
	return rc;
}

int
rp_cli_slot_action(RpCli *cli)
{
	RpConn		conn;
	int			rc = 0;

	if (rp_conn_open(&conn, cli->dbname, progname) < 0)
	{
		pg_log_error("%s", rp_error());
		return rp_error_halt() == RP_HALT_CONFIG ? RP_EXIT_REFUSED : RP_EXIT_ERROR;
	}
	if (cli->drop_slot)
	{
		pg_log_info("dropping replication slot \"%s\"", cli->slot);
		rc = rp_conn_drop_slot(&conn, cli->slot);
	}
	if (rc == 0 && cli->create_slot)
	{
		pg_log_info("creating replication slot \"%s\"", cli->slot);
		/* said without -v: the command seems to hang otherwise */
		if (rp_sql_in_recovery(conn.pg))
			rp_cli_log_line("replicant: the source is a standby: the slot is ready once the primary logs its running transactions (SELECT pg_log_standby_snapshot() on the primary does it now; its checkpointer does it every 15 s)");
		rc = rp_conn_create_slot(&conn, cli->slot, "replicant", cli->if_not_exists,
								 cli->failover);
	}
	if (rc == 0 && cli->alter_slot)
	{
		pg_log_info("altering replication slot \"%s\": failover %s", cli->slot,
					cli->failover ? "on" : "off");
		rc = rp_conn_alter_slot(&conn, cli->slot, cli->failover);
	}
	rp_conn_close(&conn);
	if (rc < 0)
	{
		pg_log_error("%s", rp_error());
		return rp_error_halt() == RP_HALT_CONFIG ? RP_EXIT_REFUSED : RP_EXIT_ERROR;
	}
	return RP_EXIT_OK;
}
