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

#include "rp_asm.h"
#include "rp_backfill.h"
#include "rp_agg.h"
#include "rp_conn.h"
#include "rp_deliver.h"
#include "rp_metrics.h"
#include "rp_pg.h"
#include "rp_pg_backfill.h"
#include "rp_pipe.h"
#include "rp_snaplog.h"
#include "rp_snapshot.h"
#include "rp_status.h"
#include "rp_verify.h"
#include "rp_wire.h"

#define RP_VERSION "0.1.0"

static const char *progname = "replicant";

static volatile sig_atomic_t stop_requested = 0;
static volatile sig_atomic_t reopen_requested = 0;

/* --decoding-work-mem: "server" leaves the server's setting alone */
#define RP_DECODING_WORK_MEM_SERVER UINT64_MAX
/* the default for a sink that applies streamed transactions early (kB) */
#define RP_EARLY_DECODING_WORK_MEM_KB 16384

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
	int			nbackfill;
	uint64_t	backfill_chunk_rows;
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
	printf("      --batch-bytes=SIZE bytes per delivered batch (default: 64MB)\n");
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
	printf("\nMirror sink options:\n");
	printf("      --create-tables    create missing destination tables from the source's description\n");
	printf("      --on-destructive=halt|skip|apply\n"
		   "                         a dropped column or changed type halts (default), is ignored, or is applied\n");
	printf("      --schema-prefix=P  destination schema is P followed by the source schema\n");
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
	stop_requested = 1;
}

static void
on_hup_signal(int signo)
{
	reopen_requested = 1;
}

/* "64MB", "1GB", "512kB", "1048576" */
static bool
parse_size(const char *s, uint64_t *out)
{
	char	   *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	if (*end == '\0' || strcmp(end, "B") == 0)
		*out = v;
	else if (strcasecmp(end, "kB") == 0)
		*out = v << 10;
	else if (strcasecmp(end, "MB") == 0)
		*out = v << 20;
	else if (strcasecmp(end, "GB") == 0)
		*out = v << 30;
	else if (strcasecmp(end, "TB") == 0)
		*out = v << 40;
	else
		return false;
	return true;
}

static bool
parse_int(const char *s, int min, int max, int *out)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = (int) v;
	return true;
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
	uint64_t	end = run->pipe.durable.end_lsn;
	uint64_t	lag = run->conn.server_wal_end > end ? run->conn.server_wal_end - end : 0;

	if (!run->cli->progress || !isatty(STDERR_FILENO) || now - run->last_progress_us < 1000000)
		return;
	rp_lsn_format(end, ck);
	fprintf(stderr, "\r%s: %" PRIu64 " txns, %.0f changes/s, lag %" PRIu64 " bytes %.1f s, checkpoint %s   ",
			progname, run->dl.txns,
			run->last_progress_us ? (run->dl.changes - run->last_progress_changes) / secs : 0.0,
			lag, rp_metrics_lag_seconds(&run->metrics, lag, now), ck);
	run->last_progress_us = now;
	run->last_progress_changes = run->dl.changes;
}

/* ---- the stream ---------------------------------------------------------- */

