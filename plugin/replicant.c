/*
 * replicant.c
 *    The replicant logical decoding output plugin: its callbacks, in the
 *    order a session meets them.
 *
 * Each callback encodes into the session's frame (rp_output.c) through the
 * common codec (common/rp_encode.h); values are converted by rp_types.c
 * with conversions cached per relation by rp_relcache.c.  Every callback
 * runs in a private memory context that is reset when it returns, so the
 * plugin's memory does not grow with the transaction.
 *
 * Nothing here reports a row value: errors name relations, columns, types
 * and LSNs only (G4 of the design brief).
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "rp_encode.h"
#include "rp_output.h"
#include "rp_relcache.h"

PG_MODULE_MAGIC;

/*
 * A change's old and new rows: 17 removed ReorderBufferTupleBuf, they are
 * plain HeapTuples since.
 */
#if PG_VERSION_NUM >= 170000
#define RP_CHANGE_TUPLE(t) (t)
#else
#define RP_CHANGE_TUPLE(t) (&(t)->tuple)
#endif

extern void _PG_output_plugin_init(OutputPluginCallbacks *cb);

/* Keepalive opportunity every this many changes, as pgoutput does. */
#define RP_PROGRESS_EVERY 100

static void rp_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init);
static void rp_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn);
static void rp_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					  Relation rel, ReorderBufferChange *change);
static void rp_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
						int nrelations, Relation relations[], ReorderBufferChange *change);
static void rp_message(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					   XLogRecPtr message_lsn, bool transactional, const char *prefix,
					   Size message_size, const char *message);
static bool rp_filter_by_origin(LogicalDecodingContext *ctx, RepOriginId origin_id);
static void rp_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn);
static void rp_shutdown(LogicalDecodingContext *ctx);
static void rp_stream_start(LogicalDecodingContext *ctx, ReorderBufferTXN *txn);
static void rp_stream_stop(LogicalDecodingContext *ctx, ReorderBufferTXN *txn);
static void rp_stream_abort(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
							XLogRecPtr abort_lsn);
static void rp_stream_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
							 XLogRecPtr commit_lsn);

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	AssertVariableIsOfType(&_PG_output_plugin_init, LogicalOutputPluginInit);

	cb->startup_cb = rp_startup;
	cb->begin_cb = rp_begin;
	cb->change_cb = rp_change;
	cb->truncate_cb = rp_truncate;
	cb->message_cb = rp_message;
	cb->filter_by_origin_cb = rp_filter_by_origin;
	cb->commit_cb = rp_commit;
	cb->shutdown_cb = rp_shutdown;
	/* streaming of in-progress transactions (used when streaming=on) */
	cb->stream_start_cb = rp_stream_start;
	cb->stream_stop_cb = rp_stream_stop;
	cb->stream_abort_cb = rp_stream_abort;
	cb->stream_commit_cb = rp_stream_commit;
	cb->stream_change_cb = rp_change;
	cb->stream_truncate_cb = rp_truncate;
	cb->stream_message_cb = rp_message;

	/*
	 * no two-phase callbacks: prepared transactions are sent at COMMIT
	 * PREPARED
	 */
}

/* PostgreSQL-epoch timestamps to the wire's Unix-epoch microseconds. */
static inline int64
rp_commit_time(ReorderBufferTXN *txn)
{
	return txn->xact_time.commit_time + RP_PG_EPOCH_USECS;
}

static inline RpState *
rp_state(LogicalDecodingContext *ctx)
{
	return (RpState *) ctx->output_plugin_private;
}

/*
 * The timeline of the WAL the commit record was read from (version 4; 0
 * before it, which encodes the older record).  The reader chose it for the
 * segment holding the record, from the server's history as it is now
 * (XLogReadDetermineTimeline): on a standby promoted while we decode, the
 * first commit read after the switch already says the new timeline, which
 * a consumer must checkpoint on or its restart takes the old timeline's
 * position for one past the switch.
 */
static inline uint32
rp_commit_timeline(LogicalDecodingContext *ctx, const RpState *st)
{
	if (st->opts.proto_version < RP_PROTO_VERSION_COMMIT_TLI)
		return 0;
	return ctx->reader->currTLI;
}

/* ---- startup ---------------------------------------------------------- */

