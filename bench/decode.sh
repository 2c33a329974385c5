#!/usr/bin/env bash
# Decode throughput of replicant beside the peer output plugins:  bash bench/decode.sh [ROWS]
#
# Starts a throwaway cluster (regress/lib.sh; as root, the run continues as the postgres user
# through rp_run_unprivileged), runs the brief's workload (ROWS inserts in one transaction, then
# 25% updates and 10% deletes, exactly as ../shared/bench/peers.sh) and decodes it through each
# plugin two ways:
#   sql     pg_logical_slot_peek[_binary]_changes up to the end LSN, counted inside the server
#           (count(*), sum(length(data))): decoding and output, no network
#   stream  pg_recvlogical --start --endpos=END -f - | wc -c: decoding, output, the walsender
#           protocol and a client that writes everything it receives
# Plugins: nullplug (pgoutput, proto 1, on an empty publication: decodes everything, outputs
# nothing; the floor), pgoutput (proto 1, text values, publication on bench), pgoutput_bin
# (proto 2, binary=true), test_decoding (default options), wal2json2 (format-version 2: one
# message per change), replicant (binary, default options: frames of up to frame_size, 256 kB),
# replicant_json (format=json: one message per record). decoderbufs is not
# packaged for Debian and is left out (its numbers are in ../shared/DESIGN.md).
#
# Environment: RUNS=N repeats every measurement N times and reports the median (default 1);
# PLUGINS="name ..." measures a subset; WORK_MEM=4GB sets logical_decoding_work_mem (default:
# the server's 64MB, so the 1M-row transaction spills to disk and every plugin pays for reading
# it back); RP_KEEP_CLUSTERS=1 keeps the cluster. The report is
# printed and written to bench/out/decode-<timestamp>.txt. Uses the installed plugin: run
# `make && make install` first (or pass --build, which does it as regress/run_tests.sh does).
#
# Reading it: CPU seconds are the SQL backend's (its own /proc/self/stat), the walsender's
# (polled from /proc/PID/stat until it exits: the last 50 ms may be missed, one that lives less
# shows 0) and the client's (pg_recvlogical and wc, from the shell's `times`); they are steadier
# than wall time on a busy machine, and one-message-per-change plugins cost the client about as
# much CPU as the walsender. length() of a text column counts characters, so the textual
# plugins also pay a per-byte scan in sql, as in peers.sh. The stream floor is well above the
# sql floor even with no output: the walsender checks its socket for replies (a recv()) for
# every WAL record; a send() per CopyData is what separates one-message-per-change plugins
# (pgoutput, wal2json 2, test_decoding, replicant json) from framed output (replicant binary).
# One run is noisy: use RUNS=3 or more for numbers you quote.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

ALL_PLUGINS="nullplug pgoutput pgoutput_bin test_decoding wal2json2 replicant replicant_json"

