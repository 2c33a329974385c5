/*
 * test_envelope.c
 *    rp_envelope: the snapshot envelope writer.  The exact frames of a
 *    3-row table and of an empty one, an oversize row (its stub, and its
 *    dead-letter line cut on a UTF-8 boundary), seq accounting over rows
 *    and stubs, a resumed dump, no end frame after a failure (abort, a bad
 *    record, a dead-letter file that cannot be written), RFC 3339 times,
 *    and every frame read back by rp_jsonread.
 *    Guarantee: backfill (DESIGN.md): the receiver can tell a complete dump
 *    from a truncated one; G4: errors name the table and seq, never values.
 */
#include "ct_kit.h"

#include "envelope/rp_envelope.h"
#include "base/rp_jsonread.h"

#define AT_MS   INT64_C(1796000523456)	/* 2026-11-30T01:02:03.456Z */
#define AT      "2026-11-30T01:02:03.456Z"
#define DONE_MS INT64_C(1796000529001)	/* 2026-11-30T01:02:09.001Z */
#define DONE    "2026-11-30T01:02:09.001Z"

static RpEnvelope env;
static RpBuf out;

static void
setup(void)
{
	ct_setup_dir();
	rp_buf_init(&out, 0);
}

static void
teardown(void)
{
	rp_env_free(&env);
	rp_buf_free(&out);
	ct_teardown_dir();
}

static char *
out_str(void)
{
	char	   *s = malloc(out.len + 1);

	memcpy(s, out.data, out.len);
	s[out.len] = '\0';
	return s;
}

/* The fields every frame carries, for the current dump. */
static char *
head(const char *kind, const char *store_json, uint64_t seq)
{
	char	   *s;

	ck_assert_int_ge(asprintf(&s, "{\"kind\":\"%s\",\"snapshot_id\":\"%s\",\"snapshot_at\":\"" AT
							  "\",\"timestamp\":\"" AT "\",\"store\":%s,\"seq\":%llu",
							  kind, env.snapshot_id, store_json, (unsigned long long) seq), 0);
	return s;
}

/* Append "head + rest\n" to want. */
static void
want_frame(RpBuf *want, const char *kind, const char *store_json, uint64_t seq, const char *rest)
{
	char	   *h = head(kind, store_json, seq);

	rp_buf_put_text(want, h);
	rp_buf_put_text(want, rest);
	rp_buf_put_text(want, "}\n");
	free(h);
}

static void
assert_out(RpBuf *want)
{
	char	   *got = out_str();

	rp_buf_put_char(want, '\0');
	ck_assert_str_eq(got, want->data);
	free(got);
}

START_TEST(test_three_rows)
{
	RpBuf		want;
	RpUuid		id;
	static const char *const rows[] = {
		"{\"id\":1,\"name\":\"a\",\"price\":\"24.90\"}",
		"{\"id\":2,\"name\":\"b\\\"q\",\"price\":null}",
		"{\"id\":3,\"name\":\"\xC3\xA9\",\"price\":\"NaN\"}",
	};

	rp_env_init(&env, 0, 0, NULL);
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.item", AT_MS, 3), 0);
	ck_assert_int_eq(env.state, RP_ENV_OPEN);
	/* the id is a UUIDv7 minted at snapshot_at */
	ck_assert(rp_uuid_parse(env.snapshot_id, strlen(env.snapshot_id), &id));
	ck_assert_int_eq(rp_uuid7_ms(&id), AT_MS);
	ck_assert_int_eq(id.b[6] >> 4, 7);
	for (int i = 0; i < 3; i++)
	{
		ck_assert_int_eq(rp_env_row(&env, &out, rows[i], strlen(rows[i]), NULL, 0), 0);
		ck_assert_uint_eq(env.seq, (uint64_t) i + 1);
	}
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	ck_assert_int_eq(env.state, RP_ENV_ENDED);
	ck_assert_uint_eq(env.rows, 3);
	ck_assert_uint_eq(env.oversize, 0);

	rp_buf_init(&want, 0);
	want_frame(&want, "begin", "\"public.item\"", 0, ",\"total\":3");
	want_frame(&want, "row", "\"public.item\"", 0, ",\"record\":{\"id\":1,\"name\":\"a\",\"price\":\"24.90\"}");
	want_frame(&want, "row", "\"public.item\"", 1, ",\"record\":{\"id\":2,\"name\":\"b\\\"q\",\"price\":null}");
	want_frame(&want, "row", "\"public.item\"", 2, ",\"record\":{\"id\":3,\"name\":\"\xC3\xA9\",\"price\":\"NaN\"}");
	want_frame(&want, "end", "\"public.item\"", 3, ",\"row_count\":3,\"completed_at\":\"" DONE "\"");
	assert_out(&want);
	rp_buf_free(&want);

	/* no dead-letter file was made */
	ck_assert_int_eq(env.dlq_fd, -1);
}

