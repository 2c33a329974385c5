#!/usr/bin/env bash
# shellcheck disable=SC2154 # NAME_* variables are set by rp_cluster_start (lib.sh)
# regress/t/nats_lost_tail.sh: a JetStream stream that gives back less than it acknowledged
# stops the sink (G3) instead of letting it write on after the hole.
#
# nats-server 2.9.10 did this once in CI (t/nats_cluster.sh, the stream's leader and a
# follower killed together while the third node was catching up: a restarted node reset its
# copy and voted the stale node leader, and 86 acknowledged messages were gone). The sink
# resumed after the older tail, the slot had been confirmed past the lost changes, and the
# stream went on with a hole no reader could see. Here the same state is made on purpose, the
# same way every time: a single-node server is stopped cleanly, its store copied, restarted;
# the consumer publishes more and the slot is confirmed past it; the server is stopped again
# and the old copy of the store put back. Then:
#   - the running consumer halts with exit 3 (gap), naming the stream and both sequences;
#   - the stream's last sequence is still the old copy's: nothing was written after the hole;
#   - a consumer started again on the slot refuses too (the slot is past the stream's tail).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

SLOT=nats_lost
STREAM=LOST_STREAM
PREFIX=lost
work=$(mktemp -d /tmp/rp-nats-lost.XXXXXX)
status=1
consumer_pid=
# shellcheck disable=SC2034 # read by rp_e2e_cleanup (by name)
workers=()
cleanup() {
	local rc=$?
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" consumer_pid workers
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_lost_tail "$work/consumer-*.err" 15 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_nats_start 1
rp_nats_build_tools "$work"
rp_nats_load_workload src "$SLOT"
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

# run_consumer N: in the background, stderr into consumer-N.err, pid into consumer_pid
run_consumer() {
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" \
		--nats-stream "$STREAM" --nats-subject-prefix "$PREFIX" --nats-replicas 1 \
		--nats-ack-timeout 2 --state-dir "$work/state" 2>"$work/consumer-$1.err" &
	consumer_pid=$!
}
last_seq() { rp_nats_tool "$STREAM" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p'; }
# workload N: N transactions of the standard workload, then the slot confirmed past them
workload() {
	local fence
	rp_psql src -c "CALL workload(1, false, $1)" >>"$work/worker1.out" 2>&1 ||
		{ cat "$work/worker1.out"; fail "the workload failed"; }
	fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_lsn()")
	rp_nats_wait_confirmed src "$SLOT" "$fence" 180 "$consumer_pid" ||
		fail "the consumer did not confirm $fence within 180 s"
}
store="$RP_NATS_DIR/n1/store"

run_consumer 1
workload 20
# the store as it is now, copied while the server is stopped cleanly (nothing half written)
rp_nats_stop 1
cp -a "$store" "$work/store-old"
rp_nats_restart 1
old_seq=$(last_seq)
((${old_seq:-0} > 0)) || fail "the stream is empty after the first workload"
# more, acknowledged by the stream and confirmed to the slot
workload 20
new_seq=$(last_seq)
((new_seq > old_seq)) || fail "the stream did not grow past $old_seq after the second workload"
confirmed=$(rp_nats_confirmed src "$SLOT")
# the server gives back the older stream
rp_nats_stop 1
rm -rf "$store"
cp -a "$work/store-old" "$store"
rp_nats_restart 1
rp_nats_wait_for 60 _rp_nats_js_ready 1 || fail "JetStream did not come back on n1"
back=$(last_seq)
[[ $back == "$old_seq" ]] || fail "the restored stream ends at ${back:-?}, not at the old copy's $old_seq"
printf 'stream acknowledged up to seq %s (slot confirmed %s), then went back to %s\n' "$new_seq" "$confirmed" "$old_seq"

# changes after the hole: the consumer must not write them behind it
rp_psql src -c "CALL workload(1, false, 5)" >>"$work/worker1.out" 2>&1 ||
	{ cat "$work/worker1.out"; fail "the workload failed"; }
rp_wait_exit "$consumer_pid" 120 ||
	fail "the consumer still runs 120 s after its stream lost acknowledged messages (seq $new_seq -> $old_seq)"
consumer_pid=
((exit_status == 3)) || fail "the consumer exited with $exit_status, not 3 (a halt)"
for want in "NATS stream \"$STREAM\" lost messages it had acknowledged" "last sequence is $old_seq" "had $new_seq acknowledged"; do
	grep -qF -- "$want" "$work/consumer-1.err" || { cat "$work/consumer-1.err"; fail "the halt does not say: $want"; }
done
grep -q 'gap' "$work/consumer-1.err" || { cat "$work/consumer-1.err"; fail "the halt is not named gap"; }
after=$(last_seq)
[[ $after == "$old_seq" ]] || fail "the stream grew from $old_seq to $after after the hole"
printf 'halted: %s\n' "$(grep -m1 'lost messages' "$work/consumer-1.err" | cut -c 1-240)"

# a restart on the same slot refuses too: the slot is past the stream's tail
rc=0
timeout 120 replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" \
	--nats-stream "$STREAM" --nats-subject-prefix "$PREFIX" --nats-replicas 1 \
	--nats-ack-timeout 2 --state-dir "$work/state" 2>"$work/consumer-2.err" || rc=$?
((rc == 3)) || { cat "$work/consumer-2.err"; fail "a restart on the slot exited with $rc, not 3 (a halt)"; }
grep -qF "past the checkpoint" "$work/consumer-2.err" ||
	{ cat "$work/consumer-2.err"; fail "the restart's halt does not say the slot is past the checkpoint"; }
[[ $(last_seq) == "$old_seq" ]] || fail "the restart wrote to the stream"

status=0
printf 'PASS nats_lost_tail: a stream that went back from seq %s to %s halted the running sink (gap) with nothing written after the hole, and a restart refused (G3) (%ds)\n' \
	"$new_seq" "$old_seq" "$((SECONDS - started))"
