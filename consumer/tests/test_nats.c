/*
 * test_nats.c
 *    The NATS sink's pure parts (sinks/nats/rp_nats_int.h), no server:
 *    subject escaping (one to one, never a wildcard or an extra token),
 *    Nats-Msg-Id and the data headers, the tail's headers read back into
 *    the resume point and the checkpoint (also mid-transaction: never a
 *    confirm past what the stream held), and the publish window's
 *    accounting (an exact prefix: any ack not at expected + 1 fails it).
 */
#include "ct_kit.h"
#include "sinks/nats/rp_nats_int.h"

static char *
subj(const char *prefix, const char *schema, const char *table)
{
	static char out[512];
	RpBuf		b;

	rp_buf_init(&b, 16);
	rp_nats_data_subject(&b, prefix, schema, table);
	snprintf(out, sizeof(out), "%s", b.data);
	rp_buf_free(&b);
	return out;
}

START_TEST(test_subject_escape)
{
	ck_assert_str_eq(subj("replicant.s1", "public", "orders"), "replicant.s1.public.orders");
	ck_assert_str_eq(subj("p", "my.schema", "a b"), "p.my%2Eschema.a%20b");
	ck_assert_str_eq(subj("p", "*", ">"), "p.%2A.%3E");
	ck_assert_str_eq(subj("p", "Ab_9-", "x%y"), "p.Ab_9-.x%25y");
	/* non-ASCII: every UTF-8 byte escaped, uppercase hex */
	ck_assert_str_eq(subj("p", "s", "\xc3\xa9t\xc3\xa9"), "p.s.%C3%A9t%C3%A9");
	ck_assert_str_eq(subj("p", "s", "tab\tnl\n"), "p.s.tab%09nl%0A");
}

END_TEST

START_TEST(test_subject_tokens)
{
	/*
	 * escaped names never hold '.', '*', '>' or a space: always exactly three
	 * tokens after p
	 */
	const char *names[] = {"a.b.c", "*", ">", " ", "..", "x>y*z", "%2E"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++)
		{
			const char *s = subj("p", names[i], names[j]);
			int			dots = 0;

			for (const char *c = s; *c; c++)
			{
				ck_assert(*c != '*' && *c != '>' && *c != ' ');
				dots += *c == '.';
			}
			ck_assert_int_eq(dots, 2);
		}
	/* one to one: '%' is escaped too, so "%2E" and "." differ */
	ck_assert_str_ne(subj("p", "s", "%2E"), "p.s.%2E");
}

END_TEST

START_TEST(test_control_subject)
{
	RpBuf		b;

	rp_buf_init(&b, 16);
	rp_nats_control_subject(&b, "replicant.slot");
	ck_assert_str_eq(b.data, "replicant.slot._control");
	rp_buf_free(&b);
}

END_TEST

static const char *
hdrs_get(void *arg, const char *key)
{
	return rp_nats_hdrs_get(arg, key);
}

static RpNatsIdent
ident(void)
{
	RpNatsIdent id = {7412345678901234567ULL, 2, "slot_a", "42-00ff00ff00ff00ff"};

	return id;
}

START_TEST(test_msg_id_and_headers)
{
	RpNatsHdrs	h;
	RpNatsIdent id = ident();
	RpNatsPlace p = {0x16B374D848ULL, 0x16B374D900ULL, 0x16B374D000ULL, 901, 0, 7, false};
	RpBuf		b;

	rp_buf_init(&b, 16);
	rp_nats_msg_id(&b, id.system_id, id.slot, p.commit_lsn, p.index);
	rp_buf_put_u8(&b, '\0');
	ck_assert_str_eq(b.data, "7412345678901234567:slot_a:16/B374D848:7");
	rp_buf_free(&b);

	rp_nats_hdrs_init(&h);
	rp_nats_hdrs_place(&h, &id, &p);
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Nats-Msg-Id"), "7412345678901234567:slot_a:16/B374D848:7");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Lsn"), "16/B374D848");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-End-Lsn"), "16/B374D900");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Prev-End-Lsn"), "16/B374D000");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Xid"), "901");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Index"), "7");
	ck_assert_ptr_null(rp_nats_hdrs_get(&h, "Replicant-Last"));
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Commit-Time"), "1970-01-01T00:00:00Z");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-System-Id"), "7412345678901234567");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Timeline"), "2");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Slot"), "slot_a");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Writer"), "42-00ff00ff00ff00ff");

	rp_nats_hdrs_reset(&h);
	p.last = true;
	p.index = 0;
	rp_nats_hdrs_place(&h, &id, &p);
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Replicant-Last"), "true");
	ck_assert_str_eq(rp_nats_hdrs_get(&h, "Nats-Msg-Id"), "7412345678901234567:slot_a:16/B374D848:0");
	rp_nats_hdrs_free(&h);
}

