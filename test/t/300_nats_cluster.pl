
# Copyright: see the project's LICENSE.

# The JetStream sink rides out node failures of its cluster; was regress/t/nats_cluster.sh.
#
# Proves G1 and G2 for --sink nats:// while the 3-node cluster fails under a running workload
# and one running consumer (it must neither exit nor lose or repeat anything):
#   (a) kill -9 of the stream's leader node; a new leader is elected, the stream grows again;
#       the node restarted;
#   (b) kill -9 of the node the consumer has its TCP connection to; the consumer reconnects
#       to another node and the stream grows again; the node restarted;
#   (c) two nodes down (the leader and a follower stopped with SIGTERM: no quorum): while
#       they are down the source commits on and the consumer keeps sending status updates,
#       but the slot's confirmed_flush_lsn does not move (sampled at every status update the
#       walsender gets, several times), and the consumer is still running; both restarted,
#       the slot moves again;
#   (d) the whole cluster stopped (SIGTERM) and restarted; the stream grows again.
# After each step the slot is at or behind the end LSN of the stream's last complete
# transaction. At the end regress/check_nats.py compares the whole stream with the audit.
#
# One fault at a time, each healed (every node's copy of the stream caught up) before the
# next, and a majority only ever stopped cleanly: that is what nats-server 2.9.10 survives.
# Beyond it, it lost messages it had acknowledged, which no client can make up for: kill -9
# of the leader and a follower while the third node caught up lost 86 (a restarted node
# reset its copy and voted the stale node leader; once in CI); the whole cluster stopped
# while one node's copy still caught up came back with 4,749 of 11,065 (that node led); and
# a leader stopped with SIGSTOP and continued did not catch up within 180 s. What the sink does
# then, halt instead of writing on after the hole, is test/t/090_nats_lost_tail.pl.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(time sleep);

my $SLOT   = 'nats_cluster';
my $STREAM = 'CL_STREAM';
my $PREFIX = 'cl';
my $work   = rp_work();

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);

# the harness itself: the cluster it hands over is formed (3 nodes running, every peer
# current at the meta leader: a node that exited after answering /varz used to go
# unnoticed, and the consumer's R3 stream then failed with error 10005); its 9 ports are
# distinct (two nodes drew the same port: that node died binding it), below the ephemeral
# range when the range leaves room (an outgoing connection can take such a port between its
# choice and the bind), and each reserved by this test in Cluster.pm's port lock directory
# (so no other test draws it meanwhile)
ok($nats->_formed, 'the NATS cluster is formed: 3 nodes running, every peer current at the meta leader');
my ($eph_lo) = split ' ', slurp('/proc/sys/net/ipv4/ip_local_port_range');
my %ports;
for my $i (1 .. 3)
{
	$ports{"n$i $_"} = $nats->{node}[$i]{$_} for qw(port cport mon);
}
my %seen;
$seen{$_}++ for values %ports;
is(scalar(keys %seen), 9, 'the 9 NATS ports are distinct')
  or diag(join(', ', map { "$_=$ports{$_}" } sort keys %ports));
my @eph = grep { !($ports{$_} < $eph_lo || $eph_lo <= 22000) } sort keys %ports;
is("@eph", '', "no NATS port is inside the ephemeral port range (from $eph_lo)")
  or diag(join(', ', map { "$_=$ports{$_}" } @eph));
my @unreserved = grep {
	my $f = "$PostgreSQL::Test::Cluster::portdir/$ports{$_}.rsv";
	!(-e $f && slurp($f) =~ /^\s*$$\s*$/)
} sort keys %ports;
is("@unreserved", '', 'every NATS port is reserved by this test (get_free_port)')
  or diag(join(', ', map { "$_=$ports{$_}" } @unreserved));

RpTest::Nats::load_workload($src, $SLOT);
rp_psql($src, 'UPDATE wl_conf SET pace = 0.03');    # a smaller stream to read back
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $consumer = rp_consumer('consumer-1', -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
	'--sink', $nats->sink_url, '--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX,
	'--nats-ack-timeout', '2', '--state-dir', "$work/state");
my $worker = rp_psql_bg($src, 'worker1', 'CALL workload(1, false, 0)');

