/*
 * rp_read.h
 *    A bounded big-endian reader.  Every get checks the remaining length
 *    first and latches a failure instead of reading past the end, so a
 *    decoder can read a whole record and test ok once (fail-closed).
 */
#ifndef RP_READ_H
#define RP_READ_H

#include "rp_alloc.h"

typedef struct RpReader
{
	const unsigned char *p;
	const unsigned char *end;
	bool		ok;
} RpReader;

static inline void
rp_reader_init(RpReader *r, const void *data, size_t len)
{
	r->p = (const unsigned char *) data;
	r->end = r->p + len;
	r->ok = true;
}

static inline size_t
rp_reader_left(const RpReader *r)
{
	return (size_t) (r->end - r->p);
}

static inline bool
rp_need(RpReader *r, size_t n)
{
	if (!r->ok || rp_reader_left(r) < n)
	{
		r->ok = false;
		return false;
	}
	return true;
}

static inline uint8_t
rp_get_u8(RpReader *r)
{
	if (!rp_need(r, 1))
		return 0;
	return *r->p++;
}

static inline uint16_t
rp_get_u16(RpReader *r)
{
	uint16_t	v;

	if (!rp_need(r, 2))
		return 0;
	v = (uint16_t) ((r->p[0] << 8) | r->p[1]);
	r->p += 2;
	return v;
}

static inline uint32_t
rp_get_u32(RpReader *r)
{
	uint32_t	v;

	if (!rp_need(r, 4))
		return 0;
	v = ((uint32_t) r->p[0] << 24) | ((uint32_t) r->p[1] << 16) |
		((uint32_t) r->p[2] << 8) | (uint32_t) r->p[3];
	r->p += 4;
	return v;
}

static inline uint64_t
rp_get_u64(RpReader *r)
{
	uint64_t	hi = rp_get_u32(r);

	return (hi << 32) | rp_get_u32(r);
}

/* Borrow n bytes in place; NULL (and ok = false) when fewer remain. */
static inline const unsigned char *
rp_get_bytes(RpReader *r, size_t n)
{
	const unsigned char *p;

	if (!rp_need(r, n))
		return NULL;
	p = r->p;
	r->p += n;
	return p;
}

/* A u32-length-prefixed string, borrowed in place. */
static inline const char *
rp_get_str(RpReader *r, uint32_t *len)
{
	*len = rp_get_u32(r);
	return (const char *) rp_get_bytes(r, *len);
}

/* Big-endian loads from a slice already checked for length. */
static inline uint32_t
rp_load_u32(const unsigned char *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

static inline uint64_t
rp_load_u64(const unsigned char *p)
{
	return ((uint64_t) rp_load_u32(p) << 32) | rp_load_u32(p + 4);
}

static inline uint16_t
rp_load_u16(const unsigned char *p)
{
	return (uint16_t) ((p[0] << 8) | p[1]);
}

#endif							/* RP_READ_H */
