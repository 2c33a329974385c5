/*
 * rp_reasm_int.h
 *    The reassembler's private state, shared by its files: rp_reassemble.c
 *    (reading the frames, the verdicts) and rp_reasm_out.c (the kept rows
 *    and the report line).  Not for users: see rp_reassemble.h.
 */
#ifndef RP_REASM_INT_H
#define RP_REASM_INT_H

#include "envelope/rp_bitmap.h"
#include "base/rp_jsonread.h"
#include "envelope/rp_reassemble.h"
#include "envelope/rp_seqhash.h"

#define RP_REASM_LOC_NONE UINT64_MAX
#define RP_REASM_LOC_STUB UINT32_MAX
#define RP_REASM_MAX_FILES 65535
#define RP_REASM_FILE_SHIFT 48

typedef struct RpReasmSnap
{
	RpSnapReport rep;
	char	   *snapshot_at;	/* raw span of the first frame's snapshot_at */
	size_t		snapshot_at_len;
	RpBitmap	present;
	RpBitmap	dup;
	bool		any_dup;
	bool		identity_conflict;	/* frames disagree on store or snapshot_at */
	bool		conflict;
	bool		keep;
	/* kept rows, indexed by seq: file << 48 | offset of "record", its length */
	uint64_t   *loc_pos;
	uint32_t   *loc_len;
	size_t		loc_cap;
	RpSeqHash	hashes;			/* pass 2 */
} RpReasmSnap;

struct RpReasm
{
	RpReasmSnap **snaps;
	size_t		nsnaps;
	size_t		snaps_cap;
	/* id -> index + 1, open addressing */
	uint32_t   *index;
	size_t		index_cap;
	char		keep_id[RP_UUID_TEXT_LEN + 1];
	char	  **paths;
	int			npaths;
	uint64_t	skipped;
	bool		ran;
	RpReasmWarn warn;
	void	   *warn_arg;
	RpJrDoc		doc;
	RpBuf		scratch;
};

/* The snapshot of that id, or NULL. */
extern RpReasmSnap *rp_reasm_snap_lookup(const RpReasm *r, const char *id);

#endif							/* RP_REASM_INT_H */
