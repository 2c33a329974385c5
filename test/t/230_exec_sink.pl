# Copyright: see the project's LICENSE.

# The exec sink's child protocol, and at-least-once across SIGKILL; was regress/t/exec_sink.sh.
#
# Proves the exec sink's side of G1 ("sinks that cannot share a transaction with their
# checkpoint are at-least-once") and G2 (the checkpoint advances only after the child's
# "ack N"): the child regress/ack_child.py appends every JSON line it reads to a file and
# answers {"kind":"flush","seq":N,...} with "ack N" once the file is fsynced.
#   1. A clean run to -E: the child's file holds every committed change exactly once.
#   2. A workload (test/fixtures/exec_workload.sql) keeps committing while the consumer is
#      killed with SIGKILL KILLS (5) times at random moments and restarted (same state dir,
#      same child file); then a run to -E. The file holds every committed change (loss = 0);
#      each kill replays at most one unit (--batch-txns 4 transactions), so duplicates are
#      bounded by one unit per kill (test/fixtures/check_exec_log.py, the script's checker).
#   3. A slow child (it holds its first ack for 5 s, and until the test has read the slot
#      and the checkpoint) on a server with wal_sender_timeout = 2s: status updates keep
#      flowing while the consumer waits (no replication timeout, no reconnect), and nothing
#      of the unit is acknowledged or checkpointed before the ack (G2).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep);

my $KILLS      = $ENV{KILLS} || 5;
my $BATCH_TXNS = 4;
my $work  = rp_work();
my $OUT   = "$work/child.jsonl";
my $STATE = "$work/state";
my $child = 'python3 ' . rp_root() . '/regress/ack_child.py';
my $check = "$FindBin::RealBin/../fixtures/check_exec_log.py";

my $src = rp_cluster('src', "wal_sender_timeout = '2s'");
my $srcconn = rp_conninfo($src);
rp_psql($src, rp_fixture('exec_workload.sql'));
rp_replicant_ok([ -d => $srcconn, -S => 'ex', '--create-slot' ], 'slot ex created');

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => 'ex', '--start', '-s', '1',
		'--sink', "exec:$child $OUT", '--state-dir', $STATE, '--batch-txns', $BATCH_TXNS,
		'--batch-ms', '50', @_);
}

# fence(): an endpos past every committed workload transaction: a fence transaction ends
# after it, its LSN read after its commit
sub fence { return rp_fence($src, 'INSERT INTO fence VALUES (now())'); }

# finish(WHAT): the run to -E exits 0
sub finish
{
	my ($what) = @_;
	is($consumer->wait_exit, 0, "$what: consumer run $runs exits 0")
	  or diag(slurp("$work/consumer-$runs.err"));
}

# check(MODE, NAME): the child's file against table e (check_exec_log.py; MODE exact: no
# duplicate allowed; kills: at most one unit replayed per kill)
sub check
{
	my ($mode, $name) = @_;
	my $rows = rp_psql($src, 'COPY (SELECT id, txid FROM e) TO STDOUT');
	open(my $fh, '>', "$work/expected.tsv") or die "$work/expected.tsv: $!";
	print $fh $rows, ($rows eq '' ? '' : "\n");
	close $fh;
	my $rc = rp_run("check-$mode", { stdout => "$work/check-$mode.out" },
		'python3', $check, $OUT, "$work/expected.tsv", $mode, $BATCH_TXNS, $KILLS);
	my $report = slurp("$work/check-$mode.out");
	is($rc, 0, $name) or diag($report . slurp("$work/check-$mode.err"));
	note($report);
}

# ---- 1. a clean run: every change exactly once
rp_psql($src, 'CALL workload(1, 200)');
start_consumer('-n', '-E', fence());
finish('clean run to the fence');
check('exact', "the clean run's child file holds every committed change exactly once "
	  . '(no loss, no phantom, no duplicate)');
ok(-e "$STATE/ex.checkpoint", 'the library wrote its checkpoint file in the clean run');
my $clean_lines = () = slurp($OUT) =~ /\n/g;

