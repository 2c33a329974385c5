#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/partitions_root.sh: a mirror of a partitioned table with -o partitions=root is one
# destination table named like the root, and an ATTACH PARTITION halts it (G3).
#
# The source's orders is partitioned by region, with a sub-partitioned partition (by id), a
# default partition, and a partition made on its own with its columns in another order and a
# dropped column, then attached. The slot is made before any row (streaming only, no
# --snapshot). A workload of inserts into every partition, updates within a partition, updates
# that move rows between partitions (DELETE + INSERT to the server's decoder), deletes, and
# a large transaction that is streamed (logical_decoding_work_mem = 64kB) goes to a mirror
# run with --create-tables -o partitions=root; then:
#   (1) the destination has one table orders, equal to the source's orders read through its
#       root (count and md5 of every row's text), and no table for any of its partitions;
#   (2) a table with rows of its own is attached as a partition, and a row inserted into
#       orders after it: the mirror exits 3 naming public.orders and saying "its partitions
#       changed (ATTACH or DETACH PARTITION)", without applying that row or acknowledging its
#       transaction (the slot's confirmed position and the destination checkpoint are before
#       it); a second run halts the same way (the relation view keeps what the mirror holds).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

work=$(mktemp -d /tmp/rp-partitions-root.XXXXXX)
SLOT=parts
consumer_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail partitions_root "$work/consumer-*.err" 10 "$*"; }

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -v -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$work/state" --batch-txns 20 --batch-ms 100 -o partitions=root \
		2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

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

# halted RUN: consumer run RUN stopped by itself with exit 3 naming the table and the reason
halted() {
	local err=$work/consumer-$1.err
	rp_wait_exit "$consumer_pid" 600 || fail "consumer run $1 went on after the ATTACH PARTITION"
	consumer_pid=
	((exit_status == 3)) || fail "consumer run $1 exited with $exit_status after the ATTACH PARTITION, expected 3"
	grep -q 'destructive schema change of table "public"."orders": its partitions changed (ATTACH or DETACH PARTITION)' "$err" ||
		fail "consumer run $1 did not name the table and the reason: $(tail -n 3 "$err")"
}

started=$SECONDS
rp_cluster_start src "logical_decoding_work_mem = '64kB'"
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE orders (id bigint NOT NULL, region text NOT NULL, gone int, amount numeric(12,2),
                     note text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
ALTER TABLE orders DROP COLUMN gone;
CREATE TABLE orders_eu PARTITION OF orders FOR VALUES IN ('eu') PARTITION BY RANGE (id);
CREATE TABLE orders_eu_low PARTITION OF orders_eu FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE orders_eu_high PARTITION OF orders_eu FOR VALUES FROM (1000) TO (MAXVALUE);
CREATE TABLE orders_rest PARTITION OF orders DEFAULT;
CREATE TABLE orders_us (note text, scratch int, amount numeric(12,2), region text NOT NULL,
                        id bigint NOT NULL);
ALTER TABLE orders_us DROP COLUMN scratch;
ALTER TABLE orders ATTACH PARTITION orders_us FOR VALUES IN ('us');
CREATE TABLE fence (id serial PRIMARY KEY);
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

start_consumer
rp_psql src <<'SQL' >/dev/null
INSERT INTO orders SELECT i, (ARRAY['eu', 'us', 'asia', 'xx'])[1 + i % 4], i / 10.0, 'n' || i
FROM generate_series(1, 2000) i;
UPDATE orders SET amount = amount + 1, note = 'within' WHERE id % 7 = 0;
UPDATE orders SET region = 'us', note = 'moved' WHERE id % 4 = 0 AND id % 5 = 0;
UPDATE orders SET region = 'eu', note = 'moved back' WHERE region = 'xx' AND id % 3 = 0;
UPDATE orders SET id = id + 10000 WHERE id % 11 = 0;
DELETE FROM orders WHERE id % 13 = 0;
BEGIN;
INSERT INTO orders SELECT i, 'eu', 1, repeat('x', 100) FROM generate_series(20001, 25000) i;
UPDATE orders SET note = 'streamed' WHERE id BETWEEN 20001 AND 21000;
DELETE FROM orders WHERE id BETWEEN 24001 AND 25000;
COMMIT;
INSERT INTO fence DEFAULT VALUES;
SQL
wait_dst "the workload" "SELECT EXISTS (SELECT FROM pg_tables WHERE tablename = 'fence') AND (SELECT count(*) = 1 FROM fence)"

# (1) one destination table, equal to the source's rows read through the root
rp_compare_tables src dst orders
parts=$(rp_psql dst -Atc "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'orders_%'")
[[ -z $parts ]] || fail "the destination has tables for partitions: $parts"
summary="orders ${RP_COMPARED[0]#* } rows in one table"

# (2) a table with rows attached: the root gains rows no change names; the next change of it halts
rp_psql src <<'SQL' >/dev/null
CREATE TABLE orders_apac (LIKE orders);
INSERT INTO orders_apac VALUES (90001, 'apac', 1, 'before attach'), (90002, 'apac', 2, 'before attach');
ALTER TABLE orders_apac ADD PRIMARY KEY (id, region);
ALTER TABLE orders ATTACH PARTITION orders_apac FOR VALUES IN ('apac');
SQL
bound=$(rp_psql src -Atc "INSERT INTO orders VALUES (90003, 'eu', 3, 'after attach')" -c "SELECT pg_current_wal_lsn()")
halted "$runs"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM orders WHERE id >= 90001") == 0 ]] ||
	fail "rows of the attached partition or after it reached the destination"
ck=$(rp_dst_checkpoint dst "$SLOT")
[[ -n $ck ]] || fail "the destination has no checkpoint"
rp_lsn_lt "$ck" "$bound" || fail "the destination checkpoint $ck is at or past the halted transaction ($bound)"
flush=$(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$SLOT'")
rp_lsn_lt "$flush" "$bound" || fail "the slot confirmed $flush, at or past the halted transaction ($bound)"

# a second run halts the same way, at the same place
start_consumer
halted "$runs"
[[ $(rp_dst_checkpoint dst "$SLOT") == "$ck" ]] || fail "the second run moved the destination checkpoint"

status=0
printf 'PASS partitions_root: %s; ATTACH PARTITION halted %d runs with exit 3, checkpoint %s before %s (%ds)\n' \
	"$summary" "$runs" "$ck" "$bound" "$((SECONDS - started))"
