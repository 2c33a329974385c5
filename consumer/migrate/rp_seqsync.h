/*
 * rp_seqsync.h
 *    replicant sync-sequences: the destination's sequences brought up to
 *    the source's, never moved back.  Pure libpq SQL on two sessions (no
 *    stream); the same schema mapping (--schema-prefix), bookkeeping
 *    schema and table selection (include_tables / exclude_tables) as the
 *    mirror.  docs/operations.md has the rules; the summary:
 *
 * Selected: a sequence owned by a selected table (serial, identity) or
 * used by a column default of one (nextval('s')); with no include list,
 * also every sequence of a non-system schema that no table owns or uses,
 * unless exclude_tables names it.  A sequence owned or used only by
 * tables outside the selection is left alone.
 *
 * Target: the destination's next value (what nextval would return) is
 * made at least the source's next value plus the margin, in the
 * sequence's direction (down for a negative increment); a destination
 * already there or further is not touched.  setval(s, next, false), so
 * the very next nextval returns it.
 */
#ifndef RP_SEQSYNC_H
#define RP_SEQSYNC_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "snapshot/rp_snapcat.h"

typedef struct RpSeqSyncOptions
{
	const char *src_conninfo;
	const char *dst_conninfo;
	RpSnapSelect select;		/* the plugin's include_tables /
								 * exclude_tables */
	const char *schema_prefix;	/* destination schema = prefix || source
								 * schema */
	const char *bookkeeping_schema; /* NULL: "replicant" */
	int64_t		margin;			/* >= 0 */
	bool		create;			/* --create-tables: create a missing sequence */
	bool		verbose;		/* one line per sequence on stderr */
	const char *progname;		/* the prefix of its lines */
} RpSeqSyncOptions;

typedef struct RpSeqSyncStats
{
	int			selected;
	int			advanced;		/* setval run */
	int			kept;			/* already at or past the target */
	int			created;
	int			missing;		/* absent, not created (no --create-tables) */
} RpSeqSyncStats;

/* What a sequence's position is: its last_value and is_called. */
typedef struct RpSeqPos
{
	int64_t		last_value;
	bool		is_called;
} RpSeqPos;

typedef enum RpSeqAction
{
	RP_SEQ_KEEP,				/* the destination is at or past the target */
	RP_SEQ_SET,					/* setval(seq, *next, false) */
	RP_SEQ_RANGE				/* the target is outside [min, max] */
} RpSeqAction;

/*
 * The pure part: what to do with a destination sequence at dst (increment
 * inc, bounds min..max) so that its next value is at least the source's
 * next value (src) plus margin, in inc's direction.  *next gets the value
 * to set for RP_SEQ_SET.
 */
extern RpSeqAction rp_seqsync_decide(RpSeqPos src, RpSeqPos dst, int64_t inc, int64_t min,
									 int64_t max, int64_t margin, int64_t *next);

/*
 * The pure part of the selection: a sequence that nlinks tables own or use
 * (linked_selected: one of them passes sel), or none, named schema.name.
 */
extern bool rp_seqsync_selected(const RpSnapSelect *sel, int nlinks, bool linked_selected,
								const char *schema, const char *name);

/* The next value nextval would return at pos (saturating at the int64 ends). */
extern int64_t rp_seqsync_next(RpSeqPos pos, int64_t inc);

/*
 * Sync every selected sequence; 0 when all are synced (created or
 * present), 1 when some were missing and not created (named in warnings),
 * -1 with rp_fail() on an error (what was set before it stays set: each
 * setval is its own, and moving forward is always safe).
 */
extern int	rp_seqsync_run(const RpSeqSyncOptions *opts, RpSeqSyncStats *stats);

/*
 * The same, on open sessions (src: any session of the source; dst: a
 * destination session with search_path pinned): the snapshot's hook.
 */
extern int	rp_seqsync_conns(PGconn *src, PGconn *dst, const RpSeqSyncOptions *opts,
							 RpSeqSyncStats *stats);

#endif							/* RP_SEQSYNC_H */
