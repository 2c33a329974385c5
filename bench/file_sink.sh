#!/usr/bin/env bash
# Backlog catch-up into a file: replicant's file sink beside pg_recvlogical:
#   bash bench/file_sink.sh [--build] [ROWS]
#
# Starts a throwaway cluster (regress/lib.sh; as root, the run continues as the postgres user
# through rp_run_unprivileged), creates one slot per client, then runs the brief's workload
# (ROWS rows inserted in one transaction, then 25% updated and 10% deleted, exactly as
# ../shared/bench/peers.sh: ROWS * 1.35 changes in three transactions) while no client runs: a
# backlog. Then each client catches up to the end LSN, timed from start to exit:
#   replicant      replicant -S SLOT -n --start -E END --sink file:PATH (JSON lines; the file is
#                  fsynced at every batch, the default, with its checkpoint line)
#   wal2json2      pg_recvlogical --start --endpos=END -o format-version=2 -f PATH (JSON lines;
#                  fsync every 10 s and at exit, its default)
#   pgoutput       pg_recvlogical --start --endpos=END -o proto_version=1
#                  -o publication_names=benchpub -f PATH (pgoutput's binary messages)
# Reported: seconds, the ratio to wal2json (target: replicant >= 2x faster than wal2json2), bytes
# written, lines, the client's CPU time and peak RSS, and the servers' CPU time meanwhile (the
# walsender; polled every 0.1 s). The WAL is read once before the first client so that every
# client finds it in the page cache.
#
# The server's logical_decoding_work_mem is left at 64MB: the 1M-row transaction outgrows it, and
# the server spills it to pg_replslot/ for pg_recvlogical (wal2json cannot stream; pgoutput
# proto 1 does not) and streams it while in progress to replicant, which asks for streaming by
# default (REPLICANT_OPTS="-o streaming=off" makes it spill too). Each slot's
# pg_stat_replication_slots counters (spilled / streamed transactions and bytes) are printed.
#
# Environment: CLIENTS="replicant wal2json2 pgoutput" (default all, in this order); KEEP_FILES=1
# keeps the output files in the cluster directory (with RP_KEEP_CLUSTERS=1); PERF=1 records the
# replicant consumer with perf and prints the top of its report; REPLICANT_OPTS="..." extra
# consumer options. The report is printed and written to bench/out/file_sink-<timestamp>.txt.
# Uses the installed plugin and consumer: run `make && make install` first (or pass --build).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

ALL_CLIENTS="replicant wal2json2 pgoutput"

usage() {
	printf 'usage: [CLIENTS="%s"] bash bench/file_sink.sh [--build] [ROWS]\n' "$ALL_CLIENTS"
	printf '  ROWS     rows inserted in one transaction (default 1000000)\n'
	printf '  --build  make && make install first\n'
}

# ---------------------------------------------------------------- entry: as the caller
if [[ ${1:-} != --phase-run ]]; then
	build=0
	rows=1000000
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) usage; exit 0 ;;
		*[!0-9]* | '') usage >&2; exit 2 ;;
		*) rows=$arg ;;
		esac
	done
	clients=${CLIENTS:-$ALL_CLIENTS}
	for c in $clients; do
		[[ " $ALL_CLIENTS " == *" $c "* ]] || rp_die "unknown client $c (known: $ALL_CLIENTS)"
	done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/file_sink-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/file_sink.sh --phase-run "$rows" "$clients" "${PERF:-0}" \
		"${REPLICANT_OPTS:-}" "${KEEP_FILES:-0}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
ROWS=$2
read -r -a CLIENTS <<<"$3"
PERF=$4
read -r -a ROPTS <<<"$5"
KEEP_FILES=$6
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
trap rp_cluster_cleanup_all EXIT

