-- Value encodings: every type family with its edge values, decoded in the
-- JSON format (pg_logical_slot_peek_changes, format json) and in the binary
-- format (replicant.peek_changes renders the frames with the same codec).
-- The two must be identical, byte for byte.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;

CREATE TYPE ty_mood AS ENUM ('sad', 'ok', 'happy ☺');
CREATE DOMAIN ty_posint AS int CHECK (VALUE > 0);
CREATE DOMAIN ty_label AS text;
CREATE TYPE ty_pair AS (a int, b text);

CREATE TABLE ty_int (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, o oid);
CREATE TABLE ty_float (id int PRIMARY KEY, f4 float4, f8 float8);
CREATE TABLE ty_numeric (id int PRIMARY KEY, n numeric, n2 numeric(10,2));
CREATE TABLE ty_text (id int PRIMARY KEY, b bool, t text, vc varchar(20), bp char(6), nm name);
CREATE TABLE ty_bytea (id int PRIMARY KEY, by bytea);
CREATE TABLE ty_time (id int PRIMARY KEY, d date, tm time, ttz timetz, ts timestamp,
                      tstz timestamptz, iv interval);
CREATE TABLE ty_json (id int PRIMARY KEY, j json, jb jsonb);
CREATE TABLE ty_array (id int PRIMARY KEY, ai int[], at text[], an numeric[], ad date[]);
CREATE TABLE ty_misc (id int PRIMARY KEY, u uuid, e ty_mood, dp ty_posint, dl ty_label,
                      c ty_pair, r int4range, tr tstzrange, ine inet, pt point);

SELECT 'init' FROM pg_create_logical_replication_slot('types_slot', 'replicant');

INSERT INTO ty_int VALUES
  (1, -32768, -2147483648, -9223372036854775808, 0),
  (2, 32767, 2147483647, 9223372036854775807, 4294967295),
  (3, 0, 0, 0, NULL);

INSERT INTO ty_float VALUES
  (1, 'NaN', 'NaN'), (2, 'Infinity', 'Infinity'), (3, '-Infinity', '-Infinity'),
  (4, '-0', '-0'), (5, '1e-45', '1e-310'), (6, 0.1, 0.1),
  (7, '3.4028235e38', '1.7976931348623157e308'), (8, 1.5, 123456789.125), (9, NULL, NULL);

-- 1000 significant digits, exact; and a value with 1000 decimals
INSERT INTO ty_numeric VALUES
  (1, 'NaN', 0), (2, 'Infinity', 1.5), (3, '-Infinity', -1.5), (4, 0, NULL),
  (5, '-12345.678900', 99999999.99), (6, '0.000', NULL),
  (7, ('-' || repeat('1234567890', 60) || '.' || repeat('0987654321', 40))::numeric, NULL),
  (8, ('0.' || repeat('0', 999) || '1')::numeric, NULL);

INSERT INTO ty_text VALUES
  (1, true, E'quote " backslash \\ newline \n tab \t bell \x07 end', 'ünïcödé ☺', 'ab', 'nâme'),
  (2, false, '', '', '', ''),
  (3, NULL, E'日本語 \U0001F600 ''single''', NULL, 'abcdef', NULL);

INSERT INTO ty_bytea VALUES
  (1, '\x00'), (2, '\x0001ff00fe'), (3, ''), (4, NULL), (5, 'plain text'::bytea);

-- timestamptz literals carry their offset: pg_regress runs with PGTZ=PST8PDT
INSERT INTO ty_time VALUES
  (1, '2000-02-29', '00:00', '00:00+05:30', '2000-02-29 12:34:56.123456',
      '2000-02-29 12:34:56.123456+00', '1 year 2 mons 3 days 04:05:06.789'),
  (2, 'infinity', '23:59:59.999999', '24:00:00-12', 'infinity', 'infinity', '-1 day -00:00:01'),
  (3, '-infinity', '12:00:00.5', '12:34:56.000001-08:00:30', '-infinity', '-infinity', '0'),
  (4, '0044-03-15 BC', '00:00:00.000001', '00:00+00', '1969-12-31 23:59:59.999999',
      '1969-12-31 23:59:59.999999+00', '-178000000 years'),
  (5, '4714-11-24 BC', NULL, NULL, '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC',
      '1 mon -1 day 00:00:00.000001'),
  (6, '5874897-12-31', NULL, NULL, '294246-12-31 23:59:59.999999',
      '1900-01-01 00:00:00+01', NULL);

INSERT INTO ty_json VALUES
  (1, '{"b": [1, {"c": null}], "a": "x\"y"}', '{"b": [1, {"c": null}], "a": "x\"y"}'),
  (2, '[]', '{"z": {"y": {"x": [[], {}]}}}'),
  (3, '"s"', '3.0'),
  (4, '  {"keep":  "spacing"}  ', '{"dup": 1, "dup": 2}');

INSERT INTO ty_array VALUES
  (1, '{}', '{}', '{}', '{}'),
  (2, '{1,2,3}', '{a,"b c",NULL,"quote\""}', '{1.5,NaN,-0.001}', '{2000-02-29,infinity}'),
  (3, '{{1,NULL},{3,4}}', '{{a,b},{c,d}}', '{{1},{2}}', NULL),
  (4, '[0:1]={1,2}', '[-1:-1]={x}', NULL, NULL),
  (5, '[0:1][-1:0]={{1,2},{3,NULL}}', '{NULL}', '{12345678901234567890.12345}', NULL);

