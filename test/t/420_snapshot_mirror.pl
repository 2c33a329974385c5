
# Copyright: see the project's LICENSE.

# The initial snapshot (--create-slot --snapshot --start) into the PostgreSQL mirror, taken
# while a workload writes to the source, is consistent with the stream; was
# regress/t/snapshot_mirror.sh.
#
# Proves G1 for the initial copy (afterwards the destination equals the source table by
# table: count and md5 of the sorted rows, so no row is missed or applied twice between the
# copy and the stream) and G3 on the way (the slot is created with the exported snapshot;
# the stream starts at its consistent point).
#
# Source tables (test/fixtures/snapshot_mirror.sql): types_t (every pre-cast type, an enum
# and an enum[] column: its binary form names a user type OID, so it takes the
# converted-records path into the mirror), big_t (keyed, binary pass-through, several
# chunks; BIG_ROWS rows, default 60000), comp_t (two-column key), nopk_t (no key, REPLICA
# IDENTITY FULL: copied whole), gen_t (a stored generated column), empty_t (no rows: still
# one call). A background workload of small transactions changes all of them during the
# copy. Three copy workers, 5,000-row chunks.
#
# Beside it, a third slot's snapshot goes to the file sink (the envelope): afterwards
# `replicant verify-snapshot` finds one complete dump per table, and
# test/fixtures/check_snapshot_log.py finds every key once in its dump (rows and oversize
# stubs: types_t's 3000-character texts pass --max-record-bytes and go to the dead-letter
# file), and big_t's keys in the dump, with the logged stream changes applied in order,
# exactly the source's keys: the log holds each row once, consistently with its stream.
#
# Then a second destination database that already holds rows (stale versions of some keys,
# keys the source never had) gets a snapshot of a second slot: its rows are never wiped
# first (merge mode), and rows the snapshot did not see are retired at completion: equal
# again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $big_rows = $ENV{BIG_ROWS} || 60000;
my $work     = rp_work();
my $SLOT     = 'snap_mirror';
my @TABLES   = qw(types_t big_t comp_t nopk_t gen_t empty_t);

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn  = rp_conninfo($src);
my $dstconn  = rp_conninfo($dst);
my $dst2conn = rp_conninfo($dst, 'dst2');

