/*
 * nats_floor.c
 *    The floor of publishing a change log into JetStream, for
 *    bench/nats_sink.sh: the data records of a file-sink log (one JSON
 *    object a line) published as they are, one message each, asynchronously
 *    with a window of publishes in flight, each with the headers the NATS
 *    sink sets (docs/sinks.md: Nats-Msg-Id, the Replicant-* headers and
 *    Nats-Expected-Last-Sequence), into a stream created here with the sink's
 *    settings (file storage, limits retention, deny delete and purge).  No
 *    PostgreSQL, no replicant: what is left is libnats' and the servers' own
 *    work for the same messages.
 *
 *    nats_floor URLS STREAM PREFIX REPLICAS WINDOW FILE
 *    nats_floor count URLS STREAM SUBJECT
 *
 * The second form prints how many messages STREAM holds on SUBJECT (the
 * servers' stream info, subject-filtered): a bench's check that every data
 * message arrived, relation and position messages on the control subject
 * aside.
 *
 * The header values are made up, of the sink's shapes and about its
 * lengths (the commit LSN and xid move every 1,000 messages); the payload
 * bytes are the log's.  Prints "messages BYTES_OF_PAYLOAD" on stdout; exit
 * status 0 once every publish is acknowledged, 1 on the first failure
 * (named by its NATS status, never by a message's content).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

static atomic_long failures;

static void
on_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
	if (atomic_fetch_add(&failures, 1) == 0)
		fprintf(stderr, "nats_floor: a publish failed: %s (JetStream error %d)\n",
				natsStatus_GetText(pae->Err), (int) pae->ErrCode);
}

/* Is this log line a data record (insert, update, delete)? */
static bool
is_change(const char *line)
{
	return strstr(line, "\"kind\":\"insert\"") || strstr(line, "\"kind\":\"update\"") ||
		strstr(line, "\"kind\":\"delete\"");
}

static const char *
op_of(const char *line)
{
	return strstr(line, "\"kind\":\"insert\"") ? "insert" :
		strstr(line, "\"kind\":\"update\"") ? "update" : "delete";
}

static natsStatus
set_headers(natsMsg *m, const char *line, uint64_t n, const char *subject_table)
{
	uint64_t	txn = n / 1000;
	uint64_t	lsn = 0x3000000 + txn * 0x20000;
	char		id[128],
				clsn[32],
				elsn[32],
				plsn[32],
				xid[24],
				idx[24],
				key[48],
				seq[24];
	natsStatus	s = NATS_OK;

	snprintf(clsn, sizeof(clsn), "%X/%X", (unsigned) (lsn >> 32), (unsigned) lsn);
	snprintf(elsn, sizeof(elsn), "%X/%X", (unsigned) (lsn >> 32), (unsigned) (lsn + 0x30));
	snprintf(plsn, sizeof(plsn), "%X/%X", (unsigned) (lsn >> 32), (unsigned) (lsn - 0x20000 + 0x30));
	snprintf(id, sizeof(id), "7412345678901234567:bench:%s:%llu", clsn, (unsigned long long) (n % 1000));
	snprintf(xid, sizeof(xid), "%llu", (unsigned long long) (740 + txn));
	snprintf(idx, sizeof(idx), "%llu", (unsigned long long) (n % 1000));
	snprintf(key, sizeof(key), "{\"id\":%llu}", (unsigned long long) (n + 1));
	/* the expected last sequence: the stream is new and only this writer appends */
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long) n);
	s = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
#define SET(k, v) do { if (s == NATS_OK) s = natsMsgHeader_Set(m, (k), (v)); } while (0)
	SET("Replicant-Lsn", clsn);
	SET("Replicant-End-Lsn", elsn);
	SET("Replicant-Prev-End-Lsn", plsn);
	SET("Replicant-Xid", xid);
	SET("Replicant-Index", idx);
	if (n % 1000 == 999)
		SET("Replicant-Last", "true");
	SET("Replicant-Op", op_of(line));
	SET("Replicant-Table", subject_table);
	SET("Replicant-Key", key);
	SET("Replicant-Commit-Time", "2026-12-01T15:00:00.123456Z");
	SET("Replicant-System-Id", "7412345678901234567");
	SET("Replicant-Timeline", "1");
	SET("Replicant-Slot", "bench");
	SET("Replicant-Writer", "12345-0123456789abcdef");
	SET("Replicant-Relation-Seq", "1");
	SET("Nats-Expected-Last-Sequence", seq);
#undef SET
	return s;
}

