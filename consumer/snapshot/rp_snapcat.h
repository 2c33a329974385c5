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
	int		   *keycols;		/* primary key, in key order: indexes into rel->cols */
	int			nkey;
	int64_t		estimate;		/* pg_class.reltuples, -1 unknown */
	bool		portable;		/* binary COPY rows load into a same-typed table elsewhere */
	bool		convertible;	/* every column converts to the wire (rp_pgrecv) */
	char		why[160];		/* names the column that is not portable/convertible */
} RpSnapTable;

/* Table patterns of the plugin's include_tables / exclude_tables options. */
typedef struct RpSnapSelect
{
	const char *include;		/* NULL: every table */
	const char *exclude;
} RpSnapSelect;

/* Does schema.table pass the selection (the plugin's rule)? */
extern bool rp_snapcat_selected(const RpSnapSelect *sel, const char *schema, const char *table);

/*
 * The selected ordinary tables, described; *n gets the count, the caller
 * frees with rp_snapcat_free.  NULL with rp_fail() on error (n = 0 and a
 * non-NULL empty array when nothing is selected).
 */
extern RpSnapTable *rp_snapcat_tables(PGconn *conn, const RpSnapSelect *sel, int *n);
extern void rp_snapcat_free(RpSnapTable *tables, int n);

#endif							/* RP_SNAPCAT_H */
