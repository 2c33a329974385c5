/*
 * rp_types.c
 *    Type conversions and value encoders (see rp_types.h).
 *
 * Values leave the server pre-cast: fixed-width integers and floats, exact
 * numerics, Unix-epoch microseconds (and the extended range past 294247),
 * raw bytes, JSON text, structured arrays, composites and ranges.  None of
 * it depends on DateStyle, TimeZone, IntervalStyle, extra_float_digits,
 * bytea_output or locale; only RP_ENC_TEXT (types we do not know) goes
 * through an output function.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/bytea.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/pg_locale.h"
#include "utils/rangetypes.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "rp_encode.h"
#include "rp_time.h"
#include "rp_typeenc.h"
#include "rp_types.h"
#include "rp_wire.h"

static MemoryContext rp_types_cxt = NULL;
static HTAB *rp_types_hash = NULL;
static bool rp_types_stale = false;
static bool rp_types_callback_registered = false;

/* Invalidation only flags; the reset happens at a safe point (see below). */
static void
rp_types_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	rp_types_stale = true;
}

/* Our context died with the decoding context: forget the dangling hash. */
static void
rp_types_context_gone(void *arg)
{
	rp_types_cxt = NULL;
	rp_types_hash = NULL;
}

static void
rp_types_make_hash(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(RpTypeConv);
	ctl.hcxt = rp_types_cxt;
	rp_types_hash = hash_create("replicant type conversions", 64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

void
rp_types_init(void)
{
	MemoryContextCallback *cb;

	rp_types_cxt = AllocSetContextCreate(CurrentMemoryContext,
										 "replicant type conversions",
										 ALLOCSET_DEFAULT_SIZES);
	cb = MemoryContextAlloc(rp_types_cxt, sizeof(MemoryContextCallback));
	cb->func = rp_types_context_gone;
	cb->arg = NULL;
	MemoryContextRegisterResetCallback(rp_types_cxt, cb);
	rp_types_make_hash();
	rp_types_stale = false;
	if (!rp_types_callback_registered)
	{
		CacheRegisterSyscacheCallback(TYPEOID, rp_types_invalidate, (Datum) 0);
		rp_types_callback_registered = true;
	}
}

/*
 * Called at the start of each change, before any conversion is looked at:
 * nothing holds a pointer into the cache there, so it can be dropped.
 */
bool
rp_types_maybe_reset(void)
{
	if (!rp_types_stale || rp_types_hash == NULL)
		return false;
	hash_destroy(rp_types_hash);
	rp_types_make_hash();
	rp_types_stale = false;
	return true;
}

/*
 * The shared table names the built-in OIDs itself (the consumer has no
 * server headers): hold it to the catalog's.
 */
StaticAssertDecl(RP_OID_BOOL == BOOLOID && RP_OID_BYTEA == BYTEAOID && RP_OID_NAME == NAMEOID &&
				 RP_OID_INT8 == INT8OID && RP_OID_INT2 == INT2OID && RP_OID_INT4 == INT4OID &&
				 RP_OID_TEXT == TEXTOID && RP_OID_OID == OIDOID && RP_OID_JSON == JSONOID &&
				 RP_OID_FLOAT4 == FLOAT4OID && RP_OID_FLOAT8 == FLOAT8OID &&
				 RP_OID_BPCHAR == BPCHAROID && RP_OID_VARCHAR == VARCHAROID &&
				 RP_OID_DATE == DATEOID && RP_OID_TIME == TIMEOID &&
				 RP_OID_TIMESTAMP == TIMESTAMPOID && RP_OID_TIMESTAMPTZ == TIMESTAMPTZOID &&
				 RP_OID_INTERVAL == INTERVALOID && RP_OID_TIMETZ == TIMETZOID &&
				 RP_OID_NUMERIC == NUMERICOID && RP_OID_UUID == UUIDOID && RP_OID_JSONB == JSONBOID,
				 "rp_typeenc.h's built-in type OIDs differ from catalog/pg_type_d.h");
StaticAssertDecl(RP_OID_FIRST_NORMAL == FirstNormalObjectId,
				 "rp_typeenc.h's RP_OID_FIRST_NORMAL differs from FirstNormalObjectId");
StaticAssertDecl(RP_TYPTYPE_COMPOSITE == TYPTYPE_COMPOSITE && RP_TYPTYPE_DOMAIN == TYPTYPE_DOMAIN &&
				 RP_TYPTYPE_ENUM == TYPTYPE_ENUM && RP_TYPTYPE_RANGE == TYPTYPE_RANGE,
				 "rp_typeenc.h's typtype letters differ from catalog/pg_type_d.h");

/* The shared rule (rp_typeenc.h), on this server's catalog. */
static uint8
rp_types_pick_encoding(Oid basetypid, Oid *elemtypid)
{
	int			enc = rp_typeenc_builtin(basetypid);

	*elemtypid = InvalidOid;
	if (enc >= 0)
		return (uint8) enc;
	enc = rp_typeenc_by_typtype(get_typtype(basetypid));
	if (enc == RP_ENC_RANGE)
	{
		TypeCacheEntry *tc = lookup_type_cache(basetypid, TYPECACHE_RANGE_INFO);

		*elemtypid = tc->rngelemtype->type_id;
	}
	if (enc >= 0)
		return (uint8) enc;
	*elemtypid = get_element_type(basetypid);
	if (OidIsValid(*elemtypid))
		return RP_ENC_ARRAY;
	return RP_ENC_TEXT;
}

RpTypeConv *
rp_types_get(Oid typid)
{
	RpTypeConv *conv;
	bool		found;
	Oid			elemtypid;
	MemoryContext old;

	conv = hash_search(rp_types_hash, &typid, HASH_ENTER, &found);
	if (found)
		return conv;

	/* fill in fully before recursing: the entry stays where it is */
	conv->basetypid = getBaseType(typid);
	get_typlenbyvalalign(conv->basetypid, &conv->typlen, &conv->typbyval, &conv->typalign);
	conv->encoding = rp_types_pick_encoding(conv->basetypid, &elemtypid);
	conv->has_outfunc = false;
	conv->elem = NULL;
	if (conv->encoding == RP_ENC_TEXT)
	{
		Oid			outfunc;
		bool		isvarlena;

		getTypeOutputInfo(conv->basetypid, &outfunc, &isvarlena);
		old = MemoryContextSwitchTo(rp_types_cxt);
		fmgr_info_cxt(outfunc, &conv->outfunc, rp_types_cxt);
		MemoryContextSwitchTo(old);
		conv->has_outfunc = true;
	}
	if (OidIsValid(elemtypid))
	{
		RpTypeConv *elem = rp_types_get(elemtypid);

		/* the recursive insert may not move us, but look again to be sure */
		conv = hash_search(rp_types_hash, &typid, HASH_FIND, NULL);
		conv->elem = elem;
	}
	return conv;
}

char	   *
rp_types_sql_name(Oid typid, int32 typmod)
{
	return format_type_extended(typid, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

static void
rp_encode_str(RpBuf *buf, struct varlena *v)
{
	rp_buf_put_str(buf, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
}

static void
rp_encode_array(RpBuf *buf, const RpTypeConv *conv, Datum value)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	const RpTypeConv *elem = conv->elem;
	int			ndim = ARR_NDIM(arr);
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	rp_enc_array_header(buf, elem->encoding, elem->typid, ndim, ARR_DIMS(arr), ARR_LBOUND(arr));
	if (ndim == 0)
		return;
	deconstruct_array(arr, ARR_ELEMTYPE(arr), elem->typlen, elem->typbyval, elem->typalign,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls && nulls[i])
			rp_buf_put_u8(buf, RP_DATUM_NULL);
		else
		{
			rp_buf_put_u8(buf, RP_DATUM_VALUE);
			rp_types_encode(buf, elem, elems[i]);
		}
	}
}

static void
rp_encode_composite(RpBuf *buf, Datum value)
{
	/*
	 * Not DatumGetHeapTupleHeader: the minor releases of November 2026 made
	 * it an exported function, so a plugin built on their headers would not
	 * load into an older server of the same major version. This is what it
	 * does.
	 */
	HeapTupleHeader td = (HeapTupleHeader) PG_DETOAST_DATUM(value);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(td),
											  HeapTupleHeaderGetTypMod(td));
	HeapTupleData tmp;
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	uint16		live = 0;

	tmp.t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&tmp.t_self);
	tmp.t_tableOid = InvalidOid;
	tmp.t_data = td;
	heap_deform_tuple(&tmp, desc, values, nulls);

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			live++;
	rp_buf_put_u16(buf, live);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		RpTypeConv *fconv;

		if (att->attisdropped)
			continue;
		fconv = rp_types_get(att->atttypid);
		rp_buf_put_cstr(buf, NameStr(att->attname));
		rp_buf_put_u32(buf, att->atttypid);
		rp_buf_put_u8(buf, fconv->encoding);
		if (nulls[i])
			rp_buf_put_u8(buf, RP_DATUM_NULL);
		else
		{
			rp_buf_put_u8(buf, RP_DATUM_VALUE);
			rp_types_encode(buf, fconv, values[i]);
		}
	}
	ReleaseTupleDesc(desc);
}

