/*
 * rp_sink_exec.c
 *    The exec sink: a child program (any language) reads the JSON lines on
 *    its standard input.  After each unit the library writes
 *        {"kind":"flush","seq":N,"end_lsn":"X/Y"}
 *    and waits for the child to answer "ack N" on its standard output once
 *    it has durably handled everything before that line; only then does the
 *    checkpoint advance (at-least-once).  A child that exits, closes its
 *    output, answers anything else or neither reads nor acknowledges for
 *    the acknowledgement timeout halts the run, naming its command and pid.
 *    A stop (SIGINT, SIGTERM) ends every wait on the child at once: the
 *    unit it has not acknowledged is not confirmed, and comes again.
 */
#include "rp_alloc.h"
#include "rp_lsn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/rp_clock.h"
#include "lines/rp_lines.h"
#include "base/rp_io.h"
#include "sinks/log/rp_snaplog.h"
#include "sinks/log/rp_snapresume.h"
#include "sinks/log/rp_logsink.h"
#include "base/rp_status.h"

#define RP_EXEC_CHUNK (1024 * 1024)
/* how often a wait on the child looks at the stop flag and the clock */
#define RP_EXEC_POLL_MS 100

typedef struct RpExecSink
{
	char	   *command;
	pid_t		pid;
	int			ack_timeout_s;	/* 0: wait for ever */
	int			to_child;
	int			from_child;
	uint64_t	seq;
	RpBuf		out;
	char		reply[256];
	size_t		reply_len;
	RpDelivery *dl;				/* for status updates while waiting */
	RpSnapLog	snaplog;		/* snapshot dumps in progress, and their
								 * limits */
	RpSnapResume resume;		/* a stopped snapshot's progress (state
								 * directory) */
} RpExecSink;

/*
 * One slice of a wait on the child (fd ready for events): 1 ready, 0 not
 * yet, -1 (failed) once a stop is requested or the acknowledgement timeout,
 * counted from started_ms, is over.  what: what the child has not done.
 */
static int
rp_exec_poll(RpExecSink *x, int fd, short events, int64_t started_ms, const char *what)
{
	struct pollfd pfd = {.fd = fd,.events = events};
	int			r;

	if (rp_stop_requested())
		return rp_fail(RP_HALT_NONE, "a stop was requested while the exec sink's child (pid %d, command \"%s\") had not %s",
					   (int) x->pid, x->command, what);
	if (x->ack_timeout_s > 0 && rp_clock_mono_ms() - started_ms >= (int64_t) x->ack_timeout_s * 1000)
		return rp_fail(RP_HALT_SINK, "exec sink's child (pid %d, command \"%s\") has not %s for %d s (--exec-ack-timeout)",
					   (int) x->pid, x->command, what, x->ack_timeout_s);
	r = poll(&pfd, 1, RP_EXEC_POLL_MS);
	if (r < 0 && errno != EINTR)
		return rp_fail(RP_HALT_SINK, "poll on the exec sink's child failed: %s", strerror(errno));
	if (r <= 0)
	{
		if (x->dl)
			rp_deliver_idle(x->dl);
		return 0;
	}
	return 1;
}

