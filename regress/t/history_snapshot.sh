#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/history_snapshot.sh: the initial snapshot, a re-snapshot, a TRUNCATE and a backfill
# of a --history table (issue 16 item 1).
#
# (a) A snapshot of hist (30,000 rows) into a history table under a workload, killed with
#     SIGKILL twice during the copy and resumed by the same command, then streamed. The
#     workload's audit trigger records, in the changing transaction, every row change (txid,
#     the WAL insert LSN so far, op, old and new key, the new row). A checker recomputes the
#     versions from the audit and compares them version for version: every key live at the
#     consistent point L has one version opened at L at the snapshot's one time T; every
#     transaction after L opens one version per key it left live, closing the one open before,
#     all at its own LSN and time, LSNs increasing with the audit's order. Which transactions
#     are before L is read from the audit's LSNs (a transaction whose changes lie after L is
#     after it; one followed by a transaction that began before L is before it; the one or two
#     undecided splits are each tried). The workload is paused across each kill and restart,
#     so the resumed copy reads a known state: a row a resumed run copied opens at L with the
#     contents of one of the pause points (docs/sinks.md says so), and the checker allows
#     exactly those.
# (b) The slot is dropped, the source changed (updates, updates to the same values, deletes,
#     inserts) and a new slot's snapshot merges into the populated history table: a key whose
#     content is unchanged keeps its versions (no new one), a changed key's open version is
#     closed at the new consistent point L2 and a new one opened there, a gone key's is closed
#     at L2, a new key opens at L2.
# (c) A TRUNCATE of hist closes every open version at the truncating commit; rows inserted
#     afterwards open new versions.
# (d) A table added to the selection is backfilled into a history table while updates run
#     (an audit trigger logs them as in (a)): every version a transaction opened has that
#     transaction's row and lies within its LSN bounds, every other version (a chunk's, at
#     its high watermark) has the row's state at that LSN, every transaction that left a key
#     live opened a version of it, every key's versions chain, and the open versions equal
#     the source.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

