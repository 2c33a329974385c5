/*
 * rp_natsrc_int.h
 *    The NATS source's parts: the reader (rp_natsrc.c), the message to
 *    frame step (rp_natsrc_frame.c) and the relation descriptions
 *    (rp_natsrc_rels.c).
 */
#ifndef RP_NATSRC_INT_H
#define RP_NATSRC_INT_H

#include "natsrc/rp_natsrc.h"
#include "natsrc/rp_natsrc_chain.h"

/* Does a NATS subject match the wildcard pattern ('*' one token, '>' the rest)? */
extern bool rp_natsrc_subject_match(const char *pattern, const char *subject);

#ifdef RP_HAVE_NATS
#include <nats/nats.h>

#include "rp_buf.h"
#include "rp_decode.h"

/* one fetch: at most this many messages and bytes, whichever comes first */
#define RP_NATSRC_FETCH_MSGS 1024
#define RP_NATSRC_FETCH_BYTES (4 * 1024 * 1024)
/* no message this long while the stream is ahead: the consumer is stuck */
#define RP_NATSRC_STALL_MS 15000

/* A relation description read from the stream. */
typedef struct RpNatsSrcRel
{
	uint32_t	relid;
	uint64_t	seq;			/* of the relation message */
	RpRelation *rel;
	bool		sent;			/* given to the assembler since the last open */
} RpNatsSrcRel;

/* value-free counters, read by the metrics thread (RP_COUNT_*) */
typedef struct RpNatsSrcCounters
{
	uint64_t	read_seq;		/* the last sequence read */
	uint64_t	last_seq;		/* the stream's last sequence, as last seen */
	uint64_t	messages;		/* messages read (relation and position ones
								 * too) */
	uint64_t	opens;			/* subscriptions opened (the first, and every
								 * reopen) */
	uint64_t	fetches;		/* fetches answered */
	uint64_t	relation_gets;	/* descriptions fetched by sequence */
	uint64_t	replays;		/* messages delivered again, dropped */
	uint64_t	skips;			/* messages the consumer skipped though the
								 * stream holds them */
} RpNatsSrcCounters;

struct RpNatsSrc
{
	RpNatsSrcOptions o;
	natsConnection *nc;
	jsCtx	   *js;
	natsSubscription *sub;		/* the pull consumer (rp_natsrc_pull.c) */
	natsMsgList batch;			/* the last fetch, handed out from batch_at */
	int			batch_at;
	int64_t		fetch_bytes;	/* a fetch's byte bound */
	char	   *subject;		/* the stream's one subject */
	uint64_t	last_seq;		/* the stream's last sequence, as last seen */
	int64_t		created;		/* the stream's creation time */
	RpNatsChain chain;
	bool		skip_partial;	/* no checkpoint, the stream's start is gone:
								 * skip to a whole transaction */
	int64_t		last_msg_ms;	/* when a message last came (monotonic) */
	int64_t		last_check_ms;	/* when the stream's state was last read for a
								 * stall */
	uint64_t	resub_at;		/* the sequence the consumer was last started
								 * again at (0: none since) */

	/* the transaction being framed */
	bool		open_txn;
	uint64_t	commit_lsn;
	uint64_t	end_lsn;
	int64_t		commit_time;

	/* one description per relid, the newest read */
	RpNatsSrcRel *rels;
	int			nrels;
	int			caprels;

	RpNatsSrcCounters count;
	RpBuf		frame;			/* the frame handed out */
	RpBuf		rec;			/* one record */
	RpBuf		tmp;
};

/* rp_natsrc_pull.c: a pull consumer from start on; -1 after rp_fail */
extern int	rp_natsrc_subscribe(RpNatsSrc *s, uint64_t start);

/* rp_natsrc_pull.c: drop the consumer and what is left of its last fetch */
extern void rp_natsrc_unsubscribe(RpNatsSrc *s);

/* rp_natsrc_pull.c: the next message, fetched when none is left (NATS_TIMEOUT: none came); the caller frees it (rp_natsio_msg_free) */
extern natsStatus rp_natsrc_next(RpNatsSrc *s, natsMsg **m, int64_t timeout_ms);

/* rp_natsrc_js.c: a message by sequence (leader-routed get); -1 after rp_fail */
extern int	rp_natsrc_get(RpNatsSrc *s, uint64_t seq, natsMsg **m);

/* rp_natsrc_js.c: the stream's first and last sequences (and its one subject, kept); -1 after rp_fail */
extern int	rp_natsrc_stream_state(RpNatsSrc *s, uint64_t *first, uint64_t *last);

/* rp_natsrc_js.c: a failed JetStream request as a named error; -1 */
extern int	rp_natsrc_js_fail(RpNatsSrc *s, const char *what, natsStatus st, jsErrCode code);

/* rp_natsrc_frame.c: one message read at seq into ev (kind NONE: nothing to hand out); -1 a halt or error */
extern int	rp_natsrc_message(RpNatsSrc *s, natsMsg *m, uint64_t seq, RpNatsSrcEvent *ev);

/* rp_natsrc_rels.c */
/* Keep the description a relation message holds (its payload); -1 after rp_fail. */
extern int	rp_natsrc_rel_put(RpNatsSrc *s, uint64_t seq, const char *json, size_t len);

/* The description at seq, fetched when not yet read; NULL after rp_fail. */
extern RpNatsSrcRel *rp_natsrc_rel_at(RpNatsSrc *s, uint64_t seq);

/* The description of relid as last read, or NULL. */
extern RpNatsSrcRel *rp_natsrc_rel_of(RpNatsSrc *s, uint32_t relid);

/* Append its Relation record to the frame unless the assembler has it. */
extern void rp_natsrc_rel_send(RpNatsSrc *s, RpNatsSrcRel *r);

/* After a reconnect: every description is to be sent again. */
extern void rp_natsrc_rels_unsent(RpNatsSrc *s);
extern void rp_natsrc_rels_free(RpNatsSrc *s);
#endif							/* RP_HAVE_NATS */

#endif							/* RP_NATSRC_INT_H */
