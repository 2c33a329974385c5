
# Copyright: see the project's LICENSE.

# PostgreSQL 18's virtual generated columns: computed when read, never in the WAL. The
# plugin leaves them out as pgoutput does (they are not published: not in the Relation
# record, no entry in any tuple), and publishes a stored generated column with its value
# and the generated flag (what pgoutput does under publish_generated_columns = stored).
# Before the fix an 18 server's virtual column was listed and sent as SQL NULL, flagged as
# generated: a log reader took NULL for its value. Runs on 18 only (regress/run_tests.sh
# runs it against the 18 servers of the version matrix).
#
# Checked: the JSON records of a table whose virtual column sits between published ones
# (the positions after it shift), of a REPLICA IDENTITY FULL table (old tuples) and of a
# partitioned table published through its root (partitions=root: the root's description,
# the leaf's tuples mapped onto it); the binary stream through the mirror: a snapshot and
# then the stream, a kill -9 in the stream, into a destination whose tables have the
# same generated columns (the destination computes them), every table compared with the
# source, virtual columns included, and `replicant verify` equal over every table.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $SLOT = 'virt';

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
cmp_ok($src->pg_version, '>=', 18, 'the servers are PostgreSQL 18 or later (' . $src->pg_version . ')')
  or BAIL_OUT('virtual generated columns need PostgreSQL 18');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

my $schema = <<'SQL';
CREATE TABLE g (id int PRIMARY KEY, a int NOT NULL,
  v int GENERATED ALWAYS AS (a * 3) VIRTUAL,
  s int GENERATED ALWAYS AS (a * 2) STORED,
  b text, vt text GENERATED ALWAYS AS ('<' || b || '>') VIRTUAL);
CREATE TABLE gf (a int, v text GENERATED ALWAYS AS ('x' || a) VIRTUAL, c int);
ALTER TABLE gf REPLICA IDENTITY FULL;
CREATE TABLE gp (id int, a int, v int GENERATED ALWAYS AS (a + 1) VIRTUAL, PRIMARY KEY (id))
  PARTITION BY RANGE (id);
CREATE TABLE gp_1 PARTITION OF gp FOR VALUES FROM (0) TO (1000);
CREATE TABLE gp_2 PARTITION OF gp FOR VALUES FROM (1000) TO (MAXVALUE);
CREATE TABLE fence (id serial PRIMARY KEY, at timestamptz DEFAULT now());
SQL
rp_psql($src, $schema);
rp_psql($dst, $schema);
rp_psql($src, q{INSERT INTO g (id, a, b) SELECT i, i, 'b' || i FROM generate_series(1, 300) i;
	INSERT INTO gf (a, c) SELECT i % 7, i FROM generate_series(1, 100) i;
	INSERT INTO gp (id, a) SELECT i * 7, i FROM generate_series(1, 300) i});

# ---- the JSON records (a slot of its own, read with the SQL functions)
rp_psql($src, "SELECT pg_create_logical_replication_slot('virt_json', 'replicant')");
rp_psql($src, q{INSERT INTO g (id, a, b) VALUES (1001, 5, 'x');
	UPDATE g SET a = 6, b = NULL WHERE id = 1001;
	UPDATE gf SET c = -c WHERE a = 3; DELETE FROM gf WHERE a = 4;
	INSERT INTO gp (id, a) VALUES (5, 1), (5000, 2); DELETE FROM gp WHERE id = 5000});
my $json = rp_psql($src, "SELECT data FROM pg_logical_slot_peek_changes('virt_json', NULL, NULL,
	'format', 'json', 'proto_version', '3', 'partitions', 'root')");
my @recs = map { /^\{/ ? $_ : () } split /\n/, $json;
my %rel;
for (@recs)
{
	next unless /"kind":"relation"/;
	my ($name) = /"table":"([^"]+)"/;
	my @cols = /"name":"([^"]+)"/g;
	my @gen  = /"name":"([^"]+)"[^}]*"generated":true/g;
	$rel{$name} = { cols => join(',', @cols), gen => join(',', @gen) };
}
is($rel{g}{cols},  'id,a,s,b', 'g: the Relation record lists the published columns, not the virtual ones');
is($rel{g}{gen},   's',        'g: the stored generated column is flagged generated');
is($rel{gf}{cols}, 'a,c',      'gf (REPLICA IDENTITY FULL): no virtual column listed');
is($rel{gp}{cols}, 'id,a',     'gp (published through its root): no virtual column listed');
ok(!exists $rel{gp_1} && !exists $rel{gp_2}, 'the partitions are published as their root');
my @g = grep { /"table":"g"/ && /"kind":"(insert|update)"/ } @recs;
is(scalar(@g), 2, 'g: one insert and one update decoded');
like($g[0], qr/"new":\{"id":1001,"a":5,"s":10,"b":"x"\}/, 'g: the insert carries the stored value, not the virtual');
like($g[1], qr/"new":\{"id":1001,"a":6,"s":12,"b":null\}/, 'g: the update too');
my @gf = grep { /"table":"gf"/ && /"kind":"(update|delete)"/ } @recs;
ok(@gf >= 2 && !grep({ /"v":/ } @gf), 'gf: old and new tuples of REPLICA IDENTITY FULL carry no virtual column');
like(join("\n", @gf), qr/"(?:old|key)":\{"a":\d+,"c":-?\d+\}/, 'gf: the old tuple holds the published columns');
my @gp = grep { /"table":"gp"/ && /"kind":"(insert|delete)"/ } @recs;
is(scalar(@gp), 3, 'gp: the inserts into two partitions and the delete are published as gp');
ok(!grep({ /"v":/ } @gp), 'gp: no virtual column in its tuples');
rp_psql($src, "SELECT pg_drop_replication_slot('virt_json')");