/* Deliver everything the assembler completed; true once endpos is reached. */
static int
deliver_ready(RpRun *run, bool *done)
{
	RpItem	   *item;

	while ((item = rp_asm_pop(&run->asm_)) != NULL)
	{
		uint64_t	end = item->kind == RP_ITEM_TXN ? item->txn->end_lsn : item->kind == RP_ITEM_MESSAGE ? item->msg.lsn : 0;

		if (item->kind == RP_ITEM_TXN)
			run->metrics.last_commit_time = item->txn->commit_time;

		if (rp_pipe_push(&run->pipe, item, wait_tick, run) < 0)
			return -1;
		if (run->cli->endpos && end >= run->cli->endpos)
		{
			*done = true;
			break;
		}
	}
	if (*done || stop_requested)
		return rp_pipe_drain(&run->pipe, wait_tick, run);
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

	o[n++] = "proto_version";
	o[n++] = "1";
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
			parse_size(PQgetvalue(res, 0, 0), &have);
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

		if (stop_requested)
		{
			if (rp_pipe_drain(&run->pipe, wait_tick, run) < 0)
				return -1;
			send_feedback(run, true, false);
			return 0;
		}
		if (reopen_requested)
		{
			/* the sink belongs to the delivery thread: it reopens between units */
			reopen_requested = 0;
			rp_pipe_reopen(&run->pipe);
		}
		if (send_feedback(run, false, false) < 0)
			return -1;
		show_progress(run);
		run->metrics.server_wal_end = run->conn.server_wal_end;
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
				run->metrics.bytes += msg.len;
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
			if (rp_pipe_drain(&run->pipe, wait_tick, run) < 0)
				return -1;
			send_feedback(run, true, false);
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
open_sink(RpCli *cli)
{
	if (strcmp(cli->sink, "stdout") == 0 || strcmp(cli->sink, "-") == 0)
		return rp_sink_stdout_open();
	if (strncmp(cli->sink, "file:", 5) == 0)
		return rp_sink_file_open(cli->sink + 5);
	if (strncmp(cli->sink, "exec:", 5) == 0)
		return rp_sink_exec_open(cli->sink + 5);
	if (strncmp(cli->sink, "postgresql://", 13) == 0 || strncmp(cli->sink, "postgres://", 11) == 0 ||
		strncmp(cli->sink, "postgres:", 9) == 0)
	{
		cli->pg.conninfo = strncmp(cli->sink, "postgres:", 9) == 0 && cli->sink[9] != '/'
			? cli->sink + 9 : cli->sink;
		cli->pg.slot = cli->slot;
		return rp_sink_pg_open(&cli->pg);
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
run_snapshot(RpCli *cli, RpSink *sink, const char *ckpt_path)
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
	rc = rp_snapshot_run(&so, sink, &ck);
	if (rc < 0)
		return -1;
	if (rc > 0)
	{
		char		lsn[24];

		rp_lsn_format(ck.end_lsn, lsn);
		pg_log_info(cli, "snapshot complete: %" PRIu64 " rows; streaming from %s", rp_snap_stats.rows, lsn);
		if (!sink->owns_checkpoint && rp_ckpt_write(ckpt_path, &ck) < 0)
			return -1;
	}
	return 0;
}

static int
run_stream(RpCli *cli)
{
	RpRun		run;
	RpCheckpoint ck;
	int			have_ck;
	char		path[4096],
				view[4096];
	int			backoff = 1;
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
		rp_snaplog_configure((size_t) cli->max_record_bytes, (size_t) cli->max_dlq_bytes, cli->dlq_file);
	}

	/* a destination that is down at start is waited for, like a lost one */
	while ((run.sink = open_sink(cli)) == NULL)
	{
		if (rp_error_halt() == RP_HALT_CONFIG)
		{
			pg_log_error("%s", rp_error());
			return RP_EXIT_USAGE;
		}
		if (rp_error_halt() != RP_HALT_NONE || cli->no_loop || stop_requested)
		{
			pg_log_error("%s", rp_error());
			return rp_error_halt() != RP_HALT_NONE ? RP_EXIT_HALT : RP_EXIT_ERROR;
		}
		pg_log_error("%s; retrying in %d s", rp_error(), backoff);
		sleep((unsigned) backoff);
		backoff = backoff * 2 > 30 ? 30 : backoff * 2;
	}
	backoff = 1;

	if (mkdir(cli->state_dir, 0700) != 0 && errno != EEXIST)
	{
		pg_log_error("could not create state directory \"%s\": %s", cli->state_dir, strerror(errno));
		return RP_EXIT_ERROR;
	}
	snprintf(path, sizeof(path), "%s/%s.checkpoint", cli->state_dir, cli->slot);
	snprintf(view, sizeof(view), "%s/%s.relations", cli->state_dir, cli->slot);
	if (cli->snapshot && run_snapshot(cli, run.sink, path) < 0)
		goto fail;
	if (run.sink->owns_checkpoint)
		have_ck = run.sink->checkpoint(run.sink, &ck);
	else
		have_ck = rp_ckpt_read(path, &ck);
	if (have_ck < 0)
		goto fail;
	if (cli->spill_dir == NULL)
	{
		static char spill[4096];

		snprintf(spill, sizeof(spill), "%s/spill", cli->state_dir);
		cli->spill_dir = spill;
	}
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
	/* no idle_hook: the receiving thread itself answers the server while the sink works */
	if (rp_metrics_start(&run.metrics, cli->metrics_port, &run.dl, &run.asm_, &run.spill) < 0)
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
		if (rp_backfill_start(&bo) < 0)
			goto fail;
	}

	for (;;)
	{
		rc = stream_once(&run, have_ck > 0);
		if (rc == 0)
			break;
		run.metrics.halts[rp_error_halt()]++;
		/* fail-closed halts and --no-loop end the run; connection trouble retries */
		if (rp_error_halt() != RP_HALT_NONE || cli->no_loop || stop_requested)
			goto fail;
		/* a connection that got to stream starts the backoff over */
		if (run.streamed)
			backoff = 1;
		run.streamed = false;
		pg_log_error("%s; reconnecting in %d s", rp_error(), backoff);
		disconnect(&run);
		/*
		 * The server sends again from the durable position; what was already
		 * handed to the delivery thread is skipped as a duplicate.
		 */
		{
			RpCheckpoint durable;

			if (rp_pipe_durable(&run.pipe, &durable) < 0)
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
									run.sink->owns_checkpoint ? NULL : path, view, &cli->limits) < 0 ||
					rp_pipe_start(&run.pipe, &run.dl, 2 * cli->limits.max_bytes) < 0)
					goto fail;
				run.asm_.watermark = durable.commit_lsn;
			}
			else
				run.asm_.watermark = durable.commit_lsn > run.pipe.last_pushed_commit
					? durable.commit_lsn : run.pipe.last_pushed_commit;
		}
		sleep((unsigned) backoff);
		backoff = backoff * 2 > 30 ? 30 : backoff * 2;
		if (stop_requested)
			break;
		/*
		 * Once a connection has bound the checkpoint to the source (the
		 * delivery thread runs), later ones check against it; before that
		 * there is still no checkpoint to check.
		 */
		if (run.pipe.started)
			have_ck = 1;
	}
	disconnect(&run);
	rp_pipe_stop(&run.pipe);
	rp_backfill_stop();			/* after the delivery thread: it may hold a chunk */
	rp_metrics_stop(&run.metrics);
	pg_log_info(cli, "delivered %" PRIu64 " transactions in %" PRIu64 " batches; %" PRIu64
				" streamed transactions applied early (%" PRIu64 " blocks, %" PRIu64 " dropped)",
				run.dl.txns, run.dl.batches, run.dl.early_commits, run.dl.early_chunks, run.dl.early_drops);
	rp_deliver_free(&run.dl);
	rp_asm_free(&run.asm_);
	run.sink->close(run.sink);
	return RP_EXIT_OK;

