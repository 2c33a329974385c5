/*
 * rp_nats.h
 *    The NATS JetStream sink (docs/sinks.md): one message per change on a
 *    stream that is its own checkpoint (effect-once, G1), resumed from the
 *    stream's last message.  Built only with libnats (RP_HAVE_NATS);
 *    without it rp_nats_available() is false and rp_nats_open fails.
 */
#ifndef RP_NATS_H
#define RP_NATS_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_buf.h"
#include "stream/rp_sink.h"

#define RP_NATS_DEFAULT_REPLICAS 3
#define RP_NATS_DEFAULT_WINDOW 1024
#define RP_NATS_DEFAULT_ACK_TIMEOUT_S 5.0

typedef struct RpNatsOptions
{
	const char *url;			/* nats://[user:pass@]HOST:PORT[,HOST:PORT...]
								 * or tls://... */
	const char *slot;			/* names the defaults below */
	const char *stream;			/* NULL: REPLICANT_<slot> */
	const char *subject_prefix; /* NULL: replicant.<slot> */
	int			replicas;		/* when the stream is created */
	uint64_t	max_bytes;		/* when created; 0: unlimited */
	double		duplicate_window_s; /* when created; 0: the server's default */
	int			window;			/* publishes in flight */
	double		ack_timeout_s;	/* per publish */
	const char *creds;
	const char *tls_ca;
	const char *tls_cert;
	const char *tls_key;
} RpNatsOptions;

extern void rp_nats_options_init(RpNatsOptions *o);

/* Is this build able to open the sink (libnats)? */
extern bool rp_nats_available(void);

/* NULL after rp_fail() on error (retryable unless a config or identity halt). */
extern RpSink *rp_nats_open(const RpNatsOptions *opts, const RpSinkEnv *env);

/* Is s a NATS sink?  (Its metrics come through RpSink.metrics.) */
extern bool rp_nats_is(const RpSink *s);

#endif							/* RP_NATS_H */
