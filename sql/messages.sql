-- Logical decoding messages: transactional ones inside their transaction,
-- non-transactional ones on their own and at once; text content as
-- "content", anything else (not UTF-8, or holding a NUL) as "content_base64".
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
CREATE FUNCTION pg_temp.changes(slot name, VARIADIC opts text[] DEFAULT '{}') RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regexp_replace(data, ',"(xid|final_lsn|commit_lsn|end_lsn|commit_time|lsn|relid)":("[^"]*"|[0-9]+)', '', 'g')
  FROM pg_logical_slot_peek_changes(slot, NULL, NULL, VARIADIC array['format', 'json'] || opts)
  WHERE data NOT LIKE '{"kind":"relation"%' $$;
CREATE TABLE msg_t (id int);

SELECT 'init' FROM pg_create_logical_replication_slot('messages_slot', 'replicant');

SELECT 'sent' FROM pg_logical_emit_message(true, 'app', 'transactional text');
SELECT 'sent' FROM pg_logical_emit_message(false, 'app', 'non-transactional');
SELECT 'sent' FROM pg_logical_emit_message(true, 'bin', '\x00ff10'::bytea);
SELECT 'sent' FROM pg_logical_emit_message(true, 'nul', '\x610062'::bytea);  -- UTF-8, but a NUL
SELECT 'sent' FROM pg_logical_emit_message(true, 'app', E'unicode ☺ "quoted"\nline');
SELECT 'sent' FROM pg_logical_emit_message(true, '', '');
-- inside a transaction that rolls back: the transactional message goes with
-- it, the non-transactional one was sent when it was written
BEGIN;
INSERT INTO msg_t VALUES (1);
SELECT 'sent' FROM pg_logical_emit_message(true, 'app', 'rolled back');
SELECT 'sent' FROM pg_logical_emit_message(false, 'app', 'sent anyway');
ROLLBACK;
BEGIN;
INSERT INTO msg_t VALUES (2);
SELECT 'sent' FROM pg_logical_emit_message(true, 'other', 'with a row');
COMMIT;
-- (a non-transactional message does not flush the WAL: a commit follows
-- each one here so that the SQL interface, which reads flushed WAL, sees it)
SELECT 'sent' FROM replicant.emit_message('api', 'not transactional', false);
SELECT 'sent' FROM replicant.emit_message('api', 'through the extension');

SELECT * FROM pg_temp.changes('messages_slot');
-- the message content decodes back to the bytes written
SELECT data::jsonb->>'prefix' AS prefix, decode(data::jsonb->>'content_base64', 'base64') AS content
FROM pg_logical_slot_peek_changes('messages_slot', NULL, NULL, 'format', 'json')
WHERE data::jsonb ? 'content_base64';
-- include_messages=false: none; a transaction holding only messages is then empty
SELECT * FROM pg_temp.changes('messages_slot', 'include_messages', 'false');
-- message_prefixes: only those prefixes (exact match)
SELECT * FROM pg_temp.changes('messages_slot', 'message_prefixes', 'api,bin');
SELECT * FROM pg_temp.changes('messages_slot', 'message_prefixes', 'ap');
-- the binary format says the same
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('messages_slot', NULL, NULL, 'format', 'json'))
     = array(SELECT x::text FROM replicant.peek_changes('messages_slot') AS x) AS json_equals_binary;

SELECT pg_drop_replication_slot('messages_slot');
DROP TABLE msg_t;
