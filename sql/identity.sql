-- Replica identity: what UPDATE and DELETE say about the old row under each
-- identity kind, and how the relation record flags the identity columns.
CREATE FUNCTION pg_temp.changes(slot name) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT regexp_replace(data, ',"(xid|final_lsn|commit_lsn|end_lsn|commit_time|relid)":("[^"]*"|[0-9]+)', '', 'g')
  FROM pg_logical_slot_get_changes(slot, NULL, NULL, 'format', 'json')
  WHERE data NOT LIKE '{"kind":"begin"%' AND data NOT LIKE '{"kind":"commit"%'
    AND data NOT LIKE '{"kind":"relation"%' $$;
CREATE FUNCTION pg_temp.identity_columns(slot name) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT format('%s %s: %s', r->>'table', r->>'replica_identity',
                (SELECT string_agg(c->>'name' || CASE WHEN (c->>'primary_key')::bool THEN '(pk)' ELSE '' END, ',')
                 FROM jsonb_array_elements(r->'columns') c WHERE (c->>'identity')::bool))
  FROM (SELECT data::jsonb AS r FROM pg_logical_slot_peek_changes(slot, NULL, NULL, 'format', 'json')) s
  WHERE r->>'kind' = 'relation' $$;

CREATE TABLE id_default (id int PRIMARY KEY, v text);
CREATE TABLE id_full (id int PRIMARY KEY, v text, w int);
ALTER TABLE id_full REPLICA IDENTITY FULL;
CREATE TABLE id_index (id int, code text NOT NULL, v text);
CREATE UNIQUE INDEX id_index_code ON id_index (code);
ALTER TABLE id_index REPLICA IDENTITY USING INDEX id_index_code;
CREATE TABLE id_nothing (id int PRIMARY KEY, v text);
ALTER TABLE id_nothing REPLICA IDENTITY NOTHING;
CREATE TABLE id_nopk (a int, b text);

SELECT 'init' FROM pg_create_logical_replication_slot('identity_slot', 'replicant');

-- DEFAULT with a primary key: no old key when the key did not change,
-- "key" with only the key columns when it did
INSERT INTO id_default VALUES (1, 'a');
UPDATE id_default SET v = 'b';
UPDATE id_default SET id = 2;
DELETE FROM id_default;
-- FULL: "old" holds every column, NULLs included
INSERT INTO id_full VALUES (1, 'a', NULL);
UPDATE id_full SET v = 'b';
DELETE FROM id_full;
-- USING INDEX: the index columns are the key
INSERT INTO id_index VALUES (1, 'c1', 'a');
UPDATE id_index SET v = 'b';
UPDATE id_index SET code = 'c2';
DELETE FROM id_index;
-- NOTHING, and DEFAULT without a primary key: the change is sent, flagged
-- "no_identity" instead of being dropped
INSERT INTO id_nothing VALUES (1, 'a');
UPDATE id_nothing SET v = 'b';
DELETE FROM id_nothing;
INSERT INTO id_nopk VALUES (1, 'a');
UPDATE id_nopk SET b = 'b';
DELETE FROM id_nopk;

-- identity columns as the relation records flag them
SELECT * FROM pg_temp.identity_columns('identity_slot');
SELECT * FROM pg_temp.changes('identity_slot');

-- after REPLICA IDENTITY FULL the relation says so and DELETE sends the whole row
ALTER TABLE id_default REPLICA IDENTITY FULL;
INSERT INTO id_default VALUES (3, 'c');
DELETE FROM id_default;
SELECT * FROM pg_temp.identity_columns('identity_slot');
SELECT * FROM pg_temp.changes('identity_slot');

SELECT pg_drop_replication_slot('identity_slot');
DROP TABLE id_default, id_full, id_index, id_nothing, id_nopk;