/* A connection and JetStream context on the comma-separated URLS. */
static jsCtx *
connect_js(const char *list, natsConnection **nc, int window)
{
	natsOptions *opts = NULL;
	jsCtx	   *js = NULL;
	jsOptions	jo;
	const char *servers[16];
	int			nservers = 0;
	char	   *urls = strdup(list),
			   *tok,
			   *save = NULL;
	natsStatus	s;

	for (tok = strtok_r(urls, ",", &save); tok && nservers < 16; tok = strtok_r(NULL, ",", &save))
		servers[nservers++] = tok;
	s = natsOptions_Create(&opts);
	if (s == NATS_OK)
		s = natsOptions_SetServers(opts, servers, nservers);
	if (s == NATS_OK)
		s = natsConnection_Connect(nc, opts);
	jsOptions_Init(&jo);
	jo.PublishAsync.MaxPending = window;
	jo.PublishAsync.StallWait = 60000;
	jo.PublishAsync.ErrHandler = on_error;
	if (s == NATS_OK)
		s = natsConnection_JetStream(&js, *nc, &jo);
	natsOptions_Destroy(opts);
	free(urls);
	if (s != NATS_OK)
	{
		fprintf(stderr, "nats_floor: connecting: %s\n", natsStatus_GetText(s));
		exit(1);
	}
	return js;
}

static int
count(const char *urls, const char *stream, const char *subject)
{
	natsConnection *nc = NULL;
	jsCtx	   *js = connect_js(urls, &nc, 16);
	jsOptions	jo;
	jsStreamInfo *si = NULL;
	jsErrCode	code = 0;
	uint64_t	n = 0;
	natsStatus	s;

	jsOptions_Init(&jo);
	jo.Stream.Info.SubjectsFilter = subject;
	s = js_GetStreamInfo(&si, js, stream, &jo, &code);
	if (s != NATS_OK)
	{
		fprintf(stderr, "nats_floor: stream info: %s (JetStream error %d)\n", natsStatus_GetText(s), (int) code);
		return 1;
	}
	if (si->State.Subjects)
		for (int i = 0; i < si->State.Subjects->Count; i++)
			n += si->State.Subjects->List[i].Msgs;
	printf("%llu\n", (unsigned long long) n);
	jsStreamInfo_Destroy(si);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	return 0;
}

int
main(int argc, char **argv)
{
	natsConnection *nc = NULL;
	jsCtx	   *js;
	jsStreamConfig cfg;
	jsStreamInfo *si = NULL;
	jsErrCode	code = 0;
	jsPubOptions po;
	char		subjects[256],
				subject[256];
	const char *subj[1] = {subjects};
	FILE	   *f;
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		n;
	uint64_t	msgs = 0,
				bytes = 0;
	natsStatus	s;

	if (argc == 5 && strcmp(argv[1], "count") == 0)
		return count(argv[2], argv[3], argv[4]);
	if (argc != 7)
	{
		fprintf(stderr, "usage: nats_floor URLS STREAM PREFIX REPLICAS WINDOW FILE | count URLS STREAM SUBJECT\n");
		return 2;
	}
	snprintf(subjects, sizeof(subjects), "%s.>", argv[3]);
	snprintf(subject, sizeof(subject), "%s.public.nsbench", argv[3]);
	if ((f = fopen(argv[6], "r")) == NULL)
	{
		perror("nats_floor: the log");
		return 1;
	}

	js = connect_js(argv[1], &nc, atoi(argv[5]));
	jsStreamConfig_Init(&cfg);
	cfg.Name = argv[2];
	cfg.Subjects = subj;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	cfg.Retention = js_LimitsPolicy;
	cfg.Replicas = atoi(argv[4]);
	cfg.DenyDelete = true;
	cfg.DenyPurge = true;
	s = js_AddStream(&si, js, &cfg, NULL, &code);
	if (s != NATS_OK)
	{
		fprintf(stderr, "nats_floor: creating the stream: %s (JetStream error %d)\n", natsStatus_GetText(s), (int) code);
		return 1;
	}
	jsStreamInfo_Destroy(si);

	jsPubOptions_Init(&po);
	po.MaxWait = 5000;
	while ((n = getline(&line, &cap, f)) > 0 && atomic_load(&failures) == 0)
	{
		natsMsg    *m = NULL;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (!is_change(line))
			continue;
		s = natsMsg_Create(&m, subject, NULL, line, (int) n);
		if (s == NATS_OK)
			s = set_headers(m, line, msgs, "public.nsbench");
		if (s == NATS_OK)
			s = js_PublishMsgAsync(js, &m, &po);
		if (s != NATS_OK)
		{
			fprintf(stderr, "nats_floor: publishing: %s\n", natsStatus_GetText(s));
			natsMsg_Destroy(m);
			return 1;
		}
		msgs++;
		bytes += (uint64_t) n;
	}
	s = js_PublishAsyncComplete(js, NULL);
	if (s != NATS_OK || atomic_load(&failures) > 0)
	{
		fprintf(stderr, "nats_floor: %ld publishes failed (%s)\n", atomic_load(&failures), natsStatus_GetText(s));
		return 1;
	}
	printf("%llu %llu\n", (unsigned long long) msgs, (unsigned long long) bytes);
	free(line);
	fclose(f);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	return 0;
}
