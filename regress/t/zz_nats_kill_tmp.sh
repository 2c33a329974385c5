#!/usr/bin/env bash
set -euo pipefail
. regress/lib.sh
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"
work=$(mktemp -d /tmp/rpnats-kill.XXXXXX)
np=$(rp_free_port)
nats-server -js -a 127.0.0.1 -p "$np" -sd "$work/js" >"$work/nats.log" 2>&1 &
npid=$!
pid=
trap 'kill $npid 2>/dev/null; [[ -n $pid ]] && kill -9 $pid 2>/dev/null; rp_cluster_cleanup_all || true' EXIT
rp_cluster_start src
rp_psql src -c "CREATE TABLE t (id int PRIMARY KEY, v text)" >/dev/null
replicant -d "$src_CONNSTR" -S k --create-slot
rp_psql src -c "INSERT INTO t SELECT g, 'v' FROM generate_series(1, 100000) g" >/dev/null
rp_psql src -c "CREATE TABLE other (x int)" -c "INSERT INTO t VALUES (-1, 'a')" -c "ALTER TABLE t ADD COLUMN w int" -c "INSERT INTO t VALUES (-2, 'b', 3)" -c "INSERT INTO other VALUES (1)" >/dev/null
rp_psql src -c "SELECT pg_logical_emit_message(false, 'nt', 'x')" >/dev/null
rp_psql src -c "INSERT INTO t SELECT g, 'w' FROM generate_series(200001, 300000) g" >/dev/null
end=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
for round in 1 2 3 4 5 6; do
	replicant -d "$src_CONNSTR" -S k --start -E "$end" --sink "nats://127.0.0.1:$np" --nats-replicas 1 --nats-window 256 --state-dir "$work/state" 2>>"$work/c.err" &
	pid=$!
	sleep 0.$((3 + RANDOM % 7))
	kill -9 $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; pid=
	echo "round $round: $(/tmp/rpnats/dump 127.0.0.1:$np REPLICANT_k | wc -l) msgs"
done
replicant -d "$src_CONNSTR" -S k --start -E "$end" --sink "nats://127.0.0.1:$np" --nats-replicas 1 --state-dir "$work/state" 2>>"$work/c.err" || { tail "$work/c.err"; exit 1; }
/tmp/rpnats/dump 127.0.0.1:$np REPLICANT_k > "$work/dump"
python3 - "$work/dump" <<'PY'
import sys, re, collections
seen = collections.Counter(); ops = collections.Counter(); idx = collections.defaultdict(list); last = {}
for line in open(sys.argv[1]):
    h = dict(re.findall(r'\|([A-Za-z-]+)=([^|]*?) (?=\|)', line))
    op = h.get('Replicant-Op'); ops[op] += 1
    if op in ('insert','update','delete','truncate','message'):
        k = (h['Replicant-Lsn'], int(h['Replicant-Index']))
        seen[k] += 1; idx[h['Replicant-Lsn']].append(int(h['Replicant-Index']))
        if 'Replicant-Last' in h: last[h['Replicant-Lsn']] = int(h['Replicant-Index'])
dups = [k for k, c in seen.items() if c > 1]
bad = [l for l, v in idx.items() if v != list(range(len(v))) or last.get(l) != len(v) - 1]
print(ops, 'dups', len(dups), 'bad', len(bad))
assert not dups and not bad and ops['insert'] == 200003 and ops['message'] == 1, "FAIL"
PY
rp_psql src -Atc "SELECT confirmed_flush_lsn, '$end' FROM pg_replication_slots WHERE slot_name='k'"
grep -v "^$" "$work/c.err" | sort | uniq -c | head
echo KILL-OK
