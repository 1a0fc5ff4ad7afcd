#!/usr/bin/python3
"""lockbench report: render results trees as one self-contained HTML page and a Markdown page.

    /usr/bin/python3 analysis/report.py DIR

DIR is a results tree (the output folder of `lockbench matrix` or `lockbench sweep`, holding
lockbench-results.json) or a folder whose immediate subfolders are results trees. Writes
DIR/report.html (images embedded as PNG data URIs), DIR/report.md and DIR/report-images/*.png.
Everything is rendered into DIR/.report.tmp.<pid>/ first and moved in place only when all of it
succeeded; on any failure the previous report is left untouched. Exit 0 on success, 2 on an
error (one line on stderr naming the file and what is wrong).

Needs matplotlib and numpy (Debian: python3-matplotlib); run it with /usr/bin/python3.
"""

import base64
import datetime
import html
import io
import json
import math
import os
import re
import shutil
import sys

PROG = "lockbench report"
BUCKET_MS = 100.0        # throughput buckets
MAX_OTHER_LANES = 2      # timeline: clients shown besides the two involved
DPI = 100
NBSP = "\u00a0"


class Fail(Exception):
    """An error to report as one line: `lockbench report: WHERE: WHAT`."""

    def __init__(self, where, what):
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


# --------------------------------------------------------------------------------------------
# reading


def json_msg(e):
    """json's message without its dangling "at" ("Invalid control character at")."""
    return re.sub(r"\s+at$", "", e.msg)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise Fail(path, "missing (the results tree is incomplete: re-run or re-merge it)")
    except IsADirectoryError:
        raise Fail(path, "is a folder, expected a JSON file")
    except json.JSONDecodeError as e:
        raise Fail(path, f"not valid JSON (line {e.lineno} column {e.colno}: {json_msg(e)})")
    except UnicodeDecodeError as e:
        raise Fail(path, f"not UTF-8 text ({e.reason} at byte {e.start})")


def read_jsonl(path, keep=None):
    """Yield one dict per line; keep(line) may drop lines before they are parsed."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise Fail(path, "missing (the results tree is incomplete: re-run or re-merge it)")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if keep is not None and not keep(line):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise Fail(path, f"line {n}: not valid JSON ({json_msg(e)} at column {e.colno})")
            if not isinstance(obj, dict):
                raise Fail(path, f"line {n}: expected a JSON object")
            yield obj


def num(x, default=0.0):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else default


class Tree:
    def __init__(self, path, meta):
        self.path = path
        self.name = os.path.basename(os.path.normpath(path))
        self.meta = meta
        self.kind = meta["kind"]
        spath = os.path.join(path, "summary.json")
        s = load_json(spath)
        if not isinstance(s, dict) or s.get("format") != "lockbench-results" or s.get("version") not in (1, 2):
            raise Fail(spath, 'expected {"format": "lockbench-results", "version": 1 or 2, ...}, the summary '
                              "`lockbench matrix`/`sweep`/`merge` writes")
        if not isinstance(s.get("cells"), list):
            raise Fail(spath, 'has no "cells" list')
        self.summary = s
        self.spec_id = s.get("spec_id", meta.get("spec_id", "?"))
        self.sweep = s.get("sweep") if self.kind == "sweep" else None
        if self.kind == "sweep" and not isinstance(self.sweep, dict):
            raise Fail(spath, 'kind is "sweep" but there is no "sweep" object (scenario, path, values)')
        self.scenarios = {}
        for sc in s.get("scenarios", []) or []:
            if isinstance(sc, dict) and "name" in sc:
                self.scenarios[sc["name"]] = sc
        self.cells = []
        for i, c in enumerate(s["cells"]):
            if not isinstance(c, dict):
                raise Fail(spath, f"cells[{i}] is not an object")
            for key in ("scenario", "run"):
                if not isinstance(c.get(key), str):
                    raise Fail(spath, f'cells[{i}] has no "{key}" string')
            self.cells.append(Cell(self, c, i))
        # What lacks repetitions: as the summary records it (`merge --allow-incomplete`, or a
        # shard's own tree), else from the cells.
        recorded = s.get("incomplete_cells")
        ids = set(recorded) if isinstance(recorded, list) else {c.id for c in self.cells if c.partial or not c.reps}
        self.incomplete = [c for c in self.cells if c.id in ids or c.partial or not c.reps]
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
        self.agg = c.get("aggregate") or {}
        self._runs = {}

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

    def total(self, metric):
        """Total of a safety metric over the done reps (aggregate when present)."""
        aname = "violations" if metric == "mutual_exclusion_violations" else metric
        a = self.agg.get(aname)
        if isinstance(a, dict) and "total" in a:
            return num(a["total"])
        return sum(self.rep_metric(r, metric) for r in self.reps)

    def reps_with(self, *metrics):
        return sum(1 for r in self.reps if any(self.rep_metric(r, m) > 0 for m in metrics))

    def unavailable_mean(self):
        a = self.agg.get("unavailable_ms")
        if isinstance(a, dict) and "mean" in a:
            return num(a["mean"])
        return sum(self.rep_metric(r, "unavailable_ms") for r in self.reps) / len(self.reps) if self.reps else 0.0

    def unavailable_max(self):
        a = self.agg.get("unavailable_ms")
        if isinstance(a, dict) and "max" in a:
            return num(a["max"])
        return max((self.rep_metric(r, "unavailable_ms") for r in self.reps), default=0.0)

    def has_expectations(self):
        # A sweep runs its scenario at values its `expect` was not written for: not a verdict.
        if self.tree.kind == "sweep":
            return False
        if "has_expectations" in self.agg:
            return bool(self.agg["has_expectations"])
        return any(r.get("expectations") for r in self.reps)

    def expectations_held_reps(self):
        if "expectations_held_reps" in self.agg:
            return int(num(self.agg["expectations_held_reps"]))
        return sum(1 for r in self.reps if r.get("expectations_held"))

    def violation_rate(self):
        n = len(self.reps) or self.reps_done
        if "violation_rate" in self.agg:
            rate = num(self.agg["violation_rate"])
        else:
            rate = self.reps_with("mutual_exclusion_violations") / n if n else 0.0
        ci = self.agg.get("violation_rate_ci95")
        if not (isinstance(ci, list) and len(ci) == 2):
            k = self.reps_with("mutual_exclusion_violations")
            ci = wilson(k, n)
        return rate, [num(ci[0]), num(ci[1], 1.0)]

    def outcome(self):
        if self.reps_done == 0 or not self.reps:
            return "notrun"
        if any(r.get("clients_failed") for r in self.reps):
            return "failed"
        if self.total("mutual_exclusion_violations") > 0:
            return "violation"
        if any(self.total(m) > 0 for m in ("lost_updates", "stale_writes_accepted", "foreign_releases")):
            return "unsafe"
        if self.total("stale_writes_rejected") > 0:
            return "fenced"
        return "safe"

    def label_suffix(self):
        """What tells this cell apart from others of its variant in its scenario."""
        v = self.variant
        if self.run.startswith(v + "+"):
            return self.run[len(v) + 1:]
        return self.run


def wilson(k, n, z=1.96):
    if n <= 0:
        return [0.0, 1.0]
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return [max(0.0, c - h), min(1.0, c + h)]


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
        raise Fail(mpath, 'expected a JSON object {"format": "lockbench-results", "version": 2, ...}')
    if meta.get("format") != "lockbench-results":
        raise Fail(mpath, f'format is {json.dumps(meta.get("format"))}, expected "lockbench-results"')
    if meta.get("version") not in (1, 2):  # 2 added budget, incomplete_cells and shard to the summary
        raise Fail(mpath, f'version {json.dumps(meta.get("version"))} is not supported, expected 1 or 2 '
                          "(a newer lockbench wrote it: use the report.py of that version)")
    if meta.get("kind") not in ("matrix", "sweep"):
        raise Fail(mpath, f'kind is {json.dumps(meta.get("kind"))}, expected "matrix" or "sweep"')
    return Tree(p, meta)


# --------------------------------------------------------------------------------------------
# one rep's histories, on one time axis: ms since the run's first client event (CLOCK_MONOTONIC)


class Lease:
    __slots__ = ("lease", "client", "acq_ok", "validity", "fence", "rel_inv", "rel_end", "rel_type", "write_inv")

    def __init__(self, lease, client, acq_ok, validity, fence):
        self.lease, self.client, self.acq_ok, self.validity, self.fence = lease, client, acq_ok, validity, fence
        self.rel_inv = self.rel_end = self.rel_type = self.write_inv = None


class Section:
    __slots__ = ("lease", "client", "fence", "enter_seq", "enter", "write_seq", "write", "rejected",
                 "max_fence", "exit_seq", "exit", "closed_by_next")

    def __init__(self, e, t):
        self.lease, self.client, self.fence = e.get("lease"), e.get("client"), e.get("fence")
        self.enter_seq, self.enter = e.get("seq"), t
        self.write_seq = self.write = self.exit_seq = self.exit = self.max_fence = None
        self.rejected = False
        self.closed_by_next = False

    def end(self):
        for t in (self.exit, self.write):
            if t is not None:
                return t
        return self.enter


class Fault:
    __slots__ = ("label", "fault", "client", "node", "start", "end")

    def __init__(self, e, t):
        self.label = e.get("label") or e.get("fault", "fault")
        self.fault = e.get("fault", "?")
        self.client = e.get("client")
        self.node = e.get("node")
        self.start, self.end = t, None


def store_us(e):
    return int(num(e.get("t_s"), 0)) * 1_000_000 + int(num(e.get("t_usec"), 0))


class RepData:
    """The parsed histories of one rep (one `lockbench run` with one run)."""

    def __init__(self, cell, rep, full=True):
        self.cell, self.rep = cell, rep
        run = cell.run_of(rep)
        self.run = run
        rdir = os.path.join(cell.rep_path(rep), run.get("run_dir") or os.path.join("runs", run.get("name", cell.run)))
        self.dir = rdir
        hdir = os.path.join(rdir, "history")
        try:
            files = sorted(f for f in os.listdir(hdir) if f.endswith(".jsonl"))
        except FileNotFoundError:
            raise Fail(hdir, "missing (expected history/client-N.jsonl files of the run)")
        except NotADirectoryError:
            raise Fail(hdir, "not a folder")
        not_point = lambda line: '"op":"point"' not in line  # noqa: E731  (fault points: not needed)
        events = {}
        for f in files:
            path = os.path.join(hdir, f)
            evs = [e for e in read_jsonl(path, not_point) if isinstance(e.get("t_ns"), int) and e.get("op") != "point"]
            if evs:
                cl = evs[0].get("client", f)
                events[cl] = evs
        allfirst = [evs[0]["t_ns"] for evs in events.values()]
        self.t0 = min((min(e["t_ns"] for e in evs) for evs in events.values()), default=0) if allfirst else 0
        t0 = self.t0
        ms = lambda t: (t - t0) / 1e6  # noqa: E731
        self.clients = sorted(events, key=lambda c: (not isinstance(c, int), c if isinstance(c, int) else str(c)))
        self.acq_ok_dur, self.acq_fail_dur = [], []
        self.leases = {c: [] for c in self.clients}
        self.lease_by_id = {}
        self.client_last = {}
        reads = {}  # (client, lease) -> [(invoke_ns, ok_ns)]
        for c, evs in events.items():
            evs.sort(key=lambda e: e["t_ns"])
            pending = {}
            read_inv = {}
            cur = None
            for e in evs:
                op, ty, t = e.get("op"), e.get("type"), e["t_ns"]
                depth = e.get("depth", 1)
                if op == "acquire":
                    if ty == "invoke":
                        pending[depth] = t
                    elif depth in pending:
                        d = (t - pending.pop(depth)) / 1e6
                        if depth == 1:
                            (self.acq_ok_dur if ty == "ok" else self.acq_fail_dur).append(d)
                    if ty == "ok" and depth == 1 and e.get("lease"):
                        v = e.get("validity_ms")
                        cur = Lease(e["lease"], c, ms(t), num(v, None) if v is not None else None, e.get("fence"))
                        self.leases[c].append(cur)
                        self.lease_by_id.setdefault(e["lease"], cur)
                elif op == "release" and depth == 1:
                    lz = self.lease_by_id.get(e.get("lease"))
                    if lz is not None:
                        if ty == "invoke":
                            if lz.rel_inv is None:
                                lz.rel_inv = ms(t)
                        elif lz.rel_end is None:
                            lz.rel_end, lz.rel_type = ms(t), ty
                elif op == "write" and ty == "invoke":
                    lz = self.lease_by_id.get(e.get("lease"))
                    if lz is not None and lz.write_inv is None:
                        lz.write_inv = ms(t)
                elif op == "read":
                    key = (c, e.get("lease"))
                    if ty == "invoke":
                        read_inv[key] = t
                    elif ty == "ok" and key in read_inv:
                        reads.setdefault(key, []).append((read_inv.pop(key), t))
            if evs:
                self.client_last[c] = ms(evs[-1]["t_ns"])
        self.end_ms = max(self.client_last.values(), default=0.0)

        # the store, in its order; its clock (Redis TIME, CLOCK_REALTIME) mapped onto CLOCK_MONOTONIC
        spath = os.path.join(rdir, "store.jsonl")
        store = list(read_jsonl(spath))
        store.sort(key=lambda e: num(e.get("seq"), 0))
        diffs = []
        used = {}
        for e in store:
            if e.get("kind") == "enter":
                key = (e.get("client"), e.get("lease"))
                lst = reads.get(key)
                k = used.get(key, 0)
                if lst and k < len(lst):
                    inv, ok = lst[k]
                    diffs.append(store_us(e) * 1000 - (inv + ok) / 2)
                used[key] = k + 1
        if not diffs:
            # no section was entered: fall back on the clients' write round trips is not possible either
            self.offset_ns = None
            self.offset_n = 0
            self.offset_iqr_us = None
        else:
            diffs.sort()
            self.offset_ns = diffs[len(diffs) // 2]
            self.offset_n = len(diffs)
            q1, q3 = diffs[len(diffs) // 4], diffs[(3 * len(diffs)) // 4]
            self.offset_iqr_us = (q3 - q1) / 1000
        off = self.offset_ns

        def sms(e):
            return None if off is None else (store_us(e) * 1000 - off - t0) / 1e6

        self.write_ms = []
        self.sections = []
        self.sec_by_enter = {}
        self.rejects = []
        open_by_client = {}
        for e in store:
            kind, cl = e.get("kind"), e.get("client")
            t = sms(e)
            if kind == "enter":
                prev = open_by_client.get(cl)
                if prev is not None:
                    prev.closed_by_next = True
                s = Section(e, t)
                open_by_client[cl] = s
                self.sections.append(s)
                self.sec_by_enter[s.enter_seq] = s
            elif kind in ("write", "reject", "exit"):
                if kind == "write" and t is not None:
                    self.write_ms.append(t)
                s = open_by_client.get(cl)
                if s is None or s.lease != e.get("lease"):
                    continue
                if kind == "write":
                    s.write_seq, s.write = e.get("seq"), t
                elif kind == "reject":
                    s.write_seq, s.write, s.rejected = e.get("seq"), t, True
                    s.max_fence = e.get("max_fence")
                    self.rejects.append(s)
                else:
                    s.exit_seq, s.exit = e.get("seq"), t
                    open_by_client.pop(cl, None)
        if not full:
            self.sections = []
            self.sec_by_enter = {}

        # fault windows
        self.faults = []
        npath = os.path.join(rdir, "nemesis.jsonl")
        if os.path.exists(npath):
            openf = {}
            for e in sorted(read_jsonl(npath), key=lambda e: num(e.get("t_ns"), 0)):
                if e.get("op") != "fault" or not isinstance(e.get("t_ns"), int):
                    continue
                key = (e.get("label"), e.get("client"), e.get("node"))
                if e.get("type") == "start":
                    f = Fault(e, ms(e["t_ns"]))
                    self.faults.append(f)
                    openf.setdefault(key, []).append(f)
                elif e.get("type") == "end":
                    lst = openf.get(key)
                    if lst:
                        lst.pop(0).end = ms(e["t_ns"])
        # the failover, as Sentinel announced it (sentinel.jsonl): the master seen down by one
        # Sentinel (+sdown) until the replica is promoted (+switch-master)
        spath = os.path.join(rdir, "sentinel.jsonl")
        if os.path.exists(spath):
            down = None
            for e in sorted(read_jsonl(spath), key=lambda e: num(e.get("t_ns"), 0)):
                if e.get("op") != "sentinel" or not isinstance(e.get("t_ns"), int):
                    continue
                ev, detail = e.get("event"), str(e.get("detail", ""))
                if ev == "+sdown" and detail.startswith("master ") and down is None:
                    down = ms(e["t_ns"])
                elif ev == "+switch-master":
                    f = Fault({"fault": "failover", "label": "failover: Sentinel saw the master down (+sdown) until it "
                                                             "promoted the replica (+switch-master)"},
                              down if down is not None else ms(e["t_ns"]))
                    f.end = ms(e["t_ns"])
                    self.faults.append(f)
                    down = None
        av = run.get("availability") or {}
        self.unavail = [(num(w[0]), num(w[1])) for w in av.get("windows_ms") or [] if isinstance(w, list) and len(w) == 2]

    def sections_of(self, client, lo, hi):
        return [s for s in self.sections if s.client == client and s.enter is not None
                and s.end() >= lo and s.enter <= hi]

    def leases_of(self, client, lo, hi):
        out = []
        for lz in self.leases.get(client, []):
            end = self.lease_end(lz)
            if end >= lo and lz.acq_ok <= hi:
                out.append(lz)
        return out

    def lease_end(self, lz):
        for t in (lz.rel_end, lz.rel_inv):
            if t is not None:
                return t
        return self.client_last.get(lz.client, lz.acq_ok)


# --------------------------------------------------------------------------------------------
# plotting helpers

_plt = None


def plt():
    global _plt
    if _plt is None:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as p
            import numpy as np
            np.zeros(1)
        except ImportError as e:
            raise Fail(sys.executable, f"cannot import {e.name}: run report.py with /usr/bin/python3 "
                                       "(Debian's python3-matplotlib and python3-numpy)")
        p.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
                           "xtick.labelsize": 8, "ytick.labelsize": 8, "figure.dpi": DPI,
                           "font.family": "DejaVu Sans", "axes.spines.top": False, "axes.spines.right": False})
        _plt = p
    return _plt


OUTCOME = {
    "violation": ("#d7301f", "white", "mutual exclusion violated"),
    "unsafe": ("#fdae61", "black", "lost updates / stale writes accepted / foreign releases, no overlap"),
    "fenced": ("#7fb3d5", "black", "fence rejected stale writes, nothing unsafe"),
    "safe": ("#91cf60", "black", "no violation in any rep"),
    "notrun": ("#d9d9d9", "#444444", "not run"),
    "failed": ("#5a5a5a", "white", "clients failed (an adapter broke): not trusted"),
}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"]
_variant_colors = {}


def color_of(key):
    if key not in _variant_colors:
        _variant_colors[key] = PALETTE[len(_variant_colors) % len(PALETTE)]
    return _variant_colors[key]


def fmt_ms(v):
    if v is None:
        return "?"
    if v < 0:
        return "−" + fmt_ms(-v)
    if v == 0:
        return "0 ms"
    if v >= 10000:
        return f"{v / 1000:.1f} s"
    if v >= 1000:
        return f"{v / 1000:.2f} s"
    if v >= 10:
        return f"{v:.0f} ms"
    if v >= 1:
        return f"{v:.1f} ms"
    return f"{v:.2f} ms"


def fmt_n(v):
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def slug(s):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "x"


class Image_:
    def __init__(self, name, png, alt):
        self.name, self.png, self.alt = name, png, alt


def save_fig(fig, name, alt, outdir):
    """PNG of the figure, reduced to a 255-colour palette (a third of the size, no visible loss on plots)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt().close(fig)
    buf.seek(0)
    try:
        from PIL import Image
        img = Image.open(buf).convert("RGB")
        q = img.quantize(colors=255, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        out = io.BytesIO()
        q.save(out, format="PNG", optimize=True)
        data = out.getvalue()
    except Exception:  # PIL trouble: keep matplotlib's PNG
        data = buf.getvalue()
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)
    return Image_(name, data, alt)


