#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_replay.sh: replaying a range the destination already holds changes
# nothing there.
#
# Proves G1 (effect-once) for the mirror sink's replay protection, at both layers that
# provide it, with a workload whose replay would show: inserts of duplicate rows into a
# table without a key (REPLICA IDENTITY FULL: a replayed insert adds a row), and a --history
# table (a replayed transaction would open versions again).
#
# A logical slot cannot be rewound, and a copy that confirmed a position cannot go back
# either, so the replays use fresh copies: pg_copy_logical_replication_slot() makes s2..s5
# from s1 before any workload, so all five hold the same range from the same start. The
# destination keeps one replicant.checkpoint row per (system id, slot); a replay is made by
# giving a copy's row the position another slot reached, then streaming the copy from its
# start. Phase 1 of the workload runs; s1 streams it into the destination (to -E END1) and
# the destination's tables are fingerprinted.
#   (a) The sink's own check (each batch reads its checkpoint row FOR UPDATE and skips the
#       source transactions at or below it), through s2 with a fresh state dir: a session
#       inserts s2's row (a copy of s1's) and holds it uncommitted, with the table locked,
#       while the consumer starts. The consumer reads no checkpoint at startup, so its
#       assembler drops nothing and the server sends the whole range from s2's start; its
#       first batch waits on the lock; the session commits; every batch must find the row
#       and skip every transaction. To END1: the fingerprint is unchanged, s2's commit_lsn
#       is s1's, and the server did send the transactions (pg_stat_replication_slots).
#   (b) The consumer's restart dedup (the assembler drops transactions at or below the
#       checkpoint it read at startup): s3 gets a committed copy of s1's row and streams
#       with -I set to its start, so the server sends the whole range again: unchanged.
#   (c) Phase 2 runs; s4 streams from its start to END2 as in (a) with s1's row: phase 1 is
#       skipped by the sink (the batch holding END1 is part skipped, part applied) and
#       phase 2 is applied once: the destination equals the source, one open history
#       version per live key with the source's values.
#   (d) s5 replays phases 1 and 2 (-I its start) with a committed copy of s4's row: the
#       fingerprint is unchanged.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-mirror-replay.XXXXXX)
status=1
locker_pid=
cleanup() {
	local rc=$?
	set +e
	[[ -z $locker_pid ]] || kill "$locker_pid" 2>/dev/null
	wait 2>/dev/null
	rp_cluster_cleanup_all
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT
fail() {
	printf 'FAIL mirror_replay: %s\n' "$*"
	exit 1
}

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, t text);
CREATE TABLE dup_t (a int, b text);
ALTER TABLE dup_t REPLICA IDENTITY FULL;
CREATE TABLE hist_t (id int PRIMARY KEY, v int NOT NULL, big text);
ALTER TABLE hist_t ALTER big SET STORAGE EXTERNAL;
CREATE TABLE fence (id serial PRIMARY KEY);

