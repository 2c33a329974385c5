/*
 * rp_decimal.c
 *    Exact decimals for the aggregate folds (see rp_decimal.h).
 *
 * The magnitude is an unsigned integer in base 10^9 limbs; the value is
 * (-1)^neg * magnitude / 10^scale.  Adding values of different scales
 * first multiplies the one with fewer places by a power of ten, so no
 * digit is ever dropped.
 */
#include "rp_alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_decimal.h"

#define RP_DEC_BASE 1000000000U

static const uint32_t rp_pow10[10] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000
};

void
rp_decimal_init(RpDecimal *d)
{
	memset(d, 0, sizeof(*d));
}

void
rp_decimal_free(RpDecimal *d)
{
	if (d->limb)
		rp_free(d->limb);
	memset(d, 0, sizeof(*d));
}

void
rp_decimal_zero(RpDecimal *d)
{
	d->neg = false;
	d->scale = 0;
	d->n = 0;
}

static void
rp_dec_reserve(RpDecimal *d, int n)
{
	if (n <= d->cap)
		return;
	d->cap = n < 4 ? 4 : n * 2;
	d->limb = d->limb ? rp_realloc(d->limb, sizeof(uint32_t) * (size_t) d->cap)
		: rp_malloc(sizeof(uint32_t) * (size_t) d->cap);
}

static void
rp_dec_trim(RpDecimal *d)
{
	while (d->n > 0 && d->limb[d->n - 1] == 0)
		d->n--;
	if (d->n == 0)
		d->neg = false;
}

void
rp_decimal_copy(RpDecimal *dst, const RpDecimal *src)
{
	rp_dec_reserve(dst, src->n);
	if (src->n)
		memcpy(dst->limb, src->limb, sizeof(uint32_t) * (size_t) src->n);
	dst->n = src->n;
	dst->neg = src->neg;
	dst->scale = src->scale;
}

/* magnitude = magnitude * m + add */
static void
rp_dec_muladd(RpDecimal *d, uint64_t m, uint64_t add)
{
	unsigned	__int128 carry = add;

	for (int i = 0; i < d->n; i++)
	{
		unsigned	__int128 t = (unsigned __int128) d->limb[i] * m + carry;

		d->limb[i] = (uint32_t) (t % RP_DEC_BASE);
		carry = t / RP_DEC_BASE;
	}
	while (carry)
	{
		rp_dec_reserve(d, d->n + 1);
		d->limb[d->n++] = (uint32_t) (carry % RP_DEC_BASE);
		carry /= RP_DEC_BASE;
	}
	rp_dec_trim(d);
}

static void
rp_dec_rescale(RpDecimal *d, int scale)
{
	int			k = scale - d->scale;

	while (k > 0)
	{
		int			step = k > 9 ? 9 : k;

		rp_dec_muladd(d, rp_pow10[step], 0);
		k -= step;
	}
	d->scale = scale;
}

void
rp_decimal_set_int64(RpDecimal *d, int64_t v)
{
	uint64_t	u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;

	rp_decimal_zero(d);
	rp_dec_muladd(d, 1, u);
	d->neg = v < 0 && u != 0;
}

void
rp_decimal_set_double(RpDecimal *d, double v)
{
	int			e;
	double		m = frexp(fabs(v), &e);
	uint64_t	mant = (uint64_t) ldexp(m, 53);

	/* |v| = mant * 2^(e - 53): an integer times a power of two */
	e -= 53;
	rp_decimal_zero(d);
	while (mant && (mant & 1) == 0 && e < 0)
	{
		mant >>= 1;
		e++;
	}
	rp_dec_muladd(d, 1, mant);
	if (e >= 0)
	{
		while (e > 0)
		{
			int			step = e > 30 ? 30 : e;

			rp_dec_muladd(d, (uint64_t) 1 << step, 0);
			e -= step;
		}
	}
	else
	{
		/* mant / 2^k = mant * 5^k / 10^k: exact */
		int			k = -e;

		d->scale = k;
		while (k > 0)
		{
			int			step = k > 27 ? 27 : k;
			uint64_t	p = 1;

			for (int i = 0; i < step; i++)
				p *= 5;
			rp_dec_muladd(d, p, 0);
			k -= step;
		}
	}
	d->neg = v < 0 && d->n > 0;
}

