/*
 * rp_deliver.c
 *    Batches, early apply of streamed transactions and checkpoint advance
 *    (see rp_deliver.h).  Reading a transaction is rp_cursor.c's, the
 *    relation view file rp_relview.c's, the schema diff rp_schemadiff.c's.
 */
#include "rp_alloc.h"

#include <stdio.h>

#include "stream/rp_deliver.h"
#include "stream/rp_relview.h"
#include "base/rp_clock.h"
#include "base/rp_status.h"

/* ---- init ---------------------------------------------------------------- */

int
rp_deliver_init(RpDelivery *dl, RpSink *sink, const RpCheckpoint *ck, const char *ckpt_path,
				const char *view_path, const RpBatchLimits *limits)
{
	memset(dl, 0, sizeof(*dl));
	dl->sink = sink;
	dl->ck = *ck;
	dl->ckpt_path = ckpt_path;
	dl->view_path = view_path;
	dl->limits = *limits;
	dl->count = &dl->own_count;
	dl->events.fn = NULL;		/* no subscriber: rp_deliver_emit counts */
	RP_COUNT_STORE(dl->count->checkpoint_lsn, ck->end_lsn);
	if (dl->limits.max_txns < 1)
		dl->limits.max_txns = 1;
	dl->batch = rp_malloc0(sizeof(RpTxn *) * (size_t) dl->limits.max_txns);
	rp_decoder_init(&dl->dec);
	rp_buf_init(&dl->view, 1024);
	return view_path ? rp_relview_load(dl) : 0;
}

int
rp_deliver_check_sink(const RpSink *sink, bool messages)
{
	if (messages && sink->handle_message == NULL && !sink->declines_messages)
		return rp_fail(RP_HALT_CONFIG, "sink \"%s\" has no handle_message callback while logical messages are enabled: implement it, or set declines_messages to pass them (or turn them off with -o include_messages=false)",
					   sink->name ? sink->name : "(unnamed)");
	return 0;
}

void
rp_deliver_count_into(RpDelivery *dl, RpDlCounters *c)
{
	dl->count = c;
	RP_COUNT_STORE(c->checkpoint_lsn, dl->ck.end_lsn);
}

void
rp_deliver_set_events(RpDelivery *dl, const RpEventHook *hook)
{
	dl->events = *hook;
}

void
rp_dl_count_event(RpDlCounters *c, const RpEvent *ev)
{
	switch (ev->kind)
	{
		case RP_EVENT_BATCH_COMMITTED:
		case RP_EVENT_BATCH_FAILED:
			/* a failed batch's txns are those the sink kept (G1) */
			if (ev->kind == RP_EVENT_BATCH_COMMITTED)
				RP_COUNT_ADD(c->batches, 1);
			RP_COUNT_ADD(c->txns, ev->txns);
			RP_COUNT_ADD(c->changes, ev->changes);
			break;
		case RP_EVENT_SCHEMA_ADDITIVE:
		case RP_EVENT_SCHEMA_DESTRUCTIVE:
			RP_COUNT_ADD(c->schema_changes, 1);
			break;
		case RP_EVENT_CHECKPOINT_STORED:
			RP_COUNT_STORE(c->checkpoint_lsn, ev->end_lsn);
			break;
		default:
			break;
	}
}

void
rp_deliver_emit(RpDelivery *dl, RpEvent *ev)
{
	if (ev->slot == NULL && dl->ck.slot[0] != '\0')
		ev->slot = dl->ck.slot;

	/*
	 * a failure's reason and, when a server gave one, its SQLSTATE: codes
	 * only (G4)
	 */
	if (ev->kind == RP_EVENT_BATCH_FAILED || ev->kind == RP_EVENT_CHECKPOINT_FAILED)
	{
		ev->reason = (int) rp_error_halt();
		snprintf(ev->sqlstate, sizeof(ev->sqlstate), "%s", rp_error_sqlstate());
	}
	if (dl->events.fn == NULL)
		rp_dl_count_event(dl->count, ev);
	else
		rp_event_emit(&dl->events, ev);
}

