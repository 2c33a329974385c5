#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_resume.sh: an initial snapshot into the mirror killed with SIGKILL part
# way resumes from its last stored chunk, and the result is still exact.
#
# Proves G1 across a crash of the consumer during the copy: each chunk commits with its
# progress token (replicant.snapshot_progress), so a restart with the same command copies
# only the chunks after the last stored one (under a new snapshot) and streams from the
# slot's original consistent point, which reconciles the rows the two snapshots saw
# differently (docs/guarantees.md). A workload writes throughout; the consumer is killed
# twice during the copy. Afterwards every table equals the source (count and md5), the
# resumed runs copied fewer rows than the table holds, and no progress is left behind.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snapshot-resume.XXXXXX)
SLOT=snap_resume
TABLES=(big_t wide_t comp_t)
BIG_ROWS=${BIG_ROWS:-300000}
consumer_pid=
workload_pid=
status=1
runs=0

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail snapshot_resume "$work/*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

TABLES_SQL="
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text, at timestamptz);
CREATE TABLE wide_t (id int PRIMARY KEY, a text, b jsonb, c numeric, d int[]);
CREATE TABLE comp_t (a int, b text, v int, PRIMARY KEY (a, b));"
rp_psql src <<SQL >/dev/null
$TABLES_SQL
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE fence (at timestamptz);
CREATE SEQUENCE ids START 10000000;
CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS \$\$ SELECT floor(random() * n)::int \$\$;
INSERT INTO big_t SELECT g, g % 10, md5(g::text), '2020-01-01'::timestamptz + g * interval '1 s' FROM generate_series(1, $BIG_ROWS) g;
INSERT INTO wide_t SELECT g, repeat(md5(g::text), 4), jsonb_build_object('g', g, 'h', md5(g::text)), g * 1.5, ARRAY[g, NULL, g + 1]
  FROM generate_series(1, 40000) g;
INSERT INTO comp_t SELECT g % 1000, md5((g / 1000)::text), g FROM generate_series(1, 30000) g;
CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS \$\$
BEGIN
	FOR i IN 1..n LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		CASE ri(6)
			WHEN 0 THEN INSERT INTO big_t VALUES (nextval('ids'), 1, md5(random()::text), now());
			WHEN 1 THEN UPDATE big_t SET v = md5(random()::text), grp = grp + 1 WHERE id = 1 + ri($BIG_ROWS);
			WHEN 2 THEN DELETE FROM big_t WHERE id = 1 + ri($BIG_ROWS);
			WHEN 3 THEN UPDATE wide_t SET c = c + 1, d = d || i WHERE id = 1 + ri(40000);
			WHEN 4 THEN DELETE FROM comp_t WHERE a = ri(1000) AND b = md5(ri(30)::text);
			ELSE INSERT INTO comp_t VALUES (ri(1000), md5(ri(40)::text), i) ON CONFLICT (a, b) DO UPDATE SET v = EXCLUDED.v;
		END CASE;
		COMMIT;
	END LOOP;
END \$\$;
SQL
# The destination holds the tables, each chunk's statement slowed by a trigger until the kills
# are done: the copy cannot finish before them however fast the machine is (it takes at least
# 37 chunks x 0.2 s / 2 workers).
rp_psql dst <<SQL >/dev/null
$TABLES_SQL
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN PERFORM pg_sleep(0.2); RETURN NULL; END \$\$;
CREATE TRIGGER slow AFTER INSERT ON big_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
CREATE TRIGGER slow AFTER INSERT ON wide_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
CREATE TRIGGER slow AFTER INSERT ON comp_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE big_t ENABLE ALWAYS TRIGGER slow;
ALTER TABLE wide_t ENABLE ALWAYS TRIGGER slow;
ALTER TABLE comp_t ENABLE ALWAYS TRIGGER slow;
SQL

(
	while [[ $(rp_psql src -Atc "SELECT stop FROM ctl") == f ]]; do
		rp_psql src -c "CALL workload(100)" >/dev/null 2>>"$work/workload.err" || break
	done
) &
workload_pid=$!

