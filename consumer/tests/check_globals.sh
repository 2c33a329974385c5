#!/bin/sh
# check_globals.sh LIB [PROGRAM_OBJECT...]
#   Fails when the library archive LIB holds writable process-wide state
#   other than the error slot and the stop flag (issues 12, 42): what a
#   stage needs it is given (a sink's environment, a handle, a callback's
#   argument), so that two sinks, two backfills or two runs can live in one
#   process.  The program's objects (cli/, linked into replicant, never
#   archived) may hold their signal flags and their log's state, and
#   nothing else.
#
#   A symbol counts when it is an object in a writable data section (.data,
#   .bss, their thread-local forms, and .data.rel.local), whether global or
#   file-static; read-only tables (.rodata, .data.rel.ro: const arrays of
#   pointers under PIE, which nm shows as "d" but RELRO maps read-only) do
#   not.  Run by `make unitcheck`.
set -eu
lib=${1:?usage: check_globals.sh LIB [PROGRAM_OBJECT...]}
shift

# object:symbol pairs.  Keep the reason next to each.
allowed_lib='
rp_status.o:rp_error_buf
rp_status.o:rp_error_reason
rp_status.o:rp_error_state
rp_status.o:rp_stop_watched
'
# rp_error_buf, rp_error_reason, rp_error_state: the thread-local error slot (rp_status.h).
# rp_stop_watched: where the program's stop flag is (rp_stop_watch), set once before any
#   thread starts; the library only reads through it.

allowed_prog='
rp_cli_signals.o:stop_requested
rp_cli_signals.o:reopen_requested
rp_cli_log.o:rp_cli_verbose
rp_cli_log.o:rp_cli_log_context
rp_cli_log.o:rp_cli_log_progress
'
# The program's own (cli/):
#   stop_requested, reopen_requested: the SIGINT/SIGTERM and SIGHUP flags;
#   rp_cli_verbose: -v, as pg_recvlogical's verbose (pg_log_info).
#   rp_cli_log_context: while the options are parsed (one thread), the --config line the
#   option being taken came from, for the handlers' usage errors.
#   rp_cli_log_progress: the run's progress display (a terminal's lines), which every log
#   line erases first and draws again after (rp_cli_progress.h); set by the run.

# writable objects of the files given, as object:symbol (an archive's members by name)
writable() {
	objdump -t "$@" | awk '
	/file format/ { obj = $1; sub(/:$/, "", obj); sub(/^.*\//, "", obj); next }
	# "ADDR FLAGS... SECTION SIZE NAME": objects only, in writable data
	$NF != "" && / O / {
		sec = $(NF - 2)
		if (sec ~ /^\.(data|bss|tdata|tbss)(\.|$)/ && sec !~ /^\.data\.rel\.ro/)
			print obj ":" $NF
	}
	# thread-local objects have no O flag in some binutils: take .tbss/.tdata too
	$NF != "" && !/ O / && $(NF - 2) ~ /^\.(tdata|tbss)$/ && $NF !~ /^\./ { print obj ":" $NF }
	' | sort -u
}

bad=0
# check WHAT ALLOWED FILE...
check() {
	what=$1
	allowed=$2
	shift 2
	for s in $(writable "$@"); do
		case "$allowed" in
			*"
$s
"*) ;;
			*)
				echo "check_globals: $what: writable global $s is not on the allowed list (tests/check_globals.sh)" >&2
				bad=1
				;;
		esac
	done
}

check "$lib" "$allowed_lib" "$lib"
[ $# -eq 0 ] || check "the program's objects" "$allowed_prog" "$@"
if [ "$bad" -ne 0 ]; then
	echo "check_globals: give the state to whoever needs it (an environment, a handle) instead" >&2
	exit 1
fi
echo "check_globals: $lib${1:+ and the program's objects}: no writable globals beyond the allowed lists"
