/*
 * fuzz_asm.c
 *    libFuzzer target of the consumer's path after the decoder: the
 *    assembler's state machine (transactions, streams, subtransaction
 *    aborts, dedup), transaction stores (spilled for odd-sized inputs),
 *    delivery with its cursors and schema diffs, and the JSON lines of the
 *    log sinks.  Any input must either halt with a named reason or be
 *    delivered; never crash, leak or read out of bounds.
 *
 * The input is one or more frames separated by "RPSPLIT"; the relations of
 * fuzz_seed.h are described first, as a server would on connect.
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_seed.h"
#include "stream/rp_asm.h"
#include "stream/rp_deliver.h"
#include "lines/rp_lines.h"
#include "base/rp_status.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int			LLVMFuzzerInitialize(int *argc, char ***argv);

#define SPLIT "RPSPLIT"

static char spill_dir[256];
static RpBuf out;

static int
drop(void *arg, RpBuf *buf)
{
	rp_buf_reset(buf);
	return 0;
}

static int
fz_txn(RpSink *s, RpDelivery *dl, RpTxn *txn, const RpCheckpoint *ck)
{
	return rp_lines_txn(&out, dl, txn, 64 * 1024, drop, NULL);
}

static int
fz_message(RpSink *s, const RpMessage *msg, const RpCheckpoint *ck)
{
	rp_lines_message(&out, msg, 64 * 1024, drop, NULL);
	rp_buf_reset(&out);
	return 0;
}

static int
fz_schema(RpSink *s, const RpRelation *before, const RpRelation *after, RpSchemaChange change)
{
	return 0;					/* accept everything: keep going */
}

static void
fz_close(RpSink *s)
{
}

static void
fz_cleanup(void)
{
	RpSpill		sp;

	/* every store was freed: the folder is empty but for strays of a crash */
	if (rp_spill_init(&sp, spill_dir, 0, 0) == 0)
		rmdir(spill_dir);
	rp_free(sp.dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(spill_dir, sizeof(spill_dir), "/tmp/rp-fuzz-asm-%d", (int) getpid());
	rp_buf_init(&out, 0);
	atexit(fz_cleanup);
	return 0;
}

static int
deliver_all(RpAsm *a, RpDelivery *dl)
{
	RpItem	   *it;

	while ((it = rp_asm_pop(a)) != NULL)
		if (rp_deliver_item(dl, it, 0) < 0)
			return -1;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RpSpill		sp;
	RpAsm		a;
	RpDelivery	dl;
	RpSink		sink;
	RpCheckpoint ck;
	RpBatchLimits lim = {3, 1 << 20, 1000};
	RpBuf		rels;
	size_t		pos = 0;
	uint64_t	lsn = 0x1000;

	memset(&sink, 0, sizeof(sink));
	sink.name = "fuzz";
	sink.handle_transaction = fz_txn;
	sink.handle_message = fz_message;
	sink.handle_schema_change = fz_schema;
	sink.close = fz_close;
	memset(&ck, 0, sizeof(ck));

	if (rp_spill_init(&sp, spill_dir, (size & 1) ? 64 : 1 << 20, 1 << 20) < 0)
		abort();
	rp_asm_init(&a, &sp, (size % 3 == 0) ? 0x2000 : 0);
	if (rp_deliver_init(&dl, &sink, &ck, NULL, NULL, &lim) < 0)
		abort();

	rp_buf_init(&rels, 0);
	rp_enc_frame_header(&rels);
	fz_relations(&rels);
	if (rp_asm_frame(&a, rels.data, rels.len, lsn) < 0)
		abort();
	rp_buf_free(&rels);

	while (pos <= size)
	{
		const uint8_t *end = memmem(data + pos, size - pos, SPLIT, strlen(SPLIT));
		size_t		len = end ? (size_t) (end - (data + pos)) : size - pos;
		uint8_t    *copy = malloc(len ? len : 1);
		int			rc;

		memcpy(copy, data + pos, len);
		rp_error_clear();
		rc = rp_asm_frame(&a, copy, len, lsn += 0x100);
		free(copy);
		if (rc < 0)
		{
			if (rp_error()[0] == '\0' || rp_error_halt() == RP_HALT_NONE)
				abort();		/* decode failures are named halts */
			break;
		}
		if (deliver_all(&a, &dl) < 0)
			break;
		if (end == NULL)
			break;
		pos += len + strlen(SPLIT);
	}
	(void) rp_deliver_flush(&dl, true, 0);
	/* a reconnect drops what is open; then everything is freed */
	rp_asm_reset(&a);
	rp_deliver_free(&dl);
	rp_asm_free(&a);
	if (sp.mem_in_use != 0 || sp.disk_in_use != 0)
		abort();				/* the store accounting must come back to zero */
	rp_free(sp.dir);
	return 0;
}
