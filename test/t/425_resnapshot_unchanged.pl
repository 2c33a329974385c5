
# Copyright: see the project's LICENSE.

# A second snapshot into a populated mirror rewrites only the rows that differ (issue 49,
# item 3). The merge used to update every row it met (ON CONFLICT DO UPDATE with no
# condition): a new version, index entries and WAL for each, UPDATE triggers fired, for rows
# that were already right.
#
# A source table with columns of types that have no equality operator (json, point) and a
# numeric, 3000 rows, is copied into the mirror by a first slot's snapshot. Then, on the
# source, 30 rows get a new text, 10 rows a numeric that is equal but written otherwise (1.0
# becomes 1.00: a user sees the difference, numeric equality does not), and 5 rows are
# deleted. A second slot's snapshot merges into the populated table. Each destination row's
# xmin, before and after, says which rows were written: exactly the 40 changed ones (the
# deleted ones are retired); and the table equals the source. A table of keys only (a link
# table, whose key is the whole row: nothing to compare) merges too, equal afterwards.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $sc   = rp_conninfo($src);
my $sink = 'postgres:' . rp_conninfo($dst);

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text, j json, p point, n numeric);'
  . ' CREATE TABLE link (a int, b int, PRIMARY KEY (a, b))';
rp_psql($_, $ddl) for $src, $dst;
rp_psql($src, q{INSERT INTO t SELECT i, 'v' || i, json_build_object('i', i), point(i, -i), 1.0
	FROM generate_series(1, 3000) i});
rp_psql($src, q{INSERT INTO link SELECT i % 50, i FROM generate_series(1, 500) i});

# snap(SLOT): a snapshot of slot SLOT into the mirror, the consumer stopped once it checkpointed
sub snap
{
	my ($slot) = @_;
	my $c = rp_consumer($slot, -d => $sc, -S => $slot, '--create-slot', '--snapshot', '--start',
		'--sink', $sink, '--state-dir', "$work/state-$slot", '-v');
	ok(rp_wait_until(sub { rp_dst_checkpoint($dst, $slot) ne '' }, $c), "the snapshot of slot $slot completes")
	  or diag(slurp("$work/$slot.err"));
	like(slurp("$work/$slot.err"), qr/snapshot complete/, "... and says so");
	ok($c->signal('TERM') && defined($c->wait_exit) && $c->status == 0, "... and its consumer exits 0 on SIGTERM")
	  or diag(slurp("$work/$slot.err"));
	return;
}

snap('s1');
rp_compare_tables($src, $dst, 't', 'link');
my %before = map { split /\|/ } split /\n/, rp_psql($dst, 'SELECT id, xmin FROM t');
is(scalar(keys %before), 3000, 'the first snapshot copied 3000 rows');

rp_psql($src, q{UPDATE t SET v = v || '+' WHERE id % 100 = 7});
rp_psql($src, q{UPDATE t SET n = 1.00 WHERE id % 300 = 11});
rp_psql($src, q{DELETE FROM t WHERE id % 600 = 13});
# a table of keys only: its merge has no column to compare
rp_psql($src, q{DELETE FROM link WHERE b % 100 = 0; INSERT INTO link SELECT -1, i FROM generate_series(1, 7) i});
my %changed = map { $_ => 1 } split /\n/, rp_psql($src, 'SELECT id FROM t WHERE id % 100 = 7 OR id % 300 = 11');
is(scalar(keys %changed), 40, '40 rows changed on the source, 5 deleted');

snap('s2');
rp_compare_tables($src, $dst, 't', 'link');
my %after = map { split /\|/ } split /\n/, rp_psql($dst, 'SELECT id, xmin FROM t');
my @written = sort { $a <=> $b } grep { $after{$_} ne $before{$_} } keys %after;
is(scalar(@written), 40, 'the second snapshot wrote 40 rows') or diag('written: ' . join(' ', @written[0 .. 19]));
is_deeply([ grep { !$changed{$_} } @written ], [], '... each of them one that changed');
is(rp_psql($dst, q{SELECT count(*) FROM t WHERE n::text = '1.00'}), '10', 'the numerics written otherwise are the new text');

done_testing();
