#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/progress_tty.sh: the progress display on a terminal (issue 17, item 4), read back
# through a pseudo-terminal (a tmux pane, 120x20, captured with capture-pane).
#
# (a) --snapshot --start into the mirror, stderr a terminal, --progress and -v: while the copy
#     runs the pane shows the total line and a line per table being copied with its rows of
#     the estimate, percent, rate and ETA; the metrics page shows the same figures
#     (replicant_snapshot_rows_total and replicant_snapshot_rows_estimate by store, during the copy). The destination
#     tables are held locked (a session's LOCK ... IN SHARE MODE) until both were seen, so the
#     copy waits as long as the checks need on any machine; nothing is timed. Then it goes on: the
#     final pane holds only whole lines (every line matches one of the forms the display and
#     the log print, to its end: nothing left of the longer per-table lines drawn before), no
#     per-table progress line, the two "copied" lines, the total, and the stream's line with
#     its lag; the page has replicant_lag_bytes, replicant_lag_seconds and
#     replicant_catchup_eta_seconds.
# (b) The same run for a second slot with stderr a file: no escape sequence, no carriage
#     return, no progress line in it at all.
# (c) Without --progress (the default) on a terminal: after a stop, rows written to the
#     source are a lag the stream catches up; the stream's line goes once caught up and one
#     line says so ("catch-up: caught up at checkpoint ...").
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-progress-tty.XXXXXX)
sock=$work/tmux.sock
SLOT=progress_tty
consumer_pid=
lock_pid=
status=1

cleanup() {
	local rc=$?
	tmux -S "$sock" kill-server 2>/dev/null || true
	rp_e2e_cleanup "$rc" consumer_pid lock_pid
}
trap cleanup EXIT

fail() {
	printf -- '--- the pane\n'
	tmux -S "$sock" capture-pane -p -t rp 2>/dev/null || true
	rp_e2e_fail progress_tty "$work/*.err $work/pane.*" 30 "$*"
}

command -v tmux >/dev/null || fail "tmux is not installed: the terminal cannot be read back"
command -v curl >/dev/null || fail "curl is not installed (regress/install_deps.sh installs it): the metrics cannot be read"

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
rp_psql dst -c 'CREATE DATABASE dst2' >/dev/null

BIG_ROWS=40000
rp_psql src <<SQL >/dev/null
CREATE TABLE big_t (id bigint PRIMARY KEY, v text);
INSERT INTO big_t SELECT g, repeat('x', 50) FROM generate_series(1, $BIG_ROWS) g;
CREATE TABLE a_table_with_a_much_longer_name_than_big (id int PRIMARY KEY, v text);
INSERT INTO a_table_with_a_much_longer_name_than_big SELECT g, 'y' FROM generate_series(1, 4000) g;
ANALYZE;
SQL
# the destination tables exist, empty, and a session holds them locked until the checks below
# have seen the copy running: the copy reads ahead a chunk or two and waits (nothing is timed)
rp_psql dst <<SQL >/dev/null
CREATE TABLE big_t (id bigint PRIMARY KEY, v text);
CREATE TABLE a_table_with_a_much_longer_name_than_big (id int PRIMARY KEY, v text);
SQL
mkfifo "$work/lock.fifo"
rp_psql dst <"$work/lock.fifo" >"$work/lock.out" 2>&1 &
lock_pid=$!
exec 3>"$work/lock.fifo"
echo "BEGIN; LOCK TABLE big_t, a_table_with_a_much_longer_name_than_big IN SHARE MODE; SELECT 'locked';" >&3
for _ in $(seq 1 300); do
	grep -q locked "$work/lock.out" && break
	sleep 0.1
done
grep -q locked "$work/lock.out" || fail "the destination tables could not be locked"

# the pane: the consumer's stderr is the terminal; its pid and exit status go to files
pane_run() {
	local name=$1
	shift
	printf '%q ' "$@" >"$work/cmd.$name"
	cat >"$work/run.$name.sh" <<EOF
cd $(printf %q "$work")
$(cat "$work/cmd.$name") >$(printf %q "$work/$name.out") &
echo \$! >$(printf %q "$work/pid.$name")
wait \$!
echo \$? >$(printf %q "$work/rc.$name")
sleep 3600
EOF
	tmux -S "$sock" kill-server 2>/dev/null || true
	# a server of its own for each run: a new session on the socket of a server that is still
	# exiting after kill-server can fail ("server exited unexpectedly")
	sock=$work/tmux.$name.sock
	# (fd 3, the lock session's input, stays out of the pane: its EOF ends that session)
	env -u TMUX tmux -S "$sock" -f /dev/null new-session -d -x 120 -y 20 -s rp "bash $work/run.$name.sh" 3>&- ||
		fail "tmux could not start a session"
	for _ in $(seq 1 300); do
		[[ -s $work/pid.$name ]] && break
		sleep 0.1
	done
	[[ -s $work/pid.$name ]] || fail "the consumer did not start in the pane"
	consumer_pid=$(cat "$work/pid.$name")
}

