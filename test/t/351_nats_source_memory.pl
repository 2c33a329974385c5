# Copyright: see the project's LICENSE.

# A stream reader's memory is bounded like a slot consumer's (G5), and the transaction
# arrives whole (G1); was regress/t/nats_source_memory.sh.
#
# A 200-row transaction of 512 kB values (about 100 MB) is written to a 3-replica stream by
# the NATS sink, then read back by a mirror reader (--source nats://) with --max-memory 32MB,
# so the assembled transaction spills (replicant_spills_total > 0) and what libnats holds
# unread stays bounded (the pull consumer's fetches of RP_NATSRC_FETCH_BYTES, each room for
# several of these messages: a fetch smaller than a message would never deliver it). The
# reader's peak RSS must stay under 170 MB (the bound 350_nats_memory.pl holds the writer to), and the destination
# must then equal the source row for row; a second reader started after the transaction,
# from a checkpoint in the middle of the stream, must still know the table (its relation
# description, published once at the stream's start, fetched by sequence).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;

my $SLOT     = 'nsrc_memory';
my $STREAM   = 'NSRC_MEM';
my $ROWS     = 200;
my $LIMIT_MB = 170;
my $work     = rp_work();

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
rp_psql($src, 'CREATE TABLE big (id int PRIMARY KEY, v text); CREATE TABLE small (id int PRIMARY KEY, n int)');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");
my $writer = rp_consumer('writer', -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
	'--sink', $nats->sink_url, '--nats-stream', $STREAM, '--max-memory', '32MB',
	'--state-dir', "$work/wstate");
rp_psql($src, 'INSERT INTO small VALUES (1, 1)');
# 512 kB of hex a row
rp_psql($src, "INSERT INTO big SELECT g, (SELECT string_agg(md5(random()::text || g || i), '') "
	  . "FROM generate_series(1, 16384) i) FROM generate_series(1, $ROWS) g");
my $end_lsn = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_confirmed($src, $SLOT, $end_lsn, $writer), "the writer confirmed $end_lsn")
  or diag(slurp("$work/writer.err"));
my $last = $nats->last_seq($STREAM);
like($last, qr/^\d+$/, "the stream has a last sequence ($last)");
$last = 0 unless $last =~ /^\d+$/;

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $reader = rp_consumer('reader1', '--source', $nats->sink_url, '--nats-stream', $STREAM,
	-S => 'reader1', '--state-dir', "$work/r1", '--start', '--sink', 'postgres:' . rp_conninfo($dst),
	'--create-tables', '--max-memory', '32MB', '--metrics-port', $port);
ok(rp_wait_until(
		sub {
			my ($ret, $out) = $dst->psql('postgres',
				"SELECT coalesce(max(source_seq), 0) >= $last FROM replicant.checkpoint WHERE slot = 'reader1'");
			return $ret == 0 && $out eq 't';
		},
		$reader),
	"the reader applied sequence $last") or diag(slurp("$work/reader1.err"));
my $hwm = -1;
if (open(my $fh, '<', '/proc/' . $reader->pid . '/status'))
{
	while (<$fh>) { $hwm = int($1 / 1024) if /^VmHWM:\s+(\d+)/; }
	close $fh;
}
my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
my ($spilled) = $r->{success} && rp_plain_metrics($r->{content}) =~ /^replicant_spills_total (\d+)$/m ? ($1) : ('none');
$reader->signal('TERM');
is($reader->wait_exit, 0, 'the reader stops cleanly on SIGTERM (exit 0)') or diag(slurp("$work/reader1.err"));
note("reader: peak RSS $hwm MB (limit $LIMIT_MB MB), $spilled transactions spilled");
ok($hwm >= 0 && $hwm < $LIMIT_MB, "the reader's peak RSS $hwm MB is under $LIMIT_MB MB");
ok($spilled =~ /^\d+$/ && $spilled > 0, "the reader spilled the transaction (replicant_spills_total $spilled)");

rp_compare_tables($src, $dst, qw(big small));

# a second reader from a checkpoint in the middle: the file log of a reader stopped after
# the small transaction, resumed past the relation messages it read
rp_psql($src, 'INSERT INTO small VALUES (2, 2)');
# the stream's last message a non-transactional logical message: a checkpoint at it moves
# the end LSN, not the dedup watermark, and must still be recognised when the reader
# starts again
my $end2 = rp_psql($src, "SELECT pg_logical_emit_message(false, 'memtest', 'last')");
ok(rp_wait_confirmed($src, $SLOT, $end2, $writer), "the writer confirmed $end2")
  or diag(slurp("$work/writer.err"));
my $last2 = $nats->last_seq($STREAM);
my @r2 = ('--source', $nats->sink_url, '--nats-stream', $STREAM, -S => 'reader2',
	'--state-dir', "$work/r2", '--start', '--sink', 'stdout');
File::Path::mkpath("$work/r2");
# its checkpoint: the library's file at the end of the big transaction (as a stdout reader leaves it)
is(rp_replicant('reader2a', @r2, '--endpos', $last), 0, "the first stdout run to $last exits 0")
  or diag(slurp("$work/reader2a.err"));
is(rp_replicant('reader2b', { stdout => "$work/reader2.out" }, @r2, '--endpos', $last2), 0,
	"the resumed stdout reader to $last2 exits 0") or diag(slurp("$work/reader2b.err"));
my @out = split /\n/, slurp("$work/reader2.out");
is(scalar(grep { /"kind":"insert"/ } @out), 1, 'the resumed reader wrote exactly the one new row');
is(scalar(grep { /"prefix":"memtest"/ } @out), 1, 'the resumed reader wrote the logical message once');
# its checkpoint is at last2 now (the message): --endpos last2 again has nothing to read
# and must end (exit 0), neither refuse the checkpoint nor wait for messages after it
# (RP_TEST_TIMEOUT only keeps a broken build from hanging the suite)
is(rp_replicant('reader2c', { stdout => "$work/reader2c.out" }, @r2, '--endpos', $last2), 0,
	'a reader whose checkpoint is at --endpos ends (exit 0)') or diag(slurp("$work/reader2c.err"));
is(rp_file_size("$work/reader2c.out"), 0, 'a reader whose checkpoint is at --endpos writes nothing');
ok((grep { /"table":"small"/ } @out), "the resumed reader's row names its table");

done_testing();
