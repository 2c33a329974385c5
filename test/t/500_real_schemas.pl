
# Copyright: see the project's LICENSE.

# A database no other test was written for, mirrored as a new user would, ends equal table
# by table (G1), and `verify` says so over every table; was regress/t/real_schemas.sh.
#
# The source: `pgbench -i` (pgbench_history has no key and the default replica identity),
# sysbench's OLTP tables (oltp_read_write prepare, pgsql driver), and
# test/fixtures/real_schemas.sql: a partitioned table on two levels with a default
# partition, an inheritance parent with a child, a keyless table `h` (the field's minimal
# case: 150 inserts in 51 transactions, duplicates included), foreign keys, an enum, an
# identity column and a jsonb column. The destination's schema is the source's
# `pg_dump --schema-only` (foreign keys and triggers there): the mirror applies with
# session_replication_role = replica, as PostgreSQL's apply worker does.
#
# `replicant --create-slot --snapshot --start` copies and streams while pgbench, sysbench
# and own_load() write; a kill -9 in the stream (once a streamed batch is checkpointed);
# then every table is compared (row counts and md5 of the ordered rows; keyless tables as
# multisets) and `replicant verify` must exit 0 listing every table. Each of these failed
# before the fixes of issue 41 (the mirror kept one insert per batch of a keyless table, the
# snapshot copied no partition, the snapshot failed on a foreign key with SQLSTATE 23503,
# verify compared no partition). The keyless table's inserts are also checked where the
# mirror takes them another way: a transaction large enough to be streamed and applied
# early, and a --history mirror (a version per insert).
#
# Then the refusals that keep a mistake from being silent: an include_tables or
# exclude_tables pattern that matches no table, an unlogged table included, one that names a
# partitioned table under partitions=leaf, and a destination user that may not set
# session_replication_role: each ends the run at start, naming what was wrong, before
# anything is copied; so does a --backfill of a table without a key. And TRUNCATE ONLY of an
# inheritance parent leaves the destination child's rows alone.
#
# PGBENCH_SCALE (default 1) and SYSBENCH_ROWS (default 2000 per table) size the run: the
# field report's was PGBENCH_SCALE=20 SYSBENCH_ROWS=100000.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $SLOT = 'real';

my $have_sysbench = system('command -v sysbench >/dev/null 2>&1') == 0;
ok($have_sysbench, 'sysbench is installed (regress/install_deps.sh installs it)')
  or BAIL_OUT('sysbench is not installed');

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
my $user = getpwuid($<);
my @pgbench = ($src->installed_command('pgbench'), '-h', $src->host, '-p', $src->port, '-U', $user);
ok(-x $pgbench[0], 'pgbench is installed');

# ---- the source: what a new user brings
is(rp_run('pgbench-init', { stdout => "$work/pgbench-init.out" }, @pgbench, '-i', '-s', $ENV{PGBENCH_SCALE} || 1,
		'-q', 'postgres'),
	0, 'pgbench -i initializes its tables') or diag(slurp("$work/pgbench-init.err"));
my @sb = ('--db-driver=pgsql', '--pgsql-host=' . $src->host, '--pgsql-port=' . $src->port, "--pgsql-user=$user",
	'--pgsql-db=postgres', '--tables=2', '--table-size=' . ($ENV{SYSBENCH_ROWS} || 2000));
is(rp_run('sysbench-prepare', { stdout => "$work/sysbench-prepare.out" }, 'sysbench', 'oltp_read_write', @sb, 'prepare'),
	0, 'sysbench prepare makes its tables') or diag(slurp("$work/sysbench-prepare.out"));
rp_psql($src, rp_fixture('real_schemas.sql'));

# the destination's schema, the normal way to migrate: foreign keys, triggers and all
is(rp_run('pg_dump', { stdout => "$work/schema.sql" }, $src->installed_command('pg_dump'), '--schema-only',
		'-d', $srcconn),
	0, 'pg_dump --schema-only of the source');
ok(eval { rp_psql($dst, slurp("$work/schema.sql")); 1 }, "the source's schema loads into the destination")
  or diag($@);
rp_psql($dst, rp_fixture('real_schemas_dst.sql'));

# ---- mistakes refused at start, naming what was wrong, nothing made
# expect_refused(NAME, PATTERN, ARG...): the run ends by itself at start, non-zero, its
# stderr naming what was wrong
sub expect_refused
{
	my ($name, $pat, @args) = @_;
	my $rc = rp_replicant($name, { stdout => "$work/$name.out" }, -d => $srcconn, @args,
		'--state-dir', "$work/state-$name");
	ok($rc != 0 && $rc != -1, "$name: the run is refused at start (exit $rc)");
	like(slurp("$work/$name.err"), qr/\Q$pat\E/, "$name: stderr says \"$pat\"");
	return;
}
expect_refused('nomatch_ex', 'exclude_tables pattern "public.no_such_*" matches no table',
	-S => 'refused5', '--create-slot', '--start', '--endpos', '0/1',
	'-o', 'exclude_tables=public.scratch,public.no_such_*', '--sink', "postgres:$dstconn");
