#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_safety.sh: the mirror's mapping of source tables onto the destination is one
# to one and never touches its own bookkeeping; REPLICA IDENTITY FULL matches the exact old row;
# the destination's diagnostic fields never reach the consumer's output.
#
# Proves G1 and G3 (fail-closed: exit 3 naming the relation, nothing acknowledged) and G4
# (value-free) for the PostgreSQL mirror sink:
#   (1) a source table replicant.checkpoint whose row would set this slot's checkpoint to
#       FFFFFFF/0 halts with exit 3 naming it, on the stream path, with --schema-prefix (source
#       schema "licant" + prefix "rep"), on the snapshot path and on the backfill path: the
#       destination checkpoint is never FFFFFFF/0 and the slot is not confirmed past the
#       source's WAL. With --bookkeeping-schema=bk the same table is mirrored as data and the
#       checkpoint is in bk.checkpoint; a source schema "bk" then halts.
#   (2) --schema-prefix making two 60-byte source schemas one truncated destination schema:
#       exit 3 naming the source relation, nothing created in the destination.
#   (3) REPLICA IDENTITY FULL without a key, two rows the type's "=" calls equal (numeric 1.0 and
#       1.00, float8 0 and -0, interval '1 day' and '24 hours', numeric[] {1.0} and {1.00}): an
#       update and then a delete of the second leave the destination equal to the source, value
#       for value (the type's "=" would change the first). Rows of a table of many types (enum,
#       composite, range, domain, arrays, json, jsonb, xml, point, inet, times, NULLs) are each
#       found by their update and delete. A delete whose row the destination lacks halts naming
#       the table (exit 3, checkpoint held); --on-divergence=skip goes on.
#   (4) a destination trigger raising with MESSAGE, TABLE, COLUMN, CONSTRAINT, DETAIL and HINT set
#       to the row's value (SQLSTATE 23514, and 57P01, which reads as a lost connection), on the
#       stream path and the snapshot path: the canary is in no consumer output.
# Arguments: the parts to run (default: 1 2 3 4), to show each one failing on its own.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

