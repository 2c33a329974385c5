/*
 * test_render.c
 *    Values of every encoding, built by hand with the rp_buf writers, must
 *    pass the decoder's structural walk and render as exact JSON text: one
 *    by one through rp_render_value, then all together as the columns of
 *    one row through a frame, the decoder and rp_render_record.
 *    Guarantees: G6 (one value, one JSON text), G3 (what decodes renders).
 */
#include "ct_kit.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>

/* ---- element and field helpers ----------------------------------------- */

static void
el_null(RpBuf *b)
{
	rp_enc_datum_kind(b, RP_DATUM_NULL);
}

static void
el_i4(RpBuf *b, int32_t v)
{
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, (uint32_t) v);
}

static void
el_str(RpBuf *b, const char *s)
{
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_cstr(b, s);
}

static void
put_num(RpBuf *b, uint16_t sign, int16_t weight, uint16_t dscale, int ndigits,...)
{
	uint16_t	digits[16];
	va_list		ap;

	va_start(ap, ndigits);
	for (int i = 0; i < ndigits; i++)
		digits[i] = (uint16_t) va_arg(ap, int);
	va_end(ap);
	ct_put_numeric(b, sign, weight, dscale, ndigits, digits);
}

static void
put_bytes_str(RpBuf *b, const void *p, size_t n)
{
	rp_buf_put_str(b, (const char *) p, n);
}

static void
put_interval(RpBuf *b, int64_t us, int32_t days, int32_t months)
{
	rp_buf_put_u64(b, (uint64_t) us);
	rp_buf_put_u32(b, (uint32_t) days);
	rp_buf_put_u32(b, (uint32_t) months);
}

static void
put_timetz(RpBuf *b, int64_t us, int32_t offset_east)
{
	rp_buf_put_u64(b, (uint64_t) us);
	rp_buf_put_u32(b, (uint32_t) offset_east);
}

#define DIMS(...) (int[]){__VA_ARGS__}

/*
 * Every case: a name, the encoding, the JSON text it must render as, and
 * the statements that write its bytes into b.
 */
