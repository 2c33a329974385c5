#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2119 # NAME_* variables are set by rp_cluster_start (lib.sh); rp_nats_sink_url: all nodes
# regress/t/nats_fence.sh: one writer per JetStream stream, and a full stream loses nothing.
#
# Proves G1 and G3 (fail-closed) for --sink nats:// on a 3-node cluster:
#   (a) a second writer: a consumer of another slot pointed at a stream that consumer A
#       writes halts at start (exit != 0, naming the stream) and writes nothing; A goes on;
#   (b) a zombie: A is stopped (SIGSTOP) in the middle of publishing a 20,000-row
#       transaction, its walsender terminated, and a new writer A2 on the same slot resumes
#       from the stream's tail (in the middle of that transaction) and writes. A is then
#       continued (SIGCONT): it must be fenced, exactly it: it exits with an error naming the
#       stream and both writer ids (A's and A2's, as their messages' Replicant-Writer say),
#       while A2 runs on and the stream keeps growing with A2's messages only;
#   (c) a full stream: created beforehand with 64 KiB max bytes and discard new, a consumer of
#       a third slot meets it full: it keeps running (back-pressure), warns naming the
#       stream, counts replicant_nats_stream_full_total on /metrics, and the slot is not
#       confirmed past what the stream holds; once max bytes is raised it resumes by itself.
# At the end regress/check_nats.py compares both streams with the audit (every change once,
# in commit order, the slots confirmed no further than the streams hold).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

