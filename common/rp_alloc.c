/*
 * rp_alloc.c
 *    Allocation helpers for the common modules (see rp_alloc.h).
 */
#include "rp_alloc.h"

#ifndef RP_BACKEND
#include <stdio.h>
#include <stdlib.h>

/* Out of memory in the consumer is not recoverable: say so and stop. */
static void
rp_oom(size_t n)
{
	fprintf(stderr, "replicant: out of memory (requesting %zu bytes)\n", n);
	exit(1);
}

void	   *
rp_malloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		rp_oom(n);
	return p;
}

void	   *
rp_malloc0(size_t n)
{
	void	   *p = calloc(1, n ? n : 1);

	if (p == NULL)
		rp_oom(n);
	return p;
}

void	   *
rp_realloc(void *p, size_t n)
{
	void	   *q = realloc(p, n ? n : 1);

	if (q == NULL)
		rp_oom(n);
	return q;
}

void
rp_free(void *p)
{
	free(p);
}
#endif

char	   *
rp_strndup(const char *s, size_t n)
{
	char	   *d = rp_malloc(n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}
