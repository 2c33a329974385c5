#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2119 # NAME_* variables are set by rp_cluster_start (lib.sh); rp_nats_sink_url: all nodes
# regress/t/nats_fanout.sh: one JetStream stream, written by the NATS sink from one slot, is the
# source of three readers at once, each effect-once across kill -9, each at its own pace.
#
# Proves G1 for readers of a stream (dup = 0, loss = 0 in every sink, commit order in the log)
# and that a stopped reader holds back nothing on the source (the slot is confirmed as far as
# the stream holds while the reader is behind). Source cluster src (regress/tools/
# nats_workload.sql: hostile identifiers and values, an audit table recording every committed
# change in its own transaction), the writer (-S fo_cdc --sink nats://, 3-node cluster), and
# three readers of the stream (--source nats://... --nats-stream FANOUT, no -d but agg's, for
# its bindings' seed):
#   mirror  --sink postgres: database mirror of cluster dst, --create-tables
#   log     --sink file:$work/fanout.log
#   agg     --sink postgres: database agg of dst, --create-tables and aggregate bindings
#           on public.t_a (REPLICA IDENTITY FULL) and public.audit
#           (sum, max, count, count_distinct)
# Under a small-transaction worker (and a worker of 500-1500-row transactions in the first
# phase) the readers are killed with SIGKILL in turn, ROUNDS (>= 10) times each, once they
# made progress (odd kills) or at a random moment (even kills), and restarted at once. Meanwhile
# the stream's leader node is killed with SIGKILL and later restarted, and the writer is
# killed with SIGKILL twice and restarted. Then agg is stopped (SIGSTOP) for a long stretch: the
# others are killed on, the writer too, and a fence committed on the source must be confirmed
# by the writer's slot and reached by mirror and log while agg's checkpoint is still behind it.
# The stretch lasts until the source wrote STOPPED_MB (24) MB of WAL past agg's checkpoint: more
# than the 16 MB lag at which the workload waits for the writer's slot, so a slot held back by
# agg would stop the workload and fail the test. Then agg goes on (SIGCONT) and takes its kills while it catches up. At the end: the workload
# stops, the readers are stopped, the writer confirms a last fence, L = the stream's last
# sequence, and each reader is restarted with --endpos L and must exit 0 (and the log reader,
# its checkpoint then at L, once more: it must end at once, writing nothing). Then the mirror (and agg's mirror) equals the
# source table by table, the log holds every audited change exactly once in commit order
# (regress/check_fanout_log.py), the aggregate outputs equal GROUP BY on the source, the
# checkpoints say they follow the stream, and no reader's stderr shows a row value (G4).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
# shellcheck source=regress/nats.sh
. "$here/../nats.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-10}      # kills per reader, at least
STOPPED_MB=${STOPPED_MB:-24}   # WAL the source writes while agg is stopped (more than the workload's 16 MB throttle)
((ROUNDS >= 10)) || ROUNDS=10
SLOT=fo_cdc
STREAM=FANOUT
PREFIX=fo
READERS=(mirror log agg)
# RP_FANOUT_STANDIN=slot: each reader reads a slot of its own on the source instead of the
# stream (--endpos the last fence's LSN; the checkpoints' source is not checked): the harness
# checked against readers that exist without the stream reader
STANDIN=${RP_FANOUT_STANDIN:-}
work=$(mktemp -d /tmp/rp-nats-fanout.XXXXXX)
chmod 755 "$work"
LOG=$work/fanout.log
status=1
writer_pid=
declare -A pid=([mirror]='' [log]='' [agg]='') kills=([mirror]=0 [log]=0 [agg]=0) runs=([mirror]=0 [log]=0 [agg]=0)
declare -A pos_at_start=()
workers=()
cleanup() {
	local rc=$? readers=("${pid[@]}") p
	# a stopped reader must get its SIGKILL too
	for p in "${readers[@]}"; do [[ -z $p ]] || kill -CONT "$p" 2>/dev/null || true; done
	rp_nats_cleanup || true
	rp_e2e_cleanup "$rc" writer_pid readers workers
}
trap cleanup EXIT
fail() { rp_e2e_fail nats_fanout "$work/*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst
rp_nats_start 3
rp_psql dst -c "CREATE DATABASE mirror" -c "CREATE DATABASE agg" >/dev/null
rp_nats_load_workload src "$SLOT"
rp_psql src >/dev/null <<'SQL'
-- the aggregate bindings need the old row of updates and deletes
ALTER TABLE public.t_a REPLICA IDENTITY FULL;
-- the mirrors apply the workload's stop flag and pacing too: they need an identity
ALTER TABLE ctl REPLICA IDENTITY FULL;
ALTER TABLE wl_conf REPLICA IDENTITY FULL;
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot
if [[ $STANDIN == slot ]]; then
	for r in "${READERS[@]}"; do replicant -d "$src_CONNSTR" -S "fo_$r" --create-slot; done
fi
# the control rows again, after the slots: the mirrors (no snapshot) must hold them too
rp_psql src >/dev/null <<SQL
BEGIN;
TRUNCATE ctl, wl_conf;
INSERT INTO ctl VALUES (false);
INSERT INTO wl_conf VALUES ('$SLOT', 0.01);
COMMIT;
SQL

# ---------------------------------------------------------------- processes

wruns=0
start_writer() {
	wruns=$((wruns + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "$(rp_nats_sink_url)" \
		--nats-stream "$STREAM" --nats-subject-prefix "$PREFIX" \
		--state-dir "$work/st-writer" --max-memory 16MB 2>"$work/writer-$wruns.err" &
	writer_pid=$!
}

# start_reader R [ARG...]: reader R's next run (ARG: --endpos N)
start_reader() {
	local r=$1 sink source
	shift
	runs[$r]=$((runs[$r] + 1))
	pos_at_start[$r]=$(position "$r")
	case $r in
	mirror) sink=(--sink "postgres:$(rp_conninfo dst mirror)" --create-tables) ;;
	log) sink=(--sink "file:$LOG") ;;
	agg) sink=(--sink "postgres:$(rp_conninfo dst agg)" --create-tables
		--aggregate "name=a_sum source=public.t_a dims=flag measure=amount agg=sum output=table:agg.a_sum"
		--aggregate "name=a_max source=public.t_a dims=flag measure=ts agg=max output=table:agg.a_max"
		--aggregate "name=a_cnt source=public.t_a dims=flag measure=id agg=count output=table:agg.a_cnt"
		--aggregate "name=au_cnt source=public.audit dims=tbl measure=id agg=count output=table:agg.au_cnt"
		--aggregate "name=au_cd source=public.audit dims=tbl measure=txid agg=count_distinct output=table:agg.au_cd"
		--aggregate "name=au_max source=public.audit dims=tbl measure=ver agg=max output=table:agg.au_max") ;;
	esac
	if [[ $STANDIN == slot ]]; then
		source=(-d "$src_CONNSTR")
		[[ ${1:-} != --endpos ]] || set -- -E "$f"
	else
		source=(--source "$(rp_nats_sink_url)" --nats-stream "$STREAM")
		# the bindings' seed is a SELECT on the source (docs/aggregates.md), the stream's
		# xids and LSNs decide what it already holds
		[[ $r != agg ]] || source+=(-d "$src_CONNSTR")
	fi
	replicant "${source[@]}" -S "fo_$r" \
		--state-dir "$work/st-$r" --start "${sink[@]}" --max-memory 16MB "$@" \
		2>"$work/$r-${runs[$r]}.err" &
	pid[$r]=$!
}

