/*
 * rp_tlhist.c
 *    Timeline histories (see rp_tlhist.h).
 */
#include "rp_alloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/rp_tlhist.h"
#include "rp_lsn.h"

/* One line "TLI <ws> X/Y ..." into *e; false when it does not read. */
static bool
parse_line(const char *p, const char *end, RpTlHistEntry * e)
{
	char		lsn[32];
	size_t		n = 0;
	unsigned long tli = 0;
	bool		digits = false;

	while (p < end && *p >= '0' && *p <= '9')
	{
		tli = tli * 10 + (unsigned long) (*p++ - '0');
		if (tli > UINT32_MAX)
			return false;
		digits = true;
	}
	if (!digits || tli == 0 || p == end || (*p != '\t' && *p != ' '))
		return false;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	while (p < end && *p != '\t' && *p != ' ' && n + 1 < sizeof(lsn))
		lsn[n++] = *p++;
	lsn[n] = '\0';
	e->tli = (uint32_t) tli;
	return rp_lsn_parse(lsn, &e->switchpoint);
}

int
rp_tlhist_parse(const char *text, size_t len, RpTlHistEntry * *entries, int *n)
{
	const char *p = text;
	const char *end = text +len;
	RpTlHistEntry *e = NULL;
	int			cap = 0;

	*entries = NULL;
	*n = 0;
	while (p < end)
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		const char *eol = nl ? nl : end;
		const char *q = p;

		while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < eol && *q != '#')
		{
			if (*n == cap)
			{
				cap = cap ? cap * 2 : 8;
				e = e ? rp_realloc(e, sizeof(*e) * (size_t) cap) : rp_malloc(sizeof(*e) * (size_t) cap);
			}
			if (!parse_line(q, eol, &e[*n]) || (*n > 0 && e[*n].tli <= e[*n - 1].tli))
			{
				rp_free(e);
				*n = 0;
				return -1;
			}
			(*n)++;
		}
		p = nl ? nl + 1 : end;
	}
	*entries = e;
	return 0;
}

RpTlVerdict
rp_tlhist_judge(const RpTlHistEntry * e, int n, uint32_t ck_tli, uint64_t held_end,
				uint32_t server_tli, uint64_t *switchpoint)
{
	*switchpoint = 0;
	if (ck_tli == server_tli)
		return RP_TL_SAME;
	if (ck_tli > server_tli)
		return RP_TL_NEWER;
	for (int i = 0; i < n; i++)
	{
		if (e[i].tli != ck_tli)
			continue;
		*switchpoint = e[i].switchpoint;
		return held_end <= e[i].switchpoint ? RP_TL_FOLLOWS : RP_TL_PAST_SWITCH;
	}
	return RP_TL_NOT_ANCESTOR;
}
