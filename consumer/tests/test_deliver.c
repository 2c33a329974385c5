/*
 * test_deliver.c
 *    Delivery (consumer/rp_deliver.c): schema diff classes and the
 *    destructive-change halt (G3), batching by count, bytes and time, a
 *    message ending a batch, checkpoint advance only after the sink returns
 *    (G1/G2), the relation view persisted across restarts, and idle
 *    advance only when nothing is batched, through the library's file or
 *    the sink's own record (G2).
 */
#include "ct_kit.h"

#define REL  16384u
#define REL2 16400u

static RpSpill sp;
static RpAsm as;

static void
setup(void)
{
	ct_setup_dir();
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

/* ---- building transactions ------------------------------------------------------ */

/* A variant of the test relation: column 2 as given (or absent). */
typedef struct RelSpec
{
	const char *schema;
	const char *name;
	char		identity;
	bool		has_note;
	const char *note_name;
	uint32_t	note_oid;
	const char *note_type;
	int32_t		note_typmod;
	uint8_t		note_enc;
	uint8_t		note_flags;
	uint8_t		id_flags;
	bool		has_c3;
	uint8_t		kind;			/* RP_REL_KIND_*: NONE writes no kind fields */
	uint32_t	partition_set;
} RelSpec;

static RelSpec
base_spec(void)
{
	RelSpec		s = {"public", "t", RP_IDENTITY_DEFAULT, true, "note", 25, "text", -1,
		RP_ENC_STRING, 0, RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL, false,
	RP_REL_KIND_NONE, 0};

	return s;
}

static void
enc_spec(RpBuf *b, uint32_t relid, const RelSpec *s)
{
	int			n = 1 + (s->has_note ? 1 : 0) + (s->has_c3 ? 1 : 0);
	size_t		at = rp_enc_relation_start(b, relid, s->schema, s->name, s->identity,
										   (uint16_t) n);

	rp_enc_relation_column(b, 1, "id", 23, "integer", -1, RP_ENC_INT4, s->id_flags);
	if (s->has_note)
		rp_enc_relation_column(b, 2, s->note_name, s->note_oid, s->note_type, s->note_typmod,
							   s->note_enc, s->note_flags);
	if (s->has_c3)
		rp_enc_relation_column(b, 3, "c3", 20, "bigint", -1, RP_ENC_INT8, 0);
	if (s->kind != RP_REL_KIND_NONE)
		rp_enc_relation_kind(b, s->kind, s->partition_set);
	rp_buf_end_record(b, at);
}

/* Describe relid as spec, on the assembler's connection. */
static void
describe_spec(uint32_t relid, const RelSpec *s)
{
	RpBuf		b;

	ct_frame(&b);
	enc_spec(&b, relid, s);
	ck_assert_int_eq(ct_feed(&as, &b, 0x10), 0);
}

/* A row matching spec (note as int8 when its encoding says so). */
static void
row_spec(RpBuf *b, const RelSpec *s, int32_t id)
{
	int			n = 1 + (s->has_note ? 1 : 0) + (s->has_c3 ? 1 : 0);

	rp_enc_tuple_start(b, (uint16_t) n);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) id);
	if (s->has_note)
	{
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		if (s->note_enc == RP_ENC_INT8)
			rp_buf_put_u64(b, 7);
		else
			rp_buf_put_cstr(b, "note");
	}
	if (s->has_c3)
	{
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		rp_buf_put_u64(b, 3);
	}
}

/* A committed transaction of n inserts into relid (rows as spec). */
static RpItem *
txn_spec(uint32_t relid, const RelSpec *s, uint32_t xid, uint64_t lsn, int n)
{
	RpBuf		b;
	RpItem	   *it;

	ct_frame(&b);
	rp_enc_begin(&b, xid, lsn, 0);
	for (int i = 0; i < n; i++)
	{
		size_t		at = rp_enc_change_start(&b, RP_TAG_INSERT, relid, 0, 0);

		row_spec(&b, s, i);
		rp_buf_end_record(&b, at);
	}
	rp_enc_commit(&b, lsn, lsn + 0x28, 0);
	ck_assert_int_eq(ct_feed(&as, &b, lsn), 0);
	it = rp_asm_pop(&as);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_TXN);
	return it;
}

/* A plain transaction of n rows in the base relation REL (described once). */
static RpItem *
txn(uint32_t xid, uint64_t lsn, int n)
{
	RelSpec		s = base_spec();

	if (as.nraw == 0)
		describe_spec(REL, &s);
	return txn_spec(REL, &s, xid, lsn, n);
}

static RpItem *
message(uint64_t lsn, const char *prefix)
{
	RpBuf		b;
	RpItem	   *it;

	ct_frame(&b);
	rp_enc_message(&b, false, 0, lsn, prefix, "payload", 7);
	ck_assert_int_eq(ct_feed(&as, &b, lsn), 0);
	it = rp_asm_pop(&as);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(it->kind, RP_ITEM_MESSAGE);
	return it;
}

static void
calls_are(const CtSink *f, const char *want)
{
	char		got[CT_MAX_SEEN + 1];

	memcpy(got, f->calls, (size_t) f->ncalls);
	got[f->ncalls] = '\0';
	ck_assert_str_eq(got, want);
}

/* ---- schema diff ------------------------------------------------------------------- */

/* Decode a relation built from spec into a standalone copy. */
static RpRelation *
rel_of(const RelSpec *s)
{
	RpBuf		b;
	RpDecoder	dec;
	RpRecord	rec;
	RpRelation *copy;

	ct_frame(&b);
	enc_spec(&b, REL, s);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	copy = rp_relation_copy(rec.u.relation.rel);
	rp_decoder_free(&dec);
	rp_buf_free(&b);
	return copy;
}

