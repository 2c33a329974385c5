/*
 * rp_dbverify.h
 *    replicant verify: the mirror compared with its source, table by table,
 *    without stopping either.  Both servers hash the same key ranges (the
 *    chunk boundaries come from the source, in key order) and only counts,
 *    hashes and the chunk's last key cross the wire; a chunk that differs is
 *    read again once the mirror's checkpoint has passed the source LSN of
 *    the read, so replication lag is not a difference.  Keyless tables are
 *    compared as multisets, by buckets of row hashes.
 *
 * One session per server, autocommit statements (no long snapshot held on
 * either side), at most one chunk's key list in memory (only for
 * --keys-file).  Nothing printed holds a value (G4): ranges are chunk
 * numbers and row counts; keys and bounds go only to the keys file.
 */
#ifndef RP_DBVERIFY_H
#define RP_DBVERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rp_buf.h"

/*
 * Exit statuses of replicant verify (docs/operations.md), the worst first
 * when several apply: a difference found, then a failure, then a table or
 * chunk not compared.
 */
#define RP_DBVERIFY_EQUAL		0	/* every selected table equal */
#define RP_DBVERIFY_DIFFERENT	1	/* some table different */
#define RP_DBVERIFY_USAGE		2
#define RP_DBVERIFY_FAILED		3	/* could not compare: a connection or
									 * statement failed, no checkpoint,
									 * stopped */
#define RP_DBVERIFY_NOT_COMPARED 4	/* nothing different, but some table or
									 * chunk could not be settled (the mirror
									 * did not catch up, or the source kept
									 * changing it) */

typedef struct RpDbVerifyOptions
{
	const char *source;			/* -d conninfo */
	const char *sink;			/* the destination's conninfo
								 * (postgresql://... or keywords) */
	const char *slot;			/* -S, or NULL: the checkpoint table's one row */
	const char *include;		/* include_tables patterns, or NULL */
	const char *exclude;		/* exclude_tables patterns, or NULL */
	bool		via_root;		/* partitions=root: a partition root compared
								 * whole */
	const char *schema_prefix;	/* destination schema = prefix || source
								 * schema */
	const char *bookkeeping;	/* the mirror's bookkeeping schema */
	const char *keys_file;		/* differing keys and range bounds, or NULL */
	int64_t		chunk_rows;
	int			recheck_timeout_s;
	int64_t		max_rate;		/* rows per second read on each side, 0: no
								 * limit */
	int			duty;			/* percent of the time a server may be busy
								 * with the comparison's statements (1..100; 0
								 * = 100) */
	bool		quiet;			/* only the differences */
	bool		verbose;		/* say on stderr which chunks are re-read */
} RpDbVerifyOptions;

/* Compare; returns an RP_DBVERIFY_* status (reports on stdout, errors on stderr). */
extern int	rp_dbverify_run(const RpDbVerifyOptions *o);

/* ---- rp_dbverify_sql.c: the statements and texts (pure) ---- */

/* A table as the statements see it: names are raw (quoted here). */
typedef struct RpDbvTable
{
	const char *schema;
	const char *name;
	int			ncols;
	const char *const *cols;
	int			nkey;
	const char *const *keys;	/* key column names, in key order */
	const char *const *keytypes;	/* their types (format_type), for the
									 * parameters */
	bool		partitioned;	/* a partitioned table: read with its
								 * partitions (any other table is read ONLY,
								 * without its inheritance children, which are
								 * compared as tables of their own) */
} RpDbvTable;


/*
 * The hash of one key range: one row (count, md5 of the rows' md5s in key
 * order, and with want_last the range's last key, one text per key column;
 * NULL when empty).  lo: rows after $1..$nkey; hi: at or before the next
 * nkey parameters; limit > 0: the first limit rows only.  A range holds
 * only rows whose key columns are all non-NULL: the rows with a NULL in
 * the key (a destination's table whose key is not NOT NULL) are a range of
 * their own, so every row lies in exactly one.
 */
extern void rp_dbverify_sql_range(RpBuf *sql, const RpDbvTable *t, bool lo, bool hi,
								  int64_t limit, bool want_last);

/* The same (count, md5 of the row md5s in their order) of the rows with a NULL in the key. */
extern void rp_dbverify_sql_nullkeys(RpBuf *sql, const RpDbvTable *t);

/* The rows of a range as (key text, row md5), in key order: for the keys file. */
extern void rp_dbverify_sql_keys(RpBuf *sql, const RpDbvTable *t, bool lo, bool hi);

