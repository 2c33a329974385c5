/*
 * rp_ckpt.h
 *    Checkpoints: how far a sink durably holds the stream.
 *
 * commit_lsn is the dedup watermark (transactions committed at or before
 * it are done); end_lsn is what may be acknowledged to the server (G2).
 * A checkpoint is bound to the source's system id, timeline and slot
 * (a failover moves it to the promoted server's timeline).
 * The library-owned form is a small text file replaced atomically (temp
 * file, fsync, rename, fsync of the folder); sink-owned forms live with
 * the sink's data.
 */
#ifndef RP_CKPT_H
#define RP_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_lsn.h"				/* the positions a checkpoint holds, as text */

#define RP_SLOT_NAME_MAX 64
/* "nats:" and a stream name (JetStream allows 255 bytes) */
#define RP_SOURCE_NAME_MAX 272

typedef struct RpCheckpoint
{
	uint64_t	system_id;
	uint32_t	timeline;
	char		slot[RP_SLOT_NAME_MAX];
	uint64_t	commit_lsn;
	uint64_t	end_lsn;

	/*
	 * What the positions were read from: "" a replication slot (slot is the
	 * slot), or "nats:<stream>" a JetStream stream the NATS sink wrote (slot
	 * then names the reader; system_id and timeline are the source
	 * database's, from the stream's headers) and source_seq the stream
	 * sequence of the last message the checkpoint covers.
	 */
	char		source[RP_SOURCE_NAME_MAX];
	uint64_t	source_seq;
} RpCheckpoint;

/*
 * One line: "replicant-checkpoint v1 sysid=... tli=... slot=... commit=X/Y end=X/Y",
 * and " source=nats:S seq=N" after it for a stream's position.
 */
extern int	rp_ckpt_format(const RpCheckpoint *ck, char *buf, size_t len);
extern bool rp_ckpt_parse(const char *line, RpCheckpoint *ck);

/* 1 found, 0 no file, -1 error (unreadable or not a checkpoint). */
extern int	rp_ckpt_read(const char *path, RpCheckpoint *ck);
extern int	rp_ckpt_write(const char *path, const RpCheckpoint *ck);

/*
 * Is ck bound to this source (its system and slot)?  Halts (G3) with a
 * named reason if not.  The timeline is the caller's to judge: a promoted
 * standby goes on from its ancestor's checkpoint (base/rp_tlhist.h).
 */
extern int	rp_ckpt_check_source(const RpCheckpoint *ck, uint64_t system_id, const char *slot);

/*
 * Was ck taken from this kind of source (source: "" a slot, or
 * "nats:<stream>")?  Halts (G3) naming both: a slot's position means
 * nothing in a stream, nor one stream's in another.
 */
extern int	rp_ckpt_check_kind(const RpCheckpoint *ck, const char *source);

/* "slot" or the source's name, for messages and the mirror's checkpoint row */
extern const char *rp_ckpt_source_name(const char *source);

/*
 * Is ck within the server's WAL (IDENTIFY_SYSTEM's flush position)?  A
 * checkpoint past it was never the server's (an edited or damaged one, or a
 * source restored from a backup): trusting it would skip WAL and
 * acknowledge positions the server does not have.  Halts (G3) naming both.
 */
extern int	rp_ckpt_check_position(const RpCheckpoint *ck, uint64_t server_flush_lsn);

#endif							/* RP_CKPT_H */
