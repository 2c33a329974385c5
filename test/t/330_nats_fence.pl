
# Copyright: see the project's LICENSE.

# One writer per JetStream stream, and a full stream loses nothing; was
# regress/t/nats_fence.sh.
#
# Proves G1 and G3 (fail-closed) for --sink nats:// on a 3-node cluster:
#   (a) a second writer: a consumer of another slot pointed at a stream that consumer A
#       writes halts at start (exit != 0, naming the stream) and writes nothing; A goes on;
#   (b) a zombie: A is stopped (SIGSTOP) in the middle of publishing a 20,000-row
#       transaction, its walsender terminated, and a new writer A2 on the same slot resumes
#       from the stream's tail (in the middle of that transaction) and writes. A is then
#       continued (SIGCONT): it must be fenced, exactly it: it exits with an error naming the
#       stream and both writer ids (A's and A2's, as their messages' Replicant-Writer say),
#       while A2 runs on and the stream keeps growing with A2's messages only;
#   (c) a full stream: created beforehand with 64 KiB max bytes and discard new, a consumer of
#       a third slot meets it full: it keeps running (back-pressure), warns naming the
#       stream, counts replicant_nats_stream_full_total on /metrics, and the slot is not
#       confirmed past what the stream holds; once max bytes is raised it resumes by itself.
# At the end regress/check_nats.py compares both streams with the audit (every change once,
# in commit order, the slots confirmed no further than the streams hold).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;

my $STREAM      = 'F_STREAM';
my $PREFIX      = 'f';
my $FULL        = 'FULL_STREAM';
my $FULL_PREFIX = 'full';
my $work        = rp_work();

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
RpTest::Nats::load_workload($src, 'fa');
rp_replicant_ok([ -d => $srcconn, -S => 'fa', '--create-slot' ], 'slot fa created');

# consumer(NAME, SLOT, STREAM, PREFIX, ARG...): a writer in the background
sub consumer
{
	my ($name, $slot, $stream, $prefix, @args) = @_;
	return rp_consumer("consumer-$name", -d => $srcconn, -S => $slot, '--start', '-s', '1',
		'--sink', $nats->sink_url, '--nats-stream', $stream, '--nats-subject-prefix', $prefix,
		'--nats-ack-timeout', '2', '--state-dir', "$work/state-$name", @args);
}
sub err { return slurp("$work/consumer-$_[0].err"); }
sub last_seq { my $s = $nats->last_seq($_[0]); return $s eq '' ? 0 : $s; }
sub writer { return $nats->tail_field($STREAM, 'Replicant-Writer'); }

# workload(W, N, WHAT): N transactions of worker W, which must succeed
my %wlog;
sub workload
{
	my ($w, $n, $what) = @_;
	my ($ret, $out, $stderr) = $src->psql('postgres', "CALL workload($w, false, $n)");
	$wlog{$w} .= $stderr;
	is($ret, 0, "$what: $n workload transactions committed") or diag($stderr);
}

my $ca = consumer('a', 'fa', $STREAM, $PREFIX);
workload(1, 40, 'start');
ok(rp_wait_until(sub { last_seq($STREAM) > 20 }, $ca), '(a) consumer A writes 20 messages')
  or diag(err('a'));

