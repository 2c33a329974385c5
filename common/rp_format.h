/*
 * rp_format.h
 *    Text forms of pre-cast values, as the JSON renderer writes them.
 *    Pure functions of the encoded bytes: no locale, no time zone, no
 *    DateStyle, so the same value always prints the same (G6).
 */
#ifndef RP_FORMAT_H
#define RP_FORMAT_H

#include "rp_buf.h"

extern void rp_fmt_int64(RpBuf *buf, int64_t v);
extern void rp_fmt_uint64(RpBuf *buf, uint64_t v);
extern void rp_fmt_lsn(RpBuf *buf, uint64_t lsn);

/* Shortest text that reads back to the same double; NaN/Infinity spelled out. */
extern void rp_fmt_float8(RpBuf *buf, double v);
extern void rp_fmt_float4(RpBuf *buf, float v);

/* Exact decimal from the numeric encoding's payload (after its length). */
extern bool rp_fmt_numeric(RpBuf *buf, const unsigned char *p, uint32_t len);
extern void rp_fmt_date(RpBuf *buf, int32_t days);
extern void rp_fmt_time(RpBuf *buf, int64_t usecs);
extern void rp_fmt_timetz(RpBuf *buf, int64_t usecs, int32_t offset_east);

/*
 * RFC 3339 of a wire timestamp (extended range included; years past 9999
 * as "+294276"); with_zone appends "Z" (timestamptz), without it nothing.
 */
extern void rp_fmt_timestamp(RpBuf *buf, int64_t usecs, bool with_zone);
extern void rp_fmt_uuid(RpBuf *buf, const unsigned char *p);
extern void rp_fmt_base64(RpBuf *buf, const unsigned char *p, size_t len);

/* Days since 1970-01-01 to a proleptic Gregorian civil date. */
extern void rp_civil_from_days(int64_t days, int64_t *year, int *month, int *day);

#endif							/* RP_FORMAT_H */
