#!/usr/bin/env python3
# regress/check_difftest_log.py LOG CONNINFO: the file sink's log of test/t/600_differential.pl
# against the source database (CONNINFO, read with psql from PATH).
#
# Replays the log's changes, up to its last checkpoint line, onto a model of every table of
# the source that holds rows (relkind r: partitions and inheritance children by themselves):
# keyed by the table's key (the primary key, else the replica identity index: an insert
# adds a key, an update removes its old key ("key", or the key columns of "new" when the key
# did not change) and adds the new one, keeping the columns listed in "unchanged_toast" from
# the old row, a delete removes one), or as a multiset of rows for a table without one (an
# update or delete of a REPLICA IDENTITY FULL table takes out one row equal to its "old"); a
# truncate empties the tables it names. Then each table's model must equal the source's rows
# (read with ONLY), value by value, in a normalized form: the log's JSON value converted to
# the text PostgreSQL prints (TimeZone UTC, DateStyle ISO), or both sides to one canonical
# form: integers, numeric (exact decimal text), float4/float8 (the IEEE bits; NaN, the
# infinities, -0), text, varchar, char(n) with its padding, enums, domains (as their base
# type), bool, bytea, uuid, date, timestamp and timestamptz (BC years, the infinities), time,
# timetz, interval (months, days, microseconds), arrays (dimensions, lower bounds, NULLs;
# elements of the types here), composites (record text), ranges (range text), and types the
# plugin sends as text (inet, point, multiranges: their text). Two forms are compared loosely
# and say so: json and jsonb as parsed JSON (numbers by value, so 2.5 = 2.50; a json value's
# whitespace and duplicate keys are not seen), and a JSON null equals SQL NULL (the log does
# not tell them apart). A column the log never carries (none expected) is listed, not
# compared. Anomalies count too: an insert of a key the model holds, an update or delete of
# a row it lacks, a change of a table the source does not have.
#
# Prints per differing table "MISMATCH table T: ..." (names and counts only, never a value),
# then one summary line; exit status 1 on any difference or anomaly.
import base64
import collections
import json
import os
import struct
import subprocess
import sys
from decimal import Decimal

log_path, conninfo = sys.argv[1], sys.argv[2]


def psql(sql):
    env = dict(os.environ)
    env["PGOPTIONS"] = ("-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres "
                        "-c extra_float_digits=3 -c bytea_output=hex")
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c", sql],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("ERROR psql failed: %s" % r.stderr.strip()[:300])
    return [l for l in r.stdout.split("\n") if l != ""]


# ---------------------------------------------------------------- the catalog
types = {}   # oid -> dict(name, typtype, base, elem, relid, cat)
for line in psql("SELECT json_build_array(oid, typname, typtype, typbasetype, typelem, typrelid, typcategory) FROM pg_type"):
    oid, name, typtype, base, elem, relid, cat = json.loads(line)
    types[oid] = dict(name=name, typtype=typtype, base=base, elem=elem, relid=relid, cat=cat)
ranges = dict(json.loads(l) for l in psql("SELECT json_build_array(rngtypid, rngsubtype) FROM pg_range"))
comp_fields = collections.defaultdict(list)
for line in psql("SELECT json_build_array(attrelid, attname, atttypid) FROM pg_attribute a JOIN pg_type t ON t.typrelid = a.attrelid "
                 "WHERE t.typtype = 'c' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY attrelid, attnum"):
    relid, name, typ = json.loads(line)
    comp_fields[relid].append((name, typ))

SIMPLE = {
    "int2": "int", "int4": "int", "int8": "int", "oid": "int", "numeric": "numeric", "float4": "float4",
    "float8": "float8", "bool": "bool", "text": "text", "varchar": "text", "bpchar": "text", "name": "text",
    "bytea": "bytea", "uuid": "uuid", "date": "date", "timestamp": "timestamp", "timestamptz": "timestamptz",
    "time": "time", "timetz": "timetz", "interval": "interval", "json": "json", "jsonb": "json",
}


def desc(oid):
    t = types[oid]
    if t["typtype"] == "d":
        return desc(t["base"])
    if t["cat"] == "A" and t["elem"]:
        return ("array", desc(t["elem"]))
    if t["typtype"] == "e":
        return ("text",)
    if t["typtype"] == "c":
        return ("composite", [(n, desc(ft)) for n, ft in comp_fields[t["relid"]]])
    if t["typtype"] == "r":
        return ("range", desc(ranges[oid]))
    return (SIMPLE.get(t["name"], "other"),)