END_TEST

START_TEST(test_empty_table)
{
	RpBuf		want;
	char		first_id[RP_UUID_TEXT_LEN + 1];

	rp_env_init(&env, 100, 10, ct_path("dlq.jsonl"));
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.t", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	rp_buf_init(&want, 0);
	/* total unknown: omitted; end: seq 0, row_count 0 */
	want_frame(&want, "begin", "\"s.t\"", 0, "");
	want_frame(&want, "end", "\"s.t\"", 0, ",\"row_count\":0,\"completed_at\":\"" DONE "\"");
	assert_out(&want);

	/*
	 * a second dump with the same writer: a new id, seq from 0 again, total 0
	 * is kept
	 */
	memcpy(first_id, env.snapshot_id, sizeof(first_id));
	out.len = 0;
	want.len = 0;
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.u", AT_MS, 0), 0);
	ck_assert_str_ne(env.snapshot_id, first_id);
	ck_assert_int_gt(strcmp(env.snapshot_id, first_id), 0); /* same ms: sorts after */
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	want_frame(&want, "begin", "\"s.u\"", 0, ",\"total\":0");
	want_frame(&want, "end", "\"s.u\"", 0, ",\"row_count\":0,\"completed_at\":\"" DONE "\"");
	assert_out(&want);
	rp_buf_free(&want);
	ck_assert(!ct_exists(ct_path("dlq.jsonl")));
}

END_TEST

/*
 * max_record_bytes 40: a short row, then one of 63 bytes whose é's straddle
 * the dead-letter cut of 30 bytes, then a short one.  seq runs 0, 1, 2 over
 * rows and the stub; end counts 3.
 */
START_TEST(test_oversize)
{
	static const char small1[] = "{\"id\":1,\"t\":\"ok\"}";

	/*
	 * bytes 0..19 are ASCII ({"id":2,"t":"xxxxx), then é (2 bytes) at 20,
	 * 22, 24 ...
	 */
	static const char big[] = "{\"id\":2,\"t\":\"xxxxxx\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\"}";
	static const char small3[] = "{\"id\":3,\"t\":\"ok\"}";
	RpBuf		want;
	char	   *dlq,
			   *line;
	size_t		dlq_len;

	ck_assert_uint_eq(strlen(big), 61);
	rp_env_init(&env, 40, 30, ct_path("dlq.jsonl"));
	ck_assert(!rp_env_oversize(&env, 40));
	ck_assert(rp_env_oversize(&env, 41));
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.doc", AT_MS, 3), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, small1, strlen(small1), "{\"id\":1}", 8), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, big, strlen(big), "{\"id\":2}", 8), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, small3, strlen(small3), NULL, 0), 0);
	ck_assert_uint_eq(env.rows, 2);
	ck_assert_uint_eq(env.oversize, 1);
	ck_assert_uint_eq(env.seq, 3);
	ck_assert_uint_eq(env.dlq_lines, 1);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	ck_assert(!env.dlq_dirty);	/* end synced the dead-letter file */

	rp_buf_init(&want, 0);
	want_frame(&want, "begin", "\"public.doc\"", 0, ",\"total\":3");
	want_frame(&want, "row", "\"public.doc\"", 0, ",\"record\":{\"id\":1,\"t\":\"ok\"}");
	want_frame(&want, "oversize", "\"public.doc\"", 1, ",\"bytes\":61,\"row_key\":{\"id\":2}");
	want_frame(&want, "row", "\"public.doc\"", 2, ",\"record\":{\"id\":3,\"t\":\"ok\"}");
	want_frame(&want, "end", "\"public.doc\"", 3, ",\"row_count\":3,\"completed_at\":\"" DONE "\"");
	assert_out(&want);
	rp_buf_free(&want);

	/*
	 * The dead-letter line: the é's start at bytes 19, 21 ... 29, so byte 30
	 * is the second byte of the é at 29 and the cut backs off to 29 bytes.
	 */
	dlq = ct_slurp(ct_path("dlq.jsonl"), &dlq_len);
	ck_assert_int_ge(asprintf(&line,
							  "{\"snapshot_id\":\"%s\",\"store\":\"public.doc\",\"seq\":1,"
							  "\"reason\":\"record exceeds max-record-bytes\",\"bytes\":61,"
							  "\"truncated_record\":\"{\\\"id\\\":2,\\\"t\\\":\\\"xxxxxx"
							  "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\"}\n", env.snapshot_id), 0);
	ck_assert_str_eq(dlq, line);
	ck_assert((((unsigned char) big[29]) & 0xC0) != 0x80);
	ck_assert((((unsigned char) big[30]) & 0xC0) == 0x80);
	/* valid JSON with valid UTF-8 (the reader rejects broken sequences) */
	{
		RpJrDoc		d;
		const RpJrMember *m;
		RpBuf		s;

		rp_jr_init(&d);
		ck_assert_int_eq(rp_jr_parse(&d, dlq, dlq_len - 1), 0);
		ck_assert_int_eq(rp_jr_find(&d, "truncated_record", &m), 1);
		rp_buf_init(&s, 0);
		ck_assert_int_eq(rp_jr_string(m->val, m->val_len, &s), 0);
		ck_assert_uint_eq(s.len, 29);
		ck_assert(memcmp(s.data, big, 29) == 0);
		rp_buf_free(&s);
		rp_jr_free(&d);
	}
	free(line);
	free(dlq);
}

