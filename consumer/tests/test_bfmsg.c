/*
 * test_bfmsg.c
 *    rp_bfmsg: the backfill's watermark messages.  Round trips of low and
 *    high watermarks (large relid and chunk numbers), the exact text, the
 *    chunk identity (run, table, chunk; the mark aside), and refusal of
 *    anything the formatter would not write: other versions and marks,
 *    short or upper-case runs, a zero or overflowing relid, leading
 *    zeros, signs, trailing bytes, truncation at every length.
 *    Guarantee: the DBLog window (docs/guarantees.md) opens and closes
 *    only on the current run's own watermarks, and G3 (a damaged
 *    watermark halts rather than being guessed at).
 */
#include "ct_kit.h"

#include "backfill/rp_bfmsg.h"

#define RUN "01890a5d-ac96-774b-bcce-b302099a8057"

static RpBfMsg
msg(RpBfMark mark, uint32_t relid, uint64_t chunk)
{
	RpBfMsg		m;

	memset(&m, 0, sizeof(m));
	m.mark = mark;
	memcpy(m.run, RUN, sizeof(RUN));
	m.relid = relid;
	m.chunk = chunk;
	return m;
}

static bool
parse_str(const char *s, RpBfMsg *m)
{
	return rp_bfmsg_parse((const unsigned char *) s, strlen(s), m);
}

START_TEST(test_roundtrip)
{
	RpBfMsg		in[] = {msg(RP_BF_LOW, 16384, 0), msg(RP_BF_HIGH, 1, 7),
	msg(RP_BF_HIGH, UINT32_MAX, UINT64_MAX)};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
	{
		char text[	256];
		RpBfMsg		out;
		int			n = rp_bfmsg_format(&in[i], text, sizeof(text));

		ck_assert_int_gt(n, 0);
		ck_assert_int_eq((int) strlen(text), n);
		ck_assert_msg(rp_bfmsg_parse((const unsigned char *) text, (size_t) n, &out), "does not parse: %s", text);
		ck_assert_int_eq(out.mark, in[i].mark);
		ck_assert_str_eq(out.run, in[i].run);
		ck_assert_uint_eq(out.relid, in[i].relid);
		ck_assert_uint_eq(out.chunk, in[i].chunk);
		ck_assert(rp_bfmsg_same_chunk(&out, &in[i]));
	}
}

END_TEST

START_TEST(test_format)
{
	RpBfMsg		m = msg(RP_BF_LOW, 16384, 3);
	char text[	256];
	char		tiny[20];

	ck_assert_int_gt(rp_bfmsg_format(&m, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":16384,\"chunk\":3}");
	ck_assert_int_eq(rp_bfmsg_format(&m, tiny, sizeof(tiny)), -1);
}

END_TEST

START_TEST(test_same_chunk)
{
	RpBfMsg		low = msg(RP_BF_LOW, 5, 2);
	RpBfMsg		high = msg(RP_BF_HIGH, 5, 2);
	RpBfMsg		other;

	ck_assert(rp_bfmsg_same_chunk(&low, &high));
	other = msg(RP_BF_HIGH, 5, 3);
	ck_assert(!rp_bfmsg_same_chunk(&low, &other));
	other = msg(RP_BF_HIGH, 6, 2);
	ck_assert(!rp_bfmsg_same_chunk(&low, &other));
	other = msg(RP_BF_HIGH, 5, 2);
	other.run[0] = '1';
	ck_assert(!rp_bfmsg_same_chunk(&low, &other));
}

END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"",
		"{}",
		"{\"v\":2,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"mid\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"01890a5d\",\"relid\":1,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"01890A5D-AC96-774B-BCCE-B302099A8057\",\"relid\":1,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":0,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":4294967296,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":01,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":-1,\"chunk\":0}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":18446744073709551616}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":}",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":0} ",
		"{\"v\":1,\"mark\":\"low\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":0}x",
		"{\"mark\":\"low\",\"v\":1,\"run\":\"" RUN "\",\"relid\":1,\"chunk\":0}",
	};
	const char *good = "{\"v\":1,\"mark\":\"high\",\"run\":\"" RUN "\",\"relid\":1,\"chunk\":10}";
	RpBfMsg		m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!parse_str(bad[i], &m), "accepted: %s", bad[i]);
	ck_assert(parse_str(good, &m));
	/* every proper prefix is refused */
	for (size_t n = 0; n < strlen(good); n++)
		ck_assert_msg(!rp_bfmsg_parse((const unsigned char *) good, n, &m), "accepted a prefix of %zu bytes", n);
}

END_TEST

Suite	   *
ct_suite_bfmsg(void)
{
	Suite	   *s = suite_create("bfmsg");
	TCase	   *tc = tcase_create("core");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_same_chunk);
	tcase_add_test(tc, test_malformed);
	suite_add_tcase(s, tc);
	return s;
}
