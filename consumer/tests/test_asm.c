/*
 * test_asm.c
 *    The assembler (consumer/rp_asm.c): every transition of its state
 *    machine, dedup against the watermark (G1), fail-closed halts with a
 *    named reason (G3), streamed transactions with subtransaction aborts,
 *    spill of assembled transactions (G5) and self-describing stores read
 *    back through a delivery cursor.
 */
#include "ct_kit.h"

#define REL  16384u
#define REL2 16400u

static RpSpill spill;
static RpAsm asm_;

/* Every test gets a scratch dir, a spill area (1 MB memory) and an assembler. */
static void
setup(void)
{
	ct_setup_dir();
	ck_assert_int_eq(rp_spill_init(&spill, ct_path("spill"), 1 << 20, 1 << 30), 0);
	rp_asm_init(&asm_, &spill, 0);
}

static void
teardown(void)
{
	rp_asm_free(&asm_);
	rp_free(spill.dir);
	ct_teardown_dir();
}

/* Re-create the assembler with another watermark. */
static void
reinit(uint64_t watermark)
{
	rp_asm_free(&asm_);
	rp_asm_init(&asm_, &spill, watermark);
}

static void
describe(uint32_t relid, int ncols)
{
	RpBuf		b;

	ct_frame(&b);
	ct_rel(&b, relid, "public", relid == REL ? "t" : "u", ncols);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x10), 0);
}

/* The tags of a transaction's stored records, as a string ("RII..."). */
static char *
stored_tags(RpTxn *t)
{
	static char tags[4096];
	RpStoreIter it;
	const unsigned char *rec;
	size_t		len;
	int			n = 0,
				rc;

	ck_assert_int_eq(rp_store_iter_start(&it, &t->store), 0);
	while ((rc = rp_store_iter_next(&it, &rec, &len)) > 0 && n < (int) sizeof(tags) - 1)
		tags[n++] = (char) rec[0];
	rp_store_iter_end(&it);
	ck_assert_int_eq(rc, 0);
	tags[n] = '\0';
	return tags;
}

/*
 * Read a transaction back through a brand-new delivery (so it must decode
 * on its own: self-describing) into the fake sink's change list.
 */
static void
read_back(RpTxn *t, CtSink *f)
{
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(f);
	f->s.handle_schema_change = ct_sink_schema;
	ck_assert_int_eq(rp_deliver_init(&dl, &f->s, &ck, NULL, NULL, &l), 0);
	ck_assert_msg(ct_sink_one(f, &dl, t) == 0, "read back failed: %s", rp_error());
	rp_deliver_free(&dl);
}

static RpItem *
pop_txn(void)
{
	RpItem	   *it = rp_asm_pop(&asm_);

	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_TXN);
	ck_assert_ptr_nonnull(it->txn);
	return it;
}

/* The assembler refused the frame with this halt reason. */
static void
expect_halt(RpBuf *b, RpHalt halt, const char *needle)
{
	rp_error_clear();
	ck_assert_int_eq(ct_feed(&asm_, b, 0xABCDEF), -1);
	ck_assert_msg(rp_error_halt() == halt, "halt %s, expected %s: %s",
				  rp_halt_name(rp_error_halt()), rp_halt_name(halt), rp_error());
	if (needle)
		ck_assert_msg(strstr(rp_error(), needle) != NULL, "error \"%s\" lacks \"%s\"",
					  rp_error(), needle);
}

/* ---- plain transactions ---------------------------------------------------- */

START_TEST(test_begin_changes_commit)
{
	RpBuf		b;
	RpItem	   *it;
	RpTxn	   *t;

	/* begin, changes and commit in three frames */
	ct_frame(&b);
	ct_rel(&b, REL, "public", "t", 2);
	rp_enc_begin(&b, 700, 0x1000, 1700000000000000LL);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x0F00), 0);
	ck_assert(rp_asm_busy(&asm_));
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	ct_frame(&b);
	ct_insert(&b, REL, 0, 2, 1, "one");
	ct_update(&b, REL, 0, 2, 1, "uno");
	ct_delete(&b, REL, 0, 2, 1);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x0F10), 0);
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	ct_frame(&b);
	rp_enc_commit(&b, 0x1000, 0x1028, 1700000000000123LL);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x1000), 0);

	it = pop_txn();
	t = it->txn;
	ck_assert_uint_eq(t->xid, 700);
	ck_assert(!t->streamed);
	ck_assert_uint_eq(t->final_lsn, 0x1000);
	ck_assert_uint_eq(t->commit_lsn, 0x1000);
	ck_assert_uint_eq(t->end_lsn, 0x1028);
	ck_assert_int_eq(t->commit_time, 1700000000000123LL);
	ck_assert_uint_eq(t->nchanges, 3);
	ck_assert_ptr_null(t->origin);
	ck_assert_str_eq(stored_tags(t), "RIUD");
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert(!rp_asm_busy(&asm_));
	ck_assert_uint_eq(asm_.skipped, 0);
	rp_item_free(it);
}

END_TEST

START_TEST(test_one_frame_many_txns)
{
	RpBuf		b;

	/* three transactions in one frame come out as three, in order */
	ct_frame(&b);
	ct_rel(&b, REL, "public", "t", 2);
	for (uint32_t x = 0; x < 3; x++)
	{
		rp_enc_begin(&b, 800 + x, 0x2000 + x * 0x100, 0);
		for (uint32_t i = 0; i <= x; i++)
			ct_insert(&b, REL, 0, 2, (int32_t) i, "n");
		rp_enc_commit(&b, 0x2000 + x * 0x100, 0x2010 + x * 0x100, 0);
	}
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x2000), 0);
	for (uint32_t x = 0; x < 3; x++)
	{
		RpItem	   *it = pop_txn();

		ck_assert_uint_eq(it->txn->xid, 800 + x);
		ck_assert_uint_eq(it->txn->nchanges, x + 1);
		ck_assert_uint_eq(it->txn->commit_lsn, 0x2000 + x * 0x100);
		/* each store carries its own description */
		ck_assert_int_eq(stored_tags(it->txn)[0], 'R');
		rp_item_free(it);
	}
	ck_assert_ptr_null(rp_asm_pop(&asm_));
}

