/*
 * rp_snapcat.c
 *    Selected tables and their descriptions from the catalogs (see
 *    rp_snapcat.h).  Runs on the snapshot's coordinating session, whose
 *    search_path is empty, so format_type() qualifies every type outside
 *    pg_catalog, as the plugin's type names are.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_buf.h"
#include "rp_glob.h"
#include "rp_partset.h"
#include "snapshot/rp_snapcat.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"
#include "rp_typeenc.h"
#include "rp_wire.h"

/* pg_type facts the encoding pick needs */
typedef struct RpTypeRow
{
	uint32_t	oid;
	char		typtype;
	uint32_t	basetype;
	uint32_t	elem;			/* element of a true array type, else 0 */
	uint32_t	rngsub;			/* range subtype, else 0 */
	uint32_t	relid;			/* a composite type's pg_class row, else 0 */
	bool		has_send;
} RpTypeRow;

typedef struct RpTypeMap
{
	RpTypeRow  *rows;			/* sorted by oid */
	int			n;
} RpTypeMap;

static const RpTypeRow *
rp_type_find(const RpTypeMap *m, uint32_t oid)
{
	int			lo = 0,
				hi = m->n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (m->rows[mid].oid == oid)
			return &m->rows[mid];
		if (m->rows[mid].oid < oid)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

static uint32_t
rp_type_base(const RpTypeMap *m, uint32_t oid)
{
	const RpTypeRow *t;

	/*
	 * domains over domains: follow to the bottom (bounded: the catalog has no
	 * cycles)
	 */
	for (int depth = 0;
		 depth < 64 && (t = rp_type_find(m, oid)) != NULL && t->typtype == RP_TYPTYPE_DOMAIN;
		 depth++)
		oid = t->basetype;
	return oid;
}

/* The shared rule (rp_typeenc.h), on the catalog rows: what the plugin would send. */
static uint8_t
rp_type_encoding(const RpTypeMap *m, uint32_t typid, uint32_t *elem)
{
	uint32_t	base = rp_type_base(m, typid);
	const RpTypeRow *t;
	int			enc = rp_typeenc_builtin(base);

	*elem = 0;
	if (enc >= 0)
		return (uint8_t) enc;
	t = rp_type_find(m, base);
	if (t == NULL)
		return RP_ENC_TEXT;
	enc = rp_typeenc_by_typtype(t->typtype);
	if (enc == RP_ENC_RANGE)
		*elem = t->rngsub;
	if (enc >= 0)
		return (uint8_t) enc;
	if (t->elem)
	{
		*elem = t->elem;
		return RP_ENC_ARRAY;
	}
	return RP_ENC_TEXT;
}

static int
rp_fail_res(PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	rp_fail(RP_HALT_NONE, "snapshot: %s failed (%s)%s", what, code, rp_pgerr_said(res, said, sizeof(said)));
	rp_error_set_sqlstate(state);
	return -1;
}

static int
rp_type_map_load(PGconn *conn, RpTypeMap *m)
{
	PGresult   *res;
	const char *sql = PQserverVersion(conn) >= 140000
	? "SELECT t.oid, t.typtype, t.typbasetype,"
	"  CASE WHEN t.typsubscript = 'pg_catalog.array_subscript_handler'::pg_catalog.regproc"
	"  THEN t.typelem ELSE 0 END, COALESCE(r.rngsubtype, 0), t.typsend <> 0, t.typrelid"
	" FROM pg_catalog.pg_type t LEFT JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid ORDER BY 1"
	: "SELECT t.oid, t.typtype, t.typbasetype,"
	"  CASE WHEN t.typelem <> 0 AND t.typlen = -1 THEN t.typelem ELSE 0 END,"
	"  COALESCE(r.rngsubtype, 0), t.typsend <> 0, t.typrelid"
	" FROM pg_catalog.pg_type t LEFT JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid ORDER BY 1";

	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rp_fail_res(res, "reading pg_type");
		PQclear(res);
		return -1;
	}
	m->n = PQntuples(res);
	m->rows = rp_malloc0(sizeof(RpTypeRow) * (size_t) (m->n + 1));
	for (int i = 0; i < m->n; i++)
	{
		RpTypeRow  *t = &m->rows[i];

		t->oid = (uint32_t) strtoul(PQgetvalue(res, i, 0), NULL, 10);
		t->typtype = PQgetvalue(res, i, 1)[0];
		t->basetype = (uint32_t) strtoul(PQgetvalue(res, i, 2), NULL, 10);
		t->elem = (uint32_t) strtoul(PQgetvalue(res, i, 3), NULL, 10);
		t->rngsub = (uint32_t) strtoul(PQgetvalue(res, i, 4), NULL, 10);
		t->has_send = PQgetvalue(res, i, 5)[0] == 't';
		t->relid = (uint32_t) strtoul(PQgetvalue(res, i, 6), NULL, 10);
	}
	PQclear(res);
	return 0;
}

