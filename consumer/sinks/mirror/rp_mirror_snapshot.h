/*
 * rp_pg_snapshot.h
 *    The mirror's initial-snapshot callbacks (rp_pg_snapshot.c).
 */
#ifndef RP_PG_SNAPSHOT_H
#define RP_PG_SNAPSHOT_H

#include "sinks/rp_sink.h"

/* Set the snapshot callbacks of a mirror sink (s->priv is its RpPg). */
extern void rp_pg_snapshot_install(RpSink *s);

#endif							/* RP_PG_SNAPSHOT_H */