static void
expect_diff(const RelSpec *before, const RelSpec *after, RpSchemaChange want,
			const char *what_has)
{
	RpRelation *a = rel_of(after);
	RpRelation *b = before ? rel_of(before) : NULL;
	char		what[256];
	RpSchemaChange got = rp_schema_diff(b, a, what, sizeof(what));

	ck_assert_msg(got == want, "class %d, expected %d (%s)", got, want, what);
	if (what_has)
		ck_assert_msg(strstr(what, what_has) != NULL, "\"%s\" lacks \"%s\"", what, what_has);
	rp_relation_free(a);
	rp_relation_free(b);
}

START_TEST(test_diff_classes)
{
	RelSpec		base = base_spec();
	RelSpec		s;

	expect_diff(NULL, &base, RP_SCHEMA_NEW, NULL);
	expect_diff(&base, &base, RP_SCHEMA_SAME, NULL);

	/* things that do not matter: NOT NULL, generated, type name spelling */
	s = base;
	s.note_flags = RP_COL_NOT_NULL | RP_COL_GENERATED;
	expect_diff(&base, &s, RP_SCHEMA_SAME, NULL);

	s = base;
	s.has_c3 = true;
	expect_diff(&base, &s, RP_SCHEMA_ADDITIVE, "\"c3\"");
	ck_assert(true);
	{
		/* the "what" of an additive change says added */
		RpRelation *a = rel_of(&s),
				   *b = rel_of(&base);
		char		what[256];

		ck_assert_int_eq(rp_schema_diff(b, a, what, sizeof(what)), RP_SCHEMA_ADDITIVE);
		ck_assert_str_eq(what, "column \"c3\" added");
		rp_relation_free(a);
		rp_relation_free(b);
	}

	/* dropped column */
	s = base;
	s.has_note = false;
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "column \"note\" dropped");
	/* dropped and added in one go (attnum 2 gone, 3 new) */
	s.has_c3 = true;
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"note\"");

	/* type change */
	s = base;
	s.note_oid = 20;
	s.note_type = "bigint";
	s.note_enc = RP_ENC_INT8;
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"note\"");
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "bigint");

	/* typmod change: varchar(10) -> varchar(20) */
	{
		RelSpec		v10 = base,
					v20 = base;

		v10.note_oid = v20.note_oid = 1043;
		v10.note_type = v20.note_type = "character varying";
		v10.note_typmod = 14;
		v20.note_typmod = 24;
		expect_diff(&v10, &v20, RP_SCHEMA_DESTRUCTIVE, "\"note\"");
		expect_diff(&v10, &v10, RP_SCHEMA_SAME, NULL);
	}

	/* key flag changes, either way, on either column */
	s = base;
	s.note_flags = RP_COL_PRIMARY_KEY;
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"note\"");
	s = base;
	s.id_flags = RP_COL_NOT_NULL;	/* primary key dropped */
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"id\"");

	/*
	 * replica identity (issue 46): what an old row carries, not the rows; a
	 * sink takes it (the mirror matches by the new key)
	 */
	s = base;
	s.id_flags = RP_COL_PRIMARY_KEY | RP_COL_NOT_NULL;	/* out of the identity */
	expect_diff(&base, &s, RP_SCHEMA_ADDITIVE, "replica identity columns changed");
	s = base;
	s.note_flags = RP_COL_IDENTITY; /* into the identity */
	expect_diff(&base, &s, RP_SCHEMA_ADDITIVE, "replica identity columns changed");
	s = base;
	s.identity = RP_IDENTITY_FULL;
	expect_diff(&base, &s, RP_SCHEMA_ADDITIVE, "replica identity changed (DEFAULT to FULL)");
	expect_diff(&s, &base, RP_SCHEMA_ADDITIVE, "replica identity changed (FULL to DEFAULT)");
	s.has_c3 = true;			/* and a column added: additive, naming it */
	expect_diff(&base, &s, RP_SCHEMA_ADDITIVE, "\"c3\"");
	s.note_name = "remark";		/* and a rename: destructive */
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "renamed");

	/* column rename: both names */
	s = base;
	s.note_name = "remark";
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"note\" renamed to \"remark\"");

	/* table and schema rename */
	s = base;
	s.name = "t2";
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"t2\"");
	s = base;
	s.schema = "archive";
	expect_diff(&base, &s, RP_SCHEMA_DESTRUCTIVE, "\"archive\"");
}

END_TEST

/*
 * The run's counters outlive a delivery: one started over (a lost
 * destination) goes on counting where the first stopped, and the
 * checkpoint gauge follows the durable checkpoint (metrics never go
 * backwards).
 */
START_TEST(test_counters_outlive_delivery)
{
	CtSink		f;
	RpDelivery	dl;
	RpDlCounters run;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);

	memset(&run, 0, sizeof(run));
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	rp_deliver_count_into(&dl, &run);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(rp_deliver_item(&dl, txn((uint32_t) (10 + i), 0x1000 * (uint64_t) (i + 1), 2), 0), 0);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.txns), 3);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.changes), 6);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.checkpoint_lsn), dl.ck.end_lsn);
	ck = dl.ck;
	rp_deliver_free(&dl);

	/* started over from the durable checkpoint */
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_uint_eq(dl.count->txns, 0);	/* its own, unshared, start at 0 */
	rp_deliver_count_into(&dl, &run);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.txns), 3);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(20, 0x5000, 1), 0), 0);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.txns), 4);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.changes), 7);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.batches), 4);
	ck_assert_uint_eq(RP_COUNT_LOAD(run.checkpoint_lsn), dl.ck.end_lsn);
	rp_deliver_free(&dl);
}

END_TEST

/* ---- batching ---------------------------------------------------------------------- */

