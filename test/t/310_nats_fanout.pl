
# Copyright: see the project's LICENSE.

# One JetStream stream, written by the NATS sink from one slot, is the source of three
# readers at once, each effect-once across kill -9, each at its own pace; was
# regress/t/nats_fanout.sh.
#
# Proves G1 for readers of a stream (dup = 0, loss = 0 in every sink, commit order in the log)
# and that a stopped reader holds back nothing on the source (the slot is confirmed as far as
# the stream holds while the reader is behind). Source cluster src (regress/tools/
# nats_workload.sql: hostile identifiers and values, an audit table recording every committed
# change in its own transaction), the writer (-S fo_cdc --sink nats://, 3-node cluster), and
# three readers of the stream (--source nats://... --nats-stream FANOUT, no -d but agg's, for
# its bindings' seed):
#   mirror  --sink postgres: database mirror of cluster dst, --create-tables
#   log     --sink file:WORK/fanout.log
#   agg     --sink postgres: database agg of dst, --create-tables and aggregate bindings
#           on public.t_a (REPLICA IDENTITY FULL) and public.audit
#           (sum, max, count, count_distinct)
# Under a small-transaction worker (and a worker of 500-1500-row transactions in the first
# phase) the readers are killed with SIGKILL in turn, ROUNDS (>= 10) times each, once they
# made progress (odd kills) or at a random moment (even kills), and restarted at once.
# Meanwhile the stream's leader node is killed with SIGKILL and later restarted, and the
# writer is killed with SIGKILL twice and restarted. Then agg is stopped (SIGSTOP) for a long
# stretch: the others are killed on, the writer too, and a fence committed on the source must
# be confirmed by the writer's slot and reached by mirror and log while agg's checkpoint is
# still behind it. The stretch lasts until the source wrote STOPPED_MB (24) MB of WAL past
# agg's checkpoint: more than the 16 MB lag at which the workload waits for the writer's
# slot, so a slot held back by agg would stop the workload and fail the test. Then agg goes
# on (SIGCONT) and takes its kills while it catches up. At the end: the workload stops, the
# readers are stopped, the writer confirms a last fence, L = the stream's last sequence, and
# each reader is restarted with --endpos L and must exit 0 (and the log reader, its
# checkpoint then at L, once more: it must end at once, writing nothing). Then the mirror
# (and agg's mirror) equals the source table by table, the log holds every audited change
# exactly once in commit order (regress/check_fanout_log.py), the aggregate outputs equal
# GROUP BY on the source, the checkpoints say they follow the stream, and no reader's stderr
# shows a row value (G4).
#
# RP_FANOUT_STANDIN=slot: each reader reads a slot of its own on the source instead of the
# stream (--endpos is then -E the last fence's LSN; the checkpoints' source is not checked):
# the harness checked against readers that exist without the stream reader.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(sleep);

my $ROUNDS     = $ENV{ROUNDS} || 10;        # kills per reader, at least
my $STOPPED_MB = $ENV{STOPPED_MB} || 24;    # WAL written while agg is stopped (> the 16 MB throttle)
$ROUNDS = 10 if $ROUNDS < 10;
my $SLOT    = 'fo_cdc';
my $STREAM  = 'FANOUT';
my $PREFIX  = 'fo';
my @READERS = qw(mirror log agg);
my $STANDIN = $ENV{RP_FANOUT_STANDIN} // '';
my $work    = rp_work();
my $LOG     = "$work/fanout.log";

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $nats = RpTest::Nats->start(3);
rp_psql($dst, 'CREATE DATABASE mirror');
rp_psql($dst, 'CREATE DATABASE agg');
RpTest::Nats::load_workload($src, $SLOT);
# the aggregate bindings need the old row of updates and deletes; the mirrors apply the
# workload's stop flag and pacing too: they need an identity
rp_psql($src, 'ALTER TABLE public.t_a REPLICA IDENTITY FULL; ALTER TABLE ctl REPLICA IDENTITY FULL; '
	  . 'ALTER TABLE wl_conf REPLICA IDENTITY FULL');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");
if ($STANDIN eq 'slot')
{
	rp_replicant_ok([ -d => $srcconn, -S => "fo_$_", '--create-slot' ], "stand-in slot fo_$_ created") for @READERS;
}
# the control rows again, after the slots: the mirrors (no snapshot) must hold them too
rp_psql($src, "BEGIN; TRUNCATE ctl, wl_conf; INSERT INTO ctl VALUES (false); "
	  . "INSERT INTO wl_conf VALUES ('$SLOT', 0.01); COMMIT;");

