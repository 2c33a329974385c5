/*
 * rp_conn.c
 *    The replication protocol over libpq (see rp_conn.h).
 *
 * Replication connections speak the simple query protocol only, so the
 * few SQL and replication commands here are built with PQescapeLiteral
 * and rp_sql_ident (base/rp_sql.h), never by pasting user input.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_buf.h"
#include "base/rp_ckpt.h"
#include "base/rp_pgerr.h"
#include "stream/rp_conn.h"
#include "rp_read.h"
#include "base/rp_session.h"
#include "base/rp_sql.h"
#include "base/rp_status.h"
#include "rp_wire.h"


/*
 * A failed command: its SQLSTATE and, where rp_pgerr.h allows, the server's
 * primary message (never DETAIL or CONTEXT, which may carry values).
 * conn_msg, libpq's own message, for a failure with no server error (a lost
 * connection).
 */
static int
rp_conn_fail_result(RpHalt halt, const PGresult *res, const char *what, const char *conn_msg)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		line[512],
				code[64];

	if (state == NULL)
	{
		rp_error_first_line(line, sizeof(line), conn_msg);
		return rp_fail(halt, "%s failed: %s", what, line);
	}
	rp_pgerr_code(state, code, sizeof(code));
	rp_fail(halt, "%s failed: %s%s", what, code, rp_pgerr_said(res, line, sizeof(line)));
	rp_error_set_sqlstate(state);
	return -1;
}

static int
rp_conn_fail(RpConn *c, RpHalt halt, const char *what, const PGresult *res)
{
	return rp_conn_fail_result(halt, res, what, PQerrorMessage(c->pg));
}

/*
 * A command that loads the output plugin, failed: a plugin the server does
 * not have (58P01: its library file is missing) fails every time, and says
 * what to do.  Anything else as rp_conn_fail, with halt.
 */
static int
rp_conn_fail_plugin(RpConn *c, RpHalt halt, const char *what, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (state == NULL || strcmp(state, "58P01") != 0)
		return rp_conn_fail(c, halt, what, res);
	char		code[64],
				said[256];

	rp_pgerr_code(state, code, sizeof(code));
	rp_fail(RP_HALT_CONFIG, "%s failed: %s%s; install the replicant output plugin on the source server "
			"(make install in plugin/, or the package), then start again", what, code,
			rp_pgerr_said(res, said, sizeof(said)));
	rp_error_set_sqlstate(state);
	return -1;
}

/* A replication connection opened as spec says. */
static int
rp_conn_open_spec(RpConn *c, const RpSessionSpec *spec)
{
	RpSessionError err;

	memset(c, 0, sizeof(*c));
	c->pg = rp_session_open(spec, &err);
	if (c->pg == NULL && err.result == NULL)
		return rp_fail(rp_session_halt(&err), "could not connect: %s", err.message);
	if (c->pg == NULL)
	{
		int			rc = rp_conn_fail_result(RP_HALT_NONE, err.result, "session setup", err.message);

		PQclear(err.result);
		return rc;
	}
	c->dbname = rp_strndup(PQdb(c->pg), strlen(PQdb(c->pg)));
	return 0;
}

int
rp_conn_open(RpConn *c, const char *conninfo, const char *progname)
{
	RpSessionSpec spec = {
		.conninfo = conninfo,
		.replication = "database",
		.fallback_application_name = progname,
	};

	return rp_conn_open_spec(c, &spec);
}

int
rp_conn_open_beside(RpConn *c, const RpConn *main, const char *conninfo, const char *progname)
{
	const char *hostaddr = PQhostaddr(main->pg);
	RpSessionSpec spec = {
		.conninfo = conninfo,
		.replication = "database",
		.fallback_application_name = progname,
		.host = PQhost(main->pg),
		.port = PQport(main->pg),
		/* empty for a Unix socket: libpq then keeps the user's */
		.hostaddr = hostaddr && hostaddr[0] ? hostaddr : NULL,
		.target_session_attrs = "any",
	};

	return rp_conn_open_spec(c, &spec);
}

