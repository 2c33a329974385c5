# Copyright: see the project's LICENSE.

# No row value reaches a log line, an error message or a metric; was regress/t/canary.sh.
#
# Proves G4 (value-free), with the fail-closed halts of G3 as the occasions to leak: rows
# carry a canary value (in text, jsonb and bytea columns and in a text primary key, some in
# a streamed transaction), then the consumer is made to stop in every way it can:
#   (a) a destructive schema change (ALTER TABLE DROP COLUMN) -> exit 3 naming the table and
#       the column; run again with nothing fixed -> the same halt, the log unchanged (it
#       holds nothing of the halting transaction) and the slot not acknowledged past the
#       log's checkpoint;
#   (b) an exec sink child that answers garbage (a row of data) instead of "ack N" -> exit 3,
#       nothing of the unit confirmed or checkpointed;
#   (c) a bad include_tables pattern, an unknown plugin option, a bad boolean -> exit 4
#       (refused: no retry mends it) naming the option;
#   (d) the slot dropped under a checkpoint -> exit 3, "does not exist".
# On the way, pg_recvlogical's connection options: -h -p -U override what -d says (a -d
# naming an unreachable server, or another user), and the PG* environment stands in for -d.
# The server runs with log_min_messages = debug1. Every run's stderr, the server log, the
# consumer's metrics page and its state files (checkpoint, relation view) are searched for
# the canary: it must never appear. The file sink's log, which is row data by design,
# must hold it (so the search would find it).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use Digest::MD5 qw(md5_hex);
use File::Find;
use HTTP::Tiny;

my $CANARY = 'CANARY-d41d8cd9';
# SQL that builds the canary without spelling it, so our own statements never carry it
my $CANARY_SQL = q{'CANARY-' || 'd41d8cd9'};
my $work = rp_work();
my $src  = rp_cluster('src', 'log_min_messages = debug1', "logical_decoding_work_mem = '64kB'");
my $srcconn = rp_conninfo($src);
my ($host, $port, $user) = ($src->host, $src->port, scalar getpwuid($<));

