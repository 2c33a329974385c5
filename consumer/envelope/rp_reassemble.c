/*
 * rp_reassemble.c
 *    Snapshot envelope reassembly: reading the frames, two passes, and the
 *    verdicts (see rp_reassemble.h; the output is rp_reasm_out.c).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "envelope/rp_bitmap.h"
#include "base/rp_jsonread.h"
#include "envelope/rp_reasm_int.h"
#include "envelope/rp_seqhash.h"
#include "base/rp_hash.h"
#include "base/rp_status.h"

/* ---- snapshots ---------------------------------------------------------------- */

static void
rp_reasm_snap_conflict(RpReasmSnap *s, uint64_t seq)
{
	if (!s->conflict || seq < s->rep.conflict_seq)
		s->rep.conflict_seq = seq;
	s->conflict = true;
}

static uint64_t
rp_reasm_id_hash(const char *id)
{
	return rp_hash_bytes(id, RP_UUID_TEXT_LEN);
}

static void
rp_reasm_index_insert(RpReasm *r, size_t snap_idx)
{
	size_t		i = (size_t) rp_reasm_id_hash(r->snaps[snap_idx]->rep.id) & (r->index_cap - 1);

	while (r->index[i] != 0)
		i = (i + 1) & (r->index_cap - 1);
	r->index[i] = (uint32_t) (snap_idx + 1);
}

RpReasmSnap *
rp_reasm_snap_lookup(const RpReasm *r, const char *id)
{
	if (r->index_cap == 0)
		return NULL;
	for (size_t i = (size_t) rp_reasm_id_hash(id) & (r->index_cap - 1);; i = (i + 1) & (r->index_cap - 1))
	{
		uint32_t	v = r->index[i];

		if (v == 0)
			return NULL;
		if (memcmp(r->snaps[v - 1]->rep.id, id, RP_UUID_TEXT_LEN) == 0)
			return r->snaps[v - 1];
	}
}

static RpReasmSnap *
rp_reasm_snap_get(RpReasm *r, const char *id, const char *store, const char *at, size_t at_len)
{
	RpReasmSnap *s = rp_reasm_snap_lookup(r, id);

	if (s)
		return s;
	s = rp_malloc0(sizeof(RpReasmSnap));
	memcpy(s->rep.id, id, RP_UUID_TEXT_LEN + 1);
	s->rep.store = rp_strndup(store, strlen(store));
	s->rep.total = -1;
	s->snapshot_at = rp_strndup(at, at_len);
	s->snapshot_at_len = at_len;
	s->keep = r->keep_id[0] && strcmp(r->keep_id, id) == 0;
	if (r->nsnaps == r->snaps_cap)
	{
		r->snaps_cap = r->snaps_cap ? r->snaps_cap * 2 : 16;
		r->snaps = rp_realloc(r->snaps, r->snaps_cap * sizeof(RpReasmSnap *));
	}
	r->snaps[r->nsnaps++] = s;
	if ((r->nsnaps + 1) * 2 > r->index_cap)
	{
		rp_free(r->index);
		r->index_cap = r->index_cap ? r->index_cap * 2 : 64;
		r->index = rp_malloc0(r->index_cap * sizeof(uint32_t));
		for (size_t i = 0; i < r->nsnaps; i++)
			rp_reasm_index_insert(r, i);
	}
	else
		rp_reasm_index_insert(r, r->nsnaps - 1);
	return s;
}

/* Order of s's identity against (store, at): <0, 0, >0. */
static int
rp_reasm_snap_identity_cmp(const RpReasmSnap *s, const char *store, const char *at, size_t at_len)
{
	int			c = strcmp(s->rep.store, store);
	size_t		n = s->snapshot_at_len < at_len ? s->snapshot_at_len : at_len;

	if (c != 0)
		return c;
	c = memcmp(s->snapshot_at, at, n);
	if (c != 0)
		return c;
	return s->snapshot_at_len < at_len ? -1 : s->snapshot_at_len > at_len ? 1 : 0;
}

static bool
rp_reasm_snap_same_identity(const RpReasmSnap *s, const char *store, const char *at, size_t at_len)
{
	return rp_reasm_snap_identity_cmp(s, store, at, at_len) == 0;
}