tables = {}  # (schema, table) -> dict(cols=[(name, desc)], key=[names], qname)
for line in psql("""
SELECT json_build_array(n.nspname, c.relname, format('%I.%I', n.nspname, c.relname),
       (SELECT json_agg(json_build_array(a.attname, a.atttypid) ORDER BY a.attnum) FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT json_agg(a.attname ORDER BY k.ord)
          FROM (SELECT indkey FROM pg_index WHERE indrelid = c.oid AND (indisprimary OR indisreplident)
                 ORDER BY indisprimary DESC LIMIT 1) i
         CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum))
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind = 'r' AND n.nspname NOT IN ('information_schema', 'replicant') AND n.nspname NOT LIKE 'pg\\_%'"""):
    schema, name, qname, cols, key = json.loads(line)
    tables[(schema, name)] = dict(qname=qname, cols=[(a, desc(t)) for a, t in cols], key=key or [])

# partitioned tables hold no rows; a truncate of one names it beside its partitions
partitioned = {tuple(json.loads(l)) for l in psql(
    "SELECT json_build_array(n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'p'")}

# ---------------------------------------------------------------- normal forms

def frac(s):
    """HH:MM:SS[.ffffff] with the fraction's trailing zeros dropped."""
    if "." in s:
        a, b = s.split(".", 1)
        b = b.rstrip("0")
        return a + ("." + b if b else "")
    return s


def split_year(s):
    """an ISO 8601 (expanded) date's astronomical year and the rest: '-0044-03-15'."""
    sign = 1
    if s[0] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    y, rest = s.split("-", 1)
    return sign * int(y), rest


def js_date(v):
    if v in ("infinity", "-infinity"):
        return v, ""
    y, rest = split_year(v)
    if y <= 0:
        return "%04d-%s" % (1 - y, rest), " BC"
    return "%04d-%s" % (y, rest), ""


def js_ts(v, tz):
    if v in ("infinity", "-infinity"):
        return v
    d, t = v.split("T")
    if tz:
        assert t.endswith("Z"), "timestamptz without Z"
        t = t[:-1]
    d, bc = js_date(d)
    return d + " " + frac(t) + ("+00" if tz else "") + bc


def pg_ts(s):
    if s in ("infinity", "-infinity"):
        return s
    bc = s.endswith(" BC")
    s = s[:-3] if bc else s
    d, t = s.split(" ", 1)
    off = ""
    for sep in "+-":
        if sep in t:
            t, o = t.split(sep, 1)
            off = sep + o
    return d + " " + frac(t) + off + (" BC" if bc else "")


def timetz_off(o):
    parts = o[1:].split(":")
    while len(parts) > 1 and parts[-1] == "00":
        parts.pop()
    return o[0] + ":".join(parts)


def js_timetz(v):
    for i in range(len(v) - 1, 0, -1):
        if v[i] in "+-":
            return frac(v[:i]) + timetz_off(v[i:])
    return v


def pg_timetz(s):
    for i in range(len(s) - 1, 0, -1):
        if s[i] in "+-":
            return frac(s[:i]) + timetz_off(s[i:])
    return s


def floatkey(x, fmt):
    x = float(x)
    if x != x:
        return "NaN"
    return struct.pack(fmt, x).hex()


def canon_json(v):
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + canon_json(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon_json(x) for x in v) + "]"
    if isinstance(v, (Decimal, int)) and not isinstance(v, bool):
        d = Decimal(v).normalize()
        return "%s" % (d if d != 0 else 0)
    return json.dumps(v)


WS = " \t\n\r\v\f"


