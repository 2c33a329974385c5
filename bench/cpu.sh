# shellcheck shell=bash
# bench/cpu.sh: CPU seconds of the two clusters' processes over a timed window, by process
# class, for bench/mirror.sh and bench/snapshot.sh (sourced; needs POSTMASTERS=(SRC_PID DST_PID)).
#
# CPU seconds of the servers' processes (both clusters: backends, walsenders, the apply
# worker, checkpointer ...) over a timed window: cpu_begin, cpu_poll while it runs (every
# 0.1 s; a process seen first in the window counts from zero; the last 0.1 s of one that exits
# is lost), cpu_total; cpu_split names the big ones (walsender, the apply worker, the
# source's and the destination's backends, the rest). Steadier than wall time when other work shares the cores.
TICKS=$(getconf CLK_TCK)
declare -A C0 C1 CLASS
ticks_of() { # user + system ticks of PID, or failure once it is gone
	local line f
	read -r line 2>/dev/null <"/proc/$1/stat" || return 1
	read -r -a f <<<"${line##*) }" # after "pid (comm) ": state is f[0], utime f[11], stime f[12]
	printf '%d' $((f[11] + f[12]))
}
server_pids() { # "PID:CLUSTER" of each postmaster and its children
	local pm i
	for i in "${!POSTMASTERS[@]}"; do
		pm=${POSTMASTERS[$i]}
		for pid in "$pm" $(cat "/proc/$pm/task/$pm/children" 2>/dev/null || true); do
			printf '%s:%s ' "$pid" "$i"
		done
	done
}
classify() { # PID CLUSTER(0 = source, 1 = destination)
	local cmd
	cmd=$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true)
	case $cmd in
	*walsender*) CLASS[$1]=walsender ;;
	*"logical replication worker"*) CLASS[$1]=apply_worker ;;
	*"postgres: postgres postgres"*) (($2 == 1)) && CLASS[$1]=dst_backend || CLASS[$1]=src_backend ;;
	*) CLASS[$1]=other ;;
	esac
}
cpu_begin() {
	local pid t e
	C0=() C1=() CLASS=()
	for e in $(server_pids); do
		pid=${e%:*}
		t=$(ticks_of "$pid") || continue
		C0[$pid]=$t C1[$pid]=$t
		classify "$pid" "${e#*:}"
	done
}
cpu_poll() {
	local pid t e
	for e in $(server_pids); do
		pid=${e%:*}
		t=$(ticks_of "$pid") || continue
		if [[ -z ${C0[$pid]:-} ]]; then
			C0[$pid]=0
			classify "$pid" "${e#*:}"
		fi
		C1[$pid]=$t
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
			sleep 0.1 &
			wait $!
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
