
# Copyright: see the project's LICENSE.

# Fail-closed configuration, signals and the exec child's acknowledgement; was
# regress/t/signals.sh.
#
# Proves G3 (fail closed: refuse what cannot work, never wait for ever) and G2 (nothing is
# confirmed that the sink did not acknowledge) at the edges of the CLI:
#   1. Sizes that are negative, overflow or exceed their bound (--max-memory -5MB,
#      --max-spill -1, 99999999999TB, --batch-bytes 2GB, a negative number) are usage errors
#      (exit 2, "invalid value ... for option --NAME" and the --help hint), refused before
#      anything connects (the source given is unreachable: a run that got further would
#      exit 1 saying it could not connect).  So is every other usage error of option parsing
#      (an unknown or incomplete option, a plugin option replicant sets itself, a bad LSN or
#      enumerated value, options that do not go together, an unknown sink): each says
#      "replicant: error: ..." and then the --help hint.
#   2. --backfill with a plugin option that filters out its watermarks (include_messages
#      spelled false in any way the server accepts, or message_prefixes without
#      replicant.backfill) is refused the same way, naming the option.
#   3. An exec child that reads everything and never acknowledges: SIGTERM (and SIGINT)
#      stops the consumer (exit 0) although the child never answers, the slot and the
#      checkpoint are not advanced to the unit (idle WAL before it may be confirmed), and
#      the child, which ignores the end of its input, is not left behind: the consumer
#      reaps it and reports how it ended.
#   4. The same child with --exec-ack-timeout=2: the run halts (exit 3) naming the child's
#      command and pid, and again confirms nothing.
#   5. A child that answers garbage and then ignores the end of its input: the halt (exit 3)
#      still closes the sink, so the child is ended and reaped, not left running.
#   6. The stdout sink writing into a pipe whose reader never reads (the write blocks once
#      the pipe is full): SIGTERM stops it all the same, exit 0, nothing of the unit
#      checkpointed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use POSIX qw(mkfifo);

my $work    = rp_work();
my $nowhere = "host=/nonexistent-$$ connect_timeout=2";
my $hint    = 'Try "replicant --help" for more information.';

# ---- 1. sizes and numbers
sub usage_case
{
	my ($name, $want, @args) = @_;
	my $rc = rp_replicant("usage-$name", -d => $nowhere, -S => 's', '--start', '-n', @args);
	my $err = slurp("$work/usage-$name.err");
	is($rc, 2, "usage $name: replicant @args exits 2 (usage)");
	ok(index($err, $want) >= 0, "usage $name: stderr says: $want") or diag($err);
	ok(index($err, $hint) >= 0, "usage $name: the --help hint");
}
usage_case('mem', 'invalid value "-5MB" for option --max-memory', '--max-memory', '-5MB');
usage_case('spill', 'invalid value "-1" for option --max-spill', '--max-spill', '-1');
usage_case('shift', 'invalid value "99999999999TB" for option --max-memory', '--max-memory', '99999999999TB');
usage_case('wrap', 'invalid value "18446744073709551617" for option --max-spill', '--max-spill', '18446744073709551617');
usage_case('batch', 'invalid value "2GB" for option --batch-bytes', '--batch-bytes', '2GB');
usage_case('rec', 'invalid value "-1kB" for option --max-record-bytes', '--max-record-bytes', '-1kB');
usage_case('txns', 'invalid value "-5" for option --batch-txns', '--batch-txns', '-5');
usage_case('chunk', 'invalid value "4294967297" for option --snapshot-chunk-rows', '--snapshot-chunk-rows', '4294967297');
usage_case('unknown', 'replicant: error: unrecognized option "--no-such-option"', '--no-such-option');
usage_case('noarg', 'replicant: error: option "--sink" requires an argument', '--sink');
usage_case('optfmt', 'replicant: error: plugin option "format=x" is set by replicant itself', '-o', 'format=x');
usage_case('lsn', 'replicant: error: could not parse start position "zz"', '-I', 'zz');
usage_case('divergence', 'replicant: error: invalid value "x" for --on-divergence', '--on-divergence', 'x');
usage_case('drop', 'replicant: error: cannot use --create-slot or --start together with --drop-slot', '--drop-slot');
usage_case('aggonly', 'replicant: error: --aggregates-only needs at least one', '--aggregates-only', '--sink', 'postgres:');
usage_case('sink', 'replicant: error: unknown sink "kafka:x"', '--sink', 'kafka:x');

# ---- 2. a backfill whose watermarks cannot arrive
my $dest = "postgresql:///nowhere?host=/nonexistent-$$";
for my $v (qw(no n f off OFF 0 false FALSE of fa))
{
	usage_case("bf-$v", "-o include_messages=$v filters them out",
		'--sink', $dest, '--backfill', 'public.t', '-o', "include_messages=$v");
}
usage_case('bf-prefix',
	'with prefix "replicant.backfill", but -o message_prefixes=app,audit filters them out',
	'--sink', $dest, '--backfill', 'public.t', '-o', 'message_prefixes=app,audit');
usage_case('bf-quoted', 'but -o message_prefixes="Replicant.Backfill" filters them out',
	'--sink', $dest, '--backfill', 'public.t', '-o', 'message_prefixes="Replicant.Backfill"');
