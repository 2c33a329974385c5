/*
 * rp_cli_conninfo.c
 *    The connection options, one module for every command: -d, -h, -p,
 *    -U, -w and -W taken from the command line (rp_cli_conn_option), and
 *    folded into one conninfo as pg_recvlogical hands them to libpq: the
 *    string every session of the command opens with (the stream, the
 *    snapshot's workers, the backfill; a migration command's source).
 *    What none of them says libpq takes from the PG* environment.  -W's
 *    prompt is here too, and the usage error a conninfo that does not
 *    parse is.  Nothing here connects.
 */
#include "rp_alloc.h"

#include <stdio.h>
#include <string.h>
#include <termios.h>

#include <libpq-fe.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "rp_buf.h"

/* One keyword='value' pair onto buf, quoted the way conninfo strings are. */
static void
append_pair(RpBuf *buf, const char *key, const char *val)
{
	if (buf->len > 0)
		rp_buf_put_bytes(buf, " ", 1);
	rp_buf_put_bytes(buf, key, strlen(key));
	rp_buf_put_bytes(buf, "='", 2);
	for (const char *p = val; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			rp_buf_put_bytes(buf, "\\", 1);
		rp_buf_put_bytes(buf, p, 1);
	}
	rp_buf_put_bytes(buf, "'", 1);
}

/* What libpq takes for a connection string, not a database name. */
static bool
is_conninfo(const char *s)
{
	return strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0 ||
		strchr(s, '=') != NULL;
}

char	   *
rp_cli_conninfo(const char *dbname, const char *const *keys, const char *const *vals,
				char *err, size_t errlen)
{
	RpBuf		buf;
	char	   *out;

	rp_buf_init(&buf, 256);
	if (dbname && is_conninfo(dbname))
	{
		char	   *perr = NULL;
		PQconninfoOption *opts = PQconninfoParse(dbname, &perr);

		if (opts == NULL)
		{
			snprintf(err, errlen, "invalid connection string \"%s\": %s", dbname,
					 perr ? strtok(perr, "\n") : "out of memory");
			PQfreemem(perr);
			rp_buf_free(&buf);
			return NULL;
		}
		for (PQconninfoOption *o = opts; o->keyword; o++)
			if (o->val)
				append_pair(&buf, o->keyword, o->val);
		PQconninfoFree(opts);
	}
	else if (dbname && *dbname)
		append_pair(&buf, "dbname", dbname);
	/* later keywords win: the overrides come last */
	for (int i = 0; keys[i]; i++)
		if (vals[i])
			append_pair(&buf, keys[i], vals[i]);
	out = rp_strndup(buf.data ? buf.data : "", buf.len);
	rp_buf_free(&buf);
	return out;
}

char	   *
rp_cli_read_password(FILE *in, FILE *out)
{
	struct termios t,
				quiet;
	bool		echo_off = false;
	char		line[1024];
	char	   *got;

	fputs("Password: ", out);
	fflush(out);
	if (tcgetattr(fileno(in), &t) == 0)
	{
		quiet = t;
		quiet.c_lflag &= ~(tcflag_t) ECHO;
		echo_off = tcsetattr(fileno(in), TCSAFLUSH, &quiet) == 0;
	}
	got = fgets(line, sizeof(line), in);
	if (echo_off)
		tcsetattr(fileno(in), TCSAFLUSH, &t);
	/* the newline typed was not echoed */
	if (echo_off)
		fputc('\n', out);
	if (got == NULL)
		return NULL;
	line[strcspn(line, "\r\n")] = '\0';
	got = rp_strndup(line, strlen(line));
	explicit_bzero(line, sizeof(line));
	return got;
}

/* -W: from the terminal, or from stdin when there is none. */
static char *
prompt_password(void)
{
	FILE	   *tty = fopen("/dev/tty", "r+");
	char	   *password;

	if (tty == NULL)
		return rp_cli_read_password(stdin, stderr);
	password = rp_cli_read_password(tty, tty);
	fclose(tty);
	return password;
}

bool
rp_cli_conn_option(RpCliConn *cn, int c, const char *arg)
{
	switch (c)
	{
		case 'd':
			cn->dbname = arg;
			return true;
		case 'h':
			cn->host = arg;
			return true;
		case 'p':
			cn->port = arg;
			return true;
		case 'U':
			cn->username = arg;
			return true;
		case 'w':
			cn->password_prompt = false;
			return true;
		case 'W':
			cn->password_prompt = true;
			return true;
		default:
			return false;
	}
}

/*
 * -h, -p, -U and -W's password override what -d says, as pg_recvlogical
 * passes them to libpq after the dbname: one conninfo then goes to every
 * session the command opens.
 */
int
rp_cli_conn_compose(const RpCliConn *cn, const char *prog, bool always, char **out)
{
	const char *keys[] = {"host", "port", "user", "password", NULL};
	const char *vals[] = {cn->host, cn->port, cn->username, NULL, NULL};
	char	   *password = NULL;
	char		err[512];

	*out = NULL;
	if (cn->password_prompt)
	{
		password = prompt_password();
		if (password == NULL)
		{
			if (prog)
				fprintf(stderr, "%s: error: no password read\n", prog);
			else
				pg_log_error("no password read");
			return RP_EXIT_ERROR;
		}
		vals[3] = password;
	}
	if (!always && !cn->host && !cn->port && !cn->username && !password)
		return RP_CLI_RUN;
	*out = rp_cli_conninfo(cn->dbname, keys, vals, err, sizeof(err));
	if (password)
	{
		explicit_bzero(password, strlen(password));
		rp_free(password);
	}
	if (*out == NULL)
		return prog ? rp_cli_sub_usage_error(prog, "-d: %s", err) : rp_cli_usage_error("%s", err);
	return RP_CLI_RUN;
}

int
rp_cli_compose_connection(RpCli *cli)
{
	int			rc = rp_cli_conn_compose(&cli->conn, NULL, false, &cli->conninfo);

	cli->dbname = cli->conninfo ? cli->conninfo : (char *) cli->conn.dbname;
	return rc;
}
