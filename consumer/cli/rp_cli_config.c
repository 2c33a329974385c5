/*
 * rp_cli_config.c
 *    --config FILE (see rp_cli_config.h): the file read into option words
 *    "--NAME=VALUE" or "--NAME", put before the command line's, so that
 *    getopt_long and the option handlers of rp_cli_options.c take them
 *    exactly as typed ones.  What a file line may hold is checked here,
 *    where its line number is known; what its value means is checked by
 *    the handlers, with the line named through rp_cli_config_context.
 */
#include "rp_alloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/rp_status.h"
#include "cli/rp_cli.h"
#include "cli/rp_cli_config.h"

/* getopt's codes stay below this (short letters, then 0x100 onwards) */
#define RP_CONFIG_MAX_CODE 0x400

typedef struct RpCliConfigLine
{
	const struct option *opt;	/* the long option the line names */
	int			line;			/* in the file, from 1 */
} RpCliConfigLine;

struct RpCliConfig
{
	char	   *path;
	RpCliConfigLine *lines;		/* the lines the merged command line kept */
	int			nlines;
	char	  **words;			/* the merged argv, NULL-terminated */
	int			nwords;
	char		where[1024];	/* the current usage errors' context */
};

static const char *const secret_words[] = {"password", "creds", "secret", "token", "key"};

