# Copyright: see the project's LICENSE.

# The mirror's bound flushes give the source's rows, keep effect-once across SIGKILL, and
# fail closed; was regress/t/mirror_bound.sh.
#
# A bound flush: the mirror's net-effect map applied mid-batch, inside the open destination
# transaction, once it reaches a quarter of --max-memory. With --max-memory 8MB the map is
# applied every 2 MB or so, so one large transaction is applied in parts inside one
# destination transaction. Tables (test/fixtures/mirror_bound.sql): ov (bigint key, int,
# text), ov2 (a second table touched in turn, so a part holds both), ovt (STORAGE EXTERNAL
# text: its updates carry "unchanged TOAST").
#   1. One consumer with --metrics-port streams: (a) a transaction of 60,000 inserts into ov
#      and ov2 interleaved in blocks, whose later statements update, delete and re-insert
#      keys of earlier parts and move keys (id + 1,000,000), with one key planted in the
#      destination beforehand (other values): the fresh COPY of that key's part fails on it
#      (23505), its savepoint is rolled back and the part goes through the staging merge
#      (the destination log shows the rollback); (b) a transaction updating ovt (the large
#      value unchanged), inserting 25,000 rows of ov so parts are applied between, then
#      moving every ovt key with the large value unchanged (its old row read back from the
#      destination, where an earlier part put it). Asserted: every table equals the source,
#      and the metrics page counts the parts (replicant_mirror_bound_flushes_total > 0).
#   2. ROUNDS (3) SIGKILL rounds: a transaction of 40,000 inserts and updates; the consumer
#      is killed once its page counts a bound flush (mid-batch, parts applied and not
#      committed, when it gets there first); after each kill the slot's confirmed_flush_lsn
#      is at or behind the destination's checkpoint (G2). A last run to the end: tables
#      equal (G1: dup = 0, loss = 0).
#   3. A destination CHECK constraint that the first part of a 30,000-row transaction
#      breaks: the consumer halts with an error naming the table and SQLSTATE 23514, never
#      the row's value (G4); the checkpoint and the slot stay where they were (nothing
#      acknowledged). The constraint dropped, a run applies it all, equal.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;

my $ROUNDS = $ENV{ROUNDS} || 3;
my $MAXMEM = '8MB';
my $SLOT   = 'bound_mirror';
my @TABLES = qw(ov ov2 ovt);
my $work   = rp_work();
my $src    = rp_cluster('src');
# every statement logged: the savepoint rollback of the planted key's part is read there
my $dst    = rp_cluster('dst', "log_statement = 'all'");
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, rp_fixture('mirror_bound.sql'));
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $port = PostgreSQL::Test::Cluster::get_free_port();
my @common = (-d => $srcconn, -S => $SLOT, '--start', '--sink', "postgres:$dstconn", '--create-tables',
	'--state-dir', "$work/state", '--max-memory', $MAXMEM);

# digest(NODE, TABLE): count and md5 of its rows in key order, '' when it cannot be read
sub digest
{
	my ($node, $t) = @_;
	my ($ret, $out) = $node->psql('postgres',
		"SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x.id), '')) FROM public.$t x");
	return $ret == 0 ? $out : '';
}
# same(): every table of the destination equals the source's (a wait's condition, polled
# every 0.2 s: it reads each table whole on both sides; the checks are rp_compare_tables)
sub same
{
	for my $t (@TABLES)
	{
		my $d = digest($dst, $t);
		return 0 if $d eq '' || $d ne digest($src, $t);
	}
	return 1;
}
# flushes(): the metrics page's count of bound flushes, undef when it cannot be read
sub flushes
{
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
	return undef unless $r->{success};
	return rp_plain_metrics($r->{content}) =~ /^replicant_mirror_bound_flushes_total (\d+)$/m ? $1 : undef;
}
# start_consumer(NAME): a consumer with the metrics page in the background, no end position
sub start_consumer
{
	my ($name) = @_;
	return rp_consumer($name, @common, '--metrics-port', $port);
}
# run_to_end(NAME): a consumer run to a fence committed now must exit 0
sub run_to_end
{
	my ($name) = @_;
	my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
	my $rc = rp_replicant($name, @common, '-n', -E => $end);
	is($rc, 0, "$name: the run to $end exits 0") or diag(slurp("$work/$name.err"));
}
# g2(WHAT): the slot's confirmed position is at or behind the destination's checkpoint
# (the script skipped this without a checkpoint; the first run always writes one here)
sub g2
{
	my ($what) = @_;
	my $ck = rp_dst_checkpoint($dst, $SLOT);
	my $conf = rp_slot_confirmed($src, $SLOT);
	ok($ck ne '' && !rp_lsn_lt($ck, $conf),
		"$what: the slot ($conf) is not confirmed past the destination checkpoint (" . ($ck || 'none') . ')');
}
sub rollbacks
{
	my $n = () = slurp($dst->logfile) =~ /ROLLBACK TO SAVEPOINT rp_fresh/g;
	return $n;
}

