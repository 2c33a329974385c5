/*
 * rp_natsrc_chain.h
 *    The NATS source's hole checks (pure, no libnats): every message read
 *    from the stream is checked against what came before it, so that a
 *    sink is never given a transaction with a piece missing, nor one that
 *    does not follow the last one delivered (G3).
 *
 * The NATS sink writes each source transaction as data messages with a
 * contiguous Replicant-Index from 0, the last one marked Replicant-Last,
 * and every transaction names the end LSN the stream held before it
 * (Replicant-Prev-End-Lsn); position messages carry an end LSN alone.  A
 * stream sequence is read for every message (the reader never filters on
 * the server), so any missing sequence is a deleted or expired message.
 */
#ifndef RP_NATSRC_CHAIN_H
#define RP_NATSRC_CHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "natsio/rp_natsio.h"

typedef struct RpNatsChain
{
	uint64_t	next_seq;		/* the sequence the next message must have (0:
								 * any) */
	bool		bound;			/* system_id and timeline are known */
	uint64_t	system_id;
	uint32_t	timeline;
	uint64_t	end_lsn;		/* the end LSN the stream holds so far (0:
								 * unknown) */
	/* the transaction being read */
	bool		in_txn;
	uint64_t	commit_lsn;
	uint64_t	next_index;
	char		why[256];		/* the reason of the last refusal, value-free */
} RpNatsChain;

typedef enum RpNatsStep
{
	RP_NATS_STEP_SKIP,			/* a relation description, or another source's
								 * stray: nothing to deliver */
	RP_NATS_STEP_BEGIN,			/* the first message of a transaction */
	RP_NATS_STEP_CONTINUE,		/* a later message of the open transaction */
	RP_NATS_STEP_POSITION,		/* an end LSN without data */
	RP_NATS_STEP_HOLE,			/* refused: why says which check */
	RP_NATS_STEP_IDENTITY		/* refused: another source system or timeline */
} RpNatsStep;

/*
 * Start checking at sequence next_seq (0: any), after a transaction or
 * position that ended at end_lsn (0: unknown, e.g. a stream read from its
 * start), for the given source (bound false: the first message binds it).
 */
extern void rp_natsrc_chain_init(RpNatsChain *c, uint64_t next_seq, uint64_t end_lsn, bool bound,
								 uint64_t system_id, uint32_t timeline);

/* One message, in stream order: what it is, or why it is refused. */
extern RpNatsStep rp_natsrc_chain_step(RpNatsChain *c, uint64_t seq, const RpNatsHead *h);

#endif							/* RP_NATSRC_CHAIN_H */
