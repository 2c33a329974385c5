#!/usr/bin/env bash
# A backlog into NATS JetStream (issue 14) beside the file sink and beside a floor:
#   bash bench/nats_sink.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]
#
# Starts one throwaway PostgreSQL cluster (regress/lib.sh; fsync = on, autovacuum = off; as
# root, the run continues as the postgres user through rp_run_unprivileged) and a 3-node
# JetStream cluster on loopback (regress/nats.sh). Three replicant slots are created, then one
# workload fills them all with the same backlog: ROWS rows (default 1,000,000) of mirror.sh's
# table in ROWS_PER_TXN-row transactions (default 1,000), then an update pass (id % 4 = 0) and a
# delete pass (id % 10 = 0). Then, each timed from start to exit by /usr/bin/time (wall, CPU,
# peak RSS):
#   file       replicant -n --start -E END --sink file:LOG (JSON lines, fdatasync per batch)
#   nats_r1    replicant -n --start -E END --sink nats://... --nats-replicas 1 (a new stream)
#   nats_r3    the same with --nats-replicas 3
#   floor_r1, floor_r3
#              bench/tools/nats_floor (built for the run, libnats): the file sink's data lines
#              published as they are, one message each, asynchronously with 1,024 in flight (the
#              sink's --nats-window default), with the sink's headers (docs/sinks.md, made-up
#              values of the same shapes, Nats-Expected-Last-Sequence included) into a new
#              stream of 1 or 3 replicas: no PostgreSQL, no replicant.
# Each stream's message count is read back from the servers (/jsz) and must equal the log's
# data lines (the exit status is 1 when not). Reported: seconds, messages/s, payload MB/s,
# client CPU and peak RSS for each, and per replica count the sink's rate / the floor's rate
# (floor seconds / sink seconds; issue 14's target is >= 0.8).
#
# Environment: MODES="file nats_r1 nats_r3 floor_r1 floor_r3" (floor_* need file: its log is
# what they publish), REPLICANT_OPTS="..." extra consumer options for the NATS runs,
# RP_KEEP_CLUSTERS=1. --quick: 100,000 rows. The report is printed and written to
# bench/out/nats_sink-<timestamp>.txt. Uses the consumer built in this tree (consumer/replicant,
# which must have the NATS sink: libnats-dev installed when it was built).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

ALL_MODES="file nats_r1 nats_r3 floor_r1 floor_r3"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	nums=()
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		--quick) nums=(100000) ;;
		-h | --help) printf 'usage: [MODES="%s"] bash bench/nats_sink.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]\n' "$ALL_MODES"; exit 0 ;;
		*[!0-9]* | '') printf 'usage: bash bench/nats_sink.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]\n' >&2; exit 2 ;;
		*) nums+=("$arg") ;;
		esac
	done
	rows=${nums[0]:-1000000} per=${nums[1]:-1000}
	((rows % per == 0)) || rp_die "ROWS must be a multiple of ROWS_PER_TXN"
	modes=${MODES:-$ALL_MODES}
	for m in $modes; do
		[[ " $ALL_MODES " == *" $m "* ]] || rp_die "MODES takes $ALL_MODES: $m"
	done
	[[ " $modes " != *" floor_"* || " $modes " == *" file "* ]] || rp_die "the floor modes publish the file sink's log: MODES needs file"
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/nats_sink-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/nats_sink.sh --phase-run "$rows" "$per" "$modes" "${REPLICANT_OPTS:-}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
# shellcheck source=regress/nats.sh
. "$here/../regress/nats.sh"
N=$2 T=$3
read -r -a MODES <<<"$4"
read -r -a ROPTS <<<"$5"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
cleanup() {
	local rc=$?
	set +e # waiting for a SIGKILLed node returns 137: not this run's status
	rp_nats_cleanup
	rp_cluster_cleanup_all
	return "$rc"
}
trap cleanup EXIT
has_mode() { [[ " ${MODES[*]} " == *" $1 "* ]]; }

rp_cluster_start src "autovacuum = off" "fsync = on"
SRC=$(rp_conninfo src)
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
rp_nats_start 3
URL=$(rp_nats_sink_url)
FLOOR=$WORK/nats_floor
# shellcheck disable=SC2046 # pkg-config's words
cc -O2 -o "$FLOOR" "$here/tools/nats_floor.c" $(pkg-config --cflags --libs libnats) ||
	rp_die "bench/tools/nats_floor.c does not build (libnats-dev)"

printf 'replicant NATS sink bench: PostgreSQL %s, nats-server %s (3 nodes on loopback), %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nats-server --version 2>/dev/null | awk '{ print $NF }')" "$(nproc)" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer: %s; NATS options: %s; load average at start: %s\n\n' "$(command -v replicant)" \
	"$( ((${#ROPTS[@]})) && printf '%s' "${ROPTS[*]}" || printf 'defaults')" "$(cut -d' ' -f1-3 /proc/loadavg)"

