/*
 * rp_sink_stdout.c
 *    The stdout sink: JSON lines on standard output.  At-least-once: the
 *    library's checkpoint file is written after each unit is flushed.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "sinks/log/rp_lines.h"
#include "sinks/log/rp_snaplog.h"
#include "sinks/rp_sink.h"
#include "base/rp_status.h"

#define RP_STDOUT_CHUNK (1024 * 1024)

static int
rp_stdout_write(void *arg, RpBuf *out)
{
	return rp_lines_write(STDOUT_FILENO, out, "standard output");
}

static int
rp_stdout_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	RpBuf	   *out = s->priv;

	if (rp_lines_txn(out, dl, txn, RP_STDOUT_CHUNK, rp_stdout_write, NULL) < 0)
		return -1;
	return rp_stdout_write(NULL, out);
}

static int
rp_stdout_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpBuf	   *out = s->priv;

	if (rp_lines_message(out, msg, RP_STDOUT_CHUNK, rp_stdout_write, NULL) < 0)
		return -1;
	return rp_stdout_write(NULL, out);
}

/* Snapshot dumps as envelope frames; not resumable (the log cannot hold a token). */
static RpSnapLog rp_stdout_snaplog;

static int
rp_stdout_snapshot(RpSink *s, RpDelivery *dl, const RpSnapshotCtx *ctx)
{
	RpBuf	   *out = s->priv;

	if (rp_snaplog_chunk(&rp_stdout_snaplog, ctx, out, rp_stdout_write, NULL) < 0)
		return -1;
	return rp_stdout_write(NULL, out);
}

/* The library writes the checkpoint file after this returns. */
static int
rp_stdout_snapshot_complete(RpSink *s, uint64_t lsn)
{
	rp_snaplog_free(&rp_stdout_snaplog);
	return 0;
}

static void
rp_stdout_close(RpSink *s)
{
	rp_buf_free(s->priv);
	rp_free(s->priv);
	rp_free(s);
}

RpSink *
rp_sink_stdout_open(void)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpBuf	   *out = rp_malloc0(sizeof(RpBuf));

	rp_buf_init(out, 64 * 1024);
	s->name = "stdout";
	s->kind = RP_SINK_APPEND_LOG;
	s->owns_checkpoint = false;
	s->priv = out;
	s->handle_transaction = rp_stdout_txn;
	s->handle_message = rp_stdout_message;
	s->close = rp_stdout_close;
	s->handle_snapshot = rp_stdout_snapshot;
	s->handle_snapshot_complete = rp_stdout_snapshot_complete;
	return s;
}
