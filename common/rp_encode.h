/*
 * rp_encode.h
 *    The encoding half of the codec: records into a frame buffer.
 *
 * The plugin calls these from its callbacks; the unit tests call them to
 * build frames for the decoder.  Values inside tuples are written by the
 * caller with the rp_buf writers after rp_enc_datum_kind(), because only
 * the plugin knows how to turn a Datum into its encoding.
 */
#ifndef RP_ENCODE_H
#define RP_ENCODE_H

#include "rp_buf.h"
#include "rp_wire.h"

/* A frame of the given protocol version (the plugin: the session's). */
static inline void
rp_enc_frame_header_version(RpBuf *buf, uint8_t version)
{
	rp_buf_put_u8(buf, RP_FRAME_MAGIC);
	rp_buf_put_u8(buf, version);
}

static inline void
rp_enc_frame_header(RpBuf *buf)
{
	rp_enc_frame_header_version(buf, RP_PROTO_VERSION);
}

extern void rp_enc_begin(RpBuf *buf, uint32_t xid, uint64_t final_lsn, int64_t commit_time);
extern void rp_enc_commit(RpBuf *buf, uint64_t commit_lsn, uint64_t end_lsn, int64_t commit_time);

/*
 * The same, with the commit's timeline (protocol version 4); a timeline of 0
 * writes the record of versions 1 to 3.
 */
extern void rp_enc_commit_tli(RpBuf *buf, uint64_t commit_lsn, uint64_t end_lsn, int64_t commit_time,
							  uint32_t timeline);
extern void rp_enc_origin(RpBuf *buf, uint64_t origin_lsn, const char *name);
extern void rp_enc_stream_start(RpBuf *buf, uint32_t xid, bool first_segment);
extern void rp_enc_stream_stop(RpBuf *buf);
extern void rp_enc_stream_commit(RpBuf *buf, uint32_t xid, uint64_t commit_lsn,
								 uint64_t end_lsn, int64_t commit_time);
extern void rp_enc_stream_commit_tli(RpBuf *buf, uint32_t xid, uint64_t commit_lsn,
									 uint64_t end_lsn, int64_t commit_time, uint32_t timeline);
extern void rp_enc_stream_abort(RpBuf *buf, uint32_t xid, uint32_t subxid);
extern void rp_enc_message(RpBuf *buf, bool transactional, uint32_t xid, uint64_t lsn,
						   const char *prefix, const char *content, size_t content_len);

/* xid != 0 marks a record inside a stream block. */
extern void rp_enc_truncate(RpBuf *buf, uint8_t flags, uint32_t xid, uint32_t nrels,
							const uint32_t *relids);

/* Relation: header, then natts columns, then rp_buf_end_record(). */
extern size_t rp_enc_relation_start(RpBuf *buf, uint32_t relid, const char *schema,
									const char *name, char identity, uint16_t natts);
extern void rp_enc_relation_column(RpBuf *buf, int16_t attnum, const char *name,
								   uint32_t type_oid, const char *type_name, int32_t typmod,
								   uint8_t encoding, uint8_t flags);

/* Version 3: the kind fields, after the columns, before rp_buf_end_record(). */
extern void rp_enc_relation_kind(RpBuf *buf, uint8_t kind, uint32_t partition_set);

struct RpRelation;

/*
 * A decoded relation written back as its whole Relation record (the
 * consumer's readers): with the kind fields when it was read with them.
 */
extern void rp_enc_relation_record(RpBuf *buf, const struct RpRelation *rel);

/*
 * Change: rp_enc_change_start(), then per tuple rp_enc_tuple_start() and
 * natts datums, then rp_buf_end_record(buf, returned offset).
 */
static inline size_t
rp_enc_change_start(RpBuf *buf, char tag, uint32_t relid, uint8_t flags, uint32_t xid)
{
	size_t		at = rp_buf_begin_record(buf, tag);

	rp_buf_put_u32(buf, relid);
	if (xid != 0)
		flags |= RP_CHANGE_HAS_XID;
	rp_buf_put_u8(buf, flags);
	if (xid != 0)
		rp_buf_put_u32(buf, xid);
	return at;
}

static inline void
rp_enc_tuple_start(RpBuf *buf, uint16_t natts)
{
	rp_buf_put_u16(buf, natts);
}

static inline void
rp_enc_datum_kind(RpBuf *buf, char kind)
{
	rp_buf_put_u8(buf, (uint8_t) kind);
}

/* Array value header; then nitems datums (kind byte + value). */
extern void rp_enc_array_header(RpBuf *buf, uint8_t elem_encoding, uint32_t elem_oid,
								uint32_t ndim, const int *dims, const int *lbounds);

#endif							/* RP_ENCODE_H */
