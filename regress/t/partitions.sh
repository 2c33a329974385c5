#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/partitions.sh: a partitioned table mirrored under partitions=leaf (the default)
# ends equal partition by partition, through what moves rows between partitions (G1, G3).
#
# The source: m, range-partitioned on two levels (m_lo; m_mid, itself partitioned by list,
# with a default partition; a default partition m_def), 6,000 rows before the slot. Two
# mirrors: one into a destination whose schema is the source's pg_dump (the partitioned
# parent there routes nothing: each change names its leaf), one with --create-tables (each
# leaf a table of its own). Both take --snapshot while a workload runs, then stream:
# updates that move rows between partitions (a delete from one leaf and an insert into
# another), TRUNCATE of the partitioned table (every leaf), DETACH PARTITION of a leaf that
# is written to afterwards as a table of its own, and ATTACH PARTITION of a table that
# already held rows. Then every leaf is compared (count and md5 of the ordered rows, ONLY),
# and the pg_dump destination's parent holds what the source's does.
#
# A third mirror takes the same table under -o partitions=root (--create-tables: one table m):
# its snapshot copies the root whole, the moves and the TRUNCATE keep it equal to the source's
# m read through its root, and the DETACH PARTITION (rows leaving m without a change record)
# halts it at m's next change, exit 3, naming the table, its checkpoint before that change.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-partitions.XXXXXX)
c1_pid=
c2_pid=
c3_pid=
load_pid=
status=1

cleanup() { rp_e2e_cleanup $? c1_pid c2_pid c3_pid load_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail partitions "$work/*.err" 8 "$*"; }

rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE m (id int NOT NULL, grp text NOT NULL, v text, PRIMARY KEY (id, grp)) PARTITION BY RANGE (id);
CREATE TABLE m_lo PARTITION OF m FOR VALUES FROM (0) TO (2000);
CREATE TABLE m_mid PARTITION OF m FOR VALUES FROM (2000) TO (4000) PARTITION BY LIST (grp);
CREATE TABLE m_mid_a PARTITION OF m_mid FOR VALUES IN ('a');
CREATE TABLE m_mid_rest PARTITION OF m_mid DEFAULT;
CREATE TABLE m_def PARTITION OF m DEFAULT;
CREATE TABLE fence (at timestamptz);
INSERT INTO m SELECT g, (ARRAY['a', 'b', 'c'])[1 + g % 3], 'v' || g FROM generate_series(0, 5999) g;
SQL
pg_dump --schema-only -h "$src_HOST" -p "$src_PORT" -U "$src_USER" postgres >"$work/schema.sql" ||
	fail "pg_dump --schema-only failed"
rp_psql dst -c "CREATE DATABASE dumped" >/dev/null
rp_psql dst -c "CREATE DATABASE created" >/dev/null
rp_psql dst -c "CREATE DATABASE rooted" >/dev/null
rp_psql dst -d dumped -f "$work/schema.sql" >/dev/null 2>"$work/schema-load.err" || fail "loading the schema failed"

(
	for i in $(seq 1 100000); do
		rp_psql src -c "INSERT INTO m VALUES ($((6000 + i)), 'b', 'n'); UPDATE m SET id = id + 2000 WHERE id = $((i % 2000))
			AND grp = 'a'; UPDATE m SET grp = 'a' WHERE id = $((2000 + i % 2000)) AND grp = 'c'" \
			>/dev/null 2>>"$work/load.err" || exit 0
	done
) &
load_pid=$!

