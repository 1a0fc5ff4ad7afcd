"""0. The cross-library verdict table that opens the report: one row per lock (the run's
"lock", locks/NAME.json), libraries first (runs of an external adapter), then lockbench's own
algorithms for reference, each group in the order its locks first appear; one column per
failure class (the case's `failure_class`, as each run's summary entry records it). A cell
counts every repetition of the lock's runs in the cases of its class by the verdict the checker
recorded for it (never derived here); expectations play no part.

A cell with no run is "—", and says why: the tree summary's `not_applicable` entries for that
lock and class (every case of the class that does not apply, each with its reason), or that
the tree has no run of it. In HTML the reasons are the cell's title and a numbered note under
the table; in Markdown a "— [n]" marker and the numbered notes under the table (one number for
every cell with the same reasons).

A tree whose runs record no failure_class adds no row: the table is built from what the runs
say they are, never guessed from scenario names."""

import html
import json
import os
import re

from .common import FACTS, OUTCOME, RANK, VERDICT_WORDS, css_of, meanings, plt, save_fig, slug, variant_label, worst

# The columns, in the order of the verdict table (sim/engine/scenario.cpp, through facts.json),
# with their header words.
CLASSES = tuple((c["class"], c["heading"]) for c in FACTS["failure_classes"])
CLASS_WORD = dict(CLASSES)

# What lockbench's own algorithms are, as lockimpl/registry.cpp's table sums them up (through
# facts.json), and their fenced runs: the row of a built-in run that names no lock file.
REFERENCE = dict(FACTS["algorithm_summaries"])
REFERENCE.update({f"{name}+fence": f"{line}; a fencing counter the store checks"
                  for name, line in FACTS["algorithm_summaries"].items()})

LEGEND = ("Each cell counts the repetitions of the lock's runs in that class's cases by the verdict the checker "
          "recorded (its colour: the worst of them). " + meanings() + "; "
          "—: no case of the class ran for the lock, and the numbered note says why. "
          "Fencing: offered, the library hands out a fencing token that nothing in this row checks; "
          "checked, the protected store refuses a write whose token is older than one it has seen (the +fence rows); "
          "token checked, the library has no fencing token and the store checks its random token instead, refusing a "
          "write whose lease did not enter last (check-and-set, the +token rows); "
          "no, no token.")


def reference_name(cell):
    """A built-in run's row when its run names no lock (a tree made before lock files): its
    run's name without durations and reentrant's depth, if that is a plain algorithm."""
    kept = [p for p in cell.run.split("+") if not ("=" in p and (p.split("=")[0].endswith("_ms") or p.startswith("depth=")))]
    name = "+".join(kept)
    return name if name in REFERENCE else None


def case_label(n):
    return variant_label(n.get("case", "?"), n.get("variant"))


def generic(why, lock):
    """The reason as it reads for any lock: the lock's own name (not a service of that name:
    "on etcd") said as "the lock", so that locks refused for the same reason share a note."""
    pat = r"(?<![\w+.@-])(?<!on )(?<!or )" + re.escape(lock) + r"(?![\w+.@-])"
    return re.sub(pat, "the lock", why)


