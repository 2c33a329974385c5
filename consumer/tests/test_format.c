/*
 * test_format.c
 *    rp_format: the text forms of pre-cast values.  Each form is checked
 *    against exact expectations and, where a property states it better,
 *    against an independent reference (shortest round-trip floats, a
 *    day-by-day calendar walk, a decimal-to-base-10000 encoder, a base64
 *    decoder).  Guarantee: G6 (deterministic, locale- and zone-free values).
 */
#include "ct_kit.h"

#include <float.h>
#include <math.h>

/* Run one formatter into a fresh buffer and return the text. */
#define FMT(call) \
	({ RpBuf _b; rp_buf_init(&_b, 0); { RpBuf *buf = &_b; call; } \
	   char *_s = ct_cstr(&_b); rp_buf_free(&_b); _s; })

/* Deterministic pseudo-random numbers (xorshift64*). */
static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

/* ---- integers and LSNs ------------------------------------------------- */

START_TEST(test_integers)
{
	ck_assert_str_eq(FMT(rp_fmt_int64(buf, 0)), "0");
	ck_assert_str_eq(FMT(rp_fmt_int64(buf, -1)), "-1");
	ck_assert_str_eq(FMT(rp_fmt_int64(buf, 42)), "42");
	ck_assert_str_eq(FMT(rp_fmt_int64(buf, INT64_MAX)), "9223372036854775807");
	ck_assert_str_eq(FMT(rp_fmt_int64(buf, INT64_MIN)), "-9223372036854775808");
	ck_assert_str_eq(FMT(rp_fmt_int64(buf, INT32_MIN)), "-2147483648");
	ck_assert_str_eq(FMT(rp_fmt_uint64(buf, 0)), "0");
	ck_assert_str_eq(FMT(rp_fmt_uint64(buf, UINT64_MAX)), "18446744073709551615");
	ck_assert_str_eq(FMT(rp_fmt_uint64(buf, 4294967295u)), "4294967295");
	/* against printf over many values */
	for (int i = 0; i < 10000; i++)
	{
		int64_t		v = (int64_t) rng() >> (rng() % 64);
		char		expect[32];

		snprintf(expect, sizeof(expect), "%lld", (long long) v);
		ck_assert_str_eq(FMT(rp_fmt_int64(buf, v)), expect);
		ct_teardown();
	}
}

END_TEST

START_TEST(test_lsn)
{
	ck_assert_str_eq(FMT(rp_fmt_lsn(buf, 0)), "0/0");
	ck_assert_str_eq(FMT(rp_fmt_lsn(buf, UINT64_C(0x16B374D848))), "16/B374D848");
	ck_assert_str_eq(FMT(rp_fmt_lsn(buf, UINT64_C(0x00000001000000FF))), "1/FF");
	ck_assert_str_eq(FMT(rp_fmt_lsn(buf, UINT64_MAX)), "FFFFFFFF/FFFFFFFF");
}

END_TEST

/* ---- floats ------------------------------------------------------------ */

/*
 * The reference: the fewest significant digits that read back to the same
 * value (the %g notation may differ: "550" and "5.5e+02" both have two).
 */
static int
fewest_digits_double(double v)
{
	char		tmp[40];

	for (int p = 1; p <= 17; p++)
	{
		snprintf(tmp, sizeof(tmp), "%.*g", p, v);
		if (strtod(tmp, NULL) == v)
			return p;
	}
	return 17;
}

static int
fewest_digits_float(float v)
{
	char		tmp[40];

	for (int p = 1; p <= 9; p++)
	{
		snprintf(tmp, sizeof(tmp), "%.*g", p, (double) v);
		if (strtof(tmp, NULL) == v)
			return p;
	}
	return 9;
}

/* Significant digits of a %g text: first to last nonzero digit of the mantissa. */
static int
significant_digits(const char *s)
{
	int			first = -1,
				last = -1,
				n = 0;

	for (const char *p = s; *p && *p != 'e'; p++)
	{
		if (*p < '0' || *p > '9')
			continue;
		if (*p != '0')
		{
			if (first < 0)
				first = n;
			last = n;
		}
		n++;
	}
	return first < 0 ? 1 : last - first + 1;
}

static double
double_from_bits(uint64_t bits)
{
	double		d;

	memcpy(&d, &bits, 8);
	return d;
}

