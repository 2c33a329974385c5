/*
 * rp_testutil.h
 *    Shared helpers of the codec unit tests (header-only; every test
 *    binary is one translation unit): frame builders, value builders,
 *    decode-and-render shortcuts, an independent JSON validator and a
 *    per-test allocation list freed by the teardown fixture.
 *
 * Every helper that renders JSON also checks the text against the
 * validator below, so each expectation in the tests is also a proof that
 * the output is well-formed JSON (RFC 8259, UTF-8).
 */
#ifndef RP_TESTUTIL_H
#define RP_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_alloc.h"
#include "rp_buf.h"
#include "rp_decode.h"
#include "rp_encode.h"
#include "rp_format.h"
#include "rp_json.h"
#include "rp_read.h"
#include "rp_render.h"
#include "rp_wire.h"

/* A value planted in test data; it must never appear in an error (G4). */
#define TU_CANARY "CANARY-7f3a"

/* ---- per-test allocations ---------------------------------------------- */

#define TU_MAX_KEEP 4096
static void *tu_kept[TU_MAX_KEEP];
static int	tu_nkept;

/* Remember p and free it when the test ends (LeakSanitizer stays quiet). */
static inline void *
tu_keep(void *p)
{
	if (tu_nkept < TU_MAX_KEEP)
		tu_kept[tu_nkept++] = p;
	return p;
}

static inline void
tu_teardown(void)
{
	while (tu_nkept > 0)
		free(tu_kept[--tu_nkept]);
}

/* The buffer's bytes as a NUL-terminated string, kept until teardown. */
static inline char *
tu_cstr(const RpBuf *b)
{
	char	   *s = malloc(b->len + 1);

	memcpy(s, b->data, b->len);
	s[b->len] = '\0';
	return tu_keep(s);
}

/* ---- an independent JSON validator (RFC 8259) -------------------------- */

typedef struct TuJson
{
	const unsigned char *p;
	const unsigned char *end;
	int			depth;
} TuJson;

static bool tu_json_value(TuJson *j);