void
rp_conn_close(RpConn *c)
{
	if (c->pg)
		PQfinish(c->pg);
	c->pg = NULL;
	if (c->dbname)
		rp_free(c->dbname);
	c->dbname = NULL;
}

/* Wait until the socket is ready for events, until deadline_us: false when time is up. */
static bool
rp_conn_wait(RpConn *c, short events, int64_t deadline_us)
{
	struct pollfd pfd = {.fd = PQsocket(c->pg),.events = events};
	int64_t		left = deadline_us - rp_clock_wall_us();

	if (left <= 0)
		return false;
	return poll(&pfd, 1, (int) (left / 1000 + 1)) >= 0 || errno == EINTR;
}

void
rp_conn_finish(RpConn *c, int timeout_ms)
{
	int64_t		deadline = rp_clock_wall_us() + (int64_t) timeout_ms * 1000;
	int			r;

	if (c->pg == NULL || PQstatus(c->pg) != CONNECTION_OK)
	{
		rp_conn_close(c);
		return;
	}
	while ((r = PQputCopyEnd(c->pg, NULL)) == 0 && rp_conn_wait(c, POLLOUT, deadline))
		;
	if (r == 1)
	{
		/* the CopyDone (and what was queued before it) on the wire */
		while ((r = PQflush(c->pg)) == 1 && rp_conn_wait(c, POLLOUT, deadline))
			;

		/*
		 * the server's end of the copy: its own CopyDone, then the command's
		 * result
		 */
		while (r == 0)
		{
			char	   *buf = NULL;
			int			n = PQgetCopyData(c->pg, &buf, 1);

			if (buf)
				PQfreemem(buf);
			if (n > 0)
				continue;
			if (n < -1)
				break;
			if (n == -1)
			{
				/*
				 * the command's results, read without blocking past the
				 * deadline
				 */
				for (;;)
				{
					PGresult   *res;

					if (PQisBusy(c->pg))
					{
						if (!rp_conn_wait(c, POLLIN, deadline) || PQconsumeInput(c->pg) == 0)
							break;
						continue;
					}
					if ((res = PQgetResult(c->pg)) == NULL)
						break;
					PQclear(res);
				}
				break;
			}
			if (!rp_conn_wait(c, POLLIN, deadline) || PQconsumeInput(c->pg) == 0)
				break;
		}
	}
	rp_conn_close(c);
}

int
rp_conn_identify(RpConn *c)
{
	PGresult   *res = PQexec(c->pg, "IDENTIFY_SYSTEM");
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) < 4)
		rc = rp_conn_fail(c, RP_HALT_NONE, "IDENTIFY_SYSTEM", res);
	else if (!rp_lsn_parse(PQgetvalue(res, 0, 2), &c->flush_lsn))
		rc = rp_fail(RP_HALT_NONE, "IDENTIFY_SYSTEM returned no WAL position");
	else
	{
		c->system_id = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
		c->timeline = (uint32_t) strtoul(PQgetvalue(res, 0, 1), NULL, 10);
		/* the WAL the server has now: what this connection may acknowledge */
		if (c->flush_lsn > c->server_wal_end)
			c->server_wal_end = c->flush_lsn;
	}
	PQclear(res);
	return rc;
}

