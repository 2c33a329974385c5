#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/idle_shutdown.sh: idle WAL and the source's fast shutdown, for the append logs whose
# checkpoint is the library's file (stdout, exec).
#
# For each of the two sinks, with a consumer connected the whole time:
#   1. a transaction of 100 rows, confirmed;
#   2. a CHECKPOINT: WAL that decodes to no transaction. The slot must confirm it (the library's
#      checkpoint file records the idle position): before the fix such a log never moved on
#      idle, so a quiet database kept all WAL after its last transaction;
#   3. a fast shutdown of the source must end (pg_ctl, 60 s): its walsender waits until the
#      client confirms everything it sent, the shutdown checkpoint included, and a consumer that
#      never confirmed past its last transaction held it there for good ("server does not shut
#      down", measured with the stdout sink);
#   4. the source restarted, the consumer killed with SIGKILL while idle and started again on
#      the same state (its checkpoint is now an idle position past the last commit), a second
#      transaction of 100 rows: the output holds rows 1..200 exactly once each (dup = 0,
#      loss = 0: nothing was in flight at either interruption).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-idle.XXXXXX)
status=1
pid=
cleanup() {
	local rc=$?
	[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
	rp_cluster_cleanup_all || true
	wait 2>/dev/null || true
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT
fail() {
	printf 'FAIL idle_shutdown: %s\n' "$*"
	exit 1
}

rp_cluster_start src
rp_psql src -c "CREATE TABLE t (id int PRIMARY KEY, sink text NOT NULL)" >/dev/null

# wait_confirmed SLOT LSN WHAT: the slot confirms LSN within 120 s while the consumer runs
wait_confirmed() {
	local slot=$1 lsn=$2 what=$3 deadline=$((SECONDS + 120)) ok
	while ((SECONDS < deadline)); do
		ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn >= '$lsn' FROM pg_replication_slots WHERE slot_name = '$slot'")
		[[ $ok == t ]] && return 0
		kill -0 "$pid" 2>/dev/null || fail "$slot: the consumer exited while waiting for $what ($lsn): $(tail -n 3 "$work/$slot.err")"
		sleep 0.2
	done
	fail "$slot: the slot did not confirm $what ($lsn) within 120 s (it is at $(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'"))"
}
# txn FIRST SINK: 100 rows in one transaction; prints the LSN read inside it (a fence the
# transaction's end passes, and no later WAL of anyone else's)
txn() {
	rp_psql src -Atc "BEGIN" -c "INSERT INTO t SELECT g, '$2' FROM generate_series($1, $1 + 99) g" \
		-c "SELECT pg_current_wal_insert_lsn()" -c "COMMIT" | grep '/'
}

for sink in stdout exec; do
	slot=idle_$sink
	out=$work/$sink.jsonl
	case $sink in
	stdout) args=(--sink stdout) ;;
	exec) args=(--sink "exec:python3 $RP_ROOT/regress/ack_child.py $out") ;;
	esac
	start() {
		if [[ $sink == stdout ]]; then
			replicant -d "$src_CONNSTR" -S "$slot" --start -s 1 --state-dir "$work/state-$sink" \
				--batch-ms 50 "${args[@]}" >>"$out" 2>>"$work/$slot.err" &
		else
			replicant -d "$src_CONNSTR" -S "$slot" --start -s 1 --state-dir "$work/state-$sink" \
				--batch-ms 50 "${args[@]}" 2>>"$work/$slot.err" &
		fi
		pid=$!
	}
	replicant -d "$src_CONNSTR" -S "$slot" --create-slot
	: >"$out"
	start
	fence=$(txn 1 "$sink")
	wait_confirmed "$slot" "$fence" "the first transaction"

	rp_psql src -c "CHECKPOINT" >/dev/null
	idle=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
	wait_confirmed "$slot" "$idle" "the idle position after a CHECKPOINT"

	rc=0
	PGCTLTIMEOUT=60 pg_ctl -D "$src_DATA" -m fast -w stop >"$work/stop-$sink.out" 2>&1 || rc=$?
	if ((rc != 0)); then
		kill -9 "$pid" 2>/dev/null || true  # lets the walsender, and so the server, go
		pg_ctl -D "$src_DATA" -m fast -w stop >/dev/null 2>&1 || true
		fail "$sink: a fast shutdown of the source with the consumer connected did not end within 60 s: $(tail -n 1 "$work/stop-$sink.out")"
	fi
	pg_ctl -D "$src_DATA" -l "$src_LOG" -w -t 60 start >/dev/null

	# the checkpoint file now holds an idle position past the last commit: a restart from it
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	start
	fence=$(txn 101 "$sink")
	wait_confirmed "$slot" "$fence" "the second transaction"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	pid=
	((rc == 0)) || fail "$sink: the consumer stopped by SIGTERM exited with $rc: $(tail -n 3 "$work/$slot.err")"

	python3 - "$out" "$sink" <<'PY' || fail "$sink: the output is not rows 1..200 exactly once"
import collections, json, sys
seen = collections.Counter()
for line in open(sys.argv[1]):
    rec = json.loads(line)
    if rec.get("table") == "t" and rec.get("kind") == "insert":
        assert rec["new"]["sink"] == sys.argv[2], rec["new"]["sink"]
        seen[rec["new"]["id"]] += 1
loss = [i for i in range(1, 201) if seen[i] == 0]
dup = sum(v - 1 for v in seen.values() if v > 1)
phantom = [i for i in seen if not 1 <= i <= 200]
print(f"{sys.argv[2]}: {len(seen)} rows, dup = {dup}, loss = {len(loss)}, phantom = {len(phantom)}")
sys.exit(0 if not loss and dup == 0 and not phantom else 1)
PY
	rp_psql src -c "DELETE FROM t" >/dev/null
	replicant -d "$src_CONNSTR" -S "$slot" --drop-slot
done

status=0
echo "PASS idle_shutdown: stdout and exec confirm idle WAL, the source shuts down fast with them connected, and a restart from the idle position loses and repeats nothing"
