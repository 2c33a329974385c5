/*
 * rp_nats.c
 *    The NATS JetStream sink's callbacks (docs/sinks.md, docs/guarantees.md).
 *
 * The stream is the checkpoint (owns_checkpoint): handle_batch publishes
 * every data message of the batch within the window, each expecting the
 * stream's last sequence to be the previous one's, and returns only when
 * all are acknowledged, so "returned" is "durable" and the library then
 * confirms the batch's end LSN.  On any failure it drains, backs off,
 * re-reads the stream's last message and resumes after it (inside the
 * same call), so the stream holds every change once whatever failed.  A
 * tail another writer wrote since this one knew the stream's end fences
 * this one (halt).
 *
 * A transaction's last data message is known only at its end, so one
 * message is held back and published when the next one (or the end)
 * comes: the last gets Replicant-Last.  A transaction with no data
 * message publishes nothing; when a batch ends with such transactions a
 * position message (control subject, Replicant-Op: position) records the
 * batch's end LSN, so what the library confirms is always what the
 * stream's tail says (a restart's checkpoint is never behind the slot).
 */
#include "rp_alloc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "base/rp_clock.h"
#include "base/rp_counter.h"
#include "base/rp_metrics.h"
#include "base/rp_status.h"
#include "sinks/nats/rp_nats.h"
#include "sinks/nats/rp_nats_int.h"

void
rp_nats_options_init(RpNatsOptions *o)
{
	memset(o, 0, sizeof(*o));
	o->replicas = RP_NATS_DEFAULT_REPLICAS;
	o->window = RP_NATS_DEFAULT_WINDOW;
	o->ack_timeout_s = RP_NATS_DEFAULT_ACK_TIMEOUT_S;
}

#ifndef RP_HAVE_NATS

bool
rp_nats_available(void)
{
	return false;
}

RpSink	   *
rp_nats_open(const RpNatsOptions *opts, const RpSinkEnv *env)
{
	rp_fail(RP_HALT_CONFIG, "this replicant was built without the NATS sink (libnats)");
	return NULL;
}

bool
rp_nats_is(const RpSink *s)
{
	return false;
}

#else							/* RP_HAVE_NATS */

#include "stream/rp_deliver.h"

static const char rp_nats_name[] = "nats";

/* How long a tail below what the stream acknowledged is asked again before it halts. */
#define RP_NATS_BEHIND_S 20

/* ---- the tail ---- */

/*
 * The tail read again while writing, against the end this writer knew:
 * 0, or -1 after rp_fail.
 */
static int
check_went_back(RpNatsSink *ns, uint64_t last_seq)
{
	/*
	 * A stream whose end went back lost messages it had acknowledged, and the
	 * slot has been confirmed past them: resuming after the older tail would
	 * write the next changes behind a hole no reader can see.  Seen with
	 * nats-server 2.9.10 when the leader and a follower were killed together
	 * while the third node caught up (a restarted node reset its copy and
	 * voted the stale one leader), and when the whole cluster was stopped
	 * while one node's copy still caught up.  A stream restored from a backup
	 * or re-created looks the same.  A leader just elected might answer
	 * before it has applied what it holds, so the tail is asked again for
	 * RP_NATS_BEHIND_S before this halts: what a stream lost stays lost.
	 */
	if (last_seq < ns->known_seq)
	{
		char		end[24];
		int64_t		now = rp_clock_mono_us();

		rp_lsn_format(ns->stream_end, end);
		if (ns->behind_since_us == 0)
			ns->behind_since_us = now;
		if (now - ns->behind_since_us < (int64_t) RP_NATS_BEHIND_S * 1000000)
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\" ends at sequence %llu, below the %llu it acknowledged to this writer; asking again",
						   ns->stream, (unsigned long long) last_seq,
						   (unsigned long long) ns->known_seq);
		return rp_fail(RP_HALT_GAP, "NATS stream \"%s\" lost messages it had acknowledged: its last sequence is %llu, this writer had %llu acknowledged (up to end LSN %s), and so for %d s; the changes in between are missing from it and the slot has been confirmed past them: rebuild the stream (docs/operations.md)",
					   ns->stream, (unsigned long long) last_seq,
					   (unsigned long long) ns->known_seq, end, RP_NATS_BEHIND_S);
	}
	return 0;
}

