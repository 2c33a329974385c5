#!/usr/bin/env bash
# A first look at replicant:  bash regress/demo.sh
#
# Builds and installs replicant (like regress/run_tests.sh), starts a throwaway source
# cluster, creates a logical replication slot with the replicant output plugin, runs a small
# workload and streams it with pg_recvlogical in replicant's JSON format. Everything it
# starts is stopped and deleted at the end (RP_KEEP_CLUSTERS=1 keeps the cluster).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/lib.sh"

if [[ ${1:-} != --phase-demo ]]; then
	rp_build_install || exit 1
	rc=0
	rp_run_unprivileged regress/demo.sh --phase-demo || rc=$?
	exit "$rc"
fi

# ---------------------------------------------------------------- the demo, unprivileged
trap rp_cluster_cleanup_all EXIT
SLOT=demo_slot
LOG=$RP_ROOT/regress/log/demo-changes.json
mkdir -p "$(dirname "$LOG")"

src_sql() { rp_psql src -d demo "$@"; }

# 1. A source cluster with wal_level = logical and replicant in output_plugin_libraries.
demo_source() {
	rp_say "1. source cluster"
	rp_cluster_start src
	rp_psql src -c 'CREATE DATABASE demo'
	printf '   %s\n' "$(rp_conninfo src demo)"
	src_sql <<-'SQL'
		CREATE TABLE item (
		    id       bigint PRIMARY KEY,
		    name     text NOT NULL,
		    qty      integer,
		    price    numeric(12,2),
		    ratio    double precision,
		    in_stock boolean,
		    tags     text[],
		    attrs    jsonb,
		    uid      uuid,
		    added    timestamptz,
		    due      date,
		    photo    bytea
		);
		-- no primary key and the default replica identity: updates and deletes carry no old key
		CREATE TABLE note (body text, at timestamptz DEFAULT now());
	SQL
}

# 2. A logical slot that decodes with the replicant output plugin.
demo_slot() {
	rp_say "2. slot $SLOT with plugin replicant"
	if ! "$RP_BINDIR/pg_recvlogical" -d "$(rp_conninfo src demo)" -S "$SLOT" --create-slot -P replicant; then
		rp_die "could not create a slot with the replicant plugin: is it built and installed (make install), and listed in output_plugin_libraries?"
	fi
}

# 3. A small workload: inserts, updates (one changes the key), deletes, a truncate and
#    logical messages, in a few transactions.
demo_workload() {
	rp_say "3. workload"
	src_sql >/dev/null <<-'SQL'
		BEGIN;
		INSERT INTO item VALUES
		  (1, 'kettle', 3, 24.90, 0.5, true, '{steel,kitchen}', '{"color": "red", "watts": 2200}',
		   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-05-01 12:00:00+02', '2024-06-01', '\x00ff10'),
		  (2, 'lamp', 0, 'NaN', 'Infinity', false, '{}', '[]', NULL, 'infinity', NULL, NULL),
		  (3, 'rug', NULL, 199.00, -0.0, NULL, ARRAY[NULL, 'wool'], 'null', NULL, '-infinity', '1999-12-31', '');
		SELECT pg_logical_emit_message(true, 'demo', 'stock loaded');
		COMMIT;

		UPDATE item SET qty = qty + 1, price = price * 1.1 WHERE id = 1;
		UPDATE item SET id = 20 WHERE id = 2;
		DELETE FROM item WHERE id = 3;

		INSERT INTO note (body) VALUES ('first'), ('second');
		UPDATE note SET body = 'first, edited' WHERE body = 'first';
		TRUNCATE note;

		SELECT pg_logical_emit_message(false, 'demo', 'not part of any transaction');
	SQL
}

# 4. Stream everything up to the current WAL position into a log file.
demo_log() {
	local lsn
	# The insert position: a non-transactional message is not flushed at once, so the
	# write position (pg_current_wal_lsn) can lag behind it.
	lsn=$(src_sql -Atc 'SELECT pg_current_wal_insert_lsn()')
	rp_say "4. pg_recvlogical --start -o format=json --endpos=$lsn"
	timeout 120 "$RP_BINDIR/pg_recvlogical" -d "$(rp_conninfo src demo)" -S "$SLOT" --start \
		-o format=json --endpos="$lsn" --no-loop -f "$LOG"
	rp_say "the change log ($LOG):"
	cat "$LOG"
	src_sql -c "SELECT slot_name, plugin, confirmed_flush_lsn FROM pg_replication_slots"
}

# The steps, in order. The mirror (the replicant consumer applying the same slot to a second
# cluster) becomes step 5, between the log and the end.
demo_source
demo_slot
demo_workload
demo_log
rp_say "done: stopping and deleting the cluster"
