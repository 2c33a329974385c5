# shellcheck shell=bash
# regress/nats.sh: a real 3-node NATS JetStream cluster on loopback for the end-to-end scripts
# and the benchmarks. Source it after regress/lib.sh; it runs as the user the scripts run as
# (rp_run_unprivileged), nats-server from PATH (/usr/sbin/nats-server, Debian's package).
#
#   rp_nats_start [N]              start N (default 3) nodes n1..nN: JetStream on, file store in
#                                  a temp dir, loopback, random free client, cluster and monitor
#                                  ports, one cluster name, full routes; returns once JetStream
#                                  has a meta leader (and N > 1) or dies naming the node's log.
#                                  Exports RP_NATS_DIR, RP_NATS_N, RP_NATS_URLS (nats://h:p,...),
#                                  RP_NATS_PORT_<i>, RP_NATS_MON_<i>, RP_NATS_PID_<i>,
#                                  RP_NATS_LOG_<i>.
#   rp_nats_urls [NODE...]         the client URLs (all nodes, or the ones named: 1 3)
#   rp_nats_url NODE               one node's client URL
#   rp_nats_kill9 NODE             SIGKILL a node (it must be running)
#   rp_nats_stop NODE              SIGTERM a node and wait until it exited (lame-duck free)
#   rp_nats_restart NODE           start a node again on its ports and store (after kill/stop)
#   rp_nats_alive NODE             is the node's process running?
#   rp_nats_stop_all               SIGKILL every node started here (the cleanup trap calls it)
#   rp_nats_cleanup                rp_nats_stop_all, then the temp dir removed unless
#                                  RP_KEEP_CLUSTERS=1 or $status != 0 (kept for inspection)
#   rp_nats_jsz NODE [QUERY]       the node's /jsz monitoring JSON (QUERY e.g. streams=true)
#   rp_nats_meta_leader [NODE...]  the JetStream meta leader's server name as the named (or
#                                  every running) nodes see it; empty when none
#   rp_nats_stream_leader STREAM   the node number (1..N) leading STREAM; empty when none
#   rp_nats_node_of_port PORT      the node number whose client port is PORT
#   rp_nats_client_node PID        the node a process (the consumer) has its TCP connection to
#   rp_nats_wait_meta_leader [S]   wait (up to S seconds, default 60) until the running nodes
#                                  agree on a meta leader
#   rp_nats_wait_stream_leader STREAM [S] [NOT]
#                                  wait until STREAM has a leader (other than node NOT); prints it
#   rp_nats_wait_for S CMD...      run CMD until it succeeds, up to S seconds (0.1 s apart)
# and for the nats_*.sh scripts (see each for its use):
#   rp_nats_build_tools DIR        build regress/tools/nats_dump.c into DIR; sets RP_NATS_DUMP
#   rp_nats_tool STREAM CMD ARG... nats_dump on the cluster's URLs (dump, info, tail, create,
#                                  max-bytes, publish: see regress/tools/nats_dump.c)
#   rp_nats_tail_field STREAM F    one field of the stream's tail: seq, last_complete_end, or
#                                  a header of the last message (Replicant-Writer, ...)
#   rp_nats_sink_url [NODE...]     the --sink argument: nats://h:p,h:p,... (all nodes or those)
#   rp_nats_confirmed NAME SLOT    the slot's confirmed_flush_lsn in cluster NAME
#   rp_nats_wait_confirmed NAME SLOT LSN [S] [PID]
#                                  wait until the slot confirmed LSN (up to S s, default 180);
#                                  1 at once when process PID (the consumer) exited meanwhile
#   rp_nats_dump STREAM FILE       the whole stream into FILE (nats_dump dump, 4 in parallel)
#   rp_nats_load_workload NAME SLOT
#                                  regress/tools/nats_workload.sql into cluster NAME
#   rp_nats_audit NAME FILE        the workload's audit table as the checker reads it (only the
#                                  rows RP_NATS_AUDIT_WHERE selects when set: "seq > 120")
#   rp_nats_check NAME SLOT STREAM PREFIX DIR [CHECKER ARG...]
#                                  dump STREAM into DIR/stream.jsonl, the audit into
#                                  DIR/audit.tsv, and regress/check_nats.py on them with the
#                                  slot's confirmed_flush_lsn; its status
# A script's cleanup trap calls rp_nats_cleanup (before rp_e2e_cleanup or after: both are
# idempotent). All waits are bounded only as a guard against a hang: generous timeouts.

RP_NATS_NODES=()

