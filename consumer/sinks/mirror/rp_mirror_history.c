/*
 * rp_mirror_history.c
 *    History tables (--history): per key and source transaction, the open
 *    version is closed (valid_to_lsn, valid_to_time) and the new one
 *    opened, so the table says what each row was at every commit.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "rp_format.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

/* " AND o.k = $n" for every key column (the first without AND). */
static void
rp_mirror_history_key_match(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, RpBuf *sql, RpMirrorParams *p)
{
	for (int k = 0; k < t->nkey; k++)
	{
		RpDatum		d;
		char		tmp[32];
		char	   *qc = rp_sql_ident_dup(t->rel->cols[t->keycols[k]].name);
		int			no;

		rp_mirror_row_get(&t->arena, ef->key_off, k, &d);
		no = rp_mirror_params_datum(p, t->rel->cols[t->keycols[k]].encoding, &d);
		rp_buf_put_text(sql, k ? " AND o." : "o.");
		rp_buf_put_text(sql, qc);
		snprintf(tmp, sizeof(tmp), " = $%d", no);
		rp_buf_put_text(sql, tmp);
		rp_free(qc);
	}
}

/*
 * A barrier (TRUNCATE, a schema change) inside a source transaction applies
 * the versions it opened so far; a later change of the same key in that
 * transaction revises the version it opened (valid_from_lsn = its commit
 * LSN) instead of opening a second one, and a later delete removes it (the
 * version before it was closed when it was opened).  Returns the number of
 * versions revised: 0 means go on the usual way.
 */
static int
rp_mirror_history_revise(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, const char *lsn, const char *ts)
{
	RpBuf		sql;
	RpMirrorParams p;
	char		tmp[64];
	int			n;

	rp_buf_init(&sql, 512);
	rp_mirror_params_init(&p);
	if (ef->op == RP_EFFECT_UPSERT)
	{
		rp_buf_put_text(&sql, "UPDATE ");
		rp_buf_put_text(&sql, t->qrel);
		rp_buf_put_text(&sql, " o SET ");
		for (int i = 0; i < t->rel->natts; i++)
		{
			const RpColumn *c = &t->rel->cols[i];
			RpDatum		d;
			char	   *qc;

			rp_mirror_row_get(&t->arena, ef->row_off, i, &d);
			if ((c->flags & RP_COL_GENERATED) || d.kind == RP_DATUM_UNCHANGED)
				continue;
			qc = rp_sql_ident_dup(c->name);
			rp_buf_put_text(&sql, qc);
			snprintf(tmp, sizeof(tmp), " = $%d::", rp_mirror_params_datum(&p, c->encoding, &d));
			rp_buf_put_text(&sql, tmp);
			rp_buf_put_text(&sql, c->type_name);
			rp_buf_put_text(&sql, ", ");
			rp_free(qc);
		}
		snprintf(tmp, sizeof(tmp), "valid_from_time = $%d::timestamptz WHERE ", rp_mirror_params_text(&p, ts));
		rp_buf_put_text(&sql, tmp);
	}
	else
	{
		rp_buf_put_text(&sql, "DELETE FROM ");
		rp_buf_put_text(&sql, t->qrel);
		rp_buf_put_text(&sql, " o WHERE ");
	}
	rp_mirror_history_key_match(pg, t, ef, &sql, &p);
	snprintf(tmp, sizeof(tmp), " AND o.valid_from_lsn = $%d::pg_catalog.pg_lsn", rp_mirror_params_text(&p, lsn));
	rp_buf_put_text(&sql, tmp);
	rp_buf_put_char(&sql, '\0');
	n = rp_mirror_params_exec_count(pg, t, sql.data, &p, "revising a history version");
	rp_mirror_params_free(&p);
	rp_buf_free(&sql);
	/* a removed version still needs the usual close, which finds nothing open */
	return n < 0 ? -1 : ef->op == RP_EFFECT_UPSERT ? n : 0;
}

/*
 * Open the new version of ef's key at the commit (lsn, ts): its columns
 * from the effect, unchanged TOAST ones from the version it replaces.
 */
