/*
 * rp_cursor.c
 *    Reading a delivered transaction's records (see rp_deliver.h): the
 *    store read back, each record decoded, and relation records turned
 *    into the sink's schema-change callback and the relation view.
 */
#include "rp_alloc.h"

#include "base/rp_counter.h"
#include "base/rp_status.h"
#include "stream/rp_deliver.h"
#include "stream/rp_cursor.h"
#include "stream/rp_relview.h"

int
rp_cursor_open(RpCursor *c, RpDelivery *dl, RpTxn *txn)
{
	c->dl = dl;
	c->txn = txn;
	return rp_store_iter_start(&c->it, &txn->store);
}

int
rp_cursor_open_at(RpCursor *c, RpDelivery *dl, RpTxn *txn, uint64_t skip_bytes)
{
	uint64_t	skipped = 0;

	if (rp_cursor_open(c, dl, txn) < 0)
		return -1;
	while (skipped < skip_bytes)
	{
		const unsigned char *raw;
		size_t		len;
		int			rc = rp_store_iter_next(&c->it, &raw, &len);

		if (rc < 0)
		{
			rp_cursor_close(c);
			return -1;
		}
		if (rc == 0)
			break;
		skipped += len;
	}
	if (skipped != skip_bytes)
	{
		rp_cursor_close(c);
		return rp_fail(RP_HALT_PROTOCOL, "transaction xid %u does not begin with the chunks applied early",
					   txn->xid);
	}
	return 0;
}

static int
rp_cursor_relation(RpCursor *c, const RpRecord *rec, const unsigned char *raw, size_t len)
{
	RpDelivery *dl = c->dl;
	const RpRelation *after = rec->u.relation.rel;
	RpRelation *before = rec->u.relation.previous;
	char		what[256];
	RpSchemaChange change = rp_schema_diff(before, after, what, sizeof(what));
	int			rc = 0;

	if (change != RP_SCHEMA_SAME)
	{
		if (dl->sink->handle_schema_change)
			rc = dl->sink->handle_schema_change(dl->sink, before, after, change);
		else if (change == RP_SCHEMA_DESTRUCTIVE)
			rc = rp_fail(RP_HALT_SCHEMA, "destructive schema change of table \"%s\".\"%s\": %s",
						 after->schema, after->name, what);
		if (rc == 0)
			rp_relview_put(dl, after->relid, raw, len);
		if (change != RP_SCHEMA_NEW || rc < 0)
		{
			RpEvent		ev;

			rp_event_init(&ev, rc < 0 ? RP_EVENT_SCHEMA_HALTED
						  : change == RP_SCHEMA_ADDITIVE ? RP_EVENT_SCHEMA_ADDITIVE
						  : RP_EVENT_SCHEMA_DESTRUCTIVE);
			ev.schema = after->schema;
			ev.relation = after->name;
			ev.lsn = c->txn->commit_lsn;
			ev.end_lsn = c->txn->end_lsn;
			if (rc < 0)
				ev.reason = (int) rp_error_halt();
			rp_deliver_emit(dl, &ev);
		}
	}
	rp_relation_free(before);
	return rc;
}

int
rp_cursor_next(RpCursor *c, RpRecord *rec)
{
	for (;;)
	{
		const unsigned char *raw;
		size_t		len;
		int			rc = rp_store_iter_next(&c->it, &raw, &len);

		if (rc <= 0)
			return rc;
		rp_decoder_records(&c->dl->dec, raw, len);
		rc = rp_decoder_next(&c->dl->dec, rec);
		if (rc <= 0)
			return rp_fail(RP_HALT_MALFORMED, "stored record of xid %u does not decode: %s",
						   c->txn->xid, c->dl->dec.error);
		if (rec->tag != RP_TAG_RELATION)
			return 1;
		if (rp_cursor_relation(c, rec, raw, len) < 0)
			return -1;
	}
}

void
rp_cursor_close(RpCursor *c)
{
	rp_store_iter_end(&c->it);
}
