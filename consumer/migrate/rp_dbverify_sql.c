/*
 * rp_dbverify_sql.c
 *    replicant verify's statements and report texts: pure string building,
 *    no session (see rp_dbverify.h; unit-tested in tests/test_dbverify.c).
 *
 * A row's text is ROW(its columns, by name)::text, so the destination's
 * column order does not matter, and its hash is the server's md5 of it.
 * A chunk's hash is the md5 of its row hashes in key order: a changed, a
 * missing and an extra row each change it.  Bounds are parameters (typed
 * by the key columns' types), never SQL text: the statement text holds no
 * value.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate/rp_dbverify.h"
#include "base/rp_sql.h"

static const char *const rp_dbverify_settings_sql =
"SET DateStyle = 'ISO, YMD'; SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres';"
"SET extra_float_digits = 3; SET bytea_output = 'hex'; SET lc_monetary = 'C';"
"SET xmlbinary = 'base64'; SET xmloption = 'content'";

const char *
rp_dbverify_settings(void)
{
	return rp_dbverify_settings_sql;
}

/* rp_t."c1", rp_t."c2", ... (the key columns, or every column) */
static void
put_cols(RpBuf *b, const char *const *names, int n, const char *suffix)
{
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			rp_buf_put_text(b, ", ");
		rp_buf_put_text(b, "rp_t.");
		rp_sql_ident(b, names[i]);
		if (suffix)
			rp_buf_put_text(b, suffix);
	}
}

/* rp_t."k1" IS NOT NULL AND rp_t."k2" IS NOT NULL ... (the test and the joint given) */
static void
put_key_tests(RpBuf *b, const RpDbvTable *t, const char *test, const char *joint)
{
	for (int i = 0; i < t->nkey; i++)
	{
		if (i > 0)
			rp_buf_put_text(b, joint);
		rp_buf_put_text(b, "rp_t.");
		rp_sql_ident(b, t->keys[i]);
		rp_buf_put_text(b, test);
	}
}

/* rp_k1, rp_k2, ... with a suffix each (" DESC") */
static void
put_kaliases(RpBuf *b, int nkey, const char *suffix)
{
	char		num[32];

	for (int i = 0; i < nkey; i++)
	{
		snprintf(num, sizeof(num), "%srp_k%d%s", i > 0 ? ", " : "", i + 1, suffix ? suffix : "");
		rp_buf_put_text(b, num);
	}
}

/* ($first::T1, $first+1::T2, ...) */
static void
put_params(RpBuf *b, const RpDbvTable *t, int first)
{
	char		num[32];

	rp_buf_put_char(b, '(');
	for (int i = 0; i < t->nkey; i++)
	{
		snprintf(num, sizeof(num), "%s$%d::", i > 0 ? ", " : "", first + i);
		rp_buf_put_text(b, num);
		rp_buf_put_text(b, t->keytypes[i]);
	}
	rp_buf_put_char(b, ')');
}

/*
 * A table alone: an inheritance parent's children are tables of their own
 * (compared as such), so they are not read with it; a partitioned table (a
 * destination may partition what the source keeps in one table) holds its
 * rows in its partitions, so it is read with them.
 */
static void
put_from(RpBuf *b, const RpDbvTable *t)
{
	rp_buf_put_text(b, t->partitioned ? " FROM " : " FROM ONLY ");
	rp_sql_ident(b, t->schema);
	rp_buf_put_char(b, '.');
	rp_sql_ident(b, t->name);
	rp_buf_put_text(b, " AS rp_t");
}

static void
put_row_hash(RpBuf *b, const RpDbvTable *t)
{
	rp_buf_put_text(b, "pg_catalog.md5(ROW(");
	put_cols(b, t->cols, t->ncols, NULL);
	rp_buf_put_text(b, ")::text)");
}

