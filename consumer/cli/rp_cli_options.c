/*
 * rp_cli_options.c
 *    The command line, parsed into an RpCli (rp_cli.h): the option table,
 *    --help and the checks that the options go together (the connection
 *    options are folded into one conninfo by rp_cli_conninfo.c).  Nothing
 *    here connects anywhere or reads a file but --aggregates' own.
 *
 *    Every usage error goes through rp_cli_usage_error: "replicant: error:
 *    ..." and then the "Try --help" line, exit status 2.
 */
#include "rp_alloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backfill/rp_bfmsg.h"
#include "base/rp_metrics.h"
#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_config.h"
#include "cli/rp_cliparse.h"
#include "rp_buf.h"
#include "base/rp_ckpt.h"
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

/*
 * The options' codes, in the groups of --help.  A short option's code is
 * its letter (as getopt returns it); the long-only ones come after every
 * character.
 */
typedef enum RpCliOpt
{
	/* general */
	RP_OPT_SLOT = 'S',
	RP_OPT_OPTION = 'o',
	RP_OPT_STARTPOS = 'I',
	RP_OPT_ENDPOS = 'E',
	RP_OPT_STATUS_INTERVAL = 's',
	RP_OPT_NO_LOOP = 'n',
	RP_OPT_VERBOSE = 'v',
	RP_OPT_VERSION = 'V',
	RP_OPT_HELP = '?',
	/* connection */
	RP_OPT_DBNAME = 'd',
	RP_OPT_HOST = 'h',
	RP_OPT_PORT = 'p',
	RP_OPT_USERNAME = 'U',
	RP_OPT_NO_PASSWORD = 'w',
	RP_OPT_PASSWORD = 'W',
	/* general, long only */
	RP_OPT_STATE_DIR = 0x100,
	RP_OPT_SPILL_DIR,
	RP_OPT_MAX_MEMORY,
	RP_OPT_MAX_SPILL,
	RP_OPT_BATCH_TXNS,
	RP_OPT_BATCH_BYTES,
	RP_OPT_BATCH_MS,
	RP_OPT_DECODING_WORK_MEM,
	RP_OPT_PROGRESS,
	RP_OPT_NO_PROGRESS,
	RP_OPT_METRICS_PORT,
	RP_OPT_METRICS_ADDRESS,
	RP_OPT_CONFIG,
	/* action */
	RP_OPT_CREATE_SLOT,
	RP_OPT_DROP_SLOT,
	RP_OPT_START,
	RP_OPT_IF_NOT_EXISTS,
	RP_OPT_ALTER_SLOT,
	RP_OPT_FAILOVER,
	RP_OPT_NO_FAILOVER,
	/* sinks */
	RP_OPT_SINK,
	RP_OPT_EXEC_ACK_TIMEOUT,
	RP_OPT_MAX_RECORD_BYTES,
	RP_OPT_MAX_DLQ_BYTES,
	RP_OPT_DEAD_LETTER_FILE,
	/* sinks: NATS JetStream */
	RP_OPT_NATS_STREAM,
	RP_OPT_NATS_SUBJECT_PREFIX,
	RP_OPT_NATS_REPLICAS,
	RP_OPT_NATS_MAX_BYTES,
	RP_OPT_NATS_DUPLICATE_WINDOW,
	RP_OPT_NATS_WINDOW,
	RP_OPT_NATS_ACK_TIMEOUT,
	RP_OPT_NATS_CREDS,
	RP_OPT_NATS_TLS_CA,
	RP_OPT_NATS_TLS_CERT,
	RP_OPT_NATS_TLS_KEY,
	RP_OPT_SOURCE,
	RP_OPT_NATS_SUBJECTS,
	RP_OPT_NATS_FROM_CURRENT_START,
	/* sinks: the mirror */
	RP_OPT_CREATE_TABLES,
	RP_OPT_ON_DESTRUCTIVE,
	RP_OPT_SCHEMA_PREFIX,
	RP_OPT_BOOKKEEPING_SCHEMA,
	RP_OPT_ON_DIVERGENCE,
	RP_OPT_PIPELINE_MAX,
	RP_OPT_REPLICATION_ROLE,
	RP_OPT_HISTORY,
	RP_OPT_MESSAGE_ROUTE,
	RP_OPT_MESSAGE_IGNORE,
	RP_OPT_NO_EARLY_APPLY,
	/* snapshot and backfill */
	RP_OPT_SNAPSHOT,
	RP_OPT_SNAPSHOT_WORKERS,
	RP_OPT_SNAPSHOT_CHUNK_ROWS,
	RP_OPT_BACKFILL,
	RP_OPT_BACKFILL_CHUNK_ROWS,
	/* aggregates */
	RP_OPT_AGGREGATE,
	RP_OPT_AGGREGATES,
	RP_OPT_AGGREGATES_ONLY
} RpCliOpt;

static const char short_options[] = ":S:o:I:E:s:nvV?d:h:p:U:wW";