INSERT INTO ty_misc VALUES
  (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'happy ☺', 5, 'dom', '(1,)', 'empty',
      '["2020-01-01 00:00:00+00",)', '192.168.0.1/24', '(1.5,-2)'),
  (2, '00000000-0000-0000-0000-000000000000', 'sad', 1, '', '(,)', '(,)',
      '(,)', '::1', '(0,0)'),
  (3, NULL, NULL, NULL, NULL, '(-7,"a,b")', '[1,10)',
      '["2020-01-01 00:00:00+00","2021-01-01 00:00:00+00"]', NULL, NULL);

-- How each column is described: its SQL type and the encoding it travels in
-- (domains travel as their base type; inet and point as text).
SELECT c->>'name' AS col, c->>'type' AS type, c->>'encoding' AS encoding,
       c->>'typmod' AS typmod, (c->>'type_oid')::oid < 16384 AS builtin_oid
FROM pg_logical_slot_peek_changes('types_slot', NULL, NULL, 'format', 'json') AS r,
     jsonb_array_elements(r.data::jsonb->'columns') AS c
WHERE r.data::jsonb->>'kind' = 'relation' AND r.data::jsonb->>'table' IN ('ty_time', 'ty_misc')
ORDER BY r.data::jsonb->>'table', (c->>'attnum')::int;

-- The rows as they are sent (raw text: key order and number formatting are
-- part of the output); 'new' only, the tables are listed above.
SELECT data::jsonb->>'table' AS tab, substring(data from '"new":(.*)}$') AS new
FROM pg_logical_slot_peek_changes('types_slot', NULL, NULL, 'format', 'json')
WHERE data LIKE '{"kind":"insert",%' AND data::jsonb->>'table' <> 'ty_numeric';

-- numeric: exact text (the long ones are compared, not printed)
SELECT (j->'new'->>'id')::int AS id, j->'new'->>'n2' AS n2,
       CASE WHEN (j->'new'->>'id')::int < 7 THEN j->'new'->>'n' END AS n,
       length(j->'new'->>'n') AS len,
       (j->'new'->>'n') = (SELECT n::text FROM ty_numeric WHERE id = (j->'new'->>'id')::int) AS exact
FROM (SELECT data::jsonb AS j FROM pg_logical_slot_peek_changes('types_slot', NULL, NULL, 'format', 'json')) s
WHERE j->>'kind' = 'insert' AND j->>'table' = 'ty_numeric';

-- Round trips checked in SQL: text, bytea (base64), floats, timestamptz and dates
WITH r AS (SELECT data::jsonb AS j FROM pg_logical_slot_peek_changes('types_slot', NULL, NULL, 'format', 'json')
           WHERE data LIKE '{"kind":"insert",%')
SELECT
  (SELECT bool_and(j->'new'->>'t' IS NOT DISTINCT FROM t AND j->'new'->>'vc' IS NOT DISTINCT FROM vc
                   AND j->'new'->>'bp' IS NOT DISTINCT FROM format('%s', bp) AND j->'new'->>'nm' IS NOT DISTINCT FROM nm::text)
   FROM r JOIN ty_text ON id = (j->'new'->>'id')::int WHERE j->>'table' = 'ty_text') AS text_ok,
  (SELECT bool_and(decode(j->'new'->>'by', 'base64') IS NOT DISTINCT FROM by)
   FROM r JOIN ty_bytea ON id = (j->'new'->>'id')::int WHERE j->>'table' = 'ty_bytea') AS bytea_ok,
  (SELECT bool_and((j->'new'->>'f8')::float8 IS NOT DISTINCT FROM f8
                   AND (j->'new'->>'f4')::float4 IS NOT DISTINCT FROM f4)
   FROM r JOIN ty_float ON id = (j->'new'->>'id')::int WHERE j->>'table' = 'ty_float') AS float_ok,
  (SELECT bool_and((j->'new'->>'tstz')::timestamptz = tstz AND (j->'new'->>'d')::date = d)
   FROM r JOIN ty_time ON id = (j->'new'->>'id')::int
   WHERE j->>'table' = 'ty_time' AND id IN (1, 2, 3)) AS time_ok;

-- The binary format says exactly the same, record for record
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('types_slot', NULL, NULL, 'format', 'json'))
     = array(SELECT x::text FROM replicant.peek_changes('types_slot') AS x) AS json_equals_binary,
       (SELECT count(*) FROM replicant.peek_changes('types_slot')) AS records;
SELECT pg_drop_replication_slot('types_slot');

-- The extremes of every date and time type, and the timestamps past 294247:
-- sql/time_extremes.sql.

DROP TABLE ty_int, ty_float, ty_numeric, ty_text, ty_bytea, ty_time, ty_json, ty_array, ty_misc;
DROP TYPE ty_pair;
DROP DOMAIN ty_posint, ty_label;
DROP TYPE ty_mood;
