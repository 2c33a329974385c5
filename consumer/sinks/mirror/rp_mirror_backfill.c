/*
 * rp_mirror_backfill.c
 *    The mirror's side of a backfill (the DBLog method).
 *
 * The watermarks arrive inside the stream, in commit order, on the
 * delivery thread.  At chunk k's low watermark a window opens on its
 * table: from then on every key of that table the stream changes (insert,
 * update with its old and new key, delete) is remembered.  At the high
 * watermark the chunk's rows are applied, except those whose key is in
 * the window: the chunk was read between the two watermarks, so a row the
 * stream changed in the window may be older in the chunk than in the
 * stream, and the stream's version (already applied, or applied after
 * this point) wins.  Every other row of the chunk had the same value from
 * the low to the high watermark, so the chunk's version is exact at that
 * point of the stream.
 *
 * The comparison is done by the destination on typed values: the window's
 * keys are COPYed into a session table shaped like the key columns, the
 * chunk into one shaped like the table, and one INSERT ... ON CONFLICT
 * applies the chunk less the window.  The progress token is written in the
 * same destination transaction as the rows and the batch's checkpoint, so
 * a restart resumes after exactly the chunks that are there (G1).
 *
 * One window at a time: the backfill thread has at most one chunk in
 * flight.  A window survives a rolled-back destination transaction (the
 * stream replays from the checkpoint and brings the high watermark again);
 * it closes when the transaction holding its chunk commits.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "backfill/rp_backfill.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "sinks/mirror/rp_mirror_history_copy.h"
#include "rp_format.h"
#include "values/rp_pgtext.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"

static const char *const rp_mirror_bf_setup_sql =
"CREATE TABLE IF NOT EXISTS @bk.backfill_progress ("
"  system_id text NOT NULL, slot text NOT NULL, relid oid NOT NULL, dest_table text NOT NULL,"
"  token text NOT NULL, rows bigint NOT NULL, done boolean NOT NULL,"
"  updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),"
"  PRIMARY KEY (system_id, slot, relid))";

typedef struct RpMirrorBf
{
	bool		open;			/* a window is open */
	RpBfMsg		low;			/* its low watermark */
	RpBuf		keys;			/* COPY text lines of the keys the stream
								 * changed */
	uint64_t	nkeys;
	bool		truncated;		/* the stream truncated the table inside the
								 * window */
	RpBackfillChunk *applied;	/* applied in the open destination transaction */
} RpMirrorBf;

void
rp_mirror_backfill_init(RpMirror *pg)
{
	pg->bf = rp_malloc0(sizeof(RpMirrorBf));
}

void
rp_mirror_backfill_free(RpMirror *pg)
{
	if (pg->bf == NULL)
		return;
	if (pg->bf->keys.data)
		rp_buf_free(&pg->bf->keys);
	rp_free(pg->bf);
	pg->bf = NULL;
}

bool
rp_mirror_backfill_window_open(const RpMirror *pg)
{
	return pg->bf->open;
}

/* One key (t's key columns of tup) as a COPY text line. */
static void
rp_mirror_bf_key_line(RpMirrorBf *bf, const RpMirrorTable *t, const RpTuple *tup)
{
	RpBuf	   *out = &bf->keys;
	RpBuf		v;

	for (int k = 0; k < t->nkey; k++)
		if (t->keycols[k] >= tup->natts || tup->datums[t->keycols[k]].kind == RP_DATUM_UNCHANGED)
			return;				/* an unchanged TOAST key: the key did not
								 * change, see docs */
	rp_buf_init(&v, 64);
	for (int k = 0; k < t->nkey; k++)
	{
		const RpDatum *d = &tup->datums[t->keycols[k]];

		if (k)
			rp_buf_put_char(out, '\t');
		if (d->kind != RP_DATUM_VALUE)
			rp_buf_put_text(out, "\\N");
		else
		{
			rp_buf_reset(&v);
			rp_pgtext_value(&v, t->rel->cols[t->keycols[k]].encoding, d->data, d->len);
			rp_pgtext_copy_escape(out, v.data, v.len);
		}
	}
	rp_buf_put_char(out, '\n');
	rp_buf_free(&v);
	bf->nkeys++;
}

void
rp_mirror_backfill_note(RpMirror *pg, const RpMirrorTable *t, const RpRecord *rec)
{
	if (!pg->bf->open || pg->bf->applied || t->relid != pg->bf->low.relid || t->nkey == 0)
		return;
	if (rec->u.change.has_old)
		rp_mirror_bf_key_line(pg->bf, t, &rec->u.change.old_tuple);
	if (rec->u.change.has_new && rec->tag != RP_TAG_DELETE)
		rp_mirror_bf_key_line(pg->bf, t, &rec->u.change.new_tuple);
}

