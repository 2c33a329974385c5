#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/big_txn_memory.sh: a 5,000,000-row transaction in bounded consumer memory.
#
# Proves G5 (bounded memory): one transaction inserting 5,000,000 rows of (bigint, ~20-byte
# text) passes through the consumer (-o streaming=on, logical_decoding_work_mem = 64kB, so
# the server streams it; --max-memory 64MB, so the consumer spills it) to the stdout sink.
# Asserts: the consumer's peak RSS (/usr/bin/time -v "Maximum resident set size", else
# VmHWM sampled from /proc) stays under 128 MB; it spilled (spill files seen in the spill
# dir while it ran, and replicant_spills_total > 0 on --metrics-port, read with curl); the
# spill dir is empty afterwards; the output holds exactly 5,000,000 insert lines. Then the
# disk cap: the same transaction with --max-spill 8MB halts with exit 3 (spill_limit),
# leaving no spill file, no checkpoint and the slot where it was.
# 5M rows took about 70 s end to end on the 2-core development machine (insert 15 s, consumer
# 50 s; peak RSS 73 MB), well inside the 4-minute budget, so 5M stays. ROWS=N overrides.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROWS=${ROWS:-5000000}
LIMIT_KB=$((128 * 1024))
work=$(mktemp -d /tmp/rp-bigtxn.XXXXXX)
STATE=$work/state
status=1
pid=
cleanup() {
	local rc=$?
	[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
	rp_cluster_cleanup_all || true # its connections gone, every background job ends
	wait 2>/dev/null || true
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT
fail() {
	printf 'FAIL big_txn_memory: %s\n' "$*"
	[[ -s $work/consumer.err ]] && tail -n 20 "$work/consumer.err"
	exit 1
}

started=$SECONDS
rp_cluster_start src "logical_decoding_work_mem = '64kB'"
rp_psql src -c "CREATE TABLE big (id bigint, v text)"
replicant -d "$src_CONNSTR" -S big --create-slot
replicant -d "$src_CONNSTR" -S capped --create-slot

t0=$SECONDS
# bound: read right after the commit, in its session (rp_unacked)
bound=$(rp_psql src -qAt -c "INSERT INTO big SELECT g, 'row-' || lpad(g::text, 16, '0') FROM generate_series(1, $ROWS) g" \
	-c "SELECT pg_current_wal_insert_lsn()")
endpos=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
insert_s=$((SECONDS - t0))

args=(-d "$src_CONNSTR" -S big --start -n -E "$endpos" -o streaming=on --sink stdout
	--state-dir "$STATE" --max-memory 64MB)
command -v curl >/dev/null || fail "curl is not installed (regress/install_deps.sh installs it): the metrics cannot be read"
port=$(rp_free_port)
args+=(--metrics-port "$port")
timev=
[[ -x /usr/bin/time ]] && /usr/bin/time -v true >/dev/null 2>&1 && timev=/usr/bin/time

t0=$SECONDS
if [[ -n $timev ]]; then
	$timev -v -o "$work/time.txt" replicant "${args[@]}" 2>"$work/consumer.err" |
		grep -c '"kind":"insert"' >"$work/count.txt" &
else
	replicant "${args[@]}" 2>"$work/consumer.err" | grep -c '"kind":"insert"' >"$work/count.txt" &
fi
pid=$!
spill_seen=0 spill_max_kb=0 hwm_kb=0 spills_metric=0 mem_metric_max=0
while kill -0 "$pid" 2>/dev/null; do
	if compgen -G "$STATE/spill/replicant-spill-*" >/dev/null; then
		spill_seen=1
		kb=$(du -sk "$STATE/spill" 2>/dev/null | cut -f1) || kb=0
		((kb > spill_max_kb)) && spill_max_kb=$kb
	fi
	# the newest process with this state dir on its command line: replicant, not time
	rpid=$(pgrep -n -f -- "--state-dir $STATE" || true)
	if [[ -n $rpid && -r /proc/$rpid/status ]]; then
		kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rpid/status" 2>/dev/null || echo 0)
		((${kb:-0} > hwm_kb)) && hwm_kb=$kb
	fi
	if page=$(curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null); then
		v=$(awk '$1 == "replicant_spills_total" { print $2 }' <<<"$page")
		((${v:-0} > spills_metric)) && spills_metric=$v
		v=$(awk '$1 == "replicant_memory_bytes" { print $2 }' <<<"$page")
		((${v:-0} > mem_metric_max)) && mem_metric_max=$v
	fi
	sleep 0.2
done
rc=0
wait "$pid" || rc=$?
pid=
consume_s=$((SECONDS - t0))
((rc == 0)) || fail "the consumer pipeline exited with status $rc"
grep -q 'error' "$work/consumer.err" && fail "the consumer reported an error"

if [[ -n $timev ]]; then
	rss_kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
	grep -q 'Exit status: 0' "$work/time.txt" || fail "replicant exited with $(grep 'Exit status' "$work/time.txt")"
	how="/usr/bin/time -v"
else
	rss_kb=$hwm_kb
	how="VmHWM samples"
fi
count=$(cat "$work/count.txt")
printf 'insert %ds, consume %ds; consumer peak RSS %d kB (%s; sampled VmHWM %d kB); spill dir peak %d kB; metrics: spills %d, memory peak %d bytes\n' \
	"$insert_s" "$consume_s" "$rss_kb" "$how" "$hwm_kb" "$spill_max_kb" "$spills_metric" "$mem_metric_max"

((count == ROWS)) || fail "the output holds $count insert lines, expected $ROWS"
((rss_kb > 0 && rss_kb < LIMIT_KB)) || fail "consumer peak RSS $rss_kb kB is not under $LIMIT_KB kB"
((spill_seen)) || fail "no spill file was seen while the consumer ran"
((spills_metric > 0)) || fail "replicant_spills_total stayed 0"
if compgen -G "$STATE/spill/*" >/dev/null; then fail "the spill dir is not empty afterwards: $(ls "$STATE/spill")"; fi

# the disk cap: the same transaction with --max-spill 8MB halts (exit 3) once its spill file
# would pass 8 MB, names the limit, acknowledges nothing and leaves no spill file
rc=0
replicant -d "$src_CONNSTR" -S capped --start -n -E "$endpos" -o streaming=on --sink stdout \
	--state-dir "$work/state-capped" --max-memory 64MB --max-spill 8MB 2>"$work/capped.err" >/dev/null || rc=$?
((rc == 3)) || { cat "$work/capped.err"; fail "with --max-spill 8MB the consumer exited with $rc, not 3"; }
grep -q 'would exceed --max-spill' "$work/capped.err" || { cat "$work/capped.err"; fail "the halt does not name --max-spill"; }
grep -q 'halted (spill_limit)' "$work/capped.err" || { cat "$work/capped.err"; fail "the halt is not a spill_limit halt"; }
if compgen -G "$work/state-capped/spill/*" >/dev/null; then fail "the spill-limit halt left spill files"; fi
why=$(rp_unacked src capped "$work/state-capped/capped.checkpoint" "$bound") ||
	fail "after the spill-limit halt, $why"

status=0
printf 'PASS big_txn_memory: %d rows in one transaction, peak RSS %d MB < 128 MB with --max-memory 64MB, spilled and cleaned up, --max-spill halts (G5) (%ds)\n' \
	"$ROWS" "$((rss_kb / 1024))" "$((SECONDS - started))"
