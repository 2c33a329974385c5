#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/checkpoint_safety.sh: a checkpoint is checked before it is trusted, and a damaged
# file log is not "repaired".
#
# Proves G3 (fail-closed) and G2 (ack discipline) for checkpoints read back from a sink
# (issue 11). Each case exits with status 3 naming the reason, the slot's confirmed_flush_lsn
# does not move, and the checkpoint's home is left as it was:
#   1. The library-owned checkpoint file (stdout sink) edited to commit=FFFF/0 end=FFFF/0,
#      far past the server's WAL: halts naming both positions (before, the run confirmed
#      the slot at FFFF/0, and every change after that point was skipped for good).
#   2. The file sink's last checkpoint line so edited (still a well-formed line).
#   3. The mirror's replicant.checkpoint row so edited.
#   4. One byte changed inside the file log's last checkpoint line (not a torn tail: the
#      rows before it were acknowledged): halts naming the damage, the log byte-identical
#      (before, recovery cut the log from 22 lines to 11, then halted with gap).
# Then each slot still streams from where it was once its checkpoint is put back: nothing
# was lost.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-ckpt-safety.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail checkpoint_safety "" 0 "$*"; }

runs=0
# consumer EXPECTED_STATUS ARG...: stderr in $err. -E bounds a run that would trust the
# checkpoint (it then ends at the endpos instead of streaming on); timeout only guards
# against a hang.
consumer() {
	local expect=$1 rc=0
	shift
	runs=$((runs + 1))
	err=$work/run-$runs.err
	timeout 120 replicant -d "$src_CONNSTR" --start -n "$@" 2>"$err" >>"$work/stdout.jsonl" || rc=$?
	if ((rc != expect)); then
		cat "$err"
		fail "run $runs (replicant $*) exited with $rc, expected $expect"
	fi
}
err_has() {
	grep -qF -- "$1" "$err" || { cat "$err"; fail "run $runs: stderr does not say: $1"; }
}
lsn() { rp_psql src -Atc "SELECT pg_current_wal_lsn()"; }
slot_flush() { rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$1'"; }
changes() { rp_psql src -c "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, $1) g" >/dev/null; }
# one transaction per row: a unit (and a checkpoint line) each with --batch-txns 1
txns() { for _ in $(seq "$1"); do rp_psql src -c "INSERT INTO t VALUES (1, 'x')" >/dev/null; done; }
unchanged() { [[ $(slot_flush "$1") == "$2" ]] || fail "$3: slot $1 moved from $2 to $(slot_flush "$1")"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
rp_psql src -c "CREATE TABLE t (id int, v text)" -c "ALTER TABLE t REPLICA IDENTITY FULL"
for slot in s f m; do replicant -d "$src_CONNSTR" -S "$slot" --create-slot; done

# ---- a checkpoint in each home, then more changes for the slots to hold
changes 10
end=$(lsn)
consumer 0 -S s --sink stdout --state-dir "$work/state-s" -E "$end"
consumer 0 -S f --sink "file:$work/f.jsonl" --state-dir "$work/state-f" -E "$end"
consumer 0 -S m --sink "postgres:$dst_CONNSTR" --create-tables --state-dir "$work/state-m" -E "$end"
changes 10
server_end=$(lsn)
end=$server_end

# ---- 1. the checkpoint file ahead of the server
ck=$work/state-s/s.checkpoint
good=$(cat "$ck")
flush=$(slot_flush s)
sed -i -E 's|commit=[0-9A-F/]+ end=[0-9A-F/]+|commit=FFFF/0 end=FFFF/0|' "$ck"
grep -q 'end=FFFF/0' "$ck" || fail "the checkpoint file was not edited: $(cat "$ck")"
edited=$(cat "$ck")
consumer 3 -S s --sink stdout --state-dir "$work/state-s" -E "$end"
err_has "is ahead of the server's WAL flush position"
err_has "FFFF/0"
err_has 'halted (identity)'
unchanged s "$flush" "checkpoint file ahead"
[[ $(cat "$ck") == "$edited" ]] || fail "the halt rewrote the checkpoint file"
# the position named is the server's, at or past what it had before the run
named=$(grep -o 'flush position [0-9A-F]*/[0-9A-F]*' "$err" | awk '{print $3}')
[[ $(rp_psql src -Atc "SELECT '$named'::pg_lsn >= '$server_end'::pg_lsn AND '$named'::pg_lsn < 'FFFF/0'::pg_lsn") == t ]] ||
	fail "the halt names $named as the server's position (its WAL was at $server_end)"
printf '%s\n' "$good" >"$ck"

# ---- 2. the file log's last checkpoint line ahead of the server
log=$work/f.jsonl
flush=$(slot_flush f)
sed -i -E '$ s|"commit_lsn":"[0-9A-F/]+","end_lsn":"[0-9A-F/]+"|"commit_lsn":"FFFF/0","end_lsn":"FFFF/0"|' "$log"
tail -n 1 "$log" | grep -q '"end_lsn":"FFFF/0"' || fail "the log's checkpoint line was not edited"
sum=$(md5sum <"$log")
consumer 3 -S f --sink "file:$log" --state-dir "$work/state-f" -E "$end"
err_has "is ahead of the server's WAL flush position"
err_has 'halted (identity)'
unchanged f "$flush" "log checkpoint ahead"
[[ $(md5sum <"$log") == "$sum" ]] || fail "the halt changed the file log"

# ---- 3. the mirror's checkpoint row ahead of the server
row() { rp_psql dst -Atc "SELECT commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = 'm'"; }
good_row=$(row)
[[ -n $good_row ]] || fail "the mirror holds no checkpoint row for slot m"
flush=$(slot_flush m)
rp_psql dst -c "UPDATE replicant.checkpoint SET commit_lsn = 'FFFF/0', end_lsn = 'FFFF/0' WHERE slot = 'm'" >/dev/null
rows_before=$(rp_psql dst -Atc "SELECT count(*) FROM public.t")
consumer 3 -S m --sink "postgres:$dst_CONNSTR" --create-tables --state-dir "$work/state-m" -E "$end"
err_has "is ahead of the server's WAL flush position"
err_has 'halted (identity)'
unchanged m "$flush" "mirror checkpoint row ahead"
[[ $(row) == "FFFF/0|FFFF/0" ]] || fail "the halt changed the checkpoint row: $(row)"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM public.t") == "$rows_before" ]] || fail "the halt applied changes"

# ---- 4. one byte changed inside the file log's last checkpoint line
dlog=$work/d.jsonl
replicant -d "$src_CONNSTR" -S d --create-slot
txns 11
end=$(lsn)
consumer 0 -S d --sink "file:$dlog" --state-dir "$work/state-d" --batch-txns 1 -E "$end"
[[ $(grep -c '"table":"t"' "$dlog") == 11 ]] || fail "the log holds $(grep -c '"table":"t"' "$dlog") rows, not 11"
lines=$(wc -l <"$dlog")
tail -n 1 "$dlog" | grep -q '^{"kind":"checkpoint",' || fail "the log does not end with a checkpoint line"
flush=$(slot_flush d)
# "timeline" -> "timelinE": the line is no checkpoint line any more, and not a torn write
sed -i '$ s/"timeline"/"timelinE"/' "$dlog"
sum=$(md5sum <"$dlog")
txns 2
end=$(lsn)
consumer 3 -S d --sink "file:$dlog" --state-dir "$work/state-d" --batch-txns 1 -E "$end"
err_has "is damaged: a damaged checkpoint line"
[[ $(md5sum <"$dlog") == "$sum" ]] || fail "recovery changed the damaged log (now $(wc -l <"$dlog") lines, was $lines)"
unchanged d "$flush" "damaged checkpoint line"

# ---- each checkpoint put back: streaming resumes where it was, nothing lost or repeated
sed -i '$ s/"timelinE"/"timeline"/' "$dlog"
consumer 0 -S d --sink "file:$dlog" --state-dir "$work/state-d" --batch-txns 1 -E "$end"
[[ $(grep -c '"table":"t"' "$dlog") == 13 ]] || fail "after the repair the log holds $(grep -c '"table":"t"' "$dlog") rows, not 13"
consumer 0 -S s --sink stdout --state-dir "$work/state-s" -E "$end"
rp_psql dst -c "UPDATE replicant.checkpoint SET (commit_lsn, end_lsn) = ('${good_row%|*}', '${good_row#*|}') WHERE slot = 'm'" >/dev/null
consumer 0 -S m --sink "postgres:$dst_CONNSTR" --create-tables --state-dir "$work/state-m" -E "$end"
rp_compare_tables src dst t

status=0
printf 'PASS checkpoint_safety: a checkpoint file, log line and mirror row ahead of the server halt (3) without moving the slot; a damaged last checkpoint line halts with the log byte-identical (G2, G3) (%ds)\n' \
	"$((SECONDS - started))"
