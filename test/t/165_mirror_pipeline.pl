# Copyright: see the project's LICENSE.

# The mirror's two apply paths, the short one (prepared statements in a pipeline, for a
# table with few pending effects: rp_mirror_pipeline.c) and staging (COPY into a temporary
# table and joined statements), and the switch between them, give the source's rows:
#
#   (a) batches over 40 keyed tables, a keyless one and a table with a unique column besides
#       its key: inserts, updates, deletes, a key change, an insert then delete; a key freed
#       and taken by another row under the unique column in one batch (deletes go first);
#       a row with an unchanged TOAST value updated, and moved to a new key.
#   (b) one table small in a batch, large in the next (staging), small again: each equal.
#   (c) a fresh key (first seen as an INSERT) the destination holds already, with other
#       values: not inserted by the first round, upserted by the second; equal after.
#   (d) a table whose description changes (a column added) between two batches of one run
#       gets new statements: the old ones are deallocated, the new ones carry the column.
#   (e) no catalog churn: 150 batches of a few rows over the 40 tables write no row of the
#       destination's pg_class or pg_attribute, and 60 staged batches of one table write
#       only the staging tables a session makes once (before the fix every batch made a
#       new relfilenode for each staging table it truncated: two pg_class updates each).
#   (f) kill -9 rounds: a consumer streaming a workload over the 41 tables in batches of
#       every size is killed with SIGKILL three times and started again; the tables equal
#       the source at the end (a lost or repeated change would show: the keyless table
#       counts its rows as a multiset).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT = 'pipeline_mirror';
my $NT   = 40;
my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst', "log_statement = 'all'");
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
my @tables = ((map { "mt_$_" } 1 .. $NT), 'nk', 'uq', 'tt');