# --------------------------------------------------------------------------------------------
# 1. verdict matrix


def matrix_layout(tree):
    """Rows (variant, sub-row count) and columns; grid[(variant, col)] = [cells]."""
    if tree.kind == "sweep":
        cols = []
        for c in tree.cells:
            key = c.step if c.step is not None else c.value
            if key not in [k for k, _ in cols]:
                cols.append((key, c.value))
        cols.sort(key=lambda kv: (num(kv[0], 0)))
        colkeys = [k for k, _ in cols]
        collabels = [fmt_n(v) if v is not None else f"step {k}" for k, v in cols]
        colof = lambda c: c.step if c.step is not None else c.value  # noqa: E731
    else:
        colkeys = list(tree.scenario_order)
        collabels = colkeys
        colof = lambda c: c.scenario  # noqa: E731
    grid = {}
    if tree.kind == "sweep":
        variants = []
        for label, _, cs in sweep_lines(tree):
            variants.append(label)
            for c in cs:
                grid.setdefault((label, colof(c)), []).append(c)
    else:
        variants = []
        for c in sorted(tree.cells, key=lambda c: c.index):
            if c.variant not in variants:
                variants.append(c.variant)
        variants.sort(key=variant_key)
        for c in sorted(tree.cells, key=lambda c: c.index):
            grid.setdefault((c.variant, colof(c)), []).append(c)
    sub = {v: max(len(grid.get((v, k), [])) for k in colkeys) or 1 for v in variants}
    return variants, sub, colkeys, collabels, grid


ALGO_ORDER = ["setnx", "getset", "token-lua", "redlock", "reentrant"]


def variant_key(v):
    alg = v.split("+")[0]
    return (ALGO_ORDER.index(alg) if alg in ALGO_ORDER else len(ALGO_ORDER), alg, v != alg, v)


_measure = {}


def text_width_in(text, size):
    """Width of text in inches at font size (points), as matplotlib will draw it."""
    key = (text, size)
    if key not in _measure:
        from matplotlib.textpath import TextToPath
        from matplotlib.font_manager import FontProperties
        w, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(family="DejaVu Sans", size=size), ismath=False)
        _measure[key] = w / 72.0
    return _measure[key]


