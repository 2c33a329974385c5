
# Copyright: see the project's LICENSE.

# Mistakes a new user makes end at once with one clear line, not in a false halt or a wait
# for ever (issue 46):
#   1. a first run (no checkpoint) on a slot that does not exist: exit 4 at once, the line
#      names the slot and says to create it with --create-slot; not a fail-closed `gap` halt
#      (nothing was received, so nothing can be lost). With a checkpoint the same missing
#      slot is still the `gap` halt (test/t/040_gap_and_identity.pl).
#   2. `replicant wait` with a misspelt -S while the destination holds another slot's
#      checkpoint of this source: exit 3 at once naming the slot asked for and the ones
#      there; it waited for ever (here: until --timeout). With no checkpoint at all it still
#      waits (a mirror that has not started yet), up to --timeout.
#   3. refusals no retry mends end the run at once, exit 4, one line with the server's
#      SQLSTATE, its own words and what to do, no "reconnecting": a wrong password on the
#      source, a destination database that does not exist, a source whose plugin library
#      cannot be loaded (dynamic_library_path pointing elsewhere: 58P01). Before, each was
#      retried for ever, the service looking "running" (the slot case exited 1).
#   4. the server's own words where they cannot carry a row: a destination without the
#      source's enum type halts (exit 3) saying 'type ... does not exist', where it said
#      "SQLSTATE 42704 (error)"; a destination column whose type refuses the row's value
#      (22P02, a data exception) halts naming the SQLSTATE and never the value.
#   5. a slot another consumer streams from: a consumer whose checkpoint is behind the slot
#      is told the slot is active for that walsender's PID (retried; with --no-loop exit 1),
#      not halted `gap` while the other's position moves (a second NATS writer of one stream
#      halted so with nothing lost). Once the slot is free the comparison is made: this
#      consumer's log lacks what the other consumed, a real gap (exit 3).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $src = rp_cluster('src');
my $dst = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, 'CREATE TABLE t (id int PRIMARY KEY)');

# ---- 1. a first run on a slot that does not exist
for my $sink ("file:$work/first.jsonl", "postgres:$dstconn")
{
	(my $kind = $sink) =~ s/:.*//;
	my $rc = rp_replicant("first-$kind", -d => $srcconn, -S => 'no_such_slot', '--start',
		'--sink', $sink, '--state-dir', "$work/st-first-$kind");
	my $err = slurp("$work/first-$kind.err");
	is($rc, 4, "1. $kind: a first run on a missing slot exits 4 (refused)");
	like($err, qr/replication slot "no_such_slot" does not exist: create it with --create-slot/,
		"1. $kind: the line names the slot and the way out");
	unlike($err, qr/halted|retrying|reconnecting/, "1. $kind: no halt, no retry");
}

# ---- 2. wait with a misspelt -S
rp_replicant_ok([ -d => $srcconn, -S => 'real', '--create-slot' ], 'slot real created');
rp_psql($src, 'INSERT INTO t VALUES (1)');
my $fence = rp_fence($src, 'INSERT INTO t VALUES (2)');
rp_replicant_ok([ -d => $srcconn, -S => 'real', '--start', '--endpos', $fence, '--create-tables',
		'--sink', "postgres:$dstconn", '--state-dir', "$work/st-real" ],
	'the mirror of slot real runs to a fence');
my $rc = rp_replicant('wait-typo', 'wait', -d => $srcconn, '--sink', "postgres:$dstconn", -S => 'rael',
	'--timeout', '120');
is($rc, 3, '2. wait with a misspelt -S exits 3 (not 1: it did not wait out its --timeout)');
like(slurp("$work/wait-typo.err"), qr/holds no checkpoint of slot "rael" of this source, only of 'real'/,
	'2. the line names the slot asked for and the one there');
