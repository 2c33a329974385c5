/*
 * rp_dbverify_keyed.c
 *    replicant verify of a table with a primary key: the chunk walk in key
 *    order, the re-reads of a differing chunk after the mirror caught up,
 *    and the keys file (see rp_dbverify.c for the rounds and rp_dbverify.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/rp_clock.h"
#include "base/rp_status.h"
#include "migrate/rp_dbverify_int.h"

/* ---- keyed tables ----------------------------------------------------------------- */

/*
 * A chunk's bounds: nkey texts each, NULL for an open end; or nullkeys,
 * the rows with a NULL in the key (no bounds).
 */
typedef struct DbvBounds
{
	char	  **lo;
	char	  **hi;
	bool		nullkeys;
} DbvBounds;

/* What became of a differing chunk's re-reads. */
typedef enum DbvRecheck
{
	DBV_RECHECK_ERROR = -1,
	DBV_RECHECK_EQUAL,
	DBV_RECHECK_DIFFERENT,
	DBV_RECHECK_MIRROR_BEHIND,	/* the mirror's checkpoint did not reach the
								 * source's LSN */
	DBV_RECHECK_SOURCE_CHANGING /* the source changed it in every round */
} DbvRecheck;

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
dbv_params(const RpDbvTableRun *t, const DbvBounds *b, const char **params)
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
dbv_range_hash(RpDbvRun *r, PGconn *conn, RpDbvTableRun *t, const DbvBounds *b, RpDbvHash *h)
{
	const char *params[2 * 32 + 2];
	const char **pp = t->src.nkey <= 32 ? params : rp_malloc(sizeof(char *) * 2 * (size_t) t->src.nkey);
	int			np = dbv_params(t, b, pp);
	PGresult   *res;

	rp_buf_reset(&r->sql);
	if (b->nullkeys)
		rp_dbverify_sql_nullkeys(&r->sql, conn == r->src ? &t->src : &t->dst);
	else
		rp_dbverify_sql_range(&r->sql, conn == r->src ? &t->src : &t->dst, b->lo != NULL,
							  b->hi != NULL, 0, false);
	rp_buf_put_char(&r->sql, '\0');
	res = rp_dbverify_exec(r, conn, r->sql.data, np, pp, "hashing a chunk", t);
	if (pp != params)
		rp_free(pp);
	if (res == NULL)
		return -1;
	h->rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	snprintf(h->md5, sizeof(h->md5), "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	rp_dbverify_pace(r, h->rows);
	return 0;
}

static bool
dbv_hash_eq(const RpDbvHash *a, const RpDbvHash *b)
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
dbv_list_keys(RpDbvRun *r, PGconn *conn, RpDbvTableRun *t, const DbvBounds *b, PGresult **out, size_t *n)
{
	const char *params[64];
	const char **pp = t->src.nkey <= 32 ? params : rp_malloc(sizeof(char *) * 2 * (size_t) t->src.nkey);
	int			np = dbv_params(t, b, pp);
	RpDbvKey   *k;

	rp_buf_reset(&r->sql);
	if (b->nullkeys)
		rp_dbverify_sql_nullkeys_list(&r->sql, conn == r->src ? &t->src : &t->dst);
	else
		rp_dbverify_sql_keys(&r->sql, conn == r->src ? &t->src : &t->dst, b->lo != NULL,
							 b->hi != NULL);
	rp_buf_put_char(&r->sql, '\0');
	*out = rp_dbverify_exec(r, conn, r->sql.data, np, pp, "listing a chunk's keys", t);
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
dbv_write_keys(RpDbvRun *r, RpDbvTableRun *t, int64_t chunk, const DbvBounds *b)
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
	if (b->nullkeys)
		fputs("NULL\tNULL", r->keys);
	else
	{
		dbv_put_bound(r->keys, b->lo, t->src.nkey);
		fputc('\t', r->keys);
		dbv_put_bound(r->keys, b->hi, t->src.nkey);
	}
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
 * mirror caught up to a stable source read, or --recheck-timeout passed.
 * first and first_lsn are the first read's: once the mirror passed
 * first_lsn, the destination alone is read again first (a chunk the source
 * no longer changes costs the source nothing more).
 */
static DbvRecheck
dbv_recheck(RpDbvRun *r, RpDbvTableRun *t, const DbvBounds *b, const RpDbvHash *first, uint64_t first_lsn,
			RpDbvHash *src_out, RpDbvHash *dst_out)
{
	int64_t		deadline = rp_clock_mono_us() + (int64_t) r->o->recheck_timeout_s * 1000000;
	int			w = rp_dbverify_wait_checkpoint(r, first_lsn, deadline);

	if (w <= 0)
		return w < 0 ? DBV_RECHECK_ERROR : DBV_RECHECK_MIRROR_BEHIND;
	if (dbv_range_hash(r, r->dst, t, b, dst_out) < 0)
		return DBV_RECHECK_ERROR;
	*src_out = *first;
	if (dbv_hash_eq(first, dst_out))
		return DBV_RECHECK_EQUAL;
	for (;;)
	{
		RpDbvHash	s1,
					s2,
					d;
		uint64_t	lsn;
		int			w;

		if (dbv_range_hash(r, r->src, t, b, &s1) < 0 || rp_dbverify_source_lsn(r, &lsn) < 0)
			return DBV_RECHECK_ERROR;
		w = rp_dbverify_wait_checkpoint(r, lsn, deadline);
		if (w <= 0)
			return w < 0 ? DBV_RECHECK_ERROR : DBV_RECHECK_MIRROR_BEHIND;
		if (dbv_range_hash(r, r->dst, t, b, &d) < 0)
			return DBV_RECHECK_ERROR;
		*src_out = s1;
		*dst_out = d;
		if (dbv_hash_eq(&s1, &d))
			return DBV_RECHECK_EQUAL;
		if (dbv_range_hash(r, r->src, t, b, &s2) < 0)
			return DBV_RECHECK_ERROR;
		switch (rp_dbverify_round(false, dbv_hash_eq(&s2, &d), dbv_hash_eq(&s1, &s2),
								  rp_clock_mono_us() < deadline && !rp_stop_requested()))
		{
			case RP_DBV_ROUND_EQUAL:
				return DBV_RECHECK_EQUAL;
			case RP_DBV_ROUND_DIFFERENT:
				return DBV_RECHECK_DIFFERENT;
			case RP_DBV_ROUND_UNSETTLED:
				return DBV_RECHECK_SOURCE_CHANGING;
			case RP_DBV_ROUND_AGAIN:
				break;
		}
	}
}

/* "chunk N" or "rows with a NULL key" (value-free), for the lines of a chunk */
static void
dbv_chunk_name(RpBuf *b, int64_t chunk, const DbvBounds *bd)
{
	char		num[48];

	if (bd->nullkeys)
		rp_buf_put_text(b, "rows with a NULL key");
	else
	{
		snprintf(num, sizeof(num), "chunk %" PRId64, chunk);
		rp_buf_put_text(b, num);
	}
	rp_buf_put_char(b, '\0');
}

/* A chunk that differed on the first read: re-read, report; -1 error. */
static int
dbv_chunk_differs(RpDbvRun *r, RpDbvTableRun *t, int64_t chunk, int64_t first_row, const DbvBounds *b,
				  const RpDbvHash *first, uint64_t first_lsn)
{
	RpDbvHash	s,
				d;
	DbvRecheck	rc;
	RpBuf		line;

	rp_buf_init(&line, 160);
	dbv_chunk_name(&line, chunk, b);
	t->tally.reread++;
	if (r->o->verbose)
		fprintf(stderr, "%s: %s: %s differs on the first read: reading it again"
				" once the mirror has caught up\n", RP_DBVERIFY_PROG, t->qname, line.data);
	rc = dbv_recheck(r, t, b, first, first_lsn, &s, &d);

	switch (rc)
	{
		case DBV_RECHECK_ERROR:
			rp_buf_free(&line);
			return -1;
		case DBV_RECHECK_EQUAL:
			rp_buf_free(&line);
			return 0;
		case DBV_RECHECK_MIRROR_BEHIND:
			printf("%s: %s not compared: the mirror's checkpoint did not reach the"
				   " source's WAL position within %d s\n", t->qname, line.data, r->o->recheck_timeout_s);
			t->tally.not_compared++;
			rp_buf_free(&line);
			return 0;
		case DBV_RECHECK_SOURCE_CHANGING:
			printf("%s: %s not compared: the source kept changing it for %d s (--recheck-timeout)\n",
				   t->qname, line.data, r->o->recheck_timeout_s);
			t->tally.not_compared++;
			rp_buf_free(&line);
			return 0;
		case DBV_RECHECK_DIFFERENT:
			break;
	}
	t->tally.differing++;
	rp_buf_reset(&line);
	if (b->nullkeys)
		rp_dbverify_nullkeys_text(&line, s.rows, d.rows);
	else
		rp_dbverify_range_text(&line, chunk, first_row, s.rows, d.rows);
	rp_buf_put_char(&line, '\0');
	printf("%s: different: %s\n", t->qname, line.data);
	rp_buf_free(&line);
	if (r->keys && dbv_write_keys(r, t, chunk, b) < 0)
		return -1;
	return 0;
}

/*
 * The rows with a NULL in the key: none on the source (its key is a
 * primary key), but a destination's table made by hand may allow them, and
 * no key range holds them.  Compared like a chunk, read only when the
 * destination's key may be NULL.
 */
static int
dbv_nullkeys(RpDbvRun *r, RpDbvTableRun *t, int64_t chunk)
{
	DbvBounds	b = {NULL, NULL, true};
	RpDbvHash	s,
				d;
	uint64_t	lsn;

	if (dbv_range_hash(r, r->src, t, &b, &s) < 0 || rp_dbverify_source_lsn(r, &lsn) < 0)
		return -1;
	t->tally.rows += s.rows;
	if (dbv_range_hash(r, r->dst, t, &b, &d) < 0)
		return -1;
	if (dbv_hash_eq(&s, &d))
		return 0;
	return dbv_chunk_differs(r, t, chunk, 0, &b, &s, lsn);
}

int
rp_dbverify_keyed(RpDbvRun *r, RpDbvTableRun *t)
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
		RpDbvHash	s,
					d;
		DbvBounds	b;
		uint64_t	lsn;

		/* the next chunk on the source: its hash and its last key */
		rp_buf_reset(&sql_next);
		rp_dbverify_sql_range(&sql_next, &t->src, lo != NULL, false, r->o->chunk_rows, true);
		rp_buf_put_char(&sql_next, '\0');
		for (int i = 0; lo && i < nkey; i++)
			pp[i] = lo[i];
		res = rp_dbverify_exec(r, r->src, sql_next.data, lo ? nkey : 0, pp, "hashing a chunk", t);
		if (res == NULL || rp_dbverify_source_lsn(r, &lsn) < 0)
		{
			PQclear(res);
			rc = -1;
			break;
		}
		s.rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		snprintf(s.md5, sizeof(s.md5), "%s", PQgetvalue(res, 0, 1));
		b.nullkeys = false;
		b.lo = lo;

		/*
		 * a short chunk is the last: its range is open, so extra rows past it
		 * count
		 */
		b.hi = s.rows >= r->o->chunk_rows ? dbv_keys_dup(res, 2, nkey) : NULL;
		PQclear(res);
		rp_dbverify_pace(r, s.rows);
		t->tally.chunks++;
		t->tally.rows += s.rows;

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
	if (rc == 0 && t->dst_key_nullable && !rp_stop_requested())
		rc = dbv_nullkeys(r, t, t->tally.chunks + 1);
	rp_buf_free(&sql_next);
	if (pp != params)
		rp_free(pp);
	return rc;
}
