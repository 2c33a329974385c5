#!/usr/bin/env bash
# Fan-out (issue 15): one backlog read by 1, 2 and 4 mirrors from a JetStream stream, beside the
# same number of mirrors each with its own slot on the source:
#   bash bench/fanout.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]
#
# Starts a source and a destination PostgreSQL cluster (regress/lib.sh; fsync = on, autovacuum
# = off; as root, the run continues as the postgres user through rp_run_unprivileged) and a
# 3-node JetStream cluster on loopback (regress/nats.sh). Every slot is created first, then one
# workload fills them all with the same backlog: ROWS rows (default 200,000) of mirror.sh's
# table in ROWS_PER_TXN-row transactions (default 1,000), an update pass (id % 4 = 0) and a
# delete pass (id % 10 = 0). Then for N = 1, 2, 4, each layout from a start where all its
# processes start together:
#   stream  the writer (replicant -S w_N --sink nats://..., a stream of its own, 3 replicas,
#           -E END) and N readers of that stream (replicant --source nats://... -S r_N_i
#           --sink postgres:... --create-tables, each its own destination database); a
#           reader has caught up when its checkpoint row holds the end LSN of the stream's
#           last transaction (read once the writer exited)
#   slot    N mirrors, each from its own slot s_N_i (replicant -d SRC -n -E END --sink
#           postgres:... --create-tables): caught up when it exits
# Measured over each layout's window (start to the last mirror caught up): the source's CPU
# (walsenders, and all its processes; bench/cpu.sh, sampled every 0.1 s), the nats-servers'
# CPU, the WAL the layout's slots retain on the source (pg_current_wal_lsn() - restart_lsn,
# the largest of its slots, sampled every 0.25 s: peak, MB x s over the window, and the time
# at which all its slots had confirmed the backlog's end), and each mirror's catch-up time. Every mirror's
# nsbench must equal the source's (count, sum of ids, sum of a), else the exit status is 1.
# The report ends with a table per N with stream / slot ratios and names the crossover: the
# smallest N at which the stream layout costs the source less walsender CPU than N slots.
#
# Environment: NS="1 2 4", LAYOUTS="stream slot" (one of them: the other's columns show "-"),
# RP_KEEP_CLUSTERS=1. --quick: 20,000 rows. The report is printed
# and written to bench/out/fanout-<timestamp>.txt. Uses the consumer built in this tree.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	nums=()
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		--quick) nums=(20000) ;;
		-h | --help) printf 'usage: [NS="1 2 4"] bash bench/fanout.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]\n'; exit 0 ;;
		*[!0-9]* | '') printf 'usage: bash bench/fanout.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]\n' >&2; exit 2 ;;
		*) nums+=("$arg") ;;
		esac
	done
	rows=${nums[0]:-200000} per=${nums[1]:-1000}
	((rows % per == 0)) || rp_die "ROWS must be a multiple of ROWS_PER_TXN"
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/fanout-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/fanout.sh --phase-run "$rows" "$per" "${NS:-1 2 4}" "${LAYOUTS:-stream slot}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
# shellcheck source=regress/nats.sh
. "$here/../regress/nats.sh"
# shellcheck source=bench/cpu.sh
. "$here/cpu.sh"
N_ROWS=$2 T=$3
read -r -a NS <<<"$4"
read -r -a LAYOUTS <<<"$5"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
pids=()
cleanup() {
	local rc=$? p
	set +e
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	# not a bare wait: the nats-servers are this shell's children too, and run until stopped
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rp_nats_cleanup
	rp_cluster_cleanup_all
	return "$rc"
}
trap cleanup EXIT
status=0

slots=0
for n in "${NS[@]}"; do slots=$((slots + 1 + n)); done
rp_cluster_start src "autovacuum = off" "fsync = on" "max_replication_slots = $((slots + 4))" \
	"max_wal_senders = $((slots + 4))" "max_slot_wal_keep_size = -1"
rp_cluster_start dst "autovacuum = off" "fsync = on" "max_connections = 100"
SRC=$(rp_conninfo src)
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
dst() { PGOPTIONS='-c client_min_messages=warning' rp_psql dst "$@"; }
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
# shellcheck disable=SC2154
POSTMASTERS=("$(head -n 1 "$src_DATA/postmaster.pid")")
rp_nats_start 3
rp_nats_build_tools "$WORK"
URL=$(rp_nats_sink_url)

