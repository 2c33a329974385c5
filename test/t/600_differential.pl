# Copyright: see the project's LICENSE.

# A seeded randomized differential test; was regress/t/differential.sh.
#
# From a seed, a schema and a workload (regress/tools/difftest.py: every table shape and many
# types, hostile names; see its header) are replayed through three paths; at the end every
# table of every path must equal the source's. Finds silent data loss without knowing what to
# look for (G1).
#
#   SEED=N     exactly seed N (as root: SEED=N bash regress/run_tests.sh --only 'test/t/600_*')
#   SEEDS=K    K seeds from a random base, each printed
#   (neither)  the fixed CI seeds (@DEFAULT_SEEDS)
#   DIFF_PATHS="mirror nats file"   the paths to run (default all three)
#   DIFF_NO_FK=1                    drop the destinations' foreign keys after loading them (to
#                                   see past a mirror that trips on them)
#
# Per seed, on one source cluster and one destination cluster (a database each per seed):
# the schema is loaded on the source, and on the destinations with `pg_dump --schema-only` of
# the source (foreign keys, partitions, generated and identity columns included: the normal
# way to migrate). The slots of paths nats and file are created, workload part 0 (the
# history) runs, then:
#   mirror  replicant --create-slot --snapshot --start --sink postgres:DST/mirror_N (the
#           initial copy under the running workload, then the stream);
#   nats    a writer --sink nats:// (3-node JetStream cluster) and a reader --source nats://
#           --sink postgres:DST/nats_N (the NATS sink takes no --snapshot: slot made before
#           the workload); the reader applies every table through staging (--pipeline-max 0),
#           the mirror each table by the size of its set in the batch (most by prepared
#           statements in a pipeline, the bulk parts through staging): both apply paths;
#   file    --sink file:LOG (slot made before the workload), checked by
#           regress/check_difftest_log.py, which replays the log onto a model of each table
#           (keyed by its key; a multiset without one) and compares it with the source.
# The other parts of the workload run meanwhile (half a second apart), and every consumer is
# killed with SIGKILL twice, in an order drawn from the seed, at random moments (the mirror
# once its snapshot completed) and restarted (the mirror without --create-slot --snapshot,
# docs/operations.md). A fence is committed and its LSN read after the commit; each consumer
# must reach it. Then every table that holds rows (partitions and inheritance children one by
# one, read with ONLY; test/fixtures/differential_digests.sql) is compared: keyed tables as
# count and md5 of the rows ordered by the key, the others (no key) as count and md5 of the
# sorted row texts. A check names seed, path and table, and shows both sides' count and md5
# (no row value); a failed seed prints how to rerun it. A consumer that exits by itself fails
# its path, with its stderr's tail (value-free, G4); that path's later checks of the seed are
# then left out (said in a note).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use File::Basename qw(dirname);
use File::Path qw(mkpath);
use Time::HiRes qw(sleep);

my @DEFAULT_SEEDS = (1, 2);
my $GEN = rp_root() . '/regress/tools/difftest.py';
my %has = map { $_ => 1 } split ' ', ($ENV{DIFF_PATHS} || 'mirror nats file');
my @seeds;
if ($ENV{SEED})
{
	@seeds = ($ENV{SEED});
}
elsif ($ENV{SEEDS})
{
	my $base = int(rand(1000000));
	@seeds = map { $base + $_ } 0 .. $ENV{SEEDS} - 1;
}
else
{
	@seeds = @DEFAULT_SEEDS;
}

my $work = rp_work();
# the output settings of every session (the consumers' too, as the script exported them)
$ENV{PGOPTIONS} = '-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres '
  . '-c extra_float_digits=3 -c bytea_output=hex';
my $src = rp_cluster('src', 'logical_decoding_work_mem = 1MB');
my $dst = rp_cluster('dst');
my $nats = $has{nats} ? RpTest::Nats->start(3) : undef;
my $bindir = dirname($src->installed_command('psql'));
my $pgmajor = rp_psql($src, "SELECT current_setting('server_version_num')::int / 10000");
note("differential: seeds @seeds; paths " . join(' ', grep { $has{$_} } qw(mirror nats file)));

my @failed_seeds;
my $overs_total = 0;

# psql_file(NODE, DB, FILE, NAME): psql -f FILE on database DB; its exit status, its
# output in rp_work()/NAME.err
sub psql_file
{
	my ($node, $db, $file, $name) = @_;
	return rp_run($name, { stdout => "$work/$name.err" },
		$node->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		'-d', rp_conninfo($node, $db), '-f', $file);
}

