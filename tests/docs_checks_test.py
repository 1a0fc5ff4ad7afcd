"""The checkers the docs_links, comment_paths and last_run_page tests run, shown able to fail: on small
trees written here, scripts/check-docs-links reports a missing file, a missing heading and a
broken reference, and not a good link, a web link or a link in code; scripts/check-comment-paths
reports a stale path in a comment or docstring of each language, and not a path that exists,
matches its glob or placeholder, lies in code's strings, or is one that git ignores;
scripts/last-run writes the page of what a scripts/run measured from the trees' own counts and
refuses a page that is not its file's.

    /usr/bin/python3 tests/docs_checks_test.py   (ctest: docs_checks_test)
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
DOCS_LINKS = os.path.join(ROOT, "scripts", "check-docs-links")
COMMENT_PATHS = os.path.join(ROOT, "scripts", "check-comment-paths")
LAST_RUN = os.path.join(ROOT, "scripts", "last-run")


def run(*args):
    done = subprocess.run([PY] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return done.returncode, done.stdout.splitlines(), done.stderr


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text).lstrip("\n"))
    return path


class DocsLinks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="docs-links-")
        self.addCleanup(shutil.rmtree, self.dir)
        os.makedirs(os.path.join(self.dir, "docs", "pictures"))
        write(self.dir, "docs/b.md", """
            # Page b

            ## A lock file (`locks/NAME.json`)
            ## The main job's time
            ## Your own lock: from adapter to verdict
            ## Twice
            ## Twice
            ```
            # Not a heading
            ```
            """)

    def check(self, text):
        return run(DOCS_LINKS, write(self.dir, "docs/a.md", text))

    def test_good_links_pass(self):
        rc, out, err = self.check("""
            # Page a
            ## Here, [linked](b.md)

            [b](b.md) [b's heading](b.md#a-lock-file-locksnamejson), [time](./b.md#the-main-jobs-time),
            [own](b.md#your-own-lock-from-adapter-to-verdict), [second](b.md#twice-1) [first](b.md#twice),
            [here](#here-linked) [folder](pictures/) [`code` as text](b.md "a title")
            [wrapped
            text](../docs/b.md) ![an image](b.md) [web](https://example.com/x.md) [mail](mailto:a@b.c)
            A link in code is no link: `[x](missing.md)` and
            ```
            [y](missing.md)
            ```
            <!-- [z](missing.md) -->
            [ref]: b.md#page-b
            """)
        self.assertEqual((rc, out, err), (0, [], ""))

    def test_broken_links_are_reported_one_line_each(self):
        rc, out, _ = self.check("""
            # Page a

            [gone](missing.md) and [no heading](b.md#not-there),
            [not in a fence](b.md#not-a-heading) [self](#nowhere) [twice too many](b.md#twice-2)
            [gone folder](pictures/old/)
            [ref]: gone.md
            """)
        a = os.path.join(self.dir, "docs", "a.md")
        b = os.path.join(self.dir, "docs", "b.md")
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            f"{a}:3: link missing.md: no such file",
            f"{a}:3: link b.md#not-there: no heading #not-there in {b}",
            f"{a}:4: link b.md#not-a-heading: no heading #not-a-heading in {b}",
            f"{a}:4: link #nowhere: no heading #nowhere in {a}",
            f"{a}:4: link b.md#twice-2: no heading #twice-2 in {b}",
            f"{a}:5: link pictures/old/: no such file",
            f"{a}:6: link gone.md: no such file",
        ])

    def test_an_unreadable_file_is_exit_2(self):
        rc, out, err = run(DOCS_LINKS, os.path.join(self.dir, "nothing.md"))
        self.assertEqual((rc, out), (2, []))
        self.assertIn("nothing.md", err)

    def test_the_repository_default_is_the_readme_docs_and_results_readme(self):
        rc, out, err = run(DOCS_LINKS, "--help")
        self.assertEqual(rc, 0)
        self.assertIn("README.md docs/*.md results/README.md", "\n".join(out))


class CommentPaths(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="comment-paths-")
        self.addCleanup(shutil.rmtree, self.dir)
        for rel in ("sim/live/live_env.cpp", "sim/live/live_env.h", "locks/setnx.json", "README.md",
                    "docs/faults.md", "results/README.md"):
            write(self.dir, rel, "\n")

    def check(self, *files):
        return run(COMMENT_PATHS, "--root", self.dir, *[os.path.join(self.dir, f) for f in files])

    def test_paths_that_exist_pass(self):
        write(self.dir, "lockimpl/env.h", """
            // The live implementation (sim/live/live_env.*, sim/live/live_env.cpp) and sim/live/;
            /* locks/NAME.json, a lock (docs/faults.md: the fault table); README.md, lockimpl/*.h */
            // Not ours: ../kit/x.py, https://example.com/sim/gone.h, lockbench/sim/gone.h.
            const char* s = "sim/gone.h";  // (a path in code's strings is the code's business)
            const char* raw = R"(// sim/gone.h)";
            """)
        self.assertEqual(self.check("lockimpl/env.h"), (0, [], ""))

    def test_stale_paths_are_reported_in_every_language(self):
        write(self.dir, "lockimpl/env.h", """
            // The live implementation (sim/live_env.*) uses hiredis.
            int n = 1'000'000;  // sim/live/gone.cpp, then
            /* over two lines:
               docs/gone.md. */
            const char* raw = R"x("quote)x"; // sim/after_raw.h
            """)
        write(self.dir, "scripts/tool", '''
            #!/usr/bin/python3
            """Reads sim/tool_input.json."""
            x = "sim/in_code.json"  # but sim/commented.json
            ''')
        write(self.dir, "scripts/job", """
            #!/usr/bin/env bash
            # Writes results/out/ and sim/job.out.
            echo "${#x} # sim/quoted.txt"
            cat <<EOF
            # sim/heredoc.txt
            EOF
            """)
        write(self.dir, "adapters/a/adapter.js", """
            // Speaks the protocol (docs/adapters.md).
            const re = /"/; const t = `// sim/template.js`;  // sim/after_regex.js
            """)
        write(self.dir, "CMakeLists.txt", """
            # The layers (docs/architecture.md).
            add_executable(x sim/not_a_comment.cpp)
            """)
        rc, out, err = run(COMMENT_PATHS, "--root", self.dir)
        self.assertEqual(rc, 1, err)
        self.assertEqual(sorted(out), sorted([
            "CMakeLists.txt:1: names docs/architecture.md, which does not exist",
            "adapters/a/adapter.js:1: names docs/adapters.md, which does not exist",
            "adapters/a/adapter.js:2: names sim/after_regex.js, which does not exist",
            "lockimpl/env.h:1: names sim/live_env.*, which does not exist",
            "lockimpl/env.h:2: names sim/live/gone.cpp, which does not exist",
            "lockimpl/env.h:4: names docs/gone.md, which does not exist",
            "lockimpl/env.h:5: names sim/after_raw.h, which does not exist",
            "scripts/job:2: names results/out/, which does not exist",
            "scripts/job:2: names sim/job.out, which does not exist",
            "scripts/tool:2: names sim/tool_input.json, which does not exist",
            "scripts/tool:3: names sim/commented.json, which does not exist",
        ]))

    def test_paths_git_ignores_are_generated_and_not_checked(self):
        if shutil.which("git") is None:
            self.skipTest("no git")
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        write(self.dir, ".gitignore", "/results/*\n")
        write(self.dir, "scripts/job", """
            #!/bin/sh
            # Writes results/out/ (generated), not sim/job.out.
            """)
        self.assertEqual(self.check("scripts/job"), (1, ["scripts/job:2: names sim/job.out, which does not exist"], ""))

    def test_outside_git_the_top_gitignore_decides(self):
        write(self.dir, ".gitignore", "/results/*\n!/results/README.md\n")
        write(self.dir, "scripts/job", """
            #!/bin/sh
            # Writes results/out/ (generated), not results/README.md nor results/gone.md.
            """)
        self.assertEqual(self.check("scripts/job"), (0, [], ""))
        write(self.dir, ".gitignore", "/results/*\n!/results/*.md\n")
        self.assertEqual(self.check("scripts/job"), (1, ["scripts/job:2: names results/gone.md, which does not exist"], ""))

    def test_bad_arguments_are_exit_2(self):
        rc, _, err = run(COMMENT_PATHS, "--root", os.path.join(self.dir, "nothing"))
        self.assertEqual(rc, 2)
        self.assertIn("nothing", err)



class LastRun(unittest.TestCase):
    """scripts/last-run: the page of the main job's measurements, which the manual points to."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="last-run-")
        self.addCleanup(shutil.rmtree, self.dir)
        cells = [{"id": f"c{i}", "reps": [{}, {}]} for i in range(3)]
        write(self.dir, "catalog/summary.json",
              '{"repeat": 3, "budget": {"seconds": 818, "repetitions_per_cell": 2}, "cells": %s}' % str(cells).replace("'", '"'))
        os.makedirs(os.path.join(self.dir, "catalog", "not-as-written", "gc-pause", "redis-py", "rep-1.attempt-1"))
        write(self.dir, "sweep-gc-pause/summary.json", '{"repeat": 3, "cells": [{"reps": [{}, {}, {}]}]}')

    def test_the_page_counts_from_the_trees_and_says_what_scripts_run_measured(self):
        rc, out, err = run(LAST_RUN, self.dir, "commit=01234567", "fork_exec_ms_before=0.79", "matrix_s=571",
                           "budget_s=13:38", "total_s=629", "exit_status=0")
        self.assertEqual((rc, err), (0, ""))
        with open(os.path.join(self.dir, "last-run.md"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("| commit | 01234567 |", page)  # a hash of digits stays a hash
        self.assertIn("3 cells, 2 of 3 repetitions each (6 in all) (the time budget set it), in 9 min 31 s of a "
                      "budget of 13 min 38 s; 1 attempts not as written, run again", page)
        self.assertIn("fork and exec 0.79 ms before", page)
        self.assertIn("| whole job | 10 min 29 s, not measured of CPU", page)
        self.assertIn("| exit status | 0: every expectation held", page)
        self.assertEqual(run(LAST_RUN, self.dir, "--check")[0], 0)

    def test_a_page_edited_by_hand_fails_the_check(self):
        self.assertEqual(run(LAST_RUN, self.dir, "matrix_s=571")[0], 0)
        path = os.path.join(self.dir, "last-run.md")
        with open(path, encoding="utf-8") as f:
            page = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(page.replace("9 min 31 s", "8 min 0 s"))
        rc, out, err = run(LAST_RUN, self.dir, "--check")
        self.assertEqual(rc, 1)
        self.assertIn("last-run.md: not what last-run.json makes", out[0])

    def test_an_unknown_figure_is_refused_and_nothing_is_written(self):
        rc, out, err = run(LAST_RUN, self.dir, "matrix_s=571", "rounds=3")
        self.assertEqual(rc, 2)
        self.assertIn("rounds=3: not NAME=VALUE", err)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "last-run.md")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
