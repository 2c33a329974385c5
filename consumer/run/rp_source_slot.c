/*
 * rp_source_slot.c
 *    The replication slot as a run's source (rp_source.h), as
 *    pg_recvlogical's StreamLogicalLog reads it: connect, check the
 *    checkpoint and the slot against the server, START_REPLICATION from
 *    the durable position, then XLogData frames and keepalives, answered
 *    with standby status updates whose flush position is what is durable.
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/rp_clock.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"
#include "base/rp_tlhist.h"
#include "rp_lsn.h"
#include "rp_wire.h"
#include "run/rp_source.h"
#include "snapshot/rp_snapcat.h"
#include "stream/rp_conn.h"

/*
 * The default for a sink that applies streamed transactions early (kB).
 * Small enough that a set-based pass of a few hundred thousand rows streams
 * in blocks the destination applies while the walsender decodes the rest:
 * at 16MB the 1M backlog's 100,000-row delete pass (about 15 MB in the
 * reorder buffer) came whole at its commit and the destination waited for
 * it (bench/results/2026-12-05-mirror-decoding-work-mem.md).
 */
#define RP_EARLY_DECODING_WORK_MEM_KB 4096
/* a clean end of the stream waits this long for its CopyDone to leave */
#define RP_FINISH_TIMEOUT_MS 10000

typedef struct RpSlotSource
{
	RpSource	base;			/* first: the interface */
	RpSlotSourceOptions o;
	RpConn		conn;
	bool		connected;
	RpMsg		msg;			/* the last read, released by the next read or
								 * close */
	bool		standby;		/* the server was in recovery at open: its
								 * timeline may move under the stream */
	RpConn		side;			/* IDENTIFY_SYSTEM beside the stream (standby
								 * only), or pg NULL */
} RpSlotSource;

/*
 * Before resuming, the slot must still hold everything after the
 * checkpoint: a missing, invalidated or advanced slot is a gap (G3).
 */
static int
check_slot(RpSlotSource *s, bool have_ck, const RpCheckpoint *ck, uint64_t switchpoint,
		   uint64_t *confirmed)
{
	RpSlotInfo	info;
	const char *slot = s->o.slot;
	char		a[24],
				b[24];

	if (rp_conn_slot_info(&s->conn, slot, &info) < 0)
		return -1;
	*confirmed = info.confirmed_flush;

	/*
	 * With no checkpoint nothing was received from the slot, so nothing can
	 * be lost: a misspelt -S or a first run without --create-slot, which no
	 * retry mends.  With one, the slot that held its position is gone (G3).
	 */
	if (!info.exists && !have_ck)
		return rp_fail(RP_HALT_CONFIG, "replication slot \"%s\" does not exist: create it with --create-slot, or name another with -S/--slot",
					   slot);

	/*
	 * slot sync drops a copy that was still temporary when the standby was
	 * promoted
	 */
	if (!info.exists && switchpoint != 0)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" does not exist on the promoted server: it was not synchronized, or its copy was still temporary at the promotion; see \"Failover slots\" in docs/operations.md",
					   slot);
	if (!info.exists)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" does not exist", slot);
	if (!info.logical || strcmp(info.plugin, "replicant") != 0)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" is not a logical slot of plugin replicant",
					   slot);
	if (info.lost)
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" has been invalidated (wal_status lost)",
					   slot);

	/*
	 * Another walsender streams from the slot: another consumer, or the
	 * walsender of this one's previous process, which has not noticed yet
	 * that it ended.  Its position moves under us, so it says nothing about a
	 * gap yet (a second NATS writer of the same stream read the stream's
	 * tail, then a slot already past it, and halted `gap` with nothing lost);
	 * START_REPLICATION would refuse it anyway.  Retried, and judged once the
	 * slot is free.
	 */
	if (info.active_pid != 0)
		return rp_fail(RP_HALT_NONE, "replication slot \"%s\" is active for PID %d (another consumer, or the walsender of one that just ended)",
					   slot, info.active_pid);

	/*
	 * After a promotion the slot must be one that existed before it: the copy
	 * slot synchronization kept of the old primary's, or a slot made on this
	 * server while it was a standby.  One made after the promotion starts at
	 * its creation, past the switch point, and what was committed between the
	 * checkpoint and then would never come.
	 */
	if (switchpoint != 0 && info.confirmed_flush > switchpoint)
	{
		rp_lsn_format(info.confirmed_flush, a);
		rp_lsn_format(switchpoint, b);
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" on the promoted server starts at %s, past the switch point %s: it was made after the promotion (%s), and does not hold the changes after the checkpoint; see \"Failover slots\" in docs/operations.md",
					   slot, a, b, info.synced ? "synchronized" : "not synchronized from the old primary");
	}

	/*
	 * a checkpoint that never held a position has no gap; one that holds only
	 * where the sink's history begins (the origin floor) says so
	 */
	if (have_ck && ck->end_lsn > 0 && ck->commit_lsn == 0 && info.confirmed_flush > ck->end_lsn)
	{
		rp_lsn_format(info.confirmed_flush, a);
		rp_lsn_format(ck->end_lsn, b);
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" is at %s, past %s, where this sink's history begins (its origin floor, with no transaction delivered since): the slot was made again or advanced after it, and the changes in between are gone",
					   slot, a, b);
	}
	if (have_ck && ck->end_lsn > 0 && info.confirmed_flush > ck->end_lsn)
	{
		rp_lsn_format(info.confirmed_flush, a);
		rp_lsn_format(ck->end_lsn, b);
		return rp_fail(RP_HALT_GAP, "replication slot \"%s\" is at %s, past the checkpoint %s: changes in between were acknowledged but never applied",
					   slot, a, b);
	}
	return 0;
}

