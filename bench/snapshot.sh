#!/usr/bin/env bash
# Initial copy into the mirror beside PostgreSQL's own subscription with copy_data = true:
#   bash bench/snapshot.sh [--build] [--quick] [ROWS]
#
# Starts two throwaway clusters with the same settings (regress/lib.sh; as root, the run
# continues as the postgres user through rp_run_unprivileged; fsync = on over logical.conf's
# off, autovacuum off). The source gets ROWS rows (default 5,000,000) of
# (id bigint primary key, a int, t text, ts timestamptz, n numeric, b bool, j jsonb), the
# DESIGN.md workload's shape, either in one table or spread over four tables (ROWS/4 each).
# For each configuration, one run of each:
#   native     CREATE PUBLICATION on the source, the same tables (empty) on the destination,
#              CREATE SUBSCRIPTION ... WITH (copy_data = true), timed until every table of the
#              subscription is synchronized (pg_subscription_rel.srsubstate r or s, looked at
#              every 20 ms inside the destination); max_sync_workers_per_subscription at its
#              default (2).
#   replicant  the same empty tables, then
#                replicant -S SLOT --create-slot --snapshot --start --sink postgres:DST
#              (--snapshot-workers at its default, 2, like the subscription's sync workers)
#              timed until the destination's replicant.checkpoint row appears (the snapshot
#              completed, in the transaction that sets it; looked at every 20 ms likewise).
#   floor      the destination COPY floor: a plain parallel binary COPY of the same tables,
#                COPY t TO STDOUT (FORMAT binary) on SRC -> COPY t FROM STDIN (FORMAT binary) on DST
#              by bench/tools/copy_floor (built for the run: libpq, each CopyData message handed
#              on as it came; FLOOR_CLIENT=psql: a pipe of two psql instead, which costs the
#              client about three times the CPU), in SESSIONS sessions at once (default 2, the
#              consumer's --snapshot-workers default; table i goes to session i mod SESSIONS,
#              one after the other), no replicant; timed until every session has exited.
# The destination tables are dropped and created again between the runs. Reported: seconds of
# each, the ratios native/replicant (target: >= 1 with one table, > 1 with four) and
# replicant/floor (issue 13's target: <= 1.15 with four tables), the CPU seconds of each
# process class of both clusters meanwhile (bench/cpu.sh) and of the client (the consumer, or
# the psql pipes), and the row counts and content checksums of source and destination (md5 of
# every row's text in key order; the exit status is 1 when they differ).
#
#   resnapshot (after the three) 1% of the source's rows updated, then a second replicant
#              snapshot into the populated destination tables (the "merge" mode): the rows it
#              wrote there (pg_stat_user_tables n_tup_upd + n_tup_ins) and the destination WAL.
# Environment: CONFIGS="1 4" (tables per configuration), MODES="native replicant floor resnapshot",
# PERF=1 records the consumer with perf -g and prints the top of its report,
# SESSIONS=N the floor's pipes (give --snapshot-workers N in REPLICANT_OPTS alike),
# REPLICANT_OPTS="..." extra consumer options, SETTINGS="line;line" more postgresql.conf lines
# (default "autovacuum = off"), RP_KEEP_CLUSTERS=1. A quick run (under a minute): bash bench/snapshot.sh --quick (400,000 rows).
# The report is printed and written to bench/out/snapshot-<timestamp>.txt. Uses the consumer
# built in the tree (consumer/replicant), then the installed one.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	rows=5000000
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		--quick) rows=400000 ;;
		-h | --help) printf 'usage: [CONFIGS="1 4"] [MODES="native replicant floor resnapshot"] [SESSIONS=2] bash bench/snapshot.sh [--build] [--quick] [ROWS]\n'; exit 0 ;;
		*[!0-9]* | '') printf 'usage: bash bench/snapshot.sh [--build] [--quick] [ROWS]\n' >&2; exit 2 ;;
		*) rows=$arg ;;
		esac
	done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/snapshot-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	[[ ${FLOOR_CLIENT:-copy_floor} == copy_floor || $FLOOR_CLIENT == psql ]] ||
		{ printf 'FLOOR_CLIENT is copy_floor or psql: %s\n' "$FLOOR_CLIENT" >&2; exit 2; }
	[[ ${SESSIONS:-2} =~ ^[1-9][0-9]*$ ]] || { printf 'SESSIONS is a count: %s\n' "$SESSIONS" >&2; exit 2; }
	rp_run_unprivileged bench/snapshot.sh --phase-run "$rows" "${CONFIGS:-1 4}" "${MODES:-native replicant floor resnapshot}" \
		"${SETTINGS-autovacuum = off}" "${REPLICANT_OPTS:-}" "${SESSIONS:-2}" "${PERF:-0}" "${FLOOR_CLIENT:-copy_floor}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
