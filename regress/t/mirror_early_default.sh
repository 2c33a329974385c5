#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_early_default.sh: by default the mirror streams a mid-sized transaction and
# applies it early (issue 13).
#
# The mirror lowers logical_decoding_work_mem for its own walsender session, so that a large
# transaction streams in blocks the destination applies while the server still decodes the rest
# (docs/sinks.md, "Early apply"). bench/mirror.sh measured the catch-up faster with 4MB than with
# the 16MB the default was before: the delete pass of its 1M backlog (about 15 MB in the reorder
# buffer) was sent whole at its commit, and the destination sat idle while the walsender decoded
# it. The source here keeps the server's 64MB default. Two slots hold the same backlog: a table
# made known by a first small transaction, then one transaction of 60,000 inserts (about 11 MB in
# the reorder buffer) and one deleting 45,000 of those rows (about 7 MB): both above 4MB, below 16MB.
#   --decoding-work-mem server   nothing is streamed: no early apply (the contrast: the server's
#                                setting, which the consumer must leave alone, is 64MB)
#   default options              the session says 4096kB, both large transactions are applied
#                                early, block by block
# Each run goes to the end position, and the destination must equal the source after each.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-mirror-early-default.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_early_default "$work/*.err" 10 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
[[ $(rp_psql src -Atc "SHOW logical_decoding_work_mem") == 64MB ]] ||
	fail "the source's logical_decoding_work_mem is not the server default 64MB"

rp_psql src -c "CREATE TABLE mid_t (id bigint PRIMARY KEY, v text NOT NULL)" >/dev/null
replicant -d "$src_CONNSTR" -S early_server --create-slot 2>"$work/slot.err"
replicant -d "$src_CONNSTR" -S early_default --create-slot 2>>"$work/slot.err"
rp_psql src >/dev/null <<-'SQL'
	INSERT INTO mid_t VALUES (0, 'known');
	INSERT INTO mid_t SELECT g, md5(g::text) FROM generate_series(1, 60000) g;
	DELETE FROM mid_t WHERE id % 4 <> 0;
SQL
end=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")

# run SLOT NAME [OPTION...]: catch SLOT up to the end into the destination, -v to NAME.err;
# sets EARLY (transactions applied early) and BLOCKS
run() {
	local slot=$1 name=$2
	shift 2
	replicant -d "$src_CONNSTR" -S "$slot" -n --start -E "$end" --sink "postgres:$dst_CONNSTR" \
		--create-tables --state-dir "$work/state-$name" -v "$@" 2>"$work/$name.err" ||
		fail "the $name run exited with status $?"
	rp_compare_tables src dst mid_t || fail "the $name run left mid_t different from the source"
	local sum
	sum=$(grep 'streamed transactions applied early' "$work/$name.err") ||
		fail "the $name run printed no -v summary"
	EARLY=$(sed -n 's/.*; \([0-9]*\) streamed transactions applied early (\([0-9]*\) blocks.*/\1/p' <<<"$sum")
	BLOCKS=$(sed -n 's/.*; \([0-9]*\) streamed transactions applied early (\([0-9]*\) blocks.*/\2/p' <<<"$sum")
	[[ -n $EARLY && -n $BLOCKS ]] || fail "the $name run's summary does not parse: $sum"
	rp_psql dst -c "DROP TABLE public.mid_t; DROP SCHEMA replicant CASCADE" >/dev/null
}

run early_server server --decoding-work-mem server
grep -q 'logical_decoding_work_mem of this session' "$work/server.err" &&
	fail "with --decoding-work-mem server the consumer still set the session's logical_decoding_work_mem"
((EARLY == 0 && BLOCKS == 0)) ||
	fail "with the server's 64MB, $EARLY transactions ($BLOCKS blocks) were applied early: the workload is too large to tell the defaults apart"

run early_default default
grep -q 'logical_decoding_work_mem of this session: 4096kB$' "$work/default.err" ||
	fail "the default run did not set the session's logical_decoding_work_mem to 4096kB: $(grep -m1 'logical_decoding_work_mem' "$work/default.err" || echo 'no such line')"
((EARLY == 2 && BLOCKS >= 2)) ||
	fail "by default $EARLY transactions ($BLOCKS blocks) were applied early, want the insert and the delete"

status=0
printf 'PASS mirror_early_default: a mid-sized transaction streams and is applied early by default (%d blocks), not with the server'"'"'s 64MB; the destination equals the source after each (%ss)\n' \
	"$BLOCKS" $((SECONDS - started))
