"""The report's cross-library verdict table (analysis/report/libraries.py) on a small synthetic
results tree written here: two libraries, three failure classes, one mixed cell, one missing;
lockbench's own algorithms below them; a run of no class and a named variant left out.

    /usr/bin/python3 tests/report_table_test.py   (ctest: report_table_test)
"""

import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))

from report.libraries import md_table, html_table, table_rows  # noqa: E402
from report.page import Page  # noqa: E402
from report.libraries import write_library_table  # noqa: E402
from report.tree import find_trees  # noqa: E402

SAFE = {"mutual_exclusion_violations": 0, "lost_updates": 0, "stale_writes_accepted": 0,
        "stale_writes_rejected": 0, "foreign_releases": 0, "sections_completed": 30}
HOLDERS = dict(SAFE, mutual_exclusion_violations=1, stale_writes_accepted=1)
REFUSED = dict(SAFE, stale_writes_rejected=2)
ADAPTER_A = {"library": "lib-a 1.2.3", "algorithm": "SET NX PX, Lua release", "fencing": False}


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


class Builder:
    """A matrix tree as `lockbench matrix` lays it out, with only what the table reads."""

    def __init__(self, root):
        self.root, self.cells = root, []

    def cell(self, scenario, run, reps, failure_class=None, external=True, adapter=None, params=None,
             expectations_held=True, table_row=None):
        cid = f"{scenario}/{run}"
        entry = {"scenario": scenario, "run": run, "index": len(self.cells), "repeat": len(reps),
                 "reps_done": len(reps), "reps": []}
        for k, figures in enumerate(reps):
            d = f"cells/{scenario}/{run}/rep-{k}"
            entry["reps"].append(dict(figures, rep=k, dir=d, expectations_held=expectations_held))
            run_entry = {"name": run, "algorithm": "external" if external else run.split("+")[0],
                         "params": params or {}}
            if failure_class:
                run_entry["failure_class"] = failure_class
            if adapter:
                run_entry["adapter"] = adapter
            if table_row:
                run_entry["table_row"] = table_row
            write_json(os.path.join(self.root, d, "summary.json"), {"runs": [run_entry]})
        self.cells.append(entry)
        return cid

    def finish(self):
        head = {"format": "lockbench-results", "version": 4, "kind": "matrix"}
        write_json(os.path.join(self.root, "lockbench-results.json"), head)
        write_json(os.path.join(self.root, "summary.json"), dict(head, cells=self.cells))
        return find_trees(self.root)


def synthetic_tree(root):
    b = Builder(root)
    b.cell("baseline", "lib-a", [SAFE] * 3, "baseline", adapter=ADAPTER_A)
    b.cell("baseline", "lib-b", [SAFE] * 3, "baseline")   # an adapter that does not say what it is
    # The mixed cell: two scenarios of one class, one rep with two holders among four.
    b.cell("gc-pause", "lib-a", [HOLDERS, SAFE], "gc-pause", adapter=ADAPTER_A, expectations_held=False)
    b.cell("gc-pause-seconds", "lib-a", [SAFE, SAFE], "gc-pause", adapter=ADAPTER_A)
    b.cell("gc-pause", "lib-b", [REFUSED] * 2, "gc-pause", params={"ttl_ms": 300, "fence": True})
    b.cell("acquire-pause", "lib-a", [HOLDERS] * 2, "held-replies", adapter=ADAPTER_A)
    # A case's variant of lib-b's run goes in lib-b's row, not a row of its own.
    b.cell("client-clock-skew", "lib-b", [SAFE] * 2, "client-clock-skew")
    b.cell("client-clock-skew", "lib-b+clock-back", [HOLDERS] * 2, "client-clock-skew", table_row="lib-b")
    b.cell("renewal", "lib-a", [HOLDERS] * 2)                            # no failure class: not in the table
    b.cell("gc-pause", "token-lua+ttl_ms=300", [HOLDERS] * 2, "gc-pause", external=False)
    b.cell("gc-pause", "token-lua+fence+ttl_ms=300", [REFUSED] * 2, "gc-pause", external=False,
           params={"ttl_ms": 300, "fence": True})
    b.cell("node-restart-empty", "token-lua+aof-always", [SAFE] * 2, "restart-empty", external=False)
    return b.finish()


class LibraryTableTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="lockbench-report-table-")
        self.trees = synthetic_tree(self.tmp.name)
        self.libraries, self.reference = table_rows(self.trees)

    def tearDown(self):
        self.tmp.cleanup()

    def rows(self):
        """{row name: {header: cell text}} as report.md writes them."""
        lines = md_table(self.libraries, self.reference).splitlines()
        head = [x.strip() for x in lines[0].strip("|").split("|")]
        out = {}
        for ln in lines[2:]:
            cells = [x.strip() for x in ln.strip("|").split("|")]
            out[cells[0]] = dict(zip(head, cells))
        return out

    def test_rows_are_the_libraries_then_lockbenchs_own_plain_algorithms(self):
        self.assertEqual([r.name for r in self.libraries], ["lib-a", "lib-b"])
        self.assertEqual([r.name for r in self.reference], ["token-lua", "token-lua+fence"])

    def test_a_cell_counts_every_rep_of_its_class_by_the_checkers_figures(self):
        rows = self.rows()
        self.assertEqual(rows["lib-a"]["no fault"], "safe 3/3")
        # Mixed: 1 of the 4 reps in the two gc-pause scenarios had two holders (its failed
        # expectation plays no part; the other scenario's safe reps count).
        self.assertEqual(rows["lib-a"]["GC pause"], "2 holders 1/4, safe 3/4")
        self.assertEqual(rows["lib-a"]["held replies"], "2 holders 2/2")
        self.assertEqual(rows["lib-b"]["GC pause"], "stale write refused 2/2")
        self.assertEqual(rows["lib-b"]["held replies"], "—")  # not run
        self.assertEqual(rows["lib-b"]["client clock skew"], "2 holders 2/4, safe 2/4")  # its variant's too
        self.assertNotIn("lib-b+clock-back", rows)
        self.assertEqual(rows["lib-a"]["slow holder"], "—")
        self.assertEqual(rows["token-lua"]["GC pause"], "2 holders 2/2")
        self.assertEqual(rows["token-lua"]["restart without data"], "—")  # its aof-always variant stays out

    def test_each_row_says_its_version_and_whether_it_fences(self):
        rows = self.rows()
        self.assertEqual((rows["lib-a"]["version"], rows["lib-a"]["fencing"]), ("lib-a 1.2.3", "no"))
        self.assertEqual((rows["lib-b"]["version"], rows["lib-b"]["fencing"]), ("?", "yes"))  # its fence param
        self.assertEqual(rows["token-lua+fence"]["fencing"], "yes")
        self.assertEqual(rows["token-lua"]["fencing"], "no")

    def test_the_page_opens_with_the_table_and_links_each_cell_to_its_scenarios(self):
        page = Page()
        write_library_table(self.trees, page)
        h = "".join(page.h)
        self.assertIn('<td class="o-violation"><a href="#', h)
        self.assertIn(f'href="#{os.path.basename(self.tmp.name)}-gc-pause-seconds"', h)  # the second scenario
        self.assertIn('<td class="o-none">—</td>', h)
        self.assertIn("lib-a: SET NX PX, Lua release", "".join(page.m))
        self.assertIn("algorithms, for reference", html_table(self.libraries, self.reference))

    def test_a_tree_whose_runs_name_no_class_has_no_table(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-table-") as d:
            b = Builder(d)
            b.cell("gc-pause", "lib-a", [HOLDERS], adapter=ADAPTER_A)
            page = Page()
            write_library_table(b.finish(), page)
            self.assertEqual(page.h, [])


if __name__ == "__main__":
    unittest.main()
