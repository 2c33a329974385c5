#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/backfill.sh: tables added to the selection of a running mirror are backfilled
# (--backfill, the DBLog method) while the stream runs and a workload keeps changing them,
# and the mirror converges.
#
# A stream mirrors a_t alone (include_tables) under a workload that changes a_t, b_t (keyed,
# 30,000 rows before the slot existed) and c_t (a two-column text/int key, 6,000 rows).
# Then the consumer is restarted with b_t and c_t added to include_tables and --backfill for
# both, 2,000-row chunks: the workload goes on updating, deleting, re-inserting (into key
# ranges the backfill is reading or has read) and moving rows to new keys.  The consumer is
# killed with SIGKILL after a few of b_t's chunks are stored and started again: the run must
# resume after the stored token (its log says so) rather than start over.  When both tables
# are backfilled, the workload stops, a final run streams to a fence, and every table is
# compared: count(*) and md5 of the rows' text in sorted order, source against destination.
#
# Proves the backfill part of issue 5: a row the stream changed while its chunk was being read
# keeps the stream's version (without the window the workload's updates inside chunks leave
# stale rows, and the comparison fails), every row the stream did not change comes from a
# chunk exactly once, and the progress token commits with the rows (G1 across the kill).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-backfill.XXXXXX)
STATE=$work/state
SLOT=backfill
TABLES=(a_t b_t c_t)
consumer_pid=
workload_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail backfill "$work/consumer-*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
# Until the kill, each backfill chunk applied to b_t or c_t in the destination (the statement
# that reads the chunk's staging table, rp_bfs_*) takes 0.2 s more: the backfill cannot finish
# before the kill however fast the machine is; the stream's statements are not slowed. The
# consumer creates those tables (--create-tables): an event trigger gives each its statement
# trigger as it is created.
rp_slow_new_tables dst 0.2 'INSERT OR UPDATE' '%rp_bfs_%' b_t c_t

rp_psql src <<'SQL' >/dev/null
CREATE TABLE a_t (id bigint PRIMARY KEY, v text, n int NOT NULL);
CREATE TABLE b_t (id bigint PRIMARY KEY, grp int NOT NULL, v text, amount numeric(12,2),
                  at timestamptz, tags text[]);
