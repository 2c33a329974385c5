/*
 * rp_natsrc_rels.c
 *    The relation descriptions a NATS source has read: one per relid, the
 *    newest, keyed also by the sequence of its relation message (every
 *    change names the one that describes it in Replicant-Relation-Seq).
 *    A description the reader has not read (it started after it) is
 *    fetched by sequence.  Each goes into a frame as a Relation record
 *    before the first change that needs it, and again when it changed:
 *    the assembler and the delivery then see a schema change exactly as
 *    from a slot.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <inttypes.h>

#include "base/rp_counter.h"
#include "base/rp_status.h"
#include "natsrc/rp_natsrc_int.h"
#include "rp_encode.h"
#include "values/rp_jsonwire.h"

RpNatsSrcRel *
rp_natsrc_rel_of(RpNatsSrc *s, uint32_t relid)
{
	for (int i = 0; i < s->nrels; i++)
		if (s->rels[i].relid == relid)
			return &s->rels[i];
	return NULL;
}

static RpNatsSrcRel *
rel_by_seq(RpNatsSrc *s, uint64_t seq)
{
	for (int i = 0; i < s->nrels; i++)
		if (s->rels[i].seq == seq)
			return &s->rels[i];
	return NULL;
}

/* Two descriptions alike in everything a Relation record carries? */
static bool
rel_same(const RpRelation *a, const RpRelation *b)
{
	if (a->relid != b->relid || a->identity != b->identity || a->natts != b->natts ||
		strcmp(a->schema, b->schema) != 0 || strcmp(a->name, b->name) != 0)
		return false;
	/* a plain table reads back from JSON without its kind: the same table */
	if (rp_relation_is_root(a) != rp_relation_is_root(b) ||
		(rp_relation_is_root(a) && a->partition_set != b->partition_set))
		return false;
	for (uint16_t i = 0; i < a->natts; i++)
	{
		const RpColumn *x = &a->cols[i];
		const RpColumn *y = &b->cols[i];

		if (x->attnum != y->attnum || x->type_oid != y->type_oid || x->typmod != y->typmod ||
			x->encoding != y->encoding || x->flags != y->flags || strcmp(x->name, y->name) != 0 ||
			strcmp(x->type_name, y->type_name) != 0)
			return false;
	}
	return true;
}

static RpNatsSrcRel *
rel_keep(RpNatsSrc *s, uint64_t seq, RpRelation *rel)
{
	RpNatsSrcRel *r = rp_natsrc_rel_of(s, rel->relid);

	if (r == NULL)
	{
		if (s->nrels == s->caprels)
		{
			s->caprels = s->caprels ? 2 * s->caprels : 16;
			s->rels = rp_realloc(s->rels, sizeof(RpNatsSrcRel) * (size_t) s->caprels);
		}
		r = &s->rels[s->nrels++];
		memset(r, 0, sizeof(*r));
		r->relid = rel->relid;
	}
	if (r->seq > seq)
	{
		/*
		 * an older description fetched for an older change: keep the newer
		 * one
		 */
		rp_relation_free(rel);
		return r;
	}
	if (r->rel && rel_same(r->rel, rel))
	{
		/* the same again (a writer's new session): nothing for the assembler */
		rp_relation_free(rel);
		r->seq = seq;
		return r;
	}
	if (r->rel)
		rp_relation_free(r->rel);
	r->rel = rel;
	r->seq = seq;
	r->sent = false;
	return r;
}

/* The description of a relation message's payload; NULL after rp_fail naming it. */
static RpRelation *
rel_parse(RpNatsSrc *s, uint64_t seq, const char *json, size_t len)
{
	RpRelation *rel = rp_jsonwire_relation(json, len);
	char		why[512];

	if (rel)
		return rel;
	snprintf(why, sizeof(why), "%s", rp_error());
	rp_fail(RP_HALT_MALFORMED, "NATS stream \"%s\": the relation message at sequence %" PRIu64 " does not parse: %s",
			s->o.stream, seq, why);
	return NULL;
}

int
rp_natsrc_rel_put(RpNatsSrc *s, uint64_t seq, const char *json, size_t len)
{
	RpRelation *rel = rel_parse(s, seq, json, len);

	if (rel == NULL)
		return -1;
	rel_keep(s, seq, rel);
	return 0;
}

RpNatsSrcRel *
rp_natsrc_rel_at(RpNatsSrc *s, uint64_t seq)
{
	RpNatsSrcRel *r = rel_by_seq(s, seq);
	natsMsg    *m = NULL;
	const char *op = NULL;
	RpRelation *rel;

	if (r)
		return r;
	RP_COUNT_ADD(s->count.relation_gets, 1);
	if (rp_natsrc_get(s, seq, &m) < 0)
		return NULL;
	if (natsMsgHeader_Get(m, "Replicant-Op", &op) != NATS_OK || strcmp(op, "relation") != 0)
	{
		natsMsg_Destroy(m);
		rp_fail(RP_HALT_GAP, "NATS stream \"%s\": the message at sequence %" PRIu64 " a change names as its relation description is not one",
				s->o.stream, seq);
		return NULL;
	}
	rel = rel_parse(s, seq, natsMsg_GetData(m), (size_t) natsMsg_GetDataLength(m));
	natsMsg_Destroy(m);
	return rel ? rel_keep(s, seq, rel) : NULL;
}

void
rp_natsrc_rel_send(RpNatsSrc *s, RpNatsSrcRel *r)
{
	if (r->sent)
		return;
	rp_enc_relation_record(&s->frame, r->rel);
	r->sent = true;
}

void
rp_natsrc_rels_unsent(RpNatsSrc *s)
{
	for (int i = 0; i < s->nrels; i++)
		s->rels[i].sent = false;
}

void
rp_natsrc_rels_free(RpNatsSrc *s)
{
	for (int i = 0; i < s->nrels; i++)
		rp_relation_free(s->rels[i].rel);
	if (s->rels)
		rp_free(s->rels);
	s->rels = NULL;
	s->nrels = s->caprels = 0;
}

#endif							/* RP_HAVE_NATS */
