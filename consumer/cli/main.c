/*
 * main.c
 *    replicant: receive a replicant slot's stream and apply it to a sink.
 *    The command line follows pg_recvlogical wherever the two overlap.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream/rp_asm.h"
#include "backfill/rp_backfill.h"
#include "backfill/rp_bfmsg.h"
#include "cli/rp_cliparse.h"
#include "agg/rp_agg.h"
#include "stream/rp_conn.h"
#include "stream/rp_deliver.h"
#include "base/rp_lock.h"
#include "base/rp_metrics.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "sinks/mirror/rp_mirror_backfill.h"
#include "stream/rp_pipe.h"
#include "snapshot/rp_snapshot.h"
#include "base/rp_status.h"
#include "envelope/rp_verify.h"
#include "rp_wire.h"

#define RP_VERSION "0.1.0"

static const char *progname = "replicant";

static volatile sig_atomic_t reopen_requested = 0;

/* --decoding-work-mem: "server" leaves the server's setting alone */
#define RP_DECODING_WORK_MEM_SERVER UINT64_MAX
/* the default for a sink that applies streamed transactions early (kB) */
#define RP_EARLY_DECODING_WORK_MEM_KB 16384
/* the longest pause between two connection attempts (s) */
#define RP_BACKOFF_MAX_S 30
/* a clean end of the stream waits this long for its CopyDone to leave */
#define RP_FINISH_TIMEOUT_MS 10000
/* --exec-ack-timeout's default (s): long enough for a child that fsyncs a large batch */
#define RP_EXEC_ACK_TIMEOUT_DEFAULT 300
/*
 * The largest size option: no real limit is near it, and sums and doubles
 * of it stay far from overflowing 64 bits.
 */
#define RP_SIZE_MAX ((uint64_t) 1 << 50)
/*
 * --batch-bytes: a batch is held in memory while the sink applies it and
 * the delivery queue holds up to twice it, so 1GB (PostgreSQL's own limit
 * for one allocation) bounds what one unit can pin.
 */
#define RP_BATCH_BYTES_MAX ((uint64_t) 1 << 30)

typedef struct RpCli
{
	char	   *dbname;
	char	   *slot;
	bool		create_slot;
	bool		if_not_exists;
	bool		drop_slot;
	bool		start;
	char	  **options;		/* name, value pairs, NULL-terminated */
	int			noptions;
	uint64_t	startpos;
	uint64_t	endpos;
	int			status_interval_ms;
	bool		no_loop;
	int			verbose;
	char	   *sink;
	size_t		max_memory;
	uint64_t	max_spill;
	char	   *state_dir;
	char	   *spill_dir;
	RpBatchLimits limits;
	bool		progress;
	int			metrics_port;
	RpPgOptions pg;				/* mirror sink */
	bool		no_early_apply;
	uint64_t	decoding_work_mem_kb;	/* 0: default (see set_decoding_work_mem) */
	RpAgg	   *agg;			/* live aggregate bindings, or NULL */
	bool		agg_only;
	bool		snapshot;		/* initial snapshot before streaming */
	int			snapshot_workers;
	uint64_t	snapshot_chunk_rows;
	uint64_t	max_record_bytes;	/* log sinks' snapshot envelope */
	uint64_t	max_dlq_bytes;
	char	   *dlq_file;
	char	  **backfill;		/* --backfill tables, "schema.table" */
	RpBackfill *backfill_run;	/* their backfill (the sink gets it), or NULL */
	int			nbackfill;
	uint64_t	backfill_chunk_rows;
	int			exec_ack_timeout_s; /* exec sink: 0 waits for ever */
} RpCli;

typedef struct RpRun
{
	RpCli	   *cli;
	RpConn		conn;
	RpSpill		spill;
	RpAsm		asm_;
	RpDelivery	dl;				/* owned by the delivery thread once it runs */
	RpPipe		pipe;
	RpSink	   *sink;
	RpMetrics	metrics;
	RpDlCounters counters;		/* the deliveries' telemetry, for the process's life */
	RpSnapStats snap_stats;		/* the initial snapshot's (--snapshot) */
	bool		connected;
	int64_t		last_progress_us;
	uint64_t	last_progress_changes;
	bool		streamed;		/* START_REPLICATION succeeded since the last retry */
	int64_t		last_advance_us;	/* last idle advance asked of the delivery thread */
} RpRun;

