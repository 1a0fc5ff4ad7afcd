"""The report's cross-library verdict table (report/libraries.py) on a small synthetic
results tree (version 7) written here: two libraries, lockbench's own locks below them, a mixed
cell, the unavailable word, a case's variant in its lock's row, every "—" explained from the
tree's not_applicable entries; a run of no class left out. Also: a version 6 tree read as it
is, a version 5 tree refused in one line, a repetition without its verdict refused, and
scripts/readme-table; each variant's one colour, the same in every drawing process.

    /usr/bin/python3 tests/report_table_test.py   (ctest: report_table_test)
"""

import json
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

from report.common import Fail, slug  # noqa: E402
from report.libraries import (GRID, LEGEND, case_label, draw_library_grid, grid_text, html_table, md_table,  # noqa: E402
                               table_rows, write_library_table)
from report import common  # noqa: E402
from report.page import Job, Page, assign_colors, run_jobs  # noqa: E402
from report.tree import find_trees  # noqa: E402
from report_synthetic import FIGURES, Builder  # noqa: E402

PY = "/usr/bin/python3"
REPORT = os.path.join(ROOT, "report")
README_TABLE = os.path.join(ROOT, "scripts", "readme-table")
ADAPTER_A = {"library": "lib-a 1.2.3", "algorithm": "SET NX PX, Lua release", "fencing": False}
H, S, R, U = "2 holders", "safe", "stale write refused", "unavailable"


def synthetic_tree(root):
    b = Builder(root)
    b.cell("baseline", "lib-a", [S] * 3, "baseline", adapter=ADAPTER_A)
    b.cell("baseline", "lib-b", [S] * 3, "baseline")   # an adapter that does not say what it is
    # A library that hands out a token nothing here checks: its gc-pause cell reads two holders.
    b.cell("gc-pause", "lib-c", [H] * 2, "gc-pause", adapter=dict(ADAPTER_A, library="lib-c 2.0", fencing=True))
    # The mixed cell: two cases of one class, one rep with two holders among four.
    b.cell("gc-pause", "lib-a", [H, S], "gc-pause", adapter=ADAPTER_A)
    b.cell("gc-pause-seconds", "lib-a", [S, S], "gc-pause", adapter=ADAPTER_A)
    b.cell("gc-pause", "lib-b", [R] * 2, "gc-pause", params={"ttl_ms": 300, "fence": True})
    # A library without a fencing token whose random token the store checks (resource_check "token").
    b.cell("gc-pause", "lib-d", [R] * 2, "gc-pause", adapter=dict(ADAPTER_A, library="lib-d 0.9", fencing=False),
           resource_check="token")
    b.cell("acquire-pause", "lib-a", [H] * 2, "held-replies", adapter=ADAPTER_A)
    # A case's variant of lib-b's run goes in lib-b's row, not a row of its own.
    b.cell("client-clock-skew", "lib-b", [S] * 2, "client-clock-skew")
    b.cell("client-clock-skew", "lib-b@clock-back", [H] * 2, "client-clock-skew")
    # The verdict is the one recorded: figures of two holders recorded "safe" count as safe.
    b.cell("slow-holder", "lib-b", [S], "slow-holder", figures=FIGURES[H])
    b.cell("failover", "lib-b", [U, U], "failover")
    # A cell none of whose repetitions could be forced: no verdict, its "—" says why.
    b.cell("failover", "lib-a", [], "failover", adapter=ADAPTER_A, unforced=["client 1 was let go after 600 ms"] * 2)
    b.cell("renewal", "lib-a", [H] * 2)                            # no failure class: not in the table
    b.cell("gc-pause", "token-lua", [H] * 2, "gc-pause", external=False)
    b.cell("gc-pause", "token-lua+fence", [R] * 2, "gc-pause", external=False, params={"ttl_ms": 300, "fence": True})
    b.cell("node-restart-empty", "token-lua@aof-always", [S] * 2, "restart-empty", external=False)
    # Why the other cells are missing: two cases of one class, one of them with two variants.
    b.not_applicable("acquire-pause", "lib-b", "arms a fault at during_acquire, which lib-b never passes", "held-replies")
    b.not_applicable("redlock-restart-empty", "lib-a", "needs 5 lock nodes; lib-a runs on 1", "restart-empty")
    b.not_applicable("redlock-restart-empty", "lib-a", "needs 5 lock nodes; lib-a runs on 1", "restart-empty", "aof-always")
    b.not_applicable("node-restart-empty", "lib-a", "needs a lock on redis; lib-a locks on etcd", "restart-empty")
    b.not_applicable("redlock-restart-empty", "lib-b", "needs 5 lock nodes; lib-b runs on 1", "restart-empty")
    b.not_applicable("renewal", "lib-b", "about lib-a only")  # no class: in no cell
    return b.finish()


