#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/consumer_lock.sh: one consumer per file log, state directory and mirror slot.
#
# Proves G1 (effect-once: dup = 0, loss = 0 in the file log) when a second consumer is started
# on what a running one uses (issue 11: a second instance on the same file sink, started and
# killed 15 times while the first ran, left 60,000 duplicate rows and exit 0).
# A workload commits small insert/update/delete transactions, each change recorded in an
# audit table in the same transaction, while consumer A streams it into a file log. Fifteen
# times a second consumer is started and must refuse by itself, exit 1, and name A's pid:
#   - on A's state directory (with the stdout sink, or another log, which it must not
#     create),
#   - on A's spill directory (with a state directory and a log of its own), or
#   - on A's log (with a state directory of its own).
# The same for the mirror sink: while consumer M mirrors slot m into the destination, a
# second one on the same destination and slot (its own state directory) refuses, naming
# the destination session that holds the slot. Then the workload stops, A is stopped with
# SIGTERM and a last run takes the log to the end; the checker (regress/check_file_log.py)
# compares the log with the audit table, and the mirror is compared with the source.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-15}
work=$(mktemp -d /tmp/rp-lock.XXXXXX)
LOG=$work/changes.jsonl
STATE=$work/state
status=1
a_pid=
m_pid=
second_pid=
worker_pid=
cleanup() { rp_e2e_cleanup $? a_pid m_pid second_pid worker_pid locker_pid; }
trap cleanup EXIT
fail() { rp_e2e_fail consumer_lock "$work/*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
rp_psql src <<'SQL' >/dev/null
CREATE TABLE t_a (id bigint PRIMARY KEY, ver int NOT NULL, v text);
CREATE TABLE audit (seq bigserial PRIMARY KEY, txid bigint NOT NULL, tbl text NOT NULL,
                    id bigint NOT NULL, op char(1) NOT NULL, ver int NOT NULL);
CREATE TABLE ctl (id int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE fence (id bigserial PRIMARY KEY, at timestamptz);
CREATE SEQUENCE ids;
-- until ctl.stop: a few inserts, updates of earlier rows and deletes per transaction, each
-- change recorded in audit in the same transaction
CREATE PROCEDURE workload() LANGUAGE plpgsql AS $$
DECLARE
	first bigint;
	x bigint;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		first := nextval('ids');
		PERFORM setval('ids', first + 4);
		WITH i AS (INSERT INTO t_a SELECT g, 0, md5(g::text) FROM generate_series(first, first + 4) g RETURNING id, ver)
		INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), 't_a', id, 'I', ver FROM i;
		x := 1 + (random() * first)::bigint;
		WITH u AS (UPDATE t_a SET ver = ver + 1, v = md5(random()::text) WHERE id BETWEEN x AND x + 2 RETURNING id, ver)
		INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), 't_a', id, 'U', ver FROM u;
		IF random() < 0.3 THEN
			WITH d AS (DELETE FROM t_a WHERE id = x + 3 RETURNING id, ver)
			INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), 't_a', id, 'D', ver FROM d;
		END IF;
		COMMIT;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
SQL
replicant -d "$src_CONNSTR" -S f --create-slot
replicant -d "$src_CONNSTR" -S m --create-slot

