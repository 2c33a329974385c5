/*
 * test_snapresume.c
 *    rp_snapresume: the log sinks' snapshot progress file.  Round trips
 *    (no table done, several), the exact text, refusal of malformed text
 *    (wrong header, bad LSN, a done line before the offset, a zero or
 *    overflowing relid, a missing newline, an unknown line), the tokens it
 *    hands the snapshot (a done table is skipped; a table not done gets a
 *    token with no dump, so it is copied again whole; no progress: no
 *    token), and the file written and read back atomically, then removed.
 *    Guarantee: G1 (a resumed dump keeps what was delivered and redoes
 *    the rest) and G3 (a damaged progress file stops the resume).
 */
#include "ct_kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sinks/log/rp_snapresume.h"
#include "snapshot/rp_snaptoken.h"

START_TEST(test_roundtrip)
{
	RpSnapResume a,
				b;
	char	   *text;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	rp_snapresume_note(&a, UINT64_C(0x16B3748), 0);
	a.offset = 12345;
	text = rp_snapresume_format(&a);

	ck_assert_str_eq(text, "replicant-snapshot-progress 1\nlsn 0/16B3748\noffset 12345\n");
	ck_assert(rp_snapresume_parse(text, &b));
	ck_assert(b.have);
	ck_assert_uint_eq(b.lsn, a.lsn);
	ck_assert_uint_eq(b.offset, 12345);
	ck_assert_int_eq(b.ndone, 0);
	rp_free(text);

	rp_snapresume_note(&a, 999, 16384); /* the first consistent point stays */
	rp_snapresume_note(&a, 999, 16390);
	rp_snapresume_note(&a, 999, 16384); /* once */
	ck_assert_uint_eq(a.lsn, UINT64_C(0x16B3748));
	ck_assert_int_eq(a.ndone, 2);
	text = rp_snapresume_format(&a);

	ck_assert_str_eq(text, "replicant-snapshot-progress 1\nlsn 0/16B3748\noffset 12345\ndone 16384\ndone 16390\n");
	ck_assert(rp_snapresume_parse(text, &b));
	ck_assert_int_eq(b.ndone, 2);
	ck_assert(rp_snapresume_is_done(&b, 16384));
	ck_assert(rp_snapresume_is_done(&b, 16390));
	ck_assert(!rp_snapresume_is_done(&b, 16385));
	rp_free(text);
	rp_snapresume_free(&a);
	rp_snapresume_free(&b);
}

END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"",
		"replicant-snapshot-progress 2\nlsn 0/1\noffset 0\n",
		"replicant-snapshot-progress 1\nlsn 0/1\n",
		"replicant-snapshot-progress 1\nlsn x/1\noffset 0\n",
		"replicant-snapshot-progress 1\nlsn 0/1\noffset -1\n",
		"replicant-snapshot-progress 1\nlsn 0/1\noffset 0\ndone 0\n",
		"replicant-snapshot-progress 1\nlsn 0/1\noffset 0\ndone 4294967296\n",
		"replicant-snapshot-progress 1\nlsn 0/1\noffset 0\ndone 12",
		"replicant-snapshot-progress 1\nlsn 0/1\ndone 12\noffset 0\n",
		"replicant-snapshot-progress 1\nlsn 0/1\noffset 0\nrow {\"id\":1}\n",
		"replicant-snapshot-progress 1\nlsn 0/1\nlsn 0/2\noffset 0\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		RpSnapResume r;

		memset(&r, 0, sizeof(r));
		ck_assert_msg(!rp_snapresume_parse(bad[i], &r), "accepted: %s", bad[i]);
		ck_assert(!r.have);
		rp_snapresume_free(&r);
	}
}

END_TEST

START_TEST(test_tokens)
{
	RpSnapResume r;
	RpSnapToken tok;
	char	   *token = NULL;

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(rp_snapresume_token(&r, 16384, &token), 0);	/* nothing stopped */
	rp_snapresume_note(&r, 0x5000, 16384);
	ck_assert_int_eq(rp_snapresume_token(&r, 16384, &token), 1);
	ck_assert(rp_snaptoken_parse(token, &tok));
	ck_assert(tok.done);
	ck_assert_uint_eq(tok.lsn, 0x5000);
	rp_snaptoken_free(&tok);
	rp_free(token);
	ck_assert_int_eq(rp_snapresume_token(&r, 16400, &token), 1);
	ck_assert(rp_snaptoken_parse(token, &tok));

	/*
	 * not done: no dump, no rows, no key (rp_snapshot.c copies it whole,
	 * anew)
	 */
	ck_assert(!tok.done);
	ck_assert_uint_eq(tok.lsn, 0x5000);
	ck_assert_str_eq(tok.snapshot_id, "");
	ck_assert_uint_eq(tok.rows, 0);
	ck_assert_int_eq(tok.nkeys, 0);
	ck_assert(!tok.heap);
	rp_snaptoken_free(&tok);
	rp_free(token);
	rp_snapresume_free(&r);
}

END_TEST

START_TEST(test_file)
{
	char		dir[] = "/tmp/ct-snapresume.XXXXXX";
	char		path[256];
	RpSnapResume w,
				r;
	FILE	   *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/slot.snapshot", dir);
	ck_assert_int_eq(rp_snapresume_open(&w, path), 0);
	ck_assert(!w.have);			/* no file yet */
	rp_snapresume_note(&w, 0x7000, 0);
	w.offset = 77;
	ck_assert_int_eq(rp_snapresume_store(&w), 0);
	rp_snapresume_note(&w, 0x7000, 16500);
	ck_assert_int_eq(rp_snapresume_store(&w), 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(rp_snapresume_open(&r, path), 0);
	ck_assert(r.have);
	ck_assert_uint_eq(r.lsn, 0x7000);
	ck_assert_uint_eq(r.offset, 77);
	ck_assert(rp_snapresume_is_done(&r, 16500));
	rp_snapresume_free(&r);
	ck_assert_int_eq(rp_snapresume_clear(&w), 0);
	ck_assert_int_ne(access(path, F_OK), 0);
	ck_assert_int_eq(rp_snapresume_clear(&w), 0);	/* gone already: fine */
	rp_snapresume_free(&w);

	/* damaged: refused, naming the file */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("replicant-snapshot-progress 1\nlsn 0/", f);
	fclose(f);
	ck_assert_int_eq(rp_snapresume_open(&r, path), -1);
	ck_assert_ptr_nonnull(strstr(rp_error(), "is damaged"));
	rp_snapresume_free(&r);
	unlink(path);
	rmdir(dir);
}

END_TEST

Suite	   *
ct_suite_snapresume(void)
{
	Suite	   *s = suite_create("snapresume");
	TCase	   *tc = tcase_create("core");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_tokens);
	tcase_add_test(tc, test_file);
	suite_add_tcase(s, tc);
	return s;
}
