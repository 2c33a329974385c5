/*
 * rp_status.c
 *    The consumer's error slot (see rp_status.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rp_status.h"

/* per thread: the delivery thread reports its own failures */
static __thread char rp_error_buf[1024];
static __thread RpHalt rp_error_reason = RP_HALT_NONE;

int
rp_fail(RpHalt halt, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(rp_error_buf, sizeof(rp_error_buf), fmt, ap);
	va_end(ap);
	rp_error_reason = halt;
	return -1;
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
