/*
 * rp_natsio.h
 *    What the NATS sink (sinks/nats/) and the NATS source (natsrc/) share:
 *    the connection (URL, credentials, TLS), the Replicant-* headers
 *    read back from a message, and a stream's state from its leader.  The
 *    header parse is pure and built always; the rest only with libnats
 *    (RP_HAVE_NATS).
 */
#ifndef RP_NATSIO_H
#define RP_NATSIO_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_buf.h"
#include "base/rp_ckpt.h"

/* ---- the headers of a message (rp_natsio_head.c) ---- */

typedef enum RpNatsKind
{
	RP_NATS_KIND_OTHER,			/* no Replicant-Op: not ours */
	RP_NATS_KIND_DATA,			/* insert, update, delete, truncate, message */
	RP_NATS_KIND_RELATION,		/* a relation description */
	RP_NATS_KIND_POSITION		/* an end LSN without data (empty
								 * transactions) */
} RpNatsKind;

/* A message's headers as they are read back. */
typedef struct RpNatsHead
{
	RpNatsKind	kind;
	bool		bad;			/* ours, but a header is missing or malformed */
	uint64_t	system_id;
	uint32_t	timeline;
	char		slot[RP_SLOT_NAME_MAX];
	char		writer[64];
	uint64_t	commit_lsn;
	uint64_t	end_lsn;
	uint64_t	prev_end_lsn;
	uint64_t	index;
	bool		last;
} RpNatsHead;

/* A header's value by name, or NULL (a message, or RpNatsHdrs in the tests). */
typedef const char *(*RpNatsHdrGet) (void *arg, const char *key);

extern void rp_nats_head_parse(RpNatsHead *head, RpNatsHdrGet get, void *arg);

/* A decimal u64 header value (digits only): true with *out. */
extern bool rp_natsio_parse_u64(const char *s, uint64_t *out);

/*
 * name with every byte outside [A-Za-z0-9_-] as <mark>XX (uppercase hex),
 * appended to out: a subject token ('%', sinks/nats/) or a key-value key
 * ('=', the registry), one to one when mark is escaped too
 * (rp_natsio_reg.c)
 */
extern void rp_natsio_escape(RpBuf *out, const char *name, char mark);

/* ---- the stream registry (rp_natsio_reg.c) ---- */

/* the key-value bucket that records each stream's creation time and slot */
#define RP_NATSIO_REGISTRY "REPLICANT_STREAMS"

/* A stream's entry. */
typedef struct RpNatsioReg
{
	bool		found;
	int64_t		created;		/* the stream's creation time (ns since the
								 * epoch, as the server reports it) */
	char		slot[RP_SLOT_NAME_MAX];
}			RpNatsioReg;

/* The key of a stream's entry (NUL-terminated; out is reset first). */
extern void rp_natsio_reg_key(RpBuf *out, const char *stream);

/* An entry's value, {"slot":"S","created":N} (NUL-terminated; out is reset first). */
extern void rp_natsio_reg_format(RpBuf *out, const RpNatsioReg * r);

/* Parse a value: true with *r (found set); false when malformed. */
extern bool rp_natsio_reg_parse(const char *text, size_t len, RpNatsioReg * r);

/* A creation time as UTC text for a message: 2026-12-07T12:19:30.587034969Z. */
extern void rp_natsio_time_text(int64_t ns, char *dst, size_t len);

#ifdef RP_HAVE_NATS
/* ---- the connection (rp_natsio_conn.c) ---- */
#include <nats/nats.h>

typedef struct RpNatsioAuth
{
	const char *url;			/* nats://[user:pass@]HOST:PORT[,HOST:PORT...]
								 * or tls://... */
	const char *creds;
	const char *tls_ca;
	const char *tls_cert;
	const char *tls_key;
} RpNatsioAuth;

/* Connect (libnats reconnects from then on by itself); -1 after rp_fail. */
extern int	rp_natsio_connect(natsConnection **nc, const RpNatsioAuth *a);
extern void rp_natsio_close(natsConnection *nc);

/* a libnats status as text for an error message (never a value) */
extern const char *rp_natsio_status_text(natsStatus s);

/* natsMsgHeader_Get as an RpNatsHdrGet (arg: the natsMsg) */
extern const char *rp_natsio_msg_header(void *arg, const char *key);

/*
 * Free a message a fetch delivered now, not on libnats' collector thread;
 * NULL is nothing.  The reader's hot path only: the few messages a request
 * returns (js_GetMsg) are left to natsMsg_Destroy.
 */
extern void rp_natsio_msg_free(natsMsg *m);

/* ---- a stream's state (rp_natsio_info.c) ---- */

/*
 * STREAM.INFO as the stream's leader answers it: 0 with *si (the caller
 * destroys it); -1 when the request failed (*st, *code); 1 when a member
 * of a group without a leader answered with its own, possibly older,
 * store (nothing in *si): ask again once a leader is elected.
 */
extern int	rp_natsio_stream_info(jsCtx *js, const char *stream, jsStreamInfo **si,
								  natsStatus * st, jsErrCode * code);

/* ---- the stream registry on the server (rp_natsio_reg.c) ---- */

/*
 * The entry of stream: 0 with *r (r->found false when there is none, or no
 * bucket); -1 after rp_fail.
 */
extern int	rp_natsio_reg_get(jsCtx *js, const char *stream, RpNatsioReg * r);

/*
 * Record stream where it has no entry yet (the bucket made with replicas
 * when missing): 0 recorded (or already so), 1 another entry is there, -1
 * after rp_fail.
 */
extern int	rp_natsio_reg_put(jsCtx *js, const char *stream, int replicas,
							  const RpNatsioReg * r);
#endif							/* RP_HAVE_NATS */

#endif							/* RP_NATSIO_H */
