/*
 * rp_cli_dbverify.c
 *    replicant verify -d SRC --sink postgresql://DST [OPTION]...: the
 *    command line of migrate/rp_dbverify (see rp_cli.h; docs/operations.md).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "migrate/rp_dbverify.h"

#define PROG "replicant verify"

static void
dbverify_usage(FILE *f)
{
	fprintf(f,
			"%s compares every selected table of a PostgreSQL mirror with its\n"
			"source, while both keep running: both servers hash the same key ranges\n"
			"(no row leaves either), and a range that differs is read again once the\n"
			"mirror's checkpoint has passed the source's WAL position of the read, so\n"
			"replication lag is not a difference.  Tables without a primary key are\n"
			"compared as multisets of rows.\n\n"
			"Usage:\n  %s -d SRC --sink postgresql://DST [OPTION]...\n\n"
			"Options:\n"
			"  -d, --dbname=CONNSTR   the source database (a conninfo string or URI)\n"
			"  -h, --host=HOST        the source's host (over -d)\n"
			"  -p, --port=PORT        the source's port (over -d)\n"
			"  -U, --username=NAME    the source's user (over -d)\n"
			"  -w, --no-password      never prompt for the source's password\n"
			"  -W, --password         prompt for the source's password\n"
			"      --sink=URI         the mirror: postgresql://..., postgres://... or postgres:CONNINFO\n"
			"  -S, --slot=SLOTNAME    the mirror's slot (its checkpoint row); needed when the\n"
			"                         checkpoint table holds more than one\n"
			"  -o, --option=NAME=VALUE  include_tables=PATTERNS, exclude_tables=PATTERNS or\n"
			"                         partitions=leaf|root, as given to the mirror\n"
			"      --schema-prefix=P  the mirror's --schema-prefix\n"
			"      --bookkeeping-schema=NAME  the mirror's bookkeeping schema (default replicant)\n"
			"      --keys-file=FILE   write the bounds of differing ranges and the keys of\n"
			"                         differing rows to FILE (they are values: never logged)\n"
			"      --chunk-rows=N     rows per hashed range (default 10000)\n"
			"      --recheck-timeout=S  re-read a differing range for at most S seconds, until\n"
			"                         the mirror has caught up and the source held still\n"
			"                         (default 60; else: not compared)\n"
			"      --max-rate=N       read at most N rows per second on each server\n"
			"      --duty=PCT         keep each server busy at most PCT%% of the time\n"
			"                         (default 10; 100: as fast as the servers go)\n"
			"  -q, --quiet            leave out the tables that are equal\n"
			"  -v, --verbose          say on stderr which ranges are read again\n"
			"  -?, --help             show this help, then exit\n\n"
			"Output: one line per differing range (\"S.T: different: chunk K (rows A-B of\n"
			"the source): ...\") or range not compared (\"S.T: chunk K not compared: REASON\"),\n"
			"one verdict line per table (\"S.T: equal (N rows, K chunks)\", \"S.T: different\n"
			"(...)\", \"S.T: not compared ...\"), then a summary.\n\n"
			"Exit status:\n"
			"  0  every table is equal\n"
			"  1  a table differs (a range, a missing table or column on the destination)\n"
			"  2  usage error\n"
			"  3  could not compare (a connection or a statement failed, no checkpoint)\n"
			"  4  nothing differs, but a table or range was not compared (the mirror did\n"
			"     not catch up, or the source kept changing it, within --recheck-timeout)\n"
			"A difference found wins over 3, and 3 over 4.\n",
			PROG, PROG);
}

/* usage errors: "PROG: error: ...", then the --help hint */
#define dbverify_usage_error(...) rp_cli_sub_usage_error(PROG, __VA_ARGS__)

