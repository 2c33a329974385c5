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
#include "base/rp_metrics.h"
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
 * RpSink.metrics of the mirror: divergences by table, then the bound
 * flushes (the page's order as the program wrote it before the sink
 * had this callback).
 */
void
rp_mirror_metrics(const RpSink *sink, RpBuf *out)
{
	char		table[256];
	uint64_t	count;

	for (int i = 0; rp_mirror_divergence_get(sink, i, table, sizeof(table), &count); i++)
	{
		RpBuf		labels;

		rp_buf_init(&labels, 128);
		rp_buf_put_text(&labels, "{table=\"");
		rp_metrics_label_value(&labels, table);
		rp_buf_put_text(&labels, "\"}");
		rp_buf_put_char(&labels, '\0');
		rp_metrics_sample(out, "replicant_divergences_total", "counter",
						  i == 0 ? "Mirror updates and deletes that matched no destination row, by table." : NULL,
						  labels.data, count);
		rp_buf_free(&labels);
	}
	if (rp_mirror_bound_flushes_get(sink, &count))
		rp_metrics_sample(out, "replicant_mirror_bound_flushes_total", "counter",
						  "Mirror effect maps applied mid-batch, inside the open destination transaction, to stay in --max-memory.",
						  NULL, count);
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
