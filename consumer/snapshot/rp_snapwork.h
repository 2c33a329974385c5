/*
 * rp_snapwork.h
 *    The initial snapshot's copy workers (rp_snapwork.c), shared with the
 *    orchestration (rp_snapshot.c): the run's state, one job per table,
 *    and the source sessions.
 */
#ifndef RP_SNAPWORK_H
#define RP_SNAPWORK_H

#include <pthread.h>
#include <stdatomic.h>

#include <libpq-fe.h>

#include "snapshot/rp_snapshot.h"
#include "snapshot/rp_snapsql.h"
#include "snapshot/rp_snaptoken.h"
#include "base/rp_status.h"
#include "base/rp_uuid7.h"

/* One table's copy job. */
typedef struct RpSnapJob
{
	RpSnapTable *t;
	RpSnapToken tok;			/* where it stands (resume), keys owned */
	bool		have_tok;
	bool		heap;			/* read in physical order (tok.heap fields
								 * kept) */
	bool		rewritten;		/* its file is not the one the snapshot names */
	char		snapshot_id[RP_UUID_TEXT_LEN + 1];
	int64_t		at_ms;
	_Atomic uint64_t done_rows; /* for the progress line */
	uint64_t	oversize;		/* oversize stubs of this table's dump
								 * (RpSnapshotCtx) */
	_Atomic int state;			/* 0 queued, 1 copying, 2 done */
} RpSnapJob;

typedef struct RpSnapRun
{
	const RpSnapOptions *opts;
	RpSink	   *sink;
	RpSnapStats *stats;			/* opts->stats, or the run's own */
	RpCheckpoint origin;
	uint64_t	lsn;			/* consistent point */
	int64_t		begun_ms;		/* the source's clock just before a new slot
								 * was created (0: unknown): at or before
								 * every commit the stream brings */
	char		snapname[128];	/* exported snapshot to import */
	uint64_t	xmin;			/* the snapshot's xmin and xmax, full xids */
	uint64_t	xmax;
	RpSnapJob  *jobs;
	int			njobs;
	pthread_mutex_t lock;		/* next, error, and the sink unless parallel */
	int			next;
	_Atomic bool failed;
	char		error[1024];
	RpHalt		halt;
} RpSnapRun;

typedef struct RpSnapWorker
{
	RpSnapRun  *run;
	int			id;
	PGconn	   *conn;
	pthread_t	thread;
	bool		started;
} RpSnapWorker;

/* A -v notice: "PROGNAME: ..." through opts->log_fn, else on stderr. */
extern void rp_snap_say(const RpSnapOptions *o, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* A worker thread: copies jobs until none is left or one failed. */
extern void *rp_snap_worker_main(void *arg);

#endif							/* RP_SNAPWORK_H */
