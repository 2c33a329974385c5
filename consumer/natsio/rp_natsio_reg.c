/*
 * rp_natsio_reg.c
 *    The stream registry: a JetStream key-value bucket (REPLICANT_STREAMS)
 *    holding, for each stream a replicant writer created or took on, the
 *    stream's creation time and the slot it holds.  The stream is the
 *    checkpoint, so a stream that was deleted and made again starts empty,
 *    and a writer that trusted it would record the slot's position in it
 *    and go on: the history before it would be gone from the stream with
 *    nothing to show it (a reader then built a mirror with 1,021 of 1,441
 *    rows, exit 0).  The entry outlives the stream: a writer that finds
 *    its stream missing, or made at another time, halts; a reader that
 *    starts without a checkpoint refuses a stream it does not describe.
 *
 *    Key: the stream name, every byte outside [A-Za-z0-9_-] as =XX (a key
 *    allows [-/_=.A-Za-z0-9]).  Value: {"slot":"S","created":N}, N the
 *    stream's creation time in nanoseconds since the epoch as the server
 *    reports it (stable across leader changes and restarts of every node,
 *    measured on nats-server 2.9.10).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/rp_jsonread.h"
#include "base/rp_status.h"
#include "natsio/rp_natsio.h"

void
rp_natsio_escape(RpBuf *out, const char *name, char mark)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *) name; *p; p++)
	{
		unsigned char c = *p;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			c == '_' || c == '-')
			rp_buf_put_u8(out, c);
		else
		{
			rp_buf_put_u8(out, (uint8_t) mark);
			rp_buf_put_u8(out, (uint8_t) hex[c >> 4]);
			rp_buf_put_u8(out, (uint8_t) hex[c & 15]);
		}
	}
}

void
rp_natsio_reg_key(RpBuf *out, const char *stream)
{
	rp_buf_reset(out);
	rp_natsio_escape(out, stream, '=');
	rp_buf_put_char(out, '\0');
}

void
rp_natsio_reg_format(RpBuf *out, const RpNatsioReg * r)
{
	char		n[32];

	snprintf(n, sizeof(n), "%" PRId64, r->created);
	rp_buf_reset(out);
	rp_buf_put_text(out, "{\"slot\":\"");
	rp_buf_put_text(out, r->slot);
	rp_buf_put_text(out, "\",\"created\":");
	rp_buf_put_text(out, n);
	rp_buf_put_text(out, "}");
	rp_buf_put_char(out, '\0');
}

bool
rp_natsio_reg_parse(const char *text, size_t len, RpNatsioReg * r)
{
	RpJrDoc		doc;
	const RpJrMember *slot = NULL;
	const RpJrMember *created = NULL;
	RpBuf		s;
	bool		ok;

	memset(r, 0, sizeof(*r));
	rp_jr_init(&doc);
	rp_buf_init(&s, 64);
	ok = rp_jr_parse(&doc, text, len) == 0 && doc.type == RP_JR_OBJECT &&
		rp_jr_find(&doc, "slot", &slot) == 1 && slot->type == RP_JR_STRING &&
		rp_jr_find(&doc, "created", &created) == 1 && created->type == RP_JR_NUMBER &&
		rp_jr_int64(created->val, created->val_len, &r->created) == 0 &&
		rp_jr_string(slot->val, slot->val_len, &s) == 0 && s.len < sizeof(r->slot);
	if (ok)
	{
		memcpy(r->slot, s.data, s.len);
		r->slot[s.len] = '\0';
		r->found = true;
	}
	rp_buf_free(&s);
	rp_jr_free(&doc);
	/* a parse error is the caller's to word: it names the bucket and key */
	rp_error_clear();
	if (!ok)
		memset(r, 0, sizeof(*r));
	return ok;
}

