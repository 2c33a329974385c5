/*
 * rp_asm.c
 *    The assembler (see rp_asm.h).
 */
#include "rp_alloc.h"


#include "rp_lsn.h"
#include "stream/rp_asm.h"
#include "base/rp_counter.h"
#include "base/rp_status.h"

static void rp_asm_chunks_void(RpAsm *a, RpTxn *t);

void
rp_asm_init(RpAsm *a, RpSpill *spill, uint64_t watermark)
{
	memset(a, 0, sizeof(*a));
	rp_decoder_init(&a->dec);
	a->spill = spill;
	a->watermark = watermark;
	a->capraw = 64;
	a->raw = rp_malloc0(sizeof(RpRelRaw) * a->capraw);
}

void
rp_txn_free(RpTxn *txn)
{
	if (txn == NULL)
		return;
	rp_store_free(&txn->store);
	rp_txn_free(txn->chunk);
	if (txn->stamps)
		rp_free(txn->stamps);
	if (txn->subs)
		rp_free(txn->subs);
	if (txn->origin)
		rp_free(txn->origin);
	rp_free(txn);
}

void
rp_item_free(RpItem *item)
{
	if (item == NULL)
		return;
	rp_txn_free(item->txn);
	if (item->msg.prefix)
		rp_free(item->msg.prefix);
	if (item->msg.content)
		rp_free(item->msg.content);
	rp_free(item);
}

void
rp_asm_reset(RpAsm *a)
{
	rp_txn_free(a->cur);
	a->cur = NULL;
	while (a->streams)
	{
		RpTxn	   *next = a->streams->next;

		rp_asm_chunks_void(a, a->streams);
		rp_txn_free(a->streams);
		a->streams = next;
	}
	a->block = NULL;
	/* a new connection describes every relation again */
	rp_decoder_free(&a->dec);
	rp_decoder_init(&a->dec);
}

void
rp_asm_free(RpAsm *a)
{
	RpItem	   *it;

	rp_asm_reset(a);
	while ((it = rp_asm_pop(a)) != NULL)
		rp_item_free(it);
	for (size_t i = 0; i < a->capraw; i++)
		if (a->raw[i].bytes)
			rp_free(a->raw[i].bytes);
	rp_free(a->raw);
	rp_decoder_free(&a->dec);
}

bool
rp_asm_busy(const RpAsm *a)
{
	return a->cur != NULL || a->streams != NULL || a->ready_head != NULL;
}

/* ---- raw relation records ------------------------------------------------ */

static RpRelRaw *
rp_raw_slot(RpRelRaw *tab, size_t cap, uint32_t relid)
{
	size_t		i = (relid * 2654435761u) & (cap - 1);

	while (tab[i].bytes != NULL && tab[i].relid != relid)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static void
rp_raw_put(RpAsm *a, uint32_t relid, const unsigned char *bytes, size_t len)
{
	RpRelRaw   *slot;

	if ((a->nraw + 1) * 2 > a->capraw)
	{
		RpRelRaw   *old = a->raw;
		size_t		oldcap = a->capraw;

		a->capraw *= 2;
		a->raw = rp_malloc0(sizeof(RpRelRaw) * a->capraw);
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].bytes)
				*rp_raw_slot(a->raw, a->capraw, old[i].relid) = old[i];
		rp_free(old);
	}
	slot = rp_raw_slot(a->raw, a->capraw, relid);
	if (slot->bytes == NULL)
	{
		a->nraw++;
		slot->relid = relid;
		slot->version = 0;
	}
	else
		rp_free(slot->bytes);
	slot->bytes = rp_malloc(len);
	memcpy(slot->bytes, bytes, len);
	slot->len = len;
	slot->version++;
}

/* ---- transactions ------------------------------------------------------- */

static RpTxn *
rp_txn_new(RpAsm *a, uint32_t xid)
{
	RpTxn	   *t = rp_malloc0(sizeof(RpTxn));

	t->xid = xid;
	rp_store_init(&t->store, a->spill);
	return t;
}