static float
float_from_bits(uint32_t bits)
{
	float		f;

	memcpy(&f, &bits, 4);
	return f;
}

static const struct
{
	double		v;
	const char *text;
}			float8_cases[] = {
	{0.0, "0"},
	{-0.0, "-0"},
	{1.0, "1"},
	{-1.5, "-1.5"},
	{0.1, "0.1"},
	{0.1 + 0.2, "0.30000000000000004"},
	{1.0 / 3.0, "0.3333333333333333"},
	{100.0, "100"},
	{123456789.0, "123456789"},
	{1e15, "1e+15"},
	{1e300, "1e+300"},
	{-1e300, "-1e+300"},
	{1e-300, "1e-300"},
	{0.000001, "1e-06"},
	{9007199254740992.0, "9007199254740992"},
	{DBL_MAX, "1.7976931348623157e+308"},
	{DBL_MIN, "2.2250738585072014e-308"},
	{4.9406564584124654e-324, "5e-324"},	/* the smallest denormal */
	{1e-310, "1e-310"},			/* a denormal */
	{2.2250738585072009e-308, "2.225073858507201e-308"},	/* the largest denormal */
};

START_TEST(test_float8_table)
{
	for (size_t i = 0; i < sizeof(float8_cases) / sizeof(float8_cases[0]); i++)
	{
		char	   *s = FMT(rp_fmt_float8(buf, float8_cases[i].v));

		ck_assert_msg(strcmp(s, float8_cases[i].text) == 0, "case %zu: got %s, want %s",
					  i, s, float8_cases[i].text);
		ck_assert(strtod(s, NULL) == float8_cases[i].v);
		ck_assert(signbit(strtod(s, NULL)) == signbit(float8_cases[i].v));
	}
	ck_assert_str_eq(FMT(rp_fmt_float8(buf, NAN)), "NaN");
	ck_assert_str_eq(FMT(rp_fmt_float8(buf, -NAN)), "NaN");
	ck_assert_str_eq(FMT(rp_fmt_float8(buf, INFINITY)), "Infinity");
	ck_assert_str_eq(FMT(rp_fmt_float8(buf, -INFINITY)), "-Infinity");
	/* a NaN with a payload is still NaN */
	ck_assert_str_eq(FMT(rp_fmt_float8(buf, double_from_bits(UINT64_C(0x7FF0000000000001)))), "NaN");
}

END_TEST

START_TEST(test_float4_table)
{
	static const struct
	{
		float		v;
		const char *text;
	}			cases[] = {
		{0.0f, "0"},
		{-0.0f, "-0"},
		{0.1f, "0.1"},
		{1.0f / 3.0f, "0.33333334"},
		{16777216.0f, "16777216"},
		{1e10f, "1e+10"},
		{FLT_MAX, "3.4028235e+38"},
		{FLT_MIN, "1.1754944e-38"},
		{1.4e-45f, "1e-45"},	/* the smallest denormal */
		{1e-40f, "1e-40"},		/* a denormal */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char	   *s = FMT(rp_fmt_float4(buf, cases[i].v));

		ck_assert_msg(strcmp(s, cases[i].text) == 0, "case %zu: got %s, want %s",
					  i, s, cases[i].text);
		ck_assert(strtof(s, NULL) == cases[i].v);
	}
	ck_assert_str_eq(FMT(rp_fmt_float4(buf, NAN)), "NaN");
	ck_assert_str_eq(FMT(rp_fmt_float4(buf, INFINITY)), "Infinity");
	ck_assert_str_eq(FMT(rp_fmt_float4(buf, -INFINITY)), "-Infinity");
}

END_TEST

/* Random bit patterns (normal and denormal): exact round trip, fewest digits. */
START_TEST(test_float8_shortest_roundtrip)
{
	for (int i = 0; i < 40000; i++)
	{
		uint64_t	bits = rng();
		double		v;
		char	   *s;

		if (i % 4 == 0)
			bits &= UINT64_C(0x800FFFFFFFFFFFFF);	/* denormals */
		else if (i % 4 == 1)
			bits = (uint64_t) (rng() % 2000000) - 1000000;	/* small integers' bits */
		v = double_from_bits(bits);
		if (i % 4 == 1)
			v = (double) (int64_t) bits / 1000.0;	/* decimal-looking values */
		if (isnan(v) || isinf(v))
			continue;
		s = FMT(rp_fmt_float8(buf, v));
		ck_assert_msg(strtod(s, NULL) == v, "%s does not read back", s);
		ck_assert_msg(significant_digits(s) == fewest_digits_double(v),
					  "%s has %d significant digits, %d suffice", s, significant_digits(s),
					  fewest_digits_double(v));
		ct_teardown();
	}
}

