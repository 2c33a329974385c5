/*
 * ct_kit.c
 *    The one kit of the consumer's Check unit tests: a scratch directory per
 *    test, frame and value builders on top of common/rp_encode.h, decode and
 *    render shortcuts, an independent JSON validator, per-test allocations
 *    and a fake sink that records what it was given.
 *
 * Compiled once and linked into the unit-test runner with every tests/test_*.c
 * (see ct_kit.h for what each helper does).  The tests fork per test
 * (CK_FORK), so the kit's state (the scratch directory, the kept
 * allocations) is per test as well.
 */
#include "ct_kit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/rp_cli.h"
#include "rp_read.h"
#include "rp_wire.h"

/* ---- a scratch directory per test ------------------------------------------- */

char		ct_dir[256];

static void
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

void
ct_setup_dir(void)
{
	snprintf(ct_dir, sizeof(ct_dir), "/tmp/rp-unit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(ct_dir));
	rp_error_clear();
}

void
ct_teardown_dir(void)
{
	if (ct_dir[0])
		ct_rm_rf(ct_dir);
	ct_dir[0] = '\0';
}

/* dir/name in a static ring of buffers (a few may be live at once). */
const char *
ct_path(const char *name)
{
	static char ring[8][512];
	static int	next;
	char	   *p = ring[next++ & 7];

	snprintf(p, 512, "%s/%s", ct_dir, name);
	return p;
}

bool
ct_exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

off_t
ct_file_size(const char *path)
{
	struct stat sb;

	ck_assert_msg(stat(path, &sb) == 0, "stat %s: %s", path, strerror(errno));
	return sb.st_size;
}

/* Whole file into a NUL-terminated malloc'd buffer (caller frees). */
char *
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

void
ct_write_file(const char *path, const void *data, size_t len, bool append)
{
	int			fd = open(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0600);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, data, len), (ssize_t) len);
	close(fd);
}

/* Number of directory entries (other than . and ..) whose name has prefix. */
int
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
int
ct_count(const char *haystack, const char *needle)
{
	int			n = 0;
	size_t		nl = strlen(needle);

	for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += nl)
		n++;
	return n;
}

/* ---- frames -------------------------------------------------------------- */

void
ct_frame(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_enc_frame_header(b);
}

void
ct_relation(RpBuf *b, uint32_t relid, const char *schema, const char *name, char identity,
			int ncols, const CtCol *cols)
{
	size_t		at = rp_enc_relation_start(b, relid, schema, name, identity, (uint16_t) ncols);

	for (int i = 0; i < ncols; i++)
		rp_enc_relation_column(b, (int16_t) (i + 1), cols[i].name, cols[i].type_oid,
							   cols[i].type_name ? cols[i].type_name : rp_encoding_name(cols[i].enc),
							   cols[i].typmod, cols[i].enc, cols[i].flags);
	rp_buf_end_record(b, at);
}

/*
 * The test relation of ncols columns (see ct_kit.h), described through
 * ct_relation like every other relation of the tests.
 */
void
ct_rel(RpBuf *b, uint32_t relid, const char *schema, const char *name, int ncols)
{
	CtCol		cols[CT_MAX_COLS];
	char		names[CT_MAX_COLS][16];

	ck_assert_int_le(ncols, CT_MAX_COLS);
	for (int i = 0; i < ncols; i++)
	{
		if (i == 0)
			cols[i] = (CtCol) {"id", RP_ENC_INT4, 23, "integer", -1,
				RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL};
		else if (i == 1)
			cols[i] = (CtCol) {"note", RP_ENC_STRING, 25, "text", -1, 0};
		else
		{
			snprintf(names[i], sizeof(names[i]), "c%d", i + 1);
			cols[i] = (CtCol) {names[i], RP_ENC_INT8, 20, "bigint", -1, 0};
		}
	}
	ct_relation(b, relid, schema, name, RP_IDENTITY_DEFAULT, ncols, cols);
}

/* A row (id, note, id*10, id*100 ...) of an ncols-column test relation. */
void
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
void
ct_insert(RpBuf *b, uint32_t relid, uint32_t xid, int ncols, int32_t id, const char *note)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_INSERT, relid, 0, xid);

	ct_row(b, ncols, id, note);
	rp_buf_end_record(b, at);
}

/* An update with the old key (id only). */
void
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

void
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
int
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
void
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
int32_t
ct_int4(const RpTuple *t, int col)
{
	ck_assert_int_gt(t->natts, col);
	ck_assert_int_eq(t->datums[col].kind, RP_DATUM_VALUE);
	ck_assert_uint_eq(t->datums[col].len, 4);
	return (int32_t) rp_load_u32(t->datums[col].data);
}