ROWS=$2
read -r -a CONFIGS <<<"$3"
read -r -a MODES <<<"$4"
IFS=';' read -r -a SETTINGS <<<"$5"
read -r -a ROPTS <<<"$6"
SESSIONS=$7
PERF=$8
FLOOR_CLIENT=$9
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
consumer_pid=
cleanup() {
	local rc=$?
	[[ -z $consumer_pid ]] || kill -9 "$consumer_pid" 2>/dev/null || true
	[[ -z ${CPU_SAMPLER:-} ]] || kill "$CPU_SAMPLER" 2>/dev/null || true
	rp_cluster_cleanup_all
	return "$rc"
}
trap cleanup EXIT
has_mode() { [[ " ${MODES[*]} " == *" $1 "* ]]; }

rp_cluster_start src "${SETTINGS[@]}" "fsync = on"
rp_cluster_start dst "${SETTINGS[@]}" "fsync = on"
SRC=$(rp_conninfo src)
DST=$(rp_conninfo dst)
# shellcheck disable=SC2154 # exported by rp_cluster_start
POSTMASTERS=("$(head -n 1 "$src_DATA/postmaster.pid")" "$(head -n 1 "$dst_DATA/postmaster.pid")")
# CPU seconds of both clusters' processes by class: cpu_begin, cpu_poll, cpu_total, cpu_split
# shellcheck source=bench/cpu.sh
. "$here/cpu.sh"
# the floor's client, built here for this run (bench/tools/copy_floor.c; libpq only)
# shellcheck disable=SC2154 # exported by rp_cluster_start
COPY_FLOOR=$src_DIR/copy_floor
if [[ $FLOOR_CLIENT == copy_floor ]]; then
	cc -O2 -I"$("$PG_CONFIG" --includedir)" -o "$COPY_FLOOR" "$here/tools/copy_floor.c" \
		-L"$("$PG_CONFIG" --libdir)" -lpq || rp_die "bench/tools/copy_floor.c does not build"
