/*
 * rp_snaptoken.c
 *    Snapshot progress tokens (see rp_snaptoken.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_buf.h"
#include "base/rp_ckpt.h"
#include "snapshot/rp_snaptoken.h"

static void
rp_tok_escape(RpBuf *b, const char *s)
{
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '%' || c == '|' || c < 0x20 || c == 0x7f)
		{
			char		hex[4];

			snprintf(hex, sizeof(hex), "%%%02X", c);
			rp_buf_put_text(b, hex);
		}
		else
			rp_buf_put_char(b, (char) c);
	}
}

static int
rp_tok_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Unescape s[0..len) into a new string; NULL when malformed. */
static char *
rp_tok_unescape(const char *s, size_t len)
{
	char	   *out = rp_malloc(len + 1);
	size_t		n = 0;

	for (size_t i = 0; i < len; i++)
	{
		if (s[i] == '%')
		{
			int			hi,
						lo;

			if (i + 2 >= len)
			{
				rp_free(out);
				return NULL;
			}
			hi = rp_tok_hex(s[i + 1]);
			lo = rp_tok_hex(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			{
				rp_free(out);
				return NULL;
			}
			out[n++] = (char) (hi * 16 + lo);
			i += 2;
		}
		else
			out[n++] = s[i];
	}
	out[n] = '\0';
	return out;
}

/* An unsigned decimal field of at most max; false when malformed. */
static bool
rp_tok_number(const char *f, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t	v = 0;

	if (len == 0 || len > 20)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		uint64_t	d = (uint64_t) (f[i] - '0');

		if (f[i] < '0' || f[i] > '9' || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

/* v2's FILENODE, HORIZON and POS (BLOCK.OFFSET or empty). */
static bool
rp_tok_heap(RpSnapToken *tok, const char **f, const size_t *len)
{
	uint64_t	v;
	const char *dot;

	if (!rp_tok_number(f[0], len[0], UINT32_MAX, &v) || v == 0)
		return false;
	tok->filenode = (uint32_t) v;
	if (!rp_tok_number(f[1], len[1], UINT64_MAX, &tok->horizon))
		return false;
	if (len[2] == 0)
		return true;
	dot = memchr(f[2], '.', len[2]);
	if (dot == NULL || !rp_tok_number(f[2], (size_t) (dot - f[2]), UINT32_MAX, &v))
		return false;
	tok->blk = (uint32_t) v;
	if (!rp_tok_number(dot + 1, len[2] - (size_t) (dot + 1 - f[2]), UINT16_MAX, &v) || v == 0)
		return false;
	tok->off = (uint16_t) v;
	tok->have_pos = true;
	return true;
}

char	   *
rp_snaptoken_format(const RpSnapToken *tok)
{
	RpBuf		b;
	char		lsn[24];
	char		num[64];

	rp_buf_init(&b, 128);
	rp_lsn_format(tok->lsn, lsn);
	rp_buf_put_text(&b, tok->heap ? "v2|" : "v1|");
	rp_buf_put_text(&b, lsn);
	snprintf(num, sizeof(num), "|%d|%" PRIu64 "|%" PRId64 "|", tok->done ? 1 : 0, tok->rows, tok->at_ms);
	rp_buf_put_text(&b, num);
	rp_tok_escape(&b, tok->snapshot_id);
	if (tok->heap)
	{
		snprintf(num, sizeof(num), "|%" PRIu32 "|%" PRIu64 "|", tok->filenode, tok->horizon);
		rp_buf_put_text(&b, num);
		if (tok->have_pos)
		{
			snprintf(num, sizeof(num), "%" PRIu32 ".%u", tok->blk, (unsigned) tok->off);
			rp_buf_put_text(&b, num);
		}
	}
	for (int i = 0; !tok->heap && i < tok->nkeys; i++)
	{
		rp_buf_put_char(&b, '|');
		rp_tok_escape(&b, tok->keys[i]);
	}
	rp_buf_put_char(&b, '\0');
	return b.data;
}

void
rp_snaptoken_free(RpSnapToken *tok)
{
	for (int i = 0; i < tok->nkeys; i++)
		rp_free(tok->keys[i]);
	tok->nkeys = 0;
}

bool
rp_snaptoken_parse(const char *text, RpSnapToken *tok)
{
	const char *p;
	const char *fields[6 + RP_SNAPTOKEN_MAX_KEYS];
	size_t		lens[6 + RP_SNAPTOKEN_MAX_KEYS];
	int			n = 0;
	char		tmp[64];
	char	   *end;

	memset(tok, 0, sizeof(*tok));
	if (strncmp(text, "v2|", 3) == 0)
		tok->heap = true;
	else if (strncmp(text, "v1|", 3) != 0)
		return false;
	p = text   +3;

	for (;;)
	{
		const char *bar = strchr(p, '|');
		size_t		len = bar ? (size_t) (bar - p) : strlen(p);

		if (n == 5 + RP_SNAPTOKEN_MAX_KEYS)
			return false;
		fields[n] = p;
		lens[n++] = len;
		if (!bar)
			break;
		p = bar + 1;
	}
	if (n < 5)
		return false;
	/* lsn */
	if (lens[0] == 0 || lens[0] >= sizeof(tmp))
		return false;
	memcpy(tmp, fields[0], lens[0]);
	tmp[lens[0]] = '\0';
	if (!rp_lsn_parse(tmp, &tok->lsn))
		return false;
	/* done */
	if (lens[1] != 1 || (fields[1][0] != '0' && fields[1][0] != '1'))
		return false;
	tok->done = fields[1][0] == '1';
	/* rows, at_ms */
	for (int f = 2; f <= 3; f++)
	{
		if (lens[f] == 0 || lens[f] >= sizeof(tmp))
			return false;
		memcpy(tmp, fields[f], lens[f]);
		tmp[lens[f]] = '\0';
		errno = 0;
		if (f == 2)
		{
			if (tmp[0] == '-')
				return false;
			tok->rows = strtoull(tmp, &end, 10);
		}
		else
			tok->at_ms = strtoll(tmp, &end, 10);
		if (errno || *end)
			return false;
	}
	/* snapshot id: plain characters only */
	if (n >= 5)
	{
		if (lens[4] >= sizeof(tok->snapshot_id))
			return false;
		memcpy(tok->snapshot_id, fields[4], lens[4]);
		tok->snapshot_id[lens[4]] = '\0';
		if (strchr(tok->snapshot_id, '%'))
			return false;
	}
	if (tok->heap)
		return n == 8 && rp_tok_heap(tok, fields + 5, lens + 5);
	for (int i = 5; i < n; i++)
	{
		char	   *k = rp_tok_unescape(fields[i], lens[i]);

		if (k == NULL)
		{
			rp_snaptoken_free(tok);
			return false;
		}
		tok->keys[tok->nkeys++] = k;
	}
	return true;
}
