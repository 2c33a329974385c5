/*
 * rp_snaptoken.h
 *    The snapshot progress token: what a sink stores with each chunk of a
 *    table's initial copy so that a copy that stopped resumes after its last
 *    stored chunk.  Sinks treat it as opaque text; only the snapshot
 *    orchestrator (rp_snapshot.c) reads it.
 *
 *    v1|LSN|DONE|ROWS|AT_MS|SNAPSHOT_ID|KEY1|KEY2...      (key order)
 *    v2|LSN|DONE|ROWS|AT_MS|SNAPSHOT_ID|FILENODE|HORIZON|POS (heap order)
 *
 * LSN is the slot's consistent point (the stream resumes there whatever
 * snapshot the remaining chunks are copied under), DONE 1 once the table's
 * last chunk is stored, ROWS the rows stored so far (the next envelope
 * seq), AT_MS and SNAPSHOT_ID the dump's identity for the envelope, and the
 * KEYs the primary key of the last row stored, as text, with '%' and '|'
 * and control characters written %XX.  The token carries a key value; it
 * is stored only where the rows themselves are, and never logged (G4).
 *
 * A heap-order copy (rp_snapwork.c) reads the table in physical order, so
 * its position is a tuple id instead: FILENODE the source table's
 * relfilenode the tuple ids belong to, HORIZON the full xid (xid8) of the
 * xmin of the snapshot the stored rows were copied under, and POS the last
 * stored row's tuple id as BLOCK.OFFSET (empty before the first row).
 * These carry no row value.
 */
#ifndef RP_SNAPTOKEN_H
#define RP_SNAPTOKEN_H

#include <stdbool.h>
#include <stdint.h>

#define RP_SNAPTOKEN_MAX_KEYS 32

typedef struct RpSnapToken
{
	uint64_t	lsn;
	bool		done;
	uint64_t	rows;
	int64_t		at_ms;
	char		snapshot_id[37];	/* UUID text, "" when none */
	int			nkeys;
	char	   *keys[RP_SNAPTOKEN_MAX_KEYS];	/* owned; NULL-free */
	bool		heap;			/* v2: the heap-order fields below, no keys */
	uint32_t	filenode;
	uint64_t	horizon;
	bool		have_pos;
	uint32_t	blk;
	uint16_t	off;
} RpSnapToken;

/* The token's text; the caller frees it. */
extern char *rp_snaptoken_format(const RpSnapToken *tok);

/* Parse text into tok (keys allocated); false when malformed. */
extern bool rp_snaptoken_parse(const char *text, RpSnapToken *tok);
extern void rp_snaptoken_free(RpSnapToken *tok);

#endif							/* RP_SNAPTOKEN_H */
