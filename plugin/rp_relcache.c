/*
 * rp_relcache.c
 *    The plugin's relation cache (see rp_relcache.h).
 *
 * Invalidation callbacks only mark entries; rebuilding happens in
 * rp_relcache_get(), where nothing holds pointers into the old state.
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "nodes/bitmapset.h"
#include "port/pg_bswap.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/relcache.h"

#include "rp_encode.h"
#include "rp_partset.h"
#include "rp_relcache.h"

static HTAB *rp_rel_hash = NULL;
static MemoryContext rp_rel_cxt = NULL;
static const RpOptions *rp_rel_opts = NULL;
static bool rp_rel_callback_registered = false;
static uint32 rp_rel_gen = 0;

static int
rp_oid_cmp(const void *a, const void *b)
{
	Oid			x = *(const Oid *) a;
	Oid			y = *(const Oid *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

static bool
rp_oid_member(const Oid *oids, int n, Oid oid)
{
	return n > 0 && bsearch(&oid, oids, n, sizeof(Oid), rp_oid_cmp) != NULL;
}

static void
rp_relcache_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	RpRelEntry *e;

	if (rp_rel_hash == NULL)
		return;
	if (OidIsValid(relid))
	{
		e = hash_search(rp_rel_hash, &relid, HASH_FIND, NULL);
		if (e)
			e->valid = false;

		/*
		 * ATTACH or DETACH PARTITION below a sub-partitioned table
		 * invalidates that table, not the root: a root whose tree holds the
		 * relation is rebuilt too (its partitions see the new build by its
		 * gen).
		 */
		if (rp_rel_opts->partitions_root)
		{
			hash_seq_init(&status, rp_rel_hash);
			while ((e = hash_seq_search(&status)) != NULL)
				if (e->is_root && rp_oid_member(e->members, e->nmembers, relid))
					e->valid = false;
		}
		return;
	}
	hash_seq_init(&status, rp_rel_hash);
	while ((e = hash_seq_search(&status)) != NULL)
		e->valid = false;
}

static void
rp_relcache_context_gone(void *arg)
{
	rp_rel_hash = NULL;
	rp_rel_cxt = NULL;
}