#define VALUE_CASES(X) \
	X(bool_true, RP_ENC_BOOL, "true", rp_buf_put_u8(b, 1)) \
	X(bool_false, RP_ENC_BOOL, "false", rp_buf_put_u8(b, 0)) \
	X(int2_min, RP_ENC_INT2, "-32768", rp_buf_put_u16(b, 0x8000)) \
	X(int2_max, RP_ENC_INT2, "32767", rp_buf_put_u16(b, 0x7FFF)) \
	X(int2_minus1, RP_ENC_INT2, "-1", rp_buf_put_u16(b, 0xFFFF)) \
	X(int4_min, RP_ENC_INT4, "-2147483648", rp_buf_put_u32(b, (uint32_t) INT32_MIN)) \
	X(int4_max, RP_ENC_INT4, "2147483647", rp_buf_put_u32(b, INT32_MAX)) \
	X(int4_zero, RP_ENC_INT4, "0", rp_buf_put_u32(b, 0)) \
	X(int8_min, RP_ENC_INT8, "-9223372036854775808", rp_buf_put_u64(b, (uint64_t) INT64_MIN)) \
	X(int8_max, RP_ENC_INT8, "9223372036854775807", rp_buf_put_u64(b, INT64_MAX)) \
	X(oid_zero, RP_ENC_OID, "0", rp_buf_put_u32(b, 0)) \
	X(oid_max, RP_ENC_OID, "4294967295", rp_buf_put_u32(b, 4294967295u)) \
	X(float4_nan, RP_ENC_FLOAT4, "\"NaN\"", ct_put_float4(b, NAN)) \
	X(float4_inf, RP_ENC_FLOAT4, "\"Infinity\"", ct_put_float4(b, INFINITY)) \
	X(float4_ninf, RP_ENC_FLOAT4, "\"-Infinity\"", ct_put_float4(b, -INFINITY)) \
	X(float4_negzero, RP_ENC_FLOAT4, "-0", ct_put_float4(b, -0.0f)) \
	X(float4_tenth, RP_ENC_FLOAT4, "0.1", ct_put_float4(b, 0.1f)) \
	X(float4_max, RP_ENC_FLOAT4, "3.4028235e+38", ct_put_float4(b, FLT_MAX)) \
	X(float4_denorm, RP_ENC_FLOAT4, "1e-45", ct_put_float4(b, 1.4e-45f)) \
	X(float8_nan, RP_ENC_FLOAT8, "\"NaN\"", ct_put_float8(b, NAN)) \
	X(float8_inf, RP_ENC_FLOAT8, "\"Infinity\"", ct_put_float8(b, INFINITY)) \
	X(float8_ninf, RP_ENC_FLOAT8, "\"-Infinity\"", ct_put_float8(b, -INFINITY)) \
	X(float8_negzero, RP_ENC_FLOAT8, "-0", ct_put_float8(b, -0.0)) \
	X(float8_tenth, RP_ENC_FLOAT8, "0.1", ct_put_float8(b, 0.1)) \
	X(float8_1e300, RP_ENC_FLOAT8, "1e+300", ct_put_float8(b, 1e300)) \
	X(float8_denorm_min, RP_ENC_FLOAT8, "5e-324", ct_put_float8(b, 4.9406564584124654e-324)) \
	X(float8_denorm, RP_ENC_FLOAT8, "1e-310", ct_put_float8(b, 1e-310)) \
	X(float8_third, RP_ENC_FLOAT8, "-0.3333333333333333", ct_put_float8(b, -1.0 / 3.0)) \
	X(numeric_plain, RP_ENC_NUMERIC, "\"12.50\"", put_num(b, RP_NUMERIC_POS, 0, 2, 2, 12, 5000)) \
	X(numeric_zero, RP_ENC_NUMERIC, "\"0\"", put_num(b, RP_NUMERIC_POS, 0, 0, 0)) \
	X(numeric_zero_scale, RP_ENC_NUMERIC, "\"0.000\"", put_num(b, RP_NUMERIC_POS, 0, 3, 0)) \
	X(numeric_negative, RP_ENC_NUMERIC, "\"-0.0001\"", put_num(b, RP_NUMERIC_NEG, -1, 4, 1, 1)) \
	X(numeric_padded, RP_ENC_NUMERIC, "\"10000.5000\"", put_num(b, RP_NUMERIC_POS, 1, 4, 3, 1, 0, 5000)) \
	X(numeric_nan, RP_ENC_NUMERIC, "\"NaN\"", put_num(b, RP_NUMERIC_NAN, 0, 0, 0)) \
	X(numeric_pinf, RP_ENC_NUMERIC, "\"Infinity\"", put_num(b, RP_NUMERIC_PINF, 0, 0, 0)) \
	X(numeric_ninf, RP_ENC_NUMERIC, "\"-Infinity\"", put_num(b, RP_NUMERIC_NINF, 0, 0, 0)) \
	X(string_plain, RP_ENC_STRING, "\"hello\"", rp_buf_put_cstr(b, "hello")) \
	X(string_empty, RP_ENC_STRING, "\"\"", rp_buf_put_cstr(b, "")) \
	X(string_escapes, RP_ENC_STRING, "\"q\\\" b\\\\ n\\n t\\t c\\u0001 d\x7f /\"", \
	  rp_buf_put_cstr(b, "q\" b\\ n\n t\t c\x01 d\x7f /")) \
	X(string_unicode, RP_ENC_STRING, "\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x90\x98\"", \
	  rp_buf_put_cstr(b, "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x90\x98")) \
	X(string_invalid_utf8, RP_ENC_STRING, "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD\"", \
	  rp_buf_put_cstr(b, "a\xFF" "b\xC0\x80")) \
	X(string_nul, RP_ENC_STRING, "\"a\\u0000b\"", put_bytes_str(b, "a\0b", 3)) \
	X(text_point, RP_ENC_TEXT, "\"(1,2)\"", rp_buf_put_cstr(b, "(1,2)")) \
	X(enum_label, RP_ENC_ENUM, "\"happy \\\"face\\\"\"", rp_buf_put_cstr(b, "happy \"face\"")) \
	X(bytea_zeros, RP_ENC_BYTEA, "\"AAABAgA=\"", put_bytes_str(b, "\0\0\1\2\0", 5)) \
	X(bytea_empty, RP_ENC_BYTEA, "\"\"", put_bytes_str(b, "", 0)) \
	X(bytea_canary, RP_ENC_BYTEA, "\"Q0FOQVJZ\"", put_bytes_str(b, "CANARY", 6)) \
	X(uuid, RP_ENC_UUID, "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"", \
	  rp_buf_put_bytes(b, "\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38\x0a\x11", 16)) \
	X(date_epoch, RP_ENC_DATE, "\"1970-01-01\"", rp_buf_put_u32(b, 0)) \
	X(date_leap, RP_ENC_DATE, "\"2000-02-29\"", rp_buf_put_u32(b, 11016)) \
	X(date_1bc, RP_ENC_DATE, "\"0000-01-01\"", rp_buf_put_u32(b, (uint32_t) -719528)) \
	X(date_44bc, RP_ENC_DATE, "\"-0044-03-15\"", rp_buf_put_u32(b, (uint32_t) -735525)) \
	X(date_10000, RP_ENC_DATE, "\"+10000-01-01\"", rp_buf_put_u32(b, 2932897)) \
	X(date_pinf, RP_ENC_DATE, "\"infinity\"", rp_buf_put_u32(b, (uint32_t) RP_DATE_POS_INF)) \
	X(date_ninf, RP_ENC_DATE, "\"-infinity\"", rp_buf_put_u32(b, (uint32_t) RP_DATE_NEG_INF)) \
	X(time_frac, RP_ENC_TIME, "\"12:34:56.500000\"", rp_buf_put_u64(b, UINT64_C(45296500000))) \
	X(time_midnight, RP_ENC_TIME, "\"00:00:00\"", rp_buf_put_u64(b, 0)) \
	X(time_24, RP_ENC_TIME, "\"24:00:00\"", rp_buf_put_u64(b, UINT64_C(86400000000))) \
	X(timetz_east, RP_ENC_TIMETZ, "\"12:34:56+05:30\"", put_timetz(b, INT64_C(45296000000), 19800)) \
	X(timetz_west, RP_ENC_TIMETZ, "\"23:59:59.999999-08:00\"", put_timetz(b, INT64_C(86399999999), -28800)) \
	X(timetz_secs, RP_ENC_TIMETZ, "\"00:00:00-00:00:30\"", put_timetz(b, 0, -30)) \
	X(ts_epoch, RP_ENC_TIMESTAMP, "\"1970-01-01T00:00:00\"", rp_buf_put_u64(b, 0)) \
	X(ts_micro, RP_ENC_TIMESTAMP, "\"2024-03-01T12:34:56.789012\"", rp_buf_put_u64(b, UINT64_C(1709296496789012))) \
	X(ts_pre1970, RP_ENC_TIMESTAMP, "\"1969-07-20T20:17:40.000001\"", \
	  rp_buf_put_u64(b, (uint64_t) -INT64_C(14182939999999))) \
	X(ts_bc, RP_ENC_TIMESTAMP, "\"-0001-12-31T23:59:59.999999\"", \
	  rp_buf_put_u64(b, (uint64_t) -INT64_C(62167219200000001))) \
	X(ts_pinf, RP_ENC_TIMESTAMP, "\"infinity\"", rp_buf_put_u64(b, (uint64_t) RP_TS_POS_INF)) \
	X(ts_ninf, RP_ENC_TIMESTAMP, "\"-infinity\"", rp_buf_put_u64(b, (uint64_t) RP_TS_NEG_INF)) \
	X(tstz_epoch, RP_ENC_TIMESTAMPTZ, "\"1970-01-01T00:00:00Z\"", rp_buf_put_u64(b, 0)) \
	X(tstz_pg_epoch, RP_ENC_TIMESTAMPTZ, "\"2000-01-01T00:00:00.000001Z\"", \
	  rp_buf_put_u64(b, (uint64_t) RP_PG_EPOCH_USECS + 1)) \
	X(tstz_pre1970, RP_ENC_TIMESTAMPTZ, "\"1969-12-31T23:59:59.999999Z\"", rp_buf_put_u64(b, (uint64_t) -1)) \
	X(tstz_pinf, RP_ENC_TIMESTAMPTZ, "\"infinity\"", rp_buf_put_u64(b, (uint64_t) RP_TS_POS_INF)) \
	X(tstz_pg_min, RP_ENC_TIMESTAMPTZ, "\"-4713-11-24T00:00:00Z\"", \
	  rp_buf_put_u64(b, (uint64_t) INT64_C(-210866803200000000))) \
	X(tstz_last_unix, RP_ENC_TIMESTAMPTZ, "\"+294247-01-10T04:00:54.775806Z\"", \
	  rp_buf_put_u64(b, (uint64_t) (RP_TS_POS_INF - 1))) \
	X(tstz_ext_first, RP_ENC_TIMESTAMPTZ, "\"+294247-01-10T04:00:54.775807Z\"", \
	  rp_buf_put_u64(b, (uint64_t) RP_TS_EXT_BASE)) \
	X(tstz_pg_max, RP_ENC_TIMESTAMPTZ, "\"+294276-12-31T23:59:59.999999Z\"", \
	  rp_buf_put_u64(b, (uint64_t) INT64_C(-9222426057709551615))) \
	X(ts_pg_max, RP_ENC_TIMESTAMP, "\"+294276-12-31T23:59:59.999999\"", \
	  rp_buf_put_u64(b, (uint64_t) (RP_TS_EXT_BASE + RP_TS_EXT_MAX_K))) \
	X(date_pg_min, RP_ENC_DATE, "\"-4713-11-24\"", rp_buf_put_u32(b, (uint32_t) (-2451545 + 10957))) \
	X(date_pg_max, RP_ENC_DATE, "\"+5874897-12-31\"", rp_buf_put_u32(b, 2145031948 + 10957)) \
	X(time_max, RP_ENC_TIME, "\"23:59:59.999999\"", rp_buf_put_u64(b, UINT64_C(86399999999))) \
	X(timetz_extremes, RP_ENC_TIMETZ, "\"24:00:00-15:59:59\"", put_timetz(b, INT64_C(86400000000), -57599)) \
	X(timetz_east_max, RP_ENC_TIMETZ, "\"00:00:00+15:59:59\"", put_timetz(b, 0, 57599)) \
	X(tstz_ninf, RP_ENC_TIMESTAMPTZ, "\"-infinity\"", rp_buf_put_u64(b, (uint64_t) RP_TS_NEG_INF)) \
	X(interval, RP_ENC_INTERVAL, "{\"months\":14,\"days\":-3,\"microseconds\":3723000001}", \
	  put_interval(b, INT64_C(3723000001), -3, 14)) \
	X(interval_extremes, RP_ENC_INTERVAL, \
	  "{\"months\":-2147483648,\"days\":2147483647,\"microseconds\":-9223372036854775808}", \
	  put_interval(b, INT64_MIN, INT32_MAX, INT32_MIN)) \
	X(json_nested, RP_ENC_JSON, "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\"}", \
	  rp_buf_put_cstr(b, "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\"}")) \
	X(jsonb_nested, RP_ENC_JSONB, "{\"a\": [1, {\"b\": [true, false, 1.5e3]}]}", \
	  rp_buf_put_cstr(b, "{\"a\": [1, {\"b\": [true, false, 1.5e3]}]}")) \
	X(jsonb_scalar, RP_ENC_JSONB, "\"str\"", rp_buf_put_cstr(b, "\"str\"")) \
	X(json_line_breaks, RP_ENC_JSON, "{ \"a\":  [1, \"x\\ny\"], \"b\": 2 }", \
	  rp_buf_put_cstr(b, "{\n\"a\":\r\n[1, \"x\\ny\"], \"b\": 2\n}")) \
	X(array_empty, RP_ENC_ARRAY, "[]", rp_enc_array_header(b, RP_ENC_INT4, 23, 0, NULL, NULL)) \
	X(array_1d, RP_ENC_ARRAY, "[1,2,3]", \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 1, DIMS(3), DIMS(1)); el_i4(b, 1); el_i4(b, 2); el_i4(b, 3)) \
	X(array_1d_zero_len, RP_ENC_ARRAY, "[]", \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 1, DIMS(0), DIMS(1))) \
	X(array_2d_nulls, RP_ENC_ARRAY, "[[1,null],[null,4]]", \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 2, DIMS(2, 2), DIMS(1, 1)); \
	  el_i4(b, 1); el_null(b); el_null(b); el_i4(b, 4)) \
	X(array_3d, RP_ENC_ARRAY, "[[[1,2]],[[3,4]]]", \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 3, DIMS(2, 1, 2), DIMS(1, 1, 1)); \
	  el_i4(b, 1); el_i4(b, 2); el_i4(b, 3); el_i4(b, 4)) \
	X(array_lower_bound, RP_ENC_ARRAY, "{\"lower_bounds\":[0],\"elements\":[7,8]}", \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 1, DIMS(2), DIMS(0)); el_i4(b, 7); el_i4(b, 8)) \
	X(array_2d_bounds, RP_ENC_ARRAY, \
	  "{\"lower_bounds\":[-2,1],\"elements\":[[1,2,3],[4,5,null]]}", \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 2, DIMS(2, 3), DIMS(-2, 1)); \
	  el_i4(b, 1); el_i4(b, 2); el_i4(b, 3); el_i4(b, 4); el_i4(b, 5); el_null(b)) \
	X(array_text, RP_ENC_ARRAY, "[\"a\\\"b\",null,\"c,d\",\"\"]", \
	  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, DIMS(4), DIMS(1)); \
	  el_str(b, "a\"b"); el_null(b); el_str(b, "c,d"); el_str(b, "")) \
	X(array_numeric, RP_ENC_ARRAY, "[\"1.5\",\"NaN\",null]", \
	  rp_enc_array_header(b, RP_ENC_NUMERIC, 1700, 1, DIMS(3), DIMS(1)); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_num(b, RP_NUMERIC_POS, 0, 1, 2, 1, 5000); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); put_num(b, RP_NUMERIC_NAN, 0, 0, 0); el_null(b)) \
	X(array_all_null, RP_ENC_ARRAY, "[null,null]", \
	  rp_enc_array_header(b, RP_ENC_DATE, 1082, 1, DIMS(2), DIMS(1)); el_null(b); el_null(b)) \
	X(array_of_arrays, RP_ENC_ARRAY, "[[5],[]]", \
	  rp_enc_array_header(b, RP_ENC_ARRAY, 1007, 1, DIMS(2), DIMS(1)); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); \
	  rp_enc_array_header(b, RP_ENC_INT4, 23, 1, DIMS(1), DIMS(1)); el_i4(b, 5); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_enc_array_header(b, RP_ENC_INT4, 23, 0, NULL, NULL)) \
	X(array_composite, RP_ENC_ARRAY, "[{\"x\":1},null]", \
	  rp_enc_array_header(b, RP_ENC_COMPOSITE, 16400, 1, DIMS(2), DIMS(1)); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u16(b, 1); \
	  ct_put_field(b, "x", 23, RP_ENC_INT4); el_i4(b, 1); el_null(b)) \
	X(composite_null_field, RP_ENC_COMPOSITE, "{\"x\":1,\"y\":null,\"na\\\"me\":\"v\"}", \
	  rp_buf_put_u16(b, 3); \
	  ct_put_field(b, "x", 23, RP_ENC_INT4); el_i4(b, 1); \
	  ct_put_field(b, "y", 25, RP_ENC_STRING); el_null(b); \
	  ct_put_field(b, "na\"me", 25, RP_ENC_STRING); el_str(b, "v")) \
	X(composite_empty, RP_ENC_COMPOSITE, "{}", rp_buf_put_u16(b, 0)) \
	X(composite_nested, RP_ENC_COMPOSITE, \
	  "{\"tags\":[\"a\"],\"span\":{\"lower\":1,\"upper\":null,\"lower_inclusive\":true,\"upper_inclusive\":false}," \
	  "\"inner\":{\"when\":\"2000-01-01T00:00:00Z\"}}", \
	  rp_buf_put_u16(b, 3); \
	  ct_put_field(b, "tags", 1009, RP_ENC_ARRAY); rp_enc_datum_kind(b, RP_DATUM_VALUE); \
	  rp_enc_array_header(b, RP_ENC_STRING, 25, 1, DIMS(1), DIMS(1)); el_str(b, "a"); \
	  ct_put_field(b, "span", 3904, RP_ENC_RANGE); rp_enc_datum_kind(b, RP_DATUM_VALUE); \
	  ct_put_range(b, RP_RANGE_LB_INC | RP_RANGE_UB_INF, 23, RP_ENC_INT4); rp_buf_put_u32(b, 1); \
	  ct_put_field(b, "inner", 16500, RP_ENC_COMPOSITE); rp_enc_datum_kind(b, RP_DATUM_VALUE); \
	  rp_buf_put_u16(b, 1); ct_put_field(b, "when", 1184, RP_ENC_TIMESTAMPTZ); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u64(b, (uint64_t) RP_PG_EPOCH_USECS)) \
	X(range_empty, RP_ENC_RANGE, "{\"empty\":true}", ct_put_range(b, RP_RANGE_EMPTY, 23, RP_ENC_INT4)) \
	X(range_incl_excl, RP_ENC_RANGE, \
	  "{\"lower\":1,\"upper\":10,\"lower_inclusive\":true,\"upper_inclusive\":false}", \
	  ct_put_range(b, RP_RANGE_LB_INC, 23, RP_ENC_INT4); rp_buf_put_u32(b, 1); rp_buf_put_u32(b, 10)) \
	X(range_excl_incl, RP_ENC_RANGE, \
	  "{\"lower\":\"1.5\",\"upper\":\"2.5\",\"lower_inclusive\":false,\"upper_inclusive\":true}", \
	  ct_put_range(b, RP_RANGE_UB_INC, 1700, RP_ENC_NUMERIC); \
	  put_num(b, RP_NUMERIC_POS, 0, 1, 2, 1, 5000); put_num(b, RP_NUMERIC_POS, 0, 1, 2, 2, 5000)) \
	X(range_lower_inf, RP_ENC_RANGE, \
	  "{\"lower\":null,\"upper\":5,\"lower_inclusive\":false,\"upper_inclusive\":true}", \
	  ct_put_range(b, RP_RANGE_LB_INF | RP_RANGE_UB_INC, 20, RP_ENC_INT8); rp_buf_put_u64(b, 5)) \
	X(range_both_inf, RP_ENC_RANGE, \
	  "{\"lower\":null,\"upper\":null,\"lower_inclusive\":false,\"upper_inclusive\":false}", \
	  ct_put_range(b, RP_RANGE_LB_INF | RP_RANGE_UB_INF, 1082, RP_ENC_DATE)) \
	X(range_tstz, RP_ENC_RANGE, \
	  "{\"lower\":\"1969-12-31T23:59:59.999999Z\",\"upper\":null,\"lower_inclusive\":true,\"upper_inclusive\":false}", \
	  ct_put_range(b, RP_RANGE_LB_INC | RP_RANGE_UB_INF, 1184, RP_ENC_TIMESTAMPTZ); \
	  rp_buf_put_u64(b, (uint64_t) -1)) \
	X(range_ts_extremes, RP_ENC_RANGE, \
	  "{\"lower\":\"-4713-11-24T00:00:00\",\"upper\":\"+294276-12-31T23:59:59.999999\",\"lower_inclusive\":true,\"upper_inclusive\":true}", \
	  ct_put_range(b, RP_RANGE_LB_INC | RP_RANGE_UB_INC, 1114, RP_ENC_TIMESTAMP); \
	  rp_buf_put_u64(b, (uint64_t) INT64_C(-210866803200000000)); \
	  rp_buf_put_u64(b, (uint64_t) (RP_TS_EXT_BASE + RP_TS_EXT_MAX_K))) \
	X(array_tstz_extremes, RP_ENC_ARRAY, \
	  "[\"+294276-12-31T23:59:59.999999Z\",\"-infinity\"]", \
	  rp_enc_array_header(b, RP_ENC_TIMESTAMPTZ, 1184, 1, DIMS(2), DIMS(1)); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u64(b, (uint64_t) (RP_TS_EXT_BASE + RP_TS_EXT_MAX_K)); \
	  rp_enc_datum_kind(b, RP_DATUM_VALUE); rp_buf_put_u64(b, (uint64_t) RP_TS_NEG_INF)) \
	X(range_date, RP_ENC_RANGE, \
	  "{\"lower\":\"2000-02-29\",\"upper\":\"infinity\",\"lower_inclusive\":true,\"upper_inclusive\":false}", \
	  ct_put_range(b, RP_RANGE_LB_INC, 1082, RP_ENC_DATE); rp_buf_put_u32(b, 11016); \
	  rp_buf_put_u32(b, (uint32_t) RP_DATE_POS_INF))

