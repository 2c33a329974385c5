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

/*
 * Where a record's JSON goes while it is rendered, for a writer that must
 * not hold a large value rendered whole (the JSON-lines sinks): before each
 * value, element or field, and before each slice of RP_RENDER_SLICE bytes
 * of a long text, json, bytea or message content, flush(arg, buf) writes
 * and empties buf once it holds at least `at` bytes.  buf then stays under
 * `at` plus one slice rendered (at most six bytes out per byte in) plus one
 * short value; the output is the same bytes as rp_render_record's.  A
 * failed flush sets failed and the rest of the record is left out (the
 * caller abandons what it wrote).
 */
typedef struct RpRenderOut
{
	size_t		at;
	int			(*flush) (void *arg, RpBuf *buf);
	void	   *arg;
	bool		failed;
} RpRenderOut;

#define RP_RENDER_SLICE (64 * 1024)

extern void rp_render_record_out(RpBuf *buf, const RpRecord *rec, const RpRelMap *rels,
								 const char *extra, RpRenderOut *fo);

/* One value of the given encoding (bytes as validated by the decoder). */
extern void rp_render_value(RpBuf *buf, uint8_t encoding, const unsigned char *data,
							uint32_t len);

/* A tuple as a JSON object; unchanged and not-in-key columns are left out. */
extern void rp_render_tuple(RpBuf *buf, const RpRelation *rel, const RpTuple *tup);

extern const char *rp_identity_name(char identity);

#endif							/* RP_RENDER_H */