static void
rp_reasm_snap_keep_loc(RpReasmSnap *s, uint64_t seq, uint64_t pos, uint32_t len)
{
	if (seq >= s->loc_cap)
	{
		size_t		n = s->loc_cap ? s->loc_cap : 1024;

		while (n <= seq)
			n *= 2;
		s->loc_pos = rp_realloc(s->loc_pos, n * sizeof(uint64_t));
		s->loc_len = rp_realloc(s->loc_len, n * sizeof(uint32_t));
		for (size_t i = s->loc_cap; i < n; i++)
			s->loc_pos[i] = RP_REASM_LOC_NONE;
		s->loc_cap = n;
	}
	s->loc_pos[seq] = pos;
	s->loc_len[seq] = len;
}

static void
rp_reasm_snap_free(RpReasmSnap *s)
{
	rp_free(s->rep.store);
	rp_free(s->snapshot_at);
	rp_bitmap_free(&s->present);
	rp_bitmap_free(&s->dup);
	rp_free(s->loc_pos);
	rp_free(s->loc_len);
	rp_seqhash_free(&s->hashes);
	rp_free(s);
}

/* ---- reading frames ------------------------------------------------------------ */

RpReasm    *
rp_reasm_new(void)
{
	RpReasm    *r = rp_malloc0(sizeof(RpReasm));

	rp_jr_init(&r->doc);
	rp_buf_init(&r->scratch, 256);
	return r;
}

void
rp_reasm_free(RpReasm *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nsnaps; i++)
		rp_reasm_snap_free(r->snaps[i]);
	rp_free(r->snaps);
	rp_free(r->index);
	for (int i = 0; i < r->npaths; i++)
		rp_free(r->paths[i]);
	rp_free(r->paths);
	rp_jr_free(&r->doc);
	rp_buf_free(&r->scratch);
	rp_free(r);
}

void
rp_reasm_set_warn(RpReasm *r, RpReasmWarn fn, void *arg)
{
	r->warn = fn;
	r->warn_arg = arg;
}

int
rp_reasm_keep_rows(RpReasm *r, const char *id)
{
	RpUuid		u;

	if (id == NULL || !rp_uuid_parse(id, strlen(id), &u))
		return rp_fail(RP_HALT_NONE, "not a snapshot id (a UUID in its 8-4-4-4-12 text form)");
	rp_uuid_text(&u, r->keep_id);
	return 0;
}

/* Where a line is, for messages. */
typedef struct LineCtx
{
	int			file;
	const char *path;
	uint64_t	lineno;
	uint64_t	offset;			/* of the line's first byte */
	int			pass;
} LineCtx;

static void
			rp_reasm_skip_line(RpReasm *r, const LineCtx *lc, const char *fmt,...) __attribute__((format(printf, 3, 4)));

static void
rp_reasm_skip_line(RpReasm *r, const LineCtx *lc, const char *fmt,...)
{
	char		why[256];
	char		msg[1024];
	va_list		ap;

	if (lc->pass != 1)
		return;
	r->skipped++;
	if (r->warn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof(msg), "%s:%" PRIu64 ": %s; line skipped", lc->path, lc->lineno, why);
	r->warn(r->warn_arg, msg);
}

typedef enum FrameKind
{
	FK_NONE,
	FK_BEGIN,
	FK_ROW,
	FK_OVERSIZE,
	FK_END
} FrameKind;

/*
 * A member by name: 1 found with the wanted type (or any type when want
 * < 0), 0 absent; -1 duplicated or of another type (warned).
 */
static int
rp_reasm_member(RpReasm *r, const LineCtx *lc, const char *name, int want, const RpJrMember **m)
{
	int			rc = rp_jr_find(&r->doc, name, m);

	if (rc < 0)
	{
		rp_reasm_skip_line(r, lc, "frame has \"%s\" more than once", name);
		return -1;
	}
	if (rc == 0)
		return 0;
	if (want >= 0 && (*m)->type != (RpJrType) want)
	{
		rp_reasm_skip_line(r, lc, "frame field \"%s\" is a%s %s, %s expected", name,
						   (*m)->type == RP_JR_ARRAY || (*m)->type == RP_JR_OBJECT ? "n" : "",
						   rp_jr_type_name((*m)->type), rp_jr_type_name((RpJrType) want));
		return -1;
	}
	return 1;
}