int
rp_conn_slot_info(RpConn *c, const char *slot, RpSlotInfo *info)
{
	char	   *lit = PQescapeLiteral(c->pg, slot, strlen(slot));
	char		sql[512];
	PGresult   *res;
	int			rc = 0;

	memset(info, 0, sizeof(*info));
	if (lit == NULL)
		return rp_conn_fail(c, RP_HALT_NONE, "quoting the slot name", NULL);

	/*
	 * synced: 17's slot synchronization; before it no slot was ever
	 * synchronized
	 */
	snprintf(sql, sizeof(sql),
			 "SELECT slot_type, coalesce(plugin, ''), coalesce(confirmed_flush_lsn::text, ''), "
			 "coalesce(wal_status, ''), %s, coalesce(active_pid, 0) FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
			 PQserverVersion(c->pg) >= RP_CONN_FAILOVER_MIN_VERSION ? "synced" : "false", lit);
	PQfreemem(lit);
	res = PQexec(c->pg, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = rp_conn_fail(c, RP_HALT_NONE, "reading pg_replication_slots", res);
	else if (PQntuples(res) == 1)
	{
		info->exists = true;
		info->logical = strcmp(PQgetvalue(res, 0, 0), "logical") == 0;
		snprintf(info->plugin, sizeof(info->plugin), "%s", PQgetvalue(res, 0, 1));
		if (!rp_lsn_parse(PQgetvalue(res, 0, 2), &info->confirmed_flush))
			info->confirmed_flush = 0;
		info->lost = strcmp(PQgetvalue(res, 0, 3), "lost") == 0;
		info->synced = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
		info->active_pid = atoi(PQgetvalue(res, 0, 5));
	}
	PQclear(res);
	return rc;
}

int
rp_conn_timeline_history(RpConn *c, uint32_t tli, char **text, size_t *len)
{
	char		cmd[48];
	PGresult   *res;
	int			rc = 0;

	*text = NULL;
	*len = 0;
	snprintf(cmd, sizeof(cmd), "TIMELINE_HISTORY %u", tli);
	res = PQexec(c->pg, cmd);
	/* filename, content: the walsender sends the file's bytes as they are */
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) != 2)
		rc = rp_conn_fail(c, RP_HALT_NONE, cmd, res);
	else
	{
		*len = (size_t) PQgetlength(res, 0, 1);
		*text = rp_malloc(*len + 1);
		memcpy(*text, PQgetvalue(res, 0, 1), *len);
		(*text)[*len] = '\0';
	}
	PQclear(res);
	return rc;
}

static int
rp_conn_command(RpConn *c, const char *cmd, const char *what, bool tolerate_duplicate)
{
	PGresult   *res = PQexec(c->pg, cmd);
	int			rc = 0;
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (!(tolerate_duplicate && state && strcmp(state, "42710") == 0))
			rc = rp_conn_fail_plugin(c, RP_HALT_NONE, what, res);
	}
	PQclear(res);
	return rc;
}

int
rp_conn_need_failover(RpConn *c, const char *option)
{
	int			v = PQserverVersion(c->pg);

	if (v >= RP_CONN_FAILOVER_MIN_VERSION)
		return 0;
	return rp_fail(RP_HALT_CONFIG, "%s needs PostgreSQL 17 or later (failover slots); the server is PostgreSQL %d.%d",
				   option, v / 10000, v % 10000);
}

bool
rp_conn_create_command(char *cmd, size_t len, const char *slot, const char *plugin,
					   const char *snapshot, bool failover, int server_version)
{
	char	   *id = rp_sql_ident_dup(slot);
	char	   *pl = rp_sql_ident_dup(plugin);
	bool		exported = strcmp(snapshot, "export") == 0;
	int			n;

	if (server_version >= 150000)
		n = snprintf(cmd, len, "CREATE_REPLICATION_SLOT %s LOGICAL %s (SNAPSHOT '%s'%s)", id, pl,
					 exported ? "export" : "nothing", failover ? ", FAILOVER" : "");
	else
		n = snprintf(cmd, len, "CREATE_REPLICATION_SLOT %s LOGICAL %s %s", id, pl,
					 exported ? "EXPORT_SNAPSHOT" : "NOEXPORT_SNAPSHOT");
	rp_free(id);
	rp_free(pl);
	return n >= 0 && (size_t) n < len;
}

int
rp_conn_create_slot(RpConn *c, const char *slot, const char *plugin, bool if_not_exists,
					bool failover)
{
	char		cmd[512];

	if (failover && rp_conn_need_failover(c, "--failover") < 0)
		return -1;
	if (!rp_conn_create_command(cmd, sizeof(cmd), slot, plugin, "nothing", failover,
								PQserverVersion(c->pg)))
		return rp_fail(RP_HALT_NONE, "CREATE_REPLICATION_SLOT: the slot name is too long");
	return rp_conn_command(c, cmd, "CREATE_REPLICATION_SLOT", if_not_exists);
}

