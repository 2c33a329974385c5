/*
 * rp_cli_progress.c
 *    The progress display (see rp_cli_progress.h): the pure formatting and
 *    redraw sequences first, then the display that owns the lines on
 *    stderr.
 */
#include "rp_alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/rp_cli_progress.h"

/* ---- pure formatting ---------------------------------------------------- */

void
rp_progress_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double		v = (double) n;
	int			u = -1;

	if (n < 1024)
	{
		snprintf(buf, len, "%u B", (unsigned) n);
		return;
	}
	while (v >= 1024 && u < 4)
	{
		v /= 1024;
		u++;
	}
	/* 1023.96 KiB would print as "1024.0 KiB": one unit up instead */
	if (v >= 1023.95 && u < 4)
	{
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
}

void
rp_progress_count(double n, char *buf, size_t len)
{
	static const char suffix[] = "kMGTP";
	int			u = -1;

	if (!(n >= 0) || isinf(n))
	{
		snprintf(buf, len, "--");
		return;
	}
	if (n < 999.5)
	{
		snprintf(buf, len, "%.0f", n);
		return;
	}
	/* once at least (999.6 is "1.0k"), then while it would print as 1000.0 */
	do
	{
		n /= 1000;
		u++;
	} while (n >= 999.95 && u < 4);
	snprintf(buf, len, "%.1f%c", n, suffix[u]);
}

void
rp_progress_eta(double secs, char *buf, size_t len)
{
	uint64_t	s;

	if (!(secs >= 0) || isinf(secs) || secs > 99.0 * 86400)
	{
		snprintf(buf, len, "--");
		return;
	}
	s = (uint64_t) (secs + 0.5);
	if (s < 60)
		snprintf(buf, len, "%us", (unsigned) s);
	else if (s < 3600)
		snprintf(buf, len, "%um%02us", (unsigned) (s / 60), (unsigned) (s % 60));
	else if (s < 86400)
		snprintf(buf, len, "%uh%02um", (unsigned) (s / 3600), (unsigned) (s % 3600 / 60));
	else
		snprintf(buf, len, "%ud%02uh", (unsigned) (s / 86400), (unsigned) (s % 86400 / 3600));
}

int
rp_progress_percent(uint64_t done, uint64_t total)
{
	if (total == 0)
		return -1;
	if (done >= total)
		return 100;
	return (int) ((double) done * 100.0 / (double) total);
}

int
rp_progress_fit(char *line, int width)
{
	unsigned char *s = (unsigned char *) line;
	int			max = width > 1 ? width - 1 : 0;
	int			cols = 0;
	size_t		i = 0;

	while (s[i] != '\0')
	{
		size_t		n = 1;

		if (s[i] >= 0xC0)
		{
			/* a lead byte: the sequence's continuation bytes go with it */
			while (s[i + n] != '\0' && (s[i + n] & 0xC0) == 0x80)
				n++;
		}
		else if (s[i] < 0x20 || s[i] == 0x7F || (s[i] & 0xC0) == 0x80)
			s[i] = '?';			/* nothing that moves the cursor; no stray
								 * continuation */
		if (cols == max)
			break;
		cols++;
		i += n;
	}
	s[i] = '\0';
	return cols;
}

/* Up to the start of the first of `drawn` lines. */
static void
rp_progress_home(RpBuf *out, int drawn)
{
	char		seq[32];

	if (drawn <= 0)
		return;
	rp_buf_put_char(out, '\r');
	if (drawn > 1)
	{
		int			n = snprintf(seq, sizeof(seq), "\033[%dA", drawn - 1);

		rp_buf_put_bytes(out, seq, (size_t) n);
	}
}

void
rp_progress_redraw(RpBuf *out, int drawn, char *const *lines, int n, int width)
{
	char		line[RP_PROGRESS_LINE_LEN];

	rp_progress_home(out, drawn);
	for (int i = 0; i < n; i++)
	{
		snprintf(line, sizeof(line), "%s", lines[i]);
		rp_progress_fit(line, width);
		rp_buf_put_text(out, line);

		/*
		 * the rest of a longer earlier line goes; below the last, every line
		 * goes
		 */
		rp_buf_put_text(out, i < n - 1 ? "\033[K\n" : "\033[J");
	}
	if (n == 0 && drawn > 0)
		rp_buf_put_text(out, "\033[J");
}

void
rp_progress_erase(RpBuf *out, int drawn)
{
	if (drawn <= 0)
		return;
	rp_progress_home(out, drawn);
	rp_buf_put_text(out, "\033[J");
}

void
rp_progress_term_size(int fd, int *cols, int *rows)
{
	struct winsize ws;
	const char *e;

	*cols = 80;
	*rows = 24;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
	{
		*cols = ws.ws_col;
		if (ws.ws_row > 0)
			*rows = ws.ws_row;
		return;
	}
	if ((e = getenv("COLUMNS")) != NULL && atoi(e) > 0)
		*cols = atoi(e);
	if ((e = getenv("LINES")) != NULL && atoi(e) > 0)
		*rows = atoi(e);
}

