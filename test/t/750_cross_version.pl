
# Copyright: see the project's LICENSE.

# A mirror across majors: an 18 source into a 15 destination (a database moved back, or a
# reporting copy on an older server) and a 15 source into an 18 destination (the upgrade
# users make with replicant). regress/run_tests.sh runs it with the 18 servers of the version
# matrix as the default installation and the system's 15 beside it (rp_pg_config).
#
# Each direction: pgbench's tables (pgbench -i on the source, the same tables without rows on
# the destination) and test/fixtures/cross_version.sql (every pre-cast encoding with its
# extremes, a TOASTed column, an enum, a domain, a keyless table, a GENERATED ALWAYS identity,
# a partitioned table) on both sides; `replicant --create-slot --snapshot --start` copies and
# streams while pgbench and cross_load() write, is killed with SIGKILL once the stream has
# checkpointed past the snapshot and started again; after a fence every table equals the
# source's (rows as a multiset, text output under one set of settings), `replicant wait`
# passes and `replicant verify` finds every table equal; the destination's identity
# sequence, synced with `replicant sync-sequences`, hands out no copied key.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $user = getpwuid($<);
my $schema = rp_fixture_section('cross_version.sql', 'schema');
my $load_sql = rp_fixture_section('cross_version.sql', 'load');
my @TABLES = qw(pgbench_accounts pgbench_branches pgbench_tellers pgbench_history
  types_t keyless ident parted fence);
# one text output for both majors' rows
my $SET = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 3;"
  . " SET IntervalStyle = 'postgres'; SET bytea_output = 'hex';";

my %node = (
	18 => rp_cluster('pg18', { pg_config => rp_pg_config('18') }),
	15 => rp_cluster('pg15', { pg_config => rp_pg_config('15') }));
like($node{18}->pg_version, qr/^18/, 'one server is PostgreSQL 18 (' . $node{18}->pg_version . ')');
like($node{15}->pg_version, qr/^15/, 'the other is PostgreSQL 15 (' . $node{15}->pg_version . ')');

# pgbench_cmd(NODE): the system's pgbench (15: it speaks to 18) against NODE
sub pgbench_cmd
{
	my ($n) = @_;
	return ($node{15}->installed_command('pgbench'), '-h', $n->host, '-p', $n->port, '-U', $user);
}

