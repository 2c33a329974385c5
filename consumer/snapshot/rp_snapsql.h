/*
 * rp_snapsql.h
 *    The snapshot's source sessions and the SQL they share: the
 *    coordinator, the copy workers and the backfill each open one here.
 *    Errors are value-free: they name the table and the SQLSTATE.
 */
#ifndef RP_SNAPSQL_H
#define RP_SNAPSQL_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "rp_buf.h"
#include "snapshot/rp_snapcat.h"
#include "snapshot/rp_snapshot.h"

/* A source session with the output settings pinned (G6); NULL after rp_fail(). */
extern PGconn *rp_snap_connect(const RpSnapOptions *o);

/* " FROM ONLY schema.table AS rp_t" (a partition root: without ONLY, its partitions' rows) */
extern void rp_snap_sql_from(RpBuf *sql, PGconn *conn, const RpSnapTable *t);

/*
 * " FROM ONLY schema.table AS rp_t [WHERE (key) > (...)] ORDER BY key": t's rows after a
 * stored key (after), in key order.  The stored key is read from the session settings
 * SETTINGS.k1, .k2 ... (set with set_config from parameters), so no value is in SQL text.
 */
extern void rp_snap_sql_after(RpBuf *sql, PGconn *conn, const RpSnapTable *t, const char *settings,
							  bool after);

/* Run sql; -1 after a value-free rp_fail() naming what (and the table). */
extern int	rp_snap_exec(PGconn *conn, const char *sql, const char *what, const RpSnapTable *t);

/* The value-free failure of res (its SQLSTATE), naming what and the table t (or NULL). */
extern int	rp_snap_fail_res(PGresult *res, const char *what, const RpSnapTable *t);

/* BEGIN REPEATABLE READ and import the exported snapshot snapname. */
extern int	rp_snap_import(PGconn *conn, const char *snapname);

#endif							/* RP_SNAPSQL_H */
