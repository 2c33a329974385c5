/*
 * rp_sink_file.c
 *    The file sink: an append-only JSON-lines log that is effect-once.
 *
 * After each unit (transaction or batch) a checkpoint line is appended and
 * the file is fsynced; the checkpoint therefore lives in the file with the
 * data it covers.  On open, what follows the last checkpoint line is cut
 * off when it is provably a torn tail (a crash between write and fsync:
 * nothing in it was acknowledged), and the resume point is read from that
 * line; anything else there is damage and halts, the file unchanged.
 * SIGHUP reopens the path (log rotation) and starts the new file with the
 * current checkpoint line.  The file is locked (rp_lock.h): one consumer
 * per log.
 */
#include "rp_alloc.h"
#include "rp_lsn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lines/rp_lines.h"
#include "base/rp_io.h"
#include "base/rp_lock.h"
#include "sinks/log/rp_snaplog.h"
#include "sinks/log/rp_snapresume.h"
#include "sinks/log/rp_logsink.h"
#include "base/rp_status.h"

#define RP_FILE_CHUNK (4 * 1024 * 1024)
#define RP_CKPT_PREFIX "{\"kind\":\"checkpoint\","
#define RP_SCAN_CHUNK (64 * 1024)

typedef struct RpFileSink
{
	char	   *path;
	int			fd;
	RpBuf		out;
	bool		have_ck;
	RpCheckpoint ck;
	off_t		committed;		/* file length up to the last checkpoint line */
	RpSnapLog	snaplog;		/* snapshot dumps in progress, and their
								 * limits */
	RpSnapResume resume;		/* a stopped snapshot's durable part (state
								 * directory) */
} RpFileSink;

/*
 * The checkpoint line of ck, newline included, into line[RP_CKPT_LINE_MAX];
 * its length.  A stream's position (ck->source set) adds its source and
 * stream sequence before the closing brace.
 */
#define RP_CKPT_LINE_MAX 1024

static size_t
rp_file_ckpt_format(char *line, const RpCheckpoint *ck)
{
	char		commit[RP_LSN_BUFLEN],
				end[RP_LSN_BUFLEN];
	int			n = snprintf(line, RP_CKPT_LINE_MAX,
							 RP_CKPT_PREFIX "\"system_id\":\"%" PRIu64 "\",\"timeline\":%u,"
							 "\"slot\":\"%s\",\"commit_lsn\":\"%s\",\"end_lsn\":\"%s\"",
							 ck->system_id, ck->timeline, ck->slot,
							 rp_lsn_format(ck->commit_lsn, commit), rp_lsn_format(ck->end_lsn, end));

	if (n > 0 && ck->source[0])
		n += snprintf(line + n, RP_CKPT_LINE_MAX - (size_t) n,
					  ",\"source\":\"%s\",\"source_seq\":%" PRIu64, ck->source, ck->source_seq);
	if (n > 0)
		n += snprintf(line + n, RP_CKPT_LINE_MAX - (size_t) n, "}\n");
	return n < 0 ? 0 : (size_t) n < RP_CKPT_LINE_MAX ? (size_t) n : RP_CKPT_LINE_MAX - 1;
}

static void
rp_file_ckpt_line(RpBuf *out, const RpCheckpoint *ck)
{
	char		line[RP_CKPT_LINE_MAX];

	rp_buf_put_bytes(out, line, rp_file_ckpt_format(line, ck));
}

