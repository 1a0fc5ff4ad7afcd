"""0. The cross-library verdict table that opens the report: one row per lock library (an external
run, by the name its scenarios give it, or its `table_row` when a case's variant of the run
names the library's row), then lockbench's own algorithms for reference; one
column per failure class (the scenario's `failure_class`, as each run's summary entry records
it). A cell counts every repetition of the row's runs in the scenarios of its class by the
verdict the checker's figures give that repetition; expectations play no part.

A tree whose runs record no failure_class (results version 4 and older) adds no row: the table
is built from what the runs say they are, never guessed from scenario names."""

import html

from .common import num, slug

# The columns, in the order of scenario.cpp's failure_classes(), with the table's header words.
CLASSES = (("baseline", "no fault"), ("gc-pause", "GC pause"), ("delayed-write", "delayed write"),
           ("held-replies", "held replies"), ("client-clock-skew", "client clock skew"),
           ("node-clock-jump", "node clock jump"), ("restart-empty", "restart without data"),
           ("failover", "failover"), ("slow-holder", "slow holder"))

# lockbench's own algorithms in their plain configuration, the reference group below the
# libraries: a built-in run whose name without its durations is one of these. A run given a
# name of its own ("token-lua+aof-always", "redlock+restart-empty") is a variant the
# scenario sets apart, and stays out of the group.
REFERENCE = {  # each as lockimpl/registry.cpp's table sums it up
    "setnx": "SETNX with a random value, then a separate PEXPIRE; release by plain DEL (the naive lock)",
    "getset": "the expiry instant as the value, GETSET to take over an expired lock (redis-objects)",
    "token-lua": "SET NX PX with a random token; release by Lua compare-and-delete",
    "token-lua+fence": "token-lua, and its acquire script INCRs a fencing counter the store checks",
    "redlock": "Redlock over 5 masters: a majority, validity = TTL − elapsed − drift",
    "reentrant": "Redisson's reentrant lock: a hash field per client and thread, a watchdog renews every lease/3",
}

# Per-rep verdicts, worst first: (key, the cell's word, CSS outcome class).
VERDICTS = (("broke", "adapter broke", "o-failed"), ("holders", "2 holders", "o-violation"),
            ("unsafe", "unsafe", "o-unsafe"), ("refused", "stale write refused", "o-fenced"),
            ("unavailable", "unavailable", "o-notrun"), ("safe", "safe", "o-safe"))
WORD = {k: w for k, w, _ in VERDICTS}
CSS_CLASS = {k: c for k, _, c in VERDICTS}
RANK = {k: i for i, (k, _, _) in enumerate(VERDICTS)}

LEGEND = ("Each cell counts the repetitions of the row's runs in that class's scenarios by the checker's verdict "
          "(its colour: the worst of them). "
          "2 holders: two critical sections overlapped in the store; unsafe: no overlap, but a lost update, an "
          "accepted stale write or another's lock released; stale write refused: the store's check (fence or "
          "token) refused it and nothing unsafe got in; unavailable: no section completed; adapter broke: not "
          "trusted; —: not run. Fencing: the library hands out a fencing token.")


def rep_verdict(rep):
    """One repetition's verdict from the checker's figures (the cell's rep entry)."""
    n = lambda m: num(rep.get(m), 0)  # noqa: E731
    if rep.get("clients_failed"):
        return "broke"
    if n("mutual_exclusion_violations") > 0:
        return "holders"
    if n("lost_updates") > 0 or n("stale_writes_accepted") > 0 or n("foreign_releases") > 0:
        return "unsafe"
    if n("stale_writes_rejected") > 0:
        return "refused"
    if "sections_completed" in rep and n("sections_completed") == 0:
        return "unavailable"
    return "safe"


def reference_name(cell):
    """The cell's name in the reference group, or None: its run's name without durations and
    without reentrant's depth (how deep a client re-enters does not make it another lock)."""
    kept = [p for p in cell.run.split("+") if not ("=" in p and (p.split("=")[0].endswith("_ms") or p.startswith("depth=")))]
    name = "+".join(kept)
    return name if name in REFERENCE else None


class Row:
    def __init__(self, name, external):
        self.name, self.external = name, external
        self.version = self.algorithm = self.fencing = None
        self.cells = {}   # failure class -> [Cell]

    def describe(self, cell, run):
        """Version, algorithm and fencing from the first run that tells them."""
        adapter = run.get("adapter") if isinstance(run.get("adapter"), dict) else {}
        fence = (run.get("params") or {}).get("fence") is True
        if self.version is None:
            self.version = adapter.get("library") if self.external else "built-in"
        if self.algorithm is None:
            self.algorithm = adapter.get("algorithm") if self.external else REFERENCE[self.name]
        if self.fencing is None:
            if isinstance(adapter.get("fencing"), bool):
                self.fencing = adapter["fencing"]
            elif fence or not self.external:
                self.fencing = fence

    def counts(self, klass):
        """{verdict: reps} over every rep of the row's runs in that class."""
        out = {}
        for c in self.cells.get(klass, []):
            for rep in c.reps:
                v = rep_verdict(rep)
                out[v] = out.get(v, 0) + 1
        return out


