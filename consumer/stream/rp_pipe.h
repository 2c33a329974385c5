/*
 * rp_pipe.h
 *    The delivery thread.  The receiving thread (the replication loop)
 *    assembles transactions and hands them over here; the delivery thread
 *    batches them into the sink.  Receiving from the source and applying to
 *    the sink then overlap instead of taking turns, and the receiving
 *    thread keeps answering the server however long the sink takes (G2).
 *
 * The receiving thread reads only `durable` (what the sink holds) for its
 * status updates.  A queue bound gives back-pressure: past it, pushing
 * waits (while the caller keeps sending status updates).
 */
#ifndef RP_PIPE_H
#define RP_PIPE_H

#include <pthread.h>

#include "stream/rp_deliver.h"
#include "base/rp_status.h"

typedef struct RpPipe
{
	RpDelivery *dl;				/* touched only by the delivery thread once
								 * started */
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* delivery thread: work arrived */
	pthread_cond_t drained;		/* receiving thread: progress made */
	RpItem	   *head;
	RpItem	   *tail;
	uint64_t	queued_bytes;
	uint64_t	max_queued_bytes;
	bool		flush_requested;	/* deliver the pending batch now */
	bool		reopen_requested;	/* SIGHUP: the sink reopens (log rotation) */
	uint64_t	advance_lsn;	/* idle advance requested (0: none) */
	uint64_t	advance_seq;	/* and the stream sequence it reaches (0: a
								 * slot) */
	bool		stopping;
	bool		abandoned;		/* a stop: finish the step in hand, nothing
								 * more */
	bool		exited;			/* the delivery thread returned */
	bool		busy;			/* the delivery thread holds undelivered work */
	bool		behind;			/* work was queued when the last batch was
								 * delivered */
	bool		failed;
	RpHalt		halt;
	char		error[1024];
	RpCheckpoint durable;		/* what the sink holds */
	uint64_t	last_pushed_commit; /* commit LSN of the newest transaction
									 * handed over */
	uint64_t	last_pushed_end;	/* highest end LSN handed over (the
									 * receiving thread's) */
	uint32_t	timeline;		/* the source's timeline, once it moved (0:
								 * the checkpoint's) */
	bool		started;
} RpPipe;

extern int	rp_pipe_start(RpPipe *p, RpDelivery *dl, uint64_t max_queued_bytes);

/*
 * Hand over an item (ownership passes); waits while the queue is full.
 * 1: a stop was requested while waiting (rp_stop_requested), the item is
 * dropped (never confirmed, the server sends it again).
 */
extern int	rp_pipe_push(RpPipe *p, RpItem *item, void (*tick) (void *), void *arg);

/* Deliver everything handed over so far and wait until it is durable; 1: stop requested first. */
extern int	rp_pipe_drain(RpPipe *p, void (*tick) (void *), void *arg);

/* Nothing queued, batched or being delivered? */
extern bool rp_pipe_idle(RpPipe *p);

/* Ask the sink to reopen its output (SIGHUP), between two units. */
extern void rp_pipe_reopen(RpPipe *p);

/*
 * The source is now on this timeline (a promotion, judged by the source):
 * checkpoints written after this call carry it.  Every position handed
 * over before lies below the switch point, so it is right on both.
 */
extern void rp_pipe_set_timeline(RpPipe *p, uint32_t timeline);

/* Ask for an idle advance to lsn (state sinks; see rp_deliver_advance). */
extern void rp_pipe_advance(RpPipe *p, uint64_t lsn, uint64_t source_seq);

/* The durable checkpoint; -1 (with the delivery thread's error) once it failed. */
extern int	rp_pipe_durable(RpPipe *p, RpCheckpoint *ck);

/* Deliver what is queued and batched, then end the thread (ends of a run). */
extern void rp_pipe_stop(RpPipe *p);

/*
 * A stop (SIGINT, SIGTERM): drop the queue, let the delivery thread finish
 * the step in hand (a sink's waits on anything outside the consumer give up
 * on the stop flag) and end it; tick runs while waiting.  `durable` is then
 * what the sink holds.
 */
extern void rp_pipe_abandon(RpPipe *p, void (*tick) (void *), void *arg);

#endif							/* RP_PIPE_H */