printf 'replicant fan-out bench: PostgreSQL %s, nats-server %s (3 nodes on loopback), %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nats-server --version 2>/dev/null | awk '{ print $NF }')" "$(nproc)" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer: %s; load average at start: %s\n\n' "$(command -v replicant)" "$(cut -d' ' -f1-3 /proc/loadavg)"

# every slot first, then one backlog for all
for n in "${NS[@]}"; do
	replicant -d "$SRC" -S "w_$n" --create-slot 2>>"$WORK/slots.log"
	for ((i = 1; i <= n; i++)); do
		replicant -d "$SRC" -S "s_${n}_$i" --create-slot 2>>"$WORK/slots.log"
		dst -c "CREATE DATABASE f_${n}_$i" -c "CREATE DATABASE s_${n}_$i"
	done
done
src -c "CREATE TABLE nsbench(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb)"
src -c CHECKPOINT
src <<-SQL
	DO \$\$ BEGIN FOR i IN 0..($N_ROWS/$T)-1 LOOP
	  INSERT INTO nsbench SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(i*$T+1,(i+1)*$T) g;
	  COMMIT; END LOOP; END \$\$;
	UPDATE nsbench SET a=a+1 WHERE id % 4 = 0;
	DELETE FROM nsbench WHERE id % 10 = 0;
SQL
END=$(src -Atc "select pg_current_wal_lsn()")
src -c CHECKPOINT
CHANGES=$((N_ROWS + N_ROWS / 4 + N_ROWS / 10))
WANT=$(src -Atc "SELECT count(*) || ' ' || sum(id) || ' ' || sum(a) FROM nsbench")
printf '%d rows in %d-row transactions, +%d updates, +%d deletes: %d changes; end %s; %s MB of WAL per slot\n\n' \
	"$N_ROWS" "$T" $((N_ROWS / 4)) $((N_ROWS / 10)) "$CHANGES" "$END" \
	"$(src -Atc "SELECT round(pg_wal_lsn_diff('$END', restart_lsn) / 1048576) FROM pg_replication_slots WHERE slot_name = 'w_${NS[0]}'")"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
nats_ticks() {
	local i pv t sum=0
	for ((i = 1; i <= RP_NATS_N; i++)); do
		pv="RP_NATS_PID_$i"
		t=$(ticks_of "${!pv}") && sum=$((sum + t))
	done
	echo "$sum"
}

# retention sampler: every 0.25 s, "EPOCH|BYTES|DONE": the largest retention among the named
# slots, and whether all of them confirmed END
ret_sample() {
	src -Atc "SELECT extract(epoch FROM clock_timestamp()), coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)), 0)::bigint,
	                 bool_and(confirmed_flush_lsn >= '$END')
	          FROM pg_replication_slots WHERE slot_name IN ($1)" >>"$2" 2>/dev/null || true
}
ret_start() {
	RET_LIST=$1 RET_FILE=$2
	(
		while :; do
			ret_sample "$RET_LIST" "$RET_FILE"
			sleep 0.25 &
			wait $!
		done
	) &
	RET_PID=$!
}
# (one last sample at the window's end: a short window may end between two)
ret_stop() { kill "$RET_PID" 2>/dev/null || true; wait "$RET_PID" 2>/dev/null || true; ret_sample "$RET_LIST" "$RET_FILE"; }
# ret_summary FILE T0: "PEAK_MB MBxS RELEASED_S" (released: the first sample at which every
# slot of the layout had confirmed END, seconds after T0: from then on the source may drop the
# backlog's WAL at its next checkpoint; "-" when none did within the window)
ret_summary() {
	awk -F'|' -v t0="$2" '{ t[NR] = $1; b[NR] = $2; d[NR] = $3 }
		END {
			peak = 0; area = 0; rel = "-"
			for (i = 1; i <= NR; i++) { if (b[i] > peak) peak = b[i]; if (i > 1) area += (t[i] - t[i-1]) * (b[i] + b[i-1]) / 2 }
			for (i = 1; i <= NR; i++) if (d[i] == "t") { rel = sprintf("%.2f", t[i] - t0); break }
			printf "%.1f %.1f %s", peak / 1048576, area / 1048576, rel
		}' "$1"
}

# mirror_ok DB: the mirror's nsbench equals the source's
mirror_ok() {
	local got
	got=$(dst -d "$1" -Atc "SELECT count(*) || ' ' || sum(id) || ' ' || sum(a) FROM nsbench" 2>/dev/null || echo none)
	[[ $got == "$WANT" ]] || { printf '  %s: nsbench is "%s", the source has "%s"\n' "$1" "$got" "$WANT"; status=1; }
}

