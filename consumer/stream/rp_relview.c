/*
 * rp_relview.c
 *    The persisted relation view (see rp_relview.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rp_status.h"
#include "stream/rp_deliver.h"
#include "stream/rp_relview.h"

int
rp_relview_load(RpDelivery *dl)
{
	int			fd = open(dl->view_path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	RpRecord	rec;
	int			rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : rp_fail(RP_HALT_NONE, "could not open \"%s\": %s",
											 dl->view_path, strerror(errno));
	if (fstat(fd, &sb) != 0)
	{
		close(fd);
		return rp_fail(RP_HALT_NONE, "could not stat \"%s\": %s", dl->view_path, strerror(errno));
	}
	rp_buf_reset(&dl->view);
	rp_buf_reserve(&dl->view, (size_t) sb.st_size);
	if (read(fd, dl->view.data, (size_t) sb.st_size) != sb.st_size)
	{
		close(fd);
		return rp_fail(RP_HALT_NONE, "could not read \"%s\"", dl->view_path);
	}
	close(fd);
	dl->view.len = (size_t) sb.st_size;
	rp_decoder_records(&dl->dec, dl->view.data, dl->view.len);
	while ((rc = rp_decoder_next(&dl->dec, &rec)) > 0)
	{
		/* relation records only: rp_relview_put() reads each one's relid */
		if (rec.tag != RP_TAG_RELATION)
			return rp_fail(RP_HALT_MALFORMED, "relation view \"%s\" holds a %s record",
						   dl->view_path, rp_tag_name(rec.tag));
		rp_relation_free(rec.u.relation.previous);
	}
	if (rc < 0)
		return rp_fail(RP_HALT_MALFORMED, "relation view \"%s\" is damaged: %s", dl->view_path,
					   dl->dec.error);
	return 0;
}

int
rp_relview_save(RpDelivery *dl)
{
	char		tmp[4096];
	int			fd;
	ssize_t		w;

	if (!dl->view_dirty || dl->view_path == NULL)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", dl->view_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return rp_fail(RP_HALT_NONE, "could not create \"%s\": %s", tmp, strerror(errno));
	w = write(fd, dl->view.data, dl->view.len);
	if (w != (ssize_t) dl->view.len || fsync(fd) != 0)
	{
		close(fd);
		return rp_fail(RP_HALT_NONE, "could not write \"%s\"", tmp);
	}
	close(fd);
	if (rename(tmp, dl->view_path) != 0)
		return rp_fail(RP_HALT_NONE, "could not rename \"%s\": %s", tmp, strerror(errno));
	dl->view_dirty = false;
	return 0;
}

void
rp_relview_put(RpDelivery *dl, uint32_t relid, const unsigned char *raw, size_t len)
{
	RpBuf		next;
	size_t		pos = 0;

	rp_buf_init(&next, dl->view.len + len);
	while (pos + RP_RECORD_HEADER_LEN <= dl->view.len)
	{
		const unsigned char *p = (const unsigned char *) dl->view.data + pos;
		size_t		rlen = RP_RECORD_HEADER_LEN + rp_load_u32(p + 1);

		if (rp_load_u32(p + RP_RECORD_HEADER_LEN) != relid)
			rp_buf_put_bytes(&next, p, rlen);
		pos += rlen;
	}
	rp_buf_put_bytes(&next, raw, len);
	rp_buf_free(&dl->view);
	dl->view = next;
	dl->view_dirty = true;
}
