-- Every date and time value PostgreSQL accepts crosses exactly: the first
-- and last of date, time, timetz, timestamp, timestamptz and interval, the
-- infinities, and the timestamps from 294247-01-10 04:00:54.775807 to
-- PostgreSQL's last (294276-12-31 23:59:59.999999), which int64
-- microseconds since 1970 cannot hold.  Protocol version 2 and the JSON
-- format send those in the extended range (docs/protocol.md); version 1
-- refuses them, naming relation, column and type but no value.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
SET timezone = 'UTC';

CREATE DOMAIN te_tsd AS timestamptz;
CREATE TYPE te_pair AS (at timestamp, d date);
CREATE TABLE te (id int PRIMARY KEY, ts timestamp, tstz timestamptz, d date, tm time,
                 ttz timetz, iv interval, tsa timestamptz[], tr tsrange, dom te_tsd, c te_pair);

SELECT 'init' FROM pg_create_logical_replication_slot('te_slot', 'replicant');

INSERT INTO te VALUES
  -- PostgreSQL's last values
  (1, '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999999+00', '5874897-12-31',
      '24:00:00', '24:00:00-15:59:59',
      '178956970 years 7 mons 2147483647 days 2562047788:00:54.775807',
      '{"294276-12-31 23:59:59.999999+00",infinity}',
      '["294247-01-10 04:00:54.775807","294276-12-31 23:59:59.999999"]',
      '294276-12-31 23:59:59.999999+00', '("294276-12-31 23:59:59.999999",5874897-12-31)'),
  -- the first instant past what 1970-epoch int64 holds, and the last one it holds
  (2, '294247-01-10 04:00:54.775807', '294247-01-10 04:00:54.775807+00', '294247-01-10',
      '23:59:59.999999', '00:00:00+15:59:59', '-1 microseconds',
      '{"294247-01-10 04:00:54.775806+00","294247-01-10 04:00:54.775807+00"}',
      '(,"294247-01-10 04:00:54.775807")', '294247-01-10 04:00:54.775806+00', NULL),
  (3, '294247-01-10 04:00:54.775806', '294247-01-10 04:00:54.775806+00', '294276-12-31',
      '00:00:00.000001', '12:00:00+00', '0', NULL, NULL, NULL,
      '("294247-01-10 04:00:54.775806",)'),
  -- PostgreSQL's first values
  (4, '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC', '4714-11-24 BC',
      '00:00:00', '00:00:00+15:59:59',
      '-2147483648 mons -2147483648 days -9223372036854775808 microseconds',
      '{"4714-11-24 00:00:00+00 BC"}', '["4714-11-24 00:00:00 BC",)',
      '4714-11-24 00:00:00+00 BC', '("4714-11-24 00:00:00 BC",4714-11-24 BC)'),
  -- the infinities
  (5, 'infinity', 'infinity', 'infinity', NULL, NULL, NULL, '{infinity,-infinity}',
      '[-infinity,infinity]', 'infinity', '(infinity,infinity)'),
  (6, '-infinity', '-infinity', '-infinity', NULL, NULL, NULL, '{}', 'empty', '-infinity',
      '(-infinity,-infinity)');

-- The rows as the JSON format sends them (years past 9999 as +294276,
-- before year 1 as astronomical years: -4713 is 4714 BC)
SELECT (data::jsonb->'new'->>'id')::int AS id, substring(data from '"new":(.*)}$') AS new
FROM pg_logical_slot_peek_changes('te_slot', NULL, NULL, 'format', 'json')
WHERE data LIKE '{"kind":"insert",%';

-- Binary frames of version 2 say exactly the same, record for record
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('te_slot', NULL, NULL, 'format', 'json'))
     = array(SELECT x::text FROM replicant.peek_changes('te_slot', NULL, NULL, 'proto_version', '2') AS x)
       AS json_equals_binary_v2,
       (SELECT bool_and(substr(data, 1, 2) = '\x5202'::bytea)
        FROM pg_logical_slot_peek_binary_changes('te_slot', NULL, NULL, 'proto_version', '2'))
       AS frames_say_version_2;

