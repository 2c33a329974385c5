/*
 * rp_mirror_pipeline.c
 *    The short way for small effect sets: prepared statements, one
 *    execution per key, sent in libpq's pipeline mode.
 *
 * The staging path (rp_mirror_apply.c) costs a few statements and round
 * trips per table whatever the number of rows: a COPY into a staging
 * table, then a DELETE, an UPDATE and an INSERT joined to it.  A batch of
 * a thousand transactions over a schema of a thousand tables touches most
 * of them with a handful of rows, and that cost, about a millisecond a
 * table, was all of its apply time.  Here a table whose pending set is
 * small (rp_mirror_pipeline_wants) is applied with statements prepared
 * once per session and table (an upsert, a delete, an insert for a table
 * without identity), each key one execution; the executions of every
 * small table of the batch go down one pipeline, read back a window at a
 * time, so the batch pays one round trip per window, not per table.
 *
 * Values are parameters, never text in the statement: in binary (the
 * send formats of rp_pgbin.h) when the table's COPY would be binary, else
 * as text, typed by the server from the column they are compared with or
 * inserted into.  An upsert leaves a row whose values would not change
 * alone, comparing exact images as the staging path does
 * (rp_mirror_sql_changed).  Rows with unchanged TOAST columns are not
 * taken here: the caller updates them one by one.
 *
 * A statement's name is kept on its table while the session has it; a
 * statement the table no longer wants (its description changed, the
 * transaction that created its table rolled back) is deallocated at the
 * head of the next pipeline (rp_mirror_session_drop_statements).
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "values/rp_pgbin.h"
#include "values/rp_pgtext.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

/*
 * A table goes the short way with at most --pipeline-max effects
 * (RP_MIRROR_PIPELINE_DEFAULT: rp_mirror.h says how it was measured) and
 * at most this many bytes of rows: a parameter is copied into libpq's
 * output buffer whole, where staging sends a large value in slices (G5).
 */
#define RP_MIRROR_PIPELINE_MAX_BYTES (256 * 1024)

/*
 * Results are read back after this many statements: the server's answers
 * to a window fit in the socket buffers, so neither side blocks on a full
 * one while the other waits for it to read.
 */
#define RP_MIRROR_PIPELINE_WINDOW 256

typedef enum RpPipeKind
{
	RP_PIPE_SETTING,
	RP_PIPE_DEALLOCATE,
	RP_PIPE_PREPARE,
	RP_PIPE_EXECUTE
}			RpPipeKind;

/* A statement sent and not yet answered. */
typedef struct RpPipeSent
{
	RpMirrorTable *t;			/* NULL for a SET or a DEALLOCATE */
	uint8_t		kind;			/* RpPipeKind */
	uint8_t		stmt;			/* RpMirrorStmt of a PREPARE or EXECUTE */
	int			effect;			/* of an EXECUTE: t->effects[effect] */
}			RpPipeSent;

typedef struct RpPipe
{
	RpMirror   *pg;
	RpPipeSent	sent[RP_MIRROR_PIPELINE_WINDOW];
	int			nsent;
	PGresult   *err;			/* the first error, with what it was for */
	RpPipeSent	err_at;
	bool		lost;			/* the session failed: stop reading */
	/* fresh rows whose key was there after all: upserted in a second round */
	RpPipeSent *retry;
	int			nretry;
	int			capretry;
	/* one statement's parameters */
	RpBuf		vals;
	size_t	   *offs;
	int		   *lens;
	int		   *fmts;
	const char **ptrs;
	int			cap;
} RpPipe;

static const char *const rp_pipe_stmt_what[RP_MIRROR_NSTMTS] = {
	[RP_MIRROR_STMT_UPSERT] = "applying upserts",
	[RP_MIRROR_STMT_DELETE] = "applying deletes",
	[RP_MIRROR_STMT_INSERT] = "applying inserts",
	[RP_MIRROR_STMT_FRESH] = "applying inserts",
};

bool
rp_mirror_pipeline_wants(const RpMirror *pg, const RpMirrorTable *t)
{
	int			max = pg->opts.pipeline_max ? pg->opts.pipeline_max : RP_MIRROR_PIPELINE_DEFAULT;
	int			full = 0;

	if (max < 0 || t->history || t->full_match || t->has_refs || t->arena.len > RP_MIRROR_PIPELINE_MAX_BYTES)
		return false;
	for (int e = 0; e < t->neffects; e++)
		full += !(t->effects[e].op == RP_EFFECT_UPSERT && t->effects[e].partial);
	return full <= max;
}

