
# Copyright: see the project's LICENSE.

# A stream that is not the one its slot wrote halts its writer and its readers (issue 48
# item 1). Before, a writer restarted on a deleted stream made it again, recorded the slot's
# position in it and exited 0; a new reader then built a sink from the part after it (1,021
# of 1,441 rows), exit 0. The sink records each stream it makes in the stream registry (the
# JetStream key-value bucket REPLICANT_STREAMS: its creation time and slot), which outlives
# the stream. On a 3-node cluster:
#   (a) a writer records its stream: the registry entry names the slot and the stream's
#       creation time;
#   (b) the stream deleted: the writer, restarted (a fresh process), halts (exit 3, naming
#       the stream and "deleted") and does not make it again;
#   (c) the stream made again by someone else: the writer halts (exit 3, "made again") and
#       publishes nothing into it;
#   (d) a stream deleted and made again holding the later part of the history (the issue's
#       reader): a reader with a checkpoint and a reader without one both halt (exit 3); with
#       --nats-from-current-start the new reader reads what is there, and says so;
#   (e) limits that drop messages set while the writer runs (max age): the writer halts by
#       itself (exit 4, naming the limits) instead of writing on into a stream that expires;
#   (f) the stream's first messages gone (expired by that max age, the limit then lifted):
#       the writer, restarted, halts (exit 3, "first messages"); so does a reader without a
#       checkpoint, naming --nats-from-current-start;
#   (g) a stream the registry does not know (an earlier replicant's): a reader without a
#       checkpoint refuses it unless --nats-from-current-start; a writer records it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP qw(decode_json);

my $work = rp_work();
my $src = rp_cluster('src');
my $srcc = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, v text)');

my $next = 0;
# rows(N): N rows inserted, each its own transaction; the insert LSN after them
sub rows
{
	my ($n) = @_;
	my $first = $next + 1;
	$next += $n;
	rp_psql($src, join('', map { "INSERT INTO t VALUES ($_, 'v$_');" } $first .. $next));
	return rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
}

my $runs = 0;
my ($rc, $err);
# write(SLOT, STREAM, ENDPOS[, ARG...]): the NATS sink writer of SLOT into STREAM up to
# ENDPOS, until it exits; status in $rc, stderr's file in $err
sub write_stream
{
	my ($slot, $stream, $endpos, @args) = @_;
	$runs++;
	$err = "$work/w-$slot-$runs.err";
	$rc = rp_replicant("w-$slot-$runs", -d => $srcc, -S => $slot, '--start', '--sink', $nats->sink_url,
		'--nats-stream', $stream, '--nats-subject-prefix', lc($stream), '--nats-ack-timeout', '2',
		'--state-dir', "$work/st-w-$slot", -E => $endpos, @args);
	return $rc;
}

# read_stream(STREAM, READER, LOG[, ARG...]): a reader of STREAM into the file log LOG
# up to the stream's last sequence; status in $rc
sub read_stream
{
	my ($stream, $reader, $log, @args) = @_;
	$runs++;
	my $last = $nats->last_seq($stream);
	$err = "$work/r-$reader-$runs.err";
	$rc = rp_replicant("r-$reader-$runs", '--source', $nats->sink_url, '--nats-stream', $stream,
		-S => $reader, '--state-dir', "$work/st-r-$reader", '--start', '--sink', "file:$log",
		'--endpos', ($last eq '' ? 0 : $last), @args);
	return $rc;
}

