#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_dlq_drop.sh: with no dead-letter file (--dead-letter-file=none), an
# oversize snapshot row is dropped, counted and warned of, and the dump stays whole.
#
# A table of 60 rows, 25 of them larger than --max-record-bytes, each holding a canary; a
# --snapshot into the file sink with --dead-letter-file=none and --metrics-port:
#   - the dump has 35 row frames and 25 oversize stubs, and `replicant verify-snapshot` calls
#     it complete (seqs whole);
#   - no dead-letter file exists (neither the default STATE-DIR/SLOT.dead-letter nor "none");
#   - /metrics: replicant_dead_letters_dropped_total{reason="too_large"} 25,
#     replicant_snapshot_rows_oversize_total{store="public.big_t"} 25, 0 for the other table;
#   - the warning names the table and a count, at most once every 10 s (so at most
#     1 + seconds/10 lines for the run), and no row value reaches stderr (G4).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snapshot-dlq.XXXXXX)
status=1
consumer_pid=
cleanup() { rp_e2e_cleanup $? consumer_pid; }
trap cleanup EXIT
fail() { rp_e2e_fail snapshot_dlq_drop "$work/*.err" 5 "$*"; }
command -v curl >/dev/null || fail "curl is not installed (regress/install_deps.sh installs it)"

CANARY_SQL="'CANARY-' || '7d1c0e55'"
rp_cluster_start src
rp_psql src -q <<SQL
CREATE TABLE big_t (id int PRIMARY KEY, v text);
INSERT INTO big_t SELECT g, CASE WHEN g % 12 < 5 THEN repeat($CANARY_SQL, 300) ELSE $CANARY_SQL END
  FROM generate_series(1, 60) g;
CREATE TABLE small_t (id int PRIMARY KEY);
INSERT INTO small_t SELECT generate_series(1, 10);
SQL
over=$(rp_psql src -Atc "SELECT count(*) FROM big_t WHERE length(v) > 1000")
[[ $over == 25 ]] || fail "expected 25 oversize rows in the source, found $over"

port=$(rp_free_port)
start=$SECONDS
replicant -d "$src_CONNSTR" -S dlq_drop --create-slot --snapshot --start \
	--sink "file:$work/log.jsonl" --max-record-bytes=1000 --dead-letter-file=none \
	--state-dir "$work/state" --metrics-port "$port" -s 1 2>"$work/consumer.err" &
consumer_pid=$!
for _ in $(seq 1 1200); do
	grep -q '"kind":"checkpoint"' "$work/log.jsonl" 2>/dev/null && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited during the snapshot"
	sleep 0.1
done
grep -q '"kind":"checkpoint"' "$work/log.jsonl" || fail "no checkpoint line after the snapshot"
page=
for _ in $(seq 1 300); do
	page=$(curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null) && [[ $page == *replicant_dead_letters_dropped_total* ]] && break
	sleep 0.1
done
elapsed=$((SECONDS - start))
kill -TERM "$consumer_pid"
wait "$consumer_pid" || fail "the consumer did not stop cleanly on SIGTERM"
consumer_pid=

grep -q '^replicant_dead_letters_dropped_total{reason="too_large"} 25$' <<<"$page" ||
	fail "metrics: $(grep dead_letters <<<"$page" || echo 'no replicant_dead_letters_dropped_total')"
grep -q '^replicant_snapshot_rows_oversize_total{store="public.big_t"} 25$' <<<"$page" &&
	grep -q '^replicant_snapshot_rows_oversize_total{store="public.small_t"} 0$' <<<"$page" ||
	fail "metrics: $(grep rows_oversize <<<"$page" || echo 'no replicant_snapshot_rows_oversize_total')"

rows=$(grep -c '"kind":"row".*"store":"public.big_t"' "$work/log.jsonl" || true)
stubs=$(grep -c '"kind":"oversize".*"store":"public.big_t"' "$work/log.jsonl" || true)
[[ $rows == 35 && $stubs == 25 ]] || fail "the dump of big_t has $rows rows and $stubs oversize stubs, not 35 and 25"
replicant verify-snapshot "$work/log.jsonl" >"$work/verify.out" 2>&1 || fail "verify-snapshot: $(tail -n 3 "$work/verify.out")"
ls "$work/state" | grep -q dead-letter && fail "a dead-letter file was written: $(ls "$work/state")"
[[ ! -e none && ! -e $work/none ]] || fail "a dead-letter file named none was written"

warnings=$(grep -c 'warning: snapshot of public.big_t: [0-9]* oversize rows\? dropped' "$work/consumer.err" || true)
((warnings >= 1 && warnings <= 1 + elapsed / 10)) ||
	fail "$warnings drop warnings in ${elapsed}s (want 1 to $((1 + elapsed / 10))): $(grep -c warning "$work/consumer.err") warning lines"
! grep -q 'CANARY-7d1c0e55' "$work/consumer.err" || fail "a row value reached stderr"
grep -q 'CANARY-7d1c0e55' "$work/log.jsonl" || fail "the canary is not in the log: the search proves nothing"

status=0
printf 'PASS snapshot_dlq_drop: 25 oversize rows dropped with no dead-letter file: stubs kept (dump complete), counted in the metrics, %d warning(s) in %ds, no value on stderr\n' "$warnings" "$elapsed"
