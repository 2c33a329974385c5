/*
 * test_fold.c
 *    Aggregate folds (consumer/rp_fold.c), exact decimals
 *    (consumer/rp_decimal.c) and the seed snapshot's visibility rule
 *    (consumer/rp_xidsnap.c): every fold under insert, update within and
 *    across coordinates, delete of a shared min/max value, NULL measures,
 *    NaN and infinities, count_distinct multiplicities.
 */
#include "ct_kit.h"

#include <malloc.h>

#include "agg/rp_decimal.h"
#include "agg/rp_fold.h"
#include "agg/rp_xidsnap.h"

/* A measure value read from decimal text, as the binding reader makes it. */
typedef struct TVal
{
	RpFoldValue v;
	RpDecimal	num;
	RpBuf		key;
	char text[	64];
} TVal;

static void
tval(TVal *t, const char *text)
{
	int			kind;

	memset(t, 0, sizeof(*t));
	rp_decimal_init(&t->num);
	rp_buf_init(&t->key, 32);
	if (text == NULL)
	{
		t->v.null = true;
		return;
	}
	snprintf(t->text, sizeof(t->text), "%s", text);
	kind = rp_decimal_parse(&t->num, text, &t->v.dscale);
	ck_assert_int_ge(kind, 0);
	t->v.kind = (RpDecKind) kind;
	if (kind == RP_DEC_FINITE)
		rp_decimal_key(&t->num, &t->key);
	else
		rp_decimal_special_key((RpDecKind) kind, &t->key);
	t->v.num = &t->num;
	t->v.key = t->key.data;
	t->v.keylen = t->key.len;
	t->v.text = t->text;
	t->v.textlen = strlen(t->text);
}

static void
tval_free(TVal *t)
{
	rp_decimal_free(&t->num);
	rp_buf_free(&t->key);
}

static RpFoldCell *
cell(RpFold *f, const char *coord)
{
	return rp_fold_cell(f, coord, strlen(coord), coord, strlen(coord));
}

/* k rows of value text (NULL: a NULL measure) at coord */
static RpFoldStatus
put(RpFold *f, const char *coord, const char *text, int64_t k)
{
	TVal		t;
	RpFoldStatus st;

	tval(&t, text);
	st = rp_fold_apply(f, cell(f, coord), &t.v, k);
	tval_free(&t);
	return st;
}

/* An update: old row out of one coordinate, new row into another. */
static void
update(RpFold *f, const char *oc, const char *ov, const char *nc, const char *nv)
{
	ck_assert_int_eq(put(f, oc, ov, -1), RP_FOLD_OK);
	ck_assert_int_eq(put(f, nc, nv, 1), RP_FOLD_OK);
}

/* "REMOVED", "NULL" or the value's text */
static const char *
result(RpFold *f, const char *coord)
{
	static char out[256];
	RpBuf		b;
	RpFoldResult r;

	rp_buf_init(&b, 64);
	r = rp_fold_result(f, cell(f, coord), &b);
	if (r == RP_FOLD_REMOVED)
		snprintf(out, sizeof(out), "REMOVED");
	else if (r == RP_FOLD_NULL)
		snprintf(out, sizeof(out), "NULL");
	else
		snprintf(out, sizeof(out), "%.*s", (int) b.len, b.data);
	rp_buf_free(&b);
	return out;
}

/* ---- decimals ------------------------------------------------------------------- */

static const char *
dtext(const RpDecimal *d, int min_scale)
{
	static char out[2048];
	RpBuf		b;

	rp_buf_init(&b, 64);
	rp_decimal_text(d, min_scale, &b);
	snprintf(out, sizeof(out), "%.*s", (int) b.len, b.data);
	rp_buf_free(&b);
	return out;
}

