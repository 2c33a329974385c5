/*
 * rp_mirror_session.c
 *    The mirror's destination sessions: opening one, running statements and
 *    reporting their errors by SQLSTATE and known names only (G4), the
 *    bookkeeping schema, the slot's advisory lock, and the checkpoint row
 *    read, locked and advanced.
 *
 * Effect-once (G1): every destination transaction holds one batch of
 * source transactions and the checkpoint, committed together.  The
 * checkpoint lives in replicant.checkpoint (the bookkeeping schema is
 * --bookkeeping-schema, and no source table may map into it), keyed by
 * the source's system id and slot; each batch reads its row FOR UPDATE
 * first, skips source transactions at or below it (a replay changes
 * nothing), and only ever advances it.  A table rather than a replication
 * origin, because pg_replication_origin_xact_setup() needs superuser and
 * the destination role should not.
 *
 * The bottom of the package: it calls nothing else of the mirror.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_ckpt.h"
#include "base/rp_pgerr.h"
#include "base/rp_session.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "base/rp_status.h"

static const char *const rp_mirror_setup_sql =
"CREATE SCHEMA IF NOT EXISTS @bk;"
"CREATE TABLE IF NOT EXISTS @bk.checkpoint ("
"  system_id text NOT NULL, slot text NOT NULL, timeline integer NOT NULL,"
"  commit_lsn pg_catalog.pg_lsn NOT NULL, end_lsn pg_catalog.pg_lsn NOT NULL,"
"  updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),"
"  source text NOT NULL DEFAULT 'slot', source_seq bigint,"
"  PRIMARY KEY (system_id, slot));"
"CREATE TABLE IF NOT EXISTS @bk.messages ("
"  system_id text NOT NULL, slot text NOT NULL, lsn pg_catalog.pg_lsn NOT NULL,"
"  transactional boolean NOT NULL, commit_lsn pg_catalog.pg_lsn, prefix text NOT NULL,"
"  content bytea NOT NULL, PRIMARY KEY (system_id, slot, lsn));";


/* ---- the bookkeeping schema ---------------------------------------------------- */

const char *
rp_mirror_bk(RpMirror *pg, const char *tmpl)
{
	const char *out = NULL;

	pthread_mutex_lock(&pg->bk_lock);
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
	pthread_mutex_unlock(&pg->bk_lock);
	return out;
}

/* ---- statements and their errors ------------------------------------------------ */

bool
rp_mirror_known_constraint(const RpMirrorTable *t, const char *name)
{
	for (int i = 0; t && i < t->nconstraints; i++)
		if (strcmp(t->constraints[i], name) == 0)
			return true;
	return false;
}

void
rp_mirror_diag_where(const PGresult *res, const RpMirrorTable *t, char *where, size_t len)
{
	const char *column = res ? PQresultErrorField(res, PG_DIAG_COLUMN_NAME) : NULL;
	const char *constraint = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL;
	bool		known_column = false;

	where[0] = '\0';
	if (t == NULL)
		return;					/* no table of ours to check the server's
								 * names against: none shown */
	for (uint16_t i = 0; column && t->rel && i < t->rel->natts && !known_column; i++)
		known_column = strcmp(t->rel->cols[i].name, column) == 0;
	snprintf(where, len, " on table %s", t->qname);
	if (known_column)
		snprintf(where + strlen(where), len - strlen(where), " column \"%s\"", column);
	if (constraint && rp_mirror_known_constraint(t, constraint))
		snprintf(where + strlen(where), len - strlen(where), " constraint \"%s\"", constraint);
}

int
rp_mirror_fail_result(RpMirror *pg, PGresult *res, const char *what, const RpMirrorTable *t)
{
	return rp_mirror_fail_conn(pg->conn, res, what, t);
}

static int	rp_mirror_fail_status(bool connected, PGresult *res, const char *what,
								  const RpMirrorTable *t);

int
rp_mirror_fail_conn(PGconn *conn, PGresult *res, const char *what, const RpMirrorTable *t)
{
	return rp_mirror_fail_status(conn != NULL && PQstatus(conn) == CONNECTION_OK, res, what, t);
}

