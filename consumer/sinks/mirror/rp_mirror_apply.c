/*
 * rp_mirror_apply.c
 *    Net effects and bulk apply for the mirror sink.
 *
 * Within a batch every change is folded into one effect per key (insert
 * then update = one upsert; insert then delete = a delete of a key the
 * destination may not have; an update of the key = a delete of the old key
 * and an upsert of the new one).  At the end of the batch, or at a barrier
 * (TRUNCATE, a schema change), each table's effects are applied in bulk:
 * keys to delete and full rows are COPYed into temporary staging tables,
 * then one DELETE ... USING and one INSERT ... ON CONFLICT DO UPDATE per
 * table.  Rows with unchanged TOAST columns are updated one by one with
 * only the columns they carry, so the destination keeps its value.
 * Tables without a key under REPLICA IDENTITY FULL are applied change by
 * change, matched on all columns; history tables get one closed and one
 * opened version per key and source transaction.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream/rp_ckpt.h"
#include "rp_format.h"
#include "sinks/mirror/rp_mirror_int.h"
#include "sinks/mirror/rp_mirror_backfill.h"
#include "values/rp_pgbin.h"
#include "values/rp_pgtext.h"
#include "rp_read.h"
#include "base/rp_status.h"
#include "stream/rp_store.h"

#define RP_COPY_CHUNK (1024 * 1024)
#define RP_COPY_DIRECT (256 * 1024)	/* a value this large is sent from where it lies */

/*
 * A datum kind of the sink's own effect rows (never on the wire): the
 * destination's text of a value, read back from the destination.
 */
#define RP_MIRROR_DATUM_TEXT 't'

/* ---- serialized rows: per column kind u8, len u32, bytes ------------------ */

static void
rp_row_put(RpBuf *b, const RpDatum *d)
{
	rp_buf_put_u8(b, d->kind);
	rp_buf_put_u32(b, d->len);
	if (d->len)
		rp_buf_put_bytes(b, d->data, d->len);
}

/*
 * A value this large is not copied into the arena: the row holds where it
 * lies in the record being applied (kind RP_MIRROR_DATUM_REF, its address and
 * length), and the map is applied before the next record is read
 * (rp_effects_bound), while that address is still good.  One large value
 * is then held by the record alone.
 */
#define RP_ROW_REF_MIN (1024 * 1024)
#define RP_MIRROR_DATUM_REF 'r'

static void
rp_row_put_ref(RpBuf *b, const RpDatum *d)
{
	uint32_t	len = d->len;

	rp_buf_put_u8(b, RP_MIRROR_DATUM_REF);
	rp_buf_put_u32(b, (uint32_t) (sizeof(d->data) + sizeof(len)));
	rp_buf_put_bytes(b, &d->data, sizeof(d->data));
	rp_buf_put_bytes(b, &len, sizeof(len));
}

/* Column i of a serialized row. */
static void
rp_row_get(const RpBuf *arena, size_t off, int i, RpDatum *d)
{
	const unsigned char *p = (const unsigned char *) arena->data + off;

	for (;;)
	{
		uint32_t	len = rp_load_u32(p + 1);

		if (i-- == 0)
		{
			d->kind = p[0];
			d->len = len;
			d->data = p + 5;
			if (d->kind == RP_MIRROR_DATUM_REF)
			{
				d->kind = RP_DATUM_VALUE;
				memcpy(&d->data, p + 5, sizeof(d->data));
				memcpy(&d->len, p + 5 + sizeof(d->data), sizeof(d->len));
			}
			return;
		}
		p += 5 + len;
	}
}

/*
 * FNV-1a, then a 64-bit finalizer: keys differ mostly in their last bytes
 * (sequential ids), and the table takes the low bits, which FNV alone
 * leaves clustered under linear probing.
 */
