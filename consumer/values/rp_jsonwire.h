/*
 * rp_jsonwire.h
 *    JSON records back to wire records: the inverse of common/rp_render.c
 *    for what the JetStream sink publishes (a data record rendered with
 *    the transaction's members, a relation record), so that a reader of
 *    the stream can feed the assembler the binary records the plugin sent.
 *
 * The JSON is read with the strict reader (base/rp_jsonread.h).  Every
 * error is value-free (G4): it names the relation, the column, its
 * encoding and what was wrong, never the text that was there.
 *
 * Not everything the renderer writes reads back to the same bytes (see
 * rp_jsonwire_lossless); the sink attaches the binary record whenever it
 * would not.  What does: every finite float (rp_fmt_float4/8 print until
 * strtof/strtod read the same bits back; -0 and subnormals included), every
 * integer, interval, uuid, bytea, date and timestamp (the extended range
 * too), and numerics in numeric_send's form, whose +-Infinity carry dscale
 * 32 (the short header's bits, as PostgreSQL 15 sends them).  Floats are
 * read with strtod/strtof, as the renderer printed them with snprintf: in
 * the C locale, which the consumer never changes.
 */
#ifndef RP_JSONWIRE_H
#define RP_JSONWIRE_H

#include "rp_buf.h"
#include "rp_decode.h"

/*
 * The relation message's payload -> a new RpRelation (caller frees:
 * rp_relation_free).  NULL after rp_fail(RP_HALT_MALFORMED, ...).
 */
extern RpRelation *rp_jsonwire_relation(const char *json, size_t len);

/*
 * One data record's JSON payload (kind insert, update, delete, message) for
 * relation rel (NULL for a message) -> one binary record appended to out
 * (tag, u32 length, payload, as rp_enc_* writes it; no frame header).  The
 * non-streamed form: no RP_CHANGE_HAS_XID flag, whatever "xid" the JSON
 * has.  Members the renderer's caller adds (commit_lsn, xid, commit_time,
 * end_lsn, origin ...) are ignored.  0, or -1 after rp_fail(RP_HALT_MALFORMED,
 * ...) naming the relation and column; out is then left as it was.
 */
extern int	rp_jsonwire_record(RpBuf *out, const RpRelation *rel, const char *json, size_t len);

/*
 * Does rp_jsonwire_record give back exactly this decoded record's wire
 * bytes (in its non-streamed form: RP_CHANGE_HAS_XID and the xid aside)
 * from its rendered JSON?  False for every tag but insert, update, delete
 * and message (a truncate's JSON names tables, not relids), and for the
 * values that do not read back: a value of an array, composite or range
 * column, a json/jsonb value that is the literal null, starts or ends with
 * whitespace or holds CR or LF, text that is not valid UTF-8, a NaN float
 * other than PostgreSQL's own NaN, a bool byte other than 0 or 1, a numeric
 * not in numeric_send's canonical form, a time outside 00:00..24:00, and
 * names (of the relation, its columns, a message prefix) that are not valid
 * UTF-8.
 */
extern bool rp_jsonwire_lossless(const RpRecord *rec);

/*
 * Does rp_jsonwire_relation give back exactly this relation from its JSON?
 * (A plain table read with version 3's kind comes back without it: the same.)
 */
extern bool rp_jsonwire_relation_lossless(const RpRelation *rel);

/* ---- the value layer (rp_jsonwire_value.c) -------------------------------- */

/*
 * One column's JSON value (span val/len of JSON type type, not null) in the
 * column's encoding, appended to out; scratch is the caller's work buffer.
 * 0, or -1 after rp_fail naming the relation and column.
 */
extern int	rp_jsonwire_value(RpBuf *out, RpBuf *scratch, const RpRelation *rel, int col,
							  int type, const char *val, size_t len);

/* Does the value's JSON read back to these bytes (the decoder's, validated)? */
extern bool rp_jsonwire_value_lossless(uint8_t encoding, const unsigned char *data,
									   uint32_t len);

/* Canonical base64 (padded, as rp_fmt_base64 writes it) appended to out: 0 or -1. */
extern int	rp_jsonwire_base64(const char *s, size_t n, RpBuf *out);

/* An RFC 3339 UTC timestamp as rp_fmt_timestamp writes it, as wire microseconds: 0 or -1. */
extern int	rp_jsonwire_timestamptz(const char *s, size_t n, int64_t *out);

#endif							/* RP_JSONWIRE_H */