/* A required non-negative integer member, at most max. */
static int
rp_reasm_member_count(RpReasm *r, const LineCtx *lc, const char *name, uint64_t max, uint64_t *out)
{
	const RpJrMember *m;
	int64_t		v;
	int			rc = rp_reasm_member(r, lc, name, RP_JR_NUMBER, &m);

	if (rc == 0)
		rp_reasm_skip_line(r, lc, "frame lacks \"%s\"", name);
	if (rc <= 0)
		return -1;
	if (rp_jr_int64(m->val, m->val_len, &v) < 0 || v < 0 || (uint64_t) v > max)
	{
		rp_reasm_skip_line(r, lc, "frame field \"%s\" is not an integer in 0..%" PRIu64, name, max);
		return -1;
	}
	*out = (uint64_t) v;
	return 0;
}

static int
rp_reasm_member_required(RpReasm *r, const LineCtx *lc, const char *name, RpJrType want,
						 const RpJrMember **m)
{
	int			rc = rp_reasm_member(r, lc, name, (int) want, m);

	if (rc == 0)
		rp_reasm_skip_line(r, lc, "frame lacks \"%s\"", name);
	return rc == 1 ? 0 : -1;
}

/* One frame's fields, as read from its line (values point into the line). */
typedef struct RpReasmFrame
{
	FrameKind	kind;
	char		id[RP_UUID_TEXT_LEN + 1];
	uint64_t	seq;
	uint64_t	count;			/* begin: total; oversize: bytes; end:
								 * row_count */
	const RpJrMember *m_kind;
	const RpJrMember *m_id;
	const RpJrMember *m_store;	/* decoded into r->scratch, NUL-terminated */
	const RpJrMember *m_at;
	const RpJrMember *m_ts;
	const RpJrMember *m_payload;	/* row: record; oversize: row_key */
	const RpJrMember *m_extra;	/* begin: total; end: completed_at */
} RpReasmFrame;

/* The fields one kind of frame carries; false when the line is skipped. */
static bool
rp_reasm_frame_kind(RpReasm *r, const LineCtx *lc, RpReasmFrame *f)
{
	switch (f->kind)
	{
		case FK_BEGIN:
			if (f->seq != 0)
			{
				rp_reasm_skip_line(r, lc, "begin frame with a \"seq\" other than 0");
				return false;
			}
			if (rp_reasm_member(r, lc, "total", RP_JR_NUMBER, &f->m_extra) < 0)
				return false;
			if (f->m_extra)
			{
				int64_t		t;

				if (rp_jr_int64(f->m_extra->val, f->m_extra->val_len, &t) < 0 || t < 0)
				{
					rp_reasm_skip_line(r, lc, "frame field \"total\" is not a non-negative integer");
					return false;
				}
				f->count = (uint64_t) t;
			}
			break;
		case FK_ROW:
			if (rp_reasm_member_required(r, lc, "record", RP_JR_OBJECT, &f->m_payload) < 0)
				return false;
			if (f->m_payload->val_len >= RP_REASM_LOC_STUB)
			{
				rp_reasm_skip_line(r, lc, "frame field \"record\" is 4 GiB or more");
				return false;
			}
			break;
		case FK_OVERSIZE:
			if (rp_reasm_member_count(r, lc, "bytes", UINT64_MAX >> 1, &f->count) < 0 ||
				rp_reasm_member(r, lc, "row_key", -1, &f->m_payload) < 0)
				return false;
			if (f->m_payload == NULL ||
				(f->m_payload->type != RP_JR_OBJECT && f->m_payload->type != RP_JR_NULL))
			{
				rp_reasm_skip_line(r, lc, "oversize frame's \"row_key\" is not an object or null");
				return false;
			}
			break;
		case FK_END:
			if (rp_reasm_member_count(r, lc, "row_count", RP_REASM_MAX_SEQ, &f->count) < 0 ||
				rp_reasm_member_required(r, lc, "completed_at", RP_JR_STRING, &f->m_extra) < 0)
				return false;
			if (f->seq != f->count)
			{
				rp_reasm_skip_line(r, lc, "end frame's \"seq\" differs from its \"row_count\"");
				return false;
			}
			break;
		case FK_NONE:
			return false;
	}
	return true;
}

/*
 * The line as a frame: false when it is not one (not ours, or skipped
 * with a warning).
 */
