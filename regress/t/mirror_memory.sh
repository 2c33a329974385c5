#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_memory.sh: the mirror applies one large transaction in bounded memory.
#
# Proves G5 for the mirror sink: its net-effect map (the effect arena, effect arrays and hash
# slots) counts against --max-memory, and when its share is full it applies what it holds
# inside the open destination transaction and goes on; the batch still commits once, with
# its checkpoint. One transaction inserting ROWS rows of (bigint key, ~400-byte text) and
# updating a tenth of them (so the map folds keys across a mid-batch apply) goes to a
# mirror with --max-memory 16MB, on each path a transaction can take:
#   early   the default (-o streaming=on, early apply: the table is new to the mirror, so the
#           chunks stream in and the rest comes at the commit)
#   whole   --no-early-apply (the transaction reaches the sink whole at its commit)
#   nostream -o streaming=off (the server sends the transaction whole)
#   history  --history public.memh: a second transaction of HROWS wider rows on a history
#           table (one source transaction's versions apply together: the map is applied in
#           parts, and a later change of a key in that transaction revises the version an
#           earlier part opened; a delete removes it)
# Then one large value (G5: a value is held at most twice): a row with a VALUE_MB (48) MB
# text, stored uncompressed, mirrored with --max-memory 16MB from a slot of its own; peak RSS
# <= 2 * VALUE_MB + 16 MB + 64 MB and the row equal. The old code held it five times or more
# (the receive buffer, the spill buffer, the read-back, the effect arena, COPY's buffer and
# libpq's output buffer). The same value then goes through the file sink (whose JSON-lines
# writer the stdout and exec sinks share) from a slot of its own: the logged row's md5 equals
# the source's (the line parsed by python3) and peak RSS <= 2 * VALUE_MB + 32 MB (the received
# record, libpq's receive buffer, and a bounded output buffer). The old writer rendered the
# record whole before writing it, a third copy: 152 MB for the 48 MB value, over the 128 MB.
# Asserts, per path: the consumer exits 0; the mirrored table equals the source (count and
# md5 of every row; for the history table: one open version per live key, all opened at one
# LSN, none closed, with the source's values); the destination checkpoint holds the transaction's commit; peak RSS (VmHWM, from
# /usr/bin/time -v or sampled from /proc) <= --max-memory + 64 MB. The unbounded map of the
# old code held about 120 MB here on every path.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROWS=${ROWS:-300000}
HROWS=${HROWS:-20000}
VALUE_MB=${VALUE_MB:-48}
FILE_SLACK_MB=${FILE_SLACK_MB:-32}
MAXMEM_MB=16
LIMIT_KB=$(((MAXMEM_MB + 64) * 1024))
PATHS=${PATHS:-early whole nostream history}
work=$(mktemp -d /tmp/rp-mirrormem.XXXXXX)
status=1
pid=
cleanup() {
	local rc=$?
	[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
	rp_cluster_cleanup_all || true
	wait 2>/dev/null || true
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT
fail() {
	printf 'FAIL mirror_memory: %s\n' "$*"
	for f in "$work"/*.err; do [[ -s $f ]] && { printf -- '--- %s\n' "$f"; tail -n 20 "$f"; }; done
	exit 1
}

started=$SECONDS
rp_cluster_start src "logical_decoding_work_mem = '64kB'"
rp_cluster_start dst
export PGOPTIONS='-c DateStyle=ISO -c extra_float_digits=3'
rp_psql src -c "CREATE TABLE mem (id bigint PRIMARY KEY, v text); CREATE TABLE memh (id bigint PRIMARY KEY, v text)"
for p in $PATHS; do
	replicant -d "$src_CONNSTR" -S "mem_$p" --create-slot
	rp_psql dst -c "CREATE DATABASE d_$p"
done
before=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
# one transaction: ROWS inserts, then a tenth of the keys updated (folded into their upserts,
# or applied as upserts of rows an earlier mid-batch apply already wrote)
rp_psql src <<SQL
BEGIN;
INSERT INTO mem SELECT g, repeat(md5(g::text), 12) FROM generate_series(1, $ROWS) g;
UPDATE mem SET v = 'updated ' || id WHERE id % 10 = 0;
COMMIT;
BEGIN;
INSERT INTO memh SELECT g, repeat(md5(g::text), 36) FROM generate_series(1, $HROWS) g;
UPDATE memh SET v = 'updated ' || id WHERE id % 10 = 0;
DELETE FROM memh WHERE id % 7 = 0;
COMMIT;
SQL
endpos=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")

timev=
[[ -x /usr/bin/time ]] && /usr/bin/time -v true >/dev/null 2>&1 && timev=/usr/bin/time

# run_consumer NAME ARGS...: the consumer from slot mem_NAME until endpos; sets rss_kb
run_consumer() {
	local name=$1 rpid kb hwm_kb=0 rc=0 state=$work/state-$1
	shift
	local args=(-d "$src_CONNSTR" -S "mem_$name" --start -n -E "$endpos"
		--state-dir "$state" --max-memory "${MAXMEM_MB}MB" "$@")
	if [[ -n $timev ]]; then
		$timev -v -o "$work/time-$name.txt" replicant "${args[@]}" 2>"$work/$name.err" &
	else
		replicant "${args[@]}" 2>"$work/$name.err" &
	fi
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		rpid=$(pgrep -n -f -- "--state-dir $state" || true)
		if [[ -n $rpid && -r /proc/$rpid/status ]]; then
			kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rpid/status" 2>/dev/null || echo 0)
			((${kb:-0} > hwm_kb)) && hwm_kb=$kb
		fi
		sleep 0.2
	done
	wait "$pid" || rc=$?
	pid=
	((rc == 0)) || fail "path $name: the consumer exited with status $rc"
	if [[ -n $timev ]]; then
		rss_kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time-$name.txt")
	else
		rss_kb=$hwm_kb
	fi
}

# run_path NAME ARGS...: the mirror to d_NAME until endpos; sets rss_kb
run_path() {
	local name=$1
	shift
	run_consumer "$name" --sink "postgres:$(rp_conninfo dst "d_$name")" --create-tables "$@"
}

summary=
for p in $PATHS; do
	case $p in
		early) run_path early ;;
		whole) run_path whole --no-early-apply ;;
		nostream) run_path nostream -o streaming=off ;;
		history) run_path history --history public.memh ;;
		*) fail "unknown path $p" ;;
	esac
	a=$(rp_psql src -Atc "SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM mem")
	b=$("$RP_BINDIR/psql" -X -At -d "$(rp_conninfo dst "d_$p")" \
		-c "SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM public.mem")
	[[ $a == "$b" ]] || fail "path $p: the mirrored table differs: source $a, destination $b"
	a=$(rp_psql src -Atc "SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM memh")
	open=
	[[ $p == history ]] && open="WHERE valid_to_lsn IS NULL"
	b=$("$RP_BINDIR/psql" -X -At -d "$(rp_conninfo dst "d_$p")" \
		-c "SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM public.memh $open")
	[[ $a == "$b" ]] || fail "path $p: table memh differs: source $a, destination $b"
	if [[ $p == history ]]; then
		v=$("$RP_BINDIR/psql" -X -At -d "$(rp_conninfo dst "d_$p")" \
			-c "SELECT count(*) FILTER (WHERE valid_to_lsn IS NOT NULL) || ' ' || count(DISTINCT valid_from_lsn) FROM public.memh")
		[[ $v == "0 1" ]] || fail "path history: closed versions and distinct opening LSNs are '$v', expected '0 1'"
	fi
	ck=$("$RP_BINDIR/psql" -X -At -d "$(rp_conninfo dst "d_$p")" \
		-c "SELECT commit_lsn > '$before'::pg_lsn FROM replicant.checkpoint WHERE slot = 'mem_$p'")
	[[ $ck == t ]] || fail "path $p: the destination checkpoint does not hold the transaction's commit"
	printf 'path %s: peak RSS %d kB (limit %d kB)\n' "$p" "$rss_kb" "$LIMIT_KB"
	((rss_kb > 0 && rss_kb <= LIMIT_KB)) ||
		fail "path $p: consumer peak RSS $rss_kb kB exceeds --max-memory ${MAXMEM_MB}MB + 64 MB ($LIMIT_KB kB)"
	summary+=" $p $((rss_kb / 1024)) MB;"
done

# one large value, from a slot that starts after the transactions above
if ((VALUE_MB > 0)); then
	replicant -d "$src_CONNSTR" -S mem_value --create-slot
	replicant -d "$src_CONNSTR" -S mem_value_file --create-slot
	rp_psql dst -c "CREATE DATABASE d_value"
	rp_psql src -c "CREATE TABLE memv (id int PRIMARY KEY, v text); ALTER TABLE memv ALTER v SET STORAGE EXTERNAL"
	rp_psql src -c "INSERT INTO memv SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, $VALUE_MB * 32768) g"
	endpos=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
	run_path value
	a=$(rp_psql src -Atc "SELECT count(*) || ' ' || md5(string_agg(id || ':' || md5(v), ',')) FROM memv")
	b=$("$RP_BINDIR/psql" -X -At -d "$(rp_conninfo dst d_value)" \
		-c "SELECT count(*) || ' ' || md5(string_agg(id || ':' || md5(v), ',')) FROM public.memv")
	[[ $a == "$b" ]] || fail "path value: table memv differs: source $a, destination $b"
	vlimit_kb=$(((2 * VALUE_MB + MAXMEM_MB + 64) * 1024))
	printf 'path value: peak RSS %d kB (limit %d kB)\n' "$rss_kb" "$vlimit_kb"
	((rss_kb > 0 && rss_kb <= vlimit_kb)) ||
		fail "path value: consumer peak RSS $rss_kb kB for one $VALUE_MB MB value exceeds twice the value + --max-memory + 64 MB ($vlimit_kb kB)"
	summary+=" one ${VALUE_MB} MB value $((rss_kb / 1024)) MB (limit $((vlimit_kb / 1024)) MB);"

	# the same value through the file sink (and so the JSON-lines writer of stdout and exec):
	# written slice by slice, never rendered whole
	run_consumer value_file --sink "file:$work/value.jsonl"
	a=$(rp_psql src -Atc "SELECT count(*) || ' ' || md5(string_agg(id || ':' || md5(v), ',')) FROM memv")
	b=$(python3 - "$work/value.jsonl" <<'PY'
import hashlib, json, sys
rows = []
with open(sys.argv[1], "rb") as f:
    for line in f:
        rec = json.loads(line)
        if rec.get("kind") == "insert" and rec.get("table") == "memv":
            new = rec["new"]
            rows.append("%d:%s" % (new["id"], hashlib.md5(new["v"].encode()).hexdigest()))
print(len(rows), hashlib.md5(",".join(rows).encode()).hexdigest())
PY
	) || fail "path value_file: the log could not be read as JSON lines"
	[[ $a == "$b" ]] || fail "path value_file: the logged row differs: source $a, log $b"
	vlimit_kb=$(((2 * VALUE_MB + FILE_SLACK_MB) * 1024))
	printf 'path value_file: peak RSS %d kB (limit %d kB)\n' "$rss_kb" "$vlimit_kb"
	((rss_kb > 0 && rss_kb <= vlimit_kb)) ||
		fail "path value_file: consumer peak RSS $rss_kb kB for one $VALUE_MB MB value through the file sink exceeds twice the value + $FILE_SLACK_MB MB ($vlimit_kb kB)"
	summary+=" through the file sink $((rss_kb / 1024)) MB (limit $((vlimit_kb / 1024)) MB);"
fi

status=0
printf 'PASS mirror_memory: %d rows in one transaction mirrored equal with --max-memory %dMB, peak RSS <= %d MB on every path:%s (G5) (%ds)\n' \
	"$ROWS" "$MAXMEM_MB" "$((LIMIT_KB / 1024))" "$summary" "$((SECONDS - started))"