# the End-Lsn of the stream's last transaction (its Replicant-Last message)
stream_end() {
	local stream=$1 last
	last=$(rp_nats_tool "$stream" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
	rp_nats_tool "$stream" dump "$((last > 20 ? last - 20 : 1))" "$last" | python3 -c '
import json, sys
end = ""
for line in sys.stdin:
    h = json.loads(line).get("headers") or {}
    if h.get("Replicant-Last") == "true":
        end = h["Replicant-End-Lsn"]
print(end)'
}

declare -A WS_CPU SRC_CPU NATS_CPU RET WALL CATCH
# run LAYOUT N
run() {
	local layout=$1 n=$2 list='' i t0 done_at=() e wpid='' target='' nt0 ok k
	declare -A rpid=()
	for ((i = 1; i <= n; i++)); do
		if [[ $layout == slot ]]; then list+="${list:+,}'s_${n}_$i'"; fi
	done
	[[ $layout == slot ]] || list="'w_$n'"
	: >"$WORK/ret-$layout-$n"
	ret_start "$list" "$WORK/ret-$layout-$n"
	cpu_sampler_start "$WORK/cpu-$layout-$n"
	nt0=$(nats_ticks)
	t0=$(now)
	if [[ $layout == stream ]]; then
		replicant -d "$SRC" -S "w_$n" -n --start -E "$END" --sink "$URL" --nats-stream "FAN_$n" \
			--nats-subject-prefix "fan.n$n" --state-dir "$WORK/st_w_$n" 2>"$WORK/w_$n.err" &
		wpid=$!
		pids+=("$wpid")
		for ((i = 1; i <= n; i++)); do
			replicant --source "$URL" --nats-stream "FAN_$n" -S "r_${n}_$i" --state-dir "$WORK/st_r_${n}_$i" \
				--start --sink "postgres:$(rp_conninfo dst "f_${n}_$i")" --create-tables 2>"$WORK/r_${n}_$i.err" &
			rpid[$i]=$!
			pids+=("$!")
		done
	else
		for ((i = 1; i <= n; i++)); do
			replicant -d "$SRC" -S "s_${n}_$i" -n --start -E "$END" --sink "postgres:$(rp_conninfo dst "s_${n}_$i")" \
				--create-tables --state-dir "$WORK/st_s_${n}_$i" 2>"$WORK/s_${n}_$i.err" &
			rpid[$i]=$!
			pids+=("$!")
		done
	fi
	# until every mirror caught up (the stream's readers: once the writer exited, their
	# checkpoints at the stream's last transaction)
	left=$n
	while ((left > 0)); do
		if [[ -n $wpid ]] && ! kill -0 "$wpid" 2>/dev/null; then
			wait "$wpid" || { tail -n 5 "$WORK/w_$n.err" >&2; rp_die "the writer of FAN_$n failed"; }
			wpid=
			target=$(stream_end "FAN_$n")
			[[ -n $target ]] || rp_die "stream FAN_$n has no complete transaction"
			WALL[writer_$n]=$(elapsed "$t0" "$(now)")
		fi
		for ((i = 1; i <= n; i++)); do
			[[ -z ${done_at[$i]:-} ]] || continue
			if [[ $layout == slot ]]; then
				kill -0 "${rpid[$i]}" 2>/dev/null && continue
				wait "${rpid[$i]}" || { tail -n 5 "$WORK/s_${n}_$i.err" >&2; rp_die "mirror s_${n}_$i failed"; }
			else
				kill -0 "${rpid[$i]}" 2>/dev/null || { tail -n 5 "$WORK/r_${n}_$i.err" >&2; rp_die "reader r_${n}_$i exited"; }
				[[ -n $target ]] || continue
				ok=$(dst -d "f_${n}_$i" -Atc "SELECT end_lsn >= '$target' FROM replicant.checkpoint WHERE slot = 'r_${n}_$i'" 2>/dev/null || true)
				[[ $ok == t ]] || continue
			fi
			done_at[i]=$(elapsed "$t0" "$(now)")
			left=$((left - 1))
		done
		sleep 0.1
	done
	e=$(now)
	cpu_sampler_stop
	ret_stop
	WALL[$layout-$n]=$(elapsed "$t0" "$e")
	NATS_CPU[$layout-$n]=$(secs $(($(nats_ticks) - nt0)))
	SRC_CPU[$layout-$n]=$(cpu_total)
	WS_CPU[$layout-$n]=$(cpu_split | sed -n 's/.*walsender \([0-9.]*\).*/\1/p')
	WS_CPU[$layout-$n]=${WS_CPU[$layout-$n]:-0}
	RET[$layout-$n]=$(ret_summary "$WORK/ret-$layout-$n" "$t0")
	CATCH[$layout-$n]=$(printf '%s ' "${done_at[@]}")
	for ((i = 1; i <= n; i++)); do
		if [[ $layout == stream ]]; then
			kill -TERM "${rpid[$i]}"
			wait "${rpid[$i]}" || true
			mirror_ok "f_${n}_$i"
		else
			mirror_ok "s_${n}_$i"
		fi
	done
	read -r k _ <<<"${RET[$layout-$n]}"
	printf '  %-6s N=%d: %7s s wall; source cpu %6s s (walsenders %6s s), nats cpu %6s s; retention peak %s MB; catch-up s: %s%s\n' \
		"$layout" "$n" "${WALL[$layout-$n]}" "${SRC_CPU[$layout-$n]}" "${WS_CPU[$layout-$n]}" "${NATS_CPU[$layout-$n]}" \
		"$k" "${CATCH[$layout-$n]}" "$([[ $layout == stream ]] && printf '(writer done at %s s)' "${WALL[writer_$n]}")"
}

for n in "${NS[@]}"; do
	for l in "${LAYOUTS[@]}"; do run "$l" "$n"; done
done

# ---------------------------------------------------------------- report
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b + 0 == 0) printf "-"; else printf "%.2f", a / b }'; }
maxof() { tr ' ' '\n' <<<"$1" | awk 'NF { if ($1 > m) m = $1; n++ } END { if (n) printf "%.2f", m; else printf "-" }'; }
printf '\n%-3s %-7s %8s %12s %10s %9s %10s %11s %12s %11s %11s\n' N layout wall_s walsender_s src_cpu_s nats_cpu_s \
	ret_peak_MB ret_MBxs released_s catchup_max catchup_min