static bool
rp_file_ckpt_parse(const char *line, RpCheckpoint *ck)
{
	unsigned long long sysid;
	unsigned long long seq = 0;
	unsigned	tli;
	char		slot[RP_SLOT_NAME_MAX];
	char		commit[RP_LSN_BUFLEN],
				end[RP_LSN_BUFLEN];
	char		source[RP_SOURCE_NAME_MAX];
	char		close = '\0';
	int			n;

	memset(ck, 0, sizeof(*ck));
	/* the LSNs as text, then through the one LSN parser (common/rp_lsn.h) */
	n = sscanf(line, RP_CKPT_PREFIX "\"system_id\":\"%llu\",\"timeline\":%u,\"slot\":\"%63[^\"]\","
			   "\"commit_lsn\":\"%17[^\"]\",\"end_lsn\":\"%17[^\"]\"%c",
			   &sysid, &tli, slot, commit, end, &close);
	if (n != 6)
		return false;
	if (close == ',')
	{
		const char *rest = strstr(line, "\"end_lsn\":\"");

		rest = rest ? strchr(rest + strlen("\"end_lsn\":\""), '"') : NULL;
		if (rest == NULL ||
			sscanf(rest, "\",\"source\":\"%271[^\"]\",\"source_seq\":%llu}", source, &seq) != 2)
			return false;
		memcpy(ck->source, source, sizeof(source));
		ck->source_seq = seq;
	}
	else if (close != '}')
		return false;
	if (!rp_lsn_parse(commit, &ck->commit_lsn) || !rp_lsn_parse(end, &ck->end_lsn))
		return false;
	ck->system_id = sysid;
	ck->timeline = tli;
	memcpy(ck->slot, slot, sizeof(slot));
	return true;
}

/*
 * Is there a whole checkpoint line at p (avail bytes readable)?  Only the
 * exact bytes rp_file_ckpt_line() writes count, newline included: sscanf
 * alone would take a line torn inside its end LSN (it stops matching at
 * the first difference, or at a NUL of a block never written) as whole.
 * Returns the line's length, or 0.
 */
static size_t
rp_file_ckpt_match(const char *p, size_t avail, RpCheckpoint *ck)
{
	RpCheckpoint c;
	char		line[RP_CKPT_LINE_MAX];
	size_t		n;

	if (!rp_file_ckpt_parse(p, &c))
		return 0;
	n = rp_file_ckpt_format(line, &c);
	if (n == 0 || n > avail || memcmp(p, line, n) != 0)
		return 0;
	*ck = c;
	return n;
}

/* ---- recovery: is what follows the last checkpoint line a torn tail? ---- */

/*
 * The kinds of the lines the sink writes besides checkpoint lines: the
 * records of rp_render_record (rp_tag_name) and the snapshot envelope's.
 */
static const char *const rp_file_data_kinds[] = {
	"begin", "commit", "origin", "relation", "insert", "update", "delete", "truncate", "message",
	"stream_start", "stream_stop", "stream_commit", "stream_abort", "row", "oversize", "end"
};

#define RP_KIND_OPEN "{\"kind\":\""

/*
 * Does line (len bytes, the line's first bytes) open like a data line?
 * 2: `{"kind":"K"` for a data kind K; 1: line is shorter and a prefix of
 * such an opening; 0: neither.
 */
static int
rp_file_data_opening(const char *line, size_t len)
{
	size_t		ol = strlen(RP_KIND_OPEN);
	int			best = 0;

	if (memcmp(line, RP_KIND_OPEN, len < ol ? len : ol) != 0)
		return 0;
	if (len <= ol)
		return 1;
	for (size_t k = 0; k < sizeof(rp_file_data_kinds) / sizeof(rp_file_data_kinds[0]); k++)
	{
		const char *kind = rp_file_data_kinds[k];
		size_t		kl = strlen(kind);
		size_t		have = len - ol;

		/* the kind, then its closing quote */
		if (have > kl && memcmp(line + ol, kind, kl) == 0 && line[ol + kl] == '"')
			return 2;
		if (have <= kl && memcmp(line + ol, kind, have) == 0)
			best = 1;
	}
	return best;
}

/*
 * The commit LSN a transaction's data line carries right after its kind
 * (rp_lines.c puts the transaction's fields there), into *commit; false for
 * a line without one (a snapshot row, a message, a relation).
 */
static bool
rp_file_line_commit(const char *line, size_t len, uint64_t *commit)
{
	static const char key[] = "\",\"commit_lsn\":\"";
	const char *k = memmem(line, len, key, sizeof(key) - 1);
	const char *v,
			   *q;
	char		lsn[RP_LSN_BUFLEN];

	/* the first member after "kind" */
	if (k == NULL || memchr(line + 1, ',', (size_t) (k - line)) != NULL)
		return false;
	v = k + sizeof(key) - 1;
	q = memchr(v, '"', len - (size_t) (v - line));
	if (q == NULL || (size_t) (q - v) >= sizeof(lsn))
		return false;
	memcpy(lsn, v, (size_t) (q - v));
	lsn[q - v] = '\0';
	return rp_lsn_parse(lsn, commit);
}

