#!/usr/bin/env bash
# Walsender memory while replicant decodes one big transaction:  bash bench/walsender_memory.sh [ROWS]
#
# Starts a throwaway cluster (regress/lib.sh; as root, the run continues as the postgres user
# through rp_run_unprivileged), inserts ROWS rows (default 5000000) of the brief's table in ONE
# transaction, then streams it through replicant with pg_recvlogical twice, each from its own
# slot created before the insert:
#   streaming=on   the server streams the in-progress transaction to the plugin once it
#                  outgrows logical_decoding_work_mem (default 64MB, not changed here)
#   streaming=off  the server spills it to disk and replays it at commit
# and, as the floor, through pgoutput with streaming on and an empty publication (decodes and
# streams the transaction, outputs nothing): what the server itself holds while decoding.
# While each stream runs, the walsender's memory is sampled every 0.2 s from
# /proc/PID/smaps_rollup (Rss, Pss, Anonymous = private heap, the palloc arenas) and
# /proc/PID/status (VmHWM, the kernel's peak RSS), and every second the server is asked for the
# walsender's memory contexts (pg_log_backend_memory_contexts; their grand total is read back
# from the server log). Reported: baseline (first sample), peak, growth = peak - baseline, in
# MB, and pg_stat_replication_slots (stream_txns > 0 proves the transaction was streamed).
# Target (issue 2): growth < 64 MB with streaming on.
#
# Environment: MODES="on off floor" (default; "on" alone skips the comparisons), WORK_MEM=SIZE
# sets logical_decoding_work_mem (the target is set on the default, 64MB), RP_KEEP_CLUSTERS=1
# keeps the cluster. The report is printed and written to bench/out/walsender_memory-<timestamp>.txt.
# Uses the installed plugin: run `make && make install` first, or pass --build.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

LIMIT_MB=64

usage() {
	printf 'usage: [MODES="on off floor"] [WORK_MEM=SIZE] bash bench/walsender_memory.sh [--build] [ROWS]\n'
	printf '  ROWS     rows inserted in one transaction (default 5000000)\n'
	printf '  --build  make && make install first\n'
}

# ---------------------------------------------------------------- entry: as the caller
if [[ ${1:-} != --phase-run ]]; then
	build=0
	rows=5000000
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) usage; exit 0 ;;
		*[!0-9]* | '') usage >&2; exit 2 ;;
		*) rows=$arg ;;
		esac
	done
	modes=${MODES:-on off floor}
	for m in $modes; do
		[[ $m == on || $m == off || $m == floor ]] || rp_die "MODES takes on, off and floor: $m"
	done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/walsender_memory-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/walsender_memory.sh --phase-run "$rows" "$modes" "${WORK_MEM:-}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
ROWS=$2
read -r -a MODES <<<"$3"
WORK_MEM=$4
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
trap rp_cluster_cleanup_all EXIT

settings=("autovacuum = off" "max_wal_size = 8GB")
[[ -n $WORK_MEM ]] && settings+=("logical_decoding_work_mem = '$WORK_MEM'")
rp_cluster_start wmem "${settings[@]}"
CONN=$(rp_conninfo wmem)
# shellcheck disable=SC2154 # exported by rp_cluster_start
DIR=$wmem_DIR SERVER_LOG=$wmem_LOG
psql_() { rp_psql wmem "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; } # kB to MB
label() { case $1 in on) printf 'replicant, streaming=on' ;; off) printf 'replicant, streaming=off' ;;
	floor) printf 'floor: pgoutput, streaming=on, no tables' ;; esac; }
mbb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; } # bytes to MB

# contexts PID: from the memory-context dumps PID wrote to the server log, the largest over the
# snapshots of: the grand total, and the totals of three subtrees (the logical decoding context,
# the reorder buffer in it, the output plugin's contexts), in bytes. Prints "N GRAND LD RB PLUGIN".
contexts() {
	grep -F "[$1]" "$SERVER_LOG" | awk -v plugin="$PLUGIN_CXT" '
		function finish() { if (open) { n++
			if (grand > mg) mg = grand; for (k in t) if (t[k] > m[k]) m[k] = t[k] }
			open = 0; grand = 0; delete t; delete in_at }
		/logging memory contexts of PID/ { finish(); open = 1; next }
		/Grand total:/ { match($0, /Grand total: [0-9]+/); grand = substr($0, RSTART + 13, RLENGTH - 13); finish(); next }
		match($0, /level: [0-9]+; [^:]+: [0-9]+ total/) {
			split(substr($0, RSTART, RLENGTH), f, /: |; /)
			lvl = f[2] + 0; name = f[3]; sz = f[4] + 0
			for (k in in_at) if (lvl <= in_at[k]) delete in_at[k]
			if (name == "Logical decoding context") in_at["ld"] = lvl
			if (name == "ReorderBuffer") in_at["rb"] = lvl
			if (index(name, plugin) == 1 && !("rp" in in_at)) in_at["rp"] = lvl
			for (k in in_at) t[k] += sz
		}
		END { finish(); printf "%d %d %d %d %d\n", n, mg, m["ld"], m["rb"], m["rp"] }'
}