END_TEST

/* headers written by the sink, read back: the resume point and checkpoint */
START_TEST(test_tail_roundtrip)
{
	RpNatsHdrs	h;
	RpNatsIdent id = ident();
	RpNatsPlace p = {0x5000, 0x5100, 0x4F00, 9, 0, 3, false};
	RpNatsHead	head;
	RpNatsResume r;
	RpCheckpoint ck;

	rp_nats_hdrs_init(&h);
	rp_nats_hdrs_place(&h, &id, &p);
	rp_nats_hdrs_add(&h, "Replicant-Op", "insert");
	rp_nats_head_parse(&head, hdrs_get, &h);
	ck_assert_int_eq(head.kind, RP_NATS_KIND_DATA);
	ck_assert(!head.bad);
	ck_assert_uint_eq(head.system_id, id.system_id);
	ck_assert_uint_eq(head.timeline, 2);
	ck_assert_str_eq(head.slot, "slot_a");
	ck_assert_str_eq(head.writer, id.writer);
	ck_assert_uint_eq(head.commit_lsn, 0x5000);
	ck_assert_uint_eq(head.index, 3);
	ck_assert(!head.last);

	/*
	 * mid-transaction: the transaction is not done, confirm only what came
	 * before it
	 */
	rp_nats_resume_from_head(&head, &r, &ck);
	ck_assert_uint_eq(ck.commit_lsn, 0x4FFF);
	ck_assert_uint_eq(ck.end_lsn, 0x4F00);
	ck_assert_uint_eq(ck.system_id, id.system_id);
	ck_assert_str_eq(ck.slot, "slot_a");
	ck_assert(!rp_nats_resume_covers_txn(&r, 0x5000));
	ck_assert(rp_nats_resume_covers_txn(&r, 0x4000));
	ck_assert(rp_nats_resume_covers(&r, 0x5000, 0));
	ck_assert(rp_nats_resume_covers(&r, 0x5000, 3));
	ck_assert(!rp_nats_resume_covers(&r, 0x5000, 4));
	ck_assert(!rp_nats_resume_covers(&r, 0x6000, 0));

	/* its last message: done up to its commit, confirmable to its end */
	rp_nats_hdrs_reset(&h);
	p.last = true;
	rp_nats_hdrs_place(&h, &id, &p);
	rp_nats_hdrs_add(&h, "Replicant-Op", "delete");
	rp_nats_head_parse(&head, hdrs_get, &h);
	ck_assert(head.last);
	rp_nats_resume_from_head(&head, &r, &ck);
	ck_assert_uint_eq(ck.commit_lsn, 0x5000);
	ck_assert_uint_eq(ck.end_lsn, 0x5100);
	ck_assert(rp_nats_resume_covers_txn(&r, 0x5000));
	ck_assert(rp_nats_resume_covers(&r, 0x5000, 99));
	ck_assert(!rp_nats_resume_covers_txn(&r, 0x5001));
	rp_nats_hdrs_free(&h);
}

END_TEST