void
rp_deliver_free(RpDelivery *dl)
{
	for (int i = 0; i < dl->nbatch; i++)
		rp_txn_free(dl->batch[i]);
	rp_free(dl->batch);
	rp_decoder_free(&dl->dec);
	rp_buf_free(&dl->view);
}

/* ---- delivery ----------------------------------------------------------------- */

static void
rp_deliver_ckpt_event(RpDelivery *dl, RpEventKind kind, const RpCheckpoint *ck)
{
	RpEvent		ev;

	rp_event_init(&ev, kind);
	ev.lsn = ck->commit_lsn;
	ev.end_lsn = ck->end_lsn;
	if (kind == RP_EVENT_CHECKPOINT_FAILED)
		ev.reason = (int) rp_error_halt();
	rp_deliver_emit(dl, &ev);
}

static int
rp_deliver_persist(RpDelivery *dl, const RpCheckpoint *ck)
{
	if (dl->ckpt_path && !dl->sink->owns_checkpoint && rp_ckpt_write(dl->ckpt_path, ck) < 0)
	{
		rp_deliver_ckpt_event(dl, RP_EVENT_CHECKPOINT_FAILED, ck);
		return -1;
	}
	dl->ck = *ck;
	rp_deliver_ckpt_event(dl, RP_EVENT_CHECKPOINT_STORED, ck);
	return rp_relview_save(dl);
}

static void
rp_ck_for(const RpDelivery *dl, const RpTxn *t, RpCheckpoint *ck)
{
	*ck = dl->ck;
	ck->commit_lsn = t->commit_lsn;

	/*
	 * A source promoted under us: from the first commit read on the new
	 * timeline the checkpoint is on it.  Timelines only grow along one
	 * history; an older one said here is the segment's choice of the reader
	 * (the switch segment is read from the new timeline), never a step back.
	 */
	if (t->timeline > ck->timeline)
		ck->timeline = t->timeline;
	if (t->end_lsn > ck->end_lsn)
		ck->end_lsn = t->end_lsn;
	if (t->source_seq > ck->source_seq)
		ck->source_seq = t->source_seq;
}

/*
 * The first k transactions of the batch are done (durable in the sink or
 * behind the checkpoint file): told (kind: the batch committed, or failed
 * after the sink kept these k), freed; the rest kept.
 */
static void
rp_deliver_done(RpDelivery *dl, int k, RpEventKind kind, int64_t started_us, RpFlushReason why)
{
	RpEvent		ev;

	rp_event_init(&ev, kind);
	ev.flush = why;
	ev.txns = (uint64_t) k;
	for (int i = 0; i < k; i++)
	{
		ev.changes += dl->batch[i]->nchanges;
		ev.bytes += rp_store_length(&dl->batch[i]->store);
		ev.lsn = dl->batch[i]->commit_lsn;
		if (dl->batch[i]->end_lsn > ev.end_lsn)
			ev.end_lsn = dl->batch[i]->end_lsn;
		rp_txn_free(dl->batch[i]);
		dl->batch[i] = NULL;
	}
	ev.duration_us = rp_clock_mono_us() - started_us;
	if (kind == RP_EVENT_BATCH_FAILED)
		ev.reason = (int) rp_error_halt();
	if (kind == RP_EVENT_BATCH_COMMITTED)
		dl->nbatches++;
	rp_deliver_emit(dl, &ev);
	if (k == 0)
		return;
	memmove(dl->batch, dl->batch + k, sizeof(RpTxn *) * (size_t) (dl->nbatch - k));
	dl->nbatch -= k;
	dl->batch_bytes = 0;
	for (int i = 0; i < dl->nbatch; i++)
		dl->batch_bytes += rp_store_length(&dl->batch[i]->store);
}

int
rp_deliver_flush(RpDelivery *dl, bool force, int64_t now_ms)
{
	return rp_deliver_flush_for(dl, force ? RP_FLUSH_DRAIN : RP_FLUSH_NONE, now_ms);
}

