/*
 * rp_session.c
 *    Opening a source session (see rp_session.h).
 */
#include "rp_alloc.h"

#include <string.h>

#include "base/rp_pgerr.h"
#include "base/rp_session.h"
#include "base/rp_status.h"

/* the connection keywords a spec can set, plus dbname and the terminator */
#define RP_SESSION_MAX_KEYS 9

/*
 * Notices (and warnings) can quote row values: DETAIL and CONTEXT lines,
 * a trigger's RAISE.  None of our sessions needs them, so none reaches
 * stderr (G6: no values in our logs).
 */
static void
rp_session_notice(void *arg, const PGresult *res)
{
}

static void
rp_session_key(const char **keys, const char **vals, int *n, const char *key, const char *val)
{
	if (val == NULL)
		return;
	keys[*n] = key;
	vals[*n] = val;
	(*n)++;
}

/*
 * search_path first, so that even the session's own settings run with
 * nothing but pg_catalog in scope; then the spec's.
 */
static bool
rp_session_setup(PGconn *conn, const RpSessionSpec *spec, RpSessionError *err)
{
	static const char pin[] = "SET search_path = ''";
	size_t		len = strlen(pin) + (spec->settings ? strlen(spec->settings) + 2 : 0);
	char	   *sql = rp_malloc(len + 1);
	PGresult   *res;
	ExecStatusType st;

	memcpy(sql, pin, sizeof(pin));
	if (spec->settings)
	{
		strcat(sql, "; ");
		strcat(sql, spec->settings);
	}
	res = PQexec(conn, sql);
	rp_free(sql);
	st = PQresultStatus(res);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
	{
		PQclear(res);
		return true;
	}
	err->result = res;
	err->lost = PQstatus(conn) != CONNECTION_OK;
	rp_error_first_line(err->message, sizeof(err->message), PQerrorMessage(conn));
	return false;
}

/*
 * PQconnectdbParams, with verbose errors: a connection the server refuses
 * has no result to ask for its SQLSTATE, but libpq words the refusal with
 * the connection's verbosity, so it is set before the real attempt.  The
 * started attempt has only opened its socket (nothing sent, nothing in the
 * server's log); PQreset makes the attempt in full, every host and
 * connect_timeout as libpq does them, and keeps the verbosity.
 */
static PGconn *
rp_session_connect(const char *const *keys, const char *const *vals)
{
	PGconn	   *conn = PQconnectStartParams(keys, vals, 1);

	if (conn == NULL || PQstatus(conn) == CONNECTION_BAD)
		return conn;
	PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
	PQreset(conn);
	PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
	return conn;
}

/*
 * A failed connection: libpq's line (the one with the server's SQLSTATE),
 * and whether a retry could mend it.  A refusal no retry mends carries its
 * hint.
 */
static void
rp_session_refused(PGconn *conn, RpSessionError *err)
{
	char		line[400];
	const char *hint;

	rp_pgerr_conn_line(conn ? PQerrorMessage(conn) : "out of memory", line, sizeof(line), err->sqlstate);
	if (conn && PQconnectionNeedsPassword(conn))
		snprintf(err->sqlstate, sizeof(err->sqlstate), "28P01");
	err->permanent = rp_pgerr_conn_permanent(err->sqlstate);
	hint = err->permanent ? rp_pgerr_conn_hint(err->sqlstate) : NULL;
	snprintf(err->message, sizeof(err->message), "%s%s%s", line, hint ? "; " : "", hint ? hint : "");
}

PGconn	   *
rp_session_open(const RpSessionSpec *spec, RpSessionError *err)
{
	const char *keys[RP_SESSION_MAX_KEYS + 1];
	const char *vals[RP_SESSION_MAX_KEYS + 1];
	int			n = 0;
	PGconn	   *conn;

	memset(err, 0, sizeof(*err));

	/*
	 * expand_dbname: the first dbname may be a whole conninfo string or URI,
	 * its keywords taking that place in the list; the keywords after it
	 * override the user's.
	 */
	rp_session_key(keys, vals, &n, "dbname", spec->conninfo ? spec->conninfo : "");
	rp_session_key(keys, vals, &n, "replication", spec->replication);
	rp_session_key(keys, vals, &n, "application_name", spec->application_name);
	rp_session_key(keys, vals, &n, "fallback_application_name", spec->fallback_application_name);
	rp_session_key(keys, vals, &n, "host", spec->host);
	rp_session_key(keys, vals, &n, "port", spec->port);
	rp_session_key(keys, vals, &n, "hostaddr", spec->hostaddr);
	rp_session_key(keys, vals, &n, "target_session_attrs", spec->target_session_attrs);
	keys[n] = NULL;
	vals[n] = NULL;
	conn = rp_session_connect(keys, vals);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		rp_session_refused(conn, err);
		PQfinish(conn);
		return NULL;
	}
	PQsetNoticeReceiver(conn, rp_session_notice, NULL);
	if (!rp_session_setup(conn, spec, err))
	{
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

PGconn	   *
rp_session_open_side(const RpSessionSpec *spec, const char *side)
{
	RpSessionError err;
	PGconn	   *conn = rp_session_open(spec, &err);

	if (conn)
		return conn;
	if (err.result)
	{
		char		code[64],
					said[256];

		rp_pgerr_code(PQresultErrorField(err.result, PG_DIAG_SQLSTATE), code, sizeof(code));
		rp_fail(RP_HALT_NONE, "the session setup failed on the %s (%s)%s",
				side, code, rp_pgerr_said(err.result, said, sizeof(said)));
		PQclear(err.result);
	}
	else
		rp_fail(rp_session_halt(&err), "could not connect to the %s: %s", side, err.message);
	return NULL;
}

RpHalt
rp_session_halt(const RpSessionError *err)
{
	return err->permanent ? RP_HALT_CONFIG : RP_HALT_NONE;
}
