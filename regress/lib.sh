# shellcheck shell=bash
# regress/lib.sh: helpers sourced by regress/run_tests.sh, regress/demo.sh, the end-to-end
# scripts in regress/t/ and bench/.
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
#   rp_cluster_restart NAME [MODE] pg_ctl stop -m MODE (fast; immediate simulates a crash), start
#   rp_cluster_stop NAME [MODE]    stop and delete it (kept when RP_KEEP_CLUSTERS=1)
#   rp_cluster_cleanup_all         stop and delete every cluster started here:
#                                  trap rp_cluster_cleanup_all EXIT
#   rp_conninfo NAME [DB]          libpq connection string of a cluster
#   rp_psql NAME [PSQL ARG...]     psql -X -v ON_ERROR_STOP=1 on a cluster (database postgres;
#                                  another -d DB overrides it)
#   rp_server_conf                 the settings every test server gets (logical.conf and the
#                                  output_plugin_libraries line where the server knows it)
# and, for the end-to-end scripts in regress/t/ (see each for its use):
#   rp_e2e_cleanup, rp_e2e_fail    the scripts' cleanup trap and failure report
#   rp_kill9_alive VAR             SIGKILL a process that must still be running
#   rp_dst_checkpoint NAME SLOT [DB]
#                                  a mirror's checkpoint (end_lsn) in the destination
#   rp_slow_new_tables NAME SECONDS EVENTS LIKE [TABLE...], rp_slow_off NAME
#                                  slow down the tables a consumer is about to create
#   rp_compare_tables SRC DST TABLE...
#                                  tables compared as multisets of rows

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

# A fence LSN that a test waits for ("the consumer confirmed or checkpointed at least this") is
# read after the fence commits, in a transaction of its own:
#   rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_insert_lsn()"
# An LSN read inside the fence's transaction can be confirmed before that transaction commits:
# once another backend flushes WAL past its changes, the walsender's idle keepalive carries the
# position and a consumer with nothing pending records it. A wait on it then ends before the
# fence is delivered (t/nats_fanout.sh, now test/t/310_nats_fanout.pl, read the stream's end too
# early that way).