static char **
plugin_options(const RpSlotSourceOptions *so)
{
	char	  **o = rp_malloc0(sizeof(char *) * (size_t) (so->noptions * 2 + 5));
	int			n = 0;
	bool		streaming_set = false;

	/*
	 * version 4: every timestamp PostgreSQL has (2), a partition root's kind
	 * (3), the commit's timeline (4)
	 */
	o[n++] = "proto_version";
	o[n++] = RP_PROTO_VERSION_STR;
	for (int i = 0; i < so->noptions * 2; i++)
	{
		if (i % 2 == 0 && strcmp(so->plugin_options[i], "streaming") == 0)
			streaming_set = true;
		o[n++] = so->plugin_options[i];
	}

	/*
	 * Large transactions come streamed unless told otherwise: the server then
	 * never spills them to its own disk, and this consumer bounds its memory
	 * with --max-memory and its own spill files (G5).
	 */
	if (!streaming_set)
	{
		o[n++] = "streaming";
		o[n++] = "on";
	}
	o[n] = NULL;
	return o;
}

/* SHOW's memory setting ("64MB", "4096kB") in bytes; false when it does not read. */
static bool
parse_memory(const char *s, uint64_t *bytes)
{
	static const struct
	{
		const char *unit;
		int			shift;
	}			units[] = {
		{"kB", 10}, {"MB", 20}, {"GB", 30}, {"TB", 40}
	};
	char	   *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	v = strtoull(s, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcasecmp(end, units[i].unit) == 0)
		{
			*bytes = (uint64_t) v << units[i].shift;
			return true;
		}
	return false;
}

/*
 * The server's decoding memory for this session only (SET on the replication
 * connection): past it a transaction is streamed.  A smaller one streams
 * large transactions sooner and in smaller blocks, so a sink that applies
 * them early starts sooner, and the walsender holds less.  By default that
 * is done for such a sink only, and only ever lowers the server's setting.
 */
