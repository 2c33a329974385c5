/*
 * rp_natsio_head.c
 *    The Replicant-* headers of a stream message read back into an
 *    RpNatsHead: what the sink resumes and fences by, and what the source
 *    checks every message against.  Pure but for the end: a libnats
 *    message's header, and its freeing.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "natsio/rp_natsio.h"

bool
rp_natsio_parse_u64(const char *s, uint64_t *out)
{
	char	   *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = (uint64_t) v;
	return true;
}

static bool
parse_lsn(const char *s, uint64_t *out)
{
	return s != NULL && rp_lsn_parse(s, out);
}

static bool
copy_name(char *dst, size_t len, const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) >= len)
		return false;
	memcpy(dst, s, strlen(s) + 1);
	return true;
}

void
rp_nats_head_parse(RpNatsHead *head, RpNatsHdrGet get, void *arg)
{
	const char *op = get(arg, "Replicant-Op");
	uint64_t	tli = 0;
	bool		ok = true;

	memset(head, 0, sizeof(*head));
	if (op == NULL)
	{
		head->kind = RP_NATS_KIND_OTHER;
		return;
	}
	if (strcmp(op, "relation") == 0)
		head->kind = RP_NATS_KIND_RELATION;
	else if (strcmp(op, "position") == 0)
		head->kind = RP_NATS_KIND_POSITION;
	else if (strcmp(op, "insert") == 0 || strcmp(op, "update") == 0 ||
			 strcmp(op, "delete") == 0 || strcmp(op, "truncate") == 0 ||
			 strcmp(op, "message") == 0)
		head->kind = RP_NATS_KIND_DATA;
	else
	{
		head->kind = RP_NATS_KIND_OTHER;
		return;
	}

	ok &= rp_natsio_parse_u64(get(arg, "Replicant-System-Id"), &head->system_id);
	ok &= rp_natsio_parse_u64(get(arg, "Replicant-Timeline"), &tli) && tli <= UINT32_MAX;
	head->timeline = (uint32_t) tli;
	ok &= copy_name(head->slot, sizeof(head->slot), get(arg, "Replicant-Slot"));
	ok &= copy_name(head->writer, sizeof(head->writer), get(arg, "Replicant-Writer"));
	if (head->kind == RP_NATS_KIND_RELATION)
	{
		head->bad = !ok;
		return;
	}
	ok &= parse_lsn(get(arg, "Replicant-Lsn"), &head->commit_lsn);
	ok &= parse_lsn(get(arg, "Replicant-End-Lsn"), &head->end_lsn);
	if (head->kind == RP_NATS_KIND_DATA)
	{
		const char *last = get(arg, "Replicant-Last");

		ok &= parse_lsn(get(arg, "Replicant-Prev-End-Lsn"), &head->prev_end_lsn);
		ok &= rp_natsio_parse_u64(get(arg, "Replicant-Index"), &head->index);
		head->last = last != NULL && strcmp(last, "true") == 0;
	}
	else
		head->last = true;		/* a position ends what it covers */
	head->bad = !ok;
}

#ifdef RP_HAVE_NATS

const char *
rp_natsio_msg_header(void *arg, const char *key)
{
	const char *v = NULL;

	if (natsMsgHeader_Get((natsMsg *) arg, key, &v) != NATS_OK)
		return NULL;
	return v;
}

#ifdef RP_HAVE_NATS_MSG_FREE
/* libnats' own, exported though not declared (consumer/Makefile probes for it) */
extern void natsMsg_free(void *object);
#endif

/*
 * natsMsg_Destroy does not free: it queues the message for libnats'
 * collector thread, which falls behind a reader that keeps both cores
 * busy.  On a million messages of 16 headers each (lifted into some 34
 * small allocations a message) 61,000 destroyed messages, 75 MB, waited
 * for it, and a reader bound to 96 MB peaked at 129 MB; freed here, at
 * once, the same reader peaked at 16-17 MB in every run, in 6.0 s.
 */
void
rp_natsio_msg_free(natsMsg *m)
{
#ifdef RP_HAVE_NATS_MSG_FREE
	natsMsg_free(m);
#else
	natsMsg_Destroy(m);
#endif
}

#endif							/* RP_HAVE_NATS */
