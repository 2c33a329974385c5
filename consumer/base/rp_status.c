/*
 * rp_status.c
 *    The consumer's error slot (see rp_status.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/rp_status.h"

/* per thread: the delivery thread reports its own failures */
static __thread char rp_error_buf[1024];
static __thread RpHalt rp_error_reason = RP_HALT_NONE;
static __thread char rp_error_state[6];

int
rp_fail(RpHalt halt, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(rp_error_buf, sizeof(rp_error_buf), fmt, ap);
	va_end(ap);
	rp_error_reason = halt;
	rp_error_state[0] = '\0';
	return -1;
}

void
rp_error_set_sqlstate(const char *state)
{
	snprintf(rp_error_state, sizeof(rp_error_state), "%s", state ? state : "");
}

const char *
rp_error_sqlstate(void)
{
	return rp_error_state;
}

const char *
rp_error(void)
{
	return rp_error_buf[0] ? rp_error_buf : "unknown error";
}

RpHalt
rp_error_halt(void)
{
	return rp_error_reason;
}

void
rp_error_first_line(char *dst, size_t len, const char *msg)
{
	snprintf(dst, len, "%s", msg ? msg : "unknown error");
	dst[strcspn(dst, "\n")] = '\0';
}

void
rp_error_clear(void)
{
	rp_error_buf[0] = '\0';
	rp_error_reason = RP_HALT_NONE;
	rp_error_state[0] = '\0';
}

const char *
rp_halt_name(RpHalt halt)
{
	static const char *const names[RP_HALT__COUNT] = {
		"error", "malformed_record", "protocol", "unknown_relation", "schema_change",
		"spill_limit", "sink", "gap", "identity", "config", "in_use"
	};

	return halt < RP_HALT__COUNT ? names[halt] : "unknown";
}

/* The program's signal flag (rp_status.h): set once, before the threads start. */
static const atomic_int *rp_stop_watched;

void
rp_stop_watch(const atomic_int * flag)
{
	rp_stop_watched = flag;
}

bool
rp_stop_requested(void)
{
	return rp_stop_watched != NULL && atomic_load(rp_stop_watched) != 0;
}

bool
rp_pause_ms(int ms)
{
	/* in slices: the signal may be delivered to another thread */
	while (ms > 0 && !rp_stop_requested())
	{
		int			slice = ms < 100 ? ms : 100;
		struct timespec ts = {.tv_sec = 0,.tv_nsec = (long) slice * 1000000L};

		nanosleep(&ts, NULL);
		ms -= slice;
	}
	return !rp_stop_requested();
}