# ---- (a) a second writer: another slot onto A's stream
rp_replicant_ok([ -d => $srcconn, -S => 'fb', '--create-slot' ], '(a) slot fb created');
my $writer_a = writer();
ok($writer_a ne '', "(a) the stream's tail has a Replicant-Writer ($writer_a)");
my $before = last_seq($STREAM);
my $cb = consumer('b', 'fb', $STREAM, $PREFIX);
workload(1, 10, '(a)');
my $rc = $cb->wait_exit;
ok(defined $rc, "(a) the consumer of slot fb on A's stream stops by itself");
$cb->kill9_alive unless defined $rc;
ok(defined $rc && $rc != 0, '(a) the second writer exits with an error (status ' . ($rc // 'none') . ')');
like(err('b'), qr/\Q$STREAM\E/, "(a) the second writer's error names the stream $STREAM");
ok($ca->alive, '(a) consumer A still runs') or diag(err('a'));
ok(rp_wait_until(sub { last_seq($STREAM) > $before }, $ca), "(a) A writes on past $before") or diag(err('a'));
note('(a) second writer (slot fb) halted with ' . ($rc // 'none') . ': '
	  . substr((grep { /error/ } split /\n/, err('b'))[0] // '', 0, 200));
rp_replicant_ok([ -d => $srcconn, -S => 'fb', '--drop-slot' ], '(a) slot fb dropped');

# ---- (b) a zombie: A stopped inside a big transaction, A2 takes over, A continued
rp_psql($src, 'INSERT INTO bulk SELECT g, md5(g::text) FROM generate_series(1, 20000) g');
# one snapshot of the tail: a message of the bulk transaction with more than a publish
# window (1024) of it still to come, so that A has publishes left when it is continued
sub inside
{
	my $t = $nats->tail($STREAM) // return 0;
	my $h = ($t->{msg} // {})->{headers} // {};
	my $i = $h->{'Replicant-Index'} // 0;
	return ($h->{'Replicant-Table'} // '') eq 'public.bulk' && !exists $h->{'Replicant-Last'}
	  && $i =~ /^\d+$/ && $i > 0 && $i < 15000;
}
ok(rp_wait_until(\&inside, $ca), '(b) A has the 20,000-row transaction half published') or diag(err('a'));
$ca->signal('STOP');
my $stopped_at = last_seq($STREAM);
rp_psql($src, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
	  . "WHERE slot_name = 'fa' AND active_pid IS NOT NULL");
ok(rp_wait_until(sub { rp_psql($src, "SELECT active FROM pg_replication_slots WHERE slot_name = 'fa'") eq 'f' }),
	"(b) slot fa is free once A's walsender was terminated");
my $a2 = consumer('a2', 'fa', $STREAM, $PREFIX);
workload(1, 10, '(b) A2 started');
my $writer_a2 = '';
ok(rp_wait_until(sub { $writer_a2 = writer(); $writer_a2 ne '' && $writer_a2 ne $writer_a }, $a2),
	"(b) the new writer A2 writes ($writer_a2)") or diag(err('a2'));
$ca->signal('CONT');
workload(1, 10, '(b) A continued');
$rc = $ca->wait_exit;
ok(defined $rc, '(b) the zombie A is fenced: it stops by itself after SIGCONT');
$ca->kill9_alive unless defined $rc;
ok(defined $rc && $rc != 0, '(b) the fenced zombie exits with an error (status ' . ($rc // 'none') . ')');
for my $want ([ $STREAM, 'the stream' ], [ $writer_a, "A's writer id" ], [ $writer_a2, "A2's writer id" ])
{
	ok($want->[0] ne '' && index(err('a'), $want->[0]) >= 0, "(b) the zombie's error names $want->[1] ($want->[0])")
	  or diag(err('a'));
}
ok($a2->alive, '(b) the new writer A2 still runs (exactly one fenced)') or diag(err('a2'));
note("(b) zombie (stopped at seq $stopped_at) fenced with " . ($rc // 'none') . ': '
	  . substr((grep { /fenced/ } split /\n/, err('a'))[0] // '', 0, 300));

# ---- (c) a full stream: back-pressure, warning, metric, resumption
my $audit_floor = rp_psql($src, 'SELECT coalesce(max(seq), 0) FROM audit');    # no workload runs now
my ($trc) = $nats->tool($FULL, 'create', $FULL_PREFIX, 65536, 3);
is($trc, 0, "(c) stream $FULL created with 64 KiB max bytes, discard new");
rp_replicant_ok([ -d => $srcconn, -S => 'fc', '--create-slot' ], '(c) slot fc created');
# a new slot's confirmed position is where it was created: the consumer has confirmed
# nothing beyond that until a transaction is complete in the stream
my $created = rp_slot_confirmed($src, 'fc');
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $c = consumer('c', 'fc', $FULL, $FULL_PREFIX, '--metrics-port', $port);
workload(2, 80, '(c)');
my $metrics = '';
ok(rp_wait_until(
		sub {
			my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
			$metrics = rp_plain_metrics($r->{content}) if $r->{success};
			return $r->{success} && $metrics =~ /^replicant_nats_stream_full_total(\{[^}]*\})? [1-9]/m;
		},
		$c),
	'(c) replicant_nats_stream_full_total counts the full stream') or diag(err('c'));
ok($c->alive, '(c) the consumer keeps running on a full stream') or diag(err('c'));
ok((grep { /full/i && /\Q$FULL\E/ } split /\n/, err('c')), "(c) a warning names the full stream $FULL")
  or diag(err('c'));
my $confirmed = rp_slot_confirmed($src, 'fc');
my $end = $nats->tail_field($FULL, 'last_complete_end') || '0/0';
my $bound = rp_lsn_lt($end, $created) ? $created : $end;
ok(!rp_lsn_lt($bound, $confirmed),
	"(c) slot fc ($confirmed) is not confirmed past the full stream's last complete transaction ($end) "
	  . "and its creation point ($created)");
note('(c) stream full at seq ' . last_seq($FULL) . ", slot fc at $confirmed");
($trc) = $nats->tool($FULL, 'max-bytes', -1);
is($trc, 0, "(c) stream ${FULL}'s max bytes raised");

# ---- the end: both streams exactly once
my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_confirmed($src, 'fc', $fence, $c), "(c) after max bytes was raised, slot fc confirms the fence $fence")
  or diag(err('c'));
ok(rp_wait_confirmed($src, 'fa', $fence, $a2), "A2 confirms the fence $fence") or diag(err('a2'));
for ([ $c, 'c' ], [ $a2, 'a2' ])
{
	my ($p, $n) = @$_;
	$p->signal('TERM');
	is($p->wait_exit, 0, "consumer $n stopped by SIGTERM exits 0") or diag(err($n));
}
unlike(join('', values %wlog), qr/ERROR:/, 'the workload ran without an error');
my $out;
($rc, $out) = $nats->check($src, 'fa', $STREAM, $PREFIX, args => [ '--range-table', 'bulk=1:20000' ]);
is($rc, 0, "stream $STREAM holds every committed change once, in commit order, bulk's 20,000 rows once (check_nats.py)")
  or diag($out);
note($out);
like($out, qr/ 2 writers,/, "stream $STREAM was written by the two writers A and A2 only");
($rc, $out) = $nats->check($src, 'fc', $FULL, $FULL_PREFIX, audit_where => "seq > $audit_floor",
	args => [ '--ignore-table', 'bulk' ]);
is($rc, 0, "stream $FULL holds every change committed after it was created once, in commit order (check_nats.py)")
  or diag($out);
note($out);

done_testing();
