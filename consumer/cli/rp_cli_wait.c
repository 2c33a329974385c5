/*
 * rp_cli_wait.c
 *    replicant wait -d SRC --sink postgresql://DST [-S SLOT] [--lsn LSN]
 *    [--timeout S]: until the mirror's durable checkpoint has passed LSN
 *    (rp_mwait.h; docs/operations.md's cutover).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "migrate/rp_mwait.h"
#include "migrate/rp_seqsync.h"
#include "rp_lsn.h"

#define PROG "replicant wait"

static void
wait_usage(FILE *f)
{
	fprintf(f,
			"%s returns once the mirror's durable checkpoint on the destination has\n"
			"passed a source LSN, showing the lag in bytes on stderr as it shrinks.\n\n"
			"Usage:\n  %s -d SRC --sink postgresql://DST [OPTION]...\n\n"
			"Options:\n"
			"  -d, --dbname=CONNSTR         the source (a database name or conninfo)\n"
			"  -h, --host=HOST              the source's host (over -d)\n"
			"  -p, --port=PORT              the source's port (over -d)\n"
			"  -U, --username=NAME          the source's user (over -d)\n"
			"  -w, --no-password            never prompt for the source's password\n"
			"  -W, --password               prompt for the source's password\n"
			"      --sink=postgresql://...  the destination (also postgres:CONNINFO)\n"
			"  -S, --slot=SLOTNAME          the mirror's slot (needed when the destination\n"
			"                               holds checkpoints of several slots of the source)\n"
			"      --lsn=LSN                the position to pass (default: the source's\n"
			"                               pg_current_wal_lsn() when called; on a\n"
			"                               standby pg_last_wal_replay_lsn())\n"
			"      --timeout=SECS           give up after SECS seconds (default: no limit)\n"
			"      --bookkeeping-schema=S   the mirror's own schema (default replicant)\n"
			"  -q, --quiet                  no lag lines\n"
			"  -?, --help                   show this help, then exit\n"
			"\nOnce passed, the sequences too (as replicant sync-sequences does):\n"
			"      --sync-sequences         then sync the destination's sequences\n"
			"      --margin=N               their next value at least N past the source's\n"
			"      --create-tables          create a selected sequence missing on the destination\n"
			"  -o, --option=NAME=VALUE      include_tables, exclude_tables (others ignored)\n"
			"      --schema-prefix=P        destination schema = P || source schema\n\n"
			"Exit status:\n"
			"  0  the checkpoint passed the LSN\n"
			"  1  --timeout expired first (the message names the LSN and the checkpoint);\n"
			"     with --sync-sequences also: some sequences were not synced (warned)\n"
			"  2  usage error\n"
			"  3  a side could not be read\n",
			PROG, PROG);
}

/* usage errors: "PROG: error: ...", then the --help hint */
#define wait_usage_error(...) rp_cli_sub_usage_error(PROG, __VA_ARGS__)

enum
{
	OPT_SINK = 256, OPT_LSN, OPT_TIMEOUT, OPT_BK, OPT_HELP, OPT_SYNC
};

/* --sync-sequences, once the checkpoint passed: the exit status (0, 1 or 3). */
static int
wait_sync(const RpMwaitOptions *wo, RpSeqSyncOptions *so)
{
	RpSeqSyncStats st;
	int			rc;

	so->src_conninfo = wo->src_conninfo;
	so->dst_conninfo = wo->dst_conninfo;
	so->bookkeeping_schema = wo->bookkeeping_schema;
	if (wo->progress)
		fprintf(stderr, "%s: the checkpoint has passed the target: syncing the sequences\n", PROG);
	rc = rp_seqsync_run(so, &st);
	if (rc < 0)
		return RP_MWAIT_UNREADABLE;
	fprintf(stderr, "%s: sequences: %d selected: %d advanced, %d already there, %d created, %d missing\n",
			PROG, st.selected, st.advanced, st.kept, st.created, st.missing);
	return rc == 0 ? 0 : RP_MWAIT_TIMEOUT;
}

/* wait's command line */
typedef struct WaitArgs
{
	RpCliConn	conn;			/* the source */
	const char *sink;			/* the destination */
	bool		quiet;
	bool		sync;			/* --sync-sequences */
	bool		seq_opts;		/* a sequence option given */
	RpMwaitOptions wo;
	RpSeqSyncOptions so;
} WaitArgs;

/* --timeout's seconds; false when it does not read. */
static bool
parse_timeout(const char *arg, int *secs)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v <= 0 || v > 86400 * 365)
		return false;
	*secs = (int) v;
	return true;
}

