#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/signals.sh: fail-closed configuration, signals and the exec child's acknowledgement.
#
# Proves G3 (fail closed: refuse what cannot work, never wait for ever) and G2 (nothing is
# confirmed that the sink did not acknowledge) at the edges of the CLI:
#   1. Sizes that are negative, overflow or exceed their bound (--max-memory -5MB,
#      --max-spill -1, 99999999999TB, --batch-bytes 2GB, a negative number) are usage errors
#      (exit 2, "invalid value ... for option --NAME" and the --help hint), refused before
#      anything connects (the source given is unreachable: a run that got further would
#      exit 1 saying it could not connect).  So is every other usage error of option parsing
#      (an unknown or incomplete option, a plugin option replicant sets itself, a bad LSN or
#      enumerated value, options that do not go together, an unknown sink): each says
#      "replicant: error: ..." and then the --help hint.
#   2. --backfill with a plugin option that filters out its watermarks (include_messages
#      spelled false in any way the server accepts, or message_prefixes without
#      replicant.backfill) is refused the same way, naming the option.
#   3. An exec child that reads everything and never acknowledges: SIGTERM stops the
#      consumer (exit 0) although the child never answers, the slot and the checkpoint are
#      not advanced to the unit (idle WAL before it may be confirmed), and the child, which ignores the
#      end of its input, is not left behind: the consumer reaps it and reports how it ended.
#      (The bound on the wait only keeps a broken consumer from hanging the suite.)
#   4. The same child with --exec-ack-timeout=2: the run halts (exit 3) naming the child's
#      command and pid, and again confirms nothing.
#   5. A child that answers garbage and then ignores the end of its input: the halt (exit 3)
#      still closes the sink, so the child is ended and reaped, not left running.
#   6. The stdout sink writing into a pipe whose reader never reads (the write blocks once
#      the pipe is full): SIGTERM stops it all the same, exit 0, nothing of the unit checkpointed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

# generous: only guards against a consumer that never exits
EXIT_BOUND=60
work=$(mktemp -d /tmp/rp-signals.XXXXXX)
status=1
pid=
child=
reader=
cleanup() { rp_e2e_cleanup $? pid child reader; }
trap cleanup EXIT
fail() { rp_e2e_fail signals "$work/*.err" 20 "$*"; }

started=$SECONDS
nowhere="host=/nonexistent-$$ connect_timeout=2"

# ---- 1. sizes and numbers
usage_case() {
	local name=$1 want=$2 rc=0
	shift 2
	replicant -d "$nowhere" -S s --start -n "$@" >/dev/null 2>"$work/usage-$name.err" || rc=$?
	((rc == 2)) || fail "replicant $* exited with $rc, expected 2 (usage)"
	grep -qF -- "$want" "$work/usage-$name.err" || fail "replicant $*: stderr does not say: $want"
	grep -qF 'Try "replicant --help" for more information.' "$work/usage-$name.err" ||
		fail "replicant $*: no --help hint"
	rm -f "$work/usage-$name.err"
}
usage_case mem 'invalid value "-5MB" for option --max-memory' --max-memory -5MB
usage_case spill 'invalid value "-1" for option --max-spill' --max-spill -1
usage_case shift 'invalid value "99999999999TB" for option --max-memory' --max-memory 99999999999TB
usage_case wrap 'invalid value "18446744073709551617" for option --max-spill' --max-spill 18446744073709551617
usage_case batch 'invalid value "2GB" for option --batch-bytes' --batch-bytes 2GB
usage_case rec 'invalid value "-1kB" for option --max-record-bytes' --max-record-bytes -1kB
usage_case txns 'invalid value "-5" for option --batch-txns' --batch-txns -5
usage_case chunk 'invalid value "4294967297" for option --snapshot-chunk-rows' --snapshot-chunk-rows 4294967297
usage_case unknown 'replicant: error: unrecognized option "--no-such-option"' --no-such-option
usage_case noarg 'replicant: error: option "--sink" requires an argument' --sink
usage_case optfmt 'replicant: error: plugin option "format=x" is set by replicant itself' -o format=x
usage_case lsn 'replicant: error: could not parse start position "zz"' -I zz
usage_case divergence 'replicant: error: invalid value "x" for --on-divergence' --on-divergence x
usage_case drop 'replicant: error: cannot use --create-slot or --start together with --drop-slot' --drop-slot
usage_case aggonly 'replicant: error: --aggregates-only needs at least one' --aggregates-only --sink postgres:
usage_case sink 'replicant: error: unknown sink "kafka:x"' --sink kafka:x