static bool
rp_reasm_frame(RpReasm *r, const LineCtx *lc, const char *line, size_t len, RpReasmFrame *f)
{
	RpUuid		uuid;

	memset(f, 0, sizeof(*f));
	if (rp_jr_parse(&r->doc, line, len) < 0)
	{
		rp_reasm_skip_line(r, lc, "invalid JSON at byte %" PRIu64 " (%s)",
						   lc->offset + r->doc.err.offset, r->doc.err.reason);
		return false;
	}
	if (r->doc.type != RP_JR_OBJECT)
		return false;			/* not ours */

	/* a frame: kind begin/row/oversize/end and a snapshot_id; else not ours */
	if (rp_jr_find(&r->doc, "kind", &f->m_kind) < 0)
	{
		rp_reasm_skip_line(r, lc, "\"kind\" more than once");
		return false;
	}
	if (f->m_kind == NULL || f->m_kind->type != RP_JR_STRING)
		return false;
	if (rp_jr_string_eq(f->m_kind->val, f->m_kind->val_len, "begin"))
		f->kind = FK_BEGIN;
	else if (rp_jr_string_eq(f->m_kind->val, f->m_kind->val_len, "row"))
		f->kind = FK_ROW;
	else if (rp_jr_string_eq(f->m_kind->val, f->m_kind->val_len, "oversize"))
		f->kind = FK_OVERSIZE;
	else if (rp_jr_string_eq(f->m_kind->val, f->m_kind->val_len, "end"))
		f->kind = FK_END;
	else
		return false;
	switch (rp_reasm_member(r, lc, "snapshot_id", -1, &f->m_id))
	{
		case 0:
			return false;		/* not ours */
		case -1:
			return false;
	}
	if (f->m_id->type != RP_JR_STRING ||
		!rp_uuid_parse(f->m_id->val + 1, f->m_id->val_len - 2, &uuid))
	{
		rp_reasm_skip_line(r, lc, "frame field \"snapshot_id\" is not a UUID string");
		return false;
	}
	rp_uuid_text(&uuid, f->id);

	/* the fields every frame carries */
	if (rp_reasm_member_required(r, lc, "store", RP_JR_STRING, &f->m_store) < 0 ||
		rp_reasm_member_required(r, lc, "snapshot_at", RP_JR_STRING, &f->m_at) < 0 ||
		rp_reasm_member_required(r, lc, "timestamp", RP_JR_STRING, &f->m_ts) < 0 ||
		rp_reasm_member_count(r, lc, "seq", RP_REASM_MAX_SEQ, &f->seq) < 0)
		return false;
	if (f->m_ts->val_len != f->m_at->val_len || memcmp(f->m_ts->val, f->m_at->val, f->m_at->val_len) != 0)
	{
		rp_reasm_skip_line(r, lc, "frame's \"timestamp\" differs from its \"snapshot_at\"");
		return false;
	}
	if (!rp_reasm_frame_kind(r, lc, f))
		return false;
	rp_buf_reset(&r->scratch);
	if (rp_jr_string(f->m_store->val, f->m_store->val_len, &r->scratch) < 0 ||
		memchr(r->scratch.data, '\0', r->scratch.len) != NULL)
	{
		rp_reasm_skip_line(r, lc, "frame field \"store\" is not a name");
		return false;
	}
	rp_buf_put_char(&r->scratch, '\0');
	return true;
}

/* Pass 2: content hashes of the repeated seqs, and frames off the settled identity. */
static void
rp_reasm_line_pass2(RpReasm *r, const RpReasmFrame *f)
{
	RpReasmSnap *s;
	uint64_t	h,
				old;

	s = rp_reasm_snap_lookup(r, f->id);
	if (s == NULL)
		return;
	if (s->identity_conflict && !rp_reasm_snap_same_identity(s, r->scratch.data, f->m_at->val, f->m_at->val_len))
	{
		/* differs from the settled identity (the smallest seen) */
		rp_reasm_snap_conflict(s, f->seq);
		return;
	}
	if (!s->any_dup || (f->kind != FK_ROW && f->kind != FK_OVERSIZE) || !rp_bitmap_test(&s->dup, f->seq))
		return;
	h = rp_hash_bytes(f->kind == FK_ROW ? "r" : "o", 1);
	if (f->kind == FK_OVERSIZE)
	{
		char		num[24];

		snprintf(num, sizeof(num), "%" PRIu64 ":", f->count);
		h = rp_hash_extend(h, num, strlen(num));
	}
	h = rp_hash_extend(h, f->m_payload->val, f->m_payload->val_len);
	if (rp_seqhash_put(&s->hashes, f->seq, h, &old) && old != h)
		rp_reasm_snap_conflict(s, f->seq);
}

