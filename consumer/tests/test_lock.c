/*
 * test_lock.c
 *    One consumer at a time (consumer/rp_lock.c, the file sink's lock):
 *    while one process holds a state directory, a spill directory or a file
 *    log, another one
 *    refuses with RP_HALT_IN_USE naming the holder's pid and changes
 *    nothing; once the holder is gone (however it ended) the lock is free.
 *    Issue 11: a second consumer on the same log wrote every change twice.
 */
#include <signal.h>
#include <sys/wait.h>

#include "ct_kit.h"
#include "base/rp_lock.h"
#include "stream/rp_sink.h"
#include "sinks/log/rp_logsink.h"

static void
setup(void)
{
	ct_setup_dir();
}

static void
teardown(void)
{
	ct_teardown_dir();
}

/*
 * A child that runs take(arg) (which must succeed), reports on a pipe and
 * waits until the parent closes its end of another; returns its pid.
 */
typedef struct Holder
{
	pid_t		pid;
	int			go;				/* write end: closing it lets the child exit */
} Holder;

static Holder
hold(int (*take) (const char *), const char *arg)
{
	int			ready[2],
				go[2];
	Holder		h;
	char		c = 0;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	h.pid = fork();
	ck_assert_int_ge(h.pid, 0);
	if (h.pid == 0)
	{
		close(ready[0]);
		close(go[1]);
		c = take(arg) == 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(2);
		/* until the parent is done: EOF */
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_msg(c == 'y', "the holder could not take the lock");
	close(ready[0]);
	h.go = go[1];
	return h;
}

static void
release(Holder *h, bool kill9)
{
	int			st;

	if (kill9)
		kill(h->pid, SIGKILL);
	close(h->go);
	ck_assert_int_eq(waitpid(h->pid, &st, 0), h->pid);
}

static int
take_dir(const char *dir)
{
	return rp_lock_dir(dir, "state directory");
}

static int
take_log(const char *path)
{
	/* held until the child exits: never closed */
	return rp_sink_file_open(path, NULL) != NULL ? 0 : -1;
}

static void
expect_refused(const char *what, pid_t holder)
{
	char		pid[32];

	snprintf(pid, sizeof(pid), "(pid %d)", (int) holder);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IN_USE);
	ck_assert_msg(strstr(rp_error(), what) && strstr(rp_error(), "in use by another process") &&
				  strstr(rp_error(), pid), "%s", rp_error());
}

START_TEST(test_state_dir)
{
	const char *dir = ct_path("state");
	Holder		h = hold(take_dir, dir);
	char	   *text;
	char		pid[32];

	rp_error_clear();
	ck_assert_int_eq(rp_lock_dir(dir, "state directory"), -1);
	expect_refused(dir, h.pid);
	/* the lock file names the holder too, for operators */
	text = ct_slurp(ct_path("state/" RP_LOCK_FILE), NULL);

	snprintf(pid, sizeof(pid), "%d\n", (int) h.pid);
	ck_assert_str_eq(text, pid);
	free(text);
	/* SIGKILL leaves no stale lock */
	release(&h, true);
	rp_error_clear();
	ck_assert_msg(rp_lock_dir(dir, "state directory") == 0, "%s", rp_error());
}

END_TEST

static int
take_spill(const char *dir)
{
	return rp_lock_spill_dir(dir);
}

START_TEST(test_spill_dir)
{
	const char *dir = ct_path("spill");
	Holder		h = hold(take_spill, dir);

	rp_error_clear();
	ck_assert_int_eq(rp_lock_spill_dir(dir), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_IN_USE);
	ck_assert_msg(strstr(rp_error(), dir) && strstr(rp_error(), "in use by another process"), "%s",
				  rp_error());
	/* nothing is added to it: a spill dir holds spill files only */
	ck_assert_int_eq(ct_count_entries(dir, ""), 0);
	release(&h, true);
	rp_error_clear();
	ck_assert_msg(rp_lock_spill_dir(dir) == 0, "%s", rp_error());
}

END_TEST

START_TEST(test_dir_created)
{
	const char *dir = ct_path("new/state");

	/* a missing parent is an ordinary error, a missing directory is made */
	rp_error_clear();
	ck_assert_int_eq(rp_lock_dir(dir, "state directory"), -1);
	ck_assert_int_eq(rp_error_halt(), RP_HALT_NONE);
	ck_assert_int_eq(mkdir(ct_path("new"), 0700), 0);
	ck_assert_msg(rp_lock_dir(dir, "state directory") == 0, "%s", rp_error());
	ck_assert(ct_exists(ct_path("new/state/" RP_LOCK_FILE)));
}

END_TEST

START_TEST(test_file_log)
{
	const char *log = ct_path("changes.jsonl");
	const char *tail = "{\"kind\":\"insert\",\"part";
	Holder		h;
	char	   *before,
			   *after;
	size_t		lb,
				la;

	ct_write_file(log, "", 0, false);
	h = hold(take_log, log);
	/* the holder is half-way through a unit: a second one must not cut it */
	ct_write_file(log, tail, strlen(tail), true);
	before = ct_slurp(log, &lb);
	rp_error_clear();
	ck_assert_ptr_null(rp_sink_file_open(log, NULL));
	expect_refused(log, h.pid);
	after = ct_slurp(log, &la);
	ck_assert_msg(la == lb && memcmp(before, after, la) == 0, "the refused open changed the log");
	free(before);
	free(after);
	release(&h, false);
	/* the holder gone: the torn tail is its, cut on the next open */
	{
		RpSink	   *s = rp_sink_file_open(log, NULL);

		ck_assert_msg(s != NULL, "%s", rp_error());
		ck_assert_int_eq(ct_file_size(log), 0);
		s->close(s);
	}
}

END_TEST

Suite	   *
ct_suite_lock(void)
{
	Suite	   *s = suite_create("lock");
	TCase	   *tc = tcase_create("lock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_state_dir);
	tcase_add_test(tc, test_spill_dir);
	tcase_add_test(tc, test_dir_created);
	tcase_add_test(tc, test_file_log);
	suite_add_tcase(s, tc);
	return s;
}
