/*
 * rp_sink.h
 *    The sink API: what a destination implements to receive the stream.
 *    docs/sinks.md is the prose version.
 *
 * A sink is a table of callbacks.  Required: handle_transaction (or
 * handle_batch) and close.  A sink that stores its checkpoint with its
 * data in one atomic step (owns_checkpoint) is effect-once (G1): it gets
 * the checkpoint each unit establishes and returns it from checkpoint() on
 * restart.  Otherwise the library writes its checkpoint file after the
 * sink returns: at-least-once, with at most one unit delivered twice.
 *
 * Callbacks return 0 on success and -1 on failure, after rp_fail() with a
 * value-free message; the run then halts and acknowledges nothing past the
 * last durable unit.  Records are read with a cursor (rp_deliver.h), which
 * also reports schema changes to handle_schema_change first.
 */
#ifndef RP_SINK_H
#define RP_SINK_H

#include <string.h>

#include "stream/rp_asm.h"
#include "base/rp_ckpt.h"
#include "rp_buf.h"
#include "rp_decode.h"

typedef enum RpSchemaChange
{
	RP_SCHEMA_NEW,				/* first description of the relation */
	RP_SCHEMA_SAME,				/* described again, nothing that matters
								 * changed */
	RP_SCHEMA_ADDITIVE,			/* columns added */
	RP_SCHEMA_DESTRUCTIVE		/* column dropped or renamed, type/typmod, key
								 * or identity changed, table renamed */
} RpSchemaChange;

typedef struct RpDelivery RpDelivery;
typedef struct RpSink RpSink;
typedef struct RpBackfill RpBackfill;	/* backfill/rp_backfill.h */
struct pg_conn;					/* libpq's PGconn */

/*
 * A hook on a destination sink's batch, registered by the caller in the
 * sink's environment (the CLI's live aggregates on the mirror).  The sink
 * calls before_commit inside its destination transaction, after it
 * applied the batch's rows and before it writes the checkpoint, with its
 * session (dest) and the commit LSN the destination already held (done:
 * transactions at or below it are there already); after_commit once that
 * transaction committed.  Both return 0, or -1 after rp_fail() (the batch
 * then fails as a whole).  skip_rows: the sink applies no row of the
 * batch itself, only the hook's effects and the checkpoint.  A hook
 * without before_commit is none.
 */
typedef struct RpSinkBatchHook
{
	int			(*before_commit) (void *arg, struct pg_conn *dest, RpDelivery *dl, RpTxn **txns,
								  int n, uint64_t done);
	int			(*after_commit) (void *arg);
	void	   *arg;
	bool		skip_rows;
} RpSinkBatchHook;

/*
 * What a sink is given when it is opened, besides its own options.  The
 * caller owns it and everything it points to: the sink copies the values
 * it keeps into its own state; backfill and the hook's arg must outlive
 * the sink.  The source's identity (system id, timeline, slot) comes with
 * every checkpoint, the completed snapshot's included.  rp_sink_env_init()
 * sets the defaults; a NULL environment means them.
 */
typedef struct RpSinkEnv
{
	/*
	 * log sinks: a snapshot row larger than this is an oversize stub (0: no
	 * limit)
	 */
	size_t		max_record_bytes;
	/* log sinks: how much of an oversize row the dead-letter file keeps */
	size_t		max_dlq_bytes;
	const char *dlq_path;		/* the dead-letter file, or NULL for none */

	/*
	 * log sinks: where a stopped snapshot's progress is kept
	 * (rp_snapresume.h), or NULL
	 */
	const char *snapshot_progress_path;
	/* state sinks: the backfill whose chunks this sink applies, or NULL */
	RpBackfill *backfill;
	RpSinkBatchHook batch_hook;
} RpSinkEnv;

#define RP_SINK_DEFAULT_MAX_DLQ_BYTES (64 * 1024)

