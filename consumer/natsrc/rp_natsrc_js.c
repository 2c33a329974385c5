/*
 * rp_natsrc_js.c
 *    The NATS source's JetStream requests: the stream's state (first and
 *    last sequence, its one subject, from the leader) and a message by sequence
 *    (leader-routed, STREAM.MSG.GET: never a replica's possibly older
 *    copy), with their errors named.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <inttypes.h>
#include <stdio.h>

#include "base/rp_status.h"
#include "natsrc/rp_natsrc_int.h"

/* The JetStream error of a request as text for a message. */
int
rp_natsrc_js_fail(RpNatsSrc *s, const char *what, natsStatus st, jsErrCode code)
{
	if (code == JSStreamNotFoundErr)
		return rp_fail(RP_HALT_CONFIG, "NATS stream \"%s\" does not exist (--nats-stream)", s->o.stream);
	if (code)
		return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": %s failed (JetStream error %d)",
					   s->o.stream, what, (int) code);
	return rp_fail(RP_HALT_NONE, "NATS stream \"%s\": %s failed (%s)", s->o.stream, what,
				   rp_natsio_status_text(st));
}

/* The stream's first and last sequences and its one subject. */
int
rp_natsrc_stream_state(RpNatsSrc *s, uint64_t *first, uint64_t *last)
{
	jsStreamInfo *si = NULL;
	jsErrCode	code = 0;
	natsStatus	st = NATS_OK;
	int			rc = rp_natsio_stream_info(s->js, s->o.stream, &si, &st, &code);

	if (rc < 0)
		return rp_natsrc_js_fail(s, "reading its state", st, code);

	/*
	 * a replica's own store is no ground for the checks against the
	 * checkpoint
	 */
	if (rc > 0)
		return rp_fail(RP_HALT_NONE, "NATS stream \"%s\" has no leader: a replica answered with its own state, which may lack messages the stream holds; asking again",
					   s->o.stream);
	*first = si->State.FirstSeq;
	*last = si->State.LastSeq;
	s->created = si->Created;
	if (s->subject == NULL)
	{
		int			n = si->Config ? si->Config->SubjectsLen : 0;

		if (n != 1)
		{
			jsStreamInfo_Destroy(si);
			return rp_fail(RP_HALT_CONFIG, "NATS stream \"%s\" has %d subjects; a stream the NATS sink wrote has one (<prefix>.>)",
						   s->o.stream, n);
		}
		s->subject = rp_strndup(si->Config->Subjects[0], strlen(si->Config->Subjects[0]));
	}
	jsStreamInfo_Destroy(si);
	return 0;
}

int
rp_natsrc_get(RpNatsSrc *s, uint64_t seq, natsMsg **m)
{
	jsErrCode	code = 0;
	natsStatus	st;

	*m = NULL;
	st = js_GetMsg(m, s->js, s->o.stream, seq, NULL, &code);
	if (st != NATS_OK)
	{
		char		what[64];

		snprintf(what, sizeof(what), "reading message %" PRIu64, seq);
		*m = NULL;
		return rp_natsrc_js_fail(s, what, st, code);
	}
	return 0;
}

#endif							/* RP_HAVE_NATS */
