#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_heap_resume.sh: the mirror's snapshot reads keyed tables in physical order
# (tuple ids), and a copy resumed after a crash is still exact when rows moved in between.
#
# Proves G1 for the two ways a stored tuple-id position can mislead a resumed copy
# (docs/guarantees.md, "Resuming"):
# - rows not yet copied that an UPDATE moved below the stored position (into space a VACUUM
#   freed), with a TOASTed column the UPDATE left unchanged, so the stream alone cannot
#   rebuild them: the resumed copy must take them again (its xmin horizon);
# - a table rewritten by VACUUM FULL, where every tuple id changed: its copy must start over.
# The consumer is stopped (SIGSTOP) once both tables have stored chunks and killed (SIGKILL),
# the source is changed, and the consumer is started again. Afterwards both tables equal the source.
# A destination trigger slows each chunk down so the stop lands mid-copy.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snapshot-heap.XXXXXX)
SLOT=snap_heap
ROWS=12000
consumer_pid=
status=1
runs=0

cleanup() {
	[[ -z $consumer_pid ]] || kill -CONT "$consumer_pid" 2>/dev/null || true
	rp_e2e_cleanup $? consumer_pid
}
trap cleanup EXIT

fail() { rp_e2e_fail snapshot_heap_resume "$work/*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

TABLES_SQL="
CREATE TABLE h_t (id int PRIMARY KEY, pad text, v int);
ALTER TABLE h_t ALTER pad SET STORAGE EXTERNAL;
CREATE TABLE r_t (id int PRIMARY KEY, v text);"
rp_psql src <<SQL >/dev/null
$TABLES_SQL
CREATE TABLE fence (at timestamptz);
INSERT INTO h_t SELECT g, repeat(md5(g::text), 70), g FROM generate_series(1, $ROWS) g;
INSERT INTO r_t SELECT g, md5(g::text) FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE h_t, r_t;
SQL
# the destination holds the tables (empty), each chunk's COPY slowed by a statement trigger
rp_psql dst <<SQL >/dev/null
$TABLES_SQL
CREATE TABLE fence (at timestamptz);
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END \$\$;
CREATE TRIGGER slow AFTER INSERT ON h_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
CREATE TRIGGER slow AFTER INSERT ON r_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE h_t ENABLE ALWAYS TRIGGER slow;
ALTER TABLE r_t ENABLE ALWAYS TRIGGER slow;
SQL

dst_ck() { rp_dst_checkpoint dst "$SLOT"; }
# rows stored for table T, 0 when none
stored() {
	rp_psql dst -Atc "SELECT coalesce(max(rows), 0) FROM replicant.snapshot_progress
	                  WHERE slot = '$SLOT' AND dest_table = '\"public\".\"$1\"'" 2>/dev/null || echo 0
}
token() { rp_psql dst -Atc "SELECT token FROM replicant.snapshot_progress WHERE slot = '$SLOT' AND dest_table = '\"public\".\"$1\"'"; }

start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start \
		--snapshot-workers=2 --snapshot-chunk-rows=1000 --sink "postgres:$dst_CONNSTR" \
		--state-dir "$work/state" -s 1 -v >"$work/c$runs.out" 2>"$work/c$runs.err" &
	consumer_pid=$!
}

start_consumer
deadline=$((SECONDS + 600)) # only a guard against a hang: the trigger paces the copy
until (($(stored h_t) >= 3000 && $(stored r_t) >= 3000)); do
	kill -0 "$consumer_pid" 2>/dev/null || fail "the first run exited"
	((SECONDS < deadline)) || fail "fewer than 3000 rows of each table stored"
	sleep 0.05
done
kill -STOP "$consumer_pid"
[[ -z $(dst_ck) ]] || fail "the snapshot completed before the stop"
htok=$(token h_t)
rtok=$(token r_t)
[[ $htok == v2\|*\|0\|* && $rtok == v2\|*\|0\|* ]] || fail "expected unfinished heap-order tokens, got '${htok%%|*}' and '${rtok%%|*}'"
# the stored position: v2|LSN|DONE|ROWS|AT|ID|FILENODE|HORIZON|BLOCK.OFFSET
hpos=${htok##*|}
htid="(${hpos%.*},${hpos#*.})"
hrows=$(stored h_t)
printf 'stopped: h_t %s rows stored (up to tuple %s), r_t %s rows stored\n' "$hrows" "$htid" "$(stored r_t)"

# the consumer dies mid-copy; its source sessions (and their snapshot and locks) go with it
kill -9 "$consumer_pid"
wait "$consumer_pid" 2>/dev/null || true
consumer_pid=
for _ in $(seq 1 300); do
	[[ $(rp_psql src -Atc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant'") == 0 ]] && break
	sleep 0.1
done

# change the source between the runs
first_uncopied=$(rp_psql src -Atc "SELECT min(id) FROM h_t WHERE ctid > '$htid'::tid")
rp_psql src <<SQL >/dev/null
DELETE FROM h_t WHERE id <= 600;
VACUUM h_t;
UPDATE h_t SET v = -v WHERE id > $ROWS - 600;
UPDATE h_t SET id = id + 100000 WHERE id BETWEEN $ROWS - 700 AND $ROWS - 650;
INSERT INTO h_t SELECT g, repeat(md5(g::text), 70), g FROM generate_series(200001, 200300) g;
VACUUM FULL r_t;
UPDATE r_t SET v = 'x' || v WHERE id % 7 = 0;
DELETE FROM r_t WHERE id % 11 = 0;
SQL
moved=$(rp_psql src -Atc "SELECT count(*) FROM h_t WHERE id > $ROWS - 600 AND ctid < '$htid'::tid")
((first_uncopied > 600)) || fail "the stop came too early: the first uncopied row of h_t is $first_uncopied"
((moved > 0)) || fail "no updated row of h_t moved below the stored position $htid: the case is not exercised"
printf 'source changed: %s updated rows of h_t moved below the stored position; r_t rewritten\n' "$moved"

rp_psql dst -c "CREATE OR REPLACE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NULL; END \$\$" >/dev/null
start_consumer
for _ in $(seq 1 600); do
	[[ -n $(dst_ck) ]] && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the resumed consumer exited"
	sleep 0.1
done
[[ -n $(dst_ck) ]] || fail "the resumed snapshot did not complete"
grep -q 'resuming the snapshot of consistent point' "$work/c$runs.err" || fail "the second run did not resume"
grep -q 'table "public"."r_t" was rewritten since its copy stopped' "$work/c$runs.err" ||
	fail "the rewrite of r_t was not noticed"
grep -q 'table "public"."h_t" was rewritten' "$work/c$runs.err" && fail "h_t was copied again from the start"

fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
for _ in $(seq 1 600); do
	a=$(dst_ck)
	[[ -n $a && $(rp_psql src -Atc "SELECT '$a'::pg_lsn >= '$fence'") == t ]] && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited while streaming"
	sleep 0.2
done
kill -TERM "$consumer_pid"
rc=0; wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the consumer exited with status $rc"

rp_compare_tables src dst h_t r_t
status=0
printf 'PASS snapshot_heap_resume: resumed after %s rows of h_t with %s rows moved below the position, r_t rewritten and copied again; tables equal (rows: %s) (%ds)\n' \
	"$hrows" "$moved" "$(IFS=,; echo "${RP_COMPARED[*]}")" "$((SECONDS - started))"