END_TEST

/* Cuts at every length: never half a character; a row without key; no DLQ path. */
START_TEST(test_dlq_cuts)
{
	/* 1-, 2-, 3- and 4-byte characters */
	static const char rec[] = "{\"t\":\"a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z\"}";
	size_t		len = strlen(rec);

	for (size_t cut = 0; cut <= len + 2; cut++)
	{
		RpEnvelope	e;
		RpBuf		o,
					s;
		RpJrDoc		d;
		const RpJrMember *m;
		char	   *dlq;
		size_t		n;

		unlink(ct_path("cut.jsonl"));
		rp_env_init(&e, 5, cut, ct_path("cut.jsonl"));
		rp_buf_init(&o, 0);
		ck_assert_int_eq(rp_env_begin(&e, &o, "s.t", AT_MS, -1), 0);
		ck_assert_int_eq(rp_env_row(&e, &o, rec, len, NULL, 0), 0);
		/* o is not NUL-terminated: search its bytes */
		ck_assert(memmem(o.data, o.len, "\"row_key\":null}", strlen("\"row_key\":null}")) != NULL);
		rp_env_free(&e);
		rp_buf_free(&o);

		dlq = ct_slurp(ct_path("cut.jsonl"), &n);
		rp_jr_init(&d);
		ck_assert_msg(rp_jr_parse(&d, dlq, n - 1) == 0, "cut %zu: %s", cut, rp_error());
		ck_assert_int_eq(rp_jr_find(&d, "truncated_record", &m), 1);
		rp_buf_init(&s, 0);
		ck_assert_int_eq(rp_jr_string(m->val, m->val_len, &s), 0);
		ck_assert_uint_le(s.len, cut);
		ck_assert(memcmp(s.data, rec, s.len) == 0);
		/* kept as much as fits: the next character would pass the cut */
		if (s.len < len)
		{
			size_t		next = s.len + 1;

			while (next < len && (((unsigned char) rec[next]) & 0xC0) == 0x80)
				next++;
			ck_assert_uint_gt(next, cut);
		}
		rp_buf_free(&s);
		rp_jr_free(&d);
		free(dlq);
	}

	/* no dead-letter path: the stub alone */
	rp_env_init(&env, 5, 100, NULL);
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.t", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, rec, len, "{\"k\":1}", 7), 0);
	ck_assert_uint_eq(env.oversize, 1);
	ck_assert_uint_eq(env.dlq_lines, 0);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
}

END_TEST

START_TEST(test_store_escaped)
{
	RpBuf		want;

	rp_env_init(&env, 0, 0, NULL);
	ck_assert_int_eq(rp_env_begin(&env, &out, "we\"ird.ta ble", AT_MS, 1), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, "{}", 2, NULL, 0), 0);
	rp_buf_init(&want, 0);
	want_frame(&want, "begin", "\"we\\\"ird.ta ble\"", 0, ",\"total\":1");
	want_frame(&want, "row", "\"we\\\"ird.ta ble\"", 0, ",\"record\":{}");
	assert_out(&want);
	rp_buf_free(&want);
}

END_TEST

static void
assert_failed_end(void)
{
	size_t		before = out.len;

	rp_error_clear();
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), -1);
	ck_assert_uint_eq(out.len, before); /* no end frame appended */
}

