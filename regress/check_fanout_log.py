#!/usr/bin/env python3
# regress/check_fanout_log.py LOG AUDIT_TSV: a file sink's log of regress/tools/nats_workload.sql
# against its audit, with regress/check_file_log.py.
#
# That workload's audit records each table as "schema.table" (Replicant-Table's spelling, also
# for public), while check_file_log.py keys a change by the log line's bare "table". This
# rewrites each data line's table to "schema.table" (the workload tables; audit, fence and ctl
# stay bare, as check_file_log.py expects them), drops wl_conf's lines (the scripts' pacing
# knob, not audited) and truncates of only ctl and wl_conf (the scripts set the control rows
# again after the slot is made), gives a delete of a REPLICA IDENTITY FULL table (its old
# row as "old", no "key") that row as its key, and runs check_file_log.py on the result. Nothing else of a line changes,
# so every check of check_file_log.py (dup, loss, phantom, commit order, xid pairing, versions,
# the trailing checkpoint line) applies to the log as the sink wrote it.
import json, os, subprocess, sys, tempfile

log_path, audit_path = sys.argv[1], sys.argv[2]
BARE = {"audit", "fence", "ctl"}
here = os.path.dirname(os.path.abspath(__file__))

with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as out, open(log_path) as f:
    for line in f:
        if line.endswith("\n") and line.startswith('{"kind":"') and not line.startswith('{"kind":"checkpoint"'):
            rec = json.loads(line)
            if rec.get("table") == "wl_conf":
                continue
            if rec["kind"] == "truncate" and all(r["table"] in ("ctl", "wl_conf") for r in rec["relations"]):
                continue
            if rec["kind"] == "delete" and "key" not in rec and "old" in rec:
                rec["key"] = rec["old"]
            if "table" in rec and not (rec.get("schema") == "public" and rec["table"] in BARE):
                rec["table"] = rec["schema"] + "." + rec["table"]
            line = json.dumps(rec, ensure_ascii=False) + "\n"
        out.write(line)
    tmp = out.name
try:
    rc = subprocess.call([sys.executable, os.path.join(here, "check_file_log.py"), tmp, audit_path])
finally:
    os.unlink(tmp)
sys.exit(rc)
