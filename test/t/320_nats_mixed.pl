
# Copyright: see the project's LICENSE.

# The JetStream sink carries a mixed workload exactly once, and no row value reaches a log
# line or a metric; was regress/t/nats_mixed.sh.
#
# G1 (effect-once, commit order) and G4 (value-free) for --sink nats:// against a real
# 3-node JetStream cluster: two workers (small mixed transactions with rolled-back
# subtransactions and aborted transactions; 500-1500 row transactions) over three tables,
# two with hostile identifiers (dots, spaces, '*', '>', '%', quotes, non-ASCII) and hostile
# values (regress/tools/nats_workload.sql); a canary value in text, jsonb and a logical
# message; a TRUNCATE; three transactional logical messages; ALTER TABLE ADD COLUMN (a new
# relation message). The sink creates the stream with the defaults (REPLICANT_<slot>,
# prefix replicant.<slot>, 3 replicas), whose config is checked. regress/check_nats.py then
# reads the whole stream back and compares it with the audit: every change once, in commit
# order, headers, escaped subjects, Nats-Msg-Id, contiguous Replicant-Index,
# Replicant-Last, the slot confirmed no further than the stream holds. Then the idle WAL
# is confirmed (a quiet database holds no WAL for ever) and a fast shutdown of the source
# completes with the writer connected; a stream reader with --endpos ends at the stream's
# last sequence, and again without writing. Last, the consumer's stderr (-v), its state
# files and its /metrics page must not hold the canary, while the stream must.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use File::Find ();
use HTTP::Tiny;
use JSON::PP;

my $CANARY     = 'CANARY-5eb63bbe';
my $CANARY_SQL = q{'CANARY-' || '5eb63bbe'};
my $SLOT       = 'nats_mixed';
my $STREAM     = "REPLICANT_$SLOT";
my $PREFIX     = "replicant.$SLOT";
my $work       = rp_work();

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
RpTest::Nats::load_workload($src, $SLOT);
rp_psql($src, "CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$");
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $c = rp_consumer('consumer-1', '-v', -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
	'--sink', $nats->sink_url, '--state-dir', "$work/state", '--metrics-port', $port);

# audited rows with the canary in a text and a jsonb column
rp_psql($src, rp_fixture('nats_mixed_canary.sql'));
my @workers = (rp_psql_bg($src, 'worker1', 'CALL workload(1, false, 150)'),
	rp_psql_bg($src, 'worker2', 'CALL workload(2, true, 4)'));
for my $i (0, 1)
{
	is($workers[$i]->wait_exit, 0, 'workload worker ' . ($i + 1) . ' ends without an error')
	  or diag(slurp("$work/worker" . ($i + 1) . '.out'));
}
# a schema change (a new relation message), transactional logical messages, a truncate
rp_psql($src, 'ALTER TABLE public.t_a ADD COLUMN "added col" text');
rp_psql($src, "BEGIN; SELECT pg_logical_emit_message(true, 'nats_test', canary()); "
	  . "SELECT pg_logical_emit_message(true, 'nats_test', 'two'); COMMIT;");
rp_psql($src, "SELECT pg_logical_emit_message(true, 'nats_test', 'three')");
rp_psql($src, 'TRUNCATE "Ünï cödé"."sp ace"');
my $w = rp_psql_bg($src, 'worker1b', 'CALL workload(1, false, 30)');
is($w->wait_exit, 0, 'the workload after the schema change ends without an error')
  or diag(slurp("$work/worker1b.out"));
my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_confirmed($src, $SLOT, $fence, $c), "the slot confirms $fence (all of the workload)")
  or diag(slurp("$work/consumer-1.err"));

# Idle WAL: a CHECKPOINT writes WAL that decodes to no transaction. The sink records the
# idle position in the stream (a position message, at most once per status interval), so
# the slot confirms it: a quiet database in a busy cluster holds no WAL for ever. And a
# fast shutdown of the source completes: its walsender waits until the client confirms
# everything it sent (the shutdown checkpoint included); a writer that never confirmed
# past its last transaction held it there for good.
rp_psql($src, 'CHECKPOINT');
my $idle = rp_psql($src, 'SELECT pg_current_wal_lsn()');
ok(rp_wait_confirmed($src, $SLOT, $idle, $c),
	"the slot confirms the idle position $idle (WAL after the last transaction)");
my $stopped;
{
	# the script gave pg_ctl 60 s; the bug held the shutdown for good, so the one
	# timeout tells the two apart as well
	local $ENV{PGCTLTIMEOUT} = rp_timeout();
	$stopped = $src->stop('fast', fail_ok => 1);
}
ok($stopped, 'a fast shutdown of the source with the writer connected ends');
if (!$stopped)
{
	$c->kill9_alive;    # lets the walsender, and so the server, go
	$src->stop('fast', fail_ok => 1);
}
$src->start;

