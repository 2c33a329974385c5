#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_fault.sh: the PostgreSQL mirror is effect-once across crashes of the
# consumer, the destination and the source.
#
# Proves G1 (effect-once: after the faults the destination equals the source table by table,
# so dup = 0 and loss = 0) for the mirror sink, with G2 checked on the way (after every kill
# the slot's confirmed_flush_lsn is at or behind the destination's replicant.checkpoint).
#
# A source and a destination cluster. Source tables:
#   types_t   every pre-cast type: int2/4/8 at their limits, numeric (NaN, +-Infinity,
#             trailing zeros, typmod), float4/8 (NaN, +-Infinity, -0, extremes), text and
#             varchar with unicode, tabs, newlines, backslashes and "\N", bytea with zero
#             bytes, uuid, date and timestamp(tz) with infinities and BC dates, interval,
#             jsonb, json (kept verbatim: spacing, duplicate keys), int[] with NULLs and a
#             non-default lower bound, multi-dimensional text[], an enum (the type is created
#             on the destination beforehand, --create-tables refers to it), bool
#   bin_t     types_t's values without the enum, plus time, timetz (zones east and west),
#             char(n), name, float8[] and date[] with NULLs: every column has a binary form,
#             so the mirror COPYs this table in binary (types_t, with its enum, goes as
#             text); kept equal to types_t row for row by a trigger on the source
#   toast_t   large out-of-line text and jsonb (STORAGE EXTERNAL); most updates change other
#             columns only (unchanged TOAST: the destination must keep its value), some
#             change the key too
#   keyed_t   key updates, key swaps inside one transaction, deletes
#   nopk_t    no primary key, REPLICA IDENTITY FULL, duplicate rows updated and deleted one
#             at a time (applied row by row, matched on every column, a json one included)
#   trunc_t, trunc2_t  TRUNCATE (alone, both at once, and between other changes)
# plus rolled-back subtransactions and rolled-back transactions, and ADD COLUMN on types_t
# and nopk_t in the middle of the stream (applied on the destination, then written to).
# A background workload of small transactions runs while the consumer streams with
# --create-tables (no -n: a lost connection is retried in process) and the faults come:
#   - ROUNDS (>= 20) SIGKILLs of the consumer, at random moments or while the destination
#     shows its batch transaction open; it is restarted after each;
#   - 2 immediate restarts of the destination while a batch is open: the consumer must
#     reconnect by itself and go on;
#   - 1 fast restart of the source: same;
#   - the ADD COLUMN round: a destination trigger terminates the consumer's session inside
#     the batch that applies the ADD COLUMN, after the ALTER (rolled back with it): the
#     consumer must retry in process and apply the ALTER again.
# Then the workload stops, the consumer runs to -E past the last commit (-n, exit 0), and
# every table is compared: count(*) and md5 of the rows' text in sorted order (a multiset
# comparison for nopk_t), under the same DateStyle, TimeZone and extra_float_digits.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-22}
work=$(mktemp -d /tmp/rp-mirror-fault.XXXXXX)
STATE=$work/state
SLOT=mirror_fault
TABLES=(types_t bin_t toast_t keyed_t nopk_t trunc_t trunc2_t)
consumer_pid=
workload_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail mirror_fault "$work/consumer-*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
# COPY statements in the destination's log (no parameters): which tables went in binary
rp_psql dst -c "ALTER SYSTEM SET log_statement = 'mod'" -c "ALTER SYSTEM SET log_parameter_max_length = 0" \
	-c "SELECT pg_reload_conf()" >/dev/null

rp_psql src <<'SQL' >/dev/null
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très "heureux" ☺');
CREATE TABLE types_t (id bigint PRIMARY KEY, ver int NOT NULL, i2 int2, i4 int4, i8 int8,
                      n numeric, nt numeric(12,3), f8 float8, f4 real, t text, vc varchar(20),
                      b bytea, u uuid, d date, ts timestamptz, tsn timestamp, iv interval,
                      jb jsonb, js json, ia int[], ta text[], e mood, flag bool);
