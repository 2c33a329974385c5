
# Copyright: see the project's LICENSE.

# With no dead-letter file (--dead-letter-file=none), an oversize snapshot row is dropped,
# counted and warned of, and the dump stays whole; was regress/t/snapshot_dlq_drop.sh.
#
# A table of 60 rows, 25 of them larger than --max-record-bytes, each holding a canary; a
# --snapshot into the file sink with --dead-letter-file=none and --metrics-port:
#   - the dump has 35 row frames and 25 oversize stubs, and `replicant verify-snapshot`
#     calls it complete (seqs whole);
#   - no dead-letter file exists (neither the default STATE-DIR/SLOT.dead-letter nor "none");
#   - /metrics: replicant_dead_letters_dropped_total{reason="too_large"} 25,
#     replicant_snapshot_rows_oversize_total{store="public.big_t"} 25, 0 for the other table;
#   - the warning names the table and a count, at most once every 10 s (so at most
#     1 + seconds/10 lines for the run), and no row value reaches stderr (G4).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;

my $work = rp_work();
my $src  = rp_cluster('src');
my $canary_sql = "'CANARY-' || '7d1c0e55'";
rp_psql($src, "CREATE TABLE big_t (id int PRIMARY KEY, v text);
INSERT INTO big_t SELECT g, CASE WHEN g % 12 < 5 THEN repeat($canary_sql, 300) ELSE $canary_sql END
  FROM generate_series(1, 60) g;
CREATE TABLE small_t (id int PRIMARY KEY);
INSERT INTO small_t SELECT generate_series(1, 10);");
is(rp_psql($src, 'SELECT count(*) FROM big_t WHERE length(v) > 1000'), '25', '25 oversize rows in the source');

my $port  = PostgreSQL::Test::Cluster::get_free_port();
my $start = time();
my $log   = "$work/log.jsonl";
my $c = rp_consumer('consumer', -d => rp_conninfo($src), -S => 'dlq_drop', '--create-slot', '--snapshot', '--start',
	'--sink', "file:$log", '--max-record-bytes=1000', '--dead-letter-file=none',
	'--state-dir', "$work/state", '--metrics-port', $port, '-s', '1');
ok(rp_wait_file_match($log, qr/"kind":"checkpoint"/, $c), 'a checkpoint line after the snapshot (the consumer runs on)')
  or diag(slurp("$work/consumer.err"));
my $page = '';
ok(rp_wait_until(sub {
			my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
			$page = $r->{success} ? rp_plain_metrics($r->{content}) : '';
			# the per-table counts appear once the snapshot is over, which can be a moment
			# after the first checkpoint line (the script read the page once the
			# dead-letter count was there, and could miss them)
			$page =~ /replicant_dead_letters_dropped_total/ && $page =~ /replicant_snapshot_rows_oversize_total/;
		}, $c),
	'the metrics page answers, the snapshot over');
my $elapsed = time() - $start;
$c->signal('TERM');
is($c->wait_exit, 0, 'the consumer stops cleanly on SIGTERM');

like($page, qr/^replicant_dead_letters_dropped_total\{reason="too_large"\} 25$/m, 'metrics: 25 dead letters dropped as too large');
like($page, qr/^replicant_snapshot_rows_oversize_total\{store="public.big_t"\} 25$/m, 'metrics: 25 oversize rows of big_t');
like($page, qr/^replicant_snapshot_rows_oversize_total\{store="public.small_t"\} 0$/m, 'metrics: 0 oversize rows of small_t');

my @lines = split /\n/, slurp($log);
is(scalar(grep { /"kind":"row".*"store":"public.big_t"/ } @lines), 35, 'the dump of big_t has 35 rows');
is(scalar(grep { /"kind":"oversize".*"store":"public.big_t"/ } @lines), 25, 'the dump of big_t has 25 oversize stubs');
is(rp_run('verify', { stdout => "$work/verify.out", stderr => "$work/verify.out" },
		rp_root() . '/consumer/replicant', 'verify-snapshot', $log),
	0, 'verify-snapshot calls the dump complete') or diag(slurp("$work/verify.out"));
opendir(my $dh, "$work/state") or die $!;
my @dl = grep { /dead-letter/ } readdir $dh;
closedir $dh;
is(scalar @dl, 0, 'no dead-letter file was written') or diag("@dl");
ok(!-e 'none' && !-e "$work/none", 'no dead-letter file named none was written');

my $err = slurp("$work/consumer.err");
my $warnings = () = $err =~ /warning: snapshot of public.big_t: [0-9]* oversize rows? dropped/g;
ok($warnings >= 1 && $warnings <= 1 + int($elapsed / 10),
	"$warnings drop warnings in ${elapsed}s (1 to " . (1 + int($elapsed / 10)) . ')');
unlike($err, qr/CANARY-7d1c0e55/, 'no row value reaches stderr');
like(slurp($log), qr/CANARY-7d1c0e55/, 'the canary is in the log (the search proves something)');

done_testing();
