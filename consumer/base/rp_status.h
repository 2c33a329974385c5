/*
 * rp_status.h
 *    Why the consumer stopped: one error slot per process, holding a
 *    value-free message and, for fail-closed halts, the reason (G3).  Every
 *    failing library call sets it and returns -1; the CLI prints it once.
 */
#ifndef RP_STATUS_H
#define RP_STATUS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum RpHalt
{
	RP_HALT_NONE = 0,			/* an ordinary error (connection, I/O):
								 * retryable */
	RP_HALT_MALFORMED,			/* a record that does not decode */
	RP_HALT_PROTOCOL,			/* records out of order (a row before BEGIN
								 * ...) */
	RP_HALT_UNKNOWN_RELATION,
	RP_HALT_SCHEMA,				/* a destructive schema change */
	RP_HALT_SPILL_LIMIT,		/* --max-spill exceeded */
	RP_HALT_SINK,				/* the sink refused or failed to apply */
	RP_HALT_GAP,				/* the slot is gone, invalidated or ahead */
	RP_HALT_IDENTITY,			/* checkpoint of another system or timeline */
	RP_HALT_CONFIG,				/* refused for good: the server refused the
								 * connection (authentication, database,
								 * privilege), the plugin or our options;
								 * retrying cannot help */
	RP_HALT_IN_USE,				/* another consumer holds the state dir, log
								 * or slot */
	RP_HALT__COUNT
} RpHalt;

/* Exit codes of the CLI (docs/operations.md). */
#define RP_EXIT_OK      0
#define RP_EXIT_ERROR   1
#define RP_EXIT_USAGE   2
#define RP_EXIT_HALT    3
/* a permanent failure (RP_HALT_CONFIG): no retry mends it, and none is made */
#define RP_EXIT_REFUSED 4

/* Set the error (printf-style, value-free by construction); returns -1. */
extern int	rp_fail(RpHalt halt, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern const char *rp_error(void);

/*
 * The SQLSTATE of the server error behind the last rp_fail, when its
 * caller recorded one (rp_fail clears it): a code, value-free, for the
 * events (base/rp_event.h).  "" when none.
 */
extern void rp_error_set_sqlstate(const char *state);
extern const char *rp_error_sqlstate(void);
extern RpHalt rp_error_halt(void);
extern void rp_error_clear(void);
extern const char *rp_halt_name(RpHalt halt);

/*
 * The first line of a libpq error message into dst: a connection error's
 * first line says what failed; what follows (DETAIL, HINT) is not shown.
 */
extern void rp_error_first_line(char *dst, size_t len, const char *msg);

/*
 * A stop was asked for (SIGINT, SIGTERM).  The flag is the program's (the
 * CLI's signal flag, set by its handler: lock-free, so async-signal-safe);
 * it hands the flag over once, before any thread starts (rp_stop_watch),
 * and every thread that waits on something outside the consumer (an exec
 * child's acknowledgement, a retry pause) reads it here, so that none of
 * them waits for ever.  With none handed over (unit tests, tools), no stop
 * is ever requested.
 */
extern void rp_stop_watch(const atomic_int * flag);
extern bool rp_stop_requested(void);

/* Sleep ms, or less once a stop is requested; true when it slept it all. */
extern bool rp_pause_ms(int ms);

#endif							/* RP_STATUS_H */