END_TEST

START_TEST(test_empty_txn)
{
	RpBuf		b;
	RpItem	   *it;

	ct_frame(&b);
	rp_enc_begin(&b, 5, 0x300, 0);
	rp_enc_commit(&b, 0x300, 0x328, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x300), 0);
	it = pop_txn();
	ck_assert_uint_eq(it->txn->nchanges, 0);
	ck_assert_uint_eq(rp_store_length(&it->txn->store), 0);
	rp_item_free(it);
}

END_TEST

START_TEST(test_truncate_and_txn_message)
{
	RpBuf		b;
	RpItem	   *it;
	uint32_t	rels[2] = {REL, REL2};
	CtSink		f;

	describe(REL, 2);
	describe(REL2, 3);
	ct_frame(&b);
	rp_enc_begin(&b, 9, 0x500, 0);
	rp_enc_truncate(&b, RP_TRUNCATE_CASCADE, 0, 2, rels);
	rp_enc_message(&b, true, 0, 0x4F0, "app", "hello", 5);
	ct_insert(&b, REL2, 0, 3, 4, "x");
	rp_enc_commit(&b, 0x500, 0x528, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x500), 0);
	it = pop_txn();
	ck_assert_uint_eq(it->txn->nchanges, 3);
	/* both relations described before the truncate, once each */
	ck_assert_str_eq(stored_tags(it->txn), "RRTMI");
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 3);
	ck_assert_int_eq(f.changes[0].tag, RP_TAG_TRUNCATE);
	ck_assert_int_eq(f.changes[1].tag, RP_TAG_MESSAGE);
	ck_assert_int_eq(f.changes[2].tag, RP_TAG_INSERT);
	ck_assert_int_eq(f.changes[2].natts, 3);
	rp_item_free(it);
	/* a transactional message is not an item of its own */
	ck_assert_ptr_null(rp_asm_pop(&asm_));
}

END_TEST

/* ---- dedup ------------------------------------------------------------------- */

START_TEST(test_dedup_watermark)
{
	RpBuf		b;
	RpItem	   *it;

	reinit(0x5000);
	/* below and at the watermark: already applied */
	ct_txn_frame(&b, true, REL, 2, 1, 0x4000, 2, 1, "a");
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x4000), 0);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert_uint_eq(asm_.skipped, 1);
	ct_txn_frame(&b, false, REL, 2, 2, 0x5000, 2, 1, "a");
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x5000), 0);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert_uint_eq(asm_.skipped, 2);
	ck_assert(!rp_asm_busy(&asm_));
	/* one past it: new */
	ct_txn_frame(&b, false, REL, 2, 3, 0x5001, 2, 1, "a");
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x5001), 0);
	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 3);
	ck_assert_uint_eq(asm_.skipped, 2);
	rp_item_free(it);

	/* a streamed transaction committed at the watermark is dropped too */
	ct_frame(&b);
	rp_enc_stream_start(&b, 40, true);
	ct_insert(&b, REL, 40, 2, 1, "s");
	rp_enc_stream_stop(&b);
	rp_enc_stream_commit(&b, 40, 0x5000, 0x5010, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x5000), 0);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert_uint_eq(asm_.skipped, 3);
	ck_assert(!rp_asm_busy(&asm_));
}

END_TEST

/* ---- protocol halts ------------------------------------------------------------ */

START_TEST(test_change_before_begin)
{
	RpBuf		b;
	uint32_t	rels[1] = {REL};

	describe(REL, 2);
	ct_frame(&b);
	ct_insert(&b, REL, 0, 2, 1, "x");
	expect_halt(&b, RP_HALT_PROTOCOL, "insert");
	ck_assert_msg(strstr(rp_error(), "0/ABCDEF") != NULL, "no LSN in: %s", rp_error());
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	ct_frame(&b);
	ct_delete(&b, REL, 0, 2, 1);
	expect_halt(&b, RP_HALT_PROTOCOL, "delete");

	ct_frame(&b);
	rp_enc_truncate(&b, 0, 0, 1, rels);
	expect_halt(&b, RP_HALT_PROTOCOL, "truncate");

	ct_frame(&b);
	rp_enc_message(&b, true, 0, 0x10, "p", "c", 1);
	expect_halt(&b, RP_HALT_PROTOCOL, "message");

	ct_frame(&b);
	rp_enc_origin(&b, 0x10, "elsewhere");
	expect_halt(&b, RP_HALT_PROTOCOL, "origin");

	/* a change after the commit is outside too */
	ct_txn_frame(&b, false, REL, 2, 1, 0x100, 1, 1, "a");
	ct_insert(&b, REL, 0, 2, 2, "late");
	expect_halt(&b, RP_HALT_PROTOCOL, "outside");
}

END_TEST

START_TEST(test_begin_inside_begin)
{
	RpBuf		b;

	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	rp_enc_begin(&b, 2, 0x200, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "begin of xid 2");

	/* also across frames */
	reinit(0);
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 1), 0);
	ct_frame(&b);
	rp_enc_begin(&b, 3, 0x100, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "inside");

	/* a begin inside a stream block */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 50, true);
	rp_enc_begin(&b, 4, 0x100, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "begin");

	/* a stream start inside a transaction */
	reinit(0);
	ct_frame(&b);
	rp_enc_begin(&b, 4, 0x100, 0);
	rp_enc_stream_start(&b, 50, true);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream start");
}

END_TEST

