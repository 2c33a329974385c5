/*
 * rp_nats_int.h
 *    The NATS sink's parts (rp_nats*.c): pure functions (subjects, headers,
 *    the resume point, the publish window) that the unit tests call
 *    without a server, and the pieces built on libnats.
 */
#ifndef RP_NATS_INT_H
#define RP_NATS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_buf.h"
#include "natsio/rp_natsio.h"
#include "base/rp_ckpt.h"

/* ---- subjects (rp_nats_subject.c) ---- */

/* name with every byte outside [A-Za-z0-9_-] as %XX (uppercase hex), appended to out */
extern void rp_nats_subject_escape(RpBuf *out, const char *name);

/* <prefix>.<schema>.<table>, escaped, NUL-terminated; out is reset first */
extern void rp_nats_data_subject(RpBuf *out, const char *prefix, const char *schema,
								 const char *table);

/* <prefix>._control, NUL-terminated; out is reset first */
extern void rp_nats_control_subject(RpBuf *out, const char *prefix);

/* ---- headers (rp_nats_msg.c) ---- */

#define RP_NATS_MAX_HDRS 20

/* One message's headers: keys are literals, values point into buf. */
typedef struct RpNatsHdrs
{
	int			n;
	const char *key[RP_NATS_MAX_HDRS];
	size_t		off[RP_NATS_MAX_HDRS];	/* value offsets into buf */
	RpBuf		buf;
} RpNatsHdrs;

/* What every message carries: the source and the writer. */
typedef struct RpNatsIdent
{
	uint64_t	system_id;
	uint32_t	timeline;
	const char *slot;
	const char *writer;
} RpNatsIdent;

/* A data message's place: its transaction and index. */
typedef struct RpNatsPlace
{
	uint64_t	commit_lsn;
	uint64_t	end_lsn;
	uint64_t	prev_end_lsn;	/* end LSN of what the stream held before the
								 * transaction */
	uint32_t	xid;
	int64_t		commit_time;
	uint64_t	index;
	bool		last;
} RpNatsPlace;

extern void rp_nats_hdrs_init(RpNatsHdrs *h);
extern void rp_nats_hdrs_free(RpNatsHdrs *h);
extern void rp_nats_hdrs_reset(RpNatsHdrs *h);

/* Open a value for key; append its text to h->buf, then rp_nats_hdrs_end. */
extern void rp_nats_hdrs_begin(RpNatsHdrs *h, const char *key);
extern void rp_nats_hdrs_end(RpNatsHdrs *h);
extern void rp_nats_hdrs_add(RpNatsHdrs *h, const char *key, const char *value);
extern const char *rp_nats_hdrs_value(const RpNatsHdrs *h, int i);

/* The value of key, or NULL. */
extern const char *rp_nats_hdrs_get(const RpNatsHdrs *h, const char *key);

/* <system_id>:<slot>:<commit_lsn>:<index> */
extern void rp_nats_msg_id(RpBuf *out, uint64_t system_id, const char *slot, uint64_t commit_lsn,
						   uint64_t index);

/* The identity headers (system id, timeline, slot, writer). */
extern void rp_nats_hdrs_ident(RpNatsHdrs *h, const RpNatsIdent *id);

/*
 * A data message's headers (all but Nats-Expected-Last-Sequence, set at
 * publish, and those of its record: op, table, key, relation seq).
 */
extern void rp_nats_hdrs_place(RpNatsHdrs *h, const RpNatsIdent *id, const RpNatsPlace *p);

/* ---- the binary record of a message (rp_nats_wire.c) ---- */

/* The record at raw (tag, length, payload), without a streamed change's xid, into out. */
extern void rp_nats_wire_record(RpBuf *out, const unsigned char *raw);

/* Its base64 as the Replicant-Wire header (tmp: work buffer). */
extern void rp_nats_hdrs_wire(RpNatsHdrs *h, RpBuf *tmp, const unsigned char *raw);

/* The bytes that header's value takes (base64 of the record), before it is built. */
extern size_t rp_nats_wire_header_len(const unsigned char *raw);

/* ---- the tail and the resume point (rp_nats_tail.c) ---- */

/*
 * Where to resume: after (commit_lsn, index), or after the whole
 * transaction at commit_lsn when complete.  none: the stream holds no
 * data yet.
 */
typedef struct RpNatsResume
{
	bool		none;
	uint64_t	commit_lsn;
	uint64_t	index;
	bool		complete;
} RpNatsResume;

/*
 * The resume point and the checkpoint a head of kind DATA or POSITION
 * gives (ck: the source identity, the dedup watermark and what may be
 * confirmed to PostgreSQL).
 */
extern void rp_nats_resume_from_head(const RpNatsHead *head, RpNatsResume *r, RpCheckpoint *ck);

/* Is the data message (commit_lsn, index) in the stream already? */
extern bool rp_nats_resume_covers(const RpNatsResume *r, uint64_t commit_lsn, uint64_t index);

/* Is the whole transaction at commit_lsn in the stream already? */
extern bool rp_nats_resume_covers_txn(const RpNatsResume *r, uint64_t commit_lsn);

