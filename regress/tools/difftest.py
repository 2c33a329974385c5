#!/usr/bin/env python3
# regress/tools/difftest.py: the seeded generator of test/t/600_differential.pl (stdlib only).
#
#   difftest.py --seed N [--pg MAJOR] schema            the source schema (SQL)
#   difftest.py --seed N [--pg MAJOR] workload --part P the workload's part P (0 .. PARTS-1), SQL
#   difftest.py --seed N [--pg MAJOR] workload --dir D  every part P into D/part-P.sql
#   difftest.py --seed N [--pg MAJOR] parts             how many parts the workload has
#
# The same seed (and --pg) gives the same bytes. The schema draws, per seed, columns of many
# types (integers with their extremes, numeric with NaN and, from 14, the infinities, float
# specials and -0, text with quotes, backslashes, tabs, newlines, COPY's \N and unicode,
# bytea with zero bytes, uuid, dates and timestamps with the infinities and their far ends,
# time, timetz, intervals equal by = but not the same, json with line breaks and duplicate
# keys, jsonb, arrays with NULLs, several dimensions and lower bounds, enums, domains, a
# composite type, ranges, inet, point), hostile identifiers (quotes, spaces, dots, mixed case,
# unicode, 63-byte names), over tables of every shape the mirror must handle:
#   keyed tables (int, bigint, text, uuid, composite and identity keys), a keyless table (no
#   key, default replica identity: the workload only inserts into it and truncates it), a
#   REPLICA IDENTITY FULL table without a key, a REPLICA IDENTITY USING INDEX table, a range
#   partitioned table sub-partitioned by list and a list partitioned table sub-partitioned by
#   range (defaults at both levels), an inheritance parent and child, foreign keys (ON DELETE
#   CASCADE / SET NULL, ON UPDATE CASCADE), stored generated and identity columns, TOASTed
#   text (random base64 over 8 kB, default storage and EXTERNAL).
# The workload (committed in order by one session) inserts, updates (some changing the key,
# some leaving the TOASTed column unchanged), deletes, truncates, moves rows between
# partitions, rolls subtransactions back (SAVEPOINT / ROLLBACK TO) and whole transactions,
# and has transactions of 20,000 rows (streamed by the server). Part 0 is the history before
# an initial snapshot; the other parts run while the consumers do. It keeps a model of the
# keys each table holds, so that every statement is valid (no key collides, every foreign
# key finds its row); values are literals or functions of generate_series, never random()
# or now().
import argparse
import hashlib
import random
import sys

PARTS = 6          # part 0, then 5 parts while the consumers run
BIG_ROWS = 20000   # rows of the large (streamed) transactions


def qi(name):
    return '"' + name.replace('"', '""') + '"'


def ql(s):
    return "'" + s.replace("'", "''") + "'"


def blob(tag, nbytes):
    """A TOASTed value: base64 of md5 output (random, does not compress), about nbytes."""
    n = nbytes // 24 + 1
    return ("(SELECT string_agg(encode(decode(md5(%s || g), 'hex'), 'base64'), '') "
            "FROM generate_series(1, %d) g)" % (ql(tag + ":"), n))


def fit63(base):
    """base cut or padded to exactly 63 bytes (at a character boundary)."""
    out = ""
    for ch in base:
        if len((out + ch).encode()) > 63:
            break
        out += ch
    return out + "x" * (63 - len(out.encode()))


# ---------------------------------------------------------------- column types
# Each: name, SQL type, a literal value drawn from the seed (SQL text), an expression of g (bulk rows)

TEXTS = ["", "plain", "tab\there", "new\nline\r\nx", "back\\slash", "quo'te", 'dq"x', "\\N",
         "NULL", " lead and trail ", "ünïcödé ☺ 🙂 € 日本語", "e\u0301 combining", "a,b{c}(d)",
         "x" * 300, "\x01\x1f ctl"]


class Ctx:
    def __init__(self, rng, pg):
        self.rng = rng
        self.pg = pg


def numeric_lits(pg):
    v = ["'NaN'", "1.0", "1.00", "0", "-0.000", "123456789012345678901234567890.123456789",
         "-0.000000000000000000001", "99999.999", "NULL"]
    if pg >= 14:
        v += ["'Infinity'", "'-Infinity'"]
    return v


