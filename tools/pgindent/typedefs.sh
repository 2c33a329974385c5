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
{
	find plugin common consumer \( -name 'obj*' -o -name corpus \) -prune -o -name '*.[ch]' -print | sort | xargs cat
	find "$server" -name '*.h' | sort | xargs cat
	for h in "$inc/libpq-fe.h" "$inc/postgres_ext.h" /usr/include/nats/nats.h /usr/include/check.h /usr/include/microhttpd.h; do
		[ -f "$h" ] && cat "$h"
	done
} | perl -0777 -ne '
	# "typedef ... NAME;", "typedef struct X { ... } NAME;", "typedef RET (*NAME)(...);"
	while (/\btypedef\b([^;{]*(\{(?:[^{}]|(?2))*\})?[^;]*);/g)
	{
		my $t = $1;
		if ($t =~ /\(\s*\*\s*(\w+)\s*\)/) { print "$1\n"; }
		elsif ($t =~ /(\w+)\s*(?:\[[^\]]*\])?\s*$/) { print "$1\n"; }
	}' >"$here/typedefs.list.tmp"
printf '%s\n' FILE DIR bool size_t ssize_t off_t pid_t mode_t time_t socklen_t sig_atomic_t va_list \
	int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t \
	pthread_t pthread_mutex_t pthread_cond_t pthread_once_t >>"$here/typedefs.list.tmp"
LC_ALL=C sort -u "$here/typedefs.list.tmp" >"$here/typedefs.list"
rm -f "$here/typedefs.list.tmp"
echo "tools/pgindent/typedefs.list: $(wc -l <"$here/typedefs.list") names"
