/*
 * rp_cli_config.h
 *    --config FILE: the long options as lines of a file, so that a service
 *    unit (and a person) need not keep a long command line.
 *
 *        # a comment: a line whose first non-blank character is '#'
 *        slot = cdc
 *        start
 *        sink = "file:/var/lib/replicant/cdc.log"
 *
 *    A line is NAME = VALUE for an option that takes a value, NAME alone
 *    for a flag; NAME is the long option without its dashes, spelled out
 *    (no prefixes).  The value is the rest of the line, blanks around it
 *    trimmed; double quotes around it keep blanks and allow "".  A '#'
 *    inside a value is part of it (a password may hold one).
 *
 *    The file's options come before the command line's, and an option the
 *    command line gives replaces every line of the file for it (a
 *    repeatable one too: -o on the command line drops the file's -o
 *    lines).  The file may not hold config, help or version.
 *
 *    Errors name the file, the line and the option; the value of a
 *    secret-looking option (a connection string or URI, credentials, a
 *    key) is never printed.
 */
#ifndef RP_CLI_CONFIG_H
#define RP_CLI_CONFIG_H

#include <getopt.h>
#include <stdbool.h>

typedef struct RpCliConfig RpCliConfig;

/*
 * If the command line (argc, argv, as getopt_long reads it with shortopts
 * and longopts) has --config FILE, read FILE and replace *argc and *argv
 * by the merged command line: argv[0], the file's options, then the
 * command line's.  *out is the loaded file (NULL without --config), which
 * owns the merged words; rp_cli_config_free frees it.  Returns RP_CLI_RUN,
 * or the status of the usage error it printed.
 */
extern int	rp_cli_config_apply(int *argc, char ***argv, const char *shortopts,
								const struct option *longopts, int config_code,
								RpCliConfig **out);

/*
 * Before the n-th option (from 0) getopt returns from the merged command
 * line is taken: usage errors then say which line of the file it came
 * from (nothing for a command-line option).  n < 0 ends that.
 */
extern void rp_cli_config_context(RpCliConfig *cfg, int n);

/* Whether the option NAME's values are kept out of every message. */
extern bool rp_cli_config_secret(const char *name);

extern void rp_cli_config_free(RpCliConfig *cfg);

#endif							/* RP_CLI_CONFIG_H */
