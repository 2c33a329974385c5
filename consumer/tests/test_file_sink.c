/*
 * test_file_sink.c
 *    The file sink (consumer/sinks/rp_sink_file.c): an append-only JSON
 *    lines log whose checkpoint lines make it effect-once (G1).  Lines and
 *    checkpoint lines of delivered transactions, torn tails cut back to the
 *    last checkpoint line on open, a file without one emptied, a checkpoint
 *    line split across the 64 KiB backward-scan chunks still found, and
 *    SIGHUP rotation starting the new file with the current checkpoint;
 *    a stopped snapshot's durable frames kept by its progress file.
 */
#include "ct_kit.h"
#include "rp_json.h"
#include "sinks/log/rp_logsink.h"
#include "snapshot/rp_snaptoken.h"

#define REL 16384u
#define SCAN_CHUNK (64 * 1024)

static RpSpill sp;
static RpAsm as;
static char logpath[512];

static void
setup(void)
{
	ct_setup_dir();
	snprintf(logpath, sizeof(logpath), "%s/changes.jsonl", ct_dir);
	ck_assert_int_eq(rp_spill_init(&sp, ct_path("spill"), 1 << 20, 1 << 30), 0);
	rp_asm_init(&as, &sp, 0);
}

static void
teardown(void)
{
	rp_asm_free(&as);
	rp_free(sp.dir);
	ct_teardown_dir();
}

static RpSink *
open_sink(const char *path)
{
	RpSink	   *s = rp_sink_file_open(path, NULL);

	ck_assert_msg(s != NULL, "open failed: %s", rp_error());
	ck_assert_str_eq(s->name, "file");
	ck_assert(s->owns_checkpoint);
	return s;
}

/* A committed transaction of n inserts (ids first..), via the assembler. */
static RpItem *
txn(uint32_t xid, uint64_t lsn, int n, int32_t first, const char *note)
{
	RpBuf		b;
	RpItem	   *it;

	ct_txn_frame(&b, as.nraw == 0, REL, 2, xid, lsn, n, first, note);
	ck_assert_int_eq(ct_feed(&as, &b, lsn), 0);
	it = rp_asm_pop(&as);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_TXN);
	return it;
}

static void
deliver(RpDelivery *dl, RpItem *it)
{
	ck_assert_msg(rp_deliver_item(dl, it, 0) == 0, "delivery failed: %s", rp_error());
	ck_assert_msg(rp_deliver_flush(dl, true, 0) == 0, "flush failed: %s", rp_error());
}

static void
start(RpDelivery *dl, RpSink *s, int max_txns)
{
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(max_txns, CT_NEVER_BYTES, CT_NEVER_MS);

	/* as the CLI does: resume from the sink's own checkpoint */
	ck_assert_int_ge(s->checkpoint(s, &ck), 0);
	ck_assert_int_eq(rp_deliver_init(dl, s, &ck, NULL, NULL, &l), 0);
}