static int
set_decoding_work_mem(RpSlotSource *s, bool early)
{
	uint64_t	want = s->o.decoding_work_mem_kb;
	char		set[96];
	PGresult   *res;
	int			rc;

	if (want == RP_SOURCE_WORK_MEM_SERVER || (want == 0 && !early))
		return 0;
	if (want == 0)
	{
		uint64_t	have = 0;

		res = PQexec(s->conn.pg, "SHOW logical_decoding_work_mem");
		rc = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			parse_memory(PQgetvalue(res, 0, 0), &have);
		PQclear(res);
		if (!rc || have <= (uint64_t) RP_EARLY_DECODING_WORK_MEM_KB << 10)
			return 0;
		want = RP_EARLY_DECODING_WORK_MEM_KB;
	}
	snprintf(set, sizeof(set), "SET logical_decoding_work_mem = '%" PRIu64 "kB'", want);
	res = PQexec(s->conn.pg, set);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		rc = rp_fail(PQresultStatus(res) == PGRES_FATAL_ERROR && state ? RP_HALT_CONFIG : RP_HALT_NONE,
					 "the server refused logical_decoding_work_mem for this session (SQLSTATE %s)",
					 state ? state : "none");
		PQclear(res);
		return rc;
	}
	PQclear(res);
	if (s->o.log_info)
	{
		char		line[128];

		snprintf(line, sizeof(line), "logical_decoding_work_mem of this session: %" PRIu64 "kB", want);
		s->o.log_info(s->o.log_arg, line);
	}
	return 0;
}

/*
 * A checkpoint taken on another timeline than the server's: the server was
 * promoted (or restored) since.  It goes on only when the server's history
 * holds the checkpoint's timeline and left it after everything this run
 * holds (base/rp_tlhist.h); *switchpoint then says where it left it, which
 * the slot must not be past.  Anything else halts naming what did not match
 * (G3).
 */
static int
check_timeline(RpSlotSource *s, const RpSourceOpen *o, uint64_t *switchpoint)
{
	uint32_t	tli = s->conn.timeline;
	uint64_t	held = o->held_end;
	RpTlHistEntry *e = NULL;
	int			n = 0;
	char	   *text;
	size_t		len;
	uint64_t	sw;
	char		a[24],
				b[24];
	int			rc;

	*switchpoint = 0;
	if (o->ck.timeline == tli)
		return 0;
	if (o->ck.timeline > tli)
		return rp_fail(RP_HALT_IDENTITY,
					   "checkpoint was taken on timeline %u, but the source is on timeline %u, an earlier one: it is not this server's history (restored from a backup, or another branch)",
					   o->ck.timeline, tli);
	if (rp_conn_timeline_history(&s->conn, tli, &text, &len) < 0)
		return -1;
	rc = rp_tlhist_parse(text, len, &e, &n);
	rp_free(text);
	if (rc < 0)
		return rp_fail(RP_HALT_IDENTITY, "the history file of timeline %u does not read", tli);
	rc = 0;
	rp_lsn_format(held, b);
	switch (rp_tlhist_judge(e, n, o->ck.timeline, held, tli, &sw))
	{
		case RP_TL_SAME:
			break;
		case RP_TL_FOLLOWS:
			*switchpoint = sw;
			if (s->o.log_info)
			{
				char		line[256];

				rp_lsn_format(sw, a);
				snprintf(line, sizeof(line),
						 "the source left timeline %u for timeline %u at %s, after everything held (up to %s): going on on timeline %u",
						 o->ck.timeline, tli, a, b, tli);
				s->o.log_info(s->o.log_arg, line);
			}
			break;
		case RP_TL_PAST_SWITCH:
			rp_lsn_format(sw, a);
			rc = rp_fail(RP_HALT_GAP,
						 "the source left timeline %u for timeline %u at %s, but this consumer holds changes up to %s: the promoted server never had the ones after %s (it was behind; synchronized_standby_slots prevents this, see docs/operations.md)",
						 o->ck.timeline, tli, a, b, a);
			break;
		case RP_TL_NOT_ANCESTOR:
			rc = rp_fail(RP_HALT_IDENTITY,
						 "checkpoint was taken on timeline %u, which the history of the source's timeline %u does not contain: the server was promoted from another branch",
						 o->ck.timeline, tli);
			break;
		case RP_TL_NEWER:
			rc = rp_fail(RP_HALT_IDENTITY, "checkpoint timeline %u is after the source's %u", o->ck.timeline, tli);
			break;
	}
	if (e)
		rp_free(e);
	return rc;
}