START_TEST(test_decimal_exact)
{
	RpDecimal	a,
				b;
	int			ds;

	rp_decimal_init(&a);
	rp_decimal_init(&b);
	/* 0.1 + 0.2 in doubles is not 0.3, and the sum says so, exactly */
	rp_decimal_set_double(&a, 0.1);
	rp_decimal_set_double(&b, 0.2);
	rp_decimal_addmul(&a, &b, 1);
	ck_assert_str_eq(dtext(&a, 0), "0.3000000000000000166533453693773481063544750213623046875");
	rp_decimal_addmul(&a, &b, -1);
	rp_decimal_set_double(&b, 0.1);
	ck_assert_int_eq(rp_decimal_cmp(&a, &b), 0);

	/* numeric text: adding and taking back leaves the scale's zeros */
	ck_assert_int_eq(rp_decimal_parse(&a, "12.340", &ds), RP_DEC_FINITE);
	ck_assert_int_eq(ds, 3);
	ck_assert_int_eq(rp_decimal_parse(&b, "-99999999999999999999.0005", &ds), RP_DEC_FINITE);
	rp_decimal_addmul(&a, &b, 3);
	ck_assert_str_eq(dtext(&a, 3), "-299999999999999999984.6615");
	rp_decimal_addmul(&a, &b, -3);
	ck_assert_str_eq(dtext(&a, 3), "12.340");

	/* int64 extremes */
	rp_decimal_set_int64(&a, INT64_MIN);
	rp_decimal_set_int64(&b, INT64_MIN);
	rp_decimal_addmul(&a, &b, 1);
	ck_assert_str_eq(dtext(&a, 0), "-18446744073709551616");

	/* avg rounding, half away from zero */
	{
		RpBuf		o;

		rp_buf_init(&o, 32);
		rp_decimal_set_int64(&a, -7);
		rp_decimal_div_text(&a, 3, 4, &o);
		rp_buf_put_char(&o, ' ');
		rp_decimal_set_int64(&a, 5);
		rp_decimal_div_text(&a, 2, 0, &o);
		rp_buf_put_char(&o, ' ');
		rp_decimal_set_int64(&a, -5);
		rp_decimal_div_text(&a, 2, 0, &o);
		rp_buf_put_char(&o, '\0');
		ck_assert_str_eq(o.data, "-2.3333 3 -3");
		rp_buf_free(&o);
	}

	/* specials and garbage */
	ck_assert_int_eq(rp_decimal_parse(&a, "NaN", &ds), RP_DEC_NAN);
	ck_assert_int_eq(rp_decimal_parse(&a, "-Infinity", &ds), RP_DEC_NINF);
	ck_assert_int_eq(rp_decimal_parse(&a, "1.2.3", &ds), -1);
	ck_assert_int_eq(rp_decimal_parse(&a, "", &ds), -1);
	rp_decimal_free(&a);
	rp_decimal_free(&b);
}

END_TEST

START_TEST(test_decimal_numeric_encoding)
{
	/* 12345.678 = digits 1, 2345, 6780; weight 1; dscale 3 */
	const unsigned char pos[] = {0, 3, 0, 1, 0x00, 0x00, 0, 3, 0, 1, 0x09, 0x29, 0x1A, 0x7C};

	/* -0.0001: one digit 1 at weight -1 */
	const unsigned char neg[] = {0, 1, 0xFF, 0xFF, 0x40, 0x00, 0, 4, 0, 1};

	/* 20000: one digit 2 at weight 1 */
	const unsigned char big[] = {0, 1, 0, 1, 0, 0, 0, 0, 0, 2};
	const unsigned char nan[] = {0, 0, 0, 0, 0xC0, 0x00, 0, 0};
	const unsigned char bad[] = {0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10};	/* digit 10000 */
	RpDecimal	d;
	int			ds;

	rp_decimal_init(&d);
	ck_assert_int_eq(rp_decimal_set_numeric(&d, pos, sizeof(pos), &ds), RP_DEC_FINITE);
	ck_assert_int_eq(ds, 3);
	ck_assert_str_eq(dtext(&d, ds), "12345.678");
	ck_assert_int_eq(rp_decimal_set_numeric(&d, neg, sizeof(neg), &ds), RP_DEC_FINITE);
	ck_assert_str_eq(dtext(&d, ds), "-0.0001");
	ck_assert_int_eq(rp_decimal_set_numeric(&d, big, sizeof(big), &ds), RP_DEC_FINITE);
	ck_assert_str_eq(dtext(&d, ds), "20000");
	ck_assert_int_eq(rp_decimal_set_numeric(&d, nan, sizeof(nan), &ds), RP_DEC_NAN);
	ck_assert_int_eq(rp_decimal_set_numeric(&d, bad, sizeof(bad), &ds), -1);
	ck_assert_int_eq(rp_decimal_set_numeric(&d, pos, sizeof(pos) - 2, &ds), -1);
	rp_decimal_free(&d);
}

