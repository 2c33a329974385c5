/*
 * rp_snapshot.c
 *    The initial snapshot's orchestration (see rp_snapshot.h): the slot and
 *    its exported snapshot, resume detection, the catalog, the workers
 *    (rp_snapwork.c) and the progress line, then the sink's completion.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/rp_clock.h"
#include "base/rp_counter.h"
#include "base/rp_pgerr.h"
#include "stream/rp_conn.h"
#include "snapshot/rp_snapwork.h"

static void
rp_snap_progress(RpSnapRun *run, int64_t started_us, bool final)
{
	uint64_t	done = 0,
				total = 0;
	int			tables_done = 0;
	double		secs = (rp_clock_wall_us() - started_us) / 1e6;
	double		rate;
	const RpSnapJob *cur = NULL;

	for (int i = 0; i < run->njobs; i++)
	{
		const RpSnapJob *j = &run->jobs[i];
		uint64_t	d = atomic_load(&j->done_rows);
		uint64_t	est = j->t->estimate > 0 ? (uint64_t) j->t->estimate : 0;
		int			st = atomic_load(&j->state);

		done += d;
		total += st == 2 ? d : (est > d ? est : d);
		if (st == 2)
			tables_done++;
		else if (st == 1 && cur == NULL)
			cur = j;
	}
	rate = secs > 0 ? done / secs : 0;
	fprintf(stderr, "\r%s: snapshot %d/%d tables, %" PRIu64 " of ~%" PRIu64 " rows, %.0f rows/s",
			run->opts->progname, tables_done, run->njobs, done, total, rate);
	if (!final && rate > 0 && total > done)
		fprintf(stderr, ", %.0f s left", (total - done) / rate);
	if (cur)
		fprintf(stderr, " (%s.%s)", cur->t->rel->schema, cur->t->rel->name);
	fprintf(stderr, "   %s", final ? "\n" : "");
}

void
rp_snap_say(const RpSnapOptions *o, const char *fmt,...)
{
	char		line[1024];
	int			n = snprintf(line, sizeof(line), "%s: ", o->progname);
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t) n, fmt, ap);
	va_end(ap);
	if (o->log_fn)
		o->log_fn(line);		/* the program's log: its progress lines
								 * erased first */
	else
		fprintf(stderr, "%s\n", line);
}

/* The figures for the caller's progress callback. */
static void
rp_snap_report(RpSnapRun *run, bool final)
{
	RpSnapTableProgress *t = rp_malloc0(sizeof(RpSnapTableProgress) * (size_t) (run->njobs + 1));

	for (int i = 0; i < run->njobs; i++)
	{
		const RpSnapJob *j = &run->jobs[i];

		t[i].rel = j->t->rel;
		t[i].done = atomic_load(&j->done_rows);
		t[i].estimate = j->t->estimate;
		t[i].state = atomic_load(&j->state);
	}
	run->opts->progress_fn(run->opts->progress_arg, t, run->njobs, final);
	rp_free(t);
}

/* CREATE_REPLICATION_SLOT ... with an exported snapshot: lsn and name. */
static int
rp_snap_create_slot(RpConn *rc, const RpSnapOptions *o, uint64_t *lsn, char *snapname, size_t len)
{
	char		cmd[512];
	PGresult   *res;
	int			r = 0;

	/* refused before anything is created: the copy would need a new slot */
	if (o->failover && rp_conn_need_failover(rc, "--failover") < 0)
		return -1;
	if (!rp_conn_create_command(cmd, sizeof(cmd), o->slot, "replicant", "export", o->failover,
								PQserverVersion(rc->pg)))
		return rp_fail(RP_HALT_NONE, "snapshot: CREATE_REPLICATION_SLOT: the slot name is too long");
	res = PQexec(rc->pg, cmd);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) < 3)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		bool		exists = state && strcmp(state, "42710") == 0;
		bool		no_plugin = state && strcmp(state, "58P01") == 0;
		char		code[64],
					said[256];

		rp_pgerr_code(state, code, sizeof(code));
		r = rp_fail(exists || no_plugin ? RP_HALT_CONFIG : RP_HALT_NONE,
					"snapshot: CREATE_REPLICATION_SLOT \"%s\" failed (%s)%s%s", o->slot, code,
					rp_pgerr_said(res, said, sizeof(said)),
					exists ? ": the slot exists, and a consistent snapshot needs a new slot (drop it, or start without --snapshot)"
					: no_plugin ? "; install the replicant output plugin on the source server (make install in plugin/, or the package), then start again" : "");
		rp_error_set_sqlstate(state);
	}
	else if (!rp_lsn_parse(PQgetvalue(res, 0, 1), lsn))
		r = rp_fail(RP_HALT_NONE, "snapshot: CREATE_REPLICATION_SLOT returned no consistent point");
	else
		snprintf(snapname, len, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	return r;
}