/* Split text into lines (in place); returns the count. */
static int
split_lines(char *text, char **lines, int max)
{
	int			n = 0;
	char	   *p = text;

	while (*p && n < max)
	{
		char	   *nl = strchr(p, '\n');

		lines[n++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

/* The checkpoint line the sink writes for ck (taken from a real file). */
static char *
ckpt_line_for(uint64_t commit, uint64_t end)
{
	char		path[600];
	RpSink	   *s;
	RpCheckpoint ck = ct_ck(commit, end);
	char	   *text,
			   *last,
			   *copy;
	size_t		len;

	snprintf(path, sizeof(path), "%s/ckline-%llx.jsonl", ct_dir, (unsigned long long) commit);
	s = open_sink(path);
	/* a message commits a checkpoint line of exactly ck */
	{
		RpMessage	m = {0};

		m.prefix = "p";
		m.content = (unsigned char *) "c";
		m.content_len = 1;
		ck_assert_int_eq(s->handle_message(s, &m, &ck), 0);
	}
	s->close(s);
	text = ct_slurp(path, &len);

	ck_assert(len > 0 && text[len - 1] == '\n');
	text[		len - 1] = '\0';

	last = strrchr(text, '\n');
	last = last ? last + 1 : text;

	ck_assert_msg(strncmp(last, "{\"kind\":\"checkpoint\",", 21) == 0, "%s", last);
	ck_assert_int_eq(asprintf(&copy, "%s\n", last), (int) strlen(last) + 1);
	free(text);
	unlink(path);
	return copy;
}

/*
 * n bytes of data lines (the last one maybe without newline): each opens
 * like an insert line, as a torn tail's lines do.
 */
static void
put_filler(FILE *f, size_t n, bool end_with_newline)
{
	static const char open[] = "{\"kind\":\"insert\",";

	while (n > 0)
	{
		size_t		len = n > 80 ? 64 : n;

		for (size_t i = 0; i + 1 < len; i++)
			fputc(i < sizeof(open) - 1 ? open[i] : 'x', f);
		if (len == n && !end_with_newline)
			fputc('x', f);
		else
			fputc('\n', f);
		n -= len;
	}
}

static void
expect_ck(RpSink *s, uint64_t commit, uint64_t end)
{
	RpCheckpoint ck;

	ck_assert_int_eq(s->checkpoint(s, &ck), 1);
	ck_assert_uint_eq(ck.commit_lsn, commit);
	ck_assert_uint_eq(ck.end_lsn, end);
	ck_assert_uint_eq(ck.system_id, 7412345678901234567ULL);
	ck_assert_uint_eq(ck.timeline, 1);
	ck_assert_str_eq(ck.slot, "unit_slot");
}

/* ---- lines --------------------------------------------------------------------------- */

START_TEST(test_new_file_lines)
{
	RpSink	   *s;
	RpDelivery	dl;
	RpCheckpoint ck;
	char	   *text;
	char	   *lines[64];
	int			n;
	struct stat sb;

	ck_assert(!ct_exists(logpath));
	s = open_sink(logpath);
	ck_assert(ct_exists(logpath));
	ck_assert_int_eq(ct_file_size(logpath), 0);
	ck_assert_int_eq(stat(logpath, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0007, 0); /* not world-readable */
	ck_assert_int_eq(s->checkpoint(s, &ck), 0);

	start(&dl, s, 1);
	deliver(&dl, txn(700, 0x1000, 2, 1, "first"));
	deliver(&dl, txn(701, 0x2000, 1, 3, "second"));
	expect_ck(s, 0x2000, 0x2028);

	text = ct_slurp(logpath, NULL);

	n = split_lines(text, lines, 64);
	ck_assert_int_eq(n, 5);
	/* the rows, each with its transaction's fields */
	for (int i = 0; i < 2; i++)
	{
		ck_assert_msg(strncmp(lines[i], "{\"kind\":\"insert\",", 17) == 0, "%s", lines[i]);
		ck_assert_msg(strstr(lines[i], "\"commit_lsn\":\"0/1000\""), "%s", lines[i]);
		ck_assert_msg(strstr(lines[i], "\"end_lsn\":\"0/1028\""), "%s", lines[i]);
		ck_assert_msg(strstr(lines[i], "\"xid\":700"), "%s", lines[i]);
		ck_assert_msg(strstr(lines[i], "\"note\":\"first\""), "%s", lines[i]);
	}
	ck_assert_msg(strstr(lines[0], "\"id\":1"), "%s", lines[0]);
	ck_assert_msg(strstr(lines[1], "\"id\":2"), "%s", lines[1]);
	ck_assert_str_eq(lines[2], "{\"kind\":\"checkpoint\",\"system_id\":\"7412345678901234567\","
					 "\"timeline\":1,\"slot\":\"unit_slot\",\"commit_lsn\":\"0/1000\",\"end_lsn\":\"0/1028\"}");
	ck_assert_msg(strstr(lines[3], "\"xid\":701") && strstr(lines[3], "\"id\":3"), "%s", lines[3]);
	ck_assert_msg(strstr(lines[4], "\"commit_lsn\":\"0/2000\",\"end_lsn\":\"0/2028\"}"), "%s", lines[4]);
	free(text);
	rp_deliver_free(&dl);
	s->close(s);

	/* reopened: same checkpoint, nothing cut */
	{
		off_t		size = ct_file_size(logpath);

		s = open_sink(logpath);
		expect_ck(s, 0x2000, 0x2028);
		ck_assert_int_eq(ct_file_size(logpath), size);
		s->close(s);
	}
}

END_TEST

START_TEST(test_batch_one_checkpoint_line)
{
	RpSink	   *s = open_sink(logpath);
	RpDelivery	dl;
	char	   *text;

	start(&dl, s, 3);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1, 1, "a"), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1, 2, "b"), 0), 0);
	ck_assert_int_eq(ct_file_size(logpath), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 1, 3, "c"), 0), 0);
	text = ct_slurp(logpath, NULL);

	ck_assert_int_eq(ct_count(text, "\n"), 4);
	ck_assert_int_eq(ct_count(text, "\"kind\":\"checkpoint\""), 1);
	ck_assert_int_eq(ct_count(text, "\"kind\":\"insert\""), 3);
	ck_assert_msg(strstr(text, "\"commit_lsn\":\"0/300\",\"end_lsn\":\"0/328\"}\n") != NULL, "%s", text);
	free(text);
	expect_ck(s, 0x300, 0x328);
	rp_deliver_free(&dl);
	s->close(s);
}

END_TEST

