/*
 * rp_mirror_snapshot.c
 *    The mirror's initial snapshot: chunks of rows, each committed in one
 *    destination transaction with its progress token, from several copy
 *    workers at once (one destination session each).
 *
 * A table that is empty when its copy starts takes its rows by COPY
 * straight into the table ("copy" mode: the fast path, binary when the
 * source's binary rows are portable).  A table that already holds rows
 * is never emptied first ("merge" mode): each chunk is COPYed into a
 * session staging table and upserted by key, and the keys it saw are
 * kept in replicant.snapseen_<relid>; rows the completed snapshot did not
 * see are deleted at completion, in the transaction that sets the
 * checkpoint, and only then.  A table without a key that holds rows gets
 * its new contents in replicant.snapnew_<relid>, swapped in at completion.
 *
 * Chunks commit with synchronous_commit off: nothing is acknowledged to
 * the source until the completion's transaction (synchronous) commits,
 * and WAL is flushed in order, so that flush covers every chunk before it.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "sinks/mirror/rp_mirror_history_copy.h"
#include "values/rp_pgbin.h"
#include "values/rp_pgtext.h"
#include "snapshot/rp_snapshot.h"
#include "base/rp_pgerr.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

#define RP_MIRROR_SNAP_MAX_WORKERS 64

static const char *const rp_mirror_snap_setup_sql =
"CREATE TABLE IF NOT EXISTS @bk.snapshot_progress ("
"  system_id text NOT NULL, slot text NOT NULL, relid oid NOT NULL, timeline integer NOT NULL,"
"  dest_table text NOT NULL, mode text NOT NULL, retire_sql text, token text NOT NULL,"
"  rows bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),"
"  PRIMARY KEY (system_id, slot, relid))";

/* What one table's chunks need, decided at its first chunk. */
typedef struct RpMirrorSnapTable
{
	uint32_t	relid;
	const RpMirrorTable *t;		/* the mirror's table (its names, for errors) */
	char	   *qname;			/* destination, quoted */
	char	   *cols;			/* applied columns, quoted, comma-separated */
	char	   *mode;			/* "copy", "merge" or "replace" */
	char	   *into;			/* where chunk rows are COPYed: qname, stage
								 * or snapnew */
	char	   *after;			/* SQL after each chunk's COPY (merge), or
								 * NULL */
	char	   *stage;			/* keyed: the session's staging table of
								 * upserted chunks */
	char	   *stage_ddl;		/* creates the session staging table (merge),
								 * or NULL */
	char	   *upsert_ddl;		/* copy mode, keyed: the staging table of
								 * may_repeat chunks */
	char	   *upsert_after;	/* ... and their upsert from it */
	char	   *retire_sql;		/* run at completion, or NULL */
	bool		staged[RP_MIRROR_SNAP_MAX_WORKERS]; /* stage_ddl done on that
													 * session */
} RpMirrorSnapTable;

typedef struct RpMirrorSnap
{
	RpMirror   *pg;
	pthread_mutex_t lock;		/* pg->conn and the table list */
	PGconn	   *conns[RP_MIRROR_SNAP_MAX_WORKERS];
	RpMirrorSnapTable **tables;
	int			ntables;
	bool		setup_done;
} RpMirrorSnap;


static int
rp_mirror_snap_fail(PGresult *res, const char *what, const RpMirrorTable *t)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	/*
	 * a lost or transient destination is retried by running again; the rest
	 * halts
	 */
	RpHalt		halt = state && (strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 ||
								 strncmp(state, "40", 2) == 0 || strncmp(state, "53", 2) == 0)
	? RP_HALT_NONE : RP_HALT_SINK;
	char		where[512],
				code[64],
				said[256];

	/*
	 * SQLSTATE, the names we know, and the message where rp_pgerr.h allows
	 * it: DETAIL and CONTEXT can quote values, and a trigger can put anything
	 * in the table, column and constraint fields (G4).
	 */
	rp_mirror_diag_where(res, t, where, sizeof(where));
	rp_pgerr_code(state, code, sizeof(code));
	rp_fail(halt, "destination %s failed: %s%s%s", what,
			state ? code : "connection lost", where, rp_pgerr_said(res, said, sizeof(said)));
	rp_error_set_sqlstate(state);
	return -1;
}

/* What a statement was for, for rp_mirror_snap_fail_sql. */
typedef struct RpMirrorSnapStmt
{
	const char *what;
	const RpMirrorTable *t;
} RpMirrorSnapStmt;