# ---------------------------------------------------------------- processes

my ($writer, $wruns) = (undef, 0);
my (%proc, %kills, %runs, %pos_at_start);
%kills = map { $_ => 0 } @READERS;
%runs  = map { $_ => 0 } @READERS;
my $f;    # the last fence (the stand-ins' --endpos)
my @workers;

sub start_writer
{
	$wruns++;
	$writer = rp_consumer("writer-$wruns", -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
		'--sink', $nats->sink_url, '--nats-stream', $STREAM, '--nats-subject-prefix', $PREFIX,
		'--state-dir', "$work/st-writer", '--max-memory', '16MB');
}

# position(R): the end LSN of reader R's durable checkpoint ('' before its first)
sub position
{
	my ($r) = @_;
	return rp_dst_checkpoint($dst, "fo_$r", $r) if $r ne 'log';
	return log_checkpoint();
}

# the end LSN of the log's last checkpoint line, however far back (a batch of a caught-up
# backlog can be many MB, and a killed run leaves its unacknowledged tail after it), read
# backwards in 1 MB pieces; '' when there is none
sub log_checkpoint
{
	open(my $fh, '<', $LOG) or return '';
	my $pos = -s $fh;
	my $buf = '';
	my $mark = '{"kind":"checkpoint"';
	while ($pos > 0)
	{
		my $n = $pos > 1048576 ? 1048576 : $pos;
		$pos -= $n;
		seek($fh, $pos, 0);
		read($fh, my $piece, $n);
		$buf = $piece . $buf;
		my $i = rindex($buf, "\n$mark");
		my $line;
		if ($i >= 0) { $line = substr($buf, $i + 1); }
		elsif ($pos == 0 && substr($buf, 0, length $mark) eq $mark) { $line = $buf; }
		if (defined $line)
		{
			$line =~ s/\n.*//s;
			close $fh;
			return $line =~ m{"end_lsn":"([0-9A-F]+/[0-9A-F]+)"} ? $1 : '';
		}
		# searched: all but the first, partial line
		my $nl = index($buf, "\n");
		$buf = substr($buf, 0, $nl) if $nl >= 0;
	}
	close $fh;
	return '';
}

# start_reader(R[, ENDPOS]): reader R's next run
sub start_reader
{
	my ($r, $endpos) = @_;
	$runs{$r}++;
	$pos_at_start{$r} = position($r);
	my @sink;
	if ($r eq 'mirror') { @sink = ('--sink', 'postgres:' . rp_conninfo($dst, 'mirror'), '--create-tables'); }
	elsif ($r eq 'log') { @sink = ('--sink', "file:$LOG"); }
	else
	{
		@sink = ('--sink', 'postgres:' . rp_conninfo($dst, 'agg'), '--create-tables',
			map { ('--aggregate', $_) }
			  'name=a_sum source=public.t_a dims=flag measure=amount agg=sum output=table:agg.a_sum',
			  'name=a_max source=public.t_a dims=flag measure=ts agg=max output=table:agg.a_max',
			  'name=a_cnt source=public.t_a dims=flag measure=id agg=count output=table:agg.a_cnt',
			  'name=au_cnt source=public.audit dims=tbl measure=id agg=count output=table:agg.au_cnt',
			  'name=au_cd source=public.audit dims=tbl measure=txid agg=count_distinct output=table:agg.au_cd',
			  'name=au_max source=public.audit dims=tbl measure=ver agg=max output=table:agg.au_max');
	}
	my (@source, @end);
	if ($STANDIN eq 'slot')
	{
		@source = (-d => $srcconn);
		@end = ('-E', $f) if defined $endpos;
	}
	else
	{
		@source = ('--source', $nats->sink_url, '--nats-stream', $STREAM);
		# the bindings' seed is a SELECT on the source (docs/aggregates.md), the stream's
		# xids and LSNs decide what it already holds
		push @source, -d => $srcconn if $r eq 'agg';
		@end = ('--endpos', $endpos) if defined $endpos;
	}
	$proc{$r} = rp_consumer("$r-$runs{$r}", @source, -S => "fo_$r", '--state-dir', "$work/st-$r",
		'--start', @sink, '--max-memory', '16MB', @end);
}

