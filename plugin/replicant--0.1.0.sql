/* replicant--0.1.0.sql: the SQL API of the replicant extension */

\echo Use "CREATE EXTENSION replicant" to load this file. \quit

-- Binary frames (pg_logical_slot_*_binary_changes output, in order) as one
-- JSON object per record, rendered by the same codec the consumer uses.
CREATE FUNCTION replicant.decode(frames bytea[])
RETURNS SETOF json
AS 'MODULE_PATHNAME', 'replicant_decode'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION replicant.decode(bytea[]) IS
'render replicant binary frames as JSON records';

-- Look at pending changes of a replicant slot without consuming them.
CREATE FUNCTION replicant.peek_changes(slot_name name, upto_lsn pg_lsn DEFAULT NULL,
                                       upto_nchanges int DEFAULT NULL,
                                       VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF json
LANGUAGE sql VOLATILE
AS $$
  SELECT * FROM replicant.decode(ARRAY(
    SELECT data FROM pg_catalog.pg_logical_slot_peek_binary_changes(
      slot_name, upto_lsn, upto_nchanges, VARIADIC options)))
$$;

-- Consume pending changes of a replicant slot, returned as JSON records.
CREATE FUNCTION replicant.get_changes(slot_name name, upto_lsn pg_lsn DEFAULT NULL,
                                      upto_nchanges int DEFAULT NULL,
                                      VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF json
LANGUAGE sql VOLATILE
AS $$
  SELECT * FROM replicant.decode(ARRAY(
    SELECT data FROM pg_catalog.pg_logical_slot_get_binary_changes(
      slot_name, upto_lsn, upto_nchanges, VARIADIC options)))
$$;

-- A logical replication slot that decodes with the replicant plugin.
CREATE FUNCTION replicant.create_slot(slot_name name, temporary boolean DEFAULT false,
                                      OUT slot_name name, OUT lsn pg_lsn)
LANGUAGE sql VOLATILE
AS $$
  SELECT * FROM pg_catalog.pg_create_logical_replication_slot(
    create_slot.slot_name, 'replicant', create_slot.temporary)
$$;

-- Emit a logical decoding message (routed by prefix by the consumer's sinks).
CREATE FUNCTION replicant.emit_message(prefix text, content text,
                                       transactional boolean DEFAULT true)
RETURNS pg_lsn
LANGUAGE sql VOLATILE
AS $$
  SELECT pg_catalog.pg_logical_emit_message(transactional, prefix, content)
$$;
