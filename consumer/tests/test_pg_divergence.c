/*
 * test_pg_divergence.c
 *    The mirror's pure bookkeeping helpers (consumer/sinks/rp_mirror.c):
 *    SQL expanded with the bookkeeping schema (--bookkeeping-schema), and
 *    divergences (--on-divergence): a halt naming the table by default, a
 *    count by destination table name on the metrics page with skip.
 */
#include "ct_kit.h"

#include "rp_alloc.h"
#include "base/rp_metrics.h"
#include "cli/rp_cli_metrics.h"
#include "sinks/mirror/rp_mirror_int.h"

static RpMirrorTable *
table(const char *schema, const char *name, const char *qname)
{
	RpMirrorTable *t = rp_malloc0(sizeof(RpMirrorTable));

	t->dest_schema = rp_strndup(schema, strlen(schema));
	t->dest_name = rp_strndup(name, strlen(name));
	t->qname = rp_strndup(qname, strlen(qname));
	return t;
}

static void
table_free(RpMirrorTable *t)
{
	rp_free(t->dest_schema);
	rp_free(t->dest_name);
	rp_free(t->qname);
	rp_free(t);
}

START_TEST(test_bk_expand)
{
	static const char *const tmpl = "SELECT 1 FROM @bk.checkpoint JOIN @bk.messages USING (slot)";
	RpMirror	pg;
	const char *a,
			   *b;

	memset(&pg, 0, sizeof(pg));
	pg.bk = rp_strndup("\"my\"\"bk\"", 8);
	a = rp_mirror_bk(&pg, tmpl);
	ck_assert_str_eq(a, "SELECT 1 FROM \"my\"\"bk\".checkpoint JOIN \"my\"\"bk\".messages USING (slot)");
	/* the same template is expanded once: the string stays valid */
	b = rp_mirror_bk(&pg, tmpl);
	ck_assert_ptr_eq(a, b);
	ck_assert_str_eq(rp_mirror_bk(&pg, "no schema here"), "no schema here");
	for (int i = 0; i < pg.nbk; i++)
		rp_free(pg.bk_sql[i]);
	rp_free(pg.bk_sql);
	rp_free(pg.bk_tmpl);
	rp_free(pg.bk);
}

END_TEST

START_TEST(test_divergence)
{
	RpMirror	pg;
	RpSink		sink,
				other;
	RpMetrics	m;
	RpMirrorTable *t1 = table("public", "full_t", "\"public\".\"full_t\"");
	RpMirrorTable *t2 = table("odd", "q\"t", "\"odd\".\"q\"\"t\"");
	char	   *page;
	char		name[256];
	uint64_t	n;

	memset(&pg, 0, sizeof(pg));
	pthread_mutex_init(&pg.div.lock, NULL);
	memset(&sink, 0, sizeof(sink));
	sink.name = RP_MIRROR_SINK_NAME;
	sink.priv = &pg;
	memset(&other, 0, sizeof(other));
	other.name = "stdout";
	other.priv = &pg;
	rp_metrics_init(&m);
	sink.metrics = rp_mirror_metrics;
	ck_assert_int_eq(rp_metrics_add(&m, rp_cli_metrics_sink, &sink), 0);
	ck_assert_int_eq(rp_metrics_add(&m, rp_cli_metrics_sink, &other), 0);
	pg.bound_flushes = 3;
	/* halt: fail-closed, naming the table */
	rp_error_clear();
	ck_assert_int_eq(rp_mirror_divergence(&pg, t1, "a delete matched no row"), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_ptr_nonnull(strstr(rp_error(), "destination table \"public\".\"full_t\" has diverged: a delete matched no row"));
	/* skip: counted, by table */
	pg.opts.divergence_skip = true;
	rp_error_clear();
	ck_assert_int_eq(rp_mirror_divergence(&pg, t1, "an update matched no row"), 0);
	ck_assert_int_eq(rp_mirror_divergence(&pg, t2, "a delete matched no row"), 0);
	ck_assert_int_eq(rp_mirror_divergence(&pg, t2, "a delete matched no row"), 0);
	ck_assert_int_eq(rp_mirror_divergence_get(&sink, 0, name, sizeof(name), &n), 1);
	ck_assert_str_eq(name, "public.full_t");
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(rp_mirror_divergence_get(&sink, 1, name, sizeof(name), &n), 1);
	ck_assert_str_eq(name, "odd.q\"t");
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(rp_mirror_divergence_get(&sink, 2, name, sizeof(name), &n), 0);
	/* another kind of sink has none */
	ck_assert_int_eq(rp_mirror_divergence_get(&other, 0, name, sizeof(name), &n), 0);
	page = rp_metrics_render(&m);
	ck_assert_ptr_nonnull(strstr(page, "# TYPE replicant_divergences_total counter\n"));
	ck_assert_ptr_nonnull(strstr(page, "replicant_divergences_total{table=\"public.full_t\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(page, "replicant_divergences_total{table=\"odd.q\\\"t\"} 2\n"));
	/* bound flushes: the mirror's count, once (the other sink has none) */
	ck_assert_ptr_nonnull(strstr(page, "# TYPE replicant_mirror_bound_flushes_total counter\n"));
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_mirror_bound_flushes_total 3\n"));
	ck_assert_ptr_null(strstr(strstr(page, "replicant_mirror_bound_flushes_total 3\n") + 1, "replicant_mirror_bound_flushes_total "));
	ck_assert_int_eq(rp_mirror_bound_flushes_get(&other, &n), 0);
	ck_assert_int_eq(rp_mirror_bound_flushes_get(&sink, &n), 1);
	ck_assert_uint_eq(n, 3);
	rp_free(page);
	for (int i = 0; i < pg.div.n; i++)
		rp_free(pg.div.table[i]);
	table_free(t1);
	table_free(t2);
}

END_TEST

Suite	   *
ct_suite_pg_divergence(void)
{
	Suite	   *s = suite_create("pg_divergence");
	TCase	   *tc = tcase_create("pg_divergence");

	tcase_add_test(tc, test_bk_expand);
	tcase_add_test(tc, test_divergence);
	suite_add_tcase(s, tc);
	return s;
}
