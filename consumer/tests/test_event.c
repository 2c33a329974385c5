/*
 * test_event.c
 *    The event hook (base/rp_event.h): what the assembler and the delivery
 *    tell a subscriber, in order, with their counts, byte sizes and LSNs; a
 *    failing sink and an unwritable checkpoint file; schema changes with
 *    their relation's name; no event holding a row value (G4: every row
 *    carries the canary, every string of every event is scanned); and the
 *    command line's subscriber turning events into the metrics page's
 *    counters (cli/rp_cli_events.c).
 */
#include "ct_kit.h"
#include "rp_alloc.h"
#include "base/rp_event.h"
#include "base/rp_metrics.h"
#include "cli/rp_cli_events.h"
#include "cli/rp_cli_metrics.h"

#define REL 16384u
#define MAX_EV 256

/* Every event seen, its strings copied (the originals need not outlive the call). */
typedef struct EvLog
{
	int			n;
	RpEvent		ev[MAX_EV];
	char		slot[MAX_EV][64];
	char		schema[MAX_EV][64];
	char		relation[MAX_EV][64];
} EvLog;

static RpSpill sp;
static RpAsm as;
static EvLog evlog;

static void
record(const RpEvent *ev, void *arg)
{
	EvLog	   *l = arg;
	int			i = l->n++;

	ck_assert_int_lt(i, MAX_EV);
	l->ev[i] = *ev;
	snprintf(l->slot[i], 64, "%s", ev->slot ? ev->slot : "");
	snprintf(l->schema[i], 64, "%s", ev->schema ? ev->schema : "");
	snprintf(l->relation[i], 64, "%s", ev->relation ? ev->relation : "");
	/* no string an event holds may contain a row's value */
	ck_assert_ptr_null(ev->slot ? strstr(ev->slot, CT_CANARY) : NULL);
	ck_assert_ptr_null(ev->schema ? strstr(ev->schema, CT_CANARY) : NULL);
	ck_assert_ptr_null(ev->relation ? strstr(ev->relation, CT_CANARY) : NULL);
	ck_assert_ptr_null(ev->stream ? strstr(ev->stream, CT_CANARY) : NULL);
	ck_assert_ptr_null(strstr(ev->sqlstate, CT_CANARY));
	/* the delivery and the assembler read no stream */
	ck_assert_ptr_null(ev->stream);
}

static RpEventHook
hook(void)
{
	RpEventHook h = {record, &evlog};

	return h;
}

static void
setup(void)
{
	ct_setup_dir();
	memset(&evlog, 0, sizeof(evlog));
	ck_assert_int_eq(rp_spill_init(&sp, ct_path("spill"), 1 << 20, 1 << 30), 0);
	rp_asm_init(&as, &sp, 0);
	as.events = hook();
}

static void
teardown(void)
{
	rp_asm_free(&as);
	rp_free(sp.dir);
	ct_teardown_dir();
}

/* A committed transaction of n inserts (note: the canary), REL of ncols columns. */
static RpItem *
txn(uint32_t xid, uint64_t lsn, int n, int ncols, bool describe)
{
	RpBuf		b;
	RpItem	   *it;

	ct_txn_frame(&b, describe, REL, ncols, xid, lsn, n, 1, CT_CANARY);
	ck_assert_int_eq(ct_feed(&as, &b, lsn), 0);
	it = rp_asm_pop(&as);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_TXN);
	return it;
}

/* The kinds seen, as their names joined by ' ' (kept until teardown). */
static const char *
kinds(void)
{
	RpBuf		b;

	rp_buf_init(&b, 256);
	for (int i = 0; i < evlog.n; i++)
	{
		const char *k = rp_event_kind_name(evlog.ev[i].kind);

		if (i > 0)
			rp_buf_put_bytes(&b, " ", 1);
		rp_buf_put_bytes(&b, k, strlen(k));
	}
	{
		char	   *s = ct_cstr(&b);

		rp_buf_free(&b);
		return s;
	}
}

