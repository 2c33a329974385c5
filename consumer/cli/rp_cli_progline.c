/*
 * rp_cli_progline.c
 *    What the progress display says (see rp_cli_progress.h): the initial
 *    snapshot's lines, a total and one per table being copied; the
 *    stream's catch-up line; and the same figures on the metrics page.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/rp_clock.h"
#include "base/rp_metrics.h"
#include "cli/rp_cli_progress.h"
#include "rp_lsn.h"

void
rp_cli_progress_init(RpCliProgress *cp, RpProgressMode mode)
{
	memset(cp, 0, sizeof(*cp));
	rp_progress_init(&cp->disp, STDERR_FILENO, mode);
	pthread_mutex_init(&cp->lock, NULL);
	cp->mode = mode;
	cp->eta_ms = -1;
}

void
rp_cli_progress_free(RpCliProgress *cp)
{
	rp_progress_free(&cp->disp);
	pthread_mutex_destroy(&cp->lock);
	if (cp->tables)
		rp_free(cp->tables);
	cp->tables = NULL;
	cp->ntables = 0;
}

/* "1.2M of ~5.0M rows (24%), 50.1k rows/s, ETA 1m05s" */
static void
rp_progress_rows(char *buf, size_t len, uint64_t done, int64_t estimate, double rate, bool eta)
{
	char		d[16],
				e[16],
				r[16],
				t[16];
	int			pct = estimate > 0 && (uint64_t) estimate > done ? rp_progress_percent(done, (uint64_t) estimate) : -1;

	rp_progress_count((double) done, d, sizeof(d));
	rp_progress_count(rate, r, sizeof(r));
	if (pct < 0)
	{
		/* no estimate (never analyzed), or one the copy has passed */
		snprintf(buf, len, "%s rows, %s rows/s", d, r);
		return;
	}
	rp_progress_count((double) estimate, e, sizeof(e));
	rp_progress_eta(rate > 0 ? (estimate - (double) done) / rate : -1, t, sizeof(t));
	snprintf(buf, len, "%s of ~%s rows (%d%%), %s rows/s%s%s", d, e, pct, r,
			 eta ? ", ETA " : "", eta ? t : "");
}

/* Keep the reported figures (for the page) and note when a table started and ended. */
static void
rp_progress_take(RpCliProgress *cp, const RpSnapTableProgress *t, int n, int64_t now)
{
	pthread_mutex_lock(&cp->lock);
	if (cp->ntables != n)
	{
		if (cp->tables)
			rp_free(cp->tables);
		cp->tables = rp_malloc0(sizeof(RpProgressTable) * (size_t) (n + 1));
		cp->ntables = n;
		for (int i = 0; i < n; i++)
			snprintf(cp->tables[i].name, sizeof(cp->tables[i].name), "%s.%s",
					 t[i].rel->schema, t[i].rel->name);
	}
	for (int i = 0; i < n; i++)
	{
		RpProgressTable *x = &cp->tables[i];
		char		line[RP_PROGRESS_LINE_LEN];
		char		when[16];

		if (x->state == 0 && t[i].state >= 1)
		{
			/*
			 * done counts this run's rows from 0: the rate is theirs since
			 * first seen
			 */
			x->start_us = now;
			x->start_done = 0;
		}
		if (x->state < 2 && t[i].state == 2)
		{
			/* a permanent line: it stays on the screen as the copy goes on */
			rp_progress_eta((now - (x->start_us ? x->start_us : now)) / 1e6, when, sizeof(when));
			snprintf(line, sizeof(line), "snapshot: %s copied, %" PRIu64 " rows in %s", x->name, t[i].done, when);
			x->done = t[i].done;
			x->state = 2;
			pthread_mutex_unlock(&cp->lock);
			rp_progress_print(&cp->disp, line);
			pthread_mutex_lock(&cp->lock);
		}
		x->done = t[i].done;
		x->estimate = t[i].estimate;
		x->state = t[i].state;
	}
	pthread_mutex_unlock(&cp->lock);
}

