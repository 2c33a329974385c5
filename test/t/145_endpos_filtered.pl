
# Copyright: see the project's LICENSE.

# --endpos past WAL that decodes to nothing ends at once (issue 46): a selected row, then
# 25,000 changes of a table the plugin filters out (-o include_tables), and --endpos just
# past them. The walsender sends a keepalive once it has decoded that WAL; it came while the
# row's batch was on its way (held for --batch-ms), and the consumer acted on a keepalive
# only when idle, so it waited for another, which the server sends after our next status
# update or its next WAL: measured on the issue's case, 10.0 s (the default --status-interval)
# where pg_recvlogical took 0.09 s; now 0.07 s. Here --batch-ms 3600000, -s 3600 and
# wal_sender_timeout = 0: the old consumer waited out the batch's hour (the harness's
# timeout ends it, the test fails); now a keepalive past the end position with every
# transaction received whole ends the run, and the drain delivers the batch. The slot is
# confirmed past the selected row at the end, and the row is in the sink.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;

my $work = rp_work();
my $src = rp_cluster('src', 'wal_sender_timeout = 0');
my $srcconn = rp_conninfo($src);
rp_psql($src, 'CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY, v text)');
for my $sink ("file:$work/a.jsonl", 'stdout')
{
	(my $kind = $sink) =~ s/:.*//;
	my $slot = "ep_$kind";
	rp_replicant_ok([ -d => $srcconn, -S => $slot, '--create-slot' ], "slot $slot created");
	my $a_end = rp_fence($src, "INSERT INTO a VALUES ((SELECT coalesce(max(id), 0) + 1 FROM a))");
	my $end = rp_fence($src, "INSERT INTO b SELECT g, 'x' FROM generate_series(1, 25000) g; DELETE FROM b");
	my $rc = rp_replicant("run-$kind", { stdout => "$work/run-$kind.out" }, -d => $srcconn, -S => $slot, '--start', '--endpos', $end, '-s', '3600', '--batch-ms', '3600000',
		'-o', 'include_tables=public.a', '--sink', $sink, '--state-dir', "$work/state-$kind");
	is($rc, 0, "$kind: --endpos past 25,000 filtered changes ends by itself (exit 0), not at a status interval")
	  or diag(slurp("$work/run-$kind.err"));
	ok(!rp_lsn_lt(rp_slot_confirmed($src, $slot), $a_end), "$kind: the slot is confirmed past the selected row");
}
like(slurp("$work/a.jsonl"), qr/"kind":"insert"/, 'the file holds the selected row');
like(slurp("$work/run-stdout.out"), qr/"kind":"insert"/, 'standard output holds the selected row');

done_testing();