END_TEST

START_TEST(test_decimal_key_order)
{
	const char *sorted[] = {"-1000", "-10.5", "-10.25", "-10", "-0.001", "0", "0.0001",
	"0.5", "1", "1.05", "9.99", "10", "10.000001", "123456789012345678901234567890"};
	int			n = (int) (sizeof(sorted) / sizeof(sorted[0]));
	TVal		a,
				b;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
		{
			int			r;

			tval(&a, sorted[i]);
			tval(&b, sorted[j]);
			r = memcmp(a.v.key, b.v.key, a.v.keylen < b.v.keylen ? a.v.keylen : b.v.keylen);
			if (r == 0)
				r = (a.v.keylen > b.v.keylen) - (a.v.keylen < b.v.keylen);
			ck_assert_msg((r < 0) == (i < j) && (r == 0) == (i == j), "%s vs %s", sorted[i], sorted[j]);
			tval_free(&a);
			tval_free(&b);
		}
	/* equal values, other scales: one key */
	tval(&a, "1.5");
	tval(&b, "1.500");
	ck_assert_uint_eq(a.v.keylen, b.v.keylen);
	ck_assert_int_eq(memcmp(a.v.key, b.v.key, a.v.keylen), 0);
	tval_free(&a);
	tval_free(&b);
	/* -Infinity < everything < Infinity < NaN */
	tval(&a, "-Infinity");
	tval(&b, "-1000");
	ck_assert_int_lt(memcmp(a.v.key, b.v.key, 1), 0);
	tval_free(&a);
	tval_free(&b);
	tval(&a, "Infinity");
	tval(&b, "NaN");
	ck_assert_int_lt(memcmp(a.v.key, b.v.key, 1), 0);
	tval_free(&b);
	tval(&b, "123456789012345678901234567890");
	ck_assert_int_gt(memcmp(a.v.key, b.v.key, 1), 0);
	tval_free(&a);
	tval_free(&b);
}

END_TEST

/* ---- folds ---------------------------------------------------------------------- */

START_TEST(test_sum_avg)
{
	RpFold		s,
				a;

	rp_fold_init(&s, RP_FOLD_SUM);
	rp_fold_init(&a, RP_FOLD_AVG);
	for (int i = 0; i < 2; i++)
	{
		RpFold	   *f = i == 0 ? &s : &a;

		ck_assert_int_eq(put(f, "x", "1.50", 1), RP_FOLD_OK);
		ck_assert_int_eq(put(f, "x", "2", 1), RP_FOLD_OK);
		ck_assert_int_eq(put(f, "x", NULL, 1), RP_FOLD_OK);
		ck_assert_int_eq(put(f, "y", "10", 1), RP_FOLD_OK);
		/* update within x, then move a row from x to y */
		update(f, "x", "2", "x", "3");
		update(f, "x", "1.50", "y", "0.25");
	}
	ck_assert_str_eq(result(&s, "x"), "3.00");
	ck_assert_str_eq(result(&s, "y"), "10.25");
	ck_assert_str_eq(result(&a, "x"), "3.0000000000000000");	/* NULL not counted */
	ck_assert_str_eq(result(&a, "y"), "5.1250000000000000");
	/* only NULLs left: the cell stays, its sum is NULL */
	ck_assert_int_eq(put(&s, "x", "3", -1), RP_FOLD_OK);
	ck_assert_str_eq(result(&s, "x"), "NULL");
	ck_assert_int_eq(put(&s, "x", NULL, -1), RP_FOLD_OK);
	ck_assert_str_eq(result(&s, "x"), "REMOVED");
	/* removing what is not there is reported, never guessed */
	ck_assert_int_eq(put(&s, "x", "1", -1), RP_FOLD_MISSING);
	rp_fold_free(&s);
	rp_fold_free(&a);
}

END_TEST

