# Copyright: see the project's LICENSE.

# The JetStream sink while the whole cluster is frozen (G5, G1); was regress/t/nats_memory.sh.
#
# A 200-row transaction of 512 kB values (about 100 MB of JSON) arrives while every node is
# stopped (SIGSTOP), so no publish is acknowledged and the sink holds what it has in flight
# (the window bounds it by count and by bytes, RP_NATS_WINDOW_BYTES; the connection's
# socket buffers stop it sooner). With --max-memory 32MB for the assembled transaction the
# consumer's peak RSS must stay under 170 MB, the whole transaction received; then the nodes
# continue, and every row must be in the stream exactly once and the slot confirmed to the
# transaction's end. Then one change larger than max_payload halts the sink without being
# held rendered whole (c).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;
use JSON::PP;

my $SLOT     = 'nats_memory';
my $STREAM   = 'MEM_STREAM';
my $PREFIX   = 'mem';
my $ROWS     = 200;
my $LIMIT_MB = 170;
my $work     = rp_work();

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
rp_psql($src, 'CREATE TABLE big (id int PRIMARY KEY, v text)');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $c = rp_consumer('consumer', -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
	'--sink', $nats->sink_url, '--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX,
	'--nats-ack-timeout', '60', '--max-memory', '32MB', '--metrics-port', $port,
	'--state-dir', "$work/state");

# metric(NAME): its value on the consumer's metrics page, undef when the page does not answer
sub metric
{
	my ($name) = @_;
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
	return undef unless $r->{success};
	return rp_plain_metrics($r->{content}) =~ /^\Q$name\E (\S+)$/m ? $1 : undef;
}

# hwm_mb(PROC): the process's peak RSS (VmHWM) in MB
sub hwm_mb
{
	my ($p) = @_;
	open(my $fh, '<', '/proc/' . $p->pid . '/status') or return -1;
	while (<$fh>)
	{
		return int($1 / 1024) if /^VmHWM:\s+(\d+)/;
	}
	return -1;
}

