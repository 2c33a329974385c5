/*
 * rp_buf.c
 *    Growth of RpBuf (the writers are inline in rp_buf.h).
 */
#include "rp_alloc.h"
#include "rp_buf.h"

void
rp_buf_init(RpBuf *buf, size_t initial)
{
	buf->cap = initial ? initial : 256;
	buf->data = rp_malloc(buf->cap);
	buf->len = 0;
}

void
rp_buf_free(RpBuf *buf)
{
	if (buf->data)
		rp_free(buf->data);
	buf->data = NULL;
	buf->len = buf->cap = 0;
}

/* Double until the pending write of need bytes fits. */
void
rp_buf_grow(RpBuf *buf, size_t need)
{
	size_t		cap = buf->cap ? buf->cap : 256;

	while (buf->len + need > cap)
		cap *= 2;
	buf->data = buf->data ? rp_realloc(buf->data, cap) : rp_malloc(cap);
	buf->cap = cap;
}
