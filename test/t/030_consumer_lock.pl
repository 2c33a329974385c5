
# Copyright: see the project's LICENSE.

# One consumer per file log, state directory and mirror slot; was
# regress/t/consumer_lock.sh.
#
# Proves G1 (effect-once: dup = 0, loss = 0 in the file log) when a second consumer is
# started on what a running one uses (issue 11: a second instance on the same file sink,
# started and killed 15 times while the first ran, left 60,000 duplicate rows and exit 0).
# A workload (test/fixtures/lock_workload.sql) commits small insert/update/delete
# transactions, each change recorded in an audit table in the same transaction, while
# consumer A streams it into a file log. Fifteen (ROUNDS) times a second consumer is
# started and must refuse by itself, exit 1, and name A's pid:
#   - on A's state directory (with the stdout sink, or another log, which it must not
#     create),
#   - on A's spill directory (with a state directory and a log of its own), or
#   - on A's log (with a state directory of its own).
# The same for the mirror sink: while consumer M mirrors slot m into the destination, a
# second one on the same destination and slot (its own state directory) refuses, naming
# the destination session that holds the slot. A mirror killed with SIGKILL while its
# destination session waits on a lock takes the slot over from that session on restart.
# Then the workload stops, A is stopped with SIGTERM and a last run takes the log to the
# end; the checker (regress/check_file_log.py) compares the log with the audit table, and
# the mirror is compared with the source.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $rounds = $ENV{ROUNDS} || 15;
my $work   = rp_work();
my $LOG    = "$work/changes.jsonl";
my $STATE  = "$work/state";

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, rp_fixture('lock_workload.sql'));
rp_replicant_ok([ -d => $srcconn, -S => 'f', '--create-slot' ], 'slot f created');
rp_replicant_ok([ -d => $srcconn, -S => 'm', '--create-slot' ], 'slot m created');

