/*
 * rp_agg_table.c
 *    Table outputs of aggregate bindings: a destination table keyed by the
 *    dimensions, one row per cell, written inside the mirror's destination
 *    transaction of the batch, before its checkpoint (effect-once, G1): the
 *    mirror calls the batch hook (rp_agg_batch_hook) with its session.
 *
 * Cells go in two statements per batch, whatever their number: an upsert
 * from unnest() of one array parameter per column, and a delete of the
 * removed coordinates.  A rebuild or TRUNCATE first deletes every row, so
 * the table becomes exactly the fold's cells.  The key is
 * UNIQUE NULLS NOT DISTINCT (PostgreSQL 15+) because a NULL dimension is a
 * group of its own, as in GROUP BY.  Errors name the binding, the table
 * and the SQLSTATE; the server's text is dropped (it can carry values).
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_aggstate.h"
#include "base/rp_sql.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"

static int
rp_agg_table_fail(RpAggBinding *b, PGconn *dest, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	rp_pgerr_said(res, said, sizeof(said));
	if (state == NULL || PQstatus(dest) != CONNECTION_OK || strncmp(state, "08", 2) == 0 ||
		strncmp(state, "57P", 3) == 0 || strncmp(state, "40", 2) == 0 ||
		strncmp(state, "53", 2) == 0 || strcmp(state, "55P03") == 0)
		return rp_fail(RP_HALT_NONE, "aggregate binding \"%s\": destination %s of table %s failed (%s)%s, will retry",
					   b->name, what, b->out_qname ? b->out_qname : b->out_table, code, said);
	return rp_fail(RP_HALT_SINK, "aggregate binding \"%s\": destination %s of table %s failed: %s%s",
				   b->name, what, b->out_qname ? b->out_qname : b->out_table, code, said);
}

/* What a destination statement was for, for rp_agg_table_fail_sql. */
typedef struct RpAggStmt
{
	RpAggBinding *b;
	const char *what;
} RpAggStmt;

static int
rp_agg_table_fail_sql(void *arg, PGconn *dest, PGresult *res)
{
	const RpAggStmt *s = arg;

	return rp_agg_table_fail(s->b, dest, res, s->what);
}

static int
rp_agg_table_exec(RpAggBinding *b, PGconn *dest, const char *sql, int n, const char *const *vals,
				  const char *what)
{
	RpAggStmt	s = {b, what};

	/* no parameters: a simple query, which may hold several statements */
	return rp_sql_exec(dest, sql, n == 0 ? RP_SQL_SIMPLE : n, vals, rp_agg_table_fail_sql, &s);
}

/* The output table, created when missing (once per destination session). */
static int
rp_agg_table_ready(RpAggBinding *b, PGconn *dest)
{
	RpBuf		sql;
	int			rc;

	if (b->ready_conn == dest)
		return 0;
	rp_buf_init(&sql, 512);
	if (b->out_qname == NULL)
	{
		rp_sql_ident(&sql, b->out_schema);
		rp_buf_put_char(&sql, '.');
		rp_sql_ident(&sql, b->out_table);
		b->out_qname = rp_strndup(sql.data, sql.len);
		rp_buf_reset(&sql);
	}
	rp_buf_put_text(&sql, "CREATE SCHEMA IF NOT EXISTS ");
	rp_sql_ident(&sql, b->out_schema);
	rp_buf_put_text(&sql, "; CREATE TABLE IF NOT EXISTS ");
	rp_buf_put_text(&sql, b->out_qname);
	rp_buf_put_text(&sql, " (");
	for (int i = 0; i < b->ndims; i++)
	{
		rp_sql_ident(&sql, b->dims[i]);
		rp_buf_put_char(&sql, ' ');
		rp_buf_put_text(&sql, b->dim_type[i]);
		rp_buf_put_text(&sql, ", ");
	}
	rp_sql_ident(&sql, b->value_col);
	rp_buf_put_char(&sql, ' ');
	rp_buf_put_text(&sql, b->value_type);
	rp_buf_put_text(&sql, PQserverVersion(dest) >= 150000 ? ", UNIQUE NULLS NOT DISTINCT (" : ", UNIQUE (");
	for (int i = 0; i < b->ndims; i++)
	{
		if (i)
			rp_buf_put_text(&sql, ", ");
		rp_sql_ident(&sql, b->dims[i]);
	}
	rp_buf_put_text(&sql, "))");
	rp_buf_put_char(&sql, '\0');
	rc = rp_agg_table_exec(b, dest, sql.data, 0, NULL, "creating the output");
	rp_buf_free(&sql);
	if (rc == 0)
		b->ready_conn = dest;
	return rc;
}

