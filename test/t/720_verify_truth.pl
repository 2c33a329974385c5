# Copyright: see the project's LICENSE.

# `replicant verify` tells the truth (G1 checked from the outside): every row of both sides
# lies in exactly one chunk, every table is read alone, and a chunk it cannot settle is "not
# compared", never "different"; was regress/t/verify_truth.sh.
#
# A running mirror (--create-slot --snapshot --start --create-tables) of
# (test/fixtures/verify_truth.sql):
#   nk    (id int key), 2 rows; on the destination its key is made nullable and a row with a
#         NULL key is added
#   nk2   (k1 int, k2 text key), 2 rows; on the destination a row (3, NULL) is added: past the
#         source's last key, so a row comparison alone would count it in the last chunk too
#   par   (id int key) with an inheritance child kid (its own key): 3 rows in par, 2 in kid,
#         the destination's tables made by hand with the same inheritance
#   kpar  (no key, REPLICA IDENTITY FULL) with a child kkid: 2 rows in kpar, 3 in kkid, also
#         inherited on the destination
#   app   (bigserial key), appended to continuously by a background session during part 3
#   1. --chunk-rows 1 over nk and nk2: exit 1, "different" for both, each NULL-keyed row in
#      exactly one range ("rows with a NULL key": source 0 rows, destination 1 rows); the keys
#      file names them as extra; no row value in verify's output. Without the planted rows
#      (the keys still nullable) both are equal.
#   2. par, kid, kpar, kkid: each compared as its own table, each equal with its own row count
#      (3, 2, 2, 3: a parent read without ONLY would count its child's rows), exit 0.
#   3. app appended to while verify runs (three runs, --recheck-timeout 3): never "different",
#      exit 0 (equal) or 4 (not compared, the reason named); equal once the appender stopped
#      and the mirror caught up.
#   4. every selected table has one verdict line, and the summary counts them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT = 'verify_truth';
my $work = rp_work();

sub section { return rp_fixture_section('verify_truth.sql', $_[0]); }

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, section('source'));
rp_psql($dst, section('destination'));

my $consumer = rp_consumer('consumer', { stdout => "$work/consumer.out" }, -d => $srcconn, -S => $SLOT,
	'--create-slot', '--snapshot', '--start', '--create-tables', '--sink', "postgres:$dstconn",
	'--state-dir', "$work/state", '-s', '1');

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

# verify(NAME, ARG...): replicant verify --duty 100 ARG...; its exit status, its stdout in
# $work/NAME.out (the text returned second), stderr in $work/NAME.err
sub verify
{
	my ($name, @args) = @_;
	my $rc = rp_replicant($name, { stdout => "$work/$name.out" }, 'verify', -d => $srcconn,
		'--sink', "postgres:$dstconn", '--duty', '100', @args);
	return ($rc, slurp("$work/$name.out"));
}

