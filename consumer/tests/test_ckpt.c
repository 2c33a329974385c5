/*
 * test_ckpt.c
 *    Checkpoints (consumer/base/rp_ckpt.c): the checkpoint line format, the
 *    library-owned file written atomically (G1/G2), the binding of a
 *    checkpoint to its source (G3: another system id or slot halts with
 *    both values named; timelines are test_tlhist.c's), a checkpoint ahead of the server's WAL
 *    (G3: halts naming both positions), the status update that never
 *    reports a position past what the server sent (G2), and LSN text.
 */
#include "ct_kit.h"
#include "stream/rp_conn.h"

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

static RpCheckpoint
mk(uint64_t sysid, uint32_t tli, const char *slot, uint64_t c, uint64_t e)
{
	RpCheckpoint ck;

	memset(&ck, 0, sizeof(ck));
	ck.system_id = sysid;
	ck.timeline = tli;
	snprintf(ck.slot, sizeof(ck.slot), "%s", slot);
	ck.commit_lsn = c;
	ck.end_lsn = e;
	return ck;
}

static void
expect_same(const RpCheckpoint *a, const RpCheckpoint *b)
{
	ck_assert_uint_eq(a->system_id, b->system_id);
	ck_assert_uint_eq(a->timeline, b->timeline);
	ck_assert_str_eq(a->slot, b->slot);
	ck_assert_uint_eq(a->commit_lsn, b->commit_lsn);
	ck_assert_uint_eq(a->end_lsn, b->end_lsn);
}

/* ---- LSNs ----------------------------------------------------------------------- */

START_TEST(test_lsn_format_parse)
{
	const struct
	{
		uint64_t	lsn;
		const char *text;
	}			cases[] = {
		{0, "0/0"},
		{0x16B374D848ULL, "16/B374D848"},
		{0x1000000, "0/1000000"},
		{0xFFFFFFFFFFFFFFFFULL, "FFFFFFFF/FFFFFFFF"},
		{0x100000000ULL, "1/0"},
	};
	char		buf[24];
	uint64_t	v;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		rp_lsn_format(cases[i].lsn, buf);
		ck_assert_str_eq(buf, cases[i].text);
		ck_assert(rp_lsn_parse(cases[i].text, &v));
		ck_assert_uint_eq(v, cases[i].lsn);
	}
	/* lower case and leading zeros are accepted, as PostgreSQL does */
	ck_assert(rp_lsn_parse("16/b374d848", &v));
	ck_assert_uint_eq(v, 0x16B374D848ULL);
	ck_assert(rp_lsn_parse("00000016/0000000A", &v));
	ck_assert_uint_eq(v, 0x160000000AULL);
	/* a pseudo-random walk round-trips */
	v = 1;
	for (int i = 0; i < 1000; i++)
	{
		uint64_t	back;

		v = v * 6364136223846793005ULL + 1442695040888963407ULL;
		rp_lsn_format(v, buf);
		ck_assert(rp_lsn_parse(buf, &back));
		ck_assert_uint_eq(back, v);
	}
}

END_TEST

START_TEST(test_lsn_garbage)
{
	const char *bad[] = {
		"", "/", "0/", "/0", "0", "16B374D848", "x/1", "1/x", "1-2", "1//2",
		"0/16B374D848junk", "0/1 ", " 0/1", "-1/0", "+1/0", "0x1/0", "1/0x2",
		"123456789/0", "0/123456789", "1/2/3", "g/0", "0/-1",
	};
	uint64_t	v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		v = 12345;
		ck_assert_msg(!rp_lsn_parse(bad[i], &v), "accepted \"%s\" as %llX", bad[i],
					  (unsigned long long) v);
	}
}

END_TEST

/* ---- lines --------------------------------------------------------------------- */

START_TEST(test_format_parse_roundtrip)
{
	RpCheckpoint cases[4];
	char		slot63[64];
	char		line[512];
	RpCheckpoint back;

	memset(slot63, 'z', 63);
	slot63[63] = '\0';
	cases[0] = mk(7412345678901234567ULL, 1, "replicant", 0x16B374D848ULL, 0x16B374D878ULL);
	cases[1] = mk(0, 0, "s", 0, 0);
	cases[2] = mk(UINT64_MAX, UINT32_MAX, slot63, UINT64_MAX, UINT64_MAX);
	cases[3] = mk(1, 7, "slot_with_underscores_123", 0x100, 0x2000000000ULL);
	for (int i = 0; i < 4; i++)
	{
		int			n = rp_ckpt_format(&cases[i], line, sizeof(line));

		ck_assert_int_gt(n, 0);
		ck_assert_int_eq((size_t) n, strlen(line));
		ck_assert_msg(strncmp(line, "replicant-checkpoint v1 ", 24) == 0, "%s", line);
		ck_assert_msg(rp_ckpt_parse(line, &back), "did not parse: %s", line);
		expect_same(&back, &cases[i]);
	}
	rp_ckpt_format(&cases[0], line, sizeof(line));
	ck_assert_str_eq(line, "replicant-checkpoint v1 sysid=7412345678901234567 tli=1 "
					 "slot=replicant commit=16/B374D848 end=16/B374D878");
	/* a trailing newline (as read from the file) is fine */
	strcat(line, "\n");
	ck_assert(rp_ckpt_parse(line, &back));
	expect_same(&back, &cases[0]);
}