rp_psql($src, "CREATE TABLE canary_t (id int PRIMARY KEY, secret text, doc jsonb, blob bytea, dropme numeric);
CREATE TABLE canary_k (k text PRIMARY KEY, secret text);
CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$;");
rp_replicant_ok([ -d => $srcconn, -S => 'main', '--create-slot' ], 'slot main created');

# -h -p -U over a -d that names no reachable server; then the PG* environment alone
sub slots { return rp_psql($src, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'conn_opts'"); }
is(rp_replicant('conn', -d => "host=/nonexistent-$$ port=1 dbname=postgres", -h => $host, -p => $port, -U => $user,
		-S => 'conn_opts', '--create-slot'), 0, '-h -p -U override -d (exit 0)') or diag(slurp("$work/conn.err"));
is(slots(), '1', '-h -p -U: slot conn_opts created');
is(rp_replicant('conn-u', -d => $srcconn, -U => 'rp_no_such_role', -S => 'conn_opts', '--drop-slot'), 4,
	'-U over -d: exit 4 (the server refuses the role: no retry mends it)');
like(slurp("$work/conn-u.err"), qr/rp_no_such_role/, "-U overrides -d's user (the error names rp_no_such_role)");
is(rp_replicant('conn-env', { env => { PGHOST => $host, PGPORT => $port, PGUSER => $user, PGDATABASE => 'postgres' } },
		-S => 'conn_opts', '--drop-slot'), 0, 'the PG* environment reaches the connection (exit 0)')
  or diag(slurp("$work/conn-env.err"));
is(slots(), '0', 'PG* environment: slot conn_opts dropped');
# -W without a terminal (setsid): the password is read from stdin, and the run goes on
open(my $pw, '>', "$work/pw") or die $!;
print $pw "unused-with-trust\n";
close $pw;
is(rp_run('conn-W', { stdin => "$work/pw" }, 'setsid', '--wait', RpTest::replicant_bin(), '-W', -h => $host,
		-p => $port, -U => $user, -d => 'postgres', -S => 'conn_opts', '--create-slot'),
	0, '-W without a terminal reads the password from stdin and goes on') or diag(slurp("$work/conn-W.err"));
is(rp_replicant('conn-w', '-w', -h => $host, -p => $port, -U => $user, -d => 'postgres', -S => 'conn_opts', '--drop-slot'),
	0, '-w: slot conn_opts dropped') or diag(slurp("$work/conn-w.err"));

# insert_rows(FIRST, LAST, COL, VAL): rows of canary_t and canary_k, the canary in every
# value (and in canary_k's key)
sub insert_rows
{
	my ($first, $last, $col, $val) = @_;
	rp_psql($src, "INSERT INTO canary_t (id, secret, doc, blob$col)
		SELECT g, canary() || '-' || g, jsonb_build_object('s', canary(), 'g', g),
		       convert_to(canary(), 'UTF8')$val FROM generate_series($first, $last) g;
		INSERT INTO canary_k SELECT canary() || '-' || g, canary() FROM generate_series($first, $last) g;");
	return;
}
sub lsn { return rp_psql($src, 'SELECT pg_current_wal_lsn()'); }

my $runs = 0;
# consumer(EXPECTED_STATUS, WHAT, ARG...): replicant -vv (every event line is searched
# too), stderr in run-N.err; its stderr
sub consumer
{
	my ($expect, $what, @args) = @_;
	$runs++;
	my $rc = rp_replicant("run-$runs", '-vv', -d => $srcconn, @args);
	my $err = slurp("$work/run-$runs.err");
	is($rc, $expect, "run $runs ($what) exits $expect") or diag($err);
	return $err;
}
sub last_ckpt
{
	my ($file) = @_;
	my @ck = grep { /^\{"kind":"checkpoint"/ } split /\n/, slurp($file);
	return @ck ? $ck[-1] : '';
}

my $LOG = "$work/changes.jsonl";
my @FILE_ARGS = (-S => 'main', '--start', '-n', -o => 'streaming=on', '--sink', "file:$LOG",
	'--state-dir', "$work/state-main", '--batch-txns', '1');

# ---- a clean run first: the canary goes through, into the log and nowhere else
insert_rows(1, 3, ', dropme', ', 1.5');
rp_psql($src, 'INSERT INTO canary_t (id, secret) SELECT g, canary() FROM generate_series(10000, 12900) g');  # streamed
my $metrics = "$work/metrics.txt";
my $mport = PostgreSQL::Test::Cluster::get_free_port();
my $c = rp_consumer('run-metrics', '-vv', -d => $srcconn, @FILE_ARGS, '--metrics-port', $mport);
ok(rp_wait_until(sub { -e $LOG && slurp($LOG) =~ /"id":12900/ && slurp($LOG) =~ /"kind":"checkpoint"/ }, $c),
	'the clean run logged the rows and a checkpoint') or diag(slurp("$work/run-metrics.err"));
my $r = HTTP::Tiny->new(timeout => 10)->get("http://127.0.0.1:$mport/metrics");
ok($r->{success}, "the metrics page answers on port $mport");
open(my $mf, '>', $metrics) or die $!;
print $mf ($r->{success} ? rp_plain_metrics($r->{content}) : '');
close $mf;
$c->signal('TERM');
is($c->wait_exit, 0, 'the consumer stopped by SIGTERM exits 0') or diag(slurp("$work/run-metrics.err"));
like(slurp($metrics), qr/^replicant_transactions_total [1-9]/m, 'the metrics show transactions');
# the event lines of -vv were written (and are searched below with the other logs)
my $merr = slurp("$work/run-metrics.err");
like($merr, qr/^replicant: batch committed: [1-9][^\n]*, flushed by (txns|bytes|time|backlog|drain)$/m,
	'-vv said a batch committed, and what flushed it');
like($merr, qr/^replicant: checkpoint stored: end LSN /m, '-vv said a checkpoint stored');
like(slurp($LOG), qr/\Q$CANARY\E/, "the canary is in the file sink's log (the search below proves something)");
is(scalar(() = slurp($LOG) =~ /"table":"canary_t"/g), 2904, 'the clean run logged all 2904 canary_t rows');

# ---- (a) destructive schema change: halt, twice at the same place
rp_psql($src, 'ALTER TABLE canary_t DROP COLUMN dropme');
insert_rows(1000, 1002, '', '');
my $endpos = lsn();
my $before_log = md5_hex(slurp($LOG));
my ($ck_end) = last_ckpt($LOG) =~ /"end_lsn":"([0-9A-F\/]*)"/;
$ck_end //= '';
my @halts;
for my $attempt (1, 2)
{
	my $err = consumer(3, "(a) attempt $attempt", @FILE_ARGS, -E => $endpos);
	like($err, qr/\Qdestructive schema change of table "public"."canary_t"\E/, "(a) attempt $attempt: names the table");
	like($err, qr/\Qcolumn "dropme" dropped\E/, "(a) attempt $attempt: names the column");
	like($err, qr/\Qhalted (schema\E/, "(a) attempt $attempt: halted (schema)");
	# the library's event, said by -v: the relation named, no value
	like($err, qr/\Qschema change of table "public"."canary_t" at LSN\E/, "(a) attempt $attempt: the library's event");
	like($err, qr/\Qrefused, halting\E/, "(a) attempt $attempt: refused, halting");
	is(md5_hex(slurp($LOG)), $before_log, "(a) attempt $attempt: the halted run left the log unchanged");
	my $conf = rp_slot_confirmed($src, 'main');
	ok($ck_end ne '' && rp_lsn_cmp($conf, $ck_end) <= 0,
		"(a) attempt $attempt: the slot ($conf) not acknowledged past the log's checkpoint ($ck_end)");
	push @halts, join("\n", grep { /error:/ } split /\n/, $err);
}
is($halts[1], $halts[0], '(a) the second run halted as the first');
unlike(slurp($LOG), qr/"id":100[0-2],/, '(a) the log holds no row of the halting transaction');

# ---- (b) an exec sink child that answers a row of data instead of "ack N"
# (the child keeps the last data line it read and sends back its row part)
my $child = q~while IFS= read -r l; do case $l in {\"kind\":\"flush\"*) r=${prev#*\"new\":}; printf "%.200s\n" "$r" ;; *) prev=$l ;; esac; done~;
rp_replicant_ok([ -d => $srcconn, -S => 'execslot', '--create-slot' ], 'slot execslot created (after the schema change)');
insert_rows(2000, 2002, '', '');
my $bound = lsn();    # after the unit's commits (rp_unacked)
my $err = consumer(3, '(b) exec child answering data', -S => 'execslot', '--start', '-n', '--sink', "exec:$child",
	'--state-dir', "$work/state-exec");
like($err, qr/\Qexec sink's child answered something other than "ack 1"\E/, '(b) the halt says the child answered something other than "ack 1"');
like($err, qr/\Qhalted (sink\E/, '(b) halted (sink)');
is(rp_unacked($src, 'execslot', "$work/state-exec/execslot.checkpoint", $bound), '',
	'(b) nothing of the unit the child never acknowledged was confirmed or checkpointed');

# ---- (c) options the plugin refuses: an error naming the option, nothing acknowledged
$err = consumer(4, '(c) include_tables=a.b.c', -S => 'execslot', '--start', '-n', -o => 'include_tables=a.b.c',
	'--state-dir', "$work/state-opt");
like($err, qr/\Qinvalid table pattern "a.b.c" in option "include_tables"\E/, '(c) names the bad include_tables pattern');
$err = consumer(4, '(c) no_such_option=1', -S => 'execslot', '--start', '-n', -o => 'no_such_option=1',
	'--state-dir', "$work/state-opt");
like($err, qr/\Qunrecognized option "no_such_option"\E/, '(c) names the unknown option');
$err = consumer(4, '(c) streaming=perhaps', -S => 'execslot', '--start', '-n', -o => 'streaming=perhaps',
	'--state-dir', "$work/state-opt");
like($err, qr/\Qboolean option "streaming"\E/, '(c) names the bad boolean option');
is(rp_unacked($src, 'execslot', "$work/state-opt/execslot.checkpoint", $bound), '',
	'(c) nothing confirmed or checkpointed');

# ---- (d) the slot is gone under a checkpoint
rp_psql($src, "SELECT pg_drop_replication_slot('main')");
$err = consumer(3, '(d) slot dropped', @FILE_ARGS);
like($err, qr/\Qreplication slot "main" does not exist\E/, '(d) says the slot does not exist');
like($err, qr/\Qhalted (gap\E/, '(d) halted (gap)');
is(md5_hex(slurp($LOG)), $before_log, '(d) the halted run left the log unchanged');

# ---- the search
# the walsenders' last words in the server log: once none is left (the script slept 0.5 s)
ok(rp_wait_until(sub { rp_psql($src, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender'") == 0 }),
	'no walsender left (their last log lines written)');
my @searched = (glob("$work/run-*.err"), $src->logfile, $metrics);
find({ wanted => sub { push @searched, $File::Find::name if -f $_ }, no_chdir => 1 }, glob("$work/state-*"));
my @leaks = grep { slurp($_) =~ /\Q$CANARY\E/ } @searched;
is(scalar @leaks, 0, 'the canary is in none of the ' . scalar(@searched) . ' files searched') or diag("@leaks");
# the canary's second half alone, in case a message cut or re-encoded it
@leaks = grep { slurp($_) =~ /d41d8cd9/ } @searched;
is(scalar @leaks, 0, 'no part of the canary (d41d8cd9) in them either') or diag("@leaks");

done_testing();
