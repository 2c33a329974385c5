/*
 * rp_cli_log.c
 *    The program's messages on stderr, with the signatures of PostgreSQL's
 *    frontend logging (common/logging.h): "replicant: error: ..." for
 *    pg_log_error, "replicant: ..." for pg_log_info when -v was given.
 *    The verbosity is the program's one setting, kept here, so no message
 *    needs the options passed along to decide whether it shows.
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_progress.h"

static const char *const progname = RP_CLI_PROGNAME;

/* -v's count; written once by option parsing, before any thread starts */
static int	rp_cli_verbose = 0;

/* the run's progress display, set while it runs (a log line erases it first) */
static RpProgress *rp_cli_log_progress = NULL;

void
rp_cli_log_set_progress(RpProgress *p)
{
	rp_cli_log_progress = p;
}

/*
 * Where the option being parsed came from (--config: its file and line),
 * and whether its value must stay out of the message; set only while the
 * options are parsed.
 */
static struct
{
	const char *where;
	bool		hide;
}			rp_cli_log_context = {NULL, false};

void
rp_cli_log_set_context(const char *where, bool hide_value)
{
	rp_cli_log_context.where = where;
	rp_cli_log_context.hide = where != NULL && hide_value;
}

void
rp_cli_log_set_verbose(int verbose)
{
	rp_cli_verbose = verbose;
}

static void
rp_cli_log_v(const char *level, const char *fmt, va_list ap)
{
	rp_progress_log_begin(rp_cli_log_progress);

	/*
	 * one line whole: event lines come from the delivery thread and the copy
	 * workers too
	 */
	flockfile(stderr);
	fprintf(stderr, "%s: %s", progname, level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	rp_progress_log_end(rp_cli_log_progress);
}

void
rp_cli_log_line(const char *line)
{
	rp_progress_log_begin(rp_cli_log_progress);
	fprintf(stderr, "%s\n", line);
	rp_progress_log_end(rp_cli_log_progress);
}

void
pg_log_error(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	rp_cli_log_v("error: ", fmt, ap);
	va_end(ap);
}

void
pg_log_info(const char *fmt,...)
{
	va_list		ap;

	if (!rp_cli_verbose)
		return;
	va_start(ap, fmt);
	rp_cli_log_v("", fmt, ap);
	va_end(ap);
}

int
rp_cli_usage_error(const char *fmt,...)
{
	va_list		ap;

	if (rp_cli_log_context.where)
	{
		/* the handlers' messages quote the value: a secret's is left out */
		fprintf(stderr, "%s: error: %s: ", progname, rp_cli_log_context.where);
		if (rp_cli_log_context.hide)
			fprintf(stderr, "invalid value (not shown: this option may hold a password)\n");
		else
		{
			va_start(ap, fmt);
			vfprintf(stderr, fmt, ap);
			va_end(ap);
			fputc('\n', stderr);
		}
	}
	else
	{
		va_start(ap, fmt);
		rp_cli_log_v("error: ", fmt, ap);
		va_end(ap);
	}
	fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
	return RP_EXIT_USAGE;
}
