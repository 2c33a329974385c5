/*
 * rp_mirror_stage.c
 *    Staging: a table's temporary staging tables, and its pending effects
 *    (keys to delete, full rows) COPYed into them, in binary when every
 *    column qualifies (rp_pgbin.h), else in text.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "values/rp_pgbin.h"
#include "values/rp_pgtext.h"
#include "base/rp_status.h"

#define RP_COPY_CHUNK (1024 * 1024)
#define RP_COPY_DIRECT (256 * 1024) /* a value this large is sent from where
									 * it lies */

int
rp_mirror_copy_start(PGconn *conn, const char *into, const char *cols, bool binary, PGresult **res)
{
	RpBuf		sql;

	rp_buf_init(&sql, 256);
	rp_buf_put_text(&sql, "COPY ");
	rp_buf_put_text(&sql, into);
	rp_buf_put_text(&sql, " (");
	rp_buf_put_text(&sql, cols);
	rp_buf_put_text(&sql, binary ? ") FROM STDIN (FORMAT binary)" : ") FROM STDIN");
	rp_buf_put_char(&sql, '\0');
	*res = PQexec(conn, sql.data);
	rp_buf_free(&sql);
	if (PQresultStatus(*res) != PGRES_COPY_IN)
		return -1;
	PQclear(*res);
	*res = NULL;
	return 0;
}

int
rp_mirror_copy_end(PGconn *conn, PGresult **res)
{
	int			rc = PQputCopyEnd(conn, NULL) == 1 ? 0 : -1;
	PGresult   *more;

	*res = PQgetResult(conn);
	if (PQresultStatus(*res) != PGRES_COMMAND_OK)
		rc = -1;
	while ((more = PQgetResult(conn)) != NULL)
		PQclear(more);
	if (rc == 0)
	{
		PQclear(*res);
		*res = NULL;
	}
	return rc;
}

int
rp_mirror_stage_ensure(RpMirror *pg, RpMirrorTable *t)
{
	RpBuf		sql;
	char		name[64];
	int			rc = 0;

	if (t->stage_ups)
		return 0;
	rp_buf_init(&sql, 512);
	for (int pass = 0; pass < 2 && rc == 0; pass++)
	{
		snprintf(name, sizeof(name), "pg_temp.rp_stage_%llu_%s",
				 (unsigned long long) ++pg->stage_seq, pass == 0 ? "u" : "d");
		rp_buf_reset(&sql);
		rp_buf_put_text(&sql, "CREATE TEMP TABLE ");
		rp_buf_put_text(&sql, name + strlen("pg_temp."));
		rp_buf_put_text(&sql, " ON COMMIT DELETE ROWS AS SELECT ");
		rp_mirror_sql_cols(pg, &sql, t->rel, pass == 1 ? t->keycols : NULL, t->nkey, NULL);
		rp_buf_put_text(&sql, " FROM ");
		rp_buf_put_text(&sql, t->qname);
		rp_buf_put_text(&sql, " WITH NO DATA");
		rp_buf_put_char(&sql, '\0');
		rc = rp_mirror_exec(pg, sql.data, "creating a staging table", t);
		if (pass == 0)
			t->stage_ups = rp_strndup(name, strlen(name));
		else
			t->stage_del = rp_strndup(name, strlen(name));
		t->txn_dirty = true;
	}
	rp_buf_free(&sql);
	if (rc < 0)
		rp_mirror_session_drop_objects(pg, t, true);
	return rc;
}

static int
rp_mirror_stage_send(RpMirror *pg, RpBuf *buf, const RpMirrorTable *t)
{
	if (buf->len && PQputCopyData(pg->conn, buf->data, (int) buf->len) != 1)
		return rp_mirror_fail_result(pg, NULL, "COPY", t);
	rp_buf_reset(buf);
	return 0;
}

