/*
 * test_json.c
 *    rp_json: JSON string escaping and UTF-8 validation.  Exact escapes for
 *    every control character, pass-through of valid multibyte UTF-8,
 *    U+FFFD for every byte that is not part of a valid sequence, and a
 *    reference escaper compared over random and long inputs.
 *    Guarantee: G6 (one string, one JSON text; the output is always JSON).
 */
#include "ct_kit.h"

static char *
json_str(const void *s, size_t len)
{
	RpBuf		b;
	char	   *r;

	rp_buf_init(&b, 0);
	rp_json_string(&b, (const char *) s, len);
	r = ct_cstr(&b);
	rp_buf_free(&b);
	ck_assert_msg(ct_json_valid(r, strlen(r)), "not valid JSON: %s", r);
	return r;
}

#define JSON_LIT(lit) json_str(lit, sizeof(lit) - 1)

/* Every control character: the short escapes where JSON has them, else \u00XX. */
START_TEST(test_control_chars)
{
	static const char *const expect[32] = {
		"\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
		"\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f",
		"\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
		"\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
	};
	char		want[16];

	for (int c = 0; c < 32; c++)
	{
		char		in = (char) c;

		snprintf(want, sizeof(want), "\"%s\"", expect[c]);
		ck_assert_str_eq(json_str(&in, 1), want);
	}
	/* all 32 in one string, in order */
	{
		char		all[32];
		char		joined[256] = "\"";

		for (int c = 0; c < 32; c++)
		{
			all[c] = (char) c;
			strcat(joined, expect[c]);
		}
		strcat(joined, "\"");
		ck_assert_str_eq(json_str(all, 32), joined);
	}
}

END_TEST

START_TEST(test_ascii)
{
	char		printable[96];
	char		want[200];
	int			n = 0,
				w = 0;

	ck_assert_str_eq(JSON_LIT(""), "\"\"");
	ck_assert_str_eq(JSON_LIT("\""), "\"\\\"\"");
	ck_assert_str_eq(JSON_LIT("\\"), "\"\\\\\"");
	ck_assert_str_eq(JSON_LIT("a\"b\\c"), "\"a\\\"b\\\\c\"");
	ck_assert_str_eq(JSON_LIT("/"), "\"/\"");	/* solidus needs no escape */
	ck_assert_str_eq(JSON_LIT("\x7f"), "\"\x7f\""); /* DEL is not a control in
													 * JSON */
	ck_assert_str_eq(JSON_LIT("line1\r\nline2\ttab"), "\"line1\\r\\nline2\\ttab\"");
	ck_assert_str_eq(JSON_LIT("\"\"\"\\\\"), "\"\\\"\\\"\\\"\\\\\\\\\"");

	/* every printable ASCII character but quote and backslash passes as is */
	want[w++] = '"';
	for (int c = 0x20; c < 0x7f; c++)
	{
		printable[n++] = (char) c;
		if (c == '"' || c == '\\')
			want[w++] = '\\';
		want[w++] = (char) c;
	}
	want[w++] = '"';
	want[w] = '\0';
	ck_assert_str_eq(json_str(printable, (size_t) n), want);
}

END_TEST

/* Valid UTF-8 at every sequence length and boundary passes through untouched. */
START_TEST(test_utf8_valid_passthrough)
{
	static const char *const valid[] = {
		"\xC2\x80",				/* U+0080, smallest 2-byte */
		"\xC3\xA9",				/* é */
		"\xDF\xBF",				/* U+07FF */
		"\xE0\xA0\x80",			/* U+0800, smallest 3-byte */
		"\xE2\x82\xAC",			/* € */
		"\xED\x9F\xBF",			/* U+D7FF, before the surrogates */
		"\xEE\x80\x80",			/* U+E000, after them */
		"\xEF\xBF\xBD",			/* U+FFFD itself */
		"\xEF\xBF\xBF",			/* U+FFFF */
		"\xF0\x90\x80\x80",		/* U+10000, smallest 4-byte */
		"\xF0\x9D\x84\x9E",		/* 𝄞 */
		"\xF4\x8F\xBF\xBF",		/* U+10FFFF, the last code point */
		"na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80!",
	};
	char		want[64];

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
	{
		ck_assert(rp_utf8_valid((const unsigned char *) valid[i], strlen(valid[i])));
		snprintf(want, sizeof(want), "\"%s\"", valid[i]);
		ck_assert_str_eq(json_str(valid[i], strlen(valid[i])), want);
	}
	ck_assert(rp_utf8_valid((const unsigned char *) "", 0));
	ck_assert(rp_utf8_valid((const unsigned char *) "plain", 5));
	ck_assert(rp_utf8_valid((const unsigned char *) "a\0b", 3));	/* NUL is a code point */
}

