/*
 * rp_natsrc.c
 *    The NATS source (rp_natsrc.h): the connection, the checkpoint's check
 *    against the stream, a pull consumer from the checkpoint on
 *    (rp_natsrc_pull.c), and each message through the hole checks into a
 *    frame (rp_natsrc_frame.c).
 *
 * The consumer is the server's view of where reading is; the reader does
 * not trust it: every message must be the next sequence, and one that is
 * not starts a new consumer at the next one (out_of_order).  A fetch that
 * fails ends the open (the run reopens after what is durable).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_counter.h"
#include "base/rp_metrics.h"
#include "base/rp_status.h"
#include "natsrc/rp_natsrc.h"
#include "natsrc/rp_natsrc_int.h"

void
rp_natsrc_source_name(const char *stream, char *out, size_t len)
{
	snprintf(out, len, "nats:%s", stream);
}

#ifndef RP_HAVE_NATS

bool
rp_natsrc_available(void)
{
	return false;
}

RpNatsSrc  *
rp_natsrc_new(const RpNatsSrcOptions *o)
{
	(void) o;
	rp_fail(RP_HALT_CONFIG, "this replicant was built without NATS (libnats)");
	return NULL;
}

void
rp_natsrc_free(RpNatsSrc *s)
{
	(void) s;
}

int
rp_natsrc_open(RpNatsSrc *s, const RpCheckpoint *ck, bool have_ck, RpCheckpoint *bind)
{
	(void) s, (void) ck, (void) have_ck, (void) bind;
	return rp_fail(RP_HALT_CONFIG, "this replicant was built without NATS (libnats)");
}

int
rp_natsrc_read(RpNatsSrc *s, RpNatsSrcEvent *ev, int timeout_ms)
{
	(void) s, (void) ev, (void) timeout_ms;
	return rp_fail(RP_HALT_CONFIG, "this replicant was built without NATS (libnats)");
}

uint64_t
rp_natsrc_last_seq(const RpNatsSrc *s)
{
	(void) s;
	return 0;
}

void
rp_natsrc_close(RpNatsSrc *s)
{
	(void) s;
}

void
rp_natsrc_metrics(RpBuf *out, const void *arg)
{
	(void) out, (void) arg;
}

#else

#include "base/rp_clock.h"

bool
rp_natsrc_available(void)
{
	return true;
}

static char *
dup_or_null(const char *s)
{
	return s ? rp_strndup(s, strlen(s)) : NULL;
}

RpNatsSrc  *
rp_natsrc_new(const RpNatsSrcOptions *o)
{
	RpNatsSrc  *s = rp_malloc(sizeof(RpNatsSrc));

	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->o.url = dup_or_null(o->url);
	s->o.stream = dup_or_null(o->stream);
	s->o.subjects = dup_or_null(o->subjects);
	rp_buf_init(&s->frame, 4096);
	rp_buf_init(&s->rec, 1024);
	rp_buf_init(&s->tmp, 256);
	return s;
}

void
rp_natsrc_free(RpNatsSrc *s)
{
	if (s == NULL)
		return;
	rp_natsrc_close(s);
	rp_natsrc_rels_free(s);
	rp_buf_free(&s->frame);
	rp_buf_free(&s->rec);
	rp_buf_free(&s->tmp);
	rp_free((void *) s->o.url);
	rp_free((void *) s->o.stream);
	if (s->o.subjects)
		rp_free((void *) s->o.subjects);
	if (s->subject)
		rp_free(s->subject);
	rp_free(s);
}

void
rp_natsrc_close(RpNatsSrc *s)
{
	rp_natsrc_unsubscribe(s);
	if (s->js)
		jsCtx_Destroy(s->js);
	rp_natsio_close(s->nc);
	s->js = NULL;
	s->nc = NULL;

	/*
	 * the assembler forgets the half-read transaction: describe every table
	 * again
	 */
	rp_natsrc_rels_unsent(s);
}