/* The same listing of the rows with a NULL in the key. */
extern void rp_dbverify_sql_nullkeys_list(RpBuf *sql, const RpDbvTable *t);

/*
 * A keyless table as a multiset: per bucket (the first two hex digits of
 * the row md5), the count and two sums of 60-bit slices of the row md5s;
 * every bucket in order, the empty ones left out.
 */
extern void rp_dbverify_sql_buckets(RpBuf *sql, const RpDbvTable *t);

/* The session settings that make both servers' text the same. */
extern const char *rp_dbverify_settings(void);

/* One key of a chunk's listing: key text and row hash (both owned by the caller). */
typedef struct RpDbvKey
{
	const char *key;
	const char *hash;
} RpDbvKey;

typedef enum RpDbvKeyDiff
{
	RP_DBV_CHANGED,				/* on both, different rows */
	RP_DBV_MISSING,				/* on the source only */
	RP_DBV_EXTRA				/* on the destination only */
} RpDbvKeyDiff;

/*
 * The differing keys of two listings, each sorted here by key text (the
 * arrays are reordered): calls emit per difference; returns their count.
 */
extern int64_t rp_dbverify_diff_keys(RpDbvKey *src, size_t nsrc, RpDbvKey *dst, size_t ndst,
									 void (*emit) (void *arg, RpDbvKeyDiff d, const char *key),
									 void *arg);

/* "changed", "missing", "extra" */
extern const char *rp_dbverify_diff_name(RpDbvKeyDiff d);

/*
 * The report line of a differing chunk, value-free: "chunk N (rows A-B of
 * the source): source R rows, destination S rows", first_row counting from 1.
 */
extern void rp_dbverify_range_text(RpBuf *b, int64_t chunk, int64_t first_row,
								   int64_t src_rows, int64_t dst_rows);

/* "rows with a NULL key: source R rows, destination S rows" */
extern void rp_dbverify_nullkeys_text(RpBuf *b, int64_t src_rows, int64_t dst_rows);

/*
 * One round of a differing chunk's re-read: s1 the source's read, then
 * (the mirror caught up with s1's WAL position) d the destination's, then
 * s2 the source's again.  time_left: the chunk's --recheck-timeout has not
 * passed.
 */
typedef enum RpDbvRound
{
	RP_DBV_ROUND_EQUAL,			/* d equals a source read: it was lag */
	RP_DBV_ROUND_DIFFERENT,		/* the source held still (s1 = s2) and d
								 * differs */
	RP_DBV_ROUND_AGAIN,			/* the source changed between its reads:
								 * another round */
	RP_DBV_ROUND_UNSETTLED		/* it changed, and no time is left: not
								 * compared */
} RpDbvRound;

extern RpDbvRound rp_dbverify_round(bool d_eq_s1, bool d_eq_s2, bool s1_eq_s2, bool time_left);

/* What became of a table. */
typedef struct RpDbvTally
{
	int64_t		rows;			/* the source's rows read */
	int64_t		chunks;
	int64_t		differing;		/* ranges (or buckets) that differ */
	int64_t		not_compared;	/* chunks that could not be settled */
	int64_t		reread;			/* chunks that differed on the first read */
	bool		keyless;		/* compared as a multiset (one chunk, buckets) */
} RpDbvTally;

typedef enum RpDbvVerdict
{
	RP_DBV_EQUAL,
	RP_DBV_DIFFERENT,
	RP_DBV_NOT_COMPARED
} RpDbvVerdict;

/* The worst of what the chunks found: different, else not compared, else equal. */
extern RpDbvVerdict rp_dbverify_verdict(const RpDbvTally *t);

/*
 * A table's verdict line after its name and ": ", value-free: "equal (N
 * rows, K chunks[, R re-read after the mirror caught up])", "different (N
 * rows, K chunks, D different[, C not compared])", "not compared (N rows,
 * K chunks, C not compared)"; a keyless table's counts are hash buckets.
 */
extern void rp_dbverify_verdict_text(RpBuf *b, const RpDbvTally *t);

/*
 * The exit status of a run that compared (equal, different and not
 * compared tables; failed: the run stopped on an error or a signal): a
 * difference wins, then the failure, then a table not compared.
 */
extern int	rp_dbverify_status(int ndiff, int nnot, bool failed);

#endif							/* RP_DBVERIFY_H */
