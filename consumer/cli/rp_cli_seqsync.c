/*
 * rp_cli_seqsync.c
 *    replicant sync-sequences -d SRC --sink postgresql://DST [--margin N]
 *    [--create-tables] [-o include_tables=...] [--schema-prefix P]
 *    (rp_seqsync.h has the rules; docs/operations.md the cutover).
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
#include "migrate/rp_seqsync.h"

#define PROG "replicant sync-sequences"

static void
seqsync_usage(FILE *f)
{
	fprintf(f,
			"%s sets every selected sequence of the mirror's destination to at least\n"
			"the source's position (plus --margin), creating missing ones with\n"
			"--create-tables; a destination sequence is never moved backwards.\n\n"
			"Usage:\n  %s -d SRC --sink postgresql://DST [OPTION]...\n\n"
			"Options:\n"
			"  -d, --dbname=CONNSTR         the source (a database name or conninfo)\n"
			"  -h, --host=HOST              the source's host (over -d)\n"
			"  -p, --port=PORT              the source's port (over -d)\n"
			"  -U, --username=NAME          the source's user (over -d)\n"
			"  -w, --no-password            never prompt for the source's password\n"
			"  -W, --password               prompt for the source's password\n"
			"      --sink=postgresql://...  the destination (also postgres:CONNINFO)\n"
			"      --margin=N               the destination's next value at least N past\n"
			"                               the source's (default 0)\n"
			"      --create-tables          create a selected sequence missing on the destination\n"
			"  -o, --option=NAME=VALUE      include_tables, exclude_tables: the mirror's table\n"
			"                               selection (other names are accepted and ignored)\n"
			"      --schema-prefix=P        destination schema = P || source schema\n"
			"      --bookkeeping-schema=S   the mirror's own schema (default replicant)\n"
			"  -v, --verbose                one line per sequence\n"
			"  -?, --help                   show this help, then exit\n\n"
			"Selected: sequences owned by (serial, identity) or used in a column default of\n"
			"a selected table; with no include_tables, also every other sequence of a\n"
			"non-system schema that exclude_tables does not name.\n\n"
			"Exit status:\n"
			"  0  every selected sequence is at or past the source's position\n"
			"  1  some were not synced: missing on the destination (without\n"
			"     --create-tables) or the target is outside their bounds (warned)\n"
			"  2  usage error\n"
			"  3  a side could not be read or written\n",
			PROG, PROG);
}

/* usage errors: "PROG: error: ...", then the --help hint */
#define seqsync_usage_error(...) rp_cli_sub_usage_error(PROG, __VA_ARGS__)

/* postgresql://... and postgres:CONNINFO as --sink takes them; NULL: not a PostgreSQL sink. */
const char *
rp_cli_pg_sink_conninfo(const char *sink)
{
	if (strncmp(sink, "postgresql://", 13) == 0 || strncmp(sink, "postgres://", 11) == 0)
		return sink;
	if (strncmp(sink, "postgres:", 9) == 0)
		return sink + 9;
	return NULL;
}

int
rp_cli_seqsync_option(RpSeqSyncOptions *so, int c, const char *arg, const char *prog)
{
	char	   *end;

	switch (c)
	{
		case RP_CLI_SEQ_MARGIN:
			errno = 0;
			so->margin = strtoll(arg, &end, 10);
			if (errno != 0 || end == arg || *end != '\0' || so->margin < 0)
				return rp_cli_sub_usage_error(prog, "invalid value \"%s\" for --margin (a number of 0 or more)", arg);
			return RP_CLI_SEQ_TAKEN;
		case RP_CLI_SEQ_CREATE:
			so->create = true;
			return RP_CLI_SEQ_TAKEN;
		case 'o':

			/*
			 * the mirror's other plugin options are accepted and ignored
			 * (--help)
			 */
			if (strncmp(arg, "include_tables=", 15) == 0)
				so->select.include = arg + 15;
			else if (strncmp(arg, "exclude_tables=", 15) == 0)
				so->select.exclude = arg + 15;
			return RP_CLI_SEQ_TAKEN;
		case RP_CLI_SEQ_PREFIX:
			so->schema_prefix = arg;
			return RP_CLI_SEQ_TAKEN;
		default:
			return RP_CLI_SEQ_OTHER;
	}
}

