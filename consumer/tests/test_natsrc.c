/*
 * test_natsrc.c
 *    The NATS source's pure parts, no server: the hole checks of
 *    natsrc/rp_natsrc_chain.h (every kind of hole refused, with the
 *    sequence in the reason; whole transactions and positions pass), the
 *    subject filter, a stream checkpoint's line (with its source and
 *    sequence) and the kind check, and the sink's Replicant-Wire record
 *    (sinks/nats/rp_nats_wire.c: a streamed change's xid taken out).
 */
#include "ct_kit.h"
#include "natsrc/rp_natsrc_chain.h"
#include "natsrc/rp_natsrc_int.h"
#include "rp_encode.h"
#include "sinks/nats/rp_nats_int.h"

static RpNatsHead
data(uint64_t commit, uint64_t end, uint64_t prev_end, uint64_t index, bool last)
{
	RpNatsHead	h;

	memset(&h, 0, sizeof(h));
	h.kind = RP_NATS_KIND_DATA;
	h.system_id = 7;
	h.timeline = 1;
	h.commit_lsn = commit;
	h.end_lsn = end;
	h.prev_end_lsn = prev_end;
	h.index = index;
	h.last = last;
	return h;
}

static RpNatsHead
kind(RpNatsKind k, uint64_t end)
{
	RpNatsHead	h = data(0, end, 0, 0, true);

	h.kind = k;
	return h;
}

START_TEST(test_chain_whole)
{
	RpNatsChain c;
	RpNatsHead	h;

	rp_natsrc_chain_init(&c, 1, 0, false, 0, 0);
	h = kind(RP_NATS_KIND_RELATION, 0);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_SKIP);
	ck_assert(c.bound && c.system_id == 7);
	h = data(0x100, 0x110, 0, 0, false);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 2, &h), RP_NATS_STEP_BEGIN);
	ck_assert(c.in_txn);
	h = kind(RP_NATS_KIND_RELATION, 0); /* a schema change inside the
										 * transaction */
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 3, &h), RP_NATS_STEP_SKIP);
	h = data(0x100, 0x110, 0, 1, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 4, &h), RP_NATS_STEP_CONTINUE);
	ck_assert(!c.in_txn);
	ck_assert_uint_eq(c.end_lsn, 0x110);
	h = kind(RP_NATS_KIND_POSITION, 0x200);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 5, &h), RP_NATS_STEP_POSITION);
	ck_assert_uint_eq(c.end_lsn, 0x200);
	/* the next transaction follows the position's end */
	h = data(0x300, 0x310, 0x200, 0, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 6, &h), RP_NATS_STEP_BEGIN);
	ck_assert_uint_eq(c.next_seq, 7);
}

END_TEST

START_TEST(test_chain_holes)
{
	RpNatsChain c;
	RpNatsHead	h;

	/* a missing sequence */
	rp_natsrc_chain_init(&c, 10, 0x110, true, 7, 1);
	h = data(0x200, 0x210, 0x110, 0, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 12, &h), RP_NATS_STEP_HOLE);
	ck_assert_str_eq(c.why, "hole before sequence 12: sequences 10 to 11 are missing (deleted or expired)");
	rp_natsrc_chain_init(&c, 10, 0x110, true, 7, 1);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 11, &h), RP_NATS_STEP_HOLE);
	ck_assert_str_eq(c.why, "hole before sequence 11: sequence 10 is missing (deleted or expired)");

	/* a transaction cut short by the next one */
	rp_natsrc_chain_init(&c, 1, 0, true, 7, 1);
	h = data(0x200, 0x210, 0, 0, false);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_BEGIN);
	h = data(0x300, 0x310, 0x210, 0, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 2, &h), RP_NATS_STEP_HOLE);
	ck_assert_msg(strstr(c.why, "0/200 is cut short"), "%s", c.why);

	/* a message of a transaction missing (same commit, index jumps) */
	rp_natsrc_chain_init(&c, 1, 0, true, 7, 1);
	h = data(0x200, 0x210, 0, 0, false);
	rp_natsrc_chain_step(&c, 1, &h);
	h = data(0x200, 0x210, 0, 2, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 2, &h), RP_NATS_STEP_HOLE);
	ck_assert_msg(strstr(c.why, "message 1 of the transaction at commit 0/200"), "%s", c.why);

	/* a position inside a transaction */
	rp_natsrc_chain_init(&c, 1, 0, true, 7, 1);
	h = data(0x200, 0x210, 0, 0, false);
	rp_natsrc_chain_step(&c, 1, &h);
	h = kind(RP_NATS_KIND_POSITION, 0x400);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 2, &h), RP_NATS_STEP_HOLE);

	/* a transaction whose first messages are gone */
	rp_natsrc_chain_init(&c, 5, 0x110, true, 7, 1);
	h = data(0x200, 0x210, 0x110, 3, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 5, &h), RP_NATS_STEP_HOLE);
	ck_assert_msg(strstr(c.why, "begins at message 3"), "%s", c.why);

	/* whole transactions missing: the chain of end LSNs breaks */
	rp_natsrc_chain_init(&c, 5, 0x110, true, 7, 1);
	h = data(0x300, 0x310, 0x210, 0, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 5, &h), RP_NATS_STEP_HOLE);
	ck_assert_msg(strstr(c.why, "follows end LSN 0/210") && strstr(c.why, "held 0/110"), "%s", c.why);

	/* a message that is not the sink's */
	rp_natsrc_chain_init(&c, 1, 0, true, 7, 1);
	h = kind(RP_NATS_KIND_OTHER, 0);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_HOLE);
	h = data(0x200, 0x210, 0, 0, true);
	h.bad = true;
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 2, &h), RP_NATS_STEP_HOLE);
}

