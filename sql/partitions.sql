-- partitions=leaf|root: a partition's changes named as the partition (leaf,
-- the default) or as its topmost partitioned table (root), the row in the
-- root's column order; in root mode the root's Relation record carries a
-- fingerprint of its leaf partitions, so ATTACH and DETACH PARTITION show.
CREATE EXTENSION IF NOT EXISTS replicant;
SELECT 'init' FROM pg_create_logical_replication_slot('part_slot', 'replicant');

-- Records as short lines: relations with their columns and, for a root, a
-- label per distinct partition_set in order of appearance; changes without
-- xid and relid; begin and commit as their kind.
CREATE FUNCTION pg_temp.changes(VARIADIC opts text[] DEFAULT '{}') RETURNS SETOF text
LANGUAGE sql AS $$
  WITH c AS (
    SELECT n, data, data::jsonb AS j
    FROM pg_logical_slot_peek_changes('part_slot', NULL, NULL,
                                      VARIADIC array['format', 'json'] || opts)
         WITH ORDINALITY AS t(lsn, xid, data, n)),
  sets AS (
    SELECT j->>'partition_set' AS ps, rank() OVER (ORDER BY min(n)) AS label
    FROM c WHERE j ? 'partition_set' GROUP BY 1)
  SELECT CASE
    WHEN j->>'kind' IN ('begin', 'commit') THEN j->>'kind'
    WHEN j->>'kind' = 'relation' THEN
      format('relation %s.%s identity %s%s (%s)', j->>'schema', j->>'table',
             j->>'replica_identity',
             CASE WHEN j ? 'partition_root'
                  THEN format(' partition_root %s set%s', j->>'partition_root', label) ELSE '' END,
             (SELECT string_agg(format('%s %s %s%s%s', col->>'name', col->>'attnum', col->>'type',
                                       CASE WHEN (col->>'primary_key')::bool THEN ' pk' ELSE '' END,
                                       CASE WHEN (col->>'identity')::bool THEN ' id' ELSE '' END),
                                ', ' ORDER BY o)
              FROM jsonb_array_elements(j->'columns') WITH ORDINALITY AS x(col, o)))
    ELSE regexp_replace(data, ',"(xid|relid)":("[^"]*"|[0-9]+)', '', 'g') END
  FROM c LEFT JOIN sets ON sets.ps = c.j->>'partition_set'
  ORDER BY n $$;

-- Two levels under m (list by region, then range by id), a default
-- partition, a dropped column in the root, and m_us made on its own with
-- its columns in another order and a dropped column of its own, attached.
CREATE TABLE m (id int NOT NULL, region text NOT NULL, gone int, amount numeric(10,2), note text,
                PRIMARY KEY (id, region)) PARTITION BY LIST (region);
ALTER TABLE m DROP COLUMN gone;
CREATE TABLE m_eu PARTITION OF m FOR VALUES IN ('eu') PARTITION BY RANGE (id);
CREATE TABLE m_eu_low PARTITION OF m_eu FOR VALUES FROM (0) TO (100);
CREATE TABLE m_eu_high PARTITION OF m_eu FOR VALUES FROM (100) TO (MAXVALUE);
CREATE TABLE m_other PARTITION OF m DEFAULT;
CREATE TABLE m_us (note text, scratch int, amount numeric(10,2), region text NOT NULL, id int NOT NULL);
ALTER TABLE m_us DROP COLUMN scratch;
ALTER TABLE m ATTACH PARTITION m_us FOR VALUES IN ('us');

INSERT INTO m VALUES (1, 'eu', 1.50, 'a'), (150, 'eu', 2.50, 'b'), (2, 'us', 3.50, 'c'),
                     (3, 'xx', 4.50, 'd');
UPDATE m SET amount = 9.99, note = 'within' WHERE id = 2;    -- stays in m_us
UPDATE m SET region = 'us', note = 'moved' WHERE id = 1;     -- m_eu_low to m_us
DELETE FROM m WHERE id = 3;
-- a table with a row of its own, attached: m gains a row no change names
CREATE TABLE m_asia (LIKE m);
INSERT INTO m_asia VALUES (7, 'asia', 7.00, 'pre-attach');
ALTER TABLE m ATTACH PARTITION m_asia FOR VALUES IN ('asia');
INSERT INTO m VALUES (8, 'asia', 8.00, 'attached');
-- and detached again: m loses two rows no change names
ALTER TABLE m DETACH PARTITION m_asia;
INSERT INTO m VALUES (9, 'eu', 9.00, 'after detach');
TRUNCATE m;

-- leaf (the default, and said explicitly): every change names its partition
SELECT * FROM pg_temp.changes();
SELECT (SELECT array_agg(x) FROM pg_temp.changes() x) =
       (SELECT array_agg(x) FROM pg_temp.changes('partitions', 'leaf') x) AS leaf_is_default;

-- root: every change names m, rows in m's column order; its Relation
-- record comes again when its partitions changed (set1 -> set2 -> set1)
SELECT * FROM pg_temp.changes('proto_version', '3', 'partitions', 'root');

-- the root's Relation record as it is (relid and the fingerprint masked)
SELECT regexp_replace(regexp_replace(data, '"relid":[0-9]+', '"relid":N'),
                      '"partition_set":"[0-9a-f]{8}"', '"partition_set":"HHHHHHHH"')
