/*
 * rp_buf.h
 *    A growable byte buffer with big-endian writers: the encoder's output
 *    and the JSON renderer's output.  The inline writers are the hot path of
 *    the plugin, so they do one capacity check and a store.
 */
#ifndef RP_BUF_H
#define RP_BUF_H

#include "rp_alloc.h"

typedef struct RpBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} RpBuf;

extern void rp_buf_init(RpBuf *buf, size_t initial);
extern void rp_buf_free(RpBuf *buf);
extern void rp_buf_grow(RpBuf *buf, size_t need);

static inline void
rp_buf_reset(RpBuf *buf)
{
	buf->len = 0;
}

static inline void
rp_buf_reserve(RpBuf *buf, size_t n)
{
	if (buf->len + n > buf->cap)
		rp_buf_grow(buf, n);
}

static inline void
rp_buf_put_bytes(RpBuf *buf, const void *p, size_t n)
{
	rp_buf_reserve(buf, n);
	memcpy(buf->data + buf->len, p, n);
	buf->len += n;
}

static inline void
rp_buf_put_u8(RpBuf *buf, uint8_t v)
{
	rp_buf_reserve(buf, 1);
	buf->data[buf->len++] = (char) v;
}

static inline void
rp_buf_put_u16(RpBuf *buf, uint16_t v)
{
	unsigned char *p;

	rp_buf_reserve(buf, 2);
	p = (unsigned char *) buf->data + buf->len;
	p[0] = (unsigned char) (v >> 8);
	p[1] = (unsigned char) v;
	buf->len += 2;
}

static inline void
rp_buf_put_u32(RpBuf *buf, uint32_t v)
{
	unsigned char *p;

	rp_buf_reserve(buf, 4);
	p = (unsigned char *) buf->data + buf->len;
	p[0] = (unsigned char) (v >> 24);
	p[1] = (unsigned char) (v >> 16);
	p[2] = (unsigned char) (v >> 8);
	p[3] = (unsigned char) v;
	buf->len += 4;
}

static inline void
rp_buf_put_u64(RpBuf *buf, uint64_t v)
{
	rp_buf_put_u32(buf, (uint32_t) (v >> 32));
	rp_buf_put_u32(buf, (uint32_t) v);
}

static inline void
rp_buf_set_u32_at(RpBuf *buf, size_t at, uint32_t v)
{
	unsigned char *p = (unsigned char *) buf->data + at;

	p[0] = (unsigned char) (v >> 24);
	p[1] = (unsigned char) (v >> 16);
	p[2] = (unsigned char) (v >> 8);
	p[3] = (unsigned char) v;
}

/* A length-prefixed string or byte string: u32 length, bytes. */
static inline void
rp_buf_put_str(RpBuf *buf, const char *s, size_t n)
{
	rp_buf_reserve(buf, 4 + n);
	rp_buf_put_u32(buf, (uint32_t) n);
	memcpy(buf->data + buf->len, s, n);
	buf->len += n;
}

static inline void
rp_buf_put_cstr(RpBuf *buf, const char *s)
{
	rp_buf_put_str(buf, s, strlen(s));
}

/* Plain text, for the JSON renderer. */
static inline void
rp_buf_put_text(RpBuf *buf, const char *s)
{
	rp_buf_put_bytes(buf, s, strlen(s));
}

static inline void
rp_buf_put_char(RpBuf *buf, char c)
{
	rp_buf_reserve(buf, 1);
	buf->data[buf->len++] = c;
}

/* Start a record: tag and a length placeholder; returns where it lives. */
static inline size_t
rp_buf_begin_record(RpBuf *buf, char tag)
{
	size_t		at;

	rp_buf_reserve(buf, 5);
	buf->data[buf->len] = tag;
	at = buf->len + 1;
	buf->len += 5;
	return at;
}

static inline void
rp_buf_end_record(RpBuf *buf, size_t at)
{
	rp_buf_set_u32_at(buf, at, (uint32_t) (buf->len - at - 4));
}

#endif							/* RP_BUF_H */
