#!/bin/sh
# check_layers.sh [README]
#   Fails when the consumer's sources break the rules of consumer/README.md
#   (issue 42), run from consumer/ by `make unitcheck`, beside check_globals.sh:
#
#   layers     an #include "stage/file.h" must name a stage listed at or before
#              the including file's own in the README's table (its rows, in
#              order, are the stage order: the one source of truth, parsed
#              here); a bare "file.h" is ../common/.  A sink folder includes no
#              other sink's files, and a private header (*_int.h) is included
#              from its own folder only (tests/ and fuzz/ may look inside).
#   one way    one identifier quoter (base/rp_sql.c: no PQescapeIdentifier( and
#              no hand-written quote-doubling loop elsewhere), one clock
#              (clock_gettime and gettimeofday only in base/rp_clock.h), one LSN
#              formatter (%X/%X only in ../common/rp_lsn.c).
#   length     no function over 100 lines (its braces included) in the library
#              stages, except the value-encoding switches listed below and in
#              the README.
set -eu
readme=${1:-README.md}
bad=0
fail() {
	echo "check_layers: $*" >&2
	bad=1
}

# The stage order: the table's rows whose first cell is a folder ("`base/`").
stages=$(awk '
	/^\| folder \|/ { intable = 1; next }
	intable && !/^\|/ { exit }
	intable && /^\| `[^`]*\/` \|/ { s = $0; sub(/^\| `/, "", s); sub(/` \|.*/, "", s); print s }
' "$readme")
[ -n "$stages" ] || { echo "check_layers: no stage table in $readme" >&2; exit 1; }

# Every C file of the consumer and of ../common, with its stage (longest folder prefix).
files=$(find . ../common \( -name 'obj*' -o -name corpus \) -prune -o \( -name '*.c' -o -name '*.h' \) -print |
	sed 's#^\./##' | sort)

# One awk over every file: each #include "..." against the order.
viol=$(awk -v stages="$stages" '
	function stage_of(path,   i, best) {
		best = ""
		for (i = 1; i <= ns; i++)
			if (index(path, st[i]) == 1 && length(st[i]) > length(best))
				best = st[i]
		return best
	}
	function dirname(path) { sub(/\/[^\/]*$/, "", path); return path }
	BEGIN {
		ns = split(stages, st, "\n")
		for (i = 1; i <= ns; i++) idx[st[i]] = i
	}
	FNR == 1 {
		fs = stage_of(FILENAME); dir = dirname(FILENAME)
		if (fs == "") print FILENAME ": its folder is not a stage of the table"
	}
	fs != "" && /^[ \t]*#[ \t]*include[ \t]*"/ {
		inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
		if (inc !~ /\//) {
			# bare: the codec, or a file beside the includer (the tests kit)
			if ((getline junk < (dir "/" inc)) >= 0) { close(dir "/" inc); next }
			ts = "../common/"
		} else
			ts = stage_of(inc)
		where = FILENAME ":" FNR ": includes \"" inc "\""
		if (ts == "") { print where ", which is in no stage of the table"; next }
		if (idx[ts] > idx[fs]) print where ": " ts " comes after " fs " in the stage order"
		if (fs ~ /^sinks\// && ts ~ /^sinks\// && fs != ts) print where ": one sink includes another sink files"
		if (inc ~ /_int\.h$/ && fs != "tests/" && fs != "fuzz/" && dirname(inc) != dir)
			print where ": a private header, outside its folder"
	}' $files)
if [ -n "$viol" ]; then
	echo "$viol" | sed "s/^/check_layers: /" >&2
	fail "includes against the stage order of $readme"
fi

# One identifier quoter, one clock, one LSN formatter.  Comments may name them.
only_in() {
	pattern=$1 home=$2 what=$3
	hits=$(grep -n -- "$pattern" $files 2>/dev/null | grep -v "^$home:" | grep -v ':[[:space:]]*\*' || true)
	if [ -n "$hits" ]; then
		echo "$hits" | sed "s/^/check_layers: /" >&2
		fail "$what belongs to $home only"
	fi
}
only_in 'PQescapeIdentifier(' base/rp_sql.c "identifier quoting"
only_in 'clock_gettime(' base/rp_clock.h "the clock"
only_in 'gettimeofday(' base/rp_clock.h "the clock"
only_in '%X/%X' ../common/rp_lsn.c "LSN formatting"
# a hand-written identifier quoter: a test for '"' followed by a '"' written out again
quoters=$(for f in $files; do
	[ "$f" = base/rp_sql.c ] && continue
	awk -v f="$f" '
		prev ~ /== '"'"'"'"'"'/ && $0 ~ /'"'"'"'"'"'/ && $0 ~ /put_char|\+\+ = / { print f ":" NR ": " $0 }
		NF { prev = $0 }' "$f"
done)
if [ -n "$quoters" ]; then
	echo "$quoters" | sed "s/^/check_layers: /" >&2
	fail "a hand-written identifier quoter: use rp_sql_ident (base/rp_sql.h)"
fi

# Function length in the library stages (not cli/, tests/, fuzz/, ../common/).
# The value-encoding switches: one case per type or per form, read best whole.
long_ok='
values/rp_pgtext.c:rp_pgtext_reader
values/rp_jsonwire_value.c:rp_jsonwire_value
agg/rp_aggval.c:rp_aggval_from_datum
'
long=$(for f in $files; do
	case "$f" in
		../common/* | cli/* | tests/* | fuzz/* | *.h) continue ;;
	esac
	awk -v f="$f" '
		/^[A-Za-z_][A-Za-z0-9_]*\(/ { name = $0; sub(/\(.*/, "", name) }
		/^\{/ { start = NR }
		/^\}/ && start { n = NR - start + 1; if (n > 100) print f ":" name ":" n; start = 0 }' "$f"
done)
for l in $long; do
	key=${l%:*}
	case "$long_ok" in
		*"
$key
"*) ;;
		*) fail "$l lines: a function over 100 lines (split it by job, or list a value-encoding switch here and in README.md)" ;;
	esac
done

if [ "$bad" -ne 0 ]; then
	echo "check_layers: see consumer/README.md (the stage order and the rules under it)" >&2
	exit 1
fi
echo "check_layers: includes follow $readme's stage order; one quoter, clock, LSN formatter; no long functions"
