/*
 * rp_lock.c
 *    Exclusive locks on the state directory and the file log (see rp_lock.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rp_lock.h"
#include "base/rp_status.h"

int
rp_lock_fd(int fd, const char *what, const char *path)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_SETLK, &fl) == 0)
		return 0;
	if (errno != EACCES && errno != EAGAIN)
		return rp_fail(RP_HALT_NONE, "could not lock %s \"%s\": %s", what, path, strerror(errno));

	/* who holds it: 0 when it is gone meanwhile, or in another pid namespace */
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0)
		return rp_fail(RP_HALT_IN_USE,
					   "%s \"%s\" is in use by another process (pid %d): one consumer at a time", what,
					   path, (int) fl.l_pid);
	return rp_fail(RP_HALT_IN_USE, "%s \"%s\" is in use by another process: one consumer at a time",
				   what, path);
}

int
rp_lock_dir(const char *dir, const char *what)
{
	char		path[4096];
	char		pid[32];
	int			fd,
				n;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return rp_fail(RP_HALT_NONE, "could not create %s \"%s\": %s", what, dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", dir, RP_LOCK_FILE);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return rp_fail(RP_HALT_NONE, "could not open the lock file \"%s\": %s", path, strerror(errno));
	if (rp_lock_fd(fd, what, dir) < 0)
	{
		close(fd);
		return -1;
	}
	/* for operators only: the lock itself says who holds it */
	n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t) n, 0) != n)
	{
		/* the lock holds without the note */
	}
	return 0;
}

int
rp_lock_spill_dir(const char *dir)
{
	int			fd;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return rp_fail(RP_HALT_NONE, "could not create spill directory \"%s\": %s", dir,
					   strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rp_fail(RP_HALT_NONE, "could not open spill directory \"%s\": %s", dir,
					   strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	close(fd);
	if (errno == EWOULDBLOCK)
		return rp_fail(RP_HALT_IN_USE,
					   "spill directory \"%s\" is in use by another process: one consumer at a time", dir);
	return rp_fail(RP_HALT_NONE, "could not lock spill directory \"%s\": %s", dir, strerror(errno));
}
