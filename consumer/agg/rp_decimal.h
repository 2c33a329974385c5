/*
 * rp_decimal.h
 *    Exact signed decimals of any size for the aggregate folds: a magnitude
 *    in base 10^9 limbs and a count of decimal places.  Sums never drift:
 *    integers, numerics (base-10000 digits) and finite doubles (each one an
 *    exact finite decimal) all convert without rounding.  Only avg divides,
 *    and it rounds once, at a scale the caller names.
 */
#ifndef RP_DECIMAL_H
#define RP_DECIMAL_H

#include "rp_buf.h"

/* What a numeric, float or text value turned out to be. */
typedef enum RpDecKind
{
	RP_DEC_FINITE = 0,
	RP_DEC_NAN,
	RP_DEC_PINF,
	RP_DEC_NINF
} RpDecKind;

typedef struct RpDecimal
{
	bool		neg;
	int			scale;			/* decimal places of the magnitude */
	int			n;				/* limbs in use; 0 is zero */
	int			cap;
	uint32_t   *limb;			/* little-endian, base 10^9 */
} RpDecimal;

extern void rp_decimal_init(RpDecimal *d);
extern void rp_decimal_free(RpDecimal *d);
extern void rp_decimal_zero(RpDecimal *d);
extern void rp_decimal_copy(RpDecimal *dst, const RpDecimal *src);
extern void rp_decimal_set_int64(RpDecimal *d, int64_t v);

/* Finite doubles only (the caller sorts out NaN and infinities). */
extern void rp_decimal_set_double(RpDecimal *d, double v);

/*
 * The numeric encoding's payload (after its u32 length): ndigits, weight,
 * sign, dscale, base-10000 digits.  Returns the kind, or -1 when malformed;
 * *dscale gets the value's display scale.
 */
extern int	rp_decimal_set_numeric(RpDecimal *d, const unsigned char *p, uint32_t len,
								   int *dscale);

/* Plain decimal text ("-12.340", "NaN", "Infinity"); -1 when not one. */
extern int	rp_decimal_parse(RpDecimal *d, const char *s, int *dscale);

/* acc += x * k (k may be negative: removal). */
extern void rp_decimal_addmul(RpDecimal *acc, const RpDecimal *x, int64_t k);

extern bool rp_decimal_is_zero(const RpDecimal *d);
extern int	rp_decimal_cmp(const RpDecimal *a, const RpDecimal *b);

/* Text with at least min_scale places (trailing zeros beyond it trimmed). */
extern void rp_decimal_text(const RpDecimal *d, int min_scale, RpBuf *out);

/* d / n (n > 0) rounded half away from zero to scale places. */
extern void rp_decimal_div_text(const RpDecimal *d, uint64_t n, int scale, RpBuf *out);

/*
 * A byte key whose memcmp order is the numeric order (NaN above +Infinity,
 * as PostgreSQL sorts them); equal values (1.5, 1.50) get equal keys.
 */
extern void rp_decimal_key(const RpDecimal *d, RpBuf *out);
extern void rp_decimal_special_key(RpDecKind kind, RpBuf *out);

#endif							/* RP_DECIMAL_H */
