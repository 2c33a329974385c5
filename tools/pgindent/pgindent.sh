#!/bin/sh
# tools/pgindent/pgindent.sh [--check] [FILE...]: PostgreSQL's layout (pgindent's
# pg_bsd_indent options, src/tools/pgindent/pgindent) on the C sources of plugin/,
# common/ and consumer/ (or the FILEs named), with the typedefs of
# tools/pgindent/typedefs.list (tools/pgindent/typedefs.sh writes it), but for the files
# tools/pgindent/exclude_file_patterns names (pg_bsd_indent stops on them). --check changes
# nothing and fails naming each file that is not laid out so (make unitcheck runs it).
# Needs pg_bsd_indent (Debian's pg-bsd-indent; regress/install_deps.sh installs it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
indent=${PG_BSD_INDENT:-pg_bsd_indent}
command -v "$indent" >/dev/null 2>&1 ||
	{ echo "pgindent.sh: $indent is not installed (Debian: pg-bsd-indent; regress/install_deps.sh)" >&2; exit 1; }
# pgindent's own options (PostgreSQL 15 to 18)
opts="-bad -bap -bbb -bc -bl -cli1 -cp33 -cdb -nce -d0 -di12 -nfc1 -i4 -l79 -lp -lpl -nip -npro -sac -tpg -ts4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 0 ]; then
	cd "$root"
	# shellcheck disable=SC2046 # the paths hold no blank
	set -- $(find plugin common consumer \( -name 'obj*' -o -name corpus -o -name work \) -prune -o -name '*.[ch]' -print | sort)
fi
grep -v '^#' "$here/exclude_file_patterns" >"$tmp/exclude"
bad=0
for f in "$@"; do
	if printf '%s\n' "$f" | grep -Eqf "$tmp/exclude"; then
		continue
	fi
	# shellcheck disable=SC2086 # the options are words
	if ! "$indent" $opts -U"$here/typedefs.list" "$f" "$tmp/out" 2>"$tmp/err"; then
		echo "pgindent.sh: $f: $(head -n 1 "$tmp/err")" >&2
		bad=1
		continue
	fi
	cmp -s "$f" "$tmp/out" && continue
	if [ $check -eq 1 ]; then
		echo "pgindent.sh: $f is not laid out as pgindent lays it out (tools/pgindent/pgindent.sh $f)" >&2
		bad=1
	else
		cat "$tmp/out" >"$f"
	fi
done
exit $bad