START_TEST(test_tail_kinds)
{
	RpNatsHdrs	h;
	RpNatsIdent id = ident();
	RpNatsHead	head;
	RpNatsResume r;
	RpCheckpoint ck;

	rp_nats_hdrs_init(&h);
	/* no Replicant-Op: not this sink's */
	rp_nats_hdrs_add(&h, "Other", "x");
	rp_nats_head_parse(&head, hdrs_get, &h);
	ck_assert_int_eq(head.kind, RP_NATS_KIND_OTHER);

	/* a relation description: identity only */
	rp_nats_hdrs_reset(&h);
	rp_nats_hdrs_add(&h, "Replicant-Op", "relation");
	rp_nats_hdrs_ident(&h, &id);
	rp_nats_head_parse(&head, hdrs_get, &h);
	ck_assert_int_eq(head.kind, RP_NATS_KIND_RELATION);
	ck_assert(!head.bad);

	/* a position: complete, its end confirmable */
	rp_nats_hdrs_reset(&h);
	rp_nats_hdrs_add(&h, "Replicant-Op", "position");
	rp_nats_hdrs_add(&h, "Replicant-Lsn", "0/7000");
	rp_nats_hdrs_add(&h, "Replicant-End-Lsn", "0/7100");
	rp_nats_hdrs_ident(&h, &id);
	rp_nats_head_parse(&head, hdrs_get, &h);
	ck_assert_int_eq(head.kind, RP_NATS_KIND_POSITION);
	ck_assert(!head.bad);
	rp_nats_resume_from_head(&head, &r, &ck);
	ck_assert_uint_eq(ck.commit_lsn, 0x7000);
	ck_assert_uint_eq(ck.end_lsn, 0x7100);
	ck_assert(rp_nats_resume_covers_txn(&r, 0x7000));

	/* ours but damaged: bad (the sink halts rather than guess a resume point) */
	rp_nats_hdrs_reset(&h);
	rp_nats_hdrs_add(&h, "Replicant-Op", "insert");
	rp_nats_hdrs_add(&h, "Replicant-Lsn", "zz");
	rp_nats_hdrs_ident(&h, &id);
	rp_nats_head_parse(&head, hdrs_get, &h);
	ck_assert_int_eq(head.kind, RP_NATS_KIND_DATA);
	ck_assert(head.bad);
	rp_nats_hdrs_free(&h);
}

END_TEST

START_TEST(test_window_in_order)
{
	RpNatsWin	w;
	uint64_t	e[4];

	rp_nats_win_reset(&w, 3, 10);
	for (int i = 0; i < 3; i++)
		e[i] = rp_nats_win_send(&w);
	ck_assert_uint_eq(e[0], 10);
	ck_assert_uint_eq(e[1], 11);
	ck_assert_uint_eq(e[2], 12);
	ck_assert(rp_nats_win_full(&w));
	rp_nats_win_ack(&w, e[0], 11, false);
	ck_assert(!rp_nats_win_full(&w));
	e[3] = rp_nats_win_send(&w);
	ck_assert_uint_eq(e[3], 13);
	/* acks may come in any order */
	rp_nats_win_ack(&w, e[2], 13, false);
	rp_nats_win_ack(&w, e[1], 12, false);
	rp_nats_win_ack(&w, e[3], 14, false);
	ck_assert_int_eq(w.in_flight, 0);
	ck_assert_int_eq(w.failure, RP_NATS_FAIL_NONE);
	ck_assert_uint_eq(w.acked, 4);
	ck_assert_uint_eq(w.acked_seq, 14);
	ck_assert_uint_eq(w.last_seq, 14);
}

END_TEST

/*
 * The window is bounded by bytes as well as by count: a window of 1,024
 * publishes holds at most RP_NATS_WINDOW_BYTES of large rows, and a
 * message larger than the bound still goes alone.
 */
START_TEST(test_window_bytes)
{
	RpNatsWin	w;
	const int64_t row = 512 * 1024;
	int			n = 0;

	rp_nats_win_reset(&w, 1024, 0);
	w.max_bytes = RP_NATS_WINDOW_BYTES;
	while (rp_nats_win_room(&w, row) && n < 1024)
	{
		rp_nats_win_send(&w);
		rp_nats_win_charge(&w, row);
		n++;
	}
	ck_assert_int_eq(n, (int) (RP_NATS_WINDOW_BYTES / row));
	ck_assert(!rp_nats_win_full(&w));	/* the count would have let more go */
	/* an ack gives its bytes back */
	rp_nats_win_charge(&w, -row);
	rp_nats_win_ack(&w, 0, 1, false);
	ck_assert(rp_nats_win_room(&w, row));
	ck_assert(!rp_nats_win_room(&w, 2 * row));

	/* one message over the bound goes when nothing else is in flight */
	rp_nats_win_reset(&w, 1024, 0);
	w.max_bytes = RP_NATS_WINDOW_BYTES;
	ck_assert(rp_nats_win_room(&w, 2 * RP_NATS_WINDOW_BYTES));
	rp_nats_win_send(&w);
	rp_nats_win_charge(&w, 2 * RP_NATS_WINDOW_BYTES);
	ck_assert(!rp_nats_win_room(&w, 1));
	/* never below zero; no bound when max_bytes <= 0 */
	rp_nats_win_charge(&w, -3 * RP_NATS_WINDOW_BYTES);
	ck_assert_int_eq(w.bytes, 0);
	w.max_bytes = 0;
	rp_nats_win_charge(&w, 10 * RP_NATS_WINDOW_BYTES);
	ck_assert(rp_nats_win_room(&w, RP_NATS_WINDOW_BYTES));
}