def table_rows(trees):
    """(libraries, reference): the rows, each group in the order its runs first appear."""
    rows = {}
    for t in trees:
        if t.kind != "matrix":
            continue  # a sweep runs its scenario at values no verdict was written for
        for c in sorted(t.cells, key=lambda c: c.index):
            if not c.reps:
                continue
            run = c.run_of(c.reps[0])
            klass = run.get("failure_class")
            if klass not in dict(CLASSES):
                continue
            external = run.get("algorithm") == "external"
            # A case's variant of a library's run names the library's row (the run's table_row).
            name = (run.get("table_row") or c.run) if external else reference_name(c)
            if name is None:
                continue
            row = rows.setdefault((not external, name), Row(name, external))
            row.describe(c, run)
            row.cells.setdefault(klass, []).append(c)
    libraries = [r for (builtin, _), r in rows.items() if not builtin]
    reference = [r for (builtin, _), r in rows.items() if builtin]
    reference.sort(key=lambda r: list(REFERENCE).index(r.name))
    return libraries, reference


def cell_text(counts):
    """"2 holders 10/10"; a mixed cell "2 holders 3/10, safe 7/10"; "—" when not run."""
    total = sum(counts.values())
    if not total:
        return "—"
    return ", ".join(f"{WORD[v]} {counts[v]}/{total}" for v in sorted(counts, key=RANK.get))


def cell_class(counts):
    return CSS_CLASS[min(counts, key=RANK.get)] if counts else "o-none"


def fencing_text(row):
    return {True: "yes", False: "no", None: "?"}[row.fencing]


def row_texts(row):
    """The row's cells as text: library, version, fencing, then one per class."""
    return [row.name, row.version or "?", fencing_text(row)] + [cell_text(row.counts(k)) for k, _ in CLASSES]


def section_links(cells):
    """Links to the scenario sections that hold the cells' runs, first one first."""
    seen = []
    for c in cells:
        a = f"{slug(c.tree.name)}-{slug(c.scenario)}"
        if (a, c.scenario) not in seen:
            seen.append((a, c.scenario))
    return seen


def html_cell(row, klass):
    counts = row.counts(klass)
    text = html.escape(cell_text(counts))
    links = section_links(row.cells.get(klass, []))
    if counts and links:
        title = html.escape(", ".join(f"{c.scenario}/{c.run}" for c in row.cells[klass]))
        text = f'<a href="#{links[0][0]}" title="{title}">{text}</a>' + "".join(
            f' <a href="#{a}" title="{html.escape(sc)}">[{i + 2}]</a>' for i, (a, sc) in enumerate(links[1:]))
    return f'<td class="{cell_class(counts)}">{text}</td>'


def html_table(libraries, reference):
    head = ["library", "version", "fencing"] + [w for _, w in CLASSES]
    h = ['<table class="libraries"><colgroup><col style="width:13%"><col style="width:10%"><col style="width:6%">'
         + "<col>" * len(CLASSES) + "</colgroup><tr>" + "".join(f"<th>{html.escape(x)}</th>" for x in head) + "</tr>"]
    for group, rows in (("Libraries", libraries), ("lockbench's own algorithms, for reference", reference)):
        if not rows:
            continue
        h.append(f'<tr><th class="group" colspan="{len(head)}">{html.escape(group)}</th></tr>')
        for r in rows:
            h.append(f'<tr><td class="rowhead" title="{html.escape(r.algorithm or "")}">{html.escape(r.name)}</td>'
                     f"<td>{html.escape(r.version or '?')}</td><td>{fencing_text(r)}</td>"
                     + "".join(html_cell(r, k) for k, _ in CLASSES) + "</tr>")
    h.append("</table>")
    return "".join(h)


def md_table(libraries, reference):
    head = ["library", "version", "fencing"] + [w for _, w in CLASSES]
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, rows in (("libraries", libraries), ("lockbench's own, for reference", reference)):
        if rows and libraries and reference:
            out.append(f"| **{group}** |" + " |" * (len(head) - 1))
        out += ["| " + " | ".join(esc(x) for x in row_texts(r)) + " |" for r in rows]
    return "\n".join(out) + "\n"


def algorithm_lines(rows):
    return [f"{r.name}: {r.algorithm or '(its adapter does not say)'}" for r in rows]


def write_library_table(trees, page):
    """The table, its legend and what each row's algorithm is; nothing when no run names a class."""
    libraries, reference = table_rows(trees)
    if not libraries and not reference:
        return
    page.heading(2, "Libraries × failure classes", "libraries")
    page.raw_html(html_table(libraries, reference), md_table(libraries, reference))
    page.para(LEGEND, cls="note")
    page.bullets(algorithm_lines(libraries + reference))
