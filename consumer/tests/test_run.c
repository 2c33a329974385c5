/*
 * test_run.c
 *    The run engine (run/rp_run.c, rp_run_step.c) over a scripted source
 *    (rp_source.h): frames through the assembler and the delivery thread
 *    into a sink until --endpos, the feedback never past what is durable
 *    (G2), a clean end through the source's finish, the events and the
 *    progress figures through the hooks (a subscriber set, the counting is
 *    its own: rp_dl_count_event); a source whose first open fails
 *    is retried (CONN_LOST, the log line); a stream's positions carry its
 *    sequence into the checkpoint, and --endpos N ends at sequence N; a
 *    sink's fail-closed halt ends the run even when the source's connection
 *    broke before the main loop saw it (it was taken for a lost sink).
 */
#include "ct_kit.h"

#include <unistd.h>

#include "run/rp_run.h"

#define REL 16384u

/* What the scripted source is to return, and what it was told. */
typedef struct FakeSource
{
	RpSource	base;			/* first */
	RpSourceRead script[16];
	RpBuf		frames[16];
	int			n;
	int			next;
	int			fail_opens;		/* the first opens that fail (connection
								 * trouble) */
	int			opens;
	int			closes;
	int			finishes;
	uint64_t	finish_lsn;
	int			nfeedback;
	uint64_t	max_feedback;
	RpRun	   *lose_after_halt;	/* once the script is read: let the sink
									 * go (release), wait until this run's
									 * delivery thread failed, then lose the
									 * connection */
	bool		release;
	RpRun	   *idle_after_halt;	/* once the script is read: wait until
									 * this run's delivery thread failed, then
									 * read nothing (an idle stream) */
	int			idle_reads;
} FakeSource;

static int
fake_open(RpSource *src, RpSourceOpen *o)
{
	FakeSource *f = (FakeSource *) src;

	if (f->opens++ < f->fail_opens)
		return rp_fail(RP_HALT_NONE, "could not connect: the fake source is down");
	/* a run that goes on after its sink halted ends here, not in a hang */
	if (f->lose_after_halt && f->opens > 1)
		return rp_fail(RP_HALT_GAP, "the run went on after its sink halted");
	o->bind = ct_ck(0, 0);
	/* a stream's checkpoint names it (and then keeps its sequence) */
	if (!src->keepalives)
		snprintf(o->bind.source, sizeof(o->bind.source), "nats:UNIT");
	rp_event_init(&o->up, RP_EVENT_CONN_UP);
	return 0;
}

static int
fake_read(RpSource *src, RpSourceRead *r, int timeout_ms)
{
	FakeSource *f = (FakeSource *) src;

	memset(r, 0, sizeof(*r));
	if (f->next < f->n)
		*r = f->script[f->next++];
	else if (f->lose_after_halt)
	{
		RpCheckpoint ck;

		/*
		 * the delivery thread halts while the main loop waits here (it has
		 * not seen the halt)
		 */
		__atomic_store_n(&f->release, true, __ATOMIC_RELEASE);
		while (rp_pipe_durable(&f->lose_after_halt->pipe, &ck) == 0)
			usleep(1000);
		return rp_fail(RP_HALT_NONE, "the fake source lost its connection");
	}
	else if (f->idle_after_halt)
	{
		RpCheckpoint ck;

		while (rp_pipe_durable(&f->idle_after_halt->pipe, &ck) == 0)
			usleep(1000);
		rp_error_clear();

		/*
		 * a run that does not look at its delivery thread would read on for
		 * ever
		 */
		if (++f->idle_reads > 100)
			return rp_fail(RP_HALT_GAP, "the run read on after its sink halted");
	}
	return 0;
}

static int
fake_feedback(RpSource *src, uint64_t durable_lsn, bool force, bool reply)
{
	FakeSource *f = (FakeSource *) src;

	f->nfeedback++;
	if (durable_lsn > f->max_feedback)
		f->max_feedback = durable_lsn;
	return 0;
}

static void
fake_finish(RpSource *src, uint64_t durable_lsn)
{
	FakeSource *f = (FakeSource *) src;

	f->finishes++;
	f->finish_lsn = durable_lsn;
}

static void
fake_close(RpSource *src)
{
	((FakeSource *) src)->closes++;
}

static void
fake_end(const RpSource *src, RpSourceEnd *e)
{
	e->by_seq = !src->keepalives;
	e->end = 0x10000;
}

static void
fake_init(FakeSource *f, bool slot)
{
	memset(f, 0, sizeof(*f));
	f->base.keepalives = slot;
	f->base.open = fake_open;
	f->base.read = fake_read;
	f->base.feedback = slot ? fake_feedback : NULL;
	f->base.finish = fake_finish;
	f->base.close = fake_close;
	f->base.end = fake_end;
}

/* One whole transaction of n rows committed at commit (its end: commit + 0x28). */
static void
fake_txn(FakeSource *f, bool describe, uint32_t xid, uint64_t commit, int n, uint64_t seq)
{
	RpSourceRead *r = &f->script[f->n];
	RpBuf	   *b = &f->frames[f->n++];

	/* ct_txn_frame starts the buffer itself */
	ct_txn_frame(b, describe, REL, 2, xid, commit, n, (int32_t) xid * 100, "n");
	r->kind = RP_SOURCE_FRAME;
	r->data = (const unsigned char *) b->data;
	r->len = b->len;
	r->lsn = commit;
	r->seq = seq;
	r->ends = true;
}

