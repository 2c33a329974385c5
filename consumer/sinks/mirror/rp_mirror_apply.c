/*
 * rp_mirror_apply.c
 *    Apply of the mirror's pending net effects (rp_mirror_effect.c).
 *
 * At the end of the batch, or at a barrier (TRUNCATE, a schema change),
 * every table the batch touched is resolved (one catalog query), then each
 * table's effects are applied, in the order the batch first touched the
 * tables, one of two ways by their number.  A run of tables with small sets
 * goes down one pipeline of prepared statements (rp_mirror_pipeline.c): a
 * batch over a thousand tables with a few rows each pays no per-table round
 * trip.  A larger set is applied in bulk: keys to delete and full rows are
 * COPYed into temporary staging tables (rp_mirror_stage.c), then one
 * DELETE ... USING, one UPDATE ... FROM (rows that differ) and, for keys
 * the table lacks, one INSERT ... ON CONFLICT DO NOTHING per table; keys
 * first seen as INSERTs are COPYed straight into the table when none is
 * there yet.  Rows with unchanged TOAST columns are updated one by one with
 * only the columns they carry, so the destination keeps its value; a row
 * that would not change is left alone either way.  History tables
 * get one closed and one opened version per key and source transaction
 * (rp_mirror_history.c).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_ckpt.h"
#include "rp_format.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "values/rp_pgbin.h"
#include "values/rp_pgtext.h"
#include "rp_read.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"
#include "stream/rp_spill.h"






/* ---- bulk apply ----------------------------------------------------------------- */

/*
 * A statement joining a staging table to its target looks each staged key
 * up through the target's key index: a batch holds few rows beside a large
 * table, and a hash join would read and hash all of it, every batch (the
 * planner prices the random reads of a cached index as if they were not).
 * The settings last to the _END part, which gives the session its own back.
 */
#define RP_MIRROR_BY_INDEX "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; "
#define RP_MIRROR_BY_INDEX_END "RESET enable_hashjoin; RESET enable_mergejoin; "


static int
rp_mirror_apply_deletes(RpMirror *pg, RpMirrorTable *t)
{
	RpBuf		sql;
	int			rc;

	if (rp_mirror_stage_ensure(pg, t) < 0 ||
		rp_mirror_stage_effects(pg, t, t->stage_del, RP_MIRROR_STAGE_DELETES) < 0)
		return -1;
	rp_buf_init(&sql, 512);
	/* by the key index (RP_MIRROR_BY_INDEX) */
	rp_buf_put_text(&sql, RP_MIRROR_BY_INDEX "DELETE FROM ");
	rp_buf_put_text(&sql, t->qrel);
	rp_buf_put_text(&sql, " d USING ");
	rp_buf_put_text(&sql, t->stage_del);
	rp_buf_put_text(&sql, " s WHERE ");
	rp_mirror_sql_key_match(pg, &sql, t->rel, t->keycols, t->nkey, "d", "s");
	rp_buf_put_text(&sql, "; " RP_MIRROR_BY_INDEX_END);
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec(pg, sql.data, "applying deletes", t);
	rp_buf_free(&sql);
	return rc;
}

/*
 * Fresh keys (first seen as an INSERT in this batch) are COPYed straight
 * into the table: no staging, no conflict handling.  If one exists after
 * all (a destination that already held rows), the savepoint undoes the COPY
 * and the caller sends every upsert through the staging path instead.
 * Returns 1 when the rows went in, 0 to fall back, -1 on error.
 */
static int
rp_mirror_apply_fresh(RpMirror *pg, RpMirrorTable *t)
{
	PGresult   *res;
	int			rc;

	if (rp_mirror_exec(pg, "SAVEPOINT rp_fresh", "SAVEPOINT", t) < 0)
		return -1;
	rc = rp_mirror_stage_effects(pg, t, t->qname, RP_MIRROR_STAGE_FRESH);
	if (rc == 0)
		return rp_mirror_exec(pg, "RELEASE SAVEPOINT rp_fresh", "RELEASE SAVEPOINT", t) < 0 ? -1 : 1;
	if (rp_error_halt() != RP_HALT_SINK || strstr(rp_error(), "SQLSTATE 23505") == NULL)
		return -1;
	res = PQexec(pg->conn, "ROLLBACK TO SAVEPOINT rp_fresh");
	rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : rp_mirror_fail_result(pg, res, "ROLLBACK TO SAVEPOINT", t);
	PQclear(res);
	rp_error_clear();
	return rc;
}

