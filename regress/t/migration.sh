#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/migration.sh: a database moved end to end (issue 17): --snapshot and the stream into
# an empty destination (--create-tables) under a workload, then the cutover recipe of
# docs/operations.md: stop writes, `replicant wait`, `replicant sync-sequences`, `replicant verify`, switch.
#
# Proves G1 through the cutover (once `replicant wait` returns, the destination equals the
# source table by table: wait's "passed" means the data is there) and the sequence rules of
# docs/operations.md: the snapshot's own sync creates and advances the destination's
# sequences (serial, identity, a standalone sequence used by a default, one no table uses);
# after sync-sequences a nextval on the destination collides with no copied key; a sequence
# set higher on the destination is never moved back; --margin moves the others on; a sequence
# missing on the destination is named and exit 1 without --create-tables, created with it;
# -o include_tables narrows the selection. `replicant wait` for an LSN the mirror cannot reach
# (its consumer stopped) exits 1 after --timeout naming the LSN and the checkpoint; 3 when the
# checkpoint table is not there; 2 on a usage error; `replicant wait --sync-sequences` waits
# and then syncs.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-migration.XXXXXX)
SLOT=migration
TABLES=(serial_t ident_t shared_t plain_t)
SEQS=(serial_t_id_seq ident_t_id_seq ids loose_seq)
consumer_pid=
workload_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail migration "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE SEQUENCE ids START 5000 INCREMENT 7;
CREATE SEQUENCE loose_seq;
CREATE TABLE serial_t (id serial PRIMARY KEY, v text);
CREATE TABLE ident_t (id bigint GENERATED ALWAYS AS IDENTITY (START 100) PRIMARY KEY, v text);
CREATE TABLE shared_t (id bigint PRIMARY KEY DEFAULT nextval('ids'), v text);
CREATE TABLE plain_t (k int PRIMARY KEY, v text);
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
INSERT INTO serial_t (v) SELECT 's' || g FROM generate_series(1, 20000) g;
INSERT INTO ident_t (v) SELECT 'i' || g FROM generate_series(1, 20000) g;
INSERT INTO shared_t (v) SELECT 'h' || g FROM generate_series(1, 20000) g;
INSERT INTO plain_t SELECT g, 'p' FROM generate_series(1, 1000) g;
SELECT nextval('loose_seq') FROM generate_series(1, 50);
CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		INSERT INTO serial_t (v) VALUES ('w');
		INSERT INTO ident_t (v) VALUES ('w');
		INSERT INTO shared_t (v) VALUES ('w');
		PERFORM nextval('loose_seq');
		UPDATE plain_t SET v = md5(random()::text) WHERE k = 1 + floor(random() * 1000)::int;
		DELETE FROM serial_t WHERE id = (SELECT min(id) FROM serial_t);
		COMMIT;
	END LOOP;
END $$;
SQL

# the source's positions before the snapshot: its own sync must reach at least these
declare -A before
for s in "${SEQS[@]}"; do
	before[$s]=$(rp_psql src -Atc "SELECT last_value FROM public.$s")
done

(
	while [[ $(rp_psql src -Atc "SELECT stop FROM ctl") == f ]]; do
		rp_psql src -c "CALL workload(20)" >/dev/null 2>>"$work/workload.err" || break
	done
) &
workload_pid=$!

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start --create-tables \
	-o exclude_tables=public.ctl --snapshot-chunk-rows=5000 --sink "postgres:$dst_CONNSTR" \
	--state-dir "$work/state" -s 1 -v >"$work/c.out" 2>"$work/c.err" &
consumer_pid=$!
for _ in $(seq 1 1200); do
	[[ -n $(rp_dst_checkpoint dst "$SLOT") ]] && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited during the snapshot"
	sleep 0.1
done
[[ -n $(rp_dst_checkpoint dst "$SLOT") ]] || fail "no checkpoint after the snapshot"
grep -q 'snapshot complete' "$work/c.err" || fail "the consumer did not report the snapshot"

