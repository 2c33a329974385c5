/*
 * rp_mirror_sql.c
 *    SQL builders of the mirror: quoted identifiers, column lists, key
 *    matches, ON CONFLICT clauses, and statements with text parameters.
 *    Every identifier goes through rp_sql_ident (base/rp_sql.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "values/rp_pgtext.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

int
rp_mirror_sql_cols(RpMirror *pg, RpBuf *sql, const RpRelation *rel, const int *idx, int n, const char *qual)
{
	int			written = 0;
	int			count = idx ? n : rel->natts;

	for (int j = 0; j < count; j++)
	{
		int			i = idx ? idx[j] : j;
		char	   *q;

		if (!idx && (rel->cols[i].flags & RP_COL_GENERATED))
			continue;
		q = rp_sql_ident_dup(rel->cols[i].name);
		if (written++)
			rp_buf_put_text(sql, ", ");
		if (qual)
			rp_buf_put_text(sql, qual);
		rp_buf_put_text(sql, q);
		rp_free(q);
	}
	return written;
}

void
rp_mirror_sql_key_match(RpMirror *pg, RpBuf *sql, const RpRelation *rel, const int *keycols, int nkey,
						const char *a, const char *b)
{
	for (int k = 0; k < nkey; k++)
	{
		char	   *q = rp_sql_ident_dup(rel->cols[keycols[k]].name);

		if (k)
			rp_buf_put_text(sql, " AND ");
		rp_buf_put_text(sql, a);
		rp_buf_put_char(sql, '.');
		rp_buf_put_text(sql, q);
		rp_buf_put_text(sql, " = ");
		rp_buf_put_text(sql, b);
		rp_buf_put_char(sql, '.');
		rp_buf_put_text(sql, q);
		rp_free(q);
	}
}

/* Is column i one that DO UPDATE sets (not a key, not generated)? */
static bool
rp_mirror_sql_updated(const RpRelation *rel, const int *keycols, int nkey, int i)
{
	for (int k = 0; k < nkey; k++)
		if (keycols[k] == i)
			return false;
	return (rel->cols[i].flags & RP_COL_GENERATED) == 0;
}

void
rp_mirror_sql_same_row(RpBuf *sql, const RpRelation *rel, const int *keycols, int nkey, const char *a,
					   const char *b, bool same)
{
	for (int side = 0; side < 2; side++)
	{
		bool		first = true;

		rp_buf_put_text(sql, side == 0 ? "ROW(" : same ? ") IS NOT DISTINCT FROM ROW(" : ") IS DISTINCT FROM ROW(");
		for (int i = 0; i < rel->natts; i++)
		{
			char	   *q;

			if (!rp_mirror_sql_updated(rel, keycols, nkey, i))
				continue;
			q = rp_sql_ident_dup(rel->cols[i].name);
			if (!first)
				rp_buf_put_text(sql, ", ");
			rp_buf_put_text(sql, side == 0 ? a : b);
			rp_buf_put_char(sql, '.');
			rp_buf_put_text(sql, q);
			rp_buf_put_text(sql, "::pg_catalog.text");
			rp_free(q);
			first = false;
		}
	}
	rp_buf_put_char(sql, ')');
}

void
rp_mirror_sql_on_conflict(RpMirror *pg, RpBuf *sql, const RpRelation *rel, const int *keycols, int nkey,
						  const char *alias)
{
	bool		any = false;

	rp_buf_put_text(sql, " ON CONFLICT (");
	rp_mirror_sql_cols(pg, sql, rel, keycols, nkey, NULL);
	rp_buf_put_text(sql, ") DO ");
	for (int i = 0; i < rel->natts; i++)
	{
		char	   *q;

		if (!rp_mirror_sql_updated(rel, keycols, nkey, i))
			continue;
		q = rp_sql_ident_dup(rel->cols[i].name);
		rp_buf_put_text(sql, any ? ", " : "UPDATE SET ");
		rp_buf_put_text(sql, q);
		rp_buf_put_text(sql, " = EXCLUDED.");
		rp_buf_put_text(sql, q);
		rp_free(q);
		any = true;
	}
	if (!any)
		rp_buf_put_text(sql, "NOTHING");
	else if (alias)
	{
		rp_buf_put_text(sql, " WHERE ");
		rp_mirror_sql_same_row(sql, rel, keycols, nkey, alias, "EXCLUDED", false);
	}
}

/* ---- statements with parameters ------------------------------------------------ */

void
rp_mirror_params_init(RpMirrorParams *p)
{
	memset(p, 0, sizeof(*p));
	rp_buf_init(&p->strings, 256);
}

static int
rp_mirror_params_slot(RpMirrorParams *p)
{
	if (p->n == p->cap)
	{
		p->cap = p->cap ? p->cap * 2 : 16;
		p->offs = rp_realloc(p->offs, sizeof(size_t) * (size_t) p->cap);
		p->isnull = rp_realloc(p->isnull, sizeof(bool) * (size_t) p->cap);
	}
	p->offs[p->n] = p->strings.len;
	p->isnull[p->n] = false;
	return ++p->n;
}

