/*
 * rp_lines.c
 *    JSON lines of transactions and messages (see rp_lines.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#include "rp_format.h"
#include "rp_json.h"
#include "lines/rp_lines.h"
#include "rp_render.h"
#include "base/rp_status.h"

void
rp_lines_txn_fields(RpBuf *extra, const RpTxn *txn)
{
	rp_buf_reset(extra);
	rp_buf_put_text(extra, "\"commit_lsn\":\"");
	rp_fmt_lsn(extra, txn->commit_lsn);
	rp_buf_put_text(extra, "\",\"end_lsn\":\"");
	rp_fmt_lsn(extra, txn->end_lsn);
	rp_buf_put_text(extra, "\",\"xid\":");
	rp_fmt_uint64(extra, txn->xid);
	rp_buf_put_text(extra, ",\"commit_time\":\"");
	rp_fmt_timestamp(extra, txn->commit_time, true);
	rp_buf_put_char(extra, '"');
	if (txn->origin)
	{
		rp_buf_put_text(extra, ",\"origin\":");
		rp_json_cstring(extra, txn->origin);
	}
	rp_buf_put_char(extra, '\0');
}

void
rp_lines_record(RpBuf *out, RpDelivery *dl, RpRecord *rec, const char *extra, RpRenderOut *fo)
{
	/* a stream's per-change xid is the subtransaction's: not for the log */
	if (rec->tag == RP_TAG_INSERT || rec->tag == RP_TAG_UPDATE || rec->tag == RP_TAG_DELETE)
		rec->u.change.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
	else if (rec->tag == RP_TAG_TRUNCATE)
		rec->u.truncate.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
	else if (rec->tag == RP_TAG_MESSAGE)
		rec->u.message.flags &= (uint8_t) ~RP_CHANGE_HAS_XID;
	rp_render_record_out(out, rec, &dl->dec.rels, extra, fo);
}

int
rp_lines_txn(RpBuf *out, RpDelivery *dl, RpTxn *txn, size_t flush_at,
			 int (*flush) (void *arg, RpBuf *out), void *arg)
{
	RpCursor	c;
	RpRecord	rec;
	RpBuf		extra;
	RpRenderOut fo = {.at = flush_at,.flush = flush,.arg = arg};
	int			rc;

	/* the transaction's fields, rendered once and put in every line */
	rp_buf_init(&extra, 128);
	rp_lines_txn_fields(&extra, txn);

	if (rp_cursor_open(&c, dl, txn) < 0)
	{
		rp_buf_free(&extra);
		return -1;
	}
	while ((rc = rp_cursor_next(&c, &rec)) > 0)
	{
		/* a large value goes out slice by slice, never rendered whole (G5) */
		rp_lines_record(out, dl, &rec, extra.data, flush ? &fo : NULL);
		rp_buf_put_char(out, '\n');
		if (fo.failed || (out->len >= flush_at && flush && flush(arg, out) < 0))
		{
			rc = -1;
			break;
		}
	}
	rp_cursor_close(&c);
	rp_buf_free(&extra);
	return rc;
}

int
rp_lines_message(RpBuf *out, const RpMessage *msg, size_t flush_at,
				 int (*flush) (void *arg, RpBuf *out), void *arg)
{
	RpRecord	rec;
	RpRenderOut fo = {.at = flush_at,.flush = flush,.arg = arg};

	memset(&rec, 0, sizeof(rec));
	rec.tag = RP_TAG_MESSAGE;
	rec.u.message.lsn = msg->lsn;
	rec.u.message.prefix = msg->prefix;
	rec.u.message.prefix_len = (uint32_t) strlen(msg->prefix);
	rec.u.message.content = msg->content;
	rec.u.message.content_len = msg->content_len;
	rp_render_record_out(out, &rec, NULL, NULL, flush ? &fo : NULL);
	rp_buf_put_char(out, '\n');
	return fo.failed ? -1 : 0;
}
