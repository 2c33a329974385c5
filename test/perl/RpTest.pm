
# Copyright: see the project's LICENSE.

=pod

=head1 NAME

RpTest - what replicant's end-to-end TAP tests (test/t/*.pl) share

=head1 SYNOPSIS

  use strict;
  use warnings;
  use lib 'test/perl';
  use RpTest;
  use Test::More;

  my $src = rp_cluster('src');                  # started, logical decoding on
  my $dst = rp_cluster('dst', 'fsync = on');    # extra postgresql.conf lines
  rp_replicant_ok([-d => $src->connstr, -S => 'm', '--create-slot'], 'slot m created');
  my $c = rp_consumer('m1', -d => $src->connstr, -S => 'm', '--start', ...);
  ok($c->kill9_alive, 'consumer killed while running');
  my $end = rp_fence($src, 'INSERT INTO fence DEFAULT VALUES');
  rp_compare_tables($src, $dst, qw(t audit));
  done_testing();

=head1 DESCRIPTION

Clusters come from PostgreSQL::Test::Cluster: the installation is the one whose bin/
holds the pg_config named by PG_CONFIG (install_path), else the first pg_config on
PATH. One timeout bounds every wait: RP_TEST_TIMEOUT seconds (default 300), which is
also PostgreSQL::Test::Utils' timeout (PG_TEST_TIMEOUT_DEFAULT). The waits only guard
against a hang; none of them sets a pace.

Every process started here runs in a process group of its own and is killed
(SIGKILL, with its group) when the test exits. The work directory (rp_work) and the
clusters' directories are kept when a check failed.

=cut

package RpTest;

use strict;
use warnings;

use Cwd qw(abs_path);
use IO::Handle;
use File::Path ();
use Exporter 'import';
use File::Basename qw(dirname basename);
use File::Path qw(mkpath rmtree);
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(usleep time);

our ($ROOT, $TIMEOUT, $INSTALL_PATH);

BEGIN
{
	$ROOT = abs_path(dirname(__FILE__) . '/../..');
	$TIMEOUT = $ENV{RP_TEST_TIMEOUT} || 300;
	# one timeout: PostgreSQL::Test::Utils reads this in its INIT block
	$ENV{PG_TEST_TIMEOUT_DEFAULT} = $TIMEOUT;

	my $pg_config = $ENV{PG_CONFIG} || 'pg_config';
	my $bindir = `$pg_config --bindir 2>/dev/null`;
	die "RpTest: could not run $pg_config --bindir (set PG_CONFIG)\n" if $? != 0;
	chomp $bindir;
	# install_path: the installation's top directory (bin/ and lib/ under it)
	$INSTALL_PATH = dirname($bindir);
	if (!$ENV{PG_REGRESS})
	{
		my $pkglib = `$pg_config --pkglibdir`;
		chomp $pkglib;
		$ENV{PG_REGRESS} = "$pkglib/pgxs/src/test/regress/pg_regress";
	}
	# Cluster.pm puts its tmp_check/ (data directories, logs) under TESTDIR
	$ENV{TESTDIR} ||= "$ROOT/test";
}

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(
  rp_root rp_timeout rp_work rp_fixture rp_fixture_section slurp
  rp_cluster rp_pg_config rp_test_major rp_psql rp_psql_bg rp_session rp_conninfo
  rp_replicant rp_replicant_ok rp_replicant_peak rp_consumer rp_run rp_plain_metrics
  rp_wait_until rp_poll rp_wait_file_match rp_file_size rp_last_line
  rp_fence rp_lsn_cmp rp_lsn_lt rp_slot_confirmed rp_wait_confirmed
  rp_dst_checkpoint rp_wait_dst_checkpoint rp_unacked rp_table_digest rp_compare_tables
  rp_slow_new_tables rp_slow_off rp_cold_backup rp_standby);

sub rp_root    { return $ROOT; }
sub rp_timeout { return $TIMEOUT; }
sub slurp      { return PostgreSQL::Test::Utils::slurp_file(@_); }

# The replicant binary: RP_REPLICANT, else the one built in this tree.
sub replicant_bin { return $ENV{RP_REPLICANT} || "$ROOT/consumer/replicant"; }

# rp_work(): the test's work directory (files, logs of the consumers), created once;
# removed at exit when every check passed, kept otherwise.
my $work;

sub rp_work
{
	return $work if defined $work;
	my $name = basename($0);
	$name =~ s/\.[^.]+$//;
	$work = "$PostgreSQL::Test::Utils::tmp_check/work_$name";
	rmtree($work);
	mkpath($work);
	return $work;
}

# rp_fixture(NAME): the text of test/fixtures/NAME
sub rp_fixture
{
	my ($name) = @_;
	return slurp("$ROOT/test/fixtures/$name");
}

# rp_fixture_section(FILE, NAME): the section of test/fixtures/FILE headed
# "-- == NAME ==" (to the next such line), without its whole-line comments; dies when
# there is none
sub rp_fixture_section
{
	my ($file, $name) = @_;
	my ($text) = rp_fixture($file) =~ /^-- == \Q$name\E ==\n(.*?)(?=^-- == |\z)/ms;
	die "no section $name in test/fixtures/$file\n" unless defined $text;
	$text =~ s/^--.*\n//mg;
	return $text;
}

# ---------------------------------------------------------------- clusters

# The settings every test server gets (regress/logical.conf, and output_plugin_libraries
# where the server knows it), as regress/lib.sh rp_server_conf.
my $plugin_libraries = 'pgoutput, test_decoding, wal2json, replicant';

sub server_conf
{
	my ($node) = @_;
	my $conf = slurp("$ROOT/regress/logical.conf");
	my $postgres = $node->installed_command('postgres');
	my $settings = `$postgres --describe-config 2>/dev/null`;
	$conf .= "output_plugin_libraries = '$plugin_libraries'\n"
	  if $settings =~ /^output_plugin_libraries\t/m;
	return $conf;
}

# rp_test_major(LOWEST): the major a test of several runs on this time: RP_TEST_MAJOR, which
# regress/run_tests.sh sets for each major MAJOR_TESTS lists, or LOWEST when run by hand
sub rp_test_major
{
	my ($lowest) = @_;
	my $m = $ENV{RP_TEST_MAJOR} // $lowest;
	die "RpTest: RP_TEST_MAJOR=$m, but this test needs PostgreSQL $lowest or later\n" if $m < $lowest;
	return $m;
}