static int
rp_mirror_snap_fail_sql(void *arg, PGconn *conn, PGresult *res)
{
	const RpMirrorSnapStmt *s = arg;

	return rp_mirror_snap_fail(res, s->what, s->t);
}

static int
rp_mirror_snap_exec(PGconn *conn, const char *sql, int n, const char *const *vals, const char *what,
					const RpMirrorTable *t)
{
	RpMirrorSnapStmt s = {what, t};

	return rp_sql_exec(conn, sql, n > 0 ? n : RP_SQL_SIMPLE, vals, rp_mirror_snap_fail_sql, &s);
}

static PGconn *
rp_mirror_snap_conn(RpMirrorSnap *s, int worker)
{
	PGconn	   *conn;

	if (worker < 0 || worker >= RP_MIRROR_SNAP_MAX_WORKERS)
	{
		rp_fail(RP_HALT_CONFIG, "at most %d snapshot workers", RP_MIRROR_SNAP_MAX_WORKERS);
		return NULL;
	}
	if (s->conns[worker] && PQstatus(s->conns[worker]) == CONNECTION_OK)
		return s->conns[worker];
	if (s->conns[worker])
		PQfinish(s->conns[worker]);
	s->conns[worker] = NULL;

	/*
	 * chunks commit asynchronously: the completion's commit is synchronous
	 * (see above)
	 */
	conn = rp_mirror_session_open(s->pg->opts.conninfo, "replicant snapshot", false,
								  s->pg->opts.replication_role, "");
	if (conn == NULL)
		return NULL;
	for (int i = 0; i < s->ntables; i++)
		s->tables[i]->staged[worker] = false;
	s->conns[worker] = conn;
	return conn;
}

static char *
rp_dupbuf(RpBuf *b)
{
	char	   *s = rp_strndup(b->data, b->len);

	b->len = 0;
	return s;
}

static void rp_mirror_snap_table_free(RpMirrorSnapTable *st);

static RpMirrorSnapTable *
rp_mirror_snap_find(RpMirrorSnap *s, uint32_t relid)
{
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->relid == relid)
			return s->tables[i];
	return NULL;
}

/* "CREATE TEMP TABLE IF NOT EXISTS <the session stage> (LIKE table)" */
static void
rp_mirror_snap_stage_ddl(RpBuf *b, const RpMirrorSnapTable *st)
{
	rp_buf_put_text(b, "CREATE TEMP TABLE IF NOT EXISTS ");
	rp_buf_put_text(b, st->stage);
	rp_buf_put_text(b, " (LIKE ");
	rp_buf_put_text(b, st->qname);
	rp_buf_put_text(b, ")");
}

/*
 * "INSERT INTO table AS rp_t (cols) OVERRIDING SYSTEM VALUE SELECT cols FROM <the session
 * stage> ON CONFLICT (key) DO UPDATE ... WHERE <the row differs>": the source's values of an
 * identity column GENERATED ALWAYS are kept, as COPY keeps them in "copy" mode (without the
 * clause the insert fails, SQLSTATE 428C9; PostgreSQL ignores it for a table without such a
 * column).
 */
static void
rp_mirror_snap_upsert_sql(RpMirror *pg, RpBuf *b, const RpMirrorSnapTable *st, const RpRelation *rel, const RpMirrorTable *t)
{
	rp_buf_put_text(b, "INSERT INTO ");
	rp_buf_put_text(b, st->qname);
	rp_buf_put_text(b, " AS rp_t (");
	rp_buf_put_text(b, st->cols);
	rp_buf_put_text(b, ") OVERRIDING SYSTEM VALUE SELECT ");
	rp_buf_put_text(b, st->cols);
	rp_buf_put_text(b, " FROM ");
	rp_buf_put_text(b, st->stage);

	/*
	 * A re-snapshot rewrites no row that is already right: such rows do not
	 * even reach ON CONFLICT, whose DO UPDATE ... WHERE would still lock (and
	 * log) each one.  Nothing else writes the table while its copy runs.
	 */
	rp_buf_put_text(b, " rp_s WHERE NOT EXISTS (SELECT 1 FROM ");
	rp_buf_put_text(b, st->qname);
	rp_buf_put_text(b, " rp_d WHERE ");
	rp_mirror_sql_key_match(pg, b, rel, t->keycols, t->nkey, "rp_d", "rp_s");
	rp_buf_put_text(b, " AND ");
	rp_mirror_sql_same_row(b, rel, t->keycols, t->nkey, "rp_d", "rp_s", true);
	rp_buf_put_char(b, ')');
	rp_mirror_sql_on_conflict(pg, b, rel, t->keycols, t->nkey, "rp_t");
}

