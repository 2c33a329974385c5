/*
 * rp_mirror_int.h
 *    The PostgreSQL mirror sink's own state and the functions its files
 *    share, by file, top down (see rp_mirror.c for the order: a file calls
 *    only those below it).  Callers outside the package use rp_mirror.h.
 */
#ifndef RP_MIRROR_INT_H
#define RP_MIRROR_INT_H

#include <libpq-fe.h>
#include <pthread.h>

#include "rp_alloc.h"
#include "rp_buf.h"
#include "rp_decode.h"
#include "rp_read.h"
#include "stream/rp_sink.h"
#include "sinks/mirror/rp_mirror.h"

/* RpSink.name of a mirror: how rp_mirror_divergence_get knows one */
#define RP_MIRROR_SINK_NAME "postgresql"
/* the most tables whose divergences are counted, by name */
#define RP_MIRROR_DIVERGENCE_TABLES 256

/*
 * A datum kind of the sink's own effect rows (never on the wire): the
 * destination's text of a value, read back from the destination.
 */
#define RP_MIRROR_DATUM_TEXT 't'

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
	bool		partial;		/* some column is unchanged TOAST: keep its
								 * value */
	bool		fresh;			/* the batch's first change of the key was an
								 * INSERT */
	uint32_t	key_len;		/* a key is an index entry's columns: small */
	size_t		key_off;		/* serialized key in the table's arena */
	size_t		row_off;		/* serialized row in the table's arena */
	size_t		row_len;
	uint64_t	hash;
} RpEffect;

/* The statements a table may have prepared (rp_mirror_pipeline.c). */
typedef enum RpMirrorStmt
{
	RP_MIRROR_STMT_UPSERT,
	RP_MIRROR_STMT_DELETE,
	RP_MIRROR_STMT_INSERT,		/* a table without identity */
	RP_MIRROR_STMT_FRESH,		/* a key first seen as an INSERT */
	RP_MIRROR_NSTMTS
}			RpMirrorStmt;

typedef struct RpMirrorTable
{
	uint32_t	relid;
	RpRelation *rel;			/* the description we apply with */
	char	   *qname;			/* quoted destination name */

	/*
	 * What UPDATE, DELETE, TRUNCATE and SELECT name: "ONLY qname", so a
	 * destination inheritance parent (a schema from pg_dump) never reaches
	 * its children, which are tables of their own in the mirror; qname for a
	 * partitioned table (routed to its partitions).
	 */
	char	   *qrel;
	char	   *dest_schema;
	char	   *dest_name;
	int		   *keycols;		/* indexes into rel->cols */
	int			nkey;
	bool		full_match;		/* REPLICA IDENTITY FULL without a key */
	bool		no_identity;	/* updates and deletes cannot be applied */

	/*
	 * no_identity: the batch's inserts are a multiset, each its own effect
	 * under a key of its own (this count), never folded into one.
	 */
	uint64_t	appended;
	bool		history;
	bool		resolved;
	bool		txn_dirty;		/* resolved (created, altered) or staged in
								 * the open transaction */
	bool		binary;			/* COPY in binary: every column qualifies
								 * (rp_pgbin.h) */

	/*
	 * full_match: per column, the destination's send function and type
	 * (rp_mirror_table.c)
	 */
	char	  **match_send;		/* quoted, qualified; NULL: the type has none */
	char	  **match_type;		/* format_type() of the destination column */

	/*
	 * the destination's constraint and index names: errors name only these
	 * (G4)
	 */
	char	  **constraints;
	int			nconstraints;
	bool		text_datums;	/* the pending effects hold values read back
								 * as text */
	char	   *stage_ups;		/* temporary staging tables, quoted */
	char	   *stage_del;

	/*
	 * staging tables that hold rows of an earlier flush of the open
	 * transaction (1: stage_ups, 2: stage_del): emptied before they are used
	 * again (a commit empties them: ON COMMIT DELETE ROWS)
	 */
	uint8_t		stage_used;
	char	   *stmts[RP_MIRROR_NSTMTS];	/* prepared on the session, or
											 * NULL */
	bool		has_refs;		/* a pending row holds a value by reference */
	/* net effects of the pending batch */
	RpEffect   *effects;
	int			neffects;
	int			capeffects;
	int		   *slots;			/* open addressing: effect index + 1 */
	int			nslots;
	RpBuf		arena;
	int			order;			/* place in the batch's touched list + 1
								 * (rp_mirror_touch), 0: not in it */
	size_t		held;			/* bytes of the above, as charged
								 * (rp_mirror_apply.c) */
} RpMirrorTable;

