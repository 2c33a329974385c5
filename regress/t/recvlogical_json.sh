#!/usr/bin/env bash
# The JSON format through the streaming protocol (pg_recvlogical), where records are batched
# into messages up to frame_size: the output must still be exactly one JSON object per line,
# every record present once, in order, and equal to what the SQL interface renders.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=regress/lib.sh
. "$here/regress/lib.sh"
trap rp_cluster_cleanup_all EXIT
rp_cluster_start src
# shellcheck disable=SC2154
conn=$src_CONNSTR
out=$(mktemp -d)
rp_psql src -q -c "CREATE EXTENSION replicant; CREATE TABLE t(id int primary key, v text)"
"$RP_BINDIR/pg_recvlogical" -d "$conn" -S j --create-slot -P replicant
rp_psql src -q -c "INSERT INTO t SELECT g, repeat('v', g % 50) FROM generate_series(1,3000) g" \
	-c "UPDATE t SET v = 'x' WHERE id < 5" -c "SELECT pg_logical_emit_message(false, 'p', 'm')" \
	-c "DELETE FROM t WHERE id % 7 = 0" >/dev/null
end=$(rp_psql src -Atc "SELECT pg_current_wal_insert_lsn()")
rp_psql src -Atc "SELECT data FROM pg_logical_slot_peek_changes('j', '$end', NULL, 'format', 'json')" \
	>"$out/sql.jsonl"
timeout 120 "$RP_BINDIR/pg_recvlogical" -d "$conn" -S j --start -o format=json -o frame_size=4096 \
	--endpos="$end" -f "$out/stream.jsonl"
python3 - "$out/sql.jsonl" "$out/stream.jsonl" <<'PY'
import json, sys
def load(path):
    rows = [l.rstrip("\n") for l in open(path) if l.strip()]
    for r in rows:
        json.loads(r)          # every line is one whole JSON object
    return rows
sql, stream = load(sys.argv[1]), load(sys.argv[2])
kinds = {}
for r in stream:
    k = json.loads(r)["kind"]
    kinds[k] = kinds.get(k, 0) + 1
assert kinds.get("insert") == 3000 and kinds.get("update") == 4 and kinds.get("delete") == 428, kinds
assert sql == stream, "streamed JSON differs from the SQL interface's"
print("lines", len(stream), kinds)
PY
rm -rf "$out"
echo "PASS recvlogical_json: streamed JSON lines equal the SQL rows, one object per line"
