/*
 * test_pgrecv.c
 *    rp_pgrecv: PostgreSQL's binary send format into wire encodings, for
 *    the initial snapshot.  Every encoding the snapshot converts, from
 *    hand-built send-format bytes: the result must walk with the codec's
 *    own value walker (rp_skip_value: structurally valid, nothing left
 *    over) and render to the JSON the stream would give for the same
 *    value.  Also the edges (infinities, the epoch shift's overflow,
 *    timetz's zone sign, NULL array elements, empty and unbounded ranges),
 *    malformed input (value-free errors), composite refused, and the
 *    binary COPY header and tuple walker.
 *    Guarantee: G6 (a snapshot row is the same bytes as a streamed one)
 *    and G3 (what does not decode stops the copy with a named reason).
 */
#include "ct_kit.h"

#include "snapshot/rp_copybin.h"
#include "rp_read.h"
#include "rp_render.h"

typedef struct Bytes
{
	unsigned char b[256];
	size_t		n;
} Bytes;

static void
b16(Bytes *x, uint16_t v)
{
	x->b[x->n++] = (unsigned char) (v >> 8);
	x->b[x->n++] = (unsigned char) v;
}

static void
b32(Bytes *x, uint32_t v)
{
	b16(x, (uint16_t) (v >> 16));
	b16(x, (uint16_t) v);
}

static void
b64(Bytes *x, uint64_t v)
{
	b32(x, (uint32_t) (v >> 32));
	b32(x, (uint32_t) v);
}

static void
bstr(Bytes *x, const char *s)
{
	memcpy(x->b + x->n, s, strlen(s));
	x->n += strlen(s);
}

/* Convert, walk and render; returns the JSON (static). */
static const char *
conv(uint8_t enc, uint8_t elem_enc, uint32_t elem_oid, const Bytes *in)
{
	static char json[1024];
	RpRecvType	t = {enc, elem_enc, elem_oid, NULL};
	RpBuf		out,
				js;
	RpReader	r;
	char		err[200];

	rp_buf_init(&out, 64);
	ck_assert_msg(rp_copybin_value(&out, &t, in->b, (uint32_t) in->n, err, sizeof(err)) == 0,
				  "conversion failed: %s", err);
	rp_reader_init(&r, (const unsigned char *) out.data, out.len);
	ck_assert(rp_skip_value(&r, enc, 0));
	ck_assert(r.ok);
	ck_assert_int_eq(rp_reader_left(&r), 0);
	rp_buf_init(&js, 64);
	rp_render_value(&js, enc, (const unsigned char *) out.data, (uint32_t) out.len);
	snprintf(json, sizeof(json), "%.*s", (int) js.len, js.data);
	rp_buf_free(&out);
	rp_buf_free(&js);
	return json;
}

static const char *
conv_err(uint8_t enc, uint8_t elem_enc, const Bytes *in)
{
	static char err[200];
	RpRecvType	t = {enc, elem_enc, 23, NULL};
	RpBuf		out;

	rp_buf_init(&out, 64);
	ck_assert_int_eq(rp_copybin_value(&out, &t, in->b, (uint32_t) in->n, err, sizeof(err)), -1);
	rp_buf_free(&out);
	return err;
}

#define CONV(enc, in, expect) ck_assert_str_eq(conv((enc), 0, 0, (in)), (expect))

START_TEST(test_fixed)
{
	Bytes		x;

	x = (Bytes)
	{
		{
			1
		}, 1
	};
	CONV(RP_ENC_BOOL, &x, "true");
	x = (Bytes)
	{
		{
			0
		}, 1
	};
	CONV(RP_ENC_BOOL, &x, "false");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b16(&x, 0x8000);
	CONV(RP_ENC_INT2, &x, "-32768");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b32(&x, 0x7fffffff);
	CONV(RP_ENC_INT4, &x, "2147483647");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b64(&x, (uint64_t) INT64_MIN);
	CONV(RP_ENC_INT8, &x, "-9223372036854775808");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b32(&x, 4294967295u);
	CONV(RP_ENC_OID, &x, "4294967295");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b32(&x, 0x3fc00000);		/* 1.5f */
	CONV(RP_ENC_FLOAT4, &x, "1.5");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b64(&x, 0xbff8000000000000ULL); /* -1.5 */
	CONV(RP_ENC_FLOAT8, &x, "-1.5");
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b64(&x, 0x7ff8000000000000ULL); /* NaN */
	CONV(RP_ENC_FLOAT8, &x, "\"NaN\"");
	x = (Bytes)
	{
		{
			0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef
		}, 16
	};
	CONV(RP_ENC_UUID, &x, "\"12345678-9abc-def0-0123-456789abcdef\"");
	/* wrong widths are refused, naming the encoding and the length only */
	x = (Bytes)
	{
		{
			0, 1, 2
		}, 3
	};
	ck_assert_str_eq(conv_err(RP_ENC_INT4, 0, &x), "binary int4 value of 3 bytes does not decode");
	x = (Bytes)
	{
		{
			1, 1
		}, 2
	};
	conv_err(RP_ENC_BOOL, 0, &x);
}

