# Copyright: see the project's LICENSE.

# Logical messages reach the mirror by prefix, fail-closed, and routed ones land exactly
# once; was regress/t/mirror_messages.sh.
#
# Proves G1 (effect-once) and G3 (fail-closed) for logical messages in the PostgreSQL mirror:
#   - routed prefixes (--message-route): transactional messages land in replicant.messages
#     with their transaction's commit_lsn, in the same destination transaction as the
#     transaction's rows, and vanish with a rolled-back transaction; non-transactional ones
#     land with commit_lsn NULL, also when emitted inside a transaction that rolls back;
#     content bytes (zero bytes included) are kept exactly;
#   - an ignored prefix (--message-ignore): no row, the run goes on;
#   - exactly once across 4 SIGKILLs (KILLS) of the consumer while the messages flow: every
#     expected message is there once (count = distinct = expected), nothing else;
#   - an unknown prefix, non-transactional and then transactional: exit 3 naming the prefix
#     (never the content, which carries a canary), the destination checkpoint and the slot
#     held; rerun with the prefix ignored, or routed, completes.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(usleep);

my $N      = $ENV{N}     || 300;
my $KILLS  = $ENV{KILLS} || 4;
my $SLOT   = 'msgs';
my $CANARY = 'CANARY-5a1b0c3e';
my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

