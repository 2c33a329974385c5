/*
 * rp_nats_stream.c
 *    The slot's stream: created when missing (file storage, the subjects
 *    <prefix>.>, limits retention, deny delete and purge, discard new when
 *    max bytes is set), checked when present, so that nothing but the
 *    sink's own appends ever changes what the stream holds (the stream is
 *    the checkpoint: a purge would be a silent gap).  And the stream's
 *    identity: the registry (natsio/rp_natsio_reg.c) records when the
 *    stream this slot writes was made; a stream missing or made at another
 *    time, or one whose first messages are gone, is not the slot's history
 *    and halts the writer before it publishes.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <stdio.h>

#include "base/rp_status.h"
#include "sinks/nats/rp_nats_int.h"

/* An info or create that failed: halts only where retrying cannot help. */
static int
stream_fail(const char *what, const char *stream, natsStatus s, jsErrCode code)
{
	if (code == JSClusterNoPeersErr || code == JSStreamReplicasNotSupportedErr ||
		code == JSInsufficientResourcesErr)
		return rp_fail(RP_HALT_CONFIG, "NATS stream \"%s\" could not be created: the servers have too few JetStream peers or resources for --nats-replicas (error %d)",
					   stream, (int) code);
	if (code != 0)
		return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": %s failed (JetStream error %d)", stream,
					   what, (int) code);
	return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": %s failed (%s)", stream, what,
				   rp_natsio_status_text(s));
}

static int
stream_create(RpNatsLink *l, const RpNatsOptions *o, const char *stream, const char *prefix)
{
	jsStreamConfig cfg;
	jsStreamInfo *si = NULL;
	jsErrCode	code = 0;
	char		subject[512];
	const char *subjects[1] = {subject};
	natsStatus	s;

	snprintf(subject, sizeof(subject), "%s.>", prefix);
	jsStreamConfig_Init(&cfg);
	cfg.Name = stream;
	cfg.Subjects = subjects;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	cfg.Retention = js_LimitsPolicy;
	cfg.Replicas = o->replicas;
	cfg.DenyDelete = true;
	cfg.DenyPurge = true;
	if (o->max_bytes > 0)
	{
		cfg.MaxBytes = (int64_t) o->max_bytes;
		cfg.Discard = js_DiscardNew;
	}
	if (o->duplicate_window_s > 0)
		cfg.Duplicates = (int64_t) (o->duplicate_window_s * 1e9);
	s = js_AddStream(&si, l->js, &cfg, NULL, &code);
	jsStreamInfo_Destroy(si);
	/* another writer created it meanwhile: check it like any present stream */
	if (s != NATS_OK && code == JSStreamNameExistErr)
		return 1;
	if (s != NATS_OK)
		return stream_fail("create", stream, s, code);
	return 0;
}

static bool
subjects_cover(const jsStreamConfig *c, const char *prefix)
{
	size_t		plen = strlen(prefix);

	for (int i = 0; i < c->SubjectsLen; i++)
	{
		const char *sub = c->Subjects[i];

		if (strcmp(sub, ">") == 0)
			return true;
		if (strncmp(sub, prefix, plen) == 0 && strcmp(sub + plen, ".>") == 0)
			return true;
	}
	return false;
}

int
rp_nats_stream_check(const jsStreamConfig *c, const char *stream, const char *prefix)
{
	const char *bad = NULL;

	if (!subjects_cover(c, prefix))
		bad = "its subjects do not cover the subject prefix (--nats-subject-prefix)";
	else if (c->Retention != js_LimitsPolicy)
		bad = "its retention is not limits";
	else if (!c->DenyDelete)
		bad = "it allows deleting messages (deny_delete is off)";
	else if (!c->DenyPurge)
		bad = "it allows purging (deny_purge is off)";
	else if (c->MaxAge > 0 || c->MaxMsgsPerSubject > 0 ||
			 (c->Discard != js_DiscardNew && (c->MaxBytes > 0 || c->MaxMsgs > 0)))
		bad = "its limits drop old messages (max age, per-subject or discard old)";
	if (bad)
		return rp_fail(RP_HALT_CONFIG, "NATS stream \"%s\" cannot hold this slot's changes: %s",
					   stream, bad);
	return 0;
}

int
rp_nats_stream_identity(const char *stream, int64_t created, uint64_t first_seq,
						uint64_t last_seq, int64_t recorded)
{
	if (recorded != 0 && created != recorded)
	{
		char		was[48];
		char		now[48];

		rp_natsio_time_text(recorded, was, sizeof(was));
		rp_natsio_time_text(created, now, sizeof(now));
		return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" was made at %s, but this slot's stream was made at %s (stream registry %s): it was deleted and made again, and the changes it held are gone from it; rebuild it (docs/operations.md)",
					   stream, now, was, RP_NATSIO_REGISTRY);
	}
	if (last_seq > 0 && first_seq != 1)
		return rp_fail(RP_HALT_GAP, "NATS stream \"%s\" no longer holds its first messages (its first sequence is %llu): they were purged or dropped by limits, and a reader can no longer start at this slot's beginning; rebuild it (docs/operations.md)",
					   stream, (unsigned long long) first_seq);
	return 0;
}