sub err_tail
{
	my @l = split /\n/, slurp("$work/consumer-1.err");
	splice(@l, 0, @l - 15) if @l > 15;
	return join("\n", @l);
}
sub last_seq { return $nats->last_seq($STREAM); }

# grows(STEP, BEFORE): until the stream's last sequence passes BEFORE; fails when the
# consumer exits first
sub grows
{
	my ($step, $before) = @_;
	ok(rp_wait_until(sub { my $s = last_seq(); $s ne '' && $s > $before }, $consumer),
		"$step: the stream grows past $before, the consumer running")
	  or diag(err_tail());
}

# acked_within(STEP): G2 at this moment: the slot is confirmed no further than the end LSN
# of the stream's last complete transaction
sub acked_within
{
	my ($step) = @_;
	my $confirmed = rp_slot_confirmed($src, $SLOT);
	my $end = $nats->tail_field($STREAM, 'last_complete_end');
	ok(!rp_lsn_lt($end || '0/0', $confirmed),
		"$step: the slot ($confirmed) is not confirmed past the stream's last complete transaction (end "
		  . ($end || 'none') . ')');
}

# the last status update the slot's walsender got from the consumer
sub reply_time
{
	return rp_psql($src,
		"SELECT coalesce(r.reply_time::text, '') FROM pg_stat_replication r "
		  . "JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = '$SLOT'");
}

# wait_replies(N): a sampling period: until the walsender got N more status updates, each
# awaited up to 3 s (a consumer that holds its status updates back while it waits is
# allowed: the period still ends). The 3 s belong to the sampling, not to a hang guard.
sub wait_replies
{
	my ($n) = @_;
	my $prev = reply_time();
	for (1 .. $n)
	{
		my $deadline = time() + 3;
		my $cur = reply_time();
		while (($cur eq '' || $cur eq $prev) && time() < $deadline)
		{
			sleep(0.1);
			$cur = reply_time();
		}
		$prev = $cur;
	}
}

sub slot_past
{
	my ($lsn) = @_;
	my $c = rp_slot_confirmed($src, $SLOT);
	return $c ne '' && rp_lsn_lt($lsn, $c);
}

# the stream's last sequence once its info answers again (read while two nodes were down
# it can fail with 10008, JetStream unavailable without a quorum)
sub seq_now
{
	my ($step) = @_;
	my $s = '';
	ok(rp_wait_until(sub { $s = last_seq(); $s ne '' }, $consumer), "$step: the stream's info answers ($s)")
	  or diag(err_tail());
	return $s eq '' ? 0 : $s;
}

sub meta_leader_back { return rp_wait_until(sub { $nats->meta_leader ne '' }); }

grows('start', 20);

# ---- (a) the stream leader killed under load
my $leader = $nats->wait_stream_leader($STREAM);
ok($leader ne '', "(a) the stream has a leader (n$leader)");
my $before = last_seq() || 0;
ok($nats->kill9($leader), "(a) the stream leader n$leader killed with SIGKILL");
my $new = $nats->wait_stream_leader($STREAM, $leader);
ok($new ne '', "(a) a new stream leader after n$leader was killed (n$new)");
grows("(a) leader n$leader killed, n$new leads", $before);
acked_within('(a)');
ok($nats->restart($leader), "(a) n$leader restarted");
ok($nats->wait_caught_up($STREAM), "(a) every node's copy of the stream caught up after n$leader restarted");

# ---- (b) the node the consumer is connected to
my $node = '';
rp_wait_until(sub { $node = $nats->client_node($consumer->pid); $node ne '' }, $consumer);
ok($node ne '', "(b) the consumer has a TCP connection to a NATS node (n$node)");
$node ||= 1;
$before = last_seq() || 0;
ok($nats->kill9($node), "(b) n$node, the consumer's node, killed with SIGKILL");
grows("(b) n$node (the consumer's) killed", $before);
my $now_on = $nats->client_node($consumer->pid);
isnt($now_on, $node, "(b) the consumer is no longer connected to the killed node n$node (now: n$now_on)");
acked_within('(b)');
ok($nats->restart($node), "(b) n$node restarted");
ok(meta_leader_back(), "(b) a meta leader after n$node restarted");
ok($nats->wait_caught_up($STREAM), "(b) every node's copy of the stream caught up after n$node restarted");

