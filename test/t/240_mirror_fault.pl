# Copyright: see the project's LICENSE.

# The PostgreSQL mirror is effect-once across crashes of the consumer, the destination and
# the source; was regress/t/mirror_fault.sh.
#
# Proves G1 (effect-once: after the faults the destination equals the source table by
# table, so dup = 0 and loss = 0) for the mirror sink, with G2 checked on the way (after
# every kill the slot's confirmed_flush_lsn is at or behind the destination's
# replicant.checkpoint).
#
# A source and a destination cluster. Source tables (test/fixtures/mirror_fault.sql):
#   types_t   every pre-cast type: int2/4/8 at their limits, numeric (NaN, +-Infinity,
#             trailing zeros, typmod), float4/8 (NaN, +-Infinity, -0, extremes), text and
#             varchar with unicode, tabs, newlines, backslashes and "\N", bytea with zero
#             bytes, uuid, date and timestamp(tz) with infinities and BC dates, interval,
#             jsonb, json (kept verbatim: spacing, duplicate keys), int[] with NULLs and a
#             non-default lower bound, multi-dimensional text[], an enum (the type is
#             created on the destination beforehand, --create-tables refers to it), bool
#   bin_t     types_t's values without the enum, plus time, timetz (zones east and west),
#             char(n), name, float8[] and date[] with NULLs: every column has a binary
#             form, so the mirror COPYs this table in binary (types_t, with its enum, goes
#             as text); kept equal to types_t row for row by a trigger on the source
#   toast_t   large out-of-line text and jsonb (STORAGE EXTERNAL); most updates change
#             other columns only (unchanged TOAST: the destination must keep its value),
#             some change the key too
#   keyed_t   key updates, key swaps inside one transaction, deletes
#   nopk_t    no primary key, REPLICA IDENTITY FULL, duplicate rows updated and deleted one
#             at a time (applied row by row, matched on every column, a json one included)
#   trunc_t, trunc2_t  TRUNCATE (alone, both at once, and between other changes)
# plus rolled-back subtransactions and rolled-back transactions, and ADD COLUMN on types_t
# and nopk_t in the middle of the stream (applied on the destination, then written to).
# Odd consumer runs apply each table by the size of its set (small ones by prepared
# statements in a pipeline), even runs every table through staging (--pipeline-max 0).
# A background workload of small transactions runs while the consumer streams with
# --create-tables (no -n: a lost connection is retried in process) and the faults come:
#   - ROUNDS (22, >= 20) SIGKILLs of the consumer, at random moments or while the
#     destination shows its batch transaction open; it is restarted after each;
#   - 2 immediate restarts of the destination while a batch is open (rounds 6 and 15): the
#     consumer must reconnect by itself and go on;
#   - 1 fast restart of the source (round 11): same;
#   - the ADD COLUMN round (8): a destination trigger
#     (test/fixtures/mirror_fault_drop_once.sql) terminates the consumer's session inside
#     the batch that applies the ADD COLUMN, after the ALTER (rolled back with it): the
#     consumer must retry in process and apply the ALTER again.
# Then the workload stops, the consumer runs to -E past the last commit (-n, exit 0), and
# every table is compared: count and md5 of the rows' text in sorted order (a multiset
# comparison, so nopk_t's duplicates count), under the same DateStyle, TimeZone,
# IntervalStyle and extra_float_digits; and the columns, and which tables went in binary.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(sleep);

my $ROUNDS = $ENV{ROUNDS} || 22;
my $SLOT   = 'mirror_fault';
my @TABLES = qw(types_t bin_t toast_t keyed_t nopk_t trunc_t trunc2_t);
my $work   = rp_work();
my $STATE  = "$work/state";

my $src = rp_cluster('src');
# COPY statements in the destination's log (no parameters): which tables went in binary
my $dst = rp_cluster('dst', "log_statement = 'mod'", 'log_parameter_max_length = 0');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, rp_fixture('mirror_fault.sql'));
# the enum type on the destination: --create-tables refers to it, it does not create types
rp_psql($dst, q{CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy', 'très "heureux" ☺')});

# some rows before the slot exists would not be streamed: start empty, create the slot first
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	# every other run applies every table through staging: both apply paths meet the faults
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', $STATE,
		'--batch-txns', '20', '--batch-ms', '100', ($runs % 2 ? () : ('--pipeline-max', '0')), @_);
}
sub consumer_err { return slurp("$work/consumer-$runs.err"); }