START_TEST(test_commit_without_begin)
{
	RpBuf		b;

	ct_frame(&b);
	rp_enc_commit(&b, 0x100, 0x128, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "commit without begin");
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	/* a plain commit inside a stream block */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 50, true);
	rp_enc_commit(&b, 0x100, 0x128, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "commit");

	/* stream stop with no block; stream commit / abort inside a block or txn */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_stop(&b);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream stop");

	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 50, true);
	rp_enc_stream_commit(&b, 50, 0x100, 0x128, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream commit");

	reinit(0);
	ct_frame(&b);
	rp_enc_begin(&b, 4, 0x100, 0);
	rp_enc_stream_abort(&b, 50, 50);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream abort");

	/* a stream commit of a transaction never started */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_commit(&b, 77, 0x100, 0x128, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "unknown xid 77");
}

END_TEST

/*
 * The halts of the state diagram (docs/guarantees.md, "The assembler's
 * states") that the tests above leave out: each record from a state that
 * has no arrow for it halts as protocol, naming what it was.
 */
START_TEST(test_state_halts)
{
	RpBuf		b;

	/* idle: a stream stop with no block open */
	ct_frame(&b);
	rp_enc_stream_stop(&b);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream stop outside a stream block");

	/* idle: a stream commit of an xid never streamed */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_commit(&b, 77, 0x300, 0x328, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream commit of unknown xid 77");

	/* in-txn: a stream commit, a stream abort */
	reinit(0);
	ct_frame(&b);
	rp_enc_begin(&b, 5, 0x100, 0);
	rp_enc_stream_commit(&b, 5, 0x300, 0x328, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream commit of xid 5 inside a transaction");
	reinit(0);
	ct_frame(&b);
	rp_enc_begin(&b, 5, 0x100, 0);
	rp_enc_stream_abort(&b, 5, 5);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream abort of xid 5 inside a transaction");

	/* in-block: a stream commit or abort before the block's stop, an origin */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 60, true);
	rp_enc_stream_commit(&b, 60, 0x300, 0x328, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream commit of xid 60 inside a transaction");
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 61, true);
	rp_enc_stream_abort(&b, 61, 61);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream abort of xid 61 inside a transaction");
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 62, true);
	rp_enc_origin(&b, 0x10, "elsewhere");
	expect_halt(&b, RP_HALT_PROTOCOL, "origin record outside a transaction");

	/* in-block: a second stream start (another xid) before the stop */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 63, true);
	rp_enc_stream_start(&b, 64, true);
	expect_halt(&b, RP_HALT_PROTOCOL, "stream start of xid 64 inside an open transaction");
	ck_assert_ptr_null(rp_asm_pop(&asm_));
}

END_TEST

START_TEST(test_unknown_relation)
{
	RpBuf		b;
	uint32_t	rels[2] = {REL, 999};

	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	ct_insert(&b, 4242, 0, 2, 1, "x");
	expect_halt(&b, RP_HALT_UNKNOWN_RELATION, "4242");
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	/* a truncate naming one unknown relation among known ones */
	reinit(0);
	describe(REL, 2);
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	rp_enc_truncate(&b, 0, 0, 2, rels);
	expect_halt(&b, RP_HALT_UNKNOWN_RELATION, "999");

	/* inside a stream block */
	reinit(0);
	ct_frame(&b);
	rp_enc_stream_start(&b, 50, true);
	ct_insert(&b, 31337, 50, 2, 1, "x");
	expect_halt(&b, RP_HALT_UNKNOWN_RELATION, "31337");
}

END_TEST

START_TEST(test_malformed_frame)
{
	RpBuf		b;
	size_t		at;

	/* not one of our frames */
	rp_buf_init(&b, 0);
	rp_buf_put_text(&b, "{\"kind\":\"insert\"}");
	expect_halt(&b, RP_HALT_MALFORMED, "0/ABCDEF");

	/* a version this build does not speak */
	rp_buf_init(&b, 0);
	rp_buf_put_u8(&b, RP_FRAME_MAGIC);
	rp_buf_put_u8(&b, RP_PROTO_VERSION_MAX + 1);
	expect_halt(&b, RP_HALT_MALFORMED, "version");

	/* empty */
	rp_buf_init(&b, 0);
	expect_halt(&b, RP_HALT_MALFORMED, NULL);

	/* a record cut short */
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	b.len -= 3;
	expect_halt(&b, RP_HALT_MALFORMED, "truncated");

	/* an unknown tag */
	ct_frame(&b);
	at = rp_buf_begin_record(&b, 'Z');
	rp_buf_put_u32(&b, 1);
	rp_buf_end_record(&b, at);
	expect_halt(&b, RP_HALT_MALFORMED, "0x5a");

	/* a begin with a trailing byte */
	ct_frame(&b);
	at = rp_buf_begin_record(&b, RP_TAG_BEGIN);
	rp_buf_put_u32(&b, 1);
	rp_buf_put_u64(&b, 2);
	rp_buf_put_u64(&b, 3);
	rp_buf_put_u8(&b, 0);
	rp_buf_end_record(&b, at);
	expect_halt(&b, RP_HALT_MALFORMED, "begin");

	/* a row with the wrong number of columns */
	reinit(0);
	describe(REL, 2);
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	ct_insert(&b, REL, 0, 3, 1, "x");
	expect_halt(&b, RP_HALT_MALFORMED, "insert");

	/* records before the damage were taken: the transaction is open */
	ck_assert(rp_asm_busy(&asm_));
}

END_TEST

/* ---- messages and origins ----------------------------------------------------- */

START_TEST(test_nontransactional_message_order)
{
	RpBuf		b;
	RpItem	   *it;
	static const char content[] = {'a', '\0', 'b', '\xff'};

	ct_txn_frame(&b, true, REL, 2, 1, 0x100, 1, 1, "a");
	rp_enc_message(&b, false, 0, 0x180, "audit", content, sizeof(content));
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	ct_txn_frame(&b, false, REL, 2, 2, 0x200, 1, 2, "b");
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x200), 0);
	ct_frame(&b);
	rp_enc_message(&b, false, 0, 0x280, "last", "", 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x280), 0);

	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 1);
	rp_item_free(it);

	it = rp_asm_pop(&asm_);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_MESSAGE);
	ck_assert_ptr_null(it->txn);
	ck_assert_uint_eq(it->msg.lsn, 0x180);
	ck_assert_str_eq(it->msg.prefix, "audit");
	ck_assert_uint_eq(it->msg.content_len, sizeof(content));
	ck_assert_int_eq(memcmp(it->msg.content, content, sizeof(content)), 0);
	rp_item_free(it);

	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 2);
	rp_item_free(it);

	it = rp_asm_pop(&asm_);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_MESSAGE);
	ck_assert_str_eq(it->msg.prefix, "last");
	ck_assert_uint_eq(it->msg.content_len, 0);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert(!rp_asm_busy(&asm_));
}

