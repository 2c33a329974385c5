/*
 * rp_snapresume.h
 *    Where a log sink's (stdout, file, exec) stopped snapshot stands, so
 *    that the same command run again resumes it: a small progress file in
 *    the state directory, <state_dir>/<slot>.snapshot, replaced atomically
 *    (written, fsynced, renamed).
 *
 *    replicant-snapshot-progress 1
 *    lsn X/Y          the slot's consistent point: the stream starts there
 *    offset N         file sink: the log's bytes that are durable (0 else)
 *    done RELID       one line per table whose dump ended and was delivered
 *
 * Tables not done are dumped again whole, under a new snapshot, as a new
 * dump (a new snapshot_id); the dump that stopped stays in the log, open
 * (no end frame).  The stream from the consistent point then replays the
 * changes the later dump already holds: a reader applies them by key
 * (docs/sinks.md).  Nothing in the file is a row value.
 */
#ifndef RP_SNAPRESUME_H
#define RP_SNAPRESUME_H

#include <stdbool.h>
#include <stdint.h>

typedef struct RpSnapResume
{
	char	   *path;			/* the progress file, or NULL: not kept */
	bool		have;			/* a stopped snapshot's progress is known */
	uint64_t	lsn;			/* its consistent point */
	uint64_t	offset;			/* file sink: durable bytes of the log */
	int			ndone;
	uint32_t   *done;			/* relids whose dump ended */
} RpSnapResume;

/* The text of sr's progress; the caller frees it. */
extern char *rp_snapresume_format(const RpSnapResume *sr);

/* Parse text into sr (path untouched); false when malformed. */
extern bool rp_snapresume_parse(const char *text, RpSnapResume *sr);

/* Take path (NULL: nothing is kept) and read it when it exists: 0, -1 (rp_fail). */
extern int	rp_snapresume_open(RpSnapResume *sr, const char *path);

/* Record the consistent point (first) and, when relid != 0, a table done. */
extern void rp_snapresume_note(RpSnapResume *sr, uint64_t lsn, uint32_t relid);
extern bool rp_snapresume_is_done(const RpSnapResume *sr, uint32_t relid);

/* Replace the file with sr's progress (atomically): 0, -1 (rp_fail). */
extern int	rp_snapresume_store(RpSnapResume *sr);

/*
 * The sink's snapshot_progress: with progress known, a token saying the
 * table is done, or (not done) one without a dump that makes it copied
 * again whole (rp_snapshot.c); else 0.
 */
extern int	rp_snapresume_token(const RpSnapResume *sr, uint32_t relid, char **token);

/* Forget the progress (the snapshot completed): the file is removed. */
extern int	rp_snapresume_clear(RpSnapResume *sr);
extern void rp_snapresume_free(RpSnapResume *sr);

#endif							/* RP_SNAPRESUME_H */