static void
rp_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	RpState    *st = MemoryContextAllocZero(ctx->context, sizeof(RpState));
	MemoryContext old;

	st->cxt = AllocSetContextCreate(ctx->context, "replicant session",
									ALLOCSET_DEFAULT_SIZES);
	st->change_cxt = AllocSetContextCreate(ctx->context, "replicant change",
										   ALLOCSET_DEFAULT_SIZES);
	st->write_cxt = AllocSetContextCreate(ctx->context, "replicant write",
										  ALLOCSET_DEFAULT_SIZES);
	ctx->output_plugin_private = st;

	old = MemoryContextSwitchTo(st->cxt);
	rp_options_parse(ctx->output_plugin_options, &st->opts);
	rp_relcache_init(&st->opts);
	MemoryContextSwitchTo(old);
	rp_types_set_protocol(st->opts.proto_version, st->opts.json);
	rp_output_init(st);

	opt->output_type = st->opts.json ? OUTPUT_PLUGIN_TEXTUAL_OUTPUT
		: OUTPUT_PLUGIN_BINARY_OUTPUT;
	opt->receive_rewrites = false;
	/* the server streams only if the client asked for it */
	ctx->streaming &= st->opts.streaming;
}

/* ---- transactions ----------------------------------------------------- */

static void
rp_send_begin(LogicalDecodingContext *ctx, RpState *st, ReorderBufferTXN *txn)
{
	RpBuf	   *buf = rp_output_buf(st);

	rp_enc_begin(buf, txn->xid, txn->final_lsn, rp_commit_time(txn));
	rp_output_record_done(ctx, st);
	if (txn->origin_id != InvalidRepOriginId)
	{
		char	   *origin = NULL;

		if (replorigin_by_oid(txn->origin_id, true, &origin))
		{
			rp_enc_origin(rp_output_buf(st), txn->origin_lsn, origin);
			rp_output_record_done(ctx, st);
		}
	}
	st->begin_sent = true;
}

static void
rp_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	RpState    *st = rp_state(ctx);

	st->txn = txn;
	st->begin_sent = false;
	if (!st->opts.skip_empty_xacts)
		rp_send_begin(ctx, st, txn);
}

static void
rp_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	RpState    *st = rp_state(ctx);
	bool		skipped = !st->begin_sent;

	/* let the walsender confirm progress over skipped transactions too */
	OutputPluginUpdateProgress(ctx, skipped);
	st->changes_since_progress = 0;
	if (!skipped)
	{
		rp_enc_commit_tli(rp_output_buf(st), commit_lsn, txn->end_lsn, rp_commit_time(txn),
						  rp_commit_timeline(ctx, st));
		rp_output_record_done(ctx, st);
		rp_output_flush(ctx, st);
	}
	st->begin_sent = false;
	st->txn = NULL;
}

/* ---- streaming blocks -------------------------------------------------- */

static RpTxnState *
rp_txn_state(LogicalDecodingContext *ctx, ReorderBufferTXN *toptxn)
{
	if (toptxn->output_plugin_private == NULL)
		toptxn->output_plugin_private =
			MemoryContextAllocZero(rp_state(ctx)->cxt, sizeof(RpTxnState));
	return (RpTxnState *) toptxn->output_plugin_private;
}

static void
rp_txn_state_free(ReorderBufferTXN *toptxn)
{
	if (toptxn->output_plugin_private)
		pfree(toptxn->output_plugin_private);
	toptxn->output_plugin_private = NULL;
}

static void
rp_send_stream_start(LogicalDecodingContext *ctx, RpState *st)
{
	rp_enc_stream_start(rp_output_buf(st), st->stream_txn->xid, st->stream_first_segment);
	rp_output_record_done(ctx, st);
	st->stream_start_sent = true;
	rp_txn_state(ctx, st->stream_txn)->sent_any = true;
}

static void
rp_stream_start(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	RpState    *st = rp_state(ctx);

	st->in_stream = true;
	st->stream_txn = txn;

	/*
	 * "First" means first that the client sees: with skip_empty_xacts and
	 * filters, the server's first block may have sent nothing at all.
	 */
	st->stream_first_segment = !(txn->output_plugin_private &&
								 ((RpTxnState *) txn->output_plugin_private)->sent_any);
	st->stream_start_sent = false;
	if (!st->opts.skip_empty_xacts)
		rp_send_stream_start(ctx, st);
}

