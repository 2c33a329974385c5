/*
 * test_reassemble.c
 *    rp_reassemble and `replicant verify-snapshot`: dumps written by the
 *    envelope writer, then shuffled, duplicated, cut, spread over files and
 *    mixed with foreign lines, are told complete, truncated, open or
 *    conflicting; --rows prints a complete dump's records in seq order and
 *    leaves oversize stubs out; in a resumed log sink's log the newest
 *    complete dump of each table is found (--latest, --latest-rows) and the
 *    open one it supersedes left aside; warnings about skipped lines name the file,
 *    line and field and never a value (a canary in every record).
 *    Guarantees: backfill (DESIGN.md: tell a complete dump from a truncated
 *    one), G4 (value-free), G3 (a malformed frame is never counted).
 */
#include "ct_kit.h"

#include <stdarg.h>

#include "envelope/rp_envelope.h"
#include "envelope/rp_reassemble.h"
#include "cli/rp_cli.h"

#define AT_MS INT64_C(1796000523456)
#define CANARY "CANARY-5f3e9a"

/* ---- dumps ------------------------------------------------------------------ */

typedef struct Dump
{
	char	  **lines;			/* frames, each without its newline */
	int			n;
	char		id[RP_UUID_TEXT_LEN + 1];
	char	  **records;		/* the rows' records, by seq (NULL for a stub) */
	int			nrows;
} Dump;

static void
dump_add(Dump *d, const char *s, size_t len)
{
	d->lines = realloc(d->lines, sizeof(char *) * (size_t) (d->n + 1));
	d->lines[d->n++] = strndup(s, len);
}

/* Split the writer's output into lines, then empty it. */
static void
dump_take(Dump *d, RpBuf *out)
{
	size_t		start = 0;

	for (size_t i = 0; i < out->len; i++)
		if (out->data[i] == '\n')
		{
			dump_add(d, out->data + start, i - start);
			start = i + 1;
		}
	ck_assert_uint_eq(start, out->len);
	out->len = 0;
}

/*
 * A dump of nrows rows of store; every oversize_every-th row (when > 0) is
 * larger than max-record-bytes and becomes a stub; with_end: the end frame.
 */
static void
make_dump(Dump *d, const char *store, int nrows, int oversize_every, bool with_end)
{
	RpEnvelope	env;
	RpBuf		out;

	memset(d, 0, sizeof(*d));
	rp_env_init(&env, 200, 50, ct_path("dlq.jsonl"));
	rp_buf_init(&out, 0);
	ck_assert_int_eq(rp_env_begin(&env, &out, store, AT_MS, nrows), 0);
	memcpy(d->id, env.snapshot_id, sizeof(d->id));
	dump_take(d, &out);
	d->records = calloc((size_t) nrows + 1, sizeof(char *));
	d->nrows = nrows;
	for (int i = 0; i < nrows; i++)
	{
		char	   *rec;
		char		key[32];
		bool		big = oversize_every > 0 && i % oversize_every == oversize_every - 1;

		ck_assert_int_ge(asprintf(&rec, "{\"id\":%d,\"secret\":\"" CANARY "-%d\",\"pad\":\"%s\"}", i, i,
								  big ? "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" : ""), 0);
		snprintf(key, sizeof(key), "{\"id\":%d}", i);
		ck_assert_int_eq(rp_env_oversize(&env, strlen(rec)), big);
		ck_assert_int_eq(rp_env_row(&env, &out, rec, strlen(rec), key, strlen(key)), 0);
		dump_take(d, &out);
		if (big)
			free(rec);
		else
			d->records[i] = rec;
	}
	if (with_end)
	{
		ck_assert_int_eq(rp_env_end(&env, &out, AT_MS + 5000), 0);
		dump_take(d, &out);
	}
	rp_env_free(&env);
	rp_buf_free(&out);
}

static void
dump_free(Dump *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->lines[i]);
	free(d->lines);
	for (int i = 0; i < d->nrows; i++)
		free(d->records[i]);
	free(d->records);
	memset(d, 0, sizeof(*d));
}

/* Index of the row/stub frame with the given seq (frames are begin, rows, end). */
static int
frame_of_seq(const Dump *d, int seq)
{
	return 1 + seq;
}

static void
shuffle(char **lines, int n, unsigned seed)
{
	for (int i = n - 1; i > 0; i--)
	{
		int			j = (int) (rand_r(&seed) % (unsigned) (i + 1));
		char	   *t = lines[i];

		lines[i] = lines[j];
		lines[j] = t;
	}
}

static void
write_lines(const char *path, char *const *lines, int n)
{
	FILE	   *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	ck_assert_int_eq(fclose(f), 0);
}

/* ---- running the reassembler ---------------------------------------------------------- */

static RpBuf warnings;
static int	nwarnings;

static void
collect_warning(void *arg, const char *msg)
{
	rp_buf_put_text(&warnings, msg);
	rp_buf_put_char(&warnings, '\n');
	nwarnings++;
}

static void
setup(void)
{
	ct_setup_dir();
	rp_buf_init(&warnings, 0);
	nwarnings = 0;
}

static void
teardown(void)
{
	rp_buf_put_char(&warnings, '\0');
	/* G4: no warning ever carries a value */
	ck_assert_msg(strstr(warnings.data, CANARY) == NULL, "a warning carries a value: %s", warnings.data);
	rp_buf_free(&warnings);
	ct_teardown_dir();
}

static RpReasm *
run_files(const char *keep, int npaths, const char *const *paths)
{
	RpReasm    *r = rp_reasm_new();

	rp_reasm_set_warn(r, collect_warning, NULL);
	if (keep)
		ck_assert_int_eq(rp_reasm_keep_rows(r, keep), 0);
	ck_assert_msg(rp_reasm_run(r, paths, npaths) == 0, "%s", rp_error());
	return r;
}

static RpReasm *
run1(const char *keep, const char *path)
{
	return run_files(keep, 1, &path);
}

