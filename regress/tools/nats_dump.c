/*
 * regress/tools/nats_dump.c: the nats tests' independent reader of a JetStream stream.
 *
 *   nats_dump URLS STREAM dump [FROM TO] every message by sequence, first to last (or FROM to
 *                                       TO, clamped to the stream's), one JSON
 *                                       line each: {"seq":N,"subject":"...","headers":
 *                                       {"Key":"value" or ["v1","v2"]},"data":"payload"}
 *                                       ({"seq":N,"missing":true} for a sequence not there)
 *   nats_dump URLS STREAM info          {"exists":true,"created":NS,"messages":N,"bytes":N,
 *                                        "first_seq":N,"last_seq":N,
 *                                        "max_bytes":N,"discard":"new|old","replicas":N,
 *                                        "duplicates_ns":N,"deny_delete":B,"deny_purge":B,
 *                                        "subjects":[...],"leader":"n1"}
 *   nats_dump URLS STREAM create PREFIX MAX_BYTES REPLICAS
 *                                       create the stream as a test wants it beforehand: file
 *                                       storage, subjects PREFIX.>, limits retention, deny
 *                                       delete and purge, MAX_BYTES with discard new
 *   nats_dump URLS STREAM max-bytes N   update the stream's max bytes (-1: unlimited)
 *   nats_dump URLS STREAM max-age S     update the stream's max age in seconds (0: none)
 *   nats_dump URLS STREAM delete-stream delete the stream
 *   nats_dump URLS STREAM register SLOT record the stream in the NATS sink's stream registry
 *                                       as slot SLOT's, made when the server says (a
 *                                       planted stream that stands for one the sink wrote)
 *   nats_dump URLS STREAM registry      the stream's registry entry as stored, or
 *                                       {"exists":false}
 *   nats_dump URLS STREAM tail          the last message as dump prints it, plus
 *                                       "last_complete_end": the Replicant-End-Lsn of the last
 *                                       data message with Replicant-Last or position message
 *                                       (Replicant-Op position) (walks back over the
 *                                       open transaction by its Replicant-Index); "" when none
 *   nats_dump URLS STREAM publish SUBJECT DATA [KEY=VALUE...]
 *                                       one synchronous publish with those headers (a foreign
 *                                       writer for the fencing tests); prints the sequence
 *   nats_dump URLS STREAM create-open PREFIX REPLICAS
 *                                       create as "create" does, but with delete and purge
 *                                       allowed and no max bytes: a stream to plant holes in
 *   nats_dump URLS STREAM copy SRC OLD NEW FROM TO [SKIP...]
 *                                       publish SRC's messages FROM..TO into STREAM in order,
 *                                       the subject prefix OLD made NEW (two streams cannot
 *                                       share subjects), headers and payload as they are, except the
 *                                       sequences SKIP (and any SRC lacks); Nats-Expected-*
 *                                       headers are dropped and Replicant-Relation-Seq is
 *                                       mapped to the copy of that relation message; prints
 *                                       "SRC_SEQ NEW_SEQ" per message copied
 *   nats_dump URLS STREAM delete SEQ    delete one message (the stream must allow it)
 *   nats_dump URLS STREAM purge-below SEQ
 *                                       purge every message below SEQ
 *
 * Every read is a leader-routed get (js_GetMsg, the stream info API), not a direct get, so
 * what it prints is what the stream's RAFT group committed. A request that fails with a
 * timeout, no responders or no leader is retried for up to 120 s (leader elections); after
 * 5 s of such answers on one connection it connects again, to a server picked at random: a
 * node that rejoined the cluster can keep answering "JetStream system temporarily unavailable"
 * (10008) from its own view of the meta group while the others serve the stream.
 * The servers are tried from one picked at random, or from the first when NATS_DUMP_IN_ORDER is
 * set (test/t/080_nats_dump_detached.pl). Built by the scripts into their temp dir:
 *   cc -O2 -o DIR/nats_dump regress/tools/nats_dump.c $(pkg-config --cflags --libs libnats)
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#define RETRY_SECONDS 120
#define RECONNECT_SECONDS 5

/*
 * one connection for the whole run, to servers[first] (then the next ones in order);
 * connect_js() replaces it, starting one server further on
 */
static const char *servers[16];
static int	nservers;
static int	first;
static natsOptions *opts;
static natsConnection *nc;
static jsCtx *js;

