"""README.md's claims that code can check: its demo (the first line that starts with `$ `, inside
a fenced block) prints what README shows, and its count of cases and lock configurations is the
catalog's; docs/catalog.md's counts of cases and locks are the catalog's files; and
docs/running.md's shares of the main job's 15 minutes are scripts/run's.

    /usr/bin/python3 tests/readme_test.py LOCKBENCH   (ctest: readme_test)
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCKBENCH = None  # the binary, from the command line


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def demo(text):
    """(command, the lines README shows it print): the first `$ ` line and the lines after it
    up to the end of its fenced block. Fails when that line is not inside a fenced block."""
    fenced = False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if line.startswith("$ "):
            if not fenced:
                raise AssertionError(f"README.md:{i + 1}: the first `$ ` line is outside a fenced block")
            shown = []
            for rest in lines[i + 1:]:
                if rest.startswith("```"):
                    return line[2:], shown
                shown.append(rest)
    raise AssertionError("README.md has no `$ ` line inside a fenced block")


class ReadmeTest(unittest.TestCase):
    def test_the_demo_prints_what_readme_shows(self):
        command, shown = demo(readme())
        args = command.split()
        self.assertEqual(args[0], "build/lockbench", command)
        default_out = "results/verdict-" + args[args.index("verdict") + 1]
        with tempfile.TemporaryDirectory(prefix="lockbench-readme-") as d:
            out = os.path.join(d, "v")
            done = subprocess.run([LOCKBENCH] + args[1:] + ["--out", out], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.splitlines(), [s.replace(default_out, out) for s in shown], done.stdout)
            for line in shown:
                if line.startswith("timeline: "):
                    self.assertTrue(os.path.isfile(line[len("timeline: "):].replace(default_out, out)), line)

    def test_the_counts_are_the_catalogs(self):
        m = re.search(r"(\d+) cases and (\d+) lock\s+configurations", readme())
        self.assertIsNotNone(m, "README.md no longer says how many cases and lock configurations")
        self.assertEqual(int(m.group(1)), len(glob.glob(os.path.join(ROOT, "scenarios", "*.json"))), m.group(0))
        self.assertEqual(int(m.group(2)), len(glob.glob(os.path.join(ROOT, "locks", "*.json"))), m.group(0))

    def test_the_catalogs_counts_in_the_manual_are_its_files(self):
        with open(os.path.join(ROOT, "docs", "catalog.md"), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        m = re.search(r"(\d+) cases \(`scenarios/`\), (\d+) the simulator found \(`scenarios/discovered/`\) and "
                      r"(\d+) locks \(`locks/`\)", text)
        self.assertIsNotNone(m, "docs/catalog.md no longer counts its cases, discovered cases and locks")
        for said, pattern in zip(m.groups(), ("scenarios/*.json", "scenarios/discovered/*.json", "locks/*.json")):
            self.assertEqual(int(said), len(glob.glob(os.path.join(ROOT, pattern))), f"{m.group(0)}: {pattern}")

    def test_the_jobs_shares_in_the_manual_are_scripts_runs(self):
        with open(os.path.join(ROOT, "scripts", "run"), encoding="utf-8") as f:
            m = re.search(r"^job_s=(\d+) sweep_s=(\d+) report_s=(\d+) demo_share_s=(\d+)", f.read(), re.M)
        self.assertIsNotNone(m, "scripts/run no longer sets job_s, sweep_s, report_s and demo_share_s on one line")
        job, sweep, report, demo_share = (int(g) for g in m.groups())
        with open(os.path.join(ROOT, "docs", "running.md"), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        said = (f"job's {job // 60} minutes (counted from the job's start, set-up and a first build included) less the "
                f"sweep's {sweep} seconds, {report} for the report and {demo_share} for README's demo")
        self.assertIn(said, text)

    def test_a_demo_outside_a_fenced_block_is_refused(self):
        with self.assertRaises(AssertionError):
            demo("text\n$ build/lockbench list\n```\n```\n")
        self.assertEqual(demo("```\n$ a b\nout\n```\n"), ("a b", ["out"]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: readme_test.py LOCKBENCH")
    LOCKBENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main()
