-- Replication origins: a transaction replayed under an origin is followed
-- by an "origin" record after its BEGIN with origin=any (the default), and
-- is not sent at all with origin=none (how a two-way setup avoids loops).
CREATE FUNCTION pg_temp.changes(VARIADIC opts text[] DEFAULT '{}') RETURNS SETOF text LANGUAGE sql AS $$
  SELECT regexp_replace(data, ',"(xid|final_lsn|commit_lsn|end_lsn|commit_time|lsn|relid)":("[^"]*"|[0-9]+)', '', 'g')
  FROM pg_logical_slot_peek_changes('origin_slot', NULL, NULL, VARIADIC array['format', 'json'] || opts)
  WHERE data NOT LIKE '{"kind":"relation"%' $$;
CREATE TABLE orig_t (id int);
SELECT pg_replication_origin_create('regress_upstream') IS NOT NULL AS created;

SELECT 'init' FROM pg_create_logical_replication_slot('origin_slot', 'replicant');

INSERT INTO orig_t VALUES (1);                         -- local
SELECT pg_replication_origin_session_setup('regress_upstream');
BEGIN;
SELECT pg_replication_origin_xact_setup('1/ABCDEF0', '2020-01-01 00:00:00+00');
INSERT INTO orig_t VALUES (2);                         -- replayed
COMMIT;
SELECT 'sent' FROM pg_logical_emit_message(false, 'p', 'replayed message');
BEGIN;
SELECT pg_replication_origin_xact_setup('1/ABCDEF8', '2020-01-01 00:00:01+00');
INSERT INTO orig_t VALUES (3);                         -- replayed
SELECT 'sent' FROM pg_logical_emit_message(true, 'p', 'replayed in a transaction');
COMMIT;
SELECT pg_replication_origin_session_reset();
INSERT INTO orig_t VALUES (4);                         -- local again

SELECT * FROM pg_temp.changes();
SELECT * FROM pg_temp.changes('origin', 'any');
SELECT * FROM pg_temp.changes('origin', 'none');

SELECT pg_drop_replication_slot('origin_slot');
SELECT pg_replication_origin_drop('regress_upstream');
DROP TABLE orig_t;
