/*
 * rp_store.c
 *    Transaction record stores and their spill files (see rp_store.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rp_read.h"
#include "base/rp_counter.h"
#include "base/rp_status.h"
#include "stream/rp_store.h"
#include "rp_wire.h"

#define RP_SPILL_WRITE_BEHIND (1024 * 1024)
#define RP_SPILL_READ_CHUNK (1024 * 1024)

void
rp_store_init(RpStore *st, RpSpill *sp)
{
	memset(st, 0, sizeof(*st));
	st->sp = sp;
	st->fd = -1;
	rp_buf_init(&st->mem, 4096);
}

static int
rp_store_write_all(RpStore *st, const char *p, size_t n)
{
	while (n > 0)
	{
		ssize_t		w = write(st->fd, p, n);

		if (w < 0)
		{
			if (errno == EINTR)
				continue;
			return rp_fail(RP_HALT_NONE, "could not write spill file \"%s\": %s", st->path,
						   strerror(errno));
		}
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

/* Move the in-memory tail to the file. */
static int
rp_store_drain(RpStore *st)
{
	size_t		n = st->mem.len;

	if (n == 0)
		return 0;
	if (RP_COUNT_LOAD(st->sp->disk_in_use) + n > st->sp->max_spill)
		return rp_fail(RP_HALT_SPILL_LIMIT,
					   "spilled transactions would exceed --max-spill (%llu bytes)",
					   (unsigned long long) st->sp->max_spill);
	if (rp_store_write_all(st, st->mem.data, n) < 0)
		return -1;
	st->file_len += n;
	RP_COUNT_ADD(st->sp->disk_in_use, n);
	RP_COUNT_SUB(st->sp->mem_in_use, n);
	rp_buf_reset(&st->mem);

	/*
	 * The buffer grew to the whole in-memory part before the first drain:
	 * from now on it only holds the write-behind tail, and what it kept would
	 * be resident memory --max-memory no longer counts.
	 */
	if (st->mem.cap > 2 * RP_SPILL_WRITE_BEHIND)
	{
		rp_buf_free(&st->mem);
		rp_buf_init(&st->mem, 2 * RP_SPILL_WRITE_BEHIND);
	}
	return 0;
}

static int
rp_store_spill(RpStore *st)
{
	char		path[4096];

	rp_spill_next_path(st->sp, path, sizeof(path));
	st->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, 0600);
	if (st->fd < 0)
		return rp_fail(RP_HALT_NONE, "could not create spill file \"%s\": %s", path,
					   strerror(errno));
	st->path = rp_strndup(path, strlen(path));
	return rp_store_drain(st);
}

/*
 * A large record of a store that is (or now goes) on disk is written from
 * the caller's buffer, after the tail before it: copying it into memory
 * first would hold it twice, past the budget it does not fit.
 */
static int
rp_store_append_direct(RpStore *st, const void *rec, size_t len)
{
	if ((st->fd < 0 ? rp_store_spill(st) : rp_store_drain(st)) < 0)
		return -1;
	if (RP_COUNT_LOAD(st->sp->disk_in_use) + len > st->sp->max_spill)
		return rp_fail(RP_HALT_SPILL_LIMIT,
					   "spilled transactions would exceed --max-spill (%llu bytes)",
					   (unsigned long long) st->sp->max_spill);
	if (rp_store_write_all(st, rec, len) < 0)
		return -1;
	st->file_len += len;
	RP_COUNT_ADD(st->sp->disk_in_use, len);
	return 0;
}

int
rp_store_append(RpStore *st, const void *rec, size_t len)
{
	if (len >= RP_SPILL_WRITE_BEHIND &&
		(st->fd >= 0 || RP_COUNT_LOAD(st->sp->mem_in_use) + len > st->sp->max_memory))
		return rp_store_append_direct(st, rec, len);
	rp_buf_put_bytes(&st->mem, rec, len);
	RP_COUNT_ADD(st->sp->mem_in_use, len);
	if (st->fd >= 0)
	{
		if (st->mem.len >= RP_SPILL_WRITE_BEHIND)
			return rp_store_drain(st);
		return 0;
	}
	if (RP_COUNT_LOAD(st->sp->mem_in_use) > st->sp->max_memory)
		return rp_store_spill(st);
	return 0;
}

uint64_t
rp_store_length(const RpStore *st)
{
	return st->file_len + st->mem.len;
}

