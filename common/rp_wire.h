/*
 * rp_wire.h
 *    The replicant wire format: frame header, record tags, flags and value
 *    encodings.  This header is the contract between the output plugin and
 *    every reader (the SQL inspection functions, the consumer).  It holds
 *    constants only; docs/protocol.md is the prose version and must agree.
 *
 * All integers are big-endian.  A binary frame is
 *
 *     'R'  u8 version  record*
 *
 * and each record is
 *
 *     u8 tag  u32 payload_length  payload
 *
 * The explicit length lets a reader check every record against its bounds
 * before looking inside it (fail-closed) and skip nothing silently.
 */
#ifndef RP_WIRE_H
#define RP_WIRE_H

#define RP_FRAME_MAGIC          'R'
/*
 * Version 2 is version 1 plus the extended timestamp range (see
 * RP_TS_EXT_BASE below): the same bytes for every value version 1 carries.
 * A session gets version 1 unless it asks for 2, because a version 1 reader
 * would take an extended timestamp for one of 290000 BC.  Version 3 adds
 * two fields at the end of every Relation record (RP_REL_KIND_* below),
 * which the option partitions=root needs; everything else is version 2.
 * Version 4 ends every Commit and Stream commit record with the timeline of
 * the WAL the commit was decoded from (RP_COMMIT_TLI_LEN), so that a consumer
 * reading a standby that is promoted under it checkpoints on the new
 * timeline from the first commit after the switch; everything else is
 * version 3.
 */
#define RP_PROTO_VERSION        4	/* the newest version this code speaks */
#define RP_PROTO_VERSION_STR    "4" /* the consumer asks for it */
#define RP_PROTO_VERSION_MIN    1
#define RP_PROTO_VERSION_MAX    4
#define RP_PROTO_VERSION_DEFAULT 1	/* the plugin's, when none is asked for */
#define RP_PROTO_VERSION_EXT_TS 2	/* the first with the extended timestamps */
#define RP_PROTO_VERSION_REL_KIND 3 /* the first with the relation kind fields */
#define RP_PROTO_VERSION_COMMIT_TLI 4	/* the first with commit timelines */
#define RP_COMMIT_TLI_LEN       4	/* u32 timeline at the end of a commit */
#define RP_FRAME_HEADER_LEN     2
#define RP_RECORD_HEADER_LEN    5

/* Record tags. */
typedef enum RpTag
{
	RP_TAG_BEGIN = 'B',			/* xid u32, final_lsn u64, commit_time i64 */
	RP_TAG_COMMIT = 'C',		/* flags u8, commit_lsn u64, end_lsn u64,
								 * commit_time i64, [v4: timeline u32] */
	RP_TAG_ORIGIN = 'O',		/* origin_lsn u64, name str */
	RP_TAG_RELATION = 'R',		/* see docs/protocol.md "Relation" */
	RP_TAG_INSERT = 'I',		/* change header, new tuple */
	RP_TAG_UPDATE = 'U',		/* change header, [old tuple], new tuple */
	RP_TAG_DELETE = 'D',		/* change header, [old tuple] */
	RP_TAG_TRUNCATE = 'T',		/* flags u8, [xid u32], nrels u32, relid u32 *
								 * nrels */
	RP_TAG_MESSAGE = 'M',		/* flags u8, [xid u32], lsn u64, prefix str,
								 * content bytes */
	RP_TAG_STREAM_START = 'S',	/* xid u32, first_segment u8 */
	RP_TAG_STREAM_STOP = 'E',	/* (empty) */
	RP_TAG_STREAM_COMMIT = 'c', /* xid u32, commit_lsn u64, end_lsn u64,
								 * commit_time i64, [v4: timeline u32] */
	RP_TAG_STREAM_ABORT = 'A'	/* xid u32, subxid u32 */
} RpTag;

/*
 * Change header: relid u32, flags u8, [xid u32 when RP_CHANGE_HAS_XID].
 * Inside a stream block every change names the (sub)transaction it belongs
 * to, so a reader can drop the changes of an aborted subtransaction.
 */