START_TEST(test_sum_specials)
{
	RpFold		f;

	rp_fold_init(&f, RP_FOLD_SUM);
	put(&f, "x", "1", 1);
	put(&f, "x", "Infinity", 1);
	ck_assert_str_eq(result(&f, "x"), "Infinity");
	put(&f, "x", "-Infinity", 1);
	ck_assert_str_eq(result(&f, "x"), "NaN");
	put(&f, "x", "Infinity", -1);
	ck_assert_str_eq(result(&f, "x"), "-Infinity");
	put(&f, "x", "NaN", 2);
	put(&f, "x", "-Infinity", -1);
	ck_assert_str_eq(result(&f, "x"), "NaN");
	/* the finite total survived the specials untouched */
	put(&f, "x", "NaN", -2);
	ck_assert_str_eq(result(&f, "x"), "1");
	ck_assert_int_eq(put(&f, "x", "NaN", -1), RP_FOLD_MISSING);
	rp_fold_free(&f);
}

END_TEST

START_TEST(test_min_max_shared_value)
{
	RpFold		mn,
				mx;

	rp_fold_init(&mn, RP_FOLD_MIN);
	rp_fold_init(&mx, RP_FOLD_MAX);
	for (int i = 0; i < 2; i++)
	{
		RpFold	   *f = i == 0 ? &mn : &mx;

		put(f, "x", "5", 1);
		put(f, "x", "9", 1);
		put(f, "x", "9", 1);	/* two rows share the max */
		put(f, "x", "1", 1);
		put(f, "x", "1.0", 1);	/* two rows share the min, other scales */
		put(f, "x", NULL, 1);
	}
	ck_assert_str_eq(result(&mx, "x"), "9");
	ck_assert_int_eq(put(&mx, "x", "9", -1), RP_FOLD_OK);
	ck_assert_str_eq(result(&mx, "x"), "9");
	ck_assert_int_eq(put(&mx, "x", "9", -1), RP_FOLD_OK);
	ck_assert_str_eq(result(&mx, "x"), "5");
	ck_assert_int_eq(put(&mx, "x", "9", -1), RP_FOLD_MISSING);

	ck_assert_str_eq(result(&mn, "x"), "1");
	ck_assert_int_eq(put(&mn, "x", "1.00", -1), RP_FOLD_OK);
	ck_assert_int_eq(atof(result(&mn, "x")), 1);
	ck_assert_int_eq(put(&mn, "x", "1", -1), RP_FOLD_OK);
	ck_assert_str_eq(result(&mn, "x"), "5");
	/* update across coordinates: the min moves */
	update(&mn, "x", "5", "y", "-3");
	ck_assert_str_eq(result(&mn, "x"), "9");
	ck_assert_str_eq(result(&mn, "y"), "-3");
	/* NaN sorts above everything, -Infinity below */
	put(&mx, "y", "NaN", 1);
	put(&mx, "y", "Infinity", 1);
	ck_assert_str_eq(result(&mx, "y"), "NaN");
	put(&mn, "y", "-Infinity", 1);
	ck_assert_str_eq(result(&mn, "y"), "-Infinity");
	/* only NULL measures: NULL */
	put(&mn, "z", NULL, 1);
	ck_assert_str_eq(result(&mn, "z"), "NULL");
	rp_fold_free(&mn);
	rp_fold_free(&mx);
}

END_TEST

START_TEST(test_count_and_distinct)
{
	RpFold		c,
				d;

	rp_fold_init(&c, RP_FOLD_COUNT);
	rp_fold_init(&d, RP_FOLD_COUNT_DISTINCT);
	for (int i = 0; i < 2; i++)
	{
		RpFold	   *f = i == 0 ? &c : &d;

		put(f, "x", "7", 3);	/* multiplicity 3 (a seed row) */
		put(f, "x", "8", 1);
		put(f, "x", NULL, 2);
	}
	ck_assert_str_eq(result(&c, "x"), "4");
	ck_assert_str_eq(result(&d, "x"), "2");
	put(&d, "x", "7", -2);
	ck_assert_str_eq(result(&d, "x"), "2");
	put(&d, "x", "7", -1);
	ck_assert_str_eq(result(&d, "x"), "1");
	update(&d, "x", "8", "x", "8.000");
	ck_assert_str_eq(result(&d, "x"), "1");
	update(&d, "x", NULL, "x", "9");
	ck_assert_str_eq(result(&d, "x"), "2");
	put(&c, "x", NULL, -2);
	put(&c, "x", "7", -3);
	ck_assert_str_eq(result(&c, "x"), "1");
	put(&c, "x", "8", -1);
	ck_assert_str_eq(result(&c, "x"), "REMOVED");
	/* a seed's grouped totals, then the stream takes rows back out */
	{
		RpDecimal	t;
		int			ds;
		RpFold		s;

		rp_decimal_init(&t);
		rp_decimal_parse(&t, "10.5", &ds);
		rp_fold_init(&s, RP_FOLD_SUM);
		rp_fold_seed_totals(&s, cell(&s, "q"), 4, 3, &t, ds, 0, 1, 0);
		ck_assert_str_eq(result(&s, "q"), "Infinity");
		put(&s, "q", "Infinity", -1);
		ck_assert_str_eq(result(&s, "q"), "10.5");
		put(&s, "q", "0.25", -1);
		ck_assert_str_eq(result(&s, "q"), "10.25");
		rp_fold_free(&s);
		rp_decimal_free(&t);
	}
	rp_fold_free(&c);
	rp_fold_free(&d);
}