/*
 * WHERE [(keys) > (lo) AND] [(keys) <= (hi) AND] k1 IS NOT NULL AND ...: a
 * row comparison leaves out a key that is all NULL, but not (3, NULL) past
 * (2, 'b'); every key column is tested, so the rows with a NULL anywhere
 * in the key are only in their own range (put_where_null).
 */
static void
put_where(RpBuf *b, const RpDbvTable *t, bool lo, bool hi)
{
	rp_buf_put_text(b, " WHERE ");
	if (lo)
	{
		rp_buf_put_char(b, '(');
		put_cols(b, t->keys, t->nkey, NULL);
		rp_buf_put_text(b, ") > ");
		put_params(b, t, 1);
		rp_buf_put_text(b, " AND ");
	}
	if (hi)
	{
		rp_buf_put_char(b, '(');
		put_cols(b, t->keys, t->nkey, NULL);
		rp_buf_put_text(b, ") <= ");
		put_params(b, t, lo ? t->nkey + 1 : 1);
		rp_buf_put_text(b, " AND ");
	}
	put_key_tests(b, t, " IS NOT NULL", " AND ");
}

/* WHERE (k1 IS NULL OR k2 IS NULL ...): the rows no key range holds */
static void
put_where_null(RpBuf *b, const RpDbvTable *t)
{
	rp_buf_put_text(b, " WHERE (");
	put_key_tests(b, t, " IS NULL", " OR ");
	rp_buf_put_char(b, ')');
}

void
rp_dbverify_sql_range(RpBuf *sql, const RpDbvTable *t, bool lo, bool hi, int64_t limit,
					  bool want_last)
{
	char		num[64];

	rp_buf_put_text(sql, "WITH c AS MATERIALIZED (SELECT ");
	for (int i = 0; i < t->nkey; i++)
	{
		snprintf(num, sizeof(num), " AS rp_k%d, ", i + 1);
		rp_buf_put_text(sql, "rp_t.");
		rp_sql_ident(sql, t->keys[i]);
		rp_buf_put_text(sql, num);
	}
	put_row_hash(sql, t);
	rp_buf_put_text(sql, " AS rp_h");
	put_from(sql, t);
	put_where(sql, t, lo, hi);
	if (limit > 0)
	{
		rp_buf_put_text(sql, " ORDER BY ");
		put_cols(sql, t->keys, t->nkey, NULL);
		snprintf(num, sizeof(num), " LIMIT %" PRId64, limit);
		rp_buf_put_text(sql, num);
	}
	rp_buf_put_text(sql, ") SELECT (SELECT pg_catalog.count(*) FROM c),"
					" (SELECT pg_catalog.md5(pg_catalog.string_agg(rp_h, '' ORDER BY ");
	put_kaliases(sql, t->nkey, NULL);
	rp_buf_put_text(sql, ")) FROM c)");
	if (want_last)
	{
		for (int i = 0; i < t->nkey; i++)
		{
			snprintf(num, sizeof(num), ", l.rp_k%d::text", i + 1);
			rp_buf_put_text(sql, num);
		}
		rp_buf_put_text(sql, " FROM (SELECT 1) AS rp_one LEFT JOIN (SELECT ");
		put_kaliases(sql, t->nkey, NULL);
		rp_buf_put_text(sql, " FROM c ORDER BY ");
		put_kaliases(sql, t->nkey, " DESC");
		rp_buf_put_text(sql, " LIMIT 1) AS l ON true");
	}
}

void
rp_dbverify_sql_keys(RpBuf *sql, const RpDbvTable *t, bool lo, bool hi)
{
	rp_buf_put_text(sql, "SELECT ROW(");
	put_cols(sql, t->keys, t->nkey, NULL);
	rp_buf_put_text(sql, ")::text, ");
	put_row_hash(sql, t);
	put_from(sql, t);
	put_where(sql, t, lo, hi);
	rp_buf_put_text(sql, " ORDER BY ");
	put_cols(sql, t->keys, t->nkey, NULL);
}

