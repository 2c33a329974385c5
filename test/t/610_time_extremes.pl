# Copyright: see the project's LICENSE.

# Every date and time value PostgreSQL accepts crosses the whole path exactly; was
# regress/t/time_extremes.sh.
#
# The values: PostgreSQL's first and last timestamp, timestamptz, date, time, timetz and
# interval, 'infinity' and '-infinity', and the timestamps from 294247-01-10 04:00:54.775807
# to 294276-12-31 23:59:59.999999 that int64 microseconds since 1970 cannot hold (wire
# protocol version 2 carries them in its extended range, docs/protocol.md). The tables and
# rows: test/fixtures/time_extremes.sql, the streamed changes time_extremes_stream.sql.
#
# Proves G1 (nothing lost or changed) and G3 (no halt on a value PostgreSQL accepts) for:
#   - the mirror (postgres sink, --create-tables): the initial snapshot (--snapshot) of rows
#     that exist before the slot, through the binary pass-through (ext_b: built-in types
#     only) and the converted-records path (ext_t: a domain over timestamptz makes the
#     snapshot re-encode the COPY data into wire encodings), then the stream: binary COPY
#     for inserts (ext_b), text COPY (ext_t), UPDATE and DELETE matched on extreme keys
#     (ext_k: a timestamptz primary key) and on whole extreme rows (ext_full: REPLICA
#     IDENTITY FULL). Afterwards every table of the destination equals the source's.
#   - live aggregates over the same rows: max and min of an extreme timestamptz measure, by
#     an int and by an extreme date dimension (seeded from the table, then folded from the
#     stream): each output table equals the aggregate computed by the source.
#   - the file sink with --snapshot: every snapshot row and every streamed insert of ext_t
#     and ext_b, read back from its JSON (ISO 8601 years "+294276", "-4713" for 4714 BC),
#     equals the source row value for value (IS NOT DISTINCT FROM;
#     test/fixtures/time_extremes_log_check.sql).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my @TABLES = qw(ext_t ext_b ext_k ext_full);
my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
my $log = "$work/log.jsonl";

rp_psql($src, rp_fixture('time_extremes.sql'));
# --create-tables makes the tables, not the types they use
rp_psql($dst, 'CREATE DOMAIN public.tsd AS timestamptz');

# ---- the mirror (snapshot, then stream, with aggregates) and the file sink (snapshot, stream)
my $mirror = rp_consumer('mirror', { stdout => "$work/mirror.out" },
	-d => $srcconn, -S => 'ext_mirror', '--create-slot', '--snapshot', '--start', '--create-tables',
	'--sink', "postgres:$dstconn", '--state-dir', "$work/state-mirror", '-s', '1', '-v',
	'--aggregate', 'name=kmax source=public.ext_k dims=v measure=k agg=max output=table:agg.kmax',
	'--aggregate', 'name=kmin source=public.ext_k dims=d measure=k agg=min output=table:agg.kmin');
my $file = rp_consumer('file', { stdout => "$work/file.out" },
	-d => $srcconn, -S => 'ext_file', '--create-slot', '--snapshot', '--start',
	'--sink', "file:$log", '--state-dir', "$work/state-file", '-s', '1', '-v');

# the consumers' state, for a failed wait
sub consumers
{
	return join("\n", map {
			my ($p, $n) = @$_;
			"$n: " . ($p->alive ? 'running' : 'exited ' . $p->status) . "\n" . slurp("$work/$n.err")
	} ([ $mirror, 'mirror' ], [ $file, 'file' ]));
}

