/*
 * rp_mirror_backfill.h
 *    The mirror's side of a backfill (rp_backfill.h): the watermark
 *    messages in the stream, the window of keys the stream changes between
 *    them, and each chunk applied less those keys, with its progress token,
 *    in the destination transaction of the batch (rp_mirror_backfill.c).
 */
#ifndef RP_MIRROR_BACKFILL_H
#define RP_MIRROR_BACKFILL_H

#include "sinks/mirror/rp_mirror_int.h"

/* The mirror's backfill state (pg->bf), made at open and freed at close. */
extern void rp_mirror_backfill_init(RpMirror *pg);
extern void rp_mirror_backfill_free(RpMirror *pg);
/*
 * A logical message: 1 when it is a backfill watermark (handled, no other
 * routing), 0 when it is not, -1 after rp_fail().
 */
extern int	rp_mirror_backfill_message(RpMirror *pg, bool transactional, const char *prefix,
								   size_t prefix_len, const unsigned char *content, uint32_t len);
/* A row change of t is being applied: remember its key if t has an open window. */
extern void rp_mirror_backfill_note(RpMirror *pg, const RpMirrorTable *t, const RpRecord *rec);
/* A TRUNCATE is being applied: a window on one of its tables keeps none of its chunk. */
extern void rp_mirror_backfill_truncate(RpMirror *pg, const RpRecord *rec);
/* Is a window open (early apply declines then: an aborted transaction's keys must not count)? */
extern bool rp_mirror_backfill_window_open(const RpMirror *pg);
/* The destination transaction committed / rolled back. */
extern void rp_mirror_backfill_committed(RpMirror *pg);
extern void rp_mirror_backfill_aborted(RpMirror *pg);

#endif							/* RP_MIRROR_BACKFILL_H */