/*
 * The mode of rel's copy: a resumed copy keeps the one it started with (its
 * progress row); a new one is "copy" into an empty table, else "merge" when
 * it has a key, "replace" when not.  NULL after rp_fail().
 */
static char *
rp_mirror_snap_mode(RpMirror *pg, const RpSnapshotCtx *ctx, const RpMirrorTable *t, const char *relid)
{
	char	   *mode = NULL;
	PGresult   *res;

	/* a resumed copy keeps the mode it started with */
	if (!ctx->first_chunk)
	{
		const char *vals[2] = {pg->opts.slot, relid};

		res = PQexecParams(pg->conn, rp_mirror_bk(pg, "SELECT mode FROM @bk.snapshot_progress WHERE slot = $1 AND relid = $2::oid"),
						   2, NULL, vals, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			rp_mirror_snap_fail(res, "reading snapshot progress", t);
			PQclear(res);
			return NULL;
		}
		if (PQntuples(res) > 0)
			mode = rp_strndup(PQgetvalue(res, 0, 0), strlen(PQgetvalue(res, 0, 0)));
		PQclear(res);
	}
	if (mode == NULL)
	{
		RpBuf		q;
		bool		has_rows;

		rp_buf_init(&q, 256);
		rp_buf_put_text(&q, "SELECT EXISTS (SELECT 1 FROM ");
		rp_buf_put_text(&q, t->qrel);
		rp_buf_put_text(&q, ")");
		rp_buf_put_char(&q, '\0');
		res = PQexec(pg->conn, q.data);
		rp_buf_free(&q);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			rp_mirror_snap_fail(res, "checking for rows", t);
			PQclear(res);
			return NULL;
		}
		has_rows = PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		mode = rp_strndup("copy", 4);
		if (has_rows)
		{
			rp_free(mode);
			mode = t->nkey > 0 ? rp_strndup("merge", 5) : rp_strndup("replace", 7);
		}
	}
	return mode;
}

/* "replace" (no key, rows there): chunks go into snapnew_<relid>, swapped in at completion. */
static void
rp_mirror_snap_plan_replace(RpMirror *pg, RpMirrorSnapTable *st, RpBuf *bp)
{
	char		n[192];

	snprintf(n, sizeof(n), "%s.snapnew_%u", pg->bk, st->relid);
	st->into = rp_strndup(n, strlen(n));
	rp_buf_put_text(bp, "CREATE TABLE IF NOT EXISTS ");
	rp_buf_put_text(bp, n);
	rp_buf_put_text(bp, " (LIKE ");
	rp_buf_put_text(bp, st->qname);
	rp_buf_put_text(bp, ")");
	st->stage_ddl = rp_dupbuf(bp);
	rp_buf_put_text(bp, "DELETE FROM ");
	rp_buf_put_text(bp, st->t->qrel);
	rp_buf_put_text(bp, "; INSERT INTO ");
	rp_buf_put_text(bp, st->qname);
	rp_buf_put_text(bp, " (");
	rp_buf_put_text(bp, st->cols);

	/*
	 * identity columns GENERATED ALWAYS keep the source's values
	 * (rp_mirror_snap_upsert_sql)
	 */
	rp_buf_put_text(bp, ") OVERRIDING SYSTEM VALUE SELECT ");
	rp_buf_put_text(bp, st->cols);
	rp_buf_put_text(bp, " FROM ");
	rp_buf_put_text(bp, n);
	rp_buf_put_text(bp, "; DROP TABLE ");
	rp_buf_put_text(bp, n);
	st->retire_sql = rp_dupbuf(bp);
}

/*
 * The seen keys of a merging copy ("merge" and "history"): a table of the
 * key columns, kept across sessions so a resumed copy still knows which
 * rows it saw, filled from the stage after each chunk (which is then
 * emptied), read at completion to retire the rows not seen.
 */
static void
rp_mirror_snap_seen_ddl(RpMirror *pg, RpBuf *bp, const RpMirrorSnapTable *st,
						const RpRelation *rel, const RpMirrorTable *t, const char *seen)
{
	rp_buf_put_text(bp, "; CREATE TABLE IF NOT EXISTS ");
	rp_buf_put_text(bp, seen);
	rp_buf_put_text(bp, " AS SELECT ");
	rp_mirror_sql_cols(pg, bp, rel, t->keycols, t->nkey, NULL);
	rp_buf_put_text(bp, " FROM ");
	rp_buf_put_text(bp, st->qname);
	rp_buf_put_text(bp, " WITH NO DATA");
}