psql_ <<-'SQL'
	SET client_min_messages = warning;
	CREATE TABLE bench(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb);
	CREATE PUBLICATION nullpub;
SQL
declare -A PLUG=([on]=replicant [off]=replicant [floor]=pgoutput)
declare -A ROPTS=([on]="-o streaming=on" [off]="" [floor]="-o proto_version=2 -o publication_names=nullpub -o streaming=on")
# the plugin's memory contexts: names starting with this
declare -A CXT=([on]=replicant [off]=replicant [floor]="logical replication")
for m in "${MODES[@]}"; do
	psql_ -Atc "select pg_create_logical_replication_slot('m_$m', '${PLUG[$m]}')" >/dev/null
done

t0=$(now)
psql_ -c "INSERT INTO bench SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(1,$ROWS) g"
t1=$(now)
END=$(psql_ -Atc "select pg_current_wal_lsn()")
WAL=$(psql_ -Atc "select pg_size_pretty(pg_wal_lsn_diff('$END', confirmed_flush_lsn)) from pg_replication_slots where slot_name = 'm_${MODES[0]}'")
printf 'replicant walsender memory bench: PostgreSQL %s, %s cores, %s\n' \
	"$(psql_ -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
PLUGIN_SO=$("$PG_CONFIG" --pkglibdir)/replicant.so
plugin_id() { printf '%s, md5 %s' "$(date -u -r "$PLUGIN_SO" '+%Y-%m-%d %H:%M:%S UTC')" "$(md5sum <"$PLUGIN_SO" | cut -c1-12)"; }
PLUGIN_ID=$(plugin_id)
printf 'replicant.so: built %s; load average at start: %s\n' "$PLUGIN_ID" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'workload: %d rows inserted in one transaction (%s of WAL) in %s s; end %s\n' \
	"$ROWS" "$WAL" "$(sub "$t1" "$t0")" "$END"
printf 'logical_decoding_work_mem = %s, shared_buffers = %s\n\n' \
	"$(psql_ -Atc 'show logical_decoding_work_mem')" "$(psql_ -Atc 'show shared_buffers')"

# sample PID: one line "rss pss anon private hwm" in kB, or nothing once the process is gone
sample() {
	{ cat "/proc/$1/smaps_rollup" "/proc/$1/status"; } 2>/dev/null | awk '
		/^Rss:/ { rss = $2 } /^Pss:/ { pss = $2 } /^Anonymous:/ { anon = $2 }
		/^Private_(Clean|Dirty):/ { priv += $2 } /^VmHWM:/ { hwm = $2 }
		END { if (rss != "") print rss, pss, anon, priv, hwm }'
}