sub err_of { my ($name) = @_; return -e "$work/$name.err" ? slurp("$work/$name.err") : ''; }
sub reader_err { my ($r) = @_; return err_of("$r-$runs{$r}"); }

# wait_progress(TAG, R): until reader R's checkpoint moved since its run started
sub wait_progress
{
	my ($tag, $r) = @_;
	my $from = $pos_at_start{$r} || 'none';
	ok(rp_wait_until(sub { position($r) ne $pos_at_start{$r} }, $proc{$r}),
		"$tag: reader $r run $runs{$r} makes progress (its checkpoint moves from $from)")
	  or diag(reader_err($r));
}

# wait_reaches(R, LSN): until reader R's checkpoint is at or past LSN
sub wait_reaches
{
	my ($r, $lsn) = @_;
	ok(rp_wait_until(sub { !rp_lsn_lt(position($r) || '0/0', $lsn) }, $proc{$r}),
		"reader $r reaches $lsn") or diag('at ' . position($r) . ': ' . reader_err($r));
}

# kill_reader(TAG, R): SIGKILL reader R, which must be running (one that exited by itself fails)
sub kill_reader
{
	my ($tag, $r) = @_;
	ok($proc{$r}->kill9_alive, "$tag: reader $r run $runs{$r} is killed with SIGKILL while it runs")
	  or diag("it exited by itself (status " . $proc{$r}->status . '): ' . reader_err($r));
}

sub rand_sleep
{
	my ($lo, $hi) = @_;
	my $ms = $lo + int(rand($hi - $lo));
	sleep($ms / 1000);
	return $ms;
}

# kill_round(R): one kill of reader R: odd kills once the run made progress, even ones at
# a random moment (the random 0-600 / 100-1500 ms are part of the property)
my $round = 0;
sub kill_round
{
	my ($r) = @_;
	$round++;
	my $tag = "round $round";
	my $how;
	if (($kills{$r} + 1) % 2)
	{
		wait_progress($tag, $r);
		$how = 'after progress and ' . rand_sleep(0, 600) . 'ms';
	}
	else
	{
		$how = 'after ' . rand_sleep(100, 1500) . 'ms';
	}
	kill_reader($tag, $r);
	$kills{$r}++;
	note(sprintf('round %2d: %-6s killed %s (kill %d), checkpoint %s', $round, $r, $how, $kills{$r}, position($r)));
	ok($workers[0]->alive, "$tag: the small-transaction worker still runs") or diag(slurp("$work/worker1.out"));
	start_reader($r);
}

sub stream_last { my $n = $nats->last_seq($STREAM); return $n eq '' ? 0 : $n; }

# writer_published(TAG, BEFORE): until the stream grows past BEFORE (fails when the writer exits)
sub writer_published
{
	my ($tag, $before) = @_;
	ok(rp_wait_until(sub { stream_last() > $before }, $writer), "$tag: writer run $wruns publishes past seq $before")
	  or diag(err_of("writer-$wruns"));
}

sub kill_writer
{
	my ($tag) = @_;
	ok($writer->kill9_alive, "$tag: writer run $wruns is killed with SIGKILL while it runs")
	  or diag('it exited by itself (status ' . $writer->status . '): ' . err_of("writer-$wruns"));
	my $before = stream_last();
	start_writer();
	writer_published("$tag: restarted", $before);
}

sub fence { return rp_fence($src, 'INSERT INTO fence VALUES (now())'); }

# ---------------------------------------------------------------- phase 1: everyone killed in turn

start_writer();
push @workers, rp_psql_bg($src, 'worker1', 'CALL workload(1, false, 0)');
writer_published('start', 0);
start_reader($_) for @READERS;
push @workers, rp_psql_bg($src, 'worker2', 'CALL workload(2, true, 12)');

my $node = '';
for my $i (0 .. 8)
{
	kill_round($READERS[ $i % 3 ]);
	if ($i == 3)
	{
		$node = $nats->wait_stream_leader($STREAM);
		ok($node ne '', "stream $STREAM has a leader (n$node)");
		ok($node ne '' && $nats->kill9($node), "stream leader n$node killed with SIGKILL");
	}
	elsif ($i == 7 && $node ne '')
	{
		ok($nats->restart($node), "n$node restarted");
	}
}
kill_writer('phase 1');

