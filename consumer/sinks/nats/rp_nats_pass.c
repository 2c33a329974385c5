/*
 * rp_nats_pass.c
 *    One pass of the NATS sink over a unit (a batch, or a non-transactional
 *    message): every data message after the stream's known tail, in order,
 *    within the publish window; a relation description before the first
 *    change of a table in the session; the held-back last message of each
 *    transaction with Replicant-Last; a position message when the batch
 *    ends with transactions that published nothing.  rp_nats.c drains the
 *    window and decides what a failure means.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <inttypes.h>
#include <stdio.h>

#include "base/rp_counter.h"
#include "base/rp_status.h"
#include "rp_encode.h"
#include "rp_format.h"
#include "rp_json.h"
#include "rp_lsn.h"
#include "lines/rp_lines.h"
#include "sinks/nats/rp_nats_int.h"
#include "stream/rp_cursor.h"
#include "stream/rp_deliver.h"
#include "values/rp_jsonwire.h"

/* ---- relations described ---- */

static RpNatsRelSeq *
rel_find(RpNatsSink *ns, uint32_t relid)
{
	for (int i = 0; i < ns->nrels; i++)
		if (ns->rels[i].relid == relid)
			return &ns->rels[i];
	return NULL;
}

void
rp_nats_rel_forget(RpNatsSink *ns, uint32_t relid)
{
	RpNatsRelSeq *r = rel_find(ns, relid);

	if (r)
		*r = ns->rels[--ns->nrels];
}

static void
rel_remember(RpNatsSink *ns, uint32_t relid, uint64_t seq)
{
	RpNatsRelSeq *r = rel_find(ns, relid);

	if (r == NULL)
	{
		if (ns->nrels == ns->caprels)
		{
			ns->caprels = ns->caprels ? ns->caprels * 2 : 16;
			ns->rels = rp_realloc(ns->rels, sizeof(RpNatsRelSeq) * (size_t) ns->caprels);
		}
		r = &ns->rels[ns->nrels++];
		r->relid = relid;
	}
	r->seq = seq;
}

/* ---- messages ---- */

static natsMsg *
make_msg(RpNatsSink *ns)
{
	natsMsg    *m = NULL;

	if (natsMsg_Create(&m, ns->subject.data, NULL, ns->payload.data, (int) ns->payload.len) != NATS_OK)
		return NULL;
	for (int i = 0; i < ns->hdrs.n; i++)
		if (natsMsgHeader_Set(m, ns->hdrs.key[i], rp_nats_hdrs_value(&ns->hdrs, i)) != NATS_OK)
		{
			natsMsg_Destroy(m);
			return NULL;
		}
	return m;
}

/* false: the window failed (or a message could not be made): end the pass */
static bool
send_msg(RpNatsSink *ns, natsMsg *m)
{
	if (m == NULL)
		return false;
	if (!rp_nats_pub_send(&ns->link, m))
		return false;
	RP_COUNT_ADD(ns->count.published, 1);
	return true;
}

static bool
flush_held(RpNatsSink *ns, bool last)
{
	natsMsg    *m = ns->held;

	if (m == NULL)
		return true;
	ns->held = NULL;
	if (last && natsMsgHeader_Set(m, "Replicant-Last", "true") != NATS_OK)
	{
		natsMsg_Destroy(m);
		return false;
	}
	return send_msg(ns, m);
}

static const char *
op_name(uint8_t tag)
{
	switch (tag)
	{
		case RP_TAG_INSERT:
			return "insert";
		case RP_TAG_UPDATE:
			return "update";
		case RP_TAG_DELETE:
			return "delete";
		case RP_TAG_TRUNCATE:
			return "truncate";
		default:
			return "message";
	}
}

static void
put_table(RpBuf *b, const RpRelation *rel)
{
	rp_buf_put_bytes(b, rel->schema, strlen(rel->schema));
	rp_buf_put_u8(b, '.');
	rp_buf_put_bytes(b, rel->name, strlen(rel->name));
}

