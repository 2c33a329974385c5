/*
 * rp_jsonread.h
 *    A minimal, strict JSON reader (RFC 8259) for JSON lines the consumer
 *    reads back: the snapshot reassembler (rp_reassemble.h) and tests.
 *
 * No tree is built.  rp_jr_parse() validates one whole JSON text and, when
 * it is an object, records the raw text span of each top-level member's
 * key and value; callers look members up by name and convert the few they
 * need (strings, integers) or keep a nested value's span as it is (the
 * "record" object of a snapshot frame).
 *
 * Strict: exactly one value, surrounded only by JSON whitespace (space, tab,
 * LF, CR); no trailing commas, comments, single quotes, leading zeros,
 * leading "+", bare "." or NaN/Infinity; strings hold valid UTF-8, no raw
 * control characters, only the eight escapes of RFC 8259, and every \u
 * surrogate in a high/low pair (a lone surrogate has no UTF-8 form, so it
 * is rejected).  Nesting is not limited (the parser keeps its stack of open
 * containers on the heap): whatever PostgreSQL's json accepts is read.  A
 * duplicated top-level name is accepted by the parser and reported by
 * rp_jr_find() (RFC 8259 leaves it to the reader; ours refuses to guess).
 *
 * Errors follow rp_status.h: -1 after rp_fail(RP_HALT_MALFORMED, ...) with a
 * value-free message (a reason and a byte offset), also left in RpJrError.
 */
#ifndef RP_JSONREAD_H
#define RP_JSONREAD_H

#include "rp_buf.h"

typedef enum RpJrType
{
	RP_JR_NULL,
	RP_JR_FALSE,
	RP_JR_TRUE,
	RP_JR_NUMBER,
	RP_JR_STRING,
	RP_JR_ARRAY,
	RP_JR_OBJECT
} RpJrType;

/* One top-level member: raw spans into the parsed text. */
typedef struct RpJrMember
{
	const char *key;			/* between the quotes, escapes not decoded */
	size_t		key_len;
	bool		key_escaped;	/* the key holds a backslash escape */
	RpJrType	type;
	const char *val;			/* the value's text, quotes/brackets included */
	size_t		val_len;
} RpJrMember;

typedef struct RpJrError
{
	size_t		offset;			/* byte offset of the error in the text */
	const char *reason;			/* a static, value-free phrase */
} RpJrError;

/* The parse of one JSON text.  Members are set when the text is an object. */
typedef struct RpJrDoc
{
	RpJrType	type;			/* of the top-level value */
	RpJrMember *members;
	int			nmembers;
	int			cap;
	RpJrError	err;
} RpJrDoc;

extern void rp_jr_init(RpJrDoc *doc);
extern void rp_jr_free(RpJrDoc *doc);

/* Validate text[0..len) as one JSON text; 0, or -1 (doc->err says why). */
extern int	rp_jr_parse(RpJrDoc *doc, const char *text, size_t len);

/*
 * The top-level member called name (compared after decoding the key's
 * escapes): 1 found (*m set), 0 absent or the text is not an object, -1 the
 * name occurs more than once (rp_fail).
 */
extern int	rp_jr_find(const RpJrDoc *doc, const char *name, const RpJrMember **m);

/*
 * Decode a string value's span (quotes included, as in RpJrMember.val) to
 * UTF-8, appended to out; 0, or -1 when the span is not a valid string.
 */
extern int	rp_jr_string(const char *val, size_t len, RpBuf *out);

/* A number span that is an integer (no fraction or exponent) within int64: 0 or -1. */
extern int	rp_jr_int64(const char *val, size_t len, int64_t *out);

/* Does the string span (quotes included) decode to exactly s? */
extern bool rp_jr_string_eq(const char *val, size_t len, const char *s);

extern const char *rp_jr_type_name(RpJrType t);

#endif							/* RP_JSONREAD_H */
