#!/usr/bin/env bash
# shellcheck disable=SC2154 # NAME_* variables are set by rp_cluster_start (lib.sh)
# regress/t/nats_source_leaderless.sh: a stream reader resumes across a stream without a leader.
#
# While a stream's group has no leader, every member answers STREAM.INFO from its own store
# (nats-server 2.9); a member that was down holds fewer messages than the stream. A reader that
# took that answer for the stream's end halted "identity" (exit 3: its checkpoint lay past the
# end) on a stream that was only electing a leader: CI saw it after a leader's restart in
# t/nats_fanout.sh. Here the state is made on purpose, not waited for:
#   1. the NATS sink writes T1..T5 (three inserts each) into the R3 stream LL; node A (not the
#      stream's leader) is stopped; the sink writes T6..T10 through the other two nodes
#   2. a reader (file log) reads to T8's last message through the other two: its checkpoint is
#      past everything A holds
#   3. the other two nodes stop, A starts again alone: the group has no leader, and A answers
#      for the stream with T1..T5
#   4. the reader starts again through A alone, to T10's last message. It must not halt: it
#      says the stream has no leader and asks again (the test waits for that line, so the
#      state of step 3 was really seen), and keeps running
#   4b. the writer (the NATS sink) starts again through A alone with T11 to write: its resume
#      point is the stream's tail, and A's tail is behind what the slot confirmed; it must wait
#      too, not halt on a "gap" between the slot and the stream
#   5. the two nodes start again: a leader is elected, the reader checks its checkpoint against
#      the leader's answer, delivers T9 and T10 and exits 0; the log holds T1..T10's 30 rows,
#      each once; the writer appends T11, and the stream holds T1..T11's rows each once
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-nats-leaderless.XXXXXX)
chmod 755 "$work"
status=1
writer_pid=
reader_pid=
cleanup() {
	local rc=$?
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" writer_pid reader_pid
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_source_leaderless "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_nats_start 3
rp_nats_build_tools "$work"
conn=$(rp_conninfo src)
rp_psql src -c "CREATE TABLE h (id int PRIMARY KEY, txn int NOT NULL, v text)" >/dev/null
replicant -d "$conn" -S ll_cdc --create-slot

# write FIRST LAST NODE...: transactions FIRST..LAST (three inserts into h each, id = 10 * k + i),
# written into LL by the NATS sink connected to the nodes named, until the slot confirmed them
write() {
	local first=$1 last=$2 k fence
	shift 2
	# the fence is read inside the last transaction: the slot passes it when that commit is confirmed
	for ((k = first; k <= last; k++)); do
		fence=$(rp_psql src -At -c "BEGIN" -c "INSERT INTO h VALUES ($((10 * k + 1)), $k, 'a')" \
			-c "INSERT INTO h VALUES ($((10 * k + 2)), $k, 'b')" \
			-c "INSERT INTO h VALUES ($((10 * k + 3)), $k, 'c')" -c "SELECT pg_current_wal_insert_lsn()" -c "COMMIT")
	done
	replicant -d "$conn" -S ll_cdc --start --sink "$(rp_nats_sink_url "$@")" --nats-stream LL \
		--nats-subject-prefix ll --state-dir "$work/st-writer" 2>>"$work/writer.err" &
	writer_pid=$!
	rp_nats_wait_confirmed src ll_cdc "$fence" 120 "$writer_pid" || fail "the writer did not confirm T$first..T$last ($fence)"
	kill -TERM "$writer_pid"
	wait "$writer_pid" || fail "the writer, stopped by SIGTERM, failed"
	writer_pid=
}

# last_seq_of K: the sequence of Tk's last message in LL (read through the running nodes)
last_seq_of() {
	rp_nats_dump LL "$work/ll.jsonl" || fail "stream LL could not be dumped"
	python3 - "$work/ll.jsonl" "$1" <<'PY'
import json, sys
k, last = int(sys.argv[2]), 0
for line in open(sys.argv[1]):
    m = json.loads(line)
    if (m.get("headers") or {}).get("Replicant-Op") == "insert" and json.loads(m["data"])["new"]["txn"] == k:
        last = max(last, m["seq"])
print(last)
PY
}

# ---- 1. T1..T5 on three nodes, T6..T10 with node A down
write 1 5
leader=$(rp_nats_wait_stream_leader LL 60) || fail "stream LL has no leader after T1..T5"
a=$((leader % 3 + 1))
others=()
for i in 1 2 3; do ((i == a)) || others+=("$i"); done
T5_LAST=$(last_seq_of 5)
rp_nats_stop "$a"
RP_NATS_URLS=$(rp_nats_urls "${others[@]}")
write 6 10 "${others[@]}"
T8_LAST=$(last_seq_of 8)
T10_LAST=$(last_seq_of 10)
printf 'stream LL: T5 ends at %s (node n%s stopped there), T8 at %s, T10 at %s; leader n%s\n' \
	"$T5_LAST" "$a" "$T8_LAST" "$T10_LAST" "$leader"
((T5_LAST > 0 && T8_LAST > T5_LAST && T10_LAST > T8_LAST)) || fail "the stream's sequences are not in transaction order"

# ---- 2. a reader to T8 through the two nodes that hold everything
rc=0
timeout 120 replicant --source "$(rp_nats_sink_url "${others[@]}")" --nats-stream LL -S ll_reader \
	--state-dir "$work/st-reader" --start --sink "file:$work/r.log" --endpos "$T8_LAST" 2>"$work/reader-1.err" || rc=$?
((rc == 0)) || fail "the reader to T8 exited with $rc"

# ---- 3. the two nodes down, A alone with T1..T5
for i in "${others[@]}"; do rp_nats_stop "$i"; done
rp_nats_restart "$a"

# waits WHO PIDVAR ERR: process WHO (pid in the variable PIDVAR, stderr ERR) must be running and
# have said the stream has no leader (so the state of step 3 was seen): it must wait, not halt
waits() {
	local who=$1 pidvar=$2 err=$3 rc=0
	said() { ! kill -0 "${!pidvar}" 2>/dev/null || grep -q 'NATS stream "LL" has no leader' "$err"; }
	rp_nats_wait_for 180 said || fail "the $who never saw node n$a answer for LL alone within 180 s (the state this test needs)"
	if ! kill -0 "${!pidvar}" 2>/dev/null; then
		wait "${!pidvar}" || rc=$?
		printf -v "$pidvar" ''
		fail "the $who through node n$a alone exited with $rc while the stream had no leader: $(tail -n 2 "$err" | cut -c 1-240)"
	fi
	printf 'node n%s alone: the %s waits: %s\n' "$a" "$who" "$(grep -m 1 'has no leader' "$err" | cut -c 1-200)"
}

# ---- 4. the reader again, through A alone: it must wait, not halt
: >"$work/reader-2.err"
replicant --source "$(rp_nats_sink_url "$a")" --nats-stream LL -S ll_reader --state-dir "$work/st-reader" \
	--start --sink "file:$work/r.log" --endpos "$T10_LAST" 2>"$work/reader-2.err" &
reader_pid=$!
waits reader reader_pid "$work/reader-2.err"

# ---- 4b. the writer too, through A alone, with T11 to write: its resume point is the stream's
# tail, and a tail read from A's T1..T5 is behind what the slot confirmed (T10): it must wait
# for a leader, not halt on a gap between the slot and the stream
fence=$(rp_psql src -At -c "BEGIN" -c "INSERT INTO h VALUES (111, 11, 'a')" -c "INSERT INTO h VALUES (112, 11, 'b')" \
	-c "INSERT INTO h VALUES (113, 11, 'c')" -c "SELECT pg_current_wal_insert_lsn()" -c "COMMIT")
: >"$work/writer-2.err"
replicant -d "$conn" -S ll_cdc --start --sink "$(rp_nats_sink_url "$a")" --nats-stream LL \
	--nats-subject-prefix ll --state-dir "$work/st-writer" 2>"$work/writer-2.err" &
writer_pid=$!
waits writer writer_pid "$work/writer-2.err"

# ---- 5. the two nodes back: a leader, and the reader goes on to T10
for i in "${others[@]}"; do rp_nats_restart "$i"; done
RP_NATS_URLS=$(rp_nats_urls)
deadline=$((SECONDS + 300))
while kill -0 "$reader_pid" 2>/dev/null; do
	((SECONDS < deadline)) || fail "the reader did not reach T10 within 300 s of the cluster's return"
	sleep 0.2
done
rc=0
wait "$reader_pid" || rc=$?
reader_pid=
((rc == 0)) || fail "the reader exited with $rc after the cluster's return"
rp_nats_wait_confirmed src ll_cdc "$fence" 300 "$writer_pid" || fail "the writer did not confirm T11 ($fence) after the cluster's return"
kill -TERM "$writer_pid"
wait "$writer_pid" || fail "the writer, stopped by SIGTERM, failed"
writer_pid=
rp_nats_dump LL "$work/ll.jsonl" || fail "stream LL could not be dumped"
# once WHAT FILE K: the inserts in FILE (a stream dump, or a file log) are T1..Tk's rows, each once
once() {
	python3 - "$@" <<'PY'
import collections, json, sys
what, path, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids = collections.Counter()
for line in open(path):
    m = json.loads(line)
    if what == "stream" and (m.get("headers") or {}).get("Replicant-Op") == "insert":
        ids[json.loads(m["data"])["new"]["id"]] += 1
    elif what == "log" and m.get("kind") == "insert":
        ids[m["new"]["id"]] += 1
want = {10 * t + i for t in range(1, k + 1) for i in (1, 2, 3)}
dup = sum(1 for n in ids.values() if n > 1)
lost, extra = len(want - set(ids)), len(set(ids) - want)
print(f"{what}: {sum(ids.values())} rows, dup={dup} loss={lost} extra={extra}")
sys.exit(0 if dup == lost == extra == 0 else 1)
PY
}
once stream "$work/ll.jsonl" 11 || fail "stream LL does not hold T1..T11's rows each once"
once log "$work/r.log" 10 || fail "the log does not hold T1..T10's rows each once"

status=0
printf 'PASS nats_source_leaderless: a reader whose checkpoint lies past what a lone leaderless replica holds and a writer whose resume point lies past it waited for a leader instead of halting, then delivered and appended the rest: dup = 0, loss = 0 in the log and the stream (%ds)\n' \
	"$((SECONDS - started))"
