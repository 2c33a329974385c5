/*
 * main.c
 *    replicant: receive a replicant slot's stream and apply it to a sink.
 *    The command line follows pg_recvlogical wherever the two overlap;
 *    this file only picks the action (rp_cli.h has the map of the rest).
 */
#include <string.h>

#include "backfill/rp_backfill.h"
#include "base/rp_status.h"
#include "cli/rp_cli.h"

int
main(int argc, char **argv)
{
	RpCli		cli;
	int			rc;

	/* subcommands that need no server */
	if (argc > 1 && strcmp(argv[1], "verify-snapshot") == 0)
		return rp_verify_snapshot_main(argc - 1, argv + 1);
	/* migrations: plain sessions on the source and the destination, no stream */
	if (argc > 1 && strcmp(argv[1], "sync-sequences") == 0)
		return rp_seqsync_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "wait") == 0)
		return rp_wait_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "verify") == 0)
		return rp_dbverify_main(argc - 1, argv + 1);

	rc = rp_cli_parse(&cli, argc, argv);
	if (rc != RP_CLI_RUN)
	{
		rp_cli_free(&cli);
		return rc;
	}
	if (cli.agg)
	{
		rp_agg_set_source(cli.agg, cli.dbname ? cli.dbname : "");
	}
	/* the sink gets the handle when it opens; the thread starts once it runs */
	if (cli.nbackfill > 0)
		cli.backfill_run = rp_backfill_new();

	rp_cli_signals_install();

	/* --snapshot creates the slot itself, with an exported snapshot */
	if ((cli.create_slot && !cli.snapshot) || cli.drop_slot)
	{
		rc = rp_cli_slot_action(&cli);
		if (rc != RP_EXIT_OK || !cli.start)
		{
			rp_cli_free(&cli);
			return rc;
		}
	}
	rc = rp_cli_run_stream(&cli);
	/* closes the aggregate edit streams and waits for their children */
	rp_agg_free(cli.agg);
	rp_backfill_free(cli.backfill_run);
	rp_cli_free(&cli);
	return rc;
}
