/*
 * pg_two_mirrors.c
 *    Two mirror sinks in one process, against one destination (issue 12):
 *    each with its own slot, bookkeeping schema and schema prefix.  Both
 *    apply transactions through the library's delivery, and each keeps its
 *    own checkpoint (G1: a replay of one changes nothing), its own tables,
 *    its own divergence counts (the metrics page of one does not show the
 *    other's) and its own snapshot state (a progress token stored for one
 *    is not the other's).  The last two were process-wide statics once.
 *
 * Needs a real server: RP_TEST_DST is its connection string, set by
 * test/t/001_two_mirrors.pl, which starts the cluster.  Without it every
 * test FAILS (it is not a unit test, and make unitcheck does not run it).
 */
#include "ct_kit.h"

#include <libpq-fe.h>

#include "sinks/mirror/rp_mirror.h"

#define REL_T 16384u			/* public.t: keyed (id, note, c3) */
#define REL_F 16390u			/* public.f: REPLICA IDENTITY FULL, no key
								 * (id, note) */

typedef struct Side
{
	const char *slot;
	RpMirrorOptions opts;
	RpSink	   *sink;
	RpAsm		as;
	RpDelivery	dl;
} Side;

static RpSpill sp;
static Side a,
			b;
static const char *dst;

/* Run sql on a session of its own; the test fails on an error. */
static void
dst_exec(const char *sql)
{
	PGconn	   *conn = PQconnectdb(dst);
	PGresult   *res;

	ck_assert_msg(PQstatus(conn) == CONNECTION_OK, "destination: %s", PQerrorMessage(conn));
	res = PQexec(conn, sql);
	ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK,
				  "%s: %s", sql, PQresultErrorMessage(res));
	PQclear(res);
	PQfinish(conn);
}

/* The one value sql returns, as text (caller frees). */
static char *
dst_value(const char *sql)
{
	PGconn	   *conn = PQconnectdb(dst);
	PGresult   *res;
	char	   *v;

	ck_assert_msg(PQstatus(conn) == CONNECTION_OK, "destination: %s", PQerrorMessage(conn));
	res = PQexec(conn, sql);
	ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1,
				  "%s: %s", sql, PQresultErrorMessage(res));
	v = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(conn);
	return v;
}

static void
dst_expect(const char *sql, const char *want)
{
	char	   *got = dst_value(sql);

	ck_assert_msg(strcmp(got, want) == 0, "%s: got \"%s\", want \"%s\"", sql, got, want);
	free(got);
}

/* The relations, described once on the side's assembler. */
static void
describe(Side *x)
{
	RpBuf		f;
	size_t		at;

	ct_frame(&f);
	ct_rel(&f, REL_T, "public", "t", 3);
	at = rp_enc_relation_start(&f, REL_F, "public", "f", RP_IDENTITY_FULL, 2);
	rp_enc_relation_column(&f, 1, "id", 23, "integer", -1, RP_ENC_INT4, 0);
	rp_enc_relation_column(&f, 2, "note", 25, "text", -1, RP_ENC_STRING, 0);
	rp_buf_end_record(&f, at);
	ck_assert_int_eq(ct_feed(&x->as, &f, 0x10), 0);
}

static void
side_open(Side *x, const char *slot, const char *bk, const char *prefix)
{
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);

	memset(x, 0, sizeof(*x));
	x->slot = slot;
	x->opts.conninfo = dst;
	x->opts.slot = slot;
	x->opts.bookkeeping_schema = bk;
	x->opts.schema_prefix = prefix;
	x->opts.divergence_skip = true;
	rp_error_clear();
	x->sink = rp_mirror_open(&x->opts, NULL);
	ck_assert_msg(x->sink != NULL, "opening the mirror of %s: %s", slot, rp_error());
	x->sink->spill = &sp;
	rp_asm_init(&x->as, &sp, 0);
	snprintf(ck.slot, sizeof(ck.slot), "%s", slot);
	ck_assert_int_eq(rp_deliver_init(&x->dl, x->sink, &ck, NULL, NULL, &l), 0);
	describe(x);
}

