/*
 * rp_mirror.c
 *    The PostgreSQL mirror sink's face: its RpSink callbacks.  Each batch
 *    of source transactions is applied in one destination transaction that
 *    commits with the checkpoint (rp_mirror_session.c); logical messages
 *    are routed by prefix; a stop cancels the destination query in progress.
 *
 * The package, top down (calls point one way, no cycles):
 *   rp_mirror.c            the callbacks (this file)
 *   rp_mirror_snapshot.c   the initial snapshot's callbacks
 *   rp_mirror_schema.c     schema changes of mapped tables
 *   rp_mirror_change.c     row changes and TRUNCATE, into the effect map
 *   rp_mirror_backfill.c   backfill windows and chunks
 *   rp_mirror_apply.c      apply of the pending effects, each table by its size
 *   rp_mirror_pipeline.c   small sets: prepared statements in one pipeline
 *   rp_mirror_history.c    history tables
 *   rp_mirror_history_copy.c  snapshot and backfill rows merged as versions
 *   rp_mirror_stage.c      staging tables and COPY
 *   rp_mirror_effect.c     the net-effect map and its memory bound
 *   rp_mirror_table.c      table mapping, checks and creation
 *   rp_mirror_sql.c        SQL builders
 *   rp_mirror_session.c    sessions, statements, bookkeeping, checkpoint, lock
 *   rp_mirror_divergence.c divergences, counted per sink
 *
 * Errors are reported by SQLSTATE and the names of the mapped table, its
 * columns and constraints; the server's message text, DETAIL, CONTEXT and
 * any name it reports that is not one of those are dropped because they
 * can carry row values (G4).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_counter.h"
#include "base/rp_ckpt.h"
#include "stream/rp_deliver.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"


/*
 * A stop: cancel the destination query in progress (a lock wait, a slow
 * batch), so the delivery thread's step ends; its transaction rolls back
 * and nothing it held is confirmed.  An idle session ignores it.
 */
static void
rp_mirror_interrupt(RpSink *s)
{
	RpMirror   *pg = s->priv;
	char		errbuf[256];

	pthread_mutex_lock(&pg->cancel_lock);
	if (pg->cancel)
		(void) PQcancel(pg->cancel, errbuf, sizeof(errbuf));
	pthread_mutex_unlock(&pg->cancel_lock);
}

int
rp_mirror_bound_flushes_get(const void *sink, uint64_t *count)
{
	const RpSink *s = sink;

	if (s == NULL || s->name == NULL || strcmp(s->name, RP_MIRROR_SINK_NAME) != 0)
		return 0;
	*count = RP_COUNT_LOAD(((RpMirror *) s->priv)->bound_flushes);
	return 1;
}

static int
rp_mirror_checkpoint(RpSink *s, RpCheckpoint *ck)
{
	return rp_mirror_read_checkpoint(s->priv, ck);
}

/* The destination transaction commits with the checkpoint ck. */
static int
rp_mirror_commit(RpMirror *pg, const RpCheckpoint *ck)
{
	if (rp_mirror_session_commit(pg, ck) < 0)
		return -1;
	for (int i = 0; i < pg->ntables; i++)
	{
		pg->tables[i]->txn_dirty = false;	/* what it made is there to stay */
		pg->tables[i]->stage_used = 0;	/* the commit emptied its staging */
	}

	/*
	 * ---- backfill (rp_mirror_backfill.c): a chunk applied in it is stored
	 * ----
	 */
	rp_mirror_backfill_committed(pg);
	pg->ck = *ck;
	pg->have_ck = true;
	return 0;
}