void
rp_mirror_backfill_truncate(RpMirror *pg, const RpRecord *rec)
{
	if (!pg->bf->open || pg->bf->applied)
		return;
	for (uint32_t i = 0; i < rec->u.truncate.nrels; i++)
		if (rp_truncate_relid(rec, i) == pg->bf->low.relid)
			pg->bf->truncated = true;
}

void
rp_mirror_backfill_committed(RpMirror *pg)
{
	if (pg->bf->applied == NULL)
		return;
	rp_backfill_release(pg->backfill, pg->bf->applied, true);
	pg->bf->applied = NULL;
	pg->bf->open = false;
	rp_buf_reset(&pg->bf->keys);
	pg->bf->nkeys = 0;
}

void
rp_mirror_backfill_aborted(RpMirror *pg)
{
	if (pg->bf->applied == NULL)
		return;
	/* the window stays: the replay brings its high watermark again */
	rp_backfill_release(pg->backfill, pg->bf->applied, false);
	pg->bf->applied = NULL;
}

/* COPY len bytes of text-format lines into into (cols). */
static int
rp_mirror_bf_copy(RpMirror *pg, const RpMirrorTable *t, const char *into, const char *cols, const char *data,
				  size_t len, const char *what)
{
	PGresult   *res;
	int			rc = 0;

	if (rp_mirror_copy_start(pg->conn, into, cols, false, &res) < 0)
	{
		rc = rp_mirror_fail_result(pg, res, what, t);
		PQclear(res);
		return rc;
	}
	if (len > 0 && PQputCopyData(pg->conn, data, (int) len) != 1)
		rc = -1;
	if (rp_mirror_copy_end(pg->conn, &res) < 0 || rc < 0)
		rc = rp_mirror_fail_result(pg, res, what, t);
	PQclear(res);
	return rc;
}

static char *
rp_mirror_bf_take_buf(RpBuf *b)
{
	char	   *s;

	rp_buf_put_char(b, '\0');
	s = rp_strndup(b->data, b->len - 1);
	rp_buf_reset(b);
	return s;
}

/* Store ch's progress token (and its rows' count) for t, in the open transaction. */
static int
rp_mirror_bf_store_token(RpMirror *pg, const RpMirrorTable *t, const RpBackfillChunk *ch,
						 const char *relid)
{
	char		sysid[24],
				rows[24];
	const char *vals[7];

	if (rp_mirror_exec(pg, rp_mirror_bk(pg, rp_mirror_bf_setup_sql), "creating the backfill progress table", NULL) < 0)
		return -1;
	snprintf(sysid, sizeof(sysid), "%" PRIu64, pg->ck.system_id);
	snprintf(rows, sizeof(rows), "%" PRIu64, ch->nrows);
	vals[0] = sysid;
	vals[1] = pg->opts.slot;
	vals[2] = relid;
	vals[3] = t->qname;
	vals[4] = ch->token;
	vals[5] = rows;
	vals[6] = ch->last ? "t" : "f";
	if (rp_mirror_exec_params(pg,
							  rp_mirror_bk(pg, "INSERT INTO @bk.backfill_progress AS p (system_id, slot, relid, dest_table, token, rows, done)"
										   " VALUES ($1, $2, $3::oid, $4, $5, $6::bigint, $7::boolean)"
										   " ON CONFLICT (system_id, slot, relid) DO UPDATE SET dest_table = EXCLUDED.dest_table,"
										   " token = EXCLUDED.token, rows = p.rows + EXCLUDED.rows, done = EXCLUDED.done,"
										   " updated_at = pg_catalog.now()"),
							  7, vals, "storing backfill progress", t) < 0)
		return -1;
	return 0;
}

/*
 * The chunk less the window, upserted: the stream's version of those keys stays.
 * Identity columns GENERATED ALWAYS keep the source's values (rp_mirror_snap_upsert_sql).
 */
static void
rp_mirror_bf_upsert_sql(RpMirror *pg, RpBuf *b, const RpMirrorTable *t, const RpRelation *rel,
						const RpBackfillChunk *ch, const char *cols, const char *stage, const char *win)
{
	rp_buf_put_text(b, "INSERT INTO ");
	rp_buf_put_text(b, t->qname);
	rp_buf_put_text(b, " AS rp_t (");
	rp_buf_put_text(b, cols);
	rp_buf_put_text(b, ") OVERRIDING SYSTEM VALUE SELECT ");
	rp_mirror_sql_cols(pg, b, rel, NULL, 0, "s.");
	rp_buf_put_text(b, " FROM ");
	rp_buf_put_text(b, stage);
	rp_buf_put_text(b, " s WHERE NOT EXISTS (SELECT 1 FROM ");
	rp_buf_put_text(b, win);
	rp_buf_put_text(b, " w WHERE ");
	rp_mirror_sql_key_match(pg, b, t->rel, t->keycols, t->nkey, "w", "s");
	rp_buf_put_char(b, ')');
	rp_mirror_sql_on_conflict(pg, b, rel, ch->keycols, ch->nkey, "rp_t");
}

