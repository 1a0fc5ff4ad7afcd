"""Reading a results tree: its header, its summary, its cells and their repetitions. The
figures come as the C++ side wrote them (each cell's aggregate, each rep's summary); nothing
here recomputes one."""

import json
import os

from .common import NOT_RUN, VERDICT_WORDS, Fail, load_json, num, slug, worst

# The results format this report reads (sim/harness/matrix.h: kResultsVersion). Version 6 put
# the checker's verdict in every run's summary and every repetition's figures, which the report
# shows as it is written; `lockbench check DIR --write` brings an older tree to 6. Version 7
# records a release whose library did not say what it removed without "nodes", which the
# report does not read: it reads 6 and 7 alike.
RESULTS_VERSION = 7
READABLE_VERSIONS = (6, 7)  # 7 only records a release the library did not describe differently


def refuse_older(path, version, tree):
    """The one line that refuses a tree from before the verdicts were recorded."""
    return Fail(path, f"version {version}, from before the checker recorded each run's verdict: run "
                      f"`lockbench check {tree} --write`, then the report again")


class Tree:
    def __init__(self, path, meta):
        self.path = path
        self.name = os.path.basename(os.path.normpath(path))
        self.meta = meta
        self.kind = meta["kind"]
        spath = os.path.join(path, "summary.json")
        s = load_json(spath)
        if isinstance(s, dict) and s.get("format") == "lockbench-results" and isinstance(s.get("version"), int) \
                and s["version"] < min(READABLE_VERSIONS):
            raise refuse_older(spath, s["version"], path)
        if not isinstance(s, dict) or s.get("format") != "lockbench-results" or s.get("version") not in READABLE_VERSIONS:
            raise Fail(spath, f'expected {{"format": "lockbench-results", "version": {RESULTS_VERSION}, ...}}, the '
                              "summary `lockbench matrix`/`sweep`/`merge` writes")
        if not isinstance(s.get("cells"), list):
            raise Fail(spath, 'has no "cells" list')
        self.summary = s
        self.spec_id = s.get("spec_id", meta.get("spec_id", "?"))
        self.sweep = s.get("sweep") if self.kind == "sweep" else None
        if self.kind == "sweep" and not isinstance(self.sweep, dict):
            raise Fail(spath, 'kind is "sweep" but there is no "sweep" object (scenario, path, values)')
        self.scenarios = {}
        for sc in s.get("scenarios", []) or []:
            if isinstance(sc, dict) and isinstance(sc.get("source"), dict):
                sc = sc["source"]  # {"file", "source"}: the scenario as its file wrote it
            if isinstance(sc, dict) and "name" in sc:
                self.scenarios[sc["name"]] = sc
        self.cells = []
        for i, c in enumerate(s["cells"]):
            if not isinstance(c, dict):
                raise Fail(spath, f"cells[{i}] is not an object")
            for key in ("scenario", "run"):
                if not isinstance(c.get(key), str):
                    raise Fail(spath, f'cells[{i}] has no "{key}" string')
            cell = Cell(self, c, i)
            for k, r in enumerate(cell.reps):
                if r.get("verdict") not in VERDICT_WORDS:
                    raise Fail(spath, f"cells[{i}] ({cell.id}) rep {r.get('rep', k)}: "
                                      + (f"verdict {json.dumps(r['verdict'])} is not one of the checker's words ("
                                         + ", ".join(VERDICT_WORDS) + ")" if "verdict" in r else
                                         f'has no "verdict": run `lockbench check {path} --write`'))
            self.cells.append(cell)
        # The (case, lock) cells that do not exist, each with its reason (a matrix of the catalog).
        na = s.get("not_applicable")
        self.not_applicable = [n for n in na if isinstance(n, dict)] if isinstance(na, list) else []
        # What lacks repetitions: as the summary records it (`merge --allow-incomplete`, or a
        # shard's own tree), else from the cells.
        recorded = s.get("incomplete_cells")
        # A cell whose repetitions could not be forced ran them all: none is missing, none is evidence.
        missing = [c for c in self.cells if c.partial or (not c.reps and not c.could_not_force)]
        ids = set(recorded) if isinstance(recorded, list) else {c.id for c in missing}
        self.incomplete = [c for c in self.cells if c.id in ids or c in missing]
        self.unforced = [c for c in self.cells if c.could_not_force]
        self.scenario_order = []
        for c in self.cells:
            if c.scenario not in self.scenario_order:
                self.scenario_order.append(c.scenario)
        for name in self.scenarios:
            if name not in self.scenario_order:
                self.scenario_order.append(name)
        if self.kind == "matrix":
            self.scenario_order.sort()
        self.slug = slug(self.name)

    def cells_of(self, scenario):
        return [c for c in self.cells if c.scenario == scenario]