END_TEST

START_TEST(test_numeric)
{
	Bytes		x = {{0}, 0};

	/* 1.5: ndigits 2, weight 0, sign +, dscale 1, digits 1 5000 */
	b16(&x, 2);
	b16(&x, 0);
	b16(&x, 0);
	b16(&x, 1);
	b16(&x, 1);
	b16(&x, 5000);
	CONV(RP_ENC_NUMERIC, &x, "\"1.5\"");
	/* -0.001 with trailing zeros kept by dscale 4: -0.0010 */
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b16(&x, 1);
	b16(&x, (uint16_t) -1);
	b16(&x, RP_NUMERIC_NEG);
	b16(&x, 4);
	b16(&x, 10);
	CONV(RP_ENC_NUMERIC, &x, "\"-0.0010\"");
	/* NaN and the infinities: no digits, the sign word says it */
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b16(&x, 0);
	b16(&x, 0);
	b16(&x, RP_NUMERIC_NAN);
	b16(&x, 0);
	CONV(RP_ENC_NUMERIC, &x, "\"NaN\"");
	x.n = 4;
	b16(&x, RP_NUMERIC_PINF);
	b16(&x, 0);
	CONV(RP_ENC_NUMERIC, &x, "\"Infinity\"");
	x.n = 4;
	b16(&x, RP_NUMERIC_NINF);
	b16(&x, 0);
	CONV(RP_ENC_NUMERIC, &x, "\"-Infinity\"");
	/* a digit count that disagrees with the length */
	x = (Bytes)
	{
		{
			0
		}, 0
	};
	b16(&x, 3);
	b16(&x, 0);
	b16(&x, 0);
	b16(&x, 0);
	b16(&x, 1);
	conv_err(RP_ENC_NUMERIC, 0, &x);
}

END_TEST