/* Append a record to a transaction, and to its open chunk when it has one. */
static int
rp_txn_append(RpTxn *t, const void *raw, size_t len)
{
	if (rp_store_append(&t->store, raw, len) < 0)
		return -1;
	if (t->chunk && rp_store_append(&t->chunk->store, raw, len) < 0)
		return -1;
	return 0;
}

/* Store the relation's current description in txn unless it is there. */
static int
rp_txn_describe(RpAsm *a, RpTxn *t, uint32_t relid)
{
	RpRelRaw   *raw = rp_raw_slot(a->raw, a->capraw, relid);
	int			i;

	if (raw->bytes == NULL)
		return rp_fail(RP_HALT_UNKNOWN_RELATION,
					   "change for relation %u, which no relation record described", relid);
	for (i = 0; i < t->nstamps; i++)
		if (t->stamps[i].relid == relid)
		{
			if (t->stamps[i].version == raw->version)
				return 0;
			break;
		}
	if (i == t->nstamps)
	{
		if (t->nstamps == t->capstamps)
		{
			t->capstamps = t->capstamps ? t->capstamps * 2 : 8;
			t->stamps = rp_realloc(t->stamps, sizeof(RpRelStamp) * t->capstamps);
		}
		t->nstamps++;
	}
	t->stamps[i].relid = relid;
	t->stamps[i].version = raw->version;
	return rp_txn_append(t, raw->bytes, raw->len);
}

/* Remember where a subtransaction's changes start (streamed only). */
static void
rp_txn_note_subxact(RpTxn *t, uint32_t xid)
{
	if (xid == 0 || xid == t->xid)
		return;
	for (int i = 0; i < t->nsubs; i++)
		if (t->subs[i].xid == xid)
			return;
	if (t->nsubs == t->capsubs)
	{
		t->capsubs = t->capsubs ? t->capsubs * 2 : 8;
		t->subs = rp_realloc(t->subs, sizeof(RpSubxact) * t->capsubs);
	}
	t->subs[t->nsubs].xid = xid;
	t->subs[t->nsubs].offset = rp_store_length(&t->store);
	t->subs[t->nsubs].nchanges = t->nchanges;
	t->nsubs++;
}

static void
rp_asm_enqueue(RpAsm *a, RpItem *item)
{
	item->next = NULL;
	if (a->ready_tail)
		a->ready_tail->next = item;
	else
		a->ready_head = item;
	a->ready_tail = item;
}

RpItem	   *
rp_asm_pop(RpAsm *a)
{
	RpItem	   *item = a->ready_head;

	if (item)
	{
		a->ready_head = item->next;
		if (a->ready_head == NULL)
			a->ready_tail = NULL;
		item->next = NULL;
	}
	return item;
}

/* Chunks of t went out and will not be followed by t as chunked: say so. */
static void
rp_asm_chunks_void(RpAsm *a, RpTxn *t)
{
	RpItem	   *item;

	if (t == NULL || !t->chunked)
		return;
	t->chunked = false;
	t->chunking = false;
	item = rp_malloc0(sizeof(RpItem));
	item->kind = RP_ITEM_STREAM_END;
	item->xid = t->xid;
	rp_asm_enqueue(a, item);
}

/* A stream block ended: its records go out as a chunk (RpAsm.early). */
static void
rp_asm_chunk_out(RpAsm *a, RpTxn *t)
{
	RpTxn	   *c = t->chunk;
	RpItem	   *item;

	t->chunk = NULL;
	if (c == NULL)
		return;
	if (rp_store_length(&c->store) == 0)
	{
		rp_txn_free(c);
		return;
	}
	item = rp_malloc0(sizeof(RpItem));
	item->kind = RP_ITEM_CHUNK;
	item->txn = c;
	item->first = t->chunk_first;
	t->chunk_first = false;
	t->chunked = true;
	rp_asm_enqueue(a, item);
}