class Cell:
    def __init__(self, tree, c, i):
        self.tree = tree
        self.raw = c
        self.index = c.get("index", i)
        self.scenario = c["scenario"]
        self.run = c["run"]
        self.id = c.get("id") or f"{self.scenario}/{self.run}"
        self.algorithm = c.get("algorithm") or self.run.split("+")[0]
        self.variant = c.get("variant") or self.algorithm
        if "@" in self.run and self.variant == self.run:
            # LOCK@VARIANT: a case's variant of a lock's run stays in the lock's row
            self.variant = self.run.split("@", 1)[0]
        self.step = c.get("step")
        self.value = c.get("value")
        self.repeat = int(num(c.get("repeat"), 0))
        budget = tree.summary.get("budget")
        if isinstance(budget, dict):
            # The time budget ended the work between rounds: every cell has this many reps,
            # which is what was planned for this tree, not a tree broken off.
            self.repeat = min(self.repeat, int(num(budget.get("repetitions_per_cell"), self.repeat)))
        reps = c.get("reps") or []
        self.reps = [r for r in reps if isinstance(r, dict) and isinstance(r.get("dir"), str)]
        self.reps.sort(key=lambda r: num(r.get("rep"), 0))
        self.reps_done = int(num(c.get("reps_done"), len(self.reps)))
        # The repetitions that did not happen as the case is written, reruns and all: no evidence.
        unforced = c.get("could_not_force")
        self.could_not_force = [x for x in unforced if isinstance(x, dict)] if isinstance(unforced, list) else []
        self.agg = c.get("aggregate") or {}
        self._runs = {}

    def unforced_text(self):
        """"3 of 3 repetitions (why the first could not be forced)": said the same way everywhere."""
        why = self.could_not_force[0].get("reason", "?") if self.could_not_force else "?"
        return f"{len(self.could_not_force)} of {self.repeat} repetitions ({why})"

    @property
    def partial(self):
        return self.repeat > 0 and self.reps_done < self.repeat

    def rep_path(self, rep):
        return os.path.join(self.tree.path, rep["dir"])

    def run_of(self, rep):
        """The rep's RUN object (from its own summary.json), cached."""
        key = rep["dir"]
        if key not in self._runs:
            spath = os.path.join(self.rep_path(rep), "summary.json")
            s = load_json(spath)
            runs = s.get("runs") if isinstance(s, dict) else None
            if not isinstance(runs, list) or not runs:
                raise Fail(spath, 'has no "runs" (expected the output of `lockbench run` with one run)')
            run = next((r for r in runs if isinstance(r, dict) and r.get("name") == self.run), None)
            if run is None:
                if len(runs) == 1 and isinstance(runs[0], dict):
                    run = runs[0]
                else:
                    raise Fail(spath, f'has no run named "{self.run}"')
            self._runs[key] = run
        return self._runs[key]

    def rep_metric(self, rep, name):
        return num(rep.get(name), 0)

    def aggregate(self, name, field=None):
        """A figure of the cell's aggregate (analysis/aggregate.cpp), 0 when the cell has none."""
        a = self.agg.get(name)
        return num(a.get(field) if isinstance(a, dict) else None) if field else num(a)

    def total(self, metric):
        """Total of a safety metric over the done reps."""
        return self.aggregate("violations" if metric == "mutual_exclusion_violations" else metric, "total")

    def reps_with(self, *metrics):
        return sum(1 for r in self.reps if any(self.rep_metric(r, m) > 0 for m in metrics))

    def unavailable_mean(self):
        return self.aggregate("unavailable_ms", "mean")

    def unavailable_max(self):
        return self.aggregate("unavailable_ms", "max")

    def has_expectations(self):
        # A sweep runs its scenario at values its `expect` was not written for: not a verdict.
        return self.tree.kind != "sweep" and bool(self.agg.get("has_expectations"))

    def expectations_held_reps(self):
        return int(self.aggregate("expectations_held_reps"))

    def violation_rate(self):
        """The share of reps with a violation and its 95 % Wilson interval, as aggregated."""
        ci = self.agg.get("violation_rate_ci95")
        if not (isinstance(ci, list) and len(ci) == 2):
            ci = [0.0, 1.0]
        return self.aggregate("violation_rate"), [num(ci[0]), num(ci[1], 1.0)]

    def outcome(self):
        """The cell's verdict: the worst the checker recorded over its repetitions, or "not run"."""
        if not self.reps:
            return NOT_RUN
        return worst(r["verdict"] for r in self.reps)

    def verdict_counts(self):
        """{verdict word: repetitions}, as the checker recorded them."""
        out = {}
        for r in self.reps:
            out[r["verdict"]] = out.get(r["verdict"], 0) + 1
        return out

    def reps_of(self, word):
        return sum(1 for r in self.reps if r.get("verdict") == word)

    def label_suffix(self):
        """What tells this cell apart from others of its variant in its scenario."""
        v = self.variant
        if self.run.startswith(v + "+"):
            return self.run[len(v) + 1:]
        if self.run.startswith(v + "@"):
            return self.run[len(v):]
        return self.run