(my $src_sql = rp_fixture('snapshot_mirror.sql')) =~ s/\@BIG_ROWS\@/$big_rows/g;
rp_psql($src, $src_sql);
my $mood = q{CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très "heureux" ☺')};
# --create-tables leaves generated columns out: gen_t is made by hand, as an operator would
my $gen_t = 'CREATE TABLE gen_t (id int PRIMARY KEY, a int, twice int GENERATED ALWAYS AS (a * 2) STORED)';
rp_psql($dst, "$mood; $gen_t");
rp_psql($dst, 'CREATE DATABASE dst2');
rp_psql($dst, "$mood; $gen_t", 'dst2');

# Until its snapshot is done, each statement that writes a public table of the first mirror
# (its chunks' COPYs and INSERTs) takes 0.3 s more: the workload runs during the copy
# however fast the machine is. The consumer creates the tables (--create-tables): an event
# trigger gives each its statement trigger as it is created.
rp_slow_new_tables($dst, 0.3, 'INSERT', '');

# ---- the workload runs through the copy: transactions one after the other until ctl.stop
# (the procedure reads it before each). The transactions that wrote on the source are counted
# by the next transaction id (read-only ones take none): the script's xact_commit of
# pg_stat_database does not move while a CALL that never returns to idle runs.
sub next_xid { return rp_psql($src, 'SELECT pg_snapshot_xmax(pg_current_snapshot())'); }
my $xid0 = next_xid();
my $workload = rp_psql_bg($src, 'workload', 'CALL workload(2000000000)');
# (the script slept 1 s here)
ok(rp_wait_until(sub { next_xid() > $xid0 + 5 }, $workload), 'the workload commits before the snapshots start')
  or diag(slurp("$work/workload.out"));
my $xid_before = next_xid();

sub dst_ck { my ($slot, $db) = @_; return rp_dst_checkpoint($dst, $slot, $db); }

my $c1 = rp_consumer('c1', { stdout => "$work/c1.out" },
	-d => $srcconn, -S => $SLOT, '--create-slot', '--snapshot', '--start', '--create-tables',
	'--snapshot-workers=3', '--snapshot-chunk-rows=5000', '--sink', "postgres:$dstconn",
	'--state-dir', "$work/state1", '-s', '1', '-vv');
my $c3 = rp_consumer('c3', { stdout => "$work/c3.out" },
	-d => $srcconn, -S => "${SLOT}_log", '--create-slot', '--snapshot', '--start',
	'--snapshot-workers=2', '--snapshot-chunk-rows=3000', '--sink', "file:$work/log.jsonl",
	'--max-record-bytes=2000', '--max-dlq-bytes=100', '--state-dir', "$work/state3", '-s', '1', '-v');
ok(rp_wait_until(sub { dst_ck($SLOT) ne '' }, $c1),
	'the mirror checkpointed after its snapshot (the consumer did not exit during it)')
  or diag(slurp("$work/c1.err"));
rp_slow_off($dst);
my $xid_after = next_xid();
cmp_ok($xid_after - $xid_before, '>', 20,
	"the workload ran during the snapshot (transaction ids $xid_before .. $xid_after)");
ok(rp_wait_file_match("$work/c1.err", qr/snapshot complete/, $c1), 'the consumer reported the snapshot complete');
like(slurp("$work/c1.err"), qr/snapshot chunk of table "public"\."big_t" stored: [1-9][0-9]* rows, [1-9][0-9]* bytes/,
	"-vv reported the library's snapshot chunks of big_t, with rows and bytes");
is(rp_psql($dst, 'SELECT count(*) FROM replicant.snapshot_progress'), '0', 'no snapshot progress left behind');

# ---- a second snapshot, into a mirror that already holds rows (stale and extra keys)
rp_psql($dst, q{
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text, at timestamptz, amount numeric(12,2));
INSERT INTO big_t SELECT g, -1, 'stale', NULL, -1 FROM generate_series(1, 30000, 3) g;
INSERT INTO big_t SELECT g, -2, 'ghost', NULL, -2 FROM generate_series(5000000, 5000999) g;
CREATE TABLE nopk_t (a int, b text);
INSERT INTO nopk_t SELECT -1, 'ghost' FROM generate_series(1, 100);}, 'dst2');
my $c2 = rp_consumer('c2', { stdout => "$work/c2.out" },
	-d => $srcconn, -S => "${SLOT}2", '--create-slot', '--snapshot', '--start', '--create-tables',
	'--snapshot-workers=2', '--snapshot-chunk-rows=7000', '--sink', "postgres:$dst2conn",
	'--state-dir', "$work/state2", '-s', '1', '-v');
ok(rp_wait_until(sub { dst_ck("${SLOT}2", 'dst2') ne '' }, $c2),
	'the second mirror (dst2, merge) checkpointed after its snapshot')
  or diag(slurp("$work/c2.err"));

# the stream goes on under the workload (the script slept 2 s here): until both mirrors
# checkpointed a position read now, while the workload still writes
my $pos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_until(sub { my $c = dst_ck($SLOT); $c ne '' && !rp_lsn_lt($c, $pos) }, $c1)
	  && rp_wait_until(sub { my $c = dst_ck("${SLOT}2", 'dst2'); $c ne '' && !rp_lsn_lt($c, $pos) }, $c2),
	"both mirrors stream on under the workload (checkpoints past $pos)");
ok($workload->alive, 'the workload still ran then');

rp_psql($src, 'UPDATE ctl SET stop = true');
$workload->wait_exit;
unlike(slurp("$work/workload.out"), qr/ERROR:/, 'the workload ran without an error');
my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $fence, $c1), "the first mirror checkpointed the fence $fence")
  or diag(slurp("$work/c1.err"));
ok(rp_wait_until(sub { my $c = dst_ck("${SLOT}2", 'dst2'); $c ne '' && !rp_lsn_lt($c, $fence) }, $c2),
	"the second mirror checkpointed the fence $fence")
  or diag(slurp("$work/c2.err"));

