/*
 * rp_sink_stdout.c
 *    The stdout sink: JSON lines on standard output.  At-least-once: the
 *    library's checkpoint file is written after each unit is flushed.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "lines/rp_lines.h"
#include "base/rp_io.h"
#include "sinks/log/rp_snaplog.h"
#include "sinks/log/rp_snapresume.h"
#include "sinks/log/rp_logsink.h"
#include "base/rp_status.h"

#define RP_STDOUT_CHUNK (1024 * 1024)

static int
rp_stdout_write(void *arg, RpBuf *out)
{
	return rp_io_write(STDOUT_FILENO, out, "standard output");
}

/* The sink's state: the lines being written, and the snapshot dumps. */
typedef struct RpStdoutSink
{
	RpBuf		out;
	/* snapshot dumps as envelope frames */
	RpSnapLog	snaplog;

	/*
	 * a stopped snapshot's progress, in the state directory (the log is not
	 * read back)
	 */
	RpSnapResume resume;
} RpStdoutSink;

static int
rp_stdout_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	RpBuf	   *out = &((RpStdoutSink *) s->priv)->out;

	if (rp_lines_txn(out, dl, txn, RP_STDOUT_CHUNK, rp_stdout_write, NULL) < 0)
		return -1;
	return rp_stdout_write(NULL, out);
}

static int
rp_stdout_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpBuf	   *out = &((RpStdoutSink *) s->priv)->out;

	if (rp_lines_message(out, msg, RP_STDOUT_CHUNK, rp_stdout_write, NULL) < 0)
		return -1;
	return rp_stdout_write(NULL, out);
}

static int
rp_stdout_snapshot(RpSink *s, RpDelivery *dl, const RpSnapshotCtx *ctx)
{
	RpStdoutSink *so = s->priv;

	bool		first = !so->resume.have;

	if (rp_snaplog_chunk(&so->snaplog, ctx, &so->out, rp_stdout_write, NULL) < 0 ||
		rp_stdout_write(NULL, &so->out) < 0)
		return -1;
	/* written: a table whose end frame is out is done (at-least-once) */
	if (!first && !ctx->last_chunk)
		return 0;
	rp_snapresume_note(&so->resume, ctx->snapshot_lsn, ctx->last_chunk ? ctx->rel->relid : 0);
	return rp_snapresume_store(&so->resume);
}

static int
rp_stdout_snapshot_progress(RpSink *s, const RpRelation *rel, char **token)
{
	return rp_snapresume_token(&((RpStdoutSink *) s->priv)->resume, rel->relid, token);
}

/*
 * The library writes the checkpoint file after this returns, and removes
 * the progress file after that (rp_cli_snapshot.c).
 */
static int
rp_stdout_snapshot_complete(RpSink *s, const RpCheckpoint *ck)
{
	RpStdoutSink *so = s->priv;

	rp_snaplog_reset(&so->snaplog);
	return 0;
}

static void
rp_stdout_close(RpSink *s)
{
	RpStdoutSink *so = s->priv;

	rp_buf_free(&so->out);
	rp_snaplog_free(&so->snaplog);
	rp_snapresume_free(&so->resume);
	rp_free(so);
	rp_free(s);
}

RpSink	   *
rp_sink_stdout_open(const RpSinkEnv *env)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpStdoutSink *so = rp_malloc0(sizeof(RpStdoutSink));

	rp_buf_init(&so->out, 64 * 1024);
	rp_snaplog_init(&so->snaplog, env);
	s->name = "stdout";
	s->owns_checkpoint = false;
	s->keeps_floor = true;
	s->priv = so;
	s->handle_transaction = rp_stdout_txn;
	s->handle_message = rp_stdout_message;
	s->close = rp_stdout_close;
	s->handle_snapshot = rp_stdout_snapshot;
	s->handle_snapshot_complete = rp_stdout_snapshot_complete;
	s->snapshot_progress = rp_stdout_snapshot_progress;
	if (rp_snapresume_open(&so->resume, env ? env->snapshot_progress_path : NULL) < 0)
	{
		rp_stdout_close(s);
		return NULL;
	}
	return s;
}
