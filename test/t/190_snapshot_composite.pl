# Copyright: see the project's LICENSE.

# Composite-typed columns are copied by the initial snapshot, in the stream's encoding; was
# regress/t/snapshot_composite.sh.
#
# Source table comp_t has a composite column whose fields are an int, a text, an int[], a
# nested composite (bool, bigint, enum), a domain, a numeric and a timestamptz, and a column
# of a type that lost an attribute (ALTER TYPE ... DROP ATTRIBUTE: the dropped field is not
# sent). Rows: every field set, special values (NaN, infinity, an empty array, an array with
# a NULL), a NULL composite, a composite whose fields are all NULL (not the same thing), a
# nested NULL.
#   (1) --snapshot into the mirror (--create-tables; the types exist on the destination),
#       then the same values inserted again under other keys and streamed: the destination
#       equals the source row for row (the text of every row);
#   (2) --snapshot into the file sink, then the same stream: each snapshot row's composite
#       values render exactly as the streamed insert of the same values (one encoding);
#   (3) a composite with a field the plugin sends as text plus type OID (xml: no binary form
#       to take inside a record) still stops the copy (exit 4, a configuration the snapshot
#       cannot copy), naming the table and the column and why.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP;

my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);

my $TYPES = q{CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TYPE inner_t AS (x bool, y bigint, m mood);
CREATE TYPE outer_t AS (a int, b text, c int[], d inner_t, e posint, f numeric, g timestamptz);
CREATE TYPE thin_t AS (keep1 int, gone text, keep2 text);
ALTER TYPE thin_t DROP ATTRIBUTE gone;
CREATE TYPE withxml_t AS (a int, x xml);};
rp_psql($src, $TYPES);
rp_psql($dst, $TYPES);
rp_psql($src, q{CREATE TABLE comp_t (id int PRIMARY KEY, v outer_t, w thin_t);
CREATE TABLE xml_t (id int PRIMARY KEY, v withxml_t);
INSERT INTO xml_t VALUES (1, ROW(1, '<a/>'));
CREATE TABLE rows_in (id int, v outer_t, w thin_t);
INSERT INTO rows_in VALUES
 (1, ROW(1, 'one', '{1,2,3}', ROW(true, 9000000000, 'ok'), 5, 1.50, '2024-05-01 12:00:00+02'), ROW(1, 'k')),
 (2, ROW(-2, 'q"uo\te,(x)', '{}', ROW(false, -1, 'sad'), 1, 'NaN', 'infinity'), ROW(NULL, 'n')),
 (3, ROW(3, NULL, '{NULL,4}', NULL, NULL, -0.001, '-infinity'), NULL),
 (4, NULL, ROW(NULL, NULL)),
 (5, ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL), ROW(4, '')),
 (6, ROW(6, '', NULL, ROW(NULL, NULL, NULL), 2, 1e30, '1999-12-31 23:59:59.999999+00'), ROW(6, 'six'));
INSERT INTO comp_t SELECT id, v, w FROM rows_in;});

sub endpos { return rp_psql($src, 'SELECT pg_current_wal_lsn()'); }

# (1) and (2): the snapshots (each run ends at its consistent point: -E is behind it).
# A run learns that it passed -E from a keepalive, which the walsender sends when WAL comes
# after what the consumer confirmed; on an idle server that was the next autovacuum (a
# snapshot run took 75 s here once, 13 s another time): a CHECKPOINT a second while the
# run goes on brings that WAL (it decodes to no transaction).
sub snapshot_ok
{
	my ($test, @args) = @_;
	(my $name = $test) =~ s/[^A-Za-z0-9_.-]+/_/g;
	my $p = rp_consumer($name, @args);
	rp_poll(1, sub { return 1 unless $p->alive; rp_psql($src, 'CHECKPOINT'); return 0; });
	$p->kill9_alive;
	is($p->status, 0, $test) or diag(slurp("$work/$name.err"));
	return;
}
my $e = endpos();
snapshot_ok('the snapshot into the mirror', -d => $srcconn, -S => 'comp_m', '--create-slot', '--snapshot', '--start',
	'--create-tables', -o => 'include_tables=public.comp_t', '--sink', "postgres:$dstconn", '--state-dir', "$work/s1",
	-E => $e, '--no-loop');
