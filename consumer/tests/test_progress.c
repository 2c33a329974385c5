/*
 * test_progress.c
 *    The progress display's pure half (cli/rp_cli_progress.c): bytes,
 *    counts, ETAs and percentages as the lines print them; a line fitted
 *    to a width (one column free, never a cut multibyte sequence, no
 *    control character left); the redraw sequence (up to the first line
 *    drawn, each line cleared to its end, everything below the last one
 *    erased), the erase sequence; the catch-up ETA from a shrinking lag;
 *    the terminal's size from $COLUMNS off a terminal; nothing at all
 *    written to a pipe, whatever the mode; the metrics page's per-table
 *    rows and estimates and the ETA.  A screen model replays the
 *    sequences: a shorter redraw leaves no character of the longer lines
 *    before it.
 *    Guarantee: the terminal shows the figures, in place, nothing left over.
 */
#include "ct_kit.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/rp_metrics.h"
#include "cli/rp_cli_progress.h"

/* ---- a small terminal: the escape sequences the display uses ------------ */

#define SCR_W 40
#define SCR_H 8

typedef struct Screen
{
	char		c[SCR_H][SCR_W + 1];
	int			x,
				y;
} Screen;

static void
scr_init(Screen *s)
{
	for (int i = 0; i < SCR_H; i++)
	{
		memset(s->c[i], ' ', SCR_W);
		s->c[i][SCR_W] = '\0';
	}
	s->x = s->y = 0;
}

static void
scr_feed(Screen *s, const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
	{
		char		ch = p[i];

		if (ch == '\r')
			s->x = 0;
		else if (ch == '\n')
		{
			s->x = 0;
			s->y++;
			ck_assert_int_lt(s->y, SCR_H);
		}
		else if (ch == '\033')
		{
			int			n = 0;
			char		fin;

			ck_assert_int_eq(p[++i], '[');
			while (p[i + 1] >= '0' && p[i + 1] <= '9')
				n = n * 10 + (p[++i] - '0');
			fin = p[++i];
			if (fin == 'A')
				s->y -= n ? n : 1;
			else if (fin == 'K')
				memset(&s->c[s->y][s->x], ' ', SCR_W - s->x);
			else if (fin == 'J')
			{
				memset(&s->c[s->y][s->x], ' ', SCR_W - s->x);
				for (int r = s->y + 1; r < SCR_H; r++)
					memset(s->c[r], ' ', SCR_W);
			}
			else
				ck_abort_msg("unexpected sequence ESC [ %c", fin);
			ck_assert_int_ge(s->y, 0);
		}
		else
		{
			/* the fit keeps the last column free: no wrap ever */
			ck_assert_int_lt(s->x, SCR_W - 1);
			s->c[s->y][s->x++] = ch;
		}
	}
}

/* row r without its trailing blanks */
static const char *
scr_row(Screen *s, int r)
{
	static char out[SCR_W + 1];
	int			n = SCR_W;

	memcpy(out, s->c[r], SCR_W + 1);
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
	return out;
}

static void
redraw(Screen *s, int *drawn, char *const *lines, int n)
{
	RpBuf		b;

	rp_buf_init(&b, 64);
	rp_progress_redraw(&b, *drawn, lines, n, SCR_W);
	scr_feed(s, b.data, b.len);
	rp_buf_free(&b);
	*drawn = n;
}

/* ---- the tests ------------------------------------------------------------ */

START_TEST(test_bytes)
{
	char		b[32];

	rp_progress_bytes(0, b, sizeof(b));
	ck_assert_str_eq(b, "0 B");
	rp_progress_bytes(1023, b, sizeof(b));
	ck_assert_str_eq(b, "1023 B");
	rp_progress_bytes(1024, b, sizeof(b));
	ck_assert_str_eq(b, "1.0 KiB");
	rp_progress_bytes(1536, b, sizeof(b));
	ck_assert_str_eq(b, "1.5 KiB");
	rp_progress_bytes((uint64_t) 12 * 1024 * 1024 + 300 * 1024, b, sizeof(b));
	ck_assert_str_eq(b, "12.3 MiB");
	/* just under a unit: one unit up, never "1024.0 KiB" */
	rp_progress_bytes(1024 * 1024 - 1, b, sizeof(b));
	ck_assert_str_eq(b, "1.0 MiB");
	rp_progress_bytes((uint64_t) 4 << 30, b, sizeof(b));
	ck_assert_str_eq(b, "4.0 GiB");
	rp_progress_bytes(UINT64_MAX, b, sizeof(b));
	ck_assert_str_eq(b, "16384.0 PiB");
}

END_TEST

