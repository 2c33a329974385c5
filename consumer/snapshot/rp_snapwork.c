/*
 * rp_snapwork.c
 *    The initial snapshot's copy workers (see rp_snapwork.h): each owns one
 *    source session holding the exported snapshot and copies whole tables,
 *    one binary COPY per table in primary-key order, cut into chunks that
 *    a helper thread hands to the sink while the next chunk is read.
 *
 * libpq connections are never shared; the sink is called under the run's
 * lock unless it says it is parallel.  Errors are value-free: a worker's
 * failure names the table and SQLSTATE, is copied into the run, and stops
 * the others at their next chunk.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_encode.h"
#include "base/rp_counter.h"
#include "base/rp_sql.h"
#include "snapshot/rp_copybin.h"
#include "snapshot/rp_snaphandoff.h"
#include "snapshot/rp_snapsql.h"
#include "snapshot/rp_snapwork.h"

/*
 * " FROM ONLY schema.table AS rp_t [WHERE ...]" of a heap-order copy: the
 * whole table, or when resuming, the rows after the stored tuple id plus
 * every row version created at or after the stored horizon (an xid: those
 * may have moved below the position since the stored rows were copied; a
 * version older than the horizon was visible then and has not moved).
 * The xmin test is modulo 2^32, exact while the horizon is within 2^31
 * xids of now (rp_snap_heap_start checks); an old frozen xmin may test
 * true, which only copies that row again.  No row value is in the text.
 */
static void
rp_snap_sql_heap(RpBuf *sql, PGconn *conn, const RpSnapJob *job)
{
	char		w[256];

	rp_snap_sql_from(sql, conn, job->t);
	if (!job->have_tok || !job->tok.have_pos)
		return;
	snprintf(w, sizeof(w), " WHERE rp_t.ctid > '(%" PRIu32 ",%u)'::pg_catalog.tid"
			 " OR (rp_t.xmin::pg_catalog.text::pg_catalog.int8 - %" PRIu64 " + 4294967296)"
			 " %% 4294967296 < 2147483648",
			 job->tok.blk, (unsigned) job->tok.off, job->tok.horizon & UINT64_C(0xFFFFFFFF));
	rp_buf_put_text(sql, w);
}

/* The COPY statement of a table's (remaining) rows; raw: sink format. */
static void
rp_snap_copy_sql(RpBuf *sql, PGconn *conn, const RpSnapJob *job, bool raw)
{
	const RpSnapTable *t = job->t;
	const RpRelation *rel = t->rel;
	bool		first = true;

	rp_buf_put_text(sql, "COPY (SELECT ");
	for (int i = 0; i < rel->natts; i++)
	{
		if (raw && (rel->cols[i].flags & RP_COL_GENERATED))
			continue;
		if (!first)
			rp_buf_put_text(sql, ", ");
		first = false;
		rp_sql_ident(sql, rel->cols[i].name);
		/* the plugin sends these as their text output: so do we */
		if (!raw && rel->cols[i].encoding == RP_ENC_TEXT)
			rp_buf_put_text(sql, "::pg_catalog.text");
	}
	if (job->heap)
	{
		rp_buf_put_text(sql, first ? "rp_t.ctid" : ", rp_t.ctid");
		rp_snap_sql_heap(sql, conn, job);
		rp_buf_put_text(sql, ") TO STDOUT (FORMAT binary)");
		rp_buf_put_char(sql, '\0');
		return;
	}
	for (int k = 0; k < t->nkey; k++)
	{
		rp_buf_put_text(sql, first ? "" : ", ");
		first = false;
		rp_sql_ident(sql, rel->cols[t->keycols[k]].name);
		rp_buf_put_text(sql, "::pg_catalog.text");
	}
	if (first)
		rp_buf_put_text(sql, "NULL");
	rp_snap_sql_after(sql, conn, t, "replicant_snap",
					  t->nkey > 0 && job->have_tok && job->tok.nkeys == t->nkey);
	rp_buf_put_text(sql, ") TO STDOUT (FORMAT binary)");
	rp_buf_put_char(sql, '\0');
}

