#!/bin/sh
# check_globals.sh LIB
#   Fails when the library archive LIB holds writable process-wide state
#   other than the allowed list below (issue 12): what a stage needs it is
#   given (a sink's environment, a handle, a callback's argument), so that
#   two sinks, two backfills or two runs can live in one process.
#
#   A symbol counts when it is an object in a writable data section (.data,
#   .bss, their thread-local forms, and .data.rel.local), whether global or
#   file-static; read-only tables (.rodata, .data.rel.ro: const arrays of
#   pointers under PIE) do not.  Run by `make unitcheck`.
set -eu
lib=${1:?usage: check_globals.sh LIB}

# object:symbol pairs.  Keep the reason next to each.
allowed='
rp_status.o:rp_error_buf
rp_status.o:rp_error_reason
rp_status.o:rp_stop_flag
rp_uuid7.o:uuid7_last_ms
rp_uuid7.o:uuid7_counter
rp_uuid7.o:uuid7_lock
rp_pipe.o:installed.0
rp_mirror.o:rp_pg_div
rp_mirror.o:rp_pg_bk_lock
rp_mirror_backfill.o:rp_pg_bf
rp_mirror_snapshot.o:rp_pg_snap
rp_verify.o:long_options.0
'
# rp_error_buf, rp_error_reason: the thread-local error slot (rp_status.h).
# rp_stop_flag: the stop that SIGINT/SIGTERM ask for (a signal flag).
# uuid7_*: UUIDv7 stay monotonic across every generator of the process (RFC 9562 6.2).
# installed.0 (rp_pipe.c): the stop's wake-up handler (SIGUSR2) is installed once per process.
# Still to go (issue 12, other parts):
#   rp_pg_div, rp_pg_bk_lock, rp_pg_bf, rp_pg_snap: the mirror's statics (one mirror
#   per process), going with the mirror package;
#   long_options.0 (rp_verify.c): a getopt table that can be const.

found=$(objdump -t "$lib" | awk '
	/file format/ { obj = $1; sub(/:$/, "", obj); next }
	# "ADDR FLAGS... SECTION SIZE NAME": objects only, in writable data
	$NF != "" && / O / {
		sec = $(NF - 2)
		if (sec ~ /^\.(data|bss|tdata|tbss)(\.|$)/ && sec !~ /^\.data\.rel\.ro/)
			print obj ":" $NF
	}
	# thread-local objects have no O flag in some binutils: take .tbss/.tdata too
	$NF != "" && !/ O / && $(NF - 2) ~ /^\.(tdata|tbss)$/ && $NF !~ /^\./ { print obj ":" $NF }
' | sort -u)

bad=0
for s in $found; do
	case "$allowed" in
		*"
$s
"*) ;;
		*)
			echo "check_globals: $lib: writable global $s is not on the allowed list (tests/check_globals.sh)" >&2
			bad=1
			;;
	esac
done
if [ "$bad" -ne 0 ]; then
	echo "check_globals: give the state to whoever needs it (an environment, a handle) instead" >&2
	exit 1
fi
echo "check_globals: $lib: no writable globals beyond the allowed list"
