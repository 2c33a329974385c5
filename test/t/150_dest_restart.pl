# Copyright: see the project's LICENSE.

# A mirror whose destination goes away: backoff and counters; was regress/t/dest_restart.sh.
#
# Proves the documented retry behaviour (docs/operations.md) and that the telemetry is
# monotonic for the process's life:
#   1. A mirror with --metrics-port delivers N transactions; the metrics page counts them.
#   2. The destination stops while the source keeps committing. Every attempt reaches the
#      source, streams and fails on the destination: the retries back off (the consumer's
#      log shows the pause doubling: 1, 2, 4 s), they do not start over at 1 s each time.
#   3. The destination comes back: the mirror catches up, the tables are equal, and no
#      counter of the metrics page ever went backwards on any read (the delivery restarted
#      from its durable checkpoint after the loss); the transactions counter ends past N,
#      and the retries are counted as the sink's (replicant_retries_total{cause="sink"}).
#   4. A session holds a lock on the destination table and the source commits a row: the
#      mirror's batch waits on the lock. SIGTERM stops it all the same (its destination
#      query is cancelled): exit 0, the destination's checkpoint did not move, the slot is
#      confirmed at most up to it, and the row comes on the next run.
# The waits are bounded (RP_TEST_TIMEOUT) only to keep a broken consumer from hanging the suite.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;

my $N    = 20;
my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, v text)');
rp_replicant_ok([ -d => $srcconn, -S => 'm', '--create-slot' ], 'slot m created');
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $c = rp_consumer('consumer', -d => $srcconn, -S => 'm', '--start', '-s', '1',
	'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state",
	'--metrics-port', $port);

# read_metrics(): the counters of one metrics page ("name value" of every *_total), each
# compared with the highest value read before; false when the page does not answer
my (%high, @backwards);
my $reads = 0;
my $page  = '';
sub read_metrics
{
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
	return 0 unless $r->{success};
	$page = rp_plain_metrics($r->{content});
	$reads++;
	for my $line (split /\n/, $page)
	{
		next unless $line =~ /^(replicant_[a-z_]+_total(?:\{[^}]*\})?) ([0-9]+)$/;
		my ($name, $value) = ($1, $2);
		push @backwards, "read $reads: $name went backwards from $high{$name} to $value"
		  if defined $high{$name} && $value < $high{$name};
		$high{$name} = $value;
	}
	return 1;
}
sub dst_rows
{
	my ($ret, $out) = $dst->psql('postgres', 'SELECT count(*) FROM public.t');
	return $ret == 0 ? $out : -1;
}
# wait(WHAT, CODE): CODE until true, reading the metrics meanwhile; fails when the
# consumer exits first
sub wait_for
{
	my ($what, $code) = @_;
	ok(rp_wait_until(sub { return 1 if $code->(); read_metrics(); return 0; }, $c), $what)
	  or diag(($c->alive ? 'the consumer runs' : 'the consumer exited ' . $c->status) . ': '
		  . slurp("$work/consumer.err"));
	return;
}

# ---- 1.
rp_psql($src, "INSERT INTO t VALUES ($_, 'v$_')") for 1 .. $N;
wait_for("$N rows in the destination", sub { dst_rows() == $N });
wait_for("the metrics count $N transactions",
	sub { read_metrics() && ($high{replicant_transactions_total} // 0) >= $N });
my $before = $high{replicant_transactions_total} // 0;

# ---- 2.
$dst->stop('fast');
rp_psql($src, "INSERT INTO t VALUES ($_, 'v$_')") for $N + 1 .. $N + 5;
wait_for('a retry after 4 s (1, 2, then 4)',
	sub { slurp("$work/consumer.err") =~ /reconnecting in 4 s/ });
like(slurp("$work/consumer.err"), qr/reconnecting in 2 s/, 'a retry after 2 s came before the one after 4 s');

# ---- 3.
$dst->start;
wait_for($N + 5 . ' rows in the destination once it is back', sub { dst_rows() == $N + 5 });
wait_for("the transactions counter past $before",
	sub { read_metrics() && ($high{replicant_transactions_total} // 0) > $before });
like($page, qr/^replicant_halts_total\{reason="error"\} [1-9]/m,
	'the lost destination is counted in replicant_halts_total{reason="error"}');
like($page, qr/^replicant_retries_total\{cause="sink"\} [1-9]/m,
	'and its retries in replicant_retries_total{cause="sink"}');
rp_compare_tables($src, $dst, 't');

# ---- 4.
my $locker = rp_psql_bg($dst, 'locker',
	'BEGIN; LOCK TABLE public.t IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600)');
wait_for('the lock held on the destination table', sub {
		rp_psql($dst, "SELECT count(*) FROM pg_locks WHERE relation = 'public.t'::regclass
			AND granted AND mode = 'AccessExclusiveLock'") == 1 });
rp_psql($src, 'INSERT INTO t VALUES (' . ($N + 6) . ", 'v')");
wait_for("the mirror's batch waiting on the lock", sub {
		rp_psql($dst, "SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'replicant' AND wait_event_type = 'Lock'") == 1 });
# read once the batch waits: an idle position (a running_xacts record of the source) may
# still be recorded between the catch-up and the insert (the second TAP run saw it)
my $ck0 = rp_dst_checkpoint($dst, 'm');
isnt($ck0, '', "the destination has a checkpoint ($ck0)");
ok($c->alive && $c->signal('TERM'), 'SIGTERM sent to the running consumer (still running)');
my $rc = $c->wait_exit;
ok(defined $rc, 'the consumer ends after SIGTERM while its batch waits on the lock');
is($rc, 0, 'the consumer exits 0 after SIGTERM') or diag(slurp("$work/consumer.err"));
my $ck = rp_dst_checkpoint($dst, 'm');
is($ck, $ck0, "the destination's checkpoint did not move while its batch waited on the lock");
my $conf = rp_slot_confirmed($src, 'm');
ok($ck ne '' && rp_lsn_cmp($conf, $ck) <= 0, "the slot ($conf) is not confirmed past the destination's checkpoint ($ck)");
$locker->signal('TERM');
$locker->wait_exit;
rp_psql($dst, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE query LIKE '%pg_sleep(3600)%' AND pid <> pg_backend_pid()");
my $endpos = rp_psql($src, 'SELECT pg_current_wal_lsn()');
rp_replicant_ok([ -d => $srcconn, -S => 'm', '--start', '-n', -E => $endpos,
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state" ],
	'the run after the stop exits 0');
rp_compare_tables($src, $dst, 't');
is(scalar @backwards, 0, "no counter of the metrics page went backwards in $reads reads "
	  . "(transactions $before before the loss, " . ($high{replicant_transactions_total} // '?') . ' after)')
  or diag(join("\n", @backwards));

done_testing();