declare -A GROWTH_RSS GROWTH_ANON PEAK_RSS PEAK_ANON STREAM_TXNS
for m in "${MODES[@]}"; do
	slot=m_$m
	read -r -a opts <<<"${ROPTS[$m]}"
	PLUGIN_CXT=${CXT[$m]}
	errlog=$DIR/recvlogical-$m.log
	bytesfile=$DIR/bytes-$m
	samples=$DIR/samples-$m
	a=$(now)
	{ timeout 3600 pg_recvlogical -d "$CONN" -S "$slot" --start --endpos="$END" --no-loop -v \
		"${opts[@]}" -f - 2>"$errlog" | wc -c >"$bytesfile"; } &
	bg=$!
	pid=
	for _ in $(seq 1 600); do
		pid=$(psql_ -Atc "select active_pid from pg_replication_slots where slot_name = '$slot'")
		[[ -n $pid ]] && break
		kill -0 "$bg" 2>/dev/null || break
		sleep 0.05
	done
	[[ -n $pid ]] || { cat "$errlog" >&2; rp_die "$m: no walsender became active on slot $slot"; }
	: >"$samples"
	n=0
	ctx_logged=0
	while s=$(sample "$pid") && [[ -n $s ]]; do
		printf '%s %s\n' "$(now)" "$s" >>"$samples"
		n=$((n + 1))
		# every second: the walsender's memory contexts into the server log
		if ((n % 5 == 1)); then
			psql_ -Atc "select pg_log_backend_memory_contexts($pid)" >/dev/null 2>&1 && ctx_logged=$((ctx_logged + 1))
		fi
		sleep 0.2
	done
	wait "$bg" || { cat "$errlog" >&2; rp_die "$m: pg_recvlogical failed"; }
	b=$(now)
	grep -q 'end position .* reached' "$errlog" || { cat "$errlog" >&2; rp_die "$m: the stream stopped before $END"; }
	bytes=$(<"$bytesfile")
	# baseline = first sample; peak = max of each column; growth = peak - baseline
	read -r base_rss base_pss base_anon base_priv peak_rss peak_pss peak_anon peak_priv hwm nsamples < <(awk '
		NR == 1 { for (i = 2; i <= 5; i++) b[i] = $i }
		{ for (i = 2; i <= 6; i++) if ($i > p[i]) p[i] = $i }
		END { print b[2], b[3], b[4], b[5], p[2], p[3], p[4], p[5], p[6], NR }' "$samples")
	read -r ctx_n ctx_grand ctx_ld ctx_rb ctx_rp < <(contexts "$pid")
	stats=$(psql_ -Atc "select stream_txns, stream_count, pg_size_pretty(stream_bytes), spill_txns, spill_count, pg_size_pretty(spill_bytes), total_txns, pg_size_pretty(total_bytes) from pg_stat_replication_slots where slot_name = '$slot'")
	IFS='|' read -r stream_txns stream_count stream_bytes spill_txns spill_count spill_bytes total_txns total_bytes <<<"$stats"

	printf '%s: walsender pid %s, %s s, %s bytes streamed, %d samples\n' "$(label "$m")" "$pid" "$(sub "$b" "$a")" "$bytes" "$nsamples"
	printf '  %-28s %10s %10s %10s\n' 'MB' baseline peak growth
	printf '  %-28s %10s %10s %10s\n' 'Rss' "$(mb "$base_rss")" "$(mb "$peak_rss")" "$(mb $((peak_rss - base_rss)))"
	printf '  %-28s %10s %10s %10s\n' 'Pss' "$(mb "$base_pss")" "$(mb "$peak_pss")" "$(mb $((peak_pss - base_pss)))"
	printf '  %-28s %10s %10s %10s\n' 'Anonymous (private heap)' "$(mb "$base_anon")" "$(mb "$peak_anon")" "$(mb $((peak_anon - base_anon)))"
	printf '  %-28s %10s %10s %10s\n' 'Private_Clean+Private_Dirty' "$(mb "$base_priv")" "$(mb "$peak_priv")" "$(mb $((peak_priv - base_priv)))"
	printf '  %-28s %10s %10s\n' 'VmHWM (kernel peak RSS)' '' "$(mb "$hwm")"
	printf '  memory contexts (%d of %d snapshots logged), largest total in MB: all %s, "Logical decoding context" %s, of which ReorderBuffer %s and %s %s\n' \
		"$ctx_n" "$ctx_logged" "$(mbb "$ctx_grand")" "$(mbb "$ctx_ld")" "$(mbb "$ctx_rb")" "$PLUGIN_CXT" "$(mbb "$ctx_rp")"
	printf '  pg_stat_replication_slots: stream_txns %s, stream_count %s, stream_bytes %s; spill_txns %s, spill_count %s, spill_bytes %s; total_txns %s, total_bytes %s\n\n' \
		"$stream_txns" "$stream_count" "$stream_bytes" "$spill_txns" "$spill_count" "$spill_bytes" "$total_txns" "$total_bytes"
	GROWTH_RSS[$m]=$((peak_rss - base_rss))
	GROWTH_ANON[$m]=$((peak_anon - base_anon))
	PEAK_RSS[$m]=$peak_rss
	PEAK_ANON[$m]=$peak_anon
	STREAM_TXNS[$m]=$stream_txns
	psql_ -Atc "select pg_drop_replication_slot('$slot')" >/dev/null
done

# ---------------------------------------------------------------- verdict
printf 'summary (growth = peak - baseline):\n'
for m in "${MODES[@]}"; do
	printf '  %-42s Rss growth %8s MB   Anonymous growth %8s MB   stream_txns %s\n' \
		"$(label "$m")" "$(mb "${GROWTH_RSS[$m]}")" "$(mb "${GROWTH_ANON[$m]}")" "${STREAM_TXNS[$m]}"
done
if [[ -n ${GROWTH_RSS[on]:-} ]]; then
	verdict() { (($1 < LIMIT_MB * 1024)) && printf met || printf MISSED; }
	printf 'target (issue 2): growth < %d MB with streaming on: Rss %s, Anonymous %s' \
		"$LIMIT_MB" "$(verdict "${GROWTH_RSS[on]}")" "$(verdict "${GROWTH_ANON[on]}")"
	if ((STREAM_TXNS[on] > 0)); then
		printf '; the transaction was streamed (stream_txns %s)\n' "${STREAM_TXNS[on]}"
	else
		printf '; NOT streamed (stream_txns 0): the plugin or the server did not stream\n'
	fi
fi
if [[ -n ${GROWTH_RSS[on]:-} && -n ${GROWTH_RSS[floor]:-} ]]; then
	printf 'replicant streaming=on above the floor (what the plugin adds to the server'"'"'s own decoding memory):\n'
	printf '  growth: Rss %s MB, Anonymous %s MB; peak: Rss %s MB, Anonymous %s MB\n' \
		"$(mb $((GROWTH_RSS[on] - GROWTH_RSS[floor])))" "$(mb $((GROWTH_ANON[on] - GROWTH_ANON[floor])))" \
		"$(mb $((PEAK_RSS[on] - PEAK_RSS[floor])))" "$(mb $((PEAK_ANON[on] - PEAK_ANON[floor])))"
fi

# Other work on the machine skews every number: say so.
printf 'load average at end: %s' "$(cut -d' ' -f1-3 /proc/loadavg)"
[[ $(plugin_id) == "$PLUGIN_ID" ]] || printf '; WARNING: replicant.so was reinstalled during the run'
printf '\n'