def rand_text(rng):
    if rng.random() < 0.6:
        return ql(rng.choice(TEXTS))
    alphabet = "abcXYZ019 _-,'\"\\{}()\t\nüé€☺🙂日"
    return ql("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))


def type_pool(ctx):
    rng = ctx.rng
    pg = ctx.pg
    P = []

    def add(name, sqltype, lits, bulk):
        P.append(dict(name=name, type=sqltype, lits=lits, bulk=bulk))

    add("int4", "int", lambda: rng.choice(["0", "-1", "2147483647", "-2147483648", "NULL",
                                             str(rng.randint(-10**6, 10**6))]),
        lambda g: "((%s * 7919) %% 1000003 - 500000)" % g)
    add("int8", "bigint", lambda: rng.choice(["9223372036854775807", "-9223372036854775808", "NULL",
                                                str(rng.randint(-10**15, 10**15))]),
        lambda g: "(%s::int8 * 1000000007)" % g)
    add("int2", "smallint", lambda: rng.choice(["32767", "-32768", "0", str(rng.randint(-99, 99))]),
        lambda g: "((%s %% 30000)::int2)" % g)
    add("numeric", "numeric", lambda: rng.choice(numeric_lits(pg) + [repr(rng.randint(-10**6, 10**6) / 100)]),
        lambda g: "(%s * 1.25)::numeric" % g)
    add("numeric12", "numeric(12,3)", lambda: rng.choice(["1.5", "-0.001", "NULL", "123456789.123",
                                                          "'NaN'", str(rng.randint(0, 99999))]),
        lambda g: "((%s %% 100000) * 0.333)::numeric(12,3)" % g)
    add("float8", "float8", lambda: rng.choice(["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0",
                                                  "1e308", "5e-324", "0.1", "NULL",
                                                  repr(rng.uniform(-1e6, 1e6))]),
        lambda g: "(%s / 7.0)::float8" % g)
    add("float4", "real", lambda: rng.choice(["'NaN'", "'-0'", "3.4028235e38", "1.4e-45", "0.1",
                                                repr(round(rng.uniform(-1e3, 1e3), 3))]),
        lambda g: "(%s / 3.0)::float4" % g)
    add("text", "text", lambda: rand_text(rng), lambda g: "(md5(%s::text) || ' ü')" % g)
    add("varchar", "varchar(40)", lambda: ql(rng.choice(TEXTS)[:40]), lambda g: "left(md5(%s::text), 20)" % g)
    add("bpchar", "char(6)", lambda: rng.choice(["'ab'", "''", "'ü €'", "NULL", "'abcdef'"]),
        lambda g: "(%s %% 1000)::text::char(6)" % g)
    add("bool", "bool", lambda: rng.choice(["true", "false", "NULL"]), lambda g: "(%s %% 3 = 0)" % g)
    add("bytea", "bytea", lambda: rng.choice(["'\\x'", "'\\x00'", "'\\x00ff00de'", "NULL",
                                                "'\\x" + "".join(rng.choice("0123456789abcdef") for _ in range(2 * rng.randint(1, 30))) + "'"]),
        lambda g: "(decode(md5(%s::text), 'hex') || '\\x00'::bytea)" % g)
    add("uuid", "uuid", lambda: rng.choice(["'00000000-0000-0000-0000-000000000000'", "NULL",
                                              ql(str(uuid_of("v%d" % rng.randint(0, 10**9))))]),
        lambda g: "md5('u' || %s)::uuid" % g)
    add("date", "date", lambda: rng.choice(["'infinity'", "'-infinity'", "'4713-01-01 BC'", "'5874897-12-31'",
                                              "'0001-01-01 BC'", "'2024-02-29'", "'10000-01-01'", "NULL"]),
        lambda g: "(date '2000-01-01' + (%s %% 20000))" % g)
    add("timestamp", "timestamp", lambda: rng.choice(["'infinity'", "'-infinity'", "'294276-12-31 23:59:59.999999'",
                                                        "'4713-11-24 00:00:00 BC'", "'2000-01-01 00:00:00.000001'",
                                                        "'1999-12-31 23:59:59.5'", "'294247-01-10 04:00:54.775807'", "NULL"]),
        lambda g: "(timestamp '2001-02-03 04:05:06.789' + %s * interval '61.000001 s')" % g)
    add("timestamptz", "timestamptz", lambda: rng.choice(["'infinity'", "'-infinity'", "'2024-03-31 02:30:00+02'",
                                                            "'1900-01-01 00:00:00-08'", "'2262-04-11 23:47:16.854775+00'",
                                                            "'294276-12-31 23:59:59.999999+00'", "NULL"]),
        lambda g: "(timestamptz '2020-01-01 00:00:00+00' + %s * interval '1 h 0.5 s')" % g)
    add("time", "time", lambda: rng.choice(["'24:00:00'", "'00:00:00'", "'23:59:59.999999'", "'12:34:56.7'"]),
        lambda g: "(time '00:00' + %s * interval '1.000001 s')" % g)
    add("timetz", "timetz", lambda: rng.choice(["'12:00:00+05:30'", "'00:00:00-15:59'", "'23:59:59.999999+15:59'", "NULL"]),
        lambda g: "(timetz '10:00+02' + %s * interval '1 s')" % g)
    add("interval", "interval", lambda: rng.choice(["'1 day'", "'24 hours'", "'1 mon'", "'30 days'",
                                                      "'-1 mons +2 days -00:00:03.5'", "'178000000 years'",
                                                      "'0'", "NULL"]),
        lambda g: "make_interval(mins => %s::int %% 1000, secs => 0.5)" % g)
    add("jsonb", "jsonb", lambda: rng.choice(["'{\"a\": 1, \"b\": [1, 2.50, null], \"ü\": \"☺\"}'", "'[]'", "'null'",
                                                "'\"str \\\\ \\\" q\"'", "'1e10'", "'{\"deep\": {\"x\": [[[{\"y\": -0.0}]]]}}'",
                                                "NULL", "'{\"n\": 12345678901234567890.5}'"]),
        lambda g: "jsonb_build_object('g', %s, 'h', md5(%s::text), 'a', jsonb_build_array(1, 'x'))" % (g, g))
    add("json", "json", lambda: rng.choice(["'{\"a\":1,  \"a\": 2}'", "'{\\n \"x\": [1,\\n2]}'".replace("\\n", "\n"),
                                              "'  [1, 2 ] '", "'\"s\"'", "NULL"]),
        lambda g: "json_build_object('g', %s)" % g)
    add("int4arr", "int[]", lambda: rng.choice(["'{1,NULL,3}'", "'{{1,2},{3,4}}'", "'[0:2]={7,8,9}'", "'{}'", "NULL",
                                                  "'[-2:-1][3:3]={{5},{6}}'"]),
        lambda g: "ARRAY[%s, NULL, %s + 1]" % (g, g))
    add("textarr", "text[]", lambda: rng.choice([r"""'{"a b","NULL",NULL,"q\"x","back\\slash","",ü}'""", "'{}'",
                                                   "ARRAY['new\nline', E'tab\\t', '\\N', ',{}']", "NULL"]),
        lambda g: "ARRAY[md5(%s::text), NULL, 'ü']" % g)
    add("enum", "rp_mood", lambda: rng.choice(["'sad'", "'ok'", "'très \"heureux\" ☺'", "'Mixed Case'", "NULL"]),
        lambda g: "(enum_range(NULL::rp_mood))[1 + %s %% 4]" % g)
    add("enumarr", "rp_mood[]", lambda: rng.choice(["'{sad,ok}'", "ARRAY['Mixed Case', NULL]::rp_mood[]", "'{}'"]),
        lambda g: "ARRAY[(enum_range(NULL::rp_mood))[1 + %s %% 4]]" % g)
    add("dom_int", "rp_posint", lambda: rng.choice(["0", "7", "2147483647", "NULL"]), lambda g: "(%s %% 1000)::rp_posint" % g)
    add("dom_text", "rp_code", lambda: rng.choice(["'AB-1'", "'ü'", "''", "NULL"]), lambda g: "('C' || %s)::rp_code" % g)
    add("composite", "rp_pair", lambda: rng.choice(["ROW(1, 'a,b \"c\"', 2.50)::rp_pair", "ROW(NULL, '', NULL)::rp_pair",
                                                      "ROW(-7, 'ü\\x', 'NaN')::rp_pair", "NULL"]),
        lambda g: "ROW(%s, md5(%s::text), %s * 0.5)::rp_pair" % (g, g, g))
    add("int4range", "int4range", lambda: rng.choice(["'[1,5)'", "'empty'", "'(,10]'", "'[3,)'", "NULL"]),
        lambda g: "int4range(%s, %s + 10)" % (g, g))
    add("numrange", "numrange", lambda: rng.choice(["'[1.5,2.50]'", "'(,)'", "'empty'"]),
        lambda g: "numrange(%s, %s + 0.5)" % (g, g))
    add("tstzrange", "tstzrange", lambda: rng.choice(["'[\"2024-01-01 00:00+00\",infinity)'", "'empty'",
                                                        "'(\"2000-01-01 00:00+05\",\"2000-01-02 00:00+05\"]'"]),
        lambda g: "tstzrange('2020-01-01+00'::timestamptz + %s * interval '1 h', NULL)" % g)
    add("daterange", "daterange", lambda: rng.choice(["'[2024-01-01,2024-02-01)'", "'[2024-01-01,infinity)'", "'empty'"]),
        lambda g: "daterange('2000-01-01'::date + (%s %% 1000), '2000-01-01'::date + (%s %% 1000) + 3)" % (g, g))
    add("inet", "inet", lambda: rng.choice(["'192.168.0.1/24'", "'::1'", "'10.0.0.1'", "NULL"]),
        lambda g: "('10.0.0.0'::inet + %s)" % g)
    add("point", "point", lambda: rng.choice(["'(1.5,-2)'", "'(0,0)'", "NULL"]), lambda g: "point(%s, -%s)" % (g, g))
    if pg >= 14:
        add("multirange", "int4multirange", lambda: rng.choice(["'{[1,3), [5,8)}'", "'{}'", "NULL"]),
            lambda g: "int4multirange(int4range(%s, %s + 2))" % (g, g))
    return P


def uuid_of(s):
    h = hashlib.md5(s.encode()).hexdigest()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


# ---------------------------------------------------------------- tables

class Col:
    def __init__(self, name, typ, lit, bulk, kind="data", toast=None):
        self.name, self.type, self.lit, self.bulk, self.kind, self.toast = name, typ, lit, bulk, kind, toast


class Table:
    """One relation. role: keyed | keyless | full | uindex | part (partitioned parent) |
    inh_p | inh_c | leaf (a partition)."""

    def __init__(self, schema, name, role, keykind):
        self.schema, self.name, self.role, self.keykind = schema, name, role, keykind
        self.cols = []          # data columns (not key, not generated, not identity)
        self.extra_ddl = []     # column definitions after the data ones (generated, identity)
        self.leaves = []
        self.parent = None
        self.fk = None          # (parent table, column name, on delete)
        self.toast = None       # the TOASTed column's name
        self.storage_external = False

    @property
    def q(self):
        return qi(self.schema) + "." + qi(self.name)


class Gen:
    def __init__(self, seed, pg):
        self.seed = seed
        self.pg = pg
        self.rng = random.Random("difftest-schema-%d-%d" % (seed, pg))
        self.ctx = Ctx(self.rng, pg)
        self.pool = type_pool(self.ctx)
        self.used_names = set()
        self.build()

    # hostile names, deterministic per seed
    def pick_name(self, plain, hostile_ok=True):
        rng = self.rng
        cands = [plain]
        if hostile_ok:
            cands += [plain + " Sp ace", "Mi\"x\"ed" + plain.capitalize(), plain + ".dot",
                      "ünï_" + plain + "_☺", fit63("long_" + plain + "_ñäme_"),
                      fit63("L" + plain + "_" + "ü" * 40), plain.upper()]
        for _ in range(20):
            n = rng.choice(cands) if rng.random() < 0.6 else plain
            # the server cuts a name past 63 bytes, and two cut names can be one
            if len(n.encode()) > 63:
                n = fit63(n)
            if n not in self.used_names:
                self.used_names.add(n)
                return n
        suffix = "_%d" % len(self.used_names)
        n = plain
        while len((n + suffix).encode()) > 63:
            n = n[:-1]
        n += suffix
        self.used_names.add(n)
        return n

    def pick_schema(self):
        return self.rng.choice(self.schemas)

    def data_cols(self, n, full=False):
        rng = self.rng
        kinds = rng.sample(self.pool, n)
        cols = []
        colnames = set()
        for i, k in enumerate(kinds):
            base = "c_" + k["name"]
            r = rng.random()
            if r < 0.12:
                name = base + " \"Q\" sp"
            elif r < 0.2:
                name = base.upper() + "MiX"
            elif r < 0.25:
                name = fit63(base + "_long_column_ñame_")
            elif r < 0.3:
                name = "select" if "select" not in colnames else base
            else:
                name = base
            if name in colnames:
                name = base + "_%d" % i
            colnames.add(name)
            cols.append(Col(name, k["type"], k["lits"], k["bulk"]))
            cols[-1].pool = k["name"]
        return cols

    def build(self):
        rng = self.rng
        self.schemas = ["public", "Ünï cödé", "we \"q\" sch.ema", "MixedCase"]
        self.tables = []
        T = self.tables

        def keyed(plain, keykind, ncols, toast=False):
            t = Table(self.pick_schema(), self.pick_name(plain), "keyed", keykind)
            t.cols = self.data_cols(ncols)
            if toast:
                t.toast = "doc"
                t.storage_external = rng.random() < 0.5
            if rng.random() < 0.4:
                t.extra_ddl.append("gen numeric GENERATED ALWAYS AS (ver * 2 + 0.5) STORED")
            if keykind != "ident" and rng.random() < 0.3:
                t.extra_ddl.append("ident bigint GENERATED BY DEFAULT AS IDENTITY")
            T.append(t)
            return t

        self.k_int = keyed("k_int", "int", rng.randint(3, 7), toast=True)
        keyed("k_bigint", "bigint", rng.randint(3, 7))
        self.k_text = keyed("k_text", "text", rng.randint(2, 5), toast=rng.random() < 0.5)
        keyed("k_uuid", "uuid", rng.randint(3, 7))
        keyed("k_comp", "comp", rng.randint(2, 5), toast=True)
        keyed("k_ident", "ident", rng.randint(2, 4))
        # foreign key child of k_int
        c = Table(self.pick_schema(), self.pick_name("fk_child"), "keyed", "int")
        c.cols = self.data_cols(rng.randint(1, 3))
        c.fk = (self.k_int, "parent_id", "CASCADE")
        T.append(c)
        self.fk_child = c
        # keyless: no key, default replica identity: inserts and truncates only
        t = Table(self.pick_schema(), self.pick_name("nokey"), "keyless", None)
        t.cols = self.data_cols(rng.randint(2, 6))
        T.append(t)
        # REPLICA IDENTITY FULL, no key (rid: the workload's row number, no constraint)
        t = Table(self.pick_schema(), self.pick_name("full_t"), "full", "rid")
        t.cols = self.data_cols(rng.randint(3, 6))
        T.append(t)
        # REPLICA IDENTITY USING INDEX (a unique index on a NOT NULL text column)
        t = Table(self.pick_schema(), self.pick_name("uidx"), "uindex", "code")
        t.cols = self.data_cols(rng.randint(2, 5))
        if rng.random() < 0.5:
            t.toast = "doc"
        T.append(t)
        # partitioned, range on bucket, then list on region, defaults at both levels
        p = Table(self.pick_schema(), self.pick_name("pt_range"), "part", "part")
        p.cols = self.data_cols(rng.randint(2, 5))
        p.fk = (self.k_text, "owner", "SET NULL")
        p.partby = "RANGE (bucket)"
        p.layout = [("FOR VALUES FROM (0) TO (10)", "LIST (region)",
                     ["FOR VALUES IN ('north', 'south')", "FOR VALUES IN ('east')", "DEFAULT"]),
                    ("FOR VALUES FROM (10) TO (20)", None, None),
                    ("DEFAULT", None, None)]
        T.append(p)
        self.pt_range = p
        # partitioned by list on region, then range on bucket
        p = Table(self.pick_schema(), self.pick_name("pt_list"), "part", "part")
        p.cols = self.data_cols(rng.randint(2, 4))
        p.partby = "LIST (region)"
        p.layout = [("FOR VALUES IN ('north')", None, None),
                    ("FOR VALUES IN ('south', 'east', 'Zône ☺')", "RANGE (bucket)",
                     ["FOR VALUES FROM (MINVALUE) TO (15)", "DEFAULT"]),
                    ("DEFAULT", None, None)]
        T.append(p)
        for p in [x for x in T if x.role == "part"]:
            for i, (bound, sub, subs) in enumerate(p.layout):
                leaf = Table(p.schema, self.pick_name(p.name[:40] + "_p%d" % i, hostile_ok=rng.random() < 0.3),
                             "leaf" if not sub else "part", "part")
                leaf.parent, leaf.bound = p, bound
                p.leaves.append(leaf)
                if sub:
                    leaf.partby = sub
                    for j, b in enumerate(subs):
                        l2 = Table(p.schema, self.pick_name(p.name[:40] + "_p%d_%d" % (i, j), hostile_ok=False), "leaf", "part")
                        l2.parent, l2.bound = leaf, b
                        leaf.leaves.append(l2)
        # inheritance
        ip = Table(self.pick_schema(), self.pick_name("inh_parent"), "inh_p", "int")
        ip.cols = self.data_cols(rng.randint(2, 4))
        ic = Table(ip.schema, self.pick_name("inh_child"), "inh_c", "int")
        ic.cols = ip.cols       # inherited
        ic.parent = ip
        ic.child_cols = self.data_cols(rng.randint(1, 2))
        # a child column named like an inherited one would merge with it (and be listed twice)
        for c in ic.child_cols:
            if c.name in {x.name for x in ip.cols}:
                c.name = fit63(c.name + "_child")
        T.append(ip)
        T.append(ic)
        self.inh_p, self.inh_c = ip, ic

    # ------------------------------------------------------------ schema SQL
    def key_defs(self, t):
        k = t.keykind
        if k == "int":
            return ["id int NOT NULL"], ["id"]
        if k == "bigint":
            return ["id bigint NOT NULL"], ["id"]
        if k == "text":
            return ["id text NOT NULL"], ["id"]
        if k == "uuid":
            return ["id uuid NOT NULL"], ["id"]
        if k == "comp":
            return ["ka int NOT NULL", "\"Kb Part\" text NOT NULL"], ["ka", "Kb Part"]
        if k == "ident":
            return ["id bigint GENERATED ALWAYS AS IDENTITY"], ["id"]
        if k == "part":
            return ["id bigint NOT NULL", "bucket int NOT NULL", "region text NOT NULL"], ["id", "bucket", "region"]
        if k == "rid":
            return ["rid int"], []
        if k == "code":
            return ["code text NOT NULL"], ["code"]
        return [], []

    def schema_sql(self):
        out = ["-- difftest schema, seed %d, PostgreSQL %d" % (self.seed, self.pg)]
        for s in self.schemas:
            if s != "public":
                out.append("CREATE SCHEMA %s;" % qi(s))
        out.append("CREATE TYPE public.rp_mood AS ENUM ('sad', 'ok', 'très \"heureux\" ☺', 'Mixed Case');")
        out.append("CREATE DOMAIN public.rp_posint AS int CHECK (VALUE >= 0);")
        out.append("CREATE DOMAIN public.rp_code AS text CHECK (length(VALUE) <= 40);")
        out.append("CREATE TYPE public.rp_pair AS (i int, t text, n numeric);")
        for t in self.tables:
            if t.role == "inh_c":
                continue
            self.create_table(out, t)
            if t.role == "inh_p":
                c = self.inh_c
                cols = ["%s %s" % (qi(x.name), x.type) for x in c.child_cols]
                cols.append("PRIMARY KEY (id)")
                out.append("CREATE TABLE %s (%s) INHERITS (%s);" % (c.q, ", ".join(cols), t.q))
        return "\n".join(out) + "\n"

    def create_table(self, out, t):
        defs, keys = self.key_defs(t)
        cols = list(defs)
        cols.append("ver int NOT NULL DEFAULT 0")
        if t.fk:
            cols.append("%s %s" % (qi(t.fk[1]), "int" if t.fk[0].keykind == "int" else "text"))
        for c in t.cols:
            cols.append("%s %s" % (qi(c.name), c.type))
        if t.toast:
            cols.append("doc text")
        cols += t.extra_ddl
        if t.role in ("keyed", "inh_p", "part"):
            cols.append("PRIMARY KEY (%s)" % ", ".join(qi(k) for k in keys))
        if t.fk:
            cols.append("FOREIGN KEY (%s) REFERENCES %s (id) ON DELETE %s ON UPDATE CASCADE"
                        % (qi(t.fk[1]), t.fk[0].q, t.fk[2]))
        part = " PARTITION BY " + t.partby if t.role == "part" else ""
        out.append("CREATE TABLE %s (\n  %s)%s;" % (t.q, ",\n  ".join(cols), part))
        if t.toast and t.storage_external:
            out.append("ALTER TABLE %s ALTER doc SET STORAGE EXTERNAL;" % t.q)
        if t.role == "full":
            out.append("ALTER TABLE %s REPLICA IDENTITY FULL;" % t.q)
        if t.role == "uindex":
            idx = qi(fit63("uidx_" + hashlib.md5(t.name.encode()).hexdigest()))
            out.append("CREATE UNIQUE INDEX %s ON %s (code);" % (idx, t.q))
            out.append("ALTER TABLE %s REPLICA IDENTITY USING INDEX %s;" % (t.q, idx))
        if t.role == "part":
            for leaf in t.leaves:
                self.create_leaf(out, leaf)

    def create_leaf(self, out, leaf):
        sub = " PARTITION BY " + leaf.partby if leaf.role == "part" else ""
        out.append("CREATE TABLE %s PARTITION OF %s %s%s;" % (leaf.q, leaf.parent.q, leaf.bound, sub))
        for l2 in leaf.leaves:
            self.create_leaf(out, l2)


# ---------------------------------------------------------------- workload

class Workload:
    """The model: per table, the row numbers n present (and for the FK child, n -> parent n)."""

    def __init__(self, g):
        self.g = g
        self.rng = random.Random("difftest-workload-%d-%d" % (g.seed, g.pg))
        g.ctx.rng = self.rng   # the literal generators draw from the workload's stream now
        self.rows = {id(t): {} for t in g.tables}
        self.next_n = 1
        self.ident = 0          # k_ident's identity sequence (not transactional)
        self.parts = [[] for _ in range(PARTS)]
        self.build()

    def fresh(self):
        n = self.next_n
        self.next_n += 1
        return n

    # key values of row n of table t, as SQL literals / as SQL expressions of g
    def key_lit(self, t, n):
        k = t.keykind
        if k in ("int", "bigint", "part"):
            return ["%d" % (n + (4000000000 if k == "bigint" else 0))]
        if k == "text":
            return [ql("kë-%07d ☺" % n)]
        if k == "uuid":
            return [ql(uuid_of("u%d" % n))]
        if k == "comp":
            return ["%d" % (n // 50), ql("b%d \"x\"" % (n % 50))]
        if k == "ident":
            return ["%d" % n]
        if k == "rid":
            return ["%d" % n]
        if k == "code":
            return [ql("code-%d" % n)]
        raise ValueError(k)

    def key_bulk(self, t, g):
        k = t.keykind
        if k in ("int", "part", "rid"):
            return [g]
        if k == "bigint":
            return ["(%s + 4000000000)" % g]
        if k == "text":
            return ["('kë-' || lpad(%s::text, 7, '0') || ' ☺')" % g]
        if k == "uuid":
            return ["md5('u' || %s)::uuid" % g]
        if k == "comp":
            return ["(%s / 50)" % g, "('b' || (%s %% 50) || ' \"x\"')" % g]
        if k == "code":
            return ["('code-' || %s)" % g]
        raise ValueError(k)

    def key_cols(self, t):
        if t.keykind == "part":
            return ["id"]
        if t.keykind in ("int", "bigint", "text", "uuid", "ident"):
            return ["id"]
        if t.keykind == "comp":
            return ["ka", "Kb Part"]
        if t.keykind == "rid":
            return ["rid"]
        if t.keykind == "code":
            return ["code"]
        return []

    def where(self, t, ns):
        cols = self.key_cols(t)
        if len(cols) == 1:
            return "%s IN (%s)" % (qi(cols[0]), ", ".join(self.key_lit(t, n)[0] for n in ns))
        return "(%s) IN (%s)" % (", ".join(qi(c) for c in cols),
                                 ", ".join("(%s)" % ", ".join(self.key_lit(t, n)) for n in ns))

    def bucket_region(self):
        return str(self.rng.choice([-5, 0, 3, 9, 10, 15, 19, 20, 40])), ql(self.rng.choice(["north", "south", "east", "west", "Zône ☺"]))

    def fk_value(self, t, rows):
        parent = t.fk[0]
        have = list(rows[id(parent)])
        if not have or self.rng.random() < 0.1:
            return "NULL"
        return self.key_lit(parent, self.rng.choice(have))[0]

    def data_lits(self, t):
        return [c.lit() for c in t.cols]

    # one INSERT of k literal rows; returns SQL or None
    def op_insert(self, t, rows, k):
        names = []
        if t.keykind not in ("ident", None):
            names += self.key_cols(t) if t.keykind != "part" else ["id", "bucket", "region"]
        names.append("ver")
        if t.fk:
            names.append(t.fk[1])
        names += [c.name for c in t.cols]
        if t.role == "inh_c":
            names += [c.name for c in t.child_cols]
        if t.toast:
            names.append("doc")
        vals = []
        for _ in range(k):
            row = []
            if t.keykind == "ident":
                self.ident += 1
                n = self.ident
            elif t.keykind is None:
                n = None
            else:
                n = self.fresh()
                row += self.key_lit(t, n)
                if t.keykind == "part":
                    row += list(self.bucket_region())
            row.append("0")
            if t.fk:
                row.append(self.fk_value(t, rows))
            row += self.data_lits(t)
            if t.role == "inh_c":
                row += [c.lit() for c in t.child_cols]
            if t.toast:
                row.append(blob("%d:%s" % (self.g.seed, n), self.rng.randint(8200, 12000)) if self.rng.random() < 0.5 else rand_text(self.rng))
            vals.append("(%s)" % ", ".join(row))
            if n is not None:
                rows[id(t)][n] = True
        if t.role in ("keyless", "full") and vals and self.rng.random() < 0.3:
            vals.append(vals[-1])     # the same row twice
        return "INSERT INTO %s (%s) VALUES\n  %s;" % (t.q, ", ".join(qi(x) for x in names), ",\n  ".join(vals))

    def op_bulk_insert(self, t, rows, m):
        lo = self.next_n
        self.next_n += m
        g = "g"
        names, exprs = [], []
        if t.keykind == "ident":
            first = self.ident + 1
            self.ident += m
            ns = range(first, first + m)
        elif t.keykind is None:
            ns = []
        else:
            ns = range(lo, lo + m)
            names += self.key_cols(t)
            exprs += self.key_bulk(t, g)
            if t.keykind == "part":
                names += ["bucket", "region"]
                exprs += ["(g % 45 - 5)", "(ARRAY['north', 'south', 'east', 'west', 'Zône ☺'])[1 + g % 5]"]
        names.append("ver")
        exprs.append("0")
        if t.fk:
            parent = t.fk[0]
            have = sorted(rows[id(parent)])
            if have:
                pick = have[:: max(1, len(have) // 50)][:50]
                arr = "(ARRAY[%s])[1 + g %% %d]" % (", ".join(self.key_lit(parent, n)[0] for n in pick), len(pick))
                arr = "CASE WHEN g %% 9 = 0 THEN NULL ELSE %s END" % arr
            else:
                arr = "NULL"
            names.append(t.fk[1])
            exprs.append(arr)
        for c in t.cols:
            names.append(c.name)
            exprs.append("CASE WHEN g %% 11 = 0 THEN NULL ELSE %s END" % c.bulk(g))
        if t.role == "inh_c":
            for c in t.child_cols:
                names.append(c.name)
                exprs.append(c.bulk(g))
        if t.toast:
            names.append("doc")
            exprs.append("CASE WHEN g %% 97 = 0 THEN (SELECT string_agg(encode(decode(md5(%s || g || ':' || i), 'hex'), 'base64'), '') "
                         "FROM generate_series(1, 400) i) ELSE md5(g::text) END" % ql(str(self.g.seed)))
        for n in ns:
            rows[id(t)][n] = True
        return ("INSERT INTO %s (%s)\n  SELECT %s FROM generate_series(%d, %d) g;"
                % (t.q, ", ".join(qi(x) for x in names), ", ".join(exprs), lo, lo + m - 1))

    def pick(self, t, rows, k):
        have = list(rows[id(t)])
        if not have:
            return []
        return sorted(self.rng.sample(have, min(k, len(have))))

    def op_update(self, t, rows, k):
        ns = self.pick(t, rows, k)
        if not ns:
            return None
        sets = ["ver = ver + 1"]
        for c in self.rng.sample(t.cols, self.rng.randint(0, len(t.cols))):
            sets.append("%s = %s" % (qi(c.name), c.lit()))
        if t.toast and self.rng.random() < 0.3:
            sets.append("doc = %s" % blob("%d:u%d" % (self.g.seed, self.fresh()), self.rng.randint(8200, 12000)))
        if t.keykind == "part" and self.rng.random() < 0.5:
            b, r = self.bucket_region()      # the row moves to another partition (or stays)
            sets += ["bucket = %s" % b, "region = %s" % r]
        if t.fk and self.rng.random() < 0.3:
            v = self.fk_value(t, rows)
            if v is not None:
                sets.append("%s = %s" % (qi(t.fk[1]), v))
        tgt = t.q
        if t.role == "inh_p":
            # through the parent: its child's rows with these ids are updated too
            ns = self.pick_inh(rows, k)
        return "UPDATE %s SET %s WHERE %s;" % (tgt, ", ".join(sets), self.where(t, ns))

    def pick_inh(self, rows, k):
        have = list(rows[id(self.g.inh_p)]) + list(rows[id(self.g.inh_c)])
        return sorted(self.rng.sample(have, min(k, len(have)))) if have else [0]

    def op_key_update(self, t, rows):
        if t.keykind in ("ident", None, "rid"):
            return None
        ns = self.pick(t, rows, 1)
        if not ns:
            return None
        old, new = ns[0], self.fresh()
        cols = self.key_cols(t)
        sets = ["%s = %s" % (qi(c), v) for c, v in zip(cols, self.key_lit(t, new))]
        if self.rng.random() < 0.5:
            sets.append("ver = ver + 1")
        del rows[id(t)][old]
        rows[id(t)][new] = True
        return "UPDATE %s SET %s WHERE %s;" % (t.q, ", ".join(sets), self.where(t, [old]))

    def op_delete(self, t, rows, k):
        if t.role == "inh_p":
            ns = self.pick_inh(rows, k)
            for n in ns:
                rows[id(self.g.inh_p)].pop(n, None)
                rows[id(self.g.inh_c)].pop(n, None)
            return "DELETE FROM %s WHERE %s;" % (t.q, self.where(t, ns))
        ns = self.pick(t, rows, k)
        if not ns:
            return None
        for n in ns:
            del rows[id(t)][n]
        # (a delete of k_int cascades to the child's rows; the model keeps their numbers:
        # updates and deletes of them match nothing)
        return "DELETE FROM %s WHERE %s;" % (t.q, self.where(t, ns))

    def op_truncate(self, t, rows):
        names = [t]
        if t is self.g.k_int:
            names.append(self.g.fk_child)
        if t is self.g.k_text:
            names.append(self.g.pt_range)
        if t.role == "inh_p":
            names.append(self.g.inh_c)
        if t.role == "inh_c":
            return None
        for x in names:
            rows[id(x)].clear()
        restart = " RESTART IDENTITY" if t.keykind == "ident" or self.rng.random() < 0.2 else ""
        if t.keykind == "ident" and restart:
            self.ident = 0
        return "TRUNCATE %s%s;" % (", ".join(x.q for x in names), restart)

    # ------------------------------------------------------------ transactions
    def tables_for(self, op):
        ts = [t for t in self.g.tables if t.role not in ("leaf",)]
        if op in ("update", "key", "delete"):
            ts = [t for t in ts if t.role not in ("keyless",)]
        if op == "key":
            ts = [t for t in ts if t.role in ("keyed", "uindex")]
        return ts

    def one_op(self, rows, allow_truncate):
        rng = self.rng
        r = rng.random()
        if r < 0.38:
            t = rng.choice(self.tables_for("insert"))
            return self.op_insert(t, rows, rng.randint(1, 4))
        if r < 0.45:
            t = rng.choice(self.tables_for("insert"))
            return self.op_bulk_insert(t, rows, rng.randint(20, 300))
        if r < 0.72:
            t = rng.choice(self.tables_for("update"))
            return self.op_update(t, rows, rng.randint(1, 6))
        if r < 0.8:
            t = rng.choice(self.tables_for("key"))
            return self.op_key_update(t, rows)
        if r < 0.996 or not allow_truncate:
            t = rng.choice(self.tables_for("delete"))
            return self.op_delete(t, rows, rng.randint(1, 4))
        t = rng.choice(self.tables_for("truncate"))
        return self.op_truncate(t, rows)

    def snapshot(self):
        return {k: dict(v) for k, v in self.rows.items()}

    def txn(self, part, nops, big=False):
        rng = self.rng
        out = ["BEGIN;"]
        rollback = not big and rng.random() < 0.05
        saved = self.snapshot() if rollback else None
        rows = self.rows
        if big:
            out.append(self.big_op(rows))
        for i in range(nops):
            if rng.random() < 0.12:
                # a subtransaction rolled back: its statements leave no trace
                keep = self.snapshot()
                keep_ident = self.ident
                out.append("SAVEPOINT s%d;" % i)
                for _ in range(rng.randint(1, 3)):
                    s = self.one_op(rows, allow_truncate=False)
                    if s:
                        out.append(s)
                out.append("ROLLBACK TO SAVEPOINT s%d;" % i)
                self.rows = rows = keep
                self.ident = max(self.ident, keep_ident)   # sequences do not roll back
                continue
            s = self.one_op(rows, allow_truncate=not big)
            if s:
                out.append(s)
        if rollback:
            out.append("ROLLBACK;")
            self.rows = saved
        else:
            out.append("COMMIT;")
        self.parts[part].append("\n".join(out))

    def big_op(self, rows):
        rng = self.rng
        kind = rng.choice(["insert", "insert", "update", "keyless"])
        if kind == "keyless":
            t = [x for x in self.g.tables if x.role == "keyless"][0]
            return self.op_bulk_insert(t, rows, BIG_ROWS)
        cands = [x for x in self.g.tables if x.role in ("keyed", "part", "uindex") and not x.fk]
        t = rng.choice(cands)
        if kind == "update" and len(rows[id(t)]) > 100:
            c = rng.choice(t.cols)
            return "UPDATE %s SET ver = ver + 1, %s = %s;" % (t.q, qi(c.name), c.lit())
        return self.op_bulk_insert(t, rows, BIG_ROWS)

    def build(self):
        rng = self.rng
        # part 0: an initial load (every table gets rows) and some history
        for t in self.g.tables:
            if t.role == "leaf":
                continue
            self.parts[0].append("BEGIN;\n%s\nCOMMIT;" % (self.op_bulk_insert(t, self.rows, rng.randint(200, 1500)) or ""))
        self.txn(0, 3, big=True)
        for _ in range(60):
            self.txn(0, rng.randint(1, 6))
        for p in range(1, PARTS):
            for i in range(70):
                self.txn(p, rng.randint(1, 6), big=(p in (2, 4) and i == 30))


def main():
    ap = argparse.ArgumentParser(description="seeded schema and workload of test/t/600_differential.pl")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--pg", type=int, default=15, help="the source's major version (numeric infinities from 14)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("schema")
    w = sub.add_parser("workload")
    w.add_argument("--part", type=int, help="print this part")
    w.add_argument("--dir", help="write every part P to DIR/part-P.sql")
    sub.add_parser("parts")
    a = ap.parse_args()
    g = Gen(a.seed, a.pg)
    out = sys.stdout
    if a.cmd == "schema":
        out.write(g.schema_sql())
    elif a.cmd == "parts":
        out.write("%d\n" % PARTS)
    else:
        if (a.part is None) == (a.dir is None):
            sys.exit("difftest.py: workload takes --part P or --dir DIR")
        wl = Workload(g)
        for p in range(PARTS) if a.dir else [a.part]:
            if not 0 <= p < PARTS:
                sys.exit("difftest.py: --part must be 0 .. %d" % (PARTS - 1))
            f = open("%s/part-%d.sql" % (a.dir, p), "w", encoding="utf-8") if a.dir else out
            f.write("-- difftest workload, seed %d, part %d of %d\n" % (a.seed, p, PARTS))
            f.write("\n".join(wl.parts[p]) + "\n")
            if a.dir:
                f.close()


if __name__ == "__main__":
    main()