CREATE TABLE bin_t (id bigint PRIMARY KEY, ver int NOT NULL, i2 int2, i4 int4, i8 int8,
                    n numeric, nt numeric(12,3), f8 float8, f4 real, t text, vc varchar(20),
                    b bytea, u uuid, d date, ts timestamptz, tsn timestamp, iv interval,
                    jb jsonb, js json, ia int[], ta text[], flag bool, tm time, tz timetz,
                    c char(5), na name, fa float8[], da date[]);
CREATE FUNCTION bin_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r bin_t;
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM bin_t WHERE id = OLD.id;
    RETURN NULL;
  END IF;
  r := ROW(NEW.id, NEW.ver, NEW.i2, NEW.i4, NEW.i8, NEW.n, NEW.nt, NEW.f8, NEW.f4,
      NEW.t, NEW.vc, NEW.b, NEW.u, NEW.d, NEW.ts, NEW.tsn, NEW.iv, NEW.jb, NEW.js, NEW.ia, NEW.ta,
      NEW.flag,
      CASE WHEN isfinite(NEW.tsn) THEN NEW.tsn::time END,
      CASE WHEN isfinite(NEW.tsn) THEN (NEW.tsn::time::text || CASE NEW.ver % 3 WHEN 0 THEN '+05:30'
        WHEN 1 THEN '-08' ELSE '+00' END)::timetz END,
      left(NEW.vc, 5), left(NEW.t, 40)::name,
      CASE WHEN NEW.ver % 2 = 0 THEN ARRAY[NEW.f8, NULL, NEW.f4] END,
      CASE WHEN NEW.d IS NOT NULL THEN '[0:1]={2000-01-01,NULL}'::date[] || NEW.d END);
  -- updates in place half the time, as delete and insert the other half
  IF TG_OP = 'UPDATE' AND NEW.ver % 2 = 0 THEN
    UPDATE bin_t SET (id, ver, i2, i4, i8, n, nt, f8, f4, t, vc, b, u, d, ts, tsn, iv, jb, js, ia, ta, flag, tm, tz, c, na, fa, da) = (SELECT r.*) WHERE id = OLD.id;
  ELSE
    IF TG_OP = 'UPDATE' THEN
      DELETE FROM bin_t WHERE id = OLD.id;
    END IF;
    INSERT INTO bin_t SELECT r.*;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER bin_mirror AFTER INSERT OR UPDATE OR DELETE ON types_t
  FOR EACH ROW EXECUTE FUNCTION bin_mirror();
-- the shape of r_types() (types_t gains a column later)
CREATE TABLE types_proto (LIKE types_t);
CREATE TABLE toast_t (id bigint PRIMARY KEY, big text, doc jsonb, counter int NOT NULL, note text);
ALTER TABLE toast_t ALTER big SET STORAGE EXTERNAL, ALTER doc SET STORAGE EXTERNAL;
CREATE TABLE keyed_t (id bigint PRIMARY KEY, grp int NOT NULL, v text);
CREATE TABLE nopk_t (a int, b text, j json, big text);
ALTER TABLE nopk_t REPLICA IDENTITY FULL, ALTER big SET STORAGE EXTERNAL;
CREATE TABLE trunc_t (id bigint PRIMARY KEY, v int);
CREATE TABLE trunc2_t (id bigint PRIMARY KEY, v text);
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL, add_col bool NOT NULL);
INSERT INTO ctl VALUES (1, false, false);
CREATE TABLE fence (at timestamptz);
CREATE SEQUENCE ids;

-- a random integer in [0, n)
CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT floor(random() * n)::int $$;
CREATE FUNCTION big_text() RETURNS text LANGUAGE sql VOLATILE AS
$$ SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 100 + ri(150)) $$;

