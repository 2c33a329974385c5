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

#include "rp_asm.h"
#include "rp_ckpt.h"
#include "rp_decode.h"

typedef enum RpSinkKind
{
	RP_SINK_STATE,				/* a mirror: holds current state, may skip idle WAL */
	RP_SINK_APPEND_LOG			/* a log: every change kept, never idle-advanced */
} RpSinkKind;

typedef enum RpSchemaChange
{
	RP_SCHEMA_NEW,				/* first description of the relation */
	RP_SCHEMA_SAME,				/* described again, nothing that matters changed */
	RP_SCHEMA_ADDITIVE,			/* columns added */
	RP_SCHEMA_DESTRUCTIVE		/* column dropped or renamed, type/typmod, key or identity
								 * changed, table renamed */
} RpSchemaChange;

typedef struct RpDelivery RpDelivery;
typedef struct RpSink RpSink;

/* Where a snapshot chunk belongs (initial copy; see docs/sinks.md). */
typedef struct RpSnapshotCtx
{
	const RpRelation *rel;
	uint64_t	snapshot_lsn;
	bool		first_chunk;
	const char *progress_token;
} RpSnapshotCtx;

struct RpSink
{
	const char *name;
	RpSinkKind	kind;
	bool		owns_checkpoint;
	void	   *priv;

	/* The durable checkpoint: 1 found, 0 none yet, -1 error. */
	int			(*checkpoint) (RpSink *sink, RpCheckpoint *ck);
	/* One committed transaction, then (owns_checkpoint) ck, atomically. */
	int			(*handle_transaction) (RpSink *sink, RpDelivery *dl, RpTxn *txn,
									   const RpCheckpoint *ck);
	/* Optional: several transactions as one unit, ck after the last. */
	int			(*handle_batch) (RpSink *sink, RpDelivery *dl, RpTxn **txns, int n,
								 const RpCheckpoint *ck);
	/* Optional: a non-transactional message (at-least-once). */
	int			(*handle_message) (RpSink *sink, const RpMessage *msg, const RpCheckpoint *ck);
	/* Optional: return 0 to go on, -1 to halt.  Default: halt on destructive. */
	int			(*handle_schema_change) (RpSink *sink, const RpRelation *before,
										 const RpRelation *after, RpSchemaChange change);
	/* Optional (initial snapshot). */
	int			(*handle_snapshot) (RpSink *sink, RpDelivery *dl, const RpSnapshotCtx *ctx);
	int			(*handle_snapshot_complete) (RpSink *sink, uint64_t lsn);
	int			(*snapshot_progress) (RpSink *sink, const RpRelation *rel, char **token);
	/*
	 * Optional, early apply of large streamed transactions (state sinks
	 * that own their checkpoint).  handle_chunk gets a stream block of a
	 * transaction that has not committed: apply it inside the sink's open
	 * unit, commit nothing; return 1 to decline (the transaction then comes
	 * whole at its commit, as usual).  drop_chunks undoes everything applied
	 * that way (it aborted, or another transaction commits first).
	 * handle_chunked_commit: the transaction committed; apply its records
	 * after the first skip_bytes (which the chunks were), then ck, atomically.
	 */
	int			(*handle_chunk) (RpSink *sink, RpDelivery *dl, RpTxn *chunk);
	void		(*drop_chunks) (RpSink *sink);
	int			(*handle_chunked_commit) (RpSink *sink, RpDelivery *dl, RpTxn *txn,
										  uint64_t skip_bytes, const RpCheckpoint *ck);
	/* Optional, owns_checkpoint state sinks: store an idle-advanced ck. */
	int			(*advance) (RpSink *sink, const RpCheckpoint *ck);
	/* Optional: SIGHUP (log rotation). */
	int			(*reopen) (RpSink *sink);
	void		(*close) (RpSink *sink);
};

/* Sinks of this issue; each returns NULL after rp_fail() on error. */
extern RpSink *rp_sink_stdout_open(void);
extern RpSink *rp_sink_file_open(const char *path);
extern RpSink *rp_sink_exec_open(const char *command);
/* rp_sink_pg_open(const RpPgOptions *) is declared in sinks/rp_pg.h */

#endif							/* RP_SINK_H */
