/*
 * rp_snaphandoff.h
 *    A one-item handoff to a delivery thread: a snapshot worker hands a
 *    chunk over and reads the next one from the source while the thread
 *    stores it, so the source's COPY and the sink's write overlap (on a
 *    small machine they are the two halves of the work).  One item in
 *    flight at most: item n+1 is handed over only after item n is stored
 *    (rp_snap_handoff_wait), so the snapshot's tokens advance in order.
 *
 * (Not a pipe: the one pipe is stream/rp_pipe.h, receiving -> delivery.)
 */
#ifndef RP_SNAPHANDOFF_H
#define RP_SNAPHANDOFF_H

#include <pthread.h>
#include <stdbool.h>

#include "base/rp_status.h"

/* Stores one item on the delivery thread: 0, or -1 after rp_fail(). */
typedef int (*RpSnapHandoffFn) (void *arg, void *item, bool first);

typedef struct RpSnapHandoff
{
	RpSnapHandoffFn fn;
	void	   *arg;
	pthread_t	thread;
	bool		started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void	   *pending;		/* handed over, not yet stored */
	bool		first;
	bool		quit;
	int			rc;
	RpHalt		halt;			/* the thread's failure, re-raised by the
								 * waiter */
	char		error[1024];
} RpSnapHandoff;

/* Start the delivery thread; -1 after rp_fail() (rp_snap_handoff_end still due). */
extern int	rp_snap_handoff_start(RpSnapHandoff *h, RpSnapHandoffFn fn, void *arg);

/* Wait until nothing is in flight; -1 (re-raised here) if storing failed. */
extern int	rp_snap_handoff_wait(RpSnapHandoff *h);

/* Hand item over (after rp_snap_handoff_wait: nothing is in flight). */
extern void rp_snap_handoff_give(RpSnapHandoff *h, void *item, bool first);

/* Let the item in flight finish, stop the thread, free h's locks. */
extern void rp_snap_handoff_end(RpSnapHandoff *h);

#endif							/* RP_SNAPHANDOFF_H */
