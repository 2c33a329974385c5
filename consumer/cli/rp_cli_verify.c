/*
 * rp_cli_verify.c
 *    replicant verify-snapshot [--rows ID | --latest-rows STORE] [--latest] [--quiet] FILE...
 *    (see rp_cli.h, rp_reassemble.h and docs/sinks.md).
 */
#include "rp_alloc.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "envelope/rp_reassemble.h"
#include "base/rp_status.h"
#include "cli/rp_cli.h"

#define PROG "replicant verify-snapshot"
#define MAX_WARNINGS 10

static void
verify_usage(FILE *f)
{
	fprintf(f,
			"%s reassembles the snapshot envelopes (begin, row, oversize, end frames)\n"
			"found in JSON-lines files written by the stdout, file or exec sinks, and tells\n"
			"each dump complete, truncated, open or conflicting.\n\n"
			"Usage:\n  %s [OPTION]... FILE...\n\n"
			"Frames may be in any order, repeated, spread over several files and mixed\n"
			"with other lines (changes, checkpoints), which are ignored.  FILEs must be\n"
			"regular files: they are read again for repeated frames and for --rows.\n\n"
			"Options:\n"
			"      --rows ID     print snapshot ID's \"record\" objects in seq order, one per\n"
			"                    line (oversize stubs left out); only for a complete snapshot\n"
			"      --latest      per table (store), report only its newest complete dump, if\n"
			"                    it has one: a resumed snapshot leaves the dump that stopped\n"
			"                    open and writes a new one later (the exit status then comes\n"
			"                    from the lines reported)\n"
			"      --latest-rows STORE\n"
			"                    like --rows, for the newest complete dump of STORE\n"
			"                    (\"schema.table\"): what a rebuild from the log loads\n"
			"  -q, --quiet       report only the snapshots that are not complete\n"
			"  -?, --help        show this help, then exit\n\n"
			"Output, one line per snapshot_id (without --rows):\n"
			"  ID STORE complete rows=N\n"
			"  ID STORE truncated rows=N missing=K (first missing seq S)\n"
			"  ID STORE open rows_seen=N\n"
			"  ID STORE conflict seq=S\n\n"
			"Exit status:\n"
			"  0  every snapshot is complete (with --rows: ID is, and its rows were written)\n"
			"  1  I/O error: a file could not be read, or the rows could not be written\n"
			"  2  usage error\n"
			"  4  a snapshot is truncated (a seq missing) or conflicting (frames disagree)\n"
			"  5  a snapshot is open (no end frame) and none is truncated or conflicting;\n"
			"     also when no snapshot frame was found (with --rows: no frame of ID)\n",
			PROG, PROG);
}

typedef struct VerifyWarn
{
	uint64_t	shown;
	bool		quiet;
} VerifyWarn;

static void
verify_warn(void *arg, const char *msg)
{
	VerifyWarn *w = arg;

	if (w->quiet || w->shown >= MAX_WARNINGS)
		return;
	w->shown++;
	fprintf(stderr, "%s: warning: %s\n", PROG, msg);
}

static int
status_of(RpSnapState s)
{
	switch (s)
	{
		case RP_SNAP_COMPLETE:
			return RP_EXIT_OK;
		case RP_SNAP_TRUNCATED:
		case RP_SNAP_CONFLICT:
			return RP_VERIFY_EXIT_TRUNCATED;
		case RP_SNAP_OPEN:
			return RP_VERIFY_EXIT_OPEN;
	}
	return RP_EXIT_ERROR;
}

/* A usage error: "PROG: error: ...", then the --help hint; exit 2. */
/* usage errors: "PROG: error: ...", then the --help hint */
#define verify_usage_error(...) rp_cli_sub_usage_error(PROG, __VA_ARGS__)

/* --rows ID: the rows of a complete snapshot on stdout; the exit status. */
static int
verify_rows(RpReasm *r, const char *rows_id, RpBuf *line)
{
	const RpSnapReport *rep = rp_reasm_find(r, rows_id);

	if (rep == NULL)
	{
		fprintf(stderr, "%s: no frame of snapshot %s in the input\n", PROG, rows_id);
		return RP_VERIFY_EXIT_OPEN;
	}
	if (rep->state != RP_SNAP_COMPLETE)
	{
		rp_reasm_format(rep, line);
		fprintf(stderr, "%s: not complete: %.*s\n", PROG, (int) line->len, line->data);
		return status_of(rep->state);
	}
	if (rp_reasm_write_rows(r, stdout) < 0)
	{
		fprintf(stderr, "%s: %s\n", PROG, rp_error());
		return RP_EXIT_ERROR;
	}
	return RP_EXIT_OK;
}

/*
 * One line per snapshot on stdout (--quiet: the incomplete ones; --latest:
 * not those superseded by a later complete dump of their table, nor the
 * older complete ones); the exit status.
 */