static void
rp_mirror_snap_seen_add(RpMirror *pg, RpBuf *bp, const RpMirrorSnapTable *st,
						const RpRelation *rel, const RpMirrorTable *t, const char *seen)
{
	rp_buf_put_text(bp, "; INSERT INTO ");
	rp_buf_put_text(bp, seen);
	rp_buf_put_text(bp, " SELECT ");
	rp_mirror_sql_cols(pg, bp, rel, t->keycols, t->nkey, NULL);
	rp_buf_put_text(bp, " FROM ");
	rp_buf_put_text(bp, st->stage);
	rp_buf_put_text(bp, "; TRUNCATE ");
	rp_buf_put_text(bp, st->stage);
}

/*
 * "merge" (a key, rows there): chunks are upserted from the session's
 * stage, their keys kept in snapseen_<relid>; rows not seen are retired at
 * completion.
 */
static void
rp_mirror_snap_plan_merge(RpMirror *pg, RpMirrorSnapTable *st, const RpRelation *rel,
						  const RpMirrorTable *t, RpBuf *bp)
{
	char		seen[192];

	snprintf(seen, sizeof(seen), "%s.snapseen_%u", pg->bk, rel->relid);
	st->into = rp_strndup(st->stage, strlen(st->stage));
	/* the session's staging table, and the seen keys (kept across sessions) */
	rp_mirror_snap_stage_ddl(bp, st);
	rp_mirror_snap_seen_ddl(pg, bp, st, rel, t, seen);
	st->stage_ddl = rp_dupbuf(bp);

	/* after each chunk: upsert, remember the keys, empty the stage */
	rp_mirror_snap_upsert_sql(pg, bp, st, rel, t);
	rp_mirror_snap_seen_add(pg, bp, st, rel, t, seen);
	st->after = rp_dupbuf(bp);

	/* at completion: retire what the snapshot did not see */
	rp_buf_put_text(bp, "DELETE FROM ");
	rp_buf_put_text(bp, st->t->qrel);
	rp_buf_put_text(bp, " d WHERE NOT EXISTS (SELECT 1 FROM ");
	rp_buf_put_text(bp, seen);
	rp_buf_put_text(bp, " s WHERE ");
	rp_mirror_sql_key_match(pg, bp, rel, t->keycols, t->nkey, "s", "d");
	rp_buf_put_text(bp, "); DROP TABLE ");
	rp_buf_put_text(bp, seen);
	st->retire_sql = rp_dupbuf(bp);
}

/*
 * "history": chunks are staged and merged as versions opened at the
 * snapshot's consistent point and time, their keys kept in snapseen_<relid>;
 * the open versions of keys not seen are closed at completion.
 */
static int
rp_mirror_snap_plan_history(RpMirror *pg, RpMirrorSnapTable *st, const RpSnapshotCtx *ctx,
							const RpMirrorTable *t, RpBuf *bp)
{
	const RpRelation *rel = ctx->rel;
	char		seen[192],
				lsn[24],
				when[96];
	int64_t		at_ms;

	if (rp_mirror_history_snap_time(pg, ctx, &at_ms) < 0)
		return -1;
	rp_lsn_format(ctx->snapshot_lsn, lsn);
	rp_mirror_history_time_sql(at_ms, when, sizeof(when));
	snprintf(seen, sizeof(seen), "%s.snapseen_%u", pg->bk, rel->relid);
	st->into = rp_strndup(st->stage, strlen(st->stage));
	rp_mirror_history_stage_ddl(pg, bp, t, rel, st->stage);
	rp_mirror_snap_seen_ddl(pg, bp, st, rel, t, seen);
	st->stage_ddl = rp_dupbuf(bp);

	/* after each chunk: merge, remember the keys, empty the stage */
	rp_mirror_history_merge_sql(pg, bp, t, rel, st->stage, lsn, when);
	rp_mirror_snap_seen_add(pg, bp, st, rel, t, seen);
	st->after = rp_dupbuf(bp);

	rp_mirror_history_retire_sql(pg, bp, t, rel, seen, lsn, when);
	st->retire_sql = rp_dupbuf(bp);
	return 0;
}

