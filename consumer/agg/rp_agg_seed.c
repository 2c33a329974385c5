/*
 * rp_agg_seed.c
 *    Building a binding from the source: one SELECT returns the fold state
 *    per coordinate and, in the same statement, pg_current_snapshot() and
 *    the WAL insert position (see rp_agg.h and rp_xidsnap.h).
 *
 * The seed runs on a normal connection to the source (the -d conninfo
 * without replication), in a REPEATABLE READ READ ONLY transaction so
 * the snapshot the query read and the one it returns are the same.  Sums
 * of integers and numerics are grouped by the server (sum() is exact
 * there); everything else comes one row per (coordinate, value) with its
 * row count, so the fold keeps each value's multiplicity.  Float sums are
 * seeded per value too: the server's float sum rounds, ours must not.
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_aggstate.h"
#include "base/rp_clock.h"
#include "base/rp_session.h"
#include "base/rp_ckpt.h"
#include "base/rp_sql.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"

/* lost: the source connection is gone */
static int
rp_agg_src_fail_as(RpAggBinding *b, PGresult *res, bool lost, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	rp_pgerr_said(res, said, sizeof(said));
	/* a lost or busy source is retried; anything else halts */
	if (state == NULL || strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
		strncmp(state, "40", 2) == 0 || strncmp(state, "53", 2) == 0 || lost)
		return rp_fail(RP_HALT_NONE, "aggregate binding \"%s\": source %s failed (%s)%s, will retry",
					   b->name, what, code, said);
	return rp_fail(RP_HALT_SINK, "aggregate binding \"%s\": source %s failed: %s%s", b->name,
				   what, code, said);
}

static int
rp_agg_src_fail(RpAgg *agg, RpAggBinding *b, PGresult *res, const char *what)
{
	return rp_agg_src_fail_as(b, res, PQstatus(agg->src) != CONNECTION_OK, what);
}

static int
rp_agg_src_connect(RpAgg *agg, RpAggBinding *b)
{
	/* the -d conninfo, but never a replication session (it may say so) */
	RpSessionSpec spec = {
		.conninfo = agg->source_conninfo,
		.replication = "false",
		.application_name = "replicant-seed",
		.settings = "SET extra_float_digits = 3; SET TimeZone = 'UTC'",
	};
	RpSessionError err;

	if (agg->src && PQstatus(agg->src) == CONNECTION_OK)
		return 0;
	if (agg->source_conninfo == NULL)
		return rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": no source connection to seed from", b->name);
	if (agg->src)
		PQfinish(agg->src);
	agg->src = rp_session_open(&spec, &err);
	if (agg->src == NULL && err.result == NULL)
	{
		return rp_fail(rp_session_halt(&err), "aggregate binding \"%s\": could not connect to the source to seed: %s",
					   b->name, err.message);
	}
	if (agg->src == NULL)
	{
		int			rc = rp_agg_src_fail_as(b, err.result, err.lost, "session setup");

		PQclear(err.result);
		return rc;
	}
	return 0;
}

