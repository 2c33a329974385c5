
# Copyright: see the project's LICENSE.

# The mirror's early apply of streamed transactions is exact; was
# regress/t/mirror_stream.sh.
#
# The mirror applies a large streamed transaction block by block, inside one destination
# transaction kept open until the source's commit (docs/sinks.md, "Early apply"). This test
# makes the source stream nearly everything (logical_decoding_work_mem = 64kB) and runs,
# concurrently (test/fixtures/stream_workload.sql):
#   big      transactions of 300 to 3000 row changes on big_t (inserts, updates of some
#            rows, key updates, deletes), some with a rolled-back subtransaction in the
#            middle (its chunks are void: the early apply is dropped), some rolled back
#            whole;
#   small    bursts of single-row transactions on small_t committing while big ones are
#            open (they commit first: the open early apply must be dropped, and the big
#            transaction applied whole at its commit, after them), then quiet spells;
# big_t's updates leave its large STORAGE EXTERNAL column unchanged (the early apply keeps
# the destination's value, also across key updates). The consumer is stopped 6 (ROUNDS)
# times at random moments, with SIGKILL on odd rounds (an early apply open in the
# destination is rolled back with the session) and SIGTERM on even ones (it finishes what
# it holds and prints its -v summary); after each, the slot is not confirmed past the
# destination's checkpoint. Then the workload stops, and two transactions take the two
# paths of an early apply for certain: one streamed transaction alone (applied early,
# committed), and one inside which another transaction commits (its early apply dropped).
# The destination session holds at most two staging tables per mirrored table, the
# consumer runs to the end, and every table is compared with the source. The -v summaries
# must show early applies both committed and dropped.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use IPC::Run ();
use Time::HiRes qw(sleep);

my $rounds = $ENV{ROUNDS} || 6;
my $work   = rp_work();
my $SLOT   = 'mirror_stream';

# no autovacuum: its ANALYZE transactions would be commits interleaving the one meant alone
my $src = rp_cluster('src', 'autovacuum = off');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, "ALTER SYSTEM SET logical_decoding_work_mem = '64kB'; SELECT pg_reload_conf()");
rp_psql($src, rp_fixture('stream_workload.sql'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start', '-v', '-s', '1',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state",
		'--batch-txns', '50', '--batch-ms', '100', @_);
}
# wait_dst(WHAT, QUERY): until QUERY returns t in the destination
sub wait_dst
{
	my ($what, $q) = @_;
	ok(rp_wait_until(sub { my ($r, $o) = $dst->psql('postgres', $q); $r == 0 && $o eq 't' }, $consumer),
		"the destination has $what") or diag(slurp("$work/consumer-$runs.err"));
}

start_consumer();
my @workload = map { rp_psql_bg($src, "workload-$_", "CALL $_()") } qw(big_work small_work);

for my $round (1 .. $rounds)
{
	sleep(1 + int(rand(3)) + int(rand(10)) / 10);
	my $how;
	if ($round % 2)
	{
		$how = 'SIGKILL';
		ok($consumer->kill9_alive, "round $round: the consumer (run $runs) is killed with SIGKILL while it runs")
		  or diag('it exited by itself: ' . slurp("$work/consumer-$runs.err"));
	}
	else
	{
		$how = 'SIGTERM';
		ok($consumer->alive, "round $round: the consumer (run $runs) still runs before SIGTERM")
		  or diag(slurp("$work/consumer-$runs.err"));
		$consumer->signal('TERM');
		is($consumer->wait_exit, 0, "round $round: the consumer exits 0 on SIGTERM");
	}
	my $ck = rp_dst_checkpoint($dst, $SLOT);
	if ($ck ne '')
	{
		ok(!rp_lsn_lt($ck, rp_slot_confirmed($src, $SLOT)),
			"round $round: the slot is not confirmed past the destination checkpoint $ck");
	}
	note("round $round: $how; destination checkpoint " . ($ck || 'none'));
	start_consumer();
}
sleep(3);