# ---- 2. SIGKILL rounds while the workload commits
my $worker = rp_psql_bg($src, 'worker', 'CALL workload(1000000, 100000)');
for my $round (1 .. $KILLS)
{
	start_consumer();
	my $ms = 300 + int(rand(1200));
	sleep($ms / 1000);
	ok($consumer->kill9_alive, "round $round: consumer run $runs killed with SIGKILL while it runs")
	  or diag('it ended by itself (status ' . $consumer->status . '): ' . slurp("$work/consumer-$runs.err"));
	my $lines = () = slurp($OUT) =~ /\n/g;
	note("round $round: killed after ${ms}ms; child file $lines lines");
}
rp_psql($src, 'UPDATE ctl SET stop = true');
is($worker->wait_exit, 0, 'the workload ends with exit 0 once told to stop')
  or diag(slurp("$work/worker.out"));
start_consumer('-n', '-E', fence());
finish("run to the fence after $KILLS kills");
check('kills', "after $KILLS SIGKILLs the child file holds every committed change (no loss, no phantom), "
	  . "at most one replay per kill, each within one unit ($BATCH_TXNS transactions)");

# ---- 3. a slow child: the consumer keeps the connection alive while it waits
rp_replicant_ok([ -d => $srcconn, -S => 'slow', '--create-slot' ], 'slot slow created');
rp_psql($src, 'UPDATE ctl SET stop = false');
rp_psql($src, 'CALL workload(5000000, 3)');
my $endpos = fence();
my $slow = "$work/slow.jsonl";
my $gate = "$work/slow.gate";
$runs++;
$consumer = rp_consumer("consumer-$runs",
	{ env => { CHILD_FIRST_ACK_DELAY => 5, CHILD_FIRST_ACK_GATE => $gate } },
	-d => $srcconn, -S => 'slow', '--start', '-n', '-E', $endpos, '-s', '1',
	'--sink', "exec:$child $slow", '--state-dir', "$work/state-slow", '--batch-txns', '1000');
# the child writes the unit's rows out when the flush line comes, then holds its ack (5 s,
# and until the gate exists): what the slot and the checkpoint hold now is before the ack
my $rows_in = sub { return -e $slow ? scalar(() = slurp($slow) =~ /"table":"e"/g) : 0; };
ok(rp_wait_until(sub { $rows_in->() >= 3 }, $consumer),
	'the slow child received the unit (it now holds its ack)')
  or diag(slurp("$work/consumer-$runs.err"));
my $flush_held = rp_slot_confirmed($src, 'slow');
my $ckpt_held  = "$work/slow.checkpoint-held";
{
	my $f = "$work/state-slow/slow.checkpoint";
	open(my $fh, '>', $ckpt_held) or die "$ckpt_held: $!";
	print $fh slurp($f) if -e $f;
	close $fh;
}
open(my $gh, '>', $gate) or die "$gate: $!";
close $gh;
finish('the slow child\'s run to the fence');
# nothing of the unit then: nothing at or past its first commit, as the child read it
my @commits = map { (decode_json($_)->{commit_lsn}) // () } grep { /"commit_lsn"/ } split /\n/, slurp($slow);
my ($first) = sort { rp_lsn_cmp($a, $b) } @commits;
my $bound = '0/0';
if (defined $first && $first =~ m{^([0-9A-Fa-f]+)/([0-9A-Fa-f]+)$})
{
	my $v = hex($1) * 4294967296 + hex($2) + 1;
	$bound = sprintf('%X/%X', int($v / 4294967296), $v % 4294967296);
}
is(rp_unacked($src, 'slow', $ckpt_held, $bound, $flush_held), '',
	"before the slow child acknowledged, nothing of the unit (first commit $first) was confirmed "
	  . "(slot at $flush_held) or checkpointed");
ok(-s "$work/state-slow/slow.checkpoint", 'a checkpoint once the slow child acknowledged');
unlike(slurp($src->logfile), qr/replication timeout/,
	'the walsender did not time out (wal_sender_timeout 2s) while the consumer waited for the child');
unlike(slurp("$work/consumer-$runs.err"), qr/reconnecting/,
	'the consumer did not reconnect while it waited for the child');
cmp_ok($rows_in->(), '>=', 3, 'the slow child received the rows');

note("clean run exactly once ($clean_lines lines); $KILLS SIGKILLs");
done_testing();
