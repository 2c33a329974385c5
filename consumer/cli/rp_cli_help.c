/*
 * rp_cli_help.c
 *    --help: the options by group, in the order of the option table
 *    (rp_cli_options.c), as pg_recvlogical prints its own.
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"

static const char *const progname = RP_CLI_PROGNAME;

static void
usage_general(void)
{
	printf("\nAction to be performed:\n");
	printf("      --create-slot      create a new replication slot (plugin replicant)\n");
	printf("      --drop-slot        drop the replication slot\n");
	printf("      --start            start streaming in a replication slot\n");
	printf("      --if-not-exists    do not error if the slot already exists when creating it\n");
	printf("      --alter-slot       change an existing slot: its --failover or --no-failover\n");
	printf("      --failover         with --create-slot or --alter-slot: a failover slot, synchronized to\n"
		   "                         physical standbys (PostgreSQL 17+; docs/operations.md)\n");
	printf("      --no-failover      with --alter-slot: no longer a failover slot\n");
	printf("\nOptions:\n");
	printf("  -E, --endpos=LSN|SEQ   stop at the first transaction boundary at or after LSN (with\n"
		   "                         --source: or once stream sequence SEQ is read and delivered)\n");
	printf("  -I, --startpos=LSN     where to start streaming in an existing slot\n");
	printf("  -n, --no-loop          do not reconnect when the connection is lost\n");
	printf("  -o, --option=NAME[=VALUE]\n"
		   "                         pass option NAME with optional VALUE to the plugin\n");
	printf("  -s, --status-interval=SECS\n"
		   "                         time between status updates to the server (default: 10)\n");
	printf("  -S, --slot=SLOTNAME    name of the logical replication slot (with --source: of this reader)\n");
	printf("  -v, --verbose          output verbose messages\n");
	printf("  -V, --version          output version information, then exit\n");
	printf("  -?, --help             show this help, then exit\n");
	printf("      --state-dir=DIR    checkpoint, relation view and spill files (default: ./replicant-state)\n");
	printf("      --spill-dir=DIR    spill files (default: STATE-DIR/spill)\n");
	printf("      --max-memory=SIZE  assembled transactions held in memory (default: 256MB)\n");
	printf("      --max-spill=SIZE   spilled transactions on disk before halting (default: 64GB)\n");
	printf("      --batch-txns=N     transactions per delivered batch (default: 1000)\n");
	printf("      --batch-bytes=SIZE bytes per delivered batch (default: 64MB, at most 1GB)\n");
	printf("      --batch-ms=MS      longest a batch waits to fill (default: 200)\n");
	printf("      --decoding-work-mem=SIZE|server\n"
		   "                         logical_decoding_work_mem of this session on the server: past it, a\n"
		   "                         transaction is streamed (default: 4MB when the sink applies streamed\n"
		   "                         transactions early and the server's setting is higher; else the server's)\n");
	printf("      --progress         on a terminal, the stream's status line for the whole run (by default\n"
		   "                         it shows the snapshot's and the catch-up's progress, then goes)\n");
	printf("      --no-progress      no progress display, even on a terminal\n");
	printf("      --metrics-port=PORT  serve Prometheus metrics on 127.0.0.1:PORT\n");
	printf("      --metrics-address=ADDR  serve them on this IPv4 or IPv6 address instead (0.0.0.0, ::)\n");
	printf("      --config=FILE      long options as lines NAME = VALUE (flags: NAME); # comments;\n"
		   "                         the command line's options replace the file's\n");
	printf("\nConnection options:\n");
	printf("  -d, --dbname=CONNSTR   database to connect to (a database name, conninfo string or URI)\n");
	printf("  -h, --host=HOSTNAME    database server host or socket directory\n");
	printf("  -p, --port=PORT        database server port number\n");
	printf("  -U, --username=NAME    connect as specified database user\n");
	printf("  -w, --no-password      never prompt for password (the default)\n");
	printf("  -W, --password         prompt for a password before connecting (stdin without a terminal)\n");
	printf("  (-h, -p, -U override what -d says; the PG* environment variables apply as in libpq)\n");
	printf("\nStream source options (instead of a slot: a stream the NATS sink wrote):\n");
	printf("      --source=nats://[USER:PASS@]HOST:PORT[,HOST:PORT...] or tls://...\n"
		   "                         read --nats-stream into --sink (no -d: only --aggregate's seed uses it)\n");
	printf("      --nats-subjects=FILTER  only data on subjects matching FILTER reaches the sink\n"
		   "                         (the reader still reads and checks the whole stream)\n");
	printf("      --nats-from-current-start  without a checkpoint, read a stream whose beginning is\n"
		   "                         gone, or that the stream registry does not know, from its\n"
		   "                         first whole transaction (what it lost is lost to the sink)\n");
	printf("  (--nats-stream names the stream; --nats-creds, --nats-tls-* apply to it)\n");
}

static void
usage_sinks(void)
{
	printf("\nSink options:\n");
	printf("      --sink=SINK        stdout (or -), file:PATH, exec:COMMAND, postgresql://URI or\n"
		   "                         postgres:CONNINFO (a mirror), nats://... (JetStream; default: stdout)\n");
	printf("      --exec-ack-timeout=SECS  exec sink: halt when the child neither reads nor acknowledges\n"
		   "                         for SECS (default: %d; 0: wait for ever)\n", RP_EXEC_ACK_TIMEOUT_DEFAULT);
	printf("      --max-record-bytes=SIZE  log sinks: a snapshot row larger than this becomes an\n"
		   "                         oversize stub (default: no limit)\n");
	printf("      --max-dlq-bytes=SIZE how much of an oversize row the dead-letter file keeps (default: 64kB)\n");
	printf("      --dead-letter-file=PATH  oversize rows (default: STATE-DIR/SLOT.dead-letter;\n"
		   "                         none: dropped, counted and warned of)\n");
	printf("\nNATS JetStream sink options (--sink nats://[USER:PASS@]HOST:PORT[,HOST:PORT...] or tls://...):\n");
	printf("      --nats-stream=NAME the stream (default: REPLICANT_<slot>)\n");
	printf("      --nats-subject-prefix=P  subjects P.<schema>.<table> and P._control (default: replicant.<slot>)\n");
	printf("      --nats-replicas=N  replicas when the stream is created (default: %d)\n", RP_NATS_DEFAULT_REPLICAS);
	printf("      --nats-max-bytes=SIZE  max bytes when the stream is created, discard new (default: unlimited)\n");
	printf("      --nats-duplicate-window=SECS  duplicate window when the stream is created (default: the server's)\n");
	printf("      --nats-window=N    most publishes in flight (default: %d; 32MB at most between them)\n", RP_NATS_DEFAULT_WINDOW);
	printf("      --nats-ack-timeout=SECS  longest wait for one publish's ack (default: 5)\n");
	printf("      --nats-creds=FILE, --nats-tls-ca=FILE, --nats-tls-cert=FILE, --nats-tls-key=FILE\n"
		   "                         credentials and TLS (user and password also from NATS_USER, NATS_PASSWORD)\n");
	printf("\nMirror sink options:\n");
	printf("      --create-tables    create missing destination tables from the source's description\n");
	printf("      --on-destructive=halt|skip|apply\n"
		   "                         a dropped column or changed type halts (default), is ignored, or is applied\n");
	printf("      --schema-prefix=P  destination schema is P followed by the source schema\n");
	printf("      --bookkeeping-schema=NAME  the mirror's own tables (checkpoint, messages, progress);\n"
		   "                         no source table may map into it (default: replicant)\n");
	printf("      --on-divergence=halt|skip  an update or delete of a REPLICA IDENTITY FULL table that\n"
		   "                         matches no destination row halts (default) or is counted and skipped\n");
	printf("      --pipeline-max=N   a table with at most N net effects in a batch is applied by\n"
		   "                         prepared statements in one pipeline, more through staging\n"
		   "                         tables (default: 16; 0: always staging)\n");
	printf("      --session-replication-role=replica|origin|local  the destination sessions' role:\n"
		   "                         replica (default) fires no foreign key or ordinary trigger on\n"
		   "                         replicated rows, as PostgreSQL's apply worker; needs superuser or\n"
		   "                         GRANT SET ON PARAMETER session_replication_role (15+)\n");
	printf("      --history=TABLE    keep TABLE's versions (valid_from/valid_to) instead of its state\n");
	printf("      --message-route=PREFIX   store logical messages with PREFIX in replicant.messages\n");
	printf("      --message-ignore=PREFIX  acknowledge logical messages with PREFIX, no effect\n");
	printf("      --no-early-apply   apply a large streamed transaction only at its commit, not block by block\n"
		   "                         (always so with aggregate bindings)\n");
}

static void
usage_copies(void)
{
	printf("\nSnapshot and backfill options:\n");
	printf("      --snapshot         with --create-slot --start: copy the selected tables under the\n"
		   "                         slot's exported snapshot first, then stream (resumes a stopped copy)\n");
	printf("      --snapshot-workers=N parallel copy sessions of --snapshot (default: 2)\n");
	printf("      --snapshot-chunk-rows=N rows per snapshot chunk (default: 100000)\n");
	printf("      --backfill=SCHEMA.TABLE  with --start and the mirror: copy the table while the stream runs\n"
		   "                         (a table added to include_tables later; repeatable; resumes; docs/operations.md)\n");
	printf("      --backfill-chunk-rows=N  rows per backfill chunk (default: 10000)\n");
	printf("\nLive aggregates (with the mirror sink; see docs/aggregates.md):\n");
	printf("      --aggregate=SPEC   keep a binding: 'name=N source=SCHEMA.TABLE dims=C1,C2 measure=M\n"
		   "                         agg=none|sum|avg|min|max|count|count_distinct\n"
		   "                         output=table:SCHEMA.TABLE|stdout|file:PATH|exec:COMMAND' (repeatable)\n");
	printf("      --aggregates=FILE  bindings, one SPEC a line\n");
	printf("      --aggregates-only  mirror no table: the destination holds aggregate outputs and the checkpoint\n");
}

void
rp_cli_usage(void)
{
	printf("%s receives a replicant logical decoding stream and applies it to a sink.\n\n", progname);
	printf("Usage:\n  %s [OPTION]...\n", progname);
	/* the commands, from the table main dispatches from */
	for (const RpCliCommand *c = rp_cli_commands; c->name; c++)
		printf("  %s %s %s   (%s)\n", progname, c->name, c->synopsis, c->summary);
	usage_general();
	usage_sinks();
	usage_copies();
	printf("\nExit status: 0 done, 1 error, 2 usage, 3 fail-closed halt (see docs/operations.md).\n");
}

int
rp_cli_sub_usage_error(const char *prog, const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry \"%s --help\" for more information.\n", prog);
	return RP_EXIT_USAGE;
}