/*
 * The key as a JSON object: the replica identity's columns of the old key
 * (or old row) when the change has one, else of the new row; {} when the
 * table has no identity column (every row change carries the header).
 */
static void
render_key(RpBuf *out, const RpRecord *rec)
{
	const RpRelation *rel = rec->u.change.rel;
	const RpTuple *t = rec->u.change.has_old ? &rec->u.change.old_tuple : &rec->u.change.new_tuple;
	bool		first = true;

	rp_buf_reset(out);
	rp_buf_put_u8(out, '{');
	for (uint16_t i = 0; i < t->natts && i < rel->natts; i++)
	{
		const RpDatum *d = &t->datums[i];

		if (!(rel->cols[i].flags & (RP_COL_IDENTITY | RP_COL_PRIMARY_KEY)) ||
			d->kind == RP_DATUM_NOT_IN_KEY || d->kind == RP_DATUM_UNCHANGED)
			continue;
		if (!first)
			rp_buf_put_u8(out, ',');
		first = false;
		rp_json_key(out, rel->cols[i].name);
		if (d->kind == RP_DATUM_NULL)
			rp_buf_put_text(out, "null");
		else
			rp_render_value(out, rel->cols[i].encoding, d->data, d->len);
	}
	rp_buf_put_u8(out, '}');
	rp_buf_put_u8(out, '\0');
}

static RpNatsIdent
ident_of(RpNatsSink *ns, const RpCheckpoint *ck)
{
	RpNatsIdent id = {ck->system_id, ck->timeline, ns->slot, ns->writer};

	return id;
}

/* The next publish's sequence, if the window holds. */
static uint64_t
next_seq(RpNatsSink *ns)
{
	return rp_nats_pub_result(&ns->link).last_seq + 1;
}

/* A relation whose names JSON cannot carry exactly: its binary record too. */
static void
relation_wire(RpNatsSink *ns, const RpRelation *rel)
{
	rp_buf_reset(&ns->key);
	rp_enc_relation_record(&ns->key, rel);
	rp_nats_hdrs_wire(&ns->hdrs, &ns->wire, (const unsigned char *) ns->key.data);
}

static bool
send_relation(RpNatsSink *ns, const RpNatsIdent *id, const RpRelation *rel, uint64_t commit_lsn)
{
	RpRecord	rec;
	uint64_t	seq;

	memset(&rec, 0, sizeof(rec));
	rec.tag = RP_TAG_RELATION;
	rec.u.relation.rel = (RpRelation *) rel;
	rp_buf_reset(&ns->payload);
	rp_render_record_out(&ns->payload, &rec, NULL, NULL, NULL);
	rp_nats_control_subject(&ns->subject, ns->prefix);
	rp_nats_hdrs_reset(&ns->hdrs);
	rp_nats_hdrs_add(&ns->hdrs, "Replicant-Op", "relation");
	rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Table");
	put_table(&ns->hdrs.buf, rel);
	rp_nats_hdrs_end(&ns->hdrs);
	rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Lsn");
	rp_fmt_lsn(&ns->hdrs.buf, commit_lsn);
	rp_nats_hdrs_end(&ns->hdrs);
	rp_nats_hdrs_ident(&ns->hdrs, id);
	if (!rp_jsonwire_relation_lossless(rel))
		relation_wire(ns, rel);
	seq = next_seq(ns);
	if (!send_msg(ns, make_msg(ns)))
		return false;
	RP_COUNT_ADD(ns->count.relations, 1);
	rel_remember(ns, rel->relid, seq);
	return true;
}

