
# Copyright: see the project's LICENSE.

# The metrics page an operator scrapes and alerts on (issue 46, items 3 and 4):
#   1. --metrics-address: a mirror serves on 0.0.0.0 (read on 127.0.0.1); every replicant_*
#      sample carries slot="..." and sink="postgresql"; replicant_build_info names this
#      build's version and the source's major; process_* figures are there; promtool
#      (Debian's prometheus package) passes the live page (`check metrics`) and the example
#      rules file (`check rules`). A bad address is a usage error (exit 2).
#   2. Caught up: replicant_lag_seconds and replicant_checkpoint_age_seconds read 0, also
#      after WAL the mirror has nothing to apply from (another database's writes) was written
#      seconds after the last commit. Before, lag_seconds was the age of the last commit
#      whenever bytes were pending: such WAL made an idle healthy mirror read seconds, then
#      minutes behind.
#   3. Behind: a session holds the destination table locked while the source commits; the
#      lag rises (two reads, the second higher) and so does the checkpoint's age; the lock
#      goes, and both are 0 again once the rows are in.
#   4. A source that goes away and comes back is counted in
#      replicant_retries_total{cause="source"}.
# A real Prometheus (Debian's 2.42, scraping every second) reads the same: through its query
# API, replicant_lag_seconds{slot="mp",sink="postgresql"} is 0 while caught up, above 0 and
# rising behind the lock, and its target is up.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;
use JSON::PP;

my $work = rp_work();
my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE DATABASE other');
rp_psql($dst, 'CREATE TABLE t (id int PRIMARY KEY, v text)');
rp_replicant_ok([ -d => $srcconn, -S => 'mp', '--create-slot' ], 'slot mp created');

# ---- 1.
is(rp_replicant('badaddr', -d => $srcconn, -S => 'mp', '--start', '--sink', "postgres:$dstconn",
		'--metrics-port', '1', '--metrics-address', 'localhost'),
	2, 'a --metrics-address that is not an address literal is a usage error');
like(slurp("$work/badaddr.err"), qr/invalid value "localhost" for option --metrics-address/, '... naming it');

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $c = rp_consumer('mirror', -d => $srcconn, -S => 'mp', '--start', '-s', '1', '--sink', "postgres:$dstconn",
	'--state-dir', "$work/state", '--metrics-port', $port, '--metrics-address', '0.0.0.0');
my $page = '';
sub page
{
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
	$page = $r->{success} ? $r->{content} : '';
	return $page;
}
# metric(NAME): its value on a fresh page (the run's labels set aside), or undef
sub metric
{
	my ($name) = @_;
	return rp_plain_metrics(page()) =~ /^\Q$name\E ([0-9.eE+-]+)$/m ? $1 : undef;
}
rp_psql($src, "INSERT INTO t SELECT g, 'a' FROM generate_series(1, 10) g");
ok(rp_wait_until(sub { rp_psql($dst, 'SELECT count(*) FROM t') == 10 && $c->alive }), 'the mirror applies 10 rows');
ok(rp_wait_until(sub { page() ne '' }), 'the page answers on 127.0.0.1 (served on 0.0.0.0)');
my $major = int(rp_psql($src, 'SHOW server_version_num') / 10000);
like($page, qr/^replicant_build_info\{slot="mp",sink="postgresql",version="[0-9.]+",server_major="$major"\} 1$/m,
	"replicant_build_info: the version and the source's major ($major)");
my @samples = grep { /^replicant_/ } split /\n/, $page;
ok(@samples > 20, 'the page has replicant_* samples (' . scalar(@samples) . ')');
is(join("\n", grep { !/^replicant_[a-z_]+\{slot="mp",sink="postgresql"[,}]/ } @samples), '',
	'every replicant_* sample carries slot and sink');
like($page, qr/^process_cpu_seconds_total\{slot="mp",sink="postgresql"\} [0-9.]+$/m, 'process_cpu_seconds_total');
like($page, qr/^process_resident_memory_bytes\{[^}]*\} [1-9][0-9]*$/m, 'process_resident_memory_bytes');
like($page, qr/^process_open_fds\{[^}]*\} [1-9][0-9]*$/m, 'process_open_fds');
open(my $fh, '>', "$work/page.txt") or die $!;
print $fh $page;
close $fh;
is(rp_run('promtool-metrics', { stdin => "$work/page.txt", stdout => "$work/promtool-metrics.out" },
		'promtool', 'check', 'metrics'),
	0, 'promtool check metrics passes the live page') or diag(slurp("$work/promtool-metrics.err"));
is(rp_run('promtool-rules', { stdout => "$work/promtool-rules.out" }, 'promtool', 'check', 'rules',
		rp_root() . '/packaging/prometheus/replicant.rules.yml'),
	0, 'promtool check rules passes the example rules') or diag(slurp("$work/promtool-rules.out"));

