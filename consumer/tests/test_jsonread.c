/*
 * test_jsonread.c
 *    rp_jsonread: the strict JSON reader behind verify-snapshot.  Escapes
 *    (the eight short ones, \u in the BMP, surrogate pairs, lone surrogates
 *    rejected), UTF-8 validation, nesting (100,000 levels: no depth limit), the number
 *    grammar and int64 extraction, top-level member spans and lookup
 *    (escaped names, duplicates), and a list of malformed texts that must
 *    each be rejected with an offset and a value-free reason.
 *    Guarantee: G3 (what cannot be interpreted is refused, with a reason).
 */
#include "ct_kit.h"

#include "base/rp_jsonread.h"

static RpJrDoc doc;

static void
setup(void)
{
	rp_jr_init(&doc);
	rp_error_clear();
}

static void
teardown(void)
{
	rp_jr_free(&doc);
}

static int
parse(const char *s)
{
	return rp_jr_parse(&doc, s, strlen(s));
}

/* Decode the JSON string literal s; returns a malloc'd C string (NULs kept
 * in *lenp). */
static char *
decode(const char *s, size_t *lenp)
{
	RpBuf		b;
	char	   *r;

	rp_buf_init(&b, 0);
	ck_assert_msg(rp_jr_string(s, strlen(s), &b) == 0, "decode failed: %s", s);
	r = malloc(b.len + 1);
	memcpy(r, b.data, b.len);
	r[b.len] = '\0';
	if (lenp)
		*lenp = b.len;
	rp_buf_free(&b);
	return r;
}

static void
assert_decodes(const char *lit, const char *want, size_t want_len)
{
	size_t		n;
	char	   *got = decode(lit, &n);

	ck_assert_msg(n == want_len && memcmp(got, want, n) == 0, "decoding %s", lit);
	free(got);
	/* and it is valid as a whole text */
	ck_assert_int_eq(parse(lit), 0);
	ck_assert_int_eq(doc.type, RP_JR_STRING);
}