/* rp_mirror_fail_conn, for a session already closed: connected says whether it was up. */
static int
rp_mirror_fail_status(bool connected, PGresult *res, const char *what, const RpMirrorTable *t)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		where[512],
				code[64],
				said[256];

	/*
	 * A lost destination is retried after reconnecting, and so are the
	 * transient conditions (serialization failure, deadlock, lock timeout,
	 * cancel, out of resources); anything else halts.  Shown: the SQLSTATE,
	 * the names the consumer knows, and the server's message only where
	 * rp_pgerr.h allows it.  libpq's message repeats the server's, and the
	 * table, column and constraint fields a trigger sets can hold anything
	 * (G4).
	 */
	rp_pgerr_code(state, code, sizeof(code));
	rp_pgerr_said(res, said, sizeof(said));
	if (state && (strncmp(state, "40", 2) == 0 || strcmp(state, "55P03") == 0 ||
				  strcmp(state, "57014") == 0 || strncmp(state, "53", 2) == 0))
		rp_fail(RP_HALT_NONE, "destination %s failed: %s%s, will retry", what, code, said);
	else if (!connected || state == NULL ||
			 strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)
		rp_fail(RP_HALT_NONE, "destination connection lost during %s (%s)", what, code);
	else
	{
		rp_mirror_diag_where(res, t, where, sizeof(where));
		rp_fail(RP_HALT_SINK, "destination %s failed: %s%s%s", what, code, where, said);
	}
	/* the events' (a code, value-free) */
	rp_error_set_sqlstate(state);
	return -1;
}

int
rp_mirror_exec(RpMirror *pg, const char *sql, const char *what, const RpMirrorTable *t)
{
	PGresult   *res = PQexec(pg->conn, sql);
	ExecStatusType st = PQresultStatus(res);
	int			rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, what, t);
	PQclear(res);
	return rc;
}

int
rp_mirror_exec_params(RpMirror *pg, const char *sql, int n, const char *const *vals, const char *what,
					  const RpMirrorTable *t)
{
	PGresult   *res = PQexecParams(pg->conn, sql, n, NULL, vals, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	int			rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, what, t);
	PQclear(res);
	return rc;
}

/*
 * session_replication_role, as PostgreSQL's apply worker sets it: under
 * "replica" foreign keys and ordinary triggers do not fire, so a destination
 * whose schema came from pg_dump takes the snapshot's tables and a batch's
 * rows in any order (with the checks on, the first child row copied before
 * its parent failed with 23503 in the middle of a copy).  Set when the
 * session opens, so a user who may not set it learns at start.  On failure
 * conn is closed.
 */
static int
rp_mirror_session_role(PGconn *conn, const char *role, const char *who)
{
	char		sql[96];
	PGresult   *res;
	const char *state;

	snprintf(sql, sizeof(sql), "SET session_replication_role = %s", role ? role : "replica");
	res = PQexec(conn, sql);
	if (PQresultStatus(res) == PGRES_COMMAND_OK)
	{
		PQclear(res);
		return 0;
	}
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (state && strcmp(state, "42501") == 0)
		rp_fail(RP_HALT_CONFIG, "%sthe destination user may not set session_replication_role to %s (SQLSTATE 42501): "
				"the mirror applies as PostgreSQL's apply worker does, with no foreign key check or ordinary trigger on "
				"replicated rows; run it as a superuser, GRANT SET ON PARAMETER session_replication_role TO the user "
				"(PostgreSQL 15 and later), or pass --session-replication-role=origin (foreign keys are then checked "
				"and may refuse rows that arrive before their parents)",
				who, role ? role : "replica");
	else
		rp_mirror_fail_conn(conn, res, "setting session_replication_role", NULL);
	PQclear(res);
	PQfinish(conn);
	return -1;
}

