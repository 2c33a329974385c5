/*
 * rp_nats_conn.c
 *    The sink's link: the connection (natsio/rp_natsio.h) and a JetStream
 *    context whose asynchronous publishes report to the sink's window.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include "base/rp_status.h"
#include "sinks/nats/rp_nats_int.h"

int
rp_nats_connect(RpNatsLink *l, const RpNatsOptions *o)
{
	RpNatsioAuth a = {o->url, o->creds, o->tls_ca, o->tls_cert, o->tls_key};
	jsOptions	jo;
	natsStatus	s;

	if (rp_natsio_connect(&l->nc, &a) < 0)
		return -1;
	l->max_payload = natsConnection_GetMaxPayload(l->nc);
	jsOptions_Init(&jo);
	jo.Wait = l->ack_timeout_ms;

	/*
	 * the window is ours (rp_nats_pub.c); libnats' limit only must never
	 * stall it
	 */
	jo.PublishAsync.MaxPending = 2 * (int64_t) o->window + 64;
	jo.PublishAsync.AckHandler = rp_nats_pub_ack;
	jo.PublishAsync.AckHandlerClosure = l;
	s = natsConnection_JetStream(&l->js, l->nc, &jo);
	if (s != NATS_OK)
	{
		rp_natsio_close(l->nc);
		l->nc = NULL;
		return rp_fail(RP_HALT_NONE, "NATS JetStream context failed (%s)", rp_natsio_status_text(s));
	}
	return 0;
}

void
rp_nats_disconnect(RpNatsLink *l)
{
	if (l->js)
		jsCtx_Destroy(l->js);
	rp_natsio_close(l->nc);
	l->js = NULL;
	l->nc = NULL;
}

#endif							/* RP_HAVE_NATS */
