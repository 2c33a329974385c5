/*
 * rp_cli_metrics.c
 *    The metrics page's sources (see rp_cli_metrics.h).  Names, labels and
 *    HELP texts are an interface (docs/operations.md, dashboards): changing
 *    one breaks its readers.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#include "base/rp_clock.h"
#include "base/rp_counter.h"
#include "cli/rp_cli_metrics.h"
#include "cli/rp_cli_progress.h"
#include "natsrc/rp_natsrc.h"
#include "stream/rp_sink.h"
#include "stream/rp_conn.h"

void
rp_cli_metrics_delivery(RpBuf *out, const void *arg)
{
	const RpCliMetrics *cm = arg;
	const RpDlCounters *c = cm->count;
	uint64_t	ck = RP_COUNT_LOAD(c->checkpoint_lsn);
	uint64_t	wal_end = RP_COUNT_LOAD(cm->m->server_wal_end);
	uint64_t	lag = wal_end > ck ? wal_end - ck : 0;
	int64_t		pending = RP_COUNT_LOAD(cm->m->pending_commit_time);
	int64_t		moved = RP_COUNT_LOAD(cm->m->checkpoint_moved_at);
	int64_t		now = rp_clock_wall_us();

	rp_metrics_sample(out, "replicant_transactions_total", "counter", "Transactions delivered to the sink.", NULL, RP_COUNT_LOAD(c->txns));
	rp_metrics_sample(out, "replicant_changes_total", "counter", "Rows, truncates and messages delivered.", NULL, RP_COUNT_LOAD(c->changes));
	rp_metrics_sample(out, "replicant_batches_total", "counter", "Batches delivered.", NULL, RP_COUNT_LOAD(c->batches));
	rp_metrics_sample(out, "replicant_messages_total", "counter", "Non-transactional messages delivered.", NULL, RP_COUNT_LOAD(c->messages));
	rp_metrics_sample(out, "replicant_schema_changes_total", "counter", "Schema changes seen.", NULL, RP_COUNT_LOAD(c->schema_changes));
	rp_metrics_sample(out, "replicant_early_chunks_total", "counter", "Stream blocks applied before their transaction committed.", NULL, RP_COUNT_LOAD(c->early_chunks));
	rp_metrics_sample(out, "replicant_early_commits_total", "counter", "Streamed transactions committed after an early apply.", NULL, RP_COUNT_LOAD(c->early_commits));
	rp_metrics_sample(out, "replicant_early_drops_total", "counter", "Early applies dropped (abort, or another commit first).", NULL, RP_COUNT_LOAD(c->early_drops));
	rp_metrics_sample(out, "replicant_checkpoint_lsn", "gauge", "End LSN of the last durable unit.", NULL, ck);
	rp_metrics_sample(out, "replicant_lag_bytes", "gauge", "Server WAL position minus the checkpoint.", NULL, lag);
	rp_metrics_sample_real(out, "replicant_lag_seconds", "gauge",
						   "Seconds behind the source: now minus the commit time of the oldest transaction received and not yet durable (0 when caught up).",
						   NULL, rp_metrics_lag_seconds(pending, now));
	rp_metrics_sample_real(out, "replicant_checkpoint_age_seconds", "gauge",
						   "Seconds since the durable checkpoint last moved, while something received waits for it (0 when caught up).",
						   NULL, pending != 0 && moved != 0 && now > moved ? (now - moved) / 1e6 : 0.0);
}

void
rp_cli_metrics_snapshot(RpBuf *out, const void *arg)
{
	const RpCliMetrics *cm = arg;
	const RpSnapStats *st = cm->snap;

	/*
	 * rows by store: replicant_snapshot_rows_total{store} (rp_cli_progline.c,
	 * live)
	 */
	rp_metrics_sample(out, "replicant_snapshot_oversize_total", "counter", "Oversize stubs written in snapshot dumps.", NULL, RP_COUNT_LOAD(st->oversize));
	rp_metrics_sample(out, "replicant_dead_letters_dropped_total", "counter",
					  "Oversize rows dropped for want of a dead-letter file, by reason.",
					  "{reason=\"too_large\"}", RP_COUNT_LOAD(st->dlq_dropped));

	/*
	 * the per-table list is read once complete (the page is served during the
	 * snapshot too)
	 */
	for (int i = 0; !atomic_load(&cm->snap_running) && i < st->nstores; i++)
	{
		RpBuf		labels;

		rp_buf_init(&labels, 128);
		rp_buf_put_text(&labels, "{store=\"");
		/* a relation name, never a value */
		rp_metrics_label_value(&labels, st->stores[i]);
		rp_buf_put_text(&labels, st->complete[i] ? "\",status=\"complete\"}" : "\",status=\"aborted\"}");
		rp_buf_put_char(&labels, '\0');
		rp_metrics_sample(out, "replicant_snapshots_total", "counter",
						  i == 0 ? "Table dumps of the initial snapshot by store and status." : NULL, labels.data, 1);
		rp_buf_free(&labels);
	}
	for (int i = 0; !atomic_load(&cm->snap_running) && i < st->nstores; i++)
	{
		RpBuf		labels;

		rp_buf_init(&labels, 128);
		rp_buf_put_text(&labels, "{store=\"");
		rp_metrics_label_value(&labels, st->stores[i]);
		rp_buf_put_text(&labels, "\"}");
		rp_buf_put_char(&labels, '\0');
		rp_metrics_sample(out, "replicant_snapshot_rows_oversize_total", "counter",
						  i == 0 ? "Oversize stubs in each table's dump." : NULL, labels.data,
						  st->store_oversize ? st->store_oversize[i] : 0);
		rp_buf_free(&labels);
	}
}