-- one random value per column kind, the awkward ones often
CREATE FUNCTION r_types(id bigint, ver int) RETURNS types_proto LANGUAGE sql VOLATILE AS $$
SELECT id, ver,
  (CASE ri(4) WHEN 0 THEN -32768 WHEN 1 THEN 32767 WHEN 2 THEN NULL ELSE ri(1000) END)::int2,
  (CASE ri(4) WHEN 0 THEN -2147483648 WHEN 1 THEN 2147483647 WHEN 2 THEN NULL ELSE ri(100000) END)::int4,
  (CASE ri(4) WHEN 0 THEN -9223372036854775808 WHEN 1 THEN 9223372036854775807 WHEN 2 THEN NULL ELSE ri(100000) END)::int8,
  (CASE ri(9) WHEN 0 THEN 'NaN' WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity' WHEN 3 THEN '1.500'
     WHEN 4 THEN '-123456789012345678901234567890.123456789' WHEN 5 THEN '0.000000000000000000001'
     WHEN 6 THEN NULL WHEN 7 THEN '-0.0' ELSE round((random() * 1e6)::numeric, ri(8)) END)::numeric,
  (CASE ri(3) WHEN 0 THEN NULL WHEN 1 THEN '-999999999.999' ELSE random() * 1000 END)::numeric(12,3),
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
  CASE ri(3) WHEN 0 THEN true WHEN 1 THEN false END
$$;

-- a random row's id (call it once per statement: it is volatile)
CREATE FUNCTION any_id(tbl regclass) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE r bigint;
BEGIN
	EXECUTE format('SELECT id FROM %s TABLESAMPLE SYSTEM_ROWS(1)', tbl) INTO r;
	RETURN r;
END $$;

-- n small transactions of random changes
CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS $$
DECLARE
	x bigint;
	y bigint;
	k int;
	have_extra bool;
	rec types_proto;
