/*
 * rp_natsio_conn.c
 *    The connection to NATS, for the sink and the source alike: the server
 *    list of the URL, user and password (from the URL or
 *    NATS_USER/NATS_PASSWORD), a credentials file, TLS; libnats reconnects
 *    by itself (for ever), and requests fail at once while disconnected so
 *    that waits stay bounded.  No secret is ever put in a message: errors
 *    name the option, not its value.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include <stdio.h>
#include <stdlib.h>

#include "base/rp_status.h"
#include "natsio/rp_natsio.h"

const char *
rp_natsio_status_text(natsStatus s)
{
	return natsStatus_GetText(s);
}

/*
 * Split "scheme://[user:pass@]h:p,h:p" into server URLs without the user
 * part (each as scheme://h:p), and the user and password.
 */
static int
split_url(const char *url, char ***servers, int *n, char **user, char **pass, bool *tls)
{
	const char *scheme_end = strstr(url, "://");
	const char *rest;
	const char *at;
	char	   *list;
	char	   *tok;
	char	   *save = NULL;
	size_t		slen;

	*servers = NULL;
	*n = 0;
	*user = *pass = NULL;
	if (scheme_end == NULL)
		return rp_fail(RP_HALT_CONFIG, "NATS URL has no scheme (expected nats:// or tls://)");
	slen = (size_t) (scheme_end - url);
	*tls = slen == 3 && strncmp(url, "tls", 3) == 0;
	if (!*tls && !(slen == 4 && strncmp(url, "nats", 4) == 0))
		return rp_fail(RP_HALT_CONFIG, "NATS URL scheme must be nats:// or tls://");
	rest = scheme_end + 3;
	at = strrchr(rest, '@');
	if (at)
	{
		const char *colon = memchr(rest, ':', (size_t) (at - rest));

		if (colon)
		{
			*user = rp_strndup(rest, (size_t) (colon - rest));
			*pass = rp_strndup(colon + 1, (size_t) (at - colon - 1));
		}
		else
			*user = rp_strndup(rest, (size_t) (at - rest));
		rest = at + 1;
	}
	list = rp_strndup(rest, strlen(rest));
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		size_t		len = slen + 3 + strlen(tok) + 1;
		char	   *s = rp_malloc(len);

		/* an element may repeat the scheme */
		if (strstr(tok, "://"))
			snprintf(s, len, "%s", tok);
		else
			snprintf(s, len, "%.*s://%s", (int) slen, url, tok);
		*servers = rp_realloc(*servers, sizeof(char *) * (size_t) (*n + 1));
		(*servers)[(*n)++] = s;
	}
	rp_free(list);
	if (*n == 0)
		return rp_fail(RP_HALT_CONFIG, "NATS URL names no server");
	return 0;
}

static void
free_split(char **servers, int n, char *user, char *pass)
{
	for (int i = 0; i < n; i++)
		rp_free(servers[i]);
	if (servers)
		rp_free(servers);
	if (user)
		rp_free(user);
	if (pass)
	{
		memset(pass, 0, strlen(pass));
		rp_free(pass);
	}
}

/* A file option libnats refused: name the option (the path is the user's own). */
static int
file_fail(natsStatus s, const char *option)
{
	return rp_fail(RP_HALT_CONFIG, "NATS option --%s: the file could not be used (%s)", option,
				   rp_natsio_status_text(s));
}

static int
make_options(natsOptions **nopts, const RpNatsioAuth *o)
{
	char	  **servers;
	int			n;
	char	   *user;
	char	   *pass;
	bool		tls = false;
	natsStatus	s;
	int			rc = 0;

	if (split_url(o->url, &servers, &n, &user, &pass, &tls) < 0)
	{
		free_split(servers, n, user, pass);
		return -1;
	}
	if (user == NULL && getenv("NATS_USER"))
	{
		user = rp_strndup(getenv("NATS_USER"), strlen(getenv("NATS_USER")));
		if (getenv("NATS_PASSWORD"))
			pass = rp_strndup(getenv("NATS_PASSWORD"), strlen(getenv("NATS_PASSWORD")));
	}
	s = natsOptions_Create(nopts);
	if (s == NATS_OK)
		s = natsOptions_SetServers(*nopts, (const char **) servers, n);
	if (s == NATS_OK)
		s = natsOptions_SetName(*nopts, "replicant");
	/* the server list is kept in order: the first is the one named first */
	if (s == NATS_OK)
		s = natsOptions_SetNoRandomize(*nopts, true);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(*nopts, 5000);
	if (s == NATS_OK)
		s = natsOptions_SetAllowReconnect(*nopts, true);
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(*nopts, -1);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(*nopts, 250);
	if (s == NATS_OK)
		s = natsOptions_SetFailRequestsOnDisconnect(*nopts, true);
	if (s == NATS_OK && user)
		s = natsOptions_SetUserInfo(*nopts, user, pass);
	free_split(servers, n, user, pass);
	if (s != NATS_OK)
	{
		natsOptions_Destroy(*nopts);
		*nopts = NULL;
		return rp_fail(RP_HALT_CONFIG, "NATS options could not be set (%s)", rp_natsio_status_text(s));
	}
	if (o->creds && (s = natsOptions_SetUserCredentialsFromFiles(*nopts, o->creds, NULL)) != NATS_OK)
		rc = file_fail(s, "nats-creds");
	else if ((tls || o->tls_ca || o->tls_cert) && (s = natsOptions_SetSecure(*nopts, true)) != NATS_OK)
		rc = rp_fail(RP_HALT_CONFIG, "NATS TLS is not available (%s)", rp_natsio_status_text(s));
	else if (o->tls_ca && (s = natsOptions_LoadCATrustedCertificates(*nopts, o->tls_ca)) != NATS_OK)
		rc = file_fail(s, "nats-tls-ca");
	else if ((o->tls_cert != NULL) != (o->tls_key != NULL))
		rc = rp_fail(RP_HALT_CONFIG, "NATS options --nats-tls-cert and --nats-tls-key go together");
	else if (o->tls_cert &&
			 (s = natsOptions_LoadCertificatesChain(*nopts, o->tls_cert, o->tls_key)) != NATS_OK)
		rc = file_fail(s, "nats-tls-cert");
	if (rc < 0)
	{
		natsOptions_Destroy(*nopts);
		*nopts = NULL;
	}
	return rc;
}

int
rp_natsio_connect(natsConnection **nc, const RpNatsioAuth *a)
{
	natsOptions *nopts = NULL;
	natsStatus	s;

	*nc = NULL;
	if (make_options(&nopts, a) < 0)
		return -1;
	s = natsConnection_Connect(nc, nopts);
	natsOptions_Destroy(nopts);
	if (s != NATS_OK)
	{
		*nc = NULL;
		if (s == NATS_NOT_PERMITTED || s == NATS_SSL_ERROR || s == NATS_CONNECTION_AUTH_FAILED)
			return rp_fail(RP_HALT_CONFIG, "NATS connection refused (%s)", rp_natsio_status_text(s));
		return rp_fail(RP_HALT_NONE, "NATS connection failed (%s)", rp_natsio_status_text(s));
	}
	return 0;
}

void
rp_natsio_close(natsConnection *nc)
{
	if (nc)
	{
		natsConnection_Close(nc);
		natsConnection_Destroy(nc);
	}
}

#endif							/* RP_HAVE_NATS */
