/*
 * test_cliparse.c
 *    rp_cliparse: the command line's sizes, integers and booleans, and
 *    whether the plugin options let the backfill's watermarks through.
 *    Guarantee (G3, G5): a negative, overflowing or out-of-range size is
 *    refused, never taken as a huge limit; a --backfill whose watermarks
 *    the plugin would filter out is refused at start (it would wait for
 *    ever), with every spelling of false the server's parse_bool accepts.
 *    The command line (rp_cli_options.c, rp_cli_conninfo.c): -h, -p and -U override what -d
 *    says, as pg_recvlogical's do, and every usage error says
 *    "replicant: error: ..." and then the "Try --help" line, exit 2.
 *    --failover and --no-failover go with --create-slot or --alter-slot
 *    alone, and the slot commands carry FAILOVER only when asked.
 */
#include "ct_kit.h"

#include <libpq-fe.h>

#include "cli/rp_cli.h"
#include "cli/rp_cliparse.h"
#include "stream/rp_conn.h"

#define BIG ((uint64_t) 1 << 50)

START_TEST(test_size_valid)
{
	uint64_t	v;

	ck_assert(rp_parse_size("1048576", 1, BIG, &v));
	ck_assert_uint_eq(v, 1048576);
	ck_assert(rp_parse_size("512kB", 1, BIG, &v));
	ck_assert_uint_eq(v, 512 << 10);
	ck_assert(rp_parse_size("64MB", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 64 << 20);
	ck_assert(rp_parse_size("64mb", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 64 << 20);
	ck_assert(rp_parse_size("1GB", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 1 << 30);
	ck_assert(rp_parse_size("2TB", 1, BIG, &v));
	ck_assert_uint_eq(v, (uint64_t) 2 << 40);
	ck_assert(rp_parse_size("7B", 1, BIG, &v));
	ck_assert_uint_eq(v, 7);
	/* the bounds themselves are in range */
	ck_assert(rp_parse_size("1024TB", 1, BIG, &v));
	ck_assert_uint_eq(v, BIG);
	ck_assert(rp_parse_size("1GB", 1, (uint64_t) 1 << 30, &v));
	/* the whole 64-bit range when the caller allows it */
	ck_assert(rp_parse_size("18446744073709551615", 0, UINT64_MAX, &v));
	ck_assert_uint_eq(v, UINT64_MAX);
}

END_TEST

START_TEST(test_size_refused)
{
	static const char *const bad[] = {
		"", "-5MB", "-1", "+1", " 1", "1 ", "1MB ", "MB", "1XB", "1M", "1.5GB", "0x10",
		"1kBB", "18446744073709551616", "99999999999999999999", "99999999999TB",
		"16777216TB",			/* 2^24 TB = 2^64: the shift overflows */
		"17179869184GB",		/* 2^34 GB = 2^64 */
		"0",					/* below min 1 */
		"1025TB",				/* above max */
	};
	uint64_t	v = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!rp_parse_size(bad[i], 1, BIG, &v), "\"%s\" was accepted", bad[i]);
	ck_assert_uint_eq(v, 42);	/* untouched on failure */
	ck_assert(!rp_parse_size(NULL, 1, BIG, &v));
	/* --batch-bytes' bound */
	ck_assert(!rp_parse_size("1025MB", 1, (uint64_t) 1 << 30, &v));
	ck_assert(!rp_parse_size("1073741825", 1, (uint64_t) 1 << 30, &v));
	/* a shift that keeps every bit is no overflow */
	ck_assert(rp_parse_size("16777215TB", 0, UINT64_MAX, &v));
	ck_assert_uint_eq(v, (uint64_t) 16777215 << 40);
}

END_TEST

START_TEST(test_int)
{
	int			v = 7;

	ck_assert(rp_parse_int("0", 0, 10, &v));
	ck_assert_int_eq(v, 0);
	ck_assert(rp_parse_int("10", 0, 10, &v));
	ck_assert_int_eq(v, 10);
	ck_assert(rp_parse_int("-3", -5, 5, &v));
	ck_assert_int_eq(v, -3);
	ck_assert(rp_parse_int("2147483647", 0, INT32_MAX, &v));
	ck_assert_int_eq(v, INT32_MAX);
	ck_assert(rp_parse_int("-2147483648", INT32_MIN, 0, &v));
	ck_assert_int_eq(v, INT32_MIN);
	v = 7;
	ck_assert(!rp_parse_int("11", 0, 10, &v));
	ck_assert(!rp_parse_int("-1", 0, 10, &v));
	ck_assert(!rp_parse_int("", 0, 10, &v));
	ck_assert(!rp_parse_int("-", 0, 10, &v));
	ck_assert(!rp_parse_int(" 1", 0, 10, &v));
	ck_assert(!rp_parse_int("+1", 0, 10, &v));
	ck_assert(!rp_parse_int("1x", 0, 10, &v));
	ck_assert(!rp_parse_int("2147483648", 0, INT32_MAX, &v));
	ck_assert(!rp_parse_int("4294967297", 0, INT32_MAX, &v));	/* wraps to 1 in 32 bits */
	ck_assert(!rp_parse_int("99999999999999999999", 0, INT32_MAX, &v));
	ck_assert(!rp_parse_int("-2147483649", INT32_MIN, 0, &v));
	ck_assert_int_eq(v, 7);
}

END_TEST

START_TEST(test_bool)
{
	static const char *const yes[] = {"true", "TRUE", "t", "tr", "tru", "yes", "Y", "ye", "on", "ON", "1"};
	static const char *const no[] = {"false", "FALSE", "f", "fa", "fal", "fals", "no", "N", "off", "OFF",
	"of", "0"};
	static const char *const neither[] = {"", "o", "2", "truee", "yess", "offf", "nope", "01", " on",
	"on ", "-1", "enable"};
	bool		v;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(rp_parse_bool(yes[i], &v) && v, "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(rp_parse_bool(no[i], &v) && !v, "%s", no[i]);
	for (size_t i = 0; i < sizeof(neither) / sizeof(neither[0]); i++)
		ck_assert_msg(!rp_parse_bool(neither[i], &v), "%s", neither[i]);
}

END_TEST

START_TEST(test_messages_pass)
{
	const char *p = "replicant.backfill";

	/* not given, bare (true), or true: every prefix */
	ck_assert_int_eq(rp_messages_pass(NULL, NULL, p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("", NULL, p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("on", NULL, p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("Yes", NULL, p), RP_MSG_PASS_YES);
	/* every spelling of false */
	ck_assert_int_eq(rp_messages_pass("no", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("n", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("f", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("OFF", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("0", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("fAlSe", NULL, p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass("of", "replicant.backfill", p), RP_MSG_PASS_NO);
	/* a value the server refuses is left to it */
	ck_assert_int_eq(rp_messages_pass("maybe", NULL, p), RP_MSG_PASS_UNKNOWN);

	/* message_prefixes, split like SplitIdentifierString */
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant.backfill", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "a, replicant.backfill ,b", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "Replicant.Backfill", p), RP_MSG_PASS_YES); /* folded */
	ck_assert_int_eq(rp_messages_pass(NULL, "\"replicant.backfill\"", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass("true", "x,\"replicant.backfill\"", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "", p), RP_MSG_PASS_YES);	/* empty list: all */
	ck_assert_int_eq(rp_messages_pass(NULL, "  ", p), RP_MSG_PASS_YES);
	ck_assert_int_eq(rp_messages_pass(NULL, "app", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "app,audit", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"Replicant.backfill\"", p), RP_MSG_PASS_NO);	/* quoted: exact */
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant.backfill2", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "replicant.backfil", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"\"", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"replicant.\"\"backfill\"", p), RP_MSG_PASS_NO);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"a\"\"b\",replicant.backfill", p), RP_MSG_PASS_YES);
	/* syntax the server refuses */
	ck_assert_int_eq(rp_messages_pass(NULL, "a,,b", p), RP_MSG_PASS_UNKNOWN);
	ck_assert_int_eq(rp_messages_pass(NULL, "\"unterminated", p), RP_MSG_PASS_UNKNOWN);
	ck_assert_int_eq(rp_messages_pass(NULL, "a b", p), RP_MSG_PASS_UNKNOWN);
	ck_assert_int_eq(rp_messages_pass(NULL, "a,", p), RP_MSG_PASS_UNKNOWN);
}

END_TEST


/* ---- the command line (rp_cli_options.c) ------------------------------------------- */

#define TRY_HELP "Try \"replicant --help\" for more information.\n"

/* keyword's value in conninfo as libpq reads it (the caller frees), or NULL */
static char *
conn_value(const char *conninfo, const char *keyword)
{
	char	   *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
	char	   *val = NULL;

	ck_assert_msg(opts != NULL, "\"%s\" does not parse: %s", conninfo, err ? err : "");
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (strcmp(o->keyword, keyword) == 0 && o->val)
			val = strdup(o->val);
	PQconninfoFree(opts);
	return val;
}

static void
assert_conn(const char *conninfo, const char *keyword, const char *want)
{
	char	   *got = conn_value(conninfo, keyword);

	if (want == NULL)
		ck_assert_msg(got == NULL, "%s: %s=%s, expected none", conninfo, keyword, got);
	else
	{
		ck_assert_msg(got != NULL, "%s: no %s", conninfo, keyword);
		ck_assert_str_eq(got, want);
	}
	free(got);
}

START_TEST(test_conninfo)
{
	const char *keys[] = {"host", "port", "user", "password", NULL};
	const char *none[] = {NULL, NULL, NULL, NULL, NULL};
	const char *all[] = {"/tmp/sock dir", "5433", "o'brien", "p\\w'd", NULL};
	char		err[256];
	char	   *c;

	/* a database name */
	c = rp_cli_conninfo("mydb", keys, all, err, sizeof(err));
	assert_conn(c, "dbname", "mydb");
	assert_conn(c, "host", "/tmp/sock dir");
	assert_conn(c, "port", "5433");
	assert_conn(c, "user", "o'brien");
	assert_conn(c, "password", "p\\w'd");
	rp_free(c);
	/* a conninfo string: the overrides win, the rest stays */
	c = rp_cli_conninfo("host=h1 port=1 dbname=src application_name='a b'", keys, all, err, sizeof(err));
	assert_conn(c, "dbname", "src");
	assert_conn(c, "host", "/tmp/sock dir");
	assert_conn(c, "port", "5433");
	assert_conn(c, "application_name", "a b");
	rp_free(c);
	/* a URI, only -U given */
	{
		const char *u[] = {NULL, NULL, "bob", NULL, NULL};

		c = rp_cli_conninfo("postgresql://alice@h2:6000/src?sslmode=disable", keys, u, err, sizeof(err));
		assert_conn(c, "host", "h2");
		assert_conn(c, "port", "6000");
		assert_conn(c, "user", "bob");
		assert_conn(c, "dbname", "src");
		assert_conn(c, "sslmode", "disable");
		rp_free(c);
	}
	/* no -d: only the overrides; the PG* environment fills the rest, in libpq */
	c = rp_cli_conninfo(NULL, keys, all, err, sizeof(err));
	assert_conn(c, "dbname", NULL);
	assert_conn(c, "host", "/tmp/sock dir");
	rp_free(c);
	c = rp_cli_conninfo(NULL, keys, none, err, sizeof(err));
	ck_assert_str_eq(c, "");
	rp_free(c);
	/* a string libpq refuses */
	ck_assert_ptr_null(rp_cli_conninfo("host='unterminated", keys, all, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "invalid connection string"));
	ck_assert_ptr_null(rp_cli_conninfo("nosuchkeyword=1", keys, all, err, sizeof(err)));
}

END_TEST


START_TEST(test_parse_connection)
{
	RpCli		cli;
	char	   *err;

	{
		const char *const args[] = {"-d", "host=h1 dbname=src", "-h", "/tmp/x", "-p", "5433",
		"-U", "bob", "-S", "s", "--start", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert_str_eq(err, "");
		assert_conn(cli.dbname, "host", "/tmp/x");
		assert_conn(cli.dbname, "port", "5433");
		assert_conn(cli.dbname, "user", "bob");
		assert_conn(cli.dbname, "dbname", "src");
		ck_assert_ptr_eq(cli.dbname, cli.conninfo);
		free(err);
		rp_cli_free(&cli);
	}
	{
		const char *const args[] = {"--host=/tmp/y", "--port=1", "--username=u", "-S", "s",
		"--create-slot", "-W", "-w", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert(!cli.conn.password_prompt);	/* the last of -W and -w wins */
		assert_conn(cli.dbname, "host", "/tmp/y");
		assert_conn(cli.dbname, "port", "1");
		assert_conn(cli.dbname, "user", "u");
		assert_conn(cli.dbname, "dbname", NULL);
		free(err);
		rp_cli_free(&cli);
	}
	{
		/* a stream reader: no -d, the end as a sequence */
		const char *const args[] = {"--source", "nats://h:1,h:2", "--nats-stream", "REPLICANT_cdc", "-S", "r1",
		"--start", "--endpos", "42", "--nats-subjects", "replicant.cdc.public.*", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert_str_eq(err, "");
		ck_assert_str_eq(cli.source, "nats://h:1,h:2");
		ck_assert_str_eq(cli.nats.stream, "REPLICANT_cdc");
		ck_assert_str_eq(cli.nats_subjects, "replicant.cdc.public.*");
		ck_assert_uint_eq(cli.endpos_seq, 42);
		ck_assert_uint_eq(cli.endpos, 0);
		free(err);
		rp_cli_free(&cli);
	}
	{
		/*
		 * --pipeline-max: a bound, or 0 for none (every table through
		 * staging)
		 */
		const char *const args[] = {"-S", "s", "--start", "--sink", "postgres:", "--pipeline-max", "7", NULL};
		const char *const off[] = {"-S", "s", "--start", "--sink", "postgres:", "--pipeline-max", "0", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert_int_eq(cli.pg.pipeline_max, 7);
		free(err);
		rp_cli_free(&cli);
		ck_assert_int_eq(ct_cli_parse(&cli, &err, off), RP_CLI_RUN);
		ck_assert_int_eq(cli.pg.pipeline_max, -1);
		free(err);
		rp_cli_free(&cli);
	}
	{
		/* -d alone is passed on as written: nothing composed */
		const char *const args[] = {"-d", "postgresql:///src?host=/tmp", "-S", "s", "--start", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert_str_eq(cli.dbname, "postgresql:///src?host=/tmp");
		ck_assert_ptr_null(cli.conninfo);
		free(err);
		rp_cli_free(&cli);
	}
}

END_TEST

/* Every way option parsing ends in a usage error prints the hint and exits 2. */
START_TEST(test_usage_errors)
{
	static const struct
	{
		const char *args[12];
		const char *says;
	}			cases[] = {
		{{"-S", "s", "--start", "--bogus", NULL}, "unrecognized option \"--bogus\""},
		{{"-S", "s", "--start", "--bogus=1", NULL}, "unrecognized option \"--bogus\""},
		{{"-S", "s", "--start", "--snap", NULL}, "option \"--snap\" is ambiguous"},
		{{"-S", "s", "--start", "--no-loop=1", NULL}, "option \"--no-loop\" does not take an argument"},
		{{"-S", "s", "--start", "--sink", NULL}, "option \"--sink\" requires an argument"},
		{{"-S", "s", "--start", "-x", NULL}, "invalid option -- 'x'"},
		{{"-S", "s", "--start", "-nx", NULL}, "invalid option -- 'x'"},
		{{"--start", "-S", NULL}, "option requires an argument -- 'S'"},
		{{"-S", "s", "--start", "-?", NULL}, "-? must be the first option"},
		{{"-S", "s", "--start", "--help", NULL}, "--help must be the first option"},
		{{"-S", "s", "--start", "extra", NULL}, "too many command-line arguments (first is \"extra\")"},
		{{"--start", NULL}, "no slot specified"},
		{{"-S", "s", NULL}, "at least one action needs to be specified"},
		{{"-S", "s", "--drop-slot", "--start", NULL}, "cannot use --create-slot or --start together with --drop-slot"},
		{{"-S", "s", "--create-slot", "--snapshot", NULL}, "--snapshot needs --start"},
		/* failover slots */
		{{"-S", "s", "--start", "--failover", NULL}, "--failover needs --create-slot or --alter-slot"},
		{{"-S", "s", "--drop-slot", "--failover", NULL}, "--failover needs --create-slot or --alter-slot"},
		{{"-S", "s", "--start", "--no-failover", NULL}, "--no-failover needs --create-slot or --alter-slot"},
		{{"-S", "s", "--alter-slot", NULL}, "--alter-slot needs --failover or --no-failover"},
		{{"-S", "s", "--alter-slot", "--start", NULL}, "--alter-slot needs --failover or --no-failover"},
		{{"-S", "s", "--alter-slot", "--create-slot", "--failover", NULL}, "cannot use --alter-slot together with --create-slot"},
		{{"-S", "s", "--alter-slot", "--drop-slot", "--failover", NULL}, "cannot use --alter-slot together with --create-slot or --drop-slot"},
		{{"-S", "s", "--failover", "--no-failover", NULL}, "at least one action needs to be specified"},
		{{"-S", "s", "--failover=on", "--create-slot", NULL}, "option \"--failover\" does not take an argument"},
		{{"-S", "s", "--start", "--alter-slot", "--failover", "--source", "nats://h:1", "--nats-stream", "S", NULL},
		"no --create-slot, --alter-slot or --drop-slot"},
		{{"-S", "s", "--start", "-o", "format=json", NULL}, "plugin option \"format=json\" is set by replicant itself"},
		{{"-S", "s", "--start", "-o", "proto_version", NULL}, "plugin option \"proto_version\" is set by replicant itself"},
		{{"-S", "s", "--start", "-I", "x", NULL}, "could not parse start position \"x\""},
		{{"-S", "s", "--start", "-E", "1/", NULL}, "could not parse end position \"1/\""},
		{{"-S", "s", "--start", "-s", "-1", NULL}, "invalid value \"-1\" for option --status-interval"},
		{{"-S", "s", "--start", "--max-memory", "0", NULL}, "invalid value \"0\" for option --max-memory"},
		{{"-S", "s", "--start", "--max-spill", "1XB", NULL}, "invalid value \"1XB\" for option --max-spill"},
		{{"-S", "s", "--start", "--batch-bytes", "2GB", NULL}, "invalid value \"2GB\" for option --batch-bytes (1 byte to 1GB)"},
		{{"-S", "s", "--start", "--batch-txns", "0", NULL}, "invalid value \"0\" for option --batch-txns (1 to 1000000)"},
		{{"-S", "s", "--start", "--batch-ms", "x", NULL}, "invalid value \"x\" for option --batch-ms"},
		{{"-S", "s", "--start", "--decoding-work-mem", "1kB", NULL}, "invalid value \"1kB\" for option --decoding-work-mem"},
		{{"-S", "s", "--start", "--metrics-port", "70000", NULL}, "invalid value \"70000\" for option --metrics-port"},
		{{"-S", "s", "--start", "--exec-ack-timeout", "-1", NULL}, "invalid value \"-1\" for option --exec-ack-timeout"},
		{{"-S", "s", "--start", "--max-record-bytes", "-1kB", NULL}, "invalid value \"-1kB\" for option --max-record-bytes"},
		{{"-S", "s", "--start", "--max-dlq-bytes", "", NULL}, "invalid value \"\" for option --max-dlq-bytes"},
		{{"-S", "s", "--start", "--snapshot-workers", "65", NULL}, "invalid value \"65\" for option --snapshot-workers"},
		{{"-S", "s", "--start", "--snapshot-chunk-rows", "0", NULL}, "invalid value \"0\" for option --snapshot-chunk-rows"},
		{{"-S", "s", "--start", "--backfill-chunk-rows", "x", NULL}, "invalid value \"x\" for option --backfill-chunk-rows"},
		{{"-S", "s", "--start", "--on-destructive", "x", NULL}, "invalid value \"x\" for --on-destructive (halt, skip or apply)"},
		{{"-S", "s", "--start", "--bookkeeping-schema", "", NULL}, "invalid value \"\" for --bookkeeping-schema"},
		{{"-S", "s", "--start", "--on-divergence", "x", NULL}, "invalid value \"x\" for --on-divergence (halt or skip)"},
		{{"-S", "s", "--start", "--pipeline-max", "-1", NULL}, "invalid value \"-1\" for option --pipeline-max (0 to 100000)"},
		{{"-S", "s", "--start", "--pipeline-max", "100001", NULL}, "invalid value \"100001\" for option --pipeline-max"},
		{{"-S", "s", "--start", "--aggregate", "bad", NULL}, "aggregate --aggregate: expected KEY=VALUE"},
		{{"-S", "s", "--start", "--aggregates", "/nonexistent/aggs", NULL}, "/nonexistent/aggs"},
		{{"-S", "s", "--start", "--aggregates-only", "--sink", "postgres:", NULL}, "--aggregates-only needs at least one --aggregate or --aggregates"},
		{{"-S", "s", "--start", "--aggregate", "name=a source=public.t dims=a measure=b agg=sum output=stdout", NULL},
		"aggregate bindings need the PostgreSQL sink"},
		{{"-S", "s", "--start", "--backfill", "public.t", NULL}, "--backfill needs --start and the PostgreSQL sink"},
		{{"-S", "s", "--start", "--sink", "postgres:", "--backfill", "public.t", "-o", "include_messages=off", NULL},
		"-o include_messages=off filters them out"},
		{{"-S", "s", "--start", "--sink", "postgres:", "--backfill", "public.t", "-o", "message_prefixes=app", NULL},
		"-o message_prefixes=app filters them out"},
		{{"-S", "s", "--start", "--sink", "kafka:x", NULL}, "unknown sink \"kafka:x\""},
		{{"-S", "s", "--start", "-d", "host='x", "-h", "/tmp", NULL}, "invalid connection string \"host='x\""},
		/* a stream as the source */
		{{"-S", "s", "--start", "--source", "postgres://x", NULL}, "invalid value \"postgres://x\" for option --source"},
		{{"-S", "s", "--start", "--source", "nats://h:1", NULL}, "--source nats://... needs --nats-stream NAME"},
		{{"-S", "s", "--create-slot", "--source", "nats://h:1", "--nats-stream", "S", NULL}, "needs --start, and no --create-slot"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "--snapshot", NULL}, "--snapshot and --backfill need a replication slot"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "-o", "a=b", NULL}, "-o and --startpos are for a replication slot"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "--sink", "nats://h:1", NULL}, "with --sink nats://... is not supported"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "-d", "db", NULL}, "only for the aggregate bindings' seed"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "--sink", "postgres:",
		"--aggregate", "name=a source=public.t dims=a measure=b agg=sum output=stdout", NULL}, "seed from the source database: give it with -d"},
		{{"--start", "--source", "nats://h:1", "--nats-stream", "S", NULL}, "no reader name specified"},
		{{"-S", "s", "--start", "-E", "12", NULL}, "--endpos as a stream sequence needs --source"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "-E", "0", NULL}, "invalid value \"0\" for option --endpos"},
		{{"-S", "s", "--start", "--nats-subjects", "a.>", NULL}, "--nats-subjects needs --source"},
		{{"-S", "s", "--start", "--source", "nats://h:1", "--nats-stream", "S", "--nats-subjects", "a b", NULL}, "invalid value \"a b\" for option --nats-subjects"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		RpCli		cli;
		char	   *err;
		int			rc = ct_cli_parse(&cli, &err, cases[i].args);
		size_t		len = strlen(err);

		ck_assert_msg(rc == RP_EXIT_USAGE, "case %zu (%s): exit %d", i, cases[i].says, rc);
		ck_assert_msg(strncmp(err, "replicant: error: ", 18) == 0, "case %zu: %s", i, err);
		ck_assert_msg(strstr(err, cases[i].says) != NULL, "case %zu: \"%s\" not in: %s", i, cases[i].says, err);
		/* one error line, then the hint */
		ck_assert_msg(len > strlen(TRY_HELP) && strcmp(err + len - strlen(TRY_HELP), TRY_HELP) == 0,
					  "case %zu: no hint: %s", i, err);
		ck_assert_int_eq(ct_count(err, "\n"), 2);
		free(err);
		rp_agg_free(cli.agg);
		rp_cli_free(&cli);
	}
}

END_TEST

/* The forms that go: the action and the setting as given, the last of the two flags winning. */
START_TEST(test_parse_failover)
{
	static const struct
	{
		const char *args[8];
		bool		create,
					alter,
					given,
					failover;
	}			cases[] = {
		{{"-S", "s", "--create-slot", NULL}, true, false, false, false},
		{{"-S", "s", "--create-slot", "--failover", NULL}, true, false, true, true},
		{{"-S", "s", "--create-slot", "--failover", "--snapshot", "--start", NULL}, true, false, true, true},
		{{"-S", "s", "--create-slot", "--no-failover", NULL}, true, false, true, false},
		{{"-S", "s", "--alter-slot", "--failover", NULL}, false, true, true, true},
		{{"-S", "s", "--alter-slot", "--no-failover", NULL}, false, true, true, false},
		{{"-S", "s", "--alter-slot", "--failover", "--no-failover", NULL}, false, true, true, false},
		{{"-S", "s", "--alter-slot", "--no-failover", "--failover", "--start", NULL}, false, true, true, true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		RpCli		cli;
		char	   *err;

		ck_assert_msg(ct_cli_parse(&cli, &err, cases[i].args) == RP_CLI_RUN, "case %zu: %s", i, err);
		ck_assert_str_eq(err, "");
		ck_assert_msg(cli.create_slot == cases[i].create && cli.alter_slot == cases[i].alter &&
					  cli.failover_given == cases[i].given && cli.failover == cases[i].failover,
					  "case %zu: create %d alter %d given %d failover %d", i, cli.create_slot,
					  cli.alter_slot, cli.failover_given, cli.failover);
		free(err);
		rp_cli_free(&cli);
	}
}

END_TEST

/* FAILOVER only when asked; the option list from 15 on, the keywords before it. */
START_TEST(test_create_command)
{
	char		cmd[512];

	ck_assert(rp_conn_create_command(cmd, sizeof(cmd), "s", "replicant", "nothing", false, 170010));
	ck_assert_str_eq(cmd, "CREATE_REPLICATION_SLOT \"s\" LOGICAL \"replicant\" (SNAPSHOT 'nothing')");
	ck_assert(rp_conn_create_command(cmd, sizeof(cmd), "s", "replicant", "nothing", true, 170010));
	ck_assert_str_eq(cmd, "CREATE_REPLICATION_SLOT \"s\" LOGICAL \"replicant\" (SNAPSHOT 'nothing', FAILOVER)");
	ck_assert(rp_conn_create_command(cmd, sizeof(cmd), "My Slot", "replicant", "export", true, 180004));
	ck_assert_str_eq(cmd, "CREATE_REPLICATION_SLOT \"My Slot\" LOGICAL \"replicant\" (SNAPSHOT 'export', FAILOVER)");
	ck_assert(rp_conn_create_command(cmd, sizeof(cmd), "s", "replicant", "export", false, 150020));
	ck_assert_str_eq(cmd, "CREATE_REPLICATION_SLOT \"s\" LOGICAL \"replicant\" (SNAPSHOT 'export')");
	ck_assert(rp_conn_create_command(cmd, sizeof(cmd), "s", "replicant", "export", false, 140010));
	ck_assert_str_eq(cmd, "CREATE_REPLICATION_SLOT \"s\" LOGICAL \"replicant\" EXPORT_SNAPSHOT");
	ck_assert(rp_conn_create_command(cmd, sizeof(cmd), "s", "replicant", "nothing", false, 140010));
	ck_assert_str_eq(cmd, "CREATE_REPLICATION_SLOT \"s\" LOGICAL \"replicant\" NOEXPORT_SNAPSHOT");
	/* too small a buffer is said, never sent cut */
	ck_assert(!rp_conn_create_command(cmd, 20, "s", "replicant", "nothing", false, 170010));
}

END_TEST

START_TEST(test_help_version)
{
	static const char *const help[] = {"--help", NULL};
	static const char *const qhelp[] = {"-?", NULL};
	static const char *const version[] = {"-S", "s", "-V", NULL};
	RpCli		cli;
	char	   *err,
			   *out;

	ck_assert_int_eq(ct_cli_parse(&cli, &err, help), RP_EXIT_OK);
	out = ct_slurp(ct_path("parse.out"), NULL);
	/* grouped as the option table is */
	ck_assert_ptr_nonnull(strstr(out, "Action to be performed:"));
	ck_assert_ptr_nonnull(strstr(out, "\nConnection options:\n"));
	ck_assert_ptr_nonnull(strstr(out, "  -h, --host=HOSTNAME"));
	ck_assert_ptr_nonnull(strstr(out, "  -W, --password"));
	ck_assert_ptr_nonnull(strstr(out, "      --alter-slot "));
	ck_assert_ptr_nonnull(strstr(out, "      --failover "));
	ck_assert_ptr_nonnull(strstr(out, "      --no-failover "));
	ck_assert_ptr_nonnull(strstr(out, "\nSink options:\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nSnapshot and backfill options:\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nLive aggregates"));
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(ct_cli_parse(&cli, &err, qhelp), RP_EXIT_OK);
	free(err);
	ck_assert_int_eq(ct_cli_parse(&cli, &err, version), RP_EXIT_OK);
	out = ct_slurp(ct_path("parse.out"), NULL);
	ck_assert_ptr_nonnull(strstr(out, "replicant (replicant) "));
	free(out);
	free(err);
	rp_cli_free(&cli);
}

END_TEST

/* pg_log_info shows only with -v; pg_log_error always, both with the program's name. */
START_TEST(test_log)
{
	static const char *const quiet[] = {"-S", "s", "--start", NULL};
	static const char *const verbose[] = {"-S", "s", "--start", "-v", NULL};
	RpCli		cli;
	char	   *err;
	int			saved = dup(2);
	int			fe;

	ck_assert_int_eq(ct_cli_parse(&cli, &err, quiet), RP_CLI_RUN);
	free(err);
	rp_cli_free(&cli);
	fe = open(ct_path("log.err"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fe, 2);
	pg_log_info("hidden %d", 1);
	pg_log_error("shown %d", 2);
	fflush(stderr);
	dup2(saved, 2);
	close(fe);
	err = ct_slurp(ct_path("log.err"), NULL);
	ck_assert_str_eq(err, "replicant: error: shown 2\n");
	free(err);

	ck_assert_int_eq(ct_cli_parse(&cli, &err, verbose), RP_CLI_RUN);
	free(err);
	rp_cli_free(&cli);
	fe = open(ct_path("log.err"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fe, 2);
	pg_log_info("shown %d", 1);
	fflush(stderr);
	dup2(saved, 2);
	close(fe);
	close(saved);
	err = ct_slurp(ct_path("log.err"), NULL);
	ck_assert_str_eq(err, "replicant: shown 1\n");
	free(err);
	rp_cli_log_set_verbose(0);
}

END_TEST

/* verify-snapshot's usage errors too: the error, then its --help hint, exit 2. */
START_TEST(test_verify_usage_errors)
{
	static const struct
	{
		const char *args[4];
		const char *says;
	}			cases[] = {
		{{"--bogus", "f", NULL}, "unknown option or missing argument: --bogus"},
		{{"--rows", NULL}, "unknown option or missing argument: --rows"},
		{{"-q", NULL}, "no input file"},
		{{"--rows", "not-a-uuid", "f", NULL}, "--rows: not a snapshot id"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char	   *argv[8] = {"verify-snapshot"};
		int			argc = 1;
		int			saved = dup(2),
					fe,
					rc;
		char	   *err;

		for (const char *const *a = cases[i].args; *a; a++)
			argv[argc++] = (char *) *a;
		fflush(stderr);
		fe = open(ct_path("verify.err"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fe, 2);
		rc = rp_verify_snapshot_main(argc, argv);
		fflush(stderr);
		dup2(saved, 2);
		close(fe);
		close(saved);
		err = ct_slurp(ct_path("verify.err"), NULL);
		ck_assert_msg(rc == RP_EXIT_USAGE, "case %zu: exit %d", i, rc);
		ck_assert_msg(strncmp(err, "replicant verify-snapshot: error: ", 34) == 0, "case %zu: %s", i, err);
		ck_assert_msg(strstr(err, cases[i].says) != NULL, "case %zu: \"%s\" not in: %s", i, cases[i].says, err);
		ck_assert_msg(strstr(err, "\nTry \"replicant verify-snapshot --help\" for more information.\n") != NULL,
					  "case %zu: no hint: %s", i, err);
		free(err);
	}
}

END_TEST

/* -W's read: the prompt, the line without its newline, NULL at end of input. */
START_TEST(test_read_password)
{
	FILE	   *in,
			   *out;
	char	   *pw,
			   *said;

	ct_write_file(ct_path("pw"), "s3cr'et\\x\nnext\n", strlen("s3cr'et\\x\nnext\n"), false);
	in = fopen(ct_path("pw"), "r");
	out = fopen(ct_path("prompt"), "w");
	pw = rp_cli_read_password(in, out);
	ck_assert_str_eq(pw, "s3cr'et\\x");
	rp_free(pw);
	fclose(in);
	fclose(out);
	said = ct_slurp(ct_path("prompt"), NULL);
	ck_assert_str_eq(said, "Password: ");	/* not a terminal: no newline of
											 * its own */
	free(said);

	ct_write_file(ct_path("empty"), "", 0, false);
	in = fopen(ct_path("empty"), "r");
	out = fopen(ct_path("prompt"), "w");
	ck_assert_ptr_null(rp_cli_read_password(in, out));
	fclose(in);
	fclose(out);
}

END_TEST

Suite	   *
ct_suite_cliparse(void)
{
	Suite	   *s = suite_create("cliparse");
	TCase	   *tc = tcase_create("cliparse");

	tcase_add_test(tc, test_size_valid);
	tcase_add_test(tc, test_size_refused);
	tcase_add_test(tc, test_int);
	tcase_add_test(tc, test_bool);
	tcase_add_test(tc, test_messages_pass);
	suite_add_tcase(s, tc);
	tc = tcase_create("cli");
	tcase_add_checked_fixture(tc, ct_setup_dir, ct_teardown_dir);
	tcase_add_test(tc, test_conninfo);
	tcase_add_test(tc, test_parse_connection);
	tcase_add_test(tc, test_usage_errors);
	tcase_add_test(tc, test_parse_failover);
	tcase_add_test(tc, test_create_command);
	tcase_add_test(tc, test_help_version);
	tcase_add_test(tc, test_log);
	tcase_add_test(tc, test_verify_usage_errors);
	tcase_add_test(tc, test_read_password);
	suite_add_tcase(s, tc);
	return s;
}