/*
 * Read the stream's tail into the resume point.  fence: this writer has
 * started; a tail that moved since it last knew the stream's end and that
 * another writer wrote halts it.
 */
static int
read_tail(RpNatsSink *ns, bool fence)
{
	RpNatsTailState st;
	uint64_t	last_seq;
	RpNatsHead	last;
	RpNatsHead	data;
	RpCheckpoint bound = ns->ck;	/* the source this run streams (set by
									 * handle_batch) */

	if (rp_nats_tail_read(&ns->link, ns->stream, ns->prefix, &st, &last, &data) < 0)
		return -1;

	/*
	 * deleted, made again, or its first messages gone since the open checked
	 * it
	 */
	if (st.missing)
		return rp_nats_stream_gone(ns->stream, ns->created);
	if (rp_nats_stream_identity(ns->stream, st.created, st.first_seq, st.last_seq, ns->created) < 0)
		return -1;
	last_seq = st.last_seq;
	if (!fence && last_seq > 0)
		snprintf(ns->predecessor, sizeof(ns->predecessor), "%s", last.writer);
	if (fence)
	{
		switch (rp_nats_fence_verdict(last_seq, ns->known_seq, last.writer, ns->writer,
									  ns->predecessor))
		{
			case RP_NATS_FENCE_NONE:
				break;
			case RP_NATS_FENCE_LATE:
				fprintf(stderr, "replicant: NATS stream \"%s\": the previous writer's last messages (%s) landed after this writer started; resuming after them\n",
						ns->stream, last.writer);
				break;
			case RP_NATS_FENCE_OTHER:
				return rp_fail(RP_HALT_SINK, "NATS stream \"%s\" was appended to by writer %s while this writer (%s) was writing it: fenced (another replicant writes this slot's stream)",
							   ns->stream, last.writer, ns->writer);
		}
	}

	if (fence && check_went_back(ns, last_seq) < 0)
		return -1;
	ns->behind_since_us = 0;
	ns->known_seq = last_seq;
	memset(&ns->resume, 0, sizeof(ns->resume));
	ns->resume.none = true;
	ns->stream_end = 0;
	ns->resume_prev_end = 0;
	ns->have_ck = 0;
	if (data.kind == RP_NATS_KIND_DATA || data.kind == RP_NATS_KIND_POSITION)
	{
		if (strcmp(data.slot, ns->slot) != 0)
			return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" holds the changes of slot \"%s\", not of slot \"%s\"",
						   ns->stream, data.slot, ns->slot);

		/*
		 * a later timeline than this writer's is another source; an earlier
		 * one is this source before a promotion the run judged
		 */
		if (fence && bound.system_id != 0 &&
			(data.system_id != bound.system_id || data.timeline > bound.timeline))
			return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" holds changes of another source (system id or timeline)",
						   ns->stream);
		rp_nats_resume_from_head(&data, &ns->resume, &ns->ck);
		ns->stream_end = data.last ? data.end_lsn : data.prev_end_lsn;
		ns->resume_prev_end = data.prev_end_lsn;
		ns->have_ck = 1;
	}

	/*
	 * descriptions are published again: which ones the stream holds is not
	 * known
	 */
	ns->nrels = 0;
	ns->need_tail = false;
	return 0;
}

/*
 * The server's advisories about the stream (made, updated, deleted): the
 * writer reads the stream again before its next publish, so limits that
 * drop messages, or a stream deleted or made again, halt it while it runs
 * too (read_tail checks both).  Called on libnats' thread.
 */
static void
stream_advisory(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
	RpNatsSink *ns = closure;
	const char *subj = natsMsg_GetSubject(msg);

	if (subj && (strstr(subj, ".UPDATED.") || strstr(subj, ".DELETED.") || strstr(subj, ".CREATED.")))
		__atomic_store_n(&ns->stream_event, 1, __ATOMIC_RELEASE);
	natsMsg_Destroy(msg);
}

