/*
 * rp_session.h
 *    Opening a libpq session, the one way (in the manner of
 *    PostgreSQL's GetConnection in src/bin/pg_basebackup/streamutil.c):
 *    the user's conninfo expanded as the dbname keyword, our settings
 *    after it so they win, a notice receiver that keeps the server's text
 *    out of our output, and search_path pinned before anything else runs.
 *
 * The caller words its own errors (they name what the session was for):
 * the helper hands back libpq's first line or the failed setup result.
 */
#ifndef RP_SESSION_H
#define RP_SESSION_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "base/rp_status.h"

typedef struct RpSessionSpec
{
	const char *conninfo;		/* the user's: keywords or a URI; NULL or "":
								 * the PG* environment */
	const char *replication;	/* "database" for the stream, "false" to
								 * override the user's, NULL: as given */
	const char *application_name;	/* set over the user's, or NULL */
	const char *fallback_application_name;	/* when the user names none, or
											 * NULL */

	/*
	 * Set over the user's, or NULL: one server of a multi-host conninfo
	 * (host, port, hostaddr as libpq reports the connection that chose it,
	 * target_session_attrs "any").
	 */
	const char *host;
	const char *port;
	const char *hostaddr;
	const char *target_session_attrs;

	/*
	 * SET commands run in the same round trip as "SET search_path = ''"
	 * (which always comes first), or NULL: the session's pinned GUCs.
	 */
	const char *settings;
} RpSessionSpec;

typedef struct RpSessionError
{
	char		message[512];	/* libpq's message, first line: the connection
								 * failed */
	PGresult   *result;			/* the setup's failed result, else NULL: the
								 * caller clears it */
	bool		lost;			/* the connection was gone when the setup
								 * failed */
	char		sqlstate[6];	/* the server's refusal of the connection, or
								 * "" */
	bool		permanent;		/* refused for good (rp_pgerr.h): the message
								 * ends with what to do */
} RpSessionError;

/*
 * A connected, set-up session, or NULL with *err filled in (a failed
 * setup closes the session).  The caller owns the connection (PQfinish).
 */
extern PGconn *rp_session_open(const RpSessionSpec *spec, RpSessionError *err);

/*
 * The same, for a command with one session on each side (sync-sequences,
 * wait): NULL after rp_fail() naming the side ("source", "destination")
 * and libpq's first line or the setup's SQLSTATE (never a value).
 */
extern PGconn *rp_session_open_side(const RpSessionSpec *spec, const char *side);

/*
 * The halt a failed connection is reported with: RP_HALT_CONFIG for a
 * refusal no retry mends (authentication, a missing database or
 * privilege), RP_HALT_NONE (retried) for anything else.
 */
extern RpHalt rp_session_halt(const RpSessionError *err);

#endif							/* RP_SESSION_H */
