
# Copyright: see the project's LICENSE.

# Tables added to the selection of a running mirror are backfilled (--backfill, the DBLog
# method) while the stream runs and a workload keeps changing them, and the mirror
# converges; was regress/t/backfill.sh.
#
# A stream mirrors a_t alone (include_tables) under a workload (test/fixtures/backfill.sql)
# that changes a_t, b_t (keyed, 30,000 rows before the slot existed) and c_t (a two-column
# text/int key, 6,000 rows). Then the consumer is restarted with b_t and c_t added to
# include_tables and --backfill for both, 2,000-row chunks: the workload goes on updating,
# deleting, re-inserting (into key ranges the backfill is reading or has read) and moving
# rows to new keys. The consumer is killed with SIGKILL after a few of b_t's chunks are
# stored and started again: the run must resume after the stored token (its log says so)
# rather than start over. When both tables are backfilled, the workload stops, a final run
# streams to a fence, and every table is compared: count(*) and md5 of the rows' text in
# sorted order, source against destination.
#
# Proves the backfill part of issue 5: a row the stream changed while its chunk was being
# read keeps the stream's version (without the window the workload's updates inside chunks
# leave stale rows, and the comparison fails), every row the stream did not change comes
# from a chunk exactly once, and the progress token commits with the rows (G1 across the
# kill).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work   = rp_work();
my $SLOT   = 'backfill';
my @TABLES = qw(a_t b_t c_t);

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

# Until the kill, each backfill chunk applied to b_t or c_t in the destination (the
# statement that reads the chunk's staging table, rp_bfs_*) takes 0.2 s more: the backfill
# cannot finish before the kill however fast the machine is; the stream's statements are
# not slowed. The consumer creates those tables (--create-tables): an event trigger gives
# each its statement trigger as it is created.
rp_slow_new_tables($dst, 0.2, 'INSERT OR UPDATE', '%rp_bfs_%', 'b_t', 'c_t');

rp_psql($src, rp_fixture('backfill.sql'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");
# a_t's rows come by the stream (after the slot); b_t's and c_t's are older: only a
# backfill has them
rp_psql($src, 'INSERT INTO a_t SELECT g, md5(g::text), 0 FROM generate_series(1, 1000) g');

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state",
		'--batch-txns', '50', '--batch-ms', '100', @_);
}
sub err { return slurp("$work/consumer-$runs.err"); }

# stop_consumer(WHAT): SIGTERM to a run that must still be running; it exits 0
sub stop_consumer
{
	my ($what) = @_;
	ok($consumer->alive, "run $runs still runs at $what")
	  or diag('it exited by itself (status ' . $consumer->status . '): ' . err());
	$consumer->signal('TERM');
	# new: the script did not look at the status after SIGTERM
	is($consumer->wait_exit, 0, "run $runs exits 0 on SIGTERM at $what") or diag(err());
}

# progress of the backfill in the destination: (tables, tables done, stored rows of b_t)
sub progress
{
	my ($r, $o) = $dst->psql('postgres',
		"SELECT count(*) || ' ' || count(*) FILTER (WHERE done) || ' ' ||
		        coalesce(sum(rows) FILTER (WHERE dest_table LIKE '%b_t%'), 0)
		   FROM replicant.backfill_progress WHERE slot = '$SLOT'");
	return $r == 0 && $o ne '' ? split(/ /, $o) : (0, 0, 0);
}

# the workload: transactions one after the other until ctl.stop (the procedure reads it
# before each)
my $workload = rp_psql_bg($src, 'workload', 'CALL workload(2000000000)');

# ---- the stream mirrors a_t alone
my @ONLY_A   = ('-o', 'include_tables=public.a_t');
my @ALL      = ('-o', 'include_tables=public.a_t,public.b_t,public.c_t');
my @BACKFILL = ('--backfill=public.b_t', '--backfill=public.c_t', '--backfill-chunk-rows=2000', '-v');
start_consumer(@ONLY_A);
# the script let it stream for 3 s: until the workload changed all three tables and the
# mirror checkpointed a position after that
ok(rp_wait_until(sub { rp_psql($src, 'SELECT count(*) > 5 FROM a_t WHERE id >= 1000000') eq 't' }, $workload),
	'the workload commits') or diag(slurp("$work/workload.out"));
my $pos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $pos, $consumer),
	"the mirror of a_t alone checkpointed $pos, past workload transactions over all three tables")
  or diag(err());
stop_consumer('the growth of the selection');
is(rp_psql($dst, "SELECT count(*) FROM pg_tables WHERE tablename IN ('b_t', 'c_t')"), '0',
	'b_t and c_t did not reach the destination before they were selected');

# ---- b_t and c_t join the selection and are backfilled while the workload goes on
start_consumer(@ALL, @BACKFILL);
my ($ntab, $ndone, $brows);
ok(rp_wait_until(sub { ($ntab, $ndone, $brows) = progress(); $brows >= 6000 }, $consumer),
	"the backfill stored at least 6000 rows of b_t (run $runs still running)")
  or diag(err());
is($ndone, 0, "no table's backfill finished before the kill ($brows rows of b_t stored)");
ok($consumer->kill9_alive, "run $runs killed with SIGKILL during the backfill")
  or diag('it exited by itself (status ' . $consumer->status . '): ' . err());
note("killed the consumer during the backfill ($brows rows of b_t stored)");
rp_slow_off($dst);

start_consumer(@ALL, @BACKFILL);
ok(rp_wait_until(sub { ($ntab, $ndone, $brows) = progress(); $ntab == 2 && $ndone == 2 }, $consumer),
	'the run after the kill backfills both tables')
  or diag("$ndone of $ntab tables done: " . err());
ok(rp_wait_file_match("$work/consumer-$runs.err", qr/table "public"\."b_t": resuming after/, $consumer),
	"the run after the kill resumed b_t after its stored token");
ok(rp_wait_file_match("$work/consumer-$runs.err", qr/table "public"\."c_t" backfilled/, $consumer),
	'the run after the kill reported c_t backfilled');

# the workload keeps changing the backfilled tables under the plain stream (the script
# slept 2 s): until the mirror checkpointed a position read now, while the workload writes
$pos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $pos, $consumer),
	"the mirror streams on after the backfill under the workload (checkpoint past $pos)")
  or diag(err());
ok($workload->alive, 'the workload still ran then');
rp_psql($src, 'UPDATE ctl SET stop = true');
$workload->wait_exit;
unlike(slurp("$work/workload.out"), qr/ERROR:/, 'the workload ran without an error');
stop_consumer('the end of the workload');

# ---- a final run to a fence; a restart with --backfill finds both tables done
my $endpos = rp_fence($src, 'INSERT INTO fence VALUES (now())');
start_consumer(@ALL, @BACKFILL, '-E', $endpos, '-n');
is($consumer->wait_exit, 0, "the final run to $endpos exits 0") or diag(err());
like(err(), qr/table "public"\."b_t" is already backfilled/, "the final run found b_t's backfill done");

# ---- compare
my $rows = rp_compare_tables($src, $dst, @TABLES,
	{ settings => "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 3;" });
my $changed = rp_psql($src, q{SELECT count(*) FROM b_t WHERE v LIKE 'upserted%' OR grp <> id % 17});
note('tables equal (rows: ' . join(', ', map { "$_ $rows->{$_}" } @TABLES)
	  . ") after a SIGKILL mid-backfill and a resume ($changed rows of b_t changed by the workload)");

done_testing();
