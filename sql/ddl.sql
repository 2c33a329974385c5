-- Relation records: a relation is described once per decoding session,
-- before its first change, and again only when its description changes
-- (DDL, even in the middle of a transaction), with the new shape.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
CREATE FUNCTION pg_temp.changes(slot name) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT CASE WHEN r->>'kind' = 'relation'
    THEN format('relation %s.%s identity=%s: %s', r->>'schema', r->>'table', r->>'replica_identity',
                (SELECT string_agg(format('%s#%s %s/%s%s%s%s', c->>'name', c->>'attnum', c->>'type', c->>'encoding',
                                          CASE WHEN (c->>'primary_key')::bool THEN ' pk' ELSE '' END,
                                          CASE WHEN (c->>'identity')::bool THEN ' identity' ELSE '' END,
                                          CASE WHEN (c->>'not_null')::bool THEN ' not_null' ELSE '' END
                                          || CASE WHEN (c->>'generated')::bool THEN ' generated' ELSE '' END), ', ')
                 FROM jsonb_array_elements(r->'columns') c))
    ELSE regexp_replace(data, ',"(xid|final_lsn|commit_lsn|end_lsn|commit_time|relid)":("[^"]*"|[0-9]+)', '', 'g') END
  FROM pg_logical_slot_peek_changes(slot, NULL, NULL, 'format', 'json') AS t, LATERAL (SELECT data::jsonb AS r) j $$;

CREATE TABLE ddl_t (id int PRIMARY KEY, a int);
SELECT 'init' FROM pg_create_logical_replication_slot('ddl_slot', 'replicant');

INSERT INTO ddl_t VALUES (1, 1);              -- described before its first change
SELECT pg_current_wal_lsn() AS after_first \gset
INSERT INTO ddl_t VALUES (2, 2);              -- not again in the next transaction
ALTER TABLE ddl_t ADD COLUMN b text;
INSERT INTO ddl_t VALUES (3, 3, 'x');         -- new column
ALTER TABLE ddl_t ALTER COLUMN a TYPE bigint;
INSERT INTO ddl_t VALUES (4, 4, 'y');         -- new type
BEGIN;                                        -- DDL inside one transaction
ALTER TABLE ddl_t ADD COLUMN c numeric(10,2) NOT NULL DEFAULT 0;
INSERT INTO ddl_t VALUES (5, 5, 'z', 1.5);
ALTER TABLE ddl_t DROP COLUMN b;
INSERT INTO ddl_t VALUES (6, 6, 7);
COMMIT;
ALTER TABLE ddl_t ADD COLUMN g int GENERATED ALWAYS AS (id * 10) STORED;
INSERT INTO ddl_t VALUES (7, 7, 7);
ANALYZE ddl_t;                                -- invalidates, changes nothing
CREATE INDEX ON ddl_t (a);
INSERT INTO ddl_t VALUES (8, 8, 8);
ALTER TABLE ddl_t REPLICA IDENTITY FULL;      -- identity is part of the description
UPDATE ddl_t SET a = 9 WHERE id = 8;

SELECT * FROM pg_temp.changes('ddl_slot');

-- the binary format sends the same relation records
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('ddl_slot', NULL, NULL, 'format', 'json'))
     = array(SELECT x::text FROM replicant.peek_changes('ddl_slot') AS x) AS json_equals_binary;

-- consume the first transaction: the next session describes the table
-- again before the second one, which the first session did not need to
SELECT count(*) AS consumed FROM pg_logical_slot_get_changes('ddl_slot', :'after_first', NULL, 'format', 'json');
SELECT * FROM pg_temp.changes('ddl_slot') LIMIT 3;

SELECT pg_drop_replication_slot('ddl_slot');
DROP TABLE ddl_t;
