
# Copyright: see the project's LICENSE.

# The origin floor of the append sinks (issue 49, item 1). Before anything is delivered to
# a file log, stdout or an exec child that has no checkpoint yet, the run records where
# the stream starts (the slot's confirmed position, or --startpos) as the first
# checkpoint: in the log itself (the file sink's first line) or in the state dir (stdout,
# exec). A slot dropped and made again under such a log starts later, past the floor, and
# what was committed in between would never come: the next start halts `gap` naming the
# floor. The case: a first run that received a transaction and was killed with SIGKILL
# before delivering it (so before any checkpoint or idle position), then the slot made
# again (the consumer of 4137a7e started from the new slot's start and exited 0 without
# that transaction's rows).
#
# And the file log's frontier: a whole data line after the last checkpoint line of a
# transaction at or below that checkpoint's commit is not the torn tail of a later unit
# (which is cut, as 050 proves under SIGKILL), but an append by another writer or an
# edit: the start halts (`sink`), cutting nothing and confirming nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Digest::MD5 qw(md5_hex);

my $work = rp_work();
my $node = rp_cluster('src');
my $conn = rp_conninfo($node);
rp_psql($node, 'CREATE TABLE t (id int PRIMARY KEY, v text)');

my $runs = 0;
my $err  = '';
# run(EXPECTED_STATUS, NAME, ARG...): replicant --start -n; its stderr in $err
sub run
{
	my ($expect, $name, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", -d => $conn, '--start', '-n', @args);
	$err = slurp("$work/run-$runs.err");
	is($rc, $expect, "$name: exits $expect") or diag($err);
}
sub lsn { return rp_psql($node, 'SELECT pg_current_wal_lsn()'); }

# the exec child: acknowledges every flush, keeps every line it is given
my $child = "$work/child.pl";
open(my $fh, '>', $child) or die "$child: $!";
print $fh <<'PERL';
$| = 1;
open(my $o, '>>', $ARGV[0]) or die "$ARGV[0]: $!";
while (<STDIN>)
{
	print $o $_;
	print "ack $1\n" if /^\{"kind":"flush","seq":(\d+)/;
}
close $o;
PERL
close $fh;

my %sink = (
	file   => [ '--sink', "file:$work/floor.jsonl" ],
	exec   => [ '--sink', "exec:perl $child $work/exec.jsonl" ],
	stdout => [ '--sink', 'stdout' ]);
my $floor_of = sub {
	my ($kind, $slot) = @_;
	if ($kind eq 'file')
	{
		my ($first) = split /\n/, (-e "$work/floor.jsonl" ? slurp("$work/floor.jsonl") : '');
		return ($first // '') =~ /^\{"kind":"checkpoint",.*"slot":"$slot","commit_lsn":"0\/0","end_lsn":"([^"]+)"/ ? $1 : '';
	}
	my $f = "$work/st-$kind/$slot.checkpoint";
	return -e $f && slurp($f) =~ / slot=$slot commit=0\/0 end=(\S+)/ ? $1 : '';
};
for my $kind (sort keys %sink)
{
	my $slot = "fl_$kind";
	rp_replicant_ok([ -d => $conn, -S => $slot, '--create-slot' ], "$kind: slot $slot created");
	my $floor = rp_slot_confirmed($node, $slot);

	# a first run that receives a transaction but never delivers it (its batch waits for
	# ten minutes), killed with SIGKILL: nothing was delivered, no idle position was ever
	# recorded, only the floor
	rp_psql($node, "INSERT INTO t SELECT g, '$kind' FROM generate_series(1, 10) g ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v");
	my $c = rp_consumer("first-$kind", -d => $conn, -S => $slot, '--start', '--state-dir', "$work/st-$kind",
		'--batch-ms', '600000', '-v', @{ $sink{$kind} });
	ok(rp_wait_until(sub { $floor_of->($kind, $slot) ne '' }, $c),
		"$kind: the first run records the floor before it delivers anything") or diag(slurp("$work/first-$kind.err"));
	is($floor_of->($kind, $slot), $floor, "$kind: ... the slot's start, $floor");
	ok(rp_wait_until(sub { slurp("$work/first-$kind.err") =~ /streaming from slot/ }, $c), "$kind: ... and streams");
	ok($c->kill9_alive, "$kind: the first run is killed with SIGKILL");

	# the slot made again: its start is past the transaction never delivered
	rp_psql($node, "SELECT pg_drop_replication_slot('$slot')");
	rp_replicant_ok([ -d => $conn, -S => $slot, '--create-slot' ], "$kind: slot $slot made again");
	my $again = rp_slot_confirmed($node, $slot);
	run(3, "$kind: a start under the slot made again", -S => $slot, '--state-dir', "$work/st-$kind",
		-E => $again, @{ $sink{$kind} });
	like($err, qr/replication slot "$slot" is at \Q$again\E, past \Q$floor\E, where this sink's history begins \(its origin floor, with no transaction delivered since\): the slot was made again or advanced after it/,
		"$kind: ... halting gap, naming the slot's start and the floor") or diag($err);
	like($err, qr/halted \(gap\)/, "$kind: ... halted (gap)");
	is(rp_slot_confirmed($node, $slot), $again, "$kind: ... and the slot did not move");
}

# ---- the frontier: a stale data line appended after the last checkpoint line
rp_replicant_ok([ -d => $conn, -S => 'fr', '--create-slot' ], 'slot fr created');
rp_psql($node, q{INSERT INTO t SELECT g, 'fr' FROM generate_series(101, 120) g});
rp_psql($node, q{UPDATE t SET v = 'fr2' WHERE id > 100});
my $end = lsn();
run(0, 'the frontier log streams two transactions', -S => 'fr', '--state-dir', "$work/st-fr",
	'--sink', "file:$work/fr.jsonl", -E => $end);
my $log = slurp("$work/fr.jsonl");
my ($stale) = $log =~ /^(\{"kind":"insert",[^\n]*)$/m;
ok(defined $stale, 'the log holds an insert line');
open($fh, '>>', "$work/fr.jsonl") or die $!;
print $fh "$stale\n";
close $fh;
my $sum = md5_hex(slurp("$work/fr.jsonl"));
my $confirmed = rp_slot_confirmed($node, 'fr');
rp_psql($node, q{INSERT INTO t VALUES (200, 'after')});
run(3, 'a start on a log with a stale line after its checkpoint', -S => 'fr', '--state-dir', "$work/st-fr",
	'--sink', "file:$work/fr.jsonl");
like($err, qr/file sink log "[^"]*fr\.jsonl" diverges from its last checkpoint line: the line at byte \d+, after it, is of the transaction at commit [0-9A-F]+\/[0-9A-F]+, which that checkpoint \(commit [0-9A-F]+\/[0-9A-F]+\) says the log already holds/,
	'... halting, naming the line and both commits') or diag($err);
is(md5_hex(slurp("$work/fr.jsonl")), $sum, '... the log unchanged');
is(rp_slot_confirmed($node, 'fr'), $confirmed, '... and the slot did not move');

# the line taken away again: the log goes on
open($fh, '>', "$work/fr.jsonl") or die $!;
print $fh $log;
close $fh;
my $end2 = lsn();
run(0, 'the same log without the stale line streams on', -S => 'fr', '--state-dir', "$work/st-fr",
	'--sink', "file:$work/fr.jsonl", -E => $end2);
like(slurp("$work/fr.jsonl"), qr/"kind":"insert"[^\n]*"id":200/, '... the change after it arrives');

done_testing();
