/*
 * rp_xidsnap.h
 *    Which source transactions a seed already saw.
 *
 * A binding is seeded by one SELECT that also returns
 * pg_current_snapshot() (xmin:xmax:xip,..., as 64-bit xid8).  A streamed
 * transaction carries only its 32-bit xid; it is extended to 64 bits as
 * the value nearest to the snapshot's xmax (transactions in the stream
 * after a seed are within 2^31 of it), then judged as PostgreSQL's own
 * visibility does: seen when below xmin, or below xmax and not in the
 * in-progress list.  Seen transactions are skipped, the others applied.
 */
#ifndef RP_XIDSNAP_H
#define RP_XIDSNAP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct RpXidSnap
{
	uint64_t	xmin;
	uint64_t	xmax;
	uint64_t   *xip;			/* sorted */
	int			nxip;
} RpXidSnap;

/* Parse pg_snapshot text; false when it is not one (snap left empty). */
extern bool rp_xidsnap_parse(RpXidSnap *snap, const char *text);
extern void rp_xidsnap_free(RpXidSnap *snap);

/* The 64-bit xid nearest the snapshot's xmax with these low 32 bits. */
extern uint64_t rp_xidsnap_extend(const RpXidSnap *snap, uint32_t xid);

/* Did the snapshot see the transaction as committed? */
extern bool rp_xidsnap_saw(const RpXidSnap *snap, uint32_t xid);

#endif							/* RP_XIDSNAP_H */