static const struct option long_options[] = {
	/* general */
	{"slot", required_argument, NULL, RP_OPT_SLOT},
	{"option", required_argument, NULL, RP_OPT_OPTION},
	{"startpos", required_argument, NULL, RP_OPT_STARTPOS},
	{"endpos", required_argument, NULL, RP_OPT_ENDPOS},
	{"status-interval", required_argument, NULL, RP_OPT_STATUS_INTERVAL},
	{"no-loop", no_argument, NULL, RP_OPT_NO_LOOP},
	{"verbose", no_argument, NULL, RP_OPT_VERBOSE},
	{"version", no_argument, NULL, RP_OPT_VERSION},
	{"help", no_argument, NULL, RP_OPT_HELP},
	{"state-dir", required_argument, NULL, RP_OPT_STATE_DIR},
	{"spill-dir", required_argument, NULL, RP_OPT_SPILL_DIR},
	{"max-memory", required_argument, NULL, RP_OPT_MAX_MEMORY},
	{"max-spill", required_argument, NULL, RP_OPT_MAX_SPILL},
	{"batch-txns", required_argument, NULL, RP_OPT_BATCH_TXNS},
	{"batch-bytes", required_argument, NULL, RP_OPT_BATCH_BYTES},
	{"batch-ms", required_argument, NULL, RP_OPT_BATCH_MS},
	{"decoding-work-mem", required_argument, NULL, RP_OPT_DECODING_WORK_MEM},
	{"progress", no_argument, NULL, RP_OPT_PROGRESS},
	{"no-progress", no_argument, NULL, RP_OPT_NO_PROGRESS},
	{"metrics-port", required_argument, NULL, RP_OPT_METRICS_PORT},
	{"metrics-address", required_argument, NULL, RP_OPT_METRICS_ADDRESS},
	{"config", required_argument, NULL, RP_OPT_CONFIG},
	/* connection (rp_cli_conninfo.c, as every command takes them) */
	RP_CLI_CONN_LONG_OPTIONS,
	/* action */
	{"create-slot", no_argument, NULL, RP_OPT_CREATE_SLOT},
	{"drop-slot", no_argument, NULL, RP_OPT_DROP_SLOT},
	{"start", no_argument, NULL, RP_OPT_START},
	{"if-not-exists", no_argument, NULL, RP_OPT_IF_NOT_EXISTS},
	{"alter-slot", no_argument, NULL, RP_OPT_ALTER_SLOT},
	{"failover", no_argument, NULL, RP_OPT_FAILOVER},
	{"no-failover", no_argument, NULL, RP_OPT_NO_FAILOVER},
	/* sinks */
	{"sink", required_argument, NULL, RP_OPT_SINK},
	{"exec-ack-timeout", required_argument, NULL, RP_OPT_EXEC_ACK_TIMEOUT},
	{"max-record-bytes", required_argument, NULL, RP_OPT_MAX_RECORD_BYTES},
	{"max-dlq-bytes", required_argument, NULL, RP_OPT_MAX_DLQ_BYTES},
	{"dead-letter-file", required_argument, NULL, RP_OPT_DEAD_LETTER_FILE},
	{"nats-stream", required_argument, NULL, RP_OPT_NATS_STREAM},
	{"nats-subject-prefix", required_argument, NULL, RP_OPT_NATS_SUBJECT_PREFIX},
	{"nats-replicas", required_argument, NULL, RP_OPT_NATS_REPLICAS},
	{"nats-max-bytes", required_argument, NULL, RP_OPT_NATS_MAX_BYTES},
	{"nats-duplicate-window", required_argument, NULL, RP_OPT_NATS_DUPLICATE_WINDOW},
	{"nats-window", required_argument, NULL, RP_OPT_NATS_WINDOW},
	{"nats-ack-timeout", required_argument, NULL, RP_OPT_NATS_ACK_TIMEOUT},
	{"nats-creds", required_argument, NULL, RP_OPT_NATS_CREDS},
	{"nats-tls-ca", required_argument, NULL, RP_OPT_NATS_TLS_CA},
	{"nats-tls-cert", required_argument, NULL, RP_OPT_NATS_TLS_CERT},
	{"nats-tls-key", required_argument, NULL, RP_OPT_NATS_TLS_KEY},
	{"source", required_argument, NULL, RP_OPT_SOURCE},
	{"nats-subjects", required_argument, NULL, RP_OPT_NATS_SUBJECTS},
	{"nats-from-current-start", no_argument, NULL, RP_OPT_NATS_FROM_CURRENT_START},
	{"create-tables", no_argument, NULL, RP_OPT_CREATE_TABLES},
	{"on-destructive", required_argument, NULL, RP_OPT_ON_DESTRUCTIVE},
	{"schema-prefix", required_argument, NULL, RP_OPT_SCHEMA_PREFIX},
	{"bookkeeping-schema", required_argument, NULL, RP_OPT_BOOKKEEPING_SCHEMA},
	{"on-divergence", required_argument, NULL, RP_OPT_ON_DIVERGENCE},
	{"pipeline-max", required_argument, NULL, RP_OPT_PIPELINE_MAX},
	{"session-replication-role", required_argument, NULL, RP_OPT_REPLICATION_ROLE},
	{"history", required_argument, NULL, RP_OPT_HISTORY},
	{"message-route", required_argument, NULL, RP_OPT_MESSAGE_ROUTE},
	{"message-ignore", required_argument, NULL, RP_OPT_MESSAGE_IGNORE},
	{"no-early-apply", no_argument, NULL, RP_OPT_NO_EARLY_APPLY},
	/* snapshot and backfill */
	{"snapshot", no_argument, NULL, RP_OPT_SNAPSHOT},
	{"snapshot-workers", required_argument, NULL, RP_OPT_SNAPSHOT_WORKERS},
	{"snapshot-chunk-rows", required_argument, NULL, RP_OPT_SNAPSHOT_CHUNK_ROWS},
	{"backfill", required_argument, NULL, RP_OPT_BACKFILL},
	{"backfill-chunk-rows", required_argument, NULL, RP_OPT_BACKFILL_CHUNK_ROWS},
	/* aggregates */
	{"aggregate", required_argument, NULL, RP_OPT_AGGREGATE},
	{"aggregates", required_argument, NULL, RP_OPT_AGGREGATES},
	{"aggregates-only", no_argument, NULL, RP_OPT_AGGREGATES_ONLY},
	{NULL, 0, NULL, 0}
};

