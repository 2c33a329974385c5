# Copyright: see the project's LICENSE.

# The JetStream sink is effect-once across SIGKILL, with the duplicate window at its
# minimum (so correctness cannot rest on Nats-Msg-Id dedup); was regress/t/nats_kill9.sh.
#
# Proves G1 (dup = 0, loss = 0, commit order) and G2 (after every kill the slot's
# confirmed_flush_lsn is at or behind the end LSN of the stream's last complete
# transaction) for --sink nats:// on a 3-node cluster, the stream created with
# --nats-duplicate-window 0.1 (checked in the stream's config). A worker runs small mixed
# transactions over the hostile tables of regress/tools/nats_workload.sql while the
# consumer is killed with SIGKILL 22 times (ROUNDS): at random moments (50-800 ms) once
# the restarted run has published, right after the stream's tail is a transaction's last
# message (acked, perhaps not yet confirmed), and up to four times inside one 100,000-row
# transaction (the tail is a message of it, without Replicant-Last, further on than at the
# kill before: each restart resumes in the middle of the transaction, from the stream's
# tail). While it waits for those, the test runs the consumer in steps (SIGCONT, 5 ms,
# SIGSTOP, look at the tail), so a fast machine cannot publish the whole transaction
# between two looks. Every restart comes after the duplicate window passed since the
# kill. At the end regress/check_nats.py compares the whole stream with the audit and
# checks that the 100,000 rows are each in it once.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(sleep time);