# the stream's tail sequence, 0 when the stream is empty or does not answer
sub tail_seq
{
	my ($rc, $out) = $nats->tool($STREAM, 'tail');
	return 0 unless $rc == 0 && $out ne '';
	my $d = eval { decode_json($out) } or return 0;
	return ($d->{msg} // $d)->{seq} // 0;
}

# the stream exists and holds a first row before the cluster stops
rp_psql($src, "INSERT INTO big VALUES (0, 'first')");
ok(rp_wait_until(sub { tail_seq() > 0 }, $c), 'the first row reached the stream')
  or diag(slurp("$work/consumer.err"));

my @stopped;
for my $i (1 .. $nats->n)
{
	my $pid = $nats->{node}[$i]{proc}->pid;
	kill('STOP', $pid);
	push @stopped, $pid;
}
# 512 kB of hex a row, not compressible into less than the JSON the sink renders of it
rp_psql($src, "INSERT INTO big SELECT g, (SELECT string_agg(md5(random()::text || g || i), '') "
	  . "FROM generate_series(1, 16384) i) FROM generate_series(1, $ROWS) g");
my $end_lsn = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');

# the whole transaction received (its 100 MB), then published as far as the sink goes unanswered
ok(rp_wait_until(sub { (metric('replicant_received_bytes_total') // 0) >= $ROWS * 512 * 1024 }, $c),
	'the consumer received the whole transaction with the cluster stopped')
  or diag(slurp("$work/consumer.err"));
# until the published count stays the same for 10 reads 0.2 s apart (the sink has what it can hold)
my ($last, $same) = (-1, 0);
rp_poll(0.2,
	sub {
		my $now = metric('replicant_nats_published_total') // -1;
		if ($now eq $last) { $same++; }
		else { $same = 0; $last = $now; }
		return $same >= 10;
	},
	$c);
ok($c->alive, 'the consumer still runs with the cluster stopped') or diag(slurp("$work/consumer.err"));
my $hwm = hwm_mb($c);
note("cluster stopped: $last messages published, consumer peak RSS $hwm MB (limit $LIMIT_MB MB)");
ok($hwm >= 0 && $hwm < $LIMIT_MB, "the consumer's peak RSS $hwm MB is under $LIMIT_MB MB with the cluster stopped");

kill('CONT', $_) for @stopped;
ok(rp_wait_confirmed($src, $SLOT, $end_lsn, $c), "the slot confirmed $end_lsn after the cluster continued")
  or diag(slurp("$work/consumer.err"));
$hwm = hwm_mb($c);
ok($hwm >= 0 && $hwm < $LIMIT_MB, "the consumer's peak RSS $hwm MB is still under $LIMIT_MB MB");

# the whole stream read back (4 readers over consecutive sequence ranges, as the script did)
my $lastseq = $nats->last_seq($STREAM);
my @readers;
my $per = int((($lastseq || 0) + 3) / 4);
for my $k (0 .. 3)
{
	push @readers, RpTest::Proc->start(name => "dump$k",
		cmd => [ RpTest::Nats::dump_tool(), $nats->urls, $STREAM, 'dump', $k * $per + 1, ($k + 1) * $per ],
		stdout => "$work/stream.$k", stderr => "$work/dump$k.err");
}
my $dumped = 1;
for my $r (@readers)
{
	my $rc = $r->wait_exit;
	$dumped = 0 unless defined $rc && $rc == 0;
}
ok($lastseq ne '' && $dumped, "the stream (last seq $lastseq) read back");
# every insert of public.big by its key: rows 0..ROWS each exactly once
my %ids;
for my $k (0 .. 3)
{
	open(my $fh, '<', "$work/stream.$k") or next;
	while (my $line = <$fh>)
	{
		# the headers come before the data: only they are decoded
		my $i = index($line, '},"data":');
		next if $i < 0;
		my $m = eval { decode_json(substr($line, 0, $i) . '}}') } or next;
		my $h = $m->{headers} // {};
		next unless ($h->{'Replicant-Op'} // '') eq 'insert' && ($h->{'Replicant-Table'} // '') eq 'public.big';
		$ids{ decode_json($h->{'Replicant-Key'})->{id} }++;
	}
	close $fh;
}
my @dups = grep { $ids{$_} > 1 } sort { $a <=> $b } keys %ids;
my @missing = grep { !$ids{$_} } 0 .. $ROWS;
my @extra = grep { $_ < 0 || $_ > $ROWS } keys %ids;
note(sprintf('rows in the stream: %d distinct, %d duplicated, %d missing', scalar keys %ids, scalar @dups, scalar @missing));
is(scalar @dups, 0, 'no row is in the stream twice (dup = 0)') or diag("duplicated: @dups[0 .. ($#dups < 9 ? $#dups : 9)]");
is(scalar @missing, 0, "every row 0..$ROWS is in the stream (loss = 0)") or diag("missing: @missing[0 .. ($#missing < 9 ? $#missing : 9)]");
is(scalar @extra, 0, 'no other row of big is in the stream') or diag("extra: @extra");

# (c) One change larger than the server's max_payload: 40 MB of chr(1), whose JSON is 240 MB
# ("\u0001" a byte). The sink halts (exit 3) naming the table, never acknowledging it, and
# never holds it rendered whole: the consumer's peak RSS (GNU time, the process exits) stays
# under LIMIT_MB. Rendering it whole before the size check, as the sink once did, took the
# peak past 280 MB.
ok(-x '/usr/bin/time', 'GNU time is installed as /usr/bin/time (regress/install_deps.sh installs it)');
$c->signal('TERM');
$c->wait_exit;
my $big_lsn = rp_psql($src, "INSERT INTO big VALUES (-1, repeat(chr(1), 40 * 1024 * 1024));
	SELECT pg_current_wal_insert_lsn();");
my $rc = rp_run('oversize', '/usr/bin/time', '-v', '-o', "$work/time.txt", RpTest::replicant_bin(),
	-d => $srcconn, -S => $SLOT, '--start', '-s', '1', '--sink', $nats->sink_url,
	'--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX, '--max-memory', '32MB',
	'--state-dir', "$work/state");
my ($big_kb) = (-e "$work/time.txt" ? slurp("$work/time.txt") : '') =~ /Maximum resident set size \(kbytes\): (\d+)/;
$big_kb //= -1;
my $big_mb = int($big_kb / 1024);
note("oversize change: exit $rc, consumer peak RSS $big_mb MB (limit $LIMIT_MB MB)");
my $oerr = slurp("$work/oversize.err");
is($rc, 3, 'the oversize change halts the consumer (exit 3)') or diag($oerr);
like($oerr, qr/table "public"\."big" at commit LSN .* is larger than the NATS server.s max_payload/,
	'the halt names the table and max_payload');
ok($big_kb > 0 && $big_mb < $LIMIT_MB, "the consumer's peak RSS $big_mb MB refusing one oversize change is under $LIMIT_MB MB");
is(rp_psql($src, "SELECT confirmed_flush_lsn >= '$big_lsn' FROM pg_replication_slots WHERE slot_name = '$SLOT'"),
	'f', 'the slot was not confirmed past the change the sink refused');

done_testing();