/* a group's handler: the option was its own and is taken */
#define OPT_TAKEN RP_CLI_RUN
/* a group's handler: not one of its options */
#define OPT_OTHER (-2)

/*
 * A bad option value: a usage error naming the option (the value is the
 * user's own argument, never row data).  hint, if any, says what is valid.
 */
static int
bad_value(const char *option, const char *value, const char *hint)
{
	return rp_cli_usage_error("invalid value \"%s\" for option --%s%s%s%s", value, option,
							  hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
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

static void
free_names(char **list, int n)
{
	for (int i = 0; i < n; i++)
		rp_free(list[i]);
	if (list)
		rp_free(list);
}

const char *
rp_cli_plugin_option(const RpCli *cli, const char *name)
{
	for (int i = 0; i < cli->noptions; i++)
		if (strcmp(cli->options[i * 2], name) == 0)
			return cli->options[i * 2 + 1] ? cli->options[i * 2 + 1] : "";
	return NULL;
}

bool
rp_cli_partitions_root(const RpCli *cli)
{
	const char *v = rp_cli_plugin_option(cli, "partitions");

	return v != NULL && strcmp(v, "root") == 0;
}

/* A size option into *out; the bad_value otherwise. */
static int
size_option(const char *name, const char *arg, uint64_t max, const char *hint, uint64_t *out)
{
	if (!rp_parse_size(arg, 1, max, out))
		return bad_value(name, arg, hint);
	return OPT_TAKEN;
}

/* A row count of a chunk (1 to 100000000) into *out. */
static int
rows_option(const char *name, const char *arg, uint64_t *out)
{
	int			n;

	if (!rp_parse_int(arg, 1, 100000000, &n))
		return bad_value(name, arg, "1 to 100000000");
	*out = (uint64_t) n;
	return OPT_TAKEN;
}

/* The general options: the slot, positions, the stream's limits. */
static int
opt_general(RpCli *cli, int c, const char *arg)
{
	int			secs;
	uint64_t	size;

	switch (c)
	{
		case RP_OPT_SLOT:
			cli->slot = (char *) arg;
			return OPT_TAKEN;
		case RP_OPT_OPTION:
			if ((strcspn(arg, "=") == 6 && strncmp(arg, "format", 6) == 0) ||
				(strcspn(arg, "=") == 13 && strncmp(arg, "proto_version", 13) == 0))
				return rp_cli_usage_error("plugin option \"%s\" is set by %s itself", arg, progname);
			add_option(cli, arg);
			return OPT_TAKEN;
		case RP_OPT_ENDPOS:
			/* digits alone: a stream sequence (--source nats://) */
			if (*arg != '\0' && strspn(arg, "0123456789") == strlen(arg))
			{
				if (!rp_parse_size(arg, 1, UINT64_MAX, &cli->endpos_seq))
					return bad_value("endpos", arg, "an LSN (X/Y), or a stream sequence from 1");
				return OPT_TAKEN;
			}
			/* fall through */
		case RP_OPT_STARTPOS:
			if (!rp_lsn_parse(arg, c == RP_OPT_STARTPOS ? &cli->startpos : &cli->endpos))
				return rp_cli_usage_error("could not parse %s position \"%s\"",
										  c == RP_OPT_STARTPOS ? "start" : "end", arg);
			return OPT_TAKEN;
		case RP_OPT_STATUS_INTERVAL:
			if (!rp_parse_int(arg, 0, INT32_MAX / 1000, &secs))
				return bad_value("status-interval", arg, NULL);
			cli->status_interval_ms = secs * 1000;
			return OPT_TAKEN;
		case RP_OPT_NO_LOOP:
			cli->no_loop = true;
			return OPT_TAKEN;
		case RP_OPT_VERBOSE:
			cli->verbose++;
			return OPT_TAKEN;
		case RP_OPT_VERSION:
			printf("%s (replicant) %s, wire protocol %d\n", progname, RP_VERSION, RP_PROTO_VERSION);
			return RP_EXIT_OK;
		case RP_OPT_STATE_DIR:
			cli->state_dir = (char *) arg;
			return OPT_TAKEN;
		case RP_OPT_SPILL_DIR:
			cli->spill_dir = (char *) arg;
			return OPT_TAKEN;
		case RP_OPT_MAX_MEMORY:
			if (!rp_parse_size(arg, 1, RP_SIZE_MAX, &size))
				return bad_value("max-memory", arg, NULL);
			cli->max_memory = (size_t) size;
			return OPT_TAKEN;
		case RP_OPT_MAX_SPILL:
			return size_option("max-spill", arg, RP_SIZE_MAX, NULL, &cli->max_spill);
		case RP_OPT_BATCH_BYTES:
			return size_option("batch-bytes", arg, RP_BATCH_BYTES_MAX, "1 byte to 1GB",
							   &cli->limits.max_bytes);
	}
	return OPT_OTHER;
}

/* The general options that tune the pipeline around the stream. */
static int
opt_tuning(RpCli *cli, int c, const char *arg)
{
	uint64_t	size;

	switch (c)
	{
		case RP_OPT_BATCH_TXNS:
			if (!rp_parse_int(arg, 1, 1000000, &cli->limits.max_txns))
				return bad_value("batch-txns", arg, "1 to 1000000");
			return OPT_TAKEN;
		case RP_OPT_BATCH_MS:
			if (!rp_parse_int(arg, 0, 3600000, &cli->limits.max_ms))
				return bad_value("batch-ms", arg, "0 to 3600000");
			return OPT_TAKEN;
		case RP_OPT_DECODING_WORK_MEM:
			if (strcmp(arg, "server") == 0)
				cli->decoding_work_mem_kb = RP_DECODING_WORK_MEM_SERVER;
			else if (!rp_parse_size(arg, 64 * 1024, (uint64_t) 1 << 40, &size))
				return bad_value("decoding-work-mem", arg, "server, or 64kB to 1TB");
			else
				cli->decoding_work_mem_kb = size / 1024;
			return OPT_TAKEN;
		case RP_OPT_PROGRESS:
			cli->progress = true;
			cli->no_progress = false;
			return OPT_TAKEN;
		case RP_OPT_NO_PROGRESS:
			cli->no_progress = true;
			cli->progress = false;
			return OPT_TAKEN;
		case RP_OPT_METRICS_PORT:
			if (!rp_parse_int(arg, 1, 65535, &cli->metrics_port))
				return bad_value("metrics-port", arg, "1 to 65535");
			if (!rp_metrics_available())
			{
				/* the build lacks it, not the command line: no --help hint */
				pg_log_error("this replicant was built without metrics (libmicrohttpd)");
				return RP_EXIT_REFUSED;
			}
			return OPT_TAKEN;
		case RP_OPT_METRICS_ADDRESS:
			{
				RpMetrics	probe;

				/* an address literal, IPv4 or IPv6: no name to resolve */
				rp_metrics_init(&probe);
				if (rp_metrics_set_address(&probe, arg) < 0)
					return bad_value("metrics-address", arg, "an IPv4 or IPv6 address");
				cli->metrics_address = arg;
				return OPT_TAKEN;
			}
	}
	return OPT_OTHER;
}

/* Connection and action options. */
static int
opt_connection(RpCli *cli, int c, const char *arg)
{
	switch (c)
	{
		case RP_OPT_DBNAME:
			/* what the checks read until the connection is composed */
			cli->dbname = (char *) arg;
			rp_cli_conn_option(&cli->conn, c, arg);
			return OPT_TAKEN;
		case RP_OPT_HOST:
		case RP_OPT_PORT:
		case RP_OPT_USERNAME:
		case RP_OPT_NO_PASSWORD:
		case RP_OPT_PASSWORD:
			rp_cli_conn_option(&cli->conn, c, arg);
			return OPT_TAKEN;
		case RP_OPT_CREATE_SLOT:
			cli->create_slot = true;
			return OPT_TAKEN;
		case RP_OPT_DROP_SLOT:
			cli->drop_slot = true;
			return OPT_TAKEN;
		case RP_OPT_START:
			cli->start = true;
			return OPT_TAKEN;
		case RP_OPT_IF_NOT_EXISTS:
			cli->if_not_exists = true;
			return OPT_TAKEN;
		case RP_OPT_ALTER_SLOT:
			cli->alter_slot = true;
			return OPT_TAKEN;
		case RP_OPT_FAILOVER:
		case RP_OPT_NO_FAILOVER:
			cli->failover_given = true;
			cli->failover = c == RP_OPT_FAILOVER;
			return OPT_TAKEN;
	}
	return OPT_OTHER;
}

/* The sinks' options (the mirror's in opt_mirror). */
static int
opt_sinks(RpCli *cli, int c, const char *arg)
{
	switch (c)
	{
		case RP_OPT_SINK:
			cli->sink = (char *) arg;
			return OPT_TAKEN;
		case RP_OPT_EXEC_ACK_TIMEOUT:
			if (!rp_parse_int(arg, 0, 86400, &cli->exec_ack_timeout_s))
				return bad_value("exec-ack-timeout", arg, "0 to 86400 seconds; 0 waits for ever");
			return OPT_TAKEN;
		case RP_OPT_MAX_RECORD_BYTES:
			return size_option("max-record-bytes", arg, RP_SIZE_MAX, NULL, &cli->max_record_bytes);
		case RP_OPT_MAX_DLQ_BYTES:
			return size_option("max-dlq-bytes", arg, RP_SIZE_MAX, NULL, &cli->max_dlq_bytes);
		case RP_OPT_DEAD_LETTER_FILE:
			cli->dlq_file = (char *) arg;
			return OPT_TAKEN;
	}
	return OPT_OTHER;
}

/* Seconds, fractional allowed, in (0, max]. */
static bool
parse_seconds(const char *s, double max, double *out)
{
	char	   *end;
	double		v;

	if (s == NULL || *s == '\0')
		return false;
	v = strtod(s, &end);
	if (*end != '\0' || !(v > 0) || v > max)
		return false;
	*out = v;
	return true;
}

/* The NATS JetStream sink's options (--sink nats://...). */
static int
opt_nats(RpCli *cli, int c, const char *arg)
{
	RpNatsOptions *o = &cli->nats;

	switch (c)
	{
		case RP_OPT_NATS_STREAM:
			if (*arg == '\0' || strpbrk(arg, ". *>/\\\t") != NULL)
				return bad_value("nats-stream", arg, "a stream name without '.', '*', '>', '/', '\\' or spaces");
			o->stream = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_SUBJECT_PREFIX:
			if (*arg == '\0' || strpbrk(arg, "*> \t") != NULL || arg[0] == '.' ||
				arg[strlen(arg) - 1] == '.' || strstr(arg, "..") != NULL)
				return bad_value("nats-subject-prefix", arg, "subject tokens without wildcards or spaces");
			o->subject_prefix = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_REPLICAS:
			if (!rp_parse_int(arg, 1, 5, &o->replicas))
				return bad_value("nats-replicas", arg, "1 to 5");
			return OPT_TAKEN;
		case RP_OPT_NATS_MAX_BYTES:
			return size_option("nats-max-bytes", arg, RP_SIZE_MAX, NULL, &o->max_bytes);
		case RP_OPT_NATS_DUPLICATE_WINDOW:
			if (!parse_seconds(arg, 7 * 86400.0, &o->duplicate_window_s))
				return bad_value("nats-duplicate-window", arg, "seconds, more than 0, e.g. 0.1 or 120");
			return OPT_TAKEN;
		case RP_OPT_NATS_WINDOW:
			if (!rp_parse_int(arg, 1, 65536, &o->window))
				return bad_value("nats-window", arg, "1 to 65536");
			return OPT_TAKEN;
		case RP_OPT_NATS_ACK_TIMEOUT:
			if (!parse_seconds(arg, 3600.0, &o->ack_timeout_s))
				return bad_value("nats-ack-timeout", arg, "seconds, more than 0, at most 3600");
			return OPT_TAKEN;
		case RP_OPT_NATS_CREDS:
			o->creds = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_TLS_CA:
			o->tls_ca = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_TLS_CERT:
			o->tls_cert = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_TLS_KEY:
			o->tls_key = arg;
			return OPT_TAKEN;
		case RP_OPT_SOURCE:
			if (!rp_cli_sink_is_nats(arg))
				return bad_value("source", arg, "nats://HOST:PORT[,...] or tls://... (a JetStream stream the NATS sink wrote)");
			cli->source = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_SUBJECTS:
			if (*arg == '\0' || strpbrk(arg, " \t") != NULL || arg[0] == '.' ||
				arg[strlen(arg) - 1] == '.' || strstr(arg, "..") != NULL)
				return bad_value("nats-subjects", arg, "a subject wildcard, e.g. replicant.cdc.public.*");
			cli->nats_subjects = arg;
			return OPT_TAKEN;
		case RP_OPT_NATS_FROM_CURRENT_START:
			cli->nats_from_current_start = true;
			return OPT_TAKEN;
	}
	return OPT_OTHER;
}

static int
opt_mirror(RpCli *cli, int c, const char *arg)
{
	switch (c)
	{
		case RP_OPT_CREATE_TABLES:
			cli->pg.create_tables = true;
			return OPT_TAKEN;
		case RP_OPT_ON_DESTRUCTIVE:
			if (strcmp(arg, "halt") == 0)
				cli->pg.on_destructive = RP_DESTRUCTIVE_HALT;
			else if (strcmp(arg, "skip") == 0)
				cli->pg.on_destructive = RP_DESTRUCTIVE_SKIP;
			else if (strcmp(arg, "apply") == 0)
				cli->pg.on_destructive = RP_DESTRUCTIVE_APPLY;
			else
				return rp_cli_usage_error("invalid value \"%s\" for --on-destructive (halt, skip or apply)", arg);
			return OPT_TAKEN;
		case RP_OPT_SCHEMA_PREFIX:
			cli->pg.schema_prefix = (char *) arg;
			return OPT_TAKEN;
		case RP_OPT_BOOKKEEPING_SCHEMA:
			if (arg[0] == '\0' || strlen(arg) > RP_MIRROR_MAX_IDENT)
				return rp_cli_usage_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to %d bytes)",
										  arg, RP_MIRROR_MAX_IDENT);
			cli->pg.bookkeeping_schema = (char *) arg;
			return OPT_TAKEN;
		case RP_OPT_ON_DIVERGENCE:
			if (strcmp(arg, "halt") != 0 && strcmp(arg, "skip") != 0)
				return rp_cli_usage_error("invalid value \"%s\" for --on-divergence (halt or skip)", arg);
			cli->pg.divergence_skip = strcmp(arg, "skip") == 0;
			return OPT_TAKEN;
		case RP_OPT_PIPELINE_MAX:
			if (!rp_parse_int(arg, 0, RP_MIRROR_PIPELINE_LIMIT, &cli->pg.pipeline_max))
				return bad_value("pipeline-max", arg, "0 to 100000");
			if (cli->pg.pipeline_max == 0)
				cli->pg.pipeline_max = -1;	/* off: every table through
											 * staging */
			return OPT_TAKEN;
		case RP_OPT_REPLICATION_ROLE:
			if (strcmp(arg, "replica") != 0 && strcmp(arg, "origin") != 0 && strcmp(arg, "local") != 0)
				return rp_cli_usage_error("invalid value \"%s\" for --session-replication-role (replica, origin or local)", arg);
			cli->pg.replication_role = arg;
			return OPT_TAKEN;
		case RP_OPT_HISTORY:
			add_name(&cli->pg.history, &cli->pg.nhistory, arg);
			return OPT_TAKEN;
		case RP_OPT_MESSAGE_ROUTE:
			add_name(&cli->pg.route_prefixes, &cli->pg.nroute, arg);
			return OPT_TAKEN;
		case RP_OPT_MESSAGE_IGNORE:
			add_name(&cli->pg.ignore_prefixes, &cli->pg.nignore, arg);
			return OPT_TAKEN;
		case RP_OPT_NO_EARLY_APPLY:
			cli->no_early_apply = true;
			return OPT_TAKEN;
	}
	return OPT_OTHER;
}

