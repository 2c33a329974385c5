/*
 * rp_nats_stream.c
 *    The slot's stream: created when missing (file storage, the subjects
 *    <prefix>.>, limits retention, deny delete and purge, discard new when
 *    max bytes is set), checked when present, so that nothing but the
 *    sink's own appends ever changes what the stream holds (the stream is
 *    the checkpoint: a purge would be a silent gap).
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

static int
stream_check(const jsStreamConfig *c, const char *stream, const char *prefix)
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
rp_nats_stream_ensure(RpNatsLink *l, const RpNatsOptions *o, const char *stream, const char *prefix)
{
	for (int attempt = 0; attempt < 2; attempt++)
	{
		jsStreamInfo *si = NULL;
		jsErrCode	code = 0;
		natsStatus	s = js_GetStreamInfo(&si, l->js, stream, NULL, &code);
		int			rc;

		if (s == NATS_OK)
		{
			rc = stream_check(si->Config, stream, prefix);
			jsStreamInfo_Destroy(si);
			return rc;
		}
		if (s != NATS_NOT_FOUND && code != JSStreamNotFoundErr)
			return stream_fail("info", stream, s, code);
		rc = stream_create(l, o, stream, prefix);
		if (rc <= 0)
			return rc;
	}
	return rp_fail(RP_HALT_NONE, "NATS stream \"%s\" could neither be found nor created", stream);
}

#endif							/* RP_HAVE_NATS */
