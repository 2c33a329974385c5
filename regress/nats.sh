# shellcheck shell=bash
# regress/nats.sh: a real 3-node NATS JetStream cluster on loopback for the benchmarks
# (bench/nats_sink.sh, bench/fanout.sh; the end-to-end tests have RpTest::Nats in
# test/perl/RpTest.pm). Source it after regress/lib.sh; it runs as the user the benchmarks run
# as (rp_run_unprivileged), nats-server from PATH (/usr/sbin/nats-server, Debian's package).
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
#   rp_nats_sink_url [NODE...]     the --sink argument: nats://h:p,h:p,... (all nodes or those)
#   rp_nats_alive NODE             is the node's process running?
#   rp_nats_stop_all               SIGKILL every node started here (the cleanup trap calls it)
#   rp_nats_cleanup                rp_nats_stop_all, then the temp dir removed unless
#                                  RP_KEEP_CLUSTERS=1 or $status != 0 (kept for inspection)
#   rp_nats_jsz NODE [QUERY]       the node's /jsz monitoring JSON (QUERY e.g. streams=true)
#   rp_nats_meta_leader [NODE...]  the JetStream meta leader's server name as the named (or
#                                  every running) nodes see it; empty when none
#   rp_nats_wait_for S CMD...      run CMD until it succeeds, up to S seconds (0.1 s apart)
#   rp_nats_build_tools DIR        build regress/tools/nats_dump.c into DIR; sets RP_NATS_DUMP
#   rp_nats_tool STREAM CMD ARG... nats_dump on the cluster's URLs (dump, info, tail, create,
#                                  max-bytes, publish: see regress/tools/nats_dump.c)
# A benchmark's cleanup trap calls rp_nats_cleanup (idempotent).

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

# ---------------------------------------------------------------- nats_dump

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

# shellcheck disable=SC2120 # the nodes are optional
rp_nats_sink_url() {
	local urls
	urls=$(rp_nats_urls "$@")
	printf 'nats://%s' "${urls//nats:\/\//}"
}
