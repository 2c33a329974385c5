# Copyright: see the project's LICENSE.

# The mirror's bulk apply paths give the source's rows, and an update that changes nothing
# writes nothing on the destination; was regress/t/mirror_fastpath.sh.
#
#   (a) an insert-only batch goes straight into the table by COPY inside a savepoint; with
#       a key of it planted in the destination (other values), the COPY fails on the key
#       (23505), the savepoint is rolled back and the batch goes through the staging merge:
#       the destination log shows the rollback, and the tables are equal after.
#   (b) updates that change nothing (UPDATE ... SET a = a) leave the destination's row
#       versions as they were (xmin and ctid of every row unchanged: no new tuple), while
#       rows of the same batch that do change are written; a numeric 1.0 -> 1.00 (equal by
#       "=", a different value) is written.
#   (c) TOASTed rows: an update of another column (the large value arrives as "unchanged")
#       keeps the destination's large value; an update that changes nothing leaves the row
#       version alone.
#   (d) a mixed batch (inserts of new keys, updates, deletes, insert-then-update, a key
#       change) ends equal.
# Every check compares the source and destination content, as text, in key order.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT = 'fastpath_mirror';
my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst', "log_statement = 'all'");
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, 'CREATE TABLE fp (id int PRIMARY KEY, a int, b text, d numeric(12,2), j json);
CREATE TABLE fpt (id int PRIMARY KEY, n int, big text);
ALTER TABLE fpt ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE fence (id serial PRIMARY KEY);');
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

# consumer(WHAT): a run of the mirror to a fence, which must exit 0
my $runs = 0;
sub consumer
{
	my ($what) = @_;
	my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
	$runs++;
	is(rp_replicant("run-$runs", '-v', -d => $srcconn, -S => $SLOT, '--start', '-n', -E => $end,
			'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state"),
		0, "run $runs ($what) exits 0") or diag(slurp("$work/run-$runs.err"));
	return;
}
# same(TABLE, WHAT): the table's rows as text in key order, count and md5, equal on both sides
sub same
{
	my ($t, $what) = @_;
	my $q = "SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x.id), '')) FROM public.$t x";
	my $a = rp_psql($src, $q);
	is(rp_psql($dst, $q), $a, "$what: table $t equals the source ($a)");
	return;
}
# versions(TABLE, WHERE): the destination's row versions, "id xmin ctid" lines
sub versions
{
	my ($t, $where) = @_;
	return rp_psql($dst, "SELECT id || ' ' || xmin || ' ' || ctid FROM public.$t WHERE $where ORDER BY id");
}
sub rollbacks
{
	my $n = () = slurp($dst->logfile) =~ /ROLLBACK TO SAVEPOINT rp_fresh/g;
	return $n;
}

# ---- a first batch creates the tables (fresh keys, straight COPY)
rp_psql($src, "INSERT INTO fp SELECT g, g, 'b' || g, g / 4.0, json_build_object('g', g) FROM generate_series(1, 100) g;
	INSERT INTO fpt SELECT g, g, (SELECT string_agg(md5(g::text || r::text), '') FROM generate_series(1, 200) r)
	  FROM generate_series(1, 20) g;");
consumer('first batch');
same('fp', 'first batch');
same('fpt', 'first batch');

# ---- (a) insert-only batch, one key already in the destination with other values
rp_psql($dst, "INSERT INTO public.fp VALUES (150, -1, 'planted', -1, '{}')");
my $rb = rollbacks();
rp_psql($src, "INSERT INTO fp SELECT g, g, 'b' || g, g / 4.0, json_build_object('g', g) FROM generate_series(101, 200) g");
consumer('(a)');
same('fp', '(a) insert-only batch with a planted key');
my $rb2 = rollbacks();
ok($rb2 > $rb, "(a) the planted key sent the batch through the fallback (ROLLBACK TO SAVEPOINT rp_fresh: $rb before, $rb2 after)");

# ---- (b) updates that change nothing, beside ones that do, in one batch
my $before = versions('fp', 'id <= 50');
rp_psql($src, 'UPDATE fp SET a = a, j = j WHERE id <= 50;
	UPDATE fp SET a = a + 1 WHERE id > 50 AND id <= 60;
	UPDATE fp SET d = 1.00 WHERE id = 61;');
consumer('(b)');
same('fp', '(b) updates');
is(versions('fp', 'id <= 50'), $before, '(b) updates that changed nothing wrote no new row versions on the destination');
is(rp_psql($dst, 'SELECT count(*) FROM public.fp WHERE id > 50 AND id <= 60 AND a = id + 1'), '10',
	'(b) the 10 changed rows were written');

# equal by "=", different values: numeric scale
rp_psql($src, 'CREATE TABLE fpn (id int PRIMARY KEY, v numeric); INSERT INTO fpn VALUES (1, 1.0), (2, 2.50);');
consumer('(b) fpn created');
rp_psql($src, 'UPDATE fpn SET v = 1.00 WHERE id = 1; UPDATE fpn SET v = v WHERE id = 2;');
$before = versions('fpn', 'id = 2');
consumer('(b) numeric');
same('fpn', '(b) numeric 1.0 -> 1.00');
is(rp_psql($dst, 'SELECT v::text FROM public.fpn WHERE id = 1'), '1.00', '(b) numeric 1.0 -> 1.00 was written');
is(versions('fpn', 'id = 2'), $before, '(b) numeric v = v wrote no new row version');

# ---- (c) TOASTed rows: the large value unchanged
rp_psql($src, 'UPDATE fpt SET n = n + 100 WHERE id <= 10');
consumer('(c) update of n');
same('fpt', '(c) update beside an unchanged TOAST value');
$before = versions('fpt', 'true');
rp_psql($src, 'UPDATE fpt SET n = n WHERE id <= 15');
consumer('(c) no-op update');
same('fpt', '(c) update that changes nothing');
is(versions('fpt', 'true'), $before, '(c) updates of TOASTed rows that changed nothing wrote no new row versions');

# ---- (d) a mixed batch
rp_psql($src, q{INSERT INTO fp SELECT g, g, 'b' || g, g / 4.0, json_build_object('g', g) FROM generate_series(201, 300) g;
UPDATE fp SET b = b || 'x' WHERE id % 7 = 0;
DELETE FROM fp WHERE id % 11 = 0;
INSERT INTO fp VALUES (400, 0, 'new', 0, '[]');
UPDATE fp SET a = 400 WHERE id = 400;
UPDATE fp SET id = 1000 + id WHERE id IN (12, 13);
UPDATE fp SET a = a WHERE id BETWEEN 20 AND 30;
UPDATE fpt SET big = big || 'tail' WHERE id = 3;
DELETE FROM fpt WHERE id = 4;});
consumer('(d)');
same('fp', '(d) mixed batch');
same('fpt', '(d) mixed batch');

done_testing();
