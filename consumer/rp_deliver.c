/*
 * rp_deliver.c
 *    Batches, cursors, schema diffs and checkpoint advance (see rp_deliver.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rp_deliver.h"
#include "rp_status.h"

/* ---- the persisted view of relations ---------------------------------- */

static int
rp_view_load(RpDelivery *dl)
{
	int			fd = open(dl->view_path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	RpRecord	rec;
	int			rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : rp_fail(RP_HALT_NONE, "could not open \"%s\": %s",
											 dl->view_path, strerror(errno));
	if (fstat(fd, &sb) != 0)
	{
		close(fd);
		return rp_fail(RP_HALT_NONE, "could not stat \"%s\": %s", dl->view_path, strerror(errno));
	}
	rp_buf_reset(&dl->view);
	rp_buf_reserve(&dl->view, (size_t) sb.st_size);
	if (read(fd, dl->view.data, (size_t) sb.st_size) != sb.st_size)
	{
		close(fd);
		return rp_fail(RP_HALT_NONE, "could not read \"%s\"", dl->view_path);
	}
	close(fd);
	dl->view.len = (size_t) sb.st_size;
	rp_decoder_records(&dl->dec, dl->view.data, dl->view.len);
	while ((rc = rp_decoder_next(&dl->dec, &rec)) > 0)
	{
		/* relation records only: rp_view_put() reads each one's relid */
		if (rec.tag != RP_TAG_RELATION)
			return rp_fail(RP_HALT_MALFORMED, "relation view \"%s\" holds a %s record",
						   dl->view_path, rp_tag_name(rec.tag));
		rp_relation_free(rec.u.relation.previous);
	}
	if (rc < 0)
		return rp_fail(RP_HALT_MALFORMED, "relation view \"%s\" is damaged: %s", dl->view_path,
					   dl->dec.error);
	return 0;
}

/* Rewrite the view from the decoder's relations (temp, fsync, rename). */
static int
rp_view_save(RpDelivery *dl)
{
	char		tmp[4096];
	int			fd;
	ssize_t		w;

	if (!dl->view_dirty || dl->view_path == NULL)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", dl->view_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return rp_fail(RP_HALT_NONE, "could not create \"%s\": %s", tmp, strerror(errno));
	w = write(fd, dl->view.data, dl->view.len);
	if (w != (ssize_t) dl->view.len || fsync(fd) != 0)
	{
		close(fd);
		return rp_fail(RP_HALT_NONE, "could not write \"%s\"", tmp);
	}
	close(fd);
	if (rename(tmp, dl->view_path) != 0)
		return rp_fail(RP_HALT_NONE, "could not rename \"%s\": %s", tmp, strerror(errno));
	dl->view_dirty = false;
	return 0;
}

/* Replace relid's record in the view buffer with raw. */
static void
rp_view_put(RpDelivery *dl, uint32_t relid, const unsigned char *raw, size_t len)
{
	RpBuf		next;
	size_t		pos = 0;

	rp_buf_init(&next, dl->view.len + len);
	while (pos + RP_RECORD_HEADER_LEN <= dl->view.len)
	{
		const unsigned char *p = (const unsigned char *) dl->view.data + pos;
		size_t		rlen = RP_RECORD_HEADER_LEN + rp_load_u32(p + 1);

		if (rp_load_u32(p + RP_RECORD_HEADER_LEN) != relid)
			rp_buf_put_bytes(&next, p, rlen);
		pos += rlen;
	}
	rp_buf_put_bytes(&next, raw, len);
	rp_buf_free(&dl->view);
	dl->view = next;
	dl->view_dirty = true;
}

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
	if (dl->limits.max_txns < 1)
		dl->limits.max_txns = 1;
	dl->batch = rp_malloc0(sizeof(RpTxn *) * (size_t) dl->limits.max_txns);
	rp_decoder_init(&dl->dec);
	rp_buf_init(&dl->view, 1024);
	return view_path ? rp_view_load(dl) : 0;
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

/* ---- schema diff ----------------------------------------------------------- */

static const RpColumn *
rp_col_by_attnum(const RpRelation *rel, int16_t attnum)
{
	for (uint16_t i = 0; i < rel->natts; i++)
		if (rel->cols[i].attnum == attnum)
			return &rel->cols[i];
	return NULL;
}