-- Every value read back from the JSON is the value in the table.
-- pg_temp.iso: an ISO 8601 date or timestamp as PostgreSQL input ("+" and
-- astronomical years as PostgreSQL writes them: -4713 is 4714 BC).
CREATE FUNCTION pg_temp.iso(s text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN s IS NULL OR s IN ('infinity', '-infinity') THEN s
    WHEN s LIKE '-%' THEN
      (split_part(substr(s, 2), '-', 1)::int + 1)::text || substr(substr(s, 2), strpos(substr(s, 2), '-'))
      || ' BC'
    ELSE ltrim(s, '+') END
$$;
WITH r AS (SELECT data::jsonb->'new' AS n
           FROM pg_logical_slot_peek_changes('te_slot', NULL, NULL, 'format', 'json')
           WHERE data LIKE '{"kind":"insert",%')
SELECT te.id,
       pg_temp.iso(n->>'ts')::timestamp IS NOT DISTINCT FROM ts AS ts,
       pg_temp.iso(rtrim(n->>'tstz', 'Z'))::timestamp AT TIME ZONE 'UTC' IS NOT DISTINCT FROM tstz AS tstz,
       pg_temp.iso(n->>'d')::date IS NOT DISTINCT FROM d AS d,
       (n->>'tm')::time IS NOT DISTINCT FROM tm AS tm,
       (n->>'ttz')::timetz IS NOT DISTINCT FROM ttz AS ttz,
       CASE WHEN jsonb_typeof(n->'iv') = 'object'
            THEN format('%s mons %s days %s microseconds', n->'iv'->'months', n->'iv'->'days',
                        n->'iv'->'microseconds')::interval END IS NOT DISTINCT FROM iv AS iv,
       CASE WHEN jsonb_typeof(n->'tsa') = 'array'
            THEN ARRAY(SELECT pg_temp.iso(rtrim(e, 'Z'))::timestamp AT TIME ZONE 'UTC'
                       FROM jsonb_array_elements_text(n->'tsa') e) END IS NOT DISTINCT FROM tsa AS tsa,
       (n->'tr'->>'empty' = 'true' AND isempty(tr)) OR
       (pg_temp.iso(n->'tr'->>'lower')::timestamp IS NOT DISTINCT FROM lower(tr)
        AND pg_temp.iso(n->'tr'->>'upper')::timestamp IS NOT DISTINCT FROM upper(tr)) AS tr,
       pg_temp.iso(rtrim(n->>'dom', 'Z'))::timestamp AT TIME ZONE 'UTC' IS NOT DISTINCT FROM dom AS dom,
       pg_temp.iso(n->'c'->>'at')::timestamp IS NOT DISTINCT FROM (c).at
         AND pg_temp.iso(n->'c'->>'d')::date IS NOT DISTINCT FROM (c).d AS c
FROM r JOIN te ON te.id = (n->>'id')::int
ORDER BY te.id;

-- Version 1 (the default) cannot carry row 1's timestamps: the plugin
-- refuses, naming the relation, the column and its type, and no value
-- (terse: the CONTEXT line names an LSN)
\set VERBOSITY terse
SELECT count(*) FROM replicant.peek_changes('te_slot');
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('te_slot', NULL, NULL, 'proto_version', '1');
\set VERBOSITY default
SELECT pg_drop_replication_slot('te_slot');

-- Inside an array, a range or a composite it is the same: the column is named
SELECT 'init' FROM pg_create_logical_replication_slot('te_slot2', 'replicant');
INSERT INTO te (id, tsa) VALUES (11, '{"2000-01-01 00:00:00+00","294276-12-31 23:59:59+00"}');
\set VERBOSITY terse
SELECT count(*) FROM replicant.peek_changes('te_slot2');
\set VERBOSITY default
SELECT count(*) AS records FROM replicant.peek_changes('te_slot2', NULL, NULL, 'proto_version', '2');
SELECT pg_drop_replication_slot('te_slot2');

-- What version 1 carries is byte for byte what version 2 carries, after
-- the version byte: the extended range is the only difference
SELECT 'init' FROM pg_create_logical_replication_slot('te_slot3', 'replicant');
INSERT INTO te SELECT id + 100, ts, tstz, d, tm, ttz, iv, tsa, tr, dom, c FROM te WHERE id BETWEEN 3 AND 6;
SELECT array(SELECT substr(data, 3) FROM pg_logical_slot_peek_binary_changes('te_slot3', NULL, NULL,
                                                                             'proto_version', '1'))
     = array(SELECT substr(data, 3) FROM pg_logical_slot_peek_binary_changes('te_slot3', NULL, NULL,
                                                                             'proto_version', '2'))
       AS v1_bytes_equal_v2;
SELECT pg_drop_replication_slot('te_slot3');

DROP TABLE te;
DROP TYPE te_pair;
DROP DOMAIN te_tsd;