/* Types of the binding's columns, from the source catalog (once). */
static int
rp_agg_describe(RpAgg *agg, RpAggBinding *b)
{
	const char *vals[2] = {b->schema, b->table};
	PGresult   *res = PQexecParams(agg->src,
								   "SELECT a.attname, a.atttypid, pg_catalog.format_type(a.atttypid, a.atttypmod)"
								   " FROM pg_catalog.pg_attribute a"
								   " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
								   " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
								   " WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped",
								   2, NULL, vals, NULL, NULL, 0);
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rc = rp_agg_src_fail(agg, b, res, "catalog lookup");
		PQclear(res);
		return rc;
	}
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		return rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": source table \"%s\".\"%s\" not found",
					   b->name, b->schema, b->table);
	}
	b->dim_class = rp_malloc0(sizeof(RpAggClass) * (size_t) b->ndims);
	b->dim_type = rp_malloc0(sizeof(char *) * (size_t) b->ndims);
	for (int i = 0; i <= b->ndims && rc == 0; i++)
	{
		const char *col = i < b->ndims ? b->dims[i] : b->measure;
		int			row = -1;
		RpAggClass	cls;

		for (int r = 0; r < PQntuples(res); r++)
			if (strcmp(PQgetvalue(res, r, 0), col) == 0)
				row = r;
		if (row < 0)
		{
			rc = rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": table \"%s\".\"%s\" has no column \"%s\"",
						 b->name, b->schema, b->table, col);
			break;
		}
		cls = rp_aggval_class((uint32_t) strtoul(PQgetvalue(res, row, 1), NULL, 10));
		if (i < b->ndims)
		{
			for (int j = 0; j < i; j++)
				if (strcmp(b->dims[j], col) == 0)
					rc = rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": dimension \"%s\" named twice", b->name, col);
			b->dim_class[i] = cls;
			b->dim_type[i] = rp_strndup(PQgetvalue(res, row, 2), strlen(PQgetvalue(res, row, 2)));
		}
		else
		{
			b->m_class = cls;
			b->m_type = rp_strndup(PQgetvalue(res, row, 2), strlen(PQgetvalue(res, row, 2)));
		}
		if (rc == 0 && cls == RP_AGGV_UNSUPPORTED && !(i == b->ndims && b->agg == RP_FOLD_COUNT))
			rc = rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": column \"%s\" has type %s, which bindings do not read"
						 " (integers, floats, numeric, text, varchar, date, timestamp, timestamptz, boolean; count takes any)",
						 b->name, col, PQgetvalue(res, row, 2));
		else if (rc == 0 && i == b->ndims && (b->agg == RP_FOLD_SUM || b->agg == RP_FOLD_AVG) &&
				 !rp_aggval_numeric_class(cls))
			rc = rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": %s needs a number, column \"%s\" has type %s",
						 b->name, rp_fold_agg_name(b->agg), col, PQgetvalue(res, row, 2));
	}
	PQclear(res);
	if (rc < 0)
		return -1;
	if (b->agg == RP_FOLD_NONE)
		b->value_col = rp_strndup(b->measure, strlen(b->measure));
	else
	{
		size_t		n = strlen(b->measure) + 32;

		b->value_col = rp_malloc(n);
		snprintf(b->value_col, n, "%s_%s", rp_fold_agg_name(b->agg), b->measure);
	}
	for (int i = 0; i < b->ndims; i++)
		if (strcmp(b->dims[i], b->value_col) == 0)
			return rp_fail(RP_HALT_CONFIG, "aggregate binding \"%s\": dimension \"%s\" has the value column's name",
						   b->name, b->dims[i]);
	if (b->agg == RP_FOLD_SUM || b->agg == RP_FOLD_AVG)
		b->value_type = rp_strndup("numeric", 7);
	else if (b->agg == RP_FOLD_COUNT || b->agg == RP_FOLD_COUNT_DISTINCT)
		b->value_type = rp_strndup("bigint", 6);
	else
		b->value_type = rp_strndup(b->m_type, strlen(b->m_type));
	b->described = true;
	return 0;
}

/* Server-side totals (exact there) instead of one row per value? */
static bool
rp_agg_grouped(const RpAggBinding *b)
{
	return b->agg == RP_FOLD_COUNT ||
		((b->agg == RP_FOLD_SUM || b->agg == RP_FOLD_AVG) &&
		 (b->m_class == RP_AGGV_INT || b->m_class == RP_AGGV_NUMERIC));
}

