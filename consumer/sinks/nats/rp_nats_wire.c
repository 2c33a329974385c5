/*
 * rp_nats_wire.c
 *    The binary record a message carries in its Replicant-Wire header when
 *    its JSON payload does not read back to the same bytes
 *    (values/rp_jsonwire.h rp_jsonwire_lossless: arrays, composites,
 *    ranges, json text with line breaks, truncates' relids ...), so that a
 *    reader of the stream (natsrc/) gets every value exactly as from a
 *    slot.  The record goes in its non-streamed form: a streamed
 *    transaction's per-change xid is left out, as in the JSON.
 */
#include "rp_alloc.h"

#include "rp_format.h"
#include "rp_read.h"
#include "rp_wire.h"
#include "sinks/nats/rp_nats_int.h"

/* Where a record's flags byte is (after the relid for a change), or -1. */
static int
flags_at(uint8_t tag)
{
	switch (tag)
	{
		case RP_TAG_INSERT:
		case RP_TAG_UPDATE:
		case RP_TAG_DELETE:
			return 4;
		case RP_TAG_TRUNCATE:
		case RP_TAG_MESSAGE:
			return 0;
		default:
			return -1;
	}
}

void
rp_nats_wire_record(RpBuf *out, const unsigned char *raw)
{
	RpReader	r;
	uint8_t		tag;
	uint32_t	len;
	const unsigned char *p;
	int			at;

	rp_reader_init(&r, raw, RP_RECORD_HEADER_LEN);
	tag = rp_get_u8(&r);
	len = rp_get_u32(&r);
	p = raw + RP_RECORD_HEADER_LEN;
	at = flags_at(tag);
	rp_buf_reset(out);
	if (at < 0 || (uint32_t) at + 1 > len || !(p[at] & RP_CHANGE_HAS_XID) || (uint32_t) at + 5 > len)
	{
		rp_buf_put_bytes(out, raw, RP_RECORD_HEADER_LEN + (size_t) len);
		return;
	}
	/* the same record without its xid: flag cleared, four bytes fewer */
	rp_buf_put_u8(out, tag);
	rp_buf_put_u32(out, len - 4);
	rp_buf_put_bytes(out, p, (size_t) at);
	rp_buf_put_u8(out, (uint8_t) (p[at] & ~RP_CHANGE_HAS_XID));
	rp_buf_put_bytes(out, p + at + 5, len - (uint32_t) at - 5);
}

void
rp_nats_hdrs_wire(RpNatsHdrs *h, RpBuf *tmp, const unsigned char *raw)
{
	rp_nats_wire_record(tmp, raw);
	rp_nats_hdrs_begin(h, "Replicant-Wire");
	rp_fmt_base64(&h->buf, (const unsigned char *) tmp->data, tmp->len);
	rp_nats_hdrs_end(h);
}

size_t
rp_nats_wire_header_len(const unsigned char *raw)
{
	RpReader	r;
	size_t		len;

	rp_reader_init(&r, raw, RP_RECORD_HEADER_LEN);
	(void) rp_get_u8(&r);
	len = RP_RECORD_HEADER_LEN + (size_t) rp_get_u32(&r);
	return (len + 2) / 3 * 4;
}