static void
rp_mirror_abort(RpMirror *pg)
{
	if (pg->in_txn && pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
	{
		PGresult   *res = PQexec(pg->conn, "ROLLBACK");

		PQclear(res);
	}
	pg->in_txn = false;
	pg->early = false;

	/*
	 * ---- backfill (rp_mirror_backfill.c): a chunk applied in it is not
	 * stored ----
	 */
	rp_mirror_backfill_aborted(pg);
	/* pending effects belong to the aborted transaction */
	for (int i = 0; i < pg->ntables; i++)
	{
		RpMirrorTable *t = pg->tables[i];

		/* so do staging tables it created, and tables it created or altered */
		rp_mirror_table_forget(pg, t);
		t->text_datums = false;
		t->stage_used = 0;		/* what was staged is rolled back */
	}
	rp_mirror_untouch_all(pg);
	rp_mirror_effects_release(pg);
}

/*
 * Logical messages are routed by prefix, fail-closed: ignored prefixes have
 * no effect, routed ones are stored in replicant.messages inside the
 * current destination transaction, and any other prefix halts.
 */
static int
rp_mirror_route_message(RpMirror *pg, bool transactional, uint64_t lsn, const char *prefix,
						size_t prefix_len, const unsigned char *content, uint32_t content_len)
{
	char	   *pfx = rp_strndup(prefix, prefix_len);
	char		sysid[24],
				lsnbuf[24],
				commit[24];
	const char *vals[7];
	int			lens[7] = {0, 0, 0, 0, 0, 0, (int) content_len};
	int			fmts[7] = {0, 0, 0, 0, 0, 0, 1};	/* content as raw bytes */
	bool		routed = false;
	PGresult   *res;
	int			rc = 0;

	/*
	 * ---- backfill watermarks (rp_mirror_backfill.c): never routed, never a
	 * halt ----
	 */
	if ((rc = rp_mirror_backfill_message(pg, transactional, prefix, prefix_len, content, content_len)) != 0)
	{
		rp_free(pfx);
		return rc < 0 ? -1 : 0;
	}
	for (int i = 0; i < pg->opts.nignore; i++)
		if (strcmp(pg->opts.ignore_prefixes[i], pfx) == 0)
		{
			rp_free(pfx);
			return 0;
		}
	for (int i = 0; i < pg->opts.nroute; i++)
		routed |= strcmp(pg->opts.route_prefixes[i], pfx) == 0;
	if (!routed)
	{
		rc = rp_fail(RP_HALT_SINK, "logical message with prefix \"%s\" is neither routed nor ignored (see --message-route and --message-ignore)",
					 pfx);
		rp_free(pfx);
		return rc;
	}
	snprintf(sysid, sizeof(sysid), "%" PRIu64, pg->ck.system_id);
	rp_lsn_format(lsn, lsnbuf);
	rp_lsn_format(pg->cur_commit_lsn, commit);
	vals[0] = sysid;
	vals[1] = pg->ck.slot;
	vals[2] = lsnbuf;
	vals[3] = transactional ? "t" : "f";
	vals[4] = transactional ? commit : NULL;
	vals[5] = pfx;
	vals[6] = (const char *) content;
	res = PQexecParams(pg->conn,
					   rp_mirror_bk(pg, "INSERT INTO @bk.messages (system_id, slot, lsn, transactional, commit_lsn, prefix, content)"
									" VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING"),
					   7, NULL, vals, lens, fmts, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = rp_mirror_fail_result(pg, res, "routing a logical message", NULL);
	PQclear(res);
	rp_free(pfx);
	return rc;
}

static int
rp_mirror_apply_txn(RpMirror *pg, RpDelivery *dl, RpTxn *txn, uint64_t skip_bytes)
{
	RpCursor	c;
	RpRecord	rec;
	int			rc;

	pg->cur_commit_lsn = txn->commit_lsn;
	pg->cur_commit_time = txn->commit_time;
	if (rp_cursor_open_at(&c, dl, txn, skip_bytes) < 0)
		return -1;
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		switch (rec.tag)
		{
			case RP_TAG_INSERT:
			case RP_TAG_UPDATE:
			case RP_TAG_DELETE:
				rc = rp_mirror_apply_change(pg, &rec);
				break;
			case RP_TAG_TRUNCATE:
				rp_mirror_backfill_truncate(pg, &rec);	/* ---- backfill window
														 * ---- */
				rc = rp_mirror_apply_truncate(pg, &rec, &dl->dec.rels);
				break;
			case RP_TAG_MESSAGE:
				rc = rp_mirror_route_message(pg, true, rec.u.message.lsn, rec.u.message.prefix,
											 rec.u.message.prefix_len, rec.u.message.content,
											 rec.u.message.content_len);
				break;
			default:
				rc = 0;
		}
		if (rc < 0)
			break;
	}
	rp_cursor_close(&c);
	if (rc < 0)
		return -1;
	return rp_mirror_apply_end_txn(pg);
}

static int
rp_mirror_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	RpMirror   *pg = s->priv;
	const RpSinkBatchHook *hook = pg->batch_hook.before_commit ? &pg->batch_hook : NULL;
	uint64_t	done = 0;

	pg->ck = *ck;
	if (rp_mirror_begin(pg, ck, &done) < 0)
		goto fail;
	for (int i = 0; i < n; i++)
	{
		/*
		 * already in the destination (a replay, or another consumer): no
		 * effect
		 */
		if (txns[i]->commit_lsn <= done)
			continue;

		/*
		 * ---- the batch hook (live aggregates): --aggregates-only mirrors no
		 * table ----
		 */
		if (hook && hook->skip_rows)
			continue;
		if (rp_mirror_apply_txn(pg, dl, txns[i], 0) < 0)
			goto fail;
	}
	if (rp_mirror_apply_flush(pg) < 0)
		goto fail;

	/*
	 * ---- the batch hook (live aggregates): cells written before the
	 * checkpoint ----
	 */
	if (hook && hook->before_commit(hook->arg, pg->conn, dl, txns, n, done) < 0)
		goto fail;
	if (rp_mirror_commit(pg, ck) < 0)
		goto fail;
	/* ---- the batch hook: edit streams get their lines once committed ---- */
	if (hook && hook->after_commit && hook->after_commit(hook->arg) < 0)
		return -1;
	return 0;

fail:
	rp_mirror_abort(pg);
	return -1;
}