ROWS=${ROWS:-30000}
SLOT=hsnap
SLOT2=hsnap2
work=$(mktemp -d /tmp/rp-history-snapshot.XXXXXX)
status=1
consumer_pid=
workload_pid=
runs=0
cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT
fail() { rp_e2e_fail history_snapshot "$work/c*.err" 8 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<SQL >/dev/null
CREATE TABLE hist (id bigint PRIMARY KEY, a int NOT NULL, b text);
CREATE TABLE audit (seq bigserial PRIMARY KEY, txid bigint NOT NULL, lsn pg_lsn NOT NULL, op char(1) NOT NULL,
                    old_id bigint, new_id bigint, a int, b text);
CREATE FUNCTION audit_hist() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO audit (txid, lsn, op, old_id) VALUES (txid_current(), pg_current_wal_insert_lsn(), 'D', OLD.id);
		RETURN OLD;
	END IF;
	INSERT INTO audit (txid, lsn, op, old_id, new_id, a, b)
	VALUES (txid_current(), pg_current_wal_insert_lsn(), left(TG_OP, 1),
	        CASE WHEN TG_OP = 'UPDATE' THEN OLD.id END, NEW.id, NEW.a, NEW.b);
	RETURN NEW;
END \$\$;
CREATE TRIGGER audit_hist AFTER INSERT OR UPDATE OR DELETE ON hist FOR EACH ROW EXECUTE FUNCTION audit_hist();
CREATE TABLE fence (id serial PRIMARY KEY);
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE hb (id int PRIMARY KEY, v text, n int NOT NULL);
CREATE SEQUENCE ids START 10000000;
CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS \$\$ SELECT floor(random() * n)::int \$\$;
INSERT INTO hist SELECT g, g % 13, CASE WHEN g % 7 = 0 THEN NULL ELSE md5(g::text) END FROM generate_series(1, $ROWS) g;
INSERT INTO hb SELECT g, md5(g::text), 0 FROM generate_series(1, 6000) g;
CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS \$\$
DECLARE
	x bigint;
BEGIN
	FOR i IN 1 .. n LOOP
		EXIT WHEN (SELECT stop FROM ctl);
		x := 1 + ri($ROWS);
		CASE ri(7)
			WHEN 0 THEN INSERT INTO hist VALUES (nextval('ids'), -1, 'new');
			WHEN 1 THEN DELETE FROM hist WHERE id = x;
			WHEN 2 THEN UPDATE hist SET id = nextval('ids') WHERE id = x;
			WHEN 3 THEN UPDATE hist SET a = a + 1 WHERE id = x;
				UPDATE hist SET b = 'twice' WHERE id = x + 1;
			WHEN 4 THEN DELETE FROM hist WHERE id = x;
				INSERT INTO hist VALUES (x, -2, 'reborn') ON CONFLICT (id) DO NOTHING;
			ELSE UPDATE hist SET a = a + 1, b = md5(random()::text) WHERE id = x;
		END CASE;
		COMMIT;
		PERFORM pg_sleep(0.002);
	END LOOP;
END \$\$;
SQL
# every INSERT statement into the destination's hist sleeps until the kills are done, so the
# copy (30 chunks of 1,000 rows, two workers) cannot finish before them
rp_slow_new_tables dst 0.2 INSERT '' hist

SEL=(-o "include_tables=public.hist,public.fence")
start_consumer() {
	local slot=$1
	shift
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$slot" --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--history public.hist --history public.hb --state-dir "$work/state" --batch-txns 20 --batch-ms 50 \
		"$@" >"$work/c$runs.out" 2>"$work/c$runs.err" &
	consumer_pid=$!
}
stored() { rp_psql dst -Atc "SELECT coalesce(sum(rows), 0) FROM replicant.snapshot_progress WHERE slot = '$SLOT'" 2>/dev/null || echo 0; }
mark() { rp_psql dst -Atc "SELECT token FROM replicant.snapshot_progress WHERE slot = '$SLOT' AND relid = 0" 2>/dev/null || true; }
audit_seq() { rp_psql src -Atc "SELECT coalesce(max(seq), 0) FROM audit"; }
# wait until the destination's checkpoint of slot $1 covers everything committed so far
wait_fence() {
	local fence a
	fence=$(rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_insert_lsn()")
	for _ in $(seq 1 1200); do
		a=$(rp_dst_checkpoint dst "$1")
		[[ -n $a && $(rp_psql src -Atc "SELECT '$a'::pg_lsn >= '$fence'") == t ]] && return 0
		kill -0 "$consumer_pid" 2>/dev/null || fail "consumer run $runs exited before the fence $fence"
		sleep 0.2
	done
	fail "the destination did not reach the fence $fence"
}
stop_consumer() {
	local rc=0
	kill -TERM "$consumer_pid"
	wait "$consumer_pid" || rc=$?
	consumer_pid=
	((rc == 0)) || fail "consumer run $runs exited with $rc"
}

# the workload runs until paused: a flag it reads before each transaction, and its CALL
# returns (killing psql would not stop the server's loop)
workload_go() {
	rp_psql src -c "UPDATE ctl SET stop = false" >/dev/null
	rp_psql src -c "CALL workload(1000000)" >>"$work/workload.out" 2>&1 &
	workload_pid=$!
}
workload_pause() {
	rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
	wait "$workload_pid" || { cat "$work/workload.out"; fail "the workload failed"; }
	workload_pid=
}

# ---- (a) the snapshot under a workload, killed twice and resumed
workload_go
start_consumer "$SLOT" --create-slot --snapshot --snapshot-workers=2 --snapshot-chunk-rows=1000 "${SEL[@]}" -v
pauses=()
last=0
lmark=
for round in 1 2; do
	deadline=$((SECONDS + 600)) # a guard against a hang only
	until (($(stored) > last + 3000)); do
		kill -0 "$consumer_pid" 2>/dev/null || fail "run $runs exited before kill $round"
		[[ -n $(rp_dst_checkpoint dst "$SLOT") ]] && fail "the snapshot completed before kill $round"
		((SECONDS < deadline)) || fail "no more than $last rows stored before kill $round"
		sleep 0.05
	done
	# pause the workload: the resumed copy then reads the state at this audit position
	workload_pause
	rp_kill9_alive consumer_pid || fail "run $runs exited by itself (status $RP_EXIT_STATUS)"
	pauses+=("$(audit_seq)")
	last=$(stored)
	m=$(mark)
	[[ -n $m ]] || fail "no history snapshot time stored before kill $round"
	[[ -z $lmark || $m == "$lmark" ]] || fail "the history snapshot's point and time moved: $lmark, then $m"
	lmark=$m
	rp_say "kill $round: $last rows stored, history mark $m, workload paused at audit ${pauses[-1]}"
	((round < 2)) || rp_slow_off dst
	start_consumer "$SLOT" --create-slot --snapshot --snapshot-workers=2 --snapshot-chunk-rows=1000 "${SEL[@]}" -v
	# the resumed run's snapshot is taken once it stores a chunk: the workload may go on
	deadline=$((SECONDS + 600))
	until (($(stored) > last)) || [[ -n $(rp_dst_checkpoint dst "$SLOT") ]]; do
		kill -0 "$consumer_pid" 2>/dev/null || fail "resumed run $runs exited"
		((SECONDS < deadline)) || fail "the resumed run $runs stored nothing"
		sleep 0.05
	done
	workload_go
done
deadline=$((SECONDS + 600))
until [[ -n $(rp_dst_checkpoint dst "$SLOT") ]]; do
	kill -0 "$consumer_pid" 2>/dev/null || fail "the resumed consumer exited"
	((SECONDS < deadline)) || fail "the resumed snapshot did not complete"
	sleep 0.1
done
grep -q 'resuming the snapshot of consistent point' "$work/c$runs.err" || fail "the last run did not resume"
sleep 2 # the stream goes on under the workload
workload_pause
wait_fence "$SLOT"
stop_consumer
[[ $(rp_psql dst -Atc "SELECT count(*) FROM replicant.snapshot_progress") == 0 ]] || fail "snapshot progress left behind"

rp_psql src -c "\\copy (SELECT seq, txid, lsn, op, old_id, new_id, a, b FROM audit ORDER BY seq) TO '$work/audit.tsv'"
rp_psql dst -c "\\copy (SELECT id, a, b, valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn) TO '$work/hist.tsv'"
rp_psql src -c "\\copy (SELECT id, a, b FROM hist ORDER BY id) TO '$work/live.tsv'"
export PGOPTIONS='-c TimeZone=UTC'
tstamp=$(rp_psql dst -Atc "SELECT pg_catalog.to_timestamp(split_part('$lmark', '|', 2)::numeric / 1000)")
unset PGOPTIONS

python3 - "$work/audit.tsv" "$work/hist.tsv" "$work/live.tsv" "${lmark%%|*}" "${pauses[*]}" <<'PY' || fail "(a) the history table does not match the source's transactions"
import collections, sys

def nul(v):
    return None if v == "\\N" else v

def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)

L = lsn(sys.argv[4])
pauses = [int(p) for p in sys.argv[5].split()]
txns = collections.OrderedDict()   # txid -> [changes], first_lsn, last_lsn, last seq
for line in open(sys.argv[1]):
    seq, txid, l, op, old_id, new_id, a, b = [nul(x) for x in line.rstrip("\n").split("\t")]
    t = txns.setdefault(txid, {"changes": [], "first": lsn(l), "last": lsn(l), "seq": 0})
    t["changes"].append((op, old_id, new_id, (a, b)))
    t["last"] = max(t["last"], lsn(l))
    t["seq"] = int(seq)
tl = list(txns.values())
n = len(tl)

got = collections.defaultdict(list)
for line in open(sys.argv[2]):
    id_, a, b, vf, vt, tf, tt = [nul(x) for x in line.rstrip("\n").split("\t")]
    got[id_].append(((a, b), vf, vt, tf, tt))
live = {}
for line in open(sys.argv[3]):
    id_, a, b = [nul(x) for x in line.rstrip("\n").split("\t")]
    live[id_] = (a, b)

def apply(state, t, touched=None):
    for op, old_id, new_id, vals in t["changes"]:
        if op == "I":
            state[new_id] = vals
            touched is not None and touched.append(new_id)
        elif op == "U":
            if old_id != new_id:
                state.pop(old_id, None)
                touched is not None and touched.append(old_id)
            state[new_id] = vals
            touched is not None and touched.append(new_id)
        else:
            state.pop(old_id, None)
            touched is not None and touched.append(old_id)

# the split: transactions [0, s) are before the consistent point
s_min = sum(1 for i in range(n - 1) if tl[i + 1]["first"] <= L)
s_max = next((i for i in range(n) if tl[i]["last"] >= L), n)

def check(s):
    errors = []
    states = {}
    st = {}
    marks = sorted(set([s] + [sum(1 for t in tl if t["seq"] <= p) for p in pauses]))
    for i in range(n + 1):
        if i in marks:
            states[i] = dict(st)
        if i < n:
            apply(st, tl[i])
    keys = set(got) | set(live)
    for x in states.values():
        keys |= set(x)
    # the version expected from the snapshot: any of the states it may have read, as observed
    expect = collections.defaultdict(list)
    snap_from = {}
    for k in keys:
        allowed = {states[m].get(k) for m in marks}
        have = got.get(k, [])
        first = have[0] if have and lsn(have[0][1]) == L else None
        content = first[0] if first else None
        if content not in allowed:
            errors.append(f"key {k}: snapshot version {content}, expected one of {allowed}")
            content = states[s].get(k)
        if content is not None:
            expect[k].append([content, "L", None])
        snap_from[k] = content
    state = {k: v for k, v in snap_from.items() if v is not None}
    for ti in range(s, n):
        touched = []
        apply(state, tl[ti], touched)
        for k in dict.fromkeys(touched):
            v = expect[k]
            if v and v[-1][2] is None:
                v[-1][2] = ti
            if k in state:
                v.append([state[k], ti, None])
    lsn_of, time_of = {}, {}
    def bind(ti, l, t, what, k):
        if ti == "L":
            if lsn(l) != L:
                errors.append(f"key {k}: {what} {l}, expected the consistent point")
            ti = -1
        if lsn_of.setdefault(ti, l) != l:
            errors.append(f"key {k}: {what} LSN {l}, transaction {ti} has {lsn_of[ti]} elsewhere")
        if time_of.setdefault(ti, t) != t:
            errors.append(f"key {k}: {what} time {t}, transaction {ti} has {time_of[ti]} elsewhere")
    nv = 0
    for k in keys:
        exp, have = expect.get(k, []), got.get(k, [])
        nv += len(have)
        if len(exp) != len(have):
            errors.append(f"key {k}: {len(have)} versions, expected {len(exp)}")
            continue
        for i, ((vals, f, t), (gv, vf, vt, tf, tt)) in enumerate(zip(exp, have)):
            if vals != gv:
                errors.append(f"key {k} version {i}: values {gv}, expected {vals}")
            bind(f, vf, tf, "valid_from", k)
            if t is None:
                if vt is not None or tt is not None:
                    errors.append(f"key {k} version {i}: closed at {vt}, expected open")
            elif vt is None:
                errors.append(f"key {k} version {i}: open, expected closed by transaction {t}")
            else:
                bind(t, vt, tt, "valid_to", k)
    order = sorted(lsn_of)
    for x, y in zip(order, order[1:]):
        if lsn(lsn_of[x]) >= lsn(lsn_of[y]):
            errors.append(f"transaction {x} at {lsn_of[x]}, not below transaction {y} at {lsn_of[y]}")
        if time_of[x] > time_of[y]:
            errors.append(f"transaction {x} at time {time_of[x]}, after transaction {y}'s")
    for ti, l in lsn_of.items():
        if ti >= 0 and not (tl[ti]["last"] < lsn(l) and (ti + 1 == n or lsn(l) < tl[ti + 1]["first"])):
            errors.append(f"transaction {ti} bound to {l}, outside its audit LSNs")
    open_now = {k: v[-1][0] for k, v in got.items() if v and v[-1][2] is None}
    if open_now != live:
        errors.append(f"open versions ({len(open_now)}) differ from the source's rows ({len(live)})")
    if state != live:
        errors.append("the audit's final state differs from the source (checker bug)")
    resumed = sum(1 for k in keys if snap_from[k] != states[s].get(k))
    return errors, nv, resumed

for s in range(s_min, max(s_min, s_max) + 1):
    errors, nv, resumed = check(s)
    if not errors:
        print(f"checker (a): {n} transactions, {s} before the consistent point, {nv} versions, "
              f"{len(live)} live keys, {resumed} keys read by a resumed copy at a pause point")
        sys.exit(0)
print(f"checker (a): {len(errors)} errors for split {s} (tried {s_min}..{s_max})")
for e in errors[:15]:
    print("  " + e)
sys.exit(1)
PY
nT=$(rp_psql dst -Atc "SELECT count(DISTINCT valid_from_time) FROM public.hist WHERE valid_from_lsn = '${lmark%%|*}'")
tT=$(PGOPTIONS='-c TimeZone=UTC' rp_psql dst -Atc "SELECT min(valid_from_time) = '$tstamp'::timestamptz FROM public.hist WHERE valid_from_lsn = '${lmark%%|*}'")
[[ $nT == 1 && $tT == t ]] || fail "(a) the snapshot's versions do not all open at its time $tstamp"
rp_say "(a) passed: the snapshot and the stream made the source's history, across 2 SIGKILLs"

# ---- (b) a re-snapshot into the populated history table
rp_psql src -Atc "SELECT pg_drop_replication_slot('$SLOT')" >/dev/null
rp_psql dst -c "\\copy (SELECT id, a, b, valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn) TO '$work/before.tsv'"
rp_psql src <<'SQL' >/dev/null
UPDATE hist SET a = a + 1000 WHERE id % 97 = 1;
UPDATE hist SET a = a WHERE id % 97 = 2;   -- the same values: no change
UPDATE hist SET b = NULL WHERE id % 97 = 3 AND b IS NOT NULL;
DELETE FROM hist WHERE id % 97 = 4;
INSERT INTO hist SELECT 20000000 + g, g, 'inserted' FROM generate_series(1, 300) g;
SQL
start_consumer "$SLOT2" --create-slot --snapshot --snapshot-workers=2 --snapshot-chunk-rows=5000 "${SEL[@]}" -v
deadline=$((SECONDS + 600))
until [[ -n $(rp_dst_checkpoint dst "$SLOT2") ]]; do
	kill -0 "$consumer_pid" 2>/dev/null || fail "(b) the re-snapshot's consumer exited"
	((SECONDS < deadline)) || fail "(b) the re-snapshot did not complete"
	sleep 0.1
done
rp_psql dst -c "\\copy (SELECT id, a, b, valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn) TO '$work/after.tsv'"
rp_psql src -c "\\copy (SELECT id, a, b FROM hist ORDER BY id) TO '$work/live2.tsv'"
python3 - "$work/before.tsv" "$work/after.tsv" "$work/live2.tsv" <<'PY' || fail "(b) the re-snapshot's versions are wrong"
import collections, sys
def nul(v):
    return None if v == "\\N" else v
def load(p):
    out = collections.defaultdict(list)
    for line in open(p):
        r = [nul(x) for x in line.rstrip("\n").split("\t")]
        out[r[0]].append(((r[1], r[2]), r[3], r[4], r[5], r[6]))
    return out
before, after = load(sys.argv[1]), load(sys.argv[2])
live = {}
for line in open(sys.argv[3]):
    r = [nul(x) for x in line.rstrip("\n").split("\t")]
    live[r[0]] = (r[1], r[2])
def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)
maxb = max(lsn(v[1]) for vs in before.values() for v in vs)
new_points = {(v[1], v[3]) for vs in after.values() for v in vs if lsn(v[1]) > maxb}
errors = []
if len(new_points) != 1:
    errors.append(f"the re-snapshot opened versions at {len(new_points)} points and times, expected one")
