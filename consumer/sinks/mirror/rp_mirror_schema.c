/*
 * rp_mirror_schema.c
 *    Schema changes of a mapped table: a barrier (what came before is
 *    applied first), then additive changes applied, destructive ones halted,
 *    skipped or applied (--on-destructive).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream/rp_deliver.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"

static int
rp_mirror_alter(RpMirror *pg, RpMirrorTable *t, const char *action, const RpColumn *c, const char *extra)
{
	RpBuf		sql;
	char	   *qc = rp_sql_ident_dup(c->name);
	int			rc;

	rp_buf_init(&sql, 256);
	rp_buf_put_text(&sql, "ALTER TABLE ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_char(&sql, ' ');
	rp_buf_put_text(&sql, action);
	rp_buf_put_char(&sql, ' ');
	rp_buf_put_text(&sql, qc);
	if (extra)
	{
		rp_buf_put_char(&sql, ' ');
		rp_buf_put_text(&sql, extra);
	}
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec(pg, sql.data, "ALTER TABLE", t);
	rp_buf_free(&sql);
	rp_free(qc);
	return rc;
}

/*
 * The destination table renamed as the source's was, in the open
 * transaction: SET SCHEMA (the prefix kept), then RENAME TO.
 */
static int
rp_mirror_rename(RpMirror *pg, RpMirrorTable *t, const RpRelation *after)
{
	char		schema[256];
	char	   *qs,
			   *qn,
			   *qold = rp_sql_ident_dup(t->dest_name);
	RpBuf		sql;
	int			rc = 0;

	snprintf(schema, sizeof(schema), "%s%s", pg->opts.schema_prefix ? pg->opts.schema_prefix : "", after->schema);
	qs = rp_sql_ident_dup(schema);
	qn = rp_sql_ident_dup(after->name);
	rp_buf_init(&sql, 256);
	if (strcmp(schema, t->dest_schema) != 0)
	{
		rp_buf_put_text(&sql, "ALTER TABLE ");
		rp_buf_put_text(&sql, t->qname);
		rp_buf_put_text(&sql, " SET SCHEMA ");
		rp_buf_put_text(&sql, qs);
		rp_buf_put_text(&sql, "; ");
	}
	if (strcmp(after->name, t->dest_name) != 0)
	{
		rp_buf_put_text(&sql, "ALTER TABLE ");
		rp_buf_put_text(&sql, qs);
		rp_buf_put_char(&sql, '.');
		rp_buf_put_text(&sql, qold);
		rp_buf_put_text(&sql, " RENAME TO ");
		rp_buf_put_text(&sql, qn);
	}
	rp_buf_put_char(&sql, '\0');
	if (sql.len > 1)
		rc = rp_mirror_exec(pg, sql.data, "ALTER TABLE (rename)", t);
	rp_buf_free(&sql);
	rp_free(qs);
	rp_free(qn);
	rp_free(qold);
	return rc;
}

static const RpColumn *
rp_mirror_col(const RpRelation *rel, int16_t attnum)
{
	for (uint16_t i = 0; i < rel->natts; i++)
		if (rel->cols[i].attnum == attnum)
			return &rel->cols[i];
	return NULL;
}

/*
 * Additive changes are applied in the destination transaction of the data
 * that follows them; destructive ones halt unless --on-destructive says
 * apply (drop or retype the column) or skip (go on without it).
 */
int
rp_mirror_table_schema_change(RpMirror *pg, const RpRelation *before, const RpRelation *after,
							  RpSchemaChange change)
{
	RpMirrorTable *t;
	char		what[256];

	bool		renamed = before && (strcmp(before->schema, after->schema) != 0 ||
									 strcmp(before->name, after->name) != 0);

	if (change == RP_SCHEMA_SAME)
		return 0;

	/*
	 * tables are resolved when their rows are applied, all those of a batch
	 * at once (rp_mirror_apply_flush)
	 */
	if (!pg->in_txn || change == RP_SCHEMA_NEW)
		return 0;
	t = rp_mirror_table_get(pg, before ? before : after);
	if (!t->resolved && rp_mirror_table_resolve(pg, t) < 0)
		return -1;

	/* a schema change is a barrier: what came before is applied first */
	if (rp_mirror_apply_flush(pg) < 0)
		return -1;
	rp_schema_diff(before, after, what, sizeof(what));
	if (change == RP_SCHEMA_DESTRUCTIVE)
	{
		/*
		 * A rename cannot be skipped: the rows after it name the new table.
		 * Renaming by hand cannot be timed (what came before it in the halted
		 * batch still names the old one), so apply renames it in the batch's
		 * own transaction, after what came before.
		 */
		if (pg->opts.on_destructive == RP_DESTRUCTIVE_HALT)
			return rp_fail(RP_HALT_SCHEMA, "destructive schema change of table %s: %s (halting; %s)",
						   t->qname, what, renamed ? "--on-destructive=apply renames the destination table too"
						   : "--on-destructive=apply or skip overrides");
		if (renamed && pg->opts.on_destructive == RP_DESTRUCTIVE_SKIP)
			return rp_fail(RP_HALT_SCHEMA, "schema change of table %s cannot be skipped: %s, and the rows after it are the renamed table's (--on-destructive=apply renames the destination table too)",
						   t->qname, what);
		if (renamed && rp_mirror_rename(pg, t, after) < 0)
			return -1;
	}
	if (change == RP_SCHEMA_ADDITIVE || pg->opts.on_destructive == RP_DESTRUCTIVE_APPLY)
	{
		for (uint16_t i = 0; i < before->natts; i++)
		{
			const RpColumn *b = &before->cols[i];
			const RpColumn *a = rp_mirror_col(after, b->attnum);

			if (!rp_mirror_applied(b))
				continue;
			if (a == NULL)
			{
				if (rp_mirror_alter(pg, t, "DROP COLUMN IF EXISTS", b, NULL) < 0)
					return -1;
			}
			else if (strcmp(a->name, b->name) != 0)
			{
				char	   *qn = rp_sql_ident_dup(a->name);
				char		extra[512];

				snprintf(extra, sizeof(extra), "TO %s", qn);
				rp_free(qn);
				if (rp_mirror_alter(pg, t, "RENAME COLUMN", b, extra) < 0)
					return -1;
			}
			else if (a->type_oid != b->type_oid || a->typmod != b->typmod)
			{
				char	   *qc = rp_sql_ident_dup(a->name);
				char		extra[1024];

				snprintf(extra, sizeof(extra), "TYPE %s USING %s::%s", a->type_name, qc, a->type_name);
				rp_free(qc);
				if (rp_mirror_alter(pg, t, "ALTER COLUMN", a, extra) < 0)
					return -1;
			}
		}
		for (uint16_t i = 0; i < after->natts; i++)
		{
			const RpColumn *a = &after->cols[i];

			if (rp_mirror_applied(a) && rp_mirror_col(before, a->attnum) == NULL &&
				rp_mirror_alter(pg, t, "ADD COLUMN IF NOT EXISTS", a, a->type_name) < 0)
				return -1;
		}
	}
	rp_mirror_table_describe(pg, t, after);
	return rp_mirror_table_resolve(pg, t);
}