END_TEST

START_TEST(test_parse_garbage)
{
	const char *bad[] = {
		"",
		"\n",
		"garbage",
		"replicant-checkpoint",
		"replicant-checkpoint v2 sysid=1 tli=1 slot=s commit=0/1 end=0/2",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=s commit=0/1",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=s end=0/2 commit=0/1",
		"replicant-checkpoint v1 sysid=x tli=1 slot=s commit=0/1 end=0/2",
		"replicant-checkpoint v1 sysid=1 tli=one slot=s commit=0/1 end=0/2",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=s commit=zz end=0/2",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=s commit=0/1 end=0/2zz",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=s commit=0/1junk end=0/2",
		"replicant-checkpoint v1 sysid=-1 tli=1 slot=s commit=0/1 end=0/2",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=s commit=0/1 end=0/2 extra",
		"replicant-checkpoint v1 sysid=1 tli=1 slot= commit=0/1 end=0/2",
		"replicant-checkpoint v1 sysid=1 tli=1 slot=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa commit=0/1 end=0/2",
		"{\"kind\":\"checkpoint\"}",
	};
	RpCheckpoint ck;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!rp_ckpt_parse(bad[i], &ck), "accepted: %s", bad[i]);
}

END_TEST

/* ---- the file ------------------------------------------------------------------- */

START_TEST(test_write_read_roundtrip)
{
	const char *path = ct_path("slot.checkpoint");
	RpCheckpoint a = mk(99, 3, "replicant", 0x1000, 0x1028);
	RpCheckpoint b = mk(99, 3, "replicant", 0x2000, 0x2028);
	RpCheckpoint back;
	struct stat sb;
	char	   *text;

	/* no file yet */
	ck_assert_int_eq(rp_ckpt_read(path, &back), 0);
	ck_assert_int_eq(rp_ckpt_write(path, &a), 0);
	ck_assert_int_eq(rp_ckpt_read(path, &back), 1);
	expect_same(&back, &a);
	/* replaced, never appended; no temp file left behind */
	ck_assert_int_eq(rp_ckpt_write(path, &b), 0);
	ck_assert_int_eq(rp_ckpt_read(path, &back), 1);
	expect_same(&back, &b);
	text = ct_slurp(path, NULL);

	ck_assert_int_eq(ct_count(text, "replicant-checkpoint"), 1);
	ck_assert_int_eq(ct_count(text, "\n"), 1);
	ck_assert_msg(strstr(text, "commit=0/2000 end=0/2028\n") != NULL, "%s", text);
	free(text);
	ck_assert_int_eq(ct_count_entries(ct_dir, ""), 1);
	ck_assert(!ct_exists(ct_path("slot.checkpoint.tmp")));
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0077, 0);
}

END_TEST

START_TEST(test_write_replaces_stale_tmp)
{
	/* a temp file left by a crash mid-write does not get in the way */
	const char *path = ct_path("c");
	RpCheckpoint a = mk(1, 1, "s", 1, 2);
	RpCheckpoint back;

	ct_write_file(ct_path("c.tmp"), "half a line", 11, false);
	ck_assert_int_eq(rp_ckpt_read(path, &back), 0);
	ck_assert_int_eq(rp_ckpt_write(path, &a), 0);
	ck_assert(!ct_exists(ct_path("c.tmp")));
	ck_assert_int_eq(rp_ckpt_read(path, &back), 1);
	expect_same(&back, &a);
}

END_TEST