PGconn	   *
rp_mirror_session_open(const char *conninfo, const char *appname, bool synchronous_commit,
					   const char *role, const char *who)
{
	RpSessionSpec spec;
	RpSessionError err;
	PGconn	   *conn;
	PGresult   *res;

	/*
	 * search_path pinned first (rp_session.h): every name we send is
	 * schema-qualified and quoted
	 */
	memset(&spec, 0, sizeof(spec));
	spec.conninfo = conninfo;
	spec.fallback_application_name = appname;
	spec.settings = synchronous_commit ? "SET synchronous_commit = on" : "SET synchronous_commit = off";
	conn = rp_session_open(&spec, &err);
	if (conn == NULL && err.result == NULL)
	{
		rp_fail(rp_session_halt(&err), "%scould not connect to the destination: %s", who, err.message);
		return NULL;
	}
	if (conn == NULL)
	{
		rp_mirror_fail_status(!err.lost, err.result, "session setup", NULL);
		PQclear(err.result);
		return NULL;
	}

	/*
	 * A statement running for a consumer that died ends within a second
	 * (PostgreSQL 14+), so the session and its slot lock go with it.
	 */
	if (PQserverVersion(conn) >= 140000)
	{
		res = PQexec(conn, "SET client_connection_check_interval = '1s'");
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			rp_mirror_fail_conn(conn, res, "session setup", NULL);
			PQclear(res);
			PQfinish(conn);
			return NULL;
		}
		PQclear(res);
	}
	return rp_mirror_session_role(conn, role, who) < 0 ? NULL : conn;
}

/*
 * One consumer per destination and slot (issue 11): a session-level
 * advisory lock keyed by the slot name (the checkpoint row is found by
 * slot), held for the session's life and dropped by the server when the
 * session ends, however the consumer ended.  A second consumer refuses
 * before it reads or writes anything; on a reconnect the lock may still be
 * held by our own lost session (or taken meanwhile): that is retried.
 */
#define RP_MIRROR_LOCK_CLASS "1380994115"	/* 'RPLC': our advisory locks'
											 * first key */
#define RP_MIRROR_LOCK_WAIT_MS 30000	/* how long a held lock is waited for */
#define RP_MIRROR_LOCK_POLL_MS 500