/*
 * What a table's effect map starts at, and keeps after a batch: small, since
 * a batch over many tables touches most of them with a few rows (the map
 * grows by doubling for the ones it touches more).
 */
#define RP_MIRROR_ARENA_MIN 1024
#define RP_MIRROR_EFFECTS_MIN 16

/* Changes the destination had no row for, by destination table (rp_mirror.c). */
typedef struct RpMirrorDivergences
{
	pthread_mutex_t lock;		/* the metrics thread reads them */
	int			n;
	char	   *table[RP_MIRROR_DIVERGENCE_TABLES]; /* "schema.name" */
	uint64_t	count[RP_MIRROR_DIVERGENCE_TABLES];
} RpMirrorDivergences;

typedef struct RpMirror
{
	RpMirrorOptions opts;
	/* from the caller's environment at open (rp_sink.h) */
	RpBackfill *backfill;		/* or NULL */
	RpSinkBatchHook batch_hook; /* before_commit NULL: none */
	RpSink	   *sink;			/* ours: its spill is the memory budget */
	PGconn	   *conn;
	RpMirrorTable **tables;
	int			ntables;
	int			captables;
	int		   *tabidx;			/* open addressing by relid: index + 1 */
	int			ntabidx;
	/* tables with pending effects, in the order the batch first touched them */
	RpMirrorTable **touched;
	int			ntouched;
	int			captouched;
	bool		touched_history;	/* a history table among them */
	uint64_t	stage_seq;
	uint64_t	stmt_seq;
	/* prepared statements no table wants, deallocated by the next pipeline */
	char	  **stale;
	int			nstale;
	int			capstale;
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
	bool		slot_locked;	/* a session held the slot's advisory lock
								 * (rp_mirror.c) */
	/* a stop's cancel request comes from another thread (RpSink.interrupt) */
	pthread_mutex_t cancel_lock;
	PGcancel   *cancel;			/* of conn, or NULL */
	int			max_ident;		/* the destination's max_identifier_length */
	/* the bookkeeping schema, quoted, and SQL expanded with it (rp_mirror_bk) */
	pthread_mutex_t bk_lock;	/* snapshot workers expand too */
	char	   *bk;
	const char **bk_tmpl;
	char	  **bk_sql;
	int			nbk;
	int			capbk;
	size_t		held;			/* every table's effect map (arena, effects,
								 * slots) */
	struct RpSpill *budget;		/* where held is charged (sink->spill when it
								 * began) */
	uint64_t	bound_flushes;	/* effect maps applied early to stay in the
								 * budget (atomic: the metrics thread reads
								 * it) */
	bool		refs;			/* a row points into the record being applied */
	RpMirrorDivergences div;
	struct RpMirrorSnap *snap;	/* the initial snapshot's state
								 * (rp_mirror_snapshot.c) */
	struct RpMirrorBf *bf;		/* the open backfill window
								 * (rp_mirror_backfill.c) */
} RpMirror;

/* Query parameters as text, built up one by one. */
typedef struct RpMirrorParams
{
	RpBuf		strings;
	size_t	   *offs;
	bool	   *isnull;
	int			n;
	int			cap;
} RpMirrorParams;

/* Which effects a COPY takes. */
typedef enum RpMirrorStageWhich
{
	RP_MIRROR_STAGE_DELETES,	/* keys of deletes */
	RP_MIRROR_STAGE_UPSERTS,	/* full rows of upserts that are not fresh */
	RP_MIRROR_STAGE_FRESH,		/* full rows of fresh upserts */
	RP_MIRROR_STAGE_ALL_UPSERTS /* full rows of every upsert */
} RpMirrorStageWhich;

/* Columns that are applied: generated columns are the destination's business. */
static inline bool
rp_mirror_applied(const RpColumn *c)
{
	return (c->flags & RP_COL_GENERATED) == 0;
}

