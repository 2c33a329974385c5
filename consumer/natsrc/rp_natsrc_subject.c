/*
 * rp_natsrc_subject.c
 *    --nats-subjects: which data messages reach the sink (pure; no libnats).
 */
#include "rp_alloc.h"

#include "natsrc/rp_natsrc_int.h"

/* Does a NATS subject match the wildcard pattern ('*' one token, '>' the rest)? */
bool
rp_natsrc_subject_match(const char *pattern, const char *subject)
{
	while (*pattern && *subject)
	{
		const char *pe = strchr(pattern, '.');
		const char *se = strchr(subject, '.');
		size_t		pl = pe ? (size_t) (pe - pattern) : strlen(pattern);
		size_t		sl = se ? (size_t) (se - subject) : strlen(subject);

		if (pl == 1 && pattern[0] == '>')
			return true;
		if (!(pl == 1 && pattern[0] == '*') && (pl != sl || memcmp(pattern, subject, pl) != 0))
			return false;
		pattern += pl + (pe ? 1 : 0);
		subject += sl + (se ? 1 : 0);
		if ((pe == NULL) != (se == NULL))
			return false;
		if (pe == NULL)
			return true;
	}
	return *pattern == '\0' && *subject == '\0';
}