typedef struct RpSnapChunk
{
	RpBuf		data;			/* frame or raw tuples */
	RpBuf		lastkey;		/* the last row's key texts, NUL-separated */
	uint64_t	lastpos;		/* heap order: the last row's tuple id, block
								 * << 16 | offset */
	uint64_t	rows;
	size_t		head_len;		/* frame: header + Relation record */
} RpSnapChunk;

/*
 * The progress token stored with chunk ch (rp_snaptoken.h): how far the
 * table's copy is once ch is stored, by heap position or by the last key.
 * tok borrows ch's keys; the text returned is the caller's (rp_free).
 */
static char *
rp_snap_chunk_token(const RpSnapRun *run, const RpSnapJob *job, const RpSnapChunk *ch, bool last,
					RpSnapToken *tok)
{
	memset(tok, 0, sizeof(*tok));
	tok->lsn = run->lsn;
	tok->done = last;
	tok->rows = job->tok.rows + ch->rows;
	tok->at_ms = job->at_ms;
	snprintf(tok->snapshot_id, sizeof(tok->snapshot_id), "%s", job->snapshot_id);
	if (job->heap)
	{
		tok->heap = true;
		tok->filenode = job->tok.filenode;
		tok->horizon = job->tok.horizon;
		tok->have_pos = ch->rows > 0 || job->tok.have_pos;
		tok->blk = ch->rows > 0 ? (uint32_t) (ch->lastpos >> 16) : job->tok.blk;
		tok->off = ch->rows > 0 ? (uint16_t) (ch->lastpos & 0xFFFF) : job->tok.off;
	}
	else if (ch->rows > 0)
	{
		const char *p = ch->lastkey.data;

		for (int k = 0; k < job->t->nkey; k++)
		{
			tok->keys[tok->nkeys++] = (char *) p;
			p += strlen(p) + 1;
		}
	}
	else
	{
		/* nothing new: the key where the last chunk stopped */
		for (int k = 0; k < job->tok.nkeys; k++)
			tok->keys[tok->nkeys++] = job->tok.keys[k];
	}
	return rp_snaptoken_format(tok);
}

/*
 * Chunk ch is stored: the job's token moves on to where it ended (tok),
 * the run counts it, the SNAPSHOT_CHUNK event goes out, and ch is emptied
 * for the next rows.
 */
static void
rp_snap_chunk_stored(RpSnapRun *run, RpSnapJob *job, RpSnapChunk *ch, const RpSnapToken *tok)
{
	/* the next chunk continues from here */
	job->tok.rows += ch->rows;
	if (job->heap && ch->rows > 0)
	{
		job->tok.have_pos = true;
		job->tok.blk = tok->blk;
		job->tok.off = tok->off;
	}
	else if (ch->rows > 0)
	{
		const char *p = ch->lastkey.data;

		rp_snaptoken_free(&job->tok);
		for (int k = 0; k < job->t->nkey; k++)
		{
			job->tok.keys[job->tok.nkeys++] = rp_strndup(p, strlen(p));
			p += strlen(p) + 1;
		}
	}
	RP_COUNT_ADD(run->stats->rows, ch->rows);
	RP_COUNT_ADD(run->stats->chunks, 1);
	{
		RpEvent		ev;

		rp_event_init(&ev, RP_EVENT_SNAPSHOT_CHUNK);
		ev.slot = run->opts->slot;
		ev.schema = job->t->rel->schema;
		ev.relation = job->t->rel->name;
		ev.changes = ch->rows;
		ev.bytes = ch->data.len - ch->head_len;
		ev.lsn = run->lsn;
		rp_event_emit(&run->opts->events, &ev);
	}
	ch->rows = 0;
	ch->data.len = ch->head_len;
}

/*
 * Hand chunk ch of job's table to the sink, with the progress token that
 * says where the copy stands once it is stored (first: the first chunk of
 * this run's copy of the table; last: the table is done after it).
 */
