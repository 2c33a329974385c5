# Copyright: see the project's LICENSE.

# The mirror applies one large transaction in bounded memory; was regress/t/mirror_memory.sh.
#
# Proves G5 for the mirror sink: its net-effect map (the effect arena, effect arrays and
# hash slots) counts against --max-memory, and when its share is full it applies what it
# holds inside the open destination transaction and goes on; the batch still commits once,
# with its checkpoint. One transaction inserting ROWS (300,000) rows of (bigint key,
# ~400-byte text) and updating a tenth of them (so the map folds keys across a mid-batch
# apply; test/fixtures/mirror_memory.sql) goes to a mirror with --max-memory 16MB, on each
# path a transaction can take (PATHS):
#   early    the default (-o streaming=on, early apply: the table is new to the mirror, so
#            the chunks stream in and the rest comes at the commit)
#   whole    --no-early-apply (the transaction reaches the sink whole at its commit)
#   nostream -o streaming=off (the server sends the transaction whole)
#   history  --history public.memh: a second transaction of HROWS (20,000) wider rows on a
#            history table (one source transaction's versions apply together: the map is
#            applied in parts, and a later change of a key in that transaction revises the
#            version an earlier part opened; a delete removes it)
# Per path: the consumer exits 0; the mirrored tables equal the source (count and md5 of
# every row; for the history table: one open version per live key, all opened at one LSN,
# none closed, with the source's values); the destination checkpoint holds the
# transaction's commit; peak RSS (/usr/bin/time -v, else VmHWM sampled from /proc) <=
# --max-memory + 64 MB. The unbounded map of the old code held about 120 MB here on every
# path.
# Then one large value (G5: a value is held at most twice): a row with a VALUE_MB (48) MB
# text, stored uncompressed, mirrored with --max-memory 16MB from a slot of its own; peak
# RSS <= 2 * VALUE_MB + 16 MB + 64 MB and the row equal. The old code held it five times or
# more (the receive buffer, the spill buffer, the read-back, the effect arena, COPY's buffer
# and libpq's output buffer). The same value then goes through the file sink (whose
# JSON-lines writer the stdout and exec sinks share) from a slot of its own: the logged
# row's md5 equals the source's (test/fixtures/jsonl_row_md5.py) and peak RSS <= 2 *
# VALUE_MB + FILE_SLACK_MB (32) MB (the received record, libpq's receive buffer, and a
# bounded output buffer). The old writer rendered the record whole before writing it, a
# third copy: 152 MB for the 48 MB value, over the 128 MB. Last the row's key is updated,
# its value unchanged: the mirror moves it in the destination, peak RSS <= --max-memory +
# 64 MB (it read the value back as text and held it three times).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Time::HiRes qw(usleep);

my $ROWS          = $ENV{ROWS}          || 300000;
my $HROWS         = $ENV{HROWS}         || 20000;
my $VALUE_MB      = $ENV{VALUE_MB}      // 48;
my $FILE_SLACK_MB = $ENV{FILE_SLACK_MB} || 32;
my @PATHS         = split ' ', ($ENV{PATHS} || 'early whole nostream history');
my $MAXMEM_MB     = 16;
my $LIMIT_KB      = ($MAXMEM_MB + 64) * 1024;
my %PATH_ARGS     = (
	early    => [],
	whole    => ['--no-early-apply'],
	nostream => [ -o => 'streaming=off' ],
	history  => [ '--history', 'public.memh' ]);

my $work = rp_work();
my $src  = rp_cluster('src', "logical_decoding_work_mem = '64kB'");
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);

rp_psql($src, rp_fixture('mirror_memory.sql'));
for my $p (@PATHS)
{
	BAIL_OUT("unknown path $p (PATHS: early whole nostream history)") unless $PATH_ARGS{$p};
	rp_replicant_ok([ -d => $srcconn, -S => "mem_$p", '--create-slot' ], "slot mem_$p created");
	rp_psql($dst, "CREATE DATABASE d_$p");
}
my $before = rp_psql($src, 'SELECT pg_current_wal_lsn()');
rp_psql($src, "CALL mem_load($ROWS)");
rp_psql($src, "CALL memh_load($HROWS)");
my $endpos = rp_psql($src, 'SELECT pg_current_wal_lsn()');

