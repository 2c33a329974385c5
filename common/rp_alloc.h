/*
 * rp_alloc.h
 *    Memory allocation for code shared by the plugin and the consumer.
 *
 * The common modules are compiled twice: into the output plugin with
 * RP_BACKEND defined (memory comes from the current PostgreSQL memory
 * context, so a per-change context reset frees it) and into the consumer
 * (malloc; out of memory is fatal there, as in pg_recvlogical).
 * Include this header first in every common .c file: in the backend it
 * brings in postgres.h, which must precede every other include.
 */
#ifndef RP_ALLOC_H
#define RP_ALLOC_H

#ifdef RP_BACKEND
#include "postgres.h"
/* "huge" variants: one encoded value may approach PostgreSQL's 1 GB limit */
#define rp_malloc(n)        MemoryContextAllocHuge(CurrentMemoryContext, (n))
#define rp_malloc0(n)       MemoryContextAllocExtended(CurrentMemoryContext, (n), \
												   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO)
#define rp_realloc(p, n)    repalloc_huge((p), (n))
#define rp_free(p)          pfree(p)
#else
#include <stddef.h>
extern void *rp_malloc(size_t n);
extern void *rp_malloc0(size_t n);
extern void *rp_realloc(void *p, size_t n);
extern void rp_free(void *p);
#endif

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

extern char *rp_strndup(const char *s, size_t n);

#endif							/* RP_ALLOC_H */
