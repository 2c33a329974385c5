#!/usr/bin/env bash
# regress/t/nats_dump_detached.sh: the nats tests' reader (regress/tools/nats_dump.c) gets its
# answer from the cluster while the server it connected to first cannot give one.
#
# The failure this guards against: in t/nats_cluster.sh (c), after two nodes were restarted, the
# node the reader had connected to answered every stream info request with "JetStream system
# temporarily unavailable" (10008) from its own view of the meta group, while the other nodes
# served the stream (the consumer published on). The reader retried on that one connection for
# its 120 s and failed the step. It now connects again, to the next server, after 5 s of such
# answers.
#
# Here the server that cannot answer is a JetStream node configured as a member of a 3-node
# cluster whose other members never start: it has no meta leader, ever. First the test shows
# that a reader that reaches only that node gets no answer (so the next check proves
# something); then a reader given that node first (NATS_DUMP_IN_ORDER) and the real cluster's
# nodes after it must print the real stream's info, well inside its own 120 s retry limit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"

STREAM=DETACHED
work=$(mktemp -d /tmp/rp-nats-detached.XXXXXX)
status=1
lone_pid=
cleanup() {
	local rc=$?
	[[ -n $lone_pid ]] && { kill -9 "$lone_pid" 2>/dev/null || true; wait "$lone_pid" 2>/dev/null || true; }
	rp_nats_cleanup || true
	if ((status == 0 && rc == 0)); then rm -rf "$work"; else echo "kept $work for inspection" >&2; fi
}
trap cleanup EXIT
fail() { printf 'FAIL nats_dump_detached: %s\n' "$*" >&2; exit 1; }

rp_nats_start 3
rp_nats_build_tools "$work"
rp_nats_tool "$STREAM" create detached.x -1 3 >/dev/null
rp_nats_tool "$STREAM" publish detached.x.a one >/dev/null

# the detached node: a cluster member whose two peers (free ports nobody listens on) never come
ports=()
while ((${#ports[@]} < 5)); do
	p=$(rp_free_port)
	[[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
done
read -r lport lcport lmon r1 r2 <<<"${ports[*]}"
mkdir -p "$work/lone/store"
cat >"$work/lone/nats.conf" <<EOF
server_name: lone
listen: 127.0.0.1:$lport
http: 127.0.0.1:$lmon
jetstream {
  store_dir: "$work/lone/store"
  max_memory_store: 64MB
  max_file_store: 256MB
}
cluster {
  name: rp_detached
  listen: 127.0.0.1:$lcport
  routes: ["nats-route://127.0.0.1:$r1", "nats-route://127.0.0.1:$r2"]
}
EOF
nats-server -c "$work/lone/nats.conf" >"$work/lone/server.log" 2>&1 &
lone_pid=$!
rp_nats_wait_for 30 curl -sf -m 2 "http://127.0.0.1:$lmon/varz" -o /dev/null ||
	fail "the detached node did not start (log: $work/lone/server.log)"
lone=nats://127.0.0.1:$lport

# the detached node alone: no answer within 15 s (the reader keeps retrying it)
if out=$(NATS_DUMP_IN_ORDER=1 timeout 15 "$RP_NATS_DUMP" "$lone" "$STREAM" info 2>"$work/lone.err"); then
	fail "the detached node answered stream info ($out): this test proves nothing"
fi
echo 'the detached node alone: no answer within 15 s'


# the detached node first, the cluster after it: the cluster's answer
start=$SECONDS
out=$(NATS_DUMP_IN_ORDER=1 timeout 90 "$RP_NATS_DUMP" "$lone,$RP_NATS_URLS" "$STREAM" info 2>"$work/both.err") ||
	fail "no stream info through the detached node and then the cluster ($(tail -n 2 "$work/both.err" | tr '\n' ' '))"
[[ $out == *'"last_seq":1'* ]] || fail "unexpected stream info: $out"
printf 'the detached node first, then the cluster: %s (%ds)\n' "$out" "$((SECONDS - start))"

status=0
printf 'PASS nats_dump_detached: the reader left a server that could not answer for one that could\n'
