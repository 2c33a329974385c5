# Copyright: see the project's LICENSE.

# A stream reader resumes across a stream without a leader; was
# regress/t/nats_source_leaderless.sh.
#
# While a stream's group has no leader, every member answers STREAM.INFO from its own store
# (nats-server 2.9); a member that was down holds fewer messages than the stream. A reader
# that took that answer for the stream's end halted "identity" (exit 3: its checkpoint lay
# past the end) on a stream that was only electing a leader: CI saw it after a leader's
# restart in t/nats_fanout.sh. Here the state is made on purpose, not waited for:
#   1. the NATS sink writes T1..T5 (three inserts each) into the R3 stream LL; node A (not
#      the stream's leader) is stopped; the sink writes T6..T10 through the other two nodes
#   2. a reader (file log) reads to T8's last message through the other two: its
#      checkpoint is past everything A holds
#   3. the other two nodes stop, A starts again alone: the group has no leader, and A
#      answers for the stream with T1..T5
#   4. the reader starts again through A alone, to T10's last message. It must not halt:
#      it says the stream has no leader and asks again (the test waits for that line, so
#      the state of step 3 was really seen), and keeps running
#   4b. the writer (the NATS sink) starts again through A alone with T11 to write: its
#      resume point is the stream's tail, and A's tail is behind what the slot confirmed;
#      it must wait too, not halt on a "gap" between the slot and the stream
#   5. the two nodes start again: a leader is elected, the reader checks its checkpoint
#      against the leader's answer, delivers T9 and T10 and exits 0; the log holds
#      T1..T10's 30 rows, each once; the writer appends T11, and the stream holds T1..T11's
#      rows each once
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP;

my $work = rp_work();

my $src = rp_cluster('src');
my $conn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
rp_psql($src, 'CREATE TABLE h (id int PRIMARY KEY, txn int NOT NULL, v text)');
rp_replicant_ok([ -d => $conn, -S => 'll_cdc', '--create-slot' ], 'slot ll_cdc created');

sub err_tail
{
	my ($f, $n) = @_;
	my @l = -e $f ? split(/\n/, slurp($f)) : ();
	return join("\n", @l > $n ? @l[-$n .. -1] : @l);
}

# txn(K): transaction Tk (three inserts into h, id = 10 * k + i); the WAL position read
# inside it, which the slot passes when that commit is confirmed
sub txn
{
	my ($k) = @_;
	return rp_psql($src,
		    "BEGIN; INSERT INTO h VALUES (" . (10 * $k + 1) . ", $k, 'a');"
		  . " INSERT INTO h VALUES (" . (10 * $k + 2) . ", $k, 'b');"
		  . " INSERT INTO h VALUES (" . (10 * $k + 3) . ", $k, 'c');"
		  . " SELECT pg_current_wal_insert_lsn(); COMMIT");
}
sub writer
{
	my ($name, @nodes) = @_;
	return rp_consumer($name, { append => 1 }, -d => $conn, -S => 'll_cdc', '--start',
		'--sink', $nats->sink_url(@nodes), '--nats-stream', 'LL', '--nats-subject-prefix', 'll',
		'--state-dir', "$work/st-writer");
}

# write(FIRST, LAST, NODE...): transactions FIRST..LAST written into LL by the NATS sink
# connected to the nodes named, until the slot confirmed them (the writer starts after the
# commits)
sub write_txns
{
	my ($first, $last, @nodes) = @_;
	my $fence;
	$fence = txn($_) for $first .. $last;
	my $w = writer('writer', @nodes);
	ok(rp_wait_confirmed($src, 'll_cdc', $fence, $w), "the writer confirmed T$first..T$last ($fence)")
	  or diag(err_tail("$work/writer.err", 5));
	$w->signal('TERM');
	is($w->wait_exit, 0, "the writer of T$first..T$last, stopped by SIGTERM, exits 0")
	  or diag(err_tail("$work/writer.err", 5));
}

