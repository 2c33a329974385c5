#!/usr/bin/env bash
# Backlog catch-up of the mirror beside PostgreSQL's own subscription:
#   bash bench/mirror.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]
#   bash bench/mirror.sh --tables [NT ...]     many-table backlogs: bench/mirror_tables.sh
#
# Starts two throwaway clusters with the same settings, a source and a destination
# (regress/lib.sh; as root, the run continues as the postgres user through rp_run_unprivileged;
# fsync = on over logical.conf's off, synchronous_commit at its default, on). For each backlog
# configuration
# (default: 1,000,000 rows in 1,000-row transactions, then 200,000 rows in 10-row
# transactions; each followed by an update pass, a=a+1 where id%4=0, and a delete pass,
# id%10=0) it measures:
#   native     PostgreSQL's subscription catching up the backlog, the steps of
#              ../shared/bench/native_apply.sh: CREATE SUBSCRIPTION ... WITH (copy_data = false,
#              enabled = false), the workload into table nbench, then ENABLE, timed until the
#              slot's confirmed_flush_lsn on the source reaches the end of the backlog (looked at
#              every 10 ms inside the source by one call that waits up to 0.5 s: a psql per look
#              would take CPU from the catch-up being measured). native_apply.sh is not called: on PostgreSQL 15 its
#              `psql -c "SET ...; CREATE SUBSCRIPTION ..."` fails ("cannot run inside a
#              transaction block": a multi-statement -c string is one implicit transaction).
#   replicant  the same workload into table rbench while no consumer runs (a backlog in a
#              replicant slot created before it), then, timed from start to exit,
#                replicant -S SLOT -n --start -E END --sink postgres:DST --create-tables
#              with the default batching (--batch-txns 1000, --batch-bytes 64MB, --max-memory 256MB)
#   floor_stream  the stream floor: the same workload into a replicant slot (created by
#              replicant --create-slot before it), then, timed,
#                pg_recvlogical -S SLOT --start --endpos=END -f /dev/null -o proto_version=2 -o streaming=on
#              (the plugin options the consumer sends by default): what the source's walsender
#              needs to decode and send the backlog, with a client that throws it away.
#   floor_dest the destination floor: the ROWS inserted rows in a source table (one INSERT,
#              untimed), then, timed, the destination's own bulk work for the same end state:
#                COPY t TO STDOUT (FORMAT binary) on SRC -> COPY t FROM STDIN (FORMAT binary) on DST
#              by bench/tools/copy_floor (built for the run; FLOOR_CLIENT=psql: a pipe of two psql),
#              then the update pass and the delete pass as one statement each (autocommit).
#              Checked: the same passes on the source table, then its digest against the destination's.
#   floor_both both floors at once, as a mirror makes the two servers work: floor_stream's
#              backlog in a slot and floor_dest's rows dumped to a binary COPY file (untimed),
#              then, timed, pg_recvlogical as in floor_stream while one psql runs floor_dest's
#              COPY FROM STDIN (from the file: no source backend) and its two passes. On two
#              cores this is what the servers alone need when they run side by side: the max of
#              the floors assumes they overlap for free, floor_both measures what overlapping
#              costs on this machine (not in the default MODES; replicant/floor_both is printed).
# Before the first mode, ~300 MB of WAL on each cluster and a CHECKPOINT: every mode reuses
# recycled WAL segments (a new one is zero-filled and fsynced: the first mode would pay for all).
# A CHECKPOINT on both clusters before each workload and after it (END is taken before it).
# Reported: seconds of each, native/replicant, replicant/max(floor_stream, floor_dest) (targets: >= 2x on the 1,000-row backlog,
# >= 4x on the 10-row one), source and destination row counts and content checksums (md5 of
# every row's text, in key order: they must be equal; the exit status is 1 when not), the CPU
# seconds of both clusters' processes during each catch-up (walsender, apply worker, destination
# backend, the rest), the consumer's CPU time and peak RSS (/usr/bin/time -v, or VmHWM sampled
# from /proc; target < 256 MB).
#
# Arguments: ROWS alone = one configuration in 1,000-row transactions; ROWS ROWS_PER_TXN = one
# configuration; --quick = CONFIGS="100000:1000 20000:10" (a run of about a minute). Environment:
# CONFIGS="ROWS:PER_TXN ..." (default "1000000:1000 200000:10");
# MODES="native replicant floor_stream floor_dest floor_both" (default the first four); TIMELINE=1 prints, every 0.5 s of a catch-up, the CPU
# each process class used (is the time spent, and do they overlap?; TIMELINE_POLLS=N every N tenths of a second instead of 5); STATEMENTS=1 logs the
# destination's statements and sums them per kind for each catch-up, with the destination's idle
# time between them (where the destination's time goes); REPLICANT_BIN=PATH another consumer binary
# (default the installed one); VS=PATH a second consumer binary run against it in the same run:
# one slot per run over the same backlog, a warm-up run, then PAIRS (default 3) runs of each in
# turn (A B A B ...), each run's line, then both medians and the ratio pair by pair (run to run
# this machine moves by 20-30%: the pairs' ratio is the comparison to quote); ROUNDS=N (default
# 1) runs replicant and the two floors N times in turn on each backlog (replicant, floor_stream,
# floor_dest, replicant, ...: a round is one of each, close in time), prints replicant /
# max(floors) round by round, and reports the medians (not with VS);
# REPLICANT_OPTS="..." extra consumer options (e.g. "--batch-txns 5000"); SETTINGS="line;line" more postgresql.conf lines for both clusters
# (default "autovacuum = off": the 2-core machine's numbers are steadier without it, and it is
# the same for both sides; "fsync = on" is always added, over regress/logical.conf's
# fsync = off, so commits are durable as in production); PERF=1 records the consumer
# with perf (into the cluster directory, kept with RP_KEEP_CLUSTERS=1) and prints the top of
# its report; PERF=all records every process on the machine while the consumer runs (both
# servers' backends too; needs kernel.perf_event_paranoid <= 0) and prints the top by
# command, object and symbol; RP_KEEP_CLUSTERS=1 keeps the clusters. The report is printed and written
# to bench/out/mirror-<timestamp>.txt. Uses the installed plugin and consumer: run
# `make && make install` first (or pass --build).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

DEFAULT_CONFIGS="1000000:1000 200000:10"
QUICK_CONFIGS="100000:1000 20000:10"
ALL_MODES="native replicant floor_stream floor_dest floor_both"
DEFAULT_MODES="native replicant floor_stream floor_dest"
RSS_LIMIT_MB=256