void
rp_relcache_init(const RpOptions *opts)
{
	HASHCTL		ctl;
	MemoryContextCallback *cb;

	rp_rel_cxt = AllocSetContextCreate(CurrentMemoryContext, "replicant relations",
									   ALLOCSET_DEFAULT_SIZES);
	cb = MemoryContextAlloc(rp_rel_cxt, sizeof(MemoryContextCallback));
	cb->func = rp_relcache_context_gone;
	cb->arg = NULL;
	MemoryContextRegisterResetCallback(rp_rel_cxt, cb);

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(RpRelEntry);
	ctl.hcxt = rp_rel_cxt;
	rp_rel_hash = hash_create("replicant relations", 128, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	rp_rel_opts = opts;
	rp_types_init();
	if (!rp_rel_callback_registered)
	{
		CacheRegisterRelcacheCallback(rp_relcache_invalidate, (Datum) 0);
		rp_rel_callback_registered = true;
	}
}

/* Drop what a previous build kept. */
static void
rp_relcache_clear(RpRelEntry *e)
{
	if (e->cols)
		pfree(e->cols);
	if (e->built)
		pfree(e->built);
	if (e->root_map)
		pfree(e->root_map);
	if (e->members)
		pfree(e->members);
	if (e->leaves)
		pfree(e->leaves);
	e->cols = NULL;
	e->built = NULL;
	e->built_len = 0;
	e->root_map = NULL;
	e->members = e->leaves = NULL;
	e->nmembers = e->nleaves = 0;
	e->ncols = 0;
	e->is_root = false;
	e->partition_set = 0;
	e->identity_ok = true;
}

/*
 * A partition root's tree under the historic snapshot: every relation in
 * it (for invalidation), its WAL-logged leaves (a TRUNCATE of all of them
 * is a TRUNCATE of the root) and a fingerprint of its leaf partitions, the
 * FNV-1a of their sorted OIDs (common/rp_partset.h, which the consumer's
 * snapshot computes too), changing with every ATTACH and DETACH PARTITION
 * anywhere in the tree.
 */
static void
rp_relcache_tree(RpRelEntry *e, Oid relid)
{
	List	   *all = find_all_inheritors(relid, NoLock, NULL);
	int			n = list_length(all);
	Oid		   *members = MemoryContextAlloc(rp_rel_cxt, sizeof(Oid) * Max(n, 1));
	Oid		   *leaves = MemoryContextAlloc(rp_rel_cxt, sizeof(Oid) * Max(n, 1));
	uint32		set = RP_PARTSET_INIT;
	int			nm = 0,
				nl = 0;
	ListCell   *lc;

	foreach(lc, all)
	{
		Oid			oid = lfirst_oid(lc);

		if (oid != relid)
			members[nm++] = oid;
	}
	qsort(members, nm, sizeof(Oid), rp_oid_cmp);
	for (int i = 0; i < nm; i++)
	{
		char		kind = get_rel_relkind(members[i]);

		if (kind == RELKIND_PARTITIONED_TABLE || kind == '\0')
			continue;			/* '\0': dropped meanwhile */
		set = rp_partset_add(set, members[i]);
		if (kind == RELKIND_RELATION &&
			get_rel_persistence(members[i]) == RELPERSISTENCE_PERMANENT)
			leaves[nl++] = members[i];
	}
	e->is_root = true;
	e->members = members;
	e->nmembers = nm;
	e->leaves = leaves;
	e->nleaves = nl;
	e->partition_set = set;
}

/*
 * A partition published as its root (partitions=root): which of its
 * columns holds each of the root's (by name, as PostgreSQL maps a
 * partition's tuples to its parent's: the orders and dropped columns may
 * differ), and whether its old tuples carry the root's replica identity.
 */
static void
rp_relcache_build_partition(RpRelEntry *e, Relation rel, Oid root)
{
	Relation	rootrel = RelationIdGetRelation(root);
	RpRelEntry *re;
	AttrMap    *map;
	Bitmapset  *idkey;
	bool		full = RelationGetForm(rel)->relreplident == REPLICA_IDENTITY_FULL;

	if (!RelationIsValid(rootrel))
		elog(ERROR, "replicant: could not open relation %u, the partition root of relation \"%s\"",
			 root, RelationGetRelationName(rel));
	re = rp_relcache_get(rootrel);
	e->pub_relid = root;
	e->root_gen = re->gen;
	e->selected = re->selected;
	/* 16 added the missing_ok argument (generated columns may differ) */
#if PG_VERSION_NUM >= 160000
	map = build_attrmap_by_name(RelationGetDescr(rel), RelationGetDescr(rootrel), false);
#else
	map = build_attrmap_by_name(RelationGetDescr(rel), RelationGetDescr(rootrel));
#endif
	idkey = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY);
	e->root_map = MemoryContextAllocZero(rp_rel_cxt, sizeof(AttrNumber) * Max(re->ncols, 1));

	/*
	 * The server logs a partition's old tuples by the partition's own replica
	 * identity: they name the row in the root's terms only when they hold
	 * every column of the root's identity (under the root's FULL, every
	 * column, so the partition must be FULL too).
	 */
	e->identity_ok = re->has_identity && (re->identity != REPLICA_IDENTITY_FULL || full);
	for (int i = 0; i < re->ncols; i++)
	{
		AttrNumber	att = map->attnums[re->cols[i].attnum - 1];

		if (att <= 0)
			elog(ERROR, "replicant: partition \"%s\" has no column for column %d of its root \"%s\"",
				 RelationGetRelationName(rel), re->cols[i].attnum,
				 RelationGetRelationName(rootrel));
		e->root_map[i] = att;
		if (re->cols[i].in_identity && !full &&
			!bms_is_member(att - FirstLowInvalidHeapAttributeNumber, idkey))
			e->identity_ok = false;
	}
	free_attrmap(map);
	RelationClose(rootrel);
}

/*
 * PostgreSQL 18's virtual generated columns are computed when read: the WAL
 * holds no value for them, and pgoutput never publishes them.  They are left
 * out of the description and of every tuple, as dropped columns are; a stored
 * generated column is published with its value and flagged (what pgoutput does
 * under publish_generated_columns = stored).  Before 18 attgenerated is never
 * 'v', so the test needs no version conditional.
 */
#ifndef ATTRIBUTE_GENERATED_VIRTUAL
#define ATTRIBUTE_GENERATED_VIRTUAL 'v'
#endif

static bool
rp_relcache_published_column(Form_pg_attribute att)
{
	return !att->attisdropped && att->attgenerated != ATTRIBUTE_GENERATED_VIRTUAL;
}

/*
 * Work happens in the caller's per-change context; only the column array
 * and the encoded description are kept, in the cache's own context.
 */
