/*
 * rp_bfmsg.h
 *    The backfill's watermark messages (rp_backfill.h): what the backfill
 *    thread writes into the source's WAL with pg_logical_emit_message()
 *    around each chunk it reads, and what the sink reads back from the
 *    stream.  Pure: no connection.
 *
 *    {"v":1,"mark":"low","run":"<uuid>","relid":16384,"chunk":7}
 *
 * The run is a UUIDv7 drawn when the backfill thread starts, so a
 * watermark that an earlier process wrote (and that a replay of the stream
 * delivers again) is told apart from the current run's and has no effect.
 * No table name and no key value: the message is in the source's WAL for
 * anyone decoding it.
 */
#ifndef RP_BFMSG_H
#define RP_BFMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_BACKFILL_PREFIX "replicant.backfill"
#define RP_BFMSG_RUN_LEN 36

typedef enum RpBfMark
{
	RP_BF_LOW,					/* written before the chunk is read: the
								 * window opens */
	RP_BF_HIGH					/* written after: the window closes, the chunk
								 * applies */
} RpBfMark;

typedef struct RpBfMsg
{
	RpBfMark	mark;
	char		run[RP_BFMSG_RUN_LEN + 1];
	uint32_t	relid;
	uint64_t	chunk;
} RpBfMsg;

/* The message text into out[outlen]; its length, or -1 when it does not fit. */
extern int	rp_bfmsg_format(const RpBfMsg *m, char *out, size_t outlen);

/* Parse len bytes of content; false when it is not a watermark of this version. */
extern bool rp_bfmsg_parse(const unsigned char *content, size_t len, RpBfMsg *m);

/* Same run, table and chunk (the mark aside)? */
extern bool rp_bfmsg_same_chunk(const RpBfMsg *a, const RpBfMsg *b);

#endif							/* RP_BFMSG_H */
