/*
 * rp_mirror_change.c
 *    Row changes and TRUNCATEs of a source transaction, as the mirror takes
 *    them: folded into the net-effect map (keyed tables), applied one by
 *    one (REPLICA IDENTITY FULL without a key), or a barrier (TRUNCATE).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/rp_counter.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "rp_format.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

/* ---- REPLICA IDENTITY FULL without a key: change by change ---------------------- */

static int
rp_mirror_apply_full_match(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec)
{
	const RpRelation *rel = t->rel;
	int			natts = rel->natts;
	RpDatum    *datums = rp_malloc0(sizeof(RpDatum) * (size_t) (2 * natts + 1));
	uint8_t    *encs = rp_malloc0((size_t) (2 * natts + 1));
	int		   *which = rp_malloc0(sizeof(int) * (size_t) (2 * natts + 1));
	RpBuf		sql;
	int			n = 0,
				rc;
	char		tmp[32];

	rp_buf_init(&sql, 512);
	if (rec->tag == RP_TAG_INSERT)
	{
		n = rp_mirror_collect(t, &rec->u.change.new_tuple, false, datums, encs, which);
		rp_mirror_sql_insert_values(pg, &sql, t, which, n, NULL, NULL);
	}
	else
	{
		int			nset = 0;
		int			nmatch;

		if (!rec->u.change.has_old)
		{
			rc = rp_fail(RP_HALT_SINK, "%s on table %s carries no old row to match", rp_tag_name(rec->tag),
						 t->qname);
			goto done;
		}
		if (rec->tag == RP_TAG_UPDATE)
		{
			nset = rp_mirror_collect(t, &rec->u.change.new_tuple, true, datums, encs, which);
			rp_buf_put_text(&sql, "UPDATE ");
			rp_buf_put_text(&sql, t->qrel);
			rp_buf_put_text(&sql, " SET ");
			for (int i = 0; i < nset; i++)
			{
				char	   *qc = rp_sql_ident_dup(rel->cols[which[i]].name);

				snprintf(tmp, sizeof(tmp), " = $%d", i + 1);
				if (i)
					rp_buf_put_text(&sql, ", ");
				rp_buf_put_text(&sql, qc);
				rp_buf_put_text(&sql, tmp);
				rp_free(qc);
			}
		}
		else
		{
			rp_buf_put_text(&sql, "DELETE FROM ");
			rp_buf_put_text(&sql, t->qrel);
		}
		/* one row that equals the old row in every column */
		rp_buf_put_text(&sql, " WHERE ctid = (SELECT ctid FROM ");
		rp_buf_put_text(&sql, t->qrel);
		rp_buf_put_text(&sql, " o WHERE ");
		nmatch = rp_mirror_collect(t, &rec->u.change.old_tuple, false, datums + nset, encs + nset,
								   which + nset);
		for (int i = 0; i < nmatch; i++)
		{
			if (i)
				rp_buf_put_text(&sql, " AND ");
			rp_mirror_match_expr(pg, &sql, t, which[nset + i], nset + i + 1, "o");
		}
		rp_buf_put_text(&sql, " LIMIT 1)");
		n = nset + nmatch;
	}
	rp_buf_put_char(&sql, '\0');
	if (rec->tag == RP_TAG_INSERT)
		rc = rp_mirror_exec_datums(pg, t, sql.data, n, datums, encs, "applying a change");
	else
	{
		RpMirrorParams p;

		/*
		 * the source changed one row: matching none means the destination
		 * diverged
		 */
		rp_mirror_params_init(&p);
		for (int i = 0; i < n; i++)
			rp_mirror_params_datum(&p, encs[i], &datums[i]);
		rc = rp_mirror_params_exec_count(pg, t, sql.data, &p, "applying a change");
		rp_mirror_params_free(&p);
		if (rc == 0)
			rc = rp_mirror_divergence(pg, t, rec->tag == RP_TAG_UPDATE ? "an update matched no row" : "a delete matched no row");
		else if (rc > 1)		/* a partitioned table: ctid is per partition */
			rc = rp_mirror_divergence(pg, t, rec->tag == RP_TAG_UPDATE ? "an update matched more than one row" : "a delete matched more than one row");
		else if (rc == 1)
			rc = 0;
	}
done:
	rp_buf_free(&sql);
	rp_free(datums);
	rp_free(encs);
	rp_free(which);
	return rc;
}