# the file log's last checkpoint line, read on from where the last call stopped
my ($log_off, $log_ck) = (0, '');
sub log_checkpoint
{
	open(my $fh, '<', "$work/log.jsonl") or return '';
	seek($fh, $log_off, 0);
	while (my $line = <$fh>)
	{
		last unless $line =~ /\n\z/;    # a line still being written: read again later
		$log_off += length($line);
		$log_ck = $1 if $line =~ /"kind":"checkpoint"/ && $line =~ /"end_lsn":"([^"]*)"/;
	}
	close $fh;
	return $log_ck;
}
ok(rp_poll(0.2, sub { my $c = log_checkpoint(); $c ne '' && !rp_lsn_lt($c, $fence) }, $c3),
	"the file log has a checkpoint line at or past the fence $fence")
  or diag(slurp("$work/c3.err"));
$_->signal('TERM') for $c1, $c2, $c3;
is($c3->wait_exit, 0, 'the file-sink consumer exits 0 on SIGTERM') or diag(slurp("$work/c3.err"));
is($c1->wait_exit, 0, 'the first mirror exits 0 on SIGTERM') or diag(slurp("$work/c1.err"));
# new: the script did not look at the second mirror's status
is($c2->wait_exit, 0, 'the second mirror exits 0 on SIGTERM') or diag(slurp("$work/c2.err"));

# ---- compare
my $settings = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 3;";
my $rows = rp_compare_tables($src, $dst, @TABLES, { settings => $settings });
# dst2: the same comparison (rp_table_digest's query) in database dst2
for my $t (@TABLES)
{
	my $q = "$settings SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), ''))"
	  . " FROM (SELECT x::text AS r FROM public.$t x) s";
	my $want = rp_psql($src, $q);
	my $got  = rp_psql($dst, $q, 'dst2');
	if (!is($got, $want, "table $t in dst2 (merged into stale rows): destination equals source ($want)"))
	{
		my $rq = "$settings SELECT x::text FROM public.$t x";
		my %n;
		$n{$_}++ for split /\n/, rp_psql($src, $rq);
		$n{$_}-- for split /\n/, rp_psql($dst, $rq, 'dst2');
		my @diff = grep { $n{$_} } sort keys %n;
		splice(@diff, 10) if @diff > 10;
		diag(($n{$_} > 0 ? 'only in the source: ' : 'only in dst2: ') . substr($_, 0, 200)) for @diff;
	}
}
is(rp_psql($dst, q{SELECT count(*) FROM pg_tables WHERE tablename ~ '^snap(seen|new)_'}, 'dst2'), '0',
	'no merge tables left behind in dst2');

# ---- the file log
my $vrc = rp_run('verify', { stdout => "$work/verify.out" },
	$ENV{RP_REPLICANT} || rp_root() . '/consumer/replicant', 'verify-snapshot', "$work/log.jsonl");
my $verify = slurp("$work/verify.out") . slurp("$work/verify.err");
is($vrc, 0, 'verify-snapshot of the file log exits 0') or diag($verify);
my $complete = () = $verify =~ /complete/g;
cmp_ok($complete, '>=', scalar(@TABLES), "verify-snapshot finds a complete dump of each of the " . @TABLES . " tables")
  or diag($verify);
my $ids = rp_psql($src, 'SELECT id FROM big_t ORDER BY id');
open(my $fh, '>', "$work/big_t.ids") or die "$work/big_t.ids: $!";
print $fh $ids, "\n";
close $fh;
my $rc = rp_run('check_snapshot_log', { stdout => "$work/check_snapshot_log.out" },
	'python3', "$FindBin::RealBin/../fixtures/check_snapshot_log.py", "$work/log.jsonl", "$work/big_t.ids");
is($rc, 0, "the file log holds each row once: one complete dump per table, each key once, an oversize stub, "
	  . "big_t's dump plus its stream equal to the source's keys (check_snapshot_log.py)")
  or diag(slurp("$work/check_snapshot_log.err"));
note(slurp("$work/check_snapshot_log.out"));
ok(-s "$work/state3/${SLOT}_log.dead-letter", 'the oversize rows went to the dead-letter file');

my @leaks = grep { slurp($_) =~ /stale|ghost/ } glob("$work/*.err");
is("@leaks", '', "no row value of dst2 ('stale', 'ghost') reached a consumer's log");
note("snapshot under " . ($xid_after - $xid_before) . " source transactions; rows: "
	  . join(', ', map { "$_ $rows->{$_}" } @TABLES));

done_testing();
