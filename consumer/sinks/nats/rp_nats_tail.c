/*
 * rp_nats_tail.c
 *    The stream's last message, read back: its headers into an RpNatsHead,
 *    and the resume point and checkpoint it gives.  The stream is the
 *    checkpoint (G1): the last data (or position) message says how far
 *    the stream holds the source, and who wrote it (fencing).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinks/nats/rp_nats_int.h"

/*
 * A complete transaction (its last message, or a position): done up to its
 * commit, confirmable up to its end.  In the middle of one: the
 * transaction is not done (the watermark is just below its commit, so it
 * is delivered again and its first messages skipped by index), and only
 * what the stream held before it may be confirmed: never past what the
 * slot was told (the slot refuses a checkpoint behind its confirmed
 * position as a gap).
 */
void
rp_nats_resume_from_head(const RpNatsHead *head, RpNatsResume *r, RpCheckpoint *ck)
{
	memset(r, 0, sizeof(*r));
	r->commit_lsn = head->commit_lsn;
	r->index = head->index;
	r->complete = head->last;

	memset(ck, 0, sizeof(*ck));
	ck->system_id = head->system_id;
	ck->timeline = head->timeline;
	snprintf(ck->slot, sizeof(ck->slot), "%s", head->slot);
	if (head->last)
	{
		ck->commit_lsn = head->commit_lsn;
		ck->end_lsn = head->end_lsn;
	}
	else
	{
		ck->commit_lsn = head->commit_lsn > 0 ? head->commit_lsn - 1 : 0;
		ck->end_lsn = head->prev_end_lsn;
	}
}

/*
 * A writer killed with SIGKILL leaves publishes the server has read but not
 * yet stored: they land at the stream's end after its successor read the
 * tail at its start (seen with three replicas: the successor's first window
 * failed on a wrong last sequence, and the tail named the dead writer).
 * They continue the dead writer's chain of expected sequences, so they are
 * an exact prefix of what the slot sent: the successor reads the tail again
 * and resumes after them.  Any other writer's messages fence it, and so does
 * its predecessor's when that one lives on as a zombie: its own next window
 * meets the successor's messages, whose writer is not its predecessor, and
 * halts it.
 */
RpNatsFence
rp_nats_fence_verdict(uint64_t last_seq, uint64_t known_seq, const char *last_writer,
					  const char *self, const char *predecessor)
{
	if (last_seq == known_seq || last_seq == 0 || strcmp(last_writer, self) == 0)
		return RP_NATS_FENCE_NONE;
	if (predecessor[0] != '\0' && strcmp(last_writer, predecessor) == 0)
		return RP_NATS_FENCE_LATE;
	return RP_NATS_FENCE_OTHER;
}

bool
rp_nats_resume_covers_txn(const RpNatsResume *r, uint64_t commit_lsn)
{
	if (r->none)
		return false;
	return commit_lsn < r->commit_lsn || (commit_lsn == r->commit_lsn && r->complete);
}

bool
rp_nats_resume_covers(const RpNatsResume *r, uint64_t commit_lsn, uint64_t index)
{
	if (r->none)
		return false;
	if (commit_lsn != r->commit_lsn)
		return commit_lsn < r->commit_lsn;
	return r->complete || index <= r->index;
}

#ifdef RP_HAVE_NATS

#include "base/rp_status.h"

/* Relation descriptions that may lie between the last data message and the end. */
#define RP_NATS_TAIL_WALK_MAX 100000

/*
 * Leader-routed gets (STREAM.MSG.GET, not a direct get, which any replica
 * may answer from behind): the stream's last sequence, then back over
 * relation descriptions to the last data or position message.
 */
int
rp_nats_tail_read(RpNatsLink *l, const char *stream, const char *prefix, RpNatsTailState * st,
				  RpNatsHead *last, RpNatsHead *data)
{
	jsStreamInfo *si = NULL;
	jsErrCode	code = 0;
	natsStatus	s;
	uint64_t	first;
	uint64_t   *last_seq = &st->last_seq;
	int			rc;

	memset(st, 0, sizeof(*st));
	memset(last, 0, sizeof(*last));
	memset(data, 0, sizeof(*data));
	switch (rp_natsio_stream_info(l->js, stream, &si, &s, &code))
	{
		case 0:
			break;
		case 1:

			/*
			 * a replica's store may end before the stream: the tail would be
			 * an old one
			 */
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\" has no leader: a replica answered with its own state; asking again",
						   stream);
		default:
			if (s == NATS_NOT_FOUND || code == JSStreamNotFoundErr)
			{
				st->missing = true;
				return 0;
			}
			if (code)
				return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": reading its last sequence failed (JetStream error %d)",
							   stream, (int) code);
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": reading its last sequence failed (%s)",
						   stream, rp_natsio_status_text(s));
	}

	/*
	 * its limits may have changed since it was checked (the writer heard of
	 * it, or failed)
	 */
	rc = rp_nats_stream_check(si->Config, stream, prefix);
	st->first_seq = si->State.FirstSeq;
	st->last_seq = si->State.LastSeq;
	st->created = si->Created;
	first = si->State.FirstSeq;
	jsStreamInfo_Destroy(si);
	if (rc < 0)
		return -1;

	for (uint64_t seq = *last_seq; seq >= first && seq > 0; seq--)
	{
		natsMsg    *m = NULL;
		RpNatsHead	h;

		if (*last_seq - seq > RP_NATS_TAIL_WALK_MAX)
			return rp_fail(RP_HALT_SINK, "NATS stream \"%s\" ends with more than %d messages without a data message",
						   stream, RP_NATS_TAIL_WALK_MAX);
		code = 0;
		s = js_GetMsg(&m, l->js, stream, seq, NULL, &code);
		if (s != NATS_OK)
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": reading message %llu failed (%s, JetStream error %d)",
						   stream, (unsigned long long) seq, rp_natsio_status_text(s), (int) code);
		rp_nats_head_parse(&h, rp_natsio_msg_header, m);
		natsMsg_Destroy(m);
		if (h.kind == RP_NATS_KIND_OTHER || h.bad)
			return rp_fail(RP_HALT_SINK, "NATS stream \"%s\" holds a message at sequence %llu that this sink did not write (missing or malformed Replicant headers)",
						   stream, (unsigned long long) seq);
		if (seq == *last_seq)
			*last = h;
		if (h.kind != RP_NATS_KIND_RELATION)
		{
			*data = h;
			break;
		}
	}
	return 0;
}

#endif							/* RP_HAVE_NATS */
