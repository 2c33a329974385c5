/*
 * rp_backfill.h
 *    Backfill a table added to the selection later, while the stream keeps
 *    running (the DBLog method; docs/operations.md, docs/guarantees.md).
 *
 * A thread on a plain source session copies each --backfill table in
 * primary-key order, one chunk at a time.  For chunk k it commits a low
 * watermark (a transactional logical message, rp_bfmsg.h), reads the
 * chunk, hands it to the sink here, and commits a high watermark.  The
 * sink sees both watermarks inside the stream in commit order: between
 * them it remembers every key of the table that the stream changes (the
 * window), and at the high watermark it applies the chunk's rows less
 * those keys (the stream's version wins), storing the chunk's progress
 * token in the same destination transaction.  The thread waits until the
 * sink has committed chunk k before it starts chunk k+1, so at most one
 * chunk is in flight.
 *
 * The caller (the CLI) creates the handle, gives it to the sink in its
 * environment (RpSinkEnv.backfill, stream/rp_sink.h) and starts the thread
 * once the sink is open.  The sink side is the mirror sink's
 * (sinks/mirror/rp_mirror_backfill.c); the hand-off below is
 * sink-agnostic.
 */
#ifndef RP_BACKFILL_H
#define RP_BACKFILL_H

#include <stdbool.h>
#include <stdint.h>

#include "backfill/rp_bfmsg.h"
#include "rp_buf.h"
#include "rp_decode.h"

typedef struct RpBackfillOptions
{
	const char *conninfo;		/* the source */
	const char *progname;
	void		(*log_fn) (const char *line);	/* its notices (a line, no
												 * newline); NULL: stderr */
	char	  **tables;			/* "schema.table", copied in this order */
	int			ntables;
	const char *include;		/* the plugin's include_tables /
								 * exclude_tables */
	const char *exclude;
	bool		via_root;		/* the plugin's partitions=root */
	uint64_t	chunk_rows;

	/*
	 * The sink's stored token of relid: 1 (*token, caller frees), 0 none, -1
	 * error.
	 */
	int			(*progress) (void *arg, uint32_t relid, char **token);
	void	   *progress_arg;
	bool		verbose;
} RpBackfillOptions;

/*
 * One chunk, owned by the backfill thread; the sink reads it between
 * rp_backfill_take() and rp_backfill_release().
 */
typedef struct RpBackfillChunk
{
	RpBfMsg		id;				/* run, relid, chunk number (mark: high) */
	const RpRelation *rel;		/* the table as the plugin describes it */
	const int  *keycols;		/* primary key: indexes into rel->cols */
	int			nkey;
	RpBuf		rows;			/* COPY text lines of rel's non-generated
								 * columns */
	uint64_t	nrows;
	char	   *token;			/* progress after this chunk (rp_snaptoken.h) */
	bool		last;			/* the table is done once this chunk is stored */
} RpBackfillChunk;

/* One backfill, not started; the caller frees it with rp_backfill_free(). */
typedef struct RpBackfill RpBackfill;

extern RpBackfill *rp_backfill_new(void);

/* Stops the thread first (NULL: nothing). */
extern void rp_backfill_free(RpBackfill *bf);

/* Start the thread; -1 after rp_fail() (nothing started). */
extern int	rp_backfill_start(RpBackfill *bf, const RpBackfillOptions *opts);

/* Ask the thread to stop and wait for it (no-op when none runs, or bf NULL). */
extern void rp_backfill_stop(RpBackfill *bf);

/* ---- the sink's side -------------------------------------------------------- */

/* Is bf's thread running (false for NULL)? */
extern bool rp_backfill_running(const RpBackfill *bf);

/* The run of bf ("" when none runs). */
extern const char *rp_backfill_run_id(const RpBackfill *bf);

/*
 * At a high watermark: the chunk it closes, or NULL when it is not the
 * chunk in flight (another run's watermark, replayed, or already stored).
 */
extern RpBackfillChunk *rp_backfill_take(RpBackfill *bf, const RpBfMsg *high);

/*
 * The destination transaction that applied ch committed (stored) or rolled
 * back (not stored: the stream's replay brings the high watermark again).
 */
extern void rp_backfill_release(RpBackfill *bf, RpBackfillChunk *ch, bool stored);

#endif							/* RP_BACKFILL_H */
