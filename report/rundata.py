"""One repetition's run, on one time axis: ms since the run's first client event
(CLOCK_MONOTONIC). The checker placed the store's sections, accepted writes, unavailable and
witness windows on that axis (runs/NAME/sections.json, analysis/report_data.h); the clients'
leases and acquire latencies come from their histories, the faults from the nemesis's and
Sentinel's logs, as they are drawn."""

import os

from .common import Fail, load_json, num, read_jsonl

SECTIONS_FILE = "sections.json"   # analysis/report_data.h: kSectionsFile
SECTIONS_VERSION = 1


class Lease:
    __slots__ = ("lease", "client", "acq_ok", "validity", "fence", "rel_inv", "rel_end", "rel_type", "write_inv",
                 "renewals")

    def __init__(self, lease, client, acq_ok, validity, fence):
        self.lease, self.client, self.acq_ok, self.validity, self.fence = lease, client, acq_ok, validity, fence
        self.rel_inv = self.rel_end = self.rel_type = self.write_inv = None
        self.renewals = []  # (ms, "ok" | "fail" | "info" | "lost"): the worker's renewals, the lock's lost events


class Section:
    """One critical section as the store saw it, as the checker wrote it (times in ms, or None
    when the store's clock could not be placed)."""
    __slots__ = ("lease", "client", "fence", "enter_seq", "enter", "write_seq", "write", "rejected",
                 "max_fence", "exit_seq", "exit", "closed_by_next")

    def __init__(self, j):
        self.lease, self.client, self.fence = j.get("lease"), j.get("client"), j.get("fence")
        self.enter_seq, self.enter = j.get("enter_seq"), j.get("enter_ms")
        self.write_seq, self.write = j.get("write_seq"), j.get("write_ms")
        self.exit_seq, self.exit = j.get("exit_seq"), j.get("exit_ms")
        self.rejected, self.max_fence = bool(j.get("rejected")), j.get("max_fence")
        self.closed_by_next = bool(j.get("closed_by_next"))

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