L2, T2 = sorted(new_points)[0] if new_points else (None, None)
counts = collections.Counter()
for k in set(before) | set(after) | set(live):
    b, a, n = before.get(k, []), after.get(k, []), live.get(k)
    bopen = b[-1][0] if b and b[-1][2] is None else None
    if bopen == n:
        counts["unchanged"] += 1
        if a != b:
            errors.append(f"key {k}: unchanged, but its versions changed: {b[-1:]} -> {a[-2:]}")
        continue
    exp = list(b)
    if bopen is not None:
        exp[-1] = (exp[-1][0], exp[-1][1], L2, exp[-1][3], T2)
    if n is not None:
        exp.append((n, L2, None, T2, None))
    counts["gone" if n is None else "new" if bopen is None else "changed"] += 1
    if a != exp:
        errors.append(f"key {k}: versions {a[-2:]}, expected {exp[-2:]}")
print(f"checker (b): {dict(counts)}, {len(errors)} errors")
for e in errors[:15]:
    print("  " + e)
sys.exit(1 if errors or counts["changed"] == 0 or counts["gone"] == 0 or counts["new"] == 0 else 0)
PY
rp_say "(b) passed: the re-snapshot kept unchanged rows' versions, closed gone ones, versioned changed ones"

# ---- (c) TRUNCATE closes every open version
nopen=$(rp_psql dst -Atc "SELECT count(*) FROM public.hist WHERE valid_to_lsn IS NULL")
before_lsn=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
rp_psql src -c "TRUNCATE hist" >/dev/null
after_lsn=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
rp_psql src -c "INSERT INTO hist VALUES (1, 1, 'after truncate'), (30000000, 2, 'after truncate')" >/dev/null
wait_fence "$SLOT2"
read -r nclosed npoints inside nnew newok <<<"$(rp_psql dst -Atc "
	SELECT (SELECT count(*) FROM public.hist WHERE valid_to_lsn > '$before_lsn'),
	       (SELECT count(DISTINCT (valid_to_lsn, valid_to_time)) FROM public.hist WHERE valid_to_lsn > '$before_lsn'),
	       (SELECT bool_and(valid_to_lsn < '$after_lsn') FROM public.hist WHERE valid_to_lsn > '$before_lsn'),
	       (SELECT count(*) FROM public.hist WHERE valid_to_lsn IS NULL),
	       (SELECT bool_and(b = 'after truncate' AND valid_from_lsn > '$after_lsn') FROM public.hist WHERE valid_to_lsn IS NULL)" -F ' ')"
