-- Options: every bad option is an ERROR that names it (checked when the
-- decoding session starts, before anything is decoded); good ones pass.
SELECT 'init' FROM pg_create_logical_replication_slot('options_slot', 'replicant');
CREATE TABLE opt_t (id int);
INSERT INTO opt_t VALUES (1);

-- unknown and duplicate options
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'bogus', '1');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'format', 'json');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json',
  'frame_size', '1024', 'frame_size', '2048');
-- bad values
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'xml');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'streaming', 'maybe');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'include_messages', '2');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'skip_empty_xacts', '');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'actions', 'insert,upsert');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'origin', 'some');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'frame_size', '1023');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'frame_size', '67108865');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'frame_size', '64kB');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'proto_version', '5');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'proto_version', '0');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'proto_version', 'one');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'include_tables', 'a.b.c');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'exclude_tables', 'a,,b');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'exclude_tables', '"unterminated');
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL, 'format', 'json', 'message_prefixes', 'a,"b');
-- the binary format (the default) cannot be read as text
SELECT data FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL);

-- every option at a valid value, in the binary and the JSON format
SELECT count(*) > 0 AS decoded
FROM pg_logical_slot_peek_binary_changes('options_slot', NULL, NULL,
  'proto_version', '1', 'format', 'binary', 'include_tables', '*', 'exclude_tables', 'nothing.*',
  'actions', 'insert,update,delete,truncate', 'include_messages', 'on', 'message_prefixes', 'a,b',
  'origin', 'any', 'streaming', 'on', 'skip_empty_xacts', 'off', 'frame_size', '67108864');
SELECT count(*) > 0 AS decoded
FROM pg_logical_slot_peek_changes('options_slot', NULL, NULL,
  'proto_version', '1', 'format', 'json', 'include_tables', 'opt_t', 'exclude_tables', '',
  'actions', 'Insert, DELETE', 'include_messages', 'no', 'message_prefixes', '',
  'origin', 'none', 'streaming', 'off', 'skip_empty_xacts', 'true', 'frame_size', '1024');

SELECT pg_drop_replication_slot('options_slot');
DROP TABLE opt_t;
