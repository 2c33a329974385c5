/*
 * rp_jsonread.c
 *    The strict JSON reader (see rp_jsonread.h): an iterative validator
 *    (its stack of open containers on the heap, so any nesting memory holds
 *    is read) that records the top-level members.
 */
#include "rp_alloc.h"

#include <inttypes.h>

#include "rp_json.h"
#include "base/rp_jsonread.h"
#include "base/rp_status.h"

typedef struct JrParser
{
	const unsigned char *s;
	size_t		len;
	size_t		pos;
	RpJrDoc    *doc;			/* NULL: validate only */
	const char *reason;
	size_t		err_off;
} JrParser;

static int
jr_error(JrParser *p, size_t off, const char *reason)
{
	if (p->reason == NULL)
	{
		p->reason = reason;
		p->err_off = off;
	}
	return -1;
}

static void
jr_ws(JrParser *p)
{
	while (p->pos < p->len)
	{
		unsigned char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static int
jr_hex4(const unsigned char *s, uint32_t *out)
{
	uint32_t	v = 0;

	for (int i = 0; i < 4; i++)
	{
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t) (c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t) (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t) (c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static void
jr_put_utf8(RpBuf *out, uint32_t cp)
{
	unsigned char b[4];
	size_t		n;

	if (cp < 0x80)
		b[0] = (unsigned char) cp, n = 1;
	else if (cp < 0x800)
	{
		b[0] = (unsigned char) (0xC0 | (cp >> 6));
		b[1] = (unsigned char) (0x80 | (cp & 0x3F));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		b[0] = (unsigned char) (0xE0 | (cp >> 12));
		b[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3F));
		b[2] = (unsigned char) (0x80 | (cp & 0x3F));
		n = 3;
	}
	else
	{
		b[0] = (unsigned char) (0xF0 | (cp >> 18));
		b[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3F));
		b[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3F));
		b[3] = (unsigned char) (0x80 | (cp & 0x3F));
		n = 4;
	}
	rp_buf_put_bytes(out, b, n);
}

/*
 * A string at p->pos (the opening quote); decoded into out when out is not
 * NULL.  *escaped tells whether it held any backslash escape.
 */
static int
jr_string(JrParser *p, RpBuf *out, bool *escaped)
{
	const unsigned char *s = p->s;
	size_t		i = p->pos + 1;

	if (escaped)
		*escaped = false;
	for (;;)
	{
		size_t		run = i;
		unsigned char c;

		/* plain ASCII runs: the common case */
		while (i < p->len && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
			i++;
		if (out && i > run)
			rp_buf_put_bytes(out, s + run, i - run);
		if (i >= p->len)
			return jr_error(p, i, "unterminated string");
		c = s[i];
		if (c == '"')
		{
			p->pos = i + 1;
			return 0;
		}
		if (c < 0x20)
			return jr_error(p, i, "control character in string");
		if (c >= 0x80)
		{
			size_t		n = rp_utf8_seq(s + i, p->len - i);

			if (n == 0)
				return jr_error(p, i, "invalid UTF-8 in string");
			if (out)
				rp_buf_put_bytes(out, s + i, n);
			i += n;
			continue;
		}
		/* a backslash escape */
		if (escaped)
			*escaped = true;
		if (i + 1 >= p->len)
			return jr_error(p, i, "unterminated string");
		c = s[i + 1];
		switch (c)
		{
			case '"':
			case '\\':
			case '/':
				if (out)
					rp_buf_put_char(out, (char) c);
				i += 2;
				break;
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				if (out)
					rp_buf_put_char(out, c == 'b' ? '\b' : c == 'f' ? '\f' :
									c == 'n' ? '\n' : c == 'r' ? '\r' : '\t');
				i += 2;
				break;
			case 'u':
				{
					uint32_t	cp,
								lo;

					if (i + 6 > p->len || jr_hex4(s + i + 2, &cp) < 0)
						return jr_error(p, i, "invalid \\u escape");
					if (cp >= 0xDC00 && cp <= 0xDFFF)
						return jr_error(p, i, "unpaired low surrogate escape");
					if (cp >= 0xD800 && cp <= 0xDBFF)
					{
						if (i + 12 > p->len || s[i + 6] != '\\' || s[i + 7] != 'u' ||
							jr_hex4(s + i + 8, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
							return jr_error(p, i, "unpaired high surrogate escape");
						cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
						i += 6;
					}
					if (out)
						jr_put_utf8(out, cp);
					i += 6;
					break;
				}
			default:
				return jr_error(p, i, "invalid escape in string");
		}
	}
}

static bool
jr_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int
jr_number(JrParser *p)
{
	const unsigned char *s = p->s;
	size_t		i = p->pos;

	if (i < p->len && s[i] == '-')
		i++;
	if (i >= p->len || !jr_digit(s[i]))
		return jr_error(p, i, "invalid number");
	if (s[i] == '0')
	{
		i++;
		if (i < p->len && jr_digit(s[i]))
			return jr_error(p, i, "leading zero in number");
	}
	else
		while (i < p->len && jr_digit(s[i]))
			i++;
	if (i < p->len && s[i] == '.')
	{
		i++;
		if (i >= p->len || !jr_digit(s[i]))
			return jr_error(p, i, "digit expected after decimal point");
		while (i < p->len && jr_digit(s[i]))
			i++;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E'))
	{
		i++;
		if (i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->len || !jr_digit(s[i]))
			return jr_error(p, i, "digit expected in exponent");
		while (i < p->len && jr_digit(s[i]))
			i++;
	}
	p->pos = i;
	return 0;
}

static int
jr_literal(JrParser *p, const char *word)
{
	size_t		n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return jr_error(p, p->pos, "invalid literal");
	p->pos += n;
	return 0;
}

static void
jr_add_member(RpJrDoc *doc, const RpJrMember *m)
{
	if (doc->nmembers == doc->cap)
	{
		doc->cap = doc->cap ? doc->cap * 2 : 16;
		doc->members = rp_realloc(doc->members, (size_t) doc->cap * sizeof(RpJrMember));
	}
	doc->members[doc->nmembers++] = *m;
}

/*
 * The containers open around the parser's position, innermost last: '{' or
 * '['.  On the heap and grown as needed, so nesting is bounded only by memory
 * (PostgreSQL's json accepts tens of thousands of levels).
 */
typedef struct JrStack
{
	unsigned char *open;
	size_t		depth;
	size_t		cap;
} JrStack;

static void
jr_push(JrStack *st, unsigned char c)
{
	if (st->depth == st->cap)
	{
		st->cap = st->cap ? st->cap * 2 : 64;
		st->open = rp_realloc(st->open, st->cap);
	}
	st->open[st->depth++] = c;
}

/*
 * A member's name and ':' at p->pos, up to the value.  In the top-level
 * object (depth 1) the name goes to *m and the value's start to *vstart.
 */
static int
jr_member_name(JrParser *p, bool top, RpJrMember *m, size_t *vstart)
{
	const char *key = (const char *) p->s + p->pos + 1;
	bool		escaped;

	if (p->pos >= p->len)
		return jr_error(p, p->pos, "unterminated object");
	if (p->s[p->pos] != '"')
		return jr_error(p, p->pos, "member name expected");
	if (jr_string(p, NULL, &escaped) < 0)
		return -1;
	if (top)
	{
		m->key = key;
		m->key_len = (size_t) ((const char *) p->s + p->pos - 1 - key);
		m->key_escaped = escaped;
	}
	jr_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != ':')
		return jr_error(p, p->pos, "':' expected after member name");
	p->pos++;
	jr_ws(p);
	if (top)
		*vstart = p->pos;
	return 0;
}

/* A scalar at p->pos (not '{' or '['). */
static int
jr_scalar(JrParser *p, RpJrType *type)
{
	switch (p->s[p->pos])
	{
		case '"':
			*type = RP_JR_STRING;
			return jr_string(p, NULL, NULL);
		case 't':
			*type = RP_JR_TRUE;
			return jr_literal(p, "true");
		case 'f':
			*type = RP_JR_FALSE;
			return jr_literal(p, "false");
		case 'n':
			*type = RP_JR_NULL;
			return jr_literal(p, "null");
		default:
			*type = RP_JR_NUMBER;
			if (p->s[p->pos] != '-' && !jr_digit(p->s[p->pos]))
				return jr_error(p, p->pos, "unexpected character");
			return jr_number(p);
	}
}

/*
 * The value at the top of st ended at p->pos: pop it, then close every
 * container that ends here too, until one goes on after a separator (0:
 * read its next value; in an object, its member's name is read already)
 * or the outermost ends (1).  -1 after jr_error.  A member of a top-level
 * object is recorded (m, from *vstart) as its value ends.
 */
static int
jr_close(JrParser *p, JrStack *st, RpJrMember *m, size_t *vstart)
{
	for (;;)
	{
		unsigned char open;

		st->depth--;
		if (st->depth == 0)
			return 1;			/* the whole value */
		open = st->open[st->depth - 1];
		if (st->depth == 1 && open == '{' && p->doc != NULL)
		{
			m->val = (const char *) p->s + *vstart;
			m->val_len = p->pos - *vstart;
			jr_add_member(p->doc, m);
		}
		jr_ws(p);
		if (p->pos >= p->len)
		{
			jr_error(p, p->pos, open == '{' ? "unterminated object" : "unterminated array");
			return -1;
		}
		if (p->s[p->pos] == (open == '{' ? '}' : ']'))
		{
			p->pos++;
			continue;			/* this container ended too */
		}
		if (p->s[p->pos] != ',')
		{
			jr_error(p, p->pos, open == '{' ? "',' or '}' expected in object" :
					 "',' or ']' expected in array");
			return -1;
		}
		p->pos++;
		jr_ws(p);
		if (open == '{' &&
			jr_member_name(p, st->depth == 1 && p->doc != NULL, m, vstart) < 0)
			return -1;
		return 0;				/* the next value */
	}
}

/*
 * One JSON value at p->pos, *type set to its type.  Iterative: each turn of
 * the loop reads one value's start (a scalar whole, or a container's opening
 * bracket), then closes what that completes and reads the separator before
 * the next value.  When p->doc is set, the members of a top-level object are
 * recorded as their values end.
 */
static int
jr_value(JrParser *p, RpJrType *type)
{
	JrStack		st = {0};
	RpJrMember	m = {0};
	size_t		vstart = 0;
	int			rc = -1;

	for (;;)
	{
		RpJrType	t;
		unsigned char c;

		if (p->pos >= p->len)
		{
			jr_error(p, p->pos, "value expected");
			goto out;
		}
		c = p->s[p->pos];
		if (c == '{' || c == '[')
		{
			t = c == '{' ? RP_JR_OBJECT : RP_JR_ARRAY;
			if (st.depth == 0)
				*type = t;
			if (st.depth == 1 && st.open[0] == '{')
				m.type = t;
			jr_push(&st, c);
			p->pos++;
			jr_ws(p);
			if (p->pos < p->len && p->s[p->pos] == (c == '{' ? '}' : ']'))
				p->pos++;		/* empty: it ends here, closed below */
			else if (c == '[')
				continue;		/* its first element */
			else
			{
				if (jr_member_name(p, st.depth == 1 && p->doc != NULL, &m, &vstart) < 0)
					goto out;
				continue;		/* its first member's value */
			}
		}
		else
		{
			if (jr_scalar(p, &t) < 0)
				goto out;
			if (st.depth == 0)
			{
				*type = t;
				break;
			}
			if (st.depth == 1 && st.open[0] == '{')
				m.type = t;
			jr_push(&st, 0);	/* a scalar: popped at once, as if closed */
		}

		/* the value at the top of the stack ended at p->pos */
		switch (jr_close(p, &st, &m, &vstart))
		{
			case 1:
				rc = 0;
				goto out;
			case -1:
				goto out;
		}
	}
	rc = 0;
out:
	rp_free(st.open);
	return rc;
}

void
rp_jr_init(RpJrDoc *doc)
{
	memset(doc, 0, sizeof(*doc));
}

void
rp_jr_free(RpJrDoc *doc)
{
	rp_free(doc->members);
	memset(doc, 0, sizeof(*doc));
}

int
rp_jr_parse(RpJrDoc *doc, const char *text, size_t len)
{
	JrParser	p;

	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *) text;

	p.len = len;
	p.doc = doc;
	doc->nmembers = 0;
	doc->err.offset = 0;
	doc->err.reason = NULL;
	jr_ws(&p);
	if (jr_value(&p, &doc->type) == 0)
	{
		jr_ws(&p);
		if (p.pos == p.len)
			return 0;
		jr_error(&p, p.pos, "text after the JSON value");
	}
	doc->nmembers = 0;
	doc->err.offset = p.err_off;
	doc->err.reason = p.reason;
	return rp_fail(RP_HALT_MALFORMED, "invalid JSON at byte %zu: %s", p.err_off, p.reason);
}

/* Does the raw key (escapes possibly present) name exactly `name`? */
static bool
jr_key_eq(const RpJrMember *m, const char *name, size_t name_len)
{
	RpBuf		b;
	JrParser	p;
	bool		eq;

	if (!m->key_escaped)
		return m->key_len == name_len && memcmp(m->key, name, name_len) == 0;
	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *) m->key - 1;
	p.len = m->key_len + 2;
	rp_buf_init(&b, m->key_len + 1);
	eq = jr_string(&p, &b, NULL) == 0 && b.len == name_len && memcmp(b.data, name, name_len) == 0;
	rp_buf_free(&b);
	return eq;
}

int
rp_jr_find(const RpJrDoc *doc, const char *name, const RpJrMember **m)
{
	size_t		name_len = strlen(name);
	const RpJrMember *found = NULL;

	*m = NULL;
	if (doc->type != RP_JR_OBJECT)
		return 0;
	for (int i = 0; i < doc->nmembers; i++)
	{
		if (!jr_key_eq(&doc->members[i], name, name_len))
			continue;
		if (found)
			return rp_fail(RP_HALT_MALFORMED, "duplicate member \"%s\"", name);
		found = &doc->members[i];
	}
	*m = found;
	return found ? 1 : 0;
}

int
rp_jr_string(const char *val, size_t len, RpBuf *out)
{
	JrParser	p;
	size_t		mark = out->len;

	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *) val;
	p.len = len;
	if (len < 2 || val[0] != '"' || jr_string(&p, out, NULL) < 0 || p.pos != len)
	{
		out->len = mark;
		return rp_fail(RP_HALT_MALFORMED, "invalid JSON string%s%s",
					   p.reason ? ": " : "", p.reason ? p.reason : "");
	}
	return 0;
}

bool
rp_jr_string_eq(const char *val, size_t len, const char *s)
{
	size_t		n = strlen(s);
	RpBuf		b;
	bool		eq;

	if (len < 2 || val[0] != '"')
		return false;
	/* fast path: no escape in the span */
	if (memchr(val, '\\', len) == NULL)
		return len == n + 2 && val[len - 1] == '"' && memcmp(val + 1, s, n) == 0;
	rp_buf_init(&b, len);
	eq = rp_jr_string(val, len, &b) == 0 && b.len == n && memcmp(b.data, s, n) == 0;
	rp_buf_free(&b);
	return eq;
}

int
rp_jr_int64(const char *val, size_t len, int64_t *out)
{
	size_t		i = 0;
	bool		neg = false;
	uint64_t	v = 0;
	uint64_t	limit;

	if (len > 0 && val[0] == '-')
	{
		neg = true;
		i = 1;
	}
	if (i >= len)
		return rp_fail(RP_HALT_MALFORMED, "integer expected");
	if (val[i] == '0' && len - i > 1)
		return rp_fail(RP_HALT_MALFORMED, "integer expected");
	limit = neg ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;
	for (; i < len; i++)
	{
		unsigned	d;

		if (val[i] < '0' || val[i] > '9')
			return rp_fail(RP_HALT_MALFORMED, "integer expected");
		d = (unsigned) (val[i] - '0');
		if (v > (limit - d) / 10)
			return rp_fail(RP_HALT_MALFORMED, "integer out of range");
		v = v * 10 + d;
	}
	*out = neg ? (int64_t) (0 - v) : (int64_t) v;
	return 0;
}

const char *
rp_jr_type_name(RpJrType t)
{
	static const char *const names[] = {
		"null", "false", "true", "number", "string", "array", "object"
	};

	return (unsigned) t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}