int
rp_conn_alter_slot(RpConn *c, const char *slot, bool failover)
{
	char	   *id;
	char		cmd[512];

	if (rp_conn_need_failover(c, failover ? "--failover" : "--no-failover") < 0)
		return -1;
	id = rp_sql_ident_dup(slot);
	snprintf(cmd, sizeof(cmd), "ALTER_REPLICATION_SLOT %s (FAILOVER %s)", id,
			 failover ? "true" : "false");
	rp_free(id);
	return rp_conn_command(c, cmd, "ALTER_REPLICATION_SLOT", false);
}

int
rp_conn_drop_slot(RpConn *c, const char *slot)
{
	char	   *id = rp_sql_ident_dup(slot);
	char		cmd[256];

	snprintf(cmd, sizeof(cmd), "DROP_REPLICATION_SLOT %s WAIT", id);
	rp_free(id);
	return rp_conn_command(c, cmd, "DROP_REPLICATION_SLOT", false);
}

int
rp_conn_start(RpConn *c, const char *slot, uint64_t startpos, char *const *options)
{
	RpBuf		cmd;
	char	   *id = rp_sql_ident_dup(slot);
	char		lsn[24];
	PGresult   *res;
	int			rc = 0;

	rp_lsn_format(startpos, lsn);
	rp_buf_init(&cmd, 256);
	rp_buf_put_text(&cmd, "START_REPLICATION SLOT ");
	rp_buf_put_text(&cmd, id);
	rp_buf_put_text(&cmd, " LOGICAL ");
	rp_buf_put_text(&cmd, lsn);
	rp_free(id);
	for (int i = 0; options && options[i]; i += 2)
	{
		char	   *name = rp_sql_ident_dup(options[i]);
		char	   *val = options[i + 1] ? PQescapeLiteral(c->pg, options[i + 1],
														   strlen(options[i + 1])) : NULL;

		rp_buf_put_text(&cmd, i == 0 ? " (" : ", ");
		rp_buf_put_text(&cmd, name);
		if (val)
		{
			rp_buf_put_char(&cmd, ' ');
			rp_buf_put_text(&cmd, val);
			PQfreemem(val);
		}
		rp_free(name);
		if (options[i + 2] == NULL)
			rp_buf_put_char(&cmd, ')');
	}
	rp_buf_put_char(&cmd, '\0');
	res = PQexec(c->pg, cmd.data);
	if (PQresultStatus(res) != PGRES_COPY_BOTH)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		/* an older plugin that does not speak our version: say what to do */
		if (msg && strstr(msg, "option \"proto_version\"") != NULL)
			rc = rp_fail(RP_HALT_CONFIG, "START_REPLICATION failed: the server's replicant plugin does not speak wire protocol version %d (it says: %s): install this release's plugin on the server",
						 RP_PROTO_VERSION, msg);
		/* a bad plugin option (22xxx, 42xxx) fails the same way every time */
		else
			rc = rp_conn_fail_plugin(c, state && (strncmp(state, "22", 2) == 0 || strncmp(state, "42", 2) == 0)
									 ? RP_HALT_CONFIG : RP_HALT_NONE, "START_REPLICATION", res);
	}
	PQclear(res);
	rp_buf_free(&cmd);
	if (rc == 0 && PQsetnonblocking(c->pg, 1) != 0)
		rc = rp_conn_fail(c, RP_HALT_NONE, "switching to non-blocking mode", NULL);
	c->received_lsn = startpos;
	return rc;
}

void
rp_conn_status_message(const RpConn *c, uint64_t flush_lsn, bool request_reply, int64_t now_us,
					   unsigned char m[34])
{
	uint64_t	write_lsn = c->received_lsn > flush_lsn ? c->received_lsn : flush_lsn;
	uint64_t	fields[4];

	/*
	 * The server takes a logical slot's confirmed position as we report it,
	 * unchecked: a position it never sent (a damaged checkpoint, a -I past
	 * its WAL) would be confirmed and the WAL in between skipped for good.
	 */
	if (flush_lsn > c->server_wal_end)
		flush_lsn = c->server_wal_end;
	if (write_lsn > c->server_wal_end)
		write_lsn = c->server_wal_end;
	fields[0] = write_lsn;
	fields[1] = flush_lsn;
	fields[2] = flush_lsn;
	fields[3] = (uint64_t) (now_us - RP_PG_EPOCH_USECS);
	m[0] = 'r';
	for (int f = 0; f < 4; f++)
		for (int b = 0; b < 8; b++)
			m[1 + f * 8 + b] = (unsigned char) (fields[f] >> (56 - 8 * b));
	m[33] = request_reply ? 1 : 0;
}