static void
die(const char *what, natsStatus s, jsErrCode jerr)
{
	fprintf(stderr, "nats_dump: %s: %s (status %d, jetstream error %d)\n",
			what, natsStatus_GetText(s), (int) s, (int) jerr);
	exit(1);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* worth another try: the cluster is electing or a node is down */
static int
transient(natsStatus s, jsErrCode jerr)
{
	return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS || s == NATS_NO_SERVER ||
		s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED ||
		s == NATS_STALE_CONNECTION ||
		jerr == 10008 /* cluster not available */ ||
		jerr == 10076 /* no responders */ ;
}

static void
put_json_string(FILE *f, const char *p, int len)
{
	int			i;

	fputc('"', f);
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) p[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
put_str(FILE *f, const char *s)
{
	put_json_string(f, s, (int) strlen(s));
}

/* connect (again): a cluster with a node down answers on another, so retry while none does */
static void
connect_js(void)
{
	double		deadline = now_s() + RETRY_SECONDS;
	jsOptions	jo;
	natsStatus	s;

	const char *order[16];
	int			i;

	if (js != NULL)
		jsCtx_Destroy(js);
	js = NULL;
	if (nc != NULL)
		natsConnection_Destroy(nc);
	nc = NULL;
	for (i = 0; i < nservers; i++)
		order[i] = servers[(first + i) % nservers];
	first++;
	natsOptions_Destroy(opts);
	opts = NULL;
	if ((s = natsOptions_Create(&opts)) != NATS_OK ||
		(s = natsOptions_SetServers(opts, order, nservers)) != NATS_OK ||
		(s = natsOptions_SetNoRandomize(opts, true)) != NATS_OK ||
		(s = natsOptions_SetTimeout(opts, 5000)) != NATS_OK ||
		(s = natsOptions_SetMaxReconnect(opts, -1)) != NATS_OK ||
		(s = natsOptions_SetReconnectWait(opts, 200)) != NATS_OK)
		die("options", s, 0);
	while ((s = natsConnection_Connect(&nc, opts)) != NATS_OK)
	{
		if (now_s() > deadline)
			die("connect", s, 0);
		usleep(200 * 1000);
	}
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	if ((s = natsConnection_JetStream(&js, nc, &jo)) != NATS_OK)
		die("jetstream context", s, 0);
}

/* between two tries of a request that got a transient answer */
static void
retry_pause(void)
{
	static double first;
	static double last;
	double		now = now_s();

	/* a streak: transient answers no more than a second apart */
	if (last == 0 || now - last > 1.0)
		first = now;
	last = now;
	if (now - first > RECONNECT_SECONDS)
	{
		connect_js();
		first = last = 0;
		return;
	}
	usleep(200 * 1000);
}

static jsStreamInfo *
stream_info(const char *stream)
{
	double		deadline = now_s() + RETRY_SECONDS;

	for (;;)
	{
		jsStreamInfo *si = NULL;
		jsErrCode	jerr = 0;
		natsStatus	s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);

		/*
		 * A group without a leader: each member answers from its own store,
		 * and one that was down lacks messages: not the stream's state.
		 */
		if (s == NATS_OK && si->Cluster != NULL &&
			(si->Cluster->Leader == NULL || si->Cluster->Leader[0] == '\0'))
		{
			jsStreamInfo_Destroy(si);
			si = NULL;
			if (now_s() > deadline)
				die("stream info (no leader)", NATS_TIMEOUT, 0);
			retry_pause();
			continue;
		}
		if (s == NATS_OK)
			return si;
		if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)
			return NULL;
		if (!transient(s, jerr) || now_s() > deadline)
			die("stream info", s, jerr);
		retry_pause();
	}
}

static void
print_msg_to(uint64_t seq, natsMsg *m, int newline)
{
	const char **keys = NULL;
	int			nkeys = 0;
	int			i;

	printf("{\"seq\":%" PRIu64 ",\"subject\":", seq);
	put_str(stdout, natsMsg_GetSubject(m));
	printf(",\"headers\":{");
	if (natsMsgHeader_Keys(m, &keys, &nkeys) == NATS_OK)
	{
		for (i = 0; i < nkeys; i++)
		{
			const char **vals = NULL;
			int			nvals = 0;
			int			j;

			if (i > 0)
				putchar(',');
			put_str(stdout, keys[i]);
			putchar(':');
			if (natsMsgHeader_Values(m, keys[i], &vals, &nvals) != NATS_OK)
				nvals = 0;
			if (nvals == 1)
				put_str(stdout, vals[0]);
			else
			{
				putchar('[');
				for (j = 0; j < nvals; j++)
				{
					if (j > 0)
						putchar(',');
					put_str(stdout, vals[j]);
				}
				putchar(']');
			}
			free((void *) vals);
		}
		free((void *) keys);
	}
	printf("},\"data\":");
	put_json_string(stdout, natsMsg_GetData(m), natsMsg_GetDataLength(m));
	printf(newline ? "}\n" : "}");
}

