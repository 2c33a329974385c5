/*
 * rp_spill.c
 *    The memory budget and the spill folder (see rp_spill.h).
 */
#include "rp_alloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rp_counter.h"
#include "base/rp_status.h"
#include "stream/rp_spill.h"

#define RP_SPILL_PREFIX "replicant-spill-"

int
rp_spill_init(RpSpill *sp, const char *dir, size_t max_memory, uint64_t max_spill)
{
	DIR		   *d;
	struct dirent *de;

	memset(sp, 0, sizeof(*sp));
	sp->dir = rp_strndup(dir, strlen(dir));
	sp->max_memory = max_memory;
	sp->max_spill = max_spill;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return rp_fail(RP_HALT_NONE, "could not create spill directory \"%s\": %s", dir,
					   strerror(errno));
	if (chmod(dir, 0700) != 0)
		return rp_fail(RP_HALT_NONE, "could not set mode of spill directory \"%s\": %s", dir,
					   strerror(errno));
	/* spill files of an earlier run are garbage: their data is re-sent */
	d = opendir(dir);
	if (d == NULL)
		return rp_fail(RP_HALT_NONE, "could not open spill directory \"%s\": %s", dir,
					   strerror(errno));
	while ((de = readdir(d)) != NULL)
	{
		char		path[4096];

		if (strncmp(de->d_name, RP_SPILL_PREFIX, strlen(RP_SPILL_PREFIX)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	return 0;
}

void
rp_spill_charge(RpSpill *sp, int64_t n)
{
	if (n >= 0)
	{
		RP_COUNT_ADD(sp->sink_in_use, (size_t) n);
		RP_COUNT_ADD(sp->mem_in_use, (size_t) n);
	}
	else
	{
		RP_COUNT_SUB(sp->sink_in_use, (size_t) -n);
		RP_COUNT_SUB(sp->mem_in_use, (size_t) -n);
	}
}

void
rp_spill_next_path(RpSpill *sp, char *buf, size_t len)
{
	snprintf(buf, len, "%s/" RP_SPILL_PREFIX "%d-%u", sp->dir, (int) getpid(),
			 __atomic_add_fetch(&sp->seq, 1, __ATOMIC_RELAXED));
	RP_COUNT_ADD(sp->spills, 1);
}
