
# Copyright: see the project's LICENSE.

# The JSON format through the streaming protocol (pg_recvlogical), where records are batched
# into messages up to frame_size: the output must still be exactly one JSON object per line,
# every record present once, in order, and equal to what the SQL interface renders. Was
# regress/t/recvlogical_json.sh.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use JSON::PP;

my $work = rp_work();
my $src  = rp_cluster('src');
my $conn = rp_conninfo($src);
my $recvlogical = $src->installed_command('pg_recvlogical');

rp_psql($src, 'CREATE EXTENSION replicant; CREATE TABLE t(id int primary key, v text)');
is(rp_run('create-slot', $recvlogical, '-d', $conn, '-S', 'j', '--create-slot', '-P', 'replicant'),
	0, 'pg_recvlogical creates slot j with the replicant plugin') or diag(slurp("$work/create-slot.err"));
rp_psql($src, "INSERT INTO t SELECT g, repeat('v', g % 50) FROM generate_series(1,3000) g;
	UPDATE t SET v = 'x' WHERE id < 5;
	SELECT pg_logical_emit_message(false, 'p', 'm');
	DELETE FROM t WHERE id % 7 = 0");
my $end = rp_psql($src, 'SELECT pg_current_wal_insert_lsn()');
my $sql = rp_psql($src, "SELECT data FROM pg_logical_slot_peek_changes('j', '$end', NULL, 'format', 'json')");
is(rp_run('stream', $recvlogical, '-d', $conn, '-S', 'j', '--start', '-o', 'format=json', '-o', 'frame_size=4096',
		"--endpos=$end", '-f', "$work/stream.jsonl"),
	0, "pg_recvlogical streams to $end with frame_size=4096") or diag(slurp("$work/stream.err"));

my @sql    = grep { /\S/ } split /\n/, $sql;
my @stream = grep { /\S/ } split /\n/, (-e "$work/stream.jsonl" ? slurp("$work/stream.jsonl") : '');
my $json = JSON::PP->new;
is(scalar(grep { !eval { $json->decode($_); 1 } } @sql), 0, 'every line of the SQL interface is one whole JSON object');
is(scalar(grep { !eval { $json->decode($_); 1 } } @stream), 0, 'every streamed line is one whole JSON object');
my %kinds;
for (@stream)
{
	my $o = eval { $json->decode($_) } or next;
	$kinds{ $o->{kind} // '' }++;
}
is($kinds{insert}, 3000, '3000 inserts streamed');
is($kinds{update}, 4,    '4 updates streamed');
is($kinds{delete}, 428,  '428 deletes streamed');
is_deeply(\@stream, \@sql, "the streamed JSON equals the SQL interface's, line by line");

done_testing();
