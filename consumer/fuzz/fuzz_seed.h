/*
 * fuzz_seed.h
 *    The relations the fuzz targets pre-load (so fuzzed changes find a
 *    relation and their tuples get decoded), and builders of valid values
 *    of every encoding for the seed corpus (gen_corpus.c).  Header-only.
 *
 * FZ_REL_ALL   one column of every encoding, in encoding order
 * FZ_REL_T     id int4 (key), note string
 * FZ_REL_FULL  replica identity full: k int8, doc jsonb, tags text[]
 */
#ifndef FUZZ_SEED_H
#define FUZZ_SEED_H

#include "rp_alloc.h"

#include <stdio.h>

#include "rp_buf.h"
#include "rp_decode.h"
#include "rp_encode.h"
#include "rp_wire.h"

#define FZ_REL_ALL  16384u
#define FZ_REL_T    16385u
#define FZ_REL_FULL 16386u

static inline void
fz_relations(RpBuf *b)
{
	size_t		at;

	at = rp_enc_relation_start(b, FZ_REL_ALL, "public", "everything", RP_IDENTITY_DEFAULT,
							   RP_ENC__COUNT);
	for (int e = 0; e < RP_ENC__COUNT; e++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "c%d", e);
		rp_enc_relation_column(b, (int16_t) (e + 1), name, (uint32_t) (1000 + e),
							   rp_encoding_name((uint8_t) e), e == RP_ENC_STRING ? 14 : -1,
							   (uint8_t) e, e == 0 ? RP_COL_PRIMARY_KEY | RP_COL_IDENTITY : 0);
	}
	rp_buf_end_record(b, at);

	at = rp_enc_relation_start(b, FZ_REL_T, "public", "t", RP_IDENTITY_DEFAULT, 2);
	rp_enc_relation_column(b, 1, "id", 23, "integer", -1, RP_ENC_INT4,
						   RP_COL_PRIMARY_KEY | RP_COL_IDENTITY | RP_COL_NOT_NULL);
	rp_enc_relation_column(b, 2, "note", 25, "text", -1, RP_ENC_STRING, 0);
	rp_buf_end_record(b, at);

	at = rp_enc_relation_start(b, FZ_REL_FULL, "app", "docs", RP_IDENTITY_FULL, 3);
	rp_enc_relation_column(b, 1, "k", 20, "bigint", -1, RP_ENC_INT8, RP_COL_NOT_NULL);
	rp_enc_relation_column(b, 2, "doc", 3802, "jsonb", -1, RP_ENC_JSONB, 0);
	rp_enc_relation_column(b, 3, "tags", 1009, "text[]", -1, RP_ENC_ARRAY, 0);
	rp_buf_end_record(b, at);
}

