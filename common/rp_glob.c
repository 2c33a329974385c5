/*
 * rp_glob.c
 *    '*'-only glob matching (see rp_glob.h).
 */
#include <stddef.h>

#include "rp_glob.h"

/*
 * Greedy with one backtrack point: on a mismatch after a '*', the star
 * takes one more character.  Linear in practice, no recursion.
 */
bool
rp_glob_match(const char *pat, const char *s)
{
	const char *star = NULL,
			   *resume = NULL;

	while (*s)
	{
		if (*pat == '*')
		{
			star = pat++;
			resume = s;
		}
		else if (*pat == *s)
		{
			pat++;
			s++;
		}
		else if (star)
		{
			pat = star + 1;
			s = ++resume;
		}
		else
			return false;
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}
