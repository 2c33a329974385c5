/*
 * rp_jsonwire.c
 *    Relation, change and message JSON back to wire records (see
 *    rp_jsonwire.h); the values are rp_jsonwire_value.c's.
 */
#include "rp_alloc.h"

#include <stdio.h>

#include "rp_encode.h"
#include "rp_json.h"
#include "rp_lsn.h"
#include "rp_render.h"
#include "base/rp_status.h"
#include "base/rp_jsonread.h"
#include "values/rp_jsonwire.h"

/* ---- reading members ------------------------------------------------------ */

/* The member called name of the given JSON type: 1, 0 absent, -1 other type or twice. */
static int
jw_member(const RpJrDoc *doc, const char *name, RpJrType type, const RpJrMember **m)
{
	int			rc = rp_jr_find(doc, name, m);

	if (rc <= 0)
		return rc;
	if ((*m)->type != type && !(type == RP_JR_TRUE && (*m)->type == RP_JR_FALSE))
		return -1;
	return 1;
}

static int
jw_need(const RpJrDoc *doc, const char *name, RpJrType type, const RpJrMember **m)
{
	return jw_member(doc, name, type, m) == 1 ? 0 : -1;
}

/* A string member's text as a new C string; NULL when it holds a NUL. */
static char *
jw_cstr(const RpJrMember *m)
{
	RpBuf		b;
	char	   *s = NULL;

	rp_buf_init(&b, m->val_len + 1);
	if (rp_jr_string(m->val, m->val_len, &b) == 0 && memchr(b.data, '\0', b.len) == NULL)
		s = rp_strndup(b.data, b.len);
	rp_buf_free(&b);
	return s;
}

static int
jw_int_member(const RpJrDoc *doc, const char *name, int64_t min, int64_t max, int64_t *v)
{
	const RpJrMember *m;

	if (jw_need(doc, name, RP_JR_NUMBER, &m) < 0 ||
		rp_jr_int64(m->val, m->val_len, v) < 0 || *v < min || *v > max)
		return -1;
	return 0;
}

static int
jw_bool_member(const RpJrDoc *doc, const char *name, bool *v)
{
	const RpJrMember *m;

	if (jw_need(doc, name, RP_JR_TRUE, &m) < 0)
		return -1;
	*v = m->type == RP_JR_TRUE;
	return 0;
}

/*
 * The next element of an array span that the reader validated: *pos is
 * just after '[' or after the previous element.  False at the end.
 */
static bool
jw_array_next(const char *s, size_t len, size_t *pos, const char **elem, size_t *elen)
{
	size_t		i = *pos;
	size_t		start;
	int			depth = 0;

#define JW_WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')
	while (i < len && (JW_WS(s[i]) || s[i] == ','))
		i++;
	if (i >= len || s[i] == ']')
		return false;
	start = i;
	for (; i < len; i++)
	{
		char		c = s[i];

		if (c == '"')
		{
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
		}
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
		{
			if (depth == 0)
				break;
			depth--;
		}
		else if (depth == 0 && (c == ',' || JW_WS(c)))
			break;
	}
#undef JW_WS
	*elem = s + start;
	*elen = i - start;
	*pos = i;
	return true;
}

/* ---- relations ----------------------------------------------------------- */

static int
jw_encoding_by_name(const char *name, size_t len)
{
	for (int e = 0; e < RP_ENC__COUNT; e++)
	{
		const char *n = rp_encoding_name((uint8_t) e);

		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return e;
	}
	return -1;
}

static int
jw_identity_by_name(const RpJrMember *m)
{
	static const char ids[] = {RP_IDENTITY_DEFAULT, RP_IDENTITY_NOTHING, RP_IDENTITY_FULL,
	RP_IDENTITY_INDEX};

	for (size_t i = 0; i < sizeof(ids); i++)
		if (rp_jr_string_eq(m->val, m->val_len, rp_identity_name(ids[i])))
			return ids[i];
	return -1;
}