START_TEST(test_message_and_stream_lines)
{
	RpSink	   *s = open_sink(logpath);
	RpDelivery	dl;
	RpBuf		b;
	RpItem	   *it;
	char	   *text;
	char	   *lines[16];

	start(&dl, s, 1);

	/*
	 * a streamed transaction with a subtransaction, and an origin-less
	 * message
	 */
	ct_frame(&b);
	ct_rel(&b, REL, "public", "t", 2);
	rp_enc_stream_start(&b, 900, true);
	ct_insert(&b, REL, 900, 2, 1, "top");
	ct_insert(&b, REL, 901, 2, 2, "sub");
	rp_enc_stream_stop(&b);
	rp_enc_stream_commit(&b, 900, 0x900, 0x928, 0);
	rp_enc_message(&b, false, 0, 0x950, "audit", "hello", 5);
	ck_assert_int_eq(ct_feed(&as, &b, 0x900), 0);
	while ((it = rp_asm_pop(&as)) != NULL)
		ck_assert_int_eq(rp_deliver_item(&dl, it, 0), 0);
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	text = ct_slurp(logpath, NULL);

	ck_assert_int_eq(split_lines(text, lines, 16), 5);
	/* every row carries the toplevel xid, once: never the subtransaction's */
	ck_assert_msg(ct_count(lines[1], "\"xid\"") == 1 && strstr(lines[1], "\"xid\":900"), "%s", lines[1]);
	ck_assert_msg(strstr(lines[1], "901") == NULL, "%s", lines[1]);
	ck_assert_msg(strstr(lines[2], "\"commit_lsn\":\"0/900\""), "%s", lines[2]);
	ck_assert_msg(strncmp(lines[3], "{\"kind\":\"message\"", 17) == 0, "%s", lines[3]);
	ck_assert_msg(strstr(lines[3], "\"prefix\":\"audit\"") && strstr(lines[3], "\"content\":\"hello\""),
				  "%s", lines[3]);
	ck_assert_msg(strstr(lines[4], "\"commit_lsn\":\"0/900\",\"end_lsn\":\"0/950\"}"), "%s", lines[4]);
	free(text);
	expect_ck(s, 0x900, 0x950);
	rp_deliver_free(&dl);
	s->close(s);
}

END_TEST

/* ---- torn tails ------------------------------------------------------------------------- */

/* A file with two delivered transactions; returns its size. */
static off_t
good_file(void)
{
	RpSink	   *s = open_sink(logpath);
	RpDelivery	dl;
	off_t		size;

	start(&dl, s, 1);
	deliver(&dl, txn(1, 0x100, 3, 1, "a"));
	deliver(&dl, txn(2, 0x200, 3, 4, "b"));
	rp_deliver_free(&dl);
	s->close(s);
	size = ct_file_size(logpath);
	ck_assert_int_gt(size, 0);
	return size;
}

static void
expect_cut(off_t size, const char *tail, size_t taillen)
{
	RpSink	   *s;

	ct_write_file(logpath, tail, taillen, true);
	ck_assert_int_eq(ct_file_size(logpath), size + (off_t) taillen);
	s = open_sink(logpath);
	ck_assert_msg(ct_file_size(logpath) == size, "tail of %zu bytes not cut: %lld, expected %lld",
				  taillen, (long long) ct_file_size(logpath), (long long) size);
	expect_ck(s, 0x200, 0x228);
	s->close(s);
}

/*
 * The file as it is now (good_file plus tail) is damaged: opening it halts
 * naming the log, and leaves every byte as it was.
 */
static void
expect_damaged(const char *tail, size_t taillen)
{
	char	   *before,
			   *after;
	size_t		lb,
				la;

	if (tail)
		ct_write_file(logpath, tail, taillen, true);
	before = ct_slurp(logpath, &lb);
	rp_error_clear();
	ck_assert_msg(rp_sink_file_open(logpath, NULL) == NULL, "a damaged log (tail of %zu bytes) was opened",
				  taillen);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_msg(strstr(rp_error(), "is damaged") && strstr(rp_error(), logpath), "%s", rp_error());
	after = ct_slurp(logpath, &la);
	ck_assert_msg(la == lb && memcmp(before, after, la) == 0, "the damaged log was changed (%zu -> %zu bytes)",
				  lb, la);
	free(before);
	free(after);
}

/* good_file, then tail again (for the next case) */
static void
reset_file(off_t size)
{
	ck_assert_int_eq(truncate(logpath, size), 0);
}

