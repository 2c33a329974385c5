-- G6: the same row decodes to the same bytes whatever the decoding
-- session's DateStyle, TimeZone, IntervalStyle, extra_float_digits,
-- bytea_output and locale.  Types sent as their text output (multiranges,
-- geometric types, money, inet) are rendered under fixed settings too.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
CREATE TABLE det_t (id int PRIMARY KEY, d date, t time, ttz timetz, ts timestamp, tstz timestamptz,
                    iv interval, f4 float4, f8 float8, n numeric, by bytea, tr tstzrange,
                    mr tstzmultirange, dm datemultirange, pt point, ci circle, m money, ine inet,
                    ad date[], aiv interval[]);
SELECT 'init' FROM pg_create_logical_replication_slot('determinism_slot', 'replicant');
INSERT INTO det_t VALUES
  (1, '2020-02-29', '13:14:15.5', '13:14:15-07', '2020-02-29 13:14:15.123456', '2020-02-29 13:14:15.123456+00',
   '1 year 2 mons 3 days 04:05:06.7', 1/3::float4, 1/3::float8, 1/3::numeric, '\x00ff5c27',
   '[2020-01-01 00:00:00+00,2020-06-01 12:00:00+02)', '{[2020-01-01 00:00:00+00,2020-02-01 00:00:00+00)}',
   '{[2020-01-01,2020-02-01), [2021-01-01,)}', point(1/3::float8, -0.1), circle(point(0.1, 0.2), 1/3::float8),
   1234.56, '10.1.2.3/8', '{2020-02-29,1999-12-31}', '{"-1 day 02:00:00","3 mons"}'),
  (2, '1999-12-31 BC', '00:00', '00:00+00', '-infinity', 'infinity', '-3 hours', 'NaN', '-0', 'NaN', '',
   'empty', '{}', '{}', point(1e-310, 1e300), NULL, -0.01, '::ffff:1.2.3.4', '{}', NULL);

-- the records under the defaults pg_regress sets (DateStyle Postgres, MDY;
-- TimeZone PST8PDT), as the reference
CREATE TEMP TABLE reference AS
  SELECT array(SELECT data FROM pg_logical_slot_peek_changes('determinism_slot', NULL, NULL, 'format', 'json')) AS json,
         array(SELECT data FROM pg_logical_slot_peek_binary_changes('determinism_slot', NULL, NULL)) AS frames;
SELECT substring(r from '"new":(.*)}$') AS new
FROM unnest((SELECT json FROM reference)) AS r WHERE r LIKE '{"kind":"insert"%';

-- every setting that changes how PostgreSQL prints these values
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'America/Los_Angeles';
SET IntervalStyle = 'sql_standard';
SET extra_float_digits = -3;
SET bytea_output = 'escape';
-- lc_monetary and lc_numeric, if this system has another locale to offer
DO $$
DECLARE loc text;
BEGIN
  FOREACH loc IN ARRAY array['de_DE.UTF-8', 'de_DE.utf8', 'fr_FR.UTF-8', 'fr_FR.utf8', 'en_US.UTF-8', 'C.UTF-8'] LOOP
    BEGIN
      PERFORM set_config('lc_monetary', loc, false);
      PERFORM set_config('lc_numeric', loc, false);
      EXIT;
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
  END LOOP;
END $$;
-- (the session itself now prints them differently)
SELECT d::text <> '2020-02-29' AS date_differs, iv::text <> '1 year 2 mons 3 days 04:05:06.7' AS interval_differs,
       pt::text <> '(0.3333333333333333,-0.1)' AS point_differs, by::text <> '\x00ff5c27' AS bytea_differs,
       mr::text <> '{["2020-01-01 00:00:00+00","2020-02-01 00:00:00+00")}' AS multirange_differs
FROM det_t WHERE id = 1;
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('determinism_slot', NULL, NULL, 'format', 'json'))
       = (SELECT json FROM reference) AS json_same,
       array(SELECT data FROM pg_logical_slot_peek_binary_changes('determinism_slot', NULL, NULL))
       = (SELECT frames FROM reference) AS frames_same;

-- and with the ISO styles and UTC
SET DateStyle = 'ISO, YMD';
SET TimeZone = 'UTC';
SET IntervalStyle = 'iso_8601';
SET extra_float_digits = 3;
SET bytea_output = 'hex';
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('determinism_slot', NULL, NULL, 'format', 'json'))
       = (SELECT json FROM reference) AS json_same,
       array(SELECT data FROM pg_logical_slot_peek_binary_changes('determinism_slot', NULL, NULL))
       = (SELECT frames FROM reference) AS frames_same;
RESET ALL;

SELECT pg_drop_replication_slot('determinism_slot');
DROP TABLE det_t;