/*
 * Staged upserts: one UPDATE ... FROM the staging table for the keys the
 * table holds, writing only rows whose values differ (an identical row
 * keeps its tuple: no dead tuple, no WAL, no trigger); then, unless every
 * staged row was matched that way, one INSERT ... ON CONFLICT DO NOTHING
 * for the keys it lacks.  Cheaper than INSERT ... ON CONFLICT DO UPDATE,
 * which locks each conflicting row (a WAL record of its own) before it
 * updates it, and rewrites identical rows.
 */
static int
rp_mirror_apply_upserts(RpMirror *pg, RpMirrorTable *t, RpMirrorStageWhich which)
{
	RpBuf		sql;
	int			staged = 0,
				nvals,
				updated = 0,
				rc;
	bool	   *cols;

	for (int e = 0; e < t->neffects; e++)
		staged += rp_mirror_stage_wants(&t->effects[e], which);
	if (rp_mirror_stage_ensure(pg, t) < 0 || rp_mirror_stage_effects(pg, t, t->stage_ups, which) < 0)
		return -1;
	cols = rp_mirror_value_cols(t, &nvals);
	rp_buf_init(&sql, 1024);
	if (nvals > 0)
	{
		PGresult   *res;

		/*
		 * by the key index (RP_MIRROR_BY_INDEX); reset with the next
		 * statement
		 */
		rp_buf_put_text(&sql, RP_MIRROR_BY_INDEX "UPDATE ");
		rp_buf_put_text(&sql, t->qrel);
		rp_buf_put_text(&sql, " d SET ");
		rp_mirror_sql_set(&sql, t, cols, "s");
		rp_buf_put_text(&sql, " FROM ");
		rp_buf_put_text(&sql, t->stage_ups);
		rp_buf_put_text(&sql, " s WHERE ");
		rp_mirror_sql_key_match(pg, &sql, t->rel, t->keycols, t->nkey, "d", "s");
		rp_mirror_sql_changed(pg, &sql, t, cols, "d", "s", NULL);
		rp_buf_put_char(&sql, '\0');
		res = PQexec(pg->conn, sql.data);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			updated = rp_mirror_fail_result(pg, res, "applying upserts", t);
		else
			updated = atoi(PQcmdTuples(res));
		PQclear(res);
		if (updated < 0)
		{
			rp_free(cols);
			rp_buf_free(&sql);
			return -1;
		}
	}
	rp_buf_reset(&sql);
	if (nvals > 0)
		rp_buf_put_text(&sql, RP_MIRROR_BY_INDEX_END);
	if (updated < staged)
	{
		/*
		 * keys the table lacks (or rows left alone: their keys conflict,
		 * nothing is done); the source's values of an identity column
		 * GENERATED ALWAYS are kept, as COPY keeps them
		 * (rp_mirror_snap_upsert_sql)
		 */
		rp_buf_put_text(&sql, "INSERT INTO ");
		rp_buf_put_text(&sql, t->qname);
		rp_buf_put_text(&sql, " (");
		rp_mirror_sql_cols(pg, &sql, t->rel, NULL, 0, NULL);
		rp_buf_put_text(&sql, ") OVERRIDING SYSTEM VALUE SELECT ");
		rp_mirror_sql_cols(pg, &sql, t->rel, NULL, 0, NULL);
		rp_buf_put_text(&sql, " FROM ");
		rp_buf_put_text(&sql, t->stage_ups);
		rp_buf_put_text(&sql, " ON CONFLICT (");
		rp_mirror_sql_cols(pg, &sql, t->rel, t->keycols, t->nkey, NULL);
		rp_buf_put_text(&sql, ") DO NOTHING");
	}
	rp_buf_put_char(&sql, '\0');
	rc = sql.len > 1 ? rp_mirror_exec(pg, sql.data, "applying upserts", t) : 0;
	rp_buf_free(&sql);
	rp_free(cols);
	return rc;
}