runs=0
start_a() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S f --start -s 1 --sink "file:$LOG" --state-dir "$STATE" "$@" \
		2>"$work/a-$runs.err" &
	a_pid=$!
}
# wait (up to 120 s: a hang guard) until the log ends with a checkpoint line
wait_ckpt() {
	local deadline=$((SECONDS + 120))
	while ((SECONDS < deadline)); do
		tail -c 300 "$LOG" 2>/dev/null | tail -n 1 | grep -q '^{"kind":"checkpoint"' && return 0
		kill -0 "$a_pid" 2>/dev/null || fail "consumer A exited"
		sleep 0.05
	done
	fail "no checkpoint line reached the log"
}
# second NAME EXPECTED_TEXT ARG...: a second consumer must refuse by itself (exit 1) naming
# the holder; one that keeps running after 120 s (a hang guard, not a pace) did not refuse
second() {
	local name=$1 text=$2 rc=0 deadline
	shift 2
	err=$work/second-$name.err
	replicant -d "$src_CONNSTR" --start "$@" 2>"$err" >/dev/null &
	second_pid=$!
	deadline=$((SECONDS + 120))
	while kill -0 "$second_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
	if kill -0 "$second_pid" 2>/dev/null; then
		kill -9 "$second_pid"
		wait "$second_pid" 2>/dev/null || true
		second_pid=
		fail "$name: the second consumer did not refuse (still running after 120 s)"
	fi
	wait "$second_pid" || rc=$?
	second_pid=
	((rc == 1)) || { cat "$err"; fail "$name: the second consumer exited with $rc, expected 1"; }
	grep -qF -- "$text" "$err" || { cat "$err"; fail "$name: its error does not say: $text"; }
}

rp_psql src -c "CALL workload()" >"$work/worker.out" 2>&1 &
worker_pid=$!
start_a
wait_ckpt
replicant -d "$src_CONNSTR" -S m --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
	--state-dir "$work/state-m" 2>"$work/m.err" &
m_pid=$!

for ((round = 1; round <= ROUNDS; round++)); do
	size=$(stat -c %s "$LOG")
	if ((round % 4 == 1)); then
		# whatever the sink: here one whose checkpoint is the state dir's file
		second "state-$round" "state directory \"$STATE\" is in use by another process (pid $a_pid)" \
			-S f -s 1 --sink stdout --state-dir "$STATE"
		[[ ! -e $STATE/f.checkpoint ]] || fail "round $round: the refused consumer wrote a checkpoint file"
	elif ((round % 4 == 3)); then
		second "state-$round" "state directory \"$STATE\" is in use by another process (pid $a_pid)" \
			-S f -s 1 --sink "file:$work/other-$round.jsonl" --state-dir "$STATE"
		[[ ! -e $work/other-$round.jsonl ]] || fail "round $round: the refused consumer created its log"
	elif ((round % 4 == 2)); then
		# A's spill files (which a starting consumer deletes as garbage of its own)
		second "spill-$round" "spill directory \"$STATE/spill\" is in use by another process" \
			-S f -s 1 --sink "file:$work/other-$round.jsonl" --state-dir "$work/state-$round" --spill-dir "$STATE/spill"
		[[ ! -e $work/other-$round.jsonl ]] || fail "round $round: the refused consumer created its log"
	else
		second "log-$round" "file sink log \"$LOG\" is in use by another process (pid $a_pid)" \
			-S f -s 1 --sink "file:$LOG" --state-dir "$work/state-$round"
		# it did not "recover" A's log either: a unit A has half written is still there
		(($(stat -c %s "$LOG") >= size)) || fail "round $round: the refused consumer cut the log"
	fi
	kill -0 "$a_pid" 2>/dev/null || fail "round $round: consumer A exited"
	# A goes on writing (the refused one took nothing from it)
	deadline=$((SECONDS + 120))
	until (($(stat -c %s "$LOG") > size)); do
		((SECONDS < deadline)) || fail "round $round: the log stopped growing"
		sleep 0.05
	done
done
printf '%d second consumers refused on the state directory, spill directory or log of a running one\n' "$ROUNDS"