void
rp_dbverify_sql_nullkeys(RpBuf *sql, const RpDbvTable *t)
{
	/*
	 * keys are not unique here: the row hashes' own order makes the hash a
	 * multiset's
	 */
	rp_buf_put_text(sql, "SELECT pg_catalog.count(*), pg_catalog.md5(pg_catalog.string_agg(rp_h, '' ORDER BY rp_h))"
					" FROM (SELECT ");
	put_row_hash(sql, t);
	rp_buf_put_text(sql, " AS rp_h");
	put_from(sql, t);
	put_where_null(sql, t);
	rp_buf_put_text(sql, ") AS rp_s");
}

void
rp_dbverify_sql_nullkeys_list(RpBuf *sql, const RpDbvTable *t)
{
	rp_buf_put_text(sql, "SELECT ROW(");
	put_cols(sql, t->keys, t->nkey, NULL);
	rp_buf_put_text(sql, ")::text, ");
	put_row_hash(sql, t);
	put_from(sql, t);
	put_where_null(sql, t);
	rp_buf_put_text(sql, " ORDER BY 1, 2");
}

void
rp_dbverify_sql_buckets(RpBuf *sql, const RpDbvTable *t)
{
	rp_buf_put_text(sql, "SELECT pg_catalog.substr(rp_h, 1, 2), pg_catalog.count(*),"
					" pg_catalog.sum(('x' || pg_catalog.substr(rp_h, 3, 15))::pg_catalog.bit(60)::bigint)::text,"
					" pg_catalog.sum(('x' || pg_catalog.substr(rp_h, 18, 15))::pg_catalog.bit(60)::bigint)::text"
					" FROM (SELECT ");
	put_row_hash(sql, t);
	rp_buf_put_text(sql, " AS rp_h");
	put_from(sql, t);
	rp_buf_put_text(sql, ") AS rp_s GROUP BY 1 ORDER BY 1");
}

/* ---- differing keys ---------------------------------------------------------- */

static int
cmp_key(const void *a, const void *b)
{
	return strcmp(((const RpDbvKey *) a)->key, ((const RpDbvKey *) b)->key);
}

int64_t
rp_dbverify_diff_keys(RpDbvKey *src, size_t nsrc, RpDbvKey *dst, size_t ndst,
					  void (*emit) (void *arg, RpDbvKeyDiff d, const char *key), void *arg)
{
	size_t		i = 0,
				j = 0;
	int64_t		n = 0;

	/*
	 * a set match, not the servers' order: any total order of the texts will
	 * do
	 */
	if (nsrc > 1)
		qsort(src, nsrc, sizeof(RpDbvKey), cmp_key);
	if (ndst > 1)
		qsort(dst, ndst, sizeof(RpDbvKey), cmp_key);
	while (i < nsrc || j < ndst)
	{
		int			c = i >= nsrc ? 1 : j >= ndst ? -1 : strcmp(src[i].key, dst[j].key);

		if (c < 0)
		{
			emit(arg, RP_DBV_MISSING, src[i++].key);
			n++;
		}
		else if (c > 0)
		{
			emit(arg, RP_DBV_EXTRA, dst[j++].key);
			n++;
		}
		else
		{
			if (strcmp(src[i].hash, dst[j].hash) != 0)
			{
				emit(arg, RP_DBV_CHANGED, src[i].key);
				n++;
			}
			i++;
			j++;
		}
	}
	return n;
}

const char *
rp_dbverify_diff_name(RpDbvKeyDiff d)
{
	switch (d)
	{
		case RP_DBV_CHANGED:
			return "changed";
		case RP_DBV_MISSING:
			return "missing";
		case RP_DBV_EXTRA:
			return "extra";
	}
	return "?";
}