# ---- (c) two nodes down: no quorum, nothing confirmed, the consumer waits
$leader = $nats->wait_stream_leader($STREAM);
ok($leader ne '', "(c) the stream has a leader (n$leader)");
$leader ||= 1;
my @down = ($leader, (grep { $_ != $leader } 1 .. 3)[0]);    # the leader and one follower
ok($nats->stop($_), "(c) n$_ stopped (SIGTERM)") for @down;
# acks that were in flight at the stop may still be confirmed by the next status update
wait_replies(2);
my $c0 = rp_slot_confirmed($src, $SLOT);
my $audit0 = rp_psql($src, 'SELECT count(*) FROM audit');
for my $k (1 .. 5)
{
	wait_replies(1);
	ok($consumer->alive, "(c) sample $k: the consumer still runs with nodes @down down")
	  or diag(err_tail());
	is(rp_slot_confirmed($src, $SLOT), $c0, "(c) sample $k: the slot stays at $c0 while nodes @down are down (no quorum)");
}
my $audit1 = rp_psql($src, 'SELECT count(*) FROM audit');
ok($audit1 > $audit0, "(c) the source committed on while the nodes were down ("
	  . ($audit1 - $audit0) . ' audit rows): the samples prove something');
ok($nats->restart($_), "(c) n$_ restarted") for @down;
# every node naming one meta leader again (as after (b)); a node that stays detached longer is
# the server's matter, not this step's: its requests then reach the others (nats_dump
# connects again), so it is reported, not failed
meta_leader_back()
  or note('(c) the nodes did not agree on a meta leader: '
	  . join(' ', map { my $j = $nats->jsz($_); "n$_=" . (((($j // {})->{meta_cluster} // {})->{leader}) // '') } 1 .. 3));
$before = seq_now('(c) nodes restarted');
grows('(c) nodes restarted', $before);
ok(rp_wait_until(sub { slot_past($c0) }, $consumer), "(c) the slot moves past $c0 after the nodes came back")
  or diag(err_tail());
acked_within('(c)');

# ---- (d) the whole cluster stopped and restarted
ok($nats->wait_caught_up($STREAM), "(c) every node's copy of the stream caught up after the nodes came back");
ok($nats->stop($_), "(d) n$_ stopped (SIGTERM)") for 1 .. 3;
ok($consumer->alive, '(d) the consumer still runs with all nodes down') or diag(err_tail());
ok($nats->restart($_), "(d) n$_ restarted") for 1 .. 3;
ok(meta_leader_back(), '(d) a meta leader after the whole cluster restarted');
$before = seq_now('(d) the whole cluster restarted');
grows('(d) the whole cluster restarted', $before);
acked_within('(d)');

# ---- the end: everything exactly once
rp_psql($src, 'UPDATE ctl SET stop = true');
is($worker->wait_exit, 0, 'the workload ends with exit 0') or diag(slurp("$work/worker1.out"));
unlike(slurp("$work/worker1.out"), qr/ERROR:/, 'the workload ran without an error');
my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_confirmed($src, $SLOT, $fence, $consumer), "the consumer confirms the fence $fence")
  or diag(err_tail());
$consumer->signal('TERM');
is($consumer->wait_exit, 0, 'the consumer stopped by SIGTERM exits 0') or diag(err_tail());
# the publish failures of (c) are reported as they were: "(no answer)" or "(JetStream error N)"
my $err = slurp("$work/consumer-1.err");
like($err, qr/publishing failed \(no answer\); reading its tail/,
	'the consumer reported an unanswered publish ((c) left the stream without quorum)');
my @garbled = grep { /publishing failed/ && !/publishing failed \((no answer|JetStream error [0-9]+)\); / }
  split /\n/, $err;
is(scalar(@garbled), 0, 'every publish failure is reported as "(no answer)" or "(JetStream error N)"')
  or diag($garbled[0]);
my ($rc, $out) = $nats->check($src, $SLOT, $STREAM, $PREFIX);
is($rc, 0, 'the stream holds every committed change once, in commit order, the slot not past it (check_nats.py)')
  or diag($out);
note($out);

done_testing();
