/*
 * rp_verify.h
 *    `replicant verify-snapshot`: tell complete snapshot dumps from
 *    truncated, open or conflicting ones in append-sink output
 *    (rp_reassemble.h; docs/sinks.md).
 */
#ifndef RP_VERIFY_H
#define RP_VERIFY_H

/* Exit statuses beyond rp_status.h's 0 ok, 1 error, 2 usage. */
#define RP_VERIFY_EXIT_TRUNCATED 4	/* a snapshot truncated or conflicting */
#define RP_VERIFY_EXIT_OPEN      5	/* a snapshot open (and none truncated) */

/* argv[0] is "verify-snapshot"; returns the exit status. */
extern int	rp_verify_snapshot_main(int argc, char **argv);

#endif							/* RP_VERIFY_H */
