#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/canary.sh: no row value reaches a log line, an error message or a metric.
#
# Proves G4 (value-free), with the fail-closed halts of G3 as the occasions to leak: rows
# carry a canary value (in text, jsonb and bytea columns and in a text primary key, some in
# a streamed transaction), then the consumer is made to stop in every way it can:
#   (a) a destructive schema change (ALTER TABLE DROP COLUMN) -> exit 3 naming the table and
#       the column; run again with nothing fixed -> the same halt, the log unchanged (it
#       holds nothing of the halting transaction) and the slot not acknowledged past the
#       log's checkpoint;
#   (b) an exec sink child that answers garbage (a row of data) instead of "ack N" -> exit 3,
#       nothing of the unit confirmed or checkpointed;
#   (c) a bad include_tables pattern, an unknown plugin option, a bad boolean -> exit 1
#       naming the option;
#   (d) the slot dropped under a checkpoint -> exit 3, "does not exist".
# On the way, pg_recvlogical's connection options: -h -p -U override what -d says (a -d
# naming an unreachable server, or another user), and the PG* environment stands in for -d.
# The server runs with log_min_messages = debug1. Every run's stderr, the server log, the
# consumer's metrics page and its state files (checkpoint, relation view) are searched for
# the canary: it must never appear. The file sink's log, which is row data by design,
# must hold it (so the search would find it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

CANARY='CANARY-d41d8cd9'
# SQL that builds the canary without spelling it, so our own statements never carry it
CANARY_SQL="'CANARY-' || 'd41d8cd9'"
work=$(mktemp -d /tmp/rp-canary.XXXXXX)
status=1
pid=
cleanup() { rp_e2e_cleanup $? pid; }
trap cleanup EXIT
fail() { rp_e2e_fail canary '' 0 "$*"; }

started=$SECONDS
rp_cluster_start src "log_min_messages = debug1" "logical_decoding_work_mem = '64kB'"

rp_psql src <<SQL >/dev/null
CREATE TABLE canary_t (id int PRIMARY KEY, secret text, doc jsonb, blob bytea, dropme numeric);
CREATE TABLE canary_k (k text PRIMARY KEY, secret text);
CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$;
SQL
replicant -d "$src_CONNSTR" -S main --create-slot

# -h -p -U over a -d that names no reachable server; then the PG* environment alone
slots() { rp_psql src -Atc "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'conn_opts'"; }
replicant -d "host=/nonexistent-$$ port=1 dbname=postgres" -h "$src_HOST" -p "$src_PORT" -U "$src_USER" \
	-S conn_opts --create-slot 2>"$work/conn.err" || fail "-h -p -U did not override -d: $(cat "$work/conn.err")"
[[ $(slots) == 1 ]] || fail "-h -p -U: no slot conn_opts"
rc=0
replicant -d "$src_CONNSTR" -U rp_no_such_role -S conn_opts --drop-slot 2>"$work/conn.err" || rc=$?
if ((rc != 1)) || ! grep -q 'rp_no_such_role' "$work/conn.err"; then fail "-U did not override -d's user (exit $rc)"; fi
PGHOST=$src_HOST PGPORT=$src_PORT PGUSER=$src_USER PGDATABASE=postgres replicant -S conn_opts --drop-slot ||
	fail "the PG* environment did not reach the connection"
[[ $(slots) == 0 ]] || fail "PG* environment: slot conn_opts not dropped"
# -W without a terminal (setsid): the password is read from stdin, and the run goes on
printf 'unused-with-trust\n' >"$work/pw"
setsid --wait replicant -W -h "$src_HOST" -p "$src_PORT" -U "$src_USER" -d postgres -S conn_opts --create-slot \
	<"$work/pw" 2>"$work/conn.err" || fail "-W: $(cat "$work/conn.err")"
replicant -w -h "$src_HOST" -p "$src_PORT" -U "$src_USER" -d postgres -S conn_opts --drop-slot ||
	fail "-w: slot conn_opts not dropped"

