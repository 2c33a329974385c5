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

#include "sinks/nats/rp_nats_int.h"

static bool
parse_u64(const char *s, uint64_t *out)
{
	char	   *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = (uint64_t) v;
	return true;
}

static bool
parse_lsn(const char *s, uint64_t *out)
{
	return s != NULL && rp_lsn_parse(s, out);
}

static bool
copy_name(char *dst, size_t len, const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) >= len)
		return false;
	memcpy(dst, s, strlen(s) + 1);
	return true;
}

void
rp_nats_head_parse(RpNatsHead *head, RpNatsHdrGet get, void *arg)
{
	const char *op = get(arg, "Replicant-Op");
	uint64_t	tli = 0;
	bool		ok = true;

	memset(head, 0, sizeof(*head));
	if (op == NULL)
	{
		head->kind = RP_NATS_KIND_OTHER;
		return;
	}
	if (strcmp(op, "relation") == 0)
		head->kind = RP_NATS_KIND_RELATION;
	else if (strcmp(op, "position") == 0)
		head->kind = RP_NATS_KIND_POSITION;
	else if (strcmp(op, "insert") == 0 || strcmp(op, "update") == 0 ||
			 strcmp(op, "delete") == 0 || strcmp(op, "truncate") == 0 ||
			 strcmp(op, "message") == 0)
		head->kind = RP_NATS_KIND_DATA;
	else
	{
		head->kind = RP_NATS_KIND_OTHER;
		return;
	}

	ok &= parse_u64(get(arg, "Replicant-System-Id"), &head->system_id);
	ok &= parse_u64(get(arg, "Replicant-Timeline"), &tli) && tli <= UINT32_MAX;
	head->timeline = (uint32_t) tli;
	ok &= copy_name(head->slot, sizeof(head->slot), get(arg, "Replicant-Slot"));
	ok &= copy_name(head->writer, sizeof(head->writer), get(arg, "Replicant-Writer"));
	if (head->kind == RP_NATS_KIND_RELATION)
	{
		head->bad = !ok;
		return;
	}
	ok &= parse_lsn(get(arg, "Replicant-Lsn"), &head->commit_lsn);
	ok &= parse_lsn(get(arg, "Replicant-End-Lsn"), &head->end_lsn);
	if (head->kind == RP_NATS_KIND_DATA)
	{
		const char *last = get(arg, "Replicant-Last");

		ok &= parse_lsn(get(arg, "Replicant-Prev-End-Lsn"), &head->prev_end_lsn);
		ok &= parse_u64(get(arg, "Replicant-Index"), &head->index);
		head->last = last != NULL && strcmp(last, "true") == 0;
	}
	else
		head->last = true;		/* a position ends what it covers */
	head->bad = !ok;
}

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

static const char *
msg_get(void *arg, const char *key)
{
	const char *v = NULL;

	if (natsMsgHeader_Get((natsMsg *) arg, key, &v) != NATS_OK)
		return NULL;
	return v;
}

/*
 * Leader-routed gets (STREAM.MSG.GET, not a direct get, which any replica
 * may answer from behind): the stream's last sequence, then back over
 * relation descriptions to the last data or position message.
 */
int
rp_nats_tail_read(RpNatsLink *l, const char *stream, uint64_t *last_seq, RpNatsHead *last,
				  RpNatsHead *data)
{
	jsStreamInfo *si = NULL;
	jsErrCode	code = 0;
	natsStatus	s;
	uint64_t	first;

	memset(last, 0, sizeof(*last));
	memset(data, 0, sizeof(*data));
	s = js_GetStreamInfo(&si, l->js, stream, NULL, &code);
	if (s != NATS_OK)
	{
		if (code)
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": reading its last sequence failed (JetStream error %d)",
						   stream, (int) code);
		return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": reading its last sequence failed (%s)",
					   stream, rp_nats_status_text(s));
	}
	*last_seq = si->State.LastSeq;
	first = si->State.FirstSeq;
	jsStreamInfo_Destroy(si);

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
						   stream, (unsigned long long) seq, rp_nats_status_text(s), (int) code);
		rp_nats_head_parse(&h, msg_get, m);
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