/*
 * The table's plan: destination name and columns, and the mode, decided
 * by whether the destination held rows when its copy began (first chunk)
 * or read back from the progress row (a resumed copy).  Under s->lock.
 */
static RpMirrorSnapTable *
rp_mirror_snap_plan(RpMirrorSnap *s, const RpSnapshotCtx *ctx)
{
	RpMirror   *pg = s->pg;
	const RpRelation *rel = ctx->rel;
	RpMirrorTable *t;
	RpMirrorSnapTable *st;
	RpBuf		b;
	char		relid[16];
	char	   *mode;
	bool		first = true;

	if ((st = rp_mirror_snap_find(s, rel->relid)) != NULL)
		return st;
	if (!s->setup_done)
	{
		if (rp_mirror_exec(pg, rp_mirror_bk(pg, rp_mirror_snap_setup_sql), "creating the snapshot progress table", NULL) < 0)
			return NULL;
		s->setup_done = true;
	}
	t = rp_mirror_table_get(pg, rel);
	if (!t->resolved && rp_mirror_table_resolve(pg, t) < 0)
		return NULL;
	if (t->history && t->nkey == 0)
	{
		rp_fail(RP_HALT_CONFIG, "snapshot into history table %s needs a key (its primary key as replica identity)",
				t->qname);
		return NULL;
	}
	snprintf(relid, sizeof(relid), "%u", rel->relid);

	/*
	 * a history table always merges its rows as versions
	 * (rp_mirror_history_copy.c)
	 */
	if (t->history)
		mode = rp_strndup("history", 7);
	else if ((mode = rp_mirror_snap_mode(pg, ctx, t, relid)) == NULL)
		return NULL;

	st = rp_malloc0(sizeof(RpMirrorSnapTable));
	st->relid = rel->relid;
	st->t = t;
	st->qname = rp_strndup(t->qname, strlen(t->qname));
	st->mode = mode;
	rp_buf_init(&b, 512);
	for (uint16_t i = 0; i < rel->natts; i++)
	{
		char	   *q;

		if (rel->cols[i].flags & RP_COL_GENERATED)
			continue;
		q = rp_sql_ident_dup(rel->cols[i].name);
		if (!first)
			rp_buf_put_text(&b, ", ");
		first = false;
		rp_buf_put_text(&b, q);
		rp_free(q);
	}
	st->cols = rp_dupbuf(&b);
	if (t->nkey > 0)
	{
		char		n[192];

		snprintf(n, sizeof(n), "pg_temp.rp_snap_%u", rel->relid);
		st->stage = rp_strndup(n, strlen(n));
	}

	if (strcmp(mode, "copy") == 0)
	{
		st->into = rp_strndup(st->qname, strlen(st->qname));
		if (t->nkey > 0)
		{
			/* a resumed heap-order copy may bring rows again: upsert those */
			rp_mirror_snap_stage_ddl(&b, st);
			st->upsert_ddl = rp_dupbuf(&b);
			rp_mirror_snap_upsert_sql(pg, &b, st, rel, t);
			rp_buf_put_text(&b, "; TRUNCATE ");
			rp_buf_put_text(&b, st->stage);
			st->upsert_after = rp_dupbuf(&b);
		}
	}
	else if (strcmp(mode, "replace") == 0)
		rp_mirror_snap_plan_replace(pg, st, &b);
	else if (strcmp(mode, "history") == 0)
	{
		if (rp_mirror_snap_plan_history(pg, st, ctx, t, &b) < 0)
		{
			rp_buf_free(&b);
			rp_mirror_snap_table_free(st);
			return NULL;
		}
	}
	else
		rp_mirror_snap_plan_merge(pg, st, rel, t, &b);
	rp_buf_free(&b);
	s->tables = rp_realloc(s->tables, sizeof(*s->tables) * (size_t) (s->ntables + 1));
	s->tables[s->ntables++] = st;
	return st;
}