START_TEST(test_batch_max_txns)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(3, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(&f);
	f.s.handle_batch = ct_sink_batch;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	for (int i = 0; i < 7; i++)
	{
		ck_assert_int_eq(rp_deliver_item(&dl, txn((uint32_t) (10 + i), 0x1000 * (uint64_t) (i + 1), i + 1), 0), 0);
		ck_assert_int_eq(rp_deliver_pending(&dl), (i + 1) % 3 != 0);
	}
	calls_are(&f, "BB");
	ck_assert_int_eq(f.batch_sizes[0], 3);
	ck_assert_int_eq(f.batch_sizes[1], 3);
	/* the last batch's checkpoint is its last transaction's */
	ck_assert_uint_eq(f.last_ck.commit_lsn, 0x6000);
	ck_assert_uint_eq(f.last_ck.end_lsn, 0x6028);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x6000);
	/* not yet due */
	ck_assert_int_eq(rp_deliver_flush(&dl, false, 0), 0);
	ck_assert(rp_deliver_pending(&dl));
	/* forced: a batch of one goes through handle_transaction */
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	ck_assert(!rp_deliver_pending(&dl));
	calls_are(&f, "BBT");
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x7000);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x7028);
	ck_assert_uint_eq(dl.count->txns, 7);
	ck_assert_uint_eq(dl.count->batches, 3);
	ck_assert_uint_eq(dl.count->changes, 1 + 2 + 3 + 4 + 5 + 6 + 7);
	ck_assert_int_eq(f.nchanges, 28);
	/* in commit order */
	for (int i = 0; i < 7; i++)
		ck_assert_uint_eq(f.commit_lsns[i], 0x1000 * (uint64_t) (i + 1));
	/* an empty flush is a no-op */
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	calls_are(&f, "BBT");
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_batch_max_bytes)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpItem	   *it = txn(1, 0x100, 5);
	uint64_t	one = rp_store_length(&it->txn->store);
	RpBatchLimits l = ct_limits(100, 2 * one + 1, CT_NEVER_MS);

	ct_sink_init(&f);
	f.s.handle_batch = ct_sink_batch;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, it, 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 5), 0), 0);
	ck_assert_int_eq(f.ncalls, 0);
	ck_assert_uint_eq(dl.batch_bytes, 2 * one);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 5), 0), 0);
	calls_are(&f, "B");
	ck_assert_int_eq(f.batch_sizes[0], 3);
	ck_assert_uint_eq(dl.batch_bytes, 0);
	/* one transaction over the limit alone goes at once */
	ck_assert_int_eq(rp_deliver_item(&dl, txn(4, 0x400, 50), 0), 0);
	calls_are(&f, "BT");
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_batch_max_ms)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(100, CT_NEVER_BYTES, 100);

	ct_sink_init(&f);
	f.s.handle_batch = ct_sink_batch;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 1000), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1), 1050), 0);
	ck_assert_int_eq(rp_deliver_flush(&dl, false, 1099), 0);
	ck_assert_int_eq(f.ncalls, 0);
	/* the clock runs from the batch's first transaction */
	ck_assert_int_eq(rp_deliver_flush(&dl, false, 1100), 0);
	calls_are(&f, "B");
	ck_assert_int_eq(f.batch_sizes[0], 2);
	/* a new batch starts its own clock */
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 1), 1200), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(4, 0x400, 1), 1250), 0);
	ck_assert_int_eq(f.ncalls, 1);
	/* a transaction arriving after the deadline goes out with the batch */
	ck_assert_int_eq(rp_deliver_item(&dl, txn(5, 0x500, 1), 1300), 0);
	calls_are(&f, "BB");
	ck_assert_int_eq(f.batch_sizes[1], 3);
	ck_assert(!rp_deliver_pending(&dl));
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_message_flushes_batch)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(10, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(&f);
	f.s.handle_batch = ct_sink_batch;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, message(0x300, "audit"), 0), 0);
	/* the batch before the message, then the message alone */
	calls_are(&f, "BM");
	ck_assert_int_eq(f.batch_sizes[0], 2);
	ck_assert_int_eq(f.nmessages, 1);
	ck_assert_str_eq(f.last_prefix, "audit");
	ck_assert_uint_eq(f.last_ck.commit_lsn, 0x200);
	ck_assert_uint_eq(f.last_ck.end_lsn, 0x300);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x300);
	ck_assert_uint_eq(dl.count->messages, 1);
	ck_assert(!rp_deliver_pending(&dl));
	/* a message at an older position does not move the checkpoint back */
	ck_assert_int_eq(rp_deliver_item(&dl, message(0x250, "old"), 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x300);
	/* a failing message handler: -1, checkpoint unchanged */
	f.fail_message = true;
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x400, 1), 0), 0);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, message(0x500, "x"), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	/* the transaction before it was delivered first */
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x400);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x428);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_message_without_handler)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpCheckpoint back;
	RpBatchLimits l = ct_limits(10, CT_NEVER_BYTES, CT_NEVER_MS);
	const char *ckpt = ct_path("slot.checkpoint");

	ct_sink_init(&f);
	f.s.handle_message = NULL;

	/*
	 * neither a callback nor an explicit decline: refused at start, and on a
	 * message
	 */
	ck_assert_int_eq(rp_deliver_check_sink(&f.s, true), -1);
	ck_assert_msg(strstr(rp_error(), "no handle_message callback") != NULL, "%s", rp_error());
	ck_assert_int_eq(rp_error_halt(), RP_HALT_CONFIG);
	ck_assert_int_eq(rp_deliver_check_sink(&f.s, false), 0);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, message(0x300, "audit"), 0), -1);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 0);
	rp_deliver_free(&dl);
	rp_error_clear();

	/* declined explicitly: skipped by the sink, but its position is passed */
	f.s.declines_messages = true;
	ck_assert_int_eq(rp_deliver_check_sink(&f.s, true), 0);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, message(0x300, "audit"), 0), 0);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.end_lsn, 0x300);
	rp_deliver_free(&dl);
}