START_TEST(test_torn_tail)
{
	off_t		size = good_file();
	char	   *line = ckpt_line_for(0x900, 0x928);
	size_t		ll = strlen(line);
	char		buf[2048];

	/* a partial row */
	expect_cut(size, "{\"kind\":\"insert\",\"partial", 25);
	/* the first bytes of a row */
	expect_cut(size, "{\"ki", 4);
	/* whole rows of a transaction that never got its checkpoint line */
	expect_cut(size, "{\"kind\":\"insert\"}\n{\"kind\":\"insert\"}\n", 36);
	/* a checkpoint line without its newline */
	expect_cut(size, line, ll - 1);
	/* the first half of a checkpoint line */
	expect_cut(size, line, ll / 2);
	/* rows, then a torn checkpoint line */
	snprintf(buf, sizeof(buf), "{\"kind\":\"insert\"}\n%.*s", (int) (ll - 10), line);
	expect_cut(size, buf, strlen(buf));
	/* a whole line of every record kind the renderer names is a data line */
	{
		const char	tags[] = {RP_TAG_BEGIN, RP_TAG_COMMIT, RP_TAG_ORIGIN, RP_TAG_RELATION,
			RP_TAG_INSERT, RP_TAG_UPDATE, RP_TAG_DELETE, RP_TAG_TRUNCATE, RP_TAG_MESSAGE,
		RP_TAG_STREAM_START, RP_TAG_STREAM_STOP, RP_TAG_STREAM_COMMIT, RP_TAG_STREAM_ABORT};

		for (size_t i = 0; i < sizeof(tags); i++)
		{
			snprintf(buf, sizeof(buf), "{\"kind\":\"%s\",\"x\":1}\n", rp_tag_name((uint8_t) tags[i]));
			expect_cut(size, buf, strlen(buf));
		}
	}
	/* snapshot lines of a copy that never completed */
	{
		const char *snap = "{\"kind\":\"begin\",\"snapshot_id\":\"x\"}\n{\"kind\":\"row\",\"snap";

		expect_cut(size, snap, strlen(snap));
	}

	/*
	 * rows up to a block boundary, then blocks never written before a crash
	 * (zeros)
	 */
	{
		size_t		pad = (size_t) (512 - size % 512) + 512;

		memset(buf, 'x', pad);
		memcpy(buf, "{\"kind\":\"insert\",", 17);
		buf[pad - 1] = '\n';
		memset(buf + pad, 0, 700);
		expect_cut(size, buf, pad + 700);
	}

	/*
	 * a checkpoint line cut inside its end LSN, followed by other bytes and a
	 * newline
	 */
	{
		const char *e = strstr(line, "\"end_lsn\":\"0/9") + strlen("\"end_lsn\":\"0/9");
		size_t		keep = (size_t) (e - line);

		memcpy(buf, line, keep);
		memcpy(buf + keep, "\n", 1);
		expect_damaged(buf, keep + 1);
		reset_file(size);
		/* ... or zeros inside it, then a newline */
		memset(buf + keep, 0, 16);
		buf[keep + 16] = '\n';
		expect_damaged(buf, keep + 17);
		reset_file(size);
	}
	/* zeros that do not start on a block boundary */
	memcpy(buf, "{\"kind\":\"insert\"", 16);
	memset(buf + 16, 0, 100);
	if ((size + 16) % 512 != 0)
	{
		expect_damaged(buf, 116);
		reset_file(size);
	}
	/* a checkpoint-looking line of another shape */
	expect_damaged("{\"kind\":\"checkpoint\",\"system_id\":\"1\"}\n", 38);
	reset_file(size);
	/* a line the sink never writes, before a partial row */
	expect_damaged("garbage\n{\"kind\":\"insert\",\"partial", 33);
	reset_file(size);
	/* an empty line */
	expect_damaged("{\"kind\":\"insert\"}\n\n", 19);
	reset_file(size);
	/* an unfinished line that is neither a row nor a checkpoint line */
	expect_damaged("{\"kind\":\"insert\"}\n{\"kind\":\"checkpoint\",\"system_id\":\"x", 53);
	reset_file(size);
	ck_assert_int_eq(ct_file_size(logpath), size);

	/* a whole valid checkpoint line after garbage is a real checkpoint */
	snprintf(buf, sizeof(buf), "junk\n%s", line);
	ct_write_file(logpath, buf, strlen(buf), true);
	{
		RpSink	   *s = open_sink(logpath);

		expect_ck(s, 0x900, 0x928);
		ck_assert_int_eq(ct_file_size(logpath), size + (off_t) strlen(buf));
		s->close(s);
	}
	free(line);
}

END_TEST

/*
 * A whole data line after the last checkpoint line of a transaction at or
 * below its commit is no torn tail: the log diverges from its checkpoint
 * (append_frontier_divergent); one of a later transaction is cut.
 */
START_TEST(test_divergent_tail)
{
	off_t		size = good_file();
	static const char later[] = "{\"kind\":\"insert\",\"commit_lsn\":\"0/300\",\"end_lsn\":\"0/328\"}\n";
	static const char partial[] = "{\"kind\":\"insert\",\"commit_lsn\":\"0/100\",\"end_";
	const char *const stale[] = {
		"{\"kind\":\"insert\",\"commit_lsn\":\"0/200\",\"end_lsn\":\"0/228\"}\n",
		"{\"kind\":\"insert\",\"commit_lsn\":\"0/100\",\"end_lsn\":\"0/128\",\"xid\":1}\n",
		/* after a later transaction's lines too */
		"{\"kind\":\"insert\",\"commit_lsn\":\"0/300\",\"end_lsn\":\"0/328\"}\n"
		"{\"kind\":\"delete\",\"commit_lsn\":\"0/1FF\",\"end_lsn\":\"0/228\"}\n"
	};

	expect_cut(size, later, strlen(later));
	/* a line cut short is a write cut short, whatever it began to say */
	expect_cut(size, partial, strlen(partial));
	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++)
	{
		char	   *before,
				   *after;
		size_t		lb,
					la;

		ct_write_file(logpath, stale[i], strlen(stale[i]), true);
		before = ct_slurp(logpath, &lb);
		rp_error_clear();
		ck_assert_msg(rp_sink_file_open(logpath, NULL) == NULL, "a divergent log was opened (%zu)", i);
		ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
		ck_assert_msg(strstr(rp_error(), "diverges from its last checkpoint line") &&
					  strstr(rp_error(), "(commit 0/200)") && strstr(rp_error(), logpath), "%s", rp_error());
		after = ct_slurp(logpath, &la);
		ck_assert_msg(la == lb && memcmp(before, after, la) == 0, "the divergent log was changed");
		free(before);
		free(after);
		reset_file(size);
	}
}

