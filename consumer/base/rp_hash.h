/*
 * rp_hash.h
 *    The one hash of the consumer's in-memory tables: 64-bit FNV-1a, with
 *    an optional finalizer for tables that index by the low bits.
 *
 * Results are part of nothing on disk or on the wire, but the fold's and
 * the reassembler's tables are tuned (and tested) with these values, so
 * they stay exactly FNV-1a.  Static inline: it runs per key on hot paths.
 */
#ifndef RP_HASH_H
#define RP_HASH_H

#include <stddef.h>
#include <stdint.h>

#define RP_HASH_FNV_BASIS UINT64_C(0xcbf29ce484222325)	/* 14695981039346656037 */
#define RP_HASH_FNV_PRIME UINT64_C(0x100000001b3)	/* 1099511628211 */

/* FNV-1a of n more bytes, continuing from h (RP_HASH_FNV_BASIS to start). */
static inline uint64_t
rp_hash_extend(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * RP_HASH_FNV_PRIME;
	return h;
}

/* FNV-1a of n bytes. */
static inline uint64_t
rp_hash_bytes(const void *p, size_t n)
{
	return rp_hash_extend(RP_HASH_FNV_BASIS, p, n);
}

/*
 * MurmurHash3's 64-bit finalizer: keys that differ only in their last
 * bytes (sequential ids) leave FNV's low bits clustered under linear
 * probing; after this every input bit reaches every output bit.
 */
static inline uint64_t
rp_hash_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

#endif							/* RP_HASH_H */
