/*
 * rp_natsrc_frame.c
 *    One stream message into a frame the assembler takes as if a slot had
 *    sent it: the transaction's Begin before its first change, Relation
 *    records before the changes that need them, the change itself (the
 *    binary record of Replicant-Wire, or the JSON payload turned back into
 *    one), and Commit after its last.  Each message is checked first
 *    (rp_natsrc_chain.h): nothing of a transaction with a hole reaches a
 *    frame.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_status.h"
#include "base/rp_jsonread.h"
#include "natsrc/rp_natsrc_int.h"
#include "rp_encode.h"
#include "rp_read.h"
#include "values/rp_jsonwire.h"

static const char *
header(natsMsg *m, const char *key)
{
	return rp_natsio_msg_header(m, key);
}

/* A header the sink always writes, as a u64; -1 after rp_fail when absent or malformed. */
static int
header_u64(RpNatsSrc *s, natsMsg *m, uint64_t seq, const char *key, uint64_t *out)
{
	if (rp_natsio_parse_u64(header(m, key), out))
		return 0;
	return rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the message at sequence %" PRIu64 " has no valid %s header",
				   s->o.stream, seq, key);
}

/*
 * The transaction's replication origin, when it has one: the "origin"
 * member the sink renders with every record (its LSN is not carried; the
 * sinks use the name).
 */
static int
frame_origin(RpNatsSrc *s, natsMsg *m)
{
	const char *json = natsMsg_GetData(m);
	size_t		len = (size_t) natsMsg_GetDataLength(m);
	const RpJrMember *om = NULL;
	RpJrDoc		doc;

	/* most transactions have none: no parse for them */
	if (json == NULL || memmem(json, len, "\"origin\":", 9) == NULL)
		return 0;
	rp_jr_init(&doc);
	if (rp_jr_parse(&doc, json, len) == 0 && rp_jr_find(&doc, "origin", &om) == 1 &&
		om->type == RP_JR_STRING)
	{
		rp_buf_reset(&s->tmp);
		if (rp_jr_string(om->val, om->val_len, &s->tmp) == 0)
		{
			rp_buf_put_char(&s->tmp, '\0');
			rp_enc_origin(&s->frame, 0, s->tmp.data);
		}
	}
	rp_jr_free(&doc);
	rp_error_clear();
	return 0;
}

/* Start the frame: magic and version, and the Begin of a transaction that starts here. */
static int
frame_begin(RpNatsSrc *s, natsMsg *m, uint64_t seq, const RpNatsHead *h, bool begins)
{
	rp_buf_reset(&s->frame);
	rp_enc_frame_header(&s->frame);
	if (!begins)
		return 0;
	{
		uint64_t	xid = 0;
		const char *t = header(m, "Replicant-Commit-Time");
		int64_t		commit_time = 0;

		if (header_u64(s, m, seq, "Replicant-Xid", &xid) < 0)
			return -1;
		if (t == NULL || rp_jsonwire_timestamptz(t, strlen(t), &commit_time) < 0)
			return rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the message at sequence %" PRIu64 " has no valid Replicant-Commit-Time header",
						   s->o.stream, seq);
		s->open_txn = true;
		s->commit_lsn = h->commit_lsn;
		s->end_lsn = h->end_lsn;
		s->commit_time = commit_time;
		rp_enc_begin(&s->frame, (uint32_t) xid, h->commit_lsn, commit_time);
		return frame_origin(s, m);
	}
	return 0;
}

/*
 * The binary record a message carries in Replicant-Wire (base64), for
 * what its JSON cannot say exactly (rp_jsonwire_lossless); checked whole
 * before it is used.
 */
static int
wire_record(RpNatsSrc *s, const char *b64, uint64_t seq)
{
	RpReader	r;
	uint32_t	len;

	rp_buf_reset(&s->rec);
	if (rp_jsonwire_base64(b64, strlen(b64), &s->rec) < 0 || s->rec.len < RP_RECORD_HEADER_LEN)
		return rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the Replicant-Wire header of the message at sequence %" PRIu64 " is not base64 of a record",
					   s->o.stream, seq);
	rp_reader_init(&r, (const unsigned char *) s->rec.data, s->rec.len);
	(void) rp_get_u8(&r);
	len = rp_get_u32(&r);
	if ((size_t) len + RP_RECORD_HEADER_LEN != s->rec.len)
		return rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the Replicant-Wire header of the message at sequence %" PRIu64 " is not one whole record",
					   s->o.stream, seq);
	return 0;
}

/* The relation descriptions a truncate names (Replicant-Relation-Seqs), sent before it. */
static int
truncate_relations(RpNatsSrc *s, natsMsg *m, uint64_t seq)
{
	const char *list = header(m, "Replicant-Relation-Seqs");
	char	   *copy;
	char	   *save = NULL;
	int			rc = 0;

	if (list == NULL)
		return 0;
	copy = rp_strndup(list, strlen(list));
	for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save))
	{
		uint64_t	rs;
		RpNatsSrcRel *r;

		if (!rp_natsio_parse_u64(tok, &rs))
			rc = rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the message at sequence %" PRIu64 " has a malformed Replicant-Relation-Seqs header",
						 s->o.stream, seq);
		else if ((r = rp_natsrc_rel_at(s, rs)) == NULL)
			rc = -1;
		else
			rp_natsrc_rel_send(s, r);
	}
	rp_free(copy);
	return rc;
}