def wrap_lines(lines, width_in, size):
    """Break lines that are wider than width_in: at " · ", then spaces, then before "+" or "-"."""
    out = []
    for ln in lines:
        while ln and text_width_in(ln, size) > width_in:
            cuts = []
            for sep, keep in ((" · ", False), (" ", False), ("+", True), ("-", True)):
                i = ln.find(sep, 1)
                while i > 0:
                    cuts.append((i, sep, keep))
                    i = ln.find(sep, i + 1)
            fit = [c for c in cuts if text_width_in(ln[:c[0]], size) <= width_in]
            if not fit:
                # nothing fits: cut the word
                k = len(ln)
                while k > 1 and text_width_in(ln[:k] + "…", size) > width_in:
                    k -= 1
                out.append(ln[:k] + "…")
                ln = ""
                break
            i, sep, keep = max(fit, key=lambda c: c[0])
            out.append(ln[:i])
            ln = ln[i:] if keep else ln[i + len(sep):]
        if ln:
            out.append(ln)
    return out


def cell_lines(c, multi):
    o = c.outcome()
    n = len(c.reps)
    lines = []
    if multi:
        lines.append(c.label_suffix())
    if o == "notrun":
        lines += ["not run", f"0/{c.repeat or '?'} reps"]
        return o, lines
    if o == "failed":
        lines.append("clients failed")
        lines.append(f"{sum(1 for r in c.reps if r.get('clients_failed'))}/{n} reps")
    elif o == "violation":
        lines.append(f"{fmt_n(c.total('mutual_exclusion_violations'))} viol")
        lines.append(f"{c.reps_with('mutual_exclusion_violations')}/{n} reps")
    elif o == "unsafe":
        parts = []
        for m, short in (("lost_updates", "lost"), ("stale_writes_accepted", "stale"), ("foreign_releases", "foreign")):
            if c.total(m) > 0:
                parts.append(f"{fmt_n(c.total(m))} {short}")
        lines.append(" · ".join(parts[:2]))
        lines.append(f"{c.reps_with('lost_updates', 'stale_writes_accepted', 'foreign_releases')}/{n} reps")
    elif o == "fenced":
        lines.append(f"{fmt_n(c.total('stale_writes_rejected'))} rejected")
        lines.append(f"0 viol · {n} reps")
    else:
        lines.append("0 viol")
        lines.append(f"{n} reps")
    if c.partial:
        lines[-1] += f" of {c.repeat}"
    um = c.unavailable_mean()
    if um > 0:
        lines.append(f"unavail {fmt_ms(um).replace(' ', NBSP)}")
    return o, lines


def expect_mark(c):
    if not c.reps or not c.has_expectations():
        return None
    return "✓" if c.expectations_held_reps() == len(c.reps) and not c.partial else (
        "✗" if c.expectations_held_reps() < len(c.reps) else "…")


def draw_matrix(tree, outdir):
    p = plt()
    from matplotlib.patches import Rectangle, Patch
    variants, sub, colkeys, collabels, grid = matrix_layout(tree)
    ncols = len(colkeys)
    nrows = sum(sub.values())
    label_w = 1.75
    cw = max(0.74, min(1.3, (11.8 - label_w - 0.2) / max(ncols, 1)))
    rh = 0.5
    top_h = 1.15 if tree.kind == "matrix" else 0.75
    bottom_h = 0.85
    W = max(label_w + ncols * cw + 0.25, 10.4)  # never narrower than the legend below it
    H = top_h + nrows * rh + bottom_h
    fig = p.figure(figsize=(W, H))
    ax = fig.add_axes([label_w / W, bottom_h / H, ncols * cw / W, nrows * rh / H])
    ax.set_xlim(0, ncols)
    ax.set_ylim(nrows, 0)
    ax.axis("off")
    fs = 7.2 if cw < 0.9 else 8
    y = 0
    for v in variants:
        k = sub[v]
        ax.text(-0.08, y + k / 2, v.replace("+", "\n+", 1) if len(v) > 22 else v, ha="right", va="center",
                fontsize=8.5, fontweight="bold")
        for j, key in enumerate(colkeys):
            cells = grid.get((v, key), [])
            if not cells:
                ax.add_patch(Rectangle((j, y), 1, k, facecolor="white", edgecolor="#bbbbbb", lw=0.6))
                ax.text(j + 0.5, y + k / 2, "–", ha="center", va="center", color="#aaaaaa", fontsize=fs)
                continue
            h = k / len(cells)
            for i, c in enumerate(cells):
                y0 = y + i * h
                o, lines = cell_lines(c, len(cells) > 1)
                bg, fg, _ = OUTCOME[o]
                ax.add_patch(Rectangle((j, y0), 1, h, facecolor=bg, edgecolor="white", lw=1.5))
                if c.partial and o != "notrun":
                    ax.add_patch(Rectangle((j + 0.04, y0 + 0.06), 0.92, h - 0.12, facecolor="none",
                                           edgecolor="#333333", lw=1.4, ls=(0, (3, 2))))
                lines = wrap_lines(lines, cw * 0.92, fs)
                maxl = max(1, int(h * rh * 72 / (fs * 1.2)))
                if len(lines) > maxl:
                    lines = lines[:maxl]
                ax.text(j + 0.5, y0 + h / 2, "\n".join(lines), ha="center", va="center", color=fg, fontsize=fs,
                        linespacing=1.15)
                m = expect_mark(c)
                if m:
                    col = {"✓": "#1a7f37", "✗": "#b00020", "…": "#666666"}[m]
                    ax.text(j + 0.97, y0 + 0.05, m, ha="right", va="top", color=col, fontsize=fs + 0.5,
                            fontweight="bold", bbox=dict(boxstyle="circle,pad=0.12", fc="white", ec="none", alpha=0.9))
        ax.plot([0, ncols], [y, y], color="#888888", lw=0.6)
        y += k
    ax.plot([0, ncols], [nrows, nrows], color="#888888", lw=0.6)
    for j, lab in enumerate(collabels):
        if tree.kind == "matrix":
            ax.text(j + 0.5, -0.12, lab, rotation=30, ha="left", va="bottom", fontsize=8.5, rotation_mode="anchor")
        else:
            ax.text(j + 0.5, -0.12, lab, ha="center", va="bottom", fontsize=8.5)
    if tree.kind == "sweep":
        ax.text(ncols / 2, -0.75, f"{tree.sweep.get('scenario', '')}: {tree.sweep.get('path', '')} =",
                ha="center", va="bottom", fontsize=9)
    shown = ("violation", "unsafe", "fenced", "safe", "notrun")
    if any(c.outcome() == "failed" for c in tree.cells):
        shown += ("failed",)
    handles = [Patch(facecolor=OUTCOME[o][0], edgecolor="none", label=OUTCOME[o][2]) for o in shown]
    handles.append(Patch(facecolor="white", edgecolor="#333333", ls="--", lw=1.4, label="dashed frame: partial, fewer reps than planned"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.01, 0.22 / H), ncol=3, frameon=False, fontsize=8)
    fig.text(0.015, 0.06 / H, "✓ the run's expectations held in every rep   ✗ failed in some rep   … held in the reps "
             "done, some not run   (no mark: no expectation)   – : the variant is not in this column",
             ha="left", va="bottom", fontsize=8)
    name = f"{tree.slug}-verdict-matrix.png"
    return save_fig(fig, name, f"verdict matrix of {tree.name}", outdir)


def matrix_text(tree, c):
    o, lines = cell_lines(c, False)
    m = expect_mark(c) or ""
    return o, " · ".join(lines) + (f" {m}" if m else "")


# --------------------------------------------------------------------------------------------
# 2. timeline of a witness


def find_focus(cell):
    """(kind, rep, witness-or-None) for the cell's most telling case, or None."""
    for kind in ("mutual_exclusion", "stale_write", "reject", "foreign_release"):
        for rep in cell.reps:
            run = cell.run_of(rep)
            if kind == "reject":
                if num((run.get("safety") or {}).get("stale_writes_rejected"), 0) > 0:
                    return kind, rep, None
                continue
            for w in run.get("witnesses") or []:
                if isinstance(w, dict) and w.get("kind") == kind:
                    return kind, rep, w
    return None


KIND_TITLE = {
    "mutual_exclusion": "two holders in the store",
    "stale_write": "a stale write accepted",
    "reject": "the fence rejects a stale write",
    "foreign_release": "a release deletes another holder's lock",
}