/* A row's datum kind (never on the wire): a large value left where it lies, by address */
#define RP_MIRROR_DATUM_REF 'r'

/*
 * Column i of a serialized row (per column: kind u8, len u32, bytes; kind
 * RP_MIRROR_DATUM_REF holds a pointer and length instead).  Inline: the
 * staging COPY calls it for every column of every row.
 */
static inline void
rp_mirror_row_get(const RpBuf *arena, size_t off, int i, RpDatum *d)
{
	const unsigned char *p = (const unsigned char *) arena->data + off;

	for (;;)
	{
		uint32_t	len = rp_load_u32(p + 1);

		if (i-- == 0)
		{
			d->kind = p[0];
			d->len = len;
			d->data = p + 5;
			if (d->kind == RP_MIRROR_DATUM_REF)
			{
				d->kind = RP_DATUM_VALUE;
				memcpy(&d->data, p + 5, sizeof(d->data));
				memcpy(&d->len, p + 5 + sizeof(d->data), sizeof(d->len));
			}
			return;
		}
		p += 5 + len;
	}
}

/* Does a COPY of which take ef? */
static inline bool
rp_mirror_stage_wants(const RpEffect *ef, RpMirrorStageWhich which)
{
	switch (which)
	{
		case RP_MIRROR_STAGE_DELETES:
			return ef->op == RP_EFFECT_DELETE;
		case RP_MIRROR_STAGE_UPSERTS:
			return ef->op == RP_EFFECT_UPSERT && !ef->partial && !ef->fresh;
		case RP_MIRROR_STAGE_FRESH:
			return ef->op == RP_EFFECT_UPSERT && !ef->partial && ef->fresh;
		case RP_MIRROR_STAGE_ALL_UPSERTS:
			return ef->op == RP_EFFECT_UPSERT && !ef->partial;
	}
	return false;
}

/* The batch touches t for the first time: it is applied in that order. */
static inline void
rp_mirror_touch(RpMirror *pg, RpMirrorTable *t)
{
	if (t->order > 0)
		return;
	if (pg->ntouched == pg->captouched)
	{
		pg->captouched = pg->captouched ? pg->captouched * 2 : 64;
		pg->touched = rp_realloc(pg->touched, sizeof(RpMirrorTable *) * (size_t) pg->captouched);
	}
	pg->touched[pg->ntouched++] = t;
	t->order = pg->ntouched;
	pg->touched_history |= t->history;
}

/* rp_mirror_snapshot.c: the initial snapshot's callbacks */
/* Set the snapshot callbacks of a mirror sink (s->priv is its RpMirror). */
extern void rp_mirror_snapshot_install(RpSink *s);

/* Free what the snapshot kept (its sessions, its tables' plans): at close. */
extern void rp_mirror_snapshot_free(RpMirror *pg);

/* rp_mirror_schema.c */
/* RpSink.handle_schema_change, inside the open destination transaction. */
extern int	rp_mirror_table_schema_change(RpMirror *pg, const RpRelation *before, const RpRelation *after,
										  RpSchemaChange change);

/* A row change of the transaction being applied. */
extern int	rp_mirror_apply_change(RpMirror *pg, const RpRecord *rec);

/* A TRUNCATE: a barrier; history tables close their versions instead. */
extern int	rp_mirror_apply_truncate(RpMirror *pg, const RpRecord *rec, const RpRelMap *rels);

/*
 * rp_mirror_backfill.c: the mirror's side of a backfill (backfill/rp_backfill.h):
 * the watermark messages in the stream, the window of keys the stream
 * changes between them, and each chunk applied less those keys, with its
 * progress token, in the destination transaction of the batch.
 */
/* The mirror's backfill state (pg->bf), made at open and freed at close. */
extern void rp_mirror_backfill_init(RpMirror *pg);
extern void rp_mirror_backfill_free(RpMirror *pg);

/*
 * A logical message: 1 when it is a backfill watermark (handled, no other
 * routing), 0 when it is not, -1 after rp_fail().
 */
extern int	rp_mirror_backfill_message(RpMirror *pg, bool transactional, const char *prefix,
									   size_t prefix_len, const unsigned char *content, uint32_t len);

/* A row change of t is being applied: remember its key if t has an open window. */
extern void rp_mirror_backfill_note(RpMirror *pg, const RpMirrorTable *t, const RpRecord *rec);