BEGIN
	FOR i IN 1 .. n LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		have_extra := EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'types_t'::regclass AND attname = 'extra');
		IF NOT have_extra AND (SELECT add_col FROM ctl) THEN
			ALTER TABLE types_t ADD COLUMN extra text;
			ALTER TABLE nopk_t ADD COLUMN extra int;
			COMMIT;
			have_extra := true;
		END IF;
		FOR s IN 1 .. 1 + ri(4) LOOP
			k := ri(100);
			IF k < 14 THEN		-- types_t inserts
				FOR j IN 1 .. 1 + ri(3) LOOP
					rec := r_types(nextval('ids'), 0);
					INSERT INTO types_t (id, ver, i2, i4, i8, n, nt, f8, f4, t, vc, b, u, d, ts, tsn, iv, jb, js, ia, ta, e, flag)
					VALUES (rec.id, rec.ver, rec.i2, rec.i4, rec.i8, rec.n, rec.nt, rec.f8, rec.f4, rec.t, rec.vc, rec.b,
					        rec.u, rec.d, rec.ts, rec.tsn, rec.iv, rec.jb, rec.js, rec.ia, rec.ta, rec.e, rec.flag);
					IF have_extra AND ri(2) = 0 THEN
						EXECUTE 'UPDATE types_t SET extra = $2 WHERE id = $1' USING rec.id, md5(random()::text);
					END IF;
				END LOOP;
			ELSIF k < 26 THEN	-- types_t updates: some columns, all, or to NULL
				x := any_id('types_t');
				rec := r_types(x, 0);
				CASE ri(4)
				WHEN 0 THEN UPDATE types_t SET ver = ver + 1, n = rec.n, f8 = rec.f8, d = rec.d, ts = rec.ts WHERE id = x;
				WHEN 1 THEN UPDATE types_t SET ver = ver + 1, t = rec.t, b = rec.b, jb = rec.jb, js = rec.js, ia = rec.ia, ta = rec.ta WHERE id = x;
				WHEN 2 THEN UPDATE types_t SET ver = ver + 1, i2 = rec.i2, i4 = rec.i4, i8 = rec.i8, nt = rec.nt, f4 = rec.f4,
				            vc = rec.vc, u = rec.u, tsn = rec.tsn, iv = rec.iv, e = rec.e, flag = rec.flag WHERE id = x;
				ELSE UPDATE types_t SET ver = ver + 1, i2 = NULL, n = NULL, t = NULL, b = NULL, jb = NULL, ia = NULL, e = NULL WHERE id = x;
				END CASE;
				IF have_extra AND ri(3) = 0 THEN
					EXECUTE 'UPDATE types_t SET extra = $2 WHERE id = $1' USING x, md5(random()::text);
				END IF;
			ELSIF k < 30 THEN
				x := any_id('types_t');
				DELETE FROM types_t WHERE id = x;
			ELSIF k < 38 THEN	-- toast_t: insert, or replace the large values
				IF ri(3) > 0 OR NOT EXISTS (SELECT 1 FROM toast_t) THEN
					INSERT INTO toast_t VALUES (nextval('ids'), big_text(), jsonb_build_object('s', big_text()), 0, 'new');
				ELSE
					x := any_id('toast_t');
					UPDATE toast_t SET big = big_text(), counter = counter + 1 WHERE id = x;
				END IF;
			ELSIF k < 52 THEN	-- toast_t: other columns only (unchanged TOAST), sometimes twice
				x := any_id('toast_t');
				UPDATE toast_t SET counter = counter + 1, note = md5(random()::text) WHERE id = x;
				IF ri(3) = 0 THEN
					UPDATE toast_t SET counter = counter + 10 WHERE id = x;
				END IF;
				IF ri(4) = 0 THEN	-- a new large value, then another change of a small column
					UPDATE toast_t SET doc = jsonb_build_object('r', big_text()) WHERE id = x;
					UPDATE toast_t SET note = 'after doc' WHERE id = x;
				END IF;
			ELSIF k < 56 THEN	-- toast_t: the key changes, the large values do not
				x := any_id('toast_t');
				UPDATE toast_t SET id = nextval('ids'), counter = counter + 100 WHERE id = x;
			ELSIF k < 59 THEN
				x := any_id('toast_t');
				DELETE FROM toast_t WHERE id = x;
			ELSIF k < 66 THEN	-- keyed_t inserts
				INSERT INTO keyed_t SELECT nextval('ids'), ri(10), md5(random()::text) FROM generate_series(1, 1 + ri(4));
			ELSIF k < 71 THEN	-- keyed_t key updates (a group of them, or one)
				IF ri(2) = 0 THEN
					UPDATE keyed_t SET id = nextval('ids'), v = v || '+' WHERE grp = ri(10) AND id % 3 = 0;
				ELSE
					x := any_id('keyed_t');
					UPDATE keyed_t SET id = nextval('ids') WHERE id = x;
				END IF;
			ELSIF k < 73 THEN	-- swap two keys inside the transaction
				x := any_id('keyed_t');
				y := any_id('keyed_t');
				IF x IS NOT NULL AND y IS NOT NULL AND x <> y THEN
					UPDATE keyed_t SET id = -1 WHERE id = x;
					UPDATE keyed_t SET id = x WHERE id = y;
					UPDATE keyed_t SET id = y WHERE id = -1;
				END IF;
			ELSIF k < 76 THEN
				x := any_id('keyed_t');
				DELETE FROM keyed_t WHERE id = x;
			ELSIF k < 83 THEN	-- nopk_t: duplicate rows, sometimes with a large value
				x := ri(50);
				INSERT INTO nopk_t (a, b, j, big)
				SELECT x, 'dup ' || x, ('{"k" : ' || x || ' }')::json, CASE WHEN x % 5 = 0 THEN repeat(md5(x::text), 100) END
				FROM generate_series(1, 1 + ri(3));
			ELSIF k < 88 THEN	-- nopk_t: update one of the duplicates, or all of them
				x := ri(50);
				IF ri(2) = 0 THEN
					UPDATE nopk_t SET b = b || '.' WHERE ctid = (SELECT ctid FROM nopk_t WHERE a = x LIMIT 1);
				ELSE
					UPDATE nopk_t SET j = ('[' || ri(9) || ']')::json WHERE a = x;
				END IF;
				IF have_extra AND ri(2) = 0 THEN
					EXECUTE 'UPDATE nopk_t SET extra = $2 WHERE ctid = (SELECT ctid FROM nopk_t WHERE a = $1 LIMIT 1)' USING x, ri(1000);
				END IF;
			ELSIF k < 91 THEN	-- nopk_t: delete one of the duplicates
				DELETE FROM nopk_t WHERE ctid = (SELECT ctid FROM nopk_t WHERE a = ri(50) LIMIT 1);
			ELSIF k < 97 THEN
				INSERT INTO trunc_t SELECT nextval('ids'), ri(1000) FROM generate_series(1, 1 + ri(5));
				INSERT INTO trunc2_t SELECT nextval('ids'), md5(random()::text) FROM generate_series(1, 1 + ri(3));
			ELSE			-- TRUNCATE: alone, or both tables with changes around it
				IF ri(2) = 0 THEN
					TRUNCATE trunc_t;
				ELSE
					INSERT INTO trunc_t VALUES (nextval('ids'), -1);
					x := any_id('keyed_t');
					UPDATE keyed_t SET v = 'around a truncate' WHERE id = x;
					TRUNCATE trunc_t, trunc2_t;
					INSERT INTO trunc2_t VALUES (nextval('ids'), 'after truncate');
				END IF;
			END IF;
		END LOOP;
		IF ri(10) = 0 THEN	-- a rolled-back subtransaction
			BEGIN
				INSERT INTO keyed_t VALUES (-nextval('ids'), -1, 'ghost');
				x := any_id('toast_t');
				UPDATE toast_t SET counter = -1 WHERE id = x;
				x := any_id('types_t');
				DELETE FROM types_t WHERE id = x;
				RAISE EXCEPTION 'roll back';
			EXCEPTION WHEN raise_exception THEN NULL;
			END;
		END IF;
		IF ri(25) = 0 THEN
			INSERT INTO keyed_t VALUES (-nextval('ids'), -1, 'ghost');
			ROLLBACK;
		ELSE
			COMMIT;
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
SQL
rp_psql src -c "CREATE EXTENSION tsm_system_rows" >/dev/null
# the enum type on the destination: --create-tables refers to it, it does not create types
rp_psql dst -c "CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy', 'très \"heureux\" ☺')" >/dev/null

