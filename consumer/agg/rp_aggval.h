/*
 * rp_aggval.h
 *    Values of aggregate bindings: one reader per supported type class, so
 *    a value read from a pre-cast stream record and the same value read
 *    from the seed SELECT's text give the same key, text and number.  A
 *    timestamp or date without zone is taken as UTC; text orders by its
 *    bytes (the "C" collation).
 */
#ifndef RP_AGGVAL_H
#define RP_AGGVAL_H

#include "rp_buf.h"
#include "agg/rp_decimal.h"
#include "rp_decode.h"
#include "agg/rp_fold.h"

typedef enum RpAggClass
{
	RP_AGGV_UNSUPPORTED = 0,
	RP_AGGV_INT,				/* int2, int4, int8 */
	RP_AGGV_FLOAT4,
	RP_AGGV_FLOAT8,
	RP_AGGV_NUMERIC,
	RP_AGGV_STRING,				/* text, varchar */
	RP_AGGV_DATE,
	RP_AGGV_TIMESTAMP,
	RP_AGGV_TIMESTAMPTZ,
	RP_AGGV_BOOL
} RpAggClass;

/*
 * A value read, owning its scratch; v points into it.  want_num asks for
 * the exact number too (sums and averages); the key alone orders and
 * identifies values within one class.
 */
typedef struct RpAggVal
{
	bool		want_num;
	RpFoldValue v;
	RpDecimal	num;
	RpBuf		key;
	RpBuf text;
} RpAggVal;

extern RpAggClass rp_aggval_class(uint32_t type_oid);
extern bool rp_aggval_numeric_class(RpAggClass c);	/* can be summed */

extern void rp_aggval_init(RpAggVal *val);
extern void rp_aggval_free(RpAggVal *val);

/* The seed SQL that renders a quoted column as the text read below. */
extern void rp_aggval_seed_expr(RpAggClass c, const char *qcol, RpBuf *sql);

/* A NULL or value datum of a column with this encoding; false: unreadable. */
extern bool rp_aggval_from_datum(RpAggClass c, uint8_t encoding, const RpDatum *d, RpAggVal *out);

/* Seed text (NULL: SQL NULL); false: unreadable. */
extern bool rp_aggval_from_text(RpAggClass c, const char *text, RpAggVal *out);

#endif							/* RP_AGGVAL_H */
