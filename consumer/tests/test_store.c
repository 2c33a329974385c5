/*
 * test_store.c
 *    Transaction stores and spill files (consumer/rp_store.c), G5: memory
 *    stays under --max-memory by spilling to private files (0600 in a 0700
 *    folder), records come back exactly once and in order whatever their
 *    size, subtransaction aborts cut stores in memory and on disk,
 *    --max-spill halts, and spill files are deleted on free and on start.
 */
#include "ct_kit.h"

static RpSpill sp;
static char spill_dir[512];

static void
setup(void)
{
	ct_setup_dir();
	snprintf(spill_dir, sizeof(spill_dir), "%s/spill", ct_dir);
	memset(&sp, 0, sizeof(sp));
}

static void
teardown(void)
{
	if (sp.dir)
		rp_free(sp.dir);
	sp.dir = NULL;
	ct_teardown_dir();
}

/* A record: tag, u32 payload length, payload derived from seed. */
static unsigned char *
make_record(uint32_t seed, size_t payload, size_t *len)
{
	unsigned char *r = malloc(RP_RECORD_HEADER_LEN + payload);
	uint32_t	x = seed * 2654435761u + 1;

	r[0] = (unsigned char) ('a' + seed % 26);
	r[1] = (unsigned char) (payload >> 24);
	r[2] = (unsigned char) (payload >> 16);
	r[3] = (unsigned char) (payload >> 8);
	r[4] = (unsigned char) payload;
	for (size_t i = 0; i < payload; i++)
	{
		x = x * 1103515245u + 12345u;
		r[RP_RECORD_HEADER_LEN + i] = (unsigned char) (x >> 16);
	}
	*len = RP_RECORD_HEADER_LEN + payload;
	return r;
}

static void
append(RpStore *st, uint32_t seed, size_t payload)
{
	size_t		len;
	unsigned char *r = make_record(seed, payload, &len);

	ck_assert_msg(rp_store_append(st, r, len) == 0, "append %u: %s", seed, rp_error());
	free(r);
}

/* The store holds exactly records (seeds[i], sizes[i]), in order. */
static void
expect_records(RpStore *st, int n, const uint32_t *seeds, const size_t *sizes)
{
	RpStoreIter it;
	const unsigned char *rec;
	size_t		len;
	int			i = 0,
				rc;

	ck_assert_int_eq(rp_store_iter_start(&it, st), 0);
	while ((rc = rp_store_iter_next(&it, &rec, &len)) > 0)
	{
		size_t		wlen;
		unsigned char *want;

		ck_assert_msg(i < n, "more than the %d records stored", n);
		want = make_record(seeds[i], sizes[i], &wlen);
		ck_assert_msg(len == wlen, "record %d: %zu bytes, expected %zu", i, len, wlen);
		ck_assert_msg(memcmp(rec, want, len) == 0, "record %d differs", i);
		free(want);
		i++;
	}
	ck_assert_msg(rc == 0, "iteration failed: %s", rp_error());
	ck_assert_int_eq(i, n);
	/* the end stays the end */
	ck_assert_int_eq(rp_store_iter_next(&it, &rec, &len), 0);
	rp_store_iter_end(&it);
}

static const char *
spill_file(int which)
{
	DIR		   *d = opendir(spill_dir);
	struct dirent *de;
	static char path[1024];
	int			n = 0;

	ck_assert_ptr_nonnull(d);
	path[0] = '\0';
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "replicant-spill-", 16) == 0 && n++ == which)
			snprintf(path, sizeof(path), "%s/%s", spill_dir, de->d_name);
	closedir(d);
	return path[0] ? path : NULL;
}

/* ---- memory ------------------------------------------------------------------- */

START_TEST(test_memory_roundtrip)
{
	RpStore		st;
	uint32_t	seeds[200] = {0};
	size_t		sizes[200] = {0};
	size_t		total = 0;

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1 << 20, 1 << 20), 0);
	rp_store_init(&st, &sp);
	/* an empty store */
	expect_records(&st, 0, seeds, sizes);
	for (int i = 0; i < 200; i++)
	{
		seeds[i] = (uint32_t) i;
		sizes[i] = (size_t) (i * 37) % 900; /* includes empty payloads */
		append(&st, seeds[i], sizes[i]);
		total += RP_RECORD_HEADER_LEN + sizes[i];
	}
	ck_assert(!rp_store_spilled(&st));
	ck_assert_uint_eq(rp_store_length(&st), total);
	ck_assert_uint_eq(sp.mem_in_use, total);
	ck_assert_uint_eq(sp.disk_in_use, 0);
	ck_assert_uint_eq(sp.spills, 0);
	expect_records(&st, 200, seeds, sizes);
	/* reading does not consume: a second pass sees the same */
	expect_records(&st, 200, seeds, sizes);
	ck_assert_int_eq(ct_count_entries(spill_dir, ""), 0);
	rp_store_free(&st);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	/* freeing twice is harmless */
	rp_store_free(&st);
	ck_assert_uint_eq(sp.mem_in_use, 0);
}