END_TEST

/* ---- checkpoints ----------------------------------------------------------------------- */

START_TEST(test_library_checkpoint_after_sink)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpCheckpoint back;
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	const char *ckpt = ct_path("slot.checkpoint");

	ct_sink_init(&f);
	f.ckpt_path = ckpt;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 0), 0);
	/* while the sink ran there was no checkpoint yet; after it, there is */
	ck_assert_int_eq(f.ckpt_seen_rc[0], 0);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x100);
	ck_assert_uint_eq(back.end_lsn, 0x128);
	ck_assert_uint_eq(back.system_id, ck.system_id);
	ck_assert_str_eq(back.slot, "unit_slot");

	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1), 0), 0);
	ck_assert_int_eq(f.ckpt_seen_rc[1], 1);
	ck_assert_uint_eq(f.ckpt_seen[1].commit_lsn, 0x100);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x200);

	/* the sink fails: -1, the file and the position stay, the batch waits */
	f.fail_on_txn = 3;
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 1), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SINK);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x200);
	ck_assert_uint_eq(back.end_lsn, 0x228);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x200);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x228);
	ck_assert(rp_deliver_pending(&dl));
	ck_assert_uint_eq(dl.count->txns, 2);
	/* a retry delivers it */
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x300);
	ck_assert_uint_eq(dl.count->txns, 3);
	ck_assert_int_eq(ct_count_entries(ct_dir, "slot.checkpoint"), 1);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_sink_owned_checkpoint_no_file)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	const char *ckpt = ct_path("slot.checkpoint");

	ct_sink_init(&f);
	f.s.owns_checkpoint = true;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 0), 0);
	ck_assert(!ct_exists(ckpt));
	ck_assert(f.have_ck);
	ck_assert_uint_eq(f.held.commit_lsn, 0x100);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x100);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_midbatch_failure_library_owned)
{
	/*
	 * Per-transaction delivery of a batch of three, library-owned: the second
	 * fails.  The position reported to the server (dl.ck) must not pass the
	 * checkpoint file (G2), and a retry delivers the rest.
	 */
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpCheckpoint back;
	RpBatchLimits l = ct_limits(3, CT_NEVER_BYTES, CT_NEVER_MS);
	const char *ckpt = ct_path("slot.checkpoint");

	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1), 0), 0);
	f.fail_on_txn = 2;
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 1), 0), -1);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 0);
	ck_assert_msg(dl.ck.end_lsn == 0, "acknowledgeable position %llX passed the checkpoint file",
				  (unsigned long long) dl.ck.end_lsn);
	ck_assert(rp_deliver_pending(&dl));
	f.fail_on_txn = 0;
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x300);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x328);
	ck_assert(!rp_deliver_pending(&dl));
	ck_assert_uint_eq(dl.count->txns, 3);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_midbatch_failure_sink_owned)
{
	/*
	 * The same with a sink that owns its checkpoint (effect-once): the first
	 * transaction is durable in the sink, so a retry must not hand it over
	 * again (G1).
	 */
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(3, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(&f);
	f.s.owns_checkpoint = true;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x200, 1), 0), 0);
	f.fail_on_txn = 2;
	ck_assert_int_eq(rp_deliver_item(&dl, txn(3, 0x300, 1), 0), -1);
	ck_assert_uint_eq(f.held.commit_lsn, 0x100);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x100);
	f.fail_on_txn = 0;
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	/* handed over: 1, 2 (failed), 2, 3 -- never 1 twice */
	ck_assert_int_eq(f.ntxns, 4);
	ck_assert_uint_eq(f.commit_lsns[0], 0x100);
	ck_assert_uint_eq(f.commit_lsns[1], 0x200);
	ck_assert_uint_eq(f.commit_lsns[2], 0x200);
	ck_assert_uint_eq(f.commit_lsns[3], 0x300);
	ck_assert_uint_eq(f.held.commit_lsn, 0x300);
	ck_assert_uint_eq(dl.count->txns, 3);
	ck_assert_uint_eq(dl.count->changes, 3);
	ck_assert(!rp_deliver_pending(&dl));
	rp_deliver_free(&dl);
}

END_TEST

/*
 * partitions=root: a root's rows change with its partitions, which no change
 * record says; a changed partition set (ATTACH or DETACH PARTITION), or a
 * table that starts or stops being published as a root, is destructive.  A
 * plain table's kind (version 3) is the same table as one without (1, 2).
 */
START_TEST(test_diff_partitions)
{
	RelSpec		plain = base_spec(),
				table = base_spec(),
				root = base_spec(),
				s;

	table.kind = RP_REL_KIND_TABLE;
	root.kind = RP_REL_KIND_PARTITION_ROOT;
	root.partition_set = 0x0badf00d;

	expect_diff(&plain, &table, RP_SCHEMA_SAME, NULL);
	expect_diff(&table, &plain, RP_SCHEMA_SAME, NULL);
	expect_diff(&root, &root, RP_SCHEMA_SAME, NULL);
	expect_diff(NULL, &root, RP_SCHEMA_NEW, NULL);

	s = root;
	s.partition_set = 0x0badf00e;
	expect_diff(&root, &s, RP_SCHEMA_DESTRUCTIVE,
				"its partitions changed (ATTACH or DETACH PARTITION)");
	expect_diff(&s, &root, RP_SCHEMA_DESTRUCTIVE, "its partitions changed");
	/* a set that changes and a column added: the partitions win */
	s.has_c3 = true;
	expect_diff(&root, &s, RP_SCHEMA_DESTRUCTIVE, "its partitions changed");
	/* the same set with a column added is additive, as for any table */
	s = root;
	s.has_c3 = true;
	expect_diff(&root, &s, RP_SCHEMA_ADDITIVE, "\"c3\"");

	expect_diff(&table, &root, RP_SCHEMA_DESTRUCTIVE, "now published as the root");
	expect_diff(&plain, &root, RP_SCHEMA_DESTRUCTIVE, "now published as the root");
	expect_diff(&root, &table, RP_SCHEMA_DESTRUCTIVE, "no longer published as the root");
	expect_diff(&root, &plain, RP_SCHEMA_DESTRUCTIVE, "no longer published as the root");
}

