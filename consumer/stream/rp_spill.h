/*
 * rp_spill.h
 *    The memory budget and the spill folder: what every transaction store
 *    (stream/rp_store.h) and the sink's working state draw on together.
 *    Below --max-memory in total, records stay in memory; past it, stores
 *    go to private files in one 0700 folder, up to --max-spill bytes.
 *
 * The totals are shared by the receiving thread (which appends), the
 * delivery thread (which reads back and frees) and the sink: relaxed
 * atomic counters (base/rp_counter.h).
 */
#ifndef RP_SPILL_H
#define RP_SPILL_H

#include <stddef.h>
#include <stdint.h>

typedef struct RpSpill
{
	char	   *dir;
	size_t		max_memory;		/* bytes held in memory across all stores */
	uint64_t	max_spill;		/* bytes on disk across all stores */
	size_t		mem_in_use;		/* the stores' bytes plus sink_in_use */
	size_t		sink_in_use;	/* the sink's working state (rp_spill_charge) */
	uint64_t	disk_in_use;
	uint64_t	spills;			/* stores that went to disk (a counter) */
	unsigned	seq;
} RpSpill;

/* Create the spill folder (0700) and remove spill files of earlier runs. */
extern int	rp_spill_init(RpSpill *sp, const char *dir, size_t max_memory, uint64_t max_spill);

/*
 * The sink's working state (the mirror's net-effect map) is charged to the
 * same budget as the stores: what it holds makes the stores spill sooner,
 * so the two together stay under --max-memory.  n > 0 charges, n < 0
 * returns; the sink bounds its own share (docs/operations.md).
 */
extern void rp_spill_charge(RpSpill *sp, int64_t n);

/*
 * A new spill file's path in buf (at least 4096 bytes): unique within the
 * folder for this process, and named so rp_spill_init removes it after a
 * crash.  Counts it as a spill.
 */
extern void rp_spill_next_path(RpSpill *sp, char *buf, size_t len);

#endif							/* RP_SPILL_H */