static void
rp_asm_finish(RpAsm *a, RpTxn *t)
{
	RpItem	   *item;

	rp_txn_free(t->chunk);
	t->chunk = NULL;

	/* at or below the watermark: already applied before a restart */
	if (t->commit_lsn <= a->watermark)
	{
		RP_COUNT_ADD(a->skipped, 1);
		rp_asm_chunks_void(a, t);
		rp_txn_free(t);
		return;
	}
	if (a->events.fn)
	{
		RpEvent		ev;

		rp_event_init(&ev, RP_EVENT_TXN_ASSEMBLED);
		ev.txns = 1;
		ev.changes = t->nchanges;
		ev.bytes = rp_store_length(&t->store);
		ev.lsn = t->commit_lsn;
		ev.end_lsn = t->end_lsn;
		rp_event_emit(&a->events, &ev);
	}
	item = rp_malloc0(sizeof(RpItem));
	item->kind = RP_ITEM_TXN;
	item->txn = t;
	rp_asm_enqueue(a, item);
}

static RpTxn *
rp_asm_stream_find(RpAsm *a, uint32_t xid, bool unlink)
{
	RpTxn	  **pp = &a->streams;

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->xid == xid)
		{
			RpTxn	   *t = *pp;

			if (unlink)
			{
				*pp = t->next;
				t->next = NULL;
			}
			return t;
		}
	return NULL;
}

/* The transaction a change record belongs to, or a halt. */
static RpTxn *
rp_asm_target(RpAsm *a, const RpRecord *rec)
{
	char		b[32];

	if (a->block)
		return a->block;
	if (a->cur)
		return a->cur;
	rp_fail(RP_HALT_PROTOCOL, "%s record outside any transaction in frame at %s",
			rp_tag_name(rec->tag), rp_lsn_format(a->frame_lsn, b));
	return NULL;
}

/*
 * The stream records of rp_asm_record: a block of a transaction still open
 * (STREAM START .. STOP), and its end (STREAM COMMIT or ABORT), each from
 * idle only (docs/guarantees.md, "The assembler's states").
 */
