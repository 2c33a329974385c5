/*
 * rp_metrics.c
 *    Prometheus text exposition of the registered sources (see rp_metrics.h).
 */
#include "rp_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#ifdef RP_HAVE_MICROHTTPD
#include <netinet/in.h>
#include <microhttpd.h>
#endif

#include <arpa/inet.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/rp_counter.h"
#include "base/rp_metrics.h"

/* A sample's HELP and TYPE lines (when help is set), then its name and labels. */
static void
rp_metrics_head(RpBuf *b, const char *name, const char *type, const char *help, const char *labels)
{
	if (help)
	{
		rp_buf_put_text(b, "# HELP ");
		rp_buf_put_text(b, name);
		rp_buf_put_char(b, ' ');
		rp_buf_put_text(b, help);
		rp_buf_put_text(b, "\n# TYPE ");
		rp_buf_put_text(b, name);
		rp_buf_put_char(b, ' ');
		rp_buf_put_text(b, type);
		rp_buf_put_char(b, '\n');
	}
	rp_buf_put_text(b, name);
	rp_buf_put_text(b, labels ? labels : "");
}

void
rp_metrics_sample(RpBuf *b, const char *name, const char *type, const char *help, const char *labels,
				  uint64_t v)
{
	char		num[32];

	rp_metrics_head(b, name, type, help, labels);
	snprintf(num, sizeof(num), " %" PRIu64 "\n", v);
	rp_buf_put_text(b, num);
}

void
rp_metrics_sample_real(RpBuf *b, const char *name, const char *type, const char *help, const char *labels,
					   double v)
{
	char		num[64];

	rp_metrics_head(b, name, type, help, labels);
	snprintf(num, sizeof(num), " %.3f\n", v);
	rp_buf_put_text(b, num);
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
	snprintf(m->address, sizeof(m->address), "127.0.0.1");
}

void
rp_metrics_set_labels(RpMetrics *m, const char *slot, const char *sink_kind)
{
	RpBuf		b;

	rp_buf_init(&b, 128);
	rp_buf_put_text(&b, "slot=\"");
	rp_metrics_label_value(&b, slot ? slot : "");
	rp_buf_put_text(&b, "\",sink=\"");
	rp_metrics_label_value(&b, sink_kind ? sink_kind : "");
	rp_buf_put_text(&b, "\"");
	rp_buf_put_char(&b, '\0');
	snprintf(m->labels, sizeof(m->labels), "%s", b.data);
	rp_buf_free(&b);
}

int
rp_metrics_set_address(RpMetrics *m, const char *address)
{
	unsigned char addr[sizeof(struct in6_addr)];

	if (address == NULL)
		return 0;
	if (strlen(address) >= sizeof(m->address) ||
		(inet_pton(AF_INET, address, addr) != 1 && inet_pton(AF_INET6, address, addr) != 1))
		return rp_fail(RP_HALT_CONFIG, "invalid value \"%s\" for option --metrics-address: not an IPv4 or IPv6 address",
					   address);
	snprintf(m->address, sizeof(m->address), "%s", address);
	return 0;
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

/*
 * The page's text with the labels every sample carries: put first inside a
 * sample's braces, or as its braces.  Comment lines are left as they are.
 */
static void
rp_metrics_put_labelled(RpBuf *out, const char *page, const char *labels)
{
	const char *p = page;

	while (*p)
	{
		size_t		n = strcspn(p, "\n");
		size_t		name = strcspn(p, "{ \n");

		if (labels[0] == '\0' || p[0] == '#' || name >= n)
			rp_buf_put_bytes(out, p, n);
		else
		{
			rp_buf_put_bytes(out, p, name);
			rp_buf_put_char(out, '{');
			rp_buf_put_text(out, labels);
			if (p[name] == '{')
			{
				/* {} with nothing in it takes no comma */
				if (p[name + 1] != '}')
					rp_buf_put_char(out, ',');
				rp_buf_put_bytes(out, p + name + 1, n - name - 1);
			}
			else
			{
				rp_buf_put_char(out, '}');
				rp_buf_put_bytes(out, p + name, n - name);
			}
		}
		p += n;
		if (*p == '\n')
		{
			rp_buf_put_char(out, '\n');
			p++;
		}
	}
}

double
rp_metrics_lag_seconds(int64_t pending, int64_t now_us)
{
	if (pending == 0 || now_us < pending)
		return 0.0;
	return (now_us - pending) / 1e6;
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
	rp_metrics_sample(out, "replicant_retries_total", "counter", "Retries after trouble that may pass, by what failed.",
					  "{cause=\"source\"}", RP_COUNT_LOAD(m->retries[RP_RETRY_SOURCE]));
	rp_metrics_sample(out, "replicant_retries_total", "counter", NULL, "{cause=\"sink\"}",
					  RP_COUNT_LOAD(m->retries[RP_RETRY_SINK]));
}

/* /proc/self/stat's fields after the command: utime, stime, starttime, vsize, rss. */
static bool
rp_metrics_proc_stat(uint64_t *ticks, uint64_t *start, uint64_t *vsize, uint64_t *rss)
{
	char		buf[1024];
	FILE	   *f = fopen("/proc/self/stat", "r");
	size_t		n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	const char *p;
	unsigned long long utime,
				stime,
				st,
				vs,
				rs;

	if (f)
		fclose(f);
	buf[n] = '\0';
	/* the command may hold blanks and parentheses: the last ')' ends it */
	if ((p = strrchr(buf, ')')) == NULL ||
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %llu",
			   &utime, &stime, &st, &vs, &rs) != 5)
		return false;
	*ticks = utime + stime;
	*start = st;
	*vsize = vs;
	*rss = rs;
	return true;
}

