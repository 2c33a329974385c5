/*
 * test_base.c
 *    The "one of each" helpers (issue 12): the hash gives exactly the
 *    values the fold, the reassembler and the mirror computed before
 *    there was one (published FNV-1a vectors, the fold's own start value,
 *    the finalizer); the clock's wall and monotonic readings agree with
 *    each other; the LSN formatter fills its whole buffer at the extreme;
 *    the type table maps each built-in as the plugin does; a server
 *    error's message is shown only for the allowed classes and never when
 *    a procedural language raised it (issue 46), and a refused
 *    connection's SQLSTATE is read from libpq's verbose message.
 */
#include <string.h>
#include <time.h>

#include "ct_kit.h"
#include "base/rp_clock.h"
#include "base/rp_hash.h"
#include "base/rp_pgerr.h"
#include "rp_lsn.h"
#include "rp_typeenc.h"
#include "rp_wire.h"

START_TEST(test_hash_vectors)
{
	/* FNV-1a 64 test vectors (Fowler, Noll, Vo) */
	ck_assert_uint_eq(rp_hash_bytes("", 0), UINT64_C(0xcbf29ce484222325));
	ck_assert_uint_eq(rp_hash_bytes("a", 1), UINT64_C(0xaf63dc4c8601ec8c));
	ck_assert_uint_eq(rp_hash_bytes("foobar", 6), UINT64_C(0x85944171f73967e8));
	/* extending is hashing the concatenation */
	ck_assert_uint_eq(rp_hash_extend(rp_hash_bytes("foo", 3), "bar", 3), rp_hash_bytes("foobar", 6));
	/* the fold's start value, a digit short of the basis, as it always was */
	ck_assert_uint_eq(rp_hash_extend(UINT64_C(1469598103934665603), "sales|2024", 10),
					  UINT64_C(0x9148e6245fb8a65b));
	/* MurmurHash3's fmix64, as the mirror's effect map applied it */
	ck_assert_uint_eq(rp_hash_mix(rp_hash_bytes("foobar", 6)), UINT64_C(0x2c22194922d1672b));
	ck_assert_uint_eq(rp_hash_mix(1), UINT64_C(0xb456bcfc34c2cb2c));
	ck_assert_uint_eq(rp_hash_mix(0), 0);
}

END_TEST

