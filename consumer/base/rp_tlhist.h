/*
 * rp_tlhist.h
 *    Timeline histories: may a checkpoint taken on one timeline be resumed
 *    on a server that is now on another (a promoted standby)?
 *
 * A server's history file for timeline N (the replication command
 * TIMELINE_HISTORY N) lists every ancestor timeline with the position at
 * which it was left: "parent-TLI <tab> switch-LSN <tab> reason", one line
 * each, oldest first.  The WAL before a switch point is the same on both
 * sides of it; after it, the two timelines are different histories.  So a
 * checkpoint on timeline T may go on on timeline N only when T is one of
 * N's ancestors and everything the consumer holds (the checkpoint's end,
 * and whatever it received after it) lies at or below T's switch point.
 *
 * The module is pure: the text arrives already read.
 */
#ifndef RP_TLHIST_H
#define RP_TLHIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct RpTlHistEntry
{
	uint32_t	tli;			/* an ancestor timeline */
	uint64_t	switchpoint;	/* where it was left: the child's first byte */
}			RpTlHistEntry;

/*
 * Parse a history file's text into *entries (caller frees with rp_free;
 * NULL when there are none).  Blank lines and '#' comments are skipped, as
 * the server does.  -1 when a line does not read or the timelines do not
 * increase (then *entries is NULL).
 */
extern int	rp_tlhist_parse(const char *text, size_t len, RpTlHistEntry * *entries, int *n);

typedef enum RpTlVerdict
{
	RP_TL_SAME,					/* the checkpoint is on the server's timeline */
	RP_TL_FOLLOWS,				/* an ancestor, everything held below its
								 * switch point: resume on the new one */
	RP_TL_NEWER,				/* the checkpoint's timeline is after the
								 * server's */
	RP_TL_NOT_ANCESTOR,			/* the server's history does not hold it
								 * (another branch) */
	RP_TL_PAST_SWITCH			/* held changes after the switch point: the
								 * new timeline never had them */
}			RpTlVerdict;

/*
 * Judge a checkpoint on timeline ck_tli holding WAL up to held_end against
 * a server on server_tli with history entries e[0..n).  *switchpoint gets
 * the checkpoint timeline's switch point when it is an ancestor (else 0).
 */
extern RpTlVerdict rp_tlhist_judge(const RpTlHistEntry * e, int n, uint32_t ck_tli, uint64_t held_end,
								   uint32_t server_tli, uint64_t *switchpoint);

#endif							/* RP_TLHIST_H */
