/*
 * rp_mwait.c
 *    Waiting for the mirror's durable checkpoint to pass a source LSN (see
 *    rp_mwait.h).  The target is read once on the source; the checkpoint
 *    row is polled on the destination twice a second, and the lag shown
 *    once a second.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rp_clock.h"
#include "base/rp_session.h"
#include "base/rp_sql.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"
#include "migrate/rp_mwait.h"
#include "rp_lsn.h"

#define RP_MWAIT_POLL_MS 500
#define RP_MWAIT_SHOW_US 1000000

uint64_t
rp_mwait_lag(uint64_t target, uint64_t reached)
{
	return reached >= target ? 0 : target - reached;
}

void
rp_mwait_format(char *buf, size_t len, uint64_t target, bool have_row, uint64_t reached)
{
	char		t[24],
				r[24];

	rp_lsn_format(target, t);
	if (!have_row)
	{
		snprintf(buf, len, "waiting for %s: no checkpoint row yet", t);
		return;
	}
	rp_lsn_format(reached, r);
	snprintf(buf, len, "waiting for %s: checkpoint %s, %" PRIu64 " bytes behind", t, r,
			 rp_mwait_lag(target, reached));
}

static PGconn *
rp_mwait_open(const char *conninfo, const char *side)
{
	RpSessionSpec spec;

	memset(&spec, 0, sizeof(spec));
	spec.conninfo = conninfo;
	spec.replication = "false";
	spec.fallback_application_name = "replicant wait";
	return rp_session_open_side(&spec, side);
}

static int
rp_mwait_fail_res(PGconn *conn, PGresult *res, const char *side, const char *what)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (PQstatus(conn) == CONNECTION_BAD)
		rp_fail(RP_HALT_NONE, "the connection to the %s was lost (%s)", side, what);
	else if (state && strcmp(state, "42P01") == 0)
		rp_fail(RP_HALT_NONE, "the destination has no checkpoint table (%s): is this the mirror's destination, with its --bookkeeping-schema?",
				what);
	else
	{
		char		code[64],
					said[256];

		rp_pgerr_code(state, code, sizeof(code));
		rp_fail(RP_HALT_NONE, "%s failed on the %s (%s)%s", what, side, code,
				rp_pgerr_said(res, said, sizeof(said)));
	}
	PQclear(res);
	return -1;
}

/* The source's system id (the checkpoint row's key) and, unless given, its WAL position. */
static int
rp_mwait_source(const RpMwaitOptions *o, char *sysid, size_t len, uint64_t *target)
{
	PGconn	   *src = rp_mwait_open(o->src_conninfo, "source");
	PGresult   *res;
	int			rc = 0;

	if (src == NULL)
		return -1;

	/*
	 * a standby has no WAL of its own to write: what it replayed is what
	 * decodes there
	 */
	res = PQexec(src, "SELECT system_identifier::text, CASE WHEN pg_catalog.pg_is_in_recovery()"
				 " THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END::text"
				 " FROM pg_catalog.pg_control_system()");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = rp_mwait_fail_res(src, res, "source", "reading the system id and WAL position");
	else
	{
		snprintf(sysid, len, "%s", PQgetvalue(res, 0, 0));
		if (o->target == 0 && !rp_lsn_parse(PQgetvalue(res, 0, 1), target))
			rc = rp_fail(RP_HALT_NONE, "the source's WAL position does not parse");
		else if (o->target != 0)
			*target = o->target;
		PQclear(res);
	}
	PQfinish(src);
	return rc;
}

/*
 * The checkpoint's end_lsn: 1 read, 0 no row yet, -1 an error.  The rows
 * of every slot of this source are read, so that a -S naming none of them
 * (a misspelt one, which would be waited for for ever) ends at once naming
 * them; with no row at all the mirror may still be starting.
 */
