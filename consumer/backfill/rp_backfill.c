/*
 * rp_backfill.c
 *    The backfill thread (rp_backfill.h): watermarks and chunks on a plain
 *    source session, and the hand-off of each chunk to the sink.
 *
 * Why the chunk read waits for the transactions in flight at the low
 * watermark: a transaction whose commit record precedes the low
 * watermark's can still be invisible to a snapshot taken just after the
 * low watermark committed (its commit record is written before it leaves
 * the proc array).  Its change would then be applied by the stream
 * before the window opened while the chunk holds the row's older value.
 * So a snapshot is noted right after the low watermark commits, and the
 * chunk is read only under a snapshot that sees every transaction that
 * was in progress in it; any transaction it does not see started after
 * the low watermark committed, so it commits inside the window.
 *
 * Errors on the source are logged (value-free) and the chunk is tried
 * again on a new session after a pause; the stream is not stopped.  A
 * table the backfill cannot do (missing, no primary key, not selected) is
 * refused by rp_backfill_start, before the stream starts: skipped with a
 * log line, the run went on and ended 0 with the table never copied.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backfill/rp_backfill.h"
#include "base/rp_clock.h"
#include "values/rp_pgtext.h"
#include "snapshot/rp_snapcat.h"
#include "snapshot/rp_snaptoken.h"
#include "snapshot/rp_snapwork.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"
#include "base/rp_uuid7.h"

struct RpBackfill
{
	RpBackfillOptions opts;
	pthread_t	thread;
	bool		started;
	char		run[RP_BFMSG_RUN_LEN + 1];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	RpBackfillChunk *pending;	/* handed over, high watermark written or about to be */
	bool		taken;			/* the sink applied it in an open transaction */
	bool		stored;			/* the sink committed it */
	bool		stop;
};

static void
rp_bf_log(const RpBackfill *bf, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
rp_bf_log(const RpBackfill *bf, const char *fmt,...)
{
	va_list		ap;
	char		line[1024];
	int			n = snprintf(line, sizeof(line), "%s: backfill: ", bf->opts.progname ? bf->opts.progname : "replicant");

	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t) n, fmt, ap);
	va_end(ap);
	if (bf->opts.log_fn)
		bf->opts.log_fn(line);	/* the program's log: its progress lines erased first */
	else
		fprintf(stderr, "%s\n", line);
}

static bool
rp_bf_stopping(RpBackfill *bf)
{
	bool		s;

	pthread_mutex_lock(&bf->mu);
	s = bf->stop;
	pthread_mutex_unlock(&bf->mu);
	return s;
}

/* Sleep ms, or less when asked to stop. */
static void
rp_bf_pause(RpBackfill *bf, int ms)
{
	struct timespec ts;

	rp_clock_deadline(&ts, ms);
	pthread_mutex_lock(&bf->mu);
	if (!bf->stop)
		pthread_cond_timedwait(&bf->cv, &bf->mu, &ts);
	pthread_mutex_unlock(&bf->mu);
}