int
rp_deliver_flush_for(RpDelivery *dl, RpFlushReason why, int64_t now_ms)
{
	RpSink	   *s = dl->sink;
	RpCheckpoint ck;
	int			n = dl->nbatch;
	int			done = 0;		/* transactions the sink's own checkpoint
								 * covers */
	int			i;
	int64_t		started_us;

	if (n == 0)
		return 0;
	if (why == RP_FLUSH_NONE)
	{
		if (n >= dl->limits.max_txns)
			why = RP_FLUSH_TXNS;
		else if (dl->batch_bytes >= dl->limits.max_bytes)
			why = RP_FLUSH_BYTES;
		else if (now_ms - dl->batch_started_ms >= dl->limits.max_ms)
			why = RP_FLUSH_TIME;
		else
			return 0;
	}
	started_us = rp_clock_mono_us();

	rp_ck_for(dl, dl->batch[n - 1], &ck);
	if (s->handle_batch && (n > 1 || s->handle_transaction == NULL))
	{
		if (s->handle_batch(s, dl, dl->batch, n, &ck) < 0)
		{
			rp_deliver_done(dl, 0, RP_EVENT_BATCH_FAILED, started_us, why);
			return -1;
		}
		if (rp_deliver_persist(dl, &ck) < 0)
		{
			rp_deliver_done(dl, s->owns_checkpoint ? n : 0, RP_EVENT_BATCH_FAILED, started_us, why);
			return -1;
		}
	}
	else
	{
		for (i = 0; i < n; i++)
		{
			RpCheckpoint one;

			rp_ck_for(dl, dl->batch[i], &one);
			if (s->handle_transaction(s, dl, dl->batch[i], &one) < 0)
				break;
			if (s->owns_checkpoint)
			{
				done = i + 1;
				if (rp_deliver_persist(dl, &one) < 0)
					break;
			}

			/*
			 * Library-owned: one file write per batch.  dl->ck is what the
			 * server is told (G2), so it moves only with the file.
			 */
			else if (i == n - 1 && rp_deliver_persist(dl, &one) < 0)
				break;
		}
		if (i < n)
		{
			/*
			 * A sink that owns its checkpoint already holds the first ones: a
			 * retry must not hand them over again (G1).  Library-owned, the
			 * whole batch is delivered again (at-least-once).
			 */
			rp_deliver_done(dl, done, RP_EVENT_BATCH_FAILED, started_us, why);
			return -1;
		}
	}
	rp_deliver_done(dl, n, RP_EVENT_BATCH_COMMITTED, started_us, why);
	return 0;
}

void
rp_deliver_idle(RpDelivery *dl)
{
	if (dl->idle_hook)
		dl->idle_hook(dl->idle_arg);
}

bool
rp_deliver_pending(const RpDelivery *dl)
{
	return dl->nbatch > 0;
}

/* ---- early apply of streamed transactions ------------------------------------- */

/* The sink drops what it applied early (its transaction will come whole). */
static void
rp_deliver_early_drop(RpDelivery *dl)
{
	if (dl->early_xid == 0)
		return;
	dl->sink->drop_chunks(dl->sink);
	dl->early_refused = dl->early_xid;
	dl->early_xid = 0;
	dl->early_bytes = 0;
	RP_COUNT_ADD(dl->count->early_drops, 1);
}

/*
 * Every Relation record of a chunk must describe its table as the sink
 * already has it: a schema change inside a chunk is applied the usual way,
 * at commit, where it cannot be undone half way.
 */