END_TEST

START_TEST(test_window_failures)
{
	RpNatsWin	w;
	uint64_t	a,
				b;

	/*
	 * a lost ack, then the next refused as a wrong sequence: the worst (lost)
	 * is kept
	 */
	rp_nats_win_reset(&w, 8, 0);
	a = rp_nats_win_send(&w);
	b = rp_nats_win_send(&w);
	ck_assert_uint_eq(a, 0);	/* an empty stream's expectation is 0 */
	rp_nats_win_nak(&w, RP_NATS_ST_LOST, 0, NULL);
	rp_nats_win_nak(&w, RP_NATS_ST_ANSWER, 10071, "wrong last sequence: 0");
	ck_assert_int_eq(w.failure, RP_NATS_FAIL_RETRY);
	ck_assert_int_eq(w.in_flight, 0);
	(void) b;

	/* an ack at another sequence, or a duplicate, is not as intended */
	rp_nats_win_reset(&w, 8, 5);
	a = rp_nats_win_send(&w);
	rp_nats_win_ack(&w, a, 9, false);
	ck_assert_int_eq(w.failure, RP_NATS_FAIL_SEQUENCE);
	rp_nats_win_reset(&w, 8, 5);
	a = rp_nats_win_send(&w);
	rp_nats_win_ack(&w, a, 6, true);
	ck_assert_int_eq(w.failure, RP_NATS_FAIL_SEQUENCE);
	ck_assert_uint_eq(w.acked, 0);

	/* a publish call that failed gives its sequence back */
	rp_nats_win_reset(&w, 8, 5);
	a = rp_nats_win_send(&w);
	rp_nats_win_unsend(&w, RP_NATS_FAIL_RETRY, RP_NATS_ST_LOST);
	ck_assert_uint_eq(w.last_seq, 5);
	ck_assert_int_eq(w.in_flight, 0);

	/* a full stream wins over a retry; a refusal over everything */
	rp_nats_win_reset(&w, 8, 5);
	rp_nats_win_send(&w);
	rp_nats_win_send(&w);
	rp_nats_win_send(&w);
	rp_nats_win_nak(&w, RP_NATS_ST_ANSWER, 10077, "maximum bytes exceeded");
	rp_nats_win_nak(&w, RP_NATS_ST_LOST, 0, NULL);
	ck_assert_int_eq(w.failure, RP_NATS_FAIL_FULL);
	ck_assert_int_eq(w.err_code, 10077);
	rp_nats_win_nak(&w, RP_NATS_ST_ANSWER, 10054, "message size exceeds maximum allowed");
	ck_assert_int_eq(w.failure, RP_NATS_FAIL_FATAL);
}

END_TEST

START_TEST(test_classify)
{
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_ANSWER, 10071, "wrong last sequence: 7"), RP_NATS_FAIL_SEQUENCE);
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_ANSWER, 10077, "maximum messages exceeded"), RP_NATS_FAIL_FULL);
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_ANSWER, 10077, "storage failed"), RP_NATS_FAIL_RETRY);
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_ANSWER, 10076, "no responders"), RP_NATS_FAIL_RETRY);
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_LOST, 0, NULL), RP_NATS_FAIL_RETRY);
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_ANSWER, 10054, NULL), RP_NATS_FAIL_FATAL);
	ck_assert_int_eq(rp_nats_classify(RP_NATS_ST_REFUSED, 0, NULL), RP_NATS_FAIL_FATAL);
}

END_TEST

/*
 * Fencing: a tail that moved since the writer knew it halts the writer when
 * another writer wrote it, except the messages of the writer it found at
 * its start (a predecessor killed with publishes in flight: they land
 * late; test/t/600_differential.pl seed 697467 halted on them).
 */