void
rp_cli_progress_snapshot(void *arg, const RpSnapTableProgress *t, int n, bool final)
{
	RpCliProgress *cp = arg;
	int64_t		now = rp_clock_wall_us();
	char text[	RP_PROGRESS_MAX_LINES][RP_PROGRESS_LINE_LEN];
	char	   *lines[RP_PROGRESS_MAX_LINES];
	char		rows[256];
	uint64_t	done = 0,
				total = 0;
	int			tables_done = 0,
				nl = 1;
	double		secs;

	if (cp->snap_started_us == 0)
		cp->snap_started_us = now;
	secs = (now - cp->snap_started_us) / 1e6;
	rp_progress_take(cp, t, n, now);
	for (int i = 0; i < n; i++)
	{
		uint64_t	est = t[i].estimate > 0 ? (uint64_t) t[i].estimate : 0;

		done += t[i].done;
		total += t[i].state == 2 ? t[i].done : (est > t[i].done ? est : t[i].done);
		if (t[i].state == 2)
			tables_done++;
	}
	if (final)
	{
		char		when[16];

		rp_progress_eta(secs, when, sizeof(when));
		snprintf(text[0], sizeof(text[0]), "snapshot: %d tables, %" PRIu64 " rows in %s", n, done, when);
		rp_progress_clear(&cp->disp);
		rp_progress_print(&cp->disp, text[0]);
		return;
	}
	rp_progress_rows(rows, sizeof(rows), done, (int64_t) total, secs > 0 ? done / secs : 0, true);
	snprintf(text[0], sizeof(text[0]), "snapshot: %d/%d tables, %s", tables_done, n, rows);
	pthread_mutex_lock(&cp->lock);
	for (int i = 0; i < n && i < cp->ntables && nl < RP_PROGRESS_MAX_LINES; i++)
	{
		const RpProgressTable *x = &cp->tables[i];
		double		ts = (now - x->start_us) / 1e6;

		if (x->state != 1)
			continue;
		rp_progress_rows(rows, sizeof(rows), x->done, x->estimate,
						 ts > 0 ? (x->done - x->start_done) / ts : 0, true);
		snprintf(text[nl], sizeof(text[nl]), "  %s: %s", x->name, rows);
		nl++;
	}
	pthread_mutex_unlock(&cp->lock);
	for (int i = 0; i < nl; i++)
		lines[i] = text[i];

	rp_progress_show(&cp->disp, lines, nl);
}