# ---- the snapshot's own sequence sync (docs/operations.md): created, at least the position before
for _ in $(seq 1 600); do
	grep -q 'sequences synced after the snapshot\|sequences were not synced' "$work/c.err" && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited after the snapshot"
	sleep 0.1
done
grep -q 'sequences synced after the snapshot: 4 selected, [0-9]* advanced, 4 created, 0 missing' "$work/c.err" ||
	fail "the consumer did not report the sequences synced after the snapshot"
for s in "${SEQS[@]}"; do
	v=$(rp_psql dst -Atc "SELECT last_value FROM public.$s" 2>/dev/null) ||
		fail "sequence $s was not created on the destination after the snapshot"
	((v >= before[$s])) || fail "sequence $s on the destination is behind the source's position before the snapshot"
done
[[ $(rp_psql dst -Atc "SELECT increment_by FROM pg_sequences WHERE sequencename = 'ids'") == 7 ]] ||
	fail "sequence ids was created without the source's increment"

# ---- the workload runs on while the mirror streams, then writes stop
for _ in $(seq 1 600); do
	(($(rp_psql src -Atc "SELECT count(*) FROM shared_t WHERE v = 'w'") >= 300)) && break
	kill -0 "$workload_pid" 2>/dev/null || fail "the workload stopped early"
	sleep 0.1
done
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$workload_pid" || fail "the workload failed"
workload_pid=
[[ ! -s $work/workload.err ]] || fail "the workload reported errors"

# ---- cutover: wait, then the data is there
wrc=0
replicant wait -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -S "$SLOT" --timeout 300 \
	>"$work/wait.out" 2>"$work/wait.err" || wrc=$?
((wrc == 0)) || fail "replicant wait exited $wrc, expected 0"
grep -q 'has passed' "$work/wait.err" || fail "replicant wait did not report the checkpoint passing"
rp_compare_tables src dst "${TABLES[@]}"

# ---- sync-sequences: every destination sequence at or past the source's next value
src_next() { rp_psql src -Atc "SELECT CASE WHEN is_called THEN last_value + $2 ELSE last_value END FROM public.$1"; }
dst_next() { rp_psql dst -Atc "SELECT CASE WHEN is_called THEN last_value + $2 ELSE last_value END FROM public.$1"; }
incr() { [[ $1 == ids ]] && echo 7 || echo 1; }
src_rc=0
replicant sync-sequences -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -o exclude_tables=public.ctl -v \
	>"$work/sync1.out" 2>"$work/sync1.err" || src_rc=$?
((src_rc == 0)) || fail "sync-sequences exited $src_rc, expected 0"
grep -q '4 selected' "$work/sync1.err" || fail "sync-sequences did not select the 4 sequences"
for s in "${SEQS[@]}"; do
	i=$(incr "$s")
	(($(dst_next "$s" "$i") >= $(src_next "$s" "$i"))) || fail "sequence $s on the destination is behind the source after sync-sequences"
done

# ---- verify: the copy equals the source, table by table (the mirror's own selection)
vrc=0
replicant verify -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -S "$SLOT" -o exclude_tables=public.ctl \
	--chunk-rows 2000 >"$work/verify.out" 2>"$work/verify.err" || vrc=$?
((vrc == 0)) || { cat "$work/verify.out"; fail "replicant verify exited $vrc, expected 0"; }
grep -Eq '^[0-9]+ tables: [0-9]+ equal, 0 different, 0 not compared$' "$work/verify.out" ||
	fail "replicant verify's summary: $(tail -n 1 "$work/verify.out")"
grep -q '^public\.ctl:' "$work/verify.out" && fail "replicant verify compared the excluded table ctl"