/* ---- key changes with unchanged TOAST --------------------------------------------- */

/*
 * The destination's values of out's unchanged columns, as text, in the row
 * of oldkey (a key row) or else of newt's key (history: the open version).
 */
static PGresult *
rp_mirror_moved_read(RpMirror *pg, RpMirrorTable *t, const RpTuple *out, const RpBuf *oldkey, const RpTuple *newt)
{
	RpBuf		sql;
	RpMirrorParams p;
	PGresult   *res;
	const char **vals;
	char		tmp[32];
	bool		first = true;

	rp_buf_init(&sql, 512);
	rp_mirror_params_init(&p);
	rp_buf_put_text(&sql, "SELECT ");
	for (int i = 0; i < out->natts; i++)
	{
		char	   *qc;

		if (out->datums[i].kind != RP_DATUM_UNCHANGED)
			continue;
		qc = rp_sql_ident_dup(t->rel->cols[i].name);
		if (!first)
			rp_buf_put_text(&sql, ", ");
		first = false;
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, "::text");
		rp_free(qc);
	}
	rp_buf_put_text(&sql, " FROM ");
	rp_buf_put_text(&sql, t->qrel);
	rp_buf_put_text(&sql, " WHERE ");
	for (int k = 0; k < t->nkey; k++)
	{
		RpDatum		d;
		char	   *qc = rp_sql_ident_dup(t->rel->cols[t->keycols[k]].name);

		if (oldkey)
			rp_mirror_row_get(oldkey, 0, k, &d);
		else
			d = newt->datums[t->keycols[k]];
		snprintf(tmp, sizeof(tmp), " = $%d", rp_mirror_params_datum(&p, t->rel->cols[t->keycols[k]].encoding, &d));
		if (k)
			rp_buf_put_text(&sql, " AND ");
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, tmp);
		rp_free(qc);
	}
	if (t->history)
		rp_buf_put_text(&sql, " AND valid_to_lsn IS NULL");
	rp_buf_put_text(&sql, " LIMIT 1");
	rp_buf_put_char(&sql, '\0');
	vals = rp_malloc0(sizeof(char *) * (size_t) (p.n ? p.n : 1));
	for (int i = 0; i < p.n; i++)
		vals[i] = p.isnull[i] ? NULL : p.strings.data + p.offs[i];
	res = PQexecParams(pg->conn, sql.data, p.n, NULL, vals, NULL, NULL, 0);
	rp_free(vals);
	rp_mirror_params_free(&p);
	rp_buf_free(&sql);
	return res;
}

/*
 * An update that changes the key while some column is unchanged TOAST does
 * not carry that column's value.  It is in the batch's row of the old key,
 * in the old tuple (REPLICA IDENTITY FULL), or else in the destination's row
 * of the old key (history: its open version), which the batch has not
 * touched yet (or, that missing, its row of the new key).  out gets the new
 * tuple with every unchanged column filled
 * in; its bytes live in hold.  Without this the new key would get a partial
 * UPDATE of a row that does not exist, and the row would be lost.
 */
