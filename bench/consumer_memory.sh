#!/usr/bin/env bash
# The consumer's peak memory for one large transaction, beside --max-memory:
#   bash bench/consumer_memory.sh [--build] [ROWS...]
#
# Starts a throwaway source and destination cluster (regress/lib.sh; as root, the run
# continues as the postgres user through rp_run_unprivileged). For each ROWS (default 1000000
# 3000000 10000000) one transaction inserts ROWS rows of (bigint primary key, ~40-byte text)
# into a table new to every consumer; then one row with a VALUE_MB (default 200) MB text. Each
# case is caught up by every sink and path from a slot made before it, to its end LSN:
#   sinks  mirror  --sink postgres:... --create-tables (a destination database per path)
#          file    --sink file:PATH
#   paths  default         (-o streaming=on is the default: early apply for the mirror)
#          no-early-apply  --no-early-apply (the transaction reaches the sink whole)
#          streaming-off   -o streaming=off (the server sends it whole, at its commit)
# with --max-memory MAX_MEMORY (default 64MB). Reported per run: the consumer's peak RSS
# (/usr/bin/time -v "Maximum resident set size", else VmHWM sampled every 0.1 s), that less
# --max-memory (G5's target is at most 64 MB), seconds from start to exit, and the exit status.
# The figures are what they are: nothing is asserted (test/t/250_mirror_memory.pl and
# test/t/170_big_txn_memory.pl assert the bound).
#
# Environment: SINKS="mirror file", PATHS="default no-early-apply streaming-off", MAX_MEMORY=64MB,
# VALUE_MB=200 (0: no large-value case), REPLICANT_OPTS="..." extra consumer options. The report
# is printed and written to bench/out/consumer_memory-<timestamp>.txt. The consumer as built in
# this tree; the installed plugin: run `make && make install` first (or pass --build).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

ALL_SINKS="mirror file"
ALL_PATHS="default no-early-apply streaming-off"

usage() {
	printf 'usage: [SINKS="%s"] [PATHS="%s"] [MAX_MEMORY=64MB] [VALUE_MB=200] bash bench/consumer_memory.sh [--build] [ROWS...]\n' \
		"$ALL_SINKS" "$ALL_PATHS"
	printf '  ROWS     rows inserted in one transaction, one case each (default 1000000 3000000 10000000)\n'
	printf '  --build  make && make install first\n'
}