START_TEST(test_datetime)
{
	Bytes		x = {{0}, 0};

	/* dates: 2000-01-01 is day 0 in PostgreSQL, 10957 on the wire */
	b32(&x, 0);
	CONV(RP_ENC_DATE, &x, "\"2000-01-01\"");
	x.n = 0;
	b32(&x, (uint32_t) -10957);
	CONV(RP_ENC_DATE, &x, "\"1970-01-01\"");
	x.n = 0;
	b32(&x, 0x7fffffff);
	CONV(RP_ENC_DATE, &x, "\"infinity\"");
	x.n = 0;
	b32(&x, 0x80000000u);
	CONV(RP_ENC_DATE, &x, "\"-infinity\"");

	/* timestamps: microseconds since 2000 -> since 1970 */
	x.n = 0;
	b64(&x, 0);
	CONV(RP_ENC_TIMESTAMPTZ, &x, "\"2000-01-01T00:00:00Z\"");
	x.n = 0;
	b64(&x, (uint64_t) INT64_C(-946684800000000));
	CONV(RP_ENC_TIMESTAMP, &x, "\"1970-01-01T00:00:00\"");
	x.n = 0;
	b64(&x, 1500000);			/* 1.5 s */
	CONV(RP_ENC_TIMESTAMP, &x, "\"2000-01-01T00:00:01.500000\"");
	x.n = 0;
	b64(&x, (uint64_t) INT64_MAX);
	CONV(RP_ENC_TIMESTAMPTZ, &x, "\"infinity\"");
	x.n = 0;
	b64(&x, (uint64_t) INT64_MIN);
	CONV(RP_ENC_TIMESTAMPTZ, &x, "\"-infinity\"");

	/*
	 * PostgreSQL's first and last timestamps; the last past what 1970-epoch
	 * int64 holds
	 */
	x.n = 0;
	b64(&x, (uint64_t) INT64_C(-211813488000000000));
	CONV(RP_ENC_TIMESTAMPTZ, &x, "\"-4713-11-24T00:00:00Z\"");
	x.n = 0;
	b64(&x, (uint64_t) INT64_C(9223371331199999999));
	CONV(RP_ENC_TIMESTAMPTZ, &x, "\"+294276-12-31T23:59:59.999999Z\"");
	x.n = 0;
	b64(&x, (uint64_t) INT64_C(9222425352054775807));	/* the first of the
														 * extended range */
	CONV(RP_ENC_TIMESTAMP, &x, "\"+294247-01-10T04:00:54.775807\"");
	/* what no PostgreSQL timestamp is: refused, naming no value */
	x.n = 0;
	b64(&x, (uint64_t) INT64_C(9223371331200000000));
	ck_assert(strstr(conv_err(RP_ENC_TIMESTAMP, 0, &x), "does not decode") != NULL);
	x.n = 0;
	b64(&x, (uint64_t) (INT64_MIN + 1));
	ck_assert(strstr(conv_err(RP_ENC_TIMESTAMPTZ, 0, &x), "does not decode") != NULL);
	/* dates: PostgreSQL's first and last */
	x.n = 0;
	b32(&x, (uint32_t) -2451545);
	CONV(RP_ENC_DATE, &x, "\"-4713-11-24\"");
	x.n = 0;
	b32(&x, 2145031948);
	CONV(RP_ENC_DATE, &x, "\"+5874897-12-31\"");
	x.n = 0;
	b32(&x, 2145031949);
	conv_err(RP_ENC_DATE, 0, &x);

	/* time, and timetz's zone: PostgreSQL counts seconds west, the wire east */
	x.n = 0;
	b64(&x, INT64_C(3723000001));	/* 01:02:03.000001 */
	CONV(RP_ENC_TIME, &x, "\"01:02:03.000001\"");
	x.n = 0;
	b64(&x, INT64_C(3723000000));
	b32(&x, (uint32_t) -19800); /* +05:30 */
	CONV(RP_ENC_TIMETZ, &x, "\"01:02:03+05:30\"");

	/* interval: time, days, months, in the wire's order */
	x.n = 0;
	b64(&x, INT64_C(14706789000));	/* 04:05:06.789 */
	b32(&x, 3);
	b32(&x, 14);
	ck_assert(strlen(conv(RP_ENC_INTERVAL, 0, 0, &x)) > 2);
	x.n = 15;
	conv_err(RP_ENC_INTERVAL, 0, &x);
}

END_TEST

START_TEST(test_strings)
{
	Bytes		x = {{0}, 0};

	bstr(&x, "h\xc3\xa9llo \"q\"");
	CONV(RP_ENC_STRING, &x, "\"h\xc3\xa9llo \\\"q\\\"\"");
	CONV(RP_ENC_ENUM, &x, "\"h\xc3\xa9llo \\\"q\\\"\"");
	CONV(RP_ENC_TEXT, &x, "\"h\xc3\xa9llo \\\"q\\\"\"");
	x.n = 0;
	x.b[x.n++] = 0;
	x.b[x.n++] = 0xff;
	CONV(RP_ENC_BYTEA, &x, "\"AP8=\""); /* base64 */
	x.n = 0;
	CONV(RP_ENC_STRING, &x, "\"\"");
	/* json verbatim; jsonb after its version byte */
	bstr(&x, "{\"a\" : 1}");
	CONV(RP_ENC_JSON, &x, "{\"a\" : 1}");
	x.n = 0;
	x.b[x.n++] = 1;
	bstr(&x, "{\"a\": [1, null]}");
	CONV(RP_ENC_JSONB, &x, "{\"a\": [1, null]}");
	x.b[0] = 2;
	conv_err(RP_ENC_JSONB, 0, &x);
	x.n = 0;
	conv_err(RP_ENC_JSONB, 0, &x);
}

END_TEST

