/*
 * rp_cliparse.c
 *    Strict parsing of the command line's values (see rp_cliparse.h).
 */
#include <string.h>
#include <strings.h>

#include "cli/rp_cliparse.h"

/* Digits only (no sign, no blank): strtoull would take "-5" as 2^64-5. */
static bool
rp_parse_digits(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t	v = 0;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
	{
		unsigned	d = (unsigned) (*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*s = p;
	*out = v;
	return true;
}

bool
rp_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	static const struct
	{
		const char *unit;
		int			shift;
	}			units[] = {
		{"", 0}, {"B", 0}, {"kB", 10}, {"MB", 20}, {"GB", 30}, {"TB", 40}
	};
	uint64_t	v;

	if (s == NULL || !rp_parse_digits(&s, &v))
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
	{
		if (strcasecmp(s, units[i].unit) != 0)
			continue;
		/* a shift that would push bits out is an overflow, not a huge limit */
		if (v > (UINT64_MAX >> units[i].shift))
			return false;
		v <<= units[i].shift;
		if (v < min || v > max)
			return false;
		*out = v;
		return true;
	}
	return false;
}

bool
rp_parse_int(const char *s, int min, int max, int *out)
{
	bool		neg = false;
	uint64_t	v;
	int64_t		n;

	if (s == NULL)
		return false;
	if (*s == '-')
	{
		neg = true;
		s++;
	}
	if (!rp_parse_digits(&s, &v) || *s != '\0' || v > (uint64_t) INT32_MAX + 1)
		return false;
	n = neg ? -(int64_t) v : (int64_t) v;
	if (n < min || n > max)
		return false;
	*out = (int) n;
	return true;
}

/* s (length len) a prefix of word, at least minlen long */
static bool
rp_word_prefix(const char *s, size_t len, const char *word, size_t minlen)
{
	return len >= minlen && len <= strlen(word) && strncasecmp(s, word, len) == 0;
}

bool
rp_parse_bool(const char *s, bool *out)
{
	size_t		len;

	if (s == NULL)
		return false;
	len = strlen(s);
	/* as the server's parse_bool_with_len: "o" alone is not unique enough */
	if (rp_word_prefix(s, len, "true", 1) || rp_word_prefix(s, len, "yes", 1) ||
		rp_word_prefix(s, len, "on", 2) || (len == 1 && s[0] == '1'))
		*out = true;
	else if (rp_word_prefix(s, len, "false", 1) || rp_word_prefix(s, len, "no", 1) ||
			 rp_word_prefix(s, len, "off", 2) || (len == 1 && s[0] == '0'))
		*out = false;
	else
		return false;
	return true;
}

/* The scanner's white space (scanner_isspace). */
static bool
rp_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/*
 * Is prefix one of the names of list, split as SplitIdentifierString
 * does?  -1: invalid syntax.  Names are compared in place, so nothing is
 * copied; a doubled quote inside a quoted name stands for one quote.
 */
static int
rp_list_has(const char *list, const char *prefix)
{
	const char *p = list;

	while (rp_isspace(*p))
		p++;
	if (*p == '\0')
		return 0;
	for (;;)
	{
		const char *want = prefix;
		bool		same = true;

		if (*p == '"')
		{
			for (p++;; p++)
			{
				if (*p == '\0')
					return -1;	/* mismatched quotes */
				if (*p == '"' && p[1] != '"')
					break;
				if (*p == '"')
					p++;		/* "" is one quote */
				if (same && *want == *p)
					want++;
				else
					same = false;
			}
			p++;
		}
		else
		{
			const char *start = p;

			while (*p && *p != ',' && !rp_isspace(*p))
			{
				char		c = *p >= 'A' && *p <= 'Z' ? (char) (*p - 'A' + 'a') : *p;

				if (same && *want == c)
					want++;
				else
					same = false;
				p++;
			}
			if (p == start)
				return -1;		/* an empty unquoted name */
		}
		if (same && *want == '\0')
			return 1;
		while (rp_isspace(*p))
			p++;
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return -1;
		p++;
		while (rp_isspace(*p))
			p++;
	}
}

RpMsgPass
rp_messages_pass(const char *include_messages, const char *message_prefixes, const char *prefix)
{
	bool		include = true;
	int			has;

	/* a bare option (-o include_messages) means true, as in the plugin */
	if (include_messages && *include_messages && !rp_parse_bool(include_messages, &include))
		return RP_MSG_PASS_UNKNOWN;
	if (!include)
		return RP_MSG_PASS_NO;
	if (message_prefixes == NULL)
		return RP_MSG_PASS_YES;
	has = rp_list_has(message_prefixes, prefix);
	if (has < 0)
		return RP_MSG_PASS_UNKNOWN;
	/* an empty list selects every prefix (the plugin's NIL) */
	if (has == 0)
	{
		const char *p = message_prefixes;

		while (rp_isspace(*p))
			p++;
		return *p == '\0' ? RP_MSG_PASS_YES : RP_MSG_PASS_NO;
	}
	return RP_MSG_PASS_YES;
}

/* A --sink the consumer has: stdout, file:, exec:, a PostgreSQL URI or a NATS URL. */
bool
rp_cli_sink_known(const char *sink)
{
	return strcmp(sink, "stdout") == 0 || strcmp(sink, "-") == 0 ||
		strncmp(sink, "file:", 5) == 0 || strncmp(sink, "exec:", 5) == 0 ||
		strncmp(sink, "postgresql://", 13) == 0 || strncmp(sink, "postgres://", 11) == 0 ||
		strncmp(sink, "postgres:", 9) == 0 || rp_cli_sink_is_nats(sink);
}

bool
rp_cli_sink_is_nats(const char *sink)
{
	return strncmp(sink, "nats://", 7) == 0 || strncmp(sink, "tls://", 6) == 0;
}

const char *
rp_cli_sink_kind(const char *sink)
{
	if (sink == NULL || !rp_cli_sink_known(sink))
		return "";
	if (strcmp(sink, "stdout") == 0 || strcmp(sink, "-") == 0)
		return "stdout";
	if (strncmp(sink, "file:", 5) == 0)
		return "file";
	if (strncmp(sink, "exec:", 5) == 0)
		return "exec";
	return rp_cli_sink_is_nats(sink) ? "nats" : "postgresql";
}
