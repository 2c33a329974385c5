/*
 * rp_sink_exec.c
 *    The exec sink: a child program (any language) reads the JSON lines on
 *    its standard input.  After each unit the library writes
 *        {"kind":"flush","seq":N,"end_lsn":"X/Y"}
 *    and waits for the child to answer "ack N" on its standard output once
 *    it has durably handled everything before that line; only then does the
 *    checkpoint advance (at-least-once).  A child that exits, closes its
 *    output or answers anything else halts the run.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rp_lines.h"
#include "rp_snaplog.h"
#include "rp_snapshot.h"
#include "rp_sink.h"
#include "rp_status.h"

#define RP_EXEC_CHUNK (1024 * 1024)

typedef struct RpExecSink
{
	char	   *command;
	pid_t		pid;
	int			to_child;
	int			from_child;
	uint64_t	seq;
	RpBuf		out;
	char		reply[256];
	size_t		reply_len;
	RpDelivery *dl;				/* for status updates while waiting */
	RpSnapLog	snaplog;		/* snapshot dumps in progress */
} RpExecSink;

static int
rp_exec_write(void *arg, RpBuf *out)
{
	RpExecSink *x = arg;

	return rp_lines_write(x->to_child, out, "the exec sink's child");
}

/* Wait for "ack N\n", keeping the replication connection alive meanwhile. */
static int
rp_exec_wait_ack(RpExecSink *x, uint64_t seq)
{
	char		expect[64];

	snprintf(expect, sizeof(expect), "ack %" PRIu64, seq);
	for (;;)
	{
		char	   *nl = memchr(x->reply, '\n', x->reply_len);
		struct pollfd pfd = {.fd = x->from_child,.events = POLLIN};
		ssize_t		r;

		if (nl)
		{
			size_t		linelen = (size_t) (nl - x->reply);
			bool		ok = linelen == strlen(expect) && memcmp(x->reply, expect, linelen) == 0;

			memmove(x->reply, nl + 1, x->reply_len - linelen - 1);
			x->reply_len -= linelen + 1;
			if (!ok)
				return rp_fail(RP_HALT_SINK, "exec sink's child answered something other than \"%s\" (%zu bytes)",
							   expect, linelen);
			return 0;
		}
		if (x->reply_len == sizeof(x->reply))
			return rp_fail(RP_HALT_SINK, "exec sink's child sent an over-long line");
		if (poll(&pfd, 1, 1000) == 0)
		{
			if (x->dl)
				rp_deliver_idle(x->dl);
			continue;
		}
		r = read(x->from_child, x->reply + x->reply_len, sizeof(x->reply) - x->reply_len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return rp_fail(RP_HALT_SINK, "exec sink's child closed its output before acknowledging unit %" PRIu64,
						   seq);
		x->reply_len += (size_t) r;
	}
}

static int
rp_exec_flush_unit(RpExecSink *x, const RpCheckpoint *ck)
{
	char		line[128];
	int			n = snprintf(line, sizeof(line), "{\"kind\":\"flush\",\"seq\":%" PRIu64 ",\"end_lsn\":\"%X/%X\"}\n",
							 ++x->seq, (unsigned) (ck->end_lsn >> 32), (unsigned) ck->end_lsn);

	rp_buf_put_bytes(&x->out, line, (size_t) n);
	if (rp_exec_write(x, &x->out) < 0)
		return -1;
	return rp_exec_wait_ack(x, x->seq);
}

static int
rp_exec_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	RpExecSink *x = s->priv;

	x->dl = dl;
	for (int i = 0; i < n; i++)
		if (rp_lines_txn(&x->out, dl, txns[i], RP_EXEC_CHUNK, rp_exec_write, x) < 0)
			return -1;
	return rp_exec_flush_unit(x, ck);
}

static int
rp_exec_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	return rp_exec_batch(s, dl, &txn, 1, ck);
}

static int
rp_exec_snapshot(RpSink *s, RpDelivery *dl, const RpSnapshotCtx *ctx)
{
	RpExecSink *x = s->priv;

	if (rp_snaplog_chunk(&x->snaplog, ctx, &x->out, rp_exec_write, x) < 0)
		return -1;
	return rp_exec_write(x, &x->out);
}

/* The child acknowledges the whole snapshot like a unit: then the checkpoint moves. */
static int
rp_exec_snapshot_complete(RpSink *s, uint64_t lsn)
{
	RpExecSink *x = s->priv;
	RpCheckpoint ck = rp_snap_origin;

	rp_snaplog_free(&x->snaplog);
	ck.commit_lsn = lsn > 0 ? lsn - 1 : 0;
	ck.end_lsn = lsn;
	return rp_exec_flush_unit(x, &ck);
}

static int
rp_exec_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpExecSink *x = s->priv;

	rp_lines_message(&x->out, msg);
	return rp_exec_flush_unit(x, ck);
}

static void
rp_exec_close(RpSink *s)
{
	RpExecSink *x = s->priv;

	if (x->to_child >= 0)
		close(x->to_child);		/* EOF tells the child to finish */
	if (x->from_child >= 0)
		close(x->from_child);
	if (x->pid > 0)
		waitpid(x->pid, NULL, 0);
	rp_buf_free(&x->out);
	rp_free(x->command);
	rp_free(x);
	rp_free(s);
}

RpSink *
rp_sink_exec_open(const char *command)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpExecSink *x = rp_malloc0(sizeof(RpExecSink));
	int			in[2],
				out[2];

	x->command = rp_strndup(command, strlen(command));
	x->to_child = x->from_child = -1;
	rp_buf_init(&x->out, 64 * 1024);
	s->name = "exec";
	s->kind = RP_SINK_APPEND_LOG;
	s->priv = x;
	s->handle_transaction = rp_exec_txn;
	s->handle_batch = rp_exec_batch;
	s->handle_message = rp_exec_message;
	s->close = rp_exec_close;
	s->handle_snapshot = rp_exec_snapshot;
	s->handle_snapshot_complete = rp_exec_snapshot_complete;

	/* a child that dies must surface as a failed write, not kill us */
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
	{
		rp_fail(RP_HALT_SINK, "could not create pipes for the exec sink: %s", strerror(errno));
		rp_exec_close(s);
		return NULL;
	}
	x->pid = fork();
	if (x->pid < 0)
	{
		rp_fail(RP_HALT_SINK, "could not fork the exec sink: %s", strerror(errno));
		rp_exec_close(s);
		return NULL;
	}
	if (x->pid == 0)
	{
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", command, (char *) NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	x->to_child = in[1];
	x->from_child = out[0];
	return s;
}