START_TEST(test_arrays)
{
	Bytes		x = {{0}, 0};

	/* int4[] {1,NULL,3} */
	b32(&x, 1);
	b32(&x, 1);
	b32(&x, 23);
	b32(&x, 3);
	b32(&x, 1);
	b32(&x, 4);
	b32(&x, 1);
	b32(&x, (uint32_t) -1);
	b32(&x, 4);
	b32(&x, 3);
	ck_assert_str_eq(conv(RP_ENC_ARRAY, RP_ENC_INT4, 23, &x), "[1,null,3]");
	/* 2-D text[] with a lower bound of 0 */
	x.n = 0;
	b32(&x, 2);
	b32(&x, 0);
	b32(&x, 25);
	b32(&x, 2);
	b32(&x, 0);
	b32(&x, 1);
	b32(&x, 1);
	b32(&x, 1);
	bstr(&x, "a");
	b32(&x, 2);
	bstr(&x, "bc");
	ck_assert(strstr(conv(RP_ENC_ARRAY, RP_ENC_STRING, 25, &x), "\"bc\"") != NULL);
	/* empty */
	x.n = 0;
	b32(&x, 0);
	b32(&x, 0);
	b32(&x, 23);
	ck_assert_str_eq(conv(RP_ENC_ARRAY, RP_ENC_INT4, 23, &x), "[]");
	/* elements are converted too: date[] */
	x.n = 0;
	b32(&x, 1);
	b32(&x, 0);
	b32(&x, 1082);
	b32(&x, 1);
	b32(&x, 1);
	b32(&x, 4);
	b32(&x, 0);
	ck_assert_str_eq(conv(RP_ENC_ARRAY, RP_ENC_DATE, 1082, &x), "[\"2000-01-01\"]");
	/* an element running past the value, and a trailing byte */
	x.n -= 2;
	conv_err(RP_ENC_ARRAY, RP_ENC_DATE, &x);
	x.n += 3;
	conv_err(RP_ENC_ARRAY, RP_ENC_DATE, &x);
	/* more items than bytes: refused before anything is read */
	x.n = 0;
	b32(&x, 1);
	b32(&x, 0);
	b32(&x, 23);
	b32(&x, 1000000);
	b32(&x, 1);
	conv_err(RP_ENC_ARRAY, RP_ENC_INT4, &x);
}

END_TEST

START_TEST(test_ranges)
{
	Bytes		x = {{0}, 0};
	const char *j;

	/* [1,10) */
	x.b[x.n++] = RP_RANGE_LB_INC;
	b32(&x, 4);
	b32(&x, 1);
	b32(&x, 4);
	b32(&x, 10);
	j = conv(RP_ENC_RANGE, RP_ENC_INT4, 23, &x);
	ck_assert(strstr(j, "1") != NULL && strstr(j, "10") != NULL);
	/* empty */
	x.n = 0;
	x.b[x.n++] = RP_RANGE_EMPTY;
	ck_assert(strstr(conv(RP_ENC_RANGE, RP_ENC_INT4, 23, &x), "empty") != NULL);
	/* (,5]: no lower bound sent */
	x.n = 0;
	x.b[x.n++] = RP_RANGE_LB_INF | RP_RANGE_UB_INC;
	b32(&x, 4);
	b32(&x, 5);
	conv(RP_ENC_RANGE, RP_ENC_INT4, 23, &x);
	/* timestamptz bounds are shifted like any timestamp */
	x.n = 0;
	x.b[x.n++] = RP_RANGE_LB_INC | RP_RANGE_UB_INF;
	b32(&x, 8);
	b64(&x, 0);
	ck_assert(strstr(conv(RP_ENC_RANGE, RP_ENC_TIMESTAMPTZ, 1184, &x), "2000-01-01T00:00:00Z") != NULL);
	/* a missing bound */
	x.n = 0;
	x.b[x.n++] = RP_RANGE_LB_INC;
	b32(&x, 4);
	b32(&x, 1);
	conv_err(RP_ENC_RANGE, RP_ENC_INT4, &x);
}

END_TEST

START_TEST(test_unsupported)
{
	RpRecvType	comp = {RP_ENC_COMPOSITE, 0, 0, NULL};
	RpRecvType	arr_comp = {RP_ENC_ARRAY, RP_ENC_COMPOSITE, 0, NULL};
	RpRecvType	arr_text = {RP_ENC_ARRAY, RP_ENC_TEXT, 600, NULL};
	RpRecvType	ok = {RP_ENC_ARRAY, RP_ENC_ENUM, 16400, NULL};
	Bytes		x = {{0}, 4};

	ck_assert(!rp_copybin_supported(&comp));
	ck_assert(!rp_copybin_supported(&arr_comp));
	ck_assert(!rp_copybin_supported(&arr_text));
	ck_assert(rp_copybin_supported(&ok));
	ck_assert(strstr(conv_err(RP_ENC_COMPOSITE, 0, &x), "composite") != NULL);
}