start() { # NAME SLOT DB ARGS...
	local name=$1 slot=$2 db=$3
	shift 3
	replicant -d "$src_CONNSTR" -S "$slot" "$@" --sink "postgres:$(rp_conninfo dst "$db")" \
		--state-dir "$work/state-$name" -s 1 -v >>"$work/$name.out" 2>>"$work/$name.err" &
	printf -v "${name}_pid" '%s' $!
}
start c1 part_dumped dumped --create-slot --snapshot --start
start c2 part_created created --create-slot --snapshot --start --create-tables
start c3 part_rooted rooted --create-slot --snapshot --start --create-tables -o partitions=root
for _ in $(seq 1 1800); do
	[[ -n $(rp_dst_checkpoint dst part_dumped dumped) && -n $(rp_dst_checkpoint dst part_created created) &&
		-n $(rp_dst_checkpoint dst part_rooted rooted) ]] && break
	kill -0 "$c1_pid" 2>/dev/null || fail "the mirror into the dumped schema exited during the snapshot"
	kill -0 "$c2_pid" 2>/dev/null || fail "the mirror with --create-tables exited during the snapshot"
	kill -0 "$c3_pid" 2>/dev/null || fail "the mirror with partitions=root exited during the snapshot"
	sleep 0.1
done
[[ -n $(rp_dst_checkpoint dst part_created created) && -n $(rp_dst_checkpoint dst part_rooted rooted) ]] ||
	fail "the snapshots did not complete"
# the load moves rows on for a while after the snapshots (any pace)
moved0=$(rp_psql src -Atc "SELECT count(*) FROM m")
for _ in $(seq 1 600); do
	(($(rp_psql src -Atc "SELECT count(*) FROM m") >= moved0 + 50)) && break
	sleep 0.1
done
kill "$load_pid" 2>/dev/null || true
wait "$load_pid" 2>/dev/null || true
load_pid=

# ---- TRUNCATE of the partitioned table, DETACH, ATTACH of a table with rows. DDL is not
# replicated: the operator makes the new table on the dumped destination first, as on the
# source (the --create-tables mirror makes it from the stream), and detaches and attaches
# there once the mirror has passed the source's DDL.
rp_psql dst -d dumped -c "CREATE TABLE m_hi (LIKE m INCLUDING ALL)" >/dev/null
rp_psql src <<'SQL' >/dev/null
INSERT INTO m SELECT g, 'c', 'again' FROM generate_series(100, 140) g ON CONFLICT DO NOTHING;
TRUNCATE m;
INSERT INTO m SELECT g, (ARRAY['a', 'b', 'c'])[1 + g % 3], 'w' || g FROM generate_series(0, 4999) g;
UPDATE m SET id = id + 2000 WHERE id BETWEEN 1000 AND 1010 AND grp = 'b';
INSERT INTO fence VALUES (now());
SQL
# partitions=root: one destination table m, equal to the source's m read whole (snapshot of
# the root, rows moved between partitions, TRUNCATE of the partitioned table), no leaf there
fence=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 1800); do
	r=$(rp_dst_checkpoint dst part_rooted rooted)
	[[ -n $r ]] && ! rp_lsn_lt "$r" "$fence" && break
	kill -0 "$c3_pid" 2>/dev/null || fail "the mirror with partitions=root exited while streaming"
	sleep 0.1
done
q="SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM m x"
[[ $(rp_psql src -Atc "$q") == "$(rp_psql dst -d rooted -Atc "$q")" ]] ||
	fail "partitions=root: the destination's m differs from the source's"
[[ $(rp_psql dst -d rooted -Atc "SELECT count(*) FROM pg_class WHERE relname LIKE 'm\_%' AND relkind = 'r'") == 0 ]] ||
	fail "partitions=root: the mirror made partition tables"
