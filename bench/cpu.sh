# shellcheck shell=bash
# bench/cpu.sh: CPU seconds of the two clusters' processes over a timed window, by process
# class, for bench/mirror.sh and bench/snapshot.sh (sourced; needs POSTMASTERS=(SRC_PID DST_PID)).
#
# CPU seconds of the servers' processes (both clusters: backends, walsenders, the apply
# worker, checkpointer ...) over a timed window: cpu_begin, cpu_poll while it runs (every
# 0.1 s; a process seen first in the window counts from zero; the last 0.1 s of one that exits
# is lost), cpu_total; cpu_split names the big ones (walsender, the apply worker, the
# source's and the destination's backends, the rest). Steadier than wall time when other work shares the cores.
#
# A poll forks nothing (builtins only: no $(...), no cat, no sleep): the bench watches a
# 2-core machine that the work it times keeps busy, and forking is dear there. With a command
# substitution per process and a sleep per poll, the poller alone took about 0.4 of a core
# (100 polls of two processes: 3.7 s of CPU in 13.5 s), taken from the run it measured; the
# runs that keep both cores busy (the consumer, floor_dest) lost the most.
TICKS=$(getconf CLK_TCK)
declare -A C0 C1 CLASS
# ticks_read PID: TICKS_OF= user + system ticks of PID; fails once it is gone
ticks_read() {
	local line f
	read -r line 2>/dev/null <"/proc/$1/stat" || return 1
	read -r -a f <<<"${line##*) }" # after "pid (comm) ": state is f[0], utime f[11], stime f[12]
	TICKS_OF=$((f[11] + f[12]))
}
ticks_of() { ticks_read "$1" && printf '%d' "$TICKS_OF"; } # the same on stdout, for a caller outside a poll
# proc_sample PID: TICKS_OF (as ticks_read) and PROC_HWM_KB, its peak RSS in kB (VmHWM; empty
# when unread), for a client measured without /usr/bin/time; builtins only, as a poll
proc_sample() {
	local k v
	PROC_HWM_KB=''
	while read -r k v; do
		# shellcheck disable=SC2034 # read by the caller
		[[ $k == VmHWM: ]] && PROC_HWM_KB=${v%% *}
	done 2>/dev/null <"/proc/$1/status" || true
	ticks_read "$1"
}
# server_pids: SERVER_PIDS=("PID:CLUSTER" ...) of each postmaster and its children
server_pids() {
	local i pm kids pid
	SERVER_PIDS=()
	for i in "${!POSTMASTERS[@]}"; do
		pm=${POSTMASTERS[$i]}
		kids=()
		read -r -a kids 2>/dev/null <"/proc/$pm/task/$pm/children" || true
		for pid in "$pm" "${kids[@]}"; do
			SERVER_PIDS+=("$pid:$i")
		done
	done
}
# pause SECONDS: sleep without a process (a read that times out on a pipe nobody writes to)
pause() {
	if [[ -z ${PAUSE_FD:-} ]]; then
		exec {PAUSE_FD}<> <(:)
	fi
	read -r -t "$1" -u "$PAUSE_FD" _ || true
}
classify() { # PID CLUSTER(0 = source, 1 = destination)
	local cmd=''
	# once per process: its title, up to the first NUL (postgres sets it as one string)
	read -r -d '' cmd 2>/dev/null <"/proc/$1/cmdline" || true
	case $cmd in
	*walsender*) CLASS[$1]=walsender ;;
	*"logical replication worker"*) CLASS[$1]=apply_worker ;;
	*"postgres: postgres postgres"*) (($2 == 1)) && CLASS[$1]=dst_backend || CLASS[$1]=src_backend ;;
	*) CLASS[$1]=other ;;
	esac
}
cpu_begin() {
	local pid e
	C0=() C1=() CLASS=()
	server_pids
	for e in "${SERVER_PIDS[@]}"; do
		pid=${e%:*}
		ticks_read "$pid" || continue
		C0[$pid]=$TICKS_OF C1[$pid]=$TICKS_OF
		classify "$pid" "${e#*:}"
	done
}
cpu_poll() {
	local pid e
	server_pids
	for e in "${SERVER_PIDS[@]}"; do
		pid=${e%:*}
		ticks_read "$pid" || continue
		if [[ -z ${C0[$pid]:-} ]]; then
			C0[$pid]=0
			classify "$pid" "${e#*:}"
		fi
		C1[$pid]=$TICKS_OF
	done
}
secs() { awk -v t="$1" -v hz="$TICKS" 'BEGIN { printf "%.2f", t / hz }'; }
cpu_total() {
	local pid sum=0
	for pid in "${!C1[@]}"; do
		sum=$((sum + C1[$pid] - C0[$pid]))
	done
	secs "$sum"
}
cpu_split() { # "walsender X s, apply_worker Y s, ..." for the classes that used any
	local pid c out=''
	declare -A by=()
	for pid in "${!C1[@]}"; do
		c=${CLASS[$pid]:-other}
		by[$c]=$((${by[$c]:-0} + C1[$pid] - C0[$pid]))
	done
	for c in walsender apply_worker src_backend dst_backend other; do
		[[ -n ${by[$c]:-} ]] && out+="${out:+, }$c $(secs "${by[$c]}")"
	done
	printf '%s' "$out"
}


# cpu_sampler_start FILE / cpu_sampler_stop: cpu_begin, then cpu_poll every 0.1 s in a
# background shell while the caller waits on something else (snapshot.sh's waits take a
# second each: polling between them would miss the short-lived backends); stop hands its
# counts back through FILE, so cpu_total and cpu_split then read them as after cpu_poll.
cpu_sampler_start() {
	CPU_FILE=$1
	cpu_begin
	(
		trap 'for p in "${!C1[@]}"; do printf "%s %s %s %s\n" "$p" "${C0[$p]}" "${C1[$p]}" "${CLASS[$p]:-other}"; done >"$CPU_FILE.tmp"
			mv "$CPU_FILE.tmp" "$CPU_FILE"; exit 0' TERM
		while :; do
			cpu_poll
			pause 0.1
		done
	) &
	CPU_SAMPLER=$!
}
cpu_sampler_stop() {
	local p a b c
	kill -TERM "$CPU_SAMPLER" 2>/dev/null || true
	wait "$CPU_SAMPLER" 2>/dev/null || true
	C0=() C1=() CLASS=()
	while read -r p a b c; do
		C0[$p]=$a C1[$p]=$b CLASS[$p]=$c
	done <"$CPU_FILE"
}