/*
 * Is line (len bytes, no newline) the beginning of a checkpoint line as
 * rp_file_ckpt_format writes it?  A template walk: literals, then runs of
 * digits, hex digits or slot characters; each run is followed by a
 * character outside its class, so a greedy walk decides.
 */
static bool
rp_file_ckpt_prefix_of(const char *tmpl, const char *line, size_t len)
{
	size_t		i = 0;

	for (const char *t = tmpl; *t; t++)
	{
		if (*t >= '\001' && *t <= '\004')
		{
			size_t		run = 0;

			while (i < len && line[i] != '\0' &&
				   (*t == '\001' ? strchr("0123456789", line[i]) != NULL :
					*t == '\002' ? strchr("0123456789ABCDEF", line[i]) != NULL :
					line[i] != '"' && line[i] != '\n'))
			{
				i++;
				run++;
			}
			if (run > (*t == '\003' ? RP_SLOT_NAME_MAX - 1 : *t == '\004' ? RP_SOURCE_NAME_MAX - 1 :
					   *t == '\002' ? 8 : 20))
				return false;
			if (i == len)
				return true;
			if (run == 0)
				return false;
			continue;
		}
		if (i == len)
			return true;
		if (line[i++] != *t)
			return false;
	}
	/* the whole line but its newline is a torn write too; more is not */
	return i == len;
}

static bool
rp_file_ckpt_prefix(const char *line, size_t len)
{
	/*
	 * the runs: \001 digits, \002 hex digits, \003 slot, \004 source
	 * characters
	 */
#define RP_CKPT_TMPL RP_CKPT_PREFIX "\"system_id\":\"\001\",\"timeline\":\001,\"slot\":\"\003\"," \
	"\"commit_lsn\":\"\002/\002\",\"end_lsn\":\"\002/\002\""
	static const char slot_tmpl[] = RP_CKPT_TMPL "}";
	static const char stream_tmpl[] = RP_CKPT_TMPL ",\"source\":\"\004\",\"source_seq\":\001}";

	return rp_file_ckpt_prefix_of(slot_tmpl, line, len) ||
		rp_file_ckpt_prefix_of(stream_tmpl, line, len);
}

/* The bytes [from, to) of the file into buf (to - from <= RP_SCAN_CHUNK). */
static int
rp_file_pread(RpFileSink *f, char *buf, off_t from, off_t to)
{
	size_t		n = (size_t) (to - from);

	if (pread(f->fd, buf, n, from) != (ssize_t) n)
		return rp_fail(RP_HALT_SINK, "could not read \"%s\": %s", f->path, strerror(errno));
	return 0;
}

/*
 * Where a run of NUL bytes at the end of the file starts, if it starts on
 * a 512-byte boundary: blocks the file system allocated but whose data
 * never reached the disk before a crash read back as zeros, and such a run
 * begins at a block boundary.  Else size (no such run).
 */
static int
rp_file_zero_tail(RpFileSink *f, char *buf, off_t from, off_t size, off_t *zstart)
{
	off_t		pos = size;

	*zstart = size;
	while (pos > from)
	{
		off_t		start = pos - RP_SCAN_CHUNK > from ? pos - RP_SCAN_CHUNK : from;
		size_t		n = (size_t) (pos - start);
		size_t		z = 0;

		if (rp_file_pread(f, buf, start, pos) < 0)
			return -1;
		while (z < n && buf[n - 1 - z] == '\0')
			z++;
		pos -= (off_t) z;
		if (z < n)
			break;
	}
	if (pos < size && pos % 512 == 0)
		*zstart = pos;
	return 0;
}

/*
 * A whole data line after the last checkpoint line that belongs to a
 * transaction at or below that checkpoint's commit cannot be the torn tail
 * of a later unit: the log and its checkpoint diverge (another writer
 * appended to it, or it was edited).  True after rp_fail.
 */
