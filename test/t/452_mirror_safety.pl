# Copyright: see the project's LICENSE.

# The mirror's mapping of source tables onto the destination is one to one and never
# touches its own bookkeeping; REPLICA IDENTITY FULL matches the exact old row; the
# destination's diagnostic fields never reach the consumer's output; was
# regress/t/mirror_safety.sh.
#
# Proves G1 and G3 (fail-closed: exit 3 naming the relation, nothing acknowledged) and G4
# (value-free) for the PostgreSQL mirror sink:
#   (1) a source table replicant.checkpoint whose row would set this slot's checkpoint to
#       FFFFFFF/0 halts with exit 3 naming it, on the stream path, with --schema-prefix
#       (source schema "licant" + prefix "rep"), on the snapshot path and on the backfill
#       path: the destination checkpoint is never FFFFFFF/0 and the slot is not confirmed
#       past the source's WAL. With --bookkeeping-schema=bk the same table is mirrored as
#       data and the checkpoint is in bk.checkpoint; a source schema "bk" then halts.
#   (2) --schema-prefix making two 60-byte source schemas one truncated destination schema:
#       exit 3 naming the source relation, nothing created in the destination.
#   (3) REPLICA IDENTITY FULL without a key, two rows the type's "=" calls equal (numeric
#       1.0 and 1.00, float8 0 and -0, interval '1 day' and '24 hours', numeric[] {1.0} and
#       {1.00}): an update and then a delete of the second leave the destination equal to
#       the source, value for value (the type's "=" would change the first). Rows of a table
#       of many types (enum, composite, range, domain, arrays, json, jsonb, xml, point,
#       inet, times, NULLs) are each found by their update and delete. A delete whose row
#       the destination lacks halts naming the table (exit 3, checkpoint held);
#       --on-divergence=skip goes on.
#   (4) a destination trigger raising with MESSAGE, TABLE, COLUMN, CONSTRAINT, DETAIL and
#       HINT set to the row's value (SQLSTATE 23514, 57P01, which reads as a lost
#       connection, and 42704, a class whose server messages are shown: a RAISE's is not),
#       on the stream path and the snapshot path: the canary is in no consumer output.
# PARTS (or the test's arguments): the parts to run (default: 1 2 3 4), to show each one
# failing on its own.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use File::Find ();

my %want = map { $_ => 1 } (@ARGV ? @ARGV : split(' ', $ENV{PARTS} || '1 2 3 4'));
my $CANARY     = 'CANARY-5e3a91c7';
my $CANARY_SQL = "'CANARY-' || '5e3a91c7'";
my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $sysid = rp_psql($src, 'SELECT system_identifier FROM pg_control_system()');

