"""Small synthetic results trees for the report's tests (report_table_test, report_verdict_test):
laid out as `lockbench matrix` and `lockbench verdict` write them (results version 6), with only
what the report reads."""

import json
import os

# A repetition's figures for each verdict (the verdict itself is what the report shows: it is
# written beside them, as the checker records it).
FIGURES = {
    "safe": {"mutual_exclusion_violations": 0, "lost_updates": 0, "stale_writes_accepted": 0,
             "stale_writes_rejected": 0, "foreign_releases": 0, "sections_completed": 30},
}
FIGURES["2 holders"] = dict(FIGURES["safe"], mutual_exclusion_violations=1, stale_writes_accepted=1)
FIGURES["unsafe"] = dict(FIGURES["safe"], lost_updates=2)
FIGURES["stale write refused"] = dict(FIGURES["safe"], stale_writes_rejected=2)
FIGURES["unavailable"] = dict(FIGURES["safe"], sections_completed=0)
FIGURES["adapter broke"] = dict(FIGURES["safe"], clients_failed=[{"client": 1, "error": "bad line"}])

RESULTS_VERSION = 7


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def write_jsonl(path, objs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(o) + "\n" for o in objs))


class Builder:
    """A matrix tree: cells of (case, lock) runs, each rep with its recorded verdict."""

    def __init__(self, root, version=RESULTS_VERSION):
        self.root, self.version, self.cells, self.na = root, version, [], []

    def cell(self, scenario, run, verdicts, failure_class=None, external=True, adapter=None, params=None,
             lock=None, variant=None, figures=None, witness=False, unforced=None, resource_check=None):
        """verdicts: one word a rep (None: a rep without one); lock: the run's "lock" (default:
        the run's name before "@"); figures: a rep's figures instead of its verdict's; unforced:
        the reasons of repetitions that could not be forced (after the verdicts' reps)."""
        lock = lock if lock is not None else run.split("@")[0]
        unforced = unforced or []
        n = len(verdicts) + len(unforced)
        entry = {"scenario": scenario, "run": run, "id": f"{scenario}/{run}", "index": len(self.cells),
                 "repeat": n, "reps_done": n, "reps": [],
                 "algorithm": "external" if external else lock.split("+")[0], "variant": run}
        if unforced:
            entry["could_not_force"] = [{"rep": len(verdicts) + k, "reason": why,
                                         "dir": f"cells/{scenario}/{run}/rep-{len(verdicts) + k}"}
                                        for k, why in enumerate(unforced)]
        counts = {}
        for k, word in enumerate(verdicts):
            d = f"cells/{scenario}/{run}/rep-{k}"
            rep = dict(figures or FIGURES[word or "safe"], rep=k, dir=d, seed=k + 1, expectations_held=True)
            if word is not None:
                rep["verdict"] = word
                counts[word] = counts.get(word, 0) + 1
            entry["reps"].append(rep)
            run_entry = {"name": run, "algorithm": entry["algorithm"], "params": params or {}, "run_dir": f"runs/{run}"}
            if lock:
                run_entry["lock"] = lock
            if "@" in run:
                run_entry["variant"] = variant or run.split("@", 1)[1]
            if failure_class:
                run_entry["failure_class"] = failure_class
            if adapter:
                run_entry["adapter"] = adapter
            if resource_check:
                run_entry["resource_check"] = resource_check
            if word is not None:
                run_entry["verdict"] = word
            if witness and word in ("2 holders", "unsafe"):
                run_entry["witnesses"] = witness_run(os.path.join(self.root, d, "runs", run), word)
            write_json(os.path.join(self.root, d, "summary.json"), {"runs": [run_entry]})
        entry["aggregate"] = {"verdicts": counts}
        self.cells.append(entry)
        return entry["id"]

    def not_applicable(self, case, lock, why, failure_class=None, variant=None):
        n = {"case": case, "lock": lock, "why": why}
        if failure_class:
            n["failure_class"] = failure_class
        if variant:
            n["variant"] = variant
        self.na.append(n)

    def finish(self, find=True):
        head = {"format": "lockbench-results", "version": self.version, "kind": "matrix"}
        write_json(os.path.join(self.root, "lockbench-results.json"), head)
        write_json(os.path.join(self.root, "summary.json"), dict(head, cells=self.cells, not_applicable=self.na,
                                                                 repeat=max((c["repeat"] for c in self.cells), default=1)))
        if not find:
            return None
        from report.tree import find_trees
        return find_trees(self.root)