static int
rp_mirror_fill_moved(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec, const RpBuf *oldkey, RpTuple *out,
					 RpBuf *hold)
{
	const RpTuple *nt = &rec->u.change.new_tuple;
	const RpTuple *ot = &rec->u.change.old_tuple;
	const RpEffect *src = rp_mirror_effect_find(t, oldkey);
	int			natts = nt->natts;
	size_t	   *offs = rp_malloc0(sizeof(size_t) * (size_t) (natts ? natts : 1));
	bool		need_dest = false;
	int			rc = 0;

	out->natts = nt->natts;
	out->datums = rp_malloc0(sizeof(RpDatum) * (size_t) (natts ? natts : 1));
	for (int i = 0; i < natts; i++)
	{
		RpDatum		d = nt->datums[i];

		if (d.kind == RP_DATUM_UNCHANGED && src && src->op == RP_EFFECT_UPSERT && src->row_len > 0)
			rp_mirror_row_get(&t->arena, src->row_off, i, &d);
		if (d.kind == RP_DATUM_UNCHANGED && i < ot->natts &&
			(ot->datums[i].kind == RP_DATUM_VALUE || ot->datums[i].kind == RP_DATUM_NULL))
			d = ot->datums[i];
		offs[i] = hold->len;
		if (d.kind != RP_DATUM_UNCHANGED && d.len)
			rp_buf_put_bytes(hold, d.data, d.len);
		out->datums[i] = d;
		need_dest |= d.kind == RP_DATUM_UNCHANGED;
	}
	if (need_dest)
	{
		PGresult   *res = rp_mirror_moved_read(pg, t, out, oldkey, NULL);

		/*
		 * The old key is not there: a resumed snapshot can leave it so (the
		 * row moved before the resumed copy, which then stored its new key).
		 * That row was copied after this change, and any later change to
		 * these columns follows in the stream, so its values serve.  Holding
		 * neither key is the case that halts.
		 */
		if (res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 0)
		{
			PQclear(res);
			res = rp_mirror_moved_read(pg, t, out, NULL, nt);
		}
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			rc = rp_mirror_fail_result(pg, res, "reading the unchanged TOAST values of a moved row", t);
		else if (PQntuples(res) != 1)
			rc = rp_fail(RP_HALT_SINK, "update on table %s changes the key of a row the destination does not hold, and its unchanged TOAST values are only there",
						 t->qname);
		else
		{
			int			f = 0;

			for (int i = 0; i < natts; i++)
			{
				if (out->datums[i].kind != RP_DATUM_UNCHANGED)
					continue;
				offs[i] = hold->len;
				if (PQgetisnull(res, 0, f))
				{
					out->datums[i].kind = RP_DATUM_NULL;
					out->datums[i].len = 0;
				}
				else
				{
					out->datums[i].kind = RP_MIRROR_DATUM_TEXT;
					t->text_datums = true;	/* this batch's COPYs go as text */
					out->datums[i].len = (uint32_t) PQgetlength(res, 0, f);
					rp_buf_put_bytes(hold, PQgetvalue(res, 0, f), out->datums[i].len);
				}
				f++;
			}
		}
		PQclear(res);
	}
	/* hold is complete: point into it */
	for (int i = 0; i < natts; i++)
		out->datums[i].data = out->datums[i].len ? (const unsigned char *) hold->data + offs[i] : NULL;
	rp_free(offs);
	return rc;
}

/*
 * The same move done in the destination: what the batch holds is applied
 * first, then one UPDATE moves the row of the old key to the new one and
 * sets the columns the change carries.  The unchanged values never leave
 * the server (G5): read back as text they were held three times, and a
 * 208 MB bytea peaked at 803 MB under --max-memory 64MB.  0 when the row
 * moved, 1 when the old key is not there (the caller reads the new key's
 * row instead, rp_mirror_fill_moved), -1.
 */
static int
rp_mirror_move_in_place(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec)
{
	const RpRelation *rel = t->rel;
	int			natts = rel->natts;
	RpDatum    *datums = rp_malloc0(sizeof(RpDatum) * (size_t) (natts + 1));
	uint8_t    *encs = rp_malloc0((size_t) (natts + 1));
	int		   *which = rp_malloc0(sizeof(int) * (size_t) (natts + 1));
	int			nset = rp_mirror_collect(t, &rec->u.change.new_tuple, true, datums, encs, which);
	RpMirrorParams p;
	RpBuf		sql;
	char		tmp[32];
	int			rc;

	if (rp_mirror_apply_flush(pg) < 0)
		rc = -1;
	else
	{
		rp_mirror_effects_release(pg);
		rp_buf_init(&sql, 512);
		rp_mirror_params_init(&p);
		rp_buf_put_text(&sql, "UPDATE ");
		rp_buf_put_text(&sql, t->qrel);
		rp_buf_put_text(&sql, " SET ");
		for (int i = 0; i < nset; i++)
		{
			char	   *qc = rp_sql_ident_dup(rel->cols[which[i]].name);

			snprintf(tmp, sizeof(tmp), " = $%d", rp_mirror_params_datum(&p, encs[i], &datums[i]));
			rp_buf_put_text(&sql, i ? ", " : "");
			rp_buf_put_text(&sql, qc);
			rp_buf_put_text(&sql, tmp);
			rp_free(qc);
		}
		rp_buf_put_text(&sql, " WHERE ");
		for (int k = 0; k < t->nkey; k++)
		{
			int			c = t->keycols[k];
			char	   *qc = rp_sql_ident_dup(rel->cols[c].name);

			snprintf(tmp, sizeof(tmp), " = $%d", rp_mirror_params_datum(&p, rel->cols[c].encoding,
																		&rec->u.change.old_tuple.datums[c]));
			rp_buf_put_text(&sql, k ? " AND " : "");
			rp_buf_put_text(&sql, qc);
			rp_buf_put_text(&sql, tmp);
			rp_free(qc);
		}
		rp_buf_put_char(&sql, '\0');
		rc = rp_mirror_params_exec_count(pg, t, sql.data, &p, "moving a row to its new key");
		rc = rc < 0 ? -1 : rc == 0 ? 1 : 0;
		rp_mirror_params_free(&p);
		rp_buf_free(&sql);
	}
	rp_free(datums);
	rp_free(encs);
	rp_free(which);
	return rc;
}