/* The boot time (/proc/stat's btime), seconds since the Unix epoch; 0 unknown. */
static uint64_t
rp_metrics_boot_time(void)
{
	char		line[256];
	unsigned long long btime = 0;
	FILE	   *f = fopen("/proc/stat", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	if (f)
		fclose(f);
	return btime;
}

static uint64_t
rp_metrics_open_fds(void)
{
	DIR		   *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t	n = 0;

	while (d && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	if (d)
	{
		closedir(d);
		n--;					/* the directory's own */
	}
	return n;
}

void
rp_metrics_process(RpBuf *out, const void *arg)
{
	const RpMetrics *m = arg;
	int			v = RP_COUNT_LOAD(m->server_version);
	char		labels[128];
	uint64_t	ticks,
				start,
				vsize,
				rss;
	double		hz = (double) sysconf(_SC_CLK_TCK);
	struct rlimit rl;

	snprintf(labels, sizeof(labels), "{version=\"%s\",server_major=\"%d\"}", m->version ? m->version : "",
			 v / 10000);
	rp_metrics_sample(out, "replicant_build_info", "gauge",
					  "This build's version and the source server's major version (0 until connected).", labels, 1);
	if (rp_metrics_proc_stat(&ticks, &start, &vsize, &rss) && hz > 0)
	{
		rp_metrics_sample_real(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
							   NULL, ticks / hz);
		rp_metrics_sample(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", NULL,
						  rss * (uint64_t) sysconf(_SC_PAGESIZE));
		rp_metrics_sample(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", NULL, vsize);
		rp_metrics_sample_real(out, "process_start_time_seconds", "gauge",
							   "Start time of the process since unix epoch in seconds.", NULL,
							   rp_metrics_boot_time() + start / hz);
	}
	rp_metrics_sample(out, "process_open_fds", "gauge", "Number of open file descriptors.", NULL, rp_metrics_open_fds());
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		rp_metrics_sample(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", NULL,
						  rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t) rl.rlim_cur);
}

char	   *
rp_metrics_render(const RpMetrics *m)
{
	RpBuf		b;

	RpBuf		out;

	rp_buf_init(&b, 4096);
	for (int i = 0; i < m->nsources; i++)
		m->sources[i].fn(&b, m->sources[i].arg);
	rp_buf_put_char(&b, '\0');
	if (m->labels[0] == '\0')
		return b.data;
	rp_buf_init(&out, b.len + b.len / 2);
	rp_metrics_put_labelled(&out, b.data, m->labels);
	rp_buf_put_char(&out, '\0');
	rp_buf_free(&b);
	return out.data;
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
	struct sockaddr_in6 addr6;
	bool		v6 = strchr(m->address, ':') != NULL;

	if (port == 0)
		return 0;
	memset(&addr, 0, sizeof(addr));
	memset(&addr6, 0, sizeof(addr6));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t) port);
	addr6.sin6_family = AF_INET6;
	addr6.sin6_port = htons((uint16_t) port);
	if (v6 ? inet_pton(AF_INET6, m->address, &addr6.sin6_addr) != 1
		: inet_pton(AF_INET, m->address, &addr.sin_addr) != 1)
		return rp_fail(RP_HALT_CONFIG, "invalid --metrics-address \"%s\"", m->address);
	m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0), (uint16_t) port,
								 NULL, NULL, rp_metrics_answer, m, MHD_OPTION_SOCK_ADDR,
								 v6 ? (struct sockaddr *) &addr6 : (struct sockaddr *) &addr, MHD_OPTION_END);
	if (m->daemon == NULL)
		return rp_fail(RP_HALT_NONE, "could not serve metrics on %s%s%s:%d", v6 ? "[" : "", m->address,
					   v6 ? "]" : "", port);
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
