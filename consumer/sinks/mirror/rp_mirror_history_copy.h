/*
 * rp_mirror_history_copy.h
 *    Snapshot and backfill rows merged into history tables as versions
 *    (rp_mirror_history_copy.c).
 */
#ifndef RP_MIRROR_HISTORY_COPY_H
#define RP_MIRROR_HISTORY_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/rp_sink.h"

struct RpMirror;
struct RpMirrorTable;

/* "LSN|ms": the snapshot's consistent point and the time its versions open at. */
extern void rp_mirror_history_mark_format(uint64_t lsn, int64_t at_ms, char *out, size_t outlen);
extern bool rp_mirror_history_mark_parse(const char *s, uint64_t *lsn, int64_t *at_ms);

/* at_ms as a timestamptz SQL expression. */
extern void rp_mirror_history_time_sql(int64_t at_ms, char *out, size_t outlen);

/*
 * The time the versions of ctx's snapshot open at: chosen by the first
 * history table of the consistent point, kept with the snapshot progress.
 * 0, or -1 after rp_fail().  On pg->conn (the snapshot plan's lock held).
 */
extern int	rp_mirror_history_snap_time(struct RpMirror *pg, const RpSnapshotCtx *ctx, int64_t *at_ms);

/* CREATE TEMP TABLE stage: rel's applied columns of t, no constraints. */
extern void rp_mirror_history_stage_ddl(struct RpMirror *pg, RpBuf *b, const struct RpMirrorTable *t,
										const RpRelation *rel, const char *stage);

/*
 * Two statements merging stage into t as versions opened at (lsn, time_sql):
 * a changed row's open version closes, a row without an open version opens.
 */
extern void rp_mirror_history_merge_sql(struct RpMirror *pg, RpBuf *b, const struct RpMirrorTable *t,
										const RpRelation *rel, const char *stage, const char *lsn,
										const char *time_sql);

/* At completion: close the open versions of keys not in seen, then drop seen. */
extern void rp_mirror_history_retire_sql(struct RpMirror *pg, RpBuf *b, const struct RpMirrorTable *t,
										 const RpRelation *rel, const char *seen, const char *lsn,
										 const char *time_sql);

#endif
