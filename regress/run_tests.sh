#!/usr/bin/env bash
# The project's test command:  bash regress/run_tests.sh [--quick] [--only GLOB]
#
# Builds and installs (make, make install; sudo -n when not root), then runs the suites as
# an unprivileged user (as root: as the postgres user in a copy of the tree, see
# rp_run_unprivileged in regress/lib.sh):
#   unitcheck        make unitcheck: the Check unit tests of consumer/tests/ (one runner,
#                    consumer/obj/tests/ct_run; every suite must run at least one check)
#   unitcheck-asan   the same built with AddressSanitizer + UndefinedBehaviorSanitizer
#                    (make -C consumer SAN=asan unitcheck): a report, a leak included, fails
#   unitcheck-tsan   the same built with ThreadSanitizer (SAN=tsan)
#   check_man        regress/tools/check_man.sh: the man page lists what --help lists
#   check_meta       regress/tools/check_meta.py: META.json against the PGXN meta spec
#   installcheck     make installcheck: pg_regress suite (sql/, expected/) on a temp instance
#   test/t/NNN_NAME.pl
#                    each end-to-end TAP test in test/t/, run with prove (PostgreSQL::Test::Cluster
#                    from PG_CONFIG's installation, test/perl/RpTest.pm; every wait bounded by
#                    RP_TEST_TIMEOUT seconds, default 300; see test/README.md) (not with --quick)
#   tsan/test/t/NNN_NAME.pl
#                    each TAP test of TSAN_SCRIPTS (in this file) run again, with the consumer
#                    built with ThreadSanitizer: fails when it fails or TSan reported anything
#                                                                               (not with --quick)
#   fuzz/TARGET      each libFuzzer target of consumer/fuzz/ for FUZZ_SECONDS (default 60)
#                    from its seed corpus: a crash, leak or timeout fails       (not with --quick)
#   pgV/installcheck, pgV/test/t/NNN_NAME.pl
#                    for each installation V of RP_PG_VERSIONS (default "15.18 17 18"; "" for
#                    none), which regress/pg_versions.sh assembles (npm's servers, Debian's
#                    headers; cached in RP_PG_VERSIONS_DIR): the plugin built and installed
#                    into it, its pg_regress suite, and for 17 and 18 the end-to-end tests of
#                    VERSION_TESTS (in this file) against servers of that major, with the
#                    consumer and client tools of 15, and the tests of MAJOR_TESTS that
#                    need that major (on no other). 15.18 is an older minor than the
#                    system's 15 with the system's headers: the plugin must load into it
#                                                                               (not with --quick)
# --quick skips test/t/, tsan/, fuzz/ and pgV/. --only GLOB runs only the suites whose name
# (as printed) matches GLOB, e.g. --only 'tsan/*', --only 'test/t/600_*' or
# --only 'test/t/010_*'; the build and install always run. -h, --help prints this.
# Each suite's output goes to regress/log/ and is shown when the suite fails. The last line
# is "N passed, N failed"; the exit status is non-zero when a suite failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/lib.sh"

# usage: the comment above, which is the one description of the suites and options.
usage() {
	sed -n '2,/^set -euo pipefail$/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"
}

# The end-to-end tests whose consumer runs threads beyond the delivery thread (snapshot
# workers and their COPY pipe, the backfill thread, the metrics endpoint's thread): each
# runs a second time with the ThreadSanitizer build of the consumer. Add a TAP test's path
# (test/t/NNN_NAME.pl) to have it checked; each costs about its own run time again. test/t/260_aggregates.pl is not in the list:
# under TSan its seeds and kill rounds took 4 to 15 minutes from run to run on 2 cores (the
# delivery and metrics threads it shares with test/t/070_mirror_stream.pl are checked there).
TSAN_SCRIPTS=(test/t/420_snapshot_mirror.pl test/t/400_snapshot_resume.pl test/t/410_snapshot_heap_resume.pl test/t/460_backfill.pl test/t/070_mirror_stream.pl)
FUZZ_SECONDS=${FUZZ_SECONDS:-60}