CREATE TABLE c_t (a int, b text, v int, PRIMARY KEY (a, b));
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE fence (at timestamptz);
CREATE SEQUENCE ids START 1000000;
CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT floor(random() * n)::int $$;
CREATE FUNCTION cb(i int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT (ARRAY['x', 'y z', E'tab\there', 'q"uote', 'é✓', 'back\slash'])[1 + i % 6] $$;

INSERT INTO b_t SELECT g, g % 17, CASE WHEN g % 11 = 0 THEN NULL ELSE md5(g::text) END, g / 7.0,
       '2020-01-01 00:00:00+00'::timestamptz + g * interval '1 minute',
       CASE WHEN g % 5 = 0 THEN ARRAY['a b', NULL, md5(g::text)] END
  FROM generate_series(1, 30000) g;
INSERT INTO c_t SELECT g / 6, cb(g), g FROM generate_series(0, 5999) g;

-- small transactions over all three tables, many of them inside the backfill's key ranges
CREATE PROCEDURE workload(iters int) LANGUAGE plpgsql AS $$
DECLARE
  x bigint;
  y bigint;
  k text;
BEGIN
  FOR i IN 1..iters LOOP
    EXIT WHEN (SELECT stop FROM ctl);
    y := 1 + ri(1000);
    UPDATE a_t SET n = n + 1, v = md5(random()::text) WHERE id = y;
    INSERT INTO a_t SELECT nextval('ids'), md5(random()::text), 0;
    x := 1 + ri(30000);
    CASE ri(6)
      WHEN 0 THEN DELETE FROM b_t WHERE id = x;
      WHEN 1 THEN INSERT INTO b_t VALUES (x, -1, 'again', 1.5, now(), ARRAY['re']) ON CONFLICT (id)
                  DO UPDATE SET v = 'upserted ' || b_t.grp, amount = b_t.amount + 1;
      WHEN 2 THEN UPDATE b_t SET id = nextval('ids') WHERE id = x;
      WHEN 3 THEN INSERT INTO b_t VALUES (nextval('ids'), 3, md5(random()::text), 2.25, now(), NULL);
      ELSE UPDATE b_t SET v = md5(random()::text), amount = amount + 1, tags = ARRAY[ri(9)::text] WHERE id = x;
    END CASE;
    y := x + ri(20);
    UPDATE b_t SET grp = grp + 1 WHERE id BETWEEN x AND y;
    x := ri(1000);
    k := cb(ri(6));
    CASE ri(4)
      WHEN 0 THEN DELETE FROM c_t WHERE a = x AND b = k;
      WHEN 1 THEN INSERT INTO c_t VALUES (x, k, -1) ON CONFLICT (a, b) DO UPDATE SET v = c_t.v + 1000;
      ELSE UPDATE c_t SET v = v + 1 WHERE a = x;
    END CASE;
    COMMIT;
    PERFORM pg_sleep(0.003);
  END LOOP;
END $$;
SQL

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot
# a_t's rows come by the stream (after the slot); b_t's and c_t's are older: only a backfill has them
rp_psql src -c "INSERT INTO a_t SELECT g, md5(g::text), 0 FROM generate_series(1, 1000) g" >/dev/null

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$STATE" --batch-txns 50 --batch-ms 100 "$@" 2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

stop_consumer() {
	local sig=$1 rc=0
	if ! kill -0 "$consumer_pid" 2>/dev/null; then
		wait "$consumer_pid" || rc=$?
		consumer_pid=
		fail "consumer run $runs exited by itself (status $rc) before $2"
	fi
	kill "-$sig" "$consumer_pid"
	wait "$consumer_pid" 2>/dev/null || true
	consumer_pid=
}

# progress of the backfill in the destination: "tables done stored-rows-of-b_t"
progress() {
	rp_psql dst -Atc "SELECT count(*) || ' ' || count(*) FILTER (WHERE done) || ' ' ||
	                         coalesce(sum(rows) FILTER (WHERE dest_table LIKE '%b_t%'), 0)
	                    FROM replicant.backfill_progress WHERE slot = '$SLOT'" 2>/dev/null || echo "0 0 0"
}

workload_loop() {
	while [[ $(rp_psql src -Atc "SELECT stop FROM ctl" 2>/dev/null || echo f) != t ]]; do
		rp_psql src -c "CALL workload(200)" >>"$work/workload.out" 2>&1 || sleep 0.3
	done
}

# ---- the stream mirrors a_t alone
ONLY_A=(-o include_tables=public.a_t)
ALL=(-o "include_tables=public.a_t,public.b_t,public.c_t")
BACKFILL=(--backfill=public.b_t --backfill=public.c_t --backfill-chunk-rows=2000 -v)
start_consumer "${ONLY_A[@]}"
workload_loop &
workload_pid=$!
sleep 3
stop_consumer TERM "the selection grew"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_tables WHERE tablename IN ('b_t', 'c_t')") == 0 ]] ||
	fail "b_t or c_t reached the destination before they were selected"

# ---- b_t and c_t join the selection and are backfilled while the workload goes on
start_consumer "${ALL[@]}" "${BACKFILL[@]}"
deadline=$((SECONDS + 600)) # only a guard against a hang
while :; do
	read -r ntab ndone brows <<<"$(progress)"
	((brows >= 6000)) && break
	((SECONDS < deadline)) || fail "the backfill stored no more than $brows rows of b_t within 600 s"
	kill -0 "$consumer_pid" 2>/dev/null || fail "consumer run $runs exited during the backfill"
	sleep 0.1
done
((ndone == 0)) || fail "the backfill finished before the kill could test its resume"
stop_consumer KILL "the kill during the backfill"
rp_say "killed the consumer during the backfill ($brows rows of b_t stored)"
rp_slow_off dst

start_consumer "${ALL[@]}" "${BACKFILL[@]}"
deadline=$((SECONDS + 600))
while :; do
	read -r ntab ndone brows <<<"$(progress)"
	((ntab == 2 && ndone == 2)) && break
	((SECONDS < deadline)) || fail "the backfill did not finish within 600 s ($ndone of 2 tables)"
	kill -0 "$consumer_pid" 2>/dev/null || fail "consumer run $runs exited during the backfill"
	sleep 0.2
done
grep -q 'table "public"."b_t": resuming after' "$work/consumer-$runs.err" ||
	fail "the run after the kill did not resume b_t after its stored token"
grep -q 'table "public"."c_t" backfilled' "$work/consumer-$runs.err" ||
	fail "the run after the kill did not report c_t backfilled"

# the workload keeps changing the backfilled tables for a while under the plain stream
sleep 2
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$workload_pid" 2>/dev/null || true
workload_pid=
if grep -q 'ERROR:' "$work/workload.out"; then
	fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.out")"
fi
stop_consumer TERM "the end of the workload"

# ---- a final run to a fence; a restart with --backfill finds both tables done
endpos=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
start_consumer "${ALL[@]}" "${BACKFILL[@]}" -E "$endpos" -n
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the final consumer run to $endpos exited with status $rc"
grep -q 'table "public"."b_t" is already backfilled' "$work/consumer-$runs.err" ||
	fail "the final run did not find b_t's backfill done"

# ---- compare
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3'
rp_compare_tables src dst "${TABLES[@]}"
summary=("${RP_COMPARED[@]}")
unset PGOPTIONS
changed=$(rp_psql src -Atc "SELECT count(*) FROM b_t WHERE v LIKE 'upserted%' OR grp <> id % 17")

status=0
printf 'PASS backfill: tables equal (rows: %s) after a SIGKILL mid-backfill and a resume (%s rows of b_t changed by the workload; %d s)\n' \
	"$(IFS=,; echo "${summary[*]}")" "$changed" $((SECONDS - started))
