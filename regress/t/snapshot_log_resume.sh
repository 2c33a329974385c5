#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_log_resume.sh: an initial snapshot into a log sink (file, exec, stdout)
# killed with SIGKILL part way, twice, is resumed by the same command, and a rebuild from the
# log equals the source.
#
# Proves G1 for the log sinks' snapshot across crashes of the consumer (issue 16 item 3):
# the sink keeps its progress in STATE-DIR/SLOT.snapshot (the consistent point, the tables
# whose dump ended and was delivered, the file log's durable length), so a rerun dumps the
# tables not done again whole under a new snapshot, as new dumps, leaves the dumps that
# stopped open, and streams from the first run's consistent point. The copy is held at a
# known row of a table by an advisory lock the script holds (a row-level security policy of
# the source role calls a gate function), so each kill falls inside a given table's dump,
# whatever the machine's speed. A workload writes throughout. Then, per sink:
#   - the consistent point never moved, and the completed run streams from it;
#   - `replicant verify-snapshot` reports the stopped dumps open (exit 5), and with --latest
#     exactly one complete dump per table (exit 0);
#   - a rebuild from the log (each table's newest complete dump, `--latest-rows`, then every
#     change line after it applied by key: upsert, delete) equals the source;
#   - the progress file is gone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snaplogres.XXXXXX)
TABLES=(big_t wide_t comp_t)
consumer_pid=
workload_pid=
locker_pid=
child_pid=
runs=0
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid locker_pid child_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail snapshot_log_resume "$work/*.err" 8 "$*"; }

rp_cluster_start src
rp_psql src <<'SQL' >/dev/null
CREATE ROLE rep LOGIN REPLICATION;
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text);
CREATE TABLE wide_t (id int PRIMARY KEY, a text, c numeric);
CREATE TABLE comp_t (a int, b text, v int, PRIMARY KEY (a, b));
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE fence (id int PRIMARY KEY);
CREATE SEQUENCE ids START 10000000;
CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT floor(random() * n)::int $$;
INSERT INTO big_t SELECT g, g % 10, md5(g::text) FROM generate_series(1, 60000) g;
INSERT INTO wide_t SELECT g, repeat(md5(g::text), 3), g * 1.5 FROM generate_series(1, 40000) g;
INSERT INTO comp_t SELECT g % 1000, md5((g / 1000)::text), g FROM generate_series(1, 30000) g;
ANALYZE;
-- the copy of a row at or past `at` waits while the script holds advisory lock `lockid`
CREATE FUNCTION public.gate(k bigint, at bigint, lockid int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
	IF k >= at THEN
		PERFORM pg_advisory_lock_shared(lockid);
		PERFORM pg_advisory_unlock_shared(lockid);
	END IF;
	RETURN true;
END $$;
ALTER TABLE wide_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY gate ON wide_t FOR SELECT TO rep USING (public.gate(id, 20000, 1));
ALTER TABLE comp_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY gate ON comp_t FOR SELECT TO rep USING (public.gate(a, 600, 2));
GRANT SELECT ON ALL TABLES IN SCHEMA public TO rep;
CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		CASE ri(6)
			WHEN 0 THEN INSERT INTO big_t VALUES (nextval('ids'), 1, md5(random()::text));
			WHEN 1 THEN UPDATE big_t SET v = md5(random()::text), grp = grp + 1 WHERE id = 1 + ri(60000);
			WHEN 2 THEN DELETE FROM big_t WHERE id = 1 + ri(60000);
			WHEN 3 THEN UPDATE wide_t SET c = c + 1, a = md5(random()::text) WHERE id = 1 + ri(40000);
			WHEN 4 THEN DELETE FROM comp_t WHERE a = ri(1000) AND b = md5(ri(30)::text);
			ELSE INSERT INTO comp_t VALUES (ri(1000), md5(ri(40)::text), i) ON CONFLICT (a, b) DO UPDATE SET v = EXCLUDED.v;
		END CASE;
		COMMIT;
		PERFORM pg_sleep(0.002);
	END LOOP;
END $$;
SQL
REP_CONNSTR="host=$src_HOST port=$src_PORT user=rep dbname=postgres"
declare -A relid
for t in "${TABLES[@]}"; do relid[$t]=$(rp_psql src -Atc "SELECT 'public.$t'::regclass::oid"); done

# lock N held by a session of the script until release_lock
hold_lock() {
	rp_psql src -c "SELECT pg_advisory_lock($1); SELECT pg_sleep(3600)" >/dev/null 2>&1 &
	locker_pid=$!
	for _ in $(seq 1 600); do
		[[ $(rp_psql src -Atc "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted AND mode = 'ExclusiveLock'") == 1 ]] && return 0
		sleep 0.1
	done
	fail "advisory lock $1 not taken"
}
release_lock() {
	rp_psql src -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND mode = 'ExclusiveLock'" >/dev/null
	wait "$locker_pid" 2>/dev/null || true
	locker_pid=
}

start_consumer() {
	local sink
	runs=$((runs + 1))
	case $kind in
		file) sink="file:$log" ;;
		exec) sink="exec:python3 $RP_ROOT/regress/ack_child.py $log" ;;
		stdout) sink=stdout ;;
	esac
	replicant -d "$REP_CONNSTR" -S "$slot" --create-slot --snapshot --start \
		--snapshot-workers=1 --snapshot-chunk-rows=5000 --sink "$sink" \
		--state-dir "$state" -s 1 -v >>"$work/$kind.stdout" 2>"$work/$kind-c$runs.err" &
	consumer_pid=$!
}

