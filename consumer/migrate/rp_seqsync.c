/*
 * rp_seqsync.c
 *    The destination's sequences brought up to the source's (see
 *    rp_seqsync.h for the rules).  The catalog is read once on the source
 *    (the sequences and the tables that own or use them), then one
 *    sequence at a time: its source position, the destination's, and a
 *    setval only when the destination is behind.
 *
 * Sequence positions are the keys the application hands out, so they are
 * values too (G4): no line here prints one, only names and SQLSTATEs.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rp_session.h"
#include "base/rp_sql.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"
#include "migrate/rp_seqsync.h"

#define RP_SEQ_MAX_IDENT 63		/* NAMEDATALEN - 1 of a default server */

/* One source sequence and what the run found for it. */
typedef struct RpSeq
{
	char	   *oid;
	char	   *schema;
	char	   *name;
	char	   *type;			/* smallint, integer or bigint */
	char	   *start;			/* the definition, as the server printed it */
	char	   *inc;
	char	   *min;
	char	   *max;
	char	   *cache;
	bool		cycle;
	int			nlinks;			/* tables that own or use it */
	bool		linked_selected;	/* one of them is selected */
} RpSeq;

static const char *const rp_seq_list_sql =
"SELECT c.oid, n.nspname, c.relname, pg_catalog.format_type(s.seqtypid, NULL),"
" s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle"
" FROM pg_catalog.pg_sequence s"
" JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid"
" JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
" WHERE n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'"
" AND c.relpersistence <> 't'"
" ORDER BY n.nspname, c.relname";

/*
 * The tables a sequence belongs to: owned (serial: 'a'; identity: 'i') or
 * used by a column default (the default depends on the sequence).
 */
static const char *const rp_seq_links_sql =
"SELECT d.objid, tn.nspname, t.relname FROM pg_catalog.pg_depend d"
" JOIN pg_catalog.pg_class t ON t.oid = d.refobjid"
" JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace"
" WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
" AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
" AND d.deptype IN ('a', 'i') AND t.relkind IN ('r', 'p')"
" UNION "
"SELECT d.refobjid, tn.nspname, t.relname FROM pg_catalog.pg_depend d"
" JOIN pg_catalog.pg_attrdef ad ON ad.oid = d.objid"
" JOIN pg_catalog.pg_class t ON t.oid = ad.adrelid"
" JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace"
" WHERE d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass"
" AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
" AND t.relkind IN ('r', 'p')";

/* ---- the pure part ------------------------------------------------------- */

static __int128
rp_seq_next128(RpSeqPos pos, int64_t inc)
{
	return pos.is_called ? (__int128) pos.last_value + inc : (__int128) pos.last_value;
}

int64_t
rp_seqsync_next(RpSeqPos pos, int64_t inc)
{
	__int128	n = rp_seq_next128(pos, inc);

	if (n > INT64_MAX)
		return INT64_MAX;
	if (n < INT64_MIN)
		return INT64_MIN;
	return (int64_t) n;
}

RpSeqAction
rp_seqsync_decide(RpSeqPos src, RpSeqPos dst, int64_t inc, int64_t min, int64_t max,
				  int64_t margin, int64_t *next)
{
	bool		up = inc > 0;
	__int128	want = rp_seq_next128(src, inc) + (up ? (__int128) margin : -(__int128) margin);
	__int128	have = rp_seq_next128(dst, inc);

	if (up ? have >= want : have <= want)
		return RP_SEQ_KEEP;
	if (want < min || want > max)
		return RP_SEQ_RANGE;
	*next = (int64_t) want;
	return RP_SEQ_SET;
}

/* ---- sessions and statements ---------------------------------------------- */

typedef struct RpSeqRun
{
	const RpSeqSyncOptions *opts;
	PGconn	   *src;
	PGconn	   *dst;
	RpSeqSyncStats *stats;
} RpSeqRun;

static const char *
rp_seq_prog(const RpSeqRun *r)
{
	return r->opts->progname ? r->opts->progname : "replicant";
}

