#!/usr/bin/env bash
# Many-table backlogs: the mirror's catch-up when each transaction touches a few of many tables,
# beside PostgreSQL's own subscription, in one run (also: bash bench/mirror.sh --tables):
#   bash bench/mirror_tables.sh [--build] [NT ...]
#
# For each NT (default: 1 100 1000 10000) the source gets NT tables s.t1 .. s.tNT
# (id bigint primary key, a int, b text), and two destination databases get the same tables
# beforehand: "native" for the subscription, "mirror" for replicant. Both slots are made before
# the workload (CREATE SUBSCRIPTION ... WITH (copy_data = false, enabled = false), and
# replicant --create-slot), then the workload: TXNS (default 5,000) transactions, each inserting
# one row into PER_TXN (default 5) distinct tables drawn at random (awk's rand, seed SEED,
# default 1: the same draw for every NT and every run), and a CHECKPOINT. Timed:
#   native     ALTER SUBSCRIPTION ... ENABLE until the subscription's slot confirms the end of
#              the backlog (looked at from inside the source every 10 ms)
#   replicant  replicant -S SLOT -n --start -E END --sink postgres:DST (default batching:
#              --batch-txns 1000), start to exit
# Reported per NT: both times, replicant/native (target: <= 0.5 at 1,000 and 10,000 tables),
# the (batch, table) pairs the backlog makes (a batch is 1,000 transactions: the distinct tables
# each touches, summed) and replicant's time per pair in microseconds, the rows of every table in
# both destinations against the source (count and md5 of every row's text in key order, over all
# NT tables; the exit status is 1 when they differ), and the growth of the mirror database's
# pg_class and pg_attribute during the catch-up (in pages; 0 expected: no catalog churn).
# Environment: TXNS, PER_TXN, SEED, SETTINGS="line;line" (default "autovacuum = off"),
# REPLICANT_OPTS="...", REPLICANT_BIN=PATH (default the installed consumer), LOG_LINES=REGEX
# (the consumer's log lines that match it, on stderr: with REPLICANT_OPTS=-vv, "batch"). Uses the installed
# plugin and consumer (run `make && make install` first, or pass --build). The report is printed
# and written to bench/out/mirror_tables-<timestamp>.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	nts=()
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*[!0-9]* | '' | 0) printf 'usage: bash bench/mirror_tables.sh [--build] [NT ...]\n' >&2; exit 2 ;;
		*) nts+=("$arg") ;;
		esac
	done
	((${#nts[@]})) || nts=(1 100 1000 10000)
	[[ ${TXNS:-5000} =~ ^[1-9][0-9]*$ ]] || rp_die "TXNS is a number of transactions: $TXNS"
	[[ ${PER_TXN:-5} =~ ^[1-9][0-9]?$ ]] || rp_die "PER_TXN is a number of tables, 1 to 99: $PER_TXN"
	[[ ${SEED:-1} =~ ^[0-9]+$ ]] || rp_die "SEED is a number: $SEED"
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/mirror_tables-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/mirror_tables.sh --phase-run "${nts[*]}" "${TXNS:-5000}" "${PER_TXN:-5}" \
		"${SEED:-1}" "${SETTINGS-autovacuum = off}" "${REPLICANT_OPTS:-}" "${REPLICANT_BIN:-}" "${LOG_LINES:-}" |
		tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
read -r -a NTS <<<"$2"
TXNS=$3
PER_TXN=$4
SEED=$5
IFS=';' read -r -a SETTINGS <<<"$6"
read -r -a ROPTS <<<"$7"
REPLICANT_BIN=$8
LOG_LINES=$9
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
trap rp_cluster_cleanup_all EXIT
CONSUMER=${REPLICANT_BIN:-$(command -v replicant)} || rp_die "replicant is not installed in $RP_BINDIR: run make install"

rp_cluster_start src "${SETTINGS[@]}" "fsync = on" "max_replication_slots = 20" "max_wal_senders = 20" "max_locks_per_transaction = 256"
# A mirror batch holds a lock on each table it touches (and on its index) until it commits: a
# batch of 1,000 transactions over 10,000 tables touches about 4,400 of them, past the default
# lock table (max_locks_per_transaction 64 x max_connections 100). The subscription's worker
# commits each transaction and holds a few.
rp_cluster_start dst "${SETTINGS[@]}" "fsync = on" "max_logical_replication_workers = 8" "max_locks_per_transaction = 256"
SRC=$(rp_conninfo src)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
dst() { PGOPTIONS='-c client_min_messages=warning' rp_psql dst "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

printf 'replicant many-table mirror bench: PostgreSQL %s, %s cores, %s\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer: %s (built %s)\n' "$CONSUMER" "$(date -u -r "$CONSUMER" '+%Y-%m-%d %H:%M:%S UTC')"
printf 'workload: %d transactions, each one row into %d distinct tables of NT (seed %d); both clusters fsync = on%s\n' \
	"$TXNS" "$PER_TXN" "$SEED" "$( ((${#SETTINGS[@]})) && printf ', %s' "${SETTINGS[@]}")"
((${#ROPTS[@]})) && printf 'replicant options: %s\n' "${ROPTS[*]}"
printf '\n'

src -f "$here/tools/caught_up.sql" >/dev/null  # bench_caught_up(SLOT, TARGET)

# The schema s of NT tables, and a digest of all of them: "ROWS MD5" (per table, in order, the
# md5 of every row's text in key order).
schema_sql() {
	printf 'DROP SCHEMA IF EXISTS s CASCADE; CREATE SCHEMA s;\n'
	# a commit every 500 tables: one transaction would need a lock per table at once
	printf 'DO $$ BEGIN FOR i IN 1..%d LOOP EXECUTE format($q$CREATE TABLE s.%%I (id bigint PRIMARY KEY, a int, b text)$q$, %s); IF i %% 500 = 0 THEN COMMIT; END IF; END LOOP; END $$;\n' \
		"$1" "'t' || i"
	cat <<'SQL'
CREATE OR REPLACE FUNCTION public.bench_digest(n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	total bigint := 0;
	acc text := '';
	c bigint;
	d text;
BEGIN
	FOR i IN 1..n LOOP
		EXECUTE format('SELECT count(*), coalesce(md5(string_agg(md5(t::text), '''' ORDER BY id)), ''-'') FROM s.%I t', 't' || i)
		  INTO c, d;
		total := total + c;
		acc := md5(acc || d);
	END LOOP;
	RETURN total || ' ' || acc;
END $$;
SQL
}

# The workload as SQL, and per batch of 1,000 transactions the distinct tables it touches, summed
# (awk prints that last, on stderr).
workload_sql() {
	awk -v txns="$TXNS" -v per="$PER_TXN" -v nt="$1" -v seed="$SEED" 'BEGIN {
		srand(seed); id = 0; pairs = 0
		for (x = 0; x < txns; x++) {
			if (x % 1000 == 0) { for (k in seen) delete seen[k] }
			print "BEGIN;"
			for (k in pick) delete pick[k]
			n = per < nt ? per : nt
			for (j = 0; j < n; ) {
				t = int(rand() * nt) + 1
				if (nt > per && (t in pick)) continue
				pick[t] = 1; j++
				if (!(t in seen)) { seen[t] = 1; pairs++ }
				printf "INSERT INTO s.t%d VALUES (%d, %d, md5(%d::text));\n", t, ++id, x, id
			}
			print "COMMIT;"
		}
		print pairs > "/dev/stderr"
	}'
}

catalog_pages() {
	dst -d mirror -Atc "SELECT pg_relation_size('pg_catalog.pg_class') / 8192 || ' ' || pg_relation_size('pg_catalog.pg_attribute') / 8192"
}

printf '%8s %10s %10s %9s %10s %11s %8s %s\n' tables native_s replicant_s repl/nat pairs us/pair equal 'catalog growth (pages: pg_class, pg_attribute)'
status=0
for nt in "${NTS[@]}"; do
	src -q -c "DROP PUBLICATION IF EXISTS bench_pub" 2>/dev/null || true
	schema_sql "$nt" | src -q
	for db in native mirror; do
		dst -q -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
		schema_sql "$nt" | dst -q -d "$db"
	done
	src -q -c "CREATE PUBLICATION bench_pub FOR TABLES IN SCHEMA s"
	dst -q -d native -c "CREATE SUBSCRIPTION bench_sub CONNECTION '$SRC' PUBLICATION bench_pub WITH (copy_data = false, enabled = false, slot_name = 'bench_native')"
	"$CONSUMER" -d "$SRC" -S bench_mirror --create-slot >/dev/null 2>&1 ||
		rp_die "replicant --create-slot failed"
	workload_sql "$nt" 2>"$WORK/pairs" | src -q
	end=$(src -Atc "SELECT pg_current_wal_lsn()")
	pairs=$(cat "$WORK/pairs")
	src -q -c CHECKPOINT
	dst -q -c CHECKPOINT

	a=$(now)
	dst -q -d native -c "ALTER SUBSCRIPTION bench_sub ENABLE"
	until [[ $(src -Atc "SELECT bench_caught_up('bench_native', '$end')") == t ]]; do :; done
	native_s=$(sub "$(now)" "$a")

	before=$(catalog_pages)
	a=$(now)
	"$CONSUMER" -d "$SRC" -S bench_mirror -n --start -E "$end" --sink "postgres:$(rp_conninfo dst mirror)" \
		"${ROPTS[@]}" 2>"$WORK/replicant.log" || { cat "$WORK/replicant.log" >&2; rp_die "replicant failed at $nt tables"; }
	repl_s=$(sub "$(now)" "$a")
	after=$(catalog_pages)
	[[ -n ${LOG_LINES:-} ]] && grep -E "$LOG_LINES" "$WORK/replicant.log" | head -n 40 >&2

	want=$(src -Atc "SELECT bench_digest($nt)")
	equal=yes
	for db in native mirror; do
		got=$(dst -d "$db" -Atc "SELECT bench_digest($nt)")
		if [[ $got != "$want" ]]; then
			equal=no
			status=1
			printf 'DIFFERS: %s at %d tables: %s, source %s\n' "$db" "$nt" "$got" "$want" >&2
		fi
	done
	read -r c0 a0 <<<"$before"
	read -r c1 a1 <<<"$after"
	printf '%8d %10s %10s %9s %10d %11s %8s %d, %d\n' "$nt" "$native_s" "$repl_s" \
		"$(awk -v r="$repl_s" -v n="$native_s" 'BEGIN { printf "%.2fx", r / n }')" "$pairs" \
		"$(awk -v r="$repl_s" -v p="$pairs" 'BEGIN { printf "%.0f", r * 1e6 / p }')" "$equal" \
		$((c1 - c0)) $((a1 - a0))

	dst -q -d native -c "ALTER SUBSCRIPTION bench_sub DISABLE" -c "ALTER SUBSCRIPTION bench_sub SET (slot_name = NONE)" \
		-c "DROP SUBSCRIPTION bench_sub"
	src -q -Atc "SELECT pg_drop_replication_slot(s) FROM unnest(ARRAY['bench_native', 'bench_mirror']) s" >/dev/null
done
exit "$status"