void
rp_natsio_time_text(int64_t ns, char *dst, size_t len)
{
	time_t		t = (time_t) (ns / 1000000000);
	struct tm	tm;
	char		day[32];

	if (gmtime_r(&t, &tm) == NULL || strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(dst, len, "%lld ns", (long long) ns);
	else
		snprintf(dst, len, "%s.%09lldZ", day, (long long) (ns % 1000000000));
}

#ifdef RP_HAVE_NATS

/* The bucket, made when asked to (writers) and missing. */
static int
reg_bucket(jsCtx *js, int replicas, bool make, kvStore **kv)
{
	natsStatus	st = js_KeyValue(kv, js, RP_NATSIO_REGISTRY);
	kvConfig	cfg;

	if (st == NATS_OK)
		return 0;
	*kv = NULL;
	if (st != NATS_NOT_FOUND)
		return rp_fail(RP_HALT_NONE, "NATS stream registry (key-value bucket %s): binding failed (%s)",
					   RP_NATSIO_REGISTRY, rp_natsio_status_text(st));
	if (!make)
		return 1;
	kvConfig_Init(&cfg);
	cfg.Bucket = RP_NATSIO_REGISTRY;
	cfg.Description = "replicant: each stream's creation time and slot (docs/sinks.md)";
	cfg.History = 1;
	cfg.StorageType = js_FileStorage;
	cfg.Replicas = replicas > 0 ? replicas : 1;
	st = js_CreateKeyValue(kv, js, &cfg);
	if (st == NATS_OK)
		return 0;
	*kv = NULL;
	/* another writer made it meanwhile (with the same config: it is ours) */
	st = js_KeyValue(kv, js, RP_NATSIO_REGISTRY);
	if (st == NATS_OK)
		return 0;
	*kv = NULL;
	return rp_fail(RP_HALT_NONE, "NATS stream registry (key-value bucket %s): creating it failed (%s)",
				   RP_NATSIO_REGISTRY, rp_natsio_status_text(st));
}

int
rp_natsio_reg_get(jsCtx *js, const char *stream, RpNatsioReg * r)
{
	kvStore    *kv = NULL;
	kvEntry    *e = NULL;
	RpBuf		key;
	natsStatus	st;
	int			rc;

	memset(r, 0, sizeof(*r));
	rc = reg_bucket(js, 0, false, &kv);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	rp_buf_init(&key, 64);
	rp_natsio_reg_key(&key, stream);
	st = kvStore_Get(&e, kv, key.data);
	rc = 0;
	if (st == NATS_OK)
	{
		const char *v = (const char *) kvEntry_Value(e);

		if (!rp_natsio_reg_parse(v ? v : "", (size_t) kvEntry_ValueLen(e), r))
			rc = rp_fail(RP_HALT_SINK, "NATS stream registry (key-value bucket %s) holds a malformed entry for stream \"%s\" (key %s)",
						 RP_NATSIO_REGISTRY, stream, key.data);
		kvEntry_Destroy(e);
	}
	else if (st != NATS_NOT_FOUND)
		rc = rp_fail(RP_HALT_NONE, "NATS stream registry (key-value bucket %s): reading the entry of stream \"%s\" failed (%s)",
					 RP_NATSIO_REGISTRY, stream, rp_natsio_status_text(st));
	rp_buf_free(&key);
	kvStore_Destroy(kv);
	return rc;
}

int
rp_natsio_reg_put(jsCtx *js, const char *stream, int replicas, const RpNatsioReg * r)
{
	kvStore    *kv = NULL;
	RpBuf		key;
	RpBuf		val;
	uint64_t	rev = 0;
	natsStatus	st;
	int			rc = 0;

	if (reg_bucket(js, replicas, true, &kv) != 0)
		return -1;
	rp_buf_init(&key, 64);
	rp_buf_init(&val, 128);
	rp_natsio_reg_key(&key, stream);
	rp_natsio_reg_format(&val, r);

	/*
	 * only where there is none: of two writers taking on one stream, one
	 * records it
	 */
	st = kvStore_Create(&rev, kv, key.data, val.data, (int) val.len - 1);
	if (st != NATS_OK)
	{
		RpNatsioReg now;

		if (rp_natsio_reg_get(js, stream, &now) < 0)
			rc = -1;
		else if (!now.found)
			rc = rp_fail(RP_HALT_NONE, "NATS stream registry (key-value bucket %s): recording stream \"%s\" failed (%s)",
						 RP_NATSIO_REGISTRY, stream, rp_natsio_status_text(st));
		else
			rc = now.created == r->created && strcmp(now.slot, r->slot) == 0 ? 0 : 1;
	}
	rp_buf_free(&key);
	rp_buf_free(&val);
	kvStore_Destroy(kv);
	return rc;
}

#endif							/* RP_HAVE_NATS */