/*
 * A history table: the window's keys leave the stage, the rest merge as
 * versions opened at the high watermark's commit (a row equal to its open
 * version opens none, rp_mirror_history_copy.c).
 */
static void
rp_mirror_bf_history_sql(RpMirror *pg, RpBuf *b, const RpMirrorTable *t, const RpRelation *rel,
						 const char *stage, const char *win)
{
	char		lsn[24];
	RpBuf		when;

	rp_lsn_format(pg->cur_commit_lsn, lsn);
	rp_buf_init(&when, 96);
	rp_buf_put_char(&when, '\'');
	rp_fmt_timestamp(&when, pg->cur_commit_time, true);
	rp_buf_put_text(&when, "'::timestamptz");
	rp_buf_put_char(&when, '\0');
	rp_buf_put_text(b, "DELETE FROM ");
	rp_buf_put_text(b, stage);
	rp_buf_put_text(b, " s WHERE EXISTS (SELECT 1 FROM ");
	rp_buf_put_text(b, win);
	rp_buf_put_text(b, " w WHERE ");
	rp_mirror_sql_key_match(pg, b, t->rel, t->keycols, t->nkey, "w", "s");
	rp_buf_put_text(b, "); ");
	rp_mirror_history_merge_sql(pg, b, t, rel, stage, lsn, when.data);
	rp_buf_free(&when);
}

/* Apply chunk ch less the window, and its token, in the open destination transaction. */
static int
rp_mirror_bf_apply(RpMirror *pg, RpBackfillChunk *ch)
{
	const RpRelation *rel = ch->rel;
	RpMirrorTable *t;
	RpBuf		b;
	char		stage[64],
				win[64],
				relid[16];
	char	   *cols = NULL,
			   *wcols = NULL;
	int			rc = -1;

	/* the stream's changes up to here are in the table first */
	if (rp_mirror_apply_flush(pg) < 0)
		return -1;
	t = rp_mirror_table_get(pg, rel);
	if (!t->resolved && rp_mirror_table_resolve(pg, t) < 0)
		return -1;
	if (t->nkey == 0 || t->full_match)
		return rp_fail(RP_HALT_CONFIG, "backfill into table %s needs a key (its primary key as replica identity)",
					   t->qname);
	snprintf(relid, sizeof(relid), "%u", rel->relid);
	snprintf(stage, sizeof(stage), "pg_temp.rp_bfs_%u", rel->relid);
	snprintf(win, sizeof(win), "pg_temp.rp_bfw_%u", rel->relid);
	rp_buf_init(&b, 1024);

	/*
	 * session tables: the chunk's rows, and the window's keys typed like the
	 * table's
	 */
	if (t->history)
		rp_mirror_history_stage_ddl(pg, &b, t, rel, stage);
	else
	{
		rp_buf_put_text(&b, "CREATE TEMP TABLE IF NOT EXISTS rp_bfs_");
		rp_buf_put_text(&b, relid);
		rp_buf_put_text(&b, " (LIKE ");
		rp_buf_put_text(&b, t->qname);
		rp_buf_put_text(&b, ")");
	}
	rp_buf_put_text(&b, "; CREATE TEMP TABLE IF NOT EXISTS rp_bfw_");
	rp_buf_put_text(&b, relid);
	rp_buf_put_text(&b, " AS SELECT ");
	rp_mirror_sql_cols(pg, &b, t->rel, t->keycols, t->nkey, NULL);
	rp_buf_put_text(&b, " FROM ");
	rp_buf_put_text(&b, t->qname);
	rp_buf_put_text(&b, " WITH NO DATA; TRUNCATE ");
	rp_buf_put_text(&b, stage);
	rp_buf_put_text(&b, ", ");
	rp_buf_put_text(&b, win);
	rp_buf_put_char(&b, '\0');
	if (rp_mirror_exec(pg, b.data, "preparing a backfill chunk", t) < 0)
		goto out;
	rp_buf_reset(&b);

	rp_mirror_sql_cols(pg, &b, rel, NULL, 0, NULL);
	cols = rp_mirror_bf_take_buf(&b);
	rp_mirror_sql_cols(pg, &b, t->rel, t->keycols, t->nkey, NULL);
	wcols = rp_mirror_bf_take_buf(&b);
	if (!pg->bf->truncated && ch->nrows > 0)
	{
		if (pg->bf->nkeys > 0 &&
			rp_mirror_bf_copy(pg, t, win, wcols, pg->bf->keys.data, pg->bf->keys.len,
							  "loading a backfill window") < 0)
			goto out;
		if (rp_mirror_bf_copy(pg, t, stage, cols, ch->rows.data, ch->rows.len, "loading a backfill chunk") < 0)
			goto out;
		if (t->history)
			rp_mirror_bf_history_sql(pg, &b, t, rel, stage, win);
		else
			rp_mirror_bf_upsert_sql(pg, &b, t, rel, ch, cols, stage, win);
		rp_buf_put_text(&b, "; TRUNCATE ");
		rp_buf_put_text(&b, stage);
		rp_buf_put_text(&b, ", ");
		rp_buf_put_text(&b, win);
		rp_buf_put_char(&b, '\0');
		if (rp_mirror_exec(pg, b.data, "applying a backfill chunk", t) < 0)
			goto out;
	}

	/*
	 * the token commits with the rows it vouches for, and with the batch's
	 * checkpoint
	 */
	if (rp_mirror_bf_store_token(pg, t, ch, relid) < 0)
		goto out;
	rc = 0;
out:
	rp_buf_free(&b);
	if (cols)
		rp_free(cols);
	if (wcols)
		rp_free(wcols);
	return rc;
}

