/*
 * rp_relcache.h
 *    Per-relation state of the plugin: whether the table is selected, the
 *    column conversions (resolved once, never per row), the identity and
 *    primary-key columns, and the encoded Relation record last sent, so a
 *    relation is described once per session and again only when its
 *    description really changes (DDL, or a streamed transaction's schema).
 */
#ifndef RP_RELCACHE_H
#define RP_RELCACHE_H

#include "postgres.h"
#include "utils/rel.h"

#include "rp_options.h"
#include "rp_types.h"

typedef struct RpColumnConv
{
	AttrNumber	attnum;			/* 1-based position in the heap tuple */
	bool		in_identity;
	RpTypeConv *conv;
} RpColumnConv;

/*
 * With partitions=root, a partition's entry only points at its topmost
 * partitioned ancestor (pub_relid), whose own entry holds the description,
 * the selection and the conversions; the partition keeps how its columns
 * map onto the root's.  Every other entry describes itself (pub_relid ==
 * relid).
 */
typedef struct RpRelEntry
{
	Oid			relid;			/* hash key */
	bool		valid;
	uint32		gen;			/* bumped at every build */
	Oid			pub_relid;		/* published as: itself, or its partition root */
	/* a partition published as its root */
	uint32		root_gen;		/* the root entry's gen this was built against */
	AttrNumber *root_map;		/* per column of the root entry: this table's
								 * attnum */
	bool		identity_ok;	/* its old tuples hold the root's identity
								 * columns */
	/* a partition root (partitions=root) */
	bool		is_root;
	int			nmembers;		/* every relation under it, sorted
								 * (invalidation) */
	Oid		   *members;
	int			nleaves;		/* its WAL-logged leaf partitions, sorted
								 * (TRUNCATE) */
	Oid		   *leaves;
	uint32		partition_set;	/* fingerprint of its leaf partitions */
	/* every entry that describes itself */
	bool		selected;		/* passes include/exclude_tables */
	bool		has_identity;	/* UPDATE/DELETE can name their row */
	char		identity;		/* pg_class.relreplident */
	int			ncols;			/* live (non-dropped) columns */
	RpColumnConv *cols;
	char	   *described;		/* the Relation record as last sent */
	size_t		described_len;
	size_t		built_len;		/* the Relation record as built now */
	char	   *built;
} RpRelEntry;

extern void rp_relcache_init(const RpOptions *opts);

/* The entry for rel, rebuilt first if DDL or a type change invalidated it. */
extern RpRelEntry *rp_relcache_get(Relation rel);

/*
 * The entry that describes e's changes: e itself, or (partitions=root) its
 * root's, valid after rp_relcache_get(e's relation).
 */
extern RpRelEntry *rp_relcache_published(RpRelEntry *e);

#endif							/* RP_RELCACHE_H */