static void
rp_agg_seed_sql(RpAgg *agg, RpAggBinding *b, RpBuf *sql)
{
	char	   *qm = rp_sql_ident_dup(b->measure);
	char	   *qs = rp_sql_ident_dup(b->schema);
	char	   *qt = rp_sql_ident_dup(b->table);
	bool		grouped = rp_agg_grouped(b);

	rp_buf_reset(sql);
	rp_buf_put_text(sql, "WITH s AS (SELECT pg_catalog.pg_current_snapshot()::pg_catalog.text AS snap,"
					" pg_catalog.pg_current_wal_insert_lsn()::pg_catalog.text AS lsn)"
					" SELECT s.snap, s.lsn, g.* FROM s LEFT JOIN (SELECT ");
	for (int i = 0; i < b->ndims; i++)
	{
		char	   *qd = rp_sql_ident_dup(b->dims[i]);

		rp_aggval_seed_expr(b->dim_class[i], qd, sql);
		rp_buf_put_text(sql, ", ");
		rp_free(qd);
	}
	if (grouped)
	{
		char		tail[2048];

		if (b->agg == RP_FOLD_COUNT)
			snprintf(tail, sizeof(tail), "NULL::pg_catalog.text, pg_catalog.count(*), pg_catalog.count(%s), 0, 0, 0", qm);
		else if (b->m_class == RP_AGGV_NUMERIC)

			/*
			 * NaN = NaN for numeric, so NOT IN leaves the specials out of the
			 * total
			 */
			snprintf(tail, sizeof(tail),
					 "(pg_catalog.sum(%s) FILTER (WHERE %s NOT IN ('NaN'::pg_catalog.numeric, 'Infinity'::pg_catalog.numeric, '-Infinity'::pg_catalog.numeric)))::pg_catalog.text,"
					 " pg_catalog.count(*), pg_catalog.count(%s),"
					 " pg_catalog.count(*) FILTER (WHERE %s = 'NaN'::pg_catalog.numeric),"
					 " pg_catalog.count(*) FILTER (WHERE %s = 'Infinity'::pg_catalog.numeric),"
					 " pg_catalog.count(*) FILTER (WHERE %s = '-Infinity'::pg_catalog.numeric)",
					 qm, qm, qm, qm, qm, qm);
		else
			snprintf(tail, sizeof(tail),
					 "pg_catalog.sum(%s::pg_catalog.numeric)::pg_catalog.text, pg_catalog.count(*), pg_catalog.count(%s), 0, 0, 0",
					 qm, qm);
		rp_buf_put_text(sql, tail);
	}
	else
	{
		rp_aggval_seed_expr(b->m_class, qm, sql);
		rp_buf_put_text(sql, ", pg_catalog.count(*)");
	}
	rp_buf_put_text(sql, " FROM ONLY ");
	rp_buf_put_text(sql, qs);
	rp_buf_put_char(sql, '.');
	rp_buf_put_text(sql, qt);
	rp_buf_put_text(sql, " GROUP BY ");
	for (int i = 0; i < b->ndims; i++)
	{
		char	   *qd = rp_sql_ident_dup(b->dims[i]);

		rp_buf_put_text(sql, qd);
		rp_buf_put_text(sql, i + 1 < b->ndims || !grouped ? ", " : "");
		rp_free(qd);
	}
	if (!grouped)
	{
		/*
		 * A cell keeps its values sorted: in the measure's order (which its
		 * key order follows for numbers and times) each one is appended, in
		 * any other order each moves the ones after it.
		 */
		rp_buf_put_text(sql, qm);
		rp_buf_put_text(sql, " ORDER BY ");
		rp_buf_put_text(sql, qm);
	}
	rp_buf_put_text(sql, ") g ON true");
	rp_buf_put_char(sql, '\0');
	rp_free(qm);
	rp_free(qs);
	rp_free(qt);
}