/* Frame records -> COPY text lines of the applied columns. */
static int
rp_mirror_snap_text_rows(const RpSnapshotCtx *ctx, RpBuf *out)
{
	RpDecoder	dec;
	RpRecord	rec;
	int			rc;

	rp_decoder_init(&dec);
	if (!rp_decoder_frame(&dec, ctx->frame, ctx->frame_len))
	{
		rp_decoder_free(&dec);
		return rp_fail(RP_HALT_MALFORMED, "snapshot chunk of table \"%s\".\"%s\" does not decode",
					   ctx->rel->schema, ctx->rel->name);
	}
	while ((rc = rp_decoder_next(&dec, &rec)) > 0)
	{
		bool		first = true;

		if (rec.tag != RP_TAG_INSERT)
		{
			if (rec.tag == RP_TAG_RELATION && rec.u.relation.previous)
				rp_relation_free(rec.u.relation.previous);
			continue;
		}
		for (uint16_t i = 0; i < rec.u.change.new_tuple.natts; i++)
		{
			const RpDatum *d = &rec.u.change.new_tuple.datums[i];
			const RpColumn *c = &rec.u.change.rel->cols[i];

			if (c->flags & RP_COL_GENERATED)
				continue;
			if (!first)
				rp_buf_put_char(out, '\t');
			first = false;
			if (d->kind != RP_DATUM_VALUE)
				rp_buf_put_text(out, "\\N");
			else
			{
				RpBuf		v;

				rp_buf_init(&v, 64);
				rp_pgtext_value(&v, c->encoding, d->data, d->len);
				rp_pgtext_copy_escape(out, v.data, v.len);
				rp_buf_free(&v);
			}
		}
		rp_buf_put_char(out, '\n');
	}
	if (rc < 0)
		rp_fail(RP_HALT_MALFORMED, "snapshot chunk of table \"%s\".\"%s\" does not decode: %s",
				ctx->rel->schema, ctx->rel->name, dec.error);
	rp_decoder_free(&dec);
	return rc;
}

static int
rp_mirror_snap_copy(PGconn *conn, const RpMirrorSnapTable *st, const char *into, const RpSnapshotCtx *ctx)
{
	bool		binary = ctx->copy_data != NULL;
	RpBuf		data;
	PGresult   *res;
	int			rc;

	if (rp_mirror_copy_start(conn, into, st->cols, binary, &res) < 0)
	{
		rc = rp_mirror_snap_fail(res, "COPY", st->t);
		PQclear(res);
		return rc;
	}
	if (binary)
	{
		/* the chunk's tuples framed by COPY's header and trailer */
		rp_buf_init(&data, 32);
		rp_pgbin_header(&data);
		rc = PQputCopyData(conn, data.data, (int) data.len) == 1 &&
			(ctx->copy_len == 0 || PQputCopyData(conn, (const char *) ctx->copy_data, (int) ctx->copy_len) == 1)
			? 0 : -1;
		rp_buf_reset(&data);
		rp_pgbin_trailer(&data);
		if (rc == 0 && PQputCopyData(conn, data.data, (int) data.len) != 1)
			rc = -1;
	}
	else
	{
		rp_buf_init(&data, ctx->frame_len + 1024);
		if (rp_mirror_snap_text_rows(ctx, &data) < 0)
		{
			rp_buf_free(&data);
			PQputCopyEnd(conn, "replicant: chunk does not decode");
			while ((res = PQgetResult(conn)) != NULL)
				PQclear(res);
			return -1;
		}
		rc = data.len == 0 || PQputCopyData(conn, data.data, (int) data.len) == 1 ? 0 : -1;
	}
	rp_buf_free(&data);
	if (rp_mirror_copy_end(conn, &res) < 0 || rc < 0)
		rc = rp_mirror_snap_fail(res, "COPY", st->t);
	PQclear(res);
	return rc;
}

