#!/usr/bin/env bash
# Live aggregates against recomputing GROUP BY on the source:
#   bash bench/aggregates.sh [--build] [ROWS]
#
# Two throwaway clusters (regress/lib.sh; as root the run continues as the postgres user),
# fsync = on, autovacuum = off, as bench/mirror.sh. Table bench_t (id bigint PK, grp int,
# customer int, amount numeric(12,2), price float8), REPLICA IDENTITY FULL, 1,000 groups.
# The workload changes ROWS rows (default 1,000,000) in 100-row source transactions: ROWS/2
# inserted, ROWS/4 updated (each moves to another group, amount and price change), ROWS/4
# deleted. Kept live: sum(amount), count_distinct(customer) and max(price) per grp.
#   recompute  while the workload runs, after every 1,000 source transactions,
#              REFRESH MATERIALIZED VIEW of the same GROUP BY on the source, timed: its cost per
#              change is the refresh time over the changes; its lag is up to 1,000 transactions
#              plus one refresh
#   replicant  three slots hold the workload as a backlog; each is caught up (timed, -E END -n):
#                agg      --aggregates-only with the three bindings (table outputs)
#                mirror   the mirror alone (--create-tables), no binding
#                both     the mirror and the three bindings: the aggregates' second pass
#              cost per change = catch-up seconds / ROWS (and the consumer's CPU per change);
#              each output is checked against GROUP BY on the source.
#   lag        the agg consumer streams live while 2,000 more 100-row update transactions run at full
#              speed; every 0.5 s a probe notes the source's WAL insert position and waits until
#              the destination's checkpoint (committed with the cells) passes it.
#   distinct   count_distinct over DISTINCT_ROWS (default 1,000,000) distinct values in one cell:
#              the seed, then DISTINCT_NEW (100,000) new values in random order through the stream.
# The report is printed and written to bench/out/aggregates-<timestamp>.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	rows=1000000
	for arg in "$@"; do
		case $arg in
		--build) rp_build_install || exit 1 ;;
		-h | --help) printf 'usage: bash bench/aggregates.sh [--build] [ROWS]\n'; exit 0 ;;
		*[!0-9]* | '') printf 'usage: bash bench/aggregates.sh [--build] [ROWS]\n' >&2; exit 2 ;;
		*) rows=$arg ;;
		esac
	done
	((rows % 400 == 0)) || rp_die "ROWS must be a multiple of 400 (100-row transactions, split in quarters)"
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/aggregates-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/aggregates.sh --phase-run "$rows" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

