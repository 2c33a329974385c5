/*
 * rp_cli_events.c
 *    The program's event subscriber (see rp_cli_events.h).  Everything an
 *    event holds is value-free (numbers, catalog names, codes), so every
 *    field may be printed; the wording of the lines tests and operators
 *    grep for ("streaming from slot", "snapshot complete: N rows; streaming
 *    from LSN") is kept as it was before the hook.  Per-unit lines (a batch,
 *    a checkpoint, a snapshot chunk) are -vv: at -v a busy stream would
 *    print one per batch.
 */
#include <inttypes.h>

#include "rp_lsn.h"
#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_events.h"

RpEventHook
rp_cli_events_hook(RpCliEvents *ce)
{
	RpEventHook h;

	h.fn = rp_cli_event;
	h.arg = ce;
	return h;
}

static const char *
rp_cli_event_reason(const RpEvent *ev)
{
	return ev->reason > 0 && ev->reason < RP_HALT__COUNT ? rp_halt_name((RpHalt) ev->reason) : "retryable";
}

static void
rp_cli_event_say(const RpCliEvents *ce, const RpEvent *ev)
{
	char		lsn[24];
	char		end[24];

	rp_lsn_format(ev->lsn, lsn);
	rp_lsn_format(ev->end_lsn, end);
	switch (ev->kind)
	{
		case RP_EVENT_BATCH_COMMITTED:
			if (ce->verbose > 1)
				pg_log_info("batch committed: %" PRIu64 " transactions, %" PRIu64 " changes, %" PRIu64
							" bytes, end LSN %s, %" PRId64 " ms, flushed by %s",
							ev->txns, ev->changes, ev->bytes, end, ev->duration_us / 1000,
							rp_flush_reason_name(ev->flush));
			break;
		case RP_EVENT_BATCH_FAILED:
			pg_log_info("batch failed (%s%s%s): %" PRIu64 " of its transactions kept by the sink",
						rp_cli_event_reason(ev), ev->sqlstate[0] ? ", SQLSTATE " : "", ev->sqlstate,
						ev->txns);
			break;
		case RP_EVENT_CHECKPOINT_STORED:
			if (ce->verbose > 1)
				pg_log_info("checkpoint stored: end LSN %s", end);
			break;
		case RP_EVENT_CHECKPOINT_FAILED:
			pg_log_info("checkpoint at end LSN %s not stored (%s)", end, rp_cli_event_reason(ev));
			break;
		case RP_EVENT_SCHEMA_ADDITIVE:
		case RP_EVENT_SCHEMA_DESTRUCTIVE:
		case RP_EVENT_SCHEMA_HALTED:
			pg_log_info("schema change of table \"%s\".\"%s\" at LSN %s: %s",
						ev->schema ? ev->schema : "", ev->relation ? ev->relation : "", lsn,
						ev->kind == RP_EVENT_SCHEMA_ADDITIVE ? "additive, applied"
						: ev->kind == RP_EVENT_SCHEMA_DESTRUCTIVE ? "destructive, taken by the sink"
						: "refused, halting");
			break;
		case RP_EVENT_SNAPSHOT_CHUNK:
			if (ce->verbose > 1)
				pg_log_info("snapshot chunk of table \"%s\".\"%s\" stored: %" PRIu64 " rows, %" PRIu64 " bytes",
							ev->schema ? ev->schema : "", ev->relation ? ev->relation : "",
							ev->changes, ev->bytes);
			break;
		case RP_EVENT_SNAPSHOT_COMPLETE:
			pg_log_info("snapshot complete: %" PRIu64 " rows; streaming from %s", ev->changes, end);
			break;
		case RP_EVENT_CONN_UP:
			if (ev->stream)
				pg_log_info("reading NATS stream \"%s\" as \"%s\"", ev->stream, ev->slot ? ev->slot : "");
			else
				pg_log_info("streaming from slot \"%s\"", ev->slot ? ev->slot : "");
			break;
		case RP_EVENT_CONN_LOST:
			if (ce->verbose > 1)
				pg_log_info("connection of slot \"%s\" lost (%s)", ev->slot ? ev->slot : "",
							rp_cli_event_reason(ev));
			break;
		default:
			break;
	}
}

void
rp_cli_event(const RpEvent *ev, void *arg)
{
	RpCliEvents *ce = arg;

	if (ce->count)
		rp_dl_count_event(ce->count, ev);
	rp_cli_event_say(ce, ev);
}