class Row:
    def __init__(self, name, external):
        self.name, self.external = name, external
        self.version = self.algorithm = self.fencing = None
        self.checked = False  # the store checks the token (the run's fence parameter)
        self.token_checked = False  # the store checks its random token (the run's resource_check "token")
        self.cells = {}     # failure class -> [Cell] with repetitions
        self.pending = {}   # failure class -> [Cell] without any
        self.why = {}       # failure class -> [(exact reason, generic reason)] for a "—"

    def describe(self, cell, run, lock_files):
        """Version, algorithm and fencing from the first run that tells them."""
        adapter = run.get("adapter") if isinstance(run.get("adapter"), dict) else {}
        fence = (run.get("params") or {}).get("fence") is True
        if self.version is None:
            self.version = adapter.get("library") if self.external else "built-in"
        if self.algorithm is None:
            if self.external:
                self.algorithm = adapter.get("algorithm")
            else:
                self.algorithm = (lock_description(lock_files.get(self.name)) or REFERENCE.get(self.name)
                                  or REFERENCE.get(run.get("algorithm")) or f"lockbench's {run.get('algorithm', '?')}")
        self.checked = self.checked or fence
        self.token_checked = self.token_checked or (not fence and run.get("resource_check") == "token")
        if self.fencing is None:
            if isinstance(adapter.get("fencing"), bool):
                self.fencing = adapter["fencing"]
            elif fence or not self.external:
                self.fencing = fence

    def counts(self, klass):
        """{verdict word: reps} over every rep of the row's runs in that class, as recorded."""
        out = {}
        for c in self.cells.get(klass, []):
            for w, n in c.verdict_counts().items():
                out[w] = out.get(w, 0) + n
        return out


def lock_description(lock):
    """The description its lock file gives: as the tree's summary recorded it ("locks"), or read
    from the file the spec names, when it is still there (a tree of an older lockbench)."""
    if isinstance(lock, dict):
        return lock.get("description") if isinstance(lock.get("description"), str) else None
    path = lock
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    return d.get("description") if isinstance(d, dict) and isinstance(d.get("description"), str) else None


def spec_sources(tree):
    """The scenarios as the tree's spec (lockbench-results.json) records them."""
    spec = tree.meta.get("spec") if isinstance(tree.meta.get("spec"), dict) else {}
    for sc in spec.get("scenarios") or []:
        src = sc.get("source") if isinstance(sc, dict) else None
        if isinstance(src, dict):
            yield src


def spec_lock_files(tree):
    """{lock: what the tree's summary records of it, or else its lock file's path} (the spec's runs)."""
    recorded = tree.summary.get("locks") if isinstance(tree.summary.get("locks"), dict) else {}
    out = {name: lock for name, lock in recorded.items() if isinstance(lock, dict)}
    for src in spec_sources(tree):
        for r in src.get("runs") or []:
            if isinstance(r, dict) and isinstance(r.get("lock"), str) and isinstance(r.get("lock_file"), str):
                out.setdefault(r["lock"], r["lock_file"])
    return out


def spec_classes(tree):
    """{scenario: its failure class} as the tree's spec records the cases (for cells not run yet)."""
    return {src["name"]: src.get("failure_class") for src in spec_sources(tree) if isinstance(src.get("name"), str)}


def row_key(cell, run):
    """(external, row name) of a cell's run, or None when it stays out of the table."""
    external = run.get("algorithm") == "external"
    if isinstance(run.get("lock"), str):
        return external, run["lock"]
    # A tree made before lock files: a case's variant of a library's run names its row.
    name = (run.get("table_row") or cell.run) if external else reference_name(cell)
    return (external, name) if name else None


def table_rows(trees):
    """(libraries, reference): the rows, each group in the order its locks first appear."""
    rows = {}
    matrices = [t for t in trees if t.kind == "matrix"]  # a sweep runs its scenario at values no verdict was written for
    for t in matrices:
        lock_files = spec_lock_files(t)
        classes = spec_classes(t)   # scenario -> its failure class: as its runs record it, else as the spec
        for c in t.cells:
            if c.reps:
                classes[c.scenario] = c.run_of(c.reps[0]).get("failure_class")
        pending = []
        for c in sorted(t.cells, key=lambda c: c.index):
            if not c.reps:
                pending.append(c)
                continue
            run = c.run_of(c.reps[0])
            klass = run.get("failure_class")
            if klass not in CLASS_WORD:
                continue
            key = row_key(c, run)
            if key is None:
                continue
            row = rows.setdefault(key, Row(key[1], key[0]))
            row.describe(c, run, lock_files)
            row.cells.setdefault(klass, []).append(c)
        for c in pending:  # a cell not run yet, or never forced, is named in its row's "—"
            klass = classes.get(c.scenario)
            name = c.run.split("@", 1)[0]
            for (external, n), row in rows.items():
                if n == name and klass in CLASS_WORD:
                    row.pending.setdefault(klass, []).append(c)
    for row in rows.values():
        for klass in CLASS_WORD:
            if not row.counts(klass):
                row.why[klass] = reasons(row, klass, matrices)
    libraries = [r for (external, _), r in rows.items() if external]
    reference = [r for (external, _), r in rows.items() if not external]
    return libraries, reference