static void
rp_stream_stop(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	RpState    *st = rp_state(ctx);

	if (st->stream_start_sent)
	{
		rp_enc_stream_stop(rp_output_buf(st));
		rp_output_record_done(ctx, st);
		rp_output_flush(ctx, st);
	}
	st->in_stream = false;
	st->stream_start_sent = false;
	st->stream_txn = NULL;
}

static void
rp_stream_abort(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr abort_lsn)
{
	RpState    *st = rp_state(ctx);
	ReorderBufferTXN *toptxn = txn->toptxn ? txn->toptxn : txn;
	RpTxnState *ts = toptxn->output_plugin_private;

	if (ts != NULL && ts->sent_any)
	{
		rp_enc_stream_abort(rp_output_buf(st), toptxn->xid, txn->xid);
		rp_output_record_done(ctx, st);
		rp_output_flush(ctx, st);
	}
	if (toptxn == txn)
		rp_txn_state_free(toptxn);
}

static void
rp_stream_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	RpState    *st = rp_state(ctx);
	RpTxnState *ts = txn->output_plugin_private;
	bool		sent = ts != NULL && ts->sent_any;

	OutputPluginUpdateProgress(ctx, !sent);
	if (sent)
	{
		rp_enc_stream_commit_tli(rp_output_buf(st), txn->xid, commit_lsn, txn->end_lsn,
								 rp_commit_time(txn), rp_commit_timeline(ctx, st));
		rp_output_record_done(ctx, st);
		rp_output_flush(ctx, st);
	}
	rp_txn_state_free(txn);
}

/*
 * Before the first record of a transaction (or of a stream block): its
 * BEGIN or STREAM START, deferred so empty transactions can be skipped.
 * Returns the xid that stream records must carry (0 outside streams).
 */
static uint32
rp_open_transaction(LogicalDecodingContext *ctx, RpState *st, TransactionId change_xid)
{
	if (st->in_stream)
	{
		if (!st->stream_start_sent)
			rp_send_stream_start(ctx, st);
		return change_xid;
	}
	if (!st->begin_sent)
		rp_send_begin(ctx, st, st->txn);
	return 0;
}

static void
rp_progress(LogicalDecodingContext *ctx, RpState *st)
{
	if (++st->changes_since_progress >= RP_PROGRESS_EVERY)
	{
		OutputPluginUpdateProgress(ctx, !st->begin_sent && !st->stream_start_sent);
		st->changes_since_progress = 0;
	}
}

/* ---- changes ----------------------------------------------------------- */

/*
 * One tuple: natts kinds and values.  An old-key tuple marks the columns
 * outside the replica identity as such (they are NULL in the WAL record,
 * which is not the same as NULL in the row); an unchanged TOASTed value
 * is marked too, never sent as NULL.
 */
/* Errors while encoding name the relation and column, never the value. */
static void
rp_encode_error_context(void *arg)
{
	RpEncodeWhere *ec = arg;

	if (ec->attnum > 0)
		errcontext("encoding column \"%s\" of relation \"%s\"",
				   NameStr(TupleDescAttr(RelationGetDescr(ec->rel), ec->attnum - 1)->attname),
				   RelationGetRelationName(ec->rel));
}

/*
 * The tuple is rel's; pe describes it as published (rel's own entry, or its
 * partition root's, pubrel, with root_map giving rel's attnum for each of
 * the root's columns: a partition's row in its root's column order).
 */
static void
rp_encode_tuple(RpBuf *buf, RpRelEntry *pe, const AttrNumber *root_map, Relation rel,
				Relation pubrel, HeapTuple tuple, bool old_key)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	RpEncodeWhere ec = {pubrel, 0};
	ErrorContextCallback cb;

	cb.callback = rp_encode_error_context;
	cb.arg = &ec;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	rp_types_where = &ec;

	heap_deform_tuple(tuple, desc, values, nulls);
	rp_enc_tuple_start(buf, (uint16) pe->ncols);
	for (int i = 0; i < pe->ncols; i++)
	{
		RpColumnConv *c = &pe->cols[i];
		int			k = (root_map ? root_map[i] : c->attnum) - 1;

		if (old_key && !c->in_identity)
			rp_enc_datum_kind(buf, RP_DATUM_NOT_IN_KEY);
		else if (nulls[k])
			rp_enc_datum_kind(buf, RP_DATUM_NULL);
		else if (c->conv->typlen == -1 &&
				 VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(values[k])))
			rp_enc_datum_kind(buf, RP_DATUM_UNCHANGED);
		else
		{
			rp_enc_datum_kind(buf, RP_DATUM_VALUE);
			ec.attnum = c->attnum;
			rp_types_encode(buf, c->conv, values[k]);
		}
	}
	rp_types_where = NULL;
	error_context_stack = cb.previous;
}

