#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_mirror.sh: the initial snapshot (--create-slot --snapshot --start) into the
# PostgreSQL mirror, taken while a workload writes to the source, is consistent with the stream.
#
# Proves G1 for the initial copy (afterwards the destination equals the source table by table:
# count and md5 of the sorted rows, so no row is missed or applied twice between the copy and
# the stream) and G3 on the way (the slot is created with the exported snapshot; the stream
# starts at its consistent point).
#
# Source tables: types_t (every pre-cast type, an enum and an enum[] column: its binary form
# names a user type OID, so it takes the converted-records path into the mirror), big_t (keyed,
# binary pass-through, several chunks), comp_t (two-column key), nopk_t (no key, REPLICA
# IDENTITY FULL: copied whole), gen_t (a stored generated column), empty_t (no rows: still one
# call). A background workload of small transactions changes all of them during the copy.
# Three copy workers, 5,000-row chunks.
#
# Beside it, a third slot's snapshot goes to the file sink (the envelope): afterwards
# `replicant verify-snapshot` finds one complete dump per table, every key appears once in its
# dump (rows and oversize stubs: types_t's 3000-character texts pass --max-record-bytes and go
# to the dead-letter file), and big_t's keys in the dump, with the logged stream changes
# applied in order, are exactly the source's keys: the log holds each row once, consistently
# with its stream.
#
# Then a second destination database that already holds rows (stale versions of some keys,
# keys the source never had) gets a snapshot of a second slot: its rows are never wiped first
# (merge mode), and rows the snapshot did not see are retired at completion: equal again.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snapshot-mirror.XXXXXX)
SLOT=snap_mirror
TABLES=(types_t big_t comp_t nopk_t gen_t empty_t)
BIG_ROWS=${BIG_ROWS:-60000}
consumer_pid=
consumer2_pid=
consumer3_pid=
workload_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid consumer2_pid consumer3_pid workload_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail snapshot_mirror "$work/*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très "heureux" ☺');
CREATE TABLE types_t (id bigint PRIMARY KEY, ver int NOT NULL, i2 int2, i4 int4, i8 int8,
                      n numeric, f8 float8, f4 real, t text, vc varchar(20), b bytea, u uuid,
                      d date, ts timestamptz, tsn timestamp, tm time, tz timetz, iv interval,
                      jb jsonb, js json, ia int[], ta text[], e mood, ea mood[], flag bool,
                      r int4range, tr tstzrange, pt point, nm name, oi oid);
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text, at timestamptz, amount numeric(12,2));
CREATE TABLE comp_t (a int, b text, v int, PRIMARY KEY (a, b));
CREATE TABLE nopk_t (a int, b text);
ALTER TABLE nopk_t REPLICA IDENTITY FULL;
CREATE TABLE gen_t (id int PRIMARY KEY, a int, twice int GENERATED ALWAYS AS (a * 2) STORED);
CREATE TABLE empty_t (id int PRIMARY KEY, v text);
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE fence (at timestamptz);
CREATE SEQUENCE ids START 1000000;

CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT floor(random() * n)::int $$;
CREATE FUNCTION r_types(id bigint, ver int) RETURNS types_t LANGUAGE sql VOLATILE AS $$
SELECT id, ver,
  (CASE ri(4) WHEN 0 THEN -32768 WHEN 1 THEN 32767 WHEN 2 THEN NULL ELSE ri(1000) END)::int2,
  (CASE ri(4) WHEN 0 THEN -2147483648 WHEN 1 THEN 2147483647 WHEN 2 THEN NULL ELSE ri(100000) END)::int4,
  (CASE ri(4) WHEN 0 THEN -9223372036854775808 WHEN 1 THEN 9223372036854775807 WHEN 2 THEN NULL ELSE ri(100000) END)::int8,
  (CASE ri(9) WHEN 0 THEN 'NaN' WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity' WHEN 3 THEN '1.500'
     WHEN 4 THEN '-123456789012345678901234567890.123456789' WHEN 5 THEN '0.000000000000000000001'
     WHEN 6 THEN NULL WHEN 7 THEN '-0.0' ELSE round((random() * 1e6)::numeric, ri(8)) END)::numeric,
  (CASE ri(9) WHEN 0 THEN 'NaN' WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity' WHEN 3 THEN '-0'
     WHEN 4 THEN '2.2250738585072014e-308' WHEN 5 THEN '1.7976931348623157e308' WHEN 6 THEN NULL
     WHEN 7 THEN '0.1' ELSE random() END)::float8,
  (CASE ri(6) WHEN 0 THEN 'NaN' WHEN 1 THEN '-Infinity' WHEN 2 THEN '3.4028235e38'
     WHEN 3 THEN '1.17549435e-38' WHEN 4 THEN NULL ELSE random() END)::real,
  CASE ri(10) WHEN 0 THEN E'tab\there' WHEN 1 THEN E'new\nline\r\n' WHEN 2 THEN E'back\\slash \\N \\.'
     WHEN 3 THEN 'héllo ✓ 日本語 🎉' WHEN 4 THEN '' WHEN 5 THEN NULL WHEN 6 THEN 'quote''s "dq" {a,b}'
     WHEN 7 THEN repeat('x', 3000) WHEN 8 THEN 'NULL' ELSE md5(random()::text) END,
  (CASE ri(4) WHEN 0 THEN 'ünï ✓' WHEN 1 THEN NULL WHEN 2 THEN '' ELSE left(md5(random()::text), 20) END)::varchar(20),
  CASE ri(6) WHEN 0 THEN '\x00'::bytea WHEN 1 THEN '\x000102ff00'::bytea WHEN 2 THEN ''::bytea
     WHEN 3 THEN NULL WHEN 4 THEN decode(repeat('00', 300), 'hex') ELSE decode(md5(random()::text), 'hex') END,
  CASE ri(3) WHEN 0 THEN NULL ELSE gen_random_uuid() END,
  (CASE ri(7) WHEN 0 THEN 'infinity' WHEN 1 THEN '-infinity' WHEN 2 THEN '2000-02-29' WHEN 3 THEN '0044-03-15 BC'
     WHEN 4 THEN '5874897-12-31' WHEN 5 THEN NULL ELSE (current_date - ri(100000))::text END)::date,
  (CASE ri(7) WHEN 0 THEN 'infinity' WHEN 1 THEN '-infinity' WHEN 2 THEN '2000-01-01 00:00:00+00'
     WHEN 3 THEN '1900-06-01 12:34:56.789012+05:30' WHEN 4 THEN '0100-01-01 00:00:00+00 BC' WHEN 5 THEN NULL
     ELSE (now() - random() * interval '100 years')::text END)::timestamptz,
  (CASE ri(5) WHEN 0 THEN '-infinity' WHEN 1 THEN '4713-01-01 00:00:00 BC' WHEN 2 THEN '294247-01-10 04:00:54.775806'
     WHEN 3 THEN NULL ELSE (localtimestamp - random() * interval '10 years')::text END)::timestamp,
  (CASE ri(3) WHEN 0 THEN '24:00:00' WHEN 1 THEN NULL ELSE '13:14:15.161718' END)::time,
  (CASE ri(3) WHEN 0 THEN '23:59:59.999999-12:00' WHEN 1 THEN NULL ELSE '01:02:03+05:30' END)::timetz,
  (CASE ri(6) WHEN 0 THEN '1 year 2 mons 3 days 04:05:06.789' WHEN 1 THEN '-1 day +02:00:00.000001'
     WHEN 2 THEN '0' WHEN 3 THEN '-178000000 years' WHEN 4 THEN NULL ELSE (random() * interval '1000 days')::text END)::interval,
  (CASE ri(7) WHEN 0 THEN '{"a": [1, 2.50, {"b": null}], "u": "✓ \u00e9"}' WHEN 1 THEN '[]' WHEN 2 THEN 'null'
     WHEN 3 THEN '"s\"q\\"' WHEN 4 THEN '{"big": 123456789012345678901234567890.5, "e": 1e-7}' WHEN 5 THEN NULL
     ELSE jsonb_build_object('r', random(), 't', E'tab\t')::text END)::jsonb,
  (CASE ri(6) WHEN 0 THEN '{"a" : 1, "a": 2}' WHEN 1 THEN '[1,  2 ,3]' WHEN 2 THEN E'  {"x":\n"y"}  '
     WHEN 3 THEN '"esc \u00e9 \n \u0000"' WHEN 4 THEN NULL ELSE json_build_object('r', random())::text END)::json,
  (CASE ri(6) WHEN 0 THEN '{1,NULL,3}' WHEN 1 THEN '{}' WHEN 2 THEN '{{1,2},{3,NULL}}' WHEN 3 THEN '[0:1]={5,6}'
     WHEN 4 THEN NULL ELSE ARRAY[ri(100), ri(100)]::text END)::int[],
  (CASE ri(5) WHEN 0 THEN '{"a b","c,d","NULL",NULL,"q\"uote","back\\\\slash","","é✓"}' WHEN 1 THEN '{}'
     WHEN 2 THEN '{{"x","y"},{"z",NULL}}' WHEN 3 THEN NULL ELSE ARRAY[md5(random()::text)]::text END)::text[],
  (CASE ri(5) WHEN 0 THEN 'sad' WHEN 1 THEN 'ok' WHEN 2 THEN 'happy' WHEN 3 THEN 'très "heureux" ☺' END)::mood,
  (CASE ri(3) WHEN 0 THEN '{sad,NULL,happy}' WHEN 1 THEN '{}' END)::mood[],
  CASE ri(3) WHEN 0 THEN true WHEN 1 THEN false END,
  (CASE ri(4) WHEN 0 THEN 'empty' WHEN 1 THEN '[1,10)' WHEN 2 THEN '(,5]' END)::int4range,
  (CASE ri(3) WHEN 0 THEN '[2000-01-01 00:00+00,infinity)' WHEN 1 THEN '(1999-12-31 23:59:59.5+00,2000-01-02 00:00+00]' END)::tstzrange,
  (CASE ri(2) WHEN 0 THEN '(1.5,-2.25)' END)::point,
  (CASE ri(2) WHEN 0 THEN 'a name' END)::name,
  (CASE ri(2) WHEN 0 THEN 4294967295 END)::oid