# The other majors, and the end-to-end tests each runs (those that need no client tool of
# that major: the system's pg_dump 15 refuses a newer server, so 500, 510 and 600, which copy
# a schema with it, are left to 15): mirror kill -9 rounds, the file sink's kill rounds, a
# snapshot under a workload and the stream after it, a backfill, logical messages, a NATS
# writer and reader, verify, a migration's wait, sync-sequences and verify.
RP_PG_VERSIONS=${RP_PG_VERSIONS-15.18 17 18}
VERSION_TESTS=(test/t/050_file_sink_kill9.pl test/t/070_mirror_stream.pl test/t/200_mirror_messages.pl
	test/t/351_nats_source_memory.pl test/t/420_snapshot_mirror.pl test/t/460_backfill.pl
	test/t/720_verify_truth.pl test/t/730_migration.pl)
# Tests that need majors of the matrix (run with the servers of each major listed, and only
# there; RP_TEST_MAJOR names it, test/perl/RpTest.pm's rp_test_major): 540 checks 18's
# virtual generated columns, 545 the failover slots of 17 and 18 (and their refusal on 15),
# 546 a resume on a promoted standby, 547 decoding from a standby and a promotion under it,
# each on 17 and 18; 750 mirrors 18 into 15 and 15 into 18.
declare -A MAJOR_TESTS=([test/t/540_virtual_generated.pl]=18 [test/t/545_failover_slot.pl]="17 18"
	[test/t/546_failover_resume.pl]="17 18" [test/t/547_standby_decoding.pl]="17 18"
	[test/t/750_cross_version.pl]=18)

