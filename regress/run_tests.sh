#!/usr/bin/env bash
# The project's test command:  bash regress/run_tests.sh [--quick]
#
# Builds and installs (make, make install; sudo -n when not root), then runs the suites as
# an unprivileged user (as root: as the postgres user in a copy of the tree, see
# rp_run_unprivileged in regress/lib.sh):
#   unitcheck      make unitcheck: Check unit tests of the pure C modules
#   installcheck   make installcheck: pg_regress suite (sql/, expected/) on a temp instance
#   t/NAME.sh      each end-to-end script in regress/t/, run with bash    (skipped by --quick)
#   t/NAME.pl      each TAP script in regress/t/, run with prove          (skipped by --quick)
# Each suite's output goes to regress/log/ and is shown when the suite fails. The last line
# is "N passed, N failed"; the exit status is non-zero when a suite failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/lib.sh"

usage() { printf 'usage: bash regress/run_tests.sh [--quick]\n  --quick  skip the end-to-end and TAP scripts in regress/t/\n'; }

quick=0
phase=all
for arg in "$@"; do
	case $arg in
	--quick) quick=1 ;;
	--phase-tests) phase=tests ;; # internal: the suites, after build and install
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

if [[ $phase == all ]]; then
	if ! rp_build_install; then
		printf '0 passed, 1 failed\n'
		exit 1
	fi
	args=(--phase-tests)
	((quick)) && args+=(--quick)
	rc=0
	rp_run_unprivileged regress/run_tests.sh "${args[@]}" || rc=$?
	exit "$rc"
fi

# ---------------------------------------------------------------- the suites
cd "$RP_ROOT"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools
logdir=$RP_ROOT/regress/log
mkdir -p "$logdir"
passed=0
failed=0
failures=()

pass() { passed=$((passed + 1)); printf 'ok      %s (%ss)\n' "$1" "$2"; }
fail() {
	failed=$((failed + 1)); failures+=("$1")
	printf 'FAILED  %s (%ss)%s\n' "$1" "$2" "${3:+: $3}"
}
# show LOG [LINES]: the end of a failed suite's log, indented.
show() {
	printf '  --- last %s lines of %s ---\n' "${2:-100}" "$1"
	tail -n "${2:-100}" "$1" | sed 's/^/  | /'
}
# run LOG CMD...: CMD's output into LOG; sets "took" to the seconds it took.
run() {
	local log=$1 start=$SECONDS rc=0
	shift
	"$@" >"$log" 2>&1 </dev/null || rc=$?
	took=$((SECONDS - start))
	return "$rc"
}

# (a) unit tests. Check prints "100%: Checks: 0, ..." for a run without tests: that fails.
log=$logdir/unitcheck.log
if run "$log" make unitcheck; then
	checks=$(sed -n 's/^[0-9]*%: Checks: \([0-9]*\).*/\1/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
	if ((checks > 0)); then
		pass "unitcheck" "$took"
		grep -E '^[0-9]+%: Checks: ' "$log" | sed 's/^/  /'
	else
		fail "unitcheck" "$took" "no unit test ran (no Check summary with Checks > 0)"
		show "$log" 30
	fi
else
	fail "unitcheck" "$took"
	show "$log"
fi

# (b) pg_regress on a temporary instance
log=$logdir/installcheck.log
rm -f regression.diffs
if ! compgen -G 'sql/*.sql' >/dev/null; then
	fail "installcheck" 0 "no pg_regress tests (sql/*.sql)"
elif run "$log" make installcheck; then
	pass "installcheck" "$took"
	grep -E 'tests passed' "$log" | sed 's/^ */  /; s/ *$//' || true
else
	fail "installcheck" "$took"
	grep -E 'FAILED|failed' "$log" | sed 's/^/  | /' || true
	if [[ -s regression.diffs ]]; then
		printf '  --- regression.diffs ---\n'
		cat regression.diffs
	else
		show "$log" 40
		for f in tmp_check/log/*.log; do
			[[ -f $f ]] && show "$f" 30
		done
	fi
fi

# (c) end-to-end scripts, (d) TAP scripts
if ((quick)); then
	printf 'skipped regress/t/ (--quick)\n'
else
	shopt -s nullglob
	for script in regress/t/*.sh; do
		name=t/$(basename "$script")
		log=$logdir/$(basename "$script" .sh).log
		if run "$log" bash "$script"; then pass "$name" "$took"; else fail "$name" "$took"; show "$log" 60; fi
	done

	tap=(regress/t/*.pl)
	if ((${#tap[@]})); then
		pgxs_src=$(dirname "$("$PG_CONFIG" --pgxs)")/..
		rp_server_conf >"$logdir/tap_temp.conf"
		# PostgreSQL::Test::Cluster appends TEMP_CONFIG to every node's postgresql.conf and
		# keeps node logs under $TESTDIR/tmp_check/log.
		export PERL5LIB=$pgxs_src/test/perl${PERL5LIB:+:$PERL5LIB}
		export PG_REGRESS=$pgxs_src/test/regress/pg_regress
		export TEMP_CONFIG=$logdir/tap_temp.conf
		export TESTDIR=$RP_ROOT/regress
		for script in "${tap[@]}"; do
			name=t/$(basename "$script")
			log=$logdir/$(basename "$script" .pl).log
			if run "$log" prove "$script"; then pass "$name" "$took"; else fail "$name" "$took"; show "$log" 60; fi
		done
	fi
fi

((failed == 0)) || printf 'failed: %s\n' "${failures[*]}"
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
