/*
 * rp_pipe.c
 *    The delivery thread (see rp_pipe.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "base/rp_clock.h"
#include "stream/rp_conn.h"
#include "stream/rp_pipe.h"

/*
 * Sent by a stop to the delivery thread only, while it finishes its step:
 * installed without SA_RESTART, it ends a write() blocked on a reader that
 * stopped reading (standard output into a stalled pipe) with EINTR, which
 * rp_io_write turns into a failure once a stop is requested.  libpq and
 * the sinks' polls retry on EINTR.
 */
#define RP_PIPE_WAKE_SIGNAL SIGUSR2

static void
rp_pipe_wake_handler(int signo)
{
	(void) signo;
}

/*
 * Installed by every start: the same handler again is harmless, and the
 * library keeps no process-wide flag of its own (tests/check_globals.sh).
 */
static void
rp_pipe_install_wake(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = rp_pipe_wake_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;			/* no SA_RESTART: the blocked call returns */
	sigaction(RP_PIPE_WAKE_SIGNAL, &sa, NULL);
}

/* Record the outcome of one step of delivery work (lock held). */
static void
rp_pipe_publish(RpPipe *p, int rc)
{
	p->durable = p->dl->ck;
	if (rc < 0 && !p->failed)
	{
		p->failed = true;
		p->halt = rp_error_halt();
		snprintf(p->error, sizeof(p->error), "%s", rp_error());
	}
	p->busy = p->head != NULL || p->advance_lsn != 0 || rp_deliver_pending(p->dl);
	pthread_cond_broadcast(&p->drained);
}

/*
 * A batch was just delivered (or the step left none pending): were more
 * items waiting by then?  Then the sink is the slower side (a backlog is
 * being caught up), and the next batch goes as soon as the queue runs
 * empty instead of waiting out its time (lock held).
 */
static void
rp_pipe_note_delivered(RpPipe *p, uint64_t batches_before)
{
	if (p->dl->nbatches != batches_before)
		p->behind = p->head != NULL;
}

static void *
rp_pipe_main(void *arg)
{
	RpPipe	   *p = arg;

	pthread_mutex_lock(&p->lock);
	/* abandoned (a stop): the step in hand is done, the rest is not confirmed */
	while (!p->failed && !p->abandoned)
	{
		RpItem	   *item = p->head;
		int			rc = 0;
		uint64_t	batches;

		/* the source moved to a new timeline (never back: see rp_ck_for) */
		if (p->timeline > p->dl->ck.timeline)
			p->dl->ck.timeline = p->timeline;

		if (p->reopen_requested)
		{
			RpSink	   *sink = p->dl->sink;

			p->reopen_requested = false;
			pthread_mutex_unlock(&p->lock);
			if (sink->reopen)
				rc = sink->reopen(sink);
			pthread_mutex_lock(&p->lock);
			rp_pipe_publish(p, rc);
			continue;
		}
		if (item)
		{
			p->head = item->next;
			if (p->head == NULL)
				p->tail = NULL;
			p->queued_bytes -= item->txn ? rp_store_length(&item->txn->store) : 0;
			pthread_cond_broadcast(&p->drained);
			batches = p->dl->nbatches;
			pthread_mutex_unlock(&p->lock);
			rc = rp_deliver_item(p->dl, item, rp_clock_wall_ms());
			pthread_mutex_lock(&p->lock);
			rp_pipe_note_delivered(p, batches);
			rp_pipe_publish(p, rc);
			continue;
		}
		if (p->flush_requested || p->stopping)
		{
			p->flush_requested = false;
			pthread_mutex_unlock(&p->lock);
			rc = rp_deliver_flush(p->dl, true, rp_clock_wall_ms());
			pthread_mutex_lock(&p->lock);
			rp_pipe_publish(p, rc);
			if (p->stopping)
				break;
			continue;
		}
		if (p->advance_lsn)
		{
			uint64_t	lsn = p->advance_lsn;
			uint64_t	seq = p->advance_seq;

			p->advance_lsn = 0;
			p->advance_seq = 0;
			pthread_mutex_unlock(&p->lock);
			rc = rp_deliver_advance(p->dl, lsn, seq);
			pthread_mutex_lock(&p->lock);
			rp_pipe_publish(p, rc);
			continue;
		}
		if (rp_deliver_pending(p->dl))
		{
			struct timespec ts;
			bool		now = p->behind;

			/*
			 * A batch is filling: deliver it when its time is up, or at once
			 * when it holds what queued up while the last one was applied
			 * (the sink would otherwise sit idle with a backlog waiting).
			 */
			if (!now)
			{
				rp_clock_deadline(&ts, 20);
				pthread_cond_timedwait(&p->wake, &p->lock, &ts);
			}
			if (p->head == NULL && !p->flush_requested && !p->stopping && !p->abandoned)
			{
				batches = p->dl->nbatches;
				pthread_mutex_unlock(&p->lock);
				rc = rp_deliver_flush_for(p->dl, now ? RP_FLUSH_BACKLOG : RP_FLUSH_NONE, rp_clock_wall_ms());
				pthread_mutex_lock(&p->lock);
				rp_pipe_note_delivered(p, batches);
				rp_pipe_publish(p, rc);
			}
			continue;
		}
		pthread_cond_wait(&p->wake, &p->lock);
	}
	p->exited = true;
	pthread_cond_broadcast(&p->drained);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int
rp_pipe_start(RpPipe *p, RpDelivery *dl, uint64_t max_queued_bytes)
{
	memset(p, 0, sizeof(*p));
	p->dl = dl;
	p->max_queued_bytes = max_queued_bytes;
	p->durable = dl->ck;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->drained, NULL);
	rp_pipe_install_wake();
	if (pthread_create(&p->thread, NULL, rp_pipe_main, p) != 0)
		return rp_fail(RP_HALT_NONE, "could not start the delivery thread");
	p->started = true;
	return 0;
}