static int
rp_asm_stream_record(RpAsm *a, const RpRecord *rec)
{
	RpTxn	   *t;
	char		b[32];

	switch (rec->tag)
	{
		case RP_TAG_STREAM_START:
			if (a->cur || a->block)
				return rp_fail(RP_HALT_PROTOCOL, "stream start of xid %u inside an open transaction at %s",
							   rec->u.stream_start.xid, rp_lsn_format(a->frame_lsn, b));
			t = rp_asm_stream_find(a, rec->u.stream_start.xid, false);
			if (t == NULL)
			{
				if (!rec->u.stream_start.first_segment)
					return rp_fail(RP_HALT_PROTOCOL, "stream of xid %u resumed without its first segment at %s",
								   rec->u.stream_start.xid, rp_lsn_format(a->frame_lsn, b));
				t = rp_txn_new(a, rec->u.stream_start.xid);
				t->streamed = true;
				t->chunking = a->early;
				t->chunk_first = true;
				t->next = a->streams;
				a->streams = t;
			}
			else if (rec->u.stream_start.first_segment)
				return rp_fail(RP_HALT_PROTOCOL, "stream of xid %u started twice at %s",
							   rec->u.stream_start.xid, rp_lsn_format(a->frame_lsn, b));
			a->block = t;
			if (t->chunking && t->chunk == NULL)
			{
				t->chunk = rp_txn_new(a, t->xid);
				t->chunk->streamed = true;
			}
			return 0;
		case RP_TAG_STREAM_STOP:
			if (a->block == NULL)
				return rp_fail(RP_HALT_PROTOCOL, "stream stop outside a stream block at %s",
							   rp_lsn_format(a->frame_lsn, b));
			if (a->block->chunking)
				rp_asm_chunk_out(a, a->block);
			a->block = NULL;
			return 0;
		case RP_TAG_STREAM_COMMIT:
			if (a->block || a->cur)
				return rp_fail(RP_HALT_PROTOCOL, "stream commit of xid %u inside a transaction at %s",
							   rec->u.commit.xid, rp_lsn_format(a->frame_lsn, b));
			t = rp_asm_stream_find(a, rec->u.commit.xid, true);
			if (t == NULL)
				return rp_fail(RP_HALT_PROTOCOL, "stream commit of unknown xid %u at %s",
							   rec->u.commit.xid, rp_lsn_format(a->frame_lsn, b));
			t->commit_lsn = rec->u.commit.commit_lsn;
			t->end_lsn = rec->u.commit.end_lsn;
			t->commit_time = rec->u.commit.commit_time;
			t->timeline = rec->u.commit.timeline;
			rp_asm_finish(a, t);
			return 0;
		case RP_TAG_STREAM_ABORT:
			{
				uint32_t	xid = rec->u.stream_abort.xid;
				uint32_t	sub = rec->u.stream_abort.subxid;

				if (a->block || a->cur)
					return rp_fail(RP_HALT_PROTOCOL, "stream abort of xid %u inside a transaction at %s",
								   xid, rp_lsn_format(a->frame_lsn, b));
				if (sub == xid || sub == 0)
				{
					t = rp_asm_stream_find(a, xid, true);
					rp_asm_chunks_void(a, t);
					rp_txn_free(t);
					a->aborted++;
					return 0;
				}
				t = rp_asm_stream_find(a, xid, false);
				if (t == NULL)
					return 0;	/* nothing of it was ever sent */
				for (int i = 0; i < t->nsubs; i++)
					if (t->subs[i].xid == sub)
					{
						/*
						 * chunks that held its changes are void, and no more
						 * go out
						 */
						rp_asm_chunks_void(a, t);
						t->chunking = false;
						/* it and everything after it (its children) go */
						if (rp_store_truncate(&t->store, t->subs[i].offset) < 0)
							return -1;
						t->nchanges = t->subs[i].nchanges;
						t->nsubs = i;
						/* descriptions stored after the cut are gone too */
						t->nstamps = 0;
						break;
					}
				return 0;
			}
	}
	return rp_fail(RP_HALT_MALFORMED, "unexpected record tag 0x%02x at %s", rec->tag,
				   rp_lsn_format(a->frame_lsn, b));
}