def md_rows(md):
    """{row name: {header: cell text}} from report.md's table."""
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    head = [x.strip() for x in lines[0].strip("|").split("|")]
    out = {}
    for ln in lines[2:]:
        cells = [x.strip() for x in ln.strip("|").split("|")]
        out[cells[0]] = dict(zip(head, cells))
    return out


def md_notes(md):
    """{n: text} of the numbered notes under the table."""
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^- \[(\d+)\] (.*)$", md, re.M)}


class LibraryTableTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="lockbench-report-table-")
        self.trees = synthetic_tree(self.tmp.name)
        self.libraries, self.reference = table_rows(self.trees)
        self.md = md_table(self.libraries, self.reference)
        self.html = html_table(self.libraries, self.reference)

    def tearDown(self):
        self.tmp.cleanup()

    def test_rows_are_the_libraries_then_lockbenchs_own_each_by_lock(self):
        self.assertEqual([r.name for r in self.libraries], ["lib-a", "lib-b", "lib-c", "lib-d"])
        self.assertEqual([r.name for r in self.reference], ["token-lua", "token-lua+fence"])

    def test_a_cell_counts_every_rep_of_its_class_by_the_recorded_verdict(self):
        rows = md_rows(self.md)
        self.assertEqual(rows["lib-a"]["no fault"], "safe 3/3")
        # Mixed: 1 of the 4 reps in the two gc-pause cases had two holders.
        self.assertEqual(rows["lib-a"]["GC pause"], "2 holders 1/4, safe 3/4")
        self.assertEqual(rows["lib-a"]["held replies"], "2 holders 2/2")
        self.assertEqual(rows["lib-b"]["GC pause"], "stale write refused 2/2")
        self.assertEqual(rows["lib-b"]["client clock skew"], "2 holders 2/4, safe 2/4")  # its variant's too
        self.assertNotIn("lib-b@clock-back", rows)
        self.assertEqual(rows["lib-b"]["slow holder"], "safe 1/1")  # as recorded, whatever the figures
        self.assertEqual(rows["lib-b"]["failover"], "unavailable 2/2")
        self.assertEqual(rows["token-lua"]["GC pause"], "2 holders 2/2")
        self.assertEqual(rows["token-lua"]["restart without data"], "safe 2/2")  # its @aof-always variant

    def test_the_unavailable_word_has_its_own_colour(self):
        self.assertIn('<td class="o-unavailable">', self.html)
        self.assertIn(".o-unavailable{", __import__("report.page", fromlist=["CSS"]).CSS)
        self.assertNotIn('class="o-notrun"><a', self.html)

    def test_a_mixed_cell_is_coloured_by_its_worst_verdict(self):
        row = re.search(r'<td class="rowhead"[^>]*>lib-a</td>(.*?)</tr>', self.html, re.S).group(1)
        gc = re.findall(r'<td class="([^"]+)"', row)[1]  # no fault, GC pause (version and fencing have no class)
        self.assertEqual(gc, "o-violation")

    def test_every_dash_is_explained(self):
        rows, notes = md_rows(self.md), md_notes(self.md)
        dashes = 0
        for name, row in rows.items():
            for head, text in row.items():
                if text.startswith("—"):
                    dashes += 1
                    m = re.fullmatch(r"— \[(\d+)\]", text)
                    self.assertIsNotNone(m, f"{name} / {head}: {text!r} has no note")
                    self.assertIn(int(m.group(1)), notes)
        self.assertGreater(dashes, 5)
        # the same count in HTML: each "—" with its reasons as a title and its note linked
        self.assertEqual(self.html.count("—<sup"), dashes)
        self.assertEqual(len(re.findall(r'<td class="o-none" title="[^"]+">—<sup class="note-ref"><a href="#libraries-note-\d+">',
                                        self.html)), dashes)
        self.assertEqual(len(re.findall(r'<li id="libraries-note-\d+">', self.html)), len(notes))

    def test_a_dash_gives_every_case_of_its_class_that_does_not_apply(self):
        rows, notes = md_rows(self.md), md_notes(self.md)
        n = int(re.search(r"\d+", rows["lib-a"]["restart without data"]).group())
        # both cases, the variant refused for the same reason not repeated, the lock said as "the lock"
        self.assertEqual(notes[n], "redlock-restart-empty: needs 5 lock nodes; the lock runs on 1 · "
                                   "node-restart-empty: needs a lock on redis; the lock locks on etcd")
        # identical reasons share one note: lib-b's restart cell reads the same as lib-a's first line only
        m = int(re.search(r"\d+", rows["lib-b"]["restart without data"]).group())
        self.assertEqual(notes[m], "redlock-restart-empty: needs 5 lock nodes; the lock runs on 1")
        self.assertIn("which the lock never passes", notes[int(re.search(r"\d+", rows["lib-b"]["held replies"]).group())])
        # the exact reason, with the lock's name, is the cell's title
        self.assertIn('title="redlock-restart-empty: needs 5 lock nodes; lib-a runs on 1\nnode-restart-empty: needs a '
                      'lock on redis; lib-a locks on etcd"', self.html)

    def test_a_variant_and_the_words_are_spelled_as_the_cpp_side_spells_them(self):
        # a case's variant as lock files key it (sim/engine/case_file.h: variant_label)
        self.assertEqual(case_label({"case": "gc-pause", "variant": "long"}), "gc-pause+long")
        self.assertEqual(case_label({"case": "gc-pause", "variant": ""}), "gc-pause")
        # every verdict word in the legend with the meaning `lockbench list --json` gives it
        for word, meaning in common.FACTS["verdict_meanings"].items():
            self.assertIn(f"{word}: {meaning}", LEGEND)

    def test_a_dash_no_entry_explains_says_not_run_in_this_tree(self):
        rows, notes = md_rows(self.md)["lib-a"], md_notes(self.md)
        n = int(re.search(r"\d+", rows["slow holder"]).group())
        self.assertTrue(notes[n].startswith("not run in this tree"), notes[n])
        # one note for every cell of that reason, across rows
        self.assertEqual(rows["slow holder"], md_rows(self.md)["token-lua"]["slow holder"])

    def test_a_cell_that_could_not_be_forced_says_so_and_is_not_incomplete(self):
        rows, notes = md_rows(self.md), md_notes(self.md)
        n = int(re.search(r"\d+", rows["lib-a"]["failover"]).group())
        self.assertEqual("failover: could not force it in 2 of 2 repetitions (client 1 was let go after 600 ms)",
                         notes[n])
        self.assertEqual([c.id for c in self.trees[0].unforced], ["failover/lib-a"])
        self.assertNotIn("failover/lib-a", [c.id for c in self.trees[0].incomplete])

    def test_each_row_says_its_version_and_whether_it_fences(self):
        rows = md_rows(self.md)
        self.assertEqual((rows["lib-a"]["version"], rows["lib-a"]["fencing"]), ("lib-a 1.2.3", "no"))
        self.assertEqual((rows["lib-b"]["version"], rows["lib-b"]["fencing"]), ("?", "checked"))  # its fence param
        self.assertEqual(rows["token-lua+fence"]["fencing"], "checked")
        # a token the library offers is not one the store checks: "offered", beside two holders
        self.assertEqual((rows["lib-c"]["fencing"], rows["lib-c"]["GC pause"]), ("offered", "2 holders 2/2"))
        # no fencing token, its random token checked by the store: told apart from a fence checked
        self.assertEqual((rows["lib-d"]["fencing"], rows["lib-d"]["GC pause"]), ("token checked", "stale write refused 2/2"))
        self.assertEqual((rows["token-lua"]["version"], rows["token-lua"]["fencing"]), ("built-in", "no"))

    def test_the_page_opens_with_the_table_between_the_readme_markers(self):
        page = Page()
        self.assertTrue(write_library_table(self.trees, page))
        h, m = "".join(page.h), "".join(page.m)
        self.assertIn('<td class="o-violation"><a href="#', h)
        self.assertIn(f'href="#{slug(os.path.basename(self.tmp.name))}-gc-pause-seconds"', h)  # the second case
        self.assertIn("lib-a: SET NX PX, Lua release", m)
        self.assertIn("algorithms, for reference", h)
        self.assertIn("<!-- library-table -->", m)

    def test_the_picture_of_the_table_stands_before_what_readme_copies(self):
        img = draw_library_grid(self.libraries, self.reference, self.tmp.name)
        with open(os.path.join(self.tmp.name, GRID), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        # each cell its worst word and in how many repetitions; a mixed cell's other words are the table's
        self.assertEqual(grid_text({"safe": 1, "2 holders": 1}), "2 holders\n1/2")
        self.assertEqual(grid_text({}), "—")
        page = Page()
        write_library_table(self.trees, page, img)
        m = "".join(page.m)
        self.assertLess(m.index(f"](report-images/{GRID})"), m.index("<!-- library-table -->"))
        self.assertIsNone(draw_library_grid([], [], self.tmp.name))

    def test_a_tree_whose_runs_name_no_class_has_no_table(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-table-") as d:
            b = Builder(d)
            b.cell("gc-pause", "lib-a", [H], adapter=ADAPTER_A)
            page = Page()
            self.assertFalse(write_library_table(b.finish(), page))
            self.assertEqual(page.h, [])


class ColourTest(unittest.TestCase):
    def test_a_variant_has_the_colour_of_its_place_in_the_trees_in_every_drawing_process(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-colours-") as d:
            b = Builder(d)
            for run in ("lib-a", "lib-b", "lib-c", "lib-d"):
                b.cell("gc-pause", run, [S], "gc-pause", adapter=ADAPTER_A)
            trees = b.finish()
            saved = dict(common._variant_colors)
            common._variant_colors.clear()
            try:
                assign_colors(trees)
                expected = {v: common.PALETTE[i] for i, v in enumerate(("lib-a", "lib-b", "lib-c", "lib-d"))}
                # Asked in the opposite order, in forked workers as the figures are drawn.
                os.environ["LOCKBENCH_REPORT_JOBS"] = "2"
                asked = [Job(v, lambda v=v: (v, common.color_of(v))) for v in reversed(expected)]
                self.assertEqual(dict(run_jobs(asked).values()), expected)
            finally:
                os.environ.pop("LOCKBENCH_REPORT_JOBS", None)
                common._variant_colors.clear()
                common._variant_colors.update(saved)


def run_report(d):
    return subprocess.run([PY, REPORT, d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


class OlderTreeTest(unittest.TestCase):
    def test_a_version_5_tree_is_refused_in_one_line_naming_check_write(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-v5-") as d:
            b = Builder(d, version=5)
            b.cell("gc-pause", "lib-a", [None], "gc-pause", adapter=ADAPTER_A)
            b.finish(find=False)
            before = sorted(os.listdir(d))
            r = run_report(d)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(f"lockbench check {d} --write", r.stderr)
            self.assertIn("version 5", r.stderr)
            self.assertEqual(sorted(os.listdir(d)), before)  # nothing written

    def test_a_version_6_tree_is_read_as_it_is(self):
        # Version 7 changed only how a release that did not say what it removed is recorded,
        # which the report does not read: a version 6 tree needs no `check --write`.
        with tempfile.TemporaryDirectory(prefix="lockbench-report-v6-") as d:
            b = Builder(d, version=6)
            b.cell("gc-pause", "lib-a", [S], "gc-pause", adapter=ADAPTER_A)
            b.finish(find=False)
            trees = find_trees(d)
            self.assertEqual([t.summary["version"] for t in trees], [6])

    def test_a_rep_without_its_verdict_is_refused(self):
        with tempfile.TemporaryDirectory(prefix="lockbench-report-noverdict-") as d:
            b = Builder(d)
            b.cell("gc-pause", "lib-a", [S, None], "gc-pause", adapter=ADAPTER_A)
            b.finish(find=False)
            with self.assertRaises(Fail) as e:
                find_trees(d)
            self.assertIn('has no "verdict"', e.exception.what)
            self.assertIn("--write", e.exception.what)


class ReadmeTableTest(unittest.TestCase):
    """scripts/readme-table: the section between the markers copied from report.md into README.md."""

    def files(self, d, report, readme):
        rp, rd = os.path.join(d, "report.md"), os.path.join(d, "README.md")
        for p, text in ((rp, report), (rd, readme)):
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
        return rp, rd

    def run_script(self, *args):
        return subprocess.run([README_TABLE] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=30)

    def test_copies_the_section_and_check_then_agrees(self):
        with tempfile.TemporaryDirectory() as d:
            rp, rd = self.files(d, "# r\n<!-- library-table -->\n| new |\n<!-- /library-table -->\nrest\n",
                                "top\n<!-- library-table -->\n| old |\n<!-- /library-table -->\nbottom\n")
            r = self.run_script("--check", "--report", rp, "--readme", rd)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            r = self.run_script("--report", rp, "--readme", rd)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(rd, encoding="utf-8") as f:
                self.assertEqual(f.read(), "top\n<!-- library-table -->\n| new |\n<!-- /library-table -->\nbottom\n")
            self.assertEqual(self.run_script("--check", "--report", rp, "--readme", rd).returncode, 0)

    def test_a_named_section_takes_the_report_table_and_leaves_the_other(self):
        with tempfile.TemporaryDirectory() as d:
            readme = ("<!-- library-table -->\n| main |\n<!-- /library-table -->\nmiddle\n"
                      "<!-- library-table verdict-only -->\n| old |\n<!-- /library-table verdict-only -->\nbottom\n")
            rp, rd = self.files(d, "<!-- library-table -->\n| new |\n<!-- /library-table -->\n", readme)
            r = self.run_script("--report", rp, "--section", "verdict-only", "--readme", rd)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(rd, encoding="utf-8") as f:
                self.assertEqual(f.read(), readme.replace("| old |", "| new |"))
            self.assertEqual(self.run_script("--check", "--report", rp, "--section", "verdict-only", "--readme", rd).returncode, 0)
            r = self.run_script("--check", "--report", rp, "--readme", rd)  # the first section still says "main"
            self.assertEqual(r.returncode, 1)

    def test_the_notes_and_the_locks_descriptions_stay_in_the_report_and_one_line_names_it(self):
        with tempfile.TemporaryDirectory() as d:
            report = ("<!-- library-table -->\n| t |\n\nWhy a cell is \"—\" (...):\n\n- [1] baseline: needs 5 lock nodes\n\n"
                      "Each cell counts ...\n\n- redis-py: SET NX PX with a random token\n- etcd: etcd's Lock RPC\n\n"
                      "Covers catalog\n<!-- /library-table -->\n")
            rp, rd = self.files(d, report, "<!-- library-table -->\nx\n<!-- /library-table -->\n")
            self.assertEqual(self.run_script("--report", rp, "--readme", rd).returncode, 0)
            with open(rd, encoding="utf-8") as f:
                self.assertEqual(f.read(), "<!-- library-table -->\n| t |\n\nWhy a cell marked \"—\" [N] does not apply, note "
                                           "by note, and what each lock is: [report.md](report.md).\n\nEach cell counts ...\n\n"
                                           "Covers catalog\n<!-- /library-table -->\n")

    def test_the_demo_seconds_come_from_the_last_run(self):
        table = "<!-- library-table -->\n| t |\n<!-- /library-table -->\n"
        with tempfile.TemporaryDirectory() as d:
            rp, rd = self.files(d, table, table + "took <!-- demo-seconds -->2.5 s<!-- /demo-seconds --> here\n")
            lr = os.path.join(d, "last-run.json")
            for demo_s, shown in ((2.61, "2.6 s"), (None, "not measured yet"), (3.04, "3.0 s")):
                with open(lr, "w", encoding="utf-8") as f:
                    json.dump({"demo_s": demo_s} if demo_s is not None else {}, f)
                self.assertEqual(self.run_script("--check", "--report", rp, "--readme", rd, "--last-run", lr).returncode, 1)
                r = self.run_script("--report", rp, "--readme", rd, "--last-run", lr)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(rd, encoding="utf-8") as f:
                    self.assertEqual(f.read(), table + f"took <!-- demo-seconds -->{shown}<!-- /demo-seconds --> here\n")
                self.assertEqual(self.run_script("--check", "--report", rp, "--readme", rd, "--last-run", lr).returncode, 0)
            self.files(d, table, table + "no demo markers\n")
            r = self.run_script("--report", rp, "--readme", rd, "--last-run", lr)
            self.assertEqual(r.returncode, 2)
            self.assertIn("lacks <!-- demo-seconds -->", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_file_without_the_markers_is_one_line_and_nothing_written(self):
        with tempfile.TemporaryDirectory() as d:
            for report, readme in (("no markers\n", "<!-- library-table -->\nx\n<!-- /library-table -->\n"),
                                   ("<!-- library-table -->\nx\n<!-- /library-table -->\n", "no markers\n")):
                rp, rd = self.files(d, report, readme)
                r = self.run_script("--report", rp, "--readme", rd)
                self.assertNotEqual(r.returncode, 0)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn("<!-- library-table -->", r.stderr)
                with open(rd, encoding="utf-8") as f:
                    self.assertEqual(f.read(), readme)


if __name__ == "__main__":
    unittest.main()
