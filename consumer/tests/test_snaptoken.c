/*
 * test_snaptoken.c
 *    rp_snaptoken: the snapshot progress token a sink stores with each
 *    chunk.  Round trips (no key, one key, a composite key with the
 *    separator, '%', control characters and UTF-8 in its values, an empty
 *    key value), the done flag, and refusal of malformed tokens (wrong
 *    version, bad LSN, negative or non-numeric counts, bad escapes, a NUL
 *    escape, too many keys); the heap-order (v2) form: its relfilenode,
 *    xid horizon and tuple id round trip, an unset position, the exact
 *    text, and refusal of a zero relfilenode or offset, an overflowing
 *    block or offset, a missing field and keys after the position.
 *    Guarantee: G1 (a resumed copy continues exactly after the last
 *    stored chunk) and G3 (a damaged token stops the resume).
 */
#include "ct_kit.h"

#include "snapshot/rp_snaptoken.h"

static void
roundtrip(RpSnapToken *in)
{
	char	   *text = rp_snaptoken_format(in);
	RpSnapToken out;

	ck_assert_msg(rp_snaptoken_parse(text, &out), "does not parse: %s", text);
	ck_assert_uint_eq(out.lsn, in->lsn);
	ck_assert_int_eq(out.done, in->done);
	ck_assert_uint_eq(out.rows, in->rows);
	ck_assert_int_eq(out.at_ms, in->at_ms);
	ck_assert_str_eq(out.snapshot_id, in->snapshot_id);
	ck_assert_int_eq(out.heap, in->heap);
	if (in->heap)
	{
		ck_assert_int_eq(out.nkeys, 0);
		ck_assert_uint_eq(out.filenode, in->filenode);
		ck_assert_uint_eq(out.horizon, in->horizon);
		ck_assert_int_eq(out.have_pos, in->have_pos);
		if (in->have_pos)
		{
			ck_assert_uint_eq(out.blk, in->blk);
			ck_assert_uint_eq(out.off, in->off);
		}
	}
	else
	{
		ck_assert_int_eq(out.nkeys, in->nkeys);
		for (int i = 0; i < in->nkeys; i++)
			ck_assert_str_eq(out.keys[i], in->keys[i]);
	}
	/* the text is one line of printable characters */
	for (const char *p = text; *p; p++)
		ck_assert((unsigned char) *p >= 0x20 && *p != 0x7f);
	rp_snaptoken_free(&out);
	free(text);
}

START_TEST(test_roundtrip)
{
	RpSnapToken t;

	memset(&t, 0, sizeof(t));
	t.lsn = UINT64_C(0x1234ABCD5678);
	t.rows = 0;
	t.at_ms = 1796000523456;
	roundtrip(&t);

	strcpy(t.snapshot_id, "01a22a9c-a2e2-719f-8b34-b92a51dbe663");
	t.done = true;
	t.rows = 5000000;
	t.nkeys = 1;
	t.keys[0] = "123456789";
	roundtrip(&t);

	t.done = false;
	t.nkeys = 4;
	t.keys[0] = "a|b";
	t.keys[1] = "100%";
	t.keys[2] = "tab\there\nnew line \x7f caf\xc3\xa9";
	t.keys[3] = "";
	roundtrip(&t);

	t.at_ms = -5;
	t.lsn = 0;
	roundtrip(&t);
}

END_TEST

START_TEST(test_format)
{
	RpSnapToken t;
	char	   *text;

	memset(&t, 0, sizeof(t));
	t.lsn = UINT64_C(0x100000020);
	t.rows = 42;
	t.at_ms = 7;
	strcpy(t.snapshot_id, "x");
	t.nkeys = 2;
	t.keys[0] = "1";
	t.keys[1] = "a|%";
	text = rp_snaptoken_format(&t);

	ck_assert_str_eq(text, "v1|1/20|0|42|7|x|1|a%7C%25");
	free(text);
}

END_TEST

START_TEST(test_heap)
{
	RpSnapToken t;
	char	   *text;

	memset(&t, 0, sizeof(t));
	t.heap = true;
	t.lsn = UINT64_C(0x100000020);
	t.rows = 3000;
	t.at_ms = 7;
	strcpy(t.snapshot_id, "x");
	t.filenode = 16384;
	t.horizon = UINT64_C(0x1FFFFFFFF);
	roundtrip(&t);				/* no row stored yet */
	text = rp_snaptoken_format(&t);

	ck_assert_str_eq(text, "v2|1/20|0|3000|7|x|16384|8589934591|");
	free(text);

	t.have_pos = true;
	t.blk = 22;
	t.off = 8;
	text = rp_snaptoken_format(&t);

	ck_assert_str_eq(text, "v2|1/20|0|3000|7|x|16384|8589934591|22.8");
	free(text);
	roundtrip(&t);

	t.blk = UINT32_MAX;
	t.off = UINT16_MAX;
	t.filenode = UINT32_MAX;
	t.horizon = UINT64_MAX;
	t.done = true;
	roundtrip(&t);
}

END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"", "v1", "v2|0/1|0|1|2|x", "v1|zz|0|1|2|x", "v1|0/1|2|1|2|x", "v1|0/1|0|-1|2|x",
		"v1|0/1|0|1x|2|x", "v1|0/1|0||2|x", "v1|0/1|0|1|2", "v1|0/1|0|1|2|x|%4", "v1|0/1|0|1|2|x|%ZZ",
		"v1|0/1|0|1|2|x|%00", "v1|0/1|0|1|2|x%41",
		"v1|0/1|0|1|2|0123456789012345678901234567890123456789",
		"v2|0/1|0|1|2|x|0|5|1.1", "v2|0/1|0|1|2|x|16384|5|1.0", "v2|0/1|0|1|2|x|16384|5|4294967296.1",
		"v2|0/1|0|1|2|x|16384|5|1.65536", "v2|0/1|0|1|2|x|16384|5|1", "v2|0/1|0|1|2|x|16384|5|.1",
		"v2|0/1|0|1|2|x|16384|5", "v2|0/1|0|1|2|x|16384||1.1", "v2|0/1|0|1|2|x|16384|-5|1.1",
		"v2|0/1|0|1|2|x|16384|5|1.1|k", "v2|0/1|0|1|2|x|1a|5|1.1",
		"v2|0/1|0|1|2|x|16384|18446744073709551616|1.1", "v3|0/1|0|1|2|x",
	};
	RpSnapToken t;
	RpBuf		many;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!rp_snaptoken_parse(bad[i], &t), "accepted: %s", bad[i]);
	rp_buf_init(&many, 256);
	rp_buf_put_text(&many, "v1|0/1|0|1|2|x");
	for (int i = 0; i <= RP_SNAPTOKEN_MAX_KEYS; i++)
		rp_buf_put_text(&many, "|k");
	rp_buf_put_char(&many, '\0');
	ck_assert(!rp_snaptoken_parse(many.data, &t));
	rp_buf_free(&many);
}

END_TEST

Suite	   *
ct_suite_snaptoken(void)
{
	Suite	   *s = suite_create("snaptoken");
	TCase	   *tc = tcase_create("core");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_heap);
	tcase_add_test(tc, test_malformed);
	suite_add_tcase(s, tc);
	return s;
}