/* ---- the statements --------------------------------------------------------- */

/* "$1, $2, ...": n parameters */
static void
rp_pipe_params(RpBuf *sql, int n)
{
	char		tmp[16];

	for (int i = 0; i < n; i++)
	{
		snprintf(tmp, sizeof(tmp), "%s$%d", i ? ", " : "", i + 1);
		rp_buf_put_text(sql, tmp);
	}
}

/*
 * The statement's text; its parameters are, in column order, every applied
 * column (upsert, insert) or the key columns in key order (delete).
 */
static void
rp_pipe_stmt_sql(RpMirror *pg, const RpMirrorTable *t, RpMirrorStmt stmt, RpBuf *sql)
{
	int			napplied;
	char		tmp[16];

	switch (stmt)
	{
		case RP_MIRROR_STMT_DELETE:
			rp_buf_put_text(sql, "DELETE FROM ");
			rp_buf_put_text(sql, t->qrel);
			rp_buf_put_text(sql, " WHERE ");
			for (int k = 0; k < t->nkey; k++)
			{
				char	   *qc = rp_sql_ident_dup(t->rel->cols[t->keycols[k]].name);

				snprintf(tmp, sizeof(tmp), " = $%d", k + 1);
				if (k)
					rp_buf_put_text(sql, " AND ");
				rp_buf_put_text(sql, qc);
				rp_buf_put_text(sql, tmp);
				rp_free(qc);
			}
			break;
		case RP_MIRROR_STMT_UPSERT:
		case RP_MIRROR_STMT_INSERT:
		case RP_MIRROR_STMT_FRESH:
			rp_buf_put_text(sql, "INSERT INTO ");
			rp_buf_put_text(sql, t->qname);
			rp_buf_put_text(sql, " AS rp_t (");
			napplied = rp_mirror_sql_cols(pg, sql, t->rel, NULL, 0, NULL);

			/*
			 * the source's values of an identity column GENERATED ALWAYS are
			 * kept, as COPY keeps them
			 */
			rp_buf_put_text(sql, ") OVERRIDING SYSTEM VALUE VALUES (");
			rp_pipe_params(sql, napplied);
			rp_buf_put_char(sql, ')');

			/*
			 * a key first seen as an INSERT is new to the table but where a
			 * snapshot or a divergence left it: such a row is not inserted
			 * (its command tag says 0), and goes again as an upsert
			 */
			if (stmt == RP_MIRROR_STMT_FRESH)
			{
				rp_buf_put_text(sql, " ON CONFLICT (");
				rp_mirror_sql_cols(pg, sql, t->rel, t->keycols, t->nkey, NULL);
				rp_buf_put_text(sql, ") DO NOTHING");
			}
			if (stmt == RP_MIRROR_STMT_UPSERT)
			{
				int			nvals;
				bool	   *cols = rp_mirror_value_cols(t, &nvals);

				rp_buf_put_text(sql, " ON CONFLICT (");
				rp_mirror_sql_cols(pg, sql, t->rel, t->keycols, t->nkey, NULL);
				rp_buf_put_text(sql, nvals ? ") DO UPDATE SET " : ") DO NOTHING");
				rp_mirror_sql_set(sql, t, cols, "EXCLUDED");
				/* a row that would not change keeps its tuple */
				if (nvals)
				{
					rp_buf_put_text(sql, " WHERE true");
					rp_mirror_sql_changed(pg, sql, t, cols, "rp_t", "EXCLUDED", NULL);
				}
				rp_free(cols);
			}
			break;
		case RP_MIRROR_NSTMTS:
			break;
	}
	rp_buf_put_char(sql, '\0');
}

/* ---- sending and reading back ----------------------------------------------- */

