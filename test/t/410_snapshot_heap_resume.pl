
# Copyright: see the project's LICENSE.

# The mirror's snapshot reads keyed tables in physical order (tuple ids), and a copy
# resumed after a crash is still exact when rows moved in between; was
# regress/t/snapshot_heap_resume.sh.
#
# Proves G1 for the two ways a stored tuple-id position can mislead a resumed copy
# (docs/guarantees.md, "Resuming"):
# - rows not yet copied that an UPDATE moved below the stored position (into space a
#   VACUUM freed), with a TOASTed column the UPDATE left unchanged, so the stream alone
#   cannot rebuild them: the resumed copy must take them again (its xmin horizon);
# - a table rewritten by VACUUM FULL, where every tuple id changed: its copy must start
#   over.
# The consumer is stopped (SIGSTOP) once both tables have stored chunks and killed
# (SIGKILL), the source is changed, and the consumer is started again. Afterwards both
# tables equal the source. A destination trigger slows each chunk down so the stop lands
# mid-copy. Tables: test/fixtures/snapshot_heap_resume_tables.sql.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $SLOT = 'snap_heap';
my $ROWS = 12000;

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

my $tables_sql = rp_fixture('snapshot_heap_resume_tables.sql');
rp_psql($src, "$tables_sql
INSERT INTO h_t SELECT g, repeat(md5(g::text), 70), g FROM generate_series(1, $ROWS) g;
INSERT INTO r_t SELECT g, md5(g::text) FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE h_t, r_t;");
# the destination holds the tables (empty), each chunk's COPY slowed by a statement trigger
rp_psql($dst, $tables_sql . q{
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$;
CREATE TRIGGER slow AFTER INSERT ON h_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
CREATE TRIGGER slow AFTER INSERT ON r_t FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE h_t ENABLE ALWAYS TRIGGER slow;
ALTER TABLE r_t ENABLE ALWAYS TRIGGER slow;});

sub dst_ck { return rp_dst_checkpoint($dst, $SLOT); }
# rows stored for table T, 0 when none
sub stored
{
	my ($t) = @_;
	my ($r, $o) = $dst->psql('postgres',
		"SELECT coalesce(max(rows), 0) FROM replicant.snapshot_progress
		 WHERE slot = '$SLOT' AND dest_table = '\"public\".\"$t\"'");
	return $r == 0 && $o ne '' ? $o : 0;
}
sub token
{
	my ($t) = @_;
	return rp_psql($dst,
		"SELECT token FROM replicant.snapshot_progress WHERE slot = '$SLOT' AND dest_table = '\"public\".\"$t\"'");
}

my $runs = 0;
my $consumer;
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("c$runs", { stdout => "$work/c$runs.out" },
		-d => $srcconn, -S => $SLOT, '--create-slot', '--snapshot', '--start',
		'--snapshot-workers=2', '--snapshot-chunk-rows=1000', '--sink', "postgres:$dstconn",
		'--state-dir', "$work/state", '-s', '1', '-v');
}

start_consumer();
ok(rp_wait_until(sub { stored('h_t') >= 3000 && stored('r_t') >= 3000 }, $consumer),
	'the first run stores at least 3000 rows of each table') or diag(slurp("$work/c1.err"));
$consumer->signal('STOP');
is(dst_ck(), '', 'the snapshot has not completed before the stop');
my $htok = token('h_t');
my $rtok = token('r_t');
like($htok, qr/^v2\|[^|]*\|0\|/, "h_t's token is an unfinished heap-order one");
like($rtok, qr/^v2\|[^|]*\|0\|/, "r_t's token is an unfinished heap-order one");
# the stored position: v2|LSN|DONE|ROWS|AT|ID|FILENODE|HORIZON|BLOCK.OFFSET
my ($hblk, $hoff) = $htok =~ /\|(\d+)\.(\d+)$/;
my $htid = defined $hoff ? "($hblk,$hoff)" : '(0,0)';
my $hrows = stored('h_t');
note("stopped: h_t $hrows rows stored (up to tuple $htid), r_t " . stored('r_t') . ' rows stored');

# the consumer dies mid-copy; its source sessions (and their snapshot and locks) go with it
ok($consumer->kill9_alive, 'the stopped first run killed with SIGKILL');
ok(rp_wait_until(sub {
			rp_psql($src, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replicant'") eq '0';
		}),
	"the killed run's source sessions are gone");

# change the source between the runs
my $first_uncopied = rp_psql($src, "SELECT min(id) FROM h_t WHERE ctid > '$htid'::tid");
rp_psql($src, "DELETE FROM h_t WHERE id <= 600;
VACUUM h_t;
UPDATE h_t SET v = -v WHERE id > $ROWS - 600;
UPDATE h_t SET id = id + 100000 WHERE id BETWEEN $ROWS - 700 AND $ROWS - 650;
INSERT INTO h_t SELECT g, repeat(md5(g::text), 70), g FROM generate_series(200001, 200300) g;
VACUUM FULL r_t;
UPDATE r_t SET v = 'x' || v WHERE id % 7 = 0;
DELETE FROM r_t WHERE id % 11 = 0;");
my $moved = rp_psql($src, "SELECT count(*) FROM h_t WHERE id > $ROWS - 600 AND ctid < '$htid'::tid");
cmp_ok($first_uncopied || 0, '>', 600,
	"the stop came late enough: the first uncopied row of h_t is $first_uncopied");
cmp_ok($moved, '>', 0, "updated rows of h_t moved below the stored position $htid ($moved): the case is exercised");

rp_psql($dst, 'CREATE OR REPLACE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$');
start_consumer();
ok(rp_wait_until(sub { dst_ck() ne '' }, $consumer), 'the resumed snapshot completes (a checkpoint)')
  or diag(slurp("$work/c$runs.err"));
my $err = slurp("$work/c$runs.err");
like($err, qr/resuming the snapshot of consistent point/, 'the second run resumed');
like($err, qr/table "public"."r_t" was rewritten since its copy stopped/, 'the rewrite of r_t was noticed');
unlike($err, qr/table "public"."h_t" was rewritten/, 'h_t was not copied again from the start');

my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $fence, $consumer), "the mirror checkpointed the fence $fence while streaming")
  or diag(slurp("$work/c$runs.err"));
$consumer->signal('TERM');
is($consumer->wait_exit, 0, 'the consumer exits 0 on SIGTERM') or diag(slurp("$work/c$runs.err"));

rp_compare_tables($src, $dst, qw(h_t r_t));

done_testing();