rp_cluster_start fsink "autovacuum = off" "fsync = on"
CONN=$(rp_conninfo fsink)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$fsink_DIR DATA=$fsink_DATA
psql_() { PGOPTIONS='-c client_min_messages=warning' rp_psql fsink "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; } # kB to MB
POSTMASTERS=("$(head -n 1 "$DATA/postmaster.pid")")

# CPU seconds of the server's processes over a timed window (as bench/mirror.sh): cpu_begin,
# cpu_poll every 0.1 s while it runs, cpu_total (bench/cpu.sh: polls fork nothing)
# shellcheck source=bench/cpu.sh
. "$here/cpu.sh"

# run_measured LOG CMD...: as bench/mirror.sh: RUN_RC, RUN_S, RUN_CPU, RUN_RSS_KB, RUN_SERVER_CPU
run_measured() {
	local log=$1 a b pid line hwm=0 ticks=0 tfile=$1.time timed=0
	shift
	RUN_RC=0
	[[ -x /usr/bin/time ]] && timed=1
	cpu_begin
	a=$(now)
	if ((timed)); then
		/usr/bin/time -v -o "$tfile" "$@" 2>"$log" &
	else
		"$@" 2>"$log" &
	fi
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		cpu_poll
		if ((!timed)); then
			if proc_sample "$pid"; then
				ticks=$TICKS_OF
				[[ -n $PROC_HWM_KB ]] && hwm=$PROC_HWM_KB
			fi
		fi
		pause 0.1 # no fork while the run is timed (bench/cpu.sh)
	done
	wait "$pid" || RUN_RC=$?
	b=$(now)
	RUN_S=$(sub "$b" "$a")
	RUN_SERVER_CPU=$(cpu_total)
	if ((timed)); then
		RUN_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
		RUN_CPU=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$tfile")
	else
		RUN_RSS_KB=$hwm
		RUN_CPU=$(awk -v t="$ticks" -v hz="$TICKS" 'BEGIN { printf "%.2f", t / hz }')
	fi
}

psql_ <<-'SQL'
	CREATE TABLE bench(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb);
	CREATE PUBLICATION benchpub FOR TABLE bench;
SQL
CONSUMER=$(command -v replicant) || rp_die "replicant is not installed in $RP_BINDIR: run make install"
declare -A SLOT=([replicant]=f_replicant [wal2json2]=f_wal2json [pgoutput]=f_pgoutput)
declare -A PLUG=([wal2json2]=wal2json [pgoutput]=pgoutput)
for c in "${CLIENTS[@]}"; do
	if [[ $c == replicant ]]; then
		replicant -d "$CONN" -S "${SLOT[$c]}" --create-slot
	else
		psql_ -Atc "select pg_create_logical_replication_slot('${SLOT[$c]}', '${PLUG[$c]}')" >/dev/null
	fi
done
START=$(psql_ -Atc "select pg_current_wal_lsn()")

t0=$(now)
psql_ -c "INSERT INTO bench SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(1,$ROWS) g"
psql_ -c "UPDATE bench SET a=a+1 WHERE id % 4 = 0"
psql_ -c "DELETE FROM bench WHERE id % 10 = 0"
t1=$(now)
END=$(psql_ -Atc "select pg_current_wal_lsn()")
WAL=$(psql_ -Atc "select pg_size_pretty(pg_wal_lsn_diff('$END', '$START'))")
changes=$((ROWS + ROWS / 4 + ROWS / 10))

bin_id() { printf '%s, md5 %s' "$(date -u -r "$1" '+%Y-%m-%d %H:%M:%S UTC')" "$(md5sum <"$1" | cut -c1-12)"; }
PLUGIN_SO=$("$PG_CONFIG" --pkglibdir)/replicant.so
IDS="$(bin_id "$PLUGIN_SO") / $(bin_id "$CONSUMER")"
printf 'replicant file sink bench: PostgreSQL %s, %s cores, %s\n' \
	"$(psql_ -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'replicant.so / replicant: built %s; load average at start: %s\n' "$IDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'workload: %d rows inserted in one transaction, %d updated, %d deleted (%d changes, %s of WAL) in %s s; end %s\n' \
	"$ROWS" $((ROWS / 4)) $((ROWS / 10)) "$changes" "$WAL" "$(sub "$t1" "$t0")" "$END"
printf 'logical_decoding_work_mem = %s (the default): the 1M-row transaction outgrows it; the server spills it to pg_replslot/ for a client that does not ask for streaming, and streams it while in progress to one that does (replicant does by default; -o streaming=off turns it off)\n' \
	"$(psql_ -Atc 'show logical_decoding_work_mem')"
printf 'replicant options: defaults%s\n\n' "$( ((${#ROPTS[@]})) && printf ' and %s' "${ROPTS[*]}")"

# Warm-up, untimed: the backlog's WAL into the page cache.
cat "$DATA"/pg_wal/0* >/dev/null

declare -A SECS BYTES LINES CCPU SCPU RSS
for c in "${CLIENTS[@]}"; do
	file=$WORK/out-$c
	log=$WORK/$c.log
	rm -f "$file"
	case $c in
	replicant)
		if [[ $PERF == 1 ]]; then
			cmd=(perf record -g -o "$WORK/perf-file.data" -- "$CONSUMER")
		else
			cmd=("$CONSUMER")
		fi
		cmd+=(-d "$CONN" -S "${SLOT[$c]}" -n --start -E "$END" --sink "file:$file"
			--state-dir "$WORK/state" -v "${ROPTS[@]}")
		;;
	wal2json2)
		cmd=(pg_recvlogical -d "$CONN" -S "${SLOT[$c]}" --start --endpos="$END" --no-loop -v
			-o format-version=2 -f "$file")
		;;
	pgoutput)
		cmd=(pg_recvlogical -d "$CONN" -S "${SLOT[$c]}" --start --endpos="$END" --no-loop -v
			-o proto_version=1 -o publication_names=benchpub -f "$file")
		;;
	esac
	run_measured "$log" "${cmd[@]}"
	if ((RUN_RC != 0)); then
		tail -n 20 "$log" >&2
		rp_die "$c exited with status $RUN_RC"
	fi
	if [[ $c != replicant ]] && ! grep -q 'end position .* reached' "$log"; then
		cat "$log" >&2
		rp_die "$c: pg_recvlogical stopped before the end position $END"
	fi
	SECS[$c]=$RUN_S CCPU[$c]=$RUN_CPU SCPU[$c]=$RUN_SERVER_CPU RSS[$c]=$(mb "$RUN_RSS_KB")
	BYTES[$c]=$(stat -c %s "$file")
	LINES[$c]=$(wc -l <"$file")
	past=$(psql_ -Atc "select pg_wal_lsn_diff(confirmed_flush_lsn, '$END') from pg_replication_slots where slot_name = '${SLOT[$c]}'")
	# how the server handled the big transaction for this slot (the walsender flushes its
	# statistics when it exits)
	stats=$(psql_ -Atc "select format('spilled %s txns / %s MB, streamed %s txns / %s MB', spill_txns, spill_bytes / 1048576, stream_txns, stream_bytes / 1048576) from pg_stat_replication_slots where slot_name = '${SLOT[$c]}'")
	what=''
	case $c in
	replicant) what="$(grep -c '"kind":"checkpoint"' "$file") checkpoint lines (one per batch)" ;;
	wal2json2) what="$(grep -c '"action":"[IUD]"' "$file") change lines" ;;
	esac
	printf '  %-10s %7s s (client cpu %s s, server cpu %s s, client peak RSS %s MB); %s bytes, %s lines%s; slot confirmed at end%+d; server %s\n' \
		"$c" "${SECS[$c]}" "${CCPU[$c]}" "${SCPU[$c]}" "${RSS[$c]}" "${BYTES[$c]}" "${LINES[$c]}" \
		"${what:+ ($what)}" "$past" "${stats:-(no slot statistics)}"
	if [[ $c == replicant && $PERF == 1 ]]; then
		perf report -i "$WORK/perf-file.data" --stdio --no-children 2>/dev/null | grep -v '^$' |
			head -n 60 | sed 's/^/    perf: /'
	fi
	[[ $KEEP_FILES == 1 ]] || rm -f "$file"