/* A failed statement by what it was for and its SQLSTATE (G4: not its text); res kept. */
static int
rp_seq_fail_word(PGconn *conn, PGresult *res, const char *side, const char *what,
				 const RpSeq *q)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	rp_pgerr_said(res, said, sizeof(said));
	if (PQstatus(conn) == CONNECTION_BAD)
		rp_fail(RP_HALT_NONE, "the connection to the %s was lost (%s%s%s%s)",
				side, what, q ? " of sequence \"" : "", q ? q->schema : "", q ? "\"" : "");
	else if (q)
		rp_fail(RP_HALT_NONE, "%s of sequence \"%s\".\"%s\" failed on the %s (%s)%s",
				what, q->schema, q->name, side, code, said);
	else
		rp_fail(RP_HALT_NONE, "%s failed on the %s (%s)%s", what, side, code, said);
	return -1;
}

/* rp_seq_fail_word, then res cleared. */
static int
rp_seq_fail_res(PGconn *conn, PGresult *res, const char *side, const char *what,
				const RpSeq *q)
{
	rp_seq_fail_word(conn, res, side, what, q);
	PQclear(res);
	return -1;
}

/* What a statement was for, for rp_seq_fail_sql. */
typedef struct RpSeqStmt
{
	const char *side;
	const char *what;
	const RpSeq *q;
} RpSeqStmt;

static int
rp_seq_fail_sql(void *arg, PGconn *conn, PGresult *res)
{
	const RpSeqStmt *s = arg;

	return rp_seq_fail_word(conn, res, s->side, s->what, s->q);
}

static PGresult *
rp_seq_query(PGconn *conn, const char *sql, int n, const char *const *vals, const char *side,
			 const char *what, const RpSeq *q)
{
	RpSeqStmt	s = {side, what, q};

	return rp_sql_run(conn, sql, n, vals, rp_seq_fail_sql, &s);
}

static PGconn *
rp_seq_open(const char *conninfo, const char *side)
{
	RpSessionSpec spec;

	memset(&spec, 0, sizeof(spec));
	spec.conninfo = conninfo;
	spec.replication = "false";
	spec.fallback_application_name = "replicant sync-sequences";
	return rp_session_open_side(&spec, side);
}

/* "schema"."name", quoted (rp_free); never NULL. */
static char *
rp_seq_qname(const char *schema, const char *name)
{
	RpBuf		b;
	char	   *out;

	rp_buf_init(&b, strlen(schema) + strlen(name) + 8);
	rp_sql_ident(&b, schema);
	rp_buf_put_char(&b, '.');
	rp_sql_ident(&b, name);
	out = rp_strndup(b.data, b.len);
	rp_buf_free(&b);
	return out;
}

static bool
rp_seq_int64(const char *s, int64_t *v)
{
	char	   *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno == 0 && end != s && *end == '\0';
}

/* Its position: last_value and is_called, read from the sequence itself. */
static int
rp_seq_position(PGconn *conn, const char *qname, const char *side, const RpSeq *q, RpSeqPos *pos)
{
	char		sql[600];
	PGresult   *res;

	snprintf(sql, sizeof(sql), "SELECT last_value, is_called FROM %s", qname);
	res = rp_seq_query(conn, sql, 0, NULL, side, "reading the position", q);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || !rp_seq_int64(PQgetvalue(res, 0, 0), &pos->last_value))
	{
		PQclear(res);
		return rp_fail(RP_HALT_NONE, "sequence \"%s\".\"%s\" on the %s has no readable position",
					   q->schema, q->name, side);
	}
	pos->is_called = PQgetvalue(res, 0, 1)[0] == 't';
	PQclear(res);
	return 0;
}

/* ---- the catalog ---------------------------------------------------------- */

static char *
rp_seq_dup(PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);

	return rp_strndup(v, strlen(v));
}

static void
rp_seq_free_all(RpSeq *seqs, int n)
{
	for (int i = 0; i < n; i++)
	{
		rp_free(seqs[i].oid);
		rp_free(seqs[i].schema);
		rp_free(seqs[i].name);
		rp_free(seqs[i].type);
		rp_free(seqs[i].start);
		rp_free(seqs[i].inc);
		rp_free(seqs[i].min);
		rp_free(seqs[i].max);
		rp_free(seqs[i].cache);
	}
	if (seqs)
		rp_free(seqs);
}

