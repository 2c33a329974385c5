/*
 * rp_mirror_divergence.c
 *    Divergences: an update or delete that matched no destination row.
 *    Fail-closed by default; with --on-divergence=skip they are counted per
 *    destination table, per sink, for the metrics page.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <pthread.h>

#include "sinks/mirror/rp_mirror_int.h"
#include "base/rp_status.h"

/* Count one divergence of t (a table beyond the first RP_MIRROR_DIVERGENCE_TABLES is not shown). */
static void
rp_mirror_divergence_count(RpMirror *pg, const RpMirrorTable *t)
{
	RpMirrorDivergences *div = &pg->div;
	char		name[512];
	int			i;

	snprintf(name, sizeof(name), "%s.%s", t->dest_schema, t->dest_name);
	pthread_mutex_lock(&div->lock);
	for (i = 0; i < div->n; i++)
		if (strcmp(div->table[i], name) == 0)
			break;
	if (i == div->n && i < RP_MIRROR_DIVERGENCE_TABLES)
		div->table[div->n++] = rp_strndup(name, strlen(name));
	if (i < div->n)
		div->count[i]++;
	pthread_mutex_unlock(&div->lock);
}

static int
rp_mirror_divergence_at(RpMirror *pg, int i, char *table, size_t len, uint64_t *count)
{
	RpMirrorDivergences *div = &pg->div;
	int			rc = 0;

	pthread_mutex_lock(&div->lock);
	if (i >= 0 && i < div->n)
	{
		snprintf(table, len, "%s", div->table[i]);
		*count = div->count[i];
		rc = 1;
	}
	pthread_mutex_unlock(&div->lock);
	return rc;
}

int
rp_mirror_divergence_get(const void *sink, int i, char *table, size_t len, uint64_t *count)
{
	const RpSink *s = sink;

	if (s == NULL || s->name == NULL || strcmp(s->name, RP_MIRROR_SINK_NAME) != 0)
		return 0;
	return rp_mirror_divergence_at(s->priv, i, table, len, count);
}

/*
 * The destination no longer holds what the source changed: it has
 * diverged, and applying on would hide it.  Fail-closed by default.
 */
int
rp_mirror_divergence(RpMirror *pg, const RpMirrorTable *t, const char *what)
{
	rp_mirror_divergence_count(pg, t);
	if (pg->opts.divergence_skip)
		return 0;
	return rp_fail(RP_HALT_SINK, "destination table %s has diverged: %s holding the source's old row (halting; --on-divergence=skip counts it and goes on)",
				   t->qname, what);
}
