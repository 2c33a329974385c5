#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/exec_sink.sh: the exec sink's child protocol, and at-least-once across SIGKILL.
#
# Proves the exec sink's side of G1 ("sinks that cannot share a transaction with their
# checkpoint are at-least-once") and G2 (the checkpoint advances only after the child's
# "ack N"): the child regress/ack_child.py appends every JSON line it reads to a file and
# answers {"kind":"flush","seq":N,...} with "ack N" once the file is fsynced.
#   1. A clean run to -E: the child's file holds every committed change exactly once.
#   2. A workload keeps committing while the consumer is killed with SIGKILL 5 times and
#      restarted (same state dir, same child file); then a run to -E. The file holds every
#      committed change (loss = 0); each kill replays at most one unit (--batch-txns 4
#      transactions), so duplicates are bounded by one unit per kill.
#   3. A slow child (it waits 5 s before its first ack) on a server with
#      wal_sender_timeout = 2s: status updates keep flowing while the consumer waits (no
#      replication timeout, no reconnect), and nothing of the unit is acknowledged or checkpointed
#      before the ack (G2).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

KILLS=5
BATCH_TXNS=4
work=$(mktemp -d /tmp/rp-exec.XXXXXX)
OUT=$work/child.jsonl
STATE=$work/state
status=1
pid=
worker=
cleanup() {
	local rc=$?
	[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
	[[ -n $worker ]] && kill "$worker" 2>/dev/null
	rp_cluster_cleanup_all || true # its connections gone, every background job ends
	wait 2>/dev/null || true
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT
fail() {
	printf 'FAIL exec_sink: %s\n' "$*"
	exit 1
}

started=$SECONDS
rp_cluster_start src "wal_sender_timeout = '2s'"
rp_psql src <<'SQL' >/dev/null
CREATE TABLE e (id bigint PRIMARY KEY, txid bigint NOT NULL, note text);
CREATE TABLE ctl (stop bool NOT NULL);
INSERT INTO ctl VALUES (false);
CREATE TABLE fence (at timestamptz);
-- transactions of 1-5 inserted rows, committed one by one, from id first on
CREATE PROCEDURE workload(first bigint, ntxns int) LANGUAGE plpgsql AS $$
DECLARE
	id bigint := first;
	n int;
BEGIN
	FOR i IN 1 .. ntxns LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		n := 1 + (random() * 4)::int;
		INSERT INTO e SELECT g, txid_current(), md5(g::text) FROM generate_series(id, id + n - 1) g;
		id := id + n;
		COMMIT;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
SQL
replicant -d "$src_CONNSTR" -S ex --create-slot

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S ex --start -s 1 --sink "exec:python3 $RP_ROOT/regress/ack_child.py $OUT" \
		--state-dir "$STATE" --batch-txns "$BATCH_TXNS" --batch-ms 50 "$@" 2>"$work/consumer-$runs.err" &
	pid=$!
}
finish_consumer() {
	local rc=0
	wait "$pid" || rc=$?
	pid=
	((rc == 0)) || { cat "$work/consumer-$runs.err"; fail "consumer run $runs exited with $rc"; }
}
# endpos past every committed workload transaction: a fence transaction ends after it
fence_lsn() { rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()"; }

# check MODE: compare the child's file with table e (MODE exact: no duplicates allowed)
check() {
	rp_psql src -c "\\copy (SELECT id, txid FROM e) TO '$work/expected.tsv'"
	python3 - "$OUT" "$work/expected.tsv" "$1" "$BATCH_TXNS" "$KILLS" <<'PY'
import collections, json, sys
out_path, exp_path, mode, batch_txns, kills = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
expected = {}
for line in open(exp_path):
    i, t = line.split()
    expected[int(i)] = int(t) & 0xFFFFFFFF
seen = collections.Counter()
errors = []
# the file as a sequence of transaction runs: (commit_lsn, xid, lines)
runs = []
for n, line in enumerate(open(out_path), 1):
    rec = json.loads(line)
    if rec.get("table") != "e":
        continue
    if rec["kind"] != "insert":
        errors.append(f"line {n}: unexpected {rec['kind']}")
        continue
    i = rec["new"]["id"]
    seen[i] += 1
    if i in expected and expected[i] != rec["xid"]:
        errors.append(f"line {n}: id {i} in xid {rec['xid']}, committed in {expected[i]}")
    c = tuple(int(x, 16) for x in rec["commit_lsn"].split("/"))
    if runs and runs[-1][0] == c:
        runs[-1][2] += 1
    else:
        runs.append([c, rec["xid"], 1])
loss = [i for i in expected if seen[i] == 0]
phantom = [i for i in seen if i not in expected]
dup_changes = sum(v - 1 for v in seen.values() if v > 1)
txns_seen = collections.Counter(r[0] for r in runs)
dup_txns = sum(v - 1 for v in txns_seen.values())
# replays: the commit order goes back when a restarted consumer resends what its checkpoint
# did not cover; the transactions seen again until it passes the old high mark are one
# replay, which must stay within one unit (batch_txns transactions)
replay_sizes, cur, hi = [], None, (0, 0)
for c, xid, cnt in runs:
    if c <= hi:
        if cur is None:
            cur = set()
        cur.add(c)
    else:
        if cur is not None:
            replay_sizes.append(len(cur))
        cur = None
    hi = max(hi, c)
if cur is not None:
    replay_sizes.append(len(cur))
print(f"check ({mode}): {sum(seen.values())} lines for {len(expected)} committed rows; "
      f"loss={len(loss)} phantom={len(phantom)} duplicate lines={dup_changes} "
      f"duplicate transaction runs={dup_txns} replays={len(replay_sizes)} {replay_sizes}")
for e in errors[:10]:
    print("  " + e)
bad = bool(errors or loss or phantom)
if mode == "exact" and (dup_changes or replay_sizes):
    print("  duplicates in a run without kills")
    bad = True
if mode == "kills":
    if len(replay_sizes) > kills:
        print(f"  {len(replay_sizes)} replays for {kills} kills")
        bad = True
    if any(s > batch_txns for s in replay_sizes):
        print(f"  a replay spans more than one unit ({batch_txns} transactions)")
        bad = True
if loss:
    print(f"  lost ids, first: {sorted(loss)[:5]}")
sys.exit(1 if bad else 0)
PY
}

# ---- 1. a clean run: every change exactly once
rp_psql src -c "CALL workload(1, 200)" >/dev/null
endpos=$(fence_lsn)
start_consumer -n -E "$endpos"
finish_consumer
check exact || fail "the clean run's child file does not hold every change exactly once"
[[ -e $STATE/ex.checkpoint ]] || fail "no library checkpoint file after the clean run"
clean_lines=$(wc -l <"$OUT")

# ---- 2. SIGKILL rounds while the workload commits
rp_psql src -c "CALL workload(1000000, 100000)" >"$work/worker.out" 2>&1 &
worker=$!
for ((round = 1; round <= KILLS; round++)); do
	start_consumer
	ms=$((300 + RANDOM % 1200))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -0 "$pid" 2>/dev/null || { cat "$work/consumer-$runs.err"; fail "consumer run $runs ended by itself"; }
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	printf 'round %d: killed after %d ms; child file %d lines\n' "$round" "$ms" "$(wc -l <"$OUT")"
done
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$worker" || { cat "$work/worker.out"; fail "the workload failed"; }
worker=
endpos=$(fence_lsn)
start_consumer -n -E "$endpos"
finish_consumer
check kills || fail "the child file after $KILLS kills breaks at-least-once or the one-unit bound"

# ---- 3. a slow child: the consumer keeps the connection alive while it waits
replicant -d "$src_CONNSTR" -S slow --create-slot
rp_psql src -c "UPDATE ctl SET stop = false" -c "CALL workload(5000000, 3)" >/dev/null
endpos=$(fence_lsn)
runs=$((runs + 1))
CHILD_FIRST_ACK_DELAY=5 replicant -d "$src_CONNSTR" -S slow --start -n -E "$endpos" -s 1 \
	--sink "exec:python3 $RP_ROOT/regress/ack_child.py $work/slow.jsonl" --state-dir "$work/state-slow" \
	--batch-txns 1000 2>"$work/consumer-$runs.err" &
pid=$!
sleep 3
# what the slot and the checkpoint held then (the child acknowledges 5 s after its first flush)
flush3=$(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'slow'")
cp "$work/state-slow/slow.checkpoint" "$work/slow.checkpoint-3s" 2>/dev/null || : >"$work/slow.checkpoint-3s"
finish_consumer
# nothing of the unit then: nothing at or past its first commit, as the child read it
first=$(python3 -c 'import json, sys
print(min((json.loads(l)["commit_lsn"] for l in open(sys.argv[1]) if "commit_lsn" in l),
          key=lambda s: tuple(int(x, 16) for x in s.split("/"))))' "$work/slow.jsonl")
hi=${first%/*} lo=${first#*/}
bound=$(printf '%X/%X' "$((16#$hi + (16#$lo == 0xFFFFFFFF)))" "$(((16#$lo + 1) & 0xFFFFFFFF))")
why=$(rp_unacked src slow "$work/slow.checkpoint-3s" "$bound" "$flush3") ||
	fail "3 s in, before the child acknowledged, $why"
[[ -s $work/state-slow/slow.checkpoint ]] || fail "no checkpoint after the slow child acknowledged"
if grep -q 'replication timeout' "$src_LOG"; then fail "the walsender timed out while the consumer waited for the child"; fi
if grep -q 'reconnecting' "$work/consumer-$runs.err"; then fail "the consumer reconnected while it waited for the child"; fi
[[ $(grep -c '"table":"e"' "$work/slow.jsonl") -ge 3 ]] || fail "the slow child did not receive the rows"

status=0
printf 'PASS exec_sink: clean run exactly once (%d lines); %d SIGKILLs: no loss, replays within one unit per kill; a 5 s ack under wal_sender_timeout 2s kept the link (%ds)\n' \
	"$clean_lines" "$KILLS" "$((SECONDS - started))"
