/*
 * gen_corpus.c
 *    Writes the seed corpus of the fuzz targets: valid frames (and one
 *    headerless run of records) covering every record kind and every value
 *    encoding, each checked to decode completely before it is written.
 *
 *    gen_corpus DIR
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz_seed.h"
#include "rp_decode.h"
#include "rp_render.h"

static const char *outdir;

/* Decode b completely (relations of the seed known); write it to DIR/name. */
static void
emit(const char *name, RpBuf *b, bool framed)
{
	RpDecoder	dec;
	RpBuf		rels;
	RpRecord	rec;
	int			rc,
				n = 0;
	char		path[4096];
	FILE	   *f;

	rp_decoder_init(&dec);
	rp_buf_init(&rels, 0);
	fz_relations(&rels);
	rp_decoder_records(&dec, rels.data, rels.len);
	while ((rc = rp_decoder_next(&dec, &rec)) == 1)
		rp_relation_free(rec.u.relation.previous);
	if (framed)
	{
		if (!rp_decoder_frame(&dec, b->data, b->len))
		{
			fprintf(stderr, "%s: %s\n", name, dec.error);
			exit(1);
		}
	}
	else
		rp_decoder_records(&dec, b->data, b->len);
	while ((rc = rp_decoder_next(&dec, &rec)) == 1)
	{
		if (rec.tag == RP_TAG_RELATION)
			rp_relation_free(rec.u.relation.previous);
		n++;
	}
	if (rc != 0)
	{
		fprintf(stderr, "%s: record %d: %s\n", name, n, dec.error);
		exit(1);
	}
	rp_decoder_free(&dec);
	rp_buf_free(&rels);

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0)
	{
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	printf("%s: %d records, %zu bytes\n", name, n, b->len);
	rp_buf_free(b);
}

static void
frame(RpBuf *b)
{
	rp_buf_init(b, 0);
	rp_enc_frame_header(b);
}

static void
insert_t(RpBuf *b, uint32_t xid, int32_t id, const char *note)
{
	size_t		at = rp_enc_change_start(b, RP_TAG_INSERT, FZ_REL_T, 0, xid);

	rp_enc_tuple_start(b, 2);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) id);
	if (note)
	{
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		rp_buf_put_cstr(b, note);
	}
	else
		rp_enc_datum_kind(b, RP_DATUM_NULL);
	rp_buf_end_record(b, at);
}

/* Two inserts of every encoding (both value shapes), then a delete by its old key. */
static void
all_encodings_changes(RpBuf *b, bool with_update)
{
	size_t		at;

	for (int v = 0; v < 2; v++)
	{
		at = rp_enc_change_start(b, RP_TAG_INSERT, FZ_REL_ALL, 0, 0);
		fz_tuple_all(b, v);
		rp_buf_end_record(b, at);
	}
	if (with_update)
	{
		at = rp_enc_change_start(b, RP_TAG_UPDATE, FZ_REL_ALL, RP_CHANGE_OLD_KEY, 0);
		rp_enc_tuple_start(b, RP_ENC__COUNT);
		rp_enc_datum_kind(b, RP_DATUM_VALUE);
		fz_value(b, 0, 1);
		for (int e = 1; e < RP_ENC__COUNT; e++)
			rp_enc_datum_kind(b, RP_DATUM_NOT_IN_KEY);
		fz_tuple_all(b, 1);
		rp_buf_end_record(b, at);
	}
	at = rp_enc_change_start(b, RP_TAG_DELETE, FZ_REL_ALL, RP_CHANGE_OLD_KEY, 0);
	rp_enc_tuple_start(b, RP_ENC__COUNT);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	fz_value(b, 0, 0);
	for (int e = 1; e < RP_ENC__COUNT; e++)
		rp_enc_datum_kind(b, RP_DATUM_NOT_IN_KEY);
	rp_buf_end_record(b, at);
}