# mirror(FROM, TO): the whole round of one direction
sub mirror
{
	my ($from, $to) = @_;
	my ($src, $dst) = ($node{$from}, $node{$to});
	my $db = "xv_$from";
	my $srcconn = rp_conninfo($src, $db);
	my $dstconn = rp_conninfo($dst, $db);
	my $sink = "postgres:$dstconn";
	my $slot = "cross_$from";
	my $tag = "$from -> $to";
	$_->safe_psql('postgres', "CREATE DATABASE $db") for $src, $dst;

	is(rp_run("pgbench-init-$from", { stdout => "$work/pgbench-init-$from.out" }, pgbench_cmd($src), '-i', '-q',
			$db),
		0, "$tag: pgbench -i on the source") or diag(slurp("$work/pgbench-init-$from.err"));
	is(rp_run("pgbench-tables-$to", { stdout => "$work/pgbench-tables-$to.out" }, pgbench_cmd($dst), '-i', '-I', 'dtp',
			$db),
		0, "$tag: pgbench's tables, no rows, on the destination") or diag(slurp("$work/pgbench-tables-$to.err"));
	rp_psql($_, $schema, $db) for $src, $dst;
	rp_psql($src, $load_sql, $db);
	rp_psql($src, 'CALL cross_load(1, 50)', $db);

	my @load = (
		RpTest::Proc->start(name => "pgbench-$from", cmd => [ pgbench_cmd($src), '-n', '-c', '2', '-T', '600', $db ],
			stdout => "$work/pgbench-$from.out", stderr => "$work/pgbench-$from.err"));
	my $own = RpTest::Proc->start(name => "load-$from",
		cmd => [ $node{15}->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $srcconn,
			'-c', 'CALL cross_load(51, 1500)' ],
		stdout => "$work/load-$from.out", stderr => "$work/load-$from.out");

	my ($c, $runs) = (undef, 0);
	my $start = sub {
		$runs++;
		$c = rp_consumer("c$from-$runs", -d => $srcconn, -S => $slot, @_, '--sink', $sink,
			'--state-dir', "$work/state-$from", '-s', '1', '-v');
	};
	my $errs = sub { join('', map { slurp($_) } glob("$work/c$from-*.err")) };
	$start->('--create-slot', '--snapshot', '--start');
	ok(rp_wait_until(sub { rp_dst_checkpoint($dst, $slot, $db) ne '' }, $c), "$tag: the snapshot completes")
	  or diag($errs->());
	my $ck0 = rp_dst_checkpoint($dst, $slot, $db);
	ok(rp_wait_until(sub { my $k = rp_dst_checkpoint($dst, $slot, $db); $k ne '' && rp_lsn_lt($ck0, $k) }, $c),
		"$tag: the stream checkpoints past the snapshot") or diag($errs->());
	ok($c->kill9_alive, "$tag: the consumer is killed with SIGKILL while it streams") or diag($errs->());
	$start->('--start');

	is($own->wait_exit, 0, "$tag: cross_load() ends without an error") or diag(slurp("$work/load-$from.out"));
	for my $p (@load)
	{
		$p->signal('TERM');
		$p->wait_exit;
	}
	# the fence's commit, then the position read in a transaction of its own (rp_fence)
	rp_psql($src, 'INSERT INTO fence DEFAULT VALUES', $db);
	my $fence = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
	ok(rp_wait_until(sub { my $k = rp_dst_checkpoint($dst, $slot, $db); $k ne '' && !rp_lsn_lt($k, $fence) }, $c),
		"$tag: the mirror reaches the fence $fence") or diag($errs->());

	cmp_ok(rp_psql($src, 'SELECT count(*) FROM pgbench_history', $db), '>', 0, "$tag: pgbench wrote");
	for my $t (@TABLES)
	{
		my $q = "$SET SELECT count(*) || ' ' || coalesce(md5(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\")), '-')"
		  . " FROM (SELECT x::text AS r FROM public.$t x) s";
		my $a = rp_psql($src, $q, $db);
		is(rp_psql($dst, $q, $db), $a, "$tag: table $t equals the source ($a)");
	}

	is(rp_replicant("wait-$from", 'wait', -d => $srcconn, '--sink', $sink, -S => $slot, '--timeout', '300'),
		0, "$tag: replicant wait passes") or diag(slurp("$work/wait-$from.err"));
	$c->signal('TERM');
	is($c->wait_exit, 0, "$tag: the consumer ends on SIGTERM with exit 0") or diag($errs->());
	my $vrc = rp_replicant("verify-$from", { stdout => "$work/verify-$from.out" }, 'verify', -d => $srcconn,
		'--sink', $sink, -S => $slot);
	my $vout = slurp("$work/verify-$from.out");
	is($vrc, 0, "$tag: replicant verify exits 0") or diag($vout . slurp("$work/verify-$from.err"));
	like($vout, qr/^\d+ tables: \d+ equal, 0 different, 0 not compared$/m, "$tag: verify finds every table equal");
	is(rp_replicant("sync-$from", 'sync-sequences', -d => $srcconn, '--sink', $sink), 0,
		"$tag: replicant sync-sequences exits 0") or diag(slurp("$work/sync-$from.err"));
	ok(eval { rp_psql($dst, "INSERT INTO ident (v) SELECT 'after' FROM generate_series(1, 5)", $db); 1 },
		"$tag: the application's inserts on the destination take new identity values") or diag($@);
	return;
}

mirror(18, 15);
mirror(15, 18);

done_testing();