/* Rows with unchanged TOAST columns: UPDATE only the columns they carry. */
static int
rp_mirror_apply_partial(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, const char *extra_where)
{
	int			natts = t->rel->natts;
	RpDatum    *datums = rp_malloc0(sizeof(RpDatum) * (size_t) (natts + t->nkey + 1));
	uint8_t    *encs = rp_malloc0((size_t) (natts + t->nkey + 1));
	bool	   *set = rp_malloc0(sizeof(bool) * (size_t) (natts + 1));
	int		   *param = rp_malloc0(sizeof(int) * (size_t) (natts + 1));
	RpBuf		sql;
	int			n = 0,
				nset,
				rc;
	char		tmp[32];

	rp_buf_init(&sql, 512);
	rp_buf_put_text(&sql, "UPDATE ");
	rp_buf_put_text(&sql, t->qrel);
	rp_buf_put_text(&sql, " SET ");
	for (int i = 0; i < natts; i++)
	{
		RpDatum		d;
		bool		is_key = false;
		char	   *qc;

		for (int k = 0; k < t->nkey; k++)
			is_key |= t->keycols[k] == i;
		rp_mirror_row_get(&t->arena, ef->row_off, i, &d);
		if (is_key || d.kind == RP_DATUM_UNCHANGED || (t->rel->cols[i].flags & RP_COL_GENERATED))
			continue;
		datums[n] = d;
		encs[n] = t->rel->cols[i].encoding;
		set[i] = true;
		param[i] = n + 1;
		qc = rp_sql_ident_dup(t->rel->cols[i].name);
		snprintf(tmp, sizeof(tmp), " = $%d", n + 1);
		if (n)
			rp_buf_put_text(&sql, ", ");
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, tmp);
		rp_free(qc);
		n++;
	}
	nset = n;
	if (n == 0)
	{
		rp_buf_free(&sql);
		rp_free(datums);
		rp_free(encs);
		rp_free(set);
		rp_free(param);
		return 0;
	}
	rp_buf_put_text(&sql, " WHERE ");
	for (int k = 0; k < t->nkey; k++)
	{
		char	   *qc = rp_sql_ident_dup(t->rel->cols[t->keycols[k]].name);

		rp_mirror_row_get(&t->arena, ef->key_off, k, &datums[n]);
		encs[n] = t->rel->cols[t->keycols[k]].encoding;
		snprintf(tmp, sizeof(tmp), " = $%d", n + 1);
		if (k)
			rp_buf_put_text(&sql, " AND ");
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, tmp);
		rp_free(qc);
		n++;
	}

	/*
	 * a row whose carried values are what it holds is left alone (no new
	 * tuple)
	 */
	if (nset > 0)
		rp_mirror_sql_changed(pg, &sql, t, set, t->qname, NULL, param);
	if (extra_where)
		rp_buf_put_text(&sql, extra_where);
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec_datums(pg, t, sql.data, n, datums, encs, "applying a partial update");
	rp_buf_free(&sql);
	rp_free(datums);
	rp_free(encs);
	rp_free(set);
	rp_free(param);
	return rc;
}

/* Every table the batch touched that is not resolved yet, in one catalog query. */
static int
rp_mirror_resolve_touched(RpMirror *pg)
{
	RpMirrorTable **ts = rp_malloc(sizeof(RpMirrorTable *) * (size_t) (pg->ntouched ? pg->ntouched : 1));
	int			n = 0,
				rc;

	for (int i = 0; i < pg->ntouched; i++)
		if (!pg->touched[i]->resolved && pg->touched[i]->neffects > 0)
			ts[n++] = pg->touched[i];
	rc = n ? rp_mirror_tables_resolve(pg, ts, n) : 0;
	rp_free(ts);
	return rc;
}

int
rp_mirror_apply_end_txn(RpMirror *pg)
{
	/*
	 * the batch's tables, not every table, and only with a history table
	 * among them: this runs at each source commit
	 */
	if (!pg->touched_history)
		return 0;
	if (rp_mirror_resolve_touched(pg) < 0)
		return -1;
	for (int i = 0; i < pg->ntouched; i++)
	{
		RpMirrorTable *t = pg->touched[i];

		if (!t->history || t->neffects == 0)
			continue;
		if (rp_mirror_apply_history(pg, t) < 0)
			return -1;
		rp_mirror_effects_clear(t);
	}
	return 0;
}

/* t's rows with unchanged TOAST columns, one by one. */
static int
rp_mirror_apply_partials(RpMirror *pg, RpMirrorTable *t)
{
	for (int e = 0; e < t->neffects; e++)
		if (t->effects[e].op == RP_EFFECT_UPSERT && t->effects[e].partial &&
			rp_mirror_apply_partial(pg, t, &t->effects[e], NULL) < 0)
			return -1;
	return 0;
}

