
# Copyright: see the project's LICENSE.

# A table's replica identity changes under a running mirror (issue 46, item 5). The docs
# recommend REPLICA IDENTITY FULL for aggregate bindings; switching to it halted the mirror
# as a destructive schema change, and the halt's suggestion (--on-destructive=apply or skip)
# then failed with "cannot be applied". Now:
#   1. keyed table k: DEFAULT -> FULL, updates and deletes after it, FULL -> DEFAULT, more:
#      no halt (the mirror matches by the primary key, which FULL keeps), the -v line calls
#      it additive, applied; the tables equal.
#   2. keyless table n: DEFAULT (no identity: inserts only) -> FULL, then updates and deletes,
#      matched by every column; equal.
#   3. table u: DEFAULT -> USING INDEX on a unique column (the destination has the same index,
#      as pg_dump gives it), then an update by that key: applied; equal.
#   4. a renamed table halts, and the line says what works: --on-destructive=apply, which
#      renames the destination table in the batch's transaction, after the rows that came
#      before the rename (it failed "cannot be applied"); skip cannot go on without the
#      rename and says so.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, "CREATE TABLE k (id int PRIMARY KEY, v text);
CREATE TABLE n (a int, b text);
CREATE TABLE u (id int PRIMARY KEY, code text NOT NULL, v text);
CREATE UNIQUE INDEX u_code ON u (code);
INSERT INTO k SELECT g, 'k' || g FROM generate_series(1, 20) g;
INSERT INTO n SELECT g, 'n' || g FROM generate_series(1, 20) g;
INSERT INTO u SELECT g, 'c' || g, 'u' || g FROM generate_series(1, 20) g;");
rp_psql($dst, "CREATE TABLE k (id int PRIMARY KEY, v text);
CREATE TABLE n (a int, b text);
CREATE TABLE u (id int PRIMARY KEY, code text NOT NULL, v text);
CREATE UNIQUE INDEX u_code ON u (code);");
my @run = (-d => $srcconn, -S => 'ident', '--sink', "postgres:$dstconn", '--state-dir', "$work/state");
rp_replicant_ok([ -d => $srcconn, -S => 'ident', '--create-slot', '--snapshot', '--start', '--endpos', '0/1',
		'--sink', "postgres:$dstconn", '--state-dir', "$work/state" ], 'the snapshot copies k, n and u');

# run(NAME, EXPECT, SQL, ARG...): SQL on the source, then the mirror to its end. Each SQL
# first writes the table under its old description, so that the change comes inside the
# run (a new process takes every description as new)
my $runs = 0;
sub run
{
	my ($name, $expect, $sql, @args) = @_;
	my $end = rp_fence($src, $sql);
	my $rc = rp_replicant($name, '-v', @run, '--start', '--endpos', $end, @args);
	is($rc, $expect, "$name: exit $expect") or diag(slurp("$work/$name.err"));
	return slurp("$work/$name.err");
}

# ---- 1. keyed: DEFAULT -> FULL -> DEFAULT
my $err = run('k-full', 0, "UPDATE k SET v = 'first' WHERE id = 1; ALTER TABLE k REPLICA IDENTITY FULL;
UPDATE k SET v = v || '!' WHERE id % 3 = 0; DELETE FROM k WHERE id % 5 = 0;
INSERT INTO k VALUES (100, 'new'); UPDATE k SET id = id + 1000 WHERE id = 7");
like($err, qr/schema change of table "public"\."k" at LSN \S+: additive, applied/,
	'1. the -v line: an additive change, applied');
unlike($err, qr/halt/, '1. no halt');
$err = run('k-default', 0, "UPDATE k SET v = 'again' WHERE id = 1; ALTER TABLE k REPLICA IDENTITY DEFAULT; UPDATE k SET v = 'back' WHERE id = 1;
DELETE FROM k WHERE id = 2");
rp_compare_tables($src, $dst, 'k');

# ---- 2. keyless: DEFAULT -> FULL, then updates and deletes by every column
run('n-full', 0, "INSERT INTO n VALUES (21, 'n21'); ALTER TABLE n REPLICA IDENTITY FULL; UPDATE n SET b = b || '?' WHERE a % 2 = 0;
DELETE FROM n WHERE a % 7 = 0");
rp_compare_tables($src, $dst, 'n');

# ---- 3. a new key: USING INDEX on code
run('u-index', 0, "UPDATE u SET v = 'first' WHERE id = 1; ALTER TABLE u REPLICA IDENTITY USING INDEX u_code; UPDATE u SET v = 'by code' WHERE code = 'c4';
UPDATE u SET code = 'c4x' WHERE code = 'c5'; DELETE FROM u WHERE code = 'c6'");
rp_compare_tables($src, $dst, 'u');

# ---- 4. a renamed table: the halt's suggestion works
$err = run('rename', 3, "UPDATE k SET v = 'before' WHERE id = 1; ALTER TABLE k RENAME TO k2; INSERT INTO k2 VALUES (200, 'after')");
like($err, qr/destructive schema change of table "public"\."k": table renamed to "public"\."k2" \(halting; --on-destructive=apply renames the destination table too\)/,
	'4. the halt says what works');
$err = run('rename-skip', 3, 'SELECT 1', '--on-destructive=skip');
like($err, qr/cannot be skipped: table renamed.*--on-destructive=apply renames the destination table too/,
	'4. --on-destructive=skip cannot go on without it, and says what does');
run('rename-apply', 0, "INSERT INTO k2 VALUES (201, 'later')", '--on-destructive=apply');
is(rp_psql($dst, "SELECT count(*) FROM pg_tables WHERE tablename = 'k'"), '0', '4. the destination table k is gone');
rp_compare_tables($src, $dst, 'k2');

done_testing();
