#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_stream.sh: the mirror's early apply of streamed transactions is exact.
#
# The mirror applies a large streamed transaction block by block, inside one destination
# transaction kept open until the source's commit (docs/sinks.md, "Early apply"). This test
# makes the source stream nearly everything (logical_decoding_work_mem = 64kB) and runs,
# concurrently:
#   big      transactions of 300 to 3000 row changes on big_t (inserts, updates of some
#            rows, key updates, deletes), some with a rolled-back subtransaction in the
#            middle (its chunks are void: the early apply is dropped), some rolled back
#            whole, some with a TRUNCATE-free message-free shape only;
#   small    bursts of single-row transactions on small_t committing while big ones are
#            open (they commit first: the open early apply must be dropped, and the big
#            transaction applied whole at its commit, after them), then quiet spells;
# big_t's updates leave its large STORAGE EXTERNAL column unchanged (the early apply keeps
# the destination's value, also across key updates). The consumer is stopped 6 times at
# random moments, with SIGKILL on odd rounds (an early apply open in the destination is
# rolled back with the session) and SIGTERM on even ones (it finishes what it holds and
# prints its -v summary). Then the workload stops, and two transactions take the two paths
# of an early apply for certain (how often the random workload takes them depends on the
# machine's pace): one streamed transaction alone (applied early, committed), and one inside
# which another transaction commits (its early apply dropped). The destination session holds
# at most two staging tables per mirrored table (the drops rolled back the ones they made),
# the consumer runs to the end, and every table is compared with the source (count and md5
# of every row's text). The -v summaries must show early applies both committed and dropped.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-6}
work=$(mktemp -d /tmp/rp-mirror-stream.XXXXXX)
SLOT=mirror_stream
consumer_pid=
workload_pids=()
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pids; }
trap cleanup EXIT

fail() { rp_e2e_fail mirror_stream "$work/consumer-*.err" 5 "$*"; }

# wait_dst WHAT QUERY: poll the destination until QUERY returns t; the timeout only guards
# against a hang.
wait_dst() {
	local deadline=$((SECONDS + 600))
	until [[ $(rp_psql dst -Atc "$2" 2>/dev/null || true) == t ]]; do
		((SECONDS < deadline)) || fail "timed out waiting for $1"
		kill -0 "$consumer_pid" 2>/dev/null || fail "consumer run $runs exited while waiting for $1"
		sleep 0.2
	done
}

started=$SECONDS
# no autovacuum: its ANALYZE transactions would be commits interleaving the one meant alone
rp_cluster_start src "autovacuum = off"
rp_cluster_start dst
rp_psql src -c "ALTER SYSTEM SET logical_decoding_work_mem = '64kB'" -c "SELECT pg_reload_conf()" >/dev/null

rp_psql src <<'SQL' >/dev/null
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text, n numeric, doc text);
ALTER TABLE big_t ALTER doc SET STORAGE EXTERNAL;
CREATE TABLE small_t (id bigint PRIMARY KEY, v int NOT NULL);
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE SEQUENCE ids;

