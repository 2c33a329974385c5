/*
 * rp_glob.h
 *    Table selection patterns: '*' matches any run of characters, every
 *    other character itself.  The plugin filters with it, and the
 *    consumer's snapshot selects the same tables with it.
 */
#ifndef RP_GLOB_H
#define RP_GLOB_H

#include <stdbool.h>

extern bool rp_glob_match(const char *pat, const char *s);

#endif							/* RP_GLOB_H */
