/*
 * rp_jsonwire_value.c
 *    One column's JSON value back to its wire encoding (see rp_jsonwire.h):
 *    the inverse of rp_render_reader_value and the rp_fmt_* text forms.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_json.h"
#include "rp_read.h"
#include "rp_time.h"
#include "rp_wire.h"
#include "base/rp_status.h"
#include "base/rp_jsonread.h"
#include "values/rp_jsonwire.h"

/* PostgreSQL's NaNs (get_float8_nan, get_float4_nan): the bits 'NaN' reads as */
#define JW_FLOAT8_NAN	UINT64_C(0x7ff8000000000000)
#define JW_FLOAT4_NAN	UINT32_C(0x7fc00000)
/* numeric_send's dscale of +-Infinity: the short header's bits read as one */
#define JW_NUMERIC_INF_DSCALE 32

/* ---- errors: the relation, the column, its encoding, what was wrong --- */

static int
jw_bad(const RpRelation *rel, int col, const char *what)
{
	return rp_fail(RP_HALT_MALFORMED,
				   "column \"%s\" of relation %s.%s (%s): %s",
				   rel->cols[col].name, rel->schema, rel->name,
				   rp_encoding_name(rel->cols[col].encoding), what);
}

static int
jw_bad_type(const RpRelation *rel, int col, int type, const char *want)
{
	char		what[128];

	snprintf(what, sizeof(what), "a JSON %s where %s belongs",
			 rp_jr_type_name((RpJrType) type), want);
	return jw_bad(rel, col, what);
}

/* An array, composite or range value: the JSON lost what the wire needs. */
static int
jw_container(const RpRelation *rel, int col)
{
	uint8_t		enc = rel->cols[col].encoding;

	return rp_fail(RP_HALT_MALFORMED,
				   "column \"%s\" of relation %s.%s is %s: its JSON form does not carry the %s; the stream must carry the binary record",
				   rel->cols[col].name, rel->schema, rel->name,
				   enc == RP_ENC_ARRAY ? "an array" : enc == RP_ENC_COMPOSITE ? "a composite" : "a range",
				   enc == RP_ENC_ARRAY ? "element type" : enc == RP_ENC_COMPOSITE ? "field types" : "subtype");
}

/* ---- small text scanners over a decoded string ------------------------ */

typedef struct JwScan
{
	const char *s;
	size_t		n;
	size_t		i;
} JwScan;

static bool
jw_eat(JwScan *sc, char c)
{
	if (sc->i < sc->n && sc->s[sc->i] == c)
	{
		sc->i++;
		return true;
	}
	return false;
}