# the mirror: a second consumer of slot m on the same destination (another state dir)
for _ in {1..2400}; do
	[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 't_a'") == 1 ]] && break
	kill -0 "$m_pid" 2>/dev/null || fail "the mirror consumer exited"
	sleep 0.05
done
second mirror "the destination is in use by another consumer of slot \"m\" (destination session pid" \
	-S m -s 1 --sink "postgres:$dst_CONNSTR" --create-tables --state-dir "$work/state-m2"
kill -0 "$m_pid" 2>/dev/null || fail "the mirror consumer exited"

# A mirror killed with SIGKILL while its destination statement waits on a lock leaves that
# session behind, holding the slot lock: the restart must not refuse it as a second consumer.
# The lock on t_a is held until the restart owns the slot, so the dead one's statement
# cannot end by itself meanwhile (client_connection_check_interval ends it).
rp_psql dst -c "BEGIN; LOCK TABLE public.t_a IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600)" \
	>/dev/null 2>&1 &
locker_pid=$!
orphan=
for _ in {1..2400}; do
	orphan=$(rp_psql dst -Atc "SELECT pid FROM pg_catalog.pg_stat_activity WHERE application_name = 'replicant' AND wait_event_type = 'Lock'")
	[[ -n $orphan ]] && break
	kill -0 "$m_pid" 2>/dev/null || fail "the mirror consumer exited"
	sleep 0.05
done
[[ -n $orphan ]] || fail "the mirror's destination session never waited on the lock on t_a"
kill -9 "$m_pid"
wait "$m_pid" 2>/dev/null || true
replicant -d "$src_CONNSTR" -S m --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
	--state-dir "$work/state-m" 2>"$work/m-restart.err" &
m_pid=$!
owner=
for _ in {1..2400}; do
	kill -0 "$m_pid" 2>/dev/null || { cat "$work/m-restart.err"; fail "the mirror restarted after SIGKILL refused the dead consumer's slot lock"; }
	owner=$(rp_psql dst -Atc "SELECT l.pid FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 1380994115 AND l.pid <> $orphan")
	[[ -n $owner ]] && break
	sleep 0.05
done
[[ -n $owner ]] || fail "the restarted mirror never took the slot lock"
rp_psql dst -Atc "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()" >/dev/null
wait "$locker_pid" 2>/dev/null || true
printf 'a mirror restarted after SIGKILL took the slot over from its dead session\n'

# ---- the end: stop the workload and A, then one run takes the log to a fence after the last commit
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$worker_pid" || { cat "$work/worker.out"; fail "the workload failed"; }
worker_pid=
kill -TERM "$a_pid"
rc=0
wait "$a_pid" || rc=$?
a_pid=
((rc == 0)) || fail "consumer A exited with $rc after SIGTERM"
endpos=$(rp_psql src -Atc "INSERT INTO fence (at) VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
rc=0
replicant -d "$src_CONNSTR" -S f --start -n -E "$endpos" --sink "file:$LOG" --state-dir "$STATE" \
	2>"$work/final.err" || rc=$?
((rc == 0)) || fail "the final run to $endpos exited with $rc"
rp_psql src -c "\\copy (SELECT txid, tbl, id, op, ver FROM audit ORDER BY seq) TO '$work/audit.tsv'"
python3 "$RP_ROOT/regress/check_file_log.py" "$LOG" "$work/audit.tsv" ||
	fail "the log does not match what was committed"

# the mirror catches up to the same fence, then equals the source
kill -TERM "$m_pid"
rc=0
wait "$m_pid" || rc=$?
m_pid=
((rc == 0)) || fail "the mirror consumer exited with $rc after SIGTERM"
rc=0
replicant -d "$src_CONNSTR" -S m --start -n -E "$endpos" --sink "postgres:$dst_CONNSTR" --create-tables \
	--state-dir "$work/state-m" 2>"$work/m-final.err" || rc=$?
((rc == 0)) || fail "the final mirror run to $endpos exited with $rc"
rp_compare_tables src dst t_a audit

status=0
printf 'PASS consumer_lock: %d second consumers on a running one'\''s state dir, spill dir or log, and one on its mirror slot, refused naming the holder; the log holds every change once (G1) (%ds)\n' \
	"$ROUNDS" "$((SECONDS - started))"