/* The source's sequences, with their links resolved against the selection. */
static RpSeq *
rp_seq_catalog(RpSeqRun *r, int *n)
{
	PGresult   *res = rp_seq_query(r->src, rp_seq_list_sql, 0, NULL, "source", "listing the sequences", NULL);
	PGresult   *links;
	RpSeq	   *seqs;

	*n = 0;
	if (res == NULL)
		return NULL;
	*n = PQntuples(res);
	seqs = rp_malloc(sizeof(RpSeq) * (*n > 0 ? *n : 1));
	memset(seqs, 0, sizeof(RpSeq) * (*n > 0 ? *n : 1));
	for (int i = 0; i < *n; i++)
	{
		seqs[i].oid = rp_seq_dup(res, i, 0);
		seqs[i].schema = rp_seq_dup(res, i, 1);
		seqs[i].name = rp_seq_dup(res, i, 2);
		seqs[i].type = rp_seq_dup(res, i, 3);
		seqs[i].start = rp_seq_dup(res, i, 4);
		seqs[i].inc = rp_seq_dup(res, i, 5);
		seqs[i].min = rp_seq_dup(res, i, 6);
		seqs[i].max = rp_seq_dup(res, i, 7);
		seqs[i].cache = rp_seq_dup(res, i, 8);
		seqs[i].cycle = PQgetvalue(res, i, 9)[0] == 't';
	}
	PQclear(res);
	links = rp_seq_query(r->src, rp_seq_links_sql, 0, NULL, "source", "listing the sequences' tables", NULL);
	if (links == NULL)
	{
		rp_seq_free_all(seqs, *n);
		*n = 0;
		return NULL;
	}
	for (int l = 0; l < PQntuples(links); l++)
		for (int i = 0; i < *n; i++)
			if (strcmp(seqs[i].oid, PQgetvalue(links, l, 0)) == 0)
			{
				seqs[i].nlinks++;
				if (rp_snapcat_selected(&r->opts->select, PQgetvalue(links, l, 1),
										PQgetvalue(links, l, 2)))
					seqs[i].linked_selected = true;
			}
	PQclear(links);
	return seqs;
}

bool
rp_seqsync_selected(const RpSnapSelect *sel, int nlinks, bool linked_selected,
					const char *schema, const char *name)
{
	if (nlinks > 0)
		return linked_selected;
	/* a standalone sequence: only without an include list, by its own name */
	if (sel->include && *sel->include)
		return false;
	return rp_snapcat_selected(sel, schema, name);
}

static bool
rp_seq_selected(const RpSeqRun *r, const RpSeq *q)
{
	return rp_seqsync_selected(&r->opts->select, q->nlinks, q->linked_selected, q->schema, q->name);
}

/* ---- one sequence --------------------------------------------------------- */

/* The destination's sequence: its oid (NULL: none) and its own increment and bounds. */
typedef struct RpSeqDest
{
	char		oid[16];
	int64_t		inc;
	int64_t		min;
	int64_t		max;
} RpSeqDest;

static int
rp_seq_dest_find(RpSeqRun *r, const RpSeq *q, const char *schema, RpSeqDest *d)
{
	static const char *const sql =
	"SELECT c.oid, c.relkind, s.seqincrement, s.seqmin, s.seqmax FROM pg_catalog.pg_class c"
	" JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
	" LEFT JOIN pg_catalog.pg_sequence s ON s.seqrelid = c.oid"
	" WHERE n.nspname = $1 AND c.relname = $2";
	const char *vals[2] = {schema, q->name};
	PGresult   *res = rp_seq_query(r->dst, sql, 2, vals, "destination", "looking up", q);
	int			rc = 0;

	d->oid[0] = '\0';
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 1 && PQgetvalue(res, 0, 1)[0] != 'S')
		rc = rp_fail(RP_HALT_NONE, "\"%s\".\"%s\" on the destination is not a sequence (the mirror of source sequence \"%s\".\"%s\")",
					 schema, q->name, q->schema, q->name);
	else if (PQntuples(res) == 1)
	{
		snprintf(d->oid, sizeof(d->oid), "%s", PQgetvalue(res, 0, 0));
		if (!rp_seq_int64(PQgetvalue(res, 0, 2), &d->inc) ||
			!rp_seq_int64(PQgetvalue(res, 0, 3), &d->min) ||
			!rp_seq_int64(PQgetvalue(res, 0, 4), &d->max) || d->inc == 0)
			rc = rp_fail(RP_HALT_NONE, "sequence \"%s\".\"%s\" on the destination has no readable definition",
						 schema, q->name);
	}
	PQclear(res);
	return rc;
}