usage() {
	printf 'usage: [CONFIGS="ROWS:PER_TXN ..."] [MODES="%s"] bash bench/mirror.sh [--build] [--quick] [ROWS [ROWS_PER_TXN]]\n' "$ALL_MODES"
	printf '  default: %s (rows:rows per transaction); --quick: %s\n' "$DEFAULT_CONFIGS" "$QUICK_CONFIGS"
	printf '  --build  make && make install first\n'
}

# ---------------------------------------------------------------- entry: as the caller
if [[ ${1:-} == --tables ]]; then
	shift
	exec bash "$here/mirror_tables.sh" "$@"
fi
if [[ ${1:-} != --phase-run ]]; then
	build=0
	quick=0
	nums=()
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		--quick) quick=1 ;;
		-h | --help) usage; exit 0 ;;
		*[!0-9]* | '') usage >&2; exit 2 ;;
		*) nums+=("$arg") ;;
		esac
	done
	case ${#nums[@]} in
	0) configs=${CONFIGS:-$DEFAULT_CONFIGS}
		((quick)) && configs=$QUICK_CONFIGS ;;
	1) configs="${nums[0]}:1000" ;;
	2) configs="${nums[0]}:${nums[1]}" ;;
	*) usage >&2; exit 2 ;;
	esac
	for c in $configs; do
		[[ $c =~ ^([1-9][0-9]*):([1-9][0-9]*)$ ]] || rp_die "a configuration is ROWS:ROWS_PER_TXN: $c"
		((BASH_REMATCH[1] % BASH_REMATCH[2] == 0)) ||
			rp_die "ROWS must be a multiple of ROWS_PER_TXN (as native_apply.sh inserts ROWS/ROWS_PER_TXN full transactions): $c"
	done
	modes=${MODES:-$DEFAULT_MODES}
	for m in $modes; do
		[[ " $ALL_MODES " == *" $m "* ]] || rp_die "MODES takes $ALL_MODES: $m"
	done
	[[ ${PAIRS:-3} =~ ^[1-9][0-9]?$ ]] || rp_die "PAIRS is a number of runs, 1 to 99: $PAIRS"
	[[ ${TIMELINE_POLLS:-5} =~ ^[1-9][0-9]?$ ]] || rp_die "TIMELINE_POLLS is a number of tenths of a second, 1 to 99: $TIMELINE_POLLS"
	[[ ${ROUNDS:-1} =~ ^[1-9][0-9]?$ ]] || rp_die "ROUNDS is a number of rounds, 1 to 99: $ROUNDS"
	[[ ${ROUNDS:-1} == 1 || -z ${VS:-} ]] || rp_die "ROUNDS and VS do not go together: pair the consumers, or the consumer with its floors"
	[[ ${FLOOR_CLIENT:-copy_floor} == copy_floor || $FLOOR_CLIENT == psql ]] ||
		rp_die "FLOOR_CLIENT is copy_floor or psql: $FLOOR_CLIENT"
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/mirror-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/mirror.sh --phase-run "$configs" "$modes" \
		"${SETTINGS-autovacuum = off}" "${REPLICANT_OPTS:-}" "${PERF:-0}" "${REPLICANT_BIN:-}" "${TIMELINE:-0}" \
		"${FLOOR_CLIENT:-copy_floor}" "${STATEMENTS:-0}" "${VS:-}" "${PAIRS:-3}" "${ROUNDS:-1}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
read -r -a CONFIGS <<<"$2"
read -r -a MODES <<<"$3"
IFS=';' read -r -a SETTINGS <<<"$4"
read -r -a ROPTS <<<"$5"
PERF=$6
TIMELINE=${8:-0}
REPLICANT_BIN=$7
FLOOR_CLIENT=${9:-copy_floor}
STATEMENTS=${10:-0}
VS=${11:-}
PAIRS=${12:-3}
ROUNDS=${13:-1}
TL_POLLS=${TIMELINE_POLLS:-5}  # checked before the switch to the unprivileged user, which keeps the environment
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
trap rp_cluster_cleanup_all EXIT

has_mode() { [[ " ${MODES[*]} " == *" $1 "* ]]; }

# with VS, a slot per run, all holding the backlog at once
SLOTS=()
[[ -n $VS ]] && SLOTS=("max_replication_slots = $((2 * PAIRS + 10))")
rp_cluster_start src "${SETTINGS[@]}" "fsync = on" "${SLOTS[@]}"
DST_LOGGING=()
((STATEMENTS)) && DST_LOGGING=("log_min_duration_statement = 0" "log_line_prefix = '%m [%a] '")
rp_cluster_start dst "${SETTINGS[@]}" "fsync = on" "${DST_LOGGING[@]}"
SRC=$(rp_conninfo src)
DST=$(rp_conninfo dst)
# shellcheck disable=SC2154 # exported by rp_cluster_start
POSTMASTERS=("$(head -n 1 "$src_DATA/postmaster.pid")" "$(head -n 1 "$dst_DATA/postmaster.pid")")
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
dst() { PGOPTIONS='-c client_min_messages=warning' rp_psql dst "$@"; }
src -f "$here/tools/caught_up.sql" >/dev/null  # bench_caught_up(SLOT, TARGET)
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; } # kB to MB

# rows and a content checksum of a table: "COUNT MD5" (every row's text, in key order)
DIGEST_SQL="select count(*) || ' ' || coalesce(md5(string_agg(md5(t::text), '' order by id)), '-') from"
digest() { "$1" -Atc "$DIGEST_SQL $2 t"; }

printf 'replicant mirror bench: PostgreSQL %s, %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
CONSUMER=${REPLICANT_BIN:-$(command -v replicant)} || rp_die "replicant is not installed in $RP_BINDIR: run make install"
[[ -x $CONSUMER ]] || rp_die "not an executable: $CONSUMER"
bin_id() { printf '%s, md5 %s' "$(date -u -r "$1" '+%Y-%m-%d %H:%M:%S UTC')" "$(md5sum <"$1" | cut -c1-12)"; }
PLUGIN_SO=$("$PG_CONFIG" --pkglibdir)/replicant.so
IDS="$(bin_id "$PLUGIN_SO") / $(bin_id "$CONSUMER")"
printf 'replicant.so / replicant: built %s\n' "$IDS"
[[ -n $REPLICANT_BIN ]] && printf 'consumer: %s\n' "$CONSUMER"
if [[ -n $VS ]]; then
	[[ -x $VS ]] || rp_die "VS is not an executable: $VS"
	printf 'vs: %s (built %s), %d runs of each, in turn\n' "$VS" "$(bin_id "$VS")" "$PAIRS"