END_TEST

/* ---- schema changes during delivery ---------------------------------------------------- */

/* An ATTACH PARTITION between two transactions of a root halts before the second (G3). */
START_TEST(test_partition_set_change_halts)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpCheckpoint back;
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		v1 = base_spec(),
				v2 = base_spec();
	const char *ckpt = ct_path("slot.checkpoint");

	v1.kind = v2.kind = RP_REL_KIND_PARTITION_ROOT;
	v1.partition_set = 0x11111111;
	v2.partition_set = 0x22222222;
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	describe_spec(REL, &v1);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 1, 0x100, 2), 0), 0);
	/* the same set described again (a new session) is no change */
	describe_spec(REL, &v1);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 2, 0x180, 1), 0), 0);
	describe_spec(REL, &v2);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 3, 0x200, 2), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
	ck_assert_msg(strstr(rp_error(), "\"public\".\"t\"") != NULL, "no table in: %s", rp_error());
	ck_assert_msg(strstr(rp_error(), "its partitions changed (ATTACH or DETACH PARTITION)") != NULL,
				  "no reason in: %s", rp_error());
	ck_assert_int_eq(f.nchanges, 3);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x180);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x180);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_destructive_halts)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpCheckpoint back;
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		v1 = base_spec(),
				v2 = base_spec();
	const char *ckpt = ct_path("slot.checkpoint");

	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	v2.has_note = false;
	describe_spec(REL, &v1);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 1, 0x100, 2), 0), 0);
	describe_spec(REL, &v2);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 2, 0x200, 2), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
	ck_assert_msg(strstr(rp_error(), "\"public\".\"t\"") != NULL, "no table in: %s", rp_error());
	ck_assert_msg(strstr(rp_error(), "\"note\"") != NULL, "no column in: %s", rp_error());
	/* nothing of the second transaction reached the sink; the position stays */
	ck_assert_int_eq(f.nchanges, 2);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.commit_lsn, 0x100);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x100);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_destructive_type_change_halts)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		v1 = base_spec(),
				v2 = base_spec();

	v2.note_oid = 20;
	v2.note_type = "bigint";
	v2.note_enc = RP_ENC_INT8;
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	describe_spec(REL, &v1);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 1, 0x100, 1), 0), 0);
	describe_spec(REL, &v2);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 2, 0x200, 1), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
	ck_assert_msg(strstr(rp_error(), "\"note\"") && strstr(rp_error(), "bigint"), "%s", rp_error());
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_additive_continues_without_handler)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		v1 = base_spec(),
				v2 = base_spec();

	v2.has_c3 = true;
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	describe_spec(REL, &v1);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 1, 0x100, 1), 0), 0);
	describe_spec(REL, &v2);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 2, 0x200, 1), 0), 0);
	ck_assert_uint_eq(dl.count->schema_changes, 1);
	ck_assert_int_eq(f.nchanges, 2);
	ck_assert_int_eq(f.changes[1].natts, 3);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_schema_handler)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		v1 = base_spec(),
				v2 = base_spec(),
				v3 = base_spec();

	v2.has_note = false;
	v3.has_note = false;
	v3.id_flags = RP_COL_NOT_NULL;	/* the primary key dropped */
	ct_sink_init(&f);
	f.s.handle_schema_change = ct_sink_schema;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	describe_spec(REL, &v1);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 1, 0x100, 1), 0), 0);
	/* the handler accepts the drop: delivery goes on */
	describe_spec(REL, &v2);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 2, 0x200, 1), 0), 0);
	ck_assert_int_eq(f.nschema, 2);
	ck_assert_int_eq(f.schema_kinds[0], RP_SCHEMA_NEW);
	ck_assert_int_eq(f.schema_kinds[1], RP_SCHEMA_DESTRUCTIVE);
	ck_assert_str_eq(f.schema_cols[1], "note");
	ck_assert_uint_eq(dl.count->schema_changes, 1);
	ck_assert_int_eq(f.nchanges, 2);
	ck_assert_int_eq(f.changes[1].natts, 1);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x200);
	/* the handler refuses the next one: -1, no further progress */
	f.schema_verdict = -1;
	describe_spec(REL, &v3);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v3, 3, 0x300, 1), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
	ck_assert_int_eq(f.schema_kinds[2], RP_SCHEMA_DESTRUCTIVE);
	ck_assert_uint_eq(dl.count->schema_changes, 1);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x200);
	rp_deliver_free(&dl);
}

END_TEST

/* ---- the relation view ------------------------------------------------------------------ */

/* The relation records in a view file: count, and REL's column count. */
static int
view_records(const char *path, uint32_t relid, int *natts)
{
	size_t		len;
	char	   *data = ct_slurp(path, &len);
	RpDecoder	dec;
	RpRecord	rec;
	int			n = 0,
				rc;

	*natts = -1;
	rp_decoder_init(&dec);
	rp_decoder_records(&dec, data, len);
	while ((rc = rp_decoder_next(&dec, &rec)) > 0)
	{
		ck_assert_int_eq(rec.tag, RP_TAG_RELATION);
		if (rec.u.relation.rel->relid == relid)
			*natts = rec.u.relation.rel->natts;
		rp_relation_free(rec.u.relation.previous);
		n++;
	}
	ck_assert_int_eq(rc, 0);
	rp_decoder_free(&dec);
	free(data);
	return n;
}

