/*
 * rp_pgtext.h
 *    Pre-cast values back to PostgreSQL input text, for COPY and query
 *    parameters on the destination.  The forms are ones every input
 *    function accepts whatever the destination's DateStyle, TimeZone or
 *    IntervalStyle: ISO dates with BC, timestamps with an explicit zone,
 *    intervals in plain units, bytea in hex.
 */
#ifndef RP_PGTEXT_H
#define RP_PGTEXT_H

#include "rp_buf.h"

extern void rp_pgtext_value(RpBuf *out, uint8_t encoding, const unsigned char *data, uint32_t len);

/* Append s (len bytes) escaped for COPY's text format. */
extern void rp_pgtext_copy_escape(RpBuf *out, const char *s, size_t len);

#endif							/* RP_PGTEXT_H */