static void
fake_position(FakeSource *f, uint64_t lsn, uint64_t seq)
{
	RpSourceRead *r = &f->script[f->n++];

	r->kind = RP_SOURCE_POSITION;
	r->lsn = lsn;
	r->seq = seq;
}

static void
fake_free(FakeSource *f)
{
	for (int i = 0; i < f->n; i++)
		if (f->frames[i].data)
			rp_buf_free(&f->frames[i]);
}

/* What the hooks were told. */
typedef struct Told
{
	int			ups;
	int			losts;
	int			progress;
	int			errors;
	char		last_error[256];
} Told;

static void
told_event(const RpEvent *ev, void *arg)
{
	Told	   *t = arg;

	if (ev->kind == RP_EVENT_CONN_UP)
		t->ups++;
	else if (ev->kind == RP_EVENT_CONN_LOST)
		t->losts++;
}

static void
told_progress(void *arg, const RpRunProgress *p)
{
	((Told *) arg)->progress++;
}

static void
told_log(void *arg, RpRunLogLevel level, const char *line)
{
	Told	   *t = arg;

	if (level == RP_RUN_LOG_ERROR)
	{
		t->errors++;
		snprintf(t->last_error, sizeof(t->last_error), "%s", line);
	}
}

static void
run_setup(RpRun *run, Told *t, uint64_t endpos, uint64_t endpos_seq)
{
	RpRunOptions o;
	RpRunHooks	h;
	static char ckpt[512],
				view[512],
				spill[512];

	snprintf(ckpt, sizeof(ckpt), "%s", ct_path("s.checkpoint"));
	snprintf(view, sizeof(view), "%s", ct_path("s.relations"));
	snprintf(spill, sizeof(spill), "%s", ct_path("spill"));
	memset(&o, 0, sizeof(o));
	o.slot = "unit_slot";
	o.endpos = endpos;
	o.endpos_seq = endpos_seq;
	o.status_interval_ms = 10;
	o.limits = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	o.ckpt_path = ckpt;
	o.view_path = view;
	o.spill_dir = spill;
	o.max_memory = 1 << 20;
	o.max_spill = 1 << 30;
	memset(&h, 0, sizeof(h));
	memset(t, 0, sizeof(*t));
	h.events.fn = told_event;
	h.events.arg = t;
	h.progress = told_progress;
	h.log = told_log;
	h.arg = t;
	rp_run_init(run, &o, &h);
}

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

START_TEST(test_slot_to_endpos)
{
	FakeSource	src;
	CtSink		sink;
	RpRun	   *run = ct_keep(rp_malloc0(sizeof(RpRun)));
	Told		t;
	RpCheckpoint ck;

	fake_init(&src, true);
	fake_txn(&src, true, 1, 0x100, 2, 0);
	fake_position(&src, 0x140, 0);
	fake_txn(&src, false, 2, 0x200, 1, 0);
	fake_txn(&src, false, 3, 0x300, 3, 0);
	ct_sink_init(&sink);
	run_setup(run, &t, 0x328, 0);

	ck_assert_int_eq(rp_run(run, &src.base, &sink.s), 0);
	ck_assert_int_eq(sink.ntxns, 3);
	ck_assert_int_eq(sink.nchanges, 6);
	ck_assert_uint_eq(sink.commit_lsns[2], 0x300);

	/*
	 * the clean end told the source what is durable, and the feedback never
	 * more
	 */
	ck_assert_int_eq(src.finishes, 1);
	ck_assert_uint_eq(src.finish_lsn, 0x328);
	ck_assert_uint_le(src.max_feedback, 0x328);
	ck_assert_int_ge(src.closes, 1);
	ck_assert_int_eq(t.ups, 1);
	ck_assert_int_eq(t.losts, 0);
	ck_assert_int_gt(t.progress, 0);
	ck_assert_int_eq(rp_ckpt_read(ct_path("s.checkpoint"), &ck), 1);
	ck_assert_uint_eq(ck.end_lsn, 0x328);
	rp_run_free(run);
	fake_free(&src);
}

END_TEST

START_TEST(test_retry_after_trouble)
{
	FakeSource	src;
	CtSink		sink;
	RpRun	   *run = ct_keep(rp_malloc0(sizeof(RpRun)));
	Told		t;

	fake_init(&src, true);
	src.fail_opens = 1;
	fake_txn(&src, true, 1, 0x100, 1, 0);
	ct_sink_init(&sink);
	run_setup(run, &t, 0x128, 0);

	ck_assert_int_eq(rp_run(run, &src.base, &sink.s), 0);
	ck_assert_int_eq(src.opens, 2);
	ck_assert_int_eq(t.losts, 1);
	ck_assert_int_eq(t.ups, 1);
	ck_assert_int_eq(t.errors, 1);
	ck_assert_str_eq(t.last_error, "could not connect: the fake source is down; reconnecting in 1 s");
	ck_assert_int_eq(sink.ntxns, 1);
	rp_run_free(run);
	fake_free(&src);
}

