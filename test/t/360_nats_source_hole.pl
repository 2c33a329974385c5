# Copyright: see the project's LICENSE.

# A reader of a JetStream stream fails closed on a hole; was regress/t/nats_source_hole.sh.
#
# Proves the stream reader's fail-closed checks (issue 15): each reader below halts with
# exit 3, its stderr naming the stream and the place (a sequence or a commit LSN), and
# nothing of the damaged transaction (or after it) reaches its sink (a file log). The
# writer (NATS sink) puts ten transactions T1..T10 of three inserts each (rows carry their
# transaction's number) into stream HA; the damaged streams are copies of HA made with
# regress/tools/nats_dump.c (copy keeps subject tokens, headers and payloads, maps
# Replicant-Relation-Seq) into streams that allow delete and purge:
#   (a) hole    every message, then T5's second message deleted (a missing sequence)
#   (b) cut     T5's last message (Replicant-Last) left out, T6 follows (cut short)
#   (b2) index  T5's second message left out (Replicant-Index 0, 2)
#   (f) chain   T5 left out whole (T6's Replicant-Prev-End-Lsn is not T4's end)
#   (c) purged  T1..T4 read to the end by a reader (exit 0), then T5..T10 appended and
#               every message below T7's first purged: the stream's first sequence is above
#               the reader's checkpoint + 1
#   (d) other   a reader that read HA up to T4 restarted on an exact copy of HA: its
#               checkpoint is of another stream; and a mirror whose checkpoint follows a
#               slot pointed at HA
#   (e) system  T1..T4 of HA, then a second source system's transactions (cluster src2,
#               its own writer and stream): another system id
#   (g) a stream the sink never writes (two subjects): refused as a config error (exit 4)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP;

my $work = rp_work();

my $src  = rp_cluster('src');
my $src2 = rp_cluster('src2');
my $dst  = rp_cluster('dst');
my $nats = RpTest::Nats->start(3);

sub err_tail
{
	my ($f, $n) = @_;
	my @l = -e $f ? split(/\n/, slurp($f)) : ();
	return join("\n", @l > $n ? @l[-$n .. -1] : @l);
}

# write_stream(NODE, STREAM, PREFIX, FIRST, LAST): transactions FIRST..LAST on NODE, each
# three inserts into h (id = 10 * k + i, txn = k), written into STREAM by the NATS sink
sub write_stream
{
	my ($node, $stream, $prefix, $first, $last) = @_;
	my $conn = rp_conninfo($node);
	rp_psql($node, 'CREATE TABLE h (id int PRIMARY KEY, txn int NOT NULL, v text)');
	rp_replicant_ok([ -d => $conn, -S => 'hole_cdc', '--create-slot' ], "slot hole_cdc created for $stream");
	# the fence is read inside the last transaction: the slot passes it when that commit is
	# confirmed (the writer starts after every commit)
	my $fence;
	for my $k ($first .. $last)
	{
		$fence = rp_psql($node,
			    "BEGIN; INSERT INTO h VALUES (" . (10 * $k + 1) . ", $k, 'a');"
			  . " INSERT INTO h VALUES (" . (10 * $k + 2) . ", $k, 'b');"
			  . " INSERT INTO h VALUES (" . (10 * $k + 3) . ", $k, 'c');"
			  . " SELECT pg_current_wal_insert_lsn(); COMMIT");
	}
	my $w = rp_consumer("writer-$stream", -d => $conn, -S => 'hole_cdc', '--start', '--sink', $nats->sink_url,
		'--nats-stream', $stream, '--nats-subject-prefix', $prefix, '--state-dir', "$work/st-w-$stream");
	ok(rp_wait_confirmed($node, 'hole_cdc', $fence, $w), "the writer of $stream confirmed T$first..T$last ($fence)")
	  or diag(err_tail("$work/writer-$stream.err", 5));
	$w->signal('TERM');
	is($w->wait_exit, 0, "the writer of $stream, stopped by SIGTERM, exits 0")
	  or diag(err_tail("$work/writer-$stream.err", 5));
}
write_stream($src, 'HA', 'ha', 1, 10);
write_stream($src2, 'HE2', 'he2', 101, 103);
ok($nats->dump('HA', "$work/ha.jsonl"), 'stream HA dumped');

