
# Copyright: see the project's LICENSE.

# A checkpoint is checked before it is trusted, and a damaged file log is not "repaired";
# was regress/t/checkpoint_safety.sh.
#
# Proves G3 (fail-closed) and G2 (ack discipline) for checkpoints read back from a sink
# (issue 11). Each case exits with status 3 naming the reason, the slot's
# confirmed_flush_lsn does not move, and the checkpoint's home is left as it was:
#   1. The library-owned checkpoint file (stdout sink) edited to commit=FFFF/0
#      end=FFFF/0, far past the server's WAL: halts naming both positions (before, the
#      run confirmed the slot at FFFF/0, and every change after that point was skipped).
#   2. The file sink's last checkpoint line so edited (still a well-formed line).
#   3. The mirror's replicant.checkpoint row so edited.
#   4. One byte changed inside the file log's last checkpoint line (not a torn tail: the
#      rows before it were acknowledged): halts naming the damage, the log byte-identical
#      (before, recovery cut the log from 22 lines to 11, then halted with gap).
# Then each slot still streams from where it was once its checkpoint is put back: nothing
# was lost.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Digest::MD5 qw(md5_hex);

my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

my $runs = 0;
my $err  = '';
# consumer(EXPECTED_STATUS, ARG...): a run of replicant --start -n, its stdout appended
# to stdout.jsonl; -E bounds a run that would trust the checkpoint (it then ends at the
# endpos instead of streaming on). Its stderr in $err.
sub consumer
{
	my ($expect, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", { stdout => "$work/stdout.jsonl", append => 1 },
		-d => $srcconn, '--start', '-n', @args);
	$err = slurp("$work/run-$runs.err");
	is($rc, $expect, "run $runs (replicant @args) exits $expect") or diag($err);
}
sub err_has
{
	my ($text) = @_;
	ok(index($err, $text) >= 0, "run $runs: stderr says: $text") or diag($err);
}
sub lsn { return rp_psql($src, 'SELECT pg_current_wal_lsn()'); }
sub changes
{
	rp_psql($src, "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, $_[0]) g");
}
# one transaction per row: a unit (and a checkpoint line) each with --batch-txns 1
sub txns { rp_psql($src, "INSERT INTO t VALUES (1, 'x')") for 1 .. $_[0]; }
sub unchanged
{
	my ($slot, $flush, $what) = @_;
	is(rp_slot_confirmed($src, $slot), $flush, "$what: slot $slot did not move");
}
sub file_md5 { return md5_hex(slurp($_[0])); }
sub edit_file
{
	my ($file, $code) = @_;
	my $text = slurp($file);
	$text = $code->($text);
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $text;
	close $fh;
}
# the last line of a text ending in a newline, edited by CODE
sub edit_last_line
{
	my ($file, $code) = @_;
	edit_file($file, sub {
		my @lines = split /(?<=\n)/, $_[0];
		local $_ = $lines[-1];
		$code->();
		$lines[-1] = $_;
		return join('', @lines);
	});
}
sub rows_in { return scalar(() = slurp($_[0]) =~ /"table":"t"/g); }

rp_psql($src, 'CREATE TABLE t (id int, v text); ALTER TABLE t REPLICA IDENTITY FULL');
for my $slot (qw(s f m))
{
	rp_replicant_ok([ -d => $srcconn, -S => $slot, '--create-slot' ], "slot $slot created");
}

