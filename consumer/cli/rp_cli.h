/*
 * rp_cli.h
 *    The replicant program, shaped like pg_recvlogical: what its files
 *    share.  main.c picks the action; rp_cli_options.c parses the command
 *    line into an RpCli; rp_cli_run.c runs the slot actions, and the stream
 *    through the library's run engine (run/rp_run.h; rp_cli_snapshot.c the
 *    copies it starts: --snapshot, --backfill);
 *    rp_cli_verify.c is `replicant verify-snapshot`; rp_cli_log.c the
 *    messages, with PostgreSQL's frontend logging signatures;
 *    rp_cli_config.c reads --config FILE (rp_cli_config.h).
 */
#ifndef RP_CLI_H
#define RP_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/rp_cliparse.h"
#include <stdint.h>
#include <stdio.h>

#include "agg/rp_agg.h"
#include "run/rp_source.h"
#include "stream/rp_sink.h"
#include "sinks/log/rp_logsink.h"
#include "sinks/mirror/rp_mirror.h"
#include "sinks/nats/rp_nats.h"
#include "snapshot/rp_snapshot.h"
#include "stream/rp_deliver.h"

#define RP_CLI_PROGNAME "replicant"
#define RP_VERSION "0.1.0"

/* --decoding-work-mem: "server" leaves the server's setting alone */
#define RP_DECODING_WORK_MEM_SERVER RP_SOURCE_WORK_MEM_SERVER
/* --exec-ack-timeout's default (s): long enough for a child that fsyncs a large batch */
#define RP_EXEC_ACK_TIMEOUT_DEFAULT 300

/* rp_cli_parse's result when the program goes on to an action */
#define RP_CLI_RUN (-1)

/*
 * The connection options every command takes (rp_cli_conninfo.c): their
 * getopt letters are -d -h -p -U -w -W; a command lists those it accepts
 * in its short options and RP_CLI_CONN_LONG_OPTIONS in its long ones.
 */
typedef struct RpCliConn
{
	const char *dbname;			/* -d: a database name, conninfo or URI */
	const char *host;			/* -h, -p, -U: override what -d says */
	const char *port;
	const char *username;
	bool		password_prompt;	/* -W (-w: false, the default) */
} RpCliConn;

#define RP_CLI_CONN_LONG_OPTIONS \
	{"dbname", required_argument, NULL, 'd'}, \
	{"host", required_argument, NULL, 'h'}, \
	{"port", required_argument, NULL, 'p'}, \
	{"username", required_argument, NULL, 'U'}, \
	{"no-password", no_argument, NULL, 'w'}, \
	{"password", no_argument, NULL, 'W'}

/* Take c when it is a connection option (true). */
extern bool rp_cli_conn_option(RpCliConn *cn, int c, const char *arg);

typedef struct RpCli
{
	RpCliConn	conn;			/* -d, -h, -p, -U, -w, -W as given */
	char	   *dbname;			/* -d, or the conninfo composed from conn */
	char	   *conninfo;		/* owned: -d with -h, -p, -U and the password */
	char	   *slot;
	bool		create_slot;
	bool		if_not_exists;
	bool		drop_slot;
	bool		alter_slot;		/* --alter-slot: set the slot's failover */
	bool		failover_given; /* --failover or --no-failover (the last wins) */
	bool		failover;
	bool		start;
	char	  **options;		/* name, value pairs, NULL-terminated */
	int			noptions;
	uint64_t	startpos;
	uint64_t	endpos;
	uint64_t	endpos_seq;		/* --endpos N: a stream sequence (--source) */
	const char *source;			/* --source nats://...: a JetStream stream,
								 * not a slot */
	const char *nats_subjects;	/* --nats-subjects: the data that reaches the
								 * sink */
	bool		nats_from_current_start;	/* --nats-from-current-start */
	int			status_interval_ms;
	bool		no_loop;
	int			verbose;
	char	   *sink;
	size_t		max_memory;
	uint64_t	max_spill;
	char	   *state_dir;
	char	   *spill_dir;
	RpBatchLimits limits;
	bool		progress;		/* --progress: the stream's line for the whole
								 * run */
	bool		no_progress;	/* --no-progress: no progress display at all */
	int			metrics_port;
	const char *metrics_address;	/* --metrics-address, or NULL: 127.0.0.1 */
	RpMirrorOptions pg;			/* mirror sink */
	RpNatsOptions nats;			/* NATS JetStream sink */
	bool		no_early_apply;
	uint64_t	decoding_work_mem_kb;	/* 0: default (see
										 * set_decoding_work_mem) */
	RpAgg	   *agg;			/* live aggregate bindings, or NULL */
	struct RpCliConfig *config; /* --config's file: owns its option words */
	bool		agg_only;
	bool		snapshot;		/* initial snapshot before streaming */
	int			snapshot_workers;
	uint64_t	snapshot_chunk_rows;
	uint64_t	max_record_bytes;	/* log sinks' snapshot envelope */
	uint64_t	max_dlq_bytes;
	char	   *dlq_file;
	RpBackfill *backfill_run;	/* their backfill (the sink gets it), or NULL */
	char	  **backfill;		/* --backfill tables, "schema.table" */
	int			nbackfill;
	uint64_t	backfill_chunk_rows;
	int			exec_ack_timeout_s; /* exec sink: 0 waits for ever */
	char		dlq_default[4096];	/* STATE-DIR/SLOT.dead-letter, without
									 * --dead-letter-file */
	char		snapshot_progress[4096];	/* STATE-DIR/SLOT.snapshot: the
											 * log sinks' (rp_snapresume.h) */
	char		spill_default[4096];	/* STATE-DIR/spill, without
										 * --spill-dir */
} RpCli;

