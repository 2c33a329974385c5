/*
 * rp_mirror_table.c
 *    Destination tables of the mirror sink: mapping, checks and creation
 *    (schema changes: rp_mirror_schema.c; staging: rp_mirror_stage.c).
 *
 * A source table maps to the destination table of the same schema (after
 * --schema-prefix) and name.  It must have every replicated column and a
 * primary key or unique index on the source's key; a table kept as history
 * gets valid_from/valid_to columns instead.  Every identifier goes through
 * rp_sql_ident (base/rp_sql.h); catalog lookups take names as parameters.
 *
 * The mapping must be one to one and stay out of the mirror's own way: a
 * destination name longer than the server's identifier limit is refused
 * rather than left to the server's truncation (which would make two
 * source tables one, also across runs, where no check in one process
 * could see both), and no source table may map into the bookkeeping
 * schema (its checkpoint would be written from the source).  Both halt.
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>

#include "stream/rp_deliver.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "values/rp_pgbin.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

static bool
rp_mirror_is_history(RpMirror *pg, const RpRelation *rel)
{
	char		name[512];

	snprintf(name, sizeof(name), "%s.%s", rel->schema, rel->name);
	for (int i = 0; i < pg->opts.nhistory; i++)
		if (strcmp(pg->opts.history[i], name) == 0 || strcmp(pg->opts.history[i], rel->name) == 0)
			return true;
	return false;
}

/* The key: replica identity columns, else the primary key, else none. */
static void
rp_mirror_table_key(RpMirrorTable *t)
{
	const RpRelation *rel = t->rel;

	if (t->keycols)
		rp_free(t->keycols);
	t->keycols = rp_malloc0(sizeof(int) * (rel->natts ? rel->natts : 1));
	t->nkey = 0;
	/* under FULL every column is "identity": the primary key is the key */
	for (uint16_t i = 0; i < rel->natts && rel->identity != RP_IDENTITY_FULL; i++)
		if (rel->cols[i].flags & RP_COL_IDENTITY)
			t->keycols[t->nkey++] = i;
	if (t->nkey == 0)
		for (uint16_t i = 0; i < rel->natts; i++)
			if (rel->cols[i].flags & RP_COL_PRIMARY_KEY)
				t->keycols[t->nkey++] = i;
	t->full_match = t->nkey == 0 && rel->identity == RP_IDENTITY_FULL;
	t->no_identity = t->nkey == 0 && !t->full_match;
}

static void
rp_mirror_free_names(char ***names, int n)
{
	if (*names == NULL)
		return;
	for (int i = 0; i < n; i++)
		if ((*names)[i])
			rp_free((*names)[i]);
	rp_free(*names);
	*names = NULL;
}

/* What resolve read from the destination's catalog: stale once the table changes. */
static void
rp_mirror_table_reset_catalog(RpMirrorTable *t, int natts)
{
	rp_mirror_free_names(&t->match_send, natts);
	rp_mirror_free_names(&t->match_type, natts);
	rp_mirror_free_names(&t->constraints, t->nconstraints);
	t->nconstraints = 0;
}

void
rp_mirror_table_forget(RpMirror *pg, RpMirrorTable *t)
{
	if (!t->txn_dirty)
		return;					/* nothing of it was made in the rolled-back
								 * transaction */
	rp_mirror_session_drop_objects(pg, t, pg->conn != NULL && PQstatus(pg->conn) == CONNECTION_OK);
	t->resolved = false;
	t->txn_dirty = false;
}