static void
usage(void)
{
	printf("%s receives a replicant logical decoding stream and applies it to a sink.\n\n", progname);
	printf("Usage:\n  %s [OPTION]...\n  %s verify-snapshot [--rows ID] [--quiet] FILE...   (check snapshot dumps; --help for details)\n",
		   progname, progname);
	printf("\nAction to be performed:\n");
	printf("      --create-slot      create a new replication slot (plugin replicant)\n");
	printf("      --drop-slot        drop the replication slot\n");
	printf("      --start            start streaming in a replication slot\n");
	printf("      --snapshot         with --create-slot --start: copy the selected tables under the\n"
		   "                         slot's exported snapshot first, then stream (resumes a stopped copy)\n");
	printf("\nOptions:\n");
	printf("  -E, --endpos=LSN       stop at the first transaction boundary at or after LSN\n");
	printf("      --if-not-exists    do not error if the slot already exists when creating it\n");
	printf("  -I, --startpos=LSN     where to start streaming in an existing slot\n");
	printf("  -n, --no-loop          do not reconnect when the connection is lost\n");
	printf("  -o, --option=NAME[=VALUE]\n"
		   "                         pass option NAME with optional VALUE to the plugin\n");
	printf("  -s, --status-interval=SECS\n"
		   "                         time between status updates to the server (default: 10)\n");
	printf("  -S, --slot=SLOTNAME    name of the logical replication slot\n");
	printf("      --sink=SINK        stdout (or -), file:PATH, exec:COMMAND, postgresql://URI or\n"
		   "                         postgres:CONNINFO (a mirror; default: stdout)\n");
	printf("      --state-dir=DIR    checkpoint, relation view and spill files (default: ./replicant-state)\n");
	printf("      --spill-dir=DIR    spill files (default: STATE-DIR/spill)\n");
	printf("      --max-memory=SIZE  assembled transactions held in memory (default: 256MB)\n");
	printf("      --max-spill=SIZE   spilled transactions on disk before halting (default: 64GB)\n");
	printf("      --batch-txns=N     transactions per delivered batch (default: 1000)\n");
	printf("      --batch-bytes=SIZE bytes per delivered batch (default: 64MB, at most 1GB)\n");
	printf("      --batch-ms=MS      longest a batch waits to fill (default: 200)\n");
	printf("      --decoding-work-mem=SIZE|server\n"
		   "                         logical_decoding_work_mem of this session on the server: past it, a\n"
		   "                         transaction is streamed (default: 16MB when the sink applies streamed\n"
		   "                         transactions early and the server's setting is higher; else the server's)\n");
	printf("      --progress         one-line status on stderr when it is a terminal\n");
	printf("      --snapshot-workers=N parallel copy sessions of --snapshot (default: 2)\n");
	printf("      --snapshot-chunk-rows=N rows per snapshot chunk (default: 100000)\n");
	printf("      --max-record-bytes=SIZE  log sinks: a snapshot row larger than this becomes an\n"
		   "                         oversize stub (default: no limit)\n");
	printf("      --max-dlq-bytes=SIZE how much of an oversize row the dead-letter file keeps (default: 64kB)\n");
	printf("      --dead-letter-file=PATH  oversize rows (default: STATE-DIR/SLOT.dead-letter)\n");
	printf("      --metrics-port=PORT  serve Prometheus metrics on 127.0.0.1:PORT\n");
	printf("      --exec-ack-timeout=SECS  exec sink: halt when the child neither reads nor acknowledges\n"
		   "                         for SECS (default: %d; 0: wait for ever)\n", RP_EXEC_ACK_TIMEOUT_DEFAULT);
	printf("\nMirror sink options:\n");
	printf("      --create-tables    create missing destination tables from the source's description\n");
	printf("      --on-destructive=halt|skip|apply\n"
		   "                         a dropped column or changed type halts (default), is ignored, or is applied\n");
	printf("      --schema-prefix=P  destination schema is P followed by the source schema\n");
	printf("      --bookkeeping-schema=NAME  the mirror's own tables (checkpoint, messages, progress);\n"
		   "                         no source table may map into it (default: replicant)\n");
	printf("      --on-divergence=halt|skip  an update or delete of a REPLICA IDENTITY FULL table that\n"
		   "                         matches no destination row halts (default) or is counted and skipped\n");
	printf("      --history=TABLE    keep TABLE's versions (valid_from/valid_to) instead of its state\n");
	printf("      --message-route=PREFIX   store logical messages with PREFIX in replicant.messages\n");
	printf("      --message-ignore=PREFIX  acknowledge logical messages with PREFIX, no effect\n");
	printf("      --backfill=SCHEMA.TABLE  with --start: copy the table while the stream runs (a table\n"
		   "                         added to include_tables later; repeatable; resumes; docs/operations.md)\n");
	printf("      --backfill-chunk-rows=N  rows per backfill chunk (default: 10000)\n");
	printf("      --no-early-apply   apply a large streamed transaction only at its commit, not block by block\n"
		   "                         (always so with aggregate bindings)\n");
	printf("\nLive aggregates (with the mirror sink; see docs/aggregates.md):\n");
	printf("      --aggregate=SPEC   keep a binding: 'name=N source=SCHEMA.TABLE dims=C1,C2 measure=M\n"
		   "                         agg=none|sum|avg|min|max|count|count_distinct\n"
		   "                         output=table:SCHEMA.TABLE|stdout|file:PATH|exec:COMMAND' (repeatable)\n");
	printf("      --aggregates=FILE  bindings, one SPEC a line\n");
	printf("      --aggregates-only  mirror no table: the destination holds aggregate outputs and the checkpoint\n");
	printf("\nOther options:\n");
	printf("  -v, --verbose          output verbose messages\n");
	printf("  -V, --version          output version information, then exit\n");
	printf("  -?, --help             show this help, then exit\n");
	printf("\nConnection options:\n");
	printf("  -d, --dbname=CONNSTR   database to connect to (a conninfo string or URI)\n");
	printf("\nExit status: 0 done, 1 error, 2 usage, 3 fail-closed halt (see docs/operations.md).\n");
}

