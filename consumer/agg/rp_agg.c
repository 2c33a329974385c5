/*
 * rp_agg.c
 *    Aggregate bindings: their declaration, and the fold of each delivered
 *    batch (see rp_agg.h, docs/aggregates.md).
 *
 * The mirror sink calls rp_agg_batch() through the batch hook the CLI
 * registers (rp_agg_batch_hook, RpSinkBatchHook in stream/rp_sink.h) inside
 * its destination transaction after it applied the batch's rows; this is a second pass over the
 * batch's stored records, with a decoder of its own so the delivery's
 * schema-change bookkeeping sees every relation once.  Messages name the
 * binding, table and column, never a value (G4).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/rp_agg.h"
#include "base/rp_status.h"

static int
rp_agg_hook_before(void *arg, PGconn *dest, RpDelivery *dl, RpTxn **txns, int n, uint64_t done)
{
	return rp_agg_batch(arg, dest, dl, txns, n, done);
}

static int
rp_agg_hook_after(void *arg)
{
	return rp_agg_committed(arg);
}

void
rp_agg_batch_hook(RpAgg *agg, bool only, RpSinkBatchHook *hook)
{
	memset(hook, 0, sizeof(*hook));
	hook->before_commit = rp_agg_hook_before;
	hook->after_commit = rp_agg_hook_after;
	hook->arg = agg;
	hook->skip_rows = only;
}

RpAgg	   *
rp_agg_new(void)
{
	RpAgg	   *agg = rp_malloc0(sizeof(RpAgg));

	rp_decoder_init(&agg->dec);
	rp_aggval_init(&agg->scratch[0]);
	rp_aggval_init(&agg->scratch[1]);
	rp_buf_init(&agg->coord, 64);
	rp_buf_init(&agg->label, 64);
	rp_buf_init(&agg->sql, 1024);
	return agg;
}

static void
rp_agg_binding_free(RpAggBinding *b)
{
	rp_free(b->name);
	rp_free(b->schema);
	rp_free(b->table);
	for (int i = 0; i < b->ndims; i++)
	{
		rp_free(b->dims[i]);
		if (b->dim_type && b->dim_type[i])
			rp_free(b->dim_type[i]);
	}
	if (b->dims)
		rp_free(b->dims);
	if (b->dim_type)
		rp_free(b->dim_type);
	if (b->dim_class)
		rp_free(b->dim_class);
	if (b->dim_idx)
		rp_free(b->dim_idx);
	rp_free(b->measure);
	if (b->m_type)
		rp_free(b->m_type);
	if (b->value_col)
		rp_free(b->value_col);
	if (b->value_type)
		rp_free(b->value_type);
	if (b->out_schema)
		rp_free(b->out_schema);
	if (b->out_table)
		rp_free(b->out_table);
	if (b->out_qname)
		rp_free(b->out_qname);
	rp_fold_free(&b->fold);
	rp_xidsnap_free(&b->snap);
	rp_free(b);
}

void
rp_agg_free(RpAgg *agg)
{
	if (agg == NULL)
		return;
	for (int i = 0; i < agg->nb; i++)
		rp_agg_binding_free(agg->b[i]);
	if (agg->b)
		rp_free(agg->b);
	for (int i = 0; i < agg->nstreams; i++)
	{
		rp_agg_edits_close(agg->streams[i]);
		rp_free(agg->streams[i]->target);
		rp_buf_free(&agg->streams[i]->pending);
		rp_free(agg->streams[i]);
	}
	if (agg->streams)
		rp_free(agg->streams);
	if (agg->src)
		PQfinish(agg->src);
	if (agg->source_conninfo)
		rp_free(agg->source_conninfo);
	rp_decoder_free(&agg->dec);
	rp_aggval_free(&agg->scratch[0]);
	rp_aggval_free(&agg->scratch[1]);
	rp_buf_free(&agg->coord);
	rp_buf_free(&agg->label);
	rp_buf_free(&agg->sql);
	rp_free(agg);
}

void
rp_agg_set_source(RpAgg *agg, const char *conninfo)
{
	if (agg->source_conninfo)
		rp_free(agg->source_conninfo);
	agg->source_conninfo = rp_strndup(conninfo, strlen(conninfo));
}

/* ---- declarations -------------------------------------------------------------- */