void
rp_mirror_table_describe(RpMirror *pg, RpMirrorTable *t, const RpRelation *rel)
{
	char		schema[256];

	if (t->rel)
	{
		rp_mirror_table_reset_catalog(t, t->rel->natts);
		rp_relation_free(t->rel);
	}
	t->rel = rp_relation_copy(rel);
	if (t->qname)
		rp_free(t->qname);
	if (t->qrel)
		rp_free(t->qrel);
	if (t->dest_schema)
		rp_free(t->dest_schema);
	if (t->dest_name)
		rp_free(t->dest_name);
	snprintf(schema, sizeof(schema), "%s%s", pg->opts.schema_prefix ? pg->opts.schema_prefix : "",
			 rel->schema);
	t->dest_schema = rp_strndup(schema, strlen(schema));
	t->dest_name = rp_strndup(rel->name, strlen(rel->name));
	{
		char	   *qs = rp_sql_ident_dup(t->dest_schema);
		char	   *qn = rp_sql_ident_dup(t->dest_name);
		size_t		n = strlen(qs) + strlen(qn) + 2;

		t->qname = rp_malloc(n);
		snprintf(t->qname, n, "%s.%s", qs, qn);
		t->qrel = rp_malloc(n + 5);
		snprintf(t->qrel, n + 5, "ONLY %s", t->qname);
		rp_free(qs);
		rp_free(qn);
	}
	t->history = rp_mirror_is_history(pg, rel);
	rp_mirror_table_key(t);
	rp_mirror_session_drop_objects(pg, t, pg->conn != NULL && PQstatus(pg->conn) == CONNECTION_OK);
	t->resolved = false;
}

static bool
rp_mirror_same_layout(const RpRelation *a, const RpRelation *b)
{
	if (a->natts != b->natts)
		return false;
	for (uint16_t i = 0; i < a->natts; i++)
		if (a->cols[i].attnum != b->cols[i].attnum || a->cols[i].type_oid != b->cols[i].type_oid ||
			strcmp(a->cols[i].name, b->cols[i].name) != 0 || a->cols[i].flags != b->cols[i].flags)
			return false;
	return strcmp(a->schema, b->schema) == 0 && strcmp(a->name, b->name) == 0 &&
		a->identity == b->identity;
}

/* The slot of relid in pg->tabidx: where it is, or the free one it would take. */
static int
rp_mirror_table_slot(const RpMirror *pg, uint32_t relid)
{
	int			mask = pg->ntabidx - 1;
	int			s = (int) ((relid * UINT32_C(2654435761)) & (uint32_t) mask);

	while (pg->tabidx[s] && pg->tables[pg->tabidx[s] - 1]->relid != relid)
		s = (s + 1) & mask;
	return s;
}

/*
 * The tables by relid: looked up for every change, so a hash, not a walk
 * over every table mapped so far (10,000 tables made that the consumer's
 * largest cost).
 */
static void
rp_mirror_table_index(RpMirror *pg)
{
	if (pg->ntabidx >= 2 * pg->ntables)
		return;
	if (pg->tabidx)
		rp_free(pg->tabidx);
	pg->ntabidx = pg->ntabidx ? pg->ntabidx * 2 : 64;
	while (pg->ntabidx < 2 * pg->ntables)
		pg->ntabidx *= 2;
	pg->tabidx = rp_malloc0(sizeof(int) * (size_t) pg->ntabidx);
	for (int i = 0; i < pg->ntables; i++)
		pg->tabidx[rp_mirror_table_slot(pg, pg->tables[i]->relid)] = i + 1;
}

RpMirrorTable *
rp_mirror_table_get(RpMirror *pg, const RpRelation *rel)
{
	RpMirrorTable *t = NULL;
	int			s = 0;

	if (pg->ntabidx > 0)
	{
		s = rp_mirror_table_slot(pg, rel->relid);
		if (pg->tabidx[s])
			t = pg->tables[pg->tabidx[s] - 1];
	}
	if (t == NULL)
	{
		if (pg->ntables == pg->captables)
		{
			pg->captables = pg->captables ? pg->captables * 2 : 16;
			pg->tables = rp_realloc(pg->tables, sizeof(RpMirrorTable *) * (size_t) pg->captables);
		}
		t = rp_malloc0(sizeof(RpMirrorTable));
		t->relid = rel->relid;
		rp_buf_init(&t->arena, RP_MIRROR_ARENA_MIN);
		pg->tables[pg->ntables++] = t;
		if (pg->ntabidx < 2 * pg->ntables)
			rp_mirror_table_index(pg);
		else
			pg->tabidx[s] = pg->ntables;
		rp_mirror_table_describe(pg, t, rel);
	}
	else if (!rp_mirror_same_layout(t->rel, rel))
		rp_mirror_table_describe(pg, t, rel);
	return t;
}

