#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/snapshot_composite.sh: composite-typed columns are copied by the initial snapshot,
# in the stream's encoding.
#
# Source table comp_t has a composite column whose fields are an int, a text, an int[], a
# nested composite (bool, bigint, enum), a domain, a numeric and a timestamptz, and a column of
# a type that lost an attribute (ALTER TYPE ... DROP ATTRIBUTE: the dropped field is not sent).
# Rows: every field set, special values (NaN, infinity, an empty array, an array with a NULL),
# a NULL composite, a composite whose fields are all NULL (not the same thing), a nested NULL.
#   (1) --snapshot into the mirror (--create-tables; the types exist on the destination), then
#       the same values inserted again under other keys and streamed: the destination equals the
#       source row for row (the text of every row);
#   (2) --snapshot into the file sink, then the same stream: each snapshot row's composite
#       values render exactly as the streamed insert of the same values (one encoding);
#   (3) a composite with a field the plugin sends as text plus type OID (xml: no binary form to
#       take inside a record) still stops the copy (exit 1, a configuration the snapshot cannot
#       copy), naming the table and the column and why.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-snapshot-composite.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail snapshot_composite "$work/*.err" 5 "$*"; }

rp_cluster_start src
rp_cluster_start dst

TYPES=$(
	cat <<'SQL'
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TYPE inner_t AS (x bool, y bigint, m mood);
CREATE TYPE outer_t AS (a int, b text, c int[], d inner_t, e posint, f numeric, g timestamptz);
CREATE TYPE thin_t AS (keep1 int, gone text, keep2 text);
ALTER TYPE thin_t DROP ATTRIBUTE gone;
CREATE TYPE withxml_t AS (a int, x xml);
SQL
)
rp_psql src -q <<<"$TYPES"
rp_psql dst -q <<<"$TYPES"
rp_psql src -q <<'SQL'
CREATE TABLE comp_t (id int PRIMARY KEY, v outer_t, w thin_t);
CREATE TABLE xml_t (id int PRIMARY KEY, v withxml_t);
INSERT INTO xml_t VALUES (1, ROW(1, '<a/>'));
CREATE TABLE rows_in (id int, v outer_t, w thin_t);
INSERT INTO rows_in VALUES
 (1, ROW(1, 'one', '{1,2,3}', ROW(true, 9000000000, 'ok'), 5, 1.50, '2024-05-01 12:00:00+02'), ROW(1, 'k')),
 (2, ROW(-2, 'q"uo\te,(x)', '{}', ROW(false, -1, 'sad'), 1, 'NaN', 'infinity'), ROW(NULL, 'n')),
 (3, ROW(3, NULL, '{NULL,4}', NULL, NULL, -0.001, '-infinity'), NULL),
 (4, NULL, ROW(NULL, NULL)),
 (5, ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL), ROW(4, '')),
 (6, ROW(6, '', NULL, ROW(NULL, NULL, NULL), 2, 1e30, '1999-12-31 23:59:59.999999+00'), ROW(6, 'six'));
INSERT INTO comp_t SELECT id, v, w FROM rows_in;
SQL

endpos() { rp_psql src -Atc 'SELECT pg_current_wal_lsn()'; }

# (1) and (2): the snapshots (each run ends at its consistent point: -E is behind it)
e=$(endpos)
replicant -d "$src_CONNSTR" -S comp_m --create-slot --snapshot --start --create-tables \
	-o include_tables=public.comp_t --sink "postgres:$dst_CONNSTR" --state-dir "$work/s1" \
	-E "$e" --no-loop 2>"$work/mirror-1.err" || fail "the snapshot into the mirror failed"
replicant -d "$src_CONNSTR" -S comp_f --create-slot --snapshot --start \
	-o include_tables=public.comp_t --sink "file:$work/log.jsonl" --state-dir "$work/s2" \
	-E "$e" --no-loop 2>"$work/file-1.err" || fail "the snapshot into the file sink failed"
# the same values again, streamed
rp_psql src -q -c 'INSERT INTO comp_t SELECT id + 1000, v, w FROM rows_in'
e=$(endpos)
replicant -d "$src_CONNSTR" -S comp_m --start --sink "postgres:$dst_CONNSTR" --state-dir "$work/s1" \
	-E "$e" --no-loop 2>"$work/mirror-2.err" || fail "streaming into the mirror failed"
replicant -d "$src_CONNSTR" -S comp_f --start --sink "file:$work/log.jsonl" --state-dir "$work/s2" \
	-E "$e" --no-loop 2>"$work/file-2.err" || fail "streaming into the file sink failed"

q='SELECT count(*), md5(string_agg(c::text, $$|$$ ORDER BY id)) FROM comp_t c'
a=$(rp_psql src -Atc "$q")
b=$(rp_psql dst -Atc "$q")
[[ $a == "$b" ]] || fail "(1) mirror differs from the source: $a vs $b"
[[ $a == 12\|* ]] || fail "(1) expected 12 rows on the source: $a"
# a NULL composite and a composite of NULLs stay apart
[[ $(rp_psql dst -Atc 'SELECT v IS NULL AND num_nulls(v) = 1 FROM comp_t WHERE id = 4') == t &&
	$(rp_psql dst -Atc 'SELECT num_nulls(v) = 0 FROM comp_t WHERE id = 5') == t ]] ||
	fail "(1) a NULL composite and a composite of NULL fields are not kept apart"
printf '(1) mirror: %s rows equal to the source (snapshot rows and streamed rows)\n' "${a%%|*}"

python3 - "$work/log.jsonl" <<'PY' || fail "(2) the snapshot's composite values differ from the stream's"
import json, sys
snap, stream = {}, {}
for line in open(sys.argv[1]):
    rec = json.loads(line)
    kind = rec.get("kind")
    if kind == "row":
        row = rec["record"]
        snap[row["id"]] = row
    elif kind == "insert" and rec.get("table") == "comp_t":
        row = rec["new"]
        stream[row["id"]] = row
if len(snap) != 6 or len(stream) != 6:
    sys.exit(f"expected 6 snapshot rows and 6 streamed inserts, got {len(snap)} and {len(stream)}")
for k in range(1, 7):
    for col in ("v", "w"):
        if snap[k][col] != stream[k + 1000][col]:
            sys.exit(f"row {k} column {col}: snapshot {snap[k][col]!r} vs stream {stream[k + 1000][col]!r}")
print("(2) file sink: the 6 snapshot rows' composites render as their streamed inserts")
PY

# (3) a field with no binary form to convert: refused, naming the column
rc=0
replicant -d "$src_CONNSTR" -S comp_x --create-slot --snapshot --start --create-tables \
	-o include_tables=public.xml_t --sink "postgres:$dst_CONNSTR" --state-dir "$work/s3" \
	--no-loop 2>"$work/xml.err" || rc=$?
[[ $rc == 1 ]] || fail "(3) a composite with an xml field: exit $rc, not 1"
grep -q 'xml_t.*column "v".*no snapshot conversion' "$work/xml.err" || fail "(3) the message does not name the table and column: $(tail -n 2 "$work/xml.err")"
printf '(3) %s\n' "$(grep -m1 'xml_t' "$work/xml.err")"

status=0
printf 'PASS snapshot_composite: composite columns copied by the snapshot in the stream encoding (mirror and file sink); a field with no conversion refused by name\n'