/* A TRUNCATE is being applied: a window on one of its tables keeps none of its chunk. */
extern void rp_mirror_backfill_truncate(RpMirror *pg, const RpRecord *rec);

/* Is a window open (early apply declines then: an aborted transaction's keys must not count)? */
extern bool rp_mirror_backfill_window_open(const RpMirror *pg);

/* The destination transaction committed / rolled back. */
extern void rp_mirror_backfill_committed(RpMirror *pg);
extern void rp_mirror_backfill_aborted(RpMirror *pg);

/* rp_mirror_apply.c */
/* History tables apply per source transaction. */
extern int	rp_mirror_apply_end_txn(RpMirror *pg);

/* Apply every pending net effect (end of batch, or a barrier). */
extern int	rp_mirror_apply_flush(RpMirror *pg);

/* rp_mirror_history.c */
/* One source transaction's effects on history table t: versions closed and opened. */
extern int	rp_mirror_apply_history(RpMirror *pg, RpMirrorTable *t);

/* rp_mirror_pipeline.c */
/* Does t's pending set go the short way (small: prepared statements in a pipeline)? */
extern bool rp_mirror_pipeline_wants(const RpMirror *pg, const RpMirrorTable *t);

/*
 * The pending effects of tables[0..n) (each one rp_mirror_pipeline_wants)
 * in one pipeline, but those with unchanged TOAST (the caller's); stale
 * statements are deallocated first.  The effects are not cleared.
 */
extern int	rp_mirror_pipeline_apply(RpMirror *pg, RpMirrorTable **tables, int n);

/* rp_mirror_stage.c */
/*
 * COPY into (cols) FROM STDIN [(FORMAT binary)] on conn: 0 once the server
 * takes data, else -1 with *res its answer (the caller reports it and
 * clears it).
 */
extern int	rp_mirror_copy_start(PGconn *conn, const char *into, const char *cols, bool binary, PGresult **res);

/* End a COPY started so: 0, or -1 with *res the first result (the caller reports and clears). */
extern int	rp_mirror_copy_end(PGconn *conn, PGresult **res);

/* t's staging tables (temporary, one pair per session), made when missing. */
extern int	rp_mirror_stage_ensure(RpMirror *pg, RpMirrorTable *t);

/* COPY t's pending effects of kind which into the staging table stage. */
extern int	rp_mirror_stage_effects(RpMirror *pg, RpMirrorTable *t, const char *stage, RpMirrorStageWhich which);

/* rp_mirror_effect.c */
/* The pending effect of key in t, or NULL. */
extern RpEffect *rp_mirror_effect_find(RpMirrorTable *t, const RpBuf *key);

/* t's key columns of tup, serialized into key. */
extern void rp_mirror_key_of(const RpMirrorTable *t, const RpTuple *tup, RpBuf *key);

/* Fold a delete of tup's key into t's map (key: scratch). */
extern void rp_mirror_effect_delete(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key);

/* Fold an insert or update into t's map; may_ref: a large value may stay in the record. */
extern void rp_mirror_effect_upsert(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key, bool insert, bool may_ref);

/* An insert into a table without a replica identity: an effect of its own (a multiset). */
extern void rp_mirror_effect_append(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key);

/* Forget t's pending effects (applied), keeping the memory (t stays touched). */
extern void rp_mirror_effects_clear(RpMirrorTable *t);

/* The batch's touched list emptied: every pending effect was applied or dropped. */
extern void rp_mirror_untouch_all(RpMirror *pg);

/* What the effect maps may hold before they are applied early (G5). */
extern size_t rp_mirror_effects_limit(const RpMirror *pg);

/* Charge what t's map holds now to the memory budget. */
extern void rp_mirror_effects_account(RpMirror *pg, RpMirrorTable *t);

/* Give back every effect map's memory (nothing pending: after a flush, an abort, at close). */
extern void rp_mirror_effects_release(RpMirror *pg);

/* rp_mirror_table.c */
/* After a rollback: what the open transaction made for t (staging, the table) is gone. */
extern void rp_mirror_table_forget(RpMirror *pg, RpMirrorTable *t);

