/*
 * rp_json.h
 *    The JSON writer's primitives: quoted, escaped strings and keys.
 */
#ifndef RP_JSON_H
#define RP_JSON_H

#include "rp_buf.h"

/*
 * A JSON string from bytes in the server encoding (UTF-8 expected).  Control
 * characters, quote and backslash are escaped; a byte sequence that is not
 * valid UTF-8 is written as U+FFFD so the output is always valid JSON.
 */
extern void rp_json_string(RpBuf *buf, const char *s, size_t len);

/*
 * The inside of such a string, no quotes.  Pieces of a string cut where
 * rp_utf8_cut says escape to the same text as the whole: a long value can
 * be written slice by slice.
 */
extern void rp_json_escape(RpBuf *buf, const char *s, size_t len);

/*
 * How many of the len bytes at s to take (at most max, max >= 4) so that
 * no UTF-8 sequence is cut in two: len itself when len <= max.
 */
extern size_t rp_utf8_cut(const char *s, size_t len, size_t max);

static inline void
rp_json_cstring(RpBuf *buf, const char *s)
{
	rp_json_string(buf, s, strlen(s));
}

/* "key": -- keys are our own ASCII names or column names (escaped). */
static inline void
rp_json_key(RpBuf *buf, const char *key)
{
	rp_json_cstring(buf, key);
	rp_buf_put_char(buf, ':');
}

extern bool rp_utf8_valid(const unsigned char *s, size_t len);

/* Length of the valid UTF-8 sequence at s (at most left bytes), or 0. */
extern size_t rp_utf8_seq(const unsigned char *s, size_t left);

#endif							/* RP_JSON_H */
