/*
 * rp_seqhash.c
 *    seq -> content hash (see rp_seqhash.h).
 */
#include "rp_alloc.h"

#include "base/rp_hash.h"
#include "envelope/rp_seqhash.h"

bool
rp_seqhash_put(RpSeqHash *m, uint64_t seq, uint64_t h, uint64_t *old)
{
	size_t		i;

	if ((m->used + 1) * 2 > m->cap)
	{
		RpSeqHash	n = {NULL, m->cap ? m->cap * 2 : 64, 0};

		n.slots = rp_malloc0(n.cap * sizeof(RpSeqHashSlot));
		for (size_t j = 0; j < m->cap; j++)
			if (m->slots[j].key)
			{
				uint64_t	dummy;

				rp_seqhash_put(&n, m->slots[j].key - 1, m->slots[j].hash, &dummy);
			}
		rp_free(m->slots);
		*m = n;
	}
	for (i = (size_t) rp_hash_mix(seq + 1) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
	{
		if (m->slots[i].key == seq + 1)
		{
			*old = m->slots[i].hash;
			return true;
		}
		if (m->slots[i].key == 0)
		{
			m->slots[i].key = seq + 1;
			m->slots[i].hash = h;
			m->used++;
			return false;
		}
	}
}

void
rp_seqhash_free(RpSeqHash *m)
{
	rp_free(m->slots);
	m->slots = NULL;
	m->cap = m->used = 0;
}
