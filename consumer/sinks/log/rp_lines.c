/*
 * rp_lines.c
 *    JSON lines of transactions and messages (see rp_lines.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rp_format.h"
#include "rp_json.h"
#include "sinks/log/rp_lines.h"
#include "rp_render.h"
#include "base/rp_status.h"

int
rp_lines_txn(RpBuf *out, RpDelivery *dl, RpTxn *txn, size_t flush_at,
			 int (*flush) (void *arg, RpBuf *out), void *arg)
{
	RpCursor	c;
	RpRecord	rec;
	RpBuf		extra;
	RpRenderOut fo = {.at = flush_at,.flush = flush,.arg = arg};
	int			rc;

	/* the transaction's fields, rendered once and put in every line */
	rp_buf_init(&extra, 128);
	rp_buf_put_text(&extra, "\"commit_lsn\":\"");
	rp_fmt_lsn(&extra, txn->commit_lsn);
	rp_buf_put_text(&extra, "\",\"end_lsn\":\"");
	rp_fmt_lsn(&extra, txn->end_lsn);
	rp_buf_put_text(&extra, "\",\"xid\":");
	rp_fmt_uint64(&extra, txn->xid);
	rp_buf_put_text(&extra, ",\"commit_time\":\"");
	rp_fmt_timestamp(&extra, txn->commit_time, true);
	rp_buf_put_char(&extra, '"');
	if (txn->origin)
	{
		rp_buf_put_text(&extra, ",\"origin\":");
		rp_json_cstring(&extra, txn->origin);
	}
	rp_buf_put_char(&extra, '\0');

	if (rp_cursor_open(&c, dl, txn) < 0)
	{
		rp_buf_free(&extra);
		return -1;
	}
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		/* a stream's per-change xid is the subtransaction's: not for the log */
		if (rec.tag == RP_TAG_INSERT || rec.tag == RP_TAG_UPDATE || rec.tag == RP_TAG_DELETE)
			rec.u.change.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
		else if (rec.tag == RP_TAG_TRUNCATE)
			rec.u.truncate.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
		else if (rec.tag == RP_TAG_MESSAGE)
			rec.u.message.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
		/* a large value goes out slice by slice, never rendered whole (G5) */
		rp_render_record_out(out, &rec, &dl->dec.rels, extra.data, flush ? &fo : NULL);
		rp_buf_put_char(out, '\n');
		if (fo.failed || (out->len >= flush_at && flush && flush(arg, out) < 0))
		{
			rc = -1;
			break;
		}
	}
	rp_cursor_close(&c);
	rp_buf_free(&extra);
	return rc;
}

int
rp_lines_message(RpBuf *out, const RpMessage *msg, size_t flush_at,
				 int (*flush) (void *arg, RpBuf *out), void *arg)
{
	RpRecord	rec;
	RpRenderOut fo = {.at = flush_at,.flush = flush,.arg = arg};

	memset(&rec, 0, sizeof(rec));
	rec.tag = RP_TAG_MESSAGE;
	rec.u.message.lsn = msg->lsn;
	rec.u.message.prefix = msg->prefix;
	rec.u.message.prefix_len = (uint32_t) strlen(msg->prefix);
	rec.u.message.content = msg->content;
	rec.u.message.content_len = msg->content_len;
	rp_render_record_out(out, &rec, NULL, NULL, flush ? &fo : NULL);
	rp_buf_put_char(out, '\n');
	return fo.failed ? -1 : 0;
}

int
rp_lines_write(int fd, RpBuf *out, const char *what)
{
	size_t		off = 0;

	while (off < out->len)
	{
		ssize_t		w = write(fd, out->data + off, out->len - off);

		if (w < 0)
		{
			/* a stop ends a write blocked on a reader that stopped reading (rp_pipe.c) */
			if (errno == EINTR && rp_stop_requested())
				return rp_fail(RP_HALT_NONE, "a stop was requested while writing to %s", what);
			if (errno == EINTR)
				continue;
			return rp_fail(RP_HALT_SINK, "could not write to %s: %s", what, strerror(errno));
		}
		off += (size_t) w;
	}
	rp_buf_reset(out);
	return 0;
}

void
rp_child_reap(pid_t pid, const char *what, const char *command)
{
	int			status = 0;
	int			waited = 0;
	int			sent = 0;		/* 0 none, else the last signal sent */

	for (;;)
	{
		pid_t		r = waitpid(pid, &status, WNOHANG);
		struct timespec ts = {.tv_sec = 0,.tv_nsec = 20 * 1000000L};

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return;
		if (waited >= RP_CHILD_EXIT_GRACE_MS && sent != SIGKILL)
		{
			sent = sent == 0 ? SIGTERM : SIGKILL;
			/* its group (what sh -c started with it), or it alone if it has none */
			if (kill(-pid, sent) != 0)
				kill(pid, sent);
			waited = 0;
		}
		nanosleep(&ts, NULL);
		waited += 20;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && sent == 0)
		return;
	if (WIFEXITED(status))
		fprintf(stderr, "replicant: %s (pid %d, command \"%s\") exited with status %d%s\n",
				what, (int) pid, command, WEXITSTATUS(status), sent ? " after it was signalled" : "");
	else if (WIFSIGNALED(status))
		fprintf(stderr, "replicant: %s (pid %d, command \"%s\") was terminated by signal %d%s\n",
				what, (int) pid, command, WTERMSIG(status),
				sent ? " (it did not exit on end of input)" : "");
}
