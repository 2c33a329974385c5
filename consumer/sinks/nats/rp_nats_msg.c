/*
 * rp_nats_msg.c
 *    The headers of the NATS sink's messages (docs/sinks.md lists them):
 *    built as text into one buffer, handed to libnats by rp_nats.c.  Every
 *    value is an LSN, a number, a name or the key's JSON: no header holds a
 *    line break (the JSON renderer escapes control characters).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#include "rp_format.h"
#include "sinks/nats/rp_nats_int.h"

void
rp_nats_hdrs_init(RpNatsHdrs *h)
{
	memset(h, 0, sizeof(*h));
	rp_buf_init(&h->buf, 512);
}

void
rp_nats_hdrs_free(RpNatsHdrs *h)
{
	rp_buf_free(&h->buf);
}

void
rp_nats_hdrs_reset(RpNatsHdrs *h)
{
	h->n = 0;
	rp_buf_reset(&h->buf);
}

void
rp_nats_hdrs_begin(RpNatsHdrs *h, const char *key)
{
	/* the list is fixed by this file: more would be a bug here */
	if (h->n >= RP_NATS_MAX_HDRS)
		abort();
	h->key[h->n] = key;
	h->off[h->n] = h->buf.len;
}

void
rp_nats_hdrs_end(RpNatsHdrs *h)
{
	rp_buf_put_u8(&h->buf, '\0');
	h->n++;
}

void
rp_nats_hdrs_add(RpNatsHdrs *h, const char *key, const char *value)
{
	rp_nats_hdrs_begin(h, key);
	rp_buf_put_bytes(&h->buf, value, strlen(value));
	rp_nats_hdrs_end(h);
}

const char *
rp_nats_hdrs_value(const RpNatsHdrs *h, int i)
{
	return h->buf.data + h->off[i];
}

const char *
rp_nats_hdrs_get(const RpNatsHdrs *h, const char *key)
{
	for (int i = 0; i < h->n; i++)
		if (strcmp(h->key[i], key) == 0)
			return rp_nats_hdrs_value(h, i);
	return NULL;
}

void
rp_nats_msg_id(RpBuf *out, uint64_t system_id, const char *slot, uint64_t commit_lsn,
			   uint64_t index)
{
	rp_fmt_uint64(out, system_id);
	rp_buf_put_u8(out, ':');
	rp_buf_put_bytes(out, slot, strlen(slot));
	rp_buf_put_u8(out, ':');
	rp_fmt_lsn(out, commit_lsn);
	rp_buf_put_u8(out, ':');
	rp_fmt_uint64(out, index);
}

static void
hdr_u64(RpNatsHdrs *h, const char *key, uint64_t v)
{
	rp_nats_hdrs_begin(h, key);
	rp_fmt_uint64(&h->buf, v);
	rp_nats_hdrs_end(h);
}

static void
hdr_lsn(RpNatsHdrs *h, const char *key, uint64_t lsn)
{
	rp_nats_hdrs_begin(h, key);
	rp_fmt_lsn(&h->buf, lsn);
	rp_nats_hdrs_end(h);
}

void
rp_nats_hdrs_ident(RpNatsHdrs *h, const RpNatsIdent *id)
{
	hdr_u64(h, "Replicant-System-Id", id->system_id);
	hdr_u64(h, "Replicant-Timeline", id->timeline);
	rp_nats_hdrs_add(h, "Replicant-Slot", id->slot);
	rp_nats_hdrs_add(h, "Replicant-Writer", id->writer);
}

void
rp_nats_hdrs_place(RpNatsHdrs *h, const RpNatsIdent *id, const RpNatsPlace *p)
{
	rp_nats_hdrs_begin(h, "Nats-Msg-Id");
	rp_nats_msg_id(&h->buf, id->system_id, id->slot, p->commit_lsn, p->index);
	rp_nats_hdrs_end(h);
	hdr_lsn(h, "Replicant-Lsn", p->commit_lsn);
	hdr_lsn(h, "Replicant-End-Lsn", p->end_lsn);
	hdr_lsn(h, "Replicant-Prev-End-Lsn", p->prev_end_lsn);
	hdr_u64(h, "Replicant-Xid", p->xid);
	hdr_u64(h, "Replicant-Index", p->index);
	if (p->last)
		rp_nats_hdrs_add(h, "Replicant-Last", "true");
	rp_nats_hdrs_begin(h, "Replicant-Commit-Time");
	rp_fmt_timestamp(&h->buf, p->commit_time, true);
	rp_nats_hdrs_end(h);
	rp_nats_hdrs_ident(h, id);
}