usage() {
	printf 'usage: [RUNS=N] [PLUGINS="..."] [WORK_MEM=SIZE] bash bench/decode.sh [--build] [ROWS]\n'
	printf '  ROWS     rows inserted in one transaction (default 1000000)\n'
	printf '  --build  make && make install first\n'
	printf '  plugins: %s\n' "$ALL_PLUGINS"
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
	runs=${RUNS:-1}
	[[ $runs =~ ^[1-9][0-9]*$ ]] || rp_die "RUNS must be a positive integer: $runs"
	plugins=${PLUGINS:-$ALL_PLUGINS}
	for p in $plugins; do
		[[ " $ALL_PLUGINS " == *" $p "* ]] || rp_die "unknown plugin $p (known: $ALL_PLUGINS)"
	done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/decode-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	# The unprivileged run may happen in a copy of the tree: it reports on stdout, kept here.
	rp_run_unprivileged bench/decode.sh --phase-run "$rows" "$runs" "$plugins" "${WORK_MEM:-}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
ROWS=$2
RUNS=$3
read -r -a NAMES <<<"$4"
WORK_MEM=$5
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
trap rp_cluster_cleanup_all EXIT

declare -A PLUG=([nullplug]=pgoutput [pgoutput]=pgoutput [pgoutput_bin]=pgoutput
	[test_decoding]=test_decoding [wal2json2]=wal2json [replicant]=replicant [replicant_json]=replicant)
# SQL interface options (after the upto arguments) and pg_recvlogical -o options, as peers.sh.
declare -A OPTS=([nullplug]="'proto_version','1','publication_names','nullpub'"
	[pgoutput]="'proto_version','1','publication_names','benchpub'"
	[pgoutput_bin]="'proto_version','2','publication_names','benchpub','binary','true'"
	[test_decoding]="" [wal2json2]="'format-version','2'" [replicant]="" [replicant_json]="'format','json'")
declare -A ROPTS=([nullplug]="-o proto_version=1 -o publication_names=nullpub"
	[pgoutput]="-o proto_version=1 -o publication_names=benchpub"
	[pgoutput_bin]="-o proto_version=2 -o publication_names=benchpub -o binary=true"
	[test_decoding]="" [wal2json2]="-o format-version=2" [replicant]="" [replicant_json]="-o format=json")
declare -A BIN=([nullplug]=_binary [pgoutput]=_binary [pgoutput_bin]=_binary
	[test_decoding]="" [wal2json2]="" [replicant]=_binary [replicant_json]="")

# autovacuum would compete for the cores and write WAL past the end LSN
settings=("autovacuum = off" "max_wal_size = 8GB")
[[ -n $WORK_MEM ]] && settings+=("logical_decoding_work_mem = '$WORK_MEM'")
rp_cluster_start bench "${settings[@]}"
CONN=$(rp_conninfo bench)
psql_() { rp_psql bench "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
median() { tr ' ' '\n' <<<"$*" | sort -g | awk '{ v[NR] = $1 } END {
	if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

psql_ <<-'SQL'
	SET client_min_messages = warning;
	CREATE TABLE bench(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb);
	CREATE PUBLICATION benchpub FOR TABLE bench;
	CREATE PUBLICATION nullpub;
SQL
# One slot before the workload; every measurement decodes from a copy of it with its plugin
# (pg_copy_logical_replication_slot keeps restart_lsn and confirmed_flush), so a stream, which
# consumes its slot, can be repeated, and only two slots ever exist.
psql_ -Atc "select pg_create_logical_replication_slot('b_base', 'pgoutput')" >/dev/null

t0=$(now)
psql_ -c "INSERT INTO bench SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(1,$ROWS) g"
psql_ -c "UPDATE bench SET a=a+1 WHERE id % 4 = 0"
psql_ -c "DELETE FROM bench WHERE id % 10 = 0"
t1=$(now)
END=$(psql_ -Atc "select pg_current_wal_lsn()")
WAL=$(psql_ -Atc "select pg_size_pretty(pg_wal_lsn_diff('$END', confirmed_flush_lsn)) from pg_replication_slots where slot_name = 'b_base'")
changes=$((ROWS + ROWS / 4 + ROWS / 10))

printf 'replicant decode bench: PostgreSQL %s, %s cores, %s\n' \
	"$(psql_ -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
PLUGIN_SO=$("$PG_CONFIG" --pkglibdir)/replicant.so
plugin_id() { printf '%s, md5 %s' "$(date -u -r "$PLUGIN_SO" '+%Y-%m-%d %H:%M:%S UTC')" "$(md5sum <"$PLUGIN_SO" | cut -c1-12)"; }
PLUGIN_ID=$(plugin_id)
printf 'replicant.so: built %s; load average at start: %s\n' "$PLUGIN_ID" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'workload: %d rows inserted in one transaction, %d updated, %d deleted (%d changes, %s of WAL) in %s s; end %s\n' \
	"$ROWS" $((ROWS / 4)) $((ROWS / 10)) "$changes" "$WAL" "$(sub "$t1" "$t0")" "$END"
printf 'logical_decoding_work_mem = %s (%s)\n' "$(psql_ -Atc 'show logical_decoding_work_mem')" \
	"$([[ -n $WORK_MEM ]] && printf 'WORK_MEM' || printf 'the server default')"
printf 'runs per measurement: %d%s\n\n' "$RUNS" "$( ((RUNS > 1)) && printf ' (median shown)')"

copy_slot() { psql_ -Atc "select pg_copy_logical_replication_slot('b_base', '$1', false, '$2')" >/dev/null; }
drop_slot() { psql_ -Atc "select pg_drop_replication_slot('$1')" >/dev/null; }

# Warm-up, untimed: the WAL into the page cache, the catalogs into shared buffers.
copy_slot b_warm pgoutput
psql_ -Atc "select count(*) from pg_logical_slot_peek_binary_changes('b_warm', '$END', NULL, ${OPTS[nullplug]})" >/dev/null
drop_slot b_warm

# CPU seconds (user + system) of a process from /proc/PID/stat, or nothing once it is gone.
TICKS=$(getconf CLK_TCK)
cpu_ticks() {
	local line f
	read -r line 2>/dev/null <"/proc/$1/stat" || return 1
	read -r -a f <<<"${line##*) }" # after "pid (comm) ": state is f[0], utime f[11], stime f[12]
	printf '%d' $((f[11] + f[12]))
}
ticks_s() { awk -v t="$1" -v hz="$TICKS" 'BEGIN { printf "%.2f", t / hz }'; }
# shellcheck disable=SC2154 # exported by rp_cluster_start
POSTMASTER=$(head -n 1 "$bench_DATA/postmaster.pid")

declare -A SQL_S STREAM_S STREAM_BYTES SQL_ROWS SQL_BYTES SQL_CPU STREAM_CPU CLIENT_CPU STREAM_ALL_CPU
for name in "${NAMES[@]}"; do
	sql_times=() stream_times=() sql_cpus=() stream_cpus=() client_cpus=()
	o=${OPTS[$name]}
	[[ -n $o ]] && o=",$o"
	read -r -a ropts <<<"${ROPTS[$name]}"
	for ((run = 1; run <= RUNS; run++)); do
		slot=b_$name
		copy_slot "$slot" "${PLUG[$name]}"

		# SQL: the backend reads its own CPU time before and after (superusers may read files)
		a=$(now)
		mapfile -t out < <(psql_ -At <<-SQL
			select split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint from pg_read_file('/proc/self/stat') s;
			select count(*), coalesce(sum(length(data)), 0) from pg_logical_slot_peek${BIN[$name]}_changes('$slot', '$END', NULL $o);
			select split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint from pg_read_file('/proc/self/stat') s;
		SQL
		)
		b=$(now)
		((${#out[@]} == 3)) || rp_die "$name: the SQL interface failed"
		res=${out[1]}
		sql_cpu=$((out[2] - out[0]))

		# stream: pg_recvlogical into wc; the walsender's CPU time is polled until it exits
		# shellcheck disable=SC2154 # exported by rp_cluster_start
		errlog=$bench_DIR/recvlogical-$name.log
		bytesfile=$bench_DIR/bytes
		: >"$bytesfile"
		b=$(now)
		timesfile=$bench_DIR/times
		# in a subshell: its `times` then reports the CPU of pg_recvlogical and wc
		(
			timeout 1800 pg_recvlogical -d "$CONN" -S "$slot" --start --endpos="$END" --no-loop -v \
				"${ropts[@]}" -f - 2>"$errlog" | wc -c >"$bytesfile"
			rc=${PIPESTATUS[0]}
			times >"$timesfile"
			exit "$rc"
		) &
		bg=$!
		wsnd='' stream_cpu=0
		while kill -0 "$bg" 2>/dev/null; do
			if [[ -z $wsnd ]]; then
				wsnd=$(pgrep -P "$POSTMASTER" -f 'walsender' | head -n 1 || true)
			elif t=$(cpu_ticks "$wsnd"); then
				stream_cpu=$t
			fi
			sleep 0.05
		done
		wait "$bg" || { cat "$errlog" >&2; rp_die "$name: pg_recvlogical failed"; }
		c=$(now)
		bytes=$(<"$bytesfile")
		client_cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }
			printf "%.2f", t }' "$timesfile")
		# pg_recvlogical -v says why it stopped: the stream must have reached END
		if ! grep -q 'end position .* reached' "$errlog"; then
			cat "$errlog" >&2
			rp_die "$name: pg_recvlogical stopped before the end position $END"
		fi
		how=$(sed -n 's/.*end position .* reached by \(keepalive\|WAL record\).*/\1/p' "$errlog" | tail -n 1)
		past=$(psql_ -Atc "select pg_wal_lsn_diff(confirmed_flush_lsn, '$END') from pg_replication_slots where slot_name = '$slot'")
		drop_slot "$slot"
		sql_times+=("$(sub "$b" "$a")")
		stream_times+=("$(sub "$c" "$b")")
		sql_cpus+=("$(ticks_s "$sql_cpu")")
		stream_cpus+=("$(ticks_s "$stream_cpu")")
		client_cpus+=("$client_cpu")
		printf '  %-15s run %d: sql %6.2f s (cpu %5.2f s; %s rows, %s bytes)  stream %6.2f s (cpu: walsender %5.2f s, client %5.2f s; %s bytes; end reached by %s, slot confirmed at end%+d)\n' \
			"$name" "$run" "${sql_times[-1]}" "${sql_cpus[-1]}" "${res%%|*}" "${res##*|}" \
			"${stream_times[-1]}" "${stream_cpus[-1]}" "${client_cpus[-1]}" "$bytes" "$how" "$past"
	done
	SQL_S[$name]=$(median "${sql_times[@]}")
	STREAM_S[$name]=$(median "${stream_times[@]}")
	SQL_CPU[$name]=$(median "${sql_cpus[@]}")
	STREAM_CPU[$name]=$(median "${stream_cpus[@]}")
	CLIENT_CPU[$name]=$(median "${client_cpus[@]}")
	STREAM_ALL_CPU[$name]=$(awk -v a="${STREAM_CPU[$name]}" -v b="${CLIENT_CPU[$name]}" 'BEGIN { printf "%.2f", a + b }')
	STREAM_BYTES[$name]=$bytes
	SQL_ROWS[$name]=${res%%|*}
	SQL_BYTES[$name]=${res##*|}
done

# ---------------------------------------------------------------- report
ratio() { # A/B, or - when either is missing
	if [[ -z ${1:-} || -z ${2:-} ]]; then printf -- '-'; else
		awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) printf "-"; else printf "%.2f", a / b }'; fi
}
printf '\n%-15s %8s %9s %14s %22s %25s\n' plugin sql_s stream_s stream_bytes ratio_sql_vs_pgoutput ratio_stream_vs_pgoutput
for name in "${NAMES[@]}"; do
	printf '%-15s %8.2f %9.2f %14d %22s %25s\n' "$name" "${SQL_S[$name]}" "${STREAM_S[$name]}" \
		"${STREAM_BYTES[$name]}" "$(ratio "${SQL_S[$name]}" "${SQL_S[pgoutput]:-}")" \
		"$(ratio "${STREAM_S[$name]}" "${STREAM_S[pgoutput]:-}")"
done
printf '(ratios are time / pgoutput time: below 1.00 is faster than pgoutput)\n'
printf '\n%-15s %10s %14s %9s %15s %12s %16s %16s\n' plugin sql_rows sql_bytes sql_cpu_s walsender_cpu_s client_cpu_s ratio_sql_cpu ratio_stream_cpu
for name in "${NAMES[@]}"; do
	printf '%-15s %10d %14d %9.2f %15.2f %12.2f %16s %16s\n' "$name" "${SQL_ROWS[$name]}" "${SQL_BYTES[$name]}" \
		"${SQL_CPU[$name]}" "${STREAM_CPU[$name]}" "${CLIENT_CPU[$name]}" \
		"$(ratio "${SQL_CPU[$name]}" "${SQL_CPU[pgoutput]:-}")" \
		"$(ratio "${STREAM_ALL_CPU[$name]}" "${STREAM_ALL_CPU[pgoutput]:-}")"
done
printf '(CPU seconds: sql = the decoding backend; stream = the walsender, and the client (pg_recvlogical and\n'
printf ' wc); ratio_stream_cpu is on walsender + client. CPU time is steadier than wall time on a busy machine)\n'

# target LABEL A B OP LIMIT [info]: the ratio A/B against LIMIT (OP: ge = at least, le = at
# most); with info, a comparison beside a target, printed without a verdict
target() {
	local label=$1 a=${2:-} b=${3:-} op=$4 limit=$5 info=${6:-} r verdict
	if [[ -z $a || -z $b ]]; then
		printf '%-58s %7s   (not measured)\n' "$label" -
		return
	fi
	r=$(ratio "$a" "$b")
	if [[ $r == - ]]; then
		printf '%-58s %7s   (zero time)\n' "$label" -
		return
	fi
	if [[ -n $info ]]; then
		printf '%-58s %6sx   (for reference)\n' "$label" "$r"
		return
	fi
	if awk -v r="$r" -v l="$limit" -v op="$op" 'BEGIN { exit !((op == "ge") ? r >= l : r <= l) }'; then
		verdict=met
	else
		verdict=MISSED
	fi
	printf '%-58s %6sx   target %s %sx: %s\n' "$label" "$r" "$([[ $op == ge ]] && echo '>=' || echo '<=')" "$limit" "$verdict"
}
# targets TITLE SQL-ARRAY STREAM-ARRAY: the issue's targets on one kind of time
targets() {
	local -n sq=$2 st=$3
	printf '\ntargets (issue 2), by %s:\n' "$1"
	target 'speedup, replicant stream vs pgoutput stream' "${st[pgoutput]:-}" "${st[replicant]:-}" ge 2
	target 'speedup, replicant stream vs pgoutput binary stream' "${st[pgoutput_bin]:-}" "${st[replicant]:-}" ge 2 info
	target 'slowdown, replicant stream vs the floor stream' "${st[replicant]:-}" "${st[nullplug]:-}" le 1.5
	target 'slowdown, replicant sql vs pgoutput sql' "${sq[replicant]:-}" "${sq[pgoutput]:-}" le 1
	target 'slowdown, replicant sql vs pgoutput binary sql' "${sq[replicant]:-}" "${sq[pgoutput_bin]:-}" le 1 info
	target 'speedup, replicant json sql vs wal2json format 2 sql' "${sq[wal2json2]:-}" "${sq[replicant_json]:-}" ge 1.5
	target 'speedup, replicant json stream vs wal2json format 2 stream' "${st[wal2json2]:-}" "${st[replicant_json]:-}" ge 1.5
}
targets 'wall time (the measure the targets are set on)' SQL_S STREAM_S
targets 'CPU time, for reference: sql = the backend, stream = walsender + client' SQL_CPU STREAM_ALL_CPU
printf '(speedup = peer time / replicant time; slowdown = replicant time / reference time)\n'

# Other work on the machine skews every number: say so.
printf 'load average at end: %s' "$(cut -d' ' -f1-3 /proc/loadavg)"
[[ $(plugin_id) == "$PLUGIN_ID" ]] || printf '; WARNING: replicant.so was reinstalled during the run'
printf '\n'