# position R: the end LSN of reader R's durable checkpoint ('' before its first)
position() {
	case $1 in
	mirror | agg) rp_dst_checkpoint dst "fo_$1" "$1" ;;
	log)
		[[ -s $LOG ]] || return 0
		# the last checkpoint line, however far back (a batch of a caught-up backlog can be
		# many MB, and a killed run leaves its unacknowledged tail after it); none: ''
		{ tac "$LOG" | grep -a -m 1 '^{"kind":"checkpoint"' || true; } |
			sed -n 's/.*"end_lsn":"\([0-9A-F]*\/[0-9A-F]*\)".*/\1/p' ;;
	esac
}

lsn_lt() { [[ $(rp_psql src -Atc "SELECT '${1:-0/0}'::pg_lsn < '${2:-0/0}'::pg_lsn") == t ]]; }

# wait_progress R: until reader R's checkpoint moved since its run started (the deadline
# only guards against a hang)
wait_progress() {
	local r=$1 deadline=$((SECONDS + 300))
	while [[ $(position "$r") == "${pos_at_start[$r]}" ]]; do
		kill -0 "${pid[$r]}" 2>/dev/null || fail "reader $r run ${runs[$r]} exited before it made progress"
		((SECONDS < deadline)) || fail "reader $r run ${runs[$r]}: its checkpoint stayed at ${pos_at_start[$r]:-none} for 300 s"
		sleep 0.1
	done
}

