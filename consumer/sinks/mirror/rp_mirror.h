/*
 * rp_mirror.h
 *    The PostgreSQL mirror sink: what its callers need (the options, the
 *    opener, and what the CLI wires to the metrics page and the backfill).
 *    The package's own state is in rp_mirror_int.h.
 */
#ifndef RP_MIRROR_H
#define RP_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/rp_sink.h"

typedef enum RpDestructive
{
	RP_DESTRUCTIVE_HALT,
	RP_DESTRUCTIVE_SKIP,
	RP_DESTRUCTIVE_APPLY
} RpDestructive;

typedef struct RpMirrorOptions
{
	const char *conninfo;
	const char *slot;
	bool		create_tables;
	RpDestructive on_destructive;
	const char *schema_prefix;	/* destination schema = prefix || source
								 * schema */
	char	  **history;		/* "schema.table" of tables kept as history */
	int			nhistory;
	char	  **route_prefixes; /* messages written to replicant.messages */
	int			nroute;
	char	  **ignore_prefixes;	/* messages acknowledged with no effect */
	int			nignore;
	const char *bookkeeping_schema; /* the mirror's own tables (NULL:
									 * "replicant") */
	bool		divergence_skip;	/* --on-divergence=skip: count, do not
									 * halt */

	/*
	 * --pipeline-max: a table's net effects in a batch, at most this many, go
	 * by prepared statements in a pipeline, more through staging (0: the
	 * default, RP_MIRROR_PIPELINE_DEFAULT; -1: always staging)
	 */
	int			pipeline_max;

	/*
	 * session_replication_role of every destination session (NULL: "replica",
	 * as PostgreSQL's apply worker: foreign keys and ordinary triggers do not
	 * fire on replicated rows, so they land in any order).
	 */
	const char *replication_role;
} RpMirrorOptions;

/*
 * The measured bound of the short way (rp_mirror_pipeline.c): on a
 * five-batch backlog (bench/mirror_tables.sh) a table with 10 rows a batch
 * went 1.8 times faster by the pipeline, one with 25 rows 1.2 times faster
 * through staging (preparing and planning a table's statements costs about
 * what staging it once does).
 */
#define RP_MIRROR_PIPELINE_DEFAULT 16
#define RP_MIRROR_PIPELINE_LIMIT 100000

/* Identifiers longer than this are truncated by a default server (NAMEDATALEN - 1). */
#define RP_MIRROR_MAX_IDENT 63
#define RP_MIRROR_DEFAULT_BOOKKEEPING "replicant"

/*
 * A mirror of the source in the destination opts->conninfo, connected;
 * NULL after rp_fail().  The options' strings must outlive the sink; the
 * caller closes it (RpSink.close).
 */
extern RpSink *rp_mirror_open(const RpMirrorOptions *opts, const RpSinkEnv *env);

/*
 * Divergences of mirror sink `sink` by destination table name, for the
 * metrics page (RpMetrics.divergences): 1 with the i-th table's name and
 * count, 0 past the last, and 0 when sink is not a mirror.  Thread-safe.
 */
extern int	rp_mirror_divergence_get(const void *sink, int i, char *table, size_t len,
									 uint64_t *count);

/*
 * Bound flushes of mirror sink `sink` so far (its effect maps applied
 * mid-batch to stay in --max-memory), for the metrics page: 0 when sink
 * is not a mirror, else 1 with *count set.  Thread-safe.
 */
extern int	rp_mirror_bound_flushes_get(const void *sink, uint64_t *count);

/* RpSink.metrics of a mirror: its divergences and bound flushes. */
extern void rp_mirror_metrics(const RpSink *sink, RpBuf *out);

/* RpBackfillOptions.progress: arg is the mirror's RpSink; its own session. */
extern int	rp_mirror_backfill_progress(void *arg, uint32_t relid, char **token);

#endif							/* RP_MIRROR_H */
