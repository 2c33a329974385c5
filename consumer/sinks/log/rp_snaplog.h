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
#include "sinks/rp_sink.h"

/* --max-record-bytes, --max-dlq-bytes and the dead-letter file, for every log sink. */
extern void rp_snaplog_configure(size_t max_record_bytes, size_t max_dlq_bytes, const char *dlq_path);

typedef struct RpSnapLog
{
	uint32_t   *relids;
	RpEnvelope *envs;
	int			n;
} RpSnapLog;

/* Append the chunk's frames to out (flush(arg, out) empties it as it grows). */
extern int	rp_snaplog_chunk(RpSnapLog *sl, const RpSnapshotCtx *ctx, RpBuf *out,
							 int (*flush) (void *arg, RpBuf *out), void *arg);
/* A dump that is still open failed: no end frame (the reader says "open"). */
extern void rp_snaplog_free(RpSnapLog *sl);

#endif							/* RP_SNAPLOG_H */