START_TEST(test_escapes)
{
	assert_decodes("\"\"", "", 0);
	assert_decodes("\"plain\"", "plain", 5);
	assert_decodes("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8);
	assert_decodes("\"a\\u0041b\"", "aAb", 3);
	assert_decodes("\"\\u0000\"", "\0", 1); /* NUL is a code point */
	assert_decodes("\"\\u00e9\\u00E9\"", "\xC3\xA9\xC3\xA9", 4);	/* hex of either case */
	assert_decodes("\"\\u07ff\\u0800\"", "\xDF\xBF\xE0\xA0\x80", 5);
	assert_decodes("\"\\u20ac\"", "\xE2\x82\xAC", 3);
	assert_decodes("\"\\uffff\"", "\xEF\xBF\xBF", 3);

	/*
	 * surrogate pairs: U+1D11E, U+1F600, the first and the last supplementary
	 * code points
	 */
	assert_decodes("\"\\ud834\\udd1e\"", "\xF0\x9D\x84\x9E", 4);
	assert_decodes("\"x\\uD83D\\uDE00y\"", "x\xF0\x9F\x98\x80y", 6);
	assert_decodes("\"\\ud800\\udc00\"", "\xF0\x90\x80\x80", 4);
	assert_decodes("\"\\udbff\\udfff\"", "\xF4\x8F\xBF\xBF", 4);
	/* raw UTF-8 passes through */
	assert_decodes("\"na\xC3\xAFve \xE6\x97\xA5 \xF0\x9F\x98\x80\"", "na\xC3\xAFve \xE6\x97\xA5 \xF0\x9F\x98\x80", 15);
	/* DEL and high code points need no escape */
	assert_decodes("\"\x7f\"", "\x7f", 1);
}

END_TEST

START_TEST(test_bad_strings)
{
	static const char *const bad[] = {
		"\"unterminated",
		"\"\\",
		"\"\\\"",
		"\"\\x41\"",			/* no such escape */
		"\"\\'\"",
		"\"\\U0041\"",			/* \U is not \u */
		"\"\\u12\"",			/* short */
		"\"\\u12g4\"",
		"\"\\ud834\"",			/* lone high surrogate */
		"\"\\ud834x\"",
		"\"\\ud834\\u0041\"",	/* high then not low */
		"\"\\ud834\\ud834\"",	/* high then high */
		"\"\\udd1e\"",			/* lone low surrogate */
		"\"\\udd1e\\ud834\"",	/* reversed pair */
		"\"tab\there\"",		/* raw control character */
		"\"nl\nhere\"",
		"\"\x01\"",
		"\"\xC3\"",				/* truncated UTF-8 */
		"\"\xC0\xAF\"",			/* overlong */
		"\"\xE0\x80\xAF\"",		/* overlong */
		"\"\xED\xA0\x80\"",		/* encoded surrogate */
		"\"\xF4\x90\x80\x80\"", /* past U+10FFFF */
		"\"\xFF\"",
		"\"\x80\"",				/* stray continuation byte */
		"'single'",
	};
	RpBuf		b;

	rp_buf_init(&b, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		rp_error_clear();
		ck_assert_msg(parse(bad[i]) == -1, "accepted bad string #%zu", i);
		ck_assert_ptr_nonnull(doc.err.reason);
		ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
		ck_assert_msg(strstr(rp_error(), "invalid JSON at byte") != NULL, "%s", rp_error());
		b.len = 0;
		ck_assert_msg(rp_jr_string(bad[i], strlen(bad[i]), &b) == -1, "decoded bad string #%zu", i);
		ck_assert_uint_eq(b.len, 0);	/* nothing left behind */
	}
	/* a string span with text after its closing quote is not a string span */
	ck_assert_int_eq(rp_jr_string("\"a\"b", 4, &b), -1);
	ck_assert_int_eq(rp_jr_string("x", 1, &b), -1);
	rp_buf_free(&b);
	/* error offsets point at the fault */
	ck_assert_int_eq(parse("\"ab\\q\""), -1);
	ck_assert_uint_eq(doc.err.offset, 3);
	ck_assert_int_eq(parse("  \"ok\x01\""), -1);
	ck_assert_uint_eq(doc.err.offset, 5);
	ck_assert_str_eq(doc.err.reason, "control character in string");
}

END_TEST

START_TEST(test_numbers)
{
	static const char *const good[] = {
		"0", "-0", "1", "-1", "10", "123456789", "0.5", "-0.0", "1.25e10", "1E10", "1e+10",
		"1e-10", "6.02214076E+23", "-9223372036854775808", "18446744073709551616",
		"1.7976931348623157e308", "0e0",
	};
	static const char *const bad[] = {
		"01", "-01", "00", "+1", ".5", "5.", "1.e3", "1e", "1e+", "-", "--1", "0x10", "1_000",
		"NaN", "Infinity", "-Infinity", "1.5.2", "1e5e5", "- 1", "1 2", "١",
	};
	int64_t		v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
	{
		ck_assert_msg(parse(good[i]) == 0, "rejected number %s", good[i]);
		ck_assert_int_eq(doc.type, RP_JR_NUMBER);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse(bad[i]) == -1, "accepted number %s", bad[i]);

	/* integers within int64 */
	ck_assert_int_eq(rp_jr_int64("0", 1, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(rp_jr_int64("-0", 2, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(rp_jr_int64("42", 2, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(rp_jr_int64("-42", 3, &v), 0);
	ck_assert_int_eq(v, -42);
	ck_assert_int_eq(rp_jr_int64("9223372036854775807", 19, &v), 0);
	ck_assert_int_eq(v, INT64_MAX);
	ck_assert_int_eq(rp_jr_int64("-9223372036854775808", 20, &v), 0);
	ck_assert_int_eq(v, INT64_MIN);
	/* out of range, not integers, not numbers */
	ck_assert_int_eq(rp_jr_int64("9223372036854775808", 19, &v), -1);
	ck_assert_int_eq(rp_jr_int64("-9223372036854775809", 20, &v), -1);
	ck_assert_int_eq(rp_jr_int64("99999999999999999999", 20, &v), -1);
	ck_assert_int_eq(rp_jr_int64("1.0", 3, &v), -1);
	ck_assert_int_eq(rp_jr_int64("1e3", 3, &v), -1);
	ck_assert_int_eq(rp_jr_int64("01", 2, &v), -1);
	ck_assert_int_eq(rp_jr_int64("", 0, &v), -1);
	ck_assert_int_eq(rp_jr_int64("-", 1, &v), -1);
	ck_assert_int_eq(rp_jr_int64("\"1\"", 3, &v), -1);
}

END_TEST

START_TEST(test_literals_and_whitespace)
{
	ck_assert_int_eq(parse("true"), 0);
	ck_assert_int_eq(doc.type, RP_JR_TRUE);
	ck_assert_int_eq(parse("false"), 0);
	ck_assert_int_eq(doc.type, RP_JR_FALSE);
	ck_assert_int_eq(parse(" \t\r\n null \t\r\n"), 0);
	ck_assert_int_eq(doc.type, RP_JR_NULL);
	ck_assert_int_eq(parse("tru"), -1);
	ck_assert_int_eq(parse("True"), -1);
	ck_assert_int_eq(parse("nul"), -1);
	ck_assert_int_eq(parse("nulll"), -1);
	ck_assert_int_eq(parse("\f1"), -1); /* form feed is not JSON whitespace */
	ck_assert_int_eq(parse("1\v"), -1);
	ck_assert_int_eq(parse("\xC2\xA0" "1"), -1);	/* nor is NBSP */
	ck_assert_int_eq(parse(""), -1);
	ck_assert_str_eq(doc.err.reason, "value expected");
	ck_assert_int_eq(parse("   "), -1);
	/* embedded NUL ends nothing: the length rules */
	ck_assert_int_eq(rp_jr_parse(&doc, "1\0", 2), -1);
	ck_assert_int_eq(rp_jr_parse(&doc, "{}\0garbage", 2), 0);
}

END_TEST

START_TEST(test_nesting)
{
	const RpJrMember *m;
	static const char text[] =
	"{\"a\": {\"b\": [1, {\"c\": [[], {}, \"}\"]}], \"d\": null}, \"e\" : [ ] , \"f\":\"]\"}";
	char	   *deep;

	ck_assert_int_eq(parse(text), 0);
	ck_assert_int_eq(doc.type, RP_JR_OBJECT);
	ck_assert_int_eq(doc.nmembers, 3);	/* only top-level members are recorded */
	ck_assert_int_eq(rp_jr_find(&doc, "a", &m), 1);
	ck_assert_int_eq(m->type, RP_JR_OBJECT);
	ck_assert_uint_eq(m->val_len, strlen("{\"b\": [1, {\"c\": [[], {}, \"}\"]}], \"d\": null}"));
	ck_assert(strncmp(m->val, "{\"b\": [1, {\"c\": [[], {}, \"}\"]}], \"d\": null}", m->val_len) == 0);
	ck_assert_int_eq(rp_jr_find(&doc, "e", &m), 1);
	ck_assert_int_eq(m->type, RP_JR_ARRAY);
	ck_assert(strncmp(m->val, "[ ]", m->val_len) == 0);
	ck_assert_int_eq(rp_jr_find(&doc, "f", &m), 1);
	ck_assert(rp_jr_string_eq(m->val, m->val_len, "]"));
	ck_assert_int_eq(rp_jr_find(&doc, "b", &m), 0); /* nested names are not
													 * top level */
	ck_assert_int_eq(rp_jr_find(&doc, "c", &m), 0);

	/* arrays at top level: no members */
	ck_assert_int_eq(parse("[{\"a\":1},2]"), 0);
	ck_assert_int_eq(doc.type, RP_JR_ARRAY);
	ck_assert_int_eq(doc.nmembers, 0);
	ck_assert_int_eq(rp_jr_find(&doc, "a", &m), 0);

	/* a very deep unterminated text is rejected (and does not blow the stack) */
	deep = malloc(100001);
	memset(deep, '{', 100000);
	deep[100000] = '\0';
	ck_assert_int_eq(parse(deep), -1);
	free(deep);
}

END_TEST

/*
 * A value nested n deep, around the number 1: shape 'a' arrays "[[1]]",
 * 'o' objects {"k":{"k":1}}, 'm' both in turn {"k":[{"k":[1]}]}.
 */
static void
deep_value(RpBuf *b, int n, char shape)
{
	for (int i = 0; i < n; i++)
		rp_buf_put_text(b, shape == 'a' || (shape == 'm' && i % 2) ? "[" : "{\"k\":");
	rp_buf_put_char(b, '1');
	for (int i = n - 1; i >= 0; i--)
		rp_buf_put_char(b, shape == 'a' || (shape == 'm' && i % 2) ? ']' : '}');
}

/*
 * Nesting is not limited (PostgreSQL's json accepts tens of thousands of
 * levels, bounded by its stack depth): 5,000 and 100,000 levels, alone and
 * as a record inside a snapshot-like frame, whose top-level members are still
 * found with the exact spans; cut short or closed wrongly, rejected.
 */
START_TEST(test_deep_nesting)
{
	static const int depths[] = {5000, 100000};
	static const char shapes[] = {'a', 'o', 'm'};
	const RpJrMember *m;
	char	   *one;

	for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++)
		for (size_t k = 0; k < sizeof(shapes); k++)
		{
			RpBuf		v,
						frame;
			size_t		vlen;

			rp_buf_init(&v, 0);
			deep_value(&v, depths[d], shapes[k]);
			vlen = v.len;
			ck_assert_msg(rp_jr_parse(&doc, v.data, v.len) == 0, "%d deep, shape %c: %s",
						  depths[d], shapes[k], doc.err.reason ? doc.err.reason : "");
			ck_assert_int_eq(doc.type, shapes[k] == 'a' ? RP_JR_ARRAY : RP_JR_OBJECT);

			rp_buf_init(&frame, 0);
			rp_buf_put_text(&frame, "{\"kind\":\"row\",\"record\":{\"id\":1,\"doc\":");
			rp_buf_put_bytes(&frame, v.data, vlen);
			rp_buf_put_text(&frame, "},\"seq\":7}");
			ck_assert_int_eq(rp_jr_parse(&doc, frame.data, frame.len), 0);
			ck_assert_int_eq(doc.nmembers, 3);
			ck_assert_int_eq(rp_jr_find(&doc, "record", &m), 1);
			ck_assert_int_eq(m->type, RP_JR_OBJECT);
			ck_assert_uint_eq(m->val_len, vlen + strlen("{\"id\":1,\"doc\":}"));
			ck_assert(memcmp(m->val + strlen("{\"id\":1,\"doc\":"), v.data, vlen) == 0);
			ck_assert_int_eq(rp_jr_find(&doc, "seq", &m), 1);
			ck_assert(m->val_len == 1 && m->val[0] == '7');
			ck_assert_int_eq(rp_jr_find(&doc, "k", &m), 0);

			/* the last bracket missing: unterminated, at the end */
			ck_assert_int_eq(rp_jr_parse(&doc, v.data, vlen - 1), -1);
			ck_assert_uint_eq(doc.err.offset, vlen - 1);
			ck_assert_str_eq(doc.err.reason, shapes[k] == 'a' ? "unterminated array" : "unterminated object");
			/* the innermost closed with the wrong bracket */
			one = memchr(v.data, '1', vlen);
			one[1] = one[1] == ']' ? '}' : ']';
			ck_assert_int_eq(rp_jr_parse(&doc, v.data, vlen), -1);
			ck_assert_uint_eq(doc.err.offset, (size_t) (one + 1 - v.data));
			rp_buf_free(&frame);
			rp_buf_free(&v);
		}
}

END_TEST

START_TEST(test_members)
{
	const RpJrMember *m;

	ck_assert_int_eq(parse("{\"kind\":\"row\",\"seq\":7,\"record\":{\"id\":1,\"t\":\"x\\\"y\"},\"n\":null}"), 0);
	ck_assert_int_eq(doc.nmembers, 4);
	ck_assert_int_eq(rp_jr_find(&doc, "kind", &m), 1);
	ck_assert_int_eq(m->type, RP_JR_STRING);
	ck_assert(rp_jr_string_eq(m->val, m->val_len, "row"));
	ck_assert(!rp_jr_string_eq(m->val, m->val_len, "ro"));
	ck_assert(!rp_jr_string_eq(m->val, m->val_len, "rows"));
	ck_assert_int_eq(rp_jr_find(&doc, "seq", &m), 1);
	ck_assert_int_eq(m->type, RP_JR_NUMBER);
	ck_assert_uint_eq(m->val_len, 1);
	ck_assert_int_eq(rp_jr_find(&doc, "record", &m), 1);
	ck_assert_int_eq(m->type, RP_JR_OBJECT);
	ck_assert_uint_eq(m->val_len, strlen("{\"id\":1,\"t\":\"x\\\"y\"}"));
	ck_assert(memcmp(m->val, "{\"id\":1,\"t\":\"x\\\"y\"}", m->val_len) == 0);
	ck_assert_int_eq(rp_jr_find(&doc, "n", &m), 1);
	ck_assert_int_eq(m->type, RP_JR_NULL);
	ck_assert_int_eq(rp_jr_find(&doc, "missing", &m), 0);
	ck_assert_ptr_null(m);

	/* names are compared decoded: an escaped name matches */
	ck_assert_int_eq(parse("{\"k\\u0069nd\":\"e\\u006ed\",\"s\\/q\":1}"), 0);
	ck_assert_int_eq(rp_jr_find(&doc, "kind", &m), 1);
	ck_assert(m->key_escaped);
	ck_assert(rp_jr_string_eq(m->val, m->val_len, "end"));
	ck_assert_int_eq(rp_jr_find(&doc, "s/q", &m), 1);

	/* a duplicated name is refused on lookup, even when spelled differently */
	rp_error_clear();
	ck_assert_int_eq(parse("{\"seq\":1,\"x\":0,\"s\\u0065q\":2}"), 0);
	ck_assert_int_eq(rp_jr_find(&doc, "seq", &m), -1);
	ck_assert(strstr(rp_error(), "duplicate member \"seq\"") != NULL);
	ck_assert_int_eq(rp_jr_find(&doc, "x", &m), 1);

	/* empty object; a reparse resets the members */
	ck_assert_int_eq(parse("{ }"), 0);
	ck_assert_int_eq(doc.nmembers, 0);
	/* many members grow the array */
	{
		RpBuf		b;

		rp_buf_init(&b, 0);
		rp_buf_put_char(&b, '{');
		for (int i = 0; i < 1000; i++)
		{
			char		kv[32];

			snprintf(kv, sizeof(kv), "%s\"k%d\":%d", i ? "," : "", i, i);
			rp_buf_put_text(&b, kv);
		}
		rp_buf_put_char(&b, '}');
		ck_assert_int_eq(rp_jr_parse(&doc, b.data, b.len), 0);
		ck_assert_int_eq(doc.nmembers, 1000);
		ck_assert_int_eq(rp_jr_find(&doc, "k999", &m), 1);
		ck_assert(memcmp(m->val, "999", 3) == 0);
		rp_buf_free(&b);
	}
}

END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"{", "}", "[", "]", "{]", "[}", "{\"a\":1", "{\"a\":1,}", "[1,]", "[,1]", "{,}",
		"{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{a:1}", "{'a':1}", "{1:1}", "{\"a\":1 \"b\":2}",
		"[1 2]", "{\"a\":1}}", "{\"a\":1}{}", "{}x", "[1]]", "{\"a\":undefined}",
		"{\"a\":1}//c", "/*c*/{}", "{\"a\":01}", "{\"a\":.1}", "[\"a\",]", "[-]",
		"{\"a\":tru}", "\xEF\xBB\xBF{}",	/* a byte order mark is not JSON */
		"{\"a\":\"b\",\"c\":[1,{\"d\":\"\\x\"}]}",	/* a bad escape deep
													 * inside */
	};
	static const size_t at[] = {
		1, 0, 1, 0, 1, 1, 6, 7, 3, 1, 1,
		4, 5, 5, 1, 1, 1, 7,
		3, 7, 7, 2, 3, 5,
		7, 0, 6, 5, 5, 2,
		5, 0,
		22,
	};

	ck_assert_uint_eq(sizeof(bad) / sizeof(bad[0]), sizeof(at) / sizeof(at[0]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		rp_error_clear();
		ck_assert_msg(parse(bad[i]) == -1, "accepted #%zu %s", i, bad[i]);
		ck_assert_msg(doc.err.offset == at[i], "#%zu %s: error at %zu, expected %zu (%s)",
					  i, bad[i], doc.err.offset, at[i], doc.err.reason);
		ck_assert_int_eq(doc.nmembers, 0);
		/* value-free: the message names a byte offset and a reason only */
		ck_assert_msg(strncmp(rp_error(), "invalid JSON at byte ", 21) == 0, "%s", rp_error());
	}
}

END_TEST

/* Every prefix of a valid text but the whole is rejected; no read past len. */
START_TEST(test_prefixes)
{
	static const char text[] =
	"{\"kind\":\"row\",\"a\":[1,-2.5e-3,true,false,null,\"\\ud83d\\ude00\\n\"],\"b\":{\"c\":{}}}";
	size_t		n = strlen(text);

	for (size_t i = 0; i < n; i++)
	{
		char	   *copy = malloc(i ? i : 1);	/* exact size: ASan catches
												 * overreads */

		memcpy(copy, text, i);
		ck_assert_msg(rp_jr_parse(&doc, copy, i) == -1, "accepted prefix of %zu bytes", i);
		free(copy);
	}
	ck_assert_int_eq(rp_jr_parse(&doc, text, n), 0);
	ck_assert_int_eq(doc.nmembers, 3);
}

END_TEST

Suite	   *
ct_suite_jsonread(void)
{
	Suite	   *s = suite_create("jsonread");
	TCase	   *tc = tcase_create("jsonread");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_escapes);
	tcase_add_test(tc, test_bad_strings);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_literals_and_whitespace);
	tcase_add_test(tc, test_nesting);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_members);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_prefixes);
	suite_add_tcase(s, tc);
	return s;
}
