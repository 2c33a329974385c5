# shellcheck shell=bash
# regress/lib.sh: helpers sourced by regress/run_tests.sh, regress/demo.sh,
# regress/packaging.sh and bench/ (the end-to-end tests are test/t/*.pl, on
# test/perl/RpTest.pm).
#
#   rp_build_install               make && make install (through sudo -n when not root)
#   rp_run_unprivileged SCRIPT ARG...
#                                  run SCRIPT (a path relative to the repo root) as a user that
#                                  initdb and postgres accept: in place when not root; as root,
#                                  in a copy of the tree owned by the postgres system user
#   rp_cluster_start NAME [SETTING...]
#                                  throwaway cluster with logical decoding on; exports NAME_DIR,
#                                  NAME_DATA, NAME_HOST (socket dir), NAME_PORT, NAME_USER,
#                                  NAME_LOG (server log) and NAME_CONNSTR (libpq, dbname=postgres).
#                                  Each SETTING is a postgresql.conf line ("fsync = on").
#   rp_cluster_stop NAME [MODE]    stop and delete it (kept when RP_KEEP_CLUSTERS=1)
#   rp_cluster_cleanup_all         stop and delete every cluster started here:
#                                  trap rp_cluster_cleanup_all EXIT
#   rp_conninfo NAME [DB]          libpq connection string of a cluster
#   rp_psql NAME [PSQL ARG...]     psql -X -v ON_ERROR_STOP=1 on a cluster (database postgres;
#                                  another -d DB overrides it)
#   rp_server_conf                 the settings every test server gets (logical.conf and the
#                                  output_plugin_libraries line where the server knows it)
#   rp_free_port                   a TCP port nothing listens on (regress/nats.sh)

RP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
RP_BINDIR=$("$PG_CONFIG" --bindir)
# Output plugins that test servers may load (15.19+ load only the ones listed).
RP_PLUGIN_LIBRARIES='pgoutput, test_decoding, wal2json, replicant'
RP_CLUSTERS=()
export RP_ROOT PG_CONFIG RP_BINDIR

rp_say() { printf '==> %s\n' "$*"; }
rp_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- build, install, user

# Build and install the plugin, the extension and the consumer. Output goes to
# regress/log/build.log and is shown only on failure (warnings are always shown).
# Returns non-zero on failure, so callers can report it.
rp_build_install() {
	local log=$RP_ROOT/regress/log/build.log dir need_sudo=0
	mkdir -p "$RP_ROOT/regress/log" || return 1
	rp_say "build: make (log: regress/log/build.log)"
	if ! make -C "$RP_ROOT" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >"$log" 2>&1; then
		tail -n 80 "$log"
		printf 'error: make failed (full log: %s)\n' "$log" >&2
		return 1
	fi
	if grep -q 'warning:' "$log"; then
		printf 'compiler warnings:\n'
		grep 'warning:' "$log" | head -n 30
	fi
	if [[ $(id -u) -ne 0 ]]; then
		for dir in "$("$PG_CONFIG" --pkglibdir)" "$("$PG_CONFIG" --sharedir)/extension" "$RP_BINDIR"; do
			[[ -w $dir ]] || need_sudo=1
		done
	fi
	if ((need_sudo)); then
		rp_say "install: sudo -n make install"
		if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
			printf 'error: make install writes into %s and needs root: run this as root, or as a user with passwordless sudo (sudo -n failed)\n' \
				"$("$PG_CONFIG" --pkglibdir)" >&2
			return 1
		fi
		# shellcheck disable=SC2024 # the log is the caller's, only make runs as root
		sudo -n make -C "$RP_ROOT" PG_CONFIG="$(command -v "$PG_CONFIG")" install >>"$log" 2>&1
	else
		rp_say "install: make install"
		make -C "$RP_ROOT" PG_CONFIG="$PG_CONFIG" install >>"$log" 2>&1
	fi || {
		tail -n 40 "$log"
		printf 'error: make install failed (full log: %s)\n' "$log" >&2
		return 1
	}
}

# initdb and postgres refuse to run as root. As root, copy the tree (without .git) into a
# fresh directory owned by the postgres system user and run SCRIPT there as that user; the
# copy is deleted when SCRIPT succeeds and kept for inspection when it fails. Otherwise run
# SCRIPT in place. Returns SCRIPT's exit status.
rp_run_unprivileged() {
	local script=$1 copy rc=0
	shift
	if [[ $(id -u) -ne 0 ]]; then
		bash "$RP_ROOT/$script" "$@" || rc=$?
		return "$rc"
	fi
	id postgres >/dev/null 2>&1 ||
		rp_die "running as root, and there is no postgres user to run the servers as (install postgresql-15)"
	copy=$(mktemp -d /tmp/replicant-run.XXXXXX)
	tar -C "$RP_ROOT" --exclude=./.git --exclude=./test/tmp_check -cf - . | tar -C "$copy" -xf -
	chown -R postgres: "$copy"
	rp_say "running as root: $script continues as user postgres in $copy (kept if it fails)"
	(
		cd "$copy"
		runuser -u postgres -- env \
			HOME="$(getent passwd postgres | cut -d: -f6)" USER=postgres LOGNAME=postgres \
			PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
			TMPDIR=/tmp PG_CONFIG="$(command -v "$PG_CONFIG")" \
			RP_TEST_TIMEOUT="${RP_TEST_TIMEOUT:-}" ${PG_TEST_NOCLEAN+PG_TEST_NOCLEAN=1} \
			CI="${CI:-}" RP_KEEP_CLUSTERS="${RP_KEEP_CLUSTERS:-0}" \
			SEED="${SEED:-}" SEEDS="${SEEDS:-}" DIFF_PATHS="${DIFF_PATHS:-}" DIFF_NO_FK="${DIFF_NO_FK:-}" \
			PGBENCH_SCALE="${PGBENCH_SCALE:-}" SYSBENCH_ROWS="${SYSBENCH_ROWS:-}" \
			RP_PG_CONFIGS="${RP_PG_CONFIGS:-}" \
			bash "$script" "$@"
	) || rc=$?
	((rc != 0)) || rm -rf "$copy"
	return "$rc"
}