static int
rp_mirror_snap_chunk(RpSink *sink, RpDelivery *dl, const RpSnapshotCtx *ctx)
{
	RpMirrorSnap *s = ((RpMirror *) sink->priv)->snap;
	RpMirrorSnapTable *st;
	PGconn	   *conn;
	char		relid[16],
				sysid[24],
				tli[16],
				rows[24];
	const char *vals[9];
	const char *into,
			   *after,
			   *ddl;

	pthread_mutex_lock(&s->lock);
	st = rp_mirror_snap_plan(s, ctx);
	conn = st ? rp_mirror_snap_conn(s, ctx->worker) : NULL;
	pthread_mutex_unlock(&s->lock);
	if (conn == NULL)
		return -1;

	/* copy mode: rows that may be stored already go through the stage */
	into = st->into;
	after = st->after;
	ddl = st->stage_ddl;
	if (ctx->may_repeat && st->upsert_after)
	{
		into = st->stage;
		after = st->upsert_after;
		ddl = st->upsert_ddl;
	}
	if (rp_mirror_snap_exec(conn, "BEGIN", 0, NULL, "BEGIN", st->t) < 0)
		goto fail;
	if (ddl && !st->staged[ctx->worker])
	{
		if (rp_mirror_snap_exec(conn, ddl, 0, NULL, "creating the snapshot staging table", st->t) < 0)
			goto fail;
		st->staged[ctx->worker] = true;
	}
	if ((ctx->nrows > 0 && rp_mirror_snap_copy(conn, st, into, ctx) < 0) ||
		(ctx->nrows > 0 && after &&
		 rp_mirror_snap_exec(conn, after, 0, NULL, "merging a snapshot chunk", st->t) < 0))
		goto fail;

	snprintf(relid, sizeof(relid), "%u", ctx->rel->relid);
	snprintf(sysid, sizeof(sysid), "%" PRIu64, ctx->origin->system_id);
	snprintf(tli, sizeof(tli), "%u", ctx->origin->timeline);
	snprintf(rows, sizeof(rows), "%" PRIu64, ctx->first_seq + ctx->nrows);
	vals[0] = sysid;
	vals[1] = s->pg->opts.slot;
	vals[2] = relid;
	vals[3] = tli;
	vals[4] = st->qname;
	vals[5] = st->mode;
	vals[6] = st->retire_sql;
	vals[7] = ctx->progress_token;
	vals[8] = rows;
	/* the token commits with the rows it vouches for */
	if (rp_mirror_snap_exec(conn,
							rp_mirror_bk(s->pg, "INSERT INTO @bk.snapshot_progress AS p (system_id, slot, relid, timeline,"
										 " dest_table, mode, retire_sql, token, rows) VALUES ($1, $2, $3::oid, $4::int, $5, $6, $7, $8, $9::bigint)"
										 " ON CONFLICT (system_id, slot, relid) DO UPDATE SET token = EXCLUDED.token,"
										 " rows = EXCLUDED.rows, updated_at = pg_catalog.now()"),
							9, vals, "storing snapshot progress", st->t) < 0)
		goto fail;
	if (rp_mirror_snap_exec(conn, "COMMIT", 0, NULL, "COMMIT", st->t) < 0)
		goto fail;
	return 0;

fail:
	{
		PGresult   *res = PQexec(conn, "ROLLBACK");

		PQclear(res);
	}
	return -1;
}