END_TEST

START_TEST(test_no_checkpoint_emptied)
{
	RpSink	   *s;
	RpCheckpoint ck;

	ct_write_file(logpath, "{\"kind\":\"insert\"}\n{\"kind\":\"upd", 30, false);
	s = open_sink(logpath);
	ck_assert_int_eq(ct_file_size(logpath), 0);
	ck_assert_int_eq(s->checkpoint(s, &ck), 0);
	s->close(s);

	/* a file the sink never wrote (a wrong path) is not emptied */
	ct_write_file(logpath, "important notes\n", 16, false);
	expect_damaged(NULL, 0);
}

END_TEST

/*
 * A stopped snapshot (rp_snapresume.h): the frames up to the durable
 * length its progress file records stay at open (only the torn tail after
 * them is cut), the sink hands out its tokens (a table done, one not), a
 * log shorter than the progress says halts unchanged, and without a
 * progress file the unfinished frames are cut as before.
 */
START_TEST(test_snapshot_progress_kept)
{
	static const char durable[] =
	"{\"kind\":\"begin\",\"snapshot_id\":\"01900000-0000-7000-8000-000000000001\",\"seq\":0}\n"
	"{\"kind\":\"row\",\"snapshot_id\":\"01900000-0000-7000-8000-000000000001\",\"seq\":0}\n";
	static const char torn[] = "{\"kind\":\"row\",\"snapshot_id\":\"0190";
	char		progress[256];
	char		ppath[512];
	RpSinkEnv	env;
	RpSink	   *s;
	RpCheckpoint ck;
	RpRelation	rel;
	char	   *token = NULL;
	RpSnapToken tok;

	snprintf(ppath, sizeof(ppath), "%s/slot.snapshot", ct_dir);
	snprintf(progress, sizeof(progress),
			 "replicant-snapshot-progress 1\nlsn 0/5000\noffset %zu\ndone %u\n", strlen(durable), REL);
	ct_write_file(ppath, progress, strlen(progress), false);
	ct_write_file(logpath, durable, strlen(durable), false);
	ct_write_file(logpath, torn, strlen(torn), true);
	rp_sink_env_init(&env);
	env.snapshot_progress_path = ppath;
	s = rp_sink_file_open(logpath, &env);
	ck_assert_msg(s != NULL, "open failed: %s", rp_error());
	ck_assert_int_eq(ct_file_size(logpath), (off_t) strlen(durable));
	ck_assert_int_eq(s->checkpoint(s, &ck), 0);
	memset(&rel, 0, sizeof(rel));
	rel.relid = REL;
	ck_assert_int_eq(s->snapshot_progress(s, &rel, &token), 1);
	ck_assert(rp_snaptoken_parse(token, &tok));
	ck_assert(tok.done);
	ck_assert_uint_eq(tok.lsn, 0x5000);
	rp_snaptoken_free(&tok);
	rp_free(token);
	rel.relid = REL + 1;
	ck_assert_int_eq(s->snapshot_progress(s, &rel, &token), 1);
	ck_assert(rp_snaptoken_parse(token, &tok));
	ck_assert(!tok.done);
	ck_assert_str_eq(tok.snapshot_id, "");
	rp_snaptoken_free(&tok);
	rp_free(token);
	s->close(s);

	/* shorter than the progress says: not that log, halts, nothing cut */
	ck_assert_int_eq(truncate(logpath, 10), 0);
	rp_error_clear();
	ck_assert_ptr_null(rp_sink_file_open(logpath, &env));
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_msg(strstr(rp_error(), "is shorter"), "%s", rp_error());
	ck_assert_int_eq(ct_file_size(logpath), 10);

	/* no progress file: the unfinished snapshot is cut as a torn tail */
	ct_write_file(logpath, durable, strlen(durable), false);
	s = open_sink(logpath);
	ck_assert_int_eq(ct_file_size(logpath), 0);
	s->close(s);
}

END_TEST

/*
 * One byte of the last checkpoint line changed (issue 11): the rows before
 * it were acknowledged, so recovery must not cut them.  Every position,
 * three replacement bytes: either the line is still a checkpoint line (a
 * changed slot name; the resume checks judge it) and nothing is cut, or
 * the open halts with the file unchanged.
 */