/* Snapshot, backfill and aggregate options. */
static int
opt_copies(RpCli *cli, int c, const char *arg)
{
	switch (c)
	{
		case RP_OPT_SNAPSHOT:
			cli->snapshot = true;
			return OPT_TAKEN;
		case RP_OPT_SNAPSHOT_WORKERS:
			if (!rp_parse_int(arg, 1, 64, &cli->snapshot_workers))
				return bad_value("snapshot-workers", arg, "1 to 64");
			return OPT_TAKEN;
		case RP_OPT_SNAPSHOT_CHUNK_ROWS:
			return rows_option("snapshot-chunk-rows", arg, &cli->snapshot_chunk_rows);
		case RP_OPT_BACKFILL:
			add_name(&cli->backfill, &cli->nbackfill, arg);
			return OPT_TAKEN;
		case RP_OPT_BACKFILL_CHUNK_ROWS:
			return rows_option("backfill-chunk-rows", arg, &cli->backfill_chunk_rows);
		case RP_OPT_AGGREGATE:
		case RP_OPT_AGGREGATES:
			if (cli->agg == NULL)
				cli->agg = rp_agg_new();
			if ((c == RP_OPT_AGGREGATE ? rp_agg_add_spec(cli->agg, arg, "--aggregate")
				 : rp_agg_add_file(cli->agg, arg)) < 0)
				return rp_cli_usage_error("%s", rp_error());
			return OPT_TAKEN;
		case RP_OPT_AGGREGATES_ONLY:
			cli->agg_only = true;
			return OPT_TAKEN;
	}
	return OPT_OTHER;
}