#define RP_CHANGE_HAS_XID       0x80
#define RP_CHANGE_OLD_KEY       0x01	/* old tuple holds the replica
										 * identity only */
#define RP_CHANGE_OLD_FULL      0x02	/* old tuple holds every column
										 * (IDENTITY FULL) */
#define RP_CHANGE_NO_IDENTITY   0x04	/* table has no usable replica
										 * identity */

/* Truncate flags. */
#define RP_TRUNCATE_CASCADE     0x01
#define RP_TRUNCATE_RESTART_SEQS 0x02

/* Message flags. */
#define RP_MESSAGE_TRANSACTIONAL 0x01

/* Commit flags (reserved, always 0 in version 1). */

/*
 * Tuple: natts u16, then per column a kind byte, then for RP_DATUM_VALUE the
 * value in the column's encoding.  NULL, unchanged TOAST and "not part of
 * the identity" (old-key tuples) are three different kinds, never one.
 */
#define RP_DATUM_NULL           'n'
#define RP_DATUM_VALUE          'v'
#define RP_DATUM_UNCHANGED      'u' /* unchanged TOASTed value: keep the old
									 * one */
#define RP_DATUM_NOT_IN_KEY     'k' /* old-key tuple: column is not in the
									 * identity */

/* Replica identity, as pg_class.relreplident. */
#define RP_IDENTITY_DEFAULT     'd'
#define RP_IDENTITY_NOTHING     'n'
#define RP_IDENTITY_FULL        'f'
#define RP_IDENTITY_INDEX       'i'

/*
 * Relation kind (version 3 on): the record ends with u8 kind, u32
 * partition_set after its columns.  A plain table (a partition published as
 * itself included) has partition_set 0; a partition root published for its
 * partitions (partitions=root) carries a fingerprint of its current set of
 * leaf partitions, so a reader sees ATTACH and DETACH PARTITION as a changed
 * description.  Readers hold RP_REL_KIND_NONE for records without the fields
 * (versions 1 and 2), which means a plain table too.
 */
#define RP_REL_KIND_NONE        0	/* in memory only: no kind fields */
#define RP_REL_KIND_TABLE       'r'
#define RP_REL_KIND_PARTITION_ROOT 'p'
#define RP_REL_KIND_LEN         5	/* u8 kind, u32 partition_set */

/* Relation column flags. */
#define RP_COL_PRIMARY_KEY      0x01
#define RP_COL_IDENTITY         0x02	/* part of the replica identity */
#define RP_COL_NOT_NULL         0x04
#define RP_COL_GENERATED        0x08	/* stored generated column */

/*
 * Value encodings.  Every column (and array element, composite field, range
 * bound) names one; the reader never guesses from a type OID.
 */
typedef enum RpEncoding
{
	RP_ENC_TEXT = 0,			/* str: the type's text output (type OID in
								 * metadata) */
	RP_ENC_BOOL = 1,			/* u8 0/1 */
	RP_ENC_INT2 = 2,			/* i16 */
	RP_ENC_INT4 = 3,			/* i32 */
	RP_ENC_INT8 = 4,			/* i64 */
	RP_ENC_OID = 5,				/* u32 */
	RP_ENC_FLOAT4 = 6,			/* IEEE 754 binary32 bits */
	RP_ENC_FLOAT8 = 7,			/* IEEE 754 binary64 bits */
	RP_ENC_NUMERIC = 8,			/* u32 len, then ndigits i16, weight i16, sign
								 * u16, dscale u16, base-10000 digits i16 *
								 * ndigits */
	RP_ENC_STRING = 9,			/* str (text, varchar, bpchar, name) */
	RP_ENC_BYTEA = 10,			/* u32 len, raw bytes */
	RP_ENC_UUID = 11,			/* 16 bytes */
	RP_ENC_DATE = 12,			/* i32 days since 1970-01-01; INT32_MIN/MAX =
								 * -/+infinity */
	RP_ENC_TIME = 13,			/* i64 microseconds since midnight */
	RP_ENC_TIMETZ = 14,			/* i64 microseconds, i32 UTC offset in seconds
								 * east */
	RP_ENC_TIMESTAMP = 15,		/* i64 us since 1970-01-01 00:00 (no zone);
								 * INT64_MIN/MAX = -/+infinity; the years
								 * after 294247 in the extended range */
	RP_ENC_TIMESTAMPTZ = 16,	/* i64 us since 1970-01-01 00:00 UTC; the same */
	RP_ENC_INTERVAL = 17,		/* i64 microseconds, i32 days, i32 months */
	RP_ENC_JSON = 18,			/* str: JSON text */
	RP_ENC_JSONB = 19,			/* str: JSON text (canonical jsonb output) */
	RP_ENC_ARRAY = 20,			/* see docs/protocol.md "Arrays" */
	RP_ENC_ENUM = 21,			/* str: the label */
	RP_ENC_COMPOSITE = 22,		/* see docs/protocol.md "Composites" */
	RP_ENC_RANGE = 23,			/* see docs/protocol.md "Ranges" */
	RP_ENC__COUNT
} RpEncoding;