uint64_t
rp_natsrc_last_seq(const RpNatsSrc *s)
{
	return s->last_seq;
}

void
rp_natsrc_metrics(RpBuf *out, const void *arg)
{
	const RpNatsSrcCounters *c = &((const RpNatsSrc *) arg)->count;
	uint64_t	read = RP_COUNT_LOAD(c->read_seq);
	uint64_t	last = RP_COUNT_LOAD(c->last_seq);

	rp_metrics_sample(out, "replicant_nats_source_read_seq", "gauge", "The last stream sequence this reader read.", NULL, read);
	rp_metrics_sample(out, "replicant_nats_source_last_seq", "gauge", "The stream's last sequence, as this reader last saw it.", NULL, last);
	rp_metrics_sample(out, "replicant_nats_source_lag_messages", "gauge", "Messages the stream holds past what this reader read.", NULL, last > read ? last - read : 0);
	rp_metrics_sample(out, "replicant_nats_source_messages_total", "counter", "Stream messages read (relation and position messages too).", NULL, RP_COUNT_LOAD(c->messages));
	rp_metrics_sample(out, "replicant_nats_source_opens_total", "counter", "Times the stream was opened (the first, and every reopen after a failure).", NULL, RP_COUNT_LOAD(c->opens));
	rp_metrics_sample(out, "replicant_nats_source_fetches_total", "counter", "Fetches from the stream's pull consumer answered.", NULL, RP_COUNT_LOAD(c->fetches));
	rp_metrics_sample(out, "replicant_nats_source_replays_total", "counter", "Messages the consumer delivered again (below the next sequence), dropped; the consumer started again where reading is.", NULL, RP_COUNT_LOAD(c->replays));
	rp_metrics_sample(out, "replicant_nats_source_skips_total", "counter", "Times the consumer skipped a message the stream holds; started again at it.", NULL, RP_COUNT_LOAD(c->skips));
	rp_metrics_sample(out, "replicant_nats_source_relation_gets_total", "counter", "Relation descriptions fetched by sequence (a reader that started after them).", NULL, RP_COUNT_LOAD(c->relation_gets));
}

/*
 * The checkpoint against the stream: the message at its sequence must be
 * the one it recorded (a transaction's last message at its commit LSN, or
 * a position at its end LSN), and the stream must still hold everything
 * after it.
 */
static int
check_checkpoint(RpNatsSrc *s, const RpCheckpoint *ck, uint64_t first, uint64_t last)
{
	char		source[RP_SOURCE_NAME_MAX];
	char		c[RP_LSN_BUFLEN];
	natsMsg    *m = NULL;
	RpNatsHead	h;
	bool		same;
	bool		nontx;

	rp_natsrc_source_name(s->o.stream, source, sizeof(source));
	if (rp_ckpt_check_kind(ck, source) < 0)
		return -1;
	if (ck->source_seq > last)
		return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" ends at sequence %" PRIu64 ", before the checkpoint's sequence %" PRIu64 ": it is not the stream this checkpoint was taken from",
					   s->o.stream, last, ck->source_seq);
	if (first > ck->source_seq + 1)
		return rp_fail(RP_HALT_GAP, "NATS stream \"%s\": hole after the checkpoint: its first message is at sequence %" PRIu64 ", the checkpoint reaches %" PRIu64 " (sequences %" PRIu64 " to %" PRIu64 " were deleted or expired)",
					   s->o.stream, first, ck->source_seq, ck->source_seq + 1, first - 1);
	if (ck->source_seq == 0 || ck->source_seq < first)
		return 0;
	if (rp_natsrc_get(s, ck->source_seq, &m) < 0)
		return -1;
	rp_nats_head_parse(&h, rp_natsio_msg_header, m);
	{
		const char *t = rp_natsio_msg_header(m, "Replicant-Transactional");

		/*
		 * a non-transactional message moves only the end LSN, not the dedup
		 * watermark
		 */
		nontx = t != NULL && strcmp(t, "false") == 0;
	}
	natsMsg_Destroy(m);

	/*
	 * the checkpoint's timeline is the last commit's: a position published
	 * after a promotion may say a later one
	 */
	same = !h.bad && h.system_id == ck->system_id && h.timeline >= ck->timeline &&
		((h.kind == RP_NATS_KIND_DATA && h.last && !nontx && h.commit_lsn == ck->commit_lsn) ||
		 (h.kind == RP_NATS_KIND_DATA && nontx && h.end_lsn == ck->end_lsn) ||
		 (h.kind == RP_NATS_KIND_POSITION && h.end_lsn <= ck->end_lsn));
	if (!same)
		return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\": the message at the checkpoint's sequence %" PRIu64 " is not the end of the transaction at commit %s the checkpoint records: it is not the stream this checkpoint was taken from",
					   s->o.stream, ck->source_seq, rp_lsn_format(ck->commit_lsn, c));
	return 0;
}