/* What a tail read again while writing says about other writers. */
typedef enum RpNatsFence
{
	RP_NATS_FENCE_NONE,			/* the tail is this writer's, or where it knew
								 * it */
	RP_NATS_FENCE_LATE,			/* the previous writer's messages landed after
								 * this writer read the tail at its start */
	RP_NATS_FENCE_OTHER			/* another writer appended: fenced */
}			RpNatsFence;

/*
 * The verdict on a tail at last_seq written by last_writer, for the writer
 * self that knew the stream up to known_seq and found it written by
 * predecessor at its start ("" for none).
 */
extern RpNatsFence rp_nats_fence_verdict(uint64_t last_seq, uint64_t known_seq,
										 const char *last_writer, const char *self,
										 const char *predecessor);

/* ---- the publish window (rp_nats_pub.c) ---- */

typedef enum RpNatsFailure
{
	RP_NATS_FAIL_NONE,
	RP_NATS_FAIL_SEQUENCE,		/* wrong last sequence (10071): re-read the
								 * tail */
	RP_NATS_FAIL_RETRY,			/* timeout, no responders, leader change:
								 * retry */
	RP_NATS_FAIL_FULL,			/* the stream is full (discard new):
								 * back-pressure */
	RP_NATS_FAIL_FATAL			/* a refusal retrying cannot change */
} RpNatsFailure;

/*
 * The window's accounting, under the publisher's lock: every publish in
 * flight expects the stream's last sequence to be the one before it, so
 * acks must come back as exactly next = expected + 1.
 */
typedef struct RpNatsWin
{
	int			size;			/* most in flight */
	int			in_flight;
	uint64_t	last_seq;		/* the stream's last sequence as intended (the
								 * last publish's) */
	uint64_t	acked_seq;		/* highest sequence acknowledged as intended */
	uint64_t	acked;			/* acks of this window as intended */
	RpNatsFailure failure;		/* the worst one seen since the last reset */
	int			err_code;		/* its JetStream error code, or 0 */
	int			status;			/* its libnats status */

	/*
	 * Bytes of the messages in flight (payload, subject, headers) and their
	 * bound (<= 0: none): the count alone would let a window of large rows be
	 * held at once (G5).  One message always goes, whatever its size.
	 */
	int64_t		bytes;
	int64_t		max_bytes;
} RpNatsWin;

/* the default of RpNatsWin.max_bytes */
#define RP_NATS_WINDOW_BYTES ((int64_t) 32 * 1024 * 1024)

extern void rp_nats_win_reset(RpNatsWin *w, int size, uint64_t last_seq);
extern bool rp_nats_win_full(const RpNatsWin *w);

/* Room for one more publish of `bytes` (by count and by bytes)? */
extern bool rp_nats_win_room(const RpNatsWin *w, int64_t bytes);

/* Bytes go into flight (delta > 0) or come back (< 0; never below 0). */
extern void rp_nats_win_charge(RpNatsWin *w, int64_t delta);

/* A publish goes out: the expected last sequence it must carry. */
extern uint64_t rp_nats_win_send(RpNatsWin *w);

/* Its publish call failed: it is not in flight. */
extern void rp_nats_win_unsend(RpNatsWin *w, RpNatsFailure f, int status);

/* An ack for the publish that expected `expected`: stored as seq (dup: a duplicate). */
extern void rp_nats_win_ack(RpNatsWin *w, uint64_t expected, uint64_t seq, bool dup);

/* An error answer (or a timeout) for a publish. */
extern void rp_nats_win_nak(RpNatsWin *w, int status, int err_code, const char *text);

/* status of rp_nats_win_nak and rp_nats_classify: how the publish ended */
#define RP_NATS_ST_ANSWER	0	/* the server answered with an error
								 * (err_code) */
#define RP_NATS_ST_LOST		1	/* no answer: timeout, no responders,
								 * connection */
#define RP_NATS_ST_REFUSED	2	/* the client refused it (too large) */

/* How an error is handled (the ordering of RpNatsFailure: the worst one wins). */
extern RpNatsFailure rp_nats_classify(int status, int err_code, const char *text);

#ifdef RP_HAVE_NATS
/* ---- built on libnats ---- */
#include <pthread.h>
#include <nats/nats.h>

#include "sinks/nats/rp_nats.h"

/*
 * The connection, its JetStream context and the publish window (its
 * accounting shared with libnats' ack thread under mu).
 */
typedef struct RpNatsLink
{
	natsConnection *nc;
	jsCtx	   *js;
	int64_t		ack_timeout_ms;
	int64_t		max_payload;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	RpNatsWin	win;
} RpNatsLink;

/* rp_nats_conn.c: connect (natsio/) and the JetStream context with the ack handler; -1 after rp_fail */
extern int	rp_nats_connect(RpNatsLink *l, const RpNatsOptions *o);
extern void rp_nats_disconnect(RpNatsLink *l);

/*
 * rp_nats_stream.c: create the stream when missing (unless the registry
 * knows it: then it was deleted, a halt), check its config and identity
 * when present, record it in the registry; *created: its creation time.
 */