rp_psql($src, q{CREATE TABLE items (id int PRIMARY KEY, note text);
CREATE TABLE fence (id serial PRIMARY KEY);
-- iteration i: a transactional message routed (content tx-i and a zero byte), one with the
-- ignored prefix, a non-transactional routed one (nt-i) and an ignored one, a row; every
-- tenth transaction rolls back (its transactional message and row vanish, the
-- non-transactional messages stay)
CREATE PROCEDURE emits(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		PERFORM pg_logical_emit_message(true, 'route.tx', convert_to('tx-' || i, 'UTF8') || '\x00ff'::bytea);
		PERFORM pg_logical_emit_message(true, 'noise', 'tx noise ' || i);
		INSERT INTO items VALUES (i, 'row ' || i);
		PERFORM pg_logical_emit_message(false, 'route.nt', convert_to('nt-' || i, 'UTF8'));
		PERFORM pg_logical_emit_message(false, 'noise', 'nt noise ' || i);
		IF i % 10 = 0 THEN
			ROLLBACK;
		ELSE
			COMMIT;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;});
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my @ROUTE = ('--message-route', 'route.tx', '--message-route', 'route.nt', '--message-ignore', 'noise');
my $runs = 0;
sub start_consumer
{
	$runs++;
	return rp_consumer("run-$runs", '-v', -d => $srcconn, -S => $SLOT, '--start', '-s', '1',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state",
		'--batch-txns', '5', '--batch-ms', '50', @_);
}
# consumer(EXPECTED_STATUS, WHAT, ARG...): a run in the foreground (-n); its stderr
sub consumer
{
	my ($expect, $what, @args) = @_;
	my $p = start_consumer('-n', @args);
	my $rc = $p->wait_exit;
	$p->kill9_alive unless defined $rc;
	my $err = slurp("$work/run-$runs.err");
	is($rc, $expect, "run $runs ($what) exits $expect") or diag($err);
	return $err;
}
sub dq { return rp_psql($dst, $_[0]); }
# acked_within(CKPT, WHAT): the slot not confirmed past the destination checkpoint CKPT
sub acked_within
{
	my ($ck, $what) = @_;
	my $conf = rp_slot_confirmed($src, $SLOT);
	ok(rp_lsn_cmp($conf, $ck) <= 0, "$what: the slot ($conf) is not confirmed past the destination checkpoint $ck");
	return;
}

# ---- routed and ignored messages, with SIGKILLs while they flow
my $workload = rp_psql_bg($src, 'workload', "CALL emits($N)");
my $c = start_consumer(@ROUTE);
for my $k (1 .. $KILLS)
{
	my $ms = 300 + int(rand(900));
	usleep($ms * 1000);
	ok($c->kill9_alive, "kill $k after ${ms} ms: consumer run $runs was running")
	  or diag("exited " . $c->status . ': ' . slurp("$work/run-$runs.err"));
	my $ck = rp_dst_checkpoint($dst, 'msgs');
	acked_within($ck, "kill $k") if $ck ne '';
	my ($r, $have) = $dst->psql('postgres', 'SELECT count(*) FROM replicant.messages');
	note("kill $k after ${ms} ms: " . ($r == 0 ? $have : 0) . ' messages in the destination, checkpoint ' . ($ck || 'none'));
	$c = start_consumer(@ROUTE);
}
is($workload->wait_exit, 0, 'the workload ran without an error') or diag(slurp("$work/workload.out"));
ok($c->kill9_alive, 'the last consumer run was still running (killed)')
  or diag("exited " . $c->status . ': ' . slurp("$work/run-$runs.err"));
my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
consumer(0, 'to the fence', @ROUTE, -E => $end);

my $committed = $N - int($N / 10);
is(dq("SELECT count(*) FROM replicant.messages WHERE prefix NOT IN ('route.tx', 'route.nt')"), '0',
	'no messages with other prefixes in replicant.messages')
  or diag(dq('SELECT string_agg(DISTINCT prefix, $$,$$) FROM replicant.messages'));
is(dq("SELECT count(*) || ' ' || count(DISTINCT content) FROM replicant.messages WHERE prefix = 'route.tx'"),
	"$committed $committed", "$committed transactional messages, once each (count, distinct)");
# the exact bytes, in commit order
is(dq("SELECT md5(string_agg(encode(content, 'hex'), ',' ORDER BY commit_lsn)) FROM replicant.messages WHERE prefix = 'route.tx'"),
	dq("SELECT md5(string_agg(encode(convert_to('tx-' || i, 'UTF8') || '\\x00ff'::bytea, 'hex'), ',' ORDER BY i))
	   FROM generate_series(1, $N) i WHERE i % 10 <> 0"),
	'the transactional messages are tx-i for the committed i, in commit order, with their bytes');
is(dq("SELECT count(*) FROM replicant.messages WHERE prefix = 'route.tx'
	  AND (NOT transactional OR commit_lsn IS NULL OR commit_lsn <= lsn)"), '0',
	'every transactional message has a commit_lsn after its own LSN');
is(dq("SELECT count(DISTINCT commit_lsn) FROM replicant.messages WHERE prefix = 'route.tx'"), $committed,
	'the transactional messages do not share commit LSNs');
# the transactional message and its transaction's row: same commit, both there
is(dq('SELECT count(*) FROM items'), $committed, "items has the $committed committed rows");
is(dq("SELECT count(*) || ' ' || count(DISTINCT content) FROM replicant.messages WHERE prefix = 'route.nt'"),
	"$N $N", "$N non-transactional messages, once each (count, distinct)");
is(dq("SELECT count(*) FROM replicant.messages WHERE prefix = 'route.nt' AND (transactional OR commit_lsn IS NOT NULL)"),
	'0', 'no non-transactional message stored as transactional');
is(dq("SELECT md5(string_agg(encode(content, 'hex'), ',' ORDER BY lsn)) FROM replicant.messages WHERE prefix = 'route.nt'"),
	dq("SELECT md5(string_agg(encode(convert_to('nt-' || i, 'UTF8'), 'hex'), ',' ORDER BY i)) FROM generate_series(1, $N) i"),
	"the non-transactional messages are nt-1..nt-$N in LSN order");

# ---- an unknown prefix: non-transactional, then transactional
rp_psql($src, "SELECT pg_logical_emit_message(false, 'mystery', '$CANARY nt');
	INSERT INTO items VALUES (100000, 'after the mystery');");
$end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
my $ck_before = rp_dst_checkpoint($dst, $SLOT);
my $err = consumer(3, 'unknown non-transactional prefix', @ROUTE, -E => $end);
like($err, qr/\Qprefix "mystery" is neither routed nor ignored\E/, 'the halt names the prefix "mystery"');
like($err, qr/\Qhalted (sink)\E/, 'halted (sink)');
is(rp_dst_checkpoint($dst, $SLOT), $ck_before, 'the unknown non-transactional prefix did not move the checkpoint');
acked_within($ck_before, 'unknown non-transactional prefix');
is(dq('SELECT count(*) FROM items WHERE id = 100000'), '0', 'the transaction after the unknown message was not applied');
consumer(0, 'mystery ignored', @ROUTE, '--message-ignore', 'mystery', -E => $end);
is(dq('SELECT count(*) FROM items WHERE id = 100000'), '1', 'the rerun ignoring mystery went on');
is(dq("SELECT count(*) FROM replicant.messages WHERE prefix = 'mystery'"), '0', 'the ignored prefix has no rows');

rp_psql($src, "BEGIN; INSERT INTO items VALUES (100001, 'with mystery2');
	SELECT pg_logical_emit_message(true, 'mystery2', '$CANARY tx'); COMMIT;");
$end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
$ck_before = rp_dst_checkpoint($dst, $SLOT);
$err = consumer(3, 'unknown transactional prefix', @ROUTE, -E => $end);
like($err, qr/\Qprefix "mystery2" is neither routed nor ignored\E/, 'the halt names the prefix "mystery2"');
is(rp_dst_checkpoint($dst, $SLOT), $ck_before, 'the unknown transactional prefix did not move the checkpoint');
acked_within($ck_before, 'unknown transactional prefix');
is(dq('SELECT count(*) FROM items WHERE id = 100001'), '0', "the halting transaction's row was not applied");
consumer(0, 'mystery2 routed', @ROUTE, '--message-route', 'mystery2', -E => $end);
is(dq('SELECT count(*) FROM items WHERE id = 100001'), '1', 'the rerun routing mystery2 applied the transaction');
is(dq("SELECT count(*) FROM replicant.messages WHERE prefix = 'mystery2' AND transactional AND commit_lsn IS NOT NULL"),
	'1', 'the routed mystery2 message is there once');

my @leaks = grep { slurp($_) =~ /\Q$CANARY\E/ } glob("$work/run-*.err");
is(scalar @leaks, 0, "no message content (the canary) in any run's stderr ($runs runs)") or diag("@leaks");

done_testing();
