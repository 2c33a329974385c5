
# Copyright: see the project's LICENSE.

# Mistakes a new user makes end at once with one clear line, not in a false halt or a wait
# for ever (issue 46):
#   1. a first run (no checkpoint) on a slot that does not exist: exit 1 at once, the line
#      names the slot and says to create it with --create-slot; not a fail-closed `gap` halt
#      (nothing was received, so nothing can be lost). With a checkpoint the same missing
#      slot is still the `gap` halt (test/t/040_gap_and_identity.pl).
#   2. `replicant wait` with a misspelt -S while the destination holds another slot's
#      checkpoint of this source: exit 3 at once naming the slot asked for and the ones
#      there; it waited for ever (here: until --timeout). With no checkpoint at all it still
#      waits (a mirror that has not started yet), up to --timeout.
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
	is($rc, 1, "1. $kind: a first run on a missing slot exits 1");
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

done_testing();