int
rp_mirror_backfill_message(RpMirror *pg, bool transactional, const char *prefix, size_t prefix_len,
						   const unsigned char *content, uint32_t len)
{
	RpBfMsg		m;
	RpBackfillChunk *ch;
	char		lsn[24];

	if (prefix_len != strlen(RP_BACKFILL_PREFIX) || memcmp(prefix, RP_BACKFILL_PREFIX, prefix_len) != 0)
		return 0;

	/*
	 * ours are transactional: one written otherwise has no place in commit
	 * order
	 */
	if (!transactional)
		return 1;
	if (!rp_bfmsg_parse(content, len, &m))
	{
		rp_lsn_format(pg->cur_commit_lsn, lsn);
		rp_fail(RP_HALT_SINK, "logical message with prefix \"%s\" in the transaction committed at %s is not a backfill watermark",
				RP_BACKFILL_PREFIX, lsn);
		return -1;
	}
	/* another run's watermark (an earlier process's, replayed): no effect */
	if (!rp_backfill_running(pg->backfill) || strcmp(m.run, rp_backfill_run_id(pg->backfill)) != 0)
		return 1;
	if (m.mark == RP_BF_LOW)
	{
		/*
		 * the same low watermark again (a replay after a rollback): the
		 * window goes on
		 */
		if (pg->bf->open && rp_bfmsg_same_chunk(&pg->bf->low, &m))
			return 1;
		if (pg->bf->keys.data == NULL)
			rp_buf_init(&pg->bf->keys, 4096);
		rp_buf_reset(&pg->bf->keys);
		pg->bf->nkeys = 0;
		pg->bf->truncated = false;
		pg->bf->low = m;
		pg->bf->open = true;
		return 1;
	}
	if (!pg->bf->open || !rp_bfmsg_same_chunk(&pg->bf->low, &m) || pg->bf->applied)
		return 1;
	if ((ch = rp_backfill_take(pg->backfill, &m)) == NULL)
		return 1;
	if (rp_mirror_bf_apply(pg, ch) < 0)
	{
		rp_backfill_release(pg->backfill, ch, false);
		return -1;
	}
	pg->bf->applied = ch;
	return 1;
}

int
rp_mirror_backfill_progress(void *arg, uint32_t relid, char **token)
{
	RpSink	   *s = arg;
	RpMirror   *pg = s->priv;
	PGconn	   *conn;
	char		rel[16];
	const char *vals[2] = {pg->opts.slot, rel};
	PGresult   *res;
	int			rc = 0;

	conn = rp_mirror_session_open(pg->opts.conninfo, "replicant backfill", true, pg->opts.replication_role,
								  "backfill: ");
	if (conn == NULL)
		return -1;
	res = PQexec(conn, rp_mirror_bk(pg, "CREATE SCHEMA IF NOT EXISTS @bk"));
	PQclear(res);
	res = PQexec(conn, rp_mirror_bk(pg, rp_mirror_bf_setup_sql));
	PQclear(res);
	snprintf(rel, sizeof(rel), "%u", relid);
	res = PQexecParams(conn, rp_mirror_bk(pg, "SELECT token FROM @bk.backfill_progress WHERE slot = $1 AND relid = $2::oid"),
					   2, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		char		code[64],
					said[256];

		rp_pgerr_code(state, code, sizeof(code));
		rc = rp_fail(RP_HALT_NONE, "backfill: reading its progress failed (%s)%s", code,
					 rp_pgerr_said(res, said, sizeof(said)));
	}
	else if (PQntuples(res) > 0)
	{
		*token = rp_strndup(PQgetvalue(res, 0, 0), strlen(PQgetvalue(res, 0, 0)));
		rc = 1;
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}
