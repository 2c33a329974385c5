/*
 * rp_snapresume.c
 *    The log sinks' snapshot progress file (see rp_snapresume.h).
 */
#include "rp_alloc.h"
#include "rp_lsn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rp_buf.h"
#include "base/rp_io.h"
#include "base/rp_status.h"
#include "sinks/log/rp_snapresume.h"
#include "snapshot/rp_snaptoken.h"

#define RP_SNAPRESUME_HEAD "replicant-snapshot-progress 1\n"
#define RP_SNAPRESUME_MAX (1024 * 1024)

char	   *
rp_snapresume_format(const RpSnapResume *sr)
{
	RpBuf		b;
	char		lsn[RP_LSN_BUFLEN];
	char		line[64];

	rp_buf_init(&b, 128);
	rp_buf_put_text(&b, RP_SNAPRESUME_HEAD);
	snprintf(line, sizeof(line), "lsn %s\noffset %" PRIu64 "\n", rp_lsn_format(sr->lsn, lsn),
			 sr->offset);
	rp_buf_put_text(&b, line);
	for (int i = 0; i < sr->ndone; i++)
	{
		snprintf(line, sizeof(line), "done %u\n", sr->done[i]);
		rp_buf_put_text(&b, line);
	}
	rp_buf_put_char(&b, '\0');
	return b.data;
}

/* A decimal number that is all of s: false when not. */
static bool
rp_snapresume_num(const char *s, uint64_t max, uint64_t *v)
{
	char	   *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0' && *v <= max;
}

bool
rp_snapresume_parse(const char *text, RpSnapResume *sr)
{
	const char *p = text;
	bool		have_lsn = false,
				have_off = false;
	int			ndone = 0;
	uint32_t   *done = NULL;

	if (strncmp(p, RP_SNAPRESUME_HEAD, strlen(RP_SNAPRESUME_HEAD)) != 0)
		return false;
	p += strlen(RP_SNAPRESUME_HEAD);
	while (*p)
	{
		const char *nl = strchr(p, '\n');
		char		line[64];
		size_t		len;
		uint64_t	v;

		if (nl == NULL || (len = (size_t) (nl - p)) >= sizeof(line))
			goto bad;
		memcpy(line, p, len);
		line[len] = '\0';
		p = nl + 1;
		if (strncmp(line, "lsn ", 4) == 0 && !have_lsn && ndone == 0)
		{
			if (!rp_lsn_parse(line + 4, &sr->lsn))
				goto bad;
			have_lsn = true;
		}
		else if (strncmp(line, "offset ", 7) == 0 && have_lsn && !have_off)
		{
			if (!rp_snapresume_num(line + 7, INT64_MAX, &sr->offset))
				goto bad;
			have_off = true;
		}
		else if (strncmp(line, "done ", 5) == 0 && have_off)
		{
			if (!rp_snapresume_num(line + 5, UINT32_MAX, &v) || v == 0)
				goto bad;
			done = rp_realloc(done, sizeof(uint32_t) * (size_t) (ndone + 1));
			done[ndone++] = (uint32_t) v;
		}
		else
			goto bad;
	}
	if (!have_off)
		goto bad;
	if (sr->done)
		rp_free(sr->done);
	sr->done = done;
	sr->ndone = ndone;
	sr->have = true;
	return true;

bad:
	if (done)
		rp_free(done);
	return false;
}

int
rp_snapresume_open(RpSnapResume *sr, const char *path)
{
	char	   *buf;
	int			fd;
	ssize_t		n;

	memset(sr, 0, sizeof(*sr));
	if (path == NULL)
		return 0;
	sr->path = rp_strndup(path, strlen(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return 0;
		return rp_fail(RP_HALT_SINK, "could not open \"%s\": %s", path, strerror(errno));
	}
	buf = rp_malloc(RP_SNAPRESUME_MAX + 1);
	n = read(fd, buf, RP_SNAPRESUME_MAX);
	close(fd);
	if (n < 0)
	{
		rp_free(buf);
		return rp_fail(RP_HALT_SINK, "could not read \"%s\": %s", path, strerror(errno));
	}
	buf[n] = '\0';
	if ((size_t) n != strlen(buf) || !rp_snapresume_parse(buf, sr))
	{
		rp_free(buf);
		return rp_fail(RP_HALT_SINK, "the snapshot progress file \"%s\" is damaged (remove it, and drop the slot, to start the snapshot over)",
					   path);
	}
	rp_free(buf);
	return 0;
}

void
rp_snapresume_note(RpSnapResume *sr, uint64_t lsn, uint32_t relid)
{
	if (!sr->have)
	{
		sr->have = true;
		sr->lsn = lsn;
	}
	if (relid != 0 && !rp_snapresume_is_done(sr, relid))
	{
		sr->done = rp_realloc(sr->done, sizeof(uint32_t) * (size_t) (sr->ndone + 1));
		sr->done[sr->ndone++] = relid;
	}
}

bool
rp_snapresume_is_done(const RpSnapResume *sr, uint32_t relid)
{
	for (int i = 0; i < sr->ndone; i++)
		if (sr->done[i] == relid)
			return true;
	return false;
}

int
rp_snapresume_store(RpSnapResume *sr)
{
	char	   *text,
			   *tmp;
	size_t		len;
	int			fd;

	if (sr->path == NULL)
		return 0;
	text = rp_snapresume_format(sr);

	len = strlen(text);
	tmp = rp_malloc(strlen(sr->path) + 5);
	sprintf(tmp, "%s.tmp", sr->path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t) len || fsync(fd) != 0)
	{
		int			err = errno;

		if (fd >= 0)
			close(fd);
		rp_free(text);
		rp_fail(RP_HALT_SINK, "could not write \"%s\": %s", tmp, strerror(err));
		rp_free(tmp);
		return -1;
	}
	close(fd);
	rp_free(text);
	if (rename(tmp, sr->path) != 0)
	{
		rp_fail(RP_HALT_SINK, "could not rename \"%s\" to \"%s\": %s", tmp, sr->path,
				strerror(errno));
		rp_free(tmp);
		return -1;
	}
	rp_free(tmp);
	return rp_io_fsync_dir(sr->path, RP_HALT_SINK);
}

int
rp_snapresume_token(const RpSnapResume *sr, uint32_t relid, char **token)
{
	RpSnapToken tok;

	if (!sr->have)
		return 0;
	memset(&tok, 0, sizeof(tok));
	tok.lsn = sr->lsn;
	tok.done = rp_snapresume_is_done(sr, relid);

	/*
	 * no snapshot_id, no rows, no key: rp_snapshot.c copies the table again
	 * whole
	 */
	*token = rp_snaptoken_format(&tok);
	return 1;
}

int
rp_snapresume_clear(RpSnapResume *sr)
{
	sr->have = false;
	sr->lsn = 0;
	sr->offset = 0;
	sr->ndone = 0;
	if (sr->path && unlink(sr->path) != 0 && errno != ENOENT)
		return rp_fail(RP_HALT_SINK, "could not remove \"%s\": %s", sr->path, strerror(errno));
	return 0;
}

void
rp_snapresume_free(RpSnapResume *sr)
{
	if (sr->path)
		rp_free(sr->path);
	if (sr->done)
		rp_free(sr->done);
	memset(sr, 0, sizeof(*sr));
}