START_TEST(test_view_persisted_across_restart)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		v1 = base_spec(),
				v2 = base_spec(),
				other = base_spec();
	const char *view = ct_path("slot.relations");
	int			natts;

	v2.has_note = false;
	other.name = "u";
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("slot.checkpoint"), view, &l), 0);
	describe_spec(REL, &v1);
	describe_spec(REL2, &other);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v1, 1, 0x100, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL2, &other, 2, 0x200, 1), 0), 0);
	ck_assert(ct_exists(view));
	ck_assert(!ct_exists(ct_path("slot.relations.tmp")));
	ck_assert_int_eq(view_records(view, REL, &natts), 2);
	ck_assert_int_eq(natts, 2);
	rp_deliver_free(&dl);

	/* "restart": a new assembler (new connection), a new delivery */
	rp_asm_free(&as);
	rp_asm_init(&as, &sp, 0x200);
	ck = dl.ck;
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ct_path("slot.checkpoint"), view, &l), 0);
	describe_spec(REL, &v2);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 3, 0x300, 1), 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SCHEMA);
	ck_assert_msg(strstr(rp_error(), "\"note\"") != NULL, "%s", rp_error());
	/* the view still holds what the sink last saw */
	ck_assert_int_eq(view_records(view, REL, &natts), 2);
	ck_assert_int_eq(natts, 2);
	rp_deliver_free(&dl);

	/*
	 * without the view the change would go unnoticed: it is the view that
	 * catches it
	 */
	rp_asm_free(&as);
	rp_asm_init(&as, &sp, 0x200);
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	describe_spec(REL, &v2);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &v2, 3, 0x300, 1), 0), 0);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_view_replaces_records)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RelSpec		s = base_spec(),
				other = base_spec();
	const char *view = ct_path("slot.relations");
	int			natts;

	other.name = "u";
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, view, &l), 0);
	describe_spec(REL2, &other);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL2, &other, 1, 0x100, 1), 0), 0);
	/* three additive changes of REL: one record of it in the view, the newest */
	describe_spec(REL, &s);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &s, 2, 0x200, 1), 0), 0);
	s.has_c3 = true;
	describe_spec(REL, &s);
	ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &s, 3, 0x300, 1), 0), 0);
	ck_assert_int_eq(view_records(view, REL, &natts), 2);
	ck_assert_int_eq(natts, 3);
	ck_assert_uint_eq(dl.count->schema_changes, 1);
	/* the same description again does not rewrite it */
	{
		struct stat before,
					after;

		ck_assert_int_eq(stat(view, &before), 0);
		ck_assert_int_eq(rp_deliver_item(&dl, txn_spec(REL, &s, 4, 0x400, 1), 0), 0);
		ck_assert_int_eq(stat(view, &after), 0);
		ck_assert_int_eq(before.st_ino, after.st_ino);
	}
	rp_deliver_free(&dl);
	/* a damaged view refuses to load */
	ct_write_file(view, "R\0\0\0\xff", 5, false);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, view, &l), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	rp_deliver_free(&dl);
	/* so does one holding anything but relation records (here a stream stop) */
	{
		RpBuf		b;

		rp_buf_init(&b, 0);
		enc_spec(&b, REL, &s);
		rp_enc_stream_stop(&b);
		ct_write_file(view, b.data, b.len, false);
		rp_buf_free(&b);
	}
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, view, &l), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	ck_assert_msg(strstr(rp_error(), "stream_stop") != NULL, "%s", rp_error());
	rp_deliver_free(&dl);
}

END_TEST

/* ---- idle advance -------------------------------------------------------------------------- */

START_TEST(test_advance)
{
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0x50, 0x60);
	RpCheckpoint back;
	RpBatchLimits l = ct_limits(5, CT_NEVER_BYTES, CT_NEVER_MS);
	const char *ckpt = ct_path("slot.checkpoint");

	/*
	 * a sink whose checkpoint is the library's file (stdout, exec): idle WAL
	 * is recorded there before anything was delivered, the commit watermark
	 * kept (a log that never moved held the source's WAL, and its fast
	 * shutdown, for ever)
	 */
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_advance(&dl, 0x9000, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x9000);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x50);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.end_lsn, 0x9000);
	ck_assert_uint_eq(back.commit_lsn, 0x50);
	/* but not while a unit is batched: its records are not yet in the log */
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x9100, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_advance(&dl, 0xA000, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x9000);
	rp_deliver_free(&dl);
	unlink(ckpt);

	/* library-owned again: not while something is batched */
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, ckpt, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x100, 1), 0), 0);
	ck_assert(rp_deliver_pending(&dl));
	ck_assert_int_eq(rp_deliver_advance(&dl, 0x9000, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x60);
	ck_assert(!ct_exists(ckpt));
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x128);
	/* never backwards */
	ck_assert_int_eq(rp_deliver_advance(&dl, 0x100, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x128);
	/* idle: forward, the commit watermark stays */
	ck_assert_int_eq(rp_deliver_advance(&dl, 0x9000, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x9000);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x100);
	ck_assert_int_eq(rp_ckpt_read(ckpt, &back), 1);
	ck_assert_uint_eq(back.end_lsn, 0x9000);
	ck_assert_uint_eq(back.commit_lsn, 0x100);
	rp_deliver_free(&dl);

	/* a sink that owns its checkpoint: through its advance callback */
	ct_sink_init(&f);
	f.s.owns_checkpoint = true;
	f.s.advance = ct_sink_advance;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_advance(&dl, 0xA000, 0), 0);
	ck_assert_int_eq(f.nadvance, 1);
	ck_assert_uint_eq(f.advanced.end_lsn, 0xA000);
	ck_assert_uint_eq(f.advanced.commit_lsn, 0x50);
	ck_assert_uint_eq(dl.ck.end_lsn, 0xA000);
	/* not while batched */
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0xB000, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_advance(&dl, 0xC000, 0), 0);
	ck_assert_int_eq(f.nadvance, 1);
	rp_deliver_free(&dl);

	/* ... and without one it stays put */
	ct_sink_init(&f);
	f.s.owns_checkpoint = true;
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	ck_assert_int_eq(rp_deliver_advance(&dl, 0xA000, 0), 0);
	ck_assert_uint_eq(dl.ck.end_lsn, 0x60);
	rp_deliver_free(&dl);
}