/*
 * The source's definition, on the destination (numbers and a type name
 * the server printed, checked here: no text of ours goes into the DDL
 * unchecked).
 */
static int
rp_seq_create(RpSeqRun *r, const RpSeq *q, const char *schema, const char *qname)
{
	char	   *qs = rp_sql_ident_dup(schema);
	char		sql[1024];
	int64_t		v;
	PGresult   *res;
	const char *nums[5] = {q->start, q->inc, q->min, q->max, q->cache};

	for (int i = 0; i < 5; i++)
		if (!rp_seq_int64(nums[i], &v))
		{
			rp_free(qs);
			return rp_fail(RP_HALT_NONE, "sequence \"%s\".\"%s\" on the source has an unreadable definition",
						   q->schema, q->name);
		}
	if (strcmp(q->type, "smallint") != 0 && strcmp(q->type, "integer") != 0 &&
		strcmp(q->type, "bigint") != 0)
	{
		rp_free(qs);
		return rp_fail(RP_HALT_NONE, "sequence \"%s\".\"%s\" on the source has an unknown type",
					   q->schema, q->name);
	}
	snprintf(sql, sizeof(sql),
			 "CREATE SCHEMA IF NOT EXISTS %s; CREATE SEQUENCE IF NOT EXISTS %s AS %s INCREMENT BY %s"
			 " MINVALUE %s MAXVALUE %s START WITH %s CACHE %s %s",
			 qs, qname, q->type, q->inc, q->min, q->max, q->start, q->cache,
			 q->cycle ? "CYCLE" : "NO CYCLE");
	rp_free(qs);
	res = PQexec(r->dst, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		return rp_seq_fail_res(r->dst, res, "destination", "creating", q);
	PQclear(res);
	return 0;
}

static int
rp_seq_setval(RpSeqRun *r, const RpSeq *q, const RpSeqDest *d, int64_t next)
{
	char		val[24];
	const char *vals[2] = {d->oid, val};
	PGresult   *res;

	snprintf(val, sizeof(val), "%" PRId64, next);
	res = rp_seq_query(r->dst,
					   "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2::pg_catalog.int8, false)",
					   2, vals, "destination", "setval", q);
	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

static void
rp_seq_say(const RpSeqRun *r, const RpSeq *q, const char *what)
{
	if (r->opts->verbose)
		fprintf(stderr, "%s: sequence \"%s\".\"%s\": %s\n", rp_seq_prog(r), q->schema, q->name, what);
}

/* 0 synced, 1 not synced (warned), -1 an error. */
static int
rp_seq_one(RpSeqRun *r, const RpSeq *q)
{
	const char *bk = r->opts->bookkeeping_schema ? r->opts->bookkeeping_schema : "replicant";
	char		schema[256];
	char	   *qname;
	char	   *src_qname = NULL;
	RpSeqDest	d;
	RpSeqPos	src,
				dst;
	int64_t		next = 0;
	int			rc = -1;

	snprintf(schema, sizeof(schema), "%s%s", r->opts->schema_prefix ? r->opts->schema_prefix : "",
			 q->schema);
	if (strlen(schema) > RP_SEQ_MAX_IDENT)
		return rp_fail(RP_HALT_NONE, "source sequence \"%s\".\"%s\" maps to schema \"%s\", longer than %d bytes (shorten --schema-prefix)",
					   q->schema, q->name, schema, RP_SEQ_MAX_IDENT);
	if (strcmp(schema, bk) == 0)
		return rp_fail(RP_HALT_NONE, "source sequence \"%s\".\"%s\" maps into the mirror's bookkeeping schema \"%s\" (exclude it, or choose another --schema-prefix or --bookkeeping-schema)",
					   q->schema, q->name, bk);
	if ((qname = rp_seq_qname(schema, q->name)) == NULL)
		return -1;
	if (rp_seq_dest_find(r, q, schema, &d) < 0)
		goto out;
	if (d.oid[0] == '\0')
	{
		if (!r->opts->create)
		{
			fprintf(stderr, "%s: warning: sequence \"%s\".\"%s\" is missing on the destination: not synced (--create-tables creates it)\n",
					rp_seq_prog(r), schema, q->name);
			r->stats->missing++;
			rc = 1;
			goto out;
		}
		if (rp_seq_create(r, q, schema, qname) < 0 || rp_seq_dest_find(r, q, schema, &d) < 0)
			goto out;
		if (d.oid[0] == '\0')
		{
			rp_fail(RP_HALT_NONE, "sequence \"%s\".\"%s\" is still missing on the destination after CREATE",
					schema, q->name);
			goto out;
		}
		r->stats->created++;
		rp_seq_say(r, q, "created");
	}
	/* the source by its own name, the destination by the mapped one */
	if ((src_qname = rp_seq_qname(q->schema, q->name)) == NULL ||
		rp_seq_position(r->src, src_qname, "source", q, &src) < 0 ||
		rp_seq_position(r->dst, qname, "destination", q, &dst) < 0)
		goto out;
	switch (rp_seqsync_decide(src, dst, d.inc, d.min, d.max, r->opts->margin, &next))
	{
		case RP_SEQ_KEEP:
			r->stats->kept++;
			rp_seq_say(r, q, "already at or past the source");
			rc = 0;
			break;
		case RP_SEQ_SET:
			if (rp_seq_setval(r, q, &d, next) < 0)
				goto out;
			r->stats->advanced++;
			rp_seq_say(r, q, "advanced");
			rc = 0;
			break;
		case RP_SEQ_RANGE:
			fprintf(stderr, "%s: warning: sequence \"%s\".\"%s\": the source's position plus the margin is outside the destination sequence's bounds: not synced\n",
					rp_seq_prog(r), schema, q->name);
			rc = 1;
			break;
	}
out:
	if (src_qname)
		rp_free(src_qname);
	rp_free(qname);
	return rc;
}

/* ---- the run -------------------------------------------------------------- */

int
rp_seqsync_conns(PGconn *src, PGconn *dst, const RpSeqSyncOptions *opts, RpSeqSyncStats *stats)
{
	RpSeqRun	r = {opts, src, dst, stats};
	RpSeq	   *seqs;
	int			n;
	int			rc = 0;

	memset(stats, 0, sizeof(*stats));
	seqs = rp_seq_catalog(&r, &n);
	if (seqs == NULL)
		return -1;
	for (int i = 0; i < n && rc >= 0; i++)
	{
		int			one;

		if (!rp_seq_selected(&r, &seqs[i]))
			continue;
		stats->selected++;
		one = rp_seq_one(&r, &seqs[i]);
		if (one < 0)
			rc = -1;
		else if (one > 0)
			rc = 1;
	}
	rp_seq_free_all(seqs, n);
	return rc;
}

int
rp_seqsync_run(const RpSeqSyncOptions *opts, RpSeqSyncStats *stats)
{
	PGconn	   *src = rp_seq_open(opts->src_conninfo, "source");
	PGconn	   *dst;
	int			rc;

	memset(stats, 0, sizeof(*stats));
	if (src == NULL)
		return -1;
	dst = rp_seq_open(opts->dst_conninfo, "destination");
	if (dst == NULL)
	{
		PQfinish(src);
		return -1;
	}
	rc = rp_seqsync_conns(src, dst, opts, stats);
	PQfinish(dst);
	PQfinish(src);
	return rc;
}