static void
rp_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation rel,
		  ReorderBufferChange *change)
{
	RpState    *st = rp_state(ctx);
	MemoryContext old = MemoryContextSwitchTo(st->change_cxt);
	RpRelEntry *e;
	RpRelEntry *pe;
	Relation	pubrel = rel;
	HeapTuple	oldtup = NULL;
	HeapTuple	newtup = NULL;
	char		tag;
	bool		wanted;
	uint8		flags = 0;
	uint32		xid;
	RpBuf	   *buf;
	size_t		at;

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			tag = RP_TAG_INSERT;
			wanted = st->opts.send_insert;
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			tag = RP_TAG_UPDATE;
			wanted = st->opts.send_update;
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			tag = RP_TAG_DELETE;
			wanted = st->opts.send_delete;
			break;
		default:
			elog(ERROR, "replicant: unexpected change action %d", (int) change->action);
	}

	e = rp_relcache_get(rel);
	/* partitions=root: a partition's change is its root's */
	pe = rp_relcache_published(e);
	if (!wanted || !pe->selected)
	{
		rp_progress(ctx, st);
		MemoryContextSwitchTo(old);
		MemoryContextReset(st->change_cxt);
		return;
	}

	if (change->data.tp.oldtuple)
		oldtup = RP_CHANGE_TUPLE(change->data.tp.oldtuple);
	if (change->data.tp.newtuple)
		newtup = RP_CHANGE_TUPLE(change->data.tp.newtuple);

	/*
	 * A partition whose replica identity does not cover its root's logs old
	 * tuples that cannot name the row in the root's terms: the change goes as
	 * one without identity, which a reader refuses to guess about.
	 */
	if (pe != e && !e->identity_ok)
		oldtup = NULL;

	if (tag != RP_TAG_INSERT)
	{
		if (oldtup)
			flags |= pe->identity == REPLICA_IDENTITY_FULL ? RP_CHANGE_OLD_FULL : RP_CHANGE_OLD_KEY;

		/*
		 * a DELETE without its old row, or any change to a table without
		 * identity, cannot name its row: say so instead of dropping it
		 */
		if (!pe->has_identity || (pe != e && !e->identity_ok) ||
			(tag == RP_TAG_DELETE && oldtup == NULL))
			flags |= RP_CHANGE_NO_IDENTITY;
	}
	if (tag != RP_TAG_DELETE && newtup == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s of relation \"%s\" has no new tuple",
						tag == RP_TAG_INSERT ? "insert" : "update",
						RelationGetRelationName(rel))));

	xid = rp_open_transaction(ctx, st, change->txn->xid);
	rp_output_relation(ctx, st, pe);

	/* as pgoutput does for publish_via_partition_root: the root, by relcache */
	if (pe != e)
	{
		pubrel = RelationIdGetRelation(pe->relid);
		if (!RelationIsValid(pubrel))
			elog(ERROR, "replicant: could not open relation %u, the partition root of relation \"%s\"",
				 pe->relid, RelationGetRelationName(rel));
	}
	buf = rp_output_buf(st);
	at = rp_enc_change_start(buf, tag, pe->relid, flags, xid);
	if (oldtup)
		rp_encode_tuple(buf, pe, e->root_map, rel, pubrel, oldtup,
						pe->identity != REPLICA_IDENTITY_FULL);
	if (newtup && tag != RP_TAG_DELETE)
		rp_encode_tuple(buf, pe, e->root_map, rel, pubrel, newtup, false);
	rp_buf_end_record(buf, at);
	if (pubrel != rel)
		RelationClose(pubrel);
	rp_output_record_done(ctx, st);
	rp_progress(ctx, st);

	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

