/*
 * rp_natsrc.h
 *    The NATS source: a JetStream stream the NATS sink wrote, read back as
 *    the frames a replication slot would have sent (docs/sinks.md
 *    "Fan-out").  Every message is checked (rp_natsrc_chain.h) before its
 *    record joins a frame; changes come back typed, from the binary record
 *    the message carries (Replicant-Wire) or from its JSON payload with
 *    the relation message it names (values/rp_jsonwire.h); relation
 *    descriptions are fetched by sequence, so a reader that starts
 *    anywhere knows every table.  The assembler (stream/rp_asm.h) then
 *    rebuilds the transactions, so batching, spilling, schema changes and
 *    checkpoints work as from a slot.  Built with libnats (RP_HAVE_NATS).
 */
#ifndef RP_NATSRC_H
#define RP_NATSRC_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_buf.h"
#include "base/rp_ckpt.h"

typedef struct RpNatsSrcOptions
{
	const char *url;			/* nats://[user:pass@]HOST:PORT[,...] or
								 * tls://... */
	const char *stream;
	const char *subjects;		/* a subject wildcard: only matching data
								 * reaches the sink (NULL: all) */
	bool		from_current_start; /* without a checkpoint, a stream whose
									 * beginning is gone, or that the registry
									 * does not know, is read from its first
									 * whole transaction (the history before
									 * it is lost to this reader) */
	const char *creds;
	const char *tls_ca;
	const char *tls_cert;
	const char *tls_key;
} RpNatsSrcOptions;

typedef enum RpNatsSrcKind
{
	RP_NATSRC_NONE,				/* nothing within the wait */
	RP_NATSRC_FRAME,			/* a frame for rp_asm_frame */
	RP_NATSRC_POSITION			/* an end LSN without data: an idle advance */
} RpNatsSrcKind;

typedef struct RpNatsSrcEvent
{
	RpNatsSrcKind kind;
	const unsigned char *data;	/* FRAME: valid until the next read */
	size_t		len;
	uint64_t	lsn;			/* FRAME: its transaction's commit LSN;
								 * POSITION: the end LSN */
	uint64_t	seq;			/* the stream sequence of the last message it
								 * covers */
	bool		ends;			/* FRAME: it completes a transaction or holds
								 * a message */
} RpNatsSrcEvent;

typedef struct RpNatsSrc RpNatsSrc;

/* The source name checkpoints carry: "nats:<stream>". */
extern void rp_natsrc_source_name(const char *stream, char *out, size_t len);

extern bool rp_natsrc_available(void);
extern RpNatsSrc *rp_natsrc_new(const RpNatsSrcOptions *o);
extern void rp_natsrc_free(RpNatsSrc *s);

/*
 * Connect and start reading after the checkpoint (have_ck), or from the
 * stream's first message.  The checkpoint is checked against the stream
 * first: its source must be this stream, its last message must be the one
 * at its sequence, and nothing may be missing after it.  *bind gets the
 * source identity (system id, timeline) the reading is bound to; without
 * a checkpoint it waits for the stream's first message to learn it.
 * 0, or -1 after rp_fail (retryable unless a halt).
 */
extern int	rp_natsrc_open(RpNatsSrc *s, const RpCheckpoint *ck, bool have_ck, RpCheckpoint *bind);

/* The next event within timeout_ms: 0 (ev set, maybe NONE), or -1 after rp_fail. */
extern int	rp_natsrc_read(RpNatsSrc *s, RpNatsSrcEvent *ev, int timeout_ms);

/* The stream's last sequence as last read (for progress and metrics). */
extern uint64_t rp_natsrc_last_seq(const RpNatsSrc *s);

/* The reader's metrics (value-free), for the metrics endpoint; arg is the RpNatsSrc. */
extern void rp_natsrc_metrics(RpBuf *out, const void *arg);

/* Disconnect; a transaction half read is read again by the next open. */
extern void rp_natsrc_close(RpNatsSrc *s);

#endif							/* RP_NATSRC_H */
