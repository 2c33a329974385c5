#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2119 # NAME_* variables are set by rp_cluster_start (lib.sh); rp_nats_sink_url: all nodes
# regress/t/differential.sh: a seeded randomized differential test: from a seed, a schema and a
# workload (regress/tools/difftest.py: every table shape and many types, hostile names; see
# its header), replayed through three paths; at the end every table of every path must equal
# the source's. Finds silent data loss without knowing what to look for (G1).
#
#   SEED=N bash regress/t/differential.sh    exactly seed N (as the unprivileged user; as root:
#                                            SEED=N bash regress/run_tests.sh --only t/differential.sh)
#   SEEDS=K bash regress/t/differential.sh   K seeds from a random base, each printed
#   bash regress/t/differential.sh           the fixed CI seeds (DEFAULT_SEEDS)
#   DIFF_PATHS="mirror nats file"            the paths to run (default all three)
#   DIFF_NO_FK=1                             drop the destinations' foreign keys after loading
#                                            them (to see past a mirror that trips on them)
#
# Per seed, on one source cluster and one destination cluster (a database each per seed):
# the schema is loaded on the source, and on the destinations with `pg_dump --schema-only` of
# the source (foreign keys, partitions, generated and identity columns included: the normal
# way to migrate). The slots of paths nats and file are created, workload part 0 (the history)
# runs, then:
#   mirror  replicant --create-slot --snapshot --start --sink postgres:DST/mirror_N (the
#           initial copy under the running workload, then the stream);
#   nats    a writer --sink nats:// (3-node JetStream cluster) and a reader --source nats://
#           --sink postgres:DST/nats_N (the NATS sink takes no --snapshot: slot made before
#           the workload);
#   file    --sink file:LOG (slot made before the workload), checked by
#           regress/check_difftest_log.py, which replays the log onto a model of each table
#           (keyed by its key; a multiset without one) and compares it with the source.
# The other parts of the workload run meanwhile, and every consumer is killed with SIGKILL at
# least twice at random moments (the mirror once its snapshot completed) and restarted (the
# mirror without --create-slot --snapshot, docs/operations.md). A fence is committed and its
# LSN read after the commit (regress/lib.sh); each consumer must reach it. Then every table
# that holds rows (partitions and inheritance children one by one, read with ONLY) is
# compared: keyed tables as count and md5 of the rows ordered by the key, the others (no key)
# as count and md5 of the sorted row texts. A difference prints the seed, path, table, and
# both sides' count and md5 (no row value), and how to rerun the seed. A consumer that exits
# by itself fails its path, with its stderr's tail (value-free, G4).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

DEFAULT_SEEDS=(1 2)
GEN=$RP_ROOT/regress/tools/difftest.py
PATHS=${DIFF_PATHS:-mirror nats file}
if [[ -n ${SEED:-} ]]; then
	seeds=("$SEED")
elif [[ -n ${SEEDS:-} ]]; then
	base=$(((RANDOM << 15 | RANDOM) % 1000000))
	seeds=()
	for ((i = 0; i < SEEDS; i++)); do seeds+=($((base + i))); done
else
	seeds=("${DEFAULT_SEEDS[@]}")
fi

work=$(mktemp -d /tmp/rp-differential.XXXXXX)
chmod 755 "$work"
status=1
mirror_pid=
writer_pid=
reader_pid=
file_pid=
workload_pid=
cleanup() {
	local rc=$?
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" mirror_pid writer_pid reader_pid file_pid workload_pid
}
trap cleanup EXIT
fail() { rp_e2e_fail differential "$work/none" 0 "$*"; }

has() { [[ " $PATHS " == *" $1 "* ]]; }

started=$SECONDS
rp_cluster_start src "logical_decoding_work_mem = 1MB"
rp_cluster_start dst
if has nats; then
	rp_nats_start 3
	rp_nats_build_tools "$work"
fi
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3 -c bytea_output=hex'
pgmajor=$(rp_psql src -Atc "SELECT current_setting('server_version_num')::int / 10000")

failures=()     # one line per failed check, over all seeds
failed_seeds=()

# ---------------------------------------------------------------- one seed

