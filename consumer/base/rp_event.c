/*
 * rp_event.c
 *    The event hook (see rp_event.h).
 */
#include <string.h>

#include "base/rp_event.h"

void
rp_event_emit(const RpEventHook *h, const RpEvent *ev)
{
	if (h != NULL && h->fn != NULL)
		h->fn(ev, h->arg);
}

void
rp_event_init(RpEvent *ev, RpEventKind kind)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
}

const char *
rp_event_kind_name(RpEventKind kind)
{
	static const char *const names[RP_EVENT__COUNT] = {
		[RP_EVENT_TXN_ASSEMBLED] = "txn_assembled",
		[RP_EVENT_BATCH_COMMITTED] = "batch_committed",
		[RP_EVENT_BATCH_FAILED] = "batch_failed",
		[RP_EVENT_SCHEMA_ADDITIVE] = "schema_additive",
		[RP_EVENT_SCHEMA_DESTRUCTIVE] = "schema_destructive",
		[RP_EVENT_SCHEMA_HALTED] = "schema_halted",
		[RP_EVENT_CHECKPOINT_STORED] = "checkpoint_stored",
		[RP_EVENT_CHECKPOINT_FAILED] = "checkpoint_failed",
		[RP_EVENT_SNAPSHOT_CHUNK] = "snapshot_chunk",
		[RP_EVENT_SNAPSHOT_COMPLETE] = "snapshot_complete",
		[RP_EVENT_CONN_UP] = "conn_up",
		[RP_EVENT_CONN_LOST] = "conn_lost",
	};

	if ((int) kind < 0 || kind >= RP_EVENT__COUNT)
		return "unknown";
	return names[kind];
}

const char *
rp_flush_reason_name(int reason)
{
	static const char *const names[RP_FLUSH__COUNT] = {
		[RP_FLUSH_NONE] = "",
		[RP_FLUSH_TXNS] = "txns",
		[RP_FLUSH_BYTES] = "bytes",
		[RP_FLUSH_TIME] = "time",
		[RP_FLUSH_BACKLOG] = "backlog",
		[RP_FLUSH_MESSAGE] = "message",
		[RP_FLUSH_STREAMED] = "streamed",
		[RP_FLUSH_DRAIN] = "drain",
	};

	return reason >= 0 && reason < RP_FLUSH__COUNT ? names[reason] : "unknown";
}