# the data messages of HA: per transaction k, its [index, seq] and its headers
my %tx;
for my $line (split /\n/, (-e "$work/ha.jsonl" ? slurp("$work/ha.jsonl") : ''))
{
	my $m = decode_json($line);
	my $hd = $m->{headers} // {};
	next unless ($hd->{'Replicant-Op'} // '') eq 'insert';
	my $k = decode_json($m->{data})->{new}{txn};
	push @{ $tx{$k}{seqs} }, [ $hd->{'Replicant-Index'}, $m->{seq} ];
	$tx{$k}{h} = $hd;
}
# tx(K, FIELD): of transaction Tk in HA: seqs (its data messages' sequences, in index
# order), first, last, lsn, end, prev
sub tx
{
	my ($k, $f) = @_;
	my @s = map { $_->[1] } sort { $a->[0] <=> $b->[0] } @{ $tx{$k}{seqs} // [] };
	return @s if $f eq 'seqs';
	return $s[0] // 0 if $f eq 'first';
	return $s[-1] // 0 if $f eq 'last';
	my %h = (lsn => 'Replicant-Lsn', end => 'Replicant-End-Lsn', prev => 'Replicant-Prev-End-Lsn');
	return ($tx{$k}{h} // {})->{ $h{$f} } // '';
}
my $HA_LAST = $nats->last_seq('HA');
my @T5 = tx(5, 'seqs');
is(scalar @T5, 3, "T5 is three messages in HA (@T5)");
my $T5_LSN = tx(5, 'lsn');
note("stream HA: $HA_LAST messages; T5 at sequences @T5, commit $T5_LSN");

# plant(STREAM, PREFIX, FROM, TO[, SKIP...]): a stream that allows delete and purge, holding
# HA's messages FROM..TO but SKIP; the "HA_SEQ NEW_SEQ" lines of the copy
sub plant
{
	my ($stream, $prefix, @range) = @_;
	my ($rc) = $nats->tool($stream, 'create-open', $prefix, 3);
	my ($rc2, $map) = $nats->tool($stream, 'copy', 'HA', 'ha', $prefix, @range);
	# recorded in the sink's stream registry as the sink records a stream it makes
	my ($rc3) = $nats->tool($stream, 'register', 'ha');
	ok($rc == 0 && $rc2 == 0 && $rc3 == 0, "stream $stream created, registered and HA's messages @range[0, 1] copied into it"
		  . (@range > 2 ? " but @range[2 .. $#range]" : ''));
	return $map;
}

my $runs = 0;
my ($rc, $err);
# read_stream(STREAM, READER, LOG[, ARG...]): a reader of STREAM (-S READER, its own state
# dir) into the file log LOG, with --endpos the stream's last sequence, until it exits
# (bounded by the timeout: -1 then); its status in $rc, its stderr's file in $err
sub read_stream
{
	my ($stream, $reader, $log, @args) = @_;
	$runs++;
	my $last = $nats->last_seq($stream);
	$err = "$work/$reader-$runs.err";
	$rc = rp_replicant("$reader-$runs", '--source', $nats->sink_url, '--nats-stream', $stream,
		-S => $reader, '--state-dir', "$work/st-$reader", '--start', '--sink', "file:$log",
		'--endpos', ($last eq '' ? 0 : $last), @args);
	ok($rc != -1, "reader $reader of $stream halted or finished (run $runs)");
}

# txns(LOG): the transaction numbers whose rows are in the log, sorted, unique
sub txns
{
	my ($log) = @_;
	return '' unless -s $log;
	my %seen;
	for my $line (split /\n/, slurp($log))
	{
		my $r = eval { decode_json($line) } or next;
		next unless ($r->{kind} // '') =~ /^(insert|update|delete)$/;
		$seen{ ($r->{new} // $r->{key})->{txn} } = 1;
	}
	return join(' ', sort { $a <=> $b } keys %seen);
}

# halted(CASE, STREAM, PATTERN, WHAT): the last read halted with exit 3, its stderr names
# the stream (NATS stream "S", or nats:S as a checkpoint's source) and matches PATTERN
# (WHAT says what it should have named)
sub halted
{
	my ($case, $stream, $re, $what) = @_;
	my $e = -e $err ? slurp($err) : '';
	my $names = qr/NATS stream "\Q$stream\E"|nats:\Q$stream\E\b/;
	is($rc, 3, "($case) the reader of $stream halts (exit 3)") or diag(err_tail($err, 3));
	like($e, $names, "($case) the halt names stream $stream") or diag(err_tail($err, 3));
	like($e, $re, "($case) the halt names $what") or diag(err_tail($err, 3));
	my ($l) = grep { $_ =~ $names } split /\n/, $e;
	note("($case) halted (exit $rc): " . substr($l // '', 0, 240));
}

# nothing_from(CASE, LOG, K): no row of Tk or later in LOG
sub nothing_from
{
	my ($case, $log, $k) = @_;
	my @bad = grep { $_ >= $k } split / /, txns($log);
	is("@bad", '', "($case) the log holds no row of T$k or later (the damage is at T$k)");
}
sub alt { return join('|', map { quotemeta } @_); }

# ---- (a) a message deleted in the middle of T5
plant('HOLE_A', 'hoa', 1, $HA_LAST);
is(($nats->tool('HOLE_A', 'delete', $T5[1]))[0], 0, "(a) T5's second message ($T5[1]) deleted");
read_stream('HOLE_A', 'hole_a', "$work/a.log");
halted('a', 'HOLE_A', qr/\b$T5[1]\b/, "the missing sequence $T5[1]");
nothing_from('a', "$work/a.log", 5);

# ---- (b) T5's last message missing, T6 follows
plant('HOLE_B', 'hob', 1, $HA_LAST, $T5[2]);
read_stream('HOLE_B', 'hole_b', "$work/b.log");
halted('b', 'HOLE_B', qr/\Q$T5_LSN\E/, "T5's commit LSN $T5_LSN");
nothing_from('b', "$work/b.log", 5);

# ---- (b2) T5's second message missing: its indexes are 0, 2
plant('HOLE_I', 'hoi', 1, $HA_LAST, $T5[1]);
read_stream('HOLE_I', 'hole_i', "$work/i.log");
halted('b2', 'HOLE_I', qr/\Q$T5_LSN\E/, "T5's commit LSN $T5_LSN");
nothing_from('b2', "$work/i.log", 5);

# ---- (f) T5 missing whole: the chain breaks at T6
plant('HOLE_F', 'hof', 1, $HA_LAST, @T5);
my $T6_LSN = tx(6, 'lsn');
my $T4_END = tx(4, 'end');
my $T6_PREV = tx(6, 'prev');
read_stream('HOLE_F', 'hole_f', "$work/f.log");
my $chain = alt($T6_LSN, $T4_END, $T6_PREV);
halted('f', 'HOLE_F', qr/$chain/, "T6's commit LSN $T6_LSN or the chain's end LSNs");
nothing_from('f', "$work/f.log", 5);

# ---- (c) messages purged below the reader's checkpoint
my $T4_LAST = tx(4, 'last');
my $map = plant('HOLE_C', 'hoc', 1, $T4_LAST);
read_stream('HOLE_C', 'hole_c', "$work/c.log");
is($rc, 0, '(c) the reader of T1..T4 exits 0') or diag(err_tail($err, 3));
is(txns("$work/c.log"), '1 2 3 4', '(c) the first read delivered T1..T4');
my ($rc_copy, $more) = $nats->tool('HOLE_C', 'copy', 'HA', 'ha', 'hoc', $T4_LAST + 1, $HA_LAST);
is($rc_copy, 0, "(c) HA's T5..T10 appended to HOLE_C");
my $T7_FIRST = tx(7, 'first');
my ($T7_NEW) = "$map\n$more" =~ /^$T7_FIRST (\d+)$/m;
$T7_NEW //= 0;
$nats->tool('HOLE_C', 'purge-below', $T7_NEW);
my ($first) = $nats->tool('HOLE_C', 'info') =~ /"first_seq":(\d+)/;
is($first, $T7_NEW, "(c) HOLE_C starts at T7's first message ($T7_NEW) after the purge below it");
$first //= -1;
read_stream('HOLE_C', 'hole_c', "$work/c.log");
halted('c', 'HOLE_C', qr/\b$first\b/, "the stream's first sequence $first");
is(txns("$work/c.log"), '1 2 3 4', '(c) after the halt the log holds T1..T4 only');

# ---- (d) a checkpoint of another stream (same content), and one of a slot
plant('HOLE_D', 'hod', 1, $HA_LAST);
$runs++;
$err = "$work/hole_d-$runs.err";
$rc = rp_replicant("hole_d-$runs", '--source', $nats->sink_url, '--nats-stream', 'HA', -S => 'hole_d',
	'--state-dir', "$work/st-hole_d", '--start', '--sink', "file:$work/d.log", '--endpos', $T4_LAST);
is($rc, 0, '(d) the reader of HA up to T4 exits 0') or diag(err_tail($err, 3));
is(txns("$work/d.log"), '1 2 3 4', '(d) the first read delivered T1..T4');
read_stream('HOLE_D', 'hole_d', "$work/d.log");
halted('d', 'HOLE_D', qr/"HA"|nats:HA/, "the checkpoint's stream HA");
is(txns("$work/d.log"), '1 2 3 4', '(d) after the halt the log holds T1..T4 only');
# a mirror that follows a slot of src, then pointed at the stream with the same -S
rp_psql($dst, 'CREATE DATABASE m');
rp_replicant_ok([ -d => rp_conninfo($src), -S => 'hole_m', '--create-slot' ], '(d) slot hole_m created');
# one implicit transaction: the LSN is read before its commit
my $lsn = rp_psql($src, "INSERT INTO h VALUES (1001, 100, 'after'); SELECT pg_current_wal_insert_lsn()");
rp_replicant_ok([ -d => rp_conninfo($src), -S => 'hole_m', '--start', '--sink', 'postgres:' . rp_conninfo($dst, 'm'),
		'--create-tables', '--state-dir', "$work/st-hole_m", -E => $lsn ], '(d) the mirror from slot hole_m exits 0');
my ($ret, $before) = $dst->psql('m', 'SELECT count(*) FROM h');
is($before, 1, '(d) the mirror from slot hole_m holds its one row');
$runs++;
$err = "$work/hole_m-$runs.err";
$rc = rp_replicant("hole_m-$runs", '--source', $nats->sink_url, '--nats-stream', 'HA', -S => 'hole_m', '--start',
	'--state-dir', "$work/st-hole_m", '--sink', 'postgres:' . rp_conninfo($dst, 'm'), '--create-tables',
	'--endpos', $HA_LAST);
halted('d-slot', 'HA', qr/slot/, 'that the checkpoint follows a slot');
is(rp_psql($dst, 'SELECT count(*) FROM h', 'm'), $before, '(d) the mirror took no rows from the stream after the halt');

# ---- (e) another system's messages after T4
my @e = ($nats->tool('HOLE_E', 'create-open', 'hoe', 3))[0];
push @e, ($nats->tool('HOLE_E', 'copy', 'HA', 'ha', 'hoe', 1, $T4_LAST))[0];
my $E2_LAST = $nats->last_seq('HE2');
push @e, ($nats->tool('HOLE_E', 'copy', 'HE2', 'he2', 'hoe', 1, $E2_LAST))[0];
push @e, ($nats->tool('HOLE_E', 'register', 'ha'))[0];
is("@e", '0 0 0 0', "(e) HOLE_E holds HA's T1..T4, then HE2's 1..$E2_LAST");
read_stream('HOLE_E', 'hole_e', "$work/e.log");
halted('e', 'HOLE_E', qr/[Ss]ystem/, 'the system id');
nothing_from('e', "$work/e.log", 100);

# ---- (g) a stream the sink never writes (two subjects): refused as a config error (exit 4)
is(($nats->tool('HOLE_G', 'create-open', 'hg1,hg2', 3))[0], 0, '(g) stream HOLE_G created with two subjects');
$rc = rp_replicant('hole_g', '--source', $nats->sink_url, '--nats-stream', 'HOLE_G', -S => 'hole_g',
	'--state-dir', "$work/st-hole_g", '--start', '--sink', "file:$work/g.log", '--no-loop');
is($rc, 4, '(g) a reader of a stream with two subjects exits 4') or diag(err_tail("$work/hole_g.err", 3));
like(slurp("$work/hole_g.err"), qr/NATS stream "HOLE_G" has 2 subjects/,
	'(g) the refusal names the stream and its 2 subjects') or diag(err_tail("$work/hole_g.err", 1));
# a writer into that stream (two subjects, delete and purge allowed) is refused before it
# publishes: exit 4 (issue 46: it exited 2 at the sink's open, where the docs said 1)
my $srcc = rp_conninfo($src);
rp_replicant_ok([ -d => $srcc, -S => 'hole_gw', '--create-slot' ], '(g) slot hole_gw created');
$rc = rp_replicant('hole_gw', -d => $srcc, -S => 'hole_gw', '--start', '--sink', $nats->sink_url,
	'--nats-stream', 'HOLE_G', '--nats-subject-prefix', 'hg1', '--state-dir', "$work/st-hole_gw", '--no-loop');
is($rc, 4, '(g) a writer into it is refused: exit 4') or diag(err_tail("$work/hole_gw.err", 3));
like(slurp("$work/hole_gw.err"), qr/NATS stream "HOLE_G"/, '(g) the refusal names the stream')
  or diag(err_tail("$work/hole_gw.err", 3));

done_testing();
