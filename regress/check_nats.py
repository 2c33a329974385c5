#!/usr/bin/env python3
# regress/check_nats.py DUMP AUDIT_TSV --slot S --system-id ID --prefix P [options]: a JetStream
# stream (as regress/tools/nats_dump.c dumps it, one JSON line per message) against what the
# source committed.
#
# The checker of the NATS tests (test/t/3*_nats_*.pl, through RpTest::Nats::check), after
# regress/check_file_log.py: the workload records
# every committed change in an audit table in the same transaction, AUDIT_TSV is that table as
# "txid, tbl, id, op, ver" lines (tbl is "schema.table", or a bare name for public). Each change
# of a workload table (any but audit, fence and ctl) must be in the stream exactly once (dup = 0,
# loss = 0, no phantom rows, nothing of rolled-back work: negative ids), in its own xid, the
# audit rows likewise. And the stream itself:
#   - no gap (every sequence first..last there); data messages (Replicant-Op insert, update,
#     delete, truncate, message) in commit order, each transaction's contiguous and once, its
#     Replicant-Index 0, 1, 2, ... and Replicant-Last "true" on its last message only (the
#     stream's very last transaction may be incomplete only with --partial-tail-ok);
#   - Nats-Msg-Id = <system_id>:<slot>:<commit_lsn>:<index>; Replicant-Lsn, -End-Lsn, -Xid,
#     -Op, -Table, -Commit-Time agree with the payload (the file sink's JSON object, no
#     trailing newline); Replicant-Key a JSON object on row changes; Replicant-Slot,
#     -System-Id, -Timeline, -Writer present; Replicant-Relation-Seq names an earlier
#     relation message of the same table;
#   - subjects: P.<schema>.<table> with every byte outside [A-Za-z0-9_-] as %XX (uppercase),
#     P._control for truncates, messages and relation messages;
#   - --confirmed LSN (the slot's confirmed_flush_lsn): at or behind the end LSN of the last
#     complete transaction in the stream, or of a later position message (Replicant-Op
#     position: the end of a batch of empty transactions), or the --floor LSN when none.
#   - --expect-op OP=N: exactly N data messages of that op (truncate=1, message=3).
#   - --range-table T=LO:HI: table T (not audited: a 100,000-row transaction) has each id
#     LO..HI inserted exactly once, nothing else.
# Prints a summary line; exit status 1 when anything is wrong.
import argparse, collections, json, re, sys

ap = argparse.ArgumentParser()
ap.add_argument("dump")
ap.add_argument("audit")
ap.add_argument("--slot", required=True)
ap.add_argument("--system-id", required=True)
ap.add_argument("--prefix", required=True)
ap.add_argument("--confirmed")
ap.add_argument("--floor", default="0/0")
ap.add_argument("--expect-op", action="append", default=[])
ap.add_argument("--partial-tail-ok", action="store_true")
ap.add_argument("--ignore-table", action="append", default=[],
                help="tables whose changes are not compared with the audit (besides fence, ctl)")
ap.add_argument("--range-table", action="append", default=[],
                help="TABLE=LO:HI: a table outside the audit whose ids LO..HI are each inserted once")
args = ap.parse_args()

DATA_OPS = ("insert", "update", "delete", "truncate", "message")
SKIP = {"public.fence", "public.ctl"} | {t if "." in t else "public." + t for t in args.ignore_table}
RANGES = {}
for spec in args.range_table:
    t, r = spec.split("=")
    lo, hi = r.split(":")
    RANGES["public." + t if "." not in t else t] = (int(lo), int(hi))
range_got = collections.defaultdict(collections.Counter)


def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def esc(name):
    out = []
    for b in name.encode("utf-8"):
        c = chr(b)
        if b < 128 and (c.isalnum() or c in "_-"):
            out.append(c)
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def qualify(t):
    return t if "." in t else "public." + t


expected = collections.Counter()
expected_txid = {}
audit_expected = collections.Counter()
with open(args.audit) as f:
    for line in f:
        txid, tbl, id_, op, ver = line.rstrip("\n").split("\t")
        tbl = qualify(tbl)
        key = (tbl, int(id_), op, None if op == "D" else int(ver))
        expected[key] += 1
        expected_txid[key] = int(txid) & 0xFFFFFFFF
        audit_expected[(int(txid) & 0xFFFFFFFF, tbl, int(id_), op, int(ver))] += 1

errors = []


def err(msg):
    errors.append(msg)


got = collections.Counter()
got_audit = collections.Counter()
ops = collections.Counter()
writers = set()
relations = {}          # seq -> table of a relation message
control = f"{args.prefix}._control"
msgs = 0
prev_seq = None
txns_seen = set()       # commit LSNs of transactions already closed or left
cur = None              # the open transaction: dict(lsn, end, xid, next_index)
last_complete_end = None
last_lsn = None         # commit LSN of the transaction before
last_ver = {}
rfc3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")