static bool
rp_file_tail_diverges(RpFileSink *f, const char *head, size_t headlen, off_t line_at)
{
	uint64_t	commit;
	char		a[RP_LSN_BUFLEN],
				b[RP_LSN_BUFLEN];

	if (!f->have_ck || f->ck.commit_lsn == 0 || !rp_file_line_commit(head, headlen, &commit) ||
		commit > f->ck.commit_lsn)
		return false;
	rp_fail(RP_HALT_SINK,
			"file sink log \"%s\" diverges from its last checkpoint line: the line at byte %lld, after it, is of the transaction at commit %s, "
			"which that checkpoint (commit %s) says the log already holds: another writer appended to the log, or it was edited; nothing was cut (docs/operations.md)",
			f->path, (long long) line_at, rp_lsn_format(commit, a), rp_lsn_format(f->ck.commit_lsn, b));
	return true;
}

/*
 * What follows the last checkpoint line (from `from` to `size`) may be cut
 * only if it is the torn tail of a unit that never got its checkpoint line
 * durably, so that nothing in it was acknowledged: whole data lines, then
 * at most one line without its newline that begins like a data line or is
 * the beginning of a checkpoint line, then at most a run of never-written
 * blocks.  A whole line of any other kind (a checkpoint line that does not
 * match, a foreign line) or a NUL byte elsewhere is damage: a damaged
 * checkpoint line may vouch for acknowledged rows before it.  Returns 0 for
 * a torn tail, -1 (after rp_fail) otherwise; reads only.
 */
static int
rp_file_check_tail(RpFileSink *f, char *buf, off_t from, off_t size)
{
	char		head[RP_CKPT_LINE_MAX];
	size_t		headlen = 0;
	off_t		line_at = from,
				zstart,
				pos = from;
	uint64_t	line_len = 0;
	const char *why = NULL;

	if (rp_file_zero_tail(f, buf, from, size, &zstart) < 0)
		return -1;
	while (pos < zstart && why == NULL)
	{
		off_t		end = zstart - pos > RP_SCAN_CHUNK ? pos + RP_SCAN_CHUNK : zstart;
		size_t		n = (size_t) (end - pos);
		char	   *p = buf;

		if (rp_file_pread(f, buf, pos, end) < 0)
			return -1;
		if (memchr(buf, '\0', n) != NULL)
		{
			line_at = pos + (off_t) ((char *) memchr(buf, '\0', n) - buf);
			why = "a NUL byte";
			break;
		}
		while (p < buf + n)
		{
			char	   *nl = memchr(p, '\n', (size_t) (buf + n - p));
			size_t		take = (size_t) ((nl ? nl : buf + n) - p);
			size_t		room = sizeof(head) - headlen;

			memcpy(head + headlen, p, take < room ? take : room);
			headlen += take < room ? take : room;
			line_len += take;
			if (nl == NULL)
				break;
			/* a whole line: only data lines may be cut */
			if (rp_file_data_opening(head, headlen) != 2)
			{
				why = headlen >= strlen(RP_CKPT_PREFIX) &&
					memcmp(head, RP_CKPT_PREFIX, strlen(RP_CKPT_PREFIX)) == 0
					? "a damaged checkpoint line" : "a line the sink does not write";
				break;
			}
			if (rp_file_tail_diverges(f, head, headlen, line_at))
				return -1;
			p = nl + 1;
			line_at = pos + (off_t) (p - buf);
			headlen = 0;
			line_len = 0;
		}
		pos = end;
	}
	/* the last line, without its newline: a write cut short */
	if (why == NULL && line_len > 0 && rp_file_data_opening(head, headlen) == 0 &&
		!(line_len < sizeof(head) && rp_file_ckpt_prefix(head, headlen)))
		why = "an unfinished line the sink does not write";
	if (why == NULL)
		return 0;
	if (from == 0)
		return rp_fail(RP_HALT_SINK,
					   "file sink log \"%s\" is damaged: %s at byte %lld, and no valid checkpoint line: "
					   "not the torn tail of an unacknowledged write, so nothing was cut (docs/operations.md)",
					   f->path, why, (long long) line_at);
	return rp_fail(RP_HALT_SINK,
				   "file sink log \"%s\" is damaged: %s at byte %lld, after the last valid checkpoint line (ending at byte %lld): "
				   "not the torn tail of an unacknowledged write, so nothing was cut (docs/operations.md)",
				   f->path, why, (long long) line_at, (long long) from);
}

