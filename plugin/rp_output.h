/*
 * rp_output.h
 *    How records leave the plugin.  Binary: records accumulate in one frame
 *    that goes out as a single CopyData message (or one row of the SQL
 *    interface) at commit, at the end of a stream block, and whenever it
 *    passes frame_size.  JSON: every record is decoded again by the common
 *    codec and rendered as one JSON object (one row of the SQL functions;
 *    in a walsender, newline-joined lines batched like binary frames), so
 *    the JSON format and the binary format cannot disagree.
 */
#ifndef RP_OUTPUT_H
#define RP_OUTPUT_H

#include "postgres.h"
#include "replication/logical.h"

#include "rp_buf.h"
#include "rp_decode.h"
#include "rp_options.h"
#include "rp_relcache.h"

typedef struct RpState
{
	RpOptions	opts;
	MemoryContext cxt;			/* the session: frame, JSON decoder */
	MemoryContext change_cxt;	/* reset after every callback */
	MemoryContext write_cxt;	/* reset after every write */
	RpBuf		frame;			/* binary: the pending frame; json: one record */
	RpDecoder	json_dec;		/* json: relations seen, for rendering */
	RpBuf		json_out;
	bool		begin_sent;		/* BEGIN of the current transaction is out */
	ReorderBufferTXN *txn;		/* the current non-streamed transaction */
	bool		in_stream;
	bool		stream_first_segment;
	bool		stream_start_sent;
	ReorderBufferTXN *stream_txn;
	int			changes_since_progress;
} RpState;

/* What a streamed top-level transaction has sent (txn->output_plugin_private). */
typedef struct RpTxnState
{
	bool		sent_any;
} RpTxnState;

extern void rp_output_init(RpState *st);

/* The buffer to encode the next record into (frame header already in place). */
extern RpBuf *rp_output_buf(RpState *st);

/* A record was appended: json writes it, binary flushes past frame_size. */
extern void rp_output_record_done(LogicalDecodingContext *ctx, RpState *st);

/* Send the pending binary frame, if it holds any record. */
extern void rp_output_flush(LogicalDecodingContext *ctx, RpState *st);

/* Describe the relation if this session has not seen this description yet. */
extern void rp_output_relation(LogicalDecodingContext *ctx, RpState *st, RpRelEntry *e);

#endif							/* RP_OUTPUT_H */