parts=" ${*:-1 2 3 4} "
want() { [[ $parts == *" $1 "* ]]; }
CANARY='CANARY-5e3a91c7'
CANARY_SQL="'CANARY-' || '5e3a91c7'"
work=$(mktemp -d /tmp/rp-mirror-safety.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_safety "" 0 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
sysid=$(rp_psql src -Atc "SELECT system_identifier FROM pg_control_system()")

runs=0
# consumer EXPECTED_STATUS DB SLOT ARG...: one run into destination database DB
consumer() {
	local expect=$1 db=$2 slot=$3 rc=0
	shift 3
	runs=$((runs + 1))
	err=$work/run-$runs.err
	timeout 600 replicant -v -d "$src_CONNSTR" -S "$slot" --start -n --sink "postgres:$(rp_conninfo dst "$db")" \
		--create-tables --state-dir "$work/state" "$@" >"$work/run-$runs.out" 2>"$err" || rc=$?
	if ((rc != expect)); then
		cat "$err"
		fail "run $runs (slot $slot, replicant $*) exited with $rc, expected $expect"
	fi
}
err_has() {
	grep -qF -- "$1" "$err" || { cat "$err"; fail "run $runs: stderr does not say: $1"; }
}
newdb() { rp_psql dst -c "CREATE DATABASE $1" >/dev/null; }
# halts DB SLOT DONE_SQL ARG...: a run that goes on streaming (snapshot, backfill) must stop by
# itself with exit 3; DONE_SQL, true in the destination once the unfixed run got through, or the
# generous bound (it only guards against hanging) mean it did not
halts() {
	local db=$1 slot=$2 done_sql=$3 pid rc=0 done_
	shift 3
	runs=$((runs + 1))
	err=$work/run-$runs.err
	replicant -v -d "$src_CONNSTR" -S "$slot" --start -n -s 1 --sink "postgres:$(rp_conninfo dst "$db")" \
		--create-tables --state-dir "$work/state" "$@" >"$work/run-$runs.out" 2>"$err" &
	pid=$!
	for _ in $(seq 1 1200); do
		kill -0 "$pid" 2>/dev/null || break
		done_=$(rp_psql dst -d "$db" -Atc "$done_sql" 2>/dev/null || echo f)
		[[ $done_ != t ]] || break
		fence >/dev/null
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		wait "$pid" || true
		cat "$err"
		fail "run $runs (slot $slot, replicant $*) went on instead of halting"
	fi
	wait "$pid" || rc=$?
	((rc == 3)) || { cat "$err"; fail "run $runs (slot $slot, replicant $*) exited with $rc, expected 3"; }
}
fence() { rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()"; }
# the slot never confirmed past what the source has
acked_sane() {
	local ok
	ok=$(rp_psql src -Atc "SELECT coalesce(confirmed_flush_lsn <= pg_current_wal_lsn(), true) FROM pg_replication_slots WHERE slot_name = '$1'")
	[[ $ok == t ]] || fail "$2: slot $1 is confirmed past the source's WAL"
}
no_poison() {
	local bad
	bad=$(rp_psql dst -d "$1" -Atc "SELECT count(*) FROM pg_tables WHERE schemaname = '${3:-replicant}' AND tablename = 'checkpoint'")
	if ((bad > 0)); then
		bad=$(rp_psql dst -d "$1" -Atc "SELECT count(*) FROM ${3:-replicant}.checkpoint WHERE end_lsn >= 'FFFFFF/0' OR commit_lsn >= 'FFFFFF/0'")
		((bad == 0)) || fail "$2: the destination checkpoint was overwritten from the source"
	fi
}
# same DB SCHEMA.TABLE [DEST SCHEMA.TABLE]: every value's text, source and destination
same() {
	local q a b
	q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text COLLATE \"C\"), '')) FROM"
	a=$(rp_psql src -Atc "$q $2 x")
	b=$(rp_psql dst -d "$1" -Atc "$q ${3:-$2} x")
	[[ $a == "$b" ]] || fail "$4: table $2 differs (source $a, destination $b)"
}

rp_psql src <<SQL >/dev/null
CREATE TABLE fence (id serial PRIMARY KEY);
CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$;
SQL

# ---- (1) the bookkeeping schema is never a target -----------------------------------------------
if want 1; then
poison="INSERT INTO %s.checkpoint VALUES ('$sysid', '%s', 1, 'FFFFFFF/0', 'FFFFFFF/0', now())"
ckdef="(system_id text, slot text, timeline int, commit_lsn pg_lsn, end_lsn pg_lsn, updated_at timestamptz,
        PRIMARY KEY (system_id, slot))"
rp_psql src -c "CREATE SCHEMA IF NOT EXISTS replicant" -c "CREATE TABLE replicant.checkpoint $ckdef" \
	-c "CREATE SCHEMA licant" -c "CREATE TABLE licant.checkpoint $ckdef" \
	-c "CREATE SCHEMA bk" -c "CREATE TABLE bk.checkpoint $ckdef" >/dev/null

# stream
newdb d1
replicant -d "$src_CONNSTR" -S s1 --create-slot
before=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
# shellcheck disable=SC2059
rp_psql src -c "$(printf "$poison" replicant s1)" >/dev/null
end=$(fence)
for attempt in 1 2; do
	consumer 3 d1 s1 -E "$end"
	err_has 'source table "replicant"."checkpoint"'
	err_has 'bookkeeping schema "replicant"'
	err_has 'halted (sink)'
	no_poison d1 "(1) stream, attempt $attempt"
	acked_sane s1 "(1) stream"
done
leftover=$(rp_psql dst -d d1 -Atc "SELECT count(*) FROM replicant.checkpoint WHERE slot = 's1' AND end_lsn > '$before'")
((leftover == 0)) || fail "(1) stream: the halted runs advanced the checkpoint past the poisoning transaction"

# stream, --schema-prefix: rep + licant = replicant
replicant -d "$src_CONNSTR" -S s1p --create-slot
# shellcheck disable=SC2059
rp_psql src -c "$(printf "$poison" licant s1p)" >/dev/null
end=$(fence)
consumer 3 d1 s1p -E "$end" --schema-prefix=rep
err_has 'source table "licant"."checkpoint"'
err_has 'bookkeeping schema "replicant"'
no_poison d1 "(1) --schema-prefix"
acked_sane s1p "(1) --schema-prefix"

# snapshot: the table's rows are older than the slot
# shellcheck disable=SC2059
rp_psql src -c "$(printf "$poison" replicant s1s)" >/dev/null
newdb d1s
halts d1s s1s "SELECT count(*) > 0 FROM replicant.checkpoint WHERE slot = 's1s'" \
	--create-slot --snapshot -o include_tables=public.fence,replicant.checkpoint
err_has 'source table "replicant"."checkpoint"'
no_poison d1s "(1) snapshot"
acked_sane s1s "(1) snapshot"

# backfill
# shellcheck disable=SC2059
rp_psql src -c "$(printf "$poison" replicant s1b)" >/dev/null
newdb d1b
replicant -d "$src_CONNSTR" -S s1b --create-slot
halts d1b s1b "SELECT count(*) > 0 FROM replicant.backfill_progress WHERE slot = 's1b' AND done" \
	-o include_tables=public.fence,replicant.checkpoint --backfill=replicant.checkpoint
err_has 'source table "replicant"."checkpoint"'
no_poison d1b "(1) backfill"
acked_sane s1b "(1) backfill"

# --bookkeeping-schema=bk: replicant.checkpoint is data; a source schema "bk" is not
newdb d1k
replicant -d "$src_CONNSTR" -S s1k --create-slot
# shellcheck disable=SC2059
rp_psql src -c "$(printf "$poison" replicant s1k)" >/dev/null
end=$(fence)
consumer 0 d1k s1k -E "$end" --bookkeeping-schema=bk -o include_tables=public.fence,replicant.checkpoint
[[ $(rp_psql dst -d d1k -Atc "SELECT count(*) FROM replicant.checkpoint WHERE slot = 's1k' AND end_lsn = 'FFFFFFF/0'") == 1 ]] ||
	fail "(1) --bookkeeping-schema=bk: the source's replicant.checkpoint row was not mirrored as data"
[[ $(rp_psql dst -d d1k -Atc "SELECT end_lsn >= '$end' AND end_lsn < 'FFFFFF/0' FROM bk.checkpoint WHERE slot = 's1k'") == t ]] ||
	fail "(1) --bookkeeping-schema=bk: the checkpoint is not in bk.checkpoint"
# shellcheck disable=SC2059
rp_psql src -c "$(printf "$poison" bk s1k)" >/dev/null
end=$(fence)
consumer 3 d1k s1k -E "$end" --bookkeeping-schema=bk
err_has 'source table "bk"."checkpoint"'
err_has 'bookkeeping schema "bk"'
no_poison d1k "(1) --bookkeeping-schema, source schema bk" bk
acked_sane s1k "(1) --bookkeeping-schema"
for s in s1 s1p s1s s1b s1k; do rp_psql src -c "SELECT pg_drop_replication_slot('$s')" >/dev/null; done
fi

# ---- (2) truncation never merges two source tables ------------------------------------------------
if want 2; then
long=$(printf 'x%.0s' $(seq 1 56))
rp_psql src -c "CREATE SCHEMA ${long}_one" -c "CREATE SCHEMA ${long}_two" \
	-c "CREATE TABLE ${long}_one.t (id int PRIMARY KEY, v text)" \
	-c "CREATE TABLE ${long}_two.t (id int PRIMARY KEY, v text)" >/dev/null
newdb d2
replicant -d "$src_CONNSTR" -S s2 --create-slot
rp_psql src -c "INSERT INTO ${long}_one.t VALUES (1, 'one')" -c "INSERT INTO ${long}_two.t VALUES (1, 'two')" \
	-c "DELETE FROM ${long}_two.t" >/dev/null
end=$(fence)
consumer 3 d2 s2 -E "$end" --schema-prefix=mirror_
err_has "source table \"${long}_one\".\"t\""
err_has 'longer than 63 bytes'
[[ $(rp_psql dst -d d2 -Atc "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'mirror_%'") == 0 ]] ||
	fail "(2) a truncated destination schema was created"
acked_sane s2 "(2)"
rp_psql src -c "SELECT pg_drop_replication_slot('s2')" >/dev/null
fi

# ---- (3) REPLICA IDENTITY FULL matches the exact row ----------------------------------------------
if want 3; then
declare -A A=([numeric]="1.0" [float8]="0" [interval]="1 day" ["numeric[]"]="{1.0}")
declare -A B=([numeric]="1.00" [float8]="-0" [interval]="24 hours" ["numeric[]"]="{1.00}")
types=(numeric float8 interval "numeric[]")
for i in "${!types[@]}"; do
	rp_psql src -c "CREATE TABLE full_$i (v ${types[$i]}, tag int)" -c "ALTER TABLE full_$i REPLICA IDENTITY FULL" >/dev/null
done
newdb d3
replicant -d "$src_CONNSTR" -S s3 --create-slot
for i in "${!types[@]}"; do
	ty=${types[$i]}
	rp_psql src -c "INSERT INTO full_$i VALUES ('${A[$ty]}', 0)" -c "INSERT INTO full_$i VALUES ('${B[$ty]}', 0)" >/dev/null
done
end=$(fence)
consumer 0 d3 s3 -E "$end"
# update the second row (B): the type's "=" would update the first (A)
for i in "${!types[@]}"; do
	ty=${types[$i]}
	rp_psql src -c "UPDATE full_$i SET tag = 1 WHERE v::text = '${B[$ty]}'::$ty::text" >/dev/null
done
end=$(fence)
consumer 0 d3 s3 -E "$end"
for i in "${!types[@]}"; do same d3 "public.full_$i" "public.full_$i" "(3) update, ${types[$i]}"; done
# rows equal again but for the value's form, then delete the second: "=" would delete the first
for i in "${!types[@]}"; do
	ty=${types[$i]}
	rp_psql src -c "UPDATE full_$i SET tag = 5" -c "DELETE FROM full_$i WHERE v::text = '${B[$ty]}'::$ty::text" >/dev/null
	[[ $(rp_psql src -Atc "SELECT count(*) FROM full_$i") == 1 ]] || fail "(3) the source setup of full_$i is wrong"
done
end=$(fence)
consumer 0 d3 s3 -E "$end"
for i in "${!types[@]}"; do same d3 "public.full_$i" "public.full_$i" "(3) delete, ${types[$i]}"; done
# every kind of value matches itself: an update and a delete of each row of a table of many
# types (NULLs included) find their row; a miss would halt as a divergence
rp_psql src <<'SQL' >/dev/null
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE full_types (i2 int2, i8 int8, f4 float4, n numeric(10,3), t text, c char(5), vc varchar(10),
	j json, jb jsonb, b bytea, u uuid, d date, tm time, ttz timetz, ts timestamp, tstz timestamptz,
	iv interval, p point, ip inet, ia int[], ta text[], m mood, pr pair, r int4range, dm posint, x xml, tag int);
ALTER TABLE full_types REPLICA IDENTITY FULL;
SQL
rp_psql dst -d d3 <<'SQL' >/dev/null
CREATE TYPE public.mood AS ENUM ('sad', 'ok');
CREATE TYPE public.pair AS (a int, b text);
CREATE DOMAIN public.posint AS int CHECK (VALUE > 0);
SQL
rp_psql src <<'SQL' >/dev/null
INSERT INTO full_types SELECT g, g::int8 * 1000000000, g / 3.0, g / 7.0, 'text ' || g, 'c' || g, 'v' || g,
	('{"a": ' || g || ', "b" : [1, 2]}')::json, ('{"k": ' || g || '}')::jsonb, decode('00ff0' || g, 'hex'),
	md5(g::text)::uuid, date '2020-02-29' + g, time '12:34:56.789' + g * interval '1 s',
	timetz '12:00:00+05:30', timestamp '2000-01-01 00:00:00.000001' + g * interval '1 day',
	timestamptz '2026-03-29 01:30:00+00' + g * interval '1 h', g * interval '1 mon 2 days 3.5 s',
	point(g, -g), ('10.0.0.' || g || '/24')::inet, ARRAY[g, NULL, -g], ARRAY['a b', NULL, 'c"d'],
	'ok', ROW(g, 'p q')::pair, int4range(g, g + 10), g, ('<x a="' || g || '">t</x>')::xml, 0
	FROM generate_series(1, 5) g;
INSERT INTO full_types (tag) VALUES (0), (0);
SQL
end=$(fence)
consumer 0 d3 s3 -E "$end"
rp_psql src -c "UPDATE full_types SET tag = tag + 1" -c "DELETE FROM full_types WHERE i2 IN (2, 4)" \
	-c "DELETE FROM full_types WHERE ctid = (SELECT ctid FROM full_types WHERE i2 IS NULL LIMIT 1)" >/dev/null
end=$(fence)
consumer 0 d3 s3 -E "$end"
same d3 public.full_types public.full_types "(3) many types"
[[ $(rp_psql dst -d d3 -Atc "SELECT count(*) FROM public.full_types WHERE tag = 1") == 4 ]] ||
	fail "(3) many types: the destination does not hold the 4 updated rows"
# a row the destination does not have: a divergence, fail-closed
rp_psql dst -d d3 -c "DELETE FROM public.full_0" >/dev/null
ck_before=$(rp_psql dst -d d3 -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = 's3'")
rp_psql src -c "DELETE FROM full_0" >/dev/null
end=$(fence)
consumer 3 d3 s3 -E "$end"
err_has 'destination table "public"."full_0" has diverged'
[[ $(rp_psql dst -d d3 -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = 's3'") == "$ck_before" ]] ||
	fail "(3) the divergence moved the checkpoint"
acked_sane s3 "(3)"
consumer 0 d3 s3 -E "$end" --on-divergence=skip
same d3 public.full_0 public.full_0 "(3) after --on-divergence=skip"
rp_psql src -c "SELECT pg_drop_replication_slot('s3')" >/dev/null
fi

# ---- (4) the destination's diagnostic fields stay out --------------------------------------------
if want 4; then
rp_psql src -c "CREATE TABLE diag_t (id int PRIMARY KEY, v text)" -c "CREATE TABLE diag_s (id int PRIMARY KEY, v text)" >/dev/null
trigger() {
	rp_psql dst -d "$1" <<SQL >/dev/null
CREATE TABLE public.$2 (id int PRIMARY KEY, v text);
CREATE FUNCTION public.$2_raise() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	RAISE EXCEPTION USING ERRCODE = '$3', MESSAGE = NEW.v, TABLE = NEW.v, COLUMN = NEW.v,
		CONSTRAINT = NEW.v, SCHEMA = NEW.v, DATATYPE = NEW.v, DETAIL = NEW.v, HINT = NEW.v;
END \$\$;
CREATE TRIGGER raise BEFORE INSERT OR UPDATE ON public.$2 FOR EACH ROW EXECUTE FUNCTION public.$2_raise();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE public.$2 ENABLE ALWAYS TRIGGER raise;
SQL
}
newdb d4
newdb d4c
trigger d4 diag_t 23514
trigger d4c diag_t 57P01
replicant -d "$src_CONNSTR" -S s4 --create-slot
rp_psql src -c "INSERT INTO diag_t SELECT g, canary() || '-' || g FROM generate_series(1, 3) g" >/dev/null
end=$(fence)
consumer 3 d4 s4 -E "$end"
err_has 'SQLSTATE 23514'
err_has '"public"."diag_t"'
rc=0
timeout 600 replicant -v -d "$src_CONNSTR" -S s4 --start -n -E "$end" --sink "postgres:$(rp_conninfo dst d4c)" \
	--state-dir "$work/state" >"$work/run-57.out" 2>"$work/run-57.err" || rc=$?
((rc != 0)) || fail "(4) the 57P01 trigger did not stop the run"
# the snapshot path
rp_psql src -c "INSERT INTO diag_s SELECT g, canary() || '-' || g FROM generate_series(1, 3) g" >/dev/null
newdb d4s
trigger d4s diag_s 23514
halts d4s s4s "SELECT count(*) > 0 FROM public.diag_s" --create-slot --snapshot -o include_tables=public.fence,public.diag_s
err_has 'SQLSTATE 23514'
[[ $(rp_psql dst -d d4 -Atc "SELECT count(*) FROM public.diag_t") == 0 ]] || fail "(4) rows got past the trigger"
for s in s4 s4s; do rp_psql src -c "SELECT pg_drop_replication_slot('$s')" >/dev/null; done
fi

# ---- the canary search: every consumer output and state file
searched=("$work"/run-*)
while IFS= read -r -d '' f; do searched+=("$f"); done < <(find "$work/state" -type f -print0 2>/dev/null)
# the canary's distinctive half: the whole and any part that holds it
leaks=$(grep -alF -- "${CANARY#CANARY-}" "${searched[@]}" || true)
[[ -z $leaks ]] || { grep -aF -- "${CANARY#CANARY-}" "${searched[@]}" | cut -c 1-300 | head -n 5; fail "the canary leaked into: $leaks"; }

status=0
printf 'PASS mirror_safety (parts%s): %d runs; bookkeeping schema refused on stream, --schema-prefix, snapshot and backfill, --bookkeeping-schema honoured; truncated names refused; REPLICA IDENTITY FULL matched exactly for numeric, float8, interval, numeric[]; divergence halts, skip goes on; trigger diagnostics kept out of %d files (%ds)\n' \
	"${parts% }" "$runs" "${#searched[@]}" "$((SECONDS - started))"