# ---- a checkpoint in each home, then more changes for the slots to hold
changes(10);
my $end = lsn();
consumer(0, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-s", -E => $end);
consumer(0, -S => 'f', '--sink', "file:$work/f.jsonl", '--state-dir', "$work/state-f", -E => $end);
consumer(0, -S => 'm', '--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m", -E => $end);
changes(10);
my $server_end = lsn();
$end = $server_end;

# ---- 1. the checkpoint file ahead of the server
my $ck    = "$work/state-s/s.checkpoint";
my $good  = slurp($ck);
my $flush = rp_slot_confirmed($src, 's');
edit_file($ck, sub { (my $t = $_[0]) =~ s{commit=[0-9A-F/]+ end=[0-9A-F/]+}{commit=FFFF/0 end=FFFF/0}; $t });
my $edited = slurp($ck);
like($edited, qr{end=FFFF/0}, 'the checkpoint file is edited to FFFF/0');
consumer(3, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-s", -E => $end);
err_has("is ahead of the server's WAL flush position");
err_has('FFFF/0');
err_has('halted (identity)');
unchanged('s', $flush, 'checkpoint file ahead');
is(slurp($ck), $edited, 'the halt did not rewrite the checkpoint file');
# the position named is the server's, at or past what it had before the run
my ($named) = $err =~ m{flush position ([0-9A-F]+/[0-9A-F]+)};
ok(defined $named && !rp_lsn_lt($named, $server_end) && rp_lsn_lt($named, 'FFFF/0'),
	"the halt names the server's position (" . ($named // 'none') . "; its WAL was at $server_end)");
edit_file($ck, sub { $good });

# ---- 2. the file log's last checkpoint line ahead of the server
my $log = "$work/f.jsonl";
$flush = rp_slot_confirmed($src, 'f');
edit_last_line($log, sub {
	s{"commit_lsn":"[0-9A-F/]+","end_lsn":"[0-9A-F/]+"}{"commit_lsn":"FFFF/0","end_lsn":"FFFF/0"};
});
like((split /\n/, slurp($log))[-1], qr{"end_lsn":"FFFF/0"}, "the log's last checkpoint line is edited to FFFF/0");
my $sum = file_md5($log);
consumer(3, -S => 'f', '--sink', "file:$log", '--state-dir', "$work/state-f", -E => $end);
err_has("is ahead of the server's WAL flush position");
err_has('halted (identity)');
unchanged('f', $flush, 'log checkpoint ahead');
is(file_md5($log), $sum, 'the halt did not change the file log');

# ---- 3. the mirror's checkpoint row ahead of the server
sub row { return rp_psql($dst, "SELECT commit_lsn, end_lsn FROM replicant.checkpoint WHERE slot = 'm'"); }
my $good_row = row();
isnt($good_row, '', 'the mirror holds a checkpoint row for slot m');
$flush = rp_slot_confirmed($src, 'm');
rp_psql($dst, "UPDATE replicant.checkpoint SET commit_lsn = 'FFFF/0', end_lsn = 'FFFF/0' WHERE slot = 'm'");
my $rows_before = rp_psql($dst, 'SELECT count(*) FROM public.t');
consumer(3, -S => 'm', '--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m", -E => $end);
err_has("is ahead of the server's WAL flush position");
err_has('halted (identity)');
unchanged('m', $flush, 'mirror checkpoint row ahead');
is(row(), 'FFFF/0|FFFF/0', 'the halt did not change the checkpoint row');
is(rp_psql($dst, 'SELECT count(*) FROM public.t'), $rows_before, 'the halt applied no changes');

# ---- 4. one byte changed inside the file log's last checkpoint line
my $dlog = "$work/d.jsonl";
rp_replicant_ok([ -d => $srcconn, -S => 'd', '--create-slot' ], 'slot d created');
txns(11);
$end = lsn();
consumer(0, -S => 'd', '--sink', "file:$dlog", '--state-dir', "$work/state-d", '--batch-txns', '1', -E => $end);
is(rows_in($dlog), 11, 'the log holds 11 rows');
my $lines = () = slurp($dlog) =~ /\n/g;
like((split /\n/, slurp($dlog))[-1], qr/^\{"kind":"checkpoint",/, 'the log ends with a checkpoint line');
$flush = rp_slot_confirmed($src, 'd');
# "timeline" -> "timelinE": the line is no checkpoint line any more, and not a torn write
edit_last_line($dlog, sub { s/"timeline"/"timelinE"/; });
$sum = file_md5($dlog);
txns(2);
$end = lsn();
consumer(3, -S => 'd', '--sink', "file:$dlog", '--state-dir', "$work/state-d", '--batch-txns', '1', -E => $end);
err_has('is damaged: a damaged checkpoint line');
is(file_md5($dlog), $sum, "recovery did not change the damaged log (it had $lines lines)");
unchanged('d', $flush, 'damaged checkpoint line');

# ---- each checkpoint put back: streaming resumes where it was, nothing lost or repeated
edit_last_line($dlog, sub { s/"timelinE"/"timeline"/; });
consumer(0, -S => 'd', '--sink', "file:$dlog", '--state-dir', "$work/state-d", '--batch-txns', '1', -E => $end);
is(rows_in($dlog), 13, 'after the repair the log holds 13 rows');
consumer(0, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-s", -E => $end);
my ($gc, $ge) = split /\|/, $good_row;
rp_psql($dst, "UPDATE replicant.checkpoint SET (commit_lsn, end_lsn) = ('$gc', '$ge') WHERE slot = 'm'");
consumer(0, -S => 'm', '--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state-m", -E => $end);
rp_compare_tables($src, $dst, 't');

done_testing();