END_TEST

/*
 * A composite with the catalog's description: (a int4, b text, c int4[],
 * d (x bool, y int8)) in record_send form, one field NULL; the wire must be
 * what the plugin's rp_encode_composite writes for the same value.
 */
START_TEST(test_composite)
{
	RpRecvField inner_f[2] = {
		{"x", 16, {RP_ENC_BOOL, 0, 0, NULL}},
		{"y", 20, {RP_ENC_INT8, 0, 0, NULL}},
	};
	RpRecvComposite inner = {2, inner_f};
	RpRecvField outer_f[4] = {
		{"a", 23, {RP_ENC_INT4, 0, 0, NULL}},
		{"b", 25, {RP_ENC_STRING, 0, 0, NULL}},
		{"c", 1007, {RP_ENC_ARRAY, RP_ENC_INT4, 23, NULL}},
		{"d", 16500, {RP_ENC_COMPOSITE, 0, 0, &inner}},
	};
	RpRecvComposite outer = {4, outer_f};
	RpRecvType	t = {RP_ENC_COMPOSITE, 0, 0, &outer};
	RpRecvField text_f[1] = {{"m", 790, {RP_ENC_TEXT, 0, 0, NULL}}};
	RpRecvComposite with_text = {1, text_f};
	RpRecvType	t_text = {RP_ENC_COMPOSITE, 0, 0, &with_text};
	Bytes		x = {{0}, 0};
	RpBuf		out,
				want,
				js;
	RpReader	r;
	char		err[200];

	ck_assert(rp_copybin_supported(&t));
	/* inside a record, a type sent as text plus OID has no text to take */
	ck_assert(!rp_copybin_supported(&t_text));

	b32(&x, 4);
	b32(&x, 23);
	b32(&x, 4);
	b32(&x, (uint32_t) -7);
	b32(&x, 25);
	b32(&x, (uint32_t) -1);		/* b NULL */
	b32(&x, 1007);
	b32(&x, 28);				/* int4[] {5}: ndim 1, no nulls, elem 23, dim
								 * 1 lb 1, one item */
	b32(&x, 1);
	b32(&x, 0);
	b32(&x, 23);
	b32(&x, 1);
	b32(&x, 1);
	b32(&x, 4);
	b32(&x, 5);
	b32(&x, 16500);
	b32(&x, 4 + 8 + 1 + 8 + 8);
	b32(&x, 2);
	b32(&x, 16);
	b32(&x, 1);
	x.b[x.n++] = 1;
	b32(&x, 20);
	b32(&x, 8);
	b64(&x, 9000000000ULL);

	rp_buf_init(&want, 64);
	rp_buf_put_u16(&want, 4);
	ct_put_field(&want, "a", 23, RP_ENC_INT4);
	rp_buf_put_u8(&want, RP_DATUM_VALUE);
	rp_buf_put_u32(&want, (uint32_t) -7);
	ct_put_field(&want, "b", 25, RP_ENC_STRING);
	rp_buf_put_u8(&want, RP_DATUM_NULL);
	ct_put_field(&want, "c", 1007, RP_ENC_ARRAY);
	rp_buf_put_u8(&want, RP_DATUM_VALUE);
	{
		int			dims[1] = {1},
					lbs[1] = {1};

		rp_enc_array_header(&want, RP_ENC_INT4, 23, 1, dims, lbs);
	}
	rp_buf_put_u8(&want, RP_DATUM_VALUE);
	rp_buf_put_u32(&want, 5);
	ct_put_field(&want, "d", 16500, RP_ENC_COMPOSITE);
	rp_buf_put_u8(&want, RP_DATUM_VALUE);
	rp_buf_put_u16(&want, 2);
	ct_put_field(&want, "x", 16, RP_ENC_BOOL);
	rp_buf_put_u8(&want, RP_DATUM_VALUE);
	rp_buf_put_u8(&want, 1);
	ct_put_field(&want, "y", 20, RP_ENC_INT8);
	rp_buf_put_u8(&want, RP_DATUM_VALUE);
	rp_buf_put_u64(&want, 9000000000ULL);

	rp_buf_init(&out, 64);
	ck_assert_msg(rp_copybin_value(&out, &t, x.b, (uint32_t) x.n, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(out.len, want.len);
	ck_assert(memcmp(out.data, want.data, want.len) == 0);
	rp_reader_init(&r, (const unsigned char *) out.data, out.len);
	ck_assert(rp_skip_value(&r, RP_ENC_COMPOSITE, 0));
	ck_assert_int_eq(rp_reader_left(&r), 0);
	rp_buf_init(&js, 64);
	rp_render_value(&js, RP_ENC_COMPOSITE, (const unsigned char *) out.data, (uint32_t) out.len);
	ck_assert(strstr(js.data, "\"a\":-7") != NULL);
	ck_assert(strstr(js.data, "\"b\":null") != NULL);
	ck_assert(strstr(js.data, "9000000000") != NULL);

	/*
	 * malformed: a wrong field count, a field type that is not the catalog's,
	 * a short field
	 */
	{
		Bytes		y = x;

		y.b[3] = 3;
		rp_buf_reset(&out);
		ck_assert_int_eq(rp_copybin_value(&out, &t, y.b, (uint32_t) y.n, err, sizeof(err)), -1);
		ck_assert(strstr(err, "composite") != NULL);
		y = x;
		y.b[7] = 24;
		rp_buf_reset(&out);
		ck_assert_int_eq(rp_copybin_value(&out, &t, y.b, (uint32_t) y.n, err, sizeof(err)), -1);
		rp_buf_reset(&out);
		ck_assert_int_eq(rp_copybin_value(&out, &t, x.b, (uint32_t) x.n - 1, err, sizeof(err)), -1);
	}
	rp_buf_free(&out);
	rp_buf_free(&want);
	rp_buf_free(&js);
}

END_TEST

START_TEST(test_copy_stream)
{
	static const unsigned char head[] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0,
	0, 0, 0, 0, 0, 0, 0, 0};
	Bytes		x = {{0}, 0};
	const unsigned char *p,
			   *end;
	const unsigned char *data[4];
	int32_t		len[4];
	int			nf;

	memcpy(x.b, head, sizeof(head));
	x.n = sizeof(head);
	ck_assert_int_eq(rp_copybin_header(x.b, x.n), 19);
	ck_assert_int_eq(rp_copybin_header(x.b, 18), -1);
	x.b[0] = 'X';
	ck_assert_int_eq(rp_copybin_header(x.b, x.n), -1);

	/* a row (int4 7, NULL, ""), then the trailer */
	x.n = 0;
	b16(&x, 3);
	b32(&x, 4);
	b32(&x, 7);
	b32(&x, (uint32_t) -1);
	b32(&x, 0);
	b16(&x, 0xffff);
	p = x.b;
	end = x.b + x.n;
	ck_assert_int_eq(rp_copybin_tuple(&p, end, 4, &nf, data, len), 1);
	ck_assert_int_eq(nf, 3);
	ck_assert_int_eq(len[0], 4);
	ck_assert_int_eq(data[0][3], 7);
	ck_assert_int_eq(len[1], -1);
	ck_assert_int_eq(len[2], 0);
	ck_assert_int_eq(rp_copybin_tuple(&p, end, 4, &nf, data, len), 0);
	ck_assert(p == end);
	/* a field running past the data */
	x.n = 0;
	b16(&x, 1);
	b32(&x, 10);
	b32(&x, 7);
	p = x.b;
	end = x.b + x.n;
	ck_assert_int_eq(rp_copybin_tuple(&p, end, 4, &nf, data, len), -1);
}

END_TEST

Suite	   *
ct_suite_copybin(void)
{
	Suite	   *s = suite_create("pgrecv");
	TCase	   *tc = tcase_create("core");

	tcase_add_test(tc, test_fixed);
	tcase_add_test(tc, test_numeric);
	tcase_add_test(tc, test_datetime);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_arrays);
	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_unsupported);
	tcase_add_test(tc, test_composite);
	tcase_add_test(tc, test_copy_stream);
	suite_add_tcase(s, tc);
	return s;
}