START_TEST(test_damaged_last_checkpoint)
{
	off_t		size = good_file();
	char	   *orig;
	size_t		len;
	const char	repl[] = {'Z', '\n', '\0'};
	char	   *line_start;
	size_t		at;

	orig = ct_slurp(logpath, &len);
	ck_assert_uint_eq(len, (size_t) size);
	ck_assert(orig[len - 1] == '\n');
	orig[len - 1] = '\0';
	line_start = strrchr(orig, '\n') + 1;
	orig[len - 1] = '\n';
	at = (size_t) (line_start - orig);
	ck_assert_msg(strncmp(line_start, "{\"kind\":\"checkpoint\",", 21) == 0, "%s", line_start);

	for (size_t i = at; i < len; i++)
		for (size_t r = 0; r < sizeof(repl); r++)
		{
			char	   *copy;
			RpSink	   *s;

			if (orig[i] == repl[r])
				continue;

			/*
			 * a NUL as the very last byte on a block boundary reads as a
			 * never-written block
			 */
			if (repl[r] == '\0' && i == len - 1 && i % 512 == 0)
				continue;
			copy = malloc(len);
			memcpy(copy, orig, len);
			copy[i] = repl[r];
			ct_write_file(logpath, copy, len, false);
			rp_error_clear();
			s = rp_sink_file_open(logpath, NULL);
			if (s)
			{
				RpCheckpoint ck;

				ck_assert_msg(s->checkpoint(s, &ck) == 1 && strcmp(ck.slot, "unit_slot") != 0,
							  "byte %zu changed to 0x%02x: opened as an undamaged log", i - at,
							  (unsigned char) repl[r]);
				s->close(s);
			}
			else
				ck_assert_msg(rp_error_halt() == RP_HALT_SINK && strstr(rp_error(), "is damaged"),
							  "byte %zu changed to 0x%02x: %s", i - at, (unsigned char) repl[r], rp_error());
			{
				size_t		la;
				char	   *after = ct_slurp(logpath, &la);

				ck_assert_msg(la == len && memcmp(after, copy, len) == 0,
							  "byte %zu of the last checkpoint line changed to 0x%02x: the log was cut from %zu to %zu bytes",
							  i - at, (unsigned char) repl[r], len, la);
				free(after);
			}
			free(copy);
		}
	free(orig);
}

END_TEST

/*
 * prefix bytes (with an older checkpoint line in them), the checkpoint
 * line, then tail bytes without one.  The line starts d bytes before the
 * scan boundary at `from_end` bytes before the end of the file.
 */
static void
straddle_case(size_t from_end, long d)
{
	char	   *older = ckpt_line_for(0x100, 0x128);
	char	   *line = ckpt_line_for(0x5000, 0x5028);
	size_t		ll = strlen(line);
	size_t		prefix = 20000;
	size_t		tail = (size_t) ((long) from_end + d - (long) ll);
	FILE	   *f = fopen(logpath, "wb");
	RpSink	   *s;

	ck_assert_ptr_nonnull(f);
	put_filler(f, 5000, true);
	fputs(older, f);
	put_filler(f, prefix - 5000 - strlen(older), true);
	fputs(line, f);
	put_filler(f, tail, d % 2 == 0);
	fclose(f);
	ck_assert_int_eq(ct_file_size(logpath), (off_t) (prefix + ll + tail));
	/* the boundary is where we meant it */
	ck_assert_int_eq((long) (prefix + ll + tail - from_end) - (long) prefix, d);

	s = open_sink(logpath);
	ck_assert_msg(ct_file_size(logpath) == (off_t) (prefix + ll),
				  "d=%ld from_end=%zu: size %lld, expected %zu", d, from_end,
				  (long long) ct_file_size(logpath), prefix + ll);
	expect_ck(s, 0x5000, 0x5028);
	s->close(s);
	free(older);
	free(line);
}

START_TEST(test_checkpoint_across_scan_chunks)
{
	char	   *line = ckpt_line_for(0x5000, 0x5028);
	long		ll = (long) strlen(line);
	long		ds[] = {0, 1, 2, 3, ll / 2, ll - 2, ll - 1, ll, ll + 1, 200};

	free(line);
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
	{
		/* the first chunk's boundary: SCAN_CHUNK from the end */
		straddle_case(SCAN_CHUNK, ds[i]);
		/* the second chunk's (chunks overlap by 512 bytes) */
		straddle_case(2 * SCAN_CHUNK - 512, ds[i]);
		/* a few chunks further */
		straddle_case(5 * SCAN_CHUNK - 4 * 512, ds[i]);
	}
}

END_TEST

START_TEST(test_long_tail)
{
	/* megabytes of torn tail after the checkpoint line */
	off_t		size = good_file();
	FILE	   *f = fopen(logpath, "ab");
	RpSink	   *s;

	put_filler(f, 3 * 1024 * 1024 + 17, false);
	fclose(f);
	s = open_sink(logpath);
	ck_assert_int_eq(ct_file_size(logpath), size);
	expect_ck(s, 0x200, 0x228);
	s->close(s);

	/* a damaged checkpoint line megabytes into the tail, more rows after it */
	{
		char	   *line = ckpt_line_for(0x900, 0x928);

		f = fopen(logpath, "ab");
		put_filler(f, 1024 * 1024 + 5, true);
		line[30] = '#';
		fputs(line, f);
		put_filler(f, 200 * 1024, false);
		fclose(f);
		free(line);
		expect_damaged(NULL, 0);
	}
}

END_TEST

/* ---- rotation ----------------------------------------------------------------------------- */

