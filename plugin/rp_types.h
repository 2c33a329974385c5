/*
 * rp_types.h
 *    Per-type conversion: which wire encoding a type gets and everything
 *    needed to write its values (output function, element and subtype
 *    conversions), resolved once per type and cached.  The cache is dropped
 *    as a whole on any pg_type invalidation, at the next safe point.
 */
#ifndef RP_TYPES_H
#define RP_TYPES_H

#include "postgres.h"
#include "fmgr.h"
#include "utils/rel.h"

#include "rp_buf.h"

typedef struct RpTypeConv
{
	Oid			typid;			/* as declared (a domain stays a domain here) */
	Oid			basetypid;		/* after domains */
	uint8		encoding;		/* RpEncoding */
	int16		typlen;
	bool		typbyval;
	char		typalign;
	bool		has_outfunc;
	FmgrInfo	outfunc;		/* RP_ENC_TEXT only */
	struct RpTypeConv *elem;	/* arrays: element; ranges: subtype */
} RpTypeConv;

extern void rp_types_init(void);

/* What the session may send: protocol version 1 refuses the timestamps past 294247. */
extern void rp_types_set_protocol(int proto_version, bool json);

/*
 * Where the value being encoded is, for errors that name it: set by the
 * tuple encoder around its columns (NULL elsewhere).
 */
typedef struct RpEncodeWhere
{
	Relation	rel;
	AttrNumber	attnum;			/* 0: between columns */
} RpEncodeWhere;

extern RpEncodeWhere *rp_types_where;

/* Drop every cached conversion if pg_type changed since the last call. */
extern bool rp_types_maybe_reset(void);

extern RpTypeConv *rp_types_get(Oid typid);

/* Write one non-NULL, detoasted-as-needed value in conv's encoding. */
extern void rp_types_encode(RpBuf *buf, const RpTypeConv *conv, Datum value);

/*
 * The SQL spelling of a column type with its typmod, schema-qualified
 * outside pg_catalog ("numeric(12,2)", "public.mood[]"): usable as is in
 * CREATE TABLE on the consumer side.
 */
extern char *rp_types_sql_name(Oid typid, int32 typmod);

#endif							/* RP_TYPES_H */
