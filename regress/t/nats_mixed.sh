#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2119 # NAME_* variables are set by rp_cluster_start (lib.sh); rp_nats_sink_url: all nodes
# regress/t/nats_mixed.sh: the JetStream sink carries a mixed workload exactly once, and no
# row value reaches a log line or a metric.
#
# Proves G1 (effect-once, commit order) and G4 (value-free) for --sink nats:// against a real
# 3-node JetStream cluster (regress/nats.sh): two workers (small mixed transactions with
# rolled-back subtransactions and aborted transactions; 500-1500 row transactions) over three
# tables, two with hostile identifiers (dots, spaces, '*', '>', '%', quotes, non-ASCII) and
# hostile values (regress/tools/nats_workload.sql); a canary value in text, jsonb and a logical
# message; a TRUNCATE; three transactional logical messages; ALTER TABLE ADD COLUMN (a new
# relation message). The stream is created by the sink with the defaults (name
# REPLICANT_<slot>, prefix replicant.<slot>, 3 replicas), and its config is checked. Then
# regress/check_nats.py reads the whole stream back (regress/tools/nats_dump.c, leader-routed
# gets) and compares it with the audit: every change once, in commit order, headers, subjects
# escaped, Nats-Msg-Id, contiguous Replicant-Index, Replicant-Last, the slot confirmed no
# further than the stream holds. Last, the consumer's stderr (-v) and its /metrics page must
# not hold the canary, while the stream must (so the search could find it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

CANARY='CANARY-5eb63bbe'
CANARY_SQL="'CANARY-' || '5eb63bbe'"
SLOT=nats_mixed
STREAM=REPLICANT_$SLOT
PREFIX=replicant.$SLOT
work=$(mktemp -d /tmp/rp-nats-mixed.XXXXXX)
status=1
consumer_pid=
workers=()
cleanup() {
	local rc=$?
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" consumer_pid workers
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_mixed "$work/consumer-*.err" 20 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_nats_start 3
rp_nats_build_tools "$work"
rp_nats_load_workload src "$SLOT"
rp_psql src -c "CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$" >/dev/null
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

port=$(rp_free_port)
replicant -v -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" \
	--state-dir "$work/state" --metrics-port "$port" 2>"$work/consumer-1.err" &
consumer_pid=$!

# audited rows with the canary in a text and a jsonb column
rp_psql src >/dev/null <<'SQL'
WITH i AS (INSERT INTO public.t_a (id, ver, name) SELECT g, 0, canary() || '-' || g FROM generate_series(1, 20) g RETURNING id, ver)
INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), 'public.t_a', id, 'I', ver FROM i;
WITH i AS (INSERT INTO "we.ird *>%"."tâble.x>y*" (id, ver, doc) SELECT g, 0, jsonb_build_object('s', canary()) FROM generate_series(1, 20) g RETURNING id, ver)
INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), 'we.ird *>%.tâble.x>y*', id, 'I', ver FROM i;
SQL
rp_psql src -c "CALL workload(1, false, 150)" >"$work/worker1.out" 2>&1 &
workers+=($!)
rp_psql src -c "CALL workload(2, true, 4)" >"$work/worker2.out" 2>&1 &
workers+=($!)
for p in "${workers[@]}"; do
	wait "$p" || { cat "$work"/worker*.out; fail "a workload worker failed"; }
done
workers=()
# a schema change (a new relation message), a truncate, transactional logical messages
rp_psql src -c 'ALTER TABLE public.t_a ADD COLUMN "added col" text' \
	-c "BEGIN; SELECT pg_logical_emit_message(true, 'nats_test', canary()); SELECT pg_logical_emit_message(true, 'nats_test', 'two'); COMMIT;" \
	-c "SELECT pg_logical_emit_message(true, 'nats_test', 'three')" \
	-c 'TRUNCATE "Ünï cödé"."sp ace"' >/dev/null
rp_psql src -c "CALL workload(1, false, 30)" >>"$work/worker1.out" 2>&1 || { cat "$work/worker1.out"; fail "the workload failed"; }
fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_lsn()")
rp_nats_wait_confirmed src "$SLOT" "$fence" 300 "$consumer_pid" ||
	fail "the slot did not confirm $fence (all of the workload) within 300 s (the consumer is $(kill -0 "$consumer_pid" 2>/dev/null && echo running || echo gone))"

# Idle WAL: a CHECKPOINT writes WAL that decodes to no transaction. The sink records the idle
# position in the stream (a position message, at most once per status interval), so the slot
# confirms it: a quiet database in a busy cluster holds no WAL for ever. And a fast shutdown
# of the source completes: its walsender waits until the client confirms everything it sent
# (the shutdown checkpoint included), and a writer that never confirmed past its last
# transaction held it there for good (the 60 s wait below failed, the server still up).
rp_psql src -c "CHECKPOINT" >/dev/null
idle=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
rp_nats_wait_confirmed src "$SLOT" "$idle" 120 "$consumer_pid" ||
	fail "the slot did not confirm the idle position $idle (WAL after the last transaction) within 120 s"
