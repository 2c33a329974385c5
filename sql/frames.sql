-- The binary format and the SQL API: records are batched into frames (one
-- row of pg_logical_slot_*_binary_changes each), flushed at commit and when
-- a frame passes frame_size; replicant.decode renders frames as JSON, and
-- refuses a damaged frame with a message that names no value.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
CREATE TABLE frame_t (id int PRIMARY KEY, secret text);

SELECT slot_name FROM replicant.create_slot('frames_slot');
INSERT INTO frame_t SELECT g, 'canary-' || g FROM generate_series(1, 1000) g;

-- 1000 inserts in one transaction: a handful of frames by default (256 kB),
-- many more with frame_size=1024; the records are the same either way
SELECT count(*) < 10 AS few_frames,
       bool_and(substr(data, 1, 2) = '\x5201'::bytea) AS magic_and_version
FROM pg_logical_slot_peek_binary_changes('frames_slot', NULL, NULL);
SELECT count(*) > 20 AS many_frames, max(length(data)) < 1024 + 200 AS bounded
FROM pg_logical_slot_peek_binary_changes('frames_slot', NULL, NULL, 'frame_size', '1024');
SELECT array(SELECT x::text FROM replicant.peek_changes('frames_slot') AS x)
     = array(SELECT x::text FROM replicant.peek_changes('frames_slot', NULL, NULL, 'frame_size', '1024') AS x)
       AS same_records,
       (SELECT count(*) FROM replicant.peek_changes('frames_slot')) AS records;
-- JSON format: one record per row, same records
SELECT array(SELECT x::text FROM replicant.peek_changes('frames_slot') AS x)
     = array(SELECT data FROM pg_logical_slot_peek_changes('frames_slot', NULL, NULL, 'format', 'json'))
       AS json_equals_binary;

-- replicant.decode: frames in order; empty input, NULL input, a NULL frame
SELECT count(*) AS records FROM replicant.decode(array(
  SELECT data FROM pg_logical_slot_peek_binary_changes('frames_slot', NULL, NULL, 'frame_size', '1024')));
SELECT count(*) AS records FROM replicant.decode('{}');
SELECT count(*) AS records FROM replicant.decode(NULL);
SELECT count(*) AS records FROM replicant.decode(array['\x5201'::bytea]);
SELECT * FROM replicant.decode(array[NULL::bytea]);

-- damaged frames: the error says what is wrong and where, never a value
-- (the canary values of frame_t must not appear in any message)
CREATE FUNCTION pg_temp.decode_error(frames bytea[]) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM replicant.decode(frames);
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN format('%s: %s%s', sqlstate, regexp_replace(sqlerrm, 'relation [0-9]+', 'relation N'),
                CASE WHEN sqlerrm LIKE '%canary%' THEN ' [LEAKS A VALUE]' ELSE '' END);
END $$;
CREATE TEMP TABLE frame1 AS
  SELECT data AS f FROM pg_logical_slot_peek_binary_changes('frames_slot', NULL, NULL, 'frame_size', '1024') LIMIT 1;
-- the first frame: begin (2 + 25 bytes), relation, then inserts
SELECT get_byte(f, 2) = ascii('B') AND get_byte(f, 27) = ascii('R') AS layout FROM frame1;
-- cut short, inside the last record
SELECT pg_temp.decode_error(array[substr(f, 1, length(f) - 3)]) FROM frame1;
-- a record length that runs past the end of the frame
SELECT pg_temp.decode_error(array[overlay(f placing '\x7fffffff'::bytea from 4 for 4)]) FROM frame1;
-- an unknown record tag
SELECT pg_temp.decode_error(array[overlay(f placing '\x5a'::bytea from 3 for 1)]) FROM frame1;
-- an insert whose datum kind byte is not one of n, v, u
SELECT pg_temp.decode_error(array[overlay(f placing 'x'::bytea
         from position('canary-'::bytea in f) - 5 for 1)]) FROM frame1;
-- a change for a relation no relation record described (frames out of order)
SELECT pg_temp.decode_error(array[(SELECT data FROM pg_logical_slot_peek_binary_changes('frames_slot', NULL, NULL,
                                   'frame_size', '1024') OFFSET 1 LIMIT 1)]);
-- not a frame at all, another protocol version, an empty frame
SELECT pg_temp.decode_error(array['\x7b226b696e64223a317d'::bytea]);
SELECT pg_temp.decode_error(array['\x5205'::bytea || substr(f, 3)]) FROM frame1;
SELECT pg_temp.decode_error(array['\x5200'::bytea]);
SELECT pg_temp.decode_error(array[''::bytea]);
-- the same through the error path of the SQL function itself
\set VERBOSITY terse
SELECT * FROM replicant.decode(array['\x5205'::bytea]);
SELECT * FROM replicant.decode((SELECT array[f, substr(f, 1, 100)] FROM frame1));
\set VERBOSITY default

-- get_changes consumes what it returns; emit_message goes through the slot
SELECT count(*) AS records FROM replicant.get_changes('frames_slot');
SELECT count(*) AS records FROM replicant.get_changes('frames_slot');
SELECT 'sent' FROM replicant.emit_message('frames', 'hello');
SELECT x::jsonb - 'xid' - 'lsn' - 'final_lsn' - 'commit_lsn' - 'end_lsn' - 'commit_time' AS record
FROM replicant.get_changes('frames_slot') AS x;

SELECT pg_drop_replication_slot('frames_slot');
-- a temporary slot
SELECT slot_name FROM replicant.create_slot('frames_temp_slot', true);
SELECT temporary FROM pg_replication_slots WHERE slot_name = 'frames_temp_slot';
SELECT pg_drop_replication_slot('frames_temp_slot');
DROP TABLE frame_t;
