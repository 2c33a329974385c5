
# Copyright: see the project's LICENSE.

# The mirror fails closed on what the destination rejects and on destructive schema
# changes, and never shows a row value while doing so; was regress/t/mirror_canary.sh.
#
# G3 (fail-closed: exit 3 with a named reason, nothing past the last committed batch
# acknowledged, the rerun resumes where the last batch ended) and G4 (value-free: the
# canary value is in no log) for the PostgreSQL mirror sink:
#   (a) the destination's copy of canary_t has CHECK constraint no_canary that rejects the
#       canary row (md5(v) <> md5 of the canary, so our own DDL never spells the canary).
#       A run reaching that row exits 3 naming SQLSTATE 23514, the table and the
#       constraint; the destination holds nothing of the halting batch, its
#       replicant.checkpoint did not move and the slot's confirmed_flush_lsn is at or
#       behind it. A second run halts the same way. After ALTER TABLE ... DROP CONSTRAINT
#       the rerun completes and source and destination are equal.
#   (b) a destination unique index that the source does not have: exit 3 naming SQLSTATE
#       23505 and the index (the server's DETAIL, "Key (...)=(value)", is dropped).
#   (c) ALTER TABLE canary_t DROP COLUMN on the source: exit 3 naming the table and the
#       column, twice, with nothing acknowledged; --on-destructive=apply drops the column
#       on the destination and completes, source == destination.
# The canary is in text, jsonb and bytea columns and in a text primary key of every row.
#
# The logs searched: every consumer run's stderr (with -v), the source server log
# (log_min_messages = debug1), the consumer's state files and the destination server log.
# The destination runs with log_statement = 'all' and log_parameter_max_length = 0: every
# SQL text the consumer sends is logged (a value spliced into SQL would show), while bind
# parameters and COPY data, which carry the values by design, are not. It also runs with
# log_error_verbosity = terse: by default the server itself adds DETAIL ("Failing row
# contains (...)") and CONTEXT ("COPY canary_t, line 1: ...") with the row to its own
# error reports; that is the destination DBA's setting, outside the consumer's control
# (it cannot change it without superuser), so it is switched off here and the test checks
# what the consumer controls: its SQL text, its stderr and its state.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Digest::MD5 qw(md5_hex);
use File::Find ();

my $CANARY     = 'CANARY-9f86d081';
my $CANARY_SQL = q{'CANARY-' || '9f86d081'};
my $CANARY_MD5 = md5_hex($CANARY);
my $SLOT       = 'canary_mirror';
my $work       = rp_work();

my $src = rp_cluster('src', 'log_min_messages = debug1');
my $dst = rp_cluster('dst', "log_statement = 'all'", 'log_parameter_max_length = 0',
	'log_error_verbosity = terse');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
