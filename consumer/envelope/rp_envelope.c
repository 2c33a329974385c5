/*
 * rp_envelope.c
 *    The snapshot envelope writer (see rp_envelope.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "envelope/rp_envelope.h"
#include "rp_format.h"
#include "rp_json.h"
#include "base/rp_clock.h"
#include "base/rp_status.h"

#define RP_ENV_DROP_WARN_MS 10000

#define DLQ_REASON "record exceeds max-record-bytes"

int
rp_rfc3339_ms(char *out, int64_t unix_ms)
{
	int64_t		days,
				rem,
				year;
	int			month,
				day;

	days = unix_ms / INT64_C(86400000);
	rem = unix_ms % INT64_C(86400000);
	if (rem < 0)
	{
		rem += INT64_C(86400000);
		days--;
	}
	rp_civil_from_days(days, &year, &month, &day);
	if (year < 0 || year > 9999)
		return rp_fail(RP_HALT_NONE, "timestamp out of the RFC 3339 range");
	snprintf(out, RP_RFC3339_MS_LEN + 1, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
			 (int) year, month, day, (int) (rem / 3600000), (int) (rem / 60000 % 60),
			 (int) (rem / 1000 % 60), (int) (rem % 1000));
	return 0;
}

void
rp_env_init(RpEnvelope *env, size_t max_record_bytes, size_t max_dlq_bytes,
			const char *dlq_path)
{
	memset(env, 0, sizeof(*env));
	env->max_record_bytes = max_record_bytes;
	env->max_dlq_bytes = max_dlq_bytes;
	env->dlq_path = dlq_path ? rp_strndup(dlq_path, strlen(dlq_path)) : NULL;
	env->dlq_fd = -1;
	env->ids = rp_malloc(sizeof(RpUuid7Gen));
	rp_uuid7_gen_init(env->ids);
	env->state = RP_ENV_IDLE;
	rp_buf_init(&env->head, 256);
}

int
rp_env_dlq_sync(RpEnvelope *env)
{
	if (env->dlq_fd < 0 || !env->dlq_dirty)
		return 0;
	if (fsync(env->dlq_fd) != 0)
		return rp_fail(RP_HALT_NONE, "could not fsync dead-letter file \"%s\": %s",
					   env->dlq_path, strerror(errno));
	env->dlq_dirty = false;
	return 0;
}

void
rp_env_free(RpEnvelope *env)
{
	if (env->dlq_fd >= 0)
	{
		(void) rp_env_dlq_sync(env);
		close(env->dlq_fd);
	}
	rp_free(env->dlq_path);
	rp_free(env->store);
	if (env->ids)
	{
		rp_uuid7_gen_free(env->ids);
		rp_free(env->ids);
	}
	rp_buf_free(&env->head);
	memset(env, 0, sizeof(*env));
	env->dlq_fd = -1;
}

void
rp_env_abort(RpEnvelope *env)
{
	if (env->state == RP_ENV_OPEN)
		env->state = RP_ENV_FAILED;
}

/* The fields every frame of the dump carries, rendered once. */
static int
env_start(RpEnvelope *env, const char *store, const char *snapshot_id, int64_t snapshot_at_ms)
{
	if (store == NULL || store[0] == '\0')
		return rp_fail(RP_HALT_NONE, "snapshot envelope: empty store name");
	if (rp_rfc3339_ms(env->snapshot_at, snapshot_at_ms) < 0)
		return -1;
	memcpy(env->snapshot_id, snapshot_id, RP_UUID_TEXT_LEN);
	env->snapshot_id[RP_UUID_TEXT_LEN] = '\0';
	env->snapshot_at_ms = snapshot_at_ms;
	rp_free(env->store);
	env->store = rp_strndup(store, strlen(store));
	rp_buf_reset(&env->head);
	rp_buf_put_text(&env->head, "\"snapshot_id\":\"");
	rp_buf_put_text(&env->head, env->snapshot_id);
	rp_buf_put_text(&env->head, "\",\"snapshot_at\":\"");
	rp_buf_put_text(&env->head, env->snapshot_at);
	rp_buf_put_text(&env->head, "\",\"timestamp\":\"");
	rp_buf_put_text(&env->head, env->snapshot_at);
	rp_buf_put_text(&env->head, "\",\"store\":");
	rp_json_cstring(&env->head, store);
	env->seq = env->rows = env->oversize = 0;
	return 0;
}

