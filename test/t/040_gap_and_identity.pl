
# Copyright: see the project's LICENSE.

# Checkpoints of another source, and slots that cannot resume; was
# regress/t/gap_and_identity.sh.
#
# Proves G3 (fail-closed) for the resume checks: each case exits with status 3, a message
# naming the reason ("halted (identity)" or "halted (gap)"), the sink's log unchanged and
# the slot not acknowledged any further.
#   1. Identity: a state dir (library-owned checkpoint, stdout sink) and a file sink's log
#      (sink-owned checkpoint) made against cluster A, used against cluster B with a slot
#      of the same name -> halt naming both system ids. Also: the checkpoint's timeline is
#      not the source's (an edited checkpoint file), and a log used with another slot name.
#   2. Gap: the slot advanced past the checkpoint (pg_replication_slot_advance) -> halt
#      naming the slot's position and the checkpoint.
#   3. Gap: the slot invalidated (max_slot_wal_keep_size exceeded, wal_status lost).
#   4. Gap: the slot dropped -> "does not exist".
#   5. No false identity halt: a consumer without a checkpoint, started while its source
#      is down, retries, binds its first checkpoint once the source is up and streams; two
#      crashes of the source later it is still streaming, each time retrying after 1 s
#      (the backoff starts over after a connection that streamed).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use File::Copy qw(copy);
use Digest::MD5 qw(md5_hex);

my $work = rp_work();
my $runs = 0;
my $err  = '';
# consumer(NODE, EXPECTED_STATUS, ARG...): replicant --start -n on NODE; stderr in $err
sub consumer
{
	my ($node, $expect, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", { stdout => "$work/stdout.jsonl", append => 1 },
		-d => rp_conninfo($node), '--start', '-n', @args);
	$err = slurp("$work/run-$runs.err");
	is($rc, $expect, "run $runs (replicant @args) exits $expect") or diag($err);
}
sub err_has
{
	my ($text) = @_;
	ok(index($err, $text) >= 0, "run $runs: stderr says: $text") or diag($err);
}
sub lsn   { return rp_psql($_[0], 'SELECT pg_current_wal_lsn()'); }
sub sysid { return rp_psql($_[0], 'SELECT system_identifier FROM pg_control_system()'); }
sub changes
{
	rp_psql($_[0], "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, $_[1]) g");
}
sub setup
{
	my ($node, $name) = @_;
	rp_psql($node, 'CREATE TABLE t (id int, v text)');
	rp_replicant_ok([ -d => rp_conninfo($node), -S => $_, '--create-slot' ], "$name: slot $_ created")
	  for qw(s f);
}
sub file_md5 { return md5_hex(slurp($_[0])); }

my $A = rp_cluster('A', "max_slot_wal_keep_size = '1MB'");
my $B = rp_cluster('B');
setup($A, 'A');
setup($B, 'B');
my $A_ID = sysid($A);
my $B_ID = sysid($B);
isnt($A_ID, $B_ID, 'the two clusters have different system ids');