# last_seq_of(K): the sequence of Tk's last message in LL
sub last_seq_of
{
	my ($k) = @_;
	ok($nats->dump('LL', "$work/ll.jsonl"), "stream LL dumped (for T$k)") or return 0;
	my $last = 0;
	for my $line (split /\n/, slurp("$work/ll.jsonl"))
	{
		my $m = decode_json($line);
		next unless (($m->{headers} // {})->{'Replicant-Op'} // '') eq 'insert';
		next unless decode_json($m->{data})->{new}{txn} == $k;
		$last = $m->{seq} if $m->{seq} > $last;
	}
	return $last;
}

# ---- 1. T1..T5 on three nodes, T6..T10 with node A down
write_txns(1, 5);
my $leader = $nats->wait_stream_leader('LL');
like($leader, qr/^[123]$/, "stream LL has a leader after T1..T5 (n$leader)");
$leader = 1 unless $leader =~ /^[123]$/;
my $na = $leader % 3 + 1;
my @others = grep { $_ != $na } 1 .. 3;
my $T5_LAST = last_seq_of(5);
ok($nats->stop($na), "node n$na (not the stream's leader) stopped");
write_txns(6, 10, @others);
my $T8_LAST = last_seq_of(8);
my $T10_LAST = last_seq_of(10);
note("stream LL: T5 ends at $T5_LAST (node n$na stopped there), T8 at $T8_LAST, T10 at $T10_LAST; leader n$leader");
ok($T5_LAST > 0 && $T8_LAST > $T5_LAST && $T10_LAST > $T8_LAST,
	"the stream's sequences are in transaction order ($T5_LAST < $T8_LAST < $T10_LAST)");

# ---- 2. a reader to T8 through the two nodes that hold everything
my @reader = ('--source', $nats->sink_url(@others), '--nats-stream', 'LL', -S => 'll_reader',
	'--state-dir', "$work/st-reader", '--start', '--sink', "file:$work/r.log");
is(rp_replicant('reader-1', @reader, '--endpos', $T8_LAST), 0, "the reader to T8 ($T8_LAST) exits 0")
  or diag(err_tail("$work/reader-1.err", 5));

# ---- 3. the two nodes down, A alone with T1..T5
ok($nats->stop($_), "node n$_ stopped") for @others;
ok($nats->restart($na), "node n$na restarted alone");

# waits(WHO, PROC, ERR): the process must have said the stream has no leader (so the state
# of step 3 was seen) and still run: it waits, it does not halt
sub waits
{
	my ($who, $p, $errf) = @_;
	my $said = sub { -e $errf && slurp($errf) =~ /NATS stream "LL" has no leader/ };
	rp_wait_until(sub { !$p->alive || $said->() });
	ok($said->(), "the $who saw node n$na answer for LL alone (it says the stream has no leader)");
	ok($p->alive, "the $who through node n$na alone still runs while the stream has no leader")
	  or diag('it exited with ' . $p->status . ': ' . err_tail($errf, 2));
	my ($l) = grep { /has no leader/ } split /\n/, (-e $errf ? slurp($errf) : '');
	note("node n$na alone: the $who waits: " . substr($l // '', 0, 200));
}

# ---- 4. the reader again, through A alone: it must wait, not halt
$reader[1] = $nats->sink_url($na);
my $reader = rp_consumer('reader-2', @reader, '--endpos', $T10_LAST);
waits('reader', $reader, "$work/reader-2.err");

# ---- 4b. the writer too, through A alone, with T11 to write: its resume point is the
# stream's tail, and a tail read from A's T1..T5 is behind what the slot confirmed (T10):
# it must wait for a leader, not halt on a gap between the slot and the stream
my $fence = txn(11);
my $writer = writer('writer-2', $na);
waits('writer', $writer, "$work/writer-2.err");

# ---- 5. the two nodes back: a leader, and the reader goes on to T10
ok($nats->restart($_), "node n$_ restarted") for @others;
is($reader->wait_exit, 0, 'the reader reaches T10 and exits 0 after the cluster came back')
  or diag(err_tail("$work/reader-2.err", 5));
ok(rp_wait_confirmed($src, 'll_cdc', $fence, $writer), "the writer confirmed T11 ($fence) after the cluster came back")
  or diag(err_tail("$work/writer-2.err", 5));
$writer->signal('TERM');
is($writer->wait_exit, 0, 'the writer, stopped by SIGTERM, exits 0') or diag(err_tail("$work/writer-2.err", 5));

# once(WHAT, FILE, K): the inserts in FILE (a stream dump, or a file log) are T1..Tk's
# rows, each once
sub once
{
	my ($what, $file, $k) = @_;
	my %ids;
	my $n = 0;
	for my $line (split /\n/, (-e $file ? slurp($file) : ''))
	{
		my $m = decode_json($line);
		my $id;
		if ($what eq 'stream' && (($m->{headers} // {})->{'Replicant-Op'} // '') eq 'insert')
		{
			$id = decode_json($m->{data})->{new}{id};
		}
		elsif ($what eq 'log' && ($m->{kind} // '') eq 'insert')
		{
			$id = $m->{new}{id};
		}
		next unless defined $id;
		$ids{$id}++;
		$n++;
	}
	my %want = map { my $t = $_; map { (10 * $t + $_ => 1) } 1 .. 3 } 1 .. $k;
	my $dup   = grep { $ids{$_} > 1 } keys %ids;
	my $lost  = grep { !$ids{$_} } keys %want;
	my $extra = grep { !$want{$_} } keys %ids;
	is("dup=$dup loss=$lost extra=$extra", 'dup=0 loss=0 extra=0',
		"the $what holds T1..T${k}'s rows each once ($n rows)");
}
ok($nats->dump('LL', "$work/ll.jsonl"), 'stream LL dumped');
once('stream', "$work/ll.jsonl", 11);
once('log', "$work/r.log", 10);

done_testing();