# ---------------------------------------------------------------- phase 2: agg stopped
wait_progress('phase 2', 'agg');
$proc{agg}->signal('STOP');
my $stopped_at = position('agg');
note('agg stopped (SIGSTOP) at checkpoint ' . ($stopped_at || 'none'));
for my $i (0 .. 5)
{
	kill_round($READERS[ $i % 2 ]);
	kill_writer('phase 2') if $i == 2;
}
# a long stretch: until the source wrote STOPPED_MB of WAL past agg's checkpoint
ok(rp_wait_until(
		sub {
			rp_psql($src, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '" . ($stopped_at || '0/0') . "')::bigint")
			  >= $STOPPED_MB * 1048576;
		},
		$workers[0]),
	"the source writes $STOPPED_MB MB of WAL past agg's checkpoint while agg is stopped (the worker running)")
  or diag(slurp("$work/worker1.out"));
$f = fence();
ok(rp_wait_confirmed($src, $SLOT, $f, $writer), "the writer's slot confirms the fence $f while agg is stopped")
  or diag(err_of("writer-$wruns"));
my $confirmed = rp_slot_confirmed($src, $SLOT);
wait_reaches('mirror', $f);
wait_reaches('log', $f);
my $agg_at = position('agg');
my ($state) = (slurp('/proc/' . $proc{agg}->pid . '/stat') =~ /\)\s+(\S)/);
is($state, 'T', 'agg is stopped');
ok(rp_lsn_lt($agg_at || '0/0', $f), "agg's checkpoint " . ($agg_at || 'none') . " is behind the fence $f");
is($agg_at, $stopped_at, "agg's checkpoint did not move while it was stopped");
my $behind = rp_psql($src, "SELECT pg_wal_lsn_diff('$f', '" . ($agg_at || '0/0') . "')");
note('while agg was stopped at ' . ($agg_at || 'none') . " ($behind bytes of WAL behind): slot $SLOT confirmed "
	  . "$confirmed >= fence $f; mirror and log reached it");
$proc{agg}->signal('CONT');

# ---------------------------------------------------------------- phase 3: the rest of the kills
while (my @more = grep { $kills{$_} < $ROUNDS } @READERS)
{
	kill_round($_) for @more;
}

# ---------------------------------------------------------------- drain with --endpos
rp_psql($src, 'UPDATE ctl SET stop = true');
for my $w (1, 2)
{
	is($workers[ $w - 1 ]->wait_exit, 0, "workload worker $w ends with exit 0") or diag(slurp("$work/worker$w.out"));
	unlike(slurp("$work/worker$w.out"), qr/ERROR:/, "workload worker $w ran without an error");
}
# the readers down first: the last fence is then past every checkpoint, and each run below
# reads up to L (a checkpoint already at --endpos is checked apart, at the end)
kill_reader('drain', $_) for @READERS;
$f = fence();
ok(rp_wait_confirmed($src, $SLOT, $f, $writer), "the writer confirms the last fence $f")
  or diag(err_of("writer-$wruns"));
my $L = stream_last();
start_reader($_, $L) for @READERS;
for my $r (@READERS)
{
	my $rc = $proc{$r}->wait_exit;
	is($rc, 0, "reader $r with --endpos $L exits 0") or diag(reader_err($r));
	$proc{$r}->kill9_alive unless defined $rc;
}
$writer->signal('TERM');
is($writer->wait_exit, 0, 'the writer, stopped by SIGTERM, exits 0') or diag(err_of("writer-$wruns"));

# ---------------------------------------------------------------- compare
my $SET = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 3; SET bytea_output = 'hex';";
sub digest
{
	my ($node, $db, $q) = @_;
	return rp_psql($node,
		"$SET SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), '')) FROM ($q) s(r)",
		$db);
}
my @summary;
# same(NAME, SRC_QUERY, DB, DST_QUERY): the two queries' rows as multisets
sub same
{
	my ($name, $sq, $db, $dq) = @_;
	my $x = digest($src, 'postgres', $sq);
	my $y = digest($dst, $db, $dq);
	if (!is($y, $x, "$name: $db equals the source ($x)"))
	{
		my %n;
		$n{$_}++ for split /\n/, rp_psql($src, "$SET $sq");
		$n{$_}-- for split /\n/, rp_psql($dst, "$SET $dq", $db);
		my @diff = grep { $n{$_} } sort keys %n;
		splice(@diff, 10) if @diff > 10;
		diag(($n{$_} > 0 ? 'source only: ' : "$db only: ") . substr($_, 0, 200)) for @diff;
	}
	push @summary, "$name " . (split / /, $x)[0];
}
# (fence: the last one is the stream's last transaction, so --endpos L delivered everything)
for my $t ('public.t_a', '"we.ird *>%"."tâble.x>y*"', '"Ünï cödé"."sp ace"', 'public.audit', 'public.fence')
{
	my $q = "SELECT x::text FROM $t x";
	same("mirror $t", $q, 'mirror', $q);
	same("agg-mirror $t", $q, 'agg', $q);
}
same('a_sum', "SELECT flag || '|' || coalesce(trim_scale(sum(amount))::text, '~') FROM t_a GROUP BY flag",
	'agg', "SELECT flag || '|' || coalesce(trim_scale(sum_amount)::text, '~') FROM agg.a_sum");
