/*
 * rp_nats_pub.c
 *    Asynchronous publishing within a bounded window: at most `size`
 *    messages and RP_NATS_WINDOW_BYTES in flight (memory bounded whatever
 *    the transaction's or the rows' size),
 *    each carrying the stream-wide Nats-Expected-Last-Sequence (set as a
 *    header: libnats' ExpectLastSeq = 0 means unset, and an empty stream's
 *    expectation is 0), each with a MaxWait so that an ack lost with a
 *    dying leader is reported as a timeout instead of stalling.  The
 *    delivery thread publishes; libnats' thread runs rp_nats_pub_ack.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/rp_clock.h"
#include "base/rp_status.h"
#include "sinks/nats/rp_nats_int.h"

#define RP_NATS_EXPECT_HDR "Nats-Expected-Last-Sequence"

/*
 * What a message holds in memory until it is acknowledged: its payload
 * and subject, and a fixed allowance for its headers (the sink's are well
 * under it; the bound needs the order of magnitude only).
 */
#define RP_NATS_HDR_ALLOWANCE 1024

static int64_t
msg_bytes(natsMsg *m)
{
	const char *subj = natsMsg_GetSubject(m);

	return natsMsg_GetDataLength(m) + (subj ? (int64_t) strlen(subj) : 0) + RP_NATS_HDR_ALLOWANCE;
}

void
rp_nats_pub_start(RpNatsLink *l, int size, uint64_t last_seq)
{
	pthread_mutex_lock(&l->mu);
	rp_nats_win_reset(&l->win, size, last_seq);
	l->win.max_bytes = RP_NATS_WINDOW_BYTES;
	pthread_mutex_unlock(&l->mu);
}

void
rp_nats_pub_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	RpNatsLink *l = closure;
	const char *v = NULL;
	uint64_t	expected = 0;

	if (natsMsgHeader_Get(msg, RP_NATS_EXPECT_HDR, &v) == NATS_OK && v)
		expected = strtoull(v, NULL, 10);
	int64_t		bytes = msg_bytes(msg);

	pthread_mutex_lock(&l->mu);
	rp_nats_win_charge(&l->win, -bytes);
	if (pa)
		rp_nats_win_ack(&l->win, expected, pa->Sequence, pa->Duplicate);
	else
	{
		int			st = RP_NATS_ST_ANSWER;

		if (pae->Err == NATS_TIMEOUT || pae->Err == NATS_NO_RESPONDERS ||
			pae->Err == NATS_CONNECTION_CLOSED || pae->Err == NATS_CONNECTION_DISCONNECTED)
			st = RP_NATS_ST_LOST;
		rp_nats_win_nak(&l->win, st, (int) pae->ErrCode, pae->ErrText);
	}
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	natsMsg_Destroy(msg);
}

/*
 * Wait for room (or for nothing in flight: room == 0).  The acks come
 * within MaxWait (libnats' timer reports a missing one as a timeout);
 * past twice that with no change, what is pending is taken back and
 * counted lost, so a wait never lasts for ever.
 */
static void
wait_window(RpNatsLink *l, bool drain, int64_t bytes)
{
	int64_t		quiet_ms = 2 * l->ack_timeout_ms + 5000;

	pthread_mutex_lock(&l->mu);
	while (drain ? l->win.in_flight > 0 : !rp_nats_win_room(&l->win, bytes))
	{
		struct timespec ts;
		int			before = l->win.in_flight;
		int			rc;

		rp_clock_deadline(&ts, quiet_ms);
		rc = pthread_cond_timedwait(&l->cv, &l->mu, &ts);
		if (rc == ETIMEDOUT && l->win.in_flight == before)
		{
			natsMsgList pending;

			pthread_mutex_unlock(&l->mu);
			if (js_PublishAsyncGetPendingList(&pending, l->js) == NATS_OK)
				natsMsgList_Destroy(&pending);
			pthread_mutex_lock(&l->mu);
			while (l->win.in_flight > 0)
				rp_nats_win_nak(&l->win, RP_NATS_ST_LOST, 0, NULL);
			l->win.bytes = 0;
		}
	}
	pthread_mutex_unlock(&l->mu);
}

bool
rp_nats_pub_send(RpNatsLink *l, natsMsg *m)
{
	jsPubOptions po;
	uint64_t	expected;
	char		num[24];
	natsStatus	s;
	int64_t		bytes = msg_bytes(m);

	wait_window(l, false, bytes);
	pthread_mutex_lock(&l->mu);
	if (l->win.failure != RP_NATS_FAIL_NONE)
	{
		/*
		 * every later publish would be refused anyway (its expectation is
		 * wrong)
		 */
		pthread_mutex_unlock(&l->mu);
		natsMsg_Destroy(m);
		return false;
	}
	expected = rp_nats_win_send(&l->win);
	rp_nats_win_charge(&l->win, bytes);
	pthread_mutex_unlock(&l->mu);

	snprintf(num, sizeof(num), "%llu", (unsigned long long) expected);
	s = natsMsgHeader_Set(m, RP_NATS_EXPECT_HDR, num);
	jsPubOptions_Init(&po);
	po.MaxWait = l->ack_timeout_ms;
	if (s == NATS_OK)
		s = js_PublishMsgAsync(l->js, &m, &po);
	if (s != NATS_OK)
	{
		pthread_mutex_lock(&l->mu);
		rp_nats_win_charge(&l->win, -bytes);
		rp_nats_win_unsend(&l->win, s == NATS_MAX_PAYLOAD ? RP_NATS_FAIL_FATAL : RP_NATS_FAIL_RETRY,
						   s == NATS_MAX_PAYLOAD ? RP_NATS_ST_REFUSED : RP_NATS_ST_LOST);
		pthread_mutex_unlock(&l->mu);
		natsMsg_Destroy(m);
		return false;
	}
	return true;
}

void
rp_nats_pub_drain(RpNatsLink *l)
{
	wait_window(l, true, 0);
}

RpNatsWin
rp_nats_pub_result(RpNatsLink *l)
{
	RpNatsWin	w;

	pthread_mutex_lock(&l->mu);
	w = l->win;
	pthread_mutex_unlock(&l->mu);
	return w;
}

#endif							/* RP_HAVE_NATS */