# some rows before the slot exists would not be streamed: start empty, create the slot first
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$STATE" --batch-txns 20 --batch-ms 100 "$@" 2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

kill_consumer() {
	rp_kill9_alive consumer_pid || fail "consumer run $runs exited by itself (status $RP_EXIT_STATUS) before $1"
}

# The destination's checkpoint of this slot: end_lsn (empty when there is none yet).
dst_ckpt() { rp_dst_checkpoint dst "$SLOT"; }

# G2 after a kill: the slot never passes what the destination holds.
check_ack() {
	local ck=$1 ok
	[[ -n $ck ]] || return 0
	ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$ck' FROM pg_replication_slots WHERE slot_name = '$SLOT'")
	[[ $ok == t ]] || fail "$2: slot confirmed_flush_lsn is past the destination checkpoint $ck"
}

# Wait (up to 60 s: the bound only guards against a hang) until the destination shows the consumer's batch transaction open.
wait_open_batch() {
	local deadline=$((SECONDS + 60)) n
	while ((SECONDS < deadline)); do
		n=$(rp_psql dst -Atc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant'
		                       AND xact_start IS NOT NULL AND backend_xid IS NOT NULL" 2>/dev/null || echo 0)
		((n > 0)) && return 0
		sleep 0.01
	done
	return 1
}

# recovered WHAT LSN: wait (up to 300 s, a guard against a hang) until the destination checkpoint passes LSN, the
# consumer having got over the fault WHAT by itself, in process (no restart from here)
recovered() {
	local what=$1 lsn=$2 deadline=$((SECONDS + 300)) ok rc=0
	while ((SECONDS < deadline)); do
		ok=$(rp_psql dst -Atc "SELECT end_lsn > '$lsn' FROM replicant.checkpoint WHERE slot = '$SLOT'" 2>/dev/null || true)
		[[ $ok == t ]] && return 0
		if ! kill -0 "$consumer_pid" 2>/dev/null; then
			wait "$consumer_pid" || rc=$?
			consumer_pid=
			fail "$what: the consumer (no -n) exited with status $rc instead of reconnecting and going on"
		fi
		sleep 0.2
	done
	fail "$what: the destination checkpoint did not pass $lsn within 300 s"
}

workload_loop() {
	while [[ $(rp_psql src -Atc "SELECT stop FROM ctl" 2>/dev/null || echo f) != t ]]; do
		rp_psql src -c "CALL workload(200)" >>"$work/workload.out" 2>&1 || sleep 0.3
	done
}

start_consumer
workload_loop &
workload_pid=$!

# rounds 6, 8, 11 and 15 are the other faults; the rest are kills
kills=0
dst_restarts=0
src_restarts=0
mid_batch=0
for ((round = 1; round <= ROUNDS + 4; round++)); do
	case $round in
	8)	# ADD COLUMN in the middle of the stream; the destination drops the consumer's
		# session in the batch that applies it (the first types_t row that has the column
		# set), after the ALTER: the consumer must retry and apply the ALTER again
		rp_psql dst >/dev/null <<'SQL'
