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
			"      --sink=postgresql://...  the destination (also postgres:CONNINFO)\n"
			"  -S, --slot=SLOTNAME          the mirror's slot (needed when the destination\n"
			"                               holds checkpoints of several slots of the source)\n"
			"      --lsn=LSN                the position to pass (default: the source's\n"
			"                               pg_current_wal_lsn() when called)\n"
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

int
rp_wait_main(int argc, char **argv)
{
	enum
	{
		OPT_SINK = 256, OPT_LSN, OPT_TIMEOUT, OPT_BK, OPT_HELP, OPT_SYNC
	};
	static const struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
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
	const char *keys[] = {"host", "port", "user", NULL};
	const char *vals[] = {NULL, NULL, NULL, NULL};
	const char *dbname = NULL;
	const char *sink = NULL;
	bool		quiet = false;
	bool		sync = false;
	bool		seq_opts = false;	/* a sequence option given */
	RpSeqSyncOptions so;
	RpMwaitOptions wo;
	RpMwaitResult res;
	char		err[256];
	char	   *src;
	int			c;
	int			rc;

	memset(&wo, 0, sizeof(wo));
	memset(&so, 0, sizeof(so));
	so.progname = PROG;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:h:p:U:S:qo:?", long_options, NULL)) != -1)
	{
		if ((rc = rp_cli_seqsync_option(&so, c, optarg, PROG)) != RP_CLI_SEQ_OTHER)
		{
			if (rc != RP_CLI_SEQ_TAKEN)
				return rc;
			seq_opts = true;
			continue;
		}
		switch (c)
		{
			case 'd':
				dbname = optarg;
				break;
			case 'h':
				vals[0] = optarg;
				break;
			case 'p':
				vals[1] = optarg;
				break;
			case 'U':
				vals[2] = optarg;
				break;
			case OPT_SINK:
				sink = optarg;
				break;
			case 'S':
				wo.slot = optarg;
				break;
			case OPT_LSN:
				if (!rp_lsn_parse(optarg, &wo.target) || wo.target == 0)
					return wait_usage_error("invalid value \"%s\" for --lsn (an LSN X/Y past 0/0)", optarg);
				break;
			case OPT_TIMEOUT:
				{
					char	   *end;
					long		v;

					errno = 0;
					v = strtol(optarg, &end, 10);
					if (errno != 0 || end == optarg || *end != '\0' || v <= 0 || v > 86400 * 365)
						return wait_usage_error("invalid value \"%s\" for --timeout (seconds, 1 or more)", optarg);
					wo.timeout_s = (int) v;
					break;
				}
			case OPT_BK:
				if (optarg[0] == '\0' || strlen(optarg) > RP_MIRROR_MAX_IDENT)
					return wait_usage_error("invalid value \"%s\" for --bookkeeping-schema (a schema name of 1 to %d bytes)",
											optarg, RP_MIRROR_MAX_IDENT);
				wo.bookkeeping_schema = optarg;
				break;
			case 'q':
				quiet = true;
				break;
			case OPT_SYNC:
				sync = true;
				break;
			case OPT_HELP:
				wait_usage(stdout);
				return RP_EXIT_OK;
			default:
				if (strcmp(argv[optind - 1], "-?") == 0)
				{
					wait_usage(stdout);
					return RP_EXIT_OK;
				}
				return wait_usage_error("unknown option or missing argument: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return wait_usage_error("too many command-line arguments (first is \"%s\")", argv[optind]);
	if (seq_opts && !sync)
		return wait_usage_error("--margin, --create-tables, -o and --schema-prefix are for --sync-sequences");
	if (sink == NULL)
		return wait_usage_error("no destination: --sink=postgresql://... is required");
	if ((wo.dst_conninfo = rp_cli_pg_sink_conninfo(sink)) == NULL)
		return wait_usage_error("--sink must be a PostgreSQL destination (postgresql://... or postgres:CONNINFO)");
	src = rp_cli_conninfo(dbname, keys, vals, err, sizeof(err));
	if (src == NULL)
		return wait_usage_error("-d: %s", err);
	wo.src_conninfo = src;
	wo.progress = quiet ? NULL : stderr;
	wo.in_place = !quiet && isatty(STDERR_FILENO);

	rc = rp_mwait_run(&wo, &res);
	if (rc == 0 && sync)
	{
		rc = wait_sync(&wo, &so);
		if (rc == RP_MWAIT_UNREADABLE)
			fprintf(stderr, "%s: error: %s\n", PROG, rp_error());
		rp_free(src);
		return rc;
	}
	rp_free(src);
	if (rc == RP_MWAIT_UNREADABLE)
		fprintf(stderr, "%s: error: %s\n", PROG, rp_error());
	else
	{
		char		t[24],
					r[24];

		rp_lsn_format(res.target, t);
		rp_lsn_format(res.reached, r);
		if (rc == RP_MWAIT_TIMEOUT && res.have_row)
			fprintf(stderr, "%s: error: timed out after %d s: the checkpoint reached %s, not %s\n",
					PROG, wo.timeout_s, r, t);
		else if (rc == RP_MWAIT_TIMEOUT)
			fprintf(stderr, "%s: error: timed out after %d s waiting for %s: the destination holds no checkpoint row of this source%s%s%s\n",
					PROG, wo.timeout_s, t, wo.slot ? " and slot \"" : "", wo.slot ? wo.slot : "",
					wo.slot ? "\"" : "");
		else if (!quiet)
			fprintf(stderr, "%s: the checkpoint %s has passed %s\n", PROG, r, t);
	}
	return rc;
}
