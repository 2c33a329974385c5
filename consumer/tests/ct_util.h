/*
 * ct_util.h
 *    Shared helpers of the consumer library's unit tests (test_asm,
 *    test_store, test_ckpt, test_deliver, test_file_sink): frame builders
 *    on top of common/rp_encode.h, a scratch directory per test, a fake
 *    sink that records what it was given, and the suite runner.
 *
 * Header-only (every test binary is one translation unit).  Independent of
 * rp_testutil.h, which belongs to the codec tests.
 */
#ifndef CT_UTIL_H
#define CT_UTIL_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream/rp_asm.h"
#include "stream/rp_ckpt.h"
#include "stream/rp_deliver.h"
#include "rp_encode.h"
#include "base/rp_status.h"
#include "stream/rp_store.h"

/* ---- running a suite ----------------------------------------------------- */

/* Run the suite; fail when a test failed or when none ran at all. */
static inline int
ct_run(Suite *s)
{
	SRunner    *sr = srunner_create(s);
	int			failed,
				ran;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	ran = srunner_ntests_run(sr);
	srunner_free(sr);
	if (ran <= 0)
	{
		fprintf(stderr, "no tests ran\n");
		return EXIT_FAILURE;
	}
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* ---- a scratch directory per test ------------------------------------------- */

static char ct_dir[256];

static inline void
ct_rm_rf(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) != 0)
		return;
	if (S_ISDIR(sb.st_mode))
	{
		DIR		   *d = opendir(path);
		struct dirent *de;

		if (d)
		{
			while ((de = readdir(d)) != NULL)
			{
				char	   *sub;

				if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
					continue;
				if (asprintf(&sub, "%s/%s", path, de->d_name) < 0)
					continue;
				ct_rm_rf(sub);
				free(sub);
			}
			closedir(d);
		}
		rmdir(path);
	}
	else
		unlink(path);
}

static inline void
ct_setup_dir(void)
{
	snprintf(ct_dir, sizeof(ct_dir), "/tmp/rp-unit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(ct_dir));
	rp_error_clear();
}

static inline void
ct_teardown_dir(void)
{
	if (ct_dir[0])
		ct_rm_rf(ct_dir);
	ct_dir[0] = '\0';
}

/* dir/name in a static ring of buffers (a few may be live at once). */
static inline const char *
ct_path(const char *name)
{
	static char ring[8][512];
	static int	next;
	char	   *p = ring[next++ & 7];

	snprintf(p, 512, "%s/%s", ct_dir, name);
	return p;
}

static inline bool
ct_exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static inline off_t
ct_file_size(const char *path)
{
	struct stat sb;

	ck_assert_msg(stat(path, &sb) == 0, "stat %s: %s", path, strerror(errno));
	return sb.st_size;
}

/* Whole file into a NUL-terminated malloc'd buffer (caller frees). */
static inline char *
ct_slurp(const char *path, size_t *lenp)
{
	FILE	   *f = fopen(path, "rb");
	char	   *data;
	long		n;

	ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t) n + 1);
	ck_assert_int_eq(fread(data, 1, (size_t) n, f), (size_t) n);
	data[n] = '\0';
	fclose(f);
	if (lenp)
		*lenp = (size_t) n;
	return data;
}

static inline void
ct_write_file(const char *path, const void *data, size_t len, bool append)
{
	int			fd = open(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0600);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, data, len), (ssize_t) len);
	close(fd);
}

/* Number of directory entries (other than . and ..) whose name has prefix. */
static inline int
ct_count_entries(const char *dir, const char *prefix)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	int			n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
			strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* Occurrences of needle in haystack. */
static inline int
ct_count(const char *haystack, const char *needle)
{
	int			n = 0;
	size_t		nl = strlen(needle);

	for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += nl)
		n++;
	return n;
}

/* ---- frames -------------------------------------------------------------- */