void
rp_dbverify_range_text(RpBuf *b, int64_t chunk, int64_t first_row, int64_t src_rows,
					   int64_t dst_rows)
{
	char text[	160];

	if (src_rows > 0)
		snprintf(text, sizeof(text),
				 "chunk %" PRId64 " (rows %" PRId64 "-%" PRId64 " of the source): source %" PRId64
				 " rows, destination %" PRId64 " rows",
				 chunk, first_row, first_row + src_rows - 1, src_rows, dst_rows);
	else
		snprintf(text, sizeof(text),
				 "chunk %" PRId64 " (after row %" PRId64 " of the source): source 0 rows, destination %"
				 PRId64 " rows", chunk, first_row - 1, dst_rows);
	rp_buf_put_text(b, text);
}

void
rp_dbverify_nullkeys_text(RpBuf *b, int64_t src_rows, int64_t dst_rows)
{
	char text[	128];

	snprintf(text, sizeof(text), "rows with a NULL key: source %" PRId64 " rows, destination %"
			 PRId64 " rows", src_rows, dst_rows);
	rp_buf_put_text(b, text);
}

/* ---- verdicts ------------------------------------------------------------------ */

RpDbvRound
rp_dbverify_round(bool d_eq_s1, bool d_eq_s2, bool s1_eq_s2, bool time_left)
{
	if (d_eq_s1 || d_eq_s2)
		return RP_DBV_ROUND_EQUAL;
	if (s1_eq_s2)
		return RP_DBV_ROUND_DIFFERENT;

	/*
	 * The source changed between its two reads, so the destination's read
	 * between them proves nothing either way: a table the application keeps
	 * writing to (an appended one's last chunk) may never hold still for a
	 * round; that is not a difference.
	 */
	return time_left ? RP_DBV_ROUND_AGAIN : RP_DBV_ROUND_UNSETTLED;
}

RpDbvVerdict
rp_dbverify_verdict(const RpDbvTally *t)
{
	if (t->differing > 0)
		return RP_DBV_DIFFERENT;
	if (t->not_compared > 0)
		return RP_DBV_NOT_COMPARED;
	return RP_DBV_EQUAL;
}

void
rp_dbverify_verdict_text(RpBuf *b, const RpDbvTally *t)
{
	char text[	256];
	char		nc[64] = "";

	switch (rp_dbverify_verdict(t))
	{
		case RP_DBV_EQUAL:
			if (t->reread > 0)
				snprintf(text, sizeof(text), "equal (%" PRId64 " rows, %" PRId64 " chunks, %" PRId64
						 " re-read after the mirror caught up)", t->rows, t->chunks, t->reread);
			else
				snprintf(text, sizeof(text), "equal (%" PRId64 " rows, %" PRId64 " chunks)", t->rows,
						 t->chunks);
			break;
		case RP_DBV_DIFFERENT:
			if (t->not_compared > 0)
				snprintf(nc, sizeof(nc), ", %" PRId64 " not compared", t->not_compared);
			if (t->keyless)
				snprintf(text, sizeof(text), "different (%" PRId64 " rows, %" PRId64
						 " hash buckets different%s)", t->rows, t->differing, nc);
			else
				snprintf(text, sizeof(text), "different (%" PRId64 " rows, %" PRId64 " chunks, %" PRId64
						 " different%s)", t->rows, t->chunks, t->differing, nc);
			break;
		case RP_DBV_NOT_COMPARED:
			snprintf(text, sizeof(text), "not compared (%" PRId64 " rows, %" PRId64 " chunks, %" PRId64
					 " not compared)", t->rows, t->chunks, t->not_compared);
			break;
	}
	rp_buf_put_text(b, text);
}

int
rp_dbverify_status(int ndiff, int nnot, bool failed)
{
	if (ndiff > 0)
		return RP_DBVERIFY_DIFFERENT;
	if (failed)
		return RP_DBVERIFY_FAILED;
	return nnot > 0 ? RP_DBVERIFY_NOT_COMPARED : RP_DBVERIFY_EQUAL;
}