/*
 * The xmin and xmax of the snapshot coord's transaction holds, as full
 * xids.  A heap-order token keeps the xmin of the snapshot its rows were
 * copied under: row versions created at or after it are copied again by
 * a resumed run (rp_snapwork.c), since they may have moved.
 */
static int
rp_snap_horizon(PGconn *coord, RpSnapRun *run)
{
	PGresult   *res = PQexec(coord, "SELECT pg_catalog.pg_snapshot_xmin(s)::pg_catalog.text,"
							 " pg_catalog.pg_snapshot_xmax(s)::pg_catalog.text"
							 " FROM pg_catalog.pg_current_snapshot() s");
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = rp_snap_fail_res(res, "reading the snapshot's xid horizon", NULL);
	else
	{
		run->xmin = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
		run->xmax = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
	}
	PQclear(res);
	return rc;
}

/* Largest first, so the longest copy starts first. */
static int
rp_snap_job_cmp(const void *a, const void *b)
{
	const RpSnapJob *x = a,
			   *y = b;

	/*
	 * Tables without a key first: a stopped copy can resume every other table
	 * under a new snapshot, but not these (rp_snap_check_keyless).
	 */
	if ((x->t->nkey == 0) != (y->t->nkey == 0))
		return x->t->nkey == 0 ? -1 : 1;
	if (x->t->estimate != y->t->estimate)
		return x->t->estimate < y->t->estimate ? 1 : -1;
	return x->t->rel->relid < y->t->rel->relid ? -1 : x->t->rel->relid > y->t->rel->relid;
}

void
rp_snap_stats_free(RpSnapStats *st)
{
	for (int i = 0; i < st->nstores; i++)
		rp_free(st->stores[i]);
	if (st->stores)
		rp_free(st->stores);
	if (st->complete)
		rp_free(st->complete);
	if (st->store_oversize)
		rp_free(st->store_oversize);
	st->stores = NULL;
	st->complete = NULL;
	st->store_oversize = NULL;
	st->nstores = 0;
}

/*
 * Stored progress means a resumed copy: *resume, and *resume_lsn the
 * consistent point of the copy that stopped.  0, or -1 after rp_fail().
 */
static int
rp_snap_find_resume(PGconn *coord, const RpSnapOptions *o, RpSink *sink, bool *resume,
					uint64_t *resume_lsn)
{
	RpSnapTable *tables = NULL;
	int			ntables = 0;
	int			rc = -1;

	*resume = false;
	if (sink->snapshot_progress == NULL)
		return 0;
	if (rp_snap_exec(coord, "BEGIN ISOLATION LEVEL REPEATABLE READ", "BEGIN", NULL) < 0)
		goto out;
	tables = rp_snapcat_tables(coord, &o->select, &ntables);
	if (tables == NULL || rp_snap_exec(coord, "COMMIT", "COMMIT", NULL) < 0)
		goto out;
	for (int i = 0; i < ntables && !*resume; i++)
	{
		char	   *token = NULL;
		int			r = sink->snapshot_progress(sink, tables[i].rel, &token);
		RpSnapToken tok;

		if (r < 0)
			goto out;
		if (r > 0)
		{
			if (!rp_snaptoken_parse(token, &tok))
			{
				rp_free(token);
				rp_fail(RP_HALT_SINK, "snapshot: the stored progress of table \"%s\".\"%s\" is damaged",
						tables[i].rel->schema, tables[i].rel->name);
				goto out;
			}
			*resume = true;
			*resume_lsn = tok.lsn;
			rp_snaptoken_free(&tok);
			rp_free(token);
		}
	}
	rc = 0;

out:
	rp_snapcat_free(tables, ntables);
	return rc;
}

