/*
 * rp_relcache.c
 *    The plugin's relation cache (see rp_relcache.h).
 *
 * Invalidation callbacks only mark entries; rebuilding happens in
 * rp_relcache_get(), where nothing holds pointers into the old state.
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "nodes/bitmapset.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/relcache.h"

#include "rp_encode.h"
#include "rp_relcache.h"

static HTAB *rp_rel_hash = NULL;
static MemoryContext rp_rel_cxt = NULL;
static const RpOptions *rp_rel_opts = NULL;
static bool rp_rel_callback_registered = false;

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
	char	   *schema = get_namespace_name(cls->relnamespace);
	RpBuf		rec;
	size_t		at;
	int			n = 0;

	if (e->cols)
		pfree(e->cols);
	if (e->built)
		pfree(e->built);

	e->selected = rp_options_table_selected(rp_rel_opts, schema, NameStr(cls->relname));
	e->identity = cls->relreplident;
	idkey = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY);
	pkey = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
	e->has_identity = cls->relreplident == REPLICA_IDENTITY_FULL || idkey != NULL;

	e->ncols = 0;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
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

		if (att->attisdropped)
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
		e->cols = NULL;
		e->built = NULL;
		e->described = NULL;
		e->described_len = e->built_len = 0;
	}
	if (!e->valid)
		rp_relcache_build(e, rel);
	return e;
}