/* ---- selection (plugin/rp_options.c's patterns) -------------------------- */

/* One identifier of a pattern: "Quoted" kept, unquoted folded to lower case. */
static const char *
rp_pat_ident(const char *p, char *out, size_t outlen)
{
	size_t		n = 0;

	while (*p == ' ')
		p++;
	if (*p == '"')
	{
		for (p++; *p; p++)
		{
			if (*p == '"' && p[1] == '"')
				p++;
			else if (*p == '"')
			{
				p++;
				break;
			}
			if (n + 1 < outlen)
				out[n++] = *p;
		}
	}
	else
		for (; *p && *p != '.' && *p != ',' && *p != ' '; p++)
			if (n + 1 < outlen)
				out[n++] = (*p >= 'A' && *p <= 'Z') ? (char) (*p + 32) : *p;
	out[n] = '\0';
	while (*p == ' ')
		p++;
	return p;
}

static bool
rp_patterns_match(const char *list, const char *schema, const char *table)
{
	const char *p = list;

	while (p && *p)
	{
		char		a[256],
					b[256];
		bool		two = false;

		p = rp_pat_ident(p, a, sizeof(a));
		if (*p == '.')
		{
			p = rp_pat_ident(p + 1, b, sizeof(b));
			two = true;
		}
		if (two ? (rp_glob_match(a, schema) && rp_glob_match(b, table)) : rp_glob_match(a, table))
			return true;
		while (*p && *p != ',')
			p++;
		if (*p == ',')
			p++;
	}
	return false;
}

/*
 * 1 with pat set to the first pattern of list that matches no row of res
 * (schema, name), else 0.  A pattern that does not parse (a.b.c) is passed
 * over: the plugin refuses it with its own message, which says more.
 */