# wait_reaches R LSN: until reader R's checkpoint is at or past LSN
wait_reaches() {
	local r=$1 deadline=$((SECONDS + 300))
	while lsn_lt "$(position "$r")" "$2"; do
		kill -0 "${pid[$r]}" 2>/dev/null || fail "reader $r exited before it reached $2"
		((SECONDS < deadline)) || fail "reader $r did not reach $2 within 300 s (at $(position "$r"))"
		sleep 0.2
	done
}

# kill_reader R: SIGKILL reader R (it must be running: one that exited by itself fails)
kill_reader() {
	local r=$1 rc=0
	if ! kill -0 "${pid[$r]}" 2>/dev/null; then
		wait "${pid[$r]}" || rc=$?
		fail "reader $r run ${runs[$r]} exited by itself (status $rc)"
	fi
	kill -9 "${pid[$r]}"
	wait "${pid[$r]}" 2>/dev/null || true
	pid[$r]=
}

rand_sleep() {
	local ms=$(($1 + RANDOM % ($2 - $1)))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	echo "$ms"
}

# one kill round of reader R: odd kills once the run made progress, even ones at random
round=0
kill_round() {
	local r=$1 how ms
	round=$((round + 1))
	if (((kills[$r] + 1) % 2)); then
		wait_progress "$r"
		ms=$(rand_sleep 0 600)
		how="after progress and ${ms}ms"
	else
		ms=$(rand_sleep 100 1500)
		how="after ${ms}ms"
	fi
	kill_reader "$r"
	kills[$r]=$((kills[$r] + 1))
	printf 'round %2d: %-6s killed %s (kill %d), checkpoint %s\n' "$round" "$r" "$how" "${kills[$r]}" "$(position "$r")"
	kill -0 "${workers[0]}" 2>/dev/null || { cat "$work/worker1.out"; fail "the workload worker ended early"; }
	start_reader "$r"
}

# the stream's last sequence
stream_last() {
	local n
	n=$(rp_nats_tool "$STREAM" info | sed -n 's/.*"last_seq":\([0-9]*\).*/\1/p')
	echo "${n:-0}"
}

kill_writer() {
	local before
	rp_kill9_alive writer_pid || fail "writer run $wruns exited by itself (status $RP_EXIT_STATUS)"
	before=$(stream_last)
	start_writer
	rp_nats_wait_for 180 writer_published "$before" || fail "writer run $wruns published nothing within 180 s (or exited)"
	printf '          writer killed with SIGKILL and restarted (run %d); stream past seq %s\n' "$wruns" "$before"
}
writer_published() {
	kill -0 "$writer_pid" 2>/dev/null || fail "writer run $wruns exited"
	(($(stream_last) > $1))
}

