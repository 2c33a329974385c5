#!/usr/bin/env bash
# A stream reader's memory is bounded like a slot consumer's (G5), and the transaction arrives
# whole (G1): a 200-row transaction of 512 kB values (about 100 MB) is written to a 3-replica
# stream by the NATS sink, then read back by a mirror reader (--source nats://) with
# --max-memory 32MB, so the assembled transaction spills (replicant_spills_total > 0) and
# what libnats holds unread stays bounded (RP_NATSRC_PENDING_BYTES, flow control). The reader's
# peak RSS must stay under 170 MB (the bound t/nats_memory.sh holds the writer to), and the
# destination must then equal the source row for row; a second reader started after the
# transaction, from a checkpoint in the middle of the stream, must still know the table (its
# relation description, published once at the stream's start, fetched by sequence).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

SLOT=nsrc_memory
STREAM=NSRC_MEM
ROWS=200
LIMIT_MB=170
work=$(mktemp -d /tmp/rp-nats-source-memory.XXXXXX)
status=1
writer_pid=
reader_pid=
cleanup() {
	local rc=$?
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" writer_pid reader_pid
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_source_memory "$work/*.err" 20 "$*"; }
metric() { curl -sf "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }

rp_cluster_start src
rp_cluster_start dst
rp_nats_start 3
rp_nats_build_tools "$work"
rp_psql src -c "CREATE TABLE big (id int PRIMARY KEY, v text)" -c "CREATE TABLE small (id int PRIMARY KEY, n int)" >/dev/null
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot
replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" --nats-stream "$STREAM" \
	--max-memory 32MB --state-dir "$work/wstate" 2>"$work/writer.err" &
writer_pid=$!
rp_psql src -c "INSERT INTO small VALUES (1, 1)" >/dev/null
# 512 kB of hex a row
rp_psql src -c "INSERT INTO big SELECT g, (SELECT string_agg(md5(random()::text || g || i), '') FROM generate_series(1, 16384) i) FROM generate_series(1, $ROWS) g" >/dev/null
end_lsn=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
rp_nats_wait_confirmed src "$SLOT" "$end_lsn" 300 "$writer_pid" || fail "the writer did not confirm $end_lsn within 300 s"
last=$(rp_nats_tool "$STREAM" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
[[ $last =~ ^[0-9]+$ ]] || fail "no last sequence for the stream"

port=$(rp_free_port)
replicant --source "$(rp_nats_sink_url)" --nats-stream "$STREAM" -S reader1 --state-dir "$work/r1" \
	--start --sink "postgres:$dst_CONNSTR" --create-tables --max-memory 32MB --metrics-port "$port" \
	2>"$work/reader1.err" &
reader_pid=$!
caught_up() {
	[[ $(rp_psql dst -Atc "SELECT coalesce(max(source_seq), 0) >= $last FROM replicant.checkpoint WHERE slot = 'reader1'" 2>/dev/null) == t ]]
}
rp_nats_wait_for 300 caught_up || fail "the reader did not apply sequence $last within 300 s"
hwm_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$reader_pid/status")
spilled=$(metric "$port" replicant_spills_total)
kill "$reader_pid"
wait "$reader_pid" || fail "the reader did not stop cleanly on SIGTERM"
reader_pid=
printf 'reader: peak RSS %d MB (limit %d MB), %s transactions spilled\n' $((hwm_kb / 1024)) "$LIMIT_MB" "${spilled:-?}"
((hwm_kb / 1024 < LIMIT_MB)) || fail "the reader's peak RSS $((hwm_kb / 1024)) MB passed $LIMIT_MB MB"
[[ ${spilled:-0} =~ ^[0-9]+$ ]] && ((spilled > 0)) || fail "the reader did not spill the transaction (spilled: ${spilled:-none})"

for t in big small; do
	a=$(rp_psql src -Atc "SELECT count(*), md5(string_agg(id || ':' || md5(x::text), ',' ORDER BY id)) FROM $t x")
	b=$(rp_psql dst -Atc "SELECT count(*), md5(string_agg(id || ':' || md5(x::text), ',' ORDER BY id)) FROM $t x")
	[[ $a == "$b" ]] || fail "table $t differs: source $a, destination $b"
done

# a second reader from a checkpoint in the middle: the file log of a reader stopped after
# the small transaction, resumed past the relation messages it read
rp_psql src -c "INSERT INTO small VALUES (2, 2)" >/dev/null
# the stream's last message a non-transactional logical message: a checkpoint at it moves the end
# LSN, not the dedup watermark, and must still be recognised when the reader starts again
end2=$(rp_psql src -Atc "SELECT pg_logical_emit_message(false, 'memtest', 'last')")
rp_nats_wait_confirmed src "$SLOT" "$end2" 300 "$writer_pid" || fail "the writer did not confirm $end2"
last2=$(rp_nats_tool "$STREAM" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
mkdir -p "$work/r2"
# its checkpoint: the library's file at the end of the big transaction (as a stdout reader leaves it)
replicant --source "$(rp_nats_sink_url)" --nats-stream "$STREAM" -S reader2 --state-dir "$work/r2" \
	--start --sink stdout --endpos "$last" >/dev/null 2>"$work/reader2a.err" || fail "the first stdout run failed"
replicant --source "$(rp_nats_sink_url)" --nats-stream "$STREAM" -S reader2 --state-dir "$work/r2" \
	--start --sink stdout --endpos "$last2" >"$work/reader2.out" 2>"$work/reader2b.err" || fail "the resumed stdout reader failed"
grep -c '"kind":"insert"' "$work/reader2.out" | grep -qx 1 || fail "the resumed reader did not write exactly the one new row"
grep -c '"prefix":"memtest"' "$work/reader2.out" | grep -qx 1 || fail "the resumed reader did not write the logical message once"
# its checkpoint is at last2 now (the message): --endpos last2 again has nothing to read and must
# end (exit 0), neither refuse the checkpoint nor wait for messages after it (the limit only keeps
# a broken build from hanging the suite)
timeout 120 replicant --source "$(rp_nats_sink_url)" --nats-stream "$STREAM" -S reader2 --state-dir "$work/r2" \
	--start --sink stdout --endpos "$last2" >"$work/reader2c.out" 2>"$work/reader2c.err" ||
	fail "a reader whose checkpoint is at --endpos did not end (exit $?)"
[[ ! -s $work/reader2c.out ]] || fail "a reader whose checkpoint is at --endpos wrote something"
grep -q '"table":"small"' "$work/reader2.out" || fail "the resumed reader's row does not name its table"
status=0
printf 'PASS nats_source_memory: a 100 MB transaction read from the stream with peak RSS %d MB under %d MB, spilled, applied whole; a reader resumed past the relation message still knew the table\n' \
	$((hwm_kb / 1024)) "$LIMIT_MB"
