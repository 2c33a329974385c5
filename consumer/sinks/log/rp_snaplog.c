/*
 * rp_snaplog.c
 *    Snapshot chunks into envelope frames (see rp_snaplog.h).
 */
#include "rp_alloc.h"

#include <stdatomic.h>
#include <stdio.h>

#include "rp_decode.h"
#include "rp_render.h"
#include "base/rp_clock.h"
#include "sinks/log/rp_snaplog.h"
#include "base/rp_counter.h"
#include "base/rp_status.h"
#include "base/rp_uuid7.h"

#define RP_SNAPLOG_FLUSH (1024 * 1024)

void
rp_snaplog_init(RpSnapLog *sl, const RpSinkEnv *env)
{
	RpSinkEnv	def;

	if (env == NULL)
	{
		rp_sink_env_init(&def);
		env = &def;
	}
	memset(sl, 0, sizeof(*sl));
	sl->max_record = env->max_record_bytes;
	sl->max_dlq = env->max_dlq_bytes;
	sl->dlq_path = env->dlq_path ? rp_strndup(env->dlq_path, strlen(env->dlq_path)) : NULL;
}

static RpEnvelope *
rp_snaplog_env(RpSnapLog *sl, uint32_t relid)
{
	for (int i = 0; i < sl->n; i++)
		if (sl->relids[i] == relid)
			return &sl->envs[i];
	sl->relids = rp_realloc(sl->relids, sizeof(uint32_t) * (size_t) (sl->n + 1));
	sl->envs = rp_realloc(sl->envs, sizeof(RpEnvelope) * (size_t) (sl->n + 1));
	sl->relids[sl->n] = relid;
	rp_env_init(&sl->envs[sl->n], sl->max_record, sl->max_dlq, sl->dlq_path);
	return &sl->envs[sl->n++];
}

/* The primary key of a row as a JSON object (for an oversize stub). */
static void
rp_snaplog_key(RpBuf *out, const RpRelation *rel, const RpTuple *tup)
{
	RpDatum    *d = rp_malloc(sizeof(RpDatum) * (size_t) (tup->natts + 1));
	RpTuple		key = {tup->natts, d};
	bool		any = false;

	for (uint16_t i = 0; i < tup->natts; i++)
	{
		d[i] = tup->datums[i];
		if (!(rel->cols[i].flags & RP_COL_PRIMARY_KEY))
			d[i].kind = RP_DATUM_NOT_IN_KEY;
		else
			any = true;
	}
	if (any)
		rp_render_tuple(out, rel, &key);
	rp_free(d);
}

int
rp_snaplog_chunk(RpSnapLog *sl, const RpSnapshotCtx *ctx, RpBuf *out,
				 int (*flush) (void *arg, RpBuf *out), void *arg)
{
	uint64_t	dropped;
	RpEnvelope *env = rp_snaplog_env(sl, ctx->rel->relid);
	char		store[512];
	RpDecoder	dec;
	RpRecord	rec;
	RpBuf		row,
				key;
	int			rc = 0;
	bool		failed = false; /* rp_fail() already said why */

	snprintf(store, sizeof(store), "%s.%s", ctx->rel->schema, ctx->rel->name);
	if (ctx->frame == NULL)
		return rp_fail(RP_HALT_SINK, "snapshot chunk of %s has no records", store);
	if (env->state != RP_ENV_OPEN)
	{
		int			r = ctx->first_chunk
		? rp_env_begin_id(env, out, store, ctx->snapshot_id, ctx->snapshot_at_ms, ctx->total)
		: rp_env_resume(env, store, ctx->snapshot_id, ctx->snapshot_at_ms, ctx->first_seq);

		if (r < 0)
			return -1;
	}
	rp_decoder_init(&dec);
	rp_buf_init(&row, 1024);
	rp_buf_init(&key, 128);
	if (!rp_decoder_frame(&dec, ctx->frame, ctx->frame_len))
		rc = -1;
	while (rc == 0)
	{
		rc = rp_decoder_next(&dec, &rec);
		if (rc <= 0)
			break;
		rc = 0;
		if (rec.tag == RP_TAG_RELATION)
		{
			if (rec.u.relation.previous)
				rp_relation_free(rec.u.relation.previous);
			continue;
		}
		if (rec.tag != RP_TAG_INSERT)
			continue;
		rp_buf_reset(&row);
		rp_render_tuple(&row, rec.u.change.rel, &rec.u.change.new_tuple);
		rp_buf_reset(&key);
		if (rp_env_oversize(env, row.len))
		{
			rp_snaplog_key(&key, rec.u.change.rel, &rec.u.change.new_tuple);
			if (ctx->oversize)
				RP_COUNT_ADD(*ctx->oversize, 1);
		}
		dropped = env->dropped;
		if (rp_env_row(env, out, row.data, row.len, key.len ? key.data : NULL, key.len) < 0 ||
			(out->len >= RP_SNAPLOG_FLUSH && flush && flush(arg, out) < 0))
		{
			rc = -1;
			failed = true;
			break;
		}
		if (env->dropped != dropped && ctx->dropped)
			RP_COUNT_ADD(*ctx->dropped, env->dropped - dropped);
	}
	if (rc < 0 && !failed)
		rp_fail(RP_HALT_MALFORMED, "snapshot chunk of %s does not decode: %s", store, dec.error);
	rp_decoder_free(&dec);
	rp_buf_free(&row);
	rp_buf_free(&key);
	if (rc == 0 && ctx->last_chunk)
		rc = rp_env_end(env, out, rp_clock_wall_ms());
	if (rc == 0 && ctx->last_chunk)
		rp_env_free(env);		/* syncs and closes its dead-letter file */
	if (rc < 0)
		rp_env_abort(env);
	return rc < 0 ? -1 : 0;
}

void
rp_snaplog_reset(RpSnapLog *sl)
{
	for (int i = 0; i < sl->n; i++)
		rp_env_free(&sl->envs[i]);
	if (sl->relids)
		rp_free(sl->relids);
	if (sl->envs)
		rp_free(sl->envs);
	sl->relids = NULL;
	sl->envs = NULL;
	sl->n = 0;
}

void
rp_snaplog_free(RpSnapLog *sl)
{
	rp_snaplog_reset(sl);
	if (sl->dlq_path)
		rp_free(sl->dlq_path);
	sl->dlq_path = NULL;
}
