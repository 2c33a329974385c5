#!/usr/bin/env bash
# A first look at replicant:  bash regress/demo.sh
#                              bash regress/demo.sh --installed   (replicant as installed:
#                              the packages, PGXN or an earlier make install; nothing built)
#
# Builds and installs replicant (like regress/run_tests.sh), starts a throwaway source and
# destination cluster, creates two slots with the replicant output plugin, runs a small
# workload, and streams it with the replicant consumer into a mirror (the destination
# cluster, tables created from the source's description) and into an append-only log
# (JSON lines with checkpoint lines), then compares source and mirror. Everything it
# starts is stopped and deleted at the end (RP_KEEP_CLUSTERS=1 keeps the clusters).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/lib.sh"

if [[ ${1:-} != --phase-demo ]]; then
	case ${1:-} in
	'')
		rp_build_install || exit 1
		consumer=$RP_BINDIR/replicant
		;;
	--installed)
		# the consumer on the PATH and the plugin in the server's library folder, neither
		# from this tree
		consumer=$(command -v replicant) || rp_die "--installed: no replicant on the PATH"
		[[ $(realpath "$consumer") != "$(realpath "$RP_ROOT")"/* ]] ||
			rp_die "--installed: $consumer is this tree's build"
		[[ -f $("$PG_CONFIG" --pkglibdir)/replicant.so ]] ||
			rp_die "--installed: no replicant.so in $("$PG_CONFIG" --pkglibdir)"
		;;
	*)
		echo "usage: bash regress/demo.sh [--installed]" >&2
		exit 2
		;;
	esac
	rc=0
	rp_run_unprivileged regress/demo.sh --phase-demo "$consumer" || rc=$?
	exit "$rc"
fi

# ---------------------------------------------------------------- the demo, unprivileged
trap rp_cluster_cleanup_all EXIT
SLOT=demo_slot
LOG=$RP_ROOT/regress/log/demo-changes.jsonl
STATE=$RP_ROOT/regress/log/demo-state
REPLICANT=${2:-$RP_BINDIR/replicant}
rp_say "the consumer: $REPLICANT; the plugin: $("$PG_CONFIG" --pkglibdir)/replicant.so"
mkdir -p "$(dirname "$LOG")"

src_sql() { rp_psql src -d demo "$@"; }

# 1. Source and destination clusters (wal_level = logical, replicant in
#    output_plugin_libraries where the server knows that setting).
demo_source() {
	rp_say "1. source and destination clusters"
	rp_cluster_start src
	rp_cluster_start dst
	rp_psql src -c 'CREATE DATABASE demo'
	rp_psql dst -c 'CREATE DATABASE mirror'
	printf '   source:      %s\n   destination: %s\n' "$(rp_conninfo src demo)" "$(rp_conninfo dst mirror)"
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
		-- no primary key: REPLICA IDENTITY FULL lets the mirror match rows on all columns
		CREATE TABLE note (body text, at timestamptz DEFAULT now());
		ALTER TABLE note REPLICA IDENTITY FULL;
	SQL
}

# 2. Two logical slots that decode with the replicant output plugin: one per consumer.
demo_slot() {
	local s
	for s in "${SLOT}_mirror" "${SLOT}_log"; do
		rp_say "2. replicant --create-slot -S $s"
		if ! "$REPLICANT" -d "$(rp_conninfo src demo)" -S "$s" --create-slot; then
			rp_die "could not create a slot with the replicant plugin: is it built and installed (make install), and listed in output_plugin_libraries?"
		fi
	done
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

# 4. The mirror: apply the stream to the destination, tables created from the source's
#    description, up to the current WAL position (a transaction boundary at or after it).
demo_mirror() {
	local lsn
	lsn=$(src_sql -Atc 'SELECT pg_current_wal_insert_lsn()')
	rp_say "4. replicant --start --sink postgres:... --create-tables -E $lsn"
	timeout 120 "$REPLICANT" -d "$(rp_conninfo src demo)" -S "${SLOT}_mirror" --start \
		--sink "postgres:$(rp_conninfo dst mirror)" --create-tables --message-route demo \
		--state-dir "$STATE" -E "$lsn" --no-loop
	rp_psql dst -d mirror -c 'TABLE item ORDER BY id' -c 'TABLE note' \
		-c 'SELECT prefix, convert_from(content, $$UTF8$$) AS content, transactional FROM replicant.messages' \
		-c 'SELECT slot, commit_lsn, end_lsn FROM replicant.checkpoint'
	local a b
	a=$(src_sql -Atc 'SELECT md5(string_agg(i::text, $$|$$ ORDER BY id)) FROM item i')
	b=$(rp_psql dst -d mirror -Atc 'SELECT md5(string_agg(i::text, $$|$$ ORDER BY id)) FROM item i')
	[[ $a == "$b" ]] || rp_die "mirror differs from the source (item: $a vs $b)"
	rp_say "   source and mirror agree (item md5 $a)"
}

# 5. The log: the same changes as JSON lines, one per change, with checkpoint lines; run
#    twice to show that a restart resumes from the log's own checkpoint (nothing doubled).
demo_log() {
	local lsn
	lsn=$(src_sql -Atc 'SELECT pg_current_wal_insert_lsn()')
	rp_say "5. replicant --start --sink file:$LOG -E $lsn (twice)"
	rm -f "$LOG"
	timeout 120 "$REPLICANT" -d "$(rp_conninfo src demo)" -S "${SLOT}_log" --start \
		--sink "file:$LOG" --state-dir "$STATE" -E "$lsn" --no-loop
	timeout 120 "$REPLICANT" -d "$(rp_conninfo src demo)" -S "${SLOT}_log" --start \
		--sink "file:$LOG" --state-dir "$STATE" -E "$lsn" --no-loop
	rp_say "the change log ($LOG):"
	cat "$LOG"
	src_sql -c "SELECT slot_name, plugin, confirmed_flush_lsn FROM pg_replication_slots"
}

demo_source
demo_slot
demo_workload
demo_mirror
demo_log
rp_say "done: stopping and deleting the clusters"