/* A unit that failed half-way: drop what it buffered and what it wrote. */
static void
rp_file_abandon(RpFileSink *f)
{
	rp_buf_reset(&f->out);
	if (f->fd >= 0 && ftruncate(f->fd, f->committed) != 0)
	{
		/* the next open cuts the torn tail anyway */
	}
}

static int
rp_file_write(void *arg, RpBuf *out)
{
	RpFileSink *f = arg;

	return rp_io_write(f->fd, out, f->path);
}

/*
 * Find the last complete checkpoint line, scanning backwards from the end,
 * then check what follows it (rp_file_check_tail) and only then cut the
 * file right after it.  No checkpoint line: nothing in the file was ever
 * committed, so it is emptied, if all of it passes the same check.
 */
static int
rp_file_recover(RpFileSink *f)
{
	struct stat sb;
	off_t		size,
				pos;
	char	   *buf = rp_malloc(RP_SCAN_CHUNK + 1);
	off_t		cut = 0;

	f->have_ck = false;
	if (fstat(f->fd, &sb) != 0)
	{
		rp_free(buf);
		return rp_fail(RP_HALT_SINK, "could not stat \"%s\": %s", f->path, strerror(errno));
	}
	size = sb.st_size;
	pos = size;
	while (pos > 0 && !f->have_ck)
	{
		off_t		start = pos > RP_SCAN_CHUNK ? pos - RP_SCAN_CHUNK : 0;
		size_t		n = (size_t) (pos - start);
		ssize_t		r = pread(f->fd, buf, n, start);

		if (r != (ssize_t) n)
		{
			rp_free(buf);
			return rp_fail(RP_HALT_SINK, "could not read \"%s\": %s", f->path, strerror(errno));
		}
		buf[n] = '\0';
		/* line starts in this chunk, last first; a line must end in \n */
		for (ssize_t i = (ssize_t) n - 1; i >= 0 && !f->have_ck; i--)
		{
			if (!((i == 0 && start == 0) || (i > 0 && buf[i - 1] == '\n')))
				continue;
			if (strncmp(buf + i, RP_CKPT_PREFIX, strlen(RP_CKPT_PREFIX)) != 0)
				continue;
			{
				size_t		len = rp_file_ckpt_match(buf + i, n - (size_t) i, &f->ck);

				if (len > 0)
				{
					f->have_ck = true;
					cut = start + (off_t) i + (off_t) len;
				}
			}
		}
		if (start == 0)
			break;
		/* overlap so a checkpoint line split across chunks is seen whole */
		pos = start + RP_CKPT_LINE_MAX;
		if (pos >= size || pos <= start)
			pos = start;
	}

	/*
	 * A stopped snapshot (no checkpoint line since): its frames up to the
	 * recorded offset were made durable chunk by chunk, and stay.
	 */
	if (f->resume.have && (off_t) f->resume.offset > cut)
	{
		if ((off_t) f->resume.offset > size)
		{
			rp_free(buf);
			return rp_fail(RP_HALT_SINK,
						   "file sink log \"%s\" is shorter (%lld bytes) than its stopped snapshot's progress says (%llu bytes): "
						   "not the log that snapshot wrote (docs/operations.md)",
						   f->path, (long long) size, (unsigned long long) f->resume.offset);
		}
		cut = (off_t) f->resume.offset;
	}
	if (cut < size && rp_file_check_tail(f, buf, cut, size) < 0)
	{
		rp_free(buf);
		return -1;
	}
	rp_free(buf);
	f->committed = cut;
	if (cut < size && ftruncate(f->fd, cut) != 0)
		return rp_fail(RP_HALT_SINK, "could not cut the torn tail of \"%s\": %s", f->path,
					   strerror(errno));
	if (cut < size && fsync(f->fd) != 0)
		return rp_fail(RP_HALT_SINK, "could not fsync \"%s\": %s", f->path, strerror(errno));
	return 0;
}