# the backlog: three slots, one workload
for m in file nats_r1 nats_r3; do
	has_mode "$m" && replicant -d "$SRC" -S "b_$m" --create-slot 2>>"$WORK/slots.log"
done
src -c "CREATE TABLE nsbench(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb)"
src -c CHECKPOINT
src <<-SQL
	DO \$\$ BEGIN FOR i IN 0..($N/$T)-1 LOOP
	  INSERT INTO nsbench SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(i*$T+1,(i+1)*$T) g;
	  COMMIT; END LOOP; END \$\$;
	UPDATE nsbench SET a=a+1 WHERE id % 4 = 0;
	DELETE FROM nsbench WHERE id % 10 = 0;
SQL
END=$(src -Atc "select pg_current_wal_lsn()")
src -c CHECKPOINT
CHANGES=$((N + N / 4 + N / 10))
printf '%d rows in %d-row transactions, +%d updates, +%d deletes: %d changes; end %s\n\n' \
	"$N" "$T" $((N / 4)) $((N / 10)) "$CHANGES" "$END"

# timed MODE CMD...: /usr/bin/time -v around CMD; sets S[MODE], CPU[MODE], RSS[MODE]
declare -A S CPU RSS MSGS
timed() {
	local m=$1 tf=$WORK/$1.time rc=0
	shift
	/usr/bin/time -v -o "$tf" "$@" >"$WORK/$m.out" 2>"$WORK/$m.err" || rc=$?
	if ((rc != 0)); then
		tail -n 20 "$WORK/$m.err" >&2
		rp_die "$m exited with status $rc"
	fi
	S[$m]=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s }' "$tf")
	CPU[$m]=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$tf")
	RSS[$m]=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$tf")
}
# stream_msgs STREAM SUBJECT: the stream's messages on SUBJECT (the data subject: relation
# and position messages go to the control subject) as the servers report them
stream_msgs() {
	"$FLOOR" count "$(rp_nats_urls)" "$1" "$2" 2>>"$WORK/count.err" || printf -- '-'
}

LOG=$WORK/log.jsonl
BAD=0
for m in "${MODES[@]}"; do
	case $m in
	file)
		timed file replicant -d "$SRC" -S b_file -n --start -E "$END" --sink "file:$LOG" --state-dir "$WORK/st_file"
		MSGS[file]=$(grep -c -E '"kind":"(insert|update|delete)"' "$LOG")
		DATA_BYTES=$(grep -E '"kind":"(insert|update|delete)"' "$LOG" | wc -c)
		DATA_BYTES=$((DATA_BYTES - MSGS[file])) # less the newlines
		;;
	nats_r1 | nats_r3)
		r=${m#nats_r}
		timed "$m" replicant -d "$SRC" -S "b_$m" -n --start -E "$END" --sink "$URL" --nats-replicas "$r" \
			--nats-stream "BENCH_R$r" --nats-subject-prefix "bench.r$r" --state-dir "$WORK/st_$m" "${ROPTS[@]}"
		MSGS[$m]=$(stream_msgs "BENCH_R$r" "bench.r$r.public.nsbench")
		;;
	floor_r1 | floor_r3)
		r=${m#floor_r}
		timed "$m" "$FLOOR" "$(rp_nats_urls)" "FLOOR_R$r" "floor.r$r" "$r" 1024 "$LOG"
		MSGS[$m]=$(stream_msgs "FLOOR_R$r" "floor.r$r.public.nsbench")
		;;
	esac
	if [[ ${MSGS[$m]} != "$CHANGES" ]]; then
		printf '  %s: %s messages, expected %s\n' "$m" "${MSGS[$m]}" "$CHANGES"
		BAD=1
	fi
	printf '  %-9s %8s s  %9s messages  client cpu %6s s  peak RSS %7s MB\n' "$m" "${S[$m]}" "${MSGS[$m]}" "${CPU[$m]}" "${RSS[$m]}"
done

# ---------------------------------------------------------------- report
div() { awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) printf "-"; else printf f, a / b }'; }
printf '\n%-9s %9s %12s %9s %14s %12s %18s\n' mode seconds messages/s MB/s client_cpu_s peak_rss_mb rate/floor_rate
for m in "${MODES[@]}"; do
	rf=-
	# the sink's rate over the floor's (the issue's target: >= 0.8), i.e. floor seconds / sink seconds
	case $m in nats_r*) rf=$(div "${S[floor_r${m#nats_r}]:-}" "${S[$m]}") ;; esac
	printf '%-9s %9s %12s %9s %14s %12s %18s\n' "$m" "${S[$m]}" "$(div "$CHANGES" "${S[$m]}" %.0f)" \
		"$(div "${DATA_BYTES:-}" "$(awk -v s="${S[$m]}" 'BEGIN { print s * 1048576 }')")" "${CPU[$m]}" "${RSS[$m]}" "$rf"
done
printf '(MB/s: the JSON payload bytes of the %s data messages, headers not counted; one run on a shared machine)\n' "$CHANGES"
printf 'load average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
((BAD == 0)) || { printf 'MESSAGE COUNT MISMATCH\n'; exit 1; }