END_TEST

START_TEST(test_chain_identity)
{
	RpNatsChain c;
	RpNatsHead	h;

	rp_natsrc_chain_init(&c, 1, 0, true, 8, 1);
	h = data(0x200, 0x210, 0, 0, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_IDENTITY);
	ck_assert_msg(strstr(c.why, "system 7") && strstr(c.why, "system 8"), "%s", c.why);
	rp_natsrc_chain_init(&c, 1, 0, true, 7, 2);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_IDENTITY);
	ck_assert_msg(strstr(c.why, "timeline 1") && strstr(c.why, "timeline 2"), "%s", c.why);

	/*
	 * the writer's source promoted: a later timeline is followed, and then
	 * the earlier one is refused
	 */
	rp_natsrc_chain_init(&c, 1, 0, true, 7, 1);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_BEGIN);
	h = data(0x300, 0x310, 0x210, 0, true);
	h.timeline = 2;
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 2, &h), RP_NATS_STEP_BEGIN);
	ck_assert_uint_eq(c.timeline, 2);
	h = data(0x400, 0x410, 0x310, 0, true);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 3, &h), RP_NATS_STEP_IDENTITY);
	h = data(0x200, 0x210, 0, 0, true);
	/* relation messages are checked too */
	rp_natsrc_chain_init(&c, 1, 0, true, 8, 1);
	h = kind(RP_NATS_KIND_RELATION, 0);
	ck_assert_int_eq(rp_natsrc_chain_step(&c, 1, &h), RP_NATS_STEP_IDENTITY);
}

END_TEST

START_TEST(test_subject_match)
{
	ck_assert(rp_natsrc_subject_match("replicant.cdc.public.*", "replicant.cdc.public.t_a"));
	ck_assert(!rp_natsrc_subject_match("replicant.cdc.public.*", "replicant.cdc.other.t_a"));
	ck_assert(!rp_natsrc_subject_match("replicant.cdc.public.*", "replicant.cdc.public"));
	ck_assert(!rp_natsrc_subject_match("replicant.cdc.public.*", "replicant.cdc.public.t.x"));
	ck_assert(rp_natsrc_subject_match("replicant.cdc.>", "replicant.cdc.a.b"));
	ck_assert(!rp_natsrc_subject_match("replicant.cdc.>", "replicant.cdc"));
	ck_assert(rp_natsrc_subject_match("replicant.*.public.t_a", "replicant.cdc.public.t_a"));
	ck_assert(rp_natsrc_subject_match("a.b", "a.b"));
	ck_assert(!rp_natsrc_subject_match("a.b", "a.bc"));
	ck_assert(!rp_natsrc_subject_match("a.bc", "a.b"));
	/* escaped names are one token: %2E is no dot */
	ck_assert(rp_natsrc_subject_match("p.s.*", "p.s.we%2Eird"));
}

END_TEST