/* The record of a data message, appended to the frame (after what it needs). */
static int
data_record(RpNatsSrc *s, natsMsg *m, uint64_t seq)
{
	const char *op = header(m, "Replicant-Op");
	const char *wire = header(m, "Replicant-Wire");
	const RpRelation *rel = NULL;

	/*
	 * --nats-subjects: the change is read and checked, but neither described
	 * nor delivered
	 */
	if (s->o.subjects && strcmp(op, "message") != 0 && strcmp(op, "truncate") != 0 &&
		!rp_natsrc_subject_match(s->o.subjects, natsMsg_GetSubject(m)))
		return 0;

	if (strcmp(op, "insert") == 0 || strcmp(op, "update") == 0 || strcmp(op, "delete") == 0)
	{
		uint64_t	rs;
		RpNatsSrcRel *r;

		if (header_u64(s, m, seq, "Replicant-Relation-Seq", &rs) < 0)
			return -1;
		if ((r = rp_natsrc_rel_at(s, rs)) == NULL)
			return -1;
		rp_natsrc_rel_send(s, r);
		rel = r->rel;
	}
	else if (strcmp(op, "truncate") == 0)
	{
		if (truncate_relations(s, m, seq) < 0)
			return -1;
		if (wire == NULL)
			return rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the truncate at sequence %" PRIu64 " carries no Replicant-Wire record (a stream written before replicant could read it back)",
						   s->o.stream, seq);
	}

	if (wire)
	{
		if (wire_record(s, wire, seq) < 0)
			return -1;
	}
	else
	{
		rp_buf_reset(&s->rec);
		if (rp_jsonwire_record(&s->rec, rel, natsMsg_GetData(m), (size_t) natsMsg_GetDataLength(m)) < 0)
		{
			char		why[512];

			snprintf(why, sizeof(why), "%s", rp_error());
			return rp_fail(rp_error_halt(), "NATS stream \"%s\": the message at sequence %" PRIu64 ": %s",
						   s->o.stream, seq, why);
		}
	}
	rp_buf_put_bytes(&s->frame, s->rec.data, s->rec.len);
	return 0;
}

static bool
non_transactional(natsMsg *m)
{
	const char *t = header(m, "Replicant-Transactional");

	return t != NULL && strcmp(t, "false") == 0;
}

int
rp_natsrc_message(RpNatsSrc *s, natsMsg *m, uint64_t seq, RpNatsSrcEvent *ev)
{
	RpNatsHead	h;
	RpNatsStep	step;

	rp_nats_head_parse(&h, rp_natsio_msg_header, m);
	if (s->skip_partial)
	{
		/*
		 * no checkpoint and the stream's start is gone: wait for a whole
		 * transaction
		 */
		if (h.kind == RP_NATS_KIND_DATA && h.index != 0)
		{
			s->chain.next_seq = seq + 1;
			return 0;
		}
		if (h.kind == RP_NATS_KIND_DATA || h.kind == RP_NATS_KIND_POSITION)
		{
			s->skip_partial = false;
			s->chain.end_lsn = 0;
		}
	}
	step = rp_natsrc_chain_step(&s->chain, seq, &h);
	switch (step)
	{
		case RP_NATS_STEP_HOLE:
			return rp_fail(RP_HALT_GAP, "NATS stream \"%s\": %s", s->o.stream, s->chain.why);
		case RP_NATS_STEP_IDENTITY:
			return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\": %s", s->o.stream, s->chain.why);
		case RP_NATS_STEP_SKIP:
			return rp_natsrc_rel_put(s, seq, natsMsg_GetData(m), (size_t) natsMsg_GetDataLength(m));
		case RP_NATS_STEP_POSITION:
			ev->kind = RP_NATSRC_POSITION;
			ev->lsn = h.end_lsn;
			return 0;
		case RP_NATS_STEP_BEGIN:
		case RP_NATS_STEP_CONTINUE:
			break;
	}

	if (step == RP_NATS_STEP_BEGIN && non_transactional(m))
	{
		/* a message of its own: no Begin or Commit around it, as from a slot */
		if (frame_begin(s, m, seq, &h, false) < 0 || data_record(s, m, seq) < 0)
			return -1;
		ev->kind = RP_NATSRC_FRAME;
		ev->lsn = h.commit_lsn;
		ev->ends = true;
		ev->data = (const unsigned char *) s->frame.data;
		ev->len = s->frame.len;
		return 0;
	}
	if (frame_begin(s, m, seq, &h, step == RP_NATS_STEP_BEGIN) < 0 || data_record(s, m, seq) < 0)
		return -1;
	if (h.last)
	{
		/* the writer's timeline: the reader's checkpoint follows it */
		rp_enc_commit_tli(&s->frame, s->commit_lsn, h.end_lsn, s->commit_time, h.timeline);
		s->open_txn = false;
		ev->ends = true;
	}
	ev->kind = RP_NATSRC_FRAME;
	ev->lsn = h.commit_lsn;
	ev->data = (const unsigned char *) s->frame.data;
	ev->len = s->frame.len;
	return 0;
}

#endif							/* RP_HAVE_NATS */
