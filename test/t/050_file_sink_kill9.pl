
# Copyright: see the project's LICENSE.

# The file sink is effect-once across SIGKILL; was regress/t/file_sink_kill9.sh.
#
# Proves G1 (effect-once: dup = 0, loss = 0 in the file log, in commit order, nothing from
# rolled-back subtransactions or aborted transactions) and G2 (ack discipline: after every
# kill the slot's confirmed_flush_lsn is at or behind the last durable checkpoint line of
# the log).
#
# A source cluster with logical_decoding_work_mem = 64kB runs two workload procedures
# (test/fixtures/kill9_workload.sql) that COMMIT per transaction: small mixed
# insert/update/delete transactions over three tables of assorted types (some with
# rolled-back subtransactions, some rolled back whole), and large transactions (streamed by
# the server with -o streaming=on, spilled by the consumer past --max-memory 128kB; some
# with a rolled-back subtransaction, some aborted whole). Every committed change is
# recorded in an audit table in the same transaction. The workload waits while the slot is
# more than 16 MB of WAL behind, so the run's length does not depend on the machine's load.
# The consumer (--sink file:LOG, small batches) is killed with SIGKILL 24 times: after
# random sleeps of 0.05-1.5 s, right after a new checkpoint line reaches the log (the sink
# wrote, the feedback did not go out yet) and while spill files exist; it restarts each
# time with the same state dir; some kills land while a unit is half written (the log ends
# in data lines that the restart must cut). Twice the source itself crashes instead
# (immediate stop) and the running consumer reconnects on its own (G1 across a crash of
# the source). Then the workload stops, the consumer runs to -E past the last commit, and
# a checker compares the log with the audit table. Last, the dedup watermark alone: a
# restart with -I behind its checkpoint gets transactions resent and drops them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(sleep);

my $rounds = $ENV{ROUNDS} || 26;    # 24 consumer kills and 2 source restarts
my $work   = rp_work();
my $LOG    = "$work/changes.jsonl";
my $STATE  = "$work/state";
my $SLOT   = 'kill9';

my $src = rp_cluster('src');
my $srcconn = rp_conninfo($src);
rp_psql($src, "ALTER SYSTEM SET logical_decoding_work_mem = '64kB'; SELECT pg_reload_conf()");
rp_psql($src, rp_fixture('kill9_workload.sql'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start',
		'-o', 'streaming=on', '-s', '1', '--sink', "file:$LOG", '--state-dir', $STATE,
		'--max-memory', '128kB', '--batch-txns', '3', '--batch-ms', '50', @_);
}