static void
pg_log_error(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static void
pg_log_error(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
pg_log_info(RpCli *cli, const char *fmt,...) __attribute__((format(printf, 2, 3)));
static void
pg_log_info(RpCli *cli, const char *fmt,...)
{
	va_list		ap;

	if (!cli->verbose)
		return;
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
on_stop_signal(int signo)
{
	/* async-signal-safe: every thread's waits look at it (rp_status.h) */
	rp_stop_request();
}

static void
on_hup_signal(int signo)
{
	reopen_requested = 1;
}

/*
 * A bad option value: a usage error naming the option (the value is the
 * user's own argument, never row data).  hint, if any, says what is valid.
 */
static int
bad_value(const char *option, const char *value, const char *hint)
{
	pg_log_error("invalid value \"%s\" for option --%s%s%s%s", value, option,
				 hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
	fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
	return RP_EXIT_USAGE;
}

static void
add_option(RpCli *cli, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char	   *name = eq ? rp_strndup(arg, (size_t) (eq - arg)) : rp_strndup(arg, strlen(arg));

	cli->options = rp_realloc(cli->options, sizeof(char *) * (size_t) (cli->noptions * 2 + 3));
	cli->options[cli->noptions * 2] = name;
	cli->options[cli->noptions * 2 + 1] = eq ? rp_strndup(eq + 1, strlen(eq + 1)) : NULL;
	cli->noptions++;
	cli->options[cli->noptions * 2] = NULL;
}

static void
add_name(char ***list, int *n, const char *name)
{
	*list = rp_realloc(*list, sizeof(char *) * (size_t) (*n + 1));
	(*list)[(*n)++] = rp_strndup(name, strlen(name));
}

/* ---- feedback ------------------------------------------------------------ */

/* The one place that reports progress to the server: flush = durable (G2). */
static int
send_feedback(RpRun *run, bool force, bool request_reply)
{
	int64_t		now = rp_now_us();
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
static void
wait_tick(void *arg)
{
	RpRun	   *run = arg;

	/* a failure here shows up again in the main loop's next call */
	if (send_feedback(run, false, false) < 0)
		rp_error_clear();
}

static void
show_progress(RpRun *run)
{
	int64_t		now = rp_now_us();
	char		ck[24];
	double		secs = (now - run->last_progress_us) / 1e6;
	uint64_t	end = RP_COUNT_LOAD(run->counters.checkpoint_lsn);
	uint64_t	txns = RP_COUNT_LOAD(run->counters.txns);
	uint64_t	changes = RP_COUNT_LOAD(run->counters.changes);
	uint64_t	lag = run->conn.server_wal_end > end ? run->conn.server_wal_end - end : 0;

	if (!run->cli->progress || !isatty(STDERR_FILENO) || now - run->last_progress_us < 1000000)
		return;
	rp_lsn_format(end, ck);
	fprintf(stderr, "\r%s: %" PRIu64 " txns, %.0f changes/s, lag %" PRIu64 " bytes %.1f s, checkpoint %s   ",
			progname, txns,
			run->last_progress_us ? (changes - run->last_progress_changes) / secs : 0.0,
			lag, rp_metrics_lag_seconds(&run->metrics, lag, now), ck);
	run->last_progress_us = now;
	run->last_progress_changes = changes;
}

/* ---- the stream ---------------------------------------------------------- */

/* Deliver everything the assembler completed; true once endpos is reached. */
static int
deliver_ready(RpRun *run, bool *done)
{
	RpItem	   *item;
	int			rc;

	while ((item = rp_asm_pop(&run->asm_)) != NULL)
	{
		uint64_t	end = item->kind == RP_ITEM_TXN ? item->txn->end_lsn : item->kind == RP_ITEM_MESSAGE ? item->msg.lsn : 0;

		if (item->kind == RP_ITEM_TXN)
			RP_COUNT_STORE(run->metrics.last_commit_time, item->txn->commit_time);

		rc = rp_pipe_push(&run->pipe, item, wait_tick, run);
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

	/* version 2: every timestamp PostgreSQL has, the last 30 years included */
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

/* One connection's life: 0 = finished (endpos or signal), -1 = error. */
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
	pg_log_info(cli, "logical_decoding_work_mem of this session: %" PRIu64 "kB", want);
	return 0;
}

/*
 * A clean end of the stream (endpos, a stop): the last status update with
 * what is durable, then CopyDone, waited for like pg_recvlogical's.
 */
static void
finish_stream(RpRun *run, const RpCheckpoint *durable)
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
static int
stop_stream(RpRun *run)
{
	rp_pipe_abandon(&run->pipe, wait_tick, run);
	finish_stream(run, &run->pipe.durable);
	if (run->pipe.failed && run->pipe.halt != RP_HALT_NONE)
		return rp_fail(run->pipe.halt, "%s", run->pipe.error);
	if (run->pipe.failed)
		fprintf(stderr, "%s: %s; stopping (what was not acknowledged comes again on the next run)\n",
				progname, run->pipe.error);
	return 0;
}

static int
stream_once(RpRun *run, bool have_ck)
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
		/* the first connection binds a new checkpoint to this source */
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
	pg_log_info(cli, "streaming from slot \"%s\"", cli->slot);

	for (;;)
	{
		RpMsg		msg;
		bool		done = false;
		int			wait_ms = cli->status_interval_ms;

		if (rp_stop_requested())
			return stop_stream(run);
		if (reopen_requested)
		{
			/* the sink belongs to the delivery thread: it reopens between units */
			reopen_requested = 0;
			rp_pipe_reopen(&run->pipe);
		}
		if (send_feedback(run, false, false) < 0)
			return -1;
		show_progress(run);
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
				if (rc < 0 || deliver_ready(run, &done) < 0)
					return -1;
				break;
			case RP_MSG_KEEPALIVE:
				rp_conn_release(&msg);
				/* idle: nothing assembled, buffered, spilled or batched */
				if (!rp_asm_busy(&run->asm_) && rp_pipe_idle(&run->pipe))
				{
					int64_t		now = rp_now_us();

					/*
					 * A sink that records an idle position pays a write for it:
					 * once per status interval, or when the server asks (it
					 * does when it waits for us, e.g. to shut down).
					 */
					if (msg.reply_requested ||
						now - run->last_advance_us >= (int64_t) cli->status_interval_ms * 1000)
					{
						rp_pipe_advance(&run->pipe, msg.lsn);
						run->last_advance_us = now;
					}
					if (cli->endpos && msg.lsn >= cli->endpos)
						done = true;
				}
				if (msg.reply_requested && send_feedback(run, true, false) < 0)
					return -1;
				break;
			case RP_MSG_END:
				return rp_fail(RP_HALT_NONE, "the server ended the replication stream");
		}
		if (done)
		{
			RpCheckpoint durable;

			rc = rp_pipe_drain(&run->pipe, wait_tick, run);
			if (rc < 0)
				return -1;
			if (rc > 0)
				return stop_stream(run);
			if (rp_pipe_durable(&run->pipe, &durable) < 0)
				return -1;
			finish_stream(run, &durable);
			return 0;
		}
	}
}

static void
disconnect(RpRun *run)
{
	if (run->connected)
		rp_conn_close(&run->conn);
	run->connected = false;
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
		return rp_sink_pg_open(&cli->pg, env);
	}
	rp_fail(RP_HALT_CONFIG, "unknown sink \"%s\" (expected stdout, file:PATH, exec:COMMAND, postgresql://... or postgres:CONNINFO)",
			cli->sink);
	return NULL;
}

/* The plugin option's value, or NULL. */
static const char *
plugin_option(const RpCli *cli, const char *name)
{
	for (int i = 0; i < cli->noptions; i++)
		if (strcmp(cli->options[i * 2], name) == 0)
			return cli->options[i * 2 + 1] ? cli->options[i * 2 + 1] : "";
	return NULL;
}

/*
 * --snapshot: copy (or finish copying) the selected tables before the
 * stream starts; the sink's checkpoint is then the consistent point.  A
 * sink that already holds a checkpoint has its snapshot: nothing to do.
 */
static int
run_snapshot(RpCli *cli, RpSink *sink, const char *ckpt_path, RpSnapStats *stats)
{
	RpSnapOptions so;
	RpCheckpoint ck;
	int			rc;

	if (!sink->owns_checkpoint)
	{
		rc = rp_ckpt_read(ckpt_path, &ck);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	memset(&so, 0, sizeof(so));
	so.conninfo = cli->dbname;
	so.slot = cli->slot;
	so.progname = progname;
	so.select.include = plugin_option(cli, "include_tables");
	so.select.exclude = plugin_option(cli, "exclude_tables");
	so.workers = cli->snapshot_workers;
	so.chunk_rows = cli->snapshot_chunk_rows;
	so.chunk_bytes = (uint64_t) 64 << 20;
	so.create_slot = cli->create_slot;
	so.progress = true;			/* shown when stderr is a terminal */
	so.verbose = cli->verbose;
	so.stats = stats;
	rc = rp_snapshot_run(&so, sink, &ck);
	if (rc < 0)
		return -1;
	if (rc > 0)
	{
		char		lsn[24];

		rp_lsn_format(ck.end_lsn, lsn);
		pg_log_info(cli, "snapshot complete: %" PRIu64 " rows; streaming from %s", stats->rows, lsn);
		if (!sink->owns_checkpoint && rp_ckpt_write(ckpt_path, &ck) < 0)
			return -1;
	}
	return 0;
}

static int
run_stream(RpCli *cli)
{
	RpRun		run;
	RpSinkEnv	env;
	RpCheckpoint ck;
	int			have_ck;
	char		path[4096],
				view[4096];
	int			backoff = 1;
	uint64_t	progress_lsn;
	int			rc;

	memset(&run, 0, sizeof(run));
	memset(&ck, 0, sizeof(ck));
	run.cli = cli;
	{
		/* the log sinks' snapshot envelope: oversize rows go to the dead-letter file */
		static char dlq[4096];

		if (cli->dlq_file == NULL)
		{
			snprintf(dlq, sizeof(dlq), "%s/%s.dead-letter", cli->state_dir, cli->slot);
			cli->dlq_file = dlq;
		}
	}
	/* what the sink is given (rp_sink.h): it keeps its own copy */
	rp_sink_env_init(&env);
	env.max_record_bytes = (size_t) cli->max_record_bytes;
	env.max_dlq_bytes = (size_t) cli->max_dlq_bytes;
	env.dlq_path = cli->dlq_file;
	env.oversize_count = &run.snap_stats.oversize;
	env.backfill = cli->backfill_run;
	if (cli->agg)
		rp_agg_batch_hook(cli->agg, cli->agg_only, &env.batch_hook);

	/*
	 * One consumer per state dir and spill dir (rp_lock.h): a second one
	 * refuses before it opens the sink or touches a file.
	 */
	if (cli->spill_dir == NULL)
	{
		static char spill[4096];

		snprintf(spill, sizeof(spill), "%s/spill", cli->state_dir);
		cli->spill_dir = spill;
	}
	if (rp_lock_dir(cli->state_dir, "state directory") < 0 || rp_lock_spill_dir(cli->spill_dir) < 0)
	{
		pg_log_error("%s", rp_error());
		return RP_EXIT_ERROR;
	}

	/* a destination that is down at start is waited for, like a lost one */
	while ((run.sink = open_sink(cli, &env)) == NULL)
	{
		if (rp_error_halt() == RP_HALT_CONFIG || rp_error_halt() == RP_HALT_IN_USE)
		{
			pg_log_error("%s", rp_error());
			return rp_error_halt() == RP_HALT_CONFIG ? RP_EXIT_USAGE : RP_EXIT_ERROR;
		}
		if (rp_error_halt() != RP_HALT_NONE || cli->no_loop || rp_stop_requested())
		{
			pg_log_error("%s", rp_error());
			return rp_error_halt() != RP_HALT_NONE ? RP_EXIT_HALT : RP_EXIT_ERROR;
		}
		pg_log_error("%s; retrying in %d s", rp_error(), backoff);
		if (!rp_pause_ms(backoff * 1000))
			return RP_EXIT_OK;
		backoff = backoff * 2 > RP_BACKOFF_MAX_S ? RP_BACKOFF_MAX_S : backoff * 2;
	}
	backoff = 1;

	snprintf(path, sizeof(path), "%s/%s.checkpoint", cli->state_dir, cli->slot);
	snprintf(view, sizeof(view), "%s/%s.relations", cli->state_dir, cli->slot);
	if (cli->snapshot && run_snapshot(cli, run.sink, path, &run.snap_stats) < 0)
	{
		/* a stop: what was stored is where the next run resumes (exit 0) */
		if (rp_stop_requested() && rp_error_halt() == RP_HALT_NONE)
		{
			fprintf(stderr, "%s: %s\n", progname, rp_error());
			run.sink->close(run.sink);
			return RP_EXIT_OK;
		}
		goto fail;
	}
	if (run.sink->owns_checkpoint)
		have_ck = run.sink->checkpoint(run.sink, &ck);
	else
		have_ck = rp_ckpt_read(path, &ck);
	if (have_ck < 0)
		goto fail;
	if (rp_spill_init(&run.spill, cli->spill_dir, cli->max_memory, cli->max_spill) < 0)
		goto fail;
	run.sink->spill = &run.spill;	/* the mirror's effect map charges it too */
	rp_asm_init(&run.asm_, &run.spill, have_ck ? ck.commit_lsn : 0);
	/*
	 * A sink that can apply a streamed transaction before its commit gets its
	 * blocks; not with aggregate bindings, whose fold pass runs per batch.
	 */
	run.asm_.early = run.sink->handle_chunk != NULL && !cli->no_early_apply && cli->agg == NULL;
	if (rp_deliver_init(&run.dl, run.sink, &ck, run.sink->owns_checkpoint ? NULL : path, view,
						&cli->limits) < 0)
		goto fail;
	rp_deliver_count_into(&run.dl, &run.counters);
	/* no idle_hook: the receiving thread itself answers the server while the sink works */
	run.metrics.agg_stats = cli->agg ? &cli->agg->stats : NULL;
	run.metrics.snap_stats = &run.snap_stats;
	if (rp_metrics_start(&run.metrics, cli->metrics_port, &run.counters, &run.asm_, &run.spill) < 0)
		goto fail;
	if (cli->nbackfill > 0)
	{
		/* ---- backfill (rp_backfill.h): copies while the stream runs ---- */
		RpBackfillOptions bo;

		memset(&bo, 0, sizeof(bo));
		bo.conninfo = cli->dbname;
		bo.progname = progname;
		bo.tables = cli->backfill;
		bo.ntables = cli->nbackfill;
		bo.include = plugin_option(cli, "include_tables");
		bo.exclude = plugin_option(cli, "exclude_tables");
		bo.chunk_rows = cli->backfill_chunk_rows;
		bo.progress = rp_pg_backfill_progress;
		bo.progress_arg = run.sink;
		bo.verbose = cli->verbose > 0;
		if (rp_backfill_start(cli->backfill_run, &bo) < 0)
			goto fail;
	}

	progress_lsn = ck.end_lsn;
	for (;;)
	{
		char		why[1024];
		bool		lost_sink;
		RpCheckpoint durable;

		rc = stream_once(&run, have_ck > 0);
		if (rc == 0)
			break;
		RP_COUNT_ADD(run.metrics.halts[rp_error_halt()], 1);
		/* a stop that met connection trouble is still a stop */
		if (rp_stop_requested() && rp_error_halt() == RP_HALT_NONE)
			break;
		/* fail-closed halts and --no-loop end the run; connection trouble retries */
		if (rp_error_halt() != RP_HALT_NONE || cli->no_loop)
			goto fail;
		snprintf(why, sizeof(why), "%s", rp_error());
		disconnect(&run);
		/*
		 * The server sends again from the durable position; what was already
		 * handed to the delivery thread is skipped as a duplicate.
		 */
		lost_sink = rp_pipe_durable(&run.pipe, &durable) < 0;
		if (lost_sink)
		{
			/*
			 * The delivery thread lost its sink (a destination restart):
			 * start delivery over from what is durable.  The relation view
			 * is reloaded too, so a schema change rolled back with the
			 * failed batch is seen (and applied, or halted on) again.
			 */
			rp_error_clear();
			durable = run.pipe.durable;
			rp_pipe_stop(&run.pipe);
			rp_deliver_free(&run.dl);
			if (rp_deliver_init(&run.dl, run.sink, &durable,
								run.sink->owns_checkpoint ? NULL : path, view, &cli->limits) < 0)
				goto fail;
			/* counting goes on where it was: the metrics never go backwards */
			rp_deliver_count_into(&run.dl, &run.counters);
			if (rp_pipe_start(&run.pipe, &run.dl, 2 * cli->limits.max_bytes) < 0)
				goto fail;
			run.asm_.watermark = durable.commit_lsn;
		}
		else
			run.asm_.watermark = durable.commit_lsn > run.pipe.last_pushed_commit
				? durable.commit_lsn : run.pipe.last_pushed_commit;

		/*
		 * The backoff starts over after progress (the durable position
		 * moved), or after a source connection that got to stream; a sink
		 * that fails again and again (the source streams fine each time)
		 * is retried ever less often, up to RP_BACKOFF_MAX_S.
		 */
		if (durable.end_lsn > progress_lsn || (run.streamed && !lost_sink))
			backoff = 1;
		if (durable.end_lsn > progress_lsn)
			progress_lsn = durable.end_lsn;
		run.streamed = false;
		pg_log_error("%s; reconnecting in %d s", why, backoff);
		if (!rp_pause_ms(backoff * 1000))
			break;
		backoff = backoff * 2 > RP_BACKOFF_MAX_S ? RP_BACKOFF_MAX_S : backoff * 2;
		/*
		 * Once a connection has bound the checkpoint to the source (the
		 * delivery thread runs), later ones check against it; before that
		 * there is still no checkpoint to check.
		 */
		if (run.pipe.started)
			have_ck = 1;
	}
	disconnect(&run);
	if (rp_stop_requested())
		rp_pipe_abandon(&run.pipe, NULL, NULL);
	rp_pipe_stop(&run.pipe);
	rp_backfill_stop(cli->backfill_run);	/* after the delivery thread: it may hold a chunk */
	rp_metrics_stop(&run.metrics);
	pg_log_info(cli, "delivered %" PRIu64 " transactions in %" PRIu64 " batches; %" PRIu64
				" streamed transactions applied early (%" PRIu64 " blocks, %" PRIu64 " dropped)",
				run.counters.txns, run.counters.batches, run.counters.early_commits,
				run.counters.early_chunks, run.counters.early_drops);
	rp_deliver_free(&run.dl);
	rp_asm_free(&run.asm_);
	run.sink->close(run.sink);
	return RP_EXIT_OK;

fail:
	rc = rp_error_halt() != RP_HALT_NONE && rp_error_halt() != RP_HALT_CONFIG &&
		rp_error_halt() != RP_HALT_IN_USE ? RP_EXIT_HALT : RP_EXIT_ERROR;
	pg_log_error("%s", rp_error());
	if (rc == RP_EXIT_HALT)
		fprintf(stderr, "%s: halted (%s); nothing past the last durable checkpoint was acknowledged\n",
				progname, rp_halt_name(rp_error_halt()));
	disconnect(&run);
	if (rp_stop_requested())
		rp_pipe_abandon(&run.pipe, NULL, NULL);
	rp_pipe_stop(&run.pipe);
	rp_backfill_stop(cli->backfill_run);
	rp_metrics_stop(&run.metrics);
	/* every exit path closes its sink: the exec child reaped, the destination session ended */
	run.sink->close(run.sink);
	/* spill files are private garbage now */
	if (run.spill.dir)
	{
		RpSpill		again;

		rp_spill_init(&again, run.spill.dir, 0, 0);
	}
	return rc;
}

static int
run_slot_action(RpCli *cli)
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
		pg_log_info(cli, "dropping replication slot \"%s\"", cli->slot);
		rc = rp_conn_drop_slot(&conn, cli->slot);
	}
	if (rc == 0 && cli->create_slot)
	{
		pg_log_info(cli, "creating replication slot \"%s\"", cli->slot);
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

int
main(int argc, char **argv)
{
	/* subcommands that need no server (rp_verify.h) */
	if (argc > 1 && strcmp(argv[1], "verify-snapshot") == 0)
		return rp_verify_snapshot_main(argc - 1, argv + 1);

	static struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"slot", required_argument, NULL, 'S'},
		{"option", required_argument, NULL, 'o'},
		{"startpos", required_argument, NULL, 'I'},
		{"endpos", required_argument, NULL, 'E'},
		{"status-interval", required_argument, NULL, 's'},
		{"no-loop", no_argument, NULL, 'n'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, '?'},
		{"create-slot", no_argument, NULL, 1},
		{"drop-slot", no_argument, NULL, 2},
		{"start", no_argument, NULL, 3},
		{"if-not-exists", no_argument, NULL, 4},
		{"sink", required_argument, NULL, 5},
		{"max-memory", required_argument, NULL, 6},
		{"max-spill", required_argument, NULL, 7},
		{"spill-dir", required_argument, NULL, 8},
		{"state-dir", required_argument, NULL, 9},
		{"batch-txns", required_argument, NULL, 10},
		{"batch-bytes", required_argument, NULL, 11},
		{"batch-ms", required_argument, NULL, 12},
		{"progress", no_argument, NULL, 13},
		{"metrics-port", required_argument, NULL, 14},
		{"create-tables", no_argument, NULL, 15},
		{"on-destructive", required_argument, NULL, 16},
		{"schema-prefix", required_argument, NULL, 17},
		{"bookkeeping-schema", required_argument, NULL, 70},
		{"on-divergence", required_argument, NULL, 71},
		{"history", required_argument, NULL, 18},
		{"message-route", required_argument, NULL, 19},
		{"message-ignore", required_argument, NULL, 20},
		{"no-early-apply", no_argument, NULL, 41},
		{"decoding-work-mem", required_argument, NULL, 42},
		{"aggregate", required_argument, NULL, 31},
		{"aggregates", required_argument, NULL, 32},
		{"aggregates-only", no_argument, NULL, 33},
		{"snapshot", no_argument, NULL, 21},
		{"snapshot-workers", required_argument, NULL, 22},
		{"snapshot-chunk-rows", required_argument, NULL, 23},
		{"max-record-bytes", required_argument, NULL, 24},
		{"max-dlq-bytes", required_argument, NULL, 25},
		{"dead-letter-file", required_argument, NULL, 26},
		{"backfill", required_argument, NULL, 27},
		{"backfill-chunk-rows", required_argument, NULL, 28},
		{"exec-ack-timeout", required_argument, NULL, 29},
		{NULL, 0, NULL, 0}
	};
	RpCli		cli;
	int			c;
	int			secs;
	uint64_t	size;

	memset(&cli, 0, sizeof(cli));
	cli.status_interval_ms = 10000;
	cli.sink = "stdout";
	cli.max_memory = (size_t) 256 << 20;
	cli.max_spill = (uint64_t) 64 << 30;
	cli.state_dir = "replicant-state";
	cli.limits.max_txns = 1000;
	cli.limits.max_bytes = (uint64_t) 64 << 20;
	cli.limits.max_ms = 200;
	/* a subscription syncs two tables at a time by default too */
	cli.snapshot_workers = 2;
	cli.snapshot_chunk_rows = 100000;
	cli.max_dlq_bytes = 64 * 1024;
	cli.backfill_chunk_rows = 10000;
	cli.exec_ack_timeout_s = RP_EXEC_ACK_TIMEOUT_DEFAULT;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		usage();
		return RP_EXIT_OK;
	}
	while ((c = getopt_long(argc, argv, "d:S:o:I:E:s:nvV?", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				cli.dbname = optarg;
				break;
			case 'S':
				cli.slot = optarg;
				break;
			case 'o':
				if ((strcspn(optarg, "=") == 6 && strncmp(optarg, "format", 6) == 0) ||
					(strcspn(optarg, "=") == 13 && strncmp(optarg, "proto_version", 13) == 0))
				{
					pg_log_error("plugin option \"%s\" is set by %s itself", optarg, progname);
					return RP_EXIT_USAGE;
				}
				add_option(&cli, optarg);
				break;
			case 'I':
				if (!rp_lsn_parse(optarg, &cli.startpos))
				{
					pg_log_error("could not parse start position \"%s\"", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 'E':
				if (!rp_lsn_parse(optarg, &cli.endpos))
				{
					pg_log_error("could not parse end position \"%s\"", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 's':
				if (!rp_parse_int(optarg, 0, INT32_MAX / 1000, &secs))
					return bad_value("status-interval", optarg, NULL);
				cli.status_interval_ms = secs * 1000;
				break;
			case 'n':
				cli.no_loop = true;
				break;
			case 'v':
				cli.verbose++;
				break;
			case 'V':
				printf("%s (replicant) %s, wire protocol %d\n", progname, RP_VERSION, RP_PROTO_VERSION);
				return RP_EXIT_OK;
			case 1:
				cli.create_slot = true;
				break;
			case 2:
				cli.drop_slot = true;
				break;
			case 3:
				cli.start = true;
				break;
			case 4:
				cli.if_not_exists = true;
				break;
			case 5:
				cli.sink = optarg;
				break;
			case 6:
			case 7:
			case 11:
				if (!rp_parse_size(optarg, 1, c == 11 ? RP_BATCH_BYTES_MAX : RP_SIZE_MAX, &size))
					return bad_value(c == 6 ? "max-memory" : c == 7 ? "max-spill" : "batch-bytes", optarg,
									 c == 11 ? "1 byte to 1GB" : NULL);
				if (c == 6)
					cli.max_memory = (size_t) size;
				else if (c == 7)
					cli.max_spill = size;
				else
					cli.limits.max_bytes = size;
				break;
			case 8:
				cli.spill_dir = optarg;
				break;
			case 9:
				cli.state_dir = optarg;
				break;
			case 10:
				if (!rp_parse_int(optarg, 1, 1000000, &cli.limits.max_txns))
					return bad_value("batch-txns", optarg, "1 to 1000000");
				break;
			case 12:
				if (!rp_parse_int(optarg, 0, 3600000, &cli.limits.max_ms))
					return bad_value("batch-ms", optarg, "0 to 3600000");
				break;
			case 13:
				cli.progress = true;
				break;
			case 14:
				if (!rp_parse_int(optarg, 1, 65535, &cli.metrics_port))
					return bad_value("metrics-port", optarg, "1 to 65535");
				break;
			case 15:
				cli.pg.create_tables = true;
				break;
			case 16:
				if (strcmp(optarg, "halt") == 0)
					cli.pg.on_destructive = RP_DESTRUCTIVE_HALT;
				else if (strcmp(optarg, "skip") == 0)
					cli.pg.on_destructive = RP_DESTRUCTIVE_SKIP;
				else if (strcmp(optarg, "apply") == 0)
					cli.pg.on_destructive = RP_DESTRUCTIVE_APPLY;
				else
				{
					pg_log_error("invalid value \"%s\" for --on-destructive (halt, skip or apply)", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 17:
				cli.pg.schema_prefix = optarg;
				break;
			case 70:
				if (optarg[0] == '\0' || strlen(optarg) > RP_PG_MAX_IDENT)
				{
					pg_log_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to %d bytes)",
								 optarg, RP_PG_MAX_IDENT);
					return RP_EXIT_USAGE;
				}
				cli.pg.bookkeeping_schema = optarg;
				break;
			case 71:
				if (strcmp(optarg, "halt") == 0 || strcmp(optarg, "skip") == 0)
					cli.pg.divergence_skip = strcmp(optarg, "skip") == 0;
				else
				{
					pg_log_error("invalid value \"%s\" for --on-divergence (halt or skip)", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 18:
				add_name(&cli.pg.history, &cli.pg.nhistory, optarg);
				break;
			case 19:
				add_name(&cli.pg.route_prefixes, &cli.pg.nroute, optarg);
				break;
			case 20:
				add_name(&cli.pg.ignore_prefixes, &cli.pg.nignore, optarg);
				break;
			case 41:
				cli.no_early_apply = true;
				break;
			case 42:
				if (strcmp(optarg, "server") == 0)
					cli.decoding_work_mem_kb = RP_DECODING_WORK_MEM_SERVER;
				else if (!rp_parse_size(optarg, 64 * 1024, (uint64_t) 1 << 40, &size))
					return bad_value("decoding-work-mem", optarg, "server, or 64kB to 1TB");
				else
					cli.decoding_work_mem_kb = size / 1024;
				break;
			case 31:
			case 32:
				if (cli.agg == NULL)
					cli.agg = rp_agg_new();
				if ((c == 31 ? rp_agg_add_spec(cli.agg, optarg, "--aggregate")
					 : rp_agg_add_file(cli.agg, optarg)) < 0)
				{
					pg_log_error("%s", rp_error());
					return RP_EXIT_USAGE;
				}
				break;
			case 33:
				cli.agg_only = true;
				break;
			case 21:
				cli.snapshot = true;
				break;
			case 22:
				if (!rp_parse_int(optarg, 1, 64, &cli.snapshot_workers))
					return bad_value("snapshot-workers", optarg, "1 to 64");
				break;
			case 23:
				{
					int			n;

					if (!rp_parse_int(optarg, 1, 100000000, &n))
						return bad_value("snapshot-chunk-rows", optarg, "1 to 100000000");
					cli.snapshot_chunk_rows = (uint64_t) n;
				}
				break;
			case 24:
			case 25:
				if (!rp_parse_size(optarg, 1, RP_SIZE_MAX, &size))
					return bad_value(c == 24 ? "max-record-bytes" : "max-dlq-bytes", optarg, NULL);
				if (c == 24)
					cli.max_record_bytes = size;
				else
					cli.max_dlq_bytes = size;
				break;
			case 26:
				cli.dlq_file = optarg;
				break;
			case 27:
				add_name(&cli.backfill, &cli.nbackfill, optarg);
				break;
			case 28:
				{
					int			n;

					if (!rp_parse_int(optarg, 1, 100000000, &n))
						return bad_value("backfill-chunk-rows", optarg, "1 to 100000000");
					cli.backfill_chunk_rows = (uint64_t) n;
				}
				break;
			case 29:
				if (!rp_parse_int(optarg, 0, 86400, &cli.exec_ack_timeout_s))
					return bad_value("exec-ack-timeout", optarg, "0 to 86400 seconds; 0 waits for ever");
				break;
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				return RP_EXIT_USAGE;
		}
	}
	if (optind < argc)
	{
		pg_log_error("too many command-line arguments (first is \"%s\")", argv[optind]);
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		return RP_EXIT_USAGE;
	}
	if (cli.slot == NULL)
	{
		pg_log_error("no slot specified");
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		return RP_EXIT_USAGE;
	}
	if (!cli.create_slot && !cli.drop_slot && !cli.start)
	{
		pg_log_error("at least one action needs to be specified");
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		return RP_EXIT_USAGE;
	}
	if (cli.drop_slot && (cli.create_slot || cli.start))
	{
		pg_log_error("cannot use --create-slot or --start together with --drop-slot");
		return RP_EXIT_USAGE;
	}
	if (cli.snapshot && !cli.start)
	{
		pg_log_error("--snapshot needs --start");
		return RP_EXIT_USAGE;
	}
	if (cli.nbackfill > 0)
	{
		const char *im = plugin_option(&cli, "include_messages");
		const char *mp = plugin_option(&cli, "message_prefixes");

		/* the watermarks travel in the stream: the mirror must see them */
		if (!cli.start || strncmp(cli.sink, "postgres", 8) != 0 || cli.agg_only)
		{
			pg_log_error("--backfill needs --start and the PostgreSQL sink (not --aggregates-only)");
			return RP_EXIT_USAGE;
		}
		/*
		 * Refused here, not waited on for ever: a filtered watermark never
		 * arrives.  A value the server refuses is left to it (a config error).
		 */
		if (rp_messages_pass(im, NULL, RP_BACKFILL_PREFIX) == RP_MSG_PASS_NO)
		{
			pg_log_error("--backfill needs the plugin's logical messages, but -o include_messages=%s filters them out", im);
			fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
			return RP_EXIT_USAGE;
		}
		if (rp_messages_pass(im, mp, RP_BACKFILL_PREFIX) == RP_MSG_PASS_NO)
		{
			pg_log_error("--backfill needs the plugin's logical messages with prefix \"%s\", but -o message_prefixes=%s filters them out",
						 RP_BACKFILL_PREFIX, mp);
			fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
			return RP_EXIT_USAGE;
		}
	}

	if (cli.agg_only && cli.agg == NULL)
	{
		pg_log_error("--aggregates-only needs at least one --aggregate or --aggregates");
		return RP_EXIT_USAGE;
	}
	if (cli.agg)
	{
		/* the folds live inside the mirror's destination transactions */
		if (strncmp(cli.sink, "postgres", 8) != 0)
		{
			pg_log_error("aggregate bindings need the PostgreSQL sink (--sink=postgresql://... or postgres:CONNINFO)");
			return RP_EXIT_USAGE;
		}
		rp_agg_set_source(cli.agg, cli.dbname ? cli.dbname : "");
	}
	/* the sink gets the handle when it opens; the thread starts once it runs */
	if (cli.nbackfill > 0)
		cli.backfill_run = rp_backfill_new();

	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	signal(SIGHUP, on_hup_signal);
	signal(SIGPIPE, SIG_IGN);

	/* --snapshot creates the slot itself, with an exported snapshot */
	if ((cli.create_slot && !cli.snapshot) || cli.drop_slot)
	{
		int			rc = run_slot_action(&cli);

		if (rc != RP_EXIT_OK || !cli.start)
			return rc;
	}
	{
		int			rc = run_stream(&cli);

		/* closes the aggregate edit streams and waits for their children */
		rp_agg_free(cli.agg);
		rp_backfill_free(cli.backfill_run);
		return rc;
	}
}
