/*
 * rp_dbverify.c
 *    replicant verify: the sessions, the checkpoint, the tables and the
 *    report (see rp_dbverify.h); a keyed table's chunk walk and re-reads are
 *    in rp_dbverify_keyed.c, a keyless table's in rp_dbverify_keyless.c, the
 *    statements' one path (errors, pacing, the LSN waits) in
 *    rp_dbverify_exec.c.
 *
 * A chunk is first read on the source (its hash and last key, LIMIT
 * --chunk-rows in key order), then pg_current_wal_insert_lsn() there (at
 * or past the end of every commit the read saw, even an asynchronous one
 * not yet written), then the same key range on the destination.  A chunk
 * that differs is read again on the destination once the mirror's
 * checkpoint (end_lsn of the slot) passed that LSN; equal to the first
 * source read: it was lag.  Still different, it is re-read in rounds: the
 * source (same bounds, now without a limit), its LSN L, a wait until the
 * checkpoint is at or past L, the destination, the source once more.
 * Equal to either source read: lag.  Different, with both source reads
 * the same: the mirror had applied everything up to L and still differs,
 * a real difference.  The source changed in between: another round, until
 * --recheck-timeout.  Every statement is autocommit: neither server holds a
 * snapshot open for longer than one statement.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "rp_lsn.h"
#include "base/rp_clock.h"
#include "base/rp_session.h"
#include "base/rp_sql.h"
#include "base/rp_pgerr.h"
#include "base/rp_status.h"
#include "migrate/rp_dbverify_int.h"
#include "snapshot/rp_snapcat.h"

/*
 * The source's system id as the mirror stores it (unsigned decimal), so
 * that a destination holding mirrors of several sources picks this one's
 * rows; "" when the role may not call pg_control_system() (then the slot
 * alone names the row).
 */
