#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_history.sh: a --history table holds exactly one version per key and
# committed source transaction, with validity intervals that chain.
#
# Proves G1 (effect-once) for --history tables, across SIGKILLs of the consumer, version by
# version: no version lost, none doubled, none with wrong values.
#
# The source table hist (id PRIMARY KEY, a, b, big; big is out-of-line TOAST) gets many
# small transactions from one session (so commit order is the order they ran): inserts,
# updates of small columns (big is then unchanged TOAST and must be carried over from the
# previous version), updates of big, key changes (with and without other changes: the new
# key's version takes big from the old key's version), deletes, delete-then-reinsert and
# insert-then-update inside one transaction, repeated updates of a key in one transaction,
# and rolled-back transactions. An audit trigger records, in the same transaction, every
# row change: txid, order, operation, old and new key, the new row (big as its md5).
# The consumer (--history public.hist, --create-tables, small batches) streams while the
# workload runs and is killed 6 times; then it runs to -E past the last commit.
# A checker recomputes the versions from the audit (per transaction, each key it touched
# gets one new version with its final values, closing the one open before; a key it
# deleted has its open version closed) and compares them with the destination's hist:
#   - per key, the same number of versions with the same values, in valid_from_lsn order;
#   - every version opened by transaction i has the same valid_from_lsn L(i) and
#     valid_from_time T(i); every version it closed has valid_to_lsn L(i), valid_to_time
#     T(i); L strictly increases and T never decreases with i (so a closed version's
#     valid_to_lsn is the next version's valid_from_lsn, or the deleting commit's LSN);
#   - exactly one open version (valid_to_lsn NULL) per live key, none for deleted keys.
# Some transactions hold a barrier between changes of the same keys (a TRUNCATE of another
# table; a change of another table whose description changed since, ADD COLUMN): the part
# before it is applied first, and the versions must come out as if there were none.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

TXNS=${TXNS:-600}
KILLS=${KILLS:-6}
SLOT=hist
work=$(mktemp -d /tmp/rp-mirror-history.XXXXXX)
status=1
consumer_pid=
workload_pid=
cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_history "$work/consumer-*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE hist (id bigint PRIMARY KEY, a int NOT NULL, b text, big text);
ALTER TABLE hist ALTER big SET STORAGE EXTERNAL;
CREATE SEQUENCE ids;
CREATE TABLE audit (seq bigserial PRIMARY KEY, txid bigint NOT NULL, op char(1) NOT NULL,
                    old_id bigint, new_id bigint, a int, b text, big_md5 text);
CREATE FUNCTION audit_hist() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO audit (txid, op, old_id) VALUES (txid_current(), 'D', OLD.id);
		RETURN OLD;
	END IF;
	INSERT INTO audit (txid, op, old_id, new_id, a, b, big_md5)
	VALUES (txid_current(), left(TG_OP, 1), CASE WHEN TG_OP = 'UPDATE' THEN OLD.id END, NEW.id, NEW.a, NEW.b, md5(NEW.big));
	RETURN NEW;
END $$;
CREATE TRIGGER audit_hist AFTER INSERT OR UPDATE OR DELETE ON hist FOR EACH ROW EXECUTE FUNCTION audit_hist();
CREATE TABLE fence (id serial PRIMARY KEY);
CREATE TABLE side (id int PRIMARY KEY);

CREATE FUNCTION big_text() RETURNS text LANGUAGE sql VOLATILE AS
$$ SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 80 + floor(random() * 100)::int) $$;
CREATE FUNCTION some_id() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT id FROM hist ORDER BY random() LIMIT 1 $$;

CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS $$
DECLARE
	x bigint;
	y bigint;
	k int;