static int
rp_mirror_stage_end(RpMirror *pg, RpBuf *buf, const RpMirrorTable *t)
{
	PGresult   *res;
	int			rc = rp_mirror_stage_send(pg, buf, t);

	if (PQputCopyEnd(pg->conn, NULL) != 1 && rc == 0)
		rc = rp_mirror_fail_result(pg, NULL, "COPY", t);
	while ((res = PQgetResult(pg->conn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
			rc = rp_mirror_fail_result(pg, res, "COPY", t);
		PQclear(res);
	}
	return rc;
}

/*
 * A large value whose text is its own bytes is escaped slice by slice and
 * sent as out fills, so neither the scratch text nor out grows to hold it.
 * 0 sent, 1 not such a value, -1 on error.
 */
static int
rp_mirror_stage_field_direct(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, uint8_t enc, const RpDatum *d)
{
	RpReader	r;
	const char *s;
	uint32_t	len;

	if (enc != RP_ENC_TEXT && enc != RP_ENC_STRING && enc != RP_ENC_ENUM && enc != RP_ENC_JSON &&
		enc != RP_ENC_JSONB)
		return 1;
	rp_reader_init(&r, d->data, d->len);
	s = rp_get_str(&r, &len);
	if (!r.ok || (len > 0 && s == NULL))
		return 1;
	for (uint32_t off = 0; off < len;)
	{
		uint32_t	n = len - off < RP_COPY_CHUNK ? len - off : RP_COPY_CHUNK;

		rp_pgtext_copy_escape(out, s + off, n);
		off += n;
		if (out->len >= RP_COPY_CHUNK && rp_mirror_stage_send(pg, out, t) < 0)
			return -1;
	}
	return 0;
}

static int
rp_mirror_stage_field(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, uint8_t enc, const RpDatum *d)
{
	int			direct;

	if (d->kind == RP_MIRROR_DATUM_TEXT)
	{
		rp_pgtext_copy_escape(out, (const char *) d->data, d->len);
		return 0;
	}
	if (d->kind != RP_DATUM_VALUE)
	{
		rp_buf_put_bytes(out, "\\N", 2);
		return 0;
	}
	if (d->len >= RP_COPY_DIRECT && (direct = rp_mirror_stage_field_direct(pg, out, t, enc, d)) <= 0)
		return direct;
	rp_buf_reset(&pg->scratch);
	rp_pgtext_value(&pg->scratch, enc, d->data, d->len);
	rp_pgtext_copy_escape(out, pg->scratch.data, pg->scratch.len);
	return 0;
}

/*
 * A large value goes to the destination from the arena, in slices (COPY
 * data may be split anywhere), rather than through out and libpq's output
 * buffer, which would both grow to hold it: it is then held once, not
 * three times.  0 when sent, 1 when its encoding needs converting (the
 * caller copies it), -1 on error (reported).
 */
static int
rp_mirror_stage_direct(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, uint8_t enc, const RpDatum *d)
{
	const unsigned char *body;
	uint32_t	len;

	if (!rp_pgbin_value_split(out, enc, d->data, d->len, &body, &len))
		return 1;
	if (rp_mirror_stage_send(pg, out, t) < 0)
		return -1;
	for (uint32_t off = 0; off < len;)
	{
		uint32_t	n = len - off < RP_COPY_CHUNK ? len - off : RP_COPY_CHUNK;

		if (PQputCopyData(pg->conn, (const char *) body + off, (int) n) != 1)
			return rp_mirror_fail_result(pg, NULL, "COPY", t);
		off += n;
	}
	return 0;
}

/*
 * One effect as a binary COPY tuple: the key columns in column order, or
 * every applied column.  A value with no binary form cannot get here
 * (rp_mirror_table_resolve only sets t->binary when every column has one), so
 * one is a broken invariant, reported rather than sent.
 */
static int
rp_mirror_stage_row_binary(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, const RpEffect *ef, bool keys_only,
						   int nfields)
{
	int			direct;

	rp_pgbin_tuple(out, nfields);
	for (uint16_t i = 0; i < t->rel->natts; i++)
	{
		const RpColumn *c = &t->rel->cols[i];
		RpDatum		d;
		int			k = -1;

		if (keys_only)
		{
			for (int j = 0; j < t->nkey && k < 0; j++)
				if (t->keycols[j] == i)
					k = j;
			if (k < 0)
				continue;
			rp_mirror_row_get(&t->arena, ef->key_off, k, &d);
		}
		else
		{
			if (c->flags & RP_COL_GENERATED)
				continue;
			rp_mirror_row_get(&t->arena, ef->row_off, i, &d);
		}
		if (d.kind != RP_DATUM_VALUE)
			rp_pgbin_null(out);
		else if (d.len >= RP_COPY_DIRECT && (direct = rp_mirror_stage_direct(pg, out, t, c->encoding, &d)) <= 0)
		{
			if (direct < 0)
				return -1;
		}
		else if (rp_pgbin_value(out, c->encoding, d.data, d.len) < 0)
			return rp_fail(RP_HALT_SINK, "column \"%s\" of table %s: a value has no binary form (encoding %u)",
						   c->name, t->qname, (unsigned) c->encoding);
	}
	return 0;
}

/*
 * A staging table used earlier in this transaction (a barrier, the memory
 * bound, a streamed transaction applied block by block) still holds those
 * rows: they would be applied again.  TRUNCATE, not DELETE: the rows are
 * gone in place (a transaction's second TRUNCATE of a table makes no new
 * file), where deleted ones would be scanned by every later join.  The
 * first use in a transaction needs none: the last commit emptied it.
 */
static int
rp_mirror_stage_clear(RpMirror *pg, RpMirrorTable *t, const char *stage)
{
	uint8_t		bit;
	RpBuf		sql;
	int			rc;

	if (stage == NULL || (stage != t->stage_ups && stage != t->stage_del))
		return 0;				/* the table itself (fresh rows) */
	bit = stage == t->stage_ups ? 1 : 2;
	if ((t->stage_used & bit) == 0)
	{
		t->stage_used |= bit;
		return 0;
	}
	rp_buf_init(&sql, 128);
	rp_buf_put_text(&sql, "TRUNCATE ");
	rp_buf_put_text(&sql, stage);
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec(pg, sql.data, "emptying a staging table", t);
	rp_buf_free(&sql);
	return rc;
}

/* COPY the selected effects into a staging table (or the table itself). */
int
rp_mirror_stage_effects(RpMirror *pg, RpMirrorTable *t, const char *stage, RpMirrorStageWhich which)
{
	bool		keys_only = which == RP_MIRROR_STAGE_DELETES;
	bool		binary = t->binary && !t->text_datums;
	int			nfields;
	RpBuf		cols,
				out;
	PGresult   *res;
	int			rc = 0;

	if (rp_mirror_stage_clear(pg, t, stage) < 0)
		return -1;
	rp_buf_init(&cols, 256);
	nfields = rp_mirror_sql_cols(pg, &cols, t->rel, keys_only ? t->keycols : NULL, t->nkey, NULL);
	rp_buf_put_char(&cols, '\0');
	rc = rp_mirror_copy_start(pg->conn, stage, cols.data, binary, &res);
	rp_buf_free(&cols);
	if (rc < 0)
	{
		rc = rp_mirror_fail_result(pg, res, "COPY", t);
		PQclear(res);
		return rc;
	}

	rp_buf_init(&out, RP_COPY_CHUNK + 4096);
	if (binary)
		rp_pgbin_header(&out);
	for (int e = 0; e < t->neffects && rc == 0; e++)
	{
		const RpEffect *ef = &t->effects[e];
		bool		firstcol = true;

		if (!rp_mirror_stage_wants(ef, which))
			continue;
		if (binary)
			rc = rp_mirror_stage_row_binary(pg, &out, t, ef, keys_only, nfields);
		else if (keys_only)
		{
			/* key columns, in column order, from the key bytes */
			for (uint16_t i = 0; i < t->rel->natts; i++)
				for (int k = 0; k < t->nkey; k++)
					if (t->keycols[k] == i)
					{
						RpDatum		d;

						rp_mirror_row_get(&t->arena, ef->key_off, k, &d);
						if (!firstcol)
							rp_buf_put_char(&out, '\t');
						firstcol = false;
						if (rp_mirror_stage_field(pg, &out, t, t->rel->cols[i].encoding, &d) < 0)
							rc = -1;
					}
		}
		else
		{
			for (uint16_t i = 0; i < t->rel->natts; i++)
			{
				RpDatum		d;

				if (t->rel->cols[i].flags & RP_COL_GENERATED)
					continue;
				rp_mirror_row_get(&t->arena, ef->row_off, i, &d);
				if (!firstcol)
					rp_buf_put_char(&out, '\t');
				firstcol = false;
				if (rp_mirror_stage_field(pg, &out, t, t->rel->cols[i].encoding, &d) < 0)
					rc = -1;
			}
		}
		if (!binary)
			rp_buf_put_char(&out, '\n');
		if (out.len >= RP_COPY_CHUNK && rc == 0)
			rc = rp_mirror_stage_send(pg, &out, t);
	}
	if (binary)
		rp_pgbin_trailer(&out);
	if (rp_mirror_stage_end(pg, &out, t) < 0 && rc == 0)
		rc = -1;
	rp_buf_free(&out);
	return rc;
}
