/*
 * rp_relview.h
 *    The relation view: the Relation records of the relations the sink has
 *    seen, as last durably delivered, kept in a file beside the checkpoint
 *    so a schema change is still detected after a crash.  Delivery's
 *    (rp_deliver.h): it loads the view at init, replaces a relation's
 *    record when the sink takes a new description, and rewrites the file
 *    with each durable checkpoint.
 */
#ifndef RP_RELVIEW_H
#define RP_RELVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "stream/rp_sink.h"

/* Read dl->view_path (absent: an empty view) into dl->view and dl->dec. */
extern int	rp_relview_load(RpDelivery *dl);

/* Rewrite the view from the decoder's relations (temp, fsync, rename), if it changed. */
extern int	rp_relview_save(RpDelivery *dl);

/* Replace relid's record in the view buffer with raw. */
extern void rp_relview_put(RpDelivery *dl, uint32_t relid, const unsigned char *raw, size_t len);

#endif							/* RP_RELVIEW_H */