static void
rp_encode_range(RpBuf *buf, const RpTypeConv *conv, Datum value)
{
	RangeType  *r = DatumGetRangeTypeP(value);
	TypeCacheEntry *tc = lookup_type_cache(RangeTypeGetOid(r), TYPECACHE_RANGE_INFO);
	RangeBound	lower,
				upper;
	bool		empty;
	uint8		flags = 0;

	range_deserialize(tc, r, &lower, &upper, &empty);
	if (empty)
		flags |= RP_RANGE_EMPTY;
	else
	{
		if (lower.inclusive)
			flags |= RP_RANGE_LB_INC;
		if (upper.inclusive)
			flags |= RP_RANGE_UB_INC;
		if (lower.infinite)
			flags |= RP_RANGE_LB_INF;
		if (upper.infinite)
			flags |= RP_RANGE_UB_INF;
	}
	rp_buf_put_u8(buf, flags);
	rp_buf_put_u32(buf, conv->elem->typid);
	rp_buf_put_u8(buf, conv->elem->encoding);
	if (empty)
		return;
	if (!lower.infinite)
		rp_types_encode(buf, conv->elem, lower.val);
	if (!upper.infinite)
		rp_types_encode(buf, conv->elem, upper.val);
}

static void
rp_encode_numeric(RpBuf *buf, Datum value)
{
	/* PostgreSQL's own binary form is exact and spells out NaN and infinities */
	bytea	   *b = DatumGetByteaPP(DirectFunctionCall1(numeric_send, value));

	rp_encode_str(buf, (struct varlena *) b);
}