/* Read the answers to what was sent (after a flush request or a sync). */
static void
rp_pipe_read(RpPipe *p)
{
	PGconn	   *conn = p->pg->conn;

	for (int i = 0; i < p->nsent && !p->lost; i++)
	{
		RpPipeSent *s = &p->sent[i];
		PGresult   *res = PQgetResult(conn);
		PGresult   *extra;
		ExecStatusType st = PQresultStatus(res);
		bool		ok = res != NULL && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);

		if (s->kind == RP_PIPE_EXECUTE && s->stmt == RP_MIRROR_STMT_FRESH && ok &&
			strcmp(PQcmdTuples(res), "0") == 0)
		{
			if (p->nretry == p->capretry)
			{
				p->capretry = p->capretry ? p->capretry * 2 : 16;
				p->retry = rp_realloc(p->retry, sizeof(RpPipeSent) * (size_t) p->capretry);
			}
			p->retry[p->nretry++] = *s;
		}
		if (s->kind == RP_PIPE_PREPARE && !ok && s->t->stmts[s->stmt])
		{
			/* not prepared (failed, or skipped after an earlier error) */
			rp_free(s->t->stmts[s->stmt]);
			s->t->stmts[s->stmt] = NULL;
		}
		if (res == NULL || (!ok && st != PGRES_PIPELINE_ABORTED && p->err == NULL))
		{
			p->err = res;
			p->err_at = *s;
			res = NULL;
			if (p->err == NULL || PQstatus(conn) != CONNECTION_OK)
				p->lost = true;
		}
		PQclear(res);
		/* each statement's answers end with a NULL */
		while (!p->lost && (extra = PQgetResult(conn)) != NULL)
			PQclear(extra);
	}
	p->nsent = 0;
}

static void
rp_pipe_sent(RpPipe *p, RpMirrorTable *t, RpPipeKind kind, int stmt, int effect, int ok)
{
	RpPipeSent	s;

	s.t = t;
	s.kind = (uint8_t) kind;
	s.stmt = (uint8_t) stmt;
	s.effect = effect;
	if (!ok)
	{
		/* libpq could not queue it: the session is gone */
		if (kind == RP_PIPE_PREPARE && t->stmts[stmt])
		{
			rp_free(t->stmts[stmt]);
			t->stmts[stmt] = NULL;
		}
		if (p->err == NULL)
			p->err_at = s;
		p->lost = true;
		return;
	}
	p->sent[p->nsent++] = s;
	if (p->nsent == RP_MIRROR_PIPELINE_WINDOW)
	{
		if (PQsendFlushRequest(p->pg->conn) != 1 || PQflush(p->pg->conn) != 0)
			p->lost = true;
		else
			rp_pipe_read(p);
	}
}

/* t's statement stmt, prepared in the pipeline when the session lacks it. */
static void
rp_pipe_prepare(RpPipe *p, RpMirrorTable *t, RpMirrorStmt stmt)
{
	RpMirror   *pg = p->pg;
	RpBuf		sql;
	char		name[32];

	if (t->stmts[stmt])
		return;
	snprintf(name, sizeof(name), "rp_%c%llu", "udif"[stmt], (unsigned long long) ++pg->stmt_seq);
	t->stmts[stmt] = rp_strndup(name, strlen(name));
	rp_buf_init(&sql, 512);
	rp_pipe_stmt_sql(pg, t, stmt, &sql);
	rp_pipe_sent(p, t, RP_PIPE_PREPARE, stmt, -1, PQsendPrepare(pg->conn, name, sql.data, 0, NULL));
	rp_buf_free(&sql);
}

/* Room for n parameters. */
static void
rp_pipe_reserve(RpPipe *p, int n)
{
	if (n <= p->cap)
		return;
	p->cap = n;
	p->offs = rp_realloc(p->offs, sizeof(size_t) * (size_t) n);
	p->lens = rp_realloc(p->lens, sizeof(int) * (size_t) n);
	p->fmts = rp_realloc(p->fmts, sizeof(int) * (size_t) n);
	p->ptrs = rp_realloc(p->ptrs, sizeof(char *) * (size_t) n);
}

/*
 * Parameter i: d in binary (the column's send format) or as text.  A value
 * with no binary form cannot get here (t->binary says every column has
 * one), so one is a broken invariant, reported rather than sent.
 */
static int
rp_pipe_param(RpPipe *p, const RpMirrorTable *t, int i, int col, const RpDatum *d, bool binary)
{
	const RpColumn *c = &t->rel->cols[col];

	p->fmts[i] = binary;
	if (d->kind != RP_DATUM_VALUE && d->kind != RP_MIRROR_DATUM_TEXT)
	{
		p->lens[i] = -1;		/* NULL */
		return 0;
	}
	if (binary)
	{
		size_t		at = p->vals.len;

		if (rp_pgbin_value(&p->vals, c->encoding, d->data, d->len) < 0)
			return rp_fail(RP_HALT_SINK, "column \"%s\" of table %s: a value has no binary form (encoding %u)",
						   c->name, t->qname, (unsigned) c->encoding);
		p->offs[i] = at + 4;	/* past the field's length word */
		p->lens[i] = (int) (p->vals.len - at - 4);
		return 0;
	}
	p->offs[i] = p->vals.len;
	if (d->kind == RP_MIRROR_DATUM_TEXT)
		rp_buf_put_bytes(&p->vals, d->data, d->len);
	else
		rp_pgtext_value(&p->vals, c->encoding, d->data, d->len);
	p->lens[i] = (int) (p->vals.len - p->offs[i]);
	rp_buf_put_char(&p->vals, '\0');
	return 0;
}

