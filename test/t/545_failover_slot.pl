
# Copyright: see the project's LICENSE.

# Failover slots (issue 44, part 1): a logical slot made with the replication protocol's
# FAILOVER option (PostgreSQL 17+) is one a physical standby with sync_replication_slots
# keeps a copy of, so that it survives the standby's promotion (docs/operations.md,
# "Failover slots"). regress/run_tests.sh runs this with the 17 servers of the version
# matrix as the default installation and the system's 15 beside it (rp_pg_config).
#
# On 17: `--create-slot --failover` makes a slot whose pg_replication_slots.failover is true,
# a plain `--create-slot` one whose failover is false, and `--create-slot --snapshot --start
# --failover` (the other path that creates a slot, with an exported snapshot) a failover
# slot too, whose copy and stream reach a file log; `--alter-slot --no-failover` and
# `--alter-slot --failover` turn the property off and on (ALTER_REPLICATION_SLOT); an
# --alter-slot of a missing slot exits 1 naming it. A physical standby set up as
# docs/operations.md says (a cold copy of the primary without its slots: 15's pg_basebackup
# refuses a 17 server) holds synchronized copies of the failover slots and of no other; with
# synchronized_standby_slots naming it, streaming from the failover slot to an end position
# delivers every row. On 15: `--failover` (and --alter-slot's --no-failover)
# is refused once connected, before anything is created: exit 4 (refused), `replicant: error:` naming
# the option and the server's version, no "Try --help" line (the command line was right,
# the server is too old), and no slot. Without --create-slot or --alter-slot, --failover is
# a usage error (exit 2, with the hint) on any server.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $maj = rp_test_major(17);

my $work = rp_work();

my $n17 = rp_cluster('pg17', { pg_config => rp_pg_config($maj) });
my $n15 = rp_cluster('pg15', { pg_config => rp_pg_config('15') });
like($n17->pg_version, qr/^$maj\b/, "one server is PostgreSQL $maj (" . $n17->pg_version . ')');
like($n15->pg_version, qr/^15/, 'the other is PostgreSQL 15 (' . $n15->pg_version . ')');
my $c17 = rp_conninfo($n17);
my $c15 = rp_conninfo($n15);

# failover(SLOT): pg_replication_slots.failover of SLOT on 17 ('' when there is no such slot)
sub failover
{
	my ($slot) = @_;
	return rp_psql($n17, "SELECT failover FROM pg_replication_slots WHERE slot_name = '$slot'");
}

# text(FILE): FILE's text, '' when it does not exist (a consumer that failed early wrote none)
sub text
{
	my ($file) = @_;
	return -e $file ? slurp($file) : '';
}

# slots(NODE): the names of NODE's replication slots, sorted, comma separated
sub slots
{
	my ($node) = @_;
	return rp_psql($node, "SELECT coalesce(string_agg(slot_name, ',' ORDER BY slot_name), '') FROM pg_replication_slots");
}

my $schema = 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE fence (id serial PRIMARY KEY)';
rp_psql($n17, $schema);
rp_psql($n17, q{INSERT INTO t SELECT i, 'before ' || i FROM generate_series(1, 50) i});

# ---- 17: creating
rp_replicant_ok([ -d => $c17, -S => 'fo', '--create-slot', '--failover' ], "$maj: " . '--create-slot --failover exits 0');
is(failover('fo'), 't', "$maj: " . 'the slot made with --failover is a failover slot');
rp_replicant_ok([ -d => $c17, -S => 'plain', '--create-slot' ], "$maj: " . 'a plain --create-slot exits 0');
is(failover('plain'), 'f', "$maj: " . 'the slot made without --failover is not a failover slot');

# ---- 17: altering
rp_replicant_ok([ -d => $c17, -S => 'fo', '--alter-slot', '--no-failover' ], "$maj: " . '--alter-slot --no-failover exits 0');
is(failover('fo'), 'f', "$maj: " . '--alter-slot --no-failover turned failover off');
rp_replicant_ok([ -d => $c17, -S => 'fo', '--alter-slot', '--failover' ], "$maj: " . '--alter-slot --failover exits 0');
is(failover('fo'), 't', "$maj: " . '--alter-slot --failover turned it on again');
rp_replicant_ok([ -d => $c17, -S => 'plain', '--alter-slot', '--failover' ], "$maj: " . '--alter-slot --failover of the plain slot exits 0');
is(failover('plain'), 't', "$maj: " . 'the plain slot is now a failover slot');
is(rp_replicant('alter-missing', -d => $c17, -S => 'nosuch', '--alter-slot', '--failover'),
	1, "$maj: " . '--alter-slot of a missing slot exits 1');
like(text("$work/alter-missing.err"), qr/^replicant: error: ALTER_REPLICATION_SLOT failed: .*"nosuch"/m,
	"$maj: " . '... naming the command and the slot');

# ---- 17: the snapshot path, and the stream of a failover slot
my $snap = RpTest::Proc->start(name => 'snap',
	cmd => [ RpTest::replicant_bin(), -d => $c17, -S => 'fosnap', '--create-slot', '--snapshot', '--failover',
		'--start', '--sink', "file:$work/snap.jsonl", '--state-dir', "$work/state-snap", '--batch-ms', '0' ],
	stderr => "$work/snap.err");
ok(rp_wait_file_match("$work/snap.jsonl", qr/"kind":"checkpoint"/, $snap),
	"$maj: " . '--create-slot --snapshot --failover --start checkpoints its snapshot (the consumer runs on)')
  or diag(text("$work/snap.err"));
