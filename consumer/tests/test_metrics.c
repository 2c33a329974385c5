/*
 * test_metrics.c
 *    The metrics page (base/rp_metrics.c) and the program's sources
 *    (cli/rp_cli_metrics.c): with every counter set, the page is, byte for
 *    byte, the one the consumer served before the page became a registry
 *    (the text below was rendered by the code of commit 028be18: names,
 *    labels, HELP and TYPE lines, order, label escaping); sources render in
 *    registration order, and a full registry refuses one more.  Built
 *    without libmicrohttpd (make MHD=no), the page is still rendered but
 *    serving it fails with the message --metrics-port prints.
 *    Guarantee: dashboards and the e2e scrapers keep reading the same page.
 *    Changed on purpose since (issue 46): replicant_lag_seconds counts from
 *    the oldest commit received and not yet durable, with
 *    replicant_checkpoint_age_seconds beside it; replicant_retries_total by
 *    cause after the halts; replicant_build_info and process_* last; every
 *    sample may carry the run's slot and sink labels.
 */
#include "ct_kit.h"

#include "rp_alloc.h"
#include "agg/rp_agg.h"
#include "base/rp_metrics.h"
#include "cli/rp_cli_metrics.h"
#include "snapshot/rp_snapshot.h"

static const char golden[] =
"# HELP replicant_transactions_total Transactions delivered to the sink.\n"
"# TYPE replicant_transactions_total counter\n"
"replicant_transactions_total 1\n"
"# HELP replicant_changes_total Rows, truncates and messages delivered.\n"
"# TYPE replicant_changes_total counter\n"
"replicant_changes_total 2\n"
"# HELP replicant_batches_total Batches delivered.\n"
"# TYPE replicant_batches_total counter\n"
"replicant_batches_total 3\n"
"# HELP replicant_messages_total Non-transactional messages delivered.\n"
"# TYPE replicant_messages_total counter\n"
"replicant_messages_total 4\n"
"# HELP replicant_schema_changes_total Schema changes seen.\n"
"# TYPE replicant_schema_changes_total counter\n"
"replicant_schema_changes_total 5\n"
"# HELP replicant_early_chunks_total Stream blocks applied before their transaction committed.\n"
"# TYPE replicant_early_chunks_total counter\n"
"replicant_early_chunks_total 6\n"
"# HELP replicant_early_commits_total Streamed transactions committed after an early apply.\n"
"# TYPE replicant_early_commits_total counter\n"
"replicant_early_commits_total 7\n"
"# HELP replicant_early_drops_total Early applies dropped (abort, or another commit first).\n"
"# TYPE replicant_early_drops_total counter\n"
"replicant_early_drops_total 8\n"
"# HELP replicant_checkpoint_lsn End LSN of the last durable unit.\n"
"# TYPE replicant_checkpoint_lsn gauge\n"
"replicant_checkpoint_lsn 1000\n"
"# HELP replicant_lag_bytes Server WAL position minus the checkpoint.\n"
"# TYPE replicant_lag_bytes gauge\n"
"replicant_lag_bytes 500\n"
"# HELP replicant_lag_seconds Seconds behind the source: now minus the commit time of the oldest transaction received and not yet durable (0 when caught up).\n"
"# TYPE replicant_lag_seconds gauge\n"
"replicant_lag_seconds 0.000\n"
"# HELP replicant_checkpoint_age_seconds Seconds since the durable checkpoint last moved, while something received waits for it (0 when caught up).\n"
"# TYPE replicant_checkpoint_age_seconds gauge\n"
"replicant_checkpoint_age_seconds 0.000\n"
"# HELP replicant_snapshot_oversize_total Oversize stubs written in snapshot dumps.\n"
"# TYPE replicant_snapshot_oversize_total counter\n"
"replicant_snapshot_oversize_total 15\n"
"# HELP replicant_dead_letters_dropped_total Oversize rows dropped for want of a dead-letter file, by reason.\n"
"# TYPE replicant_dead_letters_dropped_total counter\n"
"replicant_dead_letters_dropped_total{reason=\"too_large\"} 16\n"
"# HELP replicant_snapshots_total Table dumps of the initial snapshot by store and status.\n"
"# TYPE replicant_snapshots_total counter\n"
"replicant_snapshots_total{store=\"public.a\",status=\"complete\"} 1\n"
"replicant_snapshots_total{store=\"odd.\\\"q\\\\x\",status=\"aborted\"} 1\n"
"# HELP replicant_snapshot_rows_oversize_total Oversize stubs in each table's dump.\n"
"# TYPE replicant_snapshot_rows_oversize_total counter\n"
"replicant_snapshot_rows_oversize_total{store=\"public.a\"} 3\n"
"replicant_snapshot_rows_oversize_total{store=\"odd.\\\"q\\\\x\"} 0\n"
"# HELP replicant_received_bytes_total Frame bytes received.\n"
"# TYPE replicant_received_bytes_total counter\n"
"replicant_received_bytes_total 12345\n"
"# HELP replicant_dedup_skipped_total Transactions skipped at or below the watermark.\n"
"# TYPE replicant_dedup_skipped_total counter\n"
"replicant_dedup_skipped_total 9\n"
"# HELP replicant_spills_total Transactions spilled to disk.\n"
"# TYPE replicant_spills_total counter\n"
"replicant_spills_total 10\n"
"# HELP replicant_spill_bytes Bytes in spill files now.\n"
"# TYPE replicant_spill_bytes gauge\n"
"replicant_spill_bytes 11\n"
"# HELP replicant_memory_bytes Bytes charged to --max-memory (assembled transactions and the sink's working state).\n"
"# TYPE replicant_memory_bytes gauge\n"
"replicant_memory_bytes 12\n"
"# HELP replicant_sink_memory_bytes The sink's working state charged to --max-memory.\n"
"# TYPE replicant_sink_memory_bytes gauge\n"
"replicant_sink_memory_bytes 13\n"
"# HELP replicant_aggregate_rebuilds_total Aggregate bindings built from the source, by reason.\n"
"# TYPE replicant_aggregate_rebuilds_total counter\n"
"replicant_aggregate_rebuilds_total{reason=\"seed\"} 20\n"
"replicant_aggregate_rebuilds_total{reason=\"collision\"} 21\n"
"replicant_aggregate_rebuilds_total{reason=\"unreadable\"} 22\n"
"replicant_aggregate_rebuilds_total{reason=\"no_old_row\"} 23\n"
"replicant_aggregate_rebuilds_total{reason=\"inconsistent\"} 24\n"
"replicant_aggregate_rebuilds_total{reason=\"retry\"} 25\n"
"# HELP replicant_aggregate_cell_edits_total Aggregate cells written (set or removed).\n"
"# TYPE replicant_aggregate_cell_edits_total counter\n"
"replicant_aggregate_cell_edits_total 30\n"
"# HELP replicant_aggregate_changes_total Row changes folded into aggregate bindings.\n"
"# TYPE replicant_aggregate_changes_total counter\n"
"replicant_aggregate_changes_total 31\n"
"# HELP replicant_aggregate_skipped_total Row changes a seed had already seen.\n"
"# TYPE replicant_aggregate_skipped_total counter\n"
"replicant_aggregate_skipped_total 32\n"
"# HELP replicant_aggregate_state_bytes Bytes of every binding's fold state.\n"
"# TYPE replicant_aggregate_state_bytes gauge\n"
"replicant_aggregate_state_bytes 33\n"
"# HELP replicant_halts_total Stops by reason.\n"
"# TYPE replicant_halts_total counter\n"
"replicant_halts_total{reason=\"error\"} 0\n"
"replicant_halts_total{reason=\"malformed_record\"} 3\n"
"replicant_halts_total{reason=\"protocol\"} 6\n"
"replicant_halts_total{reason=\"unknown_relation\"} 9\n"
"replicant_halts_total{reason=\"schema_change\"} 12\n"
"replicant_halts_total{reason=\"spill_limit\"} 15\n"
"replicant_halts_total{reason=\"sink\"} 18\n"
"replicant_halts_total{reason=\"gap\"} 21\n"
"replicant_halts_total{reason=\"identity\"} 24\n"
"replicant_halts_total{reason=\"config\"} 27\n"
"replicant_halts_total{reason=\"in_use\"} 30\n"
"# HELP replicant_retries_total Retries after trouble that may pass, by what failed.\n"
"# TYPE replicant_retries_total counter\n"
"replicant_retries_total{cause=\"source\"} 40\n"
"replicant_retries_total{cause=\"sink\"} 41\n"
"# HELP replicant_build_info This build's version and the source server's major version (0 until connected).\n"
"# TYPE replicant_build_info gauge\n"
"replicant_build_info{version=\"9.9.9\",server_major=\"17\"} 1\n";