START_TEST(test_count)
{
	char		b[32];

	rp_progress_count(0, b, sizeof(b));
	ck_assert_str_eq(b, "0");
	rp_progress_count(999, b, sizeof(b));
	ck_assert_str_eq(b, "999");
	rp_progress_count(999.6, b, sizeof(b));
	ck_assert_str_eq(b, "1.0k");
	rp_progress_count(12345, b, sizeof(b));
	ck_assert_str_eq(b, "12.3k");
	rp_progress_count(999960, b, sizeof(b));
	ck_assert_str_eq(b, "1.0M");
	rp_progress_count(4.5e6, b, sizeof(b));
	ck_assert_str_eq(b, "4.5M");
	rp_progress_count(1.25e9, b, sizeof(b));
	ck_assert_str_eq(b, "1.2G");
	rp_progress_count(-1, b, sizeof(b));
	ck_assert_str_eq(b, "--");
	rp_progress_count(NAN, b, sizeof(b));
	ck_assert_str_eq(b, "--");
	rp_progress_count(INFINITY, b, sizeof(b));
	ck_assert_str_eq(b, "--");
}

END_TEST

START_TEST(test_eta)
{
	char		b[32];

	rp_progress_eta(-1, b, sizeof(b));
	ck_assert_str_eq(b, "--");
	rp_progress_eta(NAN, b, sizeof(b));
	ck_assert_str_eq(b, "--");
	rp_progress_eta(INFINITY, b, sizeof(b));
	ck_assert_str_eq(b, "--");
	rp_progress_eta(0, b, sizeof(b));
	ck_assert_str_eq(b, "0s");
	rp_progress_eta(59.4, b, sizeof(b));
	ck_assert_str_eq(b, "59s");
	rp_progress_eta(59.6, b, sizeof(b));
	ck_assert_str_eq(b, "1m00s");
	rp_progress_eta(65, b, sizeof(b));
	ck_assert_str_eq(b, "1m05s");
	rp_progress_eta(2 * 3600 + 3 * 60 + 10, b, sizeof(b));
	ck_assert_str_eq(b, "2h03m");
	rp_progress_eta(3 * 86400 + 4 * 3600, b, sizeof(b));
	ck_assert_str_eq(b, "3d04h");
	rp_progress_eta(100.0 * 86400, b, sizeof(b));
	ck_assert_str_eq(b, "--");
}

END_TEST

START_TEST(test_percent)
{
	ck_assert_int_eq(rp_progress_percent(0, 0), -1);
	ck_assert_int_eq(rp_progress_percent(0, 10), 0);
	ck_assert_int_eq(rp_progress_percent(5, 10), 50);
	ck_assert_int_eq(rp_progress_percent(999, 1000), 99);
	ck_assert_int_eq(rp_progress_percent(1000, 1000), 100);
	ck_assert_int_eq(rp_progress_percent(2000, 1000), 100);
	ck_assert_int_eq(rp_progress_percent(UINT64_MAX / 2, UINT64_MAX), 50);
}

END_TEST

START_TEST(test_fit)
{
	char		l[64];

	snprintf(l, sizeof(l), "abcdef");
	ck_assert_int_eq(rp_progress_fit(l, 80), 6);
	ck_assert_str_eq(l, "abcdef");
	/* the last column stays free */
	ck_assert_int_eq(rp_progress_fit(l, 6), 5);
	ck_assert_str_eq(l, "abcde");
	snprintf(l, sizeof(l), "abc");
	ck_assert_int_eq(rp_progress_fit(l, 1), 0);
	ck_assert_str_eq(l, "");
	snprintf(l, sizeof(l), "abc");
	ck_assert_int_eq(rp_progress_fit(l, 0), 0);
	ck_assert_str_eq(l, "");
	/* a relation name in UTF-8: a code point is a column, never cut */
	snprintf(l, sizeof(l), "t\xc3\xa4\xc3\xb6x");	/* "täöx" */
	ck_assert_int_eq(rp_progress_fit(l, 3), 2);
	ck_assert_str_eq(l, "t\xc3\xa4");
	snprintf(l, sizeof(l), "\xe2\x82\xac\xe2\x82\xac"); /* two euro signs */
	ck_assert_int_eq(rp_progress_fit(l, 2), 1);
	ck_assert_str_eq(l, "\xe2\x82\xac");
	/* nothing that moves the cursor; a stray continuation byte is a '?' */
	snprintf(l, sizeof(l), "a\033[2Jb\rc\n\x80");
	ck_assert_int_eq(rp_progress_fit(l, 80), 10);
	ck_assert_str_eq(l, "a?[2Jb?c??");
}

END_TEST