static bool
rp_agg_table_dated(RpAggClass c)
{
	return c == RP_AGGV_DATE || c == RP_AGGV_TIMESTAMP || c == RP_AGGV_TIMESTAMPTZ;
}

/*
 * One element of an array literal: quoted, or NULL.  A date or timestamp
 * label is ISO 8601 with astronomical, expanded years ("+294276-12-31",
 * "0000-03-15" for 1 BC, "-0044-03-15" for 45 BC), which PostgreSQL's input
 * does not read: as "294276-12-31", "0001-03-15 BC" and "0045-03-15 BC".
 */
static void
rp_agg_table_elem(RpBuf *arr, const char *s, size_t len, bool dated)
{
	const char *bc = NULL;

	if (arr->len > 1)
		rp_buf_put_char(arr, ',');
	if (s == NULL)
	{
		rp_buf_put_text(arr, "NULL");
		return;
	}
	rp_buf_put_char(arr, '"');
	if (dated && len > 1 && s[0] == '+')
		s++, len--;
	else if (dated && len > 5 && memcmp(s, "0000-", 5) == 0)
	{
		rp_buf_put_text(arr, "0001");
		s += 4, len -= 4;
		bc = " BC";
	}
	else if (dated && len > 1 && s[0] == '-' && s[1] >= '0' && s[1] <= '9')
	{
		long long	y = 0;
		char		tmp[32];
		size_t		i = 1;

		/* astronomical year -Y is (Y + 1) BC */
		for (; i < len && s[i] >= '0' && s[i] <= '9' && y < 100000000; i++)
			y = y * 10 + (s[i] - '0');
		snprintf(tmp, sizeof(tmp), "%04lld", y + 1);
		rp_buf_put_text(arr, tmp);
		s += i, len -= i;
		bc = " BC";
	}
	for (size_t i = 0; i < len; i++)
	{
		if (s[i] == '"' || s[i] == '\\')
			rp_buf_put_char(arr, '\\');
		rp_buf_put_char(arr, s[i]);
	}
	if (bc)
		rp_buf_put_text(arr, bc);
	rp_buf_put_char(arr, '"');
}

/*
 * The statement: INSERT ... unnest ... ON CONFLICT, or DELETE ... USING
 * unnest.  unnest() of several arrays is grammar, not a function: it cannot
 * be schema-qualified (pg_catalog comes first on the pinned path anyway).
 */
static void
rp_agg_table_sql(RpAggBinding *b, PGconn *dest, bool upsert, RpBuf *sql)
{
	char		p[64];

	rp_buf_reset(sql);
	if (upsert)
	{
		rp_buf_put_text(sql, "INSERT INTO ");
		rp_buf_put_text(sql, b->out_qname);
		rp_buf_put_text(sql, " (");
		for (int i = 0; i < b->ndims; i++)
		{
			rp_sql_ident(sql, b->dims[i]);
			rp_buf_put_text(sql, ", ");
		}
		rp_sql_ident(sql, b->value_col);
		rp_buf_put_text(sql, ") SELECT * FROM unnest(");
	}
	else
	{
		rp_buf_put_text(sql, "DELETE FROM ");
		rp_buf_put_text(sql, b->out_qname);
		rp_buf_put_text(sql, " t USING unnest(");
	}
	for (int i = 0; i < b->ndims + (upsert ? 1 : 0); i++)
	{
		snprintf(p, sizeof(p), "%s$%d::", i ? ", " : "", i + 1);
		rp_buf_put_text(sql, p);
		rp_buf_put_text(sql, i < b->ndims ? b->dim_type[i] : b->value_type);
		rp_buf_put_text(sql, "[]");
	}
	rp_buf_put_char(sql, ')');
	if (upsert)
	{
		rp_buf_put_text(sql, " ON CONFLICT (");
		for (int i = 0; i < b->ndims; i++)
		{
			if (i)
				rp_buf_put_text(sql, ", ");
			rp_sql_ident(sql, b->dims[i]);
		}
		rp_buf_put_text(sql, ") DO UPDATE SET ");
		rp_sql_ident(sql, b->value_col);
		rp_buf_put_text(sql, " = EXCLUDED.");
		rp_sql_ident(sql, b->value_col);
	}
	else
	{
		rp_buf_put_text(sql, " AS r(");
		for (int i = 0; i < b->ndims; i++)
		{
			snprintf(p, sizeof(p), "%sc%d", i ? ", " : "", i);
			rp_buf_put_text(sql, p);
		}
		rp_buf_put_text(sql, ") WHERE ");
		for (int i = 0; i < b->ndims; i++)
		{
			if (i)
				rp_buf_put_text(sql, " AND ");
			rp_buf_put_text(sql, "t.");
			rp_sql_ident(sql, b->dims[i]);
			snprintf(p, sizeof(p), " IS NOT DISTINCT FROM r.c%d", i);
			rp_buf_put_text(sql, p);
		}
	}
	rp_buf_put_char(sql, '\0');
}

