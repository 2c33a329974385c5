/*
 * rp_lagq.c
 *    Pending commit times (see rp_lagq.h).
 */
#include <string.h>

#include "run/rp_lagq.h"

void
rp_lagq_init(RpLagQueue * q)
{
	memset(q, 0, sizeof(*q));
}

void
rp_lagq_push(RpLagQueue * q, uint64_t end_lsn, int64_t commit_time)
{
	RpLagEntry *last = q->n > 0 ? &q->e[(q->head + q->n - 1) % RP_LAGQ_CAP] : NULL;

	/*
	 * Full, or an end at or below the newest (a stream's message, a
	 * transaction sent again): the newest covers it, keeping the older commit
	 * time.
	 */
	if (last && (q->n == RP_LAGQ_CAP || end_lsn <= last->end_lsn))
	{
		if (end_lsn > last->end_lsn)
			last->end_lsn = end_lsn;
		if (commit_time < last->commit_time)
			last->commit_time = commit_time;
		return;
	}
	q->e[(q->head + q->n) % RP_LAGQ_CAP] = (RpLagEntry)
	{
		.end_lsn = end_lsn,.commit_time = commit_time
	};
	q->n++;
}

void
rp_lagq_durable(RpLagQueue * q, uint64_t durable_lsn)
{
	while (q->n > 0 && q->e[q->head].end_lsn <= durable_lsn)
	{
		q->head = (q->head + 1) % RP_LAGQ_CAP;
		q->n--;
	}
}

int64_t
rp_lagq_oldest(const RpLagQueue * q)
{
	return q->n > 0 ? q->e[q->head].commit_time : 0;
}