static int
watch_stream(RpNatsSink *ns)
{
	char		subject[512];
	natsStatus	st;

	snprintf(subject, sizeof(subject), "$JS.EVENT.ADVISORY.STREAM.*.%s", ns->stream);
	st = natsConnection_Subscribe(&ns->advisories, ns->link.nc, subject, stream_advisory, ns);
	if (st != NATS_OK)
	{
		ns->advisories = NULL;
		return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": subscribing to its advisories failed (%s)",
					   ns->stream, rp_natsio_status_text(st));
	}
	return 0;
}

/* ---- callbacks ---- */

static int
rp_nats_checkpoint(RpSink *s, RpCheckpoint *ck)
{
	RpNatsSink *ns = s->priv;

	if (ns->have_ck)
		*ck = ns->ck;
	return ns->have_ck;
}

static int
rp_nats_schema_change(RpSink *s, const RpRelation *before, const RpRelation *after,
					  RpSchemaChange change)
{
	RpNatsSink *ns = s->priv;

	/* a log keeps every version: the next change of it is described anew */
	rp_nats_rel_forget(ns, after->relid);
	if (change != RP_SCHEMA_NEW)
		ns->schema_changed = true;
	return 0;
}

static void
failure_note(RpNatsSink *ns, const RpNatsWin *w)
{
	if (w->failure == RP_NATS_FAIL_FULL)
	{
		RP_COUNT_ADD(ns->count.stream_full, 1);
		fprintf(stderr, "replicant: warning: NATS stream \"%s\" is full (its max bytes or messages with discard new): waiting for room\n",
				ns->stream);
	}
	else
	{
		RP_COUNT_ADD(ns->count.retries, 1);
		if (w->failure == RP_NATS_FAIL_RETRY && w->status == RP_NATS_ST_LOST)
			fprintf(stderr, "replicant: warning: NATS stream \"%s\": publishing failed (no answer); reading its tail and resuming\n",
					ns->stream);
		else if (w->failure == RP_NATS_FAIL_RETRY)
			fprintf(stderr, "replicant: warning: NATS stream \"%s\": publishing failed (JetStream error %d); reading its tail and resuming\n",
					ns->stream, w->err_code);
	}
}

/* What one unit publishes: a batch, or a non-transactional message. */
typedef struct RpNatsUnit
{
	RpTxn	  **txns;
	int			n;
	const RpMessage *msg;
} RpNatsUnit;

/*
 * Publish a unit until the stream acknowledged all of it: on a failure,
 * back off, read the tail again (fencing) and resume after it.  0 when
 * durable; -1 on a halt, a stop, or a batch that must be delivered again.
 */
static int
publish_unit(RpNatsSink *ns, RpDelivery *dl, const RpNatsUnit *u, const RpCheckpoint *ck)
{
	int			backoff_ms = 100;

	/* the identity this run binds its checkpoint to (the library checked it) */
	ns->ck.system_id = ck->system_id;
	ns->ck.timeline = ck->timeline;
	for (;;)
	{
		int			rc = 0;
		RpNatsWin	w;

		if (__atomic_exchange_n(&ns->stream_event, 0, __ATOMIC_ACQ_REL))
			ns->need_tail = true;
		if (ns->need_tail && read_tail(ns, true) < 0)
		{
			if (rp_error_halt() != RP_HALT_NONE)
				return -1;
			fprintf(stderr, "replicant: warning: %s; retrying\n", rp_error());
			rp_error_clear();
			rc = -2;
		}
		if (rc == 0)
		{
			ns->schema_changed = false;
			rc = u->msg ? rp_nats_pass_message(ns, u->msg, ck) : rp_nats_pass_batch(ns, dl, u->txns, u->n, ck);
			rp_nats_pub_drain(&ns->link);
			if (rc < 0)
				return -1;
			w = rp_nats_pub_result(&ns->link);
			if (rc == 1 && w.failure == RP_NATS_FAIL_NONE)
			{
				ns->known_seq = w.last_seq;
				ns->resume = ns->intended;
				ns->stream_end = ns->intended_end;
				ns->ck.commit_lsn = ck->commit_lsn;
				ns->ck.end_lsn = ck->end_lsn;
				snprintf(ns->ck.slot, sizeof(ns->ck.slot), "%s", ck->slot);
				ns->have_ck = 1;
				RP_COUNT_STORE(ns->count.acked_lsn, ck->end_lsn);
				return 0;
			}
			if (w.failure == RP_NATS_FAIL_FATAL)
				return rp_fail(RP_HALT_SINK, "NATS stream \"%s\" refused a message (JetStream error %d): retrying cannot help",
							   ns->stream, w.err_code);
			failure_note(ns, &w);
			ns->need_tail = true;

			/*
			 * A schema change inside the batch: the decoder's view is already
			 * past the batch's first transactions, so they cannot be read
			 * again here; the library delivers them again from what is
			 * durable (the tail says which are in the stream).
			 */
			if (ns->schema_changed)
				return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": publishing a batch with a schema change failed; delivering it again",
							   ns->stream);
		}
		if (rp_stop_requested() || !rp_pause_ms(backoff_ms))
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": stopped while publishing", ns->stream);
		if (dl)
			rp_deliver_idle(dl);
		backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
	}
}