[[ $nclosed == "$nopen" && $npoints == 1 && $inside == t ]] ||
	fail "(c) TRUNCATE closed $nclosed versions at $npoints points (inside its commit: $inside), expected the $nopen open ones at one"
[[ $nnew == 2 && $newok == t ]] || fail "(c) after the TRUNCATE $nnew versions are open (right: $newok), expected the 2 new rows"
stop_consumer
rp_say "(c) passed: TRUNCATE closed all $nopen open versions at its commit"

# ---- (d) a backfill into a history table while updates run
rp_psql src <<'SQL' >/dev/null
CREATE TABLE hb_audit (seq bigserial PRIMARY KEY, txid bigint NOT NULL, lsn pg_lsn NOT NULL, op char(1) NOT NULL,
                       id int NOT NULL, v text, n int);
CREATE FUNCTION audit_hb() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO hb_audit (txid, lsn, op, id) VALUES (txid_current(), pg_current_wal_insert_lsn(), 'D', OLD.id);
		RETURN OLD;
	END IF;
	INSERT INTO hb_audit (txid, lsn, op, id, v, n) VALUES (txid_current(), pg_current_wal_insert_lsn(), 'U', NEW.id, NEW.v, NEW.n);
	RETURN NEW;
END $$;
CREATE TRIGGER audit_hb AFTER UPDATE OR DELETE ON hb FOR EACH ROW EXECUTE FUNCTION audit_hb();
SQL
rp_psql src -c "\\copy (SELECT id, v, n FROM hb ORDER BY id) TO '$work/hb0.tsv'"
rp_psql src -c "UPDATE hb SET n = n + 1 WHERE id % 50 = 0" >/dev/null
start_consumer "$SLOT2" -o "include_tables=public.hist,public.fence,public.hb" --backfill=public.hb --backfill-chunk-rows=500 -v
(
	for i in $(seq 1 200); do
		rp_psql src -c "UPDATE hb SET n = n + 1, v = md5(random()::text) WHERE id = 1 + floor(random() * 6000)::int" >/dev/null || exit 1
		if ((i == 100)); then
			rp_psql src -c "DELETE FROM hb WHERE id % 1000 = 7" >/dev/null || exit 1
		fi
	done
) &
workload_pid=$!
deadline=$((SECONDS + 600))
until [[ $(rp_psql dst -Atc "SELECT done FROM replicant.backfill_progress WHERE slot = '$SLOT2'" 2>/dev/null) == t ]]; do
	kill -0 "$consumer_pid" 2>/dev/null || fail "(d) the backfill's consumer exited"
	((SECONDS < deadline)) || fail "(d) the backfill did not finish"
	sleep 0.1