static int
rp_mirror_snap_progress(RpSink *sink, const RpRelation *rel, char **token)
{
	RpMirrorSnap *s = ((RpMirror *) sink->priv)->snap;
	RpMirror   *pg = s->pg;
	char		relid[16];
	const char *vals[2] = {pg->opts.slot, relid};
	PGresult   *res;
	int			rc = 0;

	if (!s->setup_done)
	{
		if (rp_mirror_exec(pg, rp_mirror_bk(pg, rp_mirror_snap_setup_sql), "creating the snapshot progress table", NULL) < 0)
			return -1;
		s->setup_done = true;
	}
	snprintf(relid, sizeof(relid), "%u", rel->relid);
	res = PQexecParams(pg->conn, rp_mirror_bk(pg, "SELECT token FROM @bk.snapshot_progress WHERE slot = $1 AND relid = $2::oid"),
					   2, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_mirror_snap_fail(res, "reading snapshot progress", NULL);
	else if (PQntuples(res) > 0)
	{
		*token = rp_strndup(PQgetvalue(res, 0, 0), strlen(PQgetvalue(res, 0, 0)));
		rc = 1;
	}
	PQclear(res);
	return rc;
}

/*
 * Every table is copied: in one synchronous transaction, retire what each
 * merged table's snapshot did not see, forget the progress, and set the
 * checkpoint to the consistent point (commits at or after lsn are the
 * stream's, so the dedup watermark is just below it).
 */
static int
rp_mirror_snap_complete(RpSink *sink, const RpCheckpoint *ck)
{
	uint64_t	lsn = ck->end_lsn;
	RpMirrorSnap *s = ((RpMirror *) sink->priv)->snap;
	RpMirror   *pg = s->pg;
	const char *vals[5];
	PGresult   *res;
	char		commit[24],
				end[24];
	int			n;

	if (!s->setup_done)
	{
		if (rp_mirror_exec(pg, rp_mirror_bk(pg, rp_mirror_snap_setup_sql), "creating the snapshot progress table", NULL) < 0)
			return -1;
		s->setup_done = true;
	}
	if (rp_mirror_exec(pg, "BEGIN", "BEGIN", NULL) < 0)
		return -1;
	pg->in_txn = true;
	vals[0] = pg->opts.slot;
	res = PQexecParams(pg->conn,
					   rp_mirror_bk(pg, "SELECT retire_sql, dest_table, system_id, timeline FROM @bk.snapshot_progress"
									" WHERE slot = $1 ORDER BY relid FOR UPDATE"), 1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rp_mirror_snap_fail(res, "reading snapshot progress", NULL);
		PQclear(res);
		goto fail;
	}
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
		if (!PQgetisnull(res, i, 0) &&
			rp_mirror_exec(pg, PQgetvalue(res, i, 0), "retiring rows the snapshot did not see", NULL) < 0)
		{
			PQclear(res);
			goto fail;
		}
	{
		/*
		 * no progress rows: nothing was selected, the origin is the running
		 * snapshot's
		 */
		char		sysid[24],
					tli[16];

		snprintf(sysid, sizeof(sysid), "%" PRIu64, ck->system_id);
		snprintf(tli, sizeof(tli), "%u", ck->timeline);
		rp_lsn_format(lsn > 0 ? lsn - 1 : 0, commit);
		rp_lsn_format(lsn, end);
		vals[0] = n > 0 ? PQgetvalue(res, 0, 2) : sysid;
		vals[1] = pg->opts.slot;
		vals[2] = n > 0 ? PQgetvalue(res, 0, 3) : tli;
		vals[3] = commit;
		vals[4] = end;
		if (rp_mirror_exec_params(pg, rp_mirror_bk(pg, "INSERT INTO @bk.checkpoint AS c (system_id, slot, timeline, commit_lsn, end_lsn)"
												   " VALUES ($1, $2, $3::int, $4::pg_lsn, $5::pg_lsn)"
												   " ON CONFLICT (system_id, slot) DO UPDATE SET timeline = EXCLUDED.timeline,"
												   " commit_lsn = GREATEST(c.commit_lsn, EXCLUDED.commit_lsn),"
												   " end_lsn = GREATEST(c.end_lsn, EXCLUDED.end_lsn), updated_at = pg_catalog.now()"),
								  5, vals, "setting the checkpoint", NULL) < 0)
		{
			PQclear(res);
			goto fail;
		}
	}
	PQclear(res);
	vals[0] = pg->opts.slot;
	if (rp_mirror_exec_params(pg, rp_mirror_bk(pg, "DELETE FROM @bk.snapshot_progress WHERE slot = $1"), 1, vals,
							  "clearing snapshot progress", NULL) < 0)
		goto fail;
	if (rp_mirror_exec(pg, "COMMIT", "COMMIT", NULL) < 0)
		goto fail;
	pg->in_txn = false;
	/* the copy sessions are done */
	for (int i = 0; i < RP_MIRROR_SNAP_MAX_WORKERS; i++)
		if (s->conns[i])
		{
			PQfinish(s->conns[i]);
			s->conns[i] = NULL;
		}
	return 0;

fail:
	res = PQexec(pg->conn, "ROLLBACK");
	PQclear(res);
	pg->in_txn = false;
	return -1;
}

void
rp_mirror_snapshot_install(RpSink *sink)
{
	RpMirror   *pg = sink->priv;

	pg->snap = rp_malloc0(sizeof(RpMirrorSnap));
	pg->snap->pg = pg;
	pthread_mutex_init(&pg->snap->lock, NULL);
	sink->handle_snapshot = rp_mirror_snap_chunk;
	sink->handle_snapshot_complete = rp_mirror_snap_complete;
	sink->snapshot_progress = rp_mirror_snap_progress;
	sink->snapshot_raw = true;
	sink->snapshot_parallel = true;
	sink->snapshot_heap_order = true;
}

static void
rp_mirror_snap_table_free(RpMirrorSnapTable *st)
{
	char	   *strs[] = {st->qname, st->cols, st->mode, st->into, st->after, st->stage, st->stage_ddl,
	st->upsert_ddl, st->upsert_after, st->retire_sql};

	for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++)
		if (strs[k])
			rp_free(strs[k]);
	rp_free(st);
}

void
rp_mirror_snapshot_free(RpMirror *pg)
{
	RpMirrorSnap *s = pg->snap;

	if (s == NULL)
		return;
	for (int i = 0; i < RP_MIRROR_SNAP_MAX_WORKERS; i++)
		if (s->conns[i])
			PQfinish(s->conns[i]);
	for (int i = 0; i < s->ntables; i++)
		rp_mirror_snap_table_free(s->tables[i]);
	if (s->tables)
		rp_free(s->tables);
	pthread_mutex_destroy(&s->lock);
	rp_free(s);
	pg->snap = NULL;
}
