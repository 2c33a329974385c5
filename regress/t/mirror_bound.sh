#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_bound.sh: the mirror's bound flushes (its net-effect map applied mid-batch,
# inside the open destination transaction, once it reaches a quarter of --max-memory) give the
# source's rows, keep effect-once across kill -9, and fail closed.
#
# With --max-memory 8MB the map is applied every 2 MB or so, so one large transaction is
# applied in parts inside one destination transaction. Tables: ov (bigint key, int, text), ov2
# (a second table touched in turn, so a part holds both), ovt (STORAGE EXTERNAL text: its
# updates carry "unchanged TOAST").
#   1. One consumer with --metrics-port streams: (a) a transaction of 60,000 inserts into ov
#      and ov2 interleaved in blocks, whose later statements update, delete and re-insert keys
#      of earlier parts and move keys (id + 1,000,000), with one key planted in the destination
#      beforehand (other values): the fresh COPY of that key's part fails on it (23505), its
#      savepoint is rolled back and the part goes through the staging merge (the destination
#      log shows the rollback); (b) a transaction updating ovt (the large value unchanged),
#      inserting 20,000 rows of ov so parts are applied between, then moving every ovt key with
#      the large value unchanged (its old row read back from the destination, where an earlier
#      part put it). Asserted: every table equals the source, and the metrics page counts the
#      parts (replicant_mirror_bound_flushes_total > 0).
#   2. ROUNDS kill -9 rounds: a transaction of 40,000 inserts and updates; the consumer is
#      killed once its page counts a bound flush (mid-batch, parts applied and not committed,
#      when it gets there first); after each kill the slot's confirmed_flush_lsn is at or behind
#      the destination's checkpoint (G2). A last run to the end: tables equal (G1: dup = 0,
#      loss = 0).
#   3. A destination CHECK constraint that the first part of a 30,000-row transaction breaks:
#      the consumer halts with an error naming the table and SQLSTATE 23514, never the row's
#      value (G4); the checkpoint and the slot stay where they were (nothing acknowledged). The
#      constraint dropped, a run applies it all, equal.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