/* ---- changes ---------------------------------------------------------------------- */

/* After a change of t: past the maps' share, apply them now and go on. */
static int
rp_mirror_effects_bound(RpMirror *pg, RpMirrorTable *t)
{
	rp_mirror_effects_account(pg, t);
	if (pg->held < rp_mirror_effects_limit(pg) && !pg->refs)
		return 0;
	pg->refs = false;
	if (rp_mirror_apply_flush(pg) < 0)
		return -1;
	RP_COUNT_ADD(pg->bound_flushes, 1);
	rp_mirror_effects_release(pg);
	return 0;
}

/* A change of a keyed table folded into its effect map. */
static int
rp_mirror_apply_keyed(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec)
{
	RpBuf		key;

	rp_buf_init(&key, 64);
	switch (rec->tag)
	{
		case RP_TAG_INSERT:
			if (t->no_identity)
				rp_mirror_effect_append(pg, t, &rec->u.change.new_tuple, &key);
			else
				rp_mirror_effect_upsert(pg, t, &rec->u.change.new_tuple, &key, true, true);
			break;
		case RP_TAG_UPDATE:
			if (rec->u.change.has_old)
			{
				RpBuf		newkey;

				/* the key changed (or the old row is all there): maybe a move */
				rp_buf_init(&newkey, 64);
				rp_mirror_key_of(t, &rec->u.change.old_tuple, &key);
				rp_mirror_key_of(t, &rec->u.change.new_tuple, &newkey);
				if (key.len != newkey.len || memcmp(key.data, newkey.data, key.len) != 0)
				{
					const RpTuple *nt = &rec->u.change.new_tuple;
					bool		unchanged = false;

					for (uint16_t i = 0; i < nt->natts; i++)
						unchanged |= nt->datums[i].kind == RP_DATUM_UNCHANGED;
					if (unchanged)
					{
						RpTuple		filled;
						RpBuf		hold;
						int			rc;

						/*
						 * read the old key's values before its effect becomes
						 * a delete
						 */
						rp_buf_init(&hold, 1024);
						filled.datums = NULL;

						/*
						 * it reads the destination: the table must be known
						 * now
						 */
						rc = t->resolved ? 0 : rp_mirror_table_resolve(pg, t);

						/*
						 * history keeps versions: the values go into a new
						 * one
						 */
						if (rc == 0 && !t->history)
							rc = rp_mirror_move_in_place(pg, t, rec);
						else if (rc == 0)
							rc = 1;
						if (rc == 1)
							rc = rp_mirror_fill_moved(pg, t, rec, &key, &filled, &hold);
						else if (rc == 0)
						{
							/* moved in place: nothing of it in the map */
							rp_buf_free(&hold);
							rp_buf_free(&newkey);
							rp_buf_free(&key);
							return 0;
						}
						if (rc == 0)
						{
							rp_mirror_effect_delete(pg, t, &rec->u.change.old_tuple, &key);

							/*
							 * filled lives in hold, gone before the map is
							 * applied
							 */
							rp_mirror_effect_upsert(pg, t, &filled, &key, false, false);
						}
						if (filled.datums)
							rp_free(filled.datums);
						rp_buf_free(&hold);
						rp_buf_free(&newkey);
						rp_buf_free(&key);
						return rc;
					}
					rp_mirror_effect_delete(pg, t, &rec->u.change.old_tuple, &key);
				}
				rp_buf_free(&newkey);
			}
			rp_mirror_effect_upsert(pg, t, &rec->u.change.new_tuple, &key, false, true);
			break;
		case RP_TAG_DELETE:
			if (!rec->u.change.has_old)
			{
				rp_buf_free(&key);
				return rp_fail(RP_HALT_SINK, "delete on table %s carries no key", t->qname);
			}
			rp_mirror_effect_delete(pg, t, &rec->u.change.old_tuple, &key);
			break;
	}
	rp_buf_free(&key);
	return 0;
}

