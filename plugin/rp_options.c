/*
 * rp_options.c
 *    Option parsing for the replicant output plugin.
 *
 * Every option is parsed here and only here.  An unknown option, one given
 * twice, or a bad value is an ERROR naming the option (the value is the
 * client's configuration, never row data, so it may be echoed).
 */
#include "postgres.h"

#include <limits.h>

#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/varlena.h"

#include "rp_glob.h"
#include "rp_options.h"
#include "rp_wire.h"

#define RP_FRAME_SIZE_DEFAULT   (256 * 1024)
#define RP_FRAME_SIZE_MIN       1024
#define RP_FRAME_SIZE_MAX       (64 * 1024 * 1024)

/* Names, in the order of the option table in README.md. */
static const char *const rp_option_names[] = {
	"proto_version",
	"format",
	"include_tables",
	"exclude_tables",
	"actions",
	"include_messages",
	"message_prefixes",
	"origin",
	"streaming",
	"skip_empty_xacts",
	"frame_size",
	"partitions",
};

#define RP_NOPTIONS lengthof(rp_option_names)

static const char *
rp_option_string(DefElem *def)
{
	if (def->arg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" requires a value", def->defname)));
	return strVal(def->arg);
}

static bool
rp_option_bool(DefElem *def)
{
	bool		result;

	/* a bare option (pg_recvlogical -o name) means true */
	if (def->arg == NULL)
		return true;
	if (!parse_bool(strVal(def->arg), &result))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value \"%s\" for boolean option \"%s\"",
						strVal(def->arg), def->defname)));
	return result;
}

static int
rp_option_int(DefElem *def, int min, int max)
{
	const char *s = rp_option_string(def);
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value \"%s\" for option \"%s\"", s, def->defname),
				 errdetail("Expected an integer between %d and %d.", min, max)));
	return (int) v;
}

/* A comma-separated list of (possibly quoted) names. */
static List *
rp_option_list(DefElem *def)
{
	char	   *raw = pstrdup(rp_option_string(def));
	List	   *items = NIL;

	if (!SplitIdentifierString(raw, ',', &items))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid list syntax in option \"%s\"", def->defname)));
	return items;
}

/*
 * Split a list on commas outside double quotes, keeping the quotes (so
 * each item can still be parsed as a possibly qualified identifier);
 * SplitGUCList would reject "s"."t" and strip the quotes of "T".
 */
static List *
rp_split_quoted(char *raw)
{
	List	   *items = NIL;
	char	   *start = raw;
	bool		quoted = false;

	for (char *p = raw;; p++)
	{
		if (*p == '"')
			quoted = !quoted;	/* a doubled "" toggles twice */
		else if (*p == '\0' || (*p == ',' && !quoted))
		{
			bool		end = (*p == '\0');

			*p = '\0';
			items = lappend(items, start);
			if (end)
				break;
			start = p + 1;
		}
	}
	return items;
}

/*
 * Table patterns: "schema.table", "table" (any schema), with * matching
 * any run of characters in either part.  Items are split on unquoted
 * commas, then parsed as identifiers (unquoted names fold to lower case),
 * so "My Schema"."T*" works.
 */
static List *
rp_option_tables(DefElem *def)
{
	char	   *raw = pstrdup(rp_option_string(def));
	List	   *names = NIL;
	List	   *patterns = NIL;
	ListCell   *lc;

	/* an empty value is an empty list, as for the other list options */
	if (raw[strspn(raw, " \t\n\r\f\v")] != '\0')
		names = rp_split_quoted(raw);
	foreach(lc, names)
	{
		char	   *item = lfirst(lc);
		char	   *copy = pstrdup(item);	/* split in place; item is for
											 * errors */
		List	   *parts = NIL;
		RpTablePattern *p = palloc0(sizeof(RpTablePattern));

		if (!SplitIdentifierString(copy, '.', &parts) || list_length(parts) > 2 ||
			list_length(parts) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid table pattern \"%s\" in option \"%s\"", item, def->defname),
					 errhint("Use table or schema.table, with * as a wildcard.")));
		if (list_length(parts) == 2)
		{
			p->schema = pstrdup(linitial(parts));
			p->table = pstrdup(lsecond(parts));
		}
		else
			p->table = pstrdup(linitial(parts));
		patterns = lappend(patterns, p);
	}
	return patterns;
}

static void
rp_option_actions(DefElem *def, RpOptions *opts)
{
	List	   *items = rp_option_list(def);
	ListCell   *lc;

	opts->send_insert = opts->send_update = opts->send_delete = opts->send_truncate = false;
	foreach(lc, items)
	{
		char	   *a = lfirst(lc);

		if (strcmp(a, "insert") == 0)
			opts->send_insert = true;
		else if (strcmp(a, "update") == 0)
			opts->send_update = true;
		else if (strcmp(a, "delete") == 0)
			opts->send_delete = true;
		else if (strcmp(a, "truncate") == 0)
			opts->send_truncate = true;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid action \"%s\" in option \"actions\"", a),
					 errhint("Valid actions are insert, update, delete and truncate.")));
	}
}