static int
rp_mirror_history_open(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, const char *lsn,
					   const char *ts)
{
	RpBuf		sql;
	RpMirrorParams p;
	char		tmp[64];
	int			lno,
				tno,
				rc;

	rp_buf_init(&sql, 1024);
	rp_mirror_params_init(&p);
	rp_buf_put_text(&sql, "INSERT INTO ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_text(&sql, " (");
	rp_mirror_sql_cols(pg, &sql, t->rel, NULL, 0, NULL);
	rp_buf_put_text(&sql, ", valid_from_lsn, valid_from_time) SELECT ");
	for (int i = 0, out = 0; i < t->rel->natts; i++)
	{
		const RpColumn *c = &t->rel->cols[i];
		RpDatum		d;
		char	   *qc;

		if (c->flags & RP_COL_GENERATED)
			continue;
		rp_mirror_row_get(&t->arena, ef->row_off, i, &d);
		if (out++)
			rp_buf_put_text(&sql, ", ");
		if (d.kind == RP_DATUM_UNCHANGED)
		{
			qc = rp_sql_ident_dup(c->name);
			rp_buf_put_text(&sql, "o.");
			rp_buf_put_text(&sql, qc);
			rp_free(qc);
		}
		else
		{
			/* the column's own type: SELECT lists do not infer it */
			snprintf(tmp, sizeof(tmp), "$%d::", rp_mirror_params_datum(&p, c->encoding, &d));
			rp_buf_put_text(&sql, tmp);
			rp_buf_put_text(&sql, c->type_name);
		}
	}
	lno = rp_mirror_params_text(&p, lsn);
	tno = rp_mirror_params_text(&p, ts);
	snprintf(tmp, sizeof(tmp), ", $%d::pg_catalog.pg_lsn, $%d::timestamptz", lno, tno);
	rp_buf_put_text(&sql, tmp);
	if (ef->partial)
	{
		rp_buf_put_text(&sql, " FROM ");
		rp_buf_put_text(&sql, t->qrel);
		rp_buf_put_text(&sql, " o WHERE ");
		rp_mirror_history_key_match(pg, t, ef, &sql, &p);
		rp_buf_put_text(&sql, " AND o.valid_to_lsn IS NULL");
	}
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_params_exec(pg, t, sql.data, &p, "opening a history version");
	rp_mirror_params_free(&p);
	rp_buf_free(&sql);
	return rc;
}

/* Close the version of ef's key open before the commit (lsn, ts). */
static int
rp_mirror_history_close(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, const char *lsn,
						const char *ts)
{
	RpBuf		sql;
	RpMirrorParams p;
	char		tmp[64];
	int			lno,
				tno,
				rc;

	rp_buf_init(&sql, 1024);
	rp_mirror_params_init(&p);
	lno = rp_mirror_params_text(&p, lsn);
	tno = rp_mirror_params_text(&p, ts);
	rp_buf_put_text(&sql, "UPDATE ");
	rp_buf_put_text(&sql, t->qrel);
	snprintf(tmp, sizeof(tmp), " o SET valid_to_lsn = $%d, valid_to_time = $%d WHERE ", lno, tno);
	rp_buf_put_text(&sql, tmp);
	rp_mirror_history_key_match(pg, t, ef, &sql, &p);
	snprintf(tmp, sizeof(tmp), " AND o.valid_to_lsn IS NULL AND o.valid_from_lsn <> $%d", lno);
	rp_buf_put_text(&sql, tmp);
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_params_exec(pg, t, sql.data, &p, "closing a history version");
	rp_mirror_params_free(&p);
	rp_buf_free(&sql);
	return rc;
}

/*
 * One source transaction's net effect per key becomes a new version opened
 * at the commit LSN (unless the key was deleted), then the version open
 * before it closed at that LSN.  Unchanged TOAST columns are copied from
 * the version being closed.
 */
int
rp_mirror_apply_history(RpMirror *pg, RpMirrorTable *t)
{
	char		lsn[24];
	RpBuf		tsb;
	int			rc = 0;

	rp_lsn_format(pg->cur_commit_lsn, lsn);
	rp_buf_init(&tsb, 64);
	rp_fmt_timestamp(&tsb, pg->cur_commit_time, true);
	rp_buf_put_char(&tsb, '\0');

	for (int e = 0; e < t->neffects && rc == 0; e++)
	{
		const RpEffect *ef = &t->effects[e];

		/*
		 * No replica identity: each insert is a version of its own, with
		 * nothing before it to close or revise (no key says which row).
		 */
		if (t->no_identity)
		{
			rc = rp_mirror_history_open(pg, t, ef, lsn, tsb.data);
			continue;
		}
		if (pg->history_barrier_lsn == pg->cur_commit_lsn)
		{
			int			revised = rp_mirror_history_revise(pg, t, ef, lsn, tsb.data);

			if (revised < 0)
			{
				rc = -1;
				break;
			}
			if (revised > 0)
				continue;
		}
		if (ef->op == RP_EFFECT_UPSERT)
			rc = rp_mirror_history_open(pg, t, ef, lsn, tsb.data);
		if (rc == 0)
			rc = rp_mirror_history_close(pg, t, ef, lsn, tsb.data);
	}
	rp_buf_free(&tsb);
	return rc;
}