/* One element of "columns" into c; a static reason, or NULL. */
static const char *
jw_relation_column(RpColumn *c, const char *val, size_t len)
{
	RpJrDoc		doc;
	const RpJrMember *m;
	int64_t		v;
	bool		b;
	const char *why = NULL;
	int			enc;

	rp_jr_init(&doc);
	if (rp_jr_parse(&doc, val, len) < 0 || doc.type != RP_JR_OBJECT)
		why = "is not an object";
	else if (jw_need(&doc, "name", RP_JR_STRING, &m) < 0 || (c->name = jw_cstr(m)) == NULL)
		why = "has no name string";
	else if (jw_int_member(&doc, "attnum", INT16_MIN, INT16_MAX, &v) < 0)
		why = "has no attnum of int2's range";
	else if ((c->attnum = (int16_t) v, jw_need(&doc, "type", RP_JR_STRING, &m) < 0) ||
			 (c->type_name = jw_cstr(m)) == NULL)
		why = "has no type name string";
	else if (jw_int_member(&doc, "type_oid", 0, UINT32_MAX, &v) < 0)
		why = "has no type_oid of oid's range";
	else if ((c->type_oid = (uint32_t) v, jw_int_member(&doc, "typmod", INT32_MIN, INT32_MAX, &v) < 0))
		why = "has no typmod of int4's range";
	else if ((c->typmod = (int32_t) v, jw_need(&doc, "encoding", RP_JR_STRING, &m) < 0) ||
			 m->val_len < 2 || memchr(m->val, '\\', m->val_len) != NULL ||
			 (enc = jw_encoding_by_name(m->val + 1, m->val_len - 2)) < 0)
		why = "has no known encoding";
	else
	{
		c->encoding = (uint8_t) enc;
		c->flags = 0;
		if (jw_bool_member(&doc, "primary_key", &b) < 0)
			why = "has no primary_key flag";
		else if ((c->flags |= b ? RP_COL_PRIMARY_KEY : 0, jw_bool_member(&doc, "identity", &b) < 0))
			why = "has no identity flag";
		else if ((c->flags |= b ? RP_COL_IDENTITY : 0, jw_bool_member(&doc, "not_null", &b) < 0))
			why = "has no not_null flag";
		else if ((c->flags |= b ? RP_COL_NOT_NULL : 0, jw_bool_member(&doc, "generated", &b) < 0))
			why = "has no generated flag";
		else
			c->flags |= b ? RP_COL_GENERATED : 0;
	}
	rp_jr_free(&doc);
	return why;
}

/*
 * A partition root's members (version 3, partitions=root): "partition_root":
 * true and "partition_set": eight lowercase hex digits.  Without them the
 * relation is a plain table.  NULL, or why they are not right.
 */