/* sync-sequences' command line */
typedef struct SeqSyncArgs
{
	RpCliConn	conn;			/* the source */
	const char *sink;			/* the destination */
	RpSeqSyncOptions so;
} SeqSyncArgs;

/* The command line into *a: RP_CLI_RUN, or the exit status (--help, a usage error). */
static int
seqsync_parse(int argc, char **argv, SeqSyncArgs *a)
{
	enum
	{
		OPT_SINK = 256, OPT_BK, OPT_HELP
	};
	static const struct option long_options[] = {
		RP_CLI_CONN_LONG_OPTIONS,
		{"sink", required_argument, NULL, OPT_SINK},
		RP_CLI_SEQ_LONG_OPTIONS,
		{"bookkeeping-schema", required_argument, NULL, OPT_BK},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}
	};
	int			c;
	int			rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:h:p:U:wWo:v?", long_options, NULL)) != -1)
	{
		if ((rc = rp_cli_seqsync_option(&a->so, c, optarg, PROG)) != RP_CLI_SEQ_OTHER)
		{
			if (rc != RP_CLI_SEQ_TAKEN)
				return rc;
			continue;
		}
		if (rp_cli_conn_option(&a->conn, c, optarg))
			continue;
		switch (c)
		{
			case OPT_SINK:
				a->sink = optarg;
				break;
			case OPT_BK:
				if (optarg[0] == '\0' || strlen(optarg) > RP_MIRROR_MAX_IDENT)
					return seqsync_usage_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to %d bytes)",
											   optarg, RP_MIRROR_MAX_IDENT);
				a->so.bookkeeping_schema = optarg;
				break;
			case 'v':
				a->so.verbose = true;
				break;
			case OPT_HELP:
				seqsync_usage(stdout);
				return RP_EXIT_OK;
			default:
				if (strcmp(argv[optind - 1], "-?") == 0)
				{
					seqsync_usage(stdout);
					return RP_EXIT_OK;
				}
				return seqsync_usage_error("unknown option or missing argument: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return seqsync_usage_error("too many command-line arguments (first is \"%s\")", argv[optind]);
	return RP_CLI_RUN;
}

/* What the options must say together; the source's conninfo (*src). */
static int
seqsync_validate(SeqSyncArgs *a, char **src)
{
	if (a->sink == NULL)
		return seqsync_usage_error("no destination: --sink=postgresql://... is required");
	if ((a->so.dst_conninfo = rp_cli_pg_sink_conninfo(a->sink)) == NULL)
		return seqsync_usage_error("--sink must be a PostgreSQL destination (postgresql://... or postgres:CONNINFO)");
	return rp_cli_conn_compose(&a->conn, PROG, true, src);
}

int
rp_seqsync_main(int argc, char **argv)
{
	SeqSyncArgs a;
	RpSeqSyncStats st;
	char	   *src = NULL;
	int			rc;

	memset(&a, 0, sizeof(a));
	a.so.progname = PROG;
	if ((rc = seqsync_parse(argc, argv, &a)) != RP_CLI_RUN ||
		(rc = seqsync_validate(&a, &src)) != RP_CLI_RUN)
		return rc;
	a.so.src_conninfo = src;

	rc = rp_seqsync_run(&a.so, &st);
	rp_free(src);
	if (rc < 0)
	{
		fprintf(stderr, "%s: error: %s\n", PROG, rp_error());
		return RP_EXIT_HALT;
	}
	fprintf(stderr, "%s: %d selected: %d advanced, %d already there, %d created, %d missing\n",
			PROG, st.selected, st.advanced, st.kept, st.created, st.missing);
	return rc == 0 ? RP_EXIT_OK : RP_EXIT_ERROR;
}
