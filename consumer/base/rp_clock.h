/*
 * rp_clock.h
 *    The one clock of the consumer's library: wall time (for what is
 *    compared with the server's clock or written out: feedback timestamps,
 *    lag, envelope times, condition-variable deadlines) and monotonic time
 *    (for durations that must not jump with the system clock).
 *
 * Static inline: the stream reads the clock per message.
 */
#ifndef RP_CLOCK_H
#define RP_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds since the Unix epoch. */
static inline int64_t
rp_clock_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Milliseconds since the Unix epoch. */
static inline int64_t
rp_clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic microseconds, from an arbitrary origin. */
static inline int64_t
rp_clock_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Monotonic milliseconds, from an arbitrary origin. */
static inline int64_t
rp_clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The wall-clock instant ms milliseconds from now, as an absolute
 * deadline for pthread_cond_timedwait (whose default clock is
 * CLOCK_REALTIME).
 */
static inline void
rp_clock_deadline(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t) (ms / 1000);
	ts->tv_nsec += (long) (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L)
	{
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

#endif							/* RP_CLOCK_H */
