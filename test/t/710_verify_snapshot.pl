# Copyright: see the project's LICENSE.

# `replicant verify-snapshot` on generated envelope files; was regress/t/verify_snapshot.sh.
#
# Proves the backfill promise of DESIGN.md ("let the receiver tell a complete dump from a
# truncated one") at the CLI, and G4 (value-free) for its messages. No server is needed:
# the frames are generated here in the envelope's format (docs/sinks.md), each record
# carrying a canary value.
#   1. A complete dump of 2000 rows, its frames shuffled, about a third of them delivered
#      twice, spread over two files and mixed with change, checkpoint and flush lines:
#      "complete rows=2000", exit 0; --rows prints the 2000 records in seq order, once each,
#      with the oversize stubs (every 100th row) left out. Either file alone is not complete.
#   2. The same with one row frame lost: "truncated ... missing=1 (first missing seq S)",
#      exit 4; --rows refuses it (exit 4, nothing on stdout).
#   3. Without the end frame: "open rows_seen=N", exit 5; with a truncated dump beside it,
#      exit 4 (truncated wins).
#   4. A duplicate of one seq with another record: "conflict seq=S", exit 4.
#   5. An empty table (begin, end): "complete rows=0", exit 0.
#   6. Usage (2), an unreadable file (1), a malformed line (warned with file:line, skipped).
#   7. A dump whose records hold json values nested 5,000 and 100,000 deep (PostgreSQL's json
#      accepts such nesting): "complete rows=3", exit 0; --rows prints the records unchanged.
# The stderr of every run is searched for the canary: it must never appear.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use List::Util qw(shuffle);

my $CANARY   = 'CANARY-77c2f0b1';
my $ROWS     = 2000;
my $ID       = '0190b9b2-6a1f-7c3d-8e4f-5a6b7c8d9e0f';
my $ID_EMPTY = '0190b9b2-6a1f-7c3d-8e4f-5a6b7c8d9e10';
my $ID_DEEP  = '0190b9b2-6a1f-7c3d-8e4f-5a6b7c8d9e11';
my $AT       = '2026-11-30T01:02:03.456Z';
my $work     = rp_work();
# the shuffle is the same on every run (the script's shuf --random-source=<(yes))
srand(20261130);

sub spew
{
	my ($file, @lines) = @_;
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh @lines;
	close $fh;
	return;
}

# frame(KIND, ID, STORE, SEQ, REST): one frame line (REST: the kind's own fields, leading comma)
sub frame
{
	my ($kind, $id, $store, $seq, $rest) = @_;
	return qq({"kind":"$kind","snapshot_id":"$id","snapshot_at":"$AT","timestamp":"$AT","store":"$store","seq":$seq$rest}\n);
}
sub record { my ($i) = @_; return qq({"id":$i,"secret":"$CANARY-$i","t":"\\u00e9"}); }

# the records of the dump, in seq order (stubs left out): what --rows must print
my @expected_rows = map { record($_) . "\n" } grep { $_ % 100 != 99 } 0 .. $ROWS - 1;
# the frames: begin, rows (every 100th an oversize stub), end
my @frames = (frame('begin', $ID, 'public.item', 0, qq(,"total":$ROWS)));
for my $i (0 .. $ROWS - 1)
{
	push @frames, $i % 100 == 99
	  ? frame('oversize', $ID, 'public.item', $i, qq(,"bytes":123456,"row_key":{"id":$i}))
	  : frame('row', $ID, 'public.item', $i, ',"record":' . record($i));
}
push @frames, frame('end', $ID, 'public.item', $ROWS, qq(,"row_count":$ROWS,"completed_at":"2026-11-30T01:02:09.001Z"));
is(scalar @frames, $ROWS + 2, 'generated ' . ($ROWS + 2) . ' frames');