int
rp_conn_feedback(RpConn *c, uint64_t flush_lsn, bool request_reply)
{
	unsigned char m[34];
	int64_t		now = rp_clock_wall_us();

	rp_conn_status_message(c, flush_lsn, request_reply, now, m);
	if (PQputCopyData(c->pg, (const char *) m, sizeof(m)) <= 0 || PQflush(c->pg) < 0)
		return rp_conn_fail(c, RP_HALT_NONE, "sending the status update", NULL);
	c->last_status_us = now;
	return 0;
}

void
rp_conn_release(RpMsg *msg)
{
	if (msg->owned)
		PQfreemem(msg->owned);
	msg->owned = NULL;
}

int
rp_conn_read(RpConn *c, RpMsg *msg, int timeout_ms)
{
	char	   *buf = NULL;
	int			n;

	memset(msg, 0, sizeof(*msg));
	n = PQgetCopyData(c->pg, &buf, 1);
	if (n == 0 && timeout_ms > 0)
	{
		struct pollfd pfd = {.fd = PQsocket(c->pg),.events = POLLIN};

		if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
			return rp_fail(RP_HALT_NONE, "poll failed: %s", strerror(errno));
		if (PQconsumeInput(c->pg) == 0)
			return rp_conn_fail(c, RP_HALT_NONE, "reading from the server", NULL);
		n = PQgetCopyData(c->pg, &buf, 1);
	}
	if (n == 0)
	{
		msg->kind = RP_MSG_NONE;
		return 0;
	}
	if (n == -1)
	{
		PGresult   *res = PQgetResult(c->pg);
		int			rc = 0;

		msg->kind = RP_MSG_END;
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

			/*
			 * a row the server cannot decode (data exception) fails every
			 * time
			 */
			rc = rp_conn_fail(c, state && (strncmp(state, "22", 2) == 0 || strncmp(state, "XX", 2) == 0)
							  ? RP_HALT_MALFORMED : RP_HALT_NONE, "the replication stream", res);
		}
		PQclear(res);
		return rc;
	}
	if (n < 0)
		return rp_conn_fail(c, RP_HALT_NONE, "reading the replication stream", NULL);

	msg->owned = buf;
	if (buf[0] == 'k' && n >= 18)
	{
		msg->kind = RP_MSG_KEEPALIVE;
		msg->lsn = rp_load_u64((const unsigned char *) buf + 1);
		msg->reply_requested = buf[17] != 0;
		if (msg->lsn > c->server_wal_end)
			c->server_wal_end = msg->lsn;
		if (msg->lsn > c->sent_lsn)
			c->sent_lsn = msg->lsn;
		return 0;
	}
	if (buf[0] == 'w' && n >= 25)
	{
		uint64_t	wal_end = rp_load_u64((const unsigned char *) buf + 9);

		msg->kind = RP_MSG_DATA;
		msg->lsn = rp_load_u64((const unsigned char *) buf + 1);
		msg->data = buf + 25;
		msg->len = (size_t) n - 25;
		if (msg->lsn > c->received_lsn)
			c->received_lsn = msg->lsn;
		if (wal_end > c->server_wal_end)
			c->server_wal_end = wal_end;
		if (wal_end > c->sent_lsn)
			c->sent_lsn = wal_end;
		return 0;
	}
	rp_conn_release(msg);
	return rp_fail(RP_HALT_MALFORMED, "unexpected replication message type 0x%02x (%d bytes)",
				   (unsigned char) buf[0], n);
}
