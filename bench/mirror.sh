#!/usr/bin/env bash
# Backlog catch-up of the mirror beside PostgreSQL's own subscription:
#   bash bench/mirror.sh [--build] [ROWS [ROWS_PER_TXN]]
#
# Starts two throwaway clusters with the same settings, a source and a destination
# (regress/lib.sh; as root, the run continues as the postgres user through rp_run_unprivileged;
# fsync and synchronous_commit are the server defaults, on). For each backlog configuration
# (default: 1,000,000 rows in 1,000-row transactions, then 200,000 rows in 10-row
# transactions; each followed by an update pass, a=a+1 where id%4=0, and a delete pass,
# id%10=0) it measures:
#   native     PostgreSQL's subscription catching up the backlog (../shared/bench/native_apply.sh,
#              run as it is: workload while the subscription is disabled, then ENABLE, timed until
#              the slot's confirmed_flush_lsn reaches the end of the backlog), table nbench
#   replicant  the same workload into table rbench while no consumer runs (a backlog in a
#              replicant slot created before it), then, timed from start to exit,
#                replicant -S SLOT -n --start -E END --sink postgres:DST --create-tables
#              with the default batching (--batch-txns 1000, --batch-bytes 64MB, --max-memory 256MB)
# Reported: seconds of each, the ratio native/replicant (targets: >= 2x on the 1,000-row backlog,
# >= 4x on the 10-row one), source and destination row counts and content checksums (md5 of
# every row's text, in key order: they must be equal), the consumer's CPU time and peak RSS
# (/usr/bin/time -v, or VmHWM sampled from /proc; target < 256 MB).
#
# Arguments: ROWS alone = one configuration in 1,000-row transactions; ROWS ROWS_PER_TXN = one
# configuration. Environment: CONFIGS="ROWS:PER_TXN ..." (default "1000000:1000 200000:10");
# NATIVE_APPLY=PATH (default ../shared/bench/native_apply.sh beside the repository; when it is
# missing the native side is not measured); MODES="native replicant" (default both);
# REPLICANT_OPTS="..." extra consumer options (e.g. "--batch-txns 5000"); SETTINGS="line;line"
# postgresql.conf lines for both clusters (default "autovacuum = off": the 2-core machine's
# numbers are steadier without it; it is the same for both sides); PERF=1 records the consumer
# with perf (call graphs, into the cluster directory, kept with RP_KEEP_CLUSTERS=1) and prints
# the top of its report; RP_KEEP_CLUSTERS=1 keeps the clusters. The report is printed and written
# to bench/out/mirror-<timestamp>.txt. Uses the installed plugin and consumer: run
# `make && make install` first (or pass --build).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

DEFAULT_CONFIGS="1000000:1000 200000:10"
RSS_LIMIT_MB=256

usage() {
	printf 'usage: [CONFIGS="ROWS:PER_TXN ..."] [MODES="native replicant"] bash bench/mirror.sh [--build] [ROWS [ROWS_PER_TXN]]\n'
	printf '  default: %s (rows:rows per transaction)\n' "$DEFAULT_CONFIGS"
	printf '  --build  make && make install first\n'
}

# ---------------------------------------------------------------- entry: as the caller
if [[ ${1:-} != --phase-run ]]; then
	build=0
	nums=()
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) usage; exit 0 ;;
		*[!0-9]* | '') usage >&2; exit 2 ;;
		*) nums+=("$arg") ;;
		esac
	done
	case ${#nums[@]} in
	0) configs=${CONFIGS:-$DEFAULT_CONFIGS} ;;
	1) configs="${nums[0]}:1000" ;;
	2) configs="${nums[0]}:${nums[1]}" ;;
	*) usage >&2; exit 2 ;;
	esac
	for c in $configs; do
		[[ $c =~ ^([1-9][0-9]*):([1-9][0-9]*)$ ]] || rp_die "a configuration is ROWS:ROWS_PER_TXN: $c"
		((BASH_REMATCH[1] % BASH_REMATCH[2] == 0)) ||
			rp_die "ROWS must be a multiple of ROWS_PER_TXN (as native_apply.sh inserts ROWS/ROWS_PER_TXN full transactions): $c"
	done
	modes=${MODES:-native replicant}
	for m in $modes; do
		[[ $m == native || $m == replicant ]] || rp_die "MODES takes native and replicant: $m"
	done
	native=${NATIVE_APPLY:-$RP_ROOT/../shared/bench/native_apply.sh}
	if [[ -r $native ]]; then
		# the unprivileged run happens in a copy of the tree: pass an absolute path
		native=$(cd "$(dirname "$native")" && pwd)/$(basename "$native")
	else
		native=''
	fi
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/mirror-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/mirror.sh --phase-run "$configs" "$modes" "$native" \
		"${SETTINGS-autovacuum = off}" "${REPLICANT_OPTS:-}" "${PERF:-0}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