def quote_array_elem(s):
    if s == "" or s.upper() == "NULL" or any(c in '{}",\\' or c in WS for c in s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def quote_doubling(s, special):
    if s == "" or any(c in special or c in WS for c in s):
        return '"' + s.replace("\\", "\\\\").replace('"', '""') + '"'
    return s


def js_text(d, v):
    """the JSON value v of a column of description d, as PostgreSQL's text (or canonical)."""
    k = d[0]
    if k == "int":
        return str(int(v))
    if k in ("numeric", "text", "time", "other", "uuid"):
        if k == "time":
            return frac(v)
        if k == "uuid":
            return v.lower()
        return v if isinstance(v, str) else canon_json(v)
    if k == "float4":
        return floatkey(v, ">f")
    if k == "float8":
        return floatkey(v, ">d")
    if k == "bool":
        return "t" if v else "f"
    if k == "bytea":
        return "\\x" + base64.b64decode(v).hex()
    if k == "date":
        a, bc = js_date(v)
        return a + bc
    if k == "timestamp":
        return js_ts(v, False)
    if k == "timestamptz":
        return js_ts(v, True)
    if k == "timetz":
        return js_timetz(v)
    if k == "interval":
        return "%d %d %d" % (v["months"], v["days"], v["microseconds"])
    if k == "json":
        return canon_json(v)
    if k == "array":
        lbs = None
        if isinstance(v, dict):
            lbs, v = v["lower_bounds"], v["elements"]
        dims = []
        x = v
        while isinstance(x, list):
            dims.append(len(x))
            if not x:
                break
            x = x[0]

        def out(x):
            if isinstance(x, list):
                return "{" + ",".join(out(e) for e in x) + "}"
            if x is None:
                return "NULL"
            return quote_array_elem(js_text(d[1], x))
        s = out(v)
        if lbs and any(lb != 1 for lb in lbs):
            s = "".join("[%d:%d]" % (lb, lb + n - 1) for lb, n in zip(lbs, dims)) + "=" + s
        return s
    if k == "composite":
        parts = []
        for name, fd in d[1]:
            fv = v.get(name)
            parts.append("" if fv is None else quote_doubling(js_text(fd, fv), '(),"\\'))
        return "(" + ",".join(parts) + ")"
    if k == "range":
        if v.get("empty"):
            return "empty"

        def b(x):
            return "" if x is None else quote_doubling(js_text(d[1], x), '"\\()[],')
        return (("[" if v["lower_inclusive"] else "(") + b(v["lower"]) + "," + b(v["upper"]) +
                ("]" if v["upper_inclusive"] else ")"))
    raise ValueError(k)


def pg_text(d, s):
    """PostgreSQL's text of a value (as the source prints it) in the form js_text makes."""
    k = d[0]
    if k == "float4":
        return floatkey(s, ">f")
    if k == "float8":
        return floatkey(s, ">d")
    if k == "time":
        return frac(s)
    if k in ("timestamp", "timestamptz"):
        return pg_ts(s)
    if k == "timetz":
        return pg_timetz(s)
    if k == "json":
        return canon_json(json.loads(s, parse_float=Decimal))
    return s


def norm_js(d, v):
    if v is None:
        return None
    return js_text(d, v)


def norm_pg(d, s):
    if s is None:
        return None
    if d[0] == "json" and s == "null":
        return None     # the log cannot tell a JSON null from SQL NULL
    return pg_text(d, s)


def select_expr(name, d):
    c = '"' + name.replace('"', '""') + '"'
    if d[0] == "interval":
        return ("CASE WHEN x.%s IS NULL THEN NULL ELSE (extract(year FROM x.%s)::bigint * 12 + extract(month FROM x.%s)::bigint) "
                "|| ' ' || extract(day FROM x.%s)::bigint || ' ' || (extract(hour FROM x.%s)::bigint * 3600000000 + "
                "extract(minute FROM x.%s)::bigint * 60000000 + extract(microseconds FROM x.%s)::bigint) END") % ((c,) * 7)
    return "CASE WHEN x.%s IS NULL THEN NULL ELSE format('%%s', x.%s) END" % (c, c)


# ---------------------------------------------------------------- the log

def parse_int(s):
    return Decimal(s) if s == "-0" else int(s)   # float -0 is written as -0


def records(path):
    """the data lines up to the last checkpoint line (a json value's line breaks may reach a line)."""
    out = []
    pending = ""
    last_ck = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            pending += line
            try:
                r = json.loads(pending, parse_float=Decimal, parse_int=parse_int)
            except ValueError:
                continue
            pending = ""
            out.append(r)
            if r.get("kind") == "checkpoint":
                last_ck = len(out)
    return out[:last_ck]


recs = records(log_path)
keyed = {t: {} for t in tables}
multi = {t: collections.Counter() for t in tables}
seen_cols = collections.defaultdict(set)
anomalies = collections.Counter()
changes = 0
xids = set()


def row_of(t, obj):
    cols = tables[t]["cols"]
    return {n: norm_js(d, obj[n]) for n, d in cols if n in obj}


def tup(t, row):
    return tuple(row.get(n) for n, _ in tables[t]["cols"])


for r in recs:
    k = r.get("kind")
    if k == "checkpoint":
        continue
    if k == "truncate":
        for rel in r["relations"]:
            t = (rel["schema"], rel["table"])
            if t in tables:
                keyed[t].clear()
                multi[t].clear()
            elif t not in partitioned:
                anomalies["truncate of a table the source lacks"] += 1
        continue
    if k not in ("insert", "update", "delete"):
        anomalies["line of kind %s" % k] += 1
        continue
    changes += 1
    xids.add(r["xid"])
    t = (r["schema"], r["table"])
    if t not in tables:
        anomalies["change of a table the source lacks"] += 1
        continue
    info = tables[t]
    new = row_of(t, r["new"]) if "new" in r else None
    if new is not None:
        seen_cols[t].update(new)
        seen_cols[t].update(r.get("unchanged_toast", []))
    if info["key"]:
        m = keyed[t]
        if k == "insert":
            kv = tuple(new.get(c) for c in info["key"])
            if kv in m:
                anomalies["insert of a key the log holds already"] += 1
            m[kv] = new
            continue
        old_obj = r.get("key") or r.get("old")
        if old_obj is not None:
            old = row_of(t, old_obj)
        else:
            old = new
        okv = tuple(old.get(c) for c in info["key"])
        prev = m.pop(okv, None)
        if prev is None:
            anomalies["%s of a key the log does not hold" % k] += 1
            prev = {}
        if k == "update":
            row = dict(new)
            for c in r.get("unchanged_toast", []):
                if c in prev:
                    row[c] = prev[c]
            m[tuple(row.get(c) for c in info["key"])] = row
    else:
        m = multi[t]
        if k == "insert":
            m[tup(t, new)] += 1
            continue
        if "old" not in r:
            anomalies["%s without the old row on a table without a key" % k] += 1
            continue
        old = row_of(t, r["old"])
        ot = tup(t, old)
        if m[ot] <= 0:
            anomalies["%s of a row the log does not hold" % k] += 1
        else:
            m[ot] -= 1
            if m[ot] == 0:
                del m[ot]
        if k == "update":
            row = dict(new)
            for c in r.get("unchanged_toast", []):
                row[c] = old.get(c)
            m[tup(t, row)] += 1

# ---------------------------------------------------------------- compare with the source
bad = 0
not_compared = {}
for t in sorted(tables):
    info = tables[t]
    cols = info["cols"]
    if t == ("public", "difftest_fence"):
        continue
    exprs = ", ".join(select_expr(n, d) for n, d in cols)
    src_rows = []
    for line in psql("SELECT json_build_array(%s) FROM ONLY %s x" % (exprs, info["qname"])):
        vals = json.loads(line)
        src_rows.append({n: norm_pg(d, s) for (n, d), s in zip(cols, vals)})
    # columns the log carries (every column, when the table had changes)
    cmp_cols = [n for n, _ in cols if n in seen_cols[t]] if seen_cols[t] else [n for n, _ in cols]
    missing = [n for n, _ in cols if n not in cmp_cols]
    if missing:
        not_compared[info["qname"]] = missing

    def proj(row):
        return tuple(row.get(n) for n in cmp_cols)
    if info["key"]:
        src = {tuple(r[c] for c in info["key"]): proj(r) for r in src_rows}
        mod = {kv: proj(r) for kv, r in keyed[t].items()}
        only_src = len(set(src) - set(mod))
        only_log = len(set(mod) - set(src))
        diff_vals = [kv for kv in set(src) & set(mod) if src[kv] != mod[kv]]
        if only_src or only_log or diff_vals:
            bad += 1
            dcols = sorted({cmp_cols[i] for kv in diff_vals for i, (a, b) in enumerate(zip(src[kv], mod[kv])) if a != b})
            print("MISMATCH table %s (keyed): source %d rows, log %d rows; %d keys only in the source, %d only in the log, "
                  "%d rows with other values (columns: %s)"
                  % (info["qname"], len(src), len(mod), only_src, only_log, len(diff_vals), ", ".join(dcols) or "-"))
    else:
        src = collections.Counter(proj(r) for r in src_rows)
        mod = collections.Counter()
        for row, n in multi[t].items():
            mod[proj(dict(zip([c for c, _ in cols], row)))] += n
        if src != mod:
            bad += 1
            print("MISMATCH table %s (multiset): source %d rows, log %d rows; %d rows only in the source, %d only in the log"
                  % (info["qname"], sum(src.values()), sum(mod.values()), sum((src - mod).values()), sum((mod - src).values())))
for a, n in sorted(anomalies.items()):
    bad += 1
    print("MISMATCH log: %d x %s" % (n, a))
for q, cols in sorted(not_compared.items()):
    print("not in the log, not compared: table %s columns %s" % (q, ", ".join(cols)))
print("%d tables compared with the log (%d changes in %d transactions up to its last checkpoint): %s"
      % (len(tables) - 1, changes, len(xids), "%d differ" % bad if bad else "all equal"))
sys.exit(1 if bad else 0)
