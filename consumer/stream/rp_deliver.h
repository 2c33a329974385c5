/*
 * rp_deliver.h
 *    Delivery: completed transactions and messages from the assembler to
 *    the sink, in commit order, grouped into batches (N transactions, B
 *    bytes or T ms, whichever first; a message or a schema change ends a
 *    batch), with the checkpoint advanced only after the sink returns.
 */
#ifndef RP_DELIVER_H
#define RP_DELIVER_H

#include "base/rp_counter.h"
#include "base/rp_event.h"
#include "stream/rp_sink.h"
#include "stream/rp_cursor.h"
#include "stream/rp_schemadiff.h"

typedef struct RpBatchLimits
{
	int			max_txns;
	uint64_t	max_bytes;
	int			max_ms;
} RpBatchLimits;

/*
 * Telemetry (value-free).  The delivery thread adds to them; the progress
 * line and the metrics thread read them (rp_counter.h).  A run keeps them
 * outside its RpDelivery (rp_deliver_count_into), for the process's life:
 * a delivery started over after a lost destination goes on counting, so a
 * counter never goes backwards.  txns, changes, batches, schema_changes and
 * checkpoint_lsn come from the delivery's events (rp_dl_count_event): with
 * no hook set, the delivery counts its own events into them; a subscriber
 * set with rp_deliver_set_events counts by calling rp_dl_count_event.
 */
typedef struct RpDlCounters
{
	uint64_t	txns;
	uint64_t	changes;
	uint64_t	batches;
	uint64_t	messages;
	uint64_t	schema_changes;
	uint64_t	early_chunks;
	uint64_t	early_commits;
	uint64_t	early_drops;
	uint64_t	checkpoint_lsn; /* gauge: end LSN of the last durable unit */
} RpDlCounters;

struct RpDelivery
{
	RpSink	   *sink;
	RpDecoder	dec;			/* relations as the sink has seen them */
	RpCheckpoint ck;			/* durable */
	const char *ckpt_path;		/* library-owned checkpoint file, or NULL */
	const char *view_path;		/* relations as last durably delivered */
	RpBuf		view;			/* their Relation records, concatenated */
	bool		view_dirty;
	RpBatchLimits limits;
	RpTxn	  **batch;
	int			nbatch;
	uint64_t	batch_bytes;
	int64_t		batch_started_ms;
	/* called by sinks while they wait, so status updates keep flowing */
	void		(*idle_hook) (void *arg);
	void	   *idle_arg;

	/*
	 * early apply (RpSink.handle_chunk): the transaction whose chunks the
	 * sink holds
	 */
	uint32_t	early_xid;		/* 0: none */
	uint64_t	early_bytes;	/* its store bytes the chunks covered */
	uint32_t	early_refused;	/* declined or dropped: its later chunks are
								 * ignored */
	RpDlCounters *count;		/* own_count unless rp_deliver_count_into */
	RpDlCounters own_count;
	RpEventHook events;			/* the subscriber (rp_deliver_set_events) */
	uint64_t	nbatches;		/* batches delivered (the pipe's, its thread
								 * only) */
};

/*
 * ckpt_path: the library-owned checkpoint file (NULL when the sink owns
 * it); view_path: where the relations the sink has seen are kept across
 * restarts, so a schema change is still detected after a crash.
 */
extern int	rp_deliver_init(RpDelivery *dl, RpSink *sink, const RpCheckpoint *ck,
							const char *ckpt_path, const char *view_path,
							const RpBatchLimits *limits);
extern void rp_deliver_free(RpDelivery *dl);

/* Count into c (the run's, kept across deliveries) from now on. */
extern void rp_deliver_count_into(RpDelivery *dl, RpDlCounters *c);

/*
 * The delivery's events (batch committed or failed, checkpoint stored or
 * failed, schema change) go to hook from now on, instead of being counted
 * into dl->count: the subscriber calls rp_dl_count_event itself if it
 * wants the counters (the command line does, for its metrics page).
 */
extern void rp_deliver_set_events(RpDelivery *dl, const RpEventHook *hook);

/* What an event adds to the counters (atomic: other threads read them). */
extern void rp_dl_count_event(RpDlCounters *c, const RpEvent *ev);

/* Emit one delivery event (the slot filled in); the cursor's schema changes too. */
extern void rp_deliver_emit(RpDelivery *dl, RpEvent *ev);

/*
 * Can this sink be given the stream (messages: the source sends logical
 * messages)?  0, or -1 after rp_fail(RP_HALT_CONFIG) naming the missing
 * callback: a sink with no handle_message must set declines_messages.
 */
extern int	rp_deliver_check_sink(const RpSink *sink, bool messages);

/* Take one assembled item (ownership passes); may deliver a batch. */
extern int	rp_deliver_item(RpDelivery *dl, RpItem *item, int64_t now_ms);

/* Deliver the pending batch if its time is up (or force: a drain). */
extern int	rp_deliver_flush(RpDelivery *dl, bool force, int64_t now_ms);

/*
 * The same with the reason the batch events carry: RP_FLUSH_NONE delivers
 * only when a limit is reached (and names it), any other reason at once.
 */
extern int	rp_deliver_flush_for(RpDelivery *dl, RpFlushReason why, int64_t now_ms);
extern bool rp_deliver_pending(const RpDelivery *dl);

/* A sink waiting on something slow calls this now and then. */
extern void rp_deliver_idle(RpDelivery *dl);

/* Nothing in flight: a state sink may record an idle-advanced position. */
/* source_seq: from a stream, the sequence of the position message (else 0) */
extern int	rp_deliver_advance(RpDelivery *dl, uint64_t lsn, uint64_t source_seq);

#endif							/* RP_DELIVER_H */