fi
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
dst() { PGOPTIONS='-c client_min_messages=warning' rp_psql dst "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
DIGEST_SQL="select count(*) || ' ' || coalesce(md5(string_agg(md5(t::text), '' order by id)), '-') from"
digest() { "$1" -Atc "$DIGEST_SQL $2 t"; }
ddl() { printf 'CREATE TABLE %s (id bigint PRIMARY KEY, a int, t text, ts timestamptz, n numeric, b bool, j jsonb);' "$1"; }

printf 'replicant snapshot bench: PostgreSQL %s, %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer: %s; options: %s; floor sessions: %s\n' "$(command -v replicant)" \
	"$( ((${#ROPTS[@]})) && printf '%s' "${ROPTS[*]}" || printf 'defaults')" "$SESSIONS"
printf 'both clusters: fsync = %s, shared_buffers = %s, max_wal_size = %s, max_sync_workers_per_subscription = %s' \
	"$(dst -Atc 'show fsync')" "$(dst -Atc 'show shared_buffers')" "$(dst -Atc 'show max_wal_size')" \
	"$(dst -Atc 'show max_sync_workers_per_subscription')"
((${#SETTINGS[@]})) && printf '; %s' "${SETTINGS[@]}"
printf '\n\n'

# The end of a copy is awaited inside the destination: one call looks every 20 ms for up to
# 1 s, so the wait costs one psql per second, not ten (a psql and a backend start per look
# took about a tenth of the 2 cores from the copy being measured).
dst >/dev/null <<'SQL'
CREATE FUNCTION public.bench_wait(what text, ntab int) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	done bool;
BEGIN
	LOOP
		IF what = 'native' THEN
			SELECT count(*) = ntab AND count(*) FILTER (WHERE srsubstate NOT IN ('r', 's')) = 0
			  INTO done FROM pg_subscription_rel;
		ELSE
			done := to_regclass('replicant.checkpoint') IS NOT NULL;
			IF done THEN
				EXECUTE 'SELECT EXISTS (SELECT FROM replicant.checkpoint WHERE slot = $1 AND end_lsn IS NOT NULL)'
				  INTO done USING 'sbench';
			END IF;
		END IF;
		IF done OR clock_timestamp() - t0 > interval '1 s' THEN
			RETURN done;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;
SQL

# floor_copy TABLE...: SESSIONS binary COPY sessions, source to destination, table i in
# session i mod SESSIONS (bench/tools/copy_floor, or with FLOOR_CLIENT=psql a pipe of two
# psql); returns non-zero if any failed
floor_copy() {
	local -a pids=() lists=()
	local i pid rc=0
	i=0
	for t in "$@"; do
		lists[i % SESSIONS]+=" $t"
		i=$((i + 1))
	done
	for i in "${!lists[@]}"; do
		if [[ $FLOOR_CLIENT == copy_floor ]]; then
			# shellcheck disable=SC2086 # the list is words
			"$COPY_FLOOR" "$SRC" "$DST" ${lists[$i]} 2>>"$src_DIR/floor.log" &
			pids+=("$!")
			continue
		fi
		# shellcheck disable=SC2016,SC2154,SC2086 # expanded by the inner shell; src_DIR by rp_cluster_start; the list is words
		bash -c 'set -eo pipefail
			bin=$1 s=$2 d=$3
			shift 3
			for t in "$@"; do
				"$bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$s" -c "COPY $t TO STDOUT (FORMAT binary)" |
					"$bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$d" -c "COPY $t FROM STDIN (FORMAT binary)"
			done' floor "$RP_BINDIR" "$SRC" "$DST" ${lists[$i]} 2>>"$src_DIR/floor.log" &
		pids+=("$!")
	done
	for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
	return "$rc"
}

bad=0
summary=()
for ntab in "${CONFIGS[@]}"; do
	per=$((ROWS / ntab))
	tables=()
	for i in $(seq 1 "$ntab"); do tables+=("sbench$i"); done
	src -c "DROP PUBLICATION IF EXISTS npub" >/dev/null
	for t in "${tables[@]}"; do
		src -c "DROP TABLE IF EXISTS $t" -c "$(ddl "$t")" \
			-c "INSERT INTO $t SELECT g, g % 1000, md5(g::text), '2020-01-01'::timestamptz + g * interval '1 s',
			    g / 7.0, g % 2 = 0, jsonb_build_object('g', g, 'k', 'v' || (g % 10)) FROM generate_series(1, $per) g" \
			-c "VACUUM ANALYZE $t" >/dev/null
	done
	src -c "CHECKPOINT" >/dev/null
	printf '%d table(s) of %d rows\n' "$ntab" "$per"
	declare -A secs=() cli=() allcpu=()
	for mode in native replicant floor; do
		has_mode "$mode" || continue
		for t in "${tables[@]}"; do dst -c "DROP TABLE IF EXISTS $t" -c "$(ddl "$t")" >/dev/null; done
		dst -c "CHECKPOINT" >/dev/null
		w0=$(dst -Atc "SELECT pg_current_wal_insert_lsn()")
		cpu_sampler_start "$src_DIR/cpu.$mode"
		cli[$mode]=-
		if [[ $mode == floor ]]; then
			times >"$src_DIR/times0" # not in a pipe: a subshell's times are its own
			t0=$(now)
			floor_copy "${tables[@]}" || { cat "$src_DIR/floor.log"; rp_die "a floor COPY pipe failed"; }
			t1=$(now)
			cpu_sampler_stop
			# the pipes' CPU: this shell's children's user + system time, before and after
			times >"$src_DIR/times1"
			cli[$mode]=$(awk 'function s(x) { split(x, m, "m"); return m[1] * 60 + m[2] }
				FNR == 2 { c[++f] = s($1) + s($2) } END { printf "%.2f", c[2] - c[1] }' "$src_DIR/times0" "$src_DIR/times1")
		elif [[ $mode == native ]]; then
			src -c "CREATE PUBLICATION npub FOR TABLE $(IFS=,; echo "${tables[*]}")" >/dev/null
			t0=$(now)
			dst -c "CREATE SUBSCRIPTION nsub CONNECTION '$SRC' PUBLICATION npub WITH (copy_data = true)" >/dev/null
			until [[ $(dst -Atc "SELECT public.bench_wait('native', $ntab)") == t ]]; do :; done
			t1=$(now)
			cpu_sampler_stop
			dst -c "ALTER SUBSCRIPTION nsub DISABLE" -c "ALTER SUBSCRIPTION nsub SET (slot_name = NONE)" >/dev/null
			dst -c "DROP SUBSCRIPTION nsub" >/dev/null
			src -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'nsub%' OR slot_name LIKE 'pg_%sync%'" >/dev/null || true
			src -c "DROP PUBLICATION npub" >/dev/null
		else
			dst -c "DROP SCHEMA IF EXISTS replicant CASCADE" >/dev/null
			prefix=()
			[[ $PERF == 1 ]] && prefix=(perf record -q -g -o "$src_DIR/perf-$ntab.data" --)
			t0=$(now)
			"${prefix[@]}" replicant -d "$SRC" -S sbench --create-slot --snapshot --start "${ROPTS[@]}" \
				--sink "postgres:$DST" --state-dir "$src_DIR/state" >"$src_DIR/replicant.log" 2>&1 &
			consumer_pid=$!
			if [[ $PERF == 1 ]]; then # the consumer is perf's child: the one to time and stop
				perf_pid=$consumer_pid
				until consumer_pid=$(cat "/proc/$perf_pid/task/$perf_pid/children" 2>/dev/null) && [[ -n ${consumer_pid// } ]]; do
					sleep 0.01
				done
				consumer_pid=${consumer_pid// }
			fi
			until [[ $(dst -Atc "SELECT public.bench_wait('replicant', $ntab)") == t ]]; do
				kill -0 "$consumer_pid" 2>/dev/null || { cat "$src_DIR/replicant.log"; rp_die "the consumer exited"; }
			done
			t1=$(now)
			cpu_sampler_stop
			cli[$mode]=$(secs "$(ticks_of "$consumer_pid" || echo 0)")
			kill -TERM "$consumer_pid"
			if [[ $PERF == 1 ]]; then
				wait "$perf_pid" || true
				perf report -i "$src_DIR/perf-$ntab.data" --stdio --no-children 2>/dev/null |
					grep -v '^$' | grep -v '^#' | head -n 80 | sed 's/^/    perf: /'
			else
				wait "$consumer_pid" || true
			fi
			consumer_pid=
			src -c "SELECT pg_drop_replication_slot('sbench')" >/dev/null
			rm -rf "$src_DIR/state"
		fi
		secs[$mode]=$(sub "$t1" "$t0")
		srv=$(cpu_total) split=$(cpu_split)
		allcpu[$mode]=$(awk -v a="$srv" -v b="${cli[$mode]}" 'BEGIN { printf "%.2f", a + b }')
		wal=$(dst -Atc "SELECT round((pg_current_wal_insert_lsn() - '$w0') / 1048576)")
		for t in "${tables[@]}"; do
			a=$(digest src "$t")
			b=$(digest dst "$t")
			if [[ $a != "$b" ]]; then
				printf '  %s: %s differs: source %s, destination %s\n' "$mode" "$t" "$a" "$b"
				bad=1
			fi
		done
		printf '  %-9s %8s s  (%s rows checked; destination WAL %s MB)\n' "$mode" "${secs[$mode]}" "$ROWS" "$wal"
		printf '  %-9s cpu: client %s s, servers %s s: %s\n' "$mode" "${cli[$mode]}" "$srv" "$split"
	done
	# a second snapshot into the populated mirror ("merge" mode) after 1% of the source's rows
	# changed: what it writes on the destination (rows updated or inserted, WAL)
	if has_mode resnapshot; then
		for t in "${tables[@]}"; do src -c "UPDATE $t SET a = a + 1 WHERE id % 100 = 0" >/dev/null; done
		dst -c "DROP SCHEMA IF EXISTS replicant CASCADE" -c "CHECKPOINT" >/dev/null
		stat_sql="SELECT coalesce(sum(n_tup_upd + n_tup_ins), 0) FROM pg_stat_user_tables WHERE relname LIKE 'sbench%'"
		r0=$(dst -Atc "$stat_sql")
		w0=$(dst -Atc "SELECT pg_current_wal_insert_lsn()")
		t0=$(now)
		replicant -d "$SRC" -S sbench --create-slot --snapshot --start "${ROPTS[@]}" \
			--sink "postgres:$DST" --state-dir "$src_DIR/state" >"$src_DIR/resnapshot.log" 2>&1 &
		consumer_pid=$!
		until [[ $(dst -Atc "SELECT public.bench_wait('replicant', $ntab)") == t ]]; do
			kill -0 "$consumer_pid" 2>/dev/null || { cat "$src_DIR/resnapshot.log"; rp_die "the consumer exited"; }
		done
		t1=$(now)
		kill -TERM "$consumer_pid"
		wait "$consumer_pid" || true # its sessions end: their statistics are flushed
		consumer_pid=
		src -c "SELECT pg_drop_replication_slot('sbench')" >/dev/null
		rm -rf "$src_DIR/state"
		sleep 1
		written=$(($(dst -Atc "$stat_sql") - r0))
		wal=$(dst -Atc "SELECT round((pg_current_wal_insert_lsn() - '$w0') / 1048576)")
		changed=$(for t in "${tables[@]}"; do src -Atc "SELECT count(*) FROM $t WHERE id % 100 = 0"; done | awk '{ s += $1 } END { print s }')
		for t in "${tables[@]}"; do
			[[ $(digest src "$t") == "$(digest dst "$t")" ]] || { printf '  resnapshot: %s differs\n' "$t"; bad=1; }
		done
		printf '  %-9s %8s s  into the populated mirror, %d of %d rows changed on the source: %d rows written, destination WAL %s MB\n' \
			resnapshot "$(sub "$t1" "$t0")" "$changed" "$ROWS" "$written" "$wal"
	fi
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) printf "-"; else printf "%.2f", a / b }'; }
	nr=$(ratio "${secs[native]:-}" "${secs[replicant]:-}")
	rf=$(ratio "${secs[replicant]:-}" "${secs[floor]:-}")
	# CPU (client + servers) moves far less than wall time when other work shares the cores
	cf=$(ratio "${allcpu[replicant]:-}" "${allcpu[floor]:-}")
	printf '  native / replicant = %s; replicant / floor = %s; in CPU seconds (client + servers) replicant / floor = %s\n' "$nr" "$rf" "$cf"
	summary+=("$ntab table(s): native ${secs[native]:--} s, replicant ${secs[replicant]:--} s, floor ${secs[floor]:--} s, native/replicant $nr, replicant/floor $rf (cpu $cf)")
	unset secs cli allcpu
	printf '\n'
done
printf 'summary (%d rows; target replicant/floor <= 1.15 with four tables):\n' "$ROWS"
printf '  %s\n' "${summary[@]}"
((bad == 0)) || { printf 'CHECKSUM MISMATCH\n'; exit 1; }
