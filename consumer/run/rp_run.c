/*
 * rp_run.c
 *    The run (rp_run.h): what streaming needs once the sink is open (the
 *    checkpoint, the spill store, the assembler, the delivery thread), the
 *    reconnecting with backoff around one connection's life
 *    (rp_run_step.c), and every end of a run.
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <string.h>

#include "base/rp_status.h"
#include "run/rp_run_int.h"

/* the longest pause between two connection attempts (s) */
#define RP_BACKOFF_MAX_S 30

void
rp_run_init(RpRun *run, const RpRunOptions *o, const RpRunHooks *h)
{
	memset(run, 0, sizeof(*run));
	run->o = *o;
	run->h = *h;
	rp_lagq_init(&run->lagq);
	if (run->h.metrics == NULL)
	{
		/* counted for no one */
		run->h.metrics = &run->own_metrics;
		rp_metrics_init(run->h.metrics);
	}
}

/*
 * The checkpoint (*ck, *have_ck), the spill store, the assembler, the
 * delivery.  0, or -1 (rp_error).
 */
static int
run_setup(RpRun *run, RpCheckpoint *ck, int *have_ck)
{
	RpSink	   *sink = run->sink;

	if (sink->owns_checkpoint)
		*have_ck = sink->checkpoint(sink, ck);
	else
		*have_ck = rp_ckpt_read(run->o.ckpt_path, ck);
	if (*have_ck < 0)
		return -1;
	if (rp_deliver_check_sink(sink, run->o.messages) < 0)
		return -1;
	if (rp_spill_init(&run->spill, run->o.spill_dir, run->o.max_memory, run->o.max_spill) < 0)
		return -1;
	sink->spill = &run->spill;	/* the mirror's effect map charges it too */
	rp_asm_init(&run->asm_, &run->spill, *have_ck ? ck->commit_lsn : 0);
	run->asm_.events = run->h.events;

	/*
	 * a sink that can apply a streamed transaction before its commit gets its
	 * blocks
	 */
	run->asm_.early = sink->handle_chunk != NULL && run->o.early_apply;
	if (rp_deliver_init(&run->dl, sink, ck, sink->owns_checkpoint ? NULL : run->o.ckpt_path,
						run->o.view_path, &run->o.limits) < 0)
		return -1;
	rp_deliver_count_into(&run->dl, &run->counters);
	rp_deliver_set_events(&run->dl, &run->h.events);

	/*
	 * no idle_hook: the receiving thread itself answers the server while the
	 * sink works
	 */
	if (run->h.started && run->h.started(run->h.arg, sink) < 0)
		return -1;
	return 0;
}

/*
 * After a lost connection: the source sends again from the durable
 * position (*durable); what was already handed to the delivery thread is
 * skipped as a duplicate.  0, or -1 (rp_error).
 */
static int
run_resume_point(RpRun *run, RpCheckpoint *durable, bool *lost_sink)
{
	*lost_sink = rp_pipe_durable(&run->pipe, durable) < 0;
	if (!*lost_sink)
	{
		run->asm_.watermark = durable->commit_lsn > run->pipe.last_pushed_commit
			? durable->commit_lsn : run->pipe.last_pushed_commit;
		return 0;
	}

	/*
	 * The delivery thread failed too. A fail-closed halt (a refused change,
	 * another writer's fence) ends the run, even when the source's trouble
	 * came first: the main loop had not looked at the delivery thread yet.
	 */
	if (rp_error_halt() != RP_HALT_NONE)
		return -1;

	/*
	 * The delivery thread lost its sink (a destination restart): start
	 * delivery over from what is durable.  The relation view is reloaded too,
	 * so a schema change rolled back with the failed batch is seen (and
	 * applied, or halted on) again.
	 */
	rp_error_clear();
	*durable = run->pipe.durable;
	rp_pipe_stop(&run->pipe);
	rp_deliver_free(&run->dl);
	if (rp_deliver_init(&run->dl, run->sink, durable,
						run->sink->owns_checkpoint ? NULL : run->o.ckpt_path, run->o.view_path,
						&run->o.limits) < 0)
		return -1;
	/* counting goes on where it was: the metrics never go backwards */
	rp_deliver_count_into(&run->dl, &run->counters);
	rp_deliver_set_events(&run->dl, &run->h.events);
	if (rp_pipe_start(&run->pipe, &run->dl, 2 * run->o.limits.max_bytes) < 0)
		return -1;
	run->asm_.watermark = durable->commit_lsn;
	return 0;
}

static void
disconnect(RpRun *run)
{
	run->src->close(run->src);
	/* partial transactions are sent again by the source */
	rp_asm_reset(&run->asm_);
}

