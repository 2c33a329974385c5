/*
 * rp_cli_signals.c
 *    The program's signals, as pg_recvlogical's: SIGINT and SIGTERM stop
 *    the run (the library's threads read the flag through rp_stop_watch),
 *    SIGHUP asks the sink to reopen its output (the run takes it through
 *    its take_reopen hook), SIGPIPE is ignored.
 */
#include <signal.h>
#include <stdatomic.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"

/* SIGHUP: the sink reopens its output (log rotation) */
static volatile sig_atomic_t reopen_requested = 0;

/* SIGINT, SIGTERM: the library's threads read it (rp_stop_watch) */
static atomic_int stop_requested;

static void
on_stop_signal(int signo)
{
	/* async-signal-safe: every thread's waits look at it (rp_status.h) */
	atomic_store(&stop_requested, 1);
}

static void
on_hup_signal(int signo)
{
	reopen_requested = 1;
}

void
rp_cli_signals_install(void)
{
	rp_stop_watch(&stop_requested);
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	signal(SIGHUP, on_hup_signal);
	signal(SIGPIPE, SIG_IGN);
}

bool
rp_cli_take_reopen(void)
{
	if (!reopen_requested)
		return false;
	reopen_requested = 0;
	return true;
}