def reasons(row, klass, trees):
    """[(exact, generic)]: why the row has no run in this class."""
    out = []
    for c in row.pending.get(klass, []):
        line = f"{c.scenario}: not run yet (no repetition in this tree)"
        if c.could_not_force:
            line = f"{c.scenario}: could not force it in {c.unforced_text()}"
        out.append((line, line))
    seen = set()
    first = {}   # case -> its first reason: a variant refused for another reason is named
    for t in trees:
        for n in t.not_applicable:
            if n.get("lock") != row.name or n.get("failure_class") != klass:
                continue
            why, case = str(n.get("why", "?")), str(n.get("case", "?"))
            if (case, why) in seen:
                continue  # the case's variants, refused for the same reason as the case
            seen.add((case, why))
            label = case if first.setdefault(case, why) == why else case_label(n)
            out.append((f"{label}: {why}", f"{label}: {generic(why, row.name)}"))
    if not out:
        line = "not run in this tree (no case of this class ran for this lock, and the tree records no reason)"
        out.append((line, line))
    return out


def cell_text(counts):
    """"2 holders 10/10"; a mixed cell "2 holders 3/10, safe 7/10"; "—" when not run."""
    total = sum(counts.values())
    if not total:
        return "—"
    return ", ".join(f"{v} {counts[v]}/{total}" for v in sorted(counts, key=lambda w: RANK.get(w, len(RANK))))


def cell_class(counts):
    return css_of(worst(counts)) if counts else "o-none"


def fencing_text(row):
    """Whether the library offers a token, and whether the row's store checks it: a token
    offered and not checked protects nothing."""
    if row.checked:
        return "checked"
    if row.token_checked:
        return "token checked"
    return {True: "offered", False: "no", None: "?"}[row.fencing]


def compact(lines):
    """"case: why" lines, each once, the cases that share a reason on one line ("a, b: why")."""
    order, cases = [], {}
    for ln in lines:
        case, sep, why = ln.partition(": ")
        if not sep or " " in case:
            case, why = None, ln
        if why not in cases:
            order.append(why)
            cases[why] = []
        if case is not None and case not in cases[why]:
            cases[why].append(case)
    return [(", ".join(cases[w]) + ": " if cases[w] else "") + w for w in order]


class Notes:
    """Numbered notes for the "—" cells: one number for each distinct set of reasons."""

    def __init__(self):
        self.texts = []   # [[generic lines]]
        self.index = {}

    def number(self, lines):
        lines = compact(lines)
        key = tuple(lines)
        if key not in self.index:
            self.texts.append(list(lines))
            self.index[key] = len(self.texts)
        return self.index[key]


def number_notes(libraries, reference):
    notes = Notes()
    numbers = {}
    for r in libraries + reference:
        for k, _ in CLASSES:
            if k in r.why:
                numbers[(r.name, r.external, k)] = notes.number(g for _, g in r.why[k])
    return notes, numbers


def section_links(cells):
    """Links to the scenario sections that hold the cells' runs, first one first."""
    seen = []
    for c in cells:
        a = f"{slug(c.tree.name)}-{slug(c.scenario)}"
        if (a, c.scenario) not in seen:
            seen.append((a, c.scenario))
    return seen


def note_anchor(prefix, n):
    return f"{prefix}-note-{n}"


