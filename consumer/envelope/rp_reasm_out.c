/*
 * rp_reasm_out.c
 *    What the reassembler writes (see rp_reassemble.h): the kept
 *    snapshot's rows, re-read from their files in seq order, and the
 *    one-line report of a verdict.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "rp_json.h"
#include "base/rp_status.h"
#include "envelope/rp_reasm_int.h"

/*
 * A read window over the input files: rows are mostly in file order, so
 * one pread(2) of a large block serves many of them.
 */
#define ROW_WINDOW ((size_t) 1 << 20)

typedef struct RowWindow
{
	int			file;			/* -1: empty */
	uint64_t	start;
	size_t		len;
	char	   *buf;
	size_t		cap;
} RowWindow;

/* Make [off, off+len) of file available in w; -1 (rp_fail) on error. */
static int
rp_reasm_window_fill(RpReasm *r, RowWindow *w, int *fds, int file, uint64_t off, size_t len)
{
	size_t		want = len > ROW_WINDOW ? len : ROW_WINDOW;
	size_t		got = 0;

	if (w->file == file && off >= w->start && off + len <= w->start + w->len)
		return 0;
	if (fds[file] < 0 && (fds[file] = open(r->paths[file], O_RDONLY | O_CLOEXEC)) < 0)
		return rp_fail(RP_HALT_NONE, "could not open \"%s\": %s", r->paths[file], strerror(errno));
	if (want > w->cap)
	{
		w->cap = want;
		w->buf = rp_realloc(w->buf, w->cap);
	}
	w->file = -1;
	while (got < want)
	{
		ssize_t		n = pread(fds[file], w->buf + got, want - got, (off_t) (off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rp_fail(RP_HALT_NONE, "could not read \"%s\": %s", r->paths[file], strerror(errno));
		if (n == 0)
			break;
		got += (size_t) n;
	}
	if (got < len)
		return rp_fail(RP_HALT_NONE, "\"%s\" changed while it was read (byte %" PRIu64 ")",
					   r->paths[file], off + got);
	w->file = file;
	w->start = off;
	w->len = got;
	return 0;
}

int
rp_reasm_write_rows(RpReasm *r, FILE *out)
{
	RpReasmSnap *s = r->keep_id[0] ? rp_reasm_snap_lookup(r, r->keep_id) : NULL;
	int		   *fds;
	RowWindow	w = {-1, 0, 0, NULL, 0};
	int			rc = 0;

	if (s == NULL)
		return rp_fail(RP_HALT_NONE, "no frame of snapshot %s in the input",
					   r->keep_id[0] ? r->keep_id : "(none chosen)");
	if (s->rep.state != RP_SNAP_COMPLETE)
		return rp_fail(RP_HALT_NONE, "snapshot %s is %s, not complete",
					   s->rep.id, rp_snap_state_name(s->rep.state));
	fds = rp_malloc((size_t) (r->npaths ? r->npaths : 1) * sizeof(int));
	for (int i = 0; i < r->npaths; i++)
		fds[i] = -1;
	for (uint64_t seq = 0; seq < s->rep.row_count; seq++)
	{
		uint64_t	pos = seq < s->loc_cap ? s->loc_pos[seq] : RP_REASM_LOC_NONE;
		uint32_t	len;
		int			file;
		uint64_t	off;

		if (pos == RP_REASM_LOC_NONE)
		{
			rc = rp_fail(RP_HALT_NONE, "snapshot %s: seq %" PRIu64 " not located", s->rep.id, seq);
			break;
		}
		len = s->loc_len[seq];
		if (len == RP_REASM_LOC_STUB)
			continue;			/* an oversize stub: its row is in the
								 * dead-letter file */
		file = (int) (pos >> RP_REASM_FILE_SHIFT);
		off = pos & ((UINT64_C(1) << RP_REASM_FILE_SHIFT) - 1);
		if ((rc = rp_reasm_window_fill(r, &w, fds, file, off, len)) < 0)
			break;
		if (fwrite(w.buf + (off - w.start), 1, len, out) != len || putc('\n', out) == EOF)
		{
			rc = rp_fail(RP_HALT_NONE, "could not write the rows: %s", strerror(errno));
			break;
		}
	}
	if (rc == 0 && fflush(out) != 0)
		rc = rp_fail(RP_HALT_NONE, "could not write the rows: %s", strerror(errno));
	for (int i = 0; i < r->npaths; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	rp_free(fds);
	rp_free(w.buf);
	return rc;
}

const char *
rp_snap_state_name(RpSnapState s)
{
	switch (s)
	{
		case RP_SNAP_COMPLETE:
			return "complete";
		case RP_SNAP_TRUNCATED:
			return "truncated";
		case RP_SNAP_OPEN:
			return "open";
		case RP_SNAP_CONFLICT:
			return "conflict";
	}
	return "unknown";
}

void
rp_reasm_format(const RpSnapReport *rep, RpBuf *out)
{
	const unsigned char *st = (const unsigned char *) rep->store;
	bool		plain = st[0] != '\0';
	char		num[160];

	for (const unsigned char *p = st; *p && plain; p++)
		if (*p <= 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
			plain = false;
	rp_buf_put_text(out, rep->id);
	rp_buf_put_char(out, ' ');
	if (plain)
		rp_buf_put_text(out, rep->store);
	else
		rp_json_cstring(out, rep->store);
	switch (rep->state)
	{
		case RP_SNAP_COMPLETE:
			snprintf(num, sizeof(num), " complete rows=%" PRIu64, rep->row_count);
			break;
		case RP_SNAP_TRUNCATED:
			snprintf(num, sizeof(num), " truncated rows=%" PRIu64 " missing=%" PRIu64
					 " (first missing seq %" PRIu64 ")",
					 rep->row_count, rep->missing, rep->first_missing);
			break;
		case RP_SNAP_OPEN:
			snprintf(num, sizeof(num), " open rows_seen=%" PRIu64, rep->rows_seen);
			break;
		case RP_SNAP_CONFLICT:
			snprintf(num, sizeof(num), " conflict seq=%" PRIu64, rep->conflict_seq);
			break;
	}
	rp_buf_put_text(out, num);
}