/*
 * What getopt refused (opterr is off: every usage error is worded the
 * same way).  arg is the command-line word it stopped at.
 */
static int
bad_option(int c, const char *word)
{
	size_t		len = strcspn(word, "=");
	const char *name = word + 2;
	const struct option *named = NULL;
	int			matches = 0;

	if (strcmp(word, "--help") == 0 || strcmp(word, "-?") == 0)
		return rp_cli_usage_error("%s must be the first option (it shows the help, then exits)", word);
	if (strncmp(word, "--", 2) == 0)
		for (const struct option *o = long_options; o->name; o++)
		{
			if (strncmp(o->name, name, len - 2) != 0)
				continue;
			named = o;
			matches++;
			/* the whole name: getopt_long took it, not a prefix */
			if (strlen(o->name) == len - 2)
			{
				matches = 1;
				break;
			}
		}

	/*
	 * getopt names a short option in optopt, a long one (refused for its
	 * argument) by its code; the word is then that long option.
	 */
	if (optopt != 0 && !(matches == 1 && named->val == optopt))
		return c == ':' ? rp_cli_usage_error("option requires an argument -- '%c'", optopt)
			: rp_cli_usage_error("invalid option -- '%c'", optopt);
	if (c == ':')
		return rp_cli_usage_error("option \"--%s\" requires an argument", named->name);
	if (matches == 1)
		return rp_cli_usage_error("option \"--%s\" does not take an argument", named->name);
	if (matches > 1)
		return rp_cli_usage_error("option \"%.*s\" is ambiguous", (int) len, word);
	return rp_cli_usage_error("unrecognized option \"%.*s\"", (int) len, word);
}

