# Copyright: see the project's LICENSE.

# An initial snapshot into a log sink (file, exec, stdout) killed with SIGKILL part way,
# twice, is resumed by the same command, and a rebuild from the log equals the source; was
# regress/t/snapshot_log_resume.sh.
#
# Proves G1 for the log sinks' snapshot across crashes of the consumer (issue 16 item 3):
# the sink keeps its progress in STATE-DIR/SLOT.snapshot (the consistent point, the tables
# whose dump ended and was delivered, the file log's durable length), so a rerun dumps the
# tables not done again whole under a new snapshot, as new dumps, leaves the dumps that
# stopped open, and streams from the first run's consistent point. The copy is held at a
# known row of a table by an advisory lock the test holds (a row-level security policy of
# the source role calls a gate function: test/fixtures/snapshot_log_resume.sql), so each
# kill falls inside a given table's dump, whatever the machine's speed. A workload writes
# throughout. Then, per sink:
#   - the consistent point never moved, and the completed run streams from it;
#   - `replicant verify-snapshot` reports the stopped dumps open (exit 5), and with --latest
#     exactly one complete dump per table (exit 0);
#   - a rebuild from the log (each table's newest complete dump, `--latest-rows`, then every
#     change line after it applied by key: test/fixtures/rebuild_from_log.py) equals the
#     source;
#   - the progress file is gone.
# RP_SNAPLOG_SINKS (default "file exec stdout") chooses the sinks, as the script's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my @TABLES = qw(big_t wide_t comp_t);
my $work   = rp_work();
my $src    = rp_cluster('src');
my $tables_sql = rp_fixture('snapshot_log_resume_tables.sql');
rp_psql($src, $tables_sql . rp_fixture('snapshot_log_resume.sql'));
# the consumer connects as rep, whom the gates hold
my $repconn = rp_conninfo($src) . ' user=rep';
my %relid = map { $_ => rp_psql($src, "SELECT 'public.$_'::regclass::oid") } @TABLES;

# the case's sink, slot, state directory, log, consumer run
my ($kind, $slot, $state, $log, $runs, $consumer);

# hold_lock(N): advisory lock N held by a session of the test (until release_lock)
my %locker;
sub hold_lock
{
	my ($n) = @_;
	$locker{$n} = rp_psql_bg($src, "locker$n-$kind", "SELECT pg_advisory_lock($n); SELECT pg_sleep(3600)");
	ok(rp_wait_until(
			sub {
				rp_psql($src, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $n"
					  . " AND granted AND mode = 'ExclusiveLock'") eq '1';
			},
			$locker{$n}),
		"$kind: the test's session holds advisory lock $n");
}
sub release_lock
{
	my ($n) = @_;
	rp_psql($src, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
		  . " AND objid = $n AND mode = 'ExclusiveLock'");
	$locker{$n}->wait_exit;
}

sub start_consumer
{
	$runs++;
	my $sink = $kind eq 'file' ? "file:$log"
	  : $kind eq 'exec' ? "exec:python3 " . rp_root() . "/regress/ack_child.py $log"
	  :                   'stdout';
	$consumer = rp_consumer("$kind-c$runs", { stdout => "$work/$kind.stdout", append => 1 },
		-d => $repconn, -S => $slot, '--create-slot', '--snapshot', '--start',
		'--snapshot-workers=1', '--snapshot-chunk-rows=5000', '--sink', $sink,
		'--state-dir', $state, '-s', '1', '-v');
}
sub err { return slurp("$work/$kind-c$runs.err"); }