my $timev = -x '/usr/bin/time' && system('/usr/bin/time -v true >/dev/null 2>&1') == 0 ? '/usr/bin/time' : '';
note($timev ? 'peak RSS from /usr/bin/time -v' : 'peak RSS from VmHWM samples (no GNU time)');

# run_consumer(NAME, ARG...): the consumer from slot mem_NAME until $endpos; its exit status
# checked; returns its peak RSS in kB (0 when it could not be read)
sub run_consumer
{
	my ($name, @args) = @_;
	my $state = "$work/state-$name";
	my @cmd = (RpTest::replicant_bin(), -d => $srcconn, -S => "mem_$name", '--start', '-n', -E => $endpos,
		'--state-dir', $state, '--max-memory', "${MAXMEM_MB}MB", @args);
	unshift @cmd, $timev, '-v', '-o', "$work/time-$name.txt" if $timev;
	my $c = RpTest::Proc->start(name => $name, cmd => \@cmd, stderr => "$work/$name.err");
	# without GNU time, VmHWM sampled every 0.2 s meanwhile: the newest process with this
	# state dir on its command line
	my $hwm_kb = 0;
	my $done = $timev ? defined $c->wait_exit : rp_poll(0.2,
		sub {
			my $rpid = `pgrep -n -f -- '--state-dir $state'`;
			chomp $rpid;
			if ($rpid ne '' && open(my $fh, '<', "/proc/$rpid/status"))
			{
				while (<$fh>) { $hwm_kb = $1 if /^VmHWM:\s+(\d+)/ && $1 > $hwm_kb; }
				close $fh;
			}
			return !$c->alive;
		});
	ok($done, "path $name: the consumer ended (it runs to $endpos)") or $c->kill9_alive;
	is($c->status, 0, "path $name: the consumer exits 0") or diag(slurp("$work/$name.err"));
	return $hwm_kb unless $timev;
	my ($kb) = (-e "$work/time-$name.txt" ? slurp("$work/time-$name.txt") : '')
	  =~ /Maximum resident set size \(kbytes\): (\d+)/;
	return $kb // 0;
}