static int
rp_mirror_lock_slot(RpMirror *pg)
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
	for (int waited = 0;; waited += RP_MIRROR_LOCK_POLL_MS)
	{
		res = PQexecParams(pg->conn, "SELECT pg_catalog.pg_try_advisory_lock(" RP_MIRROR_LOCK_CLASS
						   ", pg_catalog.hashtext($1))", 1, NULL, vals, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
			rc = rp_mirror_fail_result(pg, res, "locking the slot", NULL);
		else if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
			pg->slot_locked = true;
		else
			rc = 1;
		PQclear(res);
		if (rc <= 0)
			return rc;
		if (pg->slot_locked || waited >= RP_MIRROR_LOCK_WAIT_MS || !rp_pause_ms(RP_MIRROR_LOCK_POLL_MS))
			break;
	}

	res = PQexecParams(pg->conn, "SELECT l.pid, coalesce(host(a.client_addr), 'local') FROM pg_catalog.pg_locks l"
					   " LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
					   " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
					   " AND l.classid = " RP_MIRROR_LOCK_CLASS "::pg_catalog.oid"
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

/* ---- the session ---------------------------------------------------------------- */

/* The cancel handle of the session now open (NULL: none). */
void
rp_mirror_set_cancel(RpMirror *pg)
{
	pthread_mutex_lock(&pg->cancel_lock);
	if (pg->cancel)
		PQfreeCancel(pg->cancel);
	pg->cancel = pg->conn && PQstatus(pg->conn) == CONNECTION_OK ? PQgetCancel(pg->conn) : NULL;
	pthread_mutex_unlock(&pg->cancel_lock);
}

/*
 * The destination's identifier limit (NAMEDATALEN - 1, 63 unless the
 * server was built otherwise): longer names would be truncated, so the
 * mapping refuses them (rp_mirror_table.c).
 */
static int
rp_mirror_read_max_ident(RpMirror *pg)
{
	PGresult   *res = PQexec(pg->conn, "SHOW max_identifier_length");
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, "reading max_identifier_length", NULL);
	else
		pg->max_ident = atoi(PQgetvalue(res, 0, 0));
	if (pg->max_ident <= 0)
		pg->max_ident = RP_MIRROR_MAX_IDENT;
	PQclear(res);
	return rc;
}

/*
 * The checkpoint row says what its positions were read from: 'slot', or
 * 'nats:<stream>' and the stream sequence they reach (source, source_seq).
 * A destination made before fan-out gets the columns here, and only then:
 * ALTER TABLE takes the table's exclusive lock, which would queue behind
 * any other mirror's open batch (and every later batch behind it) at each
 * start.
 */
static int
rp_mirror_checkpoint_columns(RpMirror *pg)
{
	const char *vals[1] = {pg->opts.bookkeeping_schema ? pg->opts.bookkeeping_schema : "replicant"};
	PGresult   *res;
	bool		have;

	res = PQexecParams(pg->conn,
					   "SELECT count(*) = 2 FROM pg_catalog.pg_attribute a"
					   " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
					   " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
					   " WHERE n.nspname = $1 AND c.relname = 'checkpoint'"
					   " AND a.attname IN ('source', 'source_seq') AND NOT a.attisdropped",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return rp_mirror_fail_result(pg, res, "reading the checkpoint table's columns", NULL);
	have = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (have)
		return 0;
	return rp_mirror_exec(pg, rp_mirror_bk(pg, "ALTER TABLE @bk.checkpoint"
										   " ADD COLUMN IF NOT EXISTS source text NOT NULL DEFAULT 'slot',"
										   " ADD COLUMN IF NOT EXISTS source_seq bigint"),
						  "adding the checkpoint table's source columns", NULL);
}

void
rp_mirror_session_drop_objects(RpMirror *pg, RpMirrorTable *t, bool session_alive)
{
	if (t->stage_ups)
		rp_free(t->stage_ups);
	if (t->stage_del)
		rp_free(t->stage_del);
	t->stage_ups = t->stage_del = NULL;
	t->stage_used = 0;
	for (int k = 0; k < RP_MIRROR_NSTMTS; k++)
	{
		if (t->stmts[k] == NULL)
			continue;
		if (!session_alive)
			rp_free(t->stmts[k]);
		else
		{
			if (pg->nstale == pg->capstale)
			{
				pg->capstale = pg->capstale ? pg->capstale * 2 : 16;
				pg->stale = rp_realloc(pg->stale, sizeof(char *) * (size_t) pg->capstale);
			}
			pg->stale[pg->nstale++] = t->stmts[k];
		}
		t->stmts[k] = NULL;
	}
}

int
rp_mirror_connect(RpMirror *pg)
{
	if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
		return 0;
	if (pg->conn)
	{
		PQfinish(pg->conn);
		pg->conn = NULL;
		rp_mirror_set_cancel(pg);
	}
	/* every cached destination fact may be stale on a new session */
	for (int i = 0; i < pg->ntables; i++)
	{
		pg->tables[i]->resolved = false;
		rp_mirror_session_drop_objects(pg, pg->tables[i], false);
	}
	for (int i = 0; i < pg->nstale; i++)
		rp_free(pg->stale[i]);
	pg->nstale = 0;
	pg->in_txn = false;
	pg->conn = rp_mirror_session_open(pg->opts.conninfo, "replicant", true, pg->opts.replication_role, "");
	if (pg->conn == NULL)
		return -1;
	rp_mirror_set_cancel(pg);
	if (rp_mirror_lock_slot(pg) < 0)
		return -1;
	if (rp_mirror_read_max_ident(pg) < 0)
		return -1;
	if (rp_mirror_exec(pg, rp_mirror_bk(pg, rp_mirror_setup_sql), "creating the checkpoint table", NULL) < 0)
		return -1;
	return rp_mirror_checkpoint_columns(pg);
}

/* ---- the checkpoint row ----------------------------------------------------------- */

/* The checkpoint stored for our slot: 1 with *ck, 0 when none. */
int
rp_mirror_read_checkpoint(RpMirror *pg, RpCheckpoint *ck)
{
	const char *vals[1] = {pg->opts.slot};
	PGresult   *res;
	int			rc = 0;

	if (rp_mirror_connect(pg) < 0)
		return -1;
	res = PQexecParams(pg->conn,
					   rp_mirror_bk(pg, "SELECT system_id, timeline, commit_lsn::text, end_lsn::text, "
									"source, source_seq FROM @bk.checkpoint WHERE slot = $1 ORDER BY updated_at DESC"),
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, "reading the checkpoint", NULL);
	else if (PQntuples(res) > 0)
	{
		memset(ck, 0, sizeof(*ck));
		ck->system_id = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
		ck->timeline = (uint32_t) strtoul(PQgetvalue(res, 0, 1), NULL, 10);
		snprintf(ck->slot, sizeof(ck->slot), "%s", pg->opts.slot);
		rp_lsn_parse(PQgetvalue(res, 0, 2), &ck->commit_lsn);
		rp_lsn_parse(PQgetvalue(res, 0, 3), &ck->end_lsn);
		if (strcmp(PQgetvalue(res, 0, 4), "slot") != 0)
			snprintf(ck->source, sizeof(ck->source), "%s", PQgetvalue(res, 0, 4));
		if (!PQgetisnull(res, 0, 5))
			ck->source_seq = strtoull(PQgetvalue(res, 0, 5), NULL, 10);
		rc = 1;
	}
	PQclear(res);
	return rc;
}

static void
rp_mirror_ck_params(const RpCheckpoint *ck, char sysid[24], char tli[16], char commit[24],
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
int
rp_mirror_begin(RpMirror *pg, const RpCheckpoint *ck, uint64_t *done)
{
	char		sysid[24],
				tli[16],
				commit[24],
				end[24];
	const char *vals[4];
	PGresult   *res;
	int			rc = 0;

	if (rp_mirror_connect(pg) < 0)
		return -1;
	if (rp_mirror_exec(pg, "BEGIN", "BEGIN", NULL) < 0)
		return -1;
	pg->in_txn = true;
	rp_mirror_ck_params(ck, sysid, tli, commit, end);
	vals[0] = sysid;
	vals[1] = ck->slot;
	vals[2] = tli;
	vals[3] = rp_ckpt_source_name(ck->source);
	if (rp_mirror_exec_params(pg, rp_mirror_bk(pg, "INSERT INTO @bk.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn, source) "
											   "VALUES ($1, $2, $3, '0/0', '0/0', $4) ON CONFLICT DO NOTHING"),
							  4, vals, "creating the checkpoint row", NULL) < 0)
		return -1;
	res = PQexecParams(pg->conn,
					   rp_mirror_bk(pg, "SELECT commit_lsn::text FROM @bk.checkpoint "
									"WHERE system_id = $1 AND slot = $2 FOR UPDATE"),
					   2, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = rp_mirror_fail_result(pg, res, "locking the checkpoint", NULL);
	else if (!rp_lsn_parse(PQgetvalue(res, 0, 0), done))
		rc = rp_fail(RP_HALT_SINK, "destination checkpoint row is damaged");
	PQclear(res);
	return rc;
}

/* Advance the checkpoint (never backwards) and COMMIT. */
int
rp_mirror_session_commit(RpMirror *pg, const RpCheckpoint *ck)
{
	char		sysid[24],
				tli[16],
				commit[24],
				end[24];
	char		seq[24];
	const char *vals[7];

	rp_mirror_ck_params(ck, sysid, tli, commit, end);
	snprintf(seq, sizeof(seq), "%" PRIu64, ck->source_seq);
	vals[0] = sysid;
	vals[1] = ck->slot;
	vals[2] = tli;
	vals[3] = commit;
	vals[4] = end;
	vals[5] = rp_ckpt_source_name(ck->source);
	vals[6] = ck->source[0] ? seq : NULL;
	if (rp_mirror_exec_params(pg, rp_mirror_bk(pg, "UPDATE @bk.checkpoint SET timeline = $3,"
											   " commit_lsn = GREATEST(commit_lsn, $4::pg_lsn),"
											   " end_lsn = GREATEST(end_lsn, $5::pg_lsn), source = $6,"
											   " source_seq = GREATEST(source_seq, $7::bigint), updated_at = now()"
											   " WHERE system_id = $1 AND slot = $2"),
							  7, vals, "advancing the checkpoint", NULL) < 0)
		return -1;
	if (rp_mirror_exec(pg, "COMMIT", "COMMIT", NULL) < 0)
		return -1;
	pg->in_txn = false;
	return 0;
}