RpSchemaChange
rp_schema_diff(const RpRelation *before, const RpRelation *after, char *what, size_t whatlen)
{
	const uint8_t keyflags = RP_COL_PRIMARY_KEY | RP_COL_IDENTITY;
	bool		added = false;

	what[0] = '\0';
	if (before == NULL)
		return RP_SCHEMA_NEW;
	if (strcmp(before->schema, after->schema) != 0 || strcmp(before->name, after->name) != 0)
	{
		snprintf(what, whatlen, "table renamed to \"%s\".\"%s\"", after->schema, after->name);
		return RP_SCHEMA_DESTRUCTIVE;
	}
	if (before->identity != after->identity)
	{
		snprintf(what, whatlen, "replica identity changed");
		return RP_SCHEMA_DESTRUCTIVE;
	}
	for (uint16_t i = 0; i < before->natts; i++)
	{
		const RpColumn *b = &before->cols[i];
		const RpColumn *a = rp_col_by_attnum(after, b->attnum);

		if (a == NULL)
		{
			snprintf(what, whatlen, "column \"%s\" dropped", b->name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if (strcmp(a->name, b->name) != 0)
		{
			snprintf(what, whatlen, "column \"%s\" renamed to \"%s\"", b->name, a->name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if (a->type_oid != b->type_oid || a->typmod != b->typmod)
		{
			snprintf(what, whatlen, "column \"%s\" changed type from %s to %s", b->name,
					 b->type_name, a->type_name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if ((a->flags & keyflags) != (b->flags & keyflags))
		{
			snprintf(what, whatlen, "key or identity of column \"%s\" changed", b->name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
	}
	for (uint16_t i = 0; i < after->natts; i++)
		if (rp_col_by_attnum(before, after->cols[i].attnum) == NULL)
		{
			if (!added)
				snprintf(what, whatlen, "column \"%s\" added", after->cols[i].name);
			added = true;
		}
	return added ? RP_SCHEMA_ADDITIVE : RP_SCHEMA_SAME;
}

/* ---- cursors -------------------------------------------------------------- */

int
rp_cursor_open(RpCursor *c, RpDelivery *dl, RpTxn *txn)
{
	c->dl = dl;
	c->txn = txn;
	return rp_store_iter_start(&c->it, &txn->store);
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
		{
			rp_view_put(dl, after->relid, raw, len);
			if (change != RP_SCHEMA_NEW)
				dl->schema_changes++;
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

/* ---- delivery ----------------------------------------------------------------- */

static int
rp_deliver_persist(RpDelivery *dl, const RpCheckpoint *ck)
{
	if (dl->ckpt_path && !dl->sink->owns_checkpoint && rp_ckpt_write(dl->ckpt_path, ck) < 0)
		return -1;
	dl->ck = *ck;
	return rp_view_save(dl);
}

static void
rp_ck_for(const RpDelivery *dl, const RpTxn *t, RpCheckpoint *ck)
{
	*ck = dl->ck;
	ck->commit_lsn = t->commit_lsn;
	if (t->end_lsn > ck->end_lsn)
		ck->end_lsn = t->end_lsn;
}

/*
 * The first k transactions of the batch are done (durable in the sink or
 * behind the checkpoint file): count them, free them, keep the rest.
 */
static void
rp_deliver_done(RpDelivery *dl, int k)
{
	for (int i = 0; i < k; i++)
	{
		dl->changes += dl->batch[i]->nchanges;
		rp_txn_free(dl->batch[i]);
		dl->batch[i] = NULL;
	}
	dl->txns += (uint64_t) k;
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
	RpSink	   *s = dl->sink;
	RpCheckpoint ck;
	int			n = dl->nbatch;
	int			done = 0;		/* transactions the sink's own checkpoint covers */
	int			i;

	if (n == 0)
		return 0;
	if (!force && n < dl->limits.max_txns && dl->batch_bytes < dl->limits.max_bytes &&
		now_ms - dl->batch_started_ms < dl->limits.max_ms)
		return 0;

	rp_ck_for(dl, dl->batch[n - 1], &ck);
	if (s->handle_batch && (n > 1 || s->handle_transaction == NULL))
	{
		if (s->handle_batch(s, dl, dl->batch, n, &ck) < 0)
			return -1;
		if (rp_deliver_persist(dl, &ck) < 0)
		{
			if (s->owns_checkpoint)
				rp_deliver_done(dl, n);
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
			 * A sink that owns its checkpoint already holds the first ones:
			 * a retry must not hand them over again (G1).  Library-owned,
			 * the whole batch is delivered again (at-least-once).
			 */
			rp_deliver_done(dl, done);
			return -1;
		}
	}
	rp_deliver_done(dl, n);
	dl->batches++;
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

int
rp_deliver_item(RpDelivery *dl, RpItem *item, int64_t now_ms)
{
	int			rc = 0;

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
	if (rp_deliver_flush(dl, true, now_ms) < 0)
		rc = -1;
	else
	{
		RpCheckpoint ck = dl->ck;

		if (item->msg.lsn > ck.end_lsn)
			ck.end_lsn = item->msg.lsn;
		if (dl->sink->handle_message &&
			dl->sink->handle_message(dl->sink, &item->msg, &ck) < 0)
			rc = -1;
		else
		{
			dl->messages++;
			rc = rp_deliver_persist(dl, &ck);
		}
	}
	rp_item_free(item);
	return rc;
}

int
rp_deliver_advance(RpDelivery *dl, uint64_t lsn)
{
	RpCheckpoint ck = dl->ck;

	/*
	 * An append log's position moves with its data, or (a sink that keeps its
	 * own checkpoint, like the file sink) by recording the position itself;
	 * a log whose checkpoint is the library's file never moves when idle.
	 */
	if ((dl->sink->kind == RP_SINK_APPEND_LOG && dl->sink->advance == NULL) ||
		dl->nbatch > 0 || lsn <= dl->ck.end_lsn)
		return 0;
	ck.end_lsn = lsn;
	if (dl->sink->owns_checkpoint)
	{
		if (dl->sink->advance == NULL)
			return 0;
		if (dl->sink->advance(dl->sink, &ck) < 0)
			return -1;
		dl->ck = ck;
		return 0;
	}
	return rp_deliver_persist(dl, &ck);
}
