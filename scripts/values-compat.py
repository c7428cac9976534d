#!/usr/bin/env python3
"""Check that a chart's current values.schema.json still accepts what its released copy accepted.

Why: users keep their own values files across chart upgrades. The rule is "a key that a released
values file could set is not removed or retyped without a chart major version bump". This walks
every path the released schema allows (properties, local $refs into definitions/$defs, the
branches of allOf/anyOf/oneOf, `*` for map values, `[]` for array items) and asks whether the
current schema still allows it.

Breaking (exit 1 unless CURRENT_VERSION's major is higher than RELEASED_VERSION's): a key removed;
an object that took arbitrary keys now closed (additionalProperties: false); a JSON type dropped
(`integer` is part of `number`; no `type` means any); enum values dropped (or an enum added where
any value was accepted); a key newly `required`. A changed pattern or a tighter minimum, maximum,
length or item count is only a warning.

Usage: values-compat.py RELEASED_SCHEMA CURRENT_SCHEMA RELEASED_VERSION CURRENT_VERSION [--chart NAME]
Standard library only. Not read: external $refs (refused), patternProperties, not, if/then/else.
"""
import argparse, json, os, re, sys
from functools import reduce

ALL = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
MIN_KW = ("minimum", "exclusiveMinimum", "minLength", "minItems")
MAX_KW = ("maximum", "exclusiveMaximum", "maxLength", "maxItems")


def fail(msg):  # unusable input: exit 2, apart from exit 1 (breaking changes)
    print(f"values-compat: {msg}", file=sys.stderr)
    raise SystemExit(2)


def as_dict(s):  # boolean schemas: true accepts anything, false nothing
    return s if isinstance(s, dict) else ({} if s else {"type": []})
def norm(types):  # a set of JSON types; an integer is also a number
    return frozenset(types) | ({"integer"} if "number" in types else frozenset())
def json_type(v):
    return "boolean" if isinstance(v, bool) else {type(None): "null", int: "integer", float: "number",
                                                  str: "string", list: "array", dict: "object"}[type(v)]
def show(types):
    if types == ALL: return "any"
    return "|".join(sorted(types - ({"integer"} if "number" in types else set()))) or "nothing"
def dot(path, key): return f"{path}.{key}" if path else key
def union(a, b): return a | b
def meet(a, b): return b if a is None else a if b is None else a & b  # enums; None: no enum
def join(a, b): return None if a is None or b is None else a | b
def merge(a, b): return {k: a.get(k, []) + b.get(k, []) for k in a.keys() | b.keys()}
def both(a, b): return (a[0] + b[0], a[1] or b[1])  # lookups: (schemas that apply, refused)
def either(a, b):
    if a[1] or b[1]: return b if a[1] else a
    if not a[0] or not b[0]: return ([], False)  # one branch accepts anything there
    return ([{"anyOf": [{"allOf": a[0]}, {"allOf": b[0]}]}], False)


class Schema:
    """One schema document: resolves local $refs; each query folds over $ref/allOf/anyOf/oneOf."""

    def __init__(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                self.root = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"cannot read {path}: {e}")

    def resolve(self, ref):
        if not ref.startswith("#"):
            fail(f"unsupported $ref {ref!r} (only local ones)")
        node = self.root
        try:
            for part in filter(None, ref[1:].split("/")):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        except (KeyError, TypeError):
            fail(f"$ref {ref!r} points nowhere")
        return node

    def fold(self, s, own, conj, disj, seen=frozenset()):
        """own(s), combined by conj with its $ref's and allOf parts' and with the disj of each
        anyOf/oneOf's branches. A $ref already being expanded (a cycle) is skipped."""
        s = as_dict(s)
        r, parts = own(s), [(p, seen) for p in s.get("allOf", [])]
        if "$ref" in s and s["$ref"] not in seen:
            parts.append((self.resolve(s["$ref"]), seen | {s["$ref"]}))
        for p, sn in parts:
            r = conj(r, self.fold(p, own, conj, disj, sn))
        for kw in ("anyOf", "oneOf"):
            if s.get(kw):
                r = conj(r, reduce(disj, [self.fold(b, own, conj, disj, seen) for b in s[kw]]))
        return r

    def enum(self, s):
        def own(s):
            values = [s["const"]] if "const" in s else s.get("enum")
            return None if values is None else {json.dumps(v, sort_keys=True) for v in values}
        return self.fold(s, own, meet, join)

    def types(self, s):
        def own(s):
            t = s.get("type")
            t = ALL if t is None else norm(t if isinstance(t, list) else [t])
            values = [s["const"]] if "const" in s else s.get("enum")
            return t if values is None else t & norm({json_type(v) for v in values})
        return self.fold(s, own, frozenset.__and__, frozenset.__or__)

    def lookup(self, s, key):
        """(schemas that apply to property `key`, or to any other key if None; refused?)"""
        def own(s):
            props = s.get("properties", {})
            if key is not None and key in props: return ([props[key]], False)
            extra = s.get("additionalProperties", True)
            return ([], extra is False) if isinstance(extra, bool) else ([extra], False)
        return self.fold(s, own, both, either)

    def items(self, s):
        def own(s):
            i = s.get("items", True)
            return ([], False) if i is True or isinstance(i, list) else ([i], False)
        return self.fold(s, own, both, either)[0]

    def keys(self, s): return self.fold(s, lambda s: set(s.get("properties", {})), union, union)
    def required(self, s): return self.fold(s, lambda s: set(s.get("required", [])), union, set.__and__)
    def refs(self, s): return self.fold(s, lambda s: {s["$ref"]} if "$ref" in s else set(), union, union)
    def bounds(self, s):
        return self.fold(s, lambda s: {k: [s[k]] for k in MIN_KW + MAX_KW + ("pattern",)
                                       if k in s and not isinstance(s[k], bool)}, merge, merge)