END_TEST

START_TEST(test_origin)
{
	RpBuf		b;
	RpItem	   *it;

	ct_frame(&b);
	ct_rel(&b, REL, "public", "t", 2);
	rp_enc_begin(&b, 11, 0x100, 0);
	rp_enc_origin(&b, 0x9999, "node_a");
	ct_insert(&b, REL, 0, 2, 1, "x");
	rp_enc_commit(&b, 0x100, 0x128, 0);
	/* the next transaction has no origin */
	rp_enc_begin(&b, 12, 0x200, 0);
	ct_insert(&b, REL, 0, 2, 2, "y");
	rp_enc_commit(&b, 0x200, 0x228, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);

	it = pop_txn();
	ck_assert_ptr_nonnull(it->txn->origin);
	ck_assert_str_eq(it->txn->origin, "node_a");
	/* the origin is a property, not a stored record */
	ck_assert_str_eq(stored_tags(it->txn), "RI");
	ck_assert_uint_eq(it->txn->nchanges, 1);
	rp_item_free(it);
	it = pop_txn();
	ck_assert_ptr_null(it->txn->origin);
	rp_item_free(it);
}

END_TEST

/* ---- streamed transactions ----------------------------------------------------- */

START_TEST(test_stream_interleaved)
{
	RpBuf		b;
	RpItem	   *it;
	CtSink		f;

	describe(REL, 2);
	/* block 1 of xid 100 */
	ct_frame(&b);
	rp_enc_stream_start(&b, 100, true);
	ct_insert(&b, REL, 100, 2, 1, "a");
	ct_insert(&b, REL, 100, 2, 2, "b");
	rp_enc_stream_stop(&b);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	ck_assert(rp_asm_busy(&asm_));
	/* block 1 of xid 200 */
	ct_frame(&b);
	rp_enc_stream_start(&b, 200, true);
	ct_insert(&b, REL, 200, 2, 20, "c");
	rp_enc_stream_stop(&b);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x200), 0);
	/* a normal transaction in between commits first */
	ct_txn_frame(&b, false, REL, 2, 300, 0x300, 1, 30, "n");
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x300), 0);
	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 300);
	ck_assert(!it->txn->streamed);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	/* block 2 of xid 100, then 200 commits, then 100 */
	ct_frame(&b);
	rp_enc_stream_start(&b, 100, false);
	ct_insert(&b, REL, 100, 2, 3, "d");
	rp_enc_stream_stop(&b);
	rp_enc_stream_start(&b, 200, false);
	ct_insert(&b, REL, 200, 2, 21, "e");
	rp_enc_stream_stop(&b);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x400), 0);
	ct_frame(&b);
	rp_enc_stream_commit(&b, 200, 0x500, 0x528, 1700000000000200LL);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x500), 0);
	ck_assert(rp_asm_busy(&asm_));	/* 100 is still open, 200 ready */

	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 200);
	ck_assert(it->txn->streamed);
	ck_assert_uint_eq(it->txn->commit_lsn, 0x500);
	ck_assert_uint_eq(it->txn->end_lsn, 0x528);
	ck_assert_int_eq(it->txn->commit_time, 1700000000000200LL);
	ck_assert_uint_eq(it->txn->nchanges, 2);
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 2);
	ck_assert_int_eq(f.changes[0].id, 20);
	ck_assert_int_eq(f.changes[1].id, 21);
	rp_item_free(it);

	ct_frame(&b);
	rp_enc_stream_commit(&b, 100, 0x600, 0x628, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x600), 0);
	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 100);
	ck_assert_uint_eq(it->txn->nchanges, 3);
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 3);
	ck_assert_int_eq(f.changes[0].id, 1);
	ck_assert_int_eq(f.changes[1].id, 2);
	ck_assert_int_eq(f.changes[2].id, 3);
	rp_item_free(it);
	ck_assert(!rp_asm_busy(&asm_));
}

END_TEST

/* Stream the changes (xid, id) of toplevel 100 in one block. */
static void
stream_block(bool first, int n, const uint32_t *xids, const int32_t *ids)
{
	RpBuf		b;

	ct_frame(&b);
	rp_enc_stream_start(&b, 100, first);
	for (int i = 0; i < n; i++)
		ct_insert(&b, REL, xids[i], 2, ids[i], "s");
	rp_enc_stream_stop(&b);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
}

static void
stream_abort(uint32_t xid, uint32_t sub)
{
	RpBuf		b;

	ct_frame(&b);
	rp_enc_stream_abort(&b, xid, sub);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
}

static RpItem *
stream_commit(uint32_t xid, uint64_t lsn)
{
	RpBuf		b;

	ct_frame(&b);
	rp_enc_stream_commit(&b, xid, lsn, lsn + 0x28, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, lsn), 0);
	return pop_txn();
}

static void
expect_ids(RpItem *it, int n, const int32_t *ids)
{
	CtSink		f;

	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, n);
	ck_assert_uint_eq(it->txn->nchanges, (uint64_t) n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(f.changes[i].id == ids[i], "change %d: id %d, expected %d", i,
					  f.changes[i].id, ids[i]);
}

/*
 * BEGIN; insert 1; SAVEPOINT a (101); insert 2; SAVEPOINT b (102);
 * insert 3; ROLLBACK TO a; insert 4; SAVEPOINT c (103); insert 5;
 * RELEASE c; SAVEPOINT d (104); insert 6; ROLLBACK TO d; insert 7; COMMIT
 */