int
rp_mirror_params_datum(RpMirrorParams *p, uint8_t enc, const RpDatum *d)
{
	int			no = rp_mirror_params_slot(p);

	if (d->kind == RP_MIRROR_DATUM_TEXT)
	{
		rp_buf_put_bytes(&p->strings, d->data, d->len);
		rp_buf_put_char(&p->strings, '\0');
	}
	else if (d->kind != RP_DATUM_VALUE)
		p->isnull[no - 1] = true;
	else
	{
		rp_pgtext_value(&p->strings, enc, d->data, d->len);
		rp_buf_put_char(&p->strings, '\0');
	}
	return no;
}

int
rp_mirror_params_text(RpMirrorParams *p, const char *s)
{
	int			no = rp_mirror_params_slot(p);

	rp_buf_put_text(&p->strings, s);
	rp_buf_put_char(&p->strings, '\0');
	return no;
}

int
rp_mirror_params_exec(RpMirror *pg, RpMirrorTable *t, const char *sql, RpMirrorParams *p, const char *what)
{
	const char **vals = rp_malloc0(sizeof(char *) * (size_t) (p->n ? p->n : 1));
	int			rc;

	for (int i = 0; i < p->n; i++)
		vals[i] = p->isnull[i] ? NULL : p->strings.data + p->offs[i];
	rc = rp_mirror_exec_params(pg, sql, p->n, vals, what, t);
	rp_free(vals);
	return rc;
}