/*
 * Check (or create, --create-tables) the destination tables of ts[0..n) that
 * are not resolved yet and read their catalog facts, in one catalog query
 * (two when some are created); the first that fails halts, as
 * rp_mirror_table_resolve would.
 */
extern int	rp_mirror_tables_resolve(RpMirror *pg, RpMirrorTable **ts, int n);

/* Take rel as t's description (its key, its history mode). */
extern void rp_mirror_table_describe(RpMirror *pg, RpMirrorTable *t, const RpRelation *rel);

/* The mapping of rel, made on first use (not yet resolved). */
extern RpMirrorTable *rp_mirror_table_get(RpMirror *pg, const RpRelation *rel);

/* Free t and everything it holds (at close: the session's objects go with it). */
extern void rp_mirror_table_free(RpMirror *pg, RpMirrorTable *t);

/* Check (or create, --create-tables) t's destination table and read its catalog facts. */
extern int	rp_mirror_table_resolve(RpMirror *pg, RpMirrorTable *t);

/* rp_mirror_sql.c */
/*
 * SQL pieces shared by the apply, snapshot and backfill paths.  Column
 * names are quoted; idx NULL means every column but generated ones, qual
 * (or NULL) prefixes each ("s.").
 */
extern int	rp_mirror_sql_cols(RpMirror *pg, RpBuf *sql, const RpRelation *rel, const int *idx, int n,
							   const char *qual);	/* returns how many it
													 * wrote */

/* "a.k1 = b.k1 AND a.k2 = b.k2": the key columns matched between two aliases */
extern void rp_mirror_sql_key_match(RpMirror *pg, RpBuf *sql, const RpRelation *rel, const int *keycols,
									int nkey, const char *a, const char *b);

/*
 * "ROW(a.c::text, ...) IS [NOT] DISTINCT FROM ROW(b.c::text, ...)" over the
 * columns an upsert sets (not the key, not generated): do two rows read the
 * same?  Compared as text: every type has an output function, where json
 * or point have no equality, and text tells 1.0 from 1.00, which numeric
 * equality would not.
 */
extern void rp_mirror_sql_same_row(RpBuf *sql, const RpRelation *rel, const int *keycols, int nkey,
								   const char *a, const char *b, bool same);

/*
 * " ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c, ..." (DO NOTHING for a
 * table of keys only); with alias (the target's, "INSERT INTO t AS alias"),
 * only rows that differ are updated.
 */
extern void rp_mirror_sql_on_conflict(RpMirror *pg, RpBuf *sql, const RpRelation *rel, const int *keycols,
									  int nkey, const char *alias);

/* Statement parameters as text (RpMirrorParams): build, run, free. */
extern void rp_mirror_params_init(RpMirrorParams *p);
extern int	rp_mirror_params_datum(RpMirrorParams *p, uint8_t enc, const RpDatum *d);
extern int	rp_mirror_params_text(RpMirrorParams *p, const char *s);
extern int	rp_mirror_params_exec(RpMirror *pg, RpMirrorTable *t, const char *sql, RpMirrorParams *p, const char *what);
extern int	rp_mirror_params_exec_count(RpMirror *pg, RpMirrorTable *t, const char *sql, RpMirrorParams *p, const char *what);
extern void rp_mirror_params_free(RpMirrorParams *p);

/*
 * " AND (a.c IS DISTINCT FROM b.c OR ...)" over the columns cols[i] marks,
 * comparing exact images (send forms: numeric 1.0 and 1.00 differ), so an
 * update that changes nothing writes nothing (no dead tuple, no WAL, no
 * trigger).  params non-NULL: the right side of column i is $params[i]
 * cast to the column's type instead of b.c.  Nothing when none is marked.
 */
extern void rp_mirror_sql_changed(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, const bool *cols,
								  const char *a, const char *b, const int *params);

/* "alias.col IS NOT DISTINCT FROM $param", as the type compares (full_match tables). */
extern void rp_mirror_match_expr(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, int col, int param, const char *alias);

/* Run sql with n datums as its parameters. */
extern int	rp_mirror_exec_datums(RpMirror *pg, RpMirrorTable *t, const char *sql, int n, const RpDatum *datums,
								  const uint8_t *encs, const char *what);

