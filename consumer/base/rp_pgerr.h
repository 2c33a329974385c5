/*
 * rp_pgerr.h
 *    A server error told without row values (G4), and whether retrying
 *    can mend it.
 *
 * The SQLSTATE is always shown, with its name where we know it.  The
 * server's primary message is shown too where its class cannot carry a row
 * value (undefined objects, privileges, connection, resources,
 * configuration, ...: the allow-list in rp_pgerr.c) and the server raised it
 * itself, not a function's RAISE or a procedural language, which may put
 * anything in any SQLSTATE.  DETAIL, HINT and CONTEXT are never shown, nor
 * a data exception's (class 22) or a constraint violation's (class 23)
 * message.
 *
 * A failed connection has no result to ask: the session helper connects
 * with verbose errors, so libpq's message carries the SQLSTATE the server
 * sent, and rp_pgerr_conn_line reads it from there.
 */
#ifndef RP_PGERR_H
#define RP_PGERR_H

#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

/* The conventional name of a SQLSTATE ("undefined_object"), or NULL. */
extern const char *rp_pgerr_name(const char *state);

/*
 * May the primary message of an error with this SQLSTATE, raised by this
 * source file and function (the server's F and R fields, NULL when it sent
 * none), be shown?
 */
extern bool rp_pgerr_message_shown(const char *state, const char *file, const char *function);

/*
 * "SQLSTATE 42704 (undefined_object)", "SQLSTATE 22P02" or "no SQLSTATE"
 * into dst.
 */
extern void rp_pgerr_code(const char *state, char *dst, size_t len);

/*
 * ": type \"mood\" does not exist" (the primary message, its first line,
 * after a colon and a blank) when rp_pgerr_message_shown allows it, else
 * "": for the end of a line that already names what failed and the
 * SQLSTATE.  dst is returned.
 */
extern const char *rp_pgerr_said(const PGresult *res, char *dst, size_t len);

/*
 * The SQLSTATEs a server answers a connection with that no retry mends:
 * authentication (class 28), a missing database (3D000), a missing
 * privilege (42501: no REPLICATION, no CONNECT).  "too many connections"
 * (53300) and "starting up" or "shutting down" (57P03) pass.
 */
extern bool rp_pgerr_conn_permanent(const char *state);

/* What to do about a permanent connection failure, or NULL. */
extern const char *rp_pgerr_conn_hint(const char *state);

/*
 * From a failed connection's libpq message (verbose: "...failed: FATAL:
 * 28P01: password ..."): its first line that carries a SQLSTATE, or else
 * its first line, with the code taken out and put into state (6 bytes, ""
 * when none).  The line is libpq's and the server's own words about the
 * connection, which hold no row value.
 */
extern void rp_pgerr_conn_line(const char *msg, char *line, size_t len, char *state);

#endif							/* RP_PGERR_H */