# ---- the binary stream: a snapshot, the stream, a kill -9, into the mirror
my ($c, $runs) = (undef, 0);
sub start_consumer
{
	$runs++;
	$c = rp_consumer("c$runs", -d => $srcconn, -S => $SLOT, @_, '--sink', "postgres:$dstconn",
		'--state-dir', "$work/state", '-s', '1', '-v');
	return;
}
sub errs { return join('', map { slurp($_) } glob("$work/c*.err")); }

start_consumer('--create-slot', '--snapshot', '--start');
ok(rp_wait_until(sub { rp_dst_checkpoint($dst, $SLOT) ne '' }, $c), 'the snapshot completes')
  or diag(errs());
my $load = rp_psql_bg($src, 'load', q{
DO $$
BEGIN
  FOR i IN 1..400 LOOP
    UPDATE g SET a = a + 1, b = CASE WHEN i % 5 = 0 THEN NULL ELSE 'u' || i END WHERE id = 1 + i % 300;
    INSERT INTO g (id, a, b) VALUES (2000 + i, i, repeat('z', i % 9));
    DELETE FROM g WHERE id = 2000 + i - 3 AND i % 2 = 0;
    UPDATE gf SET a = a + 1 WHERE c = 1 + i % 100;
    INSERT INTO gp (id, a) VALUES (10000 + i, i);
    UPDATE gp SET id = id + 1000, a = -a WHERE id = 7 * (1 + i % 140);
    COMMIT;
  END LOOP;
END $$});
my $ck0 = rp_dst_checkpoint($dst, $SLOT);
ok(rp_wait_until(sub { my $k = rp_dst_checkpoint($dst, $SLOT); $k ne '' && rp_lsn_lt($ck0, $k) }, $c),
	'the stream checkpoints past the snapshot') or diag(errs());
ok($c->kill9_alive, 'the consumer is killed with SIGKILL while it streams') or diag(errs());
start_consumer('--start');
is($load->wait_exit, 0, 'the workload ends without an error') or diag(slurp("$work/load.out"));
my $fence = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $fence, $c), "the mirror reaches the fence $fence") or diag(errs());
$c->signal('TERM');
is($c->wait_exit, 0, 'the consumer ends on SIGTERM with exit 0') or diag(errs());

rp_compare_tables($src, $dst, qw(g gf gp fence));

is(rp_psql($dst, 'SELECT count(*) FROM g WHERE v IS DISTINCT FROM a * 3 OR s IS DISTINCT FROM a * 2'), '0',
	"the destination's generated columns are its own, from the mirrored values");
is(rp_replicant('verify', { stdout => "$work/verify.out" }, 'verify', -d => $srcconn,
		'--sink', "postgres:$dstconn"),
	0, 'replicant verify finds every table equal') or diag(slurp("$work/verify.out") . slurp("$work/verify.err"));
like(slurp("$work/verify.out"), qr/public\.g: equal/, 'verify compared g');
unlike(errs(), qr/virtual|"v"/, 'no run mentions the virtual columns');

# ---- a snapshot into the file log describes the tables as the stream does: its records
# (relation descriptions and rows) name no virtual column
$fence = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
is(rp_replicant('log', -d => $srcconn, -S => 'virt_log', '--create-slot', '--snapshot', '--start',
		'--endpos', $fence, '--sink', "file:$work/log.jsonl", '--state-dir', "$work/state-log"),
	0, 'a snapshot into the file log runs to the fence') or diag(slurp("$work/log.err"));
my $log = slurp("$work/log.jsonl");
my $rows = () = $log =~ /"store":"public\.g"/g;
cmp_ok($rows, '>=', 300, "the log holds g's snapshot ($rows records)");
unlike($log, qr/"(?:v|vt)":|"name":"(?:v|vt)"/, 'no record of the log names a virtual column');
like($log, qr/"s":\d+/, 'the stored generated column is in the rows');

done_testing();