/*
 * fuzz_jsonwire's seeds: records rendered as the NATS sink publishes them,
 * each after the byte that picks how the target reads it (0: a change of
 * the every-encoding relation, 2: of the IDENTITY FULL one, 3: a message,
 * 4: a relation message).
 */
static void
json_seed(const char *name, uint8_t pick, const RpRecord *rec, const RpRelMap *rels)
{
	RpBuf		j;
	char		path[4096];
	FILE	   *f;

	rp_buf_init(&j, 0);
	rp_buf_put_u8(&j, pick);
	rp_render_record(&j, rec, rels, "\"commit_lsn\":\"0/16B3748\",\"end_lsn\":\"0/16B3778\",\"xid\":700,\"commit_time\":\"2023-11-14T22:13:20Z\"");
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(j.data, 1, j.len, f) != j.len || fclose(f) != 0)
	{
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	printf("%s: %zu bytes of JSON\n", name, j.len - 1);
	rp_buf_free(&j);
}

static void
json_seeds(void)
{
	RpDecoder	dec;
	RpBuf		rels,
				b;
	RpRecord	rec;
	int			n = 0;
	char		name[64];

	rp_decoder_init(&dec);
	rp_buf_init(&rels, 0);
	fz_relations(&rels);
	rp_decoder_records(&dec, rels.data, rels.len);
	while (rp_decoder_next(&dec, &rec) == 1)
	{
		if (rec.u.relation.rel->relid == FZ_REL_ALL)
			json_seed("json_relation", 4, &rec, &dec.rels);
		rp_relation_free(rec.u.relation.previous);
	}

	rp_buf_init(&b, 0);
	all_encodings_changes(&b, false);
	rp_enc_message(&b, false, 0, 0x16B3748, "audit", "nightly \"run\"", 14);
	rp_decoder_records(&dec, b.data, b.len);
	while (rp_decoder_next(&dec, &rec) == 1)
	{
		snprintf(name, sizeof(name), "json_record_%d", n++);
		json_seed(name, rec.tag == RP_TAG_MESSAGE ? 3 : 0, &rec, &dec.rels);
	}
	rp_buf_free(&b);
	rp_buf_free(&rels);
	rp_decoder_free(&dec);
}