START_TEST(test_redraw_sequence)
{
	RpBuf		b;
	char	   *two[] = {"total", "  t1"};
	char	   *one[] = {"x"};

	rp_buf_init(&b, 64);
	rp_progress_redraw(&b, 0, two, 2, 80);
	rp_buf_put_char(&b, '\0');
	ck_assert_str_eq(b.data, "total\033[K\n  t1\033[J");
	rp_buf_reset(&b);
	rp_progress_redraw(&b, 2, one, 1, 80);
	rp_buf_put_char(&b, '\0');
	ck_assert_str_eq(b.data, "\r\033[1Ax\033[J");
	rp_buf_reset(&b);
	rp_progress_redraw(&b, 1, one, 1, 80);
	rp_buf_put_char(&b, '\0');
	ck_assert_str_eq(b.data, "\rx\033[J");
	rp_buf_reset(&b);
	rp_progress_redraw(&b, 3, NULL, 0, 80);
	rp_buf_put_char(&b, '\0');
	ck_assert_str_eq(b.data, "\r\033[2A\033[J");
	rp_buf_reset(&b);
	rp_progress_erase(&b, 0);
	ck_assert_int_eq((int) b.len, 0);
	rp_progress_erase(&b, 4);
	rp_buf_put_char(&b, '\0');
	ck_assert_str_eq(b.data, "\r\033[3A\033[J");
	rp_buf_free(&b);
}

END_TEST

/* Lines that shrink, in number and length, leave nothing of the earlier ones. */
START_TEST(test_redraw_screen)
{
	Screen		s;
	int			drawn = 0;
	char	   *a[] = {"snapshot: 0/2 tables, 10 rows", "  public.long_table_name: 10 rows", "  public.b: 3 rows"};
	char	   *b[] = {"snapshot: 1/2 tables", "  p.b: 9"};
	char	   *c[] = {"done"};
	char	   *wide[] = {"0123456789012345678901234567890123456789012345"};
	RpBuf		e;

	scr_init(&s);
	scr_feed(&s, "log line\n", 9);
	redraw(&s, &drawn, a, 3);
	ck_assert_str_eq(scr_row(&s, 1), a[0]);
	ck_assert_str_eq(scr_row(&s, 2), a[1]);
	ck_assert_str_eq(scr_row(&s, 3), a[2]);
	redraw(&s, &drawn, b, 2);
	ck_assert_str_eq(scr_row(&s, 0), "log line");
	ck_assert_str_eq(scr_row(&s, 1), b[0]);
	ck_assert_str_eq(scr_row(&s, 2), b[1]);
	ck_assert_str_eq(scr_row(&s, 3), "");
	redraw(&s, &drawn, c, 1);
	ck_assert_str_eq(scr_row(&s, 1), "done");
	ck_assert_str_eq(scr_row(&s, 2), "");
	/* a line wider than the screen is cut one column short of it */
	redraw(&s, &drawn, wide, 1);
	ck_assert_int_eq((int) strlen(scr_row(&s, 1)), SCR_W - 1);
	redraw(&s, &drawn, a, 3);
	/* a log line: erase, print, draw again below it */
	rp_buf_init(&e, 64);
	rp_progress_erase(&e, drawn);
	scr_feed(&s, e.data, e.len);
	rp_buf_free(&e);
	drawn = 0;
	scr_feed(&s, "second log\n", 11);
	redraw(&s, &drawn, b, 2);
	ck_assert_str_eq(scr_row(&s, 0), "log line");
	ck_assert_str_eq(scr_row(&s, 1), "second log");
	ck_assert_str_eq(scr_row(&s, 2), b[0]);
	ck_assert_str_eq(scr_row(&s, 3), b[1]);
	ck_assert_str_eq(scr_row(&s, 4), "");
}

END_TEST

START_TEST(test_eta_update)
{
	RpProgressEta e;
	int64_t		t = 1000000;

	memset(&e, 0, sizeof(e));
	/* the first sample has no rate */
	ck_assert(rp_progress_eta_update(&e, 1000, t) < 0);
	/* a shrinking lag: 100 a second, 900 left */
	ck_assert(fabs(rp_progress_eta_update(&e, 900, t + 1000000) - 9.0) < 1e-9);

	/*
	 * samples closer than half a second keep the rate; the ETA follows the
	 * lag
	 */
	ck_assert(fabs(rp_progress_eta_update(&e, 800, t + 1100000) - 8.0) < 1e-9);
	/* a growing lag: no ETA */
	memset(&e, 0, sizeof(e));
	rp_progress_eta_update(&e, 100, t);
	ck_assert(rp_progress_eta_update(&e, 200, t + 1000000) < 0);
	/* no lag: 0 */
	ck_assert(rp_progress_eta_update(&e, 0, t + 2000000) == 0);
}

END_TEST