/*
 * Protocol version 1 has no room for the timestamps after 294247-01-10
 * 04:00:54.775806; version 2 and the JSON format send them in the extended
 * range (see rp_wire.h).  A version 1 session refuses such a value, naming
 * where it is (the caller's RpEncodeWhere), never what it is (G4).
 */
static bool rp_types_extended_ts = false;
RpEncodeWhere *rp_types_where = NULL;

void
rp_types_set_protocol(int proto_version, bool json)
{
	rp_types_extended_ts = json || proto_version >= RP_PROTO_VERSION_EXT_TS;
	rp_types_where = NULL;
}

static void
rp_refuse_timestamp(const RpTypeConv *conv)
{
	const RpEncodeWhere *w = rp_types_where;

	if (w && w->rel && w->attnum > 0)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(w->rel), w->attnum - 1);

		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("replicant: column \"%s\" of relation \"%s.%s\" (type %s) holds a timestamp after 294247-01-10 04:00:54.775806, which wire protocol version 1 cannot carry",
						NameStr(att->attname),
						get_namespace_name(RelationGetNamespace(w->rel)),
						RelationGetRelationName(w->rel),
						format_type_with_typemod(att->atttypid, att->atttypmod)),
				 errhint("Request proto_version 2, which carries every timestamp.")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("replicant: a value of type %s holds a timestamp after 294247-01-10 04:00:54.775806, which wire protocol version 1 cannot carry",
					format_type_be(conv->typid)),
			 errhint("Request proto_version 2, which carries every timestamp.")));
}

static int64
rp_wire_timestamp(const RpTypeConv *conv, int64 pg_usecs)
{
	int64		w;

	if (likely(rp_ts_from_pg(pg_usecs, rp_types_extended_ts, &w)))
		return w;
	if (pg_usecs >= RP_TS_EXT_FIRST_PG && pg_usecs < RP_PG_TS_END)
		rp_refuse_timestamp(conv);
	/* not reached: PostgreSQL keeps its timestamps within range */
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("replicant: a value of type %s is out of the timestamp range",
					format_type_be(conv->typid))));
	return 0;
}

/*
 * RP_ENC_TEXT: the type's output function, which may read DateStyle,
 * IntervalStyle, TimeZone, extra_float_digits, bytea_output or lc_monetary
 * (multiranges, geometric types, money, extension types).  Those are pinned
 * to fixed values while it runs, as postgres_fdw does, so the text does not
 * depend on the session (G6).  Nothing is set when the session already
 * matches; the nest level undoes it all, also on error.
 */