START_TEST(test_reopen_rotation)
{
	RpSink	   *s = open_sink(logpath);
	RpDelivery	dl;
	char		rotated[600];
	char	   *text;
	char	   *lines[16];
	off_t		old_size,
				size;

	snprintf(rotated, sizeof(rotated), "%s.1", logpath);
	start(&dl, s, 1);
	deliver(&dl, txn(1, 0x100, 2, 1, "a"));
	old_size = ct_file_size(logpath);

	/* logrotate renames the file away, then SIGHUP */
	ck_assert_int_eq(rename(logpath, rotated), 0);
	ck_assert_int_eq(s->reopen(s), 0);
	ck_assert(ct_exists(logpath));
	text = ct_slurp(logpath, NULL);

	ck_assert_int_eq(split_lines(text, lines, 16), 1);
	ck_assert_msg(strstr(lines[0], "\"kind\":\"checkpoint\"") &&
				  strstr(lines[0], "\"commit_lsn\":\"0/100\",\"end_lsn\":\"0/128\""), "%s", lines[0]);
	free(text);
	expect_ck(s, 0x100, 0x128);

	/* new data goes to the new file only */
	deliver(&dl, txn(2, 0x200, 1, 3, "b"));
	ck_assert_int_eq(ct_file_size(rotated), old_size);
	text = ct_slurp(logpath, NULL);

	ck_assert_int_eq(split_lines(text, lines, 16), 3);
	ck_assert_msg(strstr(lines[1], "\"kind\":\"insert\"") && strstr(lines[1], "\"id\":3"), "%s", lines[1]);
	ck_assert_msg(strstr(lines[2], "\"commit_lsn\":\"0/200\""), "%s", lines[2]);
	free(text);

	/* a SIGHUP without rotation changes nothing */
	size = ct_file_size(logpath);
	ck_assert_int_eq(s->reopen(s), 0);
	ck_assert_int_eq(ct_file_size(logpath), size);
	expect_ck(s, 0x200, 0x228);

	/* a restart on the new file resumes from its checkpoint */
	rp_deliver_free(&dl);
	s->close(s);
	s = open_sink(logpath);
	expect_ck(s, 0x200, 0x228);
	s->close(s);
}

END_TEST

START_TEST(test_reopen_before_any_checkpoint)
{
	RpSink	   *s = open_sink(logpath);
	RpCheckpoint ck;
	char		rotated[600];

	snprintf(rotated, sizeof(rotated), "%s.1", logpath);
	ck_assert_int_eq(rename(logpath, rotated), 0);
	ck_assert_int_eq(s->reopen(s), 0);
	ck_assert_int_eq(ct_file_size(logpath), 0);
	ck_assert_int_eq(s->checkpoint(s, &ck), 0);
	s->close(s);
}

END_TEST

START_TEST(test_open_error)
{
	rp_error_clear();
	ck_assert_ptr_null(rp_sink_file_open(ct_path("no/such/dir/log"), NULL));
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_msg(strstr(rp_error(), "no/such/dir/log") != NULL, "%s", rp_error());
}

END_TEST

/*
 * A row with a value larger than the 4 MB write chunk is written in slices
 * as it is rendered (G5), so its line reaches the file in several writes:
 * the line is still whole and the value exact (the same bytes as the JSON
 * string of the whole value); a transaction that fails after part of such a
 * line was written leaves the file at its last checkpoint line; and what a
 * crash in the middle of such a line leaves (its first megabytes, no
 * newline) is a torn tail, cut on open.
 */
START_TEST(test_large_value_line)
{
	RpSink	   *s = open_sink(logpath);
	RpDelivery	dl;
	const size_t n = 9 * 1024 * 1024 + 3;
	char	   *note = malloc(n + 1);
	RpBuf		want,
				b;
	RpItem	   *bad;
	RpCheckpoint ck;
	char	   *text,
			   *at;
	size_t		len;
	off_t		size;
	FILE	   *f;

	/*
	 * plain, escaped, 2-byte UTF-8 and control bytes, cut anywhere by the
	 * slices
	 */
	for (size_t i = 0; i < n; i++)
		note[i] = "ab\"\\\xC3\xA9\x01 "[i % 8];
	note[n] = '\0';
	rp_buf_init(&want, 0);
	rp_buf_put_text(&want, "\"note\":");
	rp_json_string(&want, note, n);
	rp_buf_put_text(&want, "}}\n");

	start(&dl, s, 1);
	deliver(&dl, txn(1, 0x100, 1, 1, note));
	text = ct_slurp(logpath, &len);

	ck_assert_int_eq(ct_count(text, "\n"), 2);
	at = strstr(text, "\"note\":");
	ck_assert_ptr_nonnull(at);
	ck_assert_uint_le((size_t) (at - text) +want.len, len);
	{
		size_t		d = 0;

		while (d < want.len && at[d] == want.data[d])
			d++;
		ck_assert_msg(d == want.len, "the logged value differs at byte %zu of %zu: got ...%.40s, want ...%.40s",
					  d, want.len, at + (d > 20 ? d - 20 : 0), want.data + (d > 20 ? d - 20 : 0));
	}
	ck_assert(strncmp(at + want.len, "{\"kind\":\"checkpoint\",", 21) == 0);
	free(text);
	size = ct_file_size(logpath);

	/*
	 * fails after the large line was partly written: cut back to the
	 * checkpoint line
	 */
	ct_frame(&b);
	rp_enc_begin(&b, 2, 0x200, 0);
	ct_insert(&b, REL, 0, 2, 7, note);
	ct_rel(&b, REL, "public", "t", 1);	/* "note" dropped */
	ct_insert(&b, REL, 0, 1, 99999, NULL);
	rp_enc_commit(&b, 0x200, 0x228, 0);
	ck_assert_int_eq(ct_feed(&as, &b, 0x200), 0);
	bad = rp_asm_pop(&as);
	ck_assert_ptr_nonnull(bad);
	ck = dl.ck;
	ck.commit_lsn = 0x200;
	rp_error_clear();
	ck_assert_int_eq(s->handle_transaction(s, &dl, bad->txn, &ck), -1);
	rp_item_free(bad);
	ck_assert_int_eq(ct_file_size(logpath), size);
	rp_deliver_free(&dl);
	s->close(s);

	/* a crash mid-line: the line's first 5 MB after the checkpoint line */
	text = ct_slurp(logpath, &len);

	f = fopen(logpath, "ab");
	fwrite(text, 1, 5 * 1024 * 1024, f);
	fclose(f);
	free(text);
	s = open_sink(logpath);
	ck_assert_int_eq(ct_file_size(logpath), size);
	expect_ck(s, 0x100, 0x128);
	s->close(s);
	rp_buf_free(&want);
	free(note);
}

