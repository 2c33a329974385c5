/*
 * test_sink_env.c
 *    What a sink is given when it opens (RpSinkEnv, stream/rp_sink.h) and
 *    through its callbacks, instead of process-wide state (issue 12): two
 *    log sinks in one process keep their own snapshot-log limits,
 *    dead-letter files and oversize counters; handle_snapshot_complete
 *    stores the checkpoint it is given, the source's identity included;
 *    backfill handles are independent of each other.
 */
#include "ct_kit.h"
#include "backfill/rp_backfill.h"
#include "base/rp_uuid7.h"
#include "stream/rp_sink.h"
#include "sinks/log/rp_logsink.h"

#define REL 16384u

static void
setup(void)
{
	ct_setup_dir();
}

static void
teardown(void)
{
	ct_teardown_dir();
}

/*
 * One whole table's copy in one chunk: row 1 carries a note of note_len
 * bytes, row 2 a short one; oversize stubs are counted into *oversize
 * (the snapshot run's counter), when not NULL.
 */
static void
snapshot_table(RpSink *s, size_t note_len, uint64_t *oversize)
{
	RpUuid7Gen	ids = RP_UUID7_GEN_INIT;
	RpRelation	rel;
	RpSnapshotCtx ctx;
	RpBuf		frame;
	RpUuid		u;
	char		id[RP_UUID_TEXT_LEN + 1];
	char	   *note = malloc(note_len + 1);

	memset(note, 'x', note_len);
	note[note_len] = '\0';
	memset(&rel, 0, sizeof(rel));
	rel.relid = REL;
	rel.schema = "public";
	rel.name = "t";
	ct_frame(&frame);
	ct_rel(&frame, REL, "public", "t", 2);
	ct_insert(&frame, REL, 0, 2, 1, note);
	ct_insert(&frame, REL, 0, 2, 2, "short");
	ck_assert_int_eq(rp_uuid7_now(&ids, &u), 0);
	rp_uuid7_gen_free(&ids);
	rp_uuid_text(&u, id);
	id[RP_UUID_TEXT_LEN] = '\0';

	memset(&ctx, 0, sizeof(ctx));
	ctx.rel = &rel;
	ctx.snapshot_lsn = 0x1000;
	ctx.first_chunk = true;
	ctx.last_chunk = true;
	ctx.progress_token = "";
	ctx.snapshot_id = id;
	ctx.snapshot_at_ms = 1700000000000LL;
	ctx.total = 2;
	ctx.nrows = 2;
	ctx.frame = (const unsigned char *) frame.data;
	ctx.frame_len = frame.len;
	ctx.oversize = oversize;
	ck_assert_msg(s->handle_snapshot(s, NULL, &ctx) == 0, "%s", rp_error());
	rp_buf_free(&frame);
	free(note);
}

/*
 * Two file sinks, one with a 256-byte record limit and its own dead-letter
 * file, one without a limit: the same 1,000-byte row is a stub in one log
 * and whole in the other, and only the first counts it.  With the limits
 * process-wide (the rp_snaplog_* globals) the last configuration won.
 */