int
rp_decimal_set_numeric(RpDecimal *d, const unsigned char *p, uint32_t len, int *dscale)
{
	int16_t		ndigits,
				weight;
	uint16_t	sign,
				ds;
	int			e4;

	if (len < 8)
		return -1;
	ndigits = (int16_t) ((p[0] << 8) | p[1]);
	weight = (int16_t) ((p[2] << 8) | p[3]);
	sign = (uint16_t) ((p[4] << 8) | p[5]);
	ds = (uint16_t) ((p[6] << 8) | p[7]);
	if (ndigits < 0 || len != 8 + 2 * (uint32_t) ndigits)
		return -1;
	*dscale = ds & 0x3FFF;
	rp_decimal_zero(d);
	if (sign == 0xC000)
		return RP_DEC_NAN;
	if (sign == 0xD000)
		return RP_DEC_PINF;
	if (sign == 0xF000)
		return RP_DEC_NINF;
	if (sign != 0x0000 && sign != 0x4000)
		return -1;
	for (int i = 0; i < ndigits; i++)
	{
		int			dig = (p[8 + 2 * i] << 8) | p[9 + 2 * i];

		if (dig < 0 || dig > 9999)
			return -1;
		rp_dec_muladd(d, 10000, (uint64_t) dig);
	}
	/* value = digits * 10000^(weight - ndigits + 1) */
	e4 = weight - ndigits + 1;
	if (e4 >= 0)
		for (int i = 0; i < e4; i++)
			rp_dec_muladd(d, 10000, 0);
	else
		d->scale = -4 * e4;
	d->neg = sign == 0x4000 && d->n > 0;
	return RP_DEC_FINITE;
}

