-- Streaming of in-progress transactions (streaming=on): a transaction that
-- outgrows logical_decoding_work_mem is sent in stream blocks before it
-- commits; the rows of a rolled-back subtransaction are sent too, then
-- covered by a stream_abort naming it.  Block boundaries depend on memory
-- accounting, so they are summarised rather than printed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS replicant;
RESET client_min_messages;
CREATE TABLE stream_t (id int PRIMARY KEY, pad text);
SELECT 'init' FROM pg_create_logical_replication_slot('streaming_slot', 'replicant');

BEGIN;
INSERT INTO stream_t SELECT g, repeat('x', 100) FROM generate_series(1, 1000) g;
SAVEPOINT a;
INSERT INTO stream_t SELECT g, repeat('y', 100) FROM generate_series(1001, 2000) g;
ROLLBACK TO SAVEPOINT a;
RELEASE SAVEPOINT a;
INSERT INTO stream_t SELECT g, repeat('z', 100) FROM generate_series(2001, 2500) g;
COMMIT;

SET logical_decoding_work_mem = '64kB';
CREATE TEMP TABLE streamed AS
  SELECT n, data::jsonb AS r
  FROM pg_logical_slot_peek_changes('streaming_slot', NULL, NULL, 'format', 'json', 'streaming', 'on')
       WITH ORDINALITY AS t(lsn, xid, data, n);

-- the kinds of record sent: stream blocks only, no begin or commit
SELECT r->>'kind' AS kind, count(*) > 0 AS sent FROM streamed GROUP BY 1 ORDER BY 1;
-- blocks are well formed: start and stop alternate, only the first block
-- is marked first_segment, every change is inside a block
WITH marks AS (
  SELECT n, r->>'kind' AS kind, r->>'xid' AS xid, (r->>'first_segment')::bool AS first,
         lag(r->>'kind') OVER (ORDER BY n) AS prev_mark
  FROM streamed WHERE r->>'kind' IN ('stream_start', 'stream_stop'))
SELECT (SELECT count(*) FROM marks WHERE kind = 'stream_start')
         = (SELECT count(*) FROM marks WHERE kind = 'stream_stop') AS balanced,
       (SELECT count(*) FROM marks WHERE kind = 'stream_start') > 2 AS several_blocks,
       (SELECT bool_and(prev_mark IS DISTINCT FROM kind) FROM marks) AS alternating,
       (SELECT bool_and(first = (n = 1)) FROM marks WHERE kind = 'stream_start') AS first_segment_ok,
       (SELECT bool_and((SELECT kind FROM marks WHERE marks.n < s.n ORDER BY marks.n DESC LIMIT 1) = 'stream_start')
        FROM streamed s WHERE r->>'kind' IN ('insert', 'relation')) AS changes_inside_blocks;

-- the transaction and its rolled-back subtransaction, as named by the
-- stream_commit and the stream_abort (which come last, in this order)
CREATE TEMP TABLE ends AS
  SELECT (SELECT (r->>'xid')::bigint FROM streamed WHERE r->>'kind' = 'stream_commit') AS committed,
         (SELECT (r->>'subxid')::bigint FROM streamed WHERE r->>'kind' = 'stream_abort') AS aborted_sub;
SELECT n = (SELECT max(n) FROM streamed) AS last, r - 'xid' - 'subxid' - 'commit_lsn' - 'end_lsn' - 'commit_time' AS record,
       (r->>'xid')::bigint = committed AS of_the_transaction, aborted_sub <> committed AS subxid_differs
FROM streamed, ends
WHERE r->>'kind' IN ('stream_commit', 'stream_abort') ORDER BY n;
-- the rows, by the (sub)transaction each change names: the transaction's
-- own 1500 rows, and some of the 1000 rolled-back ones (those streamed
-- before the rollback), all ahead of the stream_abort that cancels them
WITH c AS (SELECT n, (r->>'xid')::bigint AS xid, (r->'new'->>'id')::int AS id
           FROM streamed WHERE r->>'kind' = 'insert'),
     a AS (SELECT n FROM streamed WHERE r->>'kind' = 'stream_abort')
SELECT (SELECT count(*) FROM c, ends WHERE xid = committed) AS committed_rows,
       (SELECT count(*) BETWEEN 1 AND 1000 FROM c, ends WHERE xid = aborted_sub) AS some_rolled_back_sent,
       (SELECT bool_and(id BETWEEN 1001 AND 2000 AND c.n < a.n) FROM c, ends, a
        WHERE xid = aborted_sub) AS all_before_their_abort,
       (SELECT count(*) FROM c, ends WHERE xid NOT IN (committed, aborted_sub)) AS other_rows;
-- the committed transaction's own rows are exactly the surviving ones
SELECT array_agg((r->'new'->>'id')::int ORDER BY (r->'new'->>'id')::int)
       = array(SELECT g FROM generate_series(1, 1000) g UNION ALL SELECT g FROM generate_series(2001, 2500) g)
       AS surviving_rows
FROM streamed, ends WHERE r->>'kind' = 'insert' AND (r->>'xid')::bigint = committed;

-- the binary format sends the same records
SELECT array(SELECT data FROM pg_logical_slot_peek_changes('streaming_slot', NULL, NULL, 'format', 'json', 'streaming', 'on'))
     = array(SELECT x::text FROM replicant.peek_changes('streaming_slot', NULL, NULL, 'streaming', 'on') AS x)
       AS json_equals_binary;

-- without streaming the same transaction comes whole at its commit, with
-- only the surviving rows
SELECT r->>'kind' AS kind, count(*), min((r->'new'->>'id')::int), max((r->'new'->>'id')::int),
       count(DISTINCT r->'new'->>'id') AS distinct_ids
FROM (SELECT data::jsonb AS r
      FROM pg_logical_slot_peek_changes('streaming_slot', NULL, NULL, 'format', 'json', 'streaming', 'off')) s
GROUP BY 1 ORDER BY 1;
-- nor does it stream when it fits in memory
RESET logical_decoding_work_mem;
SELECT r->>'kind' AS kind, count(*)
FROM (SELECT data::jsonb AS r
      FROM pg_logical_slot_peek_changes('streaming_slot', NULL, NULL, 'format', 'json', 'streaming', 'on')) s
GROUP BY 1 ORDER BY 1;

SELECT pg_drop_replication_slot('streaming_slot');
DROP TABLE stream_t;