# rp_nats_wait_for SECONDS CMD...: CMD until it succeeds; 1 when SECONDS passed first.
rp_nats_wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	while ! "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# Ports for a node: client, cluster, monitor, into the array ports (the caller's local),
# distinct from every port chosen before here. It runs in the caller's shell: called as
# $(...) or <(...) it forgot the ports it had chosen, so two nodes could draw the same port
# (a node then died binding it, having answered /varz).
_rp_nats_ports() {
	local p taken=" ${RP_NATS_TAKEN:-} "
	ports=()
	while ((${#ports[@]} < 3)); do
		p=$(rp_free_port) || return 1
		[[ $taken == *" $p "* ]] && continue
		taken+="$p "
		ports+=("$p")
	done
	RP_NATS_TAKEN=$taken
}

_rp_nats_conf() {
	local i=$1 n=$2 j routes=''
	for ((j = 1; j <= n; j++)); do
		((j == i)) && continue
		local cv="RP_NATS_CPORT_$j"
		routes+="${routes:+, }\"nats-route://127.0.0.1:${!cv}\""
	done
	local pv="RP_NATS_PORT_$i" cv="RP_NATS_CPORT_$i" mv="RP_NATS_MON_$i"
	cat <<EOF
server_name: n$i
listen: 127.0.0.1:${!pv}
http: 127.0.0.1:${!mv}
max_payload: 8MB
jetstream {
  store_dir: "$RP_NATS_DIR/n$i/store"
  max_memory_store: 256MB
  max_file_store: 8GB
}
EOF
	if ((n > 1)); then
		cat <<EOF
cluster {
  name: rp_cluster
  listen: 127.0.0.1:${!cv}
  routes: [$routes]
  connect_retries: 120
}
EOF
	fi
}

# the node's process started on its config; its pid into RP_NATS_PID_<i>
_rp_nats_spawn() {
	local i=$1
	nats-server -c "$RP_NATS_DIR/n$i/nats.conf" >>"$RP_NATS_DIR/n$i/server.log" 2>&1 &
	_rp_export "RP_NATS_PID_$i" "$!"
}

_rp_nats_healthy() {
	local mv="RP_NATS_MON_$1"
	curl -sf -m 2 "http://127.0.0.1:${!mv}/varz" >/dev/null 2>&1
}

rp_nats_start() {
	local n=${1:-3} i attempt ports
	command -v nats-server >/dev/null ||
		rp_die "nats-server is not installed (regress/install_deps.sh installs nats-server)"
	command -v curl >/dev/null || rp_die "curl is not installed (regress/install_deps.sh installs it)"
	_rp_export RP_NATS_DIR "$(mktemp -d /tmp/rp-nats.XXXXXX)"
	_rp_export RP_NATS_N "$n"
	for ((i = 1; i <= n; i++)); do
		_rp_nats_ports || rp_die "no free TCP ports for nats node $i"
		_rp_export "RP_NATS_PORT_$i" "${ports[0]}"
		_rp_export "RP_NATS_CPORT_$i" "${ports[1]}"
		_rp_export "RP_NATS_MON_$i" "${ports[2]}"
		_rp_export "RP_NATS_LOG_$i" "$RP_NATS_DIR/n$i/server.log"
		mkdir -p "$RP_NATS_DIR/n$i/store"
	done
	for ((i = 1; i <= n; i++)); do
		_rp_nats_conf "$i" "$n" >"$RP_NATS_DIR/n$i/nats.conf"
	done
	for ((i = 1; i <= n; i++)); do
		for attempt in 1 2 3; do
			_rp_nats_spawn "$i"
			RP_NATS_NODES+=("$i")
			if rp_nats_wait_for 30 _rp_nats_healthy "$i"; then
				break
			fi
			local pv="RP_NATS_PID_$i"
			kill -9 "${!pv}" 2>/dev/null || true
			wait "${!pv}" 2>/dev/null || true
			((attempt < 3)) || { tail -n 20 "$RP_NATS_DIR/n$i/server.log" >&2; rp_die "nats node n$i did not start (log: $RP_NATS_DIR/n$i/server.log)"; }
			# a port taken meanwhile: new ports for this node (the others' routes name only
			# cluster ports, which then are retried by connect_retries)
			_rp_nats_ports || rp_die "no free TCP ports for nats node $i"
			_rp_export "RP_NATS_PORT_$i" "${ports[0]}"
			_rp_export "RP_NATS_MON_$i" "${ports[2]}"
			_rp_nats_conf "$i" "$n" >"$RP_NATS_DIR/n$i/nats.conf"
		done
	done
	_rp_export RP_NATS_URLS "$(rp_nats_urls)"
	if ((n > 1)); then
		rp_nats_wait_for 90 _rp_nats_formed "$n" ||
			rp_die "the nats cluster did not form (all $n nodes running, one JetStream meta leader with every peer current) within 90 s (logs: $RP_NATS_DIR/n*/server.log)"
	else
		rp_nats_wait_for 30 _rp_nats_js_ready 1 || rp_die "JetStream did not start on n1 (log: $RP_NATS_DIR/n1/server.log)"
	fi
}

_rp_nats_js_ready() {
	rp_nats_jsz "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d.get("config") else 1)' 2>/dev/null
}

rp_nats_url() {
	local pv="RP_NATS_PORT_$1"
	printf 'nats://127.0.0.1:%s' "${!pv}"
}

rp_nats_urls() {
	local i list='' nodes=("$@")
	((${#nodes[@]})) || for ((i = 1; i <= RP_NATS_N; i++)); do nodes+=("$i"); done
	for i in "${nodes[@]}"; do list+="${list:+,}$(rp_nats_url "$i")"; done
	printf '%s' "$list"
}

rp_nats_alive() {
	local pv="RP_NATS_PID_$1"
	[[ -n ${!pv:-} ]] && kill -0 "${!pv}" 2>/dev/null
}

rp_nats_kill9() {
	local pv="RP_NATS_PID_$1"
	rp_nats_alive "$1" || rp_die "nats node n$1 is not running (nothing to kill)"
	kill -9 "${!pv}"
	wait "${!pv}" 2>/dev/null || true
	_rp_export "RP_NATS_PID_$1" ""
}

rp_nats_stop() {
	local pv="RP_NATS_PID_$1"
	rp_nats_alive "$1" || return 0
	kill -TERM "${!pv}"
	wait "${!pv}" 2>/dev/null || true
	_rp_export "RP_NATS_PID_$1" ""
}

rp_nats_restart() {
	local i=$1
	rp_nats_alive "$i" && rp_die "nats node n$i is still running"
	printf '\n=== restart %s\n' "$(date -u +%FT%TZ)" >>"$RP_NATS_DIR/n$i/server.log"
	_rp_nats_spawn "$i"
	rp_nats_wait_for 60 _rp_nats_healthy "$i" ||
		{ tail -n 20 "$RP_NATS_DIR/n$i/server.log" >&2; rp_die "nats node n$i did not restart (log: $RP_NATS_DIR/n$i/server.log)"; }
}

rp_nats_stop_all() {
	local i pv
	for ((i = 1; i <= ${RP_NATS_N:-0}; i++)); do
		pv="RP_NATS_PID_$i"
		[[ -n ${!pv:-} ]] || continue
		# (|| true: a killed process's wait status must not end a set -e script's trap)
		kill -9 "${!pv}" 2>/dev/null || true
		wait "${!pv}" 2>/dev/null || true
		_rp_export "RP_NATS_PID_$i" ""
	done
	return 0
}

# Keeps the exit status it was called with, so it can be (part of) an EXIT trap.
rp_nats_cleanup() {
	local rc=$?
	rp_nats_stop_all
	if [[ -n ${RP_NATS_DIR:-} && -d $RP_NATS_DIR ]]; then
		if [[ ${RP_KEEP_CLUSTERS:-0} == 1 || ${status:-0} != 0 ]]; then
			printf 'kept nats cluster files %s\n' "$RP_NATS_DIR"
		else
			rm -rf "$RP_NATS_DIR"
		fi
	fi
	return "$rc"
}

rp_nats_jsz() {
	local mv="RP_NATS_MON_$1"
	curl -sf -m 5 "http://127.0.0.1:${!mv}/jsz${2:+?$2}" 2>/dev/null
}

_rp_nats_running() {
	local i
	for ((i = 1; i <= RP_NATS_N; i++)); do rp_nats_alive "$i" && printf '%s\n' "$i"; done
}

# shellcheck disable=SC2120 # the nodes are optional
rp_nats_meta_leader() {
	local nodes=("$@") i seen='' l
	((${#nodes[@]})) || mapfile -t nodes < <(_rp_nats_running)
	for i in "${nodes[@]}"; do
		l=$(rp_nats_jsz "$i" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("meta_cluster",{}).get("leader",""))' 2>/dev/null)
		[[ -n $l ]] || return 0
		[[ -z $seen || $seen == "$l" ]] || return 0
		seen=$l
	done
	printf '%s' "$seen"
}

# shellcheck disable=SC2119 # every running node
_rp_nats_has_meta_leader() { [[ -n $(rp_nats_meta_leader) ]]; }

# _rp_nats_formed N: all N nodes are running, they agree on a meta leader, and the leader
# counts the N-1 others as current peers. A meta leader alone is not enough: two nodes elect
# one while the third is still joining (or has died: a node can answer /varz and then fail to
# bind its cluster port), and a stream of 3 replicas cannot then be created (error 10005).
_rp_nats_formed() {
	local n=$1 l i
	for ((i = 1; i <= n; i++)); do
		rp_nats_alive "$i" && continue
		printf '\n=== restart %s: the node had exited while the cluster formed\n' "$(date -u +%FT%TZ)" >>"$RP_NATS_DIR/n$i/server.log"
		_rp_nats_spawn "$i"
		return 1
	done
	l=$(rp_nats_meta_leader)
	[[ $l =~ ^n[0-9]+$ ]] || return 1
	rp_nats_jsz "${l#n}" | python3 -c '
import json, sys
m = json.load(sys.stdin).get("meta_cluster") or {}
r = [p for p in m.get("replicas") or [] if p.get("current")]
sys.exit(0 if len(r) >= int(sys.argv[1]) - 1 else 1)' "$n" 2>/dev/null
}

rp_nats_wait_meta_leader() {
	rp_nats_wait_for "${1:-60}" _rp_nats_has_meta_leader
}

# rp_nats_stream_leader STREAM: every running node's view of STREAM's cluster; the leader the
# views agree on (a node that lost its leadership may still say it leads for a moment, so a
# leader is reported only when no running node names another).
rp_nats_stream_leader() {
	local stream=$1 i l seen=''
	for i in $(_rp_nats_running); do
		l=$(rp_nats_jsz "$i" "accounts=true&streams=true" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for a in d.get("account_details") or []:
    for s in a.get("stream_detail") or []:
        if s.get("name") == sys.argv[1]:
            print((s.get("cluster") or {}).get("leader", ""))
' "$stream" 2>/dev/null)
		[[ -n $l ]] || continue
		[[ -z $seen || $seen == "$l" ]] || return 0
		seen=$l
	done
	[[ -n $seen ]] && rp_nats_alive "${seen#n}" && printf '%s' "${seen#n}"
	return 0
}

# rp_nats_wait_caught_up STREAM SECS: every node's own copy of STREAM (its /jsz, not the
# leader's view) holds at least the stream's last sequence as the leader tells it when its
# info first answers. One fault at a time, each healed before the next, is what a cluster of three
# promises to survive. "Current" in the leader's view is not enough: nats-server 2.9.10
# counts a follower current while its store still catches up, and such a node can then win
# an election with its short store (seen: the whole cluster stopped 2 s after two nodes came
# back; the restarted stream ended at 4,749 of 11,065 acknowledged messages).
rp_nats_wait_caught_up() {
	_rp_nats_want=''
	rp_nats_wait_for "${2:-180}" _rp_nats_all_hold "$1"
}

# (the stream's last sequence is read once, when its info first answers: right after a
# restart it may not yet)
_rp_nats_all_hold() {
	local stream=$1 i
	if [[ -z $_rp_nats_want ]]; then
		_rp_nats_want=$(rp_nats_tool "$stream" info 2>/dev/null | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
		[[ -n $_rp_nats_want ]] || return 1
	fi
	for ((i = 1; i <= RP_NATS_N; i++)); do
		rp_nats_jsz "$i" "accounts=true&streams=true" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for a in d.get("account_details") or []:
    for s in a.get("stream_detail") or []:
        if s.get("name") == sys.argv[1]:
            sys.exit(0 if (s.get("state") or {}).get("last_seq", 0) >= int(sys.argv[2]) else 1)
sys.exit(1)' "$stream" "$_rp_nats_want" 2>/dev/null || return 1
	done
}

rp_nats_wait_stream_leader() {
	local stream=$1 secs=${2:-60} not=${3:-} deadline l
	deadline=$((SECONDS + secs))
	while ((SECONDS < deadline)); do
		l=$(rp_nats_stream_leader "$stream")
		if [[ -n $l && $l != "$not" ]]; then
			printf '%s' "$l"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

rp_nats_node_of_port() {
	local i pv
	for ((i = 1; i <= RP_NATS_N; i++)); do
		pv="RP_NATS_PORT_$i"
		[[ ${!pv} == "$1" ]] && { printf '%s' "$i"; return 0; }
	done
	return 1
}

# rp_nats_client_node PID: the node whose client port PID has an established TCP connection
# to (from /proc/net/tcp and the process's socket inodes); empty when none.
rp_nats_client_node() {
	local pid=$1 inodes port
	inodes=$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | sed 's/socket:\[\(.*\)\]/\1/' | sort -u)
	[[ -n $inodes ]] || return 0
	# /proc/net/tcp: local rem st ... inode (field 10); ESTABLISHED is 01; ports in hex
	port=$(awk -v inodes="$inodes" 'BEGIN { n = split(inodes, a, "\n"); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		NR > 1 && $4 == "01" && ($10 in want) { split($3, r, ":"); print r[2] }' /proc/net/tcp)
	for p in $port; do
		rp_nats_node_of_port "$((16#$p))" && return 0
	done
	return 0
}

# ---------------------------------------------------------------- the nats_*.sh scripts' tools

rp_nats_build_tools() {
	local cflags
	cflags=$(pkg-config --cflags --libs libnats) ||
		rp_die "libnats is not installed (regress/install_deps.sh installs libnats-dev)"
	# shellcheck disable=SC2086 # pkg-config's words
	cc -O2 -Wall -o "$1/nats_dump" "$RP_ROOT/regress/tools/nats_dump.c" $cflags ||
		rp_die "regress/tools/nats_dump.c did not build"
	_rp_export RP_NATS_DUMP "$1/nats_dump"
}

rp_nats_tool() {
	local stream=$1
	shift
	"$RP_NATS_DUMP" "$RP_NATS_URLS" "$stream" "$@"
}

rp_nats_tail_field() {
	rp_nats_tool "$1" tail | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = sys.argv[1]
if f in ("last_complete_end",):
    print(d.get(f, ""))
elif f == "seq":
    print((d.get("msg") or d).get("seq", 0))
else:
    print(((d.get("msg") or {}).get("headers") or {}).get(f, ""))
' "$2"
}

# rp_nats_dump STREAM FILE: the whole stream into FILE, read by 4 nats_dump processes over
# consecutive sequence ranges (each get is one round trip to the leader: in parallel)
rp_nats_dump() {
	local stream=$1 file=$2 last k per pids=() rc=0
	last=$(rp_nats_tool "$stream" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
	[[ -n $last ]] || return 1
	per=$(((last + 3) / 4))
	for k in 0 1 2 3; do
		rp_nats_tool "$stream" dump "$((k * per + 1))" "$(((k + 1) * per))" >"$file.$k" &
		pids+=($!)
	done
	for k in 0 1 2 3; do wait "${pids[$k]}" || rc=1; done
	((rc == 0)) && cat "$file".[0-3] >"$file"
	rm -f "$file".[0-3]
	return "$rc"
}

rp_nats_load_workload() {
	rp_psql "$1" -v slot="$2" -f "$RP_ROOT/regress/tools/nats_workload.sql" >/dev/null
}

rp_nats_audit() {
	rp_psql "$1" -c "\\copy (SELECT txid, tbl, id, op, ver FROM audit WHERE ${RP_NATS_AUDIT_WHERE:-true} ORDER BY seq) TO '$2'"
}

rp_nats_check() {
	local name=$1 slot=$2 stream=$3 prefix=$4 dir=$5 sysid confirmed
	shift 5
	sysid=$(rp_psql "$name" -Atc "SELECT system_identifier FROM pg_control_system()")
	confirmed=$(rp_psql "$name" -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
	rp_nats_dump "$stream" "$dir/stream.jsonl" || return 1
	rp_nats_audit "$name" "$dir/audit.tsv" || return 1
	python3 "$RP_ROOT/regress/check_nats.py" "$dir/stream.jsonl" "$dir/audit.tsv" --slot "$slot" \
		--system-id "$sysid" --prefix "$prefix" --confirmed "$confirmed" --ignore-table wl_conf "$@"
}

# shellcheck disable=SC2120 # the nodes are optional
rp_nats_sink_url() {
	local urls
	urls=$(rp_nats_urls "$@")
	printf 'nats://%s' "${urls//nats:\/\//}"
}

rp_nats_confirmed() {
	rp_psql "$1" -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$2'"
}

rp_nats_wait_confirmed() {
	local name=$1 slot=$2 lsn=$3 secs=${4:-180} pid=${5:-} deadline ok
	deadline=$((SECONDS + secs))
	while ((SECONDS < deadline)); do
		ok=$(rp_psql "$name" -Atc "SELECT confirmed_flush_lsn >= '$lsn' FROM pg_replication_slots WHERE slot_name = '$slot'")
		[[ $ok == t ]] && return 0
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
		sleep 0.2
	done
	return 1
}