my $runs = 0;
my $err;    # the last run's stderr
sub run_args
{
	my ($db, $slot) = @_;
	return ('-v', -d => $srcconn, -S => $slot, '--start', '-n', '--sink', 'postgres:' . rp_conninfo($dst, $db),
		'--create-tables', '--state-dir', "$work/state");
}
# consumer(EXPECTED_STATUS, DB, SLOT, ARG...): one run into destination database DB
sub consumer
{
	my ($expect, $db, $slot, @args) = @_;
	$runs++;
	$err = "$work/run-$runs.err";
	my $rc = rp_replicant("run-$runs", { stdout => "$work/run-$runs.out" }, run_args($db, $slot), @args);
	is($rc, $expect, "run $runs (slot $slot into $db, @args) exits $expect") or diag(slurp($err));
}
sub err_has
{
	my ($text) = @_;
	like(slurp($err), qr/\Q$text\E/, "run $runs: stderr says: $text");
}
sub newdb { rp_psql($dst, "CREATE DATABASE $_[0]"); }
sub dst_q
{
	my ($db, $sql) = @_;
	return rp_psql($dst, $sql, $db);
}
sub fence { return rp_fence($src, 'INSERT INTO fence DEFAULT VALUES'); }
# halts(DB, SLOT, DONE_SQL, ARG...): a run that goes on streaming (snapshot, backfill) must
# stop by itself with exit 3; DONE_SQL, true in the destination once the unfixed run got
# through, or the timeout (it only guards against hanging) mean it did not. Fences keep
# WAL coming meanwhile (a snapshot run ends at a keepalive).
sub halts
{
	my ($db, $slot, $done_sql, @args) = @_;
	$runs++;
	$err = "$work/run-$runs.err";
	my $p = rp_consumer("run-$runs", { stdout => "$work/run-$runs.out" }, run_args($db, $slot), '-s', '1', @args);
	rp_poll(0.5,
		sub {
			return 1 unless $p->alive;
			my ($ret, $done) = $dst->psql($db, $done_sql);
			return 1 if $ret == 0 && $done eq 't';
			fence();
			return 0;
		});
	my $went_on = $p->alive;
	ok(!$went_on, "run $runs (slot $slot into $db, @args) stops by itself instead of going on")
	  or diag(slurp($err));
	if ($went_on)
	{
		$p->signal('TERM');
		$p->wait_exit;
	}
	is($p->status, 3, "run $runs (slot $slot into $db) exits 3") or diag(slurp($err));
}
# the slot never confirmed past what the source has
sub acked_sane
{
	my ($slot, $what) = @_;
	is(rp_psql($src, "SELECT coalesce(confirmed_flush_lsn <= pg_current_wal_lsn(), true) FROM pg_replication_slots WHERE slot_name = '$slot'"),
		't', "$what: slot $slot is not confirmed past the source's WAL");
}
sub no_poison
{
	my ($db, $what, $schema) = @_;
	$schema //= 'replicant';
	my $bad = 0;
	if (dst_q($db, "SELECT count(*) FROM pg_tables WHERE schemaname = '$schema' AND tablename = 'checkpoint'") > 0)
	{
		$bad = dst_q($db, "SELECT count(*) FROM $schema.checkpoint WHERE end_lsn >= 'FFFFFF/0' OR commit_lsn >= 'FFFFFF/0'");
	}
	is($bad, 0, "$what: the destination checkpoint ($schema) was not overwritten from the source");
}
# same(DB, SCHEMA.TABLE, WHAT): every value's text, source and destination
sub same
{
	my ($db, $t, $what) = @_;
	my $q = "SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text COLLATE \"C\"), '')) FROM $t x";
	is(dst_q($db, $q), rp_psql($src, $q), "$what: table $t equals the source");
}
sub drop_slots { rp_psql($src, "SELECT pg_drop_replication_slot('$_')") for @_; }

