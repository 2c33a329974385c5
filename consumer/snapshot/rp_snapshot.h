/*
 * rp_snapshot.h
 *    The initial snapshot: copy every selected table consistently with the
 *    stream, in parallel and resumably, into a sink.
 *
 * A fresh snapshot creates the slot with an exported snapshot on a
 * replication connection that stays open (idle) until the copy is done;
 * N worker threads each open a session, import that snapshot (REPEATABLE
 * READ, SET TRANSACTION SNAPSHOT) and copy whole tables, largest first,
 * in primary-key order with one binary COPY per table, cut into chunks.
 * Every chunk goes to the sink with a progress token that the sink stores
 * with the rows.  When every table is done, handle_snapshot_complete()
 * gets the snapshot's checkpoint (the slot's consistent point and the
 * source's system id, timeline and slot) and sets it; the stream starts
 * there.
 *
 * A copy that stopped (kill -9, lost connection) is resumed by the same
 * command: the sink's tokens say where each table stopped and at which
 * consistent point; the rest is copied under a new snapshot and the
 * stream from the original consistent point reconciles it (docs/
 * guarantees.md has the argument).  A log sink keeps only the consistent
 * point and the tables done (sinks/log/rp_snapresume.h): a token of its
 * with no snapshot_id, rows or key has its table copied again whole, as a
 * new dump.
 */
#ifndef RP_SNAPSHOT_H
#define RP_SNAPSHOT_H

#include "base/rp_event.h"
#include "base/rp_ckpt.h"
#include "stream/rp_sink.h"
#include "snapshot/rp_snapcat.h"

/*
 * What a snapshot run counts (value-free), for the metrics page: the
 * caller's (RpSnapOptions.stats), zeroed by it, final when the run
 * returns.  The copying threads add with relaxed atomics (rp_counter.h);
 * stores is appended under the run's lock and read only after the run.
 */
typedef struct RpSnapStats
{
	uint64_t	tables_complete;
	uint64_t	tables_aborted;
	uint64_t	rows;
	uint64_t	chunks;
	uint64_t	oversize;		/* oversize stubs written by the log sinks
								 * (through RpSnapshotCtx.oversize), added
								 * when each table's dump ends */
	uint64_t	dlq_dropped;	/* of those, rows dropped: no dead-letter file */
	/* per table: "schema.table", its status (complete, aborted), its stubs */
	int			nstores;
	char	  **stores;
	bool	   *complete;
	uint64_t   *store_oversize;
} RpSnapStats;

/* Free the per-table lists (the counters stay). */
extern void rp_snap_stats_free(RpSnapStats *st);

/*
 * One table's copy as the progress callback sees it (value-free: a
 * relation, counts).  Tables a resumed copy had finished are not listed.
 */
typedef struct RpSnapTableProgress
{
	const RpRelation *rel;
	uint64_t	done;			/* rows copied by this run */
	int64_t		estimate;		/* pg_class.reltuples, -1 unknown */
	int			state;			/* 0 queued, 1 copying, 2 done */
} RpSnapTableProgress;

/* Called on the thread that runs the snapshot, every 200 ms and once at the end (final). */
typedef void (*RpSnapProgressFn) (void *arg, const RpSnapTableProgress *tables, int n, bool final);

typedef struct RpSnapOptions
{
	const char *conninfo;		/* the source (a plain session is opened from
								 * it) */
	const char *slot;
	const char *progname;
	RpSnapSelect select;		/* the plugin's include_tables /
								 * exclude_tables */
	int			workers;		/* parallel copy sessions */
	uint64_t	chunk_rows;		/* rows per chunk */
	uint64_t	chunk_bytes;	/* bytes per chunk */
	bool		create_slot;	/* a fresh snapshot may create the slot */
	bool		failover;		/* ... as a failover slot (17+) */
	bool		progress;		/* progress line when stderr is a terminal */
	RpSnapProgressFn progress_fn;	/* instead of the line: the figures (the
									 * program's display) */
	void	   *progress_arg;
	void		(*log_fn) (const char *line);	/* -v notices (a line, no
												 * newline); NULL: stderr */
	int			verbose;
	RpSnapStats *stats;			/* where the run counts (the caller's), or
								 * NULL */

	/*
	 * SNAPSHOT_CHUNK (from the copy workers, at once: fn must be
	 * thread-safe), SNAPSHOT_COMPLETE
	 */
	RpEventHook events;
} RpSnapOptions;

/*
 * Copy or resume.  1: done, ck holds the consistent point (commit_lsn just
 * below it, end_lsn at it) and the source's identity, as the sink's
 * handle_snapshot_complete got it; 0: the sink already holds a checkpoint,
 * nothing to copy; -1: error (rp_error()).
 */
extern int	rp_snapshot_run(const RpSnapOptions *opts, RpSink *sink, RpCheckpoint *ck);

#endif							/* RP_SNAPSHOT_H */