START_TEST(test_ckpt_stream)
{
	RpCheckpoint ck,
				back;
	char		line[1024];

	memset(&ck, 0, sizeof(ck));
	ck.system_id = 7;
	ck.timeline = 1;
	snprintf(ck.slot, sizeof(ck.slot), "reader1");
	ck.commit_lsn = 0x1000;
	ck.end_lsn = 0x1010;
	snprintf(ck.source, sizeof(ck.source), "nats:REPLICANT_cdc");
	ck.source_seq = 123456;
	rp_ckpt_format(&ck, line, sizeof(line));
	ck_assert_str_eq(line, "replicant-checkpoint v1 sysid=7 tli=1 slot=reader1 commit=0/1000 end=0/1010 source=nats:REPLICANT_cdc seq=123456");
	ck_assert(rp_ckpt_parse(line, &back));
	ck_assert_str_eq(back.source, "nats:REPLICANT_cdc");
	ck_assert_uint_eq(back.source_seq, 123456);
	/* a slot's checkpoint stays as it was */
	ck.source[0] = '\0';
	rp_ckpt_format(&ck, line, sizeof(line));
	ck_assert_str_eq(line, "replicant-checkpoint v1 sysid=7 tli=1 slot=reader1 commit=0/1000 end=0/1010");
	ck_assert(rp_ckpt_parse(line, &back));
	ck_assert_str_eq(back.source, "");
	/* a torn or extended line is refused */
	ck_assert(!rp_ckpt_parse("replicant-checkpoint v1 sysid=7 tli=1 slot=r commit=0/1 end=0/1 source=nats:S", &back));
	ck_assert(!rp_ckpt_parse("replicant-checkpoint v1 sysid=7 tli=1 slot=r commit=0/1 end=0/1 source=nats:S seq=1 x", &back));
	ck_assert(!rp_ckpt_parse("replicant-checkpoint v1 sysid=7 tli=1 slot=r commit=0/1 end=0/1 source=nats:S seq=-1", &back));

	/*
	 * the kind check: a slot's checkpoint is not a stream's, nor one stream's
	 * another's
	 */
	ck_assert_int_eq(rp_ckpt_check_kind(&ck, ""), 0);
	ck_assert_int_eq(rp_ckpt_check_kind(&ck, "nats:REPLICANT_cdc"), -1);
	ck_assert_msg(strstr(rp_error(), "taken from a replication slot, not from nats:REPLICANT_cdc"), "%s", rp_error());
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
	snprintf(ck.source, sizeof(ck.source), "nats:A");
	ck_assert_int_eq(rp_ckpt_check_kind(&ck, "nats:B"), -1);
	ck_assert_int_eq(rp_ckpt_check_kind(&ck, ""), -1);
	rp_error_clear();
}

END_TEST

/* A streamed change (HAS_XID) comes out as the plain change: xid gone, length four less. */
START_TEST(test_wire_record)
{
	RpBuf		in,
				out,
				want;
	size_t		at;

	rp_buf_init(&in, 64);
	rp_buf_init(&out, 64);
	rp_buf_init(&want, 64);
	at = rp_enc_change_start(&in, RP_TAG_INSERT, 42, 0, 999);
	rp_enc_tuple_start(&in, 1);
	rp_enc_datum_kind(&in, RP_DATUM_VALUE);
	rp_buf_put_u32(&in, 5);
	rp_buf_end_record(&in, at);
	at = rp_enc_change_start(&want, RP_TAG_INSERT, 42, 0, 0);
	rp_enc_tuple_start(&want, 1);
	rp_enc_datum_kind(&want, RP_DATUM_VALUE);
	rp_buf_put_u32(&want, 5);
	rp_buf_end_record(&want, at);
	rp_nats_wire_record(&out, (const unsigned char *) in.data);
	ck_assert_uint_eq(out.len, want.len);
	ck_assert(memcmp(out.data, want.data, want.len) == 0);
	/* a plain one is copied as it is */
	rp_nats_wire_record(&out, (const unsigned char *) want.data);
	ck_assert_uint_eq(out.len, want.len);
	ck_assert(memcmp(out.data, want.data, want.len) == 0);
	/* a truncate in a stream block: flags first, then the xid */
	rp_buf_reset(&in);
	rp_buf_reset(&want);
	{
		uint32_t	relids[2] = {1, 2};

		rp_enc_truncate(&in, RP_TRUNCATE_CASCADE, 77, 2, relids);
		rp_enc_truncate(&want, RP_TRUNCATE_CASCADE, 0, 2, relids);
	}
	rp_nats_wire_record(&out, (const unsigned char *) in.data);
	ck_assert_uint_eq(out.len, want.len);
	ck_assert(memcmp(out.data, want.data, want.len) == 0);
	rp_buf_free(&in);
	rp_buf_free(&out);
	rp_buf_free(&want);
}

END_TEST

Suite	   *
ct_suite_natsrc(void)
{
	Suite	   *s = suite_create("natsrc");
	TCase	   *tc = tcase_create("natsrc");

	tcase_add_test(tc, test_chain_whole);
	tcase_add_test(tc, test_chain_holes);
	tcase_add_test(tc, test_chain_identity);
	tcase_add_test(tc, test_subject_match);
	tcase_add_test(tc, test_ckpt_stream);
	tcase_add_test(tc, test_wire_record);
	suite_add_tcase(s, tc);
	return s;
}