static int
rp_patterns_unmatched(const char *list, const PGresult *res, char *pat, size_t len)
{
	const char *p = list;

	while (p && *p)
	{
		const char *start = p;
		char		a[256],
					b[256];
		bool		hit = false;

		p = rp_pat_ident(p, a, sizeof(a));
		if (*p == '.')
			p = rp_pat_ident(p + 1, b, sizeof(b));
		snprintf(pat, len, "%.*s", (int) (p - start), start);
		if (*p != ',' && *p != '\0')
		{
			while (*p && *p != ',')
				p++;
			if (*p == ',')
				p++;
			continue;
		}
		for (int i = 0; i < PQntuples(res) && !hit; i++)
			hit = rp_patterns_match(pat, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
		if (!hit && *a)
			return 1;
		if (*p == ',')
			p++;
	}
	return 0;
}

int
rp_snapcat_check_patterns(PGconn *conn, const RpSnapSelect *sel)
{
	const char *lists[2] = {sel->include, sel->exclude};
	const char *names[2] = {"include_tables", "exclude_tables"};
	PGresult   *res,
			   *parts;
	RpBuf		q;
	char		pat[512],
				one[512];
	int			rc = 0;

	if (!(sel->include && *sel->include) && !(sel->exclude && *sel->exclude))
		return 0;
	rp_buf_init(&q, 512);
	rp_buf_put_text(&q, "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c"
					" JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE ");
	rp_buf_put_text(&q, RP_SNAPCAT_TABLES_WHERE(sel->via_root));
	rp_buf_put_char(&q, '\0');
	res = PQexec(conn, q.data);
	rp_buf_free(&q);

	/*
	 * tables the stream does not name: partitioned or partitions (by the
	 * mode), unlogged
	 */
	parts = PQexec(conn, "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c"
				   " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
				   " WHERE c.relkind IN ('r', 'p')");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQresultStatus(parts) != PGRES_TUPLES_OK)
	{
		rp_fail_res(PQresultStatus(res) != PGRES_TUPLES_OK ? res : parts, "listing tables for include_tables/exclude_tables");
		PQclear(res);
		PQclear(parts);
		return -1;
	}
	for (int l = 0; l < 2 && rc == 0; l++)
	{
		/*
		 * an exclusion only needs to name some table; an inclusion one whose
		 * changes are sent
		 */
		if (!lists[l] || !*lists[l] || !rp_patterns_unmatched(lists[l], l == 0 ? res : parts, pat, sizeof(pat)))
			continue;
		if (l == 0 && !rp_patterns_unmatched(pat, parts, one, sizeof(one)))
			rc = rp_fail(RP_HALT_CONFIG, "%s pattern \"%s\" matches no table whose changes are sent: it names %s",
						 names[l], pat, sel->via_root
						 ? "a partition, whose changes come under its root's name with partitions=root, or an unlogged or temporary table (its changes are not in the WAL)"
						 : "a partitioned table, whose changes come under its partitions' names with partitions=leaf (name the partitions, or use -o partitions=root), or an unlogged or temporary table (its changes are not in the WAL)");
		else
			rc = rp_fail(RP_HALT_CONFIG, "%s pattern \"%s\" matches no table of the source", names[l], pat);
	}
	PQclear(res);
	PQclear(parts);
	return rc;
}

bool
rp_snapcat_selected(const RpSnapSelect *sel, const char *schema, const char *table)
{
	if (sel->include && *sel->include && !rp_patterns_match(sel->include, schema, table))
		return false;
	return !(sel->exclude && rp_patterns_match(sel->exclude, schema, table));
}

/* ---- tables --------------------------------------------------------------- */

/* A composite's fields, and theirs (the catalog has no cycles: depth bounded anyway). */
static void
rp_recv_free(const RpRecvType *r)
{
	RpRecvComposite *c = (RpRecvComposite *) r->comp;

	if (c == NULL)
		return;
	for (int i = 0; i < c->nfields; i++)
	{
		rp_free((char *) c->fields[i].name);
		rp_recv_free(&c->fields[i].type);
	}
	rp_free(c->fields);
	rp_free(c);
}

void
rp_snapcat_free(RpSnapTable *tables, int n)
{
	if (tables == NULL)
		return;
	for (int i = 0; i < n; i++)
	{
		if (tables[i].recv)
			for (int c = 0; tables[i].rel && c < tables[i].rel->natts; c++)
				rp_recv_free(&tables[i].recv[c]);
		rp_relation_free(tables[i].rel);
		if (tables[i].recv)
			rp_free(tables[i].recv);
		if (tables[i].keycols)
			rp_free(tables[i].keycols);
	}
	rp_free(tables);
}

static char *
rp_dup(const char *s)
{
	return rp_strndup(s, strlen(s));
}

#define RP_COMPOSITE_MAX_DEPTH 16

static void rp_recv_describe(PGconn *conn, const RpTypeMap *m, uint32_t typid, RpRecvType *r,
							 int depth);

/*
 * A composite type's live fields, each described like a column (its own
 * encoding, and fields of its own).  NULL when the catalog read fails or
 * the nesting is deeper than any real type: the column is then refused as
 * not convertible, naming it.
 */