START_TEST(test_no_end_on_failure)
{
	/* aborted by the caller (the copy failed) */
	rp_env_init(&env, 0, 0, NULL);
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.item", AT_MS, 10), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":1}", 8, NULL, 0), 0);
	rp_env_abort(&env);
	ck_assert_int_eq(env.state, RP_ENV_FAILED);
	assert_failed_end();
	rp_buf_put_char(&out, '\0');
	ck_assert(strstr(out.data, "\"kind\":\"end\"") == NULL);
	out.len--;
	ck_assert(strstr(rp_error(), "public.item") && strstr(rp_error(), "failed"));
	/* rows after the failure are refused too */
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":2}", 8, NULL, 0), -1);
	rp_env_free(&env);

	/*
	 * a record that is not a one-line JSON object fails the dump; the message
	 * names the table and seq, not the content
	 */
	out.len = 0;
	rp_env_init(&env, 0, 0, NULL);
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.item", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":1}", 8, NULL, 0), 0);
	{
		size_t		before = out.len;

		ck_assert_int_eq(rp_env_row(&env, &out, "[\"SECRET\"]", 10, NULL, 0), -1);
		ck_assert_uint_eq(out.len, before);
		ck_assert(strstr(rp_error(), "row 1 of public.item") != NULL);
		ck_assert(strstr(rp_error(), "SECRET") == NULL);
		ck_assert_int_eq(rp_env_row(&env, &out, "{\"a\":\n1}", 8, NULL, 0), -1);
	}
	assert_failed_end();
	rp_env_free(&env);

	/*
	 * a dead-letter file that cannot be opened fails the dump, nothing
	 * appended
	 */
	out.len = 0;
	rp_env_init(&env, 4, 100, ct_path("no/such/dir/dlq.jsonl"));
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.item", AT_MS, -1), 0);
	{
		size_t		before = out.len;

		ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":\"SECRET\"}", 15, "{\"id\":1}", 8), -1);
		ck_assert_uint_eq(out.len, before);
		ck_assert(strstr(rp_error(), "dead-letter") != NULL);
		ck_assert(strstr(rp_error(), "SECRET") == NULL);
	}
	assert_failed_end();
	ck_assert_uint_eq(env.seq, 0);
	rp_env_free(&env);

	/* a bad row key fails the dump */
	out.len = 0;
	rp_env_init(&env, 4, 100, NULL);
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.item", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":1234}", 11, "1234", 4), -1);
	assert_failed_end();
	rp_env_free(&env);

	/*
	 * out of order: a row or an end before begin; an end twice; begin while
	 * open
	 */
	out.len = 0;
	rp_env_init(&env, 0, 0, NULL);
	ck_assert_int_eq(rp_env_row(&env, &out, "{}", 2, NULL, 0), -1);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), -1);
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.t", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	assert_failed_end();
	ck_assert_int_eq(rp_env_row(&env, &out, "{}", 2, NULL, 0), -1);
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.t", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.u", AT_MS, -1), -1);
	assert_failed_end();
	/* a failed dump does not stop the next one */
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.v", AT_MS, -1), 0);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	/* bad arguments */
	ck_assert_int_eq(rp_env_begin(&env, &out, "", AT_MS, -1), -1);
	ck_assert_int_eq(rp_env_begin(&env, &out, "s.t", -(INT64_C(1) << 50), -1), -1);
}

END_TEST

START_TEST(test_resume)
{
	RpBuf		want;
	const char *id = "018F2E3B-0C4D-7A00-8123-456789ABCDEF";

	rp_env_init(&env, 0, 0, NULL);
	ck_assert_int_eq(rp_env_resume(&env, "public.item", id, AT_MS, 5), 0);
	ck_assert_uint_eq(out.len, 0);	/* no frame */
	ck_assert_str_eq(env.snapshot_id, "018f2e3b-0c4d-7a00-8123-456789abcdef");
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":6}", 8, NULL, 0), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":7}", 8, NULL, 0), 0);
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	rp_buf_init(&want, 0);
	want_frame(&want, "row", "\"public.item\"", 5, ",\"record\":{\"id\":6}");
	want_frame(&want, "row", "\"public.item\"", 6, ",\"record\":{\"id\":7}");
	want_frame(&want, "end", "\"public.item\"", 7, ",\"row_count\":7,\"completed_at\":\"" DONE "\"");
	assert_out(&want);
	rp_buf_free(&want);
	ck_assert_int_eq(rp_env_resume(&env, "public.item", "not-a-uuid", AT_MS, 0), -1);
	ck_assert_int_eq(rp_env_resume(&env, "public.item", NULL, AT_MS, 0), -1);
}