FROM pg_logical_slot_peek_changes('part_slot', NULL, NULL, 'format', 'json',
                                  'proto_version', '3', 'partitions', 'root')
WHERE data::jsonb->>'kind' = 'relation' AND data::jsonb ? 'partition_root' LIMIT 1;

-- filters apply to the published name: m's, not its partitions'
SELECT * FROM pg_temp.changes('proto_version', '3', 'partitions', 'root', 'include_tables', 'm',
                              'actions', 'insert,truncate');
SELECT count(*) AS partitions_not_named
FROM pg_temp.changes('proto_version', '3', 'partitions', 'root', 'include_tables', 'm_us,m_eu*');
SELECT count(*) AS excluded_root
FROM pg_temp.changes('proto_version', '3', 'partitions', 'root', 'exclude_tables', 'm,m_asia');

-- the binary format through the codec says the same as the JSON format
SELECT (SELECT array_agg(x::text) FROM replicant.peek_changes('part_slot', NULL, NULL,
          'proto_version', '3', 'partitions', 'root') x) =
       (SELECT array_agg(data) FROM pg_logical_slot_peek_changes('part_slot', NULL, NULL,
          'format', 'json', 'proto_version', '3', 'partitions', 'root')) AS binary_is_json;
-- version 3 adds 5 bytes (kind, partition_set) to each Relation record and
-- nothing else: a version 2 stream is what it was
SELECT (SELECT sum(octet_length(data)) FROM pg_logical_slot_peek_binary_changes('part_slot',
          NULL, NULL, 'proto_version', '3')) -
       (SELECT sum(octet_length(data)) FROM pg_logical_slot_peek_binary_changes('part_slot',
          NULL, NULL, 'proto_version', '2')) =
       5 * (SELECT count(*) FROM pg_temp.changes() x WHERE x LIKE 'relation %') AS v3_adds_kind_only;
SELECT count(*) FILTER (WHERE substr(data, 1, 2) <> '\x5202'::bytea) AS v2_frames_of_another_version
FROM pg_logical_slot_peek_binary_changes('part_slot', NULL, NULL, 'proto_version', '2');
-- version 4 adds the timeline of the WAL each commit was read from (4 bytes)
-- to each Commit record and nothing else; in JSON "timeline" ends the commit
SELECT (SELECT sum(octet_length(data)) FROM pg_logical_slot_peek_binary_changes('part_slot',
          NULL, NULL, 'proto_version', '4')) -
       (SELECT sum(octet_length(data)) FROM pg_logical_slot_peek_binary_changes('part_slot',
          NULL, NULL, 'proto_version', '3')) =
       4 * (SELECT count(*) FROM pg_temp.changes() x WHERE x = 'commit') AS v4_adds_timeline_only;
SELECT count(*) AS commits,
       count(*) FILTER (WHERE (data::jsonb->>'timeline')::int =
                        (SELECT timeline_id FROM pg_control_checkpoint())) AS on_this_timeline
FROM pg_logical_slot_peek_changes('part_slot', NULL, NULL, 'format', 'json', 'proto_version', '4')
WHERE data::jsonb->>'kind' = 'commit';
SELECT count(*) FILTER (WHERE data::jsonb ? 'timeline') AS v3_json_with_timeline
FROM pg_logical_slot_peek_changes('part_slot', NULL, NULL, 'format', 'json', 'proto_version', '3');
SELECT pg_replication_slot_advance('part_slot', pg_current_wal_lsn()) IS NOT NULL AS advanced;

-- A root whose partitions' replica identity does not cover its own: the
-- old tuples cannot name the row in the root's terms, so UPDATE and DELETE
-- go without identity until the partition matches.
CREATE TABLE f (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);
CREATE TABLE f1 PARTITION OF f FOR VALUES FROM (0) TO (10);
ALTER TABLE f REPLICA IDENTITY FULL;
INSERT INTO f VALUES (1, 1);
UPDATE f SET v = 2;
DELETE FROM f;
ALTER TABLE f1 REPLICA IDENTITY FULL;
INSERT INTO f VALUES (1, 1);
UPDATE f SET v = 2;
DELETE FROM f;
SELECT * FROM pg_temp.changes('proto_version', '3', 'partitions', 'root')
WHERE changes NOT IN ('begin', 'commit');

-- A TRUNCATE of some partitions cannot be said as a change of the root
-- (it would empty the others downstream): decoding stops there, naming them
INSERT INTO m VALUES (1, 'eu', 1.00, 'x');
TRUNCATE m_eu;
\set SHOW_CONTEXT never
SELECT * FROM pg_temp.changes('proto_version', '3', 'partitions', 'root');
\set SHOW_CONTEXT errors
SELECT * FROM pg_temp.changes('proto_version', '3', 'partitions', 'leaf')
WHERE changes LIKE '{"kind":"truncate"%';

-- bad values
SELECT * FROM pg_temp.changes('proto_version', '3', 'partitions', 'all');
SELECT * FROM pg_temp.changes('partitions', 'root');
SELECT * FROM pg_temp.changes('proto_version', '2', 'partitions', 'root');

SELECT pg_drop_replication_slot('part_slot');
DROP TABLE m, m_asia, f;