END_TEST

START_TEST(test_none_collision)
{
	RpFold		f;

	rp_fold_init(&f, RP_FOLD_NONE);
	ck_assert_int_eq(put(&f, "x", "1", 1), RP_FOLD_OK);
	ck_assert_str_eq(result(&f, "x"), "1");
	update(&f, "x", "1", "x", "2");
	ck_assert_str_eq(result(&f, "x"), "2");
	ck_assert_int_eq(put(&f, "x", "3", 1), RP_FOLD_COLLISION);
	/* two rows: no single value, no cell; one goes, the other shows */
	ck_assert_str_eq(result(&f, "x"), "REMOVED");
	ck_assert_int_eq(put(&f, "x", "2", -1), RP_FOLD_OK);
	ck_assert_str_eq(result(&f, "x"), "3");
	ck_assert_int_eq(put(&f, "y", NULL, 1), RP_FOLD_OK);
	ck_assert_str_eq(result(&f, "y"), "NULL");
	rp_fold_free(&f);
}

END_TEST

START_TEST(test_touched_and_end_batch)
{
	RpFold		f;
	RpFoldCell *const *t;
	int			n;
	RpFoldIter	it;
	int			cells = 0;

	rp_fold_init(&f, RP_FOLD_SUM);
	for (int i = 0; i < 500; i++)
	{
		char		coord[16];

		snprintf(coord, sizeof(coord), "c%d", i % 100);
		put(&f, coord, "1", 1);
	}
	t = rp_fold_touched(&f, &n);
	ck_assert_int_eq(n, 100);	/* one edit per touched cell */
	ck_assert_str_eq(t[0]->label, "c0");
	rp_fold_end_batch(&f);
	rp_fold_touched(&f, &n);
	ck_assert_int_eq(n, 0);
	for (int i = 0; i < 5; i++)
		put(&f, "c7", "1", -1);
	ck_assert_str_eq(result(&f, "c7"), "REMOVED");
	rp_fold_end_batch(&f);
	memset(&it, 0, sizeof(it));
	while (rp_fold_next_cell(&f, &it))
		cells++;
	ck_assert_int_eq(cells, 99);
	rp_fold_clear(&f);
	memset(&it, 0, sizeof(it));
	ck_assert_ptr_null(rp_fold_next_cell(&f, &it));
	rp_fold_free(&f);
}

END_TEST

/* ---- snapshot visibility -------------------------------------------------------- */

