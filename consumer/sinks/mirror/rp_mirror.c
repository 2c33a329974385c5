/*
 * rp_sink_pg.c
 *    The PostgreSQL mirror sink: sessions, the checkpoint table and the
 *    destination transaction of each batch.
 *
 * Effect-once (G1): every destination transaction holds one batch of
 * source transactions and the checkpoint, committed together.  The
 * checkpoint lives in replicant.checkpoint (the bookkeeping schema is
 * --bookkeeping-schema, and no source table may map into it), keyed by
 * the source's system id and slot; each batch reads its row FOR UPDATE
 * first, skips source transactions at or below it (a replay changes
 * nothing), and only ever advances it.  A table rather than a replication origin, because
 * pg_replication_origin_xact_setup() needs superuser and the destination
 * role should not.
 *
 * Errors are reported by SQLSTATE and the names of the mapped table, its
 * columns and constraints; the server's message text, DETAIL, CONTEXT and
 * any name it reports that is not one of those are dropped because they
 * can carry row values (G4).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream/rp_ckpt.h"
#include "stream/rp_deliver.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "sinks/mirror/rp_mirror_backfill.h"
#include "sinks/mirror/rp_mirror_snapshot.h"
#include "base/rp_status.h"

static const char *const rp_pg_setup_sql =
"CREATE SCHEMA IF NOT EXISTS @bk;"
"CREATE TABLE IF NOT EXISTS @bk.checkpoint ("
"  system_id text NOT NULL, slot text NOT NULL, timeline integer NOT NULL,"
"  commit_lsn pg_catalog.pg_lsn NOT NULL, end_lsn pg_catalog.pg_lsn NOT NULL,"
"  updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),"
"  PRIMARY KEY (system_id, slot));"
"CREATE TABLE IF NOT EXISTS @bk.messages ("
"  system_id text NOT NULL, slot text NOT NULL, lsn pg_catalog.pg_lsn NOT NULL,"
"  transactional boolean NOT NULL, commit_lsn pg_catalog.pg_lsn, prefix text NOT NULL,"
"  content bytea NOT NULL, PRIMARY KEY (system_id, slot, lsn));";

/* ---- the bookkeeping schema ---------------------------------------------------- */

static pthread_mutex_t rp_pg_bk_lock = PTHREAD_MUTEX_INITIALIZER;

/* "name" with embedded quotes doubled: an identifier, needing no session. */
static char *
rp_pg_quote_name(const char *name)
{
	size_t		n = strlen(name);
	char	   *q = rp_malloc(2 * n + 3);
	char	   *p = q;

	*p++ = '"';
	for (; *name; name++)
	{
		if (*name == '"')
			*p++ = '"';
		*p++ = *name;
	}
	*p++ = '"';
	*p = '\0';
	return q;
}

const char *
rp_pg_bk(RpPg *pg, const char *tmpl)
{
	const char *out = NULL;

	pthread_mutex_lock(&rp_pg_bk_lock);
	for (int i = 0; i < pg->nbk && out == NULL; i++)
		if (pg->bk_tmpl[i] == tmpl)
			out = pg->bk_sql[i];
	if (out == NULL)
	{
		RpBuf		b;

		rp_buf_init(&b, strlen(tmpl) + 64);
		for (const char *p = tmpl; *p; p++)
		{
			if (strncmp(p, "@bk", 3) == 0)
			{
				rp_buf_put_text(&b, pg->bk);
				p += 2;
			}
			else
				rp_buf_put_char(&b, *p);
		}
		rp_buf_put_char(&b, '\0');
		if (pg->nbk == pg->capbk)
		{
			pg->capbk = pg->capbk ? 2 * pg->capbk : 32;
			pg->bk_tmpl = rp_realloc(pg->bk_tmpl, sizeof(*pg->bk_tmpl) * (size_t) pg->capbk);
			pg->bk_sql = rp_realloc(pg->bk_sql, sizeof(*pg->bk_sql) * (size_t) pg->capbk);
		}
		pg->bk_tmpl[pg->nbk] = tmpl;
		pg->bk_sql[pg->nbk++] = b.data;
		out = b.data;
	}
	pthread_mutex_unlock(&rp_pg_bk_lock);
	return out;
}

/* ---- divergences: a change the destination has no row for ----------------------- */

