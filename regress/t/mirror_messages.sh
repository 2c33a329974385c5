#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_messages.sh: logical messages reach the mirror by prefix, fail-closed, and
# routed ones land exactly once.
#
# Proves G1 (effect-once) and G3 (fail-closed) for logical messages in the PostgreSQL mirror:
#   - routed prefixes (--message-route): transactional messages land in replicant.messages
#     with their transaction's commit_lsn, in the same destination transaction as the
#     transaction's rows, and vanish with a rolled-back transaction; non-transactional ones
#     land with commit_lsn NULL, also when emitted inside a transaction that rolls back;
#     content bytes (zero bytes included) are kept exactly;
#   - an ignored prefix (--message-ignore): no row, the run goes on;
#   - exactly once across 4 SIGKILLs of the consumer while the messages flow: every expected
#     message is there once (count = distinct = expected), nothing else;
#   - an unknown prefix, non-transactional and then transactional: exit 3 naming the prefix
#     (never the content, which carries a canary), the destination checkpoint and the slot
#     held; rerun with the prefix ignored, or routed, completes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

N=${N:-300}
KILLS=${KILLS:-4}
SLOT=msgs
CANARY='CANARY-5a1b0c3e'
work=$(mktemp -d /tmp/rp-mirror-messages.XXXXXX)
status=1
consumer_pid=
workload_pid=
cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_messages "$work/run-*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE items (id int PRIMARY KEY, note text);
CREATE TABLE fence (id serial PRIMARY KEY);
-- iteration i: a transactional message routed (content tx-i and a zero byte), one with the
-- ignored prefix, a non-transactional routed one (nt-i) and an ignored one, a row; every
-- tenth transaction rolls back (its transactional message and row vanish, the
-- non-transactional messages stay)
CREATE PROCEDURE emits(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		PERFORM pg_logical_emit_message(true, 'route.tx', convert_to('tx-' || i, 'UTF8') || '\x00ff'::bytea);
		PERFORM pg_logical_emit_message(true, 'noise', 'tx noise ' || i);
		INSERT INTO items VALUES (i, 'row ' || i);
		PERFORM pg_logical_emit_message(false, 'route.nt', convert_to('nt-' || i, 'UTF8'));
		PERFORM pg_logical_emit_message(false, 'noise', 'nt noise ' || i);
		IF i % 10 = 0 THEN
			ROLLBACK;
		ELSE
			COMMIT;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

ROUTE=(--message-route route.tx --message-route route.nt --message-ignore noise)
runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -v -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$work/state" --batch-txns 5 --batch-ms 50 "$@" 2>"$work/run-$runs.err" &
	consumer_pid=$!
}
# consumer EXPECTED_STATUS ARG...: a run in the foreground (-n)
consumer() {
	local expect=$1 rc=0
	shift
	start_consumer -n "$@"
	wait "$consumer_pid" || rc=$?
	consumer_pid=
	err=$work/run-$runs.err
	((rc == expect)) || { cat "$err"; fail "run $runs ($*) exited with $rc, expected $expect"; }
}
err_has() {
	grep -qF -- "$1" "$err" || { cat "$err"; fail "run $runs: stderr does not say: $1"; }
}
fence() { rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()"; }
dst_ckpt() { rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'"; }
acked_within() {
	local ok
	ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$1' FROM pg_replication_slots WHERE slot_name = '$SLOT'")
	[[ $ok == t ]] || fail "$2: the slot acknowledged past the destination checkpoint $1"
}

# ---- routed and ignored messages, with SIGKILLs while they flow
rp_psql src -c "CALL emits($N)" >"$work/workload.out" 2>&1 &
workload_pid=$!
start_consumer "${ROUTE[@]}"
for ((k = 1; k <= KILLS; k++)); do
	ms=$((300 + RANDOM % 900))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -0 "$consumer_pid" 2>/dev/null || { wait "$consumer_pid" || true; fail "consumer run $runs exited by itself"; }
	kill -9 "$consumer_pid"
	wait "$consumer_pid" 2>/dev/null || true
	ck=$(rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'" 2>/dev/null || true)
	[[ -z $ck ]] || acked_within "$ck" "kill $k"
	have=$(rp_psql dst -Atc "SELECT count(*) FROM replicant.messages" 2>/dev/null || echo 0)
	printf 'kill %d after %dms: %s messages in the destination, checkpoint %s\n' "$k" "$ms" "$have" "${ck:-none}"
	start_consumer "${ROUTE[@]}"
done
wait "$workload_pid" || { cat "$work/workload.out"; fail "the workload failed"; }
workload_pid=
kill -9 "$consumer_pid"
wait "$consumer_pid" 2>/dev/null || true
consumer_pid=
end=$(fence)
consumer 0 "${ROUTE[@]}" -E "$end"

q() { rp_psql dst -Atc "$1"; }
committed=$((N - N / 10))
[[ $(q "SELECT count(*) FROM replicant.messages WHERE prefix NOT IN ('route.tx', 'route.nt')") == 0 ]] ||
	fail "messages with other prefixes are in replicant.messages: $(q "SELECT string_agg(DISTINCT prefix, ',') FROM replicant.messages")"
read -r n_tx d_tx < <(q "SELECT count(*), count(DISTINCT content) FROM replicant.messages WHERE prefix = 'route.tx'" | tr '|' ' ')
((n_tx == committed && d_tx == committed)) ||
	fail "$n_tx transactional messages ($d_tx distinct), expected $committed once each"
# the exact bytes, in commit order
exp=$(q "SELECT md5(string_agg(encode(convert_to('tx-' || i, 'UTF8') || '\\x00ff'::bytea, 'hex'), ',' ORDER BY i))
         FROM generate_series(1, $N) i WHERE i % 10 <> 0")
got=$(q "SELECT md5(string_agg(encode(content, 'hex'), ',' ORDER BY commit_lsn)) FROM replicant.messages WHERE prefix = 'route.tx'")
[[ $exp == "$got" ]] || fail "the transactional messages are not tx-i for the committed i, in commit order, with their bytes"
bad=$(q "SELECT count(*) FROM replicant.messages WHERE prefix = 'route.tx' AND (NOT transactional OR commit_lsn IS NULL OR commit_lsn <= lsn)")
((bad == 0)) || fail "$bad transactional messages without a commit_lsn after their own LSN"
[[ $(q "SELECT count(DISTINCT commit_lsn) FROM replicant.messages WHERE prefix = 'route.tx'") == "$committed" ]] ||
	fail "transactional messages share commit LSNs"
# the transactional message and its transaction's row: same commit, both there
[[ $(q "SELECT count(*) FROM items") == "$committed" ]] || fail "items has $(q "SELECT count(*) FROM items") rows, expected $committed"
read -r n_nt d_nt < <(q "SELECT count(*), count(DISTINCT content) FROM replicant.messages WHERE prefix = 'route.nt'" | tr '|' ' ')
((n_nt == N && d_nt == N)) || fail "$n_nt non-transactional messages ($d_nt distinct), expected $N once each"
[[ $(q "SELECT count(*) FROM replicant.messages WHERE prefix = 'route.nt' AND (transactional OR commit_lsn IS NOT NULL)") == 0 ]] ||
	fail "non-transactional messages stored as transactional"
exp=$(q "SELECT md5(string_agg(encode(convert_to('nt-' || i, 'UTF8'), 'hex'), ',' ORDER BY i)) FROM generate_series(1, $N) i")
got=$(q "SELECT md5(string_agg(encode(content, 'hex'), ',' ORDER BY lsn)) FROM replicant.messages WHERE prefix = 'route.nt'")
[[ $exp == "$got" ]] || fail "the non-transactional messages are not nt-1..nt-$N in LSN order"

# ---- an unknown prefix: non-transactional, then transactional
rp_psql src -c "SELECT pg_logical_emit_message(false, 'mystery', '$CANARY nt')" \
	-c "INSERT INTO items VALUES (100000, 'after the mystery')" >/dev/null
end=$(fence)
ck_before=$(dst_ckpt)
consumer 3 "${ROUTE[@]}" -E "$end"
err_has 'prefix "mystery" is neither routed nor ignored'
err_has 'halted (sink)'
[[ $(dst_ckpt) == "$ck_before" ]] || fail "the unknown non-transactional prefix moved the checkpoint"
acked_within "$ck_before" "unknown non-transactional prefix"
[[ $(q "SELECT count(*) FROM items WHERE id = 100000") == 0 ]] || fail "a transaction after the unknown message was applied"
consumer 0 "${ROUTE[@]}" --message-ignore mystery -E "$end"
[[ $(q "SELECT count(*) FROM items WHERE id = 100000") == 1 ]] || fail "the rerun ignoring mystery did not go on"
[[ $(q "SELECT count(*) FROM replicant.messages WHERE prefix = 'mystery'") == 0 ]] || fail "the ignored prefix has rows"

rp_psql src -c "BEGIN" -c "INSERT INTO items VALUES (100001, 'with mystery2')" \
	-c "SELECT pg_logical_emit_message(true, 'mystery2', '$CANARY tx')" -c "COMMIT" >/dev/null
end=$(fence)
ck_before=$(dst_ckpt)
consumer 3 "${ROUTE[@]}" -E "$end"
err_has 'prefix "mystery2" is neither routed nor ignored'
[[ $(dst_ckpt) == "$ck_before" ]] || fail "the unknown transactional prefix moved the checkpoint"
acked_within "$ck_before" "unknown transactional prefix"
[[ $(q "SELECT count(*) FROM items WHERE id = 100001") == 0 ]] || fail "the halting transaction's row was applied"
consumer 0 "${ROUTE[@]}" --message-route mystery2 -E "$end"
[[ $(q "SELECT count(*) FROM items WHERE id = 100001") == 1 ]] || fail "the rerun routing mystery2 did not apply the transaction"
[[ $(q "SELECT count(*) FROM replicant.messages WHERE prefix = 'mystery2' AND transactional AND commit_lsn IS NOT NULL") == 1 ]] ||
	fail "the routed mystery2 message is not there once"

leaks=$(grep -lF -- "$CANARY" "$work"/run-*.err || true)
[[ -z $leaks ]] || fail "message content leaked into: $leaks"

status=0
printf 'PASS mirror_messages: %d runs (%d SIGKILLs); %d transactional and %d non-transactional routed messages exactly once, ignored prefixes dropped, unknown prefixes halt with exit 3 naming them (%ds)\n' \
	"$runs" "$KILLS" "$n_tx" "$n_nt" "$((SECONDS - started))"
