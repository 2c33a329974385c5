#!/usr/bin/env python3
"""check_meta.py [META.json] -- check a PGXN distribution's META.json against
the PGXN Meta Spec 1.0.0 (https://pgxn.org/spec/), written from the spec's
text: the required keys and their types, the version strings (Semantic
Versioning 1.0.0), the license names, the prereqs' phases and relations, the
resources; and for this project also that every "provides" file exists, that
its version is the distribution's and the control file's default_version, and
that resources name the repository and the bug tracker.  Exit 0 when it is
valid; one line per problem on stderr otherwise."""

import json
import os
import re
import sys

# SemVer 1.0.0: MAJOR.MINOR.PATCH, an optional pre-release of [0-9A-Za-z-]
# right after the patch ("1.0.0beta1"); no leading zeros.
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([A-Za-z][0-9A-Za-z-]*)?$")
# a prereq version: "0" (any), a version, or comparisons joined by commas
PREREQ_OP = re.compile(r"^\s*(==|!=|>=|<=|>|<)?\s*(\S+)\s*$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
REQUIRED = ("name", "abstract", "maintainer", "license", "provides", "version", "meta-spec")
OPTIONAL = ("description", "generated_by", "tags", "no_index", "prereqs", "release_status",
            "resources")
PHASES = ("configure", "build", "test", "runtime", "develop")
RELATIONS = ("requires", "recommends", "suggests", "conflicts")
RELEASE_STATUS = ("stable", "testing", "unstable")
URL = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")

problems = []


def bad(where, what):
    problems.append(f"{where}: {what}")


def custom(key):
    return key.startswith(("x_", "X_"))


def check_keys(where, obj, known):
    for k in obj:
        if k not in known and not custom(k):
            bad(where, f"unknown key \"{k}\" (custom keys start with x_)")


def is_string(v):
    return isinstance(v, str) and v.strip() != ""


def check_term(where, v):
    """A name or tag: a string of at least 2 characters without / \\ or controls."""
    if not is_string(v) or len(v) < 2 or re.search(r"[/\\\x00-\x1f\x7f]", v):
        bad(where, f"{v!r} is not a valid term (2 or more characters, no '/', '\\' or controls)")


def check_version(where, v):
    if not isinstance(v, str) or not SEMVER.match(v):
        bad(where, f"{v!r} is not a semantic version (MAJOR.MINOR.PATCH)")


def check_prereq_version(where, v):
    if v == 0 or v == "0":
        return
    if not isinstance(v, str):
        bad(where, f"{v!r} is not a version range")
        return
    for part in v.split(","):
        m = PREREQ_OP.match(part)
        if not m or not SEMVER.match(m.group(2)):
            bad(where, f"{part.strip()!r} is not a version or a comparison with one")


def check_license(where, v):
    if isinstance(v, str):
        if v not in LICENSES:
            bad(where, f"\"{v}\" is not one of the spec's license names")
    elif isinstance(v, list) and v:
        for i, name in enumerate(v):
            check_license(f"{where}[{i}]", name)
    elif isinstance(v, dict) and v:
        for name, url in v.items():
            if not is_string(url) or not URL.match(url):
                bad(f"{where}.{name}", "a license object maps names to URLs")
    else:
        bad(where, "a license name, a list of them, or an object of names and URLs")


def check_resources(where, r):
    if not isinstance(r, dict):
        bad(where, "must be an object")
        return
    check_keys(where, r, ("homepage", "bugtracker", "repository"))
    if "homepage" in r and not (is_string(r["homepage"]) and URL.match(r["homepage"])):
        bad(f"{where}.homepage", "must be a URL")
    bt = r.get("bugtracker")
    if not isinstance(bt, dict) or not ("web" in bt or "mailto" in bt):
        bad(f"{where}.bugtracker", "must be an object with web (a URL) or mailto")
    else:
        check_keys(f"{where}.bugtracker", bt, ("web", "mailto"))
        if "web" in bt and not (is_string(bt["web"]) and URL.match(bt["web"])):
            bad(f"{where}.bugtracker.web", "must be a URL")
        if "mailto" in bt and not (is_string(bt["mailto"]) and "@" in bt["mailto"]):
            bad(f"{where}.bugtracker.mailto", "must be an e-mail address")
    repo = r.get("repository")
    if not isinstance(repo, dict) or not ("url" in repo or "web" in repo):
        bad(f"{where}.repository", "must be an object with url and/or web")
    else:
        check_keys(f"{where}.repository", repo, ("url", "web", "type"))
        for k in ("url", "web"):
            if k in repo and not (is_string(repo[k]) and URL.match(repo[k])):
                bad(f"{where}.repository.{k}", "must be a URL")
        if "url" in repo and not is_string(repo.get("type")):
            bad(f"{where}.repository.type", "must be given with url (e.g. git)")
        elif "type" in repo and repo["type"] != repo["type"].lower():
            bad(f"{where}.repository.type", "must be lower case")


def check_prereqs(where, p):
    if not isinstance(p, dict):
        bad(where, "must be an object")
        return
    check_keys(where, p, PHASES)
    for phase, rels in p.items():
        if custom(phase):
            continue
        if not isinstance(rels, dict):
            bad(f"{where}.{phase}", "must be an object")
            continue
        check_keys(f"{where}.{phase}", rels, RELATIONS)
        for rel, deps in rels.items():
            if custom(rel):
                continue
            if not isinstance(deps, dict):
                bad(f"{where}.{phase}.{rel}", "must be an object of names and versions")
                continue
            for name, version in deps.items():
                check_prereq_version(f"{where}.{phase}.{rel}.{name}", version)


def control_default_version(root, ext):
    path = os.path.join(root, ext + ".control")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*default_version\s*=\s*'([^']*)'", line)
            if m:
                return m.group(1)
    return None


