/*
 * rp_natsrc_chain.c
 *    The NATS source's hole checks (see rp_natsrc_chain.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "natsrc/rp_natsrc_chain.h"
#include "rp_lsn.h"

void
rp_natsrc_chain_init(RpNatsChain *c, uint64_t next_seq, uint64_t end_lsn, bool bound,
					 uint64_t system_id, uint32_t timeline)
{
	memset(c, 0, sizeof(*c));
	c->next_seq = next_seq;
	c->end_lsn = end_lsn;
	c->bound = bound;
	c->system_id = system_id;
	c->timeline = timeline;
}

static RpNatsStep
refuse(RpNatsChain *c, RpNatsStep step, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return step;
}

/* an LSN as text, in one of two buffers (a message names at most two) */
static const char *
lsn(char buf[RP_LSN_BUFLEN], uint64_t v)
{
	return rp_lsn_format(v, buf);
}

RpNatsStep
rp_natsrc_chain_step(RpNatsChain *c, uint64_t seq, const RpNatsHead *h)
{
	uint64_t	expected = c->next_seq;
	char		l1[RP_LSN_BUFLEN],
				l2[RP_LSN_BUFLEN];

	c->why[0] = '\0';
	c->next_seq = seq + 1;
	/* name the missing sequences themselves, not the one read after them */
	if (expected != 0 && seq > expected + 1)
		return refuse(c, RP_NATS_STEP_HOLE,
					  "hole before sequence %" PRIu64 ": sequences %" PRIu64 " to %" PRIu64 " are missing (deleted or expired)",
					  seq, expected, seq - 1);
	if (expected != 0 && seq == expected + 1)
		return refuse(c, RP_NATS_STEP_HOLE,
					  "hole before sequence %" PRIu64 ": sequence %" PRIu64 " is missing (deleted or expired)",
					  seq, expected);
	if (expected != 0 && seq != expected)
		return refuse(c, RP_NATS_STEP_HOLE,
					  "sequence %" PRIu64 " read where sequence %" PRIu64 " was expected (the stream went back)",
					  seq, expected);
	if (h->kind == RP_NATS_KIND_OTHER || h->bad)
		return refuse(c, RP_NATS_STEP_HOLE,
					  "the message at sequence %" PRIu64 " was not written by the replicant NATS sink (missing or malformed Replicant headers)",
					  seq);
	if (!c->bound)
	{
		c->bound = true;
		c->system_id = h->system_id;
		c->timeline = h->timeline;
	}
	else if (h->system_id != c->system_id || h->timeline < c->timeline)
		return refuse(c, RP_NATS_STEP_IDENTITY,
					  "the message at sequence %" PRIu64 " comes from system %" PRIu64 " timeline %u, but this reader follows system %" PRIu64 " timeline %u",
					  seq, h->system_id, h->timeline, c->system_id, c->timeline);

	/*
	 * A later timeline: the writer's source was promoted, and the writer
	 * judged the new timeline's history before it published on it
	 * (run/rp_source_slot.c); what it wrote before stays in the stream.
	 */
	else if (h->timeline > c->timeline)
		c->timeline = h->timeline;
	if (h->kind == RP_NATS_KIND_RELATION)
		return RP_NATS_STEP_SKIP;

	if (h->kind == RP_NATS_KIND_POSITION)
	{
		if (c->in_txn)
			return refuse(c, RP_NATS_STEP_HOLE,
						  "hole at sequence %" PRIu64 ": the transaction at commit %s is cut short (a position follows before its last message)",
						  seq, lsn(l1, c->commit_lsn));
		if (h->end_lsn > c->end_lsn)
			c->end_lsn = h->end_lsn;
		return RP_NATS_STEP_POSITION;
	}

	if (c->in_txn)
	{
		if (h->commit_lsn != c->commit_lsn)
			return refuse(c, RP_NATS_STEP_HOLE,
						  "hole at sequence %" PRIu64 ": the transaction at commit %s is cut short (the one at %s begins before its last message)",
						  seq, lsn(l1, c->commit_lsn), lsn(l2, h->commit_lsn));
		if (h->index != c->next_index)
			return refuse(c, RP_NATS_STEP_HOLE,
						  "hole at sequence %" PRIu64 ": message %" PRIu64 " of the transaction at commit %s is missing",
						  seq, c->next_index, lsn(l1, c->commit_lsn));
	}
	else
	{
		if (h->index != 0)
			return refuse(c, RP_NATS_STEP_HOLE,
						  "hole at sequence %" PRIu64 ": the transaction at commit %s begins at message %" PRIu64 " (its first messages are missing)",
						  seq, lsn(l1, h->commit_lsn), h->index);
		if (c->end_lsn != 0 && h->prev_end_lsn != c->end_lsn)
			return refuse(c, RP_NATS_STEP_HOLE,
						  "hole at sequence %" PRIu64 ": the transaction at commit %s follows end LSN %s, but the stream held %s before it (transactions are missing)",
						  seq, lsn(l1, h->commit_lsn), lsn(l2, h->prev_end_lsn),
						  rp_lsn_format(c->end_lsn, (char[RP_LSN_BUFLEN]) {0}));
		c->in_txn = true;
		c->commit_lsn = h->commit_lsn;
		c->next_index = 0;
	}
	c->next_index++;
	if (h->last)
	{
		c->in_txn = false;
		if (h->end_lsn > c->end_lsn)
			c->end_lsn = h->end_lsn;
	}
	return h->index == 0 ? RP_NATS_STEP_BEGIN : RP_NATS_STEP_CONTINUE;
}
