/*
 * rp_source.h
 *    Where a run's frames come from (rp_run.h): one interface, two
 *    implementations.  The replication slot (rp_source_slot.c: the
 *    walsender's stream, as pg_recvlogical reads it, acknowledged with
 *    standby status updates) and a JetStream stream the NATS sink wrote
 *    (rp_source_nats.c over natsrc/: nothing acknowledged upstream, the
 *    stream sequence rides with each transaction into the checkpoint).
 *
 * The run calls open once per connection, read until it ends, feedback
 * with what is durable (never more, G2), finish on a clean end and close
 * after trouble; free once, after the run.
 */
#ifndef RP_SOURCE_H
#define RP_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rp_event.h"
#include "natsrc/rp_natsrc.h"
#include "snapshot/rp_snapcat.h"
#include "base/rp_ckpt.h"

typedef enum RpSourceKind
{
	RP_SOURCE_NONE,				/* nothing within the wait */
	RP_SOURCE_FRAME,			/* a frame for rp_asm_frame */
	RP_SOURCE_POSITION,			/* a position without data (a keepalive, an
								 * empty transaction) */
	RP_SOURCE_END				/* the server ended the stream */
} RpSourceKind;

typedef struct RpSourceRead
{
	RpSourceKind kind;
	const unsigned char *data;	/* FRAME: valid until the next read or close */
	size_t		len;
	uint64_t	lsn;			/* FRAME: its WAL (or commit) position;
								 * POSITION: the end LSN */
	uint64_t	seq;			/* a stream's sequence of the last message
								 * read; 0 from a slot */
	bool		ends;			/* FRAME: it completes a transaction (a
								 * slot's: every frame) */
	bool		reply_requested;	/* POSITION: the server asks for a status
									 * update now */
} RpSourceRead;

/* What a connection starts from, and what the source tells back. */
typedef struct RpSourceOpen
{
	RpCheckpoint ck;			/* in: what is durable (the first time: the
								 * checkpoint read) */
	bool		have_ck;		/* ck is a checkpoint (not an empty start) */
	uint64_t	held_end;		/* in: the highest end LSN this run holds,
								 * durable or still on its way to the sink, at
								 * least ck.end_lsn (what a timeline switch
								 * must not cut) */
	bool		first;			/* the run's first connection: it binds the
								 * checkpoint */
	bool		early;			/* the sink applies streamed transactions
								 * before their commit */
	RpCheckpoint bind;			/* out: the source's identity (system id,
								 * timeline, source); without a checkpoint,
								 * end_lsn: where the stream starts (a slot's
								 * confirmed position, or the start position
								 * given), the origin floor */
	RpEvent		up;				/* out: CONN_UP's fields (the start LSN, or
								 * the stream) */
} RpSourceOpen;

/* What is known of the source's end, for the progress figures. */
typedef struct RpSourceEnd
{
	bool		by_seq;			/* positions are stream sequences, not WAL
								 * bytes */
	uint64_t	end;			/* the server's WAL end, or the stream's last
								 * sequence; 0 unknown */
	int			server_version; /* the source server's (PQserverVersion); 0
								 * unknown or none */
	bool		sent_all;		/* a slot: the server has sent what it had
								 * when this connection began */
} RpSourceEnd;

typedef struct RpSource RpSource;

struct RpSource
{
	/*
	 * Positions are the server's keepalives (throttled, recorded only while
	 * nothing is in flight, answered when asked), not the stream's own
	 * messages (each recorded, held while a transaction is in flight).
	 */
	bool		keepalives;

	/*
	 * Connect and start reading after o->ck.  0, or -1 after rp_fail (retried
	 * unless a halt).
	 */
	int			(*open) (RpSource *src, RpSourceOpen *o);

	/*
	 * The next thing within timeout_ms: 0 (r set, maybe NONE), or -1 after
	 * rp_fail.
	 */
	int			(*read) (RpSource *src, RpSourceRead *r, int timeout_ms);

	/*
	 * Report durable_lsn upstream: at most once per status interval unless
	 * force.  NULL: a source that acknowledges nothing.
	 */
	int			(*feedback) (RpSource *src, uint64_t durable_lsn, bool force, bool request_reply);

	/*
	 * The timeline every position read so far lies on, asked of the source
	 * now, into *tli (0: it cannot have moved, as a primary's under a live
	 * connection).  false when it could not be asked: the caller records no
	 * idle position this time.  NULL: a source without timelines.
	 */
	bool		(*timeline_now) (RpSource *src, uint32_t *tli);

	/*
	 * A clean end (endpos, a stop): the last feedback, then the stream ended
	 * politely.
	 */
	void		(*finish) (RpSource *src, uint64_t durable_lsn);

	/*
	 * After trouble: disconnect; what was half read comes again on the next
	 * open.
	 */
	void		(*close) (RpSource *src);
	void		(*end) (const RpSource *src, RpSourceEnd *e);
	void		(*free) (RpSource *src);
};

/* ---- the replication slot (rp_source_slot.c) ---- */

/* decoding_work_mem_kb: leave the server's logical_decoding_work_mem alone */
#define RP_SOURCE_WORK_MEM_SERVER UINT64_MAX

typedef struct RpSlotSourceOptions
{
	const char *conninfo;		/* a database name, conninfo or URI */
	const char *progname;		/* application_name */
	const char *slot;
	uint64_t	startpos;		/* 0: from the checkpoint */
	char	   *const *plugin_options;	/* name, value pairs */
	int			noptions;		/* pairs */

	/*
	 * 0: lowered for an early-applying sink only; RP_SOURCE_WORK_MEM_SERVER:
	 * untouched
	 */
	uint64_t	decoding_work_mem_kb;
	RpSnapSelect select;		/* the plugin's table patterns, checked at the
								 * first start */
	int			status_interval_ms;
	void		(*log_info) (void *arg, const char *line);	/* -v lines, or NULL */
	void	   *log_arg;
} RpSlotSourceOptions;

/* The options are copied (not the strings they point to); NULL after rp_fail. */
extern RpSource *rp_source_slot_new(const RpSlotSourceOptions *o);

/* ---- a JetStream stream (rp_source_nats.c) ---- */

/* Reads nsrc (the caller's, freed by it after the source); stream names CONN_UP. */
extern RpSource *rp_source_nats_new(RpNatsSrc *nsrc, const char *stream);

#endif							/* RP_SOURCE_H */