END_TEST

START_TEST(test_memory_truncate)
{
	RpStore		st;
	uint32_t	seeds[] = {1, 2, 5};
	size_t		sizes[] = {10, 20, 50};
	uint64_t	cut;

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1 << 20, 1 << 20), 0);
	rp_store_init(&st, &sp);
	append(&st, 1, 10);
	append(&st, 2, 20);
	cut = rp_store_length(&st);
	append(&st, 3, 30);
	append(&st, 4, 40);
	ck_assert_int_eq(rp_store_truncate(&st, cut), 0);
	ck_assert_uint_eq(rp_store_length(&st), cut);
	ck_assert_uint_eq(sp.mem_in_use, cut);
	expect_records(&st, 2, seeds, sizes);
	append(&st, 5, 50);
	expect_records(&st, 3, seeds, sizes);
	/* a cut at or past the end changes nothing */
	ck_assert_int_eq(rp_store_truncate(&st, rp_store_length(&st) + 100), 0);
	expect_records(&st, 3, seeds, sizes);
	/* a cut to nothing */
	ck_assert_int_eq(rp_store_truncate(&st, 0), 0);
	ck_assert_uint_eq(rp_store_length(&st), 0);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	expect_records(&st, 0, seeds, sizes);
	rp_store_free(&st);
}

END_TEST

/* ---- spill -------------------------------------------------------------------- */

START_TEST(test_spill_modes_and_readback)
{
	RpStore		st;
	struct stat sb;
	char		file[1024];
	enum
	{
		N = 40
	};
	uint32_t	seeds[N];
	size_t		sizes[N];
	uint64_t	total = 0;
	mode_t		old = umask(0); /* modes must not depend on the umask */

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 4096, (uint64_t) 1 << 32), 0);
	ck_assert_int_eq(stat(spill_dir, &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 07777, 0700);

	rp_store_init(&st, &sp);
	for (int i = 0; i < N; i++)
	{
		seeds[i] = (uint32_t) (1000 + i);
		/* small ones, ones around and well past the 1 MB read chunk */
		if (i % 10 == 3)
			sizes[i] = (size_t) 3 * 1024 * 1024 + (size_t) i;
		else if (i % 10 == 7)
			sizes[i] = 1024 * 1024 - RP_RECORD_HEADER_LEN + (size_t) (i % 3) - 1;
		else
			sizes[i] = (size_t) (i * 7919) % 60000;
		append(&st, seeds[i], sizes[i]);
		total += RP_RECORD_HEADER_LEN + sizes[i];
		if (i == 0)
			ck_assert(!rp_store_spilled(&st));
	}
	umask(old);
	ck_assert(rp_store_spilled(&st));
	ck_assert_uint_eq(sp.spills, 1);
	ck_assert_uint_eq(rp_store_length(&st), total);
	ck_assert_uint_eq(sp.mem_in_use + sp.disk_in_use, total);
	/* write-behind keeps at most about 1 MB in memory */
	ck_assert_uint_lt(sp.mem_in_use, 4 * 1024 * 1024 + 64);

	ck_assert_ptr_nonnull(spill_file(0));
	snprintf(file, sizeof(file), "%s", spill_file(0));
	ck_assert_ptr_null(spill_file(1));
	ck_assert_int_eq(stat(file, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 07777, 0600);
	ck_assert_int_eq(sb.st_uid, geteuid());

	expect_records(&st, N, seeds, sizes);
	/* iteration drained the memory tail: everything is in the file now */
	ck_assert_int_eq(ct_file_size(file), (off_t) total);
	ck_assert_uint_eq(sp.disk_in_use, total);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	/* read back again, then more appended after a read still reads whole */
	expect_records(&st, N, seeds, sizes);

	rp_store_free(&st);
	ck_assert(!ct_exists(file));
	ck_assert_uint_eq(sp.disk_in_use, 0);
	ck_assert_uint_eq(sp.mem_in_use, 0);
}

END_TEST

START_TEST(test_spill_record_larger_than_chunk_only)
{
	/* one record of 5 MB, and then a tiny one: the read buffer grows */
	RpStore		st;
	uint32_t	seeds[] = {7, 8, 9};
	size_t		sizes[] = {5 * 1024 * 1024, 1, 0};

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 100, (uint64_t) 1 << 32), 0);
	rp_store_init(&st, &sp);
	for (int i = 0; i < 3; i++)
		append(&st, seeds[i], sizes[i]);
	ck_assert(rp_store_spilled(&st));
	expect_records(&st, 3, seeds, sizes);
	rp_store_free(&st);
}

