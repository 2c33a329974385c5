
# Copyright: see the project's LICENSE.

# A JetStream stream that gives back less than it acknowledged stops the sink (G3) instead
# of letting it write on after the hole; was regress/t/nats_lost_tail.sh.
#
# nats-server 2.9.10 did this once in CI (t/nats_cluster.sh, now test/t/300_nats_cluster.pl:
# the stream's leader and a follower killed together while the third node was catching up:
# a restarted node reset its copy and voted the stale node leader, and 86 acknowledged
# messages were gone). The
# sink resumed after the older tail, the slot had been confirmed past the lost changes, and
# the stream went on with a hole no reader could see. Here the same state is made on
# purpose, the same way every time: a single-node server is stopped cleanly, its store
# copied, restarted; the consumer publishes more and the slot is confirmed past it; the
# server is stopped again and the old copy of the store put back. Then:
#   - the running consumer halts with exit 3 (gap), naming the stream and both sequences;
#   - the stream's last sequence is still the old copy's: nothing was written after the hole;
#   - a consumer started again on the slot refuses too (the slot is past the stream's tail).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT   = 'nats_lost';
my $STREAM = 'LOST_STREAM';
my $PREFIX = 'lost';
my $work   = rp_work();

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(1);
RpTest::Nats::load_workload($src, $SLOT);
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $consumer;
sub consumer_args
{
	return (-d => $srcconn, -S => $SLOT, '--start', '-s', '1', '--sink', $nats->sink_url,
		'--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX, '--nats-replicas', '1',
		'--nats-ack-timeout', '2', '--state-dir', "$work/state");
}
sub last_seq { return $nats->last_seq($STREAM); }
# workload(N): N transactions of the standard workload, then the slot confirmed past them
sub workload
{
	my ($n) = @_;
	rp_psql($src, "CALL workload(1, false, $n)");
	my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
	ok(rp_wait_confirmed($src, $SLOT, $fence, $consumer), "the consumer confirms the fence $fence after $n transactions")
	  or diag(slurp("$work/consumer-1.err"));
}
my $store = "$nats->{node}[1]{dir}/store";

$consumer = rp_consumer('consumer-1', consumer_args());
workload(20);
# the store as it is now, copied while the server is stopped cleanly (nothing half written)
ok($nats->stop(1), 'the NATS server stops cleanly');
is(system('cp', '-a', $store, "$work/store-old"), 0, 'its store copied');
ok($nats->restart(1), 'the NATS server restarts');
my $old_seq = last_seq();
ok($old_seq ne '' && $old_seq > 0, "the stream holds the first workload (last seq $old_seq)");
# more, acknowledged by the stream and confirmed to the slot
workload(20);
my $new_seq = last_seq();
ok($new_seq ne '' && $new_seq > $old_seq, "the stream grew past $old_seq after the second workload ($new_seq)");
my $confirmed = rp_slot_confirmed($src, $SLOT);
# the server gives back the older stream
ok($nats->stop(1), 'the NATS server stops again');
File::Path::rmtree($store);
is(system('cp', '-a', "$work/store-old", $store), 0, 'the old copy of its store put back');
ok($nats->restart(1), 'the NATS server restarts on the old store');
ok(rp_wait_until(sub { $nats->js_ready(1) }), 'JetStream is back on n1');
is(last_seq(), $old_seq, "the restored stream ends at the old copy's $old_seq");
note("stream acknowledged up to seq $new_seq (slot confirmed $confirmed), then went back to $old_seq");

# changes after the hole: the consumer must not write them behind it
rp_psql($src, 'CALL workload(1, false, 5)');
my $rc = $consumer->wait_exit;
is($rc, 3, "the consumer halts (exit 3) after its stream lost acknowledged messages (seq $new_seq -> $old_seq)");
my $err = slurp("$work/consumer-1.err");
for my $want ("NATS stream \"$STREAM\" lost messages it had acknowledged", "last sequence is $old_seq")
{
	ok(index($err, $want) >= 0, "the halt says: $want") or diag($err);
}
# the sequence the writer had acknowledged: at least the stream's last one read after the
# fence was confirmed (the script wanted it equal, and failed when the writer published
# one more message, a position message, between that read and the stop)
my ($had) = $err =~ /had (\d+) acknowledged/;
ok(defined $had && $had >= $new_seq, "the halt names the writer's acknowledged sequence (" . ($had // 'none') . ", at least $new_seq)")
  or diag($err);
like($err, qr/gap/, 'the halt is named gap');
is(last_seq(), $old_seq, "the stream did not grow after the hole (still $old_seq)");

# a restart on the same slot refuses too: the slot is past the stream's tail
is(rp_replicant('consumer-2', consumer_args()), 3, 'a restart on the slot halts (exit 3)')
  or diag(slurp("$work/consumer-2.err"));
like(slurp("$work/consumer-2.err"), qr/past the checkpoint/, "the restart's halt says the slot is past the checkpoint");
is(last_seq(), $old_seq, 'the restart wrote nothing to the stream');

done_testing();