static void
print_msg(uint64_t seq, natsMsg *m)
{
	print_msg_to(seq, m, 1);
}

/* the message at seq (NULL when the stream has none there), retried through elections */
static natsMsg *
get_msg(const char *stream, uint64_t seq)
{
	double		deadline = now_s() + RETRY_SECONDS;

	for (;;)
	{
		natsMsg    *m = NULL;
		jsErrCode	jerr = 0;
		natsStatus	s = js_GetMsg(&m, js, stream, seq, NULL, &jerr);

		if (s == NATS_OK)
			return m;
		if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
			return NULL;
		if (!transient(s, jerr) || now_s() > deadline)
			die("get message", s, jerr);
		retry_pause();
	}
}

static const char *
header(natsMsg *m, const char *key)
{
	const char *v = NULL;

	if (natsMsgHeader_Get(m, key, &v) != NATS_OK)
		return NULL;
	return v;
}

static int
is_data(natsMsg *m)
{
	const char *op = header(m, "Replicant-Op");

	return op != NULL && strcmp(op, "relation") != 0;
}

static void
tail(const char *stream)
{
	jsStreamInfo *si = stream_info(stream);
	uint64_t	last,
				seq;
	natsMsg    *m;
	char		end[64] = "";

	if (si == NULL)
	{
		fprintf(stderr, "nats_dump: stream %s does not exist\n", stream);
		exit(2);
	}
	last = si->State.LastSeq;
	jsStreamInfo_Destroy(si);
	if (last == 0)
	{
		printf("{\"seq\":0,\"last_complete_end\":\"\"}\n");
		return;
	}
	m = get_msg(stream, last);
	seq = last;

	/*
	 * walk back to the last message with Replicant-Last, skipping the open
	 * transaction
	 */
	while (seq > 0)
	{
		natsMsg    *w = (seq == last) ? m : get_msg(stream, seq);
		const char *lastv;
		const char *idx;
		uint64_t	next = seq - 1;

		if (w == NULL)
			break;
		if (is_data(w))
		{
			const char *op = header(w, "Replicant-Op");

			lastv = header(w, "Replicant-Last");

			/*
			 * a position message marks a confirmable end as a last message
			 * does
			 */
			if ((lastv != NULL && strcmp(lastv, "true") == 0) || strcmp(op, "position") == 0)
			{
				snprintf(end, sizeof(end), "%s", header(w, "Replicant-End-Lsn") ? header(w, "Replicant-End-Lsn") : "");
				if (w != m)
					natsMsg_Destroy(w);
				break;
			}
			idx = header(w, "Replicant-Index");
			if (idx != NULL && strtoull(idx, NULL, 10) + 1 <= seq)
				next = seq - strtoull(idx, NULL, 10) - 1;
		}
		if (w != m)
			natsMsg_Destroy(w);
		seq = next;
	}
	if (m == NULL)
	{
		printf("{\"seq\":%" PRIu64 ",\"missing\":true,\"last_complete_end\":\"%s\"}\n", last, end);
		return;
	}
	/* print_msg's line with the field added before its closing brace */
	printf("{\"last_complete_end\":\"%s\",\"msg\":", end);
	print_msg_to(last, m, 0);
	printf("}\n");
	natsMsg_Destroy(m);
}