sub kill_consumer
{
	my ($what) = @_;
	ok($consumer->kill9_alive, "$what: the consumer (run $runs) is killed with SIGKILL while it runs")
	  or diag('it exited by itself (status ' . $consumer->status . '): ' . consumer_err());
}

# G2 after a kill: the slot never passes what the destination holds (when it holds a
# checkpoint: a kill in the first moments may come before the first one, as in the script)
sub check_ack
{
	my ($ck, $what) = @_;
	return if $ck eq '';
	my $conf = rp_slot_confirmed($src, $SLOT);
	ok(!rp_lsn_lt($ck, $conf), "$what: the slot ($conf) is not confirmed past the destination checkpoint $ck");
}

# open_batch(): the destination shows the consumer's batch transaction open
sub open_batch
{
	my ($ret, $n) = $dst->psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant'
		AND xact_start IS NOT NULL AND backend_xid IS NOT NULL");
	return $ret == 0 && $n > 0;
}

# recovered(WHAT, LSN): until the destination checkpoint passes LSN, the consumer having got
# over the fault WHAT by itself, in process (no restart from here); fails when it exits
# first (then a new run is started, so that the rounds go on)
sub recovered
{
	my ($what, $lsn) = @_;
	ok(rp_wait_until(sub {
				my $ck = rp_dst_checkpoint($dst, $SLOT);
				return $ck ne '' && rp_lsn_cmp($ck, $lsn) > 0;
			}, $consumer),
		"$what: the consumer (no -n) went on by itself: the destination checkpoint passed $lsn")
	  or diag(($consumer->alive ? 'it still runs' : 'it exited with status ' . $consumer->status) . ': ' . consumer_err());
	start_consumer() unless $consumer->alive;
}

# the workload: CALL workload(200) again and again until ctl.stop (a server restart cuts
# a call off: the next one goes on)
my $workload = RpTest::Proc->start(name => 'workload',
	cmd => [ 'bash', '-c',
		'while [ "$("$0" -X -At -d "$1" -c "SELECT stop FROM ctl" 2>/dev/null || echo f)" != t ]; do '
		  . '"$0" -X -q -v ON_ERROR_STOP=1 -d "$1" -c "CALL workload(200)" || sleep 0.3; done',
		$src->installed_command('psql'), $srcconn ],
	stdout => "$work/workload.out", stderr => "$work/workload.out", append => 1);
start_consumer();

# rounds 6, 8, 11 and 15 are the other faults; the rest are kills
my ($kills, $dst_restarts, $src_restarts, $mid_batch) = (0, 0, 0, 0);
for my $round (1 .. $ROUNDS + 4)
{
	if ($round == 8)
	{
		# ADD COLUMN in the middle of the stream; the destination drops the consumer's
		# session in the batch that applies it (the first types_t row that has the column
		# set), after the ALTER: the consumer must retry and apply the ALTER again
		rp_psql($dst, rp_fixture('mirror_fault_drop_once.sql'));
		rp_psql($src, 'UPDATE ctl SET add_col = true');
		ok(rp_wait_until(sub {
					my ($ret, $out) = $dst->psql('postgres', 'SELECT is_called FROM public.drop_once');
					return $ret == 0 && $out eq 't';
				}, $consumer),
			'round 8: the destination dropped the session applying ADD COLUMN')
		  or diag(consumer_err());
		my $before = rp_dst_checkpoint($dst, $SLOT) || '0/0';
		recovered('round 8 (session dropped after ADD COLUMN)', $before);
		rp_psql($dst, 'DROP TRIGGER drop_once ON public.types_t');
		note("round 8: ADD COLUMN; the destination dropped the session applying it; consumer went on from $before");
		next;
	}
	if ($round == 6 || $round == 15)
	{
		# the destination crashes while a batch is open; the consumer reconnects alone
		ok(rp_wait_until(\&open_batch, $consumer), "round $round: the destination shows an open batch")
		  or diag(consumer_err());
		$dst->stop('immediate');
		$dst->start;
		my $before = rp_dst_checkpoint($dst, $SLOT) || '0/0';
		$dst_restarts++;
		recovered("round $round (destination restart)", $before);
		note("round $round: destination restarted (immediate) mid-batch; consumer went on from $before");
		next;
	}
	if ($round == 11)
	{
		# the source restarts; the consumer reconnects alone
		$src->stop('fast');
		$src->start;
		my $before = rp_dst_checkpoint($dst, $SLOT) || '0/0';
		$src_restarts++;
		recovered("round $round (source restart)", $before);
		note("round $round: source restarted (fast); consumer went on from $before");
		next;
	}
	my $how;
	# every third round waits for an open batch (bounded by the timeout, as the script's
	# 60 s: when none shows, the kill comes at a random moment instead)
	if ($round % 3 == 0 && rp_wait_until(\&open_batch, $consumer))
	{
		$how = 'mid-batch';
		$mid_batch++;
	}
	else
	{
		my $ms = 100 + int(rand(1400));
		sleep($ms / 1000);
		$how = "after ${ms}ms";
	}
	kill_consumer("round $round");
	$kills++;
	my $ck = rp_dst_checkpoint($dst, $SLOT);
	check_ack($ck, "round $round");
	note("round $round: killed $how; destination checkpoint " . ($ck || 'none'));
	ok($workload->alive, "round $round: the workload still runs")
	  or diag(slurp("$work/workload.out"));
	start_consumer();
}
cmp_ok($kills, '>=', $ROUNDS, "$kills kill rounds (at least $ROUNDS)");
cmp_ok($mid_batch, '>', 0, "a kill landed while a batch was open ($mid_batch)");