/* Effect e of t as an execution of stmt. */
static int
rp_pipe_execute(RpPipe *p, RpMirrorTable *t, RpMirrorStmt stmt, int e)
{
	const RpEffect *ef = &t->effects[e];
	bool		binary = t->binary && !t->text_datums;
	int			n = 0;

	rp_buf_reset(&p->vals);
	rp_pipe_reserve(p, t->rel->natts + 1);
	if (stmt == RP_MIRROR_STMT_DELETE)
	{
		for (int k = 0; k < t->nkey; k++, n++)
		{
			RpDatum		d;

			rp_mirror_row_get(&t->arena, ef->key_off, k, &d);
			if (rp_pipe_param(p, t, n, t->keycols[k], &d, binary) < 0)
				return -1;
		}
	}
	else
	{
		for (int i = 0; i < t->rel->natts; i++)
		{
			RpDatum		d;

			if (!rp_mirror_applied(&t->rel->cols[i]))
				continue;
			rp_mirror_row_get(&t->arena, ef->row_off, i, &d);
			if (rp_pipe_param(p, t, n++, i, &d, binary) < 0)
				return -1;
		}
	}
	for (int i = 0; i < n; i++)
		p->ptrs[i] = p->lens[i] < 0 ? NULL : p->vals.data + p->offs[i];
	rp_pipe_sent(p, t, RP_PIPE_EXECUTE, stmt, e,
				 PQsendQueryPrepared(p->pg->conn, t->stmts[stmt], n, p->ptrs, p->lens, p->fmts, 0));
	return 0;
}

/* Effects of t that which takes, each as an execution of stmt. */
static int
rp_pipe_each(RpPipe *p, RpMirrorTable *t, RpMirrorStageWhich which, RpMirrorStmt stmt)
{
	bool		any = false;

	for (int e = 0; e < t->neffects && !any; e++)
		any = rp_mirror_stage_wants(&t->effects[e], which);
	if (!any)
		return 0;
	rp_pipe_prepare(p, t, stmt);
	for (int e = 0; e < t->neffects && !p->lost; e++)
		if (rp_mirror_stage_wants(&t->effects[e], which) && rp_pipe_execute(p, t, stmt, e) < 0)
			return -1;
	return 0;
}

/*
 * t's pending effects, but those with unchanged TOAST: deletes first (a
 * key freed in the batch may be another's now under a unique constraint
 * of its own), then keys first seen as an INSERT, then the other upserts.
 * A table without identity has only inserts, each a row of its own.
 */
static int
rp_pipe_table(RpPipe *p, RpMirrorTable *t)
{
	if (t->no_identity)
		return rp_pipe_each(p, t, RP_MIRROR_STAGE_FRESH, RP_MIRROR_STMT_INSERT);
	if (rp_pipe_each(p, t, RP_MIRROR_STAGE_DELETES, RP_MIRROR_STMT_DELETE) < 0 ||
		rp_pipe_each(p, t, RP_MIRROR_STAGE_FRESH, RP_MIRROR_STMT_FRESH) < 0)
		return -1;
	return rp_pipe_each(p, t, RP_MIRROR_STAGE_UPSERTS, RP_MIRROR_STMT_UPSERT);
}

/*
 * A statement is planned once, not at each of its first five executions
 * (the plan cache's custom plans): a table touched by a few rows a batch
 * would have every execution planned.  A lookup by the key, or an insert,
 * has one plan whatever the values.  The session's own setting comes back
 * at the end of the pipeline.
 */
#define RP_PIPE_GENERIC "SET plan_cache_mode = force_generic_plan"
#define RP_PIPE_GENERIC_END "RESET plan_cache_mode"

static void
rp_pipe_setting(RpPipe *p, const char *sql)
{
	if (p->lost)
		return;
	rp_pipe_sent(p, NULL, RP_PIPE_SETTING, 0, -1,
				 PQsendQueryParams(p->pg->conn, sql, 0, NULL, NULL, NULL, NULL, 0));
}