CREATE SEQUENCE public.drop_once;
CREATE FUNCTION public.drop_once() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	set_extra bool;
BEGIN
	IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = TG_RELID AND attname = 'extra' AND NOT attisdropped) THEN
		EXECUTE 'SELECT ($1).extra IS NOT NULL' USING NEW INTO set_extra;
		IF set_extra AND nextval('public.drop_once') = 1 THEN
			PERFORM pg_terminate_backend(pg_backend_pid());
		END IF;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER drop_once BEFORE INSERT OR UPDATE ON public.types_t FOR EACH ROW EXECUTE FUNCTION public.drop_once();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE public.types_t ENABLE ALWAYS TRIGGER drop_once;
SQL
		rp_psql src -c "UPDATE ctl SET add_col = true" >/dev/null
		deadline=$((SECONDS + 300))
		while ((SECONDS < deadline)); do
			[[ $(rp_psql dst -Atc "SELECT is_called FROM public.drop_once") == t ]] && break
			sleep 0.1
		done
		[[ $(rp_psql dst -Atc "SELECT is_called FROM public.drop_once") == t ]] ||
			fail "round 8: the destination never dropped the session applying ADD COLUMN"
		before=$(dst_ckpt)
		sleep 2
		recovered "round 8 (session dropped after ADD COLUMN)" "${before:-0/0}"
		rp_psql dst -c "DROP TRIGGER drop_once ON public.types_t" >/dev/null
		printf 'round %2d: ADD COLUMN; the destination dropped the session applying it; consumer went on from %s\n' "$round" "$before"
		continue ;;
	esac
	case $round in
	6 | 15)	# the destination crashes while a batch is open; the consumer reconnects alone
		wait_open_batch || fail "round $round: no open batch on the destination within 60 s"
		rp_cluster_restart dst immediate
		before=$(dst_ckpt)
		dst_restarts=$((dst_restarts + 1))
		sleep 1
		recovered "round $round (destination restart)" "${before:-0/0}"
		printf 'round %2d: destination restarted (immediate) mid-batch; consumer went on from %s\n' "$round" "$before"
		continue ;;
	11)	# the source restarts; the consumer reconnects alone
		rp_cluster_restart src fast
		before=$(dst_ckpt)
		src_restarts=$((src_restarts + 1))
		recovered "round $round (source restart)" "${before:-0/0}"
		printf 'round %2d: source restarted (fast); consumer went on from %s\n' "$round" "$before"
		continue ;;
	esac
	if ((round % 3 == 0)) && wait_open_batch; then
		how=mid-batch
		mid_batch=$((mid_batch + 1))
	else
		ms=$((100 + RANDOM % 1400))
		sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
		how="after ${ms}ms"
	fi
	kill_consumer "round $round's kill"
	kills=$((kills + 1))
	ck=$(dst_ckpt)
	check_ack "$ck" "round $round"
	printf 'round %2d: killed %s; destination checkpoint %s\n' "$round" "$how" "${ck:-none}"
	kill -0 "$workload_pid" 2>/dev/null || fail "the workload stopped early: $(tail -n 3 "$work/workload.out")"
	start_consumer
