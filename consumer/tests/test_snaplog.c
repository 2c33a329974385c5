/*
 * test_snaplog.c
 *    The log sinks' snapshot chunks (sinks/log/rp_snaplog.c) count their
 *    oversize stubs into the snapshot run's counter the chunk carries
 *    (RpSnapshotCtx.oversize: the replicant_snapshot_oversize_total
 *    metric), one per stub and nothing for a row that fits; a chunk
 *    without a counter (a caller that does not count) writes the same.
 *    Guarantee: the metric counts every oversize row of the dumps (G4's
 *    dead-letter path is visible), and no process-wide counter is shared
 *    by two snapshot runs.
 */
#include "ct_kit.h"

#include "base/rp_status.h"
#include "sinks/log/rp_snaplog.h"

#define RELID 16400

static const CtCol cols[] = {
	{"id", RP_ENC_INT8, 20, "int8", -1, RP_COL_PRIMARY_KEY},
	{"doc", RP_ENC_STRING, 25, "text", -1, 0},
};

static void
put_row(RpBuf *b, int64_t id, const char *doc)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_INSERT, RELID, 0, 0);

	rp_enc_tuple_start(b, 2);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u64(b, (uint64_t) id);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_cstr(b, doc);
	rp_buf_end_record(b, at);
}

/* Three rows, the second one longer than the record limit. */
static void
chunk(RpBuf *frame)
{
	ct_frame(frame);
	ct_relation(frame, RELID, "public", "doc", RP_IDENTITY_DEFAULT, 2, cols);
	put_row(frame, 1, "small");
	put_row(frame, 2, "a row far longer than the eighty bytes the test allows for one record");
	put_row(frame, 3, "small too");
}

static size_t
count_of(const RpBuf *out, const char *what)
{
	size_t		n = 0;
	const char *p = ct_cstr(out);

	while ((p = strstr(p, what)) != NULL)
	{
		n++;
		p += strlen(what);
	}
	return n;
}

/* One chunk through a snapshot log limited to max_record bytes a row (0: none). */
static void
run_chunk(size_t max_record, uint64_t *oversize, RpBuf *out)
{
	RpSinkEnv	env;
	RpRelation	rel;
	RpSnapshotCtx ctx;
	RpSnapLog	sl;
	RpBuf		frame;

	memset(&rel, 0, sizeof(rel));
	rel.relid = RELID;
	rel.schema = "public";
	rel.name = "doc";
	chunk(&frame);
	memset(&ctx, 0, sizeof(ctx));
	rp_sink_env_init(&env);
	env.max_record_bytes = max_record;
	rp_snaplog_init(&sl, &env);
	ctx.rel = &rel;
	ctx.first_chunk = true;
	ctx.last_chunk = true;
	ctx.snapshot_id = "01890a5d-ac96-774b-bcce-b302099a8057";
	ctx.snapshot_at_ms = 1796000523456LL;
	ctx.total = 3;
	ctx.nrows = 3;
	ctx.frame = (const unsigned char *) frame.data;
	ctx.frame_len = frame.len;
	ctx.oversize = oversize;
	rp_buf_init(out, 0);
	ck_assert_msg(rp_snaplog_chunk(&sl, &ctx, out, NULL, NULL) == 0, "%s", rp_error());
	rp_snaplog_free(&sl);
	rp_buf_free(&frame);
}

START_TEST(test_oversize_counted)
{
	uint64_t	oversize = 5;	/* counts on from where the run is */
	RpBuf		out;

	run_chunk(80, &oversize, &out);
	ck_assert_uint_eq(count_of(&out, "\"kind\":\"oversize\""), 1);
	ck_assert_uint_eq(count_of(&out, "\"kind\":\"row\""), 2);
	ck_assert_uint_eq(oversize, 6);
	rp_buf_free(&out);

	/* no counter: the same frames */
	run_chunk(80, NULL, &out);
	ck_assert_uint_eq(count_of(&out, "\"kind\":\"oversize\""), 1);
	ck_assert_uint_eq(count_of(&out, "\"kind\":\"row\""), 2);
	rp_buf_free(&out);

	/* every row fits: nothing counted */
	run_chunk(0, &oversize, &out);
	ck_assert_uint_eq(count_of(&out, "\"kind\":\"oversize\""), 0);
	ck_assert_uint_eq(oversize, 6);
	rp_buf_free(&out);
}

END_TEST

Suite	   *
ct_suite_snaplog(void)
{
	Suite	   *s = suite_create("snaplog");
	TCase	   *tc = ct_tcase("snaplog");

	tcase_add_test(tc, test_oversize_counted);
	suite_add_tcase(s, tc);
	return s;
}
