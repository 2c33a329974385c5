/*
 * rp_render.h
 *    Decoded records as JSON objects: the plugin's json format, the SQL
 *    inspection function and the consumer's JSON-lines sinks all print
 *    through here, so one value has one JSON form everywhere.
 */
#ifndef RP_RENDER_H
#define RP_RENDER_H

#include "rp_buf.h"
#include "rp_decode.h"

/*
 * Append rec as one JSON object (no newline).  extra, when not NULL, is a
 * run of already-rendered members ("a":1,"b":2) placed right after "kind";
 * the consumer uses it for the transaction's commit LSN, xid and time.
 */
extern void rp_render_record(RpBuf *buf, const RpRecord *rec, const RpRelMap *rels,
							 const char *extra);

/* One value of the given encoding (bytes as validated by the decoder). */
extern void rp_render_value(RpBuf *buf, uint8_t encoding, const unsigned char *data,
							uint32_t len);

/* A tuple as a JSON object; unchanged and not-in-key columns are left out. */
extern void rp_render_tuple(RpBuf *buf, const RpRelation *rel, const RpTuple *tup);

extern const char *rp_identity_name(char identity);

#endif							/* RP_RENDER_H */