#define X_BUILD(name, enc, json, ...) \
	static void build_##name(RpBuf *b) { __VA_ARGS__; }
VALUE_CASES(X_BUILD)
#undef X_BUILD

typedef struct ValueCase
{
	const char *name;
	uint8_t		enc;
	void		(*build) (RpBuf *b);
	const char *json;
} ValueCase;

#define X_ROW(name, enc, json, ...) {#name, enc, build_##name, json},
static const ValueCase value_cases[] = {VALUE_CASES(X_ROW)};
#undef X_ROW
#define NCASES ((int) (sizeof(value_cases) / sizeof(value_cases[0])))

/* One case per loop iteration: walk, render, compare. */
START_TEST(test_value)
{
	const ValueCase *vc = &value_cases[_i];
	RpBuf		v;
	char	   *json;

	rp_buf_init(&v, 0);
	vc->build(&v);
	json = ct_value_json(vc->enc, &v);
	ck_assert_msg(strcmp(json, vc->json) == 0, "%s: got %s, want %s", vc->name, json, vc->json);

	/* the walk consumes exactly the value: one byte less is refused */
	if (v.len > 0)
	{
		RpBuf		shorter = v;

		shorter.len--;
		ck_assert_msg(!ct_value_accepted(vc->enc, &shorter), "%s: a truncated value was accepted",
					  vc->name);
	}
	rp_buf_free(&v);
}

