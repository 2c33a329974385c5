/*
 * rp_dbverify.c
 *    replicant verify: the sessions, the chunk walk, the re-reads after the
 *    mirror caught up, and the report (see rp_dbverify.h).
 *
 * A chunk is first read on the source (its hash and last key, LIMIT
 * --chunk-rows in key order), then pg_current_wal_insert_lsn() there (at
 * or past the end of every commit the read saw, even an asynchronous one
 * not yet written), then the same key range on the destination.  A chunk
 * that differs is read again on the destination once the mirror's
 * checkpoint (end_lsn of the slot) passed that LSN; equal to the first
 * source read: it was lag.  Still different, it is re-read in rounds: the
 * source (same bounds, now without a limit), its LSN L, a wait until the
 * checkpoint is at or past L, the destination, the source once more.
 * Equal to either source read: lag.  Different, with both source reads
 * the same: the mirror had applied everything up to L and still differs,
 * a real difference.  The source changed in between: another round, until
 * --recheck-timeout.  Every statement is autocommit: neither server holds a
 * snapshot open for longer than one statement.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "rp_lsn.h"
#include "base/rp_clock.h"
#include "base/rp_session.h"
#include "base/rp_status.h"
#include "migrate/rp_dbverify.h"
#include "snapshot/rp_snapcat.h"

#define PROG "replicant verify"

typedef struct DbvRun
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
	bool		broken;			/* a session failed: stop */
} DbvRun;

/* A chunk's hash on one side. */
typedef struct DbvHash
{
	int64_t		rows;
	char		md5[33];
} DbvHash;

/* Per table: the two descriptions and the report's counters. */
typedef struct DbvTable
{
	const RpSnapTable *st;
	RpDbvTable	src;
	RpDbvTable	dst;
	char		dst_schema[256];
	char		qname[600];		/* schema.table of the source, for messages */
	const char **cols;
	const char **keys;
	const char **keytypes;
	int64_t		chunks;
	int64_t		rows;
	int64_t		differing;
	int64_t		reread;			/* chunks that differed on the first read */
	bool		not_compared;
} DbvTable;

/* ---- errors, value-free ------------------------------------------------------ */

static void
dbv_error(DbvRun *r, PGconn *conn, PGresult *res, const char *what, const DbvTable *t)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	fprintf(stderr, "%s: error: %s%s%s%s on the %s failed: %s%s\n", PROG,
			t ? "table " : "", t ? t->qname : "", t ? ": " : "", what,
			conn == r->src ? "source" : "destination",
			state ? "SQLSTATE " : "",
			state ? state : (PQstatus(conn) == CONNECTION_BAD ? "connection lost" : "no result"));
	r->broken = true;
}

static PGresult *
dbv_exec(DbvRun *r, PGconn *conn, const char *sql, int nparams, const char *const *params,
		 const char *what, const DbvTable *t)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		dbv_error(r, conn, res, what, t);
		PQclear(res);
		return NULL;
	}
	return res;
}

/* ---- --max-rate ------------------------------------------------------------------ */

static void
dbv_pace(DbvRun *r, int64_t rows)
{
	int64_t		due_us;
	int64_t		now;

	if (r->o->max_rate <= 0)
		return;
	r->rate_rows += rows;
	due_us = r->rate_t0_us + r->rate_rows * 1000000 / r->o->max_rate;
	now = rp_clock_mono_us();
	if (due_us > now)
		rp_pause_ms((int) ((due_us - now + 999) / 1000));
}

/* ---- LSNs and the checkpoint ---------------------------------------------------- */

static int
dbv_source_lsn(DbvRun *r, uint64_t *lsn)
{
	PGresult   *res = dbv_exec(r, r->src, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text", 0, NULL,
							   "reading the WAL position", NULL);

	if (res == NULL)
		return -1;
	rp_lsn_parse(PQgetvalue(res, 0, 0), lsn);
	PQclear(res);
	return 0;
}

