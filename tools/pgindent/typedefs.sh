#!/bin/sh
# tools/pgindent/typedefs.sh: writes tools/pgindent/typedefs.list, the type names
# pg_bsd_indent is told about (-U): every typedef of plugin/, common/ and consumer/, of the
# headers they include (PostgreSQL's server headers and libpq from PG_CONFIG, libnats,
# Check, libmicrohttpd) and the C and POSIX types they use. Run it after adding a typedef.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pg_config=${PG_CONFIG:-pg_config}
server=$("$pg_config" --includedir-server)
inc=$("$pg_config" --includedir)
cd "$root"
# the files, each without its comments (a "typedef" in prose is not one)
{
	find plugin common consumer \( -name 'obj*' -o -name corpus \) -prune -o -name '*.[ch]' -print | sort
	find "$server" -name '*.h' | sort
	for h in "$inc/libpq-fe.h" "$inc/postgres_ext.h" /usr/include/nats/nats.h /usr/include/check.h /usr/include/microhttpd.h; do
		[ -f "$h" ] && echo "$h"
	done
} | while read -r f; do
	gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null | perl -0777 -ne '
		# no preprocessor lines: a macro may hold half a brace pair
		s/^[ \t]*#(?:[^\n]*\\\n)*[^\n]*\n//mg;
		# "typedef ... NAME;", "typedef struct X { ... } NAME;", "typedef RET (*NAME)(...);"
		while (/\btypedef\b([^;{]*)(\{(?:[^{}]|(?2))*\})?([^;]*);/g)
		{
			my ($head, $body, $tail) = ($1, $2, $3);
			if (defined $body) { print "$1\n" if $tail =~ /(\w+)\s*(?:\[[^\]]*\])?\s*$/; }
			elsif ("$head$tail" =~ /\(\s*\*\s*(\w+)\s*\)/) { print "$1\n"; }
			elsif ("$head$tail" =~ /(\w+)\s*(?:\[[^\]]*\])?\s*$/) { print "$1\n"; }
		}'
done >"$here/typedefs.list.tmp"
printf '%s\n' FILE DIR bool size_t ssize_t off_t pid_t mode_t time_t socklen_t sig_atomic_t va_list \
	int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t \
	pthread_t pthread_mutex_t pthread_cond_t pthread_once_t >>"$here/typedefs.list.tmp"
LC_ALL=C sort -u "$here/typedefs.list.tmp" >"$here/typedefs.list"
rm -f "$here/typedefs.list.tmp"
echo "tools/pgindent/typedefs.list: $(wc -l <"$here/typedefs.list") names"