END_TEST

/* Every encoding is covered by at least one case. */
START_TEST(test_every_encoding_covered)
{
	bool		seen[RP_ENC__COUNT] = {false};

	for (int i = 0; i < NCASES; i++)
		seen[value_cases[i].enc] = true;
	for (int e = 0; e < RP_ENC__COUNT; e++)
		ck_assert_msg(seen[e], "no case for encoding %s", rp_encoding_name((uint8_t) e));
}

END_TEST

/*
 * All the cases as the columns of one relation: a frame with the relation
 * and one insert, decoded and rendered; the row is the cases' JSON joined.
 */
START_TEST(test_values_in_a_row)
{
	RpBuf		b,
				expect;
	size_t		at;
	char		name[64];
	char	   *lines;
	RpDecoder	dec;
	RpRecord	rec;

	ct_frame(&b);
	at = rp_enc_relation_start(&b, 99, "public", "all_types", RP_IDENTITY_FULL, (uint16_t) NCASES);
	for (int i = 0; i < NCASES; i++)
		rp_enc_relation_column(&b, (int16_t) (i + 1), value_cases[i].name, 1000 + (uint32_t) i,
							   rp_encoding_name(value_cases[i].enc), -1, value_cases[i].enc, 0);
	rp_buf_end_record(&b, at);

	/*
	 * an update: old full tuple with every value, new tuple with every value
	 * or NULL
	 */
	at = rp_enc_change_start(&b, RP_TAG_UPDATE, 99, RP_CHANGE_OLD_FULL, 0);
	rp_enc_tuple_start(&b, (uint16_t) NCASES);
	for (int i = 0; i < NCASES; i++)
	{
		rp_enc_datum_kind(&b, RP_DATUM_VALUE);
		value_cases[i].build(&b);
	}
	rp_enc_tuple_start(&b, (uint16_t) NCASES);
	for (int i = 0; i < NCASES; i++)
	{
		rp_enc_datum_kind(&b, i % 2 ? RP_DATUM_NULL : RP_DATUM_VALUE);
		if (i % 2 == 0)
			value_cases[i].build(&b);
	}
	rp_buf_end_record(&b, at);

	rp_buf_init(&expect, 0);
	rp_buf_put_text(&expect, "{\"kind\":\"relation\""); /* checked by prefix
														 * only */
	ck_assert_int_eq(ct_decode_frame(b.data, b.len, &lines, NULL, 0), 2);
	ck_assert_msg(strncmp(lines, expect.data, expect.len) == 0, "%s", lines);
	rp_buf_reset(&expect);
	rp_buf_put_text(&expect, "{\"kind\":\"update\",\"schema\":\"public\",\"table\":\"all_types\",\"old\":{");
	for (int i = 0; i < NCASES; i++)
	{
		snprintf(name, sizeof(name), "%s\"%s\":", i ? "," : "", value_cases[i].name);
		rp_buf_put_text(&expect, name);
		rp_buf_put_text(&expect, value_cases[i].json);
	}
	rp_buf_put_text(&expect, "},\"new\":{");
	for (int i = 0; i < NCASES; i++)
	{
		snprintf(name, sizeof(name), "%s\"%s\":", i ? "," : "", value_cases[i].name);
		rp_buf_put_text(&expect, name);
		rp_buf_put_text(&expect, i % 2 ? "null" : value_cases[i].json);
	}
	rp_buf_put_text(&expect, "}}");
	{
		const char *got = strchr(lines, '\n') + 1;
		const char *want = ct_cstr(&expect);
		size_t		at = 0;

		while (got[at] && got[at] == want[at])
			at++;
		ck_assert_msg(got[at] == '\0' && want[at] == '\0',
					  "row differs at byte %zu: got ...%.60s, want ...%.60s", at,
					  got + (at > 20 ? at - 20 : 0), want + (at > 20 ? at - 20 : 0));
	}

	/* the datums point at exactly the bytes each case wrote */
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);
	for (int i = 0; i < NCASES; i++)
	{
		RpBuf		v;
		const RpDatum *d = &rec.u.change.old_tuple.datums[i];

		rp_buf_init(&v, 0);
		value_cases[i].build(&v);
		ck_assert_int_eq(d->kind, RP_DATUM_VALUE);
		ck_assert_uint_eq(d->len, v.len);
		ck_assert_mem_eq(d->data, v.data, v.len);
		rp_buf_free(&v);
	}
	rp_decoder_free(&dec);
	rp_buf_free(&expect);
	rp_buf_free(&b);
}

