/*
 * rp_bfmsg.c
 *    Format and parse the backfill's watermark messages (rp_bfmsg.h).
 *
 * The parser accepts exactly what the formatter writes: the message comes
 * from the source's WAL, where anyone may write under our prefix, so
 * anything else is refused rather than guessed at.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "backfill/rp_bfmsg.h"

int
rp_bfmsg_format(const RpBfMsg *m, char *out, size_t outlen)
{
	int			n = snprintf(out, outlen, "{\"v\":1,\"mark\":\"%s\",\"run\":\"%s\",\"relid\":%u,\"chunk\":%" PRIu64 "}",
							 m->mark == RP_BF_LOW ? "low" : "high", m->run, m->relid, m->chunk);

	return n < 0 || (size_t) n >= outlen ? -1 : n;
}

/* Expect the literal lit at *p; advance past it. */
static bool
rp_bfmsg_lit(const char **p, const char *end, const char *lit)
{
	size_t		n = strlen(lit);

	if ((size_t) (end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

/* Decimal digits at *p (no sign, no leading zeros beyond "0"), up to max. */
static bool
rp_bfmsg_uint(const char **p, const char *end, uint64_t max, uint64_t *v)
{
	const char *s = *p;
	uint64_t	n = 0;

	while (*p < end && **p >= '0' && **p <= '9')
	{
		unsigned	d = (unsigned) (**p - '0');

		if (n > (max - d) / 10)
			return false;
		n = n * 10 + d;
		(*p)++;
	}
	if (*p == s || (*p - s > 1 && *s == '0'))
		return false;
	*v = n;
	return true;
}

bool
rp_bfmsg_parse(const unsigned char *content, size_t len, RpBfMsg *m)
{
	const char *p = (const char *) content;
	const char *end = p + len;
	uint64_t	v;

	memset(m, 0, sizeof(*m));
	if (!rp_bfmsg_lit(&p, end, "{\"v\":1,\"mark\":\""))
		return false;
	if (rp_bfmsg_lit(&p, end, "low\""))
		m->mark = RP_BF_LOW;
	else if (rp_bfmsg_lit(&p, end, "high\""))
		m->mark = RP_BF_HIGH;
	else
		return false;
	if (!rp_bfmsg_lit(&p, end, ",\"run\":\"") || end - p < RP_BFMSG_RUN_LEN)
		return false;
	for (int i = 0; i < RP_BFMSG_RUN_LEN; i++)
	{
		char		c = p[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-'))
			return false;
		m->run[i] = c;
	}
	m->run[RP_BFMSG_RUN_LEN] = '\0';
	p += RP_BFMSG_RUN_LEN;
	if (!rp_bfmsg_lit(&p, end, "\",\"relid\":") || !rp_bfmsg_uint(&p, end, UINT32_MAX, &v) || v == 0)
		return false;
	m->relid = (uint32_t) v;
	if (!rp_bfmsg_lit(&p, end, ",\"chunk\":") || !rp_bfmsg_uint(&p, end, UINT64_MAX, &m->chunk))
		return false;
	return rp_bfmsg_lit(&p, end, "}") && p == end;
}

bool
rp_bfmsg_same_chunk(const RpBfMsg *a, const RpBfMsg *b)
{
	return strcmp(a->run, b->run) == 0 && a->relid == b->relid && a->chunk == b->chunk;
}
