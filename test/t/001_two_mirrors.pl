
# Copyright: see the project's LICENSE.

# Two mirror sinks in one process keep apart (issue 12); was regress/t/two_mirrors.sh.
#
# Proves G1 per sink when one process holds two mirrors of one destination: runs the
# Check test consumer/obj/tests/pg_two_mirrors against a destination cluster
# (RP_TEST_DST). The test opens two mirrors (slots two_a and two_b, bookkeeping schemas
# rp_bk_a and rp_bk_b, schema prefixes a_ and b_), applies transactions to both through
# the delivery, and checks each one's checkpoint (a replay to one is skipped by its own
# checkpoint only), tables, divergence counts and snapshot progress independently. The
# test binary fails, not skips, when it finds no server.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $root = rp_root();
my $work = rp_work();
my $bin  = "$root/consumer/obj/tests/pg_two_mirrors";

is(rp_run('build', { stdout => "$work/build.out" }, 'make', '-s', '-C', "$root/consumer", 'pgtests'),
	0, 'make -C consumer pgtests builds the test (it needs Check)')
  or diag(slurp("$work/build.err"));
ok(-x $bin, "consumer/obj/tests/pg_two_mirrors exists");

my $dst = rp_cluster('dst');
# CK_FORK: each test in its own process, so a crash fails that test and the others still run
my $rc = rp_run('test', { stdout => "$work/test.out", stderr => "$work/test.out",
		env => { RP_TEST_DST => rp_conninfo($dst), CK_FORK => 'yes' } }, $bin);
my $out = -e "$work/test.out" ? slurp("$work/test.out") : '';
is($rc, 0, 'the Check test exits 0') or diag($out);
like($out, qr/^100%: Checks: 3, Failures: 0, Errors: 0/m, 'all 3 Check tests pass');

done_testing();