/*
 * Early apply (RpSink.handle_chunk): a large streamed transaction's blocks
 * are applied as they arrive, inside one destination transaction that
 * stays open until its commit, so the destination works while the server
 * still decodes the rest.  Only row changes of tables kept as state go
 * this way: a TRUNCATE, a message or a history table needs the commit LSN,
 * and declines (the transaction then comes whole at its commit).
 */
static int
rp_mirror_chunk(RpSink *s, RpDelivery *dl, RpTxn *chunk)
{
	RpMirror   *pg = s->priv;
	RpCursor	c;
	RpRecord	rec;
	int			rc;

	/*
	 * ---- backfill: inside a window only committed transactions may count
	 * ----
	 */
	if (!pg->early && rp_mirror_backfill_window_open(pg))
		return 1;
	if (!pg->early)
	{
		if (pg->in_txn)
			rp_mirror_abort(pg);
		pg->ck = dl->ck;
		if (rp_mirror_begin(pg, &dl->ck, &pg->early_done) < 0)
			goto fail;
		pg->early = true;
	}
	pg->cur_commit_lsn = 0;
	pg->cur_commit_time = 0;
	if (rp_cursor_open(&c, dl, chunk) < 0)
		goto fail;
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		if ((rec.tag != RP_TAG_INSERT && rec.tag != RP_TAG_UPDATE && rec.tag != RP_TAG_DELETE) ||
			rp_mirror_table_get(pg, rec.u.change.rel)->history)
		{
			rc = 1;
			break;
		}
		if (rp_mirror_apply_change(pg, &rec) < 0)
		{
			rc = -1;
			break;
		}
	}
	rp_cursor_close(&c);
	if (rc < 0)
		goto fail;
	if (rc > 0)
		return 1;				/* the caller drops what is open */
	if (rp_mirror_apply_flush(pg) < 0)
		goto fail;
	return 0;

fail:
	rp_mirror_abort(pg);
	return -1;
}

static void
rp_mirror_drop_chunks(RpSink *s)
{
	rp_mirror_abort(s->priv);
}

static int
rp_mirror_chunked_commit(RpSink *s, RpDelivery *dl, RpTxn *txn, uint64_t skip_bytes,
						 const RpCheckpoint *ck)
{
	RpMirror   *pg = s->priv;

	if (!pg->early)
		return rp_fail(RP_HALT_PROTOCOL, "commit of xid %u, whose chunks the destination does not hold",
					   txn->xid);
	/* already in the destination (a replay): the chunks go, no effect */
	if (txn->commit_lsn <= pg->early_done)
	{
		rp_mirror_abort(pg);
		return 0;
	}
	pg->ck = *ck;
	if (rp_mirror_apply_txn(pg, dl, txn, skip_bytes) < 0 ||
		rp_mirror_apply_flush(pg) < 0 || rp_mirror_commit(pg, ck) < 0)
	{
		rp_mirror_abort(pg);
		return -1;
	}
	pg->early = false;
	return 0;
}

static int
rp_mirror_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	return rp_mirror_batch(s, dl, &txn, 1, ck);
}