END_TEST

#define FFFD "\xEF\xBF\xBD"

/* Invalid sequences: each offending byte becomes U+FFFD, the rest survives. */
START_TEST(test_utf8_invalid_replaced)
{
	static const struct
	{
		const char *in;
		size_t		len;
		const char *out;
	}			cases[] = {
		{"\x80", 1, "\"" FFFD "\""},	/* lone continuation */
		{"\xBF", 1, "\"" FFFD "\""},
		{"\xC0\x80", 2, "\"" FFFD FFFD "\""},	/* overlong NUL */
		{"\xC1\xBF", 2, "\"" FFFD FFFD "\""},	/* overlong */
		{"\xE0\x80\x80", 3, "\"" FFFD FFFD FFFD "\""},	/* overlong 3-byte */
		{"\xE0\x9F\xBF", 3, "\"" FFFD FFFD FFFD "\""},	/* overlong U+07FF */
		{"\xED\xA0\x80", 3, "\"" FFFD FFFD FFFD "\""},	/* surrogate U+D800 */
		{"\xED\xBF\xBF", 3, "\"" FFFD FFFD FFFD "\""},	/* surrogate U+DFFF */
		{"\xF0\x80\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""}, /* overlong 4-byte */
		{"\xF0\x8F\xBF\xBF", 4, "\"" FFFD FFFD FFFD FFFD "\""}, /* overlong U+FFFF */
		{"\xF4\x90\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""}, /* U+110000 */
		{"\xF5\x80\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""},
		{"\xF8\x88\x80\x80\x80", 5, "\"" FFFD FFFD FFFD FFFD FFFD "\""},	/* old 5-byte form */
		{"\xFE", 1, "\"" FFFD "\""},
		{"\xFF", 1, "\"" FFFD "\""},
		{"\xE2\x82", 2, "\"" FFFD FFFD "\""},	/* truncated at the end */
		{"\xF0\x9F\x98", 3, "\"" FFFD FFFD FFFD "\""},
		{"\xE2\x82" "A", 3, "\"" FFFD FFFD "A\""},	/* cut short by ASCII */
		{"\xC3" "\"", 2, "\"" FFFD "\\\"\""},	/* cut short by a quote */
		{"\xC3\n", 2, "\"" FFFD "\\n\""},	/* and by a control */
		{"a\xFF" "b\xC3\xA9" "c", 6, "\"a" FFFD "b\xC3\xA9" "c\""},
		{"\xC3\xA9\xA9", 3, "\"\xC3\xA9" FFFD "\""},	/* one continuation too
														 * many */
		{"\0\xFF\0", 3, "\"\\u0000" FFFD "\\u0000\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char	   *got = json_str(cases[i].in, cases[i].len);

		ck_assert_msg(strcmp(got, cases[i].out) == 0, "case %zu: got %s, want %s",
					  i, got, cases[i].out);
		ck_assert(!rp_utf8_valid((const unsigned char *) cases[i].in, cases[i].len));
	}
}

END_TEST

START_TEST(test_keys)
{
	RpBuf		b;

	rp_buf_init(&b, 0);
	rp_buf_put_char(&b, '{');
	rp_json_key(&b, "plain");
	rp_buf_put_text(&b, "1,");
	rp_json_key(&b, "we\"ird\n");
	rp_buf_put_text(&b, "2,");
	rp_json_key(&b, "");
	rp_json_cstring(&b, "v\\");
	rp_buf_put_char(&b, '}');
	ck_assert_str_eq(ct_cstr(&b), "{\"plain\":1,\"we\\\"ird\\n\":2,\"\":\"v\\\\\"}");
	ck_assert(ct_json_valid(b.data, b.len));
	rp_buf_free(&b);
}

END_TEST

/* ---- a reference escaper, independent of rp_json.c ------------------------ */

static size_t
ref_utf8_len(const unsigned char *s, size_t left)
{
	uint32_t	cp;
	size_t		n;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xE0) == 0xC0)
		n = 2, cp = s[0] & 0x1F;
	else if ((s[0] & 0xF0) == 0xE0)
		n = 3, cp = s[0] & 0x0F;
	else if ((s[0] & 0xF8) == 0xF0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
		return 0;
	return n;
}

static bool
ref_utf8_valid(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;)
	{
		size_t		n = ref_utf8_len(s + i, len - i);

		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

static void
ref_escape(RpBuf *b, const unsigned char *s, size_t len)
{
	char		tmp[8];

	rp_buf_put_char(b, '"');
	for (size_t i = 0; i < len;)
	{
		size_t		n = ref_utf8_len(s + i, len - i);

		if (n == 0)
		{
			rp_buf_put_text(b, FFFD);
			i++;
			continue;
		}
		if (n > 1)
		{
			rp_buf_put_bytes(b, s + i, n);
			i += n;
			continue;
		}
		switch (s[i])
		{
			case '"':
				rp_buf_put_text(b, "\\\"");
				break;
			case '\\':
				rp_buf_put_text(b, "\\\\");
				break;
			case '\b':
				rp_buf_put_text(b, "\\b");
				break;
			case '\f':
				rp_buf_put_text(b, "\\f");
				break;
			case '\n':
				rp_buf_put_text(b, "\\n");
				break;
			case '\r':
				rp_buf_put_text(b, "\\r");
				break;
			case '\t':
				rp_buf_put_text(b, "\\t");
				break;
			default:
				if (s[i] < 0x20)
				{
					snprintf(tmp, sizeof(tmp), "\\u%04x", s[i]);
					rp_buf_put_text(b, tmp);
				}
				else
					rp_buf_put_char(b, (char) s[i]);
		}
		i++;
	}
	rp_buf_put_char(b, '"');
}

static uint64_t rng_state = UINT64_C(0x2545F4914F6CDD1D);

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

/* Random byte strings, biased towards UTF-8 lead and continuation bytes. */
START_TEST(test_random_against_reference)
{
	static const unsigned char pool[] = {
		'a', 'Z', ' ', '"', '\\', '\n', 0, 0x1f, 0x7f, 0x80, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0,
		0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x9F, 0xA0, 0x82, 0xAC, 0x90, 0x8F,
	};
	unsigned char s[64];
	RpBuf		got,
				want;

	rp_buf_init(&got, 0);
	rp_buf_init(&want, 0);
	for (int iter = 0; iter < 100000; iter++)
	{
		size_t		len = rng() % sizeof(s);

		for (size_t i = 0; i < len; i++)
			s[i] = iter % 2 ? pool[rng() % sizeof(pool)] : (unsigned char) rng();
		rp_buf_reset(&got);
		rp_buf_reset(&want);
		rp_json_string(&got, (const char *) s, len);
		ref_escape(&want, s, len);
		if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
			ck_abort_msg("iteration %d: output differs from the reference", iter);
		if (!ct_json_valid(got.data, got.len))
			ck_abort_msg("iteration %d: not valid JSON", iter);
		if (rp_utf8_valid(s, len) != ref_utf8_valid(s, len))
			ck_abort_msg("iteration %d: rp_utf8_valid disagrees with the reference", iter);
	}
	rp_buf_free(&got);
	rp_buf_free(&want);
}

END_TEST

/*
 * A string escaped piece by piece, cut where rp_utf8_cut says, is the same
 * text as escaped whole (the JSON-lines sinks write a long value in slices):
 * random strings biased towards UTF-8 lead and continuation bytes, cut at
 * every length from 4 up.
 */
START_TEST(test_escape_in_pieces)
{
	static const unsigned char pool[] = {
		'a', '"', '\\', '\n', 0x1f, 0x80, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0, 0xE2, 0xED, 0xEF,
		0xF0, 0xF4, 0xF5, 0xFF, 0x9F, 0xA0, 0x82, 0xAC, 0x90, 0x8F,
	};
	static const char *const seqs[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"};
	unsigned char s[48];
	RpBuf		got,
				want;

	rp_buf_init(&got, 0);
	rp_buf_init(&want, 0);
	for (int iter = 0; iter < 20000; iter++)
	{
		size_t		len = 0;

		/*
		 * valid sequences among random bytes, so that many cuts fall inside
		 * one
		 */
		while (len + 4 <= sizeof(s))
		{
			if (rng() % 2)
				s[len++] = pool[rng() % sizeof(pool)];
			else
			{
				const char *q = seqs[rng() % 4];

				memcpy(s + len, q, strlen(q));
				len += strlen(q);
			}
		}
		rp_buf_reset(&want);
		rp_json_escape(&want, (const char *) s, len);
		for (size_t max = 4; max <= len; max++)
		{
			size_t		off = 0;

			rp_buf_reset(&got);
			while (off < len)
			{
				size_t		n = rp_utf8_cut((const char *) s + off, len - off, max);

				ck_assert_uint_gt(n, 0);
				ck_assert_uint_le(n, max);
				rp_json_escape(&got, (const char *) s + off, n);
				off += n;
			}
			if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
				ck_abort_msg("iteration %d, pieces of at most %zu bytes: output differs", iter, max);
		}
	}
	rp_buf_free(&got);
	rp_buf_free(&want);
}

END_TEST

/* A long string crosses many buffer growths without losing a byte. */
START_TEST(test_long_string)
{
	enum
	{
		N = 1 << 20
	};
	unsigned char *s = malloc(N);
	RpBuf		got,
				want;

	for (size_t i = 0; i < N; i++)
		s[i] = (unsigned char) (i % 7 == 0 ? '"' : i % 11 == 0 ? '\x01' : i % 13 == 0 ? 0xC3 : 'a' + i % 26);
	rp_buf_init(&got, 1);
	rp_buf_init(&want, 0);
	rp_json_string(&got, (const char *) s, N);
	ref_escape(&want, s, N);
	ck_assert_uint_eq(got.len, want.len);
	ck_assert(memcmp(got.data, want.data, got.len) == 0);
	ck_assert(ct_json_valid(got.data, got.len));

	/* appended after existing content, the prefix is untouched */
	rp_buf_reset(&got);
	rp_buf_put_text(&got, "[1,");
	rp_json_string(&got, (const char *) s, 1000);
	rp_buf_put_char(&got, ']');
	ck_assert(strncmp(got.data, "[1,\"", 4) == 0);
	ck_assert(ct_json_valid(got.data, got.len));
	rp_buf_free(&got);
	rp_buf_free(&want);
	free(s);
}

END_TEST

/* The test's own JSON validator must reject what is not JSON. */
START_TEST(test_validator_self_check)
{
	static const char *const good[] = {
		"0", "-0", "1.5e+300", "\"\"", "[]", "{}", "[1,[2,{\"a\":null}]]", " true ", "\"\\u00e9\"",
		"{\"a\":1,\"b\":[false]}", "\"\xF4\x8F\xBF\xBF\"",
	};
	static const char *const bad[] = {
		"", "01", "1.", ".5", "+1", "NaN", "Infinity", "\"a", "[1,]", "{\"a\"}", "{a:1}",
		"\"\x01\"", "\"\\x\"", "\"\\u12\"", "[1] 2", "\"\xFF\"", "\"\xC0\x80\"", "\"\xED\xA0\x80\"",
		"tru", "nul", "{\"a\":1,}",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(ct_json_valid(good[i], strlen(good[i])), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!ct_json_valid(bad[i], strlen(bad[i])), "%s", bad[i]);
}

END_TEST

Suite	   *
ct_suite_json(void)
{
	Suite	   *s = suite_create("json");
	TCase	   *tc;

	tc = ct_tcase("strings");
	tcase_add_test(tc, test_control_chars);
	tcase_add_test(tc, test_ascii);
	tcase_add_test(tc, test_utf8_valid_passthrough);
	tcase_add_test(tc, test_utf8_invalid_replaced);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_random_against_reference);
	tcase_add_test(tc, test_long_string);
	tcase_add_test(tc, test_escape_in_pieces);
	tcase_add_test(tc, test_validator_self_check);
	suite_add_tcase(s, tc);
	return s;
}