snapshot_ok('the snapshot into the file sink', -d => $srcconn, -S => 'comp_f', '--create-slot', '--snapshot', '--start',
	-o => 'include_tables=public.comp_t', '--sink', "file:$work/log.jsonl", '--state-dir', "$work/s2",
	-E => $e, '--no-loop');
# the same values again, streamed
rp_psql($src, 'INSERT INTO comp_t SELECT id + 1000, v, w FROM rows_in');
$e = endpos();
rp_replicant_ok([ -d => $srcconn, -S => 'comp_m', '--start', '--sink', "postgres:$dstconn",
		'--state-dir', "$work/s1", -E => $e, '--no-loop' ], 'streaming into the mirror');
rp_replicant_ok([ -d => $srcconn, -S => 'comp_f', '--start', '--sink', "file:$work/log.jsonl",
		'--state-dir', "$work/s2", -E => $e, '--no-loop' ], 'streaming into the file sink');

my $q = 'SELECT count(*), md5(string_agg(c::text, $$|$$ ORDER BY id)) FROM comp_t c';
my $a = rp_psql($src, $q);
is(rp_psql($dst, $q), $a, '(1) the mirror equals the source row for row (the text of every row)');
like($a, qr/^12\|/, '(1) the source has 12 rows (6 from the snapshot, 6 streamed)');
# a NULL composite and a composite of NULLs stay apart
is(rp_psql($dst, 'SELECT v IS NULL AND num_nulls(v) = 1 FROM comp_t WHERE id = 4'), 't',
	'(1) the NULL composite stays NULL on the destination');
is(rp_psql($dst, 'SELECT num_nulls(v) = 0 FROM comp_t WHERE id = 5'), 't',
	'(1) the composite of NULL fields stays a (non-NULL) composite on the destination');

# (2) each snapshot row's composites as the streamed insert of the same values
my (%snap, %stream);
for my $line (split /\n/, slurp("$work/log.jsonl"))
{
	my $rec = decode_json($line);
	my $kind = $rec->{kind} // '';
	if ($kind eq 'row') { $snap{ $rec->{record}{id} } = $rec->{record}; }
	elsif ($kind eq 'insert' && ($rec->{table} // '') eq 'comp_t') { $stream{ $rec->{new}{id} } = $rec->{new}; }
}
is(scalar keys %snap,   6, '(2) the file sink has 6 snapshot rows');
is(scalar keys %stream, 6, '(2) the file sink has 6 streamed inserts');
my $json = JSON::PP->new->canonical->allow_nonref;
my @diff;
for my $k (1 .. 6)
{
	for my $col (qw(v w))
	{
		my $s = $json->encode($snap{$k} ? $snap{$k}{$col} : '(no row)');
		my $t = $json->encode($stream{ $k + 1000 } ? $stream{ $k + 1000 }{$col} : '(no row)');
		push @diff, "row $k column $col: snapshot $s vs stream $t" if $s ne $t;
	}
}
is(scalar @diff, 0, "(2) the 6 snapshot rows' composites render as their streamed inserts")
  or diag(join("\n", @diff));

# (3) a field with no binary form to convert: refused, naming the column
is(rp_replicant('xml', -d => $srcconn, -S => 'comp_x', '--create-slot', '--snapshot', '--start', '--create-tables',
		-o => 'include_tables=public.xml_t', '--sink', "postgres:$dstconn", '--state-dir', "$work/s3", '--no-loop'),
	4, '(3) a composite with an xml field stops the copy with exit 4 (refused)');
like(slurp("$work/xml.err"), qr/xml_t.*column "v".*no snapshot conversion/,
	'(3) the message names the table and the column and why');

done_testing();