/* Not a terminal: $COLUMNS and $LINES, else 80x24. */
START_TEST(test_term_size)
{
	int			fds[2];
	int			cols,
				rows;

	ck_assert_int_eq(pipe(fds), 0);
	setenv("COLUMNS", "57", 1);
	setenv("LINES", "13", 1);
	rp_progress_term_size(fds[1], &cols, &rows);
	ck_assert_int_eq(cols, 57);
	ck_assert_int_eq(rows, 13);
	setenv("COLUMNS", "junk", 1);
	unsetenv("LINES");
	rp_progress_term_size(fds[1], &cols, &rows);
	ck_assert_int_eq(cols, 80);
	ck_assert_int_eq(rows, 24);
	unsetenv("COLUMNS");
	close(fds[0]);
	close(fds[1]);
}

END_TEST

/* On a pipe the display writes nothing at all, whatever the mode. */
START_TEST(test_off_when_piped)
{
	int			fds[2];
	char	   *lines[] = {"snapshot: 0/1 tables", "  public.t: 5 rows"};
	char		c;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	for (int mode = RP_PROGRESS_AUTO; mode <= RP_PROGRESS_OFF; mode++)
	{
		RpProgress	p;

		rp_progress_init(&p, fds[1], (RpProgressMode) mode);
		ck_assert(!p.on);
		rp_progress_show(&p, lines, 2);
		rp_progress_print(&p, "snapshot: public.t copied");
		rp_progress_log_begin(&p);
		rp_progress_log_end(&p);
		rp_progress_clear(&p);
		rp_progress_free(&p);
	}
	ck_assert_int_eq((int) read(fds[0], &c, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(fds[0]);
	close(fds[1]);
}

END_TEST

/* The page's lines: rows and estimates by table (none without one), the catch-up's ETA. */
START_TEST(test_metrics_page)
{
	RpCliProgress cp;
	RpRelation	a = {.relid = 1,.schema = "public",.name = "big"};
	RpRelation	b = {.relid = 2,.schema = "s",.name = "odd\"name"};
	RpSnapTableProgress t[2] = {
		{.rel = &a,.done = 1500,.estimate = 40000,.state = 1},
		{.rel = &b,.done = 7,.estimate = -1,.state = 2},
	};
	RpRunProgress st = {.lag_bytes = 0,.lag_msgs = -1,.known = false};
	RpBuf		out;

	rp_cli_progress_init(&cp, RP_PROGRESS_OFF);
	rp_cli_progress_snapshot(&cp, t, 2, false);
	rp_cli_progress_stream(&cp, &st);
	rp_buf_init(&out, 256);
	rp_cli_metrics_progress(&out, &cp);
	rp_buf_put_char(&out, '\0');
	ck_assert_str_eq(out.data,
					 "# HELP replicant_snapshot_rows_total Rows the initial snapshot copied, by table (this run).\n"
					 "# TYPE replicant_snapshot_rows_total counter\n"
					 "replicant_snapshot_rows_total{store=\"public.big\"} 1500\n"
					 "replicant_snapshot_rows_total{store=\"s.odd\\\"name\"} 7\n"
					 "# HELP replicant_snapshot_rows_estimate The table's row estimate (pg_class.reltuples) when the snapshot started.\n"
					 "# TYPE replicant_snapshot_rows_estimate gauge\n"
					 "replicant_snapshot_rows_estimate{store=\"public.big\"} 40000\n"
					 "# HELP replicant_catchup_eta_seconds Seconds until the lag is gone at the rate it shrinks (NaN: not shrinking).\n"
					 "# TYPE replicant_catchup_eta_seconds gauge\n"
					 "replicant_catchup_eta_seconds NaN\n");
	/* caught up: 0 */
	st.known = true;
	rp_cli_progress_stream(&cp, &st);
	rp_buf_reset(&out);
	rp_cli_metrics_progress(&out, &cp);
	rp_buf_put_char(&out, '\0');
	ck_assert_ptr_nonnull(strstr(out.data, "\nreplicant_catchup_eta_seconds 0.000\n"));
	rp_buf_free(&out);
	rp_cli_progress_free(&cp);
}

END_TEST

Suite	   *
ct_suite_progress(void)
{
	Suite	   *s = suite_create("progress");
	TCase	   *tc = tcase_create("progress");

	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_count);
	tcase_add_test(tc, test_eta);
	tcase_add_test(tc, test_percent);
	tcase_add_test(tc, test_fit);
	tcase_add_test(tc, test_redraw_sequence);
	tcase_add_test(tc, test_redraw_screen);
	tcase_add_test(tc, test_eta_update);
	tcase_add_test(tc, test_term_size);
	tcase_add_test(tc, test_off_when_piped);
	tcase_add_test(tc, test_metrics_page);
	suite_add_tcase(s, tc);
	return s;
}