int64_t
ct_int8(const RpTuple *t, int col)
{
	ck_assert_int_gt(t->natts, col);
	ck_assert_int_eq(t->datums[col].kind, RP_DATUM_VALUE);
	ck_assert_uint_eq(t->datums[col].len, 8);
	return (int64_t) rp_load_u64(t->datums[col].data);
}

/* The string value of column col (a malloc'd copy, caller frees). */
char *
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

int
ct_sink_one(CtSink *f, RpDelivery *dl, RpTxn *txn)
{
	int			idx;

	while (f->hold && !__atomic_load_n(f->hold, __ATOMIC_ACQUIRE))
		usleep(1000);
	idx = f->ntxns++;

	if (idx < CT_MAX_SEEN)
	{
		f->commit_lsns[idx] = txn->commit_lsn;
		if (f->ckpt_path)
			f->ckpt_seen_rc[idx] = rp_ckpt_read(f->ckpt_path, &f->ckpt_seen[idx]);
	}
	if (f->fail_on_txn && f->ntxns == f->fail_on_txn)
	{
		rp_fail(RP_HALT_SINK, "fake sink refused transaction %u", txn->xid);
		if (f->fail_sqlstate)
			rp_error_set_sqlstate(f->fail_sqlstate);
		return -1;
	}
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

static int
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

int
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

static int
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

static const char *
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

int
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

int
ct_sink_advance(RpSink *s, const RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	f->nadvance++;
	f->advanced = *ck;
	f->held = *ck;
	return 0;
}

static int
ct_sink_checkpoint(RpSink *s, RpCheckpoint *ck)
{
	CtSink	   *f = (CtSink *) s;

	if (!f->have_ck)
		return 0;
	*ck = f->held;
	return 1;
}

static void
ct_sink_close(RpSink *s)
{
	(void) s;
}

/* A state sink with handle_transaction only, library-owned checkpoints. */
void
ct_sink_init(CtSink *f)
{
	memset(f, 0, sizeof(*f));
	f->s.name = "fake";
	f->s.priv = f;
	f->s.checkpoint = ct_sink_checkpoint;
	f->s.handle_transaction = ct_sink_txn;
	f->s.handle_message = ct_sink_message;
	f->s.close = ct_sink_close;
	f->read_records = true;
}

/* A checkpoint bound to a made-up source. */
RpCheckpoint
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
RpBatchLimits
ct_limits(int max_txns, uint64_t max_bytes, int max_ms)
{
	RpBatchLimits l;

	l.max_txns = max_txns;
	l.max_bytes = max_bytes;
	l.max_ms = max_ms;
	return l;
}

/* ---- per-test allocations ---------------------------------------------- */

#define CT_MAX_KEEP 4096

static void *ct_kept[CT_MAX_KEEP];
static int	ct_nkept;

/* Remember p and free it when the test ends (LeakSanitizer stays quiet). */
void *
ct_keep(void *p)
{
	if (ct_nkept < CT_MAX_KEEP)
		ct_kept[ct_nkept++] = p;
	return p;
}

void
ct_teardown(void)
{
	while (ct_nkept > 0)
		free(ct_kept[--ct_nkept]);
}

TCase *
ct_tcase(const char *name)
{
	TCase	   *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, ct_teardown);
	tcase_set_timeout(tc, 120);
	return tc;
}

/* The buffer's bytes as a NUL-terminated string, kept until teardown. */
char *
ct_cstr(const RpBuf *b)
{
	char	   *s = malloc(b->len + 1);

	memcpy(s, b->data, b->len);
	s[b->len] = '\0';
	return ct_keep(s);
}

/* ---- an independent JSON validator (RFC 8259) -------------------------- */

typedef struct CtJson
{
	const unsigned char *p;
	const unsigned char *end;
	int			depth;
} CtJson;

static bool ct_json_value(CtJson *j);

