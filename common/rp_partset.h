/*
 * rp_partset.h
 *    The partition_set fingerprint of a partition root's Relation record
 *    (partitions=root, wire version 3): FNV-1a (32 bits) over the OIDs of
 *    its leaf partitions (every member that is not itself partitioned) in
 *    ascending order, each as 4 bytes big-endian.  The plugin computes it
 *    from find_all_inheritors, the consumer's snapshot catalog from
 *    pg_partition_tree, so a root's description read under the snapshot is
 *    the one the stream sends: the two must agree byte for byte, hence one
 *    definition here and no server hash function.
 */
#ifndef RP_PARTSET_H
#define RP_PARTSET_H

#include <stdint.h>

#define RP_PARTSET_INIT UINT32_C(2166136261)

/* h after one more leaf OID (call in ascending OID order, from RP_PARTSET_INIT) */
static inline uint32_t
rp_partset_add(uint32_t h, uint32_t oid)
{
	for (int shift = 24; shift >= 0; shift -= 8)
	{
		h ^= (oid >> shift) & 0xff;
		h *= UINT32_C(16777619);
	}
	return h;
}

#endif							/* RP_PARTSET_H */
