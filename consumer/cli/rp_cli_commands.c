/*
 * rp_cli_commands.c
 *    The program's commands: one table, which main.c dispatches from and
 *    --help prints (rp_cli_help.c).  Each command is a small main of its
 *    own (parse, validate, run) and takes the connection options through
 *    one module (rp_cli_conninfo.c); without a command name the program
 *    streams (rp_cli_stream_main).
 */
#include <stdio.h>
#include <string.h>

#include "cli/rp_cli.h"

const RpCliCommand rp_cli_commands[] = {
	/* needs no server */
	{"verify-snapshot", rp_verify_snapshot_main,
	"[--rows ID] [--quiet] FILE...", "check snapshot dumps; --help for details"},
	/* migrations: plain sessions on the source and the destination, no stream */
	{"sync-sequences", rp_seqsync_main,
	"-d SRC --sink postgresql://DST [OPTION]...", "a mirror's sequences; --help"},
	{"wait", rp_wait_main,
	"-d SRC --sink postgresql://DST [OPTION]...", "until the mirror passes an LSN; --help"},
	{"verify", rp_dbverify_main,
	"-d SRC --sink postgresql://DST [OPTION]...", "compare a mirror with its source; --help for details"},
	{NULL, NULL, NULL, NULL}
};

const RpCliCommand *
rp_cli_command(const char *name)
{
	for (const RpCliCommand *c = rp_cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}