static int
rp_nats_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	RpNatsUnit	u = {txns, n, NULL};

	return publish_unit(s->priv, dl, &u, ck);
}

static int
rp_nats_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpNatsUnit	u = {NULL, 0, msg};

	return publish_unit(s->priv, NULL, &u, ck);
}

/*
 * Idle advance: WAL that decodes to no transaction (a checkpoint, other
 * databases' changes, tables the slot leaves out) is recorded by a
 * position message, so what the slot confirms is still what the stream's
 * tail says.  Without it the slot held all WAL after its last transaction
 * for as long as the database stayed quiet, and a shutdown of the source
 * never ended: its walsender waits for the shutdown checkpoint to be
 * confirmed.  The caller paces it (once per status interval, or when the
 * server asks), and a position that did not move publishes nothing.
 */
static int
rp_nats_advance(RpSink *s, const RpCheckpoint *ck)
{
	RpNatsUnit	u = {NULL, 0, NULL};

	return publish_unit(s->priv, NULL, &u, ck);
}

static void
rp_nats_close(RpSink *s)
{
	RpNatsSink *ns = s->priv;

	if (ns->held)
		natsMsg_Destroy(ns->held);
	if (ns->advisories)
	{
		natsSubscription_Unsubscribe(ns->advisories);
		natsSubscription_Destroy(ns->advisories);
	}
	rp_nats_disconnect(&ns->link);
	pthread_mutex_destroy(&ns->link.mu);
	pthread_cond_destroy(&ns->link.cv);
	rp_buf_free(&ns->payload);
	rp_buf_free(&ns->subject);
	rp_buf_free(&ns->extra);
	rp_buf_free(&ns->key);
	rp_buf_free(&ns->wire);
	rp_nats_hdrs_free(&ns->hdrs);
	if (ns->rels)
		rp_free(ns->rels);
	rp_free(ns->url);
	rp_free(ns->stream);
	rp_free(ns->prefix);
	rp_free(ns);
	rp_free(s);
}

bool
rp_nats_available(void)
{
	return true;
}

bool
rp_nats_is(const RpSink *s)
{
	return s && s->name == rp_nats_name;
}

