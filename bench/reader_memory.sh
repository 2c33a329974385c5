#!/usr/bin/env bash
# A stream reader's peak memory beside --max-memory (issue 48 item 3), for every sink:
#   bash bench/reader_memory.sh [--build] [ROWS]
#
# Starts a source and a destination cluster (regress/lib.sh; as root, the run continues as the
# postgres user through rp_run_unprivileged) and a 1-node JetStream server (regress/nats.sh).
# Two backlogs of ROWS rows (default 1,000,000) of (int primary key, 32-byte text) are written
# by the NATS sink into a stream each (one replica, --max-memory 64MB): "one-txn", one
# transaction, and "txns", 1,000-row transactions. Each is then read to its last sequence
# (--source nats:// ... --endpos) by one reader per sink and --max-memory:
#   file     --sink file:PATH
#   mirror   --sink postgres:... --create-tables (a destination database each)
#   stdout   --sink stdout (to /dev/null)
#   exec     --sink exec:CHILD (a perl child that acknowledges every flush line)
# Reported per run: peak RSS (/usr/bin/time -v, else VmHWM sampled every 0.1 s), that less
# --max-memory (G5's target is at most 64 MB), seconds, exit status. Nothing is asserted.
#
# Environment: MAX_MEMORIES="32MB 64MB", SINKS="file mirror stdout exec", CASES="one-txn txns",
# REPLICANT_BIN=PATH (default the consumer built in this tree). The report is printed and
# written to bench/out/reader_memory-<timestamp>.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../regress/lib.sh"

if [[ ${1:-} != --phase-run ]]; then
	build=0
	rows=1000000
	for arg in "$@"; do
		case $arg in
		--build) build=1 ;;
		-h | --help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*[!0-9]* | '' | 0) printf 'usage: bash bench/reader_memory.sh [--build] [ROWS]\n' >&2; exit 2 ;;
		*) rows=$arg ;;
		esac
	done
	if ((build)); then rp_build_install || exit 1; fi
	mkdir -p "$RP_ROOT/bench/out"
	out=$RP_ROOT/bench/out/reader_memory-$(date +%Y%m%d-%H%M%S).txt
	rc=0
	rp_run_unprivileged bench/reader_memory.sh --phase-run "$rows" "${MAX_MEMORIES:-32MB 64MB}" \
		"${SINKS:-file mirror stdout exec}" "${CASES:-one-txn txns}" "${REPLICANT_BIN:-}" | tee "$out" || rc=$?
	printf 'report: %s\n' "$out"
	exit "$rc"
fi

# ---------------------------------------------------------------- the bench, unprivileged
ROWS=$2
read -r -a MEMS <<<"$3"
read -r -a SINKS <<<"$4"
read -r -a CASES <<<"$5"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
CONSUMER=${6:-$(command -v replicant)}
# shellcheck source=regress/nats.sh
. "$RP_ROOT/regress/nats.sh"
trap 'rp_nats_cleanup; rp_cluster_cleanup_all' EXIT

rp_cluster_start src "autovacuum = off" "fsync = off"
rp_cluster_start dst "autovacuum = off" "fsync = off"
rp_nats_start 1
SRC=$(rp_conninfo src)
# shellcheck disable=SC2154 # exported by rp_cluster_start
WORK=$src_DIR
rp_nats_build_tools "$WORK"
src() { PGOPTIONS='-c client_min_messages=warning' rp_psql src "$@"; }
dst() { PGOPTIONS='-c client_min_messages=warning' rp_psql dst "$@"; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

# the exec child: acknowledges every flush line at once
cat >"$WORK/ack.pl" <<'PERL'
$| = 1;
while (<STDIN>) { print "ack $1\n" if /^\{"kind":"flush","seq":(\d+)/; }
PERL

# shellcheck source=bench/tools/measure.sh
. "$here/tools/measure.sh"

printf 'replicant stream reader memory bench: PostgreSQL %s, %s cores, nats-server %s, %s\n' \
	"$(src -Atc 'show server_version')" "$(nproc)" "$(nats-server --version 2>&1 | awk '{ print $NF }')" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'consumer %s (built %s); %d rows a backlog\n\n' "$CONSUMER" \
	"$(date -u -r "$CONSUMER" '+%Y-%m-%d %H:%M:%S UTC')" "$ROWS"
printf '%-8s %-7s %-7s %10s %12s %8s %5s\n' case sink max peak_rss_mb over_max_mb seconds exit
n=0
for c in "${CASES[@]}"; do
	slot=w_${c//-/_}
	stream=RM_${slot^^}
	src -c "DROP TABLE IF EXISTS t; CREATE TABLE t (id int PRIMARY KEY, v text)" >/dev/null
	"$CONSUMER" -d "$SRC" -S "$slot" --create-slot >/dev/null
	case $c in
	one-txn) src -c "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, $ROWS) g" ;;
	txns) src -c "DO \$\$ BEGIN FOR i IN 0 .. ($ROWS - 1) / 1000 LOOP
		INSERT INTO t SELECT g, md5(g::text) FROM generate_series(i * 1000 + 1, least((i + 1) * 1000, $ROWS)) g;
		COMMIT; END LOOP; END \$\$" ;;
	*) rp_die "unknown case $c (one-txn, txns)" ;;
	esac
	end=$(src -Atc 'SELECT pg_current_wal_insert_lsn()')
	"$CONSUMER" -d "$SRC" -S "$slot" --start -E "$end" --sink "$(rp_nats_sink_url)" --nats-stream "$stream" \
		--nats-replicas 1 --max-memory 64MB --state-dir "$WORK/w-$c" 2>"$WORK/w-$c.err" ||
		rp_die "the writer of $c failed: $(tail -2 "$WORK/w-$c.err")"
	last=$(rp_nats_tool "$stream" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
	for mm in "${MEMS[@]}"; do
		for s in "${SINKS[@]}"; do
			n=$((n + 1))
			extra=()
			case $s in
			file) sink=file:$WORK/r$n.log ;;
			mirror)
				dst -c "CREATE DATABASE d$n" >/dev/null
				sink=postgres:$(rp_conninfo dst "d$n")
				extra=(--create-tables) ;;
			stdout) sink=stdout ;;
			exec) sink="exec:perl $WORK/ack.pl" ;;
			*) rp_die "unknown sink $s (file, mirror, stdout, exec)" ;;
			esac
			run_measured "$WORK/r$n.err" "$CONSUMER" --source "$(rp_nats_sink_url)" --nats-stream "$stream" \
				-S "r$n" --start --endpos "$last" --sink "$sink" "${extra[@]}" --max-memory "$mm" \
				--state-dir "$WORK/r$n"
			max_mb=$(numfmt --from=iec "${mm%B}")
			printf '%-8s %-7s %-7s %10s %12s %8s %5s\n' "$c" "$s" "$mm" "$(mb "$RUN_RSS_KB")" \
				"$(( $(mb "$RUN_RSS_KB") - max_mb / 1048576 ))" "$RUN_S" "$RUN_RC"
			rm -f "$WORK/r$n.log"
		done
	done
done
