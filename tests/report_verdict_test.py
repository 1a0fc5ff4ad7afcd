"""The report's verdict page (report/verdict_page.py): `report DIR` on a small
synthetic tree of one lock with the verdict.json `lockbench verdict` writes beside it.

    /usr/bin/python3 tests/report_verdict_test.py   (ctest: report_verdict_test)
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from report_synthetic import Builder, write_json  # noqa: E402

PY = "/usr/bin/python3"
REPORT = os.path.join(ROOT, "report")
ADAPTER = {"library": "lib-a 1.2.3", "algorithm": "SET NX PX, Lua release", "fencing": False}
NOT_REC = {k: {"verdict": "not recorded"} for k in ("baseline", "gc-pause", "delayed-write", "held-replies",
                                                     "client-clock-skew", "node-clock-jump", "restart-empty",
                                                     "failover", "slow-holder")}


def case(name, klass, counts, verdict, **kw):
    e = {"case": name, "variant": kw.pop("variant", ""), "class": klass, "cell": kw.pop("cell", f"{name}/lib-a"),
         "counts": counts, "repetitions": sum(counts.values()), "verdict": verdict, "failed": kw.pop("failed", []),
         "expectations_held": 1, "description": f"what {name} does"}
    e.update(kw)
    return e


def verdict_tree(d):
    b = Builder(d)
    b.cell("baseline", "lib-a", ["safe", "safe"], "baseline", adapter=ADAPTER)
    b.cell("gc-pause", "lib-a", ["2 holders", "safe"], "gc-pause", adapter=ADAPTER, witness=True)
    b.cell("failover-lost-lock", "lib-a", ["unavailable", "unavailable"], "failover", adapter=ADAPTER)
    b.cell("jepsen-pauses", "lib-a", ["unsafe", "unsafe"], None, adapter=ADAPTER, witness=True)
    b.not_applicable("node-clock-jump", "lib-a", "steps a server's clock; lib-a cannot", "node-clock-jump")
    b.not_applicable("renewal", "lib-a", "about token-lua+renew only")
    b.finish(find=False)
    classes = [{"class": "baseline", "verdict": "safe", "repetitions": 2, "counts": {"safe": 2},
                "cases": ["baseline/lib-a"]},
               {"class": "gc-pause", "verdict": "2 holders", "repetitions": 2, "counts": {"2 holders": 1, "safe": 1},
                "cases": ["gc-pause/lib-a"], "recorded": ["2 holders"]},
               {"class": "failover", "verdict": "unavailable", "repetitions": 2, "counts": {"unavailable": 2},
                "cases": ["failover-lost-lock/lib-a"]},
               {"class": "node-clock-jump", "verdict": "not applicable",
                "why": ["node-clock-jump: steps a server's clock; lib-a cannot"]}]
    classes += [{"class": k, "verdict": "not applicable", "why": []}
                for k in ("delayed-write", "held-replies", "client-clock-skew", "restart-empty", "slow-holder")]
    cases = [case("baseline", "baseline", {"safe": 2}, "safe", predicted="safe", predicted_why="no fault"),
             case("failover-lost-lock", "failover", {"unavailable": 2}, "unavailable",
                  failed=["rep 1: sections_completed >= 1 (got 0)"]),
             case("gc-pause", "gc-pause", {"2 holders": 1, "safe": 1}, "2 holders", predicted="2 holders",
                  predicted_why="the lease runs out under its holder", recorded="2 holders",
                  remedy="a fencing token the protected resource checks",
                  replay=f"lockbench run {d}/cells/gc-pause/lib-a/rep-0/scenario.json --algorithm lib-a --seed 1",
                  witness={"rep": 0, "seed": 1, "dir": "cells/gc-pause/lib-a/rep-0",
                           "run_dir": "cells/gc-pause/lib-a/rep-0/runs/lib-a",
                           "first": {"kind": "stale_write"}}),
             case("jepsen-pauses", None, {"unsafe": 2}, "unsafe", remedy="a fence",
                  replay="lockbench run x --seed 1",
                  witness={"rep": 0, "seed": 1, "dir": "cells/jepsen-pauses/lib-a/rep-0",
                           "run_dir": "cells/jepsen-pauses/lib-a/rep-0/runs/lib-a"})]
    ref = dict(NOT_REC, **{"gc-pause": {"verdict": "2 holders"}, "baseline": {"verdict": "safe / unavailable"},
                           "failover": {"verdict": "—", "why": ["failover-lost-lock: needs Sentinel; token-lua cannot"]}})
    v = {"format": "lockbench-verdict", "version": 1, "lock": "lib-a", "lock_file": "/x/locks/lib-a.json",
         "description": "lib-a's lock, for the test", "library": ADAPTER, "repeat": 2,
         "facts": {"algorithm": "external", "fencing": False, "expiry": "server", "release": "token", "renews": False,
                   "service": "redis", "nodes": 1, "extend": ["add"], "checks_elapsed": False, "sentinel": True},
         "classes": classes, "cases": cases,
         "not_applicable": [{"case": "node-clock-jump", "class": "node-clock-jump", "variant": "",
                             "why": "steps a server's clock; lib-a cannot"},
                            {"case": "renewal", "class": None, "variant": "", "why": "about token-lua+renew only"},
                            {"case": "renewal", "class": None, "variant": "too-short", "why": "about token-lua+renew only"}],
         "reference": [{"lock": "token-lua", "description": "SET NX PX", "classes": ref}],
         "differences": ["gc-pause: the lock file records 2 holders; got 2 holders 1/2, safe 1/2"],
         "versus": {"lock": "lib-b", "library": "lib-b 2.0", "verdict": "/x/versus-lib-b/verdict.json", "same": False,
                    "cases_same": 1,
                    "classes": [{"class": "baseline", "here": "safe 2/2", "there": "safe 2/2", "differs": False},
                                {"class": "gc-pause", "here": "2 holders 1/2, safe 1/2", "there": "safe 2/2", "differs": True}],
                    "cases": [{"case": "gc-pause", "variant": "", "class": "gc-pause", "here": "2 holders 1/2, safe 1/2",
                               "there": "safe 2/2"}]}}
    write_json(os.path.join(d, "verdict.json"), v)
    return v


def run_report(d):
    return subprocess.run([PY, REPORT, d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


class VerdictPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="lockbench-report-verdict-")
        cls.d = cls.tmp.name
        verdict_tree(cls.d)
        cls.r = run_report(cls.d)
        with open(os.path.join(cls.d, "report.html"), encoding="utf-8") as f:
            cls.html = f.read()
        with open(os.path.join(cls.d, "report.md"), encoding="utf-8") as f:
            cls.md = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_it_is_written_in_place_whole_with_progress(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertIn("report: drawing timeline gc-pause ... (1/2)", self.r.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(self.d, "report-images"))),
                         ["witness-gc-pause.png", "witness-jepsen-pauses.png"])
        self.assertFalse([n for n in os.listdir(self.d) if n.startswith(".report.")])

    def test_the_page_reads_top_to_bottom(self):
        order = ["# lockbench verdict: lib-a", "## Differences from its lock file's record", "## Verdict by failure class",
                 "## Versus lib-b (lib-b 2.0)", "## Failure classes", "### no fault: safe 2/2", "### GC pause: 2 holders 1/2, safe 1/2",
                 "### failover: unavailable 2/2", "## Other cases", "#### jepsen-pauses", "## Cases that do not apply"]
        at = [self.md.find(x) for x in order]
        self.assertNotIn(-1, at, dict(zip(order, at)))
        self.assertEqual(at, sorted(at))
        self.assertNotIn("latency", self.md.lower())  # no CDFs or throughput plots here
        self.assertIn("the lock file records 2 holders; got 2 holders 1/2, safe 1/2", self.md)

    def test_the_lock_says_what_it_is_and_offers(self):
        self.assertIn("lib-a's lock, for the test", self.md)
        self.assertIn("Lock file: /x/locks/lib-a.json", self.md)
        self.assertIn("Library: lib-a 1.2.3; algorithm: SET NX PX, Lua release; fencing: no", self.md)
        self.assertIn("releases by compare-and-delete on its token", self.md)
        self.assertIn("finds its master through Sentinel", self.md)

    def test_its_row_beside_the_reference_rows_every_dash_explained(self):
        rows = {ln.split("|")[1].strip(): [x.strip() for x in ln.strip().strip("|").split("|")]
                for ln in self.md.splitlines() if ln.startswith("| ")}
        mine = rows["**lib-a** (this run)"]
        self.assertEqual(mine[1:3], ["safe 2/2", "2 holders 1/2, safe 1/2 (recorded: 2 holders)"])
        self.assertEqual(mine[8], "unavailable 2/2")
        self.assertEqual(rows["token-lua"][2], "2 holders")
        self.assertEqual(rows["token-lua"][1], "safe / unavailable")
        notes = {int(m.group(1)): m.group(2) for m in re.finditer(r"^- \[(\d+)\] (.*)$", self.md, re.M)}
        for name in ("**lib-a** (this run)", "token-lua"):
            for text in rows[name]:
                if text.startswith("—"):
                    n = int(re.fullmatch(r"— \[(\d+)\]", text).group(1))
                    self.assertIn(n, notes)
        self.assertIn("node-clock-jump: steps a server's clock; the lock cannot", notes.values())
        self.assertIn("failover-lost-lock: needs Sentinel; the lock cannot", notes.values())
        self.assertEqual(self.html.count("—<sup"), sum(t.startswith("—") for r in rows.values() for t in r))
        # the same colours as the catalog's table: the worst word of a mixed cell, unavailable its own
        self.assertIn('<td class="o-violation"><a href="#class-gc-pause">2 holders 1/2, safe 1/2</a>', self.html)
        self.assertIn('<td class="o-unavailable"><a href="#class-failover">', self.html)
        self.assertIn('<td class="o-unavailable">safe / unavailable</td>', self.html)

    def test_an_unsafe_case_has_its_witness_replay_and_remedy(self):
        gc = self.md[self.md.find("#### gc-pause"):self.md.find("### failover")]
        self.assertIn("![timeline gc-pause/lib-a](report-images/witness-gc-pause.png)", gc)
        self.assertIn("its first mutual-exclusion witness", gc)  # two holders: the overlap, not the stale write
        self.assertIn("lockbench run ", gc)
        self.assertIn("What would have prevented it: a fencing token the protected resource checks.", gc)
        self.assertIn("The literature predicts 2 holders: the lease runs out under its holder.", gc)
        self.assertIn("Its lock file records 2 holders.", gc)
        jp = self.md[self.md.find("#### jepsen-pauses"):]
        self.assertIn("report-images/witness-jepsen-pauses.png", jp)
        self.assertIn("stale-write witness", jp)

    def test_a_safe_case_has_no_witness_and_a_failed_expectation_is_said(self):
        base = self.md[self.md.find("#### baseline"):self.md.find("### GC pause")]
        self.assertNotIn("Replay", base)
        fo = self.md[self.md.find("#### failover-lost-lock"):self.md.find("## Other cases")]
        self.assertIn("Expectations that did not hold: rep 1: sections_completed >= 1 (got 0).", fo)
        self.assertIn('<span class="badge o-unavailable">unavailable 2/2</span>', self.html)

    def test_versus_another_version_sets_each_class_beside_it_and_marks_where_they_differ(self):
        vs = self.md[self.md.find("## Versus lib-b"):self.md.find("## Failure classes")]
        self.assertIn("| class | lib-a | lib-b |  |", vs)
        self.assertIn("| no fault | safe 2/2 | safe 2/2 |   |", vs)
        self.assertIn("| GC pause | 2 holders 1/2, safe 1/2 | safe 2/2 | differs |", vs)
        self.assertIn("| gc-pause | 2 holders 1/2, safe 1/2 | safe 2/2 |", vs)
        self.assertNotIn("The same verdict in every class", vs)
        self.assertNotIn("Every class the same", vs)
        self.assertIn("Cases both ran with the same verdict: 1. lib-b's own verdict: /x/versus-lib-b/verdict.json.", vs)

    def test_the_cases_that_do_not_apply_each_with_its_reason(self):
        na = self.md[self.md.find("## Cases that do not apply"):]
        self.assertIn("| node-clock-jump | node clock jump | steps a server's clock; lib-a cannot |", na)
        self.assertIn("| renewal, +too-short | (no class) | about token-lua+renew only |", na)


class BadVerdictTest(unittest.TestCase):
    def test_a_verdict_json_of_another_format_is_one_line(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-verdict-") as d:
            v = verdict_tree(d)
            v["format"] = "something"
            write_json(os.path.join(d, "verdict.json"), v)
            r = run_report(d)
            self.assertEqual(r.returncode, 2)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("verdict.json", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "report.html")))

    def test_a_case_with_a_word_not_the_checkers_is_one_line(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-verdict-") as d:
            v = verdict_tree(d)
            v["cases"][0]["verdict"] = "violation"
            write_json(os.path.join(d, "verdict.json"), v)
            r = run_report(d)
            self.assertEqual(r.returncode, 2)
            self.assertIn('"violation"' if '"violation"' in r.stderr else "'violation'", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class VersusNoteTest(unittest.TestCase):
    """The note under the Versus table: all the same, every class the same but a case both ran
    differs (a known bug's), and a verdict.json written before cases_same was counted."""

    @staticmethod
    def note(vs):
        from report.page import Page
        from report.verdict_page import write_versus
        page = Page()
        write_versus({"lock": "lib-a", "versus": vs}, page)
        return "".join(page.m)

    def test_each_story_is_told_as_it_is(self):
        same_class = {"class": "baseline", "here": "safe 2/2", "there": "safe 2/2", "differs": False}
        base = {"lock": "lib-b", "library": "lib-b 2.0", "verdict": "/x/v.json", "classes": [same_class], "cases": []}
        md = self.note(dict(base, same=True, cases_same=3))
        self.assertIn("The same verdict in every class. Cases both ran with the same verdict: 3. lib-b's own verdict", md)
        bug = {"case": "known-bug", "variant": "", "class": None, "here": "2 holders 2/2", "there": "safe 2/2"}
        md = self.note(dict(base, same=False, cases_same=1, cases=[bug]))
        self.assertIn("Every class the same; a case both ran differs. Cases both ran with the same verdict: 1.", md)
        self.assertIn("| known-bug | 2 holders 2/2 | safe 2/2 |", md)
        md = self.note(dict(base, same=True))  # written before cases_same
        self.assertIn("The same verdict in every class. lib-b's own verdict", md)
        self.assertNotIn("Cases both ran", md)


class FactsTest(unittest.TestCase):
    """What the store checks, in words: a fencing token, or a random token by check-and-set."""

    def test_the_store_check_is_said_once_and_names_the_token(self):
        from report.verdict_page import facts_lines
        self.assertIn("the store checks its token", facts_lines({"fence": True, "resource_check": "fence"}))
        token = facts_lines({"fence": True, "resource_check": "token", "fencing": False})
        self.assertIn("the store checks its random token by check-and-set", token)
        self.assertIn("hands out no fencing token", token)
        self.assertFalse([ln for ln in token if "resource_check" in ln], token)
        self.assertEqual(facts_lines({"fence": False, "resource_check": "fence"}), [])


if __name__ == "__main__":
    unittest.main()