rc=0
PGCTLTIMEOUT=60 "$RP_BINDIR/pg_ctl" -D "$src_DATA" -m fast -w stop >"$work/stop.out" 2>&1 || rc=$?
if ((rc != 0)); then
	kill -KILL "$consumer_pid" 2>/dev/null || true  # lets the walsender, and so the server, go
	"$RP_BINDIR/pg_ctl" -D "$src_DATA" -m fast -w stop >/dev/null 2>&1 || true
	fail "a fast shutdown of the source with the writer connected did not end within 60 s: $(tail -n 1 "$work/stop.out")"
fi
"$RP_BINDIR/pg_ctl" -D "$src_DATA" -l "$src_LOG" -w -t 60 start >/dev/null

curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "no metrics on port $port"
kill -TERM "$consumer_pid"
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the consumer stopped by SIGTERM exited with $rc"

# the stream as the sink created it
rp_nats_tool "$STREAM" info >"$work/info.json"
python3 - "$work/info.json" "$PREFIX" <<'PY' || fail "the stream's config is not the contract's: $(cat "$work/info.json")"
import json, sys
i = json.load(open(sys.argv[1]))
ok = (i["exists"] and i["subjects"] == [sys.argv[2] + ".>"] and i["deny_delete"] and i["deny_purge"]
      and i["retention"] == 0 and i["storage"] == 0 and i["replicas"] == 3)
sys.exit(0 if ok else 1)
PY

rp_nats_check src "$SLOT" "$STREAM" "$PREFIX" "$work" --expect-op truncate=1 --expect-op message=3 >"$work/check.out" ||
	{ cat "$work/check.out"; fail "the stream does not match what was committed"; }
cat "$work/check.out"
# relation messages: at least one per table, and t_a's again after ADD COLUMN
python3 - "$work/stream.jsonl" <<'PY' || fail "relation messages missing (need 2 for public.t_a, 1 for each other table)"
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = m.get("headers", {})
    if h.get("Replicant-Op") == "relation":
        c[h.get("Replicant-Table")] += 1
sys.exit(0 if c["public.t_a"] >= 2 and c["we.ird *>%.tâble.x>y*"] >= 1 and c["Ünï cödé.sp ace"] >= 1 else 1)
PY
# the escaped subjects are really there
grep -qF '"subject":"replicant.nats_mixed.we%2Eird%20%2A%3E%25.t%C3%A2ble%2Ex%3Ey%2A"' "$work/stream.jsonl" ||
	fail "no message on the escaped subject of \"we.ird *>%\".\"tâble.x>y*\""

# A reader of the stream to its end, --endpos L: the messages after the fence are the writer's
# position messages (the CHECKPOINT's and the shutdown's idle WAL), read right after the
# fence's transaction, while its batch is still on the way. The reader ends with its checkpoint
# at L all the same (they are recorded once the batch is delivered: without that it stopped at
# the fence's sequence), and a second run with --endpos L ends at once and writes nothing.
L=$(sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p' "$work/info.json")
last_op=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["headers"].get("Replicant-Op", "?"))' "$work/stream.jsonl")
[[ $last_op == position ]] || fail "the stream's last message (sequence $L) is a $last_op, not a position message: the check below would prove nothing"
reader_ck() { grep -a '^{"kind":"checkpoint"' "$work/reader.log" | tail -n 1 | sed -n 's/.*"source_seq":\([0-9]*\).*/\1/p'; }
for run in 1 2; do
	rc=0
	size=$(stat -c %s "$work/reader.log" 2>/dev/null || echo 0)
	replicant --source "$(rp_nats_sink_url)" --nats-stream "$STREAM" -S mixed_reader --start \
		--state-dir "$work/st-reader" --sink "file:$work/reader.log" --endpos "$L" 2>"$work/reader-$run.err" || rc=$?
	((rc == 0)) || fail "the stream reader (run $run) with --endpos $L exited with $rc: $(tail -n 2 "$work/reader-$run.err")"
	[[ $(reader_ck) == "$L" ]] || fail "the stream reader (run $run) with --endpos $L ended with its checkpoint at sequence $(reader_ck), not $L"
	((run == 1)) || [[ $(stat -c %s "$work/reader.log") == "$size" ]] || fail "the stream reader's second run with --endpos $L (its checkpoint at $L) wrote to its log"
done

# G4: the canary is in the stream (the search can find it) and in no log line or metric
grep -qF "$CANARY" "$work/stream.jsonl" || fail "the canary is not in the stream: the search below would prove nothing"
grep -q '^replicant_transactions_total [1-9]' "$work/metrics.txt" || fail "the metrics page shows no transaction"
searched=("$work"/consumer-*.err "$work"/reader-*.err "$work/metrics.txt")
while IFS= read -r -d '' f; do searched+=("$f"); done < <(find "$work/state" -type f -print0 2>/dev/null)
leaks=$(grep -alF -e "$CANARY" -e 5eb63bbe "${searched[@]}" || true)
[[ -z $leaks ]] || { grep -aF -e 5eb63bbe "${searched[@]}" | cut -c 1-300 | head -n 5; fail "the canary leaked into: $leaks"; }

status=0
printf 'PASS nats_mixed: hostile identifiers and values, truncate, messages, schema change: exactly once in commit order on a 3-replica stream (G1); canary in none of %d files (G4) (%ds)\n' \
	"${#searched[@]}" "$((SECONDS - started))"
