/*
 * rp_xidsnap.c
 *    Seed snapshots and the 32-bit xids of the stream (see rp_xidsnap.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_xidsnap.h"

static int
rp_xid_cmp(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static bool
rp_xid_read(const char **p, uint64_t *out)
{
	char	   *end;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	*out = strtoull(*p, &end, 10);
	if (errno != 0)
		return false;
	*p = end;
	return true;
}

bool
rp_xidsnap_parse(RpXidSnap *snap, const char *text)
{
	const char *p = text;
	int			cap = 0;

	memset(snap, 0, sizeof(*snap));
	if (!rp_xid_read(&p, &snap->xmin) || *p++ != ':' ||
		!rp_xid_read(&p, &snap->xmax) || *p++ != ':' || snap->xmin > snap->xmax)
		goto bad;
	while (*p)
	{
		uint64_t	x;

		if (!rp_xid_read(&p, &x) || x < snap->xmin || x >= snap->xmax)
			goto bad;
		if (snap->nxip == cap)
		{
			cap = cap ? cap * 2 : 8;
			snap->xip = snap->xip ? rp_realloc(snap->xip, sizeof(uint64_t) * (size_t) cap)
				: rp_malloc(sizeof(uint64_t) * (size_t) cap);
		}
		snap->xip[snap->nxip++] = x;
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	if (snap->nxip > 1)
		qsort(snap->xip, (size_t) snap->nxip, sizeof(uint64_t), rp_xid_cmp);
	return true;

bad:
	rp_xidsnap_free(snap);
	return false;
}

void
rp_xidsnap_free(RpXidSnap *snap)
{
	if (snap->xip)
		rp_free(snap->xip);
	memset(snap, 0, sizeof(*snap));
}

uint64_t
rp_xidsnap_extend(const RpXidSnap *snap, uint32_t xid)
{
	int32_t		diff = (int32_t) (xid - (uint32_t) snap->xmax);
	int64_t		full = (int64_t) snap->xmax + diff;

	/* nothing precedes the first epoch */
	return full < 0 ? (uint64_t) xid : (uint64_t) full;
}

bool
rp_xidsnap_saw(const RpXidSnap *snap, uint32_t xid)
{
	uint64_t	x = rp_xidsnap_extend(snap, xid);

	if (x < snap->xmin)
		return true;
	if (x >= snap->xmax)
		return false;
	return snap->nxip == 0 || bsearch(&x, snap->xip, (size_t) snap->nxip, sizeof(uint64_t), rp_xid_cmp) == NULL;
}