# ---- switch: the application's inserts on the destination collide with no copied key
rp_psql dst <<'SQL' >/dev/null || fail "an insert with nextval on the destination collided with a copied key"
INSERT INTO serial_t (id, v) SELECT nextval('public.serial_t_id_seq'), 'after' FROM generate_series(1, 5);
INSERT INTO ident_t (id, v) SELECT nextval('public.ident_t_id_seq'), 'after' FROM generate_series(1, 5);
INSERT INTO shared_t (id, v) SELECT nextval('public.ids'), 'after' FROM generate_series(1, 5);
SQL
# and the keys handed out are past every key the source had
for t in serial_t ident_t shared_t; do
	m=$(rp_psql src -Atc "SELECT max(id) FROM $t")
	(($(rp_psql dst -Atc "SELECT min(id) FROM $t WHERE v = 'after'") > m)) || fail "table $t: a new key is not past the source's keys"
done

# ---- never backwards: one destination sequence set higher stays; --margin moves the rest on
rp_psql dst -c "SELECT setval('public.ids', 90000000)" >/dev/null
declare -A src_at
for s in "${SEQS[@]}"; do src_at[$s]=$(src_next "$s" "$(incr "$s")"); done
src_rc=0
replicant sync-sequences -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -o exclude_tables=public.ctl --margin 1000 \
	>"$work/sync2.out" 2>"$work/sync2.err" || src_rc=$?
((src_rc == 0)) || fail "sync-sequences --margin exited $src_rc, expected 0"
[[ $(rp_psql dst -Atc "SELECT last_value || ' ' || is_called FROM public.ids") == "90000000 true" ]] ||
	fail "sync-sequences moved a destination sequence backwards"
for s in serial_t_id_seq ident_t_id_seq loose_seq; do
	(($(dst_next "$s" 1) >= src_at[$s] + 1000)) || fail "sequence $s is not --margin past the source"
done
# run again with the same margin: nothing moves (already there)
all_next() { for s in "${SEQS[@]}"; do dst_next "$s" "$(incr "$s")"; done; }
before_again=$(all_next)
replicant sync-sequences -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -o exclude_tables=public.ctl --margin 1000 \
	>>"$work/sync2.out" 2>>"$work/sync2.err" || fail "a repeated sync-sequences failed"
[[ $(all_next) == "$before_again" ]] ||
	fail "a repeated sync-sequences with the same margin moved a sequence"

# ---- selection: include_tables narrows it to the sequences of those tables
replicant sync-sequences -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -o include_tables=public.serial_t \
	--margin 5000000 >"$work/sync3.out" 2>"$work/sync3.err" || fail "sync-sequences -o include_tables failed"
grep -q ': 1 selected: 1 advanced' "$work/sync3.err" || fail "include_tables did not select exactly serial_t's sequence"
(($(dst_next ident_t_id_seq 1) < src_at[ident_t_id_seq] + 5000000)) || fail "a sequence outside include_tables was moved"

# ---- the cutover command does both: wait, then sync (here narrowed to ident_t, with a margin)
before_ident=$(src_next ident_t_id_seq 1)
replicant wait -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -S "$SLOT" --timeout 300 --sync-sequences \
	-o include_tables=public.ident_t --margin 7000000 >"$work/wait_sync.out" 2>"$work/wait_sync.err" ||
	fail "replicant wait --sync-sequences failed"
grep -q 'sequences: 1 selected: 1 advanced' "$work/wait_sync.err" || fail "replicant wait --sync-sequences did not sync ident_t's sequence"
(($(dst_next ident_t_id_seq 1) >= before_ident + 7000000)) || fail "replicant wait --sync-sequences did not apply the margin"
wrc=0
replicant wait -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" --margin 5 2>"$work/wait_usage.err" || wrc=$?
((wrc == 2)) || fail "replicant wait --margin without --sync-sequences exited $wrc, expected 2"

# ---- missing on the destination: named, exit 1; created with --create-tables
rp_psql src -c 'CREATE SEQUENCE "Late seq"; SELECT nextval($$"Late seq"$$)' >/dev/null
src_rc=0
replicant sync-sequences -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -o exclude_tables=public.ctl \
	>"$work/sync4.out" 2>"$work/sync4.err" || src_rc=$?
