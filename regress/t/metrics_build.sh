#!/usr/bin/env bash
# regress/t/metrics_build.sh: libmicrohttpd is optional.  The consumer is built once more with
# MHD=no (as where libmicrohttpd is not installed: no -DRP_HAVE_MICROHTTPD, no -lmicrohttpd),
# into a directory of its own; that build
#   - does not link libmicrohttpd, and works without --metrics-port (--help, exit 0);
#   - refuses --metrics-port at startup, before anything connects: exactly
#     "replicant: error: this replicant was built without metrics (libmicrohttpd)", exit 1;
#   - passes its unit test of the metrics page (tests/test_metrics.c: the page is rendered the
#     same, and serving it fails with that message).
# The normal build (with libmicrohttpd) serves the page: aggregates.sh, mirror_safety.sh and
# the others that scrape it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"

work=$(mktemp -d /tmp/rp-metrics-build.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail metrics_build "$work/*.err" 20 "$*"; }

rp_say "build the consumer with MHD=no into $work/obj"
if ! make -C "$RP_ROOT/consumer" -j2 MHD=no OBJDIR="$work/obj" PROG="$work/obj/replicant" \
	"$work/obj/replicant" "$work/obj/tests/ct_run" >"$work/build.err" 2>&1; then
	fail "the build without libmicrohttpd failed"
fi
grep -q -- '-DRP_HAVE_MICROHTTPD' "$work/build.err" && fail "MHD=no still compiled with -DRP_HAVE_MICROHTTPD"
grep -q -- '-lmicrohttpd' "$work/build.err" && fail "MHD=no still linked -lmicrohttpd"
if ldd "$work/obj/replicant" | grep -q microhttpd; then
	fail "the MHD=no consumer links libmicrohttpd"
fi

"$work/obj/replicant" --help >"$work/help.out" 2>"$work/help.err" || fail "--help failed"
grep -q -- '--metrics-port' "$work/help.out" || fail "--help does not list --metrics-port"

rc=0
"$work/obj/replicant" -d "dbname=nothing_to_connect_to" --slot s --metrics-port=9187 \
	>"$work/run.out" 2>"$work/run.err" || rc=$?
((rc == 1)) || fail "--metrics-port without libmicrohttpd: exit $rc, not 1"
want='replicant: error: this replicant was built without metrics (libmicrohttpd)'
[[ $(cat "$work/run.err") == "$want" ]] || fail "--metrics-port without libmicrohttpd: stderr is not \"$want\""

CK_FORK=yes "$work/obj/tests/ct_run" metrics >"$work/unit.err" 2>&1 || fail "the metrics suite (MHD=no) failed"
grep -q 'Checks: 4, Failures: 0, Errors: 0' "$work/unit.err" || fail "the metrics suite (MHD=no) did not run its 4 checks"

rp_say "metrics_build: the consumer builds and runs without libmicrohttpd; --metrics-port says so (exit 1)"
status=0