END_TEST

/* rp_render_tuple leaves out unchanged and not-in-key columns. */
START_TEST(test_render_tuple_kinds)
{
	RpColumn	cols[4] = {
		{1, "a", 23, "int4", -1, RP_ENC_INT4, 0},
		{2, "b", 23, "int4", -1, RP_ENC_INT4, 0},
		{3, "c", 23, "int4", -1, RP_ENC_INT4, 0},
		{4, "d\n", 23, "int4", -1, RP_ENC_INT4, 0},
	};
	RpRelation	rel = {1, "s", "t", RP_IDENTITY_DEFAULT, 4, cols, RP_REL_KIND_NONE, 0};
	static const unsigned char one[4] = {0, 0, 0, 1};
	RpDatum		datums[4] = {
		{RP_DATUM_VALUE, 4, one}, {RP_DATUM_NULL, 0, NULL},
		{RP_DATUM_UNCHANGED, 0, NULL}, {RP_DATUM_VALUE, 4, one},
	};
	RpTuple		tup = {4, datums};
	RpBuf		out;

	rp_buf_init(&out, 0);
	rp_render_tuple(&out, &rel, &tup);
	ck_assert_str_eq(ct_cstr(&out), "{\"a\":1,\"b\":null,\"d\\n\":1}");
	datums[0].kind = RP_DATUM_NOT_IN_KEY;
	rp_buf_reset(&out);
	rp_render_tuple(&out, &rel, &tup);
	ck_assert_str_eq(ct_cstr(&out), "{\"b\":null,\"d\\n\":1}");
	for (int i = 0; i < 4; i++)
		datums[i].kind = RP_DATUM_UNCHANGED;
	rp_buf_reset(&out);
	rp_render_tuple(&out, &rel, &tup);
	ck_assert_str_eq(ct_cstr(&out), "{}");
	rp_buf_free(&out);
}

