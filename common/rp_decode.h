/*
 * rp_decode.h
 *    The decoding half of the codec: frames into records.
 *
 * Used by the SQL inspection functions, the plugin's JSON format and the
 * consumer.  Records borrow their bytes from the frame (zero copy) and are
 * valid until the next call on the same decoder; the relations a decoder
 * has seen live in its RpRelMap.  Every value is walked structurally when
 * its record is decoded, so a record that decodes is safe to render or
 * apply.  Errors are value-free: they name the record kind and the byte
 * offset, never content.
 */
#ifndef RP_DECODE_H
#define RP_DECODE_H

#include "rp_alloc.h"
#include "rp_read.h"
#include "rp_wire.h"

typedef struct RpColumn
{
	int16_t		attnum;
	char	   *name;
	uint32_t	type_oid;
	char	   *type_name;		/* schema-qualified unless in pg_catalog */
	int32_t		typmod;
	uint8_t		encoding;		/* RpEncoding */
	uint8_t		flags;			/* RP_COL_* */
} RpColumn;

typedef struct RpRelation
{
	uint32_t	relid;
	char	   *schema;
	char	   *name;
	char		identity;		/* RP_IDENTITY_* */
	uint16_t	natts;
	RpColumn   *cols;
	uint8_t		kind;			/* RP_REL_KIND_*; NONE: a version 1 or 2
								 * record */
	uint32_t	partition_set;	/* PARTITION_ROOT: fingerprint of its leaf
								 * partitions */
} RpRelation;

/* Is the relation a partition root published for its partitions? */
static inline bool
rp_relation_is_root(const RpRelation *rel)
{
	return rel->kind == RP_REL_KIND_PARTITION_ROOT;
}

extern void rp_relation_free(RpRelation *rel);
extern RpRelation *rp_relation_copy(const RpRelation *rel);
extern int	rp_relation_column(const RpRelation *rel, const char *name);

/* relid -> RpRelation, an open-addressing hash owned by its decoder. */
typedef struct RpRelMap
{
	RpRelation **slots;
	size_t		nslots;
	size_t		count;
} RpRelMap;

extern void rp_relmap_init(RpRelMap *map);
extern void rp_relmap_free(RpRelMap *map);
extern RpRelation *rp_relmap_get(const RpRelMap *map, uint32_t relid);

/* Store rel (the map owns it now); returns the one it replaced, or NULL. */
extern RpRelation *rp_relmap_put(RpRelMap *map, RpRelation *rel);

/* One column of a tuple: its kind and, for values, the encoded bytes. */
typedef struct RpDatum
{
	uint8_t		kind;			/* RP_DATUM_* */
	uint32_t	len;
	const unsigned char *data;
} RpDatum;

typedef struct RpTuple
{
	uint16_t	natts;
	RpDatum    *datums;
} RpTuple;

typedef struct RpRecord
{
	uint8_t		tag;			/* RpTag */
	uint32_t	offset;			/* of the record within its frame */
	union
	{
		struct
		{
			uint32_t	xid;
			uint64_t	final_lsn;
			int64_t		commit_time;	/* us since the Unix epoch, UTC */
		}			begin;
		struct
		{
			uint8_t		flags;
			uint32_t	xid;	/* stream commit only */
			uint64_t	commit_lsn;
			uint64_t	end_lsn;
			int64_t		commit_time;
			uint32_t	timeline;	/* version 4: the WAL's timeline (0: not
									 * said) */
		}			commit;
		struct
		{
			uint64_t	lsn;
			const char *name;
			uint32_t	name_len;
		}			origin;
		struct
		{
			RpRelation *rel;	/* now in the decoder's map */
			RpRelation *previous;	/* the one it replaced: caller frees */
		}			relation;
		struct
		{
			uint32_t	relid;
			uint8_t		flags;
			uint32_t	xid;	/* 0 unless RP_CHANGE_HAS_XID */
			const RpRelation *rel;
			bool		has_old;
			bool		has_new;
			RpTuple		old_tuple;
			RpTuple		new_tuple;
		}			change;
		struct
		{
			uint8_t		flags;
			uint32_t	xid;
			uint32_t	nrels;
			const unsigned char *relids;	/* nrels big-endian u32 */
		}			truncate;
		struct
		{
			uint8_t		flags;
			uint32_t	xid;
			uint64_t	lsn;
			const char *prefix;
			uint32_t	prefix_len;
			const unsigned char *content;
			uint32_t	content_len;
		}			message;
		struct
		{
			uint32_t	xid;
			uint8_t		first_segment;
		}			stream_start;
		struct
		{
			uint32_t	xid;
			uint32_t	subxid;
		}			stream_abort;
	}			u;
} RpRecord;

typedef struct RpDecoder
{
	RpRelMap	rels;
	RpReader	frame;			/* the frame being walked */
	const unsigned char *frame_start;
	uint8_t		version;
	RpDatum    *old_datums;
	RpDatum    *new_datums;
	size_t		datum_cap;
	char		error[256];		/* value-free reason of the last failure */
} RpDecoder;

extern void rp_decoder_init(RpDecoder *dec);
extern void rp_decoder_free(RpDecoder *dec);

/*
 * Start walking a frame: checks the magic and the version.  Returns false
 * with dec->error set for a frame that is not one of ours or is of a
 * version this code does not speak.
 */
extern bool rp_decoder_frame(RpDecoder *dec, const void *data, size_t len);

/*
 * Walk a headerless run of whole records (as the consumer stores them for a
 * transaction); the version is the one of the last frame seen.
 */
extern void rp_decoder_records(RpDecoder *dec, const void *data, size_t len);

/* Next record of the frame: 1 = rec filled, 0 = end of frame, -1 = error. */
extern int	rp_decoder_next(RpDecoder *dec, RpRecord *rec);

extern uint32_t rp_truncate_relid(const RpRecord *rec, uint32_t i);

/* Fixed width of an encoding, or -1 when it carries its own length. */
extern int	rp_encoding_width(uint8_t encoding);
extern const char *rp_encoding_name(uint8_t encoding);
extern const char *rp_tag_name(uint8_t tag);

/*
 * Walk one encoded value of the given encoding at the reader, checking its
 * structure (lengths, nesting, element kinds).  Leaves the reader after it.
 */
extern bool rp_skip_value(RpReader *r, uint8_t encoding, int depth);

#endif							/* RP_DECODE_H */