/* Statements no table wants any more, deallocated first. */
static void
rp_pipe_deallocate(RpPipe *p)
{
	RpMirror   *pg = p->pg;
	RpBuf		sql;

	rp_buf_init(&sql, 64);
	for (int i = 0; i < pg->nstale && !p->lost; i++)
	{
		rp_buf_reset(&sql);
		rp_buf_put_text(&sql, "DEALLOCATE ");
		rp_buf_put_text(&sql, pg->stale[i]);	/* our own name: rp_[udi]N */
		rp_buf_put_char(&sql, '\0');
		rp_pipe_sent(p, NULL, RP_PIPE_DEALLOCATE, 0, -1,
					 PQsendQueryParams(pg->conn, sql.data, 0, NULL, NULL, NULL, NULL, 0));
	}
	for (int i = 0; i < pg->nstale; i++)
		rp_free(pg->stale[i]);
	pg->nstale = 0;
	rp_buf_free(&sql);
}

/* End a round: a sync, what was sent read back, and the sync's own answer. */
static void
rp_pipe_sync(RpPipe *p)
{
	PGresult   *res;

	if (p->lost)
		return;
	if (PQpipelineSync(p->pg->conn) != 1)
	{
		p->lost = true;
		return;
	}
	rp_pipe_read(p);
	res = p->lost ? NULL : PQgetResult(p->pg->conn);
	if (PQresultStatus(res) != PGRES_PIPELINE_SYNC)
		p->lost = true;
	PQclear(res);
}

int
rp_mirror_pipeline_apply(RpMirror *pg, RpMirrorTable **tables, int n)
{
	RpPipe		p;
	int			rc = 0;

	if (n == 0 && pg->nstale == 0)
		return 0;
	memset(&p, 0, sizeof(p));
	p.pg = pg;
	rp_buf_init(&p.vals, 1024);
	if (PQenterPipelineMode(pg->conn) != 1)
	{
		rp_buf_free(&p.vals);
		return rp_mirror_fail_result(pg, NULL, "entering pipeline mode", NULL);
	}
	rp_pipe_deallocate(&p);
	rp_pipe_setting(&p, RP_PIPE_GENERIC);
	for (int i = 0; i < n && rc == 0 && !p.lost && p.err == NULL; i++)
		rc = rp_pipe_table(&p, tables[i]);
	rp_pipe_setting(&p, RP_PIPE_GENERIC_END);
	rp_pipe_sync(&p);
	if (rc == 0 && p.nretry > 0 && !p.lost && p.err == NULL)
	{
		/* the second round: fresh rows the table held after all */
		int			nretry = p.nretry;
		RpPipeSent *retry = p.retry;

		p.retry = NULL;
		p.nretry = p.capretry = 0;
		rp_pipe_setting(&p, RP_PIPE_GENERIC);
		for (int i = 0; i < nretry && rc == 0 && !p.lost; i++)
		{
			rp_pipe_prepare(&p, retry[i].t, RP_MIRROR_STMT_UPSERT);
			if (!p.lost)
				rc = rp_pipe_execute(&p, retry[i].t, RP_MIRROR_STMT_UPSERT, retry[i].effect);
		}
		rp_pipe_setting(&p, RP_PIPE_GENERIC_END);
		rp_pipe_sync(&p);
		rp_free(retry);
	}
	if (p.retry)
		rp_free(p.retry);
	if (!p.lost)
		(void) PQexitPipelineMode(pg->conn);
	if (rc == 0 && (p.err || p.lost))
	{
		const char *what = p.err_at.kind == RP_PIPE_SETTING ? "SET"
		: p.err_at.kind == RP_PIPE_DEALLOCATE ? "DEALLOCATE"
		: p.err_at.kind == RP_PIPE_PREPARE ? "preparing a statement"
		: rp_pipe_stmt_what[p.err_at.stmt];

		rc = rp_mirror_fail_result(pg, p.err, what, p.err_at.t);
	}
	PQclear(p.err);
	if (p.lost && pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
	{
		/* a session we cannot follow any more is closed, then opened again */
		PQfinish(pg->conn);
		pg->conn = NULL;
		rp_mirror_set_cancel(pg);
	}
	rp_buf_free(&p.vals);
	if (p.offs)
	{
		rp_free(p.offs);
		rp_free(p.lens);
		rp_free(p.fmts);
		rp_free(p.ptrs);
	}
	return rc;
}