# the text of FILE ('' when it is not there, or went meanwhile)
sub read_file
{
	my ($file) = @_;
	open(my $fh, '<', $file) or return '';
	local $/;
	my $t = <$fh> // '';
	close $fh;
	return $t;
}
sub progress { return read_file("$state/$slot.snapshot"); }
sub progress_lsn { my ($l) = progress() =~ /^lsn (\S+)$/m; return $l // ''; }
sub is_done { my ($t) = @_; return progress() =~ /^done $relid{$t}$/m; }

# rows of STORE in the log (for the file sink: in its durable part, the length the
# progress file records); the log is read on from where the last call stopped, whole lines
# only (a few tens of MB: rereading it whole every poll costs a loaded machine), from the
# start again after reset_rows() or when it got shorter (a file sink's restart cuts it to
# its durable length)
my ($rows_pos, $rows_n) = (0, 0);
sub reset_rows { ($rows_pos, $rows_n) = (0, 0); }
sub rows_in_log
{
	my ($store) = @_;
	my $limit = rp_file_size($log);
	if ($kind eq 'file')
	{
		my ($bytes) = progress() =~ /^offset (\d+)$/m;
		$limit = $bytes if !defined $bytes || $bytes < $limit;
		$limit //= 0;
	}
	reset_rows() if $limit < $rows_pos;
	return $rows_n if $limit == $rows_pos;
	open(my $fh, '<', $log) or return $rows_n;
	seek($fh, $rows_pos, 0);
	read($fh, my $text, $limit - $rows_pos);
	close $fh;
	my $end = rindex($text, "\n");
	return $rows_n if $end < 0;
	$text = substr($text, 0, $end + 1);
	$rows_pos += length($text);
	$rows_n += () = $text =~ /^\{"kind":"row"[^\n]*"store":"\Q$store\E"/mg;
	return $rows_n;
}

# log_has(STRING): the log holds STRING, read on from where the last call stopped
my $has_pos = 0;
sub log_has
{
	my ($string) = @_;
	my $size = rp_file_size($log);
	$has_pos = 0 if $size < $has_pos;
	my $from = $has_pos > length($string) ? $has_pos - length($string) : 0;
	open(my $fh, '<', $log) or return 0;
	seek($fh, $from, 0);
	read($fh, my $text, $size - $from);
	close $fh;
	$has_pos = $size;
	return index($text, $string) >= 0;
}

# a process that ended (gone, or a zombie nobody reaped yet)
sub gone
{
	my ($pid) = @_;
	my $stat = read_file("/proc/$pid/stat");
	return $stat eq '' || $stat =~ /\) Z /;
}

# kill_when(TABLE, N, STORE): SIGKILL the run once TABLE's dump is done and N rows of STORE
# are delivered
sub kill_when
{
	my ($table, $n, $store) = @_;
	reset_rows();
	ok(rp_poll(0.1, sub { is_done($table) && rows_in_log($store) >= $n }, $consumer),
		"$kind: run $runs delivered $table whole and $n rows of $store while it runs")
	  or diag(err());
	my $child;
	($child) = `pgrep -P ${\ $consumer->pid }` =~ /(\d+)/ if $kind eq 'exec';
	ok($consumer->kill9_alive, "$kind: run $runs killed with SIGKILL while it runs")
	  or diag('it exited by itself: ' . err());
	# the exec child ends at the end of its input: it is gone before the next one appends
	ok(rp_wait_until(sub { gone($child) }), "$kind: run $runs: the sink's child ($child) ended with its input")
	  if defined $child;
}

sub run_case
{
	($kind) = @_;
	$slot  = "snaplog_$kind";
	$state = "$work/state-$kind";
	$log   = $kind eq 'stdout' ? "$work/$kind.stdout" : "$work/$kind.jsonl";
	$runs  = 0;
	rp_psql($src, 'UPDATE ctl SET stop = false');
	my $workload = rp_psql_bg($src, "workload-$kind", 'CALL workload(2000000000)');

	# run 1: held inside wide_t (lock 1); big_t done, wide_t's dump stops open
	hold_lock(1);
	start_consumer();
	kill_when('big_t', 5000, 'public.wide_t');
	my $lsn0 = progress_lsn();
	like($lsn0, qr{^[0-9A-F]+/[0-9A-F]+$}, "$kind: the progress file holds the consistent point ($lsn0)");
	# run 2: wide_t again whole (lock 1 released), held inside comp_t (lock 2)
	release_lock(1);
	hold_lock(2);
	start_consumer();
	kill_when('wide_t', 5000, 'public.comp_t');
	is(progress_lsn(), $lsn0, "$kind: the consistent point did not move");
	like(err(), qr/resuming the snapshot of consistent point/, "$kind: run 2 resumed the snapshot");
	# run 3: comp_t again whole, then the stream
	release_lock(2);
	start_consumer();
	ok(rp_wait_file_match("$work/$kind-c$runs.err", qr/snapshot complete/, $consumer),
		"$kind: run 3 completes the snapshot") or diag(err());
	like(err(), qr/snapshot complete: .* rows; streaming from \Q$lsn0\E/,
		"$kind: run 3 streams from the first run's consistent point $lsn0");
	# the progress file goes once the checkpoint is durable, after "snapshot complete" is
	# said and before the stream starts: look once the run says it streams from the slot
	ok(rp_wait_file_match("$work/$kind-c$runs.err", qr/streaming from slot/, $consumer),
		"$kind: run 3 streams from its slot") or diag(err());
	ok(!-e "$state/$slot.snapshot", "$kind: the progress file is gone");

	# the stream goes on under the workload (the script slept 1 s here): until the slot
	# confirmed a position read now, while the workload still writes
	my $pos = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
	ok(rp_wait_confirmed($src, $slot, $pos, $consumer), "$kind: the stream goes on under the workload (confirmed $pos)")
	  or diag(err());
	ok($workload->alive, "$kind: the workload still ran then");
	rp_psql($src, 'UPDATE ctl SET stop = true');
	is($workload->wait_exit, 0, "$kind: the workload ends with exit 0");
	unlike(slurp("$work/workload-$kind.out"), qr/ERROR:/, "$kind: the workload ran without an error");

	my $fid = rp_psql($src, 'INSERT INTO fence SELECT coalesce(max(id), 0) + 1 FROM fence RETURNING id');
	my $line = qq{"table":"fence","new":{"id":$fid}};
	$has_pos = 0;
	ok(rp_wait_until(sub { log_has($line) }, $consumer), "$kind: the fence $fid reached the log")
	  or diag(err());
	$consumer->signal('TERM');
	is($consumer->wait_exit, 0, "$kind: the consumer exits 0 on SIGTERM") or diag(err());

	# the stopped dumps are open; with --latest one complete dump per table
	my $vout = "$work/$kind-verify.out";
	my $lout = "$work/$kind-latest.out";
	is(rp_replicant("$kind-verify", { stdout => $vout }, 'verify-snapshot', $log), 5,
		"$kind: verify-snapshot exits 5 (open dumps)") or diag(slurp($vout));
	my $v = slurp($vout);
	like($v, qr/ public\.wide_t open /, "$kind: the stopped dump of wide_t is reported open");
	like($v, qr/ public\.comp_t open /, "$kind: the stopped dump of comp_t is reported open");
	is(rp_replicant("$kind-latest", { stdout => $lout }, 'verify-snapshot', '--latest', $log), 0,
		"$kind: verify-snapshot --latest exits 0") or diag(slurp($lout));
	my $l = slurp($lout);
	for my $t (@TABLES, 'ctl', 'fence')
	{
		my $nv = () = $v =~ / public\.$t complete /g;
		my $nl = () = $l =~ / public\.$t complete /g;
		is($nv, 1, "$kind: exactly one complete dump of $t") or diag($v);
		is($nl, 1, "$kind: --latest reports $t once");
	}
	my $nlines = () = $l =~ /\n/g;
	is($nlines, 5, "$kind: --latest reports the 5 tables, no more") or diag($l);

	rebuild();
	rp_psql($src, "SELECT pg_drop_replication_slot('$slot')");
}

# the rebuild: each table's newest complete dump, then the change lines applied by key
sub rebuild
{
	my $db = "rb_$kind";
	rp_psql($src, "CREATE DATABASE $db");
	rp_psql($src, $tables_sql, $db);
	my %keys = (big_t => 'id', wide_t => 'id', comp_t => 'a,b');
	my @spec;
	for my $t (@TABLES)
	{
		my $rows = "$work/$kind-$t.rows";
		is(rp_replicant("$kind-rows-$t", { stdout => $rows }, 'verify-snapshot', '--latest-rows', "public.$t", $log),
			0, "$kind: verify-snapshot --latest-rows public.$t exits 0")
		  or diag(slurp("$work/$kind-rows-$t.err"));
		push @spec, "$t:$keys{$t}:$rows";
	}
	my $sql = "$work/$kind-rebuild.sql";
	is(rp_run("$kind-rebuild", { stdout => $sql }, 'python3', "$FindBin::RealBin/../fixtures/rebuild_from_log.py",
			($kind eq 'file' ? ('--to-last-checkpoint') : ()), $log, @spec),
		0, "$kind: rebuild_from_log.py writes the rebuild") or diag(slurp("$work/$kind-rebuild.err"));
	is(rp_run("$kind-rebuild-sql", $src->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1',
			'-d', rp_conninfo($src, $db), '-f', $sql),
		0, "$kind: the rebuild SQL runs") or diag(substr(slurp("$work/$kind-rebuild-sql.err"), 0, 300));
	for my $t (@TABLES)
	{
		my $q = "SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text COLLATE \"C\"), ''))"
		  . " FROM public.$t x";
		my $a = rp_psql($src, $q);
		is(rp_psql($src, $q, $db), $a, "$kind: table $t rebuilt from the log equals the source ($a)");
	}
}

run_case($_) for split ' ', ($ENV{RP_SNAPLOG_SINKS} || 'file exec stdout');

done_testing();
