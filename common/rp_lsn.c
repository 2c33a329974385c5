/*
 * rp_lsn.c
 *    LSN text (see rp_lsn.h).
 *
 * The formatter writes the digits itself rather than through snprintf:
 * the log renderer calls it twice per transaction.
 */
#include <stdlib.h>
#include <string.h>

#include "rp_lsn.h"

/* The hexadecimal digits of v, most significant first, no leading zeros. */
static char *
rp_lsn_put_half(char *out, uint32_t v)
{
	static const char digits[] = "0123456789ABCDEF";
	char		tmp[8];
	int			n = 0;

	do
	{
		tmp[n++] = digits[v & 0xF];
		v >>= 4;
	} while (v != 0);
	while (n > 0)
		*out++ = tmp[--n];
	return out;
}

char	   *
rp_lsn_format(uint64_t lsn, char *buf)
{
	char	   *p = rp_lsn_put_half(buf, (uint32_t) (lsn >> 32));

	*p++ = '/';
	p = rp_lsn_put_half(p, (uint32_t) lsn);
	*p = '\0';
	return buf;
}

bool
rp_lsn_parse(const char *s, uint64_t *lsn)
{
	static const char hex[] = "0123456789abcdefABCDEF";
	size_t		len1 = strspn(s, hex),
				len2;

	if (len1 < 1 || len1 > 8 || s[len1] != '/')
		return false;
	len2 = strspn(s + len1 + 1, hex);
	if (len2 < 1 || len2 > 8 || s[len1 + 1 + len2] != '\0')
		return false;
	*lsn = ((uint64_t) strtoul(s, NULL, 16) << 32) | (uint64_t) strtoul(s + len1 + 1, NULL, 16);
	return true;
}
