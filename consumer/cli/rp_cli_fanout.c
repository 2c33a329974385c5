/*
 * rp_cli_fanout.c
 *    The run with a JetStream stream as its source (--source nats://):
 *    one connection's life, the counterpart of rp_cli_run.c's stream_once
 *    for a slot.  The stream's frames go through the same assembler,
 *    delivery thread and sink; what differs is the position (the stream
 *    sequence rides with each transaction into the checkpoint), that
 *    nothing is acknowledged upstream (the stream's retention, not this
 *    reader, holds the data), and the sequence form of --endpos.
 */
#include "rp_alloc.h"

#include <stdio.h>

#include "base/rp_status.h"
#include "cli/rp_cli_run_int.h"

/* The stream source's options, from the command line. */
RpNatsSrc *
rp_cli_fanout_source(const RpCli *cli)
{
	RpNatsSrcOptions o;

	memset(&o, 0, sizeof(o));
	o.url = cli->source;
	o.stream = cli->nats.stream;
	o.subjects = cli->nats_subjects;
	o.creds = cli->nats.creds;
	o.tls_ca = cli->nats.tls_ca;
	o.tls_cert = cli->nats.tls_cert;
	o.tls_key = cli->nats.tls_key;
	return rp_natsrc_new(&o);
}

/*
 * Open the stream after what is durable (on the first connection the
 * checkpoint, which this binds to the stream's source and starts the
 * delivery thread with).
 */
static int
source_connect(RpRun *run, bool have_ck, RpCheckpoint *from)
{
	RpCli	   *cli = run->cli;
	RpCheckpoint ck;
	RpCheckpoint bind;

	if (run->nsrc == NULL && (run->nsrc = rp_cli_fanout_source(cli)) == NULL)
		return -1;
	if (!run->pipe.started)
		ck = run->dl.ck;
	else if (rp_pipe_durable(&run->pipe, &ck) < 0)
		return -1;
	if (rp_natsrc_open(run->nsrc, &ck, have_ck, &bind) < 0)
		return -1;
	*from = ck;
	if (!run->pipe.started)
	{
		if (!have_ck)
		{
			run->dl.ck.system_id = bind.system_id;
			run->dl.ck.timeline = bind.timeline;
			snprintf(run->dl.ck.slot, sizeof(run->dl.ck.slot), "%s", cli->slot);
		}
		memcpy(run->dl.ck.source, bind.source, sizeof(bind.source));
		if (rp_pipe_start(&run->pipe, &run->dl, 2 * cli->limits.max_bytes) < 0)
			return -1;
	}
	run->streamed = true;
	{
		RpEvent		ev;

		rp_event_init(&ev, RP_EVENT_CONN_UP);
		ev.stream = cli->nats.stream;
		rp_run_emit(run, &ev);
	}
	return 0;
}

/* Nothing assembled, queued or batched: an idle position may be recorded. */
static bool
idle(RpRun *run)
{
	return !rp_asm_busy(&run->asm_) && rp_pipe_idle(&run->pipe);
}

int
rp_run_nats_once(RpRun *run, bool have_ck)
{
	RpCli	   *cli = run->cli;
	RpCheckpoint from;
	uint64_t	read_seq = 0;	/* the last sequence read (or durable) */
	bool		in_txn = false; /* read into a transaction not yet complete */
	uint64_t	held_lsn = 0;	/* a position read while busy: recorded once idle */
	uint64_t	held_seq = 0;
	bool		done;

	if (source_connect(run, have_ck, &from) < 0)
		return -1;
	/* an end already reached by what is durable: nothing to read (as a slot's keepalive says) */
	if (have_ck || run->pipe.started)
		read_seq = from.source_seq;
	done = (cli->endpos_seq && read_seq >= cli->endpos_seq) ||
		(cli->endpos && (have_ck || run->pipe.started) && from.end_lsn >= cli->endpos);
	for (;;)
	{
		RpNatsSrcEvent ev;
		int			rc;

		if (cli->endpos_seq && read_seq >= cli->endpos_seq && !in_txn)
			done = true;

		/*
		 * A position read while a batch was on its way is recorded once that
		 * batch is delivered, so that the checkpoint reaches it (and --endpos
		 * N ends with the checkpoint at N, a position message included).
		 */
		if (held_seq && done && rp_pipe_drain(&run->pipe, rp_run_wait_tick, run) < 0)
			return -1;
		if (held_seq && idle(run))
		{
			rp_pipe_advance(&run->pipe, held_lsn, held_seq);
			held_lsn = held_seq = 0;
		}
		if (done)
			return rp_run_stream_done(run);
		if (rp_stop_requested())
			return rp_run_stop_stream(run);
		rp_run_take_reopen(run);
		run->read_seq = read_seq;
		rp_run_show_progress(run);
		if (rp_natsrc_read(run->nsrc, &ev, 1000) < 0)
			return -1;
		if (ev.seq)
			read_seq = ev.seq;
		switch (ev.kind)
		{
			case RP_NATSRC_NONE:
				break;
			case RP_NATSRC_FRAME:
				/* the transaction's own checkpoint passes a held position */
				held_lsn = held_seq = 0;
				rc = rp_asm_frame(&run->asm_, ev.data, ev.len, ev.lsn);
				RP_COUNT_ADD(run->metrics.bytes, ev.len);
				in_txn = !ev.ends;
				if (rc < 0 || (ev.ends && rp_run_deliver_ready(run, &done, ev.seq) < 0))
					return -1;
				break;
			case RP_NATSRC_POSITION:
				/* empty transactions: the checkpoint moves only when nothing is in flight */
				if (idle(run))
					rp_pipe_advance(&run->pipe, ev.lsn, ev.seq);
				else
				{
					held_lsn = ev.lsn;
					held_seq = ev.seq;
				}
				if (cli->endpos && ev.lsn >= cli->endpos)
					done = true;
				break;
		}
	}
}
