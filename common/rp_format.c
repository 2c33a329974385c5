/*
 * rp_format.c
 *    Text forms of pre-cast values (see rp_format.h).
 */
#include "rp_alloc.h"
#include "rp_format.h"
#include "rp_lsn.h"
#include "rp_read.h"
#include "rp_time.h"
#include "rp_wire.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void
rp_fmt_uint64(RpBuf *buf, uint64_t v)
{
	char		tmp[24];
	int			n = 0;

	do
	{
		tmp[n++] = (char) ('0' + v % 10);
		v /= 10;
	} while (v);
	rp_buf_reserve(buf, (size_t) n);
	while (n)
		buf->data[buf->len++] = tmp[--n];
}

void
rp_fmt_int64(RpBuf *buf, int64_t v)
{
	if (v < 0)
	{
		rp_buf_put_char(buf, '-');
		rp_fmt_uint64(buf, (uint64_t) 0 - (uint64_t) v);
	}
	else
		rp_fmt_uint64(buf, (uint64_t) v);
}

void
rp_fmt_lsn(RpBuf *buf, uint64_t lsn)
{
	char		tmp[RP_LSN_BUFLEN];

	rp_buf_put_text(buf, rp_lsn_format(lsn, tmp));
}

/*
 * Try increasing precision until the text parses back to the same value:
 * the shortest round-trip form, independent of extra_float_digits.
 */