/*
 * Connect, check the checkpoint and the slot against the source, and start
 * replication from the durable position (or the start position given).
 */
static int
slot_open(RpSource *src, RpSourceOpen *o)
{
	RpSlotSource *s = (RpSlotSource *) src;
	char	  **opts;
	uint64_t	start;
	uint64_t	switchpoint = 0;
	uint64_t	confirmed = 0;
	int			rc;

	if (rp_conn_open(&s->conn, s->o.conninfo, s->o.progname) < 0)
		return -1;
	s->connected = true;
	if (rp_conn_identify(&s->conn) < 0)
		return -1;

	/*
	 * a table pattern that selects nothing is a mistake: said before anything
	 * streams
	 */
	if (o->first && rp_snapcat_check_patterns(s->conn.pg, &s->o.select) < 0)
		return -1;

	/*
	 * the first connection binds a new checkpoint to this source, later ones
	 * check it
	 */
	if (o->have_ck && o->first && rp_ckpt_check_kind(&o->ck, "") < 0)
		return -1;
	if (o->have_ck && rp_ckpt_check_source(&o->ck, s->conn.system_id, s->o.slot) < 0)
		return -1;
	if (o->have_ck && check_timeline(s, o, &switchpoint) < 0)
		return -1;
	memset(&o->bind, 0, sizeof(o->bind));
	o->bind.system_id = s->conn.system_id;
	o->bind.timeline = s->conn.timeline;
	if (rp_ckpt_check_position(&o->ck, s->conn.flush_lsn) < 0)
		return -1;
	if (check_slot(s, o->have_ck, &o->ck, switchpoint, &confirmed) < 0)
		return -1;

	/*
	 * without a checkpoint, where the sink's history will begin: the server
	 * starts at the slot's position when asked for an earlier one
	 */
	if (!o->have_ck)
		o->bind.end_lsn = s->o.startpos > confirmed ? s->o.startpos : confirmed;
	start = s->o.startpos ? s->o.startpos : o->ck.end_lsn;

	s->standby = rp_sql_in_recovery(s->conn.pg);
	if (set_decoding_work_mem(s, o->early) < 0)
		return -1;
	opts = plugin_options(&s->o);
	rc = rp_conn_start(&s->conn, s->o.slot, start, opts);
	rp_free(opts);
	if (rc < 0)
		return -1;
	rp_event_init(&o->up, RP_EVENT_CONN_UP);
	o->up.lsn = start;
	return 0;
}

static int
slot_read(RpSource *src, RpSourceRead *r, int timeout_ms)
{
	RpSlotSource *s = (RpSlotSource *) src;

	rp_conn_release(&s->msg);
	memset(r, 0, sizeof(*r));
	if (rp_conn_read(&s->conn, &s->msg, timeout_ms) < 0)
		return -1;
	switch (s->msg.kind)
	{
		case RP_MSG_NONE:
			r->kind = RP_SOURCE_NONE;
			break;
		case RP_MSG_DATA:
			r->kind = RP_SOURCE_FRAME;
			r->data = (const unsigned char *) s->msg.data;
			r->len = s->msg.len;
			r->lsn = s->msg.lsn;
			r->ends = true;
			break;
		case RP_MSG_KEEPALIVE:
			rp_conn_release(&s->msg);
			r->kind = RP_SOURCE_POSITION;
			r->lsn = s->msg.lsn;
			r->reply_requested = s->msg.reply_requested;
			break;
		case RP_MSG_END:
			r->kind = RP_SOURCE_END;
			break;
	}
	return 0;
}

