#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/dest_restart.sh: a mirror whose destination goes away: backoff and counters.
#
# Proves the documented retry behaviour (docs/operations.md) and that the telemetry is
# monotonic for the process's life:
#   1. A mirror with --metrics-port delivers N transactions; the metrics page counts them.
#   2. The destination stops while the source keeps committing. Every attempt reaches the
#      source, streams and fails on the destination: the retries back off (the consumer's
#      log shows the pause doubling: 1, 2, 4 s), they do not start over at 1 s each time.
#   3. The destination comes back: the mirror catches up, the tables are equal, and no
#      counter of the metrics page ever went backwards on any read (the delivery restarted
#      from its durable checkpoint after the loss); the transactions counter ends past N.
#   4. A session holds a lock on the destination table and the source commits a row: the
#      mirror's batch waits on the lock. SIGTERM stops it all the same (its destination query
#      is cancelled): exit 0, the destination's checkpoint did not move, the slot is
#      confirmed at most up to it, and the row comes on the next run.
# The waits are bounded only to keep a broken consumer from hanging the suite.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

BOUND=180
N=20
work=$(mktemp -d /tmp/rp-dest-restart.XXXXXX)
status=1
pid=
locker=
cleanup() { rp_e2e_cleanup $? pid locker; }
trap cleanup EXIT
fail() { rp_e2e_fail dest_restart "$work/*.err" 30 "$*"; }

command -v curl >/dev/null || fail "curl is missing (regress/install_deps.sh installs it)"
started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
rp_psql src -c "CREATE TABLE t (id int PRIMARY KEY, v text)" >/dev/null
replicant -d "$src_CONNSTR" -S m --create-slot
port=$(rp_free_port)
replicant -d "$src_CONNSTR" -S m --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
	--state-dir "$work/state" --metrics-port "$port" 2>"$work/consumer.err" &
pid=$!

# The counters of one metrics page: "name value" lines of every *_total.
declare -A high=()
reads=0
read_metrics() {
	local name value
	curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || return 1
	reads=$((reads + 1))
	while read -r name value; do
		if [[ -n ${high[$name]:-} ]] && ((value < ${high[$name]})); then
			fail "read $reads: $name went backwards from ${high[$name]} to $value"
		fi
		high[$name]=$value
	done < <(grep -E '^replicant_[a-z_]+_total(\{[^}]*\})? [0-9]+$' "$work/metrics.txt")
}
dst_rows() { rp_psql dst -Atc "SELECT count(*) FROM public.t" 2>/dev/null || echo -1; }
# wait_until DESC CMD...: poll CMD (reading the metrics meanwhile) until it succeeds
wait_until() {
	local what=$1 t0=$SECONDS
	shift
	until "$@"; do
		kill -0 "$pid" 2>/dev/null || fail "the consumer exited while waiting for: $what"
		((SECONDS - t0 < BOUND)) || fail "still waiting after $BOUND s for: $what"
		read_metrics || true
		sleep 0.2
	done
}

# ---- 1.
for i in $(seq 1 "$N"); do rp_psql src -c "INSERT INTO t VALUES ($i, 'v$i')" >/dev/null; done
has_rows() { [[ $(dst_rows) == "$1" ]]; }
wait_until "$N rows in the destination" has_rows "$N"
counted() { read_metrics && ((${high[replicant_transactions_total]:-0} >= N)); }
wait_until "the metrics count $N transactions" counted
before=${high[replicant_transactions_total]}

# ---- 2.
"$RP_BINDIR/pg_ctl" -D "$dst_DATA" -m fast -w stop >/dev/null
for i in $(seq $((N + 1)) $((N + 5))); do rp_psql src -c "INSERT INTO t VALUES ($i, 'v$i')" >/dev/null; done
backed_off() { grep -q 'reconnecting in 4 s' "$work/consumer.err"; }
wait_until "a retry after 4 s (1, 2, then 4)" backed_off
grep -q 'reconnecting in 2 s' "$work/consumer.err" || fail "no retry after 2 s before the one after 4 s"

# ---- 3.
"$RP_BINDIR/pg_ctl" -D "$dst_DATA" -l "$dst_LOG" -w -t 60 start >/dev/null
wait_until "$((N + 5)) rows in the destination" has_rows $((N + 5))
past() { read_metrics && ((${high[replicant_transactions_total]} > before)); }
wait_until "the transactions counter past $before" past
grep -qE '^replicant_halts_total\{reason="error"\} [1-9]' "$work/metrics.txt" ||
	fail "the lost destination is not counted in replicant_halts_total{reason=\"error\"}"
rp_compare_tables src dst t

# ---- 4.
ck0=$(rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = 'm'")
rp_psql dst -c "BEGIN; LOCK TABLE public.t IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600)" >/dev/null 2>&1 &
locker=$!
locked() { [[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_locks WHERE relation = 'public.t'::regclass AND granted AND mode = 'AccessExclusiveLock'") == 1 ]]; }
wait_until "the lock held on the destination table" locked
rp_psql src -c "INSERT INTO t VALUES ($((N + 6)), 'v')" >/dev/null
blocked() { [[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant' AND wait_event_type = 'Lock'") == 1 ]]; }
wait_until "the mirror's batch waiting on the lock" blocked
kill -TERM "$pid"
t0=$SECONDS
while kill -0 "$pid" 2>/dev/null; do
	((SECONDS - t0 < BOUND)) || fail "the consumer still runs $BOUND s after SIGTERM"
	sleep 0.2
done
rc=0
wait "$pid" || rc=$?
pid=
((rc == 0)) || fail "the consumer exited with $rc after SIGTERM"
ck=$(rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = 'm'")
[[ $ck == "$ck0" ]] || fail "the destination's checkpoint moved from $ck0 to $ck while its batch waited on the lock"
[[ $(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$ck' FROM pg_replication_slots WHERE slot_name = 'm'") == t ]] ||
	fail "the slot is confirmed at $(rp_psql src -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'm'"), past the destination's checkpoint $ck"
kill "$locker" 2>/dev/null || true
wait "$locker" 2>/dev/null || true
locker=
rp_psql dst -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3600)%' AND pid <> pg_backend_pid()" >/dev/null
endpos=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
replicant -d "$src_CONNSTR" -S m --start -n -E "$endpos" --sink "postgres:$dst_CONNSTR" --create-tables \
	--state-dir "$work/state" 2>"$work/rerun.err" || { rc=$?; fail "the run after the stop exited with $rc"; }
rp_compare_tables src dst t

status=0
printf 'PASS dest_restart: retries while the destination was down backed off (1, 2, 4 s); %d metrics reads, no counter went backwards (transactions %s before the loss, %s after); tables equal; SIGTERM stopped a batch waiting on a destination lock, nothing confirmed past the checkpoint (%ds)\n' \
	"$reads" "$before" "${high[replicant_transactions_total]}" "$((SECONDS - started))"
