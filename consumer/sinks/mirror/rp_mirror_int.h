/*
 * rp_pg.h
 *    The PostgreSQL mirror sink's shared state (rp_sink_pg.c: sessions,
 *    checkpoints and transactions; rp_pg_table.c: destination tables;
 *    rp_pg_apply.c: net effects and bulk apply).
 */
#ifndef RP_PG_H
#define RP_PG_H

#include <libpq-fe.h>
#include <pthread.h>

#include "rp_buf.h"
#include "rp_decode.h"
#include "sinks/rp_sink.h"

typedef enum RpDestructive
{
	RP_DESTRUCTIVE_HALT,
	RP_DESTRUCTIVE_SKIP,
	RP_DESTRUCTIVE_APPLY
} RpDestructive;

typedef struct RpPgOptions
{
	const char *conninfo;
	const char *slot;
	bool		create_tables;
	RpDestructive on_destructive;
	const char *schema_prefix;	/* destination schema = prefix || source schema */
	char	  **history;		/* "schema.table" of tables kept as history */
	int			nhistory;
	char	  **route_prefixes; /* messages written to replicant.messages */
	int			nroute;
	char	  **ignore_prefixes;	/* messages acknowledged with no effect */
	int			nignore;
	const char *bookkeeping_schema; /* the mirror's own tables (NULL: "replicant") */
	bool		divergence_skip;	/* --on-divergence=skip: count, do not halt */
} RpPgOptions;

/* Identifiers longer than this are truncated by a default server (NAMEDATALEN - 1). */
#define RP_PG_MAX_IDENT 63
#define RP_PG_DEFAULT_BOOKKEEPING "replicant"

typedef enum RpEffectOp
{
	RP_EFFECT_UPSERT,
	RP_EFFECT_DELETE
} RpEffectOp;

/*
 * The net effect of a batch on one key.  Offsets into the arena are 64-bit:
 * one row may approach PostgreSQL's limits, so an arena may pass 4 GiB.
 */
typedef struct RpEffect
{
	uint8_t		op;				/* RpEffectOp */
	bool		partial;		/* some column is unchanged TOAST: keep its value */
	bool		fresh;			/* the batch's first change of the key was an INSERT */
	uint32_t	key_len;		/* a key is an index entry's columns: small */
	size_t		key_off;		/* serialized key in the table's arena */
	size_t		row_off;		/* serialized row in the table's arena */
	size_t		row_len;
	uint64_t	hash;
} RpEffect;

typedef struct RpPgTable
{
	uint32_t	relid;
	RpRelation *rel;			/* the description we apply with */
	char	   *qname;			/* quoted destination name */
	char	   *dest_schema;
	char	   *dest_name;
	int		   *keycols;		/* indexes into rel->cols */
	int			nkey;
	bool		full_match;		/* REPLICA IDENTITY FULL without a key */
	bool		no_identity;	/* updates and deletes cannot be applied */
	bool		history;
	bool		resolved;
	bool		txn_dirty;		/* resolved (created, altered) or staged in the open transaction */
	bool		binary;			/* COPY in binary: every column qualifies (rp_pgbin.h) */
	/* full_match: per column, the destination's send function and type (rp_pg_table.c) */
	char	  **match_send;		/* quoted, qualified; NULL: the type has none */
	char	  **match_type;		/* format_type() of the destination column */
	/* the destination's constraint and index names: errors name only these (G4) */
	char	  **constraints;
	int			nconstraints;
	bool		text_datums;	/* the pending effects hold values read back as text */
	char	   *stage_ups;		/* temporary staging tables, quoted */
	char	   *stage_del;
	/* net effects of the pending batch */
	RpEffect   *effects;
	int			neffects;
	int			capeffects;
	int		   *slots;			/* open addressing: effect index + 1 */
	int			nslots;
	RpBuf		arena;
	int			order;			/* first touch in the batch (apply order) */
	size_t		held;			/* bytes of the above, as charged (rp_pg_apply.c) */
} RpPgTable;

typedef struct RpPg
{
	RpPgOptions opts;
	/* from the caller's environment at open (rp_sink.h) */
	RpBackfill *backfill;		/* or NULL */
	RpSinkBatchHook batch_hook; /* before_commit NULL: none */
	RpSink	   *sink;			/* ours: its spill is the memory budget */
	PGconn	   *conn;
	RpPgTable **tables;
	int			ntables;
	int			captables;
	int			touched;		/* tables with pending effects */
	uint64_t	stage_seq;
	RpCheckpoint ck;			/* as read from the destination */
	bool		have_ck;
	bool		in_txn;
	/* the source transaction being applied (history mode, messages) */
	uint64_t	cur_commit_lsn;
	int64_t		cur_commit_time;
	/* a barrier inside that transaction already opened some of its versions */
	uint64_t	history_barrier_lsn;
	/* early apply: the open transaction holds chunks of a streamed one */
	bool		early;
	uint64_t	early_done;		/* the checkpoint's commit LSN when it began */
	RpBuf		scratch;
	bool		slot_locked;	/* a session held the slot's advisory lock (rp_sink_pg.c) */
	/* a stop's cancel request comes from another thread (RpSink.interrupt) */
	pthread_mutex_t cancel_lock;
	PGcancel   *cancel;			/* of conn, or NULL */
	int			max_ident;		/* the destination's max_identifier_length */
	/* the bookkeeping schema, quoted, and SQL expanded with it (rp_pg_bk) */
	char	   *bk;
	const char **bk_tmpl;
	char	  **bk_sql;
	int			nbk;
	int			capbk;
	size_t		held;			/* every table's effect map (arena, effects, slots) */
	struct RpSpill *budget;		/* where held is charged (sink->spill when it began) */
	uint64_t	bound_flushes;	/* effect maps applied early to stay in the budget */
	bool		refs;			/* a row points into the record being applied */
} RpPg;

