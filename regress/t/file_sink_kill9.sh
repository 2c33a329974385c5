#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/file_sink_kill9.sh: the file sink is effect-once across SIGKILL.
#
# Proves G1 (effect-once: dup = 0, loss = 0 in the file log, in commit order, nothing from
# rolled-back subtransactions or aborted transactions) and G2 (ack discipline: after every
# kill the slot's confirmed_flush_lsn is at or behind the last durable checkpoint line of
# the log).
#
# A source cluster with logical_decoding_work_mem = 64kB runs two workload procedures that
# COMMIT per transaction: small mixed insert/update/delete transactions over three tables
# of assorted types (some with rolled-back subtransactions, some rolled back whole), and
# large transactions (streamed by the server with -o streaming=on, spilled by the consumer
# past --max-memory 128kB; some with a rolled-back subtransaction, some aborted whole).
# Every committed change is recorded in an audit table in the same transaction, keyed
# (table, id, op, version); rows of rolled-back work carry negative ids. The workload waits
# while the slot is more than 16 MB of WAL behind, so the run's length does not depend on
# the machine's load.
# The consumer (--sink file:LOG, small batches) is killed with SIGKILL 24 times: after random
# sleeps of 0.05-1.5 s, right after a new checkpoint line reaches the log (the sink wrote,
# the feedback did not go out yet) and while spill files exist; it restarts each time with
# the same state dir; some kills land while a unit is half written (the log ends in data
# lines that the restart must cut). Twice the source itself crashes instead (pg_ctl stop
# -m immediate) and the running consumer reconnects on its own (G1 across a crash of the
# source). Then the workload stops, the consumer runs to -E past the last
# commit, and a checker compares the log with the audit table. Last, the dedup watermark
# alone: a restart with -I behind its checkpoint gets transactions resent and drops them.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-26} # 24 consumer kills and 2 source restarts
work=$(mktemp -d /tmp/rp-kill9.XXXXXX)
LOG=$work/changes.jsonl
STATE=$work/state
SLOT=kill9
consumer_pid=
workers=()
status=1

