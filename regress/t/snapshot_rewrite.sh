#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_rewrite.sh: a table truncated or rewritten after the snapshot's consistent
# point, before its copy starts, fails the run naming it; it is never copied empty.
#
# TRUNCATE and a rewriting ALTER TABLE are not MVCC-safe: a snapshot older than them reads the
# new file, which holds no row it sees. Before the fix the copy of such a table was empty: a
# REPLICA IDENTITY FULL table without a key then halted the mirror "has diverged" on the first
# streamed update of a row it never got (found by t/differential.sh, seed 473960), and a keyed
# table rewritten by ALTER TABLE stayed empty in the mirror with the run going on (silent loss).
#
# The ordering is forced, not hoped for: one copy worker; the destination's gate_t (the first
# table copied: tables without a key go first, then the largest) holds each insert on an
# advisory lock this script holds, so the copy waits there, after the consistent point, while
# the script changes the source; then the script lets it go.
#
# Round 1: k2 (no key, REPLICA IDENTITY FULL) updated then truncated in the window: the run
#   fails naming k2, not "diverged"; run again, the resume refuses, naming k2 (a table without
#   a key cannot be copied under a new snapshot while the stream replays from the old point).
# Round 2 (a new slot, a second destination database): t3 (keyed) rewritten by ALTER TABLE and
#   t4 (keyed, copied before t3) by VACUUM FULL in the window: t4's copy goes through (VACUUM
#   FULL keeps every row version), the run fails naming t3 and stores no checkpoint.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snapshot-rewrite.XXXXXX)
consumer_pid=
gate_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid gate_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail snapshot_rewrite "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

TABLES_SQL="
CREATE TABLE gate_t (id int, v text);
CREATE TABLE k2 (id int, v int);
ALTER TABLE k2 REPLICA IDENTITY FULL;
CREATE TABLE t3 (id int PRIMARY KEY, v int);
CREATE TABLE t4 (id int PRIMARY KEY, v text);"
rp_psql src <<SQL >/dev/null
$TABLES_SQL
INSERT INTO gate_t SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO k2 SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO t3 SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO t4 SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
ANALYZE;
SQL
# the gate: every insert into the destination's gate_t waits for advisory lock 4242
GATE_SQL="$TABLES_SQL
CREATE FUNCTION public.gate() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN PERFORM pg_catalog.pg_advisory_xact_lock_shared(4242); RETURN NULL; END \$\$;
CREATE TRIGGER gate AFTER INSERT ON gate_t FOR EACH STATEMENT EXECUTE FUNCTION public.gate();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE gate_t ENABLE ALWAYS TRIGGER gate;"
rp_psql dst -c "CREATE DATABASE m2" >/dev/null
rp_psql dst <<<"$GATE_SQL" >/dev/null
rp_psql dst -d m2 <<<"$GATE_SQL" >/dev/null

dsql() { rp_psql dst -Atc "$1"; }
# close the gate of database DB: a session holding lock 4242 (a lock of that database) until
# it is terminated
gate_close() {
	PGAPPNAME=rp_gate rp_psql dst -d "$1" -c "SELECT pg_advisory_lock(4242), pg_sleep(3600)" >/dev/null 2>&1 &
	gate_pid=$!
	for _ in $(seq 1 600); do
		[[ $(dsql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted") == 1 ]] && return
		sleep 0.1
	done
	fail "the gate session did not take its lock"
}
gate_open() {
	dsql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rp_gate'" >/dev/null
	wait "$gate_pid" 2>/dev/null || true
	gate_pid=
}
# until the copy waits at the gate: the snapshot exists and gate_t's rows are on their way
gate_reached() {
	for _ in $(seq 1 1200); do
		[[ $(dsql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted") -ge 1 ]] && return
		kill -0 "$consumer_pid" 2>/dev/null || fail "run $1 exited before its copy reached the gate"
		sleep 0.1
	done
	fail "run $1's copy never reached the gate"
}
run_consumer() { # NAME SLOT DB
	replicant -d "$src_CONNSTR" -S "$2" --create-slot --snapshot --start --snapshot-workers=1 \
		--sink "postgres:$(rp_conninfo dst "$3")" --state-dir "$work/state-$2" -s 1 -v \
		>"$work/$1.out" 2>"$work/$1.err" &
	consumer_pid=$!
}
# the run must end by itself (a run that goes on streaming is the defect) with an error
ends_failing() { # NAME
	rp_wait_exit "$consumer_pid" 300 || fail "$1 did not stop: a rewritten table was copied as it stood"
	consumer_pid=
	((exit_status != 0)) || fail "$1 exited 0"
	if grep -q 'diverged' "$work/$1.err"; then fail "$1 halted as diverged instead of naming the rewrite"; fi
	printf '%s: exit %d: %s\n' "$1" "$exit_status" "$(grep -m1 'error' "$work/$1.err")"
}

# ---- round 1: TRUNCATE of a REPLICA IDENTITY FULL table without a key
gate_close postgres
run_consumer r1 s1 postgres
gate_reached r1
rp_psql src <<'SQL' >/dev/null
UPDATE k2 SET v = v + 1000 WHERE id <= 10;
TRUNCATE k2;
INSERT INTO k2 SELECT g, g FROM generate_series(1, 5) g;
UPDATE k2 SET v = -v WHERE id = 1;
SQL
gate_open
ends_failing r1
grep -q 'table "public"."k2" was truncated or rewritten after the snapshot was taken' "$work/r1.err" ||
	fail "r1 did not name k2 as rewritten"
[[ -z $(rp_dst_checkpoint dst s1) ]] || fail "r1 stored a checkpoint"

# run again: gate_t is done; k2 (no key) would be copied under a new snapshot: refused
run_consumer r1b s1 postgres
rp_wait_exit "$consumer_pid" 300 || fail "the rerun of round 1 did not stop"
consumer_pid=
((exit_status != 0)) || fail "the rerun of round 1 exited 0"
grep -q 'cannot resume: table "public"."k2" has no primary key' "$work/r1b.err" ||
	fail "the rerun did not refuse to resume k2: $(grep -m1 error "$work/r1b.err")"

# ---- round 2: ALTER TABLE rewrites t3 (keyed); VACUUM FULL rewrites t4, keeping its rows
gate_close m2
run_consumer r2 s2 m2
gate_reached r2
rp_psql src <<'SQL' >/dev/null
VACUUM FULL t4;
ALTER TABLE t3 ALTER COLUMN v TYPE bigint;
SQL
gate_open
ends_failing r2
grep -q 'table "public"."t3" was truncated or rewritten after the snapshot was taken' "$work/r2.err" ||
	fail "r2 did not name t3 as rewritten"
grep -q '"t4".*rewritten' "$work/r2.err" && fail "r2 refused t4, whose VACUUM FULL kept its rows"
[[ $(rp_psql dst -d m2 -Atc "SELECT count(*) FROM t4") == 1000 ]] || fail "t4's copy did not go through whole"
[[ -z $(rp_dst_checkpoint dst s2 m2) ]] || fail "r2 stored a checkpoint"

status=0
printf 'PASS snapshot_rewrite: TRUNCATE of a FULL keyless table and ALTER TABLE of a keyed one after the consistent point fail the run naming them; the keyless resume is refused; VACUUM FULL copies through (%ds)\n' \
	"$((SECONDS - started))"
