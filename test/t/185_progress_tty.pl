
# Copyright: see the project's LICENSE.

# The progress display on a terminal (issue 17, item 4), read back through a
# pseudo-terminal (a tmux pane, 120x20, captured with capture-pane); was
# regress/t/progress_tty.sh.
#
# (a) --snapshot --start into the mirror, stderr a terminal, --progress and -v: while the
#     copy runs the pane shows the total line and a line per table being copied with its
#     rows of the estimate, percent, rate and ETA; the metrics page shows the same figures
#     (replicant_snapshot_rows_total and replicant_snapshot_rows_estimate by store, during
#     the copy). The destination tables are held locked (a session's LOCK ... IN SHARE MODE)
#     until both were seen, so the copy waits as long as the checks need on any machine;
#     nothing is timed. Then it goes on: the final pane holds only whole lines (every line
#     matches one of the forms the display and the log print, to its end: nothing left of
#     the longer per-table lines drawn before), no per-table progress line, the two "copied"
#     lines, the total, and the stream's line with its lag; the page has
#     replicant_lag_bytes, replicant_lag_seconds and replicant_catchup_eta_seconds.
# (b) The same run for a second slot with stderr a file: no escape sequence, no carriage
#     return, no progress line in it at all.
# (c) Without --progress (the default) on a terminal: after a stop, rows written to the
#     source are a lag the stream catches up; the stream's line goes once caught up and one
#     line says so ("catch-up: caught up at checkpoint ...").
# (d) --progress with -s 3600, caught up, then WAL the stream decodes to nothing (another
#     database's table): the bytes behind grow (no idle confirmation for an hour) and the
#     line says "streaming, caught up: lag N MiB" with N > 0. It flipped back to
#     "catch-up: ... ETA --" while idle (issue 46), which no wait for the bytes ends.
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use HTTP::Tiny;

my $SLOT     = 'progress_tty';
my $BIG_ROWS = 40000;
my $LONG     = 'a_table_with_a_much_longer_name_than_big';
my $work     = rp_work();

ok(system('command -v tmux >/dev/null') == 0, 'tmux is installed (the terminal is read back through it)')
  or BAIL_OUT('tmux is missing');