static void
subxact_scenario(void)
{
	const uint32_t x1[] = {100, 101, 102};
	const int32_t i1[] = {1, 2, 3};
	const uint32_t x2[] = {100, 103, 104};
	const int32_t i2[] = {4, 5, 6};
	const uint32_t x3[] = {100};
	const int32_t i3[] = {7};
	const int32_t want[] = {1, 4, 5, 7};
	RpItem	   *it;

	describe(REL, 2);
	stream_block(true, 3, x1, i1);
	/* a child's abort can come before its parent's */
	stream_abort(100, 102);
	stream_abort(100, 101);
	/* its children are gone with it: aborting them again changes nothing */
	stream_abort(100, 102);
	stream_block(false, 3, x2, i2);
	stream_abort(100, 104);
	/* a subtransaction never seen: nothing to drop */
	stream_abort(100, 555);
	stream_block(false, 1, x3, i3);
	it = stream_commit(100, 0x900);
	expect_ids(it, 4, want);
	rp_item_free(it);
	ck_assert(!rp_asm_busy(&asm_));
}

START_TEST(test_stream_subxact_abort)
{
	subxact_scenario();
}

END_TEST

START_TEST(test_stream_subxact_abort_spilled)
{
	/* the same with every store on disk: truncation inside the spill file */
	rp_asm_free(&asm_);
	rp_free(spill.dir);
	ck_assert_int_eq(rp_spill_init(&spill, ct_path("spill2"), 0, 1 << 30), 0);
	rp_asm_init(&asm_, &spill, 0);
	subxact_scenario();
	ck_assert_uint_ge(spill.spills, 1);
	ck_assert_uint_eq(spill.disk_in_use, 0);
	ck_assert_int_eq(ct_count_entries(ct_path("spill2"), "replicant-spill-"), 0);
}

END_TEST

START_TEST(test_stream_subxact_first_change_aborted)
{
	/*
	 * The very first change of the stream belongs to a subtransaction that
	 * aborts: the relation description stored with it goes too, and the store
	 * must describe the relation again before the next change.
	 */
	const uint32_t x1[] = {101, 101};
	const int32_t i1[] = {1, 2};
	const uint32_t x2[] = {100};
	const int32_t i2[] = {3};
	const int32_t want[] = {3};
	RpItem	   *it;

	describe(REL, 2);
	stream_block(true, 2, x1, i1);
	stream_abort(100, 101);
	stream_block(false, 1, x2, i2);
	it = stream_commit(100, 0x900);
	ck_assert_str_eq(stored_tags(it->txn), "RI");
	expect_ids(it, 1, want);
	rp_item_free(it);
}

END_TEST

START_TEST(test_stream_subxact_abort_keeps_released_sibling)
{
	/*
	 * SAVEPOINT a (101); 2; 3; RELEASE a; 4; SAVEPOINT b (102); 5; ROLLBACK
	 * TO b -- then a later block: SAVEPOINT c (103); 6; ROLLBACK TO c. Only
	 * 102's and 103's changes go: the released sibling before them and the
	 * toplevel's stay.
	 */
	const uint32_t x1[] = {100, 101, 101, 100, 102};
	const int32_t i1[] = {1, 2, 3, 4, 5};
	const uint32_t x2[] = {103};
	const int32_t i2[] = {6};
	const uint32_t x3[] = {100};
	const int32_t i3[] = {7};
	const int32_t want[] = {1, 2, 3, 4, 7};
	RpItem	   *it;

	describe(REL, 2);
	stream_block(true, 5, x1, i1);
	stream_abort(100, 102);
	stream_block(false, 1, x2, i2);
	stream_abort(100, 103);
	stream_block(false, 1, x3, i3);
	it = stream_commit(100, 0x900);
	expect_ids(it, 5, want);
	rp_item_free(it);
}

END_TEST

START_TEST(test_stream_toplevel_abort)
{
	RpBuf		b;
	const uint32_t x1[] = {100, 101};
	const int32_t i1[] = {1, 2};
	RpItem	   *it;

	describe(REL, 2);
	stream_block(true, 2, x1, i1);
	ck_assert(rp_asm_busy(&asm_));
	stream_abort(100, 100);
	ck_assert_uint_eq(asm_.aborted, 1);
	ck_assert(!rp_asm_busy(&asm_));
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	/* subxid 0 means the toplevel too */
	stream_block(true, 2, x1, i1);
	stream_abort(100, 0);
	ck_assert_uint_eq(asm_.aborted, 2);
	ck_assert(!rp_asm_busy(&asm_));

	/* an aborted stream cannot be committed or resumed */
	ct_frame(&b);
	rp_enc_stream_commit(&b, 100, 0x300, 0x328, 0);
	expect_halt(&b, RP_HALT_PROTOCOL, "unknown xid 100");

	/* the same xid may stream anew (wraparound); a fresh start works */
	reinit(0);
	describe(REL, 2);
	stream_block(true, 2, x1, i1);
	stream_abort(100, 100);
	stream_block(true, 1, x1, i1);
	it = stream_commit(100, 0x400);
	ck_assert_uint_eq(it->txn->nchanges, 1);
	rp_item_free(it);
}

END_TEST

START_TEST(test_stream_start_without_first)
{
	RpBuf		b;

	describe(REL, 2);
	ct_frame(&b);
	rp_enc_stream_start(&b, 123, false);
	expect_halt(&b, RP_HALT_PROTOCOL, "123");
	ck_assert_msg(strstr(rp_error(), "first segment") != NULL, "%s", rp_error());

	/* and a second first segment for an open stream */
	reinit(0);
	describe(REL, 2);
	ct_frame(&b);
	rp_enc_stream_start(&b, 124, true);
	rp_enc_stream_stop(&b);
	rp_enc_stream_start(&b, 124, true);
	expect_halt(&b, RP_HALT_PROTOCOL, "twice");
}

END_TEST