/* The assembler's dedup and the spill store with the memory budget. */
void
rp_cli_metrics_stream(RpBuf *out, const void *arg)
{
	const RpCliMetrics *cm = arg;

	/* while the snapshot copies, the two are still being set up: zeros */
	bool		ready = atomic_load(&cm->stream_ready);

	if (cm->asm_)
		rp_metrics_sample(out, "replicant_dedup_skipped_total", "counter", "Transactions skipped at or below the watermark.", NULL, ready ? RP_COUNT_LOAD(cm->asm_->skipped) : 0);
	if (cm->spill)
	{
		rp_metrics_sample(out, "replicant_spills_total", "counter", "Transactions spilled to disk.", NULL, ready ? RP_COUNT_LOAD(cm->spill->spills) : 0);
		rp_metrics_sample(out, "replicant_spill_bytes", "gauge", "Bytes in spill files now.", NULL, ready ? RP_COUNT_LOAD(cm->spill->disk_in_use) : 0);
		rp_metrics_sample(out, "replicant_memory_bytes", "gauge", "Bytes charged to --max-memory (assembled transactions and the sink's working state).", NULL, ready ? RP_COUNT_LOAD(cm->spill->mem_in_use) : 0);
		rp_metrics_sample(out, "replicant_sink_memory_bytes", "gauge", "The sink's working state charged to --max-memory.", NULL, ready ? RP_COUNT_LOAD(cm->spill->sink_in_use) : 0);
	}
}

/* Live aggregates (agg/rp_agg.h): rebuilds by reason, never by value. */
void
rp_cli_metrics_aggregates(RpBuf *out, const void *arg)
{
	const RpAggStats *st = &((const RpCliMetrics *) arg)->agg->stats;

	for (int r = 0; r < RP_AGG_REASON__COUNT; r++)
	{
		char		labels[64];

		snprintf(labels, sizeof(labels), "{reason=\"%s\"}", rp_agg_reason_name((RpAggReason) r));
		rp_metrics_sample(out, "replicant_aggregate_rebuilds_total", "counter",
						  r == 0 ? "Aggregate bindings built from the source, by reason." : NULL,
						  labels, RP_COUNT_LOAD(st->rebuilds[r]));
	}
	rp_metrics_sample(out, "replicant_aggregate_cell_edits_total", "counter", "Aggregate cells written (set or removed).", NULL, RP_COUNT_LOAD(st->cell_edits));
	rp_metrics_sample(out, "replicant_aggregate_changes_total", "counter", "Row changes folded into aggregate bindings.", NULL, RP_COUNT_LOAD(st->changes));
	rp_metrics_sample(out, "replicant_aggregate_skipped_total", "counter", "Row changes a seed had already seen.", NULL, RP_COUNT_LOAD(st->skipped));
	rp_metrics_sample(out, "replicant_aggregate_state_bytes", "gauge", "Bytes of every binding's fold state.", NULL,
					  RP_COUNT_LOAD(st->state_bytes));
}

/* The sink's own figures, through its callback (none for a sink without one). */
void
rp_cli_metrics_sink(RpBuf *out, const void *arg)
{
	const RpSink *sink = arg;

	if (sink->metrics)
		sink->metrics(sink, out);
}

int
rp_cli_metrics_register(RpMetrics *m, const RpCliMetrics *cm)
{
	/* the page's order as it always was */
	if ((cm->count && rp_metrics_add(m, rp_cli_metrics_delivery, cm) < 0) ||
		(cm->snap && rp_metrics_add(m, rp_cli_metrics_snapshot, cm) < 0) ||
		rp_metrics_add(m, rp_metrics_received, m) < 0 ||
		rp_metrics_add(m, rp_cli_metrics_stream, cm) < 0 ||
		(cm->agg && rp_metrics_add(m, rp_cli_metrics_aggregates, cm) < 0) ||
		(cm->sink && rp_metrics_add(m, rp_cli_metrics_sink, cm->sink) < 0) ||
		(cm->nsrc && rp_metrics_add(m, rp_natsrc_metrics, cm->nsrc) < 0) ||
		(cm->progress && rp_metrics_add(m, rp_cli_metrics_progress, cm->progress) < 0) ||
		rp_metrics_add(m, rp_metrics_halts, m) < 0 ||
		rp_metrics_add(m, rp_metrics_process, m) < 0)
		return -1;
	return 0;
}