START_TEST(test_page_identical)
{
	RpMetrics	m;
	RpDlCounters c;
	RpAsm		a;
	RpSpill		sp;
	RpSnapStats st;
	RpCliMetrics cm;
	char	   *stores[] = {"public.a", "odd.\"q\\\nx"};
	bool		complete[] = {true, false};
	uint64_t	store_oversize[] = {3, 0};
	RpAgg	   *agg = rp_agg_new();
	char	   *page;

	rp_metrics_init(&m);
	memset(&c, 0, sizeof(c));
	memset(&a, 0, sizeof(a));
	memset(&sp, 0, sizeof(sp));
	memset(&st, 0, sizeof(st));
	c.txns = 1;
	c.changes = 2;
	c.batches = 3;
	c.messages = 4;
	c.schema_changes = 5;
	c.early_chunks = 6;
	c.early_commits = 7;
	c.early_drops = 8;
	c.checkpoint_lsn = 1000;
	m.server_wal_end = 1500;
	m.bytes = 12345;
	for (int h = 0; h < RP_HALT__COUNT; h++)
		m.halts[h] = (uint64_t) h * 3;
	m.retries[RP_RETRY_SOURCE] = 40;
	m.retries[RP_RETRY_SINK] = 41;
	m.server_version = 170004;
	m.version = "9.9.9";
	a.skipped = 9;
	sp.spills = 10;
	sp.disk_in_use = 11;
	sp.mem_in_use = 12;
	sp.sink_in_use = 13;
	st.rows = 14;
	st.oversize = 15;
	st.dlq_dropped = 16;
	st.nstores = 2;
	st.store_oversize = store_oversize;
	st.stores = stores;
	st.complete = complete;
	for (int r = 0; r < RP_AGG_REASON__COUNT; r++)
		agg->stats.rebuilds[r] = 20 + (uint64_t) r;
	agg->stats.cell_edits = 30;
	agg->stats.changes = 31;
	agg->stats.skipped = 32;
	agg->stats.state_bytes = 33;

	memset(&cm, 0, sizeof(cm));
	cm.m = &m;
	cm.count = &c;
	cm.snap = &st;
	cm.asm_ = &a;
	cm.spill = &sp;
	cm.stream_ready = true;		/* the run set them up */
	cm.agg = agg;
	ck_assert_int_eq(rp_cli_metrics_register(&m, &cm), 0);
	page = rp_metrics_render(&m);
	/* the process's own figures, which vary, after it */
	ck_assert_int_eq(strncmp(page, golden, strlen(golden)), 0);
	ck_assert_ptr_nonnull(strstr(page, "\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "));
	ck_assert_ptr_nonnull(strstr(page, "\nprocess_resident_memory_bytes "));
	ck_assert_ptr_nonnull(strstr(page, "\nprocess_open_fds "));
	ck_assert_ptr_nonnull(strstr(page, "\nprocess_max_fds "));
	ck_assert_ptr_nonnull(strstr(page, "\nprocess_start_time_seconds "));
	rp_free(page);
	rp_agg_free(agg);
}

