/*
 * rp_snapsql.c
 *    The snapshot's source sessions and the SQL they share (see
 *    rp_snapsql.h): opening one with the pinned settings, importing the
 *    exported snapshot, value-free errors, quoted names and the keyed
 *    "rows after" clause.
 */
#include "rp_alloc.h"

#include <stdio.h>

#include "base/rp_pgerr.h"
#include "base/rp_session.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"
#include "snapshot/rp_snapsql.h"

int
rp_snap_fail_res(PGresult *res, const char *what, const RpSnapTable *t)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	rp_pgerr_said(res, said, sizeof(said));
	if (t)
		rp_fail(RP_HALT_NONE, "snapshot: %s of table \"%s\".\"%s\" failed (%s)%s",
				what, t->rel->schema, t->rel->name, code, said);
	else
		rp_fail(RP_HALT_NONE, "snapshot: %s failed (%s)%s", what, code, said);
	rp_error_set_sqlstate(state);
	return -1;
}

/* What a statement was for, for rp_snap_fail_sql. */
typedef struct RpSnapStmt
{
	const char *what;
	const RpSnapTable *t;
} RpSnapStmt;

static int
rp_snap_fail_sql(void *arg, PGconn *conn, PGresult *res)
{
	const RpSnapStmt *s = arg;

	return rp_snap_fail_res(res, s->what, s->t);
}

int
rp_snap_exec(PGconn *conn, const char *sql, const char *what, const RpSnapTable *t)
{
	RpSnapStmt	s = {what, t};

	return rp_sql_exec(conn, sql, RP_SQL_SIMPLE, NULL, rp_snap_fail_sql, &s);
}

PGconn	   *
rp_snap_connect(const RpSnapOptions *o)
{
	/*
	 * Pinned output settings (G6) for the columns read as text (the session
	 * pins an empty search_path, so every name is qualified), key order from
	 * the index rather than a sort of the whole table, and physical order
	 * from a plain scan from block 0 (no synchronized or parallel scan).
	 */
	RpSessionSpec spec = {
		.conninfo = o->conninfo,
		.fallback_application_name = o->progname,
		.settings = "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC';"
		" SET IntervalStyle = 'postgres'; SET extra_float_digits = 1;"
		" SET bytea_output = 'hex'; SET lc_monetary = 'C'; SET enable_sort = off;"
		" SET synchronize_seqscans = off; SET max_parallel_workers_per_gather = 0;"
		" SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0",
	};
	RpSessionError err;
	PGconn	   *conn = rp_session_open(&spec, &err);

	if (conn == NULL && err.result == NULL)
		rp_fail(rp_session_halt(&err), "snapshot: could not connect: %s", err.message);
	else if (conn == NULL)
	{
		rp_snap_fail_res(err.result, "session setup", NULL);
		PQclear(err.result);
	}
	return conn;
}

int
rp_snap_import(PGconn *conn, const char *snapname)
{
	char	   *lit = PQescapeLiteral(conn, snapname, strlen(snapname));
	char		sql[256];
	int			rc;

	if (lit == NULL)
		return rp_fail(RP_HALT_NONE, "snapshot: quoting the snapshot name failed");
	snprintf(sql, sizeof(sql),
			 "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET TRANSACTION SNAPSHOT %s", lit);
	PQfreemem(lit);
	rc = rp_snap_exec(conn, sql, "importing the exported snapshot", NULL);
	return rc;
}

void
rp_snap_sql_from(RpBuf *sql, PGconn *conn, const RpSnapTable *t)
{
	const RpRelation *rel = t->rel;

	/* ONLY: an inheritance parent's children are tables of their own */
	rp_buf_put_text(sql, t->partitioned ? " FROM " : " FROM ONLY ");
	rp_sql_ident(sql, rel->schema);
	rp_buf_put_char(sql, '.');
	rp_sql_ident(sql, rel->name);
	rp_buf_put_text(sql, " AS rp_t");
}

void
rp_snap_sql_after(RpBuf *sql, PGconn *conn, const RpSnapTable *t, const char *settings, bool after)
{
	const RpRelation *rel = t->rel;

	rp_snap_sql_from(sql, conn, t);
	if (after)
	{
		/*
		 * the key values travel as settings, set from parameters: never in
		 * SQL text
		 */
		rp_buf_put_text(sql, " WHERE (");
		for (int k = 0; k < t->nkey; k++)
		{
			rp_buf_put_text(sql, k ? ", rp_t." : "rp_t.");
			rp_sql_ident(sql, rel->cols[t->keycols[k]].name);
		}
		rp_buf_put_text(sql, ") > (");
		for (int k = 0; k < t->nkey; k++)
		{
			char		n[96];

			snprintf(n, sizeof(n), "%spg_catalog.current_setting('%s.k%d')::", k ? ", " : "",
					 settings, k + 1);
			rp_buf_put_text(sql, n);
			rp_buf_put_text(sql, rel->cols[t->keycols[k]].type_name);
		}
		rp_buf_put_char(sql, ')');
	}
	if (t->nkey > 0)
	{
		/* qualified: the key texts are output columns of the same names */
		rp_buf_put_text(sql, " ORDER BY ");
		for (int k = 0; k < t->nkey; k++)
		{
			rp_buf_put_text(sql, k ? ", rp_t." : "rp_t.");
			rp_sql_ident(sql, rel->cols[t->keycols[k]].name);
		}
	}
}