((src_rc == 1)) || fail "sync-sequences with a missing sequence exited $src_rc, expected 1"
grep -q 'warning: sequence "public"."Late seq" is missing on the destination' "$work/sync4.err" ||
	fail "the missing sequence was not named"
replicant sync-sequences -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" -o exclude_tables=public.ctl --create-tables \
	>"$work/sync5.out" 2>"$work/sync5.err" || fail "sync-sequences --create-tables failed"
# shellcheck disable=SC2016 # $$...$$ is SQL dollar quoting
[[ $(rp_psql dst -Atc 'SELECT nextval($$public."Late seq"$$)') == 2 ]] || fail "the created sequence is not past the source's"

# ---- wait for an LSN the mirror cannot reach: its consumer stopped
kill -TERM "$consumer_pid"
wait "$consumer_pid" || true
consumer_pid=
rp_psql src -c "INSERT INTO plain_t VALUES (100000, 'unreached')" >/dev/null
target=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
reached=$(rp_dst_checkpoint dst "$SLOT")
wrc=0
replicant wait -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" --lsn "$target" --timeout 3 \
	>"$work/wait2.out" 2>"$work/wait2.err" || wrc=$?
((wrc == 1)) || fail "replicant wait on an unreachable LSN exited $wrc, expected 1"
grep -q "timed out after 3 s: the checkpoint reached $reached, not $target" "$work/wait2.err" ||
	fail "the timeout message does not name the checkpoint and the LSN"
grep -q "waiting for $target: checkpoint $reached, [0-9]* bytes behind" "$work/wait2.err" ||
	fail "replicant wait did not show the lag"
# on a terminal the lag is redrawn in place: one line, then the timeout's message below it
tmux_sock="rp-migration-$$"
tmux -L "$tmux_sock" new-session -d -x 200 -y 20 \
	"'$RP_ROOT/consumer/replicant' wait -d '$src_CONNSTR' --sink 'postgres:$dst_CONNSTR' --lsn $target --timeout 3; echo \"exit=\$?\"; sleep 60"
for _ in $(seq 1 600); do
	tmux -L "$tmux_sock" capture-pane -p >"$work/tty.txt" 2>/dev/null || true
	grep -q '^exit=' "$work/tty.txt" && break
	sleep 0.1
done
tmux -L "$tmux_sock" kill-server 2>/dev/null || true
grep -q '^exit=1$' "$work/tty.txt" || fail "replicant wait on a terminal did not exit 1 (screen in $work/tty.txt)"
(($(grep -c 'waiting for' "$work/tty.txt") == 1)) || fail "replicant wait on a terminal did not redraw its line in place"
grep -q "^waiting for $target: checkpoint $reached, [0-9]* bytes behind *$" "$work/tty.txt" ||
	fail "replicant wait on a terminal left a broken line"
grep -A1 'waiting for' "$work/tty.txt" | grep -q 'timed out after 3 s' || fail "the timeout message is not on the line after the lag"
# an LSN already passed returns at once; no checkpoint table: 3; usage: 2
replicant wait -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" --lsn "$reached" -q 2>"$work/wait3.err" ||
	fail "replicant wait on a passed LSN did not exit 0"
wrc=0
replicant wait -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" --bookkeeping-schema nowhere --timeout 3 \
	2>"$work/wait4.err" || wrc=$?
((wrc == 3)) || fail "replicant wait without a checkpoint table exited $wrc, expected 3"
wrc=0
replicant wait -d "$src_CONNSTR" --sink "file:$work/x" 2>"$work/wait5.err" || wrc=$?
((wrc == 2)) || fail "replicant wait with a non-PostgreSQL sink exited $wrc, expected 2"

# G4: no row value in any of our output
for f in "$work"/*.err "$work"/*.out; do
	! grep -q 'unreached' "$f" || fail "a row value reached $f"
done

status=0
printf 'PASS migration: snapshot + stream under load, wait, sync-sequences (serial, identity, default, standalone), verify, never backwards, wait timeout (%ss)\n' \
	$((SECONDS - started))