START_TEST(test_stream_other_records)
{
	/* truncates and transactional messages in a stream, some in a subxact */
	RpBuf		b;
	RpItem	   *it;
	uint32_t	rels[1] = {REL};
	CtSink		f;

	describe(REL, 2);
	ct_frame(&b);
	rp_enc_stream_start(&b, 100, true);
	rp_enc_message(&b, true, 100, 0x50, "p", "top", 3);
	ct_insert(&b, REL, 101, 2, 1, "sub");
	rp_enc_truncate(&b, 0, 101, 1, rels);
	rp_enc_message(&b, true, 101, 0x60, "p", "sub", 3);
	rp_enc_stream_stop(&b);
	rp_enc_stream_abort(&b, 100, 101);
	rp_enc_stream_start(&b, 100, false);
	rp_enc_truncate(&b, RP_TRUNCATE_RESTART_SEQS, 100, 1, rels);
	rp_enc_stream_stop(&b);
	rp_enc_stream_commit(&b, 100, 0x700, 0x728, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x700), 0);
	it = pop_txn();
	ck_assert_uint_eq(it->txn->nchanges, 2);
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 2);
	ck_assert_int_eq(f.changes[0].tag, RP_TAG_MESSAGE);
	ck_assert_int_eq(f.changes[1].tag, RP_TAG_TRUNCATE);
	rp_item_free(it);
}

END_TEST

/* ---- relation descriptions --------------------------------------------------- */

START_TEST(test_relation_redescribed_mid_txn)
{
	RpBuf		b;
	RpItem	   *it;
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RpCursor	c;
	RpRecord	rec;
	int			n = 0;
	char	   *s;

	ct_frame(&b);
	ct_rel(&b, REL, "public", "t", 2);
	rp_enc_begin(&b, 42, 0x100, 0);
	ct_insert(&b, REL, 0, 2, 1, "before");
	ct_insert(&b, REL, 0, 2, 2, "before");
	/* ALTER TABLE t ADD COLUMN c3 bigint, in the same transaction */
	ct_rel(&b, REL, "public", "t", 3);
	ct_insert(&b, REL, 0, 3, 3, "after");
	/* described again, identical: stored again, but no schema change */
	ct_rel(&b, REL, "public", "t", 3);
	ct_insert(&b, REL, 0, 3, 4, NULL);
	rp_enc_commit(&b, 0x100, 0x128, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	it = pop_txn();
	ck_assert_str_eq(stored_tags(it->txn), "RIIRIRI");

	/* read it back with a cursor: each row decodes with its own version */
	ct_sink_init(&f);
	f.s.handle_schema_change = ct_sink_schema;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_cursor_open(&c, &dl, it->txn), 0);
	while (rp_cursor_next(&c, &rec) > 0)
	{
		const RpTuple *t = &rec.u.change.new_tuple;

		ck_assert_int_eq(rec.tag, RP_TAG_INSERT);
		ck_assert_uint_eq(rec.u.change.relid, REL);
		ck_assert_int_eq(ct_int4(t, 0), n + 1);
		if (n < 2)
		{
			ck_assert_int_eq(rec.u.change.rel->natts, 2);
			ck_assert_int_eq(t->natts, 2);
			s = ct_string(t, 1);
			ck_assert_str_eq(s, "before");
			free(s);
		}
		else
		{
			ck_assert_int_eq(rec.u.change.rel->natts, 3);
			ck_assert_str_eq(rec.u.change.rel->cols[2].name, "c3");
			ck_assert_int_eq(t->natts, 3);
			ck_assert_int_eq(ct_int8(t, 2), (n + 1) * 10);
			if (n == 2)
			{
				s = ct_string(t, 1);
				ck_assert_str_eq(s, "after");
				free(s);
			}
			else
				ck_assert_int_eq(t->datums[1].kind, RP_DATUM_NULL);
		}
		n++;
	}
	rp_cursor_close(&c);
	ck_assert_int_eq(n, 4);
	/* NEW, then ADDITIVE (c3); the identical one is not reported */
	ck_assert_int_eq(f.nschema, 2);
	ck_assert_int_eq(f.schema_kinds[0], RP_SCHEMA_NEW);
	ck_assert_int_eq(f.schema_kinds[1], RP_SCHEMA_ADDITIVE);
	ck_assert_str_eq(f.schema_cols[1], "c3");
	rp_deliver_free(&dl);
	rp_item_free(it);
}

END_TEST