/* Every event scanned once more, whole: the canary is in none of its strings. */
static void
assert_value_free(void)
{
	for (int i = 0; i < evlog.n; i++)
	{
		ck_assert_ptr_null(strstr(evlog.slot[i], CT_CANARY));
		ck_assert_ptr_null(strstr(evlog.schema[i], CT_CANARY));
		ck_assert_ptr_null(strstr(evlog.relation[i], CT_CANARY));
		ck_assert_ptr_null(strstr(evlog.ev[i].sqlstate, CT_CANARY));
	}
}

START_TEST(test_kind_names)
{
	ck_assert_str_eq(rp_event_kind_name(RP_EVENT_TXN_ASSEMBLED), "txn_assembled");
	ck_assert_str_eq(rp_event_kind_name(RP_EVENT_CONN_LOST), "conn_lost");
	ck_assert_str_eq(rp_event_kind_name(RP_EVENT__COUNT), "unknown");
	for (int k = 0; k < RP_EVENT__COUNT; k++)
		ck_assert_str_ne(rp_event_kind_name((RpEventKind) k), "unknown");
	/* no hook, or a hook with no function: nothing is called */
	rp_event_emit(NULL, &evlog.ev[0]);
}

END_TEST

/*
 * Three transactions in batches of two, the checkpoint the library's file:
 * each assembled, each batch committed after its checkpoint is stored,
 * with the batch's counts, bytes and LSNs.
 */
/*
 * Why each batch went out: the bytes and time limits, a reason given by the
 * caller (backlog), and each name as the -v line writes it.
 */
START_TEST(test_flush_reasons)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpEventHook h = hook();

	/* --batch-bytes 1: the first transaction fills it */
	{
		RpBatchLimits l = ct_limits(1000, 1, CT_NEVER_MS);

		ct_sink_init(&f);
		ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("a.checkpoint"), NULL, &l), 0);
		rp_deliver_set_events(&dl, &h);
		ck_assert_int_eq(rp_deliver_item(&dl, txn(10, 0x1000, 1, 2, true), 0), 0);
		ck_assert_str_eq(kinds(), "txn_assembled checkpoint_stored batch_committed");
		ck_assert_int_eq(evlog.ev[2].flush, RP_FLUSH_BYTES);
		rp_deliver_free(&dl);
	}
	/* --batch-ms 100: not at 99 ms, at 100; then a reason the caller gives */
	{
		RpBatchLimits l = ct_limits(1000, CT_NEVER_BYTES, 100);

		evlog.n = 0;
		ct_sink_init(&f);
		ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("b.checkpoint"), NULL, &l), 0);
		rp_deliver_set_events(&dl, &h);
		ck_assert_int_eq(rp_deliver_item(&dl, txn(11, 0x2000, 1, 2, true), 0), 0);
		ck_assert_int_eq(rp_deliver_flush(&dl, false, 99), 0);
		ck_assert_int_eq(evlog.n, 1);
		ck_assert_int_eq(rp_deliver_flush(&dl, false, 100), 0);
		ck_assert_str_eq(kinds(), "txn_assembled checkpoint_stored batch_committed");
		ck_assert_int_eq(evlog.ev[2].flush, RP_FLUSH_TIME);
		ck_assert_int_eq(rp_deliver_item(&dl, txn(12, 0x3000, 1, 2, false), 200), 0);
		ck_assert_int_eq(rp_deliver_flush_for(&dl, RP_FLUSH_BACKLOG, 200), 0);
		ck_assert_int_eq(evlog.ev[5].kind, RP_EVENT_BATCH_COMMITTED);
		ck_assert_int_eq(evlog.ev[5].flush, RP_FLUSH_BACKLOG);
		rp_deliver_free(&dl);
	}
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_TXNS), "txns");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_BYTES), "bytes");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_TIME), "time");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_BACKLOG), "backlog");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_MESSAGE), "message");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_STREAMED), "streamed");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_DRAIN), "drain");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH_NONE), "");
	ck_assert_str_eq(rp_flush_reason_name(RP_FLUSH__COUNT), "unknown");
	ck_assert_str_eq(rp_flush_reason_name(-1), "unknown");
}

END_TEST