/* ---- rp_cli_commands.c: the program's commands ---- */

typedef struct RpCliCommand
{
	const char *name;			/* argv[1] */
	int			(*main) (int argc, char **argv);	/* argv[0] is name; the
													 * exit status */
	const char *synopsis;		/* after the name, for --help */
	const char *summary;
} RpCliCommand;

/* NULL-terminated; --help lists them in this order. */
extern const RpCliCommand rp_cli_commands[];

/* The command of that name, or NULL (the program then streams: rp_cli_stream_main). */
extern const RpCliCommand *rp_cli_command(const char *name);

/* The program without a command: options, then the slot actions and the stream; the exit status. */
extern int	rp_cli_stream_main(int argc, char **argv);

/* ---- rp_cli_options.c ---- */

/*
 * Parse argv into cli (which it initializes).  RP_CLI_RUN when an action
 * is to run; else the exit status: 0 after --help or --version, 2 after a
 * usage error, which it has reported with the "Try --help" hint.  The
 * strings in cli point into argv.
 */
extern int	rp_cli_parse(RpCli *cli, int argc, char **argv);

/* What rp_cli_parse allocated (not cli->agg: rp_agg_free). */
extern void rp_cli_free(RpCli *cli);

/* The plugin option's value ("" for a bare -o NAME), or NULL. */
extern const char *rp_cli_plugin_option(const RpCli *cli, const char *name);

/* -o partitions=root: the stream names a partitioned table's root, not its partitions */
extern bool rp_cli_partitions_root(const RpCli *cli);

/* rp_cli_sink_known, rp_cli_sink_is_nats: cli/rp_cliparse.h */

/* ---- rp_cli_conninfo.c: the connection options, for every command ---- */
/*
 * dbname (a database name, a conninfo string or a URI, or NULL) as one
 * keyword/value conninfo, followed by the keys whose vals are not NULL
 * (NULL-terminated arrays): libpq takes the last of a keyword, so they
 * override what dbname says.  The caller owns the result; NULL when
 * dbname does not parse (err says why).
 */
extern char *rp_cli_conninfo(const char *dbname, const char *const *keys, const char *const *vals,
							 char *err, size_t errlen);

/*
 * -W's password: "Password: " on out, a line read from in without echo
 * when in is a terminal.  The caller owns it; NULL at end of input.
 */
extern char *rp_cli_read_password(FILE *in, FILE *out);

/*
 * The connection options as one conninfo (*out, owned by the caller):
 * -h, -p, -U and -W's password (prompted for here) folded over -d; NULL
 * when none is given and not always (-d is then passed on as written).
 * RP_CLI_RUN, or the exit status after the error was printed: as prog's
 * ("PROG: error: -d: ...", its --help hint), or as the program's (prog
 * NULL).
 */
extern int	rp_cli_conn_compose(const RpCliConn *cn, const char *prog, bool always, char **out);

/* rp_cli_conn_compose for the program: cli->conninfo, and cli->dbname what sessions open. */
extern int	rp_cli_compose_connection(RpCli *cli);

/* ---- rp_cli_signals.c ---- */

/* SIGINT, SIGTERM stop; SIGHUP reopens the sink; SIGPIPE ignored. */
extern void rp_cli_signals_install(void);

/* A SIGHUP since the last call (the run's take_reopen hook). */
extern bool rp_cli_take_reopen(void);

/* ---- rp_cli_run.c: the program's run over the library's (run/rp_run.h) ---- */

/* --create-slot (without --snapshot), --drop-slot; returns the exit status. */
extern int	rp_cli_slot_action(RpCli *cli);

/* --start: stream into the sink until endpos or a stop; the exit status. */
extern int	rp_cli_run_stream(RpCli *cli);