def find_trees(d):
    if not os.path.exists(d):
        raise Fail(d, "no such folder; give the output folder of `lockbench matrix` or `lockbench sweep`, "
                      "or a folder of them")
    if not os.path.isdir(d):
        raise Fail(d, "not a folder; give the output folder of `lockbench matrix` or `lockbench sweep` "
                      "(holding lockbench-results.json), or a folder of them")
    marker = os.path.join(d, "lockbench-results.json")
    if os.path.exists(marker):
        return [open_tree(d)]
    subs = []
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if name.startswith(".") or not os.path.isdir(p):
            continue
        if os.path.exists(os.path.join(p, "lockbench-results.json")):
            subs.append(open_tree(p))
    if subs:
        subs.sort(key=lambda t: (0 if t.kind == "matrix" else 1, t.name))
        return subs
    hint = ""
    s = os.path.join(d, "summary.json")
    if os.path.exists(s):
        hint = (" (it has a summary.json: this looks like the output of a single `lockbench run`, which "
                "`lockbench check` reads; report needs `lockbench matrix` or `lockbench sweep` output)")
    raise Fail(d, "no lockbench-results.json here nor in any immediate subfolder; expected the output folder "
                  "of `lockbench matrix` or `lockbench sweep`, or a folder of them" + hint)


def open_tree(p):
    mpath = os.path.join(p, "lockbench-results.json")
    meta = load_json(mpath)
    if not isinstance(meta, dict):
        raise Fail(mpath, f'expected a JSON object {{"format": "lockbench-results", "version": {RESULTS_VERSION}, ...}}')
    if meta.get("format") != "lockbench-results":
        raise Fail(mpath, f'format is {json.dumps(meta.get("format"))}, expected "lockbench-results"')
    version = meta.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and 1 <= version < min(READABLE_VERSIONS):
        raise refuse_older(mpath, version, p)  # `check --write` adds what is missing from the histories
    if version not in READABLE_VERSIONS:
        raise Fail(mpath, f'version {json.dumps(version)} is not supported, expected {RESULTS_VERSION} '
                          "(a newer lockbench wrote it: use the report of that version)")
    if meta.get("kind") not in ("matrix", "sweep"):
        raise Fail(mpath, f'kind is {json.dumps(meta.get("kind"))}, expected "matrix" or "sweep"')
    return Tree(p, meta)