# rows first..last of canary_t and canary_k, the canary in every value (and in canary_k's key)
insert_rows() {
	rp_psql src -c "INSERT INTO canary_t (id, secret, doc, blob$3)
	                SELECT g, canary() || '-' || g, jsonb_build_object('s', canary(), 'g', g),
	                       convert_to(canary(), 'UTF8')$4 FROM generate_series($1, $2) g" \
		-c "INSERT INTO canary_k SELECT canary() || '-' || g, canary() FROM generate_series($1, $2) g"
}

lsn() { rp_psql src -Atc "SELECT pg_current_wal_lsn()"; }

runs=0
# consumer EXPECTED_STATUS ARG...: run replicant, stderr kept in $work/run-N.err
consumer() {
	local expect=$1 rc=0
	shift
	runs=$((runs + 1))
	err=$work/run-$runs.err
	# -vv: every event line (batches, checkpoints, schema changes) is searched too
	replicant -vv -d "$src_CONNSTR" "$@" 2>"$err" || rc=$?
	if ((rc != expect)); then
		cat "$err"
		fail "run $runs (replicant $*) exited with $rc, expected $expect"
	fi
}
err_has() {
	grep -qF -- "$1" "$err" || { cat "$err"; fail "run $runs: stderr does not say: $1"; }
}
last_ckpt() { grep -a '^{"kind":"checkpoint"' "$1" | tail -n 1; }

LOG=$work/changes.jsonl
FILE_ARGS=(-S main --start -n -o streaming=on --sink "file:$LOG" --state-dir "$work/state-main" --batch-txns 1)

# ---- a clean run first: the canary goes through, into the log and nowhere else
insert_rows 1 3 ", dropme" ", 1.5"
rp_psql src -c "INSERT INTO canary_t (id, secret) SELECT g, canary() FROM generate_series(10000, 12900) g" # streamed
endpos=$(lsn)
metrics=$work/metrics.txt
command -v curl >/dev/null || fail "curl is not installed (regress/install_deps.sh installs it): the metrics cannot be read"
port=$(rp_free_port)
replicant -vv -d "$src_CONNSTR" "${FILE_ARGS[@]}" --metrics-port "$port" 2>"$work/run-metrics.err" &
pid=$!
deadline=$((SECONDS + 120)) # only a guard against a hang
until grep -q '"id":12900' "$LOG" 2>/dev/null && grep -q '"kind":"checkpoint"' "$LOG"; do
	kill -0 "$pid" 2>/dev/null || { cat "$work/run-metrics.err"; fail "the consumer exited before it logged the rows"; }
	((SECONDS < deadline)) || { kill "$pid"; fail "the rows did not reach the log within 120 s"; }
	sleep 0.1
done
curl -sf "http://127.0.0.1:$port/metrics" >"$metrics" || { kill "$pid"; fail "no metrics on port $port"; }
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 0)) || { cat "$work/run-metrics.err"; fail "the consumer stopped by SIGTERM exited with $rc"; }
grep -q '^replicant_transactions_total [1-9]' "$metrics" || fail "metrics show no transaction"
# the event lines of -vv were written (and are searched below with the other logs)
grep -q '^replicant: batch committed: [1-9]' "$work/run-metrics.err" || fail "-vv said no batch committed"
grep -q '^replicant: checkpoint stored: end LSN ' "$work/run-metrics.err" || fail "-vv said no checkpoint stored"
grep -qF "$CANARY" "$LOG" || fail "the canary is not in the file sink's log: the search below would prove nothing"
[[ $(grep -c '"table":"canary_t"' "$LOG") == 2904 ]] || fail "the clean run did not log all 2904 canary_t rows"

