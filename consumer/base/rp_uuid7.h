/*
 * rp_uuid7.h
 *    UUID version 7 (RFC 9562, section 5.7): time-ordered identifiers for
 *    snapshots (the envelope's "snapshot_id").
 *
 * Layout (big-endian, 128 bits):
 *    unix_ts_ms  48 bits   milliseconds since the Unix epoch
 *    ver          4 bits   0111
 *    rand_a      12 bits   counter bits 41..30
 *    var          2 bits   10
 *    rand_b      62 bits   counter bits 29..0, then 32 random bits
 *
 * Monotonicity: RFC 9562 section 6.2, Method 1 ("Fixed Bit-Length Dedicated
 * Counter"), with a 42-bit counter in rand_a and the top 30 bits of rand_b.
 * On each new millisecond the counter is seeded from getrandom(2) with its
 * top bit cleared (the RFC's rollover guard: at least 2^41 increments before
 * it can overflow); a UUID minted in the same millisecond as the previous
 * one takes the counter plus one, so it sorts after it.  The low 32 bits are
 * fresh random bits on every mint.  All 74 rand_a/rand_b bits thus come from
 * getrandom(2) or from a counter seeded by it.  Should the counter ever
 * overflow, the timestamp is moved one millisecond ahead (RFC 9562 6.2).
 *
 * The counter and the last millisecond live in a generator (RpUuid7Gen)
 * that its caller owns (a snapshot run, an envelope writer, the backfill),
 * guarded by its own mutex: UUIDs minted by one generator, from any number
 * of threads sharing it, are strictly increasing in the order they were
 * minted.  Two generators know nothing of each other: their UUIDs are
 * unique (74 random or randomly seeded bits) but not ordered within one
 * millisecond.
 */
#ifndef RP_UUID7_H
#define RP_UUID7_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rp_clock.h"		/* rp_clock_wall_ms(): the UUIDs' timestamps */

typedef struct RpUuid
{
	unsigned char b[16];
} RpUuid;

#define RP_UUID_TEXT_LEN 36		/* 8-4-4-4-12 hex digits, no NUL */

/* Largest timestamp that fits the 48-bit field. */
#define RP_UUID7_MAX_MS ((INT64_C(1) << 48) - 1)

/* The state of RFC 9562 Method 1: one counter for the mints of a generator. */
typedef struct RpUuid7Gen
{
	pthread_mutex_t lock;		/* last_ms and counter */
	int64_t		last_ms;		/* -1: nothing minted yet */
	uint64_t	counter;
} RpUuid7Gen;

/* A fresh generator, for static or automatic storage (or rp_uuid7_gen_init). */
#define RP_UUID7_GEN_INIT {PTHREAD_MUTEX_INITIALIZER, -1, 0}

extern void rp_uuid7_gen_init(RpUuid7Gen *g);

/* No thread may be minting from it any more. */
extern void rp_uuid7_gen_free(RpUuid7Gen *g);

/*
 * A UUIDv7 for the given Unix milliseconds (0 .. RP_UUID7_MAX_MS).  Its
 * timestamp field is ms exactly (but for a counter overflow, see above);
 * successive calls with non-decreasing ms yield strictly increasing UUIDs.
 * 0, or -1 after rp_fail (ms out of range, getrandom failed).
 */
extern int	rp_uuid7_at(RpUuid7Gen *g, RpUuid *u, int64_t unix_ms);

/*
 * A UUIDv7 for the current time (CLOCK_REALTIME).  Strictly increasing
 * within the generator even when the wall clock steps back: a timestamp
 * earlier than the last one it minted is replaced by the last one.
 */
extern int	rp_uuid7_now(RpUuid7Gen *g, RpUuid *u);

/* The 48-bit timestamp field. */
extern int64_t rp_uuid7_ms(const RpUuid *u);

/* Canonical text: 36 lowercase characters and a NUL into out[37]. */
extern void rp_uuid_text(const RpUuid *u, char *out);

/*
 * Parse the canonical 8-4-4-4-12 form (hex digits of either case) of
 * exactly len bytes; true on success.  Any UUID version is accepted.
 */
extern bool rp_uuid_parse(const char *s, size_t len, RpUuid *u);

#endif							/* RP_UUID7_H */
