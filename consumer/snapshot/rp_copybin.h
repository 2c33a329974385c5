/*
 * rp_copybin.h
 *    PostgreSQL's binary send format (COPY ... (FORMAT binary)) into
 *    replicant's value encodings, for the initial snapshot: a row copied
 *    from a table becomes the same bytes the output plugin would have sent
 *    for it, so every sink renders and applies it with its stream code.
 *
 * Pure: no connection, no catalog.  The column's encoding (and, for arrays
 * and ranges, the element's) comes from rp_snapcat.h, which picks it the
 * way the plugin does.  Columns the plugin sends as text plus type OID are
 * selected as col::text, so their binary form is the text itself.
 * Composite values need the field names and each field's encoding, which
 * record_send does not carry: rp_snapcat.h reads them from the catalog
 * into an RpRecvComposite.  A field the plugin sends as text plus type OID
 * cannot be converted (inside a record its binary form is not the text),
 * nor an array of composites: rp_copybin_supported() says so before a copy
 * starts.
 *
 * Errors are value-free: they name the encoding and the length.
 */
#ifndef RP_PGRECV_H
#define RP_PGRECV_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_buf.h"

struct RpRecvComposite;

typedef struct RpRecvType
{
	uint8_t		encoding;		/* RpEncoding of the value */
	uint8_t		elem_encoding;	/* arrays and ranges: the element's */
	uint32_t	elem_oid;		/* arrays and ranges: the element type */
	const struct RpRecvComposite *comp; /* composites: the fields (NULL:
										 * unknown) */
} RpRecvType;

/* One field of a composite type, as the plugin names and encodes it. */
typedef struct RpRecvField
{
	const char *name;
	uint32_t	type_oid;		/* pg_attribute.atttypid (a domain stays a
								 * domain) */
	RpRecvType	type;
} RpRecvField;

/* The live (not dropped) fields of a composite type, in attribute order. */
typedef struct RpRecvComposite
{
	int			nfields;
	RpRecvField *fields;
} RpRecvComposite;

/* Can values of this type be converted? */
extern bool rp_copybin_supported(const RpRecvType *t);

/*
 * Append the wire encoding of one non-NULL value (len bytes of send format)
 * to out.  Returns 0, or -1 with a value-free reason in err[errlen]; out is
 * then left with a partial value (the caller drops the row's buffer).
 */
extern int	rp_copybin_value(RpBuf *out, const RpRecvType *t, const unsigned char *data,
							 uint32_t len, char *err, size_t errlen);

/*
 * Walk one tuple of a binary COPY stream at *p (end: the end of the data):
 * sets *nfields, and field i's data/len (len -1 for NULL) for i < maxfields.
 * Returns 1 with *p after the tuple, 0 at the trailer (-1 field count), -1
 * when malformed.
 */
extern int	rp_copybin_tuple(const unsigned char **p, const unsigned char *end, int maxfields,
							 int *nfields, const unsigned char **data, int32_t *len);

/* The 19-byte header of a binary COPY stream: its length, or -1. */
extern int	rp_copybin_header(const unsigned char *p, size_t avail);

#endif							/* RP_PGRECV_H */