fail:
	pg_log_error("%s", rp_error());
	if (rp_error_halt() != RP_HALT_NONE && rp_error_halt() != RP_HALT_CONFIG)
		fprintf(stderr, "%s: halted (%s); nothing past the last durable checkpoint was acknowledged\n",
				progname, rp_halt_name(rp_error_halt()));
	disconnect(&run);
	rp_pipe_stop(&run.pipe);
	rp_backfill_stop();
	rp_metrics_stop(&run.metrics);
	/* spill files are private garbage now */
	if (run.spill.dir)
	{
		RpSpill		again;

		rp_spill_init(&again, run.spill.dir, 0, 0);
	}
	return rp_error_halt() != RP_HALT_NONE && rp_error_halt() != RP_HALT_CONFIG
		? RP_EXIT_HALT : RP_EXIT_ERROR;
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
				if (!parse_int(optarg, 0, INT32_MAX / 1000, &secs))
				{
					pg_log_error("invalid status interval \"%s\"", optarg);
					return RP_EXIT_USAGE;
				}
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
				if (!parse_size(optarg, &size) || size == 0)
				{
					pg_log_error("invalid size \"%s\" for --%s", optarg,
								 c == 6 ? "max-memory" : c == 7 ? "max-spill" : "batch-bytes");
					return RP_EXIT_USAGE;
				}
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
				if (!parse_int(optarg, 1, 1000000, &cli.limits.max_txns))
				{
					pg_log_error("invalid value \"%s\" for --batch-txns", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 12:
				if (!parse_int(optarg, 0, 3600000, &cli.limits.max_ms))
				{
					pg_log_error("invalid value \"%s\" for --batch-ms", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 13:
				cli.progress = true;
				break;
			case 14:
				if (!parse_int(optarg, 1, 65535, &cli.metrics_port))
				{
					pg_log_error("invalid port \"%s\" for --metrics-port", optarg);
					return RP_EXIT_USAGE;
				}
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
				else if (!parse_size(optarg, &size) || size < 64 * 1024 || size > ((uint64_t) 1 << 40))
				{
					pg_log_error("invalid --decoding-work-mem \"%s\" (server, or 64kB to 1TB)", optarg);
					return RP_EXIT_USAGE;
				}
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
				if (!parse_int(optarg, 1, 64, &cli.snapshot_workers))
				{
					pg_log_error("invalid value \"%s\" for --snapshot-workers (1 to 64)", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 23:
				{
					int			n;

					if (!parse_int(optarg, 1, 100000000, &n))
					{
						pg_log_error("invalid value \"%s\" for --snapshot-chunk-rows", optarg);
						return RP_EXIT_USAGE;
					}
					cli.snapshot_chunk_rows = (uint64_t) n;
				}
				break;
			case 24:
			case 25:
				if (!parse_size(optarg, &size) || size == 0)
				{
					pg_log_error("invalid size \"%s\" for --%s", optarg,
								 c == 24 ? "max-record-bytes" : "max-dlq-bytes");
					return RP_EXIT_USAGE;
				}
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

					if (!parse_int(optarg, 1, 100000000, &n))
					{
						pg_log_error("invalid value \"%s\" for --backfill-chunk-rows", optarg);
						return RP_EXIT_USAGE;
					}
					cli.backfill_chunk_rows = (uint64_t) n;
				}
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

		/* the watermarks travel in the stream: the mirror must see them */
		if (!cli.start || strncmp(cli.sink, "postgres", 8) != 0 || cli.agg_only)
		{
			pg_log_error("--backfill needs --start and the PostgreSQL sink (not --aggregates-only)");
			return RP_EXIT_USAGE;
		}
		if (im && (strcmp(im, "false") == 0 || strcmp(im, "off") == 0 || strcmp(im, "0") == 0))
		{
			pg_log_error("--backfill needs the plugin's logical messages (include_messages)");
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
		rp_agg_attach(cli.agg, cli.agg_only);
	}

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
		return rc;
	}
}