#define RP_PG_DIVERGENCE_TABLES 256

static struct
{
	pthread_mutex_t lock;
	int			n;
	char	   *table[RP_PG_DIVERGENCE_TABLES];
	uint64_t	count[RP_PG_DIVERGENCE_TABLES];
}			rp_pg_div = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void
rp_pg_divergence_count(const RpPgTable *t)
{
	char		name[512];
	int			i;

	snprintf(name, sizeof(name), "%s.%s", t->dest_schema, t->dest_name);
	pthread_mutex_lock(&rp_pg_div.lock);
	for (i = 0; i < rp_pg_div.n; i++)
		if (strcmp(rp_pg_div.table[i], name) == 0)
			break;
	if (i == rp_pg_div.n && i < RP_PG_DIVERGENCE_TABLES)
		rp_pg_div.table[rp_pg_div.n++] = rp_strndup(name, strlen(name));
	if (i < rp_pg_div.n)
		rp_pg_div.count[i]++;
	pthread_mutex_unlock(&rp_pg_div.lock);
}

int
rp_pg_divergence_get(int i, char *table, size_t len, uint64_t *count)
{
	int			rc = 0;

	pthread_mutex_lock(&rp_pg_div.lock);
	if (i >= 0 && i < rp_pg_div.n)
	{
		snprintf(table, len, "%s", rp_pg_div.table[i]);
		*count = rp_pg_div.count[i];
		rc = 1;
	}
	pthread_mutex_unlock(&rp_pg_div.lock);
	return rc;
}

/*
 * The destination no longer holds what the source changed: it has
 * diverged, and applying on would hide it.  Fail-closed by default.
 */
int
rp_pg_divergence(RpPg *pg, const RpPgTable *t, const char *what)
{
	rp_pg_divergence_count(t);
	if (pg->opts.divergence_skip)
		return 0;
	return rp_fail(RP_HALT_SINK, "destination table %s has diverged: %s holding the source's old row (halting; --on-divergence=skip counts it and goes on)",
				   t->qname, what);
}

/* A few SQLSTATEs by name; anything else by its code alone. */
static const char *
rp_pg_sqlstate_name(const char *state)
{
	static const struct
	{
		const char *code;
		const char *name;
	}			names[] = {
		{"23502", "not_null_violation"}, {"23503", "foreign_key_violation"},
		{"23505", "unique_violation"}, {"23514", "check_violation"},
		{"23P01", "exclusion_violation"}, {"22P02", "invalid_text_representation"},
		{"22001", "string_data_right_truncation"}, {"22003", "numeric_value_out_of_range"},
		{"42P01", "undefined_table"}, {"42703", "undefined_column"},
		{"42501", "insufficient_privilege"}, {"40001", "serialization_failure"},
		{"40P01", "deadlock_detected"}, {"57P01", "admin_shutdown"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].code, state) == 0)
			return names[i].name;
	return "error";
}

bool
rp_pg_known_constraint(const RpPgTable *t, const char *name)
{
	for (int i = 0; t && i < t->nconstraints; i++)
		if (strcmp(t->constraints[i], name) == 0)
			return true;
	return false;
}

void
rp_pg_diag_where(const PGresult *res, const RpPgTable *t, char *where, size_t len)
{
	const char *column = res ? PQresultErrorField(res, PG_DIAG_COLUMN_NAME) : NULL;
	const char *constraint = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL;
	bool		known_column = false;

	where[0] = '\0';
	if (t == NULL)
		return;					/* no table of ours to check the server's names against: none shown */
	for (uint16_t i = 0; column && t->rel && i < t->rel->natts && !known_column; i++)
		known_column = strcmp(t->rel->cols[i].name, column) == 0;
	snprintf(where, len, " on table %s", t->qname);
	if (known_column)
		snprintf(where + strlen(where), len - strlen(where), " column \"%s\"", column);
	if (constraint && rp_pg_known_constraint(t, constraint))
		snprintf(where + strlen(where), len - strlen(where), " constraint \"%s\"", constraint);
}

