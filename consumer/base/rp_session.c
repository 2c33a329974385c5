/*
 * rp_session.c
 *    Opening a source session (see rp_session.h).
 */
#include "rp_alloc.h"

#include <string.h>

#include "base/rp_session.h"
#include "base/rp_status.h"

/* the connection keywords a spec can set, plus dbname and the terminator */
#define RP_SESSION_MAX_KEYS 5

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
	keys[n] = NULL;
	vals[n] = NULL;
	conn = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		rp_error_first_line(err->message, sizeof(err->message), PQerrorMessage(conn));
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
		const char *state = PQresultErrorField(err.result, PG_DIAG_SQLSTATE);

		rp_fail(RP_HALT_NONE, "the session setup failed on the %s (SQLSTATE %s)",
				side, state ? state : "none");
		PQclear(err.result);
	}
	else
		rp_fail(RP_HALT_NONE, "could not connect to the %s: %s", side, err.message);
	return NULL;
}