static void
set_defaults(RpCli *cli)
{
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
	rp_nats_options_init(&cli->nats);
}

/* --backfill's watermarks travel in the stream: the mirror must see them. */
static int
check_backfill(const RpCli *cli)
{
	const char *im = rp_cli_plugin_option(cli, "include_messages");
	const char *mp = rp_cli_plugin_option(cli, "message_prefixes");

	if (!cli->start || strncmp(cli->sink, "postgres", 8) != 0 || cli->agg_only)
		return rp_cli_usage_error("--backfill needs --start and the PostgreSQL sink (not --aggregates-only)");

	/*
	 * Refused here, not waited on for ever: a filtered watermark never
	 * arrives.  A value the server refuses is left to it (a config error).
	 */
	if (rp_messages_pass(im, NULL, RP_BACKFILL_PREFIX) == RP_MSG_PASS_NO)
		return rp_cli_usage_error("--backfill needs the plugin's logical messages, but -o include_messages=%s filters them out", im);
	if (rp_messages_pass(im, mp, RP_BACKFILL_PREFIX) == RP_MSG_PASS_NO)
		return rp_cli_usage_error("--backfill needs the plugin's logical messages with prefix \"%s\", but -o message_prefixes=%s filters them out",
								  RP_BACKFILL_PREFIX, mp);
	return RP_CLI_RUN;
}

