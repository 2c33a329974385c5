/*
 * test_cliconfig.c
 *    --config FILE (rp_cli_config.c): the long options as lines of a file.
 *    Every option the file gives reaches the RpCli as if typed; an option
 *    of the command line replaces the file's lines for it (repeatable ones
 *    too); a bad line is a usage error (exit 2) naming the file, the line
 *    and the option, and the value of a secret-looking option (-d, --sink,
 *    --source, credentials) never shows in it.
 */
#include "ct_kit.h"

#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_config.h"

/* Write text to the test's scratch file NAME; its path. */
static const char *
conf(const char *name, const char *text)
{
	const char *path = ct_path(name);

	ct_write_file(path, text, strlen(text), false);
	return path;
}


/* Every kind of line, and every value reaches the RpCli. */
START_TEST(test_config_values)
{
	RpCli		cli;
	char	   *err;
	const char *path = conf("a.conf",
							"# replicant for the cdc slot\n"
							"\n"
							"   # an indented comment\n"
							"slot = cdc\n"
							"start\n"
							"no-loop\n"
							"dbname=host=/tmp/pg dbname=src password=pa#ss\n"
							"sink = \"file:/var/log/x y.log\"\n"
							"\tbatch-txns\t=\t7\t\n"
							"batch-ms = 50\r\n"
							"option = include_xids\n"
							"option = include_tables=public.t\n"
							"history = public.h1\n"
							"history = public.h2\n"
							"verbose\n"
							"state-dir = \"\"\n"
							"endpos = 0/ABC\n");
	const char *const args[] = {"--config", path, NULL};

	ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
	ck_assert_str_eq(err, "");
	ck_assert_str_eq(cli.slot, "cdc");
	ck_assert(cli.start);
	ck_assert(cli.no_loop);
	/* a '#' inside a value is part of it */
	ck_assert_str_eq(cli.dbname, "host=/tmp/pg dbname=src password=pa#ss");
	ck_assert_str_eq(cli.sink, "file:/var/log/x y.log");
	ck_assert_int_eq(cli.limits.max_txns, 7);
	ck_assert_int_eq(cli.limits.max_ms, 50);
	ck_assert_int_eq(cli.noptions, 2);
	ck_assert_ptr_nonnull(rp_cli_plugin_option(&cli, "include_xids"));
	ck_assert_str_eq(rp_cli_plugin_option(&cli, "include_tables"), "public.t");
	ck_assert_int_eq(cli.pg.nhistory, 2);
	ck_assert_str_eq(cli.pg.history[1], "public.h2");
	ck_assert_int_eq(cli.verbose, 1);
	ck_assert_str_eq(cli.state_dir, "");
	ck_assert_uint_eq(cli.endpos, 0xABC);
	free(err);
	rp_cli_free(&cli);
}

END_TEST

/* The command line wins, option by option, wherever --config stands. */
START_TEST(test_config_command_line_wins)
{
	RpCli		cli;
	char	   *err;
	const char *path = conf("b.conf",
							"slot = fromfile\n"
							"start\n"
							"batch-txns = 7\n"
							"batch-bytes = 1MB\n"
							"option = include_xids\n"
							"option = include_lsn\n"
							"history = public.h1\n");

	{
		/* -S (a short option) replaces "slot"; -o replaces both -o lines */
		const char *const args[] = {"-S", "cmd", "--batch-txns=9", "--config", path,
		"-o", "include_tables=a.b", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert_str_eq(err, "");
		ck_assert_str_eq(cli.slot, "cmd");
		ck_assert_int_eq(cli.limits.max_txns, 9);
		ck_assert_uint_eq(cli.limits.max_bytes, 1 << 20);
		ck_assert_int_eq(cli.noptions, 1);
		ck_assert_ptr_null(rp_cli_plugin_option(&cli, "include_xids"));
		ck_assert_str_eq(rp_cli_plugin_option(&cli, "include_tables"), "a.b");
		ck_assert_int_eq(cli.pg.nhistory, 1);
		free(err);
		rp_cli_free(&cli);
	}
	{
		/*
		 * the same file again (the parse is repeatable), --config=FILE
		 * spelling
		 */
		char		word[300];
		const char *const args[] = {word, NULL};

		snprintf(word, sizeof(word), "--config=%s", path);
		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_CLI_RUN);
		ck_assert_str_eq(err, "");
		ck_assert_str_eq(cli.slot, "fromfile");
		ck_assert_int_eq(cli.limits.max_txns, 7);
		ck_assert_int_eq(cli.noptions, 2);
		free(err);
		rp_cli_free(&cli);
	}
	{
		/* a command-line usage error is still the command line's own */
		const char *const args[] = {"--config", path, "--batch-txns=0", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_USAGE);
		ck_assert_msg(strstr(err, "replicant: error: invalid value \"0\" for option --batch-txns") != NULL, "%s", err);
		ck_assert(strstr(err, "configuration file") == NULL);
		free(err);
		rp_cli_free(&cli);
	}
}

