
# Copyright: see the project's LICENSE.

# Identity columns GENERATED ALWAYS keep the source's values on every path that writes rows
# into a destination table with INSERT ... SELECT (PostgreSQL refuses such an insert without
# OVERRIDING SYSTEM VALUE, SQLSTATE 428C9; COPY keeps the given values):
#   1. a snapshot into tables the destination already holds rows of: the merge of a keyed
#      table (INSERT ... ON CONFLICT DO UPDATE from a stage) and the replace of a keyless
#      one, as when a snapshot starts over after a first attempt filled them (found by
#      test/t/600_differential.pl, seed 2, "Ünï cödé"."k_ident Sp ace": the run halted);
#   2. the stream's staged upsert: a transaction inserting a key the destination already
#      holds beside one it lacks (a replay after a crash does this) goes through
#      UPDATE ... FROM and INSERT ... SELECT ... ON CONFLICT DO NOTHING;
#   3. a backfill of a table added to the selection (INSERT ... SELECT of each chunk).
# Each path: the run exits 0 and the table equals the source, identity values included.
# Without the clause each run halts with exit 3 naming SQLSTATE 428C9 and the table.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT = 'ident';
my $work = rp_work();
my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
my $ddl = 'CREATE TABLE k (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
CREATE TABLE kl (id bigint GENERATED ALWAYS AS IDENTITY, v text);
ALTER TABLE kl REPLICA IDENTITY FULL;
CREATE TABLE b (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
CREATE TABLE fence (id serial PRIMARY KEY);';
rp_psql($src, $ddl);
rp_psql($dst, $ddl);
# the source's identity values are not the destination's sequences': 11.., 21.., 31..
rp_psql($src, "SELECT setval(pg_get_serial_sequence('k', 'id'), 10);
SELECT setval(pg_get_serial_sequence('kl', 'id'), 20);
SELECT setval(pg_get_serial_sequence('b', 'id'), 30);
INSERT INTO k (v) SELECT 'k' || g FROM generate_series(1, 10) g;
INSERT INTO kl (v) SELECT 'kl' || g FROM generate_series(1, 10) g;
INSERT INTO b (v) SELECT 'b' || g FROM generate_series(1, 10) g;");
# rows a first snapshot attempt left behind
rp_psql($dst, "INSERT INTO k (id, v) OVERRIDING SYSTEM VALUE VALUES (11, 'stale'), (99, 'ghost');
INSERT INTO kl (id, v) OVERRIDING SYSTEM VALUE VALUES (21, 'stale');");

my $runs = 0;
# run(EXPECTED, WHAT, ARG...): the mirror until it exits; true when it exited EXPECTED
sub run
{
	my ($what, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", -d => $srcconn, -S => $SLOT, '-n', '--sink', "postgres:$dstconn",
		'--state-dir', "$work/state", @args);
	return is($rc, 0, "$what: the run exits 0") || diag(slurp("$work/run-$runs.err"));
}

# ---- 1. the snapshot's merge (k) and replace (kl)
my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
run('1. snapshot into filled tables', '--create-slot', '--snapshot', '--start', '-E', $end,
	'-o', 'include_tables=public.k,public.kl,public.fence');
rp_compare_tables($src, $dst, qw(k kl));

# ---- 2. the stream's staged upsert: a key the destination holds beside one it lacks
rp_psql($dst, "INSERT INTO k (id, v) OVERRIDING SYSTEM VALUE VALUES (100, 'stale')");
rp_psql($src, "INSERT INTO k (id, v) OVERRIDING SYSTEM VALUE VALUES (100, 'a'), (101, 'b');
INSERT INTO kl (v) VALUES ('streamed');");
$end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
run('2. an insert of a held and a lacking key', '--start', '-E', $end,
	'-o', 'include_tables=public.k,public.kl,public.fence');
rp_compare_tables($src, $dst, qw(k kl));

# ---- 3. a backfill of b (a run that goes on until b is backfilled, then SIGTERM)
rp_psql($src, "INSERT INTO b (v) VALUES ('streamed')");
my $c = rp_consumer('backfill', -d => $srcconn, -S => $SLOT, '--start', '-s', '1', '--sink', "postgres:$dstconn",
	'--state-dir', "$work/state", '-o', 'include_tables=public.k,public.kl,public.b,public.fence',
	'--backfill=public.b', '-v');
ok(rp_wait_file_match("$work/backfill.err", qr/table "public"\."b" backfilled/, $c), '3. b is backfilled')
  or diag(slurp("$work/backfill.err"));
$end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $end, $c), "3. the mirror checkpointed $end after the backfill")
  or diag(slurp("$work/backfill.err"));
ok($c->signal('TERM'), '3. SIGTERM sent to the running mirror');
is($c->wait_exit, 0, '3. the mirror exits 0') or diag(slurp("$work/backfill.err"));
rp_compare_tables($src, $dst, qw(k kl b));

done_testing();