END_TEST

/* ---- cursor ------------------------------------------------------------------------------- */

START_TEST(test_cursor_damaged_store)
{
	/* a stored record that does not decode: halt, naming the xid */
	CtSink		f;
	RpDelivery	dl;
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(1, CT_NEVER_BYTES, CT_NEVER_MS);
	RpItem	   *it = txn(4242, 0x100, 2);
	unsigned char junk[] = {'I', 0, 0, 0, 1, 0};

	ck_assert_int_eq(rp_store_append(&it->txn->store, junk, sizeof(junk)), 0);
	ct_sink_init(&f);
	ck_assert_int_eq(rp_deliver_init(&dl, &f.s, &ck, NULL, NULL, &l), 0);
	rp_error_clear();
	ck_assert_int_eq(rp_deliver_item(&dl, it, 0), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	ck_assert_msg(strstr(rp_error(), "4242") != NULL, "%s", rp_error());
	rp_deliver_free(&dl);
}

END_TEST

/* ---- early apply of streamed transactions ------------------------------------------ */

/*
 * A sink that takes chunks: it records 'C' (chunk), 'D' (drop), 'K' (chunked
 * commit) among the usual calls, the records each chunk held, and the bytes
 * the commit was told to skip.
 */
static int	early_records;		/* records in chunks since the last drop or
								 * commit */
static uint64_t early_chunk_bytes;
static uint64_t early_skip;
static int	early_decline_at;	/* decline the n-th chunk (1-based); 0 never */
static int	early_nchunks;

static int
early_chunk(RpSink *s, RpDelivery *dl, RpTxn *chunk)
{
	CtSink	   *f = (CtSink *) s;
	RpCursor	c;
	RpRecord	rec;
	int			rc;

	f->calls[f->ncalls++] = 'C';
	if (++early_nchunks == early_decline_at)
		return 1;
	ck_assert_int_eq(rp_cursor_open(&c, dl, chunk), 0);
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
		early_records++;
	rp_cursor_close(&c);
	ck_assert_int_eq(rc, 0);
	early_chunk_bytes += rp_store_length(&chunk->store);
	return 0;
}

static void
early_drop(RpSink *s)
{
	CtSink	   *f = (CtSink *) s;

	f->calls[f->ncalls++] = 'D';
	early_records = 0;
	early_chunk_bytes = 0;
}

static int
early_commit(RpSink *s, RpDelivery *dl, RpTxn *txn, uint64_t skip, const RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;
	RpCursor	c;
	RpRecord	rec;
	int			rc;

	f->calls[f->ncalls++] = 'K';
	early_skip = skip;
	ck_assert_uint_eq(skip, early_chunk_bytes);
	/* the tail after the chunks: records the chunks did not hold */
	ck_assert_int_eq(rp_cursor_open_at(&c, dl, txn, skip), 0);
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
		early_records++;
	rp_cursor_close(&c);
	ck_assert_int_eq(rc, 0);
	f->have_ck = true;
	f->held = *ck;
	return 0;
}

static void
early_sink(CtSink *f, RpDelivery *dl)
{
	RpCheckpoint ck = ct_ck(0, 0);
	RpBatchLimits l = ct_limits(100, CT_NEVER_BYTES, CT_NEVER_MS);

	ct_sink_init(f);
	f->s.owns_checkpoint = true;
	f->s.handle_batch = ct_sink_batch;
	f->s.handle_transaction = NULL; /* every unit is a 'B' */
	f->s.handle_chunk = early_chunk;
	f->s.drop_chunks = early_drop;
	f->s.handle_chunked_commit = early_commit;
	early_records = 0;
	early_chunk_bytes = 0;
	early_skip = 0;
	early_decline_at = 0;
	early_nchunks = 0;
	as.early = true;
	ck_assert_int_eq(rp_deliver_init(dl, &f->s, &ck, NULL, NULL, &l), 0);
}

/* One stream block of xid with n inserts of REL; the items it produced, delivered. */
static void
early_block(RpDelivery *dl, uint32_t xid, bool first, int n)
{
	RelSpec		sp_ = base_spec();
	RpBuf		b;
	RpItem	   *it;

	if (as.nraw == 0)
		describe_spec(REL, &sp_);
	ct_frame(&b);
	rp_enc_stream_start(&b, xid, first);
	for (int i = 0; i < n; i++)
	{
		size_t		at = rp_enc_change_start(&b, RP_TAG_INSERT, REL, RP_CHANGE_HAS_XID, xid);

		row_spec(&b, &sp_, i);
		rp_buf_end_record(&b, at);
	}
	rp_enc_stream_stop(&b);
	ck_assert_int_eq(ct_feed(&as, &b, 0x100), 0);
	while ((it = rp_asm_pop(&as)) != NULL)
		ck_assert_int_eq(rp_deliver_item(dl, it, 0), 0);
}

static void
early_end(RpDelivery *dl, uint32_t xid, uint64_t lsn, bool commit)
{
	RpBuf		b;
	RpItem	   *it;

	ct_frame(&b);
	if (commit)
		rp_enc_stream_commit(&b, xid, lsn, lsn + 0x28, 0);
	else
		rp_enc_stream_abort(&b, xid, xid);
	ck_assert_int_eq(ct_feed(&as, &b, lsn), 0);
	while ((it = rp_asm_pop(&as)) != NULL)
		ck_assert_int_eq(rp_deliver_item(dl, it, 0), 0);
}

START_TEST(test_early_chunks_then_commit)
{
	CtSink		f;
	RpDelivery	dl;

	early_sink(&f, &dl);
	/* a table the sink has not seen yet: its stream is not taken early */
	early_block(&dl, 500, true, 2);
	early_end(&dl, 500, 0x180, true);
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	calls_are(&f, "B");

	/* a pending plain transaction is flushed before the first chunk goes */
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x200, 1), 0), 0);
	calls_are(&f, "B");
	early_block(&dl, 700, true, 3);
	calls_are(&f, "BBC");
	early_block(&dl, 700, false, 2);
	calls_are(&f, "BBCC");
	ck_assert_int_eq(early_records, 5); /* 3 rows, then 2 (the cursor keeps R
										 * to itself) */
	early_block(&dl, 700, false, 0);	/* an empty block: nothing */
	early_end(&dl, 700, 0x300, true);
	calls_are(&f, "BBCCK");
	ck_assert_uint_eq(early_skip, early_chunk_bytes);
	ck_assert_int_eq(early_records, 5); /* nothing after the chunks */
	ck_assert_uint_eq(f.held.commit_lsn, 0x300);
	ck_assert_uint_eq(dl.ck.commit_lsn, 0x300);
	ck_assert_uint_eq(dl.count->early_commits, 1);
	ck_assert_uint_eq(dl.count->early_chunks, 2);
	ck_assert_uint_eq(dl.count->txns, 3);
	rp_deliver_free(&dl);
}

