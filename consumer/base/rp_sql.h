/*
 * rp_sql.h
 *    The one identifier quoter and the one statement runner of the
 *    library (issue 42): every stage that writes SQL quotes names here,
 *    and every statement whose failure a caller words goes through here,
 *    so that both are written, reviewed and fixed once.
 *
 * Errors stay value-free (G4): the runner hands the failed result to the
 * caller's own mapping, which words it by what the statement was for and
 * its SQLSTATE, never by the server's text (which can quote values).
 */
#ifndef RP_SQL_H
#define RP_SQL_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "rp_buf.h"

/*
 * name as a quoted SQL identifier, appended to b: in double quotes, an
 * embedded double quote doubled (PostgreSQL's quote_ident, always quoted).
 * No session is needed: in every client encoding PostgreSQL supports, the
 * byte '"' is never part of a multibyte character.
 */
extern void rp_sql_ident(RpBuf *b, const char *name);

/* The same as a string of its own (rp_free). */
extern char *rp_sql_ident_dup(const char *name);

/*
 * A failed statement, worded by the caller: called with its argument, the
 * session and the result (NULL when libpq returned none); returns -1 after
 * rp_fail() (or its own report).  The runner clears the result after.
 */
typedef int (*RpSqlFailFn) (void *arg, PGconn *conn, PGresult *res);

/* n for a simple query (PQexec: no parameters, may hold several statements) */
#define RP_SQL_SIMPLE (-1)

/*
 * Run sql with n text parameters (PQexecParams), or as a simple query
 * (n == RP_SQL_SIMPLE).  The result when its status is TUPLES_OK or
 * COMMAND_OK (the caller clears it); else NULL once fail(arg, conn, res)
 * has worded the failure.
 */
extern PGresult *rp_sql_run(PGconn *conn, const char *sql, int n, const char *const *vals,
							RpSqlFailFn fail, void *arg);

/* rp_sql_run for a statement whose result is not wanted: 0, or -1. */
extern int	rp_sql_exec(PGconn *conn, const char *sql, int n, const char *const *vals,
						RpSqlFailFn fail, void *arg);

/*
 * Is the server a standby (pg_is_in_recovery)?  false when the query
 * fails: the caller's own statements then say what is wrong.
 */
extern bool rp_sql_in_recovery(PGconn *conn);

#endif							/* RP_SQL_H */
