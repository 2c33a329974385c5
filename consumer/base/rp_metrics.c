/*
 * rp_metrics.c
 *    Prometheus text exposition of the registered sources (see rp_metrics.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#ifdef RP_HAVE_MICROHTTPD
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>
#endif

#include "base/rp_counter.h"
#include "base/rp_metrics.h"

void
rp_metrics_sample(RpBuf *b, const char *name, const char *type, const char *help, const char *labels,
				  uint64_t v)
{
	char		line[512];
	int			n;

	if (help)
	{
		n = snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
		rp_buf_put_bytes(b, line, (size_t) n);
	}
	n = snprintf(line, sizeof(line), "%s%s %" PRIu64 "\n", name, labels ? labels : "", v);
	rp_buf_put_bytes(b, line, (size_t) n);
}

void
rp_metrics_label_value(RpBuf *b, const char *s)
{
	for (const char *p = s; *p; p++)
	{
		if (*p == '"' || *p == '\\')
			rp_buf_put_char(b, '\\');
		if (*p != '\n')
			rp_buf_put_char(b, *p);
	}
}

void
rp_metrics_init(RpMetrics *m)
{
	memset(m, 0, sizeof(*m));
}

int
rp_metrics_add(RpMetrics *m, RpMetricsSourceFn fn, const void *arg)
{
	if (m->nsources == RP_METRICS_MAX_SOURCES)
		return rp_fail(RP_HALT_NONE, "too many metrics sources");
	m->sources[m->nsources].fn = fn;
	m->sources[m->nsources].arg = arg;
	m->nsources++;
	return 0;
}

double
rp_metrics_lag_seconds(const RpMetrics *m, uint64_t lag_bytes, int64_t now_us)
{
	int64_t		t = RP_COUNT_LOAD(m->last_commit_time);

	if (lag_bytes == 0 || t == 0 || now_us < t)
		return 0.0;
	return (now_us - t) / 1e6;
}

void
rp_metrics_received(RpBuf *out, const void *arg)
{
	const RpMetrics *m = arg;

	rp_metrics_sample(out, "replicant_received_bytes_total", "counter", "Frame bytes received.", NULL,
					  RP_COUNT_LOAD(m->bytes));
}

void
rp_metrics_halts(RpBuf *out, const void *arg)
{
	const RpMetrics *m = arg;

	for (int h = 0; h < RP_HALT__COUNT; h++)
	{
		char		labels[64];

		snprintf(labels, sizeof(labels), "{reason=\"%s\"}", rp_halt_name((RpHalt) h));
		rp_metrics_sample(out, "replicant_halts_total", "counter", h == 0 ? "Stops by reason." : NULL, labels,
						  RP_COUNT_LOAD(m->halts[h]));
	}
}

char	   *
rp_metrics_render(const RpMetrics *m)
{
	RpBuf		b;

	rp_buf_init(&b, 4096);
	for (int i = 0; i < m->nsources; i++)
		m->sources[i].fn(&b, m->sources[i].arg);
	rp_buf_put_char(&b, '\0');
	return b.data;
}

#ifdef RP_HAVE_MICROHTTPD

bool
rp_metrics_available(void)
{
	return true;
}

static enum MHD_Result
rp_metrics_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **state)
{
	RpMetrics  *m = cls;
	char	   *page;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (strcmp(method, "GET") != 0)
		return MHD_NO;
	page = rp_metrics_render(m);
	resp = MHD_create_response_from_buffer(strlen(page), page, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

int
rp_metrics_start(RpMetrics *m, int port)
{
	struct sockaddr_in addr;

	if (port == 0)
		return 0;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t) port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t) port, NULL, NULL,
								 rp_metrics_answer, m, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
	if (m->daemon == NULL)
		return rp_fail(RP_HALT_NONE, "could not serve metrics on 127.0.0.1:%d", port);
	return 0;
}

void
rp_metrics_stop(RpMetrics *m)
{
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	m->daemon = NULL;
}

#else							/* !RP_HAVE_MICROHTTPD */

/* Built without libmicrohttpd: the counters are kept, no page is served. */
bool
rp_metrics_available(void)
{
	return false;
}

int
rp_metrics_start(RpMetrics *m, int port)
{
	if (port == 0)
		return 0;
	/* RP_HALT_CONFIG: retrying cannot help */
	return rp_fail(RP_HALT_CONFIG, "this replicant was built without metrics (libmicrohttpd)");
}

void
rp_metrics_stop(RpMetrics *m)
{
}

#endif							/* RP_HAVE_MICROHTTPD */