int
rp_store_truncate(RpStore *st, uint64_t len)
{
	if (len >= st->file_len)
	{
		size_t		keep = (size_t) (len - st->file_len);

		if (keep < st->mem.len)
		{
			RP_COUNT_SUB(st->sp->mem_in_use, st->mem.len - keep);
			st->mem.len = keep;
		}
		return 0;
	}
	RP_COUNT_SUB(st->sp->mem_in_use, st->mem.len);
	rp_buf_reset(&st->mem);
	if (ftruncate(st->fd, (off_t) len) != 0 || lseek(st->fd, (off_t) len, SEEK_SET) < 0)
		return rp_fail(RP_HALT_NONE, "could not truncate spill file \"%s\": %s", st->path,
					   strerror(errno));
	RP_COUNT_SUB(st->sp->disk_in_use, st->file_len - len);
	st->file_len = len;
	return 0;
}

void
rp_store_free(RpStore *st)
{
	if (st->sp)
		RP_COUNT_SUB(st->sp->mem_in_use, st->mem.len);
	rp_buf_free(&st->mem);
	if (st->fd >= 0)
	{
		close(st->fd);
		unlink(st->path);
		RP_COUNT_SUB(st->sp->disk_in_use, st->file_len);
		st->fd = -1;
	}
	if (st->path)
		rp_free(st->path);
	st->path = NULL;
	st->file_len = 0;
}

int
rp_store_iter_start(RpStoreIter *it, RpStore *st)
{
	memset(it, 0, sizeof(*it));
	it->st = st;
	if (st->fd >= 0)
	{
		if (rp_store_drain(st) < 0)
			return -1;
		rp_buf_init(&it->rbuf, RP_SPILL_READ_CHUNK);
	}
	return 0;
}

/* Make at least need bytes available at it->rbuf[rpos]; false at EOF. */
static int
rp_store_fill(RpStoreIter *it, size_t need)
{
	RpStore    *st = it->st;

	if (it->rbuf.len - it->rpos >= need)
		return 1;
	/* keep the unread tail, then read behind it */
	memmove(it->rbuf.data, it->rbuf.data + it->rpos, it->rbuf.len - it->rpos);
	it->rbuf.len -= it->rpos;
	it->rpos = 0;
	if (need > it->rbuf.cap)
		rp_buf_grow(&it->rbuf, need - it->rbuf.len);
	while (it->rbuf.len < need)
	{
		size_t		room = it->rbuf.cap - it->rbuf.len;
		ssize_t		r = pread(st->fd, it->rbuf.data + it->rbuf.len, room, (off_t) it->fpos);

		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			return rp_fail(RP_HALT_NONE, "could not read spill file \"%s\": %s", st->path,
						   strerror(errno));
		}
		if (r == 0)
			return 0;
		it->rbuf.len += (size_t) r;
		it->fpos += (uint64_t) r;
	}
	return 1;
}

int
rp_store_iter_next(RpStoreIter *it, const unsigned char **rec, size_t *len)
{
	RpStore    *st = it->st;
	uint32_t	plen;
	int			rc;

	if (st->fd < 0)
	{
		if (it->mpos >= st->mem.len)
			return 0;
		if (st->mem.len - it->mpos < RP_RECORD_HEADER_LEN)
			return rp_fail(RP_HALT_MALFORMED, "stored transaction ends inside a record header");
		plen = rp_load_u32((const unsigned char *) st->mem.data + it->mpos + 1);
		if (st->mem.len - it->mpos - RP_RECORD_HEADER_LEN < plen)
			return rp_fail(RP_HALT_MALFORMED, "stored transaction ends inside a record");
		*rec = (const unsigned char *) st->mem.data + it->mpos;
		*len = RP_RECORD_HEADER_LEN + plen;
		it->mpos += *len;
		return 1;
	}
	if (it->fpos >= st->file_len && it->rpos >= it->rbuf.len)
		return 0;
	rc = rp_store_fill(it, RP_RECORD_HEADER_LEN);
	if (rc <= 0)
		return rc < 0 ? -1 : rp_fail(RP_HALT_MALFORMED, "spill file \"%s\" ends inside a record header", st->path);
	plen = rp_load_u32((const unsigned char *) it->rbuf.data + it->rpos + 1);
	rc = rp_store_fill(it, RP_RECORD_HEADER_LEN + (size_t) plen);
	if (rc <= 0)
		return rc < 0 ? -1 : rp_fail(RP_HALT_MALFORMED, "spill file \"%s\" ends inside a record", st->path);
	*rec = (const unsigned char *) it->rbuf.data + it->rpos;
	*len = RP_RECORD_HEADER_LEN + plen;
	it->rpos += *len;
	return 1;
}

void
rp_store_iter_end(RpStoreIter *it)
{
	if (it->rbuf.data)
		rp_buf_free(&it->rbuf);
}