quick=0
only='*'
phase=all
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--only)
		(($# >= 2)) || { usage >&2; exit 2; }
		only=$2
		shift
		;;
	--phase-tests) phase=tests ;; # internal: the suites, after build and install
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

# version_build: regress/pg_versions.sh, then the plugin built and installed into each
# major's installation (in a copy of the plugin's sources: the tree keeps 15's objects);
# exports RP_PG_CONFIGS ("V=PG_CONFIG ..."), which the suites read
version_build() {
	local log=$RP_ROOT/regress/log/pg_versions.log v pgc dir
	RP_PG_CONFIGS=''
	[[ -n $RP_PG_VERSIONS ]] && ((!quick)) || return 0
	if ((EUID == 0)); then
		export RP_PG_VERSIONS_DIR=${RP_PG_VERSIONS_DIR:-/var/cache/replicant-pg}
	else
		export RP_PG_VERSIONS_DIR=${RP_PG_VERSIONS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/replicant-pg}
	fi
	rp_say "PostgreSQL $RP_PG_VERSIONS: regress/pg_versions.sh (log: regress/log/pg_versions.log)"
	# shellcheck disable=SC2086 # the labels are words
	bash "$RP_ROOT/regress/pg_versions.sh" "$RP_PG_VERSIONS_DIR" $RP_PG_VERSIONS >"$log.out" 2>"$log" || {
		tail -n 20 "$log"
		printf 'error: regress/pg_versions.sh failed (full log: %s)\n' "$log" >&2
		return 1
	}
	while read -r v _ pgc; do
		dir=$(mktemp -d /tmp/rp-plugin-"$v".XXXXXX)
		# the sources only: the tree's objects are 15's
		tar -C "$RP_ROOT" --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude='consumer/obj*' \
			--exclude=consumer/replicant -cf - \
			Makefile replicant.control plugin common consumer sql expected regress/logical.conf | tar -C "$dir" -xf -
		# the whole build against that pg_config (what a user of that major runs: the
		# consumer too, against its libpq headers), then the plugin installed; the suites'
		# consumer stays the tree's
		rp_say "PostgreSQL $v: built (plugin and consumer), the plugin installed into $(dirname "$(dirname "$pgc")")"
		if ! { make -C "$dir" -j2 PG_CONFIG="$pgc" && make -C "$dir" PLUGIN_ONLY=1 PG_CONFIG="$pgc" install; } >>"$log" 2>&1; then
			tail -n 40 "$log"
			printf 'error: replicant did not build for PostgreSQL %s (full log: %s)\n' "$v" "$log" >&2
			return 1
		fi
		if grep -q 'warning:' "$log"; then
			printf 'compiler warnings (PostgreSQL %s):\n' "$v"
			grep 'warning:' "$log"
		fi
		rm -rf "$dir"
		RP_PG_CONFIGS+="${RP_PG_CONFIGS:+ }$v=$pgc"
	done <"$log.out"
	export RP_PG_CONFIGS
}

if [[ $phase == all ]]; then
	if ! rp_build_install || ! version_build; then
		printf '0 passed, 1 failed\n'
		exit 1
	fi
	args=(--phase-tests)
	((quick)) && args+=(--quick)
	args+=(--only "$only")
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
# show LOG [LINES]: the end of a failed suite's log, indented. A "FAIL name: why" line in it
# is repeated first: CI keeps only the end of this output.
show() {
	local why
	why=$(grep -a -m 1 '^FAIL ' "$1" 2>/dev/null || true)
	[[ -z $why ]] || printf '  %s\n' "${why:0:2000}"
	printf '  --- last %s lines of %s ---\n' "${2:-100}" "$1"
	tail -n "${2:-100}" "$1" | sed 's/^/  | /'
}
# wanted NAME: is suite NAME selected (--only)?
# shellcheck disable=SC2053 # $only is a glob
wanted() { [[ $1 == $only ]]; }
# run LOG CMD...: CMD's output into LOG; sets "took" to the seconds it took.
run() {
	local log=$1 start=$SECONDS rc=0
	shift
	"$@" >"$log" 2>&1 </dev/null || rc=$?
	took=$((SECONDS - start))
	return "$rc"
}

# (d) TSAN_SCRIPTS with the ThreadSanitizer consumer. The scripts run the consumer found
# first in $RP_ROOT/consumer/, so each runs in a copy of the tree whose consumer/replicant is
# the TSan build (obj-tsan/replicant): any script works unchanged. TSan writes its reports to
# files (log_path), one per consumer process: the consumers of these scripts are often
# stopped with SIGKILL, so neither their exit status nor their stderr (deleted when the
# script passes) can carry a report. Reports do not halt the consumer: one run shows them all.
tsan_suites() {
	local log=$logdir/build-tsan.log copy script name reports any=0 f base file cmd
	for script in "${TSAN_SCRIPTS[@]}"; do wanted "$(tsan_name "$script")" && any=1; done
	((any)) || return 0
	if ! run "$log" make -C consumer SAN=tsan obj-tsan/replicant; then
		fail "build-tsan" "$took"
		show "$log" 40
		return 0
	fi
	if ! grep -q __tsan_init consumer/obj-tsan/replicant; then
		fail "build-tsan" "$took" "consumer/obj-tsan/replicant is not built with ThreadSanitizer"
		return 0
	fi
	copy=$(mktemp -d /tmp/rp-tsan-tree.XXXXXX)
	tar -C "$RP_ROOT" --exclude=./.git --exclude='./consumer/obj*' --exclude=./regress/log \
		--exclude=./test/tmp_check -cf - . | tar -C "$copy" -xf -
	install -m 0755 consumer/obj-tsan/replicant "$copy/consumer/replicant"
	mkdir -p "$logdir/tsan"
	for script in "${TSAN_SCRIPTS[@]}"; do
		name=$(tsan_name "$script")
		wanted "$name" || continue
		base=$(basename "$script" .pl)
		file=$script
		log=$logdir/tsan/$base.log
		if [[ ! -f $file ]]; then
			fail "$name" 0 "no $file (TSAN_SCRIPTS in regress/run_tests.sh)"
			continue
		fi
		rm -f "$logdir/tsan/$base.report".*
		cmd=(tap_run "$log" "$copy" "$script")
		if TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 suppressions=$tsan_supp log_path=$logdir/tsan/$base.report" \
			"${cmd[@]}"; then
			reports=("$logdir/tsan/$base.report".*)
			if ((${#reports[@]} == 0)); then
				pass "$name" "$took"
				continue
			fi
			fail "$name" "$took" "ThreadSanitizer reported (${#reports[@]} processes): ${reports[*]}"
		else
			fail "$name" "$took"
			show "$log" 60
			[[ ! -f $copy/test/tmp_check/log/regress_log_$base ]] || show "$copy/test/tmp_check/log/regress_log_$base" 60
		fi
		for f in "$logdir/tsan/$base.report".*; do show "$f" 40; done
	done
	rm -rf "$copy"
}
# tsan_name ENTRY: the suite name of a TSAN_SCRIPTS entry (tsan/test/t/NNN_NAME.pl)
tsan_name() { printf 'tsan/%s' "$1"; }

# (e) each libFuzzer target (consumer/fuzz/fuzz_*.c, built with clang) for FUZZ_SECONDS from the seed corpus in consumer/fuzz/corpus;
# what a run finds goes to consumer/fuzz/work/ (not kept), a crashing input to regress/log/fuzz/.
fuzz_suites() {
	local log=$logdir/build-fuzz.log src target any=0
	for src in consumer/fuzz/fuzz_*.c; do wanted "fuzz/$(basename "$src" .c)" && any=1; done
	((any)) || return 0
	if ! run "$log" make -C consumer/fuzz all; then
		fail "build-fuzz" "$took"
		show "$log" 40
		return 0
	fi
	mkdir -p "$logdir/fuzz"
	for src in consumer/fuzz/fuzz_*.c; do
		target=$(basename "$src" .c)
		wanted "fuzz/$target" || continue
		log=$logdir/fuzz/$target.log
		if run "$log" make -C consumer/fuzz "run-$target" FUZZ_SECONDS="$FUZZ_SECONDS" ARTIFACTS="$logdir/fuzz/"; then
			pass "fuzz/$target" "$took"
			grep -E '^stat::number_of_executed_units' "$log" | sed 's/^/  /' || true
		else
			fail "fuzz/$target" "$took"
			show "$log" 60
		fi
	done
}

# (a) unit tests, plain and under the sanitizers. Check prints "100%: Checks: 0, ..." for a
# run without tests: that fails.
# ASan: leaks are reports too; UBSan: every report is fatal (-fno-sanitize-recover), with a
# stack (not strict_string_checks: it reports strndup of an unterminated span, which is
# correct C). TSan: halt at the first report (a unit test's threads are few and short-lived).
export ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
tsan_supp=$RP_ROOT/regress/tsan.supp
unit_suite() {
	local name=$1 log=$logdir/$1.log checks
	shift
	wanted "$name" || return 0
	if run "$log" "$@"; then
		checks=$(sed -n 's/^[0-9]*%: Checks: \([0-9]*\).*/\1/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
		if ((checks > 0)); then
			pass "$name" "$took"
			grep -E '^[0-9]+%: Checks: ' "$log" | awk '{ c += $3; f += $5; e += $7 } END { printf "  %d checks, %d failures, %d errors\n", c, f, e }'
		else
			fail "$name" "$took" "no unit test ran (no Check summary with Checks > 0)"
			show "$log" 30
		fi
	else
		fail "$name" "$took"
		show "$log"
	fi
}
unit_suite unitcheck make unitcheck
unit_suite unitcheck-asan make -C consumer SAN=asan unitcheck
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$tsan_supp" \
	unit_suite unitcheck-tsan make -C consumer SAN=tsan unitcheck

# (a2) the packaging's checks that need no root: the man page against --help, META.json
# against the PGXN meta spec (regress/packaging.sh, as root, builds and installs the packages)
tool_check() {
	local name=$1 log=$logdir/$1.log
	shift
	wanted "$name" || return 0
	if run "$log" "$@"; then pass "$name" "$took"; else fail "$name" "$took"; show "$log" 30; fi
}
tool_check check_man bash regress/tools/check_man.sh
tool_check check_meta python3 regress/tools/check_meta.py

# (b) pg_regress on a temporary instance
log=$logdir/installcheck.log
rm -f regression.diffs
if ! wanted installcheck; then
	:
elif ! compgen -G 'sql/*.sql' >/dev/null; then
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

# (c) the end-to-end TAP tests (test/t/*.pl), each with prove: PostgreSQL::Test::Cluster and
# ::Utils from the installation's PGXS, test/perl/RpTest.pm; data directories and logs in
# test/tmp_check/ (TESTDIR), kept when a test fails; the test's own log is
# test/tmp_check/log/regress_log_NAME.
# tap_run LOG TREE TEST: prove -v TREE/TEST with what PostgreSQL::Test::Cluster needs (its
# modules from the installation's PGXS, pg_regress, TESTDIR = TREE/test); sets "took"
# (TAP_PG_CONFIG: another major's installation for the servers; the Perl modules stay 15's)
tap_run() {
	local log=$1 tree=$2 test=$3 pkglib pgc=${TAP_PG_CONFIG:-$PG_CONFIG}
	pkglib=$("$PG_CONFIG" --pkglibdir)
	# RP_BASE_PG_CONFIG first: the later assignments of this line would see PG_CONFIG=$pgc
	RP_BASE_PG_CONFIG="$PG_CONFIG" \
		PERL5LIB="$pkglib/pgxs/src/test/perl:$tree/test/perl${PERL5LIB:+:$PERL5LIB}" TESTDIR="$tree/test" \
		PG_REGRESS="$("$pgc" --pkglibdir)/pgxs/src/test/regress/pg_regress" PG_CONFIG="$pgc" \
		run "$log" prove -v "$tree/$test"
}
tap_suites() {
	local t base log
	for t in test/t/*.pl; do
		wanted "$t" || continue
		[[ -z ${MAJOR_TESTS[$t]:-} ]] || continue    # version_suites runs it
		base=$(basename "$t" .pl)
		log=$logdir/tap-$base.log
		if tap_run "$log" "$RP_ROOT" "$t"; then
			pass "$t" "$took"
			printf '  %s checks passed\n' "$(grep -cE '^ok [0-9]+' "$log" || true)"
		else
			fail "$t" "$took"
			show "$log" 60
			[[ ! -f test/tmp_check/log/regress_log_$base ]] || show "test/tmp_check/log/regress_log_$base" 60
		fi
	done
}

# (f) the other majors: the pg_regress suite and VERSION_TESTS against each one's servers
version_suites() {
	local pair v pgc t base log
	for pair in ${RP_PG_CONFIGS:-}; do
		v=${pair%%=*}
		pgc=${pair#*=}
		log=$logdir/pg$v-installcheck.log
		if wanted "pg$v/installcheck"; then
			rm -f regression.diffs
			if run "$log" make installcheck PLUGIN_ONLY=1 PG_CONFIG="$pgc"; then
				pass "pg$v/installcheck" "$took"
				grep -E 'tests passed' "$log" | sed 's/^ */  /; s/ *$//' || true
			else
				fail "pg$v/installcheck" "$took"
				if [[ -s regression.diffs ]]; then cat regression.diffs; else show "$log" 40; fi
			fi
		fi
		[[ $v == *.* ]] && continue    # a minor of 15: the pg_regress suite only
		for t in "${VERSION_TESTS[@]}" $(printf '%s\n' "${!MAJOR_TESTS[@]}" | sort); do
			[[ -z ${MAJOR_TESTS[$t]:-} || " ${MAJOR_TESTS[$t]} " == *" $v "* ]] || continue
			wanted "pg$v/$t" || continue
			base=$(basename "$t" .pl)
			log=$logdir/pg$v-tap-$base.log
			# the server logs of the test's run on 15 go: the version line reads this run's
			rm -f test/tmp_check/log/"${base}"_*.log
			if TAP_PG_CONFIG=$pgc RP_TEST_MAJOR=$v tap_run "$log" "$RP_ROOT" "$t"; then
				pass "pg$v/$t" "$took"
				printf '  %s checks passed (PostgreSQL %s)\n' "$(grep -cE '^ok [0-9]+' "$log" || true)" \
					"$(sed -n 's/.*starting PostgreSQL \([0-9.]*\) .*/\1/p' test/tmp_check/log/"${base}"_*.log 2>/dev/null | sort -u | paste -sd ' ' -)"
			else
				fail "pg$v/$t" "$took"
				show "$log" 60
				[[ ! -f test/tmp_check/log/regress_log_$base ]] || show "test/tmp_check/log/regress_log_$base" 60
			fi
		done
	done
}

# the tests of MAJOR_TESTS whose major this run has not: named, not passed
major_tests_not_run() {
	local t v
	for t in $(printf '%s\n' "${!MAJOR_TESTS[@]}" | sort); do
		for v in ${MAJOR_TESTS[$t]}; do
			wanted "pg$v/$t" || continue
			[[ " ${RP_PG_CONFIGS:-} " != *" $v="* ]] || continue
			printf 'skipped pg%s/%s (needs PostgreSQL %s: RP_PG_VERSIONS="%s")\n' "$v" "$t" "$v" "$RP_PG_VERSIONS"
		done
	done
}

# (c) the TAP tests, (d) the ThreadSanitizer runs of some, (e) fuzzing, (f) other majors
if ((quick)); then
	printf 'skipped test/t/, tsan/, fuzz/, pgV/ (--quick)\n'
else
	shopt -s nullglob
	tap_suites

	tsan_suites
	fuzz_suites
	version_suites
	major_tests_not_run
fi

((failed == 0)) || printf 'failed: %s\n' "${failures[*]}"
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
