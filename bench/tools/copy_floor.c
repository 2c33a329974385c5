/*
 * copy_floor.c
 *    The floor of a table copy between two PostgreSQL servers, for
 *    bench/snapshot.sh and bench/mirror.sh: each table's binary COPY TO
 *    STDOUT on the source is handed, message by message, to a binary COPY
 *    FROM STDIN of the same table on the destination, in one process with
 *    one session on each side.  No decoding, no buffering beyond libpq's:
 *    what is left is the two servers' own work.
 *
 *    copy_floor SRC_CONNINFO DST_CONNINFO TABLE...
 *
 * The tables are copied one after the other; a bench runs several of these
 * at once for several sessions.  Each table's copy is autocommitted on the
 * destination.  Exit status 0, or 1 with a message naming the table and
 * the step that failed (the server's SQLSTATE, no row values).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

static int
fail(PGconn *conn, PGresult *res, const char *table, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	fprintf(stderr, "copy_floor: table %s: %s failed: SQLSTATE %s%s%s\n", table, what,
			state ? state : "(none)", state ? "" : ": ", state ? "" : PQerrorMessage(conn));
	if (res)
		PQclear(res);
	return 1;
}

static int
start_copy(PGconn *conn, const char *table, const char *fmt, ExecStatusType want)
{
	char		sql[1024];
	PGresult   *res;

	snprintf(sql, sizeof(sql), fmt, table);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != want)
		return fail(conn, res, table, want == PGRES_COPY_OUT ? "COPY TO" : "COPY FROM");
	PQclear(res);
	return 0;
}

/* The command's result after a copy's data: COMMAND_OK, then no more. */
static int
end_copy(PGconn *conn, const char *table, const char *what)
{
	PGresult   *res = PQgetResult(conn);
	int			rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		return fail(conn, res, table, what);
	PQclear(res);
	while ((res = PQgetResult(conn)) != NULL)
	{
		rc = 1;
		PQclear(res);
	}
	return rc ? fail(conn, NULL, table, what) : 0;
}

static int
copy_table(PGconn *src, PGconn *dst, const char *table)
{
	if (start_copy(src, table, "COPY %s TO STDOUT (FORMAT binary)", PGRES_COPY_OUT) ||
		start_copy(dst, table, "COPY %s FROM STDIN (FORMAT binary)", PGRES_COPY_IN))
		return 1;
	for (;;)
	{
		char	   *buf = NULL;
		int			n = PQgetCopyData(src, &buf, 0);

		if (n == -1)
			break;
		if (n < 0)
			return fail(src, NULL, table, "reading the COPY data");
		if (PQputCopyData(dst, buf, n) != 1)
		{
			PQfreemem(buf);
			return fail(dst, NULL, table, "sending the COPY data");
		}
		PQfreemem(buf);
	}
	if (end_copy(src, table, "COPY TO"))
		return 1;
	if (PQputCopyEnd(dst, NULL) != 1)
		return fail(dst, NULL, table, "ending the COPY");
	return end_copy(dst, table, "COPY FROM");
}

int
main(int argc, char **argv)
{
	PGconn	   *src,
			   *dst;
	int			rc = 0;

	if (argc < 4)
	{
		fprintf(stderr, "usage: copy_floor SRC_CONNINFO DST_CONNINFO TABLE...\n");
		return 2;
	}
	src = PQconnectdb(argv[1]);
	dst = PQconnectdb(argv[2]);
	if (PQstatus(src) != CONNECTION_OK || PQstatus(dst) != CONNECTION_OK)
	{
		fprintf(stderr, "copy_floor: cannot connect: %s", PQerrorMessage(PQstatus(src) != CONNECTION_OK ? src : dst));
		return 1;
	}
	for (int i = 3; i < argc && rc == 0; i++)
		rc = copy_table(src, dst, argv[i]);
	PQfinish(src);
	PQfinish(dst);
	return rc;
}
