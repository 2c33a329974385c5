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
#include "snapshot/rp_snaptoken.h"
#include "base/rp_status.h"
#include "envelope/rp_uuid7.h"

/* One table's copy job. */
typedef struct RpSnapJob
{
	RpSnapTable *t;
	RpSnapToken tok;			/* where it stands (resume), keys owned */
	bool		have_tok;
	bool		heap;			/* read in physical order (tok.heap fields kept) */
	char		snapshot_id[RP_UUID_TEXT_LEN + 1];
	int64_t		at_ms;
	_Atomic uint64_t done_rows;	/* for the progress line */
	_Atomic int state;			/* 0 queued, 1 copying, 2 done */
} RpSnapJob;

typedef struct RpSnapRun
{
	const RpSnapOptions *opts;
	RpSink	   *sink;
	RpCheckpoint origin;
	uint64_t	lsn;			/* consistent point */
	char		snapname[128];	/* exported snapshot to import */
	uint64_t	xmin;			/* the snapshot's xmin and xmax, full xids */
	uint64_t	xmax;
	RpSnapStats *stats;			/* opts->stats, or the run's own */
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

/* A source session with the output settings pinned (G6); NULL after rp_fail(). */
extern PGconn *rp_snap_connect(const RpSnapOptions *o);
/* Run sql; -1 after a value-free rp_fail() naming what (and the table). */
/* A quoted identifier (PQescapeIdentifier) appended to b. */
extern void rp_snap_put_ident(RpBuf *b, PGconn *conn, const char *name);
/*
 * " FROM ONLY schema.table AS rp_t [WHERE (key) > (...)] ORDER BY key": t's rows after a
 * stored key (after), in key order.  The stored key is read from the session settings
 * SETTINGS.k1, .k2 ... (set with set_config from parameters), so no value is in SQL text.
 */
extern void rp_snap_sql_after(RpBuf *sql, PGconn *conn, const RpSnapTable *t, const char *settings,
							  bool after);
extern int	rp_snap_exec(PGconn *conn, const char *sql, const char *what, const RpSnapTable *t);
extern int	rp_snap_fail_res(PGresult *res, const char *what, const RpSnapTable *t);
/* BEGIN REPEATABLE READ and import the exported snapshot snapname. */
extern int	rp_snap_import(PGconn *conn, const char *snapname);
/* A worker thread: copies jobs until none is left or one failed. */
extern void *rp_snap_worker_main(void *arg);

#endif							/* RP_SNAPWORK_H */
