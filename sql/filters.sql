-- Filters: include_tables and exclude_tables (table or schema.table, * as a
-- wildcard, quoted names), actions, and skip_empty_xacts.
CREATE SCHEMA flt_s;
CREATE SCHEMA "Flt Mixed";
CREATE TABLE flt_a (id int PRIMARY KEY);
CREATE TABLE flt_b (id int PRIMARY KEY);
CREATE TABLE other_a (id int PRIMARY KEY);
CREATE TABLE flt_s.flt_a (id int PRIMARY KEY);
CREATE TABLE "Flt Mixed"."T.x" (id int PRIMARY KEY);

SELECT 'init' FROM pg_create_logical_replication_slot('filters_slot', 'replicant');

INSERT INTO flt_a VALUES (1);
INSERT INTO flt_b VALUES (1);
INSERT INTO other_a VALUES (1);
INSERT INTO flt_s.flt_a VALUES (1);
INSERT INTO "Flt Mixed"."T.x" VALUES (1);
UPDATE flt_a SET id = 2;
DELETE FROM flt_b;

-- the tables whose changes are sent, in order, under the given options
CREATE FUNCTION pg_temp.sent(VARIADIC opts text[]) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(format('%s:%s.%s', r->>'kind', r->>'schema', r->>'table'), ' ' ORDER BY n), '(none)')
  FROM pg_logical_slot_peek_changes('filters_slot', NULL, NULL, VARIADIC array['format', 'json'] || opts)
       WITH ORDINALITY AS t(lsn, xid, data, n), LATERAL (SELECT data::jsonb AS r) j
  WHERE r->>'kind' IN ('insert', 'update', 'delete') $$;

SELECT pg_temp.sent('skip_empty_xacts', 'on') AS everything;
-- include_tables: unqualified names match in every schema
SELECT pg_temp.sent('include_tables', 'flt_a');
SELECT pg_temp.sent('include_tables', 'flt_*');
SELECT pg_temp.sent('include_tables', 'public.flt_*');
SELECT pg_temp.sent('include_tables', '*.flt_a');
SELECT pg_temp.sent('include_tables', '*_a');
SELECT pg_temp.sent('include_tables', 'flt_s.*, other_a');
-- unquoted names fold to lower case, quoted ones keep case, dots and spaces
SELECT pg_temp.sent('include_tables', 'FLT_B');
SELECT pg_temp.sent('include_tables', '"Flt Mixed"."T.x"');
SELECT pg_temp.sent('include_tables', '"Flt Mixed".*');
SELECT pg_temp.sent('include_tables', '"FLT_B"');
-- exclude_tables, alone and after include_tables
SELECT pg_temp.sent('exclude_tables', 'flt_*');
SELECT pg_temp.sent('exclude_tables', 'public.*,"Flt Mixed".*');
SELECT pg_temp.sent('include_tables', 'flt_*', 'exclude_tables', 'flt_s.*');
SELECT pg_temp.sent('include_tables', 'nothing_matches');
-- actions
SELECT pg_temp.sent('actions', 'insert');
SELECT pg_temp.sent('actions', 'update,delete');
SELECT pg_temp.sent('actions', 'delete', 'include_tables', 'flt_a');

-- skip_empty_xacts: a transaction that touches only filtered tables sends
-- nothing by default, and an empty BEGIN/COMMIT pair when it is off.
-- (The xids are matched so that no other transaction of the server counts.)
INSERT INTO other_a VALUES (10) RETURNING pg_current_xact_id()::text AS x1 \gset
INSERT INTO flt_a VALUES (10) RETURNING pg_current_xact_id()::text AS x2 \gset
CREATE FUNCTION pg_temp.xacts(VARIADIC opts text[]) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT regexp_replace(data, ',"(xid|final_lsn|commit_lsn|end_lsn|commit_time|relid)":("[^"]*"|[0-9]+)', '', 'g')
  FROM pg_logical_slot_peek_changes('filters_slot', NULL, NULL, VARIADIC array['format', 'json'] || opts)
  WHERE xid::text IN (current_setting('flt.x1'), current_setting('flt.x2'))
    AND data NOT LIKE '{"kind":"relation"%' $$;
SET flt.x1 = :'x1';
SET flt.x2 = :'x2';
SELECT * FROM pg_temp.xacts('include_tables', 'flt_a');
SELECT * FROM pg_temp.xacts('include_tables', 'flt_a', 'skip_empty_xacts', 'off');
SELECT * FROM pg_temp.xacts('actions', 'update', 'skip_empty_xacts', 'false');

SELECT pg_drop_replication_slot('filters_slot');
DROP TABLE flt_a, flt_b, other_a, flt_s.flt_a, "Flt Mixed"."T.x";
DROP SCHEMA flt_s, "Flt Mixed";
