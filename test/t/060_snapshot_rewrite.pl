
# Copyright: see the project's LICENSE.

# A table truncated or rewritten after the snapshot's consistent point, before its copy
# starts, fails the run naming it; it is never copied empty. Was
# regress/t/snapshot_rewrite.sh.
#
# TRUNCATE and a rewriting ALTER TABLE are not MVCC-safe: a snapshot older than them reads
# the new file, which holds no row it sees. Before the fix the copy of such a table was
# empty: a REPLICA IDENTITY FULL table without a key then halted the mirror "has diverged"
# on the first streamed update of a row it never got (found by the differential test, now
# test/t/600_differential.pl, seed 473960), and a keyed table rewritten by ALTER TABLE
# stayed empty in the mirror with the run going on (silent loss).
#
# The ordering is forced, not hoped for: one copy worker; the destination's gate_t (the
# first table copied: tables without a key go first, then the largest) holds each insert on
# an advisory lock this test holds, so the copy waits there, after the consistent point,
# while the test changes the source; then the test lets it go.
#
# Round 1: k2 (no key, REPLICA IDENTITY FULL) updated then truncated in the window: the run
#   fails naming k2, not "diverged"; run again, the resume refuses, naming k2 (a table
#   without a key cannot be copied under a new snapshot while the stream replays from the
#   old point).
# Round 2 (a new slot, a second destination database): t3 (keyed) rewritten by ALTER TABLE
#   and t4 (keyed, copied before t3) by VACUUM FULL in the window: t4's copy goes through
#   (VACUUM FULL keeps every row version), the run fails naming t3 and stores no checkpoint.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);

my $tables_sql = "
CREATE TABLE gate_t (id int, v text);
CREATE TABLE k2 (id int, v int);
ALTER TABLE k2 REPLICA IDENTITY FULL;
CREATE TABLE t3 (id int PRIMARY KEY, v int);
CREATE TABLE t4 (id int PRIMARY KEY, v text);";
rp_psql($src, "$tables_sql
INSERT INTO gate_t SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO k2 SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO t3 SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO t4 SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
ANALYZE;");
# the gate: every insert into the destination's gate_t waits for advisory lock 4242
my $gate_sql = $tables_sql . q{
CREATE FUNCTION public.gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_advisory_xact_lock_shared(4242); RETURN NULL; END $$;
CREATE TRIGGER gate AFTER INSERT ON gate_t FOR EACH STATEMENT EXECUTE FUNCTION public.gate();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE gate_t ENABLE ALWAYS TRIGGER gate;};
rp_psql($dst, 'CREATE DATABASE m2');
rp_psql($dst, $gate_sql);
rp_psql($dst, $gate_sql, 'm2');

sub dsql { return rp_psql($dst, $_[0]); }
my ($gate, $consumer);
# close the gate of database DB: a session holding lock 4242 (a lock of that database)
# until it is terminated
sub gate_close
{
	my ($db) = @_;
	$gate = RpTest::Proc->start(name => 'gate', env => { PGAPPNAME => 'rp_gate' },
		cmd => [ $dst->installed_command('psql'), '-X', '-q', '-d', $dst->connstr($db),
			'-c', 'SELECT pg_advisory_lock(4242), pg_sleep(3600)' ]);
	ok(rp_wait_until(sub {
				dsql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted") eq '1';
			}, $gate),
		"$db: the gate session takes its lock");
}
sub gate_open
{
	dsql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rp_gate'");
	$gate->wait_exit;
}
# until the copy waits at the gate: the snapshot exists and gate_t's rows are on their way
sub gate_reached
{
	my ($name) = @_;
	ok(rp_wait_until(sub {
				dsql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted") >= 1;
			}, $consumer),
		"$name: the copy reaches the gate (the snapshot is taken)") or diag(slurp("$work/$name.err"));
}
sub run_consumer
{
	my ($name, $slot, $db) = @_;
	$consumer = rp_consumer($name, { stdout => "$work/$name.out" },
		-d => $srcconn, -S => $slot, '--create-slot', '--snapshot', '--start', '--snapshot-workers=1',
		'--sink', 'postgres:' . rp_conninfo($dst, $db), '--state-dir', "$work/state-$slot", '-s', '1', '-v');
}
# the run must end by itself (a run that goes on streaming is the defect) with an error
sub ends_failing
{
	my ($name) = @_;
	my $rc = $consumer->wait_exit;
	ok(defined $rc, "$name stops by itself (a rewritten table was not copied as it stood)");
	ok(defined $rc && $rc != 0, "$name exits with an error (" . ($rc // 'still running') . ')');
	unlike(slurp("$work/$name.err"), qr/diverged/, "$name does not halt as diverged instead of naming the rewrite");
}

# ---- round 1: TRUNCATE of a REPLICA IDENTITY FULL table without a key
gate_close('postgres');
run_consumer('r1', 's1', 'postgres');
gate_reached('r1');
rp_psql($src, "UPDATE k2 SET v = v + 1000 WHERE id <= 10;
TRUNCATE k2;
INSERT INTO k2 SELECT g, g FROM generate_series(1, 5) g;
UPDATE k2 SET v = -v WHERE id = 1;");
gate_open();
ends_failing('r1');
like(slurp("$work/r1.err"), qr/table "public"."k2" was truncated or rewritten after the snapshot was taken/,
	'r1 names k2 as rewritten');
is(rp_dst_checkpoint($dst, 's1'), '', 'r1 stored no checkpoint');

# run again: gate_t is done; k2 (no key) would be copied under a new snapshot: refused
run_consumer('r1b', 's1', 'postgres');
my $rc = $consumer->wait_exit;
ok(defined $rc, 'the rerun of round 1 stops');
ok(defined $rc && $rc != 0, 'the rerun of round 1 exits with an error');
like(slurp("$work/r1b.err"), qr/cannot resume: table "public"."k2" has no primary key/,
	'the rerun refuses to resume k2');

# ---- round 2: ALTER TABLE rewrites t3 (keyed); VACUUM FULL rewrites t4, keeping its rows
gate_close('m2');
run_consumer('r2', 's2', 'm2');
gate_reached('r2');
rp_psql($src, 'VACUUM FULL t4; ALTER TABLE t3 ALTER COLUMN v TYPE bigint;');
gate_open();
ends_failing('r2');
my $r2 = slurp("$work/r2.err");
like($r2, qr/table "public"."t3" was truncated or rewritten after the snapshot was taken/, 'r2 names t3 as rewritten');
unlike($r2, qr/"t4".*rewritten/, 'r2 does not refuse t4, whose VACUUM FULL kept its rows');
is(rp_psql($dst, 'SELECT count(*) FROM t4', 'm2'), '1000', "t4's copy went through whole");
is(rp_dst_checkpoint($dst, 's2', 'm2'), '', 'r2 stored no checkpoint');

done_testing();
