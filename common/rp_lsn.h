/*
 * rp_lsn.h
 *    WAL positions as text, the way PostgreSQL writes pg_lsn ("16/B374D848":
 *    two hexadecimal halves, upper case, no leading zeros).  One formatter
 *    and one parser for everything that prints or reads an LSN: the
 *    checkpoint file, the log lines, the mirror's checkpoint row, errors.
 */
#ifndef RP_LSN_H
#define RP_LSN_H

#include <stdbool.h>
#include <stdint.h>

/* "FFFFFFFF/FFFFFFFF" and its terminator */
#define RP_LSN_BUFLEN 18

/* Writes lsn into buf (at least RP_LSN_BUFLEN bytes) and returns buf. */
extern char *rp_lsn_format(uint64_t lsn, char *buf);

/*
 * Reads "X/X" with 1 to 8 hexadecimal digits on each side (either case)
 * and nothing else: false, and *lsn untouched, for anything else.
 */
extern bool rp_lsn_parse(const char *s, uint64_t *lsn);

#endif							/* RP_LSN_H */