static int
rp_snap_deliver(RpSnapWorker *w, RpSnapJob *job, RpSnapChunk *ch, bool raw, bool first, bool last,
				bool resumed)
{
	RpSnapRun  *run = w->run;
	RpSnapToken tok;
	RpSnapshotCtx ctx;
	char	   *token;
	int			rc;

	token = rp_snap_chunk_token(run, job, ch, last, &tok);

	memset(&ctx, 0, sizeof(ctx));
	ctx.rel = job->t->rel;
	ctx.snapshot_lsn = run->lsn;
	ctx.first_chunk = first && !job->have_tok;
	ctx.resumed = first && job->have_tok;
	ctx.last_chunk = last;
	ctx.progress_token = token;
	ctx.worker = w->id;
	ctx.origin = &run->origin;
	ctx.oversize = &job->oversize;
	ctx.dropped = &run->stats->dlq_dropped;
	ctx.snapshot_id = job->snapshot_id;
	ctx.snapshot_at_ms = job->at_ms;
	ctx.total = job->t->estimate;
	ctx.first_seq = job->tok.rows;
	ctx.nrows = ch->rows;
	ctx.may_repeat = job->heap && job->have_tok;	/* resumed: rows may be
													 * stored */
	if (raw)
	{
		ctx.copy_data = (const unsigned char *) ch->data.data;
		ctx.copy_len = ch->data.len;
	}
	else
	{
		ctx.frame = (const unsigned char *) ch->data.data;
		ctx.frame_len = ch->data.len;
	}
	if (!run->sink->snapshot_parallel)
		pthread_mutex_lock(&run->lock);
	rc = run->sink->handle_snapshot(run->sink, NULL, &ctx);
	if (!run->sink->snapshot_parallel)
		pthread_mutex_unlock(&run->lock);
	rp_free(token);
	if (rc < 0)
		return -1;

	rp_snap_chunk_stored(run, job, ch, &tok);
	return 0;
}

/* One row of the COPY stream into the chunk. */
static int
rp_snap_row(RpSnapChunk *ch, const RpSnapJob *job, bool raw, int ncopy,
			const unsigned char *row, const unsigned char **data, const int32_t *len,
			int nfields)
{
	const RpSnapTable *t = job->t;
	const RpRelation *rel = t->rel;
	int			nextra = job->heap ? 1 : t->nkey;

	if (nfields != ncopy + nextra)
		return rp_fail(RP_HALT_MALFORMED, "snapshot: table \"%s\".\"%s\": COPY row has %d fields, expected %d",
					   rel->schema, rel->name, nfields, ncopy + nextra);
	if (job->heap)
	{
		/*
		 * The tuple id (block u32, offset u16).  The position a token stores
		 * is only meaningful if the scan is in physical order, so that is
		 * checked, not assumed.
		 */
		const unsigned char *d = data[ncopy];
		uint64_t	pos;

		if (len[ncopy] != 6)
			return rp_fail(RP_HALT_MALFORMED, "snapshot: table \"%s\".\"%s\": COPY row has no tuple id",
						   rel->schema, rel->name);
		pos = ((uint64_t) d[0] << 40) | ((uint64_t) d[1] << 32) | ((uint64_t) d[2] << 24) |
			((uint64_t) d[3] << 16) | ((uint64_t) d[4] << 8) | d[5];
		if (pos <= ch->lastpos)
			return rp_fail(RP_HALT_NONE, "snapshot: table \"%s\".\"%s\": rows did not arrive in physical order",
						   rel->schema, rel->name);
		ch->lastpos = pos;
	}
	if (raw)
	{
		/* the row as it came, less the trailing key texts */
		const unsigned char *end = ncopy > 0
		? (len[ncopy - 1] > 0 ? data[ncopy - 1] + len[ncopy - 1] : data[ncopy - 1])
		: row + 2;

		rp_buf_put_u16(&ch->data, (uint16_t) ncopy);
		rp_buf_put_bytes(&ch->data, row + 2, (size_t) (end - (row + 2)));
	}
	else
	{
		size_t		at = rp_enc_change_start(&ch->data, RP_TAG_INSERT, rel->relid, 0, 0);
		char		err[200];

		rp_enc_tuple_start(&ch->data, rel->natts);
		for (int i = 0; i < rel->natts; i++)
		{
			if (len[i] < 0)
			{
				rp_enc_datum_kind(&ch->data, RP_DATUM_NULL);
				continue;
			}
			rp_enc_datum_kind(&ch->data, RP_DATUM_VALUE);
			if (rp_copybin_value(&ch->data, &t->recv[i], data[i], (uint32_t) len[i], err, sizeof(err)) < 0)
				return rp_fail(RP_HALT_MALFORMED, "snapshot: table \"%s\".\"%s\" column \"%s\": %s",
							   rel->schema, rel->name, rel->cols[i].name, err);
		}
		rp_buf_end_record(&ch->data, at);
	}
	if (t->nkey > 0 && !job->heap)
	{
		rp_buf_reset(&ch->lastkey);
		for (int k = 0; k < t->nkey; k++)
		{
			const unsigned char *d = data[ncopy + k];

			if (len[ncopy + k] > 0)
				rp_buf_put_bytes(&ch->lastkey, d, (size_t) len[ncopy + k]);
			rp_buf_put_char(&ch->lastkey, '\0');
		}
	}
	ch->rows++;
	return 0;
}