static bool
send_position(RpNatsSink *ns, const RpNatsIdent *id, const RpCheckpoint *ck)
{
	rp_buf_reset(&ns->payload);
	rp_buf_put_text(&ns->payload, "{\"kind\":\"position\",\"commit_lsn\":\"");
	rp_fmt_lsn(&ns->payload, ck->commit_lsn);
	rp_buf_put_text(&ns->payload, "\",\"end_lsn\":\"");
	rp_fmt_lsn(&ns->payload, ck->end_lsn);
	rp_buf_put_text(&ns->payload, "\"}");
	rp_nats_control_subject(&ns->subject, ns->prefix);
	rp_nats_hdrs_reset(&ns->hdrs);
	rp_nats_hdrs_add(&ns->hdrs, "Replicant-Op", "position");
	rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Lsn");
	rp_fmt_lsn(&ns->hdrs.buf, ck->commit_lsn);
	rp_nats_hdrs_end(&ns->hdrs);
	rp_nats_hdrs_begin(&ns->hdrs, "Replicant-End-Lsn");
	rp_fmt_lsn(&ns->hdrs.buf, ck->end_lsn);
	rp_nats_hdrs_end(&ns->hdrs);
	rp_nats_hdrs_ident(&ns->hdrs, id);
	if (!send_msg(ns, make_msg(ns)))
		return false;
	RP_COUNT_ADD(ns->count.positions, 1);
	return true;
}

/* More than the server takes, with room for the headers this code adds. */
static bool
over_max_payload(const RpNatsSink *ns, size_t bytes)
{
	return ns->link.max_payload > 0 &&
		(int64_t) (bytes + 64 * RP_NATS_MAX_HDRS) > ns->link.max_payload;
}

/* A message the server would refuse: no retry can help.  -1 (rp_fail). */
static int
too_large(const RpNatsSink *ns, const RpRelation *rel, const RpNatsPlace *place)
{
	char		lsn[RP_LSN_BUFLEN];

	rp_lsn_format(place->commit_lsn, lsn);
	if (rel)
		return rp_fail(RP_HALT_SINK, "a change of table \"%s\".\"%s\" at commit LSN %s is larger than the NATS server's max_payload (%" PRId64 " bytes)",
					   rel->schema, rel->name, lsn, ns->link.max_payload);
	return rp_fail(RP_HALT_SINK, "a record at commit LSN %s is larger than the NATS server's max_payload (%" PRId64 " bytes)",
				   lsn, ns->link.max_payload);
}

/* The renderer's flush once the payload reached max_payload: stop it there. */
static int
refuse_flush(void *arg, RpBuf *buf)
{
	return -1;
}

/*
 * One data record: publish the held one, describe the relation when this
 * session has not (or it changed), build this one and hold it.  1 went
 * on, 0 the window failed, -1 a halt (rp_fail).
 */