static void
dump(const char *stream, uint64_t from, uint64_t to)
{
	jsStreamInfo *si = stream_info(stream);
	uint64_t	first,
				last,
				seq;

	if (si == NULL)
	{
		fprintf(stderr, "nats_dump: stream %s does not exist\n", stream);
		exit(2);
	}
	first = si->State.FirstSeq;
	last = si->State.LastSeq;
	jsStreamInfo_Destroy(si);
	if (from > first)
		first = from;
	if (to > 0 && to < last)
		last = to;
	for (seq = (first ? first : 1); seq <= last; seq++)
	{
		double		deadline = now_s() + RETRY_SECONDS;

		for (;;)
		{
			natsMsg    *m = NULL;
			jsErrCode	jerr = 0;
			natsStatus	s = js_GetMsg(&m, js, stream, seq, NULL, &jerr);

			if (s == NATS_OK)
			{
				print_msg(seq, m);
				natsMsg_Destroy(m);
				break;
			}
			if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
			{
				printf("{\"seq\":%" PRIu64 ",\"missing\":true}\n", seq);
				break;
			}
			if (!transient(s, jerr) || now_s() > deadline)
				die("get message", s, jerr);
			retry_pause();
		}
	}
}

static void
info(const char *stream)
{
	jsStreamInfo *si = stream_info(stream);
	int			i;

	if (si == NULL)
	{
		printf("{\"exists\":false}\n");
		return;
	}
	printf("{\"exists\":true,\"created\":%" PRId64 ",\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64
		   ",\"first_seq\":%" PRIu64 ",\"last_seq\":%" PRIu64
		   ",\"max_bytes\":%" PRId64 ",\"discard\":\"%s\",\"replicas\":%" PRId64
		   ",\"duplicates_ns\":%" PRId64 ",\"deny_delete\":%s,\"deny_purge\":%s"
		   ",\"retention\":%d,\"storage\":%d,\"subjects\":[",
		   si->Created, si->State.Msgs, si->State.Bytes, si->State.FirstSeq, si->State.LastSeq,
		   si->Config->MaxBytes, si->Config->Discard == js_DiscardNew ? "new" : "old",
		   si->Config->Replicas, si->Config->Duplicates,
		   si->Config->DenyDelete ? "true" : "false",
		   si->Config->DenyPurge ? "true" : "false",
		   (int) si->Config->Retention, (int) si->Config->Storage);
	for (i = 0; i < si->Config->SubjectsLen; i++)
	{
		if (i > 0)
			putchar(',');
		put_str(stdout, si->Config->Subjects[i]);
	}
	printf("],\"leader\":");
	put_str(stdout, si->Cluster && si->Cluster->Leader ? si->Cluster->Leader : "");
	printf("}\n");
	jsStreamInfo_Destroy(si);
}

static void
create(const char *stream, const char *prefix, int64_t max_bytes, int64_t replicas,
	   bool deny)
{
	jsStreamConfig cfg;
	char		subject[2][1024];
	const char *subjects[2];
	const char *comma = strchr(prefix, ',');
	double		deadline = now_s() + RETRY_SECONDS;

	/* "a,b": two subjects, a.> and b.> (a stream the sink never writes) */
	snprintf(subject[0], sizeof(subject[0]), "%.*s.>", comma ? (int) (comma - prefix) : (int) strlen(prefix), prefix);
	subjects[0] = subject[0];
	if (comma)
	{
		snprintf(subject[1], sizeof(subject[1]), "%s.>", comma + 1);
		subjects[1] = subject[1];
	}
	jsStreamConfig_Init(&cfg);
	cfg.Name = stream;
	cfg.Subjects = subjects;
	cfg.SubjectsLen = comma ? 2 : 1;
	cfg.Storage = js_FileStorage;
	cfg.Retention = js_LimitsPolicy;
	cfg.MaxBytes = max_bytes;
	cfg.Discard = js_DiscardNew;
	cfg.Replicas = replicas;
	cfg.DenyDelete = deny;
	cfg.DenyPurge = deny;
	for (;;)
	{
		jsErrCode	jerr = 0;
		natsStatus	s = js_AddStream(NULL, js, &cfg, NULL, &jerr);

		if (s == NATS_OK)
			return;
		if (!transient(s, jerr) || now_s() > deadline)
			die("create stream", s, jerr);
		retry_pause();
	}
}

/* which limit set_limit changes */
enum limit
{
	LIMIT_MAX_BYTES,
	LIMIT_MAX_AGE_S
};