/* Heap bytes in use (small chunks and mmapped blocks). */
static size_t
heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/*
 * Under ASan or TSan malloc is the sanitizer's, and mallinfo2 reports
 * nothing: the heap figures are checked in the plain build only.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RP_TEST_HEAP_MEASURED 0
#else
#define RP_TEST_HEAP_MEASURED 1
#endif

START_TEST(test_count_distinct_memory)
{
	/*
	 * count_distinct of N distinct 8-byte keys (bigint values) in one cell:
	 * each costs its 32-byte entry plus the array's growth room, and its
	 * index slot (4 bytes, the index at most three quarters full), no
	 * allocation of its own and no copy of its text (the fold only counts).
	 * 131072 entries and 262144 slots for 100000 values: about 52 bytes each.
	 */
	enum
	{
		N = 100000
	};
	RpFold		f;
	RpFoldCell *c;
	RpFoldValue v;
	RpBuf		out;
	size_t		before,
				used;
	char		key[8],
	text[		24];

	rp_fold_init(&f, RP_FOLD_COUNT_DISTINCT);
	c = cell(&f, "all");
	before = heap_in_use();
	memset(&v, 0, sizeof(v));
	for (uint32_t i = 0; i < N; i++)
	{
		/* ascending keys, as an order-preserving encoding gives them */
		for (int b = 0; b < 8; b++)
			key[b] = (char) ((uint64_t) i >> (56 - 8 * b));
		v.key = key;
		v.keylen = 8;
		v.textlen = (size_t) snprintf(text, sizeof(text), "%u", i);
		v.text = text;

		ck_assert_int_eq(rp_fold_apply(&f, c, &v, 1), RP_FOLD_OK);
	}
	used = heap_in_use() - before;
	if (RP_TEST_HEAP_MEASURED)
		ck_assert_msg(used <= (size_t) N * 56, "%zu bytes for %d distinct values (%zu each)", used, N,
					  used / N);
	/* the gauge tells what the heap holds */
	ck_assert_uint_ge(rp_fold_bytes(&f), (size_t) N * 32);
	if (RP_TEST_HEAP_MEASURED)
		ck_assert_uint_le(rp_fold_bytes(&f), used + 4096);
	rp_buf_init(&out, 32);
	ck_assert_int_eq(rp_fold_result(&f, c, &out), RP_FOLD_VALUE);
	ck_assert_int_eq((int) out.len, 6);
	ck_assert(memcmp(out.data, "100000", 6) == 0);
	rp_buf_free(&out);
	/* removing every value gives its memory back */
	for (uint32_t i = N; i-- > 0;)
	{
		for (int b = 0; b < 8; b++)
			key[b] = (char) ((uint64_t) i >> (56 - 8 * b));
		v.key = key;
		ck_assert_int_eq(rp_fold_apply(&f, c, &v, -1), RP_FOLD_OK);
	}
	rp_fold_end_batch(&f);
	ck_assert_uint_le(rp_fold_bytes(&f), 64 * sizeof(RpFoldCell *) + 4096);
	rp_fold_free(&f);
}

END_TEST

/*
 * count_distinct against a model: random additions and removals of keys
 * short (inline) and long (allocated), in any order, some removing a value
 * the fold does not hold (MISSING, nothing changed); the distinct count
 * always the model's, and every value's removal accepted to the last.
 */
START_TEST(test_count_distinct_random)
{
	enum
	{
		NKEYS = 3000,
		OPS = 120000
	};
	static int64_t have[NKEYS];
	uint64_t	seed = 0x9E3779B97F4A7C15ULL;
	RpFold		f;
	RpFoldCell *c;
	RpFoldValue v;
	char		key[40];
	int64_t		distinct = 0;

	memset(have, 0, sizeof(have));
	rp_fold_init(&f, RP_FOLD_COUNT_DISTINCT);
	c = cell(&f, "all");
	memset(&v, 0, sizeof(v));
	v.key = key;
	for (int op = 0; op < OPS; op++)
	{
		int			i,
					k;
		RpFoldStatus st;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		i = (int) ((seed >> 33) % NKEYS);
		/* keys of 2 to 36 bytes: a third past the inline 16 */
		v.keylen = (size_t) snprintf(key, sizeof(key), "%0*d", 2 + i % 35, i);
		if ((seed >> 20) % 3 == 0 && have[i] > 0)
			k = -(int) (1 + (seed >> 40) % (uint64_t) have[i]);
		else if ((seed >> 20) % 3 == 0)
			k = -1;				/* a value the fold does not hold */
		else
			k = 1 + (int) ((seed >> 45) % 3);
		st = rp_fold_apply(&f, c, &v, k);
		if (k < 0 && have[i] + k < 0)
		{
			ck_assert_int_eq(st, RP_FOLD_MISSING);
			continue;
		}
		ck_assert_int_eq(st, RP_FOLD_OK);
		distinct += (have[i] == 0) - (have[i] + k == 0);
		have[i] += k;
		if (op % 997 == 0)
			ck_assert_int_eq(c->nvals, distinct);
	}
	ck_assert_int_eq(c->nvals, distinct);
	for (int i = 0; i < NKEYS; i++)
	{
		v.keylen = (size_t) snprintf(key, sizeof(key), "%0*d", 2 + i % 35, i);
		if (have[i] > 0)
			ck_assert_int_eq(rp_fold_apply(&f, c, &v, -have[i]), RP_FOLD_OK);
		ck_assert_int_eq(rp_fold_apply(&f, c, &v, -1), RP_FOLD_MISSING);
	}
	ck_assert_int_eq(c->nvals, 0);
	rp_fold_free(&f);
}

