/*
 * rp_output.c
 *    Frames, flushing and the JSON format (see rp_output.h).
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "replication/output_plugin.h"
#include "replication/walsender.h"
#include "utils/memutils.h"

#include "rp_encode.h"
#include "rp_output.h"
#include "rp_render.h"

void
rp_output_init(RpState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	rp_buf_init(&st->frame, st->opts.json ? 1024 : (size_t) st->opts.frame_size + 4096);
	if (st->opts.json)
	{
		rp_decoder_init(&st->json_dec);
		rp_buf_init(&st->json_out, 1024);
	}
	MemoryContextSwitchTo(old);
}

RpBuf	   *
rp_output_buf(RpState *st)
{
	/* json: the frame never leaves, and holds version 2's timestamps */
	if (st->frame.len == 0)
		rp_enc_frame_header_version(&st->frame, st->opts.json ? RP_PROTO_VERSION
									: (uint8) st->opts.proto_version);
	return &st->frame;
}

/* Hand a finished message to the walsender or the SQL function. */
static void
rp_output_write(LogicalDecodingContext *ctx, RpState *st, const char *data, size_t len)
{
	/* PostgreSQL copies the row it keeps: do it where that copy is freed */
	MemoryContext old = MemoryContextSwitchTo(st->write_cxt);

	OutputPluginPrepareWrite(ctx, true);
	appendBinaryStringInfo(ctx->out, data, (int) len);
	OutputPluginWrite(ctx, true);
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->write_cxt);
}

/*
 * JSON: run the record just encoded through the decoder and renderer.  The
 * decoder keeps relations across calls, so its allocations belong to the
 * session context, not to the per-change one.
 *
 * Through the SQL functions every record is its own row.  In a walsender,
 * where the per-message cost dominates, records are joined by newlines into
 * one message up to frame_size (pg_recvlogical ends each message with a
 * newline, so its output is still one object per line).
 */
static void
rp_output_json(LogicalDecodingContext *ctx, RpState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);
	RpRecord	rec;
	int			rc;

	if (!rp_decoder_frame(&st->json_dec, st->frame.data, st->frame.len))
		elog(ERROR, "replicant: %s", st->json_dec.error);
	while ((rc = rp_decoder_next(&st->json_dec, &rec)) > 0)
	{
		if (rec.tag == RP_TAG_RELATION && rec.u.relation.previous)
			rp_relation_free(rec.u.relation.previous);
		if (st->json_out.len > 0)
			rp_buf_put_char(&st->json_out, '\n');
		rp_render_record(&st->json_out, &rec, &st->json_dec.rels, NULL);
		if (!am_walsender)
		{
			rp_output_write(ctx, st, st->json_out.data, st->json_out.len);
			rp_buf_reset(&st->json_out);
		}
	}
	if (rc < 0)
		elog(ERROR, "replicant: encoded record failed to decode: %s", st->json_dec.error);
	rp_buf_reset(&st->frame);
	MemoryContextSwitchTo(old);
	if (am_walsender && st->json_out.len >= (size_t) st->opts.frame_size)
		rp_output_flush(ctx, st);
}

void
rp_output_flush(LogicalDecodingContext *ctx, RpState *st)
{
	if (st->opts.json)
	{
		if (st->json_out.len > 0)
			rp_output_write(ctx, st, st->json_out.data, st->json_out.len);
		rp_buf_reset(&st->json_out);
		return;
	}
	if (st->frame.len <= RP_FRAME_HEADER_LEN)
		return;
	rp_output_write(ctx, st, st->frame.data, st->frame.len);
	rp_buf_reset(&st->frame);
}

void
rp_output_record_done(LogicalDecodingContext *ctx, RpState *st)
{
	if (st->opts.json)
		rp_output_json(ctx, st);
	else if (st->frame.len >= (size_t) st->opts.frame_size)
		rp_output_flush(ctx, st);
}

void
rp_output_relation(LogicalDecodingContext *ctx, RpState *st, RpRelEntry *e)
{
	RpBuf	   *buf;

	if (e->described != NULL && e->described_len == e->built_len &&
		memcmp(e->described, e->built, e->built_len) == 0)
		return;
	buf = rp_output_buf(st);
	rp_buf_put_bytes(buf, e->built, e->built_len);
	if (e->described)
		pfree(e->described);
	e->described = MemoryContextAlloc(GetMemoryChunkContext(e->built), e->built_len);
	memcpy(e->described, e->built, e->built_len);
	e->described_len = e->built_len;
	rp_output_record_done(ctx, st);
}