extern int	rp_nats_stream_ensure(RpNatsLink *l, const RpNatsOptions *o, const char *stream,
								  const char *prefix, const char *slot, int64_t *created);

/* Does the config keep every message the sink appends?  0, or -1 after rp_fail (config). */
extern int	rp_nats_stream_check(const jsStreamConfig *c, const char *stream, const char *prefix);

/*
 * Is the stream, made at created and holding first_seq..last_seq, the one
 * made at recorded (0: not known)?  0, or -1 after rp_fail (identity, gap).
 */
extern int	rp_nats_stream_identity(const char *stream, int64_t created, uint64_t first_seq,
									uint64_t last_seq, int64_t recorded);

/* The halt for a stream that the registry knows and that no longer exists: -1. */
extern int	rp_nats_stream_gone(const char *stream, int64_t created);

/* What the tail read says about the stream itself. */
typedef struct RpNatsTailState
{
	bool		missing;		/* no such stream (nothing else is set) */
	uint64_t	first_seq;
	uint64_t	last_seq;		/* 0 when empty */
	int64_t		created;		/* its creation time */
}			RpNatsTailState;

/*
 * rp_nats_tail.c: the stream's state (its config checked against prefix:
 * rp_nats_stream_check), the head of its last message (*last) and of its
 * last data or position message (*data, kind OTHER when none).  -1 after
 * rp_fail.
 */
extern int	rp_nats_tail_read(RpNatsLink *l, const char *stream, const char *prefix,
							  RpNatsTailState * st, RpNatsHead *last, RpNatsHead *data);

/*
 * rp_nats_pub.c: start a window after last_seq; publish one message
 * (ownership passes; false when the window has failed: stop publishing);
 * wait until nothing is in flight.
 */
extern void rp_nats_pub_start(RpNatsLink *l, int size, uint64_t last_seq);
extern bool rp_nats_pub_send(RpNatsLink *l, natsMsg *m);
extern void rp_nats_pub_drain(RpNatsLink *l);

/* the window's state once drained */
extern RpNatsWin rp_nats_pub_result(RpNatsLink *l);

/* the handler libnats calls for every ack (set in jsOptions) */
extern void rp_nats_pub_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure);

/* ---- the sink's state (rp_nats.c, rp_nats_pass.c) ---- */
#include "stream/rp_asm.h"

typedef struct RpNatsRelSeq
{
	uint32_t	relid;
	uint64_t	seq;
} RpNatsRelSeq;

/* value-free counters, read by the metrics thread */
typedef struct RpNatsCounters
{
	uint64_t	published;
	uint64_t	acked_lsn;
	uint64_t	retries;
	uint64_t	stream_full;
	uint64_t	relations;
	uint64_t	positions;
} RpNatsCounters;

typedef struct RpNatsSink
{
	RpNatsOptions o;
	char	   *url;
	char	   *stream;
	char	   *prefix;
	char		slot[RP_SLOT_NAME_MAX];
	char		writer[40];
	char		predecessor[64];	/* the writer of the tail this one found
									 * at its start */
	RpNatsLink	link;
	int64_t		created;		/* the stream's creation time (registry) */
	natsSubscription *advisories;	/* the server's advisories about it */
	int			stream_event;	/* one came (atomic): read the stream again */

	/* what the stream holds, as this writer knows it */
	uint64_t	known_seq;		/* its last sequence */
	RpNatsResume resume;		/* its last data (or position) message */
	uint64_t	stream_end;		/* the end LSN its last complete transaction
								 * or position holds */
	uint64_t	resume_prev_end;	/* mid-transaction: what the stream held
									 * before it */
	bool		need_tail;		/* read it again before publishing */
	int64_t		behind_since_us;	/* a tail below known_seq first read then
									 * (0: none) */
	int			have_ck;		/* checkpoint(): 1 found, 0 none */
	RpCheckpoint ck;

	/*
	 * relations described in this session: relid -> the description's
	 * sequence
	 */
	RpNatsRelSeq *rels;
	int			nrels;
	int			caprels;
	bool		schema_changed; /* in the batch being published */

	/* one pass over a batch */
	natsMsg    *held;			/* the last data message, not yet published */
	RpNatsResume intended;		/* the stream's tail once the pass is acked */
	uint64_t	intended_end;

	RpBuf		payload;
	RpBuf		subject;
	RpBuf		extra;
	RpBuf		key;
	RpBuf		wire;
	RpNatsHdrs	hdrs;
	RpNatsCounters count;
} RpNatsSink;

/* rp_nats_pass.c: 1 all sent, 0 the window failed (drain, read the tail), -1 a halt */
extern int	rp_nats_pass_batch(RpNatsSink *ns, RpDelivery *dl, RpTxn **txns, int n,
							   const RpCheckpoint *ck);
extern int	rp_nats_pass_message(RpNatsSink *ns, const RpMessage *msg, const RpCheckpoint *ck);

/* a relation to describe again before its next change */
extern void rp_nats_rel_forget(RpNatsSink *ns, uint32_t relid);

#endif							/* RP_HAVE_NATS */

#endif							/* RP_NATS_INT_H */