# ---------------------------------------------------------------- clusters

rp_supports_plugin_libraries() {
	local settings
	settings=$("$RP_BINDIR/postgres" --describe-config 2>/dev/null) || return 1
	grep -q '^output_plugin_libraries' <<<"$settings"
}

rp_server_conf() {
	cat "$RP_ROOT/regress/logical.conf"
	if rp_supports_plugin_libraries; then
		printf "output_plugin_libraries = '%s'\n" "$RP_PLUGIN_LIBRARIES"
	fi
}

# A TCP port on 127.0.0.1 that nothing listens on now (rp_cluster_start retries on a race),
# below the kernel's range of ephemeral ports when it leaves room: a port in that range can be
# taken, between the choice and the bind, as the local end of any outgoing connection.
rp_free_port() {
	local port _ lo=32768 span=30000
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	((lo > 22000)) && span=$((lo - 20000))
	for _ in {1..100}; do
		port=$((20000 + RANDOM % span))
		if ! (: <>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

_rp_export() {
	printf -v "$1" '%s' "$2"
	export "${1?}"
}

_rp_cluster_var() {
	local var="$1_$2"
	printf '%s' "${!var:-}"
}

rp_cluster_start() {
	local name=$1 dir data port attempt
	shift
	[[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || rp_die "cluster name must be a shell identifier: $name"
	[[ $(id -u) -ne 0 ]] ||
		rp_die "initdb and postgres refuse to run as root: run as an unprivileged user (runuser -u postgres)"
	dir=$(mktemp -d "/tmp/rp-$name.XXXXXX")
	data=$dir/data
	"$RP_BINDIR/initdb" -D "$data" -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; rp_die "initdb failed for cluster $name"; }
	{
		printf '\n# added by regress/lib.sh\n'
		rp_server_conf
		printf "listen_addresses = '127.0.0.1'\n"
		printf "unix_socket_directories = '%s'\n" "$dir"
		printf '%s\n' "$@"
	} >>"$data/postgresql.conf"
	for attempt in 1 2 3; do
		port=$(rp_free_port) || rp_die "no free TCP port found"
		printf 'port = %s\n' "$port" >>"$data/postgresql.conf"
		if "$RP_BINDIR/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null; then
			break
		fi
		if ((attempt == 3)); then
			tail -n 20 "$dir/server.log" >&2
			rp_die "cluster $name did not start (log: $dir/server.log)"
		fi
	done
	_rp_export "${name}_DIR" "$dir"
	_rp_export "${name}_DATA" "$data"
	_rp_export "${name}_HOST" "$dir"
	_rp_export "${name}_PORT" "$port"
	_rp_export "${name}_USER" "$(id -un)"
	_rp_export "${name}_LOG" "$dir/server.log"
	_rp_export "${name}_CONNSTR" "$(rp_conninfo "$name")"
	RP_CLUSTERS+=("$name")
}

rp_conninfo() {
	printf 'host=%s port=%s user=%s dbname=%s' "$(_rp_cluster_var "$1" HOST)" \
		"$(_rp_cluster_var "$1" PORT)" "$(_rp_cluster_var "$1" USER)" "${2:-postgres}"
}

rp_psql() {
	local name=$1
	shift
	"$RP_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$(_rp_cluster_var "$name" HOST)" \
		-p "$(_rp_cluster_var "$name" PORT)" -U "$(_rp_cluster_var "$name" USER)" -d postgres "$@"
}

rp_cluster_stop() {
	local name=$1 data dir var n kept=()
	data=$(_rp_cluster_var "$name" DATA)
	dir=$(_rp_cluster_var "$name" DIR)
	[[ -n $data ]] || return 0
	if [[ -f $data/postmaster.pid ]]; then
		"$RP_BINDIR/pg_ctl" -D "$data" -m "${2:-fast}" -w stop >/dev/null 2>&1 || true
	fi
	if [[ ${RP_KEEP_CLUSTERS:-0} == 1 ]]; then
		rp_say "kept cluster $name: $dir"
	else
		rm -rf "$dir"
	fi
	for var in DIR DATA HOST PORT USER LOG CONNSTR; do
		unset "${name}_$var"
	done
	for n in "${RP_CLUSTERS[@]}"; do
		[[ $n == "$name" ]] || kept+=("$n")
	done
	RP_CLUSTERS=("${kept[@]}")
}

# Keeps the exit status it was called with, so it can be an EXIT trap.
rp_cluster_cleanup_all() {
	local rc=$? name
	for name in "${RP_CLUSTERS[@]}"; do
		rp_cluster_stop "$name" immediate
	done
	return "$rc"
}
