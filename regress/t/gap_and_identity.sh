#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/gap_and_identity.sh: checkpoints of another source, and slots that cannot resume.
#
# Proves G3 (fail-closed) for the resume checks: each case exits with status 3, a message
# naming the reason ("halted (identity)" or "halted (gap)"), the sink's log unchanged and
# the slot not acknowledged any further.
#   1. Identity: a state dir (library-owned checkpoint, stdout sink) and a file sink's log
#      (sink-owned checkpoint) made against cluster A, used against cluster B with a slot of
#      the same name -> halt naming both system ids. Also: the checkpoint's timeline is not
#      the source's (an edited checkpoint file), and a log used with another slot name.
#   2. Gap: the slot advanced past the checkpoint (pg_replication_slot_advance) -> halt
#      naming the slot's position and the checkpoint.
#   3. Gap: the slot invalidated (max_slot_wal_keep_size exceeded, wal_status lost).
#   4. Gap: the slot dropped -> "does not exist".
#   5. No false identity halt: a consumer without a checkpoint, started while its source is
#      down, retries, binds its first checkpoint once the source is up and streams; two
#      crashes of the source later it is still streaming, each time retrying after 1 s
#      (the backoff starts over after a connection that streamed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-gap.XXXXXX)
status=1
pid=
cleanup() { rp_e2e_cleanup $? pid; }
trap cleanup EXIT
fail() { rp_e2e_fail gap_and_identity '' 0 "$*"; }

