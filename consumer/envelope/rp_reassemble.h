/*
 * rp_reassemble.h
 *    Reassemble snapshot envelopes (rp_envelope.h) from JSON-lines files and
 *    tell each dump complete, truncated, open or conflicting: the library
 *    behind `replicant verify-snapshot`.
 *
 * Input: any number of files of JSON lines, frames in any order, repeated
 * (at-least-once delivery), spread over files and interleaved with other
 * lines.  A line is a frame when it is a JSON object whose "kind" is begin,
 * row, oversize or end and which has a "snapshot_id"; any other line (a
 * change, a checkpoint, a flush line, a dead-letter line) is ignored.  A
 * line that is not valid JSON, or a frame that lacks a field it needs or
 * has one of the wrong type, is skipped with a warning (file, line, byte
 * offset, field; never a value).  Skipping only ignores evidence: it can
 * never make a missing seq look present.
 *
 * Verdicts, per snapshot_id:
 *    complete   an end frame, and every seq in 0 .. row_count-1 present
 *               (duplicates with identical content count once)
 *    truncated  an end frame, and some seq in that range missing
 *    open       no end frame
 *    conflict   two frames disagree: the same seq with different content
 *               (or kind), two ends with different row_count, a row or
 *               stub at or past row_count, or frames that disagree on the
 *               snapshot's store or snapshot_at (then the smallest pair seen
 *               is reported, with the smallest seq of a frame differing
 *               from it, so the verdict does not depend on line order)
 *
 * Memory: per snapshot a paged bitmap of the seqs seen and one of the seqs
 * seen more than once.  Content is compared only for repeated seqs, in a
 * second pass over the files (run only when something repeated), keeping a
 * 64-bit hash per repeated seq.  The rows of the snapshot chosen with
 * rp_reasm_keep_rows() are kept as file offsets and re-read for printing.
 * Files must therefore be regular, re-readable files.
 */
#ifndef RP_REASSEMBLE_H
#define RP_REASSEMBLE_H

#include <stdio.h>

#include "rp_buf.h"
#include "base/rp_uuid7.h"

/* The largest seq (and row_count) accepted: 2^40 - 1. */
#define RP_REASM_MAX_SEQ ((UINT64_C(1) << 40) - 1)

typedef enum RpSnapState
{
	RP_SNAP_COMPLETE,
	RP_SNAP_TRUNCATED,
	RP_SNAP_OPEN,
	RP_SNAP_CONFLICT
} RpSnapState;

typedef struct RpSnapReport
{
	char		id[RP_UUID_TEXT_LEN + 1];	/* canonical, lowercase */
	char	   *store;			/* decoded "store" */
	RpSnapState state;
	bool		has_begin;
	int64_t		total;			/* begin's "total", -1 when absent */
	bool		has_end;
	uint64_t	row_count;		/* end's row_count (when has_end) */
	uint64_t	rows_seen;		/* distinct seqs seen (rows and stubs) */
	uint64_t	oversize;		/* distinct seqs seen as oversize stubs */
	uint64_t	missing;		/* truncated: seqs missing below row_count */
	uint64_t	first_missing;	/* truncated: the smallest of them */
	uint64_t	conflict_seq;	/* conflict: the smallest conflicting seq */
} RpSnapReport;

typedef struct RpReasm RpReasm;

/* Called once per skipped line with a value-free message. */
typedef void (*RpReasmWarn) (void *arg, const char *msg);

extern RpReasm *rp_reasm_new(void);
extern void rp_reasm_free(RpReasm *r);

/* Warnings go to fn (default: none are reported, only counted). */
extern void rp_reasm_set_warn(RpReasm *r, RpReasmWarn fn, void *arg);

/* Keep the row offsets of snapshot id for rp_reasm_write_rows(); before
 * rp_reasm_run().  -1 (rp_fail) when id is not a UUID's text form. */
extern int	rp_reasm_keep_rows(RpReasm *r, const char *id);

/* Read the files (both passes) and settle every verdict.  -1 on an I/O
 * error (rp_fail names the file).  Call once. */
extern int	rp_reasm_run(RpReasm *r, const char *const *paths, int npaths);

/* The snapshots found, sorted by id (UUIDv7: by snapshot time). */
extern size_t rp_reasm_count(const RpReasm *r);
extern const RpSnapReport *rp_reasm_get(const RpReasm *r, size_t i);
extern const RpSnapReport *rp_reasm_find(const RpReasm *r, const char *id);

/*
 * The newest complete dump of store (the largest id: UUIDv7, by snapshot
 * time), or NULL.  A log sink's resumed snapshot leaves the dump that
 * stopped open and writes a new one after it: a reader rebuilding a table
 * takes this one and ignores the open ones (docs/sinks.md).
 */
extern const RpSnapReport *rp_reasm_newest_complete(const RpReasm *r, const char *store);

/* Is rep not complete, and a later complete dump of its store found? */
extern bool rp_reasm_superseded(const RpReasm *r, const RpSnapReport *rep);

/* Lines skipped as malformed (invalid JSON, or a frame missing a field). */
extern uint64_t rp_reasm_skipped(const RpReasm *r);

/*
 * Write the kept snapshot's "record" objects in seq order, one per line,
 * leaving out oversize stubs.  -1 (rp_fail) when it is not complete or on
 * an I/O error.
 */
extern int	rp_reasm_write_rows(RpReasm *r, FILE *out);

/*
 * The report line (no newline):
 *    <id> <store> complete rows=N
 *    <id> <store> truncated rows=N missing=K (first missing seq S)
 *    <id> <store> open rows_seen=N
 *    <id> <store> conflict seq=S
 * A store with spaces, control characters, quotes or backslashes, or an
 * empty one, is printed as a JSON string.
 */
extern void rp_reasm_format(const RpSnapReport *rep, RpBuf *out);

extern const char *rp_snap_state_name(RpSnapState s);

#endif							/* RP_REASSEMBLE_H */
