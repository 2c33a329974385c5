#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/real_schemas.sh: a database no other test was written for, mirrored as a new user
# would, ends equal table by table (G1), and `verify` says so over every table.
#
# The source: `pgbench -i` (pgbench_history has no key and the default replica identity),
# sysbench's OLTP tables (oltp_read_write prepare, pgsql driver), a partitioned table on two
# levels with a default partition, an inheritance parent with a child, a keyless table `h`
# (the field's minimal case: 150 inserts in 51 transactions, duplicates included), foreign
# keys, an enum, an identity column and a jsonb column. The destination's schema is the
# source's `pg_dump --schema-only` (foreign keys and triggers there): the mirror applies with
# session_replication_role = replica, as PostgreSQL's apply worker does.
#
# `replicant --create-slot --snapshot --start` copies and streams while pgbench and sysbench
# write; a kill -9 round in the stream; then every table is compared (row counts and md5 of
# the ordered rows; keyless tables as multisets) and `replicant verify` must exit 0 listing
# every table. Each of these failed before the fixes of issue 41 (the mirror kept one insert
# per batch of a keyless table, the snapshot copied no partition, the snapshot failed on a
# foreign key with SQLSTATE 23503, verify compared no partition). The keyless table's inserts
# are also checked where the mirror takes them another way: a transaction large enough to be
# streamed and applied early, and a --history mirror (a version per insert).
#
# Then the refusals that keep a mistake from being silent: an include_tables pattern that
# matches no table, one that names a partitioned table under partitions=leaf, and a destination
# user that may not set session_replication_role: each ends the run at start, naming what was
# wrong, before anything is copied; so does a --backfill of a table without a key. And TRUNCATE ONLY of an inheritance parent leaves the
# destination child's rows alone.
#
# PGBENCH_SCALE (default 1) and SYSBENCH_ROWS (default 2000 per table) size the run: the
# field report's was PGBENCH_SCALE=20 SYSBENCH_ROWS=100000.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-real-schemas.XXXXXX)
SLOT=real
consumer_pid=
load_pids=()
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid load_pids; }
trap cleanup EXIT

fail() { rp_e2e_fail real_schemas "$work/*.err" 8 "$*"; }

command -v sysbench >/dev/null || fail "sysbench is not installed (regress/install_deps.sh installs it)"
command -v pgbench >/dev/null || fail "pgbench is not installed"

rp_cluster_start src
rp_cluster_start dst

# ---- the source: what a new user brings
pgbench -i -s "${PGBENCH_SCALE:-1}" -q -h "$src_HOST" -p "$src_PORT" -U "$src_USER" postgres >"$work/pgbench-init.out" 2>&1 ||
	fail "pgbench -i failed"
SB=(--db-driver=pgsql --pgsql-host="$src_HOST" --pgsql-port="$src_PORT" --pgsql-user="$src_USER"
	--pgsql-db=postgres --tables=2 --table-size="${SYSBENCH_ROWS:-2000}")
sysbench oltp_read_write "${SB[@]}" prepare >"$work/sysbench-prepare.out" 2>&1 || fail "sysbench prepare failed"