cleanup() {
	local rc=$?
	[[ -n $consumer_pid ]] && kill -9 "$consumer_pid" 2>/dev/null
	for p in "${workers[@]}"; do kill "$p" 2>/dev/null || true; done
	rp_cluster_cleanup_all || true # its connections gone, every background job ends
	wait 2>/dev/null || true
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT

fail() {
	printf 'FAIL file_sink_kill9: %s\n' "$*"
	for f in "$work"/consumer-*.err; do
		[[ -s $f ]] && { printf -- '--- %s\n' "$f"; tail -n 5 "$f"; }
	done
	exit 1
}

started=$SECONDS
rp_cluster_start src
rp_psql src -c "ALTER SYSTEM SET logical_decoding_work_mem = '64kB'" -c "SELECT pg_reload_conf()" >/dev/null

rp_psql src <<'SQL' >/dev/null
CREATE TABLE t_a (id bigint PRIMARY KEY, ver int NOT NULL, name text, amount numeric(12,2),
                  ts timestamptz, flag bool);
CREATE TABLE t_b (id bigint PRIMARY KEY, ver int NOT NULL, doc jsonb, raw bytea, tags text[]);
CREATE TABLE t_c (id bigint PRIMARY KEY, ver int NOT NULL, u uuid, d date, f float8,
                  iv interval);
-- what was committed, written in the same transaction as the change it records
CREATE TABLE audit (seq bigserial PRIMARY KEY, txid bigint NOT NULL, tbl text NOT NULL,
                    id bigint NOT NULL, op char(1) NOT NULL, ver int NOT NULL);
CREATE TABLE ctl (stop bool NOT NULL);
INSERT INTO ctl VALUES (false);
CREATE TABLE fence (at timestamptz);

-- n rows into tbl with ids from first (negative ids: work that must never be seen)
CREATE FUNCTION wl_insert(tbl text, first bigint, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	cols text := CASE tbl
		WHEN 't_a' THEN 'name, amount, ts, flag'
		WHEN 't_b' THEN 'doc, raw, tags'
		ELSE 'u, d, f, iv' END;
	vals text := CASE tbl
		WHEN 't_a' THEN 'md5(g::text), round((random() * 10000)::numeric, 2), now(), random() > 0.5'
		WHEN 't_b' THEN 'jsonb_build_object(''k'', g, ''s'', md5(g::text)), decode(md5(g::text), ''hex''), ARRAY[''x'', g::text]'
		ELSE 'gen_random_uuid(), current_date - (g % 1000)::int, random(), make_interval(secs => g)' END;
BEGIN
	EXECUTE format('WITH i AS (INSERT INTO %I (id, ver, %s) SELECT g, 0, %s FROM generate_series($1, $1 + $2 - 1) g RETURNING id, ver)
	                INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), %L, id, ''I'', ver FROM i',
	               tbl, cols, vals, tbl) USING first, n;
END $$;

-- bump the version of rows lo..hi of tbl (those that exist)
CREATE FUNCTION wl_update(tbl text, lo bigint, hi bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	sets text := CASE tbl
		WHEN 't_a' THEN 'name = md5(random()::text), amount = amount + 1'
		WHEN 't_b' THEN 'doc = doc || jsonb_build_object(''v'', ver + 1)'
		ELSE 'f = random(), iv = iv + interval ''1 day''' END;
BEGIN
	EXECUTE format('WITH u AS (UPDATE %I SET ver = ver + 1, %s WHERE id BETWEEN $1 AND $2 RETURNING id, ver)
	                INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), %L, id, ''U'', ver FROM u',
	               tbl, sets, tbl) USING lo, hi;
END $$;

CREATE FUNCTION wl_delete(tbl text, lo bigint, hi bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('WITH d AS (DELETE FROM %I WHERE id BETWEEN $1 AND $2 RETURNING id, ver)
	                INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), %L, id, ''D'', ver FROM d',
	               tbl, tbl) USING lo, hi;
END $$;

-- Worker w's ids in table t: w * 10^12 + a sequence of its own (disjoint ranges, so workers
-- never wait on each other; sequences are not transactional, so a restarted worker or
-- server never hands out an id twice). wl_take reserves n ids, wl_high is the highest.
CREATE SEQUENCE ids_1_1; CREATE SEQUENCE ids_1_2; CREATE SEQUENCE ids_1_3;
CREATE SEQUENCE ids_2_1; CREATE SEQUENCE ids_2_2; CREATE SEQUENCE ids_2_3;
CREATE FUNCTION wl_take(w int, t int, n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	first bigint := nextval(format('ids_%s_%s', w, t));
BEGIN
	PERFORM setval(format('ids_%s_%s', w, t), first + n - 1);
	RETURN w * 1000000000000 + first;
END $$;
CREATE FUNCTION wl_high(w int, t int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	high bigint;
BEGIN
	EXECUTE format('SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ids_%s_%s', w, t) INTO high;
	RETURN w * 1000000000000 + high;
END $$;

-- big = false: small mixed transactions; big = true: large ones. Runs until ctl.stop.
CREATE PROCEDURE workload(w int, big bool) LANGUAGE plpgsql AS $$
DECLARE
	base bigint := w * 1000000000000;
	tbls text[] := ARRAY['t_a', 't_b', 't_c'];
	ghost bigint := 1;
	first bigint;
	high bigint;
	t int;
	n int;
	k int;
	x bigint;
	r float8;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		-- keep the consumer's backlog bounded (16 MB of WAL past what the slot confirmed), so
		-- every restart re-reads little and the run's length does not depend on the load
		WHILE (SELECT pg_current_wal_lsn() - confirmed_flush_lsn > 16 * 1024 * 1024
		         FROM pg_replication_slots WHERE slot_name = 'kill9') AND NOT (SELECT stop FROM ctl) LOOP
			PERFORM pg_sleep(0.05);
			COMMIT;
		END LOOP;
		r := random();
		IF NOT big THEN
			FOR s IN 1 .. 1 + (random() * 4)::int LOOP
				t := 1 + (random() * 2.99)::int % 3;
				high := wl_high(w, t);
				x := base + 1 + (random() * (high - base - 1))::bigint;
				k := (random() * 9)::int;
				IF k <= 4 OR high - base < 10 THEN
					n := 1 + (random() * 5)::int;
					PERFORM wl_insert(tbls[t], wl_take(w, t, n), n);
				ELSIF k <= 7 THEN
					PERFORM wl_update(tbls[t], x, x + (random() * 3)::int);
				ELSE
					PERFORM wl_delete(tbls[t], x, x);
				END IF;
			END LOOP;
			IF r < 0.15 THEN
				-- a rolled-back subtransaction: ghost rows and updates of real rows
				BEGIN
					PERFORM wl_insert(tbls[t], -(base + ghost), 3);
					ghost := ghost + 3;
					PERFORM wl_update(tbls[t], base + 1, base + 5);
					RAISE EXCEPTION 'roll back the subtransaction';
				EXCEPTION WHEN raise_exception THEN NULL;
				END;
			END IF;
			IF r > 0.93 THEN
				PERFORM wl_insert(tbls[t], -(base + ghost), 2);
				ghost := ghost + 2;
				ROLLBACK;
			ELSE
				COMMIT;
			END IF;
			PERFORM pg_sleep(0.005);
		ELSE
			t := 1 + (random() * 2.99)::int % 3;
			n := 500 + (random() * 1000)::int;
			IF r BETWEEN 0.3 AND 0.38 THEN
				n := 12000;	-- its log lines pass the file sink's 4 MB write chunk
			END IF;
			first := wl_take(w, t, n);
			PERFORM wl_insert(tbls[t], first, n);
			PERFORM wl_update(tbls[t], first, first + 200);
			IF r < 0.3 THEN
				-- a large rolled-back subtransaction inside a streamed transaction
				BEGIN
					PERFORM wl_insert(tbls[t], -(base + ghost), 800);
					ghost := ghost + 800;
					RAISE EXCEPTION 'roll back the subtransaction';
				EXCEPTION WHEN raise_exception THEN NULL;
				END;
				PERFORM wl_insert(tbls[t], wl_take(w, t, 10), 10);
			END IF;
			IF r > 0.85 THEN
				-- a large transaction aborted whole after it was streamed
				PERFORM wl_insert(tbls[t], -(base + ghost), 1000);
				ghost := ghost + 1000;
				ROLLBACK;
			ELSE
				COMMIT;
			END IF;
			PERFORM pg_sleep(0.8);
		END IF;
	END LOOP;
END $$;
SQL

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -o streaming=on -s 1 \
		--sink "file:$LOG" --state-dir "$STATE" --max-memory 128kB \
		--batch-txns 3 --batch-ms 50 "$@" 2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

# The checkpoint line the log would resume from (the last complete one): prints its end
# LSN and how many lines follow it (a tail the restart must cut).
last_ckpt() {
	[[ -f $LOG ]] || return 0
	tac "$LOG" | grep -a -n -m1 '^{"kind":"checkpoint",.*}$' |
		sed 's/^\([0-9]*\):.*"end_lsn":"\([0-9A-F/]*\)".*/\2 \1/' || true
}

kill_consumer() {
	rp_kill9_alive consumer_pid || fail "consumer run $runs exited by itself (status $RP_EXIT_STATUS) before round $1's kill"
}

# wait (up to 60 s: the bound only guards against a hang) until this consumer run wrote into the log: its size is not the one
# the last kill left (a restart first re-reads the WAL from the slot's restart_lsn)
wait_progress() {
	local left=$1 deadline=$((SECONDS + 60)) size
	while ((SECONDS < deadline)); do
		size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
		((size == left)) || return 0
		sleep 0.01
	done
	return 1
}

# wait (up to 60 s) until the log grows and ends with a checkpoint line
wait_new_ckpt() {
	local before=$1 deadline=$((SECONDS + 60)) size
	while ((SECONDS < deadline)); do
		size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
		if ((size > before)) && tail -c 300 "$LOG" | tail -n 1 | grep -q '^{"kind":"checkpoint"'; then
			return 0
		fi
		sleep 0.005
	done
	return 1
}

# wait (up to 60 s) until this consumer run wrote into the log (its size is not the one
# the last kill left) and the log ends in data lines, not a checkpoint line
wait_mid_write() {
	local left=$1 deadline=$((SECONDS + 60)) size
	while ((SECONDS < deadline)); do
		size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
		if ((size > 0 && size != left)) && ! tail -c 300 "$LOG" | tail -n 1 | grep -q '^{"kind":"checkpoint"'; then
			return 0
		fi
		sleep 0.002
	done
	return 1
}

# wait (up to 60 s) until this consumer run has a spill file (they are named by pid)
wait_spill() {
	local deadline=$((SECONDS + 60))
	while ((SECONDS < deadline)); do
		compgen -G "$STATE/spill/replicant-spill-$consumer_pid-*" >/dev/null && return 0
		sleep 0.01
	done
	return 1
}

# A worker calls the workload again when a server restart cut it off; it returns once the
# procedure returns (ctl.stop).
run_worker() {
	until rp_psql src -c "CALL workload($1, $2)" >>"$work/worker$1.out" 2>&1; do
		sleep 0.3
	done
}

size_at_kill=0
start_consumer
run_worker 1 false &
workers+=($!)
run_worker 2 true &
workers+=($!)

after_ckpt=0
during_spill=0
mid_write=0
acked_behind=0 # rounds whose restart must drop already-logged transactions (dedup)
torn=0         # rounds that left lines after the last checkpoint line
source_restarts=0
for ((round = 1; round <= ROUNDS; round++)); do
	if ((round == 9 || round == 19)); then
		# the source crashes under the running consumer, which reconnects by itself. (Not
		# -m fast: a fast stop waits until the consumer acknowledges the walsender's last
		# position, which an append-log sink never does past its last transaction.)
		mode=immediate
		wait_progress "$size_at_kill" || true
		sleep "0.$((RANDOM % 9 + 1))"
		t0=$SECONDS
		rp_cluster_restart src "$mode"
		took=$((SECONDS - t0))
		sleep 2
		kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer did not survive a $mode source restart"
		flush=$(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$SLOT'")
		read -r ck _ < <(last_ckpt) || true
		ok=$(rp_psql src -Atc "SELECT '$flush'::pg_lsn <= '${ck:-0/0}'::pg_lsn")
		[[ $ok == t ]] || fail "round $round: slot confirmed_flush_lsn $flush is past the log's checkpoint $ck"
		source_restarts=$((source_restarts + 1))
		printf 'round %2d: source restarted (%s, %d s); consumer reconnected; slot ack %s, log checkpoint %s\n' \
			"$round" "$mode" "$took" "$flush" "${ck:-none}"
		continue
	fi
	case $((round % 8)) in
	0 | 4)	# right after the sink made a unit durable, before the feedback
		size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
		if wait_new_ckpt "$size"; then after_ckpt=$((after_ckpt + 1)); how=after-checkpoint; else how=timeout; fi ;;
	3)	# in the middle of a unit: the log ends in data lines (a tail to cut)
		if wait_mid_write "$size_at_kill"; then mid_write=$((mid_write + 1)); how=mid-write; else how=timeout; fi ;;
	2 | 6)	# while a large transaction is spilled to disk
		if wait_spill; then during_spill=$((during_spill + 1)); how=during-spill; else how=timeout; fi ;;
	*)	# at a random moment once this run is under way
		wait_progress "$size_at_kill" || true
		ms=$((50 + RANDOM % 1451))
		sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
		how="after ${ms}ms" ;;
	esac
	kill_consumer "$round"
	size_at_kill=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
	# G2: the server never heard of a position the log does not durably hold
	ck='' tail_lines=''
	read -r ck tail_lines < <(last_ckpt) || true
	ack=none
	if [[ -n $ck ]]; then
		ack=$(rp_psql src -Atc "SELECT CASE WHEN confirmed_flush_lsn > '$ck' THEN 'PAST' WHEN confirmed_flush_lsn < '$ck' THEN 'behind' ELSE 'equal' END
		                        FROM pg_replication_slots WHERE slot_name = '$SLOT'")
		[[ $ack != PAST ]] || fail "round $round: slot confirmed_flush_lsn is past the log's last checkpoint $ck"
		[[ $ack != behind ]] || acked_behind=$((acked_behind + 1))
		((tail_lines <= 1)) || torn=$((torn + 1))
	fi
	printf 'round %2d: killed %s; log checkpoint %s, %d lines after it; slot ack %s\n' \
		"$round" "$how" "${ck:-none}" "$((${tail_lines:-1} - 1))" "$ack"
	for p in "${workers[@]}"; do
		kill -0 "$p" 2>/dev/null || { cat "$work"/worker*.out; fail "a workload worker ended early"; }
	done
	start_consumer
done
((after_ckpt > 0)) || fail "no round killed the consumer right after a checkpoint line"
((during_spill > 0)) || fail "no round killed the consumer while it had spilled"
((acked_behind > 0)) || fail "no round left the slot behind the log, so dedup on restart went untested"

rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
for p in "${workers[@]}"; do
	wait "$p" || { cat "$work"/worker*.out; fail "a workload worker failed"; }
done
workers=()
# connections cut by the restarts are expected; an SQL error is a broken workload
if grep -h 'ERROR:' "$work"/worker*.out; then fail "the workload hit an SQL error"; fi
kill_consumer final
# every workload transaction ends before endpos; the fence transaction ends after it
endpos=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
start_consumer -E "$endpos" -n
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the final consumer run to $endpos exited with status $rc"

if compgen -G "$STATE/spill/replicant-spill-*" >/dev/null; then
	fail "spill files left behind: $(ls "$STATE/spill")"
fi
read -r streamed stream_bytes < <(rp_psql src -Atc \
	"SELECT stream_txns, stream_bytes FROM pg_stat_replication_slots WHERE slot_name = '$SLOT'" | tr '|' ' ')
((streamed > 0)) || fail "the server streamed no transaction (stream_txns = 0)"

rp_psql src -c "\\copy (SELECT txid, tbl, id, op, ver FROM audit ORDER BY seq) TO '$work/audit.tsv'"

python3 "$RP_ROOT/regress/check_file_log.py" "$LOG" "$work/audit.tsv" ||
	fail "the log does not match what was committed"

# ---- the dedup watermark itself. Above, each restart asks the server to start at the
# checkpoint's end LSN, so the server skips what the log holds. With -I behind the checkpoint
# (and a slot behind it: killed before any status update) the server sends those
# transactions again, and the consumer must drop them by their commit LSN.
DLOG=$work/dedup.jsonl
replicant -d "$src_CONNSTR" -S dedup --create-slot
created=$(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'dedup'")
for _ in 1 2 3; do rp_psql src -c "INSERT INTO fence VALUES (now())"; done
replicant -d "$src_CONNSTR" -S dedup --start -s 600 --sink "file:$DLOG" --state-dir "$work/state-dedup" 2>"$work/dedup.err" &
consumer_pid=$!
deadline=$((SECONDS + 120)) # only a guard against a hang
while ((SECONDS < deadline)); do
	[[ $(grep -c '"table":"fence"' "$DLOG" 2>/dev/null) == 3 ]] && tail -n 1 "$DLOG" | grep -q '"kind":"checkpoint"' && break
	sleep 0.05
done
kill_consumer dedup
[[ $(grep -c '"table":"fence"' "$DLOG") == 3 ]] || fail "the dedup run did not log its 3 rows"
[[ $(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'dedup'") == "$created" ]] ||
	fail "the dedup slot moved although its status interval is 600 s"
rp_psql src -c "INSERT INTO fence VALUES (now())"
endpos=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
rc=0
replicant -d "$src_CONNSTR" -S dedup --start -n -E "$endpos" -I "$created" --sink "file:$DLOG" \
	--state-dir "$work/state-dedup" 2>>"$work/dedup.err" || rc=$?
((rc == 0)) || { cat "$work/dedup.err"; fail "the dedup run with -I exited with $rc"; }
[[ $(grep -c '"table":"fence"' "$DLOG") == 4 ]] ||
	fail "with -I behind the checkpoint the log holds $(grep -c '"table":"fence"' "$DLOG") rows, not 4: resent transactions were not dropped"

printf 'server streamed %s transactions (%s bytes); %d consumer runs; kills: %d after a checkpoint line, %d during a spill, %d mid-write, %d with the slot behind the log, %d with a tail to cut\n' \
	"$streamed" "$stream_bytes" "$runs" "$after_ckpt" "$during_spill" "$mid_write" "$acked_behind" "$torn"
status=0
printf 'PASS file_sink_kill9: %d SIGKILLs, %d source restarts, effect-once and in commit order (G1), acks behind the log (G2) (%ds)\n' \
	"$((ROUNDS - source_restarts))" "$source_restarts" "$((SECONDS - started))"