/*
 * The test relations: column 1 "id" int4 (primary key, identity), column 2
 * "note" string, columns 3.. "c3", "c4" ... int8.  ct_rel_cols() describes
 * ncols of them; ct_insert() writes a row for such a relation.
 */
static inline void
ct_frame(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_enc_frame_header(b);
}

static inline void
ct_rel(RpBuf *b, uint32_t relid, const char *schema, const char *name, int ncols)
{
	size_t		at = rp_enc_relation_start(b, relid, schema, name, RP_IDENTITY_DEFAULT,
										   (uint16_t) ncols);

	for (int i = 0; i < ncols; i++)
	{
		char		cname[16];

		if (i == 0)
			rp_enc_relation_column(b, 1, "id", 23, "integer", -1, RP_ENC_INT4,
								   RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL);
		else if (i == 1)
			rp_enc_relation_column(b, 2, "note", 25, "text", -1, RP_ENC_STRING, 0);
		else
		{
			snprintf(cname, sizeof(cname), "c%d", i + 1);
			rp_enc_relation_column(b, (int16_t) (i + 1), cname, 20, "bigint", -1, RP_ENC_INT8, 0);
		}
	}
	rp_buf_end_record(b, at);
}

/* A row (id, note, id*10, id*100 ...) of an ncols-column test relation. */
static inline void
ct_row(RpBuf *b, int ncols, int32_t id, const char *note)
{
	rp_enc_tuple_start(b, (uint16_t) ncols);
	for (int i = 0; i < ncols; i++)
	{
		if (i == 1 && note == NULL)
		{
			rp_enc_datum_kind(b, RP_DATUM_NULL);
			continue;
		}
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		if (i == 0)
			rp_buf_put_u32(b, (uint32_t) id);
		else if (i == 1)
			rp_buf_put_cstr(b, note);
		else
		{
			int64_t		v = id;

			for (int k = 1; k < i; k++)
				v *= 10;
			rp_buf_put_u64(b, (uint64_t) v);
		}
	}
}

/* An insert; xid != 0 marks it as a change inside a stream block. */
static inline void
ct_insert(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id, const char *note)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_INSERT, relid, 0, xid);

	ct_row(b, ncols, id, note);
	rp_buf_end_record(b, at);
}

/* An update with the old key (id only). */
static inline void
ct_update(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id, const char *note)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_UPDATE, relid, RP_CHANGE_OLD_KEY, xid);

	rp_enc_tuple_start(b, (uint16_t) ncols);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) id);
	for (int i = 1; i < ncols; i++)
		rp_enc_datum_kind(b, RP_DATUM_NOT_IN_KEY);
	ct_row(b, ncols, id, note);
	rp_buf_end_record(b, at);
}

static inline void
ct_delete(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_DELETE, relid, RP_CHANGE_OLD_KEY, xid);

	rp_enc_tuple_start(b, (uint16_t) ncols);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) id);
	for (int i = 1; i < ncols; i++)
		rp_enc_datum_kind(b, RP_DATUM_NOT_IN_KEY);
	rp_buf_end_record(b, at);
}

/* Feed b (a whole frame) to the assembler at lsn and free it. */
static inline int
ct_feed(RpAsm *a, RpBuf *b, uint64_t lsn)
{
	int			rc = rp_asm_frame(a, b->data, b->len, lsn);

	rp_buf_free(b);
	return rc;
}

/*
 * One whole transaction in one frame: BEGIN, n inserts into relid (ids
 * first_id.. with note), COMMIT at commit_lsn (end = commit + 0x28).
 * describe: put the relation record (ncols columns) in front.
 */
static inline void
ct_txn_frame(RpBuf *b, bool describe, uint32_t relid, int ncols, uint32_t xid,
			 uint64_t commit_lsn, int n, int32_t first_id, const char *note)
{
	ct_frame(b);
	if (describe)
		ct_rel(b, relid, "public", "t", ncols);
	rp_enc_begin(b, xid, commit_lsn, 1700000000000000LL);
	for (int i = 0; i < n; i++)
		ct_insert(b, relid, 0, ncols, first_id + i, note);
	rp_enc_commit(b, commit_lsn, commit_lsn + 0x28, 1700000000000000LL + (int64_t) xid);
}