# ---- 2. a backfill whose watermarks cannot arrive
dest="postgresql:///nowhere?host=/nonexistent-$$"
for v in no n f off OFF 0 false FALSE of fa; do
	usage_case "bf-$v" "-o include_messages=$v filters them out" \
		--sink "$dest" --backfill public.t -o "include_messages=$v"
done
usage_case bf-prefix 'with prefix "replicant.backfill", but -o message_prefixes=app,audit filters them out' \
	--sink "$dest" --backfill public.t -o message_prefixes=app,audit
usage_case bf-quoted 'but -o message_prefixes="Replicant.Backfill" filters them out' \
	--sink "$dest" --backfill public.t -o 'message_prefixes="Replicant.Backfill"'
# and what lets them through is not refused (it gets as far as connecting)
for o in include_messages=on include_messages message_prefixes=app,Replicant.Backfill; do
	rc=0
	replicant -d "$nowhere" -S s --start -n --sink "$dest" --backfill public.t -o "$o" \
		>/dev/null 2>"$work/bf-ok.err" || rc=$?
	((rc == 1)) || fail "--backfill with -o $o exited with $rc, expected 1 (it cannot connect)"
done
rm -f "$work/bf-ok.err"

# ---- 3. and 4. an exec child that never acknowledges
rp_cluster_start src
rp_psql src -c "CREATE TABLE t (id int PRIMARY KEY, v text)" >/dev/null
cat >"$work/never_ack.py" <<'PY'
import os, signal, sys, time
# reads and keeps everything, never answers; ignores the end of its input, so the
# consumer has to end it
with open(sys.argv[2], "w") as f:
    f.write(str(os.getpid()))
out = open(sys.argv[1], "a")
for line in sys.stdin:
    out.write(line)
    out.flush()
    if os.environ.get("ANSWER") and line.startswith('{"kind":"flush"'):
        print(os.environ["ANSWER"], flush=True)
while True:
    time.sleep(1)
PY

# wait_exit SECONDS: the consumer's exit status in $rc, or a failure once SECONDS passed
wait_exit() {
	local t0=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		((SECONDS - t0 < $1)) || fail "the consumer still runs $1 s later"
		sleep 0.2
	done
	rc=0
	wait "$pid" || rc=$?
	pid=
}
# run_never_ack NAME ARG...: start a consumer on slot NAME whose child never acknowledges,
# commit a transaction, wait until the child has the flush line (the consumer now waits)
run_never_ack() {
	local name=$1 t0
	shift
	replicant -d "$src_CONNSTR" -S "$name" --create-slot
	replicant -d "$src_CONNSTR" -S "$name" --start -s 1 --state-dir "$work/state-$name" \
		--sink "exec:exec python3 $work/never_ack.py $work/$name.jsonl $work/$name.pid" "$@" \
		2>"$work/$name.err" &
	pid=$!
	# the unit's bound: read after its commit, in the same session (rp_unacked)
	bound=$(rp_psql src -qAt -c "INSERT INTO t VALUES ($RANDOM, 'x')" -c "SELECT pg_current_wal_insert_lsn()")
	t0=$SECONDS
	until grep -q '"kind":"flush"' "$work/$name.jsonl" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || fail "$name: the consumer exited before its child got a unit"
		((SECONDS - t0 < EXIT_BOUND)) || fail "$name: the child never got a unit"
		sleep 0.2
	done
	child=$(cat "$work/$name.pid")
}
# nothing of the unit confirmed or checkpointed (idle WAL before it may be), the child gone
check_unconfirmed() {
	local name=$1
	why=$(rp_unacked src "$name" "$work/state-$name/$name.checkpoint" "$bound") ||
		fail "$name: without an acknowledgement, $why"
	! kill -0 "$child" 2>/dev/null || fail "$name: the exec child (pid $child) was left running"
}