START_TEST(test_clock)
{
	int64_t		wall_us = rp_clock_wall_us();
	int64_t		wall_ms = rp_clock_wall_ms();
	int64_t		mono_us = rp_clock_mono_us();
	int64_t		mono_ms = rp_clock_mono_ms();
	struct timespec dl;
	int64_t		dl_ms;

	/* the same instant in two units (a second apart at most) */
	ck_assert(wall_us / 1000 - wall_ms < 1000 && wall_ms - wall_us / 1000 < 1000);
	ck_assert(mono_us / 1000 - mono_ms < 1000 && mono_ms - mono_us / 1000 < 1000);
	/* the wall clock is the epoch's (after 2020), as the older names were */
	ck_assert(wall_ms > INT64_C(1577836800000));
	ck_assert(rp_clock_wall_ms() >= wall_ms && rp_clock_wall_us() >= wall_us);
	ck_assert(rp_clock_mono_us() >= mono_us);
	/* a deadline 1.5 s out, normalized */
	rp_clock_deadline(&dl, 1500);
	ck_assert(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
	dl_ms = (int64_t) dl.tv_sec * 1000 + dl.tv_nsec / 1000000;
	ck_assert(dl_ms - wall_ms >= 1500 && dl_ms - wall_ms < 2500);
}

END_TEST

START_TEST(test_lsn_extremes)
{
	char		buf[RP_LSN_BUFLEN + 8];
	uint64_t	v = 0;

	memset(buf, 'x', sizeof(buf));
	ck_assert_str_eq(rp_lsn_format(UINT64_MAX, buf), "FFFFFFFF/FFFFFFFF");
	ck_assert_int_eq(strlen(buf) + 1, RP_LSN_BUFLEN);
	ck_assert_int_eq(buf[RP_LSN_BUFLEN], 'x');	/* nothing past the buffer */
	ck_assert_str_eq(rp_lsn_format(UINT64_C(0x100000000), buf), "1/0");
	ck_assert_str_eq(rp_lsn_format(UINT64_C(0xABCDEF), buf), "0/ABCDEF");
	ck_assert(rp_lsn_parse("FFFFFFFF/FFFFFFFF", &v));
	ck_assert_uint_eq(v, UINT64_MAX);
	/* a failed parse leaves the value alone */
	v = 42;
	ck_assert(!rp_lsn_parse("1/", &v));
	ck_assert_uint_eq(v, 42);
}

END_TEST

START_TEST(test_typeenc)
{
	static const struct
	{
		uint32_t	oid;
		int			enc;
	}			builtin[] = {
		{16, RP_ENC_BOOL}, {21, RP_ENC_INT2}, {23, RP_ENC_INT4}, {20, RP_ENC_INT8},
		{26, RP_ENC_OID}, {700, RP_ENC_FLOAT4}, {701, RP_ENC_FLOAT8}, {1700, RP_ENC_NUMERIC},
		{25, RP_ENC_STRING}, {1043, RP_ENC_STRING}, {1042, RP_ENC_STRING}, {19, RP_ENC_STRING},
		{17, RP_ENC_BYTEA}, {2950, RP_ENC_UUID}, {1082, RP_ENC_DATE}, {1083, RP_ENC_TIME},
		{1266, RP_ENC_TIMETZ}, {1114, RP_ENC_TIMESTAMP}, {1184, RP_ENC_TIMESTAMPTZ},
		{1186, RP_ENC_INTERVAL}, {114, RP_ENC_JSON}, {3802, RP_ENC_JSONB},
	};

	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		ck_assert_msg(rp_typeenc_builtin(builtin[i].oid) == builtin[i].enc, "OID %u",
					  builtin[i].oid);
	/* not in the table: text[] (1009), xml (142), money (790), a user type */
	ck_assert_int_eq(rp_typeenc_builtin(1009), -1);
	ck_assert_int_eq(rp_typeenc_builtin(142), -1);
	ck_assert_int_eq(rp_typeenc_builtin(790), -1);
	ck_assert_int_eq(rp_typeenc_builtin(RP_OID_FIRST_NORMAL), -1);
	ck_assert_int_eq(rp_typeenc_by_typtype('e'), RP_ENC_ENUM);
	ck_assert_int_eq(rp_typeenc_by_typtype('c'), RP_ENC_COMPOSITE);
	ck_assert_int_eq(rp_typeenc_by_typtype('r'), RP_ENC_RANGE);
	ck_assert_int_eq(rp_typeenc_by_typtype('b'), -1);
	ck_assert_int_eq(rp_typeenc_by_typtype('d'), -1);	/* domains: the
														 * caller's, first */
	ck_assert_int_eq(rp_typeenc_by_typtype('m'), -1);	/* multiranges: their
														 * text */
}

END_TEST

START_TEST(test_pgerr_allow_list)
{
	char		code[64];

	/* the server's words about names, privileges, resources: shown */
	ck_assert(rp_pgerr_message_shown("42704", "parse_type.c", "typenameType"));
	ck_assert(rp_pgerr_message_shown("42501", "aclchk.c", "aclcheck_error"));
	ck_assert(rp_pgerr_message_shown("58P01", "dfmgr.c", "internal_load_library"));
	ck_assert(rp_pgerr_message_shown("53100", NULL, NULL));
	ck_assert(rp_pgerr_message_shown("28P01", "auth.c", "auth_failed"));
	/* about the row: never */
	ck_assert(!rp_pgerr_message_shown("22P02", "numutils.c", "pg_strtoint32_safe"));
	ck_assert(!rp_pgerr_message_shown("23505", "nbtinsert.c", "_bt_check_unique"));
	ck_assert(!rp_pgerr_message_shown("23514", "execMain.c", "ExecConstraints"));
	ck_assert(!rp_pgerr_message_shown("XX000", "relcache.c", NULL));
	ck_assert(!rp_pgerr_message_shown("P0001", "pl_exec.c", "exec_stmt_raise"));

	/*
	 * a RAISE (or a PL's own error) in an allowed state: its text is the
	 * user's
	 */
	ck_assert(!rp_pgerr_message_shown("42704", "pl_exec.c", "exec_stmt_raise"));
	ck_assert(!rp_pgerr_message_shown("42704", NULL, "exec_stmt_raise"));
	ck_assert(!rp_pgerr_message_shown("57P01", "plpy_elog.c", "PLy_elog_impl"));
	ck_assert(!rp_pgerr_message_shown("53000", "plperl.c", "plperl_call_handler"));
	/* the plugin's option check quotes the run's options, not rows */
	ck_assert(rp_pgerr_message_shown("22023", "rp_options.c", "rp_options_parse"));
	ck_assert(!rp_pgerr_message_shown("22023", "varlena.c", NULL));
	ck_assert(!rp_pgerr_message_shown(NULL, "parse_type.c", NULL));
	ck_assert(!rp_pgerr_message_shown("427", "parse_type.c", NULL));

	rp_pgerr_code("42704", code, sizeof(code));
	ck_assert_str_eq(code, "SQLSTATE 42704 (undefined_object)");
	rp_pgerr_code("2F005", code, sizeof(code));
	ck_assert_str_eq(code, "SQLSTATE 2F005");
	rp_pgerr_code(NULL, code, sizeof(code));
	ck_assert_str_eq(code, "no SQLSTATE");

	ck_assert(rp_pgerr_conn_permanent("28P01"));
	ck_assert(rp_pgerr_conn_permanent("28000"));
	ck_assert(rp_pgerr_conn_permanent("3D000"));
	ck_assert(rp_pgerr_conn_permanent("42501"));
	ck_assert(!rp_pgerr_conn_permanent("53300"));
	ck_assert(!rp_pgerr_conn_permanent("57P03"));
	ck_assert(!rp_pgerr_conn_permanent(""));
	ck_assert(rp_pgerr_conn_hint("28P01") != NULL);
	ck_assert(rp_pgerr_conn_hint("57P03") == NULL);
}

END_TEST

START_TEST(test_pgerr_conn_line)
{
	char		line[256],
				state[6];

	rp_pgerr_conn_line("connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  28P01: password "
					   "authentication failed for user \"su\"\nLOCATION:  auth_failed, auth.c:334\n",
					   line, sizeof(line), state);
	ck_assert_str_eq(state, "28P01");
	ck_assert_str_eq(line, "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  password "
					 "authentication failed for user \"su\" (SQLSTATE 28P01)");

	/* two hosts: the one that answered, whatever its severity's language */
	rp_pgerr_conn_line("connection to server on socket \"/a/.s.PGSQL.1\" failed: No such file or directory\n"
					   "\tIs the server running locally?\n"
					   "connection to server at \"b\" (10.0.0.2), port 5432 failed: SCHWERWIEGEND:  3D000: "
					   "Datenbank \u00bbx\u00ab existiert nicht\nLOCATION:  InitPostgres\n",
					   line, sizeof(line), state);
	ck_assert_str_eq(state, "3D000");
	ck_assert(strstr(line, "port 5432 failed: SCHWERWIEGEND:  Datenbank") != NULL);
	ck_assert(strstr(line, "(SQLSTATE 3D000)") != NULL);

	/* no server answered: libpq's first line, no state */
	rp_pgerr_conn_line("connection to server on socket \"/a/.s.PGSQL.1\" failed: No such file or directory\n"
					   "\tIs the server running locally and accepting connections on that socket?\n",
					   line, sizeof(line), state);
	ck_assert_str_eq(state, "");
	ck_assert_str_eq(line, "connection to server on socket \"/a/.s.PGSQL.1\" failed: No such file or directory");

	/*
	 * a client-side message that merely has two blanks after a colon: no
	 * state
	 */
	rp_pgerr_conn_line("x failed: fe_sendauth:  no password supplied\n", line, sizeof(line), state);
	ck_assert_str_eq(state, "");
	rp_pgerr_conn_line("", line, sizeof(line), state);
	ck_assert_str_eq(line, "unknown error");
	rp_pgerr_conn_line(NULL, line, sizeof(line), state);
	ck_assert_str_eq(line, "unknown error");
}

END_TEST

Suite	   *
ct_suite_base(void)
{
	Suite	   *s = suite_create("base");
	TCase	   *tc = tcase_create("base");

	tcase_add_test(tc, test_hash_vectors);
	tcase_add_test(tc, test_clock);
	tcase_add_test(tc, test_lsn_extremes);
	tcase_add_test(tc, test_typeenc);
	tcase_add_test(tc, test_pgerr_allow_list);
	tcase_add_test(tc, test_pgerr_conn_line);
	suite_add_tcase(s, tc);
	return s;
}
