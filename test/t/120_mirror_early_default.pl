
# Copyright: see the project's LICENSE.

# By default the mirror streams a mid-sized transaction and applies it early (issue 13);
# was regress/t/mirror_early_default.sh.
#
# The mirror lowers logical_decoding_work_mem for its own walsender session, so that a large
# transaction streams in blocks the destination applies while the server still decodes the
# rest (docs/sinks.md, "Early apply"). bench/mirror.sh measured the catch-up faster with 4MB
# than with the 16MB the default was before. The source here keeps the server's 64MB
# default. Two slots hold the same backlog: a table made known by a first small
# transaction, then one transaction of 60,000 inserts (about 11 MB in the reorder buffer)
# and one deleting 45,000 of those rows (about 7 MB): both above 4MB, below 16MB.
#   --decoding-work-mem server   nothing is streamed: no early apply (the contrast: the
#                                server's setting, which the consumer must leave alone, is 64MB)
#   default options              the session says 4096kB, both large transactions are
#                                applied early, block by block
# Each run goes to the end position, and the destination must equal the source after each.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $src  = rp_cluster('src');
my $dst  = rp_cluster('dst');
my $srcconn = rp_conninfo($src);
my $dstconn = rp_conninfo($dst);
is(rp_psql($src, 'SHOW logical_decoding_work_mem'), '64MB', "the source's logical_decoding_work_mem is the server default 64MB");

rp_psql($src, 'CREATE TABLE mid_t (id bigint PRIMARY KEY, v text NOT NULL)');
rp_replicant_ok([ -d => $srcconn, -S => $_, '--create-slot' ], "slot $_ created") for qw(early_server early_default);
rp_psql($src, "INSERT INTO mid_t VALUES (0, 'known');
	INSERT INTO mid_t SELECT g, md5(g::text) FROM generate_series(1, 60000) g;
	DELETE FROM mid_t WHERE id % 4 <> 0;");
my $end = rp_psql($src, 'SELECT pg_current_wal_lsn()');

# run(SLOT, NAME, OPTION...): catch SLOT up to the end into the destination, -v to NAME.err;
# returns (transactions applied early, blocks)
sub run
{
	my ($slot, $name, @opts) = @_;
	is(rp_replicant($name, -d => $srcconn, -S => $slot, '-n', '--start', -E => $end, '--sink', "postgres:$dstconn",
			'--create-tables', '--state-dir', "$work/state-$name", '-v', @opts),
		0, "the $name run exits 0") or diag(slurp("$work/$name.err"));
	rp_compare_tables($src, $dst, 'mid_t');
	my ($sum) = grep { /streamed transactions applied early/ } split /\n/, slurp("$work/$name.err");
	ok(defined $sum, "the $name run printed its -v summary");
	my ($early, $blocks) = ($sum // '') =~ /; (\d+) streamed transactions applied early \((\d+) blocks/;
	ok(defined $early && defined $blocks, "the $name run's summary parses") or diag($sum // 'none');
	rp_psql($dst, 'DROP TABLE public.mid_t; DROP SCHEMA replicant CASCADE');
	return ($early // -1, $blocks // -1, slurp("$work/$name.err"));
}

my ($early, $blocks, $err) = run('early_server', 'server', '--decoding-work-mem', 'server');
unlike($err, qr/logical_decoding_work_mem of this session/,
	"with --decoding-work-mem server the consumer leaves the session's logical_decoding_work_mem alone");
ok($early == 0 && $blocks == 0,
	"with the server's 64MB nothing is applied early ($early transactions, $blocks blocks; else the workload is too large to tell the defaults apart)");

($early, $blocks, $err) = run('early_default', 'default');
like($err, qr/logical_decoding_work_mem of this session: 4096kB$/m,
	"by default the session's logical_decoding_work_mem is 4096kB");
ok($early == 2 && $blocks >= 2, "by default the insert and the delete are applied early ($early transactions, $blocks blocks)");

done_testing();