/* Pass 1: the seqs seen, begin and end. */
static void
rp_reasm_line_pass1(RpReasm *r, const LineCtx *lc, const char *line, const RpReasmFrame *f)
{
	RpReasmSnap *s;

	s = rp_reasm_snap_get(r, f->id, r->scratch.data, f->m_at->val, f->m_at->val_len);
	if (!rp_reasm_snap_same_identity(s, r->scratch.data, f->m_at->val, f->m_at->val_len))
	{
		/*
		 * Frames of one snapshot disagree on what it is.  Which frame is
		 * wrong cannot be told; to report the same whatever the order, the
		 * smallest (store, snapshot_at) seen is kept, and pass 2 reports the
		 * smallest seq of a frame that differs from it.
		 */
		s->identity_conflict = true;
		if (rp_reasm_snap_identity_cmp(s, r->scratch.data, f->m_at->val, f->m_at->val_len) > 0)
		{
			rp_free(s->rep.store);
			rp_free(s->snapshot_at);
			s->rep.store = rp_strndup(r->scratch.data, strlen(r->scratch.data));
			s->snapshot_at = rp_strndup(f->m_at->val, f->m_at->val_len);
			s->snapshot_at_len = f->m_at->val_len;
		}
		return;
	}
	switch (f->kind)
	{
		case FK_BEGIN:
			s->rep.has_begin = true;
			if (f->m_extra)
				s->rep.total = (int64_t) f->count;
			break;
		case FK_ROW:
		case FK_OVERSIZE:
			if (rp_bitmap_set(&s->present, f->seq))
			{
				rp_bitmap_set(&s->dup, f->seq);
				s->any_dup = true;
				break;
			}
			if (f->kind == FK_OVERSIZE)
				s->rep.oversize++;
			if (s->keep)
				rp_reasm_snap_keep_loc(s, f->seq,
									   f->kind == FK_ROW ?
									   ((uint64_t) lc->file << RP_REASM_FILE_SHIFT) |
									   (lc->offset + (uint64_t) (f->m_payload->val - line)) : 0,
									   f->kind == FK_ROW ? (uint32_t) f->m_payload->val_len : RP_REASM_LOC_STUB);
			break;
		case FK_END:
			if (s->rep.has_end && s->rep.row_count != f->count)
				rp_reasm_snap_conflict(s, f->count < s->rep.row_count ? f->count : s->rep.row_count);
			else
			{
				s->rep.has_end = true;
				s->rep.row_count = f->count;
			}
			break;
		case FK_NONE:
			break;
	}
}

static void
rp_reasm_line(RpReasm *r, const LineCtx *lc, const char *line, size_t len)
{
	RpReasmFrame f;

	if (!rp_reasm_frame(r, lc, line, len, &f))
		return;
	if (lc->pass == 2)
		rp_reasm_line_pass2(r, &f);
	else
		rp_reasm_line_pass1(r, lc, line, &f);
}

static int
rp_reasm_file(RpReasm *r, int file, int pass)
{
	const char *path = r->paths[file];
	FILE	   *f = fopen(path, "rb");
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		n;
	LineCtx		lc = {file, path, 0, 0, pass};
	int			rc = 0;

	if (f == NULL)
		return rp_fail(RP_HALT_NONE, "could not open \"%s\": %s", path, strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0)
	{
		size_t		len = (size_t) n;

		lc.lineno++;
		if (line[len - 1] == '\n')
			len--;
		if (lc.offset >= (UINT64_C(1) << RP_REASM_FILE_SHIFT))
		{
			rc = rp_fail(RP_HALT_NONE, "\"%s\" is larger than 256 TiB", path);
			break;
		}
		if (len > 0)
			rp_reasm_line(r, &lc, line, len);
		lc.offset += (uint64_t) n;
	}
	if (rc == 0 && ferror(f))
		rc = rp_fail(RP_HALT_NONE, "could not read \"%s\": %s", path, strerror(errno));
	free(line);
	fclose(f);
	return rc;
}

static int
rp_reasm_snap_cmp(const void *a, const void *b)
{
	return strcmp((*(RpReasmSnap *const *) a)->rep.id, (*(RpReasmSnap *const *) b)->rep.id);
}