dst_ck() { rp_dst_checkpoint dst "$SLOT"; }
stored() { rp_psql dst -Atc "SELECT coalesce(sum(rows), 0) FROM replicant.snapshot_progress WHERE slot = '$SLOT'" 2>/dev/null || echo 0; }

start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start --create-tables \
		--snapshot-workers=2 --snapshot-chunk-rows=10000 --sink "postgres:$dst_CONNSTR" \
		--state-dir "$work/state" -s 1 -v >"$work/c$runs.out" 2>"$work/c$runs.err" &
	consumer_pid=$!
}

kills=0
lsn0=
start_consumer
# kill twice, each time once some chunks (more than last time) are stored
last=0
for round in 1 2; do
	deadline=$((SECONDS + 600)) # only a guard against a hang
	until (($(stored) > last + 20000)); do
		kill -0 "$consumer_pid" 2>/dev/null || fail "run $runs exited before it could be killed"
		[[ -n $(dst_ck) ]] && fail "the snapshot completed before kill $round"
		((SECONDS < deadline)) || fail "fewer than $((last + 20000)) rows stored before kill $round"
		sleep 0.05
	done
	kill -9 "$consumer_pid"
	wait "$consumer_pid" 2>/dev/null || true
	kills=$((kills + 1))
	last=$(stored)
	((last > 0)) || fail "nothing stored before kill $round"
	lsn=$(rp_psql dst -Atc "SELECT DISTINCT split_part(token, '|', 2) FROM replicant.snapshot_progress WHERE slot = '$SLOT'")
	[[ -z $lsn0 ]] && lsn0=$lsn
	[[ $lsn == "$lsn0" ]] || fail "the stored consistent point moved: $lsn0 then $lsn"
	printf 'kill %d: %s rows stored (consistent point %s)\n' "$round" "$last" "$lsn"
	((round < 2)) ||
		rp_psql dst -c "CREATE OR REPLACE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NULL; END \$\$" >/dev/null
	start_consumer
done
for _ in $(seq 1 1800); do
	[[ -n $(dst_ck) ]] && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the resumed consumer exited"
	sleep 0.1
done
[[ -n $(dst_ck) ]] || fail "the resumed snapshot did not complete"
grep -q 'resuming the snapshot of consistent point' "$work/c$runs.err" || fail "the last run did not resume"
copied=$(sed -n 's/.*snapshot complete: \([0-9]*\) rows.*/\1/p' "$work/c$runs.err")
total=$(rp_psql src -Atc "SELECT (SELECT count(*) FROM big_t) + (SELECT count(*) FROM wide_t) + (SELECT count(*) FROM comp_t)")
((copied < total - last / 2)) || fail "the last run copied $copied rows of $total: it did not resume from the stored chunks"

sleep 2
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$workload_pid" || true
workload_pid=
grep -q 'ERROR:' "$work/workload.err" 2>/dev/null && fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.err")"
fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
for _ in $(seq 1 600); do
	a=$(dst_ck)
	[[ -n $a && $(rp_psql src -Atc "SELECT '$a'::pg_lsn >= '$fence'") == t ]] && break
	sleep 0.2
done
kill -TERM "$consumer_pid"
rc=0; wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the consumer exited with status $rc"

export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3'
rp_compare_tables src dst "${TABLES[@]}"
summary=("${RP_COMPARED[@]}")
unset PGOPTIONS
[[ $(rp_psql dst -Atc "SELECT count(*) FROM replicant.snapshot_progress") == 0 ]] || fail "snapshot progress left behind"

status=0
printf 'PASS snapshot_resume: %d SIGKILLs during the copy, the last run copied %s of %s rows; tables equal (rows: %s) (%ds)\n' \
	"$kills" "$copied" "$total" "$(IFS=,; echo "${summary[*]}")" "$((SECONDS - started))"