END_TEST

START_TEST(test_xidsnap_rule)
{
	RpXidSnap	s;

	ck_assert(rp_xidsnap_parse(&s, "100:110:105,102"));
	ck_assert_int_eq(s.nxip, 2);
	ck_assert(rp_xidsnap_saw(&s, 99));	/* below xmin */
	ck_assert(rp_xidsnap_saw(&s, 101)); /* committed before the snapshot */
	ck_assert(!rp_xidsnap_saw(&s, 102));	/* in progress then */
	ck_assert(!rp_xidsnap_saw(&s, 105));
	ck_assert(rp_xidsnap_saw(&s, 109));
	ck_assert(!rp_xidsnap_saw(&s, 110));	/* at xmax: after */
	ck_assert(!rp_xidsnap_saw(&s, 4000));
	rp_xidsnap_free(&s);

	ck_assert(rp_xidsnap_parse(&s, "7:7:"));
	ck_assert(rp_xidsnap_saw(&s, 6));
	ck_assert(!rp_xidsnap_saw(&s, 7));
	rp_xidsnap_free(&s);

	ck_assert(!rp_xidsnap_parse(&s, "10:5:"));
	ck_assert(!rp_xidsnap_parse(&s, "10:20:30"));	/* xip outside [xmin,
													 * xmax) */
	ck_assert(!rp_xidsnap_parse(&s, "abc"));
	ck_assert(!rp_xidsnap_parse(&s, "1:2:x"));
}

END_TEST

START_TEST(test_xidsnap_epochs)
{
	RpXidSnap	s;
	uint64_t	epoch = (uint64_t) 3 << 32;
	char text[	128];

	/* xmax just past an epoch boundary; xmin and an in-progress xid before it */
	snprintf(text, sizeof(text), "%llu:%llu:%llu", (unsigned long long) (epoch - 10),
			 (unsigned long long) (epoch + 5), (unsigned long long) (epoch - 3));
	ck_assert(rp_xidsnap_parse(&s, text));
	ck_assert_uint_eq(rp_xidsnap_extend(&s, 0xFFFFFFF6U), epoch - 10);
	ck_assert_uint_eq(rp_xidsnap_extend(&s, 2), epoch + 2);
	ck_assert(rp_xidsnap_saw(&s, 0xFFFFFFF0U)); /* old epoch, below xmin */
	ck_assert(!rp_xidsnap_saw(&s, 0xFFFFFFFDU));	/* epoch - 3: in progress */
	ck_assert(rp_xidsnap_saw(&s, 0xFFFFFFFEU));
	ck_assert(rp_xidsnap_saw(&s, 4));	/* new epoch, below xmax */
	ck_assert(!rp_xidsnap_saw(&s, 5));
	ck_assert(!rp_xidsnap_saw(&s, 1000000));	/* later, after the seed */
	rp_xidsnap_free(&s);
}

END_TEST

Suite	   *
ct_suite_fold(void)
{
	Suite	   *s = suite_create("fold");
	TCase	   *tc = tcase_create("fold");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_decimal_exact);
	tcase_add_test(tc, test_decimal_numeric_encoding);
	tcase_add_test(tc, test_decimal_key_order);
	tcase_add_test(tc, test_sum_avg);
	tcase_add_test(tc, test_sum_specials);
	tcase_add_test(tc, test_min_max_shared_value);
	tcase_add_test(tc, test_count_and_distinct);
	tcase_add_test(tc, test_none_collision);
	tcase_add_test(tc, test_touched_and_end_batch);
	tcase_add_test(tc, test_count_distinct_memory);
	tcase_add_test(tc, test_count_distinct_random);
	tcase_add_test(tc, test_xidsnap_rule);
	tcase_add_test(tc, test_xidsnap_epochs);
	suite_add_tcase(s, tc);
	return s;
}
