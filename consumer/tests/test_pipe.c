/*
 * test_pipe.c
 *    The delivery thread (consumer/stream/rp_pipe.c): a batch made of what
 *    queued up while the sink applied the last one goes as soon as the
 *    queue runs empty, not when its time is up (a backlog keeps the sink
 *    busy); with nothing queued at the end of a batch the next one fills
 *    as usual.  An idle position asked for is held work until it is
 *    durable.  Every wait is for a condition, with a generous deadline.
 */
#include "ct_kit.h"

#include <pthread.h>
#include <time.h>

#include "base/rp_clock.h"
#include "stream/rp_pipe.h"

#define REL 16384u
#define WAIT_MS (60 * 1000)		/* how long a condition may take to become
								 * true */

static RpSpill sp;
static RpAsm as;

/* The sink's gate: a batch call waits until it is open. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int	entered;			/* batch calls begun */
static int	finished;			/* batch calls done */
static int	sizes[16];

static void
setup(void)
{
	ct_setup_dir();
	ck_assert_int_eq(rp_spill_init(&sp, ct_path("spill"), 1 << 20, 1 << 30), 0);
	rp_asm_init(&as, &sp, 0);
	gate_open = false;
	entered = finished = 0;
}

static void
teardown(void)
{
	rp_asm_free(&as);
	rp_free(sp.dir);
	ct_teardown_dir();
}

static int
gated_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	int			rc;

	pthread_mutex_lock(&gate_lock);
	if (entered < 16)
		sizes[entered] = n;
	entered++;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	rc = ct_sink_batch(s, dl, txns, n, ck);
	pthread_mutex_lock(&gate_lock);
	finished++;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	return rc;
}

static void
set_gate(bool open)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = open;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

/* Wait until *counter reaches want (false when the deadline passed first). */
static bool
wait_for(const int *counter, int want)
{
	struct timespec ts;
	bool		ok = true;

	rp_clock_deadline(&ts, WAIT_MS);
	pthread_mutex_lock(&gate_lock);
	while (*counter < want && ok)
		ok = pthread_cond_timedwait(&gate_cond, &gate_lock, &ts) == 0 || *counter >= want;
	ok = *counter >= want;
	pthread_mutex_unlock(&gate_lock);
	return ok;
}

/* A committed transaction of n inserts into REL (described on first use). */
static RpItem *
txn(uint32_t xid, uint64_t lsn, int n)
{
	RpBuf		b;
	RpItem	   *it;

	if (as.nraw == 0)
	{
		ct_frame(&b);
		ct_rel(&b, REL, "public", "t", 2);
		ck_assert_int_eq(ct_feed(&as, &b, 0x10), 0);
	}
	ct_frame(&b);
	rp_enc_begin(&b, xid, lsn, 0);
	for (int i = 0; i < n; i++)
	{
		size_t		at = rp_enc_change_start(&b, RP_TAG_INSERT, REL, 0, 0);

		ct_row(&b, 2, i, "x");
		rp_buf_end_record(&b, at);
	}
	rp_enc_commit(&b, lsn, lsn + 0x28, 0);
	ck_assert_int_eq(ct_feed(&as, &b, lsn), 0);
	it = rp_asm_pop(&as);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_TXN);
	return it;
}

static int	gated_advance(RpSink *s, const RpCheckpoint *ck);

