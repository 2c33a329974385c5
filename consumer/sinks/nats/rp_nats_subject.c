/*
 * rp_nats_subject.c
 *    Subjects of the NATS sink: <prefix>.<schema>.<table> with every name
 *    byte outside [A-Za-z0-9_-] escaped as %XX, so that a '.', '*', '>',
 *    a space or a non-ASCII byte never splits a token or makes a wildcard,
 *    and '%' itself is escaped so the mapping is one to one.
 */
#include "rp_alloc.h"

#include "sinks/nats/rp_nats_int.h"

void
rp_nats_subject_escape(RpBuf *out, const char *name)
{
	rp_natsio_escape(out, name, '%');
}

void
rp_nats_data_subject(RpBuf *out, const char *prefix, const char *schema, const char *table)
{
	rp_buf_reset(out);
	rp_buf_put_bytes(out, prefix, strlen(prefix));
	rp_buf_put_u8(out, '.');
	rp_nats_subject_escape(out, schema);
	rp_buf_put_u8(out, '.');
	rp_nats_subject_escape(out, table);
	rp_buf_put_u8(out, '\0');
}

/* One token, so it never equals a two-token table subject. */
void
rp_nats_control_subject(RpBuf *out, const char *prefix)
{
	rp_buf_reset(out);
	rp_buf_put_bytes(out, prefix, strlen(prefix));
	rp_buf_put_bytes(out, "._control", 10);
}