END_TEST

/* ---- failures leave nothing behind ------------------------------------------------------- */

START_TEST(test_failed_txn_leaves_no_lines)
{
	/*
	 * A transaction that fails half-way (a destructive schema change inside
	 * it) after more than the 4 MB write chunk was written: the file must end
	 * at its last checkpoint line again, and a later transaction must not be
	 * preceded by the failed one's lines.
	 */
	RpSink	   *s = open_sink(logpath);
	RpDelivery	dl;
	RpBuf		b;
	RpItem	   *bad,
			   *it;
	RpCheckpoint ck;
	char		note[1000];
	off_t		size;
	char	   *text;

	memset(note, 'n', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	start(&dl, s, 1);
	deliver(&dl, txn(1, 0x100, 1, 1, "a"));
	size = ct_file_size(logpath);

	for (int rows = 5; rows <= 6000; rows += 5995)
	{
		ct_frame(&b);
		rp_enc_begin(&b, 2, 0x200, 0);
		for (int i = 0; i < rows; i++)
			ct_insert(&b, REL, 0, 2, 100 + i, note);
		ct_rel(&b, REL, "public", "t", 1);	/* "note" dropped */
		ct_insert(&b, REL, 0, 1, 99999, NULL);
		rp_enc_commit(&b, 0x200, 0x228, 0);
		ck_assert_int_eq(ct_feed(&as, &b, 0x200), 0);
		bad = rp_asm_pop(&as);
		ck_assert_ptr_nonnull(bad);
		ck = dl.ck;
		ck.commit_lsn = 0x200;
		rp_error_clear();
		ck_assert_int_eq(s->handle_transaction(s, &dl, bad->txn, &ck), -1);
		ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
		rp_item_free(bad);
		ck_assert_msg(ct_file_size(logpath) == size, "%d rows: %lld bytes after the failure, expected %lld",
					  rows, (long long) ct_file_size(logpath), (long long) size);
		expect_ck(s, 0x100, 0x128);
		/* the assembler's relation goes back for the next round */
		ct_frame(&b);
		ct_rel(&b, REL, "public", "t", 2);
		ck_assert_int_eq(ct_feed(&as, &b, 0x200), 0);
	}

	/* the next transaction's lines follow the checkpoint line directly */
	rp_deliver_free(&dl);
	start(&dl, s, 1);
	it = txn(3, 0x300, 1, 7, "c");
	deliver(&dl, it);
	text = ct_slurp(logpath, NULL);

	ck_assert_int_eq(ct_count(text, "\n"), 4);
	ck_assert_int_eq(ct_count(text, "nnnn"), 0);
	free(text);
	rp_deliver_free(&dl);
	s->close(s);
}

END_TEST

Suite	   *
ct_suite_file_sink(void)
{
	Suite	   *s = suite_create("file_sink");
	TCase	   *tc;

	tc = tcase_create("lines");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_new_file_lines);
	tcase_add_test(tc, test_batch_one_checkpoint_line);
	tcase_add_test(tc, test_message_and_stream_lines);
	tcase_add_test(tc, test_open_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("recovery");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_torn_tail);
	tcase_add_test(tc, test_divergent_tail);
	tcase_add_test(tc, test_no_checkpoint_emptied);
	tcase_add_test(tc, test_snapshot_progress_kept);
	tcase_add_test(tc, test_damaged_last_checkpoint);
	tcase_add_test(tc, test_checkpoint_across_scan_chunks);
	tcase_add_test(tc, test_long_tail);
	tcase_add_test(tc, test_failed_txn_leaves_no_lines);
	tcase_add_test(tc, test_large_value_line);
	suite_add_tcase(s, tc);

	tc = tcase_create("rotation");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_reopen_rotation);
	tcase_add_test(tc, test_reopen_before_any_checkpoint);
	suite_add_tcase(s, tc);
	return s;
}