END_TEST

/* A bad line: exit 2, the file, the line, the option, and the --help hint. */
START_TEST(test_config_errors)
{
	static const struct
	{
		const char *text;
		int			line;
		const char *says;
	}			cases[] = {
		{"slot = s\nstart\nbogus = 1\n", 3, "unrecognized option \"bogus\""},
		/* no prefixes in a file: a later option could make one ambiguous */
		{"slot = s\nstar\n", 2, "unrecognized option \"star\""},
		{"slot = s\n--start\n", 2, "expected NAME = VALUE, or NAME for a flag"},
		{"slot: s\n", 1, "expected NAME = VALUE, or NAME for a flag"},
		{"slot s\n", 1, "expected NAME = VALUE, or NAME for a flag"},
		{"start = yes\n", 1, "option \"start\" takes no value"},
		{"start\nslot\n", 2, "option \"slot\" needs a value (NAME = VALUE)"},
		{"start\nslot =   \n", 2, "option \"slot\" has no value after '='"},
		{"start\nslot = \"s\n", 2, "option \"slot\": a quoted value must end with its quote"},
		{"start\nslot = \"\n", 2, "option \"slot\": a quoted value must end with its quote"},
		{"config = /etc/other.conf\n", 1, "option \"config\" belongs on the command line"},
		{"\n\nhelp\n", 3, "option \"help\" belongs on the command line"},
		{"version\n", 1, "option \"version\" belongs on the command line"},
		/* a second value would replace the first without a word */
		{"slot = a\nstart\nslot = b\n", 3, "option \"slot\" is given again (first on line 1); it takes one value"},
		{"start\n\nstart\n", 3, "option \"start\" is given again (first on line 1)"},
		/* the handlers' own checks, with the line they came from */
		{"slot = s\nstart\n# c\nbatch-txns = 0\n", 4,
		", option \"batch-txns\": invalid value \"0\" for option --batch-txns (1 to 1000000)"},
		{"slot = s\nstart\non-destructive = maybe\n", 3,
		", option \"on-destructive\": invalid value \"maybe\" for --on-destructive"},
		{"slot = s\nstart\noption = format=json\n", 3,
		", option \"option\": plugin option \"format=json\" is set by replicant itself"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		RpCli		cli;
		char	   *err;
		char		want[512];
		const char *path = conf("e.conf", cases[i].text);
		const char *const args[] = {"--config", path, NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_USAGE);
		snprintf(want, sizeof(want), "replicant: error: configuration file \"%s\", line %d", path, cases[i].line);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "case %zu: got %s", i, err);
		ck_assert_msg(strstr(err, cases[i].says) != NULL, "case %zu: got %s", i, err);
		ck_assert_msg(strstr(err, "Try \"replicant --help\" for more information.\n") != NULL, "case %zu", i);
		/* one error, nothing parsed further */
		ck_assert_int_eq(ct_count(err, "error:"), 1);
		free(err);
		rp_cli_free(&cli);
	}
}