# inserts(LOG): the ids inserted in the file log, sorted, unique
sub inserts
{
	my ($log) = @_;
	return () unless -s $log;
	my %seen;
	for my $line (split /\n/, slurp($log))
	{
		my $r = eval { decode_json($line) } or next;
		$seen{ $r->{new}{id} } = 1 if ($r->{kind} // '') eq 'insert';
	}
	return sort { $a <=> $b } keys %seen;
}

sub info { my ($s) = @_; my ($r, $out) = $nats->tool($s, 'info'); return $r == 0 ? decode_json($out) : {}; }
sub registry { my ($s) = @_; my ($r, $out) = $nats->tool($s, 'registry'); return $r == 0 ? decode_json($out) : {}; }
sub errtext { return -e $err ? slurp($err) : ''; }
sub err_tail { my ($f, $n) = @_; my @l = -e $f ? split(/\n/, slurp($f)) : (); return join("\n", @l > $n ? @l[-$n .. -1] : @l); }

# halted(CASE, WANT_RC, PATTERN, WHAT): the last run exited WANT_RC naming PATTERN
sub halted
{
	my ($case, $want, $re, $what) = @_;
	is($rc, $want, "($case) exit $want") or diag(err_tail($err, 5));
	like(errtext(), $re, "($case) the error names $what") or diag(err_tail($err, 5));
	my ($l) = grep { /error/ } split /\n/, errtext();
	note("($case) " . substr($l // '', 0, 300));
}

# ---- (a) the writer records its stream
rp_replicant_ok([ -d => $srcc, -S => 'ia', '--create-slot' ], '(a) slot ia created');
my $lsn = rows(30);
is(write_stream('ia', 'IA', $lsn), 0, '(a) the writer of slot ia into IA exits 0') or diag(err_tail($err, 5));
my $reg = registry('IA');
my $made = info('IA')->{created} // -1;
is($reg->{slot} // '', 'ia', '(a) the registry entry of IA names slot ia');
is($reg->{created} // -2, $made, "(a) and the stream's creation time ($made)");

# ---- (b) the stream deleted: the restarted writer halts and does not make it again
is(($nats->tool('IA', 'delete-stream'))[0], 0, '(b) stream IA deleted');
$lsn = rows(10);
write_stream('ia', 'IA', $lsn);
halted('b', 3, qr/NATS stream "IA" does not exist: .*deleted/, 'the stream and that it was deleted');
ok(!info('IA')->{exists}, '(b) the writer did not make IA again');

# ---- (c) the stream made again by someone else: halt, nothing published
is(($nats->tool('IA', 'create', 'ia', -1, 3))[0], 0, '(c) stream IA made again');
write_stream('ia', 'IA', $lsn);
halted('c', 3, qr/NATS stream "IA" was made at .* but this slot's stream was made at .*made again/,
	'both creation times');
is($nats->last_seq('IA'), 0, '(c) nothing was published into the new IA');
is(registry('IA')->{created} // -2, $made, '(c) the registry still holds the first stream');

# ---- (d) the issue's reader: a stream deleted and made again with the later history
rp_replicant_ok([ -d => $srcc, -S => 'ib', '--create-slot' ], '(d) slot ib created');
my $first_id = $next + 1;
$lsn = rows(40);
is(write_stream('ib', 'IB', $lsn), 0, '(d) the writer of slot ib into IB exits 0') or diag(err_tail($err, 5));
my @all = inserts_expected($first_id, $next);
sub inserts_expected { my ($a, $b) = @_; return ($a .. $b); }
is(read_stream('IB', 'rb1', "$work/d1.log"), 0, '(d) reader rb1 of IB exits 0') or diag(err_tail($err, 5));
is(join(',', inserts("$work/d1.log")), join(',', @all), '(d) rb1 has every row of IB');
# keep IB's second half, make IB again from it (as a stream restored from a part): the
# table's description and every message from $half on (each row is a transaction of one
# message)
my $half = int($nats->last_seq('IB') / 2);
my @skip = map { $_->{seq} } grep { ($_->{headers}{'Replicant-Op'} // '') ne 'relation' }
  map { decode_json($_) } split /\n/, scalar $nats->tool('IB', 'dump', 1, $half - 1);
my @keep = (($nats->tool('IB_SAVE', 'create-open', 'ib_save', 3))[0],
	($nats->tool('IB_SAVE', 'copy', 'IB', 'ib', 'ib_save', 1, $nats->last_seq('IB')))[0],
	($nats->tool('IB', 'delete-stream'))[0],
	($nats->tool('IB', 'create-open', 'ib', 3))[0]);
push @keep, ($nats->tool('IB', 'copy', 'IB_SAVE', 'ib_save', 'ib', 1, $nats->last_seq('IB_SAVE'), @skip))[0];
is("@keep", '0 0 0 0 0', "(d) IB deleted and made again holding its description and its messages from $half on");
$lsn = rows(5);
read_stream('IB', 'rb1', "$work/d1.log");
halted('d', 3, qr/NATS stream "IB" was made at .* but the stream slot "ib" wrote was made at/,
	'the stream made again (reader with a checkpoint)');
read_stream('IB', 'rb2', "$work/d2.log");
halted('d', 3, qr/NATS stream "IB" was made at .*--nats-from-current-start/,
	'the stream made again and the option (reader without a checkpoint)');
my @none = inserts("$work/d2.log");
is(scalar(@none), 0, '(d) the new reader wrote nothing');
is(read_stream('IB', 'rb3', "$work/d3.log", '--nats-from-current-start'), 0,
	'(d) with --nats-from-current-start the new reader exits 0') or diag(err_tail($err, 5));
like(errtext(), qr/read from its first whole transaction \(--nats-from-current-start\)/, '(d) and says what it skipped');
my @got = inserts("$work/d3.log");
ok(@got > 0 && @got < @all, '(d) it holds the part IB holds (' . scalar(@got) . ' of ' . scalar(@all) . ' rows)');

# ---- (e) limits that drop messages set while the writer runs
rp_replicant_ok([ -d => $srcc, -S => 'ic', '--create-slot' ], '(e) slot ic created');
rows(10);
my $wc = rp_consumer('wc', -d => $srcc, -S => 'ic', '--start', '-s', '1', '--sink', $nats->sink_url,
	'--nats-stream', 'IC', '--nats-subject-prefix', 'ic', '--state-dir', "$work/st-wc");
ok(rp_wait_until(sub { ($nats->last_seq('IC') || 0) >= 10 }, $wc), '(e) the writer of IC runs')
  or diag(slurp("$work/wc.err"));
is(($nats->tool('IC', 'max-age', 2))[0], 0, '(e) IC given a max age of 2 s');
my $more = 0;
ok(rp_wait_until(sub { rows(1); $more++; !$wc->alive }), "(e) the writer stops by itself ($more more rows)");
$wc->kill9_alive;
$rc = $wc->status;
$err = "$work/wc.err";
halted('e', 4, qr/NATS stream "IC" cannot hold this slot's changes: its limits drop old messages/, 'the limits');

# ---- (f) the first messages gone: the writer and a new reader halt
ok(rp_wait_until(sub { (info('IC')->{first_seq} // 0) > 1 }), '(f) IC\'s first messages expired');
is(($nats->tool('IC', 'max-age', 0))[0], 0, '(f) IC\'s max age lifted');
$lsn = rows(3);
write_stream('ic', 'IC', $lsn);
halted('f', 3, qr/NATS stream "IC" no longer holds its first messages \(its first sequence is \d+\)/,
	'its first sequence');
read_stream('IC', 'rc1', "$work/f1.log");
halted('f', 3, qr/NATS stream "IC" no longer holds its first messages.*--nats-from-current-start/,
	'the first sequence and the option (reader)');

# ---- (g) a stream the registry does not know
my @g = (($nats->tool('IG', 'create-open', 'ig', 3))[0],
	($nats->tool('IG', 'copy', 'IB_SAVE', 'ib_save', 'ig', 1, $nats->last_seq('IB_SAVE')))[0]);
is("@g", '0 0', '(g) stream IG holds a whole copy of the first IB, unregistered');
ok(!registry('IG')->{slot}, '(g) the registry has no entry for IG');
read_stream('IG', 'rg1', "$work/g1.log");
halted('g', 3, qr/NATS stream "IG" has no entry in the stream registry REPLICANT_STREAMS.*--nats-from-current-start/,
	'the missing entry and the option');
is(read_stream('IG', 'rg2', "$work/g2.log", '--nats-from-current-start'), 0,
	'(g) with --nats-from-current-start the reader exits 0') or diag(err_tail($err, 5));
is(join(',', inserts("$work/g2.log")), join(',', @all), '(g) and has every row of the first IB');

done_testing();