# per seed: the database names, slots, files, and the state of each path
declare -A dead=() runs=() kills=()
snapshot_overs=()
overs_total=0
say() { printf '[seed %s] %s\n' "$seed" "$*"; }
report() {
	failures+=("seed $seed: $*")
	say "FAILED: $*"
}

# shellcheck disable=SC2034 # the NAME_pid variables are read through pidvar
# the command of path P's consumer (run N: the mirror's first run makes the slot and snapshots)
start_path() {
	local p=$1 first=${2:-0} dir=$work/s$seed
	runs[$p]=$((${runs[$p]:-0} + 1))
	local err=$dir/$p-${runs[$p]}.err
	case $p in
	mirror)
		local extra=()
		((first)) && extra=(--create-slot --snapshot --snapshot-chunk-rows 3000)
		replicant -d "$(rp_conninfo src "$srcdb")" -S "dt_m$seed" "${extra[@]}" --start -s 1 \
			--sink "postgres:$(rp_conninfo dst "mirror_$seed")" --state-dir "$dir/st-mirror" \
			--batch-txns 20 --batch-ms 50 2>"$err" &
		mirror_pid=$! ;;
	writer)
		replicant -d "$(rp_conninfo src "$srcdb")" -S "dt_n$seed" --start -s 1 --sink "$(rp_nats_sink_url)" \
			--nats-stream "DT_$seed" --state-dir "$dir/st-writer" 2>"$err" &
		writer_pid=$! ;;
	reader)
		replicant --source "$(rp_nats_sink_url)" --nats-stream "DT_$seed" -S "dt_r$seed" --start \
			--sink "postgres:$(rp_conninfo dst "nats_$seed")" --state-dir "$dir/st-reader" \
			--batch-txns 20 --batch-ms 50 2>"$err" &
		reader_pid=$! ;;
	file)
		replicant -d "$(rp_conninfo src "$srcdb")" -S "dt_f$seed" --start -s 1 --sink "file:$dir/log.jsonl" \
			--state-dir "$dir/st-file" --batch-txns 7 --batch-ms 50 2>"$err" &
		file_pid=$! ;;
	esac
}

pidvar() { printf '%s_pid' "$1"; }

# path_failed P WHY: the consumer of P exited by itself: its path is done for this seed
path_failed() {
	local p=$1 f
	dead[$p]=1
	report "path ${2}: $p consumer run ${runs[$p]} exited by itself with status $RP_EXIT_STATUS"
	f=$work/s$seed/$p-${runs[$p]}.err
	[[ -s $f ]] && tail -n 4 "$f" | sed "s/^/[seed $seed]   $p stderr: /"
	return 0
}

path_of() { case $1 in writer | reader) echo nats ;; *) echo "$1" ;; esac; }

# kill9 P: SIGKILL consumer P and restart it (a consumer that had exited fails its path)
kill9() {
	local p=$1 v
	[[ -z ${dead[$p]:-} ]] || return 0
	v=$(pidvar "$p")
	if ! rp_kill9_alive "$v"; then
		path_failed "$p" "$(path_of "$p")"
		return 0
	fi
	kills[$p]=$((${kills[$p]:-0} + 1))
	say "round $round: $p killed with SIGKILL (kill ${kills[$p]})"
	start_path "$p"
}

alive_or_fail() {
	local p=$1 v
	[[ -z ${dead[$p]:-} ]] || return 1
	v=$(pidvar "$p")
	[[ -n ${!v} ]] || return 1
	if ! kill -0 "${!v}" 2>/dev/null; then
		RP_EXIT_STATUS=0
		wait "${!v}" || RP_EXIT_STATUS=$?
		printf -v "$v" '%s' ''
		snapshot_over "$p" && return 0
		path_failed "$p" "$(path_of "$p")"
		return 1
	fi
}