START_TEST(test_sequence)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(2, CT_NEVER_BYTES, CT_NEVER_MS);
	RpEventHook h = hook();
	RpItem	   *it[3];
	uint64_t	bytes[3];
	const RpEvent *e;

	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("slot.checkpoint"), NULL, &l), 0);
	snprintf(dl.ck.slot, sizeof(dl.ck.slot), "evslot");
	rp_deliver_set_events(&dl, &h);
	for (int i = 0; i < 3; i++)
	{
		it[i] = txn((uint32_t) (10 + i), 0x1000 * (uint64_t) (i + 1), i + 1, 2, i == 0);
		bytes[i] = rp_store_length(&it[i]->txn->store);
		ck_assert_int_eq(rp_deliver_item(&dl, it[i], 0), 0);
	}
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	ck_assert_str_eq(kinds(), "txn_assembled txn_assembled checkpoint_stored batch_committed "
					 "txn_assembled checkpoint_stored batch_committed");

	/* assembled: one transaction, its changes, its stored bytes and LSNs */
	e = &evlog.ev[1];
	ck_assert_uint_eq(e->txns, 1);
	ck_assert_uint_eq(e->changes, 2);
	ck_assert_uint_eq(e->bytes, bytes[1]);
	ck_assert_uint_eq(e->lsn, 0x2000);
	ck_assert_uint_eq(e->end_lsn, 0x2028);

	/* the first batch: two transactions, 1 + 2 changes */
	e = &evlog.ev[2];
	ck_assert_uint_eq(e->end_lsn, 0x2028);
	ck_assert_str_eq(evlog.slot[2], "evslot");
	e = &evlog.ev[3];
	ck_assert_uint_eq(e->txns, 2);
	ck_assert_uint_eq(e->changes, 3);
	ck_assert_uint_eq(e->bytes, bytes[0] + bytes[1]);
	ck_assert_uint_eq(e->lsn, 0x2000);
	ck_assert_uint_eq(e->end_lsn, 0x2028);
	ck_assert_int_eq(e->reason, 0);
	ck_assert_int_ge(e->duration_us, 0);
	ck_assert_str_eq(evlog.slot[3], "evslot");
	ck_assert_str_eq(evlog.relation[3], "");
	/* --batch-txns 2 sent it */
	ck_assert_int_eq(e->flush, RP_FLUSH_TXNS);

	/* the second: the third transaction alone */
	e = &evlog.ev[6];
	ck_assert_uint_eq(e->txns, 1);
	ck_assert_uint_eq(e->changes, 3);
	ck_assert_uint_eq(e->bytes, bytes[2]);
	ck_assert_uint_eq(e->end_lsn, 0x3028);
	ck_assert_uint_eq(evlog.ev[5].end_lsn, 0x3028);
	/* the forced flush at the end: a drain */
	ck_assert_int_eq(e->flush, RP_FLUSH_DRAIN);
	ck_assert_int_eq(evlog.ev[1].flush, RP_FLUSH_NONE);

	/*
	 * a subscriber set: the delivery's own counters are the subscriber's
	 * business
	 */
	ck_assert_uint_eq(dl.own_count.txns, 0);
	ck_assert_int_eq(f.nchanges, 6);
	assert_value_free();
	rp_deliver_free(&dl);
}

END_TEST

/* The sink fails the second transaction: BATCH_FAILED with its halt reason and SQLSTATE. */
START_TEST(test_batch_failed)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(2, CT_NEVER_BYTES, CT_NEVER_MS);
	RpEventHook h = hook();
	const RpEvent *e;

	ct_sink_init(&f);
	f.fail_on_txn = 2;
	f.fail_sqlstate = "23505";
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("slot.checkpoint"), NULL, &l), 0);
	rp_deliver_set_events(&dl, &h);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1, 2, true), 0), 0);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1, 2, false), 0), -1);
	ck_assert_str_eq(kinds(), "txn_assembled txn_assembled batch_failed");
	e = &evlog.ev[2];
	ck_assert_int_eq(e->reason, RP_HALT_SINK);
	/* the server's SQLSTATE the sink recorded: a code, carried as it is */
	ck_assert_str_eq(e->sqlstate, "23505");
	/* the next failure without one carries none */
	rp_fail(RP_HALT_NONE, "another failure");
	ck_assert_str_eq(rp_error_sqlstate(), "");
	/* library-owned: none of it is durable, the whole batch goes again */
	ck_assert_uint_eq(e->txns, 0);
	assert_value_free();
	rp_deliver_free(&dl);
}