pane() { tmux -S "$sock" capture-pane -p -t rp; }

# wait_pane REGEX WHAT [TRIES]: the pane shows a line matching REGEX (extended), or fail
wait_pane() {
	local re=$1 what=$2 tries=${3:-1200}
	for _ in $(seq 1 "$tries"); do
		pane >"$work/pane.now" 2>/dev/null || true
		grep -Eq -- "$re" "$work/pane.now" && return 0
		kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited while waiting for $what"
		sleep 0.1
	done
	fail "the pane never showed $what"
}

metrics_port=$(rp_free_port)
# ---- (a) the snapshot on a terminal ----------------------------------------------------------
pane_run a replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start --create-tables \
	--snapshot-workers=2 --snapshot-chunk-rows=500 --sink "postgres:$dst_CONNSTR" \
	--state-dir "$work/state_a" -s 1 -v --progress --metrics-port "$metrics_port"

num='[0-9]+(\.[0-9])?[kMG]?'
eta='([0-9]+s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m|[0-9]+d[0-9]{2}h|--)'
wait_pane "^snapshot: [0-9]/2 tables, $num of ~$num rows \([0-9]+%\), $num rows/s, ETA [0-9]+[smhd]" "the total line with an ETA"
wait_pane "^  public\.big_t: $num of ~$num rows \([0-9]+%\), $num rows/s, ETA [0-9]+[smhd][0-9]*[smh]?\$" "big_t's line with percent and ETA"
wait_pane "^  public\.a_table_with_a_much_longer_name_than_big: $num of ~$num rows \([0-9]+%\), $num rows/s, ETA $eta\$" \
	"the other table's line"
cp "$work/pane.now" "$work/pane.copying"
# the same figures on the page, while the copy runs
seen=
for _ in $(seq 1 600); do
	if page=$(curl -sf "http://127.0.0.1:$metrics_port/metrics" 2>/dev/null) &&
		grep -Eq '^replicant_snapshot_rows_total\{store="public\.big_t"\} [0-9]+$' <<<"$page" &&
		grep -q "^replicant_snapshot_rows_estimate{store=\"public.big_t\"} $BIG_ROWS\$" <<<"$page"; then
		seen=1
		break
	fi
	kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited during the snapshot"
	sleep 0.1
done
[[ -n $seen ]] || fail "the metrics page never showed big_t's rows and estimate during the copy"
printf '%s\n' "$page" >"$work/page.copying"
# the copy goes on
echo "COMMIT;" >&3
exec 3>&-
for _ in $(seq 1 300); do kill -0 "$lock_pid" 2>/dev/null || break; sleep 0.1; done

# the end of the copy: the stream's line, with its lag
wait_pane '^streaming: lag ' "the stream's line"
wait_pane '^snapshot: 2 tables, [0-9]+ rows in ' "the snapshot's total"
pane >"$work/pane.final"
# every line whole: one of the display's forms or a log line, to its end
lsn='[0-9A-F]+/[0-9A-F]+'
forms=(
	"^snapshot: public\.(big_t|a_table_with_a_much_longer_name_than_big) copied, [0-9]+ rows in $eta\$"
	"^snapshot: 2 tables, [0-9]+ rows in $eta\$"
	"^(streaming|catch-up): lag [0-9.]+ [KMGTP]?i?B, [0-9.]+ s, ETA $eta; [0-9]+ txns, $num changes/s, checkpoint $lsn\$"
	"^replicant: created slot \"$SLOT\" with a snapshot at consistent point $lsn\$"
	"^replicant: snapshot complete: [0-9]+ rows; streaming from $lsn\$"
	"^replicant: streaming from slot \"$SLOT\"\$"
	"^replicant: logical_decoding_work_mem of this session: [0-9]+kB\$"
	"^replicant: sequences synced after the snapshot: [0-9]+ selected, [0-9]+ advanced, [0-9]+ created, [0-9]+ missing\$"
)
while IFS= read -r line; do
	[[ -n $line ]] || continue
	ok=
	for f in "${forms[@]}"; do
		if [[ $line =~ $f ]]; then ok=1; break; fi
	done
	[[ -n $ok ]] || fail "a line of the final screen is not whole (left over, or interleaved): '$line'"