/* Like rp_mirror_params_exec; returns the number of rows the command affected. */
int
rp_mirror_params_exec_count(RpMirror *pg, RpMirrorTable *t, const char *sql, RpMirrorParams *p, const char *what)
{
	const char **vals = rp_malloc0(sizeof(char *) * (size_t) (p->n ? p->n : 1));
	PGresult   *res;
	int			rc;

	for (int i = 0; i < p->n; i++)
		vals[i] = p->isnull[i] ? NULL : p->strings.data + p->offs[i];
	res = PQexecParams(pg->conn, sql, p->n, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = rp_mirror_fail_result(pg, res, what, t);
	else
		rc = atoi(PQcmdTuples(res));
	PQclear(res);
	rp_free(vals);
	return rc;
}

void
rp_mirror_params_free(RpMirrorParams *p)
{
	rp_buf_free(&p->strings);
	if (p->offs)
		rp_free(p->offs);
	if (p->isnull)
		rp_free(p->isnull);
}

/*
 * The exact image of expr, a value of column col of t: its type's send
 * form, or its text output for a type without one (rp_mirror_read_match).
 */
static void
rp_mirror_sql_image(RpBuf *sql, const RpMirrorTable *t, int col, const char *expr)
{
	const char *fn = t->match_send ? t->match_send[col] : NULL;

	rp_buf_put_text(sql, fn ? fn : "");
	rp_buf_put_char(sql, '(');
	rp_buf_put_text(sql, expr);
	rp_buf_put_text(sql, fn ? ")" : ")::text");
}

void
rp_mirror_sql_changed(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, const bool *cols, const char *a,
					  const char *b, const int *params)
{
	RpBuf		ea,
				eb;
	bool		any = false;
	char		tmp[32];

	rp_buf_init(&ea, 128);
	rp_buf_init(&eb, 128);
	for (int i = 0; i < t->rel->natts; i++)
	{
		char	   *qc;

		if (!cols[i])
			continue;
		qc = rp_sql_ident_dup(t->rel->cols[i].name);
		rp_buf_reset(&ea);
		rp_buf_put_text(&ea, a);
		rp_buf_put_char(&ea, '.');
		rp_buf_put_text(&ea, qc);
		rp_buf_put_char(&ea, '\0');
		rp_buf_reset(&eb);
		if (params)
		{
			snprintf(tmp, sizeof(tmp), "$%d::", params[i]);
			rp_buf_put_text(&eb, tmp);
			rp_buf_put_text(&eb, t->match_type && t->match_type[i] ? t->match_type[i]
							: t->rel->cols[i].type_name);
		}
		else
		{
			rp_buf_put_text(&eb, b);
			rp_buf_put_char(&eb, '.');
			rp_buf_put_text(&eb, qc);
		}
		rp_buf_put_char(&eb, '\0');
		rp_buf_put_text(sql, any ? " OR " : " AND (");
		rp_mirror_sql_image(sql, t, i, ea.data);
		rp_buf_put_text(sql, " IS DISTINCT FROM ");
		rp_mirror_sql_image(sql, t, i, eb.data);
		rp_free(qc);
		any = true;
	}
	if (any)
		rp_buf_put_char(sql, ')');
	rp_buf_free(&ea);
	rp_buf_free(&eb);
}

/*
 * "send(o.c) IS NOT DISTINCT FROM send($n::type)": the old row's value
 * exactly, not one the type's "=" calls equal (rp_mirror_read_match); a type
 * without a send function compares its text output, and also works for
 * types without "=" (json, point ...).
 */
void
rp_mirror_match_expr(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, int col, int param, const char *alias)
{
	const RpColumn *c = &t->rel->cols[col];
	const char *fn = t->match_send ? t->match_send[col] : NULL;
	const char *type = t->match_type && t->match_type[col] ? t->match_type[col] : c->type_name;
	const char *close = fn ? ")" : ")::text";
	char	   *qc = rp_sql_ident_dup(c->name);
	char		tmp[32];

	rp_buf_put_text(sql, fn ? fn : "");
	rp_buf_put_char(sql, '(');
	if (alias)
	{
		rp_buf_put_text(sql, alias);
		rp_buf_put_char(sql, '.');
	}
	rp_buf_put_text(sql, qc);
	rp_buf_put_text(sql, close);
	rp_buf_put_text(sql, " IS NOT DISTINCT FROM ");
	rp_buf_put_text(sql, fn ? fn : "");
	snprintf(tmp, sizeof(tmp), "($%d::", param);
	rp_buf_put_text(sql, tmp);
	rp_buf_put_text(sql, type);
	rp_buf_put_text(sql, close);
	rp_free(qc);
}

/* Execute sql with datums as its text parameters ($1..$n). */
int
rp_mirror_exec_datums(RpMirror *pg, RpMirrorTable *t, const char *sql, int n, const RpDatum *datums,
					  const uint8_t *encs, const char *what)
{
	RpMirrorParams p;
	int			rc;

	rp_mirror_params_init(&p);
	for (int i = 0; i < n; i++)
		rp_mirror_params_datum(&p, encs[i], &datums[i]);
	rc = rp_mirror_params_exec(pg, t, sql, &p, what);
	rp_mirror_params_free(&p);
	return rc;
}

/* Columns of tup as datums/encodings for the applied columns (skip_unchanged). */
int
rp_mirror_collect(const RpMirrorTable *t, const RpTuple *tup, bool skip_unchanged, RpDatum *datums,
				  uint8_t *encs, int *which)
{
	int			n = 0;

	for (uint16_t i = 0; i < tup->natts; i++)
	{
		const RpColumn *c = &t->rel->cols[i];

		if (c->flags & RP_COL_GENERATED)
			continue;
		if (skip_unchanged && tup->datums[i].kind == RP_DATUM_UNCHANGED)
			continue;
		datums[n] = tup->datums[i];
		encs[n] = c->encoding;
		which[n] = i;
		n++;
	}
	return n;
}

void
rp_mirror_sql_insert_values(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, const int *which, int n,
							const char *extra_cols, const char *extra_vals)
{
	char		tmp[32];

	rp_buf_put_text(sql, "INSERT INTO ");
	rp_buf_put_text(sql, t->qname);
	rp_buf_put_text(sql, " (");
	for (int i = 0; i < n; i++)
	{
		char	   *qc = rp_sql_ident_dup(t->rel->cols[which[i]].name);

		if (i)
			rp_buf_put_text(sql, ", ");
		rp_buf_put_text(sql, qc);
		rp_free(qc);
	}
	if (extra_cols)
		rp_buf_put_text(sql, extra_cols);

	/*
	 * identity columns GENERATED ALWAYS keep the source's values, as COPY
	 * keeps them
	 */
	rp_buf_put_text(sql, ") OVERRIDING SYSTEM VALUE VALUES (");
	for (int i = 0; i < n; i++)
	{
		snprintf(tmp, sizeof(tmp), "%s$%d", i ? ", " : "", i + 1);
		rp_buf_put_text(sql, tmp);
	}
	if (extra_vals)
		rp_buf_put_text(sql, extra_vals);
	rp_buf_put_char(sql, ')');
}

bool	   *
rp_mirror_value_cols(const RpMirrorTable *t, int *n)
{
	bool	   *cols = rp_malloc0(sizeof(bool) * (size_t) (t->rel->natts ? t->rel->natts : 1));

	*n = 0;
	for (int i = 0; i < t->rel->natts; i++)
	{
		bool		key = false;

		for (int k = 0; k < t->nkey; k++)
			key |= t->keycols[k] == i;
		cols[i] = !key && rp_mirror_applied(&t->rel->cols[i]);
		*n += cols[i];
	}
	return cols;
}

void
rp_mirror_sql_set(RpBuf *sql, const RpMirrorTable *t, const bool *cols, const char *from)
{
	bool		first = true;

	for (int i = 0; i < t->rel->natts; i++)
	{
		char	   *qc;

		if (!cols[i])
			continue;
		qc = rp_sql_ident_dup(t->rel->cols[i].name);
		if (!first)
			rp_buf_put_text(sql, ", ");
		first = false;
		rp_buf_put_text(sql, qc);
		rp_buf_put_text(sql, " = ");
		rp_buf_put_text(sql, from);
		rp_buf_put_char(sql, '.');
		rp_buf_put_text(sql, qc);
		rp_free(qc);
	}
}
