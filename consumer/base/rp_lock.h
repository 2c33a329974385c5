/*
 * rp_lock.h
 *    One consumer per state directory, spill directory and file log.
 *
 * Two consumers writing one log (or one checkpoint file, or deleting each
 * other's spill files) break G1 without a visible error.  Each run takes an
 * exclusive POSIX record lock (fcntl F_SETLK, whole file) and keeps it for
 * the process's life: the kernel drops it when the process ends, however
 * it ends (SIGKILL included), so there is no stale lock to clean up.  A
 * second run finds the lock held and refuses with RP_HALT_IN_USE, naming
 * the holder's pid (F_GETLK), before it changes anything.  The spill dir
 * (whose files a starting run deletes) is locked with flock instead.
 *
 * POSIX locks belong to the process and go when any descriptor of the
 * file is closed: nothing else in the consumer opens a locked file.
 */
#ifndef RP_LOCK_H
#define RP_LOCK_H

#define RP_LOCK_FILE "replicant.lock"

/*
 * Lock fd (open for writing) for this process; what and path name it in
 * the error.  0, or -1 after rp_fail().
 */
extern int	rp_lock_fd(int fd, const char *what, const char *path);

/*
 * Create dir if missing and lock dir/replicant.lock (which then holds this
 * process's pid, for operators).  The descriptor stays open.
 */
extern int	rp_lock_dir(const char *dir, const char *what);

/*
 * Create dir if missing and lock the directory itself (flock on its
 * descriptor: the spill dir holds nothing but spill files, and a lock
 * file there would be one more).  The descriptor stays open.
 */
extern int	rp_lock_spill_dir(const char *dir);

#endif							/* RP_LOCK_H */