/* Numeric sign word, as in PostgreSQL's binary numeric format. */
#define RP_NUMERIC_POS          0x0000
#define RP_NUMERIC_NEG          0x4000
#define RP_NUMERIC_NAN          0xC000
#define RP_NUMERIC_PINF         0xD000
#define RP_NUMERIC_NINF         0xF000

/* Range flags. */
#define RP_RANGE_EMPTY          0x01
#define RP_RANGE_LB_INC         0x02
#define RP_RANGE_UB_INC         0x04
#define RP_RANGE_LB_INF         0x08
#define RP_RANGE_UB_INF         0x10

/* Sentinels for infinite dates and timestamps. */
#define RP_DATE_NEG_INF         ((int32_t) (-2147483647 - 1))
#define RP_DATE_POS_INF         ((int32_t) 2147483647)
#define RP_TS_NEG_INF           ((int64_t) (-9223372036854775807LL - 1))
#define RP_TS_POS_INF           ((int64_t) 9223372036854775807LL)

/* PostgreSQL's epoch (2000-01-01) relative to the Unix epoch. */
#define RP_PG_EPOCH_DAYS        10957
#define RP_PG_EPOCH_USECS       INT64_C(946684800000000)

/*
 * PostgreSQL's finite timestamps, in its own microseconds since 2000-01-01:
 * MIN_TIMESTAMP (4714-11-24 00:00 BC) <= t < END_TIMESTAMP (294277-01-01).
 * Its finite dates, in days since 2000-01-01: 4714-11-24 BC to
 * 5874897-12-31, which fit the wire's int32 days since 1970 with room left.
 */
#define RP_PG_TS_MIN            INT64_C(-211813488000000000)
#define RP_PG_TS_END            INT64_C(9223371331200000000)
#define RP_PG_DATE_MIN          (-2451545)
#define RP_PG_DATE_MAX          2145031948

/*
 * Microseconds since 1970 in an int64 end at 294247-01-10 04:00:54.775807
 * (INT64_MAX, which is also +infinity), about 30 years before PostgreSQL's
 * last timestamp.  Those last instants travel in the extended range, just
 * above INT64_MIN, that no PostgreSQL timestamp uses (the earliest one is
 * RP_TS_WIRE_MIN): wire value RP_TS_EXT_BASE + k is the instant k
 * microseconds after RP_TS_EXT_FIRST_PG (PostgreSQL epoch), for
 * 0 <= k <= RP_TS_EXT_MAX_K.  Any other wire value below RP_TS_WIRE_MIN,
 * except INT64_MIN, is no timestamp: a reader refuses it.
 */
#define RP_TS_WIRE_MIN          (RP_PG_TS_MIN + RP_PG_EPOCH_USECS)
#define RP_TS_EXT_BASE          (RP_TS_NEG_INF + 1)
#define RP_TS_EXT_FIRST_PG      (RP_TS_POS_INF - RP_PG_EPOCH_USECS)
#define RP_TS_EXT_MAX_K         (RP_PG_TS_END - 1 - RP_TS_EXT_FIRST_PG)

#endif							/* RP_WIRE_H */
