
# Copyright: see the project's LICENSE.

# The nats tests' reader (regress/tools/nats_dump.c) gets its answer from the cluster while
# the server it connected to first cannot give one; was regress/t/nats_dump_detached.sh.
#
# The failure this guards against: in t/nats_cluster.sh (now test/t/300_nats_cluster.pl)
# (c), after two nodes were restarted, the node the reader had connected to answered every
# stream info request with "JetStream system temporarily unavailable" (10008) from its own
# view of the meta group, while the other nodes served the stream (the consumer published
# on). The reader retried
# on that one connection for its 120 s and failed the step. It now connects again, to the
# next server, after 5 s of such answers.
#
# Here the server that cannot answer is a JetStream node configured as a member of a
# 3-node cluster whose other members never start: it has no meta leader, ever. First the
# test shows that a reader that reaches only that node gets no answer within 15 s (so the
# next check proves something); then a reader given that node first (NATS_DUMP_IN_ORDER)
# and the real cluster's nodes after it must print the real stream's info within 90 s,
# well inside its own 120 s retry limit.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use RpTest;
use Test::More;
use File::Path qw(mkpath);
use HTTP::Tiny;

my $STREAM = 'DETACHED';
my $work   = rp_work();
my $nats   = RpTest::Nats->start(3);
ok($nats->meta_leader ne '', 'a 3-node NATS cluster with a meta leader');
my ($rc) = $nats->tool($STREAM, 'create', 'detached.x', -1, 3);
is($rc, 0, "stream $STREAM created with 3 replicas");
($rc) = $nats->tool($STREAM, 'publish', 'detached.x.a', 'one');
is($rc, 0, 'one message published');

# the detached node: a cluster member whose two peers (free ports nobody listens on) never come
my ($lport, $lcport, $lmon, $r1, $r2) = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 5;
mkpath("$work/lone/store");
open(my $fh, '>', "$work/lone/nats.conf") or die $!;
print $fh <<"CONF";
server_name: lone
listen: 127.0.0.1:$lport
http: 127.0.0.1:$lmon
jetstream {
  store_dir: "$work/lone/store"
  max_memory_store: 64MB
  max_file_store: 256MB
}
cluster {
  name: rp_detached
  listen: 127.0.0.1:$lcport
  routes: ["nats-route://127.0.0.1:$r1", "nats-route://127.0.0.1:$r2"]
}
CONF
close $fh;
my $lone_proc = RpTest::Proc->start(name => 'lone', cmd => [ 'nats-server', '-c', "$work/lone/nats.conf" ],
	stdout => "$work/lone/server.log", stderr => "$work/lone/server.log");
ok(rp_wait_until(sub { HTTP::Tiny->new(timeout => 2)->get("http://127.0.0.1:$lmon/varz")->{success} }, $lone_proc),
	'the detached node starts');
my $lone = "nats://127.0.0.1:$lport";
my $dump = RpTest::Nats::dump_tool();

# the detached node alone: no answer within 15 s (the reader keeps retrying it)
my $p = RpTest::Proc->start(name => 'lone-info', cmd => [ $dump, $lone, $STREAM, 'info' ],
	env => { NATS_DUMP_IN_ORDER => 1 }, stdout => "$work/lone.out", stderr => "$work/lone.err");
my $st = $p->wait_exit(15);
ok(!defined $st || $st != 0, 'the detached node alone gives no stream info within 15 s (else this test proves nothing)')
  or diag(slurp("$work/lone.out"));
$p->kill9_alive;

# the detached node first, the cluster after it: the cluster's answer
my $t0 = time();
$p = RpTest::Proc->start(name => 'both-info', cmd => [ $dump, "$lone," . $nats->urls, $STREAM, 'info' ],
	env => { NATS_DUMP_IN_ORDER => 1 }, stdout => "$work/both.out", stderr => "$work/both.err");
$st = $p->wait_exit(90);
is($st, 0, 'the reader given the detached node first, then the cluster, answers within 90 s')
  or diag(slurp("$work/both.err"));
$p->kill9_alive;
like(slurp("$work/both.out"), qr/"last_seq":1/, "it prints the cluster's stream info (last_seq 1)");
note(sprintf('answered in %d s', time() - $t0));

done_testing();