/* Without a checkpoint: the source identity from the stream's first message (waiting for one). */
static int
learn_identity(RpNatsSrc *s, uint64_t *first, uint64_t *last, RpCheckpoint *bind)
{
	natsMsg    *m = NULL;
	RpNatsHead	h;
	bool		told = false;

	while (*last == 0)
	{
		if (!told)
			fprintf(stderr, "replicant: NATS stream \"%s\" is empty: waiting for its first message\n",
					s->o.stream);
		told = true;
		if (!rp_pause_ms(1000))
			return rp_fail(RP_HALT_NONE, "stopped while waiting for NATS stream \"%s\"", s->o.stream);
		if (rp_natsrc_stream_state(s, first, last) < 0)
			return -1;
	}
	if (rp_natsrc_get(s, *first, &m) < 0)
		return -1;
	rp_nats_head_parse(&h, rp_natsio_msg_header, m);
	natsMsg_Destroy(m);
	if (h.kind == RP_NATS_KIND_OTHER || h.bad)
		return rp_fail(RP_HALT_GAP, "NATS stream \"%s\": the message at sequence %" PRIu64 " was not written by the replicant NATS sink (missing or malformed Replicant headers)",
					   s->o.stream, *first);
	bind->system_id = h.system_id;
	bind->timeline = h.timeline;
	return 0;
}

/*
 * The stream against the registry (natsio/rp_natsio_reg.c): made when its
 * writer recorded it, and, for a reader without a checkpoint, holding its
 * slot's history from the beginning, unless --nats-from-current-start
 * accepts the loss.
 */
static int
check_origin(RpNatsSrc *s, bool have_ck, uint64_t first)
{
	RpNatsioReg reg;
	const char *hint = "--nats-from-current-start reads it from its first whole transaction, and what it lost is lost to the sink";

	if (rp_natsio_reg_get(s->js, s->o.stream, &reg) < 0)
		return -1;
	if (!have_ck && s->o.from_current_start)
	{
		if (!reg.found || reg.created != s->created || first > 1)
			fprintf(stderr, "replicant: NATS stream \"%s\" is read from its first whole transaction (--nats-from-current-start): what it held before is not in the sink\n",
					s->o.stream);
		return 0;
	}
	if (reg.found && reg.created != s->created)
	{
		char		was[48];
		char		now[48];

		rp_natsio_time_text(reg.created, was, sizeof(was));
		rp_natsio_time_text(s->created, now, sizeof(now));
		return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" was made at %s, but the stream slot \"%s\" wrote was made at %s (stream registry %s): it was deleted and made again, and does not hold that history%s%s",
					   s->o.stream, now, reg.slot, was, RP_NATSIO_REGISTRY,
					   have_ck ? "" : "; ", have_ck ? "" : hint);
	}
	if (have_ck)
		return 0;
	if (!reg.found)
		return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" has no entry in the stream registry %s (an earlier replicant wrote it, or the entry was deleted): nothing says it holds its slot's changes from the beginning; %s",
					   s->o.stream, RP_NATSIO_REGISTRY, hint);
	if (first > 1)
		return rp_fail(RP_HALT_GAP, "NATS stream \"%s\" no longer holds its first messages (its first sequence is %" PRIu64 "): they were purged or dropped by limits; %s",
					   s->o.stream, first, hint);
	return 0;
}

