# Copyright: see the project's LICENSE.

# A database moved end to end (issue 17); was regress/t/migration.sh. --snapshot and the
# stream into an empty destination (--create-tables) under a workload, then the cutover
# recipe of docs/operations.md: stop writes, `replicant wait`, `replicant sync-sequences`,
# `replicant verify`, switch.
#
# Proves G1 through the cutover (once `replicant wait` returns, the destination equals the
# source table by table: wait's "passed" means the data is there) and the sequence rules of
# docs/operations.md: the snapshot's own sync creates and advances the destination's
# sequences (serial, identity, a standalone sequence used by a default, one no table uses);
# after sync-sequences a nextval on the destination collides with no copied key; a sequence
# set higher on the destination is never moved back; --margin moves the others on; a sequence
# missing on the destination is named and exit 1 without --create-tables, created with it;
# -o include_tables narrows the selection. `replicant wait` for an LSN the mirror cannot reach
# (its consumer stopped) exits 1 after --timeout naming the LSN and the checkpoint, on a
# terminal redrawing its lag line in place; 3 when the checkpoint table is not there; 2 on a
# usage error; `replicant wait --sync-sequences` waits and then syncs. No row value in any
# output (G4).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $SLOT   = 'migration';
my @TABLES = qw(serial_t ident_t shared_t plain_t);
my @SEQS   = qw(serial_t_id_seq ident_t_id_seq ids loose_seq);
my $work   = rp_work();
my $sock   = "$work/tmux.sock";
my $tmux_started = 0;

END
{
	# the tmux server is a daemon of its own, outside the process groups RpTest kills
	my $rc = $?;
	system('tmux', '-S', $sock, 'kill-server') if $tmux_started;
	$? = $rc;
}

my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
my $sink = "postgres:$dstconn";
rp_psql($src, rp_fixture('migration.sql'));

# the source's positions before the snapshot: its own sync must reach at least these
my %before = map { $_ => rp_psql($src, "SELECT last_value FROM public.$_") } @SEQS;

my $workload = rp_psql_bg($src, 'workload', 'CALL run_workload()');
my $consumer = rp_consumer('c', { stdout => "$work/c.out" }, -d => $srcconn, -S => $SLOT,
	'--create-slot', '--snapshot', '--start', '--create-tables', '-o', 'exclude_tables=public.ctl',
	'--snapshot-chunk-rows=5000', '--sink', $sink, '--state-dir', "$work/state", '-s', '1', '-v');
ok(rp_wait_until(sub { rp_dst_checkpoint($dst, $SLOT) ne '' }, $consumer),
	'the snapshot completes under the workload (the destination has a checkpoint)')
  or diag(slurp("$work/c.err"));
like(slurp("$work/c.err"), qr/snapshot complete/, 'the consumer reports the snapshot complete');

# ---- the snapshot's own sequence sync (docs/operations.md): created, at least the position before
ok(rp_wait_file_match("$work/c.err", qr/sequences synced after the snapshot|sequences were not synced/, $consumer),
	'the consumer reports the sequence sync after the snapshot')
  or diag(slurp("$work/c.err"));
like(slurp("$work/c.err"), qr/sequences synced after the snapshot: 4 selected, \d+ advanced, 4 created, 0 missing/,
	'after the snapshot: 4 sequences selected, 4 created, none missing');
for my $s (@SEQS)
{
	my ($ret, $v) = $dst->psql('postgres', "SELECT last_value FROM public.$s");
	ok($ret == 0 && $v >= $before{$s},
		"after the snapshot: sequence $s created on the destination, at or past the source's $before{$s} before the snapshot ("
		  . ($ret == 0 ? $v : 'missing') . ')');
}
is(rp_psql($dst, "SELECT increment_by FROM pg_sequences WHERE sequencename = 'ids'"), '7',
	"sequence ids created with the source's increment (7)");

# ---- the workload runs on while the mirror streams, then writes stop
ok(rp_wait_until(sub { rp_psql($src, "SELECT count(*) FROM shared_t WHERE v = 'w'") >= 300 }, $workload),
	'the workload runs on (300 transactions) while the mirror streams');
rp_psql($src, 'UPDATE ctl SET stop = true');
is($workload->wait_exit, 0, 'the workload stops with exit 0') or diag(slurp("$work/workload.out"));
is(slurp("$work/workload.out"), '', 'the workload reported no error');

# ---- cutover: wait, then the data is there
is(rp_replicant('wait', { stdout => "$work/wait.out" }, 'wait', -d => $srcconn, '--sink', $sink, -S => $SLOT,
		'--timeout', '300'),
	0, 'replicant wait exits 0');
like(slurp("$work/wait.err"), qr/has passed/, 'replicant wait reports the checkpoint passing');
rp_compare_tables($src, $dst, @TABLES);