void
rp_fmt_float8(RpBuf *buf, double v)
{
	char		tmp[40];
	int			n = 0;

	if (isnan(v))
	{
		rp_buf_put_text(buf, "NaN");
		return;
	}
	if (isinf(v))
	{
		rp_buf_put_text(buf, v > 0 ? "Infinity" : "-Infinity");
		return;
	}

	/*
	 * A normal double needs at least DBL_DIG (15) digits only when fewer do
	 * not round-trip, and %g drops trailing zeros; a subnormal holds fewer
	 * significant bits, so its shortest form can be shorter: search from 1.
	 */
	for (int prec = (v != 0 && fabs(v) < DBL_MIN) ? 1 : 15; prec <= 17; prec++)
	{
		n = snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	rp_buf_put_bytes(buf, tmp, (size_t) n);
}

void
rp_fmt_float4(RpBuf *buf, float v)
{
	char		tmp[40];
	int			n = 0;

	if (isnan(v))
	{
		rp_buf_put_text(buf, "NaN");
		return;
	}
	if (isinf(v))
	{
		rp_buf_put_text(buf, v > 0 ? "Infinity" : "-Infinity");
		return;
	}
	/* as for float8: subnormals may need fewer than FLT_DIG digits */
	for (int prec = (v != 0 && fabsf(v) < FLT_MIN) ? 1 : 6; prec <= 9; prec++)
	{
		n = snprintf(tmp, sizeof(tmp), "%.*g", prec, (double) v);
		if (strtof(tmp, NULL) == v)
			break;
	}
	rp_buf_put_bytes(buf, tmp, (size_t) n);
}

/*
 * PostgreSQL's binary numeric layout: ndigits, weight, sign, dscale, then
 * base-10000 digits; the value is sum(digit[i] * 10000^(weight - i)) and
 * dscale is the number of decimal digits after the point.
 */
bool
rp_fmt_numeric(RpBuf *buf, const unsigned char *p, uint32_t len)
{
	uint16_t	ndigits,
				sign,
				dscale;
	int16_t		weight;
	int			d;

	if (len < 8)
		return false;
	ndigits = rp_load_u16(p);
	weight = (int16_t) rp_load_u16(p + 2);
	sign = rp_load_u16(p + 4);
	dscale = rp_load_u16(p + 6);
	if (len != 8u + 2u * ndigits)
		return false;
	p += 8;

	switch (sign)
	{
		case RP_NUMERIC_NAN:
			rp_buf_put_text(buf, "NaN");
			return true;
		case RP_NUMERIC_PINF:
			rp_buf_put_text(buf, "Infinity");
			return true;
		case RP_NUMERIC_NINF:
			rp_buf_put_text(buf, "-Infinity");
			return true;
		case RP_NUMERIC_POS:
		case RP_NUMERIC_NEG:
			break;
		default:
			return false;
	}
	for (uint16_t i = 0; i < ndigits; i++)
		if (rp_load_u16(p + 2 * i) > 9999)
			return false;

	if (sign == RP_NUMERIC_NEG && ndigits > 0)
		rp_buf_put_char(buf, '-');

	/* integer part */
	if (weight < 0)
		rp_buf_put_char(buf, '0');
	else
	{
		for (d = 0; d <= weight; d++)
		{
			int			dig = d < ndigits ? rp_load_u16(p + 2 * d) : 0;
			char		tmp[8];
			int			n = snprintf(tmp, sizeof(tmp), d == 0 ? "%d" : "%04d", dig);

			rp_buf_put_bytes(buf, tmp, (size_t) n);
		}
	}
	/* fraction: exactly dscale digits */
	if (dscale > 0)
	{
		int			left = dscale;

		rp_buf_put_char(buf, '.');
		for (d = weight + 1; left > 0; d++)
		{
			int			dig = (d >= 0 && d < ndigits) ? rp_load_u16(p + 2 * d) : 0;
			char		tmp[8];

			snprintf(tmp, sizeof(tmp), "%04d", dig);
			rp_buf_put_bytes(buf, tmp, (size_t) (left < 4 ? left : 4));
			left -= 4;
		}
	}
	return true;
}

/* Civil date from a day count (proleptic Gregorian, era-based arithmetic). */
void
rp_civil_from_days(int64_t days, int64_t *year, int *month, int *day)
{
	int64_t		z = days + 719468;
	int64_t		era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t		doe = z - era * 146097;
	int64_t		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t		mp = (5 * doy + 2) / 153;
	int64_t		m = mp < 10 ? mp + 3 : mp - 9;

	*day = (int) (doy - (153 * mp + 2) / 5 + 1);
	*month = (int) m;
	*year = yoe + era * 400 + (m <= 2);
}

/* ISO 8601 year: four digits, a sign outside 0000..9999 (0000 is 1 BC). */
static void
rp_fmt_ymd(RpBuf *buf, int64_t days)
{
	int64_t		y;
	int			m,
				d;
	char		tmp[40];
	int			n;

	rp_civil_from_days(days, &y, &m, &d);
	if (y >= 0 && y <= 9999)
		n = snprintf(tmp, sizeof(tmp), "%04d-%02d-%02d", (int) y, m, d);
	else
		n = snprintf(tmp, sizeof(tmp), "%c%04lld-%02d-%02d", y < 0 ? '-' : '+',
					 (long long) (y < 0 ? -y : y), m, d);
	rp_buf_put_bytes(buf, tmp, (size_t) n);
}

static void
rp_fmt_hms(RpBuf *buf, int64_t usecs)
{
	char		tmp[32];
	int			n;
	int64_t		secs = usecs / 1000000;
	int			frac = (int) (usecs % 1000000);

	n = snprintf(tmp, sizeof(tmp), "%02d:%02d:%02d",
				 (int) (secs / 3600), (int) (secs / 60 % 60), (int) (secs % 60));
	rp_buf_put_bytes(buf, tmp, (size_t) n);
	if (frac)
	{
		n = snprintf(tmp, sizeof(tmp), ".%06d", frac);
		rp_buf_put_bytes(buf, tmp, (size_t) n);
	}
}

void
rp_fmt_date(RpBuf *buf, int32_t days)
{
	if (days == RP_DATE_NEG_INF)
		rp_buf_put_text(buf, "-infinity");
	else if (days == RP_DATE_POS_INF)
		rp_buf_put_text(buf, "infinity");
	else
		rp_fmt_ymd(buf, days);
}

void
rp_fmt_time(RpBuf *buf, int64_t usecs)
{
	rp_fmt_hms(buf, usecs);
}

void
rp_fmt_timetz(RpBuf *buf, int64_t usecs, int32_t offset_east)
{
	char		tmp[16];
	int			n;

	/* 64-bit: negating INT32_MIN (a damaged frame) would overflow */
	int64_t		a = offset_east < 0 ? -(int64_t) offset_east : offset_east;

	rp_fmt_hms(buf, usecs);
	n = snprintf(tmp, sizeof(tmp), "%c%02d:%02d", offset_east < 0 ? '-' : '+',
				 (int) (a / 3600), (int) (a / 60 % 60));
	rp_buf_put_bytes(buf, tmp, (size_t) n);
	if (a % 60)
	{
		n = snprintf(tmp, sizeof(tmp), ":%02d", (int) (a % 60));
		rp_buf_put_bytes(buf, tmp, (size_t) n);
	}
}

void
rp_fmt_timestamp(RpBuf *buf, int64_t usecs, bool with_zone)
{
	int64_t		days,
				rem;

	if (usecs == RP_TS_NEG_INF)
	{
		rp_buf_put_text(buf, "-infinity");
		return;
	}
	if (usecs == RP_TS_POS_INF)
	{
		rp_buf_put_text(buf, "infinity");
		return;
	}
	rp_ts_split(usecs, &days, &rem);
	rp_fmt_ymd(buf, days);
	rp_buf_put_char(buf, 'T');
	rp_fmt_hms(buf, rem);
	if (with_zone)
		rp_buf_put_char(buf, 'Z');
}

void
rp_fmt_uuid(RpBuf *buf, const unsigned char *p)
{
	static const char hex[] = "0123456789abcdef";

	rp_buf_reserve(buf, 36);
	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf->data[buf->len++] = '-';
		buf->data[buf->len++] = hex[p[i] >> 4];
		buf->data[buf->len++] = hex[p[i] & 15];
	}
}

void
rp_fmt_base64(RpBuf *buf, const unsigned char *p, size_t len)
{
	static const char tbl[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t		i;
	char	   *o;

	rp_buf_reserve(buf, (len + 2) / 3 * 4);
	o = buf->data + buf->len;
	for (i = 0; i + 2 < len; i += 3)
	{
		uint32_t	v = ((uint32_t) p[i] << 16) | ((uint32_t) p[i + 1] << 8) | p[i + 2];

		*o++ = tbl[v >> 18];
		*o++ = tbl[(v >> 12) & 63];
		*o++ = tbl[(v >> 6) & 63];
		*o++ = tbl[v & 63];
	}
	if (i < len)
	{
		uint32_t	v = (uint32_t) p[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t) p[i + 1] << 8;
		*o++ = tbl[v >> 18];
		*o++ = tbl[(v >> 12) & 63];
		*o++ = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	buf->len = (size_t) (o - buf->data);
}
