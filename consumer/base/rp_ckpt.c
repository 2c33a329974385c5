/*
 * rp_ckpt.c
 *    Checkpoint lines and the library-owned checkpoint file (see rp_ckpt.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/rp_ckpt.h"
#include "base/rp_io.h"
#include "base/rp_status.h"

int
rp_ckpt_format(const RpCheckpoint *ck, char *buf, size_t len)
{
	char		c[24],
				e[24];

	rp_lsn_format(ck->commit_lsn, c);
	rp_lsn_format(ck->end_lsn, e);
	if (ck->source[0])
		return snprintf(buf, len, "replicant-checkpoint v1 sysid=%" PRIu64 " tli=%u slot=%s commit=%s end=%s source=%s seq=%" PRIu64,
						ck->system_id, ck->timeline, ck->slot, c, e, ck->source, ck->source_seq);
	return snprintf(buf, len, "replicant-checkpoint v1 sysid=%" PRIu64 " tli=%u slot=%s commit=%s end=%s",
					ck->system_id, ck->timeline, ck->slot, c, e);
}

bool
rp_ckpt_parse(const char *line, RpCheckpoint *ck)
{
	char		slot[RP_SLOT_NAME_MAX];
	char		c[32],
				e[32];
	char		source[RP_SOURCE_NAME_MAX];
	unsigned long long sysid;
	unsigned long long seq = 0;
	unsigned	tli;
	int			n;

	memset(ck, 0, sizeof(*ck));
	source[0] = '\0';
	n = sscanf(line, "replicant-checkpoint v1 sysid=%llu tli=%u slot=%63s commit=%31s end=%31s source=%271s seq=%llu",
			   &sysid, &tli, slot, c, e, source, &seq);
	if (n != 5 && n != 7)
		return false;
	if (n == 7)
	{
		memcpy(ck->source, source, sizeof(source));
		ck->source_seq = seq;
	}
	ck->system_id = sysid;
	ck->timeline = tli;
	memcpy(ck->slot, slot, sizeof(slot));
	if (!rp_lsn_parse(c, &ck->commit_lsn) || !rp_lsn_parse(e, &ck->end_lsn))
		return false;

	/*
	 * Only the exact line rp_ckpt_format() writes (then optional trailing
	 * white space): sscanf alone would take "sysid=-1", "tli=+1" or text
	 * after the end LSN.
	 */
	{
		char		canon[1024];

		n = rp_ckpt_format(ck, canon, sizeof(canon));
		if (n <= 0 || (size_t) n >= sizeof(canon) || strncmp(line, canon, (size_t) n) != 0 ||
			strspn(line + n, " \t\r\n") != strlen(line + n))
		{
			memset(ck, 0, sizeof(*ck));
			return false;
		}
	}
	return true;
}

int
rp_ckpt_read(const char *path, RpCheckpoint *ck)
{
	FILE	   *f = fopen(path, "r");
	char		line[1024];

	if (f == NULL)
	{
		if (errno == ENOENT)
			return 0;
		return rp_fail(RP_HALT_NONE, "could not open checkpoint file \"%s\": %s", path,
					   strerror(errno));
	}
	if (fgets(line, sizeof(line), f) == NULL || !rp_ckpt_parse(line, ck))
	{
		fclose(f);
		return rp_fail(RP_HALT_IDENTITY, "checkpoint file \"%s\" is not a replicant checkpoint", path);
	}
	fclose(f);
	return 1;
}

int
rp_ckpt_write(const char *path, const RpCheckpoint *ck)
{
	char		tmp[4096];
	char		line[1024];
	int			n = rp_ckpt_format(ck, line, sizeof(line) - 1);
	int			fd;

	line[n++] = '\n';
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return rp_fail(RP_HALT_NONE, "could not create \"%s\": %s", tmp, strerror(errno));
	if (write(fd, line, (size_t) n) != n || fsync(fd) != 0)
	{
		int			err = errno;

		close(fd);
		return rp_fail(RP_HALT_NONE, "could not write \"%s\": %s", tmp, strerror(err));
	}
	close(fd);
	if (rename(tmp, path) != 0)
		return rp_fail(RP_HALT_NONE, "could not rename \"%s\" to \"%s\": %s", tmp, path,
					   strerror(errno));
	return rp_io_fsync_dir(path, RP_HALT_NONE);
}

int
rp_ckpt_check_source(const RpCheckpoint *ck, uint64_t system_id, const char *slot)
{
	if (ck->system_id != system_id)
		return rp_fail(RP_HALT_IDENTITY,
					   "checkpoint belongs to system %" PRIu64 ", but the source is system %" PRIu64,
					   ck->system_id, system_id);
	if (strcmp(ck->slot, slot) != 0)
		return rp_fail(RP_HALT_IDENTITY, "checkpoint belongs to slot \"%s\", not \"%s\"",
					   ck->slot, slot);
	return 0;
}

const char *
rp_ckpt_source_name(const char *source)
{
	return source[0] ? source : "slot";
}

int
rp_ckpt_check_kind(const RpCheckpoint *ck, const char *source)
{
	if (strcmp(ck->source, source) == 0)
		return 0;
	return rp_fail(RP_HALT_IDENTITY, "checkpoint \"%s\" was taken from %s%s, not from %s%s",
				   ck->slot, ck->source[0] ? "" : "a replication ", rp_ckpt_source_name(ck->source),
				   source[0] ? "" : "a replication ", rp_ckpt_source_name(source));
}

int
rp_ckpt_check_position(const RpCheckpoint *ck, uint64_t server_flush_lsn)
{
	char		c[24],
				e[24],
				f[24];

	if (ck->end_lsn <= server_flush_lsn && ck->commit_lsn <= server_flush_lsn)
		return 0;
	rp_lsn_format(ck->commit_lsn, c);
	rp_lsn_format(ck->end_lsn, e);
	rp_lsn_format(server_flush_lsn, f);
	return rp_fail(RP_HALT_IDENTITY,
				   "checkpoint (commit %s, end %s) is ahead of the server's WAL flush position %s: it is not this server's position (edited, damaged, or the source was restored from a backup)",
				   c, e, f);
}