rp_psql($src, "CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$;
CREATE TABLE canary_t (id int PRIMARY KEY, v text, doc jsonb, blob bytea, dropme numeric, tag int);
CREATE TABLE canary_k (k text PRIMARY KEY, secret text, n int);
CREATE TABLE fence (id serial PRIMARY KEY);");
# the destination's canary_t: as the source's, plus the constraint that rejects the canary
rp_psql($dst, "CREATE TABLE public.canary_t (id int PRIMARY KEY, v text, doc jsonb, blob bytea, dropme numeric,
	tag int, CONSTRAINT no_canary CHECK (md5(coalesce(v, '')) <> '$CANARY_MD5'));");
rp_replicant_ok([ -d => $srcconn, -S => $SLOT, '--create-slot' ], "slot $SLOT created");

my $dropme = 1;
# insert_rows(FIRST, LAST[, BARE]): rows with the canary inside their values (v is the
# canary itself when BARE)
sub insert_rows
{
	my ($first, $last, $bare) = @_;
	my $v = $bare ? 'canary()' : "canary() || '-' || g";
	my ($col, $val) = $dropme ? (', dropme', ', g * 1.5') : ('', '');
	rp_psql($src, "INSERT INTO canary_t (id, v, doc, blob, tag$col)
		SELECT g, $v, jsonb_build_object('s', canary(), 'g', g), convert_to(canary(), 'UTF8'), 0$val
		FROM generate_series($first, $last) g;
		INSERT INTO canary_k SELECT canary() || '-' || g, canary(), g FROM generate_series($first, $last) g;");
}
sub fence { return rp_fence($src, 'INSERT INTO fence DEFAULT VALUES'); }

my $runs = 0;
my $err;
# consumer(EXPECTED, ARG...): replicant to the mirror until it exits, stderr in run-N.err
sub consumer
{
	my ($expect, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", '-v', -d => $srcconn, -S => $SLOT, '--start', '-n',
		'--sink', "postgres:$dstconn", '--create-tables', '--state-dir', "$work/state", @args);
	$err = slurp("$work/run-$runs.err");
	is($rc, $expect, "run $runs (@args) exits $expect") or diag($err);
	return;
}
sub err_has
{
	my ($text, $what) = @_;
	ok(index($err, $text) >= 0, "$what: run $runs says: $text");
}
sub dst_ckpt { return rp_dst_checkpoint($dst, $SLOT); }
# G2/G3: the slot is at or behind the destination's checkpoint
sub acked_within
{
	my ($ck, $what) = @_;
	my $c = rp_slot_confirmed($src, $SLOT);
	ok($ck ne '' && rp_lsn_cmp($c, $ck) <= 0,
		"$what: the slot ($c) did not acknowledge past the destination checkpoint $ck");
}
sub dst_count { return rp_psql($dst, $_[0]); }

# ---- a clean start: rows with the canary inside their values go through
insert_rows(1, 20);
my $end = fence();
consumer(0, -E => $end);
rp_compare_tables($src, $dst, qw(canary_t canary_k));
is(dst_count("SELECT count(*) FROM canary_k WHERE md5(secret) = '$CANARY_MD5'"), 20,
	'the canary reached the destination (the log search below can find it)');

# ---- (a) the CHECK constraint rejects the canary row
insert_rows(21, 30);          # a transaction before it, in the same batch
insert_rows(31, 31, 'bare');  # v is the canary: rejected
insert_rows(32, 40);          # and transactions after it
rp_psql($src, "UPDATE canary_k SET n = -n; DELETE FROM canary_k WHERE k LIKE '%-1_'");
$end = fence();
my $ck_before = dst_ckpt();
my $first_halt;
for my $attempt (1, 2)
{
	consumer(3, -E => $end);
	err_has('SQLSTATE 23514 (check_violation)', "(a) attempt $attempt");
	err_has('canary_t', "(a) attempt $attempt");
	err_has('constraint "no_canary"', "(a) attempt $attempt");
	err_has('halted (sink)', "(a) attempt $attempt");
	is(dst_ckpt(), $ck_before, "(a) attempt $attempt: the destination checkpoint did not move");
	acked_within($ck_before, "(a) attempt $attempt");
	is(dst_count('SELECT count(*) FROM canary_t WHERE id > 20'), 0,
		"(a) attempt $attempt: no row of the halting batch in the destination");
	is(dst_count('SELECT count(*) FROM canary_k WHERE n < 0'), 0,
		"(a) attempt $attempt: no later transaction of the halting batch in the destination");
	my $halt = join("\n", grep { /error:/ } split /\n/, $err);
	if ($attempt == 1) { $first_halt = $halt; }
	else { is($halt, $first_halt, '(a) the second run halts the same way'); }
}
rp_psql($dst, 'ALTER TABLE public.canary_t DROP CONSTRAINT no_canary');
consumer(0, -E => $end);
rp_compare_tables($src, $dst, qw(canary_t canary_k));
my $ck_a = dst_ckpt();
ok($ck_a ne '' && rp_lsn_cmp($ck_a, $end) >= 0, "(a) the checkpoint $ck_a is past $end");

# ---- (b) a destination unique index the source does not have
rp_psql($dst, 'CREATE UNIQUE INDEX canary_k_n_uniq ON public.canary_k (n)');
rp_psql($src, "INSERT INTO canary_k SELECT canary() || '-dup-' || g, canary(), 7 FROM generate_series(1, 2) g");
$end = fence();
$ck_before = dst_ckpt();
consumer(3, -E => $end);
err_has('SQLSTATE 23505 (unique_violation)', '(b)');
err_has('canary_k', '(b)');
err_has('canary_k_n_uniq', '(b)');
is(dst_ckpt(), $ck_before, '(b) the destination checkpoint did not move');
acked_within($ck_before, '(b)');
rp_psql($dst, 'DROP INDEX public.canary_k_n_uniq');
consumer(0, -E => $end);
rp_compare_tables($src, $dst, qw(canary_k));

# ---- (c) a destructive schema change: DROP COLUMN on the source
rp_psql($src, 'ALTER TABLE canary_t DROP COLUMN dropme');
$dropme = 0;
insert_rows(1000, 1010);
rp_psql($src, 'UPDATE canary_t SET tag = tag + 1 WHERE id <= 5');
$end = fence();
$ck_before = dst_ckpt();
for my $attempt (1, 2)
{
	consumer(3, -E => $end);
	err_has('destructive schema change of table "public"."canary_t"', "(c) attempt $attempt");
	err_has('column "dropme" dropped', "(c) attempt $attempt");
	err_has('halted (schema_change)', "(c) attempt $attempt");
	is(dst_ckpt(), $ck_before, "(c) attempt $attempt: the destination checkpoint did not move");
	acked_within($ck_before, "(c) attempt $attempt");
	is(dst_count('SELECT count(*) FROM canary_t WHERE id >= 1000'), 0,
		"(c) attempt $attempt: no row after the schema change in the destination");
}
my $has_dropme = "SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.canary_t'::regclass "
  . "AND attname = 'dropme' AND NOT attisdropped";
is(dst_count($has_dropme), 1, "(c) the halted runs left the destination's column");
consumer(0, -E => $end, '--on-destructive=apply');
is(dst_count($has_dropme), 0, '(c) --on-destructive=apply dropped the column on the destination');
rp_compare_tables($src, $dst, qw(canary_t canary_k));
acked_within(dst_ckpt(), 'the end');

# ---- the search
rp_psql($src, 'SELECT pg_sleep(0.3)');    # let the walsenders' last words reach the log
my @searched = ((map { "$work/run-$_.err" } 1 .. $runs), $src->logfile, $dst->logfile);
File::Find::find(sub { push @searched, $File::Find::name if -f }, "$work/state");
my %text = map { $_ => slurp($_) } @searched;
my $dstlog = $text{ $dst->logfile };
# the search is not vacuous: the destination log has the consumer's statements and the error
like($dstlog, qr/statement: COPY/, "the destination log has the consumer's statements (log_statement = 'all')");
like($dstlog, qr/violates check constraint "no_canary"/, 'the destination log has the check violation');
(my $hex = unpack('H*', $CANARY)) =~ tr/A-F/a-f/;
for my $needle ([ $CANARY, 'the canary' ], [ '9f86d081', 'part of the canary' ], [ $hex, "the canary's hex" ])
{
	my @leaks = grep { index(lc $text{$_}, lc $needle->[0]) >= 0 } @searched;
	is("@leaks", '', "$needle->[1] is in none of the " . scalar(@searched) . ' files searched');
}

done_testing();