static void
rp_reasm_snap_settle(RpReasmSnap *s)
{
	RpSnapReport *rep = &s->rep;
	uint64_t	beyond;

	rep->rows_seen = rp_bitmap_count(&s->present);
	if (rep->has_end && rp_bitmap_first_set_from(&s->present, rep->row_count, &beyond))
		rp_reasm_snap_conflict(s, beyond);	/* a row at or past row_count */
	if (s->conflict)
	{
		rep->state = RP_SNAP_CONFLICT;
		return;
	}
	if (!rep->has_end)
	{
		rep->state = RP_SNAP_OPEN;
		return;
	}
	rep->missing = rep->row_count - rp_bitmap_count_below(&s->present, rep->row_count);
	if (rep->missing == 0)
		rep->state = RP_SNAP_COMPLETE;
	else
	{
		rep->state = RP_SNAP_TRUNCATED;
		rp_bitmap_first_clear_below(&s->present, rep->row_count, &rep->first_missing);
	}
}

int
rp_reasm_run(RpReasm *r, const char *const *paths, int npaths)
{
	bool		again = false;

	if (r->ran)
		return rp_fail(RP_HALT_NONE, "snapshot reassembler already ran");
	r->ran = true;
	if (npaths > RP_REASM_MAX_FILES)
		return rp_fail(RP_HALT_NONE, "too many files (at most %d)", RP_REASM_MAX_FILES);
	r->paths = rp_malloc0((size_t) (npaths ? npaths : 1) * sizeof(char *));
	for (int i = 0; i < npaths; i++)
		r->paths[i] = rp_strndup(paths[i], strlen(paths[i]));
	r->npaths = npaths;

	for (int i = 0; i < npaths; i++)
		if (rp_reasm_file(r, i, 1) < 0)
			return -1;
	/* pass 2: content of the seqs seen more than once */
	for (size_t i = 0; i < r->nsnaps; i++)
		again |= r->snaps[i]->any_dup || r->snaps[i]->identity_conflict;
	if (again)
		for (int i = 0; i < npaths; i++)
			if (rp_reasm_file(r, i, 2) < 0)
				return -1;
	for (size_t i = 0; i < r->nsnaps; i++)
		rp_reasm_snap_settle(r->snaps[i]);
	/* sorted by id; the index is rebuilt for the new order */
	if (r->nsnaps > 1)
	{
		qsort(r->snaps, r->nsnaps, sizeof(RpReasmSnap *), rp_reasm_snap_cmp);
		memset(r->index, 0, r->index_cap * sizeof(uint32_t));
		for (size_t i = 0; i < r->nsnaps; i++)
			rp_reasm_index_insert(r, i);
	}
	return 0;
}

size_t
rp_reasm_count(const RpReasm *r)
{
	return r->nsnaps;
}

const RpSnapReport *
rp_reasm_get(const RpReasm *r, size_t i)
{
	return i < r->nsnaps ? &r->snaps[i]->rep : NULL;
}

const RpSnapReport *
rp_reasm_find(const RpReasm *r, const char *id)
{
	RpUuid		u;
	char text[	RP_UUID_TEXT_LEN + 1];
	RpReasmSnap *s;

	if (id == NULL || !rp_uuid_parse(id, strlen(id), &u))
		return NULL;
	rp_uuid_text(&u, text);
	s = rp_reasm_snap_lookup(r, text);
	return s ? &s->rep : NULL;
}

uint64_t
rp_reasm_skipped(const RpReasm *r)
{
	return r->skipped;
}

const RpSnapReport *
rp_reasm_newest_complete(const RpReasm *r, const char *store)
{
	for (size_t i = r->nsnaps; i > 0; i--)
	{
		const RpSnapReport *rep = &r->snaps[i - 1]->rep;

		if (rep->state == RP_SNAP_COMPLETE && rep->store && strcmp(rep->store, store) == 0)
			return rep;
	}
	return NULL;
}

bool
rp_reasm_superseded(const RpReasm *r, const RpSnapReport *rep)
{
	const RpSnapReport *newest;

	if (rep->state == RP_SNAP_COMPLETE || rep->store == NULL)
		return false;
	newest = rp_reasm_newest_complete(r, rep->store);
	return newest != NULL && strcmp(newest->id, rep->id) > 0;
}
