/*
 * rp_typeenc.h
 *    Which wire encoding a type gets: the rule the plugin encodes by and the
 *    consumer's snapshot reader must follow exactly (a row copied by the
 *    snapshot and the same row streamed by the plugin are one value on the
 *    wire).  Part of the wire contract, so written once, here.
 *
 * The rule, on the type after domains:
 *   1. a built-in with a fixed encoding (the table in rp_typeenc.c);
 *   2. else by pg_type.typtype: enum, composite, range (of its subtype);
 *   3. else a true array (of its element);
 *   4. else RP_ENC_TEXT, the type's own output.
 * Steps 2 and 3 need the catalog, which each side reads its own way.
 *
 * The consumer does not build against the server's headers, so the
 * built-in OIDs are named here; the plugin checks them against
 * catalog/pg_type_d.h at compile time.
 */
#ifndef RP_TYPEENC_H
#define RP_TYPEENC_H

#include <stdint.h>

/* built-in type OIDs (pg_type.dat): fixed since PostgreSQL 8 and never reused */
#define RP_OID_BOOL			16
#define RP_OID_BYTEA		17
#define RP_OID_NAME			19
#define RP_OID_INT8			20
#define RP_OID_INT2			21
#define RP_OID_INT4			23
#define RP_OID_TEXT			25
#define RP_OID_OID			26
#define RP_OID_JSON			114
#define RP_OID_FLOAT4		700
#define RP_OID_FLOAT8		701
#define RP_OID_BPCHAR		1042
#define RP_OID_VARCHAR		1043
#define RP_OID_DATE			1082
#define RP_OID_TIME			1083
#define RP_OID_TIMESTAMP	1114
#define RP_OID_TIMESTAMPTZ	1184
#define RP_OID_INTERVAL		1186
#define RP_OID_TIMETZ		1266
#define RP_OID_NUMERIC		1700
#define RP_OID_UUID			2950
#define RP_OID_JSONB		3802

/* The first OID a user object gets (FirstNormalObjectId): built-ins lie below it. */
#define RP_OID_FIRST_NORMAL 16384

/* pg_type.typtype values the rule looks at */
#define RP_TYPTYPE_COMPOSITE 'c'
#define RP_TYPTYPE_DOMAIN	'd'
#define RP_TYPTYPE_ENUM		'e'
#define RP_TYPTYPE_RANGE	'r'

/* Step 1: the built-in's RpEncoding, or -1 when typid (after domains) is none of them. */
extern int	rp_typeenc_builtin(uint32_t typid);

/*
 * Step 2: RP_ENC_ENUM, RP_ENC_COMPOSITE or RP_ENC_RANGE for that
 * typtype, or -1 (then step 3).
 */
extern int	rp_typeenc_by_typtype(char typtype);

#endif							/* RP_TYPEENC_H */