static const char *
jw_relation_kind(const RpJrDoc *doc, RpRelation *rel)
{
	const RpJrMember *root,
			   *set;
	int			has_root = jw_member(doc, "partition_root", RP_JR_TRUE, &root);
	int			has_set = jw_member(doc, "partition_set", RP_JR_STRING, &set);
	uint32_t	v = 0;

	if (has_root < 0 || has_set < 0)
		return "has a partition_root or partition_set of the wrong type";
	if (has_root == 0 || root->type != RP_JR_TRUE)
		return has_set ? "has a partition_set but is no partition root" : NULL;
	if (has_set == 0 || set->val_len != 10)
		return "is a partition root without an 8-digit hex partition_set";
	for (size_t i = 1; i < 9; i++)
	{
		char		c = set->val[i];

		if (c >= '0' && c <= '9')
			v = (v << 4) | (uint32_t) (c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (v << 4) | (uint32_t) (c - 'a' + 10);
		else
			return "is a partition root without an 8-digit hex partition_set";
	}
	rel->kind = RP_REL_KIND_PARTITION_ROOT;
	rel->partition_set = v;
	return NULL;
}

RpRelation *
rp_jsonwire_relation(const char *json, size_t len)
{
	RpJrDoc		doc;
	const RpJrMember *m,
			   *cols;
	RpRelation *rel = rp_malloc0(sizeof(RpRelation));
	int64_t		v;
	int			id;
	size_t		pos;
	const char *elem;
	size_t		elen;
	size_t		n = 0;
	const char *why = NULL;

	rp_jr_init(&doc);
	if (rp_jr_parse(&doc, json, len) < 0 || doc.type != RP_JR_OBJECT)
		why = "is not a JSON object";
	else if (jw_need(&doc, "kind", RP_JR_STRING, &m) < 0 ||
			 !rp_jr_string_eq(m->val, m->val_len, "relation"))
		why = "is not of kind relation";
	else if (jw_int_member(&doc, "relid", 0, UINT32_MAX, &v) < 0)
		why = "has no relid of oid's range";
	else if ((rel->relid = (uint32_t) v, jw_need(&doc, "schema", RP_JR_STRING, &m) < 0) ||
			 (rel->schema = jw_cstr(m)) == NULL)
		why = "has no schema string";
	else if (jw_need(&doc, "table", RP_JR_STRING, &m) < 0 || (rel->name = jw_cstr(m)) == NULL)
		why = "has no table string";
	else if (jw_need(&doc, "replica_identity", RP_JR_STRING, &m) < 0 ||
			 (id = jw_identity_by_name(m)) < 0)
		why = "has no known replica_identity";
	else if (jw_need(&doc, "columns", RP_JR_ARRAY, &cols) < 0)
		why = "has no columns array";
	else if ((why = jw_relation_kind(&doc, rel)) != NULL)
		;
	else
	{
		rel->identity = (char) id;
		pos = 1;
		while (jw_array_next(cols->val, cols->val_len, &pos, &elem, &elen))
			n++;
		if (n > UINT16_MAX)
			why = "has more columns than a relation can";
	}
	if (why == NULL)
	{
		rel->cols = rp_malloc0(sizeof(RpColumn) * (n ? n : 1));
		rel->natts = (uint16_t) n;
		pos = 1;
		for (size_t i = 0; why == NULL && i < n; i++)
		{
			(void) jw_array_next(cols->val, cols->val_len, &pos, &elem, &elen);
			if ((why = jw_relation_column(&rel->cols[i], elem, elen)) != NULL)
			{
				rp_fail(RP_HALT_MALFORMED,
						"relation message for relation %u: column %zu of its columns %s",
						rel->relid, i + 1, why);
				rp_jr_free(&doc);
				rp_relation_free(rel);
				return NULL;
			}
		}
	}
	rp_jr_free(&doc);
	if (why != NULL)
	{
		rp_fail(RP_HALT_MALFORMED, "relation message %s", why);
		rp_relation_free(rel);
		return NULL;
	}
	return rel;
}

/* ---- tuples ---------------------------------------------------------------- */

/* Per column of a tuple: where its value is in the tuple's JSON. */
#define JW_ABSENT    0
#define JW_UNCHANGED (-1)

typedef struct JwTuple
{
	RpJrDoc		doc;
	int		   *slot;			/* member index + 1, JW_ABSENT or JW_UNCHANGED */
} JwTuple;

/* The column a member's (or an unchanged list's) name span names, or -1. */
static int
jw_column_of(const RpRelation *rel, RpBuf *scratch, const char *name, size_t len,
			 bool escaped, int hint)
{
	if (escaped)
	{
		/* the span is the inside of a string: decode it with its quotes */
		rp_buf_reset(scratch);
		if (rp_jr_string(name - 1, len + 2, scratch) < 0)
			return -1;
		name = scratch->data;
		len = scratch->len;
	}
	/* the renderer writes the columns in order: try the hint first */
	if (hint >= 0 && hint < rel->natts && strlen(rel->cols[hint].name) == len &&
		memcmp(rel->cols[hint].name, name, len) == 0)
		return hint;
	for (int i = 0; i < rel->natts; i++)
		if (strlen(rel->cols[i].name) == len && memcmp(rel->cols[i].name, name, len) == 0)
			return i;
	return -1;
}

static int
jw_tuple_fail(const RpRelation *rel, const char *which, const char *what, int col)
{
	if (col >= 0)
		return rp_fail(RP_HALT_MALFORMED, "the %s tuple of a change of relation %s.%s: column \"%s\" %s",
					   which, rel->schema, rel->name, rel->cols[col].name, what);
	return rp_fail(RP_HALT_MALFORMED, "the %s tuple of a change of relation %s.%s %s",
				   which, rel->schema, rel->name, what);
}

/*
 * The tuple member m ("new", "key" or "old") into out: natts, then a kind
 * and a value per column.  unchanged: the "unchanged_toast" member (new
 * tuples only) or NULL.
 */
static int
jw_tuple(RpBuf *out, RpBuf *scratch, const RpRelation *rel, const RpJrMember *m,
		 const char *which, const RpJrMember *unchanged)
{
	JwTuple		t;
	int			rc = 0;
	bool		is_new = strcmp(which, "new") == 0;
	bool		is_key = strcmp(which, "key") == 0;

	if (m->type != RP_JR_OBJECT)
		return jw_tuple_fail(rel, which, "is not an object", -1);
	rp_jr_init(&t.doc);
	if (rp_jr_parse(&t.doc, m->val, m->val_len) < 0)
	{
		rp_jr_free(&t.doc);
		return jw_tuple_fail(rel, which, "is not valid JSON", -1);
	}
	t.slot = rp_malloc0(sizeof(int) * (rel->natts ? rel->natts : 1));

	for (int j = 0; rc == 0 && j < t.doc.nmembers; j++)
	{
		const RpJrMember *mm = &t.doc.members[j];
		int			col = jw_column_of(rel, scratch, mm->key, mm->key_len, mm->key_escaped, j);

		if (col < 0)
		{
			char		what[96];

			/* the name is not the relation's: say where, not what it says */
			snprintf(what, sizeof(what), "holds a column the relation does not have (member %d)",
					 j + 1);
			rc = jw_tuple_fail(rel, which, what, -1);
		}
		else if (t.slot[col] != JW_ABSENT)
			rc = jw_tuple_fail(rel, which, "appears twice", col);
		else
			t.slot[col] = j + 1;
	}
	if (rc == 0 && unchanged != NULL)
	{
		size_t		pos = 1;
		const char *elem;
		size_t		elen;

		while (rc == 0 && jw_array_next(unchanged->val, unchanged->val_len, &pos, &elem, &elen))
		{
			int			col = -1;

			if (elen >= 2 && elem[0] == '"')
				col = jw_column_of(rel, scratch, elem + 1, elen - 2,
								   memchr(elem, '\\', elen) != NULL, -1);
			if (col < 0)
				rc = jw_tuple_fail(rel, which, "lists an unchanged_toast entry that is no column of the relation", -1);
			else if (t.slot[col] != JW_ABSENT)
				rc = jw_tuple_fail(rel, which, "is both in the tuple and in unchanged_toast", col);
			else
				t.slot[col] = JW_UNCHANGED;
		}
	}

	if (rc == 0)
		rp_enc_tuple_start(out, rel->natts);
	for (int i = 0; rc == 0 && i < rel->natts; i++)
	{
		if (t.slot[i] > 0)
		{
			const RpJrMember *v = &t.doc.members[t.slot[i] - 1];

			if (v->type == RP_JR_NULL)
				rp_enc_datum_kind(out, RP_DATUM_NULL);
			else
			{
				rp_enc_datum_kind(out, RP_DATUM_VALUE);
				rc = rp_jsonwire_value(out, scratch, rel, i, v->type, v->val, v->val_len);
			}
		}
		else if (t.slot[i] == JW_UNCHANGED)
			rp_enc_datum_kind(out, RP_DATUM_UNCHANGED);
		else if (is_new)
			rc = jw_tuple_fail(rel, which, "is missing and not listed in unchanged_toast", i);
		else

			/*
			 * left out of an old key: not in the identity; of an old row:
			 * TOASTed
			 */
			rp_enc_datum_kind(out, is_key ? RP_DATUM_NOT_IN_KEY : RP_DATUM_UNCHANGED);
	}
	rp_free(t.slot);
	rp_jr_free(&t.doc);
	return rc;
}

/* ---- records ------------------------------------------------------------- */

static int
jw_change(RpBuf *out, RpBuf *scratch, const RpRelation *rel, const RpJrDoc *doc, uint8_t tag)
{
	const RpJrMember *m,
			   *key = NULL,
			   *old = NULL,
			   *new = NULL,
			   *unchanged = NULL;
	uint8_t		flags = 0;
	size_t		at;
	int			rc;

	if (rel == NULL)
		return rp_fail(RP_HALT_MALFORMED, "a %s record without its relation", rp_tag_name(tag));
	if (jw_need(doc, "schema", RP_JR_STRING, &m) < 0 ||
		!rp_jr_string_eq(m->val, m->val_len, rel->schema) ||
		jw_need(doc, "table", RP_JR_STRING, &m) < 0 ||
		!rp_jr_string_eq(m->val, m->val_len, rel->name))
		return rp_fail(RP_HALT_MALFORMED, "a %s record that does not name relation %s.%s, which it was read for",
					   rp_tag_name(tag), rel->schema, rel->name);
	rc = jw_member(doc, "no_identity", RP_JR_TRUE, &m);
	if (rc < 0)
		return rp_fail(RP_HALT_MALFORMED, "a %s record of relation %s.%s whose no_identity is not a boolean",
					   rp_tag_name(tag), rel->schema, rel->name);
	if (rc == 1 && m->type == RP_JR_TRUE)
		flags |= RP_CHANGE_NO_IDENTITY;
	if (jw_member(doc, "key", RP_JR_OBJECT, &key) < 0 ||
		jw_member(doc, "old", RP_JR_OBJECT, &old) < 0 ||
		jw_member(doc, "new", RP_JR_OBJECT, &new) < 0 ||
		jw_member(doc, "unchanged_toast", RP_JR_ARRAY, &unchanged) < 0 ||
		(key && old) || (tag == RP_TAG_INSERT && (key || old)) ||
		((tag == RP_TAG_DELETE) != (new == NULL)) || (unchanged && !new))
		return rp_fail(RP_HALT_MALFORMED, "a %s record of relation %s.%s whose tuples are not those of a %s",
					   rp_tag_name(tag), rel->schema, rel->name, rp_tag_name(tag));
	if (key)
		flags |= RP_CHANGE_OLD_KEY;
	if (old)
		flags |= RP_CHANGE_OLD_FULL;

	at = rp_enc_change_start(out, (char) tag, rel->relid, flags, 0);
	if (key && jw_tuple(out, scratch, rel, key, "key", NULL) < 0)
		return -1;
	if (old && jw_tuple(out, scratch, rel, old, "old", NULL) < 0)
		return -1;
	if (new && jw_tuple(out, scratch, rel, new, "new", unchanged) < 0)
		return -1;
	rp_buf_end_record(out, at);
	return 0;
}

static int
jw_message(RpBuf *out, RpBuf *scratch, const RpJrDoc *doc)
{
	const RpJrMember *m,
			   *text,
			   *b64;
	bool		transactional;
	uint64_t	lsn;
	size_t		at,
				len_at;
	int			rt,
				rb;

	if (jw_bool_member(doc, "transactional", &transactional) < 0)
		return rp_fail(RP_HALT_MALFORMED, "a message record without its transactional flag");
	rp_buf_reset(scratch);
	if (jw_need(doc, "lsn", RP_JR_STRING, &m) < 0 || rp_jr_string(m->val, m->val_len, scratch) < 0 ||
		(rp_buf_put_char(scratch, '\0'), !rp_lsn_parse(scratch->data, &lsn)))
		return rp_fail(RP_HALT_MALFORMED, "a message record without an LSN");
	if (jw_need(doc, "prefix", RP_JR_STRING, &m) < 0)
		return rp_fail(RP_HALT_MALFORMED, "a message record without a prefix string");
	rt = jw_member(doc, "content", RP_JR_STRING, &text);
	rb = jw_member(doc, "content_base64", RP_JR_STRING, &b64);
	if (rt < 0 || rb < 0 || rt + rb != 1)
		return rp_fail(RP_HALT_MALFORMED, "a message record without exactly one content string (content or content_base64)");

	at = rp_buf_begin_record(out, RP_TAG_MESSAGE);
	rp_buf_put_u8(out, transactional ? RP_MESSAGE_TRANSACTIONAL : 0);
	rp_buf_put_u64(out, lsn);
	len_at = out->len;
	rp_buf_put_u32(out, 0);
	if (rp_jr_string(m->val, m->val_len, out) < 0)
		return rp_fail(RP_HALT_MALFORMED, "a message record whose prefix is not a valid string");

	/*
	 * a prefix is text in PostgreSQL: \u0000 cannot be one's, and the wire
	 * decoder refuses it
	 */
	if (memchr(out->data + len_at + 4, '\0', out->len - len_at - 4) != NULL)
		return rp_fail(RP_HALT_MALFORMED, "a message record whose prefix holds a NUL character (\\u0000)");
	rp_buf_set_u32_at(out, len_at, (uint32_t) (out->len - len_at - 4));
	len_at = out->len;
	rp_buf_put_u32(out, 0);
	if (rt == 1 && rp_jr_string(text->val, text->val_len, out) < 0)
		return rp_fail(RP_HALT_MALFORMED, "a message record whose content is not a valid string");
	if (rb == 1)
	{
		RpRelation	fake = {0};
		RpColumn	col = {.name = "content_base64",.encoding = RP_ENC_BYTEA};

		/* the bytea reader, for the same canonical base64 */
		fake.schema = "message";
		fake.name = "record";
		fake.natts = 1;
		fake.cols = &col;
		out->len = len_at;
		if (rp_jsonwire_value(out, scratch, &fake, 0, RP_JR_STRING, b64->val, b64->val_len) < 0)
			return rp_fail(RP_HALT_MALFORMED, "a message record whose content_base64 is not canonical base64");
	}
	else
		rp_buf_set_u32_at(out, len_at, (uint32_t) (out->len - len_at - 4));
	rp_buf_end_record(out, at);
	return 0;
}

int
rp_jsonwire_record(RpBuf *out, const RpRelation *rel, const char *json, size_t len)
{
	RpJrDoc		doc;
	RpBuf		scratch;
	const RpJrMember *m;
	size_t		mark = out->len;
	int			rc;
	static const uint8_t tags[] = {RP_TAG_INSERT, RP_TAG_UPDATE, RP_TAG_DELETE, RP_TAG_MESSAGE};
	int			tag = -1;

	rp_jr_init(&doc);
	if (rp_jr_parse(&doc, json, len) < 0 || doc.type != RP_JR_OBJECT)
	{
		rp_jr_free(&doc);
		return rp_fail(RP_HALT_MALFORMED, "a data record that is not a JSON object%s%s",
					   rel ? " for relation " : "", rel ? rel->name : "");
	}
	if (jw_need(&doc, "kind", RP_JR_STRING, &m) == 0)
		for (size_t i = 0; i < sizeof(tags); i++)
			if (rp_jr_string_eq(m->val, m->val_len, rp_tag_name(tags[i])))
				tag = tags[i];
	if (tag < 0)
	{
		rp_jr_free(&doc);
		return rp_fail(RP_HALT_MALFORMED, "a data record whose kind is not insert, update, delete or message");
	}
	rp_buf_init(&scratch, 64);
	if (tag == RP_TAG_MESSAGE)
		rc = jw_message(out, &scratch, &doc);
	else
		rc = jw_change(out, &scratch, rel, &doc, (uint8_t) tag);
	rp_buf_free(&scratch);
	rp_jr_free(&doc);
	if (rc < 0)
		out->len = mark;
	return rc;
}

/* ---- what reads back ------------------------------------------------------ */

static bool
jw_name_exact(const char *s)
{
	return rp_utf8_valid((const unsigned char *) s, strlen(s));
}

bool
rp_jsonwire_relation_lossless(const RpRelation *rel)
{
	if (!jw_name_exact(rel->schema) || !jw_name_exact(rel->name))
		return false;
	for (uint16_t i = 0; i < rel->natts; i++)
		if (!jw_name_exact(rel->cols[i].name) || !jw_name_exact(rel->cols[i].type_name) ||
			rel->cols[i].encoding >= RP_ENC__COUNT)
			return false;
	return true;
}

static bool
jw_tuple_lossless(const RpRelation *rel, const RpTuple *t)
{
	for (uint16_t i = 0; i < t->natts; i++)
		if (t->datums[i].kind == RP_DATUM_VALUE &&
			!rp_jsonwire_value_lossless(rel->cols[i].encoding, t->datums[i].data, t->datums[i].len))
			return false;
	return true;
}

bool
rp_jsonwire_lossless(const RpRecord *rec)
{
	const uint8_t change_flags = RP_CHANGE_OLD_KEY | RP_CHANGE_OLD_FULL |
	RP_CHANGE_NO_IDENTITY | RP_CHANGE_HAS_XID;

	switch (rec->tag)
	{
		case RP_TAG_MESSAGE:
			return (rec->u.message.flags & ~(RP_MESSAGE_TRANSACTIONAL | RP_CHANGE_HAS_XID)) == 0 &&
				rp_utf8_valid((const unsigned char *) rec->u.message.prefix,
							  rec->u.message.prefix_len);
		case RP_TAG_INSERT:
		case RP_TAG_UPDATE:
		case RP_TAG_DELETE:
			{
				const RpRelation *rel = rec->u.change.rel;

				if ((rec->u.change.flags & ~change_flags) != 0 || rel == NULL ||
					!rp_jsonwire_relation_lossless(rel))
					return false;
				if (rec->u.change.has_old && !jw_tuple_lossless(rel, &rec->u.change.old_tuple))
					return false;
				if (rec->u.change.has_new && !jw_tuple_lossless(rel, &rec->u.change.new_tuple))
					return false;
				return true;
			}
		default:
			/* truncates name tables, not relids; the rest is no data record */
			return false;
	}
}