END_TEST

START_TEST(test_float4_shortest_roundtrip)
{
	for (int i = 0; i < 40000; i++)
	{
		uint32_t	bits = (uint32_t) rng();
		float		v;
		char	   *s;

		if (i % 3 == 0)
			bits &= 0x807FFFFFu;	/* denormals */
		v = float_from_bits(bits);
		if (isnan(v) || isinf(v))
			continue;
		s = FMT(rp_fmt_float4(buf, v));
		ck_assert_msg(strtof(s, NULL) == v, "%s does not read back", s);
		ck_assert_msg(significant_digits(s) == fewest_digits_float(v),
					  "%s has %d significant digits, %d suffice", s, significant_digits(s),
					  fewest_digits_float(v));
		ct_teardown();
	}
}

END_TEST

/* ---- numeric ----------------------------------------------------------- */

static char *
fmt_numeric(uint16_t sign, int16_t weight, uint16_t dscale, int ndigits, const uint16_t *digits,
			bool *ok)
{
	RpBuf		v,
				out;
	char	   *s;

	rp_buf_init(&v, 0);
	ct_put_numeric(&v, sign, weight, dscale, ndigits, digits);
	rp_buf_init(&out, 0);
	*ok = rp_fmt_numeric(&out, (const unsigned char *) v.data + 4, (uint32_t) v.len - 4);
	s = ct_cstr(&out);
	rp_buf_free(&v);
	rp_buf_free(&out);
	return s;
}

#define D(...) (const uint16_t[]){__VA_ARGS__}, (int) (sizeof((const uint16_t[]){__VA_ARGS__}) / 2)

static const struct
{
	uint16_t	sign;
	int16_t		weight;
	uint16_t	dscale;
	const uint16_t *digits;
	int			ndigits;
	const char *text;
}			numeric_cases[] = {
	{RP_NUMERIC_POS, 0, 0, NULL, 0, "0"},
	{RP_NUMERIC_POS, 0, 2, NULL, 0, "0.00"},
	{RP_NUMERIC_NEG, 0, 0, NULL, 0, "0"},	/* no negative zero */
	{RP_NUMERIC_POS, 0, 0, D(1), "1"},
	{RP_NUMERIC_NEG, 0, 0, D(1), "-1"},
	{RP_NUMERIC_POS, 0, 0, D(9999), "9999"},
	{RP_NUMERIC_POS, 1, 0, D(1), "10000"},
	{RP_NUMERIC_POS, 1, 0, D(1, 1), "10001"},
	{RP_NUMERIC_POS, 5, 0, D(1), "100000000000000000000"},
	{RP_NUMERIC_POS, -1, 4, D(1), "0.0001"},
	{RP_NUMERIC_POS, -2, 5, D(1000), "0.00001"},
	{RP_NUMERIC_NEG, -1, 1, D(5000), "-0.5"},
	{RP_NUMERIC_POS, 0, 2, D(12, 5000), "12.50"},
	{RP_NUMERIC_POS, 0, 5, D(1, 5000), "1.50000"},	/* dscale pads with zeros */
	{RP_NUMERIC_POS, 0, 2, D(1, 5678), "1.56"}, /* and cuts like PostgreSQL */
	{RP_NUMERIC_POS, 0, 0, D(1, 5678), "1"},
	{RP_NUMERIC_POS, 1, 3, D(1, 2345, 6780), "12345.678"},
	{RP_NUMERIC_NEG, 2, 2, D(3, 0, 0, 1), "-300000000.00"},
	{RP_NUMERIC_POS, 5, 5, D(12, 3456, 7890, 1234, 5678, 9012, 3456, 7000),
	"1234567890123456789012.34567"},
	{RP_NUMERIC_NAN, 0, 0, NULL, 0, "NaN"},
	{RP_NUMERIC_PINF, 0, 0, NULL, 0, "Infinity"},
	{RP_NUMERIC_NINF, 0, 0, NULL, 0, "-Infinity"},
};