my $page = HTTP::Tiny->new(timeout => 10)->get("http://127.0.0.1:$port/metrics");
ok($page->{success}, "the metrics page answers on port $port");
my $metrics = $page->{success} ? rp_plain_metrics($page->{content}) : '';
open(my $mfh, '>', "$work/metrics.txt") or die "$work/metrics.txt: $!";
print $mfh $metrics;
close $mfh;
ok($c->signal('TERM'), 'SIGTERM sent to the running consumer');
is($c->wait_exit, 0, 'the consumer stopped by SIGTERM exits 0');

# the stream as the sink created it
my ($irc, $info_text) = $nats->tool($STREAM, 'info');
my $info = $irc == 0 ? eval { decode_json($info_text) } : undef;
ok($info && $info->{exists}, "stream $STREAM exists") or diag($info_text);
$info //= {};
is_deeply($info->{subjects}, ["$PREFIX.>"], "its subjects are $PREFIX.>");
ok($info->{deny_delete} && $info->{deny_purge}, 'it denies delete and purge');
is($info->{retention}, 0, 'its retention is limits');
is($info->{storage},   0, 'its storage is file');
is($info->{replicas},  3, 'it has 3 replicas');

my ($crc, $check) = $nats->check($src, $SLOT, $STREAM, $PREFIX,
	args => [ '--expect-op', 'truncate=1', '--expect-op', 'message=3' ]);
is($crc, 0, 'the stream holds every committed change once, in commit order (check_nats.py)');
$crc ? diag($check) : note($check);

# (the stream's lines are read as bytes, as this file's names are written; only the
# headers of relation messages are decoded: JSON::PP on 12,000 whole lines took 46 s)
my @stream = split /\n/, slurp("$work/check_$STREAM/stream.jsonl");
my %rel;
for my $line (grep { index($_, '"Replicant-Op":"relation"') >= 0 } @stream)
{
	my ($h) = $line =~ /"headers":(\{[^{}]*\})/;
	$rel{ eval { JSON::PP->new->decode($h)->{'Replicant-Table'} } // '' }++ if $h;
}
# relation messages: at least one per table, and t_a's again after ADD COLUMN
cmp_ok($rel{'public.t_a'} // 0, '>=', 2, 'two relation messages for public.t_a (the second after ADD COLUMN)');
cmp_ok($rel{'we.ird *>%.tâble.x>y*'} // 0, '>=', 1, 'a relation message for "we.ird *>%"."tâble.x>y*"');
cmp_ok($rel{'Ünï cödé.sp ace'} // 0, '>=', 1, 'a relation message for "Ünï cödé"."sp ace"');
# the escaped subjects are really there
ok((grep { index($_, '"subject":"replicant.nats_mixed.we%2Eird%20%2A%3E%25.t%C3%A2ble%2Ex%3Ey%2A"') >= 0 } @stream),
	'a message on the escaped subject of "we.ird *>%"."tâble.x>y*"');

# A reader of the stream to its end, --endpos L: the messages after the fence are the
# writer's position messages (the CHECKPOINT's and the shutdown's idle WAL), read right
# after the fence's transaction, while its batch is still on the way. The reader ends with
# its checkpoint at L all the same (they are recorded once the batch is delivered: without
# that it stopped at the fence's sequence), and a second run with --endpos L ends at once
# and writes nothing.
my $L = $info->{last_seq} // '';
ok(@stream && index($stream[-1], '"Replicant-Op":"position"') >= 0,
	"the stream's last message (sequence $L) is a position message (else the reader's check proves nothing)");
my $log = "$work/reader.log";
sub reader_ck
{
	my @ck = grep { /^\{"kind":"checkpoint"/ } split /\n/, (-e $log ? slurp($log) : '');
	return @ck && $ck[-1] =~ /"source_seq":(\d+)/ ? $1 : '';
}
for my $run (1, 2)
{
	my $size = rp_file_size($log);
	my $rc = rp_replicant("reader-$run", '--source', $nats->sink_url, '--nats-stream', $STREAM,
		-S => 'mixed_reader', '--start', '--state-dir', "$work/st-reader", '--sink', "file:$log",
		'--endpos', $L);
	is($rc, 0, "the stream reader (run $run) with --endpos $L exits 0")
	  or diag(slurp("$work/reader-$run.err"));
	is(reader_ck(), $L, "the stream reader (run $run) ends with its checkpoint at sequence $L");
	is(rp_file_size($log), $size, "the second run with its checkpoint at $L writes nothing to its log")
	  if $run == 2;
}

# G4: the canary is in the stream (the search can find it) and in no log line or metric
ok((grep { index($_, $CANARY) >= 0 } @stream), 'the canary is in the stream (the search below can find it)');
like($metrics, qr/^replicant_transactions_total [1-9]/m, 'the metrics page counts transactions');
my @searched = ("$work/consumer-1.err", "$work/reader-1.err", "$work/reader-2.err", "$work/metrics.txt");
File::Find::find(sub { push @searched, $File::Find::name if -f }, "$work/state") if -d "$work/state";
my @leaks = grep { my $t = slurp($_); index($t, $CANARY) >= 0 || index($t, '5eb63bbe') >= 0 } @searched;
is("@leaks", '', 'the canary is in none of the ' . scalar(@searched) . ' files searched (stderr, metrics, state)');

done_testing();
