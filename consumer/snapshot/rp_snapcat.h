/*
 * rp_snapcat.h
 *    The catalog half of the initial snapshot: which tables are selected,
 *    and each one's description as the output plugin would send it (the
 *    same columns, type names, encodings and flags), read on a session
 *    that holds the exported snapshot, so the description is the one the
 *    copied rows have.
 *
 * Encodings are picked the way plugin/rp_types.c picks them: the base type
 * of a domain, fixed encodings for the built-in types, then enum,
 * composite, range, array, and text plus type OID for anything else.
 */
#ifndef RP_SNAPCAT_H
#define RP_SNAPCAT_H

#include <libpq-fe.h>

#include "rp_decode.h"
#include "snapshot/rp_copybin.h"

typedef struct RpSnapTable
{
	RpRelation *rel;			/* owned */
	RpRecvType *recv;			/* per column of rel */
	int		   *keycols;		/* primary key, in key order: indexes into
								 * rel->cols */
	int			nkey;
	int64_t		estimate;		/* pg_class.reltuples, -1 unknown */
	bool		partitioned;	/* a partition root (partitions=root): read
								 * without ONLY, in key order */
	bool		portable;		/* binary COPY rows load into a same-typed
								 * table elsewhere */
	bool		convertible;	/* every column converts to the wire
								 * (rp_pgrecv) */
	char		why[160];		/* names the column that is not
								 * portable/convertible */
} RpSnapTable;

/* Table patterns of the plugin's include_tables / exclude_tables options. */
typedef struct RpSnapSelect
{
	const char *include;		/* NULL: every table */
	const char *exclude;
	bool		via_root;		/* the plugin's partitions=root: roots stand
								 * for their partitions */
} RpSnapSelect;

/* Does schema.table pass the selection (the plugin's rule)? */
extern bool rp_snapcat_selected(const RpSnapSelect *sel, const char *schema, const char *table);

/*
 * The tables whose changes the plugin sends, as the stream names them: every
 * ordinary table, inheritance children and leaf partitions included (each is
 * read with ONLY: no row twice); with via_root, a partitioned table's
 * topmost root instead of its partitions.  Unlogged and temporary tables
 * are not: their changes are not in the WAL (pgoutput leaves them out too).
 */
#define RP_SNAPCAT_TABLES_WHERE(via_root) \
	((via_root) ? "((c.relkind = 'r' AND NOT c.relispartition) OR (c.relkind = 'p' AND NOT c.relispartition))" \
	 " AND c.relpersistence = 'p'" \
	 : "c.relkind = 'r' AND c.relpersistence = 'p'")

/*
 * Every pattern of sel's include_tables must name some table whose changes
 * the stream carries (under the name it carries), and every pattern of its
 * exclude_tables some table of the source: 0, or -1 with rp_fail() naming
 * the first that does not (one that names a partitioned table under
 * partitions=leaf, a partition under root, or an unlogged table says so).
 */
extern int	rp_snapcat_check_patterns(PGconn *conn, const RpSnapSelect *sel);

/*
 * The selected tables, described; *n gets the count, the caller
 * frees with rp_snapcat_free.  NULL with rp_fail() on error (n = 0 and a
 * non-NULL empty array when nothing is selected).
 */
extern RpSnapTable *rp_snapcat_tables(PGconn *conn, const RpSnapSelect *sel, int *n);
extern void rp_snapcat_free(RpSnapTable *tables, int n);

#endif							/* RP_SNAPCAT_H */
