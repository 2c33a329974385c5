/*
 * rp_dbverify_exec.c
 *    replicant verify's one path to both servers (rp_dbverify_int.h): a
 *    statement with its busy time counted, its failure reported value-free
 *    (what, which side, the SQLSTATE), the pacing after it (--duty,
 *    --max-rate), and the LSNs a re-read waits on (the source's insert
 *    position, the mirror's checkpoint).  The run (rp_dbverify.c) and the
 *    table walks (rp_dbverify_keyed.c, rp_dbverify_keyless.c) all use it.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "rp_lsn.h"
#include "base/rp_clock.h"
#include "base/rp_sql.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"
#include "migrate/rp_dbverify_int.h"

/* ---- errors, value-free ------------------------------------------------------ */

void
rp_dbverify_error(RpDbvRun *r, PGconn *conn, PGresult *res, const char *what, const RpDbvTableRun *t)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	fprintf(stderr, "%s: error: %s%s%s%s on the %s failed: %s%s\n", RP_DBVERIFY_PROG,
			t ? "table " : "", t ? t->qname : "", t ? ": " : "", what,
			conn == r->src ? "source" : "destination",
			state ? code : (PQstatus(conn) == CONNECTION_BAD ? "connection lost" : "no result"),
			rp_pgerr_said(res, said, sizeof(said)));
	r->broken = true;
}

/* What a statement was for, for rp_dbverify_fail_sql. */
typedef struct RpDbvStmt
{
	RpDbvRun   *r;
	const char *what;
	const RpDbvTableRun *t;
} RpDbvStmt;

static int
rp_dbverify_fail_sql(void *arg, PGconn *conn, PGresult *res)
{
	const RpDbvStmt *s = arg;

	rp_dbverify_error(s->r, conn, res, s->what, s->t);
	return -1;
}

PGresult   *
rp_dbverify_exec(RpDbvRun *r, PGconn *conn, const char *sql, int nparams, const char *const *params,
				 const char *what, const RpDbvTableRun *t)
{
	RpDbvStmt	s = {r, what, t};
	int64_t		t0 = rp_clock_mono_us();
	PGresult   *res = rp_sql_run(conn, sql, nparams, params, rp_dbverify_fail_sql, &s);

	/* the time the servers were busy, failed statements included (--max-rate) */
	r->busy_us += rp_clock_mono_us() - t0;
	r->busy_total_us += rp_clock_mono_us() - t0;
	return res;
}

/* ---- --max-rate ------------------------------------------------------------------ */

void
rp_dbverify_pace(RpDbvRun *r, int64_t rows)
{
	int64_t		due_us;
	int64_t		now;

	/*
	 * --duty: after statements that kept the servers busy for B, rest for B *
	 * (100 - duty) / duty, so that the comparison takes at most that share of
	 * one backend on each side, however fast the hashing is: the mirror's own
	 * apply keeps the rest of the machine.
	 */
	if (r->o->duty > 0 && r->o->duty < 100 && r->busy_us > 0)
	{
		int64_t		rest_us = r->busy_us * (100 - r->o->duty) / r->o->duty;

		int64_t		t0 = rp_clock_mono_us();

		r->busy_us = 0;
		rp_pause_ms((int) ((rest_us + 999) / 1000));
		r->rested_us += rp_clock_mono_us() - t0;
	}
	r->busy_us = 0;
	if (r->o->max_rate <= 0)
		return;
	r->rate_rows += rows;
	/* rows of both servers are counted: each side reads about half of them */
	due_us = r->rate_t0_us + r->rate_rows * 500000 / r->o->max_rate;
	now = rp_clock_mono_us();
	if (due_us > now)
		rp_pause_ms((int) ((due_us - now + 999) / 1000));
}

/* ---- LSNs and the checkpoint ---------------------------------------------------- */

int
rp_dbverify_source_lsn(RpDbvRun *r, uint64_t *lsn)
{
	/* on a standby, what it replayed: at or past every commit its reads saw */
	PGresult   *res = rp_dbverify_exec(r, r->src,
									   "SELECT CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn()"
									   " ELSE pg_catalog.pg_current_wal_insert_lsn() END::text", 0, NULL,
									   "reading the WAL position", NULL);

	if (res == NULL)
		return -1;
	rp_lsn_parse(PQgetvalue(res, 0, 0), lsn);
	PQclear(res);
	return 0;
}

int
rp_dbverify_checkpoint(RpDbvRun *r, uint64_t *lsn)
{
	const char *params[2] = {r->slot, r->system_id};
	PGresult   *res = rp_dbverify_exec(r, r->dst, r->ckpt_sql.data, 2, params, "reading the checkpoint", NULL);

	if (res == NULL)
		return -1;
	*lsn = 0;
	if (PQntuples(res) > 0)
		rp_lsn_parse(PQgetvalue(res, 0, 0), lsn);
	PQclear(res);
	return 0;
}

/*
 * 1 when the checkpoint reached lsn before deadline_us, 0 not, -1 error.
 * An idle mirror's checkpoint moves with the server's keepalives (once per
 * status interval); an insert position just past a page header is reached
 * only with the next WAL record, which an idle server writes within 15 s
 * (the standby snapshot record).
 */
int
rp_dbverify_wait_checkpoint(RpDbvRun *r, uint64_t lsn, int64_t deadline_us)
{
	for (;;)
	{
		uint64_t	at;

		if (rp_dbverify_checkpoint(r, &at) < 0)
			return -1;
		if (at >= lsn)
			return 1;
		if (rp_clock_mono_us() >= deadline_us || rp_stop_requested())
			return 0;
		rp_pause_ms(200);
	}
}
