# Copyright: see the project's LICENSE.

# Replaying a range the destination already holds changes nothing there; was
# regress/t/mirror_replay.sh.
#
# Proves G1 (effect-once) for the mirror sink's replay protection, at both layers that
# provide it, with a workload whose replay would show (test/fixtures/replay_workload.sql):
# inserts of duplicate rows into a table without a key (REPLICA IDENTITY FULL: a replayed
# insert adds a row), and a --history table (a replayed transaction would open versions
# again).
#
# A logical slot cannot be rewound, and a copy that confirmed a position cannot go back
# either, so the replays use fresh copies: pg_copy_logical_replication_slot() makes s2..s5
# from s1 before any workload, so all five hold the same range from the same start. The
# destination keeps one replicant.checkpoint row per (system id, slot); a replay is made by
# giving a copy's row the position another slot reached, then streaming the copy from its
# start. Phase 1 of the workload runs; s1 streams it into the destination (to -E END1) and
# the destination's tables are fingerprinted.
#   (a) The sink's own check (each batch reads its checkpoint row FOR UPDATE and skips the
#       source transactions at or below it), through s2 with a fresh state dir: a session
#       inserts s2's row (a copy of s1's) and holds it uncommitted, with the table locked,
#       while the consumer starts. The consumer reads no checkpoint at startup, so its
#       assembler drops nothing and the server sends the whole range from s2's start; its
#       first batch waits on the lock; the session commits; every batch must find the row
#       and skip every transaction. To END1: the fingerprint is unchanged, s2's commit_lsn
#       is s1's, and the server did send the transactions (pg_stat_replication_slots).
#   (b) The consumer's restart dedup (the assembler drops transactions at or below the
#       checkpoint it read at startup): s3 gets a committed copy of s1's row and streams
#       with -I set to its start, so the server sends the whole range again: unchanged.
#   (c) Phase 2 runs; s4 streams from its start to END2 as in (a) with s1's row: phase 1 is
#       skipped by the sink (the batch holding END1 is part skipped, part applied) and
#       phase 2 is applied once: the destination equals the source, one open history
#       version per live key with the source's values.
#   (d) s5 replays phases 1 and 2 (-I its start) with a committed copy of s4's row: the
#       fingerprint is unchanged.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use IPC::Run ();

my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, rp_fixture('replay_workload.sql'));
rp_replicant_ok([ -d => $srcconn, -S => 's1', '--create-slot' ], 'slot s1 created');
# copies: a slot can be replayed once (its confirmed position only moves forward)
rp_psql($src, "SELECT pg_copy_logical_replication_slot('s1', '$_')") for qw(s2 s3 s4 s5);
my $start_lsn = rp_slot_confirmed($src, 's3');

sub fence { return rp_fence($src, 'INSERT INTO fence DEFAULT VALUES'); }