with open(args.dump) as f:
    for n, line in enumerate(f, 1):
        m = json.loads(line)
        seq = m["seq"]
        msgs += 1
        if prev_seq is not None and seq != prev_seq + 1:
            err(f"seq {seq}: follows {prev_seq} (a gap)")
        prev_seq = seq
        if m.get("missing"):
            err(f"seq {seq}: missing from the stream")
            continue
        h = m["headers"]
        for k, v in h.items():
            if isinstance(v, list):
                err(f"seq {seq}: header {k} has {len(v)} values")
        op = h.get("Replicant-Op")
        data = m["data"]
        if data.endswith("\n"):
            err(f"seq {seq}: payload ends with a newline")
        if op == "position":
            # the end of a batch with no data message (empty transactions): confirmable
            if m["subject"] != control:
                err(f"seq {seq}: position message on {m['subject']}, not {control}")
            if cur is not None:
                err(f"seq {seq}: a position message inside transaction {cur['lsn']}")
            if "Replicant-End-Lsn" in h:
                pos_end = h["Replicant-End-Lsn"]
                if last_complete_end is None or lsn(pos_end) > lsn(last_complete_end):
                    last_complete_end = pos_end
            continue
        if op == "relation":
            if m["subject"] != control:
                err(f"seq {seq}: relation message on {m['subject']}, not {control}")
            relations[seq] = h.get("Replicant-Table")
            continue
        if op not in DATA_OPS:
            err(f"seq {seq}: Replicant-Op {op!r} is not a data op nor relation")
            continue
        ops[op] += 1
        try:
            rec = json.loads(data)
        except ValueError:
            err(f"seq {seq}: payload is not JSON")
            continue
        for k in ("Replicant-Lsn", "Replicant-End-Lsn", "Replicant-Xid", "Replicant-Index",
                  "Replicant-Commit-Time", "Replicant-System-Id", "Replicant-Timeline",
                  "Replicant-Slot", "Replicant-Writer", "Nats-Msg-Id"):
            if k not in h:
                err(f"seq {seq}: no {k} header")
        if any(k not in h for k in ("Replicant-Lsn", "Replicant-Index", "Replicant-End-Lsn")):
            continue
        writers.add(h.get("Replicant-Writer"))
        c, e, idx = h["Replicant-Lsn"], h["Replicant-End-Lsn"], int(h["Replicant-Index"])
        xid = int(h.get("Replicant-Xid", "-1"))
        if h.get("Replicant-Slot") != args.slot:
            err(f"seq {seq}: Replicant-Slot {h.get('Replicant-Slot')!r}, not {args.slot}")
        if h.get("Replicant-System-Id") != args.system_id:
            err(f"seq {seq}: Replicant-System-Id {h.get('Replicant-System-Id')!r}, not {args.system_id}")
        want_id = f"{args.system_id}:{args.slot}:{c}:{idx}"
        if h.get("Nats-Msg-Id") != want_id:
            err(f"seq {seq}: Nats-Msg-Id {h.get('Nats-Msg-Id')!r}, not {want_id}")
        if not rfc3339.match(h.get("Replicant-Commit-Time", "")):
            err(f"seq {seq}: Replicant-Commit-Time {h.get('Replicant-Commit-Time')!r} is not RFC 3339")
        # the payload agrees with the headers
        kind = rec.get("kind")
        if kind != op:
            err(f"seq {seq}: payload kind {kind!r}, header op {op}")
        if op != "message" or "commit_lsn" in rec:
            if rec.get("commit_lsn") != c:
                err(f"seq {seq}: payload commit_lsn {rec.get('commit_lsn')}, header {c}")
        if "end_lsn" in rec and rec["end_lsn"] != e:
            err(f"seq {seq}: payload end_lsn {rec['end_lsn']}, header {e}")
        if "xid" in rec and rec["xid"] != xid:
            err(f"seq {seq}: payload xid {rec['xid']}, header {xid}")
        # subject, table, key
        if op in ("insert", "update", "delete"):
            table = f"{rec['schema']}.{rec['table']}"
            want_subject = f"{args.prefix}.{esc(rec['schema'])}.{esc(rec['table'])}"
            if h.get("Replicant-Table") != table:
                err(f"seq {seq}: Replicant-Table {h.get('Replicant-Table')!r}, payload {table!r}")
            key = None
            if "Replicant-Key" in h:    # absent for a table without a key
                try:
                    key = json.loads(h["Replicant-Key"])
                    if not isinstance(key, dict):
                        err(f"seq {seq}: Replicant-Key is not a JSON object")
                        key = None
                except ValueError:
                    err(f"seq {seq}: Replicant-Key is not JSON")
            rs = h.get("Replicant-Relation-Seq")
            if rs is None:
                err(f"seq {seq}: no Replicant-Relation-Seq")
            elif int(rs) not in relations:
                err(f"seq {seq}: Replicant-Relation-Seq {rs} is not an earlier relation message")
            elif relations[int(rs)] != table:
                err(f"seq {seq}: Replicant-Relation-Seq {rs} describes {relations[int(rs)]!r}, not {table!r}")
        else:
            want_subject = control
            table = None
        if m["subject"] != want_subject:
            err(f"seq {seq}: subject {m['subject']!r}, expected {want_subject!r}")
        # transactions: contiguous, once, in commit order, indexed 0.., Last on the last
        if cur is not None and cur["lsn"] != c:
            err(f"seq {seq}: transaction {cur['lsn']} ended without Replicant-Last at index {cur['next'] - 1}")
            txns_seen.add(cur["lsn"])
            cur = None
        if cur is None:
            if c in txns_seen:
                err(f"seq {seq}: transaction {c} again (a duplicate)")
            if last_lsn is not None and lsn(c) <= lsn(last_lsn):
                err(f"seq {seq}: commit LSN {c} not after the previous transaction's {last_lsn} (commit order)")
            cur = {"lsn": c, "end": e, "xid": xid, "next": 0}
            last_lsn = c
        if idx != cur["next"]:
            err(f"seq {seq}: transaction {c} index {idx}, expected {cur['next']}")
        cur["next"] = idx + 1
        if e != cur["end"] or xid != cur["xid"]:
            err(f"seq {seq}: transaction {c} changes its end LSN or xid")
        last = h.get("Replicant-Last")
        if last is not None and last != "true":
            err(f"seq {seq}: Replicant-Last {last!r}")
        if last == "true":
            txns_seen.add(c)
            last_complete_end = e
            cur = None
        # rows against the audit
        if table in RANGES:
            tup = rec.get("new") or rec.get("key") or {}
            range_got[table][(op, tup.get("id"))] += 1
            continue
        if table is None or table in SKIP:
            continue
        tup = rec["key"] if op == "delete" else rec["new"]
        if tup.get("id") is None or tup["id"] < 0:
            err(f"seq {seq}: a change of rolled-back work (id {tup.get('id')}) in {table}")
            continue
        kcol = "seq" if table == "public.audit" else "id"
        if key is None or key.get(kcol) != tup[kcol]:
            err(f"seq {seq}: Replicant-Key {h.get('Replicant-Key')!r} is not the row's key ({kcol} {tup[kcol]})")
        if table == "public.audit":
            got_audit[(xid, qualify(tup["tbl"]), tup["id"], tup["op"], tup["ver"])] += 1
            continue
        o = op[0].upper()
        key = (table, tup["id"], o, None if o == "D" else tup["ver"])
        got[key] += 1
        if key in expected_txid and expected_txid[key] != xid:
            err(f"seq {seq}: {key} in xid {xid}, committed in xid {expected_txid[key]}")
        if o != "D":
            if last_ver.get((table, tup["id"]), -1) >= tup["ver"]:
                err(f"seq {seq}: {table} id {tup['id']} version {tup['ver']} after a later one")
            last_ver[(table, tup["id"])] = tup["ver"]