ROWS=$2
PER_TXN=100
RECOMPUTE_EVERY=1000
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
trap rp_cluster_cleanup_all EXIT
rp_cluster_start src "autovacuum = off" "fsync = on"
rp_cluster_start dst "autovacuum = off" "fsync = on"
SRC=$(rp_conninfo src)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
dst() { PGOPTIONS='-c client_min_messages=warning' rp_psql dst "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

printf 'replicant aggregates bench: PostgreSQL %s, %s cores, %s; %d changed rows in %d-row transactions, 1,000 groups\n\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$ROWS" "$PER_TXN"

src >/dev/null <<'SQL'
CREATE TABLE bench_t (id bigint PRIMARY KEY, grp int NOT NULL, customer int, amount numeric(12,2), price float8);
ALTER TABLE bench_t REPLICA IDENTITY FULL;
CREATE MATERIALIZED VIEW agg_mv AS
  SELECT grp, sum(amount) AS s, count(DISTINCT customer) AS cd, max(price) AS mx FROM bench_t GROUP BY grp;
CREATE TABLE fence (at timestamptz);
-- ntx transactions of per_txn rows from id first: phase i(nsert), u(pdate) or d(elete)
CREATE PROCEDURE work(phase text, first bigint, ntx int, per_txn int) LANGUAGE plpgsql AS $$
DECLARE a bigint := first;
BEGIN
	FOR t IN 1..ntx LOOP
		IF phase = 'i' THEN
			INSERT INTO bench_t SELECT g, (g * 7919) % 1000, (random() * 100000)::int,
			       round((random() * 1000)::numeric, 2), random() * 1000
			FROM generate_series(a, a + per_txn - 1) g;
		ELSIF phase = 'u' THEN
			UPDATE bench_t SET grp = (grp + 1 + id % 7) % 1000, amount = amount + 1, price = price * 0.5
			WHERE id BETWEEN a AND a + per_txn - 1;
		ELSE
			DELETE FROM bench_t WHERE id BETWEEN a AND a + per_txn - 1;
		END IF;
		a := a + per_txn;
		COMMIT;
	END LOOP;
END $$;
SQL
for s in agg mirror both; do
	replicant -d "$SRC" -S "b_$s" --create-slot >/dev/null
	dst -c "CREATE DATABASE d_$s" >/dev/null
done

# ---- the workload, with the recompute baseline after every 1,000 transactions
half=$((ROWS / 2))
quarter=$((ROWS / 4))
phases=("i 1 $((half / PER_TXN))" "u 1 $((quarter / PER_TXN))" "d $((quarter + 1)) $((quarter / PER_TXN))")
refreshes=0
refresh_total=0
refresh_max=0
work_start=$(now)
for p in "${phases[@]}"; do
	read -r phase first ntx <<<"$p"
	while ((ntx > 0)); do
		n=$((ntx < RECOMPUTE_EVERY ? ntx : RECOMPUTE_EVERY))
		src -c "CALL work('$phase', $first, $n, $PER_TXN)" >/dev/null
		first=$((first + n * PER_TXN))
		ntx=$((ntx - n))
		t0=$(now)
		src -c "REFRESH MATERIALIZED VIEW agg_mv" >/dev/null
		d=$(sub "$(now)" "$t0")
		refreshes=$((refreshes + 1))
		refresh_total=$(awk -v a="$refresh_total" -v b="$d" 'BEGIN { printf "%.3f", a + b }')
		refresh_max=$(awk -v a="$refresh_max" -v b="$d" 'BEGIN { print (b > a ? b : a) }')
	done
done
work_secs=$(sub "$(now)" "$work_start")
work_secs=$(sub "$work_secs" "$refresh_total")
END=$(src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
src -c "CHECKPOINT" >/dev/null
dst -c "CHECKPOINT" >/dev/null
printf 'workload: %s s of source transactions (refreshes excluded), backlog end %s\n\n' "$work_secs" "$END"
printf 'recompute (REFRESH MATERIALIZED VIEW of the GROUP BY on the source every %d transactions):\n' "$RECOMPUTE_EVERY"
printf '  %d refreshes, %s s in all, longest %s s: %.2f us per change; lag: up to %d transactions (%.1f s of this workload) plus a refresh\n\n' \
	"$refreshes" "$refresh_total" "$refresh_max" "$(awk -v a="$refresh_total" -v r="$ROWS" 'BEGIN { print a * 1e6 / r }')" \
	"$RECOMPUTE_EVERY" "$(awk -v w="$work_secs" -v r="$ROWS" -v p="$PER_TXN" -v e="$RECOMPUTE_EVERY" 'BEGIN { print w / (r / p) * e }')"

BINDINGS=(--aggregate "name=sum_amount source=public.bench_t dims=grp measure=amount agg=sum output=table:agg.sum_amount"
	--aggregate "name=cd_customer source=public.bench_t dims=grp measure=customer agg=count_distinct output=table:agg.cd_customer"
	--aggregate "name=max_price source=public.bench_t dims=grp measure=price agg=max output=table:agg.max_price")

catch_up() { # mode, consumer options...
	local mode=$1 t0 secs cpu
	shift
	t0=$(now)
	/usr/bin/time -f '%U %S %M' -o "$WORK/time.$mode" \
		replicant -d "$SRC" -S "b_$mode" --start -n -E "$END" --sink "postgres:$(rp_conninfo dst "d_$mode")" \
		--state-dir "$WORK/state-$mode" "$@" 2>"$WORK/consumer-$mode.err" ||
		{ tail -n 5 "$WORK/consumer-$mode.err"; rp_die "the $mode catch-up failed"; }
	secs=$(sub "$(now)" "$t0")
	read -r u s rss <"$WORK/time.$mode"
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	printf '  %-7s %7s s  %6.2f us per change  consumer CPU %6s s (%5.2f us per change), peak RSS %d MB\n' \
		"$mode" "$secs" "$(awk -v a="$secs" -v r="$ROWS" 'BEGIN { print a * 1e6 / r }')" "$cpu" \
		"$(awk -v a="$cpu" -v r="$ROWS" 'BEGIN { print a * 1e6 / r }')" "$((rss / 1024))"
}
printf 'replicant catch-up of the backlog (-E END -n, default batching):\n'
catch_up agg --aggregates-only "${BINDINGS[@]}"
catch_up mirror --create-tables
catch_up both --create-tables "${BINDINGS[@]}"

# each output equals GROUP BY on the source
check() {
	local db=$1 a b
	a=$(src -Atc "SELECT md5(string_agg(grp || '|' || s || '|' || cd || '|' || mx, ',' ORDER BY grp)) FROM
	               (SELECT grp, sum(amount) s, count(DISTINCT customer) cd, max(price) mx FROM bench_t GROUP BY grp) x")
	b=$(rp_psql dst -d "$db" -Atc "SELECT md5(string_agg(grp || '|' || s || '|' || cd || '|' || mx, ',' ORDER BY grp)) FROM
	               (SELECT grp, sum_amount s, count_distinct_customer cd, max_price mx FROM agg.sum_amount
	                JOIN agg.cd_customer USING (grp) JOIN agg.max_price USING (grp)) x")
	[[ $a == "$b" ]] || rp_die "the outputs in $db differ from GROUP BY on the source"
}
check d_agg
check d_both
printf '  outputs of agg and both equal GROUP BY on the source (%s groups)\n\n' "$(src -Atc 'SELECT count(DISTINCT grp) FROM bench_t')"

# wait_fence DB SLOT PID ERRFILE: a fence committed on the source now, then until the
# consumer PID (its stderr in ERRFILE) has checkpointed it in database DB
wait_fence() {
	local fence
	fence=$(src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
	until [[ $(dst -d "$1" -Atc "SELECT end_lsn >= '$fence' FROM replicant.checkpoint WHERE slot = '$2'" 2>/dev/null) == t ]]; do
		kill -0 "$3" 2>/dev/null || { tail -n 5 "$4"; rp_die "the consumer of slot $2 exited"; }
		sleep 0.05
	done
}

# ---- lag while the workload runs live
replicant -d "$SRC" -S b_agg --start -s 1 --sink "postgres:$(rp_conninfo dst d_agg)" --state-dir "$WORK/state-agg" \
	--aggregates-only "${BINDINGS[@]}" 2>"$WORK/consumer-live.err" &
live=$!
# the live consumer seeds its bindings in its first batch: wait for that, then measure
t0=$(now)
wait_fence d_agg b_agg "$live" "$WORK/consumer-live.err"
printf 'live consumer start: the three bindings seeded from the source (%s rows) and the first batch committed in %s s\n' \
	"$(src -Atc 'SELECT count(*) FROM bench_t')" "$(sub "$(now)" "$t0")"
grep 'built from the source' "$WORK/consumer-live.err" | sed 's/^/  /'
live_txns=$((quarter / PER_TXN < 2000 ? quarter / PER_TXN : 2000))
src -c "CALL work('u', 1, $live_txns, $PER_TXN)" >/dev/null &
load=$!
lags=()
t_load=$(now)
while kill -0 "$load" 2>/dev/null; do
	read -r lsn <<<"$(src -Atc 'SELECT pg_current_wal_insert_lsn()')"
	t0=$(now)
	until [[ $(dst -d d_agg -Atc "SELECT end_lsn >= '$lsn' FROM replicant.checkpoint WHERE slot = 'b_agg'") == t ]]; do
		sleep 0.02
	done
	lags+=("$(sub "$(now)" "$t0")")
	[[ -z ${AGG_BENCH_TRACE:-} ]] || printf '  probe at +%s s: %s s\n' "$(sub "$t0" "$t_load")" "${lags[-1]}"
	sleep 0.5
done
wait "$load"
load_secs=$(sub "$(now)" "$t_load")
kill "$live"
wait "$live" 2>/dev/null || true
printf 'lag while %d live %d-row update transactions ran (%s s): %d probes, median %s s, max %s s\n' \
	"$live_txns" "$PER_TXN" "$load_secs" "${#lags[@]}" "$(printf '%s\n' "${lags[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')" \
	"$(printf '%s\n' "${lags[@]}" | sort -n | tail -n 1)"

# ---- count_distinct over a million distinct values in one cell: the seed, then new values
# in random order streamed (a sorted array moved half of its entries for each new value;
# the fold now finds them by hash: consumer/agg/rp_fold.c)
DISTINCT_ROWS=${DISTINCT_ROWS:-1000000}
DISTINCT_NEW=${DISTINCT_NEW:-100000}
src >/dev/null <<SQL
CREATE TABLE distinct_t (id bigint PRIMARY KEY, g int NOT NULL, v bigint);
ALTER TABLE distinct_t REPLICA IDENTITY FULL;
INSERT INTO distinct_t SELECT i, 0, i * 2 FROM generate_series(1, $DISTINCT_ROWS) i;
SQL
replicant -d "$SRC" -S b_distinct --create-slot >/dev/null
dst -c "CREATE DATABASE d_distinct" >/dev/null
/usr/bin/time -f '%U %S %M' -o "$WORK/time.distinct" \
	replicant -d "$SRC" -S b_distinct --start -s 1 --sink "postgres:$(rp_conninfo dst d_distinct)" \
	--state-dir "$WORK/state-distinct" --aggregates-only -v \
	--aggregate "name=cd source=public.distinct_t dims=g measure=v agg=count_distinct output=table:agg.cd" \
	2>"$WORK/consumer-distinct.err" &
live=$!
t0=$(now)
wait_fence d_distinct b_distinct "$live" "$WORK/consumer-distinct.err"
seed_secs=$(sub "$(now)" "$t0")
# odd values, none seen before, in an order unrelated to their own, in 1,000-row transactions
src >/dev/null <<SQL
DO \$\$
BEGIN
	FOR t IN 0 .. $DISTINCT_NEW / 1000 - 1 LOOP
		INSERT INTO distinct_t SELECT $DISTINCT_ROWS + t * 1000 + j, 0, ((t * 1000 + j) * 7919 % $DISTINCT_NEW) * 2 + 1
		FROM generate_series(1, 1000) j;
		COMMIT;
	END LOOP;
END \$\$;
SQL
t0=$(now)
wait_fence d_distinct b_distinct "$live" "$WORK/consumer-distinct.err"
catch_secs=$(sub "$(now)" "$t0")
pkill -TERM -P "$live" # the consumer under time(1): its report follows
wait "$live" 2>/dev/null || true
read -r u s rss <"$WORK/time.distinct"
want=$(src -Atc 'SELECT count(DISTINCT v) FROM distinct_t')
got=$(rp_psql dst -d d_distinct -Atc 'SELECT count_distinct_v FROM agg.cd')
[[ $want == "$got" ]] || rp_die "count_distinct: the output says $got, the source $want"
printf '\ncount_distinct of %d distinct values in one cell, then %d new ones in random order (1,000-row transactions)\n' \
	"$DISTINCT_ROWS" "$DISTINCT_NEW"
printf '  seed and first batch %s s; the new values caught up %s s after their last commit; consumer CPU %s s, peak RSS %d MB\n' \
	"$seed_secs" "$catch_secs" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')" "$((rss / 1024))"
printf '  the output equals count(DISTINCT) on the source (%s)\n' "$want"