static int
dbv_checkpoint(DbvRun *r, uint64_t *lsn)
{
	const char *params[2] = {r->slot, r->system_id};
	PGresult   *res = dbv_exec(r, r->dst, r->ckpt_sql.data, 2, params, "reading the checkpoint", NULL);

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
static int
dbv_wait_checkpoint(DbvRun *r, uint64_t lsn, int64_t deadline_us)
{
	for (;;)
	{
		uint64_t	at;

		if (dbv_checkpoint(r, &at) < 0)
			return -1;
		if (at >= lsn)
			return 1;
		if (rp_clock_mono_us() >= deadline_us || rp_stop_requested())
			return 0;
		rp_pause_ms(200);
	}
}

/*
 * The source's system id as the mirror stores it (unsigned decimal), so
 * that a destination holding mirrors of several sources picks this one's
 * rows; "" when the role may not call pg_control_system() (then the slot
 * alone names the row).
 */
static void
dbv_system_id(DbvRun *r)
{
	PGresult   *res = PQexec(r->src,
							 "SELECT CASE WHEN system_identifier < 0"
							 " THEN (system_identifier::numeric + 18446744073709551616)::text"
							 " ELSE system_identifier::text END FROM pg_catalog.pg_control_system()");

	r->system_id[0] = '\0';
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		snprintf(r->system_id, sizeof(r->system_id), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

/* The slot's row (-S), or the one row there is; the RP_DBVERIFY_* status of a failure. */
static int
dbv_find_slot(DbvRun *r)
{
	RpBuf		sql;
	PGresult   *res;
	const char *params[2] = {r->o->slot ? r->o->slot : "", r->system_id};
	int			n;

	dbv_system_id(r);
	rp_buf_init(&sql, 256);
	rp_buf_put_text(&sql, "SELECT slot, end_lsn::text FROM ");
	rp_dbverify_put_ident(&sql, r->o->bookkeeping);
	rp_buf_put_text(&sql, ".checkpoint WHERE ($1 = '' OR slot = $1) AND ($2 = '' OR system_id = $2)");
	rp_buf_put_char(&sql, '\0');
	res = PQexecParams(r->dst, sql.data, 2, NULL, params, NULL, NULL, 0);
	rp_buf_free(&sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (state && strcmp(state, "42P01") == 0)
			fprintf(stderr, "%s: error: the destination has no checkpoint table %s.checkpoint:"
					" not a mirror, or another --bookkeeping-schema\n", PROG, r->o->bookkeeping);
		else
			dbv_error(r, r->dst, res, "reading the checkpoint table", NULL);
		PQclear(res);
		return RP_DBVERIFY_FAILED;
	}
	n = PQntuples(res);
	if (n == 0)
	{
		if (r->o->slot)
			fprintf(stderr, "%s: error: the destination's checkpoint table has no row of slot \"%s\""
					" for this source\n", PROG, r->o->slot);
		else
			fprintf(stderr, "%s: error: the destination's checkpoint table has no row for this source\n",
					PROG);
		PQclear(res);
		return RP_DBVERIFY_FAILED;
	}
	if (n > 1)
	{
		/* only without -S, or when the source's system id could not be read */
		fprintf(stderr, "%s: error: the destination's checkpoint table has %d rows for this source:"
				" name the mirror's slot with -S\n"
				"Try \"%s --help\" for more information.\n", PROG, n, PROG);
		PQclear(res);
		return RP_DBVERIFY_USAGE;
	}
	r->slot = rp_strndup(PQgetvalue(res, 0, 0), strlen(PQgetvalue(res, 0, 0)));
	PQclear(res);
	return RP_DBVERIFY_EQUAL;
}

/* ---- one table's description on both sides ------------------------------------ */

/* 1 when the destination has the table with every source column, 0 not (reported), -1 error */
static int
dbv_table_present(DbvRun *r, DbvTable *t)
{
	const char *params[2] = {t->dst.schema, t->dst.name};
	PGresult   *res = dbv_exec(r, r->dst,
							   "SELECT a.attname FROM pg_catalog.pg_attribute a"
							   " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
							   " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
							   " WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')"
							   " AND a.attnum > 0 AND NOT a.attisdropped",
							   2, params, "reading the columns", t);
	int			n;

	if (res == NULL)
		return -1;
	n = PQntuples(res);
	if (n == 0)
	{
		printf("%s: different: missing on the destination (%s.%s)\n", t->qname,
			   t->dst.schema, t->dst.name);
		PQclear(res);
		return 0;
	}
	for (int c = 0; c < t->src.ncols; c++)
	{
		bool		found = false;

		for (int i = 0; i < n && !found; i++)
			found = strcmp(PQgetvalue(res, i, 0), t->src.cols[c]) == 0;
		if (!found)
		{
			printf("%s: different: column \"%s\" missing on the destination\n", t->qname,
				   t->src.cols[c]);
			PQclear(res);
			return 0;
		}
	}
	PQclear(res);
	return 1;
}

static void
dbv_table_init(DbvRun *r, DbvTable *t, const RpSnapTable *st)
{
	const RpRelation *rel = st->rel;

	memset(t, 0, sizeof(*t));
	t->st = st;
	snprintf(t->qname, sizeof(t->qname), "%s.%s", rel->schema, rel->name);
	snprintf(t->dst_schema, sizeof(t->dst_schema), "%s%s",
			 r->o->schema_prefix ? r->o->schema_prefix : "", rel->schema);
	t->cols = rp_malloc(sizeof(char *) * (rel->natts + 1));
	for (int i = 0; i < rel->natts; i++)
		t->cols[i] = rel->cols[i].name;
	t->keys = rp_malloc(sizeof(char *) * (st->nkey + 1));
	t->keytypes = rp_malloc(sizeof(char *) * (st->nkey + 1));
	for (int i = 0; i < st->nkey; i++)
	{
		t->keys[i] = rel->cols[st->keycols[i]].name;
		t->keytypes[i] = rel->cols[st->keycols[i]].type_name;
	}
	t->src.schema = rel->schema;
	t->src.name = rel->name;
	t->src.ncols = rel->natts;
	t->src.cols = t->cols;
	t->src.nkey = st->nkey;
	t->src.keys = t->keys;
	t->src.keytypes = t->keytypes;
	t->dst = t->src;
	t->dst.schema = t->dst_schema;
}

static void
dbv_table_free(DbvTable *t)
{
	rp_free(t->cols);
	rp_free(t->keys);
	rp_free(t->keytypes);
}

/* ---- keyed tables ----------------------------------------------------------------- */

/* A chunk's bounds: nkey texts each, NULL for an open end. */
typedef struct DbvBounds
{
	char	  **lo;
	char	  **hi;
} DbvBounds;

static char **
dbv_keys_dup(PGresult *res, int first, int n)
{
	char	  **k = rp_malloc(sizeof(char *) * (size_t) n);

	for (int i = 0; i < n; i++)
		k[i] = rp_strndup(PQgetvalue(res, 0, first + i), strlen(PQgetvalue(res, 0, first + i)));
	return k;
}

static void
dbv_keys_free(char **k, int n)
{
	if (k == NULL)
		return;
	for (int i = 0; i < n; i++)
		rp_free(k[i]);
	rp_free(k);
}

/* params = lo then hi (those present) */
static int
dbv_params(const DbvTable *t, const DbvBounds *b, const char **params)
{
	int			n = 0;

	for (int i = 0; b->lo && i < t->src.nkey; i++)
		params[n++] = b->lo[i];
	for (int i = 0; b->hi && i < t->src.nkey; i++)
		params[n++] = b->hi[i];
	return n;
}

/* The hash of the bounded range on one side; -1 error. */
static int
dbv_range_hash(DbvRun *r, PGconn *conn, DbvTable *t, const DbvBounds *b, DbvHash *h)
{
	const char *params[2 * 32 + 2];
	const char **pp = t->src.nkey <= 32 ? params : rp_malloc(sizeof(char *) * 2 * (size_t) t->src.nkey);
	int			np = dbv_params(t, b, pp);
	PGresult   *res;

	rp_buf_reset(&r->sql);
	rp_dbverify_sql_range(&r->sql, conn == r->src ? &t->src : &t->dst, b->lo != NULL, b->hi != NULL,
						  0, false);
	rp_buf_put_char(&r->sql, '\0');
	res = dbv_exec(r, conn, r->sql.data, np, pp, "hashing a chunk", t);
	if (pp != params)
		rp_free(pp);
	if (res == NULL)
		return -1;
	h->rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	snprintf(h->md5, sizeof(h->md5), "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	dbv_pace(r, h->rows);
	return 0;
}

static bool
dbv_hash_eq(const DbvHash *a, const DbvHash *b)
{
	return a->rows == b->rows && strcmp(a->md5, b->md5) == 0;
}

/* A key's text on one line of the keys file: backslash, tab, newline and CR escaped. */
static void
dbv_put_escaped(FILE *f, const char *s)
{
	for (; *s; s++)
	{
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\r')
			fputs("\\r", f);
		else
			fputc(*s, f);
	}
}

static void
dbv_emit_key(void *arg, RpDbvKeyDiff d, const char *key)
{
	void	  **a = arg;
	FILE	   *f = a[0];

	fputs("key\t", f);
	dbv_put_escaped(f, (const char *) a[1]);
	fprintf(f, "\t%s\t", rp_dbverify_diff_name(d));
	dbv_put_escaped(f, key);
	fputc('\n', f);
}

static RpDbvKey *
dbv_list_keys(DbvRun *r, PGconn *conn, DbvTable *t, const DbvBounds *b, PGresult **out, size_t *n)
{
	const char *params[64];
	const char **pp = t->src.nkey <= 32 ? params : rp_malloc(sizeof(char *) * 2 * (size_t) t->src.nkey);
	int			np = dbv_params(t, b, pp);
	RpDbvKey   *k;

	rp_buf_reset(&r->sql);
	rp_dbverify_sql_keys(&r->sql, conn == r->src ? &t->src : &t->dst, b->lo != NULL, b->hi != NULL);
	rp_buf_put_char(&r->sql, '\0');
	*out = dbv_exec(r, conn, r->sql.data, np, pp, "listing a chunk's keys", t);
	if (pp != params)
		rp_free(pp);
	if (*out == NULL)
		return NULL;
	*n = (size_t) PQntuples(*out);
	k = rp_malloc(sizeof(RpDbvKey) * (*n + 1));
	for (size_t i = 0; i < *n; i++)
	{
		k[i].key = PQgetvalue(*out, (int) i, 0);
		k[i].hash = PQgetvalue(*out, (int) i, 1);
	}
	return k;
}

static void
dbv_put_bound(FILE *f, char **k, int n)
{
	if (k == NULL)
	{
		fputs("-", f);
		return;
	}
	fputc('(', f);
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			fputc(',', f);
		dbv_put_escaped(f, k[i]);
	}
	fputc(')', f);
}

/* --keys-file: the range's bounds and the keys that differ in it (bounded by one chunk). */
static int
dbv_write_keys(DbvRun *r, DbvTable *t, int64_t chunk, const DbvBounds *b)
{
	PGresult   *sres,
			   *dres;
	size_t		ns = 0,
				nd = 0;
	RpDbvKey   *sk,
			   *dk;
	void	   *arg[2] = {r->keys, t->qname};

	fputs("range\t", r->keys);
	dbv_put_escaped(r->keys, t->qname);
	fprintf(r->keys, "\t%" PRId64 "\t", chunk);
	dbv_put_bound(r->keys, b->lo, t->src.nkey);
	fputc('\t', r->keys);
	dbv_put_bound(r->keys, b->hi, t->src.nkey);
	fputc('\n', r->keys);
	sk = dbv_list_keys(r, r->src, t, b, &sres, &ns);
	if (sk == NULL)
		return -1;
	dk = dbv_list_keys(r, r->dst, t, b, &dres, &nd);
	if (dk == NULL)
	{
		rp_free(sk);
		PQclear(sres);
		return -1;
	}
	rp_dbverify_diff_keys(sk, ns, dk, nd, dbv_emit_key, arg);
	rp_free(sk);
	rp_free(dk);
	PQclear(sres);
	PQclear(dres);
	return 0;
}

/*
 * Re-read a chunk that differed until it is equal, or differs with the
 * mirror caught up to a stable source read; 1 equal, 0 different, 2 not
 * compared (the mirror never reached the LSN), -1 error.  first and
 * first_lsn are the first read's: once the mirror passed first_lsn, the
 * destination alone is read again first (a chunk the source no longer
 * changes costs the source nothing more).
 */
static int
dbv_recheck(DbvRun *r, DbvTable *t, const DbvBounds *b, const DbvHash *first, uint64_t first_lsn,
			DbvHash *src_out, DbvHash *dst_out)
{
	int64_t		deadline = rp_clock_mono_us() + (int64_t) r->o->recheck_timeout_s * 1000000;
	int			w = dbv_wait_checkpoint(r, first_lsn, deadline);

	if (w <= 0)
		return w < 0 ? -1 : 2;
	if (dbv_range_hash(r, r->dst, t, b, dst_out) < 0)
		return -1;
	*src_out = *first;
	if (dbv_hash_eq(first, dst_out))
		return 1;
	for (;;)
	{
		DbvHash		s1,
					s2,
					d;
		uint64_t	lsn;
		int			w;

		if (dbv_range_hash(r, r->src, t, b, &s1) < 0 || dbv_source_lsn(r, &lsn) < 0)
			return -1;
		w = dbv_wait_checkpoint(r, lsn, deadline);
		if (w <= 0)
			return w < 0 ? -1 : 2;
		if (dbv_range_hash(r, r->dst, t, b, &d) < 0)
			return -1;
		*src_out = s1;
		*dst_out = d;
		if (dbv_hash_eq(&s1, &d))
			return 1;
		if (dbv_range_hash(r, r->src, t, b, &s2) < 0)
			return -1;
		if (dbv_hash_eq(&s2, &d))
			return 1;
		if (dbv_hash_eq(&s1, &s2))
			return 0;
		/* the source changed under us: another round while time remains */
		if (rp_clock_mono_us() >= deadline || rp_stop_requested())
			return 0;
	}
}

/* A chunk that differed on the first read: re-read, report; -1 error. */
static int
dbv_chunk_differs(DbvRun *r, DbvTable *t, int64_t chunk, int64_t first_row, const DbvBounds *b,
				  const DbvHash *first, uint64_t first_lsn)
{
	DbvHash		s,
				d;
	int			rc;
	RpBuf		line;

	t->reread++;
	if (r->o->verbose)
		fprintf(stderr, "%s: %s: chunk %" PRId64 " differs on the first read: reading it again"
				" once the mirror has caught up\n", PROG, t->qname, chunk);
	rc = dbv_recheck(r, t, b, first, first_lsn, &s, &d);

	if (rc < 0)
		return -1;
	if (rc == 1)
		return 0;
	if (rc == 2)
	{
		printf("%s: chunk %" PRId64 " not compared: the mirror's checkpoint did not reach the"
			   " source's WAL position within %d s\n", t->qname, chunk, r->o->recheck_timeout_s);
		t->not_compared = true;
		return 0;
	}
	t->differing++;
	rp_buf_init(&line, 160);
	rp_dbverify_range_text(&line, chunk, first_row, s.rows, d.rows);
	rp_buf_put_char(&line, '\0');
	printf("%s: different: %s\n", t->qname, line.data);
	rp_buf_free(&line);
	if (r->keys && dbv_write_keys(r, t, chunk, b) < 0)
		return -1;
	return 0;
}

static int
dbv_keyed(DbvRun *r, DbvTable *t)
{
	int			nkey = t->src.nkey;
	char	  **lo = NULL;
	int64_t		first_row = 1;
	const char *params[64];
	const char **pp = nkey <= 32 ? params : rp_malloc(sizeof(char *) * (size_t) nkey);
	int			rc = 0;
	RpBuf		sql_next;

	rp_buf_init(&sql_next, 1024);
	for (int64_t chunk = 1;; chunk++)
	{
		PGresult   *res;
		DbvHash		s,
					d;
		DbvBounds	b;
		uint64_t	lsn;

		/* the next chunk on the source: its hash and its last key */
		rp_buf_reset(&sql_next);
		rp_dbverify_sql_range(&sql_next, &t->src, lo != NULL, false, r->o->chunk_rows, true);
		rp_buf_put_char(&sql_next, '\0');
		for (int i = 0; lo && i < nkey; i++)
			pp[i] = lo[i];
		res = dbv_exec(r, r->src, sql_next.data, lo ? nkey : 0, pp, "hashing a chunk", t);
		if (res == NULL || dbv_source_lsn(r, &lsn) < 0)
		{
			PQclear(res);
			rc = -1;
			break;
		}
		s.rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		snprintf(s.md5, sizeof(s.md5), "%s", PQgetvalue(res, 0, 1));
		b.lo = lo;
		/* a short chunk is the last: its range is open, so extra rows past it count */
		b.hi = s.rows >= r->o->chunk_rows ? dbv_keys_dup(res, 2, nkey) : NULL;
		PQclear(res);
		dbv_pace(r, s.rows);
		t->chunks++;
		t->rows += s.rows;

		if (dbv_range_hash(r, r->dst, t, &b, &d) < 0)
			rc = -1;
		else if (!dbv_hash_eq(&s, &d))
			rc = dbv_chunk_differs(r, t, chunk, first_row, &b, &s, lsn);
		dbv_keys_free(lo, nkey);
		lo = b.hi;
		first_row += s.rows;
		if (rc < 0 || lo == NULL || rp_stop_requested())
			break;
	}
	dbv_keys_free(lo, nkey);
	rp_buf_free(&sql_next);
	if (pp != params)
		rp_free(pp);
	return rc;
}

/* ---- keyless tables: multisets by bucket ------------------------------------------ */

typedef struct DbvBucket
{
	int64_t		rows;
	char		s1[32];
	char		s2[32];
} DbvBucket;

/* every bucket's figures (256, the empty ones zero); -1 error */
static int
dbv_buckets(DbvRun *r, PGconn *conn, DbvTable *t, DbvBucket *bk)
{
	PGresult   *res;

	memset(bk, 0, sizeof(DbvBucket) * 256);
	rp_buf_reset(&r->sql);
	rp_dbverify_sql_buckets(&r->sql, conn == r->src ? &t->src : &t->dst);
	rp_buf_put_char(&r->sql, '\0');
	res = dbv_exec(r, conn, r->sql.data, 0, NULL, "hashing the rows", t);
	if (res == NULL)
		return -1;
	for (int i = 0; i < PQntuples(res); i++)
	{
		int			n = (int) strtol(PQgetvalue(res, i, 0), NULL, 16);

		if (n < 0 || n > 255)
			continue;
		bk[n].rows = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		snprintf(bk[n].s1, sizeof(bk[n].s1), "%s", PQgetvalue(res, i, 2));
		snprintf(bk[n].s2, sizeof(bk[n].s2), "%s", PQgetvalue(res, i, 3));
		dbv_pace(r, bk[n].rows);
	}
	PQclear(res);
	return 0;
}

static bool
dbv_bucket_eq(const DbvBucket *a, const DbvBucket *b)
{
	return a->rows == b->rows && strcmp(a->s1, b->s1) == 0 && strcmp(a->s2, b->s2) == 0;
}

static int
dbv_count_diff(const DbvBucket *a, const DbvBucket *b)
{
	int			n = 0;

	for (int i = 0; i < 256; i++)
		n += !dbv_bucket_eq(&a[i], &b[i]);
	return n;
}

static int
dbv_keyless(DbvRun *r, DbvTable *t)
{
	DbvBucket  *s1 = rp_malloc(sizeof(DbvBucket) * 256 * 3);
	DbvBucket  *s2 = s1 + 256;
	DbvBucket  *d = s1 + 512;
	int64_t		deadline = 0;
	int			rc = 0;

	if (dbv_buckets(r, r->src, t, s1) < 0 || dbv_buckets(r, r->dst, t, d) < 0)
		rc = -1;
	t->chunks = 1;
	for (int i = 0; rc == 0 && i < 256; i++)
		t->rows += s1[i].rows;
	/* the same rounds as a keyed chunk's, the whole table being one chunk */
	while (rc == 0 && dbv_count_diff(s1, d) > 0)
	{
		uint64_t	lsn;
		int			w;

		if (deadline == 0)
		{
			t->reread++;
			if (r->o->verbose)
				fprintf(stderr, "%s: %s: the rows differ on the first read: reading them again"
						" once the mirror has caught up\n", PROG, t->qname);
			deadline = rp_clock_mono_us() + (int64_t) r->o->recheck_timeout_s * 1000000;
		}
		if (dbv_buckets(r, r->src, t, s1) < 0 || dbv_source_lsn(r, &lsn) < 0)
		{
			rc = -1;
			break;
		}
		w = dbv_wait_checkpoint(r, lsn, deadline);
		if (w <= 0)
		{
			if (w < 0)
				rc = -1;
			else
			{
				printf("%s: not compared: the mirror's checkpoint did not reach the source's"
					   " WAL position within %d s\n", t->qname, r->o->recheck_timeout_s);
				t->not_compared = true;
			}
			break;
		}
		if (dbv_buckets(r, r->dst, t, d) < 0)
		{
			rc = -1;
			break;
		}
		if (dbv_count_diff(s1, d) == 0)
			break;
		if (dbv_buckets(r, r->src, t, s2) < 0)
		{
			rc = -1;
			break;
		}
		if (dbv_count_diff(s2, d) == 0)
			break;
		if (dbv_count_diff(s1, s2) == 0 || rp_clock_mono_us() >= deadline || rp_stop_requested())
		{
			/* a real difference: the buckets, by hash prefix (no value) */
			for (int i = 0; i < 256; i++)
			{
				if (dbv_bucket_eq(&s1[i], &d[i]))
					continue;
				t->differing++;
				printf("%s: different: rows hashing to %02x: source %" PRId64
					   " rows, destination %" PRId64 " rows\n", t->qname, i, s1[i].rows, d[i].rows);
			}
			break;
		}
	}
	rp_free(s1);
	return rc;
}

/* ---- the run ----------------------------------------------------------------------- */

static PGconn *
dbv_connect(const char *conninfo, const char *who)
{
	RpSessionSpec spec;
	RpSessionError err;
	PGconn	   *conn;

	memset(&spec, 0, sizeof(spec));
	spec.conninfo = conninfo;
	spec.replication = "false";
	spec.fallback_application_name = "replicant verify";
	spec.settings = rp_dbverify_settings();
	conn = rp_session_open(&spec, &err);
	if (conn == NULL)
	{
		const char *state = err.result ? PQresultErrorField(err.result, PG_DIAG_SQLSTATE) : NULL;

		if (err.result)
			fprintf(stderr, "%s: error: setting up the session on the %s failed: SQLSTATE %s\n",
					PROG, who, state ? state : "?");
		else
			fprintf(stderr, "%s: error: could not connect to the %s: %s\n", PROG, who, err.message);
		PQclear(err.result);
	}
	return conn;
}

static int
dbv_tables(DbvRun *r)
{
	RpSnapSelect sel = {r->o->include, r->o->exclude};
	int			n = 0;
	RpSnapTable *tables = rp_snapcat_tables(r->src, &sel, &n);
	int			ndiff = 0,
				nequal = 0,
				nskip = 0;

	if (tables == NULL)
	{
		fprintf(stderr, "%s: error: listing the source's tables failed: %s\n", PROG, rp_error());
		return RP_DBVERIFY_FAILED;
	}
	for (int i = 0; i < n && !r->broken && !rp_stop_requested(); i++)
	{
		DbvTable	t;
		int			present;
		int			rc = 0;

		dbv_table_init(r, &t, &tables[i]);
		present = dbv_table_present(r, &t);
		if (present < 0)
			rc = -1;
		else if (present == 0)
			t.differing = 1;
		else if (t.src.nkey > 0)
			rc = dbv_keyed(r, &t);
		else
			rc = dbv_keyless(r, &t);
		if (rc == 0)
		{
			if (t.differing > 0)
				ndiff++;
			else if (t.not_compared)
				nskip++;
			else
			{
				nequal++;
				if (!r->o->quiet && t.reread > 0)
					printf("%s: equal (%" PRId64 " rows, %" PRId64 " chunks, %" PRId64
						   " re-read after the mirror caught up)\n", t.qname, t.rows, t.chunks,
						   t.reread);
				else if (!r->o->quiet)
					printf("%s: equal (%" PRId64 " rows, %" PRId64 " chunks)\n", t.qname, t.rows,
						   t.chunks);
			}
		}
		fflush(stdout);
		dbv_table_free(&t);
	}
	rp_snapcat_free(tables, n);
	if (r->broken)
		return RP_DBVERIFY_FAILED;
	if (rp_stop_requested())
	{
		fprintf(stderr, "%s: stopped before every table was compared\n", PROG);
		return RP_DBVERIFY_FAILED;
	}
	printf("%d tables: %d equal, %d different, %d not compared\n", n, nequal, ndiff, nskip);
	return ndiff > 0 ? RP_DBVERIFY_DIFFERENT : nskip > 0 ? RP_DBVERIFY_FAILED : RP_DBVERIFY_EQUAL;
}

int
rp_dbverify_run(const RpDbVerifyOptions *o)
{
	DbvRun		r;
	int			rc;
	uint64_t	src_lsn = 0,
				ck_lsn = 0;
	char		a[RP_LSN_BUFLEN],
				b[RP_LSN_BUFLEN];

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.rate_t0_us = rp_clock_mono_us();
	rp_buf_init(&r.sql, 2048);
	rp_buf_init(&r.ckpt_sql, 256);
	rc = RP_DBVERIFY_FAILED;
	r.src = dbv_connect(o->source, "source");
	if (r.src == NULL)
		goto done;
	r.dst = dbv_connect(o->sink, "destination");
	if (r.dst == NULL)
		goto done;
	rc = dbv_find_slot(&r);
	if (rc != RP_DBVERIFY_EQUAL)
		goto done;
	rp_buf_put_text(&r.ckpt_sql, "SELECT end_lsn::text FROM ");
	rp_dbverify_put_ident(&r.ckpt_sql, o->bookkeeping);
	rp_buf_put_text(&r.ckpt_sql, ".checkpoint WHERE slot = $1 AND ($2 = '' OR system_id = $2)");
	rp_buf_put_char(&r.ckpt_sql, '\0');
	if (dbv_source_lsn(&r, &src_lsn) < 0 || dbv_checkpoint(&r, &ck_lsn) < 0)
	{
		rc = RP_DBVERIFY_FAILED;
		goto done;
	}
	/* positions, not values: where the two stood when the comparison began */
	fprintf(stderr, "%s: source WAL at %s, mirror checkpoint of slot \"%s\" at %s\n", PROG,
			rp_lsn_format(src_lsn, a), r.slot, rp_lsn_format(ck_lsn, b));
	if (o->keys_file)
	{
		r.keys = fopen(o->keys_file, "w");
		if (r.keys == NULL)
		{
			fprintf(stderr, "%s: error: could not open the keys file \"%s\": %s\n", PROG,
					o->keys_file, strerror(errno));
			rc = RP_DBVERIFY_FAILED;
			goto done;
		}
	}
	rc = dbv_tables(&r);
	if (r.keys && (fflush(r.keys) != 0 || ferror(r.keys)))
	{
		fprintf(stderr, "%s: error: could not write the keys file \"%s\"\n", PROG, o->keys_file);
		rc = RP_DBVERIFY_FAILED;
	}
done:
	if (r.keys)
		fclose(r.keys);
	if (r.src)
		PQfinish(r.src);
	if (r.dst)
		PQfinish(r.dst);
	if (r.slot)
		rp_free(r.slot);
	rp_buf_free(&r.sql);
	rp_buf_free(&r.ckpt_sql);
	return rc;
}