static inline void
rp_sink_env_init(RpSinkEnv *env)
{
	memset(env, 0, sizeof(*env));
	env->max_dlq_bytes = RP_SINK_DEFAULT_MAX_DLQ_BYTES;
}

/*
 * One chunk of a table's initial copy (rp_snapshot.h; docs/sinks.md).  The
 * rows come either as a frame of wire records (a Relation record, then one
 * INSERT per row, the same encodings as the stream) or, for a sink that
 * sets snapshot_raw and a table whose binary form is portable, as
 * PostgreSQL binary COPY tuples (no header or trailer) of the table's
 * non-generated columns in column order.  progress_token is stored with
 * the rows (same transaction) and returned by snapshot_progress.
 */
typedef struct RpSnapshotCtx
{
	const RpRelation *rel;
	uint64_t	snapshot_lsn;	/* the slot's consistent point */
	bool		first_chunk;	/* first chunk of this table's copy (not of a
								 * resumed one) */
	const char *progress_token;
	bool		last_chunk;		/* the table is done after this chunk */
	bool		resumed;		/* first chunk of a copy resumed after a stop */
	int			worker;			/* 0..workers-1: the copying thread calling */
	const RpCheckpoint *origin; /* system id, timeline and slot of the source */
	const char *snapshot_id;	/* the table dump's UUIDv7 (envelope) */
	int64_t		snapshot_at_ms; /* when the snapshot was taken */
	int64_t		total;			/* row estimate, -1 unknown */
	uint64_t	first_seq;		/* rows of the table stored before this chunk */
	uint64_t	nrows;			/* rows in this chunk */
	bool		may_repeat;		/* rows may be stored already (a resumed
								 * heap-order copy): store them by key, as
								 * upserts */
	const unsigned char *frame; /* records: 'R' version, Relation, INSERT... */
	size_t		frame_len;
	const unsigned char *copy_data; /* raw: binary COPY tuples */
	size_t		copy_len;
	uint64_t   *oversize;		/* the table's count of oversize stubs
								 * (RP_COUNT_ADD), or NULL */
	uint64_t   *dropped;		/* the run's count of oversize rows dropped
								 * for want of a dead-letter file
								 * (RP_COUNT_ADD), or NULL */
} RpSnapshotCtx;

struct RpSink
{
	const char *name;
	bool		owns_checkpoint;
	void	   *priv;

	/*
	 * The consumer's memory budget (--max-memory), set by the caller before
	 * the stream starts (NULL before, and in tools that run no stream): a
	 * sink that holds working state across records charges it there
	 * (rp_spill_charge) and keeps within its share.
	 */
	RpSpill    *spill;

	/* The durable checkpoint: 1 found, 0 none yet, -1 error. */
	int			(*checkpoint) (RpSink *sink, RpCheckpoint *ck);
	/* One committed transaction, then (owns_checkpoint) ck, atomically. */
	int			(*handle_transaction) (RpSink *sink, RpDelivery *dl, RpTxn *txn,
									   const RpCheckpoint *ck);
	/* Optional: several transactions as one unit, ck after the last. */
	int			(*handle_batch) (RpSink *sink, RpDelivery *dl, RpTxn **txns, int n,
								 const RpCheckpoint *ck);

	/*
	 * A non-transactional message (at-least-once).  A sink that takes none
	 * says so with declines_messages (its messages are then passed and their
	 * position acknowledged); one with neither is refused at start while
	 * messages are enabled (rp_deliver_check_sink), and halts on a message.
	 */
	int			(*handle_message) (RpSink *sink, const RpMessage *msg, const RpCheckpoint *ck);
	bool		declines_messages;

	/*
	 * The run records the stream's start as the first checkpoint before the
	 * first delivery when there is none (the origin floor of an append log:
	 * run/rp_run_step.c).
	 */
	bool		keeps_floor;

	/* Optional: return 0 to go on, -1 to halt.  Default: halt on destructive. */
	int			(*handle_schema_change) (RpSink *sink, const RpRelation *before,
										 const RpRelation *after, RpSchemaChange change);

