#!/usr/bin/env bash
# shellcheck disable=SC2154 # NAME_* variables are set by rp_cluster_start (lib.sh)
# regress/t/nats_source_hole.sh: a reader of a JetStream stream fails closed on a hole.
#
# Proves the stream reader's fail-closed checks (issue 15): each reader below halts with exit 3,
# its stderr naming the stream and the place (a sequence or a commit LSN), and nothing of the
# damaged transaction (or after it) reaches its sink (a file log). The writer (NATS sink) puts
# ten transactions T1..T10 of three inserts each (rows carry their transaction's number) into
# stream HA; the damaged streams are copies of HA made with regress/tools/nats_dump.c (copy
# keeps subject tokens, headers and payloads, maps Replicant-Relation-Seq) into streams that
# allow delete and purge:
#   (a) hole    every message, then T5's second message deleted (a missing sequence)
#   (b) cut     T5's last message (Replicant-Last) left out, T6 follows (cut short)
#   (b2) index  T5's second message left out (Replicant-Index 0, 2)
#   (f) chain   T5 left out whole (T6's Replicant-Prev-End-Lsn is not T4's end)
#   (c) purged  T1..T4 read to the end by a reader (exit 0), then T5..T10 appended and every
#               message below T7's first purged: the stream's first sequence is above the
#               reader's checkpoint + 1
#   (d) other   a reader that read HA up to T4 restarted on an exact copy of HA: its checkpoint
#               is of another stream; and a mirror whose checkpoint follows a slot pointed at HA
#   (e) system  T1..T4 of HA, then a second source system's transactions (cluster src2, its own
#               writer and stream): another system id
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-nats-hole.XXXXXX)
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
fail() { rp_e2e_fail nats_source_hole "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start src2
rp_cluster_start dst
rp_nats_start 3
rp_nats_build_tools "$work"

# write_stream NAME STREAM PREFIX FIRST LAST: transactions FIRST..LAST on cluster NAME, each
# three inserts into h (id = 10 * k + i, txn = k), written into STREAM by the NATS sink
write_stream() {
	local name=$1 stream=$2 prefix=$3 k fence conn
	conn=$(rp_conninfo "$name")
	rp_psql "$name" -c "CREATE TABLE h (id int PRIMARY KEY, txn int NOT NULL, v text)" >/dev/null
	replicant -d "$conn" -S hole_cdc --create-slot
	# the fence is read inside the last transaction: the slot passes it when that commit is confirmed
	for ((k = $4; k <= $5; k++)); do
		fence=$(rp_psql "$name" -At -c "BEGIN" -c "INSERT INTO h VALUES ($((10 * k + 1)), $k, 'a')" \
			-c "INSERT INTO h VALUES ($((10 * k + 2)), $k, 'b')" \
			-c "INSERT INTO h VALUES ($((10 * k + 3)), $k, 'c')" -c "SELECT pg_current_wal_insert_lsn()" -c "COMMIT")
	done
	replicant -d "$conn" -S hole_cdc --start --sink "$(rp_nats_sink_url)" --nats-stream "$stream" \
		--nats-subject-prefix "$prefix" --state-dir "$work/st-w-$stream" 2>"$work/writer-$stream.err" &
	writer_pid=$!
	rp_nats_wait_confirmed "$name" hole_cdc "$fence" 120 "$writer_pid" || fail "the writer of $stream did not confirm $fence"
	kill -TERM "$writer_pid"
	wait "$writer_pid" || fail "the writer of $stream, stopped by SIGTERM, failed"
	writer_pid=
}
write_stream src HA ha 1 10
write_stream src2 HE2 he2 101 103
rp_nats_dump HA "$work/ha.jsonl" || fail "stream HA could not be dumped"

# tx K FIELD: of transaction Tk in HA: seqs (its data messages' sequences, in index order),
# first, last, lsn, end, prev
tx() {
	python3 - "$work/ha.jsonl" "$1" "$2" <<'PY'
import json, sys
k, field = int(sys.argv[2]), sys.argv[3]
seqs, h = [], None
for line in open(sys.argv[1]):
    m = json.loads(line)
    hd = m.get("headers") or {}
    if hd.get("Replicant-Op") != "insert":
        continue
    if json.loads(m["data"])["new"]["txn"] != k:
        continue
    seqs.append((int(hd["Replicant-Index"]), m["seq"]))
    h = hd
seqs = [s for _, s in sorted(seqs)]
print({"seqs": " ".join(map(str, seqs)), "first": seqs[0], "last": seqs[-1],
       "lsn": h["Replicant-Lsn"], "end": h["Replicant-End-Lsn"],
       "prev": h["Replicant-Prev-End-Lsn"]}[field])
PY
}
HA_LAST=$(rp_nats_tool HA info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
read -r -a T5 <<<"$(tx 5 seqs)"
((${#T5[@]} == 3)) || fail "T5 is not three messages in HA: ${T5[*]}"
T5_LSN=$(tx 5 lsn)
printf 'stream HA: %s messages; T5 at sequences %s, commit %s\n' "$HA_LAST" "${T5[*]}" "$T5_LSN"

# plant STREAM PREFIX FROM TO [SKIP...]: a stream that allows delete and purge, holding HA's
# messages FROM..TO but SKIP
plant() {
	local stream=$1 prefix=$2
	shift 2
	rp_nats_tool "$stream" create-open "$prefix" 3
	rp_nats_tool "$stream" copy HA ha "$prefix" "$@" >"$work/$stream.map"
}

runs=0
# read STREAM READER LOG [ARG...]: a reader of STREAM (-S READER, its own state dir) into the file
# log LOG, with --endpos the stream's last sequence, until it exits (it must within 120 s);
# its status in rc, its stderr in $work/READER-N.err (path in err)
read_stream() {
	local stream=$1 reader=$2 log=$3 last deadline
	shift 3
	runs=$((runs + 1))
	last=$(rp_nats_tool "$stream" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
	err=$work/$reader-$runs.err
	replicant --source "$(rp_nats_sink_url)" --nats-stream "$stream" -S "$reader" \
		--state-dir "$work/st-$reader" --start --sink "file:$log" --endpos "${last:-0}" "$@" 2>"$err" &
	reader_pid=$!
	deadline=$((SECONDS + 120))
	while kill -0 "$reader_pid" 2>/dev/null; do
		((SECONDS < deadline)) || fail "reader $reader of $stream neither halted nor finished within 120 s"
		sleep 0.1
	done
	rc=0
	wait "$reader_pid" || rc=$?
	reader_pid=
}

# txns LOG: the transaction numbers whose rows are in the log, sorted, unique
txns() {
	[[ -s $1 ]] || return 0
	python3 -c '
import json, sys
seen = set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") in ("insert", "update", "delete"):
        seen.add((r.get("new") or r.get("key"))["txn"])
print(" ".join(map(str, sorted(seen))))' "$1"
}

# halted CASE STREAM PATTERN WHAT: the last read halted with exit 3, its stderr names the
# stream (NATS stream "S", or nats:S as a checkpoint's source) and matches the extended regex PATTERN (WHAT says what it should have named)
halted() {
	((rc == 3)) || fail "($1) the reader of $2 exited with $rc, not 3 (halt): $(tail -n 3 "$err")"
	grep -qE "NATS stream \"$2\"|nats:$2\b" "$err" || fail "($1) the halt does not name stream $2: $(tail -n 3 "$err")"
	grep -qE -- "$3" "$err" || fail "($1) the halt does not name $4: $(tail -n 3 "$err")"
	printf '(%s) halted (exit 3): %s\n' "$1" "$(grep -m 1 -E "NATS stream \"$2\"|nats:$2\b" "$err" | cut -c 1-240)"
}

# nothing_from CASE LOG K: no row of Tk or later in LOG
nothing_from() {
	local t
	for t in $(txns "$2"); do
		((t < $3)) || fail "($1) the log holds rows of T$t (the damage is at T$3): nothing from it on may be delivered"
	done
}

# ---- (a) a message deleted in the middle of T5
plant HOLE_A hoa 1 "$HA_LAST"
rp_nats_tool HOLE_A delete "${T5[1]}"
read_stream HOLE_A hole_a "$work/a.log"
halted a HOLE_A "\\b${T5[1]}\\b" "the missing sequence ${T5[1]}"
nothing_from a "$work/a.log" 5

# ---- (b) T5's last message missing, T6 follows
plant HOLE_B hob 1 "$HA_LAST" "${T5[2]}"
read_stream HOLE_B hole_b "$work/b.log"
halted b HOLE_B "$T5_LSN" "T5's commit LSN $T5_LSN"
nothing_from b "$work/b.log" 5

# ---- (b2) T5's second message missing: its indexes are 0, 2
plant HOLE_I hoi 1 "$HA_LAST" "${T5[1]}"
read_stream HOLE_I hole_i "$work/i.log"
halted b2 HOLE_I "$T5_LSN" "T5's commit LSN $T5_LSN"
nothing_from b2 "$work/i.log" 5

# ---- (f) T5 missing whole: the chain breaks at T6
plant HOLE_F hof 1 "$HA_LAST" "${T5[@]}"
T6_LSN=$(tx 6 lsn)
T4_END=$(tx 4 end)
read_stream HOLE_F hole_f "$work/f.log"
halted f HOLE_F "$T6_LSN|$T4_END|$(tx 6 prev)" "T6's commit LSN $T6_LSN or the chain's end LSNs"
nothing_from f "$work/f.log" 5

# ---- (c) messages purged below the reader's checkpoint
T4_LAST=$(tx 4 last)
plant HOLE_C hoc 1 "$T4_LAST"
read_stream HOLE_C hole_c "$work/c.log"
((rc == 0)) || fail "(c) the reader of T1..T4 exited with $rc: $(tail -n 3 "$err")"
[[ $(txns "$work/c.log") == "1 2 3 4" ]] || fail "(c) the first read delivered T$(txns "$work/c.log"), not T1..T4"
rp_nats_tool HOLE_C copy HA ha hoc "$((T4_LAST + 1))" "$HA_LAST" >>"$work/HOLE_C.map"
T7_NEW=$(awk -v s="$(tx 7 first)" '$1 == s { print $2 }' "$work/HOLE_C.map")
rp_nats_tool HOLE_C purge-below "$T7_NEW"
first=$(rp_nats_tool HOLE_C info | sed -n 's/.*"first_seq":\([0-9]*\).*/\1/p')
((first == T7_NEW)) || fail "(c) HOLE_C starts at $first after the purge below $T7_NEW"
read_stream HOLE_C hole_c "$work/c.log"
halted c HOLE_C "\\b$first\\b" "the stream's first sequence $first"
[[ $(txns "$work/c.log") == "1 2 3 4" ]] || fail "(c) after the halt the log holds T$(txns "$work/c.log"), not T1..T4"

# ---- (d) a checkpoint of another stream (same content), and one of a slot
plant HOLE_D hod 1 "$HA_LAST"
rp_nats_tool HA info >/dev/null
runs=$((runs + 1))
err=$work/hole_d-$runs.err
rc=0
replicant --source "$(rp_nats_sink_url)" --nats-stream HA -S hole_d --state-dir "$work/st-hole_d" \
	--start --sink "file:$work/d.log" --endpos "$T4_LAST" 2>"$err" || rc=$?
((rc == 0)) || fail "(d) the reader of HA up to T4 exited with $rc: $(tail -n 3 "$err")"
[[ $(txns "$work/d.log") == "1 2 3 4" ]] || fail "(d) the first read delivered T$(txns "$work/d.log"), not T1..T4"
read_stream HOLE_D hole_d "$work/d.log"
halted d HOLE_D '"HA"|nats:HA' "the checkpoint's stream HA"
[[ $(txns "$work/d.log") == "1 2 3 4" ]] || fail "(d) after the halt the log holds T$(txns "$work/d.log"), not T1..T4"
# a mirror that follows a slot of src, then pointed at the stream with the same -S
rp_psql dst -c "CREATE DATABASE m" >/dev/null
replicant -d "$src_CONNSTR" -S hole_m --create-slot
# (one implicit transaction: the LSN is read before its commit)
lsn=$(rp_psql src -Atc "INSERT INTO h VALUES (1001, 100, 'after'); SELECT pg_current_wal_insert_lsn()")
rc=0
replicant -d "$src_CONNSTR" -S hole_m --start --sink "postgres:$(rp_conninfo dst m)" --create-tables \
	--state-dir "$work/st-hole_m" -E "$lsn" 2>"$work/hole_m-slot.err" || rc=$?
((rc == 0)) || fail "(d) the mirror from slot hole_m exited with $rc: $(tail -n 3 "$work/hole_m-slot.err")"
before=$(rp_psql dst -d m -Atc "SELECT count(*) FROM h" 2>&1 || true)
[[ $before == 1 ]] || fail "(d) the mirror from slot hole_m does not hold its one row: $before"
runs=$((runs + 1))
err=$work/hole_m-$runs.err
rc=0
replicant --source "$(rp_nats_sink_url)" --nats-stream HA -S hole_m --start --state-dir "$work/st-hole_m" \
	--sink "postgres:$(rp_conninfo dst m)" --create-tables --endpos "$HA_LAST" 2>"$err" || rc=$?
halted d-slot HA 'slot' "that the checkpoint follows a slot"
[[ $(rp_psql dst -d m -Atc "SELECT count(*) FROM h") == "$before" ]] || fail "(d) the mirror took rows from the stream after the halt"

# ---- (e) another system's messages after T4
rp_nats_tool HOLE_E create-open hoe 3
rp_nats_tool HOLE_E copy HA ha hoe 1 "$T4_LAST" >"$work/HOLE_E.map"
E2_LAST=$(rp_nats_tool HE2 info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
rp_nats_tool HOLE_E copy HE2 he2 hoe 1 "$E2_LAST" >>"$work/HOLE_E.map"
read_stream HOLE_E hole_e "$work/e.log"
halted e HOLE_E '[Ss]ystem' "the system id"
nothing_from e "$work/e.log" 100

# ---- (g) a stream the sink never writes (two subjects): refused as a config error (exit 1)
rp_nats_tool HOLE_G create-open "hg1,hg2" 3
rc=0
timeout 120 replicant --source "$(rp_nats_sink_url)" --nats-stream HOLE_G -S hole_g --state-dir "$work/st-hole_g" \
	--start --sink "file:$work/g.log" --no-loop 2>"$work/hole_g.err" || rc=$?
((rc == 1)) || fail "(g) a reader of a stream with two subjects exited $rc, not 1"
grep -q 'NATS stream "HOLE_G" has 2 subjects' "$work/hole_g.err" || fail "(g) the refusal does not name the stream and its 2 subjects: $(tail -1 "$work/hole_g.err")"
printf '(g) refused (exit 1): %s\n' "$(grep -m1 'error' "$work/hole_g.err")"

status=0
printf 'PASS nats_source_hole: a deleted sequence, a transaction cut short, an index gap, a broken chain, a purge below the checkpoint, a checkpoint of another stream and of a slot, another system id: each halted with exit 3 naming it, nothing of the damage delivered; a stream of two subjects refused (%ds)\n' \
	"$((SECONDS - started))"
