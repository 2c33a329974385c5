/*
 * rp_envelope.h
 *    The snapshot envelope for append sinks (stdout, file, exec): the
 *    frames of one table's initial dump, as JSON lines.
 *
 * A dump of one table is
 *    begin                      seq 0, "total" when known (may be an estimate)
 *    row | oversize ...         seq 0, 1, 2 ... over rows and stubs together
 *    end                        seq = row_count = number of row + oversize frames
 * and every frame carries "kind", "snapshot_id" (a UUIDv7 minted at
 * snapshot_at), "snapshot_at" and "timestamp" (both RFC 3339 UTC with
 * milliseconds, equal), "store" ("schema.table") and "seq".  A row frame
 * carries "record" (the row as a JSON object, rendered by the caller); a row
 * whose rendered size passes max_record_bytes becomes an "oversize" stub
 * with "bytes" (its rendered size) and "row_key" (the primary key as a JSON
 * object, rendered by the caller, or null), and a copy cut at max_dlq_bytes
 * goes to the dead-letter file.  "end" adds "row_count" and "completed_at".
 * A dump that fails emits no end: the reader (rp_reassemble.h, `replicant
 * verify-snapshot`) then reports it open.  docs/sinks.md shows the frames.
 *
 * Each frame is appended to the caller's RpBuf with its trailing newline;
 * on error nothing is appended (out is left as it was).  Errors: -1 after
 * rp_fail() with a value-free message; any error marks the dump failed, so
 * rp_env_end() refuses it afterwards.
 */
#ifndef RP_ENVELOPE_H
#define RP_ENVELOPE_H

#include "rp_buf.h"
#include "base/rp_uuid7.h"

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" */
#define RP_RFC3339_MS_LEN 24

typedef enum RpEnvState
{
	RP_ENV_IDLE = 0,			/* no dump begun (or the last one ended) */
	RP_ENV_OPEN,				/* begun: rows may follow */
	RP_ENV_ENDED,				/* end emitted */
	RP_ENV_FAILED				/* failed or aborted: no end will be emitted */
} RpEnvState;

typedef struct RpEnvelope
{
	/* settings (rp_env_init) */
	size_t		max_record_bytes;	/* 0: no limit */
	size_t		max_dlq_bytes;	/* cut of the dead-letter copy */
	char	   *dlq_path;		/* NULL: no dead-letter copies */
	int			dlq_fd;			/* opened on the first oversize row */
	bool		dlq_dirty;		/* written since the last fsync */
	RpUuid7Gen *ids;			/* rp_env_begin's snapshot_ids (its own, on
								 * the heap: an envelope may be moved, a mutex
								 * may not) */

	/* the current dump */
	RpEnvState	state;
	char		snapshot_id[RP_UUID_TEXT_LEN + 1];
	char		snapshot_at[RP_RFC3339_MS_LEN + 1];
	int64_t		snapshot_at_ms;
	char	   *store;
	RpBuf		head;			/* "snapshot_id":..,"snapshot_at":..,"timestamp":..,"store":.. */
	uint64_t	seq;			/* the next row's seq = rows + oversize so far */
	uint64_t	rows;			/* row frames emitted */
	uint64_t	oversize;		/* oversize stubs emitted */
	uint64_t	dlq_lines;		/* dead-letter lines written */
	uint64_t	dropped;		/* oversize rows with no dead-letter file:
								 * lost */
	uint64_t	dropped_unwarned;	/* dropped since the last warning */
	int64_t		dropped_warned_ms;	/* that warning (one every 10 s per store) */
} RpEnvelope;

/*
 * Settings: max_record_bytes (0 = no limit), max_dlq_bytes (how much of an
 * oversize row the dead-letter line keeps), dlq_path (NULL: none, and an
 * oversize row is dropped: its stub stays, the row is counted in dropped and
 * warned of at most once every 10 s; else the file is opened for append,
 * created 0600, on the first oversize row).
 */
extern void rp_env_init(RpEnvelope *env, size_t max_record_bytes, size_t max_dlq_bytes,
						const char *dlq_path);

/* Close the dead-letter file (fsync'd when written) and free everything. */
extern void rp_env_free(RpEnvelope *env);

/*
 * Begin a dump of store ("schema.table"): mints snapshot_id at
 * snapshot_at_ms (rp_uuid7_at, from the envelope's own generator) and
 * appends the begin frame.  total: the table's row count or an estimate,
 * or -1 when unknown (then omitted).  Allowed when no dump is open (IDLE,
 * ENDED or FAILED).
 */
extern int	rp_env_begin(RpEnvelope *env, RpBuf *out, const char *store,
						 int64_t snapshot_at_ms, int64_t total);

/*
 * As rp_env_begin, with the snapshot_id minted by the caller (canonical or
 * not; written canonical), so that the id also in the caller's progress
 * tokens is the one the frames carry.
 */
extern int	rp_env_begin_id(RpEnvelope *env, RpBuf *out, const char *store,
							const char *snapshot_id, int64_t snapshot_at_ms, int64_t total);

/*
 * Continue a dump whose begin (and rows before next_seq) were delivered
 * earlier, e.g. by a run that stopped: no frame is emitted; the next row
 * gets seq next_seq.  snapshot_id is the canonical text form.
 */
extern int	rp_env_resume(RpEnvelope *env, const char *store, const char *snapshot_id,
						  int64_t snapshot_at_ms, uint64_t next_seq);

/* Would a rendered row of len bytes become an oversize stub? */
static inline bool
rp_env_oversize(const RpEnvelope *env, size_t len)
{
	return env->max_record_bytes > 0 && len > env->max_record_bytes;
}

/*
 * One row: record is its rendered JSON object (len bytes, one line).  When
 * rp_env_oversize(), a dead-letter line is written first and an oversize
 * stub appended, naming the row by row_key (a JSON object, key_len bytes;
 * NULL for a table without a key: "row_key":null).  row_key is read only
 * for an oversize row, so callers may render it only then.
 */
extern int	rp_env_row(RpEnvelope *env, RpBuf *out, const char *record, size_t len,
					   const char *row_key, size_t key_len);

/*
 * The end frame, completed_at_ms its "completed_at".  Syncs the dead-letter
 * file first.  Refused (-1) when the dump is not open (never begun, failed,
 * aborted, already ended).
 */
extern int	rp_env_end(RpEnvelope *env, RpBuf *out, int64_t completed_at_ms);

/* The dump failed: no end frame will follow (rp_env_end refuses). */
extern void rp_env_abort(RpEnvelope *env);

/* fsync the dead-letter file when written since the last sync: call before
 * checkpointing a position past an oversize row. */
extern int	rp_env_dlq_sync(RpEnvelope *env);

/* RFC 3339 UTC with milliseconds into out[RP_RFC3339_MS_LEN + 1]; years
 * 0000..9999, else -1 (rp_fail). */
extern int	rp_rfc3339_ms(char *out, int64_t unix_ms);

#endif							/* RP_ENVELOPE_H */