int
rp_natsrc_open(RpNatsSrc *s, const RpCheckpoint *ck, bool have_ck, RpCheckpoint *bind)
{
	RpNatsioAuth a = {s->o.url, s->o.creds, s->o.tls_ca, s->o.tls_cert, s->o.tls_key};
	uint64_t	first = 0,
				last = 0;
	uint64_t	start;
	natsStatus	st;

	if (rp_natsio_connect(&s->nc, &a) < 0)
		return -1;
	st = natsConnection_JetStream(&s->js, s->nc, NULL);
	if (st != NATS_OK)
	{
		s->js = NULL;
		return rp_fail(RP_HALT_NONE, "NATS JetStream context failed (%s)", rp_natsio_status_text(st));
	}
	if (rp_natsrc_stream_state(s, &first, &last) < 0)
		return -1;
	s->last_seq = last;
	memset(bind, 0, sizeof(*bind));
	rp_natsrc_source_name(s->o.stream, bind->source, sizeof(bind->source));
	if (have_ck)
	{
		if (check_origin(s, true, first) < 0 || check_checkpoint(s, ck, first, last) < 0)
			return -1;
		bind->system_id = ck->system_id;
		bind->timeline = ck->timeline;
		start = ck->source_seq + 1;
		s->skip_partial = false;
	}
	else
	{
		/* before its first message is read: it may be gone too */
		bool		checked = last > 0;

		if (checked && check_origin(s, false, first) < 0)
			return -1;
		if (learn_identity(s, &first, &last, bind) < 0 ||
			(!checked && check_origin(s, false, first) < 0))
			return -1;
		start = first;

		/*
		 * a stream whose beginning is gone (accepted): start at its first
		 * whole transaction
		 */
		s->skip_partial = first > 1 || s->o.from_current_start;
	}
	rp_natsrc_chain_init(&s->chain, start, have_ck ? ck->end_lsn : 0, true, bind->system_id,
						 bind->timeline);
	s->open_txn = false;
	s->last_msg_ms = s->last_check_ms = rp_clock_mono_ms();
	return rp_natsrc_subscribe(s, start);
}

/*
 * Nothing delivered for a while: is the stream ahead of us?  Then the
 * consumer is stuck (its server gone without libnats noticing): an error,
 * and the run reopens the stream after what is durable.
 */
static int
stall_check(RpNatsSrc *s)
{
	int64_t		now = rp_clock_mono_ms();
	uint64_t	first,
				last;

	if (now - s->last_msg_ms < RP_NATSRC_STALL_MS || now - s->last_check_ms < RP_NATSRC_STALL_MS)
		return 0;
	s->last_check_ms = now;
	if (rp_natsrc_stream_state(s, &first, &last) < 0)
		return -1;
	s->last_seq = last;
	if (s->chain.next_seq != 0 && last >= s->chain.next_seq)
		return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": nothing delivered for %d s while the stream holds sequence %" PRIu64 " and this reader is at %" PRIu64 ": reopening",
					   s->o.stream, RP_NATSRC_STALL_MS / 1000, last, s->chain.next_seq - 1);
	return 0;
}

/* Drop the subscription and start a new one at seq. */
static int
resubscribe(RpNatsSrc *s, uint64_t seq)
{
	rp_natsrc_unsubscribe(s);
	return rp_natsrc_subscribe(s, seq);
}