# verdicts(NAME, OUT, TABLE...): each table has exactly one verdict line (equal, different or
# not compared), and the summary counts the tables
sub verdicts
{
	my ($name, $out, @tables) = @_;
	for my $t (@tables)
	{
		my $n = () = $out =~ /^public\.\Q$t\E: (?:equal \(|different \(|different: missing|different: column|not compared[ :(])/mg;
		is($n, 1, "$name: one verdict line for public.$t") or diag($out);
	}
	like($out, qr/^\d+ tables: \d+ equal, \d+ different, \d+ not compared$/m, "$name: the summary counts the tables");
	return;
}

caught_up('after the snapshot');
is(rp_psql($dst, "SELECT (SELECT count(*) FROM ONLY par) || ' ' || (SELECT count(*) FROM ONLY kpar)"), '3 2',
	'the snapshot copied each inherited parent alone (3 rows in par, 2 in kpar, ONLY)');

# ---- 1. NULL keys on the destination
rp_psql($dst, section('null keys'));
my ($rc, $out) = verify('nullkey', '--chunk-rows', '1', '--recheck-timeout', '10',
	'-o', 'include_tables=public.nk,public.nk2', '--keys-file', "$work/keys.tsv");
is($rc, 1, 'a destination row with a NULL key: verify exits 1') or diag($out);
for my $t (qw(nk nk2))
{
	my $n = () = $out =~ /^public\.\Q$t\E: different: /mg;
	is($n, 1, "$t: the NULL-keyed row lies in exactly one differing range") or diag($out);
	like($out, qr/^public\.\Q$t\E: different: rows with a NULL key: source 0 rows, destination 1 rows$/m,
		"$t: the range is the NULL-key rows, source 0, destination 1");
}
verdicts('nullkey', $out, qw(nk nk2));
like($out, qr/^2 tables: 0 equal, 2 different, 0 not compared$/m, 'nullkey: summary 2 different');
my $keys = -e "$work/keys.tsv" ? slurp("$work/keys.tsv") : '';
is(join('|', sort grep { /^key/ } split /\n/, $keys),
	join("|", sort("key\tpublic.nk\textra\t()", "key\tpublic.nk2\textra\t(3,)")),
	'the keys file names the two NULL-keyed rows as extra');
like($keys, qr/^range\tpublic\.nk\t\d*\tNULL\tNULL$/m, "the keys file has nk's NULL-key range");
unlike(slurp("$work/$_"), qr/CANARY/, "no row value in verify's $_") for qw(nullkey.out nullkey.err);
# without the extra rows (the keys still nullable), both are equal
rp_psql($dst, 'DELETE FROM public.nk WHERE id IS NULL; DELETE FROM public.nk2 WHERE k2 IS NULL');
($rc, $out) = verify('nullkey_equal', '--chunk-rows', '1', '-o', 'include_tables=public.nk,public.nk2');
is($rc, 0, 'nullable keys, no NULL: verify exits 0') or diag($out);
like($out, qr/^public\.nk: equal \(2 rows, 3 chunks\)$/m, 'nullable keys, no NULL: nk equal (2 rows, 3 chunks)');

# ---- 2. inheritance: each table alone
($rc, $out) = verify('inherit', '--chunk-rows', '2', '-o', 'include_tables=public.par,public.kid,public.kpar,public.kkid');
is($rc, 0, 'inherited tables: verify exits 0') or diag($out);
like($out, qr/^public\.par: equal \(3 rows, 2 chunks\)$/m,  'par compared alone: equal (3 rows, 2 chunks)');
like($out, qr/^public\.kid: equal \(2 rows, 2 chunks\)$/m,  'kid compared alone: equal (2 rows, 2 chunks)');
like($out, qr/^public\.kpar: equal \(2 rows, 1 chunks\)$/m, 'kpar compared alone: equal (2 rows, 1 chunks)');
like($out, qr/^public\.kkid: equal \(3 rows, 1 chunks\)$/m, 'kkid compared alone: equal (3 rows, 1 chunks)');
verdicts('inherit', $out, qw(par kid kpar kkid));
like($out, qr/^4 tables: 4 equal, 0 different, 0 not compared$/m, 'inherit: summary 4 equal');

# ---- 3. a table appended to while verify runs, the mirror running and exact
(my $appender_sql = section('appender')) =~ s/^--.*\n//mg;
my $appender = RpTest::Proc->start(
	name   => 'appender',
	cmd    => [ $src->installed_command('psql'), '-X', '-q', '-d', $srcconn, '-c', $appender_sql ],
	stdout => "$work/appender.out",
	stderr => "$work/appender.out",
	env    => { PGAPPNAME => 'vt_appender' });
my $n0 = rp_psql($src, 'SELECT count(*) FROM app');
ok(rp_wait_until(sub { rp_psql($src, 'SELECT count(*) FROM app') > $n0 + 50 }, $appender),
	'the appender got going (50 rows appended)')
  or diag(slurp("$work/appender.out"));
for my $round (1 .. 3)
{
	($rc, $out) = verify("append$round", '--chunk-rows', '500', '--recheck-timeout', '3',
		'-o', 'include_tables=public.app,public.par');
	ok($appender->alive, "round $round: the appender still ran during verify");
	unlike($out, qr/: different/, "round $round: verify never calls the exact mirror of an appended table different");
	ok($rc == 0 || $rc == 4, "round $round: exit 0 or 4 (exit $rc)") or diag($out);
	if ($rc == 4)
	{
		like($out, qr/^public\.app: chunk \d+ not compared: (?:the source kept changing it|the mirror)/m,
			"round $round: not compared, with the reason named");
		like($out, qr/^2 tables: 1 equal, 0 different, 1 not compared$/m, "round $round: summary 1 equal, 1 not compared");
	}
	else
	{
		like($out, qr/^2 tables: 2 equal, 0 different, 0 not compared$/m, "round $round: summary 2 equal");
	}
	verdicts("append$round", $out, qw(app par));
	my @app = $out =~ /^(public\.app: .*)$/mg;
	note("append round $round: exit $rc: " . ($app[-1] // ''));
}
rp_psql($src, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'vt_appender'");
ok(defined $appender->wait_exit, 'the appender ends once its backend is terminated');
# stopped and caught up, the appended table is equal
caught_up('after the appender');
($rc, $out) = verify('append_done', '--chunk-rows', '500', '-o', 'include_tables=public.app');
is($rc, 0, 'the appended table after the appender stopped: verify exits 0') or diag($out);

# ---- 4. every table of a full run has its verdict
($rc, $out) = verify('all', '--chunk-rows', '1000');
is($rc, 0, 'the whole mirror: verify exits 0') or diag($out);
verdicts('all', $out, qw(nk nk2 par kid kpar kkid app fence));

ok($consumer->alive, 'the mirror ran throughout the test') or diag(slurp("$work/consumer.err"));

done_testing();
