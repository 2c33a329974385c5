/*
 * rp_cli_events.h
 *    The program's subscriber to the library's event hook (base/rp_event.h):
 *    the delivery counters the metrics page shows and the -v lines both
 *    come from the events, so there is one path from what happened to what
 *    is reported.
 */
#ifndef RP_CLI_EVENTS_H
#define RP_CLI_EVENTS_H

#include "base/rp_event.h"
#include "stream/rp_deliver.h"

typedef struct RpCliEvents
{
	RpDlCounters *count;		/* where the delivery's events count; NULL:
								 * not counted */
	int			verbose;		/* -v: state changes; -vv: every batch,
								 * checkpoint, chunk */
} RpCliEvents;

/* A hook whose subscriber is rp_cli_event, arg ce (kept by the caller). */
extern RpEventHook rp_cli_events_hook(RpCliEvents *ce);

/* The subscriber: counts (atomically: the metrics thread reads) and says. */
extern void rp_cli_event(const RpEvent *ev, void *arg);

#endif							/* RP_CLI_EVENTS_H */