void
rp_mirror_table_free(RpMirror *pg, RpMirrorTable *t)
{
	rp_mirror_table_reset_catalog(t, t->rel->natts);
	rp_relation_free(t->rel);
	rp_free(t->qname);
	rp_free(t->qrel);
	rp_free(t->dest_schema);
	rp_free(t->dest_name);
	if (t->keycols)
		rp_free(t->keycols);
	rp_mirror_session_drop_objects(pg, t, false);
	if (t->effects)
		rp_free(t->effects);
	if (t->slots)
		rp_free(t->slots);
	rp_buf_free(&t->arena);
	rp_free(t);
}

static int
rp_mirror_create_table(RpMirror *pg, RpMirrorTable *t)
{
	RpBuf		sql;
	char	   *qs = rp_sql_ident_dup(t->dest_schema);
	int			rc;
	bool		first = true;

	rp_buf_init(&sql, 1024);
	rp_buf_put_text(&sql, "CREATE SCHEMA IF NOT EXISTS ");
	rp_buf_put_text(&sql, qs);
	rp_buf_put_text(&sql, "; CREATE TABLE ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_text(&sql, " (");
	for (uint16_t i = 0; i < t->rel->natts; i++)
	{
		const RpColumn *c = &t->rel->cols[i];
		char	   *qc;

		if (!rp_mirror_applied(c))
			continue;
		qc = rp_sql_ident_dup(c->name);
		if (!first)
			rp_buf_put_text(&sql, ", ");
		first = false;
		rp_buf_put_text(&sql, qc);
		rp_buf_put_char(&sql, ' ');
		/* the source's own SQL spelling of the type, typmod included */
		rp_buf_put_text(&sql, c->type_name);
		if (c->flags & RP_COL_NOT_NULL)
			rp_buf_put_text(&sql, " NOT NULL");
		rp_free(qc);
	}
	if (t->history)
		rp_buf_put_text(&sql, ", valid_from_lsn pg_catalog.pg_lsn NOT NULL,"
						" valid_to_lsn pg_catalog.pg_lsn,"
						" valid_from_time timestamptz NOT NULL, valid_to_time timestamptz");
	if (t->nkey > 0)
	{
		rp_buf_put_text(&sql, ", PRIMARY KEY (");
		for (int k = 0; k < t->nkey; k++)
		{
			char	   *qc = rp_sql_ident_dup(t->rel->cols[t->keycols[k]].name);

			if (k)
				rp_buf_put_text(&sql, ", ");
			rp_buf_put_text(&sql, qc);
			rp_free(qc);
		}
		if (t->history)
			rp_buf_put_text(&sql, ", valid_from_lsn");
		rp_buf_put_char(&sql, ')');
	}
	rp_buf_put_text(&sql, ")");
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec(pg, sql.data, "CREATE TABLE", t);
	rp_buf_free(&sql);
	rp_free(qs);
	return rc;
}

/* One element of an array literal: '"name"' with '"' and '\' escaped. */
static void
rp_mirror_array_elem(RpBuf *out, const char *s)
{
	if (out->len > 1)
		rp_buf_put_char(out, ',');
	rp_buf_put_char(out, '"');
	for (; *s; s++)
	{
		if (*s == '"' || *s == '\\')
			rp_buf_put_char(out, '\\');
		rp_buf_put_char(out, *s);
	}
	rp_buf_put_char(out, '"');
}

/* One element of an int[] literal. */
static void
rp_mirror_array_int(RpBuf *out, int v)
{
	char		tmp[16];

	snprintf(tmp, sizeof(tmp), "%s%d", out->len > 1 ? "," : "", v);
	rp_buf_put_text(out, tmp);
}

/* Every applied column has a binary form (the destination's types aside). */
static bool
rp_mirror_binary_candidate(const RpMirrorTable *t)
{
	for (uint16_t i = 0; i < t->rel->natts; i++)
		if (rp_mirror_applied(&t->rel->cols[i]) && !rp_pgbin_column_ok(&t->rel->cols[i]))
			return false;
	return true;
}

/*
 * The destination name is the source's, one to one: inside the server's
 * identifier limit and outside the bookkeeping schema.
 */
static int
rp_mirror_table_check_name(RpMirror *pg, const RpMirrorTable *t)
{
	const RpRelation *rel = t->rel;
	size_t		max = pg->max_ident > 0 ? (size_t) pg->max_ident : RP_MIRROR_MAX_IDENT;

	if (strlen(t->dest_schema) > max || strlen(t->dest_name) > max)
		return rp_fail(RP_HALT_SINK, "source table \"%s\".\"%s\" maps to destination %s, a name longer than %zu bytes: the server would truncate it, and two source tables could become one (shorten --schema-prefix)",
					   rel->schema, rel->name, t->qname, max);
	if (strcmp(t->dest_schema, pg->opts.bookkeeping_schema) == 0)
		return rp_fail(RP_HALT_SINK, "source table \"%s\".\"%s\" maps to %s, in the mirror's bookkeeping schema \"%s\": refusing to write the mirror's own tables from the source (exclude the table, or choose another --schema-prefix or --bookkeeping-schema)",
					   rel->schema, rel->name, t->qname, pg->opts.bookkeeping_schema);
	return 0;
}

/*
 * Everything resolve needs of the destination's catalog, for many tables at
 * once: $1/$2 their schemas and names (ordinal = position), $3/$4 (ordinal,
 * name) pairs of their key columns.  A row per table found ('r': oid,
 * relkind, whether a unique index is on exactly the key), per column ('a':
 * name, type, its format_type(), its send function: the caller finds a
 * replicated column that is missing), and per constraint or index name
 * ('k').  One query whatever the number of tables: resolving a batch over a
 * thousand tables one by one took six round trips a table.
 */
static const char rp_mirror_resolve_sql[] =
"WITH keys AS (SELECT k.ord, pg_catalog.array_agg(k.name ORDER BY k.name) AS names"
" FROM ROWS FROM (pg_catalog.unnest($3::int[]), pg_catalog.unnest($4::text[])) AS k(ord, name) GROUP BY k.ord),"
" q AS ("
" SELECT q.ord::int AS ord, c.oid, c.relkind, keys.names AS keys"
" FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::text[])) WITH ORDINALITY AS q(nsp, rel, ord)"
" JOIN pg_catalog.pg_namespace n ON n.nspname = q.nsp"
" JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = q.rel AND c.relkind IN ('r', 'p')"
" LEFT JOIN keys ON keys.ord = q.ord)"
" SELECT q.ord, 'r', q.oid::text, q.relkind::text, NULL,"
"  EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = q.oid"
"    AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL"
"    AND (SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attname::text)"
"      FROM pg_catalog.unnest(i.indkey::int2[]) ik(attnum) JOIN pg_catalog.pg_attribute a"
"      ON a.attrelid = i.indrelid AND a.attnum = ik.attnum)"
"    = q.keys)::text"
" FROM q"
" UNION ALL"
" SELECT q.ord, 'a', a.attname::text, a.atttypid::text, pg_catalog.format_type(a.atttypid, a.atttypmod),"
"  CASE WHEN ty.typsend = 0 THEN NULL ELSE pg_catalog.quote_ident(pn.nspname)"
"   || '.' || pg_catalog.quote_ident(p.proname) END"
" FROM q JOIN pg_catalog.pg_attribute a ON a.attrelid = q.oid AND a.attnum > 0 AND NOT a.attisdropped"
" JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid"
" LEFT JOIN pg_catalog.pg_proc p ON p.oid = ty.typsend"
" LEFT JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace"
" UNION ALL"
" SELECT q.ord, 'k', co.conname::text, NULL, NULL, NULL"
" FROM q JOIN pg_catalog.pg_constraint co ON co.conrelid = q.oid"
" UNION ALL"
" SELECT q.ord, 'k', ic.relname::text, NULL, NULL, NULL"
" FROM q JOIN pg_catalog.pg_index i ON i.indrelid = q.oid JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid";

/* What the catalog query said of one table. */
typedef struct RpResolved
{
	bool		found;
	bool		partitioned;
	bool		key_ok;
	bool	   *present;		/* per column: the destination has it */
	bool	   *same_type;		/* per column: and its type is the source's */
}			RpResolved;

/* The catalog query's four array parameters for ts[0..n). */
static void
rp_mirror_resolve_params(RpMirrorTable **ts, int n, RpBuf *arr)
{
	for (int a = 0; a < 4; a++)
	{
		rp_buf_init(&arr[a], 256);
		rp_buf_put_char(&arr[a], '{');
	}
	for (int i = 0; i < n; i++)
	{
		const RpMirrorTable *t = ts[i];

		rp_mirror_array_elem(&arr[0], t->dest_schema);
		rp_mirror_array_elem(&arr[1], t->dest_name);
		for (int k = 0; k < t->nkey; k++)
		{
			rp_mirror_array_int(&arr[2], i + 1);
			rp_mirror_array_elem(&arr[3], t->rel->cols[t->keycols[k]].name);
		}
	}
	for (int a = 0; a < 4; a++)
	{
		rp_buf_put_char(&arr[a], '}');
		rp_buf_put_char(&arr[a], '\0');
	}
}

/* Run the catalog query for ts[0..n) and take what it says into r and the tables. */
static int
rp_mirror_resolve_query(RpMirror *pg, RpMirrorTable **ts, int n, RpResolved * r)
{
	RpBuf		arr[4];
	const char *vals[4];
	PGresult   *res;
	int			rc = 0;

	rp_mirror_resolve_params(ts, n, arr);
	for (int a = 0; a < 4; a++)
		vals[a] = arr[a].data;
	res = PQexecParams(pg->conn, rp_mirror_resolve_sql, 4, NULL, vals, NULL, NULL, 0);
	for (int a = 0; a < 4; a++)
		rp_buf_free(&arr[a]);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rc = rp_mirror_fail_result(pg, res, "looking up the tables", n == 1 ? ts[0] : NULL);
		PQclear(res);
		return rc;
	}
	for (int i = 0; i < n; i++)
	{
		RpMirrorTable *t = ts[i];
		int			natts = t->rel->natts ? t->rel->natts : 1;

		rp_mirror_table_reset_catalog(t, t->rel->natts);
		t->match_send = rp_malloc0(sizeof(char *) * (size_t) natts);
		t->match_type = rp_malloc0(sizeof(char *) * (size_t) natts);
		r[i].same_type = rp_malloc0(sizeof(bool) * (size_t) natts);
		r[i].present = rp_malloc0(sizeof(bool) * (size_t) natts);
	}
	for (int row = 0; row < PQntuples(res); row++)
	{
		int			i = atoi(PQgetvalue(res, row, 0)) - 1;
		char		kind = PQgetvalue(res, row, 1)[0];
		const char *v2 = PQgetvalue(res, row, 2);
		RpMirrorTable *t;

		if (i < 0 || i >= n)
			continue;
		t = ts[i];
		if (kind == 'r')
		{
			r[i].found = true;
			r[i].partitioned = PQgetvalue(res, row, 3)[0] == 'p';
			r[i].key_ok = PQgetvalue(res, row, 5)[0] == 't';
		}
		else if (kind == 'a')
		{
			for (uint16_t c = 0; c < t->rel->natts; c++)
				if (strcmp(v2, t->rel->cols[c].name) == 0)
				{
					const char *ty = PQgetvalue(res, row, 4);

					r[i].present[c] = true;
					r[i].same_type[c] = strtoul(PQgetvalue(res, row, 3), NULL, 10) == t->rel->cols[c].type_oid;
					t->match_type[c] = rp_strndup(ty, strlen(ty));
					if (!PQgetisnull(res, row, 5))
						t->match_send[c] = rp_strndup(PQgetvalue(res, row, 5), strlen(PQgetvalue(res, row, 5)));
					break;
				}
		}
		else if (kind == 'k')
		{
			t->constraints = rp_realloc(t->constraints, sizeof(char *) * (size_t) (t->nconstraints + 1));
			t->constraints[t->nconstraints++] = rp_strndup(v2, strlen(v2));
		}
	}
	PQclear(res);
	return 0;
}

static void
rp_mirror_resolved_free(RpResolved * r, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (r[i].present)
			rp_free(r[i].present);
		if (r[i].same_type)
			rp_free(r[i].same_type);
	}
	rp_free(r);
}