START_TEST(test_fence_verdict)
{
	/* the tail where this writer knew it, empty, or its own */
	ck_assert_int_eq(rp_nats_fence_verdict(7, 7, "w1", "w2", "w1"), RP_NATS_FENCE_NONE);
	ck_assert_int_eq(rp_nats_fence_verdict(0, 7, "", "w2", "w1"), RP_NATS_FENCE_NONE);
	ck_assert_int_eq(rp_nats_fence_verdict(9, 7, "w2", "w2", "w1"), RP_NATS_FENCE_NONE);
	/* the predecessor's late messages: resume after them */
	ck_assert_int_eq(rp_nats_fence_verdict(9, 7, "w1", "w2", "w1"), RP_NATS_FENCE_LATE);

	/*
	 * anyone else's: fenced; a writer that found an empty stream has no
	 * predecessor
	 */
	ck_assert_int_eq(rp_nats_fence_verdict(9, 7, "w3", "w2", "w1"), RP_NATS_FENCE_OTHER);
	ck_assert_int_eq(rp_nats_fence_verdict(9, 7, "w1", "w2", ""), RP_NATS_FENCE_OTHER);
	/* the zombie predecessor meets its successor's messages: fenced */
	ck_assert_int_eq(rp_nats_fence_verdict(12, 9, "w2", "w1", "w0"), RP_NATS_FENCE_OTHER);
}

END_TEST

/* The stream registry's key and value (natsio/rp_natsio_reg.c), and its time text. */
START_TEST(test_registry_entry)
{
	RpBuf		b;
	RpNatsioReg r = {true, 1796645970587034969LL, "cdc_1"};
	RpNatsioReg back;
	char		t[48];

	rp_buf_init(&b, 16);
	rp_natsio_reg_key(&b, "REPLICANT_cdc-1");
	ck_assert_str_eq(b.data, "REPLICANT_cdc-1");

	/*
	 * a key allows [-/_=.A-Za-z0-9]: anything else, '=' and '.' included, one
	 * to one as =XX
	 */
	rp_natsio_reg_key(&b, "a.b=c/d\xc3\xa9");
	ck_assert_str_eq(b.data, "a=2Eb=3Dc=2Fd=C3=A9");

	rp_natsio_reg_format(&b, &r);
	ck_assert_str_eq(b.data, "{\"slot\":\"cdc_1\",\"created\":1796645970587034969}");
	ck_assert(rp_natsio_reg_parse(b.data, b.len - 1, &back));
	ck_assert(back.found);
	ck_assert_str_eq(back.slot, "cdc_1");
	ck_assert(back.created == r.created);
	/* member order and spacing are free; a missing or mistyped member is not */
	ck_assert(rp_natsio_reg_parse("{ \"created\": 5, \"slot\": \"s\" }", 29, &back));
	ck_assert(back.created == 5 && strcmp(back.slot, "s") == 0);
	ck_assert(!rp_natsio_reg_parse("{\"slot\":\"s\"}", 12, &back));
	ck_assert(!back.found);
	ck_assert(!rp_natsio_reg_parse("{\"slot\":1,\"created\":5}", 22, &back));
	ck_assert(!rp_natsio_reg_parse("{\"slot\":\"s\",\"created\":5.5}", 26, &back));
	ck_assert(!rp_natsio_reg_parse("not json", 8, &back));
	/* the parse reports through its return, never as a pending error */
	ck_assert_int_eq(rp_error_halt(), RP_HALT_NONE);
	rp_buf_free(&b);

	rp_natsio_time_text(1796645970587034969LL, t, sizeof(t));
	ck_assert_str_eq(t, "2026-12-07T12:19:30.587034969Z");
}

END_TEST

Suite	   *
ct_suite_nats(void)
{
	Suite	   *s = suite_create("nats");
	TCase	   *tc = tcase_create("nats");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_subject_escape);
	tcase_add_test(tc, test_subject_tokens);
	tcase_add_test(tc, test_control_subject);
	tcase_add_test(tc, test_msg_id_and_headers);
	tcase_add_test(tc, test_tail_roundtrip);
	tcase_add_test(tc, test_tail_kinds);
	tcase_add_test(tc, test_window_in_order);
	tcase_add_test(tc, test_window_bytes);
	tcase_add_test(tc, test_window_failures);
	tcase_add_test(tc, test_classify);
	tcase_add_test(tc, test_fence_verdict);
	tcase_add_test(tc, test_registry_entry);
	suite_add_tcase(s, tc);
	return s;
}