/* how to start over instead (the log sinks' progress: sinks/log/rp_snapresume.h) */
#define RP_SNAP_OVER_HINT \
	" (to start the snapshot over: drop the slot and the sink's progress; for the stdout, file and exec sinks STATE-DIR/SLOT.snapshot)"

/*
 * The snapshot to copy under: a new one exported by coord for a resumed
 * copy (the slot must still hold everything since its consistent point),
 * else the slot's, created with it.  0, or -1 after rp_fail().
 */
static int
rp_snap_begin(RpSnapRun *run, RpConn *repl, PGconn *coord, bool resume, uint64_t resume_lsn)
{
	const RpSnapOptions *o = run->opts;

	if (resume)
	{
		RpSlotInfo	info;
		PGresult   *res;
		char		a[24],
					b[24];

		/* the slot must still hold everything since the consistent point */
		if (rp_conn_slot_info(repl, o->slot, &info) < 0)
			return -1;
		rp_lsn_format(resume_lsn, a);
		if (!info.exists || info.lost)
		{
			rp_fail(RP_HALT_GAP, "snapshot: cannot resume: replication slot \"%s\" is %s%s", o->slot,
					info.exists ? "invalidated" : "gone", RP_SNAP_OVER_HINT);
			return -1;
		}
		if (info.confirmed_flush > resume_lsn)
		{
			rp_lsn_format(info.confirmed_flush, b);
			rp_fail(RP_HALT_GAP, "snapshot: cannot resume: replication slot \"%s\" is at %s, past the snapshot's consistent point %s%s",
					o->slot, b, a, RP_SNAP_OVER_HINT);
			return -1;
		}
		run->lsn = resume_lsn;

		/*
		 * a new snapshot for the rest; the stream from the old point
		 * reconciles
		 */
		if (rp_snap_exec(coord, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", "BEGIN", NULL) < 0)
			return -1;
		res = PQexec(coord, "SELECT pg_catalog.pg_export_snapshot()");
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		{
			rp_snap_fail_res(res, "exporting a snapshot", NULL);
			PQclear(res);
			return -1;
		}
		snprintf(run->snapname, sizeof(run->snapname), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		if (o->verbose)
			rp_snap_say(o, "resuming the snapshot of consistent point %s", a);
	}
	else
	{
		char		a[24];

		if (!o->create_slot)
		{
			rp_fail(RP_HALT_CONFIG, "snapshot: a new snapshot creates its slot: add --create-slot");
			return -1;
		}

		/*
		 * The snapshot's time (history tables open their versions at it) is
		 * the source's, read before the slot exists: no commit after the
		 * consistent point is older.
		 */
		{
			PGresult   *res = PQexec(coord, "SELECT (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint");

			if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
				run->begun_ms = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
			PQclear(res);
		}
		if (rp_snap_create_slot(repl, o, &run->lsn, run->snapname, sizeof(run->snapname)) < 0)
			return -1;
		rp_lsn_format(run->lsn, a);
		if (o->verbose)
			rp_snap_say(o, "created slot \"%s\" with a snapshot at consistent point %s", o->slot, a);
		if (rp_snap_import(coord, run->snapname) < 0)
			return -1;
	}
	return 0;
}

/*
 * A job per table still to copy (a table a resumed copy finished is not),
 * largest first.  0, or -1 after rp_fail().
 */
static int
rp_snap_plan(RpSnapRun *run, RpUuid7Gen *ids, RpSnapTable *tables, int ntables)
{
	int64_t		at_ms;

	run->jobs = rp_malloc0(sizeof(RpSnapJob) * (size_t) (ntables + 1));
	at_ms = run->begun_ms > 0 ? run->begun_ms : rp_clock_wall_ms();
	for (int i = 0; i < ntables; i++)
	{
		RpSnapJob  *job = &run->jobs[run->njobs];
		char	   *token = NULL;
		RpUuid		u;

		job->t = &tables[i];
		job->at_ms = at_ms;
		if (run->sink->snapshot_progress)
		{
			int			r = run->sink->snapshot_progress(run->sink, tables[i].rel, &token);

			if (r < 0)
				return -1;
			if (r > 0)
			{
				bool		ok = rp_snaptoken_parse(token, &job->tok);

				rp_free(token);
				if (!ok)
				{
					rp_fail(RP_HALT_SINK, "snapshot: the stored progress of table \"%s\".\"%s\" is damaged",
							tables[i].rel->schema, tables[i].rel->name);
					return -1;
				}
				job->have_tok = true;
				if (job->tok.done)
				{
					rp_snaptoken_free(&job->tok);
					continue;	/* copied before the stop */
				}
				if (job->tok.snapshot_id[0] == '\0' && job->tok.rows == 0 &&
					job->tok.nkeys == 0 && !job->tok.heap)
				{
					/*
					 * A token with no dump (a log sink's, rp_snapresume.h):
					 * only the consistent point is kept, the table is copied
					 * again whole as a new dump.
					 */
					rp_snaptoken_free(&job->tok);
					memset(&job->tok, 0, sizeof(job->tok));
					job->have_tok = false;
				}
				else
				{
					job->at_ms = job->tok.at_ms;
					snprintf(job->snapshot_id, sizeof(job->snapshot_id), "%s", job->tok.snapshot_id);
				}
			}
		}
		if (job->snapshot_id[0] == '\0')
		{
			if (rp_uuid7_at(ids, &u, job->at_ms) < 0)
				return -1;
			rp_uuid_text(&u, job->snapshot_id);
		}
		run->njobs++;
	}
	qsort(run->jobs, (size_t) run->njobs, sizeof(RpSnapJob), rp_snap_job_cmp);
	return 0;
}

/*
 * A resumed copy reads the tables it had not finished under a new
 * snapshot, and the stream replays everything from the original
 * consistent point: by key, the rows both saw are upserted again and come
 * out the same.  A table without a key has nothing to match them by: its
 * inserts in between would be stored twice and its updates would meet
 * rows already changed.  Such a table not finished before the stop fails
 * the resume, named, and the snapshot must start over.
 */
static int
rp_snap_check_keyless(const RpSnapRun *run)
{
	for (int i = 0; i < run->njobs; i++)
	{
		const RpRelation *rel = run->jobs[i].t->rel;

		if (run->jobs[i].t->nkey == 0)
			return rp_fail(RP_HALT_CONFIG,
						   "snapshot: cannot resume: table \"%s\".\"%s\" has no primary key or replica identity index"
						   " and its copy had not finished; under a new snapshot its changes since the consistent"
						   " point would be applied twice%s",
						   rel->schema, rel->name, RP_SNAP_OVER_HINT);
	}
	return 0;
}

/* Run the workers until every one is done, with the progress line on a terminal. */
static void
rp_snap_copy(RpSnapRun *run, RpSnapWorker *workers, int nworkers, int64_t started, bool tty)
{
	for (int i = 0; i < nworkers; i++)
	{
		if (pthread_create(&workers[i].thread, NULL, rp_snap_worker_main, &workers[i]) != 0)
		{
			atomic_store(&run->failed, true);
			snprintf(run->error, sizeof(run->error), "snapshot: could not start a copy thread");
			break;
		}
		workers[i].started = true;
	}
	for (;;)
	{
		bool		alive = false;

		for (int i = 0; i < nworkers; i++)
			if (workers[i].started && pthread_tryjoin_np(workers[i].thread, NULL) != 0)
				alive = true;
			else
				workers[i].started = false;
		if (!alive)
			break;
		if (run->opts->progress_fn)
			rp_snap_report(run, false);
		else if (tty)
			rp_snap_progress(run, started, false);
		usleep(200000);
	}
	if (run->opts->progress_fn)
		rp_snap_report(run, true);
	else if (tty)
		rp_snap_progress(run, started, true);
}

/* The workers joined and closed, the jobs and the run's lock gone. */
static void
rp_snap_end(RpSnapRun *run, RpSnapWorker *workers, int nworkers)
{
	for (int i = 0; i < nworkers; i++)
	{
		if (workers[i].started)
			pthread_join(workers[i].thread, NULL);
		if (workers[i].conn)
			PQfinish(workers[i].conn);
	}
	if (workers)
		rp_free(workers);
	for (int i = 0; i < run->njobs; i++)
		rp_snaptoken_free(&run->jobs[i].tok);
	if (run->jobs)
		rp_free(run->jobs);
	pthread_mutex_destroy(&run->lock);
}

/*
 * Can the sink take this snapshot, and has it one already?  1: it holds
 * a checkpoint (a completed snapshot, or a stream already running), so
 * there is nothing to do; 0: go on; -1 after rp_fail.
 */
static int
rp_snap_sink_done(RpSink *sink)
{
	RpCheckpoint have;
	int			have_ck;

	if (sink->handle_snapshot == NULL || sink->handle_snapshot_complete == NULL)
		return rp_fail(RP_HALT_CONFIG, "sink %s does not take snapshots", sink->name);
	if (!sink->owns_checkpoint)
		return 0;
	if ((have_ck = sink->checkpoint(sink, &have)) < 0)
		return -1;
	return have_ck > 0 && have.end_lsn > 0 ? 1 : 0;
}

/*
 * The copy workers, one session each with the exported snapshot imported
 * (no more than there are jobs).  *workers and *nworkers are set first,
 * so that rp_snap_end closes what was opened when one fails: 0 or -1.
 */
static int
rp_snap_workers_open(RpSnapRun *run, RpSnapWorker **workers, int *nworkers)
{
	const RpSnapOptions *o = run->opts;

	*nworkers = o->workers < run->njobs ? o->workers : run->njobs;
	*workers = rp_malloc0(sizeof(RpSnapWorker) * (size_t) (*nworkers + 1));
	for (int i = 0; i < *nworkers; i++)
	{
		RpSnapWorker *w = &(*workers)[i];

		w->run = run;
		w->id = i;
		if ((w->conn = rp_snap_connect(o)) == NULL || rp_snap_import(w->conn, run->snapname) < 0)
			return -1;
	}
	return 0;
}

/*
 * Every table copied: the completed snapshot's checkpoint (the consistent
 * point, bound to the source) handed to the sink, then to the caller in
 * *ck, and the SNAPSHOT_COMPLETE event.  1, or -1 when the sink failed.
 */
static int
rp_snap_complete(RpSnapRun *run, int64_t started, RpCheckpoint *ck)
{
	RpCheckpoint done_ck = run->origin;
	RpEvent		ev;

	done_ck.commit_lsn = run->lsn > 0 ? run->lsn - 1 : 0;
	done_ck.end_lsn = run->lsn;
	if (run->sink->handle_snapshot_complete(run->sink, &done_ck) < 0)
		return -1;
	*ck = done_ck;
	rp_event_init(&ev, RP_EVENT_SNAPSHOT_COMPLETE);
	ev.slot = run->opts->slot;
	ev.changes = RP_COUNT_LOAD(run->stats->rows);
	ev.lsn = done_ck.commit_lsn;
	ev.end_lsn = done_ck.end_lsn;
	ev.duration_us = rp_clock_wall_us() - started;
	rp_event_emit(&run->opts->events, &ev);
	return 1;
}

/*
 * The snapshot, in its jobs: the sink checked, the source identified,
 * the slot and its exported snapshot (or the resumed one), the tables
 * planned, the workers opened, the copy, the completion.
 */
int
rp_snapshot_run(const RpSnapOptions *o, RpSink *sink, RpCheckpoint *ck)
{
	RpSnapRun	run;
	RpConn		repl;
	bool		repl_open = false;
	PGconn	   *coord = NULL;
	RpSnapTable *tables = NULL;
	int			ntables = 0;
	RpSnapWorker *workers = NULL;
	int			nworkers = 0;
	bool		resume = false;
	uint64_t	resume_lsn = 0;
	int64_t		started = rp_clock_wall_us();
	int			rc = -1;
	bool		tty = o->progress && isatty(STDERR_FILENO);
	RpSnapStats uncounted;		/* the counters when the caller keeps none */
	RpUuid7Gen	ids = RP_UUID7_GEN_INIT;	/* the run's snapshot_ids */
	int			sink_done;

	memset(&run, 0, sizeof(run));
	memset(&uncounted, 0, sizeof(uncounted));
	run.opts = o;
	run.sink = sink;
	run.stats = o->stats ? o->stats : &uncounted;
	pthread_mutex_init(&run.lock, NULL);

	/* 0: the sink holds a checkpoint already, nothing to copy (rp_snapshot.h) */
	if ((sink_done = rp_snap_sink_done(sink)) != 0)
		return sink_done < 0 ? -1 : 0;

	/* the source's identity binds the checkpoint */
	if (rp_conn_open(&repl, o->conninfo, o->progname) < 0)
		return -1;
	repl_open = true;
	if (rp_conn_identify(&repl) < 0)
		goto done;
	run.origin.system_id = repl.system_id;
	run.origin.timeline = repl.timeline;
	snprintf(run.origin.slot, sizeof(run.origin.slot), "%s", o->slot);

	if ((coord = rp_snap_connect(o)) == NULL)
		goto done;

	/*
	 * a pattern that selects nothing is a mistake, named before anything is
	 * made
	 */
	if (rp_snapcat_check_patterns(coord, &o->select) < 0)
		goto done;

	/* stored progress? then this is a resumed copy */
	if (rp_snap_find_resume(coord, o, sink, &resume, &resume_lsn) < 0)
		goto done;
	if (rp_snap_begin(&run, &repl, coord, resume, resume_lsn) < 0)
		goto done;

	/* the snapshot's xid horizon: what a heap-order resume must copy again */
	if (rp_snap_horizon(coord, &run) < 0)
		goto done;
	/* the tables as the snapshot sees them */
	tables = rp_snapcat_tables(coord, &o->select, &ntables);
	if (tables == NULL)
		goto done;
	if (rp_snap_plan(&run, &ids, tables, ntables) < 0)
		goto done;
	if (resume && rp_snap_check_keyless(&run) < 0)
		goto done;

	if (rp_snap_workers_open(&run, &workers, &nworkers) < 0)
		goto done;
	/* every worker holds the snapshot now: the exporting session may go idle */
	rp_snap_copy(&run, workers, nworkers, started, tty);
	if (atomic_load(&run.failed))
	{
		rp_fail(run.halt, "%s", run.error);
		goto done;
	}
	rc = rp_snap_complete(&run, started, ck);

done:
	rp_snap_end(&run, workers, nworkers);
	rp_snapcat_free(tables, ntables);
	if (coord)
		PQfinish(coord);
	if (repl_open)
		rp_conn_close(&repl);
	rp_uuid7_gen_free(&ids);
	rp_snap_stats_free(&uncounted);
	return rc;
}