class Checker:
    def __init__(self, rel, cur):
        self.rel, self.cur, self.problems, self.count = rel, cur, [], 0

    def breaking(self, msg, kind, reason="allowed it"): self.problems.append(("breaking", msg, kind, reason))
    def warning(self, msg): self.problems.append(("warning", msg, None, None))

    def walk(self, path, rs, cs, on_path=frozenset()):
        """Check one path: rs/cs are the released/current schemas that all apply to it."""
        r, c, name = {"allOf": rs}, {"allOf": cs}, path or "(root)"
        rt, ct = self.rel.types(r), self.cur.types(c)
        if rt - ct:
            self.breaking(f"key {name} retyped: {show(rt)} -> {show(ct)}", "retype", f"allowed {show(rt)}")
        renum, cenum = self.rel.enum(r), self.cur.enum(c)
        if cenum is not None and (renum is None or renum - cenum):
            lost = "any value" if renum is None else ", ".join(sorted(renum - cenum))
            self.breaking(f"key {name} enum lost {lost} (now {', '.join(sorted(cenum))})", "narrowing")
        self.compare_bounds(name, r, c)
        refs = self.rel.refs(r)
        if not rs or refs & on_path:
            return  # the release set nothing below here, or a recursive $ref is walked already
        on_path |= refs
        if "object" in rt:
            for key in sorted(self.cur.required(c) - self.rel.required(r)):
                known = not self.rel.lookup(r, key)[1]
                self.breaking(f"key {dot(path, key)} {'became required' if known else 'is new and required'}",
                              "new requirement", "did not require it")
            for key in sorted(self.rel.keys(r)):
                krs, refused = self.rel.lookup(r, key)
                if refused:
                    continue  # listed by one allOf branch, refused by another: never settable
                kcs, gone = self.cur.lookup(c, key)
                if gone:
                    self.breaking(f"key {dot(path, key)} removed", "removal")
                else:
                    self.count += 1
                    self.walk(dot(path, key), krs, kcs, on_path)
            mrs, closed = self.rel.lookup(r, None)
            if not closed:
                mcs, now_closed = self.cur.lookup(c, None)
                if now_closed:
                    self.breaking(f"key {dot(path, '*')} (any other key) refused: additionalProperties "
                                  "is now false", "removal", "allowed any key there")
                else:
                    self.count += 1
                    self.walk(dot(path, "*"), mrs, mcs, on_path)
        if "array" in rt:
            self.count += 1
            self.walk(path + "[]", self.rel.items(r), self.cur.items(c), on_path)

    def compare_bounds(self, name, r, c):
        rb, cb = self.rel.bounds(r), self.cur.bounds(c)
        for kw in MIN_KW + MAX_KW:
            pick = max if kw in MIN_KW else min
            was, now = (pick(b[kw]) if b.get(kw) else None for b in (rb, cb))
            if now is not None and (was is None or pick(was, now) != was):
                self.warning(f"key {name} {kw} tightened: {was} -> {now}")
        if set(cb.get("pattern", [])) - set(rb.get("pattern", [])):
            was, now = (" & ".join(b.get("pattern", [])) or "none" for b in (rb, cb))
            self.warning(f"key {name} pattern changed: {was} -> {now}")


def major(version):
    m = re.match(r"v?(\d+)(\.|$)", version.strip())
    return int(m.group(1)) if m else fail(f"not a chart version: {version!r}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("released_schema", "current_schema", "released_version", "current_version"):
        ap.add_argument(name)
    ap.add_argument("--chart", help="chart name in the messages (default: the current schema's folder)")
    a = ap.parse_args(argv)
    chart = a.chart or os.path.basename(os.path.dirname(os.path.abspath(a.current_schema)))
    prefix, rv, cv = f"charts/{chart} values:", a.released_version, a.current_version
    bumped, need = major(cv) > major(rv), f"{major(rv) + 1}.0.0"
    rel, cur = Schema(a.released_schema), Schema(a.current_schema)
    chk = Checker(rel, cur)
    chk.walk("", [rel.root], [cur.root])
    if bumped:
        print(f"{prefix} {rv} -> {cv} is a major version bump: breaking changes are allowed")
    for level, msg, kind, reason in chk.problems:
        print(f"{prefix} warning: {msg}" if level == "warning" else
              f"{prefix} {'info: ' if bumped else ''}{msg} (released {rv} {reason}; a {kind} needs chart {need})")
    n_warn = sum(level == "warning" for level, *_ in chk.problems)
    n_breaking = len(chk.problems) - n_warn
    warned = f"; {n_warn} warning(s)" if n_warn else ""
    if n_breaking and not bumped:
        print(f"{prefix} {n_breaking} breaking change(s) to the released {rv} schema: bump the chart to "
              f"{need}, or keep accepting what {rv} accepted{warned}")
        return 1
    allowed = f"{n_breaking} breaking change(s) allowed by the major bump; " if bumped else ""
    print(f"{prefix} {allowed}{chk.count} keys of the released schema still accepted{warned}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