START_TEST(test_relation_described_once_per_txn)
{
	RpBuf		b;
	RpItem	   *it;

	/* described once before both transactions: each store gets its own copy */
	describe(REL, 2);
	describe(REL2, 2);
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	ct_insert(&b, REL, 0, 2, 1, "a");
	ct_insert(&b, REL2, 0, 2, 1, "a");
	ct_insert(&b, REL, 0, 2, 2, "a");
	ct_insert(&b, REL2, 0, 2, 2, "a");
	rp_enc_commit(&b, 0x100, 0x128, 0);
	rp_enc_begin(&b, 2, 0x200, 0);
	ct_insert(&b, REL2, 0, 2, 3, "a");
	rp_enc_commit(&b, 0x200, 0x228, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	it = pop_txn();
	ck_assert_str_eq(stored_tags(it->txn), "RIRIII");
	rp_item_free(it);
	it = pop_txn();
	ck_assert_str_eq(stored_tags(it->txn), "RI");
	rp_item_free(it);
}

END_TEST

START_TEST(test_many_relations)
{
	/* more relations than the raw table's first size: it grows */
	RpBuf		b;
	RpItem	   *it;
	CtSink		f;

	for (uint32_t r = 0; r < 300; r++)
		describe(70000 + r * 64, (int) (2 + r % 3));
	ck_assert_uint_eq(asm_.nraw, 300);
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	for (uint32_t r = 0; r < 300; r++)
		ct_insert(&b, 70000 + r * 64, 0, (int) (2 + r % 3), (int32_t) r, "x");
	rp_enc_commit(&b, 0x100, 0x128, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	it = pop_txn();
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 300);
	for (int r = 0; r < 300; r++)
	{
		ck_assert_uint_eq(f.changes[r].relid, 70000 + (uint32_t) r * 64);
		ck_assert_int_eq(f.changes[r].natts, 2 + r % 3);
		ck_assert_int_eq(f.changes[r].id, r);
	}
	rp_item_free(it);
}

END_TEST

/* ---- reset -------------------------------------------------------------------- */

START_TEST(test_reset_drops_open)
{
	RpBuf		b;
	RpItem	   *it;
	const uint32_t x1[] = {100};
	const int32_t i1[] = {1};

	/* a ready transaction, an open one, an open stream (spilled) */
	rp_asm_free(&asm_);
	rp_free(spill.dir);
	ck_assert_int_eq(rp_spill_init(&spill, ct_path("spill3"), 64, 1 << 30), 0);
	rp_asm_init(&asm_, &spill, 0);
	describe(REL, 2);
	stream_block(true, 1, x1, i1);
	ct_txn_frame(&b, false, REL, 2, 5, 0x100, 1, 1, "ready");
	rp_enc_begin(&b, 6, 0x200, 0);
	ct_insert(&b, REL, 0, 2, 2, "open");
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	ck_assert_int_ge(ct_count_entries(ct_path("spill3"), "replicant-spill-"), 1);

	rp_asm_reset(&asm_);
	ck_assert_ptr_null(asm_.cur);
	ck_assert_ptr_null(asm_.streams);
	ck_assert_ptr_null(asm_.block);
	/* only the completed transaction's store is left on disk */
	ck_assert_int_eq(ct_count_entries(ct_path("spill3"), "replicant-spill-"), 1);

	/* completed items survive (they are whole) */
	it = pop_txn();
	ck_assert_uint_eq(it->txn->xid, 5);
	rp_item_free(it);
	ck_assert(!rp_asm_busy(&asm_));
	ck_assert_uint_eq(spill.mem_in_use, 0);
	ck_assert_uint_eq(spill.disk_in_use, 0);
	ck_assert_int_eq(ct_count_entries(ct_path("spill3"), "replicant-spill-"), 0);

	/* a new connection begins afresh: no "begin inside a transaction" */
	ct_frame(&b);
	rp_enc_begin(&b, 6, 0x200, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x200), 0);
	/* and the stream's continuation is not accepted without its start */
	rp_asm_reset(&asm_);
	ct_frame(&b);
	rp_enc_stream_start(&b, 100, false);
	expect_halt(&b, RP_HALT_PROTOCOL, "first segment");

	/* relations must be described again on the new connection */
	rp_asm_reset(&asm_);
	ct_frame(&b);
	rp_enc_begin(&b, 7, 0x300, 0);
	ct_insert(&b, REL, 0, 2, 3, "x");
	expect_halt(&b, RP_HALT_UNKNOWN_RELATION, NULL);
}

END_TEST

START_TEST(test_spilled_txn_roundtrip)
{
	/* a transaction larger than --max-memory spills and reads back whole */
	RpBuf		b;
	RpItem	   *it;
	CtSink		f;
	char		note[2000];

	memset(note, 'q', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	rp_asm_free(&asm_);
	rp_free(spill.dir);
	ck_assert_int_eq(rp_spill_init(&spill, ct_path("spill4"), 64 * 1024, 1 << 30), 0);
	rp_asm_init(&asm_, &spill, 0);
	describe(REL, 2);
	ct_frame(&b);
	rp_enc_begin(&b, 1, 0x100, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	for (int i = 0; i < 2000; i++)
	{
		ct_frame(&b);
		ct_insert(&b, REL, 0, 2, i, note);
		ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	}
	ct_frame(&b);
	rp_enc_commit(&b, 0x100, 0x128, 0);
	ck_assert_int_eq(ct_feed(&asm_, &b, 0x100), 0);
	ck_assert_uint_eq(spill.spills, 1);
	ck_assert_uint_le(spill.mem_in_use, 64 * 1024 + (1 << 20));
	it = pop_txn();
	ck_assert(rp_store_spilled(&it->txn->store));
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 2000);
	for (int i = 0; i < 2000; i++)
		ck_assert_int_eq(f.changes[i].id, i);
	rp_item_free(it);
	ck_assert_uint_eq(spill.disk_in_use, 0);
	ck_assert_uint_eq(spill.mem_in_use, 0);
	ck_assert_int_eq(ct_count_entries(ct_path("spill4"), "replicant-spill-"), 0);
}

END_TEST

/* ---- early delivery: stream blocks as chunks ------------------------------------- */

/* The next item, of this kind. */
static RpItem *
pop_kind(RpItemKind kind)
{
	RpItem	   *it = rp_asm_pop(&asm_);

	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, kind);
	return it;
}

/* The bytes of a store, for comparing a transaction with its chunks. */
static void
store_bytes(RpTxn *t, RpBuf *out)
{
	RpStoreIter it;
	const unsigned char *rec;
	size_t		len;
	int			rc;

	ck_assert_int_eq(rp_store_iter_start(&it, &t->store), 0);
	while ((rc = rp_store_iter_next(&it, &rec, &len)) > 0)
		rp_buf_put_bytes(out, rec, len);
	rp_store_iter_end(&it);
	ck_assert_int_eq(rc, 0);
}