/* "schema.name" (or "name": public) */
static bool
rp_agg_split_name(const char *s, char **schema, char **name)
{
	const char *dot = strchr(s, '.');

	if (dot == NULL)
	{
		*schema = rp_strndup("public", 6);
		*name = rp_strndup(s, strlen(s));
	}
	else
	{
		*schema = rp_strndup(s, (size_t) (dot - s));
		*name = rp_strndup(dot + 1, strlen(dot + 1));
	}
	/* names are taken as written: no quoting, so no dots or blanks inside */
	return **schema != '\0' && **name != '\0' && strchr(*name, '.') == NULL &&
		strpbrk(s, " \t\"") == NULL;
}

static RpAggStream *
rp_agg_stream(RpAgg *agg, RpAggOutKind kind, const char *target)
{
	RpAggStream *s;

	for (int i = 0; i < agg->nstreams; i++)
		if (agg->streams[i]->kind == kind && strcmp(agg->streams[i]->target, target) == 0)
			return agg->streams[i];
	s = rp_malloc0(sizeof(RpAggStream));
	s->kind = kind;
	s->target = rp_strndup(target, strlen(target));
	s->fd = -1;
	rp_buf_init(&s->pending, 4096);
	agg->streams = agg->streams ? rp_realloc(agg->streams, sizeof(RpAggStream *) * (size_t) (agg->nstreams + 1))
		: rp_malloc(sizeof(RpAggStream *));
	agg->streams[agg->nstreams++] = s;
	return s;
}

/* The words of a --aggregate spec, as written; name and measure go to the binding. */
typedef struct RpAggSpecWords
{
	char	   *source;
	char	   *dims;
	char	   *aggname;
	char	   *output;
} RpAggSpecWords;

static void
rp_agg_spec_words_free(RpAggSpecWords *w)
{
	if (w->source)
		rp_free(w->source);
	if (w->dims)
		rp_free(w->dims);
	if (w->aggname)
		rp_free(w->aggname);
	if (w->output)
		rp_free(w->output);
}

/*
 * The first job of a spec: its key=value words into b and w, every key
 * known and given once.  output= comes last and takes the rest of the
 * spec (a command may hold spaces).  0, or -1 after rp_fail.
 */
static int
rp_agg_spec_words(const char *spec, const char *where, RpAggBinding *b, RpAggSpecWords *w)
{
	const char *p = spec;

	while (*p)
	{
		const char *eq,
				   *end;
		char	   *key,
				  **slot = NULL;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		eq = strchr(p, '=');
		end = p + strcspn(p, " \t");
		if (eq == NULL || eq > end)
			return rp_fail(RP_HALT_CONFIG, "aggregate %s: expected KEY=VALUE, got \"%.*s\"", where,
						   (int) (end - p), p);
		key = rp_strndup(p, (size_t) (eq - p));
		if (strcmp(key, "output") == 0)
			end = p + strlen(p);
		if (strcmp(key, "name") == 0)
			slot = &b->name;
		else if (strcmp(key, "source") == 0)
			slot = &w->source;
		else if (strcmp(key, "dims") == 0)
			slot = &w->dims;
		else if (strcmp(key, "measure") == 0)
			slot = &b->measure;
		else if (strcmp(key, "agg") == 0)
			slot = &w->aggname;
		else if (strcmp(key, "output") == 0)
			slot = &w->output;
		if (slot == NULL || *slot != NULL)
		{
			rp_fail(RP_HALT_CONFIG, "aggregate %s: %s key \"%s\" (expected name, source, dims, measure, agg, output)",
					where, slot ? "repeated" : "unknown", key);
			rp_free(key);
			return -1;
		}
		rp_free(key);
		*slot = rp_strndup(eq + 1, (size_t) (end - eq - 1));
		while (end > eq + 1 && (end[-1] == ' ' || end[-1] == '\t'))
			(*slot)[--end - eq - 1] = '\0';
		p = end;
	}
	if (!b->name || !w->source || !w->dims || !b->measure || !w->aggname || !w->output)
		return rp_fail(RP_HALT_CONFIG, "aggregate %s: name, source, dims, measure, agg and output are all required", where);
	return 0;
}

