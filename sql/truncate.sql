-- TRUNCATE: one record naming every relation truncated together, with the
-- CASCADE and RESTART IDENTITY flags; each relation is described first.
CREATE FUNCTION pg_temp.changes(slot name, VARIADIC opts text[] DEFAULT '{}') RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT CASE WHEN data LIKE '{"kind":"relation"%'
              THEN format('relation %s.%s', data::jsonb->>'schema', data::jsonb->>'table')
              ELSE regexp_replace(data, ',"(xid|final_lsn|commit_lsn|end_lsn|commit_time|relid)":("[^"]*"|[0-9]+)', '', 'g') END
  FROM pg_logical_slot_peek_changes(slot, NULL, NULL, VARIADIC array['format', 'json'] || opts) $$;

CREATE TABLE tr_parent (id serial PRIMARY KEY);
CREATE TABLE tr_child (id int REFERENCES tr_parent);
CREATE TABLE tr_other (id int);
INSERT INTO tr_parent DEFAULT VALUES;
INSERT INTO tr_child VALUES (1);

SELECT 'init' FROM pg_create_logical_replication_slot('truncate_slot', 'replicant');

TRUNCATE tr_parent CASCADE;
TRUNCATE tr_other RESTART IDENTITY;
TRUNCATE tr_other, tr_parent RESTART IDENTITY CASCADE;
BEGIN;
INSERT INTO tr_other VALUES (1);
TRUNCATE tr_other;
INSERT INTO tr_other VALUES (2);
COMMIT;

SELECT * FROM pg_temp.changes('truncate_slot');
-- a truncate of a table that is filtered out leaves it out of the record;
-- a truncate of filtered tables only is not sent at all
SELECT * FROM pg_temp.changes('truncate_slot', 'exclude_tables', 'tr_child');
SELECT * FROM pg_temp.changes('truncate_slot', 'include_tables', 'tr_other', 'actions', 'truncate');
-- actions without truncate: none are sent
SELECT * FROM pg_temp.changes('truncate_slot', 'actions', 'insert');

SELECT pg_drop_replication_slot('truncate_slot');
DROP TABLE tr_child, tr_parent, tr_other;