static int
verify_report(RpReasm *r, bool quiet, bool latest, RpBuf *line)
{
	size_t		n = rp_reasm_count(r);
	int			status = RP_EXIT_OK;

	if (n == 0)
	{
		fprintf(stderr, "%s: no snapshot frame in the input\n", PROG);
		status = RP_VERIFY_EXIT_OPEN;
	}
	for (size_t i = 0; i < n; i++)
	{
		const RpSnapReport *rep = rp_reasm_get(r, i);
		int			st = status_of(rep->state);

		if (latest && rep->store &&
			(rp_reasm_superseded(r, rep) ||
			 (rep->state == RP_SNAP_COMPLETE && rp_reasm_newest_complete(r, rep->store) != rep)))
			continue;

		if (st == RP_VERIFY_EXIT_TRUNCATED ||
			(st == RP_VERIFY_EXIT_OPEN && status == RP_EXIT_OK))
			status = st;
		if (quiet && rep->state == RP_SNAP_COMPLETE)
			continue;
		rp_buf_reset(line);
		rp_reasm_format(rep, line);
		rp_buf_put_char(line, '\n');
		fwrite(line->data, 1, line->len, stdout);
	}
	if (fflush(stdout) != 0)
	{
		fprintf(stderr, "%s: could not write the report\n", PROG);
		status = RP_EXIT_ERROR;
	}
	return status;
}

/*
 * --latest-rows STORE: a first pass finds the newest complete dump of
 * STORE (its id into id); the second then keeps its rows.  RP_EXIT_OK, or
 * the exit status after the message.
 */
static int
newest_dump(char **files, int nfiles, const char *store, char id[RP_UUID_TEXT_LEN + 1])
{
	const RpSnapReport *rep;
	RpReasm    *r = rp_reasm_new();

	if (rp_reasm_run(r, (const char *const *) files, nfiles) < 0)
	{
		fprintf(stderr, "%s: %s\n", PROG, rp_error());
		rp_reasm_free(r);
		return RP_EXIT_ERROR;
	}
	rep = rp_reasm_newest_complete(r, store);
	if (rep == NULL)
	{
		fprintf(stderr, "%s: no complete dump of %s in the input\n", PROG, store);
		rp_reasm_free(r);
		return RP_VERIFY_EXIT_OPEN;
	}
	snprintf(id, RP_UUID_TEXT_LEN + 1, "%s", rep->id);
	rp_reasm_free(r);
	return RP_EXIT_OK;
}

int
rp_verify_snapshot_main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"rows", required_argument, NULL, 'r'},
		{"quiet", no_argument, NULL, 'q'},
		{"latest", no_argument, NULL, 'l'},
		{"latest-rows", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *rows_id = NULL;
	const char *rows_store = NULL;
	char		store_id[RP_UUID_TEXT_LEN + 1];
	bool		quiet = false;
	bool		latest = false;
	int			c;
	int			status;
	RpReasm    *r;
	VerifyWarn	warn = {0, false};
	RpBuf		line;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "q?", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'r':
				rows_id = optarg;
				break;
			case 'q':
				quiet = true;
				break;
			case 'l':
				latest = true;
				break;
			case 'L':
				rows_store = optarg;
				break;
			case 'h':
				verify_usage(stdout);
				return RP_EXIT_OK;
			case '?':
				if (strcmp(argv[optind - 1], "-?") == 0)
				{
					verify_usage(stdout);
					return RP_EXIT_OK;
				}
				return verify_usage_error("unknown option or missing argument: %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return verify_usage_error("no input file");
	if (rows_id && rows_store)
		return verify_usage_error("--rows and --latest-rows exclude each other");
	if (rows_store && (status = newest_dump(argv + optind, argc - optind, rows_store, store_id)) != RP_EXIT_OK)
		return status;
	if (rows_store)
		rows_id = store_id;

	r = rp_reasm_new();
	warn.quiet = quiet;
	rp_reasm_set_warn(r, verify_warn, &warn);
	if (rows_id && rp_reasm_keep_rows(r, rows_id) < 0)
	{
		rp_reasm_free(r);
		return verify_usage_error("--rows: %s", rp_error());
	}
	if (rp_reasm_run(r, (const char *const *) argv + optind, argc - optind) < 0)
	{
		fprintf(stderr, "%s: %s\n", PROG, rp_error());
		rp_reasm_free(r);
		return RP_EXIT_ERROR;
	}
	if (rp_reasm_skipped(r) > 0)
		fprintf(stderr, "%s: warning: %" PRIu64 " malformed line%s skipped%s\n", PROG,
				rp_reasm_skipped(r), rp_reasm_skipped(r) == 1 ? "" : "s",
				rp_reasm_skipped(r) > warn.shown && !quiet ? " (the first ones are listed above)" : "");

	rp_buf_init(&line, 256);
	status = rows_id ? verify_rows(r, rows_id, &line) : verify_report(r, quiet, latest, &line);
	rp_buf_free(&line);
	rp_reasm_free(r);
	return status;
}