/* Wait for the delivery thread to make progress, at most 100 ms. */
static void
rp_pipe_wait(RpPipe *p)
{
	struct timespec ts;

	rp_clock_deadline(&ts, 100);
	pthread_cond_timedwait(&p->drained, &p->lock, &ts);
}

static int
rp_pipe_failure(RpPipe *p)
{
	return rp_fail(p->halt, "%s", p->error);
}

int
rp_pipe_push(RpPipe *p, RpItem *item, void (*tick) (void *), void *arg)
{
	uint64_t	bytes = item->txn ? rp_store_length(&item->txn->store) : 0;

	pthread_mutex_lock(&p->lock);
	while (!p->failed && p->head && p->queued_bytes + bytes > p->max_queued_bytes)
	{
		if (rp_stop_requested())
		{
			/* never confirmed: the server sends it again */
			pthread_mutex_unlock(&p->lock);
			rp_item_free(item);
			return 1;
		}
		pthread_mutex_unlock(&p->lock);
		if (tick)
			tick(arg);
		pthread_mutex_lock(&p->lock);
		rp_pipe_wait(p);
	}
	if (p->failed)
	{
		pthread_mutex_unlock(&p->lock);
		rp_item_free(item);
		return rp_pipe_failure(p);
	}
	if (item->kind == RP_ITEM_TXN)
		p->last_pushed_commit = item->txn->commit_lsn;
	if (item->kind == RP_ITEM_TXN && item->txn->end_lsn > p->last_pushed_end)
		p->last_pushed_end = item->txn->end_lsn;
	if (item->kind == RP_ITEM_MESSAGE && item->msg.lsn > p->last_pushed_end)
		p->last_pushed_end = item->msg.lsn;
	item->next = NULL;
	if (p->tail)
		p->tail->next = item;
	else
		p->head = item;
	p->tail = item;
	p->queued_bytes += bytes;
	p->busy = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

int
rp_pipe_drain(RpPipe *p, void (*tick) (void *), void *arg)
{
	pthread_mutex_lock(&p->lock);
	p->flush_requested = true;
	pthread_cond_signal(&p->wake);
	while (!p->failed && (p->busy || p->flush_requested))
	{
		if (rp_stop_requested())
		{
			pthread_mutex_unlock(&p->lock);
			return 1;
		}
		pthread_mutex_unlock(&p->lock);
		if (tick)
			tick(arg);
		pthread_mutex_lock(&p->lock);
		if (p->busy || p->flush_requested)
			rp_pipe_wait(p);
	}
	pthread_mutex_unlock(&p->lock);
	return p->failed ? rp_pipe_failure(p) : 0;
}

bool
rp_pipe_idle(RpPipe *p)
{
	bool		idle;

	pthread_mutex_lock(&p->lock);
	idle = !p->busy && p->head == NULL && !p->failed;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

void
rp_pipe_reopen(RpPipe *p)
{
	pthread_mutex_lock(&p->lock);
	p->reopen_requested = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

void
rp_pipe_set_timeline(RpPipe *p, uint32_t timeline)
{
	pthread_mutex_lock(&p->lock);
	p->timeline = timeline;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

void
rp_pipe_advance(RpPipe *p, uint64_t lsn, uint64_t source_seq)
{
	pthread_mutex_lock(&p->lock);
	p->advance_lsn = lsn;
	p->advance_seq = source_seq;
	/* held work until the thread took it: a drain waits for it to be durable */
	p->busy = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

int
rp_pipe_durable(RpPipe *p, RpCheckpoint *ck)
{
	bool		failed;

	pthread_mutex_lock(&p->lock);
	*ck = p->durable;
	failed = p->failed;
	pthread_mutex_unlock(&p->lock);
	return failed ? rp_pipe_failure(p) : 0;
}

/* The queue's items, freed (lock held or the thread gone). */
static void
rp_pipe_free_queue(RpPipe *p)
{
	while (p->head)
	{
		RpItem	   *next = p->head->next;

		rp_item_free(p->head);
		p->head = next;
	}
	p->tail = NULL;
	p->queued_bytes = 0;
}

void
rp_pipe_abandon(RpPipe *p, void (*tick) (void *), void *arg)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->lock);
	rp_pipe_free_queue(p);
	p->abandoned = true;
	pthread_cond_signal(&p->wake);
	while (!p->exited)
	{
		RpSink	   *sink = p->dl->sink;

		pthread_mutex_unlock(&p->lock);

		/*
		 * again at each turn: a cancel that found the sink idle misses the
		 * next query
		 */
		if (sink->interrupt)
			sink->interrupt(sink);
		/* the thread is not joined yet: its id is still valid */
		pthread_kill(p->thread, RP_PIPE_WAKE_SIGNAL);
		if (tick)
			tick(arg);
		pthread_mutex_lock(&p->lock);
		if (!p->exited)
			rp_pipe_wait(p);
	}
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	p->started = false;
}

void
rp_pipe_stop(RpPipe *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	rp_pipe_free_queue(p);
	p->started = false;
}