my $ROUNDS = $ENV{ROUNDS} || 22;
my $BULK   = 100000;
my $SLOT   = 'nats_kill9';
my $STREAM = 'K9_STREAM';
my $PREFIX = 'k9';
my $work   = rp_work();

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
RpTest::Nats::load_workload($src, $SLOT);
rp_psql($src, 'UPDATE wl_conf SET pace = 0.02');    # a smaller stream to read back
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
		'--sink', $nats->sink_url, '--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX,
		'--nats-duplicate-window', '0.1', '--state-dir', "$work/state", '--max-memory', '16MB');
}
sub err_tail
{
	my $f = "$work/consumer-$runs.err";
	my @l = -e $f ? split(/\n/, slurp($f)) : ();
	return join("\n", @l > 10 ? @l[-10 .. -1] : @l);
}
# the stream's tail as nats_dump reads it ({} when it cannot tell), and a field of it as
# RpTest::Nats::tail_field reads one
sub tail { return $nats->tail($STREAM) // {}; }
sub tf
{
	my ($t, $f) = @_;
	return $t->{$f} // '' if $f eq 'last_complete_end';
	return ($t->{msg} // $t)->{seq} // 0 if $f eq 'seq';
	return (($t->{msg} // {})->{headers} // {})->{$f} // '';
}

# until the stream's last sequence passed SEQ (this run published something)
sub wait_published
{
	my ($seq) = @_;
	return rp_wait_until(sub { tf(tail(), 'seq') > $seq }, $consumer);
}

# until the tail is inside the bulk transaction, past index IDX: (1, index), the consumer
# left stopped (SIGSTOP: the caller kills it). The consumer runs 5 ms at a time between
# looks at the tail, so however fast the machine, it cannot get through the rest of the
# transaction unseen. (2) when the stream is already past the bulk transaction (its
# INSERT committed before the LSN in bulk.lsn was read, and the tail is a later
# transaction); (0) when the consumer exited or the time ran out.
my $bulk;    # the psql of the bulk INSERT
my $bulk_lsn = '';
sub bulk_lsn
{
	return $bulk_lsn if $bulk_lsn ne '';
	return '' unless $bulk && !$bulk->alive && $bulk->status == 0;
	(my $l = slurp("$work/bulk.lsn")) =~ s/\s+//g;
	return $bulk_lsn = $l;
}
sub wait_inside_bulk
{
	my ($after) = @_;
	my @r = (0);
	rp_poll(0.005,
		sub {
			$consumer->signal('STOP');
			my $t = tail();
			if (tf($t, 'Replicant-Table') eq 'public.bulk' && tf($t, 'Replicant-Last') eq '')
			{
				my $idx = tf($t, 'Replicant-Index');
				if ($idx > $after)
				{
					@r = (1, $idx);
					return 1;
				}
			}
			elsif (bulk_lsn() ne '' && tf($t, 'Replicant-Lsn') ne ''
				&& rp_lsn_cmp(tf($t, 'Replicant-Lsn'), bulk_lsn()) > 0
				&& tf($t, 'Replicant-Table') ne 'public.bulk')
			{
				$consumer->signal('CONT');
				@r = (2);
				return 1;
			}
			$consumer->signal('CONT');
			return 0;
		},
		$consumer);
	$consumer->signal('CONT') if $r[0] == 0 && $consumer->alive;
	return @r;
}

# until the tail is a transaction's last message newer than sequence SEQ
sub wait_last
{
	my ($seq) = @_;
	return rp_poll(0.01,
		sub { my $t = tail(); tf($t, 'seq') > $seq && tf($t, 'Replicant-Last') eq 'true' },
		$consumer);
}

start_consumer();
my $worker = rp_psql_bg($src, 'worker1', 'CALL workload(1, false, 0)');
my ($seq_at_kill, $inside, $after_last, $bulk_done, $bulk_idx) = (0, 0, 0, 0, -1);
for my $round (1 .. $ROUNDS)
{
	my $how = '';
	if ($round == 3)
	{
		# two -c, two transactions: the LSN is read after the INSERT committed. (Read in
		# the same transaction, before its commit, a workload transaction that committed
		# between the two, and so was published before the bulk one, looked like "past
		# the bulk transaction": no kill landed inside it, 0 of the 3 needed, once in
		# four full runs.)
		$bulk = RpTest::Proc->start(name => 'bulk',
			cmd => [ $src->installed_command('psql'), '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
				'-d', $srcconn, '-c', "INSERT INTO bulk SELECT g, md5(g::text) FROM generate_series(1, $BULK) g",
				'-c', 'SELECT pg_current_wal_lsn()' ],
			stdout => "$work/bulk.lsn", stderr => "$work/bulk.err");
	}
	if ($round >= 3 && $round <= 6 && !$bulk_done)
	{
		my ($r, $idx) = wait_inside_bulk($bulk_idx);
		if ($r == 1)
		{
			$bulk_idx = $idx;
			$inside++;
			$how = "inside the $BULK-row transaction at index $idx";
		}
		elsif ($r == 2)
		{
			$bulk_done = 1;
		}
	}
	if ($how eq '')
	{
		ok(wait_published($seq_at_kill), "round $round: consumer run $runs published past sequence $seq_at_kill")
		  or diag(err_tail());
		if ($round % 3 == 0)
		{
			# (not seen before the time ran out: killed anyway, as the script did after 60 s)
			if (wait_last($seq_at_kill)) { $after_last++; $how = 'right after a last message'; }
			else { $how = 'timeout'; }
		}
		else
		{
			my $ms = 50 + int(rand(751));
			sleep($ms / 1000);
			$how = "after ${ms}ms";
		}
	}
	ok($consumer->kill9_alive, "round $round: consumer run $runs killed while it ran ($how)")
	  or diag('it exited by itself with status ' . $consumer->status . ":\n" . err_tail());
	my $killed_at = time();
	my $confirmed = rp_slot_confirmed($src, $SLOT);
	my $t = tail();
	$seq_at_kill = tf($t, 'seq') || 0;
	my $end = tf($t, 'last_complete_end') || '0/0';
	ok(rp_lsn_cmp($confirmed, $end) <= 0,
		"round $round: the slot confirmed $confirmed, at or behind the stream's last complete transaction (end $end)");
	note(sprintf('round %2d: killed %s; stream seq %s, last complete end %s, slot confirmed %s',
			$round, $how, $seq_at_kill, $end, $confirmed));
	ok($worker->alive, "round $round: the workload worker still runs")
	  or diag(slurp("$work/worker1.out"));
	# the restart comes after the duplicate window (0.1 s) passed since the kill
	my $left = 0.3 - (time() - $killed_at);
	sleep($left) if $left > 0;
	start_consumer();
}
cmp_ok($inside, '>=', 3, "$inside kills landed inside the $BULK-row transaction (need 3)");
cmp_ok($after_last, '>', 0, "$after_last kills landed right after a transaction's last message");

rp_psql($src, 'UPDATE ctl SET stop = true');
is($worker->wait_exit, 0, 'the workload worker ends without an error') or diag(slurp("$work/worker1.out"));
ok($bulk && ($bulk->wait_exit // -1) == 0, "the $BULK-row INSERT committed")
  or diag(slurp("$work/bulk.err"));
my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_confirmed($src, $SLOT, $fence, $consumer), "the last run confirmed the fence $fence")
  or diag(err_tail());
$consumer->signal('TERM');
is($consumer->wait_exit, 0, 'the last consumer run, stopped by SIGTERM, exits 0') or diag(err_tail());

my $info = $nats->tool($STREAM, 'info');
like($info, qr/"duplicates_ns":100000000,/, "the stream's duplicate window is 0.1 s");
my ($rc, $out) = $nats->check($src, $SLOT, $STREAM, $PREFIX, args => [ '--range-table', "bulk=1:$BULK" ]);
is($rc, 0, "the stream holds every committed change once, in commit order, and the $BULK bulk rows once (check_nats.py)")
  or diag($out);
note($out);

done_testing();
