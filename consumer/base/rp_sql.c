/*
 * rp_sql.c
 *    The identifier quoter and the statement runner (see rp_sql.h).
 */
#include "rp_alloc.h"

#include <string.h>

#include "base/rp_sql.h"

void
rp_sql_ident(RpBuf *b, const char *name)
{
	rp_buf_put_char(b, '"');
	for (; *name; name++)
	{
		if (*name == '"')
			rp_buf_put_char(b, '"');
		rp_buf_put_char(b, *name);
	}
	rp_buf_put_char(b, '"');
}

char	   *
rp_sql_ident_dup(const char *name)
{
	RpBuf		b;
	char	   *q;

	rp_buf_init(&b, strlen(name) + 3);
	rp_sql_ident(&b, name);
	q = rp_strndup(b.data, b.len);
	rp_buf_free(&b);
	return q;
}

PGresult   *
rp_sql_run(PGconn *conn, const char *sql, int n, const char *const *vals, RpSqlFailFn fail,
		   void *arg)
{
	PGresult   *res = n == RP_SQL_SIMPLE ? PQexec(conn, sql)
	: PQexecParams(conn, sql, n, NULL, vals, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;
	fail(arg, conn, res);
	PQclear(res);
	return NULL;
}

int
rp_sql_exec(PGconn *conn, const char *sql, int n, const char *const *vals, RpSqlFailFn fail,
			void *arg)
{
	PGresult   *res = rp_sql_run(conn, sql, n, vals, fail, arg);

	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

bool
rp_sql_in_recovery(PGconn *conn)
{
	PGresult   *res = PQexec(conn, "SELECT pg_catalog.pg_is_in_recovery()");
	bool		yes = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	strcmp(PQgetvalue(res, 0, 0), "t") == 0;

	PQclear(res);
	return yes;
}