static int
rp_asm_record(RpAsm *a, const RpRecord *rec, const unsigned char *raw, size_t rawlen)
{
	RpTxn	   *t;
	char		b[32];

	switch (rec->tag)
	{
		case RP_TAG_BEGIN:
			if (a->cur || a->block)
				return rp_fail(RP_HALT_PROTOCOL, "begin of xid %u inside an open transaction at %s",
							   rec->u.begin.xid, rp_lsn_format(a->frame_lsn, b));
			a->cur = rp_txn_new(a, rec->u.begin.xid);
			a->cur->final_lsn = rec->u.begin.final_lsn;
			a->cur->commit_time = rec->u.begin.commit_time;
			return 0;
		case RP_TAG_COMMIT:
			if (a->cur == NULL || a->block)
				return rp_fail(RP_HALT_PROTOCOL, "commit without begin at %s",
							   rp_lsn_format(a->frame_lsn, b));
			t = a->cur;
			a->cur = NULL;
			t->commit_lsn = rec->u.commit.commit_lsn;
			t->end_lsn = rec->u.commit.end_lsn;
			t->commit_time = rec->u.commit.commit_time;
			t->timeline = rec->u.commit.timeline;
			rp_asm_finish(a, t);
			return 0;
		case RP_TAG_ORIGIN:
			if (a->cur == NULL)
				return rp_fail(RP_HALT_PROTOCOL, "origin record outside a transaction at %s",
							   rp_lsn_format(a->frame_lsn, b));
			if (a->cur->origin)
				rp_free(a->cur->origin);
			a->cur->origin = rp_strndup(rec->u.origin.name, rec->u.origin.name_len);
			return 0;
		case RP_TAG_RELATION:
			rp_raw_put(a, rec->u.relation.rel->relid, raw, rawlen);

			/*
			 * delivery keeps its own copy; the receipt decoder needs only the
			 * newest
			 */
			rp_relation_free(rec->u.relation.previous);
			return 0;
		case RP_TAG_INSERT:
		case RP_TAG_UPDATE:
		case RP_TAG_DELETE:
			if ((t = rp_asm_target(a, rec)) == NULL)
				return -1;
			if (a->block)
				rp_txn_note_subxact(t, rec->u.change.xid);
			if (rp_txn_describe(a, t, rec->u.change.relid) < 0)
				return -1;
			t->nchanges++;
			return rp_txn_append(t, raw, rawlen);
		case RP_TAG_TRUNCATE:
			if ((t = rp_asm_target(a, rec)) == NULL)
				return -1;
			if (a->block)
				rp_txn_note_subxact(t, rec->u.truncate.xid);
			for (uint32_t i = 0; i < rec->u.truncate.nrels; i++)
				if (rp_txn_describe(a, t, rp_truncate_relid(rec, i)) < 0)
					return -1;
			t->nchanges++;
			return rp_txn_append(t, raw, rawlen);
		case RP_TAG_MESSAGE:
			if (rec->u.message.flags & RP_MESSAGE_TRANSACTIONAL)
			{
				if ((t = rp_asm_target(a, rec)) == NULL)
					return -1;
				if (a->block)
					rp_txn_note_subxact(t, rec->u.message.xid);
				t->nchanges++;
				return rp_txn_append(t, raw, rawlen);
			}
			else
			{
				RpItem	   *item = rp_malloc0(sizeof(RpItem));

				item->kind = RP_ITEM_MESSAGE;
				item->msg.lsn = rec->u.message.lsn;
				item->msg.prefix = rp_strndup(rec->u.message.prefix, rec->u.message.prefix_len);
				item->msg.content = rp_malloc(rec->u.message.content_len + 1);
				memcpy(item->msg.content, rec->u.message.content, rec->u.message.content_len);
				item->msg.content_len = rec->u.message.content_len;
				rp_asm_enqueue(a, item);
				return 0;
			}
		case RP_TAG_STREAM_START:
		case RP_TAG_STREAM_STOP:
		case RP_TAG_STREAM_COMMIT:
		case RP_TAG_STREAM_ABORT:
			return rp_asm_stream_record(a, rec);
	}
	return rp_fail(RP_HALT_MALFORMED, "unexpected record tag 0x%02x at %s", rec->tag,
				   rp_lsn_format(a->frame_lsn, b));
}

int
rp_asm_frame(RpAsm *a, const void *data, size_t len, uint64_t lsn)
{
	RpRecord	rec;
	int			rc;
	char		b[32];

	a->frame_lsn = lsn;
	if (!rp_decoder_frame(&a->dec, data, len))
		return rp_fail(RP_HALT_MALFORMED, "frame at %s: %s", rp_lsn_format(lsn, b), a->dec.error);
	while ((rc = rp_decoder_next(&a->dec, &rec)) > 0)
	{
		const unsigned char *raw = a->dec.frame_start + rec.offset;
		size_t		rawlen = (size_t) (a->dec.frame.p - raw);

		if (rp_asm_record(a, &rec, raw, rawlen) < 0)
			return -1;
	}
	if (rc < 0)
	{
		if (strstr(a->dec.error, "which no relation record described"))
			return rp_fail(RP_HALT_UNKNOWN_RELATION, "frame at %s: %s", rp_lsn_format(lsn, b), a->dec.error);
		return rp_fail(RP_HALT_MALFORMED, "frame at %s: %s", rp_lsn_format(lsn, b), a->dec.error);
	}
	return 0;
}