BEGIN
	FOR i IN 1 .. n LOOP
		FOR s IN 1 .. 1 + floor(random() * 4)::int LOOP
			k := floor(random() * 100)::int;
			x := some_id();
			IF k < 22 OR x IS NULL THEN	-- insert (big out of line, small, or NULL)
				INSERT INTO hist VALUES (nextval('ids'), 0, 'new',
				                         CASE WHEN k % 5 = 0 THEN NULL WHEN k % 5 = 1 THEN 'small' ELSE big_text() END);
			ELSIF k < 42 THEN		-- small columns only: big is unchanged TOAST
				UPDATE hist SET a = a + 1, b = md5(random()::text) WHERE id = x;
			ELSIF k < 50 THEN		-- the same key twice
				UPDATE hist SET a = a + 1 WHERE id = x;
				UPDATE hist SET b = 'twice' WHERE id = x;
			ELSIF k < 57 THEN
				UPDATE hist SET big = big_text(), a = a + 1 WHERE id = x;
			ELSIF k < 65 THEN		-- key change, big unchanged
				UPDATE hist SET id = nextval('ids') WHERE id = x;
			ELSIF k < 70 THEN		-- key change and a small column, then another change
				y := nextval('ids');
				UPDATE hist SET id = y, a = a + 100 WHERE id = x;
				IF k % 2 = 0 THEN
					UPDATE hist SET b = 'after move' WHERE id = y;
				END IF;
			ELSIF k < 80 THEN
				DELETE FROM hist WHERE id = x;
			ELSIF k < 85 THEN		-- delete and insert the same key again
				DELETE FROM hist WHERE id = x;
				INSERT INTO hist VALUES (x, -1, 'reborn', CASE WHEN k % 2 = 0 THEN big_text() END);
			ELSIF k < 92 THEN		-- insert and update in one transaction
				y := nextval('ids');
				INSERT INTO hist VALUES (y, 0, 'young', big_text());
				UPDATE hist SET a = 7 WHERE id = y;
			ELSIF k < 96 THEN		-- a change and a delete of another key
				UPDATE hist SET a = a - 1 WHERE id = x;
				DELETE FROM hist WHERE id = (SELECT id FROM hist WHERE id <> x ORDER BY random() LIMIT 1);
			ELSE				-- a barrier (TRUNCATE of another table) between changes of keys
				y := nextval('ids');
				INSERT INTO hist VALUES (y, 0, 'before barrier', big_text());
				UPDATE hist SET a = a + 1 WHERE id = x;
				TRUNCATE side;
				UPDATE hist SET b = 'after barrier' WHERE id = x;
				DELETE FROM hist WHERE id = y;
				INSERT INTO side (id) VALUES (i);
			END IF;
		END LOOP;
		IF i % 150 = 0 THEN		-- a schema change, then a transaction that meets it midway
			EXECUTE format('ALTER TABLE side ADD COLUMN c%s int', i);
			COMMIT;
			x := some_id();
			UPDATE hist SET a = a + 1 WHERE id = x;
			INSERT INTO side (id) VALUES (-i);
			UPDATE hist SET b = 'after schema change' WHERE id = x;
		END IF;
		IF random() < 0.05 THEN
			INSERT INTO hist VALUES (-nextval('ids'), -1, 'ghost', big_text());
			ROLLBACK;
		ELSE
			COMMIT;
		END IF;
		PERFORM pg_sleep(0.005);
	END LOOP;