END_TEST

START_TEST(test_spill_budget_shared)
{
	/* the memory cap is across stores: the one that crosses it spills */
	RpStore		a,
				b;
	uint32_t	sa[] = {1, 2};
	size_t		za[] = {600, 600};
	uint32_t	sb_[] = {3, 4};
	size_t		zb[] = {600, 600};

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 2000, 1 << 20), 0);
	rp_store_init(&a, &sp);
	rp_store_init(&b, &sp);
	append(&a, 1, 600);
	append(&a, 2, 600);
	append(&b, 3, 600);
	ck_assert(!rp_store_spilled(&a));
	ck_assert(!rp_store_spilled(&b));
	append(&b, 4, 600);
	ck_assert(!rp_store_spilled(&a));
	ck_assert(rp_store_spilled(&b));
	ck_assert_uint_le(sp.mem_in_use, 2000);
	expect_records(&a, 2, sa, za);
	expect_records(&b, 2, sb_, zb);
	rp_store_free(&b);
	ck_assert_uint_eq(sp.disk_in_use, 0);
	rp_store_free(&a);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	ck_assert_ptr_null(spill_file(0));
}

END_TEST

START_TEST(test_spill_charge_shared)
{
	/*
	 * the sink's working state is charged to the same cap: stores spill
	 * sooner
	 */
	RpStore		a;
	uint32_t	sa[] = {1, 2};
	size_t		za[] = {600, 600};

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 2000, 1 << 20), 0);
	rp_spill_charge(&sp, 1000);
	ck_assert_uint_eq(sp.sink_in_use, 1000);
	ck_assert_uint_eq(sp.mem_in_use, 1000);
	rp_store_init(&a, &sp);
	append(&a, 1, 600);
	ck_assert(!rp_store_spilled(&a));
	append(&a, 2, 600);
	ck_assert(rp_store_spilled(&a));
	ck_assert_uint_le(sp.mem_in_use, 2000);
	expect_records(&a, 2, sa, za);
	rp_store_free(&a);
	rp_spill_charge(&sp, -1000);
	ck_assert_uint_eq(sp.sink_in_use, 0);
	ck_assert_uint_eq(sp.mem_in_use, 0);
}

END_TEST

START_TEST(test_spill_gives_memory_back)
{
	/*
	 * A store that spills keeps only its write-behind tail: the buffer that
	 * grew to its in-memory part is given back, or it would stay resident
	 * while the budget no longer counts it.
	 */
	RpStore		a;
	uint32_t	seeds[64];
	size_t		sizes[64];

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 32 << 20, (uint64_t) 1 << 30), 0);
	rp_store_init(&a, &sp);
	for (int i = 0; i < 64; i++)
	{
		seeds[i] = (uint32_t) i;
		sizes[i] = 1 << 20;
		append(&a, seeds[i], sizes[i]);
	}
	ck_assert(rp_store_spilled(&a));
	ck_assert_uint_le(a.mem.cap, 4 << 20);
	ck_assert_uint_le(sp.mem_in_use, 4 << 20);
	expect_records(&a, 64, seeds, sizes);
	rp_store_free(&a);
	ck_assert_uint_eq(sp.disk_in_use, 0);
}

END_TEST