static void
env_frame_start(RpEnvelope *env, RpBuf *out, const char *kind, uint64_t seq)
{
	rp_buf_put_text(out, "{\"kind\":\"");
	rp_buf_put_text(out, kind);
	rp_buf_put_text(out, "\",");
	rp_buf_put_bytes(out, env->head.data, env->head.len);
	rp_buf_put_text(out, ",\"seq\":");
	rp_fmt_uint64(out, seq);
}

int
rp_env_begin(RpEnvelope *env, RpBuf *out, const char *store, int64_t snapshot_at_ms,
			 int64_t total)
{
	RpUuid		id;
	char text[	RP_UUID_TEXT_LEN + 1];

	if (env->state == RP_ENV_OPEN)
	{
		env->state = RP_ENV_FAILED;
		return rp_fail(RP_HALT_NONE, "snapshot envelope: begin while a dump is open");
	}
	env->state = RP_ENV_FAILED;
	if (rp_uuid7_at(env->ids, &id, snapshot_at_ms) < 0)
		return -1;
	rp_uuid_text(&id, text);
	if (env_start(env, store, text, snapshot_at_ms) < 0)
		return -1;
	env_frame_start(env, out, "begin", 0);
	if (total >= 0)
	{
		rp_buf_put_text(out, ",\"total\":");
		rp_fmt_int64(out, total);
	}
	rp_buf_put_text(out, "}\n");
	env->state = RP_ENV_OPEN;
	return 0;
}

int
rp_env_begin_id(RpEnvelope *env, RpBuf *out, const char *store, const char *snapshot_id,
				int64_t snapshot_at_ms, int64_t total)
{
	if (env->state == RP_ENV_OPEN)
	{
		env->state = RP_ENV_FAILED;
		return rp_fail(RP_HALT_NONE, "snapshot envelope: begin while a dump is open");
	}
	if (rp_env_resume(env, store, snapshot_id, snapshot_at_ms, 0) < 0)
		return -1;
	env_frame_start(env, out, "begin", 0);
	if (total >= 0)
	{
		rp_buf_put_text(out, ",\"total\":");
		rp_fmt_int64(out, total);
	}
	rp_buf_put_text(out, "}\n");
	return 0;
}

int
rp_env_resume(RpEnvelope *env, const char *store, const char *snapshot_id,
			  int64_t snapshot_at_ms, uint64_t next_seq)
{
	RpUuid		id;
	char text[	RP_UUID_TEXT_LEN + 1];

	env->state = RP_ENV_FAILED;
	if (snapshot_id == NULL || !rp_uuid_parse(snapshot_id, strlen(snapshot_id), &id))
		return rp_fail(RP_HALT_NONE, "snapshot envelope: resume with an invalid snapshot_id");
	rp_uuid_text(&id, text);	/* canonical: lowercase */
	if (env_start(env, store, text, snapshot_at_ms) < 0)
		return -1;
	env->seq = next_seq;
	env->state = RP_ENV_OPEN;
	return 0;
}

/* A rendered JSON object on one line, as far as a cheap look can tell. */
static bool
env_object_text(const char *s, size_t len)
{
	return len >= 2 && s[0] == '{' && s[len - 1] == '}' && memchr(s, '\n', len) == NULL;
}