/* One of wait's own options: RP_CLI_RUN, or the exit status (--help, a usage error). */
static int
wait_option(WaitArgs *a, int c, const char *arg, const char *word)
{
	switch (c)
	{
		case OPT_SINK:
			a->sink = arg;
			break;
		case 'S':
			a->wo.slot = arg;
			break;
		case OPT_LSN:
			if (!rp_lsn_parse(arg, &a->wo.target) || a->wo.target == 0)
				return wait_usage_error("invalid value \"%s\" for --lsn (an LSN X/Y past 0/0)", arg);
			break;
		case OPT_TIMEOUT:
			if (!parse_timeout(arg, &a->wo.timeout_s))
				return wait_usage_error("invalid value \"%s\" for --timeout (seconds, 1 or more)", arg);
			break;
		case OPT_BK:
			if (arg[0] == '\0' || strlen(arg) > RP_MIRROR_MAX_IDENT)
				return wait_usage_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to %d bytes)",
										arg, RP_MIRROR_MAX_IDENT);
			a->wo.bookkeeping_schema = arg;
			break;
		case 'q':
			a->quiet = true;
			break;
		case OPT_SYNC:
			a->sync = true;
			break;
		case OPT_HELP:
			wait_usage(stdout);
			return RP_EXIT_OK;
		default:
			if (strcmp(word, "-?") == 0)
			{
				wait_usage(stdout);
				return RP_EXIT_OK;
			}
			return wait_usage_error("unknown option or missing argument: %s", word);
	}
	return RP_CLI_RUN;
}

/* The command line into *a: RP_CLI_RUN, or the exit status. */
static int
wait_parse(int argc, char **argv, WaitArgs *a)
{
	static const struct option long_options[] = {
		RP_CLI_CONN_LONG_OPTIONS,
		{"sink", required_argument, NULL, OPT_SINK},
		{"slot", required_argument, NULL, 'S'},
		{"lsn", required_argument, NULL, OPT_LSN},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"bookkeeping-schema", required_argument, NULL, OPT_BK},
		{"quiet", no_argument, NULL, 'q'},
		{"sync-sequences", no_argument, NULL, OPT_SYNC},
		RP_CLI_SEQ_LONG_OPTIONS,
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}
	};
	int			c;
	int			rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:h:p:U:wWS:qo:?", long_options, NULL)) != -1)
	{
		if ((rc = rp_cli_seqsync_option(&a->so, c, optarg, PROG)) != RP_CLI_SEQ_OTHER)
		{
			if (rc != RP_CLI_SEQ_TAKEN)
				return rc;
			a->seq_opts = true;
			continue;
		}
		if (rp_cli_conn_option(&a->conn, c, optarg))
			continue;
		if ((rc = wait_option(a, c, optarg, argv[optind - 1])) != RP_CLI_RUN)
			return rc;
	}
	if (optind < argc)
		return wait_usage_error("too many command-line arguments (first is \"%s\")", argv[optind]);
	return RP_CLI_RUN;
}

/* What the options must say together; the source's conninfo (*src). */
static int
wait_validate(WaitArgs *a, char **src)
{
	if (a->seq_opts && !a->sync)
		return wait_usage_error("--margin, --create-tables, -o and --schema-prefix are for --sync-sequences");
	if (a->sink == NULL)
		return wait_usage_error("no destination: --sink=postgresql://... is required");
	if ((a->wo.dst_conninfo = rp_cli_pg_sink_conninfo(a->sink)) == NULL)
		return wait_usage_error("--sink must be a PostgreSQL destination (postgresql://... or postgres:CONNINFO)");
	return rp_cli_conn_compose(&a->conn, PROG, true, src);
}

/* How the wait ended, on stderr. */
static void
wait_report(const WaitArgs *a, int rc, const RpMwaitResult *res)
{
	const RpMwaitOptions *wo = &a->wo;
	char		t[24],
				r[24];

	if (rc == RP_MWAIT_UNREADABLE)
	{
		fprintf(stderr, "%s: error: %s\n", PROG, rp_error());
		return;
	}
	rp_lsn_format(res->target, t);
	rp_lsn_format(res->reached, r);
	if (rc == RP_MWAIT_TIMEOUT && res->have_row)
		fprintf(stderr, "%s: error: timed out after %d s: the checkpoint reached %s, not %s\n",
				PROG, wo->timeout_s, r, t);
	else if (rc == RP_MWAIT_TIMEOUT)
		fprintf(stderr, "%s: error: timed out after %d s waiting for %s: the destination holds no checkpoint row of this source%s%s%s\n",
				PROG, wo->timeout_s, t, wo->slot ? " and slot \"" : "", wo->slot ? wo->slot : "",
				wo->slot ? "\"" : "");
	else if (!a->quiet)
		fprintf(stderr, "%s: the checkpoint %s has passed %s\n", PROG, r, t);
}

int
rp_wait_main(int argc, char **argv)
{
	WaitArgs	a;
	RpMwaitResult res;
	char	   *src = NULL;
	int			rc;

	memset(&a, 0, sizeof(a));
	a.so.progname = PROG;
	if ((rc = wait_parse(argc, argv, &a)) != RP_CLI_RUN ||
		(rc = wait_validate(&a, &src)) != RP_CLI_RUN)
		return rc;
	a.wo.src_conninfo = src;
	a.wo.progress = a.quiet ? NULL : stderr;
	a.wo.in_place = !a.quiet && isatty(STDERR_FILENO);

	rc = rp_mwait_run(&a.wo, &res);
	if (rc == 0 && a.sync)
	{
		rc = wait_sync(&a.wo, &a.so);
		if (rc == RP_MWAIT_UNREADABLE)
			fprintf(stderr, "%s: error: %s\n", PROG, rp_error());
		rp_free(src);
		return rc;
	}
	rp_free(src);
	wait_report(&a, rc, &res);
	return rc;
}