START_TEST(test_chunks_then_commit)
{
	const uint32_t x1[] = {100, 100};
	const int32_t i1[] = {1, 2};
	const uint32_t x2[] = {100};
	const int32_t i2[] = {3};
	const int32_t want[] = {1, 2, 3};
	RpBuf		chunks,
				whole;
	RpItem	   *it;
	CtSink		f;

	asm_.early = true;
	describe(REL, 2);
	rp_buf_init(&chunks, 256);
	rp_buf_init(&whole, 256);

	stream_block(true, 2, x1, i1);
	it = pop_kind(RP_ITEM_CHUNK);
	ck_assert(it->first);
	ck_assert_uint_eq(it->txn->xid, 100);
	/* self-describing: the relation first, then the two rows */
	ck_assert_str_eq(stored_tags(it->txn), "RII");
	read_back(it->txn, &f);
	ck_assert_int_eq(f.nchanges, 2);
	store_bytes(it->txn, &chunks);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	/* an empty block sends nothing; the next block is not the first */
	stream_block(false, 0, x2, i2);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	stream_block(false, 1, x2, i2);
	it = pop_kind(RP_ITEM_CHUNK);
	ck_assert(!it->first);
	ck_assert_str_eq(stored_tags(it->txn), "I");
	store_bytes(it->txn, &chunks);
	rp_item_free(it);

	/*
	 * the commit: the whole transaction, whose store begins with the chunks'
	 * bytes
	 */
	it = stream_commit(100, 0x900);
	expect_ids(it, 3, want);
	store_bytes(it->txn, &whole);
	ck_assert_uint_eq(whole.len, chunks.len);
	ck_assert(memcmp(whole.data, chunks.data, chunks.len) == 0);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	rp_buf_free(&chunks);
	rp_buf_free(&whole);
}

END_TEST

START_TEST(test_chunks_void)
{
	const uint32_t x1[] = {100, 101};
	const int32_t i1[] = {1, 2};
	const uint32_t x2[] = {100};
	const int32_t i2[] = {3};
	const int32_t want[] = {1, 3};
	RpItem	   *it;

	asm_.early = true;
	describe(REL, 2);

	/*
	 * a subtransaction that went out in a chunk aborts: the chunks are void,
	 * no more come
	 */
	stream_block(true, 2, x1, i1);
	rp_item_free(pop_kind(RP_ITEM_CHUNK));
	stream_abort(100, 101);
	it = pop_kind(RP_ITEM_STREAM_END);
	ck_assert_uint_eq(it->xid, 100);
	rp_item_free(it);
	stream_block(false, 1, x2, i2);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	it = stream_commit(100, 0x900);
	expect_ids(it, 2, want);
	rp_item_free(it);

	/* the toplevel aborts */
	stream_block(true, 1, x2, i2);
	rp_item_free(pop_kind(RP_ITEM_CHUNK));
	stream_abort(100, 100);
	it = pop_kind(RP_ITEM_STREAM_END);
	ck_assert_uint_eq(it->xid, 100);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));

	/* a reconnect cuts it */
	stream_block(true, 1, x2, i2);
	rp_item_free(pop_kind(RP_ITEM_CHUNK));
	rp_asm_reset(&asm_);
	rp_item_free(pop_kind(RP_ITEM_STREAM_END));
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert(!rp_asm_busy(&asm_));

	/* dedup drops it at its commit */
	reinit(0x1000);
	asm_.early = true;
	describe(REL, 2);
	stream_block(true, 1, x2, i2);
	rp_item_free(pop_kind(RP_ITEM_CHUNK));
	{
		RpBuf		b;

		ct_frame(&b);
		rp_enc_stream_commit(&b, 100, 0x900, 0x928, 0);
		ck_assert_int_eq(ct_feed(&asm_, &b, 0x900), 0);
	}
	it = pop_kind(RP_ITEM_STREAM_END);
	ck_assert_uint_eq(it->xid, 100);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	ck_assert_uint_eq(asm_.skipped, 1);
}

END_TEST

START_TEST(test_chunks_off_by_default)
{
	const uint32_t x1[] = {100};
	const int32_t i1[] = {1};
	RpItem	   *it;

	describe(REL, 2);
	stream_block(true, 1, x1, i1);
	stream_abort(100, 100);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
	stream_block(true, 1, x1, i1);
	it = stream_commit(100, 0x900);
	rp_item_free(it);
	ck_assert_ptr_null(rp_asm_pop(&asm_));
}

END_TEST

Suite	   *
ct_suite_asm(void)
{
	Suite	   *s = suite_create("asm");
	TCase	   *tc;

	tc = tcase_create("transactions");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_begin_changes_commit);
	tcase_add_test(tc, test_one_frame_many_txns);
	tcase_add_test(tc, test_empty_txn);
	tcase_add_test(tc, test_truncate_and_txn_message);
	tcase_add_test(tc, test_dedup_watermark);
	tcase_add_test(tc, test_nontransactional_message_order);
	tcase_add_test(tc, test_origin);
	suite_add_tcase(s, tc);

	tc = tcase_create("halts");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_change_before_begin);
	tcase_add_test(tc, test_begin_inside_begin);
	tcase_add_test(tc, test_commit_without_begin);
	tcase_add_test(tc, test_state_halts);
	tcase_add_test(tc, test_unknown_relation);
	tcase_add_test(tc, test_malformed_frame);
	tcase_add_test(tc, test_stream_start_without_first);
	suite_add_tcase(s, tc);

	tc = tcase_create("streams");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stream_interleaved);
	tcase_add_test(tc, test_stream_subxact_abort);
	tcase_add_test(tc, test_stream_subxact_abort_spilled);
	tcase_add_test(tc, test_stream_subxact_first_change_aborted);
	tcase_add_test(tc, test_stream_subxact_abort_keeps_released_sibling);
	tcase_add_test(tc, test_stream_toplevel_abort);
	tcase_add_test(tc, test_stream_other_records);
	tcase_add_test(tc, test_chunks_then_commit);
	tcase_add_test(tc, test_chunks_void);
	tcase_add_test(tc, test_chunks_off_by_default);
	suite_add_tcase(s, tc);

	tc = tcase_create("relations");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_relation_redescribed_mid_txn);
	tcase_add_test(tc, test_relation_described_once_per_txn);
	tcase_add_test(tc, test_many_relations);
	suite_add_tcase(s, tc);

	tc = tcase_create("reset_spill");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reset_drops_open);
	tcase_add_test(tc, test_spilled_txn_roundtrip);
	suite_add_tcase(s, tc);
	return s;
}