static bool
parse_count(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

enum
{
	OPT_SINK = 256,
	OPT_SCHEMA_PREFIX,
	OPT_BOOKKEEPING,
	OPT_KEYS_FILE,
	OPT_CHUNK_ROWS,
	OPT_RECHECK_TIMEOUT,
	OPT_MAX_RATE,
	OPT_DUTY,
	OPT_HELP
};

/* verify's command line */
typedef struct DbVerifyArgs
{
	RpCliConn	conn;			/* the source */
	const char *sink;			/* the mirror */
	RpDbVerifyOptions o;
} DbVerifyArgs;

/* -o NAME=VALUE: the mirror's table selection.  RP_CLI_RUN, or a usage error's status. */
static int
dbverify_plugin_option(RpDbVerifyOptions *o, const char *arg)
{
	if (strncmp(arg, "include_tables=", 15) == 0)
		o->include = arg + 15;
	else if (strncmp(arg, "exclude_tables=", 15) == 0)
		o->exclude = arg + 15;
	else if (strcmp(arg, "partitions=root") == 0 || strcmp(arg, "partitions=leaf") == 0)
		o->via_root = strcmp(arg, "partitions=root") == 0;
	else
		return dbverify_usage_error("invalid value \"%s\" for -o (include_tables=..., exclude_tables=... or partitions=leaf|root)",
									arg);
	return RP_CLI_RUN;
}

/* The options that take a number: RP_CLI_RUN, or a usage error's status. */
static int
dbverify_number(RpDbVerifyOptions *o, int c, const char *arg)
{
	int64_t		v;

	switch (c)
	{
		case OPT_CHUNK_ROWS:
			if (!parse_count(arg, 1, 100000000, &o->chunk_rows))
				return dbverify_usage_error("invalid value \"%s\" for --chunk-rows (1 to 100000000)", arg);
			break;
		case OPT_RECHECK_TIMEOUT:
			if (!parse_count(arg, 0, 86400, &v))
				return dbverify_usage_error("invalid value \"%s\" for --recheck-timeout (0 to 86400 seconds)",
											arg);
			o->recheck_timeout_s = (int) v;
			break;
		case OPT_MAX_RATE:
			if (!parse_count(arg, 1, INT64_MAX / 1000000, &o->max_rate))
				return dbverify_usage_error("invalid value \"%s\" for --max-rate (rows per second, at least 1)",
											arg);
			break;
		case OPT_DUTY:
			if (!parse_count(arg, 1, 100, &v))
				return dbverify_usage_error("invalid value \"%s\" for --duty (a percent, 1 to 100)", arg);
			o->duty = (int) v;
			break;
	}
	return RP_CLI_RUN;
}

/* What getopt refused: -? is help, anything else a usage error. */
static int
dbverify_refused(int c, const char *word)
{
	if (c == '?' && (optopt == '?' || (optopt == 0 && strcmp(word, "-?") == 0)))
	{
		dbverify_usage(stdout);
		return RP_EXIT_OK;
	}
	if (c == '?' && optopt > 0 && optopt < 256)
		return dbverify_usage_error("invalid option -%c", optopt);
	if (c == ':')
		return dbverify_usage_error("option \"%s\" needs a value", word);
	return dbverify_usage_error("unrecognized option \"%s\"", word);
}

/* One of verify's own options: RP_CLI_RUN, or the exit status (--help, a usage error). */
static int
dbverify_option(DbVerifyArgs *a, int c, const char *arg, const char *word)
{
	switch (c)
	{
		case OPT_SINK:
			a->sink = arg;
			return RP_CLI_RUN;
		case 'S':
			a->o.slot = arg;
			return RP_CLI_RUN;
		case 'o':
			return dbverify_plugin_option(&a->o, arg);
		case OPT_SCHEMA_PREFIX:
			a->o.schema_prefix = arg;
			return RP_CLI_RUN;
		case OPT_BOOKKEEPING:
			if (arg[0] == '\0' || strlen(arg) > 63)
				return dbverify_usage_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to 63 bytes)",
											arg);
			a->o.bookkeeping = arg;
			return RP_CLI_RUN;
		case OPT_KEYS_FILE:
			a->o.keys_file = arg;
			return RP_CLI_RUN;
		case OPT_CHUNK_ROWS:
		case OPT_RECHECK_TIMEOUT:
		case OPT_MAX_RATE:
		case OPT_DUTY:
			return dbverify_number(&a->o, c, arg);
		case 'q':
			a->o.quiet = true;
			return RP_CLI_RUN;
		case 'v':
			a->o.verbose = true;
			return RP_CLI_RUN;
		case OPT_HELP:
			dbverify_usage(stdout);
			return RP_EXIT_OK;
		default:
			return dbverify_refused(c, word);
	}
}

/* The command line into *a: RP_CLI_RUN, or the exit status. */
static int
dbverify_parse(int argc, char **argv, DbVerifyArgs *a)
{
	static const struct option long_options[] = {
		RP_CLI_CONN_LONG_OPTIONS,
		{"sink", required_argument, NULL, OPT_SINK},
		{"slot", required_argument, NULL, 'S'},
		{"option", required_argument, NULL, 'o'},
		{"schema-prefix", required_argument, NULL, OPT_SCHEMA_PREFIX},
		{"bookkeeping-schema", required_argument, NULL, OPT_BOOKKEEPING},
		{"keys-file", required_argument, NULL, OPT_KEYS_FILE},
		{"chunk-rows", required_argument, NULL, OPT_CHUNK_ROWS},
		{"recheck-timeout", required_argument, NULL, OPT_RECHECK_TIMEOUT},
		{"max-rate", required_argument, NULL, OPT_MAX_RATE},
		{"duty", required_argument, NULL, OPT_DUTY},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}
	};
	int			c;
	int			rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:h:p:U:wWS:o:qv?", long_options, NULL)) != -1)
	{
		if (rp_cli_conn_option(&a->conn, c, optarg))
			continue;
		if ((rc = dbverify_option(a, c, optarg, argv[optind - 1])) != RP_CLI_RUN)
			return rc;
	}
	if (optind < argc)
		return dbverify_usage_error("too many command-line arguments (first is \"%s\")", argv[optind]);
	return RP_CLI_RUN;
}

/* What the options must say together; the source's conninfo (*src, or NULL: -d as given). */
static int
dbverify_validate(DbVerifyArgs *a, char **src)
{
	if (a->conn.dbname == NULL)
		return dbverify_usage_error("no source database given: -d");
	if (a->sink == NULL)
		return dbverify_usage_error("no mirror given: --sink postgresql://...");
	if ((a->o.sink = rp_cli_pg_sink_conninfo(a->sink)) == NULL)
		return dbverify_usage_error("--sink must be a PostgreSQL mirror (postgresql://... or postgres:CONNINFO)");
	return rp_cli_conn_compose(&a->conn, PROG, false, src);
}

int
rp_dbverify_main(int argc, char **argv)
{
	DbVerifyArgs a;
	char	   *src = NULL;
	int			rc;

	memset(&a, 0, sizeof(a));
	a.o.bookkeeping = "replicant";
	a.o.chunk_rows = 10000;
	a.o.recheck_timeout_s = 60;
	a.o.duty = 10;
	if ((rc = dbverify_parse(argc, argv, &a)) != RP_CLI_RUN ||
		(rc = dbverify_validate(&a, &src)) != RP_CLI_RUN)
		return rc;
	a.o.source = src ? src : a.conn.dbname;
	rc = rp_dbverify_run(&a.o);
	if (src)
		rp_free(src);
	return rc;
}