/* RpSink.metrics: the sink's value-free counters. */
static void
rp_nats_metrics(const RpSink *s, RpBuf *out)
{
	RpNatsCounters *c;

	if (!rp_nats_is(s))
		return;
	c = &((RpNatsSink *) s->priv)->count;
	rp_metrics_sample(out, "replicant_nats_published_total", "counter", "Messages published to the NATS stream (data, relation and position; retries included).", NULL, RP_COUNT_LOAD(c->published));
	rp_metrics_sample(out, "replicant_nats_acked_lsn", "gauge", "End LSN of the last batch the NATS stream acknowledged whole.", NULL, RP_COUNT_LOAD(c->acked_lsn));
	rp_metrics_sample(out, "replicant_nats_retries_total", "counter", "Publish windows that failed and were resumed from the stream's tail.", NULL, RP_COUNT_LOAD(c->retries));
	rp_metrics_sample(out, "replicant_nats_stream_full_total", "counter", "Publish windows refused because the stream was full (back-pressure).", NULL, RP_COUNT_LOAD(c->stream_full));
	rp_metrics_sample(out, "replicant_nats_relations_total", "counter", "Relation descriptions published.", NULL, RP_COUNT_LOAD(c->relations));
	rp_metrics_sample(out, "replicant_nats_positions_total", "counter", "Position messages published (batches ending with transactions without data).", NULL, RP_COUNT_LOAD(c->positions));
}

/* A random writer id: tells this process's appends from any other's. */
static void
make_writer(char *dst, size_t len)
{
	unsigned char r[8] = {0};
	int			fd = open("/dev/urandom", O_RDONLY);

	if (fd >= 0)
	{
		if (read(fd, r, sizeof(r)) != (ssize_t) sizeof(r))
			memset(r, 0, sizeof(r));
		close(fd);
	}
	snprintf(dst, len, "%d-%02x%02x%02x%02x%02x%02x%02x%02x", (int) getpid(),
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
}

static char *
dup_or(const char *s, const char *fmt, const char *slot)
{
	char		buf[512];

	if (s)
		return rp_strndup(s, strlen(s));
	snprintf(buf, sizeof(buf), fmt, slot);
	return rp_strndup(buf, strlen(buf));
}

RpSink	   *
rp_nats_open(const RpNatsOptions *opts, const RpSinkEnv *env)
{
	RpSink	   *s;
	RpNatsSink *ns;

	if (opts->slot == NULL || strlen(opts->slot) >= RP_SLOT_NAME_MAX)
	{
		rp_fail(RP_HALT_CONFIG, "NATS sink needs the slot name");
		return NULL;
	}
	s = rp_malloc0(sizeof(RpSink));
	ns = rp_malloc0(sizeof(RpNatsSink));
	ns->o = *opts;
	ns->url = rp_strndup(opts->url, strlen(opts->url));
	ns->o.url = ns->url;
	ns->stream = dup_or(opts->stream, "REPLICANT_%s", opts->slot);
	ns->prefix = dup_or(opts->subject_prefix, "replicant.%s", opts->slot);
	snprintf(ns->slot, sizeof(ns->slot), "%s", opts->slot);
	make_writer(ns->writer, sizeof(ns->writer));
	pthread_mutex_init(&ns->link.mu, NULL);
	pthread_cond_init(&ns->link.cv, NULL);
	ns->link.ack_timeout_ms = (int64_t) (opts->ack_timeout_s * 1000);
	if (ns->link.ack_timeout_ms < 1)
		ns->link.ack_timeout_ms = 1;
	rp_buf_init(&ns->payload, 4096);
	rp_buf_init(&ns->subject, 256);
	rp_buf_init(&ns->extra, 256);
	rp_buf_init(&ns->key, 256);
	rp_buf_init(&ns->wire, 256);
	rp_nats_hdrs_init(&ns->hdrs);
	ns->resume.none = true;
	s->name = rp_nats_name;
	s->metrics = rp_nats_metrics;
	s->owns_checkpoint = true;
	s->priv = ns;
	s->checkpoint = rp_nats_checkpoint;
	s->handle_batch = rp_nats_batch;
	s->handle_schema_change = rp_nats_schema_change;
	s->handle_message = rp_nats_message;
	s->advance = rp_nats_advance;
	s->close = rp_nats_close;

	if (rp_nats_connect(&ns->link, &ns->o) < 0 ||
		rp_nats_stream_ensure(&ns->link, &ns->o, ns->stream, ns->prefix, ns->slot,
							  &ns->created) < 0 ||
		read_tail(ns, false) < 0 || watch_stream(ns) < 0)
	{
		rp_nats_close(s);
		return NULL;
	}
	return s;
}

#endif							/* RP_HAVE_NATS */
