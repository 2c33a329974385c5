#!/usr/bin/env bash
# The JetStream sink while the whole cluster is frozen (G5, G1): a 200-row transaction of
# 512 kB values (about 100 MB of JSON) arrives while every node is stopped (SIGSTOP), so no
# publish is acknowledged and the sink holds what it has in flight (the window bounds it by
# count and by bytes, RP_NATS_WINDOW_BYTES; the connection's socket buffers stop it sooner).
# With --max-memory 32MB for the assembled transaction the consumer's peak RSS must stay under
# 170 MB, the whole transaction received; then the nodes continue, and every row must be in the
# stream exactly once and the slot confirmed to the transaction's end. Then one change larger
# than max_payload halts the sink without being held rendered whole (c).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

SLOT=nats_memory
STREAM=MEM_STREAM
PREFIX=mem
ROWS=200
LIMIT_MB=170
work=$(mktemp -d /tmp/rp-nats-memory.XXXXXX)
status=1
consumer_pid=
stopped=()
cleanup() {
	local rc=$? p
	for p in "${stopped[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" consumer_pid
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_memory "$work/consumer.err" 20 "$*"; }

rp_cluster_start src
rp_nats_start 3
rp_nats_build_tools "$work"
rp_psql src -c "CREATE TABLE big (id int PRIMARY KEY, v text)" >/dev/null
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

port=$(rp_free_port)
replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" \
	--nats-stream "$STREAM" --nats-subject-prefix "$PREFIX" --nats-ack-timeout 60 \
	--max-memory 32MB --metrics-port "$port" --state-dir "$work/state" 2>"$work/consumer.err" &
consumer_pid=$!

# the stream exists and holds a first row before the cluster stops
rp_psql src -c "INSERT INTO big VALUES (0, 'first')" >/dev/null
first_in() { [[ $(rp_nats_tail_field "$STREAM" seq 2>/dev/null) =~ ^[1-9] ]]; }
rp_nats_wait_for 120 first_in || fail "the first row did not reach the stream within 120 s"
published() { curl -sf "http://127.0.0.1:$port/metrics" | awk '/^replicant_nats_published_total/ { print $2 }'; }

for ((i = 1; i <= RP_NATS_N; i++)); do
	pid_var=RP_NATS_PID_$i
	kill -STOP "${!pid_var}"
	stopped+=("${!pid_var}")
done
# 512 kB of hex a row, not compressible into less than the JSON the sink renders of it
rp_psql src -c "INSERT INTO big SELECT g, (SELECT string_agg(md5(random()::text || g || i), '') FROM generate_series(1, 16384) i) FROM generate_series(1, $ROWS) g" >/dev/null
end_lsn=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")

# the whole transaction received (its 100 MB), then published as far as the sink goes unanswered
received() {
	local n
	n=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^replicant_received_bytes_total/ { print $2 }') &&
		((n >= ROWS * 512 * 1024))
}
rp_nats_wait_for 300 received || fail "the consumer did not receive the transaction within 300 s"
last=-1 same=0
for ((t = 0; t < 1200 && same < 10; t++)); do
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited while the cluster was stopped"
	now=$(published || echo -1)
	if [[ $now == "$last" ]]; then same=$((same + 1)); else same=0; last=$now; fi
	sleep 0.2
done
hwm_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$consumer_pid/status")
printf 'cluster stopped: %s messages published, consumer peak RSS %d MB (limit %d MB)\n' \
	"$last" $((hwm_kb / 1024)) "$LIMIT_MB"
((hwm_kb / 1024 < LIMIT_MB)) || fail "the consumer's peak RSS $((hwm_kb / 1024)) MB passed $LIMIT_MB MB with the cluster stopped"

for p in "${stopped[@]}"; do kill -CONT "$p"; done
stopped=()
rp_nats_wait_confirmed src "$SLOT" "$end_lsn" 300 "$consumer_pid" ||
	fail "the slot did not confirm $end_lsn within 300 s of the cluster continuing"
hwm_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$consumer_pid/status")
((hwm_kb / 1024 < LIMIT_MB)) || fail "the consumer's peak RSS $((hwm_kb / 1024)) MB passed $LIMIT_MB MB"

rp_nats_dump "$STREAM" "$work/stream.jsonl"
python3 - "$work/stream.jsonl" "$ROWS" <<'EOF' || fail "the stream does not hold every row once"
import collections, json, sys
ids = collections.Counter()
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = m.get("headers") or {}
    if h.get("Replicant-Op") == "insert" and h.get("Replicant-Table") == "public.big":
        ids[json.loads(h["Replicant-Key"])["id"]] += 1
want = set(range(0, int(sys.argv[2]) + 1))
dups = [k for k, n in ids.items() if n > 1]
print("rows in the stream: %d distinct, %d duplicated, %d missing" % (len(ids), len(dups), len(want - set(ids))))
sys.exit(0 if set(ids) == want and not dups else 1)
EOF

# (c) One change larger than the server's max_payload: 40 MB of chr(1), whose JSON is 240 MB
# ("\u0001" a byte). The sink halts (exit 3) naming the table, never acknowledging it, and
# never holds it rendered whole: the consumer's peak RSS (GNU time, the process exits) stays
# under LIMIT_MB. Rendering it whole before the size check, as the sink once did, took the
# peak past 280 MB.
[[ -x /usr/bin/time ]] || fail "needs GNU time as /usr/bin/time (regress/install_deps.sh installs it)"
kill -TERM "$consumer_pid"
wait "$consumer_pid" || true
consumer_pid=
big_lsn=$(rp_psql src -Atc "INSERT INTO big VALUES (-1, repeat(chr(1), 40 * 1024 * 1024)); SELECT pg_current_wal_insert_lsn()" | tail -1)
rc=0
/usr/bin/time -v -o "$work/time.txt" replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 \
	--sink "$(rp_nats_sink_url)" --nats-stream "$STREAM" --nats-subject-prefix "$PREFIX" \
	--max-memory 32MB --state-dir "$work/state" 2>"$work/oversize.err" || rc=$?
big_kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
printf 'oversize change: exit %d, consumer peak RSS %d MB (limit %d MB)\n' "$rc" $((big_kb / 1024)) "$LIMIT_MB"
((rc == 3)) || fail "the oversize change gave exit $rc, not 3 (a halt)"
grep -q 'table "public"."big" at commit LSN .* is larger than the NATS server.s max_payload' "$work/oversize.err" ||
	fail "the halt does not name the table and max_payload"
((big_kb / 1024 < LIMIT_MB)) || fail "the consumer's peak RSS $((big_kb / 1024)) MB passed $LIMIT_MB MB refusing one oversize change"
confirmed=$(rp_psql src -Atc "SELECT confirmed_flush_lsn >= '$big_lsn' FROM pg_replication_slots WHERE slot_name = '$SLOT'")
[[ $confirmed == f ]] || fail "the slot was confirmed past the change the sink refused"
status=0
printf 'PASS nats_memory: peak RSS %d MB under %d MB; %d rows once each; an oversize change halts at %d MB\n' \
	$((hwm_kb / 1024)) "$LIMIT_MB" $((ROWS + 1)) $((big_kb / 1024))