# ---------------------------------------------------------------- entry: as the caller
if [[ ${1:-} != --phase-run ]]; then
	build=0
	rows=()
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) usage; exit 0 ;;
		*[!0-9]* | '') usage >&2; exit 2 ;;
		*) rows+=("$arg") ;;
		esac
	done
	((${#rows[@]})) || rows=(1000000 3000000 10000000)
	sinks=${SINKS:-$ALL_SINKS}
	paths=${PATHS:-$ALL_PATHS}
	for s in $sinks; do [[ " $ALL_SINKS " == *" $s "* ]] || rp_die "unknown sink $s (known: $ALL_SINKS)"; done
	for p in $paths; do [[ " $ALL_PATHS " == *" $p "* ]] || rp_die "unknown path $p (known: $ALL_PATHS)"; done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/consumer_memory-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/consumer_memory.sh --phase-run "${rows[*]}" "$sinks" "$paths" \
		"${MAX_MEMORY:-64MB}" "${VALUE_MB:-200}" "${REPLICANT_OPTS:-}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
read -r -a ROWS <<<"$2"
read -r -a SINKS <<<"$3"
read -r -a PATHS <<<"$4"
MAX_MEMORY=$5
VALUE_MB=$6
read -r -a ROPTS <<<"$7"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
trap rp_cluster_cleanup_all EXIT

rp_cluster_start msrc "autovacuum = off"
rp_cluster_start mdst "autovacuum = off" "fsync = off"
SRC=$(rp_conninfo msrc)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$msrc_DIR
psql_() { PGOPTIONS='-c client_min_messages=warning' rp_psql msrc "$@"; }
dpsql_() { PGOPTIONS='-c client_min_messages=warning' rp_psql mdst "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; } # kB to MB
max_mb=$(numfmt --from=iec "${MAX_MEMORY%B}" 2>/dev/null) || rp_die "MAX_MEMORY must be like 64MB"
max_mb=$((max_mb / 1048576))

# shellcheck source=bench/tools/measure.sh
. "$here/tools/measure.sh"

path_opts() {
	case $1 in
	default) ;;
	no-early-apply) printf '%s\n' --no-early-apply ;;
	streaming-off) printf '%s\n' -o streaming=off ;;
	esac
}

printf 'replicant consumer memory bench: PostgreSQL %s, %s cores, %s\n' \
	"$(psql_ -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer %s (built %s); load average at start: %s\n' "$(command -v replicant)" \
	"$(date -u -r "$(command -v replicant)" '+%Y-%m-%d %H:%M:%S UTC')" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf -- '--max-memory %s; server logical_decoding_work_mem %s; extra options: %s\n\n' "$MAX_MEMORY" \
	"$(psql_ -Atc 'show logical_decoding_work_mem')" "${ROPTS[*]:-none}"
for p in "${PATHS[@]}"; do dpsql_ -c "CREATE DATABASE \"d_${p//-/_}\""; done

cases=()
for r in "${ROWS[@]}"; do cases+=("rows:$r"); done
((VALUE_MB > 0)) && cases+=("value:$VALUE_MB")
printf '%-16s %-7s %-15s %10s %14s %9s %5s\n' case sink path peak_rss_mb over_max_mb seconds exit
ci=0
for cs in "${cases[@]}"; do
	kind=${cs%%:*} n=${cs#*:} ci=$((ci + 1))
	tbl="t_${kind}_$n"
	psql_ -c "CREATE TABLE $tbl (id bigint PRIMARY KEY, v text)"
	[[ $kind == value ]] && psql_ -c "ALTER TABLE $tbl ALTER v SET STORAGE EXTERNAL"
	for s in "${SINKS[@]}"; do
		for p in "${PATHS[@]}"; do
			replicant -d "$SRC" -S "m${ci}_${s}_${p//-/_}" --create-slot 2>/dev/null
		done
	done
	if [[ $kind == rows ]]; then
		psql_ -c "INSERT INTO $tbl SELECT g, 'row-' || md5(g::text) FROM generate_series(1, $n) g"
		label="$n rows"
	else
		psql_ -c "INSERT INTO $tbl VALUES (1, repeat('x', $n * 1024 * 1024))"
		label="1 value, $n MB"
	fi
	END=$(psql_ -Atc "select pg_current_wal_lsn()")
	for s in "${SINKS[@]}"; do
		for p in "${PATHS[@]}"; do
			slot="m${ci}_${s}_${p//-/_}" # a slot (and a checkpoint) per case
			log=$WORK/$slot.log
			mapfile -t popts < <(path_opts "$p")
			case $s in
			mirror) sink=(--sink "postgres:$(rp_conninfo mdst "d_${p//-/_}")" --create-tables) ;;
			file) rm -f "$WORK/out.jsonl"; sink=(--sink "file:$WORK/out.jsonl") ;;
			esac
			run_measured "$log" replicant -d "$SRC" -S "$slot" -n --start -E "$END" "${sink[@]}" \
				--state-dir "$WORK/state-$slot" --max-memory "$MAX_MEMORY" "${popts[@]}" "${ROPTS[@]}"
			((RUN_RC == 0)) || tail -n 5 "$log" >&2
			rss=$(mb "$RUN_RSS_KB")
			printf '%-16s %-7s %-15s %10s %+14d %9s %5s\n' "$label" "$s" "$p" "$rss" $((rss - max_mb)) \
				"$RUN_S" "$RUN_RC"
			[[ $s == mirror ]] && dpsql_ -d "d_${p//-/_}" -c "DROP TABLE IF EXISTS public.$tbl"
			rm -f "$WORK/out.jsonl"
			replicant -d "$SRC" -S "$slot" --drop-slot 2>/dev/null
		done
	done
	psql_ -c "DROP TABLE $tbl"
done
printf '\n(peak_rss_mb: the consumer'"'"'s maximum resident set; over_max_mb: that less --max-memory, which G5 bounds by 64)\n'
printf 'load average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