/* rp_sink_pg.c */
extern RpSink *rp_sink_pg_open(const RpPgOptions *opts, const RpSinkEnv *env);
extern int	rp_pg_fail_result(RpPg *pg, PGresult *res, const char *what, const RpPgTable *t);
extern int	rp_pg_exec(RpPg *pg, const char *sql, const char *what, const RpPgTable *t);
extern int	rp_pg_exec_params(RpPg *pg, const char *sql, int n, const char *const *vals,
							  const char *what, const RpPgTable *t);
/*
 * tmpl with every "@bk" replaced by the quoted bookkeeping schema; the
 * string lives as long as the sink (tmpl must be a literal).  Thread-safe.
 */
extern const char *rp_pg_bk(RpPg *pg, const char *tmpl);
/*
 * " on table T column "c" constraint "k"": the names of an error that the
 * consumer knows itself (t's table, columns and constraints); a name the
 * server reports that is not one of them is left out, since a trigger can
 * put anything there (G4).
 */
extern void rp_pg_diag_where(const PGresult *res, const RpPgTable *t, char *where, size_t len);
/* A change that matched no destination row: halts, or is counted (--on-divergence). */
extern int	rp_pg_divergence(RpPg *pg, const RpPgTable *t, const char *what);
/* Divergences by destination table, for the metrics page: 0 past the last. */
extern int	rp_pg_divergence_get(int i, char *table, size_t len, uint64_t *count);

/* rp_pg_table.c */
extern RpPgTable *rp_pg_table_get(RpPg *pg, const RpRelation *rel);
extern int	rp_pg_table_resolve(RpPg *pg, RpPgTable *t);
extern int	rp_pg_table_schema_change(RpPg *pg, const RpRelation *before, const RpRelation *after,
									  RpSchemaChange change);
extern int	rp_pg_table_ensure_stage(RpPg *pg, RpPgTable *t);
extern char *rp_pg_ident(RpPg *pg, const char *name);
extern void rp_pg_table_free(RpPgTable *t);
/* name is one of the destination table's constraints or indexes (read at resolve) */
extern bool rp_pg_known_constraint(const RpPgTable *t, const char *name);
/*
 * SQL pieces shared by the apply, snapshot and backfill paths.  Column
 * names are quoted; idx NULL means every column but generated ones, qual
 * (or NULL) prefixes each ("s.").
 */
extern int	rp_pg_sql_cols(RpPg *pg, RpBuf *sql, const RpRelation *rel, const int *idx, int n,
						   const char *qual);	/* returns how many it wrote */
/* "a.k1 = b.k1 AND a.k2 = b.k2": the key columns matched between two aliases */
extern void rp_pg_sql_key_match(RpPg *pg, RpBuf *sql, const RpRelation *rel, const int *keycols,
								int nkey, const char *a, const char *b);
/* " ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c, ..." (DO NOTHING for a table of keys only) */
extern void rp_pg_sql_on_conflict(RpPg *pg, RpBuf *sql, const RpRelation *rel, const int *keycols,
								  int nkey);
/*
 * COPY into (cols) FROM STDIN [(FORMAT binary)] on conn: 0 once the server
 * takes data, else -1 with *res its answer (the caller reports it and
 * clears it).
 */
extern int	rp_pg_copy_start(PGconn *conn, const char *into, const char *cols, bool binary, PGresult **res);
/* End a COPY started so: 0, or -1 with *res the first result (the caller reports and clears). */
extern int	rp_pg_copy_end(PGconn *conn, PGresult **res);
/* After a rollback: what the open transaction made for t (staging, the table) is gone. */
extern void rp_pg_table_forget(RpPgTable *t);

/* rp_pg_apply.c */
extern int	rp_pg_apply_change(RpPg *pg, const RpRecord *rec);
extern int	rp_pg_apply_truncate(RpPg *pg, const RpRecord *rec, const RpRelMap *rels);
/* Apply every pending net effect (end of batch, or a barrier). */
extern int	rp_pg_apply_flush(RpPg *pg);
/* History tables apply per source transaction. */
extern int	rp_pg_apply_end_txn(RpPg *pg);
/* Give back every effect map's memory (nothing pending: after a flush, an abort, at close). */
extern void rp_pg_apply_release(RpPg *pg);

#endif							/* RP_PG_H */