# deliver(FRAMES, OUT1, OUT2): shuffled, a third repeated, split over two files, mixed with
# lines of the change stream
sub deliver
{
	my ($frames, $out1, $out2) = @_;
	my @all = @$frames;
	push @all, @{$frames}[ grep { ($_ + 1) % 3 == 0 } 0 .. $#$frames ];
	for my $i (1 .. 50)
	{
		my ($c, $e) = (sprintf('0/%X', $i * 4096), sprintf('0/%X', $i * 4096 + 40));
		push @all,
		  qq({"kind":"insert","commit_lsn":"$c","end_lsn":"$e","xid":) . (700 + $i)
		  . qq(,"commit_time":"$AT","schema":"public","table":"item","new":{"id":$i,"secret":"$CANARY"}}\n),
		  qq({"kind":"checkpoint","system_id":"7713770514009019979","timeline":1,"slot":"s","commit_lsn":"$c","end_lsn":"$e"}\n),
		  qq({"kind":"flush","seq":$i,"end_lsn":"$e"}\n);
	}
	@all = shuffle(@all);
	my $half = int(@all / 2);
	spew($out1, @all[ 0 .. $half - 1 ]);
	spew($out2, @all[ $half .. $#all ]);
	return;
}

# verify(ARG...): replicant verify-snapshot ARG...; (exit status, stdout, stderr), and a check
# that the canary is not in its stderr
my $runs = 0;
sub verify
{
	my @args = @_;
	$runs++;
	my $rc = rp_replicant("verify-$runs", { stdout => "$work/verify-$runs.out" }, 'verify-snapshot', @args);
	my ($out, $err) = (slurp("$work/verify-$runs.out"), slurp("$work/verify-$runs.err"));
	chomp(my $o = $out);
	unlike($err, qr/\Q$CANARY\E/, "run $runs (verify-snapshot " . join(' ', map { s{^\Q$work\E/}{}r } @args)
		  . '): no value on stderr');
	return ($rc, $o, $err, $out);
}

# ---- 1. complete
deliver(\@frames, "$work/log.1", "$work/log.2");
my ($rc, $out, $err, $raw) = verify("$work/log.1", "$work/log.2");
is($rc, 0, 'complete dump over two files: exit 0') or diag("$out\n$err");
is($out, "$ID public.item complete rows=$ROWS", "complete dump: \"complete rows=$ROWS\"");
($rc, $out, $err, $raw) = verify('--rows', $ID, "$work/log.2", "$work/log.1");
is($rc, 0, '--rows of a complete dump: exit 0') or diag($err);
ok($raw eq join('', @expected_rows), '--rows prints the records in seq order, once each, stubs left out');
is(scalar(() = $raw =~ /\n/g), $ROWS - $ROWS / 100, '--rows printed ' . ($ROWS - $ROWS / 100) . ' lines');
# either file alone is not complete
($rc) = verify("$work/log.1");
ok($rc == 4 || $rc == 5, "half the frames: not complete (exit 4 or 5: $rc)");

# ---- 2. one row lost
my $lost = 1234;
my @frames_lost = grep { !/"seq":$lost,/ } @frames;
deliver(\@frames_lost, "$work/lost.1", "$work/lost.2");
($rc, $out, $err) = verify("$work/lost.1", "$work/lost.2");
is($rc, 4, 'a lost row: exit 4') or diag("$out\n$err");
is($out, "$ID public.item truncated rows=$ROWS missing=1 (first missing seq $lost)",
	'a lost row: "truncated", the missing count and the first missing seq');
($rc, $out) = verify('--rows', $ID, "$work/lost.1", "$work/lost.2");
is($rc, 4, '--rows of a truncated dump: exit 4');
is($out, '', '--rows of a truncated dump prints no row');

# ---- 3. no end frame
spew("$work/frames_open", grep { !/"kind":"end"/ } @frames);
($rc, $out, $err) = verify("$work/frames_open");
is($rc, 5, 'no end frame: exit 5') or diag("$out\n$err");
is($out, "$ID public.item open rows_seen=$ROWS", 'no end frame: "open rows_seen"');
($rc) = verify('--rows', $ID, "$work/frames_open");
is($rc, 5, '--rows of an open dump: exit 5');
# an open dump beside a truncated one: 4 wins
(my $other = $ID) =~ s/.$/1/;
spew("$work/frames_lost_other", map { s/\Q$ID\E/$other/r } @frames_lost);
($rc, $out) = verify("$work/frames_open", "$work/frames_lost_other");
is($rc, 4, 'an open dump beside a truncated one: exit 4 (truncated wins)');
ok((() = $out =~ / open /g) == 1 && (() = $out =~ / truncated /g) == 1,
	'open and truncated: one line each') or diag($out);

# ---- 4. conflicting duplicate
spew("$work/frames_conflict", @frames, map { s/"id":77,/"id":7777,/r } grep { /"seq":77,/ } @frames);
($rc, $out) = verify("$work/frames_conflict");
is($rc, 4, 'a conflicting duplicate: exit 4');
is($out, "$ID public.item conflict seq=77", 'a conflicting duplicate: "conflict seq=77"');

# ---- 5. empty table
spew("$work/empty", frame('begin', $ID_EMPTY, 'public.empty', 0, ',"total":0'),
	frame('end', $ID_EMPTY, 'public.empty', 0, ',"row_count":0,"completed_at":"2026-11-30T01:02:03.500Z"'));
($rc, $out) = verify("$work/empty", "$work/log.1", "$work/log.2");
is($rc, 0, 'an empty table beside a complete dump: exit 0');
is((split /\n/, $out)[1] // '', "$ID_EMPTY public.empty complete rows=0", 'an empty table: "complete rows=0"')
  or diag($out);
($rc, $out) = verify('--rows', $ID_EMPTY, "$work/empty");
is($rc, 0, '--rows of an empty table: exit 0');
is($out, '', '--rows of an empty table prints nothing');

# ---- 6. usage, I/O, malformed lines
($rc) = verify();
is($rc, 2, 'no file: exit 2');
($rc) = verify('--no-such-option', "$work/empty");
is($rc, 2, 'an unknown option: exit 2');
($rc) = verify('--rows', 'not-an-id', "$work/empty");
is($rc, 2, 'a bad --rows id: exit 2');
($rc, $out, $err) = verify("$work/empty", "$work/does-not-exist");
is($rc, 1, 'a missing file: exit 1');
like($err, qr/does-not-exist/, 'the missing file is named');
($rc, $out) = verify('--help');
is($rc, 0, '--help: exit 0');
ok($out =~ /Exit status:/ && $out =~ /  4  / && $out =~ /  5  /, '--help lists the exit statuses 4 and 5')
  or diag($out);
# a torn frame (cut mid-record, with the canary in it) is skipped with file:line named
my ($seq5) = grep { /"seq":5,/ } @frames;
spew("$work/torn", slurp("$work/empty"), substr($seq5, 0, 225), "\n");
($rc, $out, $err) = verify("$work/torn");
is($rc, 0, 'a torn foreign frame: exit 0');
like($err, qr/torn:3: invalid JSON at byte/, 'the torn line is named (file:line)');

# ---- 7. deeply nested values
# deep(N): a json value nested N deep, objects and arrays in turn
sub deep { my ($n) = @_; return '{"k":[' x ($n / 2) . qq("$CANARY") . ']}' x ($n / 2); }
my @deep_rows = ('{"id":0,"doc":' . deep(5000) . "}\n", '{"id":1,"doc":' . deep(100000) . "}\n",
	qq({"id":2,"doc":[]}\n));
spew("$work/deep", frame('begin', $ID_DEEP, 'public.deep', 0, ',"total":3'),
	(map { chomp(my $r = $deep_rows[$_]); frame('row', $ID_DEEP, 'public.deep', $_, ",\"record\":$r") } 0 .. 2),
	frame('end', $ID_DEEP, 'public.deep', 3, ',"row_count":3,"completed_at":"2026-11-30T01:02:04.000Z"'));
($rc, $out, $err) = verify("$work/deep");
is($rc, 0, 'a dump with values nested 5,000 and 100,000 deep: exit 0') or diag($err);
is($out, "$ID_DEEP public.deep complete rows=3", 'deeply nested values: "complete rows=3"');
($rc, $out, $err, $raw) = verify('--rows', $ID_DEEP, "$work/deep");
is($rc, 0, '--rows of a dump with deeply nested values: exit 0');
ok($raw eq join('', @deep_rows), '--rows prints the deeply nested records unchanged');

done_testing();