rp_psql src <<'SQL' >/dev/null
CREATE TYPE kind AS ENUM ('click', 'view', 'buy');
CREATE TABLE customers (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);
CREATE TABLE events (id bigint NOT NULL, at date NOT NULL, customer int REFERENCES customers,
                     k kind, payload jsonb, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')
	PARTITION BY RANGE (at);
CREATE TABLE events_2025_h1 PARTITION OF events_2025 FOR VALUES FROM ('2025-01-01') TO ('2025-07-01');
CREATE TABLE events_2025_rest PARTITION OF events_2025 DEFAULT;
CREATE TABLE events_other PARTITION OF events DEFAULT;
CREATE TABLE notes (id int PRIMARY KEY, body text);
CREATE TABLE notes_archived (archived_at date, PRIMARY KEY (id)) INHERITS (notes);
CREATE TABLE h (tid int, delta int);
CREATE UNLOGGED TABLE scratch (id int PRIMARY KEY);
INSERT INTO scratch SELECT generate_series(1, 100);
CREATE TABLE fence (at timestamptz);
INSERT INTO customers (name) SELECT 'c' || g FROM generate_series(1, 200) g;
INSERT INTO events SELECT g, date '2023-10-01' + (g % 1000), 1 + g % 200,
	(ARRAY['click', 'view', 'buy'])[1 + g % 3]::kind, jsonb_build_object('g', g) FROM generate_series(1, 20000) g;
INSERT INTO notes SELECT g, 'n' || g FROM generate_series(1, 300) g;
INSERT INTO notes_archived SELECT g, 'a' || g, date '2024-01-01' FROM generate_series(1, 300) g;
INSERT INTO h SELECT g % 7, 1 FROM generate_series(1, 40) g;
SQL

# the destination's schema, the normal way to migrate: foreign keys, triggers and all
pg_dump --schema-only -h "$src_HOST" -p "$src_PORT" -U "$src_USER" postgres >"$work/schema.sql" ||
	fail "pg_dump --schema-only failed"
rp_psql dst -f "$work/schema.sql" >/dev/null 2>"$work/schema-load.err" || fail "loading the schema failed"
# a trigger the mirror must not fire (an ordinary trigger, as an application has)
rp_psql dst <<'SQL' >/dev/null
CREATE TABLE trigger_fired (n int);
CREATE FUNCTION note_fired() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO trigger_fired VALUES (1); RETURN NEW; END $$;
CREATE TRIGGER fire_on_customers AFTER INSERT OR UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION note_fired();
SQL

# ---- mistakes refused at start, naming what was wrong, nothing made
expect_refused() { # NAME PATTERN ARGS...: the consumer exits non-zero at start, its stderr matching PATTERN
	local name=$1 pat=$2 rc=0
	shift 2
	timeout 60 replicant -d "$src_CONNSTR" "$@" --state-dir "$work/state-$name" \
		>"$work/$name.out" 2>"$work/$name.err" || rc=$?
	((rc != 0 && rc != 124)) || fail "$name: exit status $rc, expected a refusal"
	grep -q -- "$pat" "$work/$name.err" || fail "$name: stderr does not say \"$pat\""
}
expect_refused nomatch_ex 'exclude_tables pattern "public.no_such_\*" matches no table' \
	-S refused5 --create-slot --start --endpos 0/1 -o 'exclude_tables=public.scratch,public.no_such_*' \
	--sink "postgres:$dst_CONNSTR"
expect_refused nomatch 'include_tables pattern "public.no_such_table" matches no table' \
	-S refused1 --create-slot --start --endpos 0/1 -o include_tables=public.events_2024,public.no_such_table \
	--sink "postgres:$dst_CONNSTR"
expect_refused unlogged 'or an unlogged or temporary table' \
	-S refused4 --create-slot --start --endpos 0/1 -o include_tables=public.scratch --sink "postgres:$dst_CONNSTR"
expect_refused partitioned 'names a partitioned table' \
	-S refused2 --create-slot --snapshot --start -o include_tables=public.events --sink "postgres:$dst_CONNSTR"
[[ $(rp_psql src -Atc "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'refused2'") == 0 ]] ||
	fail "a refused snapshot created its slot"
rp_psql dst -c "CREATE ROLE plain LOGIN" >/dev/null
rp_psql dst -c "GRANT ALL ON SCHEMA public TO plain; GRANT ALL ON ALL TABLES IN SCHEMA public TO plain" >/dev/null
expect_refused role 'may not set session_replication_role' \
	-S refused3 --create-slot --snapshot --start --sink "postgres:$(rp_conninfo dst) user=plain"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM public.customers") == 0 ]] || fail "a refused run copied rows"

# a second slot, made before the workload, for a --history mirror of the keyless table h
replicant -d "$src_CONNSTR" -S real_hist --create-slot >"$work/hist-slot.out" 2>"$work/hist-slot.err" ||
	fail "creating slot real_hist failed"
rp_psql dst -c "CREATE DATABASE hist" >/dev/null

# ---- the workload writes while the snapshot copies and the stream runs
(pgbench -n -c 2 -T 600 -h "$src_HOST" -p "$src_PORT" -U "$src_USER" postgres >"$work/pgbench.out" 2>"$work/pgbench.err") &
load_pids+=($!)
(sysbench oltp_read_write "${SB[@]}" --threads=1 --time=600 --report-interval=0 run \
	>"$work/sysbench.out" 2>"$work/sysbench.err") &
load_pids+=($!)
(
	for i in $(seq 1 100000); do
		rp_psql src <<SQL >/dev/null 2>>"$work/own-load.err" || exit 0
BEGIN;
INSERT INTO h VALUES ($((i % 5)), 1), ($((i % 5)), 1), ($((i % 3)), 2);
INSERT INTO events VALUES ($((100000 + i)), date '2024-06-01' + ($i % 700), 1 + $i % 200, 'buy', '{"i": $i}');
UPDATE events SET at = at + 400 WHERE id = $((1 + i % 20000)) AND at < '2025-06-01';
DELETE FROM events WHERE id = $((5000 + i % 15000));
UPDATE customers SET name = name || '.' WHERE id = $((1 + i % 200));
INSERT INTO notes_archived VALUES ($((1000 + i)), 'x', current_date);
UPDATE notes SET body = body || '+' WHERE id = $((1 + i % 300));
COMMIT;
SQL
	done
) &
load_pids+=($!)
sleep 2

# pass_fence: commit a fence row, read its LSN after the commit (lib.sh), and wait until the
# mirror's checkpoint reaches it; fails if the consumer exits or 180 s pass
pass_fence() {
	local ck
	rp_psql src -c "INSERT INTO fence VALUES (now())" >/dev/null
	fence=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
	for _ in $(seq 1 1800); do
		ck=$(rp_dst_checkpoint dst "$SLOT")
		[[ -n $ck ]] && ! rp_lsn_lt "$ck" "$fence" && return 0
		kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited while streaming"
		sleep 0.1
	done
	fail "the mirror did not reach the fence $fence (at ${ck:-none})"
}

start_consumer() { # extra args
	replicant -d "$src_CONNSTR" -S "$SLOT" "$@" --sink "postgres:$dst_CONNSTR" \
		--state-dir "$work/state" -s 1 -v >>"$work/consumer.out" 2>>"$work/consumer.err" &
	consumer_pid=$!
}
start_consumer --create-slot --snapshot --start
for _ in $(seq 1 1800); do
	[[ -n $(rp_dst_checkpoint dst "$SLOT") ]] && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited during the snapshot"
	sleep 0.1
done
[[ -n $(rp_dst_checkpoint dst "$SLOT") ]] || fail "the snapshot did not complete"
# a kill -9 in the stream, then on again from the destination's checkpoint
sleep 3
rp_kill9_alive consumer_pid || fail "the consumer exited by itself (status $RP_EXIT_STATUS)"
start_consumer --start
# the load runs on until the keyless table has well over the field case's 150 rows (any pace)
for _ in $(seq 1 3000); do
	(($(rp_psql src -Atc "SELECT count(*) FROM h") >= 300)) && break
	sleep 0.1
done

# the load stops; a fence committed after it, its LSN read after the commit (lib.sh)
for p in "${load_pids[@]}"; do
	pkill -P "$p" 2>/dev/null || true
	kill "$p" 2>/dev/null || true
done
wait "${load_pids[@]}" 2>/dev/null || true
load_pids=()
pass_fence

# ---- every table equal: counts, and md5 of the ordered rows (keyless: sorted row texts)
tables=$(rp_psql src -Atc "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'
	AND c.relpersistence = 'p' ORDER BY 1")
ntables=0
for t in $tables; do
	q="SELECT count(*) || ' ' || coalesce(md5(string_agg(r, E'\\n' ORDER BY r)), '-')
		FROM (SELECT x::text AS r FROM ONLY $t x) s"
	a=$(rp_psql src -Atc "$q")
	b=$(rp_psql dst -Atc "$q")
	[[ $a == "$b" ]] || fail "table $t differs: source ${a%% *} rows, mirror ${b%% *} rows"
	ntables=$((ntables + 1))
done
((ntables >= 15)) || fail "only $ntables tables compared"
[[ $(rp_psql src -Atc "SELECT count(*) FROM h") -ge 300 ]] || fail "the keyless table h got too few rows"
# an unlogged table's changes are not in the WAL: not copied, not streamed, not verified
[[ $(rp_psql dst -Atc "SELECT count(*) FROM scratch") == 0 ]] || fail "the unlogged table was copied"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM trigger_fired") == 0 ]] ||
	fail "a destination trigger fired on replicated rows"

# ---- a keyless table's transaction large enough to stream (past the 4MB the mirror's walsender
# decodes with) is applied early, block by block: every row lands, duplicates included
rp_psql src -c "INSERT INTO h SELECT g % 3, 7 FROM generate_series(1, 200000) g" >/dev/null
pass_fence
q="SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM h x"
[[ $(rp_psql src -Atc "$q") == "$(rp_psql dst -Atc "$q")" ]] || fail "h differs after its streamed transaction"

# ---- history mode: each insert of the keyless table is a version of its own
replicant -d "$src_CONNSTR" -S real_hist --start --endpos "$fence" --create-tables --history public.h \
	-o include_tables=public.h --sink "postgres:$(rp_conninfo dst hist)" --state-dir "$work/state-hist" \
	>"$work/hist.out" 2>"$work/hist.err" || fail "the --history mirror of h failed"
q="SELECT count(*) || ' ' || sum(tid) || ' ' || sum(delta)"
a=$(rp_psql src -Atc "$q FROM h") # less the 40 rows from before the slot
b=$(rp_psql dst -d hist -Atc "$q FROM public.h WHERE valid_to_lsn IS NULL")
read -r ac at ad <<<"$a"
init=$(rp_psql src -Atc "SELECT count(*) || ' ' || sum(g % 7) || ' ' || count(*) FROM generate_series(1, 40) g")
read -r ic it id <<<"$init"
[[ $b == "$((ac - ic)) $((at - it)) $((ad - id))" ]] || fail "the history of h holds $b, expected $((ac - ic)) versions"

# ---- verify: every selected table compared and equal (the source is quiet now)
vrc=0
replicant verify -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -S "$SLOT" >"$work/verify.out" 2>"$work/verify.err" || vrc=$?
((vrc == 0)) || fail "verify exited $vrc: $(tail -n 3 "$work/verify.out")"
vrc=0
replicant verify -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -S "$SLOT" -o include_tables=public.nope \
	>"$work/verify-nope.out" 2>"$work/verify-nope.err" || vrc=$?
((vrc == 3)) && grep -q 'include_tables pattern "public.nope" matches no table' "$work/verify-nope.err" ||
	fail "verify with a pattern that matches nothing exited $vrc"
for t in events_2024 events_2025_h1 events_2025_rest events_other notes notes_archived h pgbench_history sbtest1; do
	grep -q "$t" "$work/verify.out" || fail "verify did not list table $t"
done

# ---- TRUNCATE ONLY of an inheritance parent: the child's rows stay on both sides
rp_psql src -c "TRUNCATE ONLY notes" >/dev/null
pass_fence
[[ $(rp_psql dst -Atc "SELECT count(*) FROM ONLY notes") == 0 ]] || fail "TRUNCATE ONLY notes was not applied"
a=$(rp_psql src -Atc "SELECT count(*) FROM notes_archived")
b=$(rp_psql dst -Atc "SELECT count(*) FROM notes_archived")
[[ $a == "$b" && $a -gt 300 ]] || fail "TRUNCATE ONLY of the parent reached the child (source $a, mirror $b)"

# ---- a backfill of a table it cannot copy (no key) ends the run at start, naming it (it was
# logged and skipped: the run went on and ended 0 with the table never copied)
kill "$consumer_pid"
rp_wait_exit "$consumer_pid" 60 || fail "the consumer did not stop on SIGTERM"
consumer_pid=
grep -Eq '[1-9][0-9]* streamed transactions applied early' "$work/consumer.err" ||
	fail "h's large transaction was not applied early"
expect_refused bf_keyless 'table "public"."h" has no primary key' \
	-S "$SLOT" --start --backfill=public.h --sink "postgres:$dst_CONNSTR"

status=0
echo "ok real_schemas: $ntables tables equal after snapshot, stream and a kill -9 round; verify exit 0"