static int
env_write_all(int fd, const char *p, size_t n)
{
	while (n > 0)
	{
		ssize_t		w = write(fd, p, n);

		if (w < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

/*
 * An oversize row with no dead-letter file: its stub stays in the dump
 * (the seqs stay whole), the row itself is lost.  Counted, and warned of at
 * most once every 10 s for the store, naming the store and the count only.
 */
static void
env_drop(RpEnvelope *env)
{
	int64_t		now = rp_clock_mono_ms();

	env->dropped++;
	env->dropped_unwarned++;
	if (env->dropped_warned_ms != 0 && now - env->dropped_warned_ms < RP_ENV_DROP_WARN_MS)
		return;
	fprintf(stderr, "replicant: warning: snapshot of %s: %" PRIu64 " oversize row%s dropped"
			" (larger than the record limit, and no dead-letter file)\n",
			env->store ? env->store : "?", env->dropped_unwarned, env->dropped_unwarned == 1 ? "" : "s");
	env->dropped_unwarned = 0;
	env->dropped_warned_ms = now;
}

/* The dead-letter line of an oversize row: one write(2), O_APPEND. */
static int
env_dead_letter(RpEnvelope *env, const char *record, size_t len)
{
	RpBuf		line;
	size_t		cut = len < env->max_dlq_bytes ? len : env->max_dlq_bytes;
	int			rc = 0;

	if (env->dlq_path == NULL)
	{
		env_drop(env);
		return 0;
	}
	if (env->dlq_fd < 0)
	{
		env->dlq_fd = open(env->dlq_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (env->dlq_fd < 0)
			return rp_fail(RP_HALT_NONE, "could not open dead-letter file \"%s\": %s",
						   env->dlq_path, strerror(errno));
	}
	/* back off to a UTF-8 boundary: never keep half a character */
	while (cut > 0 && cut < len && (((unsigned char) record[cut]) & 0xC0) == 0x80)
		cut--;

	rp_buf_init(&line, cut + 256);
	rp_buf_put_text(&line, "{\"snapshot_id\":\"");
	rp_buf_put_text(&line, env->snapshot_id);
	rp_buf_put_text(&line, "\",\"store\":");
	rp_json_cstring(&line, env->store);
	rp_buf_put_text(&line, ",\"seq\":");
	rp_fmt_uint64(&line, env->seq);
	rp_buf_put_text(&line, ",\"reason\":\"" DLQ_REASON "\",\"bytes\":");
	rp_fmt_uint64(&line, len);
	rp_buf_put_text(&line, ",\"truncated_record\":");
	rp_json_string(&line, record, cut);
	rp_buf_put_text(&line, "}\n");
	if (env_write_all(env->dlq_fd, line.data, line.len) < 0)
		rc = rp_fail(RP_HALT_NONE, "could not write dead-letter file \"%s\": %s",
					 env->dlq_path, strerror(errno));
	else
	{
		env->dlq_dirty = true;
		env->dlq_lines++;
	}
	rp_buf_free(&line);
	return rc;
}

int
rp_env_row(RpEnvelope *env, RpBuf *out, const char *record, size_t len,
		   const char *row_key, size_t key_len)
{
	if (env->state != RP_ENV_OPEN)
	{
		env->state = env->state == RP_ENV_IDLE ? RP_ENV_IDLE : RP_ENV_FAILED;
		return rp_fail(RP_HALT_NONE, "snapshot envelope: row outside an open dump");
	}
	if (record == NULL || !env_object_text(record, len))
	{
		env->state = RP_ENV_FAILED;
		return rp_fail(RP_HALT_NONE, "snapshot envelope: row %" PRIu64 " of %s is not a one-line JSON object",
					   env->seq, env->store);
	}
	if (!rp_env_oversize(env, len))
	{
		env_frame_start(env, out, "row", env->seq);
		rp_buf_put_text(out, ",\"record\":");
		rp_buf_put_bytes(out, record, len);
		rp_buf_put_text(out, "}\n");
		env->rows++;
		env->seq++;
		return 0;
	}
	if (row_key != NULL && !env_object_text(row_key, key_len))
	{
		env->state = RP_ENV_FAILED;
		return rp_fail(RP_HALT_NONE, "snapshot envelope: row key %" PRIu64 " of %s is not a one-line JSON object",
					   env->seq, env->store);
	}
	if (env_dead_letter(env, record, len) < 0)
	{
		env->state = RP_ENV_FAILED;
		return -1;
	}
	env_frame_start(env, out, "oversize", env->seq);
	rp_buf_put_text(out, ",\"bytes\":");
	rp_fmt_uint64(out, len);
	rp_buf_put_text(out, ",\"row_key\":");
	if (row_key)
		rp_buf_put_bytes(out, row_key, key_len);
	else
		rp_buf_put_text(out, "null");
	rp_buf_put_text(out, "}\n");
	env->oversize++;
	env->seq++;
	return 0;
}

int
rp_env_end(RpEnvelope *env, RpBuf *out, int64_t completed_at_ms)
{
	char		completed[RP_RFC3339_MS_LEN + 1];

	if (env->state != RP_ENV_OPEN)
	{
		if (env->state == RP_ENV_FAILED)
			return rp_fail(RP_HALT_NONE, "snapshot envelope: the dump of %s failed, no end frame",
						   env->store ? env->store : "(none)");
		return rp_fail(RP_HALT_NONE, "snapshot envelope: end without an open dump");
	}
	if (rp_rfc3339_ms(completed, completed_at_ms) < 0 || rp_env_dlq_sync(env) < 0)
	{
		env->state = RP_ENV_FAILED;
		return -1;
	}
	env_frame_start(env, out, "end", env->seq);
	rp_buf_put_text(out, ",\"row_count\":");
	rp_fmt_uint64(out, env->seq);
	rp_buf_put_text(out, ",\"completed_at\":\"");
	rp_buf_put_text(out, completed);
	rp_buf_put_text(out, "\"}\n");
	env->state = RP_ENV_ENDED;
	return 0;
}