static int
data_record(RpNatsSink *ns, RpDelivery *dl, RpRecord *rec, const RpNatsIdent *id,
			const RpNatsPlace *place)
{
	const RpRelation *rel = NULL;
	RpNatsRelSeq *rs = NULL;

	/* the record's bytes, before rendering touches the decoded form */
	const unsigned char *raw = (const unsigned char *) dl->dec.frame_start + rec->offset;
	bool		lossless = rp_jsonwire_lossless(rec);

	if (!flush_held(ns, false))
		return 0;
	if (rec->tag == RP_TAG_INSERT || rec->tag == RP_TAG_UPDATE || rec->tag == RP_TAG_DELETE)
	{
		rel = rec->u.change.rel;
		if (rel_find(ns, rel->relid) == NULL && !send_relation(ns, id, rel, place->commit_lsn))
			return 0;
		rs = rel_find(ns, rel->relid);
	}
	else if (rec->tag == RP_TAG_TRUNCATE)
	{
		/* a reader needs every truncated table described, too */
		for (uint32_t i = 0; i < rec->u.truncate.nrels; i++)
		{
			const RpRelation *t = rp_relmap_get(&dl->dec.rels, rp_truncate_relid(rec, i));

			if (t && rel_find(ns, t->relid) == NULL && !send_relation(ns, id, t, place->commit_lsn))
				return 0;
		}
	}

	/*
	 * A record the server would refuse is refused before it is rendered
	 * whole: its Replicant-Wire header's size is known from the record, and
	 * the JSON stops at max_payload (a value's escapes can take six bytes a
	 * byte), so one large value never costs its rendered size (G5).
	 */
	if (!lossless && over_max_payload(ns, rp_nats_wire_header_len(raw)))
		return too_large(ns, rel, place);
	rp_buf_reset(&ns->payload);
	if (ns->link.max_payload > 0)
	{
		RpRenderOut fo = {.at = (size_t) ns->link.max_payload,.flush = refuse_flush};

		rp_lines_record(&ns->payload, dl, rec, ns->extra.data, &fo);
		if (fo.failed)
			return too_large(ns, rel, place);
	}
	else
		rp_lines_record(&ns->payload, dl, rec, ns->extra.data, NULL);
	if (rel)
		rp_nats_data_subject(&ns->subject, ns->prefix, rel->schema, rel->name);
	else
		rp_nats_control_subject(&ns->subject, ns->prefix);

	rp_nats_hdrs_reset(&ns->hdrs);
	rp_nats_hdrs_place(&ns->hdrs, id, place);
	rp_nats_hdrs_add(&ns->hdrs, "Replicant-Op", op_name(rec->tag));
	if (rel)
	{
		rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Table");
		put_table(&ns->hdrs.buf, rel);
		rp_nats_hdrs_end(&ns->hdrs);
		render_key(&ns->key, rec);
		rp_nats_hdrs_add(&ns->hdrs, "Replicant-Key", ns->key.data);
		rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Relation-Seq");
		rp_fmt_uint64(&ns->hdrs.buf, rs->seq);
		rp_nats_hdrs_end(&ns->hdrs);
	}
	else if (rec->tag == RP_TAG_TRUNCATE)
	{
		rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Table");
		for (uint32_t i = 0; i < rec->u.truncate.nrels; i++)
		{
			const RpRelation *t = rp_relmap_get(&dl->dec.rels, rp_truncate_relid(rec, i));

			if (i)
				rp_buf_put_u8(&ns->hdrs.buf, ',');
			if (t)
				put_table(&ns->hdrs.buf, t);
		}
		rp_nats_hdrs_end(&ns->hdrs);
		rp_nats_hdrs_begin(&ns->hdrs, "Replicant-Relation-Seqs");
		for (uint32_t i = 0; i < rec->u.truncate.nrels; i++)
		{
			RpNatsRelSeq *t = rel_find(ns, rp_truncate_relid(rec, i));

			if (i)
				rp_buf_put_u8(&ns->hdrs.buf, ',');
			rp_fmt_uint64(&ns->hdrs.buf, t ? t->seq : 0);
		}
		rp_nats_hdrs_end(&ns->hdrs);
	}
	if (!lossless)
		rp_nats_hdrs_wire(&ns->hdrs, &ns->wire, raw);

	/* a message the server would refuse: no retry can help */
	if (over_max_payload(ns, ns->payload.len + ns->hdrs.buf.len))
		return too_large(ns, rel, place);
	ns->held = make_msg(ns);
	return ns->held ? 1 : 0;
}

static bool
is_data(uint8_t tag)
{
	return tag == RP_TAG_INSERT || tag == RP_TAG_UPDATE || tag == RP_TAG_DELETE ||
		tag == RP_TAG_TRUNCATE || tag == RP_TAG_MESSAGE;
}

/* One transaction of the pass.  1 went on, 0 the window failed, -1 a halt. */
static int
pass_txn(RpNatsSink *ns, RpDelivery *dl, RpTxn *txn, const RpNatsIdent *id)
{
	RpCursor	c;
	RpRecord	rec;
	RpNatsPlace place;
	bool		covered = rp_nats_resume_covers_txn(&ns->resume, txn->commit_lsn);
	bool		sent = false;
	int			rc;
	int			go = 1;

	memset(&place, 0, sizeof(place));
	place.commit_lsn = txn->commit_lsn;
	place.end_lsn = txn->end_lsn;
	place.xid = txn->xid;
	place.commit_time = txn->commit_time;
	/* resumed in its middle: the same value the first messages carry */
	place.prev_end_lsn = !ns->resume.none && !ns->resume.complete &&
		txn->commit_lsn == ns->resume.commit_lsn ? ns->resume_prev_end : ns->intended_end;
	rp_lines_txn_fields(&ns->extra, txn);

	/*
	 * read even when covered: its relation records keep the decoder's view
	 * current
	 */
	if (rp_cursor_open(&c, dl, txn) < 0)
		return -1;
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		if (!is_data(rec.tag))
			continue;
		if (go > 0 && !covered && !rp_nats_resume_covers(&ns->resume, txn->commit_lsn, place.index))
		{
			go = data_record(ns, dl, &rec, id, &place);
			sent = true;
		}
		place.index++;
		if (go <= 0)
			break;
	}
	rp_cursor_close(&c);
	if (rc < 0)
		return -1;
	if (go <= 0)
		return go;
	if (sent)
	{
		if (!flush_held(ns, true))
			return 0;
		ns->intended.none = false;
		ns->intended.commit_lsn = txn->commit_lsn;
		ns->intended.index = place.index - 1;
		ns->intended.complete = true;
		ns->intended_end = txn->end_lsn;
	}
	return 1;
}