/*
 * The registry's word on a stream that exists: made when its entry says, or
 * recorded now (a stream this writer just made, one made beforehand, or one
 * an earlier replicant wrote before the registry existed).
 */
static int
stream_adopt(RpNatsLink *l, const RpNatsOptions *o, const char *stream, const char *slot,
			 const jsStreamInfo *si, const RpNatsioReg * reg, int64_t *created)
{
	RpNatsioReg mine;

	*created = si->Created;
	if (rp_nats_stream_identity(stream, si->Created, si->State.FirstSeq, si->State.LastSeq,
								reg->found ? reg->created : 0) < 0)
		return -1;
	if (reg->found)
		return 0;
	if (si->State.LastSeq > 0)
		fprintf(stderr, "replicant: NATS stream \"%s\" has no entry in the stream registry %s (an earlier replicant wrote it, or the entry was deleted): recording it now\n",
				stream, RP_NATSIO_REGISTRY);
	memset(&mine, 0, sizeof(mine));
	mine.found = true;
	mine.created = si->Created;
	snprintf(mine.slot, sizeof(mine.slot), "%s", slot);
	switch (rp_natsio_reg_put(l->js, stream, o->replicas, &mine))
	{
		case 0:
			return 0;
		case 1:
			return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\": another writer recorded it in the stream registry %s at the same time, as another stream or slot",
						   stream, RP_NATSIO_REGISTRY);
		default:
			return -1;
	}
}

/* The registry's entry of the stream, which must be this slot's (or none). */
static int
stream_entry(RpNatsLink *l, const char *stream, const char *slot, RpNatsioReg * reg)
{
	if (rp_natsio_reg_get(l->js, stream, reg) < 0)
		return -1;
	if (reg->found && strcmp(reg->slot, slot) != 0)
		return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" is slot \"%s\"'s stream (stream registry %s), not slot \"%s\"'s",
					   stream, reg->slot, RP_NATSIO_REGISTRY, slot);
	return 0;
}

int
rp_nats_stream_ensure(RpNatsLink *l, const RpNatsOptions *o, const char *stream,
					  const char *prefix, const char *slot, int64_t *created)
{
	RpNatsioReg reg;

	for (int attempt = 0; attempt < 2; attempt++)
	{
		jsStreamInfo *si = NULL;
		jsErrCode	code = 0;
		natsStatus	s = NATS_OK;
		int			rc;

		/*
		 * The stream first: a leaderless group says so here (the registry's
		 * bucket, replicated alike, would only time out).
		 */
		rc = rp_natsio_stream_info(l->js, stream, &si, &s, &code);
		if (rc == 1)
			return rp_fail(RP_HALT_NONE, "NATS stream \"%s\" has no leader: a replica answered with its own state; asking again",
						   stream);
		if (rc == 0)
		{
			rc = rp_nats_stream_check(si->Config, stream, prefix);
			if (rc == 0)
				rc = stream_entry(l, stream, slot, &reg);
			if (rc == 0)
				rc = stream_adopt(l, o, stream, slot, si, &reg, created);
			jsStreamInfo_Destroy(si);
			return rc;
		}
		if (s != NATS_NOT_FOUND && code != JSStreamNotFoundErr)
			return stream_fail("info", stream, s, code);

		/*
		 * Made once only: a stream the registry knows and that is gone was
		 * deleted, with the changes it held; making it again would hide that.
		 */
		if (stream_entry(l, stream, slot, &reg) < 0)
			return -1;
		if (reg.found)
			return rp_nats_stream_gone(stream, reg.created);

		/*
		 * made (0) or made meanwhile by another writer (1): read it and
		 * record it
		 */
		if (stream_create(l, o, stream, prefix) < 0)
			return -1;
	}
	return rp_fail(RP_HALT_NONE, "NATS stream \"%s\" could neither be found nor created", stream);
}

int
rp_nats_stream_gone(const char *stream, int64_t created)
{
	char		was[48];

	rp_natsio_time_text(created, was, sizeof(was));
	return rp_fail(RP_HALT_IDENTITY, "NATS stream \"%s\" does not exist: this slot's stream, made at %s (stream registry %s), was deleted, and the changes it held with it; rebuild it (docs/operations.md)",
				   stream, was, RP_NATSIO_REGISTRY);
}

#endif							/* RP_HAVE_NATS */