# rows of store $1 in the log (for the file sink: in its durable part)
rows_in_log() {
	local bytes
	[[ -f $log ]] || { echo 0; return; }
	if [[ $kind == file ]]; then
		bytes=$(sed -n 's/^offset //p' "$state/$slot.snapshot" 2>/dev/null)
		head -c "${bytes:-0}" "$log"
	else
		cat "$log"
	fi | grep -c "^{\"kind\":\"row\".*\"store\":\"$1\"" || true
}
is_done() { grep -qx "done ${relid[$1]}" "$state/$slot.snapshot" 2>/dev/null; }
progress_lsn() { sed -n 's/^lsn //p' "$state/$slot.snapshot"; }

# kill once table $1 is done and $2 rows of store $3 are delivered
kill_when() {
	local deadline=$((SECONDS + 600)) # only a guard against a hang
	until is_done "$1" && (($(rows_in_log "$3") >= $2)); do
		kill -0 "$consumer_pid" 2>/dev/null || fail "run $runs ($kind) exited before it could be killed"
		((SECONDS < deadline)) || fail "$kind: $1 not done, or fewer than $2 rows of $3, before kill $runs"
		sleep 0.05
	done
	[[ $kind == exec ]] && child_pid=$(pgrep -P "$consumer_pid" || true)
	rp_kill9_alive consumer_pid || fail "run $runs ($kind) had exited by itself"
	# the exec child ends at the end of its input: wait for it before the next one appends
	if [[ -n $child_pid ]]; then
		for _ in $(seq 1 600); do kill -0 "$child_pid" 2>/dev/null || break; sleep 0.1; done
		child_pid=
	fi
}