END_TEST

/* The library's checkpoint file cannot be written: CHECKPOINT_FAILED, then the batch fails. */
START_TEST(test_checkpoint_failed)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RpEventHook h = hook();

	ct_sink_init(&f);
	/* a directory that does not exist: unwritable for root too */
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("no-such-dir/slot.checkpoint"), NULL, &l), 0);
	rp_deliver_set_events(&dl, &h);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1, 2, true), 0), -1);
	ck_assert_str_eq(kinds(), "txn_assembled checkpoint_failed batch_failed");
	ck_assert_uint_eq(evlog.ev[1].end_lsn, 0x128);
	ck_assert_int_eq(evlog.ev[1].reason, (int) rp_error_halt());
	ck_assert_int_eq(evlog.ev[2].kind, RP_EVENT_BATCH_FAILED);
	ck_assert_uint_eq(dl.ck.end_lsn, 0);
	assert_value_free();
	rp_deliver_free(&dl);
}

END_TEST

/*
 * A column added: SCHEMA_ADDITIVE naming the relation; one dropped with no
 * handler: SCHEMA_HALTED with RP_HALT_SCHEMA; one dropped that a handler
 * takes: SCHEMA_DESTRUCTIVE.  The first description of a table is no
 * change.
 */
START_TEST(test_schema_events)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RpEventHook h = hook();
	int			i;

	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	rp_deliver_set_events(&dl, &h);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1, 2, true), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1, 3, true), 0), 0);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 1, 2, true), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
	ck_assert_str_eq(kinds(), "txn_assembled checkpoint_stored batch_committed "
					 "txn_assembled schema_additive checkpoint_stored batch_committed "
					 "txn_assembled schema_halted batch_failed");
	i = 4;
	ck_assert_str_eq(evlog.schema[i], "public");
	ck_assert_str_eq(evlog.relation[i], "t");
	ck_assert_uint_eq(evlog.ev[i].lsn, 0x200);
	i = 8;
	ck_assert_str_eq(evlog.relation[i], "t");
	ck_assert_int_eq(evlog.ev[i].reason, RP_HALT_SCHEMA);
	ck_assert_int_eq(evlog.ev[i + 1].reason, RP_HALT_SCHEMA);
	rp_deliver_free(&dl);

	/* a handler that takes the drop */
	memset(&evlog, 0, sizeof(evlog));
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	f.s.handle_schema_change = ct_sink_schema;
	rp_deliver_set_events(&dl, &h);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(4, 0x400, 1, 3, true), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(5, 0x500, 1, 2, true), 0), 0);
	ck_assert_str_eq(kinds(), "txn_assembled checkpoint_stored batch_committed "
					 "txn_assembled schema_destructive checkpoint_stored batch_committed");
	ck_assert_str_eq(evlog.relation[4], "t");
	assert_value_free();
	rp_deliver_free(&dl);
}

END_TEST

/*
 * No subscriber: the delivery counts its own events, as before the hook
 * (library users reading dl->count see what the metrics page shows).
 */
START_TEST(test_default_counts)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 2, 2, true), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1, 3, true), 0), 0);
	ck_assert_uint_eq(RP_COUNT_LOAD(dl.count->txns), 2);
	ck_assert_uint_eq(RP_COUNT_LOAD(dl.count->changes), 3);
	ck_assert_uint_eq(RP_COUNT_LOAD(dl.count->batches), 2);
	ck_assert_uint_eq(RP_COUNT_LOAD(dl.count->schema_changes), 1);
	ck_assert_uint_eq(RP_COUNT_LOAD(dl.count->checkpoint_lsn), 0x228);
	rp_deliver_free(&dl);
}

END_TEST

