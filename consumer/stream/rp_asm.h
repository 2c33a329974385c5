/*
 * rp_asm.h
 *    The assembler: frames in, whole committed transactions out.
 *
 * State machine (docs/guarantees.md, "The assembler's states", draws it):
 *   idle --BEGIN--> in-txn --changes--> in-txn --COMMIT--> idle (txn ready)
 *   idle --STREAM START(x)--> in-block(x) --changes--> in-block(x)
 *        --STREAM STOP--> idle;  STREAM COMMIT(x) -> txn x ready;
 *        STREAM ABORT(x, sub) -> sub's changes (or all of x) dropped.
 * Anything else (a row before BEGIN, a BEGIN inside a transaction, an
 * unknown record or relation) halts: G3.  A transaction whose commit LSN is
 * at or below the watermark was already applied and is dropped: dedup.
 *
 * Every transaction's store is self-describing: before a relation's first
 * change in it (and after any change of that relation's description), the
 * Relation record is stored too, so delivery can decode it alone, in commit
 * order, whatever order stream blocks arrived in.
 */
#ifndef RP_ASM_H
#define RP_ASM_H

#include "base/rp_event.h"
#include "rp_decode.h"
#include "stream/rp_store.h"

typedef struct RpRelStamp
{
	uint32_t	relid;
	uint32_t	version;
} RpRelStamp;

typedef struct RpSubxact
{
	uint32_t	xid;
	uint64_t	offset;			/* store length before its first change */
	uint64_t	nchanges;
} RpSubxact;

typedef struct RpTxn
{
	uint32_t	xid;
	bool		streamed;
	uint64_t	final_lsn;
	uint64_t	commit_lsn;
	uint64_t	end_lsn;
	int64_t		commit_time;	/* us since the Unix epoch */
	uint32_t	timeline;		/* of the WAL it was read from (wire version
								 * 4, a stream's header), 0 when not said */
	uint64_t	nchanges;		/* rows, truncates, transactional messages */
	uint64_t	source_seq;		/* from a stream: the sequence of its last
								 * message (0: a slot) */
	char	   *origin;			/* replication origin name, or NULL */
	RpStore		store;
	RpRelStamp *stamps;
	int			nstamps;
	int			capstamps;
	RpSubxact  *subs;
	int			nsubs;
	int			capsubs;
	/* early delivery of a streamed transaction (RpAsm.early) */
	bool		chunking;		/* its blocks go out as chunks */
	bool		chunked;		/* at least one chunk went out */
	bool		chunk_first;	/* the next chunk is its first */
	struct RpTxn *chunk;		/* the open block's records */
	struct RpTxn *next;
} RpTxn;

typedef enum RpItemKind
{
	RP_ITEM_TXN,
	RP_ITEM_MESSAGE,			/* non-transactional logical message */
	RP_ITEM_CHUNK,				/* one stream block of a transaction still
								 * open */
	RP_ITEM_STREAM_END			/* a chunked transaction will not commit as
								 * chunked */
} RpItemKind;

typedef struct RpMessage
{
	uint64_t	lsn;
	char	   *prefix;
	unsigned char *content;
	uint32_t	content_len;
	uint64_t	source_seq;		/* from a stream: its sequence (0: a slot) */
} RpMessage;

/*
 * A TXN item is a committed transaction.  With RpAsm.early, a streamed
 * transaction also goes out block by block before it commits: CHUNK items
 * (txn holds the block's records, self-describing like any store; first
 * marks the transaction's first block, which comes again after a
 * reconnect), then its TXN item, whose store holds every chunk again, in
 * the same bytes, followed by whatever came after the last one.  When
 * such a transaction aborts, loses a subtransaction, is dropped by dedup
 * or is cut by a reconnect, a STREAM_END item (xid) says its chunks are
 * void.  A consumer of chunks must be able to drop them: nothing about
 * them is committed.
 */
typedef struct RpItem
{
	RpItemKind	kind;
	RpTxn	   *txn;
	RpMessage	msg;
	uint32_t	xid;			/* STREAM_END */
	bool		first;			/* CHUNK */
	struct RpItem *next;
} RpItem;

/* relid -> the newest Relation record received, as raw bytes */
typedef struct RpRelRaw
{
	uint32_t	relid;
	uint32_t	version;
	unsigned char *bytes;
	size_t		len;
} RpRelRaw;

typedef struct RpAsm
{
	RpDecoder	dec;			/* receipt order */
	RpSpill    *spill;
	RpTxn	   *cur;			/* open non-streamed transaction */
	RpTxn	   *streams;		/* open streamed transactions */
	RpTxn	   *block;			/* transaction of the open stream block */
	uint64_t	watermark;		/* dedup: commit LSNs at or below are done */
	RpItem	   *ready_head;
	RpItem	   *ready_tail;
	RpRelRaw   *raw;			/* open-addressing hash */
	size_t		nraw;
	size_t		capraw;
	uint64_t	frame_lsn;
	uint64_t	skipped;		/* transactions dropped by dedup */
	uint64_t	aborted;		/* streamed transactions aborted */
	bool		early;			/* emit stream blocks as CHUNK items (see
								 * RpItem) */
	RpEventHook events;			/* TXN_ASSEMBLED; set after rp_asm_init (none:
								 * no call) */
} RpAsm;

extern void rp_asm_init(RpAsm *a, RpSpill *spill, uint64_t watermark);
extern void rp_asm_free(RpAsm *a);

/* Feed one frame received at lsn; 0 or -1 (halt, see rp_error()). */
extern int	rp_asm_frame(RpAsm *a, const void *data, size_t len, uint64_t lsn);

/* The next completed item, in commit order; the caller frees it. */
extern RpItem *rp_asm_pop(RpAsm *a);
extern void rp_item_free(RpItem *item);
extern void rp_txn_free(RpTxn *txn);

/* Anything assembled, buffered or spilled that is not yet delivered? */
extern bool rp_asm_busy(const RpAsm *a);

/* Drop every open transaction (reconnect: the server sends them again). */
extern void rp_asm_reset(RpAsm *a);

#endif							/* RP_ASM_H */