# ---- checkpoints made against A: slot s with the stdout sink, slot f with the file sink
changes($A, 10);
my $end = lsn($A);
consumer($A, 0, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-A", -E => $end);
consumer($A, 0, -S => 'f', '--sink', "file:$work/A.jsonl", '--state-dir', "$work/state-A", -E => $end);
ok(-s "$work/state-A/s.checkpoint", 'a checkpoint file for slot s');
like(slurp("$work/state-A/s.checkpoint"), qr/sysid=$A_ID /, "the checkpoint file names system $A_ID");
like(slurp("$work/A.jsonl"), qr/"system_id":"$A_ID"/, "the file log's checkpoint names system $A_ID");

# ---- 1. identity: A's checkpoints against B
changes($B, 10);
system('cp', '-r', "$work/state-A", "$work/state-B") == 0 or die "cp -r";
copy("$work/A.jsonl", "$work/B.jsonl") or die "copy: $!";
my $sum_B   = file_md5("$work/B.jsonl");
my $flush_s = rp_slot_confirmed($B, 's');
my $flush_f = rp_slot_confirmed($B, 'f');
consumer($B, 3, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-B");
err_has("checkpoint belongs to system $A_ID, but the source is system $B_ID");
err_has('halted (identity)');
consumer($B, 3, -S => 'f', '--sink', "file:$work/B.jsonl", '--state-dir', "$work/state-B");
err_has("checkpoint belongs to system $A_ID, but the source is system $B_ID");
err_has('halted (identity)');
is(file_md5("$work/B.jsonl"), $sum_B, 'the identity halt did not change the file log');
is(slurp("$work/state-B/s.checkpoint"), slurp("$work/state-A/s.checkpoint"),
	'the identity halt did not rewrite the checkpoint');
is(rp_slot_confirmed($B, 's'), $flush_s, "B's slot s did not move");
is(rp_slot_confirmed($B, 'f'), $flush_f, "B's slot f did not move");
# another timeline (the checkpoint edited: tli=1 -> tli=2)
{
	my $t = slurp("$work/state-B/s.checkpoint");
	$t =~ s/ tli=1 / tli=2 /g;
	open(my $fh, '>', "$work/state-B/s.checkpoint") or die $!;
	print $fh $t;
	close $fh;
}
consumer($A, 3, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-B");
err_has('checkpoint was taken on timeline 2, but the source is on timeline 1');
# another slot: A's log resumed with slot s
copy("$work/A.jsonl", "$work/A-other.jsonl") or die "copy: $!";
consumer($A, 3, -S => 's', '--sink', "file:$work/A-other.jsonl", '--state-dir', "$work/state-other");
err_has('checkpoint belongs to slot "f", not "s"');
is(slurp("$work/A-other.jsonl"), slurp("$work/A.jsonl"), 'the slot mismatch did not change the file log');

# ---- 2. gap: slot f advanced past the log's checkpoint
changes($A, 10);
my ($ck) = (grep { /"kind":"checkpoint"/ } split /\n/, slurp("$work/A.jsonl"))[-1] =~ m{"end_lsn":"([0-9A-F/]*)"};
my $adv = lsn($A);
rp_psql($A, "SELECT pg_replication_slot_advance('f', '$adv')");
$adv = rp_slot_confirmed($A, 'f');
my $sum_A = file_md5("$work/A.jsonl");
consumer($A, 3, -S => 'f', '--sink', "file:$work/A.jsonl", '--state-dir', "$work/state-A");
err_has("replication slot \"f\" is at $adv, past the checkpoint $ck");
err_has('halted (gap)');
is(file_md5("$work/A.jsonl"), $sum_A, 'the gap halt did not change the file log');
# and again: a halt is not a one-off
consumer($A, 3, -S => 'f', '--sink', "file:$work/A.jsonl", '--state-dir', "$work/state-A");
err_has("past the checkpoint $ck");

# ---- 3. gap: slot s invalidated (more WAL than max_slot_wal_keep_size, then a checkpoint)
my $ck_before = slurp("$work/state-A/s.checkpoint");
for (1 .. 4)
{
	changes($A, 1000);
	rp_psql($A, 'SELECT pg_switch_wal()');
}
rp_psql($A, 'CHECKPOINT');
my $wal_status = rp_psql($A, "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 's'");
SKIP:
{
	skip("slot s is \"$wal_status\", not lost, after 4 WAL switches and a checkpoint: invalidation not checked", 4)
	  unless $wal_status eq 'lost';
	consumer($A, 3, -S => 's', '--sink', 'stdout', '--state-dir', "$work/state-A");
	err_has('replication slot "s" has been invalidated (wal_status lost)');
	err_has('halted (gap)');
	is(slurp("$work/state-A/s.checkpoint"), $ck_before, 'the invalidation halt did not move the checkpoint');
}

# ---- 4. gap: the slot is gone
rp_psql($A, "SELECT pg_drop_replication_slot('f')");
consumer($A, 3, -S => 'f', '--sink', "file:$work/A.jsonl", '--state-dir', "$work/state-A");
err_has('replication slot "f" does not exist');
err_has('halted (gap)');
is(file_md5("$work/A.jsonl"), $sum_A, 'the missing-slot halt did not change the file log');

# ---- 5. started while the source is down: retries, then binds to the source it finds
rp_psql($B, "SELECT pg_create_logical_replication_slot('late', 'replicant')");
$B->stop('immediate');
my $late = rp_consumer('late', -d => rp_conninfo($B), -S => 'late', '--start', '-s', '1',
	'--sink', "file:$work/late.jsonl", '--state-dir', "$work/state-late");
# the source starts once the consumer found it down (and said it retries), however long that took
ok(rp_wait_file_match("$work/late.err", qr/reconnecting in/, $late),
	'the consumer started while its source is down reports a retry') or diag(slurp("$work/late.err"));
$B->start;
sub rows { return -e "$work/late.jsonl" ? scalar(() = slurp("$work/late.jsonl") =~ /"table":"t"/g) : 0; }
for my $round (1 .. 3)
{
	changes($B, 1);
	ok(rp_wait_until(sub { rows() >= $round }, $late), "round $round: the row reached the log");
	ok($late->alive, "round $round: the consumer still runs") or diag(slurp("$work/late.err"));
	if ($round < 3)
	{
		$B->stop('immediate');
		$B->start;
	}
}
$late->signal('TERM');
is($late->wait_exit, 0, 'the late consumer exits 0 after SIGTERM') or diag(slurp("$work/late.err"));
my $late_err = slurp("$work/late.err");
unlike($late_err, qr/halted|checkpoint belongs/, 'no false halt') or diag($late_err);
is(scalar(() = $late_err =~ /reconnecting in 1 s/g), 3,
	'every retry came after 1 s (the backoff starts over)') or diag($late_err);

done_testing();