static void
set_limit(const char *stream, enum limit which, int64_t value)
{
	double		deadline = now_s() + RETRY_SECONDS;

	for (;;)
	{
		jsStreamInfo *si = stream_info(stream);
		jsErrCode	jerr = 0;
		natsStatus	s;

		if (si == NULL)
		{
			fprintf(stderr, "nats_dump: stream %s does not exist\n", stream);
			exit(2);
		}
		if (which == LIMIT_MAX_BYTES)
			si->Config->MaxBytes = value;
		else
		{
			/* the server refuses a duplicate window longer than the max age */
			si->Config->MaxAge = value * 1000000000LL;
			if (value > 0 && si->Config->Duplicates > si->Config->MaxAge)
				si->Config->Duplicates = si->Config->MaxAge;
		}
		s = js_UpdateStream(NULL, js, si->Config, NULL, &jerr);
		jsStreamInfo_Destroy(si);
		if (s == NATS_OK)
			return;
		if (!transient(s, jerr) || now_s() > deadline)
			die("update stream", s, jerr);
		retry_pause();
	}
}

static void
delete_stream(const char *stream)
{
	jsErrCode	jerr = 0;
	natsStatus	s = js_DeleteStream(js, stream, NULL, &jerr);

	if (s != NATS_OK)
		die("delete stream", s, jerr);
}

/*
 * The stream registry the NATS sink keeps (docs/sinks.md): the JetStream
 * key-value bucket REPLICANT_STREAMS, key the stream name (bytes outside
 * [A-Za-z0-9_-] as =XX), value {"slot":"S","created":N}.
 */
static kvStore *
registry(bool make)
{
	kvStore    *kv = NULL;
	kvConfig	cfg;
	natsStatus	s = js_KeyValue(&kv, js, "REPLICANT_STREAMS");

	if (s == NATS_OK)
		return kv;
	if (!make)
		return NULL;
	kvConfig_Init(&cfg);
	cfg.Bucket = "REPLICANT_STREAMS";
	cfg.History = 1;
	cfg.StorageType = js_FileStorage;
	cfg.Replicas = nservers >= 3 ? 3 : 1;
	if ((s = js_CreateKeyValue(&kv, js, &cfg)) != NATS_OK)
		die("create key-value bucket", s, 0);
	return kv;
}

static void
registry_key(const char *stream, char *key, size_t len)
{
	size_t		n = 0;

	for (const unsigned char *p = (const unsigned char *) stream; *p && n + 4 < len; p++)
	{
		if (isalnum(*p) || *p == '_' || *p == '-')
			key[n++] = (char) *p;
		else
			n += (size_t) snprintf(key + n, len - n, "=%02X", *p);
	}
	key[n] = '\0';
}

/* register SLOT: record the stream as slot SLOT's, made when the server says (replaces) */
static void
register_stream(const char *stream, const char *slot)
{
	jsStreamInfo *si = stream_info(stream);
	kvStore    *kv;
	char		key[512];
	char		val[512];
	uint64_t	rev = 0;
	natsStatus	s;

	if (si == NULL)
	{
		fprintf(stderr, "nats_dump: stream %s does not exist\n", stream);
		exit(2);
	}
	kv = registry(true);
	registry_key(stream, key, sizeof(key));
	snprintf(val, sizeof(val), "{\"slot\":\"%s\",\"created\":%" PRId64 "}", slot, si->Created);
	jsStreamInfo_Destroy(si);
	if ((s = kvStore_PutString(&rev, kv, key, val)) != NATS_OK)
		die("put registry entry", s, 0);
	kvStore_Destroy(kv);
}

/* registry: the stream's entry as stored, or {"exists":false} */
static void
show_registry(const char *stream)
{
	kvStore    *kv = registry(false);
	kvEntry    *e = NULL;
	char		key[512];

	registry_key(stream, key, sizeof(key));
	if (kv == NULL || kvStore_Get(&e, kv, key) != NATS_OK)
		printf("{\"exists\":false}\n");
	else
	{
		printf("%.*s\n", kvEntry_ValueLen(e), (const char *) kvEntry_Value(e));
		kvEntry_Destroy(e);
	}
	if (kv)
		kvStore_Destroy(kv);
}

static void
publish(int argc, char **argv)
{
	natsMsg    *m = NULL;
	jsPubAck   *ack = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;
	int			i;

	if ((s = natsMsg_Create(&m, argv[4], NULL, argv[5], (int) strlen(argv[5]))) != NATS_OK)
		die("message", s, 0);
	for (i = 6; i < argc; i++)
	{
		char	   *eq = strchr(argv[i], '=');

		if (eq == NULL)
		{
			fprintf(stderr, "nats_dump: header without '=': %s\n", argv[i]);
			exit(2);
		}
		*eq = '\0';
		if ((s = natsMsgHeader_Add(m, argv[i], eq + 1)) != NATS_OK)
			die("header", s, 0);
	}
	if ((s = js_PublishMsg(&ack, js, m, NULL, &jerr)) != NATS_OK)
		die("publish", s, jerr);
	printf("%" PRIu64 "\n", ack->Sequence);
	jsPubAck_Destroy(ack);
	natsMsg_Destroy(m);
}

