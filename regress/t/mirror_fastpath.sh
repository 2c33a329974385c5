#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_fastpath.sh: the mirror's bulk apply paths give the source's rows, and an
# update that changes nothing writes nothing on the destination.
#
#   (a) an insert-only batch goes straight into the table by COPY inside a savepoint; with a
#       key of it planted in the destination (other values), the COPY fails on the key
#       (23505), the savepoint is rolled back and the batch goes through the staging merge:
#       the destination log shows the rollback, and the tables are equal after.
#   (b) updates that change nothing (UPDATE ... SET a = a) leave the destination's row
#       versions as they were (xmin and ctid of every row unchanged: no new tuple), while
#       rows of the same batch that do change are written; a numeric 1.0 -> 1.00 (equal by
#       "=", a different value) is written.
#   (c) TOASTed rows: an update of another column (the large value arrives as "unchanged")
#       keeps the destination's large value; an update that changes nothing leaves the row
#       version alone.
#   (d) a mixed batch (inserts of new keys, updates, deletes, insert-then-update, a key
#       change) ends equal.
# Every check compares the source and destination content, as text, in key order.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

SLOT=fastpath_mirror
work=$(mktemp -d /tmp/rp-mirror-fastpath.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_fastpath '' 0 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst "log_statement = 'all'"

rp_psql src <<'SQL' >/dev/null
CREATE TABLE fp (id int PRIMARY KEY, a int, b text, d numeric(12,2), j json);
CREATE TABLE fpt (id int PRIMARY KEY, n int, big text);
ALTER TABLE fpt ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE fence (id serial PRIMARY KEY);
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
consumer() {
	local end rc=0
	end=$(rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()")
	runs=$((runs + 1))
	replicant -v -d "$src_CONNSTR" -S "$SLOT" --start -n -E "$end" --sink "postgres:$dst_CONNSTR" \
		--create-tables --state-dir "$work/state" 2>"$work/run-$runs.err" || rc=$?
	((rc == 0)) || { cat "$work/run-$runs.err"; fail "run $runs exited with $rc"; }
}
same() {
	local t=$1 q a b
	q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x.id), '')) FROM public.$t x"
	a=$(rp_psql src -Atc "$q")
	b=$(rp_psql dst -Atc "$q")
	[[ $a == "$b" ]] || fail "$2: table $t differs (source $a, destination $b)"
}
# the destination's row versions of table $1 where $2: "id xmin ctid" lines
versions() { rp_psql dst -Atc "SELECT id || ' ' || xmin || ' ' || ctid FROM public.$1 WHERE $2 ORDER BY id"; }

# ---- a first batch creates the tables (fresh keys, straight COPY)
rp_psql src -c "INSERT INTO fp SELECT g, g, 'b' || g, g / 4.0, json_build_object('g', g) FROM generate_series(1, 100) g" \
	-c "INSERT INTO fpt SELECT g, g, (SELECT string_agg(md5(g::text || r::text), '') FROM generate_series(1, 200) r)
	    FROM generate_series(1, 20) g" >/dev/null
consumer
same fp "first batch"
same fpt "first batch"

# ---- (a) insert-only batch, one key already in the destination with other values
rp_psql dst -c "INSERT INTO public.fp VALUES (150, -1, 'planted', -1, '{}')" >/dev/null
rollbacks=$(grep -c 'ROLLBACK TO SAVEPOINT rp_fresh' "$dst_LOG" || true)
rp_psql src -c "INSERT INTO fp SELECT g, g, 'b' || g, g / 4.0, json_build_object('g', g) FROM generate_series(101, 200) g" >/dev/null
consumer
same fp "(a) insert-only batch with a planted key"
(($(grep -c 'ROLLBACK TO SAVEPOINT rp_fresh' "$dst_LOG" || true) > rollbacks)) ||
	fail "(a) the planted key did not send the batch through the fallback (no ROLLBACK TO SAVEPOINT rp_fresh)"

# ---- (b) updates that change nothing, beside ones that do, in one batch
before=$(versions fp "id <= 50")
rp_psql src -c "UPDATE fp SET a = a, j = j WHERE id <= 50" \
	-c "UPDATE fp SET a = a + 1 WHERE id > 50 AND id <= 60" \
	-c "UPDATE fp SET d = 1.00 WHERE id = 61" >/dev/null
consumer
same fp "(b) updates"
after=$(versions fp "id <= 50")
[[ $before == "$after" ]] || fail "(b) updates that changed nothing wrote new row versions on the destination"
changed=$(rp_psql dst -Atc "SELECT count(*) FROM public.fp WHERE id > 50 AND id <= 60 AND a = id + 1")
((changed == 10)) || fail "(b) $changed of the 10 changed rows were written"

# equal by "=", different values: numeric scale
rp_psql src -c "CREATE TABLE fpn (id int PRIMARY KEY, v numeric)" -c "INSERT INTO fpn VALUES (1, 1.0), (2, 2.50)" >/dev/null
consumer
rp_psql src -c "UPDATE fpn SET v = 1.00 WHERE id = 1" -c "UPDATE fpn SET v = v WHERE id = 2" >/dev/null
before=$(versions fpn "id = 2")
consumer
same fpn "(b) numeric 1.0 -> 1.00"
[[ $(rp_psql dst -Atc "SELECT v::text FROM public.fpn WHERE id = 1") == 1.00 ]] || fail "(b) numeric 1.0 -> 1.00 was not written"
[[ $(versions fpn "id = 2") == "$before" ]] || fail "(b) numeric v = v wrote a new row version"

# ---- (c) TOASTed rows: the large value unchanged
rp_psql src -c "UPDATE fpt SET n = n + 100 WHERE id <= 10" >/dev/null
consumer
same fpt "(c) update beside an unchanged TOAST value"
before=$(versions fpt "true")
rp_psql src -c "UPDATE fpt SET n = n WHERE id <= 15" >/dev/null
consumer
same fpt "(c) update that changes nothing"
[[ $(versions fpt "true") == "$before" ]] || fail "(c) updates of TOASTed rows that changed nothing wrote new row versions"

# ---- (d) a mixed batch
rp_psql src <<'SQL' >/dev/null
INSERT INTO fp SELECT g, g, 'b' || g, g / 4.0, json_build_object('g', g) FROM generate_series(201, 300) g;
UPDATE fp SET b = b || 'x' WHERE id % 7 = 0;
DELETE FROM fp WHERE id % 11 = 0;
INSERT INTO fp VALUES (400, 0, 'new', 0, '[]');
UPDATE fp SET a = 400 WHERE id = 400;
UPDATE fp SET id = 1000 + id WHERE id IN (12, 13);
UPDATE fp SET a = a WHERE id BETWEEN 20 AND 30;
UPDATE fpt SET big = big || 'tail' WHERE id = 3;
DELETE FROM fpt WHERE id = 4;
SQL
consumer
same fp "(d) mixed batch"
same fpt "(d) mixed batch"

status=0
printf 'PASS mirror_fastpath: %d runs; planted key falls back to the staging merge, no-op updates keep their row versions (plain and TOASTed), numeric scale is written, mixed batch equal (%ds)\n' \
	"$runs" "$((SECONDS - started))"