# ---- 1. the tables exist in the destination; then one key is planted there
rp_psql($src, 'CALL bound_seed()');
run_to_end('first');
rp_compare_tables($src, $dst, @TABLES);
rp_psql($dst, "INSERT INTO public.ov VALUES (30000, -1, 'planted')");
my $rollbacks = rollbacks();

my $c = start_consumer('one');
rp_psql($src, 'CALL bound_mixed()');
rp_psql($src, 'CALL bound_toast()');
ok(rp_poll(0.2, \&same, $c), '1: the destination comes to equal the source (the wait fails when the consumer exits)')
  or diag(slurp("$work/one.err"));
rp_compare_tables($src, $dst, @TABLES);
my $n = flushes();
ok(defined $n && $n > 0, '1: the metrics page counts bound flushes (replicant_mirror_bound_flushes_total '
	  . ($n // 'unreadable') . ')');
my $now = rollbacks();
cmp_ok($now, '>', $rollbacks,
	"(a) the planted key's part went through the fallback (ROLLBACK TO SAVEPOINT rp_fresh: $rollbacks before, $now after)");
ok($c->alive && $c->signal('TERM'), '1: SIGTERM sent to the running consumer');
is($c->wait_exit, 0, '1: the consumer exits 0 on SIGTERM') or diag(slurp("$work/one.err"));

# ---- 2. SIGKILL after parts were applied, before the batch commits
my $kills_mid = 0;
for my $r (1 .. $ROUNDS)
{
	rp_psql($src, "CALL bound_round($r)");
	$c = start_consumer("kill-$r");
	my $in_flight = sub { my $f = flushes(); return defined $f && $f > 0; };
	ok(rp_poll(0.2, sub { $in_flight->() || same() }, $c),
		"round $r: the consumer counts a bound flush or has caught up (the wait fails when it exits)");
	my $mid = $in_flight->();
	$kills_mid++ if $mid;
	ok($c->kill9_alive, "round $r: the consumer is killed with SIGKILL while it runs")
	  or diag('it exited by itself (status ' . $c->status . '): ' . slurp("$work/kill-$r.err"));
	note("round $r: killed " . ($mid ? 'after a bound flush' : 'after it caught up'));
	g2("round $r");
}
run_to_end('after-kills');
rp_compare_tables($src, $dst, @TABLES);
note("2: $ROUNDS SIGKILL rounds, $kills_mid after a bound flush");

# ---- 3. the destination refuses a row of the first part
rp_psql($dst, "ALTER TABLE public.ov ADD CONSTRAINT ov_refuses CHECK (v <> 'secret-4000001')");
my $ck_before = rp_dst_checkpoint($dst, $SLOT);
rp_psql($src, 'CALL bound_refused()');
my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
my $rc = rp_replicant('refused', @common, '-n', -E => $end);
my $err = slurp("$work/refused.err");
isnt($rc, 0, "3: the consumer does not exit 0 when the destination refuses a row (exit $rc)");
like($err, qr/SQLSTATE 23514/, '3: the error names SQLSTATE 23514') or diag($err);
like($err, qr/"public"\."ov"/, '3: the error names the table');
unlike($err, qr/secret/, "3: the error does not show the row's value (G4)");
is(rp_dst_checkpoint($dst, $SLOT), $ck_before, '3: the checkpoint did not move although the batch failed');
g2('3: after the refused batch');
is(rp_psql($dst, 'SELECT count(*) FROM public.ov WHERE id > 4000000'), '0',
	'3: no row of the refused transaction is in the destination');
rp_psql($dst, 'ALTER TABLE public.ov DROP CONSTRAINT ov_refuses');
run_to_end('after-refusal');
rp_compare_tables($src, $dst, @TABLES);

done_testing();
