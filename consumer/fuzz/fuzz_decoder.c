/*
 * fuzz_decoder.c
 *    libFuzzer target of the wire decoder and the JSON renderer (G3: any
 *    bytes are refused with a reason or decoded into records that are safe
 *    to render; never a crash, an out-of-bounds read or undefined
 *    behaviour).
 *
 * A decoder is primed with the relations of fuzz_seed.h, so fuzzed
 * changes find their relation and tuples get decoded; then the input is
 * walked as a frame ('R' version records) or, when it is not one, as a
 * headerless run of records (the consumer's stored transactions and its
 * relation view).  Every decoded record is rendered.
 *
 *    make -C consumer fuzz && consumer/fuzz/fuzz_decoder consumer/fuzz/corpus
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>

#include "fuzz_seed.h"
#include "rp_decode.h"
#include "rp_render.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static RpBuf seed;

static void
walk(RpDecoder *dec, RpBuf *out)
{
	RpRecord	rec;
	int			rc;

	while ((rc = rp_decoder_next(dec, &rec)) == 1)
	{
		rp_buf_reset(out);
		rp_render_record(out, &rec, &dec->rels, "\"extra\":1");
		if (rec.tag == RP_TAG_RELATION)
			rp_relation_free(rec.u.relation.previous);
	}
	if (rc < 0 && dec->error[0] == '\0')
		abort();				/* every refusal names a reason */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RpDecoder	dec;
	RpBuf		out;

	if (seed.data == NULL)
	{
		rp_buf_init(&seed, 0);
		fz_relations(&seed);
	}
	rp_decoder_init(&dec);
	rp_buf_init(&out, 0);
	rp_decoder_records(&dec, seed.data, seed.len);
	walk(&dec, &out);
	if (dec.rels.count != 3)
		abort();

	/* an exact-size copy, so ASan sees any read past the end */
	{
		uint8_t    *copy = malloc(size ? size : 1);

		memcpy(copy, data, size);
		if (rp_decoder_frame(&dec, copy, size))
			walk(&dec, &out);
		else
		{
			if (dec.error[0] == '\0')
				abort();
			rp_decoder_records(&dec, copy, size);
			walk(&dec, &out);
		}
		free(copy);
	}
	rp_buf_free(&out);
	rp_decoder_free(&dec);
	return 0;
}