# snapshot_over P: the mirror's first run failed, naming a table truncated or rewritten
# between the consistent point and its copy (test/t/060_snapshot_rewrite.pl: the workload truncates
# while the snapshot copies); the snapshot starts over as docs/operations.md says (the slot
# and the destination's progress dropped, the same command run again), at most 3 times
snapshot_over() {
	local dir=$work/s$seed
	[[ $1 == mirror && -z $(position mirror) ]] || return 1
	grep -q 'was truncated or rewritten after the snapshot was taken' "$dir/mirror-${runs[mirror]}.err" || return 1
	((${#snapshot_overs[@]} < 3)) || return 1
	snapshot_overs+=("${runs[mirror]}")
	overs_total=$((overs_total + 1))
	say "mirror: the snapshot met a table truncated after its consistent point: starting over"
	local i
	# its walsender may take a moment to go
	for i in $(seq 1 100); do
		rp_psql src -Atc "SELECT pg_drop_replication_slot('dt_m$seed')" >/dev/null 2>&1 && break
		sleep 0.1
	done
	((i < 100)) || return 1
	rp_psql dst -d "mirror_$seed" -c "DELETE FROM replicant.snapshot_progress WHERE slot = 'dt_m$seed'" >/dev/null
	start_path mirror 1
}

# position P: the end LSN P has made durable ('' before its first)
position() {
	case $1 in
	mirror) rp_dst_checkpoint dst "dt_m$seed" "mirror_$seed" ;;
	reader) rp_dst_checkpoint dst "dt_r$seed" "nats_$seed" ;;
	writer) rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'dt_n$seed'" ;;
	file)
		[[ -s $work/s$seed/log.jsonl ]] || return 0
		{ tac "$work/s$seed/log.jsonl" | grep -a -m 1 '^{"kind":"checkpoint"' || true; } |
			sed -n 's/.*"end_lsn":"\([0-9A-F]*\/[0-9A-F]*\)".*/\1/p' ;;
	esac
}

lsn_ge() { [[ -n $1 && $(rp_psql src -Atc "SELECT '$1'::pg_lsn >= '$2'::pg_lsn") == t ]]; }

# wait_reach P LSN: until P's durable position is at or past LSN (or it exited: its path fails)
wait_reach() {
	local p=$1 deadline=$((SECONDS + 600))
	until lsn_ge "$(position "$p")" "$2"; do
		alive_or_fail "$p" || return 1
		if ((SECONDS >= deadline)); then
			report "path $(path_of "$p"): $p did not reach the fence $2 within 600 s (at $(position "$p"))"
			dead[$p]=1
			return 1
		fi
		sleep 0.2
	done
}

