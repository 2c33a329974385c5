#!/usr/bin/env bash
# check_man.sh [REPLICANT] [MANPAGE]
#   Fails when the man page and --help disagree: an option that
#   "replicant --help" lists (or "replicant verify-snapshot --help") with
#   no entry in doc/replicant.1, or an entry there for an option the help
#   does not list.  An entry is the tag line of a .TP paragraph; the main
#   program's are before ".SH VERIFY-SNAPSHOT", verify-snapshot's after it,
#   "replicant verify"'s in ".SH MIRROR VERIFY".
#   Also fails when groff warns about the page (when groff is installed).
#   Exit 0 when they agree; the differences on stderr otherwise.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${1:-$root/consumer/replicant}
man=${2:-$root/doc/replicant.1}

# help_opts: the options the help text on stdin defines, one a line.  An
# option line is indented 2 to 6 blanks and starts with '-' (descriptions
# continue at column 25); its option part ends at two blanks, and may hold
# several options separated by ", ".
help_opts() {
	grep -E '^ {2,6}-' | sed -E 's/^ +//; s/  .*//' |
		grep -oE '(^|[ ,])(--[a-z][a-z0-9-]*|-[A-Za-z?])' | sed -E 's/^[ ,]//' | sort -u
}

# man_opts: the options on the .TP tag lines of the roff on stdin.
man_opts() {
	awk 'tag { print; tag = 0 } /^\.TP/ { tag = 1 }' | sed 's/\\-/-/g' |
		grep -oE '(^|[^-a-zA-Z0-9])(--[a-z][a-z0-9-]*|-[A-Za-z?]([^-a-zA-Z0-9]|$))' |
		sed -E 's/^[^-]+//; s/^(-[A-Za-z?]).*/\1/' | sort -u
}

# compare WHAT HELP MAN: differences of two sorted lists, as messages
compare() {
	local what=$1 rc=0 o
	for o in $(comm -23 <(echo "$2") <(echo "$3")); do
		echo "check_man: $what: option $o is in --help but not in the man page" >&2
		rc=1
	done
	for o in $(comm -13 <(echo "$2") <(echo "$3")); do
		echo "check_man: $what: option $o is in the man page but not in --help" >&2
		rc=1
	done
	return "$rc"
}

[[ -x $bin ]] || { echo "check_man: no program $bin (build it first)" >&2; exit 1; }
[[ -f $man ]] || { echo "check_man: no man page $man" >&2; exit 1; }

main_help=$("$bin" --help | help_opts)
verify_help=$("$bin" verify-snapshot --help | help_opts)
main_man=$(sed '/^\.SH VERIFY-SNAPSHOT/,$d' "$man" | man_opts)
verify_man=$(sed -n '/^\.SH VERIFY-SNAPSHOT/,/^\.SH [^V]/p' "$man" | sed '/^\.SH MIRROR VERIFY/,$d' | man_opts)
dbverify_help=$("$bin" verify --help | help_opts)
dbverify_man=$(sed -n '/^\.SH MIRROR VERIFY/,/^\.SH /p' "$man" | man_opts)

# a help that printed nothing must not pass as agreeing with an empty page
if (($(wc -l <<<"$main_help") < 20)) || (($(wc -l <<<"$verify_help") < 3)); then
	echo "check_man: --help listed too few options (main $(wc -l <<<"$main_help"), verify-snapshot $(wc -l <<<"$verify_help"))" >&2
	exit 1
fi
rc=0
compare "replicant" "$main_help" "$main_man" || rc=1
compare "replicant verify-snapshot" "$verify_help" "$verify_man" || rc=1
compare "replicant verify" "$dbverify_help" "$dbverify_man" || rc=1
grep -q 'verify\\-snapshot' "$man" || { echo "check_man: verify-snapshot is not documented" >&2; rc=1; }

# the migration subcommands: each its own .SH section, up to the next one
for sub in sync-sequences wait; do
	sub_help=$("$bin" "$sub" --help | help_opts)
	sub_man=$(sed -n "/^\.SH ${sub^^}\$/,/^\.SH /p" "$man" | sed '$d' | man_opts)
	(($(wc -l <<<"$sub_help") >= 3)) || { echo "check_man: $sub --help listed too few options" >&2; rc=1; }
	compare "replicant $sub" "$sub_help" "$sub_man" || rc=1
done

if command -v groff >/dev/null; then
	warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
	if [[ -n $warnings ]]; then
		echo "check_man: groff warns about $man:" >&2
		echo "$warnings" >&2
		rc=1
	fi
fi
if ((rc == 0)); then
	echo "check_man: $(wc -l <<<"$main_help") options of replicant and $(wc -l <<<"$verify_help") of verify-snapshot, in --help and the man page alike"
fi
exit "$rc"
