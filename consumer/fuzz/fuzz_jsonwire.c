/*
 * fuzz_jsonwire.c
 *    libFuzzer target of the stream reader's JSON side (values/rp_jsonwire.h):
 *    a stream message's payload comes from a shared message log, so any
 *    bytes must be refused with a value-free reason or turned into a record
 *    the wire decoder takes whole; never a crash, an out-of-bounds read or
 *    undefined behaviour (G3).
 *
 * The first byte picks what the rest is read as: a change or message of one
 * of fuzz_seed.h's relations (every encoding; a two-column table; an
 * IDENTITY FULL one with jsonb and an array), or a relation message.  A
 * record that is accepted is decoded again against the same relation and
 * must decode completely; a relation that is accepted is written back as a
 * Relation record and must decode too.
 *
 *    make -C consumer fuzz && consumer/fuzz/fuzz_jsonwire consumer/fuzz/corpus
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/rp_status.h"
#include "fuzz_seed.h"
#include "rp_decode.h"
#include "rp_encode.h"
#include "values/rp_jsonwire.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static RpBuf seed;

/* A decoder that knows the seed's relations. */
static void
primed(RpDecoder *dec)
{
	RpRecord	rec;

	rp_decoder_init(dec);
	rp_decoder_records(dec, seed.data, seed.len);
	while (rp_decoder_next(dec, &rec) == 1)
		rp_relation_free(rec.u.relation.previous);
}

/* out holds exactly one record that decodes; abort otherwise. */
static void
must_decode(RpDecoder *dec, const RpBuf *out)
{
	RpRecord	rec;

	rp_decoder_records(dec, out->data, out->len);
	if (rp_decoder_next(dec, &rec) != 1)
		abort();
	if (rec.tag == RP_TAG_RELATION)
		rp_relation_free(rec.u.relation.previous);
	else
		(void) rp_jsonwire_lossless(&rec);
	if (rp_decoder_next(dec, &rec) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t relids[] = {FZ_REL_ALL, FZ_REL_T, FZ_REL_FULL};
	RpDecoder	dec;
	RpBuf		out;
	char	   *json;
	size_t		len;
	int			pick;

	if (size < 1)
		return 0;
	if (seed.data == NULL)
	{
		rp_buf_init(&seed, 0);
		fz_relations(&seed);
	}
	primed(&dec);
	rp_buf_init(&out, 0);
	pick = data[0] % 5;
	/* an exact-size copy, so ASan sees any read past the end */
	len = size - 1;
	json = malloc(len ? len : 1);
	memcpy(json, data + 1, len);

	if (pick < 3)
	{
		const RpRelation *rel = rp_relmap_get(&dec.rels, relids[pick]);

		if (rel == NULL)
			abort();
		if (rp_jsonwire_record(&out, rel, json, len) == 0)
			must_decode(&dec, &out);
		else if (rp_error()[0] == '\0')
			abort();			/* every refusal names a reason */
	}
	else if (pick == 3)
	{
		/* a logical message has no relation */
		if (rp_jsonwire_record(&out, NULL, json, len) == 0)
			must_decode(&dec, &out);
		else if (rp_error()[0] == '\0')
			abort();
	}
	else
	{
		RpRelation *rel = rp_jsonwire_relation(json, len);

		if (rel)
		{
			rp_enc_relation_record(&out, rel);
			rp_relation_free(rel);
			must_decode(&dec, &out);
		}
		else if (rp_error()[0] == '\0')
			abort();
	}
	rp_error_clear();
	free(json);
	rp_buf_free(&out);
	rp_decoder_free(&dec);
	return 0;
}
