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
rp_mirror_table_reset_stage(RpMirrorTable *t)
{
	if (t->stage_ups)
		rp_free(t->stage_ups);
	if (t->stage_del)
		rp_free(t->stage_del);
	t->stage_ups = t->stage_del = NULL;
}

void
rp_mirror_table_forget(RpMirrorTable *t)
{
	if (!t->txn_dirty)
		return;					/* nothing of it was made in the rolled-back
								 * transaction */
	rp_mirror_table_reset_stage(t);
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
	rp_mirror_table_reset_stage(t);
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

RpMirrorTable *
rp_mirror_table_get(RpMirror *pg, const RpRelation *rel)
{
	RpMirrorTable *t = NULL;

	for (int i = 0; i < pg->ntables; i++)
		if (pg->tables[i]->relid == rel->relid)
		{
			t = pg->tables[i];
			break;
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
		rp_buf_init(&t->arena, 64 * 1024);
		pg->tables[pg->ntables++] = t;
		rp_mirror_table_describe(pg, t, rel);
	}
	else if (!rp_mirror_same_layout(t->rel, rel))
		rp_mirror_table_describe(pg, t, rel);
	return t;
}

void
rp_mirror_table_free(RpMirrorTable *t)
{
	rp_mirror_table_reset_catalog(t, t->rel->natts);
	rp_relation_free(t->rel);
	rp_free(t->qname);
	rp_free(t->qrel);
	rp_free(t->dest_schema);
	rp_free(t->dest_name);
	if (t->keycols)
		rp_free(t->keycols);
	rp_mirror_table_reset_stage(t);
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

/* '{"a","b"}': names as a text[] parameter. */
static void
rp_mirror_name_array(RpBuf *out, const RpMirrorTable *t, bool key_only)
{
	bool		first = true;

	rp_buf_put_char(out, '{');
	for (uint16_t i = 0; i < t->rel->natts; i++)
	{
		const char *n = t->rel->cols[i].name;
		bool		want = !key_only ? rp_mirror_applied(&t->rel->cols[i]) : false;

		for (int k = 0; key_only && k < t->nkey; k++)
			want |= t->keycols[k] == i;
		if (!want)
			continue;
		if (!first)
			rp_buf_put_char(out, ',');
		first = false;
		rp_buf_put_char(out, '"');
		for (; *n; n++)
		{
			if (*n == '"' || *n == '\\')
				rp_buf_put_char(out, '\\');
			rp_buf_put_char(out, *n);
		}
		rp_buf_put_char(out, '"');
	}
	rp_buf_put_char(out, '}');
	rp_buf_put_char(out, '\0');
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
 * COPY goes in binary when every applied column has a binary form and the
 * destination column has exactly the source's (built-in) type: binary
 * input does not convert, so a column the user declared differently (int8
 * for int4, text for varchar) keeps the text path, which does.
 */
static int
rp_mirror_binary_check(RpMirror *pg, RpMirrorTable *t, const char *oid)
{
	const char *vals[1] = {oid};
	PGresult   *res;

	t->binary = false;
	if (!rp_mirror_binary_candidate(t))
		return 0;
	res = PQexecParams(pg->conn,
					   "SELECT a.attname, a.atttypid FROM pg_catalog.pg_attribute a"
					   " WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		int			rc = rp_mirror_fail_result(pg, res, "reading the column types", t);

		PQclear(res);
		return rc;
	}
	t->binary = true;
	for (uint16_t i = 0; i < t->rel->natts && t->binary; i++)
	{
		const RpColumn *c = &t->rel->cols[i];
		bool		same = false;

		if (!rp_mirror_applied(c))
			continue;
		for (int r = 0; r < PQntuples(res) && !same; r++)
			same = strcmp(PQgetvalue(res, r, 0), c->name) == 0 &&
				strtoul(PQgetvalue(res, r, 1), NULL, 10) == c->type_oid;
		t->binary = same;
	}
	PQclear(res);
	return 0;
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

/* Rows of a one-column query as names (constraint and index names). */
static int
rp_mirror_read_constraints(RpMirror *pg, RpMirrorTable *t)
{
	const char *vals[1] = {t->qname};
	PGresult   *res;
	int			rc = 0;

	rp_mirror_free_names(&t->constraints, t->nconstraints);
	t->nconstraints = 0;
	res = PQexecParams(pg->conn,
					   "SELECT conname::text FROM pg_catalog.pg_constraint WHERE conrelid = $1::regclass"
					   " UNION SELECT c.relname::text FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c"
					   " ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, "reading the constraint names", t);
	else if (PQntuples(res) > 0)
	{
		t->constraints = rp_malloc0(sizeof(char *) * (size_t) PQntuples(res));
		for (int r = 0; r < PQntuples(res); r++)
			t->constraints[t->nconstraints++] = rp_strndup(PQgetvalue(res, r, 0), strlen(PQgetvalue(res, r, 0)));
	}
	PQclear(res);
	return rc;
}

/*
 * REPLICA IDENTITY FULL without a key matches the old row on every column,
 * and must match the very value, not an equal one: numeric 1.0 = 1.00,
 * float8 0 = -0, interval '1 day' = '24 hours', yet they are different
 * rows.  A type's binary send form is its value exactly (receive(send(x))
 * is x), so the match compares those: per column the destination's send
 * function and its type (with typmod) to cast the parameter to.  A type
 * with no send function falls back to its text output.  Keyed tables read
 * them too: an upsert compares the same images to leave a row that would
 * not change alone (rp_mirror_sql_changed).
 */
static int
rp_mirror_read_match(RpMirror *pg, RpMirrorTable *t)
{
	const char *vals[1] = {t->qname};
	PGresult   *res;
	int			natts = t->rel->natts;
	int			rc = 0;

	rp_mirror_free_names(&t->match_send, natts);
	rp_mirror_free_names(&t->match_type, natts);
	res = PQexecParams(pg->conn,
					   "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),"
					   " CASE WHEN ty.typsend = 0 THEN NULL ELSE pg_catalog.quote_ident(n.nspname)"
					   "  || '.' || pg_catalog.quote_ident(p.proname) END"
					   " FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid"
					   " LEFT JOIN pg_catalog.pg_proc p ON p.oid = ty.typsend"
					   " LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
					   " WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rc = rp_mirror_fail_result(pg, res, "reading the column types", t);
		PQclear(res);
		return rc;
	}
	t->match_send = rp_malloc0(sizeof(char *) * (size_t) (natts ? natts : 1));
	t->match_type = rp_malloc0(sizeof(char *) * (size_t) (natts ? natts : 1));
	for (int i = 0; i < natts; i++)
		for (int r = 0; r < PQntuples(res); r++)
			if (strcmp(PQgetvalue(res, r, 0), t->rel->cols[i].name) == 0)
			{
				t->match_type[i] = rp_strndup(PQgetvalue(res, r, 1), strlen(PQgetvalue(res, r, 1)));
				if (!PQgetisnull(res, r, 2))
					t->match_send[i] = rp_strndup(PQgetvalue(res, r, 2), strlen(PQgetvalue(res, r, 2)));
				break;
			}
	PQclear(res);
	return 0;
}

/* After the table is there: the catalog facts errors and matching need. */
static int
rp_mirror_table_read_catalog(RpMirror *pg, RpMirrorTable *t)
{
	if (rp_mirror_read_constraints(pg, t) < 0)
		return -1;
	return rp_mirror_read_match(pg, t);
}

int
rp_mirror_table_resolve(RpMirror *pg, RpMirrorTable *t)
{
	const char *vals[3];
	PGresult   *res;
	char		oid[16];
	RpBuf		names;
	int			rc = 0;

	if (rp_mirror_table_check_name(pg, t) < 0)
		return -1;

	vals[0] = t->dest_schema;
	vals[1] = t->dest_name;
	res = PQexecParams(pg->conn,
					   "SELECT c.oid, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
					   " ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2"
					   " AND c.relkind IN ('r', 'p')", 2, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rc = rp_mirror_fail_result(pg, res, "looking up the table", t);
		PQclear(res);
		return rc;
	}
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		if (!pg->opts.create_tables)
			return rp_fail(RP_HALT_SINK, "destination table %s does not exist (create it, or run with --create-tables)",
						   t->qname);
		if (rp_mirror_create_table(pg, t) < 0 || rp_mirror_table_read_catalog(pg, t) < 0)
			return -1;
		/* created from the description: every column has the source's type */
		t->binary = rp_mirror_binary_candidate(t);
		t->resolved = true;
		t->txn_dirty = true;
		return 0;
	}
	snprintf(oid, sizeof(oid), "%s", PQgetvalue(res, 0, 0));
	/* a partitioned table routes its rows: ONLY would reach none of them */
	if (PQgetvalue(res, 0, 1)[0] == 'p')
		snprintf(t->qrel, strlen(t->qname) + 1, "%s", t->qname);
	PQclear(res);

	/* every replicated column must be there */
	rp_buf_init(&names, 256);
	rp_mirror_name_array(&names, t, false);
	vals[0] = oid;
	vals[1] = names.data;
	res = PQexecParams(pg->conn,
					   "SELECT x FROM pg_catalog.unnest($2::text[]) x WHERE NOT EXISTS ("
					   " SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::oid"
					   " AND a.attname = x AND a.attnum > 0 AND NOT a.attisdropped) LIMIT 1",
					   2, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_mirror_fail_result(pg, res, "checking columns", t);
	else if (PQntuples(res) > 0)
		rc = rp_fail(RP_HALT_SINK, "destination table %s has no column \"%s\"", t->qname,
					 PQgetvalue(res, 0, 0));
	PQclear(res);

	/* and a unique index on exactly the key, for ON CONFLICT and matching */
	if (rc == 0 && t->nkey > 0 && !t->history)
	{
		rp_buf_reset(&names);
		rp_mirror_name_array(&names, t, true);
		vals[1] = names.data;
		res = PQexecParams(pg->conn,
						   "SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = $1::oid"
						   " AND i.indisunique AND i.indisvalid AND i.indpred IS NULL"
						   " AND i.indexprs IS NULL AND (SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attname::text)"
						   "  FROM pg_catalog.pg_attribute a WHERE a.attrelid = i.indrelid"
						   "  AND a.attnum = ANY (i.indkey::int2[]))"
						   " = (SELECT pg_catalog.array_agg(x ORDER BY x) FROM pg_catalog.unnest($2::text[]) x)",
						   2, NULL, vals, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			rc = rp_mirror_fail_result(pg, res, "checking the key", t);
		else if (PQntuples(res) == 0)
			rc = rp_fail(RP_HALT_SINK, "destination table %s has no primary key or unique index on the source's key %s",
						 t->qname, names.data);
		PQclear(res);
	}
	rp_buf_free(&names);
	if (rc == 0)
		rc = rp_mirror_binary_check(pg, t, oid);
	if (rc == 0)
		rc = rp_mirror_table_read_catalog(pg, t);
	if (rc == 0)
	{
		t->resolved = true;
		t->txn_dirty = true;
	}
	return rc;
}