expect_refused('nomatch', 'include_tables pattern "public.no_such_table" matches no table',
	-S => 'refused1', '--create-slot', '--start', '--endpos', '0/1',
	'-o', 'include_tables=public.events_2024,public.no_such_table', '--sink', "postgres:$dstconn");
expect_refused('unlogged', 'or an unlogged or temporary table',
	-S => 'refused4', '--create-slot', '--start', '--endpos', '0/1', '-o', 'include_tables=public.scratch',
	'--sink', "postgres:$dstconn");
expect_refused('partitioned', 'names a partitioned table',
	-S => 'refused2', '--create-slot', '--snapshot', '--start', '-o', 'include_tables=public.events',
	'--sink', "postgres:$dstconn");
is(rp_psql($src, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'refused2'"), '0',
	'the refused snapshot did not create its slot');
rp_psql($dst, 'CREATE ROLE plain LOGIN');
rp_psql($dst, 'GRANT ALL ON SCHEMA public TO plain; GRANT ALL ON ALL TABLES IN SCHEMA public TO plain');
expect_refused('role', 'may not set session_replication_role',
	-S => 'refused3', '--create-slot', '--snapshot', '--start', '--sink', "postgres:$dstconn user=plain");
is(rp_psql($dst, 'SELECT count(*) FROM public.customers'), '0', 'the refused runs copied no rows');

# a second slot, made before the workload, for a --history mirror of the keyless table h
rp_replicant_ok([ -d => $srcconn, -S => 'real_hist', '--create-slot' ], 'slot real_hist created');
rp_psql($dst, 'CREATE DATABASE hist');

# ---- the workload writes while the snapshot copies and the stream runs
my @load = (
	RpTest::Proc->start(name => 'pgbench', cmd => [ @pgbench, '-n', '-c', '2', '-T', '600', 'postgres' ],
		stdout => "$work/pgbench.out", stderr => "$work/pgbench.err"),
	RpTest::Proc->start(name => 'sysbench',
		cmd => [ 'sysbench', 'oltp_read_write', @sb, '--threads=1', '--time=600', '--report-interval=0', 'run' ],
		stdout => "$work/sysbench.out", stderr => "$work/sysbench.err"));
my $own = rp_psql_bg($src, 'own-load', 'CALL own_load()');
ok(rp_wait_until(sub {
			rp_psql($src, 'SELECT (SELECT count(*) FROM pgbench_history) > 0 AND (SELECT count(*) FROM h) > 40') eq 't'
		}, $own),
	'the workload is writing (pgbench and own_load committed)');

my ($consumer, $runs) = (undef, 0);
sub start_consumer
{
	$runs++;
	$consumer = rp_consumer("consumer-$runs", { stdout => "$work/consumer-$runs.out" }, -d => $srcconn,
		-S => $SLOT, @_, '--sink', "postgres:$dstconn", '--state-dir', "$work/state", '-s', '1', '-v');
	return;
}
sub consumer_err { return join('', map { slurp($_) } glob("$work/consumer-*.err")); }

# pass_fence(WHAT): a fence committed, its LSN read after the commit; the mirror's checkpoint
# reaches it while the consumer runs
sub pass_fence
{
	my ($what) = @_;
	my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
	ok(rp_wait_dst_checkpoint($dst, $SLOT, $fence, $consumer), "$what: the mirror reaches the fence $fence")
	  or diag('at ' . (rp_dst_checkpoint($dst, $SLOT) || 'none') . ":\n" . consumer_err());
	return $fence;
}

start_consumer('--create-slot', '--snapshot', '--start');
ok(rp_wait_until(sub { rp_dst_checkpoint($dst, $SLOT) ne '' }, $consumer),
	'the snapshot completes (the destination has a checkpoint)')
  or diag(consumer_err());
# a kill -9 in the stream (once a streamed batch moved the checkpoint), then on again from
# the destination's checkpoint
my $ck0 = rp_dst_checkpoint($dst, $SLOT);
ok(rp_wait_until(sub { my $c = rp_dst_checkpoint($dst, $SLOT); $c ne '' && rp_lsn_lt($ck0, $c) }, $consumer),
	'the stream checkpoints past the snapshot') or diag(consumer_err());
ok($consumer->kill9_alive, 'the consumer is killed with SIGKILL while it streams')
  or diag('it exited by itself: ' . consumer_err());
start_consumer('--start');
# the load runs on until the keyless table has well over the field case's 150 rows (any pace)
ok(rp_wait_until(sub { rp_psql($src, 'SELECT count(*) FROM h') >= 300 }, $own),
	'the keyless table h gets 300 rows while the load runs');

# the load stops; a fence committed after it
rp_psql($src, 'UPDATE load_ctl SET stop = true');
is($own->wait_exit, 0, 'own_load() ends without an error') or diag(slurp("$work/own-load.out"));
for my $p (@load)
{
	$p->signal('TERM');
	$p->wait_exit;
}
pass_fence('after the load');

# ---- every table equal: counts, and md5 of the ordered rows (keyless: sorted row texts)
my @tables = split /\n/, rp_psql($src, "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'
	AND c.relpersistence = 'p' ORDER BY 1");
for my $t (@tables)
{
	my $q = "SELECT count(*) || ' ' || coalesce(md5(string_agg(r, E'\\n' ORDER BY r)), '-')
		FROM (SELECT x::text AS r FROM ONLY $t x) s";
	my $a = rp_psql($src, $q);
	is(rp_psql($dst, $q), $a, "table $t: the mirror equals the source ($a)");
}
cmp_ok(scalar(@tables), '>=', 15, 'at least 15 tables compared (' . scalar(@tables) . ')');
cmp_ok(rp_psql($src, 'SELECT count(*) FROM h'), '>=', 300, 'the keyless table h has at least 300 rows');
# an unlogged table's changes are not in the WAL: not copied, not streamed, not verified
is(rp_psql($dst, 'SELECT count(*) FROM scratch'), '0', 'the unlogged table was not copied');
is(rp_psql($dst, 'SELECT count(*) FROM trigger_fired'), '0', 'no destination trigger fired on replicated rows');

# ---- a keyless table's transaction large enough to stream (past the 4MB the mirror's
# walsender decodes with) is applied early, block by block: every row lands, duplicates included
rp_psql($src, 'INSERT INTO h SELECT g % 3, 7 FROM generate_series(1, 200000) g');
my $fence = pass_fence("h's streamed transaction");
my $q = "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM h x";
is(rp_psql($dst, $q), rp_psql($src, $q), 'h equals the source after its streamed transaction');

# ---- history mode: each insert of the keyless table is a version of its own
is(rp_replicant('hist', { stdout => "$work/hist.out" }, -d => $srcconn, -S => 'real_hist', '--start',
		'--endpos', $fence, '--create-tables', '--history', 'public.h', '-o', 'include_tables=public.h',
		'--sink', 'postgres:' . rp_conninfo($dst, 'hist'), '--state-dir', "$work/state-hist"),
	0, 'the --history mirror of h runs to the fence') or diag(slurp("$work/hist.err"));
$q = "SELECT count(*) || ' ' || sum(tid) || ' ' || sum(delta)";
my ($ac, $at, $ad) = split / /, rp_psql($src, "$q FROM h");
# less the 40 rows from before the slot
my ($ic, $it, $id) = split / /,
  rp_psql($src, "SELECT count(*) || ' ' || sum(g % 7) || ' ' || count(*) FROM generate_series(1, 40) g");
is(rp_psql($dst, "$q FROM public.h WHERE valid_to_lsn IS NULL", 'hist'),
	($ac - $ic) . ' ' . ($at - $it) . ' ' . ($ad - $id),
	'the history of h holds a version per insert made after the slot (count, sums)');

# ---- verify: every selected table compared and equal (the source is quiet now)
my $vrc = rp_replicant('verify', { stdout => "$work/verify.out" }, 'verify', -d => $srcconn,
	'--sink', "postgres:$dstconn", -S => $SLOT);
is($vrc, 0, 'verify exits 0') or diag(slurp("$work/verify.out"));
$vrc = rp_replicant('verify-nope', { stdout => "$work/verify-nope.out" }, 'verify', -d => $srcconn,
	'--sink', "postgres:$dstconn", -S => $SLOT, '-o', 'include_tables=public.nope');
is($vrc, 3, 'verify with a pattern that matches nothing exits 3');
like(slurp("$work/verify-nope.err"), qr/include_tables pattern "public\.nope" matches no table/,
	'verify with a pattern that matches nothing names it');
my $vout = slurp("$work/verify.out");
for my $t (qw(events_2024 events_2025_h1 events_2025_rest events_other notes notes_archived h pgbench_history sbtest1))
{
	like($vout, qr/\Q$t\E/, "verify lists table $t");
}

# ---- TRUNCATE ONLY of an inheritance parent: the child's rows stay on both sides
rp_psql($src, 'TRUNCATE ONLY notes');
pass_fence('TRUNCATE ONLY notes');
is(rp_psql($dst, 'SELECT count(*) FROM ONLY notes'), '0', 'TRUNCATE ONLY notes was applied');
my $a = rp_psql($src, 'SELECT count(*) FROM notes_archived');
is(rp_psql($dst, 'SELECT count(*) FROM notes_archived'), $a,
	"TRUNCATE ONLY of the parent left the child's rows alone in the mirror ($a)");
cmp_ok($a, '>', 300, 'the child notes_archived holds its 300 rows and the load\'s');

# ---- a backfill of a table it cannot copy (no key) ends the run at start, naming it (it was
# logged and skipped: the run went on and ended 0 with the table never copied)
$consumer->signal('TERM');
my $rc = $consumer->wait_exit;
ok(defined $rc, 'the consumer stops on SIGTERM');
is($rc, 0, 'the consumer exits 0 on SIGTERM');
like(consumer_err(), qr/[1-9][0-9]* streamed transactions applied early/, "h's large transaction was applied early");
expect_refused('bf_keyless', 'table "public"."h" has no primary key',
	-S => $SLOT, '--start', '--backfill=public.h', '--sink', "postgres:$dstconn");

done_testing();