rp_cluster_restart() {
	local data
	data=$(_rp_cluster_var "$1" DATA)
	[[ -n $data ]] || rp_die "no cluster named $1"
	"$RP_BINDIR/pg_ctl" -D "$data" -m "${2:-fast}" -w stop >/dev/null
	"$RP_BINDIR/pg_ctl" -D "$data" -l "$(_rp_cluster_var "$1" LOG)" -w -t 60 start >/dev/null
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

# ---------------------------------------------------------------- end-to-end script frame
# The frame the end-to-end scripts share (each sets work=$(mktemp -d ...) and status=1, and sets
# status=0 once it has passed):
#   cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }   trap cleanup EXIT
#   fail() { rp_e2e_fail NAME "$work/consumer-*.err" 5 "$*"; }

# rp_wait_exit PID SECONDS: until PID (a child of this shell) exited; its status into
# exit_status; 1 if it still runs SECONDS later
# shellcheck disable=SC2034 # exit_status is the caller's
rp_wait_exit() {
	local deadline=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
	exit_status=0
	wait "$1" || exit_status=$?
}

# rp_e2e_cleanup RC VAR...: SIGKILL the processes whose pids the named variables (or arrays)
# hold, and their children; stop every cluster; remove $work when status is 0, or keep it and
# say where. Returns RC (the script's exit status).
rp_e2e_cleanup() {
	local rc=$1 var p
	shift
	set +e
	for var in "$@"; do
		local -n ref=$var
		for p in "${ref[@]}"; do
			[[ -n $p ]] || continue
			pkill -9 -P "$p" 2>/dev/null
			kill -9 "$p" 2>/dev/null
		done
		unset -n ref
	done
	wait 2>/dev/null
	rp_cluster_cleanup_all
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}

# rp_e2e_fail NAME GLOB LINES MSG: "FAIL NAME: MSG", the last LINES lines of each non-empty file
# GLOB matches (the consumers' stderr), exit 1.
rp_e2e_fail() {
	local name=$1 glob=$2 lines=$3 f
	shift 3
	printf 'FAIL %s: %s\n' "$name" "$*"
	for f in $glob; do
		[[ -s $f ]] && { printf -- '--- %s\n' "$f"; tail -n "$lines" "$f"; }
	done
	exit 1
}

# rp_kill9_alive VAR: SIGKILL the process whose pid variable VAR holds, reap it and empty VAR.
# Returns 1, with its exit status in RP_EXIT_STATUS, when it had already exited by itself (a
# kill that finds nothing to kill proves nothing: the caller fails).
#   rp_kill9_alive consumer_pid || fail "consumer run $runs exited by itself (status $RP_EXIT_STATUS)"
rp_kill9_alive() {
	local -n _rp_pid=$1
	RP_EXIT_STATUS=0
	if ! kill -0 "$_rp_pid" 2>/dev/null; then
		# shellcheck disable=SC2034 # the caller reads it
		wait "$_rp_pid" || RP_EXIT_STATUS=$?
		return 1
	fi
	kill -9 "$_rp_pid"
	wait "$_rp_pid" 2>/dev/null || true
	_rp_pid=
}

# rp_dst_checkpoint NAME SLOT [DB]: the end_lsn of SLOT's checkpoint in the destination cluster
# NAME (database DB, default postgres); empty when there is none yet or it cannot be read.
rp_dst_checkpoint() {
	rp_psql "$1" -d "${3:-postgres}" -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$2'" 2>/dev/null || true
}

# rp_lsn_lt A B: is LSN A (X/Y) before LSN B?
rp_lsn_lt() {
	local a=$1 b=$2
	(((16#${a%/*} << 32 | 16#${a#*/}) < (16#${b%/*} << 32 | 16#${b#*/})))
}

# rp_unacked NAME SLOT CKPT BOUND: nothing of a unit the sink never acknowledged was confirmed
# or checkpointed. BOUND is an LSN past the unit's first commit record (a fence read after that
# commit, or its commit LSN + 1). Idle WAL before the unit may be confirmed and recorded (an
# idle keepalive's position never passes a commit the walsender has not sent), so the property
# is: the slot's confirmed position and the checkpoint's end are before BOUND, and the
# checkpoint file (CKPT, the library's) records no commit. FLUSH, when given, is the slot's
# confirmed position read earlier (then CKPT is a copy taken at the same time). Prints what
# broke; returns 1.
rp_unacked() {
	local name=$1 slot=$2 ckpt=$3 bound=$4 flush=${5:-} commit end
	[[ -n $flush ]] ||
		flush=$(rp_psql "$name" -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
	rp_lsn_lt "$flush" "$bound" || { echo "the slot confirmed $flush, at or past the unit ($bound)"; return 1; }
	[[ -s $ckpt ]] || return 0
	commit=$(sed -n 's/.* commit=\([^ ]*\).*/\1/p' "$ckpt")
	end=$(sed -n 's/.* end=\([^ ]*\).*/\1/p' "$ckpt")
	[[ $commit == 0/0 ]] || { echo "the checkpoint records commit $commit: $(cat "$ckpt")"; return 1; }
	rp_lsn_lt "$end" "$bound" || { echo "the checkpoint's end $end is at or past the unit ($bound)"; return 1; }
}

# rp_slow_new_tables NAME SECONDS EVENTS LIKE [TABLE...]: in cluster NAME, each public TABLE
# (every public table when none is named) gets, as it is created, a statement trigger AFTER
# EVENTS ("INSERT", "INSERT OR UPDATE") that sleeps SECONDS when the statement's text is LIKE
# the pattern LIKE (after every statement when LIKE is ''). An event trigger does it, so that it holds for
# the tables a consumer creates (--create-tables): the stage under test then takes long
# enough for the script to act during it, however fast the machine is.
# rp_slow_off NAME: the triggers stop sleeping.
rp_slow_new_tables() {
	local name=$1 sleep="PERFORM pg_sleep($2);" events=$3 like=$4 which="schema_name = 'public'" t list=
	shift 4
	for t in "$@"; do list+="${list:+, }'public.$t'"; done
	[[ -z $list ]] || which="object_identity IN ($list)"
	[[ -z $like ]] || sleep="IF current_query() LIKE '$like' THEN $sleep END IF;"
	rp_psql "$name" >/dev/null <<SQL
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN $sleep RETURN NULL; END \$\$;
CREATE FUNCTION public.slow_new_tables() RETURNS event_trigger LANGUAGE plpgsql AS \$\$
DECLARE
	obj record;
BEGIN
	FOR obj IN SELECT * FROM pg_event_trigger_ddl_commands()
	           WHERE command_tag = 'CREATE TABLE' AND $which LOOP
		EXECUTE format('CREATE TRIGGER slow AFTER $events ON %s FOR EACH STATEMENT EXECUTE FUNCTION public.slow()',
		               obj.object_identity);
		EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER slow', obj.object_identity);
	END LOOP;
END \$\$;
CREATE EVENT TRIGGER slow_new_tables ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
	EXECUTE FUNCTION public.slow_new_tables();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER EVENT TRIGGER slow_new_tables ENABLE ALWAYS;
SQL
}

rp_slow_off() {
	rp_psql "$1" -c 'CREATE OR REPLACE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$' >/dev/null
}

# rp_compare_tables SRC DST TABLE...: each public.TABLE of clusters SRC and DST compared as a
# multiset of rows: count and md5 of every row's text, sorted (the caller fixes the output
# settings with PGOPTIONS). On a difference: the first differing lines, then the script's fail.
# Sets RP_COMPARED=("TABLE ROWS" ...).
rp_compare_tables() {
	local src=$1 dst=$2 t q a b
	shift 2
	RP_COMPARED=()
	for t in "$@"; do
		q="SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), ''))
		   FROM (SELECT x::text AS r FROM public.$t x) s"
		a=$(rp_psql "$src" -Atc "$q")
		b=$(rp_psql "$dst" -Atc "$q")
		if [[ $a != "$b" ]]; then
			rp_psql "$src" -Atc "SELECT x::text FROM public.$t x" | sort >"$work/$t.src"
			rp_psql "$dst" -Atc "SELECT x::text FROM public.$t x" | sort >"$work/$t.dst"
			diff "$work/$t.src" "$work/$t.dst" | cut -c 1-200 | head -n 10
			fail "table $t differs: source $a, destination $b"
		fi
		RP_COMPARED+=("$t ${a%% *}")
	done
}