START_TEST(test_read_garbage_file)
{
	const char *path = ct_path("bad.checkpoint");
	RpCheckpoint back;

	ct_write_file(path, "not a checkpoint\n", 17, false);
	rp_error_clear();
	ck_assert_int_eq(rp_ckpt_read(path, &back), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
	ck_assert_msg(strstr(rp_error(), "bad.checkpoint") != NULL, "%s", rp_error());

	/* empty */
	ct_write_file(path, "", 0, false);
	ck_assert_int_eq(rp_ckpt_read(path, &back), -1);

	/* a directory where the file should be */
	ck_assert_int_eq(mkdir(ct_path("dir.checkpoint"), 0700), 0);
	ck_assert_int_eq(rp_ckpt_read(ct_path("dir.checkpoint"), &back), -1);
}

END_TEST

START_TEST(test_write_error)
{
	RpCheckpoint a = mk(1, 1, "s", 1, 2);

	rp_error_clear();
	ck_assert_int_eq(rp_ckpt_write(ct_path("missing/dir/c"), &a), -1);
	ck_assert_msg(strstr(rp_error(), "missing/dir/c") != NULL, "%s", rp_error());
}

END_TEST

/* ---- source identity --------------------------------------------------------------- */

START_TEST(test_check_source)
{
	RpCheckpoint ck = mk(7412345678901234567ULL, 2, "replicant", 0x10, 0x20);

	rp_error_clear();
	ck_assert_int_eq(rp_ckpt_check_source(&ck, 7412345678901234567ULL, "replicant"), 0);

	ck_assert_int_eq(rp_ckpt_check_source(&ck, 7412345678901234999ULL, "replicant"), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
	ck_assert_msg(strstr(rp_error(), "7412345678901234567") && strstr(rp_error(), "7412345678901234999"),
				  "both system ids must be named: %s", rp_error());

	rp_error_clear();
	ck_assert_int_eq(rp_ckpt_check_source(&ck, 7412345678901234567ULL, "other_slot"), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
	ck_assert_msg(strstr(rp_error(), "\"replicant\"") && strstr(rp_error(), "\"other_slot\""),
				  "both slots must be named: %s", rp_error());

	/* a slot name that only shares a prefix is another slot */
	rp_error_clear();
	ck_assert_int_eq(rp_ckpt_check_source(&ck, 7412345678901234567ULL, "replicant2"), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
}

END_TEST

/* ---- ahead of the server (issue 11: an edited checkpoint confirmed the slot at FFFF/0) ---- */

START_TEST(test_check_position)
{
	RpCheckpoint ck = mk(1, 1, "s", 0x5731000, 0x5731090);

	rp_error_clear();
	/* at or behind the server's flush position: fine */
	ck_assert_int_eq(rp_ckpt_check_position(&ck, 0x5731090), 0);
	ck_assert_int_eq(rp_ckpt_check_position(&ck, 0xFFFF00000000ULL), 0);
	/* a checkpoint that never held a position */
	ck = mk(1, 1, "s", 0, 0);
	ck_assert_int_eq(rp_ckpt_check_position(&ck, 0), 0);

	/* the end past the server */
	ck = mk(1, 1, "s", 0x5731000, 0xFFFF00000000ULL);
	ck_assert_int_eq(rp_ckpt_check_position(&ck, 0x5731090), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
	ck_assert_msg(strstr(rp_error(), "FFFF/0") && strstr(rp_error(), "0/5731090") &&
				  strstr(rp_error(), "ahead of the server"), "both positions must be named: %s", rp_error());
	/* one byte past */
	rp_error_clear();
	ck = mk(1, 1, "s", 0x5731000, 0x5731091);
	ck_assert_int_eq(rp_ckpt_check_position(&ck, 0x5731090), -1);
	/* the commit past the server (the end edited back, the commit not) */
	rp_error_clear();
	ck = mk(1, 1, "s", 0xFFFF00000000ULL, 0x10);
	ck_assert_int_eq(rp_ckpt_check_position(&ck, 0x5731090), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IDENTITY);
}

END_TEST

static uint64_t
field(const unsigned char m[34], int f)
{
	uint64_t	v = 0;

	for (int b = 0; b < 8; b++)
		v = (v << 8) | m[1 + f * 8 + b];
	return v;
}

START_TEST(test_status_never_past_server)
{
	RpConn		c;
	unsigned char m[34];

	memset(&c, 0, sizeof(c));
	c.server_wal_end = 0x5731090;
	c.received_lsn = 0x5731000;

	/* behind what the server sent: reported as is */
	rp_conn_status_message(&c, 0x5730000, true, 0, m);
	ck_assert_int_eq(m[0], 'r');
	ck_assert_uint_eq(field(m, 0), 0x5731000);	/* write = received */
	ck_assert_uint_eq(field(m, 1), 0x5730000);	/* flush */
	ck_assert_uint_eq(field(m, 2), 0x5730000);	/* apply */
	ck_assert_int_eq(m[33], 1);

	/* a durable position past the server's WAL end is never reported */
	rp_conn_status_message(&c, 0xFFFF00000000ULL, false, 0, m);
	ck_assert_uint_eq(field(m, 0), 0x5731090);
	ck_assert_uint_eq(field(m, 1), 0x5731090);
	ck_assert_uint_eq(field(m, 2), 0x5731090);
	ck_assert_int_eq(m[33], 0);

	/* nor a received position past it (-I beyond the server's WAL) */
	c.received_lsn = 0xFFFF00000000ULL;
	rp_conn_status_message(&c, 0x10, false, 0, m);
	ck_assert_uint_eq(field(m, 0), 0x5731090);
	ck_assert_uint_eq(field(m, 1), 0x10);
}

END_TEST

Suite	   *
ct_suite_ckpt(void)
{
	Suite	   *s = suite_create("ckpt");
	TCase	   *tc = tcase_create("ckpt");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lsn_format_parse);
	tcase_add_test(tc, test_lsn_garbage);
	tcase_add_test(tc, test_format_parse_roundtrip);
	tcase_add_test(tc, test_parse_garbage);
	tcase_add_test(tc, test_write_read_roundtrip);
	tcase_add_test(tc, test_write_replaces_stale_tmp);
	tcase_add_test(tc, test_read_garbage_file);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_check_source);
	tcase_add_test(tc, test_check_position);
	tcase_add_test(tc, test_status_never_past_server);
	suite_add_tcase(s, tc);
	return s;
}
