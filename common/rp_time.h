/*
 * rp_time.h
 *    Wire timestamps and dates to and from PostgreSQL's own form (the
 *    microseconds and days since 2000-01-01 of its binary send format),
 *    the extended timestamp range included (see rp_wire.h).  Total
 *    functions: a value no PostgreSQL timestamp or date has is reported,
 *    never overflowed, so a damaged frame cannot reach undefined behaviour.
 *
 * The common case (1970-epoch microseconds) costs one comparison more than
 * a subtraction; everything after it is the rare path.
 */
#ifndef RP_TIME_H
#define RP_TIME_H

#include "rp_alloc.h"
#include "rp_wire.h"

#define RP_USECS_PER_DAY        INT64_C(86400000000)

/* the common case: a finite value of the 1970-epoch range */
#define rp_ts_likely(x)	__builtin_expect((x) != 0, 1)

/*
 * The wire value of PostgreSQL timestamp t (infinities INT64_MIN/MAX as in
 * PostgreSQL).  false: t is no PostgreSQL timestamp, or it needs the
 * extended range and the session may not use it (protocol version 1).
 */
static inline bool
rp_ts_from_pg(int64_t t, bool extended, int64_t *wire)
{
	if (rp_ts_likely(t >= RP_PG_TS_MIN && t < RP_TS_EXT_FIRST_PG))
		*wire = t + RP_PG_EPOCH_USECS;
	else if (t == RP_TS_NEG_INF || t == RP_TS_POS_INF)
		*wire = t;
	else if (t >= RP_TS_EXT_FIRST_PG && t < RP_PG_TS_END && extended)
		*wire = RP_TS_EXT_BASE + (t - RP_TS_EXT_FIRST_PG);
	else
		return false;
	return true;
}

/* PostgreSQL timestamp of wire value w; false: no timestamp has it. */
static inline bool
rp_ts_to_pg(int64_t w, int64_t *t)
{
	if (rp_ts_likely(w >= RP_TS_WIRE_MIN && w != RP_TS_POS_INF))
		*t = w - RP_PG_EPOCH_USECS;
	else if (w == RP_TS_NEG_INF || w == RP_TS_POS_INF)
		*t = w;
	else if (w - RP_TS_EXT_BASE <= RP_TS_EXT_MAX_K)
		/* w < RP_TS_WIRE_MIN < 0 here: w - RP_TS_EXT_BASE cannot overflow */
		*t = RP_TS_EXT_FIRST_PG + (w - RP_TS_EXT_BASE);
	else
		return false;
	return true;
}

/* The decoder's check, one comparison in the common case. */
static inline bool
rp_ts_valid(int64_t w)
{
	return rp_ts_likely(w >= RP_TS_WIRE_MIN) || w == RP_TS_NEG_INF ||
		w - RP_TS_EXT_BASE <= RP_TS_EXT_MAX_K;
}

/*
 * A finite wire timestamp as days since 1970-01-01 and microseconds into
 * that day (0 <= *usecs < one day), for the text forms.  Any int64 goes
 * (a value no timestamp has gives some day, never an overflow).
 */
static inline void
rp_ts_split(int64_t w, int64_t *days, int64_t *usecs)
{
	int64_t		t;

	if (w < RP_TS_WIRE_MIN && rp_ts_to_pg(w, &t))
	{
		/* extended: positive and far from overflowing in 2000-epoch units */
		*days = t / RP_USECS_PER_DAY + RP_PG_EPOCH_DAYS;
		*usecs = t % RP_USECS_PER_DAY;
		return;
	}
	*days = w / RP_USECS_PER_DAY;
	*usecs = w % RP_USECS_PER_DAY;
	if (*usecs < 0)
	{
		*usecs += RP_USECS_PER_DAY;
		(*days)--;
	}
}

/* Wire dates: days since 1970-01-01, INT32_MIN/MAX the infinities. */
static inline bool
rp_date_valid(int32_t d)
{
	return rp_ts_likely(d >= RP_PG_DATE_MIN + RP_PG_EPOCH_DAYS && d <= RP_PG_DATE_MAX + RP_PG_EPOCH_DAYS) ||
		d == RP_DATE_NEG_INF || d == RP_DATE_POS_INF;
}

#endif							/* RP_TIME_H */