done
wait "$workload_pid" || fail "(d) the update workload failed"
workload_pid=
wait_fence "$SLOT2"
stop_consumer
rp_psql dst -c "\\copy (SELECT id, v, n, valid_from_lsn, valid_to_lsn FROM public.hb ORDER BY id, valid_from_lsn) TO '$work/hb.tsv'"
rp_psql src -c "\\copy (SELECT id, v, n FROM hb ORDER BY id) TO '$work/hblive.tsv'"
rp_psql src -c "\\copy (SELECT seq, txid, lsn, op, id, v, n FROM hb_audit ORDER BY seq) TO '$work/hbaudit.tsv'"
python3 - "$work/hb.tsv" "$work/hblive.tsv" "$work/hb0.tsv" "$work/hbaudit.tsv" <<'PY' || fail "(d) the backfilled history table is wrong"
import collections, sys
def nul(v):
    return None if v == "\\N" else v
def rows(p):
    return [[nul(x) for x in line.rstrip("\n").split("\t")] for line in open(p)]
def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)
got = collections.defaultdict(list)
for r in rows(sys.argv[1]):
    got[r[0]].append(((r[1], r[2]), r[3], r[4]))
live = {r[0]: (r[1], r[2]) for r in rows(sys.argv[2])}
state = {r[0]: (r[1], r[2]) for r in rows(sys.argv[3])}
# the audited transactions (one session: in order), each with its changes and LSN bounds
txns = collections.OrderedDict()
for seq, txid, l, op, id_, v, n in rows(sys.argv[4]):
    t = txns.setdefault(txid, {"ch": [], "first": lsn(l), "last": lsn(l)})
    t["ch"].append((op, id_, (v, n)))
    t["last"] = max(t["last"], lsn(l))