# The checkpoint line the log would resume from (the last complete one): its end LSN and
# its line number counted from the end (1: the last line; more: a tail the restart must
# cut). Reads the log's last MB, then more until it finds one.
sub last_ckpt
{
	my $size = rp_file_size($LOG);
	return () unless $size;
	open(my $fh, '<', $LOG) or return ();
	for (my $want = 1 << 20;; $want *= 4)
	{
		my $from = $size > $want ? $size - $want : 0;
		seek($fh, $from, 0);
		read($fh, my $buf, $size - $from);
		my @lines = split /\n/, $buf, -1;
		pop @lines if $buf =~ /\n\z/;    # the empty string after the last newline
		shift @lines if $from > 0;       # maybe the end of a line begun before $from
		for (my $i = $#lines; $i >= 0; $i--)
		{
			next unless $lines[$i] =~ /^\{"kind":"checkpoint",.*\}$/;
			my ($end) = $lines[$i] =~ m{"end_lsn":"([0-9A-F/]*)"};
			return ($end, $#lines - $i + 1);
		}
		return () if $from == 0;
	}
}

sub kill_consumer
{
	my ($what) = @_;
	ok($consumer->kill9_alive, "$what: the consumer (run $runs) is killed while it runs")
	  or diag("it exited by itself with status " . $consumer->status . ': ' . slurp("$work/consumer-$runs.err"));
}

# until this consumer run wrote into the log: its size is not the one the last kill left
sub wait_progress
{
	my ($left) = @_;
	return rp_poll(0.01, sub { rp_file_size($LOG) != $left });
}
# until the log grows and ends with a checkpoint line
sub wait_new_ckpt
{
	my ($before) = @_;
	return rp_poll(0.005, sub {
		rp_file_size($LOG) > $before && rp_last_line($LOG) =~ /^\{"kind":"checkpoint"/;
	});
}
# until this consumer run wrote into the log and the log ends in data lines
sub wait_mid_write
{
	my ($left) = @_;
	return rp_poll(0.002, sub {
		my $size = rp_file_size($LOG);
		$size > 0 && $size != $left && rp_last_line($LOG) !~ /^\{"kind":"checkpoint"/;
	});
}
# until this consumer run has a spill file (they are named by pid)
sub wait_spill
{
	my $pid = $consumer->pid;
	return rp_poll(0.01, sub { my @f = glob("$STATE/spill/replicant-spill-$pid-*"); scalar @f });
}

# A worker calls the workload again when a server restart cut it off; it returns once the
# procedure returns (ctl.stop).
my $psql = $src->installed_command('psql');
sub run_worker
{
	my ($w, $big) = @_;
	return RpTest::Proc->start(name => "worker$w",
		cmd => [ 'bash', '-c', 'until "$0" -X -q -d "$1" -c "$2"; do sleep 0.3; done',
			$psql, $srcconn, "CALL workload($w, $big)" ],
		stdout => "$work/worker$w.out", stderr => "$work/worker$w.out", append => 1);
}
sub workers_out { return join('', map { -e $_ ? slurp($_) : '' } glob("$work/worker*.out")); }

my $size_at_kill = 0;
start_consumer();
my @workers = (run_worker(1, 'false'), run_worker(2, 'true'));

my ($after_ckpt, $during_spill, $mid_write, $acked_behind, $torn, $source_restarts) = (0) x 6;
for my $round (1 .. $rounds)
{
	if ($round == 9 || $round == 19)
	{
		# the source crashes under the running consumer, which reconnects by itself (not a
		# fast stop: it waits until the consumer acknowledges the walsender's last
		# position, which an append-log sink never does past its last transaction)
		wait_progress($size_at_kill);
		sleep(0.1 * (1 + int(rand(9))));
		$src->stop('immediate');
		$src->start;
		sleep(2);
		ok($consumer->alive, "round $round: the consumer survives an immediate restart of the source");
		my $flush = rp_slot_confirmed($src, $SLOT);
		my ($ck) = last_ckpt();
		ok(!rp_lsn_lt($ck // '0/0', $flush),
			"round $round: the slot's confirmed_flush_lsn $flush is not past the log's checkpoint " . ($ck // 'none'));
		$source_restarts++;
		note("round $round: source restarted; slot ack $flush, log checkpoint " . ($ck // 'none'));
		next;
	}
	my $how;
	my $m = $round % 8;
	if ($m == 0 || $m == 4)
	{
		# right after the sink made a unit durable, before the feedback
		if (wait_new_ckpt(rp_file_size($LOG))) { $after_ckpt++; $how = 'after-checkpoint'; }
		else { $how = 'timeout'; }
	}
	elsif ($m == 3)
	{
		# in the middle of a unit: the log ends in data lines (a tail to cut)
		if (wait_mid_write($size_at_kill)) { $mid_write++; $how = 'mid-write'; }
		else { $how = 'timeout'; }
	}
	elsif ($m == 2 || $m == 6)
	{
		# while a large transaction is spilled to disk
		if (wait_spill()) { $during_spill++; $how = 'during-spill'; }
		else { $how = 'timeout'; }
	}
	else
	{
		# at a random moment once this run is under way
		wait_progress($size_at_kill);
		my $ms = 50 + int(rand(1451));
		sleep($ms / 1000);
		$how = "after ${ms}ms";
	}
	kill_consumer("round $round ($how)");
	$size_at_kill = rp_file_size($LOG);
	# G2: the server never heard of a position the log does not durably hold
	my ($ck, $tail_lines) = last_ckpt();
	my $ack = 'none';
	if (defined $ck)
	{
		my $flush = rp_slot_confirmed($src, $SLOT);
		my $c = rp_lsn_cmp($flush, $ck);
		$ack = $c > 0 ? 'PAST' : $c < 0 ? 'behind' : 'equal';
		$acked_behind++ if $c < 0;
		$torn++ if $tail_lines > 1;
	}
	isnt($ack, 'PAST', "round $round: the slot's confirmed_flush_lsn is not past the log's last checkpoint " . ($ck // 'none'));
	note(sprintf('round %2d: killed %s; log checkpoint %s, %d lines after it; slot ack %s',
		$round, $how, $ck // 'none', ($tail_lines // 1) - 1, $ack));
	ok(!(grep { !$_->alive } @workers), "round $round: the workload workers still run")
	  or diag(workers_out());
	start_consumer();
}
cmp_ok($after_ckpt, '>', 0, 'some round killed the consumer right after a checkpoint line');
cmp_ok($during_spill, '>', 0, 'some round killed the consumer while it had spilled');
cmp_ok($acked_behind, '>', 0, 'some round left the slot behind the log (dedup on restart tested)');

rp_psql($src, 'UPDATE ctl SET stop = true');
for my $w (@workers)
{
	is($w->wait_exit, 0, "$w->{name} ends") or diag(workers_out());
}
# connections cut by the restarts are expected; an SQL error is a broken workload
unlike(workers_out(), qr/ERROR:/, 'the workload hit no SQL error');
kill_consumer('final');
# every workload transaction ends before endpos; the fence transaction ends after it
my $endpos = rp_fence($src, 'INSERT INTO fence VALUES (now())');
start_consumer('-E', $endpos, '-n');
is($consumer->wait_exit, 0, "the final consumer run to $endpos exits 0")
  or diag(slurp("$work/consumer-$runs.err"));

my @left = glob("$STATE/spill/replicant-spill-*");
is(scalar @left, 0, 'no spill files left behind') or diag("@left");
my ($streamed, $stream_bytes) = split /\|/, rp_psql($src,
	"SELECT stream_txns, stream_bytes FROM pg_stat_replication_slots WHERE slot_name = '$SLOT'");
cmp_ok($streamed, '>', 0, "the server streamed transactions ($streamed, $stream_bytes bytes)");

rp_psql($src, "\\copy (SELECT txid, tbl, id, op, ver FROM audit ORDER BY seq) TO '$work/audit.tsv'");
is(rp_run('check', { stdout => "$work/check.out", stderr => "$work/check.out" },
		'python3', rp_root() . '/regress/check_file_log.py', $LOG, "$work/audit.tsv"),
	0, 'the log holds every committed change once, in commit order, nothing rolled back (dup = 0, loss = 0)')
  or diag(slurp("$work/check.out"));
note("$runs consumer runs; kills: $after_ckpt after a checkpoint line, $during_spill during a spill, "
	  . "$mid_write mid-write, $acked_behind with the slot behind the log, $torn with a tail to cut");

# ---- the dedup watermark itself. Above, each restart asks the server to start at the
# checkpoint's end LSN, so the server skips what the log holds. With -I behind the
# checkpoint (and a slot behind it: killed before any status update) the server sends those
# transactions again, and the consumer must drop them by their commit LSN.
my $DLOG = "$work/dedup.jsonl";
rp_replicant_ok([ -d => $srcconn, -S => 'dedup', '--create-slot' ], 'slot dedup created');
my $created = rp_slot_confirmed($src, 'dedup');
rp_psql($src, 'INSERT INTO fence VALUES (now())') for 1 .. 3;
sub fence_rows { return -e $DLOG ? scalar(() = slurp($DLOG) =~ /"table":"fence"/g) : 0; }
$consumer = rp_consumer('dedup', -d => $srcconn, -S => 'dedup', '--start', '-s', '600',
	'--sink', "file:$DLOG", '--state-dir', "$work/state-dedup");
ok(rp_wait_until(sub { fence_rows() == 3 && rp_last_line($DLOG) =~ /"kind":"checkpoint"/ }, $consumer),
	'the dedup run logged its 3 rows and a checkpoint line');
ok($consumer->kill9_alive, 'the dedup run is killed while it runs');
is(fence_rows(), 3, 'the dedup run logged 3 rows');
is(rp_slot_confirmed($src, 'dedup'), $created, 'the dedup slot did not move (its status interval is 600 s)');
rp_psql($src, 'INSERT INTO fence VALUES (now())');
$endpos = rp_psql($src, 'SELECT pg_current_wal_lsn()');
is(rp_replicant('dedup-I', -d => $srcconn, -S => 'dedup', '--start', '-n', -E => $endpos, -I => $created,
		'--sink', "file:$DLOG", '--state-dir', "$work/state-dedup"),
	0, 'the dedup run with -I behind the checkpoint exits 0') or diag(slurp("$work/dedup-I.err"));
is(fence_rows(), 4, 'with -I behind the checkpoint the log holds 4 rows: resent transactions were dropped');

done_testing();