/* ---- rp_cli_snapshot.c ---- */

/*
 * --snapshot: copy (or finish copying) the selected tables into sink
 * before the stream starts; 0 or -1 (rp_error).
 */
/* rp_cli_help.c: --help */
extern void rp_cli_usage(void);

struct RpCliProgress;
extern int	rp_cli_snapshot(RpCli *cli, RpSink *sink, const char *ckpt_path,
							RpSnapStats *stats, struct RpCliProgress *progress,
							const RpEventHook *events);

/* The log sinks' snapshot progress file in the state dir; remove it (0, -1 rp_fail). */
extern void rp_cli_snapshot_progress_path(const RpCli *cli, char *path, size_t len);
extern int	rp_cli_snapshot_progress_clear(const RpCli *cli);

/* --backfill: start the copies that run beside the stream; 0 or -1. */
extern int	rp_cli_backfill_start(RpCli *cli, RpSink *sink);

/*
 * A subcommand's usage error: "PROG: error: ...", the --help hint; returns
 * RP_EXIT_USAGE (2).
 */
extern int	rp_cli_sub_usage_error(const char *prog, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* ---- rp_cli_verify.c: replicant verify-snapshot ---- */

/* Exit statuses beyond rp_status.h's 0 ok, 1 error, 2 usage. */
#define RP_VERIFY_EXIT_TRUNCATED 4	/* a snapshot truncated or conflicting */
#define RP_VERIFY_EXIT_OPEN      5	/* a snapshot open (and none truncated) */

/*
 * Tell complete snapshot dumps from truncated, open or conflicting ones in
 * append-sink output (rp_reassemble.h; docs/sinks.md).  argv[0] is
 * "verify-snapshot"; returns the exit status.
 */
extern int	rp_verify_snapshot_main(int argc, char **argv);

/* ---- rp_cli_seqsync.c, rp_cli_wait.c: replicant sync-sequences, replicant wait ---- */

/* argv[0] is the subcommand's name; each returns the exit status (its --help lists them). */
extern int	rp_seqsync_main(int argc, char **argv);
extern int	rp_wait_main(int argc, char **argv);

/* --sink's destination conninfo (postgresql://..., postgres:CONNINFO), or NULL. */
extern const char *rp_cli_pg_sink_conninfo(const char *sink);

/*
 * The sequence options both subcommands take (sync-sequences, and wait
 * with --sync-sequences): their getopt codes, their long_options entries,
 * and their handler.  RP_CLI_SEQ_TAKEN when c was one of them,
 * RP_CLI_SEQ_OTHER when not, else the usage error's exit status (printed
 * under prog).
 */
enum
{
	RP_CLI_SEQ_MARGIN = 400, RP_CLI_SEQ_CREATE, RP_CLI_SEQ_PREFIX
};
#define RP_CLI_SEQ_LONG_OPTIONS \
	{"margin", required_argument, NULL, RP_CLI_SEQ_MARGIN}, \
	{"create-tables", no_argument, NULL, RP_CLI_SEQ_CREATE}, \
	{"option", required_argument, NULL, 'o'}, \
	{"schema-prefix", required_argument, NULL, RP_CLI_SEQ_PREFIX}
#define RP_CLI_SEQ_TAKEN (-1)
#define RP_CLI_SEQ_OTHER (-2)
struct RpSeqSyncOptions;
extern int	rp_cli_seqsync_option(struct RpSeqSyncOptions *so, int c, const char *arg, const char *prog);

/* ---- rp_cli_dbverify.c: replicant verify (migrate/rp_dbverify.h) ---- */

/* The mirror compared with its source; argv[0] is "verify"; returns the exit status. */
extern int	rp_dbverify_main(int argc, char **argv);

/* ---- rp_cli_log.c: PostgreSQL's frontend logging, for this program ---- */

/* Messages of pg_log_info are shown from this level (-v) on. */
extern void rp_cli_log_set_verbose(int verbose);

/* The progress display a log line erases first and draws again after (NULL: none). */
struct RpProgress;
extern void rp_cli_log_set_progress(struct RpProgress *p);

/* A whole line on stderr as the log prints it (the library's notices: RpSnapOptions.log_fn). */
extern void rp_cli_log_line(const char *line);
extern void pg_log_error(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void pg_log_info(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/* A usage error: the message, then the "Try --help" line; returns 2. */
extern int	rp_cli_usage_error(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/*
 * Usage errors from now on start with where (a --config file's line; NULL:
 * none), and leave the message out when hide_value (a secret's value).
 */
extern void rp_cli_log_set_context(const char *where, bool hide_value);

#endif							/* RP_CLI_H */
