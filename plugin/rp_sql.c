/*
 * rp_sql.c
 *    SQL-callable functions of the replicant extension.
 *
 * replicant.decode(bytea[]) renders binary frames, as returned by
 * pg_logical_slot_peek_binary_changes(), as JSON rows through the same
 * codec the consumer uses, so binary output can be inspected and tested.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "rp_decode.h"
#include "rp_render.h"

PG_FUNCTION_INFO_V1(replicant_decode);

Datum
replicant_decode(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *frames;
	Datum	   *elems;
	bool	   *nulls;
	int			nframes;
	RpDecoder	dec;
	RpBuf		out;

	/* a scalar SETOF json: build the one-column descriptor ourselves */
	InitMaterializedSRF(fcinfo, MAT_SRF_BLESS | MAT_SRF_USE_EXPECTED_DESC);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	frames = PG_GETARG_ARRAYTYPE_P(0);
	deconstruct_array(frames, BYTEAOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nframes);

	rp_decoder_init(&dec);
	rp_buf_init(&out, 1024);
	for (int i = 0; i < nframes; i++)
	{
		bytea	   *frame;
		RpRecord	rec;
		int			rc;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("frame %d of the array is NULL", i + 1)));
		frame = DatumGetByteaPP(elems[i]);
		if (!rp_decoder_frame(&dec, VARDATA_ANY(frame), VARSIZE_ANY_EXHDR(frame)))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid replicant frame %d: %s", i + 1, dec.error)));
		while ((rc = rp_decoder_next(&dec, &rec)) > 0)
		{
			Datum		values[1];
			bool		isnull[1] = {false};

			if (rec.tag == RP_TAG_RELATION && rec.u.relation.previous)
				rp_relation_free(rec.u.relation.previous);
			rp_buf_reset(&out);
			rp_render_record(&out, &rec, &dec.rels, NULL);
			values[0] = PointerGetDatum(cstring_to_text_with_len(out.data, (int) out.len));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
		}
		if (rc < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid replicant frame %d: %s", i + 1, dec.error)));
	}
	rp_decoder_free(&dec);
	rp_buf_free(&out);
	return (Datum) 0;
}