int
rp_decimal_parse(RpDecimal *d, const char *s, int *dscale)
{
	bool		neg = false;
	bool		point = false;
	int			digits = 0;
	uint64_t	chunk = 0;
	int			chunklen = 0;

	rp_decimal_zero(d);
	*dscale = 0;
	if (strcmp(s, "NaN") == 0)
		return RP_DEC_NAN;
	if (strcmp(s, "Infinity") == 0)
		return RP_DEC_PINF;
	if (strcmp(s, "-Infinity") == 0)
		return RP_DEC_NINF;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	for (; *s; s++)
	{
		if (*s == '.' && !point)
		{
			point = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -1;
		chunk = chunk * 10 + (uint64_t) (*s - '0');
		digits++;
		if (point)
			d->scale++;
		if (++chunklen == 9)
		{
			rp_dec_muladd(d, rp_pow10[9], chunk);
			chunk = 0;
			chunklen = 0;
		}
	}
	if (digits == 0)
		return -1;
	if (chunklen)
		rp_dec_muladd(d, rp_pow10[chunklen], chunk);
	*dscale = d->scale;
	d->neg = neg && d->n > 0;
	return RP_DEC_FINITE;
}

static int
rp_dec_cmp_mag(const RpDecimal *a, const RpDecimal *b)
{
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	for (int i = a->n - 1; i >= 0; i--)
		if (a->limb[i] != b->limb[i])
			return a->limb[i] < b->limb[i] ? -1 : 1;
	return 0;
}

/* a->mag += b->mag (same scale) */
static void
rp_dec_add_mag(RpDecimal *a, const RpDecimal *b)
{
	uint32_t	carry = 0;
	int			n = a->n > b->n ? a->n : b->n;

	rp_dec_reserve(a, n + 1);
	for (int i = a->n; i < n; i++)
		a->limb[i] = 0;
	for (int i = 0; i < n; i++)
	{
		uint32_t	t = a->limb[i] + (i < b->n ? b->limb[i] : 0) + carry;

		carry = t >= RP_DEC_BASE;
		a->limb[i] = carry ? t - RP_DEC_BASE : t;
	}
	a->n = n;
	if (carry)
		a->limb[a->n++] = 1;
}

/* a->mag = big->mag - small->mag, big >= small (same scale); a may be either */
static void
rp_dec_sub_mag(RpDecimal *a, const RpDecimal *big, const RpDecimal *small)
{
	int64_t		borrow = 0;
	int			n = big->n;

	rp_dec_reserve(a, n);
	for (int i = 0; i < n; i++)
	{
		int64_t		t = (int64_t) big->limb[i] - (i < small->n ? small->limb[i] : 0) - borrow;

		borrow = t < 0;
		a->limb[i] = (uint32_t) (t < 0 ? t + RP_DEC_BASE : t);
	}
	a->n = n;
	rp_dec_trim(a);
}

void
rp_decimal_addmul(RpDecimal *acc, const RpDecimal *x, int64_t k)
{
	RpDecimal	t;
	bool		tneg;

	if (k == 0 || x->n == 0)
		return;
	rp_decimal_init(&t);
	rp_decimal_copy(&t, x);
	if (acc->scale < t.scale)
		rp_dec_rescale(acc, t.scale);
	else
		rp_dec_rescale(&t, acc->scale);
	rp_dec_muladd(&t, k < 0 ? (uint64_t) 0 - (uint64_t) k : (uint64_t) k, 0);
	tneg = x->neg != (k < 0);
	if (acc->n == 0 || acc->neg == tneg)
	{
		bool		was_zero = acc->n == 0;

		rp_dec_add_mag(acc, &t);
		acc->neg = was_zero ? tneg : acc->neg;
	}
	else if (rp_dec_cmp_mag(acc, &t) >= 0)
		rp_dec_sub_mag(acc, acc, &t);
	else
	{
		rp_dec_sub_mag(acc, &t, acc);
		acc->neg = tneg;
	}
	rp_dec_trim(acc);
	rp_decimal_free(&t);
}

bool
rp_decimal_is_zero(const RpDecimal *d)
{
	return d->n == 0;
}

int
rp_decimal_cmp(const RpDecimal *a, const RpDecimal *b)
{
	RpDecimal	diff;
	int			r;

	rp_decimal_init(&diff);
	rp_decimal_copy(&diff, a);
	rp_decimal_addmul(&diff, b, -1);
	r = diff.n == 0 ? 0 : diff.neg ? -1 : 1;
	rp_decimal_free(&diff);
	return r;
}

/* The magnitude's decimal digits, most significant first, no leading zeros ("0" for zero). */
static char *
rp_dec_digits(const RpDecimal *d)
{
	char	   *s = rp_malloc((size_t) d->n * 9 + 2);
	size_t		len = 0;

	if (d->n == 0)
	{
		strcpy(s, "0");
		return s;
	}
	len = (size_t) sprintf(s, "%u", d->limb[d->n - 1]);
	for (int i = d->n - 2; i >= 0; i--)
		len += (size_t) sprintf(s + len, "%09u", d->limb[i]);
	return s;
}

/* Write digits (scale places from the right are decimals), keeping min_scale. */
static void
rp_dec_put(RpBuf *out, bool neg, const char *digits, int scale, int min_scale)
{
	int			len = (int) strlen(digits);
	int			keep = scale;

	/* trim trailing fraction zeros down to min_scale */
	while (keep > min_scale && keep > 0 && digits[len - (scale - keep) - 1] == '0')
		keep--;
	if (neg)
		rp_buf_put_char(out, '-');
	if (len <= scale)
	{
		rp_buf_put_char(out, '0');
		if (keep > 0)
		{
			rp_buf_put_char(out, '.');
			for (int i = 0; i < scale - len && i < keep; i++)
				rp_buf_put_char(out, '0');
			if (keep > scale - len)
				rp_buf_put_bytes(out, digits, (size_t) (keep - (scale - len)));
		}
	}
	else
	{
		rp_buf_put_bytes(out, digits, (size_t) (len - scale));
		if (keep > 0)
		{
			rp_buf_put_char(out, '.');
			rp_buf_put_bytes(out, digits + len - scale, (size_t) keep);
		}
	}
	for (int i = keep > scale ? scale : keep; i < min_scale; i++)
	{
		if (i == 0 && keep == 0)
			rp_buf_put_char(out, '.');
		rp_buf_put_char(out, '0');
	}
}

void
rp_decimal_text(const RpDecimal *d, int min_scale, RpBuf *out)
{
	char	   *digits = rp_dec_digits(d);

	rp_dec_put(out, d->neg, digits, d->scale, min_scale);
	rp_free(digits);
}

void
rp_decimal_div_text(const RpDecimal *d, uint64_t n, int scale, RpBuf *out)
{
	RpDecimal	q;
	unsigned	__int128 rem = 0;
	char	   *digits;

	/* one extra place to round from */
	rp_decimal_init(&q);
	rp_decimal_copy(&q, d);
	if (q.scale < scale + 1)
		rp_dec_rescale(&q, scale + 1);
	for (int i = q.n - 1; i >= 0; i--)
	{
		unsigned	__int128 cur = rem * RP_DEC_BASE + q.limb[i];

		q.limb[i] = (uint32_t) (cur / n);
		rem = cur % n;
	}
	rp_dec_trim(&q);
	/* drop places beyond scale + 1, remembering whether anything was dropped */
	while (q.scale > scale + 1)
	{
		unsigned	__int128 r = 0;
		int			step = q.scale - scale - 1 > 9 ? 9 : q.scale - scale - 1;

		for (int i = q.n - 1; i >= 0; i--)
		{
			unsigned	__int128 cur = r * RP_DEC_BASE + q.limb[i];

			q.limb[i] = (uint32_t) (cur / rp_pow10[step]);
			r = cur % rp_pow10[step];
		}
		q.scale -= step;
		rp_dec_trim(&q);
	}
	{
		/* round half away from zero on the last place */
		unsigned	__int128 r = 0;

		for (int i = q.n - 1; i >= 0; i--)
		{
			unsigned	__int128 cur = r * RP_DEC_BASE + q.limb[i];

			q.limb[i] = (uint32_t) (cur / 10);
			r = cur % 10;
		}
		q.scale--;
		rp_dec_trim(&q);
		if (r >= 5)
			rp_dec_muladd(&q, 1, 1);
	}
	q.neg = d->neg && q.n > 0;
	digits = rp_dec_digits(&q);
	rp_dec_put(out, q.neg, digits, q.scale, scale);
	rp_free(digits);
	rp_decimal_free(&q);
}

void
rp_decimal_special_key(RpDecKind kind, RpBuf *out)
{
	rp_buf_put_u8(out, kind == RP_DEC_NINF ? 0x00 : kind == RP_DEC_PINF ? 0x04 : 0x05);
}

void
rp_decimal_key(const RpDecimal *d, RpBuf *out)
{
	char	   *digits;
	int			len,
				first,
				last;
	int32_t		exp;
	uint8_t		flip;

	if (d->n == 0)
	{
		rp_buf_put_u8(out, 0x02);
		return;
	}
	digits = rp_dec_digits(d);
	len = (int) strlen(digits);
	first = 0;
	last = len - 1;
	while (last > 0 && digits[last] == '0')
		last--;
	/* value = 0.D * 10^exp with D = digits[first..last] */
	exp = len - d->scale;
	flip = d->neg ? 0xFF : 0x00;
	rp_buf_put_u8(out, d->neg ? 0x01 : 0x03);
	rp_buf_put_u32(out, ((uint32_t) exp ^ 0x80000000U) ^ (d->neg ? 0xFFFFFFFFU : 0));
	for (int i = first; i <= last; i++)
		rp_buf_put_u8(out, (uint8_t) digits[i] ^ flip);
	rp_buf_put_u8(out, flip);
	rp_free(digits);
}