/* At least min, at most max decimal digits into *v. */
static bool
jw_digits(JwScan *sc, int min, int max, int64_t *v, int *count)
{
	int			k = 0;

	*v = 0;
	while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9' && k < max)
	{
		*v = *v * 10 + (sc->s[sc->i] - '0');
		sc->i++;
		k++;
	}
	if (count)
		*count = k;
	/* more digits than max: refused, not cut */
	if (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')
		return false;
	return k >= min;
}

/* The string's text (quotes gone, escapes decoded) into scratch, NUL-terminated. */
static int
jw_text(RpBuf *scratch, const char *val, size_t len, JwScan *sc)
{
	rp_buf_reset(scratch);
	if (rp_jr_string(val, len, scratch) < 0)
		return -1;
	rp_buf_put_char(scratch, '\0');
	sc->s = scratch->data;
	sc->n = scratch->len - 1;
	sc->i = 0;
	return 0;
}

static bool
jw_is(const JwScan *sc, const char *word)
{
	return sc->n == strlen(word) && memcmp(sc->s, word, sc->n) == 0;
}

/* ---- dates and times ---------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (astronomical years). */
static int64_t
jw_days_from_civil(int64_t y, int m, int d)
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

static int
jw_month_days(int64_t y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool		leap = (y % 4 == 0) && (y % 100 != 0 || y % 400 == 0);

	return m == 2 && leap ? 29 : days[m - 1];
}

/*
 * "YYYY-MM-DD", or with a sign and four or more digits outside 0000..9999
 * (rp_fmt_ymd): days since 1970.
 */
static bool
jw_ymd(JwScan *sc, int64_t *days)
{
	int64_t		y,
				m,
				d;
	bool		neg = false;

	if (jw_eat(sc, '-'))
		neg = true;
	else
		(void) jw_eat(sc, '+');
	if (!jw_digits(sc, 4, 9, &y, NULL) || !jw_eat(sc, '-') ||
		!jw_digits(sc, 2, 2, &m, NULL) || !jw_eat(sc, '-') ||
		!jw_digits(sc, 2, 2, &d, NULL))
		return false;
	if (neg)
		y = -y;
	if (m < 1 || m > 12 || d < 1 || d > jw_month_days(y, (int) m))
		return false;
	*days = jw_days_from_civil(y, (int) m, (int) d);
	return true;
}

/*
 * "HH:MM:SS[.ffffff]" (rp_fmt_hms): microseconds; hours of two or more
 * digits, a fraction of one to six.
 */
static bool
jw_hms(JwScan *sc, int max_hour_digits, int64_t *usecs)
{
	int64_t		h,
				m,
				s,
				f = 0;
	int			nf = 0;

	if (!jw_digits(sc, 2, max_hour_digits, &h, NULL) || !jw_eat(sc, ':') ||
		!jw_digits(sc, 2, 2, &m, NULL) || !jw_eat(sc, ':') ||
		!jw_digits(sc, 2, 2, &s, NULL) || m > 59 || s > 59)
		return false;
	if (jw_eat(sc, '.'))
	{
		if (!jw_digits(sc, 1, 6, &f, &nf))
			return false;
		for (; nf < 6; nf++)
			f *= 10;
	}
	*usecs = ((h * 60 + m) * 60 + s) * INT64_C(1000000) + f;
	return true;
}

static int
jw_put_date(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, const char *val,
			size_t len)
{
	JwScan		sc;
	int64_t		days;

	if (jw_text(scratch, val, len, &sc) < 0)
		return jw_bad(rel, col, "not a valid JSON string");
	if (jw_is(&sc, "infinity"))
		days = RP_DATE_POS_INF;
	else if (jw_is(&sc, "-infinity"))
		days = RP_DATE_NEG_INF;
	else if (!jw_ymd(&sc, &days) || sc.i != sc.n ||
			 days <= RP_DATE_NEG_INF || days >= RP_DATE_POS_INF ||
			 !rp_date_valid((int32_t) days))
		return jw_bad(rel, col, "not a date of PostgreSQL's range");
	rp_buf_put_u32(out, (uint32_t) (int32_t) days);
	return 0;
}

/* PostgreSQL's time range: 00:00:00 to 24:00:00 inclusive. */
#define JW_TIME_MAX RP_USECS_PER_DAY

static int
jw_put_time(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, const char *val,
			size_t len, bool tz)
{
	JwScan		sc;
	int64_t		us;

	if (jw_text(scratch, val, len, &sc) < 0)
		return jw_bad(rel, col, "not a valid JSON string");
	if (!jw_hms(&sc, 2, &us) || us > JW_TIME_MAX)
		return jw_bad(rel, col, "not a time of day");
	rp_buf_put_u64(out, (uint64_t) us);
	if (tz)
	{
		int64_t		h,
					m,
					s = 0,
					off;
		bool		neg = sc.i < sc.n && sc.s[sc.i] == '-';

		if (!(jw_eat(&sc, '+') || jw_eat(&sc, '-')) ||
			!jw_digits(&sc, 2, 6, &h, NULL) || !jw_eat(&sc, ':') ||
			!jw_digits(&sc, 2, 2, &m, NULL) || m > 59 ||
			(jw_eat(&sc, ':') && (!jw_digits(&sc, 2, 2, &s, NULL) || s > 59)))
			return jw_bad(rel, col, "not a UTC offset");
		off = h * 3600 + m * 60 + s;
		off = neg ? -off : off;
		if (off < INT32_MIN || off > INT32_MAX)
			return jw_bad(rel, col, "UTC offset out of range");
		rp_buf_put_u32(out, (uint32_t) (int32_t) off);
	}
	if (sc.i != sc.n)
		return jw_bad(rel, col, "text after the time");
	return 0;
}

static int
jw_put_timestamp(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, const char *val,
				 size_t len, bool tz)
{
	JwScan		sc;
	int64_t		days,
				rem,
				t,
				w;

	if (jw_text(scratch, val, len, &sc) < 0)
		return jw_bad(rel, col, "not a valid JSON string");
	if (jw_is(&sc, "infinity"))
		w = RP_TS_POS_INF;
	else if (jw_is(&sc, "-infinity"))
		w = RP_TS_NEG_INF;
	else
	{
		if (!jw_ymd(&sc, &days) || !jw_eat(&sc, 'T') || !jw_hms(&sc, 2, &rem) ||
			rem >= RP_USECS_PER_DAY || (tz && !jw_eat(&sc, 'Z')) || sc.i != sc.n)
			return jw_bad(rel, col, tz ? "not an RFC 3339 UTC timestamp" :
						  "not an RFC 3339 timestamp without zone");
		/* in PostgreSQL's own units, where its range and the extended one are */
		if (__builtin_mul_overflow(days - RP_PG_EPOCH_DAYS, RP_USECS_PER_DAY, &t) ||
			__builtin_add_overflow(t, rem, &t) ||
			t < RP_PG_TS_MIN || t >= RP_PG_TS_END || !rp_ts_from_pg(t, true, &w))
			return jw_bad(rel, col, "timestamp out of PostgreSQL's range");
	}
	rp_buf_put_u64(out, (uint64_t) w);
	return 0;
}

/* ---- numbers ------------------------------------------------------------ */

static int
jw_put_int(RpBuf *out, const RpRelation *rel, int col, const char *val, size_t len,
		   int64_t min, int64_t max, int width)
{
	int64_t		v;

	if (rp_jr_int64(val, len, &v) < 0 || v < min || v > max)
		return jw_bad(rel, col, "not an integer of the column's range");
	if (width == 2)
		rp_buf_put_u16(out, (uint16_t) v);
	else if (width == 4)
		rp_buf_put_u32(out, (uint32_t) v);
	else
		rp_buf_put_u64(out, (uint64_t) v);
	return 0;
}

/*
 * A float: a JSON number read with strtod/strtof (C locale: the renderer's
 * snprintf wrote it there; any other decimal point leaves text unread and
 * is refused), or the strings NaN, Infinity, -Infinity.
 */
static int
jw_put_float(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, int type,
			 const char *val, size_t len, bool single)
{
	double		d = 0;
	float		f = 0;
	bool		nan = false;

	if (type == RP_JR_STRING)
	{
		if (rp_jr_string_eq(val, len, "NaN"))
			nan = true;
		else if (rp_jr_string_eq(val, len, "Infinity"))
			d = f = INFINITY;
		else if (rp_jr_string_eq(val, len, "-Infinity"))
			d = f = -INFINITY;
		else
			return jw_bad(rel, col, "a JSON string other than NaN, Infinity or -Infinity");
	}
	else if (type == RP_JR_NUMBER)
	{
		char	   *end;

		rp_buf_reset(scratch);
		rp_buf_put_bytes(scratch, val, len);
		rp_buf_put_char(scratch, '\0');
		errno = 0;
		if (single)
			f = strtof(scratch->data, &end);
		else
			d = strtod(scratch->data, &end);
		if (end != scratch->data + len || (single ? isinf(f) : isinf(d)))
			return jw_bad(rel, col, "a number outside the float range");
	}
	else
		return jw_bad_type(rel, col, type, "a number");

	if (single)
	{
		uint32_t	bits = JW_FLOAT4_NAN;

		if (!nan)
			memcpy(&bits, &f, sizeof(bits));
		rp_buf_put_u32(out, bits);
	}
	else
	{
		uint64_t	bits = JW_FLOAT8_NAN;

		if (!nan)
			memcpy(&bits, &d, sizeof(bits));
		rp_buf_put_u64(out, bits);
	}
	return 0;
}

/*
 * An exact decimal ("-12.340", NaN, Infinity, -Infinity) in numeric_send's
 * form: base-10000 digits aligned on the decimal point, leading and
 * trailing zero digits stripped, weight of the first, dscale the number of
 * decimals written; zero has no digits, weight 0 and a positive sign.
 */
static int
jw_put_numeric(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, const char *val,
			   size_t len)
{
	JwScan		sc;
	size_t		int_start,
				int_len,
				frac_start,
				frac_len = 0;
	size_t		a,
				b,
				ngroups,
				first,
				last;
	bool		neg;
	uint16_t	sign = RP_NUMERIC_POS;
	int64_t		weight;

	if (jw_text(scratch, val, len, &sc) < 0)
		return jw_bad(rel, col, "not a valid JSON string");
	if (jw_is(&sc, "NaN") || jw_is(&sc, "Infinity") || jw_is(&sc, "-Infinity"))
	{
		sign = sc.s[0] == 'N' ? RP_NUMERIC_NAN : sc.s[0] == 'I' ? RP_NUMERIC_PINF : RP_NUMERIC_NINF;
		rp_buf_put_u32(out, 8);
		rp_buf_put_u16(out, 0);
		rp_buf_put_u16(out, 0);
		rp_buf_put_u16(out, sign);
		rp_buf_put_u16(out, sign == RP_NUMERIC_NAN ? 0 : JW_NUMERIC_INF_DSCALE);
		return 0;
	}
	neg = jw_eat(&sc, '-');
	int_start = sc.i;
	while (sc.i < sc.n && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9')
		sc.i++;
	int_len = sc.i - int_start;
	frac_start = sc.i + 1;
	if (jw_eat(&sc, '.'))
	{
		while (sc.i < sc.n && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9')
			sc.i++;
		frac_len = sc.i - frac_start;
		if (frac_len == 0)
			return jw_bad(rel, col, "not a decimal number");
	}
	if (int_len == 0 || sc.i != sc.n || (int_len > 1 && sc.s[int_start] == '0'))
		return jw_bad(rel, col, "not a decimal number");
	if (frac_len > UINT16_MAX)
		return jw_bad(rel, col, "too many decimals for a numeric");

	/* groups of four digits: a before the point, b after */
	a = (int_len + 3) / 4;
	b = (frac_len + 3) / 4;
	ngroups = a + b;
#define JW_DIGIT(k) ((k) < int_len ? sc.s[int_start + (k)] - '0' : \
					 ((k) - int_len < frac_len ? sc.s[frac_start + (k) - int_len] - '0' : 0))
	/* group g: decimal digits [4g - pad, 4g - pad + 4) of the int digits */
	{
		size_t		pad = a * 4 - int_len;
		uint16_t   *groups = rp_malloc(sizeof(uint16_t) * (ngroups ? ngroups : 1));
		size_t		at;

		for (size_t g = 0; g < ngroups; g++)
		{
			int			v = 0;

			for (size_t k = 0; k < 4; k++)
			{
				size_t		pos = g * 4 + k;	/* in the padded digit string */

				v = v * 10 + (pos < pad ? 0 : JW_DIGIT(pos - pad));
			}
			groups[g] = (uint16_t) v;
		}
		first = 0;
		while (first < ngroups && groups[first] == 0)
			first++;
		last = ngroups;
		while (last > first && groups[last - 1] == 0)
			last--;
		weight = (int64_t) a - 1 - (int64_t) first;
		if (first == ngroups)
			weight = 0;
		else if (weight > INT16_MAX || weight < INT16_MIN || last - first > UINT16_MAX)
		{
			rp_free(groups);
			return jw_bad(rel, col, "a numeric out of range");
		}
		if (first < ngroups && neg)
			sign = RP_NUMERIC_NEG;
		rp_buf_put_u32(out, (uint32_t) (8 + 2 * (last - first)));
		rp_buf_put_u16(out, (uint16_t) (last - first));
		rp_buf_put_u16(out, (uint16_t) (int16_t) weight);
		rp_buf_put_u16(out, sign);
		rp_buf_put_u16(out, (uint16_t) frac_len);
		for (at = first; at < last; at++)
			rp_buf_put_u16(out, groups[at]);
		rp_free(groups);
	}
#undef JW_DIGIT
	return 0;
}

/* ---- strings and bytes -------------------------------------------------- */

static int
jw_b64(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Canonical base64 (rp_fmt_base64: padded, the unused bits zero) of s/n
 * appended to out; false for anything else.
 */
static bool
jw_base64(RpBuf *out, const char *s, size_t n)
{
	size_t		i;

	if (n % 4 != 0)
		return false;
	rp_buf_reserve(out, n / 4 * 3);
	for (i = 0; i < n; i += 4)
	{
		int			v0 = jw_b64(s[i]),
					v1 = jw_b64(s[i + 1]),
					v2 = s[i + 2] == '=' ? -2 : jw_b64(s[i + 2]),
					v3 = s[i + 3] == '=' ? -2 : jw_b64(s[i + 3]);
		bool		end = i + 4 == n;

		if (v0 < 0 || v1 < 0 || v2 == -1 || v3 == -1)
			return false;
		if ((v2 == -2 || v3 == -2) && !end)
			return false;
		rp_buf_put_u8(out, (uint8_t) ((v0 << 2) | (v1 >> 4)));
		if (v2 == -2)
		{
			if (v3 != -2 || (v1 & 15) != 0)
				return false;
			continue;
		}
		rp_buf_put_u8(out, (uint8_t) (((v1 & 15) << 4) | (v2 >> 2)));
		if (v3 == -2)
		{
			if ((v2 & 3) != 0)
				return false;
			continue;
		}
		rp_buf_put_u8(out, (uint8_t) (((v2 & 3) << 6) | v3));
	}
	return true;
}

/*
 * Base64 from a JSON string span into out, directly (no copy of a large
 * value) unless it holds an escape.  False for anything not canonical.
 */
static bool
jw_base64_span(RpBuf *out, RpBuf *scratch, const char *val, size_t len)
{
	if (len < 2 || val[0] != '"' || val[len - 1] != '"')
		return false;
	if (memchr(val, '\\', len) == NULL)
		return jw_base64(out, val + 1, len - 2);
	rp_buf_reset(scratch);
	if (rp_jr_string(val, len, scratch) < 0)
		return false;
	return jw_base64(out, scratch->data, scratch->len);
}

/* u32 length, then what fill appends: the length set once it is known. */
static size_t
jw_len_start(RpBuf *out)
{
	size_t		at = out->len;

	rp_buf_put_u32(out, 0);
	return at;
}

static void
jw_len_end(RpBuf *out, size_t at)
{
	rp_buf_set_u32_at(out, at, (uint32_t) (out->len - at - 4));
}

static int
jw_put_uuid(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, const char *val,
			size_t len)
{
	JwScan		sc;
	unsigned char b[16];
	int			k = 0;

	if (jw_text(scratch, val, len, &sc) < 0 || sc.n != 36)
		return jw_bad(rel, col, "not a UUID");
	for (size_t i = 0; i < 36; i++)
	{
		int			h,
					l;

		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (sc.s[i] != '-')
				return jw_bad(rel, col, "not a UUID");
			continue;
		}
		h = sc.s[i];
		l = sc.s[i + 1];
		h = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 :
			h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
		l = l >= '0' && l <= '9' ? l - '0' : l >= 'a' && l <= 'f' ? l - 'a' + 10 :
			l >= 'A' && l <= 'F' ? l - 'A' + 10 : -1;
		if (h < 0 || l < 0 || k >= 16)
			return jw_bad(rel, col, "not a UUID");
		b[k++] = (unsigned char) (h << 4 | l);
		i++;
	}
	if (k != 16)
		return jw_bad(rel, col, "not a UUID");
	rp_buf_put_bytes(out, b, 16);
	return 0;
}

/* {"months":m,"days":d,"microseconds":us}, exactly those three members. */
static int
jw_put_interval(RpBuf *out, const RpRelation *rel, int col, const char *val, size_t len)
{
	RpJrDoc		doc;
	const RpJrMember *m;
	int64_t		v[3];
	static const char *const names[3] = {"months", "days", "microseconds"};
	int			rc = 0;

	rp_jr_init(&doc);
	if (rp_jr_parse(&doc, val, len) < 0 || doc.type != RP_JR_OBJECT || doc.nmembers != 3)
		rc = -1;
	for (int i = 0; rc == 0 && i < 3; i++)
		if (rp_jr_find(&doc, names[i], &m) != 1 || m->type != RP_JR_NUMBER ||
			rp_jr_int64(m->val, m->val_len, &v[i]) < 0 ||
			(i < 2 && (v[i] < INT32_MIN || v[i] > INT32_MAX)))
			rc = -1;
	rp_jr_free(&doc);
	if (rc < 0)
		return jw_bad(rel, col, "not an interval object of months, days and microseconds");
	rp_buf_put_u64(out, (uint64_t) v[2]);
	rp_buf_put_u32(out, (uint32_t) (int32_t) v[1]);
	rp_buf_put_u32(out, (uint32_t) (int32_t) v[0]);
	return 0;
}

/* ---- one value ------------------------------------------------------------ */

int
rp_jsonwire_value(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col, int type,
				  const char *val, size_t len)
{
	uint8_t		enc = rel->cols[col].encoding;
	size_t		mark = out->len;
	size_t		at;
	int			rc = 0;

	/* what each encoding renders as: the JSON type to expect */
	switch (enc)
	{
		case RP_ENC_BOOL:
			if (type != RP_JR_TRUE && type != RP_JR_FALSE)
				return jw_bad_type(rel, col, type, "true or false");
			break;
		case RP_ENC_INT2:
		case RP_ENC_INT4:
		case RP_ENC_INT8:
		case RP_ENC_OID:
			if (type != RP_JR_NUMBER)
				return jw_bad_type(rel, col, type, "a number");
			break;
		case RP_ENC_FLOAT4:
		case RP_ENC_FLOAT8:
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			break;
		case RP_ENC_INTERVAL:
			if (type != RP_JR_OBJECT)
				return jw_bad_type(rel, col, type, "an object");
			break;
		case RP_ENC_ARRAY:
		case RP_ENC_COMPOSITE:
		case RP_ENC_RANGE:
			return jw_container(rel, col);
		default:
			if (enc >= RP_ENC__COUNT)
				return jw_bad(rel, col, "an unknown encoding");
			if (type != RP_JR_STRING)
				return jw_bad_type(rel, col, type, "a string");
			break;
	}

	switch (enc)
	{
		case RP_ENC_BOOL:
			rp_buf_put_u8(out, type == RP_JR_TRUE ? 1 : 0);
			break;
		case RP_ENC_INT2:
			rc = jw_put_int(out, rel, col, val, len, INT16_MIN, INT16_MAX, 2);
			break;
		case RP_ENC_INT4:
			rc = jw_put_int(out, rel, col, val, len, INT32_MIN, INT32_MAX, 4);
			break;
		case RP_ENC_INT8:
			rc = jw_put_int(out, rel, col, val, len, INT64_MIN, INT64_MAX, 8);
			break;
		case RP_ENC_OID:
			rc = jw_put_int(out, rel, col, val, len, 0, UINT32_MAX, 4);
			break;
		case RP_ENC_FLOAT4:
		case RP_ENC_FLOAT8:
			rc = jw_put_float(out, scratch, rel, col, type, val, len, enc == RP_ENC_FLOAT4);
			break;
		case RP_ENC_NUMERIC:
			rc = jw_put_numeric(out, scratch, rel, col, val, len);
			break;
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_ENUM:
			/* decoded straight into out: a large value is not copied again */
			at = jw_len_start(out);
			if (rp_jr_string(val, len, out) < 0)
				rc = jw_bad(rel, col, "not a valid JSON string");
			else
				jw_len_end(out, at);
			break;
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			/* the value's text as it is: the renderer wrote it raw */
			rp_buf_put_str(out, val, len);
			break;
		case RP_ENC_BYTEA:
			at = jw_len_start(out);
			if (!jw_base64_span(out, scratch, val, len))
				rc = jw_bad(rel, col, "not canonical base64");
			else
				jw_len_end(out, at);
			break;
		case RP_ENC_UUID:
			rc = jw_put_uuid(out, scratch, rel, col, val, len);
			break;
		case RP_ENC_DATE:
			rc = jw_put_date(out, scratch, rel, col, val, len);
			break;
		case RP_ENC_TIME:
		case RP_ENC_TIMETZ:
			rc = jw_put_time(out, scratch, rel, col, val, len, enc == RP_ENC_TIMETZ);
			break;
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			rc = jw_put_timestamp(out, scratch, rel, col, val, len, enc == RP_ENC_TIMESTAMPTZ);
			break;
		case RP_ENC_INTERVAL:
			rc = jw_put_interval(out, rel, col, val, len);
			break;
	}
	if (rc < 0)
		out->len = mark;
	return rc;
}

/* ---- what reads back ------------------------------------------------------ */

/* numeric_send's form: what jw_put_numeric writes for the value's text. */
static bool
jw_numeric_canonical(const unsigned char *p, uint32_t len)
{
	uint16_t	ndigits = rp_load_u16(p);
	int16_t		weight = (int16_t) rp_load_u16(p + 2);
	uint16_t	sign = rp_load_u16(p + 4);
	uint16_t	dscale = rp_load_u16(p + 6);
	int			lastdig;
	int64_t		exp_last;

	if (sign == RP_NUMERIC_NAN || sign == RP_NUMERIC_PINF || sign == RP_NUMERIC_NINF)
		return ndigits == 0 && weight == 0 &&
			dscale == (sign == RP_NUMERIC_NAN ? 0 : JW_NUMERIC_INF_DSCALE);
	if (ndigits == 0)
		return weight == 0 && sign == RP_NUMERIC_POS;
	if (rp_load_u16(p + 8) == 0)
		return false;
	lastdig = rp_load_u16(p + 8 + 2 * (ndigits - 1));
	if (lastdig == 0)
		return false;
	/* the last digit's decimals must lie within dscale: the text shows dscale */
	exp_last = (int64_t) weight - (ndigits - 1);
	if (exp_last < 0)
	{
		int64_t		pos = -exp_last * 4;	/* decimals up to this group's end */

		while (lastdig % 10 == 0)
		{
			lastdig /= 10;
			pos--;
		}
		if (pos > dscale)
			return false;
	}
	(void) len;
	return true;
}

/*
 * A json value's text reads back as it is when it is the whole member span:
 * no line break (the renderer writes them as spaces), no leading or
 * trailing whitespace (the reader's span leaves it out), not the literal
 * null (that reads as SQL NULL), valid UTF-8 (or the whole line would not
 * read).
 */
static bool
jw_json_text_exact(const unsigned char *s, uint32_t len)
{
	if (len == 0 || memchr(s, '\n', len) || memchr(s, '\r', len))
		return false;
	if (s[0] == ' ' || s[0] == '\t' || s[len - 1] == ' ' || s[len - 1] == '\t')
		return false;
	if (len == 4 && memcmp(s, "null", 4) == 0)
		return false;
	return rp_utf8_valid(s, len);
}

bool
rp_jsonwire_value_lossless(uint8_t encoding, const unsigned char *data, uint32_t len)
{
	switch (encoding)
	{
		case RP_ENC_BOOL:
			return data[0] <= 1;
		case RP_ENC_FLOAT4:
			{
				uint32_t	bits = rp_load_u32(data);
				float		f;

				memcpy(&f, &bits, sizeof(f));
				return !isnan(f) || bits == JW_FLOAT4_NAN;
			}
		case RP_ENC_FLOAT8:
			{
				uint64_t	bits = rp_load_u64(data);
				double		d;

				memcpy(&d, &bits, sizeof(d));
				return !isnan(d) || bits == JW_FLOAT8_NAN;
			}
		case RP_ENC_NUMERIC:
			return jw_numeric_canonical(data + 4, len - 4);
		case RP_ENC_TEXT:
		case RP_ENC_STRING:
		case RP_ENC_ENUM:
			return rp_utf8_valid(data + 4, len - 4);
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			return jw_json_text_exact(data + 4, len - 4);
		case RP_ENC_TIME:
		case RP_ENC_TIMETZ:
			{
				int64_t		us = (int64_t) rp_load_u64(data);

				return us >= 0 && us <= JW_TIME_MAX;
			}
		case RP_ENC_INT2:
		case RP_ENC_INT4:
		case RP_ENC_INT8:
		case RP_ENC_OID:
		case RP_ENC_BYTEA:
		case RP_ENC_UUID:
		case RP_ENC_DATE:
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
		case RP_ENC_INTERVAL:
			return true;
		default:
			/* arrays, composites, ranges: the JSON has no element types */
			return false;
	}
}

/* ---- for the NATS source's headers ------------------------------------------ */

int
rp_jsonwire_base64(const char *s, size_t n, RpBuf *out)
{
	return jw_base64(out, s, n) ? 0 : -1;
}

int
rp_jsonwire_timestamptz(const char *s, size_t n, int64_t *out)
{
	JwScan		sc = {s, n, 0};
	int64_t		days,
				rem,
				t;

	if (!jw_ymd(&sc, &days) || !jw_eat(&sc, 'T') || !jw_hms(&sc, 2, &rem) ||
		rem >= RP_USECS_PER_DAY || !jw_eat(&sc, 'Z') || sc.i != sc.n ||
		__builtin_mul_overflow(days - RP_PG_EPOCH_DAYS, RP_USECS_PER_DAY, &t) ||
		__builtin_add_overflow(t, rem, &t) ||
		t < RP_PG_TS_MIN || t >= RP_PG_TS_END || !rp_ts_from_pg(t, true, out))
		return -1;
	return 0;
}