static RpRecvComposite *
rp_recv_fields(PGconn *conn, const RpTypeMap *m, uint32_t typid, int depth)
{
	const RpTypeRow *row = rp_type_find(m, rp_type_base(m, typid));
	char		relid[16];
	const char *vals[1] = {relid};
	PGresult   *res;
	RpRecvComposite *c;

	if (row == NULL || row->relid == 0 || depth > RP_COMPOSITE_MAX_DEPTH)
		return NULL;
	snprintf(relid, sizeof(relid), "%u", row->relid);
	res = PQexecParams(conn,
					   "SELECT a.attname, a.atttypid FROM pg_catalog.pg_attribute a"
					   " WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped"
					   " ORDER BY a.attnum",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		PQclear(res);
		return NULL;
	}
	c = rp_malloc0(sizeof(RpRecvComposite));
	c->nfields = PQntuples(res);
	c->fields = rp_malloc0(sizeof(RpRecvField) * (size_t) (c->nfields + 1));
	for (int i = 0; i < c->nfields; i++)
	{
		RpRecvField *f = &c->fields[i];

		f->name = rp_strndup(PQgetvalue(res, i, 0), strlen(PQgetvalue(res, i, 0)));
		f->type_oid = (uint32_t) strtoul(PQgetvalue(res, i, 1), NULL, 10);
		rp_recv_describe(conn, m, f->type_oid, &f->type, depth + 1);
	}
	PQclear(res);
	return c;
}

/* What the plugin would send for a value of typid, as rp_copybin reads it. */
static void
rp_recv_describe(PGconn *conn, const RpTypeMap *m, uint32_t typid, RpRecvType *r, int depth)
{
	uint32_t	elem;

	r->encoding = rp_type_encoding(m, typid, &elem);
	r->elem_oid = elem;
	if (elem)
	{
		uint32_t	e2;

		r->elem_encoding = rp_type_encoding(m, elem, &e2);
	}
	if (r->encoding == RP_ENC_COMPOSITE)
		r->comp = rp_recv_fields(conn, m, typid, depth);
}

/* Classify one column for the copy paths; false sets why. */
static void
rp_snapcat_column(PGconn *conn, const RpTypeMap *m, RpSnapTable *t, int i)
{
	RpColumn   *c = &t->rel->cols[i];
	RpRecvType *r = &t->recv[i];
	uint32_t	elem;
	const RpTypeRow *row;

	rp_recv_describe(conn, m, c->type_oid, r, 0);
	c->encoding = r->encoding;
	elem = r->elem_oid;
	if (!rp_copybin_supported(r) && t->convertible)
	{
		t->convertible = false;
		snprintf(t->why, sizeof(t->why), "column \"%s\" of type %s (%s) has no snapshot conversion%s",
				 c->name, c->type_name, rp_encoding_name(c->encoding),
				 c->encoding == RP_ENC_COMPOSITE
				 ? " (a field sent as text, or an array of composites, inside it)" : "");
	}

	/*
	 * Binary rows name no type except inside arrays (the element OID) and
	 * composites (each field's): those load elsewhere only for built-in
	 * types.  A type without a send function has no binary form at all.
	 */
	row = rp_type_find(m, rp_type_base(m, c->type_oid));
	if (t->portable &&
		(c->encoding == RP_ENC_COMPOSITE ||
		 (c->encoding == RP_ENC_ARRAY && elem >= RP_OID_FIRST_NORMAL) ||
		 (row != NULL && !row->has_send)))
	{
		t->portable = false;
		/* a column that does not convert at all is the reason to report */
		if (t->convertible)
			snprintf(t->why, sizeof(t->why), "column \"%s\" of type %s has no portable binary form",
					 c->name, c->type_name);
	}
}

/*
 * A partition root's kind and partition_set as the plugin sends them under
 * partitions=root (common/rp_partset.h): the stream's first description of
 * the root is then the one the snapshot copied under, not an ATTACH.
 */
