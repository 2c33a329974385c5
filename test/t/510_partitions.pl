
# Copyright: see the project's LICENSE.

# A partitioned table mirrored under partitions=leaf (the default) ends equal partition by
# partition, through what moves rows between partitions (G1, G3); was
# regress/t/partitions.sh.
#
# The source (test/fixtures/partitions.sql): m, range-partitioned on two levels (m_lo;
# m_mid, itself partitioned by list, with a default partition; a default partition m_def),
# 6,000 rows before the slot. Two mirrors: one into a destination whose schema is the
# source's pg_dump (the partitioned parent there routes nothing: each change names its
# leaf), one with --create-tables (each leaf a table of its own). Both take --snapshot while
# a workload runs, then stream: updates that move rows between partitions (a delete from one
# leaf and an insert into another), TRUNCATE of the partitioned table (every leaf), DETACH
# PARTITION of a leaf that is written to afterwards as a table of its own, and ATTACH
# PARTITION of a table that already held rows. Then every leaf is compared (count and md5 of
# the ordered rows, ONLY), and the pg_dump destination's parent holds what the source's does.
#
# A third mirror takes the same table under -o partitions=root (--create-tables: one table
# m): its snapshot copies the root whole, the moves and the TRUNCATE keep it equal to the
# source's m read through its root, and the DETACH PARTITION (rows leaving m without a
# change record) halts it at m's next change, exit 3, naming the table, its checkpoint
# before that change.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();

sub section { return rp_fixture_section('partitions.sql', $_[0]); }

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
rp_psql($src, section('schema'));
is(rp_run('pg_dump', { stdout => "$work/schema.sql" }, $src->installed_command('pg_dump'), '--schema-only',
		'-d', $srcconn),
	0, 'pg_dump --schema-only of the source');
rp_psql($dst, "CREATE DATABASE $_") for qw(dumped created rooted);
ok(eval { rp_psql($dst, slurp("$work/schema.sql"), 'dumped'); 1 }, "the source's schema loads into database dumped")
  or diag($@);

my $load = rp_psql_bg($src, 'load', 'CALL move_load()');

my %c;
# start(NAME, SLOT, DB, ARG...): a mirror into database DB of the destination
sub start
{
	my ($name, $slot, $db, @args) = @_;
	$c{$name} = rp_consumer($name, { stdout => "$work/$name.out" }, -d => $srcconn, -S => $slot, @args,
		'--sink', 'postgres:' . rp_conninfo($dst, $db), '--state-dir', "$work/state-$name", '-s', '1', '-v');
	return;
}
sub errs { return join('', map { "--- $_\n" . slurp($_) } glob("$work/c*.err")); }

start('c1', 'part_dumped', 'dumped', '--create-slot', '--snapshot', '--start');
start('c2', 'part_created', 'created', '--create-slot', '--snapshot', '--start', '--create-tables');
start('c3', 'part_rooted', 'rooted', '--create-slot', '--snapshot', '--start', '--create-tables',
	'-o', 'partitions=root');
ok(rp_wait_until(
		sub {
			rp_dst_checkpoint($dst, 'part_dumped', 'dumped') ne ''
			  && rp_dst_checkpoint($dst, 'part_created', 'created') ne ''
			  && rp_dst_checkpoint($dst, 'part_rooted', 'rooted') ne '';
		},
		@c{qw(c1 c2 c3)}),
	'the three snapshots complete (each destination has a checkpoint), no mirror exiting')
  or diag(errs());
# the load moves rows on for a while after the snapshots (any pace)
my $moved0 = rp_psql($src, 'SELECT count(*) FROM m');
ok(rp_wait_until(sub { rp_psql($src, 'SELECT count(*) FROM m') >= $moved0 + 50 }, $load),
	'the load goes on for 50 transactions after the snapshots');
rp_psql($src, 'UPDATE load_ctl SET stop = true');
is($load->wait_exit, 0, 'the load ends without an error') or diag(slurp("$work/load.out"));

