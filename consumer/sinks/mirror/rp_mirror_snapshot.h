/*
 * rp_mirror_snapshot.h
 *    The mirror's initial-snapshot callbacks (rp_mirror_snapshot.c).
 */
#ifndef RP_MIRROR_SNAPSHOT_H
#define RP_MIRROR_SNAPSHOT_H

#include "sinks/rp_sink.h"

/* Set the snapshot callbacks of a mirror sink (s->priv is its RpMirror). */
extern void rp_mirror_snapshot_install(RpSink *s);
/* Free what the snapshot kept (its sessions, its tables' plans): at close. */
extern void rp_mirror_snapshot_free(struct RpMirror *pg);

#endif							/* RP_MIRROR_SNAPSHOT_H */