done
((kills >= ROUNDS)) || fail "only $kills kill rounds"
((mid_batch > 0)) || fail "no kill landed while a batch was open"

rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$workload_pid" || true
workload_pid=
# the source restart cuts the workload's connection; any other failure is the test's own
if grep -q 'ERROR:' "$work/workload.out"; then
	fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.out")"
fi
[[ $(rp_psql src -Atc "SELECT count(*) FROM pg_attribute WHERE attrelid = 'types_t'::regclass AND attname = 'extra'") == 1 ]] ||
	fail "the workload never added the column"
kill_consumer "the final run"

endpos=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
start_consumer -E "$endpos" -n
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the final consumer run to $endpos exited with status $rc"

# ---- compare
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3'
rp_compare_tables src dst "${TABLES[@]}"
summary=("${RP_COMPARED[@]}")
cols_src=$(rp_psql src -Atc "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attrelid::regclass::text, attnum)
                             FROM pg_attribute WHERE attrelid::regclass::text = ANY ('{types_t,bin_t,toast_t,keyed_t,nopk_t,trunc_t,trunc2_t}') AND attnum > 0 AND NOT attisdropped")
cols_dst=$(rp_psql dst -Atc "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attrelid::regclass::text, attnum)
                             FROM pg_attribute WHERE attrelid::regclass::text = ANY ('{types_t,bin_t,toast_t,keyed_t,nopk_t,trunc_t,trunc2_t}') AND attnum > 0 AND NOT attisdropped")
[[ $cols_src == "$cols_dst" ]] || fail "the destination's columns differ: $cols_dst"
unset PGOPTIONS

# bin_t's fresh rows went straight into it in binary, types_t's (an enum column) as text
grep -q 'COPY "public"."bin_t" (.*) FROM STDIN (FORMAT binary)' "$dst_LOG" ||
	fail "no binary COPY into bin_t in the destination's log"
grep -q 'COPY "public"."types_t" (.*) FROM STDIN$' "$dst_LOG" ||
	fail "no text COPY into types_t in the destination's log"
! grep -q 'COPY "public"."types_t" (.*) FROM STDIN (FORMAT binary)' "$dst_LOG" ||
	fail "types_t (an enum column) was COPYed in binary"

ck=$(rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'")
[[ $(rp_psql dst -Atc "SELECT '$ck'::pg_lsn >= '$endpos'") == t ]] || fail "checkpoint $ck is not past the end position $endpos"
check_ack "$ck" "the end"
ghosts=$(rp_psql dst -Atc "SELECT count(*) FROM keyed_t WHERE id < 0")
((ghosts == 0)) || fail "$ghosts rows of rolled-back work reached the destination"
txns=$(rp_psql src -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")

status=0
printf 'PASS mirror_fault: %d consumer runs, %d SIGKILLs (%d mid-batch), %d destination and %d source restarts; tables equal (rows: %s); checkpoint %s, about %s source commits (%ds)\n' \
	"$runs" "$kills" "$mid_batch" "$dst_restarts" "$src_restarts" "$(IFS=,; echo "${summary[*]}")" "$ck" "$txns" "$((SECONDS - started))"
