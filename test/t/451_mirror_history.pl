# Copyright: see the project's LICENSE.

# A --history table holds exactly one version per key and committed source transaction,
# with validity intervals that chain; was regress/t/mirror_history.sh.
#
# Proves G1 (effect-once) for --history tables, across SIGKILLs of the consumer, version by
# version: no version lost, none doubled, none with wrong values.
#
# The source table hist (id PRIMARY KEY, a, b, big; big is out-of-line TOAST) gets many
# small transactions from one session (so commit order is the order they ran;
# test/fixtures/history_workload.sql): inserts, updates of small columns (big is then
# unchanged TOAST and must be carried over from the previous version), updates of big, key
# changes (with and without other changes: the new key's version takes big from the old
# key's version), deletes, delete-then-reinsert and insert-then-update inside one
# transaction, repeated updates of a key in one transaction, and rolled-back transactions.
# An audit trigger records, in the same transaction, every row change: txid, order,
# operation, old and new key, the new row (big as its md5). The consumer (--history
# public.hist, --create-tables, small batches) streams while the workload (TXNS
# transactions) runs and is killed KILLS (6) times at random moments; then it runs to -E
# past the last commit. test/fixtures/check_history.py recomputes the versions from the
# audit and compares them with the destination's hist:
#   - per key, the same number of versions with the same values, in valid_from_lsn order;
#   - every version opened by transaction i has the same valid_from_lsn L(i) and
#     valid_from_time T(i); every version it closed has valid_to_lsn L(i), valid_to_time
#     T(i); L strictly increases and T never decreases with i (so a closed version's
#     valid_to_lsn is the next version's valid_from_lsn, or the deleting commit's LSN);
#   - exactly one open version (valid_to_lsn NULL) per live key, none for deleted keys.
# Some transactions hold a barrier between changes of the same keys (a TRUNCATE of another
# table; a change of another table whose description changed since, ADD COLUMN): the part
# before it is applied first, and the versions must come out as if there were none.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(sleep);

my $TXNS  = $ENV{TXNS}  || 600;
my $KILLS = $ENV{KILLS} || 6;
my $SLOT  = 'hist';
my $work  = rp_work();
my $src   = rp_cluster('src');
my $dst   = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, rp_fixture('history_workload.sql'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
		'--sink', "postgres:$dstconn", '--create-tables', '--history', 'public.hist',
		'--state-dir', "$work/state", '--batch-txns', '10', '--batch-ms', '50', @_);
}

my $workload = rp_psql_bg($src, 'workload', "CALL workload($TXNS)");
start_consumer();
for my $k (1 .. $KILLS)
{
	my $ms = 300 + int(rand(1200));
	sleep($ms / 1000);
	ok($consumer->kill9_alive, "kill $k: the consumer (run $runs) is killed with SIGKILL while it runs")
	  or diag("it exited by itself (status " . $consumer->status . "): " . slurp("$work/consumer-$runs.err"));
	my $ck = rp_dst_checkpoint($dst, $SLOT);
	if ($ck ne '')
	{
		ok(!rp_lsn_lt($ck, rp_slot_confirmed($src, $SLOT)),
			"kill $k: the slot is not confirmed past the destination checkpoint $ck");
	}
	note("kill $k after ${ms}ms; destination checkpoint " . ($ck || 'none'));
	start_consumer();
}
is($workload->wait_exit, 0, 'the workload ends with exit 0') or diag(slurp("$work/workload.out"));
unlike(slurp("$work/workload.out"), qr/ERROR:/, 'the workload ran without an error');
ok($consumer->kill9_alive, "the last run (run $runs) still runs (killed)")
  or diag(slurp("$work/consumer-$runs.err"));
my $endpos = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
start_consumer('-E', $endpos, '-n');
is($consumer->wait_exit, 0, "the final run to $endpos exits 0") or diag(slurp("$work/consumer-$runs.err"));

# copy(NODE, QUERY, FILE): COPY's text output of QUERY into FILE
sub copy
{
	my ($node, $q, $file) = @_;
	my $text = rp_psql($node, "COPY ($q) TO STDOUT");
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $text, ($text eq '' ? '' : "\n");
	close $fh;
}
copy($src, 'SELECT seq, txid, op, old_id, new_id, a, b, big_md5 FROM audit ORDER BY seq', "$work/audit.tsv");
copy($dst, 'SELECT id, a, b, md5(big), valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn',
	"$work/hist.tsv");
copy($src, 'SELECT id, a, b, md5(big) FROM hist ORDER BY id', "$work/live.tsv");

my $rc = rp_run('check_history', { stdout => "$work/check_history.out" },
	'python3', "$FindBin::RealBin/../fixtures/check_history.py", "$work/audit.tsv", "$work/hist.tsv", "$work/live.tsv");
my $report = slurp("$work/check_history.out");
is($rc, 0, "the history table matches the source's transactions: every version, chained intervals, "
	  . 'one open version per live key (check_history.py)')
  or diag($report . slurp("$work/check_history.err"));
note($report);
note("$runs consumer runs ($KILLS SIGKILLs)");

done_testing();