END $$;
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
start_consumer() {
	runs=$((runs + 1))
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--history public.hist --state-dir "$work/state" --batch-txns 10 --batch-ms 50 "$@" \
		2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

rp_psql src -c "CALL workload($TXNS)" >"$work/workload.out" 2>&1 &
workload_pid=$!
start_consumer
for ((k = 1; k <= KILLS; k++)); do
	ms=$((300 + RANDOM % 1200))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	if ! kill -0 "$consumer_pid" 2>/dev/null; then
		rc=0
		wait "$consumer_pid" || rc=$?
		fail "consumer run $runs exited by itself (status $rc)"
	fi
	kill -9 "$consumer_pid"
	wait "$consumer_pid" 2>/dev/null || true
	ck=$(rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'" 2>/dev/null || true)
	if [[ -n $ck ]]; then
		ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$ck' FROM pg_replication_slots WHERE slot_name = '$SLOT'")
		[[ $ok == t ]] || fail "kill $k: the slot acknowledged past the destination checkpoint $ck"
	fi
	printf 'kill %d after %dms; destination checkpoint %s\n' "$k" "$ms" "${ck:-none}"
	start_consumer
done
wait "$workload_pid" || { cat "$work/workload.out"; fail "the workload failed"; }
workload_pid=
kill -9 "$consumer_pid"
wait "$consumer_pid" 2>/dev/null || true
consumer_pid=
endpos=$(rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()")
start_consumer -E "$endpos" -n
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the final run to $endpos exited with $rc"

rp_psql src -c "\\copy (SELECT seq, txid, op, old_id, new_id, a, b, big_md5 FROM audit ORDER BY seq) TO '$work/audit.tsv'"
rp_psql dst -c "\\copy (SELECT id, a, b, md5(big), valid_from_lsn, valid_to_lsn, valid_from_time, valid_to_time FROM public.hist ORDER BY id, valid_from_lsn) TO '$work/hist.tsv'"
rp_psql src -c "\\copy (SELECT id, a, b, md5(big) FROM hist ORDER BY id) TO '$work/live.tsv'"

python3 - "$work/audit.tsv" "$work/hist.tsv" "$work/live.tsv" <<'PY' || fail "the history table does not match the source's transactions"
import collections, sys

def nul(v):
    return None if v == "\\N" else v

def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)

# the committed transactions touching hist, in commit order (one session: first change order)
txns = collections.OrderedDict()
with open(sys.argv[1]) as f:
    for line in f:
        seq, txid, op, old_id, new_id, a, b, big = [nul(x) for x in line.rstrip("\n").split("\t")]
        txns.setdefault(txid, []).append((op, old_id, new_id, (a, b, big)))

state = {}
versions = collections.defaultdict(list)   # id -> [ [values, from_tx, to_tx] ]
for ti, changes in enumerate(txns.values()):
    touched = []
    for op, old_id, new_id, vals in changes:
        if op == "I":
            state[new_id] = vals
            touched.append(new_id)
        elif op == "U":
            if old_id != new_id:
                state.pop(old_id, None)
                touched.append(old_id)
            state[new_id] = vals
            touched.append(new_id)
        else:
            state.pop(old_id, None)
            touched.append(old_id)
    for k in dict.fromkeys(touched):
        v = versions[k]
        if v and v[-1][2] is None:
            v[-1][2] = ti
        if k in state:
            v.append([state[k], ti, None])

got = collections.defaultdict(list)
with open(sys.argv[2]) as f:
    for line in f:
        id_, a, b, big, vf, vt, tf, tt = [nul(x) for x in line.rstrip("\n").split("\t")]
        got[id_].append(((a, b, big), vf, vt, tf, tt))

errors = []
lsn_of, time_of = {}, {}
def bind(ti, l, t, what, key):
    if lsn_of.setdefault(ti, l) != l:
        errors.append(f"key {key}: {what} LSN {l}, but transaction {ti} has {lsn_of[ti]} elsewhere")
    if time_of.setdefault(ti, t) != t:
        errors.append(f"key {key}: {what} time {t}, but transaction {ti} has {time_of[ti]} elsewhere")

nversions = 0
for k in set(versions) | set(got):
    exp, have = versions.get(k, []), got.get(k, [])
    nversions += len(have)
    if len(exp) != len(have):
        errors.append(f"key {k}: {len(have)} versions, expected {len(exp)}")
        continue
    for i, ((vals, fti, tti), (gvals, vf, vt, tf, tt)) in enumerate(zip(exp, have)):
        if vals != gvals:
            errors.append(f"key {k} version {i}: values {gvals}, expected {vals}")
        bind(fti, vf, tf, "valid_from", k)
        if tti is None:
            if vt is not None or tt is not None:
                errors.append(f"key {k} version {i}: closed at {vt}, expected open")
        elif vt is None or tt is None:
            errors.append(f"key {k} version {i}: open, expected closed by transaction {tti}")
        else:
            bind(tti, vt, tt, "valid_to", k)
order = sorted(lsn_of)
for x, y in zip(order, order[1:]):
    if lsn(lsn_of[x]) >= lsn(lsn_of[y]):
        errors.append(f"transaction {x} has LSN {lsn_of[x]}, not below transaction {y}'s {lsn_of[y]}")
    if time_of[x] > time_of[y]:
        errors.append(f"transaction {x} has time {time_of[x]}, after transaction {y}'s {time_of[y]}")

live = {}
with open(sys.argv[3]) as f:
    for line in f:
        id_, a, b, big = [nul(x) for x in line.rstrip("\n").split("\t")]
        live[id_] = (a, b, big)
open_now = {k: v[-1][0] for k, v in got.items() if v and v[-1][2] is None}
if open_now != live:
    errors.append(f"open versions ({len(open_now)}) differ from the source's live rows ({len(live)})")
if live != state:
    errors.append("the audit's final state differs from the source table (checker bug)")
moves = sum(1 for c in txns.values() for op, o, n, _ in c if op == "U" and o != n)
print(f"checker: {len(txns)} transactions, {sum(len(c) for c in txns.values())} changes ({moves} key changes), "
      f"{nversions} versions, {len(live)} live keys, {len(errors)} errors")
for e in errors[:15]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY

status=0
printf 'PASS mirror_history: %d consumer runs (%d SIGKILLs); every version of every key matches the source transactions, intervals chain, one open version per live key (%ds)\n' \
	"$runs" "$KILLS" "$((SECONDS - started))"
