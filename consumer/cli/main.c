/*
 * main.c
 *    replicant: receive a replicant slot's stream and apply it to a sink.
 *    The command line follows pg_recvlogical wherever the two overlap;
 *    this file only picks the command from the table (rp_cli_commands.c;
 *    rp_cli.h has the map of the rest).
 */
#include "cli/rp_cli.h"

int
main(int argc, char **argv)
{
	const RpCliCommand *cmd = argc > 1 ? rp_cli_command(argv[1]) : NULL;

	if (cmd)
		return cmd->main(argc - 1, argv + 1);
	return rp_cli_stream_main(argc, argv);
}