START_TEST(test_spill_truncate_in_file)
{
	RpStore		st;
	uint32_t	seeds[] = {1, 2, 3, 9, 10};
	size_t		sizes[] = {5000, 5000, 5000, 700000, 42};
	uint64_t	cut;
	const char *file;

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1000, (uint64_t) 1 << 32), 0);
	rp_store_init(&st, &sp);
	append(&st, 1, 5000);
	ck_assert(rp_store_spilled(&st));
	append(&st, 2, 5000);
	append(&st, 3, 5000);
	cut = rp_store_length(&st);
	/* more than the write-behind: some of what goes is on disk */
	append(&st, 4, 800000);
	append(&st, 5, 800000);
	append(&st, 6, 10);
	file = spill_file(0);
	ck_assert_int_gt(ct_file_size(file), (off_t) cut);
	ck_assert_int_eq(rp_store_truncate(&st, cut), 0);
	ck_assert_uint_eq(rp_store_length(&st), cut);
	ck_assert_int_eq(ct_file_size(file), (off_t) cut);
	ck_assert_uint_eq(sp.disk_in_use, cut);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	expect_records(&st, 3, seeds, sizes);
	/* appends after the cut land after it */
	append(&st, 9, 700000);
	append(&st, 10, 42);
	expect_records(&st, 5, seeds, sizes);
	rp_store_free(&st);
	ck_assert(!ct_exists(file));
	ck_assert_uint_eq(sp.disk_in_use, 0);
	ck_assert_uint_eq(sp.mem_in_use, 0);
}

END_TEST

START_TEST(test_spill_truncate_in_memory_tail)
{
	/* a spilled store's cut that falls in the unwritten tail */
	RpStore		st;
	uint32_t	seeds[] = {1, 2, 5};
	size_t		sizes[] = {5000, 100, 7};
	uint64_t	cut,
				on_disk;

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1000, (uint64_t) 1 << 32), 0);
	rp_store_init(&st, &sp);
	append(&st, 1, 5000);
	ck_assert(rp_store_spilled(&st));
	on_disk = sp.disk_in_use;
	append(&st, 2, 100);
	cut = rp_store_length(&st);
	append(&st, 3, 100);
	append(&st, 4, 100);
	ck_assert_uint_eq(sp.disk_in_use, on_disk);
	ck_assert_int_eq(rp_store_truncate(&st, cut), 0);
	ck_assert_uint_eq(rp_store_length(&st), cut);
	ck_assert_uint_eq(sp.disk_in_use, on_disk);
	ck_assert_uint_eq(sp.mem_in_use, cut - on_disk);
	append(&st, 5, 7);
	expect_records(&st, 3, seeds, sizes);
	rp_store_free(&st);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	ck_assert_uint_eq(sp.disk_in_use, 0);
}

END_TEST

START_TEST(test_spill_limit)
{
	RpStore		st;
	size_t		len;
	unsigned char *r;
	const char *file;
	int			rc = 0,
				i;

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1000, 20000), 0);
	rp_store_init(&st, &sp);
	rp_error_clear();
	for (i = 0; i < 100 && rc == 0; i++)
	{
		r = make_record((uint32_t) i, 3000, &len);
		rc = rp_store_append(&st, r, len);
		free(r);
		/* write-behind is 1 MB: force the tail out by reading */
		if (rc == 0 && rp_store_spilled(&st))
		{
			RpStoreIter it;

			rc = rp_store_iter_start(&it, &st);
			rp_store_iter_end(&it);
		}
	}
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SPILL_LIMIT);
	ck_assert_msg(strstr(rp_error(), "--max-spill") != NULL, "%s", rp_error());
	ck_assert_msg(strstr(rp_error(), "20000") != NULL, "%s", rp_error());
	ck_assert_uint_le(sp.disk_in_use, 20000);
	file = spill_file(0);
	ck_assert_ptr_nonnull(file);
	rp_store_free(&st);
	ck_assert(!ct_exists(file));
	ck_assert_uint_eq(sp.disk_in_use, 0);
	ck_assert_uint_eq(sp.mem_in_use, 0);
}

END_TEST

START_TEST(test_spill_limit_first_spill)
{
	/* the very first spill already past the cap */
	RpStore		st;
	size_t		len;
	unsigned char *r = make_record(1, 5000, &len);

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 100, 1000), 0);
	rp_store_init(&st, &sp);
	rp_error_clear();
	ck_assert_int_eq(rp_store_append(&st, r, len), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_SPILL_LIMIT);
	free(r);
	rp_store_free(&st);
	ck_assert_ptr_null(spill_file(0));
	ck_assert_uint_eq(sp.mem_in_use, 0);
	ck_assert_uint_eq(sp.disk_in_use, 0);
}

END_TEST