int
rp_pg_fail_result(RpPg *pg, PGresult *res, const char *what, const RpPgTable *t)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		where[512];

	/*
	 * A lost destination is retried after reconnecting, and so are the
	 * transient conditions (serialization failure, deadlock, lock timeout,
	 * cancel, out of resources); anything else halts.  Only the SQLSTATE
	 * and names the consumer knows are shown: the server's message, and
	 * libpq's, which repeats it, can quote values, and so can the table,
	 * column and constraint fields a trigger sets (G4).
	 */
	if (state && (strncmp(state, "40", 2) == 0 || strcmp(state, "55P03") == 0 ||
				  strcmp(state, "57014") == 0 || strncmp(state, "53", 2) == 0))
		return rp_fail(RP_HALT_NONE, "destination %s failed: SQLSTATE %s (%s), will retry", what,
					   state, rp_pg_sqlstate_name(state));
	if (pg->conn == NULL || PQstatus(pg->conn) != CONNECTION_OK || state == NULL ||
		strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)
		return rp_fail(RP_HALT_NONE, "destination connection lost during %s (SQLSTATE %s)", what,
					   state ? state : "none");
	rp_pg_diag_where(res, t, where, sizeof(where));
	return rp_fail(RP_HALT_SINK, "destination %s failed: SQLSTATE %s (%s)%s", what, state,
				   rp_pg_sqlstate_name(state), where);
}

int
rp_pg_exec(RpPg *pg, const char *sql, const char *what, const RpPgTable *t)
{
	PGresult   *res = PQexec(pg->conn, sql);
	ExecStatusType st = PQresultStatus(res);
	int			rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = rp_pg_fail_result(pg, res, what, t);
	PQclear(res);
	return rc;
}