fi
printf 'both clusters: fsync = %s, synchronous_commit = %s, wal_level = %s, shared_buffers = %s, max_wal_size = %s' \
	"$(dst -Atc 'show fsync')" "$(dst -Atc 'show synchronous_commit')" "$(dst -Atc 'show wal_level')" \
	"$(dst -Atc 'show shared_buffers')" "$(dst -Atc 'show max_wal_size')"
((${#SETTINGS[@]})) && printf '; %s' "${SETTINGS[@]}"
printf '\nreplicant options: defaults%s; load average at start: %s\n' \
	"$( ((${#ROPTS[@]})) && printf ' and %s' "${ROPTS[*]}")" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n'

# WAL segments made ahead: a cluster zero-fills and fsyncs each new 16 MB WAL segment
# (WALInitWrite, WALInitSync), a recycled one it reuses as it is. Without this the first mode
# timed makes every segment and the later ones reuse them (10% of the destination's samples were
# WALInitWrite in a replicant run before floor_dest, none in floor_dest's): ~300 MB of WAL on
# each cluster, then CHECKPOINT, which recycles the segments for the runs.
for c in src dst; do
	"$c" -q -c "CREATE TABLE bench_wal_ahead AS SELECT g, md5(g::text) AS m FROM generate_series(1, 3000000) g" \
		-c "DROP TABLE bench_wal_ahead" -c CHECKPOINT
done
printf 'WAL segments made ahead: src %s, dst %s files in pg_wal\n\n' \
	"$(find "$src_DATA/pg_wal" -maxdepth 1 -type f -name '0*' | wc -l)" \
	"$(find "$dst_DATA/pg_wal" -maxdepth 1 -type f -name '0*' | wc -l)"

# CPU seconds of both clusters' processes by class: cpu_begin, cpu_poll, cpu_total, cpu_split
# shellcheck source=bench/cpu.sh
. "$here/cpu.sh"

# timeline_line PID T0: with TIMELINE=1, every 0.5 s one line on stderr: elapsed seconds and
# the CPU ticks each class (and the consumer, PID) used since the previous line: where the
# wall time goes, and whether the three processes overlap.
timeline_line() {
	local p c t line=''
	declare -A by=()
	for p in "${!C1[@]}"; do
		c=${CLASS[$p]:-other}
		by[$c]=$((${by[$c]:-0} + C1[$p] - ${LASTC[$p]:-${C0[$p]}}))
		LASTC[$p]=${C1[$p]}
	done
	# the consumer itself, not the /usr/bin/time that runs it
	p=$(pgrep -P "$1" 2>/dev/null | head -n 1) || true
	t=$(ticks_of "${p:-$1}") || t=0
	for c in walsender dst_backend other; do line+=" $c=${by[$c]:-0}"; done
	printf '  t=%s%s consumer=%s\n' "$(sub "$(now)" "$2")" "$line" $((t - last_t)) >&2
	last_t=$t
}

# waits_begin / waits_end: with TIMELINE=1, sample every 10 ms what the walsender and the
# destination's backends wait on (pg_stat_activity.wait_event, "cpu" when none) from one session
# per cluster, and print the share of each: a process waiting on ClientRead or
# WalSenderWriteData is starved or blocked by the consumer, not by its own work.
WAIT_SQL="DO \$\$ BEGIN LOOP PERFORM pg_stat_clear_snapshot();
  RAISE WARNING 'w %', (SELECT string_agg(backend_type || ':' || coalesce(wait_event, 'cpu'), ' ')
    FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type IN ('walsender', 'client backend'));
  PERFORM pg_sleep(0.01); END LOOP; END \$\$"
waits_begin() {
	src -c "$WAIT_SQL" 2>"$WORK/waits.src" &
	WAIT_PIDS=("$!")
	dst -c "$WAIT_SQL" 2>"$WORK/waits.dst" &
	WAIT_PIDS+=("$!")
}
waits_end() {
	local f
	kill "${WAIT_PIDS[@]}" 2>/dev/null || true; wait "${WAIT_PIDS[@]}" 2>/dev/null || true
	for f in src dst; do
		printf '  %s waits:' "$f" >&2
		sed -n 's/^WARNING:  w //p' "$WORK/waits.$f" | tr ' ' '\n' | { grep . || true; } | sort | uniq -c | sort -rn |
			awk '{ n[NR] = $1; w[NR] = $2; t += $1 } END { for (i = 1; i <= NR && i <= 8; i++) printf " %s %.0f%%", w[i], 100 * n[i] / t; print "" }' >&2
	done
}

# statements_begin / statements_end WALL: with STATEMENTS=1 the destination logs every statement
# with its duration (log_min_duration_statement = 0); the end sums the ones logged during the
# run by kind, and what is left of the wall time: the destination idle between statements
# (waiting for the client to send the next one). A COPY's time includes waiting for its data.
# shellcheck disable=SC2154 # exported by rp_cluster_start
statements_begin() { STMT_OFF=$(stat -c %s "$dst_LOG"); }
statements_end() {
	tail -c +$((STMT_OFF + 1)) "$dst_LOG" | awk -v wall="$1" '
		/ duration: [0-9.]+ ms  (statement|parse|bind|execute)/ {
			ms = $0; sub(/.* duration: /, "", ms); sub(/ ms .*/, "", ms)
			q = $0; sub(/.* ms  (statement|parse [^:]*|bind [^:]*|execute [^:]*): /, "", q)
			sub(/^(SET LOCAL [^;]*; )+/, "", q)
			if (q ~ /replicant"?\./) k = "bookkeeping"
			else if (q ~ /^COPY pg_temp\./) k = "COPY to staging"
			else if (q ~ /^COPY /) k = "COPY into the table"
			else if (q ~ /^UPDATE /) k = "UPDATE"
			else if (q ~ /^DELETE /) k = "DELETE"
			else if (q ~ /^INSERT /) k = "INSERT"
			else if (q ~ /^(COMMIT|BEGIN|SAVEPOINT|RELEASE|ROLLBACK)/) k = "BEGIN/COMMIT/SAVEPOINT"
			else k = "other"
			if (!(k in n)) order[++nk] = k
			n[k]++; t[k] += ms / 1000; all += ms / 1000
		}
		END {
			if (nk == 0) exit
			printf "  dst statements:"
			for (i = 1; i <= nk; i++) printf "%s %s %d x %.2f s", (i > 1 ? "," : ""), order[i], n[order[i]], t[order[i]]
			printf "; %.2f s of %.2f s wall in statements, %.2f s idle between them\n", all, wall, wall - all
		}' >&2
}

# run_measured LOG CMD...: runs CMD with stderr to LOG; sets RUN_RC, RUN_S (wall), RUN_CPU
# (its user + system seconds), RUN_RSS_KB (its peak RSS) and RUN_SERVER_CPU (the servers'
# CPU seconds meanwhile; RUN_SERVER_SPLIT by class). /usr/bin/time -v when it is there, otherwise VmHWM and the CPU ticks
# are sampled from /proc every 0.1 s.
run_measured() {
	local log=$1 a b pid line hwm=0 ticks=0 tfile=$1.time timed=0
	shift
	RUN_RC=0
	[[ -x /usr/bin/time ]] && timed=1
	cpu_begin
	((TIMELINE)) && waits_begin
	((STATEMENTS)) && statements_begin
	local ckpt_off
	ckpt_off=$(stat -c %s "$dst_LOG")
	a=$(now)
	if ((timed)); then
		/usr/bin/time -v -o "$tfile" "$@" 2>"$log" &
	else
		"$@" 2>"$log" &
	fi
	pid=$!
	local polls=0 last_t=0
	declare -A LASTC=()
	while kill -0 "$pid" 2>/dev/null; do
		cpu_poll
		polls=$((polls + 1))
		((TIMELINE && polls % TL_POLLS == 0)) && timeline_line "$pid" "$a"
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
	# checkpoints the destination started by itself meanwhile (WAL volume or time): their
	# full-page images make the same work dearer
	RUN_DST_CKPTS=$(tail -c +$((ckpt_off + 1)) "$dst_LOG" | grep -c 'checkpoint starting: \(wal\|time\)' || true)
	((TIMELINE)) && waits_end
	RUN_S=$(sub "$b" "$a")
	# the loop above notices the exit up to one poll late: /usr/bin/time's wall clock is exact
	if ((timed)); then
		line=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$tfile")
		[[ -n $line ]] && RUN_S=$(awk -v t="$line" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s }')
	fi
	((STATEMENTS)) && statements_end "$RUN_S"
	RUN_SERVER_CPU=$(cpu_total)
	RUN_SERVER_SPLIT=$(cpu_split)
	if ((timed)); then
		RUN_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
		RUN_CPU=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$tfile")
	else
		RUN_RSS_KB=$hwm
		RUN_CPU=$(awk -v t="$ticks" -v hz="$TICKS" 'BEGIN { printf "%.2f", t / hz }')
	fi
}

# the brief's table, as native_apply.sh creates it
ddl() { printf 'CREATE TABLE %s(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb);' "$1"; }
# workload TABLE N T: exactly native_apply.sh's workload, on TABLE; sets END, the WAL insert
# position right after it (the end of its last commit record, as native_apply.sh takes it). A
# CHECKPOINT on both clusters before it (so that no checkpoint falls inside it, and both sides'
# backlogs carry the same full-page images) and after END (so that the timed catch-up does not
# pay for flushing the workload's dirty buffers).
checkpoint_both() { src -c CHECKPOINT; dst -c CHECKPOINT; }
workload() {
	checkpoint_both
	src <<-SQL
		DO \$\$ BEGIN FOR i IN 0..($2/$3)-1 LOOP
		  INSERT INTO $1 SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(i*$3+1,(i+1)*$3) g;
		  COMMIT; END LOOP; END \$\$;
		UPDATE $1 SET a=a+1 WHERE id % 4 = 0;
		DELETE FROM $1 WHERE id % 10 = 0;
	SQL
	END=$(src -Atc "select pg_current_wal_lsn()")
	checkpoint_both
}

# native_catchup N T: native_apply.sh's steps; sets NAT_S[$cfg], NAT_WAL and END
native_catchup() {
	local t0 t1
	dst -c "DROP SUBSCRIPTION IF EXISTS nsub"
	src -c "DROP TABLE IF EXISTS nbench; $(ddl nbench) DROP PUBLICATION IF EXISTS npub; CREATE PUBLICATION npub FOR TABLE nbench;"
	dst -c "DROP TABLE IF EXISTS nbench; $(ddl nbench)"
	# its own statement: CREATE SUBSCRIPTION creates the slot and refuses a transaction block
	dst -c "CREATE SUBSCRIPTION nsub CONNECTION '$SRC' PUBLICATION npub WITH (copy_data = false, enabled = false)"
	start_lsn=$(src -Atc "select confirmed_flush_lsn from pg_replication_slots where slot_name = 'nsub'")
	workload nbench "$1" "$2"
	NAT_WAL=$(src -Atc "select pg_size_pretty(pg_wal_lsn_diff('$END', '$start_lsn'))")
	cpu_begin
	t0=$(now)
	dst -c "ALTER SUBSCRIPTION nsub ENABLE"
	# the end is seen within about 10 ms; the CPU is sampled between the calls
	until [[ $(src -Atc "SELECT public.bench_caught_up('nsub', '$END')") == t ]]; do
		cpu_poll
	done
	t1=$(now)
	cpu_poll
	NAT_S[$cfg]=$(sub "$t1" "$t0")
	NAT_CPU[$cfg]=$(cpu_total)
	NAT_SPLIT=$(cpu_split)
	SPLIT[$cfg:native]=$NAT_SPLIT
}

# floor_stream N T: pg_recvlogical through the same backlog in a replicant slot; sets
# FS_S[$cfg], FS_CPU (the client's), FS_SCPU (the servers')
floor_stream() {
	local slot=fslot_$2 table=fsbench log=$WORK/floor_stream-$cfg.log
	src -c "DROP TABLE IF EXISTS $table; $(ddl "$table")"
	replicant -d "$SRC" -S "$slot" --create-slot 2>"$log" || { cat "$log" >&2; rp_die "replicant --create-slot failed"; }
	workload "$table" "$1" "$2"
	# the options the consumer sends when given none (rp_cli_run.c plugin_options)
	run_measured "$log" pg_recvlogical -d "$SRC" -S "$slot" --start --endpos="$END" -f /dev/null \
		-o proto_version=2 -o streaming=on -v
	if ((RUN_RC != 0)) || ! grep -q 'end position .* reached' "$log"; then
		tail -n 20 "$log" >&2
		rp_die "pg_recvlogical did not reach the end position (status $RUN_RC)"
	fi
	FS_S[$cfg]=$RUN_S FS_CPU[$cfg]=$RUN_CPU FS_SCPU[$cfg]=$RUN_SERVER_CPU SPLIT[$cfg:floor_stream]=$RUN_SERVER_SPLIT
	printf '  floor_stream: %s s (pg_recvlogical cpu %s s, servers cpu %s s: %s); %s\n' \
		"${FS_S[$cfg]}" "$RUN_CPU" "$RUN_SERVER_CPU" "$RUN_SERVER_SPLIT" "$(grep -o 'end position .* reached.*' "$log" | tail -n 1)"
	src -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
	src -c "DROP TABLE $table"
}

# the destination floor's COPY client, built here for this run (bench/tools/copy_floor.c;
# libpq only); FLOOR_CLIENT=psql: a pipe of two psql instead
COPY_FLOOR=
if [[ $FLOOR_CLIENT == copy_floor ]] && has_mode floor_dest; then
	COPY_FLOOR=$WORK/copy_floor
	cc -O2 -I"$("$PG_CONFIG" --includedir)" -o "$COPY_FLOOR" "$here/tools/copy_floor.c" \
		-L"$("$PG_CONFIG" --libdir)" -lpq || rp_die "bench/tools/copy_floor.c does not build"
fi

# fdsrc_rows N: the destination floors' table fdsrc, with N inserted rows on the source (not
# timed) and empty on the destination
fdsrc_rows() {
	src -c "DROP TABLE IF EXISTS fdsrc; $(ddl fdsrc)" -c "INSERT INTO fdsrc SELECT g, g%1000, md5(g::text),
		now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(1, $1) g"
	dst -c "DROP TABLE IF EXISTS fdsrc; $(ddl fdsrc)"
}

# fdsrc_check: the same two passes on the source's fdsrc, then its digest against the
# destination's; sets S_DIG, D_DIG and FDSRC_OK ("N rows, equal" or "DIFFERENT: ...")
fdsrc_check() {
	src -c "UPDATE fdsrc SET a = a + 1 WHERE id % 4 = 0" -c "DELETE FROM fdsrc WHERE id % 10 = 0"
	S_DIG=$(digest src fdsrc)
	D_DIG=$(digest dst fdsrc)
	if [[ $S_DIG == "$D_DIG" ]]; then
		FDSRC_OK="${D_DIG%% *} rows, equal"
	else
		FDSRC_OK="DIFFERENT: src ${S_DIG%% *} rows, dst ${D_DIG%% *} rows"
	fi
}

# floor_dest N: the destination's bulk work for the same end state; sets FD_S[$cfg], FD_CPU
# (the two psql clients'), FD_SCPU, FD_OK
floor_dest() {
	local log=$WORK/floor_dest-$cfg.log
	fdsrc_rows "$1"
	checkpoint_both
	# shellcheck disable=SC2016 # expanded by the inner shell
	run_measured "$log" bash -c 'set -eo pipefail
		p() { "$1/psql" -X -q -v ON_ERROR_STOP=1 -d "$2" -c "$3"; }
		if [[ -n $4 ]]; then
			"$4" "$2" "$3" fdsrc
		else
			p "$1" "$2" "COPY fdsrc TO STDOUT (FORMAT binary)" | p "$1" "$3" "COPY fdsrc FROM STDIN (FORMAT binary)"
		fi
		p "$1" "$3" "UPDATE fdsrc SET a = a + 1 WHERE id % 4 = 0"
		p "$1" "$3" "DELETE FROM fdsrc WHERE id % 10 = 0"' floor_dest "$RP_BINDIR" "$SRC" "$DST" "$COPY_FLOOR"
	((RUN_RC == 0)) || { tail -n 20 "$log" >&2; rp_die "the destination floor's COPY or passes failed (status $RUN_RC)"; }
	FD_S[$cfg]=$RUN_S FD_CPU[$cfg]=$RUN_CPU FD_SCPU[$cfg]=$RUN_SERVER_CPU SPLIT[$cfg:floor_dest]=$RUN_SERVER_SPLIT
	fdsrc_check
	FD_OK[$cfg]=$FDSRC_OK
	printf '  floor_dest: %s s (client cpu %s s, servers cpu %s s: %s); source %s, destination %s; destination checkpoints inside: %s\n' \
		"${FD_S[$cfg]}" "$RUN_CPU" "$RUN_SERVER_CPU" "$RUN_SERVER_SPLIT" "$S_DIG" "$D_DIG" "$RUN_DST_CKPTS"
	src -c "DROP TABLE fdsrc"
	dst -c "DROP TABLE fdsrc"
}

# floor_both N T: floor_stream and floor_dest at the same time (the destination side reads its
# rows from a file dumped before, so no source backend works for it); sets FB_S[$cfg], FB_CPU
# (pg_recvlogical's and psql's), FB_SCPU, FB_OK
floor_both() {
	local slot=fbslot_$2 table=fbbench log=$WORK/floor_both-$cfg.log rows=$WORK/floor_both-$cfg.copy
	src -c "DROP TABLE IF EXISTS $table; $(ddl "$table")"
	replicant -d "$SRC" -S "$slot" --create-slot 2>"$log" || { cat "$log" >&2; rp_die "replicant --create-slot failed"; }
	workload "$table" "$1" "$2"
	fdsrc_rows "$1"
	src -c "COPY fdsrc TO STDOUT (FORMAT binary)" >"$rows"
	checkpoint_both
	# shellcheck disable=SC2016 # expanded by the inner shell
	run_measured "$log" bash -c 'set -eo pipefail
		p() { "$1/psql" -X -q -v ON_ERROR_STOP=1 -d "$2" -c "$3"; }
		"$1/pg_recvlogical" -d "$2" -S "$5" --start --endpos="$6" -f /dev/null \
			-o proto_version=2 -o streaming=on -v &
		stream=$!
		p "$1" "$3" "COPY fdsrc FROM STDIN (FORMAT binary)" <"$4"
		p "$1" "$3" "UPDATE fdsrc SET a = a + 1 WHERE id % 4 = 0"
		p "$1" "$3" "DELETE FROM fdsrc WHERE id % 10 = 0"
		wait "$stream"' floor_both "$RP_BINDIR" "$SRC" "$DST" "$rows" "$slot" "$END"
	if ((RUN_RC != 0)) || ! grep -q 'end position .* reached' "$log"; then
		tail -n 20 "$log" >&2
		rp_die "floor_both: pg_recvlogical or the destination's COPY and passes failed (status $RUN_RC)"
	fi
	FB_S[$cfg]=$RUN_S FB_CPU[$cfg]=$RUN_CPU FB_SCPU[$cfg]=$RUN_SERVER_CPU SPLIT[$cfg:floor_both]=$RUN_SERVER_SPLIT
	fdsrc_check
	FB_OK[$cfg]=$FDSRC_OK
	printf '  floor_both: %s s (clients cpu %s s, servers cpu %s s: %s); source %s, destination %s\n' \
		"${FB_S[$cfg]}" "$RUN_CPU" "$RUN_SERVER_CPU" "$RUN_SERVER_SPLIT" "$S_DIG" "$D_DIG"
	rm -f "$rows"
	src -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
	src -c "DROP TABLE $table; DROP TABLE fdsrc"
	dst -c "DROP TABLE fdsrc"
}

# replicant_catchup SLOT BINARY WHO: BINARY catches up from SLOT to END into an empty
# destination; sets RUN_S and, for WHO=replicant, REP_*; prints the run's line; then empties
# the destination and drops the slot
replicant_catchup() {
	local slot=$1 bin=$2 who=$3 state=$WORK/state-$cfg log=$WORK/replicant-$cfg-$1.log confirmed ck s_dig d_dig cmd
	rm -rf "$state"
	if [[ $PERF == 1 ]]; then
		cmd=(perf record -g -o "$WORK/perf-$cfg.data" -- "$bin")
	elif [[ $PERF == all ]]; then
		cmd=(perf record -a -g -o "$WORK/perf-$cfg.data" -- "$bin")
	else
		cmd=("$bin")
	fi
	# a checkpoint first, as before the floors: otherwise the catch-ups after the first one
	# cross a checkpoint the WAL of the previous ones started (max_wal_size), at a point that
	# varies, and pay its full-page images
	dst -c CHECKPOINT
	run_measured "$log" "${cmd[@]}" -d "$SRC" -S "$slot" -n --start -E "$END" \
		--sink "postgres:$DST" --create-tables --state-dir "$state" -v "${ROPTS[@]}"
	if ((RUN_RC != 0)); then
		tail -n 20 "$log" >&2
		rp_die "$who ($bin) exited with status $RUN_RC"
	fi
	confirmed=$(src -Atc "select pg_wal_lsn_diff(confirmed_flush_lsn, '$END') from pg_replication_slots where slot_name = '$slot'")
	ck=$(dst -Atc "select end_lsn from replicant.checkpoint where slot = '$slot'")
	s_dig=$(digest src "$table")
	d_dig=$(digest dst "public.$table")
	if [[ $who == replicant ]]; then
		REP_S[$cfg]=$RUN_S
		REP_CPU[$cfg]=$RUN_CPU
		REP_SCPU[$cfg]=$RUN_SERVER_CPU
		REP_RSS[$cfg]=$(mb "$RUN_RSS_KB")
		SPLIT[$cfg:replicant]=$RUN_SERVER_SPLIT
	fi
	if [[ $s_dig == "$d_dig" ]]; then
		[[ ${REP_OK[$cfg]:-} == DIFF* ]] || REP_OK[$cfg]="${d_dig%% *} rows, equal"
	else
		REP_OK[$cfg]="DIFFERENT ($who): src ${s_dig%% *} rows, dst ${d_dig%% *} rows"
	fi
	printf '  %s: %s s (consumer cpu %s s, servers cpu %s s: %s; consumer peak RSS %s MB); backlog %s of WAL, end %s; destination checkpoints inside: %s\n' \
		"$who" "$RUN_S" "$RUN_CPU" "$RUN_SERVER_CPU" "$RUN_SERVER_SPLIT" "$(mb "$RUN_RSS_KB")" "${WAL_OF[$cfg]}" "$END" "$RUN_DST_CKPTS"
	printf '  %s: destination checkpoint end_lsn %s, slot confirmed at end%+d bytes; source %s, destination %s\n' \
		"$who" "$ck" "$confirmed" "$s_dig" "$d_dig"
	[[ $PERF == 1 ]] && { perf report -i "$WORK/perf-$cfg.data" --stdio --no-children 2>/dev/null |
		grep -v '^$' | head -n 60 | sed 's/^/    perf: /'; }
	[[ $PERF == all ]] && { perf report -i "$WORK/perf-$cfg.data" --stdio --no-children -g none \
		--sort comm,dso,sym 2>/dev/null | grep -v '^$' | grep -v '^#' | head -n 80 | sed 's/^/    perf: /'; }
	replicant -d "$SRC" -S "$slot" --drop-slot 2>>"$log" || true
	dst -c "DROP TABLE public.$table; DROP SCHEMA IF EXISTS replicant CASCADE"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%s", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) printf "-"; else printf "%.2f", a / b }'; }
plus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") printf ""; else printf "%.2f", a + b }'; }
# the larger of two floors (one alone when the other was not measured)
max_floor() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" && b == "") printf ""; else printf "%.2f", (a + 0 > b + 0) ? a : b }'; }

declare -A FB_S FB_CPU FB_SCPU FB_OK ROUNDS_LINE NAT_S NAT_CPU NAT_OK REP_S REP_SCPU REP_OK REP_CPU REP_RSS WAL_OF FS_S FS_CPU FS_SCPU FD_S FD_CPU FD_SCPU FD_OK SPLIT VS_LINE
RC=0
for cfg in "${CONFIGS[@]}"; do
	N=${cfg%%:*} T=${cfg##*:}
	changes=$((N + N / 4 + N / 10))
	printf '== %d rows in %d-row transactions (%d transactions), +%d updates, +%d deletes: %d changes\n' \
		"$N" "$T" $((N / T)) $((N / 4)) $((N / 10)) "$changes"

	# ---- native: a subscription, disabled while the workload runs, then enabled and timed
	if has_mode native; then
		native_catchup "$N" "$T"
		s_dig=$(digest src nbench)
		d_dig=$(digest dst nbench)
		[[ $s_dig == "$d_dig" ]] && NAT_OK[$cfg]="${d_dig%% *} rows, equal" ||
			NAT_OK[$cfg]="DIFFERENT: src ${s_dig%% *} rows, dst ${d_dig%% *} rows"
		printf '  native: %s s (servers cpu %s s: %s); backlog %s of WAL, end %s; source %s, destination %s\n' \
			"${NAT_S[$cfg]}" "${NAT_CPU[$cfg]}" "$NAT_SPLIT" "$NAT_WAL" "$END" "$s_dig" "$d_dig"
		# the next configuration starts from empty tables: free the space now
		dst -c "DROP SUBSCRIPTION nsub" -c "DROP TABLE nbench"
		src -c "DROP TABLE nbench" -c "DROP PUBLICATION npub"
	fi

	# ---- replicant and the floors, ROUNDS times in turn (their medians are reported)
	r_s=() fs_s=() fd_s=() fb_s=() round_ratios=() both_ratios=() overlap_ratios=()
	for ((round = 1; round <= ROUNDS; round++)); do
		((ROUNDS > 1)) && printf '  -- round %d of %d\n' "$round" "$ROUNDS"

		# ---- replicant: a backlog in its slot, then the consumer catches up and exits at END;
		# with VS, one slot per run, and the two consumers in turn over the same backlog
		if has_mode replicant; then
			table=rbench
			src -c "DROP TABLE IF EXISTS $table; $(ddl "$table")"
			dst -c "DROP TABLE IF EXISTS $table; DROP SCHEMA IF EXISTS replicant CASCADE"
			runs=1
			# with VS, a first run of replicant that is not counted: the first run after a build or
			# on a cold machine is slow every time (below)
			[[ -n $VS ]] && runs=$((2 * PAIRS + 1))
			for ((i = 1; i <= runs; i++)); do
				replicant -d "$SRC" -S "rslot_${T}_$i" --create-slot 2>"$WORK/slot-$cfg.log" ||
					{ cat "$WORK/slot-$cfg.log" >&2; rp_die "replicant --create-slot failed"; }
			done
			start_lsn=$(src -Atc "select confirmed_flush_lsn from pg_replication_slots where slot_name = 'rslot_${T}_1'")
			workload "$table" "$N" "$T"
			WAL_OF[$cfg]=$(src -Atc "select pg_size_pretty(pg_wal_lsn_diff('$END', '$start_lsn'))")
			a_s=() b_s=()
			for ((i = 1; i <= runs; i++)); do
				bin=$CONSUMER who=replicant
				if [[ -n $VS ]] && ((i == 1)); then
					who=warm-up
				elif [[ -n $VS ]] && ((i % 2 == 1)); then
					bin=$VS who=vs
				fi
				replicant_catchup "rslot_${T}_$i" "$bin" "$who"
				case $who in
				vs) b_s+=("$RUN_S") ;;
				replicant) a_s+=("$RUN_S") ;;
				esac
			done
			if [[ -n $VS ]]; then
				ratios=()
				for ((i = 0; i < PAIRS; i++)); do ratios+=("$(ratio "${a_s[$i]}" "${b_s[$i]}")"); done
				VS_LINE[$cfg]=$(printf 'replicant %s s, vs %s s (medians of %d); replicant/vs by pair: %s, median %s' \
					"$(median "${a_s[@]}")" "$(median "${b_s[@]}")" "$PAIRS" "${ratios[*]}" "$(median "${ratios[@]}")")
				printf '  %s\n' "${VS_LINE[$cfg]}"
				REP_S[$cfg]=$(median "${a_s[@]}")
			fi
			src -c "DROP TABLE $table"
		fi

		# ---- the floors: the source's decode and send alone, the destination's bulk work alone
		if has_mode floor_stream; then floor_stream "$N" "$T"; fi
		if has_mode floor_dest; then floor_dest "$N"; fi
		if has_mode floor_both; then floor_both "$N" "$T"; fi
		r_s+=("${REP_S[$cfg]:-}") fs_s+=("${FS_S[$cfg]:-}") fd_s+=("${FD_S[$cfg]:-}") fb_s+=("${FB_S[$cfg]:-}")
		round_ratios+=("$(ratio "${REP_S[$cfg]:-}" "$(max_floor "${FS_S[$cfg]:-}" "${FD_S[$cfg]:-}")")")
		if has_mode floor_both; then
			both_ratios+=("$(ratio "${REP_S[$cfg]:-}" "${FB_S[$cfg]:-}")")
			overlap_ratios+=("$(ratio "${FB_S[$cfg]:-}" "$(max_floor "${FS_S[$cfg]:-}" "${FD_S[$cfg]:-}")")")
		fi
	done
	if ((ROUNDS > 1)); then
		has_mode replicant && REP_S[$cfg]=$(median "${r_s[@]}")
		has_mode floor_stream && FS_S[$cfg]=$(median "${fs_s[@]}")
		has_mode floor_dest && FD_S[$cfg]=$(median "${fd_s[@]}")
		has_mode floor_both && FB_S[$cfg]=$(median "${fb_s[@]}")
		ROUNDS_LINE[$cfg]=$(printf 'replicant %s, floor_stream %s, floor_dest %s, floor_both %s s; replicant/max(floors) by round: %s, median %s' \
			"${r_s[*]:--}" "${fs_s[*]:--}" "${fd_s[*]:--}" "${fb_s[*]:--}" "${round_ratios[*]}" "$(median "${round_ratios[@]}")")
		((${#both_ratios[@]})) && ROUNDS_LINE[$cfg]+=$(printf '; floor_both/max(floors) by round: %s, median %s; replicant/floor_both by round: %s, median %s' \
			"${overlap_ratios[*]}" "$(median "${overlap_ratios[@]}")" "${both_ratios[*]}" "$(median "${both_ratios[@]}")")
		printf '  rounds: %s\n' "${ROUNDS_LINE[$cfg]}"
	fi
	printf '\n'
done

# ---------------------------------------------------------------- report
label() { printf '%s rows / %s per txn' "${1%%:*}" "${1##*:}"; }
printf 'wall time (the measure the targets are set on):\n'
printf '%-28s %9s %12s %17s %17s\n' backlog native_s replicant_s native/replicant target
for cfg in "${CONFIGS[@]}"; do
	want=2
	((${cfg##*:} <= 10)) && want=4
	r=$(ratio "${NAT_S[$cfg]:-}" "${REP_S[$cfg]:-}")
	verdict=-
	if [[ $r != - ]]; then
		verdict=MISSED
		awk -v r="$r" -v w="$want" 'BEGIN { exit !(r >= w) }' && verdict=met
	fi
	printf '%-28s %9s %12s %16sx %17s\n' "$(label "$cfg")" "${NAT_S[$cfg]:--}" "${REP_S[$cfg]:--}" \
		"$r" ">= ${want}x: $verdict"
done
printf '\nagainst the floors (target: replicant / max(floors) <= 1.15):\n'
printf '%-28s %12s %15s %13s %13s %18s %17s\n' backlog replicant_s floor_stream_s floor_dest_s max_floor_s replicant/max_floor native/replicant
for cfg in "${CONFIGS[@]}"; do
	mx=$(max_floor "${FS_S[$cfg]:-}" "${FD_S[$cfg]:-}")
	printf '%-28s %12s %15s %13s %13s %17sx %16sx\n' "$(label "$cfg")" "${REP_S[$cfg]:--}" "${FS_S[$cfg]:--}" \
		"${FD_S[$cfg]:--}" "${mx:--}" "$(ratio "${REP_S[$cfg]:-}" "$mx")" "$(ratio "${NAT_S[$cfg]:-}" "${REP_S[$cfg]:-}")"
done
printf '(max(floors) is the one floor measured when MODES has only one)\n'
if has_mode floor_both; then
	printf '\nboth floors at once (floor_both: the two servers'"'"' own work side by side on this machine):\n'
	printf '%-28s %12s %13s %13s %21s %18s\n' backlog replicant_s floor_both_s max_floor_s floor_both/max_floor replicant/floor_both
	for cfg in "${CONFIGS[@]}"; do
		mx=$(max_floor "${FS_S[$cfg]:-}" "${FD_S[$cfg]:-}")
		printf '%-28s %12s %13s %13s %20sx %17sx\n' "$(label "$cfg")" "${REP_S[$cfg]:--}" "${FB_S[$cfg]:--}" \
			"${mx:--}" "$(ratio "${FB_S[$cfg]:-}" "$mx")" "$(ratio "${REP_S[$cfg]:-}" "${FB_S[$cfg]:-}")"
	done
fi
if ((ROUNDS > 1)); then
	printf '\n%d rounds of replicant and the floors in turn (the table above gives their medians):\n' "$ROUNDS"
	for cfg in "${CONFIGS[@]}"; do printf '%-28s %s\n' "$(label "$cfg")" "${ROUNDS_LINE[$cfg]:--}"; done
fi
if [[ -n $VS ]]; then
	printf '\nreplicant against vs (%s), same backlog, runs in turn (replicant_s above is the median):\n' "$VS"
	for cfg in "${CONFIGS[@]}"; do printf '%-28s %s\n' "$(label "$cfg")" "${VS_LINE[$cfg]:--}"; done
fi
printf '\nCPU seconds by process class (servers; the client is the consumer, pg_recvlogical or the two psql):\n'
for cfg in "${CONFIGS[@]}"; do
	for m in "${MODES[@]}"; do
		case $m in
		native) cl=- sv=${NAT_CPU[$cfg]:--} ;;
		replicant) cl=${REP_CPU[$cfg]:--} sv=${REP_SCPU[$cfg]:--} ;;
		floor_stream) cl=${FS_CPU[$cfg]:--} sv=${FS_SCPU[$cfg]:--} ;;
		floor_dest) cl=${FD_CPU[$cfg]:--} sv=${FD_SCPU[$cfg]:--} ;;
		floor_both) cl=${FB_CPU[$cfg]:--} sv=${FB_SCPU[$cfg]:--} ;;
		esac
		printf '%-28s %-13s client %6s, servers %6s: %s\n' "$(label "$cfg")" "$m" "$cl" "$sv" "${SPLIT[$cfg:$m]:--}"
	done
done
printf '\nCPU seconds (for reference; both clusters'"'"' processes, plus the consumer for replicant):\n'
printf '%-28s %12s %15s %15s %15s %17s %12s\n' backlog native_cpu replicant_srv consumer_cpu replicant_total native/replicant peak_rss_mb
for cfg in "${CONFIGS[@]}"; do
	tot=$(plus "${REP_SCPU[$cfg]:-}" "${REP_CPU[$cfg]:-}")
	printf '%-28s %12s %15s %15s %15s %16sx %12s\n' "$(label "$cfg")" "${NAT_CPU[$cfg]:--}" "${REP_SCPU[$cfg]:--}" \
		"${REP_CPU[$cfg]:--}" "${tot:--}" "$(ratio "${NAT_CPU[$cfg]:-}" "$tot")" "${REP_RSS[$cfg]:--}"
done
printf '\n%-28s %-36s %-36s\n' backlog 'native: destination vs source' 'replicant: destination vs source'
for cfg in "${CONFIGS[@]}"; do
	printf '%-28s %-36s %-36s\n' "$(label "$cfg")" "${NAT_OK[$cfg]:--}" "${REP_OK[$cfg]:--}"
	[[ -n ${FD_OK[$cfg]:-} ]] && printf '%-28s floor_dest: %s\n' '' "${FD_OK[$cfg]}"
	[[ -n ${FB_OK[$cfg]:-} ]] && printf '%-28s floor_both: %s\n' '' "${FB_OK[$cfg]}"
	[[ ${NAT_OK[$cfg]:-} == DIFF* || ${REP_OK[$cfg]:-} == DIFF* || ${FD_OK[$cfg]:-} == DIFF* || ${FB_OK[$cfg]:-} == DIFF* ]] && RC=1
done
printf '\ntargets: native/replicant >= 2x (1,000-row transactions), >= 4x (10-row transactions); consumer peak RSS < %d MB:' "$RSS_LIMIT_MB"
worst=0
for cfg in "${CONFIGS[@]}"; do
	[[ -n ${REP_RSS[$cfg]:-} ]] && worst=$(awk -v a="$worst" -v b="${REP_RSS[$cfg]}" 'BEGIN { print (b > a) ? b : a }')
done
awk -v w="$worst" -v l="$RSS_LIMIT_MB" 'BEGIN { exit !(w < l) }' && printf ' %s MB, met\n' "$worst" ||
	printf ' %s MB, MISSED\n' "$worst"
printf '(native = PostgreSQL subscription catch-up, timed from ENABLE to confirmed_flush_lsn >= end, looked at every 10 ms inside the source;\n'
printf ' replicant = consumer start to exit at the end LSN (wall clock of /usr/bin/time), destination committed and slot confirmed)\n'
printf 'load average at end: %s' "$(cut -d' ' -f1-3 /proc/loadavg)"
[[ "$(bin_id "$PLUGIN_SO") / $(bin_id "$CONSUMER")" == "$IDS" ]] ||
	printf '; WARNING: replicant was reinstalled during the run'
printf '\n'
exit "$RC"