END_TEST

/* A file that cannot be read, or one that is not text. */
START_TEST(test_config_unreadable)
{
	RpCli		cli;
	char	   *err;

	{
		const char *const args[] = {"-S", "s", "--start", "--config", "/nonexistent/r.conf", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_USAGE);
		ck_assert_msg(strstr(err, "could not open configuration file \"/nonexistent/r.conf\": No such file or directory") != NULL, "%s", err);
		free(err);
		rp_cli_free(&cli);
	}
	{
		const char *path = ct_path("nul.conf");
		const char *const args[] = {"--config", path, NULL};

		ct_write_file(path, "slot = s\nstart\0\n", 16, false);
		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_USAGE);
		ck_assert_msg(strstr(err, "line 2: a NUL byte") != NULL, "%s", err);
		free(err);
		rp_cli_free(&cli);
	}
	{
		/* --config needs its argument like any option */
		const char *const args[] = {"-S", "s", "--start", "--config", NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_USAGE);
		ck_assert_msg(strstr(err, "option \"--config\" requires an argument") != NULL, "%s", err);
		free(err);
		rp_cli_free(&cli);
	}
}

END_TEST

/* A secret-looking option's value never shows in an error. */
START_TEST(test_config_secrets)
{
	static const struct
	{
		const char *text;
		const char *says;
	}			cases[] = {
		{"slot = s\nstart\ndbname = host='x password=hunter2\n", "line 3: option \"dbname\": invalid connection string"},
		{"slot = s\nstart\ndbname = postgresql://u:hunter2@h/db?nosuch=1\n", "line 3: option \"dbname\": invalid connection string"},
		{"slot = s\nstart\nsink = kafka://u:hunter2@h\n", "line 3: option \"sink\": unknown sink"},
		{"slot = s\nstart\nsource = postgres://u:hunter2@h\n", "line 3, option \"source\": invalid value (not shown"},
		{"slot = s\nstart\npassword = hunter2\n", "line 3: option \"password\" takes no value"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		RpCli		cli;
		char	   *err;
		const char *path = conf("s.conf", cases[i].text);
		const char *const args[] = {"--config", path, NULL};

		ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_USAGE);
		ck_assert_msg(strstr(err, cases[i].says) != NULL, "case %zu: got %s", i, err);
		ck_assert_msg(strstr(err, "hunter2") == NULL, "case %zu: the secret shows: %s", i, err);
		free(err);
		rp_cli_free(&cli);
	}
	ck_assert(rp_cli_config_secret("dbname"));
	ck_assert(rp_cli_config_secret("nats-creds"));
	ck_assert(rp_cli_config_secret("nats-tls-key"));
	ck_assert(!rp_cli_config_secret("slot"));
	ck_assert(!rp_cli_config_secret("batch-txns"));
}

END_TEST

/* --help lists --config (the man page check reads --help). */
START_TEST(test_config_help)
{
	RpCli		cli;
	char	   *err;
	char	   *out;
	const char *const args[] = {"--help", NULL};

	ck_assert_int_eq(ct_cli_parse(&cli, &err, args), RP_EXIT_OK);
	out = ct_slurp(ct_path("parse.out"), NULL);
	ck_assert_msg(strstr(out, "--config=FILE") != NULL, "%s", out);
	free(out);
	free(err);
	rp_cli_free(&cli);
}

END_TEST

Suite	   *
ct_suite_cliconfig(void)
{
	Suite	   *s = suite_create("cliconfig");
	TCase	   *tc = tcase_create("cliconfig");

	tcase_add_checked_fixture(tc, ct_setup_dir, ct_teardown_dir);
	tcase_add_test(tc, test_config_values);
	tcase_add_test(tc, test_config_command_line_wins);
	tcase_add_test(tc, test_config_errors);
	tcase_add_test(tc, test_config_unreadable);
	tcase_add_test(tc, test_config_secrets);
	tcase_add_test(tc, test_config_help);
	suite_add_tcase(s, tc);
	return s;
}