static bool
rp_deliver_chunk_plain(RpDelivery *dl, RpTxn *chunk)
{
	RpStoreIter it;
	const unsigned char *raw;
	size_t		len;
	bool		plain = true;
	int			rc;

	if (rp_store_iter_start(&it, &chunk->store) < 0)
		return false;
	while (plain && (rc = rp_store_iter_next(&it, &raw, &len)) > 0)
	{
		RpDecoder	scratch;
		RpRecord	rec;
		const RpRelation *have;
		char		what[256];

		if (raw[0] != RP_TAG_RELATION)
			continue;
		rp_decoder_init(&scratch);
		rp_decoder_records(&scratch, raw, len);
		have = NULL;
		if (rp_decoder_next(&scratch, &rec) > 0 && rec.tag == RP_TAG_RELATION)
		{
			have = rp_relmap_get(&dl->dec.rels, rec.u.relation.rel->relid);
			plain = have != NULL &&
				rp_schema_diff(have, rec.u.relation.rel, what, sizeof(what)) == RP_SCHEMA_SAME;
		}
		else
			plain = false;
		rp_decoder_free(&scratch);
	}
	if (rc < 0)
		plain = false;
	rp_store_iter_end(&it);
	return plain;
}

/*
 * A stream block of a transaction not committed yet.  The sink applies it
 * now, inside a unit it keeps open, so the destination works while the
 * server is still decoding the rest; the commit then only adds the tail.
 * Order: whatever committed before this block was received first, so the
 * pending batch goes before it; and anything else that commits while the
 * unit is open drops it (the transaction then comes whole, later, as
 * usual), so the destination always sees transactions in commit order.
 */
static int
rp_deliver_chunk(RpDelivery *dl, RpItem *item, int64_t now_ms)
{
	RpTxn	   *chunk = item->txn;
	int			rc;

	if (dl->sink->handle_chunk == NULL)
		return 0;
	if (dl->early_xid && (dl->early_xid != chunk->xid || item->first))
		rp_deliver_early_drop(dl);	/* another one, or the same one sent again */
	if (dl->early_xid == 0)
	{
		/* a transaction is taken from its first block on, or not at all */
		if (!item->first)
			return 0;
		if (rp_deliver_flush_for(dl, RP_FLUSH_STREAMED, now_ms) < 0)
			return -1;
		dl->early_refused = 0;
	}
	if (!rp_deliver_chunk_plain(dl, chunk))
	{
		if (dl->early_xid)
			rp_deliver_early_drop(dl);
		dl->early_refused = chunk->xid;
		return 0;
	}
	dl->early_xid = chunk->xid;
	rc = dl->sink->handle_chunk(dl->sink, dl, chunk);
	if (rc < 0)
	{
		dl->early_xid = 0;
		dl->early_bytes = 0;
		return -1;
	}
	if (rc > 0)
	{
		rp_deliver_early_drop(dl);
		return 0;
	}
	dl->early_bytes += rp_store_length(&chunk->store);
	RP_COUNT_ADD(dl->count->early_chunks, 1);
	return 0;
}

/* The transaction whose chunks the sink holds committed. */
static int
rp_deliver_chunked_commit(RpDelivery *dl, RpTxn *txn)
{
	RpCheckpoint ck;
	RpEvent		ev;
	int64_t		started_us = rp_clock_mono_us();

	rp_ck_for(dl, txn, &ck);
	rp_event_init(&ev, RP_EVENT_BATCH_COMMITTED);
	ev.flush = RP_FLUSH_STREAMED;
	ev.lsn = txn->commit_lsn;
	ev.end_lsn = ck.end_lsn;
	ev.bytes = rp_store_length(&txn->store);
	if (dl->sink->handle_chunked_commit(dl->sink, dl, txn, dl->early_bytes, &ck) < 0)
	{
		dl->early_xid = 0;
		dl->early_bytes = 0;
		rp_txn_free(txn);
		ev.kind = RP_EVENT_BATCH_FAILED;
		ev.reason = (int) rp_error_halt();
		ev.duration_us = rp_clock_mono_us() - started_us;
		rp_deliver_emit(dl, &ev);
		return -1;
	}
	dl->early_xid = 0;
	dl->early_bytes = 0;
	RP_COUNT_ADD(dl->count->early_commits, 1);
	ev.txns = 1;
	ev.changes = txn->nchanges;
	ev.duration_us = rp_clock_mono_us() - started_us;
	dl->nbatches++;
	rp_deliver_emit(dl, &ev);
	rp_txn_free(txn);
	return rp_deliver_persist(dl, &ck);
}

