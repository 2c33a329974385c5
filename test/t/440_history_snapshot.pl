# Copyright: see the project's LICENSE.

# The initial snapshot, a re-snapshot, a TRUNCATE and a backfill of a --history table
# (issue 16 item 1); was regress/t/history_snapshot.sh.
#
# (a) A snapshot of hist (ROWS, 30,000 rows) into a history table under a workload
#     (test/fixtures/history_snapshot.sql), killed with SIGKILL twice during the copy and
#     resumed by the same command, then streamed. The workload's audit trigger records, in
#     the changing transaction, every row change (txid, the WAL insert LSN so far, op, old
#     and new key, the new row). test/fixtures/check_history.py --snapshot (the checker
#     test/t/451_mirror_history.pl uses, which this script's own checker extended) recomputes
#     the versions from the audit and compares them version for version: every key live at
#     the consistent point L has one version opened at L at the snapshot's one time T; every
#     transaction after L opens one version per key it left live, closing the one open
#     before, all at its own LSN and time, LSNs increasing with the audit's order. The
#     workload is paused across each kill and restart, so the resumed copy reads a known
#     state: a row a resumed run copied opens at L with the contents of one of the pause
#     points (docs/sinks.md says so), and the checker allows exactly those.
# (b) The slot is dropped, the source changed (updates, updates to the same values, deletes,
#     inserts) and a new slot's snapshot merges into the populated history table: a key whose
#     content is unchanged keeps its versions (no new one), a changed key's open version is
#     closed at the new consistent point L2 and a new one opened there, a gone key's is closed
#     at L2, a new key opens at L2 (test/fixtures/check_history_resnapshot.py).
# (c) A TRUNCATE of hist closes every open version at the truncating commit; rows inserted
#     afterwards open new versions.
# (d) A table added to the selection is backfilled into a history table while updates run
#     (an audit trigger logs them as in (a): test/fixtures/history_snapshot_hb.sql): every
#     version a transaction opened has that transaction's row and lies within its LSN bounds,
#     every other version (a chunk's, at its high watermark) has the row's state at that LSN,
#     every transaction that left a key live opened a version of it, every key's versions
#     chain, and the open versions equal the source (test/fixtures/check_history_backfill.py).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $ROWS  = $ENV{ROWS} || 30000;
my $SLOT  = 'hsnap';
my $SLOT2 = 'hsnap2';
my $work  = rp_work();
my $fixtures = "$FindBin::RealBin/../fixtures";
my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

(my $src_sql = rp_fixture('history_snapshot.sql')) =~ s/\@ROWS\@/$ROWS/g;
rp_psql($src, $src_sql);
# every INSERT statement into the destination's hist sleeps until the kills are done, so the
# copy (30 chunks of 1,000 rows, two workers) cannot finish before them
rp_slow_new_tables($dst, 0.2, 'INSERT', '', 'hist');

my @SEL = ('-o', 'include_tables=public.hist,public.fence');
my $runs = 0;
my $consumer;
sub start_consumer
{
	my ($slot, @args) = @_;
	$runs++;
	$consumer = rp_consumer("c$runs", { stdout => "$work/c$runs.out" },
		-d => $srcconn, -S => $slot, '--start', '-s', '1', '--sink', "postgres:$dstconn", '--create-tables',
		'--history', 'public.hist', '--history', 'public.hb', '--state-dir', "$work/state",
		'--batch-txns', '20', '--batch-ms', '50', @args);
}
sub err { return slurp("$work/c$runs.err"); }
# one value of a destination query, DEFAULT when it fails (a table not created yet)
sub dst_value
{
	my ($q, $default) = @_;
	my ($ret, $out) = $dst->psql('postgres', $q);
	return $ret == 0 && $out ne '' ? $out : $default;
}
sub stored { return dst_value("SELECT coalesce(sum(rows), 0) FROM replicant.snapshot_progress WHERE slot = '$SLOT'", 0); }
sub mark { return dst_value("SELECT token FROM replicant.snapshot_progress WHERE slot = '$SLOT' AND relid = 0", ''); }
sub dst_ck { return rp_dst_checkpoint($dst, $_[0]); }
sub audit_seq { return rp_psql($src, 'SELECT coalesce(max(seq), 0) FROM audit'); }

