#!/usr/bin/env python3
# regress/check_file_log.py LOG AUDIT_TSV: a file sink's log against what the source committed.
#
# The checker of the end-to-end scripts whose workload records every committed change in an
# audit table in the same transaction (test/t/050_file_sink_kill9.pl, test/t/030_consumer_lock.pl): AUDIT_TSV is
# that table as "txid, tbl, id, op, ver" lines in commit order. Each change of a workload
# table (any but audit, fence and ctl) must be in the log exactly once (dup = 0, loss = 0, no
# phantom rows, nothing of rolled-back work: negative ids), in commit order, in its own
# transaction's xid, versions of a row rising; the audit rows likewise; every checkpoint line
# at or after the one before; the log ending with a checkpoint line. Exit status 1 when not.
import collections, json, sys

log_path, audit_path = sys.argv[1], sys.argv[2]

def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)

expected = collections.Counter()      # (tbl, id, op, ver) of every committed change
expected_txid = {}
audit_expected = collections.Counter()
with open(audit_path) as f:
    for line in f:
        txid, tbl, id_, op, ver = line.rstrip("\n").split("\t")
        key = (tbl, int(id_), op, None if op == "D" else int(ver))
        expected[key] += 1
        expected_txid[key] = int(txid) & 0xFFFFFFFF
        audit_expected[(int(txid) & 0xFFFFFFFF, tbl, int(id_), op, int(ver))] += 1

got = collections.Counter()
got_audit = collections.Counter()
errors = []
prev_commit = 0
prev_ck = 0
xid_of_commit, commit_of_xid = {}, {}
last_ver = {}
lines = data = 0
last_kind = None
with open(log_path) as f:
    for n, line in enumerate(f, 1):
        lines += 1
        if not line.endswith("\n"):
            errors.append(f"line {n}: torn (no newline)")
            break
        rec = json.loads(line)
        last_kind = rec["kind"]
        if rec["kind"] == "checkpoint":
            c = lsn(rec["commit_lsn"])
            if c < prev_ck:
                errors.append(f"line {n}: checkpoint commit_lsn goes back")
            prev_ck = c
            continue
        if rec["kind"] not in ("insert", "update", "delete"):
            errors.append(f"line {n}: unexpected kind {rec['kind']}")
            continue
        data += 1
        c = lsn(rec["commit_lsn"])
        if c < prev_commit:
            errors.append(f"line {n}: commit_lsn {rec['commit_lsn']} after a later one (commit order)")
        prev_commit = c
        xid = rec["xid"]
        if xid_of_commit.setdefault(c, xid) != xid or commit_of_xid.setdefault(xid, c) != c:
            errors.append(f"line {n}: xid {xid} and commit_lsn {rec['commit_lsn']} do not pair up")
        tbl = rec["table"]
        if tbl in ("fence", "ctl"):
            continue
        tup = rec["key"] if rec["kind"] == "delete" else rec["new"]
        if tup["id"] < 0:
            errors.append(f"line {n}: a change of rolled-back work (id {tup['id']}) in {tbl}")
            continue
        if tbl == "audit":
            got_audit[(xid, tup["tbl"], tup["id"], tup["op"], tup["ver"])] += 1
            continue
        op = rec["kind"][0].upper()
        key = (tbl, tup["id"], op, None if op == "D" else tup["ver"])
        got[key] += 1
        if key in expected_txid and expected_txid[key] != xid:
            errors.append(f"line {n}: {key} in xid {xid}, committed in xid {expected_txid[key]}")
        if op != "D":
            if last_ver.get((tbl, tup["id"]), -1) >= tup["ver"]:
                errors.append(f"line {n}: {tbl} id {tup['id']} version {tup['ver']} after a later one")
            last_ver[(tbl, tup["id"])] = tup["ver"]

if last_kind != "checkpoint":
    errors.append("the log does not end with a checkpoint line")
dup = sum(got[k] - expected[k] for k in got if k in expected and got[k] > expected[k])
phantom = sum(v for k, v in got.items() if k not in expected)
loss = sum(expected[k] - got[k] for k in expected if got[k] < expected[k])
adup = sum(max(0, got_audit[k] - audit_expected[k]) for k in got_audit)
aloss = sum(max(0, audit_expected[k] - got_audit[k]) for k in audit_expected)
print(f"checker: {lines} lines, {data} changes, {len(commit_of_xid)} transactions; "
      f"expected {sum(expected.values())} changes + {sum(audit_expected.values())} audit rows; "
      f"dup={dup} loss={loss} phantom={phantom} audit_dup={adup} audit_loss={aloss}")
for e in errors[:20]:
    print("  " + e)
for k in [k for k in expected if got[k] < expected[k]][:5]:
    print(f"  lost: {k}")
for k in [k for k in got if got[k] > expected[k]][:5]:
    print(f"  extra: {k} x{got[k] - expected[k]}")
sys.exit(1 if errors or dup or loss or phantom or adup or aloss else 0)