# ---- TRUNCATE of the partitioned table, DETACH, ATTACH of a table with rows. DDL is not
# replicated: the operator makes the new table on the dumped destination first, as on the
# source (the --create-tables mirror makes it from the stream), and detaches and attaches
# there once the mirror has passed the source's DDL.
rp_psql($dst, 'CREATE TABLE m_hi (LIKE m INCLUDING ALL)', 'dumped');
rp_psql($src, section('truncate'));
# partitions=root: one destination table m, equal to the source's m read whole (snapshot of
# the root, rows moved between partitions, TRUNCATE of the partitioned table), no leaf there
my $fence = rp_psql($src, 'SELECT pg_current_wal_lsn()');
ok(rp_wait_until(sub { my $r = rp_dst_checkpoint($dst, 'part_rooted', 'rooted'); $r ne '' && !rp_lsn_lt($r, $fence) },
		$c{c3}),
	"partitions=root: the mirror reaches the fence $fence after the TRUNCATE") or diag(errs());
my $q = "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM m x";
my $want = rp_psql($src, $q);
is(rp_psql($dst, $q, 'rooted'), $want, "partitions=root: the destination's m equals the source's ($want)");
is(rp_psql($dst, "SELECT count(*) FROM pg_class WHERE relname LIKE 'm\\_%' AND relkind = 'r'", 'rooted'), '0',
	'partitions=root: the mirror made no partition tables');

rp_psql($src, section('detach'));
$fence = rp_psql($src, 'SELECT pg_current_wal_lsn()');
ok(rp_wait_until(
		sub {
			my $a = rp_dst_checkpoint($dst, 'part_dumped', 'dumped');
			my $b = rp_dst_checkpoint($dst, 'part_created', 'created');
			$a ne '' && $b ne '' && !rp_lsn_lt($a, $fence) && !rp_lsn_lt($b, $fence);
		},
		@c{qw(c1 c2)}),
	"both leaf mirrors reach the fence $fence after DETACH and ATTACH")
  or diag('at ' . rp_dst_checkpoint($dst, 'part_dumped', 'dumped') . ' and '
	  . rp_dst_checkpoint($dst, 'part_created', 'created') . "\n" . errs());
# partitions=root: the DETACH took rows out of m with no change record: the mirror halts at
# m's next change, naming the table, and its checkpoint stays before that change
my $rc = $c{c3}->wait_exit;
ok(defined $rc, 'partitions=root: the mirror halts by itself after DETACH PARTITION');
is($rc, 3, 'partitions=root: the mirror exits 3 after DETACH PARTITION') or diag(slurp("$work/c3.err"));
like(slurp("$work/c3.err"), qr/table "public"\."m": its partitions changed \(ATTACH or DETACH PARTITION\)/,
	'partitions=root: the halt names the table and the change');
my $r = rp_dst_checkpoint($dst, 'part_rooted', 'rooted');
ok($r ne '' && rp_lsn_lt($r, $fence), "partitions=root: the checkpoint $r is before the halted change ($fence)");
rp_psql($dst, section('dst_detach'), 'dumped');

# ---- every leaf equal, in both mirrors
my @leaves = split /\n/, rp_psql($src, "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'
	AND c.relname LIKE 'm%' ORDER BY 1");
for my $t (@leaves)
{
	$q = "SELECT count(*) || ' ' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '-') FROM ONLY $t x";
	$want = rp_psql($src, $q);
	for my $db (qw(dumped created))
	{
		my ($ret, $got) = $dst->psql($db, $q);
		$got = '(no table)' if $ret != 0;
		is($got, $want, "table $t: database $db equals the source ($want)");
	}
}
$q = "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM m x";
$want = rp_psql($src, $q);
is(rp_psql($dst, $q, 'dumped'), $want, "the partitioned table m equals the source's in the dumped destination ($want)");

# verify compares every leaf of both mirrors (the source is quiet)
for my $db (qw(dumped created))
{
	my $vrc = rp_replicant("verify-$db", { stdout => "$work/verify-$db.out" }, 'verify', -d => $srcconn,
		'--sink', 'postgres:' . rp_conninfo($dst, $db), -S => "part_$db");
	is($vrc, 0, "verify of database $db exits 0") or diag(slurp("$work/verify-$db.out"));
	my $out = slurp("$work/verify-$db.out");
	like($out, qr/public\.\Q$_\E: equal/, "verify of $db finds $_ equal") for qw(m_lo m_mid_a m_mid_rest m_def m_hi);
}

done_testing();