# rp_pg_config(MAJOR): the pg_config of an installation of that major (a label of
# RP_PG_CONFIGS, "V=PG_CONFIG ..." as regress/run_tests.sh exports it, or the major of
# PG_CONFIG or RP_BASE_PG_CONFIG); dies naming what is missing: a test written for two
# majors does not pass quietly on one.
sub rp_pg_config
{
	my ($want) = @_;
	my %have;
	for my $pgc (grep { defined && $_ ne '' } $ENV{PG_CONFIG}, $ENV{RP_BASE_PG_CONFIG})
	{
		my $v = `$pgc --version 2>/dev/null`;
		$have{$1} //= $pgc if $v =~ /PostgreSQL (\d+)/;
	}
	for (split ' ', $ENV{RP_PG_CONFIGS} // '')
	{
		my ($label, $pgc) = split /=/, $_, 2;
		$have{$label} //= $pgc;
	}
	return $have{$want} if defined $have{$want};
	die "RpTest: this test needs PostgreSQL $want, which neither PG_CONFIG, RP_BASE_PG_CONFIG nor "
	  . "RP_PG_CONFIGS names (have: " . join(', ', sort keys %have) . "; regress/run_tests.sh sets them)\n";
}

# rp_cluster(NAME, [{pg_config => PG_CONFIG},] SETTING...): a started cluster with
# logical decoding on, of the installation PG_CONFIG names (default: PG_CONFIG's);
# each SETTING a postgresql.conf line. Cluster.pm's conservative settings for
# streaming (shared_buffers = 1MB, max_connections = 10) are put back to the server's
# defaults: the workloads, consumers and their destination sessions need more.
sub rp_cluster
{
	my ($name, @settings) = @_;
	my %o = ref $settings[0] eq 'HASH' ? %{ shift @settings } : ();
	my $install = $INSTALL_PATH;
	if (defined $o{pg_config})
	{
		my $bindir = `$o{pg_config} --bindir`;
		die "RpTest: could not run $o{pg_config} --bindir\n" if $? != 0;
		chomp $bindir;
		$install = dirname($bindir);
	}
	# a directory a failed run kept
	my $test = basename($0);
	$test =~ s/\.[^.]+$//;
	rmtree("$PostgreSQL::Test::Utils::tmp_check/t_${test}_${name}_data");
	my $node = PostgreSQL::Test::Cluster->new($name,
		install_path => $install);
	# as regress/lib.sh: UTF8 and the C locale whatever the environment says (the tests
	# write non-ASCII identifiers and values)
	$node->init(allows_streaming => 'logical', extra => [ '-E', 'UTF8', '--locale=C' ]);
	$node->append_conf('postgresql.conf',
		    "\n# added by test/perl/RpTest.pm\n"
		  . server_conf($node)
		  . "shared_buffers = 128MB\nmax_connections = 100\n"
		  # every statement of a mirror's destination session logged costs time:
		  # the servers log what regress/lib.sh's do
		  . "log_statement = none\n"
		  . join('', map { "$_\n" } @settings));
	$node->start;
	return $node;
}

# rp_conninfo(NODE[, DB]): libpq connection string
sub rp_conninfo
{
	my ($node, $db) = @_;
	return $node->connstr($db // 'postgres');
}

# rp_psql(NODE, SQL[, DB]): psql -XAtq with ON_ERROR_STOP; dies on an error. Statements
# separated by ';' run one after the other, each in its own transaction unless SQL
# opens one.
sub rp_psql
{
	my ($node, $sql, $db) = @_;
	return $node->safe_psql($db // 'postgres', $sql);
}

# rp_psql_bg(NODE, NAME, SQL): psql running SQL in the background (a workload), its
# output in rp_work()/NAME.out; an RpTest::Proc.
sub rp_psql_bg
{
	my ($node, $name, $sql) = @_;
	return RpTest::Proc->start(
		name   => $name,
		cmd    => [ $node->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'), '-c', $sql ],
		stdout => rp_work() . "/$name.out",
		stderr => rp_work() . "/$name.out");
}

# ---------------------------------------------------------------- the consumer

# rp_consumer(NAME, ARG...): replicant ARG... in the background, stderr into
# rp_work()/NAME.err, stdout into /dev/null; an RpTest::Proc. Options (a hash
# reference first): stdout => FILE, append => 1, stdin => FILE, env => {...}.
sub rp_consumer
{
	my ($name, @args) = @_;
	my %o = ref $args[0] eq 'HASH' ? %{ shift @args } : ();
	return RpTest::Proc->start(
		name   => $name,
		cmd    => [ replicant_bin(), @args ],
		stderr => rp_work() . "/$name.err",
		%o);
}

# rp_plain_metrics(PAGE): the metrics page without the labels the run puts on every
# sample (slot="S",sink="KIND", issue 46), so that a test reads a sample by its own name
# and labels; undef stays undef.
sub rp_plain_metrics
{
	my ($page) = @_;
	return $page unless defined $page;
	my $run = qr/slot="(?:[^"\\]|\\.)*",sink="[a-z]*"/;
	$page =~ s/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{$run\}/$1/mg;
	$page =~ s/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{$run,/$1\{/mg;
	return $page;
}

# rp_replicant(NAME, ARG...): replicant ARG... until it exits (bounded by the timeout:
# a run still going then is killed and reported as status -1); its exit status.
# stderr into rp_work()/NAME.err.
sub rp_replicant
{
	my $p = rp_consumer(@_);
	my $rc = $p->wait_exit;
	if (!defined $rc)
	{
		diag("$p->{name}: still running after $TIMEOUT s, killed");
		$p->kill9_alive;
		return -1;
	}
	return $rc;
}

# rp_replicant_peak(NAME, ARG...): rp_replicant under GNU time (/usr/bin/time -v, a
# dependency, regress/install_deps.sh): its exit status and its peak RSS in MB (undef when
# time wrote none). Options as rp_consumer's.
sub rp_replicant_peak
{
	my ($name, @args) = @_;
	my %o = ref $args[0] eq 'HASH' ? %{ shift @args } : ();
	my $tv = rp_work() . "/$name.time";
	my $p = RpTest::Proc->start(
		name   => $name,
		cmd    => [ '/usr/bin/time', '-v', '-o', $tv, replicant_bin(), @args ],
		stderr => rp_work() . "/$name.err",
		%o);
	my $rc = $p->wait_exit;
	if (!defined $rc)
	{
		diag("$name: still running after $TIMEOUT s, killed");
		$p->kill9_alive;
		return (-1, undef);
	}
	my ($kb) = (-e $tv ? slurp($tv) : '') =~ /Maximum resident set size \(kbytes\): (\d+)/;
	return ($rc, defined $kb ? int($kb / 1024) : undef);
}

# rp_replicant_ok([ARG...], TEST_NAME): a run that must exit 0
sub rp_replicant_ok
{
	my ($args, $test) = @_;
	(my $name = $test) =~ s/[^A-Za-z0-9_.-]+/_/g;
	my $rc = rp_replicant($name, @$args);
	is($rc, 0, $test)
	  or diag(slurp(rp_work() . "/$name.err"));
	return $rc == 0;
}

# rp_run(NAME, CMD...): any command until it exits (bounded); its status, stderr
# into rp_work()/NAME.err
sub rp_run
{
	my ($name, @cmd) = @_;
	my %o = ref $cmd[0] eq 'HASH' ? %{ shift @cmd } : ();
	my $p = RpTest::Proc->start(name => $name, cmd => \@cmd,
		stderr => rp_work() . "/$name.err", %o);
	my $rc = $p->wait_exit;
	if (!defined $rc)
	{
		$p->kill9_alive;
		return -1;
	}
	return $rc;
}

# ---------------------------------------------------------------- waits

# rp_wait_until(CODE[, PROC...]): CODE until it returns true (0.05 s apart), bounded
# by the timeout; false when the time ran out or when one of the processes PROC (the
# consumer the wait depends on) exited first.
sub rp_wait_until
{
	my ($code, @procs) = @_;
	return rp_poll(0.05, $code, @procs);
}

# rp_poll(INTERVAL, CODE[, PROC...]): rp_wait_until polling every INTERVAL seconds (a
# test that catches a short state: the log ending in data lines, a spill file)
sub rp_poll
{
	my ($interval, $code, @procs) = @_;
	my $deadline = time() + $TIMEOUT;
	while (1)
	{
		return 1 if $code->();
		for my $p (@procs)
		{
			return 0 unless $p->alive;
		}
		return 0 if time() > $deadline;
		usleep($interval * 1_000_000);
	}
}

# rp_wait_file_match(FILE, REGEX[, PROC...]): until FILE's text matches REGEX
sub rp_wait_file_match
{
	my ($file, $re, @procs) = @_;
	return rp_wait_until(
		sub {
			return 0 unless -e $file;
			return slurp($file) =~ $re;
		},
		@procs);
}

# rp_file_size(FILE): its size, 0 when it does not exist
sub rp_file_size { return -e $_[0] ? -s _ : 0; }

# rp_last_line(FILE): the file's last line (without its newline; the partial line when
# the file does not end in one), read from its last 64 kB; '' for an empty or missing file
sub rp_last_line
{
	my ($file) = @_;
	open(my $fh, '<', $file) or return '';
	my $size = -s $fh;
	seek($fh, $size > 65536 ? $size - 65536 : 0, 0);
	local $/;
	my $tail = <$fh> // '';
	close $fh;
	$tail =~ s/\n\z//;
	my $i = rindex($tail, "\n");
	return $i < 0 ? $tail : substr($tail, $i + 1);
}

# ---------------------------------------------------------------- LSNs, checkpoints

# rp_fence(NODE, SQL): run SQL (the fence's commit), then read the WAL insert position
# in a transaction of its own: a consumer that confirmed or checkpointed at least that
# position has delivered the fence (an LSN read inside the fence's transaction can be
# confirmed before it commits; see regress/lib.sh).
sub rp_fence
{
	my ($node, $sql) = @_;
	rp_psql($node, $sql);
	return rp_psql($node, 'SELECT pg_current_wal_insert_lsn()');
}

sub lsn_value
{
	my ($lsn) = @_;
	die "not an LSN: " . ($lsn // 'undef') . "\n"
	  unless defined $lsn && $lsn =~ m{^([0-9A-Fa-f]+)/([0-9A-Fa-f]+)$};
	return hex($1) * 4294967296 + hex($2);
}

# rp_lsn_cmp(A, B): <=> of two LSNs (X/Y)
sub rp_lsn_cmp { return lsn_value($_[0]) <=> lsn_value($_[1]); }
sub rp_lsn_lt  { return rp_lsn_cmp(@_) < 0; }

# rp_slot_confirmed(NODE, SLOT): the slot's confirmed_flush_lsn
sub rp_slot_confirmed
{
	my ($node, $slot) = @_;
	return rp_psql($node,
		"SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'");
}

# rp_wait_confirmed(NODE, SLOT, LSN[, PROC]): until the slot confirmed LSN
sub rp_wait_confirmed
{
	my ($node, $slot, $lsn, @procs) = @_;
	return rp_wait_until(
		sub {
			my $c = rp_slot_confirmed($node, $slot);
			return $c ne '' && rp_lsn_cmp($c, $lsn) >= 0;
		},
		@procs);
}

# rp_dst_checkpoint(NODE, SLOT[, DB]): the end_lsn of SLOT's checkpoint in a mirror's
# destination; '' when there is none yet or it cannot be read
sub rp_dst_checkpoint
{
	my ($node, $slot, $db) = @_;
	my ($ret, $out) = $node->psql($db // 'postgres',
		"SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$slot'");
	return $ret == 0 ? $out : '';
}

# rp_wait_dst_checkpoint(NODE, SLOT, LSN[, PROC]): until the mirror checkpointed LSN
sub rp_wait_dst_checkpoint
{
	my ($node, $slot, $lsn, @procs) = @_;
	return rp_wait_until(
		sub {
			my $c = rp_dst_checkpoint($node, $slot);
			return $c ne '' && rp_lsn_cmp($c, $lsn) >= 0;
		},
		@procs);
}

# rp_unacked(NODE, SLOT, CKPT, BOUND[, FLUSH]): '' when nothing of a unit the sink never
# acknowledged was confirmed or checkpointed, else what broke. BOUND is an LSN past the
# unit's first commit record (a fence read after that commit). Idle WAL before the unit
# may be confirmed and recorded (an idle keepalive's position never passes a commit the
# walsender has not sent), so the property is: the slot's confirmed position and the
# checkpoint's end are before BOUND, and the checkpoint file CKPT (the library's)
# records no commit. FLUSH: the slot's confirmed position read earlier.
sub rp_unacked
{
	my ($node, $slot, $ckpt, $bound, $flush) = @_;
	$flush //= rp_slot_confirmed($node, $slot);
	return "the slot confirmed $flush, at or past the unit ($bound)"
	  unless rp_lsn_lt($flush, $bound);
	return '' unless -s $ckpt;
	my $text = slurp($ckpt);
	my ($commit) = $text =~ / commit=(\S+)/;
	my ($end)    = $text =~ / end=(\S+)/;
	return "the checkpoint records commit " . ($commit // '?') . ": $text"
	  unless defined $commit && $commit eq '0/0';
	return "the checkpoint's end " . ($end // '?') . " is at or past the unit ($bound)"
	  unless defined $end && rp_lsn_lt($end, $bound);
	return '';
}

# rp_table_digest(NODE, TABLE[, SETTINGS]): "ROWS MD5" of public.TABLE, its rows as a
# multiset: the count and the md5 of every row's text, sorted (SETTINGS: SQL run first
# in the same session, e.g. "SET extra_float_digits = 3;", to fix the output settings)
sub rp_table_digest
{
	my ($node, $t, $set) = @_;
	return rp_psql($node,
		($set // '')
		  . " SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), ''))"
		  . " FROM (SELECT x::text AS r FROM public.$t x) s");
}

# rp_compare_tables(SRC, DST, TABLE...[, {settings => SQL}]): each public.TABLE of the
# two clusters compared as a multiset of rows (rp_table_digest), one check each; on a
# difference, the first rows only one side has as diagnostics. Returns { TABLE => ROWS }.
sub rp_compare_tables
{
	my ($src, $dst, @tables) = @_;
	my %o = ref $tables[-1] eq 'HASH' ? %{ pop @tables } : ();
	my $set = $o{settings} // '';
	my %rows;
	for my $t (@tables)
	{
		my $a = rp_table_digest($src, $t, $set);
		my $b = rp_table_digest($dst, $t, $set);
		if (!is($b, $a, "table $t: destination equals source ($a)"))
		{
			my $q = "$set SELECT x::text FROM public.$t x";
			my %n;
			$n{$_}++ for split /\n/, rp_psql($src, $q);
			$n{$_}-- for split /\n/, rp_psql($dst, $q);
			my @diff = grep { $n{$_} } sort keys %n;
			splice(@diff, 10) if @diff > 10;
			diag(($n{$_} > 0 ? "source has $n{$_} more: " : "destination has " . -$n{$_} . " more: ")
				  . substr($_, 0, 200))
			  for @diff;
		}
		($rows{$t}) = split / /, $a;
	}
	return \%rows;
}

# rp_session(NODE, NAME): a psql session the test feeds statement by statement (its input
# a FIFO, its output in rp_work()/NAME.out): a lock held until the test lets it go.
# ->send(SQL) writes a line; ->close ends its input (psql ends); ->proc the RpTest::Proc.
sub rp_session
{
	my ($node, $name) = @_;
	my $fifo = rp_work() . "/$name.fifo";
	POSIX::mkfifo($fifo, 0600) or die "mkfifo $fifo: $!";
	my $proc = RpTest::Proc->start(name => $name,
		cmd => [ $node->installed_command('psql'), '-X', '-d', $node->connstr('postgres') ],
		stdin => $fifo, stdout => rp_work() . "/$name.out", stderr => rp_work() . "/$name.out");
	open(my $fh, '>', $fifo) or die "$fifo: $!";
	$fh->autoflush(1);
	return bless { proc => $proc, fh => $fh, out => rp_work() . "/$name.out" }, 'RpTest::Session';
}

sub RpTest::Session::proc  { return $_[0]->{proc}; }
sub RpTest::Session::out   { return $_[0]->{out}; }
sub RpTest::Session::send  { my ($self, $sql) = @_; print { $self->{fh} } "$sql\n"; return; }
sub RpTest::Session::close { my ($self) = @_; close $self->{fh}; return defined $self->{proc}->wait_exit; }

# ---------------------------------------------------------------- cleanup

END
{
	my $rc = $?;
	RpTest::Proc::kill_all();
	if (defined $work && $rc == 0 && PostgreSQL::Test::Utils::all_tests_passing()
		&& !defined $ENV{PG_TEST_NOCLEAN})
	{
		rmtree($work);
	}
	elsif (defined $work)
	{
		diag("kept $work for inspection");
	}
	$? = $rc;
}

# rp_slow_new_tables(NODE, SECONDS, EVENTS, LIKE[, TABLE...]): as regress/lib.sh's: in
# NODE, each public TABLE (every public table when none is named) gets, as it is created, a
# statement trigger AFTER EVENTS ('INSERT', 'INSERT OR UPDATE') that sleeps SECONDS when the
# statement's text is LIKE the pattern LIKE (after every statement when LIKE is ''). An
# event trigger does it, so that it holds for the tables a consumer creates
# (--create-tables): the stage under test then lasts long enough for the test to act during
# it, however fast the machine is. rp_slow_off(NODE): the triggers stop sleeping.
sub rp_slow_new_tables
{
	my ($node, $seconds, $events, $like, @tables) = @_;
	my $sleep = "PERFORM pg_sleep($seconds);";
	$sleep = "IF current_query() LIKE '$like' THEN $sleep END IF;" if $like ne '';
	my $which = @tables
	  ? 'object_identity IN (' . join(', ', map { "'public.$_'" } @tables) . ')'
	  : "schema_name = 'public'";
	rp_psql($node, qq{
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN $sleep RETURN NULL; END \$\$;
CREATE FUNCTION public.slow_new_tables() RETURNS event_trigger LANGUAGE plpgsql AS \$\$
DECLARE
	obj record;
BEGIN
	FOR obj IN SELECT * FROM pg_event_trigger_ddl_commands()
	           WHERE command_tag = 'CREATE TABLE' AND $which LOOP
		EXECUTE format('CREATE TRIGGER slow AFTER $events ON %s FOR EACH STATEMENT EXECUTE FUNCTION public.slow()',
		               obj.object_identity);
		EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER slow', obj.object_identity);
	END LOOP;
END \$\$;
CREATE EVENT TRIGGER slow_new_tables ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
	EXECUTE FUNCTION public.slow_new_tables();
-- the mirror applies with session_replication_role = replica: only ALWAYS triggers fire there
ALTER EVENT TRIGGER slow_new_tables ENABLE ALWAYS;});
	return;
}

sub rp_slow_off
{
	my ($node) = @_;
	rp_psql($node,
		'CREATE OR REPLACE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$');
	return;
}

# ---------------------------------------------------------------- standbys

# rp_cold_backup(NODE, NAME): a backup NAME of NODE (its backup_dir) copied while NODE is
# stopped, without its replication slots; NODE is started again. (15's pg_basebackup refuses
# 17 and 18, and the npm trees of the version matrix have none.)
sub rp_cold_backup
{
	my ($node, $name) = @_;
	$node->stop;
	PostgreSQL::Test::RecursiveCopy::copypath($node->data_dir, $node->backup_dir . "/$name",
		filterfn => sub { my $p = shift; return $p ne 'log' && $p ne 'postmaster.pid' && $p !~ m{(^|/)pg_replslot/.}; });
	$node->start;
	return;
}

# rp_standby(PRIMARY, NAME, BACKUP, SETTING...): a physical standby of PRIMARY made from its
# backup BACKUP (rp_cold_backup), started: primary_conninfo names a database (slot
# synchronization needs one) and application_name NAME; each SETTING a postgresql.conf line
# (primary_slot_name, hot_standby_feedback, sync_replication_slots ...).
sub rp_standby
{
	my ($primary, $name, $backup, @settings) = @_;
	my $s = PostgreSQL::Test::Cluster->new($name, install_path => $primary->install_path);
	$s->init_from_backup($primary, $backup);
	$s->append_conf('postgresql.conf', "primary_conninfo = 'host=" . $primary->host . ' port=' . $primary->port
		  . " dbname=postgres application_name=$name'
" . join('', map { "$_
" } @settings));
	$s->set_standby_mode;
	$s->start;
	return $s;
}

# ================================================================ processes

package RpTest::Proc;

use strict;
use warnings;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(usleep time);

my @procs;

# RpTest::Proc->start(name => NAME, cmd => [CMD...], stdout => FILE, stderr => FILE,
# stdin => FILE, append => 1, env => {VAR => VALUE}): fork and exec CMD in a process
# group of its own (so that the cleanup reaches its children too).
sub start
{
	my ($class, %a) = @_;
	my @cmd = @{ $a{cmd} };
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		POSIX::setpgid(0, 0);
		my $mode = $a{append} ? '>>' : '>';
		open(STDIN, '<', $a{stdin} // '/dev/null') or POSIX::_exit(126);
		open(STDOUT, $mode, $a{stdout} // '/dev/null') or POSIX::_exit(126);
		if (defined $a{stderr} && defined $a{stdout} && $a{stderr} eq $a{stdout})
		{
			open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		}
		else
		{
			open(STDERR, $mode, $a{stderr} // '/dev/null') or POSIX::_exit(126);
		}
		# PostgreSQL::Test::Utils sets PGAPPNAME to the test's name: the consumer's
		# sessions are to name themselves (application_name = replicant)
		delete $ENV{PGAPPNAME};
		while (my ($k, $v) = each %{ $a{env} // {} })
		{
			if (defined $v) { $ENV{$k} = $v; }
			else { delete $ENV{$k}; }
		}
		{ no warnings 'exec'; exec { $cmd[0] } @cmd; }
		print STDERR "exec $cmd[0]: $!\n";
		POSIX::_exit(127);
	}
	my $self = bless { %a, pid => $pid, status => undef }, $class;
	push @procs, $self;
	return $self;
}

sub pid { return $_[0]->{pid}; }

sub _reaped
{
	my ($self, $w) = @_;
	$self->{wstatus} = $w;
	$self->{status} = WIFSIGNALED($w) ? 128 + WTERMSIG($w) : WEXITSTATUS($w);
	return;
}

# alive(): still running (not reaped)?
sub alive
{
	my ($self) = @_;
	return 0 if defined $self->{status};
	my $r = waitpid($self->{pid}, WNOHANG);
	if ($r == $self->{pid}) { $self->_reaped($?); return 0; }
	if ($r < 0) { $self->{status} = -1; return 0; }
	return 1;
}

# status(): the exit status as a shell reports it (128 + N when killed by signal N),
# undef while it runs
sub status { my ($self) = @_; $self->alive; return $self->{status}; }

# wait_exit([SECONDS]): until it exited (default: the timeout); its status, or undef
# when it still runs then
sub wait_exit
{
	my ($self, $seconds) = @_;
	my $deadline = time() + ($seconds // $RpTest::TIMEOUT);
	while ($self->alive)
	{
		return undef if time() > $deadline;
		usleep(20_000);
	}
	return $self->{status};
}

# signal(SIG): send SIG (name or number) to the process (not its group)
sub signal { my ($self, $sig) = @_; return kill($sig, $self->{pid}); }

# kill9_alive(): SIGKILL the process, which must still be running, and reap it. False,
# with its status in status(), when it had already exited by itself (a kill that finds
# nothing to kill proves nothing: the caller's check fails).
sub kill9_alive
{
	my ($self) = @_;
	return 0 unless $self->alive;
	kill('KILL', $self->{pid});
	waitpid($self->{pid}, 0);
	$self->_reaped($?);
	return 1;
}

# at exit: every process started here, and its process group, killed and reaped
sub kill_all
{
	for my $p (@procs)
	{
		next if defined $p->{status};
		kill('KILL', -$p->{pid});
		kill('KILL', $p->{pid});
		waitpid($p->{pid}, 0);
		$p->{status} = -1;
	}
	# children's groups outlive them: also kill groups of reaped processes
	for my $p (@procs) { kill('KILL', -$p->{pid}); }
	return;
}

# ================================================================ NATS

package RpTest::Nats;

=pod

=head2 RpTest::Nats: a real 3-node NATS JetStream cluster on loopback

  my $nats = RpTest::Nats->start(3);      # formed: a meta leader, every peer current
  $nats->urls;                            # nats://127.0.0.1:P1,nats://...
  $nats->sink_url(1, 3);                  # the --sink argument: nats://h:p,h:p
  $nats->kill9(2); $nats->restart(2); $nats->stop(1);
  $nats->stream_leader('S');              # node number, or ''
  $nats->tool('S', 'create', 'p', -1, 3); # regress/tools/nats_dump.c: its stdout
  $nats->logfile(1);                      # a node's server log

As regress/nats.sh rp_nats_*: nats-server from PATH, JetStream with a file store under
the work directory, ports from PostgreSQL::Test::Cluster::get_free_port (reserved against
other tests), full routes, one cluster name. Every wait is bounded by RP_TEST_TIMEOUT.
Nodes are killed at exit.

=cut

use strict;
use warnings;
use HTTP::Tiny;
use JSON::PP;
use Test::More;
use Time::HiRes qw(time usleep);

sub _conf
{
	my ($self, $i) = @_;
	my $n = $self->{n};
	my $d = $self->{node}[$i];
	my $conf = "server_name: n$i\nlisten: 127.0.0.1:$d->{port}\nhttp: 127.0.0.1:$d->{mon}\n"
	  . "max_payload: 8MB\njetstream {\n  store_dir: \"$d->{dir}/store\"\n"
	  . "  max_memory_store: 256MB\n  max_file_store: 8GB\n}\n";
	if ($n > 1)
	{
		my $routes = join(', ',
			map { "\"nats-route://127.0.0.1:$self->{node}[$_]{cport}\"" } grep { $_ != $i } 1 .. $n);
		$conf .= "cluster {\n  name: rp_cluster\n  listen: 127.0.0.1:$d->{cport}\n"
		  . "  routes: [$routes]\n  connect_retries: 120\n}\n";
	}
	open(my $fh, '>', "$d->{dir}/nats.conf") or die "$d->{dir}/nats.conf: $!";
	print $fh $conf;
	close $fh;
	return;
}

sub _spawn
{
	my ($self, $i) = @_;
	my $d = $self->{node}[$i];
	$d->{proc} = RpTest::Proc->start(name => "nats-n$i", cmd => [ 'nats-server', '-c', "$d->{dir}/nats.conf" ],
		stdout => "$d->{dir}/server.log", stderr => "$d->{dir}/server.log", append => 1);
	return;
}

sub _get
{
	my ($self, $i, $path) = @_;
	my $r = HTTP::Tiny->new(timeout => 5)->get("http://127.0.0.1:$self->{node}[$i]{mon}$path");
	return $r->{success} ? $r->{content} : undef;
}

sub _wait
{
	my ($code) = @_;
	my $deadline = time() + $RpTest::TIMEOUT;
	while (time() < $deadline)
	{
		return 1 if $code->();
		usleep(100_000);
	}
	return 0;
}

sub start
{
	my ($class, $n) = @_;
	$n //= 3;
	my $self = bless { n => $n, node => [undef], dir => RpTest::rp_work() . '/nats' }, $class;
	for my $i (1 .. $n)
	{
		my $dir = "$self->{dir}/n$i";
		File::Path::mkpath("$dir/store");
		$self->{node}[$i] = {
			dir   => $dir,
			port  => PostgreSQL::Test::Cluster::get_free_port(),
			cport => PostgreSQL::Test::Cluster::get_free_port(),
			mon   => PostgreSQL::Test::Cluster::get_free_port()
		};
	}
	$self->_conf($_) for 1 .. $n;
	for my $i (1 .. $n)
	{
		for my $attempt (1 .. 3)
		{
			$self->_spawn($i);
			my $p = $self->{node}[$i]{proc};
			last if _wait(sub { defined $self->_get($i, '/varz') || !$p->alive }) && $p->alive;
			$p->kill9_alive;
			BAIL_OUT("nats node n$i did not start (log: $self->{node}[$i]{dir}/server.log)")
			  if $attempt == 3;
			# a port taken meanwhile: new client and monitor ports for this node (the
			# others' routes name only cluster ports, retried by connect_retries)
			$self->{node}[$i]{port} = PostgreSQL::Test::Cluster::get_free_port();
			$self->{node}[$i]{mon}  = PostgreSQL::Test::Cluster::get_free_port();
			$self->_conf($i);
		}
	}
	if ($n > 1)
	{
		_wait(sub { $self->_formed })
		  or BAIL_OUT("the nats cluster did not form (logs: $self->{dir}/n*/server.log)");
	}
	else
	{
		_wait(sub { my $j = $self->jsz(1); $j && $j->{config} })
		  or BAIL_OUT("JetStream did not start on n1");
	}
	return $self;
}

# all nodes running, one meta leader they agree on, which counts the others as current
# peers (a meta leader alone is not enough: two nodes elect one while the third still joins)
sub _formed
{
	my ($self) = @_;
	for my $i (1 .. $self->{n})
	{
		next if $self->alive($i);
		$self->_spawn($i);    # it had exited while the cluster formed
		return 0;
	}
	my $l = $self->meta_leader;
	return 0 unless $l =~ /^n(\d+)$/;
	my $j = $self->jsz($1) or return 0;
	my @cur = grep { $_->{current} } @{ ($j->{meta_cluster} // {})->{replicas} // [] };
	return @cur >= $self->{n} - 1;
}

sub n       { return $_[0]->{n}; }
sub url     { my ($self, $i) = @_; return "nats://127.0.0.1:$self->{node}[$i]{port}"; }
sub port    { my ($self, $i) = @_; return $self->{node}[$i]{port}; }
sub logfile { my ($self, $i) = @_; return "$self->{node}[$i]{dir}/server.log"; }
sub urls    { my ($self, @i) = @_; @i = (1 .. $self->{n}) unless @i; return join(',', map { $self->url($_) } @i); }
sub sink_url
{
	my ($self, @i) = @_;
	(my $u = $self->urls(@i)) =~ s{nats://}{}g;
	return "nats://$u";
}
sub alive   { my ($self, $i) = @_; my $p = $self->{node}[$i]{proc}; return $p && $p->alive; }

# kill9(NODE): SIGKILL a running node (false when it was not running)
sub kill9   { my ($self, $i) = @_; return $self->{node}[$i]{proc}->kill9_alive; }

# stop(NODE): SIGTERM, and wait until it exited
sub stop
{
	my ($self, $i) = @_;
	return 1 unless $self->alive($i);
	$self->{node}[$i]{proc}->signal('TERM');
	return defined $self->{node}[$i]{proc}->wait_exit;
}

# restart(NODE): start a stopped node again on its ports and store; true once it answers
sub restart
{
	my ($self, $i) = @_;
	die "nats node n$i is still running\n" if $self->alive($i);
	$self->_spawn($i);
	return _wait(sub { defined $self->_get($i, '/varz') });
}

# jsz(NODE[, QUERY]): the node's /jsz as a hash, undef when it does not answer
sub jsz
{
	my ($self, $i, $q) = @_;
	my $body = $self->_get($i, '/jsz' . ($q ? "?$q" : '')) // return undef;
	return eval { decode_json($body) };
}

# meta_leader(): the JetStream meta leader the running nodes agree on, '' when none
sub meta_leader
{
	my ($self) = @_;
	my $seen = '';
	for my $i (grep { $self->alive($_) } 1 .. $self->{n})
	{
		my $j = $self->jsz($i) or return '';
		my $l = ($j->{meta_cluster} // {})->{leader} // '';
		return '' if $l eq '' || ($seen ne '' && $seen ne $l);
		$seen = $l;
	}
	return $seen;
}

# stream_leader(STREAM): the node number leading STREAM as every running node sees it, ''
# when none or when they disagree (a node that lost its leadership may still say it leads)
sub stream_leader
{
	my ($self, $stream) = @_;
	my $seen = '';
	for my $i (grep { $self->alive($_) } 1 .. $self->{n})
	{
		my $j = $self->jsz($i, 'accounts=true&streams=true') or next;
		for my $a (@{ $j->{account_details} // [] })
		{
			for my $s (@{ $a->{stream_detail} // [] })
			{
				next unless ($s->{name} // '') eq $stream;
				my $l = ($s->{cluster} // {})->{leader} // '';
				next if $l eq '';
				return '' if $seen ne '' && $seen ne $l;
				$seen = $l;
			}
		}
	}
	return '' unless $seen =~ /^n(\d+)$/ && $self->alive($1);
	return $1;
}

# wait_stream_leader(STREAM[, NOT]): until STREAM has a leader (other than node NOT); it, or ''
sub wait_stream_leader
{
	my ($self, $stream, $not) = @_;
	my $l = '';
	_wait(sub { $l = $self->stream_leader($stream); $l ne '' && (!defined $not || $l ne $not) });
	return $l;
}

# RpTest::Nats::load_workload(NODE, SLOT): regress/tools/nats_workload.sql (the NATS
# tests' workload) into NODE for slot SLOT
sub load_workload
{
	my ($node, $slot) = @_;
	$node->safe_psql('postgres', RpTest::slurp("$RpTest::ROOT/regress/tools/nats_workload.sql"),
		extra_params => [ '-v', "slot=$slot" ]);
	return;
}

# last_seq(STREAM): the stream's last sequence (nats_dump info), '' when it cannot tell
sub last_seq
{
	my ($self, $stream) = @_;
	my ($rc, $info) = $self->tool($stream, 'info');
	return $rc == 0 && $info =~ /"last_seq":(\d+)/ ? $1 : '';
}

# js_ready(NODE): JetStream answers on the node
sub js_ready { my ($self, $i) = @_; my $j = $self->jsz($i); return $j && $j->{config}; }

# dump_tool(): regress/tools/nats_dump.c built into the work directory (once)
my $dump_bin;

sub dump_tool
{
	return $dump_bin if $dump_bin;
	my $bin = RpTest::rp_work() . '/nats_dump';
	my $flags = `pkg-config --cflags --libs libnats`;
	die "libnats is not installed (regress/install_deps.sh installs libnats-dev)\n" if $? != 0;
	chomp $flags;
	system("cc -O2 -Wall -o '$bin' '$RpTest::ROOT/regress/tools/nats_dump.c' $flags") == 0
	  or die "regress/tools/nats_dump.c did not build\n";
	return $dump_bin = $bin;
}

# tool(STREAM, CMD, ARG...): nats_dump on the cluster's URLs; (status, stdout) in list
# context, stdout in scalar context. stderr into rp_work()/nats_dump.err.
sub tool
{
	my ($self, $stream, @args) = @_;
	my $out = RpTest::rp_work() . '/nats_dump.out';
	my $rc = RpTest::rp_run('nats_dump', { stdout => $out }, dump_tool(), $self->urls, $stream, @args);
	my $text = -e $out ? RpTest::slurp($out) : '';
	chomp $text;
	return wantarray ? ($rc, $text) : $text;
}



# wait_caught_up(STREAM): until every node's copy of STREAM (in its own /jsz) holds at
# least the stream's last sequence, read once when its info first answers (right after
# a restart it may not yet). "Current" in the leader's view is not enough: nats-server
# 2.9 counts a follower current while its store still catches up, and such a node can
# then win an election with its short store (seen: the restarted stream ended at 4,749
# of 11,065 acknowledged messages). One fault at a time, each healed first.
sub wait_caught_up
{
	my ($self, $stream) = @_;
	my $want = '';
	return _wait(
		sub {
			$want = $self->last_seq($stream) if $want eq '';
			return 0 if $want eq '';
			for my $i (1 .. $self->{n})
			{
				my $j = $self->jsz($i, 'accounts=true&streams=true') or return 0;
				my ($s) = grep { ($_->{name} // '') eq $stream }
				  map { @{ $_->{stream_detail} // [] } } @{ $j->{account_details} // [] };
				return 0 unless $s && (($s->{state} // {})->{last_seq} // 0) >= $want;
			}
			return 1;
		});
}

# node_of_port(PORT): the node whose client port is PORT, '' when none
sub node_of_port
{
	my ($self, $port) = @_;
	my ($i) = grep { $self->{node}[$_]{port} == $port } 1 .. $self->{n};
	return $i // '';
}

# client_node(PID): the node whose client port process PID has an established TCP
# connection to (its socket inodes in /proc/PID/fd against /proc/net/tcp); '' when none
sub client_node
{
	my ($self, $pid) = @_;
	my %inode;
	opendir(my $dh, "/proc/$pid/fd") or return '';
	for my $fd (readdir $dh)
	{
		my $l = readlink("/proc/$pid/fd/$fd") // next;
		$inode{$1} = 1 if $l =~ /^socket:\[(\d+)\]$/;
	}
	closedir $dh;
	open(my $fh, '<', '/proc/net/tcp') or return '';
	<$fh>;    # the header
	while (my $line = <$fh>)
	{
		# sl local rem st tx:rx tr:when retrnsmt uid timeout inode; ESTABLISHED is 01
		my @f = split ' ', $line;
		next unless $f[3] eq '01' && $inode{ $f[9] };
		my ($port) = $f[2] =~ /:([0-9A-F]+)$/i;
		my $i = $self->node_of_port(hex $port);
		return $i if $i ne '';
	}
	return '';
}

# tail(STREAM): nats_dump's "tail" of STREAM as a hash (the last message and the end of
# the last complete transaction), undef when it cannot tell
sub tail
{
	my ($self, $stream) = @_;
	my ($rc, $out) = $self->tool($stream, 'tail');
	return undef if $rc != 0;
	return eval { JSON::PP::decode_json($out) };
}

# tail_field(STREAM, FIELD): last_complete_end, seq (the last message's sequence), or a
# header of the last message (Replicant-Lsn, ...); '' when absent
sub tail_field
{
	my ($self, $stream, $f) = @_;
	my $d = $self->tail($stream) // return '';
	return $d->{$f} // '' if $f eq 'last_complete_end';
	return ($d->{msg} // $d)->{seq} // 0 if $f eq 'seq';
	return (($d->{msg} // {})->{headers} // {})->{$f} // '';
}

# dump(STREAM, FILE): the whole stream into FILE, one JSON line per message, read by four
# nats_dump processes over consecutive sequence ranges (each get is a round trip to the
# leader); true when all four succeeded
sub dump
{
	my ($self, $stream, $file) = @_;
	my $last = $self->last_seq($stream);
	return 0 if $last eq '';
	my $per = int(($last + 3) / 4);
	my @p = map {
		RpTest::Proc->start(name => "nats_dump.$_", stdout => "$file.$_",
			stderr => RpTest::rp_work() . "/nats_dump.$_.err",
			cmd => [ dump_tool(), $self->urls, $stream, 'dump', $_ * $per + 1, ($_ + 1) * $per ])
	} 0 .. 3;
	my $ok = 1;
	for (@p) { my $rc = $_->wait_exit; $ok = 0 unless defined $rc && $rc == 0; }
	return 0 unless $ok;
	open(my $out, '>', $file) or die "$file: $!";
	for (0 .. 3)
	{
		print $out RpTest::slurp("$file.$_");
		unlink "$file.$_";
	}
	close $out;
	return 1;
}

# audit(NODE, FILE[, WHERE]): the workload's audit table (nats_workload.sql) as the
# "txid tbl id op ver" lines regress/check_nats.py reads, in commit order
sub audit
{
	my ($node, $file, $where) = @_;
	# (no table name of the workload holds a tab)
	my $rows = $node->safe_psql('postgres',
		"SELECT txid, tbl, id, op, ver FROM audit WHERE " . ($where // 'true') . " ORDER BY seq",
		extra_params => [ '-F', "\t" ]);
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $rows, ($rows eq '' ? '' : "\n");
	close $fh;
	return;
}

# check(NODE, SLOT, STREAM, PREFIX[, audit_where => SQL][, args => [...]]): the stream
# dumped and compared with NODE's audit table by regress/check_nats.py (every committed
# change once, in commit order, headers and subjects, the slot not confirmed past the
# stream); (exit status, its output). The dump and audit stay in rp_work()/check_STREAM.
sub check
{
	my ($self, $node, $slot, $stream, $prefix, %o) = @_;
	my $dir = RpTest::rp_work() . "/check_$stream";
	File::Path::mkpath($dir);
	my $sysid = RpTest::rp_psql($node, 'SELECT system_identifier FROM pg_control_system()');
	my $confirmed = RpTest::rp_slot_confirmed($node, $slot);
	return (1, "stream $stream could not be dumped") unless $self->dump($stream, "$dir/stream.jsonl");
	audit($node, "$dir/audit.tsv", $o{audit_where});
	my $rc = RpTest::rp_run("check_$stream", { stdout => "$dir/check.out", stderr => "$dir/check.out" },
		'python3', "$RpTest::ROOT/regress/check_nats.py", "$dir/stream.jsonl", "$dir/audit.tsv",
		'--slot', $slot, '--system-id', $sysid, '--prefix', $prefix, '--confirmed', $confirmed,
		'--ignore-table', 'wl_conf', @{ $o{args} // [] });
	return ($rc, RpTest::slurp("$dir/check.out"));
}


package RpTest::Tmux;

=pod

=head2 RpTest::Tmux: a command on a terminal, read back

  my $t = RpTest::Tmux->run('a', [ RpTest::replicant_bin(), ... ]);   # 120x20 pane
  $t->pid;                  # the command's pid ('' until it started)
  $t->status;               # its exit status once it ended, else undef
  $t->pane;                 # the pane's text now (capture-pane)
  $t->wait_pane(qr/.../m, 'what it shows');   # a check; fails when the command exited

The command's stderr (and stdout, unless redirected) is the pane's terminal. Each run has
a tmux server of its own (a new session on the socket of a server still exiting after
kill-server can fail); the servers are killed at exit (they are daemons, outside the
process groups RpTest kills).

=cut

use strict;
use warnings;
use Test::More;

my @servers;

END
{
	my $rc = $?;
	for my $t (@servers)
	{
		kill('KILL', $t->{pid}) if $t->{pid};
		system('tmux', '-S', $t->{sock}, 'kill-server');
	}
	$? = $rc;
}

sub _shq { my ($s) = @_; $s =~ s/'/'\\''/g; return "'$s'"; }

# run(NAME, [CMD...], stdout => FILE): CMD in a new pane, once it started (its pid known)
sub run
{
	my ($class, $name, $cmd, %o) = @_;
	my $work = RpTest::rp_work();
	my $self = bless { name => $name, sock => "$work/tmux.$name.sock", pidf => "$work/pid.$name",
		rcf => "$work/rc.$name", pid => '' }, $class;
	unlink $self->{pidf}, $self->{rcf};
	open(my $run, '>', "$work/run.$name.sh") or die "$work/run.$name.sh: $!";
	print $run join(' ', map { _shq($_) } @$cmd)
	  . ($o{stdout} ? ' >' . _shq($o{stdout}) : '') . " &\n"
	  . 'echo $! >' . _shq($self->{pidf}) . "\nwait \$!\n"
	  . 'echo $? >' . _shq($self->{rcf}) . "\nsleep 3600\n";
	close $run;
	{
		delete local $ENV{TMUX};
		delete local $ENV{PGAPPNAME};    # replicant's sessions name themselves
		push @servers, $self;
		is(system('tmux', '-S', $self->{sock}, '-f', '/dev/null', 'new-session', '-d', '-x', '120', '-y', '20',
				'-s', 'rp', "bash $work/run.$name.sh"), 0, "$name: tmux started a session");
	}
	ok(RpTest::rp_wait_until(sub { -s $self->{pidf} }), "$name: the command started in the pane");
	if (-s $self->{pidf})
	{
		($self->{pid} = RpTest::slurp($self->{pidf})) =~ s/\s+//g;
	}
	return $self;
}

sub pid { return $_[0]->{pid}; }

sub status
{
	my ($self) = @_;
	return undef unless -s $self->{rcf};
	(my $rc = RpTest::slurp($self->{rcf})) =~ s/\s+//g;
	return $rc;
}

# alive(): the command still runs
sub alive { my ($self) = @_; return $self->{pid} ne '' && !defined $self->status; }

# wait_exit(): until the command ended (bounded by the timeout); its status or undef
sub wait_exit
{
	my ($self) = @_;
	RpTest::rp_wait_until(sub { defined $self->status });
	return $self->status;
}

sub pane
{
	my ($self) = @_;
	my $p = `tmux -S '$self->{sock}' capture-pane -p -t rp 2>/dev/null`;
	return $p // '';
}

# wait_pane(REGEX, WHAT): a check that the pane shows a match of REGEX; false at once when
# the command exited first. The pane as last read is in ->{last}.
sub wait_pane
{
	my ($self, $re, $what) = @_;
	my $alive = 1;
	RpTest::rp_wait_until(
		sub {
			$self->{last} = $self->pane;
			return 1 if $self->{last} =~ $re;
			$alive = $self->alive;
			return !$alive;
		});
	return ok($self->{last} =~ $re, "$self->{name}: the pane shows $what"
		  . ($alive ? '' : ' (the command exited while waiting)'))
	  || diag("--- the pane\n$self->{last}");
}

1;