STREAM=F_STREAM
PREFIX=f
FULL=FULL_STREAM
FULL_PREFIX=full
work=$(mktemp -d /tmp/rp-nats-fence.XXXXXX)
status=1
a_pid='' b_pid='' a2_pid='' c_pid=''
# shellcheck disable=SC2034 # read by rp_e2e_cleanup (by name)
workers=()
cleanup() {
	local rc=$?
	if [[ -n $a_pid ]]; then kill -CONT "$a_pid" 2>/dev/null || true; fi
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" a_pid b_pid a2_pid c_pid workers
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_fence "$work/consumer-*.err" 10 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_nats_start 3
rp_nats_build_tools "$work"
rp_nats_load_workload src fa
replicant -d "$src_CONNSTR" -S fa --create-slot

# consumer NAME SLOT STREAM PREFIX [ARG...]: in the background, pid into NAME_pid
consumer() {
	local name=$1 slot=$2 stream=$3 prefix=$4
	shift 4
	replicant -d "$src_CONNSTR" -S "$slot" --start -s 1 --sink "$(rp_nats_sink_url)" \
		--nats-stream "$stream" --nats-subject-prefix "$prefix" --nats-ack-timeout 2 \
		--state-dir "$work/state-$name" "$@" 2>"$work/consumer-$name.err" &
	printf -v "${name}_pid" '%s' "$!"
}
last_seq() { rp_nats_tool "$1" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p'; }
tailf() { rp_nats_tail_field "$STREAM" "$1"; }
grows() { (($(last_seq "$1") > $2)); }

consumer a fa "$STREAM" "$PREFIX"
rp_psql src -c "CALL workload(1, false, 40)" >"$work/worker1.out" 2>&1 || { cat "$work/worker1.out"; fail "the workload failed"; }
rp_nats_wait_for 120 grows "$STREAM" 20 || fail "(a) consumer A did not write 20 messages within 120 s"

# ---- (a) a second writer: another slot onto A's stream
replicant -d "$src_CONNSTR" -S fb --create-slot
writer_a=$(tailf Replicant-Writer)
[[ -n $writer_a ]] || fail "(a) the stream's tail has no Replicant-Writer"
before=$(last_seq "$STREAM")
consumer b fb "$STREAM" "$PREFIX"
rp_psql src -c "CALL workload(1, false, 10)" >>"$work/worker1.out" 2>&1
rp_wait_exit "$b_pid" 120 || fail "(a) the consumer of slot fb on A's stream is still running after 120 s"
b_pid=
((exit_status != 0)) || fail "(a) the second writer exited with 0"
grep -qF "$STREAM" "$work/consumer-b.err" || { cat "$work/consumer-b.err"; fail "(a) the second writer's error does not name the stream"; }
kill -0 "$a_pid" 2>/dev/null || fail "(a) consumer A exited"
rp_nats_wait_for 120 grows "$STREAM" "$before" || fail "(a) A did not write on"
printf '(a) second writer (slot fb) halted with %d: %s\n' "$exit_status" "$(grep -m1 'error' "$work/consumer-b.err" | cut -c 1-200)"
replicant -d "$src_CONNSTR" -S fb --drop-slot

# ---- (b) a zombie: A stopped inside a big transaction, A2 takes over, A continued
rp_psql src -c "INSERT INTO bulk SELECT g, md5(g::text) FROM generate_series(1, 20000) g" >/dev/null
# one snapshot of the tail: a message of the bulk transaction with more than a publish window
# (1024) of it still to come, so that A has publishes left when it is continued
inside() {
	rp_nats_tool "$STREAM" tail | python3 -c '
import json, sys
h = ((json.load(sys.stdin).get("msg") or {}).get("headers") or {})
ok = h.get("Replicant-Table") == "public.bulk" and "Replicant-Last" not in h and 0 < int(h.get("Replicant-Index", "0")) < 15000
sys.exit(0 if ok else 1)'
}
rp_nats_wait_for 120 inside || fail "(b) A never had the 20,000-row transaction half published"
kill -STOP "$a_pid"
stopped_at=$(last_seq "$STREAM")
rp_psql src -c "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'fa' AND active_pid IS NOT NULL" >/dev/null
slot_free() { [[ $(rp_psql src -Atc "SELECT active FROM pg_replication_slots WHERE slot_name = 'fa'") == f ]]; }
rp_nats_wait_for 60 slot_free || fail "(b) the slot stayed active after A's walsender was terminated"
consumer a2 fa "$STREAM" "$PREFIX"
rp_psql src -c "CALL workload(1, false, 10)" >>"$work/worker1.out" 2>&1
new_writer() { local w; w=$(tailf Replicant-Writer); [[ -n $w && $w != "$writer_a" ]]; }
rp_nats_wait_for 180 new_writer || fail "(b) the new writer A2 wrote nothing within 180 s"
writer_a2=$(tailf Replicant-Writer)
kill -CONT "$a_pid"
rp_psql src -c "CALL workload(1, false, 10)" >>"$work/worker1.out" 2>&1
rp_wait_exit "$a_pid" 120 || fail "(b) the zombie A was not fenced within 120 s of SIGCONT"
a_pid=
((exit_status != 0)) || fail "(b) the fenced zombie exited with 0"
for want in "$STREAM" "$writer_a" "$writer_a2"; do
	grep -qF -- "$want" "$work/consumer-a.err" || { cat "$work/consumer-a.err"; fail "(b) the zombie's error does not name $want"; }
done
kill -0 "$a2_pid" 2>/dev/null || fail "(b) the new writer A2 exited too (exactly one must be fenced)"
printf '(b) zombie (stopped at seq %s) fenced with %d: %s\n' "$stopped_at" "$exit_status" "$(grep -m1 'fenced' "$work/consumer-a.err" | cut -c 1-300)"

# ---- (c) a full stream: back-pressure, warning, metric, resumption
audit_floor=$(rp_psql src -Atc "SELECT coalesce(max(seq), 0) FROM audit") # no workload runs now
rp_nats_tool "$FULL" create "$FULL_PREFIX" 65536 3
replicant -d "$src_CONNSTR" -S fc --create-slot
# a new slot's confirmed position is where it was created: the consumer has confirmed nothing
# beyond that until a transaction is complete in the stream
created=$(rp_nats_confirmed src fc)
port=$(rp_free_port)
consumer c fc "$FULL" "$FULL_PREFIX" --metrics-port "$port"
rp_psql src -c "CALL workload(2, false, 80)" >"$work/worker2.out" 2>&1 || { cat "$work/worker2.out"; fail "the workload failed"; }
full_counted() {
	curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" 2>/dev/null &&
		grep -Eq '^replicant_nats_stream_full_total(\{[^}]*\})? [1-9]' "$work/metrics.txt"
}
rp_nats_wait_for 180 full_counted || fail "(c) replicant_nats_stream_full_total did not count within 180 s"
kill -0 "$c_pid" 2>/dev/null || fail "(c) the consumer exited on a full stream"
grep -i 'full' "$work/consumer-c.err" | grep -qF "$FULL" ||
	{ cat "$work/consumer-c.err"; fail "(c) no warning naming the full stream $FULL"; }
confirmed=$(rp_nats_confirmed src fc)
end=$(rp_nats_tail_field "$FULL" last_complete_end)
[[ $(rp_psql src -Atc "SELECT '$confirmed'::pg_lsn <= greatest('${end:-0/0}'::pg_lsn, '$created'::pg_lsn)") == t ]] ||
	fail "(c) slot fc confirmed $confirmed, past the full stream's last complete transaction (${end:-none}) and its creation point $created"
held=$(last_seq "$FULL")
printf '(c) stream full at seq %s, slot fc at %s\n' "$held" "$confirmed"
rp_nats_tool "$FULL" max-bytes -1

# ---- the end: both streams exactly once
fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_lsn()")
rp_nats_wait_confirmed src fc "$fence" 300 "$c_pid" || fail "(c) after max bytes was raised, slot fc did not confirm $fence within 300 s"
rp_nats_wait_confirmed src fa "$fence" 300 "$a2_pid" || fail "A2 did not confirm $fence within 300 s"
for v in c_pid a2_pid; do
	kill -TERM "${!v}"
	rc=0
	wait "${!v}" || rc=$?
	printf -v "$v" '%s' ''
	((rc == 0)) || fail "a consumer stopped by SIGTERM exited with $rc"
done
mkdir -p "$work/f" "$work/full"
rp_nats_check src fa "$STREAM" "$PREFIX" "$work/f" --range-table bulk=1:20000 >"$work/check-f.out" ||
	{ cat "$work/check-f.out"; fail "stream $STREAM does not match what was committed"; }
cat "$work/check-f.out"
grep -q ' 2 writers,' "$work/check-f.out" || fail "stream $STREAM was written by other than the two writers A and A2"
RP_NATS_AUDIT_WHERE="seq > $audit_floor" rp_nats_check src fc "$FULL" "$FULL_PREFIX" "$work/full" --ignore-table bulk >"$work/check-full.out" ||
	{ cat "$work/check-full.out"; fail "stream $FULL does not match what was committed"; }
cat "$work/check-full.out"
status=0
printf 'PASS nats_fence: a second writer halted, the zombie fenced naming the stream and both writers while the new writer ran on, a full stream held back then resumed: exactly once (G1, G3) (%ds)\n' \
	"$((SECONDS - started))"
