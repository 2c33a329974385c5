/*
 * rp_agg_edits.c
 *    Edit-stream outputs of aggregate bindings: JSON lines of cell edits to
 *    stdout, a file (appended) or an exec child's standard input.
 *
 *   {"binding":"B","op":"set","lsn":"0/16B3F48","key":{"region":"EU"},"value":"12.50"}
 *   {"binding":"B","op":"remove","lsn":"0/16B3F48","key":{"region":"EU"}}
 *   {"binding":"B","op":"reset","lsn":"0/16B3F48"}
 *
 * A batch writes one edit per touched cell, its final value; values and
 * dimensions are JSON strings (or null) in the column type's text form.
 * A rebuild (at start, after a failure, a TRUNCATE) writes "reset" and
 * then every cell, so a reader that replays the stream from any reset on
 * ends with exactly the current cells.  Lines are written after the
 * destination transaction committed: at-least-once, and whatever a crash
 * loses is overwritten by the reset that the restart writes.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agg/rp_aggstate.h"
#include "base/rp_ckpt.h"
#include "rp_json.h"
#include "base/rp_io.h"
#include "base/rp_status.h"

int
rp_agg_edits_open(RpAggStream *s)
{
	if (s->fd >= 0)
		return 0;
	if (s->kind == RP_AGG_OUT_STDOUT)
		s->fd = STDOUT_FILENO;
	else if (s->kind == RP_AGG_OUT_FILE)
	{
		s->fd = open(s->target, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (s->fd < 0)
			return rp_fail(RP_HALT_SINK, "could not open aggregate edits file \"%s\": %s", s->target,
						   strerror(errno));
	}
	else
	{
		int			p[2];

		if (pipe(p) != 0)
			return rp_fail(RP_HALT_SINK, "could not create a pipe for aggregate edits: %s", strerror(errno));
		s->pid = fork();
		if (s->pid < 0)
			return rp_fail(RP_HALT_SINK, "could not fork for aggregate edits: %s", strerror(errno));
		if (s->pid == 0)
		{
			/*
			 * its own process group, as the exec sink's child
			 * (rp_io_reap_child)
			 */
			setpgid(0, 0);
			dup2(p[0], STDIN_FILENO);
			close(p[0]);
			close(p[1]);
			signal(SIGPIPE, SIG_DFL);
			execl("/bin/sh", "sh", "-c", s->target, (char *) NULL);
			_exit(127);
		}
		close(p[0]);
		fcntl(p[1], F_SETFD, FD_CLOEXEC);
		s->fd = p[1];
	}
	return 0;
}

void
rp_agg_edits_close(RpAggStream *s)
{
	if (s->fd >= 0 && s->fd != STDOUT_FILENO)
		close(s->fd);
	s->fd = -1;
	if (s->pid > 0)
	{
		rp_io_reap_child(s->pid, "aggregate edits child", s->target);
		s->pid = 0;
	}
}

static void
rp_agg_edit_head(RpBuf *out, const RpAggBinding *b, const char *op, uint64_t lsn)
{
	char		l[32];

	rp_lsn_format(lsn, l);
	rp_buf_put_text(out, "{\"binding\":");
	rp_json_string(out, b->name, strlen(b->name));
	rp_buf_put_text(out, ",\"op\":\"");
	rp_buf_put_text(out, op);
	rp_buf_put_text(out, "\",\"lsn\":\"");
	rp_buf_put_text(out, l);
	rp_buf_put_char(out, '"');
}

void
rp_agg_edits_batch(RpAgg *agg, RpAggBinding *b, uint64_t lsn)
{
	RpBuf	   *out = &b->stream->pending;
	RpAggEditIter e;
	RpBuf		value;
	RpFoldCell *c;
	RpFoldResult r;

	rp_buf_init(&value, 64);
	if (b->replace)
	{
		rp_agg_edit_head(out, b, "reset", lsn);
		rp_buf_put_text(out, "}\n");
	}
	memset(&e, 0, sizeof(e));
	while ((c = rp_agg_next_edit(b, &e, &value, &r)) != NULL)
	{
		const char *p = c->label,
				   *end = c->label + c->labellen;

		rp_agg_edit_head(out, b, r == RP_FOLD_REMOVED ? "remove" : "set", lsn);
		rp_buf_put_text(out, ",\"key\":{");
		for (int i = 0; i < b->ndims; i++)
		{
			const char *text;
			uint32_t	len;

			rp_agg_label_next(&p, end, &text, &len);
			if (i)
				rp_buf_put_char(out, ',');
			rp_json_string(out, b->dims[i], strlen(b->dims[i]));
			rp_buf_put_char(out, ':');
			if (text)
				rp_json_string(out, text, len);
			else
				rp_buf_put_text(out, "null");
		}
		rp_buf_put_char(out, '}');
		if (r != RP_FOLD_REMOVED)
		{
			rp_buf_put_text(out, ",\"value\":");
			if (r == RP_FOLD_VALUE)
				rp_json_string(out, value.data, value.len);
			else
				rp_buf_put_text(out, "null");
		}
		rp_buf_put_text(out, "}\n");
		RP_COUNT_ADD(agg->stats.cell_edits, 1);
	}
	rp_buf_free(&value);
}

int
rp_agg_edits_flush(RpAggStream *s)
{
	char		what[600];

	if (s->pending.len == 0)
		return 0;
	if (rp_agg_edits_open(s) < 0)
		return -1;
	snprintf(what, sizeof(what), "aggregate edits %s%s", s->kind == RP_AGG_OUT_FILE ? "file " :
			 s->kind == RP_AGG_OUT_EXEC ? "child " : "", s->kind == RP_AGG_OUT_STDOUT ? "stdout" : s->target);
	if (rp_io_write(s->fd, &s->pending, what) < 0)
		return -1;
	if (s->kind == RP_AGG_OUT_FILE && fdatasync(s->fd) != 0)
		return rp_fail(RP_HALT_SINK, "could not sync %s: %s", what, strerror(errno));
	return 0;
}