# digest(NODE, DB, TABLE, WHERE): count and md5 of id:v of TABLE's rows in key order
sub digest
{
	my ($node, $db, $t, $where) = @_;
	return rp_psql($node,
		"SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM public.$t " . ($where // ''),
		$db);
}

my @summary;
for my $p (@PATHS)
{
	my $rss_kb = run_consumer($p, '--sink', 'postgres:' . rp_conninfo($dst, "d_$p"), '--create-tables',
		@{ $PATH_ARGS{$p} });
	my $a = digest($src, 'postgres', 'mem');
	is(digest($dst, "d_$p", 'mem'), $a, "path $p: the mirrored table mem equals the source ($a)");
	$a = digest($src, 'postgres', 'memh');
	if ($p eq 'history')
	{
		is(digest($dst, "d_$p", 'memh', 'WHERE valid_to_lsn IS NULL'), $a,
			"path $p: memh's open versions equal the source's rows ($a)");
		is(rp_psql($dst, 'SELECT count(*) FILTER (WHERE valid_to_lsn IS NOT NULL) || \' \' || count(DISTINCT valid_from_lsn) FROM public.memh',
				"d_$p"),
			'0 1', "path $p: no closed version, every version opened at one LSN");
	}
	else
	{
		is(digest($dst, "d_$p", 'memh'), $a, "path $p: the mirrored table memh equals the source ($a)");
	}
	is(rp_psql($dst, "SELECT commit_lsn > '$before'::pg_lsn FROM replicant.checkpoint WHERE slot = 'mem_$p'", "d_$p"),
		't', "path $p: the destination checkpoint holds the transaction's commit");
	ok($rss_kb > 0 && $rss_kb <= $LIMIT_KB,
		"path $p: peak RSS $rss_kb kB is at most --max-memory ${MAXMEM_MB}MB + 64 MB ($LIMIT_KB kB)");
	push @summary, "$p " . int($rss_kb / 1024) . ' MB';
}

# one large value, from slots that start after the transactions above
if ($VALUE_MB > 0)
{
	rp_replicant_ok([ -d => $srcconn, -S => $_, '--create-slot' ], "slot $_ created") for qw(mem_value mem_value_file);
	rp_psql($dst, 'CREATE DATABASE d_value');
	rp_psql($src, 'CREATE TABLE memv (id int PRIMARY KEY, v text); ALTER TABLE memv ALTER v SET STORAGE EXTERNAL');
	rp_psql($src, "INSERT INTO memv SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, $VALUE_MB * 32768) g");
	$endpos = rp_psql($src, 'SELECT pg_current_wal_lsn()');
	my $q = "SELECT count(*) || ' ' || md5(string_agg(id || ':' || md5(v), ',')) FROM public.memv";
	my $a = rp_psql($src, $q);

	my $rss_kb = run_consumer('value', '--sink', 'postgres:' . rp_conninfo($dst, 'd_value'), '--create-tables');
	is(rp_psql($dst, $q, 'd_value'), $a, "path value: the mirrored table memv equals the source ($a)");
	my $vlimit_kb = (2 * $VALUE_MB + $MAXMEM_MB + 64) * 1024;
	ok($rss_kb > 0 && $rss_kb <= $vlimit_kb,
		"path value: peak RSS $rss_kb kB for one $VALUE_MB MB value is at most twice the value + --max-memory + 64 MB ($vlimit_kb kB)");
	push @summary, "one $VALUE_MB MB value " . int($rss_kb / 1024) . ' MB';

	# the same value through the file sink (and so the JSON-lines writer of stdout and
	# exec): written slice by slice, never rendered whole
	$rss_kb = run_consumer('value_file', '--sink', "file:$work/value.jsonl");
	my $rc = rp_run('jsonl_row_md5', { stdout => "$work/value.md5" },
		'python3', "$FindBin::RealBin/../fixtures/jsonl_row_md5.py", "$work/value.jsonl", 'memv');
	is($rc, 0, 'path value_file: the log reads as JSON lines') or diag(slurp("$work/jsonl_row_md5.err"));
	my $b = -e "$work/value.md5" ? slurp("$work/value.md5") : '';
	chomp $b;
	is($b, $a, "path value_file: the logged row equals the source's ($a)");
	$vlimit_kb = (2 * $VALUE_MB + $FILE_SLACK_MB) * 1024;
	ok($rss_kb > 0 && $rss_kb <= $vlimit_kb,
		"path value_file: peak RSS $rss_kb kB for one $VALUE_MB MB value through the file sink is at most "
		  . "twice the value + $FILE_SLACK_MB MB ($vlimit_kb kB)");
	push @summary, 'through the file sink ' . int($rss_kb / 1024) . ' MB';

	# the row's key changes, its value unchanged (the record does not carry it): moved in
	# the destination, the value never read back (issue 46: read as text it was held three
	# times, a 208 MB value peaked at 803 MB under --max-memory 64MB)
	rp_psql($src, 'UPDATE memv SET id = 2 WHERE id = 1');
	$endpos = rp_psql($src, 'SELECT pg_current_wal_lsn()');
	$a = rp_psql($src, $q);
	$rss_kb = run_consumer('value', '--sink', 'postgres:' . rp_conninfo($dst, 'd_value'));
	is(rp_psql($dst, $q, 'd_value'), $a, "path value_move: the moved row equals the source's ($a)");
	ok($rss_kb > 0 && $rss_kb <= $LIMIT_KB,
		"path value_move: peak RSS $rss_kb kB for a key update beside an unchanged $VALUE_MB MB value is at most "
		  . "--max-memory ${MAXMEM_MB}MB + 64 MB ($LIMIT_KB kB)");
	push @summary, 'its key update ' . int($rss_kb / 1024) . ' MB';
}
note('peak RSS: ' . join('; ', @summary));

done_testing();