END_TEST

START_TEST(test_early_dropped)
{
	CtSink		f;
	RpDelivery	dl;

	early_sink(&f, &dl);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(1, 0x200, 1), 0), 0);
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);

	/*
	 * another transaction commits while 700's chunks are held: they go, 700
	 * comes whole
	 */
	early_block(&dl, 700, true, 2);
	ck_assert_int_eq(rp_deliver_item(&dl, txn(2, 0x300, 1), 0), 0);
	calls_are(&f, "BCD");
	early_block(&dl, 700, false, 1);	/* not its first block: not taken */
	calls_are(&f, "BCD");
	early_end(&dl, 700, 0x400, true);
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	calls_are(&f, "BCDB");
	ck_assert_uint_eq(f.held.commit_lsn, 0x400);
	ck_assert_uint_eq(dl.count->early_commits, 0);
	ck_assert_uint_eq(dl.count->early_drops, 1);

	/* an abort drops them; so does a declined block */
	early_block(&dl, 800, true, 1);
	early_end(&dl, 800, 0x500, false);
	calls_are(&f, "BCDBCD");
	early_decline_at = early_nchunks + 2;
	early_block(&dl, 900, true, 1);
	early_block(&dl, 900, false, 1);
	calls_are(&f, "BCDBCDCCD");
	early_block(&dl, 900, false, 1);
	calls_are(&f, "BCDBCDCCD");
	early_end(&dl, 900, 0x600, true);
	ck_assert_int_eq(rp_deliver_flush(&dl, true, 0), 0);
	calls_are(&f, "BCDBCDCCDB");
	ck_assert_uint_eq(dl.count->early_drops, 3);
	ck_assert_uint_eq(f.held.commit_lsn, 0x600);

	/*
	 * a reconnect cuts it; sent again from its first block, it is started
	 * over
	 */
	early_block(&dl, 950, true, 1);
	rp_asm_reset(&as);
	{
		RpItem	   *it;
		RelSpec		sp_ = base_spec();

		while ((it = rp_asm_pop(&as)) != NULL)
			ck_assert_int_eq(rp_deliver_item(&dl, it, 0), 0);
		describe_spec(REL, &sp_);
	}
	calls_are(&f, "BCDBCDCCDBCD");
	early_block(&dl, 950, true, 1);
	early_end(&dl, 950, 0x700, true);
	calls_are(&f, "BCDBCDCCDBCDCK");
	ck_assert_uint_eq(f.held.commit_lsn, 0x700);
	rp_deliver_free(&dl);
}

END_TEST

Suite	   *
ct_suite_deliver(void)
{
	Suite	   *s = suite_create("deliver");
	TCase	   *tc;

	tc = tcase_create("schema_diff");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_diff_classes);
	tcase_add_test(tc, test_diff_partitions);
	suite_add_tcase(s, tc);

	tc = tcase_create("batches");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_counters_outlive_delivery);
	tcase_add_test(tc, test_batch_max_txns);
	tcase_add_test(tc, test_batch_max_bytes);
	tcase_add_test(tc, test_batch_max_ms);
	tcase_add_test(tc, test_message_flushes_batch);
	tcase_add_test(tc, test_message_without_handler);
	suite_add_tcase(s, tc);

	tc = tcase_create("checkpoints");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_library_checkpoint_after_sink);
	tcase_add_test(tc, test_sink_owned_checkpoint_no_file);
	tcase_add_test(tc, test_midbatch_failure_library_owned);
	tcase_add_test(tc, test_midbatch_failure_sink_owned);
	suite_add_tcase(s, tc);

	tc = tcase_create("schema_changes");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_destructive_halts);
	tcase_add_test(tc, test_destructive_type_change_halts);
	tcase_add_test(tc, test_partition_set_change_halts);
	tcase_add_test(tc, test_additive_continues_without_handler);
	tcase_add_test(tc, test_schema_handler);
	tcase_add_test(tc, test_view_persisted_across_restart);
	tcase_add_test(tc, test_view_replaces_records);
	suite_add_tcase(s, tc);

	tc = tcase_create("early_apply");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_early_chunks_then_commit);
	tcase_add_test(tc, test_early_dropped);
	suite_add_tcase(s, tc);

	tc = tcase_create("advance");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_advance);
	tcase_add_test(tc, test_cursor_damaged_store);
	suite_add_tcase(s, tc);
	return s;
}