read -r -a CONFIGS <<<"$2"
read -r -a MODES <<<"$3"
NATIVE=$4
IFS=';' read -r -a SETTINGS <<<"$5"
read -r -a ROPTS <<<"$6"
PERF=$7
export PATH="$RP_BINDIR:$PATH"
trap rp_cluster_cleanup_all EXIT

has_mode() { [[ " ${MODES[*]} " == *" $1 "* ]]; }

rp_cluster_start src "${SETTINGS[@]}"
rp_cluster_start dst "${SETTINGS[@]}"
SRC=$(rp_conninfo src)
DST=$(rp_conninfo dst)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
src() { rp_psql src "$@"; }
dst() { rp_psql dst "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; } # kB to MB

# rows and a content checksum of a table: "COUNT MD5" (every row's text, in key order)
DIGEST_SQL="select count(*) || ' ' || coalesce(md5(string_agg(md5(t::text), '' order by id)), '-') from"
digest() { "$1" -Atc "$DIGEST_SQL $2 t"; }

printf 'replicant mirror bench: PostgreSQL %s, %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
CONSUMER=$(command -v replicant) || rp_die "replicant is not installed in $RP_BINDIR: run make install"
bin_id() { printf '%s, md5 %s' "$(date -u -r "$1" '+%Y-%m-%d %H:%M:%S UTC')" "$(md5sum <"$1" | cut -c1-12)"; }
PLUGIN_SO=$("$PG_CONFIG" --pkglibdir)/replicant.so
IDS="$(bin_id "$PLUGIN_SO") / $(bin_id "$CONSUMER")"
printf 'replicant.so / replicant: built %s\n' "$IDS"
printf 'both clusters: fsync = %s, synchronous_commit = %s, wal_level = %s, shared_buffers = %s, max_wal_size = %s' \
	"$(dst -Atc 'show fsync')" "$(dst -Atc 'show synchronous_commit')" "$(dst -Atc 'show wal_level')" \
	"$(dst -Atc 'show shared_buffers')" "$(dst -Atc 'show max_wal_size')"
((${#SETTINGS[@]})) && printf '; %s' "${SETTINGS[@]}"
printf '\nreplicant options: defaults%s; load average at start: %s\n' \
	"$( ((${#ROPTS[@]})) && printf ' and %s' "${ROPTS[*]}")" "$(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -z $NATIVE ]] && has_mode native; then
	printf 'native: NOT MEASURED (../shared/bench/native_apply.sh not found; set NATIVE_APPLY=PATH)\n'
	read -r -a MODES <<<"${MODES[*]/native/}"
fi
[[ -n $NATIVE ]] && printf 'native: %s\n' "$NATIVE"
printf '\n'

# run_measured LOG CMD...: runs CMD with stderr to LOG; sets RUN_RC, RUN_S (wall), RUN_CPU
# (user + system seconds) and RUN_RSS_KB (peak RSS). /usr/bin/time -v when it is there,
# otherwise VmHWM and the CPU ticks are sampled from /proc every 50 ms.
TICKS=$(getconf CLK_TCK)
run_measured() {
	local log=$1 a b pid line f hwm=0 ticks=0 tfile
	shift
	RUN_RC=0
	a=$(now)
	if [[ -x /usr/bin/time ]]; then
		tfile=$log.time
		/usr/bin/time -v -o "$tfile" "$@" 2>"$log" || RUN_RC=$?
		b=$(now)
		RUN_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
		RUN_CPU=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$tfile")
	else
		"$@" 2>"$log" &
		pid=$!
		while kill -0 "$pid" 2>/dev/null; do
			line=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
			[[ -n $line ]] && hwm=$line
			if read -r line 2>/dev/null <"/proc/$pid/stat"; then
				read -r -a f <<<"${line##*) }"
				ticks=$((f[11] + f[12]))
			fi
			sleep 0.05
		done
		wait "$pid" || RUN_RC=$?
		b=$(now)
		RUN_RSS_KB=$hwm
		RUN_CPU=$(awk -v t="$ticks" -v hz="$TICKS" 'BEGIN { printf "%.2f", t / hz }')
	fi
	RUN_S=$(sub "$b" "$a")
}

# the brief's table, as native_apply.sh creates it
ddl() { printf 'CREATE TABLE %s(id bigint primary key, a int, b text, c timestamptz, d numeric(12,2), e bool, f jsonb);' "$1"; }
# workload TABLE N T: exactly native_apply.sh's workload, on TABLE
workload() {
	src <<-SQL
		DO \$\$ BEGIN FOR i IN 0..($2/$3)-1 LOOP
		  INSERT INTO $1 SELECT g, g%1000, md5(g::text), now() + g*interval '1s', g/7.0, g%2=0, jsonb_build_object('k',g) FROM generate_series(i*$3+1,(i+1)*$3) g;
		  COMMIT; END LOOP; END \$\$;
		UPDATE $1 SET a=a+1 WHERE id % 4 = 0;
		DELETE FROM $1 WHERE id % 10 = 0;
	SQL
}

declare -A NAT_S NAT_OK REP_S REP_OK REP_CPU REP_RSS WAL_OF
RC=0
for cfg in "${CONFIGS[@]}"; do
	N=${cfg%%:*} T=${cfg##*:}
	changes=$((N + N / 4 + N / 10))
	printf '== %d rows in %d-row transactions (%d transactions), +%d updates, +%d deletes: %d changes\n' \
		"$N" "$T" $((N / T)) $((N / 4)) $((N / 10)) "$changes"

	# ---- native: native_apply.sh as it is, against these two clusters over TCP
	if has_mode native; then
		# shellcheck disable=SC2154 # exported by rp_cluster_start
		line=$(PGHOST=127.0.0.1 PGPORT=$src_PORT PGUSER=$src_USER PGDATABASE=postgres \
			DST_PORT=$dst_PORT bash "$NATIVE" "$N" "$T" 2>"$WORK/native-$cfg.log") ||
			{ cat "$WORK/native-$cfg.log" >&2; rp_die "native_apply.sh failed"; }
		printf '  %s\n' "$line"
		[[ $line =~ :\ ([0-9.]+)\ s, ]] || rp_die "could not read native_apply.sh's time: $line"
		NAT_S[$cfg]=$(awk -v s="${BASH_REMATCH[1]}" 'BEGIN { printf "%.2f", s }')
		s_dig=$(digest src nbench)
		d_dig=$(digest dst nbench)
		[[ $s_dig == "$d_dig" ]] && NAT_OK[$cfg]="${d_dig%% *} rows, equal" ||
			NAT_OK[$cfg]="DIFFERENT: src ${s_dig%% *} rows, dst ${d_dig%% *} rows"
		printf '  native: %s s; source %s, destination %s\n' "${NAT_S[$cfg]}" "$s_dig" "$d_dig"
		# the next configuration starts from empty tables: free the space now
		src -c "DROP TABLE nbench" -c "DROP PUBLICATION npub"
		dst -c "DROP TABLE nbench"
	fi

	# ---- replicant: a backlog in its slot, then the consumer catches up and exits at END
	if has_mode replicant; then
		slot=rslot_$T
		table=rbench
		state=$WORK/state-$cfg
		log=$WORK/replicant-$cfg.log
		rm -rf "$state"
		src -c "SET client_min_messages = warning; DROP TABLE IF EXISTS $table; $(ddl "$table")"
		dst -c "SET client_min_messages = warning; DROP TABLE IF EXISTS $table; DROP SCHEMA IF EXISTS replicant CASCADE"
		replicant -d "$SRC" -S "$slot" --create-slot 2>"$log" || { cat "$log" >&2; rp_die "replicant --create-slot failed"; }
		start_lsn=$(src -Atc "select confirmed_flush_lsn from pg_replication_slots where slot_name = '$slot'")
		workload "$table" "$N" "$T"
		END=$(src -Atc "select pg_current_wal_lsn()")
		WAL_OF[$cfg]=$(src -Atc "select pg_size_pretty(pg_wal_lsn_diff('$END', '$start_lsn'))")
		if [[ $PERF == 1 ]]; then
			cmd=(perf record -g -o "$WORK/perf-$cfg.data" -- "$CONSUMER")
		else
			cmd=("$CONSUMER")
		fi
		run_measured "$log" "${cmd[@]}" -d "$SRC" -S "$slot" -n --start -E "$END" \
			--sink "postgres:$DST" --create-tables --state-dir "$state" -v "${ROPTS[@]}"
		if ((RUN_RC != 0)); then
			tail -n 20 "$log" >&2
			rp_die "replicant exited with status $RUN_RC"
		fi
		REP_S[$cfg]=$RUN_S
		REP_CPU[$cfg]=$RUN_CPU
		REP_RSS[$cfg]=$(mb "$RUN_RSS_KB")
		confirmed=$(src -Atc "select pg_wal_lsn_diff(confirmed_flush_lsn, '$END') from pg_replication_slots where slot_name = '$slot'")
		ck=$(dst -Atc "select end_lsn from replicant.checkpoint where slot = '$slot'")
		s_dig=$(digest src "$table")
		d_dig=$(digest dst "public.$table")
		[[ $s_dig == "$d_dig" ]] && REP_OK[$cfg]="${d_dig%% *} rows, equal" ||
			REP_OK[$cfg]="DIFFERENT: src ${s_dig%% *} rows, dst ${d_dig%% *} rows"
		printf '  replicant: %s s (consumer cpu %s s, peak RSS %s MB); backlog %s of WAL, end %s\n' \
			"${REP_S[$cfg]}" "${REP_CPU[$cfg]}" "${REP_RSS[$cfg]}" "${WAL_OF[$cfg]}" "$END"
		printf '  replicant: destination checkpoint end_lsn %s, slot confirmed at end%+d bytes; source %s, destination %s\n' \
			"$ck" "$confirmed" "$s_dig" "$d_dig"
		[[ $PERF == 1 ]] && { perf report -i "$WORK/perf-$cfg.data" --stdio --no-children 2>/dev/null |
			grep -v '^$' | head -n 60 | sed 's/^/    perf: /'; }
		replicant -d "$SRC" -S "$slot" --drop-slot 2>>"$log" || true
		src -c "DROP TABLE $table"
		dst -c "DROP TABLE public.$table"
	fi
	printf '\n'
done

# ---------------------------------------------------------------- report
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) printf "-"; else printf "%.2f", a / b }'; }
printf '%-22s %10s %12s %15s %15s %13s %12s\n' backlog native_s replicant_s native/replicant target consumer_cpu_s peak_rss_mb
for cfg in "${CONFIGS[@]}"; do
	N=${cfg%%:*} T=${cfg##*:}
	want=2
	((T <= 10)) && want=4
	r=$(ratio "${NAT_S[$cfg]:-}" "${REP_S[$cfg]:-}")
	verdict=-
	if [[ $r != - ]]; then
		verdict=MISSED
		awk -v r="$r" -v w="$want" 'BEGIN { exit !(r >= w) }' && verdict=met
	fi
	printf '%-22s %10s %12s %15s %15s %13s %12s\n' "$N rows / $T per txn" "${NAT_S[$cfg]:--}" "${REP_S[$cfg]:--}" \
		"$r" ">= ${want}x: $verdict" "${REP_CPU[$cfg]:--}" "${REP_RSS[$cfg]:--}"
done
printf '\n%-22s %-40s %-40s\n' backlog 'native: destination vs source' 'replicant: destination vs source'
for cfg in "${CONFIGS[@]}"; do
	N=${cfg%%:*} T=${cfg##*:}
	printf '%-22s %-40s %-40s\n' "$N rows / $T per txn" "${NAT_OK[$cfg]:--}" "${REP_OK[$cfg]:--}"
	[[ ${NAT_OK[$cfg]:-} == DIFF* || ${REP_OK[$cfg]:-} == DIFF* ]] && RC=1
done
printf '\ntargets: native/replicant >= 2x (1,000-row transactions), >= 4x (10-row transactions); consumer peak RSS < %d MB:' "$RSS_LIMIT_MB"
worst=0
for cfg in "${CONFIGS[@]}"; do
	[[ -n ${REP_RSS[$cfg]:-} ]] && worst=$(awk -v a="$worst" -v b="${REP_RSS[$cfg]}" 'BEGIN { print (b > a) ? b : a }')
done
awk -v w="$worst" -v l="$RSS_LIMIT_MB" 'BEGIN { exit !(w < l) }' && printf ' %s MB, met\n' "$worst" ||
	printf ' %s MB, MISSED\n' "$worst"
printf '(native = PostgreSQL subscription catch-up, timed from ENABLE to confirmed_flush_lsn >= end, polled every 0.2 s;\n'
printf ' replicant = consumer start to exit at the end LSN, destination committed and slot confirmed)\n'
printf 'load average at end: %s' "$(cut -d' ' -f1-3 /proc/loadavg)"
[[ "$(bin_id "$PLUGIN_SO") / $(bin_id "$CONSUMER")" == "$IDS" ]] ||
	printf '; WARNING: replicant was reinstalled during the run'
printf '\n'
exit "$RC"