/* advance: the sink owns its checkpoint and records idle positions (gated) */
static void
start_sink(CtSink *f, RpDelivery *dl, RpPipe *p, bool advance)
{
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(3, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(f);
	f->s.handle_transaction = NULL;
	f->s.handle_batch = gated_batch;
	if (advance)
	{
		f->s.owns_checkpoint = true;
		f->s.advance = gated_advance;
	}
	ck_assert_int_eq(rp_deliver_init(dl, &f->s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_pipe_start(p, dl, CT_NEVER_BYTES), 0);
}

static void
start(CtSink *f, RpDelivery *dl, RpPipe *p)
{
	start_sink(f, dl, p, false);
}

/*
 * Two transactions queue up while the sink applies a full batch of three;
 * the batch they make holds fewer than the limit and its time (never) is
 * not up, yet it is delivered once the sink is free.
 */
START_TEST(test_backlog_goes_at_once)
{
	CtSink		f;
	RpDelivery	dl;
	RpPipe		p;
	uint64_t	lsn = 0x1000;

	start(&f, &dl, &p);
	for (uint32_t x = 1; x <= 3; x++, lsn += 0x1000)
		ck_assert_int_eq(rp_pipe_push(&p, txn(x, lsn, 2), NULL, NULL), 0);
	ck_assert(wait_for(&entered, 1));	/* the first batch is in the sink */
	for (uint32_t x = 4; x <= 5; x++, lsn += 0x1000)
		ck_assert_int_eq(rp_pipe_push(&p, txn(x, lsn, 2), NULL, NULL), 0);
	set_gate(true);
	ck_assert_msg(wait_for(&finished, 2), "the queued transactions waited for their batch's time");
	ck_assert_int_eq(sizes[0], 3);
	ck_assert_int_eq(sizes[1], 2);
	rp_pipe_stop(&p);
	ck_assert_int_eq(f.ntxns, 5);
	rp_deliver_free(&dl);
}

END_TEST

/*
 * Nothing queued when a batch is done: the sink kept up, so the pipe is not
 * behind and a later transaction fills a batch the usual way (here: until
 * the drain at the end).
 */
START_TEST(test_caught_up_fills_as_usual)
{
	CtSink		f;
	RpDelivery	dl;
	RpPipe		p;
	uint64_t	lsn = 0x1000;
	bool		behind;

	start(&f, &dl, &p);
	set_gate(true);
	for (uint32_t x = 1; x <= 3; x++, lsn += 0x1000)
		ck_assert_int_eq(rp_pipe_push(&p, txn(x, lsn, 2), NULL, NULL), 0);
	ck_assert(wait_for(&finished, 1));
	/* the step that delivered it has published: rp_pipe_idle takes the lock */
	for (int i = 0; i < WAIT_MS / 10 && !rp_pipe_idle(&p); i++)
		usleep(10 * 1000);
	ck_assert(rp_pipe_idle(&p));
	pthread_mutex_lock(&p.lock);
	behind = p.behind;
	pthread_mutex_unlock(&p.lock);
	ck_assert(!behind);
	ck_assert_int_eq(rp_pipe_push(&p, txn(4, lsn, 2), NULL, NULL), 0);
	ck_assert_int_eq(rp_pipe_drain(&p, NULL, NULL), 0);
	ck_assert_int_eq(finished, 2);
	ck_assert_int_eq(sizes[1], 1);
	rp_pipe_stop(&p);
	rp_deliver_free(&dl);
}

END_TEST

/* The sink's idle-position call, behind the same gate as its batches. */
static int
gated_advance(RpSink *s, const RpCheckpoint *ck)
{
	pthread_mutex_lock(&gate_lock);
	entered++;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	return ct_sink_advance(s, ck);
}

/*
 * An idle position asked for is work the thread holds until it is durable:
 * the pipe is not idle meanwhile, and a drain returns only once the
 * checkpoint holds it.  (A stream reader records a position message read
 * while a batch was on its way after that batch, then drains for
 * --endpos: before, the drain could return with the position still
 * pending, and the reader ended one message short of its end.)
 */
START_TEST(test_advance_is_held_work)
{
	CtSink		f;
	RpDelivery	dl;
	RpPipe		p;
	RpCheckpoint durable;

	start_sink(&f, &dl, &p, true);
	set_gate(true);
	ck_assert_int_eq(rp_pipe_push(&p, txn(1, 0x1000, 2), NULL, NULL), 0);
	ck_assert_int_eq(rp_pipe_drain(&p, NULL, NULL), 0);
	ck_assert(rp_pipe_idle(&p));
	set_gate(false);
	rp_pipe_advance(&p, 0x9000, 7);
	ck_assert(!rp_pipe_idle(&p));
	ck_assert(wait_for(&entered, 2));	/* the advance is in the sink, held at
										 * the gate */
	ck_assert_msg(!rp_pipe_idle(&p), "the pipe looked idle while an idle position was being recorded");
	set_gate(true);
	ck_assert_int_eq(rp_pipe_drain(&p, NULL, NULL), 0);
	ck_assert_int_eq(rp_pipe_durable(&p, &durable), 0);
	ck_assert_uint_eq(durable.end_lsn, 0x9000);
	ck_assert_uint_eq(durable.source_seq, 7);
	ck_assert_int_eq(f.nadvance, 1);
	ck_assert(rp_pipe_idle(&p));
	rp_pipe_stop(&p);
	rp_deliver_free(&dl);
}

END_TEST

Suite	   *
ct_suite_pipe(void)
{
	Suite	   *s = suite_create("pipe");
	TCase	   *tc = tcase_create("batches");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_backlog_goes_at_once);
	tcase_add_test(tc, test_caught_up_fills_as_usual);
	tcase_add_test(tc, test_advance_is_held_work);
	suite_add_tcase(s, tc);
	return s;
}