END_TEST

START_TEST(test_no_loop_fails)
{
	FakeSource	src;
	CtSink		sink;
	RpRun	   *run = ct_keep(rp_malloc0(sizeof(RpRun)));
	Told		t;

	fake_init(&src, true);
	src.fail_opens = 1;
	ct_sink_init(&sink);
	run_setup(run, &t, 0x128, 0);
	run->o.no_loop = true;

	ck_assert_int_eq(rp_run(run, &src.base, &sink.s), -1);
	ck_assert_str_eq(rp_error(), "could not connect: the fake source is down");
	ck_assert_int_eq(rp_error_halt(), RP_HALT_NONE);
	ck_assert_int_eq(src.opens, 1);
	ck_assert_int_eq(t.losts, 1);
	rp_error_clear();
	rp_run_free(run);
	fake_free(&src);
}

END_TEST

/*
 * The sink refuses a transaction (a fail-closed halt, as the NATS sink's
 * fence) and the source's connection breaks before the main loop looked at
 * the delivery thread (the walsender ended as another writer took the slot
 * over): the run ends with the sink's halt. It was taken for a lost sink,
 * delivery started over and the run went on, to halt later for another
 * reason ("gap") or not at all.
 */
START_TEST(test_sink_halt_beside_lost_source)
{
	FakeSource	src;
	CtSink		sink;
	RpRun	   *run = ct_keep(rp_malloc0(sizeof(RpRun)));
	Told		t;

	fake_init(&src, true);
	fake_txn(&src, true, 1, 0x100, 1, 0);
	ct_sink_init(&sink);
	sink.fail_on_txn = 1;
	sink.hold = &src.release;
	run_setup(run, &t, 0x1000, 0);	/* past the transaction: the loop reads on */
	src.lose_after_halt = run;

	ck_assert_int_eq(rp_run(run, &src.base, &sink.s), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_str_eq(rp_error(), "fake sink refused transaction 1");
	ck_assert_int_eq(src.opens, 1);
	rp_error_clear();
	rp_run_free(run);
	fake_free(&src);
}

END_TEST

/*
 * A stream reader (a source without feedback) whose sink refuses a
 * transaction while the stream then stays idle: the run ends with the
 * sink's halt.  The main loop looked at the delivery thread only when it
 * had feedback to send, so a reader waited on an idle stream for ever
 * (test/t/380_nats_reader_sink_fail.pl).
 */
START_TEST(test_stream_sink_halt_idle)
{
	FakeSource	src;
	CtSink		sink;
	RpRun	   *run = ct_keep(rp_malloc0(sizeof(RpRun)));
	Told		t;

	fake_init(&src, false);
	fake_txn(&src, true, 1, 0x100, 1, 5);
	ct_sink_init(&sink);
	sink.fail_on_txn = 1;
	run_setup(run, &t, 0, 0);	/* no end: a service */
	src.idle_after_halt = run;

	ck_assert_int_eq(rp_run(run, &src.base, &sink.s), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_str_eq(rp_error(), "fake sink refused transaction 1");
	ck_assert_int_le(src.idle_reads, 1);
	rp_error_clear();
	rp_run_free(run);
	fake_free(&src);
}

END_TEST

START_TEST(test_stream_to_seq)
{
	FakeSource	src;
	CtSink		sink;
	RpRun	   *run = ct_keep(rp_malloc0(sizeof(RpRun)));
	Told		t;
	RpCheckpoint ck;

	fake_init(&src, false);
	fake_txn(&src, true, 1, 0x100, 1, 5);
	fake_position(&src, 0x180, 6);
	fake_txn(&src, false, 2, 0x200, 1, 8);
	fake_position(&src, 0x280, 9);
	ct_sink_init(&sink);
	run_setup(run, &t, 0, 9);

	ck_assert_int_eq(rp_run(run, &src.base, &sink.s), 0);
	ck_assert_int_eq(sink.ntxns, 2);

	/*
	 * nothing is acknowledged upstream; the checkpoint holds the stream's
	 * sequence
	 */
	ck_assert_int_eq(src.nfeedback, 0);
	ck_assert_int_eq(rp_ckpt_read(ct_path("s.checkpoint"), &ck), 1);
	ck_assert_uint_eq(ck.source_seq, 9);
	ck_assert_uint_eq(ck.end_lsn, 0x280);
	rp_run_free(run);
	fake_free(&src);
}

END_TEST

Suite	   *
ct_suite_run(void)
{
	Suite	   *s = suite_create("run");
	TCase	   *tc = ct_tcase("engine");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_slot_to_endpos);
	tcase_add_test(tc, test_retry_after_trouble);
	tcase_add_test(tc, test_no_loop_fails);
	tcase_add_test(tc, test_stream_to_seq);
	tcase_add_test(tc, test_sink_halt_beside_lost_source);
	tcase_add_test(tc, test_stream_sink_halt_idle);
	suite_add_tcase(s, tc);
	return s;
}
