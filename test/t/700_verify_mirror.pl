# Copyright: see the project's LICENSE.

# `replicant verify` compares a streaming mirror with its source; was
# regress/t/verify_mirror.sh.
#
# A mirror (--create-slot --snapshot --start --create-tables) of five tables
# (test/fixtures/verify_mirror.sql): a, b (int keys), c (a two-column key), d (untouched
# throughout) and n (no key, REPLICA IDENTITY FULL, rows in duplicate pairs), plus w, the
# workload's table, whose apply on the destination waits behind a SHARE lock (reads pass it)
# so that the mirror lags behind it until verify waits.
#   1. caught up: verify exits 0, every table "equal"; --duty 20 rests about 4 times the
#      statements' time, --duty 100 not at all; -S names the slot, -q prints the summary only.
#   2. verify started while the mirror lags under a running workload on w (proved: the source's
#      WAL position verify printed at its start is past the checkpoint it printed, verify -v says
#      w's chunk differed on the first read, and the workload still runs then) exits 0 once the
#      mirror caught up: the lock is released, the mirror catches up while the workload goes on,
#      then the workload stops.
#   3. planted on the destination: a changed value in a, a deleted row in b, an extra row in c
#      (past the source's last key), one of n's duplicate pairs halved: verify exits 1 naming
#      exactly a, b, c (with the right chunk numbers and row counts) and n, not d or w; the
#      --keys-file holds exactly the three planted keys (a tab in c's escaped); no planted value
#      or key is in verify's output (G4: the canary).
#   4. exit statuses: 2 for usage errors, 3 when the destination cannot be reached or the slot has
#      no checkpoint row, 4 when the mirror is held back past --recheck-timeout (the chunk and
#      the table "not compared"), 1 with the table named when a table is missing on the
#      destination (also under a --schema-prefix the mirror did not use).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT = 'verify_mirror';
my $work = rp_work();

sub section { return rp_fixture_section('verify_mirror.sql', $_[0]); }

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, section('source'));

my $consumer = rp_consumer('consumer', { stdout => "$work/consumer.out" }, -d => $srcconn, -S => $SLOT,
	'--create-slot', '--snapshot', '--start', '--create-tables', '--sink', "postgres:$dstconn",
	'--state-dir', "$work/state", '-s', '1', '-v');

# bg_psql(NODE, NAME, SQL): psql running SQL in the background as application NAME (to be
# found in pg_stat_activity, and cancelled or terminated there)
sub bg_psql
{
	my ($node, $name, $sql) = @_;
	return RpTest::Proc->start(
		name   => $name,
		cmd    => [ $node->installed_command('psql'), '-X', '-q', '-d', $node->connstr('postgres'), '-c', $sql ],
		stdout => "$work/$name.out",
		stderr => "$work/$name.out",
		env    => { PGAPPNAME => $name });
}

# caught_up(WHAT): a fence transaction on the source, then until the mirror's checkpoint passed it
sub caught_up
{
	my ($what) = @_;
	my $fence = rp_fence($src, 'INSERT INTO fence VALUES (now())');
	ok(rp_wait_dst_checkpoint($dst, $SLOT, $fence, $consumer), "$what: the mirror checkpointed the fence $fence")
	  or diag(($consumer->alive ? 'the mirror runs' : 'the mirror exited ' . $consumer->status) . ': '
		  . slurp("$work/consumer.err"));
	return;
}

# verify(NAME, ARG...): replicant verify ARG... (source and destination given); its exit
# status and stdout ($work/NAME.out), stderr in $work/NAME.err
my @verify_runs;
sub verify
{
	my ($name, @args) = @_;
	push @verify_runs, $name;
	my $rc = rp_replicant($name, { stdout => "$work/$name.out" }, 'verify', -d => $srcconn,
		'--sink', "postgres:$dstconn", @args);
	return ($rc, slurp("$work/$name.out"));
}