static void
rp_pin_guc(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

static char *
rp_text_output(const RpTypeConv *conv, Datum value)
{
	bool		tz = strcmp(pg_get_timezone_name(session_timezone), "UTC") != 0;
	bool		ds = DateStyle != USE_ISO_DATES || DateOrder != DATEORDER_MDY;
	bool		is = IntervalStyle != INTSTYLE_POSTGRES;
	bool		fd = extra_float_digits <= 0;	/* > 0: shortest exact, all
												 * alike */
	bool		bo = bytea_output != BYTEA_OUTPUT_HEX;
	bool		lm = strcmp(locale_monetary, "C") != 0;
	int			nest = -1;
	char	   *s;

	if (tz || ds || is || fd || bo || lm)
	{
		nest = NewGUCNestLevel();
		if (tz)
			rp_pin_guc("timezone", "UTC");
		if (ds)
			rp_pin_guc("datestyle", "ISO, MDY");
		if (is)
			rp_pin_guc("intervalstyle", "postgres");
		if (fd)
			rp_pin_guc("extra_float_digits", "1");
		if (bo)
			rp_pin_guc("bytea_output", "hex");
		if (lm)
			rp_pin_guc("lc_monetary", "C");
	}
	s = OutputFunctionCall((FmgrInfo *) &conv->outfunc, value);
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	return s;
}

void
rp_types_encode(RpBuf *buf, const RpTypeConv *conv, Datum value)
{
	switch (conv->encoding)
	{
		case RP_ENC_BOOL:
			rp_buf_put_u8(buf, DatumGetBool(value) ? 1 : 0);
			break;
		case RP_ENC_INT2:
			rp_buf_put_u16(buf, (uint16) DatumGetInt16(value));
			break;
		case RP_ENC_INT4:
			rp_buf_put_u32(buf, (uint32) DatumGetInt32(value));
			break;
		case RP_ENC_INT8:
			rp_buf_put_u64(buf, (uint64) DatumGetInt64(value));
			break;
		case RP_ENC_OID:
			rp_buf_put_u32(buf, DatumGetObjectId(value));
			break;
		case RP_ENC_FLOAT4:
			{
				union
				{
					float4		f;
					uint32		u;
				}			v;

				v.f = DatumGetFloat4(value);
				rp_buf_put_u32(buf, v.u);
				break;
			}
		case RP_ENC_FLOAT8:
			{
				union
				{
					float8		f;
					uint64		u;
				}			v;

				v.f = DatumGetFloat8(value);
				rp_buf_put_u64(buf, v.u);
				break;
			}
		case RP_ENC_NUMERIC:
			rp_encode_numeric(buf, value);
			break;
		case RP_ENC_STRING:
			if (conv->basetypid == NAMEOID)
				rp_buf_put_cstr(buf, NameStr(*DatumGetName(value)));
			else
				rp_encode_str(buf, (struct varlena *) DatumGetTextPP(value));
			break;
		case RP_ENC_BYTEA:
		case RP_ENC_JSON:
			rp_encode_str(buf, (struct varlena *) DatumGetByteaPP(value));
			break;
		case RP_ENC_UUID:
			rp_buf_put_bytes(buf, DatumGetUUIDP(value)->data, UUID_LEN);
			break;
		case RP_ENC_DATE:
			{
				DateADT		d = DatumGetDateADT(value);

				if (DATE_IS_NOBEGIN(d))
					rp_buf_put_u32(buf, (uint32) RP_DATE_NEG_INF);
				else if (DATE_IS_NOEND(d))
					rp_buf_put_u32(buf, (uint32) RP_DATE_POS_INF);
				else
					rp_buf_put_u32(buf, (uint32) (d + RP_PG_EPOCH_DAYS));
				break;
			}
		case RP_ENC_TIME:
			rp_buf_put_u64(buf, (uint64) DatumGetTimeADT(value));
			break;
		case RP_ENC_TIMETZ:
			{
				TimeTzADT  *t = DatumGetTimeTzADTP(value);

				rp_buf_put_u64(buf, (uint64) t->time);
				/* PostgreSQL keeps seconds west of UTC; the wire says east */
				rp_buf_put_u32(buf, (uint32) (-t->zone));
				break;
			}
		case RP_ENC_TIMESTAMP:
		case RP_ENC_TIMESTAMPTZ:
			rp_buf_put_u64(buf, (uint64) rp_wire_timestamp(conv, DatumGetInt64(value)));
			break;
		case RP_ENC_INTERVAL:
			{
				Interval   *iv = DatumGetIntervalP(value);

				rp_buf_put_u64(buf, (uint64) iv->time);
				rp_buf_put_u32(buf, (uint32) iv->day);
				rp_buf_put_u32(buf, (uint32) iv->month);
				break;
			}
		case RP_ENC_JSONB:
			{
				Jsonb	   *jb = DatumGetJsonbP(value);
				char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

				rp_buf_put_cstr(buf, s);
				break;
			}
		case RP_ENC_ENUM:
			{
				HeapTuple	tup = SearchSysCache1(ENUMOID, value);

				if (!HeapTupleIsValid(tup))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
							 errmsg("invalid internal value for enum type %u", conv->basetypid)));
				rp_buf_put_cstr(buf, NameStr(((Form_pg_enum) GETSTRUCT(tup))->enumlabel));
				ReleaseSysCache(tup);
				break;
			}
		case RP_ENC_ARRAY:
			rp_encode_array(buf, conv, value);
			break;
		case RP_ENC_COMPOSITE:
			rp_encode_composite(buf, value);
			break;
		case RP_ENC_RANGE:
			rp_encode_range(buf, conv, value);
			break;
		default:
			rp_buf_put_cstr(buf, rp_text_output(conv, value));
			break;
	}
}
