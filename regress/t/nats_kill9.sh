#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2119 # NAME_* variables are set by rp_cluster_start (lib.sh); rp_nats_sink_url: all nodes
# regress/t/nats_kill9.sh: the JetStream sink is effect-once across SIGKILL, with the
# duplicate window at its minimum (so correctness cannot rest on Nats-Msg-Id dedup).
#
# Proves G1 (dup = 0, loss = 0, commit order) and G2 (after every kill the slot's
# confirmed_flush_lsn is at or behind the end LSN of the stream's last complete transaction)
# for --sink nats:// on a 3-node cluster, the stream created with --nats-duplicate-window 0.1
# (checked in the stream's config). A worker runs small mixed transactions over the hostile
# tables of regress/tools/nats_workload.sql while the consumer is killed with SIGKILL 22 times:
# at random moments (50-800 ms) once the restarted run has published, right after the stream's tail is a
# transaction's last message (acked, perhaps not yet confirmed), and four times inside one
# 100,000-row transaction (the tail is a message of it, without Replicant-Last, further on
# than at the kill before: each restart resumes in the middle of the transaction, from the
# stream's tail). While it waits for those, the script runs the consumer in steps (SIGCONT,
# 5 ms, SIGSTOP, look at the tail), so a fast machine cannot publish the whole transaction
# between two looks: the kill lands inside it however fast the machine is (it used to be
# polled while the consumer ran free, and a fast machine published all 100,000 messages
# between looks). Every restart comes after the duplicate window passed since the kill. At
# the end regress/check_nats.py compares the whole stream with the audit and checks that the
# 100,000 rows are each in it once.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-22}
BULK=100000
SLOT=nats_kill9
STREAM=K9_STREAM
PREFIX=k9
work=$(mktemp -d /tmp/rp-nats-kill9.XXXXXX)
status=1
consumer_pid=
workers=()
cleanup() {
	local rc=$?
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" consumer_pid workers
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_kill9 "$work/consumer-*.err" 10 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_nats_start 3
rp_nats_build_tools "$work"
rp_nats_load_workload src "$SLOT"
rp_psql src -c "UPDATE wl_conf SET pace = 0.02" >/dev/null # a smaller stream to read back
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" \
		--nats-stream "$STREAM" --nats-subject-prefix "$PREFIX" --nats-duplicate-window 0.1 \
		--state-dir "$work/state" --max-memory 16MB 2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}
tail_json() { rp_nats_tool "$STREAM" tail 2>/dev/null || echo '{}'; }
# field F of a tail JSON (seq, last_complete_end, or a header of the last message)
tf() {
	python3 -c '
import json, sys
d = json.loads(sys.argv[1]); f = sys.argv[2]
m = d.get("msg") or {}
if f == "seq": print(m.get("seq", d.get("seq", 0)))
elif f == "last_complete_end": print(d.get(f, ""))
else: print((m.get("headers") or {}).get(f, ""))' "$1" "$2"
}

# wait (up to 180 s: re-decoding the big transaction takes a while) until the stream's last
# sequence passed $1 (this run published something)
wait_published() {
	local deadline=$((SECONDS + 180)) t
	while ((SECONDS < deadline)); do
		kill -0 "$consumer_pid" 2>/dev/null || return 1
		t=$(tail_json)
		(($(tf "$t" seq) > $1)) && return 0
		sleep 0.05
	done
	return 1
}
lsn_gt() { python3 -c 'import sys
v = lambda s: (int(s.split("/")[0], 16) << 32) | int(s.split("/")[1], 16)
sys.exit(0 if v(sys.argv[1]) > v(sys.argv[2]) else 1)' "$1" "$2"; }
# wait until the tail is inside the bulk transaction, past index $1; prints the index and
# leaves the consumer stopped (SIGSTOP: the caller kills it). The consumer runs 5 ms at a time
# between looks at the tail, so however fast the machine, it cannot get through the rest of
# the transaction unseen. Status 2 when the stream is already past the bulk transaction (its
# INSERT committed before the LSN in bulk.lsn was read, and the tail is a later transaction).
wait_inside_bulk() {
	local deadline=$((SECONDS + 180)) t idx
	while ((SECONDS < deadline)); do
		kill -0 "$consumer_pid" 2>/dev/null || return 1
		kill -STOP "$consumer_pid"
		t=$(tail_json)
		if [[ $(tf "$t" Replicant-Table) == public.bulk && -z $(tf "$t" Replicant-Last) ]]; then
			idx=$(tf "$t" Replicant-Index)
			((idx > $1)) && { echo "$idx"; return 0; }
		elif [[ -s $work/bulk.lsn && -n $(tf "$t" Replicant-Lsn) ]] && lsn_gt "$(tf "$t" Replicant-Lsn)" "$(cat "$work/bulk.lsn")" &&
			[[ $(tf "$t" Replicant-Table) != public.bulk ]]; then
			kill -CONT "$consumer_pid"
			return 2
		fi
		kill -CONT "$consumer_pid"
		sleep 0.005
	done
	kill -CONT "$consumer_pid" 2>/dev/null || true
	return 1
}
# wait until the tail is a transaction's last message newer than sequence $1
wait_last() {
	local deadline=$((SECONDS + 60)) t
	while ((SECONDS < deadline)); do
		t=$(tail_json)
		(($(tf "$t" seq) > $1)) && [[ $(tf "$t" Replicant-Last) == true ]] && return 0
		sleep 0.01
	done
	return 1
}

start_consumer
rp_psql src -c "CALL workload(1, false, 0)" >"$work/worker1.out" 2>&1 &
workers+=($!)
seq_at_kill=0
inside=0 after_last=0 bulk_done=0 bulk_idx=-1
rm -f "$work/bulk.lsn"
for ((round = 1; round <= ROUNDS; round++)); do
	how=
	if ((round == 3)); then
		# (one implicit transaction: the LSN is read before its commit, after its changes)
		rp_psql src -Atc "INSERT INTO bulk SELECT g, md5(g::text) FROM generate_series(1, $BULK) g; SELECT pg_current_wal_lsn()" >"$work/bulk.lsn.tmp" &&
			mv "$work/bulk.lsn.tmp" "$work/bulk.lsn" &
		workers+=($!)
	fi
	if ((round >= 3 && round <= 6)) && ((bulk_done == 0)); then
		rc=0
		idx=$(wait_inside_bulk "$bulk_idx") || rc=$?
		if ((rc == 0)); then
			bulk_idx=$idx
			inside=$((inside + 1))
			how="inside the $BULK-row transaction at index $idx"
		elif ((rc == 2)); then
			bulk_done=1
		fi
	fi
	if [[ -z $how ]]; then
		wait_published "$seq_at_kill" || fail "round $round: consumer run $runs published nothing within 180 s (or exited)"
		if ((round % 3 == 0)); then
			if wait_last "$seq_at_kill"; then after_last=$((after_last + 1)); how="right after a last message"; else how="timeout"; fi
		else
			ms=$((50 + RANDOM % 751))
			sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
			how="after ${ms}ms"
		fi
	fi
	rp_kill9_alive consumer_pid || fail "consumer run $runs exited by itself (status $RP_EXIT_STATUS) before round $round's kill"
	killed_at=$(date +%s%N)
	confirmed=$(rp_nats_confirmed src "$SLOT")
	t=$(tail_json)
	seq_at_kill=$(tf "$t" seq)
	end=$(tf "$t" last_complete_end)
	ok=$(rp_psql src -Atc "SELECT '$confirmed'::pg_lsn <= '${end:-0/0}'::pg_lsn")
	[[ $ok == t ]] || fail "round $round: the slot confirmed $confirmed, past the stream's last complete transaction (end ${end:-none})"
	printf 'round %2d: killed %s; stream seq %s, last complete end %s, slot confirmed %s\n' \
		"$round" "$how" "$seq_at_kill" "${end:-none}" "$confirmed"
	kill -0 "${workers[0]}" 2>/dev/null || { cat "$work/worker1.out"; fail "the workload worker ended early"; }
	# the restart comes after the duplicate window (0.1 s) passed since the kill
	while (($(date +%s%N) - killed_at < 300000000)); do sleep 0.05; done
	start_consumer
done
((inside >= 3)) || fail "only $inside kills landed inside the $BULK-row transaction (need 3)"
((after_last > 0)) || fail "no kill landed right after a transaction's last message"

rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
for p in "${workers[@]}"; do
	wait "$p" || { cat "$work/worker1.out"; fail "a workload job failed"; }
done
workers=()
fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_lsn()")
rp_nats_wait_confirmed src "$SLOT" "$fence" 300 "$consumer_pid" || fail "the last run did not confirm $fence within 300 s"
kill -TERM "$consumer_pid"
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the last consumer run, stopped by SIGTERM, exited with $rc"

rp_nats_tool "$STREAM" info >"$work/info.json"
grep -q '"duplicates_ns":100000000,' "$work/info.json" ||
	fail "the stream's duplicate window is not 0.1 s: $(cat "$work/info.json")"
rp_nats_check src "$SLOT" "$STREAM" "$PREFIX" "$work" --range-table "bulk=1:$BULK" >"$work/check.out" ||
	{ cat "$work/check.out"; fail "the stream does not match what was committed"; }
cat "$work/check.out"
status=0
printf 'PASS nats_kill9: %d SIGKILLs (%d inside a %d-row transaction, %d right after a last message), duplicate window 0.1 s: exactly once in commit order (G1), confirmed behind the stream (G2) (%ds)\n' \
	"$ROUNDS" "$inside" "$BULK" "$after_last" "$((SECONDS - started))"