# wait_fence(SLOT, WHAT): until the destination's checkpoint of SLOT covers everything
# committed so far
sub wait_fence
{
	my ($slot, $what) = @_;
	my $fence = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
	ok(rp_wait_dst_checkpoint($dst, $slot, $fence, $consumer), "$what: the destination reached the fence $fence")
	  or diag(err());
}
sub stop_consumer
{
	my ($what) = @_;
	$consumer->signal('TERM');
	is($consumer->wait_exit, 0, "$what: consumer run $runs exits 0 on SIGTERM") or diag(err());
}

# the workload runs until paused: a flag it reads before each transaction, and its CALL
# returns (killing psql would not stop the server's loop)
my ($workload, $wl) = (undef, 0);
sub workload_go
{
	rp_psql($src, 'UPDATE ctl SET stop = false');
	$wl++;
	$workload = rp_psql_bg($src, "workload$wl", 'CALL workload(1000000)');
}
sub workload_pause
{
	my ($what) = @_;
	rp_psql($src, 'UPDATE ctl SET stop = true');
	is($workload->wait_exit, 0, "$what: the workload pauses, without an error")
	  or diag(slurp("$work/workload$wl.out"));
}

# copy(NODE, QUERY, FILE): COPY's text output of QUERY into FILE
sub copy
{
	my ($node, $q, $file) = @_;
	my $text = rp_psql($node, "COPY ($q) TO STDOUT");
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $text, ($text eq '' ? '' : "\n");
	close $fh;
}
# checker(NAME, SCRIPT, ARG...): a test/fixtures checker; its exit status, its report noted
sub checker
{
	my ($name, $script, @args) = @_;
	my $rc = rp_run($name, { stdout => "$work/$name.out" }, 'python3', "$fixtures/$script", @args);
	my $report = slurp("$work/$name.out") . slurp("$work/$name.err");
	note($report);
	return ($rc, $report);
}

# ---- (a) the snapshot under a workload, killed twice and resumed
my @snap = ($SLOT, '--create-slot', '--snapshot', '--snapshot-workers=2', '--snapshot-chunk-rows=1000', @SEL, '-v');
workload_go();
start_consumer(@snap);
my @pauses;
my ($last, $lmark) = (0, undef);
for my $round (1, 2)
{
	my $want = $last + 3000;
	ok(rp_wait_until(sub { stored() > $want || dst_ck($SLOT) ne '' }, $consumer),
		"(a) kill $round: more than $want rows stored while run $runs runs") or diag(err());
	is(dst_ck($SLOT), '', "(a) kill $round: the snapshot has not completed before it");
	# pause the workload: the resumed copy then reads the state at this audit position
	workload_pause("(a) kill $round");
	ok($consumer->kill9_alive, "(a) kill $round: run $runs killed with SIGKILL while it runs")
	  or diag('it exited by itself (status ' . $consumer->status . '): ' . err());
	push @pauses, audit_seq();
	$last = stored();
	my $m = mark();
	like($m, qr{^[0-9A-F]+/[0-9A-F]+\|\S+$}, "(a) kill $round: the history snapshot's point and time are stored ($m)");
	$lmark //= $m;
	is($m, $lmark, "(a) kill $round: the history snapshot's point and time did not move");
	note("kill $round: $last rows stored, history mark $m, workload paused at audit $pauses[-1]");
	rp_slow_off($dst) if $round == 2;
	start_consumer(@snap);
	# the resumed run's snapshot is taken once it stores a chunk: the workload may go on
	ok(rp_wait_until(sub { stored() > $last || dst_ck($SLOT) ne '' }, $consumer),
		"(a) kill $round: the resumed run $runs stores a chunk") or diag(err());
	workload_go();
}
ok(rp_wait_until(sub { dst_ck($SLOT) ne '' }, $consumer), '(a) the resumed snapshot completes (a checkpoint)')
  or diag(err());