bool
rp_cli_config_secret(const char *name)
{
	/* connection strings and URIs may carry a password */
	if (strcmp(name, "dbname") == 0 || strcmp(name, "sink") == 0 || strcmp(name, "source") == 0)
		return true;
	for (size_t i = 0; i < sizeof(secret_words) / sizeof(secret_words[0]); i++)
		if (strstr(name, secret_words[i]) != NULL)
			return true;
	return false;
}

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static bool
is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* A usage error about line of the file; fmt's arguments are never a value. */
static int	file_error(const RpCliConfig *cfg, int line, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
file_error(const RpCliConfig *cfg, int line, const char *fmt,...)
{
	char		msg[512];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rp_cli_usage_error("configuration file \"%s\", line %d: %s", cfg->path, line, msg);
}

static void
add_word(RpCliConfig *cfg, char *word)
{
	cfg->words = rp_realloc(cfg->words, sizeof(char *) * (size_t) (cfg->nwords + 2));
	cfg->words[cfg->nwords++] = word;
	cfg->words[cfg->nwords] = NULL;
}

/*
 * A -d value that libpq would read as a connection string parses; its
 * error is not shown (it quotes the string, and so a password).
 */
static bool
conninfo_parses(const char *value)
{
	PQconninfoOption *opts;
	char	   *err = NULL;

	if (strncmp(value, "postgresql://", 13) != 0 && strncmp(value, "postgres://", 11) != 0 &&
		strchr(value, '=') == NULL)
		return true;
	opts = PQconninfoParse(value, &err);
	if (err)
		PQfreemem(err);
	if (opts == NULL)
		return false;
	PQconninfoFree(opts);
	return true;
}

/*
 * One line of the file (its end of line already cut) into *opt and *value
 * (NULL: none; else a pointer into line, which is modified).  1 for a line
 * with an option, 0 for a blank or comment line, or the usage status.
 */
static int
parse_line(RpCliConfig *cfg, int lineno, char *line, const struct option *longopts,
		   const struct option **opt, char **value)
{
	char	   *p = line;
	char	   *name;
	char	   *end;
	size_t		namelen;
	bool		has_value;

	while (is_blank(*p))
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	name = p;
	/* a letter first: "--start" is the command line's spelling, not a name */
	while (is_name_char(*p) && (p > name || (*p != '-' && (*p < '0' || *p > '9'))))
		p++;
	namelen = (size_t) (p - name);
	while (is_blank(*p))
		p++;
	if (namelen == 0 || (*p != '\0' && *p != '='))
		return file_error(cfg, lineno, "expected NAME = VALUE, or NAME for a flag");
	has_value = *p == '=';
	name[namelen] = '\0';		/* a blank, the '=' or the end: all read */
	if (has_value)
		p++;
	*opt = NULL;
	for (const struct option *o = longopts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			*opt = o;
	if (*opt == NULL)
		return file_error(cfg, lineno, "unrecognized option \"%s\"", name);
	if (strcmp(name, "config") == 0 || strcmp(name, "help") == 0 || strcmp(name, "version") == 0)
		return file_error(cfg, lineno, "option \"%s\" belongs on the command line", name);
	*value = NULL;
	if (has_value)
	{
		while (is_blank(*p))
			p++;
		end = p + strlen(p);
		while (end > p && is_blank(end[-1]))
			end--;
		*end = '\0';
		if (*p == '"')
		{
			if (end - p < 2 || end[-1] != '"')
				return file_error(cfg, lineno, "option \"%s\": a quoted value must end with its quote", name);
			end[-1] = '\0';
			p++;
		}
		else if (*p == '\0')
			return file_error(cfg, lineno, "option \"%s\" has no value after '=' (\"\" for an empty one)", name);
		*value = p;
	}
	if ((*opt)->has_arg == no_argument && *value != NULL)
		return file_error(cfg, lineno, "option \"%s\" takes no value (a flag: the name alone)", name);
	if ((*opt)->has_arg == required_argument && *value == NULL)
		return file_error(cfg, lineno, "option \"%s\" needs a value (NAME = VALUE)", name);
	/* checked here, not after parsing: the later message would show the value */
	if (strcmp(name, "sink") == 0 && !rp_cli_sink_known(*value))
		return file_error(cfg, lineno, "option \"%s\": unknown sink (expected stdout, file:PATH, exec:COMMAND, postgresql://..., postgres:CONNINFO or nats://...)", name);
	if (strcmp(name, "dbname") == 0 && !conninfo_parses(*value))
		return file_error(cfg, lineno, "option \"%s\": invalid connection string", name);
	return 1;
}

/* Options a file may give more than once, as the command line may. */
static const char *const repeatable[] = {
	"option", "verbose", "history", "message-route", "message-ignore", "backfill",
	"aggregate", "aggregates",
};

/*
 * The line of an earlier mention of opt among the file's n lines seen, when
 * opt takes one value: a second one would silently replace the first (the
 * last wins); 0 when none.
 */
static int
earlier_line(const RpCliConfigLine *seen, int n, const struct option *opt)
{
	for (size_t i = 0; i < sizeof(repeatable) / sizeof(repeatable[0]); i++)
		if (strcmp(opt->name, repeatable[i]) == 0)
			return 0;
	for (int i = 0; i < n; i++)
		if (seen[i].opt == opt)
			return seen[i].line;
	return 0;
}

/*
 * Read the file into cfg->words (after argv[0]) and cfg->lines, leaving
 * out the options given[] says the command line has.
 */
static int
read_file(RpCliConfig *cfg, const struct option *longopts, const bool *given)
{
	FILE	   *f = fopen(cfg->path, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		len;
	int			lineno = 0;
	int			rc = RP_CLI_RUN;
	RpCliConfigLine *seen = NULL;	/* every option line, the command line's
									 * included */
	int			nseen = 0;

	if (f == NULL)
		return rp_cli_usage_error("could not open configuration file \"%s\": %s", cfg->path, strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0)
	{
		const struct option *opt = NULL;
		char	   *value = NULL;
		char	   *word;
		size_t		wlen;
		int			r;

		lineno++;
		if (memchr(line, '\0', (size_t) len) != NULL)
		{
			rc = file_error(cfg, lineno, "a NUL byte (not a text file?)");
			break;
		}
		r = parse_line(cfg, lineno, line, longopts, &opt, &value);
		if (r == 0)
			continue;
		if (r != 1)
		{
			rc = r;
			break;
		}
		if ((r = earlier_line(seen, nseen, opt)) > 0)
		{
			rc = file_error(cfg, lineno, "option \"%s\" is given again (first on line %d); it takes one value",
							opt->name, r);
			break;
		}
		seen = rp_realloc(seen, sizeof(RpCliConfigLine) * (size_t) (nseen + 1));
		seen[nseen].opt = opt;
		seen[nseen++].line = lineno;
		if (opt->val >= 0 && opt->val < RP_CONFIG_MAX_CODE && given[opt->val])
			continue;
		wlen = strlen(opt->name) + (value ? strlen(value) + 1 : 0) + 3;
		word = rp_malloc(wlen);
		snprintf(word, wlen, "--%s%s%s", opt->name, value ? "=" : "", value ? value : "");
		add_word(cfg, word);
		cfg->lines = rp_realloc(cfg->lines, sizeof(RpCliConfigLine) * (size_t) (cfg->nlines + 1));
		cfg->lines[cfg->nlines].opt = opt;
		cfg->lines[cfg->nlines].line = lineno;
		cfg->nlines++;
	}
	if (rc == RP_CLI_RUN && ferror(f))
		rc = rp_cli_usage_error("could not read configuration file \"%s\": %s", cfg->path, strerror(errno));
	free(line);
	rp_free(seen);
	fclose(f);
	return rc;
}

int
rp_cli_config_apply(int *argc, char ***argv, const char *shortopts,
					const struct option *longopts, int config_code, RpCliConfig **out)
{
	bool		given[RP_CONFIG_MAX_CODE];
	const char *path = NULL;
	RpCliConfig *cfg;
	int			c;
	int			rc;

	*out = NULL;

	/*
	 * A first pass over the command line alone: which options it gives, and
	 * the file.  Its errors are left to the real pass, which words them.
	 */
	memset(given, 0, sizeof(given));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(*argc, *argv, shortopts, longopts, NULL)) != -1)
	{
		if (c == config_code)
			path = optarg;
		else if (c > 0 && c < RP_CONFIG_MAX_CODE && c != '?' && c != ':')
			given[c] = true;
	}
	if (path == NULL)
		return RP_CLI_RUN;

	cfg = rp_malloc0(sizeof(RpCliConfig));
	cfg->path = rp_strndup(path, strlen(path));
	add_word(cfg, rp_strndup((*argv)[0], strlen((*argv)[0])));
	rc = read_file(cfg, longopts, given);
	if (rc != RP_CLI_RUN)
	{
		rp_cli_config_free(cfg);
		return rc;
	}
	for (int i = 1; i < *argc; i++)
		add_word(cfg, rp_strndup((*argv)[i], strlen((*argv)[i])));
	*argc = cfg->nwords;
	*argv = cfg->words;
	*out = cfg;
	return RP_CLI_RUN;
}

void
rp_cli_config_context(RpCliConfig *cfg, int n)
{
	const char *name;

	if (cfg == NULL || n < 0 || n >= cfg->nlines)
	{
		rp_cli_log_set_context(NULL, false);
		return;
	}
	name = cfg->lines[n].opt->name;
	snprintf(cfg->where, sizeof(cfg->where), "configuration file \"%s\", line %d, option \"%s\"",
			 cfg->path, cfg->lines[n].line, name);
	rp_cli_log_set_context(cfg->where, rp_cli_config_secret(name));
}

void
rp_cli_config_free(RpCliConfig *cfg)
{
	if (cfg == NULL)
		return;
	rp_cli_log_set_context(NULL, false);
	for (int i = 0; i < cfg->nwords; i++)
		rp_free(cfg->words[i]);
	if (cfg->words)
		rp_free(cfg->words);
	if (cfg->lines)
		rp_free(cfg->lines);
	rp_free(cfg->path);
	rp_free(cfg);
}
