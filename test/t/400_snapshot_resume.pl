
# Copyright: see the project's LICENSE.

# An initial snapshot into the mirror killed with SIGKILL part way resumes from its last
# stored chunk, and the result is still exact; was regress/t/snapshot_resume.sh.
#
# Proves G1 across a crash of the consumer during the copy: each chunk commits with its
# progress token (replicant.snapshot_progress), so a restart with the same command copies
# only the chunks after the last stored one (under a new snapshot) and streams from the
# slot's original consistent point, which reconciles the rows the two snapshots saw
# differently (docs/guarantees.md). A workload writes throughout
# (test/fixtures/snapshot_resume.sql); the consumer is killed twice during the copy, each
# time once 20,000 more rows are stored. Afterwards every table equals the source (count
# and md5), the stored consistent point never moved, the last run resumed and copied fewer
# rows than the tables hold, and no progress is left behind. BIG_ROWS (default 300000)
# sizes big_t, as the script's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $big_rows = $ENV{BIG_ROWS} || 300000;
my $work     = rp_work();
my $SLOT     = 'snap_resume';
my @TABLES   = qw(big_t wide_t comp_t);

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

my $tables_sql = rp_fixture('snapshot_resume_tables.sql');
(my $src_sql = rp_fixture('snapshot_resume.sql')) =~ s/\@BIG_ROWS\@/$big_rows/g;
rp_psql($src, $tables_sql . $src_sql);
# The destination holds the tables, each chunk's statement slowed by a trigger until the
# kills are done: the copy cannot finish before them however fast the machine is (it takes
# at least 37 chunks x 0.2 s / 2 workers).
rp_psql($dst, $tables_sql . q{
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.2); RETURN NULL; END $$;
CREATE TRIGGER slow AFTER INSERT ON big_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
CREATE TRIGGER slow AFTER INSERT ON wide_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
CREATE TRIGGER slow AFTER INSERT ON comp_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE big_t ENABLE ALWAYS TRIGGER slow;
ALTER TABLE wide_t ENABLE ALWAYS TRIGGER slow;
ALTER TABLE comp_t ENABLE ALWAYS TRIGGER slow;});

# the workload: transactions one after the other until ctl.stop (the procedure reads it
# before each)
my $workload = rp_psql_bg($src, 'workload', 'CALL workload(2000000000)');

sub dst_ck { return rp_dst_checkpoint($dst, $SLOT); }
sub stored
{
	my ($r, $o) = $dst->psql('postgres',
		"SELECT coalesce(sum(rows), 0) FROM replicant.snapshot_progress WHERE slot = '$SLOT'");
	return $r == 0 && $o ne '' ? $o : 0;
}

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("c$runs", { stdout => "$work/c$runs.out" },
		-d => $srcconn, -S => $SLOT, '--create-slot', '--snapshot', '--start', '--create-tables',
		'--snapshot-workers=2', '--snapshot-chunk-rows=10000', '--sink', "postgres:$dstconn",
		'--state-dir', "$work/state", '-s', '1', '-v');
}

# kill twice, each time once some chunks (more than last time) are stored
my ($last, $lsn0) = (0, undef);
start_consumer();
for my $round (1, 2)
{
	my $want = $last + 20000;
	ok(rp_wait_until(sub { stored() > $want || dst_ck() ne '' }, $consumer),
		"kill $round: more than $want rows stored while run $runs runs")
	  or diag(slurp("$work/c$runs.err"));
	is(dst_ck(), '', "kill $round: the snapshot has not completed before it");
	ok($consumer->kill9_alive, "kill $round: run $runs killed with SIGKILL while it runs")
	  or diag('it exited by itself: ' . slurp("$work/c$runs.err"));
	$last = stored();
	cmp_ok($last, '>', 0, "kill $round: rows stored ($last)");
	my $lsn = rp_psql($dst,
		"SELECT DISTINCT split_part(token, '|', 2) FROM replicant.snapshot_progress WHERE slot = '$SLOT'");
	like($lsn, qr{^[0-9A-F]+/[0-9A-F]+$}, "kill $round: the progress rows store one consistent point ($lsn)");
	$lsn0 //= $lsn;
	is($lsn, $lsn0, "kill $round: the stored consistent point did not move ($lsn0)");
	note("kill $round: $last rows stored (consistent point $lsn)");
	rp_psql($dst, 'CREATE OR REPLACE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$')
	  if $round == 2;
	start_consumer();
}
ok(rp_wait_until(sub { dst_ck() ne '' }, $consumer), 'the resumed snapshot completes (a checkpoint)')
  or diag(slurp("$work/c$runs.err"));
# the checkpoint commits before the consumer prints its summary line: wait for the line too
# (under ThreadSanitizer the line came after the check had read stderr: "copied ? rows")
ok(rp_wait_file_match("$work/c$runs.err", qr/snapshot complete: \d+ rows/, $consumer),
	'the last run reports the snapshot complete') or diag(slurp("$work/c$runs.err"));
my $err = slurp("$work/c$runs.err");
like($err, qr/resuming the snapshot of consistent point/, 'the last run resumed');
my ($copied) = $err =~ /snapshot complete: (\d+) rows/;
my $total = rp_psql($src,
	'SELECT (SELECT count(*) FROM big_t) + (SELECT count(*) FROM wide_t) + (SELECT count(*) FROM comp_t)');
ok(defined $copied && $copied < $total - $last / 2,
	'the last run copied ' . ($copied // '?') . " rows of $total: it resumed from the stored chunks ($last)");

# the stream goes on under the workload (the script slept 2 s here): until the mirror
# checkpointed a position read now, while the workload still writes
my $pos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $pos, $consumer), "the mirror streams on under the workload (checkpoint past $pos)");
ok($workload->alive, 'the workload still ran then');

rp_psql($src, 'UPDATE ctl SET stop = true');
$workload->wait_exit;
unlike(slurp("$work/workload.out"), qr/ERROR:/, 'the workload ran without an error');
my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $fence, $consumer), "the mirror checkpointed the fence $fence")
  or diag(slurp("$work/c$runs.err"));
$consumer->signal('TERM');
is($consumer->wait_exit, 0, 'the consumer exits 0 on SIGTERM') or diag(slurp("$work/c$runs.err"));

rp_compare_tables($src, $dst, @TABLES,
	{ settings => "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 3;" });
is(rp_psql($dst, 'SELECT count(*) FROM replicant.snapshot_progress'), '0', 'no snapshot progress left behind');

done_testing();
