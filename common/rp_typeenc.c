/*
 * rp_typeenc.c
 *    The type -> wire encoding rule (see rp_typeenc.h).
 */
#include "rp_typeenc.h"
#include "rp_wire.h"

int
rp_typeenc_builtin(uint32_t typid)
{
	switch (typid)
	{
		case RP_OID_BOOL:
			return RP_ENC_BOOL;
		case RP_OID_INT2:
			return RP_ENC_INT2;
		case RP_OID_INT4:
			return RP_ENC_INT4;
		case RP_OID_INT8:
			return RP_ENC_INT8;
		case RP_OID_OID:
			return RP_ENC_OID;
		case RP_OID_FLOAT4:
			return RP_ENC_FLOAT4;
		case RP_OID_FLOAT8:
			return RP_ENC_FLOAT8;
		case RP_OID_NUMERIC:
			return RP_ENC_NUMERIC;
		case RP_OID_TEXT:
		case RP_OID_VARCHAR:
		case RP_OID_BPCHAR:
		case RP_OID_NAME:
			return RP_ENC_STRING;
		case RP_OID_BYTEA:
			return RP_ENC_BYTEA;
		case RP_OID_UUID:
			return RP_ENC_UUID;
		case RP_OID_DATE:
			return RP_ENC_DATE;
		case RP_OID_TIME:
			return RP_ENC_TIME;
		case RP_OID_TIMETZ:
			return RP_ENC_TIMETZ;
		case RP_OID_TIMESTAMP:
			return RP_ENC_TIMESTAMP;
		case RP_OID_TIMESTAMPTZ:
			return RP_ENC_TIMESTAMPTZ;
		case RP_OID_INTERVAL:
			return RP_ENC_INTERVAL;
		case RP_OID_JSON:
			return RP_ENC_JSON;
		case RP_OID_JSONB:
			return RP_ENC_JSONB;
	}
	return -1;
}

int
rp_typeenc_by_typtype(char typtype)
{
	switch (typtype)
	{
		case RP_TYPTYPE_ENUM:
			return RP_ENC_ENUM;
		case RP_TYPTYPE_COMPOSITE:
			return RP_ENC_COMPOSITE;
		case RP_TYPTYPE_RANGE:
			return RP_ENC_RANGE;
	}
	return -1;
}