def dash_html(exact_lines, n, prefix):
    """The "—" of a cell with no run: its reasons as the title, its note's number linked."""
    title = html.escape("\n".join(exact_lines))
    return (f'<td class="o-none" title="{title}">—<sup class="note-ref"><a href="#{note_anchor(prefix, n)}">{n}</a>'
            "</sup></td>")


def html_cell(row, klass, numbers, prefix):
    counts = row.counts(klass)
    if not counts:
        return dash_html([e for e, _ in row.why[klass]], numbers[(row.name, row.external, klass)], prefix)
    text = html.escape(cell_text(counts))
    links = section_links(row.cells.get(klass, []))
    if links:
        title = html.escape(", ".join(f"{c.scenario}/{c.run}" for c in row.cells[klass]))
        text = f'<a href="#{links[0][0]}" title="{title}">{text}</a>' + "".join(
            f' <a href="#{a}" title="{html.escape(sc)}">[{i + 2}]</a>' for i, (a, sc) in enumerate(links[1:]))
    return f'<td class="{cell_class(counts)}">{text}</td>'


def notes_html(notes, prefix, intro):
    if not notes.texts:
        return ""
    return (f'<p class="note">{html.escape(intro)}</p><ol class="notes">'
            + "".join(f'<li id="{note_anchor(prefix, i + 1)}">{"<br>".join(html.escape(x) for x in lines)}</li>'
                      for i, lines in enumerate(notes.texts)) + "</ol>")


def notes_md(notes, intro):
    if not notes.texts:
        return ""
    return f"\n{intro}\n\n" + "".join(f"- [{i + 1}] " + NOTE_SEP.join(lines) + "\n" for i, lines in enumerate(notes.texts))


NOTE_SEP = " · "   # between a note's reasons in Markdown (a reason may hold a ";")
NOTES_INTRO = "Why a cell is \"—\" (the cases of the class that do not apply to the lock, as the matrix recorded them):"


def notes_parts(notes, prefix, intro):
    """(html, markdown) of the numbered notes."""
    return notes_html(notes, prefix, intro), notes_md(notes, intro)


def html_table(libraries, reference, notes=None, numbers=None):
    if notes is None:
        notes, numbers = number_notes(libraries, reference)
    prefix = "libraries"
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
                     + "".join(html_cell(r, k, numbers, prefix) for k, _ in CLASSES) + "</tr>")
    h.append("</table>")
    return "".join(h) + notes_html(notes, prefix, NOTES_INTRO)


def row_texts(row, numbers=None):
    """The row's cells as Markdown text: library, version, fencing, then one per class."""
    out = [row.name, row.version or "?", fencing_text(row)]
    for k, _ in CLASSES:
        t = cell_text(row.counts(k))
        if t == "—" and numbers is not None:
            t = f"— [{numbers[(row.name, row.external, k)]}]"
        out.append(t)
    return out


def md_table(libraries, reference, notes=None, numbers=None):
    if notes is None:
        notes, numbers = number_notes(libraries, reference)
    head = ["library", "version", "fencing"] + [w for _, w in CLASSES]
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, rows in (("libraries", libraries), ("lockbench's own, for reference", reference)):
        if rows and libraries and reference:
            out.append(f"| **{group}** |" + " |" * (len(head) - 1))
        out += ["| " + " | ".join(esc(x) for x in row_texts(r, numbers)) + " |" for r in rows]
    return "\n".join(out) + "\n" + notes_md(notes, NOTES_INTRO)


def algorithm_lines(rows):
    return [f"{r.name}: {r.algorithm or '(its adapter does not say)'}" for r in rows]


GRID = "libraries.png"  # the table as a picture, in the report's images (README shows the committed ones)


def grid_text(counts):
    """A picture's cell: its worst verdict and in how many repetitions ("2 holders\n2/4"), "—"
    when not run; the Markdown table beside it has every word of a mixed cell."""
    total = sum(counts.values())
    if not total:
        return "—"
    w = worst(counts)
    return f"{w}\n{counts[w]}/{total}"


