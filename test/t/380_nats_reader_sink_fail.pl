
# Copyright: see the project's LICENSE.

# A reader of a JetStream stream halts like a slot consumer when its sink fails (issue 48):
# the run ends at once, exit 3, naming the failure and `halted (sink)`, with and without -n,
# and nothing past the last durable checkpoint is kept. Before the fix the reader hung,
# printing nothing, until SIGTERM.
#
# A writer streams the source's table into a 3-node JetStream stream and stops; then readers
# of that stream into sinks that fail on a row: a file log capped at 4 kB (EFBIG), a mirror
# whose destination table's CHECK rejects a value (SQLSTATE 23514), an exec child that exits
# 1 at the first unit, standard output on /dev/full (ENOSPC). (A NATS sink and the aggregates
# are not here: aggregates are the mirror's sink, and a NATS sink's failure is a publish
# error the same delivery thread reports.) Each runs once as a service (no -n: it would wait for more) and once
# with -n (it would end at the stream's end): each exits 3 within the timeout by itself, and
# its stderr names the sink's failure and "halted (sink)". The mirror's destination holds none
# of the rejected transaction.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work   = rp_work();
my $SLOT   = 'rsf';
my $STREAM = 'RSF';
my $PREFIX = 'rsf';

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
my $nats = RpTest::Nats->start(3);

rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); CREATE TABLE fence (id serial PRIMARY KEY)');
rp_psql($dst, 'CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL CHECK (v < 50)); CREATE TABLE fence (id serial PRIMARY KEY)');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");
rp_psql($src, 'INSERT INTO t SELECT i, i FROM generate_series(1, 40) i');
rp_psql($src, 'INSERT INTO t SELECT i, i FROM generate_series(41, 100) i');
my $fence = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--start', '--endpos', $fence, '--sink', $nats->sink_url,
		'--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX, '--state-dir', "$work/st-writer" ],
	'the writer streams the source into the stream and ends at the fence');

my @source = ('--source', $nats->sink_url, '--nats-stream', $STREAM);
# each case: the sink's options, and how the process is started (a file log that may not
# grow past 4 kB: EFBIG on a write once the log holds the first transactions, SIGXFSZ
# ignored as the shell's trap leaves it for the exec'd program)
my %cases = (
	file   => { sink => [ '--sink', "file:$work/capped.jsonl" ], wrap => [ 'sh', '-c', 'trap "" XFSZ; ulimit -f 8; exec "$@"', 'sh' ] },
	stdout => { sink => [ '--sink', 'stdout' ], stdout => '/dev/full' },
	mirror => { sink => [ '--sink', "postgres:$dstconn" ] },
	exec   => { sink => [ '--sink', 'exec:sh -c "exit 1"' ] });
for my $kind (sort keys %cases)
{
	my $c = $cases{$kind};
	for my $n (0, 1)
	{
		my $name = "$kind-" . ($n ? 'n' : 'service');
		unlink("$work/capped.jsonl");
		my $p = RpTest::Proc->start(name => $name,
			cmd => [ @{ $c->{wrap} // [] }, RpTest::replicant_bin(), @source, -S => "r_$name",
				'--state-dir', "$work/st-$name", '--start', @{ $c->{sink} }, ($n ? ('-n') : ()) ],
			stderr => "$work/$name.err", stdout => $c->{stdout} // '/dev/null');
		my $rc = $p->wait_exit;
		if (!defined $rc)
		{
			$p->kill9_alive;
			$rc = 'none (still running at the timeout)';
		}
		is($rc, 3, "$name: the reader ends by itself with exit 3 when its sink fails");
		like(slurp("$work/$name.err"), qr/halted \(sink\)/, "$name: it says halted (sink)");
		like(slurp("$work/$name.err"), qr/File too large/, "$name: a write past the cap failed (EFBIG)")
		  if $kind eq 'file';
	}
}
is(rp_psql($dst, 'SELECT count(*) FROM t WHERE id > 40'), '0', "the mirror kept none of the rejected transaction");

done_testing();
