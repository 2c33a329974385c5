/*
 * rp_mirror_history_copy.c
 *    Copies into history tables (--history): the initial snapshot and the
 *    backfill stage their rows as the plain mirror does, then merge them
 *    as versions instead of upserting them.
 *
 * A staged row whose key has an open version with the same content opens
 * nothing (a re-snapshot or a repeated chunk is not a change); one whose
 * open version differs closes it and opens a new one; one with no open
 * version opens one.  Versions open at a fixed point: the snapshot's
 * consistent point and time, or the commit of the backfill's high
 * watermark.  Content is compared as text, column by column, so a type
 * without an equality operator still compares (and two spellings of one
 * value that print differently count as a change).
 *
 * The snapshot's time is chosen once per consistent point and kept in the
 * snapshot progress table (relid 0, mode "history", token "LSN|ms"), so a
 * resumed copy, and every table of one snapshot, opens its versions at
 * the same time; the completion deletes it with the rest of the progress.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_lsn.h"

#include "sinks/mirror/rp_mirror_int.h"
#include "sinks/mirror/rp_mirror_history_copy.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

void
rp_mirror_history_mark_format(uint64_t lsn, int64_t at_ms, char *out, size_t outlen)
{
	char		l[RP_LSN_BUFLEN];

	snprintf(out, outlen, "%s|%" PRId64, rp_lsn_format(lsn, l), at_ms);
}

bool
rp_mirror_history_mark_parse(const char *s, uint64_t *lsn, int64_t *at_ms)
{
	const char *bar = s ? strchr(s, '|') : NULL;
	char		l[RP_LSN_BUFLEN];
	size_t		n;
	uint64_t	v = 0;
	uint64_t	parsed;

	if (bar == NULL || (size_t) (bar - s) >= sizeof(l))
		return false;
	memcpy(l, s, (size_t) (bar - s));
	l[bar - s] = '\0';
	n = strspn(bar + 1, "0123456789");
	/* milliseconds since 1970: digits only, at most 15 of them (no overflow) */
	if (!rp_lsn_parse(l, &parsed) || n == 0 || n > 15 || bar[1 + n] != '\0')
		return false;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t) (bar[1 + i] - '0');
	*lsn = parsed;
	*at_ms = (int64_t) v;
	return true;
}

void
rp_mirror_history_time_sql(int64_t at_ms, char *out, size_t outlen)
{
	snprintf(out, outlen, "pg_catalog.to_timestamp(%" PRId64 "::numeric / 1000)", at_ms);
}

int
rp_mirror_history_snap_time(RpMirror *pg, const RpSnapshotCtx *ctx, int64_t *at_ms)
{
	char		mark[64],
				sysid[24],
				tli[16];
	const char *vals[5];
	PGresult   *res;
	uint64_t	lsn = 0;
	int			rc = 0;

	rp_mirror_history_mark_format(ctx->snapshot_lsn, ctx->snapshot_at_ms, mark, sizeof(mark));
	snprintf(sysid, sizeof(sysid), "%" PRIu64, ctx->origin->system_id);
	snprintf(tli, sizeof(tli), "%u", ctx->origin->timeline);
	vals[0] = sysid;
	vals[1] = pg->opts.slot;
	vals[2] = tli;
	vals[3] = mark;

	/*
	 * the first history table of this consistent point sets it; a stale one
	 * is replaced
	 */
	res = PQexecParams(pg->conn,
					   rp_mirror_bk(pg, "INSERT INTO @bk.snapshot_progress AS p (system_id, slot, relid, timeline,"
									" dest_table, mode, token, rows) VALUES ($1, $2, 0, $3::int, '', 'history', $4, 0)"
									" ON CONFLICT (system_id, slot, relid) DO UPDATE SET token = EXCLUDED.token"
									" WHERE split_part(p.token, '|', 1) <> split_part(EXCLUDED.token, '|', 1)"
									" RETURNING token"), 4, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, "storing the history snapshot's time", NULL);
	PQclear(res);
	if (rc < 0)
		return rc;
	res = PQexecParams(pg->conn, rp_mirror_bk(pg, "SELECT token FROM @bk.snapshot_progress WHERE slot = $1 AND relid = 0"),
					   1, NULL, vals + 1, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
		!rp_mirror_history_mark_parse(PQgetvalue(res, 0, 0), &lsn, at_ms) || lsn != ctx->snapshot_lsn)
		rc = rp_fail(RP_HALT_SINK, "the stored time of the history snapshot of slot \"%s\" is missing or damaged",
					 pg->opts.slot);
	PQclear(res);
	return rc;
}