def check(meta, root):
    if not isinstance(meta, dict):
        bad("META.json", "must hold a JSON object")
        return
    for k in REQUIRED:
        if k not in meta:
            bad("META.json", f"required key \"{k}\" is missing")
    check_keys("META.json", meta, REQUIRED + OPTIONAL)
    if "name" in meta:
        check_term("name", meta["name"])
    if "abstract" in meta and not is_string(meta["abstract"]):
        bad("abstract", "must be a non-empty string")
    if "description" in meta and not is_string(meta["description"]):
        bad("description", "must be a non-empty string")
    if "version" in meta:
        check_version("version", meta["version"])
    m = meta.get("maintainer")
    if "maintainer" in meta and not (is_string(m) or (isinstance(m, list) and m and all(is_string(x) for x in m))):
        bad("maintainer", "a string or a non-empty list of strings")
    if "license" in meta:
        check_license("license", meta["license"])
    spec = meta.get("meta-spec")
    if "meta-spec" in meta:
        if not isinstance(spec, dict) or not isinstance(spec.get("version"), str):
            bad("meta-spec", "an object with a version")
        else:
            check_keys("meta-spec", spec, ("version", "url"))
            if spec["version"] != "1.0.0":
                bad("meta-spec.version", f"this checker knows 1.0.0, not {spec['version']!r}")
            if "url" in spec and not (is_string(spec["url"]) and URL.match(spec["url"])):
                bad("meta-spec.url", "must be a URL")
    if "release_status" in meta and meta["release_status"] not in RELEASE_STATUS:
        bad("release_status", "stable, testing or unstable")
    if "tags" in meta:
        if not isinstance(meta["tags"], list) or not meta["tags"]:
            bad("tags", "a non-empty list of strings")
        else:
            for i, t in enumerate(meta["tags"]):
                check_term(f"tags[{i}]", t)
                if isinstance(t, str) and len(t) > 255:
                    bad(f"tags[{i}]", "at most 255 characters")
    if "generated_by" in meta and not is_string(meta["generated_by"]):
        bad("generated_by", "must be a non-empty string")
    if "no_index" in meta:
        ni = meta["no_index"]
        if not isinstance(ni, dict):
            bad("no_index", "must be an object")
        else:
            check_keys("no_index", ni, ("file", "directory"))
    if "prereqs" in meta:
        check_prereqs("prereqs", meta["prereqs"])
    # this project: the repository and the bug tracker must be named
    if "resources" not in meta:
        bad("resources", "must name the repository and the bug tracker")
    else:
        check_resources("resources", meta["resources"])

    prov = meta.get("provides")
    if "provides" in meta:
        if not isinstance(prov, dict) or not prov:
            bad("provides", "a non-empty object of extensions")
            return
        for ext, e in prov.items():
            where = f"provides.{ext}"
            check_term(where, ext)
            if not isinstance(e, dict):
                bad(where, "must be an object")
                continue
            check_keys(where, e, ("file", "version", "abstract", "docfile"))
            for k in ("file", "version"):
                if k not in e:
                    bad(where, f"required key \"{k}\" is missing")
            if "version" in e:
                check_version(f"{where}.version", e["version"])
                cv = control_default_version(root, ext)
                if cv is not None and cv != e["version"]:
                    bad(f"{where}.version", f"{e['version']} but {ext}.control says default_version '{cv}'")
            for k in ("file", "docfile"):
                if k in e:
                    if not is_string(e[k]):
                        bad(f"{where}.{k}", "must be a path")
                    elif not os.path.isfile(os.path.join(root, e[k])):
                        bad(f"{where}.{k}", f"\"{e[k]}\" does not exist")
            if "abstract" in e and not is_string(e["abstract"]):
                bad(f"{where}.abstract", "must be a non-empty string")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "META.json")
    root = os.path.dirname(os.path.abspath(path))
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_meta: {path}: {e}", file=sys.stderr)
        return 1
    check(meta, root)
    for p in problems:
        print(f"check_meta: {path}: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_meta: {path}: valid (PGXN Meta Spec 1.0.0), {len(meta['provides'])} extension(s), files present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