my $runs = 0;
sub consumer_args
{
	my ($slot) = @_;
	return ('-v', -d => $srcconn, -S => $slot, '--start', '-n', '--sink', "postgres:$dstconn",
		'--create-tables', '--history', 'public.hist_t', '--state-dir', "$work/state-$slot",
		'--batch-txns', '25');
}
# consumer(SLOT, EXPECTED_STATUS, ARG...): one run to its end
sub consumer
{
	my ($slot, $expect, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", consumer_args($slot), @args);
	is($rc, $expect, "run $runs (slot $slot @args) exits $expect")
	  or diag(slurp("$work/run-$runs.err"));
}
# the destination's tables and checkpoint rows, as one line
sub fingerprint
{
	return rp_psql($dst, q{SELECT md5(string_agg(f, ' ' ORDER BY f)) FROM (
	  SELECT 'items ' || count(*) || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE "C"), '')) FROM public.items x
	  UNION ALL SELECT 'dup_t ' || count(*) || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE "C"), '')) FROM public.dup_t x
	  UNION ALL SELECT 'hist_t ' || count(*) || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE "C"), '')) FROM public.hist_t x) s(f)});
}
# a checkpoint row without end_lsn (an idle keepalive may move end_lsn past the last commit)
sub ckrow
{
	my ($slot) = @_;
	return rp_psql($dst, "SELECT system_id, timeline, commit_lsn FROM replicant.checkpoint WHERE slot = '$slot'");
}
sub sent_txns
{
	my ($slot) = @_;
	my $n = rp_psql($src, "SELECT coalesce(total_txns, 0) FROM pg_stat_replication_slots WHERE slot_name = '$slot'");
	return $n eq '' ? 0 : $n;
}
# same_as_source(WHAT): items and dup_t equal the source; hist_t's open versions are the
# source's rows, one per key
sub same_as_source
{
	my ($what) = @_;
	for my $t (qw(items dup_t))
	{
		my $q = "SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text COLLATE \"C\"), '')) FROM public.$t x";
		is(rp_psql($dst, $q), rp_psql($src, $q), "$what: $t equals the source");
	}
	is(rp_psql($dst, "SELECT count(*) || ' ' || md5(coalesce(string_agg((id, v, big)::text, ',' ORDER BY id), '')) FROM hist_t WHERE valid_to_lsn IS NULL"),
		rp_psql($src, "SELECT count(*) || ' ' || md5(coalesce(string_agg((id, v, big)::text, ',' ORDER BY id), '')) FROM hist_t"),
		"$what: the open versions of hist_t are the source's rows");
	is(rp_psql($dst, 'SELECT count(*) FROM (SELECT id FROM hist_t WHERE valid_to_lsn IS NULL GROUP BY id HAVING count(*) > 1) s'),
		'0', "$what: no key of hist_t has more than one open version");
}

# ---- phase 1, streamed once through s1
rp_psql($src, 'CALL work(1, 300)');
my $end1 = fence();
consumer('s1', 0, '-E', $end1);
same_as_source('s1 to END1');
my $fp1 = fingerprint();
my $ck1 = ckrow('s1');
my $versions = rp_psql($dst, 'SELECT count(*) FROM hist_t');
my $dups = rp_psql($dst, 'SELECT count(*) - count(DISTINCT (a, b)) FROM dup_t');
cmp_ok($dups, '>', 0, "dup_t has duplicate rows ($dups): a replayed insert would show");

