# shellcheck shell=bash disable=SC2034 # RUN_* are the caller's to read
# bench/tools/measure.sh: one measured run, for the memory benches (consumer_memory.sh,
# reader_memory.sh). Source it; it uses the caller's now() (seconds, $EPOCHREALTIME) and
# sub A B (A - B, one decimal).
#
#   run_measured LOG CMD...   run CMD, stdout to /dev/null, stderr to LOG; sets RUN_RC (its
#                             exit status), RUN_S (seconds) and RUN_RSS_KB (its peak RSS:
#                             /usr/bin/time -v's "Maximum resident set size" when
#                             /usr/bin/time exists, else VmHWM sampled every 0.1 s)

run_measured() {
	local log=$1 a pid line hwm=0 tfile=$1.time timed=0
	shift
	RUN_RC=0
	[[ -x /usr/bin/time ]] && timed=1
	a=$(now)
	if ((timed)); then
		/usr/bin/time -v -o "$tfile" "$@" 2>"$log" >/dev/null &
	else
		"$@" 2>"$log" >/dev/null &
	fi
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if ((!timed)); then
			line=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
			[[ -n $line ]] && hwm=$line
		fi
		sleep 0.1
	done
	wait "$pid" || RUN_RC=$?
	RUN_S=$(sub "$(now)" "$a")
	if ((timed)); then
		RUN_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
	else
		RUN_RSS_KB=$hwm
	fi
}