/* Commit one watermark (its own transaction: it must be in the WAL in commit order). */
static int
rp_bf_watermark(const RpBackfill *bf, PGconn *conn, const RpSnapTable *t, RpBfMark mark, uint64_t chunk)
{
	RpBfMsg		m;
	char		text[256];
	const char *vals[2] = {RP_BACKFILL_PREFIX, text};
	PGresult   *res;
	int			rc = 0;

	memset(&m, 0, sizeof(m));
	m.mark = mark;
	memcpy(m.run, bf->run, sizeof(m.run));
	m.relid = t->rel->relid;
	m.chunk = chunk;
	if (rp_bfmsg_format(&m, text, sizeof(text)) < 0)
		return rp_fail(RP_HALT_NONE, "backfill: watermark does not fit");
	res = PQexecParams(conn, "SELECT pg_catalog.pg_logical_emit_message(true, $1, $2)", 2, NULL, vals,
					   NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_snap_fail_res(res, mark == RP_BF_LOW ? "writing the low watermark" : "writing the high watermark", t);
	PQclear(res);
	return rc;
}

/* The chunk's SELECT: non-generated columns as text, then the key as text. */
static void
rp_bf_select_sql(RpBuf *sql, PGconn *conn, const RpSnapTable *t, bool after, uint64_t limit)
{
	const RpRelation *rel = t->rel;
	bool		first = true;
	char		n[96];

	rp_buf_put_text(sql, "SELECT ");
	for (int i = 0; i < rel->natts; i++)
	{
		if (rel->cols[i].flags & RP_COL_GENERATED)
			continue;
		rp_buf_put_text(sql, first ? "rp_t." : ", rp_t.");
		first = false;
		rp_sql_ident(sql, rel->cols[i].name);
	}
	for (int k = 0; k < t->nkey; k++)
	{
		rp_buf_put_text(sql, first ? "rp_t." : ", rp_t.");
		first = false;
		rp_sql_ident(sql, rel->cols[t->keycols[k]].name);
		rp_buf_put_text(sql, "::pg_catalog.text");
	}
	rp_snap_sql_after(sql, conn, t, "replicant_bf", after);
	snprintf(n, sizeof(n), " LIMIT %" PRIu64, limit);
	rp_buf_put_text(sql, n);
	rp_buf_put_char(sql, '\0');
}

/*
 * Does this transaction's snapshot see every transaction that was in
 * flight at the low watermark (s0's in-progress list)?  1 yes, 0 not yet,
 * -1 after rp_fail.
 */
static int
rp_bf_sees_low(PGconn *conn, const RpSnapTable *t, const char *s0)
{
	const char *vals[1] = {s0};
	PGresult   *res;
	int			rc;

	res = PQexecParams(conn,
					   "SELECT COALESCE(pg_catalog.bool_and(pg_catalog.pg_visible_in_snapshot(x, pg_catalog.pg_current_snapshot())), true)"
					   " FROM pg_catalog.pg_snapshot_xip($1::pg_catalog.pg_snapshot) AS x",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rp_snap_fail_res(res, "checking the transactions in flight at the low watermark", t);
		PQclear(res);
		return -1;
	}
	rc = PQgetvalue(res, 0, 0)[0] == 't' ? 1 : 0;
	PQclear(res);
	return rc;
}

/*
 * The chunk's start key, as transaction-local settings the SELECT reads
 * (replicant_bf.kN): the key texts never go into the statement.  0 or -1.
 */
static int
rp_bf_set_keys(PGconn *conn, const RpSnapTable *t, const RpSnapToken *tok)
{
	for (int k = 0; k < t->nkey; k++)
	{
		char		name[64];
		const char *vals[2];
		PGresult   *res;

		snprintf(name, sizeof(name), "replicant_bf.k%d", k + 1);
		vals[0] = name;
		vals[1] = tok->keys[k];
		res = PQexecParams(conn, "SELECT pg_catalog.set_config($1, $2, true)", 2, NULL, vals, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			rp_snap_fail_res(res, "setting the chunk's start key", t);
			PQclear(res);
			return -1;
		}
		PQclear(res);
	}
	return 0;
}

/* The chunk's rows as COPY text lines (the first ncopy columns of res). */
static void
rp_bf_put_rows(RpBackfillChunk *ch, const PGresult *res, int ncopy)
{
	int			n = PQntuples(res);

	for (int r = 0; r < n; r++)
	{
		for (int c = 0; c < ncopy; c++)
		{
			if (c)
				rp_buf_put_char(&ch->rows, '\t');
			if (PQgetisnull(res, r, c))
				rp_buf_put_text(&ch->rows, "\\N");
			else
				rp_pgtext_copy_escape(&ch->rows, PQgetvalue(res, r, c), (size_t) PQgetlength(res, r, c));
		}
		rp_buf_put_char(&ch->rows, '\n');
	}
}

/*
 * Read the chunk after tok's key into ch (rows as COPY text lines, the new
 * token), under a snapshot that sees every transaction of s0's in-progress
 * list (see the file comment).  1 read, 0 not yet (try again), -1 error.
 */
static int
rp_bf_read(PGconn *conn, const RpSnapTable *t, const char *s0, const RpSnapToken *tok,
		   uint64_t limit, RpBackfillChunk *ch)
{
	const RpRelation *rel = t->rel;
	bool		after = tok->nkeys == t->nkey;
	PGresult   *res;
	RpBuf		sql;
	int			ncopy = 0;
	int			n;
	RpSnapToken nt;

	if (rp_snap_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", "BEGIN", t) < 0)
		return -1;
	switch (rp_bf_sees_low(conn, t, s0))
	{
		case 0:
			res = PQexec(conn, "ROLLBACK");
			PQclear(res);
			return 0;
		case -1:
			goto fail;
	}
	if (after && rp_bf_set_keys(conn, t, tok) < 0)
		goto fail;
	rp_buf_init(&sql, 512);
	rp_bf_select_sql(&sql, conn, t, after, limit);
	res = PQexec(conn, sql.data);
	rp_buf_free(&sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rp_snap_fail_res(res, "reading a chunk", t);
		PQclear(res);
		goto fail;
	}
	for (int i = 0; i < rel->natts; i++)
		if (!(rel->cols[i].flags & RP_COL_GENERATED))
			ncopy++;
	n = PQntuples(res);
	if (PQnfields(res) != ncopy + t->nkey)
	{
		PQclear(res);
		rp_fail(RP_HALT_NONE, "backfill: table \"%s\".\"%s\": chunk has an unexpected column count",
				rel->schema, rel->name);
		goto fail;
	}
	rp_bf_put_rows(ch, res, ncopy);
	ch->nrows = (uint64_t) n;
	ch->last = (uint64_t) n < limit;

	/* the token after this chunk: its last key, or where the last one stopped */
	memset(&nt, 0, sizeof(nt));
	nt.done = ch->last;
	nt.rows = tok->rows + (uint64_t) n;
	for (int k = 0; k < t->nkey; k++)
	{
		if (n > 0)
			nt.keys[nt.nkeys++] = PQgetvalue(res, n - 1, ncopy + k);
		else if (after)
			nt.keys[nt.nkeys++] = tok->keys[k];
	}
	ch->token = rp_snaptoken_format(&nt);
	PQclear(res);
	if (rp_snap_exec(conn, "COMMIT", "COMMIT", t) < 0)
		return -1;
	return 1;

fail:
	res = PQexec(conn, "ROLLBACK");
	PQclear(res);
	return -1;
}

/* Hand ch over to the sink (before its high watermark is written). */
static void
rp_bf_give(RpBackfill *bf, RpBackfillChunk *ch)
{
	pthread_mutex_lock(&bf->mu);
	bf->pending = ch;
	bf->taken = false;
	bf->stored = false;
	pthread_mutex_unlock(&bf->mu);
}

/* Take the chunk back if the sink has not started on it; true when withdrawn. */
static bool
rp_bf_withdraw(RpBackfill *bf)
{
	bool		ok;

	pthread_mutex_lock(&bf->mu);
	ok = !bf->taken;
	if (ok)
		bf->pending = NULL;
	pthread_mutex_unlock(&bf->mu);
	return ok;
}

/* Wait until the sink committed the chunk; -1 when asked to stop first. */
static int
rp_bf_wait_stored(RpBackfill *bf)
{
	int			rc;

	pthread_mutex_lock(&bf->mu);
	while (!bf->stored && !bf->stop)
		pthread_cond_wait(&bf->cv, &bf->mu);
	rc = bf->stored ? 0 : -1;
	bf->pending = NULL;
	pthread_mutex_unlock(&bf->mu);
	return rc;
}

/* The table described as the plugin would, or NULL (logged). */
static RpSnapTable *
rp_bf_describe(PGconn *conn, const char *name, bool via_root, RpSnapTable **all, int *nall)
{
	RpSnapSelect sel = {name, NULL, via_root};
	RpSnapTable *ts = rp_snapcat_tables(conn, &sel, nall);

	*all = ts;
	if (ts == NULL)
		return NULL;
	for (int i = 0; i < *nall; i++)
	{
		char		q[1024];

		snprintf(q, sizeof(q), "%s.%s", ts[i].rel->schema, ts[i].rel->name);
		if (strcmp(q, name) == 0)
			return &ts[i];
	}
	rp_fail(RP_HALT_CONFIG, "backfill: table %s not found (give it as SCHEMA.TABLE)", name);
	return NULL;
}

/*
 * Copy t's chunks after tok (which moves along) to the end: watermarks,
 * read, hand-off, wait.  0 done, -1 error to retry, 1 stop requested.
 */
static int
rp_bf_chunks(RpBackfill *bf, PGconn *conn, const RpSnapTable *t, RpSnapToken *tok)
{
	const RpBackfillOptions *o = &bf->opts;
	uint64_t	chunk = 0;
	int			rc = -1;

	for (;;)
	{
		RpBackfillChunk ch;
		char	   *s0;
		PGresult   *res;
		int			r;

		if (rp_bf_stopping(bf))
		{
			rc = 1;
			break;
		}
		memset(&ch, 0, sizeof(ch));
		if (rp_bf_watermark(bf, conn, t, RP_BF_LOW, chunk) < 0)
			break;
		/* the transactions in flight now: the chunk's snapshot must see them all */
		res = PQexec(conn, "SELECT pg_catalog.pg_current_snapshot()::text");
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			rp_snap_fail_res(res, "noting the snapshot after the low watermark", t);
			PQclear(res);
			break;
		}
		s0 = rp_strndup(PQgetvalue(res, 0, 0), strlen(PQgetvalue(res, 0, 0)));
		PQclear(res);
		rp_buf_init(&ch.rows, 64 * 1024);
		while ((r = rp_bf_read(conn, t, s0, tok, o->chunk_rows, &ch)) == 0 && !rp_bf_stopping(bf))
			usleep(20 * 1000);
		rp_free(s0);
		if (r <= 0)
		{
			rp_buf_free(&ch.rows);
			if (r == 0)
				rc = 1;
			break;
		}
		ch.id.mark = RP_BF_HIGH;
		memcpy(ch.id.run, bf->run, sizeof(ch.id.run));
		ch.id.relid = t->rel->relid;
		ch.id.chunk = chunk;
		ch.rel = t->rel;
		ch.keycols = t->keycols;
		ch.nkey = t->nkey;
		rp_bf_give(bf, &ch);
		if (rp_bf_watermark(bf, conn, t, RP_BF_HIGH, chunk) < 0)
		{
			/* no high watermark committed: the sink cannot have taken it */
			rp_bf_withdraw(bf);
			rp_buf_free(&ch.rows);
			rp_free(ch.token);
			break;
		}
		r = rp_bf_wait_stored(bf);
		rp_buf_free(&ch.rows);
		if (r < 0)
		{
			rp_free(ch.token);
			rc = 1;
			break;
		}
		/* the next chunk continues after this one's last key */
		rp_snaptoken_free(tok);
		if (!rp_snaptoken_parse(ch.token, tok))
		{
			rp_free(ch.token);
			rp_fail(RP_HALT_NONE, "backfill: a progress token does not parse");
			break;
		}
		rp_free(ch.token);
		if (o->verbose)
			rp_bf_log(bf, "table \"%s\".\"%s\": chunk %" PRIu64 " stored (%" PRIu64 " rows so far)",
					  t->rel->schema, t->rel->name, chunk, tok->rows);
		chunk++;
		if (tok->done)
		{
			rp_bf_log(bf, "table \"%s\".\"%s\" backfilled: %" PRIu64 " rows", t->rel->schema, t->rel->name, tok->rows);
			rc = 0;
			break;
		}
	}
	return rc;
}

/*
 * name described, if a backfill can copy it (there, selected, keyed), on
 * conn; NULL after rp_fail() (RP_HALT_CONFIG: it cannot).  *all owns it.
 */
static RpSnapTable *
rp_bf_usable(const RpBackfillOptions *o, PGconn *conn, const char *name, RpSnapTable **all, int *nall)
{
	RpSnapTable *t;

	if ((t = rp_bf_describe(conn, name, o->via_root, all, nall)) == NULL)
		return NULL;
	if (!rp_snapcat_selected(&(RpSnapSelect) {o->include, o->exclude, o->via_root}, t->rel->schema, t->rel->name))
	{
		rp_fail(RP_HALT_CONFIG, "backfill: table \"%s\".\"%s\" is not in the plugin's selection (include_tables, exclude_tables): its watermarks would have no rows around them",
				t->rel->schema, t->rel->name);
		return NULL;
	}
	if (t->nkey == 0 || t->nkey > RP_SNAPTOKEN_MAX_KEYS)
	{
		rp_fail(RP_HALT_CONFIG, "backfill: table \"%s\".\"%s\" has no primary key; a backfill reads it in key order and needs one (copy it with a new slot's --snapshot instead)",
				t->rel->schema, t->rel->name);
		return NULL;
	}
	return t;
}

/*
 * Backfill one table to the end.  0 done (or skipped, logged), -1 error to
 * retry, 1 stop requested.
 */
static int
rp_bf_table(RpBackfill *bf, const char *name, bool *skip)
{
	RpBackfillOptions *o = &bf->opts;
	RpSnapOptions so;
	PGconn	   *conn;
	RpSnapTable *all = NULL;
	RpSnapTable *t;
	int			nall = 0;
	RpSnapToken tok;
	char	   *stored = NULL;
	int			rc = -1;

	memset(&tok, 0, sizeof(tok));
	memset(&so, 0, sizeof(so));
	so.conninfo = o->conninfo;
	so.progname = o->progname;
	if ((conn = rp_snap_connect(&so)) == NULL)
		return -1;
	if ((t = rp_bf_usable(o, conn, name, &all, &nall)) == NULL)
	{
		*skip = rp_error_halt() == RP_HALT_CONFIG;
		goto out;
	}
	/* resume after the last chunk the sink stored */
	switch (o->progress(o->progress_arg, t->rel->relid, &stored))
	{
		case 1:
			if (!rp_snaptoken_parse(stored, &tok) || tok.heap || (tok.nkeys != 0 && tok.nkeys != t->nkey))
			{
				rp_fail(RP_HALT_CONFIG, "backfill: the stored progress of table \"%s\".\"%s\" is damaged",
						t->rel->schema, t->rel->name);
				*skip = true;
				goto out;
			}
			break;
		case 0:
			break;
		default:
			goto out;
	}
	if (tok.done)
	{
		rp_bf_log(bf, "table \"%s\".\"%s\" is already backfilled (%" PRIu64 " rows)",
				  t->rel->schema, t->rel->name, tok.rows);
		rc = 0;
		goto out;
	}
	if (tok.rows > 0)
		rp_bf_log(bf, "table \"%s\".\"%s\": resuming after %" PRIu64 " rows", t->rel->schema, t->rel->name, tok.rows);

	rc = rp_bf_chunks(bf, conn, t, &tok);
out:
	if (stored)
		rp_free(stored);
	rp_snaptoken_free(&tok);
	rp_snapcat_free(all, nall);
	PQfinish(conn);
	return rc;
}

static void *
rp_bf_main(void *arg)
{
	RpBackfill *bf = arg;

	for (int i = 0; i < bf->opts.ntables && !rp_bf_stopping(bf); i++)
	{
		int			backoff = 1;

		for (;;)
		{
			bool		skip = false;
			int			rc = rp_bf_table(bf, bf->opts.tables[i], &skip);

			if (rc >= 0)
				break;
			rp_bf_log(bf, "%s", rp_error());
			if (skip)
				break;
			if (rp_bf_stopping(bf))
				break;
			rp_bf_log(bf, "table %s: trying again in %d s", bf->opts.tables[i], backoff);
			rp_bf_pause(bf, backoff * 1000);
			backoff = backoff * 2 > 30 ? 30 : backoff * 2;
		}
	}
	return NULL;
}

RpBackfill *
rp_backfill_new(void)
{
	RpBackfill *bf = rp_malloc0(sizeof(RpBackfill));

	pthread_mutex_init(&bf->mu, NULL);
	pthread_cond_init(&bf->cv, NULL);
	return bf;
}

void
rp_backfill_free(RpBackfill *bf)
{
	if (bf == NULL)
		return;
	rp_backfill_stop(bf);
	pthread_mutex_destroy(&bf->mu);
	pthread_cond_destroy(&bf->cv);
	rp_free(bf);
}

/* Every table of opts is one a backfill can copy: else the run fails at start, naming it. */
static int
rp_bf_check_all(const RpBackfillOptions *o)
{
	RpSnapOptions so;
	PGconn	   *conn;
	int			rc = 0;

	memset(&so, 0, sizeof(so));
	so.conninfo = o->conninfo;
	so.progname = o->progname;
	if ((conn = rp_snap_connect(&so)) == NULL)
		return -1;
	if (rp_sql_in_recovery(conn))
		rc = rp_fail(RP_HALT_CONFIG, "--backfill cannot run on a standby: its watermarks are logical messages, which a server in recovery cannot write (pg_logical_emit_message); backfill from the primary, or copy the table with a new slot and --snapshot");
	for (int i = 0; i < o->ntables && rc == 0; i++)
	{
		RpSnapTable *all = NULL;
		int			nall = 0;

		if (rp_bf_usable(o, conn, o->tables[i], &all, &nall) == NULL)
			rc = -1;
		rp_snapcat_free(all, nall);
	}
	PQfinish(conn);
	return rc;
}

int
rp_backfill_start(RpBackfill *bf, const RpBackfillOptions *opts)
{
	RpUuid		u;
	RpUuid7Gen	ids = RP_UUID7_GEN_INIT;	/* the run id: its one mint */
	int			rc;

	if (bf->started)
		return rp_fail(RP_HALT_CONFIG, "backfill: already running");
	if (rp_bf_check_all(opts) < 0)
		return -1;
	bf->opts = *opts;
	bf->stop = false;
	bf->pending = NULL;
	rc = rp_uuid7_now(&ids, &u);
	rp_uuid7_gen_free(&ids);
	if (rc < 0)
		return -1;
	rp_uuid_text(&u, bf->run);
	bf->run[RP_BFMSG_RUN_LEN] = '\0';
	/* set first: the thread's watermarks may reach the sink before pthread_create returns */
	bf->started = true;
	if (pthread_create(&bf->thread, NULL, rp_bf_main, bf) != 0)
	{
		bf->started = false;
		return rp_fail(RP_HALT_NONE, "backfill: could not start its thread");
	}
	return 0;
}

void
rp_backfill_stop(RpBackfill *bf)
{
	if (bf == NULL || !bf->started)
		return;
	pthread_mutex_lock(&bf->mu);
	bf->stop = true;
	pthread_cond_broadcast(&bf->cv);
	pthread_mutex_unlock(&bf->mu);
	pthread_join(bf->thread, NULL);
	bf->started = false;
}

bool
rp_backfill_running(const RpBackfill *bf)
{
	return bf != NULL && bf->started;
}

const char *
rp_backfill_run_id(const RpBackfill *bf)
{
	return bf != NULL && bf->started ? bf->run : "";
}

RpBackfillChunk *
rp_backfill_take(RpBackfill *bf, const RpBfMsg *high)
{
	RpBackfillChunk *ch = NULL;

	pthread_mutex_lock(&bf->mu);
	if (bf->pending && !bf->taken && !bf->stored && rp_bfmsg_same_chunk(&bf->pending->id, high))
	{
		ch = bf->pending;
		bf->taken = true;
	}
	pthread_mutex_unlock(&bf->mu);
	return ch;
}

void
rp_backfill_release(RpBackfill *bf, RpBackfillChunk *ch, bool stored)
{
	pthread_mutex_lock(&bf->mu);
	if (bf->pending == ch)
	{
		bf->taken = false;
		bf->stored = stored;
		pthread_cond_broadcast(&bf->cv);
	}
	pthread_mutex_unlock(&bf->mu);
}