rp_psql($src, 'UPDATE ctl SET stop = true');
ok(defined $workload->wait_exit, 'the workload stops');
# the source restart cuts the workload's connection (FATAL); any other failure is the test's own
my $wl = slurp("$work/workload.out");
unlike($wl, qr/ERROR:/, 'the workload ran without an error');
is(rp_psql($src, "SELECT count(*) FROM pg_attribute WHERE attrelid = 'types_t'::regclass AND attname = 'extra'"),
	'1', 'the workload added the column');
kill_consumer('the final streaming run');

my $endpos = rp_fence($src, 'INSERT INTO fence VALUES (now())');
start_consumer('-E', $endpos, '-n');
is($consumer->wait_exit, 0, "the final consumer run to $endpos exits 0") or diag(consumer_err());

# ---- compare
my $set = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = postgres; SET extra_float_digits = 3;";
my $rows = rp_compare_tables($src, $dst, @TABLES, { settings => $set });
my $cols = "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod), ', '
		ORDER BY attrelid::regclass::text, attnum) FROM pg_attribute
	WHERE attrelid::regclass::text = ANY ('{" . join(',', @TABLES) . "}') AND attnum > 0 AND NOT attisdropped";
is(rp_psql($dst, $cols), rp_psql($src, $cols), "the destination's columns equal the source's");

# bin_t's fresh rows went straight into it in binary, types_t's (an enum column) as text
my $log = slurp($dst->logfile);
like($log, qr/COPY "public"\."bin_t" \(.*\) FROM STDIN \(FORMAT binary\)/, 'a binary COPY into bin_t in the destination log');
like($log, qr/COPY "public"\."types_t" \(.*\) FROM STDIN$/m, 'a text COPY into types_t in the destination log');
unlike($log, qr/COPY "public"\."types_t" \(.*\) FROM STDIN \(FORMAT binary\)/, 'types_t (an enum column) never COPYed in binary');

my $ck = rp_dst_checkpoint($dst, $SLOT);
ok($ck ne '' && !rp_lsn_lt($ck, $endpos), "the checkpoint ($ck) is at or past the end position $endpos");
check_ack($ck, 'the end');
is(rp_psql($dst, 'SELECT count(*) FROM keyed_t WHERE id < 0'), '0', 'no row of rolled-back work reached the destination');
my $txns = rp_psql($src, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'");
note("$runs consumer runs, $kills SIGKILLs ($mid_batch mid-batch), $dst_restarts destination and $src_restarts source restarts; rows: "
	  . join(', ', map { "$_ $rows->{$_}" } @TABLES) . "; checkpoint $ck, about $txns source commits");

done_testing();
