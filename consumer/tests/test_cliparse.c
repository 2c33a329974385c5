/*
 * test_cliparse.c
 *    rp_cliparse: the command line's sizes, integers and booleans, and
 *    whether the plugin options let the backfill's watermarks through.
 *    Guarantee (G3, G5): a negative, overflowing or out-of-range size is
 *    refused, never taken as a huge limit; a --backfill whose watermarks
 *    the plugin would filter out is refused at start (it would wait for
 *    ever), with every spelling of false the server's parse_bool accepts.
 */
#include "ct_kit.h"

#include "cli/rp_cliparse.h"

#define BIG ((uint64_t) 1 << 50)

START_TEST(test_size_valid)
{
	uint64_t	v;

	ck_assert(rp_parse_size("1048576", 1, BIG, &v));
	ck_assert_uint_eq(v, 1048576);
	ck_assert(rp_parse_size("512kB", 1, BIG, &v));
	ck_assert_uint_eq(v, 512 << 10);
	ck_assert(rp_parse_size("64MB", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 64 << 20);
	ck_assert(rp_parse_size("64mb", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 64 << 20);
	ck_assert(rp_parse_size("1GB", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 1 << 30);
	ck_assert(rp_parse_size("2TB", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 2 << 40);
	ck_assert(rp_parse_size("7B", 1, BIG, &v));
	ck_assert_uint_eq(v, 7);
	/* the bounds themselves are in range */
	ck_assert(rp_parse_size("1024TB", 1, BIG, &v));
	ck_assert_uint_eq(v, BIG);
	ck_assert(rp_parse_size("1GB", 1, (uint64_t) 1 << 30, &v));
	/* the whole 64-bit range when the caller allows it */
	ck_assert(rp_parse_size("18446744073709551615", 0, UINT64_MAX, &v));
	ck_assert_uint_eq(v, UINT64_MAX);
}
END_TEST

START_TEST(test_size_refused)
{
	static const char *const bad[] = {
		"", "-5MB", "-1", "+1", " 1", "1 ", "1MB ", "MB", "1XB", "1M", "1.5GB", "0x10",
		"1kBB", "18446744073709551616", "99999999999999999999", "99999999999TB",
		"16777216TB",			/* 2^24 TB = 2^64: the shift overflows */
		"17179869184GB",		/* 2^34 GB = 2^64 */
		"0",					/* below min 1 */
		"1025TB",				/* above max */
	};
	uint64_t	v = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!rp_parse_size(bad[i], 1, BIG, &v), "\"%s\" was accepted", bad[i]);
	ck_assert_uint_eq(v, 42);	/* untouched on failure */
	ck_assert(!rp_parse_size(NULL, 1, BIG, &v));
	/* --batch-bytes' bound */
	ck_assert(!rp_parse_size("1025MB", 1, (uint64_t) 1 << 30, &v));
	ck_assert(!rp_parse_size("1073741825", 1, (uint64_t) 1 << 30, &v));
	/* a shift that keeps every bit is no overflow */
	ck_assert(rp_parse_size("16777215TB", 0, UINT64_MAX, &v));
	ck_assert_uint_eq(v, (uint64_t) 16777215 << 40);
}
END_TEST

START_TEST(test_int)
{
	int			v = 7;

	ck_assert(rp_parse_int("0", 0, 10, &v));
	ck_assert_int_eq(v, 0);
	ck_assert(rp_parse_int("10", 0, 10, &v));
	ck_assert_int_eq(v, 10);
	ck_assert(rp_parse_int("-3", -5, 5, &v));
	ck_assert_int_eq(v, -3);
	ck_assert(rp_parse_int("2147483647", 0, INT32_MAX, &v));
	ck_assert_int_eq(v, INT32_MAX);
	ck_assert(rp_parse_int("-2147483648", INT32_MIN, 0, &v));
	ck_assert_int_eq(v, INT32_MIN);
	v = 7;
	ck_assert(!rp_parse_int("11", 0, 10, &v));
	ck_assert(!rp_parse_int("-1", 0, 10, &v));
	ck_assert(!rp_parse_int("", 0, 10, &v));
	ck_assert(!rp_parse_int("-", 0, 10, &v));
	ck_assert(!rp_parse_int(" 1", 0, 10, &v));
	ck_assert(!rp_parse_int("+1", 0, 10, &v));
	ck_assert(!rp_parse_int("1x", 0, 10, &v));
	ck_assert(!rp_parse_int("2147483648", 0, INT32_MAX, &v));
	ck_assert(!rp_parse_int("4294967297", 0, INT32_MAX, &v));	/* wraps to 1 in 32 bits */
	ck_assert(!rp_parse_int("99999999999999999999", 0, INT32_MAX, &v));
	ck_assert(!rp_parse_int("-2147483649", INT32_MIN, 0, &v));
	ck_assert_int_eq(v, 7);
}
END_TEST

START_TEST(test_bool)
{
	static const char *const yes[] = {"true", "TRUE", "t", "tr", "tru", "yes", "Y", "ye", "on", "ON", "1"};
	static const char *const no[] = {"false", "FALSE", "f", "fa", "fal", "fals", "no", "N", "off", "OFF",
	"of", "0"};
	static const char *const neither[] = {"", "o", "2", "truee", "yess", "offf", "nope", "01", " on",
	"on ", "-1", "enable"};
	bool		v;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(rp_parse_bool(yes[i], &v) && v, "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(rp_parse_bool(no[i], &v) && !v, "%s", no[i]);
	for (size_t i = 0; i < sizeof(neither) / sizeof(neither[0]); i++)
		ck_assert_msg(!rp_parse_bool(neither[i], &v), "%s", neither[i]);
}
END_TEST

START_TEST(test_messages_pass)
{
	const char *p = "replicant.backfill";

	/* not given, bare (true), or true: every prefix */
	ck_assert_int_eq(rp_messages_pass(NULL, NULL, p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("", NULL, p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("on", NULL, p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("Yes", NULL, p), RP_MSG_PASS_YES);
	/* every spelling of false */
	ck_assert_int_eq(rp_messages_pass("no", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("n", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("f", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("OFF", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("0", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("fAlSe", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("of", "replicant.backfill", p), RP_MSG_PASS_NO);
	/* a value the server refuses is left to it */
	ck_assert_int_eq(rp_messages_pass("maybe", NULL, p), RP_MSG_PASS_UNKNOWN);

	/* message_prefixes, split like SplitIdentifierString */
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant.backfill", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "a, replicant.backfill ,b", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "Replicant.Backfill", p), RP_MSG_PASS_YES);	/* folded */
	ck_assert_int_eq(rp_messages_pass(NULL, "\"replicant.backfill\"", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("true", "x,\"replicant.backfill\"", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "", p), RP_MSG_PASS_YES);	/* empty list: all */
	ck_assert_int_eq(rp_messages_pass(NULL, "  ", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "app", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "app,audit", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"Replicant.backfill\"", p), RP_MSG_PASS_NO);	/* quoted: exact */
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant.backfill2", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant.backfil", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"\"", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"replicant.\"\"backfill\"", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"a\"\"b\",replicant.backfill", p), RP_MSG_PASS_YES);
	/* syntax the server refuses */
	ck_assert_int_eq(rp_messages_pass(NULL, "a,,b", p), RP_MSG_PASS_UNKNOWN);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"unterminated", p), RP_MSG_PASS_UNKNOWN);
	ck_assert_int_eq(rp_messages_pass(NULL, "a b", p), RP_MSG_PASS_UNKNOWN);
	ck_assert_int_eq(rp_messages_pass(NULL, "a,", p), RP_MSG_PASS_UNKNOWN);
}
END_TEST

Suite *
ct_suite_cliparse(void)
{
	Suite	   *s = suite_create("cliparse");
	TCase	   *tc = tcase_create("cliparse");

	tcase_add_test(tc, test_size_valid);
	tcase_add_test(tc, test_size_refused);
	tcase_add_test(tc, test_int);
	tcase_add_test(tc, test_bool);
	tcase_add_test(tc, test_messages_pass);
	suite_add_tcase(s, tc);
	return s;
}