int
rp_deliver_item(RpDelivery *dl, RpItem *item, int64_t now_ms)
{
	int			rc = 0;

	if (item->kind == RP_ITEM_CHUNK)
	{
		rc = rp_deliver_chunk(dl, item, now_ms);
		rp_item_free(item);
		return rc;
	}
	if (item->kind == RP_ITEM_STREAM_END)
	{
		if (dl->early_xid == item->xid)
			rp_deliver_early_drop(dl);
		rp_item_free(item);
		return 0;
	}
	if (dl->early_xid)
	{
		if (item->kind == RP_ITEM_TXN && item->txn->xid == dl->early_xid && item->txn->streamed)
		{
			RpTxn	   *txn = item->txn;

			item->txn = NULL;
			rp_item_free(item);
			return rp_deliver_chunked_commit(dl, txn);
		}

		/*
		 * something else commits first: what the sink holds would come after
		 * it
		 */
		rp_deliver_early_drop(dl);
	}

	if (item->kind == RP_ITEM_TXN)
	{
		if (dl->nbatch == 0)
			dl->batch_started_ms = now_ms;
		dl->batch[dl->nbatch++] = item->txn;
		dl->batch_bytes += rp_store_length(&item->txn->store);
		item->txn = NULL;
		rp_item_free(item);
		return rp_deliver_flush(dl, false, now_ms);
	}

	/* a non-transactional message ends the batch, then goes alone */
	if (rp_deliver_flush_for(dl, RP_FLUSH_MESSAGE, now_ms) < 0)
		rc = -1;
	else
	{
		RpCheckpoint ck = dl->ck;

		if (item->msg.lsn > ck.end_lsn)
			ck.end_lsn = item->msg.lsn;
		if (item->msg.source_seq > ck.source_seq)
			ck.source_seq = item->msg.source_seq;
		if (dl->sink->handle_message == NULL && !dl->sink->declines_messages)
			rc = rp_deliver_check_sink(dl->sink, true);
		else if (dl->sink->handle_message &&
				 dl->sink->handle_message(dl->sink, &item->msg, &ck) < 0)
			rc = -1;
		else
		{
			RP_COUNT_ADD(dl->count->messages, 1);
			rc = rp_deliver_persist(dl, &ck);
		}
	}
	rp_item_free(item);
	return rc;
}

int
rp_deliver_advance(RpDelivery *dl, uint64_t lsn, uint64_t source_seq)
{
	RpCheckpoint ck = dl->ck;

	/*
	 * Idle WAL (checkpoints, other databases, filtered tables) moves the
	 * position only when nothing is batched or applied early, and only once
	 * the position is durable where the sink's restart reads it: the sink's
	 * own record (the mirror's row, the file log's checkpoint line, the NATS
	 * position message) or, for stdout and exec, the library's file, which
	 * every earlier record reached before its batch returned.  A slot that
	 * never confirms idle WAL holds it for good, and a fast shutdown of the
	 * source waits for ever on the confirmation of its shutdown checkpoint.
	 */
	if (dl->nbatch > 0 || dl->early_xid != 0 || lsn <= dl->ck.end_lsn)
		return 0;
	ck.end_lsn = lsn;
	if (source_seq > ck.source_seq)
		ck.source_seq = source_seq;
	if (dl->sink->owns_checkpoint)
	{
		if (dl->sink->advance == NULL)
			return 0;
		if (dl->sink->advance(dl->sink, &ck) < 0)
		{
			rp_deliver_ckpt_event(dl, RP_EVENT_CHECKPOINT_FAILED, &ck);
			return -1;
		}
		dl->ck = ck;
		rp_deliver_ckpt_event(dl, RP_EVENT_CHECKPOINT_STORED, &ck);
		return 0;
	}
	return rp_deliver_persist(dl, &ck);
}