static int
rp_file_open_path(RpFileSink *f)
{
	f->fd = open(f->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (f->fd < 0)
		return rp_fail(RP_HALT_SINK, "could not open \"%s\": %s", f->path, strerror(errno));

	/*
	 * before recovery reads or cuts anything: another consumer may be writing
	 * it
	 */
	if (rp_lock_fd(f->fd, "file sink log", f->path) < 0)
	{
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	return 0;
}

static int
rp_file_commit(RpFileSink *f, const RpCheckpoint *ck)
{
	/*
	 * Data first, then the checkpoint line, each made durable on its own: a
	 * single flush of both could leave the line on disk without the data it
	 * vouches for if the machine fails during that flush.
	 */
	if (rp_file_write(f, &f->out) < 0)
		return -1;
	if (fdatasync(f->fd) != 0)
		return rp_fail(RP_HALT_SINK, "could not fsync \"%s\": %s", f->path, strerror(errno));
	rp_file_ckpt_line(&f->out, ck);
	if (rp_file_write(f, &f->out) < 0)
		return -1;
	if (fdatasync(f->fd) != 0)
		return rp_fail(RP_HALT_SINK, "could not fsync \"%s\": %s", f->path, strerror(errno));
	f->ck = *ck;
	f->have_ck = true;
	/* O_APPEND: the offset is the end of what was written */
	f->committed = lseek(f->fd, 0, SEEK_CUR);
	return 0;
}

static int
rp_file_checkpoint(RpSink *s, RpCheckpoint *ck)
{
	RpFileSink *f = s->priv;

	if (!f->have_ck)
		return 0;
	*ck = f->ck;
	return 1;
}

static int
rp_file_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	RpFileSink *f = s->priv;

	for (int i = 0; i < n; i++)
		if (rp_lines_txn(&f->out, dl, txns[i], RP_FILE_CHUNK, rp_file_write, f) < 0)
		{
			/* no lines of a unit without its checkpoint line (G1) */
			rp_file_abandon(f);
			return -1;
		}
	if (rp_file_commit(f, ck) < 0)
	{
		rp_file_abandon(f);
		return -1;
	}
	return 0;
}

static int
rp_file_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	return rp_file_batch(s, dl, &txn, 1, ck);
}

static int
rp_file_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	RpFileSink *f = s->priv;

	if (rp_lines_message(&f->out, msg, RP_FILE_CHUNK, rp_file_write, f) < 0 ||
		rp_file_commit(f, ck) < 0)
	{
		rp_file_abandon(f);
		return -1;
	}
	return 0;
}

/*
 * Idle advance: the position is recorded by a checkpoint line of its own,
 * so the log still vouches for everything the server is told.  Without it
 * a log fed only by filtered-out WAL would hold WAL forever, and a server
 * shutdown would wait for a confirmation that never comes.
 */
static int
rp_file_advance(RpSink *s, const RpCheckpoint *ck)
{
	RpFileSink *f = s->priv;

	if (rp_file_commit(f, ck) < 0)
	{
		rp_file_abandon(f);
		return -1;
	}
	return 0;
}

/*
 * Snapshot frames are appended as they come and made durable chunk by
 * chunk: the log's length and the tables whose dump ended go to the
 * progress file (rp_snapresume.h), which recovery honours.  A copy that
 * stops resumes with the same command: the tables not done are dumped
 * again whole, the dump that stopped stays open.  At completion the
 * checkpoint line of the consistent point follows.
 */
