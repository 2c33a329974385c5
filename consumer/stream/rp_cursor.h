/*
 * rp_cursor.h
 *    A sink reads a delivered transaction's records through a cursor:
 *    relation records are taken inside (the schema-change callback, the
 *    relation view), so the sink sees changes and messages only.
 */
#ifndef RP_CURSOR_H
#define RP_CURSOR_H

#include <stdint.h>

#include "stream/rp_sink.h"
#include "stream/rp_store.h"

typedef struct RpCursor
{
	RpDelivery *dl;
	RpTxn	   *txn;
	RpStoreIter it;
} RpCursor;

/* Read a transaction's records; relation records are handled inside. */
extern int	rp_cursor_open(RpCursor *c, RpDelivery *dl, RpTxn *txn);

/* The same, past its first skip_bytes (records already read as chunks). */
extern int	rp_cursor_open_at(RpCursor *c, RpDelivery *dl, RpTxn *txn, uint64_t skip_bytes);
extern int	rp_cursor_next(RpCursor *c, RpRecord *rec); /* 1, 0 end, -1 */
extern void rp_cursor_close(RpCursor *c);

#endif							/* RP_CURSOR_H */