START_TEST(test_numeric_table)
{
	for (size_t i = 0; i < sizeof(numeric_cases) / sizeof(numeric_cases[0]); i++)
	{
		bool		ok;
		char	   *s = fmt_numeric(numeric_cases[i].sign, numeric_cases[i].weight,
									numeric_cases[i].dscale, numeric_cases[i].ndigits,
									numeric_cases[i].digits, &ok);

		ck_assert_msg(ok, "case %zu refused", i);
		ck_assert_msg(strcmp(s, numeric_cases[i].text) == 0, "case %zu: got %s, want %s",
					  i, s, numeric_cases[i].text);
	}
}

END_TEST

START_TEST(test_numeric_1000_digits)
{
	uint16_t	digits[250];
	char		expect[1100];
	bool		ok;
	char	   *s;

	/* 10^1000 - 1: a thousand nines */
	for (int i = 0; i < 250; i++)
		digits[i] = 9999;
	s = fmt_numeric(RP_NUMERIC_NEG, 249, 0, 250, digits, &ok);
	ck_assert(ok);
	expect[0] = '-';
	memset(expect + 1, '9', 1000);
	expect[1001] = '\0';
	ck_assert_str_eq(s, expect);

	/* 10^-1000 at dscale 1000 */
	digits[0] = 1;
	s = fmt_numeric(RP_NUMERIC_POS, -250, 1000, 1, digits, &ok);
	ck_assert(ok);
	memcpy(expect, "0.", 2);
	memset(expect + 2, '0', 999);
	strcpy(expect + 1001, "1");
	ck_assert_str_eq(s, expect);

	/* 1000 integer digits and 1000 fraction digits: 123412341234... */
	{
		uint16_t	big[500];

		for (int i = 0; i < 500; i++)
			big[i] = 1234;
		s = fmt_numeric(RP_NUMERIC_POS, 249, 1000, 500, big, &ok);
		ck_assert(ok);
		ck_assert_uint_eq(strlen(s), 2001);
		ck_assert_int_eq(s[1000], '.');
		for (int i = 0; i < 2001; i++)
			if (i != 1000)
				ck_assert_int_eq(s[i], "1234"[(i > 1000 ? i - 1 : i) % 4]);
	}
}

END_TEST

/*
 * The reference encoder: a decimal string into PostgreSQL's normalized
 * base-10000 form (no leading or trailing zero digits, dscale = number of
 * fraction digits).  Returns ndigits.
 */
static int
numeric_from_text(const char *text, uint16_t *sign, int16_t *weight, uint16_t *dscale,
				  uint16_t *digits)
{
	const char *dot = strchr(text, '.');
	const char *p = text;
	char		padded[400];
	int			intlen,
				fraclen,
				lead,
				ngroups,
				first,
				last;

	*sign = RP_NUMERIC_POS;
	if (*p == '-')
	{
		*sign = RP_NUMERIC_NEG;
		p++;
	}
	intlen = dot ? (int) (dot - p) : (int) strlen(p);
	fraclen = dot ? (int) strlen(dot + 1) : 0;
	*dscale = (uint16_t) fraclen;
	lead = (4 - intlen % 4) % 4;
	memset(padded, '0', sizeof(padded));
	memcpy(padded + lead, p, (size_t) intlen);
	if (fraclen)
		memcpy(padded + lead + intlen, dot + 1, (size_t) fraclen);
	ngroups = (lead + intlen + fraclen + 3) / 4;
	first = 0;
	while (first < ngroups && memcmp(padded + 4 * first, "0000", 4) == 0)
		first++;
	last = ngroups - 1;
	while (last >= first && memcmp(padded + 4 * last, "0000", 4) == 0)
		last--;
	if (first > last)
	{
		*sign = RP_NUMERIC_POS;
		*weight = 0;
		return 0;
	}
	*weight = (int16_t) ((lead + intlen) / 4 - 1 - first);
	for (int g = first; g <= last; g++)
		digits[g - first] = (uint16_t) ((padded[4 * g] - '0') * 1000 + (padded[4 * g + 1] - '0') * 100 +
										(padded[4 * g + 2] - '0') * 10 + (padded[4 * g + 3] - '0'));
	return last - first + 1;
}