END_TEST

/* Without aggregates and before any delivery: those sources are not registered. */
START_TEST(test_page_parts)
{
	RpMetrics	m;
	RpSnapStats st;
	RpCliMetrics cm;
	char	   *page;

	rp_metrics_init(&m);
	memset(&st, 0, sizeof(st));
	memset(&cm, 0, sizeof(cm));
	cm.m = &m;
	cm.snap = &st;
	ck_assert_int_eq(rp_cli_metrics_register(&m, &cm), 0);
	page = rp_metrics_render(&m);
	ck_assert_ptr_null(strstr(page, "replicant_transactions_total"));
	ck_assert_ptr_null(strstr(page, "replicant_aggregate_"));
	ck_assert_ptr_null(strstr(page, "replicant_spills_total"));
	ck_assert_ptr_nonnull(strstr(page, "replicant_snapshot_oversize_total 0\n"));

	/*
	 * rows by store come from the progress display's source
	 * (rp_cli_progline.c)
	 */
	ck_assert_ptr_null(strstr(page, "replicant_snapshot_rows_total"));
	ck_assert_ptr_nonnull(strstr(page, "replicant_halts_total{reason=\"in_use\"} 0\n"));
	rp_free(page);
}

END_TEST

static void
source_a(RpBuf *out, const void *arg)
{
	rp_metrics_sample(out, "t_a", "gauge", "First.", NULL, *(const uint64_t *) arg);
}