START_TEST(test_free_deletes_file)
{
	RpStore		st;
	char		path[1024];

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 10, 1 << 20), 0);
	rp_store_init(&st, &sp);
	append(&st, 1, 100);
	ck_assert(rp_store_spilled(&st));
	snprintf(path, sizeof(path), "%s", st.path);
	ck_assert(ct_exists(path));
	ck_assert_msg(strncmp(path, spill_dir, strlen(spill_dir)) == 0, "%s", path);
	rp_store_free(&st);
	ck_assert(!ct_exists(path));
	ck_assert_ptr_null(st.path);
	ck_assert_int_eq(st.fd, -1);
	ck_assert_uint_eq(sp.disk_in_use, 0);
	ck_assert_uint_eq(sp.mem_in_use, 0);
	ck_assert_int_eq(ct_count_entries(spill_dir, ""), 0);
}

END_TEST

START_TEST(test_init_removes_stale)
{
	const char *keep[] = {"notes.txt", "replicant-spill", "replicant-spillover", "xreplicant-spill-1"};
	const char *stale[] = {"replicant-spill-1234-1", "replicant-spill-99999-17", "replicant-spill-"};
	char		p[1024];
	struct stat sb;

	ck_assert_int_eq(mkdir(spill_dir, 0755), 0);
	ck_assert_int_eq(chmod(spill_dir, 0755), 0);
	for (size_t i = 0; i < 4; i++)
	{
		snprintf(p, sizeof(p), "%s/%s", spill_dir, keep[i]);
		ct_write_file(p, "keep", 4, false);
	}
	for (size_t i = 0; i < 3; i++)
	{
		snprintf(p, sizeof(p), "%s/%s", spill_dir, stale[i]);
		ct_write_file(p, "old", 3, false);
	}
	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1 << 20, 1 << 20), 0);
	for (size_t i = 0; i < 4; i++)
	{
		snprintf(p, sizeof(p), "%s/%s", spill_dir, keep[i]);
		ck_assert_msg(ct_exists(p), "%s was removed", keep[i]);
	}
	for (size_t i = 0; i < 3; i++)
	{
		snprintf(p, sizeof(p), "%s/%s", spill_dir, stale[i]);
		ck_assert_msg(!ct_exists(p), "%s was left", stale[i]);
	}
	/* an existing folder is made private */
	ck_assert_int_eq(stat(spill_dir, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 07777, 0700);
	ck_assert_int_eq(ct_count_entries(spill_dir, ""), 4);
}

END_TEST

START_TEST(test_init_error)
{
	/* a spill "folder" that is a file */
	ct_write_file(spill_dir, "x", 1, false);
	rp_error_clear();
	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1, 1), -1);
	ck_assert_msg(strstr(rp_error(), "spill") != NULL, "%s", rp_error());
}

END_TEST

START_TEST(test_iter_corrupt_memory)
{
	/* a record header that claims more than is there: fail, do not overread */
	RpStore		st;
	RpStoreIter it;
	const unsigned char *rec;
	size_t		len;
	unsigned char bad[8] = {'I', 0, 0, 0, 100, 1, 2, 3};

	ck_assert_int_eq(rp_spill_init(&sp, spill_dir, 1 << 20, 1 << 20), 0);
	rp_store_init(&st, &sp);
	ck_assert_int_eq(rp_store_append(&st, bad, sizeof(bad)), 0);
	ck_assert_int_eq(rp_store_iter_start(&it, &st), 0);
	rp_error_clear();
	ck_assert_int_eq(rp_store_iter_next(&it, &rec, &len), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_MALFORMED);
	rp_store_iter_end(&it);
	rp_store_free(&st);
}

END_TEST

Suite	   *
ct_suite_store(void)
{
	Suite	   *s = suite_create("store");
	TCase	   *tc = tcase_create("store");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_memory_roundtrip);
	tcase_add_test(tc, test_memory_truncate);
	tcase_add_test(tc, test_spill_modes_and_readback);
	tcase_add_test(tc, test_spill_record_larger_than_chunk_only);
	tcase_add_test(tc, test_spill_budget_shared);
	tcase_add_test(tc, test_spill_charge_shared);
	tcase_add_test(tc, test_spill_gives_memory_back);
	tcase_add_test(tc, test_spill_truncate_in_file);
	tcase_add_test(tc, test_spill_truncate_in_memory_tail);
	tcase_add_test(tc, test_spill_limit);
	tcase_add_test(tc, test_spill_limit_first_spill);
	tcase_add_test(tc, test_free_deletes_file);
	tcase_add_test(tc, test_init_removes_stale);
	tcase_add_test(tc, test_init_error);
	tcase_add_test(tc, test_iter_corrupt_memory);
	suite_add_tcase(s, tc);
	return s;
}
