/*
 * rp_cli_progress.h
 *    The progress display on a terminal: the initial snapshot's per-table
 *    lines (rows copied of the estimate, percent, rate, ETA) and the
 *    stream's catch-up line (lag in bytes and seconds, or in messages for
 *    a stream reader, with an ETA), redrawn in place on stderr.
 *
 * Two halves.  The pure one formats figures (bytes, counts, rates, ETAs),
 * fits a line to the terminal's width and builds the escape sequence that
 * replaces the lines drawn last with new ones; it has no state and is
 * unit-tested (tests/test_progress.c).  The display (RpProgress) owns the
 * lines on screen: a log line (rp_cli_log.c) erases them first and they
 * are drawn again after it, so the two never mix.
 *
 * Value-free: the lines hold counts and relation names, never row data.
 */
#ifndef RP_CLI_PROGRESS_H
#define RP_CLI_PROGRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_buf.h"
#include "run/rp_run.h"
#include "snapshot/rp_snapshot.h"

/* ---- pure formatting ---------------------------------------------------- */

/* "0 B", "512 B", "1.5 KiB", "12.3 MiB", "4.0 GiB", "2.0 TiB" */
extern void rp_progress_bytes(uint64_t n, char *buf, size_t len);

/* "999", "12.3k", "4.5M", "1.2G" (rates, row counts) */
extern void rp_progress_count(double n, char *buf, size_t len);

/* "--" (unknown: negative, NaN, infinite), "0s", "59s", "1m05s", "2h03m", "3d04h" */
extern void rp_progress_eta(double secs, char *buf, size_t len);

/* done of total as a whole percent, 0..100 (done past total: 100); -1 without a total */
extern int	rp_progress_percent(uint64_t done, uint64_t total);

/*
 * Cut line (NUL-terminated, UTF-8) in place to at most width - 1 columns,
 * one column per code point, never inside a multibyte sequence; control
 * characters become '?'.  The last column stays free, so the cursor never
 * waits in the wrap position and the redraw's line count stays true.
 * Returns the columns kept.
 */
extern int	rp_progress_fit(char *line, int width);

/*
 * Append to out the sequence that replaces the `drawn` lines drawn last
 * (the cursor at the end of the last one; 0: nothing drawn, the cursor at
 * the start of a line) with lines[0..n-1], each fitted to width, every
 * line cleared to its end, and anything below the new last line erased.
 * The cursor ends at the end of the new last line.
 */
extern void rp_progress_redraw(RpBuf *out, int drawn, char *const *lines, int n, int width);

/* Append the sequence that erases the `drawn` lines and leaves the cursor at the first one's start. */
extern void rp_progress_erase(RpBuf *out, int drawn);

/* The terminal's size on fd (TIOCGWINSZ), else $COLUMNS / $LINES, else 80x24. */
extern void rp_progress_term_size(int fd, int *cols, int *rows);

/*
 * The catch-up ETA: the lag's rate of decrease, smoothed.  update() takes
 * the lag (bytes or messages) at now_us and returns the seconds until it
 * reaches 0 at the current rate, or -1 while it does not shrink.
 */
typedef struct RpProgressEta
{
	int64_t		last_us;		/* 0: no sample yet */
	double		last;
	double		rate;			/* units per second the lag shrinks */
	bool		have_rate;
} RpProgressEta;

extern double rp_progress_eta_update(RpProgressEta *e, double lag, int64_t now_us);

/* ---- the display ---------------------------------------------------------- */

#define RP_PROGRESS_MAX_LINES 32
#define RP_PROGRESS_LINE_LEN 512

typedef enum RpProgressMode
{
	RP_PROGRESS_AUTO = 0,		/* snapshot and catch-up, on a terminal */
	RP_PROGRESS_ON,				/* --progress: the stream's line for the whole
								 * run */
	RP_PROGRESS_OFF				/* --no-progress */
} RpProgressMode;

typedef struct RpProgress
{
	pthread_mutex_t lock;		/* the lines, and stderr while they are drawn */
	int			fd;				/* stderr */
	bool		on;				/* a terminal, and not --no-progress */
	int			drawn;			/* lines on screen now */
	int			nlines;			/* the lines to draw again after a log line */
	char		lines[RP_PROGRESS_MAX_LINES][RP_PROGRESS_LINE_LEN];
} RpProgress;

/* On when fd is a terminal and mode is not OFF. */
extern void rp_progress_init(RpProgress *p, int fd, RpProgressMode mode);
extern void rp_progress_free(RpProgress *p);

/* Replace the lines on screen with lines[0..n-1] (n at most the terminal's height - 1). */
extern void rp_progress_show(RpProgress *p, char *const *lines, int n);

/* Erase the lines and print line (a permanent one: it scrolls away with the log), then draw again. */
extern void rp_progress_print(RpProgress *p, const char *line);

/* Erase the lines for good. */
extern void rp_progress_clear(RpProgress *p);

/* Around a log line on stderr (rp_cli_log.c): erase, then draw again; p may be NULL. */
extern void rp_progress_log_begin(RpProgress *p);
extern void rp_progress_log_end(RpProgress *p);

/* ---- the program's lines (rp_cli_progline.c) ------------------------------ */

/* One snapshot table's figures, for the lines and the metrics page. */
typedef struct RpProgressTable
{
	char		name[160];		/* schema.table */
	uint64_t	done;
	int64_t		estimate;		/* -1 unknown */
	int			state;			/* 0 queued, 1 copying, 2 done */
	int64_t		start_us;		/* first seen copying */
	uint64_t	start_done;
} RpProgressTable;

/*
 * The run's progress: the display, the snapshot's tables as last reported
 * (the metrics thread reads them under lock) and the catch-up's figures.
 */
typedef struct RpCliProgress
{
	RpProgress	disp;
	RpProgressMode mode;
	pthread_mutex_t lock;		/* tables, ntables, eta_ms */
	RpProgressTable *tables;
	int			ntables;
	int64_t		snap_started_us;
	RpProgressEta eta;
	int64_t		eta_ms;			/* the catch-up's ETA for the page; -1 unknown */
	bool		caught_up;		/* AUTO: the stream's line is gone once caught
								 * up */
	int64_t		last_draw_us;
	int64_t		last_rate_us;
	uint64_t	last_changes;
	double		changes_rate;
} RpCliProgress;

extern void rp_cli_progress_init(RpCliProgress *cp, RpProgressMode mode);
extern void rp_cli_progress_free(RpCliProgress *cp);

/* The snapshot's callback (RpSnapOptions.progress_fn; arg: the RpCliProgress). */
extern void rp_cli_progress_snapshot(void *arg, const RpSnapTableProgress *tables, int n, bool final);

/*
 * The run's figures now (the run engine's progress hook): lag in bytes and
 * seconds (a slot), or in messages (lag_msgs >= 0: a stream reader); the
 * line is drawn at most twice a second; the ETA is kept for the page either
 * way.
 */
extern void rp_cli_progress_stream(RpCliProgress *cp, const RpRunProgress *st);

/* The metrics page's source (arg: the RpCliProgress). */
extern void rp_cli_metrics_progress(RpBuf *out, const void *arg);

#endif							/* RP_CLI_PROGRESS_H */