# locked_replay(WHAT, SLOT, FROM_SLOT, ENDPOS): stream SLOT (from its start) to ENDPOS while
# a session inserts SLOT's checkpoint row as a copy of FROM_SLOT's and holds it
# uncommitted, with the table locked, until the consumer has started and its first batch
# waits on the lock. Returns the slot's total_txns before the run.
sub locked_replay
{
	my ($what, $slot, $from, $endpos) = @_;
	my $sent_before = sent_txns($slot);
	my ($in, $out) = ('', '');
	my $locker = IPC::Run::start(
		[ $dst->installed_command('psql'), '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $dstconn ],
		'<', \$in, '>', \$out, '2>&1', IPC::Run::timeout(rp_timeout()));
	$in .= "BEGIN;\n"
	  . "INSERT INTO replicant.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn)
		   SELECT system_id, '$slot', timeline, commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = '$from';\n"
	  . "LOCK TABLE replicant.checkpoint IN SHARE ROW EXCLUSIVE MODE;\n";
	$locker->pump_nb;
	ok(rp_wait_until(sub {
				$locker->pump_nb;
				rp_psql($dst, "SELECT count(*) FROM pg_locks WHERE relation = 'replicant.checkpoint'::regclass
				               AND mode = 'ShareRowExclusiveLock' AND granted") eq '1';
			}),
		"$what: the locking session holds the checkpoint table locked") or diag($out);
	$runs++;
	my $run = $runs;
	my $c = rp_consumer("run-$run", consumer_args($slot), '-E', $endpos);
	ok(rp_wait_until(sub {
				$locker->pump_nb;
				rp_psql($dst, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant'
				               AND wait_event_type = 'Lock'") eq '1';
			}, $c),
		"$what: the consumer on $slot waits on the checkpoint lock") or diag(slurp("$work/run-$run.err"));
	is(ckrow($slot), '', "$what: the $slot row is not visible before the locking session commits");
	$in .= "COMMIT;\n";
	my $finished = eval { $locker->finish };
	ok($finished && $locker->result == 0, "$what: the locking session commits") or diag($out);
	is($c->wait_exit, 0, "$what: the consumer on $slot exits 0") or diag(slurp("$work/run-$run.err"));
	return $sent_before;
}

# ---- (a) s2 from its start: the server resends, the sink must skip every transaction
my $sent_before = locked_replay('(a)', 's2', 's1', $end1);
is(fingerprint(), $fp1, '(a) replaying through s2 leaves the destination unchanged');
is(ckrow('s1'), $ck1, "(a) the s1 checkpoint row's commit_lsn is unchanged");
is(ckrow('s2'), $ck1, "(a) the s2 checkpoint row is s1's ($ck1)");
my $sent_b = sent_txns('s2') - $sent_before;
cmp_ok($sent_b, '>=', 300, "(a) the server sent the 300 transactions again through s2 ($sent_b)");

# ---- (b) s3 from its start (-I), after a committed copy of the checkpoint row
rp_psql($dst, "INSERT INTO replicant.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn)
                SELECT system_id, 's3', timeline, commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = 's1'");
consumer('s3', 0, '-I', $start_lsn, '-E', $end1);
is(fingerprint(), $fp1, '(b) replaying through s3 leaves the destination unchanged');
# (C may go on past END1 by an empty transaction, ending at the next boundary it delivers)
is(rp_psql($dst, "SELECT c.system_id = o.system_id AND c.commit_lsn >= o.commit_lsn FROM replicant.checkpoint c, replicant.checkpoint o
                       WHERE c.slot = 's3' AND o.slot = 's1'"),
	't', '(b) the s3 checkpoint row has s1\'s system id and a commit_lsn at or past s1\'s')
  or diag('s3: ' . ckrow('s3') . "; s1: $ck1");
my $sent_c = sent_txns('s3');
cmp_ok($sent_c, '>=', 300, "(b) the server sent the 300 transactions again through s3 ($sent_c)");

# ---- (c) phase 2, and s4 from its start, the sink skipping phase 1 (this time the
# batch that holds END1 is part skipped, part applied) and applying phase 2
rp_psql($src, 'CALL work(301, 200)');
my $end2 = fence();
$sent_before = locked_replay('(c)', 's4', 's1', $end2);
same_as_source('(c) s4 to END2');
my $fp2 = fingerprint();
my $sent_c2 = sent_txns('s4') - $sent_before;
cmp_ok($sent_c2, '>=', 500, "(c) the server sent the 500 transactions through s4 ($sent_c2)");

# ---- (d) s5 replays phases 1 and 2 from its start (-I) with s4's checkpoint: unchanged
rp_psql($dst, "INSERT INTO replicant.checkpoint (system_id, slot, timeline, commit_lsn, end_lsn)
                SELECT system_id, 's5', timeline, commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = 's4'");
consumer('s5', 0, '-I', $start_lsn, '-E', $end2);
is(fingerprint(), $fp2, '(d) replaying phases 1 and 2 through s5 leaves the destination unchanged');
my $sent_d = sent_txns('s5');
cmp_ok($sent_d, '>=', 500, "(d) the server sent the 500 transactions again through s5 ($sent_d)");
same_as_source('(d) the end');
my $versions2 = rp_psql($dst, 'SELECT count(*) FROM hist_t');
note("$runs runs; hist_t versions $versions then $versions2; $dups duplicate rows in dup_t");

done_testing();