static int64_t
rp_agg_int(PGresult *res, int row, int col)
{
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* Fold the seed's rows; -1 names the binding when a value does not read. */
static int
rp_agg_seed_rows(RpAgg *agg, RpAggBinding *b, PGresult *res)
{
	bool		grouped = rp_agg_grouped(b);
	int			vcol = 2 + b->ndims;
	RpDecimal	total;
	int			rc = 0;

	rp_decimal_init(&total);
	for (int r = 0; r < PQntuples(res) && rc == 0; r++)
	{
		RpFoldCell *cell;

		if (PQgetisnull(res, r, vcol + 1))
			continue;			/* the empty table's lone snapshot row */
		rp_buf_reset(&agg->coord);
		rp_buf_reset(&agg->label);
		for (int i = 0; i < b->ndims; i++)
		{
			RpAggVal   *v = &agg->scratch[0];

			if (!rp_aggval_from_text(b->dim_class[i], PQgetisnull(res, r, 2 + i) ? NULL : PQgetvalue(res, r, 2 + i), v))
			{
				rc = rp_fail(RP_HALT_SINK, "aggregate binding \"%s\": seed value of column \"%s\" does not read",
							 b->name, b->dims[i]);
				break;
			}
			rp_agg_coord_put(agg, v);
		}
		if (rc < 0)
			break;
		cell = rp_fold_cell(&b->fold, agg->coord.data, agg->coord.len, agg->label.data, agg->label.len);
		if (grouped)
		{
			int			dscale = 0;
			bool		has = !PQgetisnull(res, r, vcol);

			if (has && rp_decimal_parse(&total, PQgetvalue(res, r, vcol), &dscale) != RP_DEC_FINITE)
			{
				rc = rp_fail(RP_HALT_SINK, "aggregate binding \"%s\": seed total of column \"%s\" does not read",
							 b->name, b->measure);
				break;
			}
			rp_fold_seed_totals(&b->fold, cell, rp_agg_int(res, r, vcol + 1), rp_agg_int(res, r, vcol + 2),
								has ? &total : NULL, dscale, rp_agg_int(res, r, vcol + 3),
								rp_agg_int(res, r, vcol + 4), rp_agg_int(res, r, vcol + 5));
		}
		else
		{
			RpAggVal   *v = &agg->scratch[1];

			v->want_num = b->agg == RP_FOLD_SUM || b->agg == RP_FOLD_AVG;
			if (!rp_aggval_from_text(b->m_class, PQgetisnull(res, r, vcol) ? NULL : PQgetvalue(res, r, vcol), v))
			{
				rc = rp_fail(RP_HALT_SINK, "aggregate binding \"%s\": seed value of column \"%s\" does not read",
							 b->name, b->measure);
				break;
			}

			/*
			 * none: several rows on a coordinate leave no cell until one is
			 * left
			 */
			(void) rp_fold_apply(&b->fold, cell, &v->v, rp_agg_int(res, r, vcol + 1));
		}
	}
	rp_decimal_free(&total);
	return rc;
}

/*
 * The seed's rows one at a time (single-row mode): a result holding every
 * distinct value at once would cost several times the fold it builds.
 * Every row carries the snapshot and LSN; the first one sets them.
 */
static int
rp_agg_seed_stream(RpAgg *agg, RpAggBinding *b)
{
	PGresult   *res;
	int64_t		rows = 0;
	int			rc = 0;

	if (!PQsendQuery(agg->src, agg->sql.data) || !PQsetSingleRowMode(agg->src))
		rc = rp_agg_src_fail(agg, b, NULL, "seed SELECT");
	while ((res = PQgetResult(agg->src)) != NULL)
	{
		ExecStatusType st = PQresultStatus(res);

		if (rc == 0 && st == PGRES_SINGLE_TUPLE && rows++ == 0)
		{
			rp_fold_clear(&b->fold);
			rp_xidsnap_free(&b->snap);
			b->have_snap = false;
			if (!rp_xidsnap_parse(&b->snap, PQgetvalue(res, 0, 0)) ||
				!rp_lsn_parse(PQgetvalue(res, 0, 1), &b->seed_lsn))
				rc = rp_fail(RP_HALT_SINK, "aggregate binding \"%s\": the seed's snapshot does not read", b->name);
			else
				b->have_snap = true;
		}
		if (rc == 0 && st == PGRES_SINGLE_TUPLE)
			rc = rp_agg_seed_rows(agg, b, res);
		else if (rc == 0 && st != PGRES_TUPLES_OK)
			rc = rp_agg_src_fail(agg, b, res, "seed SELECT");
		PQclear(res);
	}
	if (rc == 0 && rows == 0)
		rc = rp_agg_src_fail(agg, b, NULL, "seed SELECT");
	return rc;
}

int
rp_agg_seed(RpAgg *agg, RpAggBinding *b)
{
	PGresult   *res;
	int			rc = 0;
	int64_t		t0 = rp_clock_mono_us();

	if (rp_agg_src_connect(agg, b) < 0)
		return -1;
	if (!b->described && rp_agg_describe(agg, b) < 0)
		return -1;
	rp_agg_seed_sql(agg, b, &agg->sql);
	res = PQexec(agg->src, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		rc = rp_agg_src_fail(agg, b, res, "BEGIN");
		PQclear(res);
		return rc;
	}
	PQclear(res);
	rc = rp_agg_seed_stream(agg, b);
	res = PQexec(agg->src, rc == 0 ? "COMMIT" : "ROLLBACK");
	PQclear(res);
	if (rc < 0)
		return -1;
	RP_COUNT_ADD(agg->stats.rebuilds[b->reason], 1);

	/*
	 * a table without its old rows rebuilds every batch: say so a few times,
	 * count always
	 */
	if (b->nlogged++ < 20)
		fprintf(stderr, "replicant: aggregate binding \"%s\" %s from the source (reason: %s): %zu cells, %.2f s\n",
				b->name, b->reason == RP_AGG_SEED ? "built" : "rebuilt", rp_agg_reason_name(b->reason),
				b->fold.ncells, (double) (rp_clock_mono_us() - t0) / 1e6);
	b->need_seed = false;
	b->replace = true;
	b->rel = NULL;
	return 0;
}