static int
rp_snapcat_partset(PGconn *conn, RpRelation *rel)
{
	char		oid[16];
	const char *vals[1] = {oid};
	PGresult   *res;
	uint32_t	set = RP_PARTSET_INIT;

	snprintf(oid, sizeof(oid), "%u", rel->relid);
	res = PQexecParams(conn, "SELECT relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree($1::pg_catalog.oid::pg_catalog.regclass)"
					   " WHERE isleaf ORDER BY relid::pg_catalog.oid", 1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		char		what[300];

		snprintf(what, sizeof(what), "reading the partitions of table \"%s\".\"%s\"", rel->schema, rel->name);
		rp_fail_res(res, what);
		PQclear(res);
		return -1;
	}
	for (int i = 0; i < PQntuples(res); i++)
		set = rp_partset_add(set, (uint32_t) strtoul(PQgetvalue(res, i, 0), NULL, 10));
	PQclear(res);
	rel->kind = RP_REL_KIND_PARTITION_ROOT;
	rel->partition_set = set;
	return 0;
}

/*
 * The candidate tables the selection takes, without their columns: a
 * table array (ntables used, one spare), or NULL after rp_fail.
 */
static RpSnapTable *
rp_snapcat_list(PGconn *conn, const RpSnapSelect *sel, int *n)
{
	PGresult   *res;
	RpSnapTable *tables;
	int			ntables = 0;
	int			ncand;
	RpBuf		q;

	/*
	 * Not "relkind = 'r' AND NOT relispartition": that left every partition
	 * out, and a partitioned table's rows with them (found in the field:
	 * 148,256 of 156,330 rows of one not copied, and not verified).
	 */
	rp_buf_init(&q, 512);
	rp_buf_put_text(&q, "SELECT c.oid, n.nspname, c.relname, c.relreplident, c.reltuples::bigint, c.relkind = 'p'"
					" FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE ");
	rp_buf_put_text(&q, RP_SNAPCAT_TABLES_WHERE(sel->via_root));
	rp_buf_put_text(&q, " AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'"
					" ORDER BY n.nspname, c.relname");
	rp_buf_put_char(&q, '\0');
	res = PQexec(conn, q.data);
	rp_buf_free(&q);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		rp_fail_res(res, "listing tables");
		PQclear(res);
		return NULL;
	}
	ncand = PQntuples(res);
	tables = rp_malloc0(sizeof(RpSnapTable) * (size_t) (ncand + 1));
	for (int i = 0; i < ncand; i++)
	{
		RpSnapTable *t;

		if (!rp_snapcat_selected(sel, PQgetvalue(res, i, 1), PQgetvalue(res, i, 2)))
			continue;
		t = &tables[ntables++];
		t->rel = rp_malloc0(sizeof(RpRelation));
		t->rel->relid = (uint32_t) strtoul(PQgetvalue(res, i, 0), NULL, 10);
		t->rel->schema = rp_dup(PQgetvalue(res, i, 1));
		t->rel->name = rp_dup(PQgetvalue(res, i, 2));
		t->rel->identity = PQgetvalue(res, i, 3)[0];
		t->estimate = strtoll(PQgetvalue(res, i, 4), NULL, 10);
		if (t->estimate < 0)
			t->estimate = -1;
		t->partitioned = PQgetvalue(res, i, 5)[0] == 't';
		t->portable = t->convertible = true;
	}
	PQclear(res);
	*n = ntables;
	return tables;
}

/*
 * Table t's columns, from the catalog, with what each is to the copy (key
 * position, replica identity, the type's encoding): 0, or -1 after rp_fail.
 */