is(rp_replicant('wait-right', 'wait', -d => $srcconn, '--sink', "postgres:$dstconn", -S => 'real',
		'--lsn', $fence, '--timeout', '120'),
	0, '2. wait with the right -S passes');
# a destination with no checkpoint of this source at all: the mirror may be starting, so
# wait waits (here a short --timeout: exit 1, timed out)
rp_psql($dst, 'CREATE DATABASE empty');
rp_psql($dst, 'CREATE SCHEMA replicant; CREATE TABLE replicant.checkpoint (slot text, end_lsn pg_lsn, system_id text)',
	'empty');
$rc = rp_replicant('wait-none', 'wait', -d => $srcconn, '--sink', 'postgres:' . rp_conninfo($dst, 'empty'),
	-S => 'real', '--timeout', '2');
is($rc, 1, '2. with no checkpoint of this source at all, wait waits up to its --timeout (exit 1)');
like(slurp("$work/wait-none.err"), qr/timed out/, '2. and says it timed out');

# ---- 3. refusals no retry mends: exit 4 at once
# no_retry(NAME, PATTERN, ARG...): the run ends by itself, exit 4, its stderr matching PATTERN
sub no_retry
{
	my ($name, $pat, @args) = @_;
	my $rc = rp_replicant($name, @args);
	my $err = slurp("$work/$name.err");
	is($rc, 4, "3. $name: exit 4 (refused)") or diag($err);
	like($err, $pat, "3. $name: the line says what the server said and what to do") or diag($err);
	unlike($err, qr/reconnecting|retrying|halted/, "3. $name: no retry, no halt");
	return;
}
rp_psql($src, "CREATE ROLE rp_pw LOGIN REPLICATION PASSWORD 'right'");
# the role alone by password, over the socket (the harness trusts the rest)
my $hba = $src->data_dir . '/pg_hba.conf';
my $hba_text = slurp($hba);
open(my $fh, '>', $hba) or die $!;
print $fh "local all rp_pw scram-sha-256\n$hba_text";
close $fh;
$src->reload;
no_retry('wrong-password', qr/^replicant: error: could not connect: .*password authentication failed for user "rp_pw" \(SQLSTATE 28P01\); check the user and its password/m,
	-d => "$srcconn user=rp_pw password=wrong", -S => 'real', '--start', '--sink', "file:$work/pw.jsonl",
	'--state-dir', "$work/st-pw");
no_retry('no-database', qr/could not connect to the destination: .*database "no_such_db" does not exist \(SQLSTATE 3D000\); check dbname/,
	-d => $srcconn, -S => 'real', '--start', '--sink', 'postgres:' . rp_conninfo($dst, 'no_such_db'),
	'--state-dir', "$work/st-nodb");
rp_psql($src, "ALTER SYSTEM SET dynamic_library_path = '/nonexistent'; SELECT pg_reload_conf()");
no_retry('no-plugin', qr/START_REPLICATION failed: SQLSTATE 58P01 \(undefined_file\): could not access file "replicant".*; install the replicant output plugin on the source server/,
	-d => $srcconn, -S => 'real', '--start', '--sink', "file:$work/np.jsonl", '--state-dir', "$work/st-np");
rp_psql($src, "ALTER SYSTEM RESET dynamic_library_path; SELECT pg_reload_conf()");

# ---- 4. the server's words, where they hold no row
my $CANARY = 'CANARY-' . 'b81f0c2e';
rp_psql($src, "CREATE TYPE mood AS ENUM ('sad', 'ok'); CREATE TABLE e (id int PRIMARY KEY, m mood, v text);
CREATE TABLE bad (id int PRIMARY KEY, v text)");
rp_replicant_ok([ -d => $srcconn, -S => 'words', '--create-slot' ], 'slot words created');
rp_psql($src, "INSERT INTO e VALUES (1, 'ok', 'x')");
my $end = rp_fence($src, 'SELECT 1');
rp_psql($dst, 'CREATE DATABASE words');
$rc = rp_replicant('enum', -d => $srcconn, -S => 'words', '--start', '--endpos', $end, '--create-tables',
	'-o', 'include_tables=public.e', '--sink', 'postgres:' . rp_conninfo($dst, 'words'), '--state-dir', "$work/st-enum");
my $err = slurp("$work/enum.err");
isnt($rc, 0, "4. a destination without the source's enum stops the run (exit $rc)");
like($err, qr/SQLSTATE 42704 \(undefined_object\).*: type "?(public"?\.)?"?mood"? does not exist/,
	"4. the line carries the server's words: the type does not exist") or diag($err);
