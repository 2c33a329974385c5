/*
 * rp_conn.h
 *    The replication connection: IDENTIFY_SYSTEM, slots, START_REPLICATION
 *    and the CopyBoth stream (XLogData, keepalives, standby status).
 *    Modelled on pg_recvlogical: one feedback function, non-blocking reads.
 */
#ifndef RP_CONN_H
#define RP_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "base/rp_clock.h"

typedef struct RpConn
{
	PGconn	   *pg;
	uint64_t	system_id;
	uint32_t	timeline;
	char	   *dbname;
	uint64_t	received_lsn;	/* highest WAL position seen (write) */
	uint64_t	flush_lsn;		/* IDENTIFY_SYSTEM's xlogpos: the server's WAL
								 * flush position */
	uint64_t	server_wal_end; /* highest WAL end the server reported
								 * (identify, keepalive, XLogData): no status
								 * update goes past it */
	uint64_t	sent_lsn;		/* highest position the walsender said it sent
								 * (keepalive, XLogData): at flush_lsn or past
								 * it, what the server had at connect is
								 * decoded */
	int64_t		last_status_us;
} RpConn;

/* What the slot says, for the gap check before resuming (G3). */
typedef struct RpSlotInfo
{
	bool		exists;
	bool		logical;
	bool		lost;			/* wal_status = 'lost' or invalidated */
	char		plugin[64];
	uint64_t	confirmed_flush;
	bool		synced;			/* 17+: copied from a primary by slot sync
								 * (and still so on the promoted standby) */
	int			active_pid;		/* the walsender streaming from it, or 0 */
} RpSlotInfo;

typedef enum RpMsgKind
{
	RP_MSG_NONE,				/* nothing yet (would block) */
	RP_MSG_DATA,				/* a frame */
	RP_MSG_KEEPALIVE,
	RP_MSG_END					/* the server ended the stream */
} RpMsgKind;

typedef struct RpMsg
{
	RpMsgKind	kind;
	uint64_t	lsn;			/* XLogData start, or keepalive WAL end */
	bool		reply_requested;
	const char *data;
	size_t		len;
	char	   *owned;			/* PQfreemem'd by rp_conn_release */
} RpMsg;

/* Connect with replication=database; conninfo may be a string or URI. */
extern int	rp_conn_open(RpConn *c, const char *conninfo, const char *progname);
extern void rp_conn_close(RpConn *c);

/*
 * Another replication connection to the server main is connected to, even
 * when conninfo lists several (a side session: IDENTIFY_SYSTEM while main
 * streams).
 */
extern int	rp_conn_open_beside(RpConn *c, const RpConn *main, const char *conninfo,
								const char *progname);

/*
 * A clean end of the stream, as pg_recvlogical's on SIGINT: CopyDone, then
 * wait (at most timeout_ms) until it and the status update sent before it
 * have left and the server ended the copy; then close.  What the server
 * sends meanwhile is dropped (never confirmed).
 */
extern void rp_conn_finish(RpConn *c, int timeout_ms);
extern int	rp_conn_identify(RpConn *c);
extern int	rp_conn_slot_info(RpConn *c, const char *slot, RpSlotInfo *info);

/* TIMELINE_HISTORY tli: the history file's text into *text (caller frees with rp_free). */
extern int	rp_conn_timeline_history(RpConn *c, uint32_t tli, char **text, size_t *len);
extern int	rp_conn_create_slot(RpConn *c, const char *slot, const char *plugin, bool if_not_exists,
								bool failover);
extern int	rp_conn_drop_slot(RpConn *c, const char *slot);

/*
 * Failover slots (PostgreSQL 17+): a logical slot created or altered with
 * FAILOVER is synchronized to physical standbys that ask for it
 * (docs/operations.md, "Failover slots").
 */
#define RP_CONN_FAILOVER_MIN_VERSION 170000

/*
 * 0 when the server knows the FAILOVER option; else -1 after rp_fail
 * (RP_HALT_CONFIG) naming option (the program's word for it) and the
 * server's version.
 */
extern int	rp_conn_need_failover(RpConn *c, const char *option);

/*
 * CREATE_REPLICATION_SLOT of a logical slot into cmd: snapshot is "export"
 * or "nothing", failover adds FAILOVER.  The option list is PostgreSQL
 * 15's; an older server_version gets the keywords (and never failover: the
 * caller checked).  false when it does not fit.
 */
extern bool rp_conn_create_command(char *cmd, size_t len, const char *slot, const char *plugin,
								   const char *snapshot, bool failover, int server_version);

/* ALTER_REPLICATION_SLOT slot (FAILOVER true|false) (17+). */
extern int	rp_conn_alter_slot(RpConn *c, const char *slot, bool failover);

/* options: NULL-terminated "name", "value" pairs, quoted here. */
extern int	rp_conn_start(RpConn *c, const char *slot, uint64_t startpos, char *const *options);

/* Wait up to timeout_ms for the socket, then read one message. */
extern int	rp_conn_read(RpConn *c, RpMsg *msg, int timeout_ms);
extern void rp_conn_release(RpMsg *msg);

/* Standby status update: write = received, flush = apply = durable. */
extern int	rp_conn_feedback(RpConn *c, uint64_t flush_lsn, bool request_reply);

/*
 * The 34-byte standby status update rp_conn_feedback sends: positions past
 * c->server_wal_end are reported as server_wal_end (nothing is acknowledged
 * beyond what the server has).
 */
extern void rp_conn_status_message(const RpConn *c, uint64_t flush_lsn, bool request_reply,
								   int64_t now_us, unsigned char m[34]);
#endif							/* RP_CONN_H */
