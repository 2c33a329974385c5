# Copyright: see the project's LICENSE.

# Idle WAL and the source's fast shutdown, for the append logs whose checkpoint is the
# library's file (stdout, exec); was regress/t/idle_shutdown.sh.
#
# For each of the two sinks, with a consumer connected the whole time:
#   1. a transaction of 100 rows, confirmed;
#   2. a CHECKPOINT: WAL that decodes to no transaction. The slot must confirm it (the
#      library's checkpoint file records the idle position): before the fix such a log never
#      moved on idle, so a quiet database kept all WAL after its last transaction;
#   3. a fast shutdown of the source must end: its walsender waits until the client
#      confirms everything it sent, the shutdown checkpoint included, and a consumer that
#      never confirmed past its last transaction held it there for good ("server does not
#      shut down", measured with the stdout sink);
#   4. the source restarted, the consumer killed with SIGKILL while idle and started again
#      on the same state (its checkpoint is now an idle position past the last commit), a
#      second transaction of 100 rows: the output holds rows 1..200 exactly once each
#      (dup = 0, loss = 0: nothing was in flight at either interruption).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP;

my $work = rp_work();
my $src  = rp_cluster('src');
my $srcconn = rp_conninfo($src);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, sink text NOT NULL)');

# txn(FIRST, SINK): 100 rows in one transaction; the LSN read inside it (a fence the
# transaction's end passes, and no later WAL of anyone else's)
sub txn
{
	my ($first, $sink) = @_;
	my $out = rp_psql($src, "BEGIN;
		INSERT INTO t SELECT g, '$sink' FROM generate_series($first, $first + 99) g;
		SELECT pg_current_wal_insert_lsn();
		COMMIT;");
	my ($lsn) = grep { m{/} } split /\n/, $out;
	return $lsn;
}

for my $sink (qw(stdout exec))
{
	my $slot = "idle_$sink";
	my $out  = "$work/$sink.jsonl";
	my @args = $sink eq 'stdout'
	  ? ('--sink', 'stdout')
	  : ('--sink', 'exec:python3 ' . rp_root() . "/regress/ack_child.py $out");
	my $n = 0;
	my $start = sub {
		$n++;
		return rp_consumer("$slot-$n", ($sink eq 'stdout' ? { stdout => $out, append => 1 } : ()),
			-d => $srcconn, -S => $slot, '--start', '-s', '1', '--state-dir', "$work/state-$sink",
			'--batch-ms', '50', @args);
	};
	my $confirmed = sub {
		my ($c, $lsn, $what) = @_;
		ok(rp_wait_confirmed($src, $slot, $lsn, $c), "$sink: the slot confirms $what ($lsn)")
		  or diag('the slot is at ' . rp_slot_confirmed($src, $slot) . ', consumer '
			  . ($c->alive ? 'running' : 'exited ' . $c->status) . ': ' . slurp("$work/$slot-$n.err"));
	};

	rp_replicant_ok([ -d => $srcconn, -S => $slot, '--create-slot' ], "$sink: slot $slot created");
	open(my $fh, '>', $out) or die "$out: $!";
	close $fh;
	my $c = $start->();
	$confirmed->($c, txn(1, $sink), 'the first transaction');

	rp_psql($src, 'CHECKPOINT');
	my $idle = rp_psql($src, 'SELECT pg_current_wal_lsn()');
	$confirmed->($c, $idle, 'the idle position after a CHECKPOINT');

	# the script gave pg_ctl 60 s; the bug held the shutdown for good, so the one timeout
	# (RP_TEST_TIMEOUT) tells the two apart as well
	my $stopped;
	{
		local $ENV{PGCTLTIMEOUT} = rp_timeout();
		$stopped = $src->stop('fast', fail_ok => 1);
	}
	ok($stopped, "$sink: a fast shutdown of the source with the consumer connected ends");
	if (!$stopped)
	{
		$c->kill9_alive;    # lets the walsender, and so the server, go
		$src->stop('fast', fail_ok => 1);
	}
	$src->start;

	# the checkpoint file now holds an idle position past the last commit: a restart from it
	ok($c->kill9_alive, "$sink: the consumer, idle, killed with SIGKILL while running")
	  or diag("exited " . $c->status . ': ' . slurp("$work/$slot-$n.err"));
	$c = $start->();
	$confirmed->($c, txn(101, $sink), 'the second transaction');
	$c->signal('TERM');
	is($c->wait_exit, 0, "$sink: the consumer stopped by SIGTERM exits 0")
	  or diag(slurp("$work/$slot-$n.err"));

	# rows 1..200 exactly once each, all of this sink
	my (%seen, @other);
	for my $line (split /\n/, slurp($out))
	{
		my $rec = decode_json($line);
		next unless ($rec->{table} // '') eq 't' && ($rec->{kind} // '') eq 'insert';
		push @other, $rec->{new}{sink} if $rec->{new}{sink} ne $sink;
		$seen{ $rec->{new}{id} }++;
	}
	my @loss = grep { !$seen{$_} } 1 .. 200;
	my $dup = 0;
	$dup += $_ - 1 for grep { $_ > 1 } values %seen;
	my @phantom = grep { $_ < 1 || $_ > 200 } keys %seen;
	is(scalar @loss, 0, "$sink: no row lost (loss = " . scalar(@loss) . ')');
	is($dup, 0, "$sink: no row repeated (dup = $dup)");
	is(scalar @phantom, 0, "$sink: no row outside 1..200 (phantom = " . scalar(@phantom) . ')');
	is(scalar @other, 0, "$sink: every row is this sink's");

	rp_psql($src, 'DELETE FROM t');
	rp_replicant_ok([ -d => $srcconn, -S => $slot, '--drop-slot' ], "$sink: slot $slot dropped");
}

done_testing();
