/*
 * rp_aggstate.c
 *    Helpers every aggregate output uses (see rp_aggstate.h): reason
 *    names, a cell's coordinate and label, and the walk over a batch's
 *    cells.
 */
#include "rp_alloc.h"

#include "agg/rp_aggstate.h"

static const char *const rp_agg_reason_names[RP_AGG_REASON__COUNT] = {
	"seed", "collision", "unreadable", "no_old_row", "inconsistent", "retry"
};

const char *
rp_agg_reason_name(RpAggReason r)
{
	return r < RP_AGG_REASON__COUNT ? rp_agg_reason_names[r] : "?";
}

void
rp_agg_coord_put(RpAgg *agg, const RpAggVal *v)
{
	rp_buf_put_u8(&agg->coord, v->v.null ? 0 : 1);
	rp_buf_put_u8(&agg->label, v->v.null ? 0 : 1);
	if (!v->v.null)
	{
		rp_buf_put_str(&agg->coord, v->v.key, v->v.keylen);
		rp_buf_put_str(&agg->label, v->v.text, v->v.textlen);
	}
}

RpFoldCell *
rp_agg_next_edit(RpAggBinding *b, RpAggEditIter *e, RpBuf *value, RpFoldResult *r)
{
	for (;;)
	{
		int			ntouched;
		RpFoldCell *const *touched = rp_fold_touched(&b->fold, &ntouched);
		RpFoldCell *c = b->replace ? rp_fold_next_cell(&b->fold, &e->it)
		: e->k < ntouched ? touched[e->k++] : NULL;

		if (c == NULL)
			return NULL;
		rp_buf_reset(value);
		*r = rp_fold_result(&b->fold, c, value);
		/* a full rewrite starts from nothing: no removal to write */
		if (*r == RP_FOLD_REMOVED && b->replace)
			continue;
		return c;
	}
}

bool
rp_agg_label_next(const char **p, const char *end, const char **text, uint32_t *len)
{
	const unsigned char *q = (const unsigned char *) *p;

	if (*p >= end)
		return false;
	if (*q++ == 0)
	{
		*text = NULL;
		*len = 0;
		*p = (const char *) q;
		return true;
	}
	*len = ((uint32_t) q[0] << 24) | ((uint32_t) q[1] << 16) | ((uint32_t) q[2] << 8) | q[3];
	*text = (const char *) q + 4;
	*p = *text +*len;
	return true;
}
