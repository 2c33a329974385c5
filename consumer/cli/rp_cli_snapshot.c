/*
 * rp_cli_snapshot.c
 *    The copies the program starts beside the stream: --snapshot before
 *    it (rp_snapshot.h), --backfill while it runs (rp_backfill.h).  Both
 *    take the tables the plugin options select.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backfill/rp_backfill.h"
#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_progress.h"
#include "migrate/rp_seqsync.h"
#include "sinks/mirror/rp_mirror.h"
#include "snapshot/rp_snapshot.h"
#include "base/rp_ckpt.h"

static const char *const progname = RP_CLI_PROGNAME;

/*
 * After a completed snapshot into the mirror, the destination's sequences
 * are brought up to the source's (rp_seqsync.h), so that the copy is
 * usable as it is.  The positions are read after the copy, so they are at
 * least those of the copied rows.  A failure is a warning: the mirror
 * streams on, and `replicant sync-sequences` does the same later.
 */
static void
rp_cli_snapshot_sequences(const RpCli *cli)
{
	RpSeqSyncOptions so;
	RpSeqSyncStats st;

	memset(&so, 0, sizeof(so));
	so.src_conninfo = cli->dbname;
	so.dst_conninfo = cli->pg.conninfo;
	so.select.include = rp_cli_plugin_option(cli, "include_tables");
	so.select.exclude = rp_cli_plugin_option(cli, "exclude_tables");
	so.select.via_root = rp_cli_partitions_root(cli);
	so.schema_prefix = cli->pg.schema_prefix;
	so.bookkeeping_schema = cli->pg.bookkeeping_schema;
	so.create = cli->pg.create_tables;
	so.verbose = cli->verbose > 1;
	so.progname = progname;
	if (rp_seqsync_run(&so, &st) < 0)
	{
		fprintf(stderr, "%s: warning: the sequences were not synced after the snapshot (run replicant sync-sequences): %s\n",
				progname, rp_error());
		rp_error_clear();
		return;
	}
	pg_log_info("sequences synced after the snapshot: %d selected, %d advanced, %d created, %d missing",
				st.selected, st.advanced, st.created, st.missing);
}

/*
 * --snapshot: copy (or finish copying) the selected tables before the
 * stream starts; the sink's checkpoint is then the consistent point.  A
 * sink that already holds a checkpoint has its snapshot: nothing to do.
 */
int
rp_cli_snapshot(RpCli *cli, RpSink *sink, const char *ckpt_path, RpSnapStats *stats,
				struct RpCliProgress *progress, const RpEventHook *events)
{
	RpSnapOptions so;
	RpCheckpoint ck;
	int			rc;

	if (!sink->owns_checkpoint)
	{
		rc = rp_ckpt_read(ckpt_path, &ck);
		if (rc > 0)
			return rp_cli_snapshot_progress_clear(cli);
		if (rc != 0)
			return -1;
	}
	memset(&so, 0, sizeof(so));
	so.conninfo = cli->dbname;
	so.slot = cli->slot;
	so.progname = progname;
	so.select.include = rp_cli_plugin_option(cli, "include_tables");
	so.select.exclude = rp_cli_plugin_option(cli, "exclude_tables");
	so.select.via_root = rp_cli_partitions_root(cli);
	so.workers = cli->snapshot_workers;
	so.chunk_rows = cli->snapshot_chunk_rows;
	so.chunk_bytes = (uint64_t) 64 << 20;
	so.create_slot = cli->create_slot;
	so.failover = cli->failover;
	so.progress = !cli->no_progress;	/* shown when stderr is a terminal */

	/*
	 * the program's display: per-table lines, and the figures for the metrics
	 * page
	 */
	so.progress_fn = rp_cli_progress_snapshot;
	so.progress_arg = progress;

	so.log_fn = rp_cli_log_line;
	so.verbose = cli->verbose;
	so.stats = stats;
	so.events = *events;		/* "snapshot complete" is said by the
								 * subscriber */
	rc = rp_snapshot_run(&so, sink, &ck);
	if (rc < 0)
		return -1;

	/*
	 * the sink holds its checkpoint: a progress file left by a crash is done
	 * with
	 */
	if (rc == 0)
		return rp_cli_snapshot_progress_clear(cli);
	if (rc > 0)
	{
		if (!sink->owns_checkpoint && rp_ckpt_write(ckpt_path, &ck) < 0)
			return -1;

		/*
		 * the checkpoint is durable: a log sink's snapshot progress is done
		 * with
		 */
		if (rp_cli_snapshot_progress_clear(cli) < 0)
			return -1;
		if (cli->pg.conninfo && cli->pg.slot)
			rp_cli_snapshot_sequences(cli);
	}
	return 0;
}

void
rp_cli_snapshot_progress_path(const RpCli *cli, char *path, size_t len)
{
	snprintf(path, len, "%s/%s.snapshot", cli->state_dir, cli->slot);
}

/* Remove the log sinks' snapshot progress file (rp_snapresume.h), if any. */
int
rp_cli_snapshot_progress_clear(const RpCli *cli)
{
	char		path[4096];

	rp_cli_snapshot_progress_path(cli, path, sizeof(path));
	if (unlink(path) != 0 && errno != ENOENT)
		return rp_fail(RP_HALT_NONE, "could not remove \"%s\": %s", path, strerror(errno));
	return 0;
}

int
rp_cli_backfill_start(RpCli *cli, RpSink *sink)
{
	RpBackfillOptions bo;

	memset(&bo, 0, sizeof(bo));
	bo.conninfo = cli->dbname;
	bo.progname = progname;
	bo.log_fn = rp_cli_log_line;
	bo.tables = cli->backfill;
	bo.ntables = cli->nbackfill;
	bo.include = rp_cli_plugin_option(cli, "include_tables");
	bo.exclude = rp_cli_plugin_option(cli, "exclude_tables");
	bo.via_root = rp_cli_partitions_root(cli);
	bo.chunk_rows = cli->backfill_chunk_rows;
	bo.progress = rp_mirror_backfill_progress;
	bo.progress_arg = sink;
	bo.verbose = cli->verbose > 0;
	return rp_backfill_start(cli->backfill_run, &bo);
}