static void
side_close(Side *x)
{
	if (x->sink == NULL)
		return;
	rp_deliver_free(&x->dl);
	rp_asm_free(&x->as);
	x->sink->close(x->sink);
	x->sink = NULL;
}

/* Hand frame f (one whole transaction committed at lsn) to the side's mirror. */
static void
side_apply(Side *x, RpBuf *f, uint64_t lsn)
{
	RpItem	   *it;

	rp_error_clear();
	ck_assert_int_eq(ct_feed(&x->as, f, lsn), 0);
	it = rp_asm_pop(&x->as);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_TXN);
	ck_assert_msg(rp_deliver_item(&x->dl, it, 0) == 0, "%s: %s", x->slot, rp_error());
	ck_assert_msg(rp_deliver_flush(&x->dl, true, 0) == 0, "%s: %s", x->slot, rp_error());
}

/* n inserts into public.t, ids first.., committed at lsn. */
static void
side_inserts(Side *x, uint32_t xid, uint64_t lsn, int n, int32_t first)
{
	RpBuf		f;

	ct_txn_frame(&f, false, REL_T, 3, xid, lsn, n, first, x->slot);
	side_apply(x, &f, lsn);
}

static void
side_ck(Side *x, uint64_t commit_lsn)
{
	RpCheckpoint ck;

	memset(&ck, 0, sizeof(ck));
	ck_assert_int_eq(x->sink->checkpoint(x->sink, &ck), 1);
	ck_assert_str_eq(ck.slot, x->slot);
	ck_assert_uint_eq(ck.commit_lsn, commit_lsn);
}

static void
setup(void)
{
	dst = getenv("RP_TEST_DST");
	ck_assert_msg(dst != NULL && dst[0] != '\0',
				  "RP_TEST_DST is not set: this test needs a server (run test/t/001_two_mirrors.pl)");
	ct_setup_dir();
	ck_assert_int_eq(rp_spill_init(&sp, ct_path("spill"), 64 << 20, 1 << 30), 0);
	dst_exec("SET client_min_messages = warning; DROP SCHEMA IF EXISTS a_public, b_public, rp_bk_a, rp_bk_b CASCADE;"
			 "CREATE SCHEMA a_public; CREATE SCHEMA b_public;"
			 "CREATE TABLE a_public.t (id integer PRIMARY KEY, note text, c3 bigint);"
			 "CREATE TABLE b_public.t (id integer PRIMARY KEY, note text, c3 bigint);"
			 "CREATE TABLE a_public.f (id integer, note text);"
			 "CREATE TABLE b_public.f (id integer, note text)");
	side_open(&a, "two_a", "rp_bk_a", "a_");
	side_open(&b, "two_b", "rp_bk_b", "b_");
}

static void
teardown(void)
{
	side_close(&a);
	side_close(&b);
	if (sp.dir)
		rp_free(sp.dir);
	ct_teardown_dir();
}

/* Each applies its own transactions, to its own tables, under its own checkpoint. */
START_TEST(test_apart)
{
	RpBuf		f;

	side_inserts(&a, 10, 0x1000, 5, 1);
	side_inserts(&b, 20, 0x3000, 3, 100);
	side_inserts(&a, 11, 0x2000, 5, 6);
	side_ck(&a, 0x2000);
	side_ck(&b, 0x3000);
	dst_expect("SELECT count(*) || ' ' || sum(id) FROM a_public.t", "10 55");
	dst_expect("SELECT count(*) || ' ' || sum(id) FROM b_public.t", "3 303");
	dst_expect("SELECT string_agg(DISTINCT note, ',') FROM a_public.t", "two_a");
	dst_expect("SELECT string_agg(DISTINCT note, ',') FROM b_public.t", "two_b");
	/* one checkpoint row each, in its own bookkeeping schema */
	dst_expect("SELECT string_agg(slot || ' ' || commit_lsn, ',') FROM rp_bk_a.checkpoint", "two_a 0/2000");
	dst_expect("SELECT string_agg(slot || ' ' || commit_lsn, ',') FROM rp_bk_b.checkpoint", "two_b 0/3000");

	/*
	 * a replay to b of what a holds is not a's: b applies it (its checkpoint
	 * is below)
	 */
	ct_txn_frame(&f, false, REL_T, 3, 21, 0x4000, 2, 1, "two_b");
	side_apply(&b, &f, 0x4000);
	dst_expect("SELECT count(*) FROM b_public.t", "5");
	/* ... and a replay to a is skipped by a's own checkpoint */
	side_inserts(&a, 10, 0x1000, 5, 50);
	dst_expect("SELECT count(*) FROM a_public.t WHERE id >= 50", "0");
	side_ck(&a, 0x2000);
	side_ck(&b, 0x4000);

	/*
	 * both sessions open side by side, named by the one opener
	 * (rp_mirror_session_open)
	 */
	dst_expect("SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE application_name = 'replicant'", "2");
}

