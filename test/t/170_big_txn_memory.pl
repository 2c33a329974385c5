# Copyright: see the project's LICENSE.

# A 5,000,000-row transaction in bounded consumer memory; was regress/t/big_txn_memory.sh.
#
# Proves G5 (bounded memory): one transaction inserting 5,000,000 rows of (bigint, ~20-byte
# text) passes through the consumer (-o streaming=on, logical_decoding_work_mem = 64kB, so
# the server streams it; --max-memory 64MB, so the consumer spills it) to the stdout sink.
# Asserts: the consumer's peak RSS (/usr/bin/time -v "Maximum resident set size", else
# VmHWM sampled from /proc) stays under 128 MB; it spilled (spill files seen in the spill
# dir while it ran, and replicant_spills_total > 0 on --metrics-port); the spill dir is
# empty afterwards; the output holds exactly 5,000,000 insert lines (counted by grep -c
# through a FIFO: the output is not stored). Then the disk cap: the same transaction with
# --max-spill 8MB halts with exit 3 (spill_limit), leaving no spill file, no checkpoint
# and the slot where it was. ROWS=N overrides the row count.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;
use POSIX qw(mkfifo);
use Time::HiRes qw(time usleep);

my $ROWS     = $ENV{ROWS} || 5000000;
my $LIMIT_KB = 128 * 1024;
my $work  = rp_work();
my $STATE = "$work/state";
my $src   = rp_cluster('src', "logical_decoding_work_mem = '64kB'");
my $srcconn = rp_conninfo($src);
rp_psql($src, 'CREATE TABLE big (id bigint, v text)');
rp_replicant_ok([ -d => $srcconn, -S => $_, '--create-slot' ], "slot $_ created") for qw(big capped);

my $t0 = time();
# bound: read right after the commit, in its session (rp_unacked)
my $bound = rp_psql($src, "INSERT INTO big SELECT g, 'row-' || lpad(g::text, 16, '0') FROM generate_series(1, $ROWS) g;
	SELECT pg_current_wal_insert_lsn();");
my $endpos = rp_psql($src, 'SELECT pg_current_wal_lsn()');
my $insert_s = time() - $t0;

my $port = PostgreSQL::Test::Cluster::get_free_port();
my @args = (-d => $srcconn, -S => 'big', '--start', '-n', -E => $endpos, -o => 'streaming=on',
	'--sink', 'stdout', '--state-dir', $STATE, '--max-memory', '64MB', '--metrics-port', $port);
my $timev = -x '/usr/bin/time' && system('/usr/bin/time -v true >/dev/null 2>&1') == 0 ? '/usr/bin/time' : '';

my $fifo = "$work/out.fifo";
mkfifo($fifo, 0600) or die "mkfifo $fifo: $!";
my $count = RpTest::Proc->start(name => 'count', cmd => [ 'grep', '-c', '"kind":"insert"' ],
	stdin => $fifo, stdout => "$work/count.txt", stderr => "$work/count.err");
$t0 = time();
my $c = RpTest::Proc->start(name => 'consumer',
	cmd => [ ($timev ? ($timev, '-v', '-o', "$work/time.txt") : ()), RpTest::replicant_bin(), @args ],
	stdout => $fifo, stderr => "$work/consumer.err");

my ($spill_seen, $spill_max_kb, $hwm_kb, $spills_metric, $mem_metric_max) = (0, 0, 0, 0, 0);
my $deadline = time() + rp_timeout();
while ($c->alive && time() < $deadline)
{
	my @spill = glob("$STATE/spill/replicant-spill-*");
	if (@spill)
	{
		$spill_seen = 1;
		my $kb = 0;
		$kb += (-s $_ // 0) / 1024 for glob("$STATE/spill/*");
		$spill_max_kb = $kb if $kb > $spill_max_kb;
	}
	# the newest process with this state dir on its command line: replicant, not time
	my $rpid = `pgrep -n -f -- '--state-dir $STATE'`;
	chomp $rpid;
	if ($rpid ne '' && open(my $fh, '<', "/proc/$rpid/status"))
	{
		while (<$fh>)
		{
			$hwm_kb = $1 if /^VmHWM:\s+(\d+)/ && $1 > $hwm_kb;
		}
		close $fh;
	}
	my $r = HTTP::Tiny->new(timeout => 2)->get("http://127.0.0.1:$port/metrics");
	if ($r->{success})
	{
		$spills_metric  = $1 if rp_plain_metrics($r->{content}) =~ /^replicant_spills_total (\d+)$/m && $1 > $spills_metric;
		$mem_metric_max = $1 if rp_plain_metrics($r->{content}) =~ /^replicant_memory_bytes (\d+)$/m && $1 > $mem_metric_max;
	}
	usleep(200_000);
}
ok(!$c->alive, 'the consumer ran to the end position') or $c->kill9_alive;
my $consume_s = time() - $t0;
is($c->status, 0, 'the consumer exited 0') or diag(slurp("$work/consumer.err"));
ok(defined $count->wait_exit, 'the line count ended');
my $err = slurp("$work/consumer.err");
unlike($err, qr/error/, 'the consumer reported no error');

my ($rss_kb, $how);
if ($timev)
{
	my $tv = slurp("$work/time.txt");
	($rss_kb) = $tv =~ /Maximum resident set size \(kbytes\): (\d+)/;
	like($tv, qr/Exit status: 0/, 'replicant exited 0 (/usr/bin/time -v)');
	$how = '/usr/bin/time -v';
}
else
{
	$rss_kb = $hwm_kb;
	$how = 'VmHWM samples';
}
$rss_kb //= 0;
my $lines = slurp("$work/count.txt");
chomp $lines;
diag(sprintf('insert %ds, consume %ds; consumer peak RSS %d kB (%s; sampled VmHWM %d kB); spill dir peak %d kB; metrics: spills %d, memory peak %d bytes',
		$insert_s, $consume_s, $rss_kb, $how, $hwm_kb, $spill_max_kb, $spills_metric, $mem_metric_max));

is($lines, $ROWS, "the output holds $ROWS insert lines");
ok($rss_kb > 0 && $rss_kb < $LIMIT_KB, "consumer peak RSS $rss_kb kB ($how) is under $LIMIT_KB kB");
ok($spill_seen, 'spill files were seen while the consumer ran');
ok($spills_metric > 0, "replicant_spills_total went above 0 ($spills_metric)");
my @left = glob("$STATE/spill/*");
is(scalar @left, 0, 'the spill dir is empty afterwards') or diag("@left");

# the disk cap: the same transaction with --max-spill 8MB halts (exit 3) once its spill file
# would pass 8 MB, names the limit, acknowledges nothing and leaves no spill file
is(rp_replicant('capped', -d => $srcconn, -S => 'capped', '--start', '-n', -E => $endpos, -o => 'streaming=on',
		'--sink', 'stdout', '--state-dir', "$work/state-capped", '--max-memory', '64MB', '--max-spill', '8MB'),
	3, 'with --max-spill 8MB the consumer exits 3') or diag(slurp("$work/capped.err"));
my $cerr = slurp("$work/capped.err");
like($cerr, qr/would exceed --max-spill/, 'the halt names --max-spill');
like($cerr, qr/halted \(spill_limit\)/, 'the halt is a spill_limit halt');
@left = glob("$work/state-capped/spill/*");
is(scalar @left, 0, 'the spill-limit halt left no spill file') or diag("@left");
is(rp_unacked($src, 'capped', "$work/state-capped/capped.checkpoint", $bound), '',
	'after the spill-limit halt nothing of the transaction was confirmed or checkpointed');

done_testing();