/*
 * Stream, reconnecting with backoff after connection trouble: 0 at endpos
 * or a stop, -1 on a fail-closed halt or with no_loop (rp_error).
 */
static int
run_loop(RpRun *run, int have_ck, uint64_t progress_lsn)
{
	int			backoff = 1;

	for (;;)
	{
		char		why[1024];
		bool		lost_sink;
		RpCheckpoint durable;

		if (rp_run_once(run, have_ck > 0) == 0)
			return 0;
		RP_COUNT_ADD(run->h.metrics->halts[rp_error_halt()], 1);
		/* a stop that met connection trouble is still a stop */
		if (rp_stop_requested() && rp_error_halt() == RP_HALT_NONE)
			return 0;

		/*
		 * fail-closed halts and no_loop end the run; connection trouble
		 * retries
		 */
		if (rp_error_halt() == RP_HALT_NONE)
		{
			RpEvent		ev;

			/* connection trouble (a halt is told by the stage that halted) */
			rp_event_init(&ev, RP_EVENT_CONN_LOST);
			rp_run_emit(run, &ev);
		}
		if (rp_error_halt() != RP_HALT_NONE || run->o.no_loop)
			return -1;
		snprintf(why, sizeof(why), "%s", rp_error());
		disconnect(run);
		if (run_resume_point(run, &durable, &lost_sink) < 0)
		{
			/* the delivery thread's halt, seen only now */
			RP_COUNT_ADD(run->h.metrics->halts[rp_error_halt()], 1);
			return -1;
		}

		/*
		 * The backoff starts over after progress (the durable position
		 * moved), or after a source connection that got to stream; a sink
		 * that fails again and again (the source streams fine each time) is
		 * retried ever less often, up to RP_BACKOFF_MAX_S.
		 */
		if (durable.end_lsn > progress_lsn || (run->streamed && !lost_sink))
			backoff = 1;
		if (durable.end_lsn > progress_lsn)
			progress_lsn = durable.end_lsn;
		run->streamed = false;
		RP_COUNT_ADD(run->h.metrics->retries[lost_sink ? RP_RETRY_SINK : RP_RETRY_SOURCE], 1);
		rp_run_log(run, RP_RUN_LOG_ERROR, "%s; reconnecting in %d s", why, backoff);
		if (!rp_pause_ms(backoff * 1000))
			return 0;
		backoff = backoff * 2 > RP_BACKOFF_MAX_S ? RP_BACKOFF_MAX_S : backoff * 2;

		/*
		 * Once a connection has bound the checkpoint to the source (the
		 * delivery thread runs), later ones check against it; before that
		 * there is still no checkpoint to check.
		 */
		if (run->pipe.started)
			have_ck = 1;
	}
}

/* Every end of a run: the source, the delivery thread, the backfill. */
static void
run_stop_threads(RpRun *run)
{
	disconnect(run);
	if (rp_stop_requested())
		rp_pipe_abandon(&run->pipe, NULL, NULL);
	rp_pipe_stop(&run->pipe);
	rp_backfill_stop(run->o.backfill);	/* after the delivery thread: it may
										 * hold a chunk */
}

/* A run that failed: stopped, its spill files removed, the error kept; -1. */
static int
run_fail(RpRun *run)
{
	RpHalt		halt = rp_error_halt();
	char		state[8];
	char	   *why = rp_strndup(rp_error(), strlen(rp_error()));

	snprintf(state, sizeof(state), "%s", rp_error_sqlstate() ? rp_error_sqlstate() : "");
	run_stop_threads(run);
	/* spill files are private garbage now */
	if (run->spill.dir)
	{
		RpSpill		again;

		rp_spill_init(&again, run->spill.dir, 0, 0);
		rp_free(again.dir);
	}
	/* what stopping said is not the run's error */
	rp_fail(halt, "%s", why);
	if (state[0])
		rp_error_set_sqlstate(state);
	rp_free(why);
	return -1;
}

int
rp_run(RpRun *run, RpSource *src, RpSink *sink)
{
	RpCheckpoint ck;
	int			have_ck = 0;

	memset(&ck, 0, sizeof(ck));
	run->src = src;
	run->sink = sink;
	if (run_setup(run, &ck, &have_ck) < 0 || run_loop(run, have_ck, ck.end_lsn) < 0)
		return run_fail(run);
	run_stop_threads(run);
	return 0;
}

void
rp_run_free(RpRun *run)
{
	rp_deliver_free(&run->dl);
	rp_asm_free(&run->asm_);

	/*
	 * the spill store's directory name, which run_setup's rp_spill_init
	 * copied
	 */
	rp_free(run->spill.dir);
	run->spill.dir = NULL;
}
