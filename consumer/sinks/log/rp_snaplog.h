/*
 * rp_snaplog.h
 *    Snapshot chunks as envelope frames for the log sinks (stdout, file,
 *    exec): one dump per table (rp_envelope.h), begin on its first chunk,
 *    a row frame (or an oversize stub) per row, end after its last chunk.
 *    Tables copied in parallel interleave their frames; each keeps its own
 *    dump and seq.
 */
#ifndef RP_SNAPLOG_H
#define RP_SNAPLOG_H

#include "envelope/rp_envelope.h"
#include "stream/rp_sink.h"

typedef struct RpSnapLog
{
	/* the envelope's limits, from the sink's environment (rp_sink.h) */
	size_t		max_record;
	size_t		max_dlq;
	char	   *dlq_path;		/* ours, or NULL */
	/* the dumps in progress */
	uint32_t   *relids;
	RpEnvelope *envs;
	int			n;
} RpSnapLog;

/* Take the limits of env (NULL: the defaults); no dump yet. */
extern void rp_snaplog_init(RpSnapLog *sl, const RpSinkEnv *env);

/* Append the chunk's frames to out (flush(arg, out) empties it as it grows). */
extern int	rp_snaplog_chunk(RpSnapLog *sl, const RpSnapshotCtx *ctx, RpBuf *out,
							 int (*flush) (void *arg, RpBuf *out), void *arg);

/*
 * Drop the dumps (the limits stay): a dump that is still open failed, no
 * end frame (the reader says "open").
 */
extern void rp_snaplog_reset(RpSnapLog *sl);

/* Drop the dumps and the limits (the sink closes). */
extern void rp_snaplog_free(RpSnapLog *sl);

#endif							/* RP_SNAPLOG_H */