CREATE PROCEDURE big_work() LANGUAGE plpgsql AS $$
DECLARE
	cnt int;
	k int;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		cnt := 300 + floor(random() * 2700)::int;
		k := floor(random() * 10)::int;
		INSERT INTO big_t SELECT nextval('ids'), floor(random() * 50)::int, md5(random()::text),
			round((random() * 1e6)::numeric, 3), CASE WHEN random() < 0.05 THEN repeat(md5(random()::text), 300) END
		FROM generate_series(1, cnt / 2);
		UPDATE big_t SET v = md5(random()::text), n = n + 1
		WHERE id IN (SELECT id FROM big_t TABLESAMPLE SYSTEM (20) LIMIT cnt / 4);
		IF k = 0 THEN
			-- a rolled-back subtransaction in the middle: its changes were streamed already
			BEGIN
				UPDATE big_t SET grp = -1 WHERE id IN (SELECT id FROM big_t LIMIT 500);
				RAISE EXCEPTION 'roll back';
			EXCEPTION WHEN raise_exception THEN
				NULL;
			END;
		END IF;
		-- key updates (a key no one else uses: the sequence's)
		UPDATE big_t SET id = nextval('ids') WHERE id IN (SELECT id FROM big_t TABLESAMPLE SYSTEM (5) LIMIT 20);
		DELETE FROM big_t WHERE id IN (SELECT id FROM big_t TABLESAMPLE SYSTEM (10) LIMIT cnt / 8);
		IF k = 1 THEN
			ROLLBACK;
		ELSE
			COMMIT;
		END IF;
	END LOOP;
END $$;

CREATE PROCEDURE small_work() LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		-- bursts: commits while big transactions stream (their early apply is dropped),
		-- then quiet spells (their early apply goes through to the commit)
		FOR i IN 1 .. 100 LOOP
			INSERT INTO small_t VALUES (floor(random() * 1000)::int, 1)
				ON CONFLICT (id) DO UPDATE SET v = small_t.v + 1;
			COMMIT;
			PERFORM pg_sleep(0.005);
		END LOOP;
		PERFORM pg_sleep(1.5);
	END LOOP;
END $$;
SQL

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -v -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$work/state" --batch-txns 50 --batch-ms 100 "$@" 2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

start_consumer
for proc in big_work small_work; do
	rp_psql src -c "CALL $proc()" >>"$work/workload.out" 2>&1 &
	workload_pids+=($!)
done

for ((round = 1; round <= ROUNDS; round++)); do
	sleep "$((1 + RANDOM % 3)).$((RANDOM % 10))"
	kill -0 "$consumer_pid" 2>/dev/null || fail "consumer run $runs exited by itself before round $round"
	if ((round % 2)); then
		how=SIGKILL
		kill -9 "$consumer_pid"
		wait "$consumer_pid" 2>/dev/null || true
	else
		how=SIGTERM
		kill -TERM "$consumer_pid"
		rc=0
		wait "$consumer_pid" || rc=$?
		((rc == 0)) || fail "round $round: the consumer exited with status $rc on SIGTERM"
	fi
	ck=$(rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'" 2>/dev/null || true)
	if [[ -n $ck ]]; then
		[[ $(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$ck' FROM pg_replication_slots WHERE slot_name = '$SLOT'") == t ]] ||
			fail "round $round: the slot is confirmed past the destination checkpoint $ck"
	fi
	printf 'round %d: %s; destination checkpoint %s\n' "$round" "$how" "${ck:-none}"
	start_consumer
done
sleep 3

rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
for p in "${workload_pids[@]}"; do wait "$p" || true; done
workload_pids=()
grep -q 'ERROR:' "$work/workload.out" && fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.out")"
wait_dst "the workload's stop" "SELECT stop FROM ctl"

# big_t known to this consumer run (an early apply waits for a table's first description)
rp_psql src -c "INSERT INTO big_t VALUES (-3, 3, 'known', 0, NULL)" >/dev/null
wait_dst "big_t known to the consumer" "SELECT count(*) = 1 FROM big_t WHERE id = -3"
# an early apply committed: a streamed transaction (3000 rows, far above 64kB) alone
rp_psql src -c "INSERT INTO big_t SELECT nextval('ids'), 1, md5(i::text), i, NULL FROM generate_series(1, 3000) i" \
	-c "INSERT INTO big_t VALUES (-1, 1, 'alone', 0, NULL)" >/dev/null
# an early apply dropped: a streamed transaction inside which another one commits. Its first
# 3000 rows are streamed when the decoder reaches the other's commit, whatever the pace.
mkfifo "$work/open.in"
rp_psql src -At <"$work/open.in" >"$work/open.out" 2>&1 &
workload_pids+=($!)
exec 3>"$work/open.in"
printf '%s\n' "BEGIN;" \
	"INSERT INTO big_t SELECT nextval('ids'), 2, md5(i::text), i, NULL FROM generate_series(1, 3000) i;" \
	"SELECT 'inserted';" >&3
deadline=$((SECONDS + 600))
until grep -q '^inserted$' "$work/open.out"; do
	((SECONDS < deadline)) || fail "the open transaction did not insert: $(cat "$work/open.out")"
	sleep 0.1
done
rp_psql src -c "INSERT INTO small_t VALUES (-1, 1)" >/dev/null
printf '%s\n' "INSERT INTO big_t SELECT nextval('ids'), 2, md5(i::text), i, NULL FROM generate_series(1, 100) i;" \
	"INSERT INTO big_t VALUES (-2, 2, 'interleaved', 0, NULL);" "COMMIT;" >&3
exec 3>&-
wait "${workload_pids[0]}" || fail "the open transaction failed: $(cat "$work/open.out")"
workload_pids=()
wait_dst "the two streamed transactions" "SELECT count(*) = 3 FROM big_t WHERE id IN (-1, -2, -3)"

# a dropped early apply rolls back the staging tables it made; the ones made in committed
# batches are reused: two per mirrored table (upserts, deletes) at most in a session, however
# many drops it saw (counted per session: a killed run's session may not be gone yet)
tables=$(rp_psql dst -Atc "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
stages=$(rp_psql dst -Atc "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM pg_class c
                           JOIN pg_namespace s ON s.oid = c.relnamespace
                           WHERE s.nspname LIKE 'pg_temp%' AND c.relname LIKE 'rp_stage%' GROUP BY s.oid) x")
((stages <= 2 * tables)) ||
	fail "a destination session holds $stages staging tables (at most $((2 * tables)) expected: 2 per mirrored table, $tables tables)"
kill -TERM "$consumer_pid"
wait "$consumer_pid" 2>/dev/null || true

endpos=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
consumer_pid=
start_consumer -n -E "$endpos"
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the final consumer run exited with status $rc"

for t in big_t small_t ctl; do
	q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text COLLATE \"C\"), '')) FROM public.$t x"
	a=$(rp_psql src -Atc "$q")
	b=$(rp_psql dst -Atc "$q")
	[[ $a == "$b" ]] || fail "table $t differs: source $a, destination $b"
	summary+="$t ${a%% *} rows; "
done

# the -v summaries of the runs that stopped by themselves or on SIGTERM: over the runs, early
# applies must have gone through to a commit and been dropped
sums=$(grep -h 'applied early' "$work"/consumer-*.err || true)
[[ -n $sums ]] || fail "no consumer run reported its early applies"
commits=$(sed -n 's/.*; \([0-9]*\) streamed transactions applied early.*/\1/p' <<<"$sums" | awk '{ s += $1 } END { print s + 0 }')
drops=$(sed -n 's/.*, \([0-9]*\) dropped).*/\1/p' <<<"$sums" | awk '{ s += $1 } END { print s + 0 }')
((commits > 0)) || fail "no streamed transaction was applied early: $sums"
((drops > 0)) || fail "no early apply was dropped: $sums"
status=0
printf 'PASS mirror_stream: %d consumer runs, %d stops (SIGKILL, SIGTERM); tables equal (%s); %d streamed transactions applied early, %d early applies dropped (%ds)\n' \
	"$runs" "$ROUNDS" "$summary" "$commits" "$drops" "$((SECONDS - started))"