# ---- sync-sequences: every destination sequence at or past the source's next value
sub incr { return $_[0] eq 'ids' ? 7 : 1; }
sub next_of
{
	my ($node, $s, $i) = @_;
	return rp_psql($node, "SELECT CASE WHEN is_called THEN last_value + $i ELSE last_value END FROM public.$s");
}
sub src_next { return next_of($src, $_[0], incr($_[0])); }
sub dst_next { return next_of($dst, $_[0], $_[1] // incr($_[0])); }
# sync(NAME, ARG...): replicant sync-sequences from the source to the destination; its status
sub sync
{
	my ($name, @args) = @_;
	return rp_replicant($name, { stdout => "$work/$name.out" }, 'sync-sequences', -d => $srcconn, '--sink', $sink,
		@args);
}
is(sync('sync1', '-o', 'exclude_tables=public.ctl', '-v'), 0, 'sync-sequences exits 0')
  or diag(slurp("$work/sync1.err"));
like(slurp("$work/sync1.err"), qr/4 selected/, 'sync-sequences selects the 4 sequences');
for my $s (@SEQS)
{
	my ($d, $n) = (dst_next($s), src_next($s));
	cmp_ok($d, '>=', $n, "after sync-sequences: sequence ${s}'s next value on the destination ($d) is at or past the source's ($n)");
}

# ---- verify: the copy equals the source, table by table (the mirror's own selection)
my $vrc = rp_replicant('verify', { stdout => "$work/verify.out" }, 'verify', -d => $srcconn, '--sink', $sink,
	-S => $SLOT, '-o', 'exclude_tables=public.ctl', '--chunk-rows', '2000');
my $vout = slurp("$work/verify.out");
is($vrc, 0, 'replicant verify exits 0') or diag($vout);
like($vout, qr/^\d+ tables: \d+ equal, 0 different, 0 not compared$/m, 'replicant verify: every table equal');
unlike($vout, qr/^public\.ctl:/m, 'replicant verify does not compare the excluded table ctl');

# ---- switch: the application's inserts on the destination collide with no copied key
ok(eval {
		rp_psql($dst, "INSERT INTO serial_t (id, v) SELECT nextval('public.serial_t_id_seq'), 'after' FROM generate_series(1, 5);
INSERT INTO ident_t (id, v) SELECT nextval('public.ident_t_id_seq'), 'after' FROM generate_series(1, 5);
INSERT INTO shared_t (id, v) SELECT nextval('public.ids'), 'after' FROM generate_series(1, 5);");
		1;
	},
	'inserts with nextval on the destination collide with no copied key') or diag($@);
# and the keys handed out are past every key the source had
for my $t (qw(serial_t ident_t shared_t))
{
	my $m = rp_psql($src, "SELECT max(id) FROM $t");
	my $n = rp_psql($dst, "SELECT min(id) FROM $t WHERE v = 'after'");
	ok($n ne '' && $n > $m, "table $t: the new keys ($n..) are past the source's keys (max $m)");
}

# ---- never backwards: one destination sequence set higher stays; --margin moves the rest on
rp_psql($dst, "SELECT setval('public.ids', 90000000)");
my %src_at = map { $_ => src_next($_) } @SEQS;
is(sync('sync2', '-o', 'exclude_tables=public.ctl', '--margin', '1000'), 0, 'sync-sequences --margin exits 0')
  or diag(slurp("$work/sync2.err"));
is(rp_psql($dst, "SELECT last_value || ' ' || is_called FROM public.ids"), '90000000 true',
	'sync-sequences does not move a destination sequence backwards (ids stays at 90000000)');
for my $s (qw(serial_t_id_seq ident_t_id_seq loose_seq))
{
	my $d = dst_next($s, 1);
	cmp_ok($d, '>=', $src_at{$s} + 1000, "--margin 1000: sequence $s ($d) is 1000 past the source's ($src_at{$s})");
}
# run again with the same margin: nothing moves (already there)
sub all_next { return join(' ', map { dst_next($_) } @SEQS); }
my $before_again = all_next();
is(sync('sync2b', '-o', 'exclude_tables=public.ctl', '--margin', '1000'), 0, 'a repeated sync-sequences exits 0')
  or diag(slurp("$work/sync2b.err"));
is(all_next(), $before_again, 'a repeated sync-sequences with the same margin moves no sequence');

# ---- selection: include_tables narrows it to the sequences of those tables
is(sync('sync3', '-o', 'include_tables=public.serial_t', '--margin', '5000000'), 0,
	'sync-sequences -o include_tables exits 0')
  or diag(slurp("$work/sync3.err"));
like(slurp("$work/sync3.err"), qr/: 1 selected: 1 advanced/, "include_tables selects exactly serial_t's sequence");
cmp_ok(dst_next('ident_t_id_seq', 1), '<', $src_at{ident_t_id_seq} + 5000000, 'a sequence outside include_tables is not moved');

# ---- the cutover command does both: wait, then sync (here narrowed to ident_t, with a margin)
my $before_ident = src_next('ident_t_id_seq');
is(rp_replicant('wait_sync', { stdout => "$work/wait_sync.out" }, 'wait', -d => $srcconn, '--sink', $sink,
		-S => $SLOT, '--timeout', '300', '--sync-sequences', '-o', 'include_tables=public.ident_t',
		'--margin', '7000000'),
	0, 'replicant wait --sync-sequences exits 0') or diag(slurp("$work/wait_sync.err"));
like(slurp("$work/wait_sync.err"), qr/sequences: 1 selected: 1 advanced/,
	"replicant wait --sync-sequences syncs ident_t's sequence");
cmp_ok(dst_next('ident_t_id_seq', 1), '>=', $before_ident + 7000000, 'replicant wait --sync-sequences applies the margin');
is(rp_replicant('wait_usage', 'wait', -d => $srcconn, '--sink', $sink, '--margin', '5'), 2,
	'replicant wait --margin without --sync-sequences exits 2');

# ---- missing on the destination: named, exit 1; created with --create-tables
rp_psql($src, 'CREATE SEQUENCE "Late seq"; SELECT nextval($$"Late seq"$$)');
is(sync('sync4', '-o', 'exclude_tables=public.ctl'), 1, 'sync-sequences with a sequence missing on the destination exits 1');
like(slurp("$work/sync4.err"), qr/warning: sequence "public"\."Late seq" is missing on the destination/,
	'the missing sequence is named');
is(sync('sync5', '-o', 'exclude_tables=public.ctl', '--create-tables'), 0, 'sync-sequences --create-tables exits 0')
  or diag(slurp("$work/sync5.err"));
is(rp_psql($dst, 'SELECT nextval($$public."Late seq"$$)'), '2', "the created sequence is past the source's");

# ---- wait for an LSN the mirror cannot reach: its consumer stopped
ok($consumer->alive && $consumer->signal('TERM'), 'SIGTERM to the running consumer');
ok(defined $consumer->wait_exit, 'the consumer stopped');
rp_psql($src, "INSERT INTO plain_t VALUES (100000, 'unreached')");
my $target  = rp_psql($src, 'SELECT pg_current_wal_lsn()');
my $reached = rp_dst_checkpoint($dst, $SLOT);
is(rp_replicant('wait2', { stdout => "$work/wait2.out" }, 'wait', -d => $srcconn, '--sink', $sink,
		'--lsn', $target, '--timeout', '3'),
	1, 'replicant wait on an unreachable LSN exits 1 after --timeout');
my $w2 = slurp("$work/wait2.err");
like($w2, qr/timed out after 3 s: the checkpoint reached \Q$reached\E, not \Q$target\E/,
	'the timeout message names the checkpoint and the LSN');
like($w2, qr/waiting for \Q$target\E: checkpoint \Q$reached\E, \d+ bytes behind/, 'replicant wait shows the lag');
# on a terminal the lag is redrawn in place: one line, then the timeout's message below it
ok(system('command -v tmux >/dev/null') == 0, 'tmux is installed (the terminal is read back through it)');
sub shq { my ($s) = @_; $s =~ s/'/'\\''/g; return "'$s'"; }
{
	open(my $run, '>', "$work/tty.sh") or die $!;
	print $run join(' ', map { shq($_) } RpTest::replicant_bin(), 'wait', -d => $srcconn, '--sink', $sink,
		'--lsn', $target, '--timeout', '3')
	  . "\necho \"exit=\$?\"\nsleep 3600\n";
	close $run;
	delete local $ENV{TMUX};
	delete local $ENV{PGAPPNAME};
	$tmux_started = 1;
	is(system('tmux', '-S', $sock, '-f', '/dev/null', 'new-session', '-d', '-x', '200', '-y', '20', '-s', 'rp',
			"bash $work/tty.sh"), 0, 'tmux started a session');
}
my $tty = '';
ok(rp_wait_until(sub { $tty = `tmux -S '$sock' capture-pane -p -t rp 2>/dev/null` // ''; $tty =~ /^exit=/m }),
	'replicant wait on a terminal ends');
like($tty, qr/^exit=1$/m, 'replicant wait on a terminal exits 1') or diag($tty);
is(scalar(() = $tty =~ /waiting for/g), 1, 'replicant wait on a terminal redraws its lag line in place (one line)')
  or diag($tty);
like($tty, qr/^waiting for \Q$target\E: checkpoint \Q$reached\E, \d+ bytes behind *$/m,
	'replicant wait on a terminal leaves a whole lag line');
like($tty, qr/waiting for.*(?:\n.*)?timed out after 3 s/, 'the timeout message is on the line after the lag');
# an LSN already passed returns at once; no checkpoint table: 3; usage: 2
is(rp_replicant('wait3', 'wait', -d => $srcconn, '--sink', $sink, '--lsn', $reached, '-q'), 0,
	'replicant wait on a passed LSN exits 0');
is(rp_replicant('wait4', 'wait', -d => $srcconn, '--sink', $sink, '--bookkeeping-schema', 'nowhere', '--timeout', '3'),
	3, 'replicant wait without a checkpoint table exits 3');
is(rp_replicant('wait5', 'wait', -d => $srcconn, '--sink', "file:$work/x"), 2,
	'replicant wait with a non-PostgreSQL sink exits 2');

# G4: no row value in any of our output
my @leaks = grep { slurp($_) =~ /unreached/ } glob("$work/*.err $work/*.out");
is(join(' ', @leaks), '', 'no row value in any output of the consumer and the commands');

done_testing();
