#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/two_mirrors.sh: two mirror sinks in one process keep apart (issue 12).
#
# Proves G1 per sink when one process holds two mirrors of one destination: starts a
# destination cluster and runs the Check test consumer/obj/tests/pg_two_mirrors against it
# (RP_TEST_DST). The test opens two mirrors (slots two_a and two_b, bookkeeping schemas
# rp_bk_a and rp_bk_b, schema prefixes a_ and b_), applies transactions to both through the
# delivery, and checks each one's checkpoint (a replay to one is skipped by its own
# checkpoint only), tables, divergence counts and snapshot progress independently. The test
# binary fails, not skips, when it finds no server.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"

bin=$RP_ROOT/consumer/obj/tests/pg_two_mirrors
work=$(mktemp -d /tmp/rp-two-mirrors.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail two_mirrors "$work/test.out" 40 "$*"; }

make -s -C "$RP_ROOT/consumer" pgtests >"$work/build.out" 2>&1 ||
	fail "make -C consumer pgtests failed (it needs Check)"
[[ -x $bin ]] || fail "no $bin after make -C consumer pgtests"
started=$SECONDS
rp_cluster_start dst
# CK_FORK: each test in its own process, so a crash fails that test and the others still run
if ! RP_TEST_DST=$dst_CONNSTR CK_FORK=yes "$bin" >"$work/test.out" 2>&1; then
	fail "the Check test failed"
fi
grep -q '^100%: Checks: 3, Failures: 0, Errors: 0' "$work/test.out" ||
	fail "expected 3 passing checks"
status=0
printf 'PASS two_mirrors: two mirrors of one destination in one process, apart (%ss)\n' \
	$((SECONDS - started))
