/*
 * rp_natsrc_pull.c
 *    The NATS source's consumer: an ephemeral pull consumer from a stream
 *    sequence on, read in fetches bounded in messages and bytes.
 *
 * Why pull and not push: a push consumer's flow control lets the server
 * run ahead of a slow sink by tens of megabytes (measured: 38,000
 * messages, 27.8 MB waiting in libnats behind a mirror), and a pending
 * limit below that makes libnats drop messages.  A pull consumer sends
 * nothing it was not asked for: what waits in memory is the fetch being
 * read, at most RP_NATSRC_FETCH_MSGS messages and fetch_bytes (G5).
 *
 * The next fetch is asked for on the reader's thread once the last one is
 * read.  A thread fetching two ahead was faster, but a reader built so
 * aborted on a corrupted heap in 3 of 5 runs of test/t/310_nats_fanout.pl
 * (libnats 3.4.1; not explained: nothing else of the reader changed), and
 * with messages freed at once (rp_natsio_msg_free) this reader is as fast
 * as the push consumer was (6.0 s on a million messages).
 *
 * The consumer acknowledges nothing (AckNone): the reader's checkpoint, not
 * the server, says what was read, so any number of readers share the
 * stream, each at its own pace.  It lives in memory on one server; when it
 * is gone (its server restarted, inactivity) a fetch fails, and the reader
 * is reopened after what is durable.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <string.h>

#include "base/rp_counter.h"
#include "natsrc/rp_natsrc_int.h"

/* a consumer the server keeps this long without a fetch (a slow sink's batch) */
#define RP_NATSRC_INACTIVE_NS (INT64_C(120) * 1000 * 1000 * 1000)

/* Drop what is left of the last fetch. */
static void
batch_drop(RpNatsSrc *s)
{
	natsMsgList_Destroy(&s->batch);
	memset(&s->batch, 0, sizeof(s->batch));
	s->batch_at = 0;
}

int
rp_natsrc_subscribe(RpNatsSrc *s, uint64_t start)
{
	jsSubOptions so;
	jsErrCode	code = 0;
	natsStatus	st;
	int64_t		maxp = natsConnection_GetMaxPayload(s->nc);

	jsSubOptions_Init(&so);
	so.Stream = s->o.stream;
	so.Config.AckPolicy = js_AckNone;
	so.Config.MemoryStorage = true;
	so.Config.Replicas = 1;
	so.Config.InactiveThreshold = RP_NATSRC_INACTIVE_NS;
	if (start > 1)
	{
		so.Config.DeliverPolicy = js_DeliverByStartSequence;
		so.Config.OptStartSeq = start;
	}
	else
		so.Config.DeliverPolicy = js_DeliverAll;
	st = js_PullSubscribe(&s->sub, s->js, s->subject, NULL, NULL, &so, &code);
	if (st != NATS_OK)
	{
		s->sub = NULL;
		return rp_natsrc_js_fail(s, "subscribing", st, code);
	}
	RP_COUNT_ADD(s->count.opens, 1);

	/*
	 * a fetch must fit the largest message the server takes, or the server
	 * refuses the request and reading stops
	 */
	s->fetch_bytes = RP_NATSRC_FETCH_BYTES;
	if (maxp > 0 && 2 * maxp > s->fetch_bytes)
		s->fetch_bytes = 2 * maxp;

	/*
	 * a fetch's messages are queued in libnats before the fetch hands them
	 * over
	 */
	natsSubscription_SetPendingLimits(s->sub, 2 * RP_NATSRC_FETCH_MSGS, (int) (2 * s->fetch_bytes));
	return 0;
}

void
rp_natsrc_unsubscribe(RpNatsSrc *s)
{
	batch_drop(s);
	if (s->sub)
	{
		/* the consumer is ephemeral: unsubscribing deletes it on the server */
		natsSubscription_Unsubscribe(s->sub);
		natsSubscription_Destroy(s->sub);
		s->sub = NULL;
	}
}

natsStatus
rp_natsrc_next(RpNatsSrc *s, natsMsg **m, int64_t timeout_ms)
{
	*m = NULL;
	if (s->batch_at >= s->batch.Count)
	{
		jsFetchRequest req;
		natsStatus	st;

		batch_drop(s);
		jsFetchRequest_Init(&req);
		req.Batch = RP_NATSRC_FETCH_MSGS;
		req.MaxBytes = s->fetch_bytes;

		/*
		 * the server holds a fetch the stream cannot fill this long; a full
		 * one returns at once
		 */
		req.Expires = (timeout_ms > 1 ? timeout_ms : 1) * INT64_C(1000000);
		st = natsSubscription_FetchRequest(&s->batch, s->sub, &req);
		if (st != NATS_OK)
		{
			batch_drop(s);
			return st;
		}
		RP_COUNT_ADD(s->count.fetches, 1);
		if (s->batch.Count == 0)
			return NATS_TIMEOUT;
	}
	/* taken out of the list: the caller frees it, the list no longer does */
	*m = s->batch.Msgs[s->batch_at];
	s->batch.Msgs[s->batch_at++] = NULL;
	return NATS_OK;
}

#endif							/* RP_HAVE_NATS */