my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
rp_psql($dst, 'CREATE DATABASE dst2');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, "CREATE TABLE big_t (id bigint PRIMARY KEY, v text);
INSERT INTO big_t SELECT g, repeat('x', 50) FROM generate_series(1, $BIG_ROWS) g;
CREATE TABLE $LONG (id int PRIMARY KEY, v text);
INSERT INTO $LONG SELECT g, 'y' FROM generate_series(1, 4000) g;
ANALYZE;");
# the destination tables exist, empty, and a session holds them locked until the checks
# below have seen the copy running: the copy reads ahead a chunk or two and waits
rp_psql($dst, "CREATE TABLE big_t (id bigint PRIMARY KEY, v text);
CREATE TABLE $LONG (id int PRIMARY KEY, v text);");
my $lock = rp_session($dst, 'lock');
$lock->send("BEGIN; LOCK TABLE big_t, $LONG IN SHARE MODE; SELECT 'locked';");
ok(rp_wait_file_match($lock->out, qr/locked/, $lock->proc), 'the destination tables are locked')
  or diag(slurp($lock->out));

sub metrics
{
	my ($port) = @_;
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$port/metrics");
	return $r->{success} ? rp_plain_metrics($r->{content}) : undef;
}

# ---- (a) the snapshot on a terminal
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $ta = RpTest::Tmux->run('a', [ RpTest::replicant_bin(), -d => $srcconn, -S => $SLOT, '--create-slot',
		'--snapshot', '--start', '--create-tables', '--snapshot-workers=2', '--snapshot-chunk-rows=500',
		'--sink', "postgres:$dstconn", '--state-dir', "$work/state_a", '-s', '1', '-v', '--progress',
		'--metrics-port', $port ], stdout => "$work/a.out");

my $num = qr/[0-9]+(?:\.[0-9])?[kMG]?/;
my $eta = qr/(?:[0-9]+s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m|[0-9]+d[0-9]{2}h|--)/;
my $lsn = qr{[0-9A-F]+/[0-9A-F]+};
$ta->wait_pane(qr/^snapshot: [0-9]\/2 tables, $num of ~$num rows \([0-9]+%\), $num rows\/s, ETA [0-9]+[smhd]/m,
	'the total line with an ETA');
$ta->wait_pane(qr/^  public\.big_t: $num of ~$num rows \([0-9]+%\), $num rows\/s, ETA [0-9]+[smhd][0-9]*[smh]?$/m,
	"big_t's line with percent and ETA");
$ta->wait_pane(qr/^  public\.$LONG: $num of ~$num rows \([0-9]+%\), $num rows\/s, ETA $eta$/m,
	"the other table's line");
# the same figures on the page, while the copy runs
my $page;
ok(rp_wait_until(
		sub {
			$page = metrics($port) // '';
			return $page =~ /^replicant_snapshot_rows_total\{store="public\.big_t"\} [0-9]+$/m
			  && $page =~ /^replicant_snapshot_rows_estimate\{store="public\.big_t"\} $BIG_ROWS$/m;
		}) && $ta->alive,
	"the metrics page shows big_t's rows and estimate ($BIG_ROWS) during the copy");
# the copy goes on
$lock->send('COMMIT;');
ok($lock->close, 'the locking session ended');

# the end of the copy: the stream's line, with its lag
$ta->wait_pane(qr/^streaming, caught up: lag /m, "the stream's line, caught up");
$ta->wait_pane(qr/^snapshot: 2 tables, [0-9]+ rows in /m, "the snapshot's total");
my $final = $ta->pane;
# every line whole: one of the display's forms or a log line, to its end
my @forms = (
	qr/^snapshot: public\.(?:big_t|$LONG) copied, [0-9]+ rows in $eta$/,
	qr/^snapshot: 2 tables, [0-9]+ rows in $eta$/,
	qr/^(?:streaming, caught up|catch-up): lag [0-9.]+ [KMGTP]?i?B, [0-9.]+ s, ETA $eta; [0-9]+ txns, $num changes\/s, checkpoint $lsn$/,
	qr/^replicant: created slot "$SLOT" with a snapshot at consistent point $lsn$/,
	qr/^replicant: snapshot complete: [0-9]+ rows; streaming from $lsn$/,
	qr/^replicant: streaming from slot "$SLOT"$/,
	qr/^replicant: logical_decoding_work_mem of this session: [0-9]+kB$/,
	qr/^replicant: sequences synced after the snapshot: [0-9]+ selected, [0-9]+ advanced, [0-9]+ created, [0-9]+ missing$/);
my @broken;
for my $line (grep { $_ ne '' } split /\n/, $final)
{
	push @broken, $line unless grep { $line =~ $_ } @forms;
}
is("@broken", '', 'every line of the final screen is whole (nothing left over or interleaved)')
  or diag("--- the pane\n$final");
unlike($final, qr/^  public\./m, 'no per-table progress line is left on the final screen');
is(scalar(() = $final =~ / copied, /g), 2, "one 'copied' line per table");
is(scalar(() = $final =~ /^(?:streaming, caught up|catch-up): lag /mg), 1, 'one stream line');
is(rp_psql($dst, 'SELECT count(*) FROM big_t'), $BIG_ROWS, 'big_t copied whole');
$page = metrics($port);
ok(defined $page, 'the metrics page answers after the snapshot');
$page //= '';
like($page, qr/^replicant_snapshot_rows_total\{store="public.big_t"\} $BIG_ROWS$/m,
	"the page counts big_t's $BIG_ROWS rows copied");
like($page, qr/^replicant_lag_bytes [0-9]+$/m,   'the page has replicant_lag_bytes');
like($page, qr/^replicant_lag_seconds [0-9.]+$/m, 'the page has replicant_lag_seconds');
like($page, qr/^replicant_catchup_eta_seconds (?:[0-9.]+|NaN)$/m, 'the page has replicant_catchup_eta_seconds');
ok(kill('TERM', $ta->pid), 'SIGTERM sent to the consumer');
is($ta->wait_exit, 0, 'the consumer stops cleanly on SIGTERM');

# ---- (b) the same with stderr a file
(my $dst2 = $dstconn) =~ s/dbname=postgres/dbname=dst2/;
my $piped = rp_consumer('b', { stdout => "$work/b.out" }, -d => $srcconn, -S => "${SLOT}_b", '--create-slot',
	'--snapshot', '--start', '--create-tables', '--snapshot-workers=2', '--snapshot-chunk-rows=500',
	'--sink', "postgres:$dst2", '--state-dir', "$work/state_b", '-s', '1', '-v', '--progress');
ok(rp_wait_file_match("$work/b.err", qr/streaming from slot/, $piped), 'the piped consumer reaches the stream');
ok($piped->signal('TERM'), 'SIGTERM sent to the piped consumer');
is($piped->wait_exit, 0, 'the piped consumer stops cleanly');
my $berr = slurp("$work/b.err");
unlike($berr, qr/\033/, 'no escape sequence in the piped stderr');
unlike($berr, qr/\r/,   'no carriage return in the piped stderr');
unlike($berr, qr/^(?:snapshot|streaming|catch-up)[:,]|^  public\./m, 'no progress line in the piped stderr');

# ---- (c) the default on a terminal: the catch-up, then its end
my $total = $BIG_ROWS + 20000;
rp_psql($src, "INSERT INTO big_t SELECT g, 'z' FROM generate_series($BIG_ROWS + 1, $total) g");
my $tc = RpTest::Tmux->run('c', [ RpTest::replicant_bin(), -d => $srcconn, -S => $SLOT, '--start',
		'--sink', "postgres:$dstconn", '--state-dir', "$work/state_a", '-s', '1' ], stdout => "$work/c.out");
$tc->wait_pane(qr/^catch-up: caught up at checkpoint $lsn$/m, 'the end of the catch-up');
ok(rp_wait_until(sub { rp_psql($dst, 'SELECT count(*) FROM big_t') == $total }),
	"the catch-up applies the rows ($total in big_t)");
unlike($tc->pane, qr/^(?:streaming, caught up|catch-up): lag /m, "the stream's line went after the catch-up");
ok(kill('TERM', $tc->pid), 'SIGTERM sent to the consumer (c)');
is($tc->wait_exit, 0, 'the consumer (c) stops cleanly on SIGTERM');

# ---- (d) idle WAL while caught up: still "streaming, caught up"
rp_psql($src, 'CREATE DATABASE other');
my $td = RpTest::Tmux->run('d', [ RpTest::replicant_bin(), -d => $srcconn, -S => $SLOT, '--start', '--progress',
		'--sink', "postgres:$dstconn", '--state-dir', "$work/state_a", '-s', '3600' ], stdout => "$work/d.out");
$td->wait_pane(qr/^streaming, caught up: lag /m, '(d) caught up');
rp_psql($src, 'CREATE TABLE other_t AS SELECT g FROM generate_series(1, 50000) g', 'other');
$td->wait_pane(qr/^streaming, caught up: lag [1-9][0-9.]* [KMGT]?i?B, [0-9.]+ s, ETA 0s;/m,
	"(d) WAL of another database: bytes behind, and still caught up");
unlike($td->pane, qr/^catch-up:/m, '(d) no catch-up line');
ok(kill('TERM', $td->pid), 'SIGTERM sent to the consumer (d)');
is($td->wait_exit, 0, 'the consumer (d) stops cleanly on SIGTERM');

done_testing();