rp_psql($src, "CREATE TABLE fence (id serial PRIMARY KEY);
CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$;");

# ---- (1) the bookkeeping schema is never a target
if ($want{1})
{
	my $poison = sub {
		my ($schema, $slot) = @_;
		rp_psql($src, "INSERT INTO $schema.checkpoint VALUES ('$sysid', '$slot', 1, 'FFFFFFF/0', 'FFFFFFF/0', now())");
	};
	my $ckdef = '(system_id text, slot text, timeline int, commit_lsn pg_lsn, end_lsn pg_lsn, updated_at timestamptz,
	    PRIMARY KEY (system_id, slot))';
	rp_psql($src, "CREATE SCHEMA IF NOT EXISTS replicant; CREATE TABLE replicant.checkpoint $ckdef;
		CREATE SCHEMA licant; CREATE TABLE licant.checkpoint $ckdef;
		CREATE SCHEMA bk; CREATE TABLE bk.checkpoint $ckdef;");

	# stream
	newdb('d1');
	rp_replicant_ok([ -d => $srcconn, -S => 's1', '--create-slot' ], '(1) slot s1 created');
	my $before = rp_psql($src, 'SELECT pg_current_wal_lsn()');
	$poison->('replicant', 's1');
	my $end = fence();
	for my $attempt (1, 2)
	{
		consumer(3, 'd1', 's1', '-E', $end);
		err_has('source table "replicant"."checkpoint"');
		err_has('bookkeeping schema "replicant"');
		err_has('halted (sink)');
		no_poison('d1', "(1) stream, attempt $attempt");
		acked_sane('s1', "(1) stream, attempt $attempt");
	}
	is(dst_q('d1', "SELECT count(*) FROM replicant.checkpoint WHERE slot = 's1' AND end_lsn > '$before'"), 0,
		'(1) stream: the halted runs did not advance the checkpoint past the poisoning transaction');

	# stream, --schema-prefix: rep + licant = replicant
	rp_replicant_ok([ -d => $srcconn, -S => 's1p', '--create-slot' ], '(1) slot s1p created');
	$poison->('licant', 's1p');
	$end = fence();
	consumer(3, 'd1', 's1p', '-E', $end, '--schema-prefix=rep');
	err_has('source table "licant"."checkpoint"');
	err_has('bookkeeping schema "replicant"');
	no_poison('d1', '(1) --schema-prefix');
	acked_sane('s1p', '(1) --schema-prefix');

	# snapshot: the table's rows are older than the slot
	$poison->('replicant', 's1s');
	newdb('d1s');
	halts('d1s', 's1s', "SELECT count(*) > 0 FROM replicant.checkpoint WHERE slot = 's1s'",
		'--create-slot', '--snapshot', '-o', 'include_tables=public.fence,replicant.checkpoint');
	err_has('source table "replicant"."checkpoint"');
	no_poison('d1s', '(1) snapshot');
	acked_sane('s1s', '(1) snapshot');

	# backfill
	$poison->('replicant', 's1b');
	newdb('d1b');
	rp_replicant_ok([ -d => $srcconn, -S => 's1b', '--create-slot' ], '(1) slot s1b created');
	halts('d1b', 's1b', "SELECT count(*) > 0 FROM replicant.backfill_progress WHERE slot = 's1b' AND done",
		'-o', 'include_tables=public.fence,replicant.checkpoint', '--backfill=replicant.checkpoint');
	err_has('source table "replicant"."checkpoint"');
	no_poison('d1b', '(1) backfill');
	acked_sane('s1b', '(1) backfill');

	# --bookkeeping-schema=bk: replicant.checkpoint is data; a source schema "bk" is not
	newdb('d1k');
	rp_replicant_ok([ -d => $srcconn, -S => 's1k', '--create-slot' ], '(1) slot s1k created');
	$poison->('replicant', 's1k');
	$end = fence();
	consumer(0, 'd1k', 's1k', '-E', $end, '--bookkeeping-schema=bk', '-o', 'include_tables=public.fence,replicant.checkpoint');
	is(dst_q('d1k', "SELECT count(*) FROM replicant.checkpoint WHERE slot = 's1k' AND end_lsn = 'FFFFFFF/0'"), 1,
		"(1) --bookkeeping-schema=bk: the source's replicant.checkpoint row is mirrored as data");
	is(dst_q('d1k', "SELECT end_lsn >= '$end' AND end_lsn < 'FFFFFF/0' FROM bk.checkpoint WHERE slot = 's1k'"), 't',
		'(1) --bookkeeping-schema=bk: the checkpoint is in bk.checkpoint');
	$poison->('bk', 's1k');
	$end = fence();
	consumer(3, 'd1k', 's1k', '-E', $end, '--bookkeeping-schema=bk');
	err_has('source table "bk"."checkpoint"');
	err_has('bookkeeping schema "bk"');
	no_poison('d1k', '(1) --bookkeeping-schema, source schema bk', 'bk');
	acked_sane('s1k', '(1) --bookkeeping-schema');
	drop_slots(qw(s1 s1p s1s s1b s1k));
}

# ---- (2) truncation never merges two source tables
if ($want{2})
{
	my $long = 'x' x 56;
	rp_psql($src, "CREATE SCHEMA ${long}_one; CREATE SCHEMA ${long}_two;
		CREATE TABLE ${long}_one.t (id int PRIMARY KEY, v text);
		CREATE TABLE ${long}_two.t (id int PRIMARY KEY, v text);");
	newdb('d2');
	rp_replicant_ok([ -d => $srcconn, -S => 's2', '--create-slot' ], '(2) slot s2 created');
	rp_psql($src, "INSERT INTO ${long}_one.t VALUES (1, 'one'); INSERT INTO ${long}_two.t VALUES (1, 'two');
		DELETE FROM ${long}_two.t;");
	my $end = fence();
	consumer(3, 'd2', 's2', '-E', $end, '--schema-prefix=mirror_');
	err_has("source table \"${long}_one\".\"t\"");
	err_has('longer than 63 bytes');
	is(dst_q('d2', "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'mirror_%'"), 0,
		'(2) no truncated destination schema was created');
	acked_sane('s2', '(2)');
	drop_slots('s2');
}

# ---- (3) REPLICA IDENTITY FULL matches the exact row
if ($want{3})
{
	my @types = ('numeric', 'float8', 'interval', 'numeric[]');
	my %A = (numeric => '1.0', float8 => '0', interval => '1 day', 'numeric[]' => '{1.0}');
	my %B = (numeric => '1.00', float8 => '-0', interval => '24 hours', 'numeric[]' => '{1.00}');
	rp_psql($src, "CREATE TABLE full_$_ (v $types[$_], tag int); ALTER TABLE full_$_ REPLICA IDENTITY FULL;")
	  for 0 .. $#types;
	newdb('d3');
	rp_replicant_ok([ -d => $srcconn, -S => 's3', '--create-slot' ], '(3) slot s3 created');
	for my $i (0 .. $#types)
	{
		my $ty = $types[$i];
		rp_psql($src, "INSERT INTO full_$i VALUES ('$A{$ty}', 0); INSERT INTO full_$i VALUES ('$B{$ty}', 0);");
	}
	my $end = fence();
	consumer(0, 'd3', 's3', '-E', $end);
	# update the second row (B): the type's "=" would update the first (A)
	for my $i (0 .. $#types)
	{
		my $ty = $types[$i];
		rp_psql($src, "UPDATE full_$i SET tag = 1 WHERE v::text = '$B{$ty}'::${ty}::text");
	}
	$end = fence();
	consumer(0, 'd3', 's3', '-E', $end);
	same('d3', "public.full_$_", "(3) update, $types[$_]") for 0 .. $#types;
	# rows equal again but for the value's form, then delete the second: "=" would delete the first
	for my $i (0 .. $#types)
	{
		my $ty = $types[$i];
		rp_psql($src, "UPDATE full_$i SET tag = 5; DELETE FROM full_$i WHERE v::text = '$B{$ty}'::${ty}::text;");
		is(rp_psql($src, "SELECT count(*) FROM full_$i"), 1, "(3) the source's full_$i holds one row after the delete");
	}
	$end = fence();
	consumer(0, 'd3', 's3', '-E', $end);
	same('d3', "public.full_$_", "(3) delete, $types[$_]") for 0 .. $#types;
	# every kind of value matches itself: an update and a delete of each row of a table of
	# many types (NULLs included) find their row; a miss would halt as a divergence
	rp_psql($src, q{CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE full_types (i2 int2, i8 int8, f4 float4, n numeric(10,3), t text, c char(5), vc varchar(10),
	j json, jb jsonb, b bytea, u uuid, d date, tm time, ttz timetz, ts timestamp, tstz timestamptz,
	iv interval, p point, ip inet, ia int[], ta text[], m mood, pr pair, r int4range, dm posint, x xml, tag int);
ALTER TABLE full_types REPLICA IDENTITY FULL;});
	dst_q('d3', q{CREATE TYPE public.mood AS ENUM ('sad', 'ok');
CREATE TYPE public.pair AS (a int, b text);
CREATE DOMAIN public.posint AS int CHECK (VALUE > 0);});
	rp_psql($src, q{INSERT INTO full_types SELECT g, g::int8 * 1000000000, g / 3.0, g / 7.0, 'text ' || g, 'c' || g, 'v' || g,
	('{"a": ' || g || ', "b" : [1, 2]}')::json, ('{"k": ' || g || '}')::jsonb, decode('00ff0' || g, 'hex'),
	md5(g::text)::uuid, date '2020-02-29' + g, time '12:34:56.789' + g * interval '1 s',
	timetz '12:00:00+05:30', timestamp '2000-01-01 00:00:00.000001' + g * interval '1 day',
	timestamptz '2026-03-29 01:30:00+00' + g * interval '1 h', g * interval '1 mon 2 days 3.5 s',
	point(g, -g), ('10.0.0.' || g || '/24')::inet, ARRAY[g, NULL, -g], ARRAY['a b', NULL, 'c"d'],
	'ok', ROW(g, 'p q')::pair, int4range(g, g + 10), g, ('<x a="' || g || '">t</x>')::xml, 0
	FROM generate_series(1, 5) g;
INSERT INTO full_types (tag) VALUES (0), (0);});
	$end = fence();
	consumer(0, 'd3', 's3', '-E', $end);
	rp_psql($src, 'UPDATE full_types SET tag = tag + 1; DELETE FROM full_types WHERE i2 IN (2, 4);
		DELETE FROM full_types WHERE ctid = (SELECT ctid FROM full_types WHERE i2 IS NULL LIMIT 1);');
	$end = fence();
	consumer(0, 'd3', 's3', '-E', $end);
	same('d3', 'public.full_types', '(3) many types');
	is(dst_q('d3', 'SELECT count(*) FROM public.full_types WHERE tag = 1'), 4,
		'(3) many types: the destination holds the 4 updated rows');
	# a row the destination does not have: a divergence, fail-closed
	dst_q('d3', 'DELETE FROM public.full_0');
	my $ck_before = dst_q('d3', "SELECT end_lsn FROM replicant.checkpoint WHERE slot = 's3'");
	rp_psql($src, 'DELETE FROM full_0');
	$end = fence();
	consumer(3, 'd3', 's3', '-E', $end);
	err_has('destination table "public"."full_0" has diverged');
	is(dst_q('d3', "SELECT end_lsn FROM replicant.checkpoint WHERE slot = 's3'"), $ck_before,
		'(3) the divergence did not move the checkpoint');
	acked_sane('s3', '(3)');
	consumer(0, 'd3', 's3', '-E', $end, '--on-divergence=skip');
	same('d3', 'public.full_0', '(3) after --on-divergence=skip');
	drop_slots('s3');
}

# ---- (4) the destination's diagnostic fields stay out
if ($want{4})
{
	rp_psql($src, 'CREATE TABLE diag_t (id int PRIMARY KEY, v text); CREATE TABLE diag_s (id int PRIMARY KEY, v text);');
	my $trigger = sub {
		my ($db, $t, $code) = @_;
		dst_q($db, "CREATE TABLE public.$t (id int PRIMARY KEY, v text);
CREATE FUNCTION public.${t}_raise() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	RAISE EXCEPTION USING ERRCODE = '$code', MESSAGE = NEW.v, TABLE = NEW.v, COLUMN = NEW.v,
		CONSTRAINT = NEW.v, SCHEMA = NEW.v, DATATYPE = NEW.v, DETAIL = NEW.v, HINT = NEW.v;
END \$\$;
CREATE TRIGGER raise BEFORE INSERT OR UPDATE ON public.$t FOR EACH ROW EXECUTE FUNCTION public.${t}_raise();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER TABLE public.$t ENABLE ALWAYS TRIGGER raise;");
	};
	newdb('d4');
	newdb('d4c');
	$trigger->('d4', 'diag_t', '23514');
	$trigger->('d4c', 'diag_t', '57P01');
	rp_replicant_ok([ -d => $srcconn, -S => 's4', '--create-slot' ], '(4) slot s4 created');
	rp_psql($src, "INSERT INTO diag_t SELECT g, canary() || '-' || g FROM generate_series(1, 3) g");
	my $end = fence();
	consumer(3, 'd4', 's4', '-E', $end);
	err_has('SQLSTATE 23514');
	err_has('"public"."diag_t"');
	my $rc = rp_replicant('run-57', { stdout => "$work/run-57.out" }, '-v', -d => $srcconn, -S => 's4', '--start', '-n',
		'-E', $end, '--sink', 'postgres:' . rp_conninfo($dst, 'd4c'), '--state-dir', "$work/state");
	isnt($rc, 0, "(4) the 57P01 trigger stops the run (exit $rc)");
	# a state whose server messages are shown (42704, undefined_object), raised by a
	# trigger: the words are the trigger's, so not shown
	newdb('d4r');
	$trigger->('d4r', 'diag_t', '42704');
	consumer(3, 'd4r', 's4', '-E', $end);
	err_has('SQLSTATE 42704 (undefined_object)');
	# the snapshot path
	rp_psql($src, "INSERT INTO diag_s SELECT g, canary() || '-' || g FROM generate_series(1, 3) g");
	newdb('d4s');
	$trigger->('d4s', 'diag_s', '23514');
	halts('d4s', 's4s', 'SELECT count(*) > 0 FROM public.diag_s', '--create-slot', '--snapshot',
		'-o', 'include_tables=public.fence,public.diag_s');
	err_has('SQLSTATE 23514');
	is(dst_q('d4', 'SELECT count(*) FROM public.diag_t'), 0, '(4) no row got past the trigger');
	drop_slots(qw(s4 s4s));
}

# ---- the canary search: every consumer output and state file
my @searched = glob("$work/run-*");
File::Find::find({ wanted => sub { push @searched, $File::Find::name if -f $_ }, no_chdir => 1 }, "$work/state")
  if -d "$work/state";
# the canary's distinctive half: the whole and any part that holds it
(my $half = $CANARY) =~ s/^CANARY-//;
my @leaks;
for my $f (@searched)
{
	my @lines = grep { index($_, $half) >= 0 } split /\n/, slurp($f);
	push @leaks, map { "$f: " . substr($_, 0, 300) } @lines;
}
is(scalar(@leaks), 0, 'the canary is in none of the ' . scalar(@searched) . ' consumer outputs and state files')
  or diag(join("\n", @leaks[ 0 .. ($#leaks < 4 ? $#leaks : 4) ]));
note("$runs runs, parts " . join(' ', sort keys %want));

done_testing();
