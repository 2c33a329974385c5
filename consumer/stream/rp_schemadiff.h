/*
 * rp_schemadiff.h
 *    How a relation's new description differs from the old one: same,
 *    new, additive (columns added) or destructive, with a value-free note
 *    of what changed.  Delivery asks before it hands a change to the sink.
 */
#ifndef RP_SCHEMADIFF_H
#define RP_SCHEMADIFF_H

#include <stddef.h>

#include "stream/rp_sink.h"

/* How a new description differs from the old (NULL before: NEW). */
extern RpSchemaChange rp_schema_diff(const RpRelation *before, const RpRelation *after,
									 char *what, size_t whatlen);

#endif							/* RP_SCHEMADIFF_H */