done <"$work/pane.final"
grep -q '^  public\.' "$work/pane.final" && fail "a per-table progress line was left on the final screen"
[[ $(grep -c ' copied, ' "$work/pane.final") == 2 ]] || fail "expected one 'copied' line per table"
[[ $(grep -c '^streaming: lag \|^catch-up: lag ' "$work/pane.final") == 1 ]] || fail "expected one stream line"
[[ $(rp_psql dst -Atc 'SELECT count(*) FROM big_t') == "$BIG_ROWS" ]] || fail "big_t not copied whole"
page=$(curl -sf "http://127.0.0.1:$metrics_port/metrics") || fail "no metrics page after the snapshot"
printf '%s\n' "$page" >"$work/page.final"
for re in "^replicant_snapshot_rows_total\\{store=\"public.big_t\"\\} $BIG_ROWS\$" \
	'^replicant_lag_bytes [0-9]+$' '^replicant_lag_seconds [0-9.]+$' \
	'^replicant_catchup_eta_seconds ([0-9.]+|NaN)$'; do
	grep -Eq "$re" <<<"$page" || fail "the metrics page after the snapshot lacks $re"
done
kill -TERM "$consumer_pid"
for _ in $(seq 1 300); do [[ -s $work/rc.a ]] && break; sleep 0.1; done
[[ $(cat "$work/rc.a" 2>/dev/null) == 0 ]] || fail "the consumer did not stop cleanly on SIGTERM"
consumer_pid=

# ---- (b) the same with stderr a file ---------------------------------------------------------
replicant -d "$src_CONNSTR" -S "${SLOT}_b" --create-slot --snapshot --start --create-tables \
	--snapshot-workers=2 --snapshot-chunk-rows=500 --sink "postgres:${dst_CONNSTR/dbname=postgres/dbname=dst2}" \
	--state-dir "$work/state_b" -s 1 -v --progress >"$work/b.out" 2>"$work/b.err" &
consumer_pid=$!
for _ in $(seq 1 1200); do
	grep -q 'streaming from slot' "$work/b.err" && break
	kill -0 "$consumer_pid" 2>/dev/null || fail "the piped consumer exited"
	sleep 0.1
done
grep -q 'streaming from slot' "$work/b.err" || fail "the piped consumer did not reach the stream"
kill -TERM "$consumer_pid"
wait "$consumer_pid" || fail "the piped consumer did not stop cleanly"
consumer_pid=
grep -q $'\033' "$work/b.err" && fail "an escape sequence in the piped stderr"
grep -q $'\r' "$work/b.err" && fail "a carriage return in the piped stderr"
grep -Eq '^(snapshot|streaming|catch-up):|^  public\.' "$work/b.err" && fail "a progress line in the piped stderr"

# ---- (c) the default on a terminal: the catch-up, then its end ------------------------------
rp_psql src -c "INSERT INTO big_t SELECT g, 'z' FROM generate_series($BIG_ROWS + 1, $BIG_ROWS + 20000) g" >/dev/null
rm -f "$work/pid.c" "$work/rc.c"
pane_run c replicant -d "$src_CONNSTR" -S "$SLOT" --start --sink "postgres:$dst_CONNSTR" \
	--state-dir "$work/state_a" -s 1
wait_pane "^catch-up: caught up at checkpoint $lsn\$" "the end of the catch-up"
for _ in $(seq 1 1200); do
	[[ $(rp_psql dst -Atc 'SELECT count(*) FROM big_t') == $((BIG_ROWS + 20000)) ]] && break
	sleep 0.1
done
pane >"$work/pane.c"
grep -Eq '^(streaming|catch-up): lag ' "$work/pane.c" && fail "the stream's line stayed after the catch-up"
[[ $(rp_psql dst -Atc 'SELECT count(*) FROM big_t') == $((BIG_ROWS + 20000)) ]] || fail "the catch-up did not apply the rows"

status=0
printf 'PASS progress_tty: per-table snapshot progress and the catch-up line on a terminal, whole lines, none when piped, the figures on the metrics page (%ss)\n' \
	$((SECONDS - started))