rp_psql($src, join("\n",
	(map { "CREATE TABLE mt_$_ (id int PRIMARY KEY, a int, b text, d numeric);" } 1 .. $NT),
	'CREATE TABLE nk (a int, b text);',
	'CREATE TABLE uq (id int PRIMARY KEY, email text UNIQUE NOT NULL);',
	'CREATE TABLE tt (id int PRIMARY KEY, n int, big text);',
	'ALTER TABLE tt ALTER COLUMN big SET STORAGE EXTERNAL;',
	'CREATE TABLE fence (id serial PRIMARY KEY);'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

# consumer(WHAT, ARG...): a run of the mirror to a fence, which must exit 0
my $runs = 0;
sub consumer
{
	my ($what, @args) = @_;
	my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
	$runs++;
	is(rp_replicant("run-$runs", '-v', -d => $srcconn, -S => $SLOT, '--start', '-n', -E => $end,
			'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state", @args),
		0, "run $runs ($what) exits 0") or diag(slurp("$work/run-$runs.err"));
	return;
}
# statements(PATTERN): how many the destination logged so far
sub statements
{
	my ($re) = @_;
	my $n = () = slurp($dst->logfile) =~ /$re/g;
	return $n;
}
# catalog_writes(): rows of pg_class and pg_attribute inserted, updated and deleted so far
sub catalog_writes
{
	return rp_psql($dst, "SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FROM pg_stat_sys_tables
		WHERE relname IN ('pg_class', 'pg_attribute')");
}
sub big { my ($seed) = @_; return "(SELECT string_agg(md5('$seed' || r), '') FROM generate_series(1, 200) r)"; }

# ---- (a) batches over many tables
rp_psql($src, join("\n",
	(map { "INSERT INTO mt_$_ SELECT g, g, 'b' || g, g / 3.0 FROM generate_series(1, 5) g;" } 1 .. $NT),
	"INSERT INTO nk VALUES (1, 'x'), (1, 'x'), (2, 'y');",
	"INSERT INTO uq VALUES (1, 'one'), (2, 'two');",
	'INSERT INTO tt SELECT g, g, ' . big('t') . ' FROM generate_series(1, 3) g;'));
consumer('(a) first rows');
my $stmts = statements(qr/execute rp_[fu]\d+/);
ok($stmts >= 5 * $NT, "(a) the small sets went the short way: $stmts executions of prepared upserts logged");
is(statements(qr/CREATE TEMP TABLE/), 0, '(a) and no staging table was made');
rp_compare_tables($src, $dst, @tables);

rp_psql($src, join("\n",
	(map { "UPDATE mt_$_ SET a = a + 1, b = b || 'u' WHERE id = 2;" } 1 .. $NT),
	(map { "DELETE FROM mt_$_ WHERE id = 3;" } 1 .. $NT / 2),
	'UPDATE mt_1 SET id = 100 WHERE id = 4;',
	'INSERT INTO mt_2 VALUES (50, 0, NULL, NULL); DELETE FROM mt_2 WHERE id = 50;',
	'UPDATE mt_3 SET d = 1.00 WHERE id = 1;',
	"INSERT INTO nk VALUES (1, 'x');",
	"DELETE FROM uq WHERE id = 1; INSERT INTO uq VALUES (3, 'one');",
	'UPDATE tt SET n = n + 10 WHERE id = 1;',
	'UPDATE tt SET id = 30 WHERE id = 2;'));
consumer('(a) updates, deletes, a key change, a freed unique value, unchanged TOAST');
rp_compare_tables($src, $dst, @tables);
is(rp_psql($dst, 'SELECT d::text FROM public.mt_3 WHERE id = 1'), '1.00', '(a) numeric 0.33... -> 1.00 written as the source has it');
is(rp_psql($dst, 'SELECT length(big) FROM public.tt WHERE id = 30'), '6400',
	'(a) the moved row kept its unchanged TOAST value');

# ---- (b) one table small, large, small
for my $step ([ 'small', 10 ], [ 'large', 400 ], [ 'small again', 8 ])
{
	my ($what, $n) = @{$step};
	my $before = statements(qr/CREATE TEMP TABLE/);
	rp_psql($src, "UPDATE mt_5 SET a = a + 1 WHERE id <= 3; INSERT INTO mt_5 SELECT g, g, 'n', 0
		FROM generate_series((SELECT max(id) + 1 FROM mt_5), (SELECT max(id) + $n FROM mt_5)) g");
	consumer("(b) $what");
	rp_compare_tables($src, $dst, 'mt_5');
	my $made = statements(qr/CREATE TEMP TABLE/) - $before;
	if ($what eq 'large') { ok($made > 0, "(b) the large set went through staging ($made staging tables made)"); }
	else { is($made, 0, "(b) the $what set did not go through staging"); }
}

# ---- (c) a fresh key the destination holds already
rp_psql($dst, "INSERT INTO public.mt_6 VALUES (77, -1, 'planted', -1)");
rp_psql($src, "INSERT INTO mt_6 VALUES (77, 77, 'source', 7)");
consumer('(c) a planted key');
rp_compare_tables($src, $dst, 'mt_6');
ok(statements(qr/execute rp_u\d+/) > 0, '(c) the planted key went again as an upsert');

# ---- (d) a new description: new statements, the old deallocated (one run, a batch each)
rp_psql($src, "UPDATE mt_7 SET a = a + 1 WHERE id = 1;
	ALTER TABLE mt_7 ADD COLUMN e text;
	UPDATE mt_7 SET e = 'e' || id;");
consumer('(d) a column added', '--batch-txns', '1');
rp_compare_tables($src, $dst, 'mt_7');
ok(statements(qr/DEALLOCATE rp_\w+/) > 0, '(d) the statements of the old description were deallocated');

# ---- (e) no catalog churn
consumer('(e) warm-up');
my $w0 = catalog_writes();
rp_psql($src, join("\n", map {
	my $b = $_;
	join("\n", 'BEGIN;', (map { "UPDATE mt_$_ SET a = a + 1 WHERE id = 1;" } grep { $_ % 3 == $b % 3 } 1 .. $NT), 'COMMIT;')
} 1 .. 150));
consumer('(e) 150 small batches', '--batch-txns', '1');
my $w1 = catalog_writes();
is($w1 - $w0, 0, "(e) 150 small batches wrote no row of pg_class or pg_attribute ($w0 -> $w1)");
rp_psql($src, join("\n", map { "UPDATE mt_8 SET a = a + 1 WHERE id <= 5; INSERT INTO mt_8 SELECT g, g, 's', 0
	FROM generate_series($_ * 100 + 1000, $_ * 100 + 1040) g;" } 1 .. 60));
consumer('(e) 60 staged batches', '--batch-txns', '1');
my $w2 = catalog_writes();
cmp_ok($w2 - $w1, '<=', 40, "(e) 60 staged batches wrote only what one session's staging tables need ($w1 -> $w2)");
rp_compare_tables($src, $dst, 'mt_8');

# ---- (f) kill -9 rounds
my $load = rp_psql_bg($src, 'load', join("\n", map {
	my $i = $_;
	my $t = 1 + ($i * 7) % $NT;
	($i % 50 == 0
		? "BEGIN; INSERT INTO mt_$t SELECT g, g, 'bulk', 0 FROM generate_series(100000 + $i * 100, 100000 + $i * 100 + 79) g; COMMIT;"
		: "BEGIN; INSERT INTO mt_$t VALUES (10000 + $i, $i, 'k', $i); UPDATE mt_" . (1 + $i % $NT)
		  . " SET a = a + 1 WHERE id = 1; INSERT INTO nk VALUES ($i, 'k'); COMMIT;")
	  . ($i % 10 == 0 ? ' SELECT pg_sleep(0.05);' : '')
} 1 .. 1500));
for my $round (1 .. 3)
{
	$runs++;
	my $c = rp_consumer("run-$runs", -d => $srcconn, -S => $SLOT, '--start', '-s', '1', '--batch-txns', '7',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state");
	my $ck = rp_dst_checkpoint($dst, $SLOT);
	ok(rp_wait_until(sub { rp_dst_checkpoint($dst, $SLOT) ne $ck || !$load->alive }, $c),
		"(f) round $round: the consumer committed a batch (or the workload ended)");
	ok($c->kill9_alive, "(f) round $round: the consumer is killed with SIGKILL while it runs");
}
ok(defined $load->wait_exit, '(f) the workload ended');
consumer('(f) after the kills');
rp_compare_tables($src, $dst, @tables);

done_testing();