static void
ct_json_ws(CtJson *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool
ct_json_lit(CtJson *j, const char *lit)
{
	size_t		n = strlen(lit);

	if ((size_t) (j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

static bool
ct_is_digit(CtJson *j)
{
	return j->p < j->end && *j->p >= '0' && *j->p <= '9';
}

static bool
ct_json_number(CtJson *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (!ct_is_digit(j))
		return false;
	if (*j->p == '0')
		j->p++;
	else
		while (ct_is_digit(j))
			j->p++;
	if (j->p < j->end && *j->p == '.')
	{
		j->p++;
		if (!ct_is_digit(j))
			return false;
		while (ct_is_digit(j))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E'))
	{
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!ct_is_digit(j))
			return false;
		while (ct_is_digit(j))
			j->p++;
	}
	return true;
}

/* One UTF-8 scalar value (no overlongs, no surrogates, <= U+10FFFF). */
static bool
ct_json_utf8(CtJson *j)
{
	unsigned char c = *j->p;
	int			n;
	uint32_t	cp,
				min;

	if (c >= 0xC0 && c < 0xE0)
		n = 2, cp = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c < 0xF0)
		n = 3, cp = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c < 0xF8)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return false;
	if (j->end - j->p < n)
		return false;
	for (int i = 1; i < n; i++)
	{
		if ((j->p[i] & 0xC0) != 0x80)
			return false;
		cp = (cp << 6) | (j->p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return false;
	j->p += n;
	return true;
}

static bool
ct_json_string(CtJson *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	j->p++;
	while (j->p < j->end)
	{
		unsigned char c = *j->p;

		if (c == '"')
		{
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\')
		{
			j->p++;
			if (j->p >= j->end)
				return false;
			c = *j->p++;
			if (c == 'u')
			{
				for (int i = 0; i < 4; i++)
				{
					if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || *j->p == 0)
						return false;
					j->p++;
				}
			}
			else if (!strchr("\"\\/bfnrt", c) || c == 0)
				return false;
		}
		else if (c >= 0x80)
		{
			if (!ct_json_utf8(j))
				return false;
		}
		else
			j->p++;
	}
	return false;
}

static bool
ct_json_value(CtJson *j)
{
	bool		ok = true;

	if (++j->depth > 200)
		return false;
	ct_json_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p)
	{
		case '{':
			j->p++;
			ct_json_ws(j);
			if (j->p < j->end && *j->p == '}')
			{
				j->p++;
				break;
			}
			for (;;)
			{
				ct_json_ws(j);
				if (!ct_json_string(j))
					return false;
				ct_json_ws(j);
				if (j->p >= j->end || *j->p++ != ':')
					return false;
				if (!ct_json_value(j))
					return false;
				ct_json_ws(j);
				if (j->p >= j->end)
					return false;
				if (*j->p == ',')
				{
					j->p++;
					continue;
				}
				if (*j->p++ != '}')
					return false;
				break;
			}
			break;
		case '[':
			j->p++;
			ct_json_ws(j);
			if (j->p < j->end && *j->p == ']')
			{
				j->p++;
				break;
			}
			for (;;)
			{
				if (!ct_json_value(j))
					return false;
				ct_json_ws(j);
				if (j->p >= j->end)
					return false;
				if (*j->p == ',')
				{
					j->p++;
					continue;
				}
				if (*j->p++ != ']')
					return false;
				break;
			}
			break;
		case '"':
			ok = ct_json_string(j);
			break;
		case 't':
			ok = ct_json_lit(j, "true");
			break;
		case 'f':
			ok = ct_json_lit(j, "false");
			break;
		case 'n':
			ok = ct_json_lit(j, "null");
			break;
		default:
			ok = ct_json_number(j);
			break;
	}
	j->depth--;
	return ok;
}

bool
ct_json_valid(const char *s, size_t len)
{
	CtJson		j = {(const unsigned char *) s, (const unsigned char *) s + len, 0};

	if (!ct_json_value(&j))
		return false;
	ct_json_ws(&j);
	return j.p == j.end;
}

/* ---- values (the bytes after a 'v' kind byte) -------------------------- */

void
ct_put_numeric(RpBuf *b, uint16_t sign, int16_t weight, uint16_t dscale,
			   int ndigits, const uint16_t *digits)
{
	rp_buf_put_u32(b, (uint32_t) (8 + 2 * ndigits));
	rp_buf_put_u16(b, (uint16_t) ndigits);
	rp_buf_put_u16(b, (uint16_t) weight);
	rp_buf_put_u16(b, sign);
	rp_buf_put_u16(b, dscale);
	for (int i = 0; i < ndigits; i++)
		rp_buf_put_u16(b, digits[i]);
}

void
ct_put_float8(RpBuf *b, double d)
{
	uint64_t	bits;

	memcpy(&bits, &d, 8);
	rp_buf_put_u64(b, bits);
}

void
ct_put_float4(RpBuf *b, float f)
{
	uint32_t	bits;

	memcpy(&bits, &f, 4);
	rp_buf_put_u32(b, bits);
}

/* Composite field header: name, type OID, encoding (then the datum). */
void
ct_put_field(RpBuf *b, const char *name, uint32_t oid, uint8_t enc)
{
	rp_buf_put_cstr(b, name);
	rp_buf_put_u32(b, oid);
	rp_buf_put_u8(b, enc);
}

/* Range header: flags, subtype OID, subtype encoding (then the bounds). */
void
ct_put_range(RpBuf *b, uint8_t flags, uint32_t oid, uint8_t enc)
{
	rp_buf_put_u8(b, flags);
	rp_buf_put_u32(b, oid);
	rp_buf_put_u8(b, enc);
}

/*
 * A value's JSON: first the decoder's structural walk must accept the
 * bytes and consume exactly all of them, then the renderer writes it.
 */
char *
ct_value_json(uint8_t enc, const RpBuf *v)
{
	RpReader	r;
	RpBuf		out;
	char	   *s;

	rp_reader_init(&r, v->data, v->len);
	ck_assert_msg(rp_skip_value(&r, enc, 0), "decoder rejected a valid %s value",
				  rp_encoding_name(enc));
	ck_assert_msg(r.ok && rp_reader_left(&r) == 0, "decoder left %zu bytes of a %s value",
				  rp_reader_left(&r), rp_encoding_name(enc));
	rp_buf_init(&out, 0);
	rp_render_value(&out, enc, (const unsigned char *) v->data, (uint32_t) v->len);
	s = ct_cstr(&out);
	rp_buf_free(&out);
	ck_assert_msg(ct_json_valid(s, strlen(s)), "not valid JSON: %s", s);
	return s;
}

/* The structural walk alone: does the decoder accept these value bytes? */
bool
ct_value_accepted(uint8_t enc, const RpBuf *v)
{
	RpReader	r;

	rp_reader_init(&r, v->data, v->len);
	return rp_skip_value(&r, enc, 0) && r.ok && rp_reader_left(&r) == 0;
}

/* A record as JSON (validated), kept until teardown. */
char *
ct_render(const RpRecord *rec, const RpRelMap *rels, const char *extra)
{
	RpBuf		out;
	char	   *s;

	rp_buf_init(&out, 0);
	rp_render_record(&out, rec, rels, extra);
	s = ct_cstr(&out);
	rp_buf_free(&out);
	ck_assert_msg(ct_json_valid(s, strlen(s)), "not valid JSON: %s", s);
	return s;
}

/*
 * Decode a whole frame with a fresh decoder, rendering every record into
 * one JSON line each (joined with '\n').  Returns the number of records,
 * or -1 on the first error (its reason copied to err when not NULL).
 */
int
ct_decode_frame(const void *data, size_t len, char **lines, char *err, size_t errlen)
{
	RpDecoder	dec;
	RpRecord	rec;
	RpBuf		out;
	int			n = 0,
				rc;

	rp_decoder_init(&dec);
	rp_buf_init(&out, 0);
	if (err)
		err[0] = '\0';
	if (!rp_decoder_frame(&dec, data, len))
	{
		ck_assert_msg(dec.error[0] != '\0', "frame refused without a reason");
		if (err)
			snprintf(err, errlen, "%s", dec.error);
		n = -1;
		goto done;
	}
	while ((rc = rp_decoder_next(&dec, &rec)) == 1)
	{
		size_t		start = out.len;

		if (n)
			rp_buf_put_char(&out, '\n');
		start = out.len;
		rp_render_record(&out, &rec, &dec.rels, NULL);
		ck_assert_msg(ct_json_valid(out.data + start, out.len - start),
					  "record %d rendered as invalid JSON", n);
		if (rec.tag == RP_TAG_RELATION)
			rp_relation_free(rec.u.relation.previous);
		n++;
	}
	if (rc < 0)
	{
		ck_assert_msg(dec.error[0] != '\0', "decoder failed without a reason");
		if (err)
			snprintf(err, errlen, "%s", dec.error);
		n = -1;
	}
done:
	if (lines)
		*lines = ct_cstr(&out);
	rp_buf_free(&out);
	rp_decoder_free(&dec);
	return n;
}

/* ---- the command line ---- */

/*
 * rp_cli_parse on a NULL-terminated argv (argv[0] added), with stdout and
 * stderr captured; *err (the caller frees) what it wrote on stderr.
 */
int
ct_cli_parse(RpCli *cli, char **err, const char *const *args)
{
	char	   *argv[64];
	int			argc = 0;
	int			saved_out = dup(1),
				saved_err = dup(2),
				fo,
				fe,
				rc;

	argv[argc++] = "replicant";
	for (; *args; args++)
		argv[argc++] = (char *) *args;
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	fo = open(ct_path("parse.out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(ct_path("parse.err"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = rp_cli_parse(cli, argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(fo);
	close(fe);
	close(saved_out);
	close(saved_err);
	*err = ct_slurp(ct_path("parse.err"), NULL);
	return rc;
}