/*
 * --failover and --no-failover set a slot's property when it is created or
 * altered; --alter-slot has nothing else to change.  Whether the server
 * knows the option is checked once connected (rp_conn_need_failover).
 */
static int
check_failover(const RpCli *cli)
{
	if (cli->failover_given && !cli->create_slot && !cli->alter_slot)
		return rp_cli_usage_error("%s needs --create-slot or --alter-slot",
								  cli->failover ? "--failover" : "--no-failover");
	if (!cli->alter_slot)
		return RP_CLI_RUN;
	if (cli->create_slot || cli->drop_slot)
		return rp_cli_usage_error("cannot use --alter-slot together with --create-slot or --drop-slot");
	if (!cli->failover_given)
		return rp_cli_usage_error("--alter-slot needs --failover or --no-failover (what to change)");
	return RP_CLI_RUN;
}

/* --source nats://: what a stream reader takes. */
static int
check_source(const RpCli *cli)
{
	if (cli->source == NULL)
	{
		if (cli->endpos_seq)
			return rp_cli_usage_error("--endpos as a stream sequence needs --source nats://...; with a slot it is an LSN (X/Y)");
		if (cli->nats_subjects)
			return rp_cli_usage_error("--nats-subjects needs --source nats://...");
		if (cli->nats_from_current_start)
			return rp_cli_usage_error("--nats-from-current-start needs --source nats://...");
		return RP_CLI_RUN;
	}
	if (!cli->start || cli->create_slot || cli->drop_slot || cli->alter_slot)
		return rp_cli_usage_error("--source nats://... needs --start, and no --create-slot, --alter-slot or --drop-slot (a stream has no slot)");
	if (cli->nats.stream == NULL)
		return rp_cli_usage_error("--source nats://... needs --nats-stream NAME");
	if (cli->snapshot || cli->nbackfill > 0)
		return rp_cli_usage_error("--snapshot and --backfill need a replication slot, not --source nats://...");
	if (cli->noptions > 0 || cli->startpos)
		return rp_cli_usage_error("-o and --startpos are for a replication slot, not --source nats://...");
	if (rp_cli_sink_is_nats(cli->sink))
		return rp_cli_usage_error("--source nats://... with --sink nats://... is not supported: read the stream directly");

	/*
	 * the one use of the source database: the aggregates' seed (a normal
	 * connection)
	 */
	if (cli->dbname && cli->agg == NULL)
		return rp_cli_usage_error("-d with --source nats://... is only for the aggregate bindings' seed (--aggregate)");
	if (cli->agg && cli->dbname == NULL)
		return rp_cli_usage_error("aggregate bindings read from a stream seed from the source database: give it with -d");
	return RP_CLI_RUN;
}