/* Random decimals through the reference encoder come back as written. */
START_TEST(test_numeric_random_roundtrip)
{
	for (int i = 0; i < 5000; i++)
	{
		char text[	300];
		char		expect[300];
		int			n = 0,
					intlen = (int) (rng() % 40),
					fraclen = (int) (rng() % 40);
		bool		neg = rng() % 2,
					nonzero = false,
					ok;
		uint16_t	sign,
					dscale,
					digits[100];
		int16_t		weight;
		int			ndigits;
		char	   *s,
				   *e = expect;

		if (neg)
			text[		n++] = '-';

		/* digits, sometimes with leading/trailing zero runs */
		for (int k = 0; k < intlen; k++)
			text[		n++] = (char) ('0' + (rng() % 3 == 0 ? 0 : rng() % 10));

		if (intlen == 0)
			text[		n++] = '0';

		if (fraclen)
		{
			text[		n++] = '.';

			for (int k = 0; k < fraclen; k++)
				text[		n++] = (char) ('0' + (rng() % 3 == 0 ? 0 : rng() % 10));
		}
		text[		n] = '\0';

		/* canonical text: no leading zeros, no minus on zero */
		{
			const char *p = text +(neg ? 1 : 0);

			for (const char *q = p; *q; q++)
				if (*q >= '1' && *q <= '9')
					nonzero = true;
			if (neg && nonzero)
				*e++ = '-';
			while (*p == '0' && p[1] >= '0' && p[1] <= '9')
				p++;
			strcpy(e, p);
		}

		ndigits = numeric_from_text(text, &sign, &weight, &dscale, digits);
		s = fmt_numeric(sign, weight, dscale, ndigits, digits, &ok);
		ck_assert(ok);
		ck_assert_msg(strcmp(s, expect) == 0, "%s -> %s, want %s", text, s, expect);
		ct_teardown();
	}
}

END_TEST