def draw_timeline(cell, focus, rd, outdir, name):
    """Returns (Image_, caption) or (None, reason)."""
    p = plt()
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.lines import Line2D
    kind, rep, w = focus
    if rd.offset_ns is None:
        return None, "no critical section was entered, so the store's clock cannot be placed on the clients' axis"
    A = B = None
    release_t = None
    if kind in ("mutual_exclusion", "stale_write"):
        A = rd.sec_by_enter.get((w.get("first") or {}).get("enter_seq"))
        B = rd.sec_by_enter.get((w.get("second") or {}).get("enter_seq"))
    elif kind == "reject":
        if rd.rejects:
            A = rd.rejects[0]
            B = next((s for s in rd.sections if s.enter_seq > A.enter_seq and s.lease != A.lease), None)
    elif kind == "foreign_release":
        rel = w.get("releaser") or {}
        vic = w.get("victim") or {}
        A = rd.sec_by_enter.get(rel.get("enter_seq")) or next((s for s in rd.sections if s.lease == rel.get("lease")), None)
        B = rd.sec_by_enter.get(vic.get("enter_seq")) or next((s for s in rd.sections if s.lease == vic.get("lease")), None)
        release_t = num(w.get("release_t_ms"), None)
    if A is None or B is None:
        return None, "the witness's sections are not in the store log"
    LA, LB = rd.lease_by_id.get(A.lease), rd.lease_by_id.get(B.lease)
    watchdog = cell.algorithm == "reentrant" and (cell.raw.get("params") or {}).get("watchdog", True) is not False

    def believed_end(lz):
        end = rd.lease_end(lz)
        if lz.validity is not None and not watchdog:
            return min(end, lz.acq_ok + lz.validity)
        return end

    starts = [A.enter, B.enter] + [lz.acq_ok for lz in (LA, LB) if lz is not None]
    ends = [A.end(), B.end()] + ([release_t] if release_t is not None else [])
    if A.exit is None and A.write is None:
        ends.append(rd.client_last.get(A.client, A.enter))
    lo, hi = min(starts), max(ends)
    span = max(hi - lo, 1.0)
    margin = max(0.05 * span, 0.5)
    lo, hi = lo - margin, hi + margin
    lanes = []
    for c in (A.client, B.client):
        if c not in lanes:
            lanes.append(c)
    others = []
    for c in rd.clients:
        if c in lanes:
            continue
        k = len(rd.sections_of(c, lo, hi))
        if k:
            others.append((-k, str(c), c))
    others.sort()
    lanes += [c for _, _, c in others[:MAX_OTHER_LANES]]
    hidden = len(others) - min(len(others), MAX_OTHER_LANES)
    n = len(lanes)
    fenced_pair = A.rejected or B.rejected
    ov_col = "#0050b3" if fenced_pair else "#d7301f"

    ov_lo, ov_hi = max(A.enter, B.enter), min(A.end(), B.end())
    has_overlap = ov_hi >= ov_lo and kind != "foreign_release"
    zoom = has_overlap and (ov_hi - ov_lo) < 0.04 * (hi - lo)

    # faults seen in the window, numbered
    shown_faults = []
    for f in rd.faults:
        if f.start > hi or (f.end is not None and f.end < lo):
            continue  # (a fault without an end that began earlier is still in force: listed)
        shown_faults.append(f)

    title_h, lane_h, axis_h, legend_h = 0.55, 0.7, 0.55, 0.62
    faults_h = 0.17 * len(shown_faults)
    ax_h = lane_h * n + 0.35
    H = title_h + ax_h + axis_h + faults_h + legend_h
    W = 11.0
    fig = p.figure(figsize=(W, H))
    bottom = (axis_h + faults_h + legend_h) / H
    top = 1 - title_h / H
    if zoom:
        gs = fig.add_gridspec(1, 2, width_ratios=[3.3, 1], wspace=0.05, left=0.1, right=0.985, bottom=bottom, top=top)
        axes = [fig.add_subplot(gs[0])]
        axes.append(fig.add_subplot(gs[1], sharey=axes[0]))
    else:
        gs = fig.add_gridspec(1, 1, left=0.1, right=0.985, bottom=bottom, top=top)
        axes = [fig.add_subplot(gs[0])]
    role = {A.lease: "A", B.lease: "B"}
    col = color_of(cell.variant)
    fault_col = "#9e9e9e"

    def draw(ax, xlo, xhi, annotate):
        ax.set_xlim(xlo, xhi)
        ax.set_ylim(n - 0.45, -0.75)
        for i, c in enumerate(lanes):
            ax.axhline(i + 0.5, color="#e0e0e0", lw=0.6, zorder=0)
            for lz in rd.leases_of(c, xlo, xhi):
                end = rd.lease_end(lz)
                bel = believed_end(lz)
                hl = lz.lease in role
                ax.add_patch(Rectangle((lz.acq_ok, i - 0.42), max(bel - lz.acq_ok, 0), 0.3, facecolor=col,
                                       alpha=0.9 if hl else 0.35, edgecolor="none", zorder=2))
                if end > bel:
                    ax.add_patch(Rectangle((lz.acq_ok, i - 0.42), end - lz.acq_ok, 0.3, facecolor="none",
                                           edgecolor=col, lw=1.1 if hl else 0.6, ls="--", zorder=2))
                if hl and lz.write_inv is not None:
                    ax.plot([lz.write_inv], [i - 0.27], marker="v", color="black", ms=6, mec="white", mew=0.6, zorder=6)
                if hl and annotate:
                    txt = f"{role[lz.lease]}: lease {lz.lease}"
                    if lz.fence is not None:
                        txt += f", fence {lz.fence}"
                    if lz.validity is not None:
                        txt += f", validity {fmt_ms(lz.validity)}"
                    if lz.rel_end is None and lz.rel_inv is None:
                        txt += ", never released"
                    if lz.acq_ok > xlo + 0.55 * (xhi - xlo):
                        tx, ha = min(max(end, lz.acq_ok), xhi), "right"
                    else:
                        tx, ha = max(lz.acq_ok, xlo), "left"
                    ax.text(tx, i - 0.44, txt, fontsize=7.5, va="bottom", ha=ha, zorder=7,
                            clip_on=True, bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.4))
            for s in rd.sections_of(c, xlo, xhi):
                hl = s.lease in role
                end = s.end()
                ax.add_patch(Rectangle((s.enter, i - 0.06), max(end - s.enter, 0), 0.3,
                                       facecolor="#2b2b2b" if hl else "#9a9a9a", edgecolor="none", zorder=3))
                if s.write is not None:
                    if s.rejected:
                        ax.plot([s.write], [i + 0.09], marker="X", color="#0050b3", ms=10, mec="white", mew=0.8, zorder=6)
                    elif hl:
                        stale = (kind == "stale_write" and s is A)
                        ax.plot([s.write, s.write], [i - 0.12, i + 0.3], color="#d7301f" if stale else "black",
                                lw=2.2, zorder=6, solid_capstyle="butt")
        # faults
        for k, f in enumerate(shown_faults):
            if f.fault in ("pause", "kill", "gate") and f.client in lanes:
                i = lanes.index(f.client)
                if f.end is not None:
                    ax.add_patch(Rectangle((f.start, i - 0.5), f.end - f.start, 1.0, facecolor=fault_col, alpha=0.22,
                                           hatch="xx", edgecolor="#777777", lw=0, zorder=1))
                else:
                    ax.plot([f.start, f.start], [i - 0.5, i + 0.5], color="black", lw=2.5, zorder=5)
            elif f.end is not None:
                ax.axvspan(f.start, f.end, color=fault_col, alpha=0.18, lw=0, zorder=0)
            else:
                ax.axvline(f.start, color="#444444", lw=1.4, ls=":", zorder=1)
            if annotate:
                ax.annotate(str(k + 1), (max(f.start, xlo), 1.0), xycoords=ax.get_xaxis_transform(), xytext=(1 + 13 * sum(
                    1 for g in shown_faults[:k] if abs(max(g.start, xlo) - max(f.start, xlo)) < 0.02 * (xhi - xlo)), 3),
                    textcoords="offset points", fontsize=7, ha="left", va="bottom", color="white", fontweight="bold",
                    bbox=dict(boxstyle="circle,pad=0.15", fc="#555555", ec="none"), zorder=8, annotation_clip=False)
        if has_overlap:
            ax.axvspan(ov_lo, max(ov_hi, ov_lo + (xhi - xlo) * 0.002), facecolor="none", edgecolor=ov_col,
                       hatch="////", lw=0.0, alpha=0.75, zorder=1)
            for x in (ov_lo, ov_hi):
                ax.axvline(x, color=ov_col, lw=0.8, zorder=1)
        if release_t is not None:
            ax.axvline(release_t, color="#ff7f00", lw=1.8, zorder=5)
        ax.set_yticks(range(n))
        ax.tick_params(axis="y", length=0)
        ax.spines["left"].set_visible(False)

    draw(axes[0], lo, hi, True)
    axes[0].set_yticklabels([f"client {c}" + (f" ({'A' if c == A.client else 'B'})" if c in (A.client, B.client) and A.client != B.client else "")
                             for c in lanes])
    ax = axes[0]
    # what happened to A's write, in words on the plot
    if A.write is not None and A.client in lanes:
        i = lanes.index(A.client)
        right = A.write > lo + 0.6 * (hi - lo)
        if A.rejected:
            txt = f"A's write rejected: fence {A.fence} < {A.max_fence} " if A.max_fence is not None else "A's write rejected "
        elif LA is not None and LA.validity is not None and not watchdog and A.write > LA.acq_ok + LA.validity:
            txt = f"A's write lands {fmt_ms(A.write - (LA.acq_ok + LA.validity))} after its validity ran out "
        else:
            txt = None
        if txt:
            ax.text(A.write, i + 0.38, (txt if right else " " + txt.strip()), fontsize=7.5, color=ov_col if A.rejected else "#b00020",
                    ha="right" if right else "left", va="center", zorder=8, clip_on=True,
                    bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.3))
    if release_t is not None:
        ax.text(release_t, n - 0.5, f" A's release deletes B's lock ({B.lease}) ", color="#e06000", fontsize=7.5,
                va="bottom", ha="right" if release_t > lo + 0.6 * (hi - lo) else "left", zorder=8,
                bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.3))
    ax.set_xlabel("ms since the run's first client event (CLOCK_MONOTONIC)")
    if zoom:
        zs = max(ov_hi - ov_lo, 0.05)
        zlo, zhi = ov_lo - 1.5 * zs - 0.3, ov_hi + 1.5 * zs + 0.3
        draw(axes[1], zlo, zhi, False)
        axes[1].tick_params(axis="y", labelleft=False)
        axes[1].set_title("zoom on the overlap", fontsize=8.5, pad=3)
        axes[1].set_xlabel("ms")
        axes[0].axvspan(zlo, zhi, facecolor="none", edgecolor="#666666", ls="--", lw=0.8, zorder=7)
    title = f"{cell.id}: {KIND_TITLE[kind]} (rep {rep.get('rep', '?')}, seed {rep.get('seed', '?')})"
    fig.text(0.012, 1 - 0.1 / H, title, fontsize=10, fontweight="bold", va="top")
    y = (legend_h + faults_h) / H - 0.03 / H
    for k, f in enumerate(shown_faults):
        when = f"{f.start:.1f} ms" + (f" → {f.end:.1f} ms" if f.end is not None else
                                      (" (no end; before this window, still in force)" if f.start < lo else " (no end)"))
        fig.text(0.1, y - k * 0.17 / H, f"fault {k + 1}: {f.label}, {when}", fontsize=7.5, va="top", color="#333333")
    handles = [Patch(facecolor=col, alpha=0.9, label="lease as the client believed it (" + (
                   "watchdog: until release)" if watchdog else "to validity end)")),
               Patch(facecolor="none", edgecolor=col, ls="--", label="held past validity, until release"),
               Line2D([], [], marker="v", color="black", ls="none", ms=6, label="client sends its write"),
               Patch(facecolor="#2b2b2b", label="critical section at the store (enter → exit)"),
               Line2D([], [], color="black", lw=2, label="write accepted by the store"),
               Line2D([], [], marker="X", color="#0050b3", ls="none", ms=8, label="write rejected by the fence"),
               Patch(facecolor=fault_col, alpha=0.35, hatch="xx", edgecolor="#777777", label="fault window (numbered)"),
               Patch(facecolor="none", edgecolor=ov_col, hatch="////", label="A and B both inside at the store")]
    if kind == "stale_write":
        handles.insert(5, Line2D([], [], color="#d7301f", lw=2, label="A's stale write, accepted"))
    if release_t is not None:
        handles.append(Line2D([], [], color="#ff7f00", lw=2, label="A's release removes B's lock"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.09, 0.0), ncol=3, frameon=False, fontsize=7.5,
               handlelength=1.8, columnspacing=1.2)
    img = save_fig(fig, name, f"timeline {cell.id}", outdir)

    def sec_txt(s):
        t = f"lease {s.lease} (client {s.client}) entered at store seq {s.enter_seq}"
        if s.rejected:
            t += f", its write (fence {s.fence}) rejected at seq {s.write_seq} (the store had seen fence {s.max_fence})"
        elif s.write_seq is not None:
            t += f", wrote at seq {s.write_seq}"
        if s.exit_seq is not None:
            t += f", left at seq {s.exit_seq}"
        return t

    a_end = A.exit_seq or A.write_seq or A.enter_seq
    over = sum(1 for s in rd.sections if s.lease != A.lease and s.enter_seq is not None and A.enter_seq < s.enter_seq < a_end)
    cap = [f"Rep {rep.get('rep', '?')} (seed {rep.get('seed', '?')}) of {cell.run}, "]
    if kind == "mutual_exclusion":
        cap.append(f"its first mutual-exclusion witness: A = {sec_txt(A)}; B = {sec_txt(B)}. ")
    elif kind == "stale_write":
        cap.append(f"its first stale-write witness: A = {sec_txt(A)}; B = {sec_txt(B)}, entered before A's write. ")
    elif kind == "reject":
        cap.append(f"its first fence rejection: A = {sec_txt(A)}; B = {sec_txt(B)}, the first other lease in after A. ")
    else:
        cap.append(f"its first foreign-release witness: A (releaser) = {sec_txt(A)}; B (victim) = {sec_txt(B)}. ")
    if over > 1:
        cap.append(f"While A was inside, {over} sections of other leases entered the store. ")
    cap.append(f"Store times (Redis TIME, CLOCK_REALTIME) are mapped onto the clients' CLOCK_MONOTONIC axis by one "
               f"offset: the median over {rd.offset_n} sections of the store's enter time minus the midpoint of the "
               f"client's enter call (read invoke → ok); interquartile spread {rd.offset_iqr_us:.0f} µs. ")
    cap.append("A lease is drawn from the client's acquire ok to its release" +
               (" (the watchdog renews the lease, so the client believes it until then)" if watchdog else
                ", filled up to the validity the algorithm reported") + ". ")
    if hidden > 0:
        cap.append(f"{hidden} more client(s) active in this window are not shown. ")
    return img, "".join(cap)