static uint64_t
rp_hash(const unsigned char *p, size_t n)
{
	uint64_t	h = UINT64_C(1469598103934665603);

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* ---- the effect map --------------------------------------------------------- */

static void
rp_effects_grow(RpMirrorTable *t)
{
	int			n = t->nslots ? t->nslots * 2 : 1024;

	if (t->slots)
		rp_free(t->slots);
	t->slots = rp_malloc0(sizeof(int) * (size_t) n);
	t->nslots = n;
	for (int e = 0; e < t->neffects; e++)
	{
		int			s = (int) (t->effects[e].hash & (uint64_t) (n - 1));

		while (t->slots[s])
			s = (s + 1) & (n - 1);
		t->slots[s] = e + 1;
	}
}

static RpEffect *
rp_effect_for(RpMirror *pg, RpMirrorTable *t, const RpBuf *key)
{
	uint64_t	h = rp_hash((const unsigned char *) key->data, key->len);
	int			s;
	RpEffect   *e;

	if ((t->neffects + 1) * 2 > t->nslots)
		rp_effects_grow(t);
	s = (int) (h & (uint64_t) (t->nslots - 1));
	while (t->slots[s])
	{
		e = &t->effects[t->slots[s] - 1];
		if (e->hash == h && e->key_len == key->len &&
			memcmp(t->arena.data + e->key_off, key->data, key->len) == 0)
			return e;
		s = (s + 1) & (t->nslots - 1);
	}
	if (t->neffects == t->capeffects)
	{
		t->capeffects = t->capeffects ? t->capeffects * 2 : 1024;
		t->effects = rp_realloc(t->effects, sizeof(RpEffect) * (size_t) t->capeffects);
	}
	if (t->neffects == 0)
		t->order = ++pg->touched;
	e = &t->effects[t->neffects++];
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->key_off = t->arena.len;
	e->key_len = (uint32_t) key->len;
	rp_buf_put_bytes(&t->arena, key->data, key->len);
	t->slots[s] = t->neffects;
	return e;
}

/* The batch's effect on key, or NULL. */
static RpEffect *
rp_effect_find(RpMirrorTable *t, const RpBuf *key)
{
	uint64_t	h = rp_hash((const unsigned char *) key->data, key->len);
	int			s;

	if (t->nslots == 0)
		return NULL;
	s = (int) (h & (uint64_t) (t->nslots - 1));
	while (t->slots[s])
	{
		RpEffect   *e = &t->effects[t->slots[s] - 1];

		if (e->hash == h && e->key_len == key->len &&
			memcmp(t->arena.data + e->key_off, key->data, key->len) == 0)
			return e;
		s = (s + 1) & (t->nslots - 1);
	}
	return NULL;
}

static void
rp_key_of(const RpMirrorTable *t, const RpTuple *tup, RpBuf *key)
{
	rp_buf_reset(key);
	for (int k = 0; k < t->nkey; k++)
		rp_row_put(key, &tup->datums[t->keycols[k]]);
}

static void
rp_effect_delete(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key)
{
	RpEffect   *e;

	rp_key_of(t, tup, key);
	e = rp_effect_for(pg, t, key);
	e->op = RP_EFFECT_DELETE;
	e->partial = false;
	e->row_off = e->key_off;
	e->row_len = 0;
}

static void
rp_effect_upsert(RpMirror *pg, RpMirrorTable *t, const RpTuple *tup, RpBuf *key, bool insert, bool may_ref)
{
	RpEffect   *e;
	bool		partial = false;
	RpEffect	prev;
	size_t		off;
	int			before = t->neffects;

	rp_key_of(t, tup, key);
	e = rp_effect_for(pg, t, key);
	/* a key first seen as an INSERT did not exist before the batch */
	if (t->neffects > before)
		e->fresh = insert;
	prev = *e;
	for (uint16_t i = 0; i < tup->natts; i++)
		partial |= tup->datums[i].kind == RP_DATUM_UNCHANGED;

	/*
	 * Values taken from prev's row point into the arena we append to: make
	 * room for the whole row first, so no append moves the arena under them.
	 */
	{
		size_t		need = 0;

		for (uint16_t i = 0; i < tup->natts; i++)
		{
			RpDatum		d = tup->datums[i];

			if (d.kind == RP_DATUM_UNCHANGED && prev.op == RP_EFFECT_UPSERT && prev.row_len > 0)
				rp_row_get(&t->arena, prev.row_off, i, &d);
			need += 5 + (size_t) (may_ref && d.len >= RP_ROW_REF_MIN ? 12 : d.len);
		}
		rp_buf_reserve(&t->arena, need);
	}
	off = t->arena.len;
	for (uint16_t i = 0; i < tup->natts; i++)
	{
		RpDatum		d = tup->datums[i];

		/* an unchanged TOAST value the batch already holds: take it from there */
		if (d.kind == RP_DATUM_UNCHANGED && prev.op == RP_EFFECT_UPSERT && prev.row_len > 0)
			rp_row_get(&t->arena, prev.row_off, i, &d);
		if (may_ref && d.kind == RP_DATUM_VALUE && d.len >= RP_ROW_REF_MIN)
		{
			rp_row_put_ref(&t->arena, &d);
			pg->refs = true;
		}
		else
			rp_row_put(&t->arena, &d);
	}
	if (partial)
	{
		partial = false;
		for (uint16_t i = 0; i < tup->natts; i++)
		{
			RpDatum		d;

			rp_row_get(&t->arena, off, i, &d);
			partial |= d.kind == RP_DATUM_UNCHANGED;
		}
	}
	e->op = RP_EFFECT_UPSERT;
	e->partial = partial;
	e->row_off = off;
	e->row_len = t->arena.len - off;
}

/* ---- the memory bound (G5) ------------------------------------------------------ */

/*
 * Every table's effect map (arena, effect array, hash slots) is charged to
 * the consumer's memory budget, the counter the assembler's stores spill
 * against.  Once the maps' allocations reach a quarter of --max-memory they
 * are applied inside the open destination transaction, the way a barrier
 * applies them, and their memory is given back; the batch still commits
 * once, with its checkpoint.  One change grows each allocation at most by
 * doubling, so the maps stay under half of --max-memory, and the stores
 * get the rest.  A row holding a large value by reference (rp_row_put_ref)
 * is applied at once, before the record it points into goes.
 */
#define RP_MIRROR_BOUND_DEFAULT ((size_t) 64 << 20)	/* no budget: the default's quarter */
#define RP_MIRROR_ARENA_INITIAL (64 * 1024)

static size_t
rp_effects_limit(const RpMirror *pg)
{
	const RpSpill *sp = pg->sink ? pg->sink->spill : NULL;

	return sp ? sp->max_memory / 4 : RP_MIRROR_BOUND_DEFAULT;
}

/* Charge what t's map holds now (more or less than before). */
static void
rp_effects_account(RpMirror *pg, RpMirrorTable *t)
{
	size_t		now = t->arena.cap + sizeof(RpEffect) * (size_t) t->capeffects +
		sizeof(int) * (size_t) t->nslots;
	if (now == t->held)
		return;
	/* what was charged goes back to where it was charged */
	if (pg->held == 0)
		pg->budget = pg->sink ? pg->sink->spill : NULL;
	if (pg->budget)
		rp_spill_charge(pg->budget, (int64_t) now - (int64_t) t->held);
	pg->held = pg->held - t->held + now;
	t->held = now;
}

void
rp_mirror_apply_release(RpMirror *pg)
{
	for (int i = 0; i < pg->ntables; i++)
	{
		RpMirrorTable *t = pg->tables[i];

		if (t->effects)
			rp_free(t->effects);
		if (t->slots)
			rp_free(t->slots);
		t->effects = NULL;
		t->slots = NULL;
		t->neffects = t->capeffects = t->nslots = 0;
		pg->refs = false;
		if (t->arena.cap > RP_MIRROR_ARENA_INITIAL)
		{
			rp_buf_free(&t->arena);
			rp_buf_init(&t->arena, RP_MIRROR_ARENA_INITIAL);
		}
		rp_buf_reset(&t->arena);
		rp_effects_account(pg, t);
	}
}

/* After a change of t: past the maps' share, apply them now and go on. */
static int
rp_effects_bound(RpMirror *pg, RpMirrorTable *t)
{
	rp_effects_account(pg, t);
	if (pg->held < rp_effects_limit(pg) && !pg->refs)
		return 0;
	pg->refs = false;
	if (rp_mirror_apply_flush(pg) < 0)
		return -1;
	pg->bound_flushes++;
	rp_mirror_apply_release(pg);
	return 0;
}

/* ---- statements ---------------------------------------------------------------- */

/* Query parameters as text, built up one by one. */
typedef struct RpParams
{
	RpBuf		strings;
	size_t	   *offs;
	bool	   *isnull;
	int			n;
	int			cap;
} RpParams;

static void
rp_params_init(RpParams *p)
{
	memset(p, 0, sizeof(*p));
	rp_buf_init(&p->strings, 256);
}

static int
rp_params_slot(RpParams *p)
{
	if (p->n == p->cap)
	{
		p->cap = p->cap ? p->cap * 2 : 16;
		p->offs = rp_realloc(p->offs, sizeof(size_t) * (size_t) p->cap);
		p->isnull = rp_realloc(p->isnull, sizeof(bool) * (size_t) p->cap);
	}
	p->offs[p->n] = p->strings.len;
	p->isnull[p->n] = false;
	return ++p->n;
}

static int
rp_params_datum(RpParams *p, uint8_t enc, const RpDatum *d)
{
	int			no = rp_params_slot(p);

	if (d->kind == RP_MIRROR_DATUM_TEXT)
	{
		rp_buf_put_bytes(&p->strings, d->data, d->len);
		rp_buf_put_char(&p->strings, '\0');
	}
	else if (d->kind != RP_DATUM_VALUE)
		p->isnull[no - 1] = true;
	else
	{
		rp_pgtext_value(&p->strings, enc, d->data, d->len);
		rp_buf_put_char(&p->strings, '\0');
	}
	return no;
}

static int
rp_params_text(RpParams *p, const char *s)
{
	int			no = rp_params_slot(p);

	rp_buf_put_text(&p->strings, s);
	rp_buf_put_char(&p->strings, '\0');
	return no;
}

static int
rp_params_exec(RpMirror *pg, RpMirrorTable *t, const char *sql, RpParams *p, const char *what)
{
	const char **vals = rp_malloc0(sizeof(char *) * (size_t) (p->n ? p->n : 1));
	int			rc;

	for (int i = 0; i < p->n; i++)
		vals[i] = p->isnull[i] ? NULL : p->strings.data + p->offs[i];
	rc = rp_mirror_exec_params(pg, sql, p->n, vals, what, t);
	rp_free(vals);
	return rc;
}

/* Like rp_params_exec; returns the number of rows the command affected. */
static int
rp_params_exec_count(RpMirror *pg, RpMirrorTable *t, const char *sql, RpParams *p, const char *what)
{
	const char **vals = rp_malloc0(sizeof(char *) * (size_t) (p->n ? p->n : 1));
	PGresult   *res;
	int			rc;

	for (int i = 0; i < p->n; i++)
		vals[i] = p->isnull[i] ? NULL : p->strings.data + p->offs[i];
	res = PQexecParams(pg->conn, sql, p->n, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = rp_mirror_fail_result(pg, res, what, t);
	else
		rc = atoi(PQcmdTuples(res));
	PQclear(res);
	rp_free(vals);
	return rc;
}

static void
rp_params_free(RpParams *p)
{
	rp_buf_free(&p->strings);
	if (p->offs)
		rp_free(p->offs);
	if (p->isnull)
		rp_free(p->isnull);
}

/*
 * "send(o.c) IS NOT DISTINCT FROM send($n::type)": the old row's value
 * exactly, not one the type's "=" calls equal (rp_mirror_read_match); a type
 * without a send function compares its text output, and also works for
 * types without "=" (json, point ...).
 */
static void
rp_match_expr(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, int col, int param, const char *alias)
{
	const RpColumn *c = &t->rel->cols[col];
	const char *fn = t->match_send ? t->match_send[col] : NULL;
	const char *type = t->match_type && t->match_type[col] ? t->match_type[col] : c->type_name;
	const char *close = fn ? ")" : ")::text";
	char	   *qc = rp_mirror_ident(pg, c->name);
	char		tmp[32];

	rp_buf_put_text(sql, fn ? fn : "");
	rp_buf_put_char(sql, '(');
	if (alias)
	{
		rp_buf_put_text(sql, alias);
		rp_buf_put_char(sql, '.');
	}
	rp_buf_put_text(sql, qc);
	rp_buf_put_text(sql, close);
	rp_buf_put_text(sql, " IS NOT DISTINCT FROM ");
	rp_buf_put_text(sql, fn ? fn : "");
	snprintf(tmp, sizeof(tmp), "($%d::", param);
	rp_buf_put_text(sql, tmp);
	rp_buf_put_text(sql, type);
	rp_buf_put_text(sql, close);
	rp_free(qc);
}

/* Execute sql with datums as its text parameters ($1..$n). */
static int
rp_exec_datums(RpMirror *pg, RpMirrorTable *t, const char *sql, int n, const RpDatum *datums,
			   const uint8_t *encs, const char *what)
{
	RpParams	p;
	int			rc;

	rp_params_init(&p);
	for (int i = 0; i < n; i++)
		rp_params_datum(&p, encs[i], &datums[i]);
	rc = rp_params_exec(pg, t, sql, &p, what);
	rp_params_free(&p);
	return rc;
}

/* Columns of tup as datums/encodings for the applied columns (skip_unchanged). */
static int
rp_collect(const RpMirrorTable *t, const RpTuple *tup, bool skip_unchanged, RpDatum *datums,
		   uint8_t *encs, int *which)
{
	int			n = 0;

	for (uint16_t i = 0; i < tup->natts; i++)
	{
		const RpColumn *c = &t->rel->cols[i];

		if (c->flags & RP_COL_GENERATED)
			continue;
		if (skip_unchanged && tup->datums[i].kind == RP_DATUM_UNCHANGED)
			continue;
		datums[n] = tup->datums[i];
		encs[n] = c->encoding;
		which[n] = i;
		n++;
	}
	return n;
}

static void
rp_sql_insert_values(RpMirror *pg, RpBuf *sql, const RpMirrorTable *t, const int *which, int n,
					 const char *extra_cols, const char *extra_vals)
{
	char		tmp[32];

	rp_buf_put_text(sql, "INSERT INTO ");
	rp_buf_put_text(sql, t->qname);
	rp_buf_put_text(sql, " (");
	for (int i = 0; i < n; i++)
	{
		char	   *qc = rp_mirror_ident(pg, t->rel->cols[which[i]].name);

		if (i)
			rp_buf_put_text(sql, ", ");
		rp_buf_put_text(sql, qc);
		rp_free(qc);
	}
	if (extra_cols)
		rp_buf_put_text(sql, extra_cols);
	rp_buf_put_text(sql, ") VALUES (");
	for (int i = 0; i < n; i++)
	{
		snprintf(tmp, sizeof(tmp), "%s$%d", i ? ", " : "", i + 1);
		rp_buf_put_text(sql, tmp);
	}
	if (extra_vals)
		rp_buf_put_text(sql, extra_vals);
	rp_buf_put_char(sql, ')');
}

/* ---- REPLICA IDENTITY FULL without a key: change by change ---------------------- */

static int
rp_apply_full_match(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec)
{
	const RpRelation *rel = t->rel;
	int			natts = rel->natts;
	RpDatum    *datums = rp_malloc0(sizeof(RpDatum) * (size_t) (2 * natts + 1));
	uint8_t    *encs = rp_malloc0((size_t) (2 * natts + 1));
	int		   *which = rp_malloc0(sizeof(int) * (size_t) (2 * natts + 1));
	RpBuf		sql;
	int			n = 0,
				rc;
	char		tmp[32];

	rp_buf_init(&sql, 512);
	if (rec->tag == RP_TAG_INSERT)
	{
		n = rp_collect(t, &rec->u.change.new_tuple, false, datums, encs, which);
		rp_sql_insert_values(pg, &sql, t, which, n, NULL, NULL);
	}
	else
	{
		int			nset = 0;
		int			nmatch;

		if (!rec->u.change.has_old)
		{
			rc = rp_fail(RP_HALT_SINK, "%s on table %s carries no old row to match", rp_tag_name(rec->tag),
						 t->qname);
			goto done;
		}
		if (rec->tag == RP_TAG_UPDATE)
		{
			nset = rp_collect(t, &rec->u.change.new_tuple, true, datums, encs, which);
			rp_buf_put_text(&sql, "UPDATE ");
			rp_buf_put_text(&sql, t->qname);
			rp_buf_put_text(&sql, " SET ");
			for (int i = 0; i < nset; i++)
			{
				char	   *qc = rp_mirror_ident(pg, rel->cols[which[i]].name);

				snprintf(tmp, sizeof(tmp), " = $%d", i + 1);
				if (i)
					rp_buf_put_text(&sql, ", ");
				rp_buf_put_text(&sql, qc);
				rp_buf_put_text(&sql, tmp);
				rp_free(qc);
			}
		}
		else
		{
			rp_buf_put_text(&sql, "DELETE FROM ");
			rp_buf_put_text(&sql, t->qname);
		}
		/* one row that equals the old row in every column */
		rp_buf_put_text(&sql, " WHERE ctid = (SELECT ctid FROM ");
		rp_buf_put_text(&sql, t->qname);
		rp_buf_put_text(&sql, " o WHERE ");
		nmatch = rp_collect(t, &rec->u.change.old_tuple, false, datums + nset, encs + nset,
							which + nset);
		for (int i = 0; i < nmatch; i++)
		{
			if (i)
				rp_buf_put_text(&sql, " AND ");
			rp_match_expr(pg, &sql, t, which[nset + i], nset + i + 1, "o");
		}
		rp_buf_put_text(&sql, " LIMIT 1)");
		n = nset + nmatch;
	}
	rp_buf_put_char(&sql, '\0');
	if (rec->tag == RP_TAG_INSERT)
		rc = rp_exec_datums(pg, t, sql.data, n, datums, encs, "applying a change");
	else
	{
		RpParams	p;

		/* the source changed one row: matching none means the destination diverged */
		rp_params_init(&p);
		for (int i = 0; i < n; i++)
			rp_params_datum(&p, encs[i], &datums[i]);
		rc = rp_params_exec_count(pg, t, sql.data, &p, "applying a change");
		rp_params_free(&p);
		if (rc == 0)
			rc = rp_mirror_divergence(pg, t, rec->tag == RP_TAG_UPDATE ? "an update matched no row" : "a delete matched no row");
		else if (rc > 1)		/* a partitioned table: ctid is per partition */
			rc = rp_mirror_divergence(pg, t, rec->tag == RP_TAG_UPDATE ? "an update matched more than one row" : "a delete matched more than one row");
		else if (rc == 1)
			rc = 0;
	}
done:
	rp_buf_free(&sql);
	rp_free(datums);
	rp_free(encs);
	rp_free(which);
	return rc;
}

/* ---- key changes with unchanged TOAST --------------------------------------------- */

/*
 * The destination's values of out's unchanged columns, as text, in the row
 * of oldkey (a key row) or else of newt's key (history: the open version).
 */
static PGresult *
rp_moved_read(RpMirror *pg, RpMirrorTable *t, const RpTuple *out, const RpBuf *oldkey, const RpTuple *newt)
{
	RpBuf		sql;
	RpParams	p;
	PGresult   *res;
	const char **vals;
	char		tmp[32];
	bool		first = true;

	rp_buf_init(&sql, 512);
	rp_params_init(&p);
	rp_buf_put_text(&sql, "SELECT ");
	for (int i = 0; i < out->natts; i++)
	{
		char	   *qc;

		if (out->datums[i].kind != RP_DATUM_UNCHANGED)
			continue;
		qc = rp_mirror_ident(pg, t->rel->cols[i].name);
		if (!first)
			rp_buf_put_text(&sql, ", ");
		first = false;
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, "::text");
		rp_free(qc);
	}
	rp_buf_put_text(&sql, " FROM ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_text(&sql, " WHERE ");
	for (int k = 0; k < t->nkey; k++)
	{
		RpDatum		d;
		char	   *qc = rp_mirror_ident(pg, t->rel->cols[t->keycols[k]].name);

		if (oldkey)
			rp_row_get(oldkey, 0, k, &d);
		else
			d = newt->datums[t->keycols[k]];
		snprintf(tmp, sizeof(tmp), " = $%d", rp_params_datum(&p, t->rel->cols[t->keycols[k]].encoding, &d));
		if (k)
			rp_buf_put_text(&sql, " AND ");
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, tmp);
		rp_free(qc);
	}
	if (t->history)
		rp_buf_put_text(&sql, " AND valid_to_lsn IS NULL");
	rp_buf_put_text(&sql, " LIMIT 1");
	rp_buf_put_char(&sql, '\0');
	vals = rp_malloc0(sizeof(char *) * (size_t) (p.n ? p.n : 1));
	for (int i = 0; i < p.n; i++)
		vals[i] = p.isnull[i] ? NULL : p.strings.data + p.offs[i];
	res = PQexecParams(pg->conn, sql.data, p.n, NULL, vals, NULL, NULL, 0);
	rp_free(vals);
	rp_params_free(&p);
	rp_buf_free(&sql);
	return res;
}

/*
 * An update that changes the key while some column is unchanged TOAST does
 * not carry that column's value.  It is in the batch's row of the old key,
 * in the old tuple (REPLICA IDENTITY FULL), or else in the destination's row
 * of the old key (history: its open version), which the batch has not
 * touched yet (or, that missing, its row of the new key).  out gets the new
 * tuple with every unchanged column filled
 * in; its bytes live in hold.  Without this the new key would get a partial
 * UPDATE of a row that does not exist, and the row would be lost.
 */
static int
rp_fill_moved(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec, const RpBuf *oldkey, RpTuple *out,
			  RpBuf *hold)
{
	const RpTuple *nt = &rec->u.change.new_tuple;
	const RpTuple *ot = &rec->u.change.old_tuple;
	const RpEffect *src = rp_effect_find(t, oldkey);
	int			natts = nt->natts;
	size_t	   *offs = rp_malloc0(sizeof(size_t) * (size_t) (natts ? natts : 1));
	bool		need_dest = false;
	int			rc = 0;

	out->natts = nt->natts;
	out->datums = rp_malloc0(sizeof(RpDatum) * (size_t) (natts ? natts : 1));
	for (int i = 0; i < natts; i++)
	{
		RpDatum		d = nt->datums[i];

		if (d.kind == RP_DATUM_UNCHANGED && src && src->op == RP_EFFECT_UPSERT && src->row_len > 0)
			rp_row_get(&t->arena, src->row_off, i, &d);
		if (d.kind == RP_DATUM_UNCHANGED && i < ot->natts &&
			(ot->datums[i].kind == RP_DATUM_VALUE || ot->datums[i].kind == RP_DATUM_NULL))
			d = ot->datums[i];
		offs[i] = hold->len;
		if (d.kind != RP_DATUM_UNCHANGED && d.len)
			rp_buf_put_bytes(hold, d.data, d.len);
		out->datums[i] = d;
		need_dest |= d.kind == RP_DATUM_UNCHANGED;
	}
	if (need_dest)
	{
		PGresult   *res = rp_moved_read(pg, t, out, oldkey, NULL);

		/*
		 * The old key is not there: a resumed snapshot can leave it so (the
		 * row moved before the resumed copy, which then stored its new
		 * key).  That row was copied after this change, and any later
		 * change to these columns follows in the stream, so its values
		 * serve.  Holding neither key is the case that halts.
		 */
		if (res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 0)
		{
			PQclear(res);
			res = rp_moved_read(pg, t, out, NULL, nt);
		}
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			rc = rp_mirror_fail_result(pg, res, "reading the unchanged TOAST values of a moved row", t);
		else if (PQntuples(res) != 1)
			rc = rp_fail(RP_HALT_SINK, "update on table %s changes the key of a row the destination does not hold, and its unchanged TOAST values are only there",
						 t->qname);
		else
		{
			int			f = 0;

			for (int i = 0; i < natts; i++)
			{
				if (out->datums[i].kind != RP_DATUM_UNCHANGED)
					continue;
				offs[i] = hold->len;
				if (PQgetisnull(res, 0, f))
				{
					out->datums[i].kind = RP_DATUM_NULL;
					out->datums[i].len = 0;
				}
				else
				{
					out->datums[i].kind = RP_MIRROR_DATUM_TEXT;
					t->text_datums = true;	/* this batch's COPYs go as text */
					out->datums[i].len = (uint32_t) PQgetlength(res, 0, f);
					rp_buf_put_bytes(hold, PQgetvalue(res, 0, f), out->datums[i].len);
				}
				f++;
			}
		}
		PQclear(res);
	}
	/* hold is complete: point into it */
	for (int i = 0; i < natts; i++)
		out->datums[i].data = out->datums[i].len ? (const unsigned char *) hold->data + offs[i] : NULL;
	rp_free(offs);
	return rc;
}

/* ---- changes ---------------------------------------------------------------------- */

/* A change of a keyed table folded into its effect map. */
static int
rp_apply_keyed(RpMirror *pg, RpMirrorTable *t, const RpRecord *rec)
{
	RpBuf		key;

	rp_buf_init(&key, 64);
	switch (rec->tag)
	{
		case RP_TAG_INSERT:
			rp_effect_upsert(pg, t, &rec->u.change.new_tuple, &key, true, true);
			break;
		case RP_TAG_UPDATE:
			if (rec->u.change.has_old)
			{
				RpBuf		newkey;

				/* the key changed (or the old row is all there): maybe a move */
				rp_buf_init(&newkey, 64);
				rp_key_of(t, &rec->u.change.old_tuple, &key);
				rp_key_of(t, &rec->u.change.new_tuple, &newkey);
				if (key.len != newkey.len || memcmp(key.data, newkey.data, key.len) != 0)
				{
					const RpTuple *nt = &rec->u.change.new_tuple;
					bool		unchanged = false;

					for (uint16_t i = 0; i < nt->natts; i++)
						unchanged |= nt->datums[i].kind == RP_DATUM_UNCHANGED;
					if (unchanged)
					{
						RpTuple		filled;
						RpBuf		hold;
						int			rc;

						/* read the old key's values before its effect becomes a delete */
						rp_buf_init(&hold, 1024);
						rc = rp_fill_moved(pg, t, rec, &key, &filled, &hold);
						if (rc == 0)
						{
							rp_effect_delete(pg, t, &rec->u.change.old_tuple, &key);
							/* filled lives in hold, gone before the map is applied */
							rp_effect_upsert(pg, t, &filled, &key, false, false);
						}
						rp_free(filled.datums);
						rp_buf_free(&hold);
						rp_buf_free(&newkey);
						rp_buf_free(&key);
						return rc;
					}
					rp_effect_delete(pg, t, &rec->u.change.old_tuple, &key);
				}
				rp_buf_free(&newkey);
			}
			rp_effect_upsert(pg, t, &rec->u.change.new_tuple, &key, false, true);
			break;
		case RP_TAG_DELETE:
			if (!rec->u.change.has_old)
			{
				rp_buf_free(&key);
				return rp_fail(RP_HALT_SINK, "delete on table %s carries no key", t->qname);
			}
			rp_effect_delete(pg, t, &rec->u.change.old_tuple, &key);
			break;
	}
	rp_buf_free(&key);
	return 0;
}

int
rp_mirror_apply_change(RpMirror *pg, const RpRecord *rec)
{
	RpMirrorTable *t = rp_mirror_table_get(pg, rec->u.change.rel);
	uint8_t		tag = rec->tag;

	if (!t->resolved && rp_mirror_table_resolve(pg, t) < 0)
		return -1;
	/* ---- backfill (rp_mirror_backfill.c): a key changed inside a window ---- */
	rp_mirror_backfill_note(pg, t, rec);
	if (tag != RP_TAG_INSERT && (t->no_identity || (rec->u.change.flags & RP_CHANGE_NO_IDENTITY)))
		return rp_fail(RP_HALT_SINK, "%s on table %s cannot be applied: the source table has no replica identity (set a primary key or REPLICA IDENTITY FULL)",
					   rp_tag_name(tag), t->qname);
	if (t->full_match)
		return rp_apply_full_match(pg, t, rec);
	if (rp_apply_keyed(pg, t, rec) < 0)
		return -1;
	return rp_effects_bound(pg, t);
}

/*
 * TRUNCATE is a barrier: effects before it land first.  A history table is
 * not emptied: its open versions are closed at the truncating commit, so
 * the history still says what was there before.
 */
int
rp_mirror_apply_truncate(RpMirror *pg, const RpRecord *rec, const RpRelMap *rels)
{
	RpBuf		sql;
	int			rc = 0;
	int			nplain = 0;

	if (rp_mirror_apply_flush(pg) < 0)
		return -1;
	rp_buf_init(&sql, 256);
	rp_buf_put_text(&sql, "TRUNCATE ");
	for (uint32_t i = 0; i < rec->u.truncate.nrels && rc == 0; i++)
	{
		RpMirrorTable *t = rp_mirror_table_get(pg, rp_relmap_get(rels, rp_truncate_relid(rec, i)));

		if (!t->resolved && rp_mirror_table_resolve(pg, t) < 0)
			rc = -1;
		else if (t->history)
		{
			RpParams	p;
			RpBuf		q,
						ts;
			char		lsn[24];

			rp_lsn_format(pg->cur_commit_lsn, lsn);
			rp_buf_init(&ts, 64);
			rp_fmt_timestamp(&ts, pg->cur_commit_time, true);
			rp_buf_put_char(&ts, '\0');
			rp_params_init(&p);
			rp_params_text(&p, lsn);
			rp_params_text(&p, ts.data);
			rp_buf_init(&q, 256);
			rp_buf_put_text(&q, "UPDATE ");
			rp_buf_put_text(&q, t->qname);
			rp_buf_put_text(&q, " SET valid_to_lsn = $1, valid_to_time = $2 WHERE valid_to_lsn IS NULL");
			rp_buf_put_char(&q, '\0');
			rc = rp_params_exec(pg, t, q.data, &p, "closing a truncated history");
			rp_buf_free(&q);
			rp_buf_free(&ts);
			rp_params_free(&p);
		}
		else
		{
			if (nplain++)
				rp_buf_put_text(&sql, ", ");
			rp_buf_put_text(&sql, t->qname);
		}
	}
	if (rc == 0 && nplain > 0)
	{
		if (rec->u.truncate.flags & RP_TRUNCATE_RESTART_SEQS)
			rp_buf_put_text(&sql, " RESTART IDENTITY");
		rp_buf_put_char(&sql, '\0');
		rc = rp_mirror_exec(pg, sql.data, "TRUNCATE", NULL);
	}
	rp_buf_free(&sql);
	return rc;
}

/* ---- bulk apply ----------------------------------------------------------------- */

static int
rp_copy_send(RpMirror *pg, RpBuf *buf, const RpMirrorTable *t)
{
	if (buf->len && PQputCopyData(pg->conn, buf->data, (int) buf->len) != 1)
		return rp_mirror_fail_result(pg, NULL, "COPY", t);
	rp_buf_reset(buf);
	return 0;
}

static int
rp_copy_end(RpMirror *pg, RpBuf *buf, const RpMirrorTable *t)
{
	PGresult   *res;
	int			rc = rp_copy_send(pg, buf, t);

	if (PQputCopyEnd(pg->conn, NULL) != 1 && rc == 0)
		rc = rp_mirror_fail_result(pg, NULL, "COPY", t);
	while ((res = PQgetResult(pg->conn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
			rc = rp_mirror_fail_result(pg, res, "COPY", t);
		PQclear(res);
	}
	return rc;
}

/*
 * A large value whose text is its own bytes is escaped slice by slice and
 * sent as out fills, so neither the scratch text nor out grows to hold it.
 * 0 sent, 1 not such a value, -1 on error.
 */
static int
rp_copy_field_direct(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, uint8_t enc, const RpDatum *d)
{
	RpReader	r;
	const char *s;
	uint32_t	len;

	if (enc != RP_ENC_TEXT && enc != RP_ENC_STRING && enc != RP_ENC_ENUM && enc != RP_ENC_JSON &&
		enc != RP_ENC_JSONB)
		return 1;
	rp_reader_init(&r, d->data, d->len);
	s = rp_get_str(&r, &len);
	if (!r.ok || (len > 0 && s == NULL))
		return 1;
	for (uint32_t off = 0; off < len;)
	{
		uint32_t	n = len - off < RP_COPY_CHUNK ? len - off : RP_COPY_CHUNK;

		rp_pgtext_copy_escape(out, s + off, n);
		off += n;
		if (out->len >= RP_COPY_CHUNK && rp_copy_send(pg, out, t) < 0)
			return -1;
	}
	return 0;
}

static int
rp_copy_field(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, uint8_t enc, const RpDatum *d)
{
	int			direct;

	if (d->kind == RP_MIRROR_DATUM_TEXT)
	{
		rp_pgtext_copy_escape(out, (const char *) d->data, d->len);
		return 0;
	}
	if (d->kind != RP_DATUM_VALUE)
	{
		rp_buf_put_bytes(out, "\\N", 2);
		return 0;
	}
	if (d->len >= RP_COPY_DIRECT && (direct = rp_copy_field_direct(pg, out, t, enc, d)) <= 0)
		return direct;
	rp_buf_reset(&pg->scratch);
	rp_pgtext_value(&pg->scratch, enc, d->data, d->len);
	rp_pgtext_copy_escape(out, pg->scratch.data, pg->scratch.len);
	return 0;
}

/* Which effects a COPY takes. */
typedef enum RpCopyWhich
{
	RP_COPY_DELETES,			/* keys of deletes */
	RP_COPY_UPSERTS,			/* full rows of upserts that are not fresh */
	RP_COPY_FRESH,				/* full rows of fresh upserts */
	RP_COPY_ALL_UPSERTS			/* full rows of every upsert */
} RpCopyWhich;

static bool
rp_copy_wants(const RpEffect *ef, RpCopyWhich which)
{
	switch (which)
	{
		case RP_COPY_DELETES:
			return ef->op == RP_EFFECT_DELETE;
		case RP_COPY_UPSERTS:
			return ef->op == RP_EFFECT_UPSERT && !ef->partial && !ef->fresh;
		case RP_COPY_FRESH:
			return ef->op == RP_EFFECT_UPSERT && !ef->partial && ef->fresh;
		case RP_COPY_ALL_UPSERTS:
			return ef->op == RP_EFFECT_UPSERT && !ef->partial;
	}
	return false;
}

/*
 * A large value goes to the destination from the arena, in slices (COPY
 * data may be split anywhere), rather than through out and libpq's output
 * buffer, which would both grow to hold it: it is then held once, not
 * three times.  0 when sent, 1 when its encoding needs converting (the
 * caller copies it), -1 on error (reported).
 */
static int
rp_copy_direct(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, uint8_t enc, const RpDatum *d)
{
	const unsigned char *body;
	uint32_t	len;

	if (!rp_pgbin_value_split(out, enc, d->data, d->len, &body, &len))
		return 1;
	if (rp_copy_send(pg, out, t) < 0)
		return -1;
	for (uint32_t off = 0; off < len;)
	{
		uint32_t	n = len - off < RP_COPY_CHUNK ? len - off : RP_COPY_CHUNK;

		if (PQputCopyData(pg->conn, (const char *) body + off, (int) n) != 1)
			return rp_mirror_fail_result(pg, NULL, "COPY", t);
		off += n;
	}
	return 0;
}

/*
 * One effect as a binary COPY tuple: the key columns in column order, or
 * every applied column.  A value with no binary form cannot get here
 * (rp_mirror_table_resolve only sets t->binary when every column has one), so
 * one is a broken invariant, reported rather than sent.
 */
static int
rp_copy_row_binary(RpMirror *pg, RpBuf *out, const RpMirrorTable *t, const RpEffect *ef, bool keys_only,
				   int nfields)
{
	int			direct;

	rp_pgbin_tuple(out, nfields);
	for (uint16_t i = 0; i < t->rel->natts; i++)
	{
		const RpColumn *c = &t->rel->cols[i];
		RpDatum		d;
		int			k = -1;

		if (keys_only)
		{
			for (int j = 0; j < t->nkey && k < 0; j++)
				if (t->keycols[j] == i)
					k = j;
			if (k < 0)
				continue;
			rp_row_get(&t->arena, ef->key_off, k, &d);
		}
		else
		{
			if (c->flags & RP_COL_GENERATED)
				continue;
			rp_row_get(&t->arena, ef->row_off, i, &d);
		}
		if (d.kind != RP_DATUM_VALUE)
			rp_pgbin_null(out);
		else if (d.len >= RP_COPY_DIRECT && (direct = rp_copy_direct(pg, out, t, c->encoding, &d)) <= 0)
		{
			if (direct < 0)
				return -1;
		}
		else if (rp_pgbin_value(out, c->encoding, d.data, d.len) < 0)
			return rp_fail(RP_HALT_SINK, "column \"%s\" of table %s: a value has no binary form (encoding %u)",
						   c->name, t->qname, (unsigned) c->encoding);
	}
	return 0;
}

/* COPY the selected effects into a staging table (or the table itself). */
static int
rp_copy_effects(RpMirror *pg, RpMirrorTable *t, const char *stage, RpCopyWhich which)
{
	bool		keys_only = which == RP_COPY_DELETES;
	bool		binary = t->binary && !t->text_datums;
	int			nfields;
	RpBuf		cols,
				out;
	PGresult   *res;
	int			rc = 0;

	rp_buf_init(&cols, 256);
	nfields = rp_mirror_sql_cols(pg, &cols, t->rel, keys_only ? t->keycols : NULL, t->nkey, NULL);
	rp_buf_put_char(&cols, '\0');
	rc = rp_mirror_copy_start(pg->conn, stage, cols.data, binary, &res);
	rp_buf_free(&cols);
	if (rc < 0)
	{
		rc = rp_mirror_fail_result(pg, res, "COPY", t);
		PQclear(res);
		return rc;
	}

	rp_buf_init(&out, RP_COPY_CHUNK + 4096);
	if (binary)
		rp_pgbin_header(&out);
	for (int e = 0; e < t->neffects && rc == 0; e++)
	{
		const RpEffect *ef = &t->effects[e];
		bool		firstcol = true;

		if (!rp_copy_wants(ef, which))
			continue;
		if (binary)
			rc = rp_copy_row_binary(pg, &out, t, ef, keys_only, nfields);
		else if (keys_only)
		{
			/* key columns, in column order, from the key bytes */
			for (uint16_t i = 0; i < t->rel->natts; i++)
				for (int k = 0; k < t->nkey; k++)
					if (t->keycols[k] == i)
					{
						RpDatum		d;

						rp_row_get(&t->arena, ef->key_off, k, &d);
						if (!firstcol)
							rp_buf_put_char(&out, '\t');
						firstcol = false;
						if (rp_copy_field(pg, &out, t, t->rel->cols[i].encoding, &d) < 0)
							rc = -1;
					}
		}
		else
		{
			for (uint16_t i = 0; i < t->rel->natts; i++)
			{
				RpDatum		d;

				if (t->rel->cols[i].flags & RP_COL_GENERATED)
					continue;
				rp_row_get(&t->arena, ef->row_off, i, &d);
				if (!firstcol)
					rp_buf_put_char(&out, '\t');
				firstcol = false;
				if (rp_copy_field(pg, &out, t, t->rel->cols[i].encoding, &d) < 0)
					rc = -1;
			}
		}
		if (!binary)
			rp_buf_put_char(&out, '\n');
		if (out.len >= RP_COPY_CHUNK && rc == 0)
			rc = rp_copy_send(pg, &out, t);
	}
	if (binary)
		rp_pgbin_trailer(&out);
	if (rp_copy_end(pg, &out, t) < 0 && rc == 0)
		rc = -1;
	rp_buf_free(&out);
	return rc;
}

static int
rp_apply_deletes(RpMirror *pg, RpMirrorTable *t)
{
	RpBuf		sql;
	int			rc;

	if (rp_copy_effects(pg, t, t->stage_del, RP_COPY_DELETES) < 0)
		return -1;
	rp_buf_init(&sql, 512);
	rp_buf_put_text(&sql, "DELETE FROM ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_text(&sql, " d USING ");
	rp_buf_put_text(&sql, t->stage_del);
	rp_buf_put_text(&sql, " s WHERE ");
	rp_mirror_sql_key_match(pg, &sql, t->rel, t->keycols, t->nkey, "d", "s");
	rp_buf_put_text(&sql, "; TRUNCATE ");
	rp_buf_put_text(&sql, t->stage_del);
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec(pg, sql.data, "applying deletes", t);
	rp_buf_free(&sql);
	return rc;
}

/*
 * Fresh keys (first seen as an INSERT in this batch) are COPYed straight
 * into the table: no staging, no conflict handling.  If one exists after
 * all (a destination that already held rows), the savepoint undoes the COPY
 * and the caller sends every upsert through the staging path instead.
 * Returns 1 when the rows went in, 0 to fall back, -1 on error.
 */
static int
rp_apply_fresh(RpMirror *pg, RpMirrorTable *t)
{
	PGresult   *res;
	int			rc;

	if (rp_mirror_exec(pg, "SAVEPOINT rp_fresh", "SAVEPOINT", t) < 0)
		return -1;
	rc = rp_copy_effects(pg, t, t->qname, RP_COPY_FRESH);
	if (rc == 0)
		return rp_mirror_exec(pg, "RELEASE SAVEPOINT rp_fresh", "RELEASE SAVEPOINT", t) < 0 ? -1 : 1;
	if (rp_error_halt() != RP_HALT_SINK || strstr(rp_error(), "SQLSTATE 23505") == NULL)
		return -1;
	res = PQexec(pg->conn, "ROLLBACK TO SAVEPOINT rp_fresh");
	rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : rp_mirror_fail_result(pg, res, "ROLLBACK TO SAVEPOINT", t);
	PQclear(res);
	rp_error_clear();
	return rc;
}

static int
rp_apply_upserts(RpMirror *pg, RpMirrorTable *t, RpCopyWhich which)
{
	RpBuf		sql;
	int			rc;

	if (rp_copy_effects(pg, t, t->stage_ups, which) < 0)
		return -1;
	rp_buf_init(&sql, 1024);
	rp_buf_put_text(&sql, "INSERT INTO ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_text(&sql, " (");
	rp_mirror_sql_cols(pg, &sql, t->rel, NULL, 0, NULL);
	rp_buf_put_text(&sql, ") SELECT ");
	rp_mirror_sql_cols(pg, &sql, t->rel, NULL, 0, NULL);
	rp_buf_put_text(&sql, " FROM ");
	rp_buf_put_text(&sql, t->stage_ups);
	rp_mirror_sql_on_conflict(pg, &sql, t->rel, t->keycols, t->nkey);
	rp_buf_put_text(&sql, "; TRUNCATE ");
	rp_buf_put_text(&sql, t->stage_ups);
	rp_buf_put_char(&sql, '\0');
	rc = rp_mirror_exec(pg, sql.data, "applying upserts", t);
	rp_buf_free(&sql);
	return rc;
}

/* Rows with unchanged TOAST columns: UPDATE only the columns they carry. */
static int
rp_apply_partial(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, const char *extra_where)
{
	int			natts = t->rel->natts;
	RpDatum    *datums = rp_malloc0(sizeof(RpDatum) * (size_t) (natts + t->nkey + 1));
	uint8_t    *encs = rp_malloc0((size_t) (natts + t->nkey + 1));
	RpBuf		sql;
	int			n = 0,
				rc;
	char		tmp[32];

	rp_buf_init(&sql, 512);
	rp_buf_put_text(&sql, "UPDATE ");
	rp_buf_put_text(&sql, t->qname);
	rp_buf_put_text(&sql, " SET ");
	for (int i = 0; i < natts; i++)
	{
		RpDatum		d;
		bool		is_key = false;
		char	   *qc;

		for (int k = 0; k < t->nkey; k++)
			is_key |= t->keycols[k] == i;
		rp_row_get(&t->arena, ef->row_off, i, &d);
		if (is_key || d.kind == RP_DATUM_UNCHANGED || (t->rel->cols[i].flags & RP_COL_GENERATED))
			continue;
		datums[n] = d;
		encs[n] = t->rel->cols[i].encoding;
		qc = rp_mirror_ident(pg, t->rel->cols[i].name);
		snprintf(tmp, sizeof(tmp), " = $%d", n + 1);
		if (n)
			rp_buf_put_text(&sql, ", ");
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, tmp);
		rp_free(qc);
		n++;
	}
	if (n == 0)
	{
		rp_buf_free(&sql);
		rp_free(datums);
		rp_free(encs);
		return 0;
	}
	rp_buf_put_text(&sql, " WHERE ");
	for (int k = 0; k < t->nkey; k++)
	{
		char	   *qc = rp_mirror_ident(pg, t->rel->cols[t->keycols[k]].name);

		rp_row_get(&t->arena, ef->key_off, k, &datums[n]);
		encs[n] = t->rel->cols[t->keycols[k]].encoding;
		snprintf(tmp, sizeof(tmp), " = $%d", n + 1);
		if (k)
			rp_buf_put_text(&sql, " AND ");
		rp_buf_put_text(&sql, qc);
		rp_buf_put_text(&sql, tmp);
		rp_free(qc);
		n++;
	}
	if (extra_where)
		rp_buf_put_text(&sql, extra_where);
	rp_buf_put_char(&sql, '\0');
	rc = rp_exec_datums(pg, t, sql.data, n, datums, encs, "applying a partial update");
	rp_buf_free(&sql);
	rp_free(datums);
	rp_free(encs);
	return rc;
}

/* ---- history tables ------------------------------------------------------------------ */

/* " AND o.k = $n" for every key column (the first without AND). */
static void
rp_history_key_match(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, RpBuf *sql, RpParams *p)
{
	for (int k = 0; k < t->nkey; k++)
	{
		RpDatum		d;
		char		tmp[32];
		char	   *qc = rp_mirror_ident(pg, t->rel->cols[t->keycols[k]].name);
		int			no;

		rp_row_get(&t->arena, ef->key_off, k, &d);
		no = rp_params_datum(p, t->rel->cols[t->keycols[k]].encoding, &d);
		rp_buf_put_text(sql, k ? " AND o." : "o.");
		rp_buf_put_text(sql, qc);
		snprintf(tmp, sizeof(tmp), " = $%d", no);
		rp_buf_put_text(sql, tmp);
		rp_free(qc);
	}
}

/*
 * A barrier (TRUNCATE, a schema change) inside a source transaction applies
 * the versions it opened so far; a later change of the same key in that
 * transaction revises the version it opened (valid_from_lsn = its commit
 * LSN) instead of opening a second one, and a later delete removes it (the
 * version before it was closed when it was opened).  Returns the number of
 * versions revised: 0 means go on the usual way.
 */
static int
rp_history_revise(RpMirror *pg, RpMirrorTable *t, const RpEffect *ef, const char *lsn, const char *ts)
{
	RpBuf		sql;
	RpParams	p;
	char		tmp[64];
	int			n;

	rp_buf_init(&sql, 512);
	rp_params_init(&p);
	if (ef->op == RP_EFFECT_UPSERT)
	{
		rp_buf_put_text(&sql, "UPDATE ");
		rp_buf_put_text(&sql, t->qname);
		rp_buf_put_text(&sql, " o SET ");
		for (int i = 0; i < t->rel->natts; i++)
		{
			const RpColumn *c = &t->rel->cols[i];
			RpDatum		d;
			char	   *qc;

			rp_row_get(&t->arena, ef->row_off, i, &d);
			if ((c->flags & RP_COL_GENERATED) || d.kind == RP_DATUM_UNCHANGED)
				continue;
			qc = rp_mirror_ident(pg, c->name);
			rp_buf_put_text(&sql, qc);
			snprintf(tmp, sizeof(tmp), " = $%d::", rp_params_datum(&p, c->encoding, &d));
			rp_buf_put_text(&sql, tmp);
			rp_buf_put_text(&sql, c->type_name);
			rp_buf_put_text(&sql, ", ");
			rp_free(qc);
		}
		snprintf(tmp, sizeof(tmp), "valid_from_time = $%d::timestamptz WHERE ", rp_params_text(&p, ts));
		rp_buf_put_text(&sql, tmp);
	}
	else
	{
		rp_buf_put_text(&sql, "DELETE FROM ");
		rp_buf_put_text(&sql, t->qname);
		rp_buf_put_text(&sql, " o WHERE ");
	}
	rp_history_key_match(pg, t, ef, &sql, &p);
	snprintf(tmp, sizeof(tmp), " AND o.valid_from_lsn = $%d::pg_catalog.pg_lsn", rp_params_text(&p, lsn));
	rp_buf_put_text(&sql, tmp);
	rp_buf_put_char(&sql, '\0');
	n = rp_params_exec_count(pg, t, sql.data, &p, "revising a history version");
	rp_params_free(&p);
	rp_buf_free(&sql);
	/* a removed version still needs the usual close, which finds nothing open */
	return n < 0 ? -1 : ef->op == RP_EFFECT_UPSERT ? n : 0;
}

/*
 * One source transaction's net effect per key becomes a new version opened
 * at the commit LSN (unless the key was deleted), then the version open
 * before it closed at that LSN.  Unchanged TOAST columns are copied from
 * the version being closed.
 */
static int
rp_apply_history(RpMirror *pg, RpMirrorTable *t)
{
	char		lsn[24];
	RpBuf		tsb;
	int			rc = 0;

	rp_lsn_format(pg->cur_commit_lsn, lsn);
	rp_buf_init(&tsb, 64);
	rp_fmt_timestamp(&tsb, pg->cur_commit_time, true);
	rp_buf_put_char(&tsb, '\0');

	for (int e = 0; e < t->neffects && rc == 0; e++)
	{
		const RpEffect *ef = &t->effects[e];
		RpBuf		sql;
		RpParams	p;
		char		tmp[64];
		int			lno,
					tno;

		if (pg->history_barrier_lsn == pg->cur_commit_lsn)
		{
			int			revised = rp_history_revise(pg, t, ef, lsn, tsb.data);

			if (revised < 0)
			{
				rc = -1;
				break;
			}
			if (revised > 0)
				continue;
		}
		rp_buf_init(&sql, 1024);
		if (ef->op == RP_EFFECT_UPSERT)
		{
			rp_params_init(&p);
			rp_buf_put_text(&sql, "INSERT INTO ");
			rp_buf_put_text(&sql, t->qname);
			rp_buf_put_text(&sql, " (");
			rp_mirror_sql_cols(pg, &sql, t->rel, NULL, 0, NULL);
			rp_buf_put_text(&sql, ", valid_from_lsn, valid_from_time) SELECT ");
			for (int i = 0, out = 0; i < t->rel->natts; i++)
			{
				const RpColumn *c = &t->rel->cols[i];
				RpDatum		d;
				char	   *qc;

				if (c->flags & RP_COL_GENERATED)
					continue;
				rp_row_get(&t->arena, ef->row_off, i, &d);
				if (out++)
					rp_buf_put_text(&sql, ", ");
				if (d.kind == RP_DATUM_UNCHANGED)
				{
					qc = rp_mirror_ident(pg, c->name);
					rp_buf_put_text(&sql, "o.");
					rp_buf_put_text(&sql, qc);
					rp_free(qc);
				}
				else
				{
					/* the column's own type: SELECT lists do not infer it */
					snprintf(tmp, sizeof(tmp), "$%d::", rp_params_datum(&p, c->encoding, &d));
					rp_buf_put_text(&sql, tmp);
					rp_buf_put_text(&sql, c->type_name);
				}
			}
			lno = rp_params_text(&p, lsn);
			tno = rp_params_text(&p, tsb.data);
			snprintf(tmp, sizeof(tmp), ", $%d::pg_catalog.pg_lsn, $%d::timestamptz", lno, tno);
			rp_buf_put_text(&sql, tmp);
			if (ef->partial)
			{
				rp_buf_put_text(&sql, " FROM ");
				rp_buf_put_text(&sql, t->qname);
				rp_buf_put_text(&sql, " o WHERE ");
				rp_history_key_match(pg, t, ef, &sql, &p);
				rp_buf_put_text(&sql, " AND o.valid_to_lsn IS NULL");
			}
			rp_buf_put_char(&sql, '\0');
			rc = rp_params_exec(pg, t, sql.data, &p, "opening a history version");
			rp_params_free(&p);
			rp_buf_reset(&sql);
		}
		if (rc == 0)
		{
			rp_params_init(&p);
			lno = rp_params_text(&p, lsn);
			tno = rp_params_text(&p, tsb.data);
			rp_buf_put_text(&sql, "UPDATE ");
			rp_buf_put_text(&sql, t->qname);
			snprintf(tmp, sizeof(tmp), " o SET valid_to_lsn = $%d, valid_to_time = $%d WHERE ", lno, tno);
			rp_buf_put_text(&sql, tmp);
			rp_history_key_match(pg, t, ef, &sql, &p);
			snprintf(tmp, sizeof(tmp), " AND o.valid_to_lsn IS NULL AND o.valid_from_lsn <> $%d", lno);
			rp_buf_put_text(&sql, tmp);
			rp_buf_put_char(&sql, '\0');
			rc = rp_params_exec(pg, t, sql.data, &p, "closing a history version");
			rp_params_free(&p);
		}
		rp_buf_free(&sql);
	}
	rp_buf_free(&tsb);
	return rc;
}

static void
rp_effects_clear(RpMirrorTable *t)
{
	t->neffects = 0;
	t->text_datums = false;
	t->order = 0;
	rp_buf_reset(&t->arena);
	if (t->slots)
		memset(t->slots, 0, sizeof(int) * (size_t) t->nslots);
}

int
rp_mirror_apply_end_txn(RpMirror *pg)
{
	for (int i = 0; i < pg->ntables; i++)
	{
		RpMirrorTable *t = pg->tables[i];

		if (!t->history || t->neffects == 0)
			continue;
		if (rp_apply_history(pg, t) < 0)
			return -1;
		rp_effects_clear(t);
	}
	return 0;
}

int
rp_mirror_apply_flush(RpMirror *pg)
{
	bool		history = false;

	for (int i = 0; i < pg->ntables; i++)
		history |= pg->tables[i]->history && pg->tables[i]->neffects > 0;
	if (rp_mirror_apply_end_txn(pg) < 0)
		return -1;
	/* versions of a transaction not ended yet: a barrier inside it */
	if (history)
		pg->history_barrier_lsn = pg->cur_commit_lsn;
	/* tables in the order the batch first touched them */
	for (int ord = 1; ord <= pg->touched; ord++)
		for (int i = 0; i < pg->ntables; i++)
		{
			RpMirrorTable *t = pg->tables[i];
			bool		any_del = false,
						any_full = false,
						any_fresh = false;
			int			fresh = 0;

			if (t->order != ord || t->neffects == 0)
				continue;
			for (int e = 0; e < t->neffects; e++)
			{
				any_del |= rp_copy_wants(&t->effects[e], RP_COPY_DELETES);
				any_full |= rp_copy_wants(&t->effects[e], RP_COPY_UPSERTS);
				any_fresh |= rp_copy_wants(&t->effects[e], RP_COPY_FRESH);
			}
			if ((any_del || any_full || any_fresh) && rp_mirror_table_ensure_stage(pg, t) < 0)
				return -1;
			if (any_del && rp_apply_deletes(pg, t) < 0)
				return -1;
			if (any_fresh && (fresh = rp_apply_fresh(pg, t)) < 0)
				return -1;
			/* fresh rows that could not go in directly join the staged upserts */
			if ((any_full || (any_fresh && fresh == 0)) &&
				rp_apply_upserts(pg, t, fresh == 1 || !any_fresh ? RP_COPY_UPSERTS
								 : RP_COPY_ALL_UPSERTS) < 0)
				return -1;
			for (int e = 0; e < t->neffects; e++)
				if (t->effects[e].op == RP_EFFECT_UPSERT && t->effects[e].partial &&
					rp_apply_partial(pg, t, &t->effects[e], NULL) < 0)
					return -1;
			rp_effects_clear(t);
		}
	pg->touched = 0;
	return 0;
}
