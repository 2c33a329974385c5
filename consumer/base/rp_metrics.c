/*
 * rp_metrics.c
 *    Prometheus text exposition (see rp_metrics.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <stdio.h>

#include "agg/rp_agg.h"
#include "stream/rp_conn.h"
#include "base/rp_metrics.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "snapshot/rp_snapshot.h"

static void
rp_metric(RpBuf *b, const char *name, const char *type, const char *help, const char *labels,
		  uint64_t v)
{
	char		line[512];
	int			n;

	if (help)
	{
		n = snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
		rp_buf_put_bytes(b, line, (size_t) n);
	}
	n = snprintf(line, sizeof(line), "%s%s %" PRIu64 "\n", name, labels ? labels : "", v);
	rp_buf_put_bytes(b, line, (size_t) n);
}

double
rp_metrics_lag_seconds(const RpMetrics *m, uint64_t lag_bytes, int64_t now_us)
{
	int64_t		t = RP_COUNT_LOAD(m->last_commit_time);

	if (lag_bytes == 0 || t == 0 || now_us < t)
		return 0.0;
	return (now_us - t) / 1e6;
}

char *
rp_metrics_render(const RpMetrics *m)
{
	RpBuf		b;
	const RpDlCounters *c = m->count;
	const RpSnapStats *ss = m->snap_stats;

	rp_buf_init(&b, 4096);
	if (c)
	{
		uint64_t	ck = RP_COUNT_LOAD(c->checkpoint_lsn);
		uint64_t	wal_end = RP_COUNT_LOAD(m->server_wal_end);

		rp_metric(&b, "replicant_transactions_total", "counter", "Transactions delivered to the sink.", NULL, RP_COUNT_LOAD(c->txns));
		rp_metric(&b, "replicant_changes_total", "counter", "Rows, truncates and messages delivered.", NULL, RP_COUNT_LOAD(c->changes));
		rp_metric(&b, "replicant_batches_total", "counter", "Batches delivered.", NULL, RP_COUNT_LOAD(c->batches));
		rp_metric(&b, "replicant_messages_total", "counter", "Non-transactional messages delivered.", NULL, RP_COUNT_LOAD(c->messages));
		rp_metric(&b, "replicant_schema_changes_total", "counter", "Schema changes seen.", NULL, RP_COUNT_LOAD(c->schema_changes));
		rp_metric(&b, "replicant_early_chunks_total", "counter", "Stream blocks applied before their transaction committed.", NULL, RP_COUNT_LOAD(c->early_chunks));
		rp_metric(&b, "replicant_early_commits_total", "counter", "Streamed transactions committed after an early apply.", NULL, RP_COUNT_LOAD(c->early_commits));
		rp_metric(&b, "replicant_early_drops_total", "counter", "Early applies dropped (abort, or another commit first).", NULL, RP_COUNT_LOAD(c->early_drops));
		rp_metric(&b, "replicant_checkpoint_lsn", "gauge", "End LSN of the last durable unit.", NULL, ck);
		{
			uint64_t	lag = wal_end > ck ? wal_end - ck : 0;
			char		line[256];
			int			n;

			rp_metric(&b, "replicant_lag_bytes", "gauge", "Server WAL position minus the checkpoint.", NULL, lag);
			n = snprintf(line, sizeof(line),
						 "# HELP replicant_lag_seconds Age of the last delivered commit while WAL is pending.\n"
						 "# TYPE replicant_lag_seconds gauge\nreplicant_lag_seconds %.3f\n",
						 rp_metrics_lag_seconds(m, lag, rp_now_us()));
			rp_buf_put_bytes(&b, line, (size_t) n);
		}
	}
	/* the initial snapshot (rp_snapshot.h): its counters are final once streaming runs */
	rp_metric(&b, "replicant_snapshot_rows_total", "counter", "Rows copied by the initial snapshot.", NULL, ss ? ss->rows : 0);
	rp_metric(&b, "replicant_snapshot_oversize_total", "counter", "Oversize stubs written in snapshot dumps.", NULL, ss ? ss->oversize : 0);
	for (int i = 0; ss && i < ss->nstores; i++)
	{
		RpBuf		labels;

		rp_buf_init(&labels, 128);
		rp_buf_put_text(&labels, "{store=\"");
		/* a relation name, never a value; quotes and backslashes escaped for the exposition format */
		for (const char *p = ss->stores[i]; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				rp_buf_put_char(&labels, '\\');
			if (*p == '\n')
				continue;
			rp_buf_put_char(&labels, *p);
		}
		rp_buf_put_text(&labels, ss->complete[i] ? "\",status=\"complete\"}" : "\",status=\"aborted\"}");
		rp_buf_put_char(&labels, '\0');
		rp_metric(&b, "replicant_snapshots_total", "counter", i == 0 ? "Table dumps of the initial snapshot by store and status." : NULL,
				  labels.data, 1);
		rp_buf_free(&labels);
	}
	rp_metric(&b, "replicant_received_bytes_total", "counter", "Frame bytes received.", NULL, RP_COUNT_LOAD(m->bytes));
	if (m->asm_)
		rp_metric(&b, "replicant_dedup_skipped_total", "counter", "Transactions skipped at or below the watermark.", NULL, RP_COUNT_LOAD(m->asm_->skipped));
	if (m->spill)
	{
		rp_metric(&b, "replicant_spills_total", "counter", "Transactions spilled to disk.", NULL, RP_COUNT_LOAD(m->spill->spills));
		rp_metric(&b, "replicant_spill_bytes", "gauge", "Bytes in spill files now.", NULL, RP_COUNT_LOAD(m->spill->disk_in_use));
		rp_metric(&b, "replicant_memory_bytes", "gauge", "Bytes charged to --max-memory (assembled transactions and the sink's working state).", NULL, RP_COUNT_LOAD(m->spill->mem_in_use));
		rp_metric(&b, "replicant_sink_memory_bytes", "gauge", "The sink's working state charged to --max-memory.", NULL, RP_COUNT_LOAD(m->spill->sink_in_use));
	}
	if (m->agg_stats)
	{
		/* live aggregates (rp_agg.c): rebuilds by reason, never by value */
		for (int r = 0; r < RP_AGG_REASON__COUNT; r++)
		{
			char		labels[64];

			snprintf(labels, sizeof(labels), "{reason=\"%s\"}", rp_agg_reason_name((RpAggReason) r));
			rp_metric(&b, "replicant_aggregate_rebuilds_total", "counter", r == 0 ? "Aggregate bindings built from the source, by reason." : NULL,
					  labels, RP_COUNT_LOAD(m->agg_stats->rebuilds[r]));
		}
		rp_metric(&b, "replicant_aggregate_cell_edits_total", "counter", "Aggregate cells written (set or removed).", NULL, RP_COUNT_LOAD(m->agg_stats->cell_edits));
		rp_metric(&b, "replicant_aggregate_changes_total", "counter", "Row changes folded into aggregate bindings.", NULL, RP_COUNT_LOAD(m->agg_stats->changes));
		rp_metric(&b, "replicant_aggregate_skipped_total", "counter", "Row changes a seed had already seen.", NULL, RP_COUNT_LOAD(m->agg_stats->skipped));
		rp_metric(&b, "replicant_aggregate_state_bytes", "gauge", "Bytes of every binding's fold state.", NULL,
				  RP_COUNT_LOAD(m->agg_stats->state_bytes));
	}
	/* the mirror (rp_sink_pg.c): changes the destination had no row for, by table name */
	{
		char		table[256];
		uint64_t	count;

		for (int i = 0; rp_pg_divergence_get(i, table, sizeof(table), &count); i++)
		{
			RpBuf		labels;

			rp_buf_init(&labels, 128);
			rp_buf_put_text(&labels, "{table=\"");
			for (const char *p = table; *p; p++)
			{
				if (*p == '"' || *p == '\\')
					rp_buf_put_char(&labels, '\\');
				if (*p != '\n')
					rp_buf_put_char(&labels, *p);
			}
			rp_buf_put_text(&labels, "\"}");
			rp_buf_put_char(&labels, '\0');
			rp_metric(&b, "replicant_divergences_total", "counter", i == 0 ? "Mirror updates and deletes that matched no destination row, by table." : NULL,
					  labels.data, count);
			rp_buf_free(&labels);
		}
	}
	for (int h = 0; h < RP_HALT__COUNT; h++)
	{
		char		labels[64];

		snprintf(labels, sizeof(labels), "{reason=\"%s\"}", rp_halt_name((RpHalt) h));
		rp_metric(&b, "replicant_halts_total", "counter", h == 0 ? "Stops by reason." : NULL, labels, RP_COUNT_LOAD(m->halts[h]));
	}
	rp_buf_put_char(&b, '\0');
	return b.data;
}

static enum MHD_Result
rp_metrics_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **state)
{
	RpMetrics  *m = cls;
	char	   *page;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (strcmp(method, "GET") != 0)
		return MHD_NO;
	page = rp_metrics_render(m);
	resp = MHD_create_response_from_buffer(strlen(page), page, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

int
rp_metrics_start(RpMetrics *m, int port, const RpDlCounters *count, const RpAsm *a, const RpSpill *spill)
{
	struct sockaddr_in addr;

	m->count = count;
	m->asm_ = a;
	m->spill = spill;
	if (port == 0)
		return 0;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t) port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t) port, NULL, NULL,
								 rp_metrics_answer, m, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
	if (m->daemon == NULL)
		return rp_fail(RP_HALT_NONE, "could not serve metrics on 127.0.0.1:%d", port);
	return 0;
}

void
rp_metrics_stop(RpMetrics *m)
{
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	m->daemon = NULL;
}