rp_psql($src, 'UPDATE ctl SET stop = true');
$_->wait_exit for @workload;
my $wl = join('', map { slurp("$work/$_->{name}.out") } @workload);
unlike($wl, qr/ERROR:/, 'the workload ran without an error');
wait_dst("the workload's stop", 'SELECT stop FROM ctl');

# big_t known to this consumer run (an early apply waits for a table's first description)
rp_psql($src, "INSERT INTO big_t VALUES (-3, 3, 'known', 0, NULL)");
wait_dst('big_t known to the consumer', 'SELECT count(*) = 1 FROM big_t WHERE id = -3');
# an early apply committed: a streamed transaction (3000 rows, far above 64kB) alone
rp_psql($src, "INSERT INTO big_t SELECT nextval('ids'), 1, md5(i::text), i, NULL FROM generate_series(1, 3000) i;
	INSERT INTO big_t VALUES (-1, 1, 'alone', 0, NULL)");
# an early apply dropped: a streamed transaction inside which another one commits. Its
# first 3000 rows are streamed when the decoder reaches the other's commit, whatever the pace.
my ($in, $out) = ('', '');
my $open = IPC::Run::start([ $src->installed_command('psql'), '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $srcconn ],
	'<', \$in, '>', \$out, '2>&1', IPC::Run::timeout(rp_timeout()));
$in .= "BEGIN;\nINSERT INTO big_t SELECT nextval('ids'), 2, md5(i::text), i, NULL FROM generate_series(1, 3000) i;\nSELECT 'inserted';\n";
my $inserted = eval { $open->pump until $out =~ /^inserted$/m; 1 };
ok($inserted, 'the open transaction inserted its 3000 rows') or diag($out);
rp_psql($src, 'INSERT INTO small_t VALUES (-1, 1)');
$in .= "INSERT INTO big_t SELECT nextval('ids'), 2, md5(i::text), i, NULL FROM generate_series(1, 100) i;\n"
  . "INSERT INTO big_t VALUES (-2, 2, 'interleaved', 0, NULL);\nCOMMIT;\n";
my $finished = eval { $open->finish };
ok($finished && $open->result == 0, 'the open transaction commits') or diag($out);
wait_dst('the two streamed transactions', 'SELECT count(*) = 3 FROM big_t WHERE id IN (-1, -2, -3)');

# a dropped early apply rolls back the staging tables it made; the ones made in committed
# batches are reused: two per mirrored table (upserts, deletes) at most in a session,
# however many drops it saw (counted per session: a killed run's session may not be gone yet)
my $tables = rp_psql($dst, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
my $stages = rp_psql($dst, "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM pg_class c
	JOIN pg_namespace s ON s.oid = c.relnamespace
	WHERE s.nspname LIKE 'pg_temp%' AND c.relname LIKE 'rp_stage%' GROUP BY s.oid) x");
cmp_ok($stages, '<=', 2 * $tables,
	"a destination session holds at most 2 staging tables per mirrored table ($stages for $tables tables)");
$consumer->signal('TERM');
$consumer->wait_exit;

my $endpos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
start_consumer('-n', '-E', $endpos);
is($consumer->wait_exit, 0, 'the final consumer run exits 0') or diag(slurp("$work/consumer-$runs.err"));

rp_compare_tables($src, $dst, qw(big_t small_t ctl));

# the -v summaries of the runs that stopped by themselves or on SIGTERM: over the runs,
# early applies must have gone through to a commit and been dropped
my @sums = grep { /applied early/ } map { split /\n/, slurp($_) } glob("$work/consumer-*.err");
ok(@sums > 0, 'consumer runs reported their early applies');
my ($commits, $drops) = (0, 0);
for (@sums)
{
	$commits += $1 if /; (\d+) streamed transactions applied early/;
	$drops   += $1 if /, (\d+) dropped\)/;
}
cmp_ok($commits, '>', 0, "streamed transactions were applied early ($commits)") or diag(join("\n", @sums));
cmp_ok($drops, '>', 0, "early applies were dropped ($drops)") or diag(join("\n", @sums));

done_testing();