static inline void
tu_json_ws(TuJson *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static inline bool
tu_json_lit(TuJson *j, const char *lit)
{
	size_t		n = strlen(lit);

	if ((size_t) (j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

static inline bool
tu_is_digit(TuJson *j)
{
	return j->p < j->end && *j->p >= '0' && *j->p <= '9';
}

static inline bool
tu_json_number(TuJson *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (!tu_is_digit(j))
		return false;
	if (*j->p == '0')
		j->p++;
	else
		while (tu_is_digit(j))
			j->p++;
	if (j->p < j->end && *j->p == '.')
	{
		j->p++;
		if (!tu_is_digit(j))
			return false;
		while (tu_is_digit(j))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E'))
	{
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!tu_is_digit(j))
			return false;
		while (tu_is_digit(j))
			j->p++;
	}
	return true;
}

/* One UTF-8 scalar value (no overlongs, no surrogates, <= U+10FFFF). */
static inline bool
tu_json_utf8(TuJson *j)
{
	unsigned char c = *j->p;
	int			n;
	uint32_t	cp,
				min;

	if (c >= 0xC0 && c < 0xE0)
		n = 2, cp = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c < 0xF0)
		n = 3, cp = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c < 0xF8)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return false;
	if (j->end - j->p < n)
		return false;
	for (int i = 1; i < n; i++)
	{
		if ((j->p[i] & 0xC0) != 0x80)
			return false;
		cp = (cp << 6) | (j->p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return false;
	j->p += n;
	return true;
}

static inline bool
tu_json_string(TuJson *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	j->p++;
	while (j->p < j->end)
	{
		unsigned char c = *j->p;

		if (c == '"')
		{
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\')
		{
			j->p++;
			if (j->p >= j->end)
				return false;
			c = *j->p++;
			if (c == 'u')
			{
				for (int i = 0; i < 4; i++)
				{
					if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || *j->p == 0)
						return false;
					j->p++;
				}
			}
			else if (!strchr("\"\\/bfnrt", c) || c == 0)
				return false;
		}
		else if (c >= 0x80)
		{
			if (!tu_json_utf8(j))
				return false;
		}
		else
			j->p++;
	}
	return false;
}

static bool
tu_json_value(TuJson *j)
{
	bool		ok = true;

	if (++j->depth > 200)
		return false;
	tu_json_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p)
	{
		case '{':
			j->p++;
			tu_json_ws(j);
			if (j->p < j->end && *j->p == '}')
			{
				j->p++;
				break;
			}
			for (;;)
			{
				tu_json_ws(j);
				if (!tu_json_string(j))
					return false;
				tu_json_ws(j);
				if (j->p >= j->end || *j->p++ != ':')
					return false;
				if (!tu_json_value(j))
					return false;
				tu_json_ws(j);
				if (j->p >= j->end)
					return false;
				if (*j->p == ',')
				{
					j->p++;
					continue;
				}
				if (*j->p++ != '}')
					return false;
				break;
			}
			break;
		case '[':
			j->p++;
			tu_json_ws(j);
			if (j->p < j->end && *j->p == ']')
			{
				j->p++;
				break;
			}
			for (;;)
			{
				if (!tu_json_value(j))
					return false;
				tu_json_ws(j);
				if (j->p >= j->end)
					return false;
				if (*j->p == ',')
				{
					j->p++;
					continue;
				}
				if (*j->p++ != ']')
					return false;
				break;
			}
			break;
		case '"':
			ok = tu_json_string(j);
			break;
		case 't':
			ok = tu_json_lit(j, "true");
			break;
		case 'f':
			ok = tu_json_lit(j, "false");
			break;
		case 'n':
			ok = tu_json_lit(j, "null");
			break;
		default:
			ok = tu_json_number(j);
			break;
	}
	j->depth--;
	return ok;
}

static inline bool
tu_json_valid(const char *s, size_t len)
{
	TuJson		j = {(const unsigned char *) s, (const unsigned char *) s + len, 0};

	if (!tu_json_value(&j))
		return false;
	tu_json_ws(&j);
	return j.p == j.end;
}

/* ---- frames ------------------------------------------------------------ */

typedef struct TuCol
{
	const char *name;
	uint8_t		enc;
	uint32_t	type_oid;
	const char *type_name;
	int32_t		typmod;
	uint8_t		flags;
} TuCol;

static inline void
tu_frame_init(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_enc_frame_header(b);
}

static inline void
tu_relation(RpBuf *b, uint32_t relid, const char *schema, const char *name, char identity,
			int ncols, const TuCol *cols)
{
	size_t		at = rp_enc_relation_start(b, relid, schema, name, identity, (uint16_t) ncols);

	for (int i = 0; i < ncols; i++)
		rp_enc_relation_column(b, (int16_t) (i + 1), cols[i].name, cols[i].type_oid,
							   cols[i].type_name ? cols[i].type_name : rp_encoding_name(cols[i].enc),
							   cols[i].typmod, cols[i].enc, cols[i].flags);
	rp_buf_end_record(b, at);
}

/* ---- values (the bytes after a 'v' kind byte) -------------------------- */

static inline void
tu_put_numeric(RpBuf *b, uint16_t sign, int16_t weight, uint16_t dscale,
			   int ndigits, const uint16_t *digits)
{
	rp_buf_put_u32(b, (uint32_t) (8 + 2 * ndigits));
	rp_buf_put_u16(b, (uint16_t) ndigits);
	rp_buf_put_u16(b, (uint16_t) weight);
	rp_buf_put_u16(b, sign);
	rp_buf_put_u16(b, dscale);
	for (int i = 0; i < ndigits; i++)
		rp_buf_put_u16(b, digits[i]);
}

static inline void
tu_put_float8(RpBuf *b, double d)
{
	uint64_t	bits;

	memcpy(&bits, &d, 8);
	rp_buf_put_u64(b, bits);
}

static inline void
tu_put_float4(RpBuf *b, float f)
{
	uint32_t	bits;

	memcpy(&bits, &f, 4);
	rp_buf_put_u32(b, bits);
}

/* Composite field header: name, type OID, encoding (then the datum). */
static inline void
tu_put_field(RpBuf *b, const char *name, uint32_t oid, uint8_t enc)
{
	rp_buf_put_cstr(b, name);
	rp_buf_put_u32(b, oid);
	rp_buf_put_u8(b, enc);
}

/* Range header: flags, subtype OID, subtype encoding (then the bounds). */
static inline void
tu_put_range(RpBuf *b, uint8_t flags, uint32_t oid, uint8_t enc)
{
	rp_buf_put_u8(b, flags);
	rp_buf_put_u32(b, oid);
	rp_buf_put_u8(b, enc);
}

/*
 * A value's JSON: first the decoder's structural walk must accept the
 * bytes and consume exactly all of them, then the renderer writes it.
 */
static inline char *
tu_value_json(uint8_t enc, const RpBuf *v)
{
	RpReader	r;
	RpBuf		out;
	char	   *s;

	rp_reader_init(&r, v->data, v->len);
	ck_assert_msg(rp_skip_value(&r, enc, 0), "decoder rejected a valid %s value",
				  rp_encoding_name(enc));
	ck_assert_msg(r.ok && rp_reader_left(&r) == 0, "decoder left %zu bytes of a %s value",
				  rp_reader_left(&r), rp_encoding_name(enc));
	rp_buf_init(&out, 0);
	rp_render_value(&out, enc, (const unsigned char *) v->data, (uint32_t) v->len);
	s = tu_cstr(&out);
	rp_buf_free(&out);
	ck_assert_msg(tu_json_valid(s, strlen(s)), "not valid JSON: %s", s);
	return s;
}

/* The structural walk alone: does the decoder accept these value bytes? */
static inline bool
tu_value_accepted(uint8_t enc, const RpBuf *v)
{
	RpReader	r;

	rp_reader_init(&r, v->data, v->len);
	return rp_skip_value(&r, enc, 0) && r.ok && rp_reader_left(&r) == 0;
}

/* A record as JSON (validated), kept until teardown. */
static inline char *
tu_render(const RpRecord *rec, const RpRelMap *rels, const char *extra)
{
	RpBuf		out;
	char	   *s;

	rp_buf_init(&out, 0);
	rp_render_record(&out, rec, rels, extra);
	s = tu_cstr(&out);
	rp_buf_free(&out);
	ck_assert_msg(tu_json_valid(s, strlen(s)), "not valid JSON: %s", s);
	return s;
}

/*
 * Decode a whole frame with a fresh decoder, rendering every record into
 * one JSON line each (joined with '\n').  Returns the number of records,
 * or -1 on the first error (its reason copied to err when not NULL).
 */
static inline int
tu_decode_frame(const void *data, size_t len, char **lines, char *err, size_t errlen)
{
	RpDecoder	dec;
	RpRecord	rec;
	RpBuf		out;
	int			n = 0,
				rc;

	rp_decoder_init(&dec);
	rp_buf_init(&out, 0);
	if (err)
		err[0] = '\0';
	if (!rp_decoder_frame(&dec, data, len))
	{
		ck_assert_msg(dec.error[0] != '\0', "frame refused without a reason");
		if (err)
			snprintf(err, errlen, "%s", dec.error);
		n = -1;
		goto done;
	}
	while ((rc = rp_decoder_next(&dec, &rec)) == 1)
	{
		size_t		start = out.len;

		if (n)
			rp_buf_put_char(&out, '\n');
		start = out.len;
		rp_render_record(&out, &rec, &dec.rels, NULL);
		ck_assert_msg(tu_json_valid(out.data + start, out.len - start),
					  "record %d rendered as invalid JSON", n);
		if (rec.tag == RP_TAG_RELATION)
			rp_relation_free(rec.u.relation.previous);
		n++;
	}
	if (rc < 0)
	{
		ck_assert_msg(dec.error[0] != '\0', "decoder failed without a reason");
		if (err)
			snprintf(err, errlen, "%s", dec.error);
		n = -1;
	}
done:
	if (lines)
		*lines = tu_cstr(&out);
	rp_buf_free(&out);
	rp_decoder_free(&dec);
	return n;
}

/* ---- running a suite --------------------------------------------------- */

/*
 * Run every test of the suite (forking per test unless CK_FORK=no), print
 * Check's summary and fail the binary when a test failed or when none ran
 * at all (a suite that lost its tests must not pass as 100%).
 */
static inline int
tu_run(Suite *s)
{
	SRunner    *sr = srunner_create(s);
	int			failed,
				ran;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	ran = srunner_ntests_run(sr);
	srunner_free(sr);
	if (ran <= 0)
	{
		fprintf(stderr, "no tests ran\n");
		return EXIT_FAILURE;
	}
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* A test case with the teardown fixture already attached. */
static inline TCase *
tu_tcase(const char *name)
{
	TCase	   *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, tu_teardown);
	tcase_set_timeout(tc, 120);
	return tc;
}

#endif							/* RP_TESTUTIL_H */