END_TEST

/* A divergence counts on the mirror it happened in, and on the metrics page of that one only. */
START_TEST(test_divergences_apart)
{
	RpBuf		f;
	size_t		at;
	char		name[256];
	uint64_t	n = 0;

	ct_frame(&f);
	rp_enc_begin(&f, 30, 0x5000, 1700000000000000LL);
	at = rp_enc_change_start(&f, RP_TAG_DELETE, REL_F, RP_CHANGE_OLD_FULL, 0);
	rp_enc_tuple_start(&f, 2);
	rp_enc_datum_kind(&f, RP_DATUM_VALUE);
	rp_buf_put_u32(&f, 7);
	rp_enc_datum_kind(&f, RP_DATUM_VALUE);
	rp_buf_put_cstr(&f, "gone");
	rp_buf_end_record(&f, at);
	rp_enc_commit(&f, 0x5000, 0x5028, 1700000000000000LL);
	side_apply(&a, &f, 0x5000);
	ck_assert_int_eq(rp_mirror_divergence_get(a.sink, 0, name, sizeof(name), &n), 1);
	ck_assert_str_eq(name, "a_public.f");
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(rp_mirror_divergence_get(a.sink, 1, name, sizeof(name), &n), 0);
	ck_assert_int_eq(rp_mirror_divergence_get(b.sink, 0, name, sizeof(name), &n), 0);
	side_ck(&a, 0x5000);
}

END_TEST

/* A snapshot progress token stored for one mirror is that one's alone. */
START_TEST(test_snapshot_apart)
{
	RpRelation	rel;
	char	   *token = NULL;

	memset(&rel, 0, sizeof(rel));
	rel.relid = REL_T;
	/* the first call makes each one's progress table */
	ck_assert_int_eq(a.sink->snapshot_progress(a.sink, &rel, &token), 0);
	ck_assert_int_eq(b.sink->snapshot_progress(b.sink, &rel, &token), 0);
	dst_exec("INSERT INTO rp_bk_a.snapshot_progress (system_id, slot, relid, timeline, dest_table, mode, token, rows)"
			 " VALUES ('1', 'two_a', 16384, 1, 'a_public.t', 'merge', 'token-of-a', 0)");
	ck_assert_int_eq(a.sink->snapshot_progress(a.sink, &rel, &token), 1);
	ck_assert_str_eq(token, "token-of-a");
	rp_free(token);
	token = NULL;
	ck_assert_int_eq(b.sink->snapshot_progress(b.sink, &rel, &token), 0);
	ck_assert_ptr_null(token);
}

END_TEST

static Suite *
two_mirrors_suite(void)
{
	Suite	   *s = suite_create("two_mirrors");
	TCase	   *tc = tcase_create("two_mirrors");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_apart);
	tcase_add_test(tc, test_divergences_apart);
	tcase_add_test(tc, test_snapshot_apart);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * Not one of the runner's suites (it needs a server): its own program, run
 * by test/t/001_two_mirrors.pl.  Non-zero unless every test ran and passed.
 */
int
main(void)
{
	SRunner    *sr = srunner_create(two_mirrors_suite());
	int			ran,
				failed;

	srunner_run_all(sr, CK_NORMAL);
	ran = srunner_ntests_run(sr);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return ran > 0 && failed == 0 ? 0 : 1;
}