/* One pass over the batch from the known tail.  1 all sent, 0 the window failed, -1 a halt. */
int
rp_nats_pass_batch(RpNatsSink *ns, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	RpNatsIdent id = ident_of(ns, ck);

	ns->intended = ns->resume;
	ns->intended_end = ns->stream_end;
	rp_nats_pub_start(&ns->link, ns->o.window, ns->known_seq);
	for (int i = 0; i < n; i++)
	{
		int			rc = pass_txn(ns, dl, txns[i], &id);

		if (rc <= 0)
		{
			if (ns->held)
				natsMsg_Destroy(ns->held);
			ns->held = NULL;
			return rc;
		}
	}

	/*
	 * the batch ends with transactions that published nothing: record their
	 * end
	 */
	if (ck->end_lsn > ns->intended_end)
	{
		if (!send_position(ns, &id, ck))
			return 0;
		ns->intended.none = false;
		ns->intended.commit_lsn = ck->commit_lsn;
		ns->intended.complete = true;
		ns->intended_end = ck->end_lsn;
	}
	return 1;
}

/*
 * A non-transactional message: one data message on the control subject,
 * placed like a transaction of its own at the message's LSN (index 0,
 * last), so that the tail resumes after it as after any transaction.
 */
int
rp_nats_pass_message(RpNatsSink *ns, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpNatsIdent id = ident_of(ns, ck);
	RpNatsPlace place;
	RpRecord	rec;

	ns->intended = ns->resume;
	ns->intended_end = ns->stream_end;
	rp_nats_pub_start(&ns->link, ns->o.window, ns->known_seq);
	if (rp_nats_resume_covers_txn(&ns->resume, msg->lsn))
		return 1;
	memset(&place, 0, sizeof(place));
	place.commit_lsn = msg->lsn;
	place.end_lsn = ck->end_lsn;
	place.prev_end_lsn = ns->stream_end;
	place.last = true;
	memset(&rec, 0, sizeof(rec));
	rec.tag = RP_TAG_MESSAGE;
	rec.u.message.lsn = msg->lsn;
	rec.u.message.prefix = msg->prefix;
	rec.u.message.prefix_len = (uint32_t) strlen(msg->prefix);
	rec.u.message.content = msg->content;
	rec.u.message.content_len = msg->content_len;
	rp_buf_reset(&ns->payload);
	rp_render_record_out(&ns->payload, &rec, NULL, NULL, NULL);
	rp_nats_control_subject(&ns->subject, ns->prefix);
	rp_nats_hdrs_reset(&ns->hdrs);
	rp_nats_hdrs_place(&ns->hdrs, &id, &place);
	rp_nats_hdrs_add(&ns->hdrs, "Replicant-Op", "message");
	rp_nats_hdrs_add(&ns->hdrs, "Replicant-Transactional", "false");
	if (!send_msg(ns, make_msg(ns)))
		return 0;
	ns->intended.none = false;
	ns->intended.commit_lsn = msg->lsn;
	ns->intended.index = 0;
	ns->intended.complete = true;
	ns->intended_end = ck->end_lsn;
	return 1;
}

#endif							/* RP_HAVE_NATS */
