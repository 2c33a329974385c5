/*
 * rp_dbverify_keyless.c
 *    replicant verify of a table without a primary key: the rows as a
 *    multiset, per bucket of their md5's first byte (count and two sums of
 *    60-bit slices), re-read in the same rounds as a keyed chunk, the whole
 *    table being one chunk.
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

/* ---- keyless tables: multisets by bucket ------------------------------------------ */

typedef struct DbvBucket
{
	int64_t		rows;
	char		s1[32];
	char		s2[32];
} DbvBucket;

/* every bucket's figures (256, the empty ones zero); -1 error */
static int
dbv_buckets(RpDbvRun *r, PGconn *conn, RpDbvTableRun *t, DbvBucket *bk)
{
	PGresult   *res;

	memset(bk, 0, sizeof(DbvBucket) * 256);
	rp_buf_reset(&r->sql);
	rp_dbverify_sql_buckets(&r->sql, conn == r->src ? &t->src : &t->dst);
	rp_buf_put_char(&r->sql, '\0');
	res = rp_dbverify_exec(r, conn, r->sql.data, 0, NULL, "hashing the rows", t);
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
		rp_dbverify_pace(r, bk[n].rows);
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

int
rp_dbverify_keyless(RpDbvRun *r, RpDbvTableRun *t)
{
	DbvBucket  *s1 = rp_malloc(sizeof(DbvBucket) * 256 * 3);
	DbvBucket  *s2 = s1 + 256;
	DbvBucket  *d = s1 + 512;
	int64_t		deadline = 0;
	int			rc = 0;

	if (dbv_buckets(r, r->src, t, s1) < 0 || dbv_buckets(r, r->dst, t, d) < 0)
		rc = -1;
	t->tally.chunks = 1;
	t->tally.keyless = true;
	for (int i = 0; rc == 0 && i < 256; i++)
		t->tally.rows += s1[i].rows;
	/* the same rounds as a keyed chunk's, the whole table being one chunk */
	while (rc == 0 && dbv_count_diff(s1, d) > 0)
	{
		uint64_t	lsn;
		int			w;
		RpDbvRound	round;

		if (deadline == 0)
		{
			t->tally.reread++;
			if (r->o->verbose)
				fprintf(stderr, "%s: %s: the rows differ on the first read: reading them again"
						" once the mirror has caught up\n", RP_DBVERIFY_PROG, t->qname);
			deadline = rp_clock_mono_us() + (int64_t) r->o->recheck_timeout_s * 1000000;
		}
		if (dbv_buckets(r, r->src, t, s1) < 0 || rp_dbverify_source_lsn(r, &lsn) < 0)
		{
			rc = -1;
			break;
		}
		w = rp_dbverify_wait_checkpoint(r, lsn, deadline);
		if (w <= 0)
		{
			if (w < 0)
				rc = -1;
			else
			{
				printf("%s: chunk 1 not compared: the mirror's checkpoint did not reach the source's"
					   " WAL position within %d s\n", t->qname, r->o->recheck_timeout_s);
				t->tally.not_compared++;
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
		round = rp_dbverify_round(false, dbv_count_diff(s2, d) == 0, dbv_count_diff(s1, s2) == 0,
								  rp_clock_mono_us() < deadline && !rp_stop_requested());
		if (round == RP_DBV_ROUND_EQUAL)
			break;
		if (round == RP_DBV_ROUND_UNSETTLED)
		{
			printf("%s: chunk 1 not compared: the source kept changing it for %d s (--recheck-timeout)\n",
				   t->qname, r->o->recheck_timeout_s);
			t->tally.not_compared++;
			break;
		}
		if (round == RP_DBV_ROUND_DIFFERENT)
		{
			/* a real difference: the buckets, by hash prefix (no value) */
			for (int i = 0; i < 256; i++)
			{
				if (dbv_bucket_eq(&s1[i], &d[i]))
					continue;
				t->tally.differing++;
				printf("%s: different: rows hashing to %02x: source %" PRId64
					   " rows, destination %" PRId64 " rows\n", t->qname, i, s1[i].rows, d[i].rows);
			}
			break;
		}
	}
	rp_free(s1);
	return rc;
}