for n in "${NS[@]}"; do
	for l in "${LAYOUTS[@]}"; do
		read -r pk ar rel <<<"${RET[$l-$n]}"
		printf '%-3s %-7s %8s %12s %10s %9s %10s %11s %12s %11s %11s\n' "$n" "$l" "${WALL[$l-$n]}" "${WS_CPU[$l-$n]}" \
			"${SRC_CPU[$l-$n]}" "${NATS_CPU[$l-$n]}" "$pk" "$ar" "$rel" "$(maxof "${CATCH[$l-$n]}")" \
			"$(tr ' ' '\n' <<<"${CATCH[$l-$n]}" | awk 'NF { if (m == "" || $1 < m) m = $1 } END { printf "%.2f", m }')"
	done
done
printf '\nstream / slot:\n%-3s %12s %10s %10s %12s\n' N walsender src_cpu ret_MBxs catchup_max
cross=
for n in "${NS[@]}"; do
	a1='' a2=''
	read -r _ a1 _ <<<"${RET[stream-$n]:-}" || true
	read -r _ a2 _ <<<"${RET[slot-$n]:-}" || true
	w=$(div "${WS_CPU[stream-$n]:-}" "${WS_CPU[slot-$n]:-}")
	printf '%-3s %12s %10s %10s %12s\n' "$n" "$w" "$(div "${SRC_CPU[stream-$n]:-}" "${SRC_CPU[slot-$n]:-}")" \
		"$(div "$a1" "$a2")" "$(div "$(maxof "${CATCH[stream-$n]:-}")" "$(maxof "${CATCH[slot-$n]:-}")")"
	if [[ -z $cross && $w != - ]] && awk -v w="$w" 'BEGIN { exit !(w < 1) }'; then cross=$n; fi
done
if [[ -n $cross ]]; then
	printf 'crossover: from N = %s mirrors the stream layout costs the source less walsender CPU than one slot per mirror\n' "$cross"
else
	printf 'crossover: none among N = %s (the stream layout never cost the source less walsender CPU)\n' "${NS[*]}"
fi
printf '(walsender_s, src_cpu_s: the source cluster'"'"'s processes over the window; nats_cpu_s: the 3 nats-servers; ret: the largest\n'
printf ' pg_current_wal_lsn() - restart_lsn among the layout'"'"'s slots (stream: the writer'"'"'s), released_s: when all of them confirmed the end;\n'
printf ' catch-up: seconds from the common start to each mirror holding the whole backlog; one run on a shared machine)\n'
printf 'load average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
((status == 0)) || { printf 'MIRROR MISMATCH\n'; exit 1; }