# a value the destination column's type refuses: the SQLSTATE, never the value
rp_psql($dst, 'CREATE TABLE public.bad (id int PRIMARY KEY, v int)', 'words');
rp_replicant_ok([ -d => $srcconn, -S => 'words2', '--create-slot' ], 'slot words2 created');
rp_psql($src, "INSERT INTO bad VALUES (1, '$CANARY')");
$end = rp_fence($src, 'SELECT 1');
$rc = rp_replicant('value', -d => $srcconn, -S => 'words2', '--start', '--endpos', $end,
	'-o', 'include_tables=public.bad', '--sink', 'postgres:' . rp_conninfo($dst, 'words'), '--state-dir', "$work/st-value");
$err = slurp("$work/value.err");
is($rc, 3, '4. a value the destination type refuses halts (exit 3)') or diag($err);
like($err, qr/SQLSTATE 22P02 \(invalid_text_representation\) on table "public"\."bad"/, '4. the line names the SQLSTATE and the table')
  or diag($err);
unlike($err, qr/b81f0c2e|invalid input syntax/, "4. and not the server's message, which quotes the value");

# ---- 5. a slot another consumer streams from
rp_replicant_ok([ -d => $srcconn, -S => 'shared', '--create-slot' ], 'slot shared created');
rp_psql($src, 'INSERT INTO t VALUES (100)');
$end = rp_fence($src, 'INSERT INTO t VALUES (101)');
rp_replicant_ok([ -d => $srcconn, -S => 'shared', '--start', '--endpos', $end, '--sink', "file:$work/b.jsonl",
		'--state-dir', "$work/st-b" ], '5. consumer B reads slot shared to a fence (its checkpoint)');
my $a = rp_consumer('shared-a', -d => $srcconn, -S => 'shared', '--start', '-s', '1', '--sink', "file:$work/a.jsonl",
	'--state-dir', "$work/st-a");
my $past = rp_fence($src, 'INSERT INTO t VALUES (102)');
ok(rp_wait_confirmed($src, 'shared', $past, $a), '5. consumer A streams from it, past B\'s checkpoint');
$rc = rp_replicant('shared-b', -d => $srcconn, -S => 'shared', '--start', '--no-loop', '--sink', "file:$work/b.jsonl",
	'--state-dir', "$work/st-b");
$err = slurp("$work/shared-b.err");
is($rc, 1, '5. B, while A streams: exit 1 with --no-loop (retried without it), not a gap halt') or diag($err);
like($err, qr/replication slot "shared" is active for PID [0-9]+/, '5. the line says the slot is active, and for whom');
unlike($err, qr/halted|past the checkpoint/, '5. no gap is judged while the slot moves');
ok($a->signal('TERM') && defined($a->wait_exit) && $a->status == 0, '5. A stops (exit 0)');
$rc = rp_replicant('shared-b2', -d => $srcconn, -S => 'shared', '--start', '--no-loop', '--sink', "file:$work/b.jsonl",
	'--state-dir', "$work/st-b");
is($rc, 3, "5. the slot free, B's log lacks what A consumed: the gap halt (exit 3)");
like(slurp("$work/shared-b2.err"), qr/replication slot "shared" is at .*, past the checkpoint/, '5. naming both positions');

done_testing();