$$;

CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS $$
DECLARE x bigint;
BEGIN
	FOR i IN 1..n LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		CASE ri(8)
			WHEN 0 THEN
				x := nextval('ids');
				INSERT INTO big_t VALUES (x, ri(10), md5(random()::text), now(), random() * 1000);
			WHEN 1 THEN
				UPDATE big_t SET v = md5(random()::text), grp = grp + 1 WHERE id = 1 + ri(current_setting('rp.big')::int);
			WHEN 2 THEN
				DELETE FROM big_t WHERE id = 1 + ri(current_setting('rp.big')::int);
			WHEN 3 THEN
				x := 1 + ri(400);
				DELETE FROM types_t WHERE id = x;
				INSERT INTO types_t SELECT * FROM r_types(x, i);
			WHEN 4 THEN
				INSERT INTO comp_t VALUES (ri(100), md5(ri(50)::text), i) ON CONFLICT (a, b) DO UPDATE SET v = EXCLUDED.v;
			WHEN 5 THEN
				DELETE FROM comp_t WHERE a = ri(100);
			WHEN 6 THEN
				INSERT INTO nopk_t VALUES (ri(50), 'w' || ri(5));
				DELETE FROM nopk_t WHERE ctid = (SELECT ctid FROM nopk_t WHERE a = ri(50) LIMIT 1);
			ELSE
				UPDATE gen_t SET a = a + 1 WHERE id = 1 + ri(2000);
		END CASE;
		COMMIT;
	END LOOP;
END $$;
SQL
rp_psql src <<SQL >/dev/null
INSERT INTO types_t SELECT r.* FROM generate_series(1, 400) g, LATERAL r_types(g, 0) r;
INSERT INTO big_t SELECT g, g % 10, md5(g::text), '2020-01-01'::timestamptz + g * interval '1 min', g / 7.0
  FROM generate_series(1, $BIG_ROWS) g;
INSERT INTO comp_t SELECT g % 100, md5((g / 100)::text), g FROM generate_series(1, 5000) g ON CONFLICT DO NOTHING;
INSERT INTO nopk_t SELECT g % 50, 'r' || (g % 7) FROM generate_series(1, 2000) g;
INSERT INTO gen_t SELECT g, g FROM generate_series(1, 2000) g;
ALTER DATABASE postgres SET rp.big = '$BIG_ROWS';
SQL
rp_psql dst -c "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très \"heureux\" ☺')" >/dev/null
rp_psql dst -c "CREATE DATABASE dst2" >/dev/null
rp_psql dst -d dst2 -c "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très \"heureux\" ☺')" >/dev/null
# --create-tables leaves generated columns out: this one is made by hand, as an operator would
for db in postgres dst2; do
	rp_psql dst -d "$db" -c "CREATE TABLE gen_t (id int PRIMARY KEY, a int, twice int GENERATED ALWAYS AS (a * 2) STORED)" >/dev/null
done

# Until its snapshot is done, each statement that writes a public table of the first mirror
# (its chunks' COPYs and INSERTs) takes 0.3 s more: the workload runs during the copy however
# fast the machine is. The consumer creates the tables (--create-tables): an event trigger
# gives each its statement trigger as it is created.
rp_slow_new_tables dst 0.3 INSERT ''