END_TEST

/* The same bytes render to the same text every time (G6). */
START_TEST(test_render_deterministic)
{
	for (int i = 0; i < NCASES; i++)
	{
		RpBuf		v,
					o1,
					o2;

		rp_buf_init(&v, 0);
		value_cases[i].build(&v);
		rp_buf_init(&o1, 1);
		rp_buf_init(&o2, 4096);
		rp_buf_put_text(&o2, "prefix");
		rp_render_value(&o1, value_cases[i].enc, (const unsigned char *) v.data, (uint32_t) v.len);
		rp_render_value(&o2, value_cases[i].enc, (const unsigned char *) v.data, (uint32_t) v.len);
		ck_assert_uint_eq(o1.len + 6, o2.len);
		ck_assert_mem_eq(o1.data, o2.data + 6, o1.len);
		rp_buf_free(&v);
		rp_buf_free(&o1);
		rp_buf_free(&o2);
	}
}

END_TEST

/* A large array and a long string render in full (buffer growth). */
START_TEST(test_render_large)
{
	enum
	{
		N = 100000
	};
	RpBuf		v;
	char	   *json;
	char	   *big = malloc(N + 1);

	rp_buf_init(&v, 0);
	rp_enc_array_header(&v, RP_ENC_INT4, 23, 1, DIMS(N), DIMS(1));
	for (int i = 0; i < N; i++)
		el_i4(&v, i);
	json = ct_value_json(RP_ENC_ARRAY, &v);
	ck_assert(strncmp(json, "[0,1,2,3,", 9) == 0);
	ck_assert(strcmp(json + strlen(json) - 13, ",99998,99999]") == 0);

	rp_buf_reset(&v);
	for (int i = 0; i < N; i++)
		big[i] = (char) (i % 3 == 0 ? '"' : 'a' + i % 26);
	rp_buf_put_str(&v, big, N);
	json = ct_value_json(RP_ENC_STRING, &v);
	ck_assert_uint_eq(strlen(json), 2 + N + (N + 2) / 3);
	rp_buf_free(&v);
	free(big);
}