like(err(), qr/resuming the snapshot of consistent point/, '(a) the last run resumed the snapshot');
# the stream goes on under the workload (the script slept 2 s here): until the mirror
# checkpointed a position read now, while the workload still writes
my $pos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
ok(rp_wait_dst_checkpoint($dst, $SLOT, $pos, $consumer), "(a) the mirror streams on under the workload (checkpoint past $pos)")
  or diag(err());
ok($workload->alive, '(a) the workload still ran then');
workload_pause('(a) after the snapshot');
wait_fence($SLOT, '(a)');
stop_consumer('(a)');
is(rp_psql($dst, 'SELECT count(*) FROM replicant.snapshot_progress'), '0', '(a) no snapshot progress left behind');

copy($src, 'SELECT seq, txid, lsn, op, old_id, new_id, a, b FROM audit ORDER BY seq', "$work/audit.tsv");
copy($dst, 'SELECT id, a, b, valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn',
	"$work/hist.tsv");
copy($src, 'SELECT id, a, b FROM hist ORDER BY id', "$work/live.tsv");
my ($L) = split /\|/, $lmark // '';
my ($rc, $report) = checker('check_a', 'check_history.py', '--snapshot', $L, '--pauses', "@pauses",
	"$work/audit.tsv", "$work/hist.tsv", "$work/live.tsv");
is($rc, 0, "(a) the history table matches the source's transactions: the snapshot's versions at $L, "
	  . 'every version after it, one open version per live key (check_history.py --snapshot)')
  or diag($report);
my $utc = "SET TimeZone = 'UTC';";
my $tstamp = rp_psql($dst, "$utc SELECT pg_catalog.to_timestamp(split_part('$lmark', '|', 2)::numeric / 1000)");
is(rp_psql($dst, "SELECT count(DISTINCT valid_from_time) FROM public.hist WHERE valid_from_lsn = '$L'"), '1',
	"(a) the snapshot's versions all open at one time");
is(rp_psql($dst, "$utc SELECT min(valid_from_time) = '$tstamp'::timestamptz FROM public.hist WHERE valid_from_lsn = '$L'"),
	't', "(a) that time is the snapshot's stored time $tstamp");

# ---- (b) a re-snapshot into the populated history table
rp_psql($src, "SELECT pg_drop_replication_slot('$SLOT')");
my $versions = 'SELECT id, a, b, valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn';
copy($dst, $versions, "$work/before.tsv");
rp_psql($src, q{
UPDATE hist SET a = a + 1000 WHERE id % 97 = 1;
UPDATE hist SET a = a WHERE id % 97 = 2;   -- the same values: no change
UPDATE hist SET b = NULL WHERE id % 97 = 3 AND b IS NOT NULL;
DELETE FROM hist WHERE id % 97 = 4;
INSERT INTO hist SELECT 20000000 + g, g, 'inserted' FROM generate_series(1, 300) g;});
start_consumer($SLOT2, '--create-slot', '--snapshot', '--snapshot-workers=2', '--snapshot-chunk-rows=5000', @SEL, '-v');
ok(rp_wait_until(sub { dst_ck($SLOT2) ne '' }, $consumer), '(b) the re-snapshot completes (a checkpoint)')
  or diag(err());
copy($dst, $versions, "$work/after.tsv");
copy($src, 'SELECT id, a, b FROM hist ORDER BY id', "$work/live2.tsv");
($rc, $report) = checker('check_b', 'check_history_resnapshot.py', "$work/before.tsv", "$work/after.tsv", "$work/live2.tsv");
is($rc, 0, '(b) the re-snapshot kept unchanged rows\' versions, closed gone ones at its point, versioned changed '
	  . 'and new ones there, with some of each (check_history_resnapshot.py)')
  or diag($report);