fence() { rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_lsn()"; }

# ---------------------------------------------------------------- phase 1: everyone killed in turn

rp_nats_build_tools "$work"
start_writer
rp_psql src -c "CALL workload(1, false, 0)" >"$work/worker1.out" 2>&1 &
workers+=($!)
rp_nats_wait_for 180 writer_published 0 || fail "the writer published nothing within 180 s"
for r in "${READERS[@]}"; do start_reader "$r"; done
rp_psql src -c "CALL workload(2, true, 12)" >"$work/worker2.out" 2>&1 &
workers+=($!)

for ((i = 0; i < 9; i++)); do
	kill_round "${READERS[i % 3]}"
	if ((i == 3)); then
		node=$(rp_nats_wait_stream_leader "$STREAM" 60) || fail "stream $STREAM has no leader"
		rp_nats_kill9 "$node"
		printf '          stream leader n%s killed with SIGKILL\n' "$node"
	elif ((i == 7)); then
		rp_nats_restart "$node"
		printf '          n%s restarted\n' "$node"
	fi
done
kill_writer

# ---------------------------------------------------------------- phase 2: agg stopped
wait_progress agg
kill -STOP "${pid[agg]}"
stopped_at=$(position agg)
printf '          agg stopped (SIGSTOP) at checkpoint %s\n' "${stopped_at:-none}"
for ((i = 0; i < 6; i++)); do
	kill_round "${READERS[i % 2]}"
	((i == 2)) && kill_writer
done
# a long stretch: until the source wrote STOPPED_MB of WAL past agg's checkpoint
deadline=$((SECONDS + 600))
while (($(rp_psql src -Atc "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '${stopped_at:-0/0}')::bigint") < STOPPED_MB * 1048576)); do
	((SECONDS < deadline)) || fail "the source did not write $STOPPED_MB MB of WAL within 600 s while agg was stopped"
	kill -0 "${workers[0]}" 2>/dev/null || { cat "$work/worker1.out"; fail "the workload worker ended early"; }
	sleep 0.5
done
f=$(fence)
rp_nats_wait_confirmed src "$SLOT" "$f" 300 "$writer_pid" || fail "the writer's slot did not confirm $f within 300 s while agg was stopped"
confirmed=$(rp_nats_confirmed src "$SLOT")
wait_reaches mirror "$f"
wait_reaches log "$f"
agg_at=$(position agg)
[[ $(awk '{print $3}' "/proc/${pid[agg]}/stat") == T ]] || fail "agg is not stopped"
lsn_lt "$agg_at" "$f" || fail "agg's checkpoint $agg_at is not behind the fence $f, yet it was stopped before it"
[[ $agg_at == "$stopped_at" ]] || fail "agg's checkpoint moved from $stopped_at to $agg_at while it was stopped"
behind=$(rp_psql src -Atc "SELECT pg_wal_lsn_diff('$f', '${agg_at:-0/0}')")
printf '          while agg was stopped at %s (%s bytes of WAL behind): slot %s confirmed %s >= fence %s; mirror and log reached it\n' \
	"${agg_at:-none}" "$behind" "$SLOT" "$confirmed" "$f"
kill -CONT "${pid[agg]}"

# ---------------------------------------------------------------- phase 3: the rest of the kills
while :; do
	more=0
	for r in "${READERS[@]}"; do
		((kills[$r] < ROUNDS)) || continue
		more=1
		kill_round "$r"
	done
	((more)) || break
done

# ---------------------------------------------------------------- drain with --endpos
rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
for p in "${workers[@]}"; do
	wait "$p" || { cat "$work"/worker*.out; fail "a workload job failed"; }
done
workers=()
# the readers down first: the last fence is then past every checkpoint, and each run below reads up
# to L (a checkpoint already at --endpos is checked apart, at the end)
for r in "${READERS[@]}"; do kill_reader "$r"; done
f=$(fence)
rp_nats_wait_confirmed src "$SLOT" "$f" 300 "$writer_pid" || fail "the writer did not confirm the last fence $f within 300 s"
L=$(stream_last)
for r in "${READERS[@]}"; do start_reader "$r" --endpos "$L"; done
for r in "${READERS[@]}"; do
	deadline=$((SECONDS + 600))
	while kill -0 "${pid[$r]}" 2>/dev/null; do
		((SECONDS < deadline)) || fail "reader $r did not finish --endpos $L within 600 s"
		sleep 0.2
	done
	rc=0
	wait "${pid[$r]}" || rc=$?
	pid[$r]=
	((rc == 0)) || fail "reader $r with --endpos $L exited with status $rc"
done
kill -TERM "$writer_pid"
rc=0
wait "$writer_pid" || rc=$?
writer_pid=
((rc == 0)) || fail "the writer, stopped by SIGTERM, exited with $rc"

# ---------------------------------------------------------------- compare
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c extra_float_digits=3 -c bytea_output=hex'
digest() {
	rp_psql "$1" -d "$2" -Atc "SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), '')) FROM ($3) s(r)"
}
summary=()
# same NAME SRC_QUERY DB DST_QUERY: the two queries' rows as multisets
same() {
	local name=$1 a b
	a=$(digest src postgres "$2")
	b=$(digest dst "$3" "$4")
	if [[ $a != "$b" ]]; then
		rp_psql src -Atc "$2" | sort >"$work/$name.src"
		rp_psql dst -d "$3" -Atc "$4" | sort >"$work/$name.dst"
		diff "$work/$name.src" "$work/$name.dst" | cut -c 1-200 | head -n 10 || true  # (diff exits 1: the reason follows)
		fail "$name differs: source $a, $3 $b"
	fi
	summary+=("$name ${a%% *}")
}
# (fence: the last one is the stream's last transaction, so --endpos L delivered everything)
for t in 'public.t_a' '"we.ird *>%"."tâble.x>y*"' '"Ünï cödé"."sp ace"' 'public.audit' 'public.fence'; do
	q="SELECT x::text FROM $t x"
	same "mirror $t" "$q" mirror "$q"
	same "agg-mirror $t" "$q" agg "$q"
done
same a_sum "SELECT flag || '|' || coalesce(trim_scale(sum(amount))::text, '~') FROM t_a GROUP BY flag" \
	agg "SELECT flag || '|' || coalesce(trim_scale(sum_amount)::text, '~') FROM agg.a_sum"
same a_max "SELECT flag || '|' || coalesce(max(ts)::text, '~') FROM t_a GROUP BY flag" \
	agg "SELECT flag || '|' || coalesce(max_ts::text, '~') FROM agg.a_max"
same a_cnt "SELECT flag || '|' || count(id) FROM t_a GROUP BY flag" \
	agg "SELECT flag || '|' || count_id FROM agg.a_cnt"
same au_cnt "SELECT tbl || '|' || count(id) FROM audit GROUP BY tbl" \
	agg "SELECT tbl || '|' || count_id FROM agg.au_cnt"
same au_cd "SELECT tbl || '|' || count(DISTINCT txid) FROM audit GROUP BY tbl" \
	agg "SELECT tbl || '|' || count_distinct_txid FROM agg.au_cd"
same au_max "SELECT tbl || '|' || max(ver) FROM audit GROUP BY tbl" \
	agg "SELECT tbl || '|' || max_ver FROM agg.au_max"
unset PGOPTIONS

rp_nats_audit src "$work/audit.tsv" >/dev/null
python3 "$RP_ROOT/regress/check_fanout_log.py" "$LOG" "$work/audit.tsv" >"$work/check.out" ||
	{ cat "$work/check.out"; fail "the log does not hold every committed change exactly once"; }
cat "$work/check.out"

# the checkpoints name the stream they follow
for r in mirror agg; do
	[[ -z $STANDIN ]] || break
	ck=$(rp_psql dst -d "$r" -Atc "SELECT source || ' ' || source_seq FROM replicant.checkpoint WHERE slot = 'fo_$r'")
	[[ ${ck% *} == "nats:$STREAM" ]] || fail "reader $r's checkpoint row says source ${ck% *}, not nats:$STREAM"
	((${ck#* } <= L)) || fail "reader $r's checkpoint is at stream sequence ${ck#* }, past the stream's last $L"
done
[[ -n $STANDIN ]] || tail -n 1 "$LOG" | grep -q "nats:$STREAM" || fail "the log's last checkpoint line does not name nats:$STREAM: $(tail -n 1 "$LOG")"
# a reader whose checkpoint is already at --endpos L ends at once (exit 0) and delivers nothing
if [[ -z $STANDIN ]]; then
	size=$(stat -c %s "$LOG")
	start_reader log --endpos "$L"
	deadline=$((SECONDS + 120))
	while kill -0 "${pid[log]}" 2>/dev/null; do
		((SECONDS < deadline)) || fail "reader log, its checkpoint at sequence $L, did not end within 120 s of a start with --endpos $L"
		sleep 0.2
	done
	rc=0
	wait "${pid[log]}" || rc=$?
	pid[log]=
	((rc == 0)) || fail "reader log, its checkpoint at sequence $L, exited with $rc on a start with --endpos $L"
	[[ $(stat -c %s "$LOG") == "$size" ]] || fail "reader log, its checkpoint at --endpos $L, wrote to the log"
fi
# G4: the workload's values carry this; no reader or writer log may
if grep -l -F '€🙂' "$work"/*.err >/dev/null 2>&1; then
	fail "a row value reached a consumer's log (G4): $(grep -l -F '€🙂' "$work"/*.err | head -n 3)"
fi
status=0
printf 'PASS nats_fanout: 3 readers of one stream, SIGKILLed %d/%d/%d times (mirror/log/agg), the stream leader killed, the writer killed %d times, agg stopped while the slot was confirmed %s bytes past it; mirror = source, log once each, aggregates = GROUP BY (%s) (%ds)\n' \
	"${kills[mirror]}" "${kills[log]}" "${kills[agg]}" "$((wruns - 1))" "$behind" "$(IFS=,; echo "${summary[*]}")" "$((SECONDS - started))"