class RepData:
    """The parsed records of one rep (one `lockbench run` with one run). `full`: keep its
    sections (a timeline needs them; throughput needs only the writes)."""

    def __init__(self, cell, rep, full=True):
        self.cell, self.rep = cell, rep
        run = cell.run_of(rep)
        self.run = run
        self.dir = os.path.join(cell.rep_path(rep), run.get("run_dir") or os.path.join("runs", run.get("name", cell.run)))
        events = self.read_histories()
        self.read_derived(full)
        self.read_leases(events)
        self.faults = self.read_faults() + self.read_failover()

    def ms(self, t_ns):
        return (t_ns - self.t0) / 1e6

    def read_histories(self):
        """{client: its events in time order}; fault points are not needed."""
        hdir = os.path.join(self.dir, "history")
        try:
            files = sorted(f for f in os.listdir(hdir) if f.endswith(".jsonl"))
        except FileNotFoundError:
            raise Fail(hdir, "missing (expected history/client-N.jsonl files of the run)")
        except NotADirectoryError:
            raise Fail(hdir, "not a folder")
        not_point = lambda line: '"op":"point"' not in line  # noqa: E731
        events = {}
        for f in files:
            path = os.path.join(hdir, f)
            evs = [e for e in read_jsonl(path, not_point) if isinstance(e.get("t_ns"), int) and e.get("op") != "point"]
            if evs:
                evs.sort(key=lambda e: e["t_ns"])
                events[evs[0].get("client", f)] = evs
        return events

    def read_derived(self, full):
        """What the checker placed on the axis for the report (runs/NAME/sections.json)."""
        path = os.path.join(self.dir, SECTIONS_FILE)
        d = load_json(path)
        if not isinstance(d, dict) or d.get("format") != "lockbench-sections" or d.get("version") != SECTIONS_VERSION:
            raise Fail(path, f'expected {{"format": "lockbench-sections", "version": {SECTIONS_VERSION}, ...}}, '
                             "what the checker writes beside a run's histories")
        self.t0 = int(num(d.get("t0_ns"), 0))
        clock = d.get("clock") or {}
        self.offset_ns, self.offset_n, self.offset_iqr_us = clock.get("offset_ns"), clock.get("samples", 0), clock.get("iqr_us")
        self.write_ms = [num(t) for t in d.get("writes_ms") or []]
        self.unavail = [(num(w[0]), num(w[1])) for w in d.get("unavailable_ms") or [] if isinstance(w, list) and len(w) == 2]
        self.windows = [w for w in d.get("witnesses") or [] if isinstance(w, dict)]
        self.sections = [Section(j) for j in d.get("sections") or [] if isinstance(j, dict)] if full else []
        self.sec_by_enter = {s.enter_seq: s for s in self.sections}

    def read_leases(self, events):
        """Each client's leases (acquire ok to release) and the acquire attempts' latencies."""
        self.clients = sorted(events, key=lambda c: (not isinstance(c, int), c if isinstance(c, int) else str(c)))
        self.acq_ok_dur, self.acq_fail_dur = [], []
        self.leases = {c: [] for c in self.clients}
        self.lease_by_id = {}
        self.client_last = {}
        for c, evs in events.items():
            pending = {}
            for e in evs:
                self.lease_event(c, e, pending)
            self.client_last[c] = self.ms(evs[-1]["t_ns"])
        self.end_ms = max(self.client_last.values(), default=0.0)

    def lease_event(self, c, e, pending):
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
                lz = Lease(e["lease"], c, self.ms(t), num(v, None) if v is not None else None, e.get("fence"))
                self.leases[c].append(lz)
                self.lease_by_id.setdefault(e["lease"], lz)
        elif op == "release" and depth == 1:
            lz = self.lease_by_id.get(e.get("lease"))
            if lz is not None:
                if ty == "invoke":
                    if lz.rel_inv is None:
                        lz.rel_inv = self.ms(t)
                elif lz.rel_end is None:
                    lz.rel_end, lz.rel_type = self.ms(t), ty
        elif (op == "renew" and ty != "invoke") or op == "lost":
            lz = self.lease_by_id.get(e.get("lease"))
            if lz is not None:
                lz.renewals.append((self.ms(t), "lost" if op == "lost" else ty))
                v = e.get("validity_ms")
                if op == "renew" and ty == "ok" and v is not None:  # the client now believes it until then
                    lz.validity = self.ms(t) + num(v, 0) - lz.acq_ok
        elif op == "write" and ty == "invoke":
            lz = self.lease_by_id.get(e.get("lease"))
            if lz is not None and lz.write_inv is None:
                lz.write_inv = self.ms(t)

    def read_faults(self):
        """Fault windows from the nemesis's log: each start matched to its end."""
        npath = os.path.join(self.dir, "nemesis.jsonl")
        if not os.path.exists(npath):
            return []
        faults, openf = [], {}
        for e in sorted(read_jsonl(npath), key=lambda e: num(e.get("t_ns"), 0)):
            if e.get("op") != "fault" or not isinstance(e.get("t_ns"), int):
                continue
            key = (e.get("label"), e.get("client"), e.get("node"))
            if e.get("type") == "start":
                f = Fault(e, self.ms(e["t_ns"]))
                faults.append(f)
                openf.setdefault(key, []).append(f)
            elif e.get("type") == "end":
                lst = openf.get(key)
                if lst:
                    lst.pop(0).end = self.ms(e["t_ns"])
        return faults

    def read_failover(self):
        """The failover, as Sentinel announced it (sentinel.jsonl): the master seen down by one
        Sentinel (+sdown) until the replica is promoted (+switch-master)."""
        spath = os.path.join(self.dir, "sentinel.jsonl")
        if not os.path.exists(spath):
            return []
        faults, down = [], None
        for e in sorted(read_jsonl(spath), key=lambda e: num(e.get("t_ns"), 0)):
            if e.get("op") != "sentinel" or not isinstance(e.get("t_ns"), int):
                continue
            ev, detail = e.get("event"), str(e.get("detail", ""))
            if ev == "+sdown" and detail.startswith("master ") and down is None:
                down = self.ms(e["t_ns"])
            elif ev == "+switch-master":
                f = Fault({"fault": "failover", "label": "failover: Sentinel saw the master down (+sdown) until it "
                                                         "promoted the replica (+switch-master)"},
                          down if down is not None else self.ms(e["t_ns"]))
                f.end = self.ms(e["t_ns"])
                faults.append(f)
                down = None
        return faults

    def window(self, kind):
        """The checker's first window of this kind (a witness's, or "reject"), or None."""
        return next((w for w in self.windows if w.get("kind") == kind), None)

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
