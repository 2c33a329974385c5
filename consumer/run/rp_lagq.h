/*
 * rp_lagq.h
 *    The commit times of transactions received and not yet durable, in
 *    order: what "seconds behind the source" is measured by (now minus the
 *    oldest's commit time; 0 when everything received is durable, idle
 *    included).  The receiving thread pushes, and drops what the durable
 *    checkpoint has passed; nothing here is shared.
 *
 * Bounded: past RP_LAGQ_CAP entries the newest one is stretched to the
 * new end and keeps its older commit time, so the lag read is never less
 * than the truth.
 */
#ifndef RP_LAGQ_H
#define RP_LAGQ_H

#include <stdbool.h>
#include <stdint.h>

#define RP_LAGQ_CAP 1024

typedef struct RpLagEntry
{
	uint64_t	end_lsn;		/* the checkpoint at or past it makes it
								 * durable */
	int64_t		commit_time;	/* us since the Unix epoch */
}			RpLagEntry;

typedef struct RpLagQueue
{
	RpLagEntry	e[RP_LAGQ_CAP];
	int			head;			/* the oldest */
	int			n;
}			RpLagQueue;

extern void rp_lagq_init(RpLagQueue * q);

/* A transaction handed to the sink (ends ascend; one not above the last is taken in). */
extern void rp_lagq_push(RpLagQueue * q, uint64_t end_lsn, int64_t commit_time);

/* The checkpoint is durable through durable_lsn: what it covers goes. */
extern void rp_lagq_durable(RpLagQueue * q, uint64_t durable_lsn);

/* The oldest pending commit time, or 0 when nothing received awaits the sink. */
extern int64_t rp_lagq_oldest(const RpLagQueue * q);

#endif							/* RP_LAGQ_H */