/* The int4 value of column col of a decoded tuple. */
static inline int32_t
ct_int4(const RpTuple *t, int col)
{
	ck_assert_int_gt(t->natts, col);
	ck_assert_int_eq(t->datums[col].kind, RP_DATUM_VALUE);
	ck_assert_uint_eq(t->datums[col].len, 4);
	return (int32_t) rp_load_u32(t->datums[col].data);
}

static inline int64_t
ct_int8(const RpTuple *t, int col)
{
	ck_assert_int_gt(t->natts, col);
	ck_assert_int_eq(t->datums[col].kind, RP_DATUM_VALUE);
	ck_assert_uint_eq(t->datums[col].len, 8);
	return (int64_t) rp_load_u64(t->datums[col].data);
}

/* The string value of column col (a malloc'd copy, caller frees). */
static inline char *
ct_string(const RpTuple *t, int col)
{
	uint32_t	len;
	char	   *s;

	ck_assert_int_gt(t->natts, col);
	ck_assert_int_eq(t->datums[col].kind, RP_DATUM_VALUE);
	len = rp_load_u32(t->datums[col].data);
	ck_assert_uint_eq(t->datums[col].len, 4 + len);
	s = malloc(len + 1);
	memcpy(s, t->datums[col].data + 4, len);
	s[len] = '\0';
	return s;
}

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
	int			fail_on_txn;	/* fail the n-th (1-based) transaction seen; 0 never */
	bool		fail_message;
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

static inline int
ct_sink_one(CtSink *f, RpDelivery *dl, RpTxn *txn)
{
	int			idx = f->ntxns++;

	if (idx < CT_MAX_SEEN)
	{
		f->commit_lsns[idx] = txn->commit_lsn;
		if (f->ckpt_path)
			f->ckpt_seen_rc[idx] = rp_ckpt_read(f->ckpt_path, &f->ckpt_seen[idx]);
	}
	if (f->fail_on_txn && f->ntxns == f->fail_on_txn)
		return rp_fail(RP_HALT_SINK, "fake sink refused transaction %u", txn->xid);
	if (f->read_records)
	{
		RpCursor	c;
		RpRecord	rec;
		int			rc;

		if (rp_cursor_open(&c, dl, txn) < 0)
			return -1;
		while ((rc = rp_cursor_next(&c, &rec)) > 0)
		{
			CtChange   *ch;

			if (f->nchanges >= CT_MAX_SEEN)
				continue;
			ch = &f->changes[f->nchanges++];
			ch->xid = txn->xid;
			ch->tag = rec.tag;
			if (rec.tag == RP_TAG_INSERT || rec.tag == RP_TAG_UPDATE || rec.tag == RP_TAG_DELETE)
			{
				const RpTuple *t = rec.u.change.has_new ? &rec.u.change.new_tuple
					: &rec.u.change.old_tuple;

				ch->relid = rec.u.change.relid;
				ch->natts = rec.u.change.rel->natts;
				ch->id = (int32_t) rp_load_u32(t->datums[0].data);
			}
		}
		rp_cursor_close(&c);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static inline int
ct_sink_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	if (f->ncalls < CT_MAX_SEEN)
		f->calls[f->ncalls++] = 'T';
	if (ct_sink_one(f, dl, txn) < 0)
		return -1;
	f->last_ck = *ck;
	if (s->owns_checkpoint)
	{
		f->held = *ck;
		f->have_ck = true;
	}
	return 0;
}

static inline int
ct_sink_batch(RpSink *s, RpDelivery *dl, RpTxn **txns, int n, const RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	if (f->ncalls < CT_MAX_SEEN)
		f->calls[f->ncalls++] = 'B';
	if (f->nbatches < CT_MAX_SEEN)
		f->batch_sizes[f->nbatches++] = n;
	for (int i = 0; i < n; i++)
		if (ct_sink_one(f, dl, txns[i]) < 0)
			return -1;
	f->last_ck = *ck;
	if (s->owns_checkpoint)
	{
		f->held = *ck;
		f->have_ck = true;
	}
	return 0;
}

static inline int
ct_sink_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	if (f->ncalls < CT_MAX_SEEN)
		f->calls[f->ncalls++] = 'M';
	if (f->fail_message)
		return rp_fail(RP_HALT_SINK, "fake sink refused a message");
	f->nmessages++;
	snprintf(f->last_prefix, sizeof(f->last_prefix), "%s", msg->prefix);
	f->last_ck = *ck;
	return 0;
}

