/*
 * rp_event.h
 *    The library's event hook: one callback, told what the data path did
 *    (a transaction assembled, a batch committed or failed, a schema change
 *    applied or halted on, a checkpoint stored or not, a snapshot chunk
 *    stored, a snapshot complete, the connection up or lost), each time with
 *    the same fixed, value-free record.  An event holds numbers (counts,
 *    bytes, LSNs, durations), names from the catalog (slot, schema,
 *    relation) and codes (an RpHalt, a SQLSTATE): never a row value and
 *    never error text, by construction, so a subscriber may log all of it
 *    (G4).  The command line's metrics and -v lines are such a subscriber.
 *
 *    No global: whoever opens a stage hands it the hook (RpDelivery's
 *    events, RpAsm's events, RpSnapOptions.events); no hook, no call.
 */
#ifndef RP_EVENT_H
#define RP_EVENT_H

#include <stdint.h>

typedef enum RpEventKind
{
	RP_EVENT_TXN_ASSEMBLED = 0, /* a commit made a transaction whole */
	RP_EVENT_BATCH_COMMITTED,	/* the sink took a batch (durable with its
								 * checkpoint) */
	RP_EVENT_BATCH_FAILED,		/* the sink, or the checkpoint after it,
								 * failed */
	RP_EVENT_SCHEMA_ADDITIVE,	/* an additive schema change applied (columns
								 * added) */
	RP_EVENT_SCHEMA_DESTRUCTIVE,	/* a destructive one a sink took (a log
									 * records it) */
	RP_EVENT_SCHEMA_HALTED,		/* a schema change refused: the run halts
								 * (reason) */
	RP_EVENT_CHECKPOINT_STORED, /* the durable position moved */
	RP_EVENT_CHECKPOINT_FAILED, /* it could not be stored */
	RP_EVENT_SNAPSHOT_CHUNK,	/* a snapshot chunk of one table stored */
	RP_EVENT_SNAPSHOT_COMPLETE, /* every table copied; streaming may begin */
	RP_EVENT_CONN_UP,			/* streaming from the source began */
	RP_EVENT_CONN_LOST,			/* the source connection ended in trouble */
	RP_EVENT__COUNT
} RpEventKind;

/* Why a batch went to the sink (RpEvent.flush of the batch events). */
typedef enum RpFlushReason
{
	RP_FLUSH_NONE = 0,			/* not a batch event; as an argument: only
								 * when a limit says so */
	RP_FLUSH_TXNS,				/* --batch-txns reached */
	RP_FLUSH_BYTES,				/* --batch-bytes reached */
	RP_FLUSH_TIME,				/* --batch-ms since its first transaction */
	RP_FLUSH_BACKLOG,			/* the sink is the slower side: what queued
								 * while the last batch was applied */
	RP_FLUSH_MESSAGE,			/* a non-transactional message goes alone */
	RP_FLUSH_STREAMED,			/* a large transaction applied early, block by
								 * block: it and what came before */
	RP_FLUSH_DRAIN,				/* the end position, a stop, a reopen or a
								 * reconnection */
	RP_FLUSH__COUNT
}			RpFlushReason;

typedef struct RpEvent
{
	RpEventKind kind;
	const char *slot;			/* the slot (or the reader's name); NULL when
								 * unknown */
	const char *stream;			/* a NATS stream read as the source; NULL from
								 * a slot */
	const char *schema;			/* a relation's schema and name (catalog
								 * names); */
	const char *relation;		/* NULL when the event concerns none */
	uint64_t	txns;
	uint64_t	changes;		/* rows of a snapshot chunk */
	uint64_t	bytes;			/* as stored (the wire records' size) */
	uint64_t	lsn;			/* commit LSN; a snapshot's consistent point */
	uint64_t	end_lsn;		/* end of the unit; the stored checkpoint's */
	int64_t		duration_us;	/* how long the unit took; 0 when not measured */
	int			reason;			/* an RpHalt (rp_status.h); 0: none */
	int			flush;			/* batch events: an RpFlushReason */
	char		sqlstate[6];	/* a SQLSTATE code, "" when none */
} RpEvent;

typedef void (*RpEventFn) (const RpEvent *ev, void *arg);

typedef struct RpEventHook
{
	RpEventFn	fn;				/* NULL: no subscriber */
	void	   *arg;
} RpEventHook;

/* Tell the hook's subscriber (nothing when h or h->fn is NULL). */
extern void rp_event_emit(const RpEventHook *h, const RpEvent *ev);

/* A new event of this kind, every other field zero or NULL. */
extern void rp_event_init(RpEvent *ev, RpEventKind kind);

/* "batch_committed" and so on; "unknown" out of range. */
extern const char *rp_event_kind_name(RpEventKind kind);

/* "txns", "bytes", "time" and so on; "" for none, "unknown" out of range. */
extern const char *rp_flush_reason_name(int reason);

#endif							/* RP_EVENT_H */
