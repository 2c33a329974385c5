/*
 * rp_seqhash.h
 *    seq -> 64-bit content hash, open addressing: what verify-snapshot's
 *    second pass keeps per repeated seq to tell a duplicate from a
 *    conflict (rp_reassemble.h).
 */
#ifndef RP_SEQHASH_H
#define RP_SEQHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct RpSeqHashSlot
{
	uint64_t	key;			/* seq + 1; 0: empty */
	uint64_t	hash;
} RpSeqHashSlot;

typedef struct RpSeqHash
{
	RpSeqHashSlot *slots;
	size_t		cap;			/* a power of two */
	size_t		used;
} RpSeqHash;

/* The hash stored for seq, or store h: returns true when one was there (*old). */
extern bool rp_seqhash_put(RpSeqHash *m, uint64_t seq, uint64_t h, uint64_t *old);
extern void rp_seqhash_free(RpSeqHash *m);

#endif							/* RP_SEQHASH_H */