# digests DB: "name<TAB>count md5" for every table that holds rows (relkind r), keyed tables
# ordered by their key (the primary key, else the replica identity index), the others sorted
# by row text; read with ONLY (an inheritance parent's own rows).
digests() {
	rp_psql "$1" -d "$2" -At <<'SQL'
DO $$
DECLARE
	r record;
	q text := '';
	k text;
BEGIN
	FOR r IN SELECT c.oid, format('%I.%I', n.nspname, c.relname) AS name
	         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	         WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'replicant')
	           AND n.nspname NOT LIKE 'pg_%'
	         ORDER BY 2 LOOP
		SELECT string_agg(format('x.%I', a.attname), ', ' ORDER BY k.ord) INTO k
		  FROM (SELECT indrelid, indkey FROM pg_index WHERE indrelid = r.oid AND (indisprimary OR indisreplident)
		         ORDER BY indisprimary DESC LIMIT 1) i
		 CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
		  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum;
		q := q || CASE WHEN q = '' THEN '' ELSE ' UNION ALL ' END ||
		     format('SELECT %L || E''\t'' || %L || E''\t'' || count(*) || '' '' || md5(coalesce(string_agg(x::text, E''\n'' ORDER BY %s), '''')) FROM ONLY %s x',
		            r.name, CASE WHEN k IS NULL THEN 'multiset' ELSE 'keyed' END,
		            coalesce(k, 'x::text COLLATE "C"'), r.name);
	END LOOP;
	EXECUTE 'CREATE TEMP TABLE digests AS ' || q;
END $$;
SELECT * FROM digests ORDER BY 1;
SQL
}

# compare PATH DB: the destination database DB against the source, table by table
compare() {
	local path=$1 db=$2 name kind a b n=0 bad=0
	declare -A want=()
	while IFS=$'\t' read -r name kind a; do
		want[$name]="$kind	$a"
	done < <(digests src "$srcdb")
	declare -A got=()
	while IFS=$'\t' read -r name kind b; do
		got[$name]=$b
	done < <(digests dst "$db")
	for name in "${!want[@]}"; do
		[[ $name == public.difftest_fence ]] && continue
		kind=${want[$name]%%$'\t'*}
		a=${want[$name]#*$'\t'}
		b=${got[$name]:-missing}
		n=$((n + 1))
		if [[ $a != "$b" ]]; then
			bad=$((bad + 1))
			report "path $path: table $name ($kind) differs: source $a, destination $b"
		fi
	done
	say "path $path: $n tables compared, $bad differ"
}

# the writer made the stream, and every node holds it with a leader all agree on: right after
# the create, a node whose meta state lagged answered the reader "stream not found" (1 seed in
# 12), which the reader rightly takes for a missing stream
stream_made() {
	alive_or_fail writer || return 0
	rp_nats_tool "DT_$seed" info >/dev/null 2>&1 || return 1
	[[ -n $(rp_nats_stream_leader "DT_$seed") ]] || return 1
	_rp_nats_want=''
	_rp_nats_all_hold "DT_$seed"
}

run_seed() {
	seed=$1
	local dir=$work/s$seed p parts ms fence t0=$SECONDS nfail=${#failures[@]}
	srcdb=src_$seed
	mkdir -p "$dir"
	dead=() runs=() kills=() snapshot_overs=()
	say "schema and workload: python3 regress/tools/difftest.py --seed $seed --pg $pgmajor schema|workload"
	rp_psql src -c "CREATE DATABASE $srcdb" >/dev/null
	python3 "$GEN" --seed "$seed" --pg "$pgmajor" schema >"$dir/schema.sql"
	python3 "$GEN" --seed "$seed" --pg "$pgmajor" workload --dir "$dir"
	parts=$(python3 "$GEN" --seed "$seed" parts)
	rp_psql src -d "$srcdb" -f "$dir/schema.sql" >/dev/null
	rp_psql src -d "$srcdb" -c "CREATE TABLE public.difftest_fence (id int PRIMARY KEY)" >/dev/null
	for db in "mirror_$seed" "nats_$seed"; do
		rp_psql dst -c "CREATE DATABASE $db" >/dev/null
		"$RP_BINDIR/pg_dump" --schema-only -d "$(rp_conninfo src "$srcdb")" >"$dir/dump.sql"
		rp_psql dst -d "$db" -f "$dir/dump.sql" >/dev/null
		if [[ ${DIFF_NO_FK:-0} == 1 ]]; then
			rp_psql dst -d "$db" -Atc "SELECT format('ALTER TABLE %s DROP CONSTRAINT %I;', conrelid::regclass, conname)
			                         FROM pg_constraint WHERE contype = 'f' AND conparentid = 0" | rp_psql dst -d "$db" >/dev/null
		fi
	done
	[[ ${DIFF_NO_FK:-0} == 1 ]] && say "DIFF_NO_FK=1: the destinations' foreign keys dropped"
	has nats && replicant -d "$(rp_conninfo src "$srcdb")" -S "dt_n$seed" --create-slot
	has file && replicant -d "$(rp_conninfo src "$srcdb")" -S "dt_f$seed" --create-slot
	rp_psql src -d "$srcdb" -f "$dir/part-0.sql" >"$dir/workload.out" 2>&1 ||
		fail "seed $seed: workload part 0 failed: $(grep -m 3 ERROR "$dir/workload.out")"

	local procs=()
	has mirror && { start_path mirror 1; procs+=(mirror); }
	if has nats; then
		# the reader once the writer made the stream
		start_path writer
		rp_nats_wait_for 120 stream_made || report "path nats: the writer made no stream DT_$seed within 120 s"
		start_path reader
		procs+=(writer reader)
	fi
	has file && { start_path file; procs+=(file); }
	(
		for ((p = 1; p < parts; p++)); do
			rp_psql src -d "$srcdb" -f "$dir/part-$p.sql" || exit 1
			sleep 0.5
		done
	) >>"$dir/workload.out" 2>&1 &
	workload_pid=$!

	# kill rounds: every consumer twice, in a seeded order, at random moments while the
	# workload runs (the mirror only once its snapshot completed: its checkpoint exists)
	RANDOM=$seed
	local order=() i
	for i in 1 2; do
		for p in "${procs[@]}"; do order+=("$p"); done
	done
	for ((i = ${#order[@]} - 1; i > 0; i--)); do
		local j=$((RANDOM % (i + 1))) tmp=${order[i]}
		order[i]=${order[j]} order[j]=$tmp
	done
	round=0
	for p in "${order[@]}"; do
		round=$((round + 1))
		ms=$((300 + RANDOM % 1700))
		sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
		if [[ $p == mirror ]]; then
			local deadline=$((SECONDS + 300))
			while [[ -z $(position mirror) ]] && alive_or_fail mirror; do
				((SECONDS < deadline)) || { report "path mirror: no checkpoint (snapshot not complete) within 300 s"; dead[mirror]=1; break; }
				sleep 0.1
			done
		fi
		kill9 "$p"
	done
	wait "$workload_pid" || true
	workload_pid=
	grep -q 'ERROR:' "$dir/workload.out" && fail "seed $seed: the workload failed: $(grep -m 3 'ERROR:' "$dir/workload.out")"

	fence=$(rp_psql src -d "$srcdb" -Atc "INSERT INTO difftest_fence VALUES (1)" -c "SELECT pg_current_wal_lsn()")
	say "workload done in $((SECONDS - t0)) s, fence $fence; waiting for every consumer"
	for p in "${procs[@]}"; do
		[[ $p == writer ]] && continue
		wait_reach "$p" "$fence" || true
	done
	for p in "${procs[@]}"; do
		local v rc=0
		v=$(pidvar "$p")
		[[ -n ${!v} ]] || continue
		kill -TERM "${!v}" 2>/dev/null || true
		wait "${!v}" || rc=$?
		printf -v "$v" '%s' ''
		if [[ -z ${dead[$p]:-} ]] && ((rc != 0)); then
			report "path $(path_of "$p"): $p exited with status $rc on SIGTERM"
			dead[$p]=1
		fi
	done
	for p in "${procs[@]}"; do
		say "path $(path_of "$p"): $p: ${runs[$p]} runs, ${kills[$p]:-0} SIGKILLs${dead[$p]:+, FAILED}"
	done

	if has mirror && [[ -z ${dead[mirror]:-} ]]; then compare mirror "mirror_$seed"; fi
	if has nats && [[ -z ${dead[writer]:-} && -z ${dead[reader]:-} ]]; then compare nats "nats_$seed"; fi
	if has file && [[ -z ${dead[file]:-} ]]; then
		local out rc=0 line found=0
		out=$(python3 "$RP_ROOT/regress/check_difftest_log.py" "$dir/log.jsonl" "$(rp_conninfo src "$srcdb")" 2>&1) || rc=$?
		while IFS= read -r line; do
			if [[ $line == MISMATCH* ]]; then
				report "path file: ${line#MISMATCH }"
				found=1
			else
				say "path file: $line"
			fi
		done <<<"$out"
		((rc == 0 || found)) || report "path file: regress/check_difftest_log.py failed (status $rc)"
	fi
	if ((${#failures[@]} > nfail)); then
		failed_seeds+=("$seed")
		say "reproduce: SEED=$seed bash regress/run_tests.sh --only t/differential.sh"
	else
		say "passed ($((SECONDS - t0)) s)"
	fi
	# this seed's streams and slots are no longer needed
	rp_psql src -Atc "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active" >/dev/null 2>&1 || true
}

rp_say "differential: seeds ${seeds[*]}; paths $PATHS"
for seed in "${seeds[@]}"; do
	run_seed "$seed"
done

if ((${#failures[@]})); then
	printf 'FAIL differential: %d failures in seeds %s:\n' "${#failures[@]}" "${failed_seeds[*]}"
	printf '  %s\n' "${failures[@]}"
	for s in "${failed_seeds[@]}"; do printf '  reproduce: SEED=%s bash regress/run_tests.sh --only t/differential.sh\n' "$s"; done
	exit 1
fi
status=0
printf 'PASS differential: seeds %s, paths %s: every table equal; %d snapshots started over after a TRUNCATE (%ds)\n' \
	"${seeds[*]}" "$PATHS" "$overs_total" "$((SECONDS - started))"