static inline const char *
ct_changed_column(const RpRelation *before, const RpRelation *after)
{
	/* the first column present in one version only */
	for (uint16_t i = 0; before && i < before->natts; i++)
		if (rp_relation_column(after, before->cols[i].name) < 0)
			return before->cols[i].name;
	for (uint16_t i = 0; i < after->natts; i++)
		if (before == NULL || rp_relation_column(before, after->cols[i].name) < 0)
			return after->cols[i].name;
	return "";
}

static inline int
ct_sink_schema(RpSink *s, const RpRelation *before, const RpRelation *after,
			   RpSchemaChange change)
{
	CtSink	   *f = (CtSink *) s;

	if (f->nschema < 64)
	{
		f->schema_kinds[f->nschema] = change;
		snprintf(f->schema_cols[f->nschema], sizeof(f->schema_cols[0]), "%s",
				 ct_changed_column(before, after));
		f->nschema++;
	}
	if (f->schema_verdict < 0)
		return rp_fail(RP_HALT_SCHEMA, "fake sink refused a schema change");
	return 0;
}

static inline int
ct_sink_advance(RpSink *s, const RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	f->nadvance++;
	f->advanced = *ck;
	f->held = *ck;
	return 0;
}

static inline int
ct_sink_checkpoint(RpSink *s, RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	if (!f->have_ck)
		return 0;
	*ck = f->held;
	return 1;
}

static inline void
ct_sink_close(RpSink *s)
{
	(void) s;
}

/* A state sink with handle_transaction only, library-owned checkpoints. */
static inline void
ct_sink_init(CtSink *f)
{
	memset(f, 0, sizeof(*f));
	f->s.name = "fake";
	f->s.kind = RP_SINK_STATE;
	f->s.priv = f;
	f->s.checkpoint = ct_sink_checkpoint;
	f->s.handle_transaction = ct_sink_txn;
	f->s.handle_message = ct_sink_message;
	f->s.close = ct_sink_close;
	f->read_records = true;
}

/* A checkpoint bound to a made-up source. */
static inline RpCheckpoint
ct_ck(uint64_t commit_lsn, uint64_t end_lsn)
{
	RpCheckpoint ck;

	memset(&ck, 0, sizeof(ck));
	ck.system_id = 7412345678901234567ULL;
	ck.timeline = 1;
	snprintf(ck.slot, sizeof(ck.slot), "unit_slot");
	ck.commit_lsn = commit_lsn;
	ck.end_lsn = end_lsn;
	return ck;
}

/* Batch limits that never end a batch by themselves. */
static inline RpBatchLimits
ct_limits(int max_txns, uint64_t max_bytes, int max_ms)
{
	RpBatchLimits l;

	l.max_txns = max_txns;
	l.max_bytes = max_bytes;
	l.max_ms = max_ms;
	return l;
}

#define CT_NEVER_BYTES ((uint64_t) 1 << 40)
#define CT_NEVER_MS    (1000 * 1000 * 1000)

#endif							/* CT_UTIL_H */
