#!/usr/bin/env bash
# --endpos past WAL the plugin filters out, beside pg_recvlogical, in one run:
#   bash bench/endpos.sh [--build]
#
# Issue 46's case: per run a new slot, one row of the selected table a, then CHANGES (default
# 25,000) inserts and as many deletes of table b, which -o include_tables=public.a leaves out,
# and the end position just past them. Timed, start to exit, PAIRS (default 5) times each in
# turn on the same kind of slot and options (plugin replicant, include_tables=public.a):
#   replicant       replicant -S SLOT --start -E END --sink file:... (default --status-interval
#                   10 s and --batch-ms 200: before 2026-12-07 the run waited out the one or
#                   the other, 10 s)
#   pg_recvlogical  pg_recvlogical -S SLOT --start -E END -f /dev/null, the same plugin options
# Reported: min, median and max of each, and replicant/pg_recvlogical of the medians (target:
# within 2x). Environment: CHANGES, PAIRS, REPLICANT_BIN=PATH (default the installed consumer).
# Uses the installed plugin and consumer (run `make && make install` first, or pass --build).
# The report is printed and written to bench/out/endpos-<timestamp>.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) printf 'usage: bash bench/endpos.sh [--build]\n' >&2; exit 2 ;;
		esac
	done
	[[ ${CHANGES:-25000} =~ ^[1-9][0-9]*$ ]] || rp_die "CHANGES is a number of changes: $CHANGES"
	[[ ${PAIRS:-5} =~ ^[1-9][0-9]?$ ]] || rp_die "PAIRS is a number of runs of each, 1 to 99: $PAIRS"
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/endpos-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/endpos.sh --phase-run "${CHANGES:-25000}" "${PAIRS:-5}" "${REPLICANT_BIN:-}" |
		tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
CHANGES=$2
PAIRS=$3
REPLICANT_BIN=$4
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
trap rp_cluster_cleanup_all EXIT
CONSUMER=${REPLICANT_BIN:-$(command -v replicant)} || rp_die "replicant is not installed in $RP_BINDIR: run make install"
RECV=$RP_BINDIR/pg_recvlogical
[[ -x $RECV ]] || rp_die "no pg_recvlogical in $RP_BINDIR"

rp_cluster_start src "autovacuum = off"
SRC=$(rp_conninfo src)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

printf 'replicant --endpos bench: PostgreSQL %s, %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer: %s (built %s)\n' "$CONSUMER" "$(date -u -r "$CONSUMER" '+%Y-%m-%d %H:%M:%S UTC')"
printf 'per run: 1 selected row, then %d inserts and %d deletes of a filtered table; %d runs of each, in turn\n\n' \
	"$CHANGES" "$CHANGES" "$PAIRS"
src -q -c 'CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY, v text)'

# one(WHO, N): a slot, the workload, the timed run; prints the seconds
one() {
	local who=$1 n=$2 slot end t0 t1
	slot="ep_${who}_$n"
	src -q -c "SELECT pg_create_logical_replication_slot('$slot', 'replicant')" >/dev/null
	src -q -c "INSERT INTO a VALUES ((SELECT coalesce(max(id), 0) + 1 FROM a))"
	src -q -c "INSERT INTO b SELECT g, 'x' FROM generate_series(1, $CHANGES) g; DELETE FROM b"
	end=$(src -Atc 'SELECT pg_current_wal_lsn()')
	t0=$(now)
	if [[ $who == replicant ]]; then
		"$CONSUMER" -d "$SRC" -S "$slot" --start -E "$end" -o include_tables=public.a \
			--sink "file:$WORK/$slot.jsonl" --state-dir "$WORK/state-$slot" >/dev/null 2>"$WORK/$slot.err" ||
			rp_die "replicant failed: $(tail -n 3 "$WORK/$slot.err")"
	else
		"$RECV" -d "$SRC" -S "$slot" --start -E "$end" -o include_tables=public.a -o proto_version=3 \
			-o format=json -f /dev/null 2>"$WORK/$slot.err" || rp_die "pg_recvlogical failed: $(tail -n 3 "$WORK/$slot.err")"
	fi
	t1=$(now)
	src -q -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
	sub "$t1" "$t0"
}

declare -a R P
for ((i = 1; i <= PAIRS; i++)); do
	R+=("$(one replicant "$i")")
	P+=("$(one recvlogical "$i")")
done
stats() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f %.3f %.3f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
read -r rmin rmed rmax <<<"$(stats "${R[@]}")"
read -r pmin pmed pmax <<<"$(stats "${P[@]}")"
printf '%-16s %8s %8s %8s\n' who min_s median_s max_s
printf '%-16s %8s %8s %8s\n' replicant "$rmin" "$rmed" "$rmax"
printf '%-16s %8s %8s %8s\n' pg_recvlogical "$pmin" "$pmed" "$pmax"
printf '\nreplicant / pg_recvlogical (medians): %s (target: at most 2)\n' \
	"$(awk -v a="$rmed" -v b="$pmed" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