# digests(NODE, DB): { table => [kind, "count md5"] } of every table holding rows
sub digests
{
	my ($node, $db) = @_;
	my %d;
	for (split /\n/, rp_psql($node, rp_fixture('differential_digests.sql'), $db))
	{
		my ($name, $kind, $sum) = split /\t/;
		$d{$name} = [ $kind, $sum ];
	}
	return \%d;
}

# stream_holds(STREAM): the writer made the stream, and every node holds it up to the
# sequence its info reports, with a leader all agree on: right after the create, a node
# whose meta state lagged answered the reader "stream not found" (1 seed in 12), which the
# reader rightly takes for a missing stream
sub stream_holds
{
	my ($stream) = @_;
	my ($rc, $info) = $nats->tool($stream, 'info');
	return 0 unless $rc == 0 && $info =~ /"last_seq":(\d+)/;
	my $want = $1;
	return 0 if $nats->stream_leader($stream) eq '';
	for my $i (1 .. $nats->n)
	{
		my $j = $nats->jsz($i, 'accounts=true&streams=true') or return 0;
		my ($s) = grep { ($_->{name} // '') eq $stream }
		  map { @{ $_->{stream_detail} // [] } } @{ $j->{account_details} // [] };
		return 0 unless $s && (($s->{state} // {})->{last_seq} // 0) >= $want;
	}
	return 1;
}

# last_checkpoint(FILE): the end_lsn of the file log's last checkpoint line ('' before the
# first), read backwards from the end
sub last_checkpoint
{
	my ($file) = @_;
	open(my $fh, '<', $file) or return '';
	my $size = -s $fh;
	my $tail = '';
	for (my $pos = $size; $pos > 0;)
	{
		my $n = $pos > 1 << 20 ? 1 << 20 : $pos;
		$pos -= $n;
		seek($fh, $pos, 0);
		read($fh, my $buf, $n);
		$tail = $buf . $tail;
		my @c = $tail =~ /^\{"kind":"checkpoint".*?"end_lsn":"([0-9A-F]+\/[0-9A-F]+)"/mg;
		# a match in the first (maybe partial) line of the buffer is whole only at the start
		return $c[-1] if @c && ($pos == 0 || $tail =~ /\n\{"kind":"checkpoint"/);
	}
	return '';
}

sub run_seed
{
	my ($seed) = @_;
	my $dir = "$work/s$seed";
	mkpath($dir);
	my $srcdb = "src_$seed";
	my $srcconn = rp_conninfo($src, $srcdb);
	my $failed = 0;
	my (%proc, %dead, %runs, %kills);
	my @overs;
	my $S = "seed $seed";
	my $check = sub {
		my ($ok, $name) = @_;
		$failed++ unless $ok;
		return $ok;
	};

	note("$S: python3 regress/tools/difftest.py --seed $seed --pg $pgmajor schema|workload");
	rp_psql($src, "CREATE DATABASE $srcdb");
	$check->(is(rp_run("gen-schema-$seed", { stdout => "$dir/schema.sql" },
				'python3', $GEN, '--seed', $seed, '--pg', $pgmajor, 'schema'), 0,
			"$S: difftest.py writes the schema"));
	$check->(is(rp_run("gen-workload-$seed", 'python3', $GEN, '--seed', $seed, '--pg', $pgmajor,
				'workload', '--dir', $dir), 0, "$S: difftest.py writes the workload"));
	rp_run("gen-parts-$seed", { stdout => "$dir/parts" }, 'python3', $GEN, '--seed', $seed, 'parts');
	my $parts = -e "$dir/parts" ? slurp("$dir/parts") + 0 : 0;
	$check->(is(psql_file($src, $srcdb, "$dir/schema.sql", "schema-$seed"), 0,
			"$S: the schema loads on the source"))
	  or diag(slurp("$work/schema-$seed.err"));
	rp_psql($src, 'CREATE TABLE public.difftest_fence (id int PRIMARY KEY)', $srcdb);
	for my $db ("mirror_$seed", "nats_$seed")
	{
		rp_psql($dst, "CREATE DATABASE $db");
		my $rc = rp_run("dump-$db", { stdout => "$dir/dump.sql" },
			$src->installed_command('pg_dump'), '--schema-only', '-d', $srcconn);
		$rc ||= psql_file($dst, $db, "$dir/dump.sql", "load-$db");
		$check->(is($rc, 0, "$S: the source's pg_dump --schema-only loads into $db"))
		  or diag(slurp("$work/dump-$db.err") . (-e "$work/load-$db.err" ? slurp("$work/load-$db.err") : ''));
		if (($ENV{DIFF_NO_FK} // '') eq '1')
		{
			my $drop = rp_psql($dst, "SELECT format('ALTER TABLE %s DROP CONSTRAINT %I;', conrelid::regclass, conname)
				FROM pg_constraint WHERE contype = 'f' AND conparentid = 0", $db);
			rp_psql($dst, $drop, $db) if $drop ne '';
		}
	}
	note("$S: DIFF_NO_FK=1: the destinations' foreign keys dropped") if ($ENV{DIFF_NO_FK} // '') eq '1';
	for my $p (grep { $has{$_} } qw(nats file))
	{
		my $slot = $p eq 'nats' ? "dt_n$seed" : "dt_f$seed";
		$check->(rp_replicant_ok([ -d => $srcconn, -S => $slot, '--create-slot' ], "$S: slot $slot created"));
	}
	my $rc0 = psql_file($src, $srcdb, "$dir/part-0.sql", "part0-$seed");
	my $out0 = slurp("$work/part0-$seed.err");
	if (!$check->(ok($rc0 == 0 && $out0 !~ /ERROR/, "$S: workload part 0 (the history) runs without an error")))
	{
		diag(join("\n", (grep { /ERROR/ } split /\n/, $out0)[0 .. 2]));
		push @failed_seeds, $seed;
		return;
	}

	# start(P[, FIRST]): consumer P (mirror, writer, reader, file) run again (FIRST: the
	# mirror's first run, which makes the slot and takes the snapshot)
	my $start = sub {
		my ($p, $first) = @_;
		$runs{$p}++;
		my $name = "s$seed-$p-$runs{$p}";
		my @a;
		if ($p eq 'mirror')
		{
			@a = (-d => $srcconn, -S => "dt_m$seed",
				($first ? ('--create-slot', '--snapshot', '--snapshot-chunk-rows', '3000') : ()),
				'--start', '-s', '1', '--sink', 'postgres:' . rp_conninfo($dst, "mirror_$seed"),
				'--state-dir', "$dir/st-mirror", '--batch-txns', '20', '--batch-ms', '50');
		}
		elsif ($p eq 'writer')
		{
			@a = (-d => $srcconn, -S => "dt_n$seed", '--start', '-s', '1', '--sink', $nats->sink_url,
				'--nats-stream', "DT_$seed", '--state-dir', "$dir/st-writer");
		}
		elsif ($p eq 'reader')
		{
			@a = ('--source', $nats->sink_url, '--nats-stream', "DT_$seed", -S => "dt_r$seed", '--start',
				'--sink', 'postgres:' . rp_conninfo($dst, "nats_$seed"), '--state-dir', "$dir/st-reader",
				'--batch-txns', '20', '--batch-ms', '50', '--pipeline-max', '0');
		}
		else
		{
			@a = (-d => $srcconn, -S => "dt_f$seed", '--start', '-s', '1', '--sink', "file:$dir/log.jsonl",
				'--state-dir', "$dir/st-file", '--batch-txns', '7', '--batch-ms', '50');
		}
		$proc{$p} = rp_consumer($name, @a);
	};
	my $path_of = sub { return $_[0] =~ /^(?:writer|reader)$/ ? 'nats' : $_[0]; };
	my $stderr_tail = sub {
		my ($p) = @_;
		my $f = "$work/s$seed-$p-$runs{$p}.err";
		my @l = -e $f ? split(/\n/, slurp($f)) : ();
		splice(@l, 0, @l - 4) if @l > 4;
		return join("\n", map { "$p stderr: $_" } @l);
	};
	# failed(P): consumer P exited by itself: its path is done for this seed
	my $failed_path = sub {
		my ($p, $what) = @_;
		$dead{$p} = 1;
		$check->(ok(0, "$S path " . $path_of->($p) . ": $p consumer run $runs{$p} $what (exited by itself with status "
				  . $proc{$p}->status . ')'));
		diag($stderr_tail->($p));
	};
	# position(P): the end LSN P has made durable ('' before its first)
	my $position = sub {
		my ($p) = @_;
		return rp_dst_checkpoint($dst, "dt_m$seed", "mirror_$seed") if $p eq 'mirror';
		return rp_dst_checkpoint($dst, "dt_r$seed", "nats_$seed") if $p eq 'reader';
		return rp_slot_confirmed($src, "dt_n$seed") if $p eq 'writer';
		return last_checkpoint("$dir/log.jsonl");
	};
	# snapshot_over(): the mirror's first run failed, naming a table truncated or rewritten
	# between the consistent point and its copy (test/t/060_snapshot_rewrite.pl: the workload
	# truncates while the snapshot copies); the snapshot starts over as docs/operations.md
	# says (the slot and the destination's progress dropped, the same command run again), at
	# most 3 times
	my $snapshot_over = sub {
		return 0 unless $position->('mirror') eq '';
		return 0 unless slurp("$work/s$seed-mirror-$runs{mirror}.err")
		  =~ /was truncated or rewritten after the snapshot was taken/;
		return 0 if @overs >= 3;
		push @overs, $runs{mirror};
		$overs_total++;
		note("$S: mirror: the snapshot met a table truncated after its consistent point: starting over");
		# its walsender may take a moment to go
		$check->(ok(rp_wait_until(sub {
						my ($ret) = $src->psql('postgres', "SELECT pg_drop_replication_slot('dt_m$seed')");
						$ret == 0 }),
				"$S: mirror: slot dt_m$seed dropped for the snapshot to start over")) or return 0;
		rp_psql($dst, "DELETE FROM replicant.snapshot_progress WHERE slot = 'dt_m$seed'", "mirror_$seed");
		$start->('mirror', 1);
		return 1;
	};
	# alive(P): P runs (a mirror whose snapshot met a truncated table started over); else
	# its path fails
	my $alive = sub {
		my ($p) = @_;
		return 0 if $dead{$p};
		return 1 if $proc{$p}->alive;
		return 1 if $p eq 'mirror' && $snapshot_over->();
		$failed_path->($p, 'ended');
		return 0;
	};

	my @procs;
	if ($has{mirror}) { $start->('mirror', 1); push @procs, 'mirror'; }
	if ($has{nats})
	{
		# the reader once the writer made the stream
		$start->('writer');
		$check->(ok(rp_wait_until(sub { stream_holds("DT_$seed") }, $proc{writer}),
				"$S path nats: the writer made stream DT_$seed, every node holds it"))
		  or diag($stderr_tail->('writer'));
		$start->('reader');
		push @procs, 'writer', 'reader';
	}
	if ($has{file}) { $start->('file'); push @procs, 'file'; }
	# the other parts, half a second apart (the kill rounds fall while they run)
	my $workload = RpTest::Proc->start(name => "workload-$seed",
		cmd => [ 'bash', '-c',
			'psql=$0 conn=$1; shift; for f in "$@"; do "$psql" -X -q -v ON_ERROR_STOP=1 -d "$conn" -f "$f" || exit 1; sleep 0.5; done',
			$src->installed_command('psql'), $srcconn, map { "$dir/part-$_.sql" } 1 .. $parts - 1 ],
		stdout => "$dir/workload.out", stderr => "$dir/workload.out");
	# kill rounds: every consumer twice, in an order drawn from the seed, at random moments
	# while the workload runs (the mirror only once its snapshot completed: its checkpoint
	# exists)
	srand($seed);
	my @order = (@procs, @procs);
	for (my $i = $#order; $i > 0; $i--)
	{
		my $j = int(rand($i + 1));
		@order[ $i, $j ] = @order[ $j, $i ];
	}
	my $round = 0;
	for my $p (@order)
	{
		$round++;
		my $ms = 300 + int(rand(1700));
		sleep($ms / 1000);
		next if $dead{$p};
		if ($p eq 'mirror')
		{
			my $ok = rp_wait_until(sub { !$alive->('mirror') || $position->('mirror') ne '' });
			next if $dead{mirror};
			$check->(ok($ok, "$S round $round: the mirror checkpointed (its snapshot complete) before its kill"))
			  or do { $dead{mirror} = 1; next; };
		}
		if ($check->(ok($proc{$p}->kill9_alive, "$S round $round: $p (run $runs{$p}) killed with SIGKILL while it runs")))
		{
			$kills{$p}++;
			note("$S round $round: $p killed with SIGKILL after ${ms}ms (kill $kills{$p})");
			$start->($p);
		}
		else
		{
			$dead{$p} = 1;
			diag("it exited by itself with status " . $proc{$p}->status . "\n" . $stderr_tail->($p));
		}
	}
	my $wrc = $workload->wait_exit;
	my $wout = slurp("$dir/workload.out");
	$check->(ok(defined $wrc && $wrc == 0 && $wout !~ /ERROR:/,
			"$S: the workload's parts 1 to " . ($parts - 1) . ' run without an error'))
	  or diag(join("\n", (grep { /ERROR:/ } split /\n/, $wout)[0 .. 2]) . " (exit " . ($wrc // 'none') . ')');

	rp_psql($src, 'INSERT INTO difftest_fence VALUES (1)', $srcdb);
	my $fence = rp_psql($src, 'SELECT pg_current_wal_lsn()');
	note("$S: workload done, fence $fence; waiting for every consumer");
	for my $p (grep { $_ ne 'writer' } @procs)
	{
		next if $dead{$p};
		my $ok = rp_wait_until(sub {
				my $c = $position->($p);
				return 1 if $c ne '' && !rp_lsn_lt($c, $fence);
				return !$alive->($p) ? 1 : 0; });
		next if $dead{$p};
		$check->(ok($ok, "$S path " . $path_of->($p) . ": $p reached the fence $fence"))
		  or do { diag("at " . $position->($p)); $dead{$p} = 1; };
	}
	for my $p (@procs)
	{
		next if $dead{$p};
		if (!$proc{$p}->alive)
		{
			$failed_path->($p, 'ended before SIGTERM');
			next;
		}
		$proc{$p}->signal('TERM');
		my $rc = $proc{$p}->wait_exit;
		$check->(is($rc, 0, "$S path " . $path_of->($p) . ": $p exits 0 on SIGTERM"))
		  or do { diag($stderr_tail->($p)); $dead{$p} = 1; };
	}
	note("$S path " . $path_of->($_) . ": $_: $runs{$_} runs, " . ($kills{$_} // 0) . ' SIGKILLs'
		  . ($dead{$_} ? ', FAILED' : '')) for @procs;

	# compare(PATH, DB): the destination database DB against the source, table by table
	my $compare = sub {
		my ($path, $db) = @_;
		my $want = digests($src, $srcdb);
		my $got  = digests($dst, $db);
		my ($n, $bad) = (0, 0);
		for my $name (sort keys %$want)
		{
			next if $name eq 'public.difftest_fence';
			my ($kind, $a) = @{ $want->{$name} };
			my $b = $got->{$name} ? $got->{$name}[1] : 'missing';
			$n++;
			$bad++ unless $check->(is($b, $a, "$S path $path: table $name ($kind) equals the source's"));
		}
		note("$S path $path: $n tables compared, $bad differ");
	};
	for my $p (grep { $has{$_} } qw(mirror nats file))
	{
		my @need = $p eq 'nats' ? qw(writer reader) : ($p);
		if (grep { $dead{$_} } @need)
		{
			note("$S path $p: not compared (its consumer failed, reported above)");
			next;
		}
		if ($p ne 'file')
		{
			$compare->($p, "${p}_$seed");
			next;
		}
		my $rc = rp_run("check-$seed", { stdout => "$dir/check.out", env => { PATH => "$bindir:$ENV{PATH}" } },
			'python3', rp_root() . '/regress/check_difftest_log.py', "$dir/log.jsonl", $srcconn);
		my @lines = split /\n/, slurp("$dir/check.out");
		my @mismatch = grep { /^MISMATCH/ } @lines;
		note("$S path file: $_") for grep { !/^MISMATCH/ } @lines;
		$check->(is(scalar @mismatch, 0, "$S path file: regress/check_difftest_log.py finds every table of the log "
				  . 'equal to the source (no MISMATCH)')) or diag(join("\n", @mismatch));
		$check->(is($rc, 0, "$S path file: regress/check_difftest_log.py exits 0"))
		  or diag(slurp("$work/check-$seed.err"));
	}
	if ($failed)
	{
		push @failed_seeds, $seed;
		diag("$S: reproduce: SEED=$seed bash regress/run_tests.sh --only 'test/t/600_*'");
	}
	# this seed's slots are no longer needed
	$src->psql('postgres', 'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active');
	return;
}

run_seed($_) for @seeds;

note("differential: seeds @seeds, paths " . join(' ', grep { $has{$_} } qw(mirror nats file))
	  . ": $overs_total snapshots started over after a TRUNCATE");
diag("failed seeds: @failed_seeds; reproduce each with SEED=N bash regress/run_tests.sh --only 'test/t/600_*'")
  if @failed_seeds;
done_testing();