rp_psql src <<'SQL' >/dev/null
ALTER TABLE m DETACH PARTITION m_lo;
INSERT INTO m_lo VALUES (1999, 'z', 'detached');
UPDATE m_lo SET v = 'still' WHERE id < 10;
CREATE TABLE m_hi (LIKE m INCLUDING ALL);
INSERT INTO m_hi SELECT g, 'h', 'pre' FROM generate_series(8000, 8099) g;
ALTER TABLE m DETACH PARTITION m_def;
ALTER TABLE m ATTACH PARTITION m_hi FOR VALUES FROM (8000) TO (9000);
INSERT INTO m VALUES (8500, 'h', 'post'), (2500, 'x', 'post');
UPDATE m SET id = 8600 WHERE id = 8001;
UPDATE m SET id = 3999 WHERE id = 8002;
DELETE FROM m_def WHERE id % 2 = 0;
INSERT INTO fence VALUES (now());
SQL
fence=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 1800); do
	a=$(rp_dst_checkpoint dst part_dumped dumped)
	b=$(rp_dst_checkpoint dst part_created created)
	[[ -n $a && -n $b ]] && ! rp_lsn_lt "$a" "$fence" && ! rp_lsn_lt "$b" "$fence" && break
	kill -0 "$c1_pid" 2>/dev/null || fail "the mirror into the dumped schema exited while streaming"
	kill -0 "$c2_pid" 2>/dev/null || fail "the mirror with --create-tables exited while streaming"
	sleep 0.1
done
[[ -n $a && -n $b ]] && ! rp_lsn_lt "$a" "$fence" && ! rp_lsn_lt "$b" "$fence" ||
	fail "the mirrors did not reach the fence $fence (at ${a:-none} and ${b:-none})"
# partitions=root: the DETACH took rows out of m with no change record: the mirror halts at
# m's next change, naming the table, and its checkpoint stays before that change
rp_wait_exit "$c3_pid" 600 || fail "partitions=root: the mirror did not halt after DETACH PARTITION"
c3_pid=
((exit_status == 3)) || fail "partitions=root: the mirror exited $exit_status after DETACH PARTITION, expected 3"
grep -q 'table "public"."m": its partitions changed (ATTACH or DETACH PARTITION)' "$work/c3.err" ||
	fail "partitions=root: the halt does not name the table and the change"
r=$(rp_dst_checkpoint dst part_rooted rooted)
rp_lsn_lt "$r" "$fence" || fail "partitions=root: the checkpoint $r passed the halted change"
rp_psql dst -d dumped <<'SQL' >/dev/null
ALTER TABLE m DETACH PARTITION m_lo;
ALTER TABLE m DETACH PARTITION m_def;
ALTER TABLE m ATTACH PARTITION m_hi FOR VALUES FROM (8000) TO (9000);
SQL

# ---- every leaf equal, in both mirrors
leaves=$(rp_psql src -Atc "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'
	AND c.relname LIKE 'm%' ORDER BY 1")
for t in $leaves; do
	q="SELECT count(*) || ' ' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '-') FROM ONLY $t x"
	want=$(rp_psql src -Atc "$q")
	for db in dumped created; do
		got=$(rp_psql dst -d "$db" -Atc "$q" 2>/dev/null) || got="(no table)"
		[[ $got == "$want" ]] || fail "table $t differs in database $db: source ${want%% *} rows, mirror ${got%% *}"
	done
done
q="SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM m x"
[[ $(rp_psql src -Atc "$q") == "$(rp_psql dst -d dumped -Atc "$q")" ]] ||
	fail "the partitioned table m differs in the dumped destination"

# verify compares every leaf of both mirrors (the source is quiet)
for db in dumped created; do
	slot=part_$db
	vrc=0
	replicant verify -d "$src_CONNSTR" --sink "postgres:$(rp_conninfo dst "$db")" -S "$slot" \
		>"$work/verify-$db.out" 2>"$work/verify-$db.err" || vrc=$?
	((vrc == 0)) || fail "verify of database $db exited $vrc: $(tail -n 2 "$work/verify-$db.out")"
	for t in m_lo m_mid_a m_mid_rest m_def m_hi; do
		grep -q "public.$t: equal" "$work/verify-$db.out" || fail "verify of $db did not find $t equal"
	done
done

status=0
echo "ok partitions: every leaf equal in both mirrors after moves, TRUNCATE, DETACH and ATTACH"
