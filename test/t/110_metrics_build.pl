
# Copyright: see the project's LICENSE.

# libmicrohttpd is optional; was regress/t/metrics_build.sh. The consumer is built once more
# with MHD=no (as where libmicrohttpd is not installed: no -DRP_HAVE_MICROHTTPD, no
# -lmicrohttpd), into a directory of its own; that build
#   - does not link libmicrohttpd, and works without --metrics-port (--help, exit 0);
#   - refuses --metrics-port at startup, before anything connects: exactly
#     "replicant: error: this replicant was built without metrics (libmicrohttpd)", exit 4;
#   - passes its unit test of the metrics page (tests/test_metrics.c: the page is rendered
#     the same, and serving it fails with that message).
# The normal build (with libmicrohttpd) serves the page: the tests that scrape it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $obj  = "$work/obj";

is(rp_run('build', { stdout => "$work/build.out", stderr => "$work/build.out" },
		'make', '-C', rp_root() . '/consumer', '-j2', 'MHD=no', "OBJDIR=$obj", "PROG=$obj/replicant",
		"$obj/replicant", "$obj/tests/ct_run"),
	0, 'the consumer builds with MHD=no') or diag(slurp("$work/build.out"));
my $build = slurp("$work/build.out");
unlike($build, qr/-DRP_HAVE_MICROHTTPD/, 'MHD=no compiles without -DRP_HAVE_MICROHTTPD');
unlike($build, qr/-lmicrohttpd/, 'MHD=no links without -lmicrohttpd');
is(rp_run('ldd', { stdout => "$work/ldd.out" }, 'ldd', "$obj/replicant"), 0, 'ldd reads the MHD=no consumer');
unlike(slurp("$work/ldd.out"), qr/microhttpd/, 'the MHD=no consumer does not link libmicrohttpd');

is(rp_run('help', { stdout => "$work/help.out" }, "$obj/replicant", '--help'), 0, '--help exits 0');
like(slurp("$work/help.out"), qr/--metrics-port/, '--help lists --metrics-port');

is(rp_run('run', { stdout => "$work/run.out" }, "$obj/replicant", '-d', 'dbname=nothing_to_connect_to',
		'--slot', 's', '--metrics-port=9187'),
	4, '--metrics-port without libmicrohttpd: exit 4 (refused)');
(my $run_err = slurp("$work/run.err")) =~ s/\n+\z//;
is($run_err, 'replicant: error: this replicant was built without metrics (libmicrohttpd)',
	'--metrics-port without libmicrohttpd: exactly the error that says so, before anything connects');

is(rp_run('unit', { stdout => "$work/unit.out", stderr => "$work/unit.out", env => { CK_FORK => 'yes' } },
		"$obj/tests/ct_run", 'metrics'),
	0, 'the metrics unit suite passes in the MHD=no build') or diag(slurp("$work/unit.out"));
like(slurp("$work/unit.out"), qr/Checks: 4, Failures: 0, Errors: 0/, 'the metrics suite (MHD=no) runs its 4 checks');

done_testing();