END_TEST

START_TEST(test_rfc3339)
{
	char		t[RP_RFC3339_MS_LEN + 1];

	ck_assert_int_eq(rp_rfc3339_ms(t, 0), 0);
	ck_assert_str_eq(t, "1970-01-01T00:00:00.000Z");
	ck_assert_int_eq(rp_rfc3339_ms(t, AT_MS), 0);
	ck_assert_str_eq(t, AT);
	ck_assert_int_eq(rp_rfc3339_ms(t, INT64_C(951782400000)), 0);
	ck_assert_str_eq(t, "2000-02-29T00:00:00.000Z");
	ck_assert_int_eq(rp_rfc3339_ms(t, -1), 0);
	ck_assert_str_eq(t, "1969-12-31T23:59:59.999Z");
	ck_assert_int_eq(rp_rfc3339_ms(t, INT64_C(253402300799999)), 0);
	ck_assert_str_eq(t, "9999-12-31T23:59:59.999Z");
	ck_assert_int_eq(rp_rfc3339_ms(t, INT64_C(-62167219200000)), 0);
	ck_assert_str_eq(t, "0000-01-01T00:00:00.000Z");
	ck_assert_int_eq(rp_rfc3339_ms(t, INT64_C(253402300800000)), -1);
	ck_assert_int_eq(rp_rfc3339_ms(t, INT64_C(-62167219200001)), -1);
}

END_TEST

/* Every frame reads back with the reader, with the fields the spec names. */
START_TEST(test_frames_read_back)
{
	RpJrDoc		d;
	const RpJrMember *m;
	int64_t		v;
	char	   *s,
			   *nl;
	int			frames = 0;

	rp_env_init(&env, 30, 10, ct_path("dlq.jsonl"));
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.item", AT_MS, 2), 0);
	ck_assert_int_eq(rp_env_row(&env, &out, "{\"id\":1}", 8, NULL, 0), 0);
	{
		static const char big[] = "{\"id\":2,\"pad\":\"0123456789012345678901\"}";

		ck_assert_int_eq(rp_env_row(&env, &out, big, strlen(big), "{\"id\":2}", 8), 0);
	}
	ck_assert_int_eq(rp_env_end(&env, &out, DONE_MS), 0);
	s = out_str();
	rp_jr_init(&d);
	for (char *p = s; (nl = strchr(p, '\n')) != NULL; p = nl + 1, frames++)
	{
		static const char *const kinds[] = {"begin", "row", "oversize", "end"};
		static const int64_t seqs[] = {0, 0, 1, 2};

		ck_assert_int_eq(rp_jr_parse(&d, p, (size_t) (nl - p)), 0);
		ck_assert_int_eq(rp_jr_find(&d, "kind", &m), 1);
		ck_assert(rp_jr_string_eq(m->val, m->val_len, kinds[frames]));
		ck_assert_int_eq(rp_jr_find(&d, "snapshot_id", &m), 1);
		ck_assert(rp_jr_string_eq(m->val, m->val_len, env.snapshot_id));
		ck_assert_int_eq(rp_jr_find(&d, "snapshot_at", &m), 1);
		ck_assert(rp_jr_string_eq(m->val, m->val_len, AT));
		ck_assert_int_eq(rp_jr_find(&d, "timestamp", &m), 1);
		ck_assert(rp_jr_string_eq(m->val, m->val_len, AT));
		ck_assert_int_eq(rp_jr_find(&d, "store", &m), 1);
		ck_assert(rp_jr_string_eq(m->val, m->val_len, "public.item"));
		ck_assert_int_eq(rp_jr_find(&d, "seq", &m), 1);
		ck_assert_int_eq(rp_jr_int64(m->val, m->val_len, &v), 0);
		ck_assert_int_eq(v, seqs[frames]);
	}
	ck_assert_int_eq(frames, 4);
	rp_jr_free(&d);
	free(s);
}

END_TEST

Suite	   *
ct_suite_envelope(void)
{
	Suite	   *s = suite_create("envelope");
	TCase	   *tc = tcase_create("envelope");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_three_rows);
	tcase_add_test(tc, test_empty_table);
	tcase_add_test(tc, test_oversize);
	tcase_add_test(tc, test_dlq_cuts);
	tcase_add_test(tc, test_store_escaped);
	tcase_add_test(tc, test_no_end_on_failure);
	tcase_add_test(tc, test_resume);
	tcase_add_test(tc, test_rfc3339);
	tcase_add_test(tc, test_frames_read_back);
	suite_add_tcase(s, tc);
	return s;
}