same('a_max', "SELECT flag || '|' || coalesce(max(ts)::text, '~') FROM t_a GROUP BY flag",
	'agg', "SELECT flag || '|' || coalesce(max_ts::text, '~') FROM agg.a_max");
same('a_cnt', "SELECT flag || '|' || count(id) FROM t_a GROUP BY flag",
	'agg', "SELECT flag || '|' || count_id FROM agg.a_cnt");
same('au_cnt', "SELECT tbl || '|' || count(id) FROM audit GROUP BY tbl",
	'agg', "SELECT tbl || '|' || count_id FROM agg.au_cnt");
same('au_cd', "SELECT tbl || '|' || count(DISTINCT txid) FROM audit GROUP BY tbl",
	'agg', "SELECT tbl || '|' || count_distinct_txid FROM agg.au_cd");
same('au_max', "SELECT tbl || '|' || max(ver) FROM audit GROUP BY tbl",
	'agg', "SELECT tbl || '|' || max_ver FROM agg.au_max");

RpTest::Nats::audit($src, "$work/audit.tsv");
my $rc = rp_run('check_fanout_log', { stdout => "$work/check.out" },
	'python3', "$RpTest::ROOT/regress/check_fanout_log.py", $LOG, "$work/audit.tsv");
is($rc, 0, 'the log holds every committed change exactly once, in commit order (check_fanout_log.py)')
  or diag(slurp("$work/check.out") . slurp("$work/check_fanout_log.err"));
note(slurp("$work/check.out"));

# the checkpoints name the stream they follow
SKIP:
{
	skip 'RP_FANOUT_STANDIN: the readers read slots, not the stream', 7 if $STANDIN ne '';
	for my $r ('mirror', 'agg')
	{
		my ($source, $seq) = split / /,
		  rp_psql($dst, "SELECT source || ' ' || source_seq FROM replicant.checkpoint WHERE slot = 'fo_$r'", $r);
		is($source, "nats:$STREAM", "reader ${r}'s checkpoint row names its source nats:$STREAM");
		ok(defined $seq && $seq <= $L, "reader ${r}'s checkpoint is at stream sequence " . ($seq // 'none')
			  . ", not past the stream's last $L");
	}
	like(rp_last_line($LOG), qr/nats:\Q$STREAM\E/, "the log's last checkpoint line names nats:$STREAM");
	# a reader whose checkpoint is already at --endpos L ends at once (exit 0), delivering nothing
	my $size = rp_file_size($LOG);
	start_reader('log', $L);
	my $lrc = $proc{log}->wait_exit;
	is($lrc, 0, "reader log, its checkpoint at sequence $L, exits 0 on a start with --endpos $L")
	  or diag(reader_err('log'));
	$proc{log}->kill9_alive unless defined $lrc;
	is(rp_file_size($LOG), $size, "reader log, its checkpoint at --endpos $L, writes nothing to the log");
}
# G4: the workload's values carry this; no reader or writer log may
my @leak = grep { index(slurp($_), '€🙂') >= 0 } glob("$work/{mirror,log,agg,writer}-*.err");
is("@leak", '', 'no row value in any reader or writer log (G4)');

note(sprintf('3 readers of one stream, SIGKILLed %d/%d/%d times (mirror/log/agg), the writer killed %d times, '
	  . 'agg stopped while the slot was confirmed %s bytes past it; %s',
	$kills{mirror}, $kills{log}, $kills{agg}, $wruns - 1, $behind, join(', ', @summary)));

done_testing();