-- n transactions from id first on: inserts, updates, deletes; duplicate rows in dup_t;
-- versions, unchanged TOAST and key changes in hist_t
CREATE PROCEDURE work(first int, n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN first .. first + n - 1 LOOP
		INSERT INTO items VALUES (i, 0, md5(i::text));
		UPDATE items SET v = v + 1, t = t || '+' WHERE id = i - 5;
		IF i % 7 = 0 THEN
			DELETE FROM items WHERE id = i - 20;
		END IF;
		INSERT INTO dup_t SELECT i % 10, 'dup' FROM generate_series(1, 1 + i % 3);
		IF i % 5 = 0 THEN
			DELETE FROM dup_t WHERE ctid = (SELECT ctid FROM dup_t WHERE a = i % 10 LIMIT 1);
			UPDATE dup_t SET b = b || '.' WHERE ctid = (SELECT ctid FROM dup_t WHERE a = (i + 1) % 10 LIMIT 1);
		END IF;
		IF i % 3 = 0 THEN
			INSERT INTO hist_t VALUES (i, 0, repeat(md5(i::text), 80));
		END IF;
		UPDATE hist_t SET v = v + 1 WHERE id = i - 3 - i % 3;
		IF i % 11 = 0 THEN
			UPDATE hist_t SET id = -id WHERE id = i - 9 - i % 3;
		END IF;
		IF i % 13 = 0 THEN
			DELETE FROM hist_t WHERE id = i - 12 - i % 3;
		END IF;
		COMMIT;
	END LOOP;
END $$;
SQL

replicant -d "$src_CONNSTR" -S s1 --create-slot
# copies: a slot can be replayed once (its confirmed position only moves forward)
for slot in s2 s3 s4 s5; do
	rp_psql src -c "SELECT pg_copy_logical_replication_slot('s1', '$slot')" >/dev/null
done
start_lsn=$(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 's3'")

# a committed transaction, then a position past its commit
fence() { rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()"; }
runs=0
# consumer SLOT EXPECTED_STATUS ARG...
consumer() {
	local slot=$1 expect=$2 rc=0
	shift 2
	runs=$((runs + 1))
	replicant -v -d "$src_CONNSTR" -S "$slot" --start -n --sink "postgres:$dst_CONNSTR" --create-tables \
		--history public.hist_t --state-dir "$work/state-$slot" --batch-txns 25 "$@" 2>"$work/run-$runs.err" || rc=$?
	((rc == expect)) || { cat "$work/run-$runs.err"; fail "run $runs (slot $slot $*) exited with $rc, expected $expect"; }
}
# the destination's tables and checkpoint rows, as one line
fingerprint() {
	rp_psql dst -Atc "SELECT md5(string_agg(f, ' ' ORDER BY f)) FROM (
	  SELECT 'items ' || count(*) || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE \"C\"), '')) FROM public.items x
	  UNION ALL SELECT 'dup_t ' || count(*) || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE \"C\"), '')) FROM public.dup_t x
	  UNION ALL SELECT 'hist_t ' || count(*) || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE \"C\"), '')) FROM public.hist_t x) s(f)"
}
# a checkpoint row without end_lsn (an idle keepalive may move end_lsn past the last commit)
ckrow() { rp_psql dst -Atc "SELECT system_id, timeline, commit_lsn FROM replicant.checkpoint WHERE slot = '$1'"; }
sent_txns() { rp_psql src -Atc "SELECT coalesce(total_txns, 0) FROM pg_stat_replication_slots WHERE slot_name = '$1'"; }
same_as_source() {
	local t q a b
	for t in items dup_t; do
		q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE \"C\"), '')) FROM public.$t x"
		a=$(rp_psql src -Atc "$q")
		b=$(rp_psql dst -Atc "$q")
		[[ $a == "$b" ]] || fail "$1: $t differs (source $a, destination $b)"
	done
	a=$(rp_psql src -Atc "SELECT count(*) || ' ' || md5(coalesce(string_agg((id, v, big)::text, ',' ORDER BY id), '')) FROM hist_t")
	b=$(rp_psql dst -Atc "SELECT count(*) || ' ' || md5(coalesce(string_agg((id, v, big)::text, ',' ORDER BY id), '')) FROM hist_t WHERE valid_to_lsn IS NULL")
	[[ $a == "$b" ]] || fail "$1: the open versions of hist_t differ from the source (source $a, destination $b)"
	b=$(rp_psql dst -Atc "SELECT count(*) FROM (SELECT id FROM hist_t WHERE valid_to_lsn IS NULL GROUP BY id HAVING count(*) > 1) s")
	((b == 0)) || fail "$1: $b keys of hist_t have more than one open version"
}

# ---- phase 1, streamed once through s1
rp_psql src -c "CALL work(1, 300)" >/dev/null
end1=$(fence)
consumer s1 0 -E "$end1"
same_as_source "s1 to END1"
fp1=$(fingerprint)
ck1=$(ckrow s1)
versions=$(rp_psql dst -Atc "SELECT count(*) FROM hist_t")
dups=$(rp_psql dst -Atc "SELECT count(*) - count(DISTINCT (a, b)) FROM dup_t")
((dups > 0)) || fail "dup_t has no duplicate rows: a replayed insert would not show"

# locked_replay SLOT FROM_SLOT ENDPOS [ARG...]: stream SLOT (from its start) to ENDPOS while a
# session inserts SLOT's checkpoint row as a copy of FROM_SLOT's and holds it uncommitted,
# with the table locked, until the consumer has started and its first batch waits on the
# lock. Sets sent_before (the slot's total_txns before the run).
locked_replay() {
	local slot=$1 from=$2 endpos=$3 locked=0 waited=0 pid rc=0 err deadline
	shift 3
	sent_before=$(sent_txns "$slot")
	rm -f "$work/locker.fifo"
	mkfifo "$work/locker.fifo"
	rp_psql dst <"$work/locker.fifo" >"$work/locker.out" 2>&1 &
	locker_pid=$!
	exec 3>"$work/locker.fifo"
	printf '%s\n' "BEGIN;" \
		"INSERT INTO replicant.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn)
		   SELECT system_id, '$slot', timeline, commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = '$from';" \
		"LOCK TABLE replicant.checkpoint IN SHARE ROW EXCLUSIVE MODE;" >&3
	deadline=$((SECONDS + 120)) # the waits' deadlines only guard against a hang
	while ((SECONDS < deadline)); do
		if [[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_locks WHERE relation = 'replicant.checkpoint'::regclass
		                          AND mode = 'ShareRowExclusiveLock' AND granted") == 1 ]]; then
			locked=1
			break
		fi
		sleep 0.05
	done
	((locked)) || fail "the locking session did not get its lock: $(cat "$work/locker.out")"
	runs=$((runs + 1))
	err=$work/run-$runs.err
	replicant -v -d "$src_CONNSTR" -S "$slot" --start -n --sink "postgres:$dst_CONNSTR" --create-tables \
		--history public.hist_t --state-dir "$work/state-$slot" --batch-txns 25 -E "$endpos" "$@" 2>"$err" &
	pid=$!
	deadline=$((SECONDS + 120))
	while ((SECONDS < deadline)); do
		if [[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant' AND wait_event_type = 'Lock'") == 1 ]]; then
			waited=1
			break
		fi
		sleep 0.05
	done
	((waited)) || { kill "$pid"; cat "$err"; fail "consumer on $slot never waited on the checkpoint lock"; }
	[[ -z $(ckrow "$slot") ]] || fail "the $slot row is visible before the locking session commits"
	printf 'COMMIT;\n' >&3
	exec 3>&-
	wait "$locker_pid" || fail "the locking session failed: $(cat "$work/locker.out")"
	locker_pid=
	wait "$pid" || rc=$?
	((rc == 0)) || { cat "$err"; fail "the consumer on $slot exited with $rc"; }
}

# ---- (a) s2 from its start: the server resends, the sink must skip every transaction
locked_replay s2 s1 "$end1"
[[ $(fingerprint) == "$fp1" ]] || fail "(a) replaying through s2 changed the destination"
[[ $(ckrow s1) == "$ck1" ]] || fail "(a) the s1 checkpoint row's commit_lsn changed"
[[ $(ckrow s2) == "$ck1" ]] || fail "(a) the s2 checkpoint row is $(ckrow s2), expected $ck1"
sent_b=$(($(sent_txns s2) - sent_before))
((sent_b >= 300)) || fail "(a) the server sent only $sent_b transactions through s2: the replay did not happen"

# ---- (b) s3 from its start (-I), after a committed copy of the checkpoint row
rp_psql dst -c "INSERT INTO replicant.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn)
                SELECT system_id, 's3', timeline, commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = 's1'" >/dev/null
consumer s3 0 -I "$start_lsn" -E "$end1"
[[ $(fingerprint) == "$fp1" ]] || fail "(b) replaying through s3 changed the destination"
# (C may go on past END1 by an empty transaction, ending at the next boundary it delivers)
ok=$(rp_psql dst -Atc "SELECT c.system_id = o.system_id AND c.commit_lsn >= o.commit_lsn FROM replicant.checkpoint c, replicant.checkpoint o
                       WHERE c.slot = 's3' AND o.slot = 's1'")
[[ $ok == t ]] || fail "(b) the s3 checkpoint row went wrong: $(ckrow s3), s1: $ck1"
sent_c=$(sent_txns s3)
((sent_c >= 300)) || fail "(b) the server sent C only $sent_c transactions: the replay did not happen"

# ---- (c) phase 2, and s4 from its start, the sink skipping phase 1 (this time the
# batch that holds END1 is part skipped, part applied) and applying phase 2
rp_psql src -c "CALL work(301, 200)" >/dev/null
end2=$(fence)
locked_replay s4 s1 "$end2"
same_as_source "(c) s4 to END2"
fp2=$(fingerprint)
sent_c2=$(($(sent_txns s4) - sent_before))
((sent_c2 >= 500)) || fail "(c) the server sent only $sent_c2 transactions through s4"

# ---- (d) s5 replays phases 1 and 2 from its start (-I) with s4's checkpoint: unchanged
rp_psql dst -c "INSERT INTO replicant.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn)
                SELECT system_id, 's5', timeline, commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = 's4'" >/dev/null
consumer s5 0 -I "$start_lsn" -E "$end2"
[[ $(fingerprint) == "$fp2" ]] || fail "(d) replaying phases 1 and 2 through s5 changed the destination"
sent_d=$(sent_txns s5)
((sent_d >= 500)) || fail "(d) the server sent only $sent_d transactions through s5"
same_as_source "(d) the end"
versions2=$(rp_psql dst -Atc "SELECT count(*) FROM hist_t")

status=0
printf 'PASS mirror_replay: %d runs; resent through s2, the sink skipped all %d transactions; through s3 (-I start) the assembler skipped all %d; resent through s4 past the checkpoint, only what was new was applied (%d sent); through s5 all %d skipped; destination unchanged by each replay (%d then %d hist_t versions, %d duplicate rows in dup_t) and equal to the source (%ds)\n' \
	"$runs" "$sent_b" "$sent_c" "$sent_c2" "$sent_d" "$versions" "$versions2" "$dups" "$((SECONDS - started))"