# the rebuild: each table's newest complete dump, then the change lines applied by key
rebuild() {
	local db=rb_$kind t
	rp_psql src -c "CREATE DATABASE $db" >/dev/null
	rp_psql src -d "$db" >/dev/null <<'SQL'
CREATE TABLE big_t (id bigint PRIMARY KEY, grp int NOT NULL, v text);
CREATE TABLE wide_t (id int PRIMARY KEY, a text, c numeric);
CREATE TABLE comp_t (a int, b text, v int, PRIMARY KEY (a, b));
SQL
	for t in "${TABLES[@]}"; do
		replicant verify-snapshot --latest-rows "public.$t" "$log" >"$work/$kind-$t.rows" 2>>"$work/$kind-verify.err" ||
			fail "$kind: verify-snapshot --latest-rows public.$t failed"
	done
	python3 - "$log" "$work" "$kind" >"$work/$kind-rebuild.sql" <<'PY'
import json, sys
log, work, kind = sys.argv[1:4]
keys = {"big_t": ["id"], "wide_t": ["id"], "comp_t": ["a", "b"]}
def lit(obj):
    s = json.dumps(obj)
    assert "$j$" not in s
    return "$j$" + s + "$j$"
def delete(t, key):
    cond = " AND ".join("%s.%s = r.%s" % (t, k, k) for k in keys[t])
    return "DELETE FROM %s USING json_populate_record(NULL::%s, %s) r WHERE %s;" % (t, t, lit(key), cond)
def upsert(t, row):
    return delete(t, {k: row[k] for k in keys[t]}) + \
        "INSERT INTO %s SELECT * FROM json_populate_record(NULL::%s, %s);" % (t, t, lit(row))
print("BEGIN;")
for t in keys:
    with open("%s/%s-%s.rows" % (work, kind, t)) as f:
        for line in f:
            print("INSERT INTO %s SELECT * FROM json_populate_record(NULL::%s, %s);" % (t, t, lit(json.loads(line))))
# the change lines, in log order; for the file sink only up to its last checkpoint line
lines = open(log).read().split("\n")
if kind == "file":
    last = max(i for i, l in enumerate(lines) if l.startswith('{"kind":"checkpoint"'))
    lines = lines[:last]
for l in lines:
    if not l.startswith('{"kind":"insert"') and not l.startswith('{"kind":"update"') and \
            not l.startswith('{"kind":"delete"'):
        continue
    c = json.loads(l)
    t = c["table"]
    if t not in keys:
        continue
    if c["kind"] == "insert":
        print(upsert(t, c["new"]))
    elif c["kind"] == "update":
        if "key" in c:
            print(delete(t, c["key"]))
        print(upsert(t, c["new"]))
    else:
        print(delete(t, c.get("key") or c.get("old")))
print("COMMIT;")
PY
	rp_psql src -d "$db" -v ON_ERROR_STOP=1 -q -f "$work/$kind-rebuild.sql" >/dev/null 2>"$work/$kind-rebuild.err" ||
		fail "$kind: the rebuild SQL failed: $(head -c 300 "$work/$kind-rebuild.err")"
	for t in "${TABLES[@]}"; do
		q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text COLLATE \"C\"), '')) FROM public.$t x"
		a=$(rp_psql src -Atc "$q")
		b=$(rp_psql src -d "$db" -Atc "$q")
		[[ $a == "$b" ]] || fail "$kind: table $t rebuilt from the log differs: source $a, rebuild $b"
		printf '%s: %s equal (%s rows)\n' "$kind" "$t" "${a%% *}"
	done
}

