/*
 * rp_counter.h
 *    Counters and gauges that one thread writes and others read (the
 *    progress line, the metrics thread): relaxed atomic access, so a read
 *    never sees a torn or stale-for-ever value and costs no lock.  Ordering
 *    between counters is not promised; a counter only ever grows, a gauge
 *    (the spill budget's bytes in use) also shrinks (RP_COUNT_SUB).
 */
#ifndef RP_COUNTER_H
#define RP_COUNTER_H

#define RP_COUNT_ADD(x, n) ((void) __atomic_add_fetch(&(x), (n), __ATOMIC_RELAXED))
#define RP_COUNT_SUB(x, n) ((void) __atomic_sub_fetch(&(x), (n), __ATOMIC_RELAXED))
#define RP_COUNT_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RP_COUNT_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#endif							/* RP_COUNTER_H */