int
main(int argc, char **argv)
{
	RpBuf		b;
	size_t		at;
	uint32_t	rels[2] = {FZ_REL_T, FZ_REL_FULL};

	if (argc != 2)
	{
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	mkdir(outdir, 0755);

	/* every encoding: inserts, an update with the old key, a delete */
	frame(&b);
	rp_enc_begin(&b, 700, 0x16B374D848ULL, 1700000000000000LL);
	all_encodings_changes(&b, true);
	rp_enc_commit(&b, 0x16B374D848ULL, 0x16B374D878ULL, 1700000000000001LL);
	emit("txn_all_encodings", &b, true);

	/* relations, rows, truncate, messages, origin */
	frame(&b);
	fz_relations(&b);
	rp_enc_begin(&b, 701, 0x2000, 0);
	rp_enc_origin(&b, 0x1234, "upstream");
	insert_t(&b, 0, 1, "one");
	insert_t(&b, 0, 2, NULL);
	rp_enc_truncate(&b, RP_TRUNCATE_CASCADE | RP_TRUNCATE_RESTART_SEQS, 0, 2, rels);
	rp_enc_message(&b, true, 0, 0x1FF0, "app", "{\"k\":1}", 7);
	rp_enc_commit(&b, 0x2000, 0x2028, 0);
	rp_enc_message(&b, false, 0, 0x2100, "bin", "\x00\xff\x80", 3);
	emit("relations_truncate_messages", &b, true);

	/*
	 * identity full: old full tuple, unchanged TOAST in the new one; no
	 * identity
	 */
	frame(&b);
	rp_enc_begin(&b, 702, 0x3000, 0);
	at = rp_enc_change_start(&b, RP_TAG_UPDATE, FZ_REL_FULL, RP_CHANGE_OLD_FULL, 0);
	rp_enc_tuple_start(&b, 3);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	fz_value(&b, RP_ENC_INT8, 0);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	fz_value(&b, RP_ENC_JSONB, 1);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	fz_value(&b, RP_ENC_ARRAY, 0);
	rp_enc_tuple_start(&b, 3);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	fz_value(&b, RP_ENC_INT8, 1);
	rp_enc_datum_kind(&b, RP_DATUM_UNCHANGED);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	fz_value(&b, RP_ENC_ARRAY, 1);
	rp_buf_end_record(&b, at);
	at = rp_enc_change_start(&b, RP_TAG_DELETE, FZ_REL_FULL, RP_CHANGE_NO_IDENTITY, 0);
	rp_buf_end_record(&b, at);
	at = rp_enc_change_start(&b, RP_TAG_UPDATE, FZ_REL_T, RP_CHANGE_NO_IDENTITY, 0);
	rp_enc_tuple_start(&b, 2);
	rp_enc_datum_kind(&b, RP_DATUM_VALUE);
	rp_buf_put_u32(&b, 9);
	rp_enc_datum_kind(&b, RP_DATUM_UNCHANGED);
	rp_buf_end_record(&b, at);
	rp_enc_commit(&b, 0x3000, 0x3028, 0);
	emit("identity_full_toast", &b, true);

	/* streams: two interleaved, a subtransaction abort, commit and abort */
	frame(&b);
	rp_enc_stream_start(&b, 800, true);
	insert_t(&b, 800, 1, "a");
	insert_t(&b, 801, 2, "sub");
	rp_enc_truncate(&b, 0, 801, 1, rels);
	rp_enc_message(&b, true, 801, 0x4000, "p", "c", 1);
	rp_enc_stream_stop(&b);
	rp_enc_stream_start(&b, 900, true);
	insert_t(&b, 900, 3, "other");
	rp_enc_stream_stop(&b);
	rp_enc_stream_abort(&b, 800, 801);
	rp_enc_stream_start(&b, 800, false);
	insert_t(&b, 800, 4, "d");
	rp_enc_stream_stop(&b);
	rp_enc_stream_commit(&b, 800, 0x5000, 0x5028, 1700000000000000LL);
	rp_enc_stream_abort(&b, 900, 900);
	emit("streams", &b, true);

	/* a headerless run of records, as stored for a transaction */
	rp_buf_init(&b, 0);
	fz_relations(&b);
	insert_t(&b, 0, 5, "stored");
	at = rp_enc_change_start(&b, RP_TAG_INSERT, FZ_REL_ALL, 0, 0);
	fz_tuple_all(&b, 0);
	rp_buf_end_record(&b, at);
	emit("stored_records", &b, false);

	/* for fuzz_asm: frames separated by RPSPLIT (begin, rows, commit apart) */
	rp_buf_init(&b, 0);
	rp_enc_frame_header(&b);
	rp_enc_begin(&b, 703, 0x6000, 0);
	rp_buf_put_text(&b, "RPSPLIT");
	rp_enc_frame_header(&b);
	insert_t(&b, 0, 6, "split");
	rp_buf_put_text(&b, "RPSPLIT");
	rp_enc_frame_header(&b);
	rp_enc_commit(&b, 0x6000, 0x6028, 0);
	rp_enc_message(&b, false, 0, 0x6100, "m", "x", 1);
	printf("multi_frame: %zu bytes (not checked: several frames)\n", b.len);
	{
		char		path[4096];
		FILE	   *f;

		snprintf(path, sizeof(path), "%s/multi_frame", outdir);
		f = fopen(path, "wb");
		if (f == NULL || fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0)
			return 1;
	}
	rp_buf_free(&b);

	/* the smallest frames */
	frame(&b);
	emit("empty_frame", &b, true);
	frame(&b);
	rp_enc_begin(&b, 1, 1, 0);
	rp_enc_commit(&b, 1, 2, 0);
	emit("empty_txn", &b, true);
	json_seeds();
	return 0;
}
