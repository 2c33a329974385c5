/*
 * rp_store.h
 *    Where an assembled transaction's records live until delivery: in
 *    memory while the consumer's total stays under --max-memory, then in a
 *    private spill file (0600, in the spill folder: stream/rp_spill.h) that
 *    is read back once at delivery and deleted on commit, abort, restart
 *    and exit (G5).  Past --max-spill bytes on disk the run halts.
 */
#ifndef RP_STORE_H
#define RP_STORE_H

#include <stdint.h>
#include <stdio.h>

#include "rp_buf.h"
#include "stream/rp_spill.h"

typedef struct RpStore
{
	RpSpill    *sp;
	RpBuf		mem;			/* all records, or the unwritten tail when
								 * spilled */
	int			fd;				/* spill file, -1 while in memory */
	char	   *path;
	uint64_t	file_len;
} RpStore;

typedef struct RpStoreIter
{
	RpStore    *st;
	size_t		mpos;			/* in st->mem (memory-only stores) */
	uint64_t	fpos;			/* next file offset to read */
	RpBuf		rbuf;			/* file read-back buffer */
	size_t		rpos;
} RpStoreIter;

extern void rp_store_init(RpStore *st, RpSpill *sp);
extern int	rp_store_append(RpStore *st, const void *rec, size_t len);
extern uint64_t rp_store_length(const RpStore *st);

/* Cut back to a length returned by rp_store_length (subtransaction abort). */
extern int	rp_store_truncate(RpStore *st, uint64_t len);
extern void rp_store_free(RpStore *st);
static inline int
rp_store_spilled(const RpStore *st)
{
	return st->fd >= 0;
}

extern int	rp_store_iter_start(RpStoreIter *it, RpStore *st);

/* 1: rec and len hold the next whole record; 0: end; -1: I/O error. */
extern int	rp_store_iter_next(RpStoreIter *it, const unsigned char **rec, size_t *len);
extern void rp_store_iter_end(RpStoreIter *it);

#endif							/* RP_STORE_H */
