# Copyright: see the project's LICENSE.

# A stream reader's (--source nats://) progress line on a terminal shows its lag in messages
# of the stream (issue 17, item 4: it showed a WAL lag of 0); was
# regress/t/progress_stream_reader.sh.
#
# The NATS sink writes 300 one-row transactions from a slot into a stream (one node). A
# mirror reader of the stream runs in a tmux pane (stderr a terminal, --progress) while a
# session holds its destination table locked (LOCK ... IN SHARE MODE): nothing it reads is
# durable, and the pane shows "catch-up: lag N messages" with N > 0 (the stream's messages
# past the reader's durable checkpoint). Then the lock goes: the reader catches up, the line
# says "streaming, caught up: lag 0 messages", and the destination holds the 300 rows. Nothing is
# timed: every step waits for its condition (bounded by RP_TEST_TIMEOUT).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT   = 'progress_sr';
my $STREAM = 'PROGRESS_SR';
my $ROWS   = 300;
my $work = rp_work();

ok(system('command -v tmux >/dev/null') == 0, 'tmux is installed (the terminal is read back through it)')
  or BAIL_OUT('tmux is missing');
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $nats = RpTest::Nats->start(1);
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, n int)');
rp_psql($dst, 'CREATE TABLE t (id int PRIMARY KEY, n int)');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");
my $writer = rp_consumer('writer', -d => $srcconn, -S => $SLOT, '--start', '-s', '1', '--sink', $nats->sink_url,
	'--nats-stream', $STREAM, '--nats-replicas', '1', '--state-dir', "$work/wstate");
rp_psql($src, join('', map { "INSERT INTO t VALUES ($_, $_);\n" } 1 .. $ROWS));
my $end_lsn = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_confirmed($src, $SLOT, $end_lsn, $writer), "the writer confirmed $end_lsn")
  or diag(slurp("$work/writer.err"));

# the destination table locked until the pane has shown the lag
my $lock = rp_session($dst, 'lock');
$lock->send("BEGIN; LOCK TABLE t IN SHARE MODE; SELECT 'locked';");
ok(rp_wait_file_match($lock->out, qr/locked/, $lock->proc), 'the destination table is locked')
  or diag(slurp($lock->out));

my $reader = RpTest::Tmux->run('reader', [ RpTest::replicant_bin(), '--source', $nats->sink_url,
		'--nats-stream', $STREAM, '-S', 'reader1', '--state-dir', "$work/r1", '--start',
		'--sink', "postgres:$dstconn", '--progress' ]);

my $eta = qr/(?:[0-9]+s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m|[0-9]+d[0-9]{2}h|--)/;
my $lsn = qr{[0-9A-F]+/[0-9A-F]+};
$reader->wait_pane(qr/^catch-up: lag [1-9][0-9]* messages, ETA $eta; [0-9]+ txns, [0-9.]+[kMG]? changes\/s, checkpoint $lsn$/m,
	'the lag in messages');
unlike($reader->{last}, qr/ B, /, "a stream reader's line shows no WAL lag");
$lock->send('COMMIT;');
$lock->close;
$reader->wait_pane(qr/^streaming, caught up: lag 0 messages, ETA 0s; [0-9]+ txns, [0-9.]+[kMG]? changes\/s, checkpoint $lsn$/m,
	'the end of the catch-up');
is(rp_psql($dst, 'SELECT count(*) FROM t'), $ROWS, "the destination holds the $ROWS rows");

done_testing();