static int
rp_mwait_checkpoint(PGconn *dst, const char *sql, const RpMwaitOptions *o, const char *sysid,
					uint64_t *reached)
{
	const char *vals[1] = {sysid};
	PGresult   *res = PQexecParams(dst, sql, 1, NULL, vals, NULL, NULL, 0);
	int			n;
	int			row = -1;
	int			rc;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return rp_mwait_fail_res(dst, res, "destination", "reading the checkpoint");
	n = PQntuples(res);
	for (int i = 0; i < n && o->slot; i++)
		if (strcmp(PQgetvalue(res, i, 0), o->slot) == 0)
			row = i;
	if (o->slot == NULL && n == 1)
		row = 0;
	if (n == 0)
		rc = 0;
	else if (o->slot == NULL && n > 1)
		rc = rp_fail(RP_HALT_NONE, "the destination holds checkpoints of %d slots of this source: name one with -S/--slot",
					 n);
	else if (row < 0)
	{
		char		slots[512] = "";
		size_t		used = 0;

		/* slot names are [a-z0-9_]: quoted as they are */
		for (int i = 0; i < n && used < sizeof(slots); i++)
			used += (size_t) snprintf(slots + used, sizeof(slots) - used, "%s'%s'", i ? ", " : "",
									  PQgetvalue(res, i, 0));
		rc = rp_fail(RP_HALT_NONE, "the destination holds no checkpoint of slot \"%s\" of this source, only of %s: check -S/--slot",
					 o->slot, slots);
	}
	else if (!rp_lsn_parse(PQgetvalue(res, row, 1), reached))
		rc = rp_fail(RP_HALT_NONE, "the checkpoint of slot \"%s\" does not parse",
					 PQgetvalue(res, row, 0));
	else
		rc = 1;
	PQclear(res);
	return rc;
}

static void
rp_mwait_show(const RpMwaitOptions *o, const RpMwaitResult *r, bool last)
{
	char		line[200];

	if (o->progress == NULL)
		return;
	rp_mwait_format(line, sizeof(line), r->target, r->have_row, r->reached);
	if (o->in_place)
		fprintf(o->progress, "\r%s\033[K%s", line, last ? "\n" : "");
	else
		fprintf(o->progress, "%s\n", line);
	fflush(o->progress);
}

int
rp_mwait_run(const RpMwaitOptions *o, RpMwaitResult *r)
{
	const char *bk = o->bookkeeping_schema ? o->bookkeeping_schema : "replicant";
	char		sysid[32];
	char	   *qbk;
	char		sql[400];
	PGconn	   *dst;
	int64_t		start = rp_clock_mono_us();
	int64_t		shown = 0;
	int			rc;

	memset(r, 0, sizeof(*r));
	if (rp_mwait_source(o, sysid, sizeof(sysid), &r->target) < 0)
		return RP_MWAIT_UNREADABLE;
	if ((dst = rp_mwait_open(o->dst_conninfo, "destination")) == NULL)
		return RP_MWAIT_UNREADABLE;
	qbk = rp_sql_ident_dup(bk);
	snprintf(sql, sizeof(sql),
			 "SELECT slot, end_lsn::text FROM %s.checkpoint WHERE system_id = $1 ORDER BY slot", qbk);
	rp_free(qbk);
	for (;;)
	{
		int64_t		now;
		int			got = rp_mwait_checkpoint(dst, sql, o, sysid, &r->reached);

		if (got < 0)
		{
			rc = RP_MWAIT_UNREADABLE;
			break;
		}
		r->have_row = got > 0;
		if (r->have_row && r->reached >= r->target)
		{
			rc = 0;
			break;
		}
		now = rp_clock_mono_us();
		if (o->timeout_s > 0 && now - start >= (int64_t) o->timeout_s * 1000000)
		{
			rc = RP_MWAIT_TIMEOUT;
			break;
		}
		if (shown == 0 || now - shown >= RP_MWAIT_SHOW_US)
		{
			rp_mwait_show(o, r, false);
			shown = now;
		}
		if (!rp_pause_ms(RP_MWAIT_POLL_MS))
		{
			rp_fail(RP_HALT_NONE, "stopped before the checkpoint passed the target");
			rc = RP_MWAIT_UNREADABLE;
			break;
		}
	}
	if (rc != RP_MWAIT_UNREADABLE && shown != 0)
		rp_mwait_show(o, r, true);
	else if (shown != 0 && o->in_place && o->progress)
		fputc('\n', o->progress);
	PQfinish(dst);
	return rc;
}