END_TEST

/* ---- a record written slice by slice (rp_render_record_out) ------------ */

typedef struct SliceSink
{
	RpBuf		got;			/* everything flushed, in order */
	size_t		max_len;		/* the most the render buffer held at a flush */
	int			flushes;
	int			fail_at;		/* this flush fails (0: none does) */
} SliceSink;

static int
slice_flush(void *arg, RpBuf *buf)
{
	SliceSink  *ss = arg;

	if (buf->len > ss->max_len)
		ss->max_len = buf->len;
	if (++ss->flushes == ss->fail_at)
		return -1;
	rp_buf_put_bytes(&ss->got, buf->data, buf->len);
	rp_buf_reset(buf);
	return 0;
}

/*
 * A long text of every kind of byte: ASCII, what is escaped (quote,
 * backslash, control characters, 6 bytes out each), 2-, 3- and 4-byte
 * UTF-8, and invalid bytes (a stray continuation byte, a cut sequence, an
 * invalid lead); shift ASCII bytes first move the slice boundaries across
 * every byte of the sequences.
 */
static void
slice_text(RpBuf *v, size_t len, int shift)
{
	static const char *const pieces[] = {
		"abc", "\"", "\\", "\x01", "\n", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
		"\x80", "\xE2\x82", "\xFF", "\x1F\x1F\x1F\x1F\x1F\x1F\x1F"
	};
	size_t		at = v->len;
	unsigned	k = 0;

	rp_buf_put_u32(v, 0);
	for (int i = 0; i < shift; i++)
		rp_buf_put_char(v, 'x');
	while (v->len - at - 4 < len)
	{
		k = k * 1103515245u + 12345u;
		rp_buf_put_text(v, pieces[(k >> 16) % (sizeof(pieces) / sizeof(pieces[0]))]);
	}
	rp_buf_set_u32_at(v, at, (uint32_t) (v->len - at - 4));
}

/* An insert of (text, json, bytea, text[], int4) with long values, and a message. */
static void
slice_frame(RpBuf *b, int shift)
{
	size_t		at;
	RpBuf		tmp;

	ct_frame(b);
	at = rp_enc_relation_start(b, 7, "public", "big", RP_IDENTITY_DEFAULT, 5);
	rp_enc_relation_column(b, 1, "t", 25, "text", -1, RP_ENC_TEXT, 0);
	rp_enc_relation_column(b, 2, "j", 114, "json", -1, RP_ENC_JSON, 0);
	rp_enc_relation_column(b, 3, "b", 17, "bytea", -1, RP_ENC_BYTEA, 0);
	rp_enc_relation_column(b, 4, "a", 1009, "_text", -1, RP_ENC_ARRAY, 0);
	rp_enc_relation_column(b, 5, "i", 23, "int4", -1, RP_ENC_INT4, RP_COL_PRIMARY_KEY);
	rp_buf_end_record(b, at);
	at = rp_enc_change_start(b, RP_TAG_INSERT, 7, 0, 0);
	rp_enc_tuple_start(b, 5);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	slice_text(b, 5 * RP_RENDER_SLICE + 77, shift);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_init(&tmp, 0);
	rp_buf_put_text(&tmp, "[");
	while (tmp.len < 3 * RP_RENDER_SLICE)
		rp_buf_put_text(&tmp, "\"a\\nb\",\r\n 1,\n");
	rp_buf_put_text(&tmp, "2]");
	rp_buf_put_str(b, tmp.data, tmp.len);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_reset(&tmp);
	for (size_t i = 0; i < 4 * (size_t) RP_RENDER_SLICE + 1 + (size_t) shift; i++)
		rp_buf_put_char(&tmp, (char) (i * 7 + (size_t) shift));
	rp_buf_put_str(b, tmp.data, tmp.len);
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_enc_array_header(b, RP_ENC_STRING, 25, 1, DIMS(3000), DIMS(1));
	for (int i = 0; i < 3000; i++)
		el_str(b, i % 2 ? "an element of some length, escaped: \"q\"" : "e");
	rp_enc_datum_kind(b, RP_DATUM_VALUE);
	rp_buf_put_u32(b, 42);
	rp_buf_end_record(b, at);
	/* message content: long text, then long binary (base64) */
	rp_buf_reset(&tmp);
	while (tmp.len < 2 * RP_RENDER_SLICE + (size_t) shift)
		rp_buf_put_text(&tmp, "m\xC3\xA9ssage \"x\"\n");
	rp_enc_message(b, true, 0, 0x1234, "pfx", tmp.data, tmp.len);
	tmp.data[5] = '\0';
	rp_enc_message(b, true, 0, 0x1235, "pfx", tmp.data, tmp.len);
	rp_buf_free(&tmp);
}

