/*
 * rp_counter.h
 *    Counters and gauges that one thread writes while others read them (the
 *    metrics endpoint's thread, the progress line of the receiving thread):
 *    relaxed atomic loads and stores, so a reader sees a whole recent value
 *    and the access is not a data race.
 *
 * Each counter has one writing thread, so an add is an atomic load and an
 * atomic store, not a read-modify-write: on x86-64 and arm64 these are plain
 * moves, nothing more on the hot path than the "x++" they replace.  A counter
 * several threads add to needs __atomic_add_fetch instead (rp_store.c).
 */
#ifndef RP_COUNTER_H
#define RP_COUNTER_H

#define RP_CTR_GET(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RP_CTR_SET(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define RP_CTR_ADD(x, n)	RP_CTR_SET(x, RP_CTR_GET(x) + (n))

#endif							/* RP_COUNTER_H */