/* dims=A,B,...: the binding's dimension columns (dims is cut up in place).  0 or -1. */
static int
rp_agg_spec_dims(RpAggBinding *b, char *dims)
{
	for (char *d = dims, *next; d; d = next)
	{
		next = strchr(d, ',');
		if (next)
			*next++ = '\0';
		if (*d == '\0')
			return rp_fail(RP_HALT_CONFIG, "aggregate \"%s\": empty dimension name", b->name);
		b->dims = b->dims ? rp_realloc(b->dims, sizeof(char *) * (size_t) (b->ndims + 1)) : rp_malloc(sizeof(char *));
		b->dims[b->ndims++] = rp_strndup(d, strlen(d));
	}
	return 0;
}

/* output=: where the binding's results go, and its stream when not a table.  0 or -1. */
static int
rp_agg_spec_output(RpAgg *agg, RpAggBinding *b, const char *output)
{
	if (strncmp(output, "table:", 6) == 0)
	{
		b->out = RP_AGG_OUT_TABLE;
		if (!rp_agg_split_name(output + 6, &b->out_schema, &b->out_table))
			return rp_fail(RP_HALT_CONFIG, "aggregate \"%s\": output table must be table:SCHEMA.TABLE", b->name);
	}
	else if (strcmp(output, "stdout") == 0 || strcmp(output, "-") == 0)
		b->out = RP_AGG_OUT_STDOUT;
	else if (strncmp(output, "file:", 5) == 0 && output[5])
		b->out = RP_AGG_OUT_FILE;
	else if (strncmp(output, "exec:", 5) == 0 && output[5])
		b->out = RP_AGG_OUT_EXEC;
	else
		return rp_fail(RP_HALT_CONFIG, "aggregate \"%s\": output must be table:SCHEMA.TABLE, stdout, file:PATH or exec:COMMAND",
					   b->name);
	if (b->out != RP_AGG_OUT_TABLE)
		b->stream = rp_agg_stream(agg, b->out, b->out == RP_AGG_OUT_STDOUT ? "-" : output + 5);
	return 0;
}

/*
 * A binding from its spec, in the order a reader checks one: the words,
 * the name unique, the source table, the fold, the dimensions, the
 * output.  Each job is its own function so that each error names what it
 * checked and nothing else.
 */
int
rp_agg_add_spec(RpAgg *agg, const char *spec, const char *where)
{
	RpAggBinding *b = rp_malloc0(sizeof(RpAggBinding));
	RpAggSpecWords w = {0};
	int			a;

	if (rp_agg_spec_words(spec, where, b, &w) < 0)
		goto bad;
	for (int i = 0; i < agg->nb; i++)
		if (strcmp(agg->b[i]->name, b->name) == 0)
		{
			rp_fail(RP_HALT_CONFIG, "aggregate %s: binding \"%s\" declared twice", where, b->name);
			goto bad;
		}
	if (!rp_agg_split_name(w.source, &b->schema, &b->table))
	{
		rp_fail(RP_HALT_CONFIG, "aggregate \"%s\": source must be SCHEMA.TABLE", b->name);
		goto bad;
	}
	if ((a = rp_fold_agg_parse(w.aggname)) < 0)
	{
		rp_fail(RP_HALT_CONFIG, "aggregate \"%s\": unknown agg \"%s\" (none, sum, avg, min, max, count, count_distinct)",
				b->name, w.aggname);
		goto bad;
	}
	b->agg = (RpFoldAgg) a;
	if (rp_agg_spec_dims(b, w.dims) < 0 || rp_agg_spec_output(agg, b, w.output) < 0)
		goto bad;
	rp_fold_init(&b->fold, b->agg);
	b->need_seed = true;
	b->reason = RP_AGG_SEED;
	b->m_idx = -1;
	agg->b = agg->b ? rp_realloc(agg->b, sizeof(RpAggBinding *) * (size_t) (agg->nb + 1)) : rp_malloc(sizeof(RpAggBinding *));
	agg->b[agg->nb++] = b;
	rp_agg_spec_words_free(&w);
	return 0;

bad:
	rp_agg_spec_words_free(&w);
	rp_fold_init(&b->fold, RP_FOLD_NONE);
	rp_agg_binding_free(b);
	return -1;
}