/*
 * Rendered through rp_render_record_out with any flush bound, a record is
 * the same bytes as rendered whole, and the render buffer never holds more
 * than the bound plus one slice rendered plus a short value: a large value
 * is never held rendered whole (G5).
 */
START_TEST(test_render_sliced)
{
	static const size_t bounds[] = {1, 1000, RP_RENDER_SLICE, 1024 * 1024};

	for (int shift = 0; shift < 4; shift++)
	{
		RpBuf		b,
					whole,
					out;
		RpDecoder	dec;
		RpRecord	rec;

		slice_frame(&b, shift);
		rp_buf_init(&whole, 0);
		rp_decoder_init(&dec);
		ck_assert(rp_decoder_frame(&dec, b.data, b.len));
		while (rp_decoder_next(&dec, &rec) == 1)
			rp_render_record(&whole, &rec, &dec.rels, "\"x\":1");
		rp_decoder_free(&dec);
		ck_assert_uint_gt(whole.len, 12 * RP_RENDER_SLICE);

		for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++)
		{
			SliceSink	ss = {.fail_at = 0};
			RpRenderOut fo = {.at = bounds[k],.flush = slice_flush,.arg = &ss};

			rp_buf_init(&ss.got, 0);
			rp_buf_init(&out, 0);
			rp_decoder_init(&dec);
			ck_assert(rp_decoder_frame(&dec, b.data, b.len));
			while (rp_decoder_next(&dec, &rec) == 1)
				rp_render_record_out(&out, &rec, &dec.rels, "\"x\":1", &fo);
			rp_decoder_free(&dec);
			ck_assert(!fo.failed);
			rp_buf_put_bytes(&ss.got, out.data, out.len);
			ck_assert_uint_eq(ss.got.len, whole.len);
			ck_assert_msg(memcmp(ss.got.data, whole.data, whole.len) == 0,
						  "shift %d, bound %zu: the sliced rendering differs", shift, bounds[k]);
			if (bounds[k] <= RP_RENDER_SLICE)
				ck_assert_int_gt(ss.flushes, 10);
			ck_assert_msg(ss.max_len <= bounds[k] + 6 * RP_RENDER_SLICE + 256,
						  "shift %d, bound %zu: the buffer held %zu bytes", shift, bounds[k],
						  ss.max_len);
			ck_assert_uint_le(out.len, bounds[k] + 6 * RP_RENDER_SLICE + 256);
			rp_buf_free(&out);
			rp_buf_free(&ss.got);
		}
		rp_buf_free(&whole);
		rp_buf_free(&b);
	}
}

END_TEST

/* A flush that fails stops the rendering: the rest of the value is not buffered. */
START_TEST(test_render_sliced_flush_fails)
{
	RpBuf		b,
				out;
	RpDecoder	dec;
	RpRecord	rec;
	SliceSink	ss = {.fail_at = 2};
	RpRenderOut fo = {.at = 1000,.flush = slice_flush,.arg = &ss};

	slice_frame(&b, 0);
	rp_buf_init(&ss.got, 0);
	rp_buf_init(&out, 0);
	rp_decoder_init(&dec);
	ck_assert(rp_decoder_frame(&dec, b.data, b.len));
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);	/* the relation */
	ck_assert_int_eq(rp_decoder_next(&dec, &rec), 1);	/* the insert */
	rp_render_record_out(&out, &rec, &dec.rels, NULL, &fo);
	ck_assert(fo.failed);
	ck_assert_int_eq(ss.flushes, 2);
	ck_assert_uint_le(out.len, 1000 + 6 * RP_RENDER_SLICE + 256);
	rp_decoder_free(&dec);
	rp_buf_free(&out);
	rp_buf_free(&ss.got);
	rp_buf_free(&b);
}

END_TEST

Suite	   *
ct_suite_render(void)
{
	Suite	   *s = suite_create("render");
	TCase	   *tc;

	tc = ct_tcase("values");
	tcase_add_loop_test(tc, test_value, 0, NCASES);
	tcase_add_test(tc, test_every_encoding_covered);
	tcase_add_test(tc, test_values_in_a_row);
	tcase_add_test(tc, test_render_tuple_kinds);
	tcase_add_test(tc, test_render_deterministic);
	tcase_add_test(tc, test_render_large);
	tcase_add_test(tc, test_render_sliced);
	tcase_add_test(tc, test_render_sliced_flush_fails);
	suite_add_tcase(s, tc);
	return s;
}