/* a publish of m retried through elections; the stream sequence it got */
static uint64_t
publish_retry(natsMsg *m)
{
	double		deadline = now_s() + RETRY_SECONDS;

	for (;;)
	{
		jsPubAck   *ack = NULL;
		jsErrCode	jerr = 0;
		natsStatus	s = js_PublishMsg(&ack, js, m, NULL, &jerr);

		if (s == NATS_OK)
		{
			uint64_t	seq = ack->Sequence;

			if (ack->Duplicate)
			{
				fprintf(stderr, "nats_dump: copy: the server took a message as a duplicate\n");
				exit(1);
			}
			jsPubAck_Destroy(ack);
			return seq;
		}
		if (!transient(s, jerr) || now_s() > deadline)
			die("publish", s, jerr);
		retry_pause();
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static void
copy(const char *stream, const char *src, const char *old_prefix,
	 const char *new_prefix, uint64_t from, uint64_t to, uint64_t *skip, int nskip)
{
	uint64_t	seq;
	uint64_t   *old_of = NULL;	/* sequence map: copied[i] = (old, new) pairs */
	uint64_t   *new_of = NULL;
	size_t		n = 0,
				cap = 0;

	qsort(skip, nskip, sizeof(uint64_t), cmp_u64);
	for (seq = from; seq <= to; seq++)
	{
		natsMsg    *m,
				   *c = NULL;
		const char *subject;
		char		newsub[4096];
		const char **keys = NULL;
		int			nkeys = 0;
		int			i;
		natsStatus	s;

		if (nskip > 0 && bsearch(&seq, skip, nskip, sizeof(uint64_t), cmp_u64) != NULL)
			continue;
		if ((m = get_msg(src, seq)) == NULL)
			continue;
		subject = natsMsg_GetSubject(m);
		if (strncmp(subject, old_prefix, strlen(old_prefix)) != 0)
		{
			fprintf(stderr, "nats_dump: copy: sequence %" PRIu64 "'s subject does not start with %s\n",
					seq, old_prefix);
			exit(1);
		}
		snprintf(newsub, sizeof(newsub), "%s%s", new_prefix, subject + strlen(old_prefix));
		if ((s = natsMsg_Create(&c, newsub, NULL,
								natsMsg_GetData(m), natsMsg_GetDataLength(m))) != NATS_OK)
			die("message", s, 0);
		if (natsMsgHeader_Keys(m, &keys, &nkeys) == NATS_OK)
		{
			for (i = 0; i < nkeys; i++)
			{
				const char **vals = NULL;
				int			nvals = 0;
				int			j;

				if (strncmp(keys[i], "Nats-Expected-", 14) == 0)
					continue;
				if (natsMsgHeader_Values(m, keys[i], &vals, &nvals) != NATS_OK)
					nvals = 0;
				for (j = 0; j < nvals; j++)
				{
					char		mapped[32];
					const char *v = vals[j];

					if (strcmp(keys[i], "Replicant-Relation-Seq") == 0)
					{
						uint64_t	rel = strtoull(v, NULL, 10);
						size_t		k;

						for (k = n; k > 0; k--)
							if (old_of[k - 1] == rel)
							{
								snprintf(mapped, sizeof(mapped), "%" PRIu64, new_of[k - 1]);
								v = mapped;
								break;
							}
					}
					if ((s = natsMsgHeader_Add(c, keys[i], v)) != NATS_OK)
						die("header", s, 0);
				}
				free((void *) vals);
			}
			free((void *) keys);
		}
		if (n == cap)
		{
			cap = cap ? cap * 2 : 1024;
			old_of = realloc(old_of, cap * sizeof(uint64_t));
			new_of = realloc(new_of, cap * sizeof(uint64_t));
			if (old_of == NULL || new_of == NULL)
			{
				fprintf(stderr, "nats_dump: out of memory\n");
				exit(1);
			}
		}
		old_of[n] = seq;
		new_of[n] = publish_retry(c);
		printf("%" PRIu64 " %" PRIu64 "\n", seq, new_of[n]);
		n++;
		natsMsg_Destroy(c);
		natsMsg_Destroy(m);
	}
	free(old_of);
	free(new_of);
}

static void
delete_msg(const char *stream, uint64_t seq)
{
	jsErrCode	jerr = 0;
	natsStatus	s = js_DeleteMsg(js, stream, seq, NULL, &jerr);

	if (s != NATS_OK)
		die("delete message", s, jerr);
}

static void
purge_below(const char *stream, uint64_t seq)
{
	jsOptions	o;
	jsErrCode	jerr = 0;
	natsStatus	s;

	jsOptions_Init(&o);
	o.Stream.Purge.Sequence = seq;
	if ((s = js_PurgeStream(js, stream, &o, &jerr)) != NATS_OK)
		die("purge stream", s, jerr);
}

int
main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 4)
	{
		fprintf(stderr, "usage: nats_dump URLS STREAM dump|info|create PREFIX MAX_BYTES REPLICAS|max-bytes N\n");
		return 2;
	}
	cmd = argv[3];
	/* a comma-separated list: each URL a server of its own (SetURL takes one) */
	{
		char	   *list = strdup(argv[1]);
		char	   *tok;
		char	   *save = NULL;

		for (tok = strtok_r(list, ",", &save); tok != NULL && nservers < 16;
			 tok = strtok_r(NULL, ",", &save))
			servers[nservers++] = tok;
	}

	/*
	 * the first server at random (spreads the parallel dumps), unless the
	 * test asks for order
	 */
	if (getenv("NATS_DUMP_IN_ORDER") == NULL)
		first = (int) (getpid() % nservers);
	connect_js();

	if (strcmp(cmd, "dump") == 0 && argc == 4)
		dump(argv[2], 0, 0);
	else if (strcmp(cmd, "dump") == 0 && argc == 6)
		dump(argv[2], strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10));
	else if (strcmp(cmd, "info") == 0)
		info(argv[2]);
	else if (strcmp(cmd, "create") == 0 && argc == 7)
		create(argv[2], argv[4], strtoll(argv[5], NULL, 10), strtoll(argv[6], NULL, 10), true);
	else if (strcmp(cmd, "create-open") == 0 && argc == 6)
		create(argv[2], argv[4], -1, strtoll(argv[5], NULL, 10), false);
	else if (strcmp(cmd, "copy") == 0 && argc >= 9)
	{
		uint64_t   *skip = calloc(argc, sizeof(uint64_t));
		int			i;

		for (i = 9; i < argc; i++)
			skip[i - 9] = strtoull(argv[i], NULL, 10);
		copy(argv[2], argv[4], argv[5], argv[6], strtoull(argv[7], NULL, 10),
			 strtoull(argv[8], NULL, 10), skip, argc - 9);
		free(skip);
	}
	else if (strcmp(cmd, "delete") == 0 && argc == 5)
		delete_msg(argv[2], strtoull(argv[4], NULL, 10));
	else if (strcmp(cmd, "purge-below") == 0 && argc == 5)
		purge_below(argv[2], strtoull(argv[4], NULL, 10));
	else if (strcmp(cmd, "max-bytes") == 0 && argc == 5)
		set_limit(argv[2], LIMIT_MAX_BYTES, strtoll(argv[4], NULL, 10));
	else if (strcmp(cmd, "max-age") == 0 && argc == 5)
		set_limit(argv[2], LIMIT_MAX_AGE_S, strtoll(argv[4], NULL, 10));
	else if (strcmp(cmd, "delete-stream") == 0 && argc == 4)
		delete_stream(argv[2]);
	else if (strcmp(cmd, "register") == 0 && argc == 5)
		register_stream(argv[2], argv[4]);
	else if (strcmp(cmd, "registry") == 0 && argc == 4)
		show_registry(argv[2]);
	else if (strcmp(cmd, "tail") == 0)
		tail(argv[2]);
	else if (strcmp(cmd, "publish") == 0 && argc >= 6)
		publish(argc, argv);
	else
	{
		fprintf(stderr, "nats_dump: unknown command or wrong arguments: %s\n", cmd);
		return 2;
	}
	if (fflush(stdout) != 0 || ferror(stdout))
	{
		perror("nats_dump: stdout");
		return 1;
	}
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	natsOptions_Destroy(opts);
	return 0;
}