int
rp_agg_add_file(RpAgg *agg, const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[8192];
	int			lineno = 0;

	if (f == NULL)
		return rp_fail(RP_HALT_CONFIG, "could not open aggregates file \"%s\": %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
	{
		char		where[512];
		char	   *s = line;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0' || *s == '#')
			continue;
		snprintf(where, sizeof(where), "in \"%s\" line %d", path, lineno);
		if (rp_agg_add_spec(agg, s, where) < 0)
		{
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	if (agg->nb == 0)
		return rp_fail(RP_HALT_CONFIG, "aggregates file \"%s\" declares no binding", path);
	return 0;
}

/* ---- the fold of a batch ------------------------------------------------------- */

static void
rp_agg_rebuild(RpAggBinding *b, RpAggReason reason)
{
	if (b->need_seed)
		return;
	b->need_seed = true;
	b->reason = reason;
}

/* Column indexes of the binding in this description; -1 when one is gone (halts). */
static int
rp_agg_resolve(RpAggBinding *b, const RpRelation *rel)
{
	if (b->dim_idx == NULL)
		b->dim_idx = rp_malloc(sizeof(int) * (size_t) b->ndims);
	for (int i = 0; i <= b->ndims; i++)
	{
		const char *col = i < b->ndims ? b->dims[i] : b->measure;
		RpAggClass	want = i < b->ndims ? b->dim_class[i] : b->m_class;
		int			idx = rp_relation_column(rel, col);

		if (idx < 0)
			return rp_fail(RP_HALT_SCHEMA, "aggregate binding \"%s\": column \"%s\" is no longer in table \"%s\".\"%s\"",
						   b->name, col, rel->schema, rel->name);
		if (rp_aggval_class(rel->cols[idx].type_oid) != want)
			return rp_fail(RP_HALT_SCHEMA, "aggregate binding \"%s\": column \"%s\" of table \"%s\".\"%s\" changed type to %s",
						   b->name, col, rel->schema, rel->name, rel->cols[idx].type_name);
		if (i < b->ndims)
			b->dim_idx[i] = idx;
		else
			b->m_idx = idx;
	}
	b->rel = rel;
	return 0;
}

/*
 * The datum of column idx in the row the change leaves (old) or makes
 * (new); NULL when it was not replicated.  An unchanged TOAST value of the
 * new row is the old row's.
 */
static const RpDatum *
rp_agg_datum(const RpRecord *rec, bool old, int idx)
{
	const RpDatum *d;

	if (old)
	{
		if (!rec->u.change.has_old || idx >= rec->u.change.old_tuple.natts)
			return NULL;
		d = &rec->u.change.old_tuple.datums[idx];
		return d->kind == RP_DATUM_VALUE || d->kind == RP_DATUM_NULL ? d : NULL;
	}
	if (idx >= rec->u.change.new_tuple.natts)
		return NULL;
	d = &rec->u.change.new_tuple.datums[idx];
	if (d->kind == RP_DATUM_UNCHANGED)
		return rp_agg_datum(rec, true, idx);
	return d->kind == RP_DATUM_VALUE || d->kind == RP_DATUM_NULL ? d : NULL;
}

/* Build the coordinate and read the measure of one side of a change. */
static int
rp_agg_side(RpAgg *agg, RpAggBinding *b, const RpRecord *rec, bool old, RpAggReason *why)
{
	const RpRelation *rel = rec->u.change.rel;

	rp_buf_reset(&agg->coord);
	rp_buf_reset(&agg->label);
	for (int i = 0; i <= b->ndims; i++)
	{
		int			idx = i < b->ndims ? b->dim_idx[i] : b->m_idx;
		const RpDatum *d = rp_agg_datum(rec, old, idx);
		RpAggVal   *v = i < b->ndims ? &agg->scratch[0] : &agg->scratch[1];

		if (d == NULL)
		{
			*why = RP_AGG_NO_OLD_ROW;
			return -1;
		}
		v->want_num = i == b->ndims && (b->agg == RP_FOLD_SUM || b->agg == RP_FOLD_AVG);
		if (!rp_aggval_from_datum(i < b->ndims ? b->dim_class[i] : b->m_class,
								  rel->cols[idx].encoding, d, v))
		{
			*why = RP_AGG_UNREADABLE;
			return -1;
		}
		if (i == b->ndims)
			break;
		rp_agg_coord_put(agg, v);
	}
	return 0;
}

static void
rp_agg_warn(RpAggBinding *b, RpAggReason why, const RpRelation *rel)
{
	if (b->warned[why])
		return;
	b->warned[why] = true;
	if (why == RP_AGG_NO_OLD_ROW)
		fprintf(stderr, "replicant: warning: aggregate binding \"%s\": an update or delete of table \"%s\".\"%s\" did not carry its old row;"
				" set REPLICA IDENTITY FULL on that table (until then each such batch rebuilds the binding from the source)\n",
				b->name, rel->schema, rel->name);
	else if (why == RP_AGG_UNREADABLE)
		fprintf(stderr, "replicant: warning: aggregate binding \"%s\": a value of table \"%s\".\"%s\" could not be read as its column type; rebuilding from the source\n",
				b->name, rel->schema, rel->name);
}

/* Fold one change into one binding: old row out, new row in. */
static int
rp_agg_change(RpAgg *agg, RpAggBinding *b, const RpRecord *rec)
{
	RpAggReason why = RP_AGG_INCONSISTENT;
	RpFoldStatus st;

	if (b->rel != rec->u.change.rel && rp_agg_resolve(b, rec->u.change.rel) < 0)
		return -1;
	for (int side = 0; side < 2; side++)
	{
		bool		old = side == 0;
		RpFoldCell *cell;

		if (old && rec->tag == RP_TAG_INSERT)
			continue;
		if (!old && rec->tag == RP_TAG_DELETE)
			continue;
		if (rp_agg_side(agg, b, rec, old, &why) < 0)
		{
			rp_agg_warn(b, why, rec->u.change.rel);
			rp_agg_rebuild(b, why);
			return 0;
		}
		cell = rp_fold_cell(&b->fold, agg->coord.data, agg->coord.len, agg->label.data, agg->label.len);
		st = rp_fold_apply(&b->fold, cell, &agg->scratch[1].v, old ? -1 : 1);
		if (st != RP_FOLD_OK)
		{
			rp_agg_rebuild(b, st == RP_FOLD_COLLISION ? RP_AGG_COLLISION : RP_AGG_INCONSISTENT);
			return 0;
		}
	}
	RP_COUNT_ADD(agg->stats.changes, 1);
	return 0;
}

static bool
rp_agg_reads(const RpAggBinding *b, const RpRelation *rel)
{
	return rel && strcmp(rel->name, b->table) == 0 && strcmp(rel->schema, b->schema) == 0;
}

/* Did this binding's seed already see the transaction? */
static bool
rp_agg_seen(RpAggBinding *b, const RpTxn *txn)
{
	if (!b->have_snap)
		return false;
	/* a commit after the seed's WAL position is after its snapshot */
	if (txn->commit_lsn > b->seed_lsn)
	{
		rp_xidsnap_free(&b->snap);
		b->have_snap = false;
		return false;
	}
	return rp_xidsnap_saw(&b->snap, txn->xid);
}

static int
rp_agg_txn(RpAgg *agg, RpTxn *txn)
{
	RpStoreIter it;
	const unsigned char *raw;
	size_t		len;
	int			rc;
	bool		seen[64];
	bool	   *skip = agg->nb <= 64 ? seen : rp_malloc(sizeof(bool) * (size_t) agg->nb);

	for (int i = 0; i < agg->nb; i++)
		skip[i] = agg->b[i]->need_seed || rp_agg_seen(agg->b[i], txn);
	if (rp_store_iter_start(&it, &txn->store) < 0)
		rc = -1;
	else
	{
		while ((rc = rp_store_iter_next(&it, &raw, &len)) > 0)
		{
			RpRecord	rec;

			rp_decoder_records(&agg->dec, raw, len);
			if (rp_decoder_next(&agg->dec, &rec) <= 0)
			{
				rc = rp_fail(RP_HALT_MALFORMED, "stored record of xid %u does not decode: %s", txn->xid,
							 agg->dec.error);
				break;
			}
			switch (rec.tag)
			{
				case RP_TAG_RELATION:

					/*
					 * descriptions move on: column indexes are looked up
					 * again. A binding may point at the previous description:
					 * forget it before that is freed.
					 */
					for (int i = 0; i < agg->nb; i++)
						if (agg->b[i]->rel && agg->b[i]->rel->relid == rec.u.relation.rel->relid)
							agg->b[i]->rel = NULL;
					rp_relation_free(rec.u.relation.previous);
					break;
				case RP_TAG_INSERT:
				case RP_TAG_UPDATE:
				case RP_TAG_DELETE:
					for (int i = 0; i < agg->nb && rc >= 0; i++)
					{
						RpAggBinding *b = agg->b[i];

						if (!rp_agg_reads(b, rec.u.change.rel))
							continue;
						if (skip[i])
						{
							RP_COUNT_ADD(agg->stats.skipped, (uint64_t) !b->need_seed);
							continue;
						}
						rc = rp_agg_change(agg, b, &rec);
						skip[i] = b->need_seed;
					}
					break;
				case RP_TAG_TRUNCATE:
					for (uint32_t r = 0; r < rec.u.truncate.nrels; r++)
					{
						const RpRelation *rel = rp_relmap_get(&agg->dec.rels, rp_truncate_relid(&rec, r));

						for (int i = 0; i < agg->nb; i++)
							if (!skip[i] && rp_agg_reads(agg->b[i], rel))
							{
								/*
								 * every cell the relation feeds goes; later
								 * rows start afresh
								 */
								rp_fold_clear(&agg->b[i]->fold);
								agg->b[i]->replace = true;
							}
					}
					break;
				default:
					break;
			}
			if (rc < 0)
				break;
		}
		rp_store_iter_end(&it);
	}
	if (skip != seen)
		rp_free(skip);
	return rc < 0 ? -1 : 0;
}

int
rp_agg_batch(RpAgg *agg, PGconn *dest, RpDelivery *dl, RpTxn **txns, int n, uint64_t done)
{
	uint64_t	state = 0;
	uint64_t	last_lsn = 0;

	/* the fold took changes of a destination transaction that never committed */
	if (agg->in_batch)
		for (int i = 0; i < agg->nb; i++)
		{
			rp_agg_rebuild(agg->b[i], RP_AGG_RETRY);

			/*
			 * the output table may have been created in the rolled-back
			 * transaction
			 */
			agg->b[i]->ready_conn = NULL;
		}
	agg->in_batch = true;
	for (int i = 0; i < agg->nstreams; i++)
		rp_buf_reset(&agg->streams[i]->pending);
	for (int i = 0; i < agg->nb; i++)
		if (agg->b[i]->need_seed && rp_agg_seed(agg, agg->b[i]) < 0)
			return -1;
	agg->dec.version = dl->dec.version;
	for (int t = 0; t < n; t++)
	{
		if (txns[t]->commit_lsn <= done)
			continue;
		if (rp_agg_txn(agg, txns[t]) < 0)
			return -1;
		last_lsn = txns[t]->end_lsn;
	}
	for (int i = 0; i < agg->nb; i++)
	{
		RpAggBinding *b = agg->b[i];

		/* rebuild, never guess */
		if (b->need_seed && rp_agg_seed(agg, b) < 0)
			return -1;
		if (b->out == RP_AGG_OUT_TABLE)
		{
			if (rp_agg_table_write(agg, b, dest) < 0)
				return -1;
		}
		else
			rp_agg_edits_batch(agg, b, last_lsn);
		rp_fold_end_batch(&b->fold);
		b->replace = false;
		state += rp_fold_bytes(&b->fold);
	}
	RP_COUNT_STORE(agg->stats.state_bytes, state);
	return 0;
}

int
rp_agg_committed(RpAgg *agg)
{
	agg->in_batch = false;
	for (int i = 0; i < agg->nstreams; i++)
		if (rp_agg_edits_flush(agg->streams[i]) < 0)
			return -1;
	return 0;
}
