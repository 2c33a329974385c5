/*
 * rp_io.h
 *    Output to a file descriptor and child processes, for the log sinks and
 *    the aggregates' edit streams alike.
 */
#ifndef RP_IO_H
#define RP_IO_H

#include <sys/types.h>

#include "rp_buf.h"
#include "base/rp_status.h"

/*
 * Write all of out to fd and empty it; what names the target in errors.
 * A write interrupted by a stop (EINTR once rp_stop_requested()) fails.
 */
extern int	rp_io_write(int fd, RpBuf *out, const char *what);

/*
 * fsync the folder holding path, so that a rename into it is durable; -1
 * after rp_fail(halt) naming the path.
 */
extern int	rp_io_fsync_dir(const char *path, RpHalt halt);

/*
 * Wait for a child whose input was just closed (EOF tells it to finish) to
 * exit.  One that has not within RP_IO_CHILD_EXIT_GRACE_MS gets SIGTERM (its
 * process group too), then SIGKILL, so that no exit path waits for ever on
 * it or leaves it behind.  An exit other than status 0 is reported on
 * stderr as what (pid N, command "...").
 */
#define RP_IO_CHILD_EXIT_GRACE_MS 5000
extern void rp_io_reap_child(pid_t pid, const char *what, const char *command);

#endif							/* RP_IO_H */
