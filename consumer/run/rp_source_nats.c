/*
 * rp_source_nats.c
 *    A JetStream stream the NATS sink wrote, as a run's source
 *    (rp_source.h) over natsrc/: the stream's messages checked and turned
 *    into frames for the same assembler.  What differs from a slot: the
 *    position is the stream sequence (it rides with each transaction into
 *    the checkpoint), and nothing is acknowledged upstream (the stream's
 *    retention, not this reader, holds the data), so it has no feedback.
 */
#include "rp_alloc.h"

#include <string.h>

#include "base/rp_status.h"
#include "run/rp_source.h"

typedef struct RpNatsSource
{
	RpSource	base;			/* first: the interface */
	RpNatsSrc  *nsrc;			/* the caller's */
	const char *stream;
} RpNatsSource;

/* Open the stream after what is durable; on the first connection bind the checkpoint to it. */
static int
nats_open(RpSource *src, RpSourceOpen *o)
{
	RpNatsSource *s = (RpNatsSource *) src;

	memset(&o->bind, 0, sizeof(o->bind));
	if (rp_natsrc_open(s->nsrc, &o->ck, o->have_ck, &o->bind) < 0)
		return -1;
	rp_event_init(&o->up, RP_EVENT_CONN_UP);
	o->up.stream = s->stream;
	return 0;
}

static int
nats_read(RpSource *src, RpSourceRead *r, int timeout_ms)
{
	RpNatsSource *s = (RpNatsSource *) src;
	RpNatsSrcEvent ev;

	memset(r, 0, sizeof(*r));
	if (rp_natsrc_read(s->nsrc, &ev, timeout_ms) < 0)
		return -1;
	r->seq = ev.seq;
	r->lsn = ev.lsn;
	switch (ev.kind)
	{
		case RP_NATSRC_NONE:
			r->kind = RP_SOURCE_NONE;
			break;
		case RP_NATSRC_FRAME:
			r->kind = RP_SOURCE_FRAME;
			r->data = ev.data;
			r->len = ev.len;
			r->ends = ev.ends;
			break;
		case RP_NATSRC_POSITION:
			r->kind = RP_SOURCE_POSITION;
			break;
	}
	return 0;
}

/* Nothing to say upstream: a clean end is a close. */
static void
nats_finish(RpSource *src, uint64_t durable_lsn)
{
}

static void
nats_close(RpSource *src)
{
	rp_natsrc_close(((RpNatsSource *) src)->nsrc);
}

static void
nats_end(const RpSource *src, RpSourceEnd *e)
{
	e->by_seq = true;
	e->end = rp_natsrc_last_seq(((const RpNatsSource *) src)->nsrc);
}

static void
nats_free(RpSource *src)
{
	/* closed by the run already; the reader is the caller's */
	rp_free(src);
}

RpSource   *
rp_source_nats_new(RpNatsSrc *nsrc, const char *stream)
{
	RpNatsSource *s = rp_malloc0(sizeof(*s));

	s->nsrc = nsrc;
	s->stream = stream;
	s->base.keepalives = false;
	s->base.open = nats_open;
	s->base.read = nats_read;
	s->base.feedback = NULL;
	s->base.finish = nats_finish;
	s->base.close = nats_close;
	s->base.end = nats_end;
	s->base.free = nats_free;
	return &s->base;
}