static void
rp_relcache_build(RpRelEntry *e, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Form_pg_class cls = RelationGetForm(rel);
	Bitmapset  *idkey;
	Bitmapset  *pkey;
	char	   *schema;
	RpBuf		rec;
	size_t		at;
	int			n = 0;

	rp_relcache_clear(e);
	e->gen = ++rp_rel_gen;
	e->pub_relid = RelationGetRelid(rel);
	if (rp_rel_opts->partitions_root && cls->relispartition)
	{
		List	   *ancestors = get_partition_ancestors(RelationGetRelid(rel));

		if (ancestors != NIL)
		{
			rp_relcache_build_partition(e, rel, llast_oid(ancestors));
			e->valid = true;
			return;
		}
	}

	schema = get_namespace_name(cls->relnamespace);
	e->selected = rp_options_table_selected(rp_rel_opts, schema, NameStr(cls->relname));
	e->identity = cls->relreplident;
	idkey = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY);
	pkey = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
	e->has_identity = cls->relreplident == REPLICA_IDENTITY_FULL || idkey != NULL;
	if (rp_rel_opts->partitions_root && cls->relkind == RELKIND_PARTITIONED_TABLE)
		rp_relcache_tree(e, RelationGetRelid(rel));

	for (int i = 0; i < desc->natts; i++)
		if (rp_relcache_published_column(TupleDescAttr(desc, i)))
			e->ncols++;
	e->cols = MemoryContextAllocZero(rp_rel_cxt, sizeof(RpColumnConv) * Max(e->ncols, 1));

	rp_buf_init(&rec, 256);
	at = rp_enc_relation_start(&rec, RelationGetRelid(rel), schema, NameStr(cls->relname),
							   cls->relreplident, (uint16) e->ncols);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int			off = att->attnum - FirstLowInvalidHeapAttributeNumber;
		RpColumnConv *c;
		uint8		flags = 0;

		if (!rp_relcache_published_column(att))
			continue;
		c = &e->cols[n++];
		c->attnum = att->attnum;
		c->conv = rp_types_get(att->atttypid);
		c->in_identity = cls->relreplident == REPLICA_IDENTITY_FULL || bms_is_member(off, idkey);
		if (bms_is_member(off, pkey))
			flags |= RP_COL_PRIMARY_KEY;
		/* under REPLICA IDENTITY FULL every column is part of the identity */
		if (c->in_identity)
			flags |= RP_COL_IDENTITY;
		if (att->attnotnull)
			flags |= RP_COL_NOT_NULL;
		if (att->attgenerated)
			flags |= RP_COL_GENERATED;
		rp_enc_relation_column(&rec, att->attnum, NameStr(att->attname), att->atttypid,
							   rp_types_sql_name(att->atttypid, att->atttypmod),
							   att->atttypmod, c->conv->encoding, flags);
	}
	/* version 3 (and JSON, rendered from the newest version): the kind */
	if (rp_rel_opts->json || rp_rel_opts->proto_version >= RP_PROTO_VERSION_REL_KIND)
		rp_enc_relation_kind(&rec, e->is_root ? RP_REL_KIND_PARTITION_ROOT : RP_REL_KIND_TABLE,
							 e->partition_set);
	rp_buf_end_record(&rec, at);
	e->built = MemoryContextAlloc(rp_rel_cxt, rec.len);
	memcpy(e->built, rec.data, rec.len);
	e->built_len = rec.len;
	e->valid = true;
	/* the rest (bitmaps, names, rec) lives in the per-change context */
}

RpRelEntry *
rp_relcache_get(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	RpRelEntry *e;
	bool		found;

	/* a pg_type change drops every conversion, so every entry is rebuilt */
	if (rp_types_maybe_reset())
		rp_relcache_invalidate((Datum) 0, InvalidOid);

	e = hash_search(rp_rel_hash, &relid, HASH_ENTER, &found);
	if (!found)
	{
		e->valid = false;
		e->gen = e->root_gen = 0;
		e->cols = NULL;
		e->built = NULL;
		e->described = NULL;
		e->described_len = e->built_len = 0;
		e->root_map = NULL;
		e->members = e->leaves = NULL;
		e->nmembers = e->nleaves = 0;
		e->is_root = false;
	}

	/*
	 * a partition follows its root: rebuilt when the root was (entries never
	 * move)
	 */
	if (e->valid && e->pub_relid != relid)
	{
		RpRelEntry *re = hash_search(rp_rel_hash, &e->pub_relid, HASH_FIND, NULL);

		if (re == NULL || !re->valid || re->gen != e->root_gen)
			e->valid = false;
	}
	if (!e->valid)
		rp_relcache_build(e, rel);
	return e;
}

/*
 * The root's entry can be invalidated after the partition's was built on
 * it: building the partition reads its catalog, and an invalidation
 * processed meanwhile (a TRUNCATE or DDL of the tree decoded just before)
 * drops the root's entry.  That is not an error: the partition is built
 * again, which builds its root again (test/t/510_partitions.pl met it 1 run in 3:
 * "the partition root ... has no valid entry" ended the stream).
 */
#define RP_RELCACHE_REBUILDS 3

RpRelEntry *
rp_relcache_published(RpRelEntry *e)
{
	RpRelEntry *re = NULL;

	if (e->pub_relid == e->relid)
		return e;
	for (int tries = 0; tries <= RP_RELCACHE_REBUILDS; tries++)
	{
		Relation	rel;

		re = hash_search(rp_rel_hash, &e->pub_relid, HASH_FIND, NULL);
		if (re != NULL && re->valid && re->gen == e->root_gen)
			return re;
		if (tries == RP_RELCACHE_REBUILDS)
			break;
		rel = RelationIdGetRelation(e->relid);
		if (!RelationIsValid(rel))
			break;
		e->valid = false;
		e = rp_relcache_get(rel);
		RelationClose(rel);
		if (e->pub_relid == e->relid)
			return e;			/* detached meanwhile: published as itself */
	}
	elog(ERROR, "replicant: the partition root %u of relation %u has no valid entry",
		 e->pub_relid, e->relid);
	return re;					/* not reached */
}