void
rp_options_parse(List *defs, RpOptions *opts)
{
	ListCell   *lc;
	bool		seen[RP_NOPTIONS] = {0};

	memset(opts, 0, sizeof(*opts));
	opts->proto_version = RP_PROTO_VERSION_DEFAULT;
	opts->send_insert = opts->send_update = opts->send_delete = opts->send_truncate = true;
	opts->include_messages = true;
	opts->skip_empty_xacts = true;
	opts->frame_size = RP_FRAME_SIZE_DEFAULT;

	foreach(lc, defs)
	{
		DefElem    *def = lfirst(lc);
		int			i;

		for (i = 0; i < (int) RP_NOPTIONS; i++)
			if (strcmp(def->defname, rp_option_names[i]) == 0)
				break;
		if (i == (int) RP_NOPTIONS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized option \"%s\" for output plugin replicant",
							def->defname)));
		if (seen[i])
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("option \"%s\" given more than once", def->defname)));
		seen[i] = true;

		switch (i)
		{
			case 0:
				opts->proto_version = rp_option_int(def, 0, INT_MAX);
				if (opts->proto_version < RP_PROTO_VERSION_MIN ||
					opts->proto_version > RP_PROTO_VERSION_MAX)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("unsupported value %d for option \"proto_version\"",
									opts->proto_version),
							 errdetail("This server's replicant speaks protocol versions %d to %d.",
									   RP_PROTO_VERSION_MIN, RP_PROTO_VERSION_MAX)));
				break;
			case 1:
				{
					const char *f = rp_option_string(def);

					if (strcmp(f, "binary") == 0)
						opts->json = false;
					else if (strcmp(f, "json") == 0)
						opts->json = true;
					else
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("invalid value \"%s\" for option \"format\"", f),
								 errhint("Valid formats are binary and json.")));
					break;
				}
			case 2:
				opts->include_tables = rp_option_tables(def);
				break;
			case 3:
				opts->exclude_tables = rp_option_tables(def);
				break;
			case 4:
				rp_option_actions(def, opts);
				break;
			case 5:
				opts->include_messages = rp_option_bool(def);
				break;
			case 6:
				opts->message_prefixes = rp_option_list(def);
				break;
			case 7:
				{
					const char *o = rp_option_string(def);

					if (strcmp(o, "none") == 0)
						opts->origin_none = true;
					else if (strcmp(o, "any") == 0)
						opts->origin_none = false;
					else
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("invalid value \"%s\" for option \"origin\"", o),
								 errhint("Valid values are none and any.")));
					break;
				}
			case 8:
				opts->streaming = rp_option_bool(def);
				break;
			case 9:
				opts->skip_empty_xacts = rp_option_bool(def);
				break;
			case 10:
				opts->frame_size = rp_option_int(def, RP_FRAME_SIZE_MIN, RP_FRAME_SIZE_MAX);
				break;
			case 11:
				{
					const char *p = rp_option_string(def);

					if (strcmp(p, "leaf") == 0)
						opts->partitions_root = false;
					else if (strcmp(p, "root") == 0)
						opts->partitions_root = true;
					else
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("invalid value \"%s\" for option \"partitions\"", p),
								 errhint("Valid values are leaf and root.")));
					break;
				}
		}
	}
	/* a root's Relation record needs version 3's kind fields */
	if (opts->partitions_root && opts->proto_version < RP_PROTO_VERSION_REL_KIND)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"partitions\" = root needs option \"proto_version\" %d or later (it is %d)",
						RP_PROTO_VERSION_REL_KIND, opts->proto_version)));
}

static bool
rp_patterns_match(List *patterns, const char *schema, const char *table)
{
	ListCell   *lc;

	foreach(lc, patterns)
	{
		RpTablePattern *p = lfirst(lc);

		if ((p->schema == NULL || rp_glob_match(p->schema, schema)) && rp_glob_match(p->table, table))
			return true;
	}
	return false;
}

bool
rp_options_table_selected(const RpOptions *opts, const char *schema, const char *table)
{
	if (opts->include_tables != NIL && !rp_patterns_match(opts->include_tables, schema, table))
		return false;
	return !rp_patterns_match(opts->exclude_tables, schema, table);
}

bool
rp_options_prefix_selected(const RpOptions *opts, const char *prefix)
{
	ListCell   *lc;

	if (!opts->include_messages)
		return false;
	if (opts->message_prefixes == NIL)
		return true;
	foreach(lc, opts->message_prefixes)
		if (strcmp((const char *) lfirst(lc), prefix) == 0)
		return true;
	return false;
}