tl = list(txns.values())
# per key: the states after each transaction that touched it, with that transaction's bounds
hist = collections.defaultdict(list)   # key -> [(index, state or None)]
before = {}
for i, t in enumerate(tl):
    for op, k, vals in t["ch"]:
        before.setdefault(k, state.get(k))
        state[k] = vals if op == "U" else None
        if hist[k] and hist[k][-1][0] == i:
            hist[k][-1] = (i, state[k])
        else:
            hist[k].append((i, state[k]))
def bound(i, x):
    return tl[i]["last"] < x and (i + 1 == len(tl) or x < tl[i + 1]["first"])
def state_at(k, x):
    """the key's possible states at LSN x (two when x may lie on either side of a commit)"""
    out = {before.get(k, state0.get(k))}
    for i, st in hist.get(k, []):
        if tl[i]["last"] < x:
            if i + 1 == len(tl) or tl[i + 1]["first"] <= x:
                out = {st}
            else:
                out = out | {st}
    return out
state0 = {r[0]: (r[1], r[2]) for r in rows(sys.argv[3])}
errors = []
chunked = 0
for k in set(got) | set(live) | set(hist):
    vs = got.get(k, [])
    opened = set()
    for x, y in zip(vs, vs[1:]):
        if x[2] != y[1]:
            errors.append(f"key {k}: a version closed at {x[2]}, the next opened at {y[1]}")
    binds = [[(i, st) for i, st in hist.get(k, []) if bound(i, lsn(v[1]))] for v in vs]
    for j, (content, vf, vt) in enumerate(vs):
        f = lsn(vf)
        mine = binds[j]
        # a chunk's high watermark may commit in the gap of a transaction that commits after it
        if mine and j + 1 < len(vs) and binds[j + 1] and binds[j + 1][0][0] == mine[0][0]:
            mine = []
        if mine:
            opened.add(mine[0][0])
            if content != mine[0][1]:
                errors.append(f"key {k}: the version of transaction {mine[0][0]} has {content}, expected {mine[0][1]}")
        else:
            chunked += 1
            if content not in state_at(k, f):
                errors.append(f"key {k}: a chunk version at {vf} has {content}, expected one of {state_at(k, f)}")
        if vt is not None:
            closers = [i for i, st in hist.get(k, []) if bound(i, lsn(vt))]
            if not closers and not any(y[1] == vt for y in vs):
                errors.append(f"key {k}: a version closed at {vt}, by no transaction of it")
    for i, st in hist.get(k, []):
        if st is not None and i not in opened:
            errors.append(f"key {k}: transaction {i} left it live but opened no version")
    if sum(1 for v in vs if v[2] is None) > 1:
        errors.append(f"key {k}: more than one open version")
    if (vs[-1][0] if vs and vs[-1][2] is None else None) != live.get(k):
        errors.append(f"key {k}: open version {vs[-1] if vs else None}, the source has {live.get(k)}")
points = {vs[0][1] for vs in got.values()}
print(f"checker (d): {len(tl)} transactions, {len(got)} keys, {sum(len(v) for v in got.values())} versions "
      f"({chunked} from chunks), {len(points)} first-version points, {len(errors)} errors")
for e in errors[:15]:
    print("  " + e)
sys.exit(1 if errors or len(points) < 2 or chunked < 5000 else 0)
PY

status=0
printf 'PASS history_snapshot: a history snapshot across 2 SIGKILLs matches the source history version for version; a re-snapshot versions only what changed; TRUNCATE closes every open version; a backfill fills a history table (%ds)\n' \
	"$((SECONDS - started))"
