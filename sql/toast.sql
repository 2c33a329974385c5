-- NULL, unchanged TOAST and "not in the identity" are three different things:
-- an UPDATE that leaves a TOASTed column alone lists it in "unchanged_toast"
-- and leaves it out of "new" (it is not NULL), an UPDATE that sets it NULL
-- says null, and an old key leaves out the columns that are not in the key.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
CREATE TABLE toast_t (id int PRIMARY KEY, big text, other int);
CREATE TABLE toast_full (id int PRIMARY KEY, big text, other int);
ALTER TABLE toast_full REPLICA IDENTITY FULL;
-- 64 kB of md5 hex: incompressible enough to be stored out of line
CREATE TEMP TABLE toast_src AS
  SELECT string_agg(md5(random()::text), '') AS big FROM generate_series(1, 2000);

SELECT 'init' FROM pg_create_logical_replication_slot('toast_slot', 'replicant');

INSERT INTO toast_t SELECT 1, big, 0 FROM toast_src;
UPDATE toast_t SET other = 1;                -- big unchanged: not sent
UPDATE toast_t SET id = 2, other = 2;        -- key change: old key, big still unchanged
UPDATE toast_t SET big = NULL, other = 3;    -- now it is NULL
UPDATE toast_t SET big = 'small', other = 4; -- and a plain value
DELETE FROM toast_t;
INSERT INTO toast_full SELECT 1, big, 0 FROM toast_src;
UPDATE toast_full SET other = 1;             -- FULL: the old row has the whole value
DELETE FROM toast_full;

-- a 64 kB value is shown as whether it equals the source value
SELECT kind, tab,
       CASE WHEN length(j->'new'->>'big') > 100
            THEN jsonb_set(j->'new', '{big}', to_jsonb(j->'new'->>'big' = (SELECT big FROM toast_src)))
            ELSE j->'new' END AS new,
       j->'unchanged_toast' AS unchanged_toast,
       j->'key' AS key,
       CASE WHEN length(j->'old'->>'big') > 100
            THEN jsonb_set(j->'old', '{big}', to_jsonb(j->'old'->>'big' = (SELECT big FROM toast_src)))
            ELSE j->'old' END AS old
FROM (SELECT data::jsonb AS j, data::jsonb->>'kind' AS kind, data::jsonb->>'table' AS tab
      FROM pg_logical_slot_peek_changes('toast_slot', NULL, NULL, 'format', 'json')) s
WHERE kind IN ('insert', 'update', 'delete');

-- the short records as sent
SELECT data FROM pg_logical_slot_peek_changes('toast_slot', NULL, NULL, 'format', 'json')
WHERE data LIKE '{"kind":"update"%' AND length(data) < 200;

-- the binary format carries the same distinction
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('toast_slot', NULL, NULL, 'format', 'json'))
     = array(SELECT x::text FROM replicant.peek_changes('toast_slot') AS x) AS json_equals_binary;

SELECT pg_drop_replication_slot('toast_slot');
DROP TABLE toast_t, toast_full;