static int
rp_mirror_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpMirror   *pg = s->priv;
	uint64_t	done = 0;

	pg->ck = *ck;
	pg->cur_commit_lsn = 0;
	if (rp_mirror_begin(pg, ck, &done) < 0 ||
		rp_mirror_route_message(pg, false, msg->lsn, msg->prefix, strlen(msg->prefix), msg->content,
								msg->content_len) < 0 ||
		rp_mirror_commit(pg, ck) < 0)
	{
		rp_mirror_abort(pg);
		return -1;
	}
	return 0;
}

static int
rp_mirror_schema_change(RpSink *s, const RpRelation *before, const RpRelation *after,
						RpSchemaChange change)
{
	return rp_mirror_table_schema_change(s->priv, before, after, change);
}

static int
rp_mirror_advance(RpSink *s, const RpCheckpoint *ck)
{
	RpMirror   *pg = s->priv;
	uint64_t	done;

	if (rp_mirror_begin(pg, ck, &done) < 0 || rp_mirror_commit(pg, ck) < 0)
	{
		rp_mirror_abort(pg);
		return -1;
	}
	return 0;
}

static void
rp_mirror_close(RpSink *s)
{
	RpMirror   *pg = s->priv;

	rp_mirror_abort(pg);		/* gives the effect maps' memory back too */
	rp_mirror_snapshot_free(pg);
	rp_mirror_backfill_free(pg);
	if (pg->conn)
		PQfinish(pg->conn);
	pg->conn = NULL;
	rp_mirror_set_cancel(pg);
	pthread_mutex_destroy(&pg->cancel_lock);
	for (int i = 0; i < pg->ntables; i++)
		rp_mirror_table_free(pg, pg->tables[i]);
	if (pg->tables)
		rp_free(pg->tables);
	if (pg->tabidx)
		rp_free(pg->tabidx);
	if (pg->touched)
		rp_free(pg->touched);
	for (int i = 0; i < pg->nstale; i++)
		rp_free(pg->stale[i]);
	if (pg->stale)
		rp_free(pg->stale);
	rp_buf_free(&pg->scratch);
	for (int i = 0; i < pg->nbk; i++)
		rp_free(pg->bk_sql[i]);
	if (pg->bk_sql)
	{
		rp_free(pg->bk_sql);
		rp_free(pg->bk_tmpl);
	}
	rp_free(pg->bk);
	pthread_mutex_destroy(&pg->bk_lock);
	for (int i = 0; i < pg->div.n; i++)
		rp_free(pg->div.table[i]);
	pthread_mutex_destroy(&pg->div.lock);
	rp_free(pg);
	rp_free(s);
}

RpSink	   *
rp_mirror_open(const RpMirrorOptions *opts, const RpSinkEnv *env)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpMirror   *pg = rp_malloc0(sizeof(RpMirror));

	pg->opts = *opts;
	if (env)
	{
		pg->backfill = env->backfill;
		pg->batch_hook = env->batch_hook;
	}
	pthread_mutex_init(&pg->cancel_lock, NULL);
	pthread_mutex_init(&pg->bk_lock, NULL);
	pthread_mutex_init(&pg->div.lock, NULL);
	if (pg->opts.bookkeeping_schema == NULL)
		pg->opts.bookkeeping_schema = RP_MIRROR_DEFAULT_BOOKKEEPING;
	pg->bk = rp_sql_ident_dup(pg->opts.bookkeeping_schema);
	pg->sink = s;
	rp_buf_init(&pg->scratch, 4096);
	s->name = RP_MIRROR_SINK_NAME;
	s->metrics = rp_mirror_metrics;
	s->owns_checkpoint = true;
	s->priv = pg;
	s->checkpoint = rp_mirror_checkpoint;
	s->handle_transaction = rp_mirror_txn;
	s->handle_batch = rp_mirror_batch;
	s->handle_message = rp_mirror_message;
	s->handle_schema_change = rp_mirror_schema_change;
	s->advance = rp_mirror_advance;
	s->handle_chunk = rp_mirror_chunk;
	s->drop_chunks = rp_mirror_drop_chunks;
	s->handle_chunked_commit = rp_mirror_chunked_commit;
	s->close = rp_mirror_close;
	s->interrupt = rp_mirror_interrupt;
	rp_mirror_snapshot_install(s);
	rp_mirror_backfill_init(pg);
	if (rp_mirror_connect(pg) < 0)
	{
		rp_mirror_close(s);
		return NULL;
	}
	return s;
}
