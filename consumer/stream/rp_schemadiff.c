/*
 * rp_schemadiff.c
 *    How a relation's new description differs from the one the sink has
 *    (see rp_deliver.h: rp_schema_diff).
 */
#include <stdio.h>
#include <string.h>

#include "stream/rp_schemadiff.h"

static const RpColumn *
rp_col_by_attnum(const RpRelation *rel, int16_t attnum)
{
	for (uint16_t i = 0; i < rel->natts; i++)
		if (rel->cols[i].attnum == attnum)
			return &rel->cols[i];
	return NULL;
}

static const char *
rp_schema_identity_name(char identity)
{
	switch (identity)
	{
		case RP_IDENTITY_FULL:
			return "FULL";
		case RP_IDENTITY_NOTHING:
			return "NOTHING";
		case RP_IDENTITY_INDEX:
			return "USING INDEX";
		default:
			return "DEFAULT";
	}
}

RpSchemaChange
rp_schema_diff(const RpRelation *before, const RpRelation *after, char *what, size_t whatlen)
{
	bool		added = false;

	/*
	 * A new replica identity (DEFAULT, FULL, USING INDEX, NOTHING) changes
	 * what the old row of an update or delete carries, not the rows: a sink
	 * takes it as it comes (the mirror matches by the new key, the primary
	 * key under FULL), and a change it can then not apply halts on its own. A
	 * primary key that changes is a change of the table.
	 */
	bool		identity = before != NULL && before->identity != after->identity;

	what[0] = '\0';
	if (before == NULL)
		return RP_SCHEMA_NEW;
	if (strcmp(before->schema, after->schema) != 0 || strcmp(before->name, after->name) != 0)
	{
		snprintf(what, whatlen, "table renamed to \"%s\".\"%s\"", after->schema, after->name);
		return RP_SCHEMA_DESTRUCTIVE;
	}

	/*
	 * A partition root (partitions=root) gains or loses rows with its
	 * partitions, and no change record says so: its rows here are no longer
	 * its rows there.  A table that becomes or stops being published as a
	 * root is the same break.
	 */
	if (rp_relation_is_root(before) != rp_relation_is_root(after))
	{
		snprintf(what, whatlen, rp_relation_is_root(after)
				 ? "it is now published as the root of its partitions (partitions=root)"
				 : "it is no longer published as the root of its partitions");
		return RP_SCHEMA_DESTRUCTIVE;
	}
	if (rp_relation_is_root(after) && before->partition_set != after->partition_set)
	{
		snprintf(what, whatlen, "its partitions changed (ATTACH or DETACH PARTITION)");
		return RP_SCHEMA_DESTRUCTIVE;
	}
	for (uint16_t i = 0; i < before->natts; i++)
	{
		const RpColumn *b = &before->cols[i];
		const RpColumn *a = rp_col_by_attnum(after, b->attnum);

		if (a == NULL)
		{
			snprintf(what, whatlen, "column \"%s\" dropped", b->name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if (strcmp(a->name, b->name) != 0)
		{
			snprintf(what, whatlen, "column \"%s\" renamed to \"%s\"", b->name, a->name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if (a->type_oid != b->type_oid || a->typmod != b->typmod)
		{
			snprintf(what, whatlen, "column \"%s\" changed type from %s to %s", b->name,
					 b->type_name, a->type_name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if ((a->flags & RP_COL_PRIMARY_KEY) != (b->flags & RP_COL_PRIMARY_KEY))
		{
			snprintf(what, whatlen, "primary key of column \"%s\" changed", b->name);
			return RP_SCHEMA_DESTRUCTIVE;
		}
		if ((a->flags & RP_COL_IDENTITY) != (b->flags & RP_COL_IDENTITY))
			identity = true;
	}
	for (uint16_t i = 0; i < after->natts; i++)
		if (rp_col_by_attnum(before, after->cols[i].attnum) == NULL)
		{
			if (!added)
				snprintf(what, whatlen, "column \"%s\" added", after->cols[i].name);
			added = true;
		}
	if (identity && !added && before->identity != after->identity)
		snprintf(what, whatlen, "replica identity changed (%s to %s)", rp_schema_identity_name(before->identity),
				 rp_schema_identity_name(after->identity));
	else if (identity && !added)
		snprintf(what, whatlen, "replica identity columns changed");
	return added || identity ? RP_SCHEMA_ADDITIVE : RP_SCHEMA_SAME;
}
