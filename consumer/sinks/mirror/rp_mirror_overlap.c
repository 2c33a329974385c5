/*
 * rp_mirror_overlap.c
 *    A bound flush applied on a thread of its own, while the batch folds on.
 *
 * Folding a batch is the consumer's work and applying it is the
 * destination's; done one after the other, each waits for the other.  So
 * once the maps pass their share mid-batch (rp_mirror_effects_bound), they
 * move to shallow copies of their tables, which this thread applies on the
 * session, inside the batch's destination transaction, while the delivery
 * thread folds the next changes into emptied maps.  The batch still commits
 * once, with its checkpoint, after the flush has landed (G1, G2).
 *
 * Only the delivery thread starts and waits, and it touches neither the
 * session nor the description of a table (which the copies share) until it
 * has waited: every path that would (resolving a table, describing it anew,
 * a full-match change, a key move reading the destination, a message, a
 * barrier, the end of the batch, a rollback) waits first.  Effects folded
 * after the move apply after the flush, in the order they came, exactly as
 * if the flush had run in line.
 *
 * The flush's error is the thread's (errors are per thread, base/rp_status.h):
 * it is kept here and raised again on the delivery thread by the wait.
 */
#include "rp_alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "base/rp_status.h"

typedef struct RpMirrorOverlap
{
	RpMirror   *pg;
	pthread_t	thread;
	bool		running;		/* thread started, not joined */
	RpMirrorOverlapJob job;		/* applies one copy */
	RpMirrorTable *copies;		/* the moved maps, in apply order */
	int			ncopies;
	size_t		held;			/* what the copies' maps hold, still charged */
	int			rc;				/* the thread's result */
	bool		failed;			/* the open transaction is lost */
	RpHalt		halt;
	char		sqlstate[6];
	char		error[1024];
} RpMirrorOverlap;

static void *
rp_mirror_overlap_main(void *arg)
{
	RpMirrorOverlap *ov = arg;

	ov->rc = 0;
	for (int i = 0; i < ov->ncopies && ov->rc == 0; i++)
		ov->rc = ov->job(ov->pg, &ov->copies[i]);
	if (ov->rc < 0)
	{
		ov->halt = rp_error_halt();
		snprintf(ov->error, sizeof(ov->error), "%s", rp_error());
		snprintf(ov->sqlstate, sizeof(ov->sqlstate), "%s", rp_error_sqlstate());
	}
	return NULL;
}

/* The copies' maps go, and what they held is given back. */
static void
rp_mirror_overlap_drop(RpMirror *pg, RpMirrorOverlap *ov)
{
	for (int i = 0; i < ov->ncopies; i++)
		rp_mirror_effects_drop(pg, &ov->copies[i]);
	if (ov->copies)
		rp_free(ov->copies);
	ov->copies = NULL;
	ov->ncopies = 0;
	ov->held = 0;
}

/* Join the thread, if it runs, and give the copies' memory back. */
static void
rp_mirror_overlap_join(RpMirror *pg)
{
	RpMirrorOverlap *ov = pg->overlap;

	if (ov == NULL || !ov->running)
		return;
	pthread_join(ov->thread, NULL);
	ov->running = false;
	if (ov->rc < 0)
		ov->failed = true;
	rp_mirror_overlap_drop(pg, ov);
}

int
rp_mirror_overlap_start(RpMirror *pg, RpMirrorTable *copies, int ncopies, RpMirrorOverlapJob job)
{
	RpMirrorOverlap *ov;
	int			err;

	if (rp_mirror_overlap_wait(pg) < 0)
	{
		for (int i = 0; i < ncopies; i++)
			rp_mirror_effects_drop(pg, &copies[i]);
		rp_free(copies);
		return -1;
	}
	if (pg->overlap == NULL)
		pg->overlap = rp_malloc0(sizeof(RpMirrorOverlap));
	ov = pg->overlap;
	ov->pg = pg;
	ov->job = job;
	ov->copies = copies;
	ov->ncopies = ncopies;
	ov->held = 0;
	for (int i = 0; i < ncopies; i++)
		ov->held += copies[i].held;
	ov->rc = 0;
	err = pthread_create(&ov->thread, NULL, rp_mirror_overlap_main, ov);
	if (err != 0)
	{
		/* no thread to be had: apply in line, as without the overlap */
		int			rc = 0;

		for (int i = 0; i < ov->ncopies && rc == 0; i++)
			rc = job(pg, &ov->copies[i]);
		rp_mirror_overlap_drop(pg, ov);
		return rc;
	}
	ov->running = true;
	return 0;
}

int
rp_mirror_overlap_wait(RpMirror *pg)
{
	RpMirrorOverlap *ov = pg->overlap;

	if (ov == NULL)
		return 0;
	rp_mirror_overlap_join(pg);
	if (!ov->failed)
		return 0;
	rp_fail(ov->halt, "%s", ov->error);
	if (ov->sqlstate[0])
		rp_error_set_sqlstate(ov->sqlstate);
	return -1;
}

void
rp_mirror_overlap_reset(RpMirror *pg)
{
	if (pg->overlap == NULL)
		return;
	rp_mirror_overlap_join(pg);
	rp_free(pg->overlap);
	pg->overlap = NULL;
}

size_t
rp_mirror_overlap_held(const RpMirror *pg)
{
	return pg->overlap && pg->overlap->running ? pg->overlap->held : 0;
}

bool
rp_mirror_overlap_running(const RpMirror *pg)
{
	return pg->overlap && pg->overlap->running;
}
