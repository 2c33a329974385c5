# Copyright: see the project's LICENSE.

# A mirror of a partitioned table with -o partitions=root is one destination table named
# like the root, and an ATTACH PARTITION halts it (G3); was regress/t/partitions_root.sh.
#
# The source's orders (test/fixtures/partitions_root.sql) is partitioned by region, with a
# sub-partitioned partition (by id), a default partition, and a partition made on its own
# with its columns in another order and a dropped column, then attached. The slot is made
# before any row (streaming only, no --snapshot). The workload
# (test/fixtures/partitions_root_workload.sql: inserts into every partition, updates within
# a partition and between partitions, key updates, deletes, a streamed transaction) goes to
# a mirror run with --create-tables -o partitions=root; then:
#   (1) the destination has one table orders, equal to the source's orders read through its
#       root, and no table for any of its partitions;
#   (2) a table with rows of its own is attached as a partition, and a row inserted into
#       orders after it: the mirror exits 3 naming public.orders and saying "its partitions
#       changed (ATTACH or DETACH PARTITION)", without applying that row or acknowledging its
#       transaction (the slot's confirmed position and the destination checkpoint are before
#       it); a second run halts the same way, at the same checkpoint.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $SLOT = 'parts';

my $src = rp_cluster('src', "logical_decoding_work_mem = '64kB'");
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, rp_fixture('partitions_root.sql'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], 'slot created');

my $runs = 0;
sub start_consumer
{
	$runs++;
	return rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start', '-v', '-s', '1',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state",
		'--batch-txns', '20', '--batch-ms', '100', '-o', 'partitions=root');
}

# halted(PROC): the run stopped by itself with exit 3 naming the table and the reason
sub halted
{
	my ($c) = @_;
	my $n = $runs;
	my $rc = $c->wait_exit;
	ok(defined $rc, "run $n stops by itself after the ATTACH PARTITION")
	  or $c->kill9_alive;
	is($rc, 3, "run $n exits 3");
	like(slurp("$work/consumer-$n.err"),
		qr/destructive schema change of table "public"\."orders": its partitions changed \(ATTACH or DETACH PARTITION\)/,
		"run $n names the table and the reason");
}

my $c = start_consumer();
rp_psql($src, rp_fixture('partitions_root_workload.sql'));
ok(rp_wait_until(
		sub {
			my ($ret, $out) = $dst->psql('postgres',
				"SELECT EXISTS (SELECT FROM pg_tables WHERE tablename = 'fence') AND (SELECT count(*) = 1 FROM fence)");
			return $ret == 0 && $out eq 't';
		},
		$c),
	'the destination has the workload (its fence row)')
  or diag(slurp("$work/consumer-$runs.err"));

# (1) one destination table, equal to the source's rows read through the root
rp_compare_tables($src, $dst, 'orders');
is(rp_psql($dst,
		"SELECT coalesce(string_agg(tablename, ','), '') FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'orders\\_%'"),
	'', 'the destination has no table for any partition');

# (2) a table with rows attached: the root gains rows no change names; the next change of it halts
rp_psql($src, q{
CREATE TABLE orders_apac (LIKE orders);
INSERT INTO orders_apac VALUES (90001, 'apac', 1, 'before attach'), (90002, 'apac', 2, 'before attach');
ALTER TABLE orders_apac ADD PRIMARY KEY (id, region);
ALTER TABLE orders ATTACH PARTITION orders_apac FOR VALUES IN ('apac');
});
rp_psql($src, "INSERT INTO orders VALUES (90003, 'eu', 3, 'after attach')");
my $bound = rp_psql($src, 'SELECT pg_current_wal_lsn()');
halted($c);
is(rp_psql($dst, 'SELECT count(*) FROM orders WHERE id >= 90001'), '0',
	'no row of the attached partition or after it reached the destination');
my $ck = rp_dst_checkpoint($dst, $SLOT);
isnt($ck, '', 'the destination has a checkpoint');
ok($ck ne '' && rp_lsn_lt($ck, $bound), "the destination checkpoint $ck is before the halted transaction ($bound)");
my $flush = rp_slot_confirmed($src, $SLOT);
ok(rp_lsn_lt($flush, $bound), "the slot confirmed $flush, before the halted transaction ($bound)");

# a second run halts the same way, at the same place
$c = start_consumer();
halted($c);
is(rp_dst_checkpoint($dst, $SLOT), $ck, 'the second run did not move the destination checkpoint');

done_testing();