void
rp_cli_progress_stream(RpCliProgress *cp, const RpRunProgress *st)
{
	int64_t		now = rp_clock_wall_us();
	double		lag = st->lag_msgs >= 0 ? (double) st->lag_msgs : (double) st->lag_bytes;
	double		eta = -1;
	char		line[RP_PROGRESS_LINE_LEN];
	char		l[40],
				e[16],
				r[16],
				ck[24];
	char	   *lines[1] = {line};

	if (st->known)
		eta = rp_progress_eta_update(&cp->eta, lag, now);
	pthread_mutex_lock(&cp->lock);
	cp->eta_ms = eta >= 0 ? (int64_t) (eta * 1000) : -1;
	pthread_mutex_unlock(&cp->lock);

	if (!cp->disp.on || now - cp->last_draw_us < 500000)
		return;
	if (cp->last_rate_us)
	{
		double		secs = (now - cp->last_rate_us) / 1e6;

		cp->changes_rate = (st->changes - cp->last_changes) / secs;
	}
	cp->last_rate_us = now;
	cp->last_changes = st->changes;
	cp->last_draw_us = now;
	if (cp->caught_up)
		return;
	rp_lsn_format(st->checkpoint_lsn, ck);
	rp_progress_eta(eta, e, sizeof(e));
	rp_progress_count(cp->changes_rate, r, sizeof(r));
	if (st->lag_msgs >= 0)
		snprintf(l, sizeof(l), "%" PRId64 " messages", st->lag_msgs);
	else
		rp_progress_bytes(st->lag_bytes, l, sizeof(l));

	/*
	 * Caught up by what was received, not by bytes: WAL the server decoded to
	 * nothing leaves bytes behind until the next idle confirmation, and the
	 * line used to flip back to "catch-up ... ETA --" while idle.
	 */
	if (st->lag_msgs >= 0)
		snprintf(line, sizeof(line), "%s: lag %s, ETA %s; %" PRIu64 " txns, %s changes/s, checkpoint %s",
				 st->caught_up ? "streaming, caught up" : "catch-up", l, st->caught_up ? "0s" : e, st->txns, r, ck);
	else
		snprintf(line, sizeof(line), "%s: lag %s, %.1f s, ETA %s; %" PRIu64 " txns, %s changes/s, checkpoint %s",
				 st->caught_up ? "streaming, caught up" : "catch-up", l, st->lag_seconds,
				 st->caught_up ? "0s" : e, st->txns, r, ck);
	if (cp->mode == RP_PROGRESS_AUTO && st->known && st->caught_up)
	{
		/* caught up: the line goes, one permanent line says so */
		snprintf(line, sizeof(line), "catch-up: caught up at checkpoint %s", ck);
		rp_progress_clear(&cp->disp);
		rp_progress_print(&cp->disp, line);
		cp->caught_up = true;
		return;
	}
	rp_progress_show(&cp->disp, lines, 1);
}

void
rp_cli_metrics_progress(RpBuf *out, const void *arg)
{
	RpCliProgress *cp = (RpCliProgress *) arg;
	char		line[320];
	int			n;

	pthread_mutex_lock(&cp->lock);
	for (int k = 0; k < 2; k++)
	{
		/*
		 * the snapshot envelope's names: by store, the "schema.table" of the
		 * dumps
		 */
		const char *name = k == 0 ? "replicant_snapshot_rows_total" : "replicant_snapshot_rows_estimate";
		bool		first = true;

		for (int i = 0; i < cp->ntables; i++)
		{
			RpBuf		labels;
			const RpProgressTable *x = &cp->tables[i];

			if (k == 1 && x->estimate < 0)
				continue;		/* never analyzed: no estimate */
			rp_buf_init(&labels, 128);
			rp_buf_put_text(&labels, "{store=\"");
			/* a relation name, never a value */
			rp_metrics_label_value(&labels, x->name);
			rp_buf_put_text(&labels, "\"}");
			rp_buf_put_char(&labels, '\0');
			rp_metrics_sample(out, name, k == 0 ? "counter" : "gauge",
							  !first ? NULL : (k == 0 ? "Rows the initial snapshot copied, by table (this run)."
											   : "The table's row estimate (pg_class.reltuples) when the snapshot started."),
							  labels.data, k == 0 ? x->done : (uint64_t) x->estimate);
			rp_buf_free(&labels);
			first = false;
		}
	}
	if (cp->eta_ms >= 0)
		n = snprintf(line, sizeof(line),
					 "# HELP replicant_catchup_eta_seconds Seconds until the lag is gone at the rate it shrinks (NaN: not shrinking).\n"
					 "# TYPE replicant_catchup_eta_seconds gauge\nreplicant_catchup_eta_seconds %.3f\n",
					 cp->eta_ms / 1000.0);
	else
		n = snprintf(line, sizeof(line),
					 "# HELP replicant_catchup_eta_seconds Seconds until the lag is gone at the rate it shrinks (NaN: not shrinking).\n"
					 "# TYPE replicant_catchup_eta_seconds gauge\nreplicant_catchup_eta_seconds NaN\n");
	pthread_mutex_unlock(&cp->lock);
	rp_buf_put_bytes(out, line, (size_t) n);
}
