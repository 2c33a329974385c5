/*
 * rp_run_step.c
 *    One connection's life (pg_recvlogical's StreamLogicalLog): open the
 *    source after what is durable, read frames into the assembler, hand
 *    whole transactions to the delivery thread, record idle positions,
 *    report what is durable upstream (G2), and the two clean ends: a stop
 *    and --endpos.  The same loop for both kinds of source (rp_source.h).
 */
#include "rp_alloc.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/rp_clock.h"
#include "base/rp_status.h"
#include "run/rp_run_int.h"

void
rp_run_log(RpRun *run, RpRunLogLevel level, const char *fmt,...)
{
	char		line[2048];
	va_list		ap;

	if (run->h.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	run->h.log(run->h.arg, level, line);
}

void
rp_run_emit(RpRun *run, RpEvent *ev)
{
	if (ev->slot == NULL)
		ev->slot = run->o.slot;
	rp_event_emit(&run->h.events, ev);
}

/* The one place that reports progress upstream: flush = durable (G2). */
static int
send_feedback(RpRun *run, bool force, bool request_reply)
{
	RpCheckpoint durable;

	if (rp_pipe_durable(&run->pipe, &durable) < 0)
		return -1;
	if (run->src->feedback == NULL)
		return 0;
	return run->src->feedback(run->src, durable.end_lsn, force, request_reply);
}

/* While waiting for the delivery thread: keep the server answered. */
static void
wait_tick(void *arg)
{
	RpRun	   *run = arg;

	/* a failure here shows up again in the main loop's next call */
	if (send_feedback(run, false, false) < 0)
		rp_error_clear();
}

/* The stream's figures for the program: lag in bytes and seconds, or in messages. */
static void
show_progress(RpRun *run)
{
	RpRunProgress p;
	RpSourceEnd e;
	uint64_t	end = RP_COUNT_LOAD(run->counters.checkpoint_lsn);
	int64_t		now = rp_clock_wall_us();
	int64_t		oldest;

	memset(&e, 0, sizeof(e));
	run->src->end(run->src, &e);
	if (!e.by_seq)
		RP_COUNT_STORE(run->h.metrics->server_wal_end, e.end);
	if (e.server_version)
		RP_COUNT_STORE(run->h.metrics->server_version, e.server_version);
	rp_lagq_durable(&run->lagq, end);
	oldest = rp_lagq_oldest(&run->lagq);
	RP_COUNT_STORE(run->h.metrics->pending_commit_time, oldest);
	if (end != run->lag_ck || run->h.metrics->checkpoint_moved_at == 0)
	{
		/* the checkpoint's age counts from its last move */
		run->lag_ck = end;
		RP_COUNT_STORE(run->h.metrics->checkpoint_moved_at, now);
	}
	if (run->h.progress == NULL)
		return;
	memset(&p, 0, sizeof(p));
	p.txns = RP_COUNT_LOAD(run->counters.txns);
	p.changes = RP_COUNT_LOAD(run->counters.changes);
	p.checkpoint_lsn = end;
	p.lag_msgs = -1;
	p.known = e.end > 0;
	if (e.by_seq)
	{
		/*
		 * A stream reader: the WAL position is not its to know; the stream's
		 * messages past what is durable here are (read ahead but not applied
		 * is still behind).
		 */
		uint64_t	done = run->read_seq;

		if (run->pipe.started)
		{
			/*
			 * not rp_pipe_durable: a failed delivery is the main loop's to
			 * report
			 */
			pthread_mutex_lock(&run->pipe.lock);
			done = run->pipe.durable.source_seq;
			pthread_mutex_unlock(&run->pipe.lock);
		}
		p.lag_msgs = e.end > done ? (int64_t) (e.end - done) : 0;
	}
	else
		p.lag_bytes = e.end > end ? e.end - end : 0;
	p.lag_seconds = rp_metrics_lag_seconds(oldest, now);

	/*
	 * Caught up: the server has sent what it had when we connected, nothing
	 * received waits for the sink and no transaction is half received.  WAL
	 * the server decoded to nothing (another database, a checkpoint) leaves
	 * bytes behind until the next idle confirmation, which is not being
	 * behind.
	 */
	p.caught_up = e.by_seq ? p.lag_msgs == 0 : e.sent_all && oldest == 0 && !rp_asm_busy(&run->asm_);
	run->h.progress(run->h.arg, &p);
}

/* A reopen asked for (SIGHUP): the sink belongs to the delivery thread, it reopens between units. */
static void
take_reopen(RpRun *run)
{
	if (run->h.take_reopen && run->h.take_reopen(run->h.arg))
		rp_pipe_reopen(&run->pipe);
}

/*
 * Deliver everything the assembler completed (items from a stream get
 * source_seq, else 0); *done once --endpos (an LSN) is reached.
 */
static int
deliver_ready(RpRun *run, bool *done, uint64_t source_seq)
{
	RpItem	   *item;
	int			rc;

	while ((item = rp_asm_pop(&run->asm_)) != NULL)
	{
		uint64_t	end;

		/* from a stream: the position the checkpoint will record */
		if (item->kind == RP_ITEM_TXN)
			item->txn->source_seq = source_seq;
		else if (item->kind == RP_ITEM_MESSAGE)
			item->msg.source_seq = source_seq;
		end = item->kind == RP_ITEM_TXN ? item->txn->end_lsn
			: item->kind == RP_ITEM_MESSAGE ? item->msg.lsn : 0;
		if (item->kind == RP_ITEM_TXN)
			rp_lagq_push(&run->lagq, item->txn->end_lsn, item->txn->commit_time);

		rc = rp_pipe_push(&run->pipe, item, wait_tick, run);
		if (rc < 0)
			return -1;
		/* a stop while the queue was full: the caller's loop stops */
		if (rc > 0)
			return 0;
		if (run->o.endpos && end >= run->o.endpos)
		{
			*done = true;
			break;
		}
	}
	return 0;
}

/*
 * SIGINT/SIGTERM: the delivery thread finishes the step in hand (a sink's
 * wait on anything outside the consumer gives up at once), what is queued
 * is dropped, and only what the sink holds is confirmed.  0, or -1 when
 * the delivery thread halted.
 */
static int
stop_stream(RpRun *run)
{
	rp_pipe_abandon(&run->pipe, wait_tick, run);
	run->src->finish(run->src, run->pipe.durable.end_lsn);
	if (run->pipe.failed && run->pipe.halt != RP_HALT_NONE)
		return rp_fail(run->pipe.halt, "%s", run->pipe.error);
	if (run->pipe.failed)
		rp_run_log(run, RP_RUN_LOG_NOTICE,
				   "%s; stopping (what was not acknowledged comes again on the next run)",
				   run->pipe.error);
	return 0;
}

/* endpos reached: what was pushed delivered and durable, then a clean end. */
static int
stream_done(RpRun *run)
{
	RpCheckpoint durable;
	int			rc;

	rc = rp_pipe_drain(&run->pipe, wait_tick, run);
	if (rc < 0)
		return -1;
	if (rc > 0)
		return stop_stream(run);
	if (rp_pipe_durable(&run->pipe, &durable) < 0)
		return -1;
	run->src->finish(run->src, durable.end_lsn);
	return 0;
}

/*
 * Open the source after what is durable.  The first connection binds the
 * checkpoint to the source and starts the delivery thread.
 */
static int
connect_source(RpRun *run, bool have_ck, RpSourceOpen *o)
{
	memset(o, 0, sizeof(*o));
	o->first = !run->pipe.started;
	o->have_ck = have_ck;
	o->early = run->asm_.early;
	if (o->first)
		o->ck = run->dl.ck;
	else if (rp_pipe_durable(&run->pipe, &o->ck) < 0)
		return -1;
	/* a timeline switch must not cut what is still on its way to the sink */
	o->held_end = run->pipe.last_pushed_end > o->ck.end_lsn ? run->pipe.last_pushed_end : o->ck.end_lsn;
	if (run->src->open(run->src, o) < 0)
		return -1;
	if (have_ck && o->bind.timeline != 0 && o->bind.timeline != o->ck.timeline)
	{
		if (o->first)
			run->dl.ck.timeline = o->bind.timeline;
		else
			rp_pipe_set_timeline(&run->pipe, o->bind.timeline);
	}
	if (o->first)
	{
		if (!have_ck)
		{
			run->dl.ck.system_id = o->bind.system_id;
			run->dl.ck.timeline = o->bind.timeline;
			snprintf(run->dl.ck.slot, sizeof(run->dl.ck.slot), "%s", run->o.slot);
		}
		memcpy(run->dl.ck.source, o->bind.source, sizeof(o->bind.source));

		/*
		 * The origin floor: a log's history begins where the stream starts,
		 * and says so durably before anything is delivered.  A slot made
		 * again later starts past it, and the next start halts (gap) instead
		 * of taking the new slot's start for the log's, which would leave out
		 * every change committed in between.
		 */
		if (!have_ck && run->dl.sink->keeps_floor && o->bind.end_lsn != 0 &&
			rp_deliver_advance(&run->dl, o->bind.end_lsn, 0) < 0)
			return -1;
		if (rp_pipe_start(&run->pipe, &run->dl, 2 * run->o.limits.max_bytes) < 0)
			return -1;
	}
	run->streamed = true;
	rp_run_emit(run, &o->up);
	return 0;
}

/* Nothing assembled, queued or batched: an idle position may be recorded. */
static bool
idle(RpRun *run)
{
	return !rp_asm_busy(&run->asm_) && rp_pipe_idle(&run->pipe);
}

/*
 * A slot's keepalive: idle positions, endpos, the reply asked for.  One
 * read while a batch is on its way is held (*held) and taken once the
 * delivery is idle: the server sends no other until our next status update,
 * and --endpos past WAL that decodes to nothing waited for it, a whole
 * --status-interval.
 */
static int
on_keepalive(RpRun *run, const RpSourceRead *r, bool *done, uint64_t *held)
{
	if (!idle(run))
	{
		if (r->lsn > *held)
			*held = r->lsn;

		/*
		 * Past the end position with every transaction received whole: the
		 * drain at the end delivers the batch now, not at its --batch-ms.
		 */
		if (run->o.endpos && r->lsn >= run->o.endpos && !rp_asm_busy(&run->asm_))
			*done = true;
	}
	else
	{
		int64_t		now = rp_clock_wall_us();

		/*
		 * A sink that records an idle position pays a write for it: once per
		 * status interval, or when the server asks (it does when it waits for
		 * us, e.g. to shut down).
		 */
		if (r->reply_requested ||
			now - run->last_advance_us >= (int64_t) run->o.status_interval_ms * 1000)
		{
			uint32_t	tli = 0;

			/*
			 * the position on the source's timeline as it is now (a standby
			 * promoted since the last commit): not recorded when unknown
			 */
			if (run->src->timeline_now == NULL || run->src->timeline_now(run->src, &tli))
			{
				if (tli != 0)
					rp_pipe_set_timeline(&run->pipe, tli);
				rp_pipe_advance(&run->pipe, r->lsn, 0);
			}
			run->last_advance_us = now;
		}
		if (run->o.endpos && r->lsn >= run->o.endpos)
			*done = true;
	}
	if (r->reply_requested && send_feedback(run, true, false) < 0)
		return -1;
	return 0;
}

/* What the loop carries between reads. */
typedef struct RpRunTurn
{
	bool		done;
	bool		in_txn;			/* read into a transaction not yet complete */
	uint64_t	read_seq;		/* a stream's last sequence read (or durable) */
	uint64_t	held_lsn;		/* a stream's position read while busy:
								 * recorded once idle */
	uint64_t	held_seq;
	uint64_t	held_keepalive; /* a slot's keepalive read while busy (0:
								 * none) */
} RpRunTurn;

/* The held keepalive, once nothing is on its way: as if it came now. */
static int
take_held_keepalive(RpRun *run, RpRunTurn *t)
{
	RpSourceRead k;

	if (t->held_keepalive == 0 || !idle(run))
		return 0;
	memset(&k, 0, sizeof(k));
	k.kind = RP_SOURCE_POSITION;
	k.lsn = t->held_keepalive;
	t->held_keepalive = 0;
	return on_keepalive(run, &k, &t->done, &t->held_keepalive);
}

/* One thing read from the source. */
static int
on_read(RpRun *run, RpRunTurn *t, const RpSourceRead *r)
{
	int			rc;

	if (r->seq)
		t->read_seq = r->seq;
	switch (r->kind)
	{
		case RP_SOURCE_NONE:
			break;
		case RP_SOURCE_FRAME:
			/* the transaction's own checkpoint passes a held position */
			t->held_lsn = t->held_seq = t->held_keepalive = 0;
			rc = rp_asm_frame(&run->asm_, r->data, r->len, r->lsn);
			RP_COUNT_ADD(run->h.metrics->bytes, r->len);
			t->in_txn = !r->ends;
			if (rc < 0 || (r->ends && deliver_ready(run, &t->done, r->seq) < 0))
				return -1;
			break;
		case RP_SOURCE_POSITION:
			if (run->src->keepalives)
				return on_keepalive(run, r, &t->done, &t->held_keepalive);

			/*
			 * a stream's empty transactions: the checkpoint moves only when
			 * nothing is in flight
			 */
			if (idle(run))
				rp_pipe_advance(&run->pipe, r->lsn, r->seq);
			else
			{
				t->held_lsn = r->lsn;
				t->held_seq = r->seq;
			}
			if (run->o.endpos && r->lsn >= run->o.endpos)
				t->done = true;
			break;
		case RP_SOURCE_END:
			return rp_fail(RP_HALT_NONE, "the server ended the replication stream");
	}
	return 0;
}

int
rp_run_once(RpRun *run, bool have_ck)
{
	RpSourceOpen o;
	RpRunTurn	t;
	int			wait_ms = 1000;

	memset(&t, 0, sizeof(t));
	if (connect_source(run, have_ck, &o) < 0)
		return -1;
	if (run->src->keepalives && run->o.status_interval_ms < wait_ms)
		wait_ms = run->o.status_interval_ms;
	if (!run->src->keepalives)
	{
		/*
		 * an end already reached by what is durable: nothing to read (as a
		 * slot's keepalive says)
		 */
		t.read_seq = o.ck.source_seq;
		t.done = (run->o.endpos_seq && t.read_seq >= run->o.endpos_seq) ||
			(run->o.endpos && o.ck.end_lsn >= run->o.endpos);
	}

	/*
	 * A slot: a status update asking for the walsender's reply, whose
	 * position says at once whether what the server had at connect is sent
	 * (caught up, show_progress), not at its keepalive some 30 s later.
	 */
	else if (run->pipe.started && send_feedback(run, true, true) < 0)
		return -1;
	for (;;)
	{
		RpSourceRead r;

		if (run->o.endpos_seq && t.read_seq >= run->o.endpos_seq && !t.in_txn)
			t.done = true;

		/*
		 * A position read while a batch was on its way is recorded once that
		 * batch is delivered, so that the checkpoint reaches it (and --endpos
		 * N ends with the checkpoint at N, a position message included).
		 */
		if (t.held_seq && t.done && rp_pipe_drain(&run->pipe, wait_tick, run) < 0)
			return -1;
		if (t.held_seq && idle(run))
		{
			rp_pipe_advance(&run->pipe, t.held_lsn, t.held_seq);
			t.held_lsn = t.held_seq = 0;
		}
		if (take_held_keepalive(run, &t) < 0)
			return -1;
		if (t.done)
			return stream_done(run);
		if (rp_stop_requested())
			return stop_stream(run);
		take_reopen(run);

		/*
		 * Every turn, whatever the source: a failed delivery thread ends the
		 * connection's life here (a stream reader has no feedback to send,
		 * and without this look it waited on an idle stream for ever).
		 */
		if (send_feedback(run, false, false) < 0)
			return -1;
		run->read_seq = t.read_seq;
		show_progress(run);
		/* a held keepalive is looked at again soon: the batch may be done */
		if (run->src->read(run->src, &r, t.held_keepalive ? 20 : wait_ms) < 0 || on_read(run, &t, &r) < 0)
			return -1;
	}
}