# ---- the workload runs through the copy
(
	while [[ $(rp_psql src -Atc "SELECT stop FROM ctl") == f ]]; do
		rp_psql src -c "CALL workload(200)" >/dev/null 2>>"$work/workload.err" || break
	done
) &
workload_pid=$!
sleep 1
commits_before=$(rp_psql src -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")

dst_ck() { rp_dst_checkpoint dst "$1" "${2:-postgres}"; }

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start --create-tables \
	--snapshot-workers=3 --snapshot-chunk-rows=5000 --sink "postgres:$dst_CONNSTR" \
	--state-dir "$work/state1" -s 1 -vv >"$work/c1.out" 2>"$work/c1.err" &
consumer_pid=$!
replicant -d "$src_CONNSTR" -S "${SLOT}_log" --create-slot --snapshot --start \
	--snapshot-workers=2 --snapshot-chunk-rows=3000 --sink "file:$work/log.jsonl" --max-record-bytes=2000 \
	--max-dlq-bytes=100 --state-dir "$work/state3" -s 1 -v >"$work/c3.out" 2>"$work/c3.err" &
consumer3_pid=$!
for _ in $(seq 1 1200); do
	[[ -n $(dst_ck "$SLOT") ]] && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited during the snapshot"
	sleep 0.1
done
[[ -n $(dst_ck "$SLOT") ]] || fail "no checkpoint after the snapshot"
rp_slow_off dst
commits_after=$(rp_psql src -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")
((commits_after - commits_before > 20)) || fail "the workload did not run during the snapshot ($commits_before .. $commits_after)"
grep -q 'snapshot complete' "$work/c1.err" || fail "the consumer did not report the snapshot"
# -vv: the library's SNAPSHOT_CHUNK events, per table, with rows and bytes
grep -Eq 'snapshot chunk of table "public"."big_t" stored: [1-9][0-9]* rows, [1-9][0-9]* bytes' "$work/c1.err" ||
	fail "-vv said no snapshot chunk of big_t"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM replicant.snapshot_progress") == 0 ]] || fail "snapshot progress left behind"

# a second snapshot, into a mirror that already holds rows (stale and extra keys)
rp_psql dst -d dst2 <<'SQL' >/dev/null
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text, at timestamptz, amount numeric(12,2));
INSERT INTO big_t SELECT g, -1, 'stale', NULL, -1 FROM generate_series(1, 30000, 3) g;
INSERT INTO big_t SELECT g, -2, 'ghost', NULL, -2 FROM generate_series(5000000, 5000999) g;
CREATE TABLE nopk_t (a int, b text);
INSERT INTO nopk_t SELECT -1, 'ghost' FROM generate_series(1, 100);
SQL
replicant -d "$src_CONNSTR" -S "${SLOT}2" --create-slot --snapshot --start --create-tables \
	--snapshot-workers=2 --snapshot-chunk-rows=7000 --sink "postgres:${dst_CONNSTR/dbname=postgres/dbname=dst2}" \
	--state-dir "$work/state2" -s 1 -v >"$work/c2.out" 2>"$work/c2.err" &
consumer2_pid=$!
for _ in $(seq 1 1200); do
	[[ -n $(dst_ck "${SLOT}2" dst2) ]] && break
	kill -0 "$consumer2_pid" 2>/dev/null || fail "the second consumer exited during the snapshot"
	sleep 0.1
done

sleep 2
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$workload_pid" || true
workload_pid=
if grep -q 'ERROR:' "$work/workload.err" 2>/dev/null; then
	fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.err")"
fi
fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
for _ in $(seq 1 600); do
	a=$(dst_ck "$SLOT"); b=$(dst_ck "${SLOT}2" dst2)
	[[ -n $a && -n $b && $(rp_psql src -Atc "SELECT '$a'::pg_lsn >= '$fence' AND '$b'::pg_lsn >= '$fence'") == t ]] && break
	sleep 0.2
done
for _ in $(seq 1 600); do
	c=$( (grep '"kind":"checkpoint"' "$work/log.jsonl" 2>/dev/null || true) | tail -n 1 | sed 's/.*"end_lsn":"\([^"]*\)".*/\1/')
	[[ -n $c && $(rp_psql src -Atc "SELECT '$c'::pg_lsn >= '$fence'") == t ]] && break
	sleep 0.2
done
kill -TERM "$consumer_pid" "$consumer2_pid" "$consumer3_pid"
wait "$consumer3_pid" || fail "the file-sink consumer failed"
consumer3_pid=
rc=0; wait "$consumer_pid" || rc=$?
consumer_pid=
wait "$consumer2_pid" || true
consumer2_pid=
((rc == 0)) || fail "the consumer exited with status $rc"

# ---- compare
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3'
summary=()
for db in postgres dst2; do
	for t in "${TABLES[@]}"; do
		q="SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), ''))
		   FROM (SELECT x::text AS r FROM public.$t x) s"
		a=$(rp_psql src -Atc "$q")
		b=$(rp_psql dst -d "$db" -Atc "$q")
		if [[ $a != "$b" ]]; then
			rp_psql src -Atc "SELECT x::text FROM public.$t x" | sort >"$work/$t.src"
			rp_psql dst -d "$db" -Atc "SELECT x::text FROM public.$t x" | sort >"$work/$t.$db"
			diff "$work/$t.src" "$work/$t.$db" | cut -c 1-200 | head -n 10 || true  # (diff exits 1: the reason follows)
			fail "table $t differs in $db: source $a, destination $b"
		fi
		[[ $db == dst2 ]] || summary+=("$t ${a%% *}")
	done
done
unset PGOPTIONS
[[ $(rp_psql dst -d dst2 -Atc "SELECT count(*) FROM pg_tables WHERE tablename ~ '^snap(seen|new)_'") == 0 ]] ||
	fail "merge tables left behind"
# ---- the file log
vrc=0
replicant verify-snapshot "$work/log.jsonl" >"$work/verify.out" 2>&1 || vrc=$?
((vrc == 0)) || { cat "$work/verify.out"; fail "verify-snapshot exited with $vrc"; }
[[ $(grep -c 'complete' "$work/verify.out") -ge ${#TABLES[@]} ]] || { cat "$work/verify.out"; fail "not every dump is complete"; }
rp_psql src -Atc "SELECT id FROM big_t ORDER BY id" >"$work/big_t.ids"
python3 - "$work/log.jsonl" "$work/big_t.ids" <<'PY' || fail "the file log does not hold each row once"
import json, sys
keys = {"public.types_t": ["id"], "public.big_t": ["id"], "public.comp_t": ["a", "b"],
        "public.gen_t": ["id"], "public.empty_t": ["id"]}
seen, stubs, ends, dump = {}, 0, {}, set()
stream = []
after_end = False
def records(path):
    # a json value's own line breaks reach stream lines verbatim (common/rp_render.c); frames are one line
    pending = ""
    for line in open(path, encoding="utf-8"):
        pending += line
        try:
            yield json.loads(pending)
            pending = ""
        except ValueError:
            continue
    if pending:
        sys.exit("torn last line")
for f in records(sys.argv[1]):
    k = f["kind"]
    if k in ("row", "oversize"):
        store = f["store"]
        obj = f["record"] if k == "row" else f["row_key"]
        if store in keys:
            key = tuple(json.dumps(obj[c]) for c in keys[store])
            if (store, key) in seen:
                sys.exit("duplicate row in the dump of %s" % store)
            seen[(store, key)] = 1
        stubs += k == "oversize"
        if store == "public.big_t":
            dump.add(obj["id"])
    elif k == "end":
        ends[f["store"]] = f["row_count"]
    elif k in ("insert", "update", "delete") and f["table"] == "big_t":
        stream.append(f)
for t in ("types_t", "big_t", "comp_t", "nopk_t", "gen_t", "empty_t"):
    if "public." + t not in ends:
        sys.exit("no end frame for %s" % t)
if ends["public.empty_t"] != 0:
    sys.exit("empty_t: row_count %r" % ends["public.empty_t"])
if stubs == 0:
    sys.exit("no oversize stub")
for f in stream:
    if f["kind"] == "delete":
        dump.discard(f["key"]["id"])
    elif f["kind"] == "update" and "key" in f:
        dump.discard(f["key"]["id"]); dump.add(f["new"]["id"])
    else:
        dump.add(f["new"]["id"])
src = set(int(x) for x in open(sys.argv[2]))
if src != dump:
    sys.exit("big_t keys differ: %d only in the source, %d only in the log" % (len(src - dump), len(dump - src)))
print("file log: %d dumps, %d oversize stubs, %d big_t keys, %d stream changes of big_t" % (len(ends), stubs, len(src), len(stream)))
PY
[[ -s $work/state3/${SLOT}_log.dead-letter ]] || fail "no dead-letter file"

grep -l 'stale\|ghost' "$work"/*.err >/dev/null 2>&1 && fail "a row value reached the consumer's log"

status=0
printf 'PASS snapshot_mirror: snapshot under %d source commits; tables equal (rows: %s); merge into a populated mirror equal (%ds)\n' \
	"$((commits_after - commits_before))" "$(IFS=,; echo "${summary[*]}")" "$((SECONDS - started))"