# ---- (c) TRUNCATE closes every open version
my $nopen = rp_psql($dst, 'SELECT count(*) FROM public.hist WHERE valid_to_lsn IS NULL');
my $before_lsn = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
rp_psql($src, 'TRUNCATE hist');
my $after_lsn = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
rp_psql($src, "INSERT INTO hist VALUES (1, 1, 'after truncate'), (30000000, 2, 'after truncate')");
wait_fence($SLOT2, '(c)');
my ($nclosed, $npoints, $inside, $nnew, $newok) = split /\|/, rp_psql($dst, qq{
	SELECT (SELECT count(*) FROM public.hist WHERE valid_to_lsn > '$before_lsn'),
	       (SELECT count(DISTINCT (valid_to_lsn, valid_to_time)) FROM public.hist WHERE valid_to_lsn > '$before_lsn'),
	       (SELECT bool_and(valid_to_lsn < '$after_lsn') FROM public.hist WHERE valid_to_lsn > '$before_lsn'),
	       (SELECT count(*) FROM public.hist WHERE valid_to_lsn IS NULL),
	       (SELECT bool_and(b = 'after truncate' AND valid_from_lsn > '$after_lsn') FROM public.hist WHERE valid_to_lsn IS NULL)});
is($nclosed, $nopen, "(c) TRUNCATE closed all $nopen open versions");
is($npoints, '1', '(c) it closed them at one LSN and time');
is($inside, 't', "(c) that LSN is the TRUNCATE's commit (between $before_lsn and $after_lsn)");
is($nnew, '2', '(c) after the TRUNCATE exactly the 2 new rows have open versions');
is($newok, 't', '(c) those are the new rows, opened after the TRUNCATE');
stop_consumer('(c)');

# ---- (d) a backfill into a history table while updates run
rp_psql($src, rp_fixture('history_snapshot_hb.sql'));
copy($src, 'SELECT id, v, n FROM hb ORDER BY id', "$work/hb0.tsv");
rp_psql($src, 'UPDATE hb SET n = n + 1 WHERE id % 50 = 0');
start_consumer($SLOT2, '-o', 'include_tables=public.hist,public.fence,public.hb', '--backfill=public.hb',
	'--backfill-chunk-rows=500', '-v');
my $updates = rp_psql_bg($src, 'hb_updates', 'CALL hb_updates()');
ok(rp_wait_until(sub { dst_value("SELECT done FROM replicant.backfill_progress WHERE slot = '$SLOT2'", '') eq 't' },
		$consumer),
	'(d) the backfill finishes') or diag(err());
is($updates->wait_exit, 0, '(d) the update workload ends without an error') or diag(slurp("$work/hb_updates.out"));
wait_fence($SLOT2, '(d)');
stop_consumer('(d)');
copy($dst, 'SELECT id, v, n, valid_from_lsn, valid_to_lsn FROM public.hb ORDER BY id, valid_from_lsn', "$work/hb.tsv");
copy($src, 'SELECT id, v, n FROM hb ORDER BY id', "$work/hblive.tsv");
copy($src, 'SELECT seq, txid, lsn, op, id, v, n FROM hb_audit ORDER BY seq', "$work/hbaudit.tsv");
($rc, $report) = checker('check_d', 'check_history_backfill.py', "$work/hb.tsv", "$work/hblive.tsv", "$work/hb0.tsv",
	"$work/hbaudit.tsv");
is($rc, 0, '(d) the backfilled history table: every transaction\'s versions, every chunk version the row\'s state '
	  . 'at its LSN, chained, open versions equal to the source (check_history_backfill.py)')
  or diag($report);

done_testing();