done

# ---------------------------------------------------------------- report
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) printf "-"; else printf "%.2f", a / b }'; }
printf '\n%-10s %8s %17s %13s %10s %10s %13s %13s %12s\n' client seconds 'wal2json2/client' bytes MB/s lines client_cpu_s server_cpu_s peak_rss_mb
for c in "${CLIENTS[@]}"; do
	printf '%-10s %8s %16sx %13s %10s %10s %13s %13s %12s\n' "$c" "${SECS[$c]}" \
		"$(ratio "${SECS[wal2json2]:-}" "${SECS[$c]}")" "${BYTES[$c]}" \
		"$(awk -v b="${BYTES[$c]}" -v s="${SECS[$c]}" 'BEGIN { printf "%.1f", (s > 0) ? b / 1048576 / s : 0 }')" \
		"${LINES[$c]}" "${CCPU[$c]}" "${SCPU[$c]}" "${RSS[$c]}"
done
if [[ -n ${SECS[replicant]:-} && -n ${SECS[wal2json2]:-} ]]; then
	r=$(ratio "${SECS[wal2json2]}" "${SECS[replicant]}")
	verdict=MISSED
	awk -v r="$r" 'BEGIN { exit !(r >= 2) }' && verdict=met
	printf '\ntarget: replicant >= 2x faster than pg_recvlogical + wal2json format 2: %sx, %s\n' "$r" "$verdict"
fi
printf '(seconds: client start to exit at the end LSN; server cpu: the walsender and the rest of the server meanwhile)\n'
printf 'load average at end: %s' "$(cut -d' ' -f1-3 /proc/loadavg)"
[[ "$(bin_id "$PLUGIN_SO") / $(bin_id "$CONSUMER")" == "$IDS" ]] ||
	printf '; WARNING: replicant was reinstalled during the run'
printf '\n'