int
rp_mirror_apply_change(RpMirror *pg, const RpRecord *rec)
{
	RpMirrorTable *t = rp_mirror_table_get(pg, rec->u.change.rel);
	uint8_t		tag = rec->tag;

	/*
	 * A table is resolved when its effects are applied, with every other
	 * table the batch touched first, in one catalog query
	 * (rp_mirror_apply_flush); a full match applies each change at once.
	 */
	if (t->full_match && !t->resolved && rp_mirror_table_resolve(pg, t) < 0)
		return -1;

	/*
	 * ---- backfill (rp_mirror_backfill.c): a key changed inside a window
	 * ----
	 */
	rp_mirror_backfill_note(pg, t, rec);
	if (tag != RP_TAG_INSERT && (t->no_identity || (rec->u.change.flags & RP_CHANGE_NO_IDENTITY)))
		return rp_fail(RP_HALT_SINK, "%s on table %s cannot be applied: the source table has no replica identity (set a primary key or REPLICA IDENTITY FULL)",
					   rp_tag_name(tag), t->qname);
	if (t->full_match)
		return rp_mirror_apply_full_match(pg, t, rec);
	if (rp_mirror_apply_keyed(pg, t, rec) < 0)
		return -1;
	return rp_mirror_effects_bound(pg, t);
}

/*
 * TRUNCATE is a barrier: effects before it land first.  A history table is
 * not emptied: its open versions are closed at the truncating commit, so
 * the history still says what was there before.
 */
int
rp_mirror_apply_truncate(RpMirror *pg, const RpRecord *rec, const RpRelMap *rels)
{
	RpBuf		sql;
	int			rc = 0;
	int			nplain = 0;

	if (rp_mirror_apply_flush(pg) < 0)
		return -1;
	rp_buf_init(&sql, 256);
	rp_buf_put_text(&sql, "TRUNCATE ");
	for (uint32_t i = 0; i < rec->u.truncate.nrels && rc == 0; i++)
	{
		RpMirrorTable *t = rp_mirror_table_get(pg, rp_relmap_get(rels, rp_truncate_relid(rec, i)));

		if (!t->resolved && rp_mirror_table_resolve(pg, t) < 0)
			rc = -1;
		else if (t->history)
		{
			RpMirrorParams p;
			RpBuf		q,
						ts;
			char		lsn[24];

			rp_lsn_format(pg->cur_commit_lsn, lsn);
			rp_buf_init(&ts, 64);
			rp_fmt_timestamp(&ts, pg->cur_commit_time, true);
			rp_buf_put_char(&ts, '\0');
			rp_mirror_params_init(&p);
			rp_mirror_params_text(&p, lsn);
			rp_mirror_params_text(&p, ts.data);
			rp_buf_init(&q, 256);
			rp_buf_put_text(&q, "UPDATE ");
			rp_buf_put_text(&q, t->qrel);
			rp_buf_put_text(&q, " SET valid_to_lsn = $1, valid_to_time = $2 WHERE valid_to_lsn IS NULL");
			rp_buf_put_char(&q, '\0');
			rc = rp_mirror_params_exec(pg, t, q.data, &p, "closing a truncated history");
			rp_buf_free(&q);
			rp_buf_free(&ts);
			rp_mirror_params_free(&p);
		}
		else
		{
			if (nplain++)
				rp_buf_put_text(&sql, ", ");
			rp_buf_put_text(&sql, t->qrel);
		}
	}
	if (rc == 0 && nplain > 0)
	{
		if (rec->u.truncate.flags & RP_TRUNCATE_RESTART_SEQS)
			rp_buf_put_text(&sql, " RESTART IDENTITY");
		rp_buf_put_char(&sql, '\0');
		rc = rp_mirror_exec(pg, sql.data, "TRUNCATE", NULL);
	}
	rp_buf_free(&sql);
	return rc;
}