/* A valid value of encoding enc (variant picks among a few shapes). */
static inline void
fz_value(RpBuf *b, uint8_t enc, int variant)
{
	switch (enc)
	{
		case RP_ENC_TEXT:
			rp_buf_put_cstr(b, variant ? "(1,2)" : "");
			break;
		case RP_ENC_BOOL:
			rp_buf_put_u8(b, (uint8_t) (variant & 1));
			break;
		case RP_ENC_INT2:
			rp_buf_put_u16(b, variant ? 0x8000 : 7);
			break;
		case RP_ENC_INT4:
			rp_buf_put_u32(b, variant ? 0x80000000u : 42);
			break;
		case RP_ENC_INT8:
			rp_buf_put_u64(b, variant ? 0x8000000000000000ULL : 1234567890123ULL);
			break;
		case RP_ENC_OID:
			rp_buf_put_u32(b, 0xFFFFFFFFu);
			break;
		case RP_ENC_FLOAT4:
			rp_buf_put_u32(b, variant ? 0x7FC00000u : 0x3FC00000u); /* NaN / 1.5 */
			break;
		case RP_ENC_FLOAT8:
			rp_buf_put_u64(b, variant ? 0xFFF0000000000000ULL : 0x400921FB54442D18ULL);
			break;
		case RP_ENC_NUMERIC:
			if (variant)
			{
				rp_buf_put_u32(b, 8);
				rp_buf_put_u16(b, 0);
				rp_buf_put_u16(b, 0);
				rp_buf_put_u16(b, RP_NUMERIC_NAN);
				rp_buf_put_u16(b, 0);
			}
			else
			{
				/* -12345.6789 */
				rp_buf_put_u32(b, 8 + 6);
				rp_buf_put_u16(b, 3);
				rp_buf_put_u16(b, 1);
				rp_buf_put_u16(b, RP_NUMERIC_NEG);
				rp_buf_put_u16(b, 4);
				rp_buf_put_u16(b, 1);
				rp_buf_put_u16(b, 2345);
				rp_buf_put_u16(b, 6789);
			}
			break;
		case RP_ENC_STRING:
			rp_buf_put_cstr(b, variant ? "quote \" backslash \\ tab \t \xc3\xa9" : "plain");
			break;
		case RP_ENC_BYTEA:
			rp_buf_put_str(b, variant ? "\x00\x01\xff" : "", variant ? 3 : 0);
			break;
		case RP_ENC_UUID:
			for (int i = 0; i < 16; i++)
				rp_buf_put_u8(b, (uint8_t) (i * 17));
			break;
		case RP_ENC_DATE:
			rp_buf_put_u32(b, variant ? (uint32_t) RP_DATE_POS_INF : 19000);
			break;
		case RP_ENC_TIME:
			rp_buf_put_u64(b, 86399999999ULL);
			break;
		case RP_ENC_TIMETZ:
			rp_buf_put_u64(b, 3600000000ULL);
			rp_buf_put_u32(b, (uint32_t) -19800);
			break;
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			rp_buf_put_u64(b, variant ? (uint64_t) RP_TS_NEG_INF : 1700000000123456ULL);
			break;
		case RP_ENC_INTERVAL:
			rp_buf_put_u64(b, (uint64_t) -1500000);
			rp_buf_put_u32(b, 3);
			rp_buf_put_u32(b, 14);
			break;
		case RP_ENC_JSON:
		case RP_ENC_JSONB:
			rp_buf_put_cstr(b, variant ? "{\"a\": [1, 2.5, null, \"x\"]}" : "[]");
			break;
		case RP_ENC_ARRAY:
			{
				/* int4[2][2] with a NULL, or an empty text[] */
				int			dims[2] = {2, 2},
							lbs[2] = {1, 0};

				if (variant)
				{
					rp_enc_array_header(b, RP_ENC_STRING, 25, 0, NULL, NULL);
					break;
				}
				rp_enc_array_header(b, RP_ENC_INT4, 23, 2, dims, lbs);
				for (int i = 0; i < 4; i++)
				{
					if (i == 2)
					{
						rp_enc_datum_kind(b, RP_DATUM_NULL);
						continue;
					}
					rp_enc_datum_kind(b, RP_DATUM_VALUE);
					rp_buf_put_u32(b, (uint32_t) i);
				}
			}
			break;
		case RP_ENC_ENUM:
			rp_buf_put_cstr(b, "happy");
			break;
		case RP_ENC_COMPOSITE:
			/* (x int4, y text[] NULL, z numeric) */
			rp_buf_put_u16(b, 3);
			rp_buf_put_cstr(b, "x");
			rp_buf_put_u32(b, 23);
			rp_buf_put_u8(b, RP_ENC_INT4);
			rp_enc_datum_kind(b, RP_DATUM_VALUE);
			rp_buf_put_u32(b, 5);
			rp_buf_put_cstr(b, "y");
			rp_buf_put_u32(b, 1009);
			rp_buf_put_u8(b, RP_ENC_ARRAY);
			rp_enc_datum_kind(b, RP_DATUM_NULL);
			rp_buf_put_cstr(b, "z");
			rp_buf_put_u32(b, 1700);
			rp_buf_put_u8(b, RP_ENC_NUMERIC);
			rp_enc_datum_kind(b, RP_DATUM_VALUE);
			fz_value(b, RP_ENC_NUMERIC, variant);
			break;
		case RP_ENC_RANGE:
			if (variant)
			{
				rp_buf_put_u8(b, RP_RANGE_EMPTY);
				rp_buf_put_u32(b, 23);
				rp_buf_put_u8(b, RP_ENC_INT4);
			}
			else
			{
				/* [2024-01-01 00:00, infinity) of timestamptz */
				rp_buf_put_u8(b, RP_RANGE_LB_INC | RP_RANGE_UB_INF);
				rp_buf_put_u32(b, 1184);
				rp_buf_put_u8(b, RP_ENC_TIMESTAMPTZ);
				rp_buf_put_u64(b, 1704067200000000ULL);
			}
			break;
	}
}

/* A full tuple of FZ_REL_ALL; nulls every third column when variant. */
static inline void
fz_tuple_all(RpBuf *b, int variant)
{
	rp_enc_tuple_start(b, RP_ENC__COUNT);
	for (int e = 0; e < RP_ENC__COUNT; e++)
	{
		if (variant && e % 3 == 2)
		{
			rp_enc_datum_kind(b, RP_DATUM_NULL);
			continue;
		}
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		fz_value(b, (uint8_t) e, variant);
	}
}

#endif							/* FUZZ_SEED_H */