def draw_library_grid(libraries, reference, outdir):
    """The verdict table as a picture: a row per lock (the libraries, then lockbench's own
    algorithms), a column per failure class, each cell in its worst verdict's colour and
    saying it with its count; None when there is no row."""
    if not libraries and not reference:
        return None
    import textwrap
    p = plt()
    lines = []  # (label, row or None for a group heading)
    for group, rows in (("libraries", libraries), ("lockbench's own algorithms, for reference", reference)):
        if rows and libraries and reference:
            lines.append((group, None))
        lines += [(r.name, r) for r in rows]
    # the row labels' column as wide as the longest name at 7.5 points (about 0.058 inch a character)
    label_w = max(1.6, 0.3 + 0.058 * max(len(r.name) for r in libraries + reference))
    cell_w, row_h, head_h, legend_h = 0.95, 0.3, 0.45, 0.45
    fig = p.figure(figsize=(label_w + cell_w * len(CLASSES) + 0.1, head_h + row_h * len(lines) + legend_h))
    ax = fig.add_axes([label_w / fig.get_figwidth(), legend_h / fig.get_figheight(),
                       cell_w * len(CLASSES) / fig.get_figwidth(), row_h * len(lines) / fig.get_figheight()])
    ax.set_xlim(0, len(CLASSES))
    ax.set_ylim(len(lines), 0)
    ax.axis("off")
    for j, (_, word) in enumerate(CLASSES):
        ax.text(j + 0.5, -0.25, textwrap.fill(word, 14), ha="center", va="bottom", fontsize=7.5, fontweight="bold")
    for i, (label, row) in enumerate(lines):
        if row is None:
            ax.text(-(label_w - 0.1) / cell_w, i + 0.6, label, ha="left", va="center", fontsize=8, fontweight="bold")
            continue
        ax.text(-0.05, i + 0.5, label, ha="right", va="center", fontsize=7.5)
        for j, (klass, _) in enumerate(CLASSES):
            counts = row.counts(klass)
            bg, fg = (OUTCOME[worst(counts)][0], OUTCOME[worst(counts)][1]) if counts else ("#ffffff", "#888888")
            ax.add_patch(p.Rectangle((j + 0.02, i + 0.06), 0.96, 0.88, facecolor=bg, edgecolor="#ffffff", linewidth=0))
            ax.text(j + 0.5, i + 0.5, grid_text(counts), ha="center", va="center", fontsize=6.3, color=fg, linespacing=1.0)
    handles = [p.Rectangle((0, 0), 1, 1, facecolor=OUTCOME[w][0]) for w in VERDICT_WORDS]
    fig.legend(handles, VERDICT_WORDS, loc="lower center", ncol=len(VERDICT_WORDS), fontsize=7.5, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    return save_fig(fig, GRID, "the verdict table as a picture: a row per lock, a column per failure class, "
                               "each cell coloured by its worst verdict", outdir)


README_OPEN = "<!-- library-table -->"
README_CLOSE = "<!-- /library-table -->"


def write_library_table(trees, page, grid=None):
    """The table (after its picture, `grid`, when drawn), its notes, its legend and what each
    row's algorithm is; nothing when no run names a class. Returns whether it wrote the table
    (report.md then marks the section that scripts/readme-table copies into README.md, which
    the caller closes; the picture stays out of it, README shows the committed file)."""
    libraries, reference = table_rows(trees)
    if not libraries and not reference:
        return False
    notes, numbers = number_notes(libraries, reference)
    page.heading(2, "Libraries × failure classes", "libraries")
    if grid is not None:
        page.image(grid, "Each cell: the worst verdict of the lock's repetitions in the class's cases, in its colour, "
                         "and in how many of them; the table below has every verdict of a mixed cell and why a cell is empty.")
    page.raw_html("", README_OPEN + "\n")
    page.raw_html(html_table(libraries, reference, notes, numbers), md_table(libraries, reference, notes, numbers))
    page.para(LEGEND, cls="note")
    page.bullets(algorithm_lines(libraries + reference))
    return True