T0 = 1_000_000_000


def witness_run(run_dir, word):
    """A tiny run whose timeline can be drawn: client 0 takes lease c0.1 and is paused past it;
    client 1 takes c1.1 and enters while client 0 is still inside (two holders) or, for
    "unsafe", after client 0 left but before its late write (a stale write). Returns the
    summary's witnesses."""
    ms = lambda t: T0 + int(t * 1e6)  # noqa: E731
    write_jsonl(os.path.join(run_dir, "history", "client-0.jsonl"), [
        {"t_ns": ms(0), "client": 0, "op": "acquire", "type": "invoke", "depth": 1},
        {"t_ns": ms(1), "client": 0, "op": "acquire", "type": "ok", "depth": 1, "lease": "c0.1", "validity_ms": 100},
        {"t_ns": ms(190), "client": 0, "op": "write", "type": "invoke", "lease": "c0.1"},
        {"t_ns": ms(205), "client": 0, "op": "release", "type": "invoke", "depth": 1, "lease": "c0.1"},
        {"t_ns": ms(206), "client": 0, "op": "release", "type": "ok", "depth": 1, "lease": "c0.1"}])
    write_jsonl(os.path.join(run_dir, "history", "client-1.jsonl"), [
        {"t_ns": ms(2), "client": 1, "op": "acquire", "type": "invoke", "depth": 1},
        {"t_ns": ms(110), "client": 1, "op": "acquire", "type": "ok", "depth": 1, "lease": "c1.1", "validity_ms": 100},
        {"t_ns": ms(130), "client": 1, "op": "release", "type": "invoke", "depth": 1, "lease": "c1.1"},
        {"t_ns": ms(131), "client": 1, "op": "release", "type": "ok", "depth": 1, "lease": "c1.1"}])
    write_jsonl(os.path.join(run_dir, "nemesis.jsonl"), [
        {"t_ns": ms(5), "op": "fault", "type": "start", "fault": "pause", "label": "pause 180 ms on client 0", "client": 0},
        {"t_ns": ms(185), "op": "fault", "type": "end", "fault": "pause", "label": "pause 180 ms on client 0", "client": 0}])
    kind = "mutual_exclusion" if word == "2 holders" else "stale_write"
    a = {"lease": "c0.1", "client": 0, "enter_seq": 1, "enter_ms": 3, "write_seq": 4, "write_ms": 200, "exit_seq": 5,
         "exit_ms": 201}
    b = {"lease": "c1.1", "client": 1, "enter_seq": 2, "enter_ms": 112, "write_seq": 3, "write_ms": 120, "exit_seq": 6,
         "exit_ms": 121}
    window = {"kind": kind, "a_enter_seq": 1, "b_enter_seq": 2, "placed": True, "window_ms": [0, 210]}
    if kind == "mutual_exclusion":
        window["overlap_ms"] = [112, 121]
    write_json(os.path.join(run_dir, "sections.json"), {
        "format": "lockbench-sections", "version": 1, "t0_ns": T0, "clock": {"offset_ns": 0, "samples": 2, "iqr_us": 3},
        "sections": [a, b], "writes_ms": [120, 200], "unavailable_ms": [], "witnesses": [window]})
    return [{"kind": kind, "first": {"lease": "c0.1", "client": 0, "enter_seq": 1},
             "second": {"lease": "c1.1", "client": 1, "enter_seq": 2}}]