START_TEST(test_numeric_invalid)
{
	RpBuf		out;
	static const unsigned char short7[7] = {0};

	/* ndigits 2 but only one digit present */
	static const unsigned char short_digits[10] = {0, 2, 0, 0, 0, 0, 0, 0, 0, 1};

	/* digit 10000 */
	static const unsigned char big_digit[10] = {0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10};

	/* sign 0x1234 */
	static const unsigned char bad_sign[10] = {0, 1, 0, 0, 0x12, 0x34, 0, 0, 0, 1};

	/* digit with the top bit set (would be negative as int16) */
	static const unsigned char neg_digit[10] = {0, 1, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

	rp_buf_init(&out, 0);
	ck_assert(!rp_fmt_numeric(&out, short7, 7));
	ck_assert(!rp_fmt_numeric(&out, short_digits, 10));
	ck_assert(!rp_fmt_numeric(&out, big_digit, 10));
	ck_assert(!rp_fmt_numeric(&out, bad_sign, 10));
	ck_assert(!rp_fmt_numeric(&out, neg_digit, 10));
	ck_assert_uint_eq(out.len, 0);	/* nothing half-written */
	rp_buf_free(&out);
}

END_TEST

/* ---- dates and times --------------------------------------------------- */

static const struct
{
	int32_t		days;
	const char *text;
}			date_cases[] = {
	{0, "1970-01-01"},
	{-1, "1969-12-31"},
	{1, "1970-01-02"},
	{RP_PG_EPOCH_DAYS, "2000-01-01"},
	{11016, "2000-02-29"},
	{11017, "2000-03-01"},
	{-25508, "1900-03-01"},		/* 1900 is not a leap year */
	{-25509, "1900-02-28"},
	{-141427, "1582-10-15"},	/* proleptic Gregorian: no Julian gap */
	{-141428, "1582-10-14"},
	{19783, "2024-03-01"},
	{-719162, "0001-01-01"},
	{-719163, "0000-12-31"},	/* year 0000 is 1 BC */
	{-719468, "0000-03-01"},
	{-719469, "0000-02-29"},	/* and a leap year */
	{-719528, "0000-01-01"},
	{-719529, "-0001-12-31"},	/* 2 BC */
	{-735525, "-0044-03-15"},	/* the Ides of March, 44 BC */
	{-2440588, "-4713-11-24"},	/* Julian day 0, PostgreSQL's earliest date */
	{2932896, "9999-12-31"},
	{2932897, "+10000-01-01"},
	{RP_DATE_POS_INF, "infinity"},
	{RP_DATE_NEG_INF, "-infinity"},
};

START_TEST(test_date_table)
{
	for (size_t i = 0; i < sizeof(date_cases) / sizeof(date_cases[0]); i++)
		ck_assert_str_eq(FMT(rp_fmt_date(buf, date_cases[i].days)), date_cases[i].text);
	/* the extremes next to the infinities still print as dates */
	ck_assert_str_eq(FMT(rp_fmt_date(buf, RP_DATE_POS_INF - 1)), "+5881580-07-10");
	ck_assert_str_eq(FMT(rp_fmt_date(buf, RP_DATE_NEG_INF + 1)), "-5877641-06-24");
}

END_TEST

static bool
is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
month_days(int64_t y, int m)
{
	static const int len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* Walk the calendar one day at a time, both ways from 1970-01-01. */
START_TEST(test_civil_walk)
{
	for (int dir = -1; dir <= 1; dir += 2)
	{
		int64_t		y = 1970;
		int			m = 1,
					d = 1;
		int64_t		limit = dir > 0 ? 3000000 : 2500000;

		for (int64_t n = 0; n <= limit; n++)
		{
			int64_t		gy;
			int			gm,
						gd;

			rp_civil_from_days(dir * n, &gy, &gm, &gd);
			if (gy != y || gm != m || gd != d)
				ck_abort_msg("day %lld: got %lld-%d-%d, want %lld-%d-%d", (long long) (dir * n),
							 (long long) gy, gm, gd, (long long) y, m, d);
			if (dir > 0 && ++d > month_days(y, m))
			{
				d = 1;
				if (++m > 12)
					m = 1, y++;
			}
			else if (dir < 0 && --d < 1)
			{
				if (--m < 1)
					m = 12, y--;
				d = month_days(y, m);
			}
		}
	}
}

END_TEST

/* The inverse (days from a civil date, Hinnant's algorithm) over the whole int32 range. */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t		era,
				yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

START_TEST(test_civil_inverse)
{
	for (int i = 0; i < 200000; i++)
	{
		int64_t		days = i < 4 ? (int64_t[]) {INT32_MIN, INT32_MAX, -106751992, 106751991}[i]
		: (int64_t) (int32_t) rng();
		int64_t		y;
		int			m,
					d;

		rp_civil_from_days(days, &y, &m, &d);
		ck_assert(m >= 1 && m <= 12);
		ck_assert(d >= 1 && d <= month_days(y, m));
		ck_assert_int_eq(days_from_civil(y, m, d), days);
	}
}

END_TEST

START_TEST(test_time)
{
	ck_assert_str_eq(FMT(rp_fmt_time(buf, 0)), "00:00:00");
	ck_assert_str_eq(FMT(rp_fmt_time(buf, 1)), "00:00:00.000001");
	ck_assert_str_eq(FMT(rp_fmt_time(buf, INT64_C(45296500000))), "12:34:56.500000");
	ck_assert_str_eq(FMT(rp_fmt_time(buf, INT64_C(86399999999))), "23:59:59.999999");
	ck_assert_str_eq(FMT(rp_fmt_time(buf, INT64_C(86400000000))), "24:00:00");

	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, 0)), "00:00:00+00:00");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, INT64_C(45296000000), 19800)), "12:34:56+05:30");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, INT64_C(45296000001), -12600)), "12:34:56.000001-03:30");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, 3725)), "00:00:00+01:02:05");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, -3725)), "00:00:00-01:02:05");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, 57599)), "00:00:00+15:59:59");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, -57599)), "00:00:00-15:59:59");
	/* an absurd offset from a damaged frame prints, without overflow */
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, INT32_MIN)), "00:00:00-596523:14:08");
	ck_assert_str_eq(FMT(rp_fmt_timetz(buf, 0, INT32_MAX)), "00:00:00+596523:14:07");
}

END_TEST