static int
rp_snapcat_columns(PGconn *conn, const RpTypeMap *types, RpSnapTable *t)
{
	PGresult   *res;
	char		oid[16];
	const char *vals[1] = {oid};
	int			ncols;

	snprintf(oid, sizeof(oid), "%u", t->rel->relid);

	/*
	 * Per column: the key position (primary key), and membership in the
	 * replica identity as the plugin's relcache computes it: the primary key
	 * under DEFAULT, the chosen index under INDEX, every column under FULL,
	 * none under NOTHING.
	 */
	res = PQexecParams(conn,
					   "SELECT a.attnum, a.attname, a.atttypid, pg_catalog.format_type(a.atttypid, a.atttypmod),"
					   " a.atttypmod, a.attnotnull, a.attgenerated <> '',"
					   " COALESCE((SELECT k.n FROM pg_catalog.pg_index i,"
					   "   pg_catalog.unnest(i.indkey::int2[]) WITH ORDINALITY k(att, n)"
					   "   WHERE i.indrelid = a.attrelid AND i.indisprimary AND k.att = a.attnum"
					   "   AND k.n <= i.indnkeyatts), 0),"
					   " CASE c.relreplident WHEN 'f' THEN true"
					   "  WHEN 'd' THEN EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = a.attrelid"
					   "   AND i.indisprimary AND a.attnum = ANY (i.indkey::int2[]))"
					   "  WHEN 'i' THEN EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = a.attrelid"
					   "   AND i.indisreplident AND a.attnum = ANY (i.indkey::int2[]))"
					   "  ELSE false END"
					   " FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
					   " WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped"
					   " AND a.attgenerated <> 'v' ORDER BY a.attnum",
					   1, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		char		what[300];

		snprintf(what, sizeof(what), "reading the columns of table \"%s\".\"%s\"", t->rel->schema, t->rel->name);
		rp_fail_res(res, what);
		PQclear(res);
		return -1;
	}
	ncols = PQntuples(res);
	t->rel->natts = (uint16_t) ncols;
	t->rel->cols = rp_malloc0(sizeof(RpColumn) * (size_t) (ncols + 1));
	t->recv = rp_malloc0(sizeof(RpRecvType) * (size_t) (ncols + 1));
	t->keycols = rp_malloc0(sizeof(int) * (size_t) (ncols + 1));
	for (int i = 0; i < ncols; i++)
	{
		RpColumn   *c = &t->rel->cols[i];
		int			pkpos = atoi(PQgetvalue(res, i, 7));

		c->attnum = (int16_t) atoi(PQgetvalue(res, i, 0));
		c->name = rp_dup(PQgetvalue(res, i, 1));
		c->type_oid = (uint32_t) strtoul(PQgetvalue(res, i, 2), NULL, 10);
		c->type_name = rp_dup(PQgetvalue(res, i, 3));
		c->typmod = (int32_t) atoi(PQgetvalue(res, i, 4));
		if (PQgetvalue(res, i, 5)[0] == 't')
			c->flags |= RP_COL_NOT_NULL;
		if (PQgetvalue(res, i, 6)[0] == 't')
			c->flags |= RP_COL_GENERATED;
		if (pkpos > 0)
		{
			c->flags |= RP_COL_PRIMARY_KEY;
			if (pkpos <= ncols)
				t->keycols[pkpos - 1] = i;
			t->nkey++;
		}
		if (PQgetvalue(res, i, 8)[0] == 't')
			c->flags |= RP_COL_IDENTITY;
		rp_snapcat_column(conn, types, t, i);
	}
	PQclear(res);
	return 0;
}

/*
 * The tables the snapshot copies, in two jobs: the list the selection
 * takes, then each one's columns (and a partitioned root's partitions).
 */
RpSnapTable *
rp_snapcat_tables(PGconn *conn, const RpSnapSelect *sel, int *n)
{
	RpTypeMap	types = {0};
	RpSnapTable *tables;
	int			ntables = 0;

	*n = 0;
	if (rp_type_map_load(conn, &types) < 0)
		return NULL;
	if ((tables = rp_snapcat_list(conn, sel, &ntables)) == NULL)
	{
		rp_free(types.rows);
		return NULL;
	}
	for (int ti = 0; ti < ntables; ti++)
	{
		RpSnapTable *t = &tables[ti];

		if (rp_snapcat_columns(conn, &types, t) < 0 ||
			(t->partitioned && rp_snapcat_partset(conn, t->rel) < 0))
		{
			rp_free(types.rows);
			rp_snapcat_free(tables, ntables);
			return NULL;
		}
	}
	rp_free(types.rows);
	*n = ntables;
	return tables;
}
