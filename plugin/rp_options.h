/*
 * rp_options.h
 *    The output plugin's options: one parser for every option, rejecting
 *    unknown and duplicate names.  See the option table in README.md.
 */
#ifndef RP_OPTIONS_H
#define RP_OPTIONS_H

#include "postgres.h"
#include "nodes/pg_list.h"

typedef struct RpTablePattern
{
	char	   *schema;			/* NULL: any schema */
	char	   *table;
} RpTablePattern;

typedef struct RpOptions
{
	int			proto_version;
	bool		json;			/* format=json (else binary) */
	List	   *include_tables; /* of RpTablePattern; NIL: every table */
	List	   *exclude_tables;
	bool		send_insert;
	bool		send_update;
	bool		send_delete;
	bool		send_truncate;
	bool		include_messages;
	List	   *message_prefixes;	/* of char *; NIL: every prefix */
	bool		origin_none;	/* skip changes that carry a replication
								 * origin */
	bool		streaming;
	bool		skip_empty_xacts;
	int			frame_size;		/* flush a binary frame at this many bytes */
	bool		partitions_root;	/* partitions=root: a partition's changes
									 * are its root's */
} RpOptions;

/* Parse ctx->output_plugin_options (a List of DefElem) into opts. */
extern void rp_options_parse(List *defs, RpOptions *opts);

/* Does the table pass include_tables / exclude_tables? */
extern bool rp_options_table_selected(const RpOptions *opts, const char *schema,
									  const char *table);

extern bool rp_options_prefix_selected(const RpOptions *opts, const char *prefix);

#endif							/* RP_OPTIONS_H */
