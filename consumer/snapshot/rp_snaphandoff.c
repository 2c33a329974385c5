/*
 * rp_snaphandoff.c
 *    The snapshot's one-item handoff to a delivery thread (see
 *    rp_snaphandoff.h).
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <string.h>

#include "snapshot/rp_snaphandoff.h"

static void *
rp_snap_handoff_main(void *arg)
{
	RpSnapHandoff *h = arg;

	pthread_mutex_lock(&h->mu);
	for (;;)
	{
		void	   *item;
		bool		first;
		int			rc;

		while (h->pending == NULL && !h->quit)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->pending == NULL)
			break;
		item = h->pending;
		first = h->first;
		pthread_mutex_unlock(&h->mu);
		rc = h->fn(h->arg, item, first);
		pthread_mutex_lock(&h->mu);
		if (rc < 0 && h->rc == 0)
		{
			h->rc = -1;
			h->halt = rp_error_halt();
			snprintf(h->error, sizeof(h->error), "%s", rp_error());
		}
		h->pending = NULL;
		pthread_cond_broadcast(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

int
rp_snap_handoff_start(RpSnapHandoff *h, RpSnapHandoffFn fn, void *arg)
{
	memset(h, 0, sizeof(*h));
	h->fn = fn;
	h->arg = arg;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (pthread_create(&h->thread, NULL, rp_snap_handoff_main, h) != 0)
		return rp_fail(RP_HALT_NONE, "snapshot: could not start a delivery thread");
	h->started = true;
	return 0;
}

int
rp_snap_handoff_wait(RpSnapHandoff *h)
{
	int			rc;

	pthread_mutex_lock(&h->mu);
	while (h->pending != NULL)
		pthread_cond_wait(&h->cv, &h->mu);
	rc = h->rc;
	pthread_mutex_unlock(&h->mu);
	if (rc < 0)
		return rp_fail(h->halt, "%s", h->error);
	return 0;
}

void
rp_snap_handoff_give(RpSnapHandoff *h, void *item, bool first)
{
	pthread_mutex_lock(&h->mu);
	h->pending = item;
	h->first = first;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

void
rp_snap_handoff_end(RpSnapHandoff *h)
{
	if (h->started)
	{
		pthread_mutex_lock(&h->mu);
		while (h->pending != NULL)
			pthread_cond_wait(&h->cv, &h->mu);
		h->quit = true;
		pthread_cond_broadcast(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->thread, NULL);
		h->started = false;
	}
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
}