/*
 * A delivered message that is not the next one (seq != chain.next_seq).
 * Below it: the consumer replays what was read (a consumer recreated on a
 * leader change has been seen to start again further back): dropped, and
 * a consumer started again where reading is.  Above it: a hole only if the stream
 * really lacks the next message (deleted or expired, so the get finds
 * none); a message that is there was skipped by the consumer, which is
 * started again at it.  1: the message is dropped; 0: let the hole checks
 * see it (they refuse it); -1 after rp_fail.
 */
static int
out_of_order(RpNatsSrc *s, uint64_t seq)
{
	uint64_t	next = s->chain.next_seq;
	natsMsg    *m = NULL;
	jsErrCode	code = 0;
	natsStatus	st;

	if (seq < next)
	{
		RP_COUNT_ADD(s->count.replays, 1);

		/*
		 * once per replay: the next messages of the old consumer are replays
		 * too
		 */
		if (s->resub_at == next)
			return 1;
		s->resub_at = next;
		return resubscribe(s, next) < 0 ? -1 : 1;
	}
	st = js_GetMsg(&m, s->js, s->o.stream, next, NULL, &code);
	if (st == NATS_OK)
	{
		natsMsg_Destroy(m);
		RP_COUNT_ADD(s->count.skips, 1);
		s->resub_at = next;
		return resubscribe(s, next) < 0 ? -1 : 1;
	}
	if (code == JSNoMessageFoundErr || st == NATS_NOT_FOUND)
		return 0;
	return rp_natsrc_js_fail(s, "checking a skipped sequence", st, code);
}

int
rp_natsrc_read(RpNatsSrc *s, RpNatsSrcEvent *ev, int timeout_ms)
{
	int64_t		deadline = rp_clock_mono_ms() + timeout_ms;

	memset(ev, 0, sizeof(*ev));
	for (;;)
	{
		natsMsg    *m = NULL;
		jsMsgMetaData *meta = NULL;
		int64_t		left = deadline - rp_clock_mono_ms();
		natsStatus	st;
		uint64_t	seq;
		int			rc;

		st = rp_natsrc_next(s, &m, left > 0 ? left : 0);
		if (st == NATS_TIMEOUT)
			return stall_check(s);
		if (st != NATS_OK)
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": reading failed (%s)", s->o.stream,
						   rp_natsio_status_text(st));
		st = natsMsg_GetMetaData(&meta, m);
		if (st != NATS_OK)
		{
			rp_natsio_msg_free(m);
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": a delivered message has no metadata (%s)",
						   s->o.stream, rp_natsio_status_text(st));
		}
		seq = meta->Sequence.Stream;
		s->last_msg_ms = rp_clock_mono_ms();
		if (s->chain.next_seq != 0 && seq != s->chain.next_seq)
		{
			/*
			 * not the next message: a consumer's replay or skip, or a real
			 * hole?
			 */
			rc = out_of_order(s, seq);
			if (rc != 0)
			{
				jsMsgMetaData_Destroy(meta);
				rp_natsio_msg_free(m);
				if (rc < 0)
					return -1;
				continue;
			}
		}
		ev->seq = seq;
		if (meta->Sequence.Stream + meta->NumPending > s->last_seq)
			s->last_seq = meta->Sequence.Stream + meta->NumPending;
		RP_COUNT_ADD(s->count.messages, 1);
		RP_COUNT_STORE(s->count.read_seq, ev->seq);
		RP_COUNT_STORE(s->count.last_seq, s->last_seq);
		jsMsgMetaData_Destroy(meta);
		s->resub_at = 0;
		rc = rp_natsrc_message(s, m, ev->seq, ev);
		rp_natsio_msg_free(m);
		if (rc < 0 || ev->kind != RP_NATSRC_NONE)
			return rc < 0 ? -1 : 0;
		if (rp_clock_mono_ms() >= deadline)
			return 0;
	}
}

#endif							/* RP_HAVE_NATS */