static int
rp_file_snapshot(RpSink *s, RpDelivery *dl, const RpSnapshotCtx *ctx)
{
	RpFileSink *f = s->priv;
	off_t		end;

	if (rp_snaplog_chunk(&f->snaplog, ctx, &f->out, rp_file_write, f) < 0 ||
		rp_file_write(f, &f->out) < 0)
	{
		rp_file_abandon(f);
		return -1;
	}
	if (f->resume.path == NULL)
		return 0;
	if (fdatasync(f->fd) != 0)
		return rp_fail(RP_HALT_SINK, "could not fsync \"%s\": %s", f->path, strerror(errno));
	end = lseek(f->fd, 0, SEEK_END);
	if (end < 0)
		return rp_fail(RP_HALT_SINK, "could not seek \"%s\": %s", f->path, strerror(errno));
	rp_snapresume_note(&f->resume, ctx->snapshot_lsn, ctx->last_chunk ? ctx->rel->relid : 0);
	f->resume.offset = (uint64_t) end;
	if (rp_snapresume_store(&f->resume) < 0)
		return -1;
	/* what the progress file vouches for is not cut by a failure later */
	f->committed = end;
	return 0;
}

static int
rp_file_snapshot_progress(RpSink *s, const RpRelation *rel, char **token)
{
	return rp_snapresume_token(&((RpFileSink *) s->priv)->resume, rel->relid, token);
}

static int
rp_file_snapshot_complete(RpSink *s, const RpCheckpoint *ck)
{
	RpFileSink *f = s->priv;

	rp_snaplog_reset(&f->snaplog);
	if (rp_file_commit(f, ck) < 0)
	{
		rp_file_abandon(f);
		return -1;
	}
	/* the checkpoint line is durable: the progress is of no more use */
	return rp_snapresume_clear(&f->resume);
}

static int
rp_file_reopen(RpSink *s)
{
	RpFileSink *f = s->priv;
	RpCheckpoint ck = f->ck;
	bool		had_ck = f->have_ck;
	struct stat before,
				after;
	bool		same;

	same = fstat(f->fd, &before) == 0;
	close(f->fd);
	if (rp_file_open_path(f) < 0)
		return -1;
	same = same && fstat(f->fd, &after) == 0 && after.st_dev == before.st_dev &&
		after.st_ino == before.st_ino;

	/*
	 * A rotated log: a snapshot's frames so far stay in the old file (a
	 * reader reads both); the new one's durable length counts from 0.
	 */
	if (!same && f->resume.have)
	{
		f->resume.offset = 0;
		if (rp_snapresume_store(&f->resume) < 0)
			return -1;
	}
	if (rp_file_recover(f) < 0)
		return -1;
	/* a fresh file must carry the position too, or a restart would lose it */
	if (f->have_ck || !had_ck)
		return 0;
	return rp_file_commit(f, &ck);
}

static void
rp_file_close(RpSink *s)
{
	RpFileSink *f = s->priv;

	if (f->fd >= 0)
		close(f->fd);
	rp_buf_free(&f->out);
	rp_snaplog_free(&f->snaplog);
	rp_snapresume_free(&f->resume);
	rp_free(f->path);
	rp_free(f);
	rp_free(s);
}

RpSink	   *
rp_sink_file_open(const char *path, const RpSinkEnv *env)
{
	RpSink	   *s = rp_malloc0(sizeof(RpSink));
	RpFileSink *f = rp_malloc0(sizeof(RpFileSink));

	f->path = rp_strndup(path, strlen(path));
	f->fd = -1;
	rp_snaplog_init(&f->snaplog, env);
	rp_buf_init(&f->out, 64 * 1024);
	s->name = "file";
	s->owns_checkpoint = true;
	s->keeps_floor = true;
	s->priv = f;
	s->checkpoint = rp_file_checkpoint;
	s->handle_transaction = rp_file_txn;
	s->handle_batch = rp_file_batch;
	s->handle_message = rp_file_message;
	s->reopen = rp_file_reopen;
	s->advance = rp_file_advance;
	s->close = rp_file_close;
	s->handle_snapshot = rp_file_snapshot;
	s->handle_snapshot_complete = rp_file_snapshot_complete;
	s->snapshot_progress = rp_file_snapshot_progress;
	if (rp_snapresume_open(&f->resume, env ? env->snapshot_progress_path : NULL) < 0 ||
		rp_file_open_path(f) < 0 || rp_file_recover(f) < 0)
	{
		rp_file_close(s);
		return NULL;
	}
	return s;
}