/* The report line of id. */
static char *
report(RpReasm *r, const char *id)
{
	const RpSnapReport *rep = rp_reasm_find(r, id);
	RpBuf		b;
	char	   *s;

	ck_assert_msg(rep != NULL, "no report for %s", id);
	rp_buf_init(&b, 0);
	rp_reasm_format(rep, &b);
	s = strndup(b.data, b.len);
	rp_buf_free(&b);
	ck_assert(strstr(s, CANARY) == NULL);
	return s;
}

static void
assert_report(RpReasm *r, const char *id, const char *store, const char *rest)
{
	char	   *got = report(r, id);
	char	   *want;

	ck_assert_int_ge(asprintf(&want, "%s %s %s", id, store, rest), 0);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
}

/* What rp_reasm_write_rows() writes, as a string. */
static char *
rows_of(RpReasm *r, int *rc)
{
	FILE	   *f = fopen(ct_path("rows.out"), "w+");
	char	   *s;

	ck_assert_ptr_nonnull(f);
	*rc = rp_reasm_write_rows(r, f);
	fclose(f);
	s = ct_slurp(ct_path("rows.out"), NULL);
	return s;
}

/* The records of d in seq order, stubs left out. */
static char *
expected_rows(const Dump *d)
{
	RpBuf		b;
	char	   *s;

	rp_buf_init(&b, 0);
	for (int i = 0; i < d->nrows; i++)
		if (d->records[i])
		{
			rp_buf_put_text(&b, d->records[i]);
			rp_buf_put_char(&b, '\n');
		}
	s = strndup(b.data ? b.data : "", b.len);
	rp_buf_free(&b);
	return s;
}

/* ---- tests -------------------------------------------------------------------------- */

START_TEST(test_complete_in_order)
{
	Dump		d;
	RpReasm    *r;
	const RpSnapReport *rep;

	make_dump(&d, "public.item", 3, 0, true);
	ck_assert_int_eq(d.n, 5);
	write_lines(ct_path("a.jsonl"), d.lines, d.n);
	r = run1(NULL, ct_path("a.jsonl"));
	ck_assert_uint_eq(rp_reasm_count(r), 1);
	rep = rp_reasm_get(r, 0);
	ck_assert_str_eq(rep->id, d.id);
	ck_assert_str_eq(rep->store, "public.item");
	ck_assert_int_eq(rep->state, RP_SNAP_COMPLETE);
	ck_assert(rep->has_begin);
	ck_assert_int_eq(rep->total, 3);
	ck_assert_uint_eq(rep->row_count, 3);
	ck_assert_uint_eq(rep->rows_seen, 3);
	assert_report(r, d.id, "public.item", "complete rows=3");
	ck_assert_uint_eq(rp_reasm_skipped(r), 0);
	rp_reasm_free(r);
	dump_free(&d);
}
END_TEST