/* Whether the options go together; RP_CLI_RUN, or the usage error's status. */
static int
check_options(const RpCli *cli, int argc, char **argv)
{
	if (optind < argc)
		return rp_cli_usage_error("too many command-line arguments (first is \"%s\")", argv[optind]);
	if (cli->slot == NULL)
		return rp_cli_usage_error(cli->source ? "no reader name specified (-S NAME: the name this reader's position is kept under)" : "no slot specified");
	if (!cli->create_slot && !cli->drop_slot && !cli->start && !cli->alter_slot)
		return rp_cli_usage_error("at least one action needs to be specified");
	if (check_failover(cli) != RP_CLI_RUN)
		return RP_EXIT_USAGE;
	if (cli->drop_slot && (cli->create_slot || cli->start))
		return rp_cli_usage_error("cannot use --create-slot or --start together with --drop-slot");
	if (cli->snapshot && !cli->start)
		return rp_cli_usage_error("--snapshot needs --start");
	if (cli->nbackfill > 0 && check_backfill(cli) != RP_CLI_RUN)
		return RP_EXIT_USAGE;
	if (cli->agg_only && cli->agg == NULL)
		return rp_cli_usage_error("--aggregates-only needs at least one --aggregate or --aggregates");
	/* the folds live inside the mirror's destination transactions */
	if (cli->agg && strncmp(cli->sink, "postgres", 8) != 0)
		return rp_cli_usage_error("aggregate bindings need the PostgreSQL sink (--sink=postgresql://... or postgres:CONNINFO)");
	if (!rp_cli_sink_known(cli->sink))
		return rp_cli_usage_error("unknown sink \"%s\" (expected stdout, file:PATH, exec:COMMAND, postgresql://..., postgres:CONNINFO or nats://...)",
								  cli->sink);
	return check_source(cli);
}

/* One option: its group's handler, or what getopt refused. */
static int
take_option(RpCli *cli, int c, const char *arg, const char *word)
{
	static int	(*const groups[]) (RpCli *, int, const char *) = {
		opt_general, opt_tuning, opt_connection, opt_sinks, opt_nats, opt_mirror, opt_copies
	};

	if (c == '?' || c == ':')
		return bad_option(c, word);
	/* read before the options (rp_cli_config_apply) */
	if (c == RP_OPT_CONFIG)
		return OPT_TAKEN;
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
	{
		int			rc = groups[i] (cli, c, arg);

		if (rc != OPT_OTHER)
			return rc;
	}
	return rp_cli_usage_error("option \"%s\" is not handled", word);
}

int
rp_cli_parse(RpCli *cli, int argc, char **argv)
{
	int			c;
	int			rc;
	int			n = 0;

	set_defaults(cli);
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		rp_cli_usage();
		return RP_EXIT_OK;
	}
	/* --config FILE: its options come first, the command line's win */
	rc = rp_cli_config_apply(&argc, &argv, short_options, long_options, RP_OPT_CONFIG,
							 &cli->config);
	if (rc != RP_CLI_RUN)
		return rc;
	/* from the start, also when called again (the unit tests do) */
	optind = 0;
	opterr = 0;
	for (;;)
	{
		/* getopt sets optopt only when it refuses a short option */
		optopt = 0;
		c = getopt_long(argc, argv, short_options, long_options, NULL);
		if (c == -1)
			break;
		/* the word getopt stopped at: the one just taken, or the current one */
		/* the file's words are the first getopt returns, one option each */
		rp_cli_config_context(cli->config, n++);
		rc = take_option(cli, c, optarg, argv[optind > 1 ? optind - 1 : 1]);
		rp_cli_config_context(cli->config, -1);
		if (rc != RP_CLI_RUN)
			return rc;
	}
	rc = check_options(cli, argc, argv);
	if (rc == RP_CLI_RUN)
		rc = rp_cli_compose_connection(cli);
	if (rc != RP_CLI_RUN)
		return rc;
	rp_cli_log_set_verbose(cli->verbose);
	return RP_CLI_RUN;
}

void
rp_cli_free(RpCli *cli)
{
	for (int i = 0; i < cli->noptions * 2; i++)
		if (cli->options[i])
			rp_free(cli->options[i]);
	if (cli->options)
		rp_free(cli->options);
	free_names(cli->pg.history, cli->pg.nhistory);
	free_names(cli->pg.route_prefixes, cli->pg.nroute);
	free_names(cli->pg.ignore_prefixes, cli->pg.nignore);
	free_names(cli->backfill, cli->nbackfill);
	if (cli->conninfo)
		rp_free(cli->conninfo);
	rp_cli_config_free(cli->config);
	memset(cli, 0, sizeof(*cli));
}