# ---- (a) destructive schema change: halt, twice at the same place
rp_psql src -c "ALTER TABLE canary_t DROP COLUMN dropme"
insert_rows 1000 1002 "" ""
endpos=$(lsn)
before_log=$(md5sum <"$LOG")
before_ck=$(last_ckpt "$LOG")
ck_end=$(sed 's/.*"end_lsn":"\([0-9A-F/]*\)".*/\1/' <<<"$before_ck")
for attempt in 1 2; do
	consumer 3 "${FILE_ARGS[@]}" -E "$endpos"
	err_has 'destructive schema change of table "public"."canary_t"'
	err_has 'column "dropme" dropped'
	err_has 'halted (schema'
	# the library's event, said by -v: the relation named, no value
	err_has 'schema change of table "public"."canary_t" at LSN'
	err_has 'refused, halting'
	[[ $(md5sum <"$LOG") == "$before_log" ]] || fail "(a) attempt $attempt: the halted run changed the log"
	ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$ck_end' FROM pg_replication_slots WHERE slot_name = 'main'")
	[[ $ok == t ]] || fail "(a) attempt $attempt: slot acknowledged past the log's checkpoint $ck_end"
	[[ $attempt == 1 ]] && first_halt=$(grep error: "$err")
done
[[ $(grep error: "$err") == "$first_halt" ]] || fail "(a) the second run halted differently: $(grep error: "$err")"
if grep -q '"id":100[0-2],' "$LOG"; then fail "(a) the log holds rows of the halting transaction"; fi

# ---- (b) an exec sink child that answers a row of data instead of "ack N"
# (the child keeps the last data line it read and sends back its row part)
# shellcheck disable=SC2016 # expanded by the sh -c of the exec sink
child='while IFS= read -r l; do case $l in {\"kind\":\"flush\"*) r=${prev#*\"new\":}; printf "%.200s\n" "$r" ;; *) prev=$l ;; esac; done'
replicant -d "$src_CONNSTR" -S execslot --create-slot # after the schema change
insert_rows 2000 2002 "" ""
bound=$(lsn) # after the unit's commits (rp_unacked)
consumer 3 -S execslot --start -n --sink "exec:$child" --state-dir "$work/state-exec"
err_has "exec sink's child answered something other than \"ack 1\""
err_has 'halted (sink'
why=$(rp_unacked src execslot "$work/state-exec/execslot.checkpoint" "$bound") ||
	fail "(b) for a unit the child never acknowledged, $why"

# ---- (c) options the plugin refuses: an error naming the option, nothing acknowledged
consumer 1 -S execslot --start -n -o "include_tables=a.b.c" --state-dir "$work/state-opt"
err_has 'invalid table pattern "a.b.c" in option "include_tables"'
consumer 1 -S execslot --start -n -o "no_such_option=1" --state-dir "$work/state-opt"
err_has 'unrecognized option "no_such_option"'
consumer 1 -S execslot --start -n -o "streaming=perhaps" --state-dir "$work/state-opt"
err_has 'boolean option "streaming"'
why=$(rp_unacked src execslot "$work/state-opt/execslot.checkpoint" "$bound") || fail "(c) $why"

# ---- (d) the slot is gone under a checkpoint
rp_psql src -c "SELECT pg_drop_replication_slot('main')" >/dev/null
consumer 3 "${FILE_ARGS[@]}"
err_has 'replication slot "main" does not exist'
err_has 'halted (gap'
[[ $(md5sum <"$LOG") == "$before_log" ]] || fail "(d) the halted run changed the log"

# ---- the search
rp_psql src -c "SELECT pg_sleep(0.5)" >/dev/null # let the walsenders' last words reach the log
searched=("$work"/run-*.err "$src_LOG" "$metrics")
while IFS= read -r -d '' f; do searched+=("$f"); done < <(find "$work"/state-* -type f -print0)
leaks=$(grep -alF -- "$CANARY" "${searched[@]}" || true)
[[ -z $leaks ]] || { grep -aF -- "$CANARY" "${searched[@]}" | head -n 5; fail "the canary leaked into: $leaks"; }
# the canary's second half alone, in case a message cut or re-encoded it
leaks=$(grep -alF -- "d41d8cd9" "${searched[@]}" || true)
[[ -z $leaks ]] || fail "part of the canary leaked into: $leaks"

status=0
printf 'PASS canary: %d runs (schema, exec, option and gap halts), canary in none of %d files searched (%d server log lines) (%ds)\n' \
	"$((runs + 1))" "${#searched[@]}" "$(wc -l <"$src_LOG")" "$((SECONDS - started))"
