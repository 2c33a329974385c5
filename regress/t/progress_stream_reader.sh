#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2119 # NAME_* variables are set by rp_cluster_start (lib.sh); rp_nats_sink_url: all nodes
# regress/t/progress_stream_reader.sh: a stream reader's (--source nats://) progress line on a
# terminal shows its lag in messages of the stream (issue 17, item 4: it showed a WAL lag of 0).
#
# The NATS sink writes 300 one-row transactions from a slot into a stream (one node). A mirror
# reader of the stream runs in a tmux pane (stderr a terminal, --progress) while a session holds
# its destination table locked (LOCK ... IN SHARE MODE): nothing it reads is durable, and the
# pane shows "catch-up: lag N messages" with N > 0 (the stream's messages past the reader's
# durable checkpoint). Then the lock goes: the reader catches up, the line says "streaming: lag
# 0 messages", and the destination holds the 300 rows. Nothing is timed: every step waits for
# its condition.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

SLOT=progress_sr
STREAM=PROGRESS_SR
ROWS=300
work=$(mktemp -d /tmp/rp-progress-sr.XXXXXX)
sock=$work/tmux.sock
status=1
writer_pid=
reader_pid=
lock_pid=
cleanup() {
	local rc=$?
	tmux -S "$sock" kill-server 2>/dev/null || true
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" writer_pid reader_pid lock_pid
}
trap cleanup EXIT
fail() {
	printf -- '--- the pane\n'
	tmux -S "$sock" capture-pane -p -t rp 2>/dev/null || true
	rp_e2e_fail progress_stream_reader "$work/*.err" 20 "$*"
}
command -v tmux >/dev/null || fail "tmux is not installed: the terminal cannot be read back"

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
rp_nats_start 1
rp_psql src -c "CREATE TABLE t (id int PRIMARY KEY, n int)" >/dev/null
rp_psql dst -c "CREATE TABLE t (id int PRIMARY KEY, n int)" >/dev/null
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot
replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" --nats-stream "$STREAM" --nats-replicas 1 \
	--state-dir "$work/wstate" 2>"$work/writer.err" &
writer_pid=$!
for i in $(seq 1 "$ROWS"); do echo "INSERT INTO t VALUES ($i, $i);"; done | rp_psql src >/dev/null
end_lsn=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
rp_nats_wait_confirmed src "$SLOT" "$end_lsn" 300 "$writer_pid" || fail "the writer did not confirm $end_lsn within 300 s"

# the destination table locked until the pane has shown the lag
mkfifo "$work/lock.fifo"
rp_psql dst <"$work/lock.fifo" >"$work/lock.out" 2>&1 &
# shellcheck disable=SC2034 # read by name in cleanup (rp_e2e_cleanup)
lock_pid=$!
exec 3>"$work/lock.fifo"
echo "BEGIN; LOCK TABLE t IN SHARE MODE; SELECT 'locked';" >&3
for _ in $(seq 1 300); do
	grep -q locked "$work/lock.out" && break
	sleep 0.1
done
grep -q locked "$work/lock.out" || fail "the destination table could not be locked"

printf '%q ' replicant --source "$(rp_nats_sink_url)" --nats-stream "$STREAM" -S reader1 \
	--state-dir "$work/r1" --start --sink "postgres:$dst_CONNSTR" --progress >"$work/cmd"
cat >"$work/run.sh" <<EOF
$(cat "$work/cmd") &
echo \$! >$(printf %q "$work/pid")
wait \$!
sleep 3600
EOF
env -u TMUX tmux -S "$sock" -f /dev/null new-session -d -x 120 -y 20 -s rp "bash $work/run.sh" 3>&- ||
	fail "tmux could not start a session"
for _ in $(seq 1 300); do [[ -s $work/pid ]] && break; sleep 0.1; done
[[ -s $work/pid ]] || fail "the reader did not start in the pane"
reader_pid=$(cat "$work/pid")

eta='([0-9]+s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m|[0-9]+d[0-9]{2}h|--)'
lsn='[0-9A-F]+/[0-9A-F]+'
wait_pane() {
	local re=$1 what=$2
	for _ in $(seq 1 1800); do
		tmux -S "$sock" capture-pane -p -t rp >"$work/pane.now" 2>/dev/null || true
		grep -Eq -- "$re" "$work/pane.now" && return 0
		kill -0 "$reader_pid" 2>/dev/null || fail "the reader exited while waiting for $what"
		sleep 0.1
	done
	fail "the pane never showed $what"
}
wait_pane "^catch-up: lag [1-9][0-9]* messages, ETA $eta; [0-9]+ txns, [0-9.]+[kMG]? changes/s, checkpoint $lsn\$" \
	"the lag in messages"
grep -q ' B, ' "$work/pane.now" && fail "a stream reader's line shows a WAL lag"
echo "COMMIT;" >&3
exec 3>&-
wait_pane "^streaming: lag 0 messages, ETA 0s; [0-9]+ txns, [0-9.]+[kMG]? changes/s, checkpoint $lsn\$" \
	"the end of the catch-up"
[[ $(rp_psql dst -Atc 'SELECT count(*) FROM t') == "$ROWS" ]] || fail "the destination does not hold the $ROWS rows"

status=0
printf 'PASS progress_stream_reader: a stream reader shows its lag in messages, then 0 (%ss)\n' $((SECONDS - started))