double
rp_progress_eta_update(RpProgressEta *e, double lag, int64_t now_us)
{
	if (lag <= 0)
	{
		e->last_us = now_us;
		e->last = 0;
		return 0;
	}
	if (e->last_us == 0)
	{
		e->last_us = now_us;
		e->last = lag;
		return -1;
	}
	if (now_us - e->last_us >= 500000)
	{
		double		secs = (now_us - e->last_us) / 1e6;
		double		r = (e->last - lag) / secs;

		/* smoothed over a few seconds: a lag read between batches jumps */
		e->rate = e->have_rate ? 0.7 * e->rate + 0.3 * r : r;
		e->have_rate = true;
		e->last_us = now_us;
		e->last = lag;
	}
	if (!e->have_rate || e->rate <= 0)
		return -1;
	return lag / e->rate;
}

/* ---- the display ---------------------------------------------------------- */

void
rp_progress_init(RpProgress *p, int fd, RpProgressMode mode)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->fd = fd;
	p->on = mode != RP_PROGRESS_OFF && isatty(fd);
}

void
rp_progress_free(RpProgress *p)
{
	rp_progress_clear(p);
	pthread_mutex_destroy(&p->lock);
}

static void
rp_progress_write(RpProgress *p, const RpBuf *b)
{
	size_t		off = 0;

	while (off < b->len)
	{
		ssize_t		w = write(p->fd, b->data + off, b->len - off);

		if (w <= 0)
			break;				/* a terminal that went away: nothing to show
								 * it on */
		off += (size_t) w;
	}
}

/* Draw the kept lines again (the lock held). */
static void
rp_progress_draw_locked(RpProgress *p)
{
	RpBuf		b;
	char	   *ptrs[RP_PROGRESS_MAX_LINES];
	int			cols,
				rows,
				n = p->nlines;

	rp_progress_term_size(p->fd, &cols, &rows);
	/* what does not fit the screen is not drawn: moving up past the top fails */
	if (n > rows - 1)
		n = rows > 1 ? rows - 1 : 1;
	for (int i = 0; i < n; i++)
		ptrs[i] = p->lines[i];
	rp_buf_init(&b, 1024);
	rp_progress_redraw(&b, p->drawn, ptrs, n, cols);
	rp_progress_write(p, &b);
	rp_buf_free(&b);
	p->drawn = n;
}

void
rp_progress_show(RpProgress *p, char *const *lines, int n)
{
	if (p == NULL || !p->on)
		return;
	if (n > RP_PROGRESS_MAX_LINES)
		n = RP_PROGRESS_MAX_LINES;
	pthread_mutex_lock(&p->lock);
	for (int i = 0; i < n; i++)
		snprintf(p->lines[i], RP_PROGRESS_LINE_LEN, "%s", lines[i]);
	p->nlines = n;
	rp_progress_draw_locked(p);
	pthread_mutex_unlock(&p->lock);
}

void
rp_progress_print(RpProgress *p, const char *line)
{
	RpBuf		b;

	if (p == NULL || !p->on)
		return;
	pthread_mutex_lock(&p->lock);
	rp_buf_init(&b, 256);
	rp_progress_erase(&b, p->drawn);
	rp_buf_put_text(&b, line);
	rp_buf_put_char(&b, '\n');
	rp_progress_write(p, &b);
	rp_buf_free(&b);
	p->drawn = 0;
	if (p->nlines > 0)
		rp_progress_draw_locked(p);
	pthread_mutex_unlock(&p->lock);
}

void
rp_progress_clear(RpProgress *p)
{
	RpBuf		b;

	if (p == NULL || !p->on)
		return;
	pthread_mutex_lock(&p->lock);
	rp_buf_init(&b, 64);
	rp_progress_erase(&b, p->drawn);
	rp_progress_write(p, &b);
	rp_buf_free(&b);
	p->drawn = 0;
	p->nlines = 0;
	pthread_mutex_unlock(&p->lock);
}

void
rp_progress_log_begin(RpProgress *p)
{
	RpBuf		b;

	if (p == NULL || !p->on)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->drawn > 0)
	{
		rp_buf_init(&b, 64);
		rp_progress_erase(&b, p->drawn);
		rp_progress_write(p, &b);
		rp_buf_free(&b);
		p->drawn = 0;
	}

	/*
	 * stderr's own buffer may hold the start of a line: it goes out with the
	 * log line
	 */
}

void
rp_progress_log_end(RpProgress *p)
{
	if (p == NULL || !p->on)
		return;
	fflush(stderr);
	if (p->nlines > 0)
		rp_progress_draw_locked(p);
	pthread_mutex_unlock(&p->lock);
}
