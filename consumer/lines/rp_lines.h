/*
 * rp_lines.h
 *    JSON lines for the log sinks (stdout, file, exec): one change per
 *    line, each carrying its transaction's commit LSN, xid and commit time,
 *    values pre-cast by the common renderer; one line per truncate and
 *    message.  docs/sinks.md shows examples.
 */
#ifndef RP_LINES_H
#define RP_LINES_H

#include "rp_render.h"
#include "stream/rp_deliver.h"

/*
 * Append txn's lines to out; when out passes flush_at bytes, call
 * flush(arg, out) to empty it: after a line, and inside one between its
 * values and between the slices of a long value (rp_render_record_out), so
 * large transactions stream through and a large value is never held
 * rendered whole.  A flush may so end mid-line; the unit's lines are whole
 * only once the function returns.
 */
extern int	rp_lines_txn(RpBuf *out, RpDelivery *dl, RpTxn *txn, size_t flush_at,
						 int (*flush) (void *arg, RpBuf *out), void *arg);

/*
 * The pieces of a line, for sinks that send one record at a time (NATS):
 * the transaction's fields that every line carries (NUL-terminated, into
 * extra, reset first), and one record as the JSON object of its line,
 * without the newline (the stream's per-change xid left out).
 */
extern void rp_lines_txn_fields(RpBuf *extra, const RpTxn *txn);
extern void rp_lines_record(RpBuf *out, RpDelivery *dl, RpRecord *rec, const char *extra,
							RpRenderOut *fo);

/* Append msg's line to out, flushing alike; -1 when a flush failed. */
extern int	rp_lines_message(RpBuf *out, const RpMessage *msg, size_t flush_at,
							 int (*flush) (void *arg, RpBuf *out), void *arg);

#endif							/* RP_LINES_H */
