/*
 * rp_pgbin.h
 *    Pre-cast values to PostgreSQL's binary send format, for COPY ... (FORMAT
 *    binary) on the destination.
 *
 * replicant's encodings are, by design, PostgreSQL's send formats give or
 * take an epoch (1970 here, 2000 there), a length prefix and a sign
 * convention, so most values cross with a copy; the destination then skips
 * its input parsers (timestamps, numerics) altogether.  Binary input is
 * strict about types: a column qualifies only when its type is a built-in
 * one the destination column has too (rp_pgbin_column_ok plus an OID
 * comparison by the caller); anything else (text-encoded types, enums,
 * domains, composites, ranges, arrays of those) keeps the text path.
 */
#ifndef RP_PGBIN_H
#define RP_PGBIN_H

#include <stdbool.h>

#include "rp_buf.h"
#include "rp_decode.h"

/* Whether a column of this description can be sent in binary at all. */
extern bool rp_pgbin_column_ok(const RpColumn *c);

/* COPY binary header and trailer. */
extern void rp_pgbin_header(RpBuf *out);
extern void rp_pgbin_trailer(RpBuf *out);

/* A tuple's field count. */
extern void rp_pgbin_tuple(RpBuf *out, int nfields);

/* A NULL field. */
extern void rp_pgbin_null(RpBuf *out);

/*
 * One field: i32 length, then the value in the send format of the column's
 * type.  data/len is the datum as decoded (encoding enc).  Returns -1 when
 * the value cannot be expressed (an array element of an encoding with no
 * binary form); out is then left as it was.
 */
extern int	rp_pgbin_value(RpBuf *out, uint8_t enc, const unsigned char *data, uint32_t len);

/*
 * The same field split so that a large value need not be copied: the field's
 * head (its length word, and jsonb's version byte) is appended to out, and
 * *body and *bodylen are the rest, the datum's own bytes, which the caller sends
 * from where they lie.  False (out untouched) for an encoding whose send
 * format is not its bytes as they are (use rp_pgbin_value).
 */
extern bool rp_pgbin_value_split(RpBuf *out, uint8_t enc, const unsigned char *data, uint32_t len,
								 const unsigned char **body, uint32_t *bodylen);

#endif							/* RP_PGBIN_H */
