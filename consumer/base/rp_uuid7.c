/*
 * rp_uuid7.c
 *    UUIDv7 with a dedicated counter, RFC 9562 Method 1 (see rp_uuid7.h).
 */
#include "rp_alloc.h"

#include <errno.h>
#include <pthread.h>
#include <sys/random.h>
#include <time.h>

#include "base/rp_status.h"
#include "base/rp_uuid7.h"

#define COUNTER_BITS 42
#define COUNTER_MAX ((UINT64_C(1) << COUNTER_BITS) - 1)

static int
uuid7_random(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0)
	{
		ssize_t		r = getrandom(p, n, 0);

		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			return rp_fail(RP_HALT_NONE, "getrandom failed: %s", strerror(errno));
		}
		p += r;
		n -= (size_t) r;
	}
	return 0;
}

static uint64_t
load_be(const unsigned char *p, int n)
{
	uint64_t	v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

void
rp_uuid7_gen_init(RpUuid7Gen *g)
{
	pthread_mutex_init(&g->lock, NULL);
	g->last_ms = -1;
	g->counter = 0;
}

void
rp_uuid7_gen_free(RpUuid7Gen *g)
{
	pthread_mutex_destroy(&g->lock);
}

/*
 * Mint for ms; clamp: an ms before the last one minted is replaced by it
 * (the clock path).  Caller holds g->lock.
 */
static int
uuid7_mint(RpUuid7Gen *g, RpUuid *u, int64_t ms, bool clamp)
{
	unsigned char rnd[10];
	uint64_t	counter;
	uint32_t	tail;

	if (ms < 0 || ms > RP_UUID7_MAX_MS)
		return rp_fail(RP_HALT_NONE, "UUIDv7 timestamp out of range");
	if (clamp && ms < g->last_ms)
		ms = g->last_ms;
	if (uuid7_random(rnd, sizeof(rnd)) < 0)
		return -1;
	tail = (uint32_t) load_be(rnd + 6, 4);
	if (ms == g->last_ms && g->counter < COUNTER_MAX)
		counter = g->counter + 1;
	else
	{
		if (ms == g->last_ms)
		{
			/* counter overflow: borrow the next millisecond */
			if (ms == RP_UUID7_MAX_MS)
				return rp_fail(RP_HALT_NONE, "UUIDv7 timestamp out of range");
			ms++;
		}
		/* a fresh seed, its top bit clear: the rollover guard */
		counter = load_be(rnd, 6) & (COUNTER_MAX >> 1);
	}
	g->last_ms = ms;
	g->counter = counter;

	u->b[0] = (unsigned char) (ms >> 40);
	u->b[1] = (unsigned char) (ms >> 32);
	u->b[2] = (unsigned char) (ms >> 24);
	u->b[3] = (unsigned char) (ms >> 16);
	u->b[4] = (unsigned char) (ms >> 8);
	u->b[5] = (unsigned char) ms;
	/* ver 0111, then counter bits 41..30 (rand_a) */
	u->b[6] = (unsigned char) (0x70 | ((counter >> 38) & 0x0F));
	u->b[7] = (unsigned char) (counter >> 30);
	/* var 10, then counter bits 29..0 and 32 random bits (rand_b) */
	u->b[8] = (unsigned char) (0x80 | ((counter >> 24) & 0x3F));
	u->b[9] = (unsigned char) (counter >> 16);
	u->b[10] = (unsigned char) (counter >> 8);
	u->b[11] = (unsigned char) counter;
	u->b[12] = (unsigned char) (tail >> 24);
	u->b[13] = (unsigned char) (tail >> 16);
	u->b[14] = (unsigned char) (tail >> 8);
	u->b[15] = (unsigned char) tail;
	return 0;
}

int
rp_uuid7_at(RpUuid7Gen *g, RpUuid *u, int64_t unix_ms)
{
	int			rc;

	pthread_mutex_lock(&g->lock);
	rc = uuid7_mint(g, u, unix_ms, false);
	pthread_mutex_unlock(&g->lock);
	return rc;
}

int
rp_uuid7_now(RpUuid7Gen *g, RpUuid *u)
{
	int			rc;

	pthread_mutex_lock(&g->lock);
	rc = uuid7_mint(g, u, rp_clock_wall_ms(), true);
	pthread_mutex_unlock(&g->lock);
	return rc;
}

int64_t
rp_uuid7_ms(const RpUuid *u)
{
	return (int64_t) load_be(u->b, 6);
}

void
rp_uuid_text(const RpUuid *u, char *out)
{
	static const char hex[] = "0123456789abcdef";
	char	   *o = out;

	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*o++ = '-';
		*o++ = hex[u->b[i] >> 4];
		*o++ = hex[u->b[i] & 15];
	}
	*o = '\0';
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
rp_uuid_parse(const char *s, size_t len, RpUuid *u)
{
	int			j = 0;

	if (len != RP_UUID_TEXT_LEN)
		return false;
	for (size_t i = 0; i < len;)
	{
		int			hi,
					lo;

		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (s[i] != '-')
				return false;
			i++;
			continue;
		}
		hi = hexval(s[i]);
		lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		u->b[j++] = (unsigned char) (hi << 4 | lo);
		i += 2;
	}
	return true;
}