/* schema.name of a relation, for errors ("?" for one dropped meanwhile) */
static char *
rp_qualified_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *schema = get_namespace_name(get_rel_namespace(relid));

	return name && schema ? psprintf("%s.%s", schema, name) : pstrdup("?");
}

/*
 * partitions=root: a TRUNCATE of partitions is published as one of their
 * root only when it empties the root, that is when it truncates every leaf
 * partition the server logs.  A TRUNCATE of some of them cannot be said as
 * a change of the root (a reader would empty the other partitions' rows
 * too), so it stops decoding, naming the tables (fail-closed, G3).
 */
static void
rp_truncate_check_root(RpRelEntry *root, int nrelations, Relation relations[])
{
	for (int i = 0; i < root->nleaves; i++)
	{
		bool		found = false;

		for (int j = 0; j < nrelations && !found; j++)
			found = RelationGetRelid(relations[j]) == root->leaves[i];
		if (!found)
		{
			char	   *leaf = rp_qualified_name(root->leaves[i]);
			char	   *name = rp_qualified_name(root->relid);

			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("replicant: a TRUNCATE of some partitions of \"%s\" cannot be published with option \"partitions\" = root",
							name),
					 errdetail("Its partition \"%s\" is not truncated; a TRUNCATE of \"%s\" would empty it downstream.",
							   leaf, name),
					 errhint("Truncate the partitioned table itself, or decode with partitions=leaf.")));
		}
	}
}

static void
rp_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, int nrelations,
			Relation relations[], ReorderBufferChange *change)
{
	RpState    *st = rp_state(ctx);
	MemoryContext old = MemoryContextSwitchTo(st->change_cxt);
	uint32	   *relids = palloc(sizeof(uint32) * Max(nrelations, 1));
	RpRelEntry **entries = palloc(sizeof(RpRelEntry *) * Max(nrelations, 1));
	uint32		n = 0;
	uint8		flags = 0;
	uint32		xid;

	if (st->opts.send_truncate)
		for (int i = 0; i < nrelations; i++)
		{
			RpRelEntry *e = rp_relcache_published(rp_relcache_get(relations[i]));
			bool		seen = false;

			if (!e->selected)
				continue;
			/* partitions=root: the root, once, for all its partitions */
			for (uint32 j = 0; j < n && !seen; j++)
				seen = entries[j] == e;
			if (seen)
				continue;
			if (e->is_root)
				rp_truncate_check_root(e, nrelations, relations);
			entries[n] = e;
			relids[n++] = e->relid;
		}
	if (n > 0)
	{
		xid = rp_open_transaction(ctx, st, change->txn->xid);
		/* every relation is described before the record that names it */
		for (uint32 i = 0; i < n; i++)
			rp_output_relation(ctx, st, entries[i]);
		if (change->data.truncate.cascade)
			flags |= RP_TRUNCATE_CASCADE;
		if (change->data.truncate.restart_seqs)
			flags |= RP_TRUNCATE_RESTART_SEQS;
		rp_enc_truncate(rp_output_buf(st), flags, xid, n, relids);
		rp_output_record_done(ctx, st);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

static void
rp_message(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr message_lsn,
		   bool transactional, const char *prefix, Size message_size, const char *message)
{
	RpState    *st = rp_state(ctx);
	uint32		xid = 0;

	if (!rp_options_prefix_selected(&st->opts, prefix))
		return;
	if (transactional)
		xid = rp_open_transaction(ctx, st, txn->xid);
	rp_enc_message(rp_output_buf(st), transactional, xid, message_lsn, prefix, message,
				   message_size);
	rp_output_record_done(ctx, st);
	/* a non-transactional message stands alone: send it now */
	if (!transactional)
		rp_output_flush(ctx, st);
}

static bool
rp_filter_by_origin(LogicalDecodingContext *ctx, RepOriginId origin_id)
{
	return rp_state(ctx)->opts.origin_none && origin_id != InvalidRepOriginId;
}

/* ---- shutdown ---------------------------------------------------------- */

static void
rp_shutdown(LogicalDecodingContext *ctx)
{
	RpState    *st = rp_state(ctx);

	/* everything lives in ctx->context children; the caches notice its end */
	if (st)
		MemoryContextDelete(st->cxt);
	ctx->output_plugin_private = NULL;
}