# --------------------------------------------------------------------------------------------
# 3. latency CDF and throughput over time


def draw_latency(scen_key, title, cells, datas, outdir, name):
    p = plt()
    import numpy as np
    fig, axes = p.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    any_line = [False, False]
    seen = {}
    for c in cells:
        dup = seen.get(c.variant, 0)
        seen[c.variant] = dup + 1
        ls = ["-", "--", ":", "-."][dup % 4]
        oks, fails = [], []
        for rd in datas.get(c.id, []):
            oks += rd.acq_ok_dur
            fails += rd.acq_fail_dur
        for k, vals in enumerate((oks, fails)):
            if not vals:
                continue
            v = np.sort(np.maximum(np.asarray(vals, dtype=float), 1e-3))
            y = np.arange(1, len(v) + 1) / len(v)
            axes[k].step(v, y, where="post", color=color_of(c.variant), lw=1.4, ls=ls,
                         label=f"{c.run} (n={len(v)}, p50 {fmt_ms(float(np.median(v)))})")
            any_line[k] = True
    for k, t in enumerate(("acquire attempts that succeeded", "attempts that failed or timed out")):
        ax = axes[k]
        ax.set_xscale("log")
        ax.set_title(t)
        ax.set_xlabel("acquire latency, invoke → reply (ms, log scale)")
        ax.grid(True, which="major", color="#eeeeee")
        if any_line[k]:
            ax.legend(loc="lower right", fontsize=7, frameon=False)
        else:
            ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", color="#888888")
    axes[0].set_ylabel("share of attempts ≤ x")
    axes[0].set_ylim(0, 1.02)
    fig.suptitle(f"{title}: acquire latency CDF, pooled over reps", fontsize=10, x=0.06, ha="left")
    fig.tight_layout()
    return save_fig(fig, name, f"acquire latency CDF {title}", outdir)