/*
 * What the query said of t, checked: a table that lacks a replicated column
 * or a unique index on the key halts.  COPY and the pipeline's parameters
 * go in binary when every applied column has a binary form and the
 * destination column has exactly the source's (built-in) type: binary
 * input does not convert, so a column the user declared differently (int8
 * for int4, text for varchar) keeps the text path, which does.
 */
static int
rp_mirror_resolve_take(RpMirror *pg, RpMirrorTable *t, const RpResolved * r)
{
	for (uint16_t c = 0; c < t->rel->natts; c++)
		if (rp_mirror_applied(&t->rel->cols[c]) && !r->present[c])
			return rp_fail(RP_HALT_SINK, "destination table %s has no column \"%s\"", t->qname,
						   t->rel->cols[c].name);
	if (t->nkey > 0 && !t->history && !r->key_ok)
	{
		RpBuf		names;
		int			rc;

		rp_buf_init(&names, 128);
		rp_buf_put_char(&names, '{');
		for (uint16_t c = 0; c < t->rel->natts; c++)
			for (int k = 0; k < t->nkey; k++)
				if (t->keycols[k] == c)
					rp_mirror_array_elem(&names, t->rel->cols[c].name);
		rp_buf_put_char(&names, '}');
		rp_buf_put_char(&names, '\0');
		rc = rp_fail(RP_HALT_SINK, "destination table %s has no primary key or unique index on the source's key %s",
					 t->qname, names.data);
		rp_buf_free(&names);
		return rc;
	}
	/* a partitioned table routes its rows: ONLY would reach none of them */
	if (r->partitioned)
		snprintf(t->qrel, strlen(t->qname) + 1, "%s", t->qname);
	t->binary = rp_mirror_binary_candidate(t);
	for (uint16_t c = 0; c < t->rel->natts && t->binary; c++)
		t->binary = !rp_mirror_applied(&t->rel->cols[c]) || r->same_type[c];
	t->resolved = true;
	t->txn_dirty = true;
	return 0;
}