/* What the delivery thread needs to store one chunk (rp_snaphandoff.h). */
typedef struct RpSnapDeliverArg
{
	RpSnapWorker *w;
	RpSnapJob  *job;
	bool		raw;
} RpSnapDeliverArg;

/* A chunk handed over: never the last (that one the worker delivers itself). */
static int
rp_snap_deliver_handed(void *arg, void *item, bool first)
{
	RpSnapDeliverArg *d = arg;

	return rp_snap_deliver(d->w, d->job, item, d->raw, first, false, first);
}

/* A table whose copy cannot be consistent (rp_snap_check_rewrite). */
static int
rp_snap_rewrite_fail(const char *schema, const char *name)
{
	return rp_fail(RP_HALT_NONE,
				   "snapshot: table \"%s\".\"%s\" was truncated or rewritten after the snapshot was taken"
				   " (TRUNCATE, or an ALTER TABLE that rewrites it): the snapshot sees none of its rows;"
				   " run the same command again to resume under a new snapshot",
				   schema, name);
}

/*
 * A table's copy starts with it locked, so that no rewrite can swap its
 * file while it is read, and with a look at whether one did so after the
 * snapshot was taken: the catalog read under the snapshot names the old
 * file, pg_relation_filenode() the current one.  VACUUM FULL and CLUSTER
 * keep every row version the snapshot sees.  TRUNCATE and a rewriting
 * ALTER TABLE are not MVCC-safe: the new file holds no row the snapshot
 * can see, the copy would be empty, and the stream's changes from the
 * consistent point on would meet rows never copied (a mirror halts at the
 * first unmatched update; after an ALTER no later change need come at
 * all).  So a rewritten table whose copy finds no row fails the run
 * (rp_snap_rewrite_fail), as does a rewritten partition of a root read
 * whole, where the other partitions' rows hide an empty one.  The lock is
 * the copy session's own and held to the end of its transaction (a lock
 * session of its own, as pg_dump has, would queue the workers behind a
 * waiting TRUNCATE).
 */