/*
 * One table's pending effects, applied and cleared: deletes, fresh rows,
 * staged upserts, partial updates.
 */
static int
rp_mirror_apply_table(RpMirror *pg, RpMirrorTable *t)
{
	bool		any_del = false,
				any_full = false,
				any_fresh = false;
	int			fresh = 0;

	/*
	 * No replica identity: only inserts, each its own row (a multiset), all
	 * COPYed straight in.  A duplicate is a row like any other here, and no
	 * key could say which row a conflict is.
	 */
	if (t->no_identity)
	{
		if (t->neffects > 0 && rp_mirror_stage_effects(pg, t, t->qname, RP_MIRROR_STAGE_FRESH) < 0)
			return -1;
		rp_mirror_effects_clear(t);
		return 0;
	}
	for (int e = 0; e < t->neffects; e++)
	{
		any_del |= rp_mirror_stage_wants(&t->effects[e], RP_MIRROR_STAGE_DELETES);
		any_full |= rp_mirror_stage_wants(&t->effects[e], RP_MIRROR_STAGE_UPSERTS);
		any_fresh |= rp_mirror_stage_wants(&t->effects[e], RP_MIRROR_STAGE_FRESH);
	}
	if (any_del && rp_mirror_apply_deletes(pg, t) < 0)
		return -1;
	if (any_fresh && (fresh = rp_mirror_apply_fresh(pg, t)) < 0)
		return -1;
	/* fresh rows that could not go in directly join the staged upserts */
	if ((any_full || (any_fresh && fresh == 0)) &&
		rp_mirror_apply_upserts(pg, t, fresh == 1 || !any_fresh ? RP_MIRROR_STAGE_UPSERTS
								: RP_MIRROR_STAGE_ALL_UPSERTS) < 0)
		return -1;
	if (rp_mirror_apply_partials(pg, t) < 0)
		return -1;
	rp_mirror_effects_clear(t);
	return 0;
}

/*
 * The small sets of tables[0..n), together in one pipeline
 * (rp_mirror_pipeline.c), then their rows with unchanged TOAST; statements
 * no table wants any more are deallocated with them.
 */
static int
rp_mirror_apply_small(RpMirror *pg, RpMirrorTable **tables, int n)
{
	int			rc = rp_mirror_pipeline_apply(pg, tables, n);

	for (int i = 0; i < n && rc == 0; i++)
	{
		rc = rp_mirror_apply_partials(pg, tables[i]);
		rp_mirror_effects_clear(tables[i]);
	}
	return rc;
}

int
rp_mirror_apply_flush(RpMirror *pg)
{
	bool		history = false;
	RpMirrorTable **small;
	int			nsmall = 0,
				rc = 0;

	for (int i = 0; i < pg->ntouched; i++)
		history |= pg->touched[i]->history && pg->touched[i]->neffects > 0;
	if (rp_mirror_apply_end_txn(pg) < 0)
		return -1;
	/* versions of a transaction not ended yet: a barrier inside it */
	if (history)
		pg->history_barrier_lsn = pg->cur_commit_lsn;
	if (rp_mirror_resolve_touched(pg) < 0)
		return -1;

	/*
	 * Tables in the order the batch first touched them: a run of small sets
	 * goes down one pipeline, a larger set through staging.
	 */
	small = rp_malloc(sizeof(RpMirrorTable *) * (size_t) (pg->ntouched ? pg->ntouched : 1));
	for (int i = 0; i <= pg->ntouched && rc == 0; i++)
	{
		RpMirrorTable *t = i < pg->ntouched ? pg->touched[i] : NULL;

		if (t && t->neffects == 0)
			continue;
		if (t && rp_mirror_pipeline_wants(pg, t))
		{
			small[nsmall++] = t;
			continue;
		}
		if (nsmall > 0 || (t == NULL && pg->nstale > 0))
			rc = rp_mirror_apply_small(pg, small, nsmall);
		nsmall = 0;
		if (t && rc == 0)
			rc = rp_mirror_apply_table(pg, t);
	}
	rp_free(small);
	if (rc == 0)
		rp_mirror_untouch_all(pg);
	return rc;
}