# and what lets them through is not refused (it gets as far as connecting)
for my $o ('include_messages=on', 'include_messages', 'message_prefixes=app,Replicant.Backfill')
{
	is(rp_replicant('bf-ok', -d => $nowhere, -S => 's', '--start', '-n', '--sink', $dest,
			'--backfill', 'public.t', '-o', $o),
		1, "--backfill with -o $o is accepted: exit 1 (it cannot connect)");
}

# ---- 3. and 4. an exec child that never acknowledges
my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, v text)');
my $never_ack = rp_root() . '/test/fixtures/never_ack.py';
my $key = 0;

# run_never_ack(NAME, {env}, ARG...): a consumer on slot NAME whose child never
# acknowledges; a transaction committed; returns once the child has the flush line (the
# consumer now waits) with (consumer, child pid, the unit's bound)
sub run_never_ack
{
	my ($name, $env, @args) = @_;
	rp_replicant_ok([ -d => $srcconn, -S => $name, '--create-slot' ], "$name: slot created");
	my $cmd = "exec python3 $never_ack $work/$name.jsonl $work/$name.pid";
	my $c = rp_consumer($name, { env => $env },
		-d => $srcconn, -S => $name, '--start', '-s', '1',
		'--state-dir', "$work/state-$name", '--sink', "exec:$cmd", @args);
	# the unit's bound: read after its commit, in a transaction of its own (rp_unacked)
	$key++;
	my $bound = rp_fence($src, "INSERT INTO t VALUES ($key, 'x')");
	ok(rp_wait_file_match("$work/$name.jsonl", qr/"kind":"flush"/, $c),
		"$name: the child got the unit (the consumer waits for its acknowledgement)")
	  or diag(slurp("$work/$name.err"));
	my $child = -e "$work/$name.pid" ? slurp("$work/$name.pid") : 0;
	return ($c, $child, $bound, $cmd);
}

# nothing of the unit confirmed or checkpointed (idle WAL before it may be), the child gone
sub check_unconfirmed
{
	my ($name, $child, $bound) = @_;
	is(rp_unacked($src, $name, "$work/state-$name/$name.checkpoint", $bound), '',
		"$name: without an acknowledgement nothing of the unit is confirmed or checkpointed");
	ok($child && !kill(0, $child), "$name: the exec child (pid $child) is not left running");
}

my ($c, $child, $bound, $cmd) = run_never_ack('term', {});
$c->signal('TERM');
is($c->wait_exit, 0, 'term: the consumer exits 0 after SIGTERM');
check_unconfirmed('term', $child, $bound);
my $err = slurp("$work/term.err");
ok(index($err, "(pid $child, command \"exec python3 $never_ack") >= 0,
	'term: stderr names the child that had not acknowledged') or diag($err);
like($err, qr/exec sink's child \(pid $child, .*\) was terminated by signal 15/,
	'term: stderr says how the child ended');

($c, $child, $bound) = run_never_ack('sigint', {});
$c->signal('INT');
is($c->wait_exit, 0, 'sigint: the consumer exits 0 after SIGINT');
check_unconfirmed('sigint', $child, $bound);

($c, $child, $bound, $cmd) = run_never_ack('timeout', {}, '--exec-ack-timeout=2');
is($c->wait_exit, 3, 'timeout: the consumer halts (exit 3) when the child does not acknowledge in 2 s');
check_unconfirmed('timeout', $child, $bound);
$err = slurp("$work/timeout.err");
ok(index($err, "exec sink's child (pid $child, command \"$cmd\") has not acknowledged unit 1 for 2 s") >= 0,
	"timeout: the halt names the child's command and pid") or diag($err);
ok(index($err, 'halted (sink)') >= 0, 'timeout: a sink halt');

($c, $child, $bound) = run_never_ack('garbage', { ANSWER => 'nack' });
is($c->wait_exit, 3, 'garbage: a child answering garbage halts the consumer (exit 3)');
check_unconfirmed('garbage', $child, $bound);
like(slurp("$work/garbage.err"), qr/exec sink's child \(pid $child, .*\) was terminated by signal 15/,
	'garbage: stderr says how the child ended');

# ---- 6. standard output into a reader that never reads
mkfifo("$work/stalled", 0600) or die "mkfifo: $!";
my $reader = RpTest::Proc->start(name => 'reader',
	cmd => [ 'python3', rp_root() . '/test/fixtures/stalled_reader.py', "$work/stalled", "$work/stalled.queued" ]);
rp_replicant_ok([ -d => $srcconn, -S => 'stalled', '--create-slot' ], 'stalled: slot created');
$c = rp_consumer('stalled', { stdout => "$work/stalled" },
	-d => $srcconn, -S => 'stalled', '--start', '-s', '1', '--state-dir', "$work/state-stalled");
# far more than a pipe holds, in one transaction: the sink's write blocks
$bound = rp_fence($src,
	"INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(100000, 101999) g");
# the pipe full (64kB on Linux): the rest of the 2MB unit waits in write()
sub queued { return -e "$work/stalled.queued" ? (slurp("$work/stalled.queued") || 0) : 0; }
ok(rp_wait_until(sub { queued() >= 65536 }, $c),
	'stalled: the consumer filled the pipe (its write blocks)') or diag('queued: ' . queued());
$c->signal('TERM');
is($c->wait_exit, 0, 'stalled: the consumer blocked in write exits 0 after SIGTERM');
is(rp_unacked($src, 'stalled', "$work/state-stalled/stalled.checkpoint", $bound), '',
	'stalled: nothing of the unit not written is confirmed or checkpointed');
$reader->kill9_alive;

done_testing();