# lock_w(WHAT): a session (vm_locker) holding a SHARE lock on the destination's w: the
# mirror's apply of w waits behind it, verify's reads pass it
sub lock_w
{
	my ($what) = @_;
	my $locker = bg_psql($dst, 'vm_locker', 'BEGIN; LOCK TABLE public.w IN SHARE MODE; SELECT pg_sleep(900);');
	ok(rp_wait_until(
			sub {
				rp_psql($dst, "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
				WHERE a.application_name = 'vm_locker' AND l.mode = 'ShareLock' AND l.granted") == 1;
			},
			$locker),
		"$what: the SHARE lock on the destination's w is granted");
	return $locker;
}
sub unlock_w
{
	my ($locker) = @_;
	rp_psql($dst, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'vm_locker'");
	$locker->wait_exit;
	return;
}

# ---- 1. caught up: equal
caught_up('after the snapshot');
my ($rc, $out) = verify('equal', '--chunk-rows', '1000');
is($rc, 0, 'verify of a caught-up mirror exits 0') or diag($out . slurp("$work/equal.err"));
like($out, qr/^public\.$_: equal/m, "caught up: public.$_ equal") for qw(a b c d n w);
# --duty: the rests are (100 - duty) / duty times the statements' time (the default 10: 9 times)
for my $duty (20, 100)
{
	($rc, $out) = verify("duty$duty", '--chunk-rows', '500', '--duty', $duty, '-v');
	is($rc, 0, "verify --duty $duty exits 0");
	my $err = slurp("$work/duty$duty.err");
	my ($busy, $rest) = $err =~ /^replicant verify: statements took (\d+) ms, rests (\d+) ms \(--duty $duty\)$/m;
	ok(defined $busy, "verify -v --duty $duty reports its statements' time and its rests") or diag($err);
	($busy, $rest) = (0, -1) unless defined $busy;
	if ($duty == 100)
	{
		is($rest, 0, '--duty 100 does not rest');
	}
	else
	{
		my $want = int(int(int($busy * (100 - $duty) * 100 / $duty) * 95) / 100);
		cmp_ok($rest * 100, '>=', $want,
			"--duty $duty: statements $busy ms, rests $rest ms (at least 95 % of " . int($busy * (100 - $duty) / $duty) . ')');
	}
	note("verify --duty $duty: statements $busy ms, rests $rest ms");
}
$out = slurp("$work/equal.out");
like($out, qr/^7 tables: 7 equal, 0 different, 0 not compared$/m, 'caught up: summary 7 equal');
like($out, qr/^public\.a: equal \(5000 rows, 6 chunks\)$/m, 'caught up: a equal (5000 rows, 6 chunks)');
# -S names the slot the same way
($rc, $out) = verify('equal_s', '--chunk-rows', '1000', '-S', $SLOT, '-q', '--max-rate', '200000');
is($rc, 0, "verify -S $SLOT exits 0");
is(scalar(() = $out =~ /\n/g), 1, '-q prints the summary only (one line)') or diag($out);

# ---- 2. a lagging mirror under a running workload
# The mirror's apply of w waits behind a SHARE lock on the destination (reads pass it), so it
# lags for as long as the test says, however fast the machine is.
my $locker = lock_w('lagging mirror');
my $workload = bg_psql($src, 'vm_workload', section('workload'));
# the workload is under way and the mirror behind it
my $lag = 0;
ok(rp_wait_until(
		sub {
			my $ck = rp_dst_checkpoint($dst, $SLOT);
			$lag = rp_psql($src, "SELECT pg_current_wal_lsn() - '$ck'::pg_lsn");
			return $lag > 2000;
		},
		$workload, $consumer),
	'the mirror lags more than 2000 bytes behind the workload');
my $lagv = RpTest::Proc->start(
	name   => 'lag',
	cmd    => [ $ENV{RP_REPLICANT} || rp_root() . '/consumer/replicant', 'verify', -d => $srcconn,
		'--sink', "postgres:$dstconn", '--chunk-rows', '1000', '--recheck-timeout', '300', '-v' ],
	stdout => "$work/lag.out",
	stderr => "$work/lag.err");
push @verify_runs, 'lag';
# verify found w's first chunk different and waits for the checkpoint: let the mirror go on
ok(rp_wait_file_match("$work/lag.err", qr/^replicant verify: public\.w: chunk \d+ differs on the first read/m, $lagv),
	'verify finds a chunk of w different on the first read while the mirror is held back')
  or diag(slurp("$work/lag.err"));
ok($workload->alive, 'the workload still runs when verify waits') or diag(slurp("$work/vm_workload.out"));
my $held = rp_psql($src, 'SELECT pg_current_wal_lsn()');
unlock_w($locker);
# the mirror applies what it was held from while the workload goes on, then the workload stops
ok(rp_wait_dst_checkpoint($dst, $SLOT, $held, $consumer),
	"the mirror catches up past $held (held back until then) while the workload goes on");
ok($workload->alive, 'the workload ran on until the mirror caught up');
rp_psql($src, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'vm_workload'");
$workload->wait_exit;
$rc = $lagv->wait_exit;
$out = slurp("$work/lag.out");
my $lagerr = slurp("$work/lag.err");
is($rc, 0, 'verify of a lagging mirror exits 0 once the mirror caught up') or diag($out . $lagerr);
my ($src_at, $ck_at) = $lagerr =~ m{^replicant verify: source WAL at ([0-9A-F]+/[0-9A-F]+), mirror .* at ([0-9A-F]+/[0-9A-F]+)$}m;
ok(defined $src_at && rp_lsn_lt($ck_at, $src_at),
	'verify started while the mirror lagged (its start line: the source\'s WAL past the checkpoint)')
  or diag($lagerr);
like($out, qr/^public\.w: equal \(2000 rows, 3 chunks, [1-3] re-read after the mirror caught up\)$/m,
	"w equal, its chunks re-read after the mirror caught up");
like($out, qr/^7 tables: 7 equal, 0 different, 0 not compared$/m, 'after the lag: summary 7 equal');

# ---- 3. planted differences (the mirror keeps running: the source does not touch these rows)
caught_up('before the plant');
rp_psql($dst, section('plant'));
($rc, $out) = verify('plant', '--chunk-rows', '1000', '--keys-file', "$work/keys.tsv", '--recheck-timeout', '120');
is($rc, 1, 'verify with planted differences exits 1') or diag($out);
my %diff = map { $_ => 1 } $out =~ /^(\S+): different/mg;
is(join(' ', sort keys %diff), 'public.a public.b public.c public.n', 'the differing tables are exactly a, b, c and n');
like($out, qr/^public\.a: different: chunk 2 \(rows 1001-2000 of the source\): source 1000 rows, destination 1000 rows$/m,
	"a's changed value: chunk 2, 1000 rows each side");
like($out, qr/^public\.b: different: chunk 4 \(rows 3001-4000 of the source\): source 1000 rows, destination 999 rows$/m,
	"b's deleted row: chunk 4, 1000 against 999 rows");
like($out, qr/^public\.c: different: chunk 4 \(after row 3000 of the source\): source 0 rows, destination 1 rows$/m,
	"c's extra row: chunk 4 after the source's last row, 0 against 1 row");
is(scalar(() = $out =~ /^public\.n: different: rows hashing to [0-9a-f][0-9a-f]: source 2 rows, destination 1 rows$/mg), 1,
	"n's halved pair: one hash bucket, 2 against 1 row");
is(scalar(() = $out =~ /: different: /g), 4, 'no more than the four planted ranges') or diag($out);
# each table's verdict after its ranges
for my $v ('a: different (5000 rows, 6 chunks, 1 different)', 'b: different (5000 rows, 6 chunks, 1 different)',
	'c: different (3000 rows, 4 chunks, 1 different)', 'n: different (600 rows, 1 hash buckets different)',
	'd: equal (4000 rows, 5 chunks)', 'w: equal (2000 rows, 3 chunks)')
{
	like($out, qr/^public\.\Q$v\E$/m, "verdict public.$v");
}
like($out, qr/^7 tables: 3 equal, 4 different, 0 not compared$/m, 'planted: summary 3 equal, 4 different');
my $keys = -e "$work/keys.tsv" ? slurp("$work/keys.tsv") : '';
is(join('|', sort grep { /^key/ } split /\n/, $keys),
	join("|", sort("key\tpublic.a\tchanged\t(1234)", "key\tpublic.b\tmissing\t(3500)",
			"key\tpublic.c\textra\t(99,\"CANARY\\tKEY\")")),
	'the keys file holds exactly the three planted keys (the tab in c\'s escaped)');
is(scalar(() = $keys =~ /^range/mg), 3, 'the keys file has three ranges');
like($keys, qr/^range\tpublic\.b\t4\t\(3000\)\t\(4000\)$/m, "the keys file has b's bounds");

# ---- 4. exit statuses
($rc) = verify('usage', '--chunk-rows', '0');
is($rc, 2, '--chunk-rows 0 exits 2');
($rc) = verify('usage2', '-o', 'nonsense=1');
is($rc, 2, '-o nonsense=1 exits 2');
($rc) = verify('usage3', '--bogus');
is($rc, 2, '--bogus exits 2');
# --schema-prefix maps the names as the mirror's does: a prefix the mirror did not use finds nothing
($rc, $out) = verify('prefix', '--schema-prefix', 'nope_', '-o', 'include_tables=public.a');
is($rc, 1, 'a wrong --schema-prefix exits 1');
like($out, qr/^public\.a: different: missing on the destination \(nope_public\.a\)$/m,
	'a wrong --schema-prefix: the prefixed name is named missing');
push @verify_runs, 'nod';
is(rp_replicant('nod', { stdout => "$work/nod.out" }, 'verify', '--sink', "postgres:$dstconn"), 2, 'no -d exits 2');
push @verify_runs, 'noconn';
is(rp_replicant('noconn', { stdout => "$work/noconn.out" }, 'verify', -d => $srcconn,
		'--sink', 'postgres:host=' . $dst->host . ' port=1 dbname=postgres'),
	3, 'an unreachable destination exits 3');
($rc) = verify('noslot', '-S', 'no_such_slot');
is($rc, 3, 'an unknown slot (no checkpoint row) exits 3');
# a mirror held back (the SHARE lock again) past --recheck-timeout: not compared, exit 4
$locker = lock_w('held mirror');
rp_psql($src, 'UPDATE w SET v = v + 1 WHERE id = 7');
($rc, $out) = verify('held', '--chunk-rows', '1000', '--recheck-timeout', '1', '-o', 'include_tables=public.w');
is($rc, 4, 'verify of a mirror held back past --recheck-timeout exits 4') or diag($out);
like($out, qr/^public\.w: chunk 1 not compared: the mirror.s checkpoint did not reach the source.s WAL position within 1 s$/m,
	'held: the chunk not compared, the reason named');
like($out, qr/^public\.w: not compared \(2000 rows, 3 chunks, 1 not compared\)$/m, 'held: the table not compared');
like($out, qr/^1 tables: 0 equal, 0 different, 1 not compared$/m, 'held: summary 1 not compared');
unlock_w($locker);
caught_up('after the held mirror');
rp_psql($dst, 'DROP TABLE public.d');
($rc, $out) = verify('missing', '--chunk-rows', '1000', '-o', 'include_tables=public.d,public.w');
is($rc, 1, 'a table missing on the destination exits 1');
like($out, qr/^public\.d: different: missing on the destination/m, 'the missing table is named');
like($out, qr/^2 tables: 1 equal, 1 different/m, 'include_tables selected d and w');

# the canary: no planted value or key in what verify printed
my @leaks = grep { -e $_ && slurp($_) =~ /CANARY/ } map { ("$work/$_.out", "$work/$_.err") } @verify_runs;
is(join(' ', @leaks), '', 'no planted value or key in the output of any of the ' . scalar(@verify_runs) . ' verify runs');
ok($consumer->alive, 'the mirror ran throughout the test') or diag(slurp("$work/consumer.err"));

done_testing();