is(failover('fosnap'), 't', "$maj: " . 'the slot made with --snapshot --failover is a failover slot');
rp_psql($n17, q{INSERT INTO t SELECT i, 'after ' || i FROM generate_series(51, 60) i});
ok(rp_wait_until(sub { my @m = text("$work/snap.jsonl") =~ /"kind":"insert"[^\n]*"table":"t"/g; @m == 10 }, $snap),
	"$maj: " . 'the 10 rows inserted after the snapshot reach the log through the failover slot');
my @rows = text("$work/snap.jsonl") =~ /"kind":"row"[^\n]*"store":"public\.t"/g;
is(scalar(@rows), 50, "$maj: " . 'the snapshot copied the 50 rows there were before');
ok($snap->signal('TERM') && defined($snap->wait_exit) && $snap->status == 0, "$maj: " . 'the consumer exits 0 on SIGTERM')
  or diag(text("$work/snap.err"));

# ---- 17: a physical standby that synchronizes the failover slots, set up as
# docs/operations.md says: on the primary a physical slot for it and
# synchronized_standby_slots; on the standby sync_replication_slots, hot_standby_feedback,
# primary_slot_name, a primary_conninfo with dbname
rp_replicant_ok([ -d => $c17, -S => 'nofo', '--create-slot' ], "$maj: " . 'a slot without failover, for the standby to leave out');
rp_psql($n17, "SELECT pg_create_physical_replication_slot('stb')");
rp_psql($n17, "ALTER SYSTEM SET synchronized_standby_slots = 'stb'; SELECT pg_reload_conf()");
# a cold copy without the slots (15's pg_basebackup does not back up a 17 server)
rp_cold_backup($n17, 'cold');
my $stb = rp_standby($n17, 'stb17', 'cold', "primary_slot_name = 'stb'", 'hot_standby_feedback = on',
	'sync_replication_slots = on');
my $synced = "SELECT coalesce(string_agg(slot_name || ':' || failover || ':' || synced, ',' ORDER BY slot_name), '')"
  . ' FROM pg_replication_slots';
ok(rp_wait_until(sub { rp_psql($stb, $synced) eq 'fo:true:true,fosnap:true:true,plain:true:true' }),
	"$maj: " . 'the standby holds a synchronized copy of each failover slot, and no other slot')
  or diag('standby: ' . rp_psql($stb, $synced));

# the slot fo exists since before these rows: streamed to an end position
my $end = rp_fence($n17, 'INSERT INTO fence DEFAULT VALUES');
rp_replicant_ok([ -d => $c17, -S => 'fo', '--start', '--sink', "file:$work/fo.jsonl", '--state-dir', "$work/state-fo",
		'-E', $end ], "$maj: " . 'streaming from the failover slot to the end position exits 0');
my @ins = text("$work/fo.jsonl") =~ /"kind":"insert"[^\n]*"table":"t"/g;
is(scalar(@ins), 10, "$maj: " . 'the 10 rows committed after the failover slot was made are in its log');
like(text("$work/fo.jsonl"), qr/"kind":"insert"[^\n]*"table":"fence"/, "$maj: " . '... and the fence');
is(failover('fo'), 't', "$maj: " . 'the slot is still a failover slot after streaming');

# ---- usage: --failover without an action that takes it (nothing connects)
is(rp_replicant('usage-start', -d => $c17, -S => 'fo', '--start', '--failover'), 2,
	'--failover with --start alone is a usage error (exit 2)');
like(text("$work/usage-start.err"),
	qr/\Areplicant: error: --failover needs --create-slot or --alter-slot\nTry "replicant --help" for more information\.\n\z/,
	'... saying what it needs, with the hint');
is(rp_replicant('usage-alter', -d => $c17, -S => 'fo', '--alter-slot'), 2, '--alter-slot alone is a usage error (exit 2)');
like(text("$work/usage-alter.err"), qr/--alter-slot needs --failover or --no-failover/, '... saying what it needs');

# ---- 15: refused, nothing created
my $ver15 = rp_psql($n15, "SELECT current_setting('server_version_num')::int / 10000 || '.' || current_setting('server_version_num')::int % 10000");
rp_psql($n15, $schema);
rp_replicant_ok([ -d => $c15, -S => 'plain15', '--create-slot' ], '15: a plain --create-slot still exits 0');
my @refusals = (
	[ 'create15', 'fo15', '--failover', '--create-slot', '--failover' ],
	[ 'snap15', 'fosnap15', '--failover', '--create-slot', '--snapshot', '--failover', '--start',
		'--sink', "file:$work/snap15.jsonl", '--state-dir', "$work/state-snap15" ],
	[ 'alter15', 'plain15', '--no-failover', '--alter-slot', '--no-failover' ],
	[ 'alteron15', 'plain15', '--failover', '--alter-slot', '--failover' ]);
for my $r (@refusals)
{
	my ($name, $slot, $option, @args) = @$r;
	is(rp_replicant($name, -d => $c15, -S => $slot, @args), 4, "15: @args exits 4 (refused)");
	my $err = text("$work/$name.err");
	like($err, qr/^replicant: error: \Q$option\E needs PostgreSQL 17 or later .*the server is PostgreSQL \Q$ver15\E$/m,
		"15: ... the error names $option and the server's version ($ver15)");
	unlike($err, qr/Try "replicant --help"/, '15: ... without the usage hint');
	note("$name: $err");
}
is(slots($n15), 'plain15', '15: no slot was created by the refused runs');
is(rp_psql($n15, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'plain15' AND slot_type = 'logical'"),
	1, '15: the plain slot is unchanged');

done_testing();
