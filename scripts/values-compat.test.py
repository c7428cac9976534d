#!/usr/bin/env python3
"""Self-test of scripts/values-compat.py: python3 scripts/values-compat.test.py

Runs the checker on the real leads and platform schemas and on variants of them written to a
temporary folder (a key removed deep in a definition, a type narrowed, a key added, ...).
"""
import copy, json, os, subprocess, sys, tempfile, unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHARTS = os.path.join(HERE, "..", "charts")
SCRIPT = os.path.join(HERE, "values-compat.py")


def load(chart):
    with open(os.path.join(CHARTS, chart, "values.schema.json")) as f:
        return json.load(f)


class ValuesCompat(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.leads, self.platform = load("leads"), load("platform")

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, released, current, rv="1.0.0", cv="1.0.1"):
        paths = []
        for i, schema in enumerate((released, current)):
            paths.append(os.path.join(self.tmp.name, f"{i}.json"))
            with open(paths[-1], "w") as f:
                json.dump(schema, f)
        p = subprocess.run([sys.executable, SCRIPT, *paths, rv, cv, "--chart", "x"],
                           capture_output=True, text=True)
        return p.returncode, p.stdout

    def variant(self, schema, change):
        s = copy.deepcopy(schema)
        change(s)
        return s

    def test_same_schema_passes(self):
        for s in (self.leads, self.platform):
            rc, out = self.check(s, s)
            self.assertEqual(rc, 0, out)
            self.assertRegex(out, r"charts/x values: \d+ keys of the released schema still accepted")

    def test_removed_deep_key_fails(self):
        cur = self.variant(self.leads, lambda s: s["definitions"]["probeTiming"]["properties"].pop("failureThreshold"))
        rc, out = self.check(self.leads, cur)
        self.assertEqual(rc, 1, out)
        self.assertIn("key probes.liveness.failureThreshold removed (released 1.0.0 allowed it; "
                      "a removal needs chart 2.0.0)", out)
        cur = self.variant(self.platform, lambda s: s["definitions"]["global"]["properties"]["mongo"]["properties"].pop("url"))
        rc, out = self.check(self.platform, cur)
        self.assertEqual(rc, 1, out)
        self.assertIn("key global.mongo.url removed", out)

    def test_retype_fails_and_widening_passes(self):
        image = lambda s: s["definitions"]["service"]["properties"]["image"]["properties"]
        rc, out = self.check(self.leads, self.variant(self.leads, lambda s: image(s)["tag"].update(type="integer")))
        self.assertEqual(rc, 1, out)
        self.assertIn("key image.tag retyped: string -> integer", out)
        port = lambda s: s["definitions"]["port"]
        rc, out = self.check(self.leads, self.variant(self.leads, lambda s: port(s).update(type="number")))
        self.assertEqual(rc, 0, out)  # integer -> number accepts every released value
        wide = self.variant(self.leads, lambda s: port(s).update(type="number"))
        rc, out = self.check(wide, self.leads)
        self.assertEqual(rc, 1, out)
        self.assertIn("key port retyped: number -> integer", out)

    def test_added_optional_key_passes(self):
        cur = self.variant(self.leads, lambda s: s["definitions"]["service"]["properties"]["image"]["properties"]
                           .update(platform={"type": "string"}))
        rc, out = self.check(self.leads, cur)
        self.assertEqual(rc, 0, out)

    def test_major_bump_allows_removal(self):
        cur = self.variant(self.leads, lambda s: s["definitions"]["probeTiming"]["properties"].pop("failureThreshold"))
        rc, out = self.check(self.leads, cur, "1.0.0", "2.0.0")
        self.assertEqual(rc, 0, out)
        self.assertIn("breaking changes are allowed", out)
        self.assertIn("info: key probes.startup.failureThreshold removed", out)

    def test_enum_required_closed_and_warnings(self):
        def change(s):
            sp = s["definitions"]["service"]["properties"]
            sp["logLevel"]["enum"].remove("trace")
            sp["affinity"]["additionalProperties"] = False
            s["definitions"]["service"]["required"].append("replicaCount")
            sp["shutdownGraceMs"]["minimum"] = 2000
        rc, out = self.check(self.leads, self.variant(self.leads, change))
        self.assertEqual(rc, 1, out)
        for text in ('key logLevel enum lost "trace"', "key affinity.* (any other key) refused",
                     "key replicaCount became required", "warning: key shutdownGraceMs minimum tightened"):
            self.assertIn(text, out)
        rc, out = self.check(self.leads, self.variant(self.leads, lambda s: s["definitions"]["service"]
                                                      ["properties"]["shutdownGraceMs"].update(minimum=2000)))
        self.assertEqual(rc, 0, out)  # a warning alone passes

    def test_ref_cycle(self):
        node = {"type": "object", "additionalProperties": False,
                "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/definitions/n"}}}}
        s = {"definitions": {"n": node, "loop": {"allOf": [{"$ref": "#/definitions/loop"}]}},
             "properties": {"tree": {"$ref": "#/definitions/n"}, "loop": {"$ref": "#/definitions/loop"}}}
        self.assertEqual(self.check(s, s)[0], 0)
        rc, out = self.check(s, self.variant(s, lambda c: c["definitions"]["n"]["properties"].pop("name")))
        self.assertEqual(rc, 1, out)
        self.assertIn("key tree.name removed", out)


if __name__ == "__main__":
    unittest.main()