/* Everything in out to the child's input (non-blocking: a child that stops reading is waited on in slices). */
static int
rp_exec_write(void *arg, RpBuf *out)
{
	RpExecSink *x = arg;
	size_t		off = 0;
	int64_t		started = rp_clock_mono_ms();

	while (off < out->len)
	{
		ssize_t		w = write(x->to_child, out->data + off, out->len - off);
		int			r;

		if (w >= 0)
		{
			off += (size_t) w;
			started = rp_clock_mono_ms();
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return rp_fail(RP_HALT_SINK, "could not write to exec sink's child (pid %d, command \"%s\"): %s",
						   (int) x->pid, x->command, strerror(errno));
		while ((r = rp_exec_poll(x, x->to_child, POLLOUT, started, "read its input")) == 0)
			;
		if (r < 0)
			return -1;
	}
	rp_buf_reset(out);
	return 0;
}

/* Wait for "ack N\n", keeping the replication connection alive meanwhile. */
static int
rp_exec_wait_ack(RpExecSink *x, uint64_t seq)
{
	char		expect[64];
	char		what[64];
	int64_t		started = rp_clock_mono_ms();

	snprintf(expect, sizeof(expect), "ack %" PRIu64, seq);
	snprintf(what, sizeof(what), "acknowledged unit %" PRIu64, seq);
	for (;;)
	{
		char	   *nl = memchr(x->reply, '\n', x->reply_len);
		ssize_t		r;
		int			ready;

		if (nl)
		{
			size_t		linelen = (size_t) (nl - x->reply);
			bool		ok = linelen == strlen(expect) && memcmp(x->reply, expect, linelen) == 0;

			memmove(x->reply, nl + 1, x->reply_len - linelen - 1);
			x->reply_len -= linelen + 1;
			if (!ok)
				return rp_fail(RP_HALT_SINK, "exec sink's child answered something other than \"%s\" (%zu bytes; pid %d, command \"%s\")",
							   expect, linelen, (int) x->pid, x->command);
			return 0;
		}
		if (x->reply_len == sizeof(x->reply))
			return rp_fail(RP_HALT_SINK, "exec sink's child sent an over-long line (pid %d, command \"%s\")",
						   (int) x->pid, x->command);
		if ((ready = rp_exec_poll(x, x->from_child, POLLIN, started, what)) < 0)
			return -1;
		if (ready == 0)
			continue;
		r = read(x->from_child, x->reply + x->reply_len, sizeof(x->reply) - x->reply_len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return rp_fail(RP_HALT_SINK, "exec sink's child closed its output before acknowledging unit %" PRIu64 " (pid %d, command \"%s\")",
						   seq, (int) x->pid, x->command);
		x->reply_len += (size_t) r;
	}
}

static int
rp_exec_flush_unit(RpExecSink *x, const RpCheckpoint *ck)
{
	char		line[128],
				end[RP_LSN_BUFLEN];
	int			n = snprintf(line, sizeof(line), "{\"kind\":\"flush\",\"seq\":%" PRIu64 ",\"end_lsn\":\"%s\"}\n",
							 ++x->seq, rp_lsn_format(ck->end_lsn, end));

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

	bool		first = !x->resume.have;

	if (rp_snaplog_chunk(&x->snaplog, ctx, &x->out, rp_exec_write, x) < 0 ||
		rp_exec_write(x, &x->out) < 0)
		return -1;
	if (ctx->last_chunk)
	{
		/*
		 * A table is done once the child acknowledged its end frame: a flush
		 * line with no stream position (0/0) asks for that.
		 */
		RpCheckpoint none;

		memset(&none, 0, sizeof(none));
		if (rp_exec_flush_unit(x, &none) < 0)
			return -1;
	}
	else if (!first)
		return 0;
	rp_snapresume_note(&x->resume, ctx->snapshot_lsn, ctx->last_chunk ? ctx->rel->relid : 0);
	return rp_snapresume_store(&x->resume);
}

static int
rp_exec_snapshot_progress(RpSink *s, const RpRelation *rel, char **token)
{
	return rp_snapresume_token(&((RpExecSink *) s->priv)->resume, rel->relid, token);
}

/* The child acknowledges the whole snapshot like a unit: then the checkpoint moves. */
static int
rp_exec_snapshot_complete(RpSink *s, const RpCheckpoint *ck)
{
	RpExecSink *x = s->priv;

	rp_snaplog_reset(&x->snaplog);
	return rp_exec_flush_unit(x, ck);
}

static int
rp_exec_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpExecSink *x = s->priv;

	if (rp_lines_message(&x->out, msg, RP_EXEC_CHUNK, rp_exec_write, x) < 0)
		return -1;
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
		rp_io_reap_child(x->pid, "exec sink's child", x->command);
	rp_buf_free(&x->out);
	rp_snaplog_free(&x->snaplog);
	rp_snapresume_free(&x->resume);
	rp_free(x->command);
	rp_free(x);
	rp_free(s);
}

RpSink	   *
rp_sink_exec_open(const char *command, int ack_timeout_s, const RpSinkEnv *env)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpExecSink *x = rp_malloc0(sizeof(RpExecSink));
	int			in[2],
				out[2];

	x->command = rp_strndup(command, strlen(command));
	x->to_child = x->from_child = -1;
	x->ack_timeout_s = ack_timeout_s;
	rp_snaplog_init(&x->snaplog, env);
	rp_buf_init(&x->out, 64 * 1024);
	s->name = "exec";
	s->keeps_floor = true;
	s->priv = x;
	s->handle_transaction = rp_exec_txn;
	s->handle_batch = rp_exec_batch;
	s->handle_message = rp_exec_message;
	s->close = rp_exec_close;
	s->handle_snapshot = rp_exec_snapshot;
	s->handle_snapshot_complete = rp_exec_snapshot_complete;
	s->snapshot_progress = rp_exec_snapshot_progress;
	if (rp_snapresume_open(&x->resume, env ? env->snapshot_progress_path : NULL) < 0)
	{
		rp_exec_close(s);
		return NULL;
	}

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
		/*
		 * Its own process group: a terminal's ^C is the consumer's to handle
		 * (it closes the child's input), and the child gets the default
		 * SIGPIPE back.
		 */
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", command, (char *) NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	x->to_child = in[1];
	x->from_child = out[0];
	/* writes wait in slices (rp_exec_write), never blocked in write() */
	if (fcntl(x->to_child, F_SETFL, fcntl(x->to_child, F_GETFL) | O_NONBLOCK) != 0)
	{
		rp_fail(RP_HALT_SINK, "could not make the exec sink's pipe non-blocking: %s", strerror(errno));
		rp_exec_close(s);
		return NULL;
	}
	return s;
}