START_TEST(test_timestamp)
{
	static const struct
	{
		int64_t		us;
		const char *text;
	}			cases[] = {
		{0, "1970-01-01T00:00:00"},
		{1, "1970-01-01T00:00:00.000001"},
		{-1, "1969-12-31T23:59:59.999999"},
		{1500000, "1970-01-01T00:00:01.500000"},
		{-INT64_C(14182940000000), "1969-07-20T20:17:40"},
		{RP_PG_EPOCH_USECS, "2000-01-01T00:00:00"},
		{INT64_C(1709296496789012), "2024-03-01T12:34:56.789012"},
		{INT64_C(951782400000000), "2000-02-29T00:00:00"},
		{-INT64_C(62167219200000000), "0000-01-01T00:00:00"},
		{-INT64_C(62167219200000001), "-0001-12-31T23:59:59.999999"},
		{-INT64_C(210866803200000000), "-4713-11-24T00:00:00"}, /* PostgreSQL's minimum */
		{INT64_C(253402300800000000), "+10000-01-01T00:00:00"},
		{INT64_C(253402300799999999), "9999-12-31T23:59:59.999999"},
		{RP_TS_POS_INF - 1, "+294247-01-10T04:00:54.775806"},
		/* the extended range: the instants 1970-epoch int64 cannot hold */
		{RP_TS_EXT_BASE, "+294247-01-10T04:00:54.775807"},
		{RP_TS_EXT_BASE + 1, "+294247-01-10T04:00:54.775808"},
		{RP_TS_EXT_BASE + RP_TS_EXT_MAX_K, "+294276-12-31T23:59:59.999999"},	/* PostgreSQL's maximum */
		{RP_TS_EXT_BASE + RP_TS_EXT_MAX_K - 999999, "+294276-12-31T23:59:59"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char		withz[64];

		ck_assert_str_eq(FMT(rp_fmt_timestamp(buf, cases[i].us, false)), cases[i].text);
		snprintf(withz, sizeof(withz), "%sZ", cases[i].text);
		ck_assert_str_eq(FMT(rp_fmt_timestamp(buf, cases[i].us, true)), withz);
	}
	ck_assert_str_eq(FMT(rp_fmt_timestamp(buf, RP_TS_POS_INF, false)), "infinity");
	ck_assert_str_eq(FMT(rp_fmt_timestamp(buf, RP_TS_NEG_INF, false)), "-infinity");
	ck_assert_str_eq(FMT(rp_fmt_timestamp(buf, RP_TS_POS_INF, true)), "infinity");
	ck_assert_str_eq(FMT(rp_fmt_timestamp(buf, RP_TS_NEG_INF, true)), "-infinity");

	/* every day boundary around the epoch, both signs */
	for (int64_t d = -1000; d <= 1000; d++)
	{
		int64_t		us = d * INT64_C(86400000000);
		char	   *midnight = FMT(rp_fmt_timestamp(buf, us, false));
		char	   *before = FMT(rp_fmt_timestamp(buf, us - 1, false));
		char	   *date = FMT(rp_fmt_date(buf, (int32_t) d));
		char	   *prev = FMT(rp_fmt_date(buf, (int32_t) (d - 1)));

		ck_assert_msg(strncmp(midnight, date, strlen(date)) == 0 &&
					  strcmp(midnight + strlen(date), "T00:00:00") == 0, "%s vs %s", midnight, date);
		ck_assert_msg(strncmp(before, prev, strlen(prev)) == 0 &&
					  strcmp(before + strlen(prev), "T23:59:59.999999") == 0, "%s vs %s", before, prev);
		ct_teardown();
	}
}

END_TEST

/* ---- uuid and base64 --------------------------------------------------- */

START_TEST(test_uuid)
{
	unsigned char u[16];

	for (int i = 0; i < 16; i++)
		u[i] = (unsigned char) (i * 17);
	ck_assert_str_eq(FMT(rp_fmt_uuid(buf, u)), "00112233-4455-6677-8899-aabbccddeeff");
	memset(u, 0, 16);
	ck_assert_str_eq(FMT(rp_fmt_uuid(buf, u)), "00000000-0000-0000-0000-000000000000");
	memset(u, 0xFF, 16);
	ck_assert_str_eq(FMT(rp_fmt_uuid(buf, u)), "ffffffff-ffff-ffff-ffff-ffffffffffff");
}

END_TEST

static int
b64_value(char c)
{
	const char *tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = strchr(tbl, c);

	return c && p ? (int) (p - tbl) : -1;
}

/* An independent decoder: returns the decoded length or -1 when malformed. */
static long
b64_decode(const char *s, unsigned char *out)
{
	size_t		n = strlen(s);
	long		o = 0;

	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4)
	{
		int			v[4];
		int			pad = 0;

		for (int k = 0; k < 4; k++)
		{
			if (s[i + k] == '=' && i + 4 == n && k >= 2)
			{
				v[k] = 0;
				pad++;
			}
			else if (pad || (v[k] = b64_value(s[i + k])) < 0)
				return -1;
		}
		out[o++] = (unsigned char) (v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[o++] = (unsigned char) ((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			out[o++] = (unsigned char) ((v[2] & 3) << 6 | v[3]);
	}
	return o;
}

START_TEST(test_base64)
{
	static const char *const rfc4648[][2] = {
		{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
		{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
	};
	unsigned char all[256],
				back[256];

	for (size_t i = 0; i < 7; i++)
		ck_assert_str_eq(FMT(rp_fmt_base64(buf, (const unsigned char *) rfc4648[i][0],
										   strlen(rfc4648[i][0]))), rfc4648[i][1]);
	ck_assert_str_eq(FMT(rp_fmt_base64(buf, (const unsigned char *) "\0\0\0\0", 4)), "AAAAAA==");
	ck_assert_str_eq(FMT(rp_fmt_base64(buf, (const unsigned char *) "\xff\xff\xff", 3)), "////");
	ck_assert_str_eq(FMT(rp_fmt_base64(buf, (const unsigned char *) "\xfb\xff", 2)), "+/8=");

	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char) i;
	for (size_t len = 0; len <= 256; len++)
	{
		char	   *s = FMT(rp_fmt_base64(buf, all + (256 - len), len));

		ck_assert_uint_eq(strlen(s), (len + 2) / 3 * 4);
		ck_assert_int_eq(b64_decode(s, back), (long) len);
		ck_assert_mem_eq(back, all + (256 - len), len);
	}
}

END_TEST

/* Appending to a buffer that already holds text keeps that text. */
START_TEST(test_appends)
{
	RpBuf		b;
	unsigned char u[16] = {0};

	rp_buf_init(&b, 1);
	rp_buf_put_text(&b, "x=");
	rp_fmt_int64(&b, -5);
	rp_buf_put_char(&b, ',');
	rp_fmt_float8(&b, 0.25);
	rp_buf_put_char(&b, ',');
	rp_fmt_date(&b, 0);
	rp_buf_put_char(&b, ',');
	rp_fmt_uuid(&b, u);
	rp_buf_put_char(&b, ',');
	rp_fmt_base64(&b, (const unsigned char *) "hi", 2);
	ck_assert_str_eq(ct_cstr(&b), "x=-5,0.25,1970-01-01,00000000-0000-0000-0000-000000000000,aGk=");
	rp_buf_free(&b);
}

END_TEST

Suite	   *
ct_suite_format(void)
{
	Suite	   *s = suite_create("format");
	TCase	   *tc;

	tc = ct_tcase("numbers");
	tcase_add_test(tc, test_integers);
	tcase_add_test(tc, test_lsn);
	tcase_add_test(tc, test_float8_table);
	tcase_add_test(tc, test_float4_table);
	tcase_add_test(tc, test_float8_shortest_roundtrip);
	tcase_add_test(tc, test_float4_shortest_roundtrip);
	tcase_add_test(tc, test_numeric_table);
	tcase_add_test(tc, test_numeric_1000_digits);
	tcase_add_test(tc, test_numeric_random_roundtrip);
	tcase_add_test(tc, test_numeric_invalid);
	suite_add_tcase(s, tc);

	tc = ct_tcase("time");
	tcase_add_test(tc, test_date_table);
	tcase_add_test(tc, test_civil_walk);
	tcase_add_test(tc, test_civil_inverse);
	tcase_add_test(tc, test_time);
	tcase_add_test(tc, test_timestamp);
	suite_add_tcase(s, tc);

	tc = ct_tcase("bytes");
	tcase_add_test(tc, test_uuid);
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_appends);
	suite_add_tcase(s, tc);
	return s;
}
