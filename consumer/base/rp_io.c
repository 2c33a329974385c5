/*
 * rp_io.c
 *    Writes that survive signals and the reaping of child processes (see
 *    rp_io.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/rp_io.h"
#include "base/rp_status.h"

int
rp_io_write(int fd, RpBuf *out, const char *what)
{
	size_t		off = 0;

	while (off < out->len)
	{
		ssize_t		w = write(fd, out->data + off, out->len - off);

		if (w < 0)
		{
			/*
			 * a stop ends a write blocked on a reader that stopped reading
			 * (rp_pipe.c)
			 */
			if (errno == EINTR && rp_stop_requested())
				return rp_fail(RP_HALT_NONE, "a stop was requested while writing to %s", what);
			if (errno == EINTR)
				continue;
			return rp_fail(RP_HALT_SINK, "could not write to %s: %s", what, strerror(errno));
		}
		off += (size_t) w;
	}
	rp_buf_reset(out);
	return 0;
}

void
rp_io_reap_child(pid_t pid, const char *what, const char *command)
{
	int			status = 0;
	int			waited = 0;
	int			sent = 0;		/* 0 none, else the last signal sent */

	for (;;)
	{
		pid_t		r = waitpid(pid, &status, WNOHANG);
		struct timespec ts = {.tv_sec = 0,.tv_nsec = 20 * 1000000L};

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return;
		if (waited >= RP_IO_CHILD_EXIT_GRACE_MS && sent != SIGKILL)
		{
			sent = sent == 0 ? SIGTERM : SIGKILL;

			/*
			 * its group (what sh -c started with it), or it alone if it has
			 * none
			 */
			if (kill(-pid, sent) != 0)
				kill(pid, sent);
			waited = 0;
		}
		nanosleep(&ts, NULL);
		waited += 20;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && sent == 0)
		return;
	if (WIFEXITED(status))
		fprintf(stderr, "replicant: %s (pid %d, command \"%s\") exited with status %d%s\n",
				what, (int) pid, command, WEXITSTATUS(status), sent ? " after it was signalled" : "");
	else if (WIFSIGNALED(status))
		fprintf(stderr, "replicant: %s (pid %d, command \"%s\") was terminated by signal %d%s\n",
				what, (int) pid, command, WTERMSIG(status),
				sent ? " (it did not exit on end of input)" : "");
}

int
rp_io_fsync_dir(const char *path, RpHalt halt)
{
	char	   *copy = rp_strndup(path, strlen(path));
	int			fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int			rc = 0;

	if (fd < 0 || fsync(fd) != 0)
		rc = rp_fail(halt, "could not fsync the folder of \"%s\": %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	rp_free(copy);
	return rc;
}