run_never_ack term
kill -TERM "$pid"
wait_exit "$EXIT_BOUND"
((rc == 0)) || fail "term: the consumer exited with $rc after SIGTERM, expected 0"
check_unconfirmed term
grep -qF "(pid $child, command \"exec python3 $work/never_ack.py" "$work/term.err" ||
	fail "term: stderr does not name the child that had not acknowledged"
grep -q "exec sink's child (pid $child, .*) was terminated by signal 15" "$work/term.err" ||
	fail "term: stderr does not say how the child ended"

run_never_ack sigint
kill -INT "$pid"
wait_exit "$EXIT_BOUND"
((rc == 0)) || fail "sigint: the consumer exited with $rc after SIGINT, expected 0"
check_unconfirmed sigint

run_never_ack timeout --exec-ack-timeout=2
wait_exit "$EXIT_BOUND"
((rc == 3)) || fail "timeout: the consumer exited with $rc, expected 3 (halt)"
check_unconfirmed timeout
grep -qF "exec sink's child (pid $child, command \"exec python3 $work/never_ack.py $work/timeout.jsonl $work/timeout.pid\") has not acknowledged unit 1 for 2 s" \
	"$work/timeout.err" || fail "timeout: the halt does not name the child's command and pid"
grep -qF 'halted (sink)' "$work/timeout.err" || fail "timeout: not a sink halt"

ANSWER=nack run_never_ack garbage
unset ANSWER
wait_exit "$EXIT_BOUND"
((rc == 3)) || fail "garbage: the consumer exited with $rc, expected 3 (halt)"
check_unconfirmed garbage
grep -q "exec sink's child (pid $child, .*) was terminated by signal 15" "$work/garbage.err" ||
	fail "garbage: stderr does not say how the child ended"

# ---- 6. standard output into a reader that never reads
mkfifo "$work/stalled"
# never reads; says how many bytes wait in the pipe
python3 -c '
import fcntl, struct, sys, termios, time
with open(sys.argv[1], "rb", buffering=0) as f:
    while True:
        n = struct.unpack("i", fcntl.ioctl(f.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        open(sys.argv[2] + ".tmp", "w").write(str(n))
        __import__("os").replace(sys.argv[2] + ".tmp", sys.argv[2])
        time.sleep(0.1)
' "$work/stalled" "$work/stalled.queued" &
reader=$!
replicant -d "$src_CONNSTR" -S stalled --create-slot
replicant -d "$src_CONNSTR" -S stalled --start -s 1 --state-dir "$work/state-stalled" \
	>"$work/stalled" 2>"$work/stalled.err" &
pid=$!
# far more than a pipe holds, in one transaction: the sink's write blocks
bound=$(rp_psql src -qAt -c "INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(100000, 101999) g" \
	-c "SELECT pg_current_wal_insert_lsn()")
t0=$SECONDS
# the pipe full (64kB on Linux): the rest of the 2MB unit waits in write()
queued() { cat "$work/stalled.queued" 2>/dev/null || echo 0; }
until (($(queued) >= 65536)); do
	kill -0 "$pid" 2>/dev/null || fail "stalled: the consumer exited before its write blocked"
	((SECONDS - t0 < EXIT_BOUND)) || fail "stalled: the consumer never filled the pipe ($(queued) bytes)"
	sleep 0.2
done
kill -TERM "$pid"
wait_exit "$EXIT_BOUND"
((rc == 0)) || fail "stalled: the consumer exited with $rc after SIGTERM, expected 0"
why=$(rp_unacked src stalled "$work/state-stalled/stalled.checkpoint" "$bound") ||
	fail "stalled: for a unit not written, $why"
kill "$reader" 2>/dev/null || true
wait "$reader" 2>/dev/null || true

status=0
printf 'PASS signals: bad sizes and filtered backfill watermarks refused before connecting; SIGTERM and SIGINT stop a consumer whose exec child never acknowledges, the ack timeout halts naming it; a write to a stalled stdout pipe stops too; nothing confirmed, the child reaped (%ds)\n' \
	"$((SECONDS - started))"