START_TEST(test_two_log_sinks_own_limits)
{
	RpSinkEnv	small,
				plain;
	uint64_t	small_over = 0,
				plain_over = 0;
	RpSink	   *a,
			   *b;
	char	   *la,
			   *lb,
			   *dlq;
	char		dlqpath[600];

	snprintf(dlqpath, sizeof(dlqpath), "%s", ct_path("a.dead-letter"));
	rp_sink_env_init(&small);
	small.max_record_bytes = 256;
	small.dlq_path = dlqpath;
	rp_sink_env_init(&plain);

	a = rp_sink_file_open(ct_path("a.jsonl"), &small);
	ck_assert_msg(a != NULL, "%s", rp_error());
	b = rp_sink_file_open(ct_path("b.jsonl"), &plain);
	ck_assert_msg(b != NULL, "%s", rp_error());
	/* the env is the caller's: the sinks keep their own copies */
	memset(&small, 0, sizeof(small));
	memset(dlqpath, 0, sizeof(dlqpath));

	snapshot_table(a, 1000, &small_over);
	snapshot_table(b, 1000, &plain_over);
	a->close(a);
	b->close(b);

	ck_assert_uint_eq(small_over, 1);
	ck_assert_uint_eq(plain_over, 0);
	la = ct_slurp(ct_path("a.jsonl"), NULL);
	lb = ct_slurp(ct_path("b.jsonl"), NULL);
	ck_assert_int_eq(ct_count(la, "xxxxxxxxxxxxxxxx"), 0);
	ck_assert_int_eq(ct_count(la, "\"oversize\""), 1);
	ck_assert_int_eq(ct_count(lb, "\"oversize\""), 0);
	ck_assert_int_gt(ct_count(lb, "xxxxxxxxxxxxxxxx"), 0);
	ck_assert_int_eq(ct_count(la, "short"), 1);
	ck_assert_int_eq(ct_count(lb, "short"), 1);
	/* the stub's row went to a's dead-letter file, b has none */
	ck_assert(ct_exists(ct_path("a.dead-letter")));
	dlq = ct_slurp(ct_path("a.dead-letter"), NULL);
	ck_assert_int_gt(ct_count(dlq, "xxxxxxxxxxxxxxxx"), 0);
	free(dlq);
	free(la);
	free(lb);
}

END_TEST

/*
 * handle_snapshot_complete stores the checkpoint it is given: the
 * consistent point and the source's system id, timeline and slot (no
 * longer read from a global the snapshot set).
 */
START_TEST(test_snapshot_complete_stores_checkpoint)
{
	RpCheckpoint ck = ct_ck(0x2fff, 0x3000);
	RpCheckpoint got;
	RpSink	   *s = rp_sink_file_open(ct_path("c.jsonl"), NULL);

	ck_assert_msg(s != NULL, "%s", rp_error());
	snapshot_table(s, 10, NULL);
	ck.system_id = 6543210987654321ULL;
	ck.timeline = 3;
	snprintf(ck.slot, sizeof(ck.slot), "env_slot");
	ck_assert_msg(s->handle_snapshot_complete(s, &ck) == 0, "%s", rp_error());
	s->close(s);

	s = rp_sink_file_open(ct_path("c.jsonl"), NULL);
	ck_assert_msg(s != NULL, "%s", rp_error());
	memset(&got, 0, sizeof(got));
	ck_assert_int_eq(s->checkpoint(s, &got), 1);
	ck_assert_uint_eq(got.system_id, 6543210987654321ULL);
	ck_assert_uint_eq(got.timeline, 3);
	ck_assert_str_eq(got.slot, "env_slot");
	ck_assert_uint_eq(got.commit_lsn, 0x2fff);
	ck_assert_uint_eq(got.end_lsn, 0x3000);
	s->close(s);
}

END_TEST

/* Backfill handles: none running until started, each its own; NULL is none. */
START_TEST(test_backfill_handles)
{
	RpBackfill *a = rp_backfill_new();
	RpBackfill *b = rp_backfill_new();
	RpBfMsg		high;

	memset(&high, 0, sizeof(high));
	high.mark = RP_BF_HIGH;
	ck_assert(!rp_backfill_running(NULL));
	ck_assert_str_eq(rp_backfill_run_id(NULL), "");
	ck_assert(!rp_backfill_running(a));
	ck_assert_str_eq(rp_backfill_run_id(b), "");
	ck_assert_ptr_null(rp_backfill_take(a, &high));
	rp_backfill_stop(a);		/* none runs: nothing to do */
	rp_backfill_stop(NULL);
	rp_backfill_free(a);
	rp_backfill_free(b);
	rp_backfill_free(NULL);
}

END_TEST

Suite	   *
ct_suite_sink_env(void)
{
	Suite	   *s = suite_create("sink_env");
	TCase	   *tc = tcase_create("sink_env");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_two_log_sinks_own_limits);
	tcase_add_test(tc, test_snapshot_complete_stores_checkpoint);
	tcase_add_test(tc, test_backfill_handles);
	suite_add_tcase(s, tc);
	return s;
}