static int
rp_snap_check_rewrite(RpSnapWorker *w, RpSnapJob *job)
{
	const RpSnapTable *t = job->t;
	const RpRelation *rel = t->rel;
	RpBuf		sql;
	char		relid[16];
	const char *vals[1] = {relid};
	PGresult   *res;
	int			rc;

	rp_buf_init(&sql, 128);

	/*
	 * a partition root's lock reaches every partition, whose files are
	 * checked
	 */
	rp_buf_put_text(&sql, t->partitioned ? "LOCK TABLE " : "LOCK TABLE ONLY ");
	rp_sql_ident(&sql, rel->schema);
	rp_buf_put_char(&sql, '.');
	rp_sql_ident(&sql, rel->name);
	rp_buf_put_text(&sql, " IN ACCESS SHARE MODE");
	rp_buf_put_char(&sql, '\0');
	rc = rp_snap_exec(w->conn, sql.data, "locking", t);
	rp_buf_free(&sql);
	if (rc < 0)
		return -1;
	snprintf(relid, sizeof(relid), "%u", rel->relid);
	res = PQexecParams(w->conn,
					   "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c"
					   " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
					   " WHERE c.oid IN (SELECT $1::pg_catalog.oid UNION ALL"
					   "  SELECT p.relid FROM pg_catalog.pg_partition_tree($1::pg_catalog.oid) p WHERE p.isleaf)"
					   " AND c.relfilenode <> 0"
					   " AND c.relfilenode IS DISTINCT FROM pg_catalog.pg_relation_filenode(c.oid)"
					   " ORDER BY 1, 2 LIMIT 1",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_snap_fail_res(res, "checking for a rewrite", t);
	else if (PQntuples(res) == 1 && t->partitioned)
		rc = rp_snap_rewrite_fail(PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	else if (PQntuples(res) == 1)
		job->rewritten = true;
	PQclear(res);
	return rc;
}

/*
 * A heap-order copy's start: its relfilenode, which a
 * stored position belongs to.  A resumed copy goes on from its position
 * when the file and the horizon still hold, and starts over otherwise
 * (VACUUM FULL, CLUSTER, TRUNCATE or a rewriting ALTER moved every row);
 * either way its rows may be stored already, so the sink upserts them.
 */
static int
rp_snap_heap_start(RpSnapWorker *w, RpSnapJob *job)
{
	RpSnapRun  *run = w->run;
	const RpRelation *rel = job->t->rel;
	char		relid[16];
	const char *vals[1] = {relid};
	PGresult   *res;
	uint32_t	filenode;
	int			rc;

	/* the table is locked already (rp_snap_check_rewrite) */
	snprintf(relid, sizeof(relid), "%u", rel->relid);
	res = PQexecParams(w->conn, "SELECT pg_catalog.pg_relation_filenode($1::pg_catalog.oid)", 1, NULL, vals,
					   NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
	{
		rc = rp_snap_fail_res(res, "reading the relfilenode", job->t);
		PQclear(res);
		return rc;
	}
	filenode = (uint32_t) strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);

	if (job->have_tok)
	{
		if (job->tok.filenode != filenode || job->tok.horizon > run->xmax ||
			run->xmax - job->tok.horizon >= (UINT64_C(1) << 31))
		{
			if (run->opts->verbose)
				rp_snap_say(run->opts, "snapshot: table \"%s\".\"%s\" was rewritten since its copy stopped: copying it again",
							rel->schema, rel->name);
			job->tok.have_pos = false;
			job->tok.rows = 0;
			job->tok.horizon = run->xmin;
		}
	}
	else
	{
		job->tok.heap = true;
		job->tok.horizon = run->xmin;
	}
	job->tok.filenode = filenode;
	return 0;
}

/* The table's COPY TO STDOUT started on the worker's session. */
static int
rp_snap_copy_begin(RpSnapWorker *w, RpSnapJob *job, bool raw)
{
	RpBuf		sql;
	PGresult   *res;
	int			rc = 0;

	rp_buf_init(&sql, 512);
	rp_snap_copy_sql(&sql, w->conn, job, raw);
	res = PQexec(w->conn, sql.data);
	rp_buf_free(&sql);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
		rc = rp_snap_fail_res(res, "COPY", job->t);
	PQclear(res);
	return rc;
}

/*
 * A full chunk (*chp) handed to the delivery thread, unless the run is
 * stopping; *chp becomes the other buffer, for the next rows.
 */
static int
rp_snap_chunk_full(RpSnapRun *run, RpSnapJob *job, RpSnapHandoff *handoff, RpSnapChunk chunks[2],
				   RpSnapChunk **chp, bool first)
{
	RpSnapChunk *next;

	if (atomic_load(&run->failed))
		return rp_fail(RP_HALT_NONE, "snapshot: stopped (another worker failed)");
	/* SIGINT/SIGTERM: the chunks stored so far are where a rerun resumes */
	if (rp_stop_requested())
		return rp_fail(RP_HALT_NONE, "snapshot: stopped by a signal before table \"%s\".\"%s\" was copied",
					   job->t->rel->schema, job->t->rel->name);
	/* the previous chunk must be stored before this one is handed over */
	if (rp_snap_handoff_wait(handoff) < 0)
		return -1;
	rp_snap_handoff_give(handoff, *chp, first);

	/*
	 * the other buffer takes the next rows; the order check goes on across
	 * them
	 */
	next = *chp == &chunks[0] ? &chunks[1] : &chunks[0];
	next->lastpos = (*chp)->lastpos;
	*chp = next;
	return 0;
}

/*
 * Where a table's copy starts: in physical order from a stored tuple id,
 * after a stored key (as settings the WHERE clause reads), or over.
 */
static int
rp_snap_copy_start(RpSnapWorker *w, RpSnapJob *job)
{
	RpSnapRun  *run = w->run;
	const RpSnapTable *t = job->t;
	PGresult   *res;
	int			rc = 0;

	if (rp_snap_check_rewrite(w, job) < 0)
		return -1;
	/* a partition root has no one heap to walk: its rows go in key order */
	job->heap = run->sink->snapshot_heap_order && t->nkey > 0 && !t->partitioned &&
		(!job->have_tok || job->tok.heap);
	if (job->heap)
		rc = rp_snap_heap_start(w, job);
	/* resume: the last stored key, as settings the WHERE clause reads */
	else if (job->have_tok && t->nkey > 0 && job->tok.nkeys == t->nkey)
	{
		for (int k = 0; k < t->nkey && rc == 0; k++)
		{
			char		name[64];
			const char *vals[2] = {name, job->tok.keys[k]};

			snprintf(name, sizeof(name), "replicant_snap.k%d", k + 1);
			res = PQexecParams(w->conn, "SELECT pg_catalog.set_config($1, $2, true)", 2, NULL, vals,
							   NULL, NULL, 0);
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				rc = rp_snap_fail_res(res, "setting the resume key", t);
			PQclear(res);
		}
	}
	else if (job->have_tok && job->tok.rows > 0)
	{
		/*
		 * A table without a key stopped part way: there is no position to
		 * continue from.  Its rows are copied again from the start; the
		 * sink's token says so (rows restart) and a state sink replaces.
		 */
		job->tok.rows = 0;
	}
	return rc;
}

/* The two chunk buffers; a frame's begins with its header and the table's description. */
static void
rp_snap_chunks_init(RpSnapChunk chunks[2], const RpRelation *rel, bool raw)
{
	memset(chunks, 0, 2 * sizeof(RpSnapChunk));
	for (int c = 0; c < 2; c++)
	{
		RpSnapChunk *ch = &chunks[c];

		rp_buf_init(&ch->data, 1 << 20);
		rp_buf_init(&ch->lastkey, 64);
		if (!raw)
		{
			/* a frame: header and the table's description, then its rows */
			size_t		at;

			rp_enc_frame_header(&ch->data);
			at = rp_enc_relation_start(&ch->data, rel->relid, rel->schema, rel->name, rel->identity, rel->natts);
			for (int i = 0; i < rel->natts; i++)
				rp_enc_relation_column(&ch->data, rel->cols[i].attnum, rel->cols[i].name, rel->cols[i].type_oid,
									   rel->cols[i].type_name, rel->cols[i].typmod, rel->cols[i].encoding,
									   rel->cols[i].flags);
			rp_buf_end_record(&ch->data, at);
		}
		ch->head_len = ch->data.len;
	}
}

/* The COPY's own result, once its data is read: and the data must have ended with the trailer. */
static int
rp_snap_copy_end(RpSnapWorker *w, const RpSnapTable *t, bool ended)
{
	PGresult   *res = PQgetResult(w->conn);
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = rp_snap_fail_res(res, "COPY", t);
	PQclear(res);
	while ((res = PQgetResult(w->conn)) != NULL)
		PQclear(res);
	if (rc == 0 && !ended)
		rc = rp_fail(RP_HALT_MALFORMED, "snapshot: COPY of table \"%s\".\"%s\" ended without its trailer",
					 t->rel->schema, t->rel->name);
	return rc;
}

/* One table's COPY as it is read: the decode buffers and how far it got. */
typedef struct RpSnapCopy
{
	int			ncopy;			/* columns in a COPY row */
	int			maxf;			/* fields a row may hold */
	const unsigned char **data; /* a row's fields, into the message */
	int32_t    *len;
	bool		header;			/* the binary header was read */
	bool		ended;			/* the trailer was read */
	uint64_t	copied;			/* rows, those of a resumed copy included */
} RpSnapCopy;

/*
 * One CopyData message of a table's binary COPY: the header first, then
 * whole rows (a row never spans messages) into the open chunk *chp.  Its
 * own function so that the copy loop reads as what it does with each
 * message.  0, or -1 after rp_fail.
 */
static int
rp_snap_copy_message(RpSnapCopy *cp, RpSnapJob *job, bool raw, RpSnapChunk *chp,
					 const unsigned char *p, int n)
{
	const RpRelation *rel = job->t->rel;
	const unsigned char *end = p + n;
	int			rc = 0;

	if (!cp->header)
	{
		int			h = rp_copybin_header(p, (size_t) n);

		if (h < 0)
			return rp_fail(RP_HALT_MALFORMED, "snapshot: COPY of table \"%s\".\"%s\" has no binary header",
						   rel->schema, rel->name);
		p += h;
		cp->header = true;
	}
	while (p < end && rc == 0)
	{
		const unsigned char *row = p;
		int			nf;
		int			r = rp_copybin_tuple(&p, end, cp->maxf, &nf, cp->data, cp->len);

		if (r < 0)
			rc = rp_fail(RP_HALT_MALFORMED, "snapshot: COPY row of table \"%s\".\"%s\" does not decode",
						 rel->schema, rel->name);
		else if (r == 0)
			cp->ended = true;
		else
		{
			rc = rp_snap_row(chp, job, raw, cp->ncopy, row, cp->data, cp->len, nf);
			cp->copied++;
		}
	}
	return rc;
}

/*
 * One job: the table's binary COPY (or, resumed, the rest of it), read
 * message by message into chunks the handoff thread gives the sink as
 * they fill; the last chunk, also when empty, is delivered here.
 */
static int
rp_snap_copy_table(RpSnapWorker *w, RpSnapJob *job)
{
	RpSnapRun  *run = w->run;
	const RpSnapTable *t = job->t;
	const RpRelation *rel = t->rel;
	bool		raw = run->sink->snapshot_raw && t->portable;
	RpSnapChunk chunks[2];
	RpSnapChunk *chp = &chunks[0];
	RpSnapDeliverArg darg = {w, job, raw};
	RpSnapHandoff handoff;
	RpSnapCopy	cp = {0};
	uint64_t	start;
	bool		first = true;
	int			rc = 0;

	if (!raw && !t->convertible)
		return rp_fail(RP_HALT_CONFIG, "snapshot: table \"%s\".\"%s\": %s", rel->schema, rel->name, t->why);
	for (int i = 0; i < rel->natts; i++)
		if (!raw || !(rel->cols[i].flags & RP_COL_GENERATED))
			cp.ncopy++;
	cp.maxf = cp.ncopy + t->nkey + 1;
	cp.data = rp_malloc0(sizeof(*cp.data) * (size_t) cp.maxf);
	cp.len = rp_malloc0(sizeof(*cp.len) * (size_t) cp.maxf);

	rc = rp_snap_copy_start(w, job);
	if (rc < 0)
		goto out;
	cp.copied = start = job->tok.rows;

	if ((rc = rp_snap_copy_begin(w, job, raw)) < 0)
		goto out;

	rp_snap_chunks_init(chunks, rel, raw);
	rc = rp_snap_handoff_start(&handoff, rp_snap_deliver_handed, &darg);

	for (;;)
	{
		char	   *buf = NULL;
		int			n = PQgetCopyData(w->conn, &buf, 0);

		if (n == -1)
			break;
		if (n < 0)
		{
			rc = rp_fail(RP_HALT_NONE, "snapshot: COPY of table \"%s\".\"%s\" failed: connection lost",
						 rel->schema, rel->name);
			break;
		}
		if (rc == 0)
			rc = rp_snap_copy_message(&cp, job, raw, chp, (const unsigned char *) buf, n);
		PQfreemem(buf);
		if (rc < 0)
			break;
		atomic_store(&job->done_rows, cp.copied);
		if (chp->rows >= run->opts->chunk_rows || chp->data.len >= run->opts->chunk_bytes)
		{
			if ((rc = rp_snap_chunk_full(run, job, &handoff, chunks, &chp, first)) < 0)
				break;
			first = false;
		}
	}
	if (rc == 0)
		rc = rp_snap_copy_end(w, t, cp.ended);
	if (rc == 0 && job->rewritten && cp.copied == start)
		rc = rp_snap_rewrite_fail(rel->schema, rel->name);
	/* the last chunk, also when empty: every table gets a call */
	if (handoff.started && rp_snap_handoff_wait(&handoff) < 0 && rc == 0)
		rc = -1;
	rp_snap_handoff_end(&handoff);
	if (rc == 0)
		rc = rp_snap_deliver(w, job, chp, raw, first, true, first);
	for (int c = 0; c < 2; c++)
	{
		rp_buf_free(&chunks[c].data);
		rp_buf_free(&chunks[c].lastkey);
	}
out:
	rp_free(cp.data);
	rp_free(cp.len);
	return rc;
}

/* Metrics: the table's dump ended (complete) or stopped (aborted). */
static void
rp_snap_note_store(RpSnapRun *run, const RpSnapJob *job, bool complete)
{
	char		store[512];
	RpSnapStats *st = run->stats;
	const RpSnapTable *t = job->t;
	uint64_t	oversize = RP_COUNT_LOAD(job->oversize);

	snprintf(store, sizeof(store), "%s.%s", t->rel->schema, t->rel->name);
	pthread_mutex_lock(&run->lock);
	st->stores = rp_realloc(st->stores, sizeof(char *) * (size_t) (st->nstores + 1));
	st->complete = rp_realloc(st->complete, sizeof(bool) * (size_t) (st->nstores + 1));
	st->store_oversize = rp_realloc(st->store_oversize, sizeof(uint64_t) * (size_t) (st->nstores + 1));
	st->store_oversize[st->nstores] = oversize;
	RP_COUNT_ADD(st->oversize, oversize);
	st->stores[st->nstores] = rp_strndup(store, strlen(store));
	st->complete[st->nstores++] = complete;
	pthread_mutex_unlock(&run->lock);
}

void	   *
rp_snap_worker_main(void *arg)
{
	RpSnapWorker *w = arg;
	RpSnapRun  *run = w->run;

	for (;;)
	{
		RpSnapJob  *job = NULL;

		if (atomic_load(&run->failed))
			break;
		pthread_mutex_lock(&run->lock);
		/* SIGINT/SIGTERM: no table more; the snapshot is not complete */
		if (rp_stop_requested() && !atomic_load(&run->failed))
		{
			snprintf(run->error, sizeof(run->error), "snapshot: stopped by a signal");
			run->halt = RP_HALT_NONE;
			atomic_store(&run->failed, true);
		}
		if (atomic_load(&run->failed))
		{
			pthread_mutex_unlock(&run->lock);
			break;
		}
		if (run->next < run->njobs)
			job = &run->jobs[run->next++];
		pthread_mutex_unlock(&run->lock);
		if (job == NULL)
			break;
		atomic_store(&job->state, 1);
		if (rp_snap_copy_table(w, job) < 0)
		{
			pthread_mutex_lock(&run->lock);
			if (!atomic_load(&run->failed))
			{
				snprintf(run->error, sizeof(run->error), "%s", rp_error());
				run->halt = rp_error_halt();
				atomic_store(&run->failed, true);
			}
			pthread_mutex_unlock(&run->lock);
			RP_COUNT_ADD(run->stats->tables_aborted, 1);
			rp_snap_note_store(run, job, false);
			break;
		}
		atomic_store(&job->state, 2);
		RP_COUNT_ADD(run->stats->tables_complete, 1);
		rp_snap_note_store(run, job, true);
	}
	return NULL;
}

/* ---- coordination ----------------------------------------------------------- */