runs=0
# consumer CLUSTER EXPECTED_STATUS ARG...: stderr in $err
consumer() {
	local conn=$1 expect=$2 rc=0
	shift 2
	runs=$((runs + 1))
	err=$work/run-$runs.err
	replicant -d "$conn" --start -n "$@" 2>"$err" >>"$work/stdout.jsonl" || rc=$?
	if ((rc != expect)); then
		cat "$err"
		fail "run $runs (replicant $*) exited with $rc, expected $expect"
	fi
}
err_has() {
	grep -qF -- "$1" "$err" || { cat "$err"; fail "run $runs: stderr does not say: $1"; }
}
lsn() { rp_psql "$1" -Atc "SELECT pg_current_wal_lsn()"; }
sysid() { rp_psql "$1" -Atc "SELECT system_identifier FROM pg_control_system()"; }
slot_flush() { rp_psql "$1" -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$2'"; }
changes() { rp_psql "$1" -c "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, $2) g"; }
setup() {
	rp_psql "$1" -c "CREATE TABLE t (id int, v text)"
	replicant -d "$(rp_conninfo "$1")" -S s --create-slot
	replicant -d "$(rp_conninfo "$1")" -S f --create-slot
}

started=$SECONDS
rp_cluster_start A "max_slot_wal_keep_size = '1MB'"
rp_cluster_start B
setup A
setup B
A_ID=$(sysid A)
B_ID=$(sysid B)
[[ $A_ID != "$B_ID" ]] || fail "the two clusters have the same system id"

# ---- checkpoints made against A: slot s with the stdout sink, slot f with the file sink
changes A 10
end=$(lsn A)
consumer "$A_CONNSTR" 0 -S s --sink stdout --state-dir "$work/state-A" -E "$end"
consumer "$A_CONNSTR" 0 -S f --sink "file:$work/A.jsonl" --state-dir "$work/state-A" -E "$end"
[[ -s $work/state-A/s.checkpoint ]] || fail "no checkpoint file for slot s"
grep -q "sysid=$A_ID " "$work/state-A/s.checkpoint" || fail "the checkpoint file does not name system $A_ID"
grep -q "\"system_id\":\"$A_ID\"" "$work/A.jsonl" || fail "the file log's checkpoint does not name system $A_ID"

# ---- 1. identity: A's checkpoints against B
changes B 10
cp -r "$work/state-A" "$work/state-B"
cp "$work/A.jsonl" "$work/B.jsonl"
sum_B=$(md5sum <"$work/B.jsonl")
flush_s=$(slot_flush B s)
flush_f=$(slot_flush B f)
consumer "$B_CONNSTR" 3 -S s --sink stdout --state-dir "$work/state-B"
err_has "checkpoint belongs to system $A_ID, but the source is system $B_ID"
err_has 'halted (identity)'
consumer "$B_CONNSTR" 3 -S f --sink "file:$work/B.jsonl" --state-dir "$work/state-B"
err_has "checkpoint belongs to system $A_ID, but the source is system $B_ID"
err_has 'halted (identity)'
[[ $(md5sum <"$work/B.jsonl") == "$sum_B" ]] || fail "the identity halt changed the file log"
cmp -s "$work/state-A/s.checkpoint" "$work/state-B/s.checkpoint" || fail "the identity halt rewrote the checkpoint"
[[ $(slot_flush B s) == "$flush_s" && $(slot_flush B f) == "$flush_f" ]] || fail "B's slots moved"
# another timeline (the checkpoint edited: tli=1 -> tli=2)
sed -i 's/ tli=1 / tli=2 /' "$work/state-B/s.checkpoint"
consumer "$A_CONNSTR" 3 -S s --sink stdout --state-dir "$work/state-B"
err_has "checkpoint was taken on timeline 2, but the source is on timeline 1"
# another slot: A's log resumed with slot s
cp "$work/A.jsonl" "$work/A-other.jsonl"
consumer "$A_CONNSTR" 3 -S s --sink "file:$work/A-other.jsonl" --state-dir "$work/state-other"
err_has 'checkpoint belongs to slot "f", not "s"'
cmp -s "$work/A.jsonl" "$work/A-other.jsonl" || fail "the slot mismatch changed the file log"

# ---- 2. gap: slot f advanced past the log's checkpoint
changes A 10
ck=$(grep '"kind":"checkpoint"' "$work/A.jsonl" | tail -n 1 | sed 's/.*"end_lsn":"\([0-9A-F/]*\)".*/\1/')
adv=$(lsn A)
rp_psql A -c "SELECT pg_replication_slot_advance('f', '$adv')" >/dev/null
adv=$(slot_flush A f)
sum_A=$(md5sum <"$work/A.jsonl")
consumer "$A_CONNSTR" 3 -S f --sink "file:$work/A.jsonl" --state-dir "$work/state-A"
err_has "replication slot \"f\" is at $adv, past the checkpoint $ck"
err_has 'halted (gap)'
[[ $(md5sum <"$work/A.jsonl") == "$sum_A" ]] || fail "the gap halt changed the file log"
# and again: a halt is not a one-off
consumer "$A_CONNSTR" 3 -S f --sink "file:$work/A.jsonl" --state-dir "$work/state-A"
err_has "past the checkpoint $ck"

# ---- 3. gap: slot s invalidated (more WAL than max_slot_wal_keep_size, then a checkpoint)
ck_before=$(cat "$work/state-A/s.checkpoint")
for _ in 1 2 3 4; do
	changes A 1000
	rp_psql A -c "SELECT pg_switch_wal()" >/dev/null
done
rp_psql A -c "CHECKPOINT"
wal_status=$(rp_psql A -Atc "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 's'")
if [[ $wal_status == lost ]]; then
	consumer "$A_CONNSTR" 3 -S s --sink stdout --state-dir "$work/state-A"
	err_has 'replication slot "s" has been invalidated (wal_status lost)'
	err_has 'halted (gap)'
	[[ $(cat "$work/state-A/s.checkpoint") == "$ck_before" ]] || fail "the invalidation halt moved the checkpoint"
	invalidated=checked
else
	printf 'note: slot s is "%s", not lost, after 4 WAL switches and a checkpoint: invalidation not checked\n' "$wal_status"
	invalidated="not checked"
fi

# ---- 4. gap: the slot is gone
rp_psql A -c "SELECT pg_drop_replication_slot('f')" >/dev/null
consumer "$A_CONNSTR" 3 -S f --sink "file:$work/A.jsonl" --state-dir "$work/state-A"
err_has 'replication slot "f" does not exist'
err_has 'halted (gap)'
[[ $(md5sum <"$work/A.jsonl") == "$sum_A" ]] || fail "the missing-slot halt changed the file log"

# ---- 5. started while the source is down: retries, then binds to the source it finds
rp_psql B -c "SELECT pg_create_logical_replication_slot('late', 'replicant')" >/dev/null
"$RP_BINDIR/pg_ctl" -D "$B_DATA" -m immediate -w stop >/dev/null
replicant -d "$B_CONNSTR" -S late --start -s 1 --sink "file:$work/late.jsonl" --state-dir "$work/state-late" \
	2>"$work/late.err" &
pid=$!
# the source starts once the consumer found it down (and said it retries), however long that took
deadline=$((SECONDS + 120))
until grep -q 'reconnecting in' "$work/late.err" 2>/dev/null; do
	kill -0 "$pid" 2>/dev/null || { cat "$work/late.err"; fail "the consumer started before its source exited"; }
	((SECONDS < deadline)) || { cat "$work/late.err"; fail "the consumer did not report a retry while its source was down"; }
	sleep 0.05
done
"$RP_BINDIR/pg_ctl" -D "$B_DATA" -l "$B_LOG" -w start >/dev/null
rows() { grep -c '"table":"t"' "$work/late.jsonl" 2>/dev/null || true; }
for round in 1 2 3; do
	changes B 1
	deadline=$((SECONDS + 120)) # only a guard against a hang
	while ((SECONDS < deadline)); do
		[[ $(rows) -ge $round ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null || { cat "$work/late.err"; fail "round $round: the consumer exited"; }
	[[ $(rows) -ge $round ]] || { cat "$work/late.err"; fail "round $round: the row did not reach the log"; }
	((round == 3)) || rp_cluster_restart B immediate
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 0)) || { cat "$work/late.err"; fail "the late consumer exited with $rc after SIGTERM"; }
if grep -q 'halted\|checkpoint belongs' "$work/late.err"; then cat "$work/late.err"; fail "a false halt"; fi
[[ $(grep -c 'reconnecting in 1 s' "$work/late.err") == 3 ]] ||
	{ cat "$work/late.err"; fail "not every retry came after 1 s (the backoff did not start over)"; }

status=0
printf 'PASS gap_and_identity: identity (system id, timeline, slot), gap (advanced, invalidated: %s, missing) all halt with 3; a consumer started before its source binds to it (G3) (%ds)\n' \
	"$invalidated" "$((SECONDS - started))"
