/*
 * rp_encode.c
 *    Record encoders (see rp_encode.h and docs/protocol.md).
 */
#include "rp_alloc.h"
#include "rp_decode.h"
#include "rp_encode.h"

void
rp_enc_begin(RpBuf *buf, uint32_t xid, uint64_t final_lsn, int64_t commit_time)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_BEGIN);

	rp_buf_put_u32(buf, xid);
	rp_buf_put_u64(buf, final_lsn);
	rp_buf_put_u64(buf, (uint64_t) commit_time);
	rp_buf_end_record(buf, at);
}

void
rp_enc_commit(RpBuf *buf, uint64_t commit_lsn, uint64_t end_lsn, int64_t commit_time)
{
	rp_enc_commit_tli(buf, commit_lsn, end_lsn, commit_time, 0);
}

void
rp_enc_commit_tli(RpBuf *buf, uint64_t commit_lsn, uint64_t end_lsn, int64_t commit_time,
				  uint32_t timeline)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_COMMIT);

	rp_buf_put_u8(buf, 0);
	rp_buf_put_u64(buf, commit_lsn);
	rp_buf_put_u64(buf, end_lsn);
	rp_buf_put_u64(buf, (uint64_t) commit_time);
	if (timeline != 0)
		rp_buf_put_u32(buf, timeline);
	rp_buf_end_record(buf, at);
}

void
rp_enc_origin(RpBuf *buf, uint64_t origin_lsn, const char *name)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_ORIGIN);

	rp_buf_put_u64(buf, origin_lsn);
	rp_buf_put_cstr(buf, name);
	rp_buf_end_record(buf, at);
}

void
rp_enc_stream_start(RpBuf *buf, uint32_t xid, bool first_segment)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_STREAM_START);

	rp_buf_put_u32(buf, xid);
	rp_buf_put_u8(buf, first_segment ? 1 : 0);
	rp_buf_end_record(buf, at);
}

void
rp_enc_stream_stop(RpBuf *buf)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_STREAM_STOP);

	rp_buf_end_record(buf, at);
}

void
rp_enc_stream_commit(RpBuf *buf, uint32_t xid, uint64_t commit_lsn, uint64_t end_lsn,
					 int64_t commit_time)
{
	rp_enc_stream_commit_tli(buf, xid, commit_lsn, end_lsn, commit_time, 0);
}

void
rp_enc_stream_commit_tli(RpBuf *buf, uint32_t xid, uint64_t commit_lsn, uint64_t end_lsn,
						 int64_t commit_time, uint32_t timeline)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_STREAM_COMMIT);

	rp_buf_put_u32(buf, xid);
	rp_buf_put_u64(buf, commit_lsn);
	rp_buf_put_u64(buf, end_lsn);
	rp_buf_put_u64(buf, (uint64_t) commit_time);
	if (timeline != 0)
		rp_buf_put_u32(buf, timeline);
	rp_buf_end_record(buf, at);
}

void
rp_enc_stream_abort(RpBuf *buf, uint32_t xid, uint32_t subxid)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_STREAM_ABORT);

	rp_buf_put_u32(buf, xid);
	rp_buf_put_u32(buf, subxid);
	rp_buf_end_record(buf, at);
}

void
rp_enc_message(RpBuf *buf, bool transactional, uint32_t xid, uint64_t lsn,
			   const char *prefix, const char *content, size_t content_len)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_MESSAGE);
	uint8_t		flags = transactional ? RP_MESSAGE_TRANSACTIONAL : 0;

	if (xid != 0)
		flags |= RP_CHANGE_HAS_XID;
	rp_buf_put_u8(buf, flags);
	if (xid != 0)
		rp_buf_put_u32(buf, xid);
	rp_buf_put_u64(buf, lsn);
	rp_buf_put_cstr(buf, prefix);
	rp_buf_put_str(buf, content, content_len);
	rp_buf_end_record(buf, at);
}

void
rp_enc_truncate(RpBuf *buf, uint8_t flags, uint32_t xid, uint32_t nrels, const uint32_t *relids)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_TRUNCATE);

	if (xid != 0)
		flags |= RP_CHANGE_HAS_XID;
	rp_buf_put_u8(buf, flags);
	if (xid != 0)
		rp_buf_put_u32(buf, xid);
	rp_buf_put_u32(buf, nrels);
	for (uint32_t i = 0; i < nrels; i++)
		rp_buf_put_u32(buf, relids[i]);
	rp_buf_end_record(buf, at);
}

size_t
rp_enc_relation_start(RpBuf *buf, uint32_t relid, const char *schema, const char *name,
					  char identity, uint16_t natts)
{
	size_t		at = rp_buf_begin_record(buf, RP_TAG_RELATION);

	rp_buf_put_u32(buf, relid);
	rp_buf_put_cstr(buf, schema);
	rp_buf_put_cstr(buf, name);
	rp_buf_put_u8(buf, (uint8_t) identity);
	rp_buf_put_u16(buf, natts);
	return at;
}

void
rp_enc_relation_column(RpBuf *buf, int16_t attnum, const char *name, uint32_t type_oid,
					   const char *type_name, int32_t typmod, uint8_t encoding, uint8_t flags)
{
	rp_buf_put_u16(buf, (uint16_t) attnum);
	rp_buf_put_cstr(buf, name);
	rp_buf_put_u32(buf, type_oid);
	rp_buf_put_cstr(buf, type_name);
	rp_buf_put_u32(buf, (uint32_t) typmod);
	rp_buf_put_u8(buf, encoding);
	rp_buf_put_u8(buf, flags);
}

void
rp_enc_relation_kind(RpBuf *buf, uint8_t kind, uint32_t partition_set)
{
	rp_buf_put_u8(buf, kind);
	rp_buf_put_u32(buf, partition_set);
}

void
rp_enc_array_header(RpBuf *buf, uint8_t elem_encoding, uint32_t elem_oid, uint32_t ndim,
					const int *dims, const int *lbounds)
{
	rp_buf_put_u8(buf, elem_encoding);
	rp_buf_put_u32(buf, elem_oid);
	rp_buf_put_u32(buf, ndim);
	for (uint32_t d = 0; d < ndim; d++)
	{
		rp_buf_put_u32(buf, (uint32_t) dims[d]);
		rp_buf_put_u32(buf, (uint32_t) lbounds[d]);
	}
}

void
rp_enc_relation_record(RpBuf *buf, const RpRelation *rel)
{
	size_t		at = rp_enc_relation_start(buf, rel->relid, rel->schema, rel->name, rel->identity,
										   rel->natts);

	for (uint16_t i = 0; i < rel->natts; i++)
	{
		const RpColumn *c = &rel->cols[i];

		rp_enc_relation_column(buf, c->attnum, c->name, c->type_oid, c->type_name, c->typmod,
							   c->encoding, c->flags);
	}
	if (rel->kind != RP_REL_KIND_NONE)
		rp_enc_relation_kind(buf, rel->kind, rel->partition_set);
	rp_buf_end_record(buf, at);
}