/* min, max and none keep the measure's type; sums and counts are numbers */
static bool
rp_agg_table_value_dated(const RpAggBinding *b)
{
	return rp_agg_table_dated(b->m_class) && b->agg != RP_FOLD_SUM && b->agg != RP_FOLD_AVG &&
		b->agg != RP_FOLD_COUNT && b->agg != RP_FOLD_COUNT_DISTINCT;
}

int
rp_agg_table_write(RpAgg *agg, RpAggBinding *b, PGconn *dest)
{
	int			ncols = b->ndims + 1;
	RpBuf	   *ups = rp_malloc(sizeof(RpBuf) * (size_t) ncols);
	RpBuf	   *dels = rp_malloc(sizeof(RpBuf) * (size_t) ncols);
	const char **vals = rp_malloc(sizeof(char *) * (size_t) ncols);
	RpBuf		value;
	RpAggEditIter e;
	bool		value_dated = rp_agg_table_value_dated(b);
	RpFoldCell *c;
	RpFoldResult r;
	int			nups = 0,
				ndels = 0;
	int			rc = 0;

	if (rp_agg_table_ready(b, dest) < 0)
	{
		rp_free(ups);
		rp_free(dels);
		rp_free(vals);
		return -1;
	}
	for (int i = 0; i < ncols; i++)
	{
		rp_buf_init(&ups[i], 256);
		rp_buf_init(&dels[i], 256);
		rp_buf_put_char(&ups[i], '{');
		rp_buf_put_char(&dels[i], '{');
	}
	rp_buf_init(&value, 64);
	if (b->replace)
	{
		rp_buf_reset(&agg->sql);
		rp_buf_put_text(&agg->sql, "DELETE FROM ");
		rp_buf_put_text(&agg->sql, b->out_qname);
		rp_buf_put_char(&agg->sql, '\0');
		rc = rp_agg_table_exec(b, dest, agg->sql.data, 0, NULL, "replacing the cells");
	}
	memset(&e, 0, sizeof(e));
	while (rc == 0 && (c = rp_agg_next_edit(b, &e, &value, &r)) != NULL)
	{
		RpBuf	   *arrs;
		const char *p,
				   *end;

		arrs = r == RP_FOLD_REMOVED ? dels : ups;
		p = c->label;
		end = c->label + c->labellen;
		for (int i = 0; i < b->ndims; i++)
		{
			const char *text;
			uint32_t	len;

			rp_agg_label_next(&p, end, &text, &len);
			rp_agg_table_elem(&arrs[i], text, len, rp_agg_table_dated(b->dim_class[i]));
		}
		if (r == RP_FOLD_REMOVED)
			ndels++;
		else
		{
			rp_agg_table_elem(&ups[b->ndims], r == RP_FOLD_VALUE ? value.data : NULL, value.len,
							  value_dated);
			nups++;
		}
	}
	for (int i = 0; i < ncols; i++)
	{
		rp_buf_put_char(&ups[i], '}');
		rp_buf_put_char(&ups[i], '\0');
		rp_buf_put_char(&dels[i], '}');
		rp_buf_put_char(&dels[i], '\0');
	}
	if (rc == 0 && ndels > 0)
	{
		for (int i = 0; i < b->ndims; i++)
			vals[i] = dels[i].data;
		rp_agg_table_sql(b, dest, false, &agg->sql);
		rc = rp_agg_table_exec(b, dest, agg->sql.data, b->ndims, vals, "removing cells");
	}
	if (rc == 0 && nups > 0)
	{
		for (int i = 0; i < ncols; i++)
			vals[i] = ups[i].data;
		rp_agg_table_sql(b, dest, true, &agg->sql);
		rc = rp_agg_table_exec(b, dest, agg->sql.data, ncols, vals, "writing cells");
	}
	if (rc == 0)
		RP_COUNT_ADD(agg->stats.cell_edits, (uint64_t) (nups + ndels));
	for (int i = 0; i < ncols; i++)
	{
		rp_buf_free(&ups[i]);
		rp_buf_free(&dels[i]);
	}
	rp_buf_free(&value);
	rp_free(ups);
	rp_free(dels);
	rp_free(vals);
	return rc;
}