START_TEST(test_shuffled)
{
	Dump		d;
	RpReasm    *r;
	char	   *got,
			   *want;
	int			rc;

	make_dump(&d, "public.item", 1000, 0, true);
	shuffle(d.lines, d.n, 42);
	write_lines(ct_path("a.jsonl"), d.lines, d.n);
	r = run1(d.id, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.item", "complete rows=1000");
	/* --rows: back in seq order */
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	want = expected_rows(&d);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	rp_reasm_free(r);
	dump_free(&d);
}
END_TEST

/* At-least-once: every frame delivered one to three times, in any order. */
START_TEST(test_duplicated)
{
	Dump		d;
	RpReasm    *r;
	char	  **all = NULL;
	int			n = 0;
	unsigned	seed = 7;
	char	   *got,
			   *want;
	int			rc;

	make_dump(&d, "public.item", 500, 0, true);
	for (int i = 0; i < d.n; i++)
	{
		int			copies = 1 + (int) (rand_r(&seed) % 3);

		for (int c = 0; c < copies; c++)
		{
			all = realloc(all, sizeof(char *) * (size_t) (n + 1));
			all[n++] = d.lines[i];
		}
	}
	ck_assert_int_gt(n, d.n);
	shuffle(all, n, 99);
	write_lines(ct_path("a.jsonl"), all, n);
	r = run1(d.id, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.item", "complete rows=500");
	ck_assert_uint_eq(rp_reasm_find(r, d.id)->rows_seen, 500);
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	want = expected_rows(&d);
	ck_assert_str_eq(got, want);	/* each row once */
	free(got);
	free(want);
	rp_reasm_free(r);
	free(all);
	dump_free(&d);
}
END_TEST

START_TEST(test_missing_seq)
{
	Dump		d;
	RpReasm    *r;
	char	  **kept = NULL;
	int			n = 0;
	int			rc;
	char	   *got;

	make_dump(&d, "public.item", 1000, 0, true);
	for (int i = 0; i < d.n; i++)
		if (i != frame_of_seq(&d, 17) && i != frame_of_seq(&d, 500) && i != frame_of_seq(&d, 999))
		{
			kept = realloc(kept, sizeof(char *) * (size_t) (n + 1));
			kept[n++] = d.lines[i];
		}
	shuffle(kept, n, 3);
	write_lines(ct_path("a.jsonl"), kept, n);
	r = run1(d.id, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.item", "truncated rows=1000 missing=3 (first missing seq 17)");
	ck_assert_int_eq(rp_reasm_find(r, d.id)->state, RP_SNAP_TRUNCATED);
	/* --rows refuses it */
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, -1);
	ck_assert_str_eq(got, "");
	ck_assert(strstr(rp_error(), "truncated") != NULL);
	free(got);
	rp_reasm_free(r);

	/* only seq 0 missing, the rest over two files */
	write_lines(ct_path("b.jsonl"), d.lines, 1);
	write_lines(ct_path("b2.jsonl"), d.lines + 2, d.n - 2);
	{
		const char *paths[] = {ct_path("b.jsonl"), ct_path("b2.jsonl")};

		r = run_files(NULL, 2, paths);
		assert_report(r, d.id, "public.item", "truncated rows=1000 missing=1 (first missing seq 0)");
		rp_reasm_free(r);
	}
	free(kept);
	dump_free(&d);
}
END_TEST

START_TEST(test_open)
{
	Dump		d;
	RpReasm    *r;
	char	  **twice;
	int			rc;
	char	   *got;

	make_dump(&d, "public.item", 10, 0, false);
	ck_assert_int_eq(d.n, 11);
	/* every frame twice: rows_seen counts each seq once */
	twice = malloc(sizeof(char *) * (size_t) d.n * 2);
	for (int i = 0; i < d.n; i++)
		twice[i] = twice[d.n + i] = d.lines[i];
	write_lines(ct_path("a.jsonl"), twice, 2 * d.n - 3);	/* and the last 3 rows only once */
	r = run1(d.id, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.item", "open rows_seen=10");
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, -1);
	ck_assert(strstr(rp_error(), "open") != NULL);
	free(got);
	rp_reasm_free(r);

	/* only a begin */
	write_lines(ct_path("b.jsonl"), d.lines, 1);
	r = run1(NULL, ct_path("b.jsonl"));
	assert_report(r, d.id, "public.item", "open rows_seen=0");
	rp_reasm_free(r);

	/* rows without begin or end */
	write_lines(ct_path("c.jsonl"), d.lines + 1, 4);
	r = run1(NULL, ct_path("c.jsonl"));
	assert_report(r, d.id, "public.item", "open rows_seen=4");
	ck_assert(!rp_reasm_find(r, d.id)->has_begin);
	rp_reasm_free(r);
	free(twice);
	dump_free(&d);
}
END_TEST

/* Replace the first occurrence of from in s by to (a malloc'd copy). */
static char *
replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	char	   *r;

	ck_assert_msg(at != NULL, "no \"%s\" in %s", from, s);
	ck_assert_int_ge(asprintf(&r, "%.*s%s%s", (int) (at - s), s, to, at + strlen(from)), 0);
	return r;
}

/* Two replacements. */
static char *
replace2(const char *s, const char *from1, const char *to1, const char *from2, const char *to2)
{
	char	   *once = replace(s, from1, to1);
	char	   *twice = replace(once, from2, to2);

	free(once);
	return twice;
}

static void
assert_conflict(Dump *d, char *extra, const char *want_rest)
{
	char	  **lines = malloc(sizeof(char *) * (size_t) (d->n + 1));
	RpReasm    *r;

	memcpy(lines, d->lines, sizeof(char *) * (size_t) d->n);
	lines[d->n] = extra;
	shuffle(lines, d->n + 1, 11);
	write_lines(ct_path("c.jsonl"), lines, d->n + 1);
	r = run1(d->id, ct_path("c.jsonl"));
	assert_report(r, d->id, "public.item", want_rest);
	ck_assert_int_eq(rp_reasm_find(r, d->id)->state, RP_SNAP_CONFLICT);
	rp_reasm_free(r);
	free(lines);
	free(extra);
}

START_TEST(test_conflict)
{
	Dump		d;
	char		seq_from[64];

	make_dump(&d, "public.item", 20, 0, true);
	/* the same seq, another record */
	assert_conflict(&d, replace(d.lines[frame_of_seq(&d, 5)], "\"id\":5,", "\"id\":55,"),
					"conflict seq=5");
	/* the same seq as a stub instead of a row */
	{
		char	   *stub;
		char	   *row = d.lines[frame_of_seq(&d, 7)];
		char	   *rec = strstr(row, ",\"record\":");

		ck_assert_int_ge(asprintf(&stub, "%.*s,\"bytes\":999,\"row_key\":{\"id\":7}}",
								  (int) (rec - row), row), 0);
		{
			char	   *s2 = replace(stub, "\"kind\":\"row\"", "\"kind\":\"oversize\"");

			free(stub);
			assert_conflict(&d, s2, "conflict seq=7");
		}
	}
	/* a second end with another row_count: conflict at the smaller count */
	assert_conflict(&d, replace2(d.lines[d.n - 1], "\"seq\":20", "\"seq\":21",
								 "\"row_count\":20", "\"row_count\":21"),
					"conflict seq=20");
	/* a row past row_count */
	snprintf(seq_from, sizeof(seq_from), "\"seq\":%d", 3);
	assert_conflict(&d, replace(d.lines[frame_of_seq(&d, 3)], seq_from, "\"seq\":25"),
					"conflict seq=25");
	/* a frame naming another store under the same id */
	assert_conflict(&d, replace(d.lines[frame_of_seq(&d, 9)], "\"store\":\"public.item\"",
								"\"store\":\"public.other\""),
					"conflict seq=9");
	/* a frame with another snapshot_at under the same id */
	assert_conflict(&d, replace2(d.lines[frame_of_seq(&d, 12)], ".456Z", ".457Z", ".456Z", ".457Z"),
					"conflict seq=12");
	dump_free(&d);
}
END_TEST

/* Several snapshots, change lines and checkpoints in one file. */
START_TEST(test_interleaved)
{
	Dump		a,
				b,
				c;
	char	  **all = NULL;
	int			n = 0;
	RpReasm    *r;
	int			rc;
	char	   *got,
			   *want;
	static const char *const foreign[] = {
		"{\"kind\":\"insert\",\"commit_lsn\":\"0/194C5F0\",\"end_lsn\":\"0/194C620\",\"xid\":728,\"commit_time\":\"2026-11-30T01:29:22.774341Z\",\"schema\":\"public\",\"table\":\"item\",\"new\":{\"id\":1,\"price\":\"24.90\"}}",
		"{\"kind\":\"checkpoint\",\"system_id\":\"7713770514009019979\",\"timeline\":1,\"slot\":\"demo\",\"commit_lsn\":\"0/194D290\",\"end_lsn\":\"0/194D3A0\"}",
		"{\"kind\":\"flush\",\"seq\":17,\"end_lsn\":\"0/194D3A0\"}",
	};

	make_dump(&a, "public.a", 300, 0, true);
	make_dump(&b, "public.b", 200, 0, true);
	make_dump(&c, "s.c", 100, 0, false);
	for (int i = 0; i < a.n; i++)
	{
		Dump	   *ds[] = {&a, &b, &c};

		for (int k = 0; k < 3; k++)
			if (i < ds[k]->n && !(ds[k] == &b && i == frame_of_seq(&b, 150)))
			{
				all = realloc(all, sizeof(char *) * (size_t) (n + 2));
				all[n++] = ds[k]->lines[i];
				if (i % 10 == 0)
					all[n++] = (char *) foreign[(i / 10) % 3];
			}
	}
	write_lines(ct_path("mixed.jsonl"), all, n);
	r = run1(a.id, ct_path("mixed.jsonl"));
	ck_assert_uint_eq(rp_reasm_count(r), 3);
	assert_report(r, a.id, "public.a", "complete rows=300");
	assert_report(r, b.id, "public.b", "truncated rows=200 missing=1 (first missing seq 150)");
	assert_report(r, c.id, "s.c", "open rows_seen=100");
	ck_assert_uint_eq(rp_reasm_skipped(r), 0);
	/* sorted by id */
	for (size_t i = 1; i < rp_reasm_count(r); i++)
		ck_assert_int_lt(strcmp(rp_reasm_get(r, i - 1)->id, rp_reasm_get(r, i)->id), 0);
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	want = expected_rows(&a);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	rp_reasm_free(r);
	free(all);
	dump_free(&a);
	dump_free(&b);
	dump_free(&c);
}
END_TEST

/* d's frames under the snapshot id id (d->id as well). */
static void
dump_set_id(Dump *d, const char *id)
{
	for (int i = 0; i < d->n; i++)
	{
		char	   *l = replace(d->lines[i], d->id, id);

		free(d->lines[i]);
		d->lines[i] = l;
	}
	snprintf(d->id, sizeof(d->id), "%s", id);
}

static const char *const resumed_ids[] = {
	"01900000-0000-7000-8000-000000000001", "01900000-0000-7000-8000-000000000002",
	"01900000-0000-7000-8000-000000000003", "01900000-0000-7000-8000-000000000004",
	"01900000-0000-7000-8000-000000000005",
};

/*
 * A resumed log sink's log, in path: public.a complete (ids 1, 3: 6 and 7
 * rows), open (2: 9 rows seen, 4: 2), public.b only open (5: 3), the
 * frames newest dump first.
 */
static void
write_resumed(Dump *d, const char *path)
{
	char	  **all = NULL;
	int			n = 0;

	make_dump(&d[0], "public.a", 6, 0, true);	/* an older complete dump */
	make_dump(&d[1], "public.a", 9, 0, false);	/* stopped: open */
	make_dump(&d[2], "public.a", 7, 0, true);	/* the resumed run's */
	make_dump(&d[3], "public.a", 2, 0, false);	/* open, after it */
	make_dump(&d[4], "public.b", 3, 0, false);	/* only open */
	for (int k = 4; k >= 0; k--)	/* the file order does not decide */
	{
		dump_set_id(&d[k], resumed_ids[k]);
		for (int i = 0; i < d[k].n; i++)
		{
			all = realloc(all, sizeof(char *) * (size_t) (n + 1));
			all[n++] = d[k].lines[i];
		}
	}
	write_lines(path, all, n);
	free(all);
}

/*
 * A log sink's resumed snapshot: per store, the newest complete dump is
 * the one a rebuild takes; an open dump before it is superseded, one after
 * it is not (rp_reasm_newest_complete, rp_reasm_superseded).
 */
START_TEST(test_newest_complete)
{
	Dump		d[5];
	const char *const *ids = resumed_ids;
	RpReasm    *r;

	write_resumed(d, ct_path("resumed.jsonl"));
	r = run1(NULL, ct_path("resumed.jsonl"));
	ck_assert_uint_eq(rp_reasm_count(r), 5);
	ck_assert_ptr_nonnull(rp_reasm_newest_complete(r, "public.a"));
	ck_assert_str_eq(rp_reasm_newest_complete(r, "public.a")->id, ids[2]);
	ck_assert_uint_eq(rp_reasm_newest_complete(r, "public.a")->row_count, 7);
	ck_assert_ptr_null(rp_reasm_newest_complete(r, "public.b"));
	ck_assert_ptr_null(rp_reasm_newest_complete(r, "public.c"));
	ck_assert(!rp_reasm_superseded(r, rp_reasm_find(r, ids[0])));	/* complete */
	ck_assert(rp_reasm_superseded(r, rp_reasm_find(r, ids[1])));
	ck_assert(!rp_reasm_superseded(r, rp_reasm_find(r, ids[2])));
	ck_assert(!rp_reasm_superseded(r, rp_reasm_find(r, ids[3])));
	ck_assert(!rp_reasm_superseded(r, rp_reasm_find(r, ids[4])));
	rp_reasm_free(r);
	for (int k = 0; k < 5; k++)
		dump_free(&d[k]);
}
END_TEST

/* Frames spread over two files (a rotated log): even seqs and the end in one. */
START_TEST(test_two_files)
{
	Dump		d;
	char	  **one = NULL,
			  **two = NULL;
	int			n1 = 0,
				n2 = 0;
	RpReasm    *r;
	int			rc;
	char	   *got,
			   *want;
	const char *paths[2];

	make_dump(&d, "public.item", 101, 0, true);
	for (int i = 0; i < d.n; i++)
	{
		bool		first = (i == 0 || i == d.n - 1 || (i - 1) % 2 == 0);

		if (first)
		{
			one = realloc(one, sizeof(char *) * (size_t) (n1 + 1));
			one[n1++] = d.lines[i];
		}
		else
		{
			two = realloc(two, sizeof(char *) * (size_t) (n2 + 1));
			two[n2++] = d.lines[i];
		}
	}
	shuffle(two, n2, 5);
	write_lines(ct_path("log.1"), one, n1);
	write_lines(ct_path("log.2"), two, n2);
	paths[0] = ct_path("log.2");
	paths[1] = ct_path("log.1");
	r = run_files(d.id, 2, paths);
	assert_report(r, d.id, "public.item", "complete rows=101");
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	want = expected_rows(&d);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	rp_reasm_free(r);

	/* either file alone is truncated or open */
	r = run1(NULL, ct_path("log.1"));
	assert_report(r, d.id, "public.item", "truncated rows=101 missing=50 (first missing seq 1)");
	rp_reasm_free(r);
	r = run1(NULL, ct_path("log.2"));
	assert_report(r, d.id, "public.item", "open rows_seen=50");
	rp_reasm_free(r);
	free(one);
	free(two);
	dump_free(&d);
}
END_TEST

/* Lines that are not frames are ignored; malformed frames are skipped with a warning. */
START_TEST(test_foreign_and_malformed)
{
	Dump		d;
	RpReasm    *r;
	char	  **all;
	int			n;
	char	   *row3 = NULL;
	const char *ignored[] = {
		"{\"kind\":\"insert\",\"new\":{\"id\":1}}",
		"{\"kind\":\"row\",\"seq\":1,\"record\":{\"id\":\"" CANARY "\"}}",	/* no snapshot_id */
		"{\"kind\":\"rows\",\"snapshot_id\":\"018f2e3b-0c4d-7a00-8123-456789abcdef\"}",
		"{\"kind\":7,\"snapshot_id\":\"018f2e3b-0c4d-7a00-8123-456789abcdef\"}",
		"{\"snapshot_id\":\"018f2e3b-0c4d-7a00-8123-456789abcdef\",\"store\":\"public.item\",\"seq\":3,\"reason\":\"record exceeds max-record-bytes\",\"bytes\":5000,\"truncated_record\":\"{\\\"id\\\":\\\"" CANARY "\"}",
		"[\"kind\",\"row\"]",
		"42",
		"\"" CANARY "\"",
		"null",
		"",
		"   ",
	};
	int			nignored = (int) (sizeof(ignored) / sizeof(ignored[0]));
	const char *malformed[6];

	make_dump(&d, "public.item", 5, 0, true);
	row3 = d.lines[frame_of_seq(&d, 3)];
	/* frames with a bad field: each must be skipped, not counted */
	malformed[0] = replace(row3, "\"seq\":3", "\"seq\":\"3\"");
	malformed[1] = replace(row3, "\"store\":\"public.item\",", "");
	malformed[2] = replace(row3, "\"seq\":3", "\"seq\":-3");
	ck_assert_int_ge(asprintf((char **) &malformed[3], "%.*s,\"record\":[\"" CANARY "\"]}",
							  (int) (strstr(row3, ",\"record\":") - row3), row3), 0);
	malformed[4] = replace(row3, "\"snapshot_id\":\"", "\"snapshot_id\":\"x");
	malformed[5] = replace(row3, "}}", "}");	/* cut: not JSON */

	/* file: every line but row 3 once, the foreign lines, the malformed row-3 variants */
	n = 0;
	all = malloc(sizeof(char *) * 64);
	for (int i = 0; i < d.n; i++)
		if (i != frame_of_seq(&d, 3))
			all[n++] = d.lines[i];
	for (int i = 0; i < nignored; i++)
		all[n++] = (char *) ignored[i];
	for (int i = 0; i < 6; i++)
		all[n++] = (char *) malformed[i];
	/* "   " is whitespace only: not JSON, so it warns; "" is skipped silently */
	write_lines(ct_path("a.jsonl"), all, n);
	r = run1(NULL, ct_path("a.jsonl"));
	ck_assert_uint_eq(rp_reasm_count(r), 1);
	/* the malformed copies of seq 3 did not fill the gap */
	assert_report(r, d.id, "public.item", "truncated rows=5 missing=1 (first missing seq 3)");
	ck_assert_uint_eq(rp_reasm_skipped(r), 6 + 1);
	ck_assert_int_eq(nwarnings, 7);
	rp_buf_put_char(&warnings, '\0');
	warnings.len--;
	/* the warnings name file:line and the field */
	ck_assert_msg(strstr(warnings.data, "a.jsonl:") != NULL, "%s", warnings.data);
	ck_assert_msg(strstr(warnings.data, "\"seq\" is a string, number expected") != NULL, "%s", warnings.data);
	ck_assert_msg(strstr(warnings.data, "frame lacks \"store\"") != NULL, "%s", warnings.data);
	ck_assert_msg(strstr(warnings.data, "\"seq\" is not an integer") != NULL, "%s", warnings.data);
	ck_assert_msg(strstr(warnings.data, "\"record\" is an array, object expected") != NULL, "%s", warnings.data);
	ck_assert_msg(strstr(warnings.data, "\"snapshot_id\" is not a UUID") != NULL, "%s", warnings.data);
	ck_assert_msg(strstr(warnings.data, "invalid JSON at byte") != NULL, "%s", warnings.data);
	rp_reasm_free(r);

	/* with a good copy of row 3 as well, it is complete */
	all[n++] = row3;
	write_lines(ct_path("b.jsonl"), all, n);
	r = run1(d.id, ct_path("b.jsonl"));
	assert_report(r, d.id, "public.item", "complete rows=5");
	rp_reasm_free(r);

	for (int i = 0; i < 6; i++)
		free((char *) malformed[i]);
	free(all);
	dump_free(&d);
}
END_TEST

/* Oversize stubs count toward row_count and are left out of --rows. */
START_TEST(test_oversize_stubs)
{
	Dump		d;
	RpReasm    *r;
	int			rc;
	char	   *got,
			   *want;
	const RpSnapReport *rep;

	make_dump(&d, "public.doc", 30, 4, true);	/* seqs 3, 7, 11 ... are stubs */
	ck_assert(strstr(d.lines[frame_of_seq(&d, 3)], "\"kind\":\"oversize\"") != NULL);
	shuffle(d.lines, d.n, 8);
	write_lines(ct_path("a.jsonl"), d.lines, d.n);
	r = run1(d.id, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.doc", "complete rows=30");
	rep = rp_reasm_find(r, d.id);
	ck_assert_uint_eq(rep->oversize, 7);
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	want = expected_rows(&d);
	ck_assert_str_eq(got, want);
	ck_assert_int_eq(ct_count(got, "\n"), 23);
	ck_assert(strstr(got, "\"id\":3,") == NULL);
	free(got);
	free(want);
	rp_reasm_free(r);
	dump_free(&d);
}
END_TEST

START_TEST(test_empty_table)
{
	Dump		d;
	RpReasm    *r;
	int			rc;
	char	   *got;

	make_dump(&d, "public.empty", 0, 0, true);
	ck_assert_int_eq(d.n, 2);
	write_lines(ct_path("a.jsonl"), d.lines, d.n);
	r = run1(d.id, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.empty", "complete rows=0");
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(got, "");
	free(got);
	rp_reasm_free(r);
	/* the end alone is complete too: every seq of 0..-1 is there */
	write_lines(ct_path("b.jsonl"), d.lines + 1, 1);
	r = run1(NULL, ct_path("b.jsonl"));
	assert_report(r, d.id, "public.empty", "complete rows=0");
	rp_reasm_free(r);
	dump_free(&d);
}
END_TEST

/* Sparse, large seqs: bitmaps are paged; counts stay exact. */
START_TEST(test_large_seqs)
{
	Dump		d;
	RpReasm    *r;
	char	   *lines[4];

	make_dump(&d, "public.big", 1, 0, false);
	lines[0] = d.lines[0];
	lines[1] = replace(d.lines[1], "\"seq\":0", "\"seq\":1000000000");
	lines[2] = replace(d.lines[1], "\"seq\":0", "\"seq\":1099511627776");	/* 2^40: refused */
	ck_assert_int_ge(asprintf(&lines[3], "{\"kind\":\"end\",\"snapshot_id\":\"%s\",\"snapshot_at\":\"2026-11-30T01:02:03.456Z\","
							  "\"timestamp\":\"2026-11-30T01:02:03.456Z\",\"store\":\"public.big\",\"seq\":1000000001,"
							  "\"row_count\":1000000001,\"completed_at\":\"2026-11-30T01:02:09.001Z\"}", d.id), 0);
	write_lines(ct_path("a.jsonl"), lines, 4);
	r = run1(NULL, ct_path("a.jsonl"));
	assert_report(r, d.id, "public.big", "truncated rows=1000000001 missing=1000000000 (first missing seq 0)");
	ck_assert_uint_eq(rp_reasm_skipped(r), 1);
	rp_reasm_free(r);
	free(lines[1]);
	free(lines[2]);
	free(lines[3]);
	dump_free(&d);
}
END_TEST

START_TEST(test_store_quoting)
{
	Dump		d;
	RpReasm    *r;

	make_dump(&d, "my schema.\"t\"", 2, 0, true);
	write_lines(ct_path("a.jsonl"), d.lines, d.n);
	r = run1(NULL, ct_path("a.jsonl"));
	assert_report(r, d.id, "\"my schema.\\\"t\\\"\"", "complete rows=2");
	ck_assert_str_eq(rp_reasm_find(r, d.id)->store, "my schema.\"t\"");
	rp_reasm_free(r);
	dump_free(&d);
}
END_TEST

START_TEST(test_errors)
{
	RpReasm    *r = rp_reasm_new();
	const char *paths[] = {ct_path("missing.jsonl")};

	ck_assert_int_eq(rp_reasm_keep_rows(r, "not-a-uuid"), -1);
	ck_assert_int_eq(rp_reasm_run(r, paths, 1), -1);
	ck_assert(strstr(rp_error(), "missing.jsonl") != NULL);
	rp_reasm_free(r);

	/* a directory cannot be read as lines */
	r = rp_reasm_new();
	paths[0] = ct_dir;
	ck_assert_int_eq(rp_reasm_run(r, paths, 1), -1);
	rp_reasm_free(r);

	/* --rows of an id not in the input */
	ct_write_file(ct_path("empty.jsonl"), "", 0, false);
	r = rp_reasm_new();
	paths[0] = ct_path("empty.jsonl");
	ck_assert_int_eq(rp_reasm_keep_rows(r, "018f2e3b-0c4d-7a00-8123-456789abcdef"), 0);
	ck_assert_int_eq(rp_reasm_run(r, paths, 1), 0);
	ck_assert_uint_eq(rp_reasm_count(r), 0);
	ck_assert_int_eq(rp_reasm_write_rows(r, stdout), -1);
	ck_assert_ptr_null(rp_reasm_find(r, "018f2e3b-0c4d-7a00-8123-456789abcdef"));
	rp_reasm_free(r);
}
END_TEST

/* --rows reads records back through a window: a record larger than it, rows out of file order. */
START_TEST(test_rows_window)
{
	RpEnvelope	env;
	RpBuf		out;
	Dump		d;
	char	   *big,
			   *got;
	RpBuf		want;
	RpReasm    *r;
	int			rc;
	char	  **rev;
	const char *paths[2];
	size_t		bign = ((size_t) 3 << 20) / 2;

	memset(&d, 0, sizeof(d));
	rp_env_init(&env, 0, 0, NULL);
	rp_buf_init(&out, 0);
	rp_buf_init(&want, 0);
	ck_assert_int_eq(rp_env_begin(&env, &out, "public.w", AT_MS, -1), 0);
	memcpy(d.id, env.snapshot_id, sizeof(d.id));
	dump_take(&d, &out);
	big = malloc(bign + 64);
	for (int i = 0; i < 2000; i++)
	{
		size_t		n;

		if (i % 500 == 7)
		{
			n = (size_t) snprintf(big, 64, "{\"id\":%d,\"blob\":\"", i);
			memset(big + n, 'a' + i % 26, bign);
			n += bign;
			memcpy(big + n, "\"}", 3);
			n += 2;
		}
		else
			n = (size_t) snprintf(big, 64, "{\"id\":%d,\"note\":\"" CANARY "\"}", i);
		ck_assert_int_eq(rp_env_row(&env, &out, big, n, NULL, 0), 0);
		dump_take(&d, &out);
		rp_buf_put_bytes(&want, big, n);
		rp_buf_put_char(&want, '\n');
	}
	ck_assert_int_eq(rp_env_end(&env, &out, AT_MS + 1), 0);
	dump_take(&d, &out);
	rp_env_free(&env);
	/* the second half first, in reverse order, in one file; the first half in another */
	rev = malloc(sizeof(char *) * (size_t) d.n);
	for (int i = 0; i < d.n; i++)
		rev[i] = d.lines[d.n - 1 - i];
	write_lines(ct_path("w.2"), rev, d.n / 2);
	write_lines(ct_path("w.1"), d.lines, d.n - d.n / 2);
	paths[0] = ct_path("w.2");
	paths[1] = ct_path("w.1");
	r = run_files(d.id, 2, paths);
	assert_report(r, d.id, "public.w", "complete rows=2000");
	got = rows_of(r, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(strlen(got), want.len);
	ck_assert(memcmp(got, want.data, want.len) == 0);
	free(got);
	rp_reasm_free(r);
	free(rev);
	free(big);
	rp_buf_free(&out);
	rp_buf_free(&want);
	dump_free(&d);
}
END_TEST

/* ---- the CLI ------------------------------------------------------------------------ */

/* Run verify-snapshot with stdout and stderr captured in files. */
static int
cli(char **out, char **err, int argc, ...)
{
	char	   *argv[16];
	va_list		ap;
	int			saved_out = dup(1),
				saved_err = dup(2),
				fo,
				fe,
				rc;

	va_start(ap, argc);
	argv[0] = "verify-snapshot";
	for (int i = 1; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc] = NULL;
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	fo = open(ct_path("cli.out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(ct_path("cli.err"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = rp_verify_snapshot_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(fo);
	close(fe);
	close(saved_out);
	close(saved_err);
	*out = ct_slurp(ct_path("cli.out"), NULL);
	*err = ct_slurp(ct_path("cli.err"), NULL);
	ck_assert(strstr(*out, CANARY) == NULL || argc > 2);	/* only --rows prints values */
	ck_assert_msg(strstr(*err, CANARY) == NULL, "stderr carries a value: %s", *err);
	return rc;
}

START_TEST(test_cli)
{
	Dump		a,
				b;
	char	   *out,
			   *err,
			   *want;
	char	  **lines;
	int			n = 0;

	make_dump(&a, "public.a", 4, 0, true);
	make_dump(&b, "public.b", 3, 0, true);
	write_lines(ct_path("a.jsonl"), a.lines, a.n);
	lines = malloc(sizeof(char *) * (size_t) b.n);
	for (int i = 0; i < b.n; i++)
		if (i != frame_of_seq(&b, 1))
			lines[n++] = b.lines[i];
	write_lines(ct_path("b.jsonl"), lines, n);		/* truncated */
	write_lines(ct_path("c.jsonl"), b.lines, b.n - 1);	/* open */
	write_lines(ct_path("bad.jsonl"), (char *[]) {"{\"kind\":\"row\",\"snapshot_id\":" CANARY "}"}, 1);

	/* all complete: 0 */
	ck_assert_int_eq(cli(&out, &err, 2, ct_path("a.jsonl")), 0);
	ck_assert_int_ge(asprintf(&want, "%s public.a complete rows=4\n", a.id), 0);
	ck_assert_str_eq(out, want);
	free(want), free(out), free(err);
	/* --quiet: nothing for complete snapshots */
	ck_assert_int_eq(cli(&out, &err, 3, "--quiet", ct_path("a.jsonl")), 0);
	ck_assert_str_eq(out, "");
	free(out), free(err);
	/* truncated: 4 */
	ck_assert_int_eq(cli(&out, &err, 3, ct_path("a.jsonl"), ct_path("b.jsonl")), RP_VERIFY_EXIT_TRUNCATED);
	ck_assert_int_eq(ct_count(out, "\n"), 2);
	ck_assert(strstr(out, "public.b truncated rows=3 missing=1 (first missing seq 1)\n") != NULL);
	free(out), free(err);
	/* open: 5 */
	ck_assert_int_eq(cli(&out, &err, 3, ct_path("a.jsonl"), ct_path("c.jsonl")), RP_VERIFY_EXIT_OPEN);
	ck_assert(strstr(out, "public.b open rows_seen=3\n") != NULL);
	free(out), free(err);
	/* b.jsonl and c.jsonl together hold every frame of b: complete */
	ck_assert_int_eq(cli(&out, &err, 3, ct_path("b.jsonl"), ct_path("c.jsonl")), 0);
	free(out), free(err);
	/* truncated wins over open: 4 (with -q, only those two lines) */
	write_lines(ct_path("c2.jsonl"), a.lines, a.n - 1);
	ck_assert_int_eq(cli(&out, &err, 4, "-q", ct_path("b.jsonl"), ct_path("c2.jsonl")), RP_VERIFY_EXIT_TRUNCATED);
	ck_assert_int_ge(asprintf(&want, "%s public.a open rows_seen=4\n%s public.b truncated rows=3 missing=1 (first missing seq 1)\n",
							  a.id, b.id), 0);
	if (strcmp(a.id, b.id) > 0)
	{
		free(want);
		ck_assert_int_ge(asprintf(&want, "%s public.b truncated rows=3 missing=1 (first missing seq 1)\n%s public.a open rows_seen=4\n",
								  b.id, a.id), 0);
	}
	ck_assert_str_eq(out, want);
	free(want), free(out), free(err);
	/* --rows of a complete snapshot: its records */
	ck_assert_int_eq(cli(&out, &err, 4, "--rows", a.id, ct_path("a.jsonl")), 0);
	want = expected_rows(&a);
	ck_assert_str_eq(out, want);
	free(want), free(out), free(err);
	/* --rows of a truncated one: 4, nothing on stdout, the report on stderr */
	ck_assert_int_eq(cli(&out, &err, 4, "--rows", b.id, ct_path("b.jsonl")), RP_VERIFY_EXIT_TRUNCATED);
	ck_assert_str_eq(out, "");
	ck_assert(strstr(err, "truncated") != NULL);
	free(out), free(err);
	/* --rows of an open one: 5; of an absent one: 5 */
	ck_assert_int_eq(cli(&out, &err, 4, "--rows", b.id, ct_path("c.jsonl")), RP_VERIFY_EXIT_OPEN);
	free(out), free(err);
	ck_assert_int_eq(cli(&out, &err, 4, "--rows", b.id, ct_path("a.jsonl")), RP_VERIFY_EXIT_OPEN);
	ck_assert(strstr(err, "no frame of snapshot") != NULL);
	free(out), free(err);
	/* no snapshot at all: 5; a malformed line warns without its content */
	ck_assert_int_eq(cli(&out, &err, 2, ct_path("bad.jsonl")), RP_VERIFY_EXIT_OPEN);
	ck_assert(strstr(err, "bad.jsonl:1: invalid JSON at byte 28") != NULL);
	ck_assert(strstr(err, "no snapshot frame") != NULL);
	free(out), free(err);
	/* usage: 2 */
	ck_assert_int_eq(cli(&out, &err, 1), RP_EXIT_USAGE);
	free(out), free(err);
	ck_assert_int_eq(cli(&out, &err, 3, "--bogus", ct_path("a.jsonl")), RP_EXIT_USAGE);
	free(out), free(err);
	ck_assert_int_eq(cli(&out, &err, 3, "--rows", "nope", ct_path("a.jsonl")), RP_EXIT_USAGE);
	free(out), free(err);
	ck_assert_int_eq(cli(&out, &err, 2, "--rows"), RP_EXIT_USAGE);
	free(out), free(err);
	/* help documents the statuses */
	ck_assert_int_eq(cli(&out, &err, 2, "--help"), 0);
	ck_assert(strstr(out, "Exit status:") && strstr(out, "  4  ") && strstr(out, "  5  "));
	free(out), free(err);
	/* I/O: 1 */
	ck_assert_int_eq(cli(&out, &err, 3, ct_path("a.jsonl"), ct_path("missing.jsonl")), RP_EXIT_ERROR);
	ck_assert(strstr(err, "missing.jsonl") != NULL);
	free(out), free(err);

	free(lines);
	dump_free(&a);
	dump_free(&b);
}
END_TEST

/* verify-snapshot --latest and --latest-rows on a resumed log sink's log */
START_TEST(test_cli_latest)
{
	Dump		d[5];
	char	   *out,
			   *err,
			   *want;
	char		path[512];

	snprintf(path, sizeof(path), "%s", ct_path("resumed.jsonl"));	/* ct_path's buffer is reused */
	write_resumed(d, path);
	/* plain: every dump, open ones make it 5 */
	ck_assert_int_eq(cli(&out, &err, 2, path), RP_VERIFY_EXIT_OPEN);
	ck_assert_int_eq(ct_count(out, "\n"), 5);
	free(out), free(err);
	/* --latest: a's newest complete dump and the open one after it, b's open one */
	ck_assert_int_eq(cli(&out, &err, 3, "--latest", path), RP_VERIFY_EXIT_OPEN);
	ck_assert_int_ge(asprintf(&want, "%s public.a complete rows=7\n%s public.a open rows_seen=2\n%s public.b open rows_seen=3\n",
							  resumed_ids[2], resumed_ids[3], resumed_ids[4]), 0);
	ck_assert_str_eq(out, want);
	free(want), free(out), free(err);
	/* --latest-rows: the newest complete dump's records */
	ck_assert_int_eq(cli(&out, &err, 4, "--latest-rows", "public.a", path), 0);
	want = expected_rows(&d[2]);
	ck_assert_str_eq(out, want);
	free(want), free(out), free(err);
	ck_assert_int_eq(cli(&out, &err, 4, "--latest-rows", "public.b", path), RP_VERIFY_EXIT_OPEN);
	ck_assert_str_eq(out, "");
	ck_assert(strstr(err, "no complete dump of public.b") != NULL);
	free(out), free(err);
	ck_assert_int_eq(cli(&out, &err, 6, "--rows", resumed_ids[0], "--latest-rows", "public.a", path),
					 RP_EXIT_USAGE);
	free(out), free(err);
	for (int k = 0; k < 5; k++)
		dump_free(&d[k]);
}
END_TEST

Suite *
ct_suite_reassemble(void)
{
	Suite	   *s = suite_create("reassemble");
	TCase	   *tc = tcase_create("reassemble");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_complete_in_order);
	tcase_add_test(tc, test_shuffled);
	tcase_add_test(tc, test_duplicated);
	tcase_add_test(tc, test_missing_seq);
	tcase_add_test(tc, test_open);
	tcase_add_test(tc, test_conflict);
	tcase_add_test(tc, test_interleaved);
	tcase_add_test(tc, test_newest_complete);
	tcase_add_test(tc, test_two_files);
	tcase_add_test(tc, test_foreign_and_malformed);
	tcase_add_test(tc, test_oversize_stubs);
	tcase_add_test(tc, test_empty_table);
	tcase_add_test(tc, test_large_seqs);
	tcase_add_test(tc, test_store_quoting);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_rows_window);
	tcase_add_test(tc, test_cli);
	tcase_add_test(tc, test_cli_latest);
	suite_add_tcase(s, tc);
	return s;
}