static void
dbv_system_id(RpDbvRun *r)
{
	PGresult   *res = PQexec(r->src,
							 "SELECT CASE WHEN system_identifier < 0"
							 " THEN (system_identifier::numeric + 18446744073709551616)::text"
							 " ELSE system_identifier::text END FROM pg_catalog.pg_control_system()");

	r->system_id[0] = '\0';
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		snprintf(r->system_id, sizeof(r->system_id), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

/* The slot's row (-S), or the one row there is; the RP_DBVERIFY_* status of a failure. */
static int
dbv_find_slot(RpDbvRun *r)
{
	RpBuf		sql;
	PGresult   *res;
	const char *params[2] = {r->o->slot ? r->o->slot : "", r->system_id};
	int			n;

	dbv_system_id(r);
	rp_buf_init(&sql, 256);
	rp_buf_put_text(&sql, "SELECT slot, end_lsn::text FROM ");
	rp_sql_ident(&sql, r->o->bookkeeping);
	rp_buf_put_text(&sql, ".checkpoint WHERE ($1 = '' OR slot = $1) AND ($2 = '' OR system_id = $2)");
	rp_buf_put_char(&sql, '\0');
	res = PQexecParams(r->dst, sql.data, 2, NULL, params, NULL, NULL, 0);
	rp_buf_free(&sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (state && strcmp(state, "42P01") == 0)
			fprintf(stderr, "%s: error: the destination has no checkpoint table %s.checkpoint:"
					" not a mirror, or another --bookkeeping-schema\n", RP_DBVERIFY_PROG, r->o->bookkeeping);
		else
			rp_dbverify_error(r, r->dst, res, "reading the checkpoint table", NULL);
		PQclear(res);
		return RP_DBVERIFY_FAILED;
	}
	n = PQntuples(res);
	if (n == 0)
	{
		if (r->o->slot)
			fprintf(stderr, "%s: error: the destination's checkpoint table has no row of slot \"%s\""
					" for this source\n", RP_DBVERIFY_PROG, r->o->slot);
		else
			fprintf(stderr, "%s: error: the destination's checkpoint table has no row for this source\n",
					RP_DBVERIFY_PROG);
		PQclear(res);
		return RP_DBVERIFY_FAILED;
	}
	if (n > 1)
	{
		/* only without -S, or when the source's system id could not be read */
		fprintf(stderr, "%s: error: the destination's checkpoint table has %d rows for this source:"
				" name the mirror's slot with -S\n"
				"Try \"%s --help\" for more information.\n", RP_DBVERIFY_PROG, n, RP_DBVERIFY_PROG);
		PQclear(res);
		return RP_DBVERIFY_USAGE;
	}
	r->slot = rp_strndup(PQgetvalue(res, 0, 0), strlen(PQgetvalue(res, 0, 0)));
	PQclear(res);
	return RP_DBVERIFY_EQUAL;
}

/* ---- one table's description on both sides ------------------------------------ */

/*
 * 1 when the destination has the table with every source column, 0 not
 * (reported), -1 error.  Also learns whether the destination's table is
 * partitioned (then read with its partitions) and whether its key columns
 * may hold NULL (then the rows with a NULL key are compared too).
 */
static int
dbv_table_present(RpDbvRun *r, RpDbvTableRun *t)
{
	const char *params[2] = {t->dst.schema, t->dst.name};
	PGresult   *res = rp_dbverify_exec(r, r->dst,
									   "SELECT a.attname, a.attnotnull, c.relkind FROM pg_catalog.pg_attribute a"
									   " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
									   " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
									   " WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')"
									   " AND a.attnum > 0 AND NOT a.attisdropped",
									   2, params, "reading the columns", t);
	int			n;

	if (res == NULL)
		return -1;
	n = PQntuples(res);
	if (n == 0)
	{
		printf("%s: different: missing on the destination (%s.%s)\n", t->qname,
			   t->dst.schema, t->dst.name);
		PQclear(res);
		return 0;
	}
	t->dst.partitioned = strcmp(PQgetvalue(res, 0, 2), "p") == 0;
	for (int k = 0; k < t->dst.nkey; k++)
		for (int i = 0; i < n; i++)
			if (strcmp(PQgetvalue(res, i, 0), t->dst.keys[k]) == 0 && strcmp(PQgetvalue(res, i, 1), "t") != 0)
				t->dst_key_nullable = true;
	for (int c = 0; c < t->src.ncols; c++)
	{
		bool		found = false;

		for (int i = 0; i < n && !found; i++)
			found = strcmp(PQgetvalue(res, i, 0), t->src.cols[c]) == 0;
		if (!found)
		{
			printf("%s: different: column \"%s\" missing on the destination\n", t->qname,
				   t->src.cols[c]);
			PQclear(res);
			return 0;
		}
	}
	PQclear(res);
	return 1;
}

static void
dbv_table_init(RpDbvRun *r, RpDbvTableRun *t, const RpSnapTable *st)
{
	const RpRelation *rel = st->rel;

	memset(t, 0, sizeof(*t));
	t->st = st;
	snprintf(t->qname, sizeof(t->qname), "%s.%s", rel->schema, rel->name);
	snprintf(t->dst_schema, sizeof(t->dst_schema), "%s%s",
			 r->o->schema_prefix ? r->o->schema_prefix : "", rel->schema);
	t->cols = rp_malloc(sizeof(char *) * (rel->natts + 1));
	for (int i = 0; i < rel->natts; i++)
		t->cols[i] = rel->cols[i].name;
	t->keys = rp_malloc(sizeof(char *) * (st->nkey + 1));
	t->keytypes = rp_malloc(sizeof(char *) * (st->nkey + 1));
	for (int i = 0; i < st->nkey; i++)
	{
		t->keys[i] = rel->cols[st->keycols[i]].name;
		t->keytypes[i] = rel->cols[st->keycols[i]].type_name;
	}
	t->src.schema = rel->schema;
	t->src.name = rel->name;
	t->src.ncols = rel->natts;
	t->src.cols = t->cols;
	t->src.nkey = st->nkey;
	t->src.keys = t->keys;
	t->src.keytypes = t->keytypes;
	t->src.partitioned = st->partitioned;	/* a root under partitions=root:
											 * read whole */
	t->dst = t->src;
	t->dst.schema = t->dst_schema;
}

static void
dbv_table_free(RpDbvTableRun *t)
{
	rp_free(t->cols);
	rp_free(t->keys);
	rp_free(t->keytypes);
}

/* ---- the run ----------------------------------------------------------------------- */

static PGconn *
dbv_connect(const char *conninfo, const char *who)
{
	RpSessionSpec spec;
	RpSessionError err;
	PGconn	   *conn;

	memset(&spec, 0, sizeof(spec));
	spec.conninfo = conninfo;
	spec.replication = "false";
	spec.fallback_application_name = "replicant verify";
	spec.settings = rp_dbverify_settings();
	conn = rp_session_open(&spec, &err);
	if (conn == NULL)
	{
		char		code[64],
					said[256];

		rp_pgerr_code(err.result ? PQresultErrorField(err.result, PG_DIAG_SQLSTATE) : NULL, code, sizeof(code));
		if (err.result)
			fprintf(stderr, "%s: error: setting up the session on the %s failed: %s%s\n",
					RP_DBVERIFY_PROG, who, code, rp_pgerr_said(err.result, said, sizeof(said)));
		else
			fprintf(stderr, "%s: error: could not connect to the %s: %s\n", RP_DBVERIFY_PROG, who, err.message);
		PQclear(err.result);
	}
	return conn;
}

/* A table's verdict line (equal ones left out with -q); counts it. */
static void
dbv_table_verdict(RpDbvRun *r, RpDbvTableRun *t, int *nequal, int *ndiff, int *nnot)
{
	RpBuf		line;
	RpDbvVerdict v = rp_dbverify_verdict(&t->tally);

	if (v == RP_DBV_DIFFERENT)
		(*ndiff)++;
	else if (v == RP_DBV_NOT_COMPARED)
		(*nnot)++;
	else
		(*nequal)++;
	if (v == RP_DBV_EQUAL && r->o->quiet)
		return;
	rp_buf_init(&line, 160);
	rp_dbverify_verdict_text(&line, &t->tally);
	rp_buf_put_char(&line, '\0');
	printf("%s: %s\n", t->qname, line.data);
	rp_buf_free(&line);
}

/*
 * Every selected table gets one verdict line: equal, different (a missing
 * table or column says so on its one line; differing ranges are listed
 * before it) or not compared, with the reason.  A failed statement or a
 * stop leaves the table and those after it not compared.
 */
static int
dbv_tables(RpDbvRun *r)
{
	RpSnapSelect sel = {r->o->include, r->o->exclude, r->o->via_root};
	int			n = 0;
	RpSnapTable *tables = rp_snapcat_tables(r->src, &sel, &n);
	int			ndiff = 0,
				nequal = 0,
				nnot = 0;
	bool		stopped = false;

	if (tables == NULL)
	{
		fprintf(stderr, "%s: error: listing the source's tables failed: %s\n", RP_DBVERIFY_PROG, rp_error());
		return RP_DBVERIFY_FAILED;
	}

	/*
	 * a pattern that selects nothing would make "every selected table equal"
	 * say nothing
	 */
	if (rp_snapcat_check_patterns(r->src, &sel) < 0)
	{
		fprintf(stderr, "%s: error: %s\n", RP_DBVERIFY_PROG, rp_error());
		rp_snapcat_free(tables, n);
		return RP_DBVERIFY_FAILED;
	}
	for (int i = 0; i < n; i++)
	{
		RpDbvTableRun t;
		int			present;
		int			rc = 0;

		dbv_table_init(r, &t, &tables[i]);
		if (r->broken || rp_stop_requested())
		{
			/* the run stopped before this table */
			printf("%s: not compared: %s\n", t.qname, r->broken ? "the run stopped on an error first"
				   : "the run was stopped first");
			nnot++;
			stopped = true;
			dbv_table_free(&t);
			continue;
		}
		present = dbv_table_present(r, &t);
		if (present < 0)
			rc = -1;
		else if (present == 0)
		{
			/* its one line is printed */
			ndiff++;
			dbv_table_free(&t);
			continue;
		}
		else if (t.src.nkey > 0)
			rc = rp_dbverify_keyed(r, &t);
		else
			rc = rp_dbverify_keyless(r, &t);
		if (rc < 0 && t.tally.differing == 0)
		{
			printf("%s: not compared: a statement failed (the error is on stderr)\n", t.qname);
			nnot++;
		}
		else if (rp_stop_requested() && t.tally.differing == 0)
		{
			printf("%s: not compared: the run was stopped\n", t.qname);
			nnot++;
		}
		else
			dbv_table_verdict(r, &t, &nequal, &ndiff, &nnot);
		fflush(stdout);
		dbv_table_free(&t);
	}
	rp_snapcat_free(tables, n);
	if (rp_stop_requested())
		fprintf(stderr, "%s: stopped before every table was compared\n", RP_DBVERIFY_PROG);
	printf("%d tables: %d equal, %d different, %d not compared\n", n, nequal, ndiff, nnot);
	return rp_dbverify_status(ndiff, nnot, r->broken || stopped || rp_stop_requested());
}

int
rp_dbverify_run(const RpDbVerifyOptions *o)
{
	RpDbvRun	r;
	int			rc;
	uint64_t	src_lsn = 0,
				ck_lsn = 0;
	char		a[RP_LSN_BUFLEN],
				b[RP_LSN_BUFLEN];

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.rate_t0_us = rp_clock_mono_us();
	rp_buf_init(&r.sql, 2048);
	rp_buf_init(&r.ckpt_sql, 256);
	rc = RP_DBVERIFY_FAILED;
	r.src = dbv_connect(o->source, "source");
	if (r.src == NULL)
		goto done;
	r.dst = dbv_connect(o->sink, "destination");
	if (r.dst == NULL)
		goto done;
	rc = dbv_find_slot(&r);
	if (rc != RP_DBVERIFY_EQUAL)
		goto done;
	rp_buf_put_text(&r.ckpt_sql, "SELECT end_lsn::text FROM ");
	rp_sql_ident(&r.ckpt_sql, o->bookkeeping);
	rp_buf_put_text(&r.ckpt_sql, ".checkpoint WHERE slot = $1 AND ($2 = '' OR system_id = $2)");
	rp_buf_put_char(&r.ckpt_sql, '\0');
	if (rp_dbverify_source_lsn(&r, &src_lsn) < 0 || rp_dbverify_checkpoint(&r, &ck_lsn) < 0)
	{
		rc = RP_DBVERIFY_FAILED;
		goto done;
	}
	/* positions, not values: where the two stood when the comparison began */
	fprintf(stderr, "%s: source WAL at %s, mirror checkpoint of slot \"%s\" at %s\n", RP_DBVERIFY_PROG,
			rp_lsn_format(src_lsn, a), r.slot, rp_lsn_format(ck_lsn, b));
	if (o->keys_file)
	{
		r.keys = fopen(o->keys_file, "w");
		if (r.keys == NULL)
		{
			fprintf(stderr, "%s: error: could not open the keys file \"%s\": %s\n", RP_DBVERIFY_PROG,
					o->keys_file, strerror(errno));
			rc = RP_DBVERIFY_FAILED;
			goto done;
		}
	}
	rc = dbv_tables(&r);
	if (o->verbose)
		fprintf(stderr, "%s: statements took %" PRId64 " ms, rests %" PRId64 " ms (--duty %d)\n",
				RP_DBVERIFY_PROG, r.busy_total_us / 1000, r.rested_us / 1000, o->duty ? o->duty : 100);
	if (r.keys && (fflush(r.keys) != 0 || ferror(r.keys)))
	{
		fprintf(stderr, "%s: error: could not write the keys file \"%s\"\n", RP_DBVERIFY_PROG, o->keys_file);
		/* a difference found still wins */
		if (rc != RP_DBVERIFY_DIFFERENT)
			rc = RP_DBVERIFY_FAILED;
	}
done:
	if (r.keys)
		fclose(r.keys);
	if (r.src)
		PQfinish(r.src);
	if (r.dst)
		PQfinish(r.dst);
	if (r.slot)
		rp_free(r.slot);
	rp_buf_free(&r.sql);
	rp_buf_free(&r.ckpt_sql);
	return rc;
}