int
rp_pg_exec_params(RpPg *pg, const char *sql, int n, const char *const *vals, const char *what,
				  const RpPgTable *t)
{
	PGresult   *res = PQexecParams(pg->conn, sql, n, NULL, vals, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	int			rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = rp_pg_fail_result(pg, res, what, t);
	PQclear(res);
	return rc;
}

/* Notices may quote values too: keep them off stderr. */
static void
rp_pg_notice(void *arg, const PGresult *res)
{
}

/*
 * One consumer per destination and slot (issue 11): a session-level
 * advisory lock keyed by the slot name (the checkpoint row is found by
 * slot), held for the session's life and dropped by the server when the
 * session ends, however the consumer ended.  A second consumer refuses
 * before it reads or writes anything; on a reconnect the lock may still be
 * held by our own lost session (or taken meanwhile): that is retried.
 */
#define RP_PG_LOCK_CLASS "1380994115"	/* 'RPLC': our advisory locks' first key */
#define RP_PG_LOCK_WAIT_MS 30000		/* how long a held lock is waited for */
#define RP_PG_LOCK_POLL_MS 500

static int
rp_pg_lock_slot(RpPg *pg)
{
	const char *vals[1] = {pg->opts.slot};
	PGresult   *res;
	char		holder[128] = "";
	int			rc = 0;

	/*
	 * A consumer killed with SIGKILL leaves its destination session behind
	 * until that session notices (at once when idle; within
	 * client_connection_check_interval when it runs a statement), still
	 * holding the lock: a restart waits for it a while before it refuses.
	 */
	for (int waited = 0;; waited += RP_PG_LOCK_POLL_MS)
	{
		res = PQexecParams(pg->conn, "SELECT pg_catalog.pg_try_advisory_lock(" RP_PG_LOCK_CLASS
						   ", pg_catalog.hashtext($1))", 1, NULL, vals, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
			rc = rp_pg_fail_result(pg, res, "locking the slot", NULL);
		else if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
			pg->slot_locked = true;
		else
			rc = 1;
		PQclear(res);
		if (rc <= 0)
			return rc;
		if (pg->slot_locked || waited >= RP_PG_LOCK_WAIT_MS || !rp_pause_ms(RP_PG_LOCK_POLL_MS))
			break;
	}

	res = PQexecParams(pg->conn, "SELECT l.pid, coalesce(host(a.client_addr), 'local') FROM pg_catalog.pg_locks l"
					   " LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
					   " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
					   " AND l.classid = " RP_PG_LOCK_CLASS "::pg_catalog.oid"
					   " AND l.objid = pg_catalog.hashtext($1)::pg_catalog.oid LIMIT 1",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		snprintf(holder, sizeof(holder), " (destination session pid %s, client %s)",
				 PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	PQclear(res);
	return rp_fail(pg->slot_locked ? RP_HALT_NONE : RP_HALT_IN_USE,
				   "the destination is in use by another consumer of slot \"%s\"%s: one consumer per destination and slot%s",
				   pg->opts.slot, holder, pg->slot_locked ? "; will retry" : "");
}

/* The cancel handle of the session now open (NULL: none). */
static void
rp_pg_set_cancel(RpPg *pg)
{
	pthread_mutex_lock(&pg->cancel_lock);
	if (pg->cancel)
		PQfreeCancel(pg->cancel);
	pg->cancel = pg->conn && PQstatus(pg->conn) == CONNECTION_OK ? PQgetCancel(pg->conn) : NULL;
	pthread_mutex_unlock(&pg->cancel_lock);
}

/*
 * A stop: cancel the destination query in progress (a lock wait, a slow
 * batch), so the delivery thread's step ends; its transaction rolls back
 * and nothing it held is confirmed.  An idle session ignores it.
 */
static void
rp_pg_interrupt(RpSink *s)
{
	RpPg	   *pg = s->priv;
	char		errbuf[256];

	pthread_mutex_lock(&pg->cancel_lock);
	if (pg->cancel)
		(void) PQcancel(pg->cancel, errbuf, sizeof(errbuf));
	pthread_mutex_unlock(&pg->cancel_lock);
}

/*
 * The destination's identifier limit (NAMEDATALEN - 1, 63 unless the
 * server was built otherwise): longer names would be truncated, so the
 * mapping refuses them (rp_pg_table.c).
 */
static int
rp_pg_read_max_ident(RpPg *pg)
{
	PGresult   *res = PQexec(pg->conn, "SHOW max_identifier_length");
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_pg_fail_result(pg, res, "reading max_identifier_length", NULL);
	else
		pg->max_ident = atoi(PQgetvalue(res, 0, 0));
	if (pg->max_ident <= 0)
		pg->max_ident = RP_PG_MAX_IDENT;
	PQclear(res);
	return rc;
}

static int
rp_pg_connect(RpPg *pg)
{
	if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
		return 0;
	if (pg->conn)
	{
		PQfinish(pg->conn);
		pg->conn = NULL;
		rp_pg_set_cancel(pg);
	}
	/* every cached destination fact may be stale on a new session */
	for (int i = 0; i < pg->ntables; i++)
	{
		pg->tables[i]->resolved = false;
		if (pg->tables[i]->stage_ups)
			rp_free(pg->tables[i]->stage_ups);
		if (pg->tables[i]->stage_del)
			rp_free(pg->tables[i]->stage_del);
		pg->tables[i]->stage_ups = pg->tables[i]->stage_del = NULL;
	}
	pg->in_txn = false;
	pg->conn = PQconnectdb(pg->opts.conninfo);
	if (PQstatus(pg->conn) != CONNECTION_OK)
	{
		char		line[256];

		rp_error_first_line(line, sizeof(line), PQerrorMessage(pg->conn));
		PQfinish(pg->conn);
		pg->conn = NULL;
		return rp_fail(RP_HALT_NONE, "could not connect to the destination: %s", line);
	}
	PQsetNoticeReceiver(pg->conn, rp_pg_notice, NULL);
	rp_pg_set_cancel(pg);
	/* pinned search_path: every name we send is schema-qualified and quoted */
	if (rp_pg_exec(pg, "SET search_path = ''; SET application_name = 'replicant';"
				   " SET synchronous_commit = on", "session setup", NULL) < 0)
		return -1;
	/*
	 * A statement running for a consumer that died ends within a second
	 * (PostgreSQL 14+), so the session and its slot lock go with it.
	 */
	if (PQserverVersion(pg->conn) >= 140000 &&
		rp_pg_exec(pg, "SET client_connection_check_interval = '1s'", "session setup", NULL) < 0)
		return -1;
	if (rp_pg_lock_slot(pg) < 0)
		return -1;
	if (rp_pg_read_max_ident(pg) < 0)
		return -1;
	return rp_pg_exec(pg, rp_pg_bk(pg, rp_pg_setup_sql), "creating the checkpoint table", NULL);
}

static int
rp_pg_checkpoint(RpSink *s, RpCheckpoint *ck)
{
	RpPg	   *pg = s->priv;
	const char *vals[1] = {pg->opts.slot};
	PGresult   *res;
	int			rc = 0;

	if (rp_pg_connect(pg) < 0)
		return -1;
	res = PQexecParams(pg->conn,
					   rp_pg_bk(pg, "SELECT system_id, timeline, commit_lsn::text, end_lsn::text "
								"FROM @bk.checkpoint WHERE slot = $1 ORDER BY updated_at DESC"),
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_pg_fail_result(pg, res, "reading the checkpoint", NULL);
	else if (PQntuples(res) > 0)
	{
		memset(ck, 0, sizeof(*ck));
		ck->system_id = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
		ck->timeline = (uint32_t) strtoul(PQgetvalue(res, 0, 1), NULL, 10);
		snprintf(ck->slot, sizeof(ck->slot), "%s", pg->opts.slot);
		rp_lsn_parse(PQgetvalue(res, 0, 2), &ck->commit_lsn);
		rp_lsn_parse(PQgetvalue(res, 0, 3), &ck->end_lsn);
		rc = 1;
	}
	PQclear(res);
	return rc;
}

static void
rp_pg_ck_params(const RpCheckpoint *ck, char sysid[24], char tli[16], char commit[24],
				char end[24])
{
	snprintf(sysid, 24, "%" PRIu64, ck->system_id);
	snprintf(tli, 16, "%u", ck->timeline);
	rp_lsn_format(ck->commit_lsn, commit);
	rp_lsn_format(ck->end_lsn, end);
}

/*
 * BEGIN and lock this source's checkpoint row; *done gets the commit LSN
 * the destination already holds (0 when none).
 */
static int
rp_pg_begin(RpPg *pg, const RpCheckpoint *ck, uint64_t *done)
{
	char		sysid[24],
				tli[16],
				commit[24],
				end[24];
	const char *vals[3];
	PGresult   *res;
	int			rc = 0;

	if (rp_pg_connect(pg) < 0)
		return -1;
	if (rp_pg_exec(pg, "BEGIN", "BEGIN", NULL) < 0)
		return -1;
	pg->in_txn = true;
	rp_pg_ck_params(ck, sysid, tli, commit, end);
	vals[0] = sysid;
	vals[1] = ck->slot;
	vals[2] = tli;
	if (rp_pg_exec_params(pg, rp_pg_bk(pg, "INSERT INTO @bk.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn) "
										   "VALUES ($1, $2, $3, '0/0', '0/0') ON CONFLICT DO NOTHING"),
						  3, vals, "creating the checkpoint row", NULL) < 0)
		return -1;
	res = PQexecParams(pg->conn,
					   rp_pg_bk(pg, "SELECT commit_lsn::text FROM @bk.checkpoint "
								"WHERE system_id = $1 AND slot = $2 FOR UPDATE"),
					   2, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = rp_pg_fail_result(pg, res, "locking the checkpoint", NULL);
	else if (!rp_lsn_parse(PQgetvalue(res, 0, 0), done))
		rc = rp_fail(RP_HALT_SINK, "destination checkpoint row is damaged");
	PQclear(res);
	return rc;
}

/* Advance the checkpoint (never backwards) and COMMIT. */
static int
rp_pg_commit(RpPg *pg, const RpCheckpoint *ck)
{
	char		sysid[24],
				tli[16],
				commit[24],
				end[24];
	const char *vals[5];

	rp_pg_ck_params(ck, sysid, tli, commit, end);
	vals[0] = sysid;
	vals[1] = ck->slot;
	vals[2] = tli;
	vals[3] = commit;
	vals[4] = end;
	if (rp_pg_exec_params(pg, rp_pg_bk(pg, "UPDATE @bk.checkpoint SET timeline = $3,"
										   " commit_lsn = GREATEST(commit_lsn, $4::pg_lsn),"
										   " end_lsn = GREATEST(end_lsn, $5::pg_lsn), updated_at = now()"
										   " WHERE system_id = $1 AND slot = $2"),
						  5, vals, "advancing the checkpoint", NULL) < 0)
		return -1;
	if (rp_pg_exec(pg, "COMMIT", "COMMIT", NULL) < 0)
		return -1;
	pg->in_txn = false;
	for (int i = 0; i < pg->ntables; i++)
		pg->tables[i]->txn_dirty = false;	/* what it made is there to stay */
	/* ---- backfill (rp_pg_backfill.c): a chunk applied in it is stored ---- */
	rp_pg_backfill_committed(pg);
	pg->ck = *ck;
	pg->have_ck = true;
	return 0;
}

static void
rp_pg_abort(RpPg *pg)
{
	if (pg->in_txn && pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
	{
		PGresult   *res = PQexec(pg->conn, "ROLLBACK");

		PQclear(res);
	}
	pg->in_txn = false;
	pg->early = false;
	/* ---- backfill (rp_pg_backfill.c): a chunk applied in it is not stored ---- */
	rp_pg_backfill_aborted(pg);
	/* pending effects belong to the aborted transaction */
	for (int i = 0; i < pg->ntables; i++)
	{
		RpPgTable  *t = pg->tables[i];

		/* so do staging tables it created, and tables it created or altered */
		rp_pg_table_forget(t);
		t->order = 0;
		t->text_datums = false;
	}
	rp_pg_apply_release(pg);
	pg->touched = 0;
}

/*
 * Logical messages are routed by prefix, fail-closed: ignored prefixes have
 * no effect, routed ones are stored in replicant.messages inside the
 * current destination transaction, and any other prefix halts.
 */
static int
rp_pg_route_message(RpPg *pg, bool transactional, uint64_t lsn, const char *prefix,
					size_t prefix_len, const unsigned char *content, uint32_t content_len)
{
	char	   *pfx = rp_strndup(prefix, prefix_len);
	char		sysid[24],
				lsnbuf[24],
				commit[24];
	const char *vals[7];
	int			lens[7] = {0, 0, 0, 0, 0, 0, (int) content_len};
	int			fmts[7] = {0, 0, 0, 0, 0, 0, 1};	/* content as raw bytes */
	bool		routed = false;
	PGresult   *res;
	int			rc = 0;

	/* ---- backfill watermarks (rp_pg_backfill.c): never routed, never a halt ---- */
	if ((rc = rp_pg_backfill_message(pg, transactional, prefix, prefix_len, content, content_len)) != 0)
	{
		rp_free(pfx);
		return rc < 0 ? -1 : 0;
	}
	for (int i = 0; i < pg->opts.nignore; i++)
		if (strcmp(pg->opts.ignore_prefixes[i], pfx) == 0)
		{
			rp_free(pfx);
			return 0;
		}
	for (int i = 0; i < pg->opts.nroute; i++)
		routed |= strcmp(pg->opts.route_prefixes[i], pfx) == 0;
	if (!routed)
	{
		rc = rp_fail(RP_HALT_SINK, "logical message with prefix \"%s\" is neither routed nor ignored (see --message-route and --message-ignore)",
					 pfx);
		rp_free(pfx);
		return rc;
	}
	snprintf(sysid, sizeof(sysid), "%" PRIu64, pg->ck.system_id);
	rp_lsn_format(lsn, lsnbuf);
	rp_lsn_format(pg->cur_commit_lsn, commit);
	vals[0] = sysid;
	vals[1] = pg->ck.slot;
	vals[2] = lsnbuf;
	vals[3] = transactional ? "t" : "f";
	vals[4] = transactional ? commit : NULL;
	vals[5] = pfx;
	vals[6] = (const char *) content;
	res = PQexecParams(pg->conn,
					   rp_pg_bk(pg, "INSERT INTO @bk.messages (system_id, slot, lsn, transactional, commit_lsn, prefix, content)"
								" VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING"),
					   7, NULL, vals, lens, fmts, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = rp_pg_fail_result(pg, res, "routing a logical message", NULL);
	PQclear(res);
	rp_free(pfx);
	return rc;
}

static int
rp_pg_apply_txn(RpPg *pg, RpDelivery *dl, RpTxn *txn, uint64_t skip_bytes)
{
	RpCursor	c;
	RpRecord	rec;
	int			rc;

	pg->cur_commit_lsn = txn->commit_lsn;
	pg->cur_commit_time = txn->commit_time;
	if (rp_cursor_open_at(&c, dl, txn, skip_bytes) < 0)
		return -1;
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		switch (rec.tag)
		{
			case RP_TAG_INSERT:
			case RP_TAG_UPDATE:
			case RP_TAG_DELETE:
				rc = rp_pg_apply_change(pg, &rec);
				break;
			case RP_TAG_TRUNCATE:
				rp_pg_backfill_truncate(pg, &rec);	/* ---- backfill window ---- */
				rc = rp_pg_apply_truncate(pg, &rec, &dl->dec.rels);
				break;
			case RP_TAG_MESSAGE:
				rc = rp_pg_route_message(pg, true, rec.u.message.lsn, rec.u.message.prefix,
										 rec.u.message.prefix_len, rec.u.message.content,
										 rec.u.message.content_len);
				break;
			default:
				rc = 0;
		}
		if (rc < 0)
			break;
	}
	rp_cursor_close(&c);
	if (rc < 0)
		return -1;
	return rp_pg_apply_end_txn(pg);
}

static int
rp_pg_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	RpPg	   *pg = s->priv;
	const RpSinkBatchHook *hook = pg->batch_hook.before_commit ? &pg->batch_hook : NULL;
	uint64_t	done = 0;

	pg->ck = *ck;
	if (rp_pg_begin(pg, ck, &done) < 0)
		goto fail;
	for (int i = 0; i < n; i++)
	{
		/* already in the destination (a replay, or another consumer): no effect */
		if (txns[i]->commit_lsn <= done)
			continue;
		/* ---- the batch hook (live aggregates): --aggregates-only mirrors no table ---- */
		if (hook && hook->skip_rows)
			continue;
		if (rp_pg_apply_txn(pg, dl, txns[i], 0) < 0)
			goto fail;
	}
	if (rp_pg_apply_flush(pg) < 0)
		goto fail;
	/* ---- the batch hook (live aggregates): cells written before the checkpoint ---- */
	if (hook && hook->before_commit(hook->arg, pg->conn, dl, txns, n, done) < 0)
		goto fail;
	if (rp_pg_commit(pg, ck) < 0)
		goto fail;
	/* ---- the batch hook: edit streams get their lines once committed ---- */
	if (hook && hook->after_commit && hook->after_commit(hook->arg) < 0)
		return -1;
	return 0;

fail:
	rp_pg_abort(pg);
	return -1;
}

/*
 * Early apply (RpSink.handle_chunk): a large streamed transaction's blocks
 * are applied as they arrive, inside one destination transaction that
 * stays open until its commit, so the destination works while the server
 * still decodes the rest.  Only row changes of tables kept as state go
 * this way: a TRUNCATE, a message or a history table needs the commit LSN,
 * and declines (the transaction then comes whole at its commit).
 */
static int
rp_pg_chunk(RpSink *s, RpDelivery *dl, RpTxn *chunk)
{
	RpPg	   *pg = s->priv;
	RpCursor	c;
	RpRecord	rec;
	int			rc;

	/* ---- backfill: inside a window only committed transactions may count ---- */
	if (!pg->early && rp_pg_backfill_window_open())
		return 1;
	if (!pg->early)
	{
		if (pg->in_txn)
			rp_pg_abort(pg);
		pg->ck = dl->ck;
		if (rp_pg_begin(pg, &dl->ck, &pg->early_done) < 0)
			goto fail;
		pg->early = true;
	}
	pg->cur_commit_lsn = 0;
	pg->cur_commit_time = 0;
	if (rp_cursor_open(&c, dl, chunk) < 0)
		goto fail;
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		if ((rec.tag != RP_TAG_INSERT && rec.tag != RP_TAG_UPDATE && rec.tag != RP_TAG_DELETE) ||
			rp_pg_table_get(pg, rec.u.change.rel)->history)
		{
			rc = 1;
			break;
		}
		if (rp_pg_apply_change(pg, &rec) < 0)
		{
			rc = -1;
			break;
		}
	}
	rp_cursor_close(&c);
	if (rc < 0)
		goto fail;
	if (rc > 0)
		return 1;				/* the caller drops what is open */
	if (rp_pg_apply_flush(pg) < 0)
		goto fail;
	return 0;

fail:
	rp_pg_abort(pg);
	return -1;
}

static void
rp_pg_drop_chunks(RpSink *s)
{
	rp_pg_abort(s->priv);
}

static int
rp_pg_chunked_commit(RpSink *s, RpDelivery *dl, RpTxn *txn, uint64_t skip_bytes,
					 const RpCheckpoint *ck)
{
	RpPg	   *pg = s->priv;

	if (!pg->early)
		return rp_fail(RP_HALT_PROTOCOL, "commit of xid %u, whose chunks the destination does not hold",
					   txn->xid);
	/* already in the destination (a replay): the chunks go, no effect */
	if (txn->commit_lsn <= pg->early_done)
	{
		rp_pg_abort(pg);
		return 0;
	}
	pg->ck = *ck;
	if (rp_pg_apply_txn(pg, dl, txn, skip_bytes) < 0 ||
		rp_pg_apply_flush(pg) < 0 || rp_pg_commit(pg, ck) < 0)
	{
		rp_pg_abort(pg);
		return -1;
	}
	pg->early = false;
	return 0;
}

static int
rp_pg_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	return rp_pg_batch(s, dl, &txn, 1, ck);
}

static int
rp_pg_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpPg	   *pg = s->priv;
	uint64_t	done = 0;

	pg->ck = *ck;
	pg->cur_commit_lsn = 0;
	if (rp_pg_begin(pg, ck, &done) < 0 ||
		rp_pg_route_message(pg, false, msg->lsn, msg->prefix, strlen(msg->prefix), msg->content,
							msg->content_len) < 0 ||
		rp_pg_commit(pg, ck) < 0)
	{
		rp_pg_abort(pg);
		return -1;
	}
	return 0;
}

static int
rp_pg_schema_change(RpSink *s, const RpRelation *before, const RpRelation *after,
					RpSchemaChange change)
{
	return rp_pg_table_schema_change(s->priv, before, after, change);
}

static int
rp_pg_advance(RpSink *s, const RpCheckpoint *ck)
{
	RpPg	   *pg = s->priv;
	uint64_t	done;

	if (rp_pg_begin(pg, ck, &done) < 0 || rp_pg_commit(pg, ck) < 0)
	{
		rp_pg_abort(pg);
		return -1;
	}
	return 0;
}

static void
rp_pg_close(RpSink *s)
{
	RpPg	   *pg = s->priv;

	rp_pg_abort(pg);				/* gives the effect maps' memory back too */
	if (pg->conn)
		PQfinish(pg->conn);
	pg->conn = NULL;
	rp_pg_set_cancel(pg);
	pthread_mutex_destroy(&pg->cancel_lock);
	for (int i = 0; i < pg->ntables; i++)
		rp_pg_table_free(pg->tables[i]);
	if (pg->tables)
		rp_free(pg->tables);
	rp_buf_free(&pg->scratch);
	for (int i = 0; i < pg->nbk; i++)
		rp_free(pg->bk_sql[i]);
	if (pg->bk_sql)
	{
		rp_free(pg->bk_sql);
		rp_free(pg->bk_tmpl);
	}
	rp_free(pg->bk);
	rp_free(pg);
	rp_free(s);
}

RpSink *
rp_sink_pg_open(const RpPgOptions *opts, const RpSinkEnv *env)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpPg	   *pg = rp_malloc0(sizeof(RpPg));

	pg->opts = *opts;
	if (env)
	{
		pg->backfill = env->backfill;
		pg->batch_hook = env->batch_hook;
	}
	pthread_mutex_init(&pg->cancel_lock, NULL);
	if (pg->opts.bookkeeping_schema == NULL)
		pg->opts.bookkeeping_schema = RP_PG_DEFAULT_BOOKKEEPING;
	pg->bk = rp_pg_quote_name(pg->opts.bookkeeping_schema);
	pg->sink = s;
	rp_buf_init(&pg->scratch, 4096);
	s->name = "postgresql";
	s->kind = RP_SINK_STATE;
	s->owns_checkpoint = true;
	s->priv = pg;
	s->checkpoint = rp_pg_checkpoint;
	s->handle_transaction = rp_pg_txn;
	s->handle_batch = rp_pg_batch;
	s->handle_message = rp_pg_message;
	s->handle_schema_change = rp_pg_schema_change;
	s->advance = rp_pg_advance;
	s->handle_chunk = rp_pg_chunk;
	s->drop_chunks = rp_pg_drop_chunks;
	s->handle_chunked_commit = rp_pg_chunked_commit;
	s->close = rp_pg_close;
	s->interrupt = rp_pg_interrupt;
	rp_pg_snapshot_install(s);
	if (rp_pg_connect(pg) < 0)
	{
		rp_pg_close(s);
		return NULL;
	}
	return s;
}