/* The delivery page of the metrics, rendered from c. */
static char *
delivery_page(RpDlCounters *c)
{
	RpMetrics	m;
	RpCliMetrics cm;
	RpBuf		out;

	rp_metrics_init(&m);
	memset(&cm, 0, sizeof(cm));
	cm.m = &m;
	cm.count = c;
	rp_buf_init(&out, 4096);
	rp_cli_metrics_delivery(&out, &cm);
	{
		char	   *s = ct_cstr(&out);

		rp_buf_free(&out);
		return s;
	}
}

/* The command line's subscriber: N events, replicant_transactions_total N. */
START_TEST(test_cli_counters)
{
	RpDlCounters c;
	RpCliEvents ce;
	RpEventHook h;
	RpEvent		ev;
	char	   *page;

	memset(&c, 0, sizeof(c));
	ce.count = &c;
	ce.verbose = 0;
	h = rp_cli_events_hook(&ce);
	page = delivery_page(&c);
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_transactions_total 0\n"));
	for (int i = 0; i < 5; i++)
	{
		rp_event_init(&ev, RP_EVENT_BATCH_COMMITTED);
		ev.txns = 1;
		ev.changes = 4;
		rp_event_emit(&h, &ev);
		rp_event_init(&ev, RP_EVENT_CHECKPOINT_STORED);
		ev.end_lsn = 0x1000 + (uint64_t) i;
		rp_event_emit(&h, &ev);
	}
	rp_event_init(&ev, RP_EVENT_SCHEMA_ADDITIVE);
	ev.schema = "public";
	ev.relation = "t";
	rp_event_emit(&h, &ev);
	/* a failed batch counts the transactions the sink kept, not a batch */
	rp_event_init(&ev, RP_EVENT_BATCH_FAILED);
	ev.txns = 2;
	ev.changes = 1;
	rp_event_emit(&h, &ev);
	/* events that count nothing */
	rp_event_init(&ev, RP_EVENT_TXN_ASSEMBLED);
	ev.txns = 100;
	rp_event_emit(&h, &ev);
	rp_event_init(&ev, RP_EVENT_CONN_LOST);
	rp_event_emit(&h, &ev);

	page = delivery_page(&c);
	ck_assert_msg(strstr(page, "\nreplicant_transactions_total 7\n"), "%s", page);
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_changes_total 21\n"));
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_batches_total 5\n"));
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_schema_changes_total 1\n"));
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_checkpoint_lsn 4100\n"));
}

END_TEST

/* The whole path: a delivery whose subscriber is the command line's, and its page. */
START_TEST(test_cli_from_delivery)
{
	CtSink		f;
	RpDelivery	dl;
	RpDlCounters c;
	RpCliEvents ce;
	RpEventHook h;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(2, CT_NEVER_BYTES, CT_NEVER_MS);
	char	   *page;

	memset(&c, 0, sizeof(c));
	ce.count = &c;
	ce.verbose = 0;
	h = rp_cli_events_hook(&ce);
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("slot.checkpoint"), NULL, &l), 0);
	rp_deliver_count_into(&dl, &c);
	rp_deliver_set_events(&dl, &h);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(rp_deliver_item(&dl, txn((uint32_t) (1 + i), 0x100 * (uint64_t) (i + 1), 3, 2, i == 0), 0), 0);
	page = delivery_page(&c);
	ck_assert_msg(strstr(page, "\nreplicant_transactions_total 4\n"), "%s", page);
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_changes_total 12\n"));
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_batches_total 2\n"));
	/* 0x428 */
	ck_assert_ptr_nonnull(strstr(page, "\nreplicant_checkpoint_lsn 1064\n"));
	rp_deliver_free(&dl);
}

END_TEST

Suite	   *
ct_suite_event(void)
{
	Suite	   *s = suite_create("event");
	TCase	   *tc = ct_tcase("delivery");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_kind_names);
	tcase_add_test(tc, test_sequence);
	tcase_add_test(tc, test_flush_reasons);
	tcase_add_test(tc, test_batch_failed);
	tcase_add_test(tc, test_checkpoint_failed);
	tcase_add_test(tc, test_schema_events);
	tcase_add_test(tc, test_default_counts);
	suite_add_tcase(s, tc);

	tc = ct_tcase("cli");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_cli_counters);
	tcase_add_test(tc, test_cli_from_delivery);
	suite_add_tcase(s, tc);
	return s;
}
