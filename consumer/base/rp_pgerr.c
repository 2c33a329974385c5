/*
 * rp_pgerr.c
 *    Server errors told without row values (see rp_pgerr.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/rp_pgerr.h"

const char *
rp_pgerr_name(const char *state)
{
	static const struct
	{
		const char *code;
		const char *name;
	}			names[] = {
		{"08000", "connection_exception"}, {"08006", "connection_failure"},
		{"08P01", "protocol_violation"}, {"0A000", "feature_not_supported"},
		{"22001", "string_data_right_truncation"}, {"22003", "numeric_value_out_of_range"},
		{"22023", "invalid_parameter_value"}, {"22P02", "invalid_text_representation"},
		{"23502", "not_null_violation"}, {"23503", "foreign_key_violation"},
		{"23505", "unique_violation"}, {"23514", "check_violation"},
		{"23P01", "exclusion_violation"}, {"25006", "read_only_sql_transaction"},
		{"28000", "invalid_authorization_specification"}, {"28P01", "invalid_password"},
		{"3D000", "invalid_catalog_name"}, {"3F000", "invalid_schema_name"},
		{"40001", "serialization_failure"}, {"40P01", "deadlock_detected"},
		{"42501", "insufficient_privilege"}, {"42601", "syntax_error"},
		{"42703", "undefined_column"}, {"42704", "undefined_object"},
		{"42710", "duplicate_object"}, {"42804", "datatype_mismatch"},
		{"42883", "undefined_function"}, {"42P01", "undefined_table"},
		{"42P07", "duplicate_table"}, {"53100", "disk_full"},
		{"53200", "out_of_memory"}, {"53300", "too_many_connections"},
		{"54000", "program_limit_exceeded"}, {"55000", "object_not_in_prerequisite_state"},
		{"55006", "object_in_use"}, {"55P03", "lock_not_available"},
		{"57014", "query_canceled"}, {"57P01", "admin_shutdown"},
		{"57P03", "cannot_connect_now"}, {"58P01", "undefined_file"},
		{"XX000", "internal_error"},
	};

	for (size_t i = 0; state && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].code, state) == 0)
			return names[i].name;
	return NULL;
}

/*
 * The classes whose messages the server words from names, numbers and
 * states, never from a row: connection (08), feature not supported (0A),
 * transaction state (25), authorization (28), catalog and schema names (3D,
 * 3F), rollbacks (40), syntax and access rules (42: undefined objects,
 * privileges), resources (53), program limits (54), prerequisite state
 * (55), operator intervention (57), system errors (58: a missing file) and
 * configuration files (F0).  Left out: data exceptions (22) and constraint
 * violations (23), about the row itself, and whatever is not listed
 * (internal errors, PL/pgSQL's P0, foreign data).
 */
static bool
rp_pgerr_class_shown(const char *state)
{
	static const char *const classes[] = {
		"08", "0A", "25", "28", "3D", "3F", "40", "42", "53", "54", "55", "57", "58", "F0"
	};

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strncmp(state, classes[i], 2) == 0)
			return true;
	return false;
}

bool
rp_pgerr_message_shown(const char *state, const char *file, const char *function)
{
	/* the procedural languages' own raising: a user's message in any state */
	static const char *const pl_files[] = {
		"pl_exec.c", "plperl.c", "pltcl.c", "plpy_elog.c", "plpy_plpymodule.c"
	};

	if (state == NULL || strlen(state) != 5)
		return false;
	if (function && strcmp(function, "exec_stmt_raise") == 0)
		return false;
	for (size_t i = 0; file && i < sizeof(pl_files) / sizeof(pl_files[0]); i++)
		if (strcmp(file, pl_files[i]) == 0)
			return false;

	/*
	 * The replicant plugin's option check (22023): the values it quotes are
	 * the run's own options, never a row's.
	 */
	if (strcmp(state, "22023") == 0 && file && strcmp(file, "rp_options.c") == 0)
		return true;
	return rp_pgerr_class_shown(state);
}

void
rp_pgerr_code(const char *state, char *dst, size_t len)
{
	const char *name = rp_pgerr_name(state);

	if (state == NULL || state[0] == '\0')
		snprintf(dst, len, "no SQLSTATE");
	else if (name)
		snprintf(dst, len, "SQLSTATE %s (%s)", state, name);
	else
		snprintf(dst, len, "SQLSTATE %s", state);
}

const char *
rp_pgerr_said(const PGresult *res, char *dst, size_t len)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	dst[0] = '\0';
	if (msg == NULL || !rp_pgerr_message_shown(state, PQresultErrorField(res, PG_DIAG_SOURCE_FILE),
											   PQresultErrorField(res, PG_DIAG_SOURCE_FUNCTION)))
		return dst;
	snprintf(dst, len, ": %s", msg);
	dst[strcspn(dst, "\n")] = '\0';
	return dst;
}

bool
rp_pgerr_conn_permanent(const char *state)
{
	return state != NULL &&
		(strncmp(state, "28", 2) == 0 || strcmp(state, "3D000") == 0 || strcmp(state, "42501") == 0);
}

const char *
rp_pgerr_conn_hint(const char *state)
{
	if (state == NULL)
		return NULL;
	if (strncmp(state, "28", 2) == 0)
		return "check the user and its password (in the connection string, PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf";
	if (strcmp(state, "3D000") == 0)
		return "check dbname in the connection string";
	if (strcmp(state, "42501") == 0)
		return "grant the user what the server says it lacks (a replication connection needs the REPLICATION attribute)";
	return NULL;
}

/* A SQLSTATE at p: five digits or capitals, then ": ". */
static bool
rp_pgerr_state_at(const char *p)
{
	for (int i = 0; i < 5; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'A' && p[i] <= 'Z')))
			return false;
	return p[5] == ':' && p[6] == ' ';
}

/*
 * The SQLSTATE in one line of a verbose message: after the severity's
 * colon and two blanks ("FATAL:  28P01: "), whatever the severity's
 * language.  Its offset, or -1.
 */
static int
rp_pgerr_state_in(const char *line, size_t n)
{
	for (size_t i = 0; i + 3 + 7 <= n; i++)
		if (line[i] == ':' && line[i + 1] == ' ' && line[i + 2] == ' ' && rp_pgerr_state_at(line + i + 3))
			return (int) (i + 3);
	return -1;
}

void
rp_pgerr_conn_line(const char *msg, char *line, size_t len, char *state)
{
	const char *first = msg ? msg : "";
	const char *p = first;
	const char *pick = NULL;
	size_t		pick_n = 0;
	int			at = -1;

	state[0] = '\0';
	while (*p && pick == NULL)
	{
		size_t		n = strcspn(p, "\n");
		int			s = rp_pgerr_state_in(p, n);

		if (s >= 0)
		{
			pick = p;
			pick_n = n;
			at = s;
		}
		p += n + (p[n] == '\n');
	}
	if (pick == NULL)
	{
		pick = first;
		pick_n = strcspn(first, "\n");
	}
	if (at >= 0)
	{
		memcpy(state, pick + at, 5);
		state[5] = '\0';
		/* the line without "28P01: ", the code after it */
		snprintf(line, len, "%.*s%.*s (SQLSTATE %s)", at, pick, (int) (pick_n - (size_t) at - 7),
				 pick + at + 7, state);
	}
	else
		snprintf(line, len, "%.*s", (int) pick_n, pick);
	if (line[0] == '\0')
		snprintf(line, len, "unknown error");
}