# a Prometheus scraping the page every second, queried through its HTTP API
my $pport = PostgreSQL::Test::Cluster::get_free_port();
mkdir "$work/prom";
open(my $pc, '>', "$work/prom/prometheus.yml") or die $!;
print $pc "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
  . "  - job_name: replicant\n    static_configs:\n      - targets: ['127.0.0.1:$port']\n";
close $pc;
my $prom = RpTest::Proc->start(name => 'prometheus',
	cmd => [ 'prometheus', "--config.file=$work/prom/prometheus.yml", "--storage.tsdb.path=$work/prom/data",
		"--web.listen-address=127.0.0.1:$pport" ],
	stdout => "$work/prometheus.out", stderr => "$work/prometheus.out");
# prom(QUERY): the value of the query's one sample now, or undef
sub prom
{
	my ($q) = @_;
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$pport/api/v1/query?query=" . $q);
	return undef unless $r->{success};
	my $d = eval { decode_json($r->{content}) };
	return undef unless $d && $d->{status} eq 'success' && @{ $d->{data}{result} } == 1;
	return $d->{data}{result}[0]{value}[1];
}
my $LAG = 'replicant_lag_seconds%7Bslot%3D%22mp%22%2Csink%3D%22postgresql%22%7D';
ok(rp_wait_until(sub { (prom('up%7Bjob%3D%22replicant%22%7D') // '') eq '1' }, $prom),
	'Prometheus scrapes the page: its target is up') or diag(slurp("$work/prometheus.out"));

# ---- 2. caught up, and WAL with nothing to apply
ok(rp_wait_until(sub { (metric('replicant_lag_seconds') // -1) == 0 }), 'caught up: lag_seconds 0');
ok(rp_wait_until(sub { (prom($LAG) // -1) eq '0' }), 'caught up: Prometheus reads lag_seconds 0');
is(metric('replicant_checkpoint_age_seconds'), '0.000', 'caught up: checkpoint_age_seconds 0');
sleep 3;
rp_psql($src, 'CREATE TABLE other_t AS SELECT g FROM generate_series(1, 20000) g; SELECT pg_switch_wal()', 'other');
# the walsender decodes that WAL to nothing: read while its bytes are pending and after
my $max_idle = 0;
for (1 .. 6)
{
	my $l = metric('replicant_lag_seconds') // 0;
	$max_idle = $l if $l > $max_idle;
	select(undef, undef, undef, 0.5);
}
is($max_idle, 0, 'idle: WAL the mirror has nothing to apply from leaves lag_seconds at 0');

# ---- 3. behind
my $lock = rp_session($dst, 'lock');
$lock->send("BEGIN; LOCK TABLE t IN SHARE MODE; SELECT 'locked';");
ok(rp_wait_until(sub { -e $lock->out && slurp($lock->out) =~ /locked/ }), 'a session holds the destination table');
rp_psql($src, "INSERT INTO t VALUES (11, 'b')");
ok(rp_wait_until(sub { (metric('replicant_lag_seconds') // 0) >= 1 }), 'behind: lag_seconds reaches 1');
my $first = metric('replicant_lag_seconds');
sleep 2;
my $second = metric('replicant_lag_seconds');
cmp_ok($second, '>', $first, "behind: lag_seconds rises ($first, then $second)");
cmp_ok(metric('replicant_checkpoint_age_seconds') // 0, '>=', 1, 'behind: the checkpoint ages');
my $p1;
ok(rp_wait_until(sub { $p1 = prom($LAG); defined $p1 && $p1 >= 1 }), "behind: Prometheus reads the lag ($p1 s)");
my $p2;
ok(rp_wait_until(sub { $p2 = prom($LAG); defined $p2 && $p2 > $p1 }), "behind: and reads it rising ($p1, then $p2)");
$lock->send('COMMIT;');
$lock->close;
ok(rp_wait_until(sub { rp_psql($dst, 'SELECT count(*) FROM t') == 11 }), 'the lock gone, the row is applied');
ok(rp_wait_until(sub { (metric('replicant_lag_seconds') // -1) == 0 && (metric('replicant_checkpoint_age_seconds') // -1) == 0 }),
	'caught up again: both 0');
ok(rp_wait_until(sub { (prom($LAG) // -1) eq '0' }), 'caught up again: Prometheus reads 0');
$prom->signal('TERM');
$prom->wait_exit;

# ---- 4. the source goes away and comes back
$src->stop('fast');
$src->start;
rp_psql($src, "INSERT INTO t VALUES (12, 'c')");
ok(rp_wait_until(sub { rp_psql($dst, 'SELECT count(*) FROM t') == 12 }), 'the mirror reconnects and applies the next row');
cmp_ok(metric('replicant_retries_total{cause="source"}') // 0, '>=', 1, 'the lost source is counted as a retry');
ok($c->signal('TERM') && defined($c->wait_exit) && $c->status == 0, 'the mirror stops on SIGTERM (exit 0)');

done_testing();