my $runs = 0;
sub start_a
{
	$runs++;
	return rp_consumer("a-$runs", -d => $srcconn, -S => 'f', '--start', '-s', '1',
		'--sink', "file:$LOG", '--state-dir', $STATE);
}
sub log_size { return -e $LOG ? -s $LOG : 0; }
# the log's last line is a checkpoint line
sub ends_in_checkpoint
{
	return 0 unless -s $LOG;
	open(my $fh, '<', $LOG) or return 0;
	my $size = -s $fh;
	seek($fh, $size > 300 ? $size - 300 : 0, 0);
	local $/;
	my $tail = <$fh>;
	close $fh;
	my @lines = split /\n/, $tail;
	return @lines && $lines[-1] =~ /^\{"kind":"checkpoint"/;
}
# second(NAME, TEXT, ARG...): a second consumer must refuse by itself (exit 1) naming the
# holder (a run still going after the timeout did not refuse)
sub second
{
	my ($name, $text, @args) = @_;
	my $rc = rp_replicant("second-$name", -d => $srcconn, '--start', @args);
	my $err = slurp("$work/second-$name.err");
	is($rc, 1, "$name: the second consumer refuses (exit 1)") or diag($err);
	ok(index($err, $text) >= 0, "$name: its error says: $text") or diag($err);
}

my $worker = rp_psql_bg($src, 'worker', 'CALL workload()');
my $ca = start_a();
ok(rp_wait_until(\&ends_in_checkpoint, $ca), 'consumer A wrote a checkpoint line to the log');
my $m = rp_consumer('m', -d => $srcconn, -S => 'm', '--start', '-s', '1',
	'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m");
my $apid = $ca->pid;

for my $round (1 .. $rounds)
{
	my $size = log_size();
	if ($round % 4 == 1)
	{
		# whatever the sink: here one whose checkpoint is the state dir's file
		second("state-$round", "state directory \"$STATE\" is in use by another process (pid $apid)",
			-S => 'f', '-s', '1', '--sink', 'stdout', '--state-dir', $STATE);
		ok(!-e "$STATE/f.checkpoint", "round $round: the refused consumer wrote no checkpoint file");
	}
	elsif ($round % 4 == 3)
	{
		second("state-$round", "state directory \"$STATE\" is in use by another process (pid $apid)",
			-S => 'f', '-s', '1', '--sink', "file:$work/other-$round.jsonl", '--state-dir', $STATE);
		ok(!-e "$work/other-$round.jsonl", "round $round: the refused consumer did not create its log");
	}
	elsif ($round % 4 == 2)
	{
		# A's spill files (which a starting consumer deletes as garbage of its own)
		second("spill-$round", "spill directory \"$STATE/spill\" is in use by another process",
			-S => 'f', '-s', '1', '--sink', "file:$work/other-$round.jsonl",
			'--state-dir', "$work/state-$round", '--spill-dir', "$STATE/spill");
		ok(!-e "$work/other-$round.jsonl", "round $round: the refused consumer did not create its log");
	}
	else
	{
		second("log-$round", "file sink log \"$LOG\" is in use by another process (pid $apid)",
			-S => 'f', '-s', '1', '--sink', "file:$LOG", '--state-dir', "$work/state-$round");
		# it did not "recover" A's log either: a unit A has half written is still there
		ok(log_size() >= $size, "round $round: the refused consumer did not cut the log");
	}
	ok($ca->alive, "round $round: consumer A still runs");
	# A goes on writing (the refused one took nothing from it)
	ok(rp_wait_until(sub { log_size() > $size }, $ca), "round $round: the log grows on");
}

# the mirror: a second consumer of slot m on the same destination (another state dir)
ok(rp_wait_until(sub {
			rp_psql($dst, "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 't_a'") eq '1';
		}, $m),
	'the mirror created t_a in the destination') or diag(slurp("$work/m.err"));
second('mirror', 'the destination is in use by another consumer of slot "m" (destination session pid',
	-S => 'm', '-s', '1', '--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m2");
ok($m->alive, 'the mirror consumer still runs');

# A mirror killed with SIGKILL while its destination statement waits on a lock leaves that
# session behind, holding the slot lock: the restart must not refuse it as a second
# consumer. The lock on t_a is held until the restart owns the slot, so the dead one's
# statement cannot end by itself meanwhile.
my $locker = rp_psql_bg($dst, 'locker',
	'BEGIN; LOCK TABLE public.t_a IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600)');
my $orphan = '';
ok(rp_wait_until(sub {
			$orphan = rp_psql($dst, "SELECT pid FROM pg_catalog.pg_stat_activity WHERE application_name = 'replicant' AND wait_event_type = 'Lock'");
			$orphan ne '';
		}, $m),
	"the mirror's destination session waits on the lock on t_a");
ok($m->kill9_alive, 'the mirror consumer is killed (SIGKILL) while it runs');
$m = rp_consumer('m-restart', -d => $srcconn, -S => 'm', '--start', '-s', '1',
	'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m");
my $owner = '';
ok(rp_wait_until(sub {
			$owner = rp_psql($dst, "SELECT l.pid FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 1380994115 AND l.pid <> " . ($orphan || 0));
			$owner ne '';
		}, $m),
	"the mirror restarted after SIGKILL takes the slot over from its dead session")
  or diag(slurp("$work/m-restart.err"));
ok($m->alive, 'the restarted mirror runs (it did not refuse the dead one\'s slot lock)');
rp_psql($dst, "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()");
$locker->wait_exit;

# ---- the end: stop the workload and A, then one run takes the log to a fence after the last commit
rp_psql($src, 'UPDATE ctl SET stop = true');
is($worker->wait_exit, 0, 'the workload ends without an error') or diag(slurp("$work/worker.out"));
$ca->signal('TERM');
is($ca->wait_exit, 0, 'consumer A exits 0 after SIGTERM');
my $endpos = rp_fence($src, 'INSERT INTO fence (at) VALUES (now())');
rp_replicant_ok([ -d => $srcconn, -S => 'f', '--start', '-n', -E => $endpos,
		'--sink', "file:$LOG", '--state-dir', $STATE ], "the final run to $endpos exits 0");
rp_psql($src, "\\copy (SELECT txid, tbl, id, op, ver FROM audit ORDER BY seq) TO '$work/audit.tsv'");
is(rp_run('check', { stdout => "$work/check.out", stderr => "$work/check.out" },
		'python3', rp_root() . '/regress/check_file_log.py', $LOG, "$work/audit.tsv"),
	0, 'the log holds every committed change once, in commit order (dup = 0, loss = 0)')
  or diag(slurp("$work/check.out"));

# the mirror catches up to the same fence, then equals the source
$m->signal('TERM');
is($m->wait_exit, 0, 'the mirror consumer exits 0 after SIGTERM');
rp_replicant_ok([ -d => $srcconn, -S => 'm', '--start', '-n', -E => $endpos,
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m" ],
	"the final mirror run to $endpos exits 0");
rp_compare_tables($src, $dst, qw(t_a audit));

done_testing();
