/*
 * rp_json.c
 *    JSON string escaping (see rp_json.h).
 */
#include "rp_alloc.h"
#include "rp_json.h"

size_t
rp_utf8_seq(const unsigned char *s, size_t left)
{
	unsigned char c = s[0];
	size_t		n;
	uint32_t	cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* overlong forms, surrogates and values past U+10FFFF are invalid */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		(cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return n;
}

bool
rp_utf8_valid(const unsigned char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		n = rp_utf8_seq(s + i, len - i);

		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

size_t
rp_utf8_cut(const char *str, size_t len, size_t max)
{
	const unsigned char *s = (const unsigned char *) str;
	size_t		cut = max;

	if (len <= max)
		return len;

	/*
	 * A sequence is a lead byte and up to three continuation bytes: a cut
	 * before a byte that is not a continuation byte splits none, nor does one
	 * after four continuation bytes in a row (what ends there is not one
	 * sequence).  rp_utf8_seq's verdict on each piece is then the same as on
	 * the whole.
	 */
	for (int k = 0; k < 3 && (s[cut] & 0xC0) == 0x80; k++)
		cut--;
	return (s[cut] & 0xC0) == 0x80 ? max : cut;
}

/*
 * The escaping loop, inlined in both callers: rp_json_string is hot (every
 * key and string of every line), and a call more per string costs it
 * several percent.
 */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void
rp_json_escape_body(RpBuf *buf, const char *str, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *) str;
	size_t		i = 0;

	while (i < len)
	{
		unsigned char c = s[i];

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
		{
			/* runs of plain ASCII: the common case, copied in one go */
			size_t		j = i + 1;

			while (j < len && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
				j++;
			rp_buf_put_bytes(buf, s + i, j - i);
			i = j;
			continue;
		}
		if (c >= 0x80)
		{
			size_t		n = rp_utf8_seq(s + i, len - i);

			if (n == 0)
			{
				rp_buf_put_bytes(buf, "\xEF\xBF\xBD", 3);
				i++;
			}
			else
			{
				rp_buf_put_bytes(buf, s + i, n);
				i += n;
			}
			continue;
		}
		rp_buf_reserve(buf, 6);
		buf->data[buf->len++] = '\\';
		switch (c)
		{
			case '"':
				buf->data[buf->len++] = '"';
				break;
			case '\\':
				buf->data[buf->len++] = '\\';
				break;
			case '\n':
				buf->data[buf->len++] = 'n';
				break;
			case '\r':
				buf->data[buf->len++] = 'r';
				break;
			case '\t':
				buf->data[buf->len++] = 't';
				break;
			case '\b':
				buf->data[buf->len++] = 'b';
				break;
			case '\f':
				buf->data[buf->len++] = 'f';
				break;
			default:
				buf->data[buf->len++] = 'u';
				buf->data[buf->len++] = '0';
				buf->data[buf->len++] = '0';
				buf->data[buf->len++] = hex[c >> 4];
				buf->data[buf->len++] = hex[c & 15];
				break;
		}
		i++;
	}
}

void
rp_json_string(RpBuf *buf, const char *str, size_t len)
{
	/* reserve the common case: no escapes */
	rp_buf_reserve(buf, len + 2);
	buf->data[buf->len++] = '"';
	rp_json_escape_body(buf, str, len);
	rp_buf_put_char(buf, '"');
}

void
rp_json_escape(RpBuf *buf, const char *str, size_t len)
{
	rp_json_escape_body(buf, str, len);
}