def draw_throughput(title, cells, datas, outdir, name):
    p = plt()
    import numpy as np
    from matplotlib.patches import Patch
    rows = [c for c in cells if datas.get(c.id)]
    n = len(rows)
    fig, axes = p.subplots(n, 1, figsize=(11, 0.9 + 1.05 * n + 0.35), sharex=True, squeeze=False)
    axes = axes[:, 0]
    tmax = max((rd.end_ms for c in rows for rd in datas[c.id]), default=1.0)
    edges = np.arange(0, tmax + BUCKET_MS, BUCKET_MS)
    ymax_all = 1
    for ax, c in zip(axes, rows):
        rds = datas[c.id]
        for rd in rds[1:]:
            h, _ = np.histogram(rd.write_ms, bins=edges)
            ax.stairs(h, edges, color="#555555", lw=0.7, alpha=0.7, zorder=4)
            ymax_all = max(ymax_all, h.max() if len(h) else 0)
        rd = rds[0]
        h, _ = np.histogram(rd.write_ms, bins=edges)
        ymax_all = max(ymax_all, h.max() if len(h) else 0)
        ax.stairs(h, edges, fill=True, color=color_of(c.variant), alpha=0.35, lw=0, zorder=2)
        ax.stairs(h, edges, color=color_of(c.variant), lw=1.3, zorder=3)
        for a, b in rd.unavail:
            ax.axvspan(a, b, ymin=0, ymax=1, color="#d7301f", alpha=0.13, lw=0)
            ax.axvspan(a, b, ymin=0, ymax=0.06, color="#d7301f", alpha=0.9, lw=0)
        labels_done = set()
        placed = []
        for f in rd.faults:
            end = f.end if f.end is not None else None
            if end is not None and end > f.start:
                ax.axvspan(f.start, end, color="#777777", alpha=0.18, lw=0, hatch="xx")
            else:
                ax.axvline(f.start, color="#333333", lw=1.0, ls=":")
            if f.fault not in labels_done:
                fx = max(f.start, 0.0)
                near = sum(1 for x in placed if abs(x - fx) < 0.05 * tmax)
                ax.text(fx, 0.97 - 0.22 * near, " " + f.fault, transform=ax.get_xaxis_transform(), fontsize=7,
                        va="top", color="#333333", style="italic", clip_on=True)
                labels_done.add(f.fault)
                placed.append(fx)
        txt = f"{c.run}  ·  rep {rd.rep.get('rep', '?')}"
        if len(rds) > 1:
            txt += f" (grey: reps {', '.join(str(r.rep.get('rep', '?')) for r in rds[1:])})"
        if rd.unavail:
            txt += f"  ·  unavailable {fmt_ms(sum(b - a for a, b in rd.unavail))}"
        ax.text(0.005, 1.0, txt, transform=ax.transAxes, fontsize=8, va="bottom", ha="left")
        ax.grid(True, axis="y", color="#eeeeee")
    for ax in axes:
        ax.set_ylim(0, ymax_all * 1.15 + 0.5)
        ax.set_xlim(0, tmax)
    axes[n // 2].set_ylabel(f"sections completed per {BUCKET_MS:.0f} ms")
    axes[-1].set_xlabel("ms since the run's first client event")
    handles = []
    if any(rd.faults for c in rows for rd in datas[c.id][:1]):
        handles.append(Patch(facecolor="#777777", alpha=0.35, hatch="xx", label="fault window (dotted line: a fault without an end)"))
    if any(rd.unavail for c in rows for rd in datas[c.id][:1]):
        handles.append(Patch(facecolor="#d7301f", alpha=0.5, label="lock unavailable (checker's windows)"))
    if handles:
        fig.legend(handles=handles, loc="lower right", ncol=2, frameon=False, fontsize=7.5)
    fig.suptitle(f"{title}: throughput and availability over time", fontsize=10, x=0.06, ha="left")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return save_fig(fig, name, f"throughput {title}", outdir)


# --------------------------------------------------------------------------------------------
# 4. sweep: phase diagram


def sweep_lines(tree):
    """[(label, key, [cells by value])]: one line per run of the swept scenario, i.e. per position
    within a step (every step runs the same runs in the same order). Labelled by the variant; when
    the sweep changes the variant itself (a swept non-duration parameter), without that parameter."""
    bystep = {}
    for c in sorted(tree.cells, key=lambda c: c.index):
        bystep.setdefault(c.step if c.step is not None else c.value, []).append(c)
    lines = {}
    for cs in bystep.values():
        for k, c in enumerate(cs):
            lines.setdefault(k, []).append(c)
    param = str((tree.sweep or {}).get("path", "")).split(".")[-1]
    out = []
    for k in sorted(lines):
        cs = sorted(lines[k], key=lambda c: num(c.value, 0))
        vs = {c.variant for c in cs}
        if len(vs) == 1:
            label = cs[0].variant
        else:
            label = re.sub(r"\+" + re.escape(param) + r"=[^+]*", "", cs[0].variant) if param else cs[0].algorithm
        out.append([label, k, cs])
    seen = {}
    for ln in out:
        seen[ln[0]] = seen.get(ln[0], 0) + 1
    for ln in out:
        if seen[ln[0]] > 1:
            ln[0] = f"{ln[0]} [{ln[2][0].label_suffix()}]"
    return [(label, label, cs) for label, k, cs in out]


def boundary(cs):
    """(x, lo_value, hi_value) between the last rate-0 step and the first step with rate > 0 after it."""
    pts = [(num(c.value), c.violation_rate()[0]) for c in cs if c.reps]
    for (v0, r0), (v1, r1) in zip(pts, pts[1:]):
        if r0 == 0 and r1 > 0:
            return (v0 + v1) / 2, v0, v1
    return None


def draw_phase(tree, outdir):
    p = plt()
    sw = tree.sweep
    lines = sweep_lines(tree)
    fig, axes = p.subplots(1, 2, figsize=(11, 4.2 + 0.2 * ((len(lines) + 3) // 4)))
    nlines = max(len(lines), 1)
    allx = [num(c.value) for c in tree.cells]
    xspan = (max(allx) - min(allx)) if allx and max(allx) > min(allx) else 1.0
    ax = axes[0]
    bounds = []
    for li, (label, key, cs) in enumerate(lines):
        pts = [(num(c.value), *c.violation_rate(), c) for c in cs if c.reps]
        if not pts:
            continue
        col = color_of(key)
        xs = [x for x, _, _, _ in pts]
        # lines that agree would hide each other's error bars: offset them a little sideways
        dx = (li - (nlines - 1) / 2) * 0.012 * xspan
        ys = [r for _, r, _, _ in pts]
        lo = [r - ci[0] for _, r, ci, _ in pts]
        hi = [ci[1] - r for _, r, ci, _ in pts]
        ax.errorbar([x + dx for x in xs], ys, yerr=[lo, hi], color=col, marker="o", ms=4, lw=1.5, capsize=3,
                    label=label, alpha=0.9)
        for x, r, _, c in pts:
            if c.partial:
                ax.plot([x], [r], marker="o", mfc="white", mec=col, ms=6)
        b = boundary(cs)
        if b:
            bounds.append((b, col, label))
    merged = {}
    for (bx, v0, v1), col, label in bounds:
        merged.setdefault((bx, v0, v1), []).append((col, label))
    for k, ((bx, v0, v1), who) in enumerate(sorted(merged.items())):
        col = who[0][0] if len(who) == 1 else "#333333"
        for a in axes:
            a.axvline(bx, color=col, ls="--", lw=1.2, zorder=1)
        ax.text(bx, 0.62 - 0.16 * (k % 4), f" boundary: between {fmt_n(v0)} and {fmt_n(v1)}\n "
                + ", ".join(lab for _, lab in who), color=col, fontsize=7.5, va="center", ha="left", zorder=6,
                bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.5))
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(sw.get("path", "swept value"))
    ax.set_ylabel("violation rate (share of reps with ≥ 1 violation)")
    ax.set_title("violation rate, 95% interval (Wilson)")
    ax.grid(True, color="#eeeeee")

    ax2 = axes[1]
    for label, key, cs in lines:
        pts = [(num(c.value), c.unavailable_mean(), c.unavailable_max()) for c in cs if c.reps]
        if not pts:
            continue
        col = color_of(key)
        ax2.plot([x for x, _, _ in pts], [m for _, m, _ in pts], color=col, marker="o", ms=4, lw=1.5, label=label)
        ax2.plot([x for x, _, _ in pts], [m for _, _, m in pts], color=col, marker="v", mfc="none", ms=6, lw=0)
    if not any(c.unavailable_max() > 0 for c in tree.cells if c.reps):
        ax2.set_ylim(0, 1)
        ax2.text(0.5, 0.5, "no unavailable time at any value", transform=ax2.transAxes, ha="center", color="#666666")
    ax2.set_xlabel(sw.get("path", "swept value"))
    ax2.set_ylabel("unavailable ms per rep (dot: mean, ▽: max)")
    ax2.set_title("availability")
    if ax2.get_ylim()[1] > 0:
        ax2.set_ylim(bottom=0)
    ax2.grid(True, color="#eeeeee")
    vals = sw.get("values") or sorted({num(c.value) for c in tree.cells})
    for a in axes:
        if len(vals) <= 12:
            a.set_xticks(vals)
    fig.suptitle(f"sweep of {sw.get('scenario', '?')}: {sw.get('path', '?')} from {fmt_n(sw.get('from', '?'))} "
                 f"to {fmt_n(sw.get('to', '?'))}", fontsize=10, x=0.06, ha="left")
    h, lab = ax.get_legend_handles_labels()
    nrow = (len(h) + 3) // 4
    fig.legend(h, lab, loc="lower center", ncol=min(4, max(len(h), 1)), frameon=False, fontsize=8)
    fig.tight_layout(rect=(0, 0.07 + 0.045 * nrow, 1, 1))
    return save_fig(fig, f"{tree.slug}-phase.png", f"phase diagram of {tree.name}", outdir), bounds


# --------------------------------------------------------------------------------------------
# 5. text


def join_en(xs):
    xs = list(xs)
    if len(xs) <= 1:
        return "".join(xs)
    return ", ".join(xs[:-1]) + " and " + xs[-1]


def plural(n, word, pl=None):
    return f"{fmt_n(n)} {word if n == 1 else (pl or word + 's')}"


def describe_fault(f):
    if not isinstance(f, dict):
        return str(f)
    parts = [str(f.get("fault", "?"))]
    for k in ("mode", "duration_ms", "jump_ms", "rate", "restart_after_ms", "count", "stagger_ms", "latency_ms"):
        if k in f:
            parts.append(f"{k}={f[k]}")
    if "point" in f:
        parts.append(f"at {f['point']} #{f.get('occurrence', 1)}")
    elif "at_ms" in f:
        parts.append(f"at {f['at_ms']} ms")
    for k in ("client", "node", "nodes", "clients", "store", "replication"):
        if k in f:
            parts.append(f"{k}={json.dumps(f[k])}")
    return " ".join(parts)


def scenario_text(cells, scen, brief=False):
    """[sentences] about one scenario's cells (or, brief, one sweep step)."""
    out = []
    sfaults = (scen or {}).get("faults") or []
    labels = {}
    nrep_total = 0
    for c in cells:
        for rep in c.reps:
            nrep_total += 1
            for f in c.run_of(rep).get("faults") or []:
                if isinstance(f, dict):
                    lab = f.get("label", f.get("fault", "?"))
                    d = labels.setdefault(lab, [0, 0, set()])
                    d[1] += 1
                    d[2].add(c.run)
                    if num(f.get("fired"), 0) > 0:
                        d[0] += 1
    if labels:
        parts = []
        for lab, (fired, seen, runs) in labels.items():
            s = f"{lab} (fired in {fired} of {seen} rep runs"
            if len(runs) < len(cells):
                s += "; runs " + join_en(sorted(runs))
            parts.append(s + ")")
        out.append("Injected: " + "; ".join(parts) + ".")
    elif sfaults:
        out.append("Scheduled faults: " + "; ".join(describe_fault(f) for f in sfaults) + ".")
    else:
        out.append("No fault injected.")
    run = [c for c in cells if c.reps]
    notrun = [c for c in cells if not c.reps]
    viol = [c for c in run if c.total("mutual_exclusion_violations") > 0]
    if viol:
        out.append("Violated mutual exclusion: " + join_en(
            f"{c.run} ({plural(c.total('mutual_exclusion_violations'), 'overlap')} in "
            f"{c.reps_with('mutual_exclusion_violations')}/{len(c.reps)} reps)" for c in viol) + ".")
    other = []
    for c in run:
        bits = []
        for m, word in (("lost_updates", "lost update"), ("stale_writes_accepted", "stale write accepted"),
                        ("foreign_releases", "foreign release")):
            if c.total(m) > 0:
                bits.append(plural(c.total(m), word, word.replace("update", "updates").replace("write accepted", "writes accepted").replace("release", "releases") if word != "lost update" else "lost updates"))
        if bits:
            other.append(f"{c.run}: " + ", ".join(bits))
    if other:
        out.append("Store damage: " + "; ".join(other) + ".")
    fenced = [c for c in run if c.total("stale_writes_rejected") > 0]
    if fenced:
        out.append("The fence rejected stale writes in " + join_en(
            f"{c.run} ({plural(c.total('stale_writes_rejected'), 'write')} in {c.reps_with('stale_writes_rejected')}/{len(c.reps)} reps"
            + (f"; {fmt_n(c.total('fenced_overlaps'))} overlapping sections neutralised" if c.total("fenced_overlaps") > 0 else "")
            + ")" for c in fenced) + ".")
    held = [c for c in run if c.outcome() in ("safe", "fenced")]
    if held:
        out.append("Held (no overlap, no lost update, no stale write accepted, no foreign release in any rep): "
                   + join_en(c.run for c in held) + ".")
    un = [c for c in run if c.unavailable_mean() > 0.5]
    if un:
        out.append("Unavailable: " + join_en(f"{c.run} {fmt_ms(c.unavailable_mean())} per rep on average "
                                             f"(at most {fmt_ms(c.unavailable_max())})" for c in un) + ".")
    fails = []
    nexp = 0
    nheld = 0
    for c in run:
        for rep in c.reps:
            dead = rep.get("clients_failed") or []
            if dead:  # an external adapter broke the protocol: this rep is not trusted
                first = dead[0] if isinstance(dead[0], dict) else {}
                out.append(f"NOT TRUSTED: {c.run} rep {rep.get('rep', '?')}: {plural(len(dead), 'client')} failed, "
                           f"e.g. client {first.get('client', '?')}: {first.get('error', '?')}.")
        if not c.has_expectations():
            continue
        nexp += 1
        if c.expectations_held_reps() == len(c.reps):
            nheld += 1
        for rep in c.reps:
            if not rep.get("expectations_held", True):
                bad = [e for e in rep.get("expectations") or [] if isinstance(e, dict) and not e.get("held", True)]
                what = "; ".join(f"{e.get('expect')} was {fmt_n(num(e.get('value'), 0))}" for e in bad) or "failed"
                fails.append(f"{c.run} rep {rep.get('rep', '?')} (seed {rep.get('seed', '?')}): {what}")
    if nexp:
        s = f"Expectations held in every rep of {nheld} of {plural(nexp, 'run')} that have them"
        if fails and brief:
            s += f"; they failed in {plural(len(fails), 'rep')}, e.g. {fails[0]}"
        elif fails:
            s += "; failed: " + "; ".join(fails[:6]) + (f"; and {len(fails) - 6} more" if len(fails) > 6 else "")
        out.append(s + ".")
    part = [c for c in run if c.partial]
    if part or notrun:
        out.append("Incomplete: " + join_en([f"{c.run} ({c.reps_done} of {c.repeat} reps done)" for c in part]
                                            + [f"{c.run} (not run)" for c in notrun]) + ".")
    return out


# --------------------------------------------------------------------------------------------
# page assembly


CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:14px;line-height:1.45;color:#222;
 margin:0;padding:0 16px;}
main{max-width:1200px;margin:0 auto;}
h1{font-size:24px;margin:18px 0 6px} h2{font-size:20px;margin:32px 0 8px;border-bottom:2px solid #ddd;padding-bottom:3px}
h3{font-size:16px;margin:26px 0 6px} h4{font-size:14px;margin:14px 0 4px}
img{max-width:100%;height:auto;display:block;margin:6px 0;border:1px solid #eee}
figure{margin:8px 0 18px} figcaption{font-size:12px;color:#555;max-width:1100px}
table{border-collapse:collapse;font-size:12px;margin:6px 0 14px;width:100%;table-layout:fixed}
th,td{border:1px solid #ccc;padding:3px 5px;text-align:left;vertical-align:top;overflow-wrap:anywhere;word-break:break-word}
th{background:#f3f3f3}
table.matrix td{text-align:center;font-size:11px}
table.matrix td.rowhead{text-align:left;font-weight:bold}
table.matrix td.stack{padding:0;display:table-cell}
table.matrix td.stack div{padding:3px 4px;height:100%;box-sizing:border-box}
table.matrix td.stack div + div{border-top:2px solid #fff}
table.matrix th{font-size:11px}
table.cells td.num{text-align:right}
.o-violation{background:#d7301f;color:#fff}.o-unsafe{background:#fdae61}.o-fenced{background:#7fb3d5}
.o-safe{background:#91cf60}.o-notrun{background:#d9d9d9;color:#444}.o-none{background:#fff;color:#aaa}
.note{color:#555;font-size:13px} .desc{color:#444;font-style:italic;font-size:13px}
ul{margin:4px 0 8px 0;padding-left:22px} li{margin:2px 0}
nav ul{columns:2;font-size:13px}
code{font-size:12px;background:#f5f5f5;padding:0 3px}
"""


class Page:
    """Collects the report as HTML and Markdown at once."""

    def __init__(self):
        self.h = []
        self.m = []

    def heading(self, level, text, anchor=None):
        a = f' id="{html.escape(anchor)}"' if anchor else ""
        self.h.append(f"<h{level}{a}>{html.escape(text)}</h{level}>")
        self.m.append("\n" + "#" * level + " " + text + "\n")

    def para(self, text, cls=None):
        c = f' class="{cls}"' if cls else ""
        self.h.append(f"<p{c}>{html.escape(text)}</p>")
        self.m.append(("> " + text if cls == "desc" else text) + "\n")

    def lead_bullets(self, items):
        """[(lead, anchor, text)]: a bold lead linked to its section, then the text."""
        self.h.append("<ul>" + "".join(f'<li><a href="#{a}"><b>{html.escape(lead)}</b></a>: {html.escape(text)}</li>'
                                       for lead, a, text in items) + "</ul>")
        self.m.append("\n".join(f"- **{lead}**: {text}" for lead, a, text in items) + "\n")

    def bullets(self, items):
        self.h.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")
        self.m.append("\n".join(f"- {i}" for i in items) + "\n")

    def image(self, img, caption=None):
        b64 = base64.b64encode(img.png).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self.h.append(f'<figure><img src="data:image/png;base64,{b64}" alt="{html.escape(img.alt)}">{cap}</figure>')
        self.m.append(f"![{img.alt}](report-images/{img.name})\n" + (f"\n{caption.strip()}\n" if caption else ""))

    def table(self, header, rows, cls=None, classes=None, widths=None):
        """rows: lists of str; classes: same shape, a CSS class per cell or None."""
        c = f' class="{cls}"' if cls else ""
        out = [f"<table{c}>"]
        if widths:
            out.append("<colgroup>" + "".join(f'<col style="width:{w}">' if w else "<col>" for w in widths) + "</colgroup>")
        out.append("<tr>" + "".join(f"<th>{html.escape(x)}</th>" for x in header) + "</tr>")
        for i, r in enumerate(rows):
            tds = []
            for j, x in enumerate(r):
                k = classes[i][j] if classes and classes[i][j] else None
                kc = f' class="{k}"' if k else ""
                tds.append(f"<td{kc}>{html.escape(x)}</td>")
            out.append("<tr>" + "".join(tds) + "</tr>")
        out.append("</table>")
        self.h.append("".join(out))
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        self.m.append("| " + " | ".join(esc(x) for x in header) + " |\n|" + "---|" * len(header) + "\n"
                      + "".join("| " + " | ".join(esc(x) or " " for x in r) + " |\n" for r in rows))

    def raw_html(self, s, md=""):
        self.h.append(s)
        if md:
            self.m.append(md)


OUTCOME_WORD = {"failed": "CLIENTS FAILED", "violation": "VIOLATED", "unsafe": "unsafe", "fenced": "fenced", "safe": "safe", "notrun": "not run"}


def progress(msg):
    print(f"report: {msg}", file=sys.stderr, flush=True)


class Job:
    def __init__(self, label, fn):
        self.label, self.fn = label, fn


def build(trees, outdir, page):
    # plan every figure first, so progress can count
    jobs = []
    results = {}
    for t in trees:
        jobs.append(Job(f"drawing verdict matrix {t.name}", lambda t=t: draw_matrix(t, outdir)))
        results[("matrix", t.name)] = len(jobs) - 1
        if t.kind == "sweep":
            jobs.append(Job(f"drawing phase diagram {t.name}", lambda t=t: draw_phase(t, outdir)))
            results[("phase", t.name)] = len(jobs) - 1
        if t.kind == "matrix":
            groups = [(sc, t.cells_of(sc)) for sc in t.scenario_order]
        else:
            # sweep: timelines for the first step at which each line has something to show
            groups = []
            picked = []
            for label, key, cs in sweep_lines(t):
                for c in cs:
                    if c.reps and find_focus(c):
                        picked.append(c)
                        break
            groups.append((t.sweep.get("scenario", "sweep"), picked))
        for sc, cells in groups:
            for c in cells:
                if not c.reps:
                    continue
                f = find_focus(c)
                if f:
                    nm = f"{t.slug}-timeline-{slug(c.id)}.png"
                    jobs.append(Job(f"drawing timeline {c.id}", lambda c=c, f=f, nm=nm: timeline_job(c, f, outdir, nm)))
                    results.setdefault(("tl", t.name, sc), []).append((c, len(jobs) - 1))
            if t.kind == "matrix" and any(c.reps for c in cells):
                jobs.append(Job(f"reading histories {t.name}/{sc}", lambda cells=cells: load_scenario(cells)))
                li = len(jobs) - 1
                jobs.append(Job(f"drawing latency CDF {sc}", lambda t=t, sc=sc, cells=cells, li=li: draw_latency(
                    sc, sc, [c for c in cells if c.reps], results[li], outdir, f"{t.slug}-latency-{slug(sc)}.png")))
                jobs.append(Job(f"drawing throughput {sc}", lambda t=t, sc=sc, cells=cells, li=li: draw_throughput(
                    sc, [c for c in cells if c.reps], results[li], outdir, f"{t.slug}-throughput-{slug(sc)}.png")))
                results[("perf", t.name, sc)] = (len(jobs) - 2, len(jobs) - 1)
    for i, j in enumerate(jobs):
        progress(f"{j.label} ... ({i + 1}/{len(jobs)})")
        results[i] = j.fn()
        # free history data of a scenario once both of its figures are drawn
        for k in list(results):
            if isinstance(k, int) and k < i and isinstance(results[k], dict) and k + 2 <= i:
                results[k] = None
    write_page(trees, results, page)


def timeline_job(cell, focus, outdir, name):
    rd = RepData(cell, focus[1], full=True)
    return draw_timeline(cell, focus, rd, outdir, name)


def load_scenario(cells):
    out = {}
    for c in cells:
        out[c.id] = [RepData(c, r, full=False) for r in c.reps]
    return out


def tree_dates(trees):
    ts = []
    for t in trees:
        for c in t.cells:
            for r in c.reps:
                try:
                    ts.append(os.path.getmtime(os.path.join(c.rep_path(r), "summary.json")))
                except OSError:
                    pass
    if not ts:
        return None
    f = lambda x: datetime.datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M")  # noqa: E731
    return f(min(ts)), f(max(ts))


def cell_name(c, cells):
    """The cell's variant, with what tells it apart when its scenario runs the variant more than once."""
    if sum(1 for o in cells if o.variant == c.variant) > 1:
        return f"{c.variant} [{c.label_suffix()}]"
    return c.variant


def incomplete_tail(cells, everyone):
    """" Not run: ...; partly run: ...", about cells lacking repetitions; "" when none do."""
    notrun = [c for c in cells if not c.reps]
    part = [c for c in cells if c.reps and c.partial]
    tail = ""
    if notrun:
        tail += " Not run (no repetition, so nothing is said of it): " + join_en(cell_name(c, everyone) for c in notrun) + "."
    if part:
        tail += " Partly run, the above is over the reps done: " + join_en(
            f"{cell_name(c, everyone)} ({len(c.reps)} of {c.repeat} reps)" for c in part) + "."
    return tail


def finding_of_scenario(t, sc):
    """One line: what the scenario did to each variant, worst first; a variant with no
    repetition is only ever named as not run."""
    everyone = t.cells_of(sc)
    cells = [c for c in everyone if c.reps]
    if not cells:
        return "not run."
    groups = []
    broken = [c for c in cells if c.outcome() == "failed"]
    if broken:
        groups.append("not trusted, an adapter broke, with " + join_en(cell_name(c, cells) for c in broken))
    viol = [c for c in cells if c.outcome() == "violation"]
    if viol:
        groups.append("two holders with " + join_en(
            f"{cell_name(c, cells)} ({c.reps_with('mutual_exclusion_violations')}/{len(c.reps)} reps)" for c in viol))
    unsafe = [c for c in cells if c.outcome() == "unsafe"]
    if unsafe:
        def damage(c):
            return ", ".join(plural(c.total(m), w, pl) for m, w, pl in (
                ("lost_updates", "lost update", "lost updates"),
                ("stale_writes_accepted", "stale write accepted", "stale writes accepted"),
                ("foreign_releases", "foreign release", "foreign releases")) if c.total(m) > 0)
        groups.append("no overlap but damage in the store with " + join_en(
            f"{cell_name(c, cells)} ({damage(c)})" for c in unsafe))
    fenced = [c for c in cells if c.outcome() == "fenced"]
    if fenced:
        groups.append("the fence rejected the stale writes of " + join_en(cell_name(c, cells) for c in fenced))
    safe = [c for c in cells if c.outcome() == "safe"]
    if safe:
        groups.append("held: " + join_en(
            cell_name(c, cells) + (f" (unavailable {fmt_ms(c.unavailable_mean())} a rep)" if c.unavailable_mean() >= 100 else "")
            for c in safe))
    exp = [c for c in cells if c.has_expectations()]
    failed = [c for c in exp if c.expectations_held_reps() < len(c.reps)]
    tail = ""
    if failed:
        tail = " EXPECTATIONS FAILED for " + join_en(cell_name(c, cells) for c in failed) + "."
    elif exp:
        tail = " Expectations held."
    return "; ".join(groups) + "." + tail + incomplete_tail(everyone, everyone)


def finding_of_sweep(t):
    sw = t.sweep
    parts = []
    for label, key, cs in sweep_lines(t):
        done = [c for c in cs if c.reps]
        bad = [c for c in done if c.outcome() == "violation"]
        notrun = [c for c in cs if not c.reps]
        if not done:
            parts.append(f"{label} not run")
            continue
        gap = f" (not run at {join_en(fmt_n(num(c.value)) for c in notrun)})" if notrun else ""
        if not bad:
            parts.append(f"{label} never violated mutual exclusion in the {plural(len(done), 'value')} run{gap}"
                         if notrun else f"{label} never violated mutual exclusion")
            continue
        b = boundary(cs)
        first = min(num(c.value) for c in bad)
        if b:
            parts.append(f"{label} held up to {fmt_n(b[1])} and violated from {fmt_n(b[2])}{gap}")
        else:
            parts.append(f"{label} violated from {fmt_n(first)}{gap}")
    values = sw.get("values") or [c.value for c in t.cells]
    rng = f"{fmt_n(num(values[0]))} to {fmt_n(num(values[-1]))}" if values else ""
    return f"{sw.get('path')} from {rng}: " + "; ".join(parts) + "."


def write_findings(trees, page):
    page.heading(2, "Findings", "findings")
    page.para("Per scenario, from the checker's figures over every rep (details, timelines and plots below). "
              "\"Two holders\": two critical sections overlapped in the protected store's own order.", cls="note")
    items = []
    for t in trees:
        if t.kind == "sweep":
            items.append((f"{t.name} (sweep of {t.sweep.get('scenario')})", slug(t.name), finding_of_sweep(t)))
        else:
            items.extend((sc, f"{slug(t.name)}-{slug(sc)}", finding_of_scenario(t, sc)) for sc in t.scenario_order)
    page.lead_bullets(items)


def budget_note(tree):
    """Where a time budget set the number of repetitions (the main job's rounds)."""
    b = tree.summary.get("budget")
    if not isinstance(b, dict):
        return ""
    k, n = int(num(b.get("repetitions_per_cell"), 0)), int(num(tree.summary.get("repeat"), 0))
    return f" ({plural(k, 'rep')} per cell of up to {n}: the {fmt_n(num(b.get('seconds'), 0))} s time budget ended it)"


def write_page(trees, results, page):
    ncell = sum(len(t.cells) for t in trees)
    nrep = sum(len(c.reps) for t in trees for c in t.cells)
    nplanned = sum(max(c.repeat, len(c.reps)) for t in trees for c in t.cells)
    seeds = sorted({r.get("seed") for t in trees for c in t.cells for r in c.reps if isinstance(r.get("seed"), int)})
    dates = tree_dates(trees)
    page.heading(1, "lockbench report")
    cover = [f"{t.name}: {t.kind}" + (f" of {t.sweep.get('scenario')} over {t.sweep.get('path')}" if t.kind == "sweep" else
                                      f" of {plural(len(t.scenario_order), 'scenario')}")
             + f", {plural(len(t.cells), 'cell')}, spec {t.spec_id}" + budget_note(t) for t in trees]
    page.para("Covers " + "; ".join(cover) + ".")
    s = f"{plural(ncell, 'cell')} (a run of a scenario: one algorithm with its parameters), {nrep} of {nplanned} planned reps done"
    if seeds:
        s += f", seeds {seeds[0]}–{seeds[-1]}" if len(seeds) > 3 and seeds == list(range(seeds[0], seeds[-1] + 1)) else \
            f", seeds {', '.join(map(str, seeds))}"
    if dates:
        s += f"; reps recorded {dates[0]} to {dates[1]} (file times)"
    page.para(s + f". Generated {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}.")
    for t in trees:
        if t.incomplete:
            page.para(f"INCOMPLETE: {t.name} lacks repetitions in {len(t.incomplete)} of {plural(len(t.cells), 'cell')} "
                      "(a shard not merged, or not finished): "
                      + join_en(f"{c.id} ({len(c.reps)} of {c.repeat} reps)" for c in t.incomplete[:8])
                      + (f" and {len(t.incomplete) - 8} more" if len(t.incomplete) > 8 else "")
                      + ". Those cells are shown as not run (grey) or partial (dashed), and no finding speaks for "
                      "what did not run.")
    write_findings(trees, page)
    page.heading(2, "How to read this report", "how")
    page.para(
        "Every figure is drawn from recorded data: the checker's figures in the summaries, the clients' histories "
        "(CLOCK_MONOTONIC), the protected store's log (its own order and clock) and the nemesis's fault log. "
        "The verdict matrix has one row per lock variant (algorithm and its non-duration parameters) and one column per "
        "scenario (per swept value for a sweep); a cell's colour is its worst outcome over all reps: red, two "
        "critical sections overlapped in the store; orange, no overlap but lost updates, stale writes accepted or "
        "releases of someone else's lock; blue, a fencing token made the store reject stale writes and nothing unsafe "
        "got in; green, nothing of the kind; grey, not run; dark grey, a client failed because its external adapter "
        "broke the protocol (not trusted). The text gives totals over reps and how many reps showed "
        "it; ✓/✗ says whether the scenario's expectations held in every rep. Each timeline replays one concrete case "
        "the checker found (its first witness): one lane per client, the lease as the client believed it, the critical "
        "section as the store saw it, fault windows shaded, the overlap hatched. Performance plots show acquire latency "
        "(CDF, log scale) and sections completed per 100 ms with the checker's unavailability windows in red.")
    # contents
    toc = []
    for t in trees:
        toc.append(f'<li><a href="#{slug(t.name)}">{html.escape(t.name)}</a> ({t.kind})</li>')
        if t.kind == "matrix":
            for sc in t.scenario_order:
                toc.append(f'<li><a href="#{slug(t.name)}-{slug(sc)}">{html.escape(t.name)} / {html.escape(sc)}</a></li>')
    page.raw_html("<nav><ul>" + "".join(toc) + "</ul></nav>")
    for t in trees:
        page.heading(2, f"{t.name}: {t.kind}" + (f" of {t.sweep.get('scenario')}" if t.kind == "sweep" else ""), slug(t.name))
        matrix_img = results[results[("matrix", t.name)]]
        phase = results[results[("phase", t.name)]] if t.kind == "sweep" else None
        page.heading(3, "Verdict matrix")
        page.image(matrix_img, "Rows: variants; columns: " + ("scenarios" if t.kind == "matrix" else
                                                              f"values of {t.sweep.get('path')}") +
                   ". A cell split in stripes holds several runs of one variant in one scenario (named in the stripe).")
        page.raw_html(*matrix_table(t))
        if t.kind == "sweep":
            img, bounds = phase
            sw = t.sweep
            cap = (f"Left: share of reps with at least one mutual-exclusion violation at each value of {sw.get('path')}, "
                   "with its 95% Wilson interval; hollow markers: partial cells. ")
            if bounds:
                cap += "Dashed: " + "; ".join(f"{lab}: safe at {fmt_n(v0)}, violating at {fmt_n(v1)}"
                                              for (bx, v0, v1), col, lab in bounds) + ". "
            else:
                cap += "No line goes from rate 0 to a rate above 0 between two steps, so no boundary is marked. "
            cap += "Right: mean unavailable time per rep (marker: the worst rep)."
            page.heading(3, "Phase diagram")
            page.image(img, cap)
            scen = t.scenarios.get(sw.get("scenario"))
            if scen and scen.get("description"):
                page.para("Scenario description: " + scen["description"], cls="desc")
            page.heading(3, "Per value")
            bystep = {}
            for c in t.cells:
                bystep.setdefault((num(c.value), c.step), []).append(c)
            items = []
            for (val, step), cs in sorted(bystep.items(), key=lambda kv: kv[0][0]):
                txt = scenario_text(cs, scen, brief=True)
                items.append(f"{sw.get('path')} = {fmt_n(val)}: " + " ".join(txt))
            page.bullets(items)
            tls = results.get(("tl", t.name, sw.get("scenario", "sweep")), [])
            if tls:
                page.heading(3, "Timelines at the first value where each variant fails")
                for c, idx in tls:
                    emit_timeline(page, c, results[idx], show_value=sw.get("path"))
            continue
        for sc in t.scenario_order:
            cells = t.cells_of(sc)
            scen = t.scenarios.get(sc)
            page.heading(3, sc, f"{slug(t.name)}-{slug(sc)}")
            if scen and scen.get("description"):
                page.para("Scenario description: " + scen["description"], cls="desc")
            page.bullets(scenario_text(cells, scen))
            header = ["run", "variant", "outcome", "viol", "viol reps", "lost", "stale acc.", "rejected", "foreign",
                      "unavail (mean)", "acq p50/p99", "expect"]
            rows, classes = [], []
            for c in cells:
                o = c.outcome()
                acq = c.agg.get("acquire_ms") if isinstance(c.agg.get("acquire_ms"), dict) else {}
                held = c.expectations_held_reps()
                rows.append([c.run, c.variant, OUTCOME_WORD[o] + (" (partial)" if c.partial and o != "notrun" else ""),
                             fmt_n(c.total("mutual_exclusion_violations")) if c.reps else "–",
                             f"{c.reps_with('mutual_exclusion_violations')}/{len(c.reps)}" + (f" of {c.repeat}" if c.partial else ""),
                             fmt_n(c.total("lost_updates")), fmt_n(c.total("stale_writes_accepted")),
                             fmt_n(c.total("stale_writes_rejected")), fmt_n(c.total("foreign_releases")),
                             fmt_ms(c.unavailable_mean()) if c.reps else "–",
                             f"{fmt_ms(num(acq.get('p50'), None))} / {fmt_ms(num(acq.get('p99'), None))}" if acq and c.reps else "–",
                             (f"{held}/{len(c.reps)} ✓" if held == len(c.reps) else f"{held}/{len(c.reps)} ✗")
                             if c.reps and c.has_expectations() else "–"])
                classes.append([None, None, "o-" + o] + [None] * 9)
            page.table(header, rows, cls="cells", classes=classes,
                       widths=["19%", "13%", "8%", "5%", "6%", "5%", "6%", "6%", "6%", "8%", "10%", "8%"])
            for c, idx in results.get(("tl", t.name, sc), []):
                emit_timeline(page, c, results[idx])
            perf = results.get(("perf", t.name, sc))
            if perf:
                page.image(results[perf[0]], "Acquire latency of every outermost acquire attempt in every rep of the run, "
                                             "from the client's invoke to its reply (client histories); left the "
                                             "attempts that got the lock, right those refused or timed out.")
                page.image(results[perf[1]], f"Sections the store accepted (its write entries), per {BUCKET_MS:.0f} ms, "
                                             "coloured for the first rep of each run and grey for the others; faults "
                                             "(nemesis log) and unavailable windows (checker) of the coloured rep.")


def wbr(text):
    """HTML-escaped, with line-break opportunities before '+' and after '-' and '='."""
    e = html.escape(text)
    return e.replace("+", "<wbr>+").replace("-", "-<wbr>").replace("=", "=<wbr>")


def matrix_table(t):
    """The verdict matrix as text: (html, markdown). One row per variant; a column holding several runs of
    the variant stacks them."""
    variants, sub, colkeys, collabels, grid = matrix_layout(t)
    head = ["variant"] + [str(x) for x in collabels]
    h = ['<table class="matrix"><colgroup><col style="width:150px">' + "<col>" * len(colkeys) + "</colgroup><tr>"
         + "".join(f"<th>{wbr(x)}</th>" for x in head) + "</tr>"]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in variants:
        tds = [f'<td class="rowhead">{wbr(v)}</td>']
        mds = [v]
        for key in colkeys:
            cells = grid.get((v, key), [])
            if not cells:
                tds.append('<td class="o-none">–</td>')
                mds.append("–")
                continue
            divs, parts = [], []
            for c in cells:
                o, txt = matrix_text(t, c)
                if len(cells) > 1:
                    txt = f"[{c.label_suffix()}] {txt}"
                divs.append(f'<div class="o-{o}">{html.escape(txt)}</div>')
                parts.append((OUTCOME_WORD[o] + ": " if o != "notrun" else "") + txt)
            if len(cells) == 1:
                o = cells[0].outcome()
                tds.append(f'<td class="o-{o}">{html.escape(matrix_text(t, cells[0])[1])}</td>')
            else:
                tds.append('<td class="stack">' + "".join(divs) + "</td>")
            mds.append("<br>".join(p.replace("|", "\\|") for p in parts))
        h.append("<tr>" + "".join(tds) + "</tr>")
        md.append("| " + " | ".join(mds) + " |")
    h.append("</table>")
    return "".join(h), "\n".join(md) + "\n"


def emit_timeline(page, c, res, show_value=None):
    img, cap = res
    if img is None:
        page.para(f"{c.id}: no timeline ({cap}).", cls="note")
        return
    if show_value:
        cap = f"{show_value} = {fmt_n(c.value)}. " + cap
    page.image(img, cap)


def render(d):
    trees = find_trees(d)
    if not any(t.cells for t in trees):
        raise Fail(os.path.join(trees[0].path, "summary.json"), "has no cells; nothing to report")
    pid = os.getpid()
    cleanup_stale(d)
    tmp = os.path.join(d, f".report.tmp.{pid}")
    try:
        os.makedirs(os.path.join(tmp, "report-images"))
    except OSError as e:
        raise Fail(d, f"cannot create {os.path.basename(tmp)}: {e.strerror}")
    try:
        page = Page()
        build(trees, os.path.join(tmp, "report-images"), page)
        doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               f"<title>lockbench report: {html.escape(', '.join(t.name for t in trees))}</title>"
               f"<style>{CSS}</style></head><body><main>\n" + "\n".join(page.h) + "\n</main></body></html>\n")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as f:
            f.write(doc)
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as f:
            f.write("\n".join(page.m))
        # move in place: images folder swapped by rename, then the two pages
        final_imgs = os.path.join(d, "report-images")
        old = os.path.join(d, f".report.old.{pid}")
        if os.path.exists(final_imgs):
            os.rename(final_imgs, old)
        try:
            os.rename(os.path.join(tmp, "report-images"), final_imgs)
        except OSError:
            if os.path.exists(old):
                os.rename(old, final_imgs)
            raise
        os.replace(os.path.join(tmp, "report.md"), os.path.join(d, "report.md"))
        os.replace(os.path.join(tmp, "report.html"), os.path.join(d, "report.html"))
        if os.path.exists(old):
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return os.path.join(d, "report.html")


def cleanup_stale(d):
    """Remove temp folders left by a report.py that was killed (its pid no longer runs)."""
    for name in os.listdir(d):
        m = re.fullmatch(r"\.report\.(tmp|old)\.(\d+)", name)
        if not m:
            continue
        pid = int(m.group(2))
        alive = True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            alive = False
        except PermissionError:
            pass
        if not alive:
            shutil.rmtree(os.path.join(d, name), ignore_errors=True)


def main(argv):
    args = argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(args) != 1:
        print(f"{PROG}: usage: report.py DIR (a results tree of `lockbench matrix`/`sweep`, or a folder of them)",
              file=sys.stderr)
        return 2
    d = args[0]
    try:
        out = render(d)
    except Fail as e:
        print(f"{PROG}: {e.where}: {e.what}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: {d}: interrupted; the previous report is untouched", file=sys.stderr)
        return 130
    except OSError as e:
        where = e.filename or d
        print(f"{PROG}: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback: name the tree and what went wrong
        print(f"{PROG}: {d}: unexpected {type(e).__name__}: {e} (please report: this is a bug in report.py)",
              file=sys.stderr)
        return 2
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
