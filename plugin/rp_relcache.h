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

typedef struct RpRelEntry
{
	Oid			relid;			/* hash key */
	bool		valid;
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

#endif							/* RP_RELCACHE_H */