	/*
	 * Optional (initial snapshot, rp_snapshot.h).  handle_snapshot: one
	 * chunk; handle_snapshot_complete: every table copied, set the checkpoint
	 * to ck, the consistent point (end_lsn; transactions committing at or
	 * after it are the stream's, commit_lsn is just below it) with the
	 * source's system id, timeline and slot, and retire what the snapshot did
	 * not see; snapshot_progress: the last token stored for rel (1, *token
	 * the caller frees), 0 none, -1 error.  With snapshot_parallel, chunks
	 * come from several threads at once (ctx->worker tells them apart; dl is
	 * then not to be touched); otherwise one at a time.
	 */
	int			(*handle_snapshot) (RpSink *sink, RpDelivery *dl, const RpSnapshotCtx *ctx);
	int			(*handle_snapshot_complete) (RpSink *sink, const RpCheckpoint *ck);
	int			(*snapshot_progress) (RpSink *sink, const RpRelation *rel, char **token);
	bool		snapshot_raw;	/* takes binary COPY tuples when portable */
	bool		snapshot_parallel;

	/*
	 * Keyed tables may be read in physical order (cheaper than key order) for
	 * this sink: it honours may_repeat.  Log sinks leave it unset, so a
	 * resumed dump still holds each row once.
	 */
	bool		snapshot_heap_order;

	/*
	 * Optional, early apply of large streamed transactions (state sinks that
	 * own their checkpoint).  handle_chunk gets a stream block of a
	 * transaction that has not committed: apply it inside the sink's open
	 * unit, commit nothing; return 1 to decline (the transaction then comes
	 * whole at its commit, as usual).  drop_chunks undoes everything applied
	 * that way (it aborted, or another transaction commits first).
	 * handle_chunked_commit: the transaction committed; apply its records
	 * after the first skip_bytes (which the chunks were), then ck,
	 * atomically.
	 */
	int			(*handle_chunk) (RpSink *sink, RpDelivery *dl, RpTxn *chunk);
	void		(*drop_chunks) (RpSink *sink);
	int			(*handle_chunked_commit) (RpSink *sink, RpDelivery *dl, RpTxn *txn,
										  uint64_t skip_bytes, const RpCheckpoint *ck);

	/*
	 * Optional, owns_checkpoint sinks: record an idle-advanced ck where the
	 * sink's restart reads it (without it such a sink never moves on idle;
	 * the library's file records it for the others).
	 */
	int			(*advance) (RpSink *sink, const RpCheckpoint *ck);
	/* Optional: SIGHUP (log rotation). */
	int			(*reopen) (RpSink *sink);

	/*
	 * Optional, thread-safe: called from another thread, repeatedly, while a
	 * stop (SIGINT, SIGTERM) waits for the sink's step in hand: make a wait
	 * on something outside the consumer (a destination query) end soon, as a
	 * failure.  Sinks whose waits look at rp_stop_requested() need none.
	 */
	void		(*interrupt) (RpSink *sink);

	/*
	 * Optional: the sink's own samples for the metrics page, appended to out
	 * with rp_metrics_sample (base/rp_metrics.h).  Called from the page's
	 * thread while the sink is open, so it reads only what is safe to read
	 * there (RP_COUNT_LOAD counters, state under its own lock). The program
	 * registers this one callback whatever the sink, so it never reaches into
	 * a sink's internals for its figures.
	 */
	void		(*metrics) (const RpSink *sink, RpBuf *out);
	void		(*close) (RpSink *sink);
};

/*
 * The sinks' constructors live with each sink: the log sinks in
 * sinks/log/rp_logsink.h, the mirror in sinks/mirror/rp_mirror.h, NATS in
 * sinks/nats/rp_nats.h.  This header is the API alone, so that the core
 * (stream/) that calls a sink never depends on one.
 */

#endif							/* RP_SINK_H */