/* The columns of tup to write (skip_unchanged: not unchanged TOAST): how many. */
extern int	rp_mirror_collect(const RpMirrorTable *t, const RpTuple *tup, bool skip_unchanged, RpDatum *datums,
							  uint8_t *encs, int *which);

/*
 * Per column of t: does an upsert write it (applied, not a key column)?  *n
 * gets how many do; the caller frees the array.
 */
extern bool *rp_mirror_value_cols(const RpMirrorTable *t, int *n);

/* "c = from.c, ..." over the columns cols marks (an UPDATE's or ON CONFLICT's SET list). */
extern void rp_mirror_sql_set(RpBuf *sql, const RpMirrorTable *t, const bool *cols, const char *from);

/* "INSERT INTO t (cols) VALUES ($1, ...)" for the columns which. */
extern void rp_mirror_sql_insert_values(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, const int *which, int n,
										const char *extra_cols, const char *extra_vals);

/* rp_mirror_divergence.c */
/* A change that matched no destination row: halts, or is counted (--on-divergence). */
extern int	rp_mirror_divergence(RpMirror *pg, const RpMirrorTable *t, const char *what);

/* rp_mirror_session.c */
/*
 * A destination session on conninfo (a connection string or URI): its
 * application_name falls back to appname, notices are dropped (they can
 * quote values, G4), search_path is pinned to '' (every name we send is
 * qualified and quoted), synchronous_commit is as asked, and on PostgreSQL
 * 14+ a statement of a consumer that died ends within a second
 * (client_connection_check_interval), and session_replication_role is role
 * (NULL: replica).  NULL after rp_fail(), its message prefixed with who (""
 * or "backfill: ").  The caller PQfinish()es it.
 */
extern PGconn *rp_mirror_session_open(const char *conninfo, const char *appname,
									  bool synchronous_commit, const char *role, const char *who);

/* rp_mirror_fail_result for a session other than pg->conn */
extern int	rp_mirror_fail_conn(PGconn *conn, PGresult *res, const char *what, const RpMirrorTable *t);

/*
 * tmpl with every "@bk" replaced by the quoted bookkeeping schema; the
 * string lives as long as the sink (tmpl must be a literal).  Thread-safe.
 */
extern const char *rp_mirror_bk(RpMirror *pg, const char *tmpl);

/* name is one of the destination table's constraints or indexes (read at resolve) */
extern bool rp_mirror_known_constraint(const RpMirrorTable *t, const char *name);

/*
 * " on table T column "c" constraint "k"": the names of an error that the
 * consumer knows itself (t's table, columns and constraints); a name the
 * server reports that is not one of them is left out, since a trigger can
 * put anything there (G4).
 */
extern void rp_mirror_diag_where(const PGresult *res, const RpMirrorTable *t, char *where, size_t len);
extern int	rp_mirror_fail_result(RpMirror *pg, PGresult *res, const char *what, const RpMirrorTable *t);
extern int	rp_mirror_exec(RpMirror *pg, const char *sql, const char *what, const RpMirrorTable *t);
extern int	rp_mirror_exec_params(RpMirror *pg, const char *sql, int n, const char *const *vals,
								  const char *what, const RpMirrorTable *t);

/*
 * What the session holds for t (staging tables, prepared statements) is no
 * longer t's: on a live session the statements are deallocated by the next
 * pipeline, on a session that is gone they are forgotten.
 */
extern void rp_mirror_session_drop_objects(RpMirror *pg, RpMirrorTable *t, bool session_alive);

/* Keep the cancel handle of the session now open (RpSink.interrupt). */
extern void rp_mirror_set_cancel(RpMirror *pg);

/* The session, opened (again) when it is not: slot locked, bookkeeping tables there. */
extern int	rp_mirror_connect(RpMirror *pg);

/* The checkpoint stored for our slot: 1 with *ck, 0 when none. */
extern int	rp_mirror_read_checkpoint(RpMirror *pg, RpCheckpoint *ck);

/* BEGIN and lock the checkpoint row; *done gets the commit LSN it holds. */
extern int	rp_mirror_begin(RpMirror *pg, const RpCheckpoint *ck, uint64_t *done);

/* Advance the checkpoint (never backwards) and COMMIT. */
extern int	rp_mirror_session_commit(RpMirror *pg, const RpCheckpoint *ck);

#endif							/* RP_MIRROR_INT_H */
