/*
 * ct_kit.h
 *    The one kit of the consumer's Check unit tests (ct_kit.c), and the
 *    suites the runner knows (ct_main.c).
 *
 * Every tests/test_NAME.c includes this header, builds its cases with the
 * helpers below and exports "Suite *ct_suite_NAME(void)"; the runner finds
 * them through ct_suites.h, which consumer/Makefile writes from the list of
 * test files, so a new test file needs no registration by hand.
 *
 * Every helper that renders JSON also checks the text against the kit's own
 * validator, so each expectation in the tests is also a proof that the
 * output is well-formed JSON (RFC 8259, UTF-8).
 */
#ifndef CT_KIT_H
#define CT_KIT_H

#include <check.h>

/*
 * Check marks every passing assertion as the test's last point, one
 * write() to its result pipe each: the randomized loops made 1.5 million
 * of them in the json suite alone (9 s of system time, over 100 s under
 * ASAN, most of the unit suites' time).  A passing assertion here costs
 * nothing; a failing one still names its file and line, and a crash is
 * located by its stack (the sanitizers print it).
 */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...) \
	((expr) ? (void) 0 : \
	 _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the tests build on: the codec ... */
#include "rp_alloc.h"
#include "rp_buf.h"
#include "rp_decode.h"
#include "rp_encode.h"
#include "rp_format.h"
#include "rp_json.h"
#include "rp_read.h"
#include "rp_render.h"
#include "rp_wire.h"
/* ... and the consumer's data path. */
#include "base/rp_status.h"
#include "stream/rp_asm.h"
#include "base/rp_ckpt.h"
#include "stream/rp_deliver.h"
#include "stream/rp_store.h"

/* The suites, one per tests/test_NAME.c (ct_suites.h is generated). */
#define CT_SUITE(name) extern Suite *ct_suite_##name(void);
#include "ct_suites.h"
#undef CT_SUITE

/* A value planted in test data; it must never appear in an error (G4). */
#define CT_CANARY "CANARY-7f3a"

/* ---- test cases -------------------------------------------------------- */

/* A test case with the ct_teardown fixture attached and a 120 s timeout. */
extern TCase *ct_tcase(const char *name);

/* ---- a scratch directory per test (ct_setup_dir / ct_teardown_dir) ------ */

extern char ct_dir[256];

extern void ct_setup_dir(void);
extern void ct_teardown_dir(void);

/* dir/name in a static ring of buffers (a few may be live at once). */
extern const char *ct_path(const char *name);
extern bool ct_exists(const char *path);
extern off_t ct_file_size(const char *path);

/* Whole file into a NUL-terminated malloc'd buffer (caller frees). */
extern char *ct_slurp(const char *path, size_t *lenp);

struct RpCli;

/*
 * rp_cli_parse on a NULL-terminated argv (argv[0] added), with stdout and
 * stderr captured; *err (the caller frees) what it wrote on stderr.
 */
extern int	ct_cli_parse(struct RpCli *cli, char **err, const char *const *args);
extern void ct_write_file(const char *path, const void *data, size_t len, bool append);

/* Number of directory entries (other than . and ..) whose name has prefix. */
extern int	ct_count_entries(const char *dir, const char *prefix);

/* Occurrences of needle in haystack. */
extern int	ct_count(const char *haystack, const char *needle);

/* ---- per-test allocations (freed by ct_teardown) ----------------------- */

/* Remember p and free it when the test ends (LeakSanitizer stays quiet). */
extern void *ct_keep(void *p);
extern void ct_teardown(void);

/* The buffer's bytes as a NUL-terminated string, kept until teardown. */
extern char *ct_cstr(const RpBuf *b);

/* ---- JSON --------------------------------------------------------------- */

/* Is s[0..len) one valid JSON text (RFC 8259, UTF-8)?  Independent of rp_json. */
extern bool ct_json_valid(const char *s, size_t len);

/* ---- frames -------------------------------------------------------------- */

/* A relation column, described to ct_relation. */
typedef struct CtCol
{
	const char *name;
	uint8_t		enc;
	uint32_t	type_oid;
	const char *type_name;
	int32_t		typmod;
	uint8_t		flags;
} CtCol;

/* Where the ncols of ct_rel stop. */
#define CT_MAX_COLS 64

/* A new frame in b: its header (b is initialized). */
extern void ct_frame(RpBuf *b);

/* A relation record of ncols columns, attribute numbers 1..ncols. */
extern void ct_relation(RpBuf *b, uint32_t relid, const char *schema, const char *name,
						char identity, int ncols, const CtCol *cols);

/*
 * The test relations: column 1 "id" int4 (primary key, identity), column 2
 * "note" string, columns 3.. "c3", "c4" ... int8.  ct_rel() describes
 * ncols of them; ct_insert() writes a row for such a relation.
 */
extern void ct_rel(RpBuf *b, uint32_t relid, const char *schema, const char *name, int ncols);

/* A row (id, note, id*10, id*100 ...) of an ncols-column test relation. */
extern void ct_row(RpBuf *b, int ncols, int32_t id, const char *note);

/* An insert; xid != 0 marks it as a change inside a stream block. */
extern void ct_insert(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id,
					  const char *note);

/* An update with the old key (id only). */
extern void ct_update(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id,
					  const char *note);
extern void ct_delete(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id);

/* Feed b (a whole frame) to the assembler at lsn and free it. */
extern int	ct_feed(RpAsm *a, RpBuf *b, uint64_t lsn);

/*
 * One whole transaction in one frame: BEGIN, n inserts into relid (ids
 * first_id.. with note), COMMIT at commit_lsn (end = commit + 0x28).
 * describe: put the relation record (ncols columns) in front.
 */
extern void ct_txn_frame(RpBuf *b, bool describe, uint32_t relid, int ncols, uint32_t xid,
						 uint64_t commit_lsn, int n, int32_t first_id, const char *note);

/* The int4 / int8 value of column col of a decoded tuple. */
extern int32_t ct_int4(const RpTuple *t, int col);
extern int64_t ct_int8(const RpTuple *t, int col);

/* The string value of column col (a malloc'd copy, caller frees). */
extern char *ct_string(const RpTuple *t, int col);

/* ---- values (the bytes after a 'v' kind byte) -------------------------- */

extern void ct_put_numeric(RpBuf *b, uint16_t sign, int16_t weight, uint16_t dscale,
						   int ndigits, const uint16_t *digits);
extern void ct_put_float8(RpBuf *b, double d);
extern void ct_put_float4(RpBuf *b, float f);

/* Composite field header: name, type OID, encoding (then the datum). */
extern void ct_put_field(RpBuf *b, const char *name, uint32_t oid, uint8_t enc);

/* Range header: flags, subtype OID, subtype encoding (then the bounds). */
extern void ct_put_range(RpBuf *b, uint8_t flags, uint32_t oid, uint8_t enc);

/*
 * A value's JSON (kept until teardown): first the decoder's structural walk
 * must accept the bytes and consume exactly all of them, then the renderer
 * writes it.
 */
extern char *ct_value_json(uint8_t enc, const RpBuf *v);

/* The structural walk alone: does the decoder accept these value bytes? */
extern bool ct_value_accepted(uint8_t enc, const RpBuf *v);

/* A record as JSON (validated), kept until teardown. */
extern char *ct_render(const RpRecord *rec, const RpRelMap *rels, const char *extra);

/*
 * Decode a whole frame with a fresh decoder, rendering every record into
 * one JSON line each (joined with '\n', kept until teardown).  Returns the
 * number of records, or -1 on the first error (its reason copied to err
 * when not NULL).
 */
extern int	ct_decode_frame(const void *data, size_t len, char **lines, char *err,
							size_t errlen);

/* ---- a fake sink ------------------------------------------------------------ */

#define CT_MAX_SEEN 4096

typedef struct CtChange
{
	uint32_t	xid;			/* of the transaction */
	uint8_t		tag;
	uint32_t	relid;
	uint16_t	natts;			/* of the relation version it was decoded with */
	int32_t		id;
} CtChange;

typedef struct CtSink
{
	RpSink		s;				/* first: an RpSink * is a CtSink * */
	/* behaviour */
	int			fail_on_txn;	/* fail the n-th (1-based) transaction seen; 0
								 * never */
	const char *fail_sqlstate;	/* and say a server gave this SQLSTATE; NULL:
								 * none */
	bool		fail_message;
	bool	   *hold;			/* while it points to false, a transaction
								 * waits (a test orders the two threads) */
	bool		read_records;	/* walk every transaction with a cursor */
	int			schema_verdict; /* what handle_schema_change returns */
	const char *ckpt_path;		/* library-owned file to look at during calls */
	/* what happened, in order: 'T' txn call, 'B' batch call, 'M' message */
	char		calls[CT_MAX_SEEN];
	int			ncalls;
	int			batch_sizes[CT_MAX_SEEN];
	int			nbatches;
	int			ntxns;			/* transactions handed over (incl. failed) */
	uint64_t	commit_lsns[CT_MAX_SEEN];
	RpCheckpoint last_ck;
	int			nmessages;
	char		last_prefix[64];
	/* records read through the cursor */
	CtChange	changes[CT_MAX_SEEN];
	int			nchanges;
	/* schema changes */
	int			nschema;
	RpSchemaChange schema_kinds[64];
	char		schema_cols[64][64];	/* a dropped/added column name or "" */
	/* the library-owned checkpoint file as it was while the sink ran */
	int			ckpt_seen_rc[CT_MAX_SEEN];
	RpCheckpoint ckpt_seen[CT_MAX_SEEN];
	/* advance */
	int			nadvance;
	RpCheckpoint advanced;
	/* owns_checkpoint sinks: the checkpoint they hold */
	bool		have_ck;
	RpCheckpoint held;
} CtSink;

/* A state sink with handle_transaction only, library-owned checkpoints. */
extern void ct_sink_init(CtSink *f);

/* The callbacks a test may put into f->s in place of the defaults. */
extern int	ct_sink_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n,
						  const RpCheckpoint *ck);
extern int	ct_sink_schema(RpSink *s, const RpRelation *before, const RpRelation *after,
						   RpSchemaChange change);
extern int	ct_sink_advance(RpSink *s, const RpCheckpoint *ck);

/* Record one transaction as the sink's callbacks do (reading it when read_records). */
extern int	ct_sink_one(CtSink *f, RpDelivery *dl, RpTxn *txn);

/* A checkpoint bound to a made-up source. */
extern RpCheckpoint ct_ck(uint64_t commit_lsn, uint64_t end_lsn);

/* Batch limits; CT_NEVER_* never end a batch by themselves. */
extern RpBatchLimits ct_limits(int max_txns, uint64_t max_bytes, int max_ms);

#define CT_NEVER_BYTES ((uint64_t) 1 << 40)
#define CT_NEVER_MS    (1000 * 1000 * 1000)

#endif							/* CT_KIT_H */
