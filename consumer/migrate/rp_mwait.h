/*
 * rp_mwait.h
 *    replicant wait: until the mirror's durable checkpoint (the row of the
 *    bookkeeping schema's checkpoint table for the source's system id and
 *    the slot) has passed an LSN of the source.  Pure libpq SQL: the
 *    checkpoint is read on the destination, the target on the source.
 *
 * "Passed" is end_lsn >= target: every source transaction that committed
 * before the target was in the WAL ends at or before it, and the mirror
 * commits its data with that row (G1), so what was written on the source
 * before the target is on the destination.  An idle source still gets
 * there: the mirror records the keepalive's position when nothing is in
 * flight (rp_sink.h: advance).
 */
#ifndef RP_MWAIT_H
#define RP_MWAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct RpMwaitOptions
{
	const char *src_conninfo;
	const char *dst_conninfo;
	const char *slot;
	const char *bookkeeping_schema; /* NULL: "replicant" */
	uint64_t	target;			/* 0: the source's pg_current_wal_lsn() when
								 * called */
	int			timeout_s;		/* 0: no limit */
	FILE	   *progress;		/* the lag's lines, or NULL */
	bool		in_place;		/* progress is a terminal: redraw one line */
} RpMwaitOptions;

typedef struct RpMwaitResult
{
	uint64_t	target;
	uint64_t	reached;		/* the checkpoint's end_lsn last read (0: no
								 * row yet) */
	bool		have_row;
} RpMwaitResult;

/* Exit statuses of `replicant wait` beyond 0 (passed) and 2 (usage). */
#define RP_MWAIT_TIMEOUT 1
#define RP_MWAIT_UNREADABLE 3

/*
 * Wait; 0 when the checkpoint passed the target, RP_MWAIT_TIMEOUT after
 * timeout_s (res says where it stood), RP_MWAIT_UNREADABLE with rp_fail()
 * when a side could not be read (also on a stop request: SIGINT).
 */
extern int	rp_mwait_run(const RpMwaitOptions *opts, RpMwaitResult *res);

/* The pure part: the lag in bytes (0 once passed). */
extern uint64_t rp_mwait_lag(uint64_t target, uint64_t reached);

/*
 * One progress line into buf (no newline): the target, the checkpoint
 * reached and the lag, as "waiting for 0/16B3748: checkpoint 0/16A0000,
 * 78664 bytes behind" (or "no checkpoint row yet").
 */
extern void rp_mwait_format(char *buf, size_t len, uint64_t target, bool have_row,
							uint64_t reached);

#endif							/* RP_MWAIT_H */