/* The one place that reports progress to the server: flush = durable (G2). */
static int
slot_feedback(RpSource *src, uint64_t durable_lsn, bool force, bool request_reply)
{
	RpSlotSource *s = (RpSlotSource *) src;

	if (!s->connected)
		return 0;
	if (!force && rp_clock_wall_us() - s->conn.last_status_us < (int64_t) s->o.status_interval_ms * 1000)
		return 0;
	return rp_conn_feedback(&s->conn, durable_lsn, request_reply);
}

/* The last status update with what is durable, then CopyDone, waited for like pg_recvlogical's. */
static void
slot_finish(RpSource *src, uint64_t durable_lsn)
{
	RpSlotSource *s = (RpSlotSource *) src;

	rp_conn_release(&s->msg);
	if (!s->connected)
		return;
	if (rp_conn_feedback(&s->conn, durable_lsn, false) < 0)
		rp_error_clear();		/* the connection is going anyway */
	rp_conn_finish(&s->conn, RP_FINISH_TIMEOUT_MS);
	s->connected = false;
	if (s->side.pg)
		rp_conn_close(&s->side);
}

/*
 * A standby promoted under the stream (or following a promoted upstream)
 * goes on decoding on its new timeline.  Commits say their timeline (wire
 * version 4); a keepalive's position says none, and recorded on the old
 * timeline past the switch point it would make the next start halt (the old
 * timeline's history ends before it).  Every position this connection read
 * is WAL of this server, which lies on the server's timeline of any moment
 * after the read: IDENTIFY_SYSTEM on a second connection to the same server
 * says it.  A primary's timeline never moves under a connection.
 */
static bool
slot_timeline_now(RpSource *src, uint32_t *tli)
{
	RpSlotSource *s = (RpSlotSource *) src;

	*tli = 0;
	if (!s->standby || !s->connected)
		return true;
	if (s->side.pg == NULL && rp_conn_open_beside(&s->side, &s->conn, s->o.conninfo, s->o.progname) < 0)
	{
		rp_error_clear();
		return false;
	}
	if (rp_conn_identify(&s->side) < 0)
	{
		rp_error_clear();
		rp_conn_close(&s->side);
		return false;
	}
	*tli = s->side.timeline;
	return true;
}

static void
slot_close(RpSource *src)
{
	RpSlotSource *s = (RpSlotSource *) src;

	rp_conn_release(&s->msg);
	if (s->connected)
		rp_conn_close(&s->conn);
	s->connected = false;
	if (s->side.pg)
		rp_conn_close(&s->side);
}

static void
slot_end(const RpSource *src, RpSourceEnd *e)
{
	const RpSlotSource *s = (const RpSlotSource *) src;

	e->by_seq = false;
	e->end = s->conn.server_wal_end;
	e->server_version = s->connected && s->conn.pg ? PQserverVersion(s->conn.pg) : 0;
	e->sent_all = s->connected && s->conn.sent_lsn >= s->conn.flush_lsn;
}

static void
slot_free(RpSource *src)
{
	if (src == NULL)
		return;
	slot_close(src);
	rp_free(src);
}

RpSource   *
rp_source_slot_new(const RpSlotSourceOptions *o)
{
	RpSlotSource *s = rp_malloc0(sizeof(*s));

	s->o = *o;
	s->base.keepalives = true;
	s->base.open = slot_open;
	s->base.read = slot_read;
	s->base.feedback = slot_feedback;
	s->base.timeline_now = slot_timeline_now;
	s->base.finish = slot_finish;
	s->base.close = slot_close;
	s->base.end = slot_end;
	s->base.free = slot_free;
	return &s->base;
}