SLOT=bound_mirror
ROUNDS=${ROUNDS:-3}
BOUND=${BOUND:-300}			# seconds any wait may take before the test fails
MAXMEM=8MB
work=$(mktemp -d /tmp/rp-mirror-bound.XXXXXX)
status=1
pid=
cleanup() { rp_e2e_cleanup $? pid; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_bound "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst "log_statement = 'all'"
export PGOPTIONS='-c DateStyle=ISO -c extra_float_digits=3'

rp_psql src <<'SQL' >/dev/null
CREATE TABLE ov (id bigint PRIMARY KEY, a int, v text);
CREATE TABLE ov2 (id bigint PRIMARY KEY, ref bigint, v text);
CREATE TABLE ovt (id int PRIMARY KEY, n int, big text);
ALTER TABLE ovt ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE fence (id serial PRIMARY KEY);
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

same() {
	local t q a b
	for t in ov ov2 ovt; do
		q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x.id), '')) FROM public.$t x"
		a=$(rp_psql src -Atc "$q")
		b=$(rp_psql dst -Atc "$q" 2>/dev/null || echo missing)
		[[ $a == "$b" ]] || { [[ -n ${1:-} ]] && fail "$1: table $t differs (source $a, destination $b)"; return 1; }
	done
}
port=$(rp_free_port)
# flushes: the page's count of bound flushes (empty when it cannot be read)
flushes() {
	curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null |
		awk '$1 == "replicant_mirror_bound_flushes_total" { print $2 }'
}
start_consumer() {	# start_consumer NAME [ARGS...]: in the background, no end position
	local name=$1
	shift
	replicant -d "$src_CONNSTR" -S "$SLOT" --start --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$work/state" --max-memory "$MAXMEM" --metrics-port "$port" "$@" 2>"$work/$name.err" &
	pid=$!
}
wait_until() {	# wait_until DESC CMD...
	local what=$1 t0=$SECONDS
	shift
	until "$@"; do
		kill -0 "$pid" 2>/dev/null || fail "the consumer exited while waiting for: $what"
		((SECONDS - t0 < BOUND)) || fail "still waiting after $BOUND s for: $what"
		sleep 0.1
	done
}
g2() {	# the slot's confirmed position is at or behind the destination's checkpoint
	local ck ok
	ck=$(rp_dst_checkpoint dst "$SLOT")
	[[ -n $ck ]] || return 0
	ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$ck' FROM pg_replication_slots WHERE slot_name = '$SLOT'")
	[[ $ok == t ]] || fail "$1: slot confirmed_flush_lsn is past the destination checkpoint $ck"
}
run_to_end() {	# run_to_end NAME: a consumer run to the current end of the WAL
	local end rc=0
	end=$(rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()")
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -n -E "$end" --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$work/state" --max-memory "$MAXMEM" 2>"$work/$1.err" || rc=$?
	((rc == 0)) || fail "$1: the consumer exited with status $rc"
}

# ---- 1. the tables exist in the destination; then one key is planted there
rp_psql src -c "INSERT INTO ov VALUES (0, 0, 'zero')" -c "INSERT INTO ov2 VALUES (0, 0, 'zero')" \
	-c "INSERT INTO ovt SELECT g, g, (SELECT string_agg(md5(g::text || r::text), '') FROM generate_series(1, 200) r)
	    FROM generate_series(1, 300) g" >/dev/null
run_to_end first
same "the first run"
rp_psql dst -c "INSERT INTO public.ov VALUES (30000, -1, 'planted')" >/dev/null
rollbacks=$(grep -c 'ROLLBACK TO SAVEPOINT rp_fresh' "$dst_LOG" || true)

start_consumer one
# (a) blocks of ov and ov2 in turn; later statements reach back into earlier parts
rp_psql src >/dev/null <<'SQL'
BEGIN;
INSERT INTO ov SELECT g, g, repeat(md5(g::text), 2) FROM generate_series(1, 20000) g;
INSERT INTO ov2 SELECT g, g * 2, md5(g::text) FROM generate_series(1, 10000) g;
INSERT INTO ov SELECT g, g, repeat(md5(g::text), 2) FROM generate_series(20001, 40000) g;
INSERT INTO ov2 SELECT g, g * 2, md5(g::text) FROM generate_series(10001, 20000) g;
UPDATE ov SET a = -a, v = 'u' || id WHERE id % 7 = 0;
DELETE FROM ov WHERE id % 11 = 0;
UPDATE ov2 SET v = 'u2' || id WHERE id % 5 = 0;
INSERT INTO ov SELECT g, 1, 'again' FROM generate_series(1, 40000) g WHERE g % 11 = 0 AND g % 22 = 0;
UPDATE ov SET id = id + 1000000 WHERE id % 13 = 0;
DELETE FROM ov2 WHERE id % 3 = 0;
COMMIT;
SQL
# (b) the large value unchanged through updates and key moves, with parts applied between them
rp_psql src >/dev/null <<'SQL'
BEGIN;
UPDATE ovt SET n = n + 1;
INSERT INTO ov SELECT g, g, repeat(md5(g::text), 2) FROM generate_series(2000001, 2020000) g;
UPDATE ovt SET id = id + 1000;
INSERT INTO ov SELECT g, g, 'tail' FROM generate_series(2020001, 2025000) g;
UPDATE ovt SET n = n * 2 WHERE id % 2 = 0;
COMMIT;
SQL
wait_until "the destination equals the source" same
n=$(flushes)
if [[ -z $n ]] || ((n == 0)); then
	fail "no bound flush (replicant_mirror_bound_flushes_total is '${n:-unreadable}')"
fi
(($(grep -c 'ROLLBACK TO SAVEPOINT rp_fresh' "$dst_LOG" || true) > rollbacks)) ||
	fail "(a) the planted key did not send its part through the fallback (no ROLLBACK TO SAVEPOINT rp_fresh)"
kill -TERM "$pid"
wait "$pid" || fail "the consumer exited with status $? on SIGTERM"
pid=
summary="1: equal after $n bound flushes, the planted key's part fell back;"

# ---- 2. kill -9 after parts were applied, before the batch commits
kills_mid=0
for r in $(seq 1 "$ROUNDS"); do
	base=$((3000000 + r * 100000))
	rp_psql src >/dev/null <<SQL
BEGIN;
INSERT INTO ov SELECT g, g, repeat(md5(g::text), 2) FROM generate_series($base + 1, $base + 40000) g;
UPDATE ov SET v = 'k$r' || id WHERE id > $base AND id % 9 = 0;
UPDATE ov2 SET ref = ref + $r;
COMMIT;
SQL
	start_consumer "kill-$r"
	in_flight() { local n; n=$(flushes); [[ -n $n ]] && ((n > 0)); }
	t0=$SECONDS
	until in_flight || ! kill -0 "$pid" 2>/dev/null || same; do
		((SECONDS - t0 < BOUND)) || fail "round $r: nothing happened in $BOUND s"
		sleep 0.05
	done
	in_flight && kills_mid=$((kills_mid + 1))
	rp_kill9_alive pid || fail "round $r: the consumer exited by itself (status $RP_EXIT_STATUS)"
	g2 "round $r"
done
run_to_end after-kills
same "after $ROUNDS kill -9 rounds"
summary+=" 2: $ROUNDS kill -9 rounds ($kills_mid after a bound flush), equal;"

# ---- 3. the destination refuses a row of the first part
rp_psql dst -c "ALTER TABLE public.ov ADD CONSTRAINT ov_refuses CHECK (v <> 'secret-4000001')" >/dev/null
ck_before=$(rp_dst_checkpoint dst "$SLOT")
rp_psql src >/dev/null <<'SQL'
BEGIN;
INSERT INTO ov VALUES (4000001, 1, 'secret-4000001');
INSERT INTO ov SELECT g, g, repeat(md5(g::text), 2) FROM generate_series(4000002, 4030000) g;
COMMIT;
SQL
end=$(rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()")
rc=0
replicant -d "$src_CONNSTR" -S "$SLOT" --start -n -E "$end" --sink "postgres:$dst_CONNSTR" --create-tables \
	--state-dir "$work/state" --max-memory "$MAXMEM" 2>"$work/refused.err" || rc=$?
((rc != 0)) || fail "3: the consumer exited 0 although the destination refused a row"
grep -q 'SQLSTATE 23514' "$work/refused.err" || fail "3: the error does not name SQLSTATE 23514"
grep -qF '"public"."ov"' "$work/refused.err" || fail "3: the error does not name the table"
if grep -q 'secret' "$work/refused.err"; then fail "3: the error shows the row's value (G4)"; fi
[[ $(rp_dst_checkpoint dst "$SLOT") == "$ck_before" ]] || fail "3: the checkpoint moved although the batch failed"
g2 "3: after the refused batch"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM public.ov WHERE id > 4000000") == 0 ]] ||
	fail "3: rows of the refused transaction are in the destination"
rp_psql dst -c "ALTER TABLE public.ov DROP CONSTRAINT ov_refuses" >/dev/null
run_to_end after-refusal
same "3: after the constraint was dropped"
summary+=" 3: a refused row halts with SQLSTATE 23514 and no value, nothing acknowledged, then equal"

status=0
printf 'PASS mirror_bound: %s (%ds)\n' "$summary" "$((SECONDS - started))"
