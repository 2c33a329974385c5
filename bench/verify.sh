#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# What `replicant verify` costs a running mirror:
#   bash bench/verify.sh [--build] [--quick] [ROWS]
#
# Two throwaway clusters (regress/lib.sh; as root the run continues as the postgres user). The
# source gets ROWS rows (default 1,000,000) of (id bigint primary key, a int, t text,
# ts timestamptz, n numeric); a mirror is made with --snapshot and stopped. Then, RUNS times
# (default 3), two catch-ups of the same backlog, in alternating order:
#   alone        the consumer stopped, BACKLOG row updates (default ROWS/5, in 1,000-row
#                transactions) committed on the source, the consumer started again: timed until
#                the destination's checkpoint passes the source's WAL position;
#   with-verify  the same, while `replicant verify --duty DUTY` (default 10) of the same table
#                runs over and over on both servers (one session a side) for the whole catch-up.
# Reported: each catch-up's seconds (min / median / max), the ratio with-verify / alone
# (the issue's bound: within a few percent), and how long one verify of the table takes alone.
# The report is printed and written to bench/out/verify-<timestamp>.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	rows=1000000
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		--quick) rows=200000 ;;
		-h | --help) printf 'usage: [RUNS=3] [BACKLOG=N] [DUTY=10] bash bench/verify.sh [--build] [--quick] [ROWS]\n'; exit 0 ;;
		*[!0-9]* | '') printf 'usage: bash bench/verify.sh [--build] [--quick] [ROWS]\n' >&2; exit 2 ;;
		*) rows=$arg ;;
		esac
	done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/verify-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/verify.sh --phase-run "$rows" "${RUNS:-3}" "${BACKLOG:-$((rows / 5))}" "${DUTY:-10}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
ROWS=$2
RUNS=$3
BACKLOG=$4
DUTY=$5
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
work=$(mktemp -d /tmp/rp-bench-verify.XXXXXX)
consumer_pid=
verify_pid=
cleanup() {
	[[ -n $consumer_pid ]] && kill -9 "$consumer_pid" 2>/dev/null
	[[ -n $verify_pid ]] && kill -9 "$verify_pid" 2>/dev/null
	rp_cluster_cleanup_all
	rm -rf "$work"
}
trap cleanup EXIT

printf 'bench/verify.sh: %d rows, backlog %d updates, %d runs, verify --duty %d; %s cores; load %s\n' \
	"$ROWS" "$BACKLOG" "$RUNS" "$DUTY" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
rp_cluster_start src
rp_cluster_start dst
rp_psql src -q <<SQL
CREATE TABLE bench_t (id bigint PRIMARY KEY, a int, t text, ts timestamptz, n numeric);
INSERT INTO bench_t SELECT g, g % 1000, md5(g::text), '2024-01-01'::timestamptz + g * interval '1 s', g / 7.0
  FROM generate_series(1, $ROWS) g;
SQL
SLOT=bench_verify
SINK="postgres:$dst_CONNSTR"
start_consumer() {
	replicant -d "$src_CONNSTR" -S "$SLOT" --start --sink "$SINK" --state-dir "$work/state" \
		"$@" 2>>"$work/consumer.err" &
	consumer_pid=$!
}
stop_consumer() {
	kill -TERM "$consumer_pid"
	wait "$consumer_pid" || true
	consumer_pid=
}
ck() { rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'" 2>/dev/null || true; }
caught_up() { # LSN: the destination's checkpoint at or past it
	local c
	c=$(ck)
	[[ -n $c && $(rp_psql src -Atc "SELECT '$c'::pg_lsn >= '$1'::pg_lsn") == t ]]
}
now() { date +%s.%N; }

start_consumer --create-slot --snapshot --create-tables
for _ in $(seq 1 6000); do [[ -n $(ck) ]] && break; sleep 0.1; done
[[ -n $(ck) ]] || { echo "the snapshot did not complete"; exit 1; }
stop_consumer

t0=$(now)
replicant verify -d "$src_CONNSTR" --sink "$SINK" -S "$SLOT" -q --duty "$DUTY" >/dev/null 2>"$work/verify.err" ||
	{ echo "verify of the fresh mirror failed: $(tail -n 2 "$work/verify.err")"; exit 1; }
one_verify=$(echo "$(now) - $t0" | bc)

backlog() {
	local done=0
	while ((done < BACKLOG)); do
		rp_psql src -q -c "UPDATE bench_t SET a = a + 1 WHERE id > $((done % ROWS)) AND id <= $((done % ROWS + 1000))"
		done=$((done + 1000))
	done
	rp_psql src -Atc 'SELECT pg_current_wal_lsn()'
}
catch_up() { # MODE: seconds
	local end t0 t1
	end=$(backlog)
	if [[ $1 == with-verify ]]; then
		(while :; do replicant verify -d "$src_CONNSTR" --sink "$SINK" -S "$SLOT" -q --recheck-timeout 1 --duty "$DUTY" >/dev/null 2>&1 || true; done) &
		verify_pid=$!
	fi
	t0=$(now)
	start_consumer
	until caught_up "$end"; do sleep 0.05; done
	t1=$(now)
	stop_consumer
	if [[ -n $verify_pid ]]; then
		kill -- -"$verify_pid" 2>/dev/null || kill "$verify_pid" 2>/dev/null || true
		pkill -f "replicant verify -d $src_CONNSTR" 2>/dev/null || true
		wait "$verify_pid" 2>/dev/null || true
		verify_pid=
	fi
	echo "$t1 - $t0" | bc
}

alone=()
with=()
for ((r = 1; r <= RUNS; r++)); do
	if ((r % 2)); then
		alone+=("$(catch_up alone)")
		with+=("$(catch_up with-verify)")
	else
		with+=("$(catch_up with-verify)")
		alone+=("$(catch_up alone)")
	fi
	printf 'run %d: alone %.2f s, with verify %.2f s\n' "$r" "${alone[-1]}" "${with[-1]}"
done
stats() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%.2f / %.2f / %.2f", a[1], a[int((NR+1)/2)], a[NR]}'; }
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
replicant verify -d "$src_CONNSTR" --sink "$SINK" -S "$SLOT" -q >/dev/null 2>&1 ||
	{ echo "the mirror differs from the source after the runs"; exit 1; }
printf '\none verify of %d rows alone: %.2f s\n' "$ROWS" "$one_verify"
printf 'catch-up of %d updates, min / median / max s:\n  alone        %s\n  with-verify  %s\n' \
	"$BACKLOG" "$(stats "${alone[@]}")" "$(stats "${with[@]}")"
printf 'ratio with-verify / alone (medians): %.3f\n' "$(echo "$(med "${with[@]}") / $(med "${alone[@]}")" | bc -l)"
printf 'load at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
