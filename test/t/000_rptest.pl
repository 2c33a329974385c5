
# Copyright: see the project's LICENSE.

# The checks the tests share (test/perl/RpTest.pm) fail when their property breaks: a
# table comparison sees a duplicate, a lost or a changed row; rp_unacked sees a confirmed
# or checkpointed unit; a kill of a process that exited by itself reports it; a wait
# ends when the process it depends on exits; LSNs compare on both halves.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();

# ---- LSNs
ok(rp_lsn_lt('0/FFFFFFFF', '1/0'), 'LSN: 0/FFFFFFFF < 1/0');
ok(!rp_lsn_lt('1/10', '1/F'), 'LSN: 1/10 is not < 1/F');
is(rp_lsn_cmp('A/1', 'A/1'), 0, 'LSN: equal');

# ---- rp_unacked
my $ck = "$work/s.checkpoint";
sub ckpt { open(my $fh, '>', $ck) or die $!; print $fh "$_[0]\n"; close $fh; }
ckpt('v1 slot=s sysid=1 tli=1 commit=0/0 end=0/100');
is(rp_unacked(undef, 's', $ck, '0/200', '0/150'), '', 'unacked: idle WAL before the unit is fine');
like(rp_unacked(undef, 's', $ck, '0/200', '0/200'), qr/slot confirmed 0\/200/, 'unacked: the slot confirmed at the bound fails');
ckpt('v1 slot=s sysid=1 tli=1 commit=0/180 end=0/190');
like(rp_unacked(undef, 's', $ck, '0/200', '0/150'), qr/records commit 0\/180/, 'unacked: a checkpointed commit fails');
ckpt('v1 slot=s sysid=1 tli=1 commit=0/0 end=0/200');
like(rp_unacked(undef, 's', $ck, '0/200', '0/150'), qr/end 0\/200 is at or past/, "unacked: a checkpoint's end at the bound fails");

# ---- processes
my $p = RpTest::Proc->start(name => 'sleeper', cmd => [ 'sleep', '600' ]);
ok($p->alive, 'proc: alive while running');
is($p->wait_exit(0.2), undef, 'proc: wait_exit times out on a running process');
ok(!rp_wait_until(sub { 0 }, RpTest::Proc->start(name => 'short', cmd => [ 'true' ])),
	'wait: ends false when the process it depends on exited');
ok($p->kill9_alive, 'proc: kill9_alive kills a running process');
is($p->status, 137, 'proc: its status is 128 + 9');
my $q = RpTest::Proc->start(name => 'exits', cmd => [ 'sh', '-c', 'exit 7' ]);
is($q->wait_exit, 7, 'proc: the exit status');
ok(!$q->kill9_alive, 'proc: kill9_alive is false for a process that exited by itself');

# ---- table comparison: one cluster, pairs of tables as the two sides
my $n = rp_cluster('n');
rp_psql($n, "CREATE TABLE a (id int, v text, f float8); CREATE TABLE b (LIKE a);
	INSERT INTO a VALUES (1, 'x', 0.1), (2, NULL, 1e300), (2, NULL, 1e300);
	INSERT INTO b SELECT * FROM a ORDER BY id DESC");
is(rp_table_digest($n, 'b'), rp_table_digest($n, 'a'), 'digest: the same rows in another order are equal');
like(rp_table_digest($n, 'a'), qr/^3 [0-9a-f]{32}$/, 'digest: count and md5');
rp_psql($n, "DELETE FROM b WHERE ctid = (SELECT min(ctid) FROM b WHERE id = 2)");
isnt(rp_table_digest($n, 'b'), rp_table_digest($n, 'a'), 'digest: a lost duplicate differs');
rp_psql($n, "INSERT INTO b VALUES (2, NULL, 1e300), (1, 'x', 0.1); DELETE FROM b WHERE ctid = (SELECT min(ctid) FROM b WHERE id = 2)");
isnt(rp_table_digest($n, 'b'), rp_table_digest($n, 'a'), 'digest: a duplicated row instead of another differs (same count)');
rp_psql($n, "TRUNCATE b; INSERT INTO b SELECT id, v, f + 1e-15 FROM a");
isnt(rp_table_digest($n, 'b', 'SET extra_float_digits = 3;'), rp_table_digest($n, 'a', 'SET extra_float_digits = 3;'),
	'digest: a value changed in its last digit differs');

done_testing();