/* "ROW(a.c1::text, ...)": the content of the applied columns, as text. */
static void
rp_mirror_history_content(RpMirror *pg, RpBuf *b, const RpRelation *rel, const char *alias)
{
	bool		first = true;

	rp_buf_put_text(b, "ROW(");
	for (int i = 0; i < rel->natts; i++)
	{
		char	   *q;

		if (rel->cols[i].flags & RP_COL_GENERATED)
			continue;
		q = rp_sql_ident_dup(rel->cols[i].name);
		if (!first)
			rp_buf_put_text(b, ", ");
		first = false;
		rp_buf_put_text(b, alias);
		rp_buf_put_char(b, '.');
		rp_buf_put_text(b, q);
		rp_buf_put_text(b, "::text");
		rp_free(q);
	}
	rp_buf_put_char(b, ')');
}

void
rp_mirror_history_merge_sql(RpMirror *pg, RpBuf *b, const RpMirrorTable *t, const RpRelation *rel,
							const char *stage, const char *lsn, const char *time_sql)
{
	/*
	 * a changed row: its open version closes (one opened here already is the
	 * same row)
	 */
	rp_buf_put_text(b, "UPDATE ");
	rp_buf_put_text(b, t->qrel);
	rp_buf_put_text(b, " o SET valid_to_lsn = '");
	rp_buf_put_text(b, lsn);
	rp_buf_put_text(b, "'::pg_catalog.pg_lsn, valid_to_time = ");
	rp_buf_put_text(b, time_sql);
	rp_buf_put_text(b, " FROM ");
	rp_buf_put_text(b, stage);
	rp_buf_put_text(b, " s WHERE ");
	rp_mirror_sql_key_match(pg, b, rel, t->keycols, t->nkey, "o", "s");
	rp_buf_put_text(b, " AND o.valid_to_lsn IS NULL AND o.valid_from_lsn <> '");
	rp_buf_put_text(b, lsn);
	rp_buf_put_text(b, "'::pg_catalog.pg_lsn AND ");
	rp_mirror_history_content(pg, b, rel, "o");
	rp_buf_put_text(b, " IS DISTINCT FROM ");
	rp_mirror_history_content(pg, b, rel, "s");

	/* every staged row without an open version (new, changed) opens one */
	rp_buf_put_text(b, "; INSERT INTO ");
	rp_buf_put_text(b, t->qname);
	rp_buf_put_text(b, " (");
	rp_mirror_sql_cols(pg, b, rel, NULL, 0, NULL);
	rp_buf_put_text(b, ", valid_from_lsn, valid_from_time) SELECT ");
	rp_mirror_sql_cols(pg, b, rel, NULL, 0, "s.");
	rp_buf_put_text(b, ", '");
	rp_buf_put_text(b, lsn);
	rp_buf_put_text(b, "'::pg_catalog.pg_lsn, ");
	rp_buf_put_text(b, time_sql);
	rp_buf_put_text(b, " FROM ");
	rp_buf_put_text(b, stage);
	rp_buf_put_text(b, " s WHERE NOT EXISTS (SELECT 1 FROM ");
	rp_buf_put_text(b, t->qrel);
	rp_buf_put_text(b, " o WHERE ");
	rp_mirror_sql_key_match(pg, b, rel, t->keycols, t->nkey, "o", "s");
	rp_buf_put_text(b, " AND o.valid_to_lsn IS NULL)");
}

void
rp_mirror_history_retire_sql(RpMirror *pg, RpBuf *b, const RpMirrorTable *t, const RpRelation *rel,
							 const char *seen, const char *lsn, const char *time_sql)
{
	rp_buf_put_text(b, "UPDATE ");
	rp_buf_put_text(b, t->qrel);
	rp_buf_put_text(b, " d SET valid_to_lsn = '");
	rp_buf_put_text(b, lsn);
	rp_buf_put_text(b, "'::pg_catalog.pg_lsn, valid_to_time = ");
	rp_buf_put_text(b, time_sql);
	rp_buf_put_text(b, " WHERE d.valid_to_lsn IS NULL AND NOT EXISTS (SELECT 1 FROM ");
	rp_buf_put_text(b, seen);
	rp_buf_put_text(b, " s WHERE ");
	rp_mirror_sql_key_match(pg, b, rel, t->keycols, t->nkey, "s", "d");
	rp_buf_put_text(b, "); DROP TABLE ");
	rp_buf_put_text(b, seen);
}

void
rp_mirror_history_stage_ddl(RpMirror *pg, RpBuf *b, const RpMirrorTable *t, const RpRelation *rel,
							const char *stage)
{
	/*
	 * the source columns only: LIKE would bring the versions' NOT NULL
	 * columns
	 */
	rp_buf_put_text(b, "CREATE TEMP TABLE IF NOT EXISTS ");
	rp_buf_put_text(b, stage);
	rp_buf_put_text(b, " AS SELECT ");
	rp_mirror_sql_cols(pg, b, rel, NULL, 0, NULL);
	rp_buf_put_text(b, " FROM ");
	rp_buf_put_text(b, t->qname);
	rp_buf_put_text(b, " WITH NO DATA");
}
