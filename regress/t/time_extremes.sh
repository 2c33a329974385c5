#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/time_extremes.sh: every date and time value PostgreSQL accepts crosses the whole
# path exactly: PostgreSQL's first and last timestamp, timestamptz, date, time, timetz and
# interval, 'infinity' and '-infinity', and the timestamps from 294247-01-10 04:00:54.775807 to
# 294276-12-31 23:59:59.999999 that int64 microseconds since 1970 cannot hold (wire protocol
# version 2 carries them in its extended range, docs/protocol.md).
#
# Proves G1 (nothing lost or changed) and G3 (no halt on a value PostgreSQL accepts) for:
#   - the mirror (postgres sink, --create-tables): the initial snapshot (--snapshot) of rows that
#     exist before the slot, through the binary pass-through (ext_b: built-in types only) and
#     the converted-records path (ext_t: a domain over timestamptz makes the snapshot re-encode
#     the COPY data into wire encodings), then the stream: binary COPY for inserts (ext_b), text
#     COPY (ext_t), UPDATE and DELETE matched on extreme keys (ext_k: a timestamptz primary key)
#     and on whole extreme rows (ext_full: REPLICA IDENTITY FULL). Afterwards every table of
#     the destination equals the source's (count and md5 of the sorted rows' text).
#   - live aggregates over the same rows: max and min of an extreme timestamptz measure, by an
#     int and by an extreme date dimension (seeded from the table, then folded from the stream):
#     each output table equals the aggregate computed by the source.
#   - the file sink with --snapshot: every snapshot row and every streamed insert of ext_t and
#     ext_b, read back from its JSON (ISO 8601 years "+294276", "-4713" for 4714 BC), equals the
#     source row value for value (IS NOT DISTINCT FROM).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-time-extremes.XXXXXX)
TABLES=(ext_t ext_b ext_k ext_full)
mirror_pid=
file_pid=
status=1
cleanup() { rp_e2e_cleanup $? mirror_pid file_pid; }
trap cleanup EXIT
fail() { rp_e2e_fail time_extremes "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
SET timezone = 'UTC';
CREATE DOMAIN tsd AS timestamptz;
CREATE TABLE ext_t (id int PRIMARY KEY, ts timestamp, tstz timestamptz, d date, tm time, ttz timetz,
                    iv interval, tsa timestamptz[], da date[], tr tsrange, dom tsd);
CREATE TABLE ext_b (id int PRIMARY KEY, ts timestamp, tstz timestamptz, d date, tm time, ttz timetz,
                    iv interval, tsa timestamptz[], da date[]);
CREATE TABLE ext_k (k timestamptz PRIMARY KEY, d date, v int NOT NULL);
CREATE TABLE ext_full (ts timestamp, d date, v int);
ALTER TABLE ext_full REPLICA IDENTITY FULL;
CREATE TABLE fence (id serial PRIMARY KEY);

-- the extreme rows, ids base+1 .. base+6
CREATE FUNCTION ext_rows(base int) RETURNS SETOF ext_t LANGUAGE sql AS $$
  VALUES
  (base + 1, '294276-12-31 23:59:59.999999'::timestamp, '294276-12-31 23:59:59.999999+00'::timestamptz,
   '5874897-12-31'::date, '24:00:00'::time, '24:00:00-15:59:59'::timetz,
   '2147483647 mons 2147483647 days 9223372036854775807 microseconds'::interval,
   '{"294276-12-31 23:59:59.999999+00",infinity,-infinity}'::timestamptz[],
   '{5874897-12-31,"4714-11-24 BC"}'::date[],
   '["294247-01-10 04:00:54.775807","294276-12-31 23:59:59.999999"]'::tsrange,
   '294276-12-31 23:59:59.999999+00'::tsd),
  (base + 2, '294247-01-10 04:00:54.775807', '294247-01-10 04:00:54.775807+00', '294247-01-10',
   '23:59:59.999999', '00:00:00+15:59:59', '-1 microseconds',
   '{"294247-01-10 04:00:54.775806+00","294247-01-10 04:00:54.775807+00"}', '{294276-12-31}',
   '(,"294247-01-10 04:00:54.775807")', '294247-01-10 04:00:54.775807+00'),
  (base + 3, '294247-01-10 04:00:54.775806', '294247-01-10 04:00:54.775806+00', '0001-12-31 BC',
   '00:00:00.000001', '12:00:00+00', '0', NULL, '{10000-01-01}', NULL, NULL),
  (base + 4, '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC', '4714-11-24 BC', '00:00:00',
   '00:00:00+15:59:59', '-2147483648 mons -2147483648 days -9223372036854775808 microseconds',
   '{"4714-11-24 00:00:00+00 BC"}', '{"0001-01-01 BC"}', '["4714-11-24 00:00:00 BC",)',
   '4714-11-24 00:00:00+00 BC'),
  (base + 5, 'infinity', 'infinity', 'infinity', NULL, NULL, NULL, '{infinity}', '{infinity}',
   '[-infinity,infinity]', 'infinity'),
  (base + 6, '-infinity', '-infinity', '-infinity', NULL, NULL, NULL, '{}', '{-infinity}', 'empty',
   '-infinity')
$$;
CREATE FUNCTION ext_insert(base int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ext_t SELECT * FROM ext_rows(base);
  INSERT INTO ext_b SELECT id, ts, tstz, d, tm, ttz, iv, tsa, da FROM ext_rows(base);
  -- keys of the later rows: base microseconds nearer to 2000 than the first rows' keys
  INSERT INTO ext_k
    SELECT CASE WHEN tstz > '2000-01-01' THEN tstz - base * interval '1 microsecond'
                ELSE tstz + base * interval '1 microsecond' END, d, base
    FROM ext_rows(base) WHERE base = 0 OR isfinite(tstz);
  INSERT INTO ext_full SELECT ts, d, id FROM ext_rows(base);
$$;
-- rows for the snapshot, before any slot exists
SELECT ext_insert(0);
SQL

# --create-tables makes the tables, not the types they use
rp_psql dst -c "CREATE DOMAIN public.tsd AS timestamptz" >/dev/null

# ---- the mirror (snapshot, then stream, with aggregates) and the file sink (snapshot, stream)
replicant -d "$src_CONNSTR" -S ext_mirror --create-slot --snapshot --start --create-tables \
	--sink "postgres:$dst_CONNSTR" --state-dir "$work/state-mirror" -s 1 -v \
	--aggregate "name=kmax source=public.ext_k dims=v measure=k agg=max output=table:agg.kmax" \
	--aggregate "name=kmin source=public.ext_k dims=d measure=k agg=min output=table:agg.kmin" \
	>"$work/mirror.out" 2>"$work/mirror.err" &
mirror_pid=$!
replicant -d "$src_CONNSTR" -S ext_file --create-slot --snapshot --start \
	--sink "file:$work/log.jsonl" --state-dir "$work/state-file" -s 1 -v \
	>"$work/file.out" 2>"$work/file.err" &
file_pid=$!

# the stream: only once both slots exist (their snapshots hold the rows above)
for _ in $(seq 1 600); do
	n=$(rp_psql src -Atc "SELECT count(*) FROM pg_replication_slots WHERE slot_name IN ('ext_mirror', 'ext_file')")
	[[ $n == 2 ]] && break
	kill -0 "$mirror_pid" 2>/dev/null || fail "the mirror consumer exited before its slot existed"
	kill -0 "$file_pid" 2>/dev/null || fail "the file consumer exited before its slot existed"
	sleep 0.1
done
[[ $n == 2 ]] || fail "the slots were not created"
rp_psql src <<'SQL' >/dev/null
SET timezone = 'UTC';
SELECT ext_insert(10);
-- updates and deletes that must find rows by extreme keys and extreme whole rows
UPDATE ext_k SET v = v + 100 WHERE k IN ('294276-12-31 23:59:59.999999+00', '4714-11-24 00:00:00+00 BC');
UPDATE ext_k SET k = '294276-12-31 23:59:59.999998+00' WHERE k = '294276-12-31 23:59:59.999999+00';
DELETE FROM ext_k WHERE k = '294247-01-10 04:00:54.775807+00' OR k = '-infinity';
UPDATE ext_full SET v = v + 100 WHERE ts = '294276-12-31 23:59:59.999999' AND v = 1;
DELETE FROM ext_full WHERE d = '4714-11-24 BC' AND v = 4;
UPDATE ext_full SET ts = '294276-12-31 23:59:59.999999' WHERE ts = '-infinity' AND v = 16;
SQL
fence=$(rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_insert_lsn()")

dst_ck() { rp_psql dst -Atc "SELECT end_lsn >= '$fence' FROM replicant.checkpoint WHERE slot = 'ext_mirror'" 2>/dev/null || true; }
file_ck() {
	local c
	c=$( (grep '"kind":"checkpoint"' "$work/log.jsonl" 2>/dev/null || true) | tail -n 1 | sed 's/.*"end_lsn":"\([^"]*\)".*/\1/')
	[[ -n $c ]] && rp_psql src -Atc "SELECT '$c'::pg_lsn >= '$fence'"
}
# generous bounds that only guard against hanging: the property is checked below
for _ in $(seq 1 1200); do
	[[ $(dst_ck) == t && $(file_ck) == t ]] && break
	kill -0 "$mirror_pid" 2>/dev/null || fail "the mirror consumer exited: $(grep -m 1 'error:' "$work/mirror.err")"
	kill -0 "$file_pid" 2>/dev/null || fail "the file consumer exited: $(grep -m 1 'error:' "$work/file.err")"
	sleep 0.2
done
[[ $(dst_ck) == t ]] || fail "the mirror did not reach $fence"
[[ $(file_ck) == t ]] || fail "the file log did not reach $fence"
grep -q 'snapshot complete' "$work/mirror.err" || fail "the mirror consumer did not report its snapshot"
kill -TERM "$mirror_pid" "$file_pid"
rc=0; wait "$mirror_pid" || rc=$?
mirror_pid=
((rc == 0)) || fail "the mirror consumer exited with status $rc"
rc=0; wait "$file_pid" || rc=$?
file_pid=
((rc == 0)) || fail "the file consumer exited with status $rc"

# ---- the mirror equals the source, table by table
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3'
rp_compare_tables src dst "${TABLES[@]}"
summary=("${RP_COMPARED[@]}")
# the extremes really are there (the comparison above is not vacuous)
n=$(rp_psql dst -Atc "SELECT count(*) FROM public.ext_b WHERE ts = '294276-12-31 23:59:59.999999' OR d = '5874897-12-31'")
((n == 2)) || fail "the destination's ext_b lacks the extreme rows ($n of 2)"

# ---- the aggregates equal the source's
agg_same() {
	local a b
	a=$(rp_psql src -Atc "$2" | sort)
	b=$(rp_psql dst -Atc "$3" | sort)
	[[ -n $a && $a == "$b" ]] || { diff <(echo "$a") <(echo "$b") | head -n 10 || true; fail "aggregate $1 differs from the source's"; }
}
agg_same kmax "SELECT v || '|' || max(k)::text FROM ext_k GROUP BY v" \
	"SELECT v || '|' || max_k::text FROM agg.kmax"
agg_same kmin "SELECT coalesce(d::text, '~') || '|' || min(k)::text FROM ext_k GROUP BY d" \
	"SELECT coalesce(d::text, '~') || '|' || min_k::text FROM agg.kmin"
unset PGOPTIONS

# ---- the file log: each ext_t and ext_b row once, its values those of the source
rp_psql src <<SQL >"$work/log-check.out" 2>&1 || { cat "$work/log-check.out"; fail "checking the file log failed"; }
SET timezone = 'UTC';
CREATE TEMP TABLE log_raw (line text);
\\copy log_raw FROM '$work/log.jsonl' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')
-- an ISO 8601 date or timestamp as PostgreSQL input (0000 is 1 BC, -4713 is 4714 BC)
CREATE FUNCTION pg_temp.iso(s text) RETURNS text LANGUAGE sql IMMUTABLE AS \$\$
  SELECT CASE
    WHEN s IS NULL OR s IN ('infinity', '-infinity') THEN s
    WHEN s LIKE '0000-%' THEN '0001' || substr(s, 5) || ' BC'
    WHEN s LIKE '-%' THEN (split_part(substr(s, 2), '-', 1)::int + 1)::text
      || substr(substr(s, 2), strpos(substr(s, 2), '-')) || ' BC'
    ELSE ltrim(s, '+') END
\$\$;
CREATE FUNCTION pg_temp.tstz(s text) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS \$\$
  SELECT pg_temp.iso(rtrim(s, 'Z'))::timestamp AT TIME ZONE 'UTC'
\$\$;
-- streamed inserts ("new") and snapshot rows ("record", the table named by "store")
CREATE TEMP TABLE logged AS
  SELECT coalesce(j->>'table', split_part(j->>'store', '.', 2)) AS tab, coalesce(j->'new', j->'record') AS n
  FROM (SELECT line::jsonb AS j FROM log_raw) s
  WHERE j->>'kind' IN ('insert', 'row');
CREATE TEMP TABLE verdict AS
SELECT x.tab, x.id, count(l.n) AS copies,
       bool_and(pg_temp.iso(l.n->>'ts')::timestamp IS NOT DISTINCT FROM x.ts
        AND pg_temp.tstz(l.n->>'tstz') IS NOT DISTINCT FROM x.tstz
        AND pg_temp.iso(l.n->>'d')::date IS NOT DISTINCT FROM x.d
        AND (l.n->>'tm')::time IS NOT DISTINCT FROM x.tm
        AND (l.n->>'ttz')::timetz IS NOT DISTINCT FROM x.ttz
        AND CASE WHEN jsonb_typeof(l.n->'iv') = 'object'
                 THEN format('%s mons %s days %s microseconds', l.n->'iv'->'months', l.n->'iv'->'days',
                             l.n->'iv'->'microseconds')::interval END IS NOT DISTINCT FROM x.iv
        AND CASE WHEN jsonb_typeof(l.n->'tsa') = 'array'
                 THEN ARRAY(SELECT pg_temp.tstz(e) FROM jsonb_array_elements_text(l.n->'tsa') e) END
            IS NOT DISTINCT FROM x.tsa
        AND CASE WHEN jsonb_typeof(l.n->'da') = 'array'
                 THEN ARRAY(SELECT pg_temp.iso(e)::date FROM jsonb_array_elements_text(l.n->'da') e) END
            IS NOT DISTINCT FROM x.da
        AND (x.tab = 'ext_b' OR
             pg_temp.tstz(l.n->>'dom') IS NOT DISTINCT FROM x.dom
             AND ((l.n->'tr'->>'empty' = 'true' AND isempty(x.tr)) OR
                  (pg_temp.iso(l.n->'tr'->>'lower')::timestamp IS NOT DISTINCT FROM lower(x.tr)
                   AND pg_temp.iso(l.n->'tr'->>'upper')::timestamp IS NOT DISTINCT FROM upper(x.tr))))) AS equal
FROM (SELECT 'ext_t' AS tab, * FROM ext_t
      UNION ALL SELECT 'ext_b', id, ts, tstz, d, tm, ttz, iv, tsa, da, NULL, NULL FROM ext_b) x
LEFT JOIN logged l ON l.tab = x.tab AND (l.n->>'id')::int = x.id
GROUP BY x.tab, x.id;
\\pset format unaligned
\\pset tuples_only on
SELECT 'rows ' || count(*) FROM verdict;
SELECT 'bad ' || tab || ' ' || id || ' copies ' || copies || ' equal ' || coalesce(equal::text, 'null')
FROM verdict WHERE copies <> 1 OR equal IS NOT TRUE ORDER BY tab, id;
SQL
grep -q '^rows 24$' "$work/log-check.out" || { cat "$work/log-check.out"; fail "the file log check saw no 24 rows"; }
if grep -q '^bad ' "$work/log-check.out"; then
	grep '^bad ' "$work/log-check.out" | head -n 10
	fail "rows of the file log differ from the source"
fi
grep -q '"+294276-12-31T23:59:59.999999Z"' "$work/log.jsonl" ||
	fail "the file log does not spell the last timestamp as +294276-12-31T23:59:59.999999Z"

status=0
printf 'PASS time_extremes: mirror (snapshot and stream) equal on %s; aggregates kmax, kmin equal; the file log holds every snapshot and streamed row once, equal (%ds)\n' \
	"${summary[*]}" "$((SECONDS - started))"