run_case() {
	kind=$1
	slot=snaplog_$kind
	state=$work/state-$kind
	log=$work/$kind.jsonl
	[[ $kind == stdout ]] && log=$work/$kind.stdout
	runs=0
	rp_psql src -c "UPDATE ctl SET stop = false" >/dev/null
	(
		while [[ $(rp_psql src -Atc "SELECT stop FROM ctl") == f ]]; do
			rp_psql src -c "CALL workload(100)" >/dev/null 2>>"$work/workload.err" || break
		done
	) &
	workload_pid=$!

	# run 1: held inside wide_t (lock 1); big_t done, wide_t's dump stops open
	hold_lock 1
	start_consumer
	kill_when big_t 5000 public.wide_t
	lsn0=$(progress_lsn)
	[[ -n $lsn0 ]] || fail "$kind: no consistent point in the progress file"
	# run 2: wide_t again whole (lock 1 released), held inside comp_t (lock 2)
	release_lock 1
	hold_lock 2
	start_consumer
	kill_when wide_t 5000 public.comp_t
	[[ $(progress_lsn) == "$lsn0" ]] || fail "$kind: the consistent point moved: $lsn0 then $(progress_lsn)"
	grep -q 'resuming the snapshot of consistent point' "$work/$kind-c2.err" || fail "$kind: run 2 did not resume"
	# run 3: comp_t again whole, then the stream
	release_lock 2
	start_consumer
	# said PATTERN: until run 3's stderr holds PATTERN (at most 300 s; the run must not exit)
	said() {
		for _ in $(seq 1 3000); do
			grep -q "$1" "$work/$kind-c3.err" && return 0
			kill -0 "$consumer_pid" 2>/dev/null || fail "$kind: the resumed consumer exited"
			sleep 0.1
		done
		return 1
	}
	said 'snapshot complete' || true
	grep -q "snapshot complete: .* rows; streaming from $lsn0" "$work/$kind-c3.err" ||
		fail "$kind: the resumed run did not complete streaming from the consistent point $lsn0"
	# the progress file goes once the checkpoint is durable, after "snapshot complete" is said
	# and before the stream starts: look once the run says it streams from the slot
	said 'streaming from slot' || fail "$kind: the resumed run did not start streaming from its slot"
	[[ ! -e $state/$slot.snapshot ]] || fail "$kind: the progress file is left behind"

	sleep 1
	rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
	wait "$workload_pid" || true
	workload_pid=
	grep -q 'ERROR:' "$work/workload.err" 2>/dev/null && fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.err")"
	fid=$(rp_psql src -Atc "INSERT INTO fence SELECT coalesce(max(id), 0) + 1 FROM fence RETURNING id")
	for _ in $(seq 1 1200); do
		grep -q "\"table\":\"fence\",\"new\":{\"id\":$fid}" "$log" 2>/dev/null && break
		sleep 0.1
	done
	grep -q "\"table\":\"fence\",\"new\":{\"id\":$fid}" "$log" || fail "$kind: the fence never reached the log"
	kill -TERM "$consumer_pid"
	rc=0; wait "$consumer_pid" || rc=$?
	consumer_pid=
	((rc == 0)) || fail "$kind: the consumer exited with status $rc"

	# the stopped dumps are open; with --latest one complete dump per table
	rc=0; replicant verify-snapshot "$log" >"$work/$kind-verify.out" 2>>"$work/$kind-verify.err" || rc=$?
	((rc == 5)) || fail "$kind: verify-snapshot exited $rc, not 5 (open dumps): $(cat "$work/$kind-verify.out")"
	grep -q ' public.wide_t open ' "$work/$kind-verify.out" || fail "$kind: the stopped dump of wide_t is not reported open"
	grep -q ' public.comp_t open ' "$work/$kind-verify.out" || fail "$kind: the stopped dump of comp_t is not reported open"
	rc=0; replicant verify-snapshot --latest "$log" >"$work/$kind-latest.out" 2>>"$work/$kind-verify.err" || rc=$?
	((rc == 0)) || fail "$kind: verify-snapshot --latest exited $rc: $(cat "$work/$kind-latest.out")"
	for t in "${TABLES[@]}" ctl fence; do
		[[ $(grep -c " public.$t complete " "$work/$kind-verify.out") == 1 ]] ||
			fail "$kind: not exactly one complete dump of $t: $(cat "$work/$kind-verify.out")"
		[[ $(grep -c " public.$t complete " "$work/$kind-latest.out") == 1 ]] || fail "$kind: --latest does not report $t once"
	done
	[[ $(wc -l <"$work/$kind-latest.out") == 5 ]] || fail "$kind: --latest reports more than the 5 tables"
	rebuild
	rp_psql src -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
}

for k in ${RP_SNAPLOG_SINKS:-file exec stdout}; do
	run_case "$k"
done
status=0
printf 'ok snapshot_log_resume\n'