static void
source_b(RpBuf *out, const void *arg)
{
	rp_metrics_sample(out, "t_b", "counter", NULL, "{k=\"v\"}", 2);
}

START_TEST(test_registry)
{
	RpMetrics	m;
	uint64_t	v = 7;
	char	   *page;

	rp_metrics_init(&m);
	page = rp_metrics_render(&m);
	ck_assert_str_eq(page, "");
	rp_free(page);
	ck_assert_int_eq(rp_metrics_add(&m, source_b, NULL), 0);
	ck_assert_int_eq(rp_metrics_add(&m, source_a, &v), 0);
	page = rp_metrics_render(&m);
	ck_assert_str_eq(page, "t_b{k=\"v\"} 2\n# HELP t_a First.\n# TYPE t_a gauge\nt_a 7\n");
	rp_free(page);
	/* the source reads its counter when the page is rendered */
	v = 8;
	page = rp_metrics_render(&m);
	ck_assert_ptr_nonnull(strstr(page, "t_a 8\n"));
	rp_free(page);
	while (m.nsources < RP_METRICS_MAX_SOURCES)
		ck_assert_int_eq(rp_metrics_add(&m, source_b, NULL), 0);
	rp_error_clear();
	ck_assert_int_eq(rp_metrics_add(&m, source_b, NULL), -1);
	ck_assert_ptr_nonnull(strstr(rp_error(), "too many metrics sources"));
	/* the run's labels on every sample, first; comments as they were */
	rp_metrics_set_labels(&m, "s\"1", "postgresql");
	m.nsources = 0;
	ck_assert_int_eq(rp_metrics_add(&m, source_b, NULL), 0);
	ck_assert_int_eq(rp_metrics_add(&m, source_a, &v), 0);
	page = rp_metrics_render(&m);
	ck_assert_str_eq(page, "t_b{slot=\"s\\\"1\",sink=\"postgresql\",k=\"v\"} 2\n# HELP t_a First.\n# TYPE t_a gauge\n"
					 "t_a{slot=\"s\\\"1\",sink=\"postgresql\"} 8\n");
	rp_free(page);
	/* an address literal, either family; a name or garbage is refused */
	ck_assert_int_eq(rp_metrics_set_address(&m, "0.0.0.0"), 0);
	ck_assert_int_eq(rp_metrics_set_address(&m, "::1"), 0);
	ck_assert_int_eq(rp_metrics_set_address(&m, "localhost"), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_CONFIG);
	ck_assert_int_eq(rp_metrics_set_address(&m, "1.2.3"), -1);
	/* seconds behind: from the oldest pending commit, 0 when none */
	ck_assert(rp_metrics_lag_seconds(0, 5000000) == 0.0);
	ck_assert(rp_metrics_lag_seconds(2000000, 5000000) == 3.0);
	ck_assert(rp_metrics_lag_seconds(6000000, 5000000) == 0.0);
	/* port 0: counters only, in either build */
	ck_assert_int_eq(rp_metrics_start(&m, 0), 0);
	rp_metrics_stop(&m);
}

END_TEST

START_TEST(test_build)
{
	RpMetrics	m;

	rp_metrics_init(&m);
	rp_error_clear();
#ifdef RP_HAVE_MICROHTTPD
	ck_assert(rp_metrics_available());
#else
	ck_assert(!rp_metrics_available());
	ck_assert_int_eq(rp_metrics_start(&m, 9187), -1);
	ck_assert_str_eq(rp_error(), "this replicant was built without metrics (libmicrohttpd)");
	ck_assert_int_eq(rp_error_halt(), RP_HALT_CONFIG);
	rp_metrics_stop(&m);
#endif
}

END_TEST

Suite	   *
ct_suite_metrics(void)
{
	Suite	   *s = suite_create("metrics");
	TCase	   *tc = tcase_create("metrics");

	tcase_add_test(tc, test_page_identical);
	tcase_add_test(tc, test_page_parts);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_build);
	suite_add_tcase(s, tc);
	return s;
}