# the stream: only once both slots exist (their snapshots hold the rows above)
ok(rp_wait_until(sub {
			rp_psql($src, "SELECT count(*) FROM pg_replication_slots
				WHERE slot_name IN ('ext_mirror', 'ext_file')") == 2 }, $mirror, $file),
	'both slots exist (neither consumer exited before)') or diag(consumers());
rp_psql($src, rp_fixture('time_extremes_stream.sql'));
my $fence = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');

# file_ck(): the end_lsn of the file log's last checkpoint line, '' before the first
sub file_ck
{
	return '' unless -e $log;
	my @c = slurp($log) =~ /^\{"kind":"checkpoint".*?"end_lsn":"([0-9A-F]+\/[0-9A-F]+)"/mg;
	return @c ? $c[-1] : '';
}
ok(rp_wait_dst_checkpoint($dst, 'ext_mirror', $fence, $mirror),
	"the mirror checkpointed the fence $fence (it did not exit before)") or diag(consumers());
ok(rp_wait_until(sub { my $c = file_ck(); $c ne '' && !rp_lsn_lt($c, $fence) }, $file),
	"the file log has a checkpoint line at or past the fence $fence (it did not exit before)")
  or diag(consumers());
like(slurp("$work/mirror.err"), qr/snapshot complete/, 'the mirror consumer reported its snapshot complete');
ok($mirror->alive && $mirror->signal('TERM'), 'SIGTERM sent to the mirror consumer (still running)');
ok($file->alive && $file->signal('TERM'), 'SIGTERM sent to the file consumer (still running)');
is($mirror->wait_exit, 0, 'the mirror consumer exits 0 after SIGTERM') or diag(slurp("$work/mirror.err"));
is($file->wait_exit, 0, 'the file consumer exits 0 after SIGTERM') or diag(slurp("$work/file.err"));

# ---- the mirror equals the source, table by table (the output settings fixed)
my $set = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = postgres;"
  . ' SET extra_float_digits = 3;';
my $rows = rp_compare_tables($src, $dst, @TABLES, { settings => $set });
# the extremes really are there (the comparison above is not vacuous)
is(rp_psql($dst, "SELECT count(*) FROM public.ext_b
		WHERE ts = '294276-12-31 23:59:59.999999' OR d = '5874897-12-31'"),
	2, "the destination's ext_b holds the two extreme rows (294276-12-31 23:59:59.999999, 5874897-12-31)");

# ---- the aggregates equal the source's
sub agg_same
{
	my ($name, $qsrc, $qdst) = @_;
	my @a = sort split /\n/, rp_psql($src, "$set $qsrc");
	my @b = sort split /\n/, rp_psql($dst, "$set $qdst");
	my ($a, $b) = (join("\n", @a), join("\n", @b));
	ok(@a && $a eq $b, "aggregate $name equals the one the source computes (" . scalar(@a) . ' groups)')
	  or diag("source:\n$a\ndestination:\n$b");
}
agg_same('kmax', "SELECT v || '|' || max(k)::text FROM ext_k GROUP BY v",
	"SELECT v || '|' || max_k::text FROM agg.kmax");
agg_same('kmin', "SELECT coalesce(d::text, '~') || '|' || min(k)::text FROM ext_k GROUP BY d",
	"SELECT coalesce(d::text, '~') || '|' || min_k::text FROM agg.kmin");

# ---- the file log: each ext_t and ext_b row once, its values those of the source
my ($ret, $out, $err) = $src->psql('postgres', rp_fixture('time_extremes_log_check.sql'),
	extra_params => [ '-v', 'ON_ERROR_STOP=1', '-v', "log=$log" ]);
is($ret, 0, 'the file log check (time_extremes_log_check.sql) runs') or diag($err);
like($out, qr/^rows 24$/m, 'the file log check sees the 24 rows of ext_t and ext_b') or diag($out);
my @bad = grep { /^bad / } split /\n/, $out;
is(scalar @bad, 0, 'every ext_t and ext_b row is in the file log once (snapshot or stream), '
	  . 'its values equal to the source row') or diag(join("\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)]));
like(slurp($log), qr/"\+294276-12-31T23:59:59\.999999Z"/,
	'the file log spells the last timestamp +294276-12-31T23:59:59.999999Z');

note('mirror equal on ' . join(', ', map { "$_ ($rows->{$_} rows)" } @TABLES));
done_testing();