int
rp_mirror_tables_resolve(RpMirror *pg, RpMirrorTable **ts, int n)
{
	RpResolved *r;
	RpMirrorTable **created;
	int			ncreated = 0,
				rc = 0;

	for (int i = 0; i < n; i++)
		if (!ts[i]->resolved && rp_mirror_table_check_name(pg, ts[i]) < 0)
			return -1;
	r = rp_malloc0(sizeof(RpResolved) * (size_t) (n ? n : 1));
	if (rp_mirror_resolve_query(pg, ts, n, r) < 0)
	{
		rp_mirror_resolved_free(r, n);
		return -1;
	}
	created = rp_malloc(sizeof(RpMirrorTable *) * (size_t) (n ? n : 1));
	for (int i = 0; i < n && rc == 0; i++)
	{
		if (r[i].found)
			rc = rp_mirror_resolve_take(pg, ts[i], &r[i]);
		else if (!pg->opts.create_tables)
			rc = rp_fail(RP_HALT_SINK, "destination table %s does not exist (create it, or run with --create-tables)",
						 ts[i]->qname);
		else if ((rc = rp_mirror_create_table(pg, ts[i])) == 0)
		{
			ts[i]->txn_dirty = true;	/* a rollback takes the table away */
			created[ncreated++] = ts[i];
		}
	}
	rp_mirror_resolved_free(r, n);
	/* the tables made now, read back as any other (their facts, their names) */
	if (rc == 0 && ncreated > 0)
		rc = rp_mirror_tables_resolve(pg, created, ncreated);
	rp_free(created);
	return rc;
}

int
rp_mirror_table_resolve(RpMirror *pg, RpMirrorTable *t)
{
	return rp_mirror_tables_resolve(pg, &t, 1);
}
