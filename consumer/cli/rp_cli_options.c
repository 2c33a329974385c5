/*
 * rp_cli_options.c
 *    The command line, parsed into an RpCli (rp_cli.h): the option table,
 *    --help, and the checks that the options go together.  Nothing here
 *    connects anywhere or touches a file but --aggregates' own.
 */
#include "rp_alloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backfill/rp_bfmsg.h"
#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cliparse.h"
#include "stream/rp_ckpt.h"
#include "rp_wire.h"

static const char *const progname = RP_CLI_PROGNAME;

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

/* The plugin option's value, or NULL. */
const char *
rp_cli_plugin_option(const RpCli *cli, const char *name)
{
	for (int i = 0; i < cli->noptions; i++)
		if (strcmp(cli->options[i * 2], name) == 0)
			return cli->options[i * 2 + 1] ? cli->options[i * 2 + 1] : "";
	return NULL;
}

int
rp_cli_parse(RpCli *cli, int argc, char **argv)
{
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
	int			c;
	int			secs;
	uint64_t	size;

	memset(cli, 0, sizeof(*cli));
	cli->status_interval_ms = 10000;
	cli->sink = "stdout";
	cli->max_memory = (size_t) 256 << 20;
	cli->max_spill = (uint64_t) 64 << 30;
	cli->state_dir = "replicant-state";
	cli->limits.max_txns = 1000;
	cli->limits.max_bytes = (uint64_t) 64 << 20;
	cli->limits.max_ms = 200;
	/* a subscription syncs two tables at a time by default too */
	cli->snapshot_workers = 2;
	cli->snapshot_chunk_rows = 100000;
	cli->max_dlq_bytes = 64 * 1024;
	cli->backfill_chunk_rows = 10000;
	cli->exec_ack_timeout_s = RP_EXEC_ACK_TIMEOUT_DEFAULT;

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
				cli->dbname = optarg;
				break;
			case 'S':
				cli->slot = optarg;
				break;
			case 'o':
				if ((strcspn(optarg, "=") == 6 && strncmp(optarg, "format", 6) == 0) ||
					(strcspn(optarg, "=") == 13 && strncmp(optarg, "proto_version", 13) == 0))
				{
					pg_log_error("plugin option \"%s\" is set by %s itself", optarg, progname);
					return RP_EXIT_USAGE;
				}
				add_option(cli, optarg);
				break;
			case 'I':
				if (!rp_lsn_parse(optarg, &cli->startpos))
				{
					pg_log_error("could not parse start position \"%s\"", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 'E':
				if (!rp_lsn_parse(optarg, &cli->endpos))
				{
					pg_log_error("could not parse end position \"%s\"", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 's':
				if (!rp_parse_int(optarg, 0, INT32_MAX / 1000, &secs))
					return bad_value("status-interval", optarg, NULL);
				cli->status_interval_ms = secs * 1000;
				break;
			case 'n':
				cli->no_loop = true;
				break;
			case 'v':
				cli->verbose++;
				break;
			case 'V':
				printf("%s (replicant) %s, wire protocol %d\n", progname, RP_VERSION, RP_PROTO_VERSION);
				return RP_EXIT_OK;
			case 1:
				cli->create_slot = true;
				break;
			case 2:
				cli->drop_slot = true;
				break;
			case 3:
				cli->start = true;
				break;
			case 4:
				cli->if_not_exists = true;
				break;
			case 5:
				cli->sink = optarg;
				break;
			case 6:
			case 7:
			case 11:
				if (!rp_parse_size(optarg, 1, c == 11 ? RP_BATCH_BYTES_MAX : RP_SIZE_MAX, &size))
					return bad_value(c == 6 ? "max-memory" : c == 7 ? "max-spill" : "batch-bytes", optarg,
									 c == 11 ? "1 byte to 1GB" : NULL);
				if (c == 6)
					cli->max_memory = (size_t) size;
				else if (c == 7)
					cli->max_spill = size;
				else
					cli->limits.max_bytes = size;
				break;
			case 8:
				cli->spill_dir = optarg;
				break;
			case 9:
				cli->state_dir = optarg;
				break;
			case 10:
				if (!rp_parse_int(optarg, 1, 1000000, &cli->limits.max_txns))
					return bad_value("batch-txns", optarg, "1 to 1000000");
				break;
			case 12:
				if (!rp_parse_int(optarg, 0, 3600000, &cli->limits.max_ms))
					return bad_value("batch-ms", optarg, "0 to 3600000");
				break;
			case 13:
				cli->progress = true;
				break;
			case 14:
				if (!rp_parse_int(optarg, 1, 65535, &cli->metrics_port))
					return bad_value("metrics-port", optarg, "1 to 65535");
				break;
			case 15:
				cli->pg.create_tables = true;
				break;
			case 16:
				if (strcmp(optarg, "halt") == 0)
					cli->pg.on_destructive = RP_DESTRUCTIVE_HALT;
				else if (strcmp(optarg, "skip") == 0)
					cli->pg.on_destructive = RP_DESTRUCTIVE_SKIP;
				else if (strcmp(optarg, "apply") == 0)
					cli->pg.on_destructive = RP_DESTRUCTIVE_APPLY;
				else
				{
					pg_log_error("invalid value \"%s\" for --on-destructive (halt, skip or apply)", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 17:
				cli->pg.schema_prefix = optarg;
				break;
			case 70:
				if (optarg[0] == '\0' || strlen(optarg) > RP_PG_MAX_IDENT)
				{
					pg_log_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to %d bytes)",
								 optarg, RP_PG_MAX_IDENT);
					return RP_EXIT_USAGE;
				}
				cli->pg.bookkeeping_schema = optarg;
				break;
			case 71:
				if (strcmp(optarg, "halt") == 0 || strcmp(optarg, "skip") == 0)
					cli->pg.divergence_skip = strcmp(optarg, "skip") == 0;
				else
				{
					pg_log_error("invalid value \"%s\" for --on-divergence (halt or skip)", optarg);
					return RP_EXIT_USAGE;
				}
				break;
			case 18:
				add_name(&cli->pg.history, &cli->pg.nhistory, optarg);
				break;
			case 19:
				add_name(&cli->pg.route_prefixes, &cli->pg.nroute, optarg);
				break;
			case 20:
				add_name(&cli->pg.ignore_prefixes, &cli->pg.nignore, optarg);
				break;
			case 41:
				cli->no_early_apply = true;
				break;
			case 42:
				if (strcmp(optarg, "server") == 0)
					cli->decoding_work_mem_kb = RP_DECODING_WORK_MEM_SERVER;
				else if (!rp_parse_size(optarg, 64 * 1024, (uint64_t) 1 << 40, &size))
					return bad_value("decoding-work-mem", optarg, "server, or 64kB to 1TB");
				else
					cli->decoding_work_mem_kb = size / 1024;
				break;
			case 31:
			case 32:
				if (cli->agg == NULL)
					cli->agg = rp_agg_new();
				if ((c == 31 ? rp_agg_add_spec(cli->agg, optarg, "--aggregate")
					 : rp_agg_add_file(cli->agg, optarg)) < 0)
				{
					pg_log_error("%s", rp_error());
					return RP_EXIT_USAGE;
				}
				break;
			case 33:
				cli->agg_only = true;
				break;
			case 21:
				cli->snapshot = true;
				break;
			case 22:
				if (!rp_parse_int(optarg, 1, 64, &cli->snapshot_workers))
					return bad_value("snapshot-workers", optarg, "1 to 64");
				break;
			case 23:
				{
					int			n;

					if (!rp_parse_int(optarg, 1, 100000000, &n))
						return bad_value("snapshot-chunk-rows", optarg, "1 to 100000000");
					cli->snapshot_chunk_rows = (uint64_t) n;
				}
				break;
			case 24:
			case 25:
				if (!rp_parse_size(optarg, 1, RP_SIZE_MAX, &size))
					return bad_value(c == 24 ? "max-record-bytes" : "max-dlq-bytes", optarg, NULL);
				if (c == 24)
					cli->max_record_bytes = size;
				else
					cli->max_dlq_bytes = size;
				break;
			case 26:
				cli->dlq_file = optarg;
				break;
			case 27:
				add_name(&cli->backfill, &cli->nbackfill, optarg);
				break;
			case 28:
				{
					int			n;

					if (!rp_parse_int(optarg, 1, 100000000, &n))
						return bad_value("backfill-chunk-rows", optarg, "1 to 100000000");
					cli->backfill_chunk_rows = (uint64_t) n;
				}
				break;
			case 29:
				if (!rp_parse_int(optarg, 0, 86400, &cli->exec_ack_timeout_s))
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
	if (cli->slot == NULL)
	{
		pg_log_error("no slot specified");
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		return RP_EXIT_USAGE;
	}
	if (!cli->create_slot && !cli->drop_slot && !cli->start)
	{
		pg_log_error("at least one action needs to be specified");
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		return RP_EXIT_USAGE;
	}
	if (cli->drop_slot && (cli->create_slot || cli->start))
	{
		pg_log_error("cannot use --create-slot or --start together with --drop-slot");
		return RP_EXIT_USAGE;
	}
	if (cli->snapshot && !cli->start)
	{
		pg_log_error("--snapshot needs --start");
		return RP_EXIT_USAGE;
	}
	if (cli->nbackfill > 0)
	{
		const char *im = rp_cli_plugin_option(cli, "include_messages");
		const char *mp = rp_cli_plugin_option(cli, "message_prefixes");

		/* the watermarks travel in the stream: the mirror must see them */
		if (!cli->start || strncmp(cli->sink, "postgres", 8) != 0 || cli->agg_only)
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

	if (cli->agg_only && cli->agg == NULL)
	{
		pg_log_error("--aggregates-only needs at least one --aggregate or --aggregates");
		return RP_EXIT_USAGE;
	}
	/* the folds live inside the mirror's destination transactions */
	if (cli->agg && strncmp(cli->sink, "postgres", 8) != 0)
	{
		pg_log_error("aggregate bindings need the PostgreSQL sink (--sink=postgresql://... or postgres:CONNINFO)");
		return RP_EXIT_USAGE;
	}
	rp_cli_log_set_verbose(cli->verbose);
	return RP_CLI_RUN;
}
