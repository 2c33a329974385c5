/*
 * rp_dbverify_int.h
 *    What the parts of replicant verify share (rp_dbverify.c: sessions,
 *    checkpoint, tables, the run; rp_dbverify_keyed.c: the chunk walk of a
 *    keyed table; rp_dbverify_keyless.c: a keyless table as a multiset).
 *    Private to migrate/.
 */
#ifndef RP_DBVERIFY_INT_H
#define RP_DBVERIFY_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "rp_buf.h"
#include "migrate/rp_dbverify.h"
#include "snapshot/rp_snapcat.h"

#define RP_DBVERIFY_PROG "replicant verify"

typedef struct RpDbvRun
{
	const RpDbVerifyOptions *o;
	PGconn	   *src;
	PGconn	   *dst;
	FILE	   *keys;
	char	   *slot;			/* the checkpoint row's slot */
	char		system_id[32];	/* the source's, or "" when it cannot be read */
	RpBuf		ckpt_sql;
	RpBuf		sql;
	int64_t		rate_rows;		/* rows read since rate_t0 (--max-rate) */
	int64_t		rate_t0_us;
	int64_t		busy_us;		/* statement time since the last pause
								 * (--duty) */
	int64_t		busy_total_us;	/* the run's statement time */
	int64_t		rested_us;		/* and its rests */
	bool		broken;			/* a session failed: stop */
} RpDbvRun;

/* A chunk's hash on one side. */
typedef struct RpDbvHash
{
	int64_t		rows;
	char		md5[33];
} RpDbvHash;

/* Per table: the two descriptions and the report's counters. */
typedef struct RpDbvTableRun
{
	const RpSnapTable *st;
	RpDbvTable	src;
	RpDbvTable	dst;
	char		dst_schema[256];
	char		qname[600];		/* schema.table of the source, for messages */
	const char **cols;
	const char **keys;
	const char **keytypes;
	RpDbvTally	tally;			/* what the comparison found */
	bool		dst_key_nullable;	/* a key column of the destination's table
									 * may be NULL: its rows with a NULL key
									 * are compared too */
} RpDbvTableRun;

/* ---- rp_dbverify_exec.c: the statements' one path ---- */

/* A value-free error on stderr (the step, the table, the SQLSTATE); marks the run broken. */
extern void rp_dbverify_error(RpDbvRun *r, PGconn *conn, PGresult *res, const char *what,
							  const RpDbvTableRun *t);

/* A query's rows, or NULL after rp_dbverify_error. */
extern PGresult *rp_dbverify_exec(RpDbvRun *r, PGconn *conn, const char *sql, int nparams,
								  const char *const *params, const char *what,
								  const RpDbvTableRun *t);

/* --duty, --max-rate: rows were read; rests as long as they need. */
extern void rp_dbverify_pace(RpDbvRun *r, int64_t rows);

/* The source's WAL insert position; -1 after an error. */
extern int	rp_dbverify_source_lsn(RpDbvRun *r, uint64_t *lsn);

/* The mirror's checkpoint of this source and slot (0 without a row); -1 after an error. */
extern int	rp_dbverify_checkpoint(RpDbvRun *r, uint64_t *lsn);

/* 1 the mirror's checkpoint reached lsn before deadline_us (monotonic), 0 not, -1 error. */
extern int	rp_dbverify_wait_checkpoint(RpDbvRun *r, uint64_t lsn, int64_t deadline_us);

/* ---- rp_dbverify_keyed.c, rp_dbverify_keyless.c ---- */

/* One table compared: 0 (differences counted in t), -1 error (reported). */
extern int	rp_dbverify_keyed(RpDbvRun *r, RpDbvTableRun *t);
extern int	rp_dbverify_keyless(RpDbvRun *r, RpDbvTableRun *t);

#endif							/* RP_DBVERIFY_INT_H */