if cur is not None and not args.partial_tail_ok:
    err(f"the stream ends inside transaction {cur['lsn']} (index {cur['next'] - 1}, no Replicant-Last)")
for spec in args.expect_op:
    o, want = spec.split("=")
    if ops[o] != int(want):
        err(f"{ops[o]} {o} messages, expected {want}")
for t, (lo, hi) in RANGES.items():
    c = range_got[t]
    want = {("insert", i) for i in range(lo, hi + 1)}
    extra = sum(v for k, v in c.items() if k not in want) + sum(v - 1 for k, v in c.items() if k in want and v > 1)
    missing = sum(1 for k in want if c[k] == 0)
    if extra or missing:
        err(f"table {t}: {missing} of ids {lo}..{hi} missing, {extra} extra or repeated changes")
if args.confirmed:
    bound = last_complete_end or args.floor
    if lsn(args.confirmed) > lsn(bound):
        err(f"the slot's confirmed_flush_lsn {args.confirmed} is past the end LSN {bound} of the stream's last complete transaction")

dup = sum(got[k] - expected[k] for k in got if k in expected and got[k] > expected[k])
phantom = sum(v for k, v in got.items() if k not in expected)
loss = sum(expected[k] - got[k] for k in expected if got[k] < expected[k])
adup = sum(max(0, got_audit[k] - audit_expected[k]) for k in got_audit)
aloss = sum(max(0, audit_expected[k] - got_audit[k]) for k in audit_expected)
print(f"check_nats: {msgs} messages ({sum(ops.values())} data, {len(relations)} relation), "
      f"{len(txns_seen)} transactions, {len(writers)} writers, ops {dict(ops)}; "
      f"expected {sum(expected.values())} changes + {sum(audit_expected.values())} audit rows; "
      f"dup={dup} loss={loss} phantom={phantom} audit_dup={adup} audit_loss={aloss}; "
      f"last complete end LSN {last_complete_end}")
for e in errors[:20]:
    print("  " + e)
if len(errors) > 20:
    print(f"  ... {len(errors) - 20} more")
for k in [k for k in expected if got[k] < expected[k]][:5]:
    print(f"  lost: {k}")
for k in [k for k in got if got[k] > expected[k]][:5]:
    print(f"  extra: {k} x{got[k] - expected[k]}")
sys.exit(1 if errors or dup or loss or phantom or adup or aloss else 0)
